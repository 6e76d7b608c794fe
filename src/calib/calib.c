/* calib.c — fitting profile tables from microbenchmark rows (see calib.h). */
#include "calib/calib.h"

#include <math.h>
#include <string.h>

#include "calib/calib-private.h"
#include "hw/cost.h"

GQuark pn_calib_error_quark(void) { return g_quark_from_static_string("pn-calib-error-quark"); }

const char *pn_cal_kind_name(PnCalKind k)
{
  static const char *const names[PN_CAL_KINDS] = {
      "gemm",   "gemm_contention", "attention",  "memory",    "collective",   "copy_engine", "gemm_nccl_overlap",
      "launch", "host_torch",      "gemm_accum", "torch_mem", "unfused_attn", "hbm_share",   "copy_nccl_overlap",
      "p2p_sm", "megatron_host",   "host_ref"};
  g_assert((unsigned)k < PN_CAL_KINDS);
  return names[k];
}

void pn_cal_data_init(PnCalData *d)
{
  *d               = (PnCalData){0};
  d->gemm          = g_array_new(FALSE, FALSE, sizeof(PnCalGemm));
  d->contention    = g_array_new(FALSE, FALSE, sizeof(PnCalContention));
  d->attn          = g_array_new(FALSE, FALSE, sizeof(PnAttnPoint));
  d->memory        = g_array_new(FALSE, FALSE, sizeof(PnCalBytes));
  d->coll          = g_array_new(FALSE, FALSE, sizeof(PnCalColl));
  d->copy          = g_array_new(FALSE, FALSE, sizeof(PnCalBytes));
  d->nccl_overlap  = g_array_new(FALSE, FALSE, sizeof(PnCalNcclOverlap));
  d->floor         = g_array_new(FALSE, FALSE, sizeof(PnCalFloor));
  d->host          = g_array_new(FALSE, FALSE, sizeof(PnCalHostRow));
  d->layers        = g_array_new(FALSE, FALSE, sizeof(PnCalLayer));
  d->accum         = g_array_new(FALSE, FALSE, sizeof(PnCalGemmAccum));
  d->bmm           = g_array_new(FALSE, FALSE, sizeof(PnCalGemm));
  d->torch_kernels = g_array_new(FALSE, FALSE, sizeof(PnCalTorchKernel));
  d->hbm           = g_array_new(FALSE, FALSE, sizeof(PnCalHbm));
  d->copy_nccl     = g_array_new(FALSE, FALSE, sizeof(PnCalCopyNccl));
  d->p2p           = g_array_new(FALSE, FALSE, sizeof(PnCalP2p));
  d->megatron      = g_array_new(FALSE, FALSE, sizeof(PnCalMegatronLayer));
  d->host_ref      = g_array_new(FALSE, FALSE, sizeof(PnCalHostRef));
}

void pn_cal_data_clear(PnCalData *d)
{
  GArray **all[] = {&d->gemm,          &d->contention, &d->attn,      &d->memory, &d->coll,     &d->copy,
                    &d->nccl_overlap,  &d->floor,      &d->host,      &d->layers, &d->accum,    &d->bmm,
                    &d->torch_kernels, &d->hbm,        &d->copy_nccl, &d->p2p,    &d->megatron, &d->host_ref};
  for (size_t i = 0; i < G_N_ELEMENTS(all); i++)
    g_clear_pointer(all[i], g_array_unref);
}

