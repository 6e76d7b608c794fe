/* exec_setup.c — before the run (exec-private.h): the options, the profile and the graph are
 * checked, and the run state is built in one pass over the tasks, then one over the P2P legs. */
#include "hw/exec-private.h"

#include <float.h>

#include "core/mem.h"

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
  bool has_work = tk->kind == PN_TASK_COMPUTE || tk->kind == PN_TASK_DELAY; /* a COMM task's slot holds coll */
  if ((has_work && !finite_nonneg(tk->work_ns)) || !finite_nonneg(tk->latency_ns) || !finite_nonneg(tk->nvlink_bytes) ||
      !finite_nonneg(tk->nic_bytes) || !finite_nonneg(tk->max_bytes_per_ns))
    INVALID(TASK_FMT ": work_ns, latency_ns, nvlink_bytes, nic_bytes and max_bytes_per_ns must be finite and >= 0",
            TASK_ARGS(t, tk));
  if (!finite_nonneg(tk->host_ns) || tk->host_sync > PN_HOST_SYNC_DEVICE)
    INVALID(TASK_FMT ": host_ns must be finite and >= 0 and host_sync a PnHostSync", TASK_ARGS(t, tk));
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

void pn__exec_free(Exec *ex)
{
  if (ex->gpus)
    for (uint32_t i = 0; i < ex->n_gpus; i++) {
      g_free(ex->gpus[i].run);
      g_free(ex->gpus[i].hbm_slots);
      g_free(ex->gpus[i].hbm_free_slots);
    }
  g_free(ex->gpus);
  g_free(ex->rt);

  g_free(ex->hbm_tab);
  g_free(ex->hbm_users);
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
  g_free(ex->hosts);
  g_free(ex->launch_ns);
  g_free(ex->gpu_next);
  g_free(ex->host_since);
  if (ex->host_waits)
    g_array_free(ex->host_waits, TRUE);
  g_free(ex->shares);
  if (ex->p2p_ids)
    g_array_free(ex->p2p_ids, TRUE);
  if (ex->changed)
    g_array_free(ex->changed, TRUE);
  pn_maxmin_free(ex->mm);
  pn_engine_free(ex->eng);
}

/* Everything that does not depend on the tasks: the engine (pn_exec_run gives it its hook), the solver with four link
 * resources per GPU, the per-queue and per-stream registers. The per-task arrays start empty. */
static void exec_init(Exec *ex, uint32_t n_gpus, const PnHwProfile *hw, const PnExecOptions *opt)
{
  *ex                 = (Exec){.horizon_task = PN_TASK_NONE};
  ex->hw              = hw;
  ex->n_gpus          = n_gpus;
  ex->max_connections = opt->max_connections;
  ex->n_queues        = (uint32_t)MIN(opt->max_connections, PN_STREAM_N);
  ex->obs             = opt->observer;
  ex->fuse            = !opt->unfused;
  ex->track_lost      = opt->observer && opt->observer->contention;
  ex->eng             = pn_engine_new(PN_QUEUE_HEAP);
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
    gp->hbm_f           = 1.0;
    gp->hbm_free        = true;
  }
  ex->hbm_on = hw->hbm_share.on && hw->hbm_share.pressure.n > 0 && pn_hbm_unloaded(hw) > 0.0;
  if (ex->hbm_on) {
    const PnCurve *c = &hw->hbm_share.pressure;
    ex->n_hbm_tab    = (uint32_t)ceil(c->x[c->n - 1] / PN_EXEC_HBM_STEP) + 2;
    ex->hbm_tab      = g_new(double, ex->n_hbm_tab);
    for (uint32_t i = 0; i < ex->n_hbm_tab; i++)
      ex->hbm_tab[i] = pn_hbm_capacity(hw, i * PN_EXEC_HBM_STEP);
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
      r->work = tk->work_ns + (tk->graphed ? 0.0 : hw->kernel_launch_ns); /* a graph replays without the gap */
      if (ex->hbm_on && tk->hbm_bytes > 0.0f && r->work > 0.0) {
        r->hbm_d  = (float)((double)tk->hbm_bytes / r->work);
        r->hbm_pi = tk->hbm_pi > 0.0f ? tk->hbm_pi : 1.0f;
      }
      break;
    case PN_TASK_DELAY:
      r->work = tk->work_ns;
      break;
    default:
      r->work = tk->latency_ns;
      r->cls  = (uint8_t)tk->cls < PN_CLASS_N ? tk->cls : (int8_t)PN_CLASS_NONE;
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
    ex->host_on |= tk->host_ns > 0.0f || tk->host_sync != PN_HOST_SYNC_NONE;
    if (tk->kind == PN_TASK_COMM) {
      ex->xf[ex->n_xfers++] = (Xfer){.flow      = -1,
                                     .task      = t,
                                     .peer      = PN_TASK_NONE,
                                     .nvl_bytes = tk->nvlink_bytes,
                                     .nic_bytes = tk->nic_bytes,
                                     .bound     = tk->max_bytes_per_ns,
                                     .hbm_coef  = (float)pn__comm_hbm_coef(hw, tk)};
      r->aux                = ex->n_xfers - 1;
    } else if (tk->kind == PN_TASK_P2P) {
      r->aux = tk->leg_first;
      g_array_append_val(ex->p2p_ids, t);
    }
  }
  return TRUE;
}

