/* output.c — a sweep's table, CSV, JSON and rejected list (output.h). */
#include "sweep/output.h"

#include <math.h>
#include <string.h>

#include "io/jsonw.h"
#include "io/megatron.h"
#include "sim/result.h"
#include "workload/split.h"

static const char *axis_name(const PnSweepSpec *spec, guint a)
{
  const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
  const char *dot       = strchr(ax->field.name, '.');
  return dot ? dot + 1 : ax->field.name;
}

/* A value as a person reads it in a table or a CSV cell: enum names bare, null as "none" for the
 * recompute granularity (Megatron's None) and as "gating" for an overlap switch left to it. */
static const char *value_text(const PnScenarioValue *v, char *buf, gsize n)
{
  gsize len = strlen(v->text);
  if (len >= 2 && v->text[0] == '"') {
    g_strlcpy(buf, v->text + 1, MIN(n, len - 1));
    return buf;
  }
  return strcmp(v->text, "null") == 0 ? "none" : v->text;
}

static bool is_axis(const PnSweepSpec *spec, const char *key)
{
  for (guint a = 0; a < spec->axes->len; a++)
    if (strcmp(((const PnSweepAxis *)g_ptr_array_index(spec->axes, a))->field.name, key) == 0)
      return true;
  return false;
}

/* Split key `k` of pn_sweep_split_keys in candidate `c`; false when an axis sets it (the axis's
 * column says it). */
static bool split_value(const PnSweepSpec *spec, gsize k, const PnScenario *c, PnScenarioValue *v)
{
  PnScenarioField f;
  if (is_axis(spec, pn_sweep_split_keys[k]) || !pn_scenario_field_find(pn_sweep_split_keys[k], "sweep", &f, NULL))
    return false;
  pn_scenario_field_get(&f, c, v);
  return true;
}

/* Whether a candidate may run a pipeline layout, the base's or one the sweep chose: the CSV's
 * layout column, the JSON's key. */
static bool any_layout(const PnSweepSpec *spec)
{
  if (spec->base->parallel.pipeline_model_parallel_layout[0] != '\0')
    return true;
  if (!spec->split_chosen)
    return false;
  guint n = 1;
  for (int a = 0; a < 2; a++) {
    int at = a == 0 ? spec->split_pp_axis : spec->split_vpp_axis;
    if (at >= 0)
      n *= ((const PnSweepAxis *)g_ptr_array_index(spec->axes, at))->values->len;
  }
  const PnSweepAxis *own =
      g_ptr_array_index(spec->axes, spec->split_pp_axis >= 0 ? spec->split_pp_axis : spec->split_vpp_axis);
  for (guint i = 0; i < n; i++)
    if (own->splits[i].pipeline_model_parallel_layout[0] != '\0')
      return true;
  return false;
}

bool pn_sweep_within_error(const PnSweepResult *r, guint k, double error_pct)
{
  if (r->rows->len == 0 || isnan(error_pct))
    return false;
  const PnSweepRow *best = &g_array_index(r->rows, PnSweepRow, 0);
  const PnSweepRow *row  = &g_array_index(r->rows, PnSweepRow, k);
  return !row->failed && !best->failed && row->tflops_per_gpu >= best->tflops_per_gpu * (1.0 - error_pct / 100.0);
}

guint pn_sweep_axis_effects(const PnSweepSpec *spec, const PnSweepResult *r, PnSweepAxisEffect *out)
{
  guint n = 0;
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    if (ax->values->len < 2)
      continue;
    g_autofree double *best = g_new0(double, ax->values->len);
    for (guint k = 0; k < r->rows->len; k++) {
      const PnSweepRow *row = &g_array_index(r->rows, PnSweepRow, k);
      if (row->failed)
        continue;
      const PnScenarioValue *v = pn_sweep_value(spec, a, row->index);
      guint vi                 = (guint)(v - &g_array_index(ax->values, PnScenarioValue, 0));
      best[vi]                 = MAX(best[vi], row->tflops_per_gpu);
    }
    double hi = 0.0, lo = INFINITY;
    guint at = 0, seen = 0;
    for (guint v = 0; v < ax->values->len; v++) {
      if (best[v] <= 0.0)
        continue;
      seen++;
      lo = MIN(lo, best[v]);
      if (best[v] > hi)
        hi = best[v], at = v;
    }
    if (seen < 2)
      continue;
    out[n++] = (PnSweepAxisEffect){
        .axis = a, .spread = hi - lo, .best_tflops = hi, .best_value = &g_array_index(ax->values, PnScenarioValue, at)};
  }
  for (guint i = 1; i < n; i++) /* insertion sort by spread, descending; stable on the axis order */
    for (guint j = i; j > 0 && out[j].spread > out[j - 1].spread; j--) {
      PnSweepAxisEffect t = out[j];
      out[j]              = out[j - 1];
      out[j - 1]          = t;
    }
  return n;
}

