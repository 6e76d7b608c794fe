/* memory.c — per-GPU memory estimate; formulas in memory.h. */
#include "workload/memory.h"

#include <glib.h>
#include <string.h>

#include "workload/ops.h"
#include "workload/rules.h"
#include "workload/split.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static double sum_saved(const GArray *ops, int phase)
{
  double s = 0.0;
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *o = &g_array_index(ops, PnOp, i);
    if (o->phase == phase)
      s += o->saved_bytes;
  }
  return s;
}

double pn_workload_layer_activation_bytes(const PnScenario *sc, PnRecomputeGranularity granularity)
{
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  pn_workload_layer_ops_with(sc, PN_PHASE_FWD, granularity, ops);
  return sum_saved(ops, PN_PHASE_FWD);
}

/* Bytes live while one layer's recomputation runs (RECOMPUTE ops of its BWD list). */
static double layer_recompute_live_bytes(const PnScenario *sc, PnRecomputeGranularity granularity)
{
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  pn_workload_layer_ops_with(sc, PN_PHASE_BWD, granularity, ops);
  return sum_saved(ops, PN_PHASE_RECOMPUTE);
}

static int64_t vp_size(const PnScenario *sc) { return MAX(sc->parallel.virtual_pipeline_model_parallel_size, 1); }

static int64_t num_microbatches(const PnScenario *sc)
{
  if (sc->parallel.num_microbatches > 0)
    return sc->parallel.num_microbatches;
  int64_t dp = MAX(sc->parallel.data_parallel_size, 1);
  return MAX(sc->training.global_batch_size / MAX(sc->training.micro_batch_size * dp, 1), 1);
}

int64_t pn_workload_inflight_microbatches(const PnScenario *sc, int64_t stage)
{
  int64_t pp = MAX(sc->parallel.pipeline_model_parallel_size, 1);
  int64_t vp = vp_size(sc);
  int64_t m  = num_microbatches(sc);
  g_assert(stage >= 0 && stage < pp);
  if (vp == 1)
    return MIN(pp - stage, m);
  int64_t group =
      sc->parallel.microbatch_group_size_per_vp_stage > 0 ? sc->parallel.microbatch_group_size_per_vp_stage : pp;
  int64_t warmup = (pp - stage - 1) * 2 + (vp - 1) * group;
  return MIN(warmup + 1, m * vp);
}

/* Saved bytes of one layer and one micro-batch: with every tensor kept (`full`), under the
 * scenario's granularity (`kept`: full recompute keeps the layer input) and while the layer's
 * recomputation runs (`live`). */
typedef struct {
  double full, kept, live;
} PnLayerSaved;

static void layer_saved(const PnScenario *sc, PnLayerSaved *ls)
{
  PnRecomputeGranularity g = sc->recompute.recompute_granularity;
  ls->full                 = pn_workload_layer_activation_bytes(sc, PN_RECOMPUTE_NONE);
  ls->kept                 = g == PN_RECOMPUTE_NONE ? ls->full : pn_workload_layer_activation_bytes(sc, g);
  ls->live                 = g == PN_RECOMPUTE_NONE ? 0.0 : layer_recompute_live_bytes(sc, g);
}

/* Saved bytes of one (chunk-)micro-batch of `layers` layers, and the extra live during
 * recomputation (counted once). */
static void chunk_activations(const PnScenario *sc, const PnLayerSaved *ls, int64_t layers, double *per_mb,
                              double *transient)
{
  const PnRecomputeConfig *r = &sc->recompute;
  *transient                 = 0.0;
  switch (r->recompute_granularity) {
  case PN_RECOMPUTE_NONE:
    *per_mb = (double)layers * ls->full;
    break;
  case PN_RECOMPUTE_SELECTIVE:
    *per_mb    = (double)layers * ls->kept;
    *transient = ls->live;
    break;
  case PN_RECOMPUTE_FULL:
    if (r->recompute_method == PN_RECOMPUTE_METHOD_BLOCK) {
      int64_t n  = r->recompute_num_layers > 0 ? MIN(r->recompute_num_layers, layers) : layers;
      *per_mb    = (double)n * ls->kept + (double)(layers - n) * ls->full;
      *transient = n > 0 ? ls->live : 0.0;
    } else {
      int64_t k      = MIN(MAX(r->recompute_num_layers, 1), layers);
      int64_t groups = (layers + k - 1) / k;
      *per_mb        = (double)groups * ls->kept;
      *transient     = (double)k * ls->live;
    }
    break;
  }
}

