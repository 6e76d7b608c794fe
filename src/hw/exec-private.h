/* exec-private.h — the executor's run state, shared by the files that run a graph (exec.h says
 * what is modelled):
 *   exec.c          the main loop: settle, starting tasks, and pn_exec_run;
 *   exec_queues.c   when a task may start (hardware queues, waiter lists, the dispatch worklist),
 *                   and what its end sets free;
 *   exec_kernels.c  compute kernels sharing a GPU's SMs, kernel chains, and their completions;
 *   exec_links.c    transfers: COMM flows and P2P legs in the max-min solver;
 *   exec_host.c     the host threads: launch times and synchronizations;
 *   exec_setup.c    checking the options, the profile and the graph, and building the run state.
 *
 * State, all in flat arrays built once before the run (no allocation per event once grown), by
 * setup_tasks in one pass in task order, then the P2P legs:
 *  - per task: its state, in a dense array of its own (what other tasks read), and in TaskRt
 *    `stream_prev`, `queue_next` (the previous task of its stream, the next of its hardware
 *    queue) and where its dependencies are in the graph's array.
 *  - per GPU: the running compute kernels (`Run`: work left, rate, completion event), the SMs
 *    held by communication kernels, and its four link resources in the max-min solver.
 *  - per hardware queue (gpu, queue): `qhead`, the first task not yet dispatched, and `qcur`,
 *    how many of the head's dependencies are known to have ended. A task is dispatched
 *    (started) when it is its queue's head, its stream predecessor has ended and all its
 *    dependencies have. Dispatching advances the head, so the next task of the queue may start
 *    while the first is still running.
 *  - waiting heads, not counts: a queue head that cannot start joins the waiter list of the
 *    first unfinished task it needs (its stream predecessor or a dependency; lists run through
 *    `qlink`, one entry per queue, from `waiter` per task), and is checked again when that task
 *    ends. No list of dependents is built and no count is kept per task: a task that ends
 *    touches only its own slot, not those of the tasks that depend on it.
 *  - transfers (`Xfer`): one per COMM task and one per P2P leg, shared by the two ends of the
 *    leg. Each active transfer is one max-min flow; its bytes left, rate and completion event
 *    live here. flow_xfer maps the solver's flow ids back to transfers.
 *
 * Rounding: a completion is scheduled at now + max(1, ceil(x - 1e-6)) for x = remaining / rate
 * ns: the 1e-6 ns slack keeps rounding noise (e.g. 1000 / (100/132) = 1320.0000000000002) from
 * adding a nanosecond. Latencies and delays use the same rounding without the 1 ns floor.
 *
 * Horizon: event times saturate at PN_EXEC_HORIZON_NS (2^62 ns, 146 years), so absurd sizes or
 * rates (a 1e-300 bytes/ns link) cannot overflow the clock; a run that reaches the horizon fails
 * with PN_EXEC_ERROR_HORIZON naming the first task whose completion was pushed there.
 */
#ifndef PN_HW_EXEC_PRIVATE_H
#define PN_HW_EXEC_PRIVATE_H

#include <math.h>

#include "hw/exec.h"
#include "hw/hbm.h"
#include "hw/maxmin.h"

#define PN_EXEC_CEIL_SLACK_NS 1e-6
#define PN_EXEC_HORIZON_NS ((PnTimeNs)1 << 62)

enum {
  ST_WAITING = 0,
  ST_RUNNING = 1,
  ST_ENDED   = 2,
  ST_MASK    = 3,
  ST_QUEUED  = 4, /* flag: in the worklist */
  ST_OPENED  = 8, /* flag: the observer was told it opened */
  ST_NEEDED  = 16 /* flag, set at setup: a task other than its stream successor depends on it */
};
enum { RES_NVL_TX = 0, RES_NVL_RX, RES_NIC_TX, RES_NIC_RX, RES_PER_GPU };

/* Growable arrays on the hot path: pointer/count/capacity (no out-of-line GArray calls). */
#define VEC_PUSH(ptr, n, cap, x)                                                                                       \
  do {                                                                                                                 \
    if ((n) == (cap)) {                                                                                                \
      (cap) = (cap) ? 2 * (cap) : 16;                                                                                  \
      (ptr) = g_realloc_n((ptr), (cap), sizeof *(ptr));                                                                \
    }                                                                                                                  \
    (ptr)[(n)++] = (x);                                                                                                \
  } while (0)