static gint cmp_double(gconstpointer a, gconstpointer b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

double pn_calib_median(GArray *v)
{
  if (v->len == 0)
    return (double)NAN;
  g_array_sort(v, cmp_double);
  guint n = v->len;
  return n % 2 ? g_array_index(v, double, n / 2)
               : 0.5 * (g_array_index(v, double, n / 2 - 1) + g_array_index(v, double, n / 2));
}

static gint cmp_gemm(gconstpointer a, gconstpointer b)
{
  const PnCalGemm *x = a, *y = b;
  if (x->fp8 != y->fp8)
    return x->fp8 ? 1 : -1;
  if (x->batch != y->batch)
    return x->batch < y->batch ? -1 : 1;
  if (x->m != y->m)
    return x->m < y->m ? -1 : 1;
  if (x->n != y->n)
    return x->n < y->n ? -1 : 1;
  if (x->k != y->k)
    return x->k < y->k ? -1 : 1;
  return 0;
}

/* `rows` (of PnCalGemm, one dtype) sorted, and as table `t` one point per (batch, m, n, k): the
 * median of its rows' `ns`. */
static void median_by_shape(GArray *rows, PnGemmTable *t)
{
  g_array_sort(rows, cmp_gemm);
  g_free(t->pts);
  t->pts                    = g_new0(PnGemmPoint, rows->len);
  t->n                      = 0;
  g_autoptr(GArray) samples = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < rows->len;) {
    const PnCalGemm *g = &g_array_index(rows, PnCalGemm, i);
    g_array_set_size(samples, 0);
    guint j = i;
    for (; j < rows->len && cmp_gemm(g, &g_array_index(rows, PnCalGemm, j)) == 0; j++)
      g_array_append_val(samples, g_array_index(rows, PnCalGemm, j).ns);
    t->pts[t->n++] = (PnGemmPoint){.m = g->m, .n = g->n, .k = g->k, .ns = pn_calib_median(samples), .batch = g->batch};
    i              = j;
  }
}

/* One table point per (m, n, k): the median over its rows (passes, layouts). */
static void fit_gemm(const PnCalData *d, bool fp8, PnGemmTable *t)
{
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(PnCalGemm));
  for (guint i = 0; i < d->gemm->len; i++) {
    const PnCalGemm *g = &g_array_index(d->gemm, PnCalGemm, i);
    if (g->fp8 == fp8)
      g_array_append_val(rows, *g);
  }
  if (rows->len > 0)
    median_by_shape(rows, t);
}

/* One gemm_accum table: per (m, n, k) of the (fp8, into_fp32) rows, the median ratio times the
 * plain GEMM's price in the profile's own table (fitted just before, or the base profile's).
 * Returns the points written (0: no rows, the table is kept). */
static int fit_gemm_accum(const PnCalData *d, bool fp8, bool into_fp32, PnHwProfile *p)
{
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(PnCalGemm)); /* ns: the ratio */
  for (guint i = 0; i < d->accum->len; i++) {
    const PnCalGemmAccum *a = &g_array_index(d->accum, PnCalGemmAccum, i);
    if (a->fp8 == fp8 && a->into_fp32 == into_fp32)
      g_array_append_val(rows, ((PnCalGemm){.m = a->m, .n = a->n, .k = a->k, .fp8 = a->fp8, .ns = a->ratio}));
  }
  const PnGemmTable *plain = fp8 ? &p->gemm_fp8 : &p->gemm_bf16;
  if (rows->len == 0 || plain->n == 0)
    return 0;
  PnGemmTable *t = &p->gemm_accum[fp8][into_fp32];
  median_by_shape(rows, t);
  for (int i = 0; i < t->n; i++) {
    PnGemmPoint *pt = &t->pts[i];
    pt->ns *= pn_cost_gemm_ns(p, pt->m, pt->n, pt->k, fp8 ? PN_DT_FP8 : PN_DT_BF16, NULL);
  }
  return t->n;
}

static void curve_set(PnCurve *c, GArray *x, GArray *y, bool log_x)
{
  g_free(c->x);
  g_free(c->y);
  c->n     = (int)x->len;
  c->x     = g_memdup2(x->data, sizeof(double) * x->len);
  c->y     = g_memdup2(y->data, sizeof(double) * y->len);
  c->log_x = log_x;
}

/* The unfused attention's batched GEMMs: one point per (batch, m, n, k), the median over the ops
 * and repeats of that shape. Returns the points written (0: no rows, the table is kept). */
static int fit_bmm(const PnCalData *d, PnGemmTable *t)
{
  if (d->bmm->len == 0)
    return 0;
  g_autoptr(GArray) rows = g_array_copy(d->bmm);
  median_by_shape(rows, t);
  return t->n;
}

/* A sample of a curve fitted by median_curve. */
typedef struct {
  double x, y;
} XY;

static gint cmp_xy(gconstpointer a, gconstpointer b)
{
  double d = ((const XY *)a)->x - ((const XY *)b)->x;
  return d < 0 ? -1 : d > 0 ? 1 : 0;
}

