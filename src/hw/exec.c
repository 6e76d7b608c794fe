/* exec.c — runs a task graph on simulated GPUs (exec.h; graph.h says when a task may start).
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
 * Event flow: handlers (task done, latency elapsed, transfer done) only change state and mark
 * what needs attention; "settle", the engine's end-of-instant hook, runs once every event due
 * at the current time has fired and (1) starts every dispatchable task in task-id order (a
 * min-heap worklist), (2) recomputes the compute rates of the GPUs whose SM occupancy changed,
 * (3) re-solves the max-min flows and moves the completion events of the flows whose rate
 * changed. Zero-delay events it schedules (a latency of 0) fire next, and settle runs again
 * after them. (It was an event scheduled at the current time: the same order, since such an
 * event came after every event already due then, at one event per instant more.)
 *
 * Kernel chains (below, before run_set_rate): a run of compute kernels that nothing outside it
 * observes between them is one Run, and alone on its GPU needs one completion event in all.
 *
 * Compute sharing: avail = sm_count - SMs held by running COMM/P2P tasks (at least 1). Running
 * compute tasks water-fill it: each gets avail/n, a task whose sm_limit is below that gets its
 * limit and the rest is split again among the others. A task with s SMs runs at
 * curve(s)/curve(sm_count) (linear s/sm_count when the curve is empty), clamped to (0, 1], and
 * exactly 1 with all SMs. Work is kept in ns-at-full-speed (work_ns + kernel_launch_ns).
 *
 * Rounding: a completion is scheduled at now + max(1, ceil(x - 1e-6)) for x = remaining / rate
 * ns: the 1e-6 ns slack keeps rounding noise (e.g. 1000 / (100/132) = 1320.0000000000002) from
 * adding a nanosecond. Latencies and delays use the same rounding without the 1 ns floor.
 *
 * Horizon: event times saturate at PN_EXEC_HORIZON_NS (2^62 ns, 146 years), so absurd sizes or
 * rates (a 1e-300 bytes/ns link) cannot overflow the clock; a run that reaches the horizon fails
 * with PN_EXEC_ERROR_HORIZON naming the first task whose completion was pushed there.
 */
#include "hw/exec.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/mem.h"
#include "hw/maxmin.h"

GQuark pn_exec_error_quark(void) { return g_quark_from_static_string("pn-exec-error-quark"); }

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
 * sharing and completion read, in one 48-byte record (the 88-byte PnTask is not read during the
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
  uint16_t tag;      /* the observer's tag (COMM, P2P) */
} TaskRt;

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
} Xfer;

typedef struct {
  int comm_sms; /* SMs held by running COMM/P2P tasks */
  bool dirty;   /* compute rates need a refresh */
  Run *run;     /* running COMPUTE tasks */
  uint32_t n_run, cap_run;
  PnResourceId res[RES_PER_GPU];
} GpuRt;

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
  double *shares; /* water-filling scratch */
  uint32_t cap_shares;
  GArray *changed;  /* of PnFlowId */
  double full_gemm; /* curve value with all SMs (0 when the curve is empty) */
  double full_gemm_limit;
  double full_mem;
  bool fuse; /* kernel chains (PnExecOptions.unfused off) */
  uint32_t n_ended;
  const PnExecObserver *obs; /* NULL: none */
  PnTimeNs makespan_ns;      /* the latest end so far (time only moves forward: the last end) */
  PnTaskId horizon_task;     /* first task scheduled at the horizon, PN_TASK_NONE if none */
  bool settle_pending;
  bool mm_dirty;
} Exec;

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

static void settle(PnEngine *eng, void *ctx, uint64_t arg);
static void on_task_done(PnEngine *eng, void *ctx, uint64_t arg);
static void on_comm_ready(PnEngine *eng, void *ctx, uint64_t arg);
static void on_leg_ready(PnEngine *eng, void *ctx, uint64_t arg);
static void on_xfer_done(PnEngine *eng, void *ctx, uint64_t arg);

static void need_settle(Exec *ex)
{
  if (!ex->settle_pending) {
    ex->settle_pending = true;
    pn_engine_request_instant_hook(ex->eng);
  }
}

static void mark_gpu(Exec *ex, uint32_t gpu)
{
  if (!ex->gpus[gpu].dirty) {
    ex->gpus[gpu].dirty = true;
    VEC_PUSH(ex->dirty_gpus, ex->n_dirty, ex->cap_dirty, gpu);
  }
  need_settle(ex);
}

static void work_push(Exec *ex, PnTaskId t)
{
  if (ex->state[t] & ST_QUEUED)
    return;
  ex->state[t] |= ST_QUEUED;
  __builtin_prefetch(&ex->rt[t]); /* read when it is popped, in this instant's settle */
  if (ex->n_work == ex->cap_work) {
    ex->cap_work = ex->cap_work ? 2 * ex->cap_work : 64;
    ex->work     = g_renew(PnTaskId, ex->work, ex->cap_work);
  }
  PnTaskId *h = ex->work;
  size_t i    = ex->n_work++;
  while (i > 0 && h[(i - 1) / 2] > t) {
    h[i] = h[(i - 1) / 2];
    i    = (i - 1) / 2;
  }
  h[i] = t;
  need_settle(ex);
}

static PnTaskId work_pop(Exec *ex)
{
  PnTaskId *h  = ex->work;
  PnTaskId top = h[0];
  size_t n     = --ex->n_work;
  PnTaskId x   = h[n];
  size_t i     = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && h[c + 1] < h[c])
      c++;
    if (h[c] >= x)
      break;
    h[i] = h[c];
    i    = c;
  }
  if (n > 0)
    h[i] = x;
  ex->state[top] &= (uint8_t)~ST_QUEUED;
  return top;
}

/* Whether task t, the head of hardware queue q, may start: its stream predecessor and all its
 * dependencies have ended. If not, the queue joins the waiter list of the first task found
 * unfinished, and is checked again when that task ends; the cursor remembers how many
 * dependencies were seen ended (they stay ended). A queue is in at most one list: it is
 * checked only when its head changes or its list is woken. */
static bool ready(Exec *ex, PnTaskId t, uint32_t q)
{
  const TaskRt *r = &ex->rt[t];
  PnTaskId w      = PN_TASK_NONE;
  if (r->stream_prev != PN_TASK_NONE && (ex->state[r->stream_prev] & ST_MASK) != ST_ENDED) {
    w = r->stream_prev;
  } else {
    uint32_t k = ex->qcur[q];
    while (k < r->dep_count && (ex->state[ex->deps[r->dep_first + k]] & ST_MASK) == ST_ENDED)
      k++;
    ex->qcur[q] = k;
    if (k == r->dep_count)
      return true;
    w = ex->deps[r->dep_first + k];
  }
  ex->qlink[q]  = ex->waiter[w];
  ex->waiter[w] = q;
  return false;
}

/* Task t has ended: the queues whose heads waited for it are checked again. */
static void wake_waiters(Exec *ex, PnTaskId t)
{
  uint32_t q    = ex->waiter[t];
  ex->waiter[t] = PN_TASK_NONE;
  while (q != PN_TASK_NONE) {
    uint32_t next = ex->qlink[q];
    PnTaskId h    = ex->qhead[q];
    if (ready(ex, h, q))
      work_push(ex, h);
    q = next;
  }
}

