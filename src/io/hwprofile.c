/* hwprofile.c — hardware profile JSON files into PnHwProfile (format in hwprofile.h). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "io/hwprofile.h"
#include "io/io-private.h"

#define HW_SCHEMA_VERSION 1
#define HW_MAX_POINTS 1000000

/* One sourced scalar: {"value": v, "source": "..."}. Integers go to `int` fields. Doubles must
 * lie in (lo, hi] (or [lo, hi] with lo_inclusive). */
typedef struct {
  const char *key;
  bool is_int;
  size_t offset;
  double lo, hi;
  bool lo_inclusive;
} HwScalar;

#define HW_INT(k, field, lo, hi)                                                                                       \
  {                                                                                                                    \
    k, true, offsetof(PnHwProfile, field), lo, hi, true                                                                \
  }
#define HW_POS(k, field, hi)                                                                                           \
  {                                                                                                                    \
    k, false, offsetof(PnHwProfile, field), 0.0, hi, false                                                             \
  }
#define HW_NONNEG(k, field, hi)                                                                                        \
  {                                                                                                                    \
    k, false, offsetof(PnHwProfile, field), 0.0, hi, true                                                              \
  }

/* A rate or efficiency in [lo, hi]: the floor keeps durations (size / rate) finite for every size
 * a scenario accepts; a 1e-300 bytes/ns link would make a transfer outlast a double. */
#define HW_RATE(k, field, lo, hi)                                                                                      \
  {                                                                                                                    \
    k, false, offsetof(PnHwProfile, field), lo, hi, true                                                               \
  }

static const HwScalar compute_scalars[] = {
    HW_INT("sm_count", sm_count, 1, 16384), /* SM counts travel in PnTask.sms, an int16_t */
    HW_POS("hbm_bytes", hbm_bytes, 1e15),
    HW_RATE("hbm_bytes_per_ns", hbm_bytes_per_ns, 1e-3, 1e6),
    HW_RATE("peak_bf16_flops_per_ns", peak_bf16_flops_per_ns, 1e-3, 1e9),
    HW_RATE("peak_fp8_flops_per_ns", peak_fp8_flops_per_ns, 1e-3, 1e9),
    HW_RATE("gemm_efficiency", gemm_efficiency, 1e-3, 1.0),
    HW_RATE("attn_efficiency", attn_efficiency, 1e-3, 1.0),
    HW_INT("gemm_tile_m", gemm_tile_m, 1, 65536),
    HW_INT("gemm_tile_n", gemm_tile_n, 1, 65536),
    HW_NONNEG("kernel_launch_ns", kernel_launch_ns, 1e9),
};
/* compute.kernel_floor_ns (PnFloorClass order), each optional: 0 = no floor */
static const HwScalar floor_scalars[] = {
    HW_NONNEG("gemm", kernel_floor_ns[PN_FLOOR_GEMM], 1e9),
    HW_NONNEG("attention", kernel_floor_ns[PN_FLOOR_ATTN], 1e9),
    HW_NONNEG("memory", kernel_floor_ns[PN_FLOOR_MEM], 1e9),
};
/* the "host" section, each optional: 0 = free (the model off for that cost) */
static const HwScalar host_scalars[] = {
    HW_NONNEG("kernel_ns", host.kernel_ns, 1e9),
    HW_NONNEG("kernel_bwd_ns", host.kernel_bwd_ns, 1e9),
    HW_NONNEG("module_ns", host.module_ns, 1e9),
    HW_NONNEG("local_layer_fwd_ns", host.local_layer_fwd_ns, 1e9),
    HW_NONNEG("local_layer_bwd_ns", host.local_layer_bwd_ns, 1e9),
    HW_NONNEG("te_layer_fwd_ns", host.te_layer_fwd_ns, 1e9),
    HW_NONNEG("te_layer_bwd_ns", host.te_layer_bwd_ns, 1e9),
    HW_NONNEG("ref_linear_ns", host.ref_linear_ns, 1e9),
    HW_NONNEG("dgx_ref_linear_ns", host.dgx_ref_linear_ns, 1e9),
    HW_NONNEG("fsdp_unit_fwd_ns", host.fsdp_unit_fwd_ns, 1e9),
    HW_NONNEG("fsdp_unit_bwd_ns", host.fsdp_unit_bwd_ns, 1e9),
    HW_NONNEG("moe_layer_fwd_ns", host.moe_layer_fwd_ns, 1e9),
    HW_NONNEG("moe_layer_bwd_ns", host.moe_layer_bwd_ns, 1e9),
    HW_NONNEG("moe_expert_fwd_ns", host.moe_expert_fwd_ns, 1e9),
    HW_NONNEG("moe_expert_bwd_ns", host.moe_expert_bwd_ns, 1e9),
    HW_NONNEG("collective_ns", host.collective_ns, 1e9),
    HW_NONNEG("p2p_ns", host.p2p_ns, 1e9),
    HW_NONNEG("sync_ns", host.sync_ns, 1e9),
    HW_NONNEG("graph_launch_ns", host.graph_launch_ns, 1e9),
    HW_NONNEG("graph_layer_fwd_ns", host.graph_layer_fwd_ns, 1e9),
    HW_NONNEG("graph_layer_bwd_ns", host.graph_layer_bwd_ns, 1e9),
    HW_NONNEG("python_loop_ns", host.python_loop_ns, 1e6),
};
/* the optional "hbm_share" section (PnHbmShare): present = HBM sharing on */
static const HwScalar hbm_share_scalars[] = {
    HW_NONNEG("gemm_bf16_bytes_per_flop", hbm_share.gemm_bytes_per_flop[0], 1e3),
    HW_NONNEG("gemm_fp8_bytes_per_flop", hbm_share.gemm_bytes_per_flop[1], 1e3),
    HW_NONNEG("gemm_bf16_pressure_per_sm", hbm_share.gemm_pressure[0], 1e3),
    HW_NONNEG("gemm_fp8_pressure_per_sm", hbm_share.gemm_pressure[1], 1e3),
    HW_NONNEG("nccl_bytes_per_busbw_byte", hbm_share.nccl_bytes_per_busbw_byte, 1e3),
};
static const HwScalar network_scalars[] = {
    HW_INT("gpus_per_node", gpus_per_node, 1, 100000),
    HW_RATE("nvlink_bytes_per_ns", nvlink_bytes_per_ns, 1e-3, 1e6),
    HW_RATE("nvlink_ce_bytes_per_ns", nvlink_ce_bytes_per_ns, 1e-3, 1e6),
    HW_INT("nics_per_node", nics_per_node, 1, 100000),
    HW_RATE("nic_bytes_per_ns", nic_bytes_per_ns, 1e-3, 1e6),
};
static const HwScalar pair_busbw_scalars[] = {
    HW_RATE("all_gather", nccl_pair_busbw[0], 1e-3, 1e6), HW_RATE("reduce_scatter", nccl_pair_busbw[1], 1e-3, 1e6),
    HW_RATE("all_reduce", nccl_pair_busbw[2], 1e-3, 1e6), HW_RATE("all_to_all", nccl_pair_busbw[3], 1e-3, 1e6),
    HW_RATE("send_recv", nccl_pair_busbw[4], 1e-3, 1e6),
};
static const HwScalar cta_busbw_scalars[] = {
    HW_RATE("all_gather", nccl_cta_busbw[0], 1e-3, 1e6), HW_RATE("reduce_scatter", nccl_cta_busbw[1], 1e-3, 1e6),
    HW_RATE("all_reduce", nccl_cta_busbw[2], 1e-3, 1e6), HW_RATE("all_to_all", nccl_cta_busbw[3], 1e-3, 1e6),
    HW_RATE("send_recv", nccl_cta_busbw[4], 1e-3, 1e6),
};
static const HwScalar pair_latency_scalars[] = {
    HW_NONNEG("all_gather", nccl_pair_latency_ns[0], 1e12), HW_NONNEG("reduce_scatter", nccl_pair_latency_ns[1], 1e12),
    HW_NONNEG("all_reduce", nccl_pair_latency_ns[2], 1e12), HW_NONNEG("all_to_all", nccl_pair_latency_ns[3], 1e12),
    HW_NONNEG("send_recv", nccl_pair_latency_ns[4], 1e12),
};
static const HwScalar nccl_scalars[] = {
    HW_NONNEG("base_latency_ns", nccl_base_latency_ns, 1e12),
    HW_NONNEG("nvlink_hop_ns", nccl_nvlink_hop_ns, 1e12),
    HW_NONNEG("net_hop_ns", nccl_net_hop_ns, 1e12),
    HW_INT("ctas_nvlink", nccl_ctas_nvlink, 1, 4096),
    HW_INT("ctas_net", nccl_ctas_net, 1, 4096),
    HW_INT("p2p_ctas", nccl_p2p_ctas, 1, 4096),
    HW_RATE("cta_bytes_per_ns", nccl_cta_bytes_per_ns, 1e-3, 1e6),
};