/* Per task, written once at setup: its links and the fields of its PnTask that dispatch, SM
 * sharing and completion read, in one 48-byte record (the 96-byte PnTask is not read during the
 * run). What other tasks read of it (its state) lives in a dense array of its own: a million
 * tasks do not fit in cache, and those remote touches are the executor's main cost. */
typedef struct {
  double work;          /* COMPUTE: work_ns + kernel launch; DELAY: work_ns; COMM, P2P: latency_ns */
  uint32_t stream_prev; /* previous task of the same GPU and stream, or PN_TASK_NONE */
  uint32_t queue_next;  /* next task of the same hardware queue, or PN_TASK_NONE */
  uint32_t gq;          /* hardware queue index: gpu * n_queues + queue */
  uint32_t aux;         /* COMPUTE: index in its GPU's running list; COMM: its xfer; P2P: leg_first */
  uint32_t gpu;
  uint32_t dep_first, dep_count; /* as in PnTask: its dependencies in the graph's array */
  int16_t sms;                   /* as in PnTask */
  uint8_t kind, scaling, sm_shape, n_legs, stream;
  uint8_t legs_left; /* P2P: legs not yet done */
  uint8_t cont;      /* COMPUTE: continues its stream predecessor's kernel chain (see "Kernel chains") */
  int8_t cls;        /* COMM, P2P: PnCommClass, PN_CLASS_NONE when outside 0..PN_CLASS_N-1 */
  uint16_t tag;      /* the observer's tag (COMM, P2P) */
  float hbm_d;       /* COMPUTE, HBM sharing: its HBM demand at full speed (bytes/ns; 0: none) */
  float hbm_pi;      /* COMPUTE, HBM sharing: its HBM pressure per SM */
} TaskRt;
G_STATIC_ASSERT(sizeof(TaskRt) == 56);

/* A running compute kernel, or kernel chain: `task` is the chain's kernel running now, `last` its
 * final one (== task for a lone kernel). */
typedef struct {
  PnTaskId task;
  PnTaskId last;
  int16_t sm_limit;    /* the running kernel's sms (0 = all) */
  bool projected;      /* the completion event is the chain's end, its kernels' ends computed ahead */
  double remaining_ns; /* ns of work at full speed left at since_ns */
  double rate;         /* speed relative to running alone with all SMs; 0 before the first refresh */
  double avail;        /* projected: the SMs free of communication kernels when projected */
  PnTimeNs since_ns;   /* when `remaining_ns` was last brought up to date */
  PnEventId ev;        /* completion event, 0 before the first refresh */
} Run;

/* HBM sharing: a flowing transfer's place in its GPUs' HBM (Xfer.h). */
typedef struct {
  double d;         /* what it needs of each of its GPUs' HBM (bytes/ns) */
  float f[2];       /* the fraction of that need it is served at its task's GPU and its peer's */
  float w[2];       /* its pressure on each */
  uint32_t gpu[2];  /* those GPUs (the same twice for a COMM task) */
  uint32_t slot[2]; /* its slot in each GPU's hbm_slots */
} XferHbm;

/* What a transfer moves is copied here at setup, so that starting its flow reads no PnTask or
 * leg: those are cold by then (that one cache miss per transfer was 6% of a 405B run). */
typedef struct {
  double remaining_bytes; /* nominal bytes left at since_ns */
  double rate;            /* nominal bytes per ns */
  PnTimeNs since_ns;
  PnEventId ev;
  double nvl_bytes; /* COMM: NVLink bytes; leg: the leg's bytes */
  double nic_bytes; /* COMM: NIC bytes; leg: unused */
  double bound;     /* max nominal bytes per ns, 0 = unbounded */
  PnFlowId flow;    /* -1 when not flowing */
  uint32_t task;    /* COMM: the task; leg: the sending task */
  uint32_t peer;    /* leg: the receiving task; COMM: PN_TASK_NONE */
  bool over_nic;    /* leg: crosses nodes (NIC, else NVLink) */
  float hbm_coef;   /* HBM bytes per nominal byte at each GPU it runs on (exec_links.c; used with HBM sharing) */
  XferHbm h;        /* HBM sharing, while it flows */
} Xfer;