/* Speed of a compute kernel given `sms` SMs, relative to all SMs. `own_limit`: the kernel was
 * launched for exactly these SMs (TE set_sm_margin), so it fills them in whole waves; otherwise
 * it was launched for all SMs and other kernels hold the rest (wave quantization, interference):
 * two different measured curves. */
static double sm_rate_eval(const Exec *ex, const TaskRt *tk, double sms, bool own_limit);

/* sm_rate() memoized: the same few (kernel kind, SM share) pairs recur all run long (a GEMM
 * beside a 16-SM userbuffers kernel, beside a P2P kernel, ...). Direct-mapped on the exact
 * inputs, so a hit returns the very value the evaluation would. */
static double sm_rate(Exec *ex, const TaskRt *tk, double sms, bool own_limit)
{
  uint64_t bits;
  memcpy(&bits, &sms, sizeof bits);
  uint64_t key = bits ^ ((uint64_t)tk->sm_shape << 1) ^ ((uint64_t)tk->scaling << 9) ^ (own_limit ? 1u : 0u);
  RateMemo *m  = &ex->rate_memo[(key * 0x9E3779B97F4A7C15ull) >> (64 - PN_EXEC_RATE_MEMO_BITS)];
  if (m->valid && m->sms == bits && m->sm_shape == tk->sm_shape && m->scaling == tk->scaling &&
      m->own_limit == own_limit)
    return m->rate;
  double r = sm_rate_eval(ex, tk, sms, own_limit);
  *m       = (RateMemo){
            .sms = bits, .rate = r, .sm_shape = tk->sm_shape, .scaling = tk->scaling, .own_limit = own_limit, .valid = true};
  return r;
}

static double sm_rate_eval(const Exec *ex, const TaskRt *tk, double sms, bool own_limit)
{
  uint8_t scaling = tk->scaling;
  double n_sm     = (double)ex->hw->sm_count;
  if (sms >= n_sm)
    return 1.0;
  /* a GEMM with curves measured for a shape near its own (wave quantization differs by shape) */
  if (scaling == PN_SCALE_GEMM && tk->sm_shape > 0 && tk->sm_shape <= ex->hw->n_shape_contention) {
    const PnCurve *c = &ex->hw->shape_contention[tk->sm_shape - 1].curve[own_limit ? 1 : 0];
    if (c->n > 0) {
      double r = pn_curve_eval(c, sms, 1.0) / pn_curve_eval(c, n_sm, 1.0);
      if (!(r > 1e-9))
        r = 1e-9;
      return r > 1.0 ? 1.0 : r;
    }
  }
  const PnCurve *c = scaling == PN_SCALE_MEMORY ? &ex->hw->mem_sm_scaling : &ex->hw->gemm_sm_scaling;
  double full      = scaling == PN_SCALE_MEMORY ? ex->full_mem : ex->full_gemm;
  if (own_limit && scaling == PN_SCALE_GEMM && ex->hw->gemm_sm_limit_scaling.n > 0) {
    c    = &ex->hw->gemm_sm_limit_scaling;
    full = ex->full_gemm_limit;
  }
  double r = c->n > 0 ? pn_curve_eval(c, sms, 0.0) / full : sms / n_sm;
  if (!(r > 1e-9))
    r = 1e-9;
  return r > 1.0 ? 1.0 : r;
}

/* ---- kernel chains ----
 *
 * A chain is a run of compute kernels on one stream that nothing outside the chain can observe
 * between them: each kernel after the first (`cont`) is the next task of its hardware queue after
 * its stream predecessor, depends on nothing else, and no other task depends on that predecessor;
 * the task issued after a chain's kernel waits for its end (same stream, or a dependency). So each
 * kernel of the chain starts exactly when the one before it ends, as it would if dispatched, and the
 * chain runs as one Run whose `task` moves from kernel to kernel (setup_tasks decides; the
 * observer's iteration ends are kept whole, PnExecOptions.keep_whole).
 *
 * While a chain is the only compute work of its GPU, the SMs it gets cannot change until something
 * else starts or ends there, which refreshes the GPU: so the ends of all its kernels are computed
 * ahead ("projected", each with the rate it gets alone, rounded as its own completion would be)
 * and one event is scheduled, at the chain's end. A refresh first brings the chain up to now
 * (chain_advance): the kernels whose computed end has come end there. Beside other compute
 * kernels (whose shares depend on which kernel of the chain runs) each kernel gets its own
 * completion event, and the next one starts in place. Times, rates and rounding are those of the
 * kernels run one by one; only the dispatch work and the events between them are saved. */

/* The rate kernel `s` gets alone on its GPU with `avail` SMs free: refresh_gpu's one-kernel case. */
static inline double alone_rate(Exec *ex, PnTaskId s, double avail)
{
  const TaskRt *k = &ex->rt[s];
  double lim      = (double)k->sms;
  bool own        = lim > 0.0 && lim < avail;
  return sm_rate(ex, k, own ? lim : avail, own);
}

/* The chain's running kernel ends at `end` and the next one starts there (rate 0: not yet set).
 * Nothing waits for the kernel that ended (setup made sure). */
static void chain_step(Exec *ex, Run *r, PnTimeNs end)
{
  PnTaskId t = r->task, nx = ex->rt[t].queue_next;
  g_assert(ex->waiter[t] == PN_TASK_NONE && ex->rt[nx].cont);
  set_st(ex, t, ST_ENDED);
  ex->times[t].end_ns = end;
  ex->n_ended++;
  set_st(ex, nx, ST_RUNNING);
  ex->times[nx].start_ns = end;
  ex->rt[nx].aux         = ex->rt[t].aux;
  r->task                = nx;
  r->sm_limit            = ex->rt[nx].sms;
  r->remaining_ns        = ex->rt[nx].work;
  r->since_ns            = end;
  r->rate                = 0.0;
}

/* A projected chain's kernels whose computed end is not after now end there. */
static void chain_advance(Exec *ex, Run *r)
{
  if (!r->projected)
    return;
  PnTimeNs now = pn_engine_now(ex->eng);
  while (r->task != r->last) {
    PnTimeNs end = r->since_ns + dur_ns(r->remaining_ns / r->rate, 1); /* below the horizon: projected */
    if (end > now)
      break;
    chain_step(ex, r, end);
    r->rate = alone_rate(ex, r->task, r->avail);
  }
}

/* Brings a running kernel's remaining work up to now and moves its completion to the new rate.
 * `alone`: it is the only compute work of its GPU, which has `avail` SMs free; a chain is then
 * projected to its end. */
