/* calibio.c — microbenchmark results in, calibrated profile out (see calibio.h). */
#include "io/calibio.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "hw/cost.h"
#include "io/file.h"
#include "io/hwprofile.h"
#include "io/io-private.h"
#include "io/out.h"

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* A required positive number of row `i` (ints and floats alike). */
static gboolean row_num(const PnIoCtx *ctx, const cJSON *row, gsize i, const char *key, double *out, GError **error)
{
  const cJSON *v = get(row, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0.0) {
    g_autofree char *rptr = pn__io_ptr_index("/results", i);
    g_autofree char *ptr  = pn__io_ptr_child(rptr, key);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a non-negative number");
    return FALSE;
  }
  *out = v->valuedouble == 0.0 ? 0.0 : v->valuedouble; /* -0 reads as 0 */
  return TRUE;
}

/* A required integer in [min, 1e9] of row `i`: the sizes, counts and SM numbers that end up in a
 * profile's tables (which hold positive integers up to 1e9) or in an int. */
static gboolean row_int(const PnIoCtx *ctx, const cJSON *row, gsize i, const char *key, double min, double *out,
                        GError **error)
{
  const cJSON *v = get(row, key);
  double d       = cJSON_IsNumber(v) ? v->valuedouble : (double)NAN;
  if (!(isfinite(d) && d == floor(d) && d >= min && d <= 1e9)) {
    g_autofree char *rptr = pn__io_ptr_index("/results", i);
    g_autofree char *ptr  = pn__io_ptr_child(rptr, key);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected an integer from %.0f to 1000000000", min);
    return FALSE;
  }
  *out = d;
  return TRUE;
}

static const char *row_str(const cJSON *row, const char *key)
{
  const cJSON *v = get(row, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static int coll_kind(const char *name)
{
  static const char *const names[] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all", "sendrecv"};
  for (int i = 0; i < (int)G_N_ELEMENTS(names); i++)
    if (strcmp(name, names[i]) == 0)
      return i;
  return -1;
}

static PnCalVariant variant_of(const char *v)
{
  if (strcmp(v, "spinner") == 0)
    return PN_CAL_SPINNER;
  if (strcmp(v, "sm_target") == 0)
    return PN_CAL_SM_TARGET;
  if (strcmp(v, "spinner_sm_target") == 0)
    return PN_CAL_SPINNER_SM_TARGET;
  if (strcmp(v, "spinner_mem") == 0)
    return PN_CAL_SPINNER_MEM;
  return PN_CAL_OTHER;
}

/* The row macros below read row `i` of `row` into a local and return FALSE from the reader on error. */
#define NUM(key, dst)                                                                                                  \
  do {                                                                                                                 \
    if (!row_num(ctx, row, i, key, &(dst), error))                                                                     \
      return FALSE;                                                                                                    \
  } while (0)
/* A duration that may land in a profile table, whose durations are at most 1e15 ns. */
#define DUR(key, dst)                                                                                                  \
  do {                                                                                                                 \
    NUM(key, dst);                                                                                                     \
    if ((dst) > 1e15) {                                                                                                \
      g_autofree char *rptr_ = pn__io_ptr_index("/results", i);                                                        \
      g_autofree char *ptr_  = pn__io_ptr_child(rptr_, key);                                                           \
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr_, "%g ns is absurdly long (at most 1e15)", (dst));               \
      return FALSE;                                                                                                    \
    }                                                                                                                  \
  } while (0)
#define INT(key, dst, min)                                                                                             \
  do {                                                                                                                 \
    if (!row_int(ctx, row, i, key, min, &(dst), error))                                                                \
      return FALSE;                                                                                                    \
  } while (0)

/* Reads row `i` (an object whose status is ok) of a result file of one kind into `d`. A row the
 * fits cannot use (no time, an unknown collective) is checked and left out. */
typedef gboolean (*RowReader)(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error);

static gboolean read_gemm_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  double m, n, kk, ns;
  INT("m", m, 1);
  INT("n", n, 1);
  INT("k", kk, 1);
  DUR("median_ns", ns);
  PnCalGemm g = {
      .m = (int64_t)m, .n = (int64_t)n, .k = (int64_t)kk, .fp8 = strcmp(row_str(row, "dtype"), "fp8") == 0, .ns = ns};
  if (ns > 0)
    g_array_append_val(d->gemm, g);
  return TRUE;
}

static gboolean read_gemm_accum_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  double m, n, kk, ratio;
  INT("m", m, 1);
  INT("n", n, 1);
  INT("k", kk, 1);
  NUM("ratio", ratio);
  const char *into = row_str(row, "into");
  if (strcmp(into, "fp32") != 0 && strcmp(into, "bf16") != 0) {
    g_autofree char *p = g_strdup_printf("/results/%" G_GSIZE_FORMAT "/into", i);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, p, "expected \"fp32\" or \"bf16\"");
    return FALSE;
  }
  PnCalGemmAccum a = {
      (int64_t)m, (int64_t)n, (int64_t)kk, strcmp(row_str(row, "dtype"), "fp8") == 0, strcmp(into, "fp32") == 0, ratio};
  if (ratio > 0)
    g_array_append_val(d->accum, a);
  return TRUE;
}

static gboolean read_contention_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  double m, n, kk, held, slow;
  INT("m", m, 1);
  INT("n", n, 1);
  INT("k", kk, 1);
  INT("sms_held", held, 0);
  NUM("slowdown", slow);
  PnCalContention c = {(int64_t)m,
                       (int64_t)n,
                       (int64_t)kk,
                       strcmp(row_str(row, "dtype"), "fp8") == 0,
                       variant_of(row_str(row, "variant")),
                       (int)held,
                       slow,
                       0.0};
  const cJSON *base = get(row, "baseline_ns");
  if (cJSON_IsNumber(base))
    DUR("baseline_ns", c.baseline_ns);
  if (slow > 0)
    g_array_append_val(d->contention, c);
  return TRUE;
}

static gboolean read_attention_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  double seq, heads, kvh, hd, fwd, bwd, batch = 1;
  INT("seq_len", seq, 1);
  INT("heads", heads, 1);
  INT("kv_heads", kvh, 1);
  INT("head_dim", hd, 1);
  DUR("fwd_ns", fwd);
  DUR("bwd_ns", bwd);
  if (get(row, "batch"))
    INT("batch", batch, 1);
  double hdv = hd; /* mb_attention.py --v-head-dim: the value heads' own width */
  if (get(row, "head_dim_v"))
    INT("head_dim_v", hdv, 1);
  PnAttnPoint a = {(int64_t)batch, (int64_t)seq, (int64_t)heads, (int64_t)kvh, (int64_t)hd, (int64_t)hdv, fwd, bwd};
  if (fwd > 0 && bwd > 0)
    g_array_append_val(d->attn, a);
  return TRUE;
}

static gboolean read_memory_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  double bytes, ns;
  NUM("moved_bytes", bytes);
  DUR("median_ns", ns);
  const char *kn = row_str(row, "kernel");
  int cls        = strcmp(kn, "copy") == 0                                  ? PN_MEM_COPY
                   : strcmp(kn, "rmsnorm") == 0                             ? PN_MEM_NORM
                   : (strcmp(kn, "gelu") == 0 || strcmp(kn, "swiglu") == 0) ? PN_MEM_ACTIVATION
                   : strcmp(kn, "adam") == 0                                ? PN_MEM_OPTIMIZER
                                                                            : -1;
  PnCalBytes b   = {bytes, ns, cls};
  if (ns > 0)
    g_array_append_val(d->memory, b);
  return TRUE;
}

static int torch_kernel_of(const char *op);

/* mb_torch_mem.py: its "dropout" rows are fitted (the dropout memory class), and only from 512 MiB
 * moved: a smaller compiled call is bound by its Python dispatch, not by the kernel; its rows of a
 * PnTorchKernel (the GLU clamps) are fitted as that kernel's ratio to a copy, x = the rows. The
 * other rows are a check of the classes mb_memory measures (microbench/README.md). */
static gboolean read_torch_mem_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  int k = torch_kernel_of(row_str(row, "op"));
  if (k >= 0) {
    double rows, bytes, ns, ratio;
    INT("tokens", rows, 1);
    NUM("moved_bytes", bytes);
    DUR("median_ns", ns);
    NUM("vs_copy", ratio);
    PnCalTorchKernel t = {(PnTorchKernel)k, (int64_t)rows, bytes, ns, ratio};
    if (ns > 0 && ratio > 0)
      g_array_append_val(d->torch_kernels, t);
    return TRUE;
  }
  if (strcmp(row_str(row, "cls"), "dropout") != 0)
    return TRUE;
  double bytes, ns;
  NUM("moved_bytes", bytes);
  DUR("median_ns", ns);
  PnCalBytes b = {bytes, ns, PN_MEM_DROPOUT};
  if (ns > 0 && bytes >= 512.0 * 1024 * 1024)
    g_array_append_val(d->memory, b);
  return TRUE;
}

/* The PnTorchKernel an mb_unfused_attn.py "mem" row's op names, or -1 for one the fits do not
 * know. */
static int torch_kernel_of(const char *op)
{
  for (int k = 0; k < PN_TK_N; k++)
    if (strcmp(op, pn__io_torch_kernel_names[k]) == 0)
      return k;
  return -1;
}

/* mb_unfused_attn.py: its "bmm" rows (the batched GEMMs) and "mem" rows (the PyTorch kernels,
 * each with its bandwidth over a copy's); the "layer" rows time the whole module, a check of the
 * sum of the pieces, not fitted. A kernel of an op the fits do not know is checked and left out. */
