/* exec_links.c — transfers on the links (exec-private.h): a COMM task's data moves as one max-min
 * flow once its latency has elapsed, a P2P leg's once both its ends have started and the larger of
 * their latencies has elapsed; settle re-solves the sharing and moves the completions. A GPU's NIC
 * resource stands for its rail NIC, which it shares with pn_hw_profile_gpus_per_nic GPUs of its
 * node sending the same traffic at the same time: each byte the GPU moves across nodes costs the
 * NIC that many.
 *
 * HBM (exec.h, "HBM"): with HBM sharing on, a transfer also needs the HBM of each GPU it runs on,
 * `hbm_coef` HBM bytes per nominal byte, from NCCL's data path (src/device/prims_simple.h
 * and the transports): a collective's peer writes each chunk into this GPU's FIFO buffer, the
 * kernel reads it there and writes it to the output or reads the local input to reduce it into the
 * next send: 3 HBM bytes per wire byte received, at least; the profile's
 * hbm_share.nccl_bytes_per_busbw_byte, measured beside copy kernels on two H100s (calib/hbm.c),
 * replaces it: 3.84 on two H100s, NCCL's staging adding traffic to some chunks
 * (pn_hbm_nccl_bytes_per_byte). A userbuffers or copy
 * transfer writes straight into the peer's buffer: 1 read where it is sent, 1 write where it lands,
 * and each GPU both sends and receives: 2 (DIRECT_HBM_PER_WIRE_BYTE). A P2P leg over NVLink: 4
 * touches per byte between its two ends (the sender's copy into a FIFO and the receiver's copy
 * out, or the receiver's copy out of the sender's FIFO into its FIFO-less buffer: 2 each); across
 * nodes each end copies once and the NIC reads or writes once: 3 each. Its demand on a GPU's HBM,
 * what it asks before any sharing, is hbm_coef times the rate it could run at alone: its bound, or
 * the tightest of its links. */
#include "hw/exec-private.h"

#define DIRECT_HBM_PER_WIRE_BYTE 2.0
#define LEG_NVL_HBM_PER_BYTE 2.0
#define LEG_NIC_HBM_PER_BYTE 3.0

double pn__comm_hbm_coef(const PnHwProfile *hw, const PnTask *tk)
{
  double nvl = tk->nvlink_bytes, nic = tk->nic_bytes, total = fmax(nvl, nic);
  if (!(total > 0.0))
    return 0.0;
  double per = tk->coll.bytes > 0.0f ? pn_hbm_nccl_bytes_per_byte(hw) : DIRECT_HBM_PER_WIRE_BYTE;
  return per * (nvl + nic) / total; /* nominal unit: a byte on the dominant link */
}

double pn__leg_hbm_coef(bool over_nic) { return over_nic ? LEG_NIC_HBM_PER_BYTE : LEG_NVL_HBM_PER_BYTE; }

static void on_leg_ready(PnEngine *eng, void *ctx, uint64_t arg);
static void on_xfer_done(PnEngine *eng, void *ctx, uint64_t arg);

/* The observer hears of a P2P task when its first leg starts. */
static void open_p2p(Exec *ex, PnTaskId t)
{
  if (ex->obs && !(ex->state[t] & ST_OPENED)) {
    ex->state[t] |= ST_OPENED;
    const TaskRt *r = &ex->rt[t];
    ex->obs->open(ex->obs->ctx, t, r->gpu, r->stream, r->kind, r->tag, pn_engine_now(ex->eng));
  }
}

void pn__start_leg(Exec *ex, uint32_t xi)
{
  const Xfer *x = &ex->xf[xi];
  open_p2p(ex, x->task);
  open_p2p(ex, x->peer);
  double lat    = fmax(ex->rt[x->task].work, ex->rt[x->peer].work);
  ex->xf[xi].ev = pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(lat, 0), x->task), on_leg_ready, ex, xi);
}

/* The rate the flow of transfer `xi` may reach: its own bound, and the fraction of its HBM need it
 * is served at its ends (its need is hbm_coef times the rate it could run at alone). */
static double hbm_bound(const Exec *ex, uint32_t xi)
{
  const Xfer *x    = &ex->xf[xi];
  const XferHbm *h = &ex->xf[xi].h;
  double f         = fmin(h->f[0], h->f[1]);
  if (!(f < 1.0))
    return x->bound;
  double b = f * h->d / (double)x->hbm_coef;
  return x->bound > 0.0 ? fmin(x->bound, b) : b;
}

void pn__hbm_serve(Exec *ex, uint32_t gpu, double f)
{
  GpuRt *g = &ex->gpus[gpu];
  g->hbm_f = f;
  for (uint32_t i = 0; i < g->n_hbm_slots; i++) {
    if (!g->hbm_slots[i].live)
      continue;
    uint32_t xi                    = g->hbm_slots[i].xi;
    XferHbm *h                     = &ex->xf[xi].h;
    double b                       = hbm_bound(ex, xi);
    h->f[h->gpu[0] == gpu ? 0 : 1] = (float)f;
    double nb                      = hbm_bound(ex, xi);
    if (nb != b) {
      pn_maxmin_set_bound(ex->mm, ex->xf[xi].flow, nb);
      ex->mm_dirty = true;
      need_settle(ex);
    }
  }
}

/* A transfer's need and pressure join (sign 1) or leave (-1) the HBM of its GPU at end `end`;
 * the kernels there are refreshed unless nothing can change for them. */