/* A curve from (x, y) samples: x = each distinct x (ascending), y = the median of its samples.
 * Returns the points written (0: no samples, the curve is kept). */
static int median_curve(GArray *samples, PnCurve *c, bool log_x)
{
  g_array_sort(samples, cmp_xy);
  g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ys = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) v  = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < samples->len;) {
    double x = g_array_index(samples, XY, i).x;
    g_array_set_size(v, 0);
    for (; i < samples->len && g_array_index(samples, XY, i).x == x; i++)
      g_array_append_val(v, g_array_index(samples, XY, i).y);
    double y = pn_calib_median(v);
    g_array_append_val(xs, x);
    g_array_append_val(ys, y);
  }
  if (xs->len == 0)
    return 0;
  curve_set(c, xs, ys, log_x);
  return (int)xs->len;
}

/* CTAs pushing to a peer through NVLink with plain stores, both GPUs at once (mb_p2p_sm
 * push_bidir, the way a userbuffers all-gather moves data without multicast), or loading from it
 * (`pull`, pull_1to0: its reduce-scatter): x = each CTA count measured, y = the median over its
 * sizes of bytes per ns (one direction). Returns the points (0: no rows, the curve kept). */
static int fit_ub_rate(const PnCalData *d, bool pull, PnCurve *c)
{
  g_autoptr(GArray) samples = g_array_new(FALSE, FALSE, sizeof(XY));
  for (guint i = 0; i < d->p2p->len; i++) {
    const PnCalP2p *r = &g_array_index(d->p2p, PnCalP2p, i);
    if (r->pull == pull)
      g_array_append_val(samples, ((XY){(double)r->blocks, r->bytes / r->ns}));
  }
  return median_curve(samples, c, true);
}

/* One kernel's ratio to a copy: x = each sequence length measured (ascending), y = the median
 * over its rows at that length (head dims, batches) of the profile's copy-class time for the
 * row's bytes over the row's measured time, so that pricing the row's bytes replays its time (the
 * torch clone timed beside each row, `vs_copy`, moves about 6% faster than the copy class's
 * kernel). Returns the points written (0: no rows, the curve is kept). */
static int fit_torch_kernel(const PnCalData *d, PnTorchKernel kernel, const PnHwProfile *p, PnCurve *c)
{
  g_autoptr(GArray) samples = g_array_new(FALSE, FALSE, sizeof(XY));
  for (guint i = 0; i < d->torch_kernels->len; i++) {
    const PnCalTorchKernel *r = &g_array_index(d->torch_kernels, PnCalTorchKernel, i);
    if (r->kernel == kernel && r->ns > 0.0)
      g_array_append_val(samples, ((XY){(double)r->seq, pn_cost_memory_class_ns(p, r->bytes, PN_MEM_COPY) / r->ns}));
  }
  return median_curve(samples, c, true);
}

/* x = SMs usable (ascending), y = 1 / median slowdown at that many SMs held. */
static bool fit_contention(const PnCalData *d, PnCalVariant variant, int sm_count, PnCurve *c)
{
  int max_k = 0;
  for (guint i = 0; i < d->contention->len; i++) {
    const PnCalContention *r = &g_array_index(d->contention, PnCalContention, i);
    if (r->variant == variant && r->sms_held > max_k)
      max_k = r->sms_held;
  }
  if (max_k == 0)
    return false;
  g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ys = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) s  = g_array_new(FALSE, FALSE, sizeof(double));
  for (int k = max_k; k >= 0; k--) {
    g_array_set_size(s, 0);
    for (guint i = 0; i < d->contention->len; i++) {
      const PnCalContention *r = &g_array_index(d->contention, PnCalContention, i);
      if (r->variant == variant && r->sms_held == k)
        g_array_append_val(s, r->slowdown);
    }
    if (s->len == 0)
      continue;
    double x = (double)(sm_count - k);
    double y = k == 0 ? 1.0 : 1.0 / pn_calib_median(s);
    if (y > 1.0)
      y = 1.0; /* holding SMs never speeds a GEMM up: ratios above 1 are timing noise */
    g_array_append_val(xs, x);
    g_array_append_val(ys, y);
  }
  if (xs->len < 2)
    return false;
  curve_set(c, xs, ys, false);
  return true;
}

