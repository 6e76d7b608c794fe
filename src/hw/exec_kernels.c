/* exec_kernels.c — compute kernels on a GPU's SMs, kernel chains, and the completion of a kernel
 * or a delay (exec-private.h).
 *
 * Compute sharing: avail = sm_count - SMs held by running COMM/P2P tasks (at least 1). Running
 * compute tasks water-fill it: each gets avail/n, a task whose sm_limit is below that gets its
 * limit and the rest is split again among the others. A task with s SMs runs at
 * curve(s)/curve(sm_count) (linear s/sm_count when the curve is empty), clamped to (0, 1], and
 * exactly 1 with all SMs. Work is kept in ns-at-full-speed (work_ns + kernel_launch_ns).
 *
 * Compute lost to SM contention (only for an observer with `contention`): over an interval in
 * which a GPU's rates and SM holders are constant, its running kernels progress at rates r_i; had
 * the SMs held by communication been free (avail = sm_count, the same kernels water-filling them)
 * they would progress at f_i. The GPU loses dt * (1 - sum r_i / sum f_i): the work not done,
 * converted to time at the free rate. For a lone kernel that is dt * (1 - r / f); for kernels side
 * by side, each one's loss weighted by its share of the free throughput, so it never exceeds dt and
 * the loss stays within the compute-busy time. A curve that is not monotone can give more speed
 * with fewer SMs: that counts as no loss, not as a gain. The loss is split among the classes of the
 * tasks holding SMs in proportion to the SMs each holds. It is brought up to date where rates are
 * set (a refresh, a kernel of a projected chain ending), not per event, and costs a second
 * water-filling only while communication holds SMs.
 */
#include "hw/exec-private.h"

#include "hw/hbm.h"

#include <string.h>

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

/* ---- compute lost to SM contention ---- */

/* Tells the observer what GPU `gpu` lost from lost.since_ns to `t`, and starts a new interval there,
 * losing the fraction `frac` (<= 0: none) with the same SM holders. */
static void lost_mark(Exec *ex, uint32_t gpu, PnTimeNs t, double frac)
{
  LostRt *l = &ex->gpus[gpu].lost;
  if (l->frac > 0.0 && t > l->since_ns) {
    double per_sm = (double)(t - l->since_ns) * l->frac / (double)l->held, by_cls[PN_CLASS_N];
    for (int c = 0; c < PN_CLASS_N; c++)
      by_cls[c] = per_sm * (double)l->by_cls[c];
    ex->obs->contention(ex->obs->ctx, gpu, l->since_ns, t, by_cls);
  }
  l->since_ns = t;
  l->frac     = frac > 0.0 ? frac : 0.0;
}

/* Whether a refresh of GPU `g`, `avail` SMs free, must bring the loss up to date: communication
 * holds SMs, or the fraction lost until now is not 0 (a skipped refresh leaves since_ns behind,
 * which matters to no report while the fraction stays 0). */
static inline bool lost_due(const Exec *ex, const GpuRt *g, double avail)
{
  return ex->track_lost && (avail < (double)ex->hw->sm_count || g->lost.frac > 0.0);
}

/* A refresh: the interval ends now, and the next one has the SM holders of now (read only while
 * some are held: nothing is lost otherwise). */