/* An object of sourced scalars. `optional`: each key may be absent (its field stays 0); else every
 * key is required. `nested`: one more key allowed in it, which the caller reads (NULL: none). */
typedef struct {
  const char *name;
  const HwScalar *scalars;
  gsize n;
  bool optional;
  const char *nested;
} HwSection;

#define HW_SECTION(name, arr, optional, nested)                                                                        \
  {                                                                                                                    \
    name, arr, G_N_ELEMENTS(arr), optional, nested                                                                     \
  }
static const HwSection compute_section      = HW_SECTION("compute", compute_scalars, false, "kernel_floor_ns");
static const HwSection floor_section        = HW_SECTION("kernel_floor_ns", floor_scalars, true, NULL);
static const HwSection host_section         = HW_SECTION("host", host_scalars, true, "cpu");
static const HwSection network_section      = HW_SECTION("network", network_scalars, false, NULL);
static const HwSection hbm_share_section    = HW_SECTION("hbm_share", hbm_share_scalars, true, NULL);
static const HwSection nccl_section         = HW_SECTION("nccl", nccl_scalars, false, NULL);
static const HwSection pair_busbw_section   = HW_SECTION("nccl_pair_busbw", pair_busbw_scalars, false, NULL);
static const HwSection pair_latency_section = HW_SECTION("nccl_pair_latency_ns", pair_latency_scalars, false, NULL);
static const HwSection cta_busbw_section    = HW_SECTION("nccl_cta_busbw", cta_busbw_scalars, false, NULL);

#define KEY(k)                                                                                                         \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_CUSTOM                                                                                  \
  }
static const PnField top_keys[]    = {KEY("schema_version"), KEY("name"),      KEY("gpu"),         KEY("calibrated"),
                                      KEY("description"),    KEY("compute"),   KEY("network"),     KEY("nccl"),
                                      KEY("host"),           KEY("hbm_share"), KEY("calibration"), {.key = NULL}};
static const PnField scalar_keys[] = {KEY("value"), KEY("source"), KEY("unit"), KEY("note"), {.key = NULL}};
static const PnField curve_keys[]  = {KEY("x"), KEY("y"), KEY("log_x"), KEY("source"), KEY("note"), {.key = NULL}};
static const PnField table_keys[]  = {KEY("columns"), KEY("rows"), KEY("source"), KEY("note"), {.key = NULL}};
static const PnField calibration_keys[] = {KEY("gemm_sm_scaling"),
                                           KEY("mem_sm_scaling"),
                                           KEY("hbm_pressure"),
                                           KEY("ub_push_bytes_per_ns"),
                                           KEY("ub_pull_bytes_per_ns"),
                                           KEY("coll_size_efficiency"),
                                           KEY("gemm_sm_limit_scaling"),
                                           KEY("coll_efficiency_all_gather"),
                                           KEY("coll_efficiency_reduce_scatter"),
                                           KEY("coll_efficiency_all_reduce"),
                                           KEY("coll_efficiency_all_to_all"),
                                           KEY("coll_efficiency_send_recv"),
                                           KEY("nccl_pair_busbw"),
                                           KEY("nccl_cta_busbw"),
                                           KEY("nccl_pair_latency_ns"),
                                           KEY("nccl_table"),
                                           KEY("nccl_pair_table"),
                                           KEY("gemm_contention_table"),
                                           KEY("mem_bandwidth_copy"),
                                           KEY("mem_bandwidth_norm"),
                                           KEY("mem_bandwidth_activation"),
                                           KEY("mem_bandwidth_optimizer"),
                                           KEY("mem_bandwidth_dropout"),
                                           KEY("gemm_bf16"),
                                           KEY("gemm_fp8"),
                                           KEY("gemm_bf16_accum_bf16"),
                                           KEY("gemm_bf16_accum_fp32"),
                                           KEY("gemm_fp8_accum_bf16"),
                                           KEY("gemm_fp8_accum_fp32"),
                                           KEY("attn_bf16"),
                                           KEY("bmm_bf16"),
                                           KEY("torch_kernel_vs_copy"),
                                           {.key = NULL}};

