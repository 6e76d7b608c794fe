/* host.c — the host's launch costs, kernel_launch_ns and the kernel floors from the rows of
 * microbench/mb_host.py ("host_torch") and microbench/mb_launch.cu ("launch"), and their replay
 * (see calib.h). A quantity measured by several files is the median of their rows. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "calib/calib-private.h"
#include "hw/cost.h"

/* The layer size the host figures are derived from: seq 2048, hidden 2048 (about a 1B model's
 * layer). The "tiny" layer is host-bound and only cross-checks them. */
#define FIT_SIZE "h2048"

/* The median of the double at `offset` of the layer rows of `size` and `variant` (NAN: none). */
static double layer_median(const PnCalData *d, const char *size, const char *variant, size_t offset)
{
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < d->layers->len; i++) {
    const PnCalLayer *l = &g_array_index(d->layers, PnCalLayer, i);
    double x;
    memcpy(&x, (const char *)l + offset, sizeof x);
    if (strcmp(l->size, size) == 0 && strcmp(l->variant, variant) == 0 && isfinite(x))
      g_array_append_val(v, x);
  }
  return pn_calib_median(v);
}

static bool host_row_is(const PnCalHostRow *r, const char *test, const char *name, const char *mode)
{
  return strcmp(r->test, test) == 0 && (!name || strcmp(r->name, name) == 0) && (!mode || strcmp(r->mode, mode) == 0);
}

/* The median host_ns (or gpu_ns) of the host rows of `test`, `name` and `mode` (NULL: any). */
static double host_median(const PnCalData *d, const char *test, const char *name, const char *mode, bool gpu)
{
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < d->host->len; i++) {
    const PnCalHostRow *r = &g_array_index(d->host, PnCalHostRow, i);
    double x              = gpu ? r->gpu_ns : r->host_ns;
    if (host_row_is(r, test, name, mode) && isfinite(x))
      g_array_append_val(v, x);
  }
  return pn_calib_median(v);
}

/* The smallest size measured of a gpu_floor class in a graph (NAN: none). */
static double smallest_floor(const PnCalData *d, PnCalFloorClass cls)
{
  double size = (double)NAN;
  for (guint i = 0; i < d->floor->len; i++) {
    const PnCalFloor *r = &g_array_index(d->floor, PnCalFloor, i);
    if (r->cls == cls && r->graph && !(r->size >= size))
      size = r->size;
  }
  return size;
}

/* The median gpu_ns of the gpu_floor rows of a class, issue and size (NAN: none). */
static double floor_median(const PnCalData *d, PnCalFloorClass cls, bool graph, double size)
{
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < d->floor->len; i++) {
    const PnCalFloor *r = &g_array_index(d->floor, PnCalFloor, i);
    if (r->cls == cls && r->graph == graph && r->size == size)
      g_array_append_val(v, r->gpu_ns);
  }
  return pn_calib_median(v);
}

/* kernel_ns / kernel_bwd_ns: the eager layer's host time per kernel launched, its Python and
 * nn.Module calls included (what Megatron's local layers cost the host per kernel). */
static void fit_kernel(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  double fwd = layer_median(d, FIT_SIZE, "eager", offsetof(PnCalLayer, host_fwd_ns));
  double bwd = layer_median(d, FIT_SIZE, "eager", offsetof(PnCalLayer, host_bwd_ns));
  double kf  = layer_median(d, FIT_SIZE, "eager", offsetof(PnCalLayer, kernels_fwd_per_layer));
  double kt  = layer_median(d, FIT_SIZE, "eager", offsetof(PnCalLayer, kernels_per_layer));
  if (!(isfinite(fwd) && isfinite(bwd) && kf > 0.0 && kt > kf))
    return;
  p->host.kernel_ns     = fwd / kf;
  p->host.kernel_bwd_ns = bwd / (kt - kf);
  f->kernel             = true;
  f->eager_fwd_ns       = fwd;
  f->eager_bwd_ns       = bwd;
  f->kernels_fwd        = kf;
  f->kernels_bwd        = kt - kf;
}

