/* space.c — building a sweep's axes (space.h). */
#include "sweep/space.h"

#include <string.h>

#include "overlap/gating.h"
#include "overlap/strategy.h"
#include "workload/split.h"

#define PN_DEFAULT_MAX_PP 16
#define PN_DEFAULT_MAX_VPP 16

static PnSweepAxis *axis_new(const char *key)
{
  PnSweepAxis *a = g_new0(PnSweepAxis, 1);
  gboolean found = pn_scenario_field_find(key, "sweep", &a->field, NULL);
  g_assert(found); /* the default axes name keys the schema has */
  a->values = g_array_new(FALSE, TRUE, sizeof(PnScenarioValue));
  return a;
}

static void axis_add_text(PnSweepAxis *a, const char *text)
{
  PnScenarioValue value;
  gboolean ok = pn_scenario_field_parse(&a->field, text, "sweep", &value, NULL);
  g_assert(ok);
  g_array_append_val(a->values, value);
}

static void axis_add_int(PnSweepAxis *a, int64_t v)
{
  char text[24];
  g_snprintf(text, sizeof text, "%" G_GINT64_FORMAT, v);
  axis_add_text(a, text);
}

/* Whole nodes in [min, max], and below one node the counts that divide it. */
static gboolean gpus_axis(PnSweepSpec *spec, const PnSpaceOptions *o, GError **error)
{
  int per_node   = spec->base->hw->gpus_per_node;
  PnSweepAxis *a = axis_new("hardware.num_gpus");
  for (int64_t n = o->gpus_min; n <= o->gpus_max; n++)
    if (n % per_node == 0 || (n < per_node && per_node % n == 0))
      axis_add_int(a, n);
  if (a->values->len == 0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
                "--gpus: %" G_GINT64_FORMAT ":%" G_GINT64_FORMAT " holds no whole number of %d-GPU nodes", o->gpus_min,
                o->gpus_max, per_node);
    pn_sweep_axis_free(a);
    return FALSE;
  }
  g_ptr_array_add(spec->axes, a);
  return TRUE;
}

/* A default axis also holds the base's own value (a recipe's VPP 20 beyond the default range),
 * so that the base's layout is in the space and ranked. Values stay ascending. */
static void axis_add_base(PnSweepAxis *a, const PnScenario *base)
{
  PnScenarioValue v;
  pn_scenario_field_get(&a->field, base, &v);
  int64_t bv = g_ascii_strtoll(v.text, NULL, 10);
  guint at   = a->values->len;
  for (guint k = 0; k < a->values->len; k++) {
    const PnScenarioValue *w = &g_array_index(a->values, PnScenarioValue, k);
    if (memcmp(w->bytes, v.bytes, sizeof v.bytes) == 0)
      return;
    if (at == a->values->len && !a->field.enum_like && g_ascii_strtoll(w->text, NULL, 10) > bv)
      at = k;
  }
  g_array_insert_val(a->values, at, v);
}

/* Whether the default pipeline size axis holds `pp`: a split Megatron accepts there (the base's
 * own, or the one pn_workload_split_choose picks when it states none), and pp > 1 with a layout
 * of several virtual stages. */
static gboolean pipeline_size_ok(const PnScenario *base, int64_t pp)
{
  int64_t stages = pn_workload_layout_stages(base->parallel.pipeline_model_parallel_layout);
  return pn_workload_split_choose(base, pp, 1, NULL) && !(pp == 1 && stages > 1); /* interleaving needs pp > 1 */
}