static const char *const gemm_columns[]       = {"m", "n", "k", "ns"};
static const char *const coll_columns[]       = {"collective", "ranks", "ctas", "bytes", "ns"};
static const char *const pair_columns[]       = {"collective", "ctas", "bytes", "ns"}; /* nccl_pair_table: ranks 2 */
static const char *const contention_columns[] = {"m", "n", "k", "dtype", "variant", "sms_held", "slowdown"};
static const char *const attn_columns[]       = {"batch",    "seq",        "heads",  "kv_heads",
                                                 "head_dim", "head_dim_v", "fwd_ns", "bwd_ns"};
/* before the value heads had a column of their own (every row head_dim_v = head_dim) */
static const char *const attn_columns_7[] = {"batch", "seq", "heads", "kv_heads", "head_dim", "fwd_ns", "bwd_ns"};
static const char *const bmm_columns[]    = {"batch", "m", "n", "k", "ns"};

const char *const pn__io_torch_kernel_names[PN_TK_N] = {
    [PN_TK_MASKED_FILL]       = "masked_fill",
    [PN_TK_MASKED_FILL_BWD]   = "masked_fill_bwd",
    [PN_TK_SOFTMAX_FWD]       = "softmax_fwd",
    [PN_TK_SOFTMAX_BWD]       = "softmax_bwd",
    [PN_TK_DROPOUT_FWD]       = "dropout_fwd",
    [PN_TK_DROPOUT_BWD]       = "dropout_bwd",
    [PN_TK_REPEAT_INTERLEAVE] = "repeat_interleave",
    [PN_TK_CONTEXT_COPY]      = "context_copy",
    [PN_TK_ROPE_FWD]          = "rope_unfused_fwd",
    [PN_TK_ROPE_BWD]          = "rope_unfused_bwd",
    [PN_TK_GLU_CLAMP_FWD]     = "glu_clamp_fwd",
    [PN_TK_GLU_CLAMP_BWD]     = "glu_clamp_bwd",
};

static char *join(const char *const *names, int n)
{
  GString *s = g_string_new(NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", names[i]);
  return g_string_free(s, FALSE);
}

/* The table of keys of a scalar section, for pn__io_check_keys. */
static PnField *scalar_section_keys(const HwSection *sec)
{
  PnField *f = g_new0(PnField, sec->n + 2);
  for (gsize i = 0; i < sec->n; i++) {
    f[i].key  = sec->scalars[i].key;
    f[i].kind = PN_FIELD_CUSTOM;
  }
  if (sec->nested)
    f[sec->n] = (PnField){.key = sec->nested, .kind = PN_FIELD_CUSTOM};
  return f;
}

static gboolean check_source(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, GError **error)
{
  const cJSON *src      = cJSON_GetObjectItemCaseSensitive(obj, "source");
  g_autofree char *sptr = pn__io_ptr_child(ptr, "source");
  if (src == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, sptr, "required key missing: every number must carry its source");
    return FALSE;
  }
  if (!cJSON_IsString(src) || src->valuestring[0] == '\0') {
    g_autofree char *got = pn__io_describe(src);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, sptr,
                "expected a non-empty string saying where the number comes from, got %s", got);
    return FALSE;
  }
  for (const char *k = "unit"; k != NULL; k = strcmp(k, "unit") == 0 ? "note" : NULL) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, k);
    if (s != NULL && !cJSON_IsString(s)) {
      g_autofree char *kptr = pn__io_ptr_child(ptr, k);
      g_autofree char *got  = pn__io_describe(s);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, kptr, "expected a string, got %s", got);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean check_double(const PnIoCtx *ctx, const cJSON *v, const char *ptr, double lo, double hi,
                             bool lo_inclusive, double *out, GError **error)
{
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) { /* checked before any message is formatted */
    double x = v->valuedouble;
    if (!(x < lo || (!lo_inclusive && x == lo) || x > hi)) {
      *out = x == 0.0 ? 0.0 : x; /* -0 reads as 0 */
      return TRUE;
    }
  }
  g_autofree char *got = pn__io_describe(v);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a finite number, got %s", got);
    return FALSE;
  }
  double d = v->valuedouble;
  if (d < lo || (!lo_inclusive && d == lo) || d > hi) {
    char blo[G_ASCII_DTOSTR_BUF_SIZE], bhi[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(blo, sizeof blo, "%g", lo);
    g_ascii_formatd(bhi, sizeof bhi, "%g", hi);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a number in %c%s, %s], got %s", lo_inclusive ? '[' : '(',
                blo, bhi, got);
    return FALSE;
  }
  *out = d;
  return TRUE;
}

static gboolean read_scalars(const PnIoCtx *ctx, const cJSON *root, const char *parent_ptr, const HwSection *sec,
                             PnHwProfile *p, GError **error)
{
  const HwScalar *sc    = sec->scalars;
  g_autofree char *sptr = pn__io_ptr_child(parent_ptr, sec->name);
  const cJSON *obj      = cJSON_GetObjectItemCaseSensitive(root, sec->name);
  if (obj == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, sptr, "required section missing");
    return FALSE;
  }
  g_autofree PnField *keys = scalar_section_keys(sec);
  if (!pn__io_check_keys(ctx, obj, sptr, keys, error))
    return FALSE;
  for (gsize i = 0; i < sec->n; i++) {
    g_autofree char *ptr = pn__io_ptr_child(sptr, sc[i].key);
    const cJSON *item    = cJSON_GetObjectItemCaseSensitive(obj, sc[i].key);
    if (item == NULL && sec->optional)
      continue;
    if (item == NULL) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "required key missing");
      return FALSE;
    }
    if (cJSON_IsNumber(item)) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr,
                  "expected {\"value\": <number>, \"source\": \"...\"}, got a bare number: every number must carry "
                  "its source");
      return FALSE;
    }
    if (!pn__io_check_keys(ctx, item, ptr, scalar_keys, error) || !check_source(ctx, item, ptr, error))
      return FALSE;
    const cJSON *v        = cJSON_GetObjectItemCaseSensitive(item, "value");
    g_autofree char *vptr = pn__io_ptr_child(ptr, "value");
    if (v == NULL) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, vptr, "required key missing");
      return FALSE;
    }
    char *dst = (char *)p + sc[i].offset;
    if (sc[i].is_int) {
      int64_t iv;
      if (!pn__io_get_int(ctx, v, vptr, (int64_t)sc[i].lo, (int64_t)sc[i].hi, false, &iv, error))
        return FALSE;
      int x = (int)iv;
      memcpy(dst, &x, sizeof x);
    } else {
      double d;
      if (!check_double(ctx, v, vptr, sc[i].lo, sc[i].hi, sc[i].lo_inclusive, &d, error))
        return FALSE;
      memcpy(dst, &d, sizeof d);
    }
  }
  return TRUE;
}