static gint cmp_attn(gconstpointer a, gconstpointer b)
{
  const PnAttnPoint *x = a, *y = b;
  int64_t kx[] = {x->head_dim, x->head_dim_v, x->batch, x->seq, x->heads, x->kv_heads};
  int64_t ky[] = {y->head_dim, y->head_dim_v, y->batch, y->seq, y->heads, y->kv_heads};
  for (int i = 0; i < 6; i++)
    if (kx[i] != ky[i])
      return kx[i] < ky[i] ? -1 : 1;
  return 0;
}

/* The fastest backend per shape (TE picks cuDNN's fused attention on Hopper). */
void pn__calib_fit_attn(const PnCalData *d, PnAttnTable *t)
{
  g_autoptr(GArray) rows = g_array_copy(d->attn);
  g_array_sort(rows, cmp_attn);
  g_free(t->pts);
  t->pts = g_new0(PnAttnPoint, rows->len ? rows->len : 1);
  t->n   = 0;
  for (guint i = 0; i < rows->len; i++) {
    const PnAttnPoint *a = &g_array_index(rows, PnAttnPoint, i);
    if (t->n > 0 && cmp_attn(&t->pts[t->n - 1], a) == 0) {
      PnAttnPoint *last = &t->pts[t->n - 1];
      last->fwd_ns      = fmin(last->fwd_ns, a->fwd_ns);
      last->bwd_ns      = fmin(last->bwd_ns, a->bwd_ns);
    } else {
      t->pts[t->n++] = *a;
    }
  }
}

/* Wire bytes per GPU of a measured collective, as coll.c counts them. */
static double coll_wire(const PnCalColl *c)
{
  double n = (double)c->nranks;
  switch (c->kind) {
  case PN_COLL_ALL_REDUCE:
    return 2.0 * c->bytes * (n - 1.0) / n;
  case PN_COLL_SEND_RECV:
    return c->bytes;
  default:
    return c->bytes * (n - 1.0) / n;
  }
}

static double coll_hops(const PnCalColl *c)
{
  double n = (double)c->nranks;
  return c->kind == PN_COLL_ALL_REDUCE                                     ? 2.0 * (n - 1.0)
         : (c->kind == PN_COLL_SEND_RECV || c->kind == PN_COLL_ALL_TO_ALL) ? 1.0
                                                                           : n - 1.0;
}

/* A measurement slower than a larger message of the same collective and channel count is not
 * physical (a warm-up or a disturbed sample): the fit ignores it and the check reports it. */
bool pn__calib_coll_outlier(const PnCalData *d, const PnCalColl *c)
{
  for (guint i = 0; i < d->coll->len; i++) {
    const PnCalColl *o = &g_array_index(d->coll, PnCalColl, i);
    if (o->kind == c->kind && o->ctas == c->ctas && o->nranks == c->nranks && o->bytes > c->bytes &&
        o->ns < 0.9 * (double)c->ns)
      return true;
  }
  return false;
}

/* The nccl_pair_* figures (and the base latency, per-channel rates and efficiency curves) describe
 * groups of 2 GPUs and are fitted from the 2-rank rows; the measured table keeps the rows of
 * every group size (microbench --group-sizes), which pn_coll_cost looks up by the group's size. */