static void run_set_rate(Exec *ex, Run *r, double rate, bool alone, double avail)
{
  bool project = alone && r->task != r->last;
  if (r->ev != 0 && r->rate == rate && r->projected == project && (!project || r->avail == avail))
    return;
  PnTimeNs now = pn_engine_now(ex->eng);
  r->remaining_ns -= (double)(now - r->since_ns) * r->rate;
  if (r->remaining_ns < 0.0)
    r->remaining_ns = 0.0;
  r->since_ns  = now;
  r->rate      = rate;
  r->projected = false;
  if (r->ev != 0)
    pn_engine_cancel(ex->eng, r->ev);
  if (project) {
    PnTimeNs end = now;
    double rem = r->remaining_ns, kr = rate;
    for (PnTaskId s = r->task;;) {
      PnTimeNs d = dur_ns(rem / kr, 1);
      if (d >= PN_EXEC_HORIZON_NS - end)
        goto one_kernel; /* absurd: kernel by kernel, so that the horizon blames the right one */
      end += d;
      if (s == r->last)
        break;
      s   = ex->rt[s].queue_next;
      rem = ex->rt[s].work;
      kr  = alone_rate(ex, s, avail);
    }
    r->projected = true;
    r->avail     = avail;
    r->ev        = pn_engine_schedule(ex->eng, end, on_task_done, ex, r->last);
    return;
  }
one_kernel:
  r->ev = pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(r->remaining_ns / rate, 1), r->task), on_task_done, ex, r->task);
}

/* Water-fills the free SMs of a GPU among its running compute tasks and updates their rates. */
static void refresh_gpu(Exec *ex, uint32_t gpu)
{
  GpuRt *g   = &ex->gpus[gpu];
  g->dirty   = false;
  uint32_t n = g->n_run;
  if (n == 0)
    return;
  double avail = (double)ex->hw->sm_count - (double)g->comm_sms;
  if (avail < 1.0)
    avail = 1.0;
  if (n == 1) { /* most refreshes (one kernel on the compute stream): the water-filling below, unrolled */
    Run *r = &g->run[0];
    chain_advance(ex, r);
    run_set_rate(ex, r, alone_rate(ex, r->task, avail), true, avail);
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    chain_advance(ex, &g->run[i]); /* which kernel of a chain runs decides its sm_limit */
  if (ex->cap_shares < n) {
    ex->cap_shares = 2 * n;
    ex->shares     = g_renew(double, ex->shares, ex->cap_shares);
  }
  double *share = ex->shares;
  for (uint32_t i = 0; i < n; i++)
    share[i] = -1.0; /* unfixed */
  uint32_t n_free = n;
  double level    = avail / (double)n_free;
  for (;;) {
    bool capped = false;
    for (uint32_t i = 0; i < n; i++) {
      double lim = (double)g->run[i].sm_limit;
      if (share[i] < 0.0 && lim > 0.0 && lim < level) {
        share[i] = lim;
        avail -= lim;
        n_free--;
        capped = true;
      }
    }
    if (!capped || n_free == 0)
      break;
    level = avail / (double)n_free;
  }
  for (uint32_t i = 0; i < n; i++) {
    double s = share[i] < 0.0 ? level : share[i];
    run_set_rate(ex, &g->run[i], sm_rate(ex, &ex->rt[g->run[i].task], s, share[i] >= 0.0), false, 0.0);
  }
}

static void hold_sms(Exec *ex, const TaskRt *r, int sign)
{
  if (r->sms > 0) {
    ex->gpus[r->gpu].comm_sms += sign * r->sms;
    mark_gpu(ex, r->gpu);
  }
}

static void end_task(Exec *ex, PnTaskId t)
{
  const TaskRt *r = &ex->rt[t];
  g_assert(st(ex, t) == ST_RUNNING);
  set_st(ex, t, ST_ENDED);
  ex->times[t].end_ns = pn_engine_now(ex->eng);
  ex->makespan_ns     = ex->times[t].end_ns;
  ex->n_ended++;
  if (ex->obs)
    ex->obs->close(ex->obs->ctx, t, r->gpu, r->stream, r->kind, r->tag, ex->times[t].start_ns, ex->times[t].end_ns);
  if (r->kind == PN_TASK_COMPUTE) {
    GpuRt *g                     = &ex->gpus[r->gpu];
    uint32_t pos                 = r->aux;
    g->run[pos]                  = g->run[--g->n_run];
    ex->rt[g->run[pos].task].aux = ex->rt[g->run[pos].last].aux = pos; /* no-op when t was last */
    mark_gpu(ex, r->gpu);
  } else if (r->kind == PN_TASK_COMM || r->kind == PN_TASK_P2P) {
    hold_sms(ex, r, -1);
  }
  wake_waiters(ex, t);
  need_settle(ex);
}

static inline PnTaskId xfer_other(const Xfer *x, PnTaskId t) { return x->task == t ? x->peer : x->task; }

/* The observer hears of a P2P task when its first leg starts. */
static void open_p2p(Exec *ex, PnTaskId t)
{
  if (ex->obs && !(ex->state[t] & ST_OPENED)) {
    ex->state[t] |= ST_OPENED;
    const TaskRt *r = &ex->rt[t];
    ex->obs->open(ex->obs->ctx, t, r->gpu, r->stream, r->kind, r->tag, pn_engine_now(ex->eng));
  }
}

static void start_leg(Exec *ex, uint32_t xi)
{
  const Xfer *x = &ex->xf[xi];
  open_p2p(ex, x->task);
  open_p2p(ex, x->peer);
  double lat    = fmax(ex->rt[x->task].work, ex->rt[x->peer].work);
  ex->xf[xi].ev = pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(lat, 0), x->task), on_leg_ready, ex, xi);
}

/* Tasks are dispatched in issue order per GPU, and a GPU's tasks are mostly consecutive ids:
 * while one starts, the lines of the tasks a few places further on are requested from memory,
 * so that they are in cache when their turn comes (eight GPUs walk the arrays at once, which
 * defeats the hardware's stream detection). A hint only: it changes no value. */
#define PN_EXEC_PREFETCH_AHEAD 4

static inline void prefetch_ahead(const Exec *ex, PnTaskId t)
{
  PnTaskId a = t + PN_EXEC_PREFETCH_AHEAD;
  if (a >= ex->n_tasks)
    return;
  __builtin_prefetch(&ex->rt[a]);
  __builtin_prefetch(&ex->times[a], 1);
}