char *pn_sweep_megatron_args(const PnSweepSpec *spec, uint64_t index)
{
  GString *s = g_string_new(NULL);
  PnScenarioValue v;
  static const char *const fixed[] = {"training.seq_length", "training.global_batch_size"};
  for (gsize i = 0; i < G_N_ELEMENTS(fixed); i++) {
    PnScenarioField f;
    if (pn_scenario_field_find(fixed[i], "sweep", &f, NULL)) {
      pn_scenario_field_get(&f, spec->base, &v);
      pn_megatron_append(s, f.name, &v);
    }
  }
  PnScenario c;
  pn_sweep_candidate(spec, index, &c);
  pn_workload_check(&c, NULL, NULL);
  bool layout = c.parallel.pipeline_model_parallel_layout[0] != '\0';
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    /* a layout gives the virtual size: Megatron-LM refuses a count of virtual stages beside it */
    if (layout && strcmp(ax->field.name, "parallel.virtual_pipeline_model_parallel_size") == 0)
      continue;
    pn_scenario_field_get(&ax->field, &c, &v); /* after the rules: sequence_parallel as it runs */
    pn_megatron_append(s, ax->field.name, &v);
  }
  if (spec->sp_follows_tp && c.parallel.sequence_parallel)
    g_string_append(s, " --sequence-parallel");
  for (gsize k = 0; k < G_N_ELEMENTS(pn_sweep_split_keys); k++) /* the split, chosen or the base's */
    if (split_value(spec, k, &c, &v))
      pn_megatron_append(s, pn_sweep_split_keys[k], &v);
  if (layout) { /* the split the layout gives (workload/split.h) */
    g_autofree char *text   = pn_workload_layout_compact(c.parallel.pipeline_model_parallel_layout);
    g_autofree char *quoted = g_shell_quote(text);
    g_string_append_printf(s, " --pipeline-model-parallel-layout %s", quoted);
  }
  if (c.ddp.use_distributed_optimizer)
    g_string_append(s, " --use-distributed-optimizer");
  return g_string_free(s, FALSE);
}

char *pn_sweep_text_space(const PnSweepSpec *spec, const PnSweepResult *r)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "space: %" G_GUINT64_FORMAT " candidates over %u axes (", r->candidates, spec->axes->len);
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    g_string_append_printf(s, "%s%s %u", a ? ", " : "", axis_name(spec, a), ax->values->len);
  }
  g_string_append_printf(s,
                         ")\n  rejected by rule    %12" G_GUINT64_FORMAT "\n  over memory         %12" G_GUINT64_FORMAT,
                         r->rejected, r->over_memory);
  if (r->over_memory > 0)
    g_string_append_printf(s, "   (the closest by %.2f GiB)", r->over_memory_least_gib);
  g_string_append_printf(s, "\n  to simulate         %12" G_GUINT64_FORMAT "\n", r->accepted);
  for (guint i = 0; i < r->reasons->len && i < 6; i++) {
    const PnSweepReason *rs = &g_array_index(r->reasons, PnSweepReason, i);
    g_string_append_printf(s, "    %12" G_GUINT64_FORMAT "  %s\n", rs->count, rs->reason);
  }
  if (r->reasons->len > 6)
    g_string_append_printf(s, "    (%u more reasons in the JSON report)\n", r->reasons->len - 6);
  return g_string_free(s, FALSE);
}

