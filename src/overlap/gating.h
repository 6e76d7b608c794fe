/* gating.h — turns the user's overlap options into the plan the frameworks would run.
 *
 * Reproduces Megatron-Bridge's CommOverlapConfig (src/megatron/bridge/training/comm_overlap.py):
 * TP overlap is switched off (with a warning) when TP < 2, then when sequence_parallel is off;
 * PP overlap defaults on only with VPP > 1 (batch_p2p_comm off then), otherwise batched blocking
 * P2P; DP overlap defaults (bucket 128 Mi elements, grad reduce and param gather overlapped,
 * aligned param gather with VPP) apply only when DP > 1 and the distributed optimizer is on;
 * explicit user values win. Megatron-Core's checks follow (overlap_param_gather needs the
 * distributed optimizer and overlap_grad_reduce; overlap_p2p_comm is forced off without VPP;
 * batch_p2p_comm and overlap_p2p_comm exclude each other). Every silent change becomes a warning.
 */
#ifndef PN_OVERLAP_GATING_H
#define PN_OVERLAP_GATING_H

#include <glib.h>

#include "sched/plan.h"
#include "workload/config.h"

#define PN_OVERLAP_ERROR (pn_overlap_error_quark())
GQuark pn_overlap_error_quark(void);
typedef enum { PN_OVERLAP_ERROR_INVALID } PnOverlapError;

/* Fails only on options the frameworks reject outright (an unknown userbuffers preset). */
gboolean pn_overlap_resolve(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings /* of char*, may be NULL */,
                            GError **error);

#endif
