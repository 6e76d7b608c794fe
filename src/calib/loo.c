/* loo.c — leave-one-out over the calibration tables of a profile (see calib.h, PnCalLoo).
 *
 * Each point of a table is priced by the same lookup the simulator runs (pn_cost_*, pn_coll_cost,
 * pn_curve_eval, the executor's contention rule) on a shallow copy of the profile whose table lacks
 * that point. A table of n points costs n lookups over n - 1 points: O(n^2) for the GEMM and NCCL
 * tables (3,500 and 1,300 points here, 0.3 s in all). */
#include <math.h>
#include <string.h>

#include "calib/calib-private.h"
#include "hw/cost.h"

static GArray *loo_table(PnCalCheck *out, const char *table)
{
  PnCalLoo l = {table, g_array_new(FALSE, FALSE, sizeof(double))};
  g_array_append_val(out->loo, l);
  return l.errors;
}

/* A plot point; `rate`: the values are rates (throughput, bandwidth), not times or slowdowns. */
static void add_point(PnCalCheck *out, const char *series, int group, double x, double measured, double predicted,
                      bool rate)
{
  double error  = rate ? measured / predicted - 1.0 : predicted / measured - 1.0;
  PnCalPoint pt = {series, group, x, measured, predicted, error};
  g_array_append_val(out->points, pt);
}

/* A copy of `n` points of `size` bytes without the first: loo_next() then makes it the points
 * without point i, for i = 0, 1, ... in turn, keeping the table's order (ties between equally
 * near points resolve as in the full table). */
static void *loo_first(const void *pts, int n, size_t size)
{
  return n > 1 ? g_memdup2((const char *)pts + size, (n - 1) * size) : g_malloc(size);
}

static void loo_next(void *rest, const void *pts, int i, size_t size)
{
  if (i > 0)
    memcpy((char *)rest + (i - 1) * size, (const char *)pts + (i - 1) * size, size);
}

/* GEMM: the nearest shapes of the table, blended (or the roofline when none is near enough). */
static void loo_gemm(const PnHwProfile *p, PnCalCheck *out)
{
  for (int fp8 = 0; fp8 < 2; fp8++) {
    const PnGemmTable *t = fp8 ? &p->gemm_fp8 : &p->gemm_bf16;
    if (t->n == 0)
      continue;
    GArray *err          = loo_table(out, fp8 ? "gemm_fp8" : "gemm_bf16");
    PnHwProfile lp       = *p;
    PnGemmTable *lt      = fp8 ? &lp.gemm_fp8 : &lp.gemm_bf16;
    g_autofree void *pts = loo_first(t->pts, t->n, sizeof *t->pts);
    *lt                  = (PnGemmTable){.n = t->n - 1, .pts = pts};
    for (int i = 0; i < t->n; i++) {
      loo_next(pts, t->pts, i, sizeof *t->pts);
      const PnGemmPoint *g = &t->pts[i];
      double ns            = pn_cost_gemm_ns(&lp, g->m, g->n, g->k, fp8 ? PN_DT_FP8 : PN_DT_BF16, NULL);
      pn__calib_push_err(err, ns, g->ns);
      double flops = 2.0 * (double)g->m * (double)g->n * (double)g->k;
      add_point(out, fp8 ? "gemm_fp8" : "gemm_bf16", 0, flops, flops / g->ns * 1e-3, flops / ns * 1e-3, true);
    }
  }
}

/* The unfused attention's batched GEMMs: the nearest shapes in log(batch, m, n, k), blended (or
 * the folded GEMM of gemm_bf16 when none is near enough). */
