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
 * MoE EP overlap (plan.overlap_moe_expert_parallel_comm): Megatron's combined 1F1B
 * (pipeline_parallel/combined_1f1b.py, models/common/model_chunk_schedule_plan.py). A steady
 * forward and the backward after it are merged layer by layer: each layer is split into the
 * nodes of ops.h (PnLayerNode); the forward's nodes form one chain of event waits and the
 * backward's another, each node waiting for the previous node of its chain whatever its stream;
 * dispatch / combine nodes run on the EP stream, the others on the compute stream, issued in
 * TransformerLayerSchedulePlan.run's order (combine_bwd, pre_dispatch_fwd, mlp_bwd,
 * dispatch_fwd, mlp_dw, dispatch_bwd, mlp_fwd, combine_fwd, pre_dispatch_bwd, attn_dw). With
 * delay_wgrad_compute the TE-linear wgrads move into the dw parts. The forward's P2P
 * (post_forward) launches from the forward chain, the backward's (post_backward) from the
 * compute stream (PR #4268: from the backward chain), then the delayed attention wgrad of the
 * chunk's first layer (PR #4268: of its first N layers). Warm-up forwards and cool-down
 * backwards run alone through the same nodes. The DP bucket hooks act inside the nodes, at the
 * ops where the plain schedule has them (sched/dp_buckets.c).
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
  GArray *iteration_end;   /* of PnTaskId: n_iterations * n_gpus, the last task of each GPU per iteration */
  uint64_t cost_fallbacks; /* op templates priced by roofline (no calibration point near) */
  uint64_t cost_templates; /* op templates priced */
  /* per GPU, of int64_t: Megatron-Core's DP gradient buckets over its model chunks (dense and
   * expert buffers), and their bucket groups: one reduce-scatter / all-reduce and one parameter
   * all-gather each per iteration (sched/dp_buckets.c) */
  GArray *dp_buckets, *dp_bucket_groups;
} PnBuildInfo;

#define PN_BUILD_ERROR (pn_build_error_quark())
GQuark pn_build_error_quark(void);
typedef enum { PN_BUILD_ERROR_INVALID } PnBuildError;

/* Builds sc->training.iterations iterations into `g` (which must have pp GPUs and no tasks). */
gboolean pn_sched_build(const PnScenario *sc, const PnPlan *plan, PnGraph *g, PnBuildInfo *info, GError **error);
void pn_build_info_clear(PnBuildInfo *info);

/* A lower bound on the iteration time of the layout (ns), from the kernel prices of its op
 * templates alone: no graph is built and nothing is simulated (bound.c; cost O(layers + pp x vpp)).
 *
 * The argument. The executor runs a GPU's compute stream in issue order, one kernel after
 * another, and a kernel alone with every SM runs at rate 1 (work_ns + kernel_launch_ns); SMs held
 * by communication, other kernels or an SM limit only lower the rate (hw/exec_kernels.c clamps
 * it to (0, 1]). So the compute-stream kernels of pipeline rank s take at least W_s = m x their
 * work over one micro-batch's forward and backward (recompute included) of s's chunks, end to
 * end. Within one op template (a layer's forward, say) a kernel may also wait for a collective
 * the template launched before it (the ring attention's KV exchanges, a collective joined after
 * the GEMM beside it), which takes at least its latency and its bytes at the links' bandwidth:
 * the work of a template is the least time it holds the stream under those orderings alone
 * (bound.c, pn__template_least_ns), at least the sum of its kernels. Rank s's first kernel
 * belongs to a forward of a virtual stage c x pp + s, which waits for the same micro-batch's
 * forward through stages c x pp .. c x pp + s - 1 on ranks 0 .. s - 1 (a receive ends with its
 * send, which a rank launches after its chunk's compute); symmetrically the backward of its last
 * kernel's chunk still has ranks s - 1 .. 0 to go. So with F_r and B_r the
 * least forward and backward work of one chunk of rank r,
 *   T >= max_s (sum_{r<s} F_r + W_s + sum_{r<s} B_r) + max_r O_r,
 * O_r the optimizer step's compute: every rank's step runs after the gradient-norm barrier,
 * which waits for every stream of every rank.
 *
 * No bound (*bound_ns = 0, TRUE) where that argument does not hold: compute on a stream other
 * than the compute stream (moe_shared_expert_overlap), the combined 1F1B of EP overlap (two
 * micro-batches' nodes interleaved, part of the compute on the EP stream),
 * delay_wgrad_compute (wgrads after the backward's send), and more than one iteration (an
 * iteration's window starts at the previous one's last end, which a rank's next compute may
 * precede). FALSE with `error` where the build would refuse the layers' split. */
gboolean pn_sched_compute_bound(const PnScenario *sc, const PnPlan *plan, double *bound_ns, GError **error);

/* The same bound as a function of the micro-batch count, which enters it only as m in W_s = m x
 * (rank s's work per micro-batch): T(m) = max_s (U_s + m x w_s) + max_r O_r with U_s the sum over
 * r < s of F_r + B_r. The terms do not depend on the global batch, so a sweep prices them once for
 * the layouts that differ only in it. n = 0: no bound (the cases above; pn_sched_bound_at gives
 * 0). FALSE with `error` where the build would refuse the layers' split. */
typedef struct {
  guint n;             /* pipeline ranks; 0: no bound */
  double *upstream_ns; /* U_s, per rank */
  double *work_ns;     /* w_s, per rank */
  double optimizer_ns; /* max_r O_r */
} PnBoundTerms;
gboolean pn_sched_bound_terms(const PnScenario *sc, const PnPlan *plan, PnBoundTerms *out, GError **error);
double pn_sched_bound_at(const PnBoundTerms *t, int64_t num_microbatches);
void pn_bound_terms_clear(PnBoundTerms *t);

/* One data-parallel bucket group of a model chunk as pn_sched_build forms it (sched/dp_buckets.c
 * says how, after Megatron-Core's param_and_grad_buffer.py): one gradient reduce-scatter /
 * all-reduce and one parameter all-gather per iteration. */
typedef struct {
  double elems;       /* elements reduced: its buckets, padded with the distributed optimizer */
  double param_bytes; /* bytes all-gathered (1 per element of an fp8 buffer, else 2) */
  int32_t buckets;    /* Megatron buckets it coalesces (one unless fp8 buffers or disabled bucketing) */
  int32_t unit;       /* the chunk's unit holding its earliest-registered parameter: units are the
                         embedding (first stage), the layers, the head (last stage), in forward order */
  bool expert;        /* expert parameters in their own buffer: reduced over the expert-DP group */
} PnDpBucketGroup;

/* The bucket groups of model chunk `chunk` of pipeline rank `rank`, in backprop order (the order
 * the backward completes them), appended to `out` (of PnDpBucketGroup). FALSE with `error` where
 * the build would refuse the layers' split. Cost: the op templates of a build, no graph. */
gboolean pn_sched_dp_buckets(const PnScenario *sc, const PnPlan *plan, uint32_t rank, int64_t chunk, GArray *out,
                             GError **error);

/* Ranks of a group that share a node, with Megatron's rank order (tp fastest, then cp, dp, pp). */
int64_t pn_sched_ranks_per_node(const PnScenario *sc, int64_t stride, int64_t size);

#endif
