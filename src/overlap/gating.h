/* gating.h — turns the user's overlap options into the plan the frameworks would run.
 *
 * Reproduces Megatron-Bridge's CommOverlapConfig (src/megatron/bridge/training/comm_overlap.py):
 * TP overlap is switched off (with Bridge's warning) when TP < 2, then when sequence_parallel is
 * off, then when Transformer Engine is absent (comm_overlap.transformer_engine false); PP
 * overlap defaults on only with VPP > 1 (batch_p2p_comm off then), otherwise batched blocking
 * P2P; DP overlap defaults (bucket 128 Mi elements, grad reduce and param gather overlapped,
 * aligned param gather with VPP, never overlap_param_gather_with_optimizer_step) apply only when
 * DP > 1 and the distributed optimizer is on; explicit user values win. Megatron-Core's checks
 * follow (overlap_param_gather needs the distributed optimizer and overlap_grad_reduce;
 * overlap_p2p_comm is forced off without VPP; batch_p2p_comm and overlap_p2p_comm exclude each
 * other). Every silent change becomes a warning; the warnings Bridge logs keep Bridge's text.
 *
 * Hard failures, where Bridge or Megatron assert: moe_shared_expert_overlap with the allgather
 * dispatcher or with "shared_experts" in recompute_modules (selective recompute; without shared
 * experts the option only warns); an unknown userbuffers preset; the
 * overlap_moe_expert_parallel_comm invariants (EP > 1, num_moe_experts > 1, dispatcher alltoall
 * or flex, VPP when PP > 1, no full recompute, no recompute_num_layers, no "moe" in
 * recompute_modules, moe_shared_expert_overlap off, mtp_num_layers <= 1); the
 * delay_wgrad_compute invariants (EP overlap on; Transformer Engine present where Bridge checks
 * its version; with a CUDA graph capturing the wgrad, gradient_accumulation_fusion on and, for
 * the "attn" scope, no attention bias); the requirements of
 * overlap_param_gather_with_optimizer_step (distributed optimizer, overlap_param_gather, VPP).
 */
#ifndef PN_OVERLAP_GATING_H
#define PN_OVERLAP_GATING_H

#include <glib.h>
#include <stdbool.h>

#include "sched/plan.h"
#include "workload/config.h"

#define PN_OVERLAP_ERROR (pn_overlap_error_quark())
GQuark pn_overlap_error_quark(void);
typedef enum { PN_OVERLAP_ERROR_INVALID } PnOverlapError;

/* Fills `plan` (entirely overwritten) and appends warnings: the gates of the strategy registry
 * (strategy.h) run in its order, which is the order above. Fails only on options the frameworks
 * reject outright (above), with "<scenario path>: <JSON pointer>: <violated invariant>"; `plan`
 * is then unspecified and `warnings` holds those of the gates before the failing one. Pure: the
 * same scenario always gives the same plan and warnings. */
gboolean pn_overlap_resolve(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings /* of char*, may be NULL */,
                            GError **error);

/* Transformer Engine userbuffers configurations (tp.c): TE's defaults and the named presets of
 * Megatron-Bridge / NeMo (comm_overlap.py, tp_overlap_configs/userbuffers.py), per GEMM slot.
 * Reference: shared/reference/overlap-mechanics.md §2.3 (TE defaults) and §2.5 (presets). The
 * LoRA presets (different slot set) and the B200 presets are not included. */
const char *pn_ub_method_name(PnUbMethod m);
/* Fills cfg from a named preset; false when the name is unknown (the gating then fails). */
bool pn_ub_preset(const char *name, PnUbCfg cfg[PN_UB_N]);
/* Appends the known preset names, comma-separated. */
void pn_ub_preset_names(GString *out);
/* The known presets, by index: NULL past the last. */
const char *pn_ub_preset_name(size_t i);

#endif