/* A forward and a backward figure, the medians of their lists floored at 0; false (nothing
 * written) when the lists are empty. */
static bool medians_into(GArray *fwd, GArray *bwd, double *fwd_ns, double *bwd_ns)
{
  if (fwd->len == 0)
    return false;
  *fwd_ns = fmax(pn_calib_median(fwd), 0.0);
  *bwd_ns = fmax(pn_calib_median(bwd), 0.0);
  return true;
}

/* local_layer_fwd_ns / local_layer_bwd_ns: what a Megatron-Core local layer's host time per
 * layer (mb_megatron_host.py) has beyond its kernels at kernel_ns / kernel_bwd_ns, the median
 * over the rows: the Python of Megatron-Core's modules, autograd functions and DDP hooks, which a
 * bare PyTorch layer does not have. Needs kernel_ns (fit_kernel first). */
static void fit_local_layer(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  if (d->megatron->len == 0 || !(p->host.kernel_ns > 0.0))
    return;
  g_autoptr(GArray) fwd = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) bwd = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < d->megatron->len; i++) {
    const PnCalMegatronLayer *l = &g_array_index(d->megatron, PnCalMegatronLayer, i);
    if (l->fsdp || l->moe_block || l->te_shaped)
      continue;
    double xf = l->host_fwd_ns - l->kernels_fwd * p->host.kernel_ns;
    double xb = l->host_bwd_ns - l->kernels_bwd * p->host.kernel_bwd_ns;
    g_array_append_val(fwd, xf);
    g_array_append_val(bwd, xb);
  }
  if (!medians_into(fwd, bwd, &p->host.local_layer_fwd_ns, &p->host.local_layer_bwd_ns))
    return;
  f->local_layer_rows = (int)fwd->len;
  f->local_from       = d->origin[PN_CAL_KIND_MEGATRON_HOST];
}

/* The row a paired megatron_host row i is measured against: the closest row before it (the one of
 * its file: the benchmarks write a pair's reference row right before it) of the same size and
 * round, in DDP, of the same kind (a stack of layers of the same variant, or a moe_block row),
 * holding `experts` experts; NULL when there is none. */
static const PnCalMegatronLayer *twin_before(const PnCalData *d, guint i, int experts)
{
  const PnCalMegatronLayer *l = &g_array_index(d->megatron, PnCalMegatronLayer, i);
  for (guint j = i; j-- > 0;) {
    const PnCalMegatronLayer *o = &g_array_index(d->megatron, PnCalMegatronLayer, j);
    if (!o->fsdp && !o->te_shaped && o->moe_block == l->moe_block && o->experts == experts && o->round == l->round &&
        strcmp(o->size, l->size) == 0 && (l->moe_block || strcmp(o->variant, l->variant) == 0))
      return o;
  }
  return NULL;
}

/* A figure fitted from row pairs (pair: row i's forward and backward figure, false when row i is
 * not the measured side of a pair): the medians over the pairs, of rows of `size` only when it is
 * not NULL, into *fwd_ns / *bwd_ns; the number of pairs (0: nothing written). */
typedef bool (*PnCalPairFn)(const PnCalData *d, const PnHwProfile *p, guint i, double *xf, double *xb);
static int fit_pairs(const PnCalData *d, const PnHwProfile *p, PnCalPairFn pair, const char *size, double *fwd_ns,
                     double *bwd_ns)
{
  g_autoptr(GArray) fwd = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) bwd = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < d->megatron->len; i++) {
    double xf, xb;
    if ((size && strcmp(g_array_index(d->megatron, PnCalMegatronLayer, i).size, size) != 0) || !pair(d, p, i, &xf, &xb))
      continue;
    g_array_append_val(fwd, xf);
    g_array_append_val(bwd, xb);
  }
  return medians_into(fwd, bwd, fwd_ns, bwd_ns) ? (int)fwd->len : 0;
}