/* Reads a finite number array of at most HW_MAX_POINTS values. *out is g_new'd (NULL when empty). */
static gboolean read_numbers(const PnIoCtx *ctx, const cJSON *arr, const char *ptr, double **out, int *n_out,
                             GError **error)
{
  if (!cJSON_IsArray(arr)) {
    g_autofree char *got = pn__io_describe(arr);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected an array of numbers, got %s", got);
    return FALSE;
  }
  int n = cJSON_GetArraySize(arr);
  if (n > HW_MAX_POINTS) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "%d points is absurdly many (at most %d)", n, HW_MAX_POINTS);
    return FALSE;
  }
  g_autofree double *vals = n > 0 ? g_new(double, n) : NULL;
  int i                   = 0;
  for (const cJSON *c = arr->child; c != NULL; c = c->next, i++) {
    if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble)) {
      g_autofree char *iptr = pn__io_ptr_index(ptr, (gsize)i);
      g_autofree char *got  = pn__io_describe(c);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr, "expected a finite number, got %s", got);
      return FALSE;
    }
    vals[i] = c->valuedouble;
  }
  *out   = g_steal_pointer(&vals);
  *n_out = n;
  return TRUE;
}

static gboolean read_curve(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, bool default_log_x, PnCurve *out,
                           GError **error)
{
  if (!pn__io_check_keys(ctx, obj, ptr, curve_keys, error) || !check_source(ctx, obj, ptr, error))
    return FALSE;
  g_autofree char *xptr = pn__io_ptr_child(ptr, "x");
  g_autofree char *yptr = pn__io_ptr_child(ptr, "y");
  g_autofree char *lptr = pn__io_ptr_child(ptr, "log_x");
  const cJSON *xs       = cJSON_GetObjectItemCaseSensitive(obj, "x");
  const cJSON *ys       = cJSON_GetObjectItemCaseSensitive(obj, "y");
  const cJSON *lx       = cJSON_GetObjectItemCaseSensitive(obj, "log_x");
  if (xs == NULL || ys == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, xs == NULL ? xptr : yptr, "required key missing");
    return FALSE;
  }
  bool log_x = default_log_x;
  if (lx != NULL) {
    if (!cJSON_IsBool(lx)) {
      g_autofree char *got = pn__io_describe(lx);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, lptr, "expected true or false, got %s", got);
      return FALSE;
    }
    log_x = cJSON_IsTrue(lx);
  }
  g_autofree double *x = NULL, *y = NULL;
  int nx = 0, ny = 0;
  if (!read_numbers(ctx, xs, xptr, &x, &nx, error) || !read_numbers(ctx, ys, yptr, &y, &ny, error))
    return FALSE;
  if (nx != ny) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, yptr, "has %d points but x has %d", ny, nx);
    return FALSE;
  }
  for (int i = 0; i < nx; i++) {
    if ((log_x && x[i] <= 0.0) || (i > 0 && x[i] <= x[i - 1])) {
      g_autofree char *iptr = pn__io_ptr_index(xptr, (gsize)i);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr, "%s",
                  log_x && x[i] <= 0.0 ? "must be > 0 (log_x curve)" : "x must be strictly ascending");
      return FALSE;
    }
    if (!(y[i] >= 1e-6)) { /* a fraction of the peak; a smaller one makes durations overflow to inf */
      g_autofree char *iptr = pn__io_ptr_index(yptr, (gsize)i);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr, "must be >= 1e-06 (got %g)", y[i]);
      return FALSE;
    }
  }
  out->n     = nx;
  out->x     = g_steal_pointer(&x);
  out->y     = g_steal_pointer(&y);
  out->log_x = log_x;
  return TRUE;
}

/* Maps the file's column names onto `cols` (all required, each once): pos[j] = the index in a
 * row of cols[j]. `expected` lists `cols` for messages. */
static gboolean read_columns(const PnIoCtx *ctx, const cJSON *columns, const char *cptr, const char *const *cols,
                             int ncols, const char *expected, int *pos, GError **error)
{
  if (!cJSON_IsArray(columns)) {
    g_autofree char *got = pn__io_describe(columns);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, cptr, "expected an array of column names (%s), got %s", expected, got);
    return FALSE;
  }
  for (int j = 0; j < ncols; j++)
    pos[j] = -1;
  int i = 0;
  for (const cJSON *c = columns->child; c != NULL; c = c->next, i++) {
    g_autofree char *iptr = pn__io_ptr_index(cptr, (gsize)i);
    int found             = -1;
    for (int j = 0; cJSON_IsString(c) && j < ncols; j++)
      if (strcmp(c->valuestring, cols[j]) == 0)
        found = j;
    if (found < 0) {
      g_autofree char *got = pn__io_describe(c);
      const char *sugg     = cJSON_IsString(c) ? pn__io_suggest(c->valuestring, cols, (gsize)ncols) : NULL;
      if (sugg != NULL)
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr, "unknown column %s (did you mean \"%s\"?)", got, sugg);
      else
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr, "unknown column %s (expected %s)", got, expected);
      return FALSE;
    }
    if (pos[found] >= 0) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr, "duplicate column \"%s\"", cols[found]);
      return FALSE;
    }
    pos[found] = i;
  }
  for (int j = 0; j < ncols; j++) {
    if (pos[j] < 0) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, cptr, "missing column \"%s\" (expected %s)", cols[j], expected);
      return FALSE;
    }
  }
  return TRUE;
}

