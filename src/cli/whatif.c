/* whatif.c — `penumbra run --what-if`: each overlap knob of the registry (overlap/strategy.h)
 * that applies to the scenario, simulated off and on from the scenario as given, and reported
 * beside the baseline (io/report.h).
 *
 * Flipping a knob the user never set can give a configuration the frameworks refuse for this
 * layout (overlap_p2p_comm off with VPP at PP 2, for one): that direction is reported as refused,
 * with the loader's or the gate's reason, and the other knobs still run. Only what would be an
 * internal error on its own (exit status 1) stops the command.
 *
 * Each knob costs two simulations, seconds each on the largest scenarios: when stderr is a
 * terminal, one line there says which one runs ("what-if 3/8: comm_overlap.tp_comm_overlap off"),
 * rewritten in place and erased before the report is written.
 */
#include <math.h>
#include <unistd.h>

#include "cli/cli-private.h"
#include "io/report.h"
#include "io/scenario.h"
#include "overlap/gating.h"
#include "overlap/strategy.h"
#include "sim/sim.h"

static double all_classes(const double v[PN_CLASS_N])
{
  double e = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    e += v[c];
  return e;
}

/* The reason in one line, without the "<file>: " the user already knows (the scenario, or
 * "--set" for a value the knob wrote). */
static char *refusal(const GError *error, const char *path)
{
  const char *m = error->message;
  size_t n      = strlen(path);
  if (g_str_has_prefix(m, "--set: "))
    m += strlen("--set: ");
  else if (strncmp(m, path, n) == 0 && g_str_has_prefix(m + n, ": "))
    m += n + 2;
  return g_strdelimit(g_strdup(m), "\r\n", ' ');
}

static void knob_clear(gpointer p)
{
  PnWhatIfKnob *k = p;
  g_free(k->refused[0]);
  g_free(k->refused[1]);
}

/* The scenario with `add` appended to the user's --set, simulated. Returns the result, or NULL
 * with *refused set (the frameworks refuse it) or, on an internal error, with `error` set. */
static PnResult *simulate(const char *path, char **sets, int n_sets, const char *const add[2], int iterations,
                          char **refused, GError **error)
{
  g_autoptr(GPtrArray) all = g_ptr_array_new();
  for (int i = 0; i < n_sets; i++)
    g_ptr_array_add(all, sets[i]);
  for (int i = 0; i < 2 && add[i]; i++)
    g_ptr_array_add(all, (gpointer)add[i]);
  g_autoptr(GError) local  = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load(path, (const char *const *)all->pdata, (int)all->len, NULL, &local);
  PnResult *r              = NULL;
  if (sc) {
    sc->training.iterations = iterations;
    r                       = pn_sim_run(sc, NULL, &local);
  }
  if (r)
    return r;
  if (pn__cli_status(local) == 2)
    *refused = refusal(local, path);
  else
    g_propagate_error(error, g_steal_pointer(&local));
  return NULL;
}

/* The progress line, or with `knob` NULL its erasure; nothing unless stderr is a terminal. */
static void progress(bool tty, int i, int n, const char *knob, const char *direction)
{
  if (!tty)
    return;
  if (knob)
    fprintf(stderr, "\r\033[Kwhat-if %d/%d: %s %s", i, n, knob, direction);
  else
    fputs("\r\033[K", stderr);
  fflush(stderr);
}

int pn__cli_what_if(const char *path, char **sets, int n_sets, const PnScenario *base, const PnResult *base_r,
                    bool json, const PnReportOptions *ro, char **report)
{
  PnPlan plan;
  g_autoptr(GError) error = NULL;
  if (!pn_overlap_resolve(base, &plan, NULL, &error))
    return pn__cli_fail(error);
  g_autoptr(GArray) knobs = g_array_new(FALSE, TRUE, sizeof(PnWhatIfKnob));
  g_array_set_clear_func(knobs, knob_clear);
  bool tty = isatty(STDERR_FILENO);
  int runs = 0, run = 0;
  for (size_t k = 0; k < pn_overlap_n_what_if; k++)
    runs += pn_overlap_what_if[k]->applies(base) ? 2 : 0;
  for (size_t k = 0; k < pn_overlap_n_what_if; k++) {
    const PnOverlapStrategy *s = pn_overlap_what_if[k];
    if (!s->applies(base))
      continue;
    g_array_append_val(knobs, ((PnWhatIfKnob){.name = s->name, .now = s->is_on(&plan)}));
    PnWhatIfKnob *row = &g_array_index(knobs, PnWhatIfKnob, knobs->len - 1);
    for (int v = 0; v < 2; v++) {
      progress(tty, ++run, runs, s->name, v ? "on" : "off");
      g_autoptr(PnResult) r =
          simulate(path, sets, n_sets, v ? s->set_on : s->set_off, base->training.iterations, &row->refused[v], &error);
      if (error) {
        progress(tty, 0, 0, NULL, NULL);
        return pn__cli_fail(error);
      }
      row->iteration_time_s[v] = r ? r->iteration_time_s : (double)NAN;
      row->exposed_comm_s[v]   = r ? all_classes(r->exposed_comm_s) : (double)NAN;
      row->contention_s[v]     = r ? all_classes(r->contention_s) : (double)NAN;
    }
  }
  progress(tty, 0, 0, NULL, NULL);
  *report = json ? pn_report_what_if_json(base, base_r, knobs, ro) : pn_report_what_if_text(base, base_r, knobs);
  return 0;
}
