/* plan.c — the counts, batches and sweeps of a plan, and the arithmetic of each point (plan.h). */
#include "plan/plan.h"

#include <math.h>
#include <string.h>

#include "io/file.h"
#include "io/scenario.h"
#include "io/space.h"
#include "io/validate.h"
#include "sim/sim.h"
#include "sweep/space.h"
#include "sweep/whatif.h"
#include "workload/rules.h"
#include "workload/split.h"

#define PN_PLAN_MAX_ODD 3 /* odd pipeline factors given counts of their own, per octave */
#define PN_PLAN_MAX_PP 16 /* the sweep's default pipeline sizes (space.h) */

double pn_plan_train_s(double tokens, double tokens_per_s, double goodput) { return tokens / tokens_per_s / goodput; }
double pn_plan_gpu_hours(double train_s, int64_t gpus) { return train_s * (double)gpus / 3600.0; }
double pn_plan_cost(double gpu_hours, double price_per_gpu_hour) { return gpu_hours * price_per_gpu_hour; }
double pn_plan_efficiency(double per_gpu, double per_gpu_at_smallest) { return per_gpu / per_gpu_at_smallest; }

static bool usable(int64_t n, int per_node) { return n % per_node == 0 || (n < per_node && per_node % n == 0); }

static gint cmp_i64(gconstpointer a, gconstpointer b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The odd part of n. */
static int64_t odd_part(int64_t n)
{
  while (n % 2 == 0)
    n /= 2;
  return n;
}

GArray *pn_plan_gpu_counts(int64_t min, int64_t max, int gpus_per_node, uint32_t pipeline_sizes, char **why)
{
  GArray *counts = g_array_new(FALSE, FALSE, sizeof(int64_t));
  for (int64_t n = 1; n <= max; n *= 2)
    if (n >= min && usable(n, gpus_per_node))
      g_array_append_val(counts, n);
  /* odd parts of the default pipeline sizes, smallest first: each needs its own counts */
  int64_t odd[PN_PLAN_MAX_ODD];
  int n_odd     = 0;
  GString *pps  = g_string_new(NULL);
  GString *adds = g_string_new(NULL);
  for (int64_t d = 3; d <= PN_PLAN_MAX_PP && n_odd < PN_PLAN_MAX_ODD; d += 2) {
    bool some = false;
    for (int64_t pp = d; pp <= PN_PLAN_MAX_PP && !some; pp += d)
      some = ((pipeline_sizes >> pp) & 1u) && odd_part(pp) == d;
    if (some)
      odd[n_odd++] = d;
  }
  for (int i = 0; i < n_odd; i++) {
    bool any = false;
    for (int64_t n = odd[i]; n <= max; n *= 2)
      if (n >= min && usable(n, gpus_per_node)) {
        g_array_append_val(counts, n);
        g_string_append_printf(adds, "%s%" G_GINT64_FORMAT, adds->len ? ", " : "", n);
        any = true;
      }
    if (!any)
      continue;
    g_string_append_printf(pps, "%s%" G_GINT64_FORMAT " (pipeline sizes", pps->len ? "; " : "", odd[i]);
    for (int64_t pp = odd[i]; pp <= PN_PLAN_MAX_PP; pp += odd[i])
      if ((pipeline_sizes >> pp) & 1u)
        g_string_append_printf(pps, " %" G_GINT64_FORMAT, pp);
    g_string_append_c(pps, ')');
  }
  g_array_sort(counts, cmp_i64);
  *why = adds->len ? g_strdup_printf("%s: multiples of %s, which the pipeline split takes", adds->str, pps->str) : NULL;
  g_string_free(pps, TRUE), g_string_free(adds, TRUE);
  return counts;
}

GArray *pn_plan_batches(double tokens_min, double tokens_max, int64_t seq)
{
  GArray *b = g_array_new(FALSE, FALSE, sizeof(int64_t));
  for (int64_t s = 1; (double)s * (double)seq <= tokens_max; s *= 2)
    if ((double)s * (double)seq >= tokens_min)
      g_array_append_val(b, s);
  return b;
}

static void sweep_free(PnPlanSweep *s)
{
  if (s == NULL)
    return;
  if (s->sweep.axes)
    g_ptr_array_free(s->sweep.axes, TRUE);
  pn_sweep_result_free(s->result);
  pn_scenario_free(s->base);
  g_free(s);
}

static void point_clear(gpointer p) { pn_sweep_result_free(((PnPlanPoint *)p)->layouts); }

void pn_plan_result_free(PnPlanResult *r)
{
  if (r == NULL)
    return;
  if (r->counts)
    g_array_free(r->counts, TRUE);
  if (r->batches)
    g_array_free(r->batches, TRUE);
  g_ptr_array_free(r->sweeps, TRUE);
  g_array_free(r->points, TRUE);
  if (r->knobs)
    g_array_free(r->knobs, TRUE);
  g_free(r->counts_why), g_free(r->error_family);
  g_free(r);
}

static PnSpaceEntry *entry_of(const char *display, const char *key, const GArray *values)
{
  PnSpaceEntry *e = g_new0(PnSpaceEntry, 1);
  e->display      = g_strdup(display);
  e->key          = g_strdup(key);
  e->values       = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < values->len; i++)
    g_ptr_array_add(e->values, g_strdup_printf("%" G_GINT64_FORMAT, g_array_index(values, int64_t, i)));
  return e;
}

static guint axis_index(const PnSweepSpec *spec, const char *name)
{
  for (guint a = 0; a < spec->axes->len; a++)
    if (strcmp(((const PnSweepAxis *)spec->axes->pdata[a])->field.name, name) == 0)
      return a;
  g_assert_not_reached();
}

