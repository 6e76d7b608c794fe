/* graph.h — the work one iteration puts on the simulated GPUs: tasks on CUDA streams, with
 * dependencies, built by sched/ from the plan that overlap/ gates, and executed by exec.h.
 *
 * What it models: one simulated GPU per pipeline stage (all TP/CP/DP ranks of a stage do the
 * same work, so a collective is priced by the topology its group spans). Each task belongs to
 * one GPU and one stream. A task may start when (1) every earlier task of its stream has ended
 * (CUDA stream order), (2) every task in its dependency list has ended (cudaStreamWaitEvent, or
 * a host wait), and (3) its hardware queue lets it through: with CUDA_DEVICE_MAX_CONNECTIONS=1
 * every task of a GPU is dispatched in issue order (the order tasks were added for that GPU),
 * so a task waiting on a dependency holds back later-issued tasks of other streams, and (4) the
 * host thread of its GPU has launched it.
 *
 * The host: one thread per simulated GPU launches its tasks in issue order, spending `host_ns`
 * on each (the framework's Python and the driver's launch call) before the task may start, and
 * after a task with `host_sync` waits for that task's end (or every launched task's end) before
 * it goes on. It runs ahead of the GPU as far as it can; the GPU waits for it when kernels are
 * shorter than their launches, or after a synchronization has drained the GPU. A graph whose
 * tasks all have host_ns 0 and no host_sync runs as if the host were infinitely fast.
 *
 * CUDA graphs: a `graphed` task is a kernel of a captured graph. Its launch is the graph's
 * replay, which sched/graphs.c charges to the first task of the captured region (host_ns); the
 * others cost the host nothing, and a graphed COMPUTE task skips the per-kernel launch gap
 * (PnHwProfile.kernel_launch_ns) while keeping its kernel floor.
 *
 * Task kinds:
 *  - COMPUTE: `work_ns` is its duration alone with all SMs; while running it shares the SMs not
 *    held by communication kernels with the other running compute tasks of its GPU, and runs at
 *    the rate the profile gives for that SM count (gemm or memory curve). `sm_limit` > 0 caps the
 *    SMs it may use (TE set_sm_margin, NVTE_*_LAYERNORM_SM_MARGIN).
 *  - COMM: a collective. It holds `sms` SMs from start to end (0 for copy-engine transfers),
 *    waits `latency_ns`, then moves data as one fluid flow: `nvlink_bytes` over the GPU's
 *    NVLink, `nic_bytes` over its NIC, both per direction, at a rate bounded by `max_bytes_per_ns`.
 *  - P2P: one side of a send/recv pair. `peer` is the task on the other GPU. The transfer of
 *    `bytes` starts once both sides have started (NCCL's rendezvous), uses the sender's
 *    transmit and the receiver's receive link (`over_nic` picks NIC or NVLink), and both tasks
 *    end together. A task may carry up to PN_TASK_MAX_LEGS P2P legs (batch_isend_irecv: all legs
 *    progress together and the task ends when all have ended; Megatron's interleaved schedule
 *    posts up to four transfers in one call).
 *  - DELAY: occupies its stream for `work_ns` without SMs (host stalls, launch gaps).
 *
 * Ownership: the graph owns its task array and strings are static (labels are literals).
 */
#ifndef PN_HW_GRAPH_H
#define PN_HW_GRAPH_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum { PN_TASK_COMPUTE, PN_TASK_COMM, PN_TASK_P2P, PN_TASK_DELAY } PnTaskKind;

/* Communication class, for the exposed-communication report. */
typedef enum {
  PN_CLASS_NONE = -1,
  PN_CLASS_DP   = 0,
  PN_CLASS_TP,
  PN_CLASS_PP,
  PN_CLASS_CP,
  PN_CLASS_EP,
  PN_CLASS_N
} PnCommClass;

/* How a compute kernel's speed depends on the SMs it gets. */
typedef enum { PN_SCALE_GEMM, PN_SCALE_MEMORY } PnSmScaling;

/* Stream indices on every GPU. Megatron/TE put each kind of work on its own stream. */
typedef enum {
  PN_STREAM_COMPUTE = 0,
  PN_STREAM_TP_COMM,
  PN_STREAM_DP_COMM,
  PN_STREAM_PP_SEND,
  PN_STREAM_PP_RECV,
  PN_STREAM_CP_COMM,
  PN_STREAM_EP_COMM,
  PN_STREAM_SHARED_EXPERT, /* Megatron's moe_shared_expert_overlap: shared experts beside the all-to-all */
  PN_STREAM_N
} PnStream;

#define PN_TASK_MAX_LEGS 4

typedef uint32_t PnTaskId;
#define PN_TASK_NONE UINT32_MAX

typedef struct {
  PnTaskId peer; /* the task on the other GPU */
  double bytes;  /* bytes moved by this leg */
  bool is_send;  /* this side sends */
  bool over_nic; /* crosses nodes */
} PnP2pLeg;