/* What Megatron-FSDP's hooks add to FSDP row i's host time per layer (every layer an FSDP unit)
 * beyond its DDP twin's, less the collectives the simulator launches at collective_ns each (the
 * forward's all-gather; the backward's all-gather and reduce-scatter). */
static bool fsdp_pair(const PnCalData *d, const PnHwProfile *p, guint i, double *xf, double *xb)
{
  const PnCalMegatronLayer *l = &g_array_index(d->megatron, PnCalMegatronLayer, i);
  const PnCalMegatronLayer *o = l->fsdp ? twin_before(d, i, 0) : NULL;
  if (!o)
    return false;
  *xf = l->host_fwd_ns - o->host_fwd_ns - p->host.collective_ns;
  *xb = l->host_bwd_ns - o->host_bwd_ns - 2.0 * p->host.collective_ns;
  return true;
}

/* fsdp_unit_fwd_ns / fsdp_unit_bwd_ns: the median over the (DDP, FSDP) pairs of one shape and
 * round. Needs collective_ns (fit_collectives first). */
static void fit_fsdp_unit(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  f->fsdp_unit_pairs = fit_pairs(d, p, fsdp_pair, NULL, &p->host.fsdp_unit_fwd_ns, &p->host.fsdp_unit_bwd_ns);
  if (f->fsdp_unit_pairs > 0)
    f->local_from = d->origin[PN_CAL_KIND_MEGATRON_HOST];
}

/* The eager h2048 layer's forward host time per layer as the profile prices it (kernels x
 * kernel_ns: the fit's own measurement); NAN without that row. */
static double eager_fwd_priced(const PnCalData *d, const PnHwProfile *p)
{
  double kf = layer_median(d, FIT_SIZE, "eager", offsetof(PnCalLayer, kernels_fwd_per_layer));
  return kf > 0.0 && p->host.kernel_ns > 0.0 ? kf * p->host.kernel_ns : (double)NAN;
}

/* How much slower than the profile's hour the minute of host_ref row i ran: its round's eager
 * layer forward as measured over as priced (`priced`, eager_fwd_priced); NAN when row i is no
 * reference call or its round has no layer row. */
static double ref_round_speed(const PnCalData *d, guint i, double priced)
{
  const PnCalHostRef *r = &g_array_index(d->host_ref, PnCalHostRef, i);
  for (guint j = 0; !r->layer && j < d->host_ref->len; j++) {
    const PnCalHostRef *o = &g_array_index(d->host_ref, PnCalHostRef, j);
    if (o->layer && o->round == r->round && o->host_ns > 0.0)
      return o->host_ns / priced;
  }
  return (double)NAN;
}

/* ref_linear_ns: the reference call at the profile's host speed, the median over the rounds of
 * its host time x (the eager layer's forward as priced / the same round's measured). Needs
 * kernel_ns (fit_kernel first). */
static void fit_ref_linear(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  double priced       = eager_fwd_priced(d, p);
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; isfinite(priced) && i < d->host_ref->len; i++) {
    double s = ref_round_speed(d, i, priced);
    if (!isfinite(s))
      continue;
    double x = g_array_index(d->host_ref, PnCalHostRef, i).host_ns / s;
    g_array_append_val(v, x);
  }
  if (v->len == 0)
    return;
  p->host.ref_linear_ns = pn_calib_median(v);
  f->ref_rounds         = (int)v->len;
  f->ref_from           = d->origin[PN_CAL_KIND_HOST_REF];
}

/* A te_shaped row i against its local twin of the same minute (host speeds drift by tens of percent
 * from hour to hour, the profile's figures are of one hour): the twin's host time over what the
 * profile predicts for it (kernels x kernel_ns + local_layer_ns) is the minute's speed s, and the
 * te_shaped row's Python beyond its launches at the profile's speed is host / s - kernels x
 * kernel_ns, per forward and per backward. Needs local_layer_*_ns (fit_local_layer first). */