static void hbm_join_gpu(Exec *ex, uint32_t xi, int end, double sign)
{
  XferHbm *h   = &ex->xf[xi].h;
  uint32_t gpu = h->gpu[end];
  GpuRt *g     = &ex->gpus[gpu];
  g->comm_hbm += sign * h->d;
  g->comm_w += sign * (double)h->w[end];
  if (sign > 0.0) {
    uint32_t slot;
    if (g->n_hbm_free_slots > 0) {
      slot = g->hbm_free_slots[--g->n_hbm_free_slots];
    } else {
      slot = g->n_hbm_slots;
      VEC_PUSH(g->hbm_slots, g->n_hbm_slots, g->cap_hbm_slots, ((HbmSlot){0}));
    }
    g->hbm_slots[slot] = (HbmSlot){.xi = xi, .live = true};
    h->slot[end]       = slot;
    h->f[end]          = (float)g->hbm_f;
    g->n_hbm_live++;
  } else {
    g->hbm_slots[h->slot[end]].live = false;
    VEC_PUSH(g->hbm_free_slots, g->n_hbm_free_slots, g->cap_hbm_free_slots, h->slot[end]);
    g->n_hbm_live--;
  }
  if (g->n_hbm_live == 0) /* rounding: none left when none flows */
    g->comm_hbm = g->comm_w = 0.0;
  /* Its kernels need a refresh unless every user stays served all it needs: one leaving a GPU where
   * all were, or joining one where all still are (sum of needs within what the summed pressure
   * gets); a projected chain is re-decided whatever (it is projected only with no transfer). */
  bool free = g->hbm_free && (sign < 0.0 || g->k_need + g->comm_hbm <= hbm_at(ex, g->k_w + g->comm_w));
  if (g->n_run > 0 && (!free || (g->n_run == 1 && g->run[0].projected)))
    mark_gpu(ex, gpu);
}

/* Joins (1) or leaves (-1) its GPUs' HBM. Joining, `sms` are the SMs its kernels hold at each end:
 * its pressure there is those SMs, each copying as a streaming kernel's CTA does, and no less than
 * what it needs at the unloaded rate (Little's law: a copy engine's transfer holds no SM). */
static void hbm_join(Exec *ex, uint32_t xi, double sign, uint32_t g0, uint32_t g1, const int sms[2])
{
  XferHbm *h = &ex->xf[xi].h;
  if (sign > 0.0) {
    h->gpu[0] = g0;
    h->gpu[1] = g1;
    for (int e = 0; e < 2; e++)
      h->w[e] = (float)pn_hbm_transfer_pressure(ex->hw, sms[e], h->d);
  }
  hbm_join_gpu(ex, xi, 0, sign);
  if (h->gpu[1] != h->gpu[0])
    hbm_join_gpu(ex, xi, 1, sign);
}

/* Starts the transfer of an xfer as a max-min flow (the latency has elapsed); with HBM sharing it
 * joins its GPUs' HBM, whose share may bound it. */
static void add_flow(Exec *ex, uint32_t xi, int n, const PnResourceId *res, const double *coef, double total,
                     double bound)
{
  Xfer *x = &ex->xf[xi];
  if (ex->hbm_on && x->hbm_coef > 0.0f) {
    double alone = bound > 0.0 ? bound : HUGE_VAL; /* the rate its links would give it alone */
    for (int k = 0; k < n; k++)
      alone = fmin(alone, pn_maxmin_resource_capacity(ex->mm, res[k]) / coef[k]);
    XferHbm *h = &ex->xf[xi].h;
    h->d       = (double)x->hbm_coef * alone;
    h->f[0] = h->f[1] = 1.0f;
    const TaskRt *a = &ex->rt[x->task], *b = x->peer == PN_TASK_NONE ? a : &ex->rt[x->peer];
    hbm_join(ex, xi, 1.0, a->gpu, b->gpu, (const int[2]){a->sms, b->sms});
    bound = hbm_bound(ex, xi);
  }
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
      pn__end_task(ex, ends[i]);
}

void pn__on_comm_ready(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex      = ctx;
  PnTaskId t    = (PnTaskId)arg;
  uint32_t xi   = ex->rt[t].aux;
  const Xfer *x = &ex->xf[xi];
  double nvl = x->nvl_bytes, nic = x->nic_bytes;
  double total = fmax(nvl, nic);
  if (!(total > 0.0)) {
    pn__end_task(ex, t);
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
    double share = pn_hw_profile_gpus_per_nic(ex->hw);
    res[n] = g->res[RES_NIC_TX], coef[n++] = nic / total * share;
    res[n] = g->res[RES_NIC_RX], coef[n++] = nic / total * share;
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
  double share        = x->over_nic ? pn_hw_profile_gpus_per_nic(ex->hw) : 1.0;
  double coef[2]      = {share, share};
  add_flow(ex, xi, 2, res, coef, x->nvl_bytes, x->bound);
}

static void on_xfer_done(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex    = ctx;
  uint32_t xi = (uint32_t)arg;
  Xfer *x     = &ex->xf[xi];
  pn_maxmin_remove_flow(ex->mm, x->flow);
  if (ex->hbm_on && x->hbm_coef > 0.0f)
    hbm_join(ex, xi, -1.0, 0, 0, NULL);
  x->flow      = -1;
  x->ev        = 0;
  ex->mm_dirty = true;
  need_settle(ex);
  if (x->peer == PN_TASK_NONE)
    pn__end_task(ex, x->task);
  else
    leg_done(ex, xi);
}

/* Settle's third step: the link sharing is solved again and the transfers whose rate changed
 * have their completions moved. */
void pn__solve_links(Exec *ex)
{
  ex->mm_dirty = false;
  pn_maxmin_solve(ex->mm, ex->changed);
  PnTimeNs now = pn_engine_now(ex->eng);
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
      pn_engine_cancel(ex->eng, x->ev);
    x->ev = 0;
    if (x->rate > 0.0)
      x->ev = pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(x->remaining_bytes / x->rate, 1), x->task), on_xfer_done, ex,
                                 xi);
  }
}