static void start_task(Exec *ex, PnTaskId t)
{
  TaskRt *r    = &ex->rt[t];
  PnTimeNs now = pn_engine_now(ex->eng);
  prefetch_ahead(ex, t);
  set_st(ex, t, ST_RUNNING);
  ex->times[t].start_ns = now;
  PnTaskId last = t, next = r->queue_next; /* a chain leaves its queue as one task */
  while (next != PN_TASK_NONE && ex->rt[next].cont) {
    last = next;
    next = ex->rt[next].queue_next;
  }
  ex->qhead[r->gq] = next;
  ex->qcur[r->gq]  = 0;
  if (next != PN_TASK_NONE && ready(ex, next, r->gq))
    work_push(ex, next);
  if (ex->obs && (r->kind == PN_TASK_COMPUTE || r->kind == PN_TASK_COMM))
    ex->obs->open(ex->obs->ctx, t, r->gpu, r->stream, r->kind, r->tag, now);
  switch (r->kind) {
  case PN_TASK_COMPUTE: {
    GpuRt *g         = &ex->gpus[r->gpu];
    r->aux           = g->n_run;
    ex->rt[last].aux = g->n_run;
    Run run          = {.task = t, .last = last, .sm_limit = r->sms, .remaining_ns = r->work, .since_ns = now};
    VEC_PUSH(g->run, g->n_run, g->cap_run, run);
    mark_gpu(ex, r->gpu); /* the refresh schedules its completion */
    break;
  }
  case PN_TASK_DELAY:
    pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(r->work, 0), t), on_task_done, ex, t);
    break;
  case PN_TASK_COMM:
    hold_sms(ex, r, +1);
    __builtin_prefetch(&ex->xf[r->aux]); /* read when the latency has elapsed */
    pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(r->work, 0), t), on_comm_ready, ex, t);
    break;
  case PN_TASK_P2P:
    hold_sms(ex, r, +1);
    r->legs_left = r->n_legs;
    for (int k = 0; k < r->n_legs; k++) {
      uint32_t xi    = ex->leg_xfer[r->aux + k];
      PnTaskId other = xfer_other(&ex->xf[xi], t);
      g_assert(st(ex, other) != ST_ENDED);
      if (st(ex, other) == ST_RUNNING) /* the later of the two ends starts the leg */
        start_leg(ex, xi);
    }
    break;
  default:
    g_assert_not_reached();
  }
}

/* Starts the transfer of an xfer as a max-min flow (the latency has elapsed). */
static void add_flow(Exec *ex, uint32_t xi, int n, const PnResourceId *res, const double *coef, double total,
                     double bound)
{
  Xfer *x            = &ex->xf[xi];
  bool placed        = false;
  PnFlowId f         = pn_maxmin_add_flow_placed(ex->mm, n, res, coef, bound, &placed);
  x->flow            = f;
  x->remaining_bytes = total;
  x->rate            = 0.0;
  x->since_ns        = pn_engine_now(ex->eng);
  x->ev              = 0;
  if ((uint32_t)f >= ex->n_flow_xfer) {
    ex->n_flow_xfer = 2 * (uint32_t)f + 16;
    ex->flow_xfer   = g_renew(uint32_t, ex->flow_xfer, ex->n_flow_xfer);
  }
  ex->flow_xfer[f] = xi;
  if (placed) {
    /* at its bound, nothing else moves: its completion is known now (as settle would set it) */
    x->rate = pn_maxmin_flow_rate(ex->mm, f);
    x->ev =
        pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(x->remaining_bytes / x->rate, 1), x->task), on_xfer_done, ex, xi);
    return;
  }
  ex->mm_dirty = true;
  need_settle(ex);
}

static void leg_done(Exec *ex, uint32_t xi)
{
  const Xfer *x    = &ex->xf[xi];
  PnTaskId ends[2] = {x->task, x->peer};
  for (int i = 0; i < 2; i++)
    if (--ex->rt[ends[i]].legs_left == 0)
      end_task(ex, ends[i]);
}

/* ---- event handlers ---- */

static void on_task_done(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex        = ctx;
  PnTaskId t      = (PnTaskId)arg;
  const TaskRt *k = &ex->rt[t];
  if (k->kind == PN_TASK_COMPUTE) {
    Run *r = &ex->gpus[k->gpu].run[k->aux];
    if (t != r->last) { /* a kernel of a chain, on its own event: the next starts in place */
      r->ev = 0;
      chain_step(ex, r, pn_engine_now(eng));
      mark_gpu(ex, k->gpu);
      return;
    }
    chain_advance(ex, r); /* projected: the kernels before the last end at their computed ends */
    g_assert(r->task == t);
  }
  end_task(ex, t);
}

static void on_comm_ready(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex      = ctx;
  PnTaskId t    = (PnTaskId)arg;
  uint32_t xi   = ex->rt[t].aux;
  const Xfer *x = &ex->xf[xi];
  double nvl = x->nvl_bytes, nic = x->nic_bytes;
  double total = fmax(nvl, nic);
  if (!(total > 0.0)) {
    end_task(ex, t);
    return;
  }
  /* Nominal unit: a byte on the dominant resource; the other one is used in proportion. */
  const GpuRt *g = &ex->gpus[ex->rt[t].gpu];
  PnResourceId res[4];
  double coef[4];
  int n = 0;
  if (nvl > 0.0) {
    res[n] = g->res[RES_NVL_TX], coef[n++] = nvl / total;
    res[n] = g->res[RES_NVL_RX], coef[n++] = nvl / total;
  }
  if (nic > 0.0) {
    res[n] = g->res[RES_NIC_TX], coef[n++] = nic / total;
    res[n] = g->res[RES_NIC_RX], coef[n++] = nic / total;
  }
  add_flow(ex, xi, n, res, coef, total, x->bound);
}

static void on_leg_ready(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex    = ctx;
  uint32_t xi = (uint32_t)arg;
  Xfer *x     = &ex->xf[xi];
  x->ev       = 0;
  if (!(x->nvl_bytes > 0.0)) {
    leg_done(ex, xi);
    return;
  }
  PnResourceId res[2] = {ex->gpus[ex->rt[x->task].gpu].res[x->over_nic ? RES_NIC_TX : RES_NVL_TX],
                         ex->gpus[ex->rt[x->peer].gpu].res[x->over_nic ? RES_NIC_RX : RES_NVL_RX]};
  double coef[2]      = {1.0, 1.0};
  add_flow(ex, xi, 2, res, coef, x->nvl_bytes, x->bound);
}

static void on_xfer_done(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex    = ctx;
  uint32_t xi = (uint32_t)arg;
  Xfer *x     = &ex->xf[xi];
  pn_maxmin_remove_flow(ex->mm, x->flow);
  x->flow      = -1;
  x->ev        = 0;
  ex->mm_dirty = true;
  need_settle(ex);
  if (x->peer == PN_TASK_NONE)
    end_task(ex, x->task);
  else
    leg_done(ex, xi);
}

static void settle(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex = ctx;
  /* settle_pending stays true while settling: whatever the steps below mark is handled below. */
  /* 1. Dispatch, in task-id order. Starting a task may expose the next one of its queue. */
  while (ex->n_work > 0) {
    PnTaskId t = work_pop(ex); /* a queue head whose stream predecessor and dependencies ended */
    if (st(ex, t) == ST_WAITING && ex->qhead[ex->rt[t].gq] == t)
      start_task(ex, t);
  }
  /* 2. Compute rates of the GPUs whose running set or held SMs changed. */
  for (uint32_t i = 0; i < ex->n_dirty; i++)
    refresh_gpu(ex, ex->dirty_gpus[i]);
  ex->n_dirty = 0;
  /* 3. Link sharing. */
  if (ex->mm_dirty) {
    ex->mm_dirty = false;
    pn_maxmin_solve(ex->mm, ex->changed);
    PnTimeNs now = pn_engine_now(eng);
    for (guint i = 0; i < ex->changed->len; i++) {
      PnFlowId f  = g_array_index(ex->changed, PnFlowId, i);
      uint32_t xi = ex->flow_xfer[f];
      Xfer *x     = &ex->xf[xi];
      x->remaining_bytes -= (double)(now - x->since_ns) * x->rate;
      if (x->remaining_bytes < 0.0)
        x->remaining_bytes = 0.0;
      x->since_ns = now;
      x->rate     = pn_maxmin_flow_rate(ex->mm, f);
      if (x->ev != 0)
        pn_engine_cancel(eng, x->ev);
      x->ev = 0;
      if (x->rate > 0.0)
        x->ev =
            pn_engine_schedule(eng, at_ns(ex, dur_ns(x->remaining_bytes / x->rate, 1), x->task), on_xfer_done, ex, xi);
    }
  }
  /* Nothing above leaves work for this instant: starts and rate changes only schedule events. */
  g_assert(ex->n_work == 0 && ex->n_dirty == 0 && !ex->mm_dirty);
  ex->settle_pending = false;
}

