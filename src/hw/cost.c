/* cost.c — kernel durations from calibration tables, with a roofline fallback (see cost.h). */
#include "hw/cost.h"

#include <math.h>

/* A measured point farther than this (in log2 units over the shape's dimensions) from the
 * query is not used: the roofline is no worse than extrapolating that far. */
#define PN_COST_MAX_LOG_DISTANCE 2.0
#define PN_COST_NEIGHBOURS 4

double pn_dtype_bytes(PnDtype dt)
{
  switch (dt) {
  case PN_DT_FP8:
    return 1.0;
  case PN_DT_FP32:
    return 4.0;
  case PN_DT_BF16:
  default:
    return 2.0;
  }
}

static double log2_ratio(double a, double b) { return log2(a / b); }

/* Inverse-distance weighting of achieved throughput (FLOPs per ns) over the nearest points,
 * in log space: throughput varies smoothly with shape, durations do not. Returns 0 when no
 * point is near enough. `exact` is set when a point matches the query exactly. */
typedef struct {
  double dist;
  double flops_per_ns;
} PnNeighbour;

static void keep_nearest(PnNeighbour *best, int *n_best, double dist, double rate)
{
  int n = *n_best;
  if (n < PN_COST_NEIGHBOURS) {
    best[n] = (PnNeighbour){dist, rate};
    *n_best = n + 1;
  } else if (dist < best[n - 1].dist) {
    best[n - 1] = (PnNeighbour){dist, rate};
  } else {
    return;
  }
  for (int i = *n_best - 1; i > 0 && best[i].dist < best[i - 1].dist; i--) {
    PnNeighbour t = best[i];
    best[i]       = best[i - 1];
    best[i - 1]   = t;
  }
}

static double blend(const PnNeighbour *best, int n_best, bool *exact)
{
  *exact = false;
  if (n_best == 0 || best[0].dist > PN_COST_MAX_LOG_DISTANCE)
    return 0.0;
  if (best[0].dist < 1e-9) {
    *exact = true;
    return best[0].flops_per_ns;
  }
  double wsum = 0.0, lsum = 0.0;
  for (int i = 0; i < n_best; i++) {
    if (best[i].dist > PN_COST_MAX_LOG_DISTANCE)
      break;
    double w = 1.0 / (best[i].dist * best[i].dist);
    wsum += w;
    lsum += w * log(best[i].flops_per_ns);
  }
  return exp(lsum / wsum);
}

/* log2(q / v) for one query q over a table's values v, memoized: a table has a few distinct
 * sizes per dimension (a grid), so a query needs a few dozen logarithms, not three per point.
 * Direct-mapped on v; a hit returns the very value the call would. */
#define PN_COST_LOG_MEMO 64
typedef struct {
  int64_t v[PN_COST_LOG_MEMO];
  double r[PN_COST_LOG_MEMO];
  double q;
} PnLogMemo;

/* Every slot starts as v = 0, with the value the call gives for 0 (so no slot is ever stale). */
static void log_memo_init(PnLogMemo *c, int64_t q)
{
  c->q        = (double)q;
  double zero = log2_ratio(c->q, 0.0);
  for (int i = 0; i < PN_COST_LOG_MEMO; i++) {
    c->v[i] = 0;
    c->r[i] = zero;
  }
}

static inline double log_memo(PnLogMemo *c, int64_t v)
{
  unsigned slot = (unsigned)(((uint64_t)v * 0x9E3779B97F4A7C15ull) >> 58); /* 0..63 */
  if (c->v[slot] != v) {
    c->v[slot] = v;
    c->r[slot] = log2_ratio(c->q, (double)v);
  }
  return c->r[slot];
}

/* `batch` matrices of C[m,n] = A[m,k] B[k,n] (1 for one GEMM; a point's batch 0 reads as 1): the
 * distance is over log2 of (batch, m, n, k), the rate 2 batch m n k / ns. A plain table and a
 * query of one GEMM have 0 in the batch dimension everywhere, so their distances and rates are
 * those of (m, n, k) alone, bit for bit. */