static gboolean read_unfused_attn_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  const char *kind = row_str(row, "kind");
  if (strcmp(kind, "bmm") == 0) {
    double b, m, n, kk, ns;
    INT("batch", b, 1);
    INT("m", m, 1);
    INT("n", n, 1);
    INT("k", kk, 1);
    DUR("median_ns", ns);
    PnCalGemm g = {.m = (int64_t)m, .n = (int64_t)n, .k = (int64_t)kk, .ns = ns, .batch = (int64_t)b};
    if (ns > 0)
      g_array_append_val(d->bmm, g);
  } else if (strcmp(kind, "mem") == 0) {
    double seq, bytes, ns, ratio;
    INT("seq", seq, 1);
    NUM("moved_bytes", bytes);
    DUR("median_ns", ns);
    NUM("vs_copy", ratio);
    int k              = torch_kernel_of(row_str(row, "op"));
    PnCalTorchKernel t = {(PnTorchKernel)k, (int64_t)seq, bytes, ns, ratio};
    if (k >= 0 && ns > 0 && ratio > 0)
      g_array_append_val(d->torch_kernels, t);
  }
  return TRUE;
}

static gboolean read_collective_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  int ck = coll_kind(row_str(row, "collective"));
  double ctas, nr, bytes, ns, busbw;
  INT("ctas_requested", ctas, 0);
  INT("nranks", nr, 0);
  NUM("size_bytes", bytes);
  DUR("median_ns", ns);
  NUM("busbw_gbps", busbw);
  PnCalColl c = {(PnCollKind)ck, (int)ctas, (int)nr, bytes, ns, busbw};
  if (ck >= 0 && ns > 0 && nr >= 2)
    g_array_append_val(d->coll, c);
  return TRUE;
}

static gboolean read_nccl_overlap_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  double m, n, kk, ctas, nr, rate;
  INT("m", m, 1);
  INT("n", n, 1);
  INT("k", kk, 1);
  INT("ctas_requested", ctas, 0);
  INT("nranks", nr, 0);
  const cJSON *r = get(row, "gemm_rate_while_overlapped");
  /* covered rows only ("single" rows time one GEMM that outlives the collective) */
  if (strcmp(row_str(row, "mode"), "covered") == 0 && cJSON_IsNumber(r)) {
    NUM("gemm_rate_while_overlapped", rate);
    PnCalNcclOverlap o = {.m         = (int64_t)m,
                          .n         = (int64_t)n,
                          .k         = (int64_t)kk,
                          .ctas      = (int)ctas,
                          .nranks    = (int)nr,
                          .sm_margin = cJSON_IsTrue(get(row, "sm_margin")),
                          .rate      = rate};
    int kind           = coll_kind(row_str(row, "collective"));
    o.kind             = kind >= 0 ? (PnCollKind)kind : PN_COLL_ALL_GATHER;
    if (kind >= 0 && cJSON_IsNumber(get(row, "coll_slowdown"))) { /* the collective's side, for the HBM check */
      NUM("size_bytes", o.bytes);
      DUR("coll_alone_ns", o.coll_alone_ns);
      NUM("coll_slowdown", o.coll_slowdown);
      DUR("gemm_alone_ns", o.gemm_alone_ns);
    }
    if (rate > 0 && nr >= 2)
      g_array_append_val(d->nccl_overlap, o);
  }
  return TRUE;
}

static gboolean read_copy_engine_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  double bytes, ns;
  NUM("moved_bytes", bytes);
  DUR("median_ns", ns);
  PnCalBytes b = {bytes, ns, -1};
  if (ns > 0 && g_str_has_prefix(row_str(row, "mode"), "peer_") && !strstr(row_str(row, "mode"), "bidir"))
    g_array_append_val(d->copy, b);
  return TRUE;
}

/* mb_p2p_sm.cu: the push_bidir rows (both GPUs push to each other, as a userbuffers all-gather's
 * CTAs do without multicast) and the pull_1to0 rows (loads from the peer, its reduce-scatter's);
 * the one-way push and local rows are information. */
static gboolean read_p2p_sm_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  const char *mode = row_str(row, "mode");
  bool pull        = strcmp(mode, "pull_1to0") == 0;
  if (!pull && strcmp(mode, "push_bidir") != 0)
    return TRUE;
  double blocks, bytes, ns;
  INT("blocks", blocks, 1);
  NUM("bytes", bytes);
  DUR("median_ns", ns);
  PnCalP2p r = {(int)blocks, pull, bytes, ns};
  if (ns > 0 && bytes > 0)
    g_array_append_val(d->p2p, r);
  return TRUE;
}

/* An optional non-negative number of row `i`: NAN when absent or null (a figure the benchmark
 * could not take, e.g. a kernel count without the profiler). */
static gboolean row_opt(const PnIoCtx *ctx, const cJSON *row, gsize i, const char *key, double *out, GError **error)
{
  const cJSON *v = get(row, key);
  if (v == NULL || cJSON_IsNull(v)) {
    *out = (double)NAN;
    return TRUE;
  }
  return row_num(ctx, row, i, key, out, error);
}

#define OPT(key, dst)                                                                                                  \
  do {                                                                                                                 \
    if (!row_opt(ctx, row, i, key, &(dst), error))                                                                     \
      return FALSE;                                                                                                    \
  } while (0)

/* mb_launch rows: the gpu_floor ones (GPU time per kernel with the host ahead); the others are
 * what the host pays per CUDA call, which mb_host.py's PyTorch-level rows stand for in the fit. */
static gboolean read_launch_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  if (strcmp(row_str(row, "test"), "gpu_floor") != 0)
    return TRUE;
  double size, ns;
  NUM("size", size);
  DUR("gpu_ns", ns);
  const char *c   = row_str(row, "class");
  const char *how = row_str(row, "issue");
  PnCalFloor f    = {strcmp(c, "empty") == 0  ? PN_CAL_FLOOR_EMPTY
                     : strcmp(c, "copy") == 0 ? PN_CAL_FLOOR_COPY
                     : strcmp(c, "gemm") == 0 ? PN_CAL_FLOOR_GEMM
                                              : PN_CAL_FLOOR_OTHER,
                  strcmp(how, "graph") == 0, size, ns};
  if (ns > 0 && (f.graph || strcmp(how, "stream") == 0))
    g_array_append_val(d->floor, f);
  return TRUE;
}

static gboolean read_layer_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  PnCalLayer l = {0};
  double layers;
  INT("layers", layers, 1);
  OPT("host_fwd_ns", l.host_fwd_ns);
  OPT("host_bwd_ns", l.host_bwd_ns);
  DUR("host_ns", l.host_ns);
  OPT("gpu_ns", l.gpu_ns);
  OPT("kernels_per_layer", l.kernels_per_layer);
  OPT("kernels_fwd_per_layer", l.kernels_fwd_per_layer);
  l.layers = (int)layers;
  g_strlcpy(l.size, row_str(row, "size"), sizeof l.size);
  g_strlcpy(l.variant, row_str(row, "variant"), sizeof l.variant);
  g_array_append_val(d->layers, l);
  return TRUE;
}

/* mb_megatron_host.py: a stack of Megatron-Core's local layers, host time and kernels per layer. */
static gboolean read_megatron_host_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  bool moe = strcmp(row_str(row, "test"), "moe_block") == 0;
  if (!moe && strcmp(row_str(row, "test"), "block") != 0)
    return TRUE;
  PnCalMegatronLayer l = {.moe_block = moe};
  if (moe) {
    double experts;
    NUM("experts", experts);
    l.experts = (int)experts;
  }
  DUR("host_fwd_ns_per_layer", l.host_fwd_ns);
  DUR("host_bwd_ns_per_layer", l.host_bwd_ns);
  NUM("kernels_fwd_per_layer", l.kernels_fwd);
  NUM("kernels_bwd_per_layer", l.kernels_bwd);
  g_strlcpy(l.variant, row_str(row, "variant"), sizeof l.variant);
  g_strlcpy(l.size, row_str(row, "size"), sizeof l.size);
  l.fsdp           = strcmp(row_str(row, "wrapper"), "fsdp") == 0;
  l.te_shaped      = strcmp(row_str(row, "spec"), "te_shaped") == 0;
  const cJSON *rnd = cJSON_GetObjectItemCaseSensitive(row, "round");
  l.round          = cJSON_IsNumber(rnd) ? (int)rnd->valuedouble : 0;
  g_array_append_val(d->megatron, l);
  return TRUE;
}

/* mb_host_ref.py: the reference call (its "grad" mode, what a training forward pays) and the
 * eager layer measured beside it, per round; the cpu rows are information. */
static gboolean read_host_ref_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  const char *test = row_str(row, "test");
  PnCalHostRef h   = {.layer = strcmp(test, "layer") == 0};
  if (h.layer)
    DUR("host_fwd_ns", h.host_ns);
  else if (strcmp(test, "linear") == 0 && strcmp(row_str(row, "mode"), "grad") == 0)
    DUR("host_ns", h.host_ns);
  else
    return TRUE;
  const cJSON *rnd = cJSON_GetObjectItemCaseSensitive(row, "round");
  h.round          = cJSON_IsNumber(rnd) ? (int)rnd->valuedouble : 0;
  g_array_append_val(d->host_ref, h);
  return TRUE;
}