/* Layers of each chunk of stage `stage`, into `layers[vp]`, and of them a MoE model's dense layers
 * (moe_layer_freq) into `dense[vp]`: Megatron's pipeline split (workload/split.h), chunk c of
 * stage r being virtual stage c * pp + r, whose layers follow the virtual stages before it. A
 * layout Megatron refuses (estimated all the same by callers comparing) gets num_layers / (pp *
 * vp) per chunk, counted from layer 0. */
static void stage_chunk_layers(const PnScenario *sc, int64_t stage, int64_t *layers, int64_t *dense)
{
  int64_t pp = MAX(sc->parallel.pipeline_model_parallel_size, 1), vp = vp_size(sc);
  g_autoptr(GArray) split = g_array_new(FALSE, FALSE, sizeof(int64_t));
  bool ok    = pn_workload_stage_layers(sc, pp, vp, split, NULL) == PN_RULE_OK && split->len == (guint)(pp * vp);
  bool mixed = pn_workload_has_dense_layers(sc);
  for (int64_t c = 0; c < vp; c++) {
    int64_t vs = c * pp + stage, first = 0;
    layers[c] = ok ? g_array_index(split, int64_t, vs) : sc->model.num_layers / (pp * vp);
    for (int64_t v = 0; ok && v < vs; v++)
      first += g_array_index(split, int64_t, v);
    dense[c] = 0;
    for (int64_t l = first; mixed && l < first + layers[c]; l++)
      dense[c] += !pn_workload_layer_is_moe(sc, l);
  }
}

/* Which chunks the `n` (chunk-)micro-batches a stage holds at its peak belong to, into
 * `count[vp]`: Megatron's schedule table (sched/order.c) runs the micro-batches group by group,
 * every chunk in turn over the group's micro-batches, so the first n forwards are those. */
static void inflight_per_chunk(const PnScenario *sc, int64_t n, int64_t *count)
{
  int64_t vp = vp_size(sc), m = num_microbatches(sc);
  memset(count, 0, (size_t)vp * sizeof *count);
  if (vp == 1) {
    count[0] = n;
    return;
  }
  int64_t group = sc->parallel.microbatch_group_size_per_vp_stage > 0
                      ? sc->parallel.microbatch_group_size_per_vp_stage
                      : MAX(sc->parallel.pipeline_model_parallel_size, 1);
  for (int64_t lo = 0; lo < m && n > 0; lo += group)
    for (int64_t c = 0; c < vp && n > 0; c++) {
      int64_t k = MIN(MIN(group, m - lo), n);
      count[c] += k;
      n -= k;
    }
}

static double phase_saved(const PnScenario *sc, void (*fn)(const PnScenario *, PnPhase, GArray *))
{
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  fn(sc, PN_PHASE_FWD, ops);
  return sum_saved(ops, PN_PHASE_FWD);
}

static double other_bytes(const PnScenario *sc, bool tp_userbuffers)
{
  const PnParallelConfig *p = &sc->parallel;
  int64_t tp                = MAX(p->tensor_model_parallel_size, 1);
  int64_t cp                = MAX(p->context_parallel_size, 1);
  int64_t pp                = MAX(p->pipeline_model_parallel_size, 1);
  int64_t dp                = MAX(p->data_parallel_size, 1);
  double other              = 1.5 * GIB;
  int comms                 = (tp > 1) + (cp > 1) + (pp > 1) + (dp * cp > 1);
  other += 0.25 * GIB * comms;
  if (tp_userbuffers) {
    double th = (double)(sc->training.seq_length / cp * sc->training.micro_batch_size) * (double)sc->model.hidden_size;
    double e  = sc->training.precision == PN_PREC_FP8 ? 1.0 : 2.0;
    other += th * (6.0 * e + 4.0 * 2.0);
  }
  return other;
}

