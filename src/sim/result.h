/* result.h — what one simulated scenario produced: the numbers users and scripts read.
 *
 * Accounting identity, per simulated GPU (one per pipeline stage) over the reported iteration:
 *   iteration_time = compute_busy + exposed_comm(all classes) + idle (bubble)
 * where compute_busy is the union of intervals with any compute kernel running, exposed_comm is
 * the time some communication is in flight while no compute runs (split equally among the
 * classes in flight), and bubble is the rest. Per-GPU figures are averaged over stages (each
 * stage stands for the same number of GPUs). total_comm is the summed duration of the
 * communication tasks of a class (latency included), averaged over stages.
 *
 * Compute lost to SM contention (contention_s), a part of compute_busy: what overlapping
 * communication costs the compute it hides behind. Over each interval in which a GPU's kernel rates
 * are constant, its compute kernels run at rates r_i and would run at f_i had the SMs held by
 * communication kernels been free (all sm_count SMs water-filled among the same kernels); the time
 * lost is dt * (1 - sum r_i / sum f_i), which for one kernel is dt * (1 - r / f): the work it did
 * not do, converted to time at the free rate (hw/exec_kernels.c). It is split among the classes of
 * the communication tasks holding SMs in that interval, in proportion to the SMs each holds,
 * clipped to the window like the rest, and averaged over stages; per GPU it never exceeds
 * compute_busy. It lies inside compute_busy, so it is no term of the identity above: an overlap
 * that hides communication can still lengthen the step through it.
 *
 * Host-bound time (host_bound_s): the compute stream idle with its next kernel ready (its stream
 * predecessor and dependencies ended) but not yet launched by the host thread (hw/exec_host.c),
 * clipped to the window and averaged over stages. It is bubble, or exposed communication where a
 * collective runs meanwhile: no term of the identity either.
 */
#ifndef PN_SIM_RESULT_H
#define PN_SIM_RESULT_H

#include <glib.h>
#include <stdint.h>

#include "hw/graph.h"
#include "sched/plan.h"

typedef struct {
  double compute_s;
  double bubble_s;
  double exposed_comm_s[PN_CLASS_N];
  double total_comm_s[PN_CLASS_N];
  double contention_s[PN_CLASS_N]; /* compute lost to SM contention, by the class holding the SMs */
  double end_s;                    /* when this stage finished the iteration */
  double host_bound_s;             /* the compute stream had a kernel ready but for its launch */
  int64_t dp_buckets;              /* Megatron's DP gradient buckets over the stage's model chunks */
  int64_t dp_bucket_groups;        /* their groups: one gradient reduction (and param all-gather) each */
} PnStageStats;

/* One kind of communication operation (a task label: "dp_grad_reduce_scatter", "fc1_dgrad_ag",
 * "pp_p2p", ...), summed over the stages and divided by their number, like the class totals:
 * this is the "per strategy" view of the exposed communication. */
typedef struct {
  const char *op; /* static label */
  int cls;        /* PnCommClass */
  double total_s;
  double exposed_s;
  /* An NCCL collective's figures as nccl-tests would print them (coll_kind < 0: the op is not
   * one: userbuffers kernels, P2P, copies): calls per iteration on each stage that runs it, the mean size S per
   * call, the group size, and algbw = sum(S) / sum(time) and busbw = algbw x the collective's
   * factor (hw/coll.h), time being each call's simulated duration beside everything else the
   * step runs, not an idle-link benchmark. */
  int coll_kind; /* PnCollKind, or -1 */
  int64_t ranks;
  double calls;
  double size_bytes;
  double algbw_gbps;
  double busbw_gbps;
} PnOpStats;

typedef struct {
  double weights_gib;
  double gradients_gib;
  double optimizer_gib;
  double activations_gib;
  double other_gib; /* workspace, comm buffers, fragmentation allowance */
  double total_gib;
  double hbm_gib; /* the GPU's memory */
  bool fits;      /* total_gib <= hbm_gib (otherwise the result carries a warning) */
} PnMemoryEstimate;

typedef struct {
  /* headline */
  double iteration_time_s; /* the last simulated iteration */
  double tokens_per_s_per_gpu;
  double model_tflops_per_gpu; /* Megatron-Bridge FLOP convention (result of workload/flops.h) */
  double mfu;                  /* model_tflops / dense peak of the precision used */
  double exposed_comm_s[PN_CLASS_N];
  double total_comm_s[PN_CLASS_N];
  double contention_s[PN_CLASS_N]; /* compute lost to SM contention (see above), part of compute_s */
  double bubble_s;
  double host_bound_s; /* per stage: compute stream waiting for the host's launches (see above) */
  double compute_s;
  PnMemoryEstimate memory;
  /* context */
  double model_flops_per_iteration;
  double tokens_per_iteration;
  int64_t data_parallel_size;
  int64_t num_microbatches;
  int iterations;
  GArray *iteration_times_s; /* of double, one per simulated iteration */
  GArray *stages;            /* of PnStageStats, last iteration */
  GArray *comm_ops;          /* of PnOpStats, by exposed time (descending), then name */
  GPtrArray *warnings;       /* of char*, owned */
  PnPlan plan;               /* the overlap plan simulated: the scenario's options after gating */
  /* simulator */
  uint64_t tasks;
  uint64_t events;
  double sim_wall_s;
  uint64_t cost_fallbacks; /* kernels priced by roofline because no calibration point covered them */
} PnResult;

PnResult *pn_result_new(void);
void pn_result_free(PnResult *r); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnResult, pn_result_free)

const char *pn_comm_class_name(PnCommClass c); /* "dp", "tp", "pp", "cp", "ep" */

#endif