/* mb_host.py rows: layers apart, each a host time named by its test, name and mode. */
static gboolean read_host_torch_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  const char *test = row_str(row, "test");
  if (strcmp(test, "layer") == 0)
    return read_layer_row(ctx, row, i, d, error);
  PnCalHostRow h = {.gpu_ns = (double)NAN};
  const char *name, *mode = "";
  if (strcmp(test, "op") == 0) {
    name = row_str(row, "op");
    mode = row_str(row, "mode");
    DUR("host_ns", h.host_ns);
    OPT("gpu_ns", h.gpu_ns);
  } else if (strcmp(test, "collective") == 0) {
    name = row_str(row, "call");
    mode = cJSON_IsTrue(get(row, "async_op")) ? "async" : "blocking";
    DUR("host_ns", h.host_ns);
    OPT("gpu_ns", h.gpu_ns);
  } else if (strcmp(test, "sync") == 0) {
    name = row_str(row, "what");
    DUR("host_ns", h.host_ns);
  } else if (strcmp(test, "cpu") == 0) {
    name = row_str(row, "what");
    DUR("ns_per_iter", h.host_ns);
  } else {
    return TRUE;
  }
  g_strlcpy(h.test, test, sizeof h.test);
  g_strlcpy(h.name, name, sizeof h.name);
  g_strlcpy(h.mode, mode, sizeof h.mode);
  g_array_append_val(d->host, h);
  return TRUE;
}

/* A row of mb_hbm_share (kind "hbm_share"): two users of one GPU's HBM alone and together. Rows
 * whose figures are missing (a measurement that timed out) are left out. */
static gboolean read_hbm_share_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  const char *mode = row_str(row, "mode");
  PnCalHbm h       = {0};
  double v;
#define HBM_NUM(key, dst)                                                                                              \
  do {                                                                                                                 \
    if (!cJSON_IsNumber(get(row, key)))                                                                                \
      return TRUE;                                                                                                     \
    NUM(key, dst);                                                                                                     \
  } while (0)
  if (strcmp(mode, "copy_alone") == 0) {
    h.mode           = PN_CAL_HBM_COPY_ALONE;
    h.spinner_layout = strcmp(row_str(row, "layout"), "spinner") == 0;
    INT("sms", v, 1);
    h.sms_a = (int)v;
    HBM_NUM("bytes_per_ns", h.a_alone);
    h.a_with = h.a_alone;
  } else if (strcmp(mode, "copy_pair") == 0) {
    h.mode = PN_CAL_HBM_COPY_PAIR;
    INT("sms_a", v, 1);
    h.sms_a = (int)v;
    INT("sms_b", v, 1);
    h.sms_b = (int)v;
    HBM_NUM("a_alone_bytes_per_ns", h.a_alone);
    HBM_NUM("a_bytes_per_ns", h.a_with);
    HBM_NUM("b_alone_bytes_per_ns", h.b_alone);
    HBM_NUM("b_bytes_per_ns", h.b_with);
  } else if (strcmp(mode, "ce_beside_copy") == 0) {
    h.mode = PN_CAL_HBM_CE;
    INT("copy_sms", v, 1);
    h.sms_b = (int)v;
    HBM_NUM("ce_alone_bytes_per_ns", h.a_alone);
    HBM_NUM("ce_beside_bytes_per_ns", h.a_with);
    HBM_NUM("copy_alone_bytes_per_ns", h.b_alone);
    HBM_NUM("copy_beside_bytes_per_ns", h.b_with);
  } else if (strcmp(mode, "gemm_beside_copy") == 0) {
    h.mode = PN_CAL_HBM_GEMM;
    INT("m", v, 1);
    h.m = (int64_t)v;
    INT("n", v, 1);
    h.n = (int64_t)v;
    INT("k", v, 1);
    h.k   = (int64_t)v;
    h.fp8 = strcmp(row_str(row, "dtype"), "fp8") == 0;
    INT("sms_held", v, 1);
    h.sms_b = (int)v;
    double copy_ns;
    HBM_NUM("gemm_plain_ns", h.gemm_plain_ns);
    HBM_NUM("gemm_idle_ns", h.gemm_idle_ns);
    HBM_NUM("gemm_copy_ns", copy_ns);
    HBM_NUM("copy_alone_bytes_per_ns", h.b_alone);
    HBM_NUM("copy_beside_bytes_per_ns", h.b_with);
    h.a_alone = 1.0;
    h.a_with  = copy_ns > 0.0 ? h.gemm_idle_ns / copy_ns : 0.0;
  } else {
    return TRUE;
  }
#undef HBM_NUM
  if (h.a_alone > 0.0 && h.a_with > 0.0 && (h.mode == PN_CAL_HBM_COPY_ALONE || (h.b_alone > 0.0 && h.b_with > 0.0)))
    g_array_append_val(d->hbm, h);
  return TRUE;
}

/* A row of mb_copy_nccl_overlap (kind "copy_nccl_overlap"): a collective beside a copy kernel or
 * an idle spinner; rows without their figures are left out. */
static gboolean read_copy_nccl_row(const PnIoCtx *ctx, const cJSON *row, gsize i, PnCalData *d, GError **error)
{
  if (strcmp(row_str(row, "mode"), "coll_beside") != 0)
    return TRUE;
  const char *beside = row_str(row, "beside");
  int kind           = coll_kind(row_str(row, "collective"));
  const char *keys[] = {"coll_busbw_alone_gbps", "coll_slowdown", "coll_sms_seen", "sms_held", "nranks"};
  for (size_t k = 0; k < G_N_ELEMENTS(keys); k++)
    if (!cJSON_IsNumber(get(row, keys[k])))
      return TRUE;
  if (kind < 0 || (strcmp(beside, "copy") != 0 && strcmp(beside, "idle") != 0))
    return TRUE;
  double v;
  PnCalCopyNccl c = {.kind = (PnCollKind)kind, .copy = strcmp(beside, "copy") == 0};
  NUM("coll_busbw_alone_gbps", c.busbw); /* GB/s = bytes/ns */
  NUM("coll_slowdown", c.slowdown);
  INT("coll_sms_seen", v, 0);
  c.ctas = (int)v;
  INT("sms_held", v, 0);
  c.k = (int)v;
  INT("nranks", v, 2);
  c.nranks = (int)v;
  if (c.copy) {
    if (!cJSON_IsNumber(get(row, "copy_alone_bytes_per_ns")) || !cJSON_IsNumber(get(row, "copy_beside_bytes_per_ns")))
      return TRUE;
    NUM("copy_alone_bytes_per_ns", c.copy_alone);
    NUM("copy_beside_bytes_per_ns", c.copy_beside);
  }
  if (c.busbw > 0.0 && c.slowdown > 0.0)
    g_array_append_val(d->copy_nccl, c);
  return TRUE;
}

/* The kind of a result file, or -1 for a kind the fits do not read (its rows are skipped). */
static int kind_of(const char *name)
{
  for (int k = 0; k < PN_CAL_KINDS; k++)
    if (strcmp(name, pn_cal_kind_name((PnCalKind)k)) == 0)
      return k;
  return -1;
}

/* Adds one result file's env to where its kind was measured: the GPU's name, how many GPUs the
 * benchmark ran on, the day. */
static void note_origin(PnCalOrigin *o, const cJSON *env, const char *path)
{
  if (o->files[0])
    g_strlcat(o->files, " + ", sizeof o->files);
  g_strlcat(o->files, path, sizeof o->files);
  if (row_str(env, "host_cpu")[0])
    g_strlcpy(o->host_cpu, row_str(env, "host_cpu"), sizeof o->host_cpu);
  const cJSON *cpus = get(env, "host_cpus_online");
  if (cJSON_IsNumber(cpus) && cpus->valuedouble >= 1 && cpus->valuedouble <= 1e6)
    o->host_cpus = (int)cpus->valuedouble;
  const char *gpu =
      row_str(env, "gpu_name_nvidia_smi")[0] ? row_str(env, "gpu_name_nvidia_smi") : row_str(env, "gpu_name");
  if (gpu[0] && !strstr(o->gpu, gpu)) {
    if (o->gpu[0])
      g_strlcat(o->gpu, " + ", sizeof o->gpu);
    g_strlcat(o->gpu, gpu, sizeof o->gpu);
  }
  const cJSON *n = get(env, "gpu_count_used");
  if (cJSON_IsNumber(n) && n->valuedouble > o->gpus && n->valuedouble <= 1e6)
    o->gpus = (int)n->valuedouble;
  /* date_utc is ISO 8601 ("2026-11-22T10:19:06Z"): its first ten characters are the day, and
   * days in that form order as strings do */
  char day[11];
  g_strlcpy(day, row_str(env, "date_utc"), sizeof day);
  if (pn_hw_profile_date_ok(day) && strcmp(day, o->date) > 0)
    g_strlcpy(o->date, day, sizeof o->date);
}