typedef struct {
  uint32_t gpu;
  uint8_t stream;     /* PnStream */
  uint8_t kind;       /* PnTaskKind */
  int8_t cls;         /* PnCommClass; PN_CLASS_NONE for compute */
  uint8_t scaling;    /* PnSmScaling (compute) */
  int16_t sms;        /* COMM/P2P: SMs held; COMPUTE: sm_limit (0 = all) */
  uint8_t n_legs;     /* P2P: 1..PN_TASK_MAX_LEGS */
  uint8_t sm_shape;   /* COMPUTE GEMM: 1 + index of the measured shape whose contention curves apply, 0 = none */
  uint8_t phase;      /* PnPhase, for reports and traces */
  uint8_t host_sync;  /* PnHostSync: what the host waits for after launching this task */
  uint8_t graphed;    /* replayed from a CUDA graph: a COMPUTE task starts without kernel_launch_ns */
  int16_t chunk;      /* virtual pipeline chunk, -1 when n/a */
  int16_t layer;      /* layer index within the model, -1 when n/a */
  int32_t microbatch; /* -1 when not applicable */
  uint32_t leg_first; /* P2P: first of its PN_TASK_MAX_LEGS slots in PnGraph.legs (pn_graph_legs) */
  uint32_t dep_first; /* into PnGraph.deps */
  uint32_t dep_count;
  float host_ns;   /* host time to launch this task (framework + driver), spent before it */
  float hbm_bytes; /* COMPUTE: bytes it moves to and from HBM, for HBM sharing (hw/hbm.h); 0: none */
  float hbm_pi;    /* COMPUTE: its HBM pressure per SM (hw/hbm.h); 0: 1, a streaming kernel's */
  union {
    double work_ns;   /* COMPUTE, DELAY */
    struct {          /* COMM: the NCCL collective it is, for reports (the executor never reads it) */
      float bytes;    /* S in nccl-tests' convention; 0: not an NCCL collective (userbuffers, copies) */
      uint16_t ranks; /* the group's size n (clamped to 65535) */
      uint8_t kind;   /* PnCollKind */
    } coll;
  };
  double latency_ns;       /* COMM, P2P */
  double nvlink_bytes;     /* COMM */
  double nic_bytes;        /* COMM */
  double max_bytes_per_ns; /* COMM, P2P: 0 = unbounded */
  const char *label;       /* static string */
} PnTask;

typedef enum { PN_PHASE_FWD, PN_PHASE_BWD, PN_PHASE_RECOMPUTE, PN_PHASE_OPTIM, PN_PHASE_OTHER } PnPhase;

/* What the host thread waits for once it has launched a task, before it launches the next one:
 * nothing, this task's end (a stream or event synchronization, a device-to-host copy read by
 * Python: `.item()`, `.tolist()`), or the end of every task launched on its GPU so far
 * (torch.cuda.synchronize). */
typedef enum { PN_HOST_SYNC_NONE = 0, PN_HOST_SYNC_TASK, PN_HOST_SYNC_DEVICE } PnHostSync;

G_STATIC_ASSERT(sizeof(PnTask) == 96); /* host_sync, graphed and host_ns fill what was padding; hbm_* add 8 */

/* Tasks and dependencies are plain arrays with their own capacity, not GArrays: a graph is
 * built one task at a time (400k for Llama 3.1 405B), and appending is then a store rather than
 * two out-of-line calls and a generic copy. Read them through the accessors below. */
typedef struct {
  uint32_t n_gpus;
  PnTask *tasks; /* n_tasks of them, in issue order per GPU (ids are global) */
  uint32_t n_tasks, cap_tasks;
  PnTaskId *deps; /* n_deps of them; a task's are deps[dep_first .. dep_first + dep_count) */
  uint32_t n_deps, cap_deps;
  GArray *legs; /* of PnP2pLeg: PN_TASK_MAX_LEGS slots per P2P task (most tasks carry none) */
} PnGraph;

PnGraph *pn_graph_new(uint32_t n_gpus);
void pn_graph_free(PnGraph *g); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnGraph, pn_graph_free)

/* Appends a task (copied; its n_legs and leg_first are reset: legs come from pn_graph_pair_p2p) with
 * `n_deps` dependencies; returns its id. Deps must be earlier ids. */
PnTaskId pn_graph_add(PnGraph *g, const PnTask *t, const PnTaskId *deps, uint32_t n_deps);
/* Adds one more dependency to the most recently added task. */
void pn_graph_add_dep(PnGraph *g, PnTaskId task, PnTaskId dep);
/* Links two P2P tasks (already added) as the two ends of one transfer of `bytes`. */
void pn_graph_pair_p2p(PnGraph *g, PnTaskId send, PnTaskId recv, double bytes, bool over_nic);

static inline PnTask *pn_graph_task(PnGraph *g, PnTaskId id) { return &g->tasks[id]; }
static inline const PnTask *pn_graph_tasks(const PnGraph *g) { return g->tasks; }
static inline const PnTaskId *pn_graph_deps(const PnGraph *g) { return g->deps; }
static inline uint32_t pn_graph_n_deps(const PnGraph *g) { return g->n_deps; }
/* Appends to the dependency array without any check or owner: only for tests that build an
 * invalid graph on purpose (pn_exec_run must reject it). */
void pn_graph_append_raw_dep(PnGraph *g, PnTaskId dep);
/* The legs of a P2P task (n_legs of them are in use). */
static inline PnP2pLeg *pn_graph_legs(const PnGraph *g, const PnTask *t)
{
  return &g_array_index(g->legs, PnP2pLeg, t->leg_first);
}
/* Reserves room for `n` more tasks, so that building a large graph does not copy it repeatedly. */
void pn_graph_reserve(PnGraph *g, uint32_t n);
static inline uint32_t pn_graph_n_tasks(const PnGraph *g) { return g->n_tasks; }

#endif