static void layout_axes(PnSweepSpec *spec)
{
  const PnScenario *b = spec->base;
  /* A pipeline_model_parallel_layout fixes pp x vpp: the pipeline sizes are those its virtual
   * stages divide over, and the virtual size follows from each (vpp_follows_layout), as
   * Megatron-LM derives it (arguments.py). The layout is kept rather than dropped for an even split:
   * a Megatron user writes one layout for all the (pp, vpp) it fits (Megatron-Bridge's
   * deepseek_v3.py layout_map gives one list to (16, 1), (8, 2) and (4, 4)), and an even split
   * would simulate another model than the one asked about. */
  PnSweepAxis *a = axis_new("parallel.tensor_model_parallel_size");
  for (int64_t tp = 1; tp <= b->hw->gpus_per_node; tp *= 2)
    axis_add_int(a, tp);
  axis_add_base(a, b), g_ptr_array_add(spec->axes, a);
  int64_t stages = pn_workload_layout_stages(b->parallel.pipeline_model_parallel_layout);
  a              = axis_new("parallel.pipeline_model_parallel_size");
  for (int64_t pp = 1; pp <= PN_DEFAULT_MAX_PP; pp++)
    if (pipeline_size_ok(b, pp))
      axis_add_int(a, pp);
  axis_add_base(a, b), g_ptr_array_add(spec->axes, a);
  if (stages == 0) {
    a = axis_new("parallel.virtual_pipeline_model_parallel_size");
    for (int64_t v = 1; v <= PN_DEFAULT_MAX_VPP; v++) {
      bool some = v == 1;
      for (int64_t pp = 1; pp <= PN_DEFAULT_MAX_PP && !some; pp++)
        some = pn_workload_split_choose(b, pp, v, NULL);
      if (some)
        axis_add_int(a, v);
    }
    axis_add_base(a, b), g_ptr_array_add(spec->axes, a);
  }
  a = axis_new("parallel.context_parallel_size");
  for (int64_t cp = 1; cp <= 8; cp *= 2)
    axis_add_int(a, cp);
  axis_add_base(a, b), g_ptr_array_add(spec->axes, a);
  if (b->model.num_moe_experts > 0) {
    a = axis_new("parallel.expert_model_parallel_size");
    for (int64_t ep = 1; ep <= 64 && b->model.num_moe_experts % ep == 0; ep *= 2)
      axis_add_int(a, ep);
    axis_add_base(a, b), g_ptr_array_add(spec->axes, a);
  }
  a = axis_new("training.micro_batch_size");
  for (int64_t m = 1; m <= 4; m *= 2)
    axis_add_int(a, m);
  axis_add_base(a, b), g_ptr_array_add(spec->axes, a);
  a = axis_new("recompute.recompute_granularity");
  axis_add_text(a, "null");
  axis_add_text(a, "\"selective\"");
  axis_add_text(a, "\"full\"");
  axis_add_base(a, b), g_ptr_array_add(spec->axes, a);
}

static PnSweepAxis *axis_find(PnSweepSpec *spec, const char *name)
{
  for (guint a = 0; a < spec->axes->len; a++) {
    PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    if (strcmp(ax->field.name, name) == 0)
      return ax;
  }
  return NULL;
}

/* Every switch of the registry: its boolean, tri-state and enum keys. */
/* The TP overlap preset key's values: none (TE's defaults) and every userbuffers preset. */
static int preset_choices(const PnScenarioField *f, PnScenarioValue *out, int max)
{
  int n = pn_scenario_field_parse(f, "null", "choices", &out[0], NULL) ? 1 : 0;
  for (size_t i = 0; pn_ub_preset_name(i) != NULL && n < max; i++) {
    g_autofree char *q = g_strdup_printf("\"%s\"", pn_ub_preset_name(i));
    n += pn_scenario_field_parse(f, q, "choices", &out[n], NULL) ? 1 : 0;
  }
  return n;
}

static void overlap_axes(PnSweepSpec *spec)
{
  for (size_t i = 0; i < pn_overlap_n_strategies; i++) {
    const PnOverlapStrategy *s = &pn_overlap_strategies[i];
    if (s->applies == NULL)
      continue;
    for (int k = 0; k < PN_OVERLAP_MAX_KEYS && s->keys[k] != NULL; k++) {
      PnScenarioField f;
      PnScenarioValue choices[16];
      if (!pn_scenario_field_find(s->keys[k], "sweep", &f, NULL) || axis_find(spec, f.name) != NULL)
        continue;
      int n = strcmp(f.name, "comm_overlap.tp_comm_overlap_cfg") == 0
                  ? preset_choices(&f, choices, G_N_ELEMENTS(choices))
                  : pn_scenario_field_choices(&f, choices, G_N_ELEMENTS(choices));
      if (n < 2)
        continue;
      PnSweepAxis *a = g_new0(PnSweepAxis, 1);
      a->field       = f;
      a->values      = g_array_new(FALSE, TRUE, sizeof(PnScenarioValue));
      a->opened      = true;
      g_array_append_vals(a->values, choices, n);
      g_ptr_array_add(spec->axes, a);
    }
  }
}

static gboolean user_axis(PnSweepSpec *spec, const PnSpaceEntry *e, GError **error)
{
  PnScenarioField f;
  if (!pn_scenario_field_find(e->key, e->display, &f, error))
    return FALSE;
  g_autoptr(GArray) values = g_array_new(FALSE, TRUE, sizeof(PnScenarioValue));
  for (guint v = 0; v < e->values->len; v++) {
    PnScenarioValue value;
    if (!pn_scenario_field_parse(&f, e->values->pdata[v], e->display, &value, error))
      return FALSE;
    for (guint w = 0; w < values->len; w++)
      if (memcmp(g_array_index(values, PnScenarioValue, w).bytes, value.bytes, sizeof value.bytes) == 0) {
        g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID, "%s: %s: %s is given twice", e->display, f.name,
                    value.text);
        return FALSE;
      }
    g_array_append_val(values, value);
  }
  PnSweepAxis *a = axis_find(spec, f.name);
  if (a == NULL) {
    a        = g_new0(PnSweepAxis, 1);
    a->field = f;
    g_ptr_array_add(spec->axes, a);
  } else {
    g_array_free(a->values, TRUE);
  }
  a->values = g_steal_pointer(&values);
  a->opened = true;
  return TRUE;
}