gboolean pn_calib_read_results(const char *path, PnCalData *d, GString *provenance, GError **error)
{
  cJSON *root = NULL;
  if (!pn__io_read_json(path, path, &root, error))
    return FALSE;
  PnIoCtx ctx          = {.file = path};
  const cJSON *kind    = get(root, "kind");
  const cJSON *results = get(root, "results");
  const cJSON *env     = get(root, "env");
  const cJSON *sv      = get(root, "schema_version");
  if (!cJSON_IsObject(root) || !cJSON_IsNumber(sv) || sv->valueint != 1) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, "/schema_version",
                "expected a microbenchmark result with "
                "schema_version 1");
    goto fail;
  }
  if (!cJSON_IsString(kind)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, "/kind", "expected a string");
    goto fail;
  }
  if (!cJSON_IsArray(results)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, "/results", "expected an array");
    goto fail;
  }
  const cJSON *sms = get(env, "sm_count");
  if (cJSON_IsNumber(sms) && sms->valueint > 0)
    d->sm_count = sms->valueint;
  static const RowReader readers[PN_CAL_KINDS] = {
      read_gemm_row,          read_contention_row,   read_attention_row, read_memory_row,     read_collective_row,
      read_copy_engine_row,   read_nccl_overlap_row, read_launch_row,    read_host_torch_row, read_gemm_accum_row,
      read_torch_mem_row,     read_unfused_attn_row, read_hbm_share_row, read_copy_nccl_row,  read_p2p_sm_row,
      read_megatron_host_row, read_host_ref_row};
  const char *k  = kind->valuestring;
  int kind_id    = kind_of(k);
  RowReader read = kind_id >= 0 ? readers[kind_id] : NULL;
  gsize i        = 0;
  const cJSON *row;
  cJSON_ArrayForEach(row, results)
  {
    const char *status = row_str(row, "status");
    bool usable        = cJSON_IsObject(row) && (status[0] == '\0' || strcmp(status, "ok") == 0);
    if (usable && read != NULL && !read(&ctx, row, i, d, error))
      goto fail;
    i++;
  }
  if (kind_id >= 0)
    note_origin(&d->origin[kind_id], env, path);
  /* the launch and host_torch figures each name their own file (PnCalHostFitted's origins): the
   * provenance of the tables and scalars the other kinds fit leaves them out */
  bool own_source = kind_id == PN_CAL_KIND_LAUNCH || kind_id == PN_CAL_KIND_HOST_TORCH ||
                    kind_id == PN_CAL_KIND_GEMM_ACCUM || kind_id == PN_CAL_KIND_TORCH_MEM ||
                    kind_id == PN_CAL_KIND_UNFUSED_ATTN || kind_id == PN_CAL_KIND_P2P_SM ||
                    kind_id == PN_CAL_KIND_MEGATRON_HOST || kind_id == PN_CAL_KIND_HOST_REF;
  if (provenance && !own_source)
    g_string_append_printf(provenance, "%s%s (%s, %s, %s)", provenance->len ? "; " : "", path, k,
                           row_str(env, "gpu_name_nvidia_smi")[0] ? row_str(env, "gpu_name_nvidia_smi")
                                                                  : row_str(env, "gpu_name"),
                           row_str(env, "date_utc"));
  cJSON_Delete(root);
  return TRUE;
fail:
  cJSON_Delete(root);
  return FALSE;
}

static void set_scalar(cJSON *root, const char *section, const char *key, double value, const char *source)
{
  cJSON *sec = cJSON_GetObjectItemCaseSensitive(root, section);
  if (!cJSON_IsObject(sec))
    return;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "value", value);
  cJSON_AddStringToObject(o, "source", source);
  cJSON_ReplaceItemInObjectCaseSensitive(sec, key, o);
}

static cJSON *curve_json(const PnCurve *c, const char *source)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "x", cJSON_CreateDoubleArray(c->x, c->n));
  cJSON_AddItemToObject(o, "y", cJSON_CreateDoubleArray(c->y, c->n));
  cJSON_AddBoolToObject(o, "log_x", c->log_x);
  cJSON_AddStringToObject(o, "source", source);
  return o;
}

static cJSON *table_json(const char *const *cols, int n_cols, const double *vals, int n_rows, const char *source)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "columns", cJSON_CreateStringArray(cols, n_cols));
  cJSON *rows = cJSON_AddArrayToObject(o, "rows");
  for (int r = 0; r < n_rows; r++)
    cJSON_AddItemToArray(rows, cJSON_CreateDoubleArray(vals + (gsize)r * n_cols, n_cols));
  cJSON_AddStringToObject(o, "source", source);
  return o;
}

static cJSON *gemm_table_json(const PnGemmTable *t, const char *source)
{
  static const char *const cols[] = {"m", "n", "k", "ns"};
  g_autofree double *v            = g_new(double, (gsize)t->n * 4 + 1);
  for (int i = 0; i < t->n; i++) {
    v[i * 4 + 0] = (double)t->pts[i].m;
    v[i * 4 + 1] = (double)t->pts[i].n;
    v[i * 4 + 2] = (double)t->pts[i].k;
    v[i * 4 + 3] = round(t->pts[i].ns);
  }
  return table_json(cols, 4, v, t->n, source);
}

/* The measured contention rows as a table (dtype 1 bf16, 2 fp8; variant 1 + PnCalVariant). */
static cJSON *contention_table_json(const PnHwProfile *p, const char *source)
{
  static const char *const cols[] = {"m", "n", "k", "dtype", "variant", "sms_held", "slowdown"};
  g_autofree double *v            = g_new(double, (gsize)p->n_contention_points * 7);
  for (int i = 0; i < p->n_contention_points; i++) {
    const PnContentionPoint *c = &p->contention_points[i];
    double row[] = {(double)c->m,        (double)c->n, (double)c->k, c->fp8 ? 2.0 : 1.0, (double)(c->variant + 1),
                    (double)c->sms_held, c->slowdown};
    memcpy(v + (gsize)i * 7, row, sizeof row);
  }
  return table_json(cols, 7, v, p->n_contention_points, source);
}

static cJSON *attn_table_json(const PnAttnTable *t, const char *source)
{
  static const char *const cols[] = {"batch", "seq", "heads", "kv_heads", "head_dim", "head_dim_v", "fwd_ns", "bwd_ns"};
  g_autofree double *v            = g_new(double, (gsize)t->n * 8 + 1);
  for (int i = 0; i < t->n; i++) {
    const PnAttnPoint *a = &t->pts[i];
    double row[]         = {(double)a->batch,    (double)a->seq,        (double)a->heads, (double)a->kv_heads,
                            (double)a->head_dim, (double)a->head_dim_v, round(a->fwd_ns), round(a->bwd_ns)};
    memcpy(v + (gsize)i * 8, row, sizeof row);
  }
  return table_json(cols, 8, v, t->n, source);
}

static cJSON *bmm_table_json(const PnGemmTable *t, const char *source)
{
  static const char *const cols[] = {"batch", "m", "n", "k", "ns"};
  g_autofree double *v            = g_new(double, (gsize)t->n * 5 + 1);
  for (int i = 0; i < t->n; i++) {
    const PnGemmPoint *g = &t->pts[i];
    double row[]         = {(double)g->batch, (double)g->m, (double)g->n, (double)g->k, round(g->ns)};
    memcpy(v + (gsize)i * 5, row, sizeof row);
  }
  return table_json(cols, 5, v, t->n, source);
}

/* The unfused attention's entries of a fit that measured them: bmm_bf16, and the curves of
 * torch_kernel_vs_copy fitted, beside the base's curves of the kernels this fit did not measure
 * (`old`: the base's calibration, may be NULL). */
static void add_unfused_entries(cJSON *cal, const PnHwProfile *p, const PnCalFitted *f, const cJSON *old)
{
  static const char *const what[PN_TK_N] = {
      [PN_TK_MASKED_FILL]       = "the causal mask's masked_fill_ in place on the [B, s, s] scores",
      [PN_TK_MASKED_FILL_BWD]   = "masked_fill's backward (a new tensor)",
      [PN_TK_SOFTMAX_FWD]       = "softmax over the scores' last dim, bf16 in and out",
      [PN_TK_SOFTMAX_BWD]       = "softmax's backward",
      [PN_TK_DROPOUT_FWD]       = "dropout of the probabilities (native_dropout, a 1-byte mask)",
      [PN_TK_DROPOUT_BWD]       = "dropout's backward",
      [PN_TK_REPEAT_INTERLEAVE] = "the GQA repeat_interleave of k or v over the query groups",
      [PN_TK_CONTEXT_COPY]      = "the context's permute().contiguous()",
      [PN_TK_ROPE_FWD]          = "the unfused rotary embedding (_apply_rotary_pos_emb_bshd, 5 kernels) forward",
      [PN_TK_ROPE_BWD]          = "the unfused rotary embedding's backward (5 kernels)",
      [PN_TK_GLU_CLAMP_FWD] = "the clamps of a GLU's two halves and their concatenation (activation_func_clamp_value: "
                              "fusions/fused_bias_geglu.py, 3 kernels), 16 B per element of a half",
      [PN_TK_GLU_CLAMP_BWD] = "their backward through autograd (the clamps' masks and gradients, the chunk's "
                              "concatenation: 9 kernels), 20 B per element of a half",
  };
  const PnCalOrigin *o = &f->unfused_from;
  if (f->bmm_points > 0) {
    g_autofree char *s = g_strdup_printf(
        "strided-batched BF16 GEMMs as torch.bmm / torch.baddbmm run them in Megatron-Core's unfused attention "
        "(QK^T, PV and the gradients dP, dV, dQ, dK; operands laid out as the module's [s, B, d] tensors; batch = "
        "micro-batch x heads): per (batch, m, n, k) the median over the ops and repeats of that shape (microbench "
        "mb_unfused_attn.py bmm rows); %s (%s, %s)",
        o->files, o->gpu, o->date);
    cJSON_AddItemToObject(cal, "bmm_bf16", bmm_table_json(&p->bmm_bf16, s));
  }
  bool any = false;
  for (int k = 0; k < PN_TK_N; k++)
    any = any || f->torch_kernel_points[k] > 0;
  if (!any)
    return; /* the base's entry, if any, is kept whole */
  const cJSON *was = cJSON_GetObjectItemCaseSensitive(old, "torch_kernel_vs_copy");
  cJSON *obj       = cJSON_AddObjectToObject(cal, "torch_kernel_vs_copy");
  for (int k = 0; k < PN_TK_N; k++) {
    const char *key = pn__io_torch_kernel_names[k];
    if (f->torch_kernel_points[k] == 0) {
      const cJSON *c = cJSON_GetObjectItemCaseSensitive(was, key);
      if (c != NULL)
        cJSON_AddItemToObject(obj, key, cJSON_Duplicate(c, 1));
      continue;
    }
    bool glu              = k == PN_TK_GLU_CLAMP_FWD || k == PN_TK_GLU_CLAMP_BWD;
    const PnCalOrigin *ko = glu ? &f->torch_mem_from : o;
    g_autofree char *s    = g_strdup_printf(
           "%s, as PyTorch runs it in Megatron-Core's %s: x = %s, y = the median over the shapes measured at that "
              "%s of its bandwidth (bytes as the op model counts them) over the copy class's for the same bytes "
              "(microbench %s: the copy class's time over the measured time); %s (%s, %s)",
           what[k], glu ? "MLP and experts" : "unfused attention",
        glu ? "rows (tokens x top-k for experts)" : "sequence length", glu ? "x" : "length",
        glu ? "mb_torch_mem.py glu_clamp rows" : "mb_unfused_attn.py mem rows", ko->files, ko->gpu, ko->date);
    cJSON_AddItemToObject(obj, key, curve_json(&p->torch_kernel_vs_copy[k], s));
  }
}

