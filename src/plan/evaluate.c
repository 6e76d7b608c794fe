/* evaluate.c — a plan's sweeps, its points and their arithmetic, the choices, and the what-if of
 * the recommended layout (plan.h). */
#include <math.h>
#include <string.h>

#include "io/file.h"
#include "io/scenario.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "sweep/output.h"
#include "sweep/whatif.h"
#include "workload/rules.h"

static int64_t value_of(const PnSweepSpec *spec, guint axis, uint64_t index)
{
  return g_ascii_strtoll(pn_sweep_value(spec, axis, index)->text, NULL, 10);
}

static guint count_at(const PnPlanSweep *s, const GArray *indices, int64_t gpus, int64_t batch)
{
  guint n = 0;
  for (guint k = 0; k < indices->len; k++) {
    uint64_t i = g_array_index(indices, uint64_t, k);
    n += value_of(&s->sweep, s->axis_gpus, i) == gpus && value_of(&s->sweep, s->axis_batch, i) == batch;
  }
  return n;
}

/* The kind's rows at (gpus, batch), in the sweep's ranking, as a result of their own. */
static PnSweepResult *layouts_at(const PnPlanSweep *s, int64_t gpus, int64_t batch)
{
  PnSweepResult *out = pn_sweep_result_new();
  for (guint k = 0; k < s->result->rows->len; k++) {
    PnSweepRow row = g_array_index(s->result->rows, PnSweepRow, k);
    if (value_of(&s->sweep, s->axis_gpus, row.index) != gpus || value_of(&s->sweep, s->axis_batch, row.index) != batch)
      continue;
    row.error = g_strdup(row.error);
    g_array_append_val(out->rows, row);
    out->simulated++;
  }
  return out;
}

static void point_figures(const PnPlanResult *r, PnPlanPoint *p)
{
  const PnPlanKind *kind = &g_array_index(r->spec->kinds, PnPlanKind, p->kind);
  const PnSweepRow *best = p->layouts->rows->len ? pn_plan_best(p) : NULL;
  p->feasible            = best != NULL && !best->failed;
  p->tokens_per_s = p->train_s = p->gpu_hours = p->cost = p->efficiency = NAN;
  if (!p->feasible)
    return;
  p->tokens_per_s = best->tokens_per_s_per_gpu * (double)p->gpus;
  p->train_s      = pn_plan_train_s(r->spec->tokens, p->tokens_per_s, r->spec->goodput);
  p->gpu_hours    = pn_plan_gpu_hours(p->train_s, p->gpus);
  p->cost         = pn_plan_cost(p->gpu_hours, kind->price);
  p->within       = 1;
  for (guint k = 1; k < p->layouts->rows->len; k++)
    p->within += pn_sweep_within_error(p->layouts, k, r->error_pct);
}

/* Each (kind, count)'s plan is its best batch (the most tokens/s; the smaller batch on a tie); its
 * efficiency is against the plan at the kind's smallest feasible count. */
static void build_points(PnPlanResult *r)
{
  guint nb = r->batches->len;
  for (guint k = 0; k < r->sweeps->len; k++) {
    const PnPlanSweep *s = r->sweeps->pdata[k];
    double ref           = NAN;
    for (guint c = 0; c < r->counts->len; c++) {
      guint first = r->points->len, chosen = G_MAXUINT;
      for (guint b = 0; b < nb; b++) {
        PnPlanPoint p = {.kind = k, .gpus = g_array_index(r->counts, int64_t, c)};
        p.batch       = g_array_index(r->batches, int64_t, b);
        p.layouts     = layouts_at(s, p.gpus, p.batch);
        p.checked     = count_at(s, s->result->accepted_index, p.gpus, p.batch);
        p.simulated   = s->sweep.prune_within > 0.0 ? p.checked - count_at(s, s->result->pruned_index, p.gpus, p.batch)
                                                    : p.layouts->rows->len;
        point_figures(r, &p);
        g_array_append_val(r->points, p);
        const PnPlanPoint *best = chosen == G_MAXUINT ? NULL : &g_array_index(r->points, PnPlanPoint, chosen);
        if (p.feasible && (best == NULL || p.tokens_per_s > best->tokens_per_s))
          chosen = r->points->len - 1;
      }
      if (chosen == G_MAXUINT)
        continue;
      PnPlanPoint *cp = &g_array_index(r->points, PnPlanPoint, chosen);
      cp->chosen      = true;
      if (isnan(ref))
        ref = pn_plan_best(cp)->tokens_per_s_per_gpu;
      for (guint i = first; i < r->points->len; i++) {
        PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
        if (p->feasible)
          p->efficiency = pn_plan_efficiency(pn_plan_best(p)->tokens_per_s_per_gpu, ref);
      }
    }
  }
}

/* What plans compare on: the cost when every kind has a price, GPU-hours otherwise. */
static double spend(const PnPlanResult *r, const PnPlanPoint *p) { return r->priced ? p->cost : p->gpu_hours; }

static bool better(double a, double b, double a2, double b2) { return a < b || (a == b && a2 < b2); }

