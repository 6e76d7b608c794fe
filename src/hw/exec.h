/* exec.h — runs a PnGraph on simulated GPUs, streams, SMs and links with the event engine.
 *
 * What it models (see graph.h for when a task may start):
 *  - SMs: each GPU has profile->sm_count SMs. A running COMM/P2P task holds `sms` of them. The
 *    running COMPUTE tasks of a GPU share the rest equally (each capped by its sm_limit); a
 *    compute task given s SMs progresses at rate curve(s) relative to running alone with all
 *    SMs (profile gemm_sm_scaling or mem_sm_scaling; linear s/sm_count when uncalibrated).
 *    Whenever a task starts or ends on a GPU, the rates of its running compute tasks are
 *    recomputed and their completion events moved: remaining work / rate, rounded up to whole
 *    ns (at least 1 ns).
 *  - Links: per GPU, NVLink transmit/receive and NIC transmit/receive resources, shared by all
 *    flows in flight through the max-min solver (maxmin.h). A COMM task is one flow with usage
 *    coefficients on the GPU's NVLink and NIC (both directions) proportional to its bytes; a P2P
 *    leg is a flow on the sender's transmit and the receiver's receive resource.
 *  - Hardware queues: CUDA_DEVICE_MAX_CONNECTIONS = `max_connections`; with 1, each GPU
 *    dispatches its tasks strictly in issue order; with c > 1, stream s uses queue s % c and each
 *    queue dispatches in issue order.
 *
 *  - HBM: with the profile's hbm_share on, each GPU's HBM is shared by its running compute
 *    kernels and the transfers flowing through it, in proportion to the pressure each puts on it
 *    (hw/hbm.h: the requests each keeps in flight; what HBM delivers grows with the total, as a
 *    copy kernel's bandwidth grows with its SMs). A kernel served less than it needs runs that
 *    much slower; a transfer served less than it needs is bounded to that fraction of the rate
 *    its links would give it alone, in the max-min solver (exec_kernels.c "HBM", exec_links.c).
 *    Off: nothing of it is set up.
 *  - The host: one thread per GPU launches its tasks in issue order, host_ns each, and waits at
 *    the synchronizations the tasks name (graph.h, "The host"; exec_host.c); a task starts no
 *    earlier than its launch. With no task costing its host anything this is skipped entirely.
 *
 * Result: start/end time of every task. Fails (GError) if the event budget is exhausted or time
 * stops advancing (more events at one instant than the graph can produce: a zero-duration loop), if
 * tasks remain that can never start (a dependency cycle or unpaired P2P: "deadlock"), or if
 * simulated time would pass 2^62 ns (absurd durations; event times saturate there, never overflow).
 * Kernel chains: compute kernels issued back to back on one stream that no other task waits
 * between run as one chain, with one completion event while the chain has its GPU's compute to
 * itself (exec_kernels.c explains why the times are exactly those of the kernels run one by one;
 * a test holds it against `unfused`). Cost: O(events * log events) plus the solver; events ~ 1
 * per task (the 405B benchmark: 425k events for 404k tasks; 518k unfused).
 */
#ifndef PN_HW_EXEC_H
#define PN_HW_EXEC_H

#include <glib.h>

#include "core/engine.h"
#include "hw/graph.h"
#include "hw/profile.h"