/* A GPU's flowing transfers, for the rare times their HBM share binds them: slots stay where they
 * are, so a transfer that ends frees its own and touches no other transfer. */
typedef struct {
  uint32_t xi; /* the transfer */
  bool live;
} HbmSlot;

/* The compute time a GPU loses to SMs held by communication kernels (exec_kernels.c, "Compute lost
 * to SM contention"), kept only for an observer that asks for it: the fraction lost since
 * `since_ns` and who held the SMs then (the holders as of the GPU's last refresh). */
typedef struct {
  double frac;
  PnTimeNs since_ns;
  int held;               /* SMs held by COMM/P2P tasks */
  int by_cls[PN_CLASS_N]; /* of which by each class */
} LostRt;

typedef struct {
  int comm_sms;            /* SMs held by running COMM/P2P tasks */
  int cls_sms[PN_CLASS_N]; /* of which by the tasks of each class */
  bool dirty;              /* compute rates need a refresh */
  Run *run;                /* running COMPUTE tasks */
  uint32_t n_run, cap_run;
  LostRt lost;
  PnResourceId res[RES_PER_GPU];
  double comm_hbm;    /* HBM sharing: the summed need of the transfers flowing through this GPU (bytes/ns) */
  double comm_w;      /* HBM sharing: their summed pressure (hw/hbm.h) */
  double hbm_f;       /* HBM sharing: the fraction of their need they are served (1: all) */
  double k_need, k_w; /* HBM sharing: its running kernels' summed need and pressure, as of its last refresh */
  bool hbm_free;      /* HBM sharing: then every user of its HBM got all it needs */
  HbmSlot *hbm_slots; /* HBM sharing: those transfers, in slots (free ones listed in hbm_free_slots) */
  uint32_t n_hbm_slots, cap_hbm_slots, n_hbm_live;
  uint32_t *hbm_free_slots;
  uint32_t n_hbm_free_slots, cap_hbm_free_slots;
} GpuRt;

/* The host thread of one GPU (exec_host.c). */
typedef struct {
  double clock_ns;          /* when it finished launching the last task it launched */
  PnTaskId next;            /* the next task it will launch, PN_TASK_NONE when all are */
  PnTaskId blocked;         /* the task it synchronizes on (and waits), PN_TASK_NONE while it runs */
  uint8_t mode;             /* PnHostSync of `blocked` */
  uint32_t launched, ended; /* of its GPU's tasks (a device synchronization waits until equal) */
  uint32_t waiters;         /* first queue whose head it has not reached yet (list through qlink) */
} HostRt;

/* launch_ns of a task its host has not reached yet */
#define PN_EXEC_UNLAUNCHED INT64_MAX

#define PN_EXEC_RATE_MEMO_BITS 6
typedef struct {
  uint64_t sms; /* the SM share's bits */
  double rate;
  uint8_t sm_shape, scaling;
  bool own_limit, valid;
} RateMemo;