/* "TP4 PP4 VPP5 CP2 EP1 DP2 MBS1 recompute=selective" and any other axis as key=value; a split
 * the sweep chose follows the later of the pipeline and virtual sizes ("PP8 VPP1 last_stage=5"). */
static void layout_text(GString *s, const PnSweepSpec *spec, const PnSweepRow *row)
{
  static const struct {
    const char *key, *abbrev;
  } abbrevs[] = {
      {"hardware.num_gpus", "GPUs"},
      {"parallel.tensor_model_parallel_size", "TP"},
      {"parallel.pipeline_model_parallel_size", "PP"},
      {"parallel.virtual_pipeline_model_parallel_size", "VPP"},
      {"parallel.context_parallel_size", "CP"},
      {"parallel.expert_model_parallel_size", "EP"},
      {"training.micro_batch_size", "MBS"},
  };
  char buf[PN_SCENARIO_VALUE_MAX + 16];
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax    = g_ptr_array_index(spec->axes, a);
    const PnScenarioValue *v = pn_sweep_value(spec, a, row->index);
    const char *ab           = NULL;
    for (gsize i = 0; i < G_N_ELEMENTS(abbrevs) && ab == NULL; i++)
      if (strcmp(abbrevs[i].key, ax->field.name) == 0)
        ab = abbrevs[i].abbrev;
    if (ab != NULL)
      g_string_append_printf(s, "%s%s%s", s->len ? " " : "", ab, value_text(v, buf, sizeof buf));
    else
      g_string_append_printf(s, "%s%s=%s", s->len ? " " : "", axis_name(spec, a), value_text(v, buf, sizeof buf));
    if (strcmp(ax->field.name, "parallel.pipeline_model_parallel_size") == 0 && spec->vpp_follows_layout)
      g_string_append_printf(s, " VPP%" G_GINT64_FORMAT,
                             pn_workload_layout_stages(spec->base->parallel.pipeline_model_parallel_layout) /
                                 g_ascii_strtoll(v->text, NULL, 10));
    if (spec->split_chosen && (int)a == MAX(spec->split_pp_axis, spec->split_vpp_axis))
      pn_workload_split_describe(s, pn_sweep_split(spec, row->index), false);
    if (strcmp(ax->field.name, "parallel.context_parallel_size") == 0)
      g_string_append_printf(s, " DP%" G_GINT64_FORMAT, row->data_parallel_size);
  }
}

/* Where the base scenario's own layout landed: its rank and how far below the best, or why it is
 * not ranked. */
static void text_base(GString *s, const PnSweepSpec *spec, const PnSweepResult *r)
{
  if (!spec->base_in_space || spec->axes->len == 0)
    return;
  for (guint k = 0; k < r->rows->len; k++) {
    const PnSweepRow *row = &g_array_index(r->rows, PnSweepRow, k);
    if (row->index != spec->base_index || row->failed)
      continue;
    const PnSweepRow *best = &g_array_index(r->rows, PnSweepRow, 0);
    g_string_append_printf(s,
                           "the scenario's own layout ranks %u of %u: %.1f TFLOP/s/GPU, the best predicts %.1f%% "
                           "more\n",
                           k + 1, r->rows->len, row->tflops_per_gpu,
                           (best->tflops_per_gpu / row->tflops_per_gpu - 1.0) * 100.0);
    return;
  }
  PnRule rule;
  char why[512];
  double over = 0.0;
  if (pn_sweep_classify(spec, spec->base_index, &rule, why, sizeof why, &over) != PN_SWEEP_ACCEPTED)
    g_string_append_printf(s, "the scenario's own layout is not ranked: %s\n", why);
}

static void text_accuracy(GString *s, const PnSweepResult *r, const PnSweepReportOptions *o)
{
  if (isnan(o->error_pct)) {
    g_string_append(s, "penumbra's step-time error for this model is not measured: rank with care\n");
    return;
  }
  guint within = 0;
  for (guint k = 0; k < r->rows->len; k++)
    within += pn_sweep_within_error(r, k, o->error_pct);
  g_string_append_printf(s,
                         "penumbra's measured step-time error on %s: %.1f%% (mean absolute, %d published runs, "
                         "`penumbra validate`);\n%u layout%s within it of the best, marked '~': the prediction "
                         "cannot tell them apart\n",
                         o->error_family, o->error_pct, o->error_n, within, within == 1 ? " is" : "s are");
}

