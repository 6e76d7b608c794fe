/* ub.h — Transformer Engine userbuffers configurations: TE's defaults and the named presets of
 * Megatron-Bridge / NeMo (comm_overlap.py, tp_overlap_configs/userbuffers.py), per GEMM slot.
 *
 * Reference: shared/reference/overlap-mechanics.md §2.3 (TE defaults) and §2.5 (presets). The
 * LoRA presets (different slot set) and the B200 presets are not included.
 */
#ifndef PN_OVERLAP_UB_H
#define PN_OVERLAP_UB_H

#include <glib.h>
#include <stdbool.h>

#include "sched/plan.h"

const char *pn_ub_method_name(PnUbMethod m);

/* TE's get_default_config for all slots (used when tp_comm_overlap is on without a preset). */
void pn_ub_defaults(PnUbCfg cfg[PN_UB_N]);
/* Fills cfg from a named preset; false when the name is unknown. */
bool pn_ub_preset(const char *name, PnUbCfg cfg[PN_UB_N]);
/* Appends the known preset names, comma-separated. */
void pn_ub_preset_names(GString *out);

#endif