/* ---- validation ---- */

/* Finite and >= 0 (NaN fails both comparisons): two compares, no classification. */
static inline bool finite_nonneg(double x) { return x >= 0.0 && x <= DBL_MAX; }

/* Index in the peer's legs of the leg matching t's leg k (the o-th leg of t to that peer in the
 * same direction matches the o-th leg of the peer to t in the opposite direction), or -1. */
static int leg_mate(const PnTask *tasks, const PnP2pLeg *legs, PnTaskId t, int k)
{
  const PnTask *tk   = &tasks[t];
  const PnP2pLeg *tl = legs + tk->leg_first;
  const PnP2pLeg *l  = &tl[k];
  int ord            = 0;
  for (int j = 0; j < k; j++)
    if (tl[j].peer == l->peer && tl[j].is_send == l->is_send)
      ord++;
  const PnTask *p    = &tasks[l->peer];
  const PnP2pLeg *pl = legs + p->leg_first;
  for (int j = 0; j < p->n_legs; j++)
    if (pl[j].peer == t && pl[j].is_send != l->is_send && ord-- == 0)
      return j;
  return -1;
}

#define TASK_FMT "task %u '%s' (gpu %u, stream %u)"
#define TASK_ARGS(id, tk) (id), (tk)->label ? (tk)->label : "", (tk)->gpu, (unsigned)(tk)->stream

#define INVALID(...)                                                                                                   \
  do {                                                                                                                 \
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_INVALID, __VA_ARGS__);                                             \
    return FALSE;                                                                                                      \
  } while (0)

/* Checks the options and the profile (the graph is checked task by task in setup_tasks). */
static gboolean validate_profile(const PnHwProfile *hw, const PnExecOptions *opt, GError **error)
{
  if (opt->max_connections < 1 || opt->max_connections > 32)
    INVALID("max_connections (CUDA_DEVICE_MAX_CONNECTIONS) must be in 1..32, got %d", opt->max_connections);
  if (hw->sm_count < 1)
    INVALID("hardware profile '%s': sm_count must be >= 1, got %d", hw->name, hw->sm_count);
  if (!finite_nonneg(hw->kernel_launch_ns))
    INVALID("hardware profile '%s': kernel_launch_ns must be finite and >= 0", hw->name);
  const PnCurve *curves[3] = {&hw->gemm_sm_scaling, &hw->mem_sm_scaling, &hw->gemm_sm_limit_scaling};
  for (int c = 0; c < 3; c++)
    for (int i = 0; i < curves[c]->n; i++)
      if (!(curves[c]->y[i] > 0.0) || !isfinite(curves[c]->y[i]) || !isfinite(curves[c]->x[i]))
        INVALID("hardware profile '%s': %s point %d must be finite with y > 0", hw->name,
                c == 0   ? "gemm_sm_scaling"
                : c == 1 ? "mem_sm_scaling"
                         : "gemm_sm_limit_scaling",
                i);
  return TRUE;
}

/* One task's own fields against the graph and the profile; `n_deps` bounds its dependency range
 * (its legs are checked once the graph is complete and every task's own fields are known to be
 * sane: a later task may pair them, and a leg reads its peer). */
static gboolean validate_task(const Exec *ex, const PnTask *tasks, const PnTaskId *deps, uint32_t n_deps, PnTaskId t,
                              GError **error)
{
  const PnHwProfile *hw = ex->hw;
  const PnTask *tk      = &tasks[t];
  if (tk->gpu >= ex->n_gpus)
    INVALID(TASK_FMT ": gpu out of range (%u GPUs)", TASK_ARGS(t, tk), ex->n_gpus);
  if (tk->stream >= PN_STREAM_N)
    INVALID(TASK_FMT ": stream out of range (%d streams)", TASK_ARGS(t, tk), PN_STREAM_N);
  if (tk->kind > PN_TASK_DELAY)
    INVALID(TASK_FMT ": unknown kind %u", TASK_ARGS(t, tk), (unsigned)tk->kind);
  if ((uint64_t)tk->dep_first + tk->dep_count > n_deps)
    INVALID(TASK_FMT ": dependency range outside the graph's dependency array", TASK_ARGS(t, tk));
  for (uint32_t i = 0; i < tk->dep_count; i++)
    if (deps[tk->dep_first + i] >= t)
      INVALID(TASK_FMT ": depends on task %u, which is not an earlier task", TASK_ARGS(t, tk), deps[tk->dep_first + i]);
  if (tk->sms < 0)
    INVALID(TASK_FMT ": sms must be >= 0, got %d", TASK_ARGS(t, tk), tk->sms);
  if (!finite_nonneg(tk->work_ns) || !finite_nonneg(tk->latency_ns) || !finite_nonneg(tk->nvlink_bytes) ||
      !finite_nonneg(tk->nic_bytes) || !finite_nonneg(tk->max_bytes_per_ns))
    INVALID(TASK_FMT ": work_ns, latency_ns, nvlink_bytes, nic_bytes and max_bytes_per_ns must be finite and >= 0",
            TASK_ARGS(t, tk));
  if (tk->kind == PN_TASK_COMPUTE && tk->scaling > PN_SCALE_MEMORY)
    INVALID(TASK_FMT ": unknown SM scaling %u", TASK_ARGS(t, tk), (unsigned)tk->scaling);
  if (tk->kind == PN_TASK_COMM) {
    if (tk->nvlink_bytes > 0.0 && !(hw->nvlink_bytes_per_ns > 0.0 && isfinite(hw->nvlink_bytes_per_ns)))
      INVALID(TASK_FMT ": moves NVLink bytes but profile '%s' has no NVLink bandwidth", TASK_ARGS(t, tk), hw->name);
    if (tk->nic_bytes > 0.0 && !(hw->nic_bytes_per_ns > 0.0 && isfinite(hw->nic_bytes_per_ns)))
      INVALID(TASK_FMT ": moves NIC bytes but profile '%s' has no NIC bandwidth", TASK_ARGS(t, tk), hw->name);
  }
  return TRUE;
}

/* Whether a P2P task's PN_TASK_MAX_LEGS slots lie in the graph's leg array. */
static bool legs_in_array(const PnGraph *g, const PnTask *tk)
{
  return tk->leg_first != UINT32_MAX && (uint64_t)tk->leg_first + PN_TASK_MAX_LEGS <= g->legs->len;
}

