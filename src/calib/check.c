/* check.c — replay of the measured cases through a profile's cost model (see calib.h). */
#include <math.h>

#include "calib/calib-private.h"
#include "hw/cost.h"

void pn__calib_push_err(GArray *a, double predicted, double measured)
{
  if (measured > 0.0 && isfinite(predicted)) {
    double e = predicted / measured - 1.0;
    g_array_append_val(a, e);
  }
}

double pn__calib_coll_predict(const PnHwProfile *p, const PnCalColl *c, PnCollCost *cost)
{
  PnCollSpec spec = {.kind           = c->kind,
                     .bytes          = c->bytes,
                     .ranks          = c->nranks,
                     .ranks_per_node = c->nranks,
                     .min_ctas       = c->ctas,
                     .max_ctas       = c->ctas};
  pn_coll_cost(p, &spec, cost);
  return pn_coll_time_alone_ns(p, cost);
}

/* The group sizes of the collective rows, ascending, each with an (empty) error list. */
static void coll_groups_init(const PnCalData *d, PnCalCheck *out)
{
  for (guint i = 0; i < d->coll->len; i++) {
    int r   = g_array_index(d->coll, PnCalColl, i).nranks;
    guint k = 0;
    while (k < out->coll_groups->len && g_array_index(out->coll_groups, int, k) < r)
      k++;
    if (k == out->coll_groups->len || g_array_index(out->coll_groups, int, k) != r)
      g_array_insert_val(out->coll_groups, k, r);
  }
  for (guint k = 0; k < out->coll_groups->len; k++) {
    g_ptr_array_add(out->coll_by_group, g_array_new(FALSE, FALSE, sizeof(double)));
    g_ptr_array_add(out->coll_group_loo, g_array_new(FALSE, FALSE, sizeof(double)));
  }
}

static GArray *coll_group_errors(GPtrArray *lists, const PnCalCheck *out, int ranks)
{
  guint k = 0;
  while (g_array_index(out->coll_groups, int, k) != ranks)
    k++;
  return g_ptr_array_index(lists, k);
}

/* The default-channel rows of each inner group size through the profile without that size's
 * table rows: what a group size between two measured ones gets. */
static void check_coll_group_loo(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (guint k = 1; k + 1 < out->coll_groups->len; k++) {
    int r                        = g_array_index(out->coll_groups, int, k);
    PnHwProfile lp               = *p; /* shallow: only the table is replaced */
    g_autofree PnCollPoint *rest = g_new(PnCollPoint, p->nccl_table.n ? p->nccl_table.n : 1);
    lp.nccl_table.pts            = rest;
    lp.nccl_table.n              = 0;
    for (int i = 0; i < p->nccl_table.n; i++)
      if (p->nccl_table.pts[i].ranks != r)
        rest[lp.nccl_table.n++] = p->nccl_table.pts[i];
    for (guint i = 0; i < d->coll->len; i++) {
      const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
      if (c->nranks != r || c->ctas != 0 || pn__calib_coll_outlier(d, c))
        continue;
      PnCollCost cost;
      pn__calib_push_err(g_ptr_array_index(out->coll_group_loo, k), pn__calib_coll_predict(&lp, c, &cost), c->ns);
    }
  }
}

static void check_init(PnCalCheck *out)
{
  out->gemm                = g_array_new(FALSE, FALSE, sizeof(double));
  out->gemm_accum          = g_array_new(FALSE, FALSE, sizeof(double));
  out->bmm                 = g_array_new(FALSE, FALSE, sizeof(double));
  out->bmm_rows            = g_array_new(FALSE, FALSE, sizeof(double));
  out->torch_kernels       = g_array_new(FALSE, FALSE, sizeof(double));
  out->ub_push             = g_array_new(FALSE, FALSE, sizeof(double));
  out->attn                = g_array_new(FALSE, FALSE, sizeof(double));
  out->coll_default        = g_array_new(FALSE, FALSE, sizeof(double));
  out->coll_ctas           = g_array_new(FALSE, FALSE, sizeof(double));
  out->coll_outliers       = g_array_new(FALSE, FALSE, sizeof(double));
  out->contention          = g_array_new(FALSE, FALSE, sizeof(double));
  out->contention_median   = g_array_new(FALSE, FALSE, sizeof(double));
  out->loo                 = g_array_new(FALSE, FALSE, sizeof(PnCalLoo));
  out->points              = g_array_new(FALSE, FALSE, sizeof(PnCalPoint));
  out->memory_other        = g_array_new(FALSE, FALSE, sizeof(double));
  out->memory              = g_array_new(FALSE, FALSE, sizeof(double));
  out->coll_groups         = g_array_new(FALSE, FALSE, sizeof(int));
  out->nccl_overlap        = g_array_new(FALSE, FALSE, sizeof(double));
  out->nccl_overlap_margin = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_layer_fit      = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_layer_tiny     = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_local_layer    = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_fsdp_unit      = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_te_layer       = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_ref            = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_moe_layer      = g_array_new(FALSE, FALSE, sizeof(double));
  out->host_moe_expert     = g_array_new(FALSE, FALSE, sizeof(double));
  out->floor_copy          = g_array_new(FALSE, FALSE, sizeof(double));
  out->floor_gemm          = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_gemm            = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_spinner         = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_pair            = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_ce              = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_nccl_gemm       = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_nccl_coll       = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_copy_nccl       = g_array_new(FALSE, FALSE, sizeof(double));
  out->hbm_nccl_copy       = g_array_new(FALSE, FALSE, sizeof(double));
  out->coll_by_group       = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  out->coll_group_loo      = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
}