static void fit_coll(const PnCalData *all, PnHwProfile *p)
{
  PnCalData pair = *all;
  pair.coll      = g_array_new(FALSE, FALSE, sizeof(PnCalColl));
  for (guint i = 0; i < all->coll->len; i++)
    if (g_array_index(all->coll, PnCalColl, i).nranks == 2)
      g_array_append_val(pair.coll, g_array_index(all->coll, PnCalColl, i));
  const PnCalData *d = &pair;
  /* base latency: the smallest all-gather / reduce-scatter at default channels, minus its hops */
  g_autoptr(GArray) small = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) cta   = g_array_new(FALSE, FALSE, sizeof(double));
  double min_bytes = (double)INFINITY, max_bytes = 0.0;
  for (guint i = 0; i < d->coll->len; i++) {
    const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
    min_bytes          = fmin(min_bytes, c->bytes);
    max_bytes          = fmax(max_bytes, c->bytes);
  }
  for (guint i = 0; i < d->coll->len; i++) {
    const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
    if (c->ctas == 0 && c->bytes == min_bytes && (c->kind == PN_COLL_ALL_GATHER || c->kind == PN_COLL_REDUCE_SCATTER)) {
      double base = c->ns - coll_hops(c) * (double)p->nccl_nvlink_hop_ns;
      g_array_append_val(small, base);
    }
    if (c->ctas == 1 && c->bytes == max_bytes)
      g_array_append_val(cta, c->busbw_bytes_per_ns);
  }
  if (small->len)
    p->nccl_base_latency_ns = fmax(0.0, pn_calib_median(small));
  if (cta->len)
    p->nccl_cta_bytes_per_ns = pn_calib_median(cta);
  (void)min_bytes;
  for (int kind = 0; kind < PN_PROFILE_COLL_KINDS; kind++) {
    double peak = 0.0;
    for (guint i = 0; i < d->coll->len; i++) {
      const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
      if ((int)c->kind == kind && c->ctas == 0 && c->bytes == max_bytes)
        peak = c->busbw_bytes_per_ns;
    }
    if (peak <= 0.0)
      continue;
    p->nccl_pair_busbw[kind] = peak;
    /* the latency floor: the fastest small message (the very first size can carry warm-up) */
    double floor_ns = (double)INFINITY;
    for (guint i = 0; i < d->coll->len; i++) {
      const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
      if ((int)c->kind == kind && c->ctas == 0 && c->bytes <= 65536.0 && !pn__calib_coll_outlier(d, c))
        floor_ns = fmin(floor_ns, c->ns);
    }
    if (isfinite(floor_ns))
      p->nccl_pair_latency_ns[kind] = floor_ns;
    for (guint i = 0; i < d->coll->len; i++) {
      const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
      if ((int)c->kind == kind && c->ctas == 1 && c->bytes == max_bytes)
        p->nccl_cta_busbw[kind] = c->busbw_bytes_per_ns;
    }
    g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) ys = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < d->coll->len; i++) {
      const PnCalColl *c = &g_array_index(d->coll, PnCalColl, i);
      if ((int)c->kind != kind || c->ctas != 0 || pn__calib_coll_outlier(d, c))
        continue;
      double lat = p->nccl_pair_latency_ns[kind] > 0.0 ? p->nccl_pair_latency_ns[kind]
                                                       : p->nccl_base_latency_ns + coll_hops(c) * p->nccl_nvlink_hop_ns;
      double t   = c->ns - lat;
      double y   = t > 0.0 ? coll_wire(c) / t / peak : 1.0;
      y          = fmin(1.0, fmax(y, 1e-3));
      double x   = c->bytes / c->nranks;
      if (xs->len && x <= g_array_index(xs, double, xs->len - 1))
        continue;
      g_array_append_val(xs, x);
      g_array_append_val(ys, y);
    }
    if (xs->len >= 2)
      curve_set(&p->coll_efficiency[kind], xs, ys, true);
  }
  /* the measured table itself, every group size, default rows at NCCL's default channel count
   * (computed below for send/recv, so filled after it) */
  g_free(p->nccl_table.pts);
  p->nccl_table.pts = g_new0(PnCollPoint, all->coll->len ? all->coll->len : 1);
  p->nccl_table.n   = 0;
  /* NCCL's default p2p channel count is not printed per call: the fewest channels whose
   * one-channel bandwidth reaches the default send/recv bandwidth measured. */
  if (p->nccl_pair_busbw[PN_COLL_SEND_RECV] > 0.0 && p->nccl_cta_busbw[PN_COLL_SEND_RECV] > 0.0)
    p->nccl_p2p_ctas = (int)ceil(p->nccl_pair_busbw[PN_COLL_SEND_RECV] / p->nccl_cta_busbw[PN_COLL_SEND_RECV] - 1e-9);
  for (guint i = 0; i < all->coll->len; i++) {
    const PnCalColl *c = &g_array_index(all->coll, PnCalColl, i);
    if (c->nranks < 2 || c->nranks > PN_PROFILE_MAX_TABLE_RANKS || pn__calib_coll_outlier(all, c))
      continue;
    int ctas = c->ctas;
    if (ctas == 0)
      ctas = c->kind == PN_COLL_SEND_RECV ? p->nccl_p2p_ctas : p->nccl_ctas_nvlink;
    p->nccl_table.pts[p->nccl_table.n++] =
        (PnCollPoint){.kind = (int)c->kind, .ranks = c->nranks, .ctas = ctas, .bytes = c->bytes, .ns = c->ns};
  }
  g_array_unref(pair.coll);
}

