/* space.h — the axes of a sweep (sweep.h): the default layout space of a model on some GPUs, and
 * what the user opens or fixes (--vary, --space, --all-overlap).
 *
 * Defaults (with `layout`): hardware.num_gpus over the given counts; tensor sizes 1, 2, 4, ... up
 * to a node's GPUs; pipeline sizes up to 16 that Megatron's split takes (workload/split.h): with
 * a split of the base's own, as it states it (account_for_*_in_pipeline_split: the divisors of the
 * layers + 1 or 2; uneven first / last stages: those that leave an even rest; a
 * pipeline_model_parallel_layout: those its virtual stages divide over), else those where
 * pn_workload_split_choose finds one (even, account_for_*, uneven: every size up to about half
 * the layers), and each candidate then runs the split chosen at its pipeline and virtual sizes
 * (sweep.h, split_chosen); virtual sizes 1 and those up to 16 the split takes at some pipeline
 * size (the rules keep those that divide a stage), none with a layout, which gives the virtual
 * size (the sweep's vpp_follows_layout); context sizes 1, 2, 4, 8; expert sizes the powers of two dividing the experts
 * up to 64 (MoE models; 1 otherwise); micro-batch sizes 1, 2, 4; recompute none, selective, full;
 * each also holds the base scenario's own value.
 * sequence_parallel follows tp (on when tp > 1) and expert_tensor_parallel_size follows tp, the
 * distributed optimizer is on, and every overlap switch is left to the gating (as the recipes do)
 * unless an axis names it. `--all-overlap` opens every switch of the overlap registry (its
 * boolean, tri-state and enum keys: false/true, every name; the userbuffers preset key: none and
 * every preset of overlap/tp.c). An axis the user gives replaces the
 * default one of the same key, in place; a new one is appended (it varies fastest).
 */
#ifndef PN_SWEEP_SPACE_H
#define PN_SWEEP_SPACE_H

#include <glib.h>

#include "io/space.h"
#include "sweep/sweep.h"

typedef struct {
  bool layout;                /* the default layout axes */
  bool all_overlap;           /* open every overlap switch */
  int64_t gpus_min, gpus_max; /* 0: the base's num_gpus, not an axis */
  GPtrArray *entries;         /* of PnSpaceEntry*: --space then --vary, in order */
} PnSpaceOptions;

/* Fills spec->axes, sp_follows_tp, etp_follows_tp, vpp_follows_layout and the chosen splits
 * (split_chosen) for `spec->base`.
 * Errors: an unknown key (did-you-mean), a value the key cannot take, a GPU range with no whole
 * number of nodes. */
gboolean pn_sweep_space_build(PnSweepSpec *spec, const PnSpaceOptions *o, GError **error);

#endif