/* GEMM: each table point replayed. */
static void check_gemm(const PnHwProfile *p, PnCalCheck *out)
{
  for (int fp8 = 0; fp8 < 2; fp8++) {
    const PnGemmTable *t = fp8 ? &p->gemm_fp8 : &p->gemm_bf16;
    for (int i = 0; i < t->n; i++) {
      const PnGemmPoint *g = &t->pts[i];
      pn__calib_push_err(out->gemm, pn_cost_gemm_ns(p, g->m, g->n, g->k, fp8 ? PN_DT_FP8 : PN_DT_BF16, NULL), g->ns);
    }
  }
}

/* A wgrad accumulating into main_grad: the ratio the profile prices (accumulating over plain
 * GEMM of the shape) against the ratio measured; only where the profile has the table. */
static void check_gemm_accum(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (guint i = 0; i < d->accum->len; i++) {
    const PnCalGemmAccum *a = &g_array_index(d->accum, PnCalGemmAccum, i);
    if (p->gemm_accum[a->fp8][a->into_fp32].n == 0)
      continue;
    PnDtype dt   = a->fp8 ? PN_DT_FP8 : PN_DT_BF16;
    double plain = pn_cost_gemm_ns(p, a->m, a->n, a->k, dt, NULL);
    double acc   = pn_cost_gemm_accum_ns(p, a->m, a->n, a->k, dt, a->into_fp32 ? PN_DT_FP32 : PN_DT_BF16, NULL);
    pn__calib_push_err(out->gemm_accum, acc / plain, a->ratio);
  }
}

/* The unfused attention's batched GEMMs: each point of the table, then each measured row (the ops
 * of one shape against their median, the one point that stands for them). */
static void check_bmm(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  const PnGemmTable *t = &p->bmm_bf16;
  for (int i = 0; i < t->n; i++) {
    const PnGemmPoint *g = &t->pts[i];
    pn__calib_push_err(out->bmm, pn_cost_bmm_ns(p, g->batch, g->m, g->n, g->k, NULL), g->ns);
  }
  for (guint i = 0; i < d->bmm->len; i++) {
    const PnCalGemm *g = &g_array_index(d->bmm, PnCalGemm, i);
    pn__calib_push_err(out->bmm_rows, pn_cost_bmm_ns(p, g->batch, g->m, g->n, g->k, NULL), g->ns);
  }
}

/* The unfused attention's PyTorch kernels: the copy class's time of the bytes over the kernel's
 * ratio at its sequence length, against the time measured (the ratio is a median over the shapes
 * of that length, the copy's bandwidth another benchmark's). */
static void check_torch_kernels(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (guint i = 0; i < d->torch_kernels->len; i++) {
    const PnCalTorchKernel *k = &g_array_index(d->torch_kernels, PnCalTorchKernel, i);
    pn__calib_push_err(out->torch_kernels, pn_cost_torch_kernel_ns(p, k->bytes, k->kernel, k->seq), k->ns);
  }
}

/* A userbuffers kernel's blocks without multicast: the bytes of each push_bidir / pull_1to0 row at
 * the profile's rate for its CTA count, against the time measured. */
