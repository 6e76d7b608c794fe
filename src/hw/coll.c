/* coll.c — collective cost on the span of its group (see coll.h for the model). */
#include "hw/coll.h"

/* PAT's per-rank latency term in NCCL's tuner (src/graph/tuning.cc: "+ nRanks * 2.8; Still a
 * linear part"). */
#define PN_NCCL_PAT_RANK_NS 2800.0

#include <math.h>

const char *pn_coll_kind_name(PnCollKind k)
{
  static const char *const names[] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all", "send_recv"};
  return (unsigned)k < G_N_ELEMENTS(names) ? names[k] : "?";
}

double pn_coll_busbw_factor(PnCollKind k, int64_t ranks)
{
  double n = (double)MAX(ranks, 1);
  switch (k) {
  case PN_COLL_ALL_REDUCE:
    return 2.0 * (n - 1.0) / n;
  case PN_COLL_SEND_RECV:
    return 1.0;
  default:
    return (n - 1.0) / n;
  }
}

static int clamp_ctas(int dflt, int min_ctas, int max_ctas)
{
  int c = dflt;
  if (min_ctas > 0 && c < min_ctas)
    c = min_ctas;
  if (max_ctas > 0 && c > max_ctas)
    c = max_ctas;
  return c < 1 ? 1 : c;
}

/* Time of `bytes` on one channel count's rows (ascending size): interpolated in log(size); sizes
 * below the smallest measured take its time, sizes above grow at the largest one's bandwidth. */
static double time_at(const PnCollPoint *pts, int n, double bytes)
{
  /* pts: one channel count, ascending size */
  if (bytes <= pts[0].bytes)
    return pts[0].ns;
  if (bytes >= pts[n - 1].bytes)
    return pts[n - 1].ns * bytes / pts[n - 1].bytes;
  int i = 1;
  while (pts[i].bytes < bytes)
    i++;
  double f = log(bytes / pts[i - 1].bytes) / log(pts[i].bytes / pts[i - 1].bytes);
  return exp(log(pts[i - 1].ns) + f * log(pts[i].ns / pts[i - 1].ns));
}

static gint point_cmp(gconstpointer a, gconstpointer b)
{
  const PnCollPoint *x = a, *y = b;
  if (x->ctas != y->ctas)
    return x->ctas < y->ctas ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes ? 1 : 0;
}

/* One measured group size: interpolated in log(size) within a channel count and in log(channels)
 * between the two measured counts around `ctas`. `floor_ns` gets the smallest-size time (the
 * latency) and `floor_bytes` that size. `rows` holds this collective and group size only. */
static double group_time(GArray *rows, int ctas, double bytes, double *floor_ns, double *floor_bytes)
{
  g_array_sort(rows, point_cmp);
  const PnCollPoint *p = (const PnCollPoint *)rows->data;
  int n = (int)rows->len, lo = -1, hi = -1; /* [start, end) of the channel counts around ctas */
  int lo_end = 0, hi_end = 0;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && p[j].ctas == p[i].ctas)
      j++;
    if (p[i].ctas <= ctas) {
      lo     = i;
      lo_end = j;
    }
    if (p[i].ctas >= ctas && hi < 0) {
      hi     = i;
      hi_end = j;
    }
    i = j;
  }
  if (lo < 0) {
    lo     = hi;
    lo_end = hi_end;
  }
  if (hi < 0) {
    hi     = lo;
    hi_end = lo_end;
  }
  double t_lo = time_at(p + lo, lo_end - lo, bytes), t_hi = time_at(p + hi, hi_end - hi, bytes);
  double f_lo = p[lo].ns, f_hi = p[hi].ns;
  double w  = (p[hi].ctas == p[lo].ctas) ? 0.0 : log((double)ctas / p[lo].ctas) / log((double)p[hi].ctas / p[lo].ctas);
  *floor_ns = exp(log(f_lo) + w * log(f_hi / f_lo));
  *floor_bytes = fmax(p[lo].bytes, p[hi].bytes);
  return exp(log(t_lo) + w * log(t_hi / t_lo));
}

/* Time of a collective of `ranks` GPUs inside a node from the measured table: the group size's
 * own rows, or, between two measured sizes (6 GPUs between 4 and 8), both interpolated in
 * log(group size). Returns < 0 when the table has no row of this collective at a measured size
 * at or below `ranks` and one at or above (a 16-GPU NVL node measured up to 8 GPUs keeps the
 * NVSwitch model). */
