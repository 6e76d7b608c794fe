/* build.h — one or more training iterations as a task graph on one GPU per pipeline stage.
 *
 * What it models: the order in which Megatron-Core issues kernels and collectives on each
 * pipeline rank: the schedule's forward/backward steps and P2P calls (order.h), each step as
 * the per-layer ops of workload/ops.h priced by hw/cost.h, TP/CP collectives where the plan
 * puts them, the data-parallel gradient reduction and parameter all-gather, the global
 * gradient-norm reduction (a barrier across stages) and the optimizer step. The overlap plan
 * (plan.h) decides streams and dependencies; with every overlap off, all work of a rank runs on
 * its compute stream in issue order.
 *
 * Ownership: the caller owns `g`. Cost: O(tasks) with per-layer op templates priced once.
 */
#ifndef PN_SCHED_BUILD_H
#define PN_SCHED_BUILD_H

#include <glib.h>

#include "hw/graph.h"
#include "sched/plan.h"
#include "workload/config.h"

typedef struct {
  GArray *iteration_end; /* of PnTaskId: n_iterations * n_gpus, the last task of each GPU per iteration */
  uint64_t cost_fallbacks; /* op templates priced by roofline (no calibration point near) */
  uint64_t cost_templates; /* op templates priced */
} PnBuildInfo;

#define PN_BUILD_ERROR (pn_build_error_quark())
GQuark pn_build_error_quark(void);
typedef enum { PN_BUILD_ERROR_INVALID } PnBuildError;

/* Builds sc->training.iterations iterations into `g` (which must have pp GPUs and no tasks). */
gboolean pn_sched_build(const PnScenario *sc, const PnPlan *plan, PnGraph *g, PnBuildInfo *info, GError **error);
void pn_build_info_clear(PnBuildInfo *info);

/* Ranks of a group that share a node, with Megatron's rank order (tp fastest, then cp, dp, pp). */
int64_t pn_sched_ranks_per_node(const PnScenario *sc, int64_t stride, int64_t size);

#endif