/* Saved bytes stage `stage` holds at its peak, its chunks having `layers[c]` layers, `dense[c]`
 * of them a MoE model's dense layers, built as `dsc` says (each kind's saved bytes its own; `dsc`
 * is `sc` where the stage holds none). */
static double stage_activations(const PnScenario *sc, const PnScenario *dsc, int64_t stage, const int64_t *layers,
                                const int64_t *dense)
{
  int64_t vp                   = vp_size(sc);
  g_autofree int64_t *inflight = g_new(int64_t, vp); /* per chunk */
  inflight_per_chunk(sc, pn_workload_inflight_microbatches(sc, stage), inflight);
  PnLayerSaved ls, lsd = {0};
  layer_saved(sc, &ls);
  if (dsc != sc)
    layer_saved(dsc, &lsd);
  double act = 0.0, transient = 0.0;
  for (int64_t c = 0; c < vp; c++) {
    if (inflight[c] == 0 || layers[c] == 0) /* a chunk without layers (split.h) saves and recomputes none */
      continue;
    double per_mb = 0.0, tr = 0.0, per_mb_d = 0.0, tr_d = 0.0;
    if (layers[c] > dense[c])
      chunk_activations(sc, &ls, layers[c] - dense[c], &per_mb, &tr);
    if (dense[c] > 0)
      chunk_activations(sc, &lsd, dense[c], &per_mb_d, &tr_d);
    act += (double)inflight[c] * (per_mb + per_mb_d);
    transient = MAX(transient, MAX(tr, tr_d));
  }
  act += transient;
  if (stage == 0)
    act += (double)inflight[0] * phase_saved(sc, pn_workload_embedding_ops);
  if (stage == MAX(sc->parallel.pipeline_model_parallel_size, 1) - 1)
    act += phase_saved(sc, pn_workload_head_ops);
  return act;
}

void pn_workload_memory_stage(const PnScenario *sc, int64_t stage, bool tp_userbuffers, PnWorkloadMemory *out)
{
  g_assert(sc && out);
  const PnParallelConfig *p = &sc->parallel;
  int64_t pp                = MAX(p->pipeline_model_parallel_size, 1);
  int64_t vp                = vp_size(sc);
  int64_t cp                = MAX(p->context_parallel_size, 1);
  int64_t dp                = MAX(p->data_parallel_size, 1);
  g_assert(stage >= 0 && stage < pp);
  g_autofree int64_t *layers = g_new(int64_t, vp); /* per chunk */
  g_autofree int64_t *dense  = g_new(int64_t, vp); /* of which a MoE model's dense layers */
  int64_t stage_layers = 0, stage_dense = 0;
  stage_chunk_layers(sc, stage, layers, dense);
  for (int64_t c = 0; c < vp; c++) {
    stage_layers += layers[c];
    stage_dense += dense[c];
  }
  PnScenario dense_sc; /* the stage's dense layers' scenario, when it holds any */
  const PnScenario *dsc = sc;
  if (stage_dense > 0) {
    pn_workload_dense_layer_scenario(sc, &dense_sc);
    dsc = &dense_sc;
  }
  double n_moe = (double)(stage_layers - stage_dense), n_dense = (double)stage_dense;

  /* parameters */
  double layer_params = n_moe * pn_workload_layer_params(sc) + n_dense * pn_workload_layer_params(dsc);
  double params       = layer_params;
  double linear       = n_moe * pn_workload_layer_linear_params(sc) + n_dense * pn_workload_layer_linear_params(dsc);
  if (stage == 0)
    params += pn_workload_embedding_params(sc);
  if (stage == pp - 1)
    params += pn_workload_head_params(sc);

  const PnDdpConfig *ddp = &sc->ddp;
  PnFsdpShard fsdp       = ddp->use_megatron_fsdp ? ddp->data_parallel_sharding_strategy : PN_FSDP_NO_SHARD;
  double shard = 1.0, expert_shard = 1.0;
  if (ddp->use_megatron_fsdp ? fsdp != PN_FSDP_NO_SHARD : ddp->use_distributed_optimizer) {
    /* each optimizer instance shards over its part of the group: DP x CP, or expert-DP */
    double instances = (double)MAX(ddp->num_distributed_optimizer_instances, 1);
    shard            = (double)(dp * cp) / instances;
    expert_shard     = (double)pn_workload_expert_dp(sc) / instances;
  }
  double experts = n_moe * pn_workload_layer_expert_params(sc) + pn_workload_head_expert_params(sc) * (stage == pp - 1);
  double sharded = (params - experts) / MAX(shard, 1.0) + experts / MAX(expert_shard, 1.0);
  /* Megatron-FSDP holds unsharded only what is gathered or being reduced at the peak (memory.h) */
  double unit = MAX(pn_workload_layer_params(sc), pn_workload_layer_params(dsc)), root = params - layer_params;

  out->stage         = stage;
  out->weights_bytes = params * 2.0;
  if (fsdp == PN_FSDP_OPTIM_GRADS_PARAMS)
    out->weights_bytes = sharded * 2.0 + MIN(params, root + unit) * 2.0;
  if (sc->training.precision == PN_PREC_FP8 && !ddp->fp8_param_gather)
    out->weights_bytes += linear * 2.0;
  double grad_b        = ddp->grad_reduce_in_fp32 ? 4.0 : 2.0;
  out->gradients_bytes = params * grad_b;
  if (fsdp >= PN_FSDP_OPTIM_GRADS)
    out->gradients_bytes = sharded * grad_b + MIN(params, unit) * grad_b;

  out->activations_bytes = stage_activations(sc, dsc, stage, layers, dense);
  /* masters and moments (ops.h, pn_workload_optimizer_bytes); the step's fp32 copy of bf16 grads
   * is never live with the activations (memory.h) */
  PnOptimizerBytes ob;
  pn_workload_optimizer_bytes(sc, &ob);
  double grad_copy     = sharded * ob.grad_copy;
  out->optimizer_bytes = sharded * (ob.master_bytes + ob.moment_bytes) + MAX(grad_copy - out->activations_bytes, 0.0);

  out->other_bytes = other_bytes(sc, tp_userbuffers);
  out->total_bytes =
      out->weights_bytes + out->gradients_bytes + out->optimizer_bytes + out->activations_bytes + out->other_bytes;
}