static void loo_bmm(const PnHwProfile *p, PnCalCheck *out)
{
  const PnGemmTable *t = &p->bmm_bf16;
  if (t->n == 0)
    return;
  GArray *err          = loo_table(out, "bmm_bf16");
  PnHwProfile lp       = *p;
  g_autofree void *pts = loo_first(t->pts, t->n, sizeof *t->pts);
  lp.bmm_bf16          = (PnGemmTable){.n = t->n - 1, .pts = pts};
  for (int i = 0; i < t->n; i++) {
    loo_next(pts, t->pts, i, sizeof *t->pts);
    const PnGemmPoint *g = &t->pts[i];
    pn__calib_push_err(err, pn_cost_bmm_ns(&lp, g->batch, g->m, g->n, g->k, NULL), g->ns);
  }
}

/* Attention: one shape left out, its forward and backward predicted from the others. */
static void loo_attn(const PnHwProfile *p, PnCalCheck *out)
{
  const PnAttnTable *t = &p->attn_bf16;
  if (t->n == 0)
    return;
  GArray *err          = loo_table(out, "attn_bf16");
  PnHwProfile lp       = *p;
  g_autofree void *pts = loo_first(t->pts, t->n, sizeof *t->pts);
  lp.attn_bf16         = (PnAttnTable){.n = t->n - 1, .pts = pts};
  for (int i = 0; i < t->n; i++) {
    loo_next(pts, t->pts, i, sizeof *t->pts);
    const PnAttnPoint *a = &t->pts[i];
    /* causal FLOPs as cost.c counts them: QK^T and PV, half masked; the backward 2.5x */
    double fwd_flops =
        (double)a->batch * (double)a->heads * (double)a->seq * (double)a->seq * (double)(a->head_dim + a->head_dim_v);
    for (int bwd = 0; bwd < 2; bwd++) {
      double ns = pn_cost_attention_ns(&lp, a->batch, a->seq, a->seq, a->heads, a->kv_heads, a->head_dim, a->head_dim_v,
                                       true, bwd, NULL);
      double measured = bwd ? a->bwd_ns : a->fwd_ns, flops = bwd ? 2.5 * fwd_flops : fwd_flops;
      pn__calib_push_err(err, ns, measured);
      add_point(out, bwd ? "attn_bwd" : "attn_fwd", 0, flops, flops / measured * 1e-3, flops / ns * 1e-3, true);
    }
  }
}

/* NCCL: each measured row (collective, group, channels, size) left out of the table and priced
 * from the rest, between the neighbouring sizes in log size (the smallest size at the next
 * one's time, the latency floor; the largest at the next smaller one's bandwidth). */
static void loo_coll(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  static const char *const series[] = {"nccl_all_gather", "nccl_reduce_scatter", "nccl_all_reduce", "nccl_all_to_all",
                                       "nccl_send_recv"};
  const PnCollTable *t              = &p->nccl_table;
  if (t->n == 0)
    return;
  GArray *dflt                 = loo_table(out, "nccl_table, default channels");
  GArray *forced               = loo_table(out, "nccl_table, channels forced");
  PnHwProfile lp               = *p;
  g_autofree PnCollPoint *rest = g_new(PnCollPoint, t->n);
  lp.nccl_table.pts            = rest;
  for (guint i = 0; i < d->coll->len; i++) {
    const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
    if (pn__calib_coll_outlier(d, c))
      continue;
    int ctas        = c->ctas ? c->ctas : c->kind == PN_COLL_SEND_RECV ? p->nccl_p2p_ctas : p->nccl_ctas_nvlink;
    lp.nccl_table.n = 0;
    for (int j = 0; j < t->n; j++) {
      const PnCollPoint *q = &t->pts[j];
      if (!(q->kind == (int)c->kind && q->ranks == c->nranks && q->ctas == ctas && q->bytes == c->bytes))
        rest[lp.nccl_table.n++] = *q;
    }
    if (lp.nccl_table.n == t->n) /* not a point of this profile's table */
      continue;
    PnCollCost cost;
    double ns = pn__calib_coll_predict(&lp, c, &cost);
    pn__calib_push_err(c->ctas ? forced : dflt, ns, c->ns);
    if (c->ctas == 0)
      add_point(out, series[c->kind], c->nranks, c->bytes, c->busbw_bytes_per_ns, c->busbw_bytes_per_ns * c->ns / ns,
                true);
  }
}

