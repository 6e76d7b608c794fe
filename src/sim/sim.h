/* sim.h — simulate one scenario end to end: resolve the overlap plan, build the task graph,
 * execute it, and account compute, exposed communication and bubble per stage (result.h).
 *
 * The reported iteration is the last simulated one (training.iterations, default 1); the
 * window of iteration i runs from the end of iteration i-1 (the last stage to finish it) to the
 * end of iteration i. Cost: dominated by pn_exec_run, O(tasks log tasks).
 */
#ifndef PN_SIM_SIM_H
#define PN_SIM_SIM_H

#include <glib.h>

#include "hw/exec.h"
#include "hw/graph.h"
#include "sim/result.h"
#include "workload/config.h"

typedef struct {
  bool keep_graph; /* keep the graph and task times in the run (for traces) */
  bool unfused;    /* no kernel chains in the executor (PnExecOptions.unfused): the same result, the reference */
} PnSimOptions;

typedef struct {
  PnResult *result;
  PnGraph *graph;    /* when keep_graph */
  PnExecResult exec; /* when keep_graph */
} PnSimRun;

/* `warnings` from loading are copied into the result. Returns NULL and sets `error` on failure. */
PnResult *pn_sim_run(const PnScenario *sc, const GPtrArray *load_warnings, GError **error);
gboolean pn_sim_run_full(const PnScenario *sc, const GPtrArray *load_warnings, const PnSimOptions *opt, PnSimRun *out,
                         GError **error);
void pn_sim_run_clear(PnSimRun *run);

#endif