static bool te_speed(const PnHwProfile *p, const PnCalMegatronLayer *o, double *sf, double *sb)
{
  *sf = o->host_fwd_ns / (o->kernels_fwd * p->host.kernel_ns + p->host.local_layer_fwd_ns);
  *sb = o->host_bwd_ns / (o->kernels_bwd * p->host.kernel_bwd_ns + p->host.local_layer_bwd_ns);
  return *sf > 0.0 && *sb > 0.0;
}

static bool te_pair(const PnCalData *d, const PnHwProfile *p, guint i, double *xf, double *xb)
{
  const PnCalMegatronLayer *l = &g_array_index(d->megatron, PnCalMegatronLayer, i);
  const PnCalMegatronLayer *o = l->te_shaped ? twin_before(d, i, 0) : NULL;
  double sf, sb;
  if (!o || !te_speed(p, o, &sf, &sb))
    return false;
  *xf = l->host_fwd_ns / sf - l->kernels_fwd * p->host.kernel_ns;
  *xb = l->host_bwd_ns / sb - l->kernels_bwd * p->host.kernel_bwd_ns;
  return true;
}

/* te_layer_fwd_ns / te_layer_bwd_ns: the median over the (local, te_shaped) pairs. */
static void fit_te_layer(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  if (!(p->host.kernel_ns > 0.0))
    return;
  f->te_layer_pairs = fit_pairs(d, p, te_pair, NULL, &p->host.te_layer_fwd_ns, &p->host.te_layer_bwd_ns);
  if (f->te_layer_pairs > 0)
    f->local_from = d->origin[PN_CAL_KIND_MEGATRON_HOST];
}

/* collective_ns: the median async call (all-reduce, all-gather, reduce-scatter: what Megatron
 * issues with async_op=True); p2p_ns: the batched send/recv and its wait. */
static void fit_collectives(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < d->host->len; i++) {
    const PnCalHostRow *r = &g_array_index(d->host, PnCalHostRow, i);
    if (host_row_is(r, "collective", NULL, "async") && strcmp(r->name, "send_recv") != 0)
      g_array_append_val(v, r->host_ns);
  }
  if (v->len > 0) {
    f->collective_rows    = (int)v->len;
    p->host.collective_ns = pn_calib_median(v);
    f->collective         = true;
  }
  double p2p = host_median(d, "collective", "send_recv", "async", false);
  if (isfinite(p2p)) {
    p->host.p2p_ns = p2p;
    f->p2p         = true;
  }
}

/* graph_layer_*: a per-layer graph's forward and backward (replay + autograd wrapper);
 * graph_launch_ns: one replay of the whole captured stack (host_ns is per layer of it). */
static void fit_graphs(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  double gf = layer_median(d, FIT_SIZE, "graphed_per_layer", offsetof(PnCalLayer, host_fwd_ns));
  double gb = layer_median(d, FIT_SIZE, "graphed_per_layer", offsetof(PnCalLayer, host_bwd_ns));
  if (isfinite(gf) && isfinite(gb)) {
    p->host.graph_layer_fwd_ns = gf;
    p->host.graph_layer_bwd_ns = gb;
    f->graph_layer             = true;
  }
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < d->layers->len; i++) {
    const PnCalLayer *l = &g_array_index(d->layers, PnCalLayer, i);
    if (strcmp(l->size, FIT_SIZE) == 0 && strcmp(l->variant, "graphed_whole") == 0 && isfinite(l->host_ns)) {
      double replay = l->host_ns * l->layers;
      g_array_append_val(v, replay);
      f->whole_layers = l->layers;
    }
  }
  if (v->len > 0) {
    p->host.graph_launch_ns = pn_calib_median(v);
    f->graph_whole          = true;
  }
}