/* A P2P task has 1 to PN_TASK_MAX_LEGS legs (known only once the graph is complete). */
static gboolean validate_leg_count(const PnTask *tasks, PnTaskId t, GError **error)
{
  const PnTask *tk = &tasks[t];
  if (tk->n_legs < 1 || tk->n_legs > PN_TASK_MAX_LEGS)
    INVALID(TASK_FMT ": a P2P task needs 1 to 4 legs, has %u (unpaired? see pn_graph_pair_p2p)", TASK_ARGS(t, tk),
            (unsigned)tk->n_legs);
  return TRUE;
}

/* A P2P task's legs: in the leg array, each matched by its peer with the same bytes and link. */
static gboolean validate_legs(const PnGraph *g, const PnHwProfile *hw, PnTaskId t, GError **error)
{
  const PnTask *tasks  = pn_graph_tasks(g);
  const PnP2pLeg *legs = (const PnP2pLeg *)(const void *)g->legs->data;
  const PnTask *tk     = &tasks[t];
  uint32_t n           = pn_graph_n_tasks(g);
  for (int k = 0; k < tk->n_legs; k++) {
    if (!legs_in_array(g, tk))
      INVALID(TASK_FMT ": its legs are not in the graph's leg array", TASK_ARGS(t, tk));
    const PnP2pLeg *l = &legs[tk->leg_first + k];
    if (l->peer >= n || l->peer == t || tasks[l->peer].kind != PN_TASK_P2P)
      INVALID(TASK_FMT ": leg %d's peer %u is not another P2P task", TASK_ARGS(t, tk), k, l->peer);
    if (!legs_in_array(g, &tasks[l->peer]))
      INVALID(TASK_FMT ": its legs are not in the graph's leg array", TASK_ARGS(l->peer, &tasks[l->peer]));
    int j = leg_mate(tasks, legs, t, k);
    if (j < 0)
      INVALID(TASK_FMT ": leg %d (%s task %u) has no matching %s leg on the peer", TASK_ARGS(t, tk), k,
              l->is_send ? "send to" : "recv from", l->peer, l->is_send ? "recv" : "send");
    const PnP2pLeg *m = &legs[tasks[l->peer].leg_first + j];
    if (!finite_nonneg(l->bytes) || m->bytes != l->bytes || m->over_nic != l->over_nic)
      INVALID(TASK_FMT ": leg %d disagrees with its peer task %u on bytes or over_nic (or bytes invalid)",
              TASK_ARGS(t, tk), k, l->peer);
    double bw = l->over_nic ? hw->nic_bytes_per_ns : hw->nvlink_bytes_per_ns;
    if (l->bytes > 0.0 && !(bw > 0.0 && isfinite(bw)))
      INVALID(TASK_FMT ": leg %d needs %s bandwidth, which profile '%s' lacks", TASK_ARGS(t, tk), k,
              l->over_nic ? "NIC" : "NVLink", hw->name);
  }
  return TRUE;
}
#undef INVALID

/* ---- setup / teardown ---- */

static void exec_free(Exec *ex)
{
  if (ex->gpus)
    for (uint32_t i = 0; i < ex->n_gpus; i++)
      g_free(ex->gpus[i].run);
  g_free(ex->gpus);
  g_free(ex->rt);
  g_free(ex->leg_xfer);
  g_free(ex->state);
  g_free(ex->xf);
  g_free(ex->qhead);
  g_free(ex->qcur);
  g_free(ex->qlink);
  g_free(ex->s_last);
  g_free(ex->q_last);
  g_free(ex->waiter);
  g_free(ex->work);
  g_free(ex->dirty_gpus);
  g_free(ex->flow_xfer);
  g_free(ex->shares);
  if (ex->p2p_ids)
    g_array_free(ex->p2p_ids, TRUE);
  if (ex->changed)
    g_array_free(ex->changed, TRUE);
  pn_maxmin_free(ex->mm);
  pn_engine_free(ex->eng);
}

/* Everything that does not depend on the tasks: the engine, the solver with four link resources
 * per GPU, the per-queue and per-stream registers. The per-task arrays start empty. */
static void exec_init(Exec *ex, uint32_t n_gpus, const PnHwProfile *hw, const PnExecOptions *opt)
{
  *ex                 = (Exec){.horizon_task = PN_TASK_NONE};
  ex->hw              = hw;
  ex->n_gpus          = n_gpus;
  ex->max_connections = opt->max_connections;
  ex->n_queues        = (uint32_t)MIN(opt->max_connections, PN_STREAM_N);
  ex->obs             = opt->observer;
  ex->fuse            = !opt->unfused;
  ex->eng             = pn_engine_new(PN_QUEUE_HEAP);
  pn_engine_set_instant_hook(ex->eng, settle, ex);
  ex->mm              = pn_maxmin_new();
  ex->gpus            = g_new0(GpuRt, n_gpus ? n_gpus : 1);
  ex->changed         = g_array_new(FALSE, FALSE, sizeof(PnFlowId));
  ex->p2p_ids         = g_array_new(FALSE, FALSE, sizeof(PnTaskId));
  ex->full_gemm       = pn_curve_eval(&hw->gemm_sm_scaling, (double)hw->sm_count, 0.0);
  ex->full_mem        = pn_curve_eval(&hw->mem_sm_scaling, (double)hw->sm_count, 0.0);
  ex->full_gemm_limit = pn_curve_eval(&hw->gemm_sm_limit_scaling, (double)hw->sm_count, 0.0);
  for (uint32_t i = 0; i < n_gpus; i++) {
    GpuRt *gp  = &ex->gpus[i];
    double nvl = hw->nvlink_bytes_per_ns, nic = hw->nic_bytes_per_ns;
    /* A missing link gets no resource; validation made sure no transfer needs it. */
    gp->res[RES_NVL_TX] = nvl > 0.0 ? pn_maxmin_add_resource(ex->mm, nvl) : -1;
    gp->res[RES_NVL_RX] = nvl > 0.0 ? pn_maxmin_add_resource(ex->mm, nvl) : -1;
    gp->res[RES_NIC_TX] = nic > 0.0 ? pn_maxmin_add_resource(ex->mm, nic) : -1;
    gp->res[RES_NIC_RX] = nic > 0.0 ? pn_maxmin_add_resource(ex->mm, nic) : -1;
  }
  size_t n_sq = (size_t)n_gpus * PN_STREAM_N;
  size_t n_gq = (size_t)n_gpus * ex->n_queues;
  ex->s_last  = g_new(uint32_t, n_sq ? n_sq : 1);
  ex->q_last  = g_new(uint32_t, n_gq ? n_gq : 1);
  ex->qhead   = g_new(uint32_t, n_gq ? n_gq : 1);
  ex->qcur    = g_new0(uint32_t, n_gq ? n_gq : 1);
  ex->qlink   = g_new(uint32_t, n_gq ? n_gq : 1);
  for (size_t i = 0; i < n_sq; i++)
    ex->s_last[i] = PN_TASK_NONE;
  for (size_t i = 0; i < n_gq; i++)
    ex->q_last[i] = ex->qhead[i] = ex->qlink[i] = PN_TASK_NONE;
}