static double gemm_table_rate(const PnGemmTable *t, int64_t batch, int64_t m, int64_t n, int64_t k, bool *exact)
{
  PnNeighbour best[PN_COST_NEIGHBOURS];
  int n_best = 0;
  int64_t qb = batch > 1 ? batch : 1;
  PnLogMemo lb, lm, ln, lk;
  log_memo_init(&lb, qb);
  log_memo_init(&lm, m);
  log_memo_init(&ln, n);
  log_memo_init(&lk, k);
  /* Once PN_COST_NEIGHBOURS are kept, a point whose squared distance exceeds the farthest kept
   * one's, squared, by more than rounding can (1e-9 relative) cannot get in: it is passed over
   * before the square root, the rate and the insertion; the others take the exact path. */
  double reject_sq = INFINITY;
  for (int i = 0; i < t->n; i++) {
    const PnGemmPoint *p = &t->pts[i];
    int64_t pb           = p->batch > 1 ? p->batch : 1;
    double db = pb == qb ? 0.0 : log_memo(&lb, pb), dm = log_memo(&lm, p->m), dn = log_memo(&ln, p->n);
    double dk = log_memo(&lk, p->k);
    double sq = dm * dm + dn * dn + dk * dk + db * db;
    if (sq > reject_sq)
      continue;
    keep_nearest(best, &n_best, sqrt(sq), 2.0 * (double)pb * (double)p->m * (double)p->n * (double)p->k / p->ns);
    if (n_best == PN_COST_NEIGHBOURS) {
      double far = best[n_best - 1].dist;
      reject_sq  = far * far * (1.0 + 1e-9);
    }
  }
  return blend(best, n_best, exact);
}

double pn_cost_gemm_ns(const PnHwProfile *hw, int64_t m, int64_t n, int64_t k, PnDtype dt, PnCostSource *src)
{
  double flops             = 2.0 * (double)m * (double)n * (double)k;
  const PnGemmTable *table = dt == PN_DT_FP8 ? &hw->gemm_fp8 : &hw->gemm_bf16;
  bool exact               = false;
  double rate              = table->n > 0 ? gemm_table_rate(table, 1, m, n, k, &exact) : 0.0;
  if (rate > 0.0) {
    if (src)
      *src = exact ? PN_COST_TABLE : PN_COST_INTERPOLATED;
    return flops / rate;
  }
  /* Roofline: tiles in waves over the SMs, at the efficiency large GEMMs reach. */
  double peak   = dt == PN_DT_FP8 ? hw->peak_fp8_flops_per_ns : hw->peak_bf16_flops_per_ns;
  double tiles  = ceil((double)m / hw->gemm_tile_m) * ceil((double)n / hw->gemm_tile_n);
  double waves  = ceil(tiles / hw->sm_count);
  double wave_f = tiles / (waves * hw->sm_count);
  double t_math = flops / (peak * hw->gemm_efficiency * wave_f);
  double bytes  = ((double)m * (double)k + (double)k * (double)n) * pn_dtype_bytes(dt) + (double)m * (double)n * 2.0;
  double t_mem  = bytes / hw->hbm_bytes_per_ns;
  if (src)
    *src = PN_COST_ROOFLINE;
  return fmax(t_math, t_mem);
}

double pn_cost_gemm_accum_ns(const PnHwProfile *hw, int64_t m, int64_t n, int64_t k, PnDtype dt, PnDtype into,
                             PnCostSource *src)
{
  const PnGemmTable *table = &hw->gemm_accum[dt == PN_DT_FP8][into == PN_DT_FP32];
  bool exact               = false;
  double rate              = table->n > 0 ? gemm_table_rate(table, 1, m, n, k, &exact) : 0.0;
  if (rate <= 0.0)
    return pn_cost_gemm_ns(hw, m, n, k, dt, src);
  if (src)
    *src = exact ? PN_COST_TABLE : PN_COST_INTERPOLATED;
  return 2.0 * (double)m * (double)n * (double)k / rate;
}

double pn_cost_bmm_ns(const PnHwProfile *hw, int64_t batch, int64_t m, int64_t n, int64_t k, PnCostSource *src)
{
  int64_t b            = batch > 1 ? batch : 1;
  const PnGemmTable *t = &hw->bmm_bf16;
  bool exact           = false;
  double rate          = t->n > 0 ? gemm_table_rate(t, b, m, n, k, &exact) : 0.0;
  if (rate <= 0.0) /* the matrices side by side: one GEMM's tiles over (b m) rows */
    return pn_cost_gemm_ns(hw, b * m, n, k, PN_DT_BF16, src);
  if (src)
    *src = exact ? PN_COST_TABLE : PN_COST_INTERPOLATED;
  return 2.0 * (double)b * (double)m * (double)n * (double)k / rate;
}