static void text_effects(GString *s, const PnSweepSpec *spec, const PnSweepResult *r)
{
  g_autofree PnSweepAxisEffect *eff = g_new0(PnSweepAxisEffect, MAX(spec->axes->len, 1));
  guint n                           = pn_sweep_axis_effects(spec, r, eff);
  if (n == 0)
    return;
  g_string_append(s, "axes by effect (spread of the best TFLOP/s/GPU over each axis's values; best value):\n");
  char buf[PN_SCENARIO_VALUE_MAX + 16];
  for (guint i = 0; i < n; i++)
    g_string_append_printf(s, "  %-40s %7.1f   %s\n", axis_name(spec, eff[i].axis), eff[i].spread,
                           value_text(eff[i].best_value, buf, sizeof buf));
}

char *pn_sweep_text_table(const PnSweepSpec *spec, const PnSweepResult *r, const PnSweepReportOptions *o)
{
  GString *s = g_string_new(NULL);
  g_string_append(s, "rank    TFLOP/s  tok/s/GPU  iter s  mem GiB  free   exposed s: dp     tp     pp     cp     ep   "
                     "bubble s  layout\n");
  guint shown = o->top > 0 ? MIN((guint)o->top, r->rows->len) : r->rows->len;
  for (guint k = 0; k < shown; k++) {
    const PnSweepRow *row  = &g_array_index(r->rows, PnSweepRow, k);
    g_autoptr(GString) lay = g_string_new(NULL);
    layout_text(lay, spec, row);
    if (row->failed) {
      g_string_append_printf(s, "%4u   failed: %s  %s\n", k + 1, row->error, lay->str);
      continue;
    }
    g_string_append_printf(s, "%4u%c %8.1f %10.0f %7.3f %8.1f %5.1f %14.3f %6.3f %6.3f %6.3f %6.3f %9.3f  %s\n", k + 1,
                           pn_sweep_within_error(r, k, o->error_pct) ? '~' : ' ', row->tflops_per_gpu,
                           row->tokens_per_s_per_gpu, row->iteration_s, row->memory_gib, row->headroom_gib,
                           row->exposed_s[PN_CLASS_DP], row->exposed_s[PN_CLASS_TP], row->exposed_s[PN_CLASS_PP],
                           row->exposed_s[PN_CLASS_CP], row->exposed_s[PN_CLASS_EP], row->bubble_s, lay->str);
  }
  if (shown < r->rows->len)
    g_string_append_printf(s, "(%u more in the CSV / JSON outputs)\n", r->rows->len - shown);
  if (r->rows->len == 0) {
    g_string_append(s, "no layout simulated\n");
    return g_string_free(s, FALSE);
  }
  g_string_append(s, "\n");
  text_base(s, spec, r);
  text_accuracy(s, r, o);
  text_effects(s, spec, r);
  const PnSweepRow *best = &g_array_index(r->rows, PnSweepRow, 0);
  if (!best->failed) {
    g_autofree char *args = pn_sweep_megatron_args(spec, best->index);
    g_string_append_printf(s, "best layout as Megatron-LM arguments:%s\n", args);
  }
  return g_string_free(s, FALSE);
}

/* ---- CSV ---- */

void pn_sweep_csv_cell(GString *s, const char *text)
{
  if (strpbrk(text, ",\"\n") == NULL) {
    g_string_append(s, text);
    return;
  }
  g_string_append_c(s, '"');
  for (const char *p = text; *p; p++) {
    if (*p == '"')
      g_string_append_c(s, '"');
    g_string_append_c(s, *p == '\n' ? ' ' : *p);
  }
  g_string_append_c(s, '"');
}