typedef struct {
  RateMemo rate_memo[1 << PN_EXEC_RATE_MEMO_BITS];
  const PnTask *tasks;
  const PnP2pLeg *legs; /* the graph's leg array (pn_graph_legs) */
  const PnTaskId *deps;
  const PnHwProfile *hw;
  uint32_t n_tasks;
  uint32_t n_gpus;
  uint32_t n_queues; /* per GPU */
  int max_connections;
  PnEngine *eng;
  PnMaxMin *mm;
  TaskRt *rt;
  uint32_t *leg_xfer; /* per leg slot of the graph (PnTask.leg_first + k): the leg's xfer */
  uint8_t *state;     /* per task: ST_* | ST_QUEUED */
  Xfer *xf;
  uint32_t n_xfers;
  GpuRt *gpus;
  uint32_t *qhead;  /* per hardware queue: first task not yet dispatched */
  uint32_t *qcur;   /* per hardware queue: the head's dependencies known to have ended */
  uint32_t *qlink;  /* per hardware queue: the next queue in the same waiter list, or NONE */
  uint32_t *waiter; /* per task: first queue whose head waits for it (list through qlink), or NONE */
  uint32_t *s_last; /* setup: per (gpu, stream), the latest task seen, or NONE */
  uint32_t *q_last; /* setup: per hardware queue, the latest task seen, or NONE */
  uint32_t cap_set; /* room in rt, state and waiter (and 2 * cap_set + 1 transfers) */
  GArray *p2p_ids;  /* setup: the P2P tasks, whose legs are set up after every task */
  PnTaskTime *times;
  PnTaskId *work; /* min-heap of dispatch candidates */
  uint32_t n_work, cap_work;
  uint32_t *dirty_gpus;
  uint32_t n_dirty, cap_dirty;
  uint32_t *flow_xfer; /* PnFlowId -> xfer */
  uint32_t n_flow_xfer;
  double *shares;       /* water-filling scratch */
  PnHbmUser *hbm_users; /* HBM sharing scratch */
  uint32_t cap_hbm_users;
  uint32_t cap_shares;
  GArray *changed;  /* of PnFlowId */
  double full_gemm; /* curve value with all SMs (0 when the curve is empty) */
  double full_gemm_limit;
  double full_mem;
  bool fuse;       /* kernel chains (PnExecOptions.unfused off) */
  bool hbm_on;     /* HBM sharing (profile hbm_share) */
  double *hbm_tab; /* pn_hbm_capacity at every PN_EXEC_HBM_STEP of pressure, up to its last point (hbm_at) */
  uint32_t n_hbm_tab;
  bool track_lost; /* the observer asks for the compute lost to SM contention */
  uint32_t n_ended;
  const PnExecObserver *obs; /* NULL: none */
  PnTimeNs makespan_ns;      /* the latest end so far (time only moves forward: the last end) */
  PnTaskId horizon_task;     /* first task scheduled at the horizon, PN_TASK_NONE if none */
  bool settle_pending;
  bool mm_dirty;
  /* the host threads; host_on false (no task costs the host anything): none of this is allocated */
  bool host_on;
  HostRt *hosts;        /* per GPU */
  PnTimeNs *launch_ns;  /* per task: when its host launched it, PN_EXEC_UNLAUNCHED before it got there */
  uint32_t *gpu_next;   /* per task: the next task of its GPU in issue order, PN_TASK_NONE for the last */
  PnTimeNs *host_since; /* per hardware queue: since when its head waits for its launch, -1 when it does not */
  GArray *host_waits;   /* of PnHostWait: the compute stream's waits (the run's result) */
} Exec;

/* pn_hbm_capacity(hw, w) from the table: exact where the curve's points lie on the grid (the
 * measured SM counts), within its curvature over one step elsewhere. The executor asks it on
 * every refresh and transfer of a GPU sharing HBM: a binary search there was 15% of a run. */
#define PN_EXEC_HBM_STEP 0.25
static inline double hbm_at(const Exec *ex, double w)
{
  if (!(w > 0.0))
    return 0.0;
  double pos = w / PN_EXEC_HBM_STEP;
  if (pos >= (double)(ex->n_hbm_tab - 1))
    return ex->hbm_tab[ex->n_hbm_tab - 1];
  uint32_t i = (uint32_t)pos;
  return ex->hbm_tab[i] + (pos - (double)i) * (ex->hbm_tab[i + 1] - ex->hbm_tab[i]);
}

static inline int st(const Exec *ex, PnTaskId t) { return ex->state[t] & ST_MASK; }
static inline void set_st(Exec *ex, PnTaskId t, int s) { ex->state[t] = (uint8_t)((ex->state[t] & ~ST_MASK) | s); }

/* ---- helpers ---- */

static inline PnTimeNs dur_ns(double x, PnTimeNs floor_ns)
{
  g_assert(!isnan(x));
  double y = x - PN_EXEC_CEIL_SLACK_NS;
  if (!(y < (double)PN_EXEC_HORIZON_NS))
    return PN_EXEC_HORIZON_NS; /* absurd or stalled: at_ns() reports it */
  /* ceil(y), exactly, without a libm call (baseline x86-64 has no rounding instruction):
   * truncate, then step up if that lost a fraction. Doubles this large are exact integers. */
  PnTimeNs d = (PnTimeNs)y;
  if ((double)d < y)
    d++;
  return d < floor_ns ? floor_ns : d;
}