/* kernel_launch_ns and the floors, from the gpu_floor rows (GPU time per kernel, host ahead). */
static void fit_floors(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  double stream = floor_median(d, PN_CAL_FLOOR_EMPTY, false, 0.0);
  double graph  = floor_median(d, PN_CAL_FLOOR_EMPTY, true, 0.0);
  if (isfinite(stream) && isfinite(graph) && stream >= graph) {
    p->kernel_launch_ns = stream - graph;
    f->launch           = true;
    f->empty_stream_ns  = stream;
    f->empty_graph_ns   = graph;
  }
  static const struct {
    PnFloorClass floor;
    PnCalFloorClass cls;
  } classes[] = {{PN_FLOOR_GEMM, PN_CAL_FLOOR_GEMM}, {PN_FLOOR_MEM, PN_CAL_FLOOR_COPY}};
  for (size_t c = 0; c < G_N_ELEMENTS(classes); c++) {
    double size = smallest_floor(d, classes[c].cls);
    double ns   = floor_median(d, classes[c].cls, true, size);
    if (isfinite(ns)) {
      p->kernel_floor_ns[classes[c].floor] = ns;
      f->floor[classes[c].floor]           = true;
      f->floor_size[classes[c].floor]      = size;
    }
  }
  /* one attention call (a forward: the flash kernel and its softmax-stats kernel) in a graph */
  double attn = host_median(d, "op", "sdpa_causal", "graph", true);
  if (isfinite(attn)) {
    p->kernel_floor_ns[PN_FLOOR_ATTN] = attn;
    f->floor[PN_FLOOR_ATTN]           = true;
  }
}

/* An MoE layer's Python beyond its dense twin's (one expert, top-1: the router, the token
 * dispatcher and the permutation around one expert's MLP) and beyond the kernels it adds. */
static bool moe_pair(const PnCalData *d, const PnHwProfile *p, guint i, double *xf, double *xb)
{
  const PnCalMegatronLayer *l = &g_array_index(d->megatron, PnCalMegatronLayer, i);
  const PnCalMegatronLayer *o = (l->moe_block && l->experts == 1) ? twin_before(d, i, 0) : NULL;
  if (!o)
    return false;
  *xf = l->host_fwd_ns - o->host_fwd_ns - (l->kernels_fwd - o->kernels_fwd) * p->host.kernel_ns;
  *xb = l->host_bwd_ns - o->host_bwd_ns - (l->kernels_bwd - o->kernels_bwd) * p->host.kernel_bwd_ns;
  return true;
}

/* moe_layer_fwd_ns / moe_layer_bwd_ns: the median over the tiny pairs. Not the full-size ones: there
 * the forward's host also waits at the dispatcher's token-count read for the GPU's attention, a
 * synchronization the simulator models itself. Needs kernel_ns (fit_kernel first). */
static void fit_moe_layer(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  if (!(p->host.kernel_ns > 0.0))
    return;
  f->moe_layer_pairs = fit_pairs(d, p, moe_pair, "tiny", &p->host.moe_layer_fwd_ns, &p->host.moe_layer_bwd_ns);
  if (f->moe_layer_pairs > 0)
    f->local_from = d->origin[PN_CAL_KIND_MEGATRON_HOST];
}

/* moe_expert_fwd_ns / moe_expert_bwd_ns: SequentialMLP's cost per local expert, from the rows of
 * E > 1 experts against their one-expert twin: (host(E) - host(1)) / (E - 1), less the GEMM
 * launches the simulator charges each expert whatever the implementation (two forward at
 * kernel_ns, four backward at kernel_bwd_ns); the median over both sizes (the token-count wait
 * is in both rows of a pair). */
static bool expert_pair(const PnCalData *d, const PnHwProfile *p, guint i, double *xf, double *xb)
{
  const PnCalMegatronLayer *l = &g_array_index(d->megatron, PnCalMegatronLayer, i);
  const PnCalMegatronLayer *o = (l->moe_block && l->experts > 1) ? twin_before(d, i, 1) : NULL;
  if (!o)
    return false;
  double n = (double)(l->experts - 1);
  *xf      = (l->host_fwd_ns - o->host_fwd_ns) / n - 2.0 * p->host.kernel_ns;
  *xb      = (l->host_bwd_ns - o->host_bwd_ns) / n - 4.0 * p->host.kernel_bwd_ns;
  return true;
}