/* Bandwidth vs size of one memory-kernel class: rows >= 64 MiB, sizes within 2% grouped, the
 * median bandwidth of each group. */
static bool fit_mem_class(const PnCalData *d, int cls, PnCurve *c)
{
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(PnCalBytes));
  for (guint i = 0; i < d->memory->len; i++) {
    const PnCalBytes *b = &g_array_index(d->memory, PnCalBytes, i);
    if (b->mem_class == cls && b->bytes >= 64.0 * 1024 * 1024 && b->ns > 0)
      g_array_append_val(rows, *b);
  }
  if (rows->len == 0)
    return false;
  g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ys = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) bw = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) sz = g_array_new(FALSE, FALSE, sizeof(double));
  double done          = 0.0; /* sizes up to here are in the curve */
  for (;;) {
    double next = (double)INFINITY;
    for (guint i = 0; i < rows->len; i++) {
      double b = g_array_index(rows, PnCalBytes, i).bytes;
      if (b > done * 1.02 && b < next)
        next = b;
    }
    if (!isfinite(next))
      break;
    g_array_set_size(bw, 0);
    g_array_set_size(sz, 0);
    for (guint i = 0; i < rows->len; i++) {
      const PnCalBytes *b = &g_array_index(rows, PnCalBytes, i);
      if (b->bytes >= next && b->bytes <= next * 1.02) {
        double r = b->bytes / b->ns;
        g_array_append_val(bw, r);
        g_array_append_val(sz, b->bytes);
      }
    }
    double x = pn_calib_median(sz), y = pn_calib_median(bw);
    g_array_append_val(xs, x);
    g_array_append_val(ys, y);
    done = next * 1.02;
  }
  curve_set(c, xs, ys, true);
  return true;
}

static double large_median(GArray *rows)
{
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < rows->len; i++) {
    const PnCalBytes *b = &g_array_index(rows, PnCalBytes, i);
    if (b->bytes >= PN_CAL_LARGE_BYTES && b->mem_class != PN_MEM_DROPOUT) { /* the HBM figure: not dropout */
      double bw = b->bytes / b->ns;
      g_array_append_val(v, bw);
    }
  }
  return pn_calib_median(v);
}