void pn_workload_memory(const PnScenario *sc, bool tp_userbuffers, PnWorkloadMemory *out)
{
  g_assert(sc && out);
  int64_t pp = MAX(sc->parallel.pipeline_model_parallel_size, 1);
  pn_workload_memory_stage(sc, 0, tp_userbuffers, out);
  for (int64_t s = 1; s < pp; s++) {
    PnWorkloadMemory m;
    pn_workload_memory_stage(sc, s, tp_userbuffers, &m);
    if (m.total_bytes > out->total_bytes)
      *out = m;
  }
}

/* ---- changes that would fit ---- */

typedef struct {
  bool tp_userbuffers;
  double capacity_bytes;
  PnMemoryFit *out;
  int n, max;
} PnFitSearch;

/* Records `c` as the next change when Megatron accepts it and its estimate fits. */
G_GNUC_PRINTF(3, 4)
static bool add_if_fits(PnFitSearch *s, PnScenario *c, const char *fmt, ...)
{
  if (s->n >= s->max || pn_workload_check(c, NULL, NULL) != PN_RULE_OK)
    return false;
  PnWorkloadMemory m;
  pn_workload_memory(c, s->tp_userbuffers, &m);
  if (m.total_bytes > s->capacity_bytes)
    return false;
  PnMemoryFit *f = &s->out[s->n++];
  va_list ap;
  va_start(ap, fmt);
  g_vsnprintf(f->change, sizeof f->change, fmt, ap);
  va_end(ap);
  f->total_bytes = m.total_bytes;
  return true;
}

/* The smallest larger pipeline size that fits; an interleaved schedule keeps its virtual size
 * when a split takes it, else the largest smaller one that does (or none). The split is the
 * scenario's own, or where it states none the one a Megatron user would write
 * (pn_workload_split_choose: even, account_for_*, a lighter last stage, a layout), said in the
 * change. A layout keeps its virtual stages: the virtual size follows from it (rules.h). */