static void fit_moe_expert(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  if (!(p->host.kernel_ns > 0.0))
    return;
  f->moe_expert_pairs = fit_pairs(d, p, expert_pair, NULL, &p->host.moe_expert_fwd_ns, &p->host.moe_expert_bwd_ns);
  if (f->moe_expert_pairs > 0)
    f->local_from = d->origin[PN_CAL_KIND_MEGATRON_HOST];
}

void pn__calib_fit_host(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f)
{
  *f = (PnCalHostFitted){0};
  fit_kernel(d, p, f);
  fit_local_layer(d, p, f);
  fit_te_layer(d, p, f);
  fit_ref_linear(d, p, f);
  fit_collectives(d, p, f);
  fit_fsdp_unit(d, p, f);
  fit_moe_layer(d, p, f);
  fit_moe_expert(d, p, f);
  fit_graphs(d, p, f);
  fit_floors(d, p, f);
  double sync = host_median(d, "sync", "torch.cuda.synchronize", NULL, false);
  if (isfinite(sync)) {
    p->host.sync_ns = sync;
    f->sync         = true;
  }
  double loop = host_median(d, "cpu", "python_loop", NULL, false);
  if (isfinite(loop)) {
    p->host.python_loop_ns = loop;
    f->python_loop         = true;
  }
  const PnCalOrigin *o = &d->origin[PN_CAL_KIND_HOST_TORCH];
  if (o->host_cpu[0]) {
    g_strlcpy(p->host.cpu, o->host_cpu, sizeof p->host.cpu);
    f->cpu = true;
  }
  /* Transformer Engine's per-module Python cannot be measured here (no TE on the machine): the
   * fit leaves module_ns and its source as the base profile has them (a published figure) */
  f->host_from   = *o;
  f->launch_from = d->origin[PN_CAL_KIND_LAUNCH];
}

/* Each eager layer row of `size`: forward kernels x kernel_ns + backward kernels x
 * kernel_bwd_ns against its host time per layer. */
static void check_layers(const PnCalData *d, const PnHwProfile *p, const char *size, GArray *errors)
{
  for (guint i = 0; i < d->layers->len; i++) {
    const PnCalLayer *l = &g_array_index(d->layers, PnCalLayer, i);
    if (strcmp(l->size, size) != 0 || strcmp(l->variant, "eager") != 0 || !isfinite(l->kernels_fwd_per_layer) ||
        !isfinite(l->kernels_per_layer))
      continue;
    double pred = l->kernels_fwd_per_layer * p->host.kernel_ns +
                  (l->kernels_per_layer - l->kernels_fwd_per_layer) * p->host.kernel_bwd_ns;
    pn__calib_push_err(errors, pred, l->host_ns);
  }
}