/* Row `r` of a table, cell by cell with the value checks and their messages: read_table's own
 * loop checks without formatting anything and hands a row here only when it refused it. */
static gboolean read_row_checked(const PnIoCtx *ctx, const cJSON *row, const char *rptr, int r, const int *pos,
                                 int ncols, int n_int, const char *expected, double *out, GError **error)
{
  g_autofree char *rowptr = pn__io_ptr_index(rptr, (gsize)r);
  if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != ncols) {
    g_autofree char *got =
        cJSON_IsArray(row) ? g_strdup_printf("%d values", cJSON_GetArraySize(row)) : pn__io_describe(row);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, rowptr, "expected a row of %d values (%s), got %s", ncols, expected,
                got);
    return FALSE;
  }
  for (int j = 0; j < ncols; j++) {
    const cJSON *v        = cJSON_GetArrayItem(row, pos[j]);
    g_autofree char *vptr = pn__io_ptr_index(rowptr, (gsize)pos[j]);
    double d;
    if (j < n_int) {
      int64_t iv;
      if (!pn__io_get_int(ctx, v, vptr, 1, 1000000000, true, &iv, error))
        return FALSE;
      d = (double)iv;
    } else if (!check_double(ctx, v, vptr, 0.0, 1e15, false, &d, error)) {
      return FALSE;
    }
    out[j] = d;
  }
  return TRUE;
}

/* Reads a measured table: maps the file's column order onto `cols` (all required), and each row
 * into `values` (row-major in `cols` order). The first `n_int` of `cols` are positive integers,
 * the rest positive durations. */
static gboolean read_table(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const char *const *cols, int ncols,
                           int n_int, double **values, int *n_rows, GError **error)
{
  if (!pn__io_check_keys(ctx, obj, ptr, table_keys, error) || !check_source(ctx, obj, ptr, error))
    return FALSE;
  g_autofree char *cptr = pn__io_ptr_child(ptr, "columns");
  g_autofree char *rptr = pn__io_ptr_child(ptr, "rows");
  const cJSON *columns  = cJSON_GetObjectItemCaseSensitive(obj, "columns");
  const cJSON *rows     = cJSON_GetObjectItemCaseSensitive(obj, "rows");
  if (columns == NULL || rows == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, columns == NULL ? cptr : rptr, "required key missing");
    return FALSE;
  }
  g_autofree char *expected = join(cols, ncols);
  int pos[16]; /* pos[j] = index in a row of cols[j] */
  g_assert(ncols <= (int)G_N_ELEMENTS(pos));
  if (!read_columns(ctx, columns, cptr, cols, ncols, expected, pos, error))
    return FALSE;
  if (!cJSON_IsArray(rows)) {
    g_autofree char *got = pn__io_describe(rows);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, rptr, "expected an array of rows, got %s", got);
    return FALSE;
  }
  int n = cJSON_GetArraySize(rows);
  if (n > HW_MAX_POINTS) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, rptr, "%d rows is absurdly many (at most %d)", n, HW_MAX_POINTS);
    return FALSE;
  }
  g_autofree double *vals = n > 0 ? g_new(double, (gsize)n *(gsize)ncols) : NULL;
  int r                   = 0;
  for (const cJSON *row = rows->child; row != NULL; row = row->next, r++) {
    /* pointers are formatted only for a message: tables hold thousands of cells */
    if (cJSON_IsArray(row) && cJSON_GetArraySize(row) == ncols) {
      bool ok = true;
      for (int j = 0; j < ncols && ok; j++) {
        const cJSON *v = cJSON_GetArrayItem(row, pos[j]);
        double d       = cJSON_IsNumber(v) ? v->valuedouble : (double)NAN;
        ok             = isfinite(d) && (j < n_int ? d == floor(d) && d >= 1.0 && d <= 1e9 : d > 0.0 && d <= 1e15);
        vals[(gsize)r * (gsize)ncols + (gsize)j] = d;
      }
      if (ok)
        continue;
    }
    if (!read_row_checked(ctx, row, rptr, r, pos, ncols, n_int, expected, vals + (gsize)r * (gsize)ncols, error))
      return FALSE;
  }
  *values = g_steal_pointer(&vals);
  *n_rows = n;
  return TRUE;
}

/* The curves of "calibration", each optional. */
static gboolean read_curves(const PnIoCtx *ctx, const cJSON *cal, const char *ptr, PnHwProfile *p, GError **error)
{
  static const struct {
    const char *key;
    size_t offset;
    bool log_x;
  } curves[] = {
      {"gemm_sm_scaling", offsetof(PnHwProfile, gemm_sm_scaling), false},
      {"mem_sm_scaling", offsetof(PnHwProfile, mem_sm_scaling), false},
      {"hbm_pressure", offsetof(PnHwProfile, hbm_share.pressure), false},
      {"ub_push_bytes_per_ns", offsetof(PnHwProfile, ub_push_bytes_per_ns), true},
      {"ub_pull_bytes_per_ns", offsetof(PnHwProfile, ub_pull_bytes_per_ns), true},
      {"coll_size_efficiency", offsetof(PnHwProfile, coll_size_efficiency), true},
      {"gemm_sm_limit_scaling", offsetof(PnHwProfile, gemm_sm_limit_scaling), false},
      {"coll_efficiency_all_gather", offsetof(PnHwProfile, coll_efficiency[0]), true},
      {"coll_efficiency_reduce_scatter", offsetof(PnHwProfile, coll_efficiency[1]), true},
      {"coll_efficiency_all_reduce", offsetof(PnHwProfile, coll_efficiency[2]), true},
      {"coll_efficiency_all_to_all", offsetof(PnHwProfile, coll_efficiency[3]), true},
      {"coll_efficiency_send_recv", offsetof(PnHwProfile, coll_efficiency[4]), true},
      {"mem_bandwidth_copy", offsetof(PnHwProfile, mem_bandwidth[0]), true},
      {"mem_bandwidth_norm", offsetof(PnHwProfile, mem_bandwidth[1]), true},
      {"mem_bandwidth_activation", offsetof(PnHwProfile, mem_bandwidth[2]), true},
      {"mem_bandwidth_optimizer", offsetof(PnHwProfile, mem_bandwidth[3]), true},
      {"mem_bandwidth_dropout", offsetof(PnHwProfile, mem_bandwidth[4]), true},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(curves); i++) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cal, curves[i].key);
    if (c == NULL)
      continue;
    g_autofree char *cptr = pn__io_ptr_child(ptr, curves[i].key);
    if (!read_curve(ctx, c, cptr, curves[i].log_x, (PnCurve *)((char *)p + curves[i].offset), error))
      return FALSE;
  }
  return TRUE;
}