/* The per-task arrays, for `n` tasks. Transfers: one per COMM task, one per P2P leg counted at
 * its lower-id end (at most two per P2P task: four legs, each shared with its peer), so at most
 * 2 * n; allocated at that bound and filled in place: growing it by doubling copied and faulted
 * it over and over (about 5 ms of a 400k-task setup); the untouched tail costs no memory. */
static void exec_reserve(Exec *ex, uint32_t n)
{
  ex->rt      = g_new(TaskRt, n);
  ex->state   = g_new0(uint8_t, n);
  ex->waiter  = g_new(uint32_t, n);
  ex->xf      = g_new(Xfer, 2 * (size_t)n + 1);
  ex->cap_set = n;
  pn_mem_hint_large(ex->rt, (size_t)n * sizeof(TaskRt));
  pn_mem_hint_large(ex->waiter, (size_t)n * sizeof(uint32_t));
}

/* Task d's end is waited for by a task other than its stream successor: the kernel issued after it
 * cannot continue its chain. */
static void mark_needed(Exec *ex, PnTaskId d)
{
  if (ex->state[d] & ST_NEEDED)
    return;
  ex->state[d] |= ST_NEEDED;
  PnTaskId c = ex->rt[d].queue_next;
  if (c != PN_TASK_NONE)
    ex->rt[c].cont = 0;
}

/* Checks the `n` tasks and builds their run records, in task order (the task array is the
 * largest thing in memory: each pass costs a trip through it, so this is the only one): each
 * task is checked, then its run record (stream predecessor, hardware-queue successor: issue
 * order = task id order within a GPU), its empty waiter list and its COMM transfer. `n_deps`
 * bounds the dependency ranges. A P2P task's legs are checked and numbered as transfers
 * afterwards (setup_legs): a leg reads its peer, which may be a later task. */
static gboolean setup_tasks(Exec *ex, const PnTask *tasks, const PnTaskId *deps, uint32_t n_deps, uint32_t n,
                            GError **error)
{
  exec_reserve(ex, n);
  const PnHwProfile *hw = ex->hw;
  for (PnTaskId t = 0; t < n; t++) {
    if (!validate_task(ex, tasks, deps, n_deps, t, error))
      return FALSE;
    const PnTask *tk = &tasks[t];
    TaskRt *r        = &ex->rt[t];
    *r               = (TaskRt){.stream_prev = PN_TASK_NONE,
                                .queue_next  = PN_TASK_NONE,
                                .gpu         = tk->gpu,
                                .dep_first   = tk->dep_first,
                                .dep_count   = tk->dep_count,
                                .sms         = tk->sms,
                                .kind        = tk->kind,
                                .scaling     = tk->scaling,
                                .sm_shape    = tk->sm_shape,
                                .stream      = tk->stream};
    switch (tk->kind) {
    case PN_TASK_COMPUTE:
      r->work = tk->work_ns + hw->kernel_launch_ns;
      break;
    case PN_TASK_DELAY:
      r->work = tk->work_ns;
      break;
    default:
      r->work = tk->latency_ns;
      if (ex->obs && ex->obs->tag)
        r->tag = ex->obs->tag(ex->obs->ctx, t, tk);
      break;
    }
    size_t sq      = (size_t)tk->gpu * PN_STREAM_N + tk->stream;
    r->stream_prev = ex->s_last[sq];
    ex->s_last[sq] = t;
    uint32_t q     = ex->max_connections == 1 ? 0 : (uint32_t)(tk->stream % ex->max_connections);
    r->gq          = tk->gpu * ex->n_queues + q;
    PnTaskId qp    = ex->q_last[r->gq]; /* issued just before t on its hardware queue */
    bool own_deps  = true;              /* t depends on nothing but its stream predecessor */
    bool waits_qp  = false;
    for (uint32_t i = 0; i < tk->dep_count; i++) {
      PnTaskId d = deps[tk->dep_first + i];
      waits_qp |= d == qp;
      if (d != r->stream_prev) {
        own_deps = false;
        mark_needed(ex, d);
      }
    }
    if (qp != PN_TASK_NONE) {
      TaskRt *qr     = &ex->rt[qp];
      qr->queue_next = t;
      if (qr->cont && tk->stream != qr->stream && !waits_qp)
        qr->cont = 0; /* t could start before qp ends: qp's start must be dispatched */
    } else {
      ex->qhead[r->gq] = t;
    }
    ex->q_last[r->gq] = t;
    r->cont = ex->fuse && tk->kind == PN_TASK_COMPUTE && own_deps && qp != PN_TASK_NONE && qp == r->stream_prev &&
              ex->rt[qp].kind == PN_TASK_COMPUTE && !(ex->state[qp] & ST_NEEDED);
    ex->waiter[t] = PN_TASK_NONE;
    if (tk->kind == PN_TASK_COMM) {
      ex->xf[ex->n_xfers++] = (Xfer){.flow      = -1,
                                     .task      = t,
                                     .peer      = PN_TASK_NONE,
                                     .nvl_bytes = tk->nvlink_bytes,
                                     .nic_bytes = tk->nic_bytes,
                                     .bound     = tk->max_bytes_per_ns};
      r->aux                = ex->n_xfers - 1;
    } else if (tk->kind == PN_TASK_P2P) {
      r->aux = tk->leg_first;
      g_array_append_val(ex->p2p_ids, t);
    }
  }
  return TRUE;
}

/* The legs of the complete graph: checked, then one transfer each, numbered when its lower-id end
 * is seen. */
static gboolean setup_legs(Exec *ex, const PnGraph *g, GError **error)
{
  ex->leg_xfer = g_new(uint32_t, g->legs->len ? g->legs->len : 1);
  for (guint i = 0; i < ex->p2p_ids->len; i++) { /* first every count: a leg reads its peer's */
    PnTaskId t = g_array_index(ex->p2p_ids, PnTaskId, i);
    if (!validate_leg_count(ex->tasks, t, error))
      return FALSE;
  }
  for (guint i = 0; i < ex->p2p_ids->len; i++) {
    PnTaskId t = g_array_index(ex->p2p_ids, PnTaskId, i);
    if (!validate_legs(g, ex->hw, t, error))
      return FALSE;
    const PnTask *tk = &ex->tasks[t];
    ex->rt[t].n_legs = tk->n_legs;
    for (int k = 0; k < tk->n_legs; k++) {
      const PnP2pLeg *l = &ex->legs[tk->leg_first + k];
      if (l->peer < t)
        continue; /* numbered when the peer was seen */
      int j = leg_mate(ex->tasks, ex->legs, t, k);
      g_assert(j >= 0);
      PnTaskId snd = l->is_send ? t : l->peer, rcv = l->is_send ? l->peer : t;
      double b1 = ex->tasks[snd].max_bytes_per_ns, b2 = ex->tasks[rcv].max_bytes_per_ns;
      g_assert(ex->n_xfers < 2 * (size_t)ex->cap_set + 1);
      ex->xf[ex->n_xfers++]                          = (Xfer){.flow      = -1,
                                                              .task      = snd,
                                                              .peer      = rcv,
                                                              .nvl_bytes = l->bytes,
                                                              .bound     = b1 > 0.0 && b2 > 0.0 ? fmin(b1, b2) : (b1 > 0.0 ? b1 : b2),
                                                              .over_nic  = l->over_nic};
      ex->leg_xfer[tk->leg_first + k]                = ex->n_xfers - 1;
      ex->leg_xfer[ex->tasks[l->peer].leg_first + j] = ex->n_xfers - 1;
    }
  }
  return TRUE;
}

