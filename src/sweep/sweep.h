/* sweep.h — many layouts of one training job: each candidate of a space (the product of its
 * axes' values) is checked against Megatron's rules (workload/rules.h) and the overlap gating,
 * its memory estimated (workload/memory.h), and the ones that are accepted and fit are simulated
 * and ranked by model TFLOP/s per GPU.
 *
 * The space is never materialized: candidate i is decoded from its index (mixed radix, the last
 * axis varying fastest), so a space of 10^9 candidates costs no memory before it runs. Two
 * passes, each split over threads in chunks with results merged in index order, so the outcome
 * is the same for any number of threads or processes:
 *   check     every candidate: rules, gating, memory; counts rejections by reason and keeps the
 *             indices of the layouts to simulate (memory: O(accepted));
 *   simulate  every kept layout (pn_sim_run); a layout that fails to simulate keeps its error.
 *             The pipeline's steady state is fast-forwarded (sweep.c, fast_forward) unless
 *             `exact`: a layout costs two short simulations whatever its micro-batch count.
 * Pruning (prune_within = p > 0; for a caller that reports only each group's best layouts, not
 * `penumbra sweep`): a group is the layouts of one hardware.num_gpus and one
 * training.global_batch_size (their iterations carry the same FLOPs over the same GPUs, so time
 * ranks them as TFLOP/s does). Pass 1 also prices each accepted layout's lower bound on its
 * iteration time (sched/build.h, pn_sched_compute_bound: kernel prices, no simulation). Pass 2
 * simulates in ascending bound order (ties by index) and skips a layout whose bound exceeds its
 * group's best time so far x (1 + p) x (1 + PN_SWEEP_PRUNE_SLACK). The rows are then those within
 * p of their group's final best, which every schedule of the threads simulates (bound <= time <=
 * best x (1 + p); the slack covers the fast-forward's error against the full simulation the bound
 * holds for), so they are the same for any number of threads; failed rows are kept only in a group
 * with no row that ran. Needs parts == 1.
 * Ranking: TFLOP/s per GPU, descending; ties by candidate index. Interruption (`cancel` set)
 * stops both passes at the next layout; what is done stays valid.
 *
 * Cost: check O(candidates) + O(accepted x memory estimate); simulate one pn_sim_run per layout.
 */
#ifndef PN_SWEEP_SWEEP_H
#define PN_SWEEP_SWEEP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "hw/graph.h"
#include "io/scenario.h"
#include "workload/rules.h"
#include "workload/split.h"

typedef struct {
  PnScenarioField field;
  GArray *values; /* of PnScenarioValue, at least one */
  bool opened;    /* given by the user (--vary, --space, --all-overlap), not a default */
  /* Owned, NULL but on the axis that holds a sweep's chosen splits (PnSweepSpec.split_chosen):
   * the split of each pipeline size (row) at each virtual size (column). */
  PnSplitKeys *splits;
} PnSweepAxis;

typedef struct {
  const PnScenario *base; /* borrowed: loaded and validated; every candidate is a copy with the axes set */
  GPtrArray *axes;        /* of PnSweepAxis*, owned; the last varies fastest */
  /* Megatron-Bridge's defaults that follow the tensor size, unless an axis sets the key or the
   * base scenario's value differs from what following gives: sequence_parallel = tp > 1,
   * expert_tensor_parallel_size = tp. */
  bool sp_follows_tp, etp_follows_tp;
  /* The base's pipeline_model_parallel_layout gives the virtual size at each pipeline size (its
   * virtual stages / pp, as Megatron-LM derives it), unless an axis sets it. */
  bool vpp_follows_layout;
  /* The base states no pipeline split (workload/split.h), no axis sets a split key, and an axis
   * moves the pipeline or the virtual size: each candidate takes the split that
   * pn_workload_split_choose picks at its sizes (none when it finds none: the rules then reject
   * the candidate as they reject an even split that does not divide). Chosen once per pair of
   * sizes into the `splits` of axis split_pp_axis (or split_vpp_axis when the pipeline size is no
   * axis); an index of -1: that size is the base's. */
  bool split_chosen;
  int split_pp_axis, split_vpp_axis;
  /* The base's own layout, when every axis holds the base's value (space.c): its index. */
  bool base_in_space;
  uint64_t base_index;
  bool exact;            /* simulate every micro-batch (no fast-forward of the steady state) */
  int threads;           /* >= 1 */
  int part, parts;       /* this process simulates the layouts k with k % parts == part (MPI ranks) */
  double prune_within;   /* 0: simulate every accepted layout; > 0: only what comes within it of its group's best */
  volatile gint *cancel; /* non-zero: stop at the next layout; may be NULL */
} PnSweepSpec;