static gboolean read_gemm_tables(const PnIoCtx *ctx, const cJSON *cal, const char *ptr, PnHwProfile *p, GError **error)
{
  static const struct {
    const char *key;
    size_t offset;
  } gemms[] = {
      {"gemm_bf16", offsetof(PnHwProfile, gemm_bf16)},
      {"gemm_fp8", offsetof(PnHwProfile, gemm_fp8)},
      {"gemm_bf16_accum_bf16", offsetof(PnHwProfile, gemm_accum[0][0])},
      {"gemm_bf16_accum_fp32", offsetof(PnHwProfile, gemm_accum[0][1])},
      {"gemm_fp8_accum_bf16", offsetof(PnHwProfile, gemm_accum[1][0])},
      {"gemm_fp8_accum_fp32", offsetof(PnHwProfile, gemm_accum[1][1])},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(gemms); i++) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cal, gemms[i].key);
    if (t == NULL)
      continue;
    g_autofree char *tptr   = pn__io_ptr_child(ptr, gemms[i].key);
    g_autofree double *vals = NULL;
    int n                   = 0;
    if (!read_table(ctx, t, tptr, gemm_columns, 4, 3, &vals, &n, error))
      return FALSE;
    PnGemmTable *tab = (PnGemmTable *)((char *)p + gemms[i].offset);
    tab->pts         = n > 0 ? g_new0(PnGemmPoint, n) : NULL;
    tab->n           = n;
    for (int r = 0; r < n; r++) {
      const double *v = vals + (gsize)r * 4;
      tab->pts[r]     = (PnGemmPoint){.m = (int64_t)v[0], .n = (int64_t)v[1], .k = (int64_t)v[2], .ns = v[3]};
    }
  }
  return TRUE;
}

static gboolean read_contention_table(const PnIoCtx *ctx, const cJSON *gt, PnHwProfile *p, GError **error)
{
  g_autofree double *vals = NULL;
  int n                   = 0;
  if (!read_table(ctx, gt, "/calibration/gemm_contention_table", contention_columns, 7, 6, &vals, &n, error))
    return FALSE;
  p->contention_points   = n > 0 ? g_new0(PnContentionPoint, n) : NULL;
  p->n_contention_points = n;
  for (int r = 0; r < n; r++) {
    const double *v = vals + (gsize)r * 7;
    if (v[3] > 2 || v[4] > 2 || v[5] >= p->sm_count) {
      g_autofree char *rp = g_strdup_printf("/calibration/gemm_contention_table/rows/%d", r);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, rp,
                  "expected dtype 1 (bf16) or 2 (fp8), variant 1 (SMs held) or 2 (SM margin), sms_held < sm_count %d",
                  p->sm_count);
      return FALSE;
    }
    p->contention_points[r] =
        (PnContentionPoint){(int64_t)v[0], (int64_t)v[1], (int64_t)v[2], v[3] == 2, (int)v[4] - 1, (int)v[5], v[6]};
  }
  pn_hw_profile_index_contention(p);
  return TRUE;
}

/* the measured collectives: nccl_table (any group size), or the older nccl_pair_table of
 * profiles calibrated from 2-GPU measurements only (its rows are groups of 2) */
static gboolean read_coll_table(const PnIoCtx *ctx, const cJSON *cal, PnHwProfile *p, GError **error)
{
  const cJSON *ct   = cJSON_GetObjectItemCaseSensitive(cal, "nccl_table");
  const cJSON *pair = cJSON_GetObjectItemCaseSensitive(cal, "nccl_pair_table");
  if (ct != NULL && pair != NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/calibration/nccl_pair_table",
                "give nccl_table or the older nccl_pair_table, not both");
    return FALSE;
  }
  if (ct == NULL && pair == NULL)
    return TRUE;
  bool legacy             = ct == NULL;
  const char *tptr        = legacy ? "/calibration/nccl_pair_table" : "/calibration/nccl_table";
  int ncols               = legacy ? 4 : 5;
  g_autofree double *vals = NULL;
  int n                   = 0;
  if (!read_table(ctx, legacy ? pair : ct, tptr, legacy ? pair_columns : coll_columns, ncols, ncols - 2, &vals, &n,
                  error))
    return FALSE;
  p->nccl_table.pts = n > 0 ? g_new0(PnCollPoint, n) : NULL;
  p->nccl_table.n   = n;
  for (int r = 0; r < n; r++) {
    const double *v = vals + (gsize)r * (gsize)ncols;
    double ranks    = legacy ? 2.0 : v[1];
    if (v[0] > PN_PROFILE_COLL_KINDS || ranks < 2.0 || ranks > PN_PROFILE_MAX_TABLE_RANKS) {
      g_autofree char *rp = g_strdup_printf("%s/rows/%d", tptr, r);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, rp,
                  "collective %.0f, ranks %.0f: expected collective 1 (all-gather) .. %d (send/recv) and 2 .. %d "
                  "ranks",
                  v[0], ranks, PN_PROFILE_COLL_KINDS, PN_PROFILE_MAX_TABLE_RANKS);
      return FALSE;
    }
    const double *rest   = v + (legacy ? 1 : 2); /* ctas, bytes, ns */
    p->nccl_table.pts[r] = (PnCollPoint){
        .kind = (int)v[0] - 1, .ranks = (int)ranks, .ctas = (int)rest[0], .bytes = rest[1], .ns = rest[2]};
  }
  return TRUE;
}