/* now + d, saturated at the horizon: times stay <= PN_EXEC_HORIZON_NS and the sum is formed
 * only when it stays below, so it cannot overflow; `t` is blamed when the horizon is reached. */
static inline PnTimeNs at_ns(Exec *ex, PnTimeNs d, PnTaskId t)
{
  PnTimeNs now = pn_engine_now(ex->eng);
  if (d >= PN_EXEC_HORIZON_NS - now) {
    if (ex->horizon_task == PN_TASK_NONE)
      ex->horizon_task = t;
    return PN_EXEC_HORIZON_NS;
  }
  return now + d;
}

static inline void need_settle(Exec *ex)
{
  if (!ex->settle_pending) {
    ex->settle_pending = true;
    pn_engine_request_instant_hook(ex->eng);
  }
}

static inline void mark_gpu(Exec *ex, uint32_t gpu)
{
  if (!ex->gpus[gpu].dirty) {
    ex->gpus[gpu].dirty = true;
    VEC_PUSH(ex->dirty_gpus, ex->n_dirty, ex->cap_dirty, gpu);
  }
  need_settle(ex);
}

static inline void hold_sms(Exec *ex, const TaskRt *r, int sign)
{
  if (r->sms > 0) {
    GpuRt *g = &ex->gpus[r->gpu];
    g->comm_sms += sign * r->sms;
    if (r->cls != PN_CLASS_NONE)
      g->cls_sms[r->cls] += sign * r->sms;
    mark_gpu(ex, r->gpu);
  }
}

static inline PnTaskId xfer_other(const Xfer *x, PnTaskId t) { return x->task == t ? x->peer : x->task; }

#define TASK_FMT "task %u '%s' (gpu %u, stream %u)"
#define TASK_ARGS(id, tk) (id), (tk)->label ? (tk)->label : "", (tk)->gpu, (unsigned)(tk)->stream

/* ---- across the files ---- */

/* exec_queues.c */
bool pn__ready(Exec *ex, PnTaskId t, uint32_t q);
void pn__work_push(Exec *ex, PnTaskId t);
PnTaskId pn__work_pop(Exec *ex);
/* Checks again every queue of the waiter list that starts at queue q (linked through qlink). */
void pn__wake_queues(Exec *ex, uint32_t q);
void pn__end_task(Exec *ex, PnTaskId t);
/* exec_kernels.c */
void pn__refresh_gpu(Exec *ex, uint32_t gpu);
void pn__on_task_done(PnEngine *eng, void *ctx, uint64_t arg); /* a compute kernel's or a delay's end */
/* exec_links.c */
/* HBM bytes per nominal byte of a COMM task's transfer and of a P2P leg, at each GPU it runs on
 * (exec_links.c). */
double pn__comm_hbm_coef(const PnHwProfile *hw, const PnTask *tk);
double pn__leg_hbm_coef(bool over_nic);
/* HBM sharing: the transfers of GPU `gpu` are served the fraction `f` of what they need there
 * (exec_links.c: each flow's bound follows). */
void pn__hbm_serve(Exec *ex, uint32_t gpu, double f);
void pn__start_leg(Exec *ex, uint32_t xi);
void pn__on_comm_ready(PnEngine *eng, void *ctx, uint64_t arg); /* a COMM task's latency has elapsed */
void pn__solve_links(Exec *ex);
/* exec_host.c */
void pn__host_start(Exec *ex);
/* Whether queue q's head t has been launched; if not, arranges for q to be checked again when it is. */
bool pn__host_launched(Exec *ex, PnTaskId t, uint32_t q);
void pn__host_task_ended(Exec *ex, PnTaskId t);
/* exec_setup.c */
gboolean pn__exec_setup(Exec *ex, const PnGraph *g, const PnHwProfile *hw, const PnExecOptions *opt, GError **error);
void pn__exec_free(Exec *ex);

#endif