/* The curve `c` without its point at `x` (into x/y, which hold c->n values). */
static PnCurve curve_without(const PnCurve *c, double x, double *xs, double *ys)
{
  PnCurve l = {.n = 0, .x = xs, .y = ys, .log_x = c->log_x};
  for (int j = 0; j < c->n; j++)
    if (c->x[j] != x) {
      xs[l.n]   = c->x[j];
      ys[l.n++] = c->y[j];
    }
  return l;
}

/* The SM-contention curves (median slowdown over the shapes per SMs held): each measured count
 * of SMs held left out, interpolated linearly in SMs between its neighbours. */
static void loo_contention_curves(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (int v = PN_CAL_SPINNER; v <= PN_CAL_SPINNER_SM_TARGET; v += PN_CAL_SPINNER_SM_TARGET - PN_CAL_SPINNER) {
    const PnCurve *curve = v == PN_CAL_SPINNER ? &p->gemm_sm_scaling : &p->gemm_sm_limit_scaling;
    if (curve->n == 0)
      continue;
    GArray *err           = loo_table(out, v == PN_CAL_SPINNER ? "gemm_sm_scaling" : "gemm_sm_limit_scaling");
    g_autofree double *xs = g_new(double, curve->n), *ys = g_new(double, curve->n);
    g_autoptr(GArray) s = g_array_new(FALSE, FALSE, sizeof(double));
    for (int k = 1; k < p->sm_count; k++) {
      g_array_set_size(s, 0);
      for (guint i = 0; i < d->contention->len; i++) {
        const PnCalContention *c = &g_array_index(d->contention, PnCalContention, i);
        if ((int)c->variant == v && c->sms_held == k)
          g_array_append_val(s, c->slowdown);
      }
      if (s->len == 0)
        continue;
      PnCurve l       = curve_without(curve, (double)(p->sm_count - k), xs, ys);
      double measured = pn_calib_median(s);
      double pred     = pn_curve_eval(&l, p->sm_count, 1.0) / pn_curve_eval(&l, p->sm_count - k, 1.0);
      pn__calib_push_err(err, pred, measured);
      add_point(out, v == PN_CAL_SPINNER ? "sm_held" : "sm_margin", 0, k, measured, pred, false);
    }
  }
}

/* A GEMM's slowdown with `held` SMs taken, as the executor prices it (exec_kernels.c): its shape's
 * curve when a measured shape is near, else the profile-wide curve; the rate at most 1. */
static double executor_slowdown(const PnHwProfile *p, const PnContentionPoint *c)
{
  double usable = (double)(p->sm_count - c->sms_held), r;
  int s         = pn_hw_profile_nearest_contention(p, c->m, c->n, c->k, c->fp8);
  if (s >= 0 && p->shape_contention[s].curve[c->variant].n > 0) {
    const PnCurve *sc = &p->shape_contention[s].curve[c->variant];
    r                 = pn_curve_eval(sc, usable, 1.0) / pn_curve_eval(sc, p->sm_count, 1.0);
  } else {
    const PnCurve *wide =
        c->variant == 1 && p->gemm_sm_limit_scaling.n > 0 ? &p->gemm_sm_limit_scaling : &p->gemm_sm_scaling;
    r = wide->n > 0 ? pn_curve_eval(wide, usable, 0.0) / pn_curve_eval(wide, p->sm_count, 0.0) : usable / p->sm_count;
  }
  return 1.0 / fmin(1.0, fmax(r, 1e-9));
}

static void shape_contention_free(PnHwProfile *p)
{
  for (int s = 0; s < p->n_shape_contention; s++)
    for (int v = 0; v < 2; v++) {
      g_free(p->shape_contention[s].curve[v].x);
      g_free(p->shape_contention[s].curve[v].y);
    }
  g_clear_pointer(&p->shape_contention, g_free);
  p->n_shape_contention = 0;
}