char *pn_sweep_csv(const PnSweepSpec *spec, const PnSweepResult *r, const PnSweepReportOptions *o)
{
  GString *s = g_string_new("rank,index");
  for (guint a = 0; a < spec->axes->len; a++)
    g_string_append_printf(s, ",%s", ((const PnSweepAxis *)g_ptr_array_index(spec->axes, a))->field.name);
  for (gsize k = 0; k < G_N_ELEMENTS(pn_sweep_split_keys); k++)
    if (!is_axis(spec, pn_sweep_split_keys[k]))
      g_string_append_printf(s, ",%s", pn_sweep_split_keys[k]);
  bool layouts = any_layout(spec);
  if (layouts)
    g_string_append(s, ",parallel.pipeline_model_parallel_layout");
  g_string_append(s, ",data_parallel_size,num_microbatches,model_tflops_per_gpu,tokens_per_s_per_gpu,mfu,"
                     "iteration_time_s,memory_gib,headroom_gib");
  for (int c = 0; c < PN_CLASS_N; c++)
    g_string_append_printf(s, ",exposed_%s_s", pn_comm_class_name((PnCommClass)c));
  g_string_append(s, ",bubble_s,compute_s,within_error,megatron_args,error\n");
  char buf[PN_SCENARIO_VALUE_MAX + 16];
  for (guint k = 0; k < r->rows->len; k++) {
    const PnSweepRow *row = &g_array_index(r->rows, PnSweepRow, k);
    g_string_append_printf(s, "%u,%" G_GUINT64_FORMAT, k + 1, row->index);
    for (guint a = 0; a < spec->axes->len; a++) {
      g_string_append_c(s, ',');
      pn_sweep_csv_cell(s, value_text(pn_sweep_value(spec, a, row->index), buf, sizeof buf));
    }
    PnScenario cand;
    PnScenarioValue v;
    pn_sweep_candidate(spec, row->index, &cand);
    for (gsize i = 0; i < G_N_ELEMENTS(pn_sweep_split_keys); i++)
      if (split_value(spec, i, &cand, &v)) {
        g_string_append_c(s, ',');
        pn_sweep_csv_cell(s, value_text(&v, buf, sizeof buf));
      }
    if (layouts) {
      g_autofree char *layout = pn_workload_layout_compact(cand.parallel.pipeline_model_parallel_layout);
      g_string_append_c(s, ',');
      pn_sweep_csv_cell(s, layout);
    }
    g_string_append_printf(s, ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%.3f,%.1f,%.4f,%.6f,%.3f,%.3f",
                           row->data_parallel_size, row->num_microbatches, row->tflops_per_gpu,
                           row->tokens_per_s_per_gpu, row->mfu, row->iteration_s, row->memory_gib, row->headroom_gib);
    for (int c = 0; c < PN_CLASS_N; c++)
      g_string_append_printf(s, ",%.6f", row->exposed_s[c]);
    g_string_append_printf(s, ",%.6f,%.6f,%s,", row->bubble_s, row->compute_s,
                           pn_sweep_within_error(r, k, o->error_pct) ? "true" : "false");
    g_autofree char *args = row->failed ? g_strdup("") : pn_sweep_megatron_args(spec, row->index);
    pn_sweep_csv_cell(s, g_strstrip(args));
    g_string_append_c(s, ',');
    pn_sweep_csv_cell(s, row->failed ? row->error : "");
    g_string_append_c(s, '\n');
  }
  return g_string_free(s, FALSE);
}

uint64_t pn_sweep_write_rejected(const PnSweepSpec *spec, PnSweepSink sink, gpointer user)
{
  GString *s = g_string_new("index");
  for (guint a = 0; a < spec->axes->len; a++)
    g_string_append_printf(s, ",%s", ((const PnSweepAxis *)g_ptr_array_index(spec->axes, a))->field.name);
  g_string_append(s, ",verdict,reason\n");
  uint64_t n = pn_sweep_size(spec), written = 0;
  char buf[PN_SCENARIO_VALUE_MAX + 16], why[512];
  for (uint64_t i = 0; i < n; i++) {
    PnRule rule;
    double over            = 0.0;
    PnSweepVerdict verdict = pn_sweep_classify(spec, i, &rule, why, sizeof why, &over);
    if (verdict == PN_SWEEP_ACCEPTED)
      continue;
    g_string_append_printf(s, "%" G_GUINT64_FORMAT, i);
    for (guint a = 0; a < spec->axes->len; a++) {
      g_string_append_c(s, ',');
      pn_sweep_csv_cell(s, value_text(pn_sweep_value(spec, a, i), buf, sizeof buf));
    }
    g_string_append(s, verdict == PN_SWEEP_REJECTED ? ",rejected," : ",over_memory,");
    pn_sweep_csv_cell(s, why);
    g_string_append_c(s, '\n');
    written++;
    if (s->len > 1 << 16) {
      sink(s->str, s->len, user);
      g_string_truncate(s, 0);
    }
  }
  sink(s->str, s->len, user);
  g_string_free(s, TRUE);
  return written;
}