/* ---- failure reports ---- */

static void describe_stuck(const Exec *ex, GString *why, PnTaskId t)
{
  const PnTask *tk = &ex->tasks[t];
  const TaskRt *r  = &ex->rt[t];
  if (st(ex, t) == ST_RUNNING) {
    if (tk->kind == PN_TASK_P2P)
      for (int k = 0; k < tk->n_legs; k++) {
        PnTaskId o = xfer_other(&ex->xf[ex->leg_xfer[r->aux + k]], t);
        if (st(ex, o) == ST_WAITING) {
          g_string_append_printf(why, "started at %" PRId64 " ns, waiting for its peer " TASK_FMT " to start",
                                 ex->times[t].start_ns, TASK_ARGS(o, &ex->tasks[o]));
          return;
        }
      }
    g_string_append(why, "running with no pending event");
    return;
  }
  for (PnTaskId p = t; p-- > 0;)
    if (ex->tasks[p].gpu == tk->gpu && ex->tasks[p].stream == tk->stream) {
      if (st(ex, p) != ST_ENDED) {
        g_string_append_printf(why, "waits for the previous task of its stream, " TASK_FMT,
                               TASK_ARGS(p, &ex->tasks[p]));
        return;
      }
      break;
    }
  for (uint32_t i = 0; i < tk->dep_count; i++) {
    PnTaskId d = ex->deps[tk->dep_first + i];
    if (st(ex, d) != ST_ENDED) {
      g_string_append_printf(why, "waits for dependency " TASK_FMT, TASK_ARGS(d, &ex->tasks[d]));
      return;
    }
  }
  PnTaskId h = ex->qhead[r->gq];
  if (h != t && h != PN_TASK_NONE) {
    g_string_append_printf(why, "queued behind " TASK_FMT " in its hardware queue (max_connections = %d)",
                           TASK_ARGS(h, &ex->tasks[h]), ex->max_connections);
    return;
  }
  g_string_append(why, "never dispatched");
}

/* ---- API ---- */

gboolean pn_exec_run(const PnGraph *g, const PnHwProfile *hw, const PnExecOptions *opt, PnExecResult *out,
                     GError **error)
{
  g_assert(g != NULL && hw != NULL && out != NULL);
  *out            = (PnExecResult){0};
  PnExecOptions o = opt ? *opt : (PnExecOptions){.max_connections = 8};
  if (!validate_profile(hw, &o, error))
    return FALSE;
  uint32_t n = pn_graph_n_tasks(g);
  if (n > 0 && g->n_gpus == 0) {
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_INVALID, "graph has %u tasks but no GPU", n);
    return FALSE;
  }
  Exec exec;
  Exec *ex = &exec;
  exec_init(ex, g->n_gpus, hw, &o);
  gboolean ok = setup_tasks(ex, pn_graph_tasks(g), pn_graph_deps(g), pn_graph_n_deps(g), n, error);
  if (ok)
    for (guint i = 0; i < o.n_keep_whole; i++)
      if (o.keep_whole[i] < n)
        mark_needed(ex, o.keep_whole[i]); /* its end ends a chain */
  ex->tasks   = pn_graph_tasks(g);
  ex->legs    = (const PnP2pLeg *)(const void *)g->legs->data;
  ex->deps    = pn_graph_deps(g);
  ex->n_tasks = n;
  if (!ok || !setup_legs(ex, g, error)) {
    exec_free(ex);
    return FALSE;
  }
  GArray *times = g_array_sized_new(FALSE, FALSE, sizeof(PnTaskTime), n);
  pn_mem_hint_large(times->data, (size_t)n * sizeof(PnTaskTime));
  g_array_set_size(times, n);
  ex->times = (PnTaskTime *)(void *)times->data;

  for (uint32_t q = 0; q < ex->n_gpus * ex->n_queues; q++)
    if (ex->qhead[q] != PN_TASK_NONE && ready(ex, ex->qhead[q], q))
      work_push(ex, ex->qhead[q]);

  uint64_t budget = o.event_budget ? o.event_budget : 64 * (uint64_t)n + 1000000;
  /* At one instant a task fires at most ~10 events (its latency or start, its completion, two per
   * P2P leg): more than that means time stopped advancing. */
  pn_engine_set_stall_limit(ex->eng, 24 * (uint64_t)n + 1000);
  g_autoptr(GError) e = NULL;
  ok                  = pn_engine_run(ex->eng, budget, &e);
  if (!ok) {
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_BUDGET,
                "execution stopped at t=%" PRId64 " ns with %u of %u tasks ended: %s%s", pn_engine_now(ex->eng),
                ex->n_ended, n, e->message,
                g_error_matches(e, PN_ENGINE_ERROR, PN_ENGINE_ERROR_BUDGET)
                    ? " (raise event_budget if the graph is just large)"
                    : "");
  } else if (ex->n_ended < n) {
    PnTaskId t = 0;
    while (st(ex, t) == ST_ENDED)
      t++;
    const PnTask *tk       = &ex->tasks[t];
    g_autoptr(GString) why = g_string_new(NULL);
    describe_stuck(ex, why, t);
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_DEADLOCK,
                "deadlock at t=%" PRId64 " ns: %u of %u tasks never ended; first stuck: " TASK_FMT
                ", microbatch %d: %s",
                pn_engine_now(ex->eng), n - ex->n_ended, n, TASK_ARGS(t, tk), tk->microbatch, why->str);
    ok = FALSE;
  } else if (ex->horizon_task != PN_TASK_NONE) {
    const PnTask *tk = &ex->tasks[ex->horizon_task];
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_HORIZON,
                "simulated time would pass %" PRId64 " ns (146 years): " TASK_FMT
                " takes that long (work %.3g ns, %.3g NVLink / %.3g NIC bytes); check the scenario's sizes and the "
                "profile's rates",
                PN_EXEC_HORIZON_NS, TASK_ARGS(ex->horizon_task, tk), tk->work_ns, tk->nvlink_bytes, tk->nic_bytes);
    ok = FALSE;
  }
  if (ok) {
    out->times       = times;
    out->makespan_ns = ex->makespan_ns;
    out->events      = pn_engine_events_fired(ex->eng);
  } else {
    g_array_free(times, TRUE);
  }
  exec_free(ex);
  return ok;
}

void pn_exec_result_clear(PnExecResult *r)
{
  if (!r)
    return;
  if (r->times)
    g_array_free(r->times, TRUE);
  *r = (PnExecResult){0};
}