static void check_ub_push(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (guint i = 0; i < d->p2p->len; i++) {
    const PnCalP2p *r = &g_array_index(d->p2p, PnCalP2p, i);
    const PnCurve *c  = r->pull ? &p->ub_pull_bytes_per_ns : &p->ub_push_bytes_per_ns;
    if (c->n > 0)
      pn__calib_push_err(out->ub_push, r->bytes / pn_curve_eval(c, r->blocks, 1.0), r->ns);
  }
}

/* attention: the fastest backend per shape, which is what the table keeps */
static void check_attn(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  PnAttnTable fastest = {0};
  pn__calib_fit_attn(d, &fastest);
  for (int i = 0; i < fastest.n; i++) {
    const PnAttnPoint *a = &fastest.pts[i];
    pn__calib_push_err(out->attn,
                       pn_cost_attention_ns(p, a->batch, a->seq, a->seq, a->heads, a->kv_heads, a->head_dim,
                                            a->head_dim_v, true, false, NULL),
                       a->fwd_ns);
    pn__calib_push_err(out->attn,
                       pn_cost_attention_ns(p, a->batch, a->seq, a->seq, a->heads, a->kv_heads, a->head_dim,
                                            a->head_dim_v, true, true, NULL),
                       a->bwd_ns);
  }
  g_free(fastest.pts);
}

/* Every collective row alone through the profile, sorted into default channels, forced channels,
 * outliers and group sizes; then the group sizes left out of the table in turn. */
static void check_coll(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  coll_groups_init(d, out);
  for (guint i = 0; i < d->coll->len; i++) {
    const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
    PnCollCost cost;
    double t     = pn__calib_coll_predict(p, c, &cost);
    bool outlier = pn__calib_coll_outlier(d, c);
    pn__calib_push_err(outlier ? out->coll_outliers : c->ctas == 0 ? out->coll_default : out->coll_ctas, t, c->ns);
    if (!outlier && c->ctas == 0)
      pn__calib_push_err(coll_group_errors(out->coll_by_group, out, c->nranks), t, c->ns);
    if (g_getenv("PENUMBRA_CHECK_VERBOSE") && fabs(t / c->ns - 1.0) > 0.05)
      g_printerr("collective %s ranks %d ctas %d bytes %.0f: measured %.0f ns, predicted %.0f ns (latency %.0f, bound "
                 "%.1f)\n",
                 pn_coll_kind_name(c->kind), c->nranks, c->ctas, c->bytes, c->ns, t, cost.latency_ns,
                 cost.max_bytes_per_ns);
  }
  check_coll_group_loo(d, p, out);
}

/* A GEMM beside a real NCCL collective: the executor gives it the SMs the collective's CTAs
 * leave, at its shape's SMs-held curve (measured beside a spinner that fills its SMs), and no
 * slowdown when it is already restricted to the other SMs. */
double pn__calib_nccl_overlap_sm_rate(const PnHwProfile *p, const PnCalNcclOverlap *o, int *held)
{
  *held = o->ctas > 0 ? o->ctas : p->nccl_ctas_nvlink;
  int s = pn_hw_profile_nearest_contention(p, o->m, o->n, o->k, false);
  const PnCurve *curve =
      s >= 0 && p->shape_contention[s].curve[0].n > 0 ? &p->shape_contention[s].curve[0] : &p->gemm_sm_scaling;
  if (curve->n == 0)
    return -1.0;
  return pn_curve_eval(curve, p->sm_count - *held, 1.0) / pn_curve_eval(curve, p->sm_count, 1.0);
}

static void check_nccl_overlap(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (guint i = 0; i < d->nccl_overlap->len; i++) {
    const PnCalNcclOverlap *o = &g_array_index(d->nccl_overlap, PnCalNcclOverlap, i);
    double pred               = 1.0;
    int held;
    if (!o->sm_margin && (pred = pn__calib_nccl_overlap_sm_rate(p, o, &held)) < 0.0)
      continue;
    pn__calib_push_err(o->sm_margin ? out->nccl_overlap_margin : out->nccl_overlap, pred, o->rate);
  }
}

/* The contention rows: each through its shape's curves, and the median over shapes per SMs held
 * through the profile-wide curves. */