static gboolean read_attn_table(const PnIoCtx *ctx, const cJSON *t, PnHwProfile *p, GError **error)
{
  g_autofree double *vals = NULL;
  int n                   = 0;
  const cJSON *cols       = cJSON_GetObjectItemCaseSensitive(t, "columns");
  bool old                = cJSON_IsArray(cols) && cJSON_GetArraySize(cols) == 7;
  int nc                  = old ? 7 : 8;
  if (!read_table(ctx, t, "/calibration/attn_bf16", old ? attn_columns_7 : attn_columns, nc, nc - 2, &vals, &n, error))
    return FALSE;
  p->attn_bf16.pts = n > 0 ? g_new0(PnAttnPoint, n) : NULL;
  p->attn_bf16.n   = n;
  for (int r = 0; r < n; r++) {
    const double *v     = vals + (gsize)r * (gsize)nc;
    p->attn_bf16.pts[r] = (PnAttnPoint){.batch      = (int64_t)v[0],
                                        .seq        = (int64_t)v[1],
                                        .heads      = (int64_t)v[2],
                                        .kv_heads   = (int64_t)v[3],
                                        .head_dim   = (int64_t)v[4],
                                        .head_dim_v = (int64_t)v[old ? 4 : 5],
                                        .fwd_ns     = v[nc - 2],
                                        .bwd_ns     = v[nc - 1]};
  }
  return TRUE;
}

static gboolean read_bmm_table(const PnIoCtx *ctx, const cJSON *t, PnHwProfile *p, GError **error)
{
  g_autofree double *vals = NULL;
  int n                   = 0;
  if (!read_table(ctx, t, "/calibration/bmm_bf16", bmm_columns, 5, 4, &vals, &n, error))
    return FALSE;
  p->bmm_bf16.pts = n > 0 ? g_new0(PnGemmPoint, n) : NULL;
  p->bmm_bf16.n   = n;
  for (int r = 0; r < n; r++) {
    const double *v = vals + (gsize)r * 5;
    p->bmm_bf16.pts[r] =
        (PnGemmPoint){.batch = (int64_t)v[0], .m = (int64_t)v[1], .n = (int64_t)v[2], .k = (int64_t)v[3], .ns = v[4]};
  }
  return TRUE;
}

/* calibration.torch_kernel_vs_copy: {"<op>": curve, ...}, each op optional, x = sequence length
 * (log_x by default). */
static gboolean read_torch_kernels(const PnIoCtx *ctx, const cJSON *obj, PnHwProfile *p, GError **error)
{
  const char *ptr = "/calibration/torch_kernel_vs_copy";
  PnField keys[PN_TK_N + 1];
  for (int k = 0; k < PN_TK_N; k++)
    keys[k] = (PnField){.key = pn__io_torch_kernel_names[k], .kind = PN_FIELD_CUSTOM};
  keys[PN_TK_N] = (PnField){.key = NULL};
  if (!pn__io_check_keys(ctx, obj, ptr, keys, error))
    return FALSE;
  for (int k = 0; k < PN_TK_N; k++) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, pn__io_torch_kernel_names[k]);
    if (c == NULL)
      continue;
    g_autofree char *cptr = pn__io_ptr_child(ptr, pn__io_torch_kernel_names[k]);
    if (!read_curve(ctx, c, cptr, true, &p->torch_kernel_vs_copy[k], error))
      return FALSE;
  }
  return TRUE;
}

static gboolean read_calibration(const PnIoCtx *ctx, const cJSON *cal, PnHwProfile *p, GError **error)
{
  const char *ptr = "/calibration";
  if (!pn__io_check_keys(ctx, cal, ptr, calibration_keys, error) || !read_curves(ctx, cal, ptr, p, error))
    return FALSE;
  if (cJSON_GetObjectItemCaseSensitive(cal, "nccl_pair_busbw") != NULL) {
    if (!read_scalars(ctx, cal, ptr, &pair_busbw_section, p, error))
      return FALSE;
  }
  if (cJSON_GetObjectItemCaseSensitive(cal, "nccl_pair_latency_ns") != NULL &&
      !read_scalars(ctx, cal, ptr, &pair_latency_section, p, error))
    return FALSE;
  if (cJSON_GetObjectItemCaseSensitive(cal, "nccl_cta_busbw") != NULL &&
      !read_scalars(ctx, cal, ptr, &cta_busbw_section, p, error))
    return FALSE;
  if (!read_gemm_tables(ctx, cal, ptr, p, error))
    return FALSE;
  const cJSON *gt = cJSON_GetObjectItemCaseSensitive(cal, "gemm_contention_table");
  if (gt != NULL && !read_contention_table(ctx, gt, p, error))
    return FALSE;
  if (!read_coll_table(ctx, cal, p, error))
    return FALSE;
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(cal, "attn_bf16");
  if (t != NULL && !read_attn_table(ctx, t, p, error))
    return FALSE;
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(cal, "bmm_bf16");
  if (b != NULL && !read_bmm_table(ctx, b, p, error))
    return FALSE;
  const cJSON *tk = cJSON_GetObjectItemCaseSensitive(cal, "torch_kernel_vs_copy");
  return tk == NULL || read_torch_kernels(ctx, tk, p, error);
}

static gboolean read_name(const PnIoCtx *ctx, const cJSON *root, const char *key, char *dst, gsize size, GError **error)
{
  g_autofree char *ptr = pn__io_ptr_child("", key);
  const cJSON *v       = cJSON_GetObjectItemCaseSensitive(root, key);
  const char *s;
  if (v == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "required key missing");
    return FALSE;
  }
  if (!pn__io_get_string(ctx, v, ptr, size - 1, &s, error))
    return FALSE;
  if (*s == '\0') {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a non-empty string");
    return FALSE;
  }
  g_strlcpy(dst, s, size);
  return TRUE;
}

gboolean pn_hw_profile_date_ok(const char *date)
{
  if (strlen(date) != 10 || date[4] != '-' || date[7] != '-')
    return FALSE;
  for (int i = 0; i < 10; i++)
    if (i != 4 && i != 7 && !g_ascii_isdigit(date[i]))
      return FALSE;
  int year = atoi(date), month = atoi(date + 5), day = atoi(date + 8);
  return year >= 2000 && year <= 2099 && g_date_valid_dmy((GDateDay)day, (GDateMonth)month, (GDateYear)year);
}

/* "calibrated": "YYYY-MM-DD", optional. */
static gboolean read_calibrated(const PnIoCtx *ctx, const cJSON *root, PnHwProfile *p, GError **error)
{
  const cJSON *date = cJSON_GetObjectItemCaseSensitive(root, "calibrated");
  if (date == NULL)
    return TRUE;
  if (!cJSON_IsString(date) || !pn_hw_profile_date_ok(date->valuestring)) {
    g_autofree char *got = pn__io_describe(date);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/calibrated",
                "expected the day the calibration data was measured, YYYY-MM-DD from 2000-01-01 to 2099-12-31, got %s",
                got);
    return FALSE;
  }
  g_strlcpy(p->calibrated, date->valuestring, sizeof p->calibrated);
  return TRUE;
}