/* ---- JSON ---- */

static void json_space(PnJsonWriter *w, const PnSweepSpec *spec, const PnSweepResult *r)
{
  pn_jsonw_object(w, "space", PN_JSONW_BLOCK);
  pn_jsonw_array(w, "axes", PN_JSONW_BLOCK);
  char buf[PN_SCENARIO_VALUE_MAX + 16];
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
    pn_jsonw_string(w, "key", ax->field.name);
    pn_jsonw_bool(w, "opened", ax->opened);
    pn_jsonw_array(w, "values", PN_JSONW_INLINE);
    for (guint v = 0; v < ax->values->len; v++)
      pn_jsonw_string(w, NULL, value_text(&g_array_index(ax->values, PnScenarioValue, v), buf, sizeof buf));
    pn_jsonw_end(w);
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
  pn_jsonw_bool(w, "sequence_parallel_follows_tp", spec->sp_follows_tp);
  pn_jsonw_end(w);
  pn_jsonw_object(w, "counts", PN_JSONW_BLOCK);
  pn_jsonw_uint(w, "candidates", r->candidates);
  pn_jsonw_uint(w, "rejected", r->rejected);
  pn_jsonw_uint(w, "over_memory", r->over_memory);
  if (r->over_memory > 0)
    pn_jsonw_fixed(w, "over_memory_least_gib", r->over_memory_least_gib, 3);
  pn_jsonw_uint(w, "accepted", r->accepted);
  pn_jsonw_uint(w, "simulated", r->simulated);
  guint failed = 0;
  for (guint k = 0; k < r->rows->len; k++)
    failed += g_array_index(r->rows, PnSweepRow, k).failed;
  pn_jsonw_uint(w, "failed", failed);
  pn_jsonw_bool(w, "interrupted", r->interrupted);
  pn_jsonw_end(w);
  pn_jsonw_array(w, "rejected_by_reason", PN_JSONW_BLOCK);
  for (guint i = 0; i < r->reasons->len; i++) {
    const PnSweepReason *rs = &g_array_index(r->reasons, PnSweepReason, i);
    pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
    pn_jsonw_uint(w, "count", rs->count);
    pn_jsonw_string(w, "reason", rs->reason);
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
}

static void json_row(PnJsonWriter *w, const PnSweepSpec *spec, const PnSweepResult *r, guint k,
                     const PnSweepReportOptions *o)
{
  const PnSweepRow *row = &g_array_index(r->rows, PnSweepRow, k);
  char buf[PN_SCENARIO_VALUE_MAX + 16];
  pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_uint(w, "rank", k + 1);
  pn_jsonw_uint(w, "index", row->index);
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax    = g_ptr_array_index(spec->axes, a);
    const PnScenarioValue *v = pn_sweep_value(spec, a, row->index);
    if (ax->field.enum_like)
      pn_jsonw_string(w, ax->field.name, value_text(v, buf, sizeof buf));
    else
      pn_jsonw_int(w, ax->field.name, g_ascii_strtoll(v->text, NULL, 10));
  }
  PnScenario cand; /* the split keys that are set and no axis: the split chosen, or the base's */
  PnScenarioValue v;
  pn_sweep_candidate(spec, row->index, &cand);
  for (gsize i = 0; i < G_N_ELEMENTS(pn_sweep_split_keys); i++)
    if (split_value(spec, i, &cand, &v) && strcmp(v.text, "null") != 0 && strcmp(v.text, "false") != 0) {
      if (strcmp(v.text, "true") == 0)
        pn_jsonw_bool(w, pn_sweep_split_keys[i], true);
      else
        pn_jsonw_int(w, pn_sweep_split_keys[i], g_ascii_strtoll(v.text, NULL, 10));
    }
  if (cand.parallel.pipeline_model_parallel_layout[0] != '\0') {
    g_autofree char *layout = pn_workload_layout_compact(cand.parallel.pipeline_model_parallel_layout);
    pn_jsonw_string(w, "parallel.pipeline_model_parallel_layout", layout);
  }
  pn_jsonw_int(w, "data_parallel_size", row->data_parallel_size);
  pn_jsonw_int(w, "num_microbatches", row->num_microbatches);
  if (row->failed) {
    pn_jsonw_string(w, "error", row->error);
    pn_jsonw_end(w);
    return;
  }
  pn_jsonw_fixed(w, "model_tflops_per_gpu", row->tflops_per_gpu, 3);
  pn_jsonw_fixed(w, "tokens_per_s_per_gpu", row->tokens_per_s_per_gpu, 1);
  pn_jsonw_fixed(w, "mfu", row->mfu, 4);
  pn_jsonw_fixed(w, "iteration_time_s", row->iteration_s, 6);
  pn_jsonw_fixed(w, "memory_gib", row->memory_gib, 3);
  pn_jsonw_fixed(w, "headroom_gib", row->headroom_gib, 3);
  pn_jsonw_object(w, "exposed_comm_s", PN_JSONW_INLINE);
  for (int c = 0; c < PN_CLASS_N; c++)
    pn_jsonw_fixed(w, pn_comm_class_name((PnCommClass)c), row->exposed_s[c], 6);
  pn_jsonw_end(w);
  pn_jsonw_fixed(w, "bubble_s", row->bubble_s, 6);
  pn_jsonw_fixed(w, "compute_s", row->compute_s, 6);
  pn_jsonw_bool(w, "within_error_of_best", pn_sweep_within_error(r, k, o->error_pct));
  g_autofree char *args = pn_sweep_megatron_args(spec, row->index);
  pn_jsonw_string(w, "megatron_args", g_strstrip(args));
  pn_jsonw_end(w);
}