static void check_contention(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  /* every (shape, SMs held) row through the curves of its shape, as the executor uses them */
  for (guint i = 0; i < d->contention->len; i++) {
    const PnCalContention *c = &g_array_index(d->contention, PnCalContention, i);
    int v                    = c->variant == PN_CAL_SPINNER ? 0 : c->variant == PN_CAL_SPINNER_SM_TARGET ? 1 : -1;
    if (v < 0 || c->sms_held < 1)
      continue;
    int s = pn_hw_profile_nearest_contention(p, c->m, c->n, c->k, c->fp8);
    if (s < 0 || p->shape_contention[s].curve[v].n == 0)
      continue;
    const PnCurve *curve = &p->shape_contention[s].curve[v];
    double rate = pn_curve_eval(curve, p->sm_count - c->sms_held, 1.0) / pn_curve_eval(curve, p->sm_count, 1.0);
    pn__calib_push_err(out->contention, 1.0 / rate, c->slowdown);
  }
  for (int v = PN_CAL_SPINNER; v <= PN_CAL_SPINNER_SM_TARGET; v += PN_CAL_SPINNER_SM_TARGET - PN_CAL_SPINNER) {
    const PnCurve *curve = v == PN_CAL_SPINNER ? &p->gemm_sm_scaling : &p->gemm_sm_limit_scaling;
    if (curve->n == 0)
      continue;
    double full = pn_curve_eval(curve, p->sm_count, 1.0);
    for (int k = 1; k < p->sm_count; k++) {
      g_autoptr(GArray) s = g_array_new(FALSE, FALSE, sizeof(double));
      for (guint i = 0; i < d->contention->len; i++) {
        const PnCalContention *c = &g_array_index(d->contention, PnCalContention, i);
        if ((int)c->variant == v && c->sms_held == k)
          g_array_append_val(s, c->slowdown);
      }
      if (s->len) {
        double pred = full / pn_curve_eval(curve, p->sm_count - k, 1.0), meas = pn_calib_median(s);
        pn__calib_push_err(out->contention_median, pred, meas);
      }
    }
  }
}

static void check_memory(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (guint i = 0; i < d->memory->len; i++) {
    const PnCalBytes *b = &g_array_index(d->memory, PnCalBytes, i);
    if (b->bytes < PN_CAL_LARGE_BYTES)
      continue;
    if (b->mem_class >= 0)
      pn__calib_push_err(out->memory, pn_cost_memory_class_ns(p, b->bytes, (PnMemClass)b->mem_class), b->ns);
    else
      pn__calib_push_err(out->memory_other, pn_cost_memory_ns(p, b->bytes), b->ns);
  }
}

void pn_calib_check(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  check_init(out);
  check_gemm(p, out);
  check_gemm_accum(d, p, out);
  check_bmm(d, p, out);
  check_torch_kernels(d, p, out);
  check_ub_push(d, p, out);
  check_attn(d, p, out);
  check_coll(d, p, out);
  check_nccl_overlap(d, p, out);
  check_contention(d, p, out);
  check_memory(d, p, out);
  pn__calib_check_host(d, p, out);
  pn__calib_check_hbm(d, p, out);
  pn__calib_check_loo(d, p, out);
}

void pn_cal_check_clear(PnCalCheck *c)
{
  for (guint i = 0; c->loo && i < c->loo->len; i++)
    g_array_unref(g_array_index(c->loo, PnCalLoo, i).errors);
  g_clear_pointer(&c->loo, g_array_unref);
  GArray **all[] = {&c->gemm,
                    &c->gemm_accum,
                    &c->attn,
                    &c->coll_default,
                    &c->coll_ctas,
                    &c->contention,
                    &c->memory,
                    &c->contention_median,
                    &c->coll_outliers,
                    &c->points,
                    &c->memory_other,
                    &c->nccl_overlap,
                    &c->nccl_overlap_margin,
                    &c->host_layer_fit,
                    &c->host_layer_tiny,
                    &c->host_local_layer,
                    &c->host_fsdp_unit,
                    &c->host_te_layer,
                    &c->host_ref,
                    &c->host_moe_layer,
                    &c->host_moe_expert,
                    &c->floor_copy,
                    &c->floor_gemm,
                    &c->bmm,
                    &c->bmm_rows,
                    &c->torch_kernels,
                    &c->ub_push,
                    &c->hbm_gemm,
                    &c->hbm_spinner,
                    &c->hbm_pair,
                    &c->hbm_ce,
                    &c->hbm_nccl_gemm,
                    &c->hbm_nccl_coll,
                    &c->hbm_copy_nccl,
                    &c->hbm_nccl_copy};
  for (size_t i = 0; i < G_N_ELEMENTS(all); i++)
    g_clear_pointer(all[i], g_array_unref);
  g_clear_pointer(&c->coll_groups, g_array_unref);
  g_clear_pointer(&c->coll_by_group, g_ptr_array_unref);
  g_clear_pointer(&c->coll_group_loo, g_ptr_array_unref);
}