static double table_time(const PnHwProfile *hw, PnCollKind kind, int ranks, int ctas, double bytes, double *floor_ns,
                         double *floor_bytes)
{
  const PnCollTable *t = &hw->nccl_table;
  int r_lo = 0, r_hi = 0; /* the measured group sizes around ranks */
  for (int i = 0; i < t->n; i++) {
    int r = t->pts[i].ranks;
    if (t->pts[i].kind != (int)kind)
      continue;
    if (r <= ranks && r > r_lo)
      r_lo = r;
    if (r >= ranks && (r_hi == 0 || r < r_hi))
      r_hi = r;
  }
  if (r_lo == 0 || r_hi == 0)
    return -1.0;
  double tm[2], fl[2], fb[2];
  int sizes[2] = {r_lo, r_hi};
  for (int s = 0; s < (r_lo == r_hi ? 1 : 2); s++) {
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(PnCollPoint));
    for (int i = 0; i < t->n; i++)
      if (t->pts[i].kind == (int)kind && t->pts[i].ranks == sizes[s])
        g_array_append_val(rows, t->pts[i]);
    tm[s] = group_time(rows, ctas, bytes, &fl[s], &fb[s]);
  }
  if (r_lo == r_hi) {
    *floor_ns    = fl[0];
    *floor_bytes = fb[0];
    return tm[0];
  }
  double w     = log((double)ranks / r_lo) / log((double)r_hi / r_lo);
  *floor_ns    = exp(log(fl[0]) + w * log(fl[1] / fl[0]));
  *floor_bytes = fmax(fb[0], fb[1]);
  return exp(log(tm[0]) + w * log(tm[1] / tm[0]));
}

