/* whatif.c — `penumbra run --what-if`: each overlap knob of the registry (overlap/strategy.h)
 * that applies to the scenario, simulated off and on from the scenario as given, and reported
 * beside the baseline (io/report.h).
 *
 * Flipping a knob the user never set can give a configuration the frameworks refuse for this
 * layout (overlap_p2p_comm off with VPP at PP 2, for one): that direction is reported as refused,
 * with the loader's or the gate's reason, and the other knobs still run. Only what would be an
 * internal error on its own (exit status 1) stops the command.
 *
 * The loop over the knobs is sweep/whatif.h's; this file simulates each variant from the
 * scenario file with the knob's --set appended.
 *
 * Each knob costs two simulations, seconds each on the largest scenarios: when stderr is a
 * terminal, one line there says which one runs ("what-if 3/8: comm_overlap.tp_comm_overlap off"),
 * rewritten in place and erased before the report is written.
 */
#include <unistd.h>

#include "cli/cli-private.h"
#include "io/report.h"
#include "io/scenario.h"
#include "sim/sim.h"
#include "sweep/whatif.h"

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

typedef struct {
  const char *path;
  char **sets;
  int n_sets, iterations;
  bool tty;
} WhatIfRun;

/* The scenario with `add` appended to the user's --set, simulated. Returns the result, or NULL
 * with *refused set (the frameworks refuse it) or, on an internal error, with `error` set. */
static PnResult *simulate(const char *const add[2], gpointer user, char **refused, GError **error)
{
  const WhatIfRun *w       = user;
  g_autoptr(GPtrArray) all = g_ptr_array_new();
  for (int i = 0; i < w->n_sets; i++)
    g_ptr_array_add(all, w->sets[i]);
  for (int i = 0; i < 2 && add[i]; i++)
    g_ptr_array_add(all, (gpointer)add[i]);
  g_autoptr(GError) local  = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load(w->path, (const char *const *)all->pdata, (int)all->len, NULL, &local);
  PnResult *r              = NULL;
  if (sc) {
    sc->training.iterations = w->iterations;
    r                       = pn_sim_run(sc, NULL, &local);
  }
  if (r)
    return r;
  if (pn__cli_status(local) == 2)
    *refused = refusal(local, w->path);
  else
    g_propagate_error(error, g_steal_pointer(&local));
  return NULL;
}

/* The progress line, or with `knob` NULL its erasure; nothing unless stderr is a terminal. */
static void progress(int i, int n, const char *knob, const char *direction, gpointer user)
{
  const WhatIfRun *w = user;
  if (!w->tty)
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
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) knobs = pn_sweep_what_if_knobs_new();
  WhatIfRun w             = {.path       = path,
                             .sets       = sets,
                             .n_sets     = n_sets,
                             .iterations = base->training.iterations,
                             .tty        = isatty(STDERR_FILENO)};
  if (!pn_sweep_what_if(base, simulate, progress, &w, knobs, &error))
    return pn__cli_fail(error);
  *report = json ? pn_report_what_if_json(base, base_r, knobs, ro) : pn_report_what_if_text(base, base_r, knobs);
  return 0;
}