/* Whether the sweep chooses each candidate's split (sweep.h, split_chosen), and the splits chosen
 * for every pair of a pipeline and a virtual size of the axes: |pp| x |vpp| choices. */
static void choose_splits(PnSweepSpec *spec)
{
  spec->split_chosen  = false;
  spec->split_pp_axis = spec->split_vpp_axis = -1;
  if (pn_workload_split_stated(&spec->base->parallel))
    return;
  for (guint a = 0; a < spec->axes->len; a++) {
    const char *name = ((const PnSweepAxis *)g_ptr_array_index(spec->axes, a))->field.name;
    for (gsize k = 0; k < G_N_ELEMENTS(pn_sweep_split_keys); k++)
      if (strcmp(name, pn_sweep_split_keys[k]) == 0)
        return; /* the user varies the split */
    if (strcmp(name, "parallel.pipeline_model_parallel_size") == 0)
      spec->split_pp_axis = (int)a;
    if (strcmp(name, "parallel.virtual_pipeline_model_parallel_size") == 0)
      spec->split_vpp_axis = (int)a;
  }
  if (spec->split_pp_axis < 0 && spec->split_vpp_axis < 0)
    return; /* the base's sizes: its even split, which the loader checked */
  PnSweepAxis *pp  = spec->split_pp_axis >= 0 ? g_ptr_array_index(spec->axes, spec->split_pp_axis) : NULL;
  PnSweepAxis *vpp = spec->split_vpp_axis >= 0 ? g_ptr_array_index(spec->axes, spec->split_vpp_axis) : NULL;
  PnSweepAxis *own = pp ? pp : vpp;
  guint n_pp = pp ? pp->values->len : 1, n_vpp = vpp ? vpp->values->len : 1;
  g_free(own->splits);
  own->splits  = g_new0(PnSplitKeys, n_pp * n_vpp);
  PnScenario c = *spec->base; /* the sizes as the axes set them */
  for (guint i = 0; i < n_pp; i++)
    for (guint j = 0; j < n_vpp; j++) {
      if (pp)
        pn_scenario_field_set(&pp->field, &c, &g_array_index(pp->values, PnScenarioValue, i));
      if (vpp)
        pn_scenario_field_set(&vpp->field, &c, &g_array_index(vpp->values, PnScenarioValue, j));
      pn_workload_split_choose(spec->base, c.parallel.pipeline_model_parallel_size,
                               c.parallel.virtual_pipeline_model_parallel_size, &own->splits[i * n_vpp + j]);
    }
  spec->split_chosen = true;
}

/* The base's own layout in the space: every axis must hold the base's value. */
static void base_position(PnSweepSpec *spec)
{
  uint64_t index      = 0;
  spec->base_in_space = true;
  for (guint a = 0; a < spec->axes->len && spec->base_in_space; a++) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    PnScenarioValue v;
    pn_scenario_field_get(&ax->field, spec->base, &v);
    guint at = ax->values->len;
    for (guint k = 0; k < ax->values->len && at == ax->values->len; k++)
      if (memcmp(g_array_index(ax->values, PnScenarioValue, k).bytes, v.bytes, sizeof v.bytes) == 0)
        at = k;
    spec->base_in_space = at < ax->values->len;
    index               = index * ax->values->len + at;
  }
  spec->base_index = spec->base_in_space ? index : 0;
}

gboolean pn_sweep_space_build(PnSweepSpec *spec, const PnSpaceOptions *o, GError **error)
{
  if (spec->axes == NULL)
    spec->axes = g_ptr_array_new_with_free_func((GDestroyNotify)pn_sweep_axis_free);
  if (o->gpus_min > 0 && !gpus_axis(spec, o, error))
    return FALSE;
  if (o->layout)
    layout_axes(spec);
  if (o->all_overlap)
    overlap_axes(spec);
  for (guint i = 0; o->entries != NULL && i < o->entries->len; i++)
    if (!user_axis(spec, o->entries->pdata[i], error))
      return FALSE;
  /* A scenario whose values are what following tp gives (Megatron-Bridge's defaults) keeps
   * following it when an axis moves tp: the loader resolved them, so "unset" is not visible. */
  const PnParallelConfig *bp = &spec->base->parallel;
  int64_t btp                = bp->tensor_model_parallel_size;
  spec->sp_follows_tp =
      axis_find(spec, "parallel.sequence_parallel") == NULL && (o->layout || bp->sequence_parallel == (btp > 1));
  spec->etp_follows_tp = axis_find(spec, "parallel.expert_tensor_parallel_size") == NULL &&
                         (o->layout || bp->expert_tensor_parallel_size == btp);
  spec->vpp_follows_layout = axis_find(spec, "parallel.virtual_pipeline_model_parallel_size") == NULL &&
                             pn_workload_layout_stages(bp->pipeline_model_parallel_layout) > 0;
  choose_splits(spec);
  base_position(spec);
  return TRUE;
}