/* The scalars of compute / network / nccl that the fit replaced, each with its new source. */
static void set_fitted_scalars(cJSON *root, const PnHwProfile *p, const PnCalFitted *f, const char *src)
{
  if (f->hbm) {
    g_autofree char *s = g_strdup_printf("median bandwidth of the memory-bound kernels moving >= 256 MiB (read + "
                                         "write counted); %s",
                                         src);
    set_scalar(root, "compute", "hbm_bytes_per_ns", p->hbm_bytes_per_ns, s);
  }
  if (f->copy) {
    g_autofree char *s = g_strdup_printf("one-way cudaMemcpyPeerAsync at >= 256 MiB; %s", src);
    set_scalar(root, "network", "nvlink_ce_bytes_per_ns", p->nvlink_ce_bytes_per_ns, s);
  }
  if (f->coll) {
    g_autofree char *s1 =
        g_strdup_printf("smallest all-gather / reduce-scatter on 2 GPUs minus one NVLink hop; %s", src);
    set_scalar(root, "nccl", "base_latency_ns", p->nccl_base_latency_ns, s1);
    g_autofree char *s2 =
        g_strdup_printf("median large-size bus bandwidth with NCCL_MIN_CTAS=NCCL_MAX_CTAS=1; %s", src);
    set_scalar(root, "nccl", "cta_bytes_per_ns", p->nccl_cta_bytes_per_ns, s2);
    g_autofree char *s3 = g_strdup_printf("derived: the fewest channels whose 1-channel send/recv bandwidth reaches "
                                          "the default send/recv bandwidth; %s",
                                          src);
    set_scalar(root, "nccl", "p2p_ctas", p->nccl_p2p_ctas, s3);
  }
}

/* The collective entries of a fit that measured collectives: efficiency curves, the per-kind
 * 2-GPU figures, and the table of every group size. */
static void add_coll_entries(cJSON *cal, const PnHwProfile *p, const char *src)
{
  static const char *const coll_keys[] = {"coll_efficiency_all_gather", "coll_efficiency_reduce_scatter",
                                          "coll_efficiency_all_reduce", "coll_efficiency_all_to_all",
                                          "coll_efficiency_send_recv"};
  static const char *const pair_keys[] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all", "send_recv"};
  for (int k = 0; k < PN_PROFILE_COLL_KINDS; k++) {
    if (p->coll_efficiency[k].n == 0)
      continue;
    g_autofree char *s = g_strdup_printf("NCCL on 2 GPUs at default channels: x = bytes per rank, y = wire bytes / "
                                         "(time - latency) / large-size bus bandwidth; %s",
                                         src);
    cJSON_AddItemToObject(cal, coll_keys[k], curve_json(&p->coll_efficiency[k], s));
  }
  cJSON *pair = cJSON_AddObjectToObject(cal, "nccl_pair_busbw");
  for (int k = 0; k < PN_PROFILE_COLL_KINDS; k++) {
    cJSON *o           = cJSON_CreateObject();
    g_autofree char *s = g_strdup_printf("NCCL bus bandwidth on 2 NVLinked GPUs at the largest size measured; %s", src);
    cJSON_AddNumberToObject(o, "value", p->nccl_pair_busbw[k] > 0 ? p->nccl_pair_busbw[k] : p->nvlink_bytes_per_ns);
    cJSON_AddStringToObject(o, "source", p->nccl_pair_busbw[k] > 0 ? s : "not measured: nvlink_bytes_per_ns");
    cJSON_AddItemToObject(pair, pair_keys[k], o);
  }
  cJSON *lat = cJSON_AddObjectToObject(cal, "nccl_pair_latency_ns");
  for (int k = 0; k < PN_PROFILE_COLL_KINDS; k++) {
    cJSON *o           = cJSON_CreateObject();
    g_autofree char *s = g_strdup_printf("NCCL on 2 GPUs: time of the smallest message measured; %s", src);
    cJSON_AddNumberToObject(o, "value", p->nccl_pair_latency_ns[k]);
    cJSON_AddStringToObject(o, "source", p->nccl_pair_latency_ns[k] > 0 ? s : "not measured: base latency + hops");
    cJSON_AddItemToObject(lat, pair_keys[k], o);
  }
  cJSON *cta = cJSON_AddObjectToObject(cal, "nccl_cta_busbw");
  for (int k = 0; k < PN_PROFILE_COLL_KINDS; k++) {
    cJSON *o           = cJSON_CreateObject();
    g_autofree char *s = g_strdup_printf("NCCL bus bandwidth on 2 GPUs with NCCL_MIN_CTAS=NCCL_MAX_CTAS=1 at the "
                                         "largest size measured; %s",
                                         src);
    cJSON_AddNumberToObject(o, "value", p->nccl_cta_busbw[k] > 0 ? p->nccl_cta_busbw[k] : p->nccl_cta_bytes_per_ns);
    cJSON_AddStringToObject(o, "source", p->nccl_cta_busbw[k] > 0 ? s : "not measured: cta_bytes_per_ns");
    cJSON_AddItemToObject(cta, pair_keys[k], o);
  }
  if (p->nccl_table.n > 0) {
    static const char *const cols[] = {"collective", "ranks", "ctas", "bytes", "ns"};
    g_autofree double *v            = g_new(double, (gsize)p->nccl_table.n * 5);
    for (int i = 0; i < p->nccl_table.n; i++) {
      const PnCollPoint *c = &p->nccl_table.pts[i];
      double row[]         = {(double)(c->kind + 1), (double)c->ranks, (double)c->ctas, c->bytes, round(c->ns)};
      memcpy(v + (gsize)i * 5, row, sizeof row);
    }
    g_autofree char *s = g_strdup_printf("NCCL inside one node (NVLink / NVSwitch), median times per group size "
                                         "(collective 1 = all_gather, 2 = reduce_scatter, 3 = all_reduce, 4 = "
                                         "all_to_all, 5 = send_recv; default rows at NCCL's default channel count; "
                                         "non-monotone outliers left out); %s",
                                         src);
    cJSON_AddItemToObject(cal, "nccl_table", table_json(cols, 5, v, p->nccl_table.n, s));
  }
}

/* The new "calibration" section: what the fit replaced, then the entries of the previous one
 * (`old`, may be NULL) that it did not. */