void pn__calib_check_host(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  for (guint i = 0; i < d->megatron->len; i++) {
    const PnCalMegatronLayer *l = &g_array_index(d->megatron, PnCalMegatronLayer, i);
    double xf, xb;
    if (l->moe_block) { /* one-expert rows, both sizes: their dense twin plus the kernels and Python added */
      if (expert_pair(d, p, i, &xf, &xb)) { /* more experts: the one-expert twin plus theirs */
        double n = (double)(l->experts - 1), o_f = l->host_fwd_ns - n * (xf + 2.0 * p->host.kernel_ns);
        double o_b = l->host_bwd_ns - n * (xb + 4.0 * p->host.kernel_bwd_ns);
        pn__calib_push_err(out->host_moe_expert, o_f + n * (p->host.moe_expert_fwd_ns + 2.0 * p->host.kernel_ns),
                           l->host_fwd_ns);
        pn__calib_push_err(out->host_moe_expert, o_b + n * (p->host.moe_expert_bwd_ns + 4.0 * p->host.kernel_bwd_ns),
                           l->host_bwd_ns);
      }
      if (moe_pair(d, p, i, &xf, &xb)) {
        pn__calib_push_err(out->host_moe_layer, l->host_fwd_ns - xf + p->host.moe_layer_fwd_ns, l->host_fwd_ns);
        pn__calib_push_err(out->host_moe_layer, l->host_bwd_ns - xb + p->host.moe_layer_bwd_ns, l->host_bwd_ns);
      }
      continue;
    }
    if (l->te_shaped) { /* its local twin's minute's speed x (its launches + te_layer_*_ns) */
      const PnCalMegatronLayer *o = twin_before(d, i, 0);
      double sf, sb;
      if (o && te_speed(p, o, &sf, &sb)) {
        pn__calib_push_err(out->host_te_layer, sf * (l->kernels_fwd * p->host.kernel_ns + p->host.te_layer_fwd_ns),
                           l->host_fwd_ns);
        pn__calib_push_err(out->host_te_layer, sb * (l->kernels_bwd * p->host.kernel_bwd_ns + p->host.te_layer_bwd_ns),
                           l->host_bwd_ns);
      }
      continue;
    }
    /* an FSDP row: the same layer with its unit's hooks and collectives' launches */
    double fsdp_f = l->fsdp ? p->host.fsdp_unit_fwd_ns + p->host.collective_ns : 0.0;
    double fsdp_b = l->fsdp ? p->host.fsdp_unit_bwd_ns + 2.0 * p->host.collective_ns : 0.0;
    GArray *errs  = l->fsdp ? out->host_fsdp_unit : out->host_local_layer;
    pn__calib_push_err(errs, l->kernels_fwd * p->host.kernel_ns + p->host.local_layer_fwd_ns + fsdp_f, l->host_fwd_ns);
    pn__calib_push_err(errs, l->kernels_bwd * p->host.kernel_bwd_ns + p->host.local_layer_bwd_ns + fsdp_b,
                       l->host_bwd_ns);
  }
  double priced = eager_fwd_priced(d, p);
  for (guint i = 0; isfinite(priced) && p->host.ref_linear_ns > 0.0 && i < d->host_ref->len; i++) {
    double s = ref_round_speed(d, i, priced);
    if (isfinite(s))
      pn__calib_push_err(out->host_ref, p->host.ref_linear_ns * s, g_array_index(d->host_ref, PnCalHostRef, i).host_ns);
  }
  check_layers(d, p, FIT_SIZE, out->host_layer_fit);
  check_layers(d, p, "tiny", out->host_layer_tiny);
  /* a kernel on a stream with the host ahead: its floor or its price, whichever is longer, and
   * the launch gap a graph would remove */
  for (guint i = 0; i < d->floor->len; i++) {
    const PnCalFloor *r = &g_array_index(d->floor, PnCalFloor, i);
    if (r->graph)
      continue;
    bool copy = r->cls == PN_CAL_FLOOR_COPY;
    if (!copy && r->cls != PN_CAL_FLOOR_GEMM)
      continue;
    int64_t s = (int64_t)r->size;
    double work =
        copy ? pn_cost_memory_class_ns(p, r->size, PN_MEM_COPY) : pn_cost_gemm_ns(p, s, s, s, PN_DT_BF16, NULL);
    double floor = p->kernel_floor_ns[copy ? PN_FLOOR_MEM : PN_FLOOR_GEMM];
    double pred  = fmax(floor, work) + p->kernel_launch_ns;
    pn__calib_push_err(copy ? out->floor_copy : out->floor_gemm, pred, r->gpu_ns);
    if (g_getenv("PENUMBRA_CHECK_VERBOSE") && fabs(pred / r->gpu_ns - 1.0) > 0.05)
      g_printerr("%s %.0f on a stream: measured %.0f ns, predicted %.0f ns (floor %.0f, price %.0f, launch %.0f)\n",
                 copy ? "copy of bytes" : "gemm m=n=k", r->size, r->gpu_ns, pred, floor, work, p->kernel_launch_ns);
  }
}