/* The host threads, when some task costs its host something (exec_host.c): each GPU's tasks linked
 * in issue order, none launched yet. Kernel chains are off then: a chain's kernels start as the one
 * before ends, which a launch that comes later would contradict. */
static void setup_hosts(Exec *ex, const PnTask *tasks, uint32_t n)
{
  uint32_t n_gq  = ex->n_gpus * ex->n_queues;
  ex->hosts      = g_new0(HostRt, ex->n_gpus);
  ex->launch_ns  = g_new(PnTimeNs, n ? n : 1);
  ex->gpu_next   = g_new(uint32_t, n ? n : 1);
  ex->host_since = g_new(PnTimeNs, n_gq ? n_gq : 1);
  ex->host_waits = g_array_new(FALSE, FALSE, sizeof(PnHostWait));
  for (uint32_t q = 0; q < n_gq; q++)
    ex->host_since[q] = -1;
  for (uint32_t g = 0; g < ex->n_gpus; g++)
    ex->hosts[g] = (HostRt){.next = PN_TASK_NONE, .blocked = PN_TASK_NONE, .waiters = PN_TASK_NONE};
  for (PnTaskId t = n; t-- > 0;) { /* backwards: each GPU's `next` ends at its first task */
    HostRt *h        = &ex->hosts[tasks[t].gpu];
    ex->gpu_next[t]  = h->next;
    h->next          = t;
    ex->launch_ns[t] = PN_EXEC_UNLAUNCHED;
    ex->rt[t].cont   = 0;
  }
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
                                                              .over_nic  = l->over_nic,
                                                              .hbm_coef  = (float)pn__leg_hbm_coef(l->over_nic)};
      ex->leg_xfer[tk->leg_first + k]                = ex->n_xfers - 1;
      ex->leg_xfer[ex->tasks[l->peer].leg_first + j] = ex->n_xfers - 1;
    }
  }
  return TRUE;
}

/* The run state for `g` under `opt` (its defaults filled in): the options, the profile and every
 * task checked, the run records built. On failure `error` says why and nothing is left to free. */
gboolean pn__exec_setup(Exec *ex, const PnGraph *g, const PnHwProfile *hw, const PnExecOptions *opt, GError **error)
{
  if (!validate_profile(hw, opt, error))
    return FALSE;
  uint32_t n = pn_graph_n_tasks(g);
  if (n > 0 && g->n_gpus == 0) {
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_INVALID, "graph has %u tasks but no GPU", n);
    return FALSE;
  }
  exec_init(ex, g->n_gpus, hw, opt);
  gboolean ok = setup_tasks(ex, pn_graph_tasks(g), pn_graph_deps(g), pn_graph_n_deps(g), n, error);
  if (ok && ex->host_on)
    setup_hosts(ex, pn_graph_tasks(g), n);
  if (ok)
    for (guint i = 0; i < opt->n_keep_whole; i++)
      if (opt->keep_whole[i] < n)
        mark_needed(ex, opt->keep_whole[i]); /* its end ends a chain */
  ex->tasks   = pn_graph_tasks(g);
  ex->legs    = (const PnP2pLeg *)(const void *)g->legs->data;
  ex->deps    = pn_graph_deps(g);
  ex->n_tasks = n;
  if (!ok || !setup_legs(ex, g, error)) {
    pn__exec_free(ex);
    return FALSE;
  }
  return TRUE;
}