static cJSON *calibration_json(const PnHwProfile *p, const PnCalFitted *f, const char *src, const cJSON *old)
{
  cJSON *cal = cJSON_CreateObject();
  if (f->gemm_sm_scaling) {
    g_autofree char *s = g_strdup_printf("cuBLASLt GEMMs launched for all SMs while a spinner kernel holds k SMs: x = "
                                         "SMs left, y = 1 / median slowdown over the shapes measured; %s",
                                         src);
    cJSON_AddItemToObject(cal, "gemm_sm_scaling", curve_json(&p->gemm_sm_scaling, s));
  }
  if (f->gemm_sm_limit_scaling) {
    g_autofree char *s = g_strdup_printf("cuBLASLt GEMMs with SM_COUNT_TARGET = sm_count - k while a spinner holds the "
                                         "other k SMs (TE set_sm_margin): y = 1 / median slowdown; %s",
                                         src);
    cJSON_AddItemToObject(cal, "gemm_sm_limit_scaling", curve_json(&p->gemm_sm_limit_scaling, s));
  }
  if (f->hbm_curve_points > 0) {
    const PnCalOrigin *o = &f->hbm_share_from;
    g_autofree char *scaled =
        f->hbm_curve_scaled
            ? g_strdup_printf("; measured on the %s, scaled to this GPU's hbm_bytes_per_ns: the same unloaded rate per "
                              "SM, saturating at this GPU's bandwidth",
                              o->gpu)
            : g_strdup("");
    g_autofree char *s = g_strdup_printf(
        "HBM bandwidth delivered under pressure x (SM-equivalents of a streaming copy): a copy kernel alone on x SMs, "
        "one "
        "CTA per SM, 2 GiB per direction (microbench mb_hbm_share copy_alone rows, layout hbm, median per x; "
        "bytes/ns, read + write)%s; %s (%s, %s)",
        scaled, o->files, o->gpu, o->date[0] ? o->date : "date not recorded");
    cJSON_AddItemToObject(cal, "hbm_pressure", curve_json(&p->hbm_share.pressure, s));
    g_autofree char *m = g_strdup_printf("a memory-bound kernel on x SMs: y = hbm_pressure(x) / hbm_pressure(all SMs) "
                                         "(it presses x: hw/hbm.h); from the same rows%s",
                                         f->hbm_curve_scaled ? ", scaled" : "");
    cJSON_AddItemToObject(cal, "mem_sm_scaling", curve_json(&p->mem_sm_scaling, m));
  }
  if (f->coll)
    add_coll_entries(cal, p, src);
  if (p->n_contention_points > 0) {
    g_autofree char *s = g_strdup_printf("cuBLASLt GEMM slowdown while a spinner holds sms_held SMs, per measured "
                                         "shape (dtype 1 bf16, 2 fp8; variant 1: GEMM launched for all SMs, 2: "
                                         "restricted to the others with SM_COUNT_TARGET; median of the repeats); %s",
                                         src);
    cJSON_AddItemToObject(cal, "gemm_contention_table", contention_table_json(p, s));
  }
  if (f->mem_classes) {
    static const char *const keys[] = {"mem_bandwidth_copy", "mem_bandwidth_norm", "mem_bandwidth_activation",
                                       "mem_bandwidth_optimizer", "mem_bandwidth_dropout"};
    G_STATIC_ASSERT(G_N_ELEMENTS(keys) == PN_PROFILE_MEM_CLASSES);
    for (int c = 0; c < PN_PROFILE_MEM_CLASSES; c++) {
      if (p->mem_bandwidth[c].n == 0 || (c == PN_MEM_DROPOUT && f->torch_mem_from.files[0] == '\0'))
        continue; /* a dropout curve this fit did not make stays as the base profile has it */
      const PnCalOrigin *o = &f->torch_mem_from;
      g_autofree char *s =
          c == PN_MEM_DROPOUT
              ? g_strdup_printf(
                    "Megatron-Core's bias-dropout-add with dropout on, compiled as its jit_fuser compiles it "
                    "(torch.compile), forward and backward, as PyTorch runs it (microbench mb_torch_mem.py; "
                    "x = bytes moved as the op model counts them, the 1-byte mask included, y = bytes/ns; "
                    "calls moving >= 512 MiB, smaller ones being bound by their Python dispatch); %s (%s, %s)",
                    o->files, o->gpu, o->date)
              : g_strdup_printf("memory-bound kernel class measured by microbench mb_memory (x = bytes moved, y = "
                                "bytes/ns; sizes >= 64 MiB, median over the class's kernels); %s",
                                src);
      cJSON_AddItemToObject(cal, keys[c], curve_json(&p->mem_bandwidth[c], s));
    }
  }
  if (f->gemm_bf16) {
    g_autofree char *s = g_strdup_printf("cuBLASLt BF16 GEMMs (median of the passes / layouts of each shape); %s", src);
    cJSON_AddItemToObject(cal, "gemm_bf16", gemm_table_json(&p->gemm_bf16, s));
  }
  if (f->gemm_fp8) {
    g_autofree char *s = g_strdup_printf("cuBLASLt FP8 (e4m3) GEMMs, BF16 output; %s", src);
    cJSON_AddItemToObject(cal, "gemm_fp8", gemm_table_json(&p->gemm_fp8, s));
  }
  for (int f8 = 0; f8 < 2; f8++)
    for (int into = 0; into < 2; into++) {
      if (f->gemm_accum_points[f8][into] == 0)
        continue;
      g_autofree char *key = g_strdup_printf("gemm_%s_accum_%s", f8 ? "fp8" : "bf16", into ? "fp32" : "bf16");
      g_autofree char *s   = g_strdup_printf(
            "cuBLASLt %s wgrad GEMMs accumulating into a %s main_grad (beta = 1, gradient-accumulation fusion): the "
              "plain table's time of each shape times the median measured ratio of the accumulating GEMM to the plain "
              "one, both timed alternately (microbench mb_gemm_accum); %s (%s, %s)",
          f8 ? "FP8 (e4m3)" : "BF16", into ? "fp32" : "bf16", f->accum_from.files, f->accum_from.gpu,
            f->accum_from.date);
      cJSON_AddItemToObject(cal, key, gemm_table_json(&p->gemm_accum[f8][into], s));
    }
  if (f->attn) {
    g_autofree char *s = g_strdup_printf("causal BF16 attention through PyTorch SDPA, fastest backend per shape "
                                         "(cuDNN fused attention); %s",
                                         src);
    cJSON_AddItemToObject(cal, "attn_bf16", attn_table_json(&p->attn_bf16, s));
  }
  add_unfused_entries(cal, p, f, old);
  for (int pull = 0; pull < 2; pull++) {
    if ((pull ? f->ub_pull_points : f->ub_push_points) == 0)
      continue;
    const PnCalOrigin *o = &f->ub_push_from;
    g_autofree char *s   = g_strdup_printf(
          "x CTAs of 1,024 threads %s through NVLink with 16-byte accesses (microbench mb_p2p_sm %s rows, median over "
            "the sizes of each x; y = bytes/ns one way): what a userbuffers %s kernel of num_sm = x moves without NVLink "
            "multicast (UB_SKIPMC=1); %s (%s, %s)",
        pull ? "loading from a peer GPU's buffer" : "pushing to a peer GPU's buffer while it pushes back",
        pull ? "pull_1to0" : "push_bidir", pull ? "reduce-scatter" : "all-gather", o->files, o->gpu,
        o->date[0] ? o->date : "date not recorded");
    cJSON_AddItemToObject(cal, pull ? "ub_pull_bytes_per_ns" : "ub_push_bytes_per_ns",
                          curve_json(pull ? &p->ub_pull_bytes_per_ns : &p->ub_push_bytes_per_ns, s));
  }
  /* keep a previous calibration's entries this fit did not replace */
  if (cJSON_IsObject(old)) {
    cJSON *e;
    cJSON_ArrayForEach(e, old)
    {
      /* the older 2-GPU table is superseded by a new nccl_table (a profile holds one or the other) */
      bool superseded = strcmp(e->string, "nccl_pair_table") == 0 && get(cal, "nccl_table");
      if (!get(cal, e->string) && !superseded)
        cJSON_AddItemToObject(cal, e->string, cJSON_Duplicate(e, 1));
    }
  }
  return cal;
}

/* The GPU model in a GPU's name ("H100" in "NVIDIA H100 80GB HBM3"): its first word of a letter
 * and three digits; "" when none. */
static void gpu_model(const char *name, char model[5])
{
  model[0] = '\0';
  for (const char *w = name; *w; w++)
    if ((w == name || w[-1] == ' ') && g_ascii_isupper(w[0]) && g_ascii_isdigit(w[1]) && g_ascii_isdigit(w[2]) &&
        g_ascii_isdigit(w[3]) && (w[4] == '\0' || w[4] == ' ')) {
      memcpy(model, w, 4);
      model[4] = '\0';
      return;
    }
}

static void put_item(cJSON *obj, const char *key, cJSON *item)
{
  if (get(obj, key))
    cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
  else
    cJSON_AddItemToObject(obj, key, item);
}

/* A sourced value of the host fit: `what` it is and how it was derived, then where it was
 * measured; and, when the measuring GPU is another model than the profile's, that this profile
 * takes that machine's figures. */
static void put_host_scalar(cJSON *obj, const char *key, double value, const char *what, const PnCalOrigin *o,
                            const PnHwProfile *p)
{
  char model[5];
  gpu_model(o->gpu, model);
  g_autofree char *cpus   = o->host_cpus > 0 ? g_strdup_printf(", %d CPUs online", o->host_cpus) : g_strdup("");
  g_autofree char *borrow = model[0] && !strstr(p->gpu, model)
                                ? g_strdup_printf("; no such measurement exists for the %s: this profile takes the %s "
                                                  "machine's figures",
                                                  p->gpu, model)
                                : g_strdup("");
  g_autofree char *source = g_strdup_printf("%s; from %s (%s, %s, host CPU %s%s)%s", what, o->files, o->gpu,
                                            o->date[0] ? o->date : "date not recorded",
                                            o->host_cpu[0] ? o->host_cpu : "not recorded", cpus, borrow);
  cJSON *item             = cJSON_CreateObject();
  cJSON_AddNumberToObject(item, "value", value);
  cJSON_AddStringToObject(item, "source", source);
  put_item(obj, key, item);
}

/* The object at `key` of `parent`, added (empty) when missing. */
static cJSON *object_at(cJSON *parent, const char *key)
{
  cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key);
  return cJSON_IsObject(o) ? o : cJSON_AddObjectToObject(parent, key);
}

/* compute.kernel_launch_ns and compute.kernel_floor_ns from the launch rows (and the attention
 * floor from the host_torch op rows). */
static void set_launch_fitted(cJSON *root, const PnHwProfile *p, const PnCalHostFitted *h)
{
  cJSON *compute = cJSON_GetObjectItemCaseSensitive(root, "compute");
  if (h->launch) {
    g_autofree char *w = g_strdup_printf(
        "an empty kernel's GPU time per kernel issued back to back on a stream, %.0f ns, minus the same in one CUDA "
        "graph, %.0f ns (microbench/mb_launch gpu_floor rows, class empty): the gap per kernel that a graph removes",
        h->empty_stream_ns, h->empty_graph_ns);
    put_host_scalar(compute, "kernel_launch_ns", p->kernel_launch_ns, w, &h->launch_from, p);
  }
  if (!h->floor[PN_FLOOR_GEMM] && !h->floor[PN_FLOOR_MEM] && !h->floor[PN_FLOOR_ATTN])
    return;
  cJSON *floors = object_at(compute, "kernel_floor_ns");
  if (h->floor[PN_FLOOR_GEMM]) {
    g_autofree char *w = g_strdup_printf("GPU time per kernel of the smallest cuBLASLt BF16 GEMM measured, m = n = k "
                                         "= %.0f, in one CUDA graph (microbench/mb_launch gpu_floor row, class gemm, "
                                         "issue graph)",
                                         h->floor_size[PN_FLOOR_GEMM]);
    put_host_scalar(floors, "gemm", p->kernel_floor_ns[PN_FLOOR_GEMM], w, &h->launch_from, p);
  }
  if (h->floor[PN_FLOOR_ATTN])
    put_host_scalar(floors, "attention", p->kernel_floor_ns[PN_FLOOR_ATTN],
                    "GPU time of one causal SDPA call (flash attention on mb_host.py's tiny shapes, BF16) in a CUDA "
                    "graph (microbench/mb_host.py op row sdpa_causal, mode graph, gpu_ns)",
                    &h->host_from, p);
  if (h->floor[PN_FLOOR_MEM]) {
    g_autofree char *w = g_strdup_printf("GPU time per kernel of the smallest copy measured, %.0f bytes moved, in one "
                                         "CUDA graph (microbench/mb_launch gpu_floor row, class copy, issue graph)",
                                         h->floor_size[PN_FLOOR_MEM]);
    put_host_scalar(floors, "memory", p->kernel_floor_ns[PN_FLOOR_MEM], w, &h->launch_from, p);
  }
}

