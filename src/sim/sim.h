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

/* A stretch of one GPU's reported window (the last iteration) in which no compute kernel ran, as
 * the accounting charges it (result.h): with communication of the classes in `classes` (bit c:
 * class c) in flight, exposed, each class charged 1 / (number of classes) of it; or, `classes` 0,
 * idle: the bubble. Per GPU the spans do not overlap, and neighbours of the same classes are one
 * span, so summing (end - start) / popcount(classes) over a GPU's spans of class c gives its
 * PnStageStats.exposed_comm_s[c], and over its idle spans its bubble_s. */
typedef struct {
  uint32_t gpu;
  uint8_t classes;
  PnTimeNs start_ns, end_ns;
} PnSimSpan;

typedef struct {
  bool keep_graph; /* keep the graph and task times in the run (for traces) */
  bool keep_spans; /* keep the exposed and idle spans (PnSimSpan) in the run */
  bool unfused;    /* no kernel chains in the executor (PnExecOptions.unfused): the same result, the reference */
} PnSimOptions;

typedef struct {
  PnResult *result;
  PnGraph *graph;    /* when keep_graph */
  PnExecResult exec; /* when keep_graph */
  GArray *spans;     /* of PnSimSpan, by GPU then time, when keep_spans */
} PnSimRun;

/* `warnings` from loading are copied into the result. Returns NULL and sets `error` on failure. */
PnResult *pn_sim_run(const PnScenario *sc, const GPtrArray *load_warnings, GError **error);
gboolean pn_sim_run_full(const PnScenario *sc, const GPtrArray *load_warnings, const PnSimOptions *opt, PnSimRun *out,
                         GError **error);
void pn_sim_run_clear(PnSimRun *run);

#endif