/* The optional "host" section: its scalars, and the CPU measured as a sourced string. */
static gboolean read_host(const PnIoCtx *ctx, const cJSON *root, PnHwProfile *p, GError **error)
{
  if (!read_scalars(ctx, root, "", &host_section, p, error))
    return FALSE;
  const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "host"), "cpu");
  if (cpu == NULL)
    return TRUE;
  if (!pn__io_check_keys(ctx, cpu, "/host/cpu", scalar_keys, error) || !check_source(ctx, cpu, "/host/cpu", error))
    return FALSE;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cpu, "value");
  const char *s;
  if (v == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/host/cpu/value", "required key missing");
    return FALSE;
  }
  if (!pn__io_get_string(ctx, v, "/host/cpu/value", sizeof p->host.cpu - 1, &s, error))
    return FALSE;
  g_strlcpy(p->host.cpu, s, sizeof p->host.cpu);
  return TRUE;
}

static gboolean profile_convert(const PnIoCtx *ctx, const cJSON *root, PnHwProfile *p, GError **error)
{
  if (!cJSON_IsObject(root)) {
    g_autofree char *got = pn__io_describe(root);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "", "expected a hardware profile object at the top level, got %s", got);
    return FALSE;
  }
  if (!pn__io_check_keys(ctx, root, "", top_keys, error))
    return FALSE;
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
  int64_t version;
  if (ver == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/schema_version", "required key missing (this version reads %d)",
                HW_SCHEMA_VERSION);
    return FALSE;
  }
  if (!pn__io_get_int(ctx, ver, "/schema_version", 1, G_MAXINT32, true, &version, error))
    return FALSE;
  if (version != HW_SCHEMA_VERSION) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/schema_version",
                "unsupported version %" G_GINT64_FORMAT " (this version of penumbra reads %d)", version,
                HW_SCHEMA_VERSION);
    return FALSE;
  }
  const cJSON *desc = cJSON_GetObjectItemCaseSensitive(root, "description");
  const char *unused;
  if (desc != NULL && !pn__io_get_string(ctx, desc, "/description", G_MAXSIZE, &unused, error))
    return FALSE;
  if (!read_name(ctx, root, "name", p->name, sizeof p->name, error) ||
      !read_name(ctx, root, "gpu", p->gpu, sizeof p->gpu, error) || !read_calibrated(ctx, root, p, error) ||
      !read_scalars(ctx, root, "", &compute_section, p, error) ||
      !read_scalars(ctx, root, "", &network_section, p, error) || !read_scalars(ctx, root, "", &nccl_section, p, error))
    return FALSE;
  const cJSON *compute = cJSON_GetObjectItemCaseSensitive(root, "compute");
  if (cJSON_GetObjectItemCaseSensitive(compute, "kernel_floor_ns") != NULL &&
      !read_scalars(ctx, compute, "/compute", &floor_section, p, error))
    return FALSE;
  if (cJSON_GetObjectItemCaseSensitive(root, "host") != NULL && !read_host(ctx, root, p, error))
    return FALSE;
  if (cJSON_GetObjectItemCaseSensitive(root, "hbm_share") != NULL) {
    if (!read_scalars(ctx, root, "", &hbm_share_section, p, error))
      return FALSE;
    p->hbm_share.on = true;
  }
  const cJSON *cal = cJSON_GetObjectItemCaseSensitive(root, "calibration");
  return cal == NULL || read_calibration(ctx, cal, p, error);
}

/* Profiles already read in this process, keyed by the exact bytes of their file: a sweep loads
 * the same profile for every scenario, and parsing it (~170 KB of JSON, 6 ms) was a quarter of
 * the time per scenario. A hit hands out a copy, so callers own what they get as before; the
 * file is still read each time, so an edited file is parsed anew (same bytes, same profile,
 * whatever the path or time stamps say). A few entries, least recently used out. */
#define PROFILE_CACHE_N 4
typedef struct {
  char *bytes;
  gsize len;
  PnHwProfile *profile;
  guint64 used;
} CachedProfile;
static CachedProfile profile_cache[PROFILE_CACHE_N];
static guint64 profile_cache_clock;
static GMutex profile_cache_lock;

static PnHwProfile *cache_find(const char *buf, gsize len)
{
  for (int i = 0; i < PROFILE_CACHE_N; i++) {
    CachedProfile *c = &profile_cache[i];
    if (c->profile != NULL && c->len == len && memcmp(c->bytes, buf, len) == 0) {
      c->used = ++profile_cache_clock;
      return pn_hw_profile_copy(c->profile);
    }
  }
  return NULL;
}

static void cache_put(char *buf, gsize len, const PnHwProfile *p)
{
  CachedProfile *victim = &profile_cache[0];
  for (int i = 1; i < PROFILE_CACHE_N; i++)
    if (profile_cache[i].used < victim->used)
      victim = &profile_cache[i];
  g_free(victim->bytes);
  pn_hw_profile_free(victim->profile);
  *victim = (CachedProfile){.bytes = buf, .len = len, .profile = pn_hw_profile_copy(p), .used = ++profile_cache_clock};
}

PnHwProfile *pn_hw_profile_load(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_autofree char *buf = NULL;
  gsize len            = 0;
  if (!pn__io_read_file(path, path, &buf, &len, error))
    return NULL;
  g_mutex_lock(&profile_cache_lock);
  PnHwProfile *hit = cache_find(buf, len);
  g_mutex_unlock(&profile_cache_lock);
  if (hit != NULL)
    return hit;
  cJSON *root = NULL;
  if (!pn__io_parse_json(path, buf, len, &root, error))
    return NULL;
  PnIoCtx ctx              = {.file = path};
  g_autoptr(PnHwProfile) p = g_new0(PnHwProfile, 1);
  gboolean ok              = profile_convert(&ctx, root, p, error);
  cJSON_Delete(root);
  if (!ok)
    return NULL;
  g_mutex_lock(&profile_cache_lock);
  cache_put(g_steal_pointer(&buf), len, p);
  g_mutex_unlock(&profile_cache_lock);
  return g_steal_pointer(&p);
}