/* Optional: told of the busy intervals as the run goes, in time order (`t_ns` never decreases
 * from one call to the next). `open`: a COMPUTE or COMM task at its start, a P2P task when the
 * transfer of its first leg starts (both ends started: NCCL's rendezvous); DELAY tasks never
 * open. `close`: every task at its end, opened or not (`start_ns` is its start), except that a
 * kernel chain opens at its first kernel and closes at its last (its inner kernels neither open
 * nor close: one busy interval, the same as theirs end to end); PnExecOptions.keep_whole names
 * tasks that must close on their own. `tag` (may be NULL: tag 0) is asked once per COMM and P2P
 * task while the run is set up, when the task is read anyway, and its answer comes back with that
 * task's open and close: what the observer needs of the task without reading it again in the
 * middle of the run. `contention` (may be NULL: then nothing of it is computed) hears of the compute
 * time lost to SMs held by communication kernels (exec_kernels.c, "Compute lost to SM contention"):
 * over [t0_ns, t1_ns] GPU `gpu` lost `lost_ns[c]` ns to the SMs held by class c (SMs held by a task
 * without a class count in no entry), at a constant rate over the interval. One GPU's intervals
 * come in time order and do not overlap, but one may end before the latest open or close (a kernel
 * chain's inner ends are reported when its GPU next changes); only intervals that lost something
 * are reported.
 * The callbacks run inside the executor: they must not change the graph being run. */
typedef struct {
  void *ctx;
  uint16_t (*tag)(void *ctx, PnTaskId task, const PnTask *tk);
  void (*open)(void *ctx, PnTaskId task, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag, PnTimeNs t_ns);
  void (*close)(void *ctx, PnTaskId task, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag, PnTimeNs start_ns,
                PnTimeNs t_ns);
  void (*contention)(void *ctx, uint32_t gpu, PnTimeNs t0_ns, PnTimeNs t1_ns, const double lost_ns[PN_CLASS_N]);
} PnExecObserver;

typedef struct {
  int max_connections;            /* CUDA_DEVICE_MAX_CONNECTIONS (1..32) */
  uint64_t event_budget;          /* 0 = 64 * tasks + 10^6 */
  const PnExecObserver *observer; /* NULL: none */
  bool unfused;                   /* run every kernel as a task of its own (no kernel chains): the reference */
  /* Tasks whose end the observer must hear of as their own: never fused with the kernel after them
   * into a chain (the iteration ends of sim.c). Ids past the graph's last task are ignored. */
  const PnTaskId *keep_whole;
  guint n_keep_whole;
} PnExecOptions;

typedef struct {
  PnTimeNs start_ns;
  PnTimeNs end_ns;
} PnTaskTime;

/* [t0_ns, t1_ns): GPU `gpu`'s compute stream waited for its host to launch the next kernel. */
typedef struct {
  uint32_t gpu;
  PnTimeNs t0_ns, t1_ns;
} PnHostWait;

typedef struct {
  GArray *times;        /* of PnTaskTime, indexed by task id */
  PnTimeNs makespan_ns; /* max end time */
  uint64_t events;      /* events fired */
  GArray *host_waits;   /* of PnHostWait: when a GPU's compute stream had a kernel ready but for its launch
                           (host-bound time); NULL when no task costs its host anything */
} PnExecResult;

#define PN_EXEC_ERROR (pn_exec_error_quark())
GQuark pn_exec_error_quark(void);
/* HORIZON: simulated time would pass 2^62 ns (146 years): the inputs are absurd, not the graph. */
typedef enum { PN_EXEC_ERROR_DEADLOCK, PN_EXEC_ERROR_BUDGET, PN_EXEC_ERROR_INVALID, PN_EXEC_ERROR_HORIZON } PnExecError;

/* Fills `out` (caller frees with pn_exec_result_clear). `opt` may be NULL: max_connections 8
 * (CUDA's default) and the default budget. On failure `out` is left empty (times == NULL).
 * Details the graph leaves open: a P2P leg waits the larger latency_ns of its two tasks and is
 * bounded by the smaller positive max_bytes_per_ns; a COMM flow's rate is in bytes of its larger
 * side (NVLink or NIC), to which max_bytes_per_ns applies. Completions land at
 * now + max(1, ceil(remaining / rate - 1e-6)) ns: the slack absorbs floating-point noise. */
gboolean pn_exec_run(const PnGraph *g, const PnHwProfile *hw, const PnExecOptions *opt, PnExecResult *out,
                     GError **error);
void pn_exec_result_clear(PnExecResult *r);

#endif