char *pn_sweep_json(const PnSweepSpec *spec, const PnSweepResult *r, const PnSweepReportOptions *o)
{
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_int(w, "schema_version", 1);
  pn_jsonw_object(w, "penumbra", PN_JSONW_INLINE);
  pn_jsonw_string(w, "version", o->version);
  pn_jsonw_string(w, "commit", o->commit);
  pn_jsonw_end(w);
  pn_jsonw_string(w, "source", o->source);
  pn_jsonw_string(w, "model", spec->base->model.name);
  pn_jsonw_string(w, "profile", spec->base->hardware.profile);
  if (spec->base_in_space)
    pn_jsonw_uint(w, "base_index", spec->base_index);
  else
    pn_jsonw_null(w, "base_index");
  pn_jsonw_int(w, "seq_length", spec->base->training.seq_length);
  pn_jsonw_int(w, "global_batch_size", spec->base->training.global_batch_size);
  json_space(w, spec, r);
  pn_jsonw_object(w, "accuracy", PN_JSONW_INLINE);
  pn_jsonw_string(w, "records", o->error_family);
  pn_jsonw_int(w, "n", o->error_n);
  pn_jsonw_fixed(w, "step_time_mape_pct", o->error_pct, 2);
  pn_jsonw_end(w);
  g_autofree PnSweepAxisEffect *eff = g_new0(PnSweepAxisEffect, MAX(spec->axes->len, 1));
  guint n_eff                       = pn_sweep_axis_effects(spec, r, eff);
  pn_jsonw_array(w, "axis_effects", PN_JSONW_BLOCK);
  char buf[PN_SCENARIO_VALUE_MAX + 16];
  for (guint i = 0; i < n_eff; i++) {
    pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
    pn_jsonw_string(w, "key", ((const PnSweepAxis *)g_ptr_array_index(spec->axes, eff[i].axis))->field.name);
    pn_jsonw_fixed(w, "spread_tflops", eff[i].spread, 3);
    pn_jsonw_string(w, "best_value", value_text(eff[i].best_value, buf, sizeof buf));
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
  pn_jsonw_array(w, "layouts", PN_JSONW_BLOCK);
  for (guint k = 0; k < r->rows->len; k++)
    json_row(w, spec, r, k, o);
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
}