/* The host's calls and graphs: collectives, send/recv, synchronize, CUDA graph replays. */
static void set_host_calls(cJSON *sec, const PnHwProfile *p, const PnCalHostFitted *h)
{
  const PnHostProfile *x = &p->host;
  const PnCalOrigin *o   = &h->host_from;
  if (h->collective) {
    g_autofree char *w = g_strdup_printf("one torch.distributed NCCL call with async_op=True on a 1-rank group, the "
                                         "host side alone: the median of the %d collective rows all_reduce, "
                                         "all_gather_into_tensor, reduce_scatter_tensor (host_ns)",
                                         h->collective_rows);
    put_host_scalar(sec, "collective_ns", x->collective_ns, w, o, p);
  }
  if (h->p2p)
    put_host_scalar(sec, "p2p_ns", x->p2p_ns,
                    "one batch_isend_irecv of a send and a receive and the wait on both, 1-rank group (collective row "
                    "send_recv, host_ns)",
                    o, p);
  if (h->sync)
    put_host_scalar(sec, "sync_ns", x->sync_ns,
                    "torch.cuda.synchronize on an idle GPU: the host's round trip (sync row torch.cuda.synchronize, "
                    "host_ns)",
                    o, p);
  if (h->graph_layer) {
    put_host_scalar(sec, "graph_layer_fwd_ns", x->graph_layer_fwd_ns,
                    "a layer's forward as a per-layer CUDA graph (torch.cuda.make_graphed_callables): the replay and "
                    "its autograd wrapper (layer row size h2048, variant graphed_per_layer, host_fwd_ns)",
                    o, p);
    put_host_scalar(sec, "graph_layer_bwd_ns", x->graph_layer_bwd_ns,
                    "the same layer's backward graph (layer row size h2048, variant graphed_per_layer, host_bwd_ns)", o,
                    p);
  }
  if (h->graph_whole) {
    g_autofree char *w = g_strdup_printf("one replay of a forward + backward captured whole as one CUDA graph: host_ns "
                                         "per layer x the %d layers of the stack (layer row size h2048, variant "
                                         "graphed_whole)",
                                         h->whole_layers);
    put_host_scalar(sec, "graph_launch_ns", x->graph_launch_ns, w, o, p);
  }
}

/* The "host" section from the host_torch rows (microbench/mb_host.py), before "calibration". */
static void set_host_fitted(cJSON *root, const PnHwProfile *p, const PnCalHostFitted *h)
{
  const PnHostProfile *x = &p->host;
  const PnCalOrigin *o   = &h->host_from;
  if (!(h->cpu || h->python_loop || h->kernel || h->collective || h->p2p || h->sync || h->graph_layer ||
        h->graph_whole || h->local_layer_rows > 0 || h->fsdp_unit_pairs > 0 || h->moe_layer_pairs > 0 ||
        h->moe_expert_pairs > 0 || h->te_layer_pairs > 0 || h->ref_rounds > 0))
    return;
  bool fresh = get(root, "host") == NULL;
  cJSON *sec = object_at(root, "host");
  if (fresh && get(root, "calibration")) /* the large tables stay last */
    cJSON_AddItemToObject(root, "calibration", cJSON_DetachItemFromObjectCaseSensitive(root, "calibration"));
  if (h->cpu) {
    cJSON *cpu = cJSON_CreateObject();
    cJSON_AddStringToObject(cpu, "value", x->cpu);
    g_autofree char *cpus = o->host_cpus > 0 ? g_strdup_printf(", %d CPUs online", o->host_cpus) : g_strdup("");
    g_autofree char *src  = g_strdup_printf("env.host_cpu of %s (/proc/cpuinfo's model name%s): information, the host "
                                             "the figures below were measured on",
                                            o->files, cpus);
    cJSON_AddStringToObject(cpu, "source", src);
    put_item(sec, "cpu", cpu);
  }
  if (h->python_loop)
    put_host_scalar(sec, "python_loop_ns", x->python_loop_ns,
                    "one iteration of a pure-Python loop (cpu row python_loop, median of its repeats): this host's "
                    "Python speed, to set beside another host's (information, not read by the simulator)",
                    o, p);
  if (h->kernel) {
    g_autofree char *wf = g_strdup_printf(
        "host time per forward kernel of an eager GPT layer: its forward's host time, %.0f ns per layer, / its %.4g "
        "forward kernels (layer row size h2048, variant eager: host_fwd_ns / kernels_fwd_per_layer; the layer's "
        "Python and nn.Module calls included)",
        h->eager_fwd_ns, h->kernels_fwd);
    put_host_scalar(sec, "kernel_ns", x->kernel_ns, wf, o, p);
    g_autofree char *wb = g_strdup_printf(
        "host time per backward kernel of the same layer: backward() until it returns, %.0f ns per layer, / its %.4g "
        "backward kernels (host_bwd_ns / (kernels_per_layer - kernels_fwd_per_layer))",
        h->eager_bwd_ns, h->kernels_bwd);
    put_host_scalar(sec, "kernel_bwd_ns", x->kernel_bwd_ns, wb, o, p);
  }
  if (h->local_layer_rows > 0) {
    g_autofree char *wf = g_strdup_printf(
        "Python of one Megatron-Core local-spec transformer layer's forward beyond its kernels' launches: the median "
        "over %d rows (GPT- and Llama-style stacks, hidden 256 and 2048, in Megatron-Core's DDP) of the host time per "
        "layer of the forward minus its kernels x kernel_ns (microbench/mb_megatron_host.py, Megatron-LM@d98e8a64)",
        h->local_layer_rows);
    put_host_scalar(sec, "local_layer_fwd_ns", x->local_layer_fwd_ns, wf, &h->local_from, p);
    g_autofree char *wb = g_strdup_printf("the same for the backward (until backward() returns: autograd functions, "
                                          "the DDP hooks), minus its kernels x kernel_bwd_ns (%d rows)",
                                          h->local_layer_rows);
    put_host_scalar(sec, "local_layer_bwd_ns", x->local_layer_bwd_ns, wb, &h->local_from, p);
  }
  if (h->ref_rounds > 0)
    put_host_scalar(
        sec, "ref_linear_ns", x->ref_linear_ns,
        "one torch.nn.Linear(2048, 2048) forward in bf16 on 8192 tokens, parameters requiring grad: host "
        "time per call at this profile's host speed, the median over the rounds of microbench/mb_host_ref.py "
        "of the call's host time x the profile's eager h2048 layer forward (kernels x kernel_ns) over the "
        "same round's; what this host is set beside a published one by (host.dgx_ref_linear_ns)",
        &h->ref_from, p);
  if (h->te_layer_pairs > 0) {
    g_autofree char *wf = g_strdup_printf(
        "Python of Megatron-Core around one Transformer Engine layer's forward (TransformerLayer, SelfAttention and "
        "MLP forwards, the QKV split and RoPE, the bias-dropout-adds, the DDP hooks) beyond its kernels' launches and "
        "the TE modules' own (module_ns): a TransformerBlock of get_gpt_layer_with_transformer_engine_spec's "
        "structure with each TE module replaced by a plain PyTorch module of its interface (no TE on the machine), "
        "the median over %d pairs of rows (GPT- and Llama-style, hidden 256 and 2048, in Megatron-Core's DDP) of its "
        "host time per layer at the profile's host speed (scaled by its local-spec twin of the same minute against "
        "kernels x kernel_ns + local_layer_fwd_ns) minus its kernels x kernel_ns (microbench/mb_megatron_host.py "
        "--te-shaped, Megatron-LM@d98e8a64)",
        h->te_layer_pairs);
    put_host_scalar(sec, "te_layer_fwd_ns", x->te_layer_fwd_ns, wf, &h->local_from, p);
    g_autofree char *wb = g_strdup_printf("the same for the backward (until backward() returns: autograd, the DDP "
                                          "hooks), minus its kernels x kernel_bwd_ns (%d pairs)",
                                          h->te_layer_pairs);
    put_host_scalar(sec, "te_layer_bwd_ns", x->te_layer_bwd_ns, wb, &h->local_from, p);
  }
  if (h->fsdp_unit_pairs > 0) {
    g_autofree char *wf = g_strdup_printf(
        "Python of Megatron-FSDP's hooks per FSDP unit and forward (optim_grads_params; the pre-forward all-gather "
        "and the release): the median over %d pairs of rows (the same stack and round, in Megatron-FSDP and in "
        "Megatron-Core's DDP, a data-parallel group of one) of the difference in host time per layer of the "
        "forward, less one collective_ns for the all-gather the simulator launches (microbench/mb_megatron_host.py)",
        h->fsdp_unit_pairs);
    put_host_scalar(sec, "fsdp_unit_fwd_ns", x->fsdp_unit_fwd_ns, wf, &h->local_from, p);
    g_autofree char *wb = g_strdup_printf("the same for the backward (the pre-backward all-gather, the gradient copy "
                                          "into the reduce-scatter buffer, the reduce-scatter), less two "
                                          "collective_ns (%d pairs)",
                                          h->fsdp_unit_pairs);
    put_host_scalar(sec, "fsdp_unit_bwd_ns", x->fsdp_unit_bwd_ns, wb, &h->local_from, p);
  }
  if (h->moe_layer_pairs > 0) {
    g_autofree char *wf = g_strdup_printf(
        "Python of one Megatron-Core MoE layer's forward beyond a dense layer's (the router, the alltoall token "
        "dispatcher, the permutation; Qwen3-30B-A3B's layer at hidden 256): the median over %d pairs of rows (a "
        "local-spec layer with a one-expert top-1 MoE and its twin with a dense MLP of the expert's ffn, the same "
        "round) of the difference in host time per layer, less the kernels the MoE adds x kernel_ns "
        "(microbench/mb_megatron_moe_host.py)",
        h->moe_layer_pairs);
    put_host_scalar(sec, "moe_layer_fwd_ns", x->moe_layer_fwd_ns, wf, &h->local_from, p);
    g_autofree char *wb = g_strdup_printf(
        "the same for the backward, less its added kernels x kernel_bwd_ns (%d pairs)", h->moe_layer_pairs);
    put_host_scalar(sec, "moe_layer_bwd_ns", x->moe_layer_bwd_ns, wb, &h->local_from, p);
  }
  if (h->moe_expert_pairs > 0) {
    g_autofree char *wf = g_strdup_printf(
        "one local expert's call in Megatron-Core's SequentialMLP (no --moe-grouped-gemm), per forward: the median "
        "over %d pairs of rows (eight experts top-8 against one expert top-1, the same size and round) of the host "
        "time per layer they differ by, per added expert, less the two GEMM launches x kernel_ns the simulator "
        "charges each expert anyway (microbench/mb_megatron_moe_host.py)",
        h->moe_expert_pairs);
    put_host_scalar(sec, "moe_expert_fwd_ns", x->moe_expert_fwd_ns, wf, &h->local_from, p);
    g_autofree char *wb = g_strdup_printf(
        "the same for the backward, less four GEMM launches x kernel_bwd_ns (%d pairs)", h->moe_expert_pairs);
    put_host_scalar(sec, "moe_expert_bwd_ns", x->moe_expert_bwd_ns, wb, &h->local_from, p);
  }
  set_host_calls(sec, p, h);
}