gboolean pn_calib_fit(const PnCalData *d, PnHwProfile *p, PnCalFitted *f, GError **error)
{
  *f = (PnCalFitted){0};
  if (d->sm_count > 0 && d->sm_count != p->sm_count) {
    g_set_error(error, PN_CALIB_ERROR, PN_CALIB_ERROR_INVALID,
                "the measurements were taken on a GPU with %d SMs, the profile %s has %d", d->sm_count, p->name,
                p->sm_count);
    return FALSE;
  }
  /* the day of the newest measurement fitted (gemm_nccl_overlap rows are read for the check only) */
  p->calibrated[0] = '\0';
  for (int k = 0; k < PN_CAL_KINDS; k++)
    if (k != PN_CAL_KIND_NCCL_OVERLAP && strcmp(d->origin[k].date, p->calibrated) > 0)
      g_strlcpy(p->calibrated, d->origin[k].date, sizeof p->calibrated);
  fit_gemm(d, false, &p->gemm_bf16);
  fit_gemm(d, true, &p->gemm_fp8);
  f->gemm_bf16_points = p->gemm_bf16.n;
  f->gemm_fp8_points  = p->gemm_fp8.n;
  f->gemm_bf16        = p->gemm_bf16.n > 0;
  f->gemm_fp8         = p->gemm_fp8.n > 0;
  for (int f8 = 0; f8 < 2; f8++)
    for (int into = 0; into < 2; into++)
      f->gemm_accum_points[f8][into] = fit_gemm_accum(d, f8, into, p);
  f->accum_from     = d->origin[PN_CAL_KIND_GEMM_ACCUM];
  f->torch_mem_from = d->origin[PN_CAL_KIND_TORCH_MEM];
  f->unfused_from   = d->origin[PN_CAL_KIND_UNFUSED_ATTN];
  f->bmm_points     = fit_bmm(d, &p->bmm_bf16);
  f->ub_push_points = fit_ub_rate(d, false, &p->ub_push_bytes_per_ns);
  f->ub_pull_points = fit_ub_rate(d, true, &p->ub_pull_bytes_per_ns);
  f->ub_push_from   = d->origin[PN_CAL_KIND_P2P_SM];
  /* per shape: the median of each (shape, variant, SMs held) */
  {
    g_free(p->contention_points);
    p->contention_points   = g_new0(PnContentionPoint, d->contention->len ? d->contention->len : 1);
    p->n_contention_points = 0;
    g_autoptr(GArray) v    = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < d->contention->len; i++) {
      const PnCalContention *c = &g_array_index(d->contention, PnCalContention, i);
      int variant              = c->variant == PN_CAL_SPINNER ? 0 : c->variant == PN_CAL_SPINNER_SM_TARGET ? 1 : -1;
      if (variant < 0 || c->sms_held < 1 || c->sms_held >= p->sm_count)
        continue;
      bool seen = false;
      for (int j = 0; j < p->n_contention_points && !seen; j++) {
        const PnContentionPoint *q = &p->contention_points[j];
        seen = q->m == c->m && q->n == c->n && q->k == c->k && q->fp8 == c->fp8 && q->variant == variant &&
               q->sms_held == c->sms_held;
      }
      if (seen)
        continue;
      g_array_set_size(v, 0);
      for (guint j = i; j < d->contention->len; j++) {
        const PnCalContention *o = &g_array_index(d->contention, PnCalContention, j);
        if (o->m == c->m && o->n == c->n && o->k == c->k && o->fp8 == c->fp8 && o->variant == c->variant &&
            o->sms_held == c->sms_held)
          g_array_append_val(v, o->slowdown);
      }
      p->contention_points[p->n_contention_points++] =
          (PnContentionPoint){c->m, c->n, c->k, c->fp8, variant, c->sms_held, fmax(pn_calib_median(v), 1e-3)};
    }
    pn_hw_profile_index_contention(p);
  }
  f->gemm_sm_scaling       = fit_contention(d, PN_CAL_SPINNER, p->sm_count, &p->gemm_sm_scaling);
  f->gemm_sm_limit_scaling = fit_contention(d, PN_CAL_SPINNER_SM_TARGET, p->sm_count, &p->gemm_sm_limit_scaling);
  if (d->attn->len) {
    pn__calib_fit_attn(d, &p->attn_bf16);
    f->attn        = true;
    f->attn_points = p->attn_bf16.n;
  }
  for (int c = 0; c < PN_PROFILE_MEM_CLASSES; c++)
    f->mem_classes = fit_mem_class(d, c, &p->mem_bandwidth[c]) || f->mem_classes;
  double hbm = large_median(d->memory);
  if (isfinite(hbm)) {
    p->hbm_bytes_per_ns = hbm;
    f->hbm              = true;
  }
  /* after the copy class (and the HBM figure), which the torch kernels' ratios are taken against */
  for (int k = 0; k < PN_TK_N; k++)
    f->torch_kernel_points[k] = fit_torch_kernel(d, (PnTorchKernel)k, p, &p->torch_kernel_vs_copy[k]);
  if (d->coll->len) {
    fit_coll(d, p);
    f->coll      = true;
    f->coll_rows = (int)d->coll->len;
  }
  double ce = large_median(d->copy);
  if (isfinite(ce)) {
    p->nvlink_ce_bytes_per_ns = ce;
    f->copy                   = true;
  }
  pn__calib_fit_host(d, p, &f->host);
  pn__calib_fit_hbm(d, p, f); /* after the HBM figure, its capacity */
  return TRUE;
}
