/* whatif.c — each overlap knob of a layout off and on (whatif.h). */
#include "sweep/whatif.h"

#include <math.h>

#include "overlap/gating.h"
#include "overlap/strategy.h"

static double all_classes(const double v[PN_CLASS_N])
{
  double e = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    e += v[c];
  return e;
}

static void knob_clear(gpointer p)
{
  PnWhatIfKnob *k = p;
  g_free(k->refused[0]);
  g_free(k->refused[1]);
}

GArray *pn_sweep_what_if_knobs_new(void)
{
  GArray *knobs = g_array_new(FALSE, TRUE, sizeof(PnWhatIfKnob));
  g_array_set_clear_func(knobs, knob_clear);
  return knobs;
}

gboolean pn_sweep_what_if(const PnScenario *base, PnWhatIfRun run, PnWhatIfProgress progress, gpointer user,
                          GArray *knobs, GError **error)
{
  PnPlan plan;
  if (!pn_overlap_resolve(base, &plan, NULL, error))
    return FALSE;
  int runs = 0, i = 0;
  for (size_t k = 0; k < pn_overlap_n_what_if; k++)
    runs += pn_overlap_what_if[k]->applies(base) ? 2 : 0;
  for (size_t k = 0; k < pn_overlap_n_what_if; k++) {
    const PnOverlapStrategy *s = pn_overlap_what_if[k];
    if (!s->applies(base))
      continue;
    g_array_append_val(knobs, ((PnWhatIfKnob){.name = s->name, .now = s->is_on(&plan)}));
    PnWhatIfKnob *row = &g_array_index(knobs, PnWhatIfKnob, knobs->len - 1);
    for (int v = 0; v < 2; v++) {
      if (progress)
        progress(++i, runs, s->name, v ? "on" : "off", user);
      GError *local         = NULL;
      g_autoptr(PnResult) r = run(v ? s->set_on : s->set_off, user, &row->refused[v], &local);
      if (local) {
        if (progress)
          progress(0, 0, NULL, NULL, user);
        g_propagate_error(error, local);
        return FALSE;
      }
      row->iteration_time_s[v] = r ? r->iteration_time_s : (double)NAN;
      row->exposed_comm_s[v]   = r ? all_classes(r->exposed_comm_s) : (double)NAN;
      row->contention_s[v]     = r ? all_classes(r->contention_s) : (double)NAN;
    }
  }
  if (progress)
    progress(0, 0, NULL, NULL, user);
  return TRUE;
}