void pn_coll_cost(const PnHwProfile *hw, const PnCollSpec *s, PnCollCost *out)
{
  *out     = (PnCollCost){0};
  double n = (double)(s->ranks < 1 ? 1 : s->ranks);
  double k = (double)(s->ranks_per_node < 1 ? 1 : s->ranks_per_node);
  if (k > n)
    k = n;
  double nodes   = ceil(n / k);
  bool multinode = nodes > 1.0;
  int dflt_ctas  = multinode ? hw->nccl_ctas_net : hw->nccl_ctas_nvlink;
  if (s->kind == PN_COLL_SEND_RECV) /* the group's communicator (a batched call's) */
    dflt_ctas = multinode ? pn_hw_profile_p2p_net_ctas(hw) : hw->nccl_p2p_ctas;
  out->sms = clamp_ctas(dflt_ctas, s->min_ctas, s->max_ctas);
  if (n <= 1.0 && s->kind != PN_COLL_SEND_RECV) {
    out->sms = 0; /* NCCL short-circuits a group of one */
    return;
  }

  double ring_bytes = 0.0; /* per GPU per direction */
  double hops       = 0.0; /* ring steps */
  switch (s->kind) {
  case PN_COLL_ALL_GATHER:
  case PN_COLL_REDUCE_SCATTER:
    ring_bytes = s->bytes * (n - 1.0) / n;
    hops       = n - 1.0;
    break;
  case PN_COLL_ALL_REDUCE:
    ring_bytes = 2.0 * s->bytes * (n - 1.0) / n;
    hops       = 2.0 * (n - 1.0);
    break;
  case PN_COLL_ALL_TO_ALL:
    out->nvlink_bytes = s->bytes * (k - 1.0) / n;
    out->nic_bytes    = s->bytes * (n - k) / n;
    hops              = 1.0;
    break;
  case PN_COLL_SEND_RECV:
    if (multinode)
      out->nic_bytes = s->bytes;
    else
      out->nvlink_bytes = s->bytes;
    hops = 1.0;
    break;
  }
  if (s->kind != PN_COLL_ALL_TO_ALL && s->kind != PN_COLL_SEND_RECV) {
    if (multinode) {
      out->nvlink_bytes = ring_bytes * (k - 1.0) / k;
      out->nic_bytes    = ring_bytes / k;
    } else {
      out->nvlink_bytes = ring_bytes;
    }
  }

  /* Latency: ring hops, intra-node ones over NVLink and one network crossing per node; or, where
   * NCCL has a logarithmic algorithm for the collective (src/graph/tuning.cc), whichever its tuner
   * would find shorter: the tree for an all-reduce (2 log2(nodes) network hops plus the intra-node
   * chain, each way); PAT for an all-gather or reduce-scatter, which NCCL enables only with one
   * GPU per node (ncclPatEnable: nNodes == nRanks), at log2(nodes) x net_hop / 3.5 plus its linear
   * 2.8 us per rank. With several GPUs per node an all-gather or reduce-scatter rings over every
   * rank (NCCL has no tree for them): latency linear in the group. */
  double per_pass = s->kind == PN_COLL_ALL_REDUCE ? 2.0 : 1.0;
  double ring_lat;
  if (!multinode) {
    ring_lat = hops * hw->nccl_nvlink_hop_ns;
  } else if (s->kind == PN_COLL_ALL_TO_ALL || s->kind == PN_COLL_SEND_RECV) {
    ring_lat = hw->nccl_net_hop_ns;
  } else {
    double net_hops = per_pass * nodes, nvl_hops = hops - net_hops;
    ring_lat = net_hops * hw->nccl_net_hop_ns + fmax(0.0, nvl_hops) * hw->nccl_nvlink_hop_ns;
    if (s->kind == PN_COLL_ALL_REDUCE) {
      double tree_lat = 2.0 * (2.0 * ceil(log2(nodes)) * hw->nccl_net_hop_ns + (k - 1.0) * hw->nccl_nvlink_hop_ns);
      ring_lat        = fmin(ring_lat, tree_lat);
    } else if (k == 1.0) {
      double pat_lat = floor(log2(nodes)) * hw->nccl_net_hop_ns / 3.5 + n * PN_NCCL_PAT_RANK_NS;
      ring_lat       = fmin(ring_lat, pat_lat);
    }
  }
  out->latency_ns = hw->nccl_base_latency_ns + ring_lat;
  if (!multinode && n == 2.0 && hw->nccl_pair_latency_ns[s->kind] > 0.0)
    out->latency_ns = hw->nccl_pair_latency_ns[s->kind]; /* measured directly */

  /* A group inside a node of a measured size (or between two): the table gives latency and rate. */
  double floor_ns = 0.0, floor_bytes = 0.0, t_meas = -1.0;
  if (!multinode && hw->nccl_table.n > 0 && n <= (double)PN_PROFILE_MAX_TABLE_RANKS)
    t_meas = table_time(hw, s->kind, (int)n, out->sms, s->bytes, &floor_ns, &floor_bytes);
  if (t_meas > 0.0) {
    double wire = fmax(out->nvlink_bytes, out->nic_bytes);
    /* the smallest measured message still moved its bytes: the latency is its time less what
     * the link needs for them */
    double floor_wire     = s->bytes > 0.0 ? wire * floor_bytes / s->bytes : 0.0;
    out->latency_ns       = fmax(0.0, fmin(floor_ns, t_meas) - floor_wire / hw->nvlink_bytes_per_ns);
    double transfer       = t_meas - out->latency_ns;
    out->max_bytes_per_ns = wire > 0.0 ? (transfer > 0.0 ? wire / transfer : 1e9) : 0.0;
    return;
  }

  /* Channel-limited bandwidth and small-message protocol efficiency, on the dominant resource. */
  double dominant = fmax(out->nvlink_bytes, out->nic_bytes);
  double per_cta  = hw->nccl_cta_busbw[s->kind] > 0.0 ? hw->nccl_cta_busbw[s->kind] : hw->nccl_cta_bytes_per_ns;
  double cap      = out->sms * per_cta;
  double per_rank = s->bytes / n;
  /* the per-collective curves were measured over NVLink inside a node; groups that cross nodes
   * use the generic curve (empty: no size penalty beyond the latency term) */
  const PnCurve *ceff =
      (!multinode && hw->coll_efficiency[s->kind].n > 0) ? &hw->coll_efficiency[s->kind] : &hw->coll_size_efficiency;
  double eff = pn_curve_eval(ceff, per_rank, 1.0);
  double nvl = hw->nvlink_bytes_per_ns;
  /* the NIC share of this GPU: its node's GPUs all cross the network at once (profile.h) */
  double nic = hw->nic_bytes_per_ns / pn_hw_profile_gpus_per_nic(hw);
  /* a pair of GPUs was measured directly; larger groups use the NVSwitch ring figure */
  if (!multinode && n == 2.0 && hw->nccl_pair_busbw[s->kind] > 0.0)
    nvl = hw->nccl_pair_busbw[s->kind];
  double link = out->nic_bytes >= out->nvlink_bytes && out->nic_bytes > 0.0 ? nic : nvl;
  if (out->nic_bytes > 0.0 && out->nvlink_bytes > 0.0) {
    /* bottleneck-equivalent link rate for the dominant byte count */
    double t_nvl = out->nvlink_bytes / nvl, t_nic = out->nic_bytes / nic;
    link = dominant / fmax(t_nvl, t_nic);
  }
  /* The size efficiency (protocol, pipelining depth) was measured at NCCL's default channel count
   * and limits what the link delivers; a channel-starved collective is bound by its channels. */
  double bound = fmin(cap, link * eff);
  if (dominant > 0.0)
    out->max_bytes_per_ns = bound > 0.0 ? bound : 0.0;
}

double pn_coll_time_alone_ns(const PnHwProfile *hw, const PnCollCost *c)
{
  double t_nvl    = c->nvlink_bytes / hw->nvlink_bytes_per_ns;
  double t_nic    = c->nic_bytes / (hw->nic_bytes_per_ns / pn_hw_profile_gpus_per_nic(hw));
  double dominant = fmax(c->nvlink_bytes, c->nic_bytes);
  double t        = fmax(t_nvl, t_nic);
  if (c->max_bytes_per_ns > 0.0)
    t = fmax(t, dominant / c->max_bytes_per_ns);
  return c->latency_ns + t;
}