/* A kind's base: one GPU, so that the loader's layout checks pass whatever the counts. */
static PnScenario *load_base(const PnPlanSpec *spec, const char *profile_name, int64_t batch, GError **error)
{
  g_autofree char *model = g_strescape(spec->model, NULL), *profile = g_strescape(profile_name, NULL);
  g_autofree char *prec = g_strescape(spec->precision, NULL);
  g_autofree char *json =
      g_strdup_printf("{\"schema_version\": 1, \"model\": \"%s\", \"hardware\": {\"profile\": \"%s\", \"num_gpus\": 1},"
                      " \"training\": {\"seq_length\": %" G_GINT64_FORMAT ", \"global_batch_size\": %" G_GINT64_FORMAT
                      ", \"precision\": \"%s\"}}",
                      model, profile, spec->seq_length, batch, prec);
  return pn_scenario_load_string(json, "plan options", NULL, 0, NULL, error);
}

/* A kind's space (owning `base`): the sweep's default layout axes, then the counts and batches. */
static PnPlanSweep *sweep_new(const PnPlanResult *r, PnScenario *base, GError **error)
{
  PnPlanSweep *s = g_new0(PnPlanSweep, 1);
  s->base        = base;
  s->result      = pn_sweep_result_new();
  s->sweep       = (PnSweepSpec){.base = base, .threads = r->spec->threads, .parts = 1, .cancel = r->spec->cancel};
  s->sweep.axes  = g_ptr_array_new_with_free_func((GDestroyNotify)pn_sweep_axis_free);
  g_autoptr(GPtrArray) ents = g_ptr_array_new_with_free_func((GDestroyNotify)pn_space_entry_free);
  g_ptr_array_add(ents, entry_of("--gpus", "hardware.num_gpus", r->counts));
  g_ptr_array_add(ents, entry_of("--global-batch-tokens", "training.global_batch_size", r->batches));
  PnSpaceOptions o = {.layout = true, .entries = ents};
  if (!pn_sweep_space_build(&s->sweep, &o, error)) {
    sweep_free(s);
    return NULL;
  }
  s->axis_gpus  = axis_index(&s->sweep, "hardware.num_gpus");
  s->axis_batch = axis_index(&s->sweep, "training.global_batch_size");
  return s;
}

/* The counts, from the first kind's node size and layers (kinds of other node sizes keep them:
 * a count that is no whole number of their nodes is refused by the rules). */
static gboolean plan_counts(PnPlanResult *r, const PnScenario *b, GError **error)
{
  /* the pipeline sizes the model's own split takes (even here): each count's sweep also offers
   * those where it chooses an uneven or account_for_* split (sweep/space.c), which would add odd
   * counts for nearly every model (3, 5 and 7 x 2^k) and are left out */
  uint32_t sizes = 0;
  for (int64_t pp = 1; pp <= PN_PLAN_MAX_PP; pp++)
    if (pn_workload_split_ok(b, pp, 1))
      sizes |= 1u << pp;
  r->counts = pn_plan_gpu_counts(r->spec->gpus_min, r->spec->gpus_max, b->hw->gpus_per_node, sizes, &r->counts_why);
  if (r->counts->len > 0)
    return TRUE;
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
              "--gpus: %" G_GINT64_FORMAT ":%" G_GINT64_FORMAT " holds no power of two of whole %d-GPU nodes",
              r->spec->gpus_min, r->spec->gpus_max, b->hw->gpus_per_node);
  return FALSE;
}

PnPlanResult *pn_plan_prepare(const PnPlanSpec *spec, GError **error)
{
  g_autoptr(PnPlanResult) r = g_new0(PnPlanResult, 1);
  r->spec                   = spec;
  r->sweeps                 = g_ptr_array_new_with_free_func((GDestroyNotify)sweep_free);
  r->points                 = g_array_new(FALSE, TRUE, sizeof(PnPlanPoint));
  g_array_set_clear_func(r->points, point_clear);
  r->cheapest = r->fastest = r->closest_deadline = r->closest_budget = r->recommended = -1;
  r->batches = pn_plan_batches(spec->batch_tokens_min, spec->batch_tokens_max, spec->seq_length);
  if (r->batches->len == 0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
                "--global-batch-tokens: no power of two of %" G_GINT64_FORMAT "-token sequences lies in %.0f:%.0f",
                spec->seq_length, spec->batch_tokens_min, spec->batch_tokens_max);
    return NULL;
  }
  r->priced = true;
  for (guint k = 0; k < spec->kinds->len; k++) {
    const PnPlanKind *kind = &g_array_index(spec->kinds, PnPlanKind, k);
    r->priced              = r->priced && !isnan(kind->price);
    PnScenario *base       = load_base(spec, kind->profile, g_array_index(r->batches, int64_t, 0), error);
    if (base == NULL || (k == 0 && !plan_counts(r, base, error))) {
      pn_scenario_free(base);
      return NULL;
    }
    PnPlanSweep *s = sweep_new(r, base, error);
    if (s == NULL)
      return NULL;
    g_ptr_array_add(r->sweeps, s);
  }
  g_autofree char *family = NULL;
  pn_validate_family_error(spec->model, &r->error_pct, &r->error_n, &family);
  r->error_family = family ? g_steal_pointer(&family) : g_strdup("no records");
  return g_steal_pointer(&r);
}

const PnSweepRow *pn_plan_best(const PnPlanPoint *p) { return &g_array_index(p->layouts->rows, PnSweepRow, 0); }

bool pn_plan_met(const PnPlanResult *r)
{
  return (isnan(r->spec->deadline_s) || r->cheapest >= 0) && (isnan(r->spec->budget) || r->fastest >= 0);
}