static void lost_refresh(Exec *ex, uint32_t gpu, double frac)
{
  GpuRt *g = &ex->gpus[gpu];
  lost_mark(ex, gpu, pn_engine_now(ex->eng), frac);
  g->lost.held = g->comm_sms;
  if (g->comm_sms > 0)
    memcpy(g->lost.by_cls, g->cls_sms, sizeof g->lost.by_cls);
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

/* ---- HBM ----
 *
 * With HBM sharing on (hw/hbm.h), a GPU's HBM is shared by its running kernels (kernel i at SM
 * share s_i and SM rate r_i presses pi_i * s_i and needs r_i * D_i, D_i its demand at full
 * speed, at most what it would get alone) and its transfers, one user here: their summed
 * pressure and need (exec_links.c). Each kernel runs at r_i * served_i / need_i; the transfers
 * are served the same fraction of their need each, which bounds their flows in the max-min solver
 * (pn__hbm_serve). Needs and pressures are what each would use unshared, so the fractions change
 * only when a kernel or a transfer starts or ends on the GPU (each marks it). A kernel alone, no
 * transfer beside it, is never slowed: a lone chain's rates are its SM rates, projected as
 * before. */

/* Shares GPU `g`'s HBM among its n running kernels (SM shares sms[i], SM rates rate[i]) and its
 * transfers: phi[i] = the fraction of its need kernel i is served; the transfers are told theirs. */
static void hbm_fractions(Exec *ex, uint32_t gpu, const double *sms, const double *rate, double *phi)
{
  GpuRt *g   = &ex->gpus[gpu];
  uint32_t n = g->n_run;
  if (ex->cap_hbm_users < n + 1) {
    ex->cap_hbm_users = 2 * (n + 1);
    ex->hbm_users     = g_renew(PnHbmUser, ex->hbm_users, ex->cap_hbm_users);
  }
  PnHbmUser *u = ex->hbm_users;
  double w_all = g->comm_w, need_all = g->comm_hbm;
  for (uint32_t i = 0; i < n; i++) {
    PnTaskId t      = g->run[i].task;
    const TaskRt *k = &ex->rt[t];
    u[i]            = (PnHbmUser){.w = (double)k->hbm_pi * sms[i], .need = rate[i] * (double)k->hbm_d};
    w_all += u[i].w;
    need_all += u[i].need;
  }
  double fx   = 1.0;
  g->k_need   = need_all - g->comm_hbm;
  g->k_w      = w_all - g->comm_w;
  g->hbm_free = need_all <= hbm_at(ex, w_all);
  if (g->hbm_free) { /* everyone gets what it needs (most refreshes) */
    for (uint32_t i = 0; i < n; i++)
      phi[i] = 1.0;
  } else {
    for (uint32_t i = 0; i < n; i++)
      u[i].need = fmin(u[i].need, hbm_at(ex, u[i].w));
    u[n] = (PnHbmUser){.w = g->comm_w, .need = g->comm_hbm};
    pn_hbm_share(ex->hw, u, (int)n + 1);
    for (uint32_t i = 0; i < n; i++)
      phi[i] = u[i].need > 0.0 && u[i].served < u[i].need ? u[i].served / u[i].need : 1.0;
    if (u[n].need > 0.0 && u[n].served < u[n].need)
      fx = fmax(u[n].served / u[n].need, 1e-9);
  }
  if (fx != g->hbm_f)
    pn__hbm_serve(ex, gpu, fx);
}

/* The SM rate kernel `s` gets alone on its GPU with `avail` SMs free: refresh_gpu's one-kernel case. */
/* The SMs kernel `k` runs on alone with `avail` free: its own sm_limit when below them. */
static inline double alone_sms(const TaskRt *k, double avail)
{
  double lim = (double)k->sms;
  return lim > 0.0 && lim < avail ? lim : avail;
}

static inline double alone_sm_rate(Exec *ex, PnTaskId s, double avail)
{
  const TaskRt *k = &ex->rt[s];
  double sms      = alone_sms(k, avail);
  return sm_rate(ex, k, sms, sms < avail);
}

/* The fraction lost by kernel `s`, alone on its GPU at `rate` with `avail` SMs free: none when
 * its own sm_limit holds it either way; all SMs free, an unlimited kernel runs at exactly 1. */
static double lost_alone(Exec *ex, PnTaskId s, double rate, double avail)
{
  const TaskRt *k = &ex->rt[s];
  double n_sm = (double)ex->hw->sm_count, lim = (double)k->sms;
  if (avail >= n_sm || (lim > 0.0 && lim < avail))
    return 0.0;
  return 1.0 - rate / (lim > 0.0 && lim < n_sm ? sm_rate(ex, k, lim, true) : 1.0);
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
    /* projected: no transfer shares its GPU's HBM, and a lone kernel never asks more than it has */
    double sm = alone_sm_rate(ex, r->task, r->avail);
    r->rate   = sm;
    if (ex->track_lost && r->avail < (double)ex->hw->sm_count) /* alone on its GPU since the last refresh */
      lost_mark(ex, ex->rt[r->task].gpu, end, lost_alone(ex, r->task, sm, r->avail));
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
      kr  = alone_sm_rate(ex, s, avail); /* no transfer shares the HBM when projected (chain_advance) */
    }
    r->projected = true;
    r->avail     = avail;
    r->ev        = pn_engine_schedule(ex->eng, end, pn__on_task_done, ex, r->last);
    return;
  }
one_kernel:
  r->ev =
      pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(r->remaining_ns / rate, 1), r->task), pn__on_task_done, ex, r->task);
}