/* What calibrate writes must load: the profile is written to out_path's temporary file
 * (io/out.h), read back by the profile reader and only then published. A fit of absurd
 * measurements (a 10^7-fold slowdown, a 10^12 bytes/ns copy) is then an error, not an unusable
 * profile. An output written in place (standard output, a FIFO) cannot be read back: it is
 * written unchecked. */
/* The "hbm_share" section (HBM sharing on) from the GEMMs timed beside copying spinners (calib/hbm.c),
 * before "calibration". */
static void set_hbm_share_fitted(cJSON *root, const PnHwProfile *p, const PnCalFitted *f)
{
  if (f->hbm_curve_points == 0)
    return;
  if (f->hbm_nccl_rows > 0) {
    const PnCalOrigin *o    = &f->hbm_nccl_from;
    g_autofree char *source = g_strdup_printf(
        "HBM bytes an NCCL collective moves per byte of its bus bandwidth, per GPU: the value that best replays "
        "the slowdown of %d all-gathers and reduce-scatters (128 and 512 MiB, 4-32 CTAs) beside a copy kernel on "
        "16-128 SMs, when HBM serves its users in proportion to their pressure (the collective pressing its CTAs; "
        "hw/hbm.h, calib/hbm.c), on the GPU measured (its own copy curve); an NCCL property, taken by every "
        "profile; measured by microbench/mb_copy_nccl_overlap (%s, %s, %d GPUs, %s)",
        f->hbm_nccl_rows, o->files, o->gpu, o->gpus, o->date[0] ? o->date : "date not recorded");
    cJSON *item = cJSON_CreateObject();
    cJSON_AddNumberToObject(item, "value", p->hbm_share.nccl_bytes_per_busbw_byte);
    cJSON_AddStringToObject(item, "source", source);
    bool fresh = get(root, "hbm_share") == NULL;
    cJSON *s   = object_at(root, "hbm_share");
    if (fresh && get(root, "calibration"))
      cJSON_AddItemToObject(root, "calibration", cJSON_DetachItemFromObjectCaseSensitive(root, "calibration"));
    put_item(s, "nccl_bytes_per_busbw_byte", item);
  }
  bool fresh = get(root, "hbm_share") == NULL;
  cJSON *sec = object_at(root, "hbm_share");
  if (fresh && get(root, "calibration")) /* the large tables stay last */
    cJSON_AddItemToObject(root, "calibration", cJSON_DetachItemFromObjectCaseSensitive(root, "calibration"));
  static const char *const keys[2][2] = {{"gemm_bf16_bytes_per_flop", "gemm_fp8_bytes_per_flop"},
                                         {"gemm_bf16_pressure_per_sm", "gemm_fp8_pressure_per_sm"}};
  for (int fp8 = 0; fp8 < 2; fp8++) {
    if (f->hbm_share_rows[fp8] == 0)
      continue;
    for (int what = 0; what < 2; what++) {
      g_autofree char *source = g_strdup_printf(
          "a %s GEMM's HBM %s: with its %s, the pair that best replays its %d measured slowdowns beside a spinner "
          "copying on k SMs (over beside an idle spinner on the same SMs), and the spinner's own bandwidth beside it "
          "where measured, when HBM serves its users in proportion to their pressure (hw/hbm.h, calib/hbm.c); "
          "measured by microbench/ (%s; %s) and fitted by penumbra calibrate",
          fp8 ? "fp8" : "bf16",
          what ? "pressure per SM, in SM-equivalents of a streaming copy" : "demand per FLOP (bytes)",
          what ? "demand per FLOP" : "pressure per SM", f->hbm_share_rows[fp8], f->hbm_contention_from.files,
          f->hbm_share_from.files);
      cJSON *item = cJSON_CreateObject();
      cJSON_AddNumberToObject(item, "value",
                              what ? p->hbm_share.gemm_pressure[fp8] : p->hbm_share.gemm_bytes_per_flop[fp8]);
      cJSON_AddStringToObject(item, "source", source);
      put_item(sec, keys[what][fp8], item);
    }
  }
}

static gboolean write_loadable(const char *out_path, const char *text, GError **error)
{
  g_autoptr(PnOut) out = pn_out_open(out_path, error);
  if (out == NULL)
    return FALSE;
  pn_out_write(out, text, strlen(text));
  const char *staged      = pn_out_staged_path(out);
  g_autoptr(GError) local = NULL;
  PnHwProfile *back       = staged != NULL ? pn_hw_profile_load(staged, &local) : NULL;
  if (staged != NULL && back == NULL) {
    const char *why = g_str_has_prefix(local->message, staged) ? local->message + strlen(staged) + 2 : local->message;
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
                "%s: the calibrated profile would not load (absurd measurements?): %s", out_path, why);
    return FALSE;
  }
  pn_hw_profile_free(back);
  return pn_out_commit(g_steal_pointer(&out), error);
}

/* The profile's "calibrated" day: in place of the base's, or right after "gpu". */
static void set_calibrated(cJSON *root, const char *date)
{
  if (date[0] == '\0') {
    cJSON_DeleteItemFromObjectCaseSensitive(root, "calibrated");
    return;
  }
  cJSON *day = cJSON_CreateString(date);
  if (get(root, "calibrated")) {
    cJSON_ReplaceItemInObjectCaseSensitive(root, "calibrated", day);
    return;
  }
  /* appended, then what followed "gpu" moves behind it (Debian's cJSON 1.7.15 refuses to insert
   * in the middle of a list) */
  cJSON_AddItemToObject(root, "calibrated", day);
  cJSON *gpu = cJSON_GetObjectItemCaseSensitive(root, "gpu");
  for (cJSON *c = gpu ? gpu->next : day, *next; c != day; c = next) {
    next = c->next;
    cJSON_AddItemToArray(root, cJSON_DetachItemViaPointer(root, c));
  }
}

gboolean pn_calib_write_profile(const char *base_path, const char *out_path, const PnHwProfile *p, const PnCalFitted *f,
                                const char *provenance, GError **error)
{
  cJSON *root = NULL;
  if (!pn__io_read_json(base_path, base_path, &root, error))
    return FALSE;
  set_calibrated(root, p->calibrated);
  g_autofree char *src =
      g_strdup_printf("measured by microbench/ and fitted by penumbra calibrate from %s", provenance);
  set_fitted_scalars(root, p, f, src);
  set_launch_fitted(root, p, &f->host);
  set_host_fitted(root, p, &f->host);
  set_hbm_share_fitted(root, p, f);
  cJSON *cal = calibration_json(p, f, src, cJSON_GetObjectItemCaseSensitive(root, "calibration"));
  if (get(root, "calibration"))
    cJSON_ReplaceItemInObjectCaseSensitive(root, "calibration", cal);
  else
    cJSON_AddItemToObject(root, "calibration", cal);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  g_autofree char *with_nl = g_strconcat(text, "\n", NULL);
  free(text);
  return write_loadable(out_path, with_nl, error);
}