/* The per-shape contention table: one (shape, variant, SMs held) point left out, its shape's
 * curve rebuilt from the others (or the profile-wide curve when it was the shape's only one). */
static void loo_contention_table(const PnHwProfile *p, PnCalCheck *out)
{
  int n = p->n_contention_points;
  if (n == 0)
    return;
  GArray *err            = loo_table(out, "gemm_contention_table");
  PnHwProfile lp         = *p;
  g_autofree void *pts   = loo_first(p->contention_points, n, sizeof *p->contention_points);
  lp.contention_points   = pts;
  lp.n_contention_points = n - 1;
  lp.shape_contention    = NULL; /* lp's own from here on: index_contention frees the previous one */
  lp.n_shape_contention  = 0;
  for (int i = 0; i < n; i++) {
    loo_next(pts, p->contention_points, i, sizeof *p->contention_points);
    pn_hw_profile_index_contention(&lp);
    const PnContentionPoint *c = &p->contention_points[i];
    pn__calib_push_err(err, executor_slowdown(&lp, c), c->slowdown);
  }
  shape_contention_free(&lp);
}

/* Memory-bound kernel classes: one size left out of its class's bandwidth curve, interpolated
 * in log size between its neighbours (the end sizes at the next one's bandwidth). */
static void loo_mem(const PnHwProfile *p, PnCalCheck *out)
{
  static const char *const tables[] = {"mem_bandwidth_copy", "mem_bandwidth_norm", "mem_bandwidth_activation",
                                       "mem_bandwidth_optimizer", "mem_bandwidth_dropout"};
  static const char *const series[] = {"mem_copy", "mem_norm", "mem_activation", "mem_optimizer", "mem_dropout"};
  G_STATIC_ASSERT(G_N_ELEMENTS(tables) == PN_PROFILE_MEM_CLASSES);
  for (int cls = 0; cls < PN_PROFILE_MEM_CLASSES; cls++) {
    const PnCurve *c = &p->mem_bandwidth[cls];
    if (c->n == 0)
      continue;
    GArray *err           = loo_table(out, tables[cls]);
    g_autofree double *xs = g_new(double, c->n), *ys = g_new(double, c->n);
    for (int i = 0; i < c->n; i++) {
      PnCurve l = curve_without(c, c->x[i], xs, ys);
      double bw = pn_curve_eval(&l, c->x[i], p->hbm_bytes_per_ns);
      pn__calib_push_err(err, c->x[i] / bw, c->x[i] / c->y[i]);
      add_point(out, series[cls], 0, c->x[i], c->y[i], bw, true);
    }
  }
}

/* The PyTorch kernels' ratios to a copy: one sequence length left out of a kernel's curve,
 * interpolated in log length between its neighbours (the end lengths at the next one's ratio; a
 * curve of one point left out prices at the copy's bandwidth). Errors in time: ratio / predicted
 * ratio - 1. */
static void loo_torch_kernels(const PnHwProfile *p, PnCalCheck *out)
{
  GArray *err = NULL;
  for (int k = 0; k < PN_TK_N; k++) {
    const PnCurve *c = &p->torch_kernel_vs_copy[k];
    if (c->n == 0)
      continue;
    if (err == NULL)
      err = loo_table(out, "torch_kernel_vs_copy");
    g_autofree double *xs = g_new(double, c->n), *ys = g_new(double, c->n);
    for (int i = 0; i < c->n; i++) {
      PnCurve l = curve_without(c, c->x[i], xs, ys);
      pn__calib_push_err(err, 1.0 / pn_curve_eval(&l, c->x[i], 1.0), 1.0 / c->y[i]);
    }
  }
}

void pn__calib_check_loo(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  loo_gemm(p, out);
  loo_attn(p, out);
  loo_coll(d, p, out);
  loo_contention_curves(d, p, out);
  loo_contention_table(p, out);
  loo_mem(p, out);
  loo_bmm(p, out);
  loo_torch_kernels(p, out);
}