/* Water-fills `avail` SMs among a GPU's running compute tasks: share[i] is the sm_limit of a task
 * capped by it, -1 for the others, which get the level returned. */
static double water_fill(const GpuRt *g, double avail, double *share)
{
  uint32_t n = g->n_run;
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
  return level;
}

/* The summed SM rate of a GPU's running compute tasks with `avail` SMs free (`share`: scratch of
 * 3 * n_run: water_fill's, then their SM shares, SM rates and HBM fractions); `set`: each task is
 * moved to its rate, HBM sharing included. */
static double fill_rates(Exec *ex, GpuRt *g, double avail, double *share, bool set)
{
  uint32_t n   = g->n_run;
  double *rate = share + n, *phi = share + 2 * n;
  double level = water_fill(g, avail, share), sum = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    bool own = share[i] >= 0.0;
    share[i] = own ? share[i] : level;
    rate[i]  = sm_rate(ex, &ex->rt[g->run[i].task], share[i], own);
    sum += rate[i];
  }
  if (set) {
    if (ex->hbm_on)
      hbm_fractions(ex, (uint32_t)(g - ex->gpus), share, rate, phi);
    for (uint32_t i = 0; i < n; i++)
      run_set_rate(ex, &g->run[i], ex->hbm_on ? rate[i] * phi[i] : rate[i], false, 0.0);
  }
  return sum;
}

/* Water-fills the free SMs of a GPU among its running compute tasks and updates their rates. The
 * loss to SM contention is brought up to date only while communication holds SMs or the interval
 * before lost something (asked once the chains are up to now: their kernels change the fraction):
 * a GPU that loses nothing costs one test. */
void pn__refresh_gpu(Exec *ex, uint32_t gpu)
{
  GpuRt *g     = &ex->gpus[gpu];
  g->dirty     = false;
  uint32_t n   = g->n_run;
  double n_sm  = (double)ex->hw->sm_count;
  double avail = n_sm - (double)g->comm_sms;
  if (avail < 1.0)
    avail = 1.0;
  if (n == 0) {
    if (lost_due(ex, g, avail))
      lost_refresh(ex, gpu, 0.0);
    if (ex->hbm_on) {
      g->k_need = g->k_w = 0.0;
      g->hbm_free        = true; /* transfers alone: each presses and needs what it would alone */
      if (g->hbm_f != 1.0)
        pn__hbm_serve(ex, gpu, 1.0);
    }
    return;
  }
  if (n == 1) { /* most refreshes (one kernel on the compute stream): the water-filling below, unrolled */
    Run *r = &g->run[0];
    chain_advance(ex, r);
    double sm = alone_sm_rate(ex, r->task, avail), phi = 1.0;
    bool hbm = ex->hbm_on && g->comm_hbm > 0.0; /* alone, a kernel is never slowed by HBM */
    if (hbm) {
      double sms = alone_sms(&ex->rt[r->task], avail);
      hbm_fractions(ex, gpu, &sms, &sm, &phi);
    } else if (ex->hbm_on) { /* alone: never slowed (its need is at most what it would get) */
      const TaskRt *k = &ex->rt[r->task];
      g->k_need       = sm * (double)k->hbm_d;
      g->k_w          = (double)k->hbm_pi * alone_sms(k, avail);
      g->hbm_free     = true;
      if (g->hbm_f != 1.0)
        pn__hbm_serve(ex, gpu, 1.0);
    }
    if (lost_due(ex, g, avail))
      lost_refresh(ex, gpu, lost_alone(ex, r->task, sm, avail));
    /* a chain is projected unless transfers share the HBM: each of its kernels changes what they may use */
    run_set_rate(ex, r, sm * phi, !hbm, avail);
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    chain_advance(ex, &g->run[i]); /* which kernel of a chain runs decides its sm_limit */
  if (ex->cap_shares < 3 * n) {
    ex->cap_shares = 6 * n;
    ex->shares     = g_renew(double, ex->shares, ex->cap_shares);
  }
  double rates = fill_rates(ex, g, avail, ex->shares, true);
  if (lost_due(ex, g, avail))
    lost_refresh(ex, gpu, avail < n_sm ? 1.0 - rates / fill_rates(ex, g, n_sm, ex->shares, false) : 0.0);
}

/* ---- completion ---- */

void pn__on_task_done(PnEngine *eng, void *ctx, uint64_t arg)
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
  pn__end_task(ex, t);
}