static double attention_flops(int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads, int64_t head_dim,
                              int64_t head_dim_v, bool causal, bool backward)
{
  /* QK^T and PV: 2 matmuls of 2*b*h*sq*skv*d each (d the query / key heads' and the value heads'
   * width); causal masks half; the backward runs 5 (recomputed QK^T, dV, dP, dQ, dK): 2.5x the
   * forward. */
  double f = 2.0 * (double)batch * (double)heads * (double)seq_q * (double)seq_kv * (double)(head_dim + head_dim_v);
  if (causal)
    f *= 0.5;
  return backward ? 2.5 * f : f;
}

/* Whether the table has rows of these widths. */
static bool attn_has(const PnAttnTable *t, int64_t head_dim, int64_t head_dim_v)
{
  for (int i = 0; i < t->n; i++)
    if (t->pts[i].head_dim == head_dim && t->pts[i].head_dim_v == head_dim_v)
      return true;
  return false;
}

double pn_cost_attention_ns(const PnHwProfile *hw, int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads,
                            int64_t kv_heads, int64_t head_dim, int64_t head_dim_v, bool causal, bool backward,
                            PnCostSource *src)
{
  if (head_dim_v <= 0)
    head_dim_v = head_dim;
  double flops         = attention_flops(batch, seq_q, seq_kv, heads, head_dim, head_dim_v, causal, backward);
  const PnAttnTable *t = &hw->attn_bf16;
  /* without rows of a narrower value head, the symmetric kernel's rate (MLA's measured rows run
   * faster than that: hwprofiles/calibration/h100-sxm/attention_mla.json) */
  int64_t rows_v = attn_has(t, head_dim, head_dim_v) ? head_dim_v : head_dim;
  if (t->n > 0) {
    PnNeighbour best[PN_COST_NEIGHBOURS];
    int n_best = 0;
    for (int i = 0; i < t->n; i++) {
      const PnAttnPoint *p = &t->pts[i];
      if (p->head_dim != head_dim || p->head_dim_v != rows_v)
        continue;
      double ds = log2_ratio((double)seq_q, (double)p->seq), dh = log2_ratio((double)heads, (double)p->heads);
      double dg = log2_ratio((double)kv_heads, (double)p->kv_heads), db = log2_ratio((double)batch, (double)p->batch);
      double dist = sqrt(ds * ds + dh * dh + 0.25 * dg * dg + db * db);
      double pf   = attention_flops(p->batch, p->seq, p->seq, p->heads, p->head_dim, p->head_dim_v, true, backward);
      keep_nearest(best, &n_best, dist, pf / (backward ? p->bwd_ns : p->fwd_ns));
    }
    bool exact  = false;
    double rate = blend(best, n_best, &exact);
    if (rate > 0.0 && seq_q == seq_kv) {
      if (src)
        *src = exact ? PN_COST_TABLE : PN_COST_INTERPOLATED;
      return flops / rate;
    }
    if (rate > 0.0) { /* context parallel: local queries against the whole sequence, same kernel rate */
      if (src)
        *src = PN_COST_INTERPOLATED;
      return flops / rate;
    }
  }
  if (src)
    *src = PN_COST_ROOFLINE;
  return flops / (hw->peak_bf16_flops_per_ns * hw->attn_efficiency);
}

double pn_cost_memory_ns(const PnHwProfile *hw, double bytes) { return bytes / hw->hbm_bytes_per_ns; }

double pn_cost_memory_class_ns(const PnHwProfile *hw, double bytes, PnMemClass cls)
{
  const PnCurve *c = (unsigned)cls < PN_PROFILE_MEM_CLASSES ? &hw->mem_bandwidth[cls] : NULL;
  if (!c || c->n == 0)
    return pn_cost_memory_ns(hw, bytes);
  return bytes / pn_curve_eval(c, bytes, hw->hbm_bytes_per_ns);
}

double pn_cost_torch_kernel_ns(const PnHwProfile *hw, double bytes, PnTorchKernel kernel, int64_t seq)
{
  g_assert((unsigned)kernel < PN_TK_N);
  /* the ratio was measured against a copy of the same bytes, timed alternately: it carries no
   * clock drift, and the copy class's curve supplies the bandwidth at this size */
  double vs_copy = pn_curve_eval(&hw->torch_kernel_vs_copy[kernel], (double)seq, 1.0);
  return pn_cost_memory_class_ns(hw, bytes, PN_MEM_COPY) / vs_copy;
}