typedef struct {
  uint64_t index; /* candidate index in the space */
  bool failed;    /* the simulation failed: `error` says why, the figures are 0 */
  char *error;
  double iteration_s, tflops_per_gpu, tokens_per_s_per_gpu, mfu;
  double memory_gib, headroom_gib;
  double exposed_s[PN_CLASS_N], bubble_s, compute_s;
  int64_t data_parallel_size, num_microbatches;
} PnSweepRow;

typedef struct {
  char *reason;
  uint64_t count;
} PnSweepReason;

typedef struct {
  uint64_t candidates;          /* the size of the space */
  uint64_t rejected;            /* by a rule or the gating (reasons) */
  uint64_t over_memory;         /* accepted, but the estimate exceeds the GPU */
  double over_memory_least_gib; /* the smallest excess among those */
  uint64_t accepted;            /* accepted and fit: the layouts to simulate */
  uint64_t simulated;           /* done (failed included); when pruning, the accepted ones the bound cannot rule out */
  uint64_t pruned;              /* ruled out by their bound against their group's final best (pruning only) */
  bool interrupted;
  GArray *reasons;        /* of PnSweepReason, most frequent first (ties by reason) */
  GArray *accepted_index; /* of uint64_t, ascending */
  GArray *accepted_bound; /* of double: each one's bound on its iteration, ns (pruning only, else empty) */
  GArray *pruned_index;   /* of uint64_t, ascending: the layouts counted in `pruned` */
  GArray *rows;           /* of PnSweepRow, ranked (failed ones last, by index) */
} PnSweepResult;

/* Progress the caller may read from another thread while a pass runs. */
/* How far past (1 + prune_within) a bound must lie before its layout is skipped. */
#define PN_SWEEP_PRUNE_SLACK 0.005

typedef struct {
  gint done; /* candidates checked, or layouts simulated (or skipped by pruning) */
  gint64 total;
} PnSweepProgress;

void pn_sweep_axis_free(PnSweepAxis *a);
PnSweepResult *pn_sweep_result_new(void);
void pn_sweep_result_free(PnSweepResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnSweepResult, pn_sweep_result_free)

/* The number of candidates (the product of the axes' sizes), or 0 when it exceeds 2^62. */
uint64_t pn_sweep_size(const PnSweepSpec *spec);
/* Candidate `index` into `out` (a copy of the base with every axis set, and the split chosen at
 * its sizes when split_chosen), before any check. */
void pn_sweep_candidate(const PnSweepSpec *spec, uint64_t index, PnScenario *out);
/* The split chosen for candidate `index`, or NULL when the sweep chooses none (split_chosen). */
const PnSplitKeys *pn_sweep_split(const PnSweepSpec *spec, uint64_t index);
/* The scenario keys of a pipeline split that a sweep chooses or a base states, in the order the
 * outputs write them. */
extern const char *const pn_sweep_split_keys[4];
/* The value of axis `a` in candidate `index`. */
const PnScenarioValue *pn_sweep_value(const PnSweepSpec *spec, guint a, uint64_t index);

typedef enum { PN_SWEEP_ACCEPTED, PN_SWEEP_REJECTED, PN_SWEEP_OVER_MEMORY } PnSweepVerdict;
/* Candidate `index` through the checks of pass 1: `why` receives the reason of a rejection (the
 * rule's key and message, the gating's refusal, a duplicate) or the memory excess; `rule` the
 * rule broken (PN_RULE_OK when the refusal is not a rule's); `over_gib` the excess. */
PnSweepVerdict pn_sweep_classify(const PnSweepSpec *spec, uint64_t index, PnRule *rule, char *why, gsize why_size,
                                 double *over_gib);

/* Pass 1. Fills the counts, reasons and accepted_index of `r`. */
void pn_sweep_check(const PnSweepSpec *spec, PnSweepResult *r, PnSweepProgress *progress);
/* Pass 2: this process's part of the accepted layouts into r->rows, ranked (pruned as the spec
 * says). */
void pn_sweep_simulate(const PnSweepSpec *spec, PnSweepResult *r, PnSweepProgress *progress);
/* Ranks r->rows (after rows from several processes were gathered). */
void pn_sweep_rank(PnSweepResult *r);

#endif