static void choose(PnPlanResult *r)
{
  const PnPlanSpec *spec = r->spec;
  int fastest_all = -1, cheapest_all = -1;
  for (guint i = 0; i < r->points->len; i++) {
    const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
    if (!p->chosen)
      continue;
#define AT(k) (&g_array_index(r->points, PnPlanPoint, (k)))
    if (fastest_all < 0 || better(p->train_s, AT(fastest_all)->train_s, spend(r, p), spend(r, AT(fastest_all))))
      fastest_all = (int)i;
    if (cheapest_all < 0 || better(spend(r, p), spend(r, AT(cheapest_all)), p->train_s, AT(cheapest_all)->train_s))
      cheapest_all = (int)i;
    if ((isnan(spec->deadline_s) || p->train_s <= spec->deadline_s) &&
        (r->cheapest < 0 || better(spend(r, p), spend(r, AT(r->cheapest)), p->train_s, AT(r->cheapest)->train_s)))
      r->cheapest = (int)i;
    if ((isnan(spec->budget) || p->cost <= spec->budget) &&
        (r->fastest < 0 || better(p->train_s, AT(r->fastest)->train_s, spend(r, p), spend(r, AT(r->fastest)))))
      r->fastest = (int)i;
#undef AT
  }
  if (r->cheapest < 0)
    r->closest_deadline = fastest_all;
  if (r->fastest < 0)
    r->closest_budget = cheapest_all;
  r->recommended = r->cheapest >= 0           ? r->cheapest
                   : r->fastest >= 0          ? r->fastest
                   : r->closest_deadline >= 0 ? r->closest_deadline
                                              : r->closest_budget;
}

typedef struct {
  const PnScenario *layout;
  PnPlanProgress *progress;
} KnobRun;

/* The recommended layout with a knob's "key=value"s set, checked and simulated. A refusal by a
 * rule, the gating or the simulation's input checks is the frameworks' (refused); an executor
 * failure is internal. */
static PnResult *knob_run(const char *const set[2], gpointer user, char **refused, GError **error)
{
  const KnobRun *k = user;
  PnScenario c     = *k->layout;
  for (int i = 0; i < 2 && set[i]; i++) {
    g_auto(GStrv) kv = g_strsplit(set[i], "=", 2);
    PnScenarioField f;
    PnScenarioValue v;
    gboolean ok =
        pn_scenario_field_find(kv[0], "what-if", &f, NULL) && pn_scenario_field_parse(&f, kv[1], "what-if", &v, NULL);
    g_assert(ok); /* the registry's knobs name keys and values of the schema */
    pn_scenario_field_set(&f, &c, &v);
  }
  PnRuleViolation why;
  if (pn_workload_check(&c, &why, NULL) != PN_RULE_OK) {
    *refused = g_strdup_printf("%s: %s", why.path, why.message);
    return NULL;
  }
  g_autoptr(GError) local = NULL;
  PnResult *res           = pn_sim_run(&c, NULL, &local);
  if (res == NULL && local->domain == PN_IO_ERROR)
    *refused = g_strdup(local->message);
  else if (res == NULL)
    g_propagate_error(error, g_steal_pointer(&local));
  return res;
}

static void knob_progress(int i, int n, const char *knob, const char *direction, gpointer user)
{
  const KnobRun *k = user;
  if (k->progress == NULL || knob == NULL)
    return;
  k->progress->sweep.total = n;
  g_atomic_int_set(&k->progress->sweep.done, i - 1);
}

static gboolean what_if(PnPlanResult *r, PnPlanProgress *progress, GError **error)
{
  r->knobs = pn_sweep_what_if_knobs_new();
  if (r->recommended < 0)
    return TRUE;
  const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, r->recommended);
  const PnPlanSweep *s = r->sweeps->pdata[p->kind];
  PnScenario layout;
  pn_sweep_candidate(&s->sweep, pn_plan_best(p)->index, &layout);
  pn_workload_check(&layout, NULL, NULL);
  if (progress)
    g_atomic_int_set(&progress->phase, 2);
  KnobRun k = {.layout = &layout, .progress = progress};
  return pn_sweep_what_if(&layout, knob_run, knob_progress, &k, r->knobs, error);
}

/* The pruning margin: a runner-up within e of the best's TFLOP/s at one count and batch takes at
 * most 1 / (1 - e) of its time. The slack covers what time and TFLOP/s rank differently: the
 * vocabulary padded to the tensor size changes the model FLOPs between layouts by < 1e-4. With no
 * measured error only the best is needed. */
static double prune_margin(const PnPlanResult *r)
{
  double e = isnan(r->error_pct) ? 0.0 : r->error_pct / 100.0;
  return 1.0 / (1.0 - e) - 1.0 + 1e-3;
}

gboolean pn_plan_evaluate(PnPlanResult *r, PnPlanProgress *progress, GError **error)
{
  for (guint k = 0; k < r->sweeps->len && !r->interrupted; k++) {
    PnPlanSweep *s        = r->sweeps->pdata[k];
    s->sweep.prune_within = r->spec->exhaustive ? 0.0 : prune_margin(r);
    if (progress)
      g_atomic_int_set(&progress->kind, (gint)k), g_atomic_int_set(&progress->phase, 0);
    pn_sweep_check(&s->sweep, s->result, progress ? &progress->sweep : NULL);
    if (progress)
      g_atomic_int_set(&progress->phase, 1);
    if (!s->result->interrupted)
      pn_sweep_simulate(&s->sweep, s->result, progress ? &progress->sweep : NULL);
    r->interrupted = s->result->interrupted;
  }
  if (r->interrupted)
    return TRUE;
  build_points(r);
  choose(r);
  return what_if(r, progress, error);
}