static void fit_pipeline(PnFitSearch *s, const PnScenario *sc)
{
  const PnParallelConfig *p = &sc->parallel;
  bool layout               = p->pipeline_model_parallel_layout[0] != '\0';
  bool stated               = pn_workload_split_stated(p);
  int64_t vp                = vp_size(sc);
  int64_t most              = sc->hardware.num_gpus / (p->tensor_model_parallel_size * p->context_parallel_size);
  for (int64_t pp = p->pipeline_model_parallel_size + 1; pp <= most; pp++) {
    int64_t v = layout ? 1 : vp;
    PnSplitKeys k;
    gboolean split;
    while (!(split = pn_workload_split_choose(sc, pp, v, &k)) && v > 1)
      v--;
    if (!split)
      continue;
    PnScenario c                                    = *sc;
    c.parallel.pipeline_model_parallel_size         = pp;
    c.parallel.virtual_pipeline_model_parallel_size = v;
    pn_workload_split_keys_set(&c.parallel, &k);
    g_autoptr(GString) with = g_string_new(NULL);
    if (v != vp && v > 1)
      g_string_append_printf(with, " virtual_pipeline_model_parallel_size=%" G_GINT64_FORMAT, v);
    else if (v != vp && !layout)
      g_string_append(with, " virtual_pipeline_model_parallel_size=null");
    if (!stated)
      pn_workload_split_describe(with, &k, true);
    if (add_if_fits(s, &c, "pipeline_model_parallel_size=%" G_GINT64_FORMAT "%s%s", pp, with->len ? " with" : "",
                    with->str))
      return;
  }
}

int pn_workload_memory_fits(const PnScenario *sc, bool tp_userbuffers, double capacity_bytes, int64_t max_tp,
                            PnMemoryFit *out, int max_out)
{
  g_assert(sc && (out || max_out == 0));
  PnFitSearch s = {.tp_userbuffers = tp_userbuffers, .capacity_bytes = capacity_bytes, .out = out, .max = max_out};
  PnScenario c;
  if (!sc->ddp.use_distributed_optimizer && !sc->ddp.use_megatron_fsdp) {
    c                               = *sc;
    c.ddp.use_distributed_optimizer = true;
    add_if_fits(&s, &c, "use_distributed_optimizer=true");
  }
  if (!sc->ddp.use_megatron_fsdp || sc->ddp.data_parallel_sharding_strategy != PN_FSDP_OPTIM_GRADS_PARAMS) {
    c                                     = *sc;
    c.ddp.use_megatron_fsdp               = true;
    c.ddp.use_distributed_optimizer       = true;
    c.ddp.data_parallel_sharding_strategy = PN_FSDP_OPTIM_GRADS_PARAMS;
    add_if_fits(&s, &c, "use_megatron_fsdp=true");
  }
  if (sc->recompute.recompute_granularity == PN_RECOMPUTE_NONE) {
    c                                 = *sc;
    c.recompute.recompute_granularity = PN_RECOMPUTE_SELECTIVE;
    add_if_fits(&s, &c, "recompute_granularity=selective");
  }
  if (sc->recompute.recompute_granularity != PN_RECOMPUTE_FULL) {
    c                                 = *sc;
    c.recompute.recompute_granularity = PN_RECOMPUTE_FULL;
    add_if_fits(&s, &c, "recompute_granularity=full");
  }
  fit_pipeline(&s, sc);
  for (int64_t tp = sc->parallel.tensor_model_parallel_size + 1; tp <= max_tp; tp++) {
    c                                     = *sc;
    c.parallel.tensor_model_parallel_size = tp;
    if (sc->parallel.expert_tensor_parallel_size == sc->parallel.tensor_model_parallel_size)
      c.parallel.expert_tensor_parallel_size = 0; /* taken as unset: it follows tp, Megatron's default */
    if (add_if_fits(&s, &c, "tensor_model_parallel_size=%" G_GINT64_FORMAT, tp))
      break;
  }
  if (sc->parallel.context_parallel_size == 1) {
    c                                = *sc;
    c.parallel.context_parallel_size = 2;
    add_if_fits(&s, &c, "context_parallel_size=2");
  }
  if (sc->training.micro_batch_size > 1) {
    c                           = *sc;
    c.training.micro_batch_size = 1;
    add_if_fits(&s, &c, "micro_batch_size=1");
  }
  return s.n;
}
