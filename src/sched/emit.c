/* emit.c — the builder's primitives (see sched-private.h): an op priced as a task (hw/cost.h for
 * kernels, hw/coll.h for NCCL collectives), template entries and their joins, and the emission of a
 * template onto one GPU under its two registers, `last_compute` and `pending`. Every overlap
 * mechanism of sched/ is written in these terms. */
#include <math.h>
#include <string.h>

#include "hw/coll.h"
#include "hw/cost.h"
#include "sched/sched-private.h"

int64_t pn_sched_ranks_per_node(const PnScenario *sc, int64_t stride, int64_t size)
{
  int64_t gpn = sc->hw->gpus_per_node;
  if (stride >= gpn)
    return 1;
  int64_t k = gpn / stride;
  return k < size ? k : size;
}

static PnCommClass group_class(PnGroup grp)
{
  switch (grp) {
  case PN_GROUP_TP:
    return PN_CLASS_TP;
  case PN_GROUP_CP:
    return PN_CLASS_CP;
  case PN_GROUP_DP:
  case PN_GROUP_AMAX: /* delayed scaling's amax reduction: reported with the data-parallel traffic */
    return PN_CLASS_DP;
  case PN_GROUP_EP:
    return PN_CLASS_EP;
  case PN_GROUP_ETP:
    return PN_CLASS_TP;
  case PN_GROUP_PP:
  default:
    return PN_CLASS_PP;
  }
}

/* Group size and ranks per node, with Megatron's rank order tp-cp-(ep)-dp-pp. */
static void group_span(const PnBuilder *b, PnGroup grp, int64_t *ranks, int64_t *per_node)
{
  switch (grp) {
  case PN_GROUP_TP:
    *ranks    = b->tp;
    *per_node = pn_sched_ranks_per_node(b->sc, 1, b->tp);
    break;
  case PN_GROUP_CP:
    *ranks    = b->cp;
    *per_node = pn_sched_ranks_per_node(b->sc, b->tp, b->cp);
    break;
  case PN_GROUP_DP: /* gradients reduce over the dp x cp group */
    *ranks    = b->dp * b->cp;
    *per_node = pn_sched_ranks_per_node(b->sc, b->tp, b->dp * b->cp);
    break;
  case PN_GROUP_AMAX: /* tp x dp x cp: consecutive ranks */
    *ranks    = b->tp * b->dp * b->cp;
    *per_node = pn_sched_ranks_per_node(b->sc, 1, *ranks);
    break;
  case PN_GROUP_EP: { /* expert ranks: etp x ep x edp; the allgather dispatcher spans etp x ep */
    int64_t etp = b->sc->parallel.expert_tensor_parallel_size;
    int64_t ep  = b->sc->parallel.expert_model_parallel_size;
    if (b->sc->parallel.moe_token_dispatcher_type == PN_MOE_DISPATCHER_ALLGATHER) {
      *ranks    = etp * ep;
      *per_node = pn_sched_ranks_per_node(b->sc, 1, *ranks);
    } else {
      *ranks    = ep;
      *per_node = pn_sched_ranks_per_node(b->sc, etp, ep);
    }
    break;
  }
  case PN_GROUP_ETP:
    *ranks    = b->sc->parallel.expert_tensor_parallel_size;
    *per_node = pn_sched_ranks_per_node(b->sc, 1, *ranks);
    break;
  case PN_GROUP_PP:
  default:
    *ranks    = 2;
    *per_node = 1;
    break;
  }
}

void pn__task_init(PnTask *t, PnTaskKind kind, PnStream stream, const char *label, uint8_t phase)
{
  *t            = (PnTask){0};
  t->kind       = (uint8_t)kind;
  t->stream     = (uint8_t)stream;
  t->cls        = PN_CLASS_NONE;
  t->label      = label;
  t->phase      = phase;
  t->microbatch = -1;
  t->chunk      = -1;
  t->layer      = -1;
}

/* An NCCL collective over `ranks` GPUs, `per_node` of them per node, of communication class `cls`. */
void pn__span_task(const PnBuilder *b, PnCollKind kind, double bytes, int64_t ranks, int64_t per_node, PnCommClass cls,
                   PnTask *t)
{
  PnCollSpec spec = {.kind           = kind,
                     .bytes          = bytes,
                     .ranks          = ranks,
                     .ranks_per_node = per_node,
                     .min_ctas       = b->plan->nccl_min_ctas,
                     .max_ctas       = b->plan->nccl_max_ctas};
  PnCollCost c;
  pn_coll_cost(b->sc->hw, &spec, &c);
  t->kind             = PN_TASK_COMM;
  t->cls              = (int8_t)cls;
  t->sms              = (int16_t)c.sms;
  t->latency_ns       = c.latency_ns;
  t->nvlink_bytes     = c.nvlink_bytes;
  t->nic_bytes        = c.nic_bytes;
  t->max_bytes_per_ns = c.max_bytes_per_ns;
  t->host_ns          = (float)b->sc->hw->host.collective_ns;
  t->coll.bytes       = (float)bytes;
  t->coll.ranks       = (uint16_t)MIN(ranks, (int64_t)UINT16_MAX);
  t->coll.kind        = (uint8_t)kind;
}

/* An NCCL collective of group `grp`. */
void pn__nccl_task(const PnBuilder *b, PnCollKind kind, double bytes, PnGroup grp, PnTask *t)
{
  int64_t ranks, per_node;
  group_span(b, grp, &ranks, &per_node);
  pn__span_task(b, kind, bytes, ranks, per_node, group_class(grp), t);
}

/* The flex dispatcher (DeepEP / HybridEP kernels) is hierarchical: a token bound for experts on
 * another node crosses the network once per destination node, over the GPU's rail NIC, and the
 * GPU that receives it forwards its copies to their experts' GPUs over NVLink; NCCL's
 * all-to-all sends every one of the top-k copies. With balanced routing a token's top-k
 * experts hit a given remote node with probability 1 - C(E - E/nodes, k) / C(E, k). `S` is the
 * per-rank buffer of all top-k copies (Tm*topk*h*2). Inside one node nothing changes. */
static void flex_dispatch_bytes(const PnBuilder *b, double S, PnTask *t)
{
  int64_t ranks, per_node;
  group_span(b, PN_GROUP_EP, &ranks, &per_node);
  int64_t nodes = (ranks + per_node - 1) / per_node;
  if (nodes <= 1)
    return;
  int64_t E = b->sc->model.num_moe_experts, k = MAX(b->sc->model.moe_router_topk, 1);
  int64_t e_node = E / nodes;
  double miss    = 1.0; /* probability that none of the k experts is on a given remote node */
  for (int64_t i = 0; i < k && E - i > 0; i++)
    miss *= fmax(0.0, (double)(E - e_node - i)) / (double)(E - i);
  double token_bytes  = S / (double)k;
  t->nic_bytes        = token_bytes * (double)(nodes - 1) * (1.0 - miss);
  t->nvlink_bytes     = S * (double)(per_node - 1) / (double)per_node;
  t->max_bytes_per_ns = 0.0; /* bound by the links (the kernels are not NCCL's channels) */
}

/* Which measured memory-bound kernel an op behaves like: dropout's (its RNG and mask) where the
 * op draws random numbers, else by the op's name. */
static PnMemClass mem_class(const PnOp *op)
{
  const char *name = op->name;
  if (op->rng)
    return PN_MEM_DROPOUT;
  if (g_str_has_prefix(name, "ln") || g_str_has_prefix(name, "final_norm"))
    return PN_MEM_NORM;
  if (g_str_has_prefix(name, "act"))
    return PN_MEM_ACTIVATION;
  if (g_str_has_prefix(name, "adam") || g_str_has_prefix(name, "grad_norm"))
    return PN_MEM_OPTIMIZER;
  return PN_MEM_COPY;
}

/* A kernel occupies its stream at least its class's floor (PnHwProfile.kernel_floor_ns: ramp and
 * tail, measured in a CUDA graph); the executor adds kernel_launch_ns on top. */
static double floored(const PnHwProfile *hw, double work_ns, PnFloorClass cls)
{
  return fmax(work_ns, hw->kernel_floor_ns[cls]);
}

/* What launching a compute op costs the host (graph.h, "The host"): each kernel one eager launch
 * from Python at the forward's or the backward's measured rate (a recomputed forward runs forward
 * code), and a module call's own Python (module_ns) on the op that opens one: a GEMM's fprop or
 * dgrad (a TE linear's forward or backward) and the core attention. Collectives are priced by
 * pn__span_task. */
static float host_launch_ns(const PnScenario *sc, const PnOp *op, int64_t kernels)
{
  const PnHwProfile *hw = sc->hw;
  double per            = op->phase == PN_PHASE_BWD ? hw->host.kernel_bwd_ns : hw->host.kernel_ns;
  /* module_ns is Transformer Engine's module Python beyond Megatron-Core's own (the published
   * difference, hw/profile.h): a local layer has its own (host.local_layer_*_ns, build.c) */
  bool module =
      sc->training.transformer_impl == PN_TRANSFORMER_IMPL_TE &&
      (op->kind == PN_OP_ATTN || (op->kind == PN_OP_GEMM && (op->role == PN_GEMM_FPROP || op->role == PN_GEMM_DGRAD)));
  return (float)(per * (double)kernels + (module ? hw->host.module_ns : 0.0));
}

void pn__price_op(PnBuilder *b, const PnOp *op, PnTask *t)
{
  const PnHwProfile *hw = b->sc->hw;
  PnCostSource src      = PN_COST_TABLE;
  pn__task_init(t, PN_TASK_COMPUTE, PN_STREAM_COMPUTE, op->name, op->phase);
  t->scaling = PN_SCALE_GEMM;
  switch (op->kind) {
  case PN_OP_GEMM: {
    /* TE's grouped GEMM runs the local experts' GEMMs one after another (multi-stream cuBLAS on
     * Hopper overlaps only their launch and tail) */
    int64_t groups = MAX(op->groups, 1);
    double ns      = op->batch > 0 ? pn_cost_bmm_ns(hw, op->batch, op->m, op->n, op->k, &src)
                     : op->accum_into == PN_DT_NONE
                         ? pn_cost_gemm_ns(hw, op->m, op->n, op->k, op->dtype, &src)
                         : pn_cost_gemm_accum_ns(hw, op->m, op->n, op->k, op->dtype, op->accum_into, &src);
    t->work_ns     = floored(hw, ns, PN_FLOOR_GEMM) * (double)groups;
    t->host_ns     = host_launch_ns(b->sc, op, groups);
    int shape      = pn_hw_profile_nearest_contention(hw, op->m, op->n, op->k, op->dtype == PN_DT_FP8);
    /* its effective HBM demand: FLOPs times the bytes per FLOP measured beside copying spinners */
    t->hbm_bytes = (float)(2.0 * (double)op->m * (double)op->n * (double)op->k * (double)groups *
                           (double)MAX(op->batch, 1) * hw->hbm_share.gemm_bytes_per_flop[op->dtype == PN_DT_FP8]);
    t->sm_shape  = shape >= 0 && shape < 255 ? (uint8_t)(shape + 1) : 0;
    break;
  }
  case PN_OP_ATTN:
    t->work_ns = floored(hw,
                         pn_cost_attention_ns(hw, op->batch, op->seq_q, op->seq_kv, op->heads, op->kv_heads,
                                              op->head_dim, op->head_dim_v, op->causal, op->backward, &src),
                         PN_FLOOR_ATTN);
    t->host_ns = host_launch_ns(b->sc, op, 1);
    /* flash attention reads Q, K, V and writes O once (bf16); its backward also reads O and dO and
     * writes dQ, dK, dV: what it asks of HBM beyond its tiles, which stay on chip */
    t->hbm_bytes =
        (float)(2.0 * (double)op->batch * (double)op->head_dim *
                ((double)op->seq_q * (double)op->heads * 2.0 + (double)op->seq_kv * (double)op->kv_heads * 2.0) *
                (op->backward ? 2.0 : 1.0));
    t->hbm_pi = (float)hw->hbm_share.gemm_pressure[0]; /* a tensor-core kernel's, as a bf16 GEMM's */
    break;
  case PN_OP_MEM: {
    /* an op standing for several kernels occupies its stream at least their floors */
    int kernels  = MAX(op->kernels, 1);
    double ns    = op->torch_kernel > 0
                       ? pn_cost_torch_kernel_ns(hw, op->bytes, (PnTorchKernel)(op->torch_kernel - 1), op->seq_q)
                       : pn_cost_memory_class_ns(hw, op->bytes, mem_class(op));
    t->work_ns   = fmax(ns, hw->kernel_floor_ns[PN_FLOOR_MEM] * (double)kernels);
    t->hbm_bytes = (float)op->bytes; /* reads + writes */
    t->host_ns   = host_launch_ns(b->sc, op, kernels);
    t->host_sync = op->host_reads ? PN_HOST_SYNC_TASK : PN_HOST_SYNC_NONE;
    t->scaling   = PN_SCALE_MEMORY;
    /* TE's persistent norm kernels run on sm_count - margin SMs (NVTE_*_LAYERNORM_SM_MARGIN). */
    if (g_str_has_prefix(op->name, "ln") || g_str_has_prefix(op->name, "final_norm")) {
      int margin = op->phase == PN_PHASE_BWD ? b->plan->bwd_ln_sm_margin : b->plan->fwd_ln_sm_margin;
      if (margin > 0 && margin < hw->sm_count)
        t->sms = (int16_t)(hw->sm_count - margin);
    }
    break;
  }
  case PN_OP_COMM:
    pn__nccl_task(b, op->coll, op->bytes, op->group, t);
    if (op->group == PN_GROUP_EP && op->coll == PN_COLL_ALL_TO_ALL &&
        b->sc->parallel.moe_token_dispatcher_type == PN_MOE_DISPATCHER_FLEX)
      flex_dispatch_bytes(b, op->bytes, t);
    break;
  }
  if (op->kind == PN_OP_GEMM || op->kind == PN_OP_ATTN) {
    b->info->cost_templates++;
    if (src == PN_COST_ROOFLINE)
      b->info->cost_fallbacks++;
  }
}

/* ---- templates --------------------------------------------------------------------------- */

int16_t pn__tpl_add(GArray *tpl, const PnTask *t, int16_t dep0, int16_t dep1, bool after_compute, bool join)
{
  int16_t self = (int16_t)tpl->len;
  PnTplEntry e = {
      .task = *t, .dep = {dep0, dep1}, .after_compute = after_compute, .join = join, .join_at = self, .extra_join = -1};
  g_array_append_val(tpl, e);
  return self;
}

/* A side-stream entry that runs beside the next entry (its GEMM) and joins after it: the GEMM
 * must not wait for it, the compute that follows the pair must. */
void pn__tpl_join_after_next(GArray *tpl, int16_t entry) { g_array_index(tpl, PnTplEntry, entry).join_at = entry + 1; }

void pn__tpl_plain(PnBuilder *b, GArray *tpl, const PnOp *op)
{
  PnTask t;
  pn__price_op(b, op, &t);
  pn__tpl_add(tpl, &t, -1, -1, false, false);
}

/* ---- emission ---------------------------------------------------------------------------- */

static GArray *pending_of(PnBuilder *b, uint32_t gpu) { return g_ptr_array_index(b->pending, gpu); }

/* Adds a task on `gpu` with `deps`; a compute-stream task also takes the pending joins. */
PnTaskId pn__add_task(PnBuilder *b, uint32_t gpu, PnTask *t, const PnTaskId *deps, uint32_t n_deps)
{
  t->gpu       = gpu;
  bool compute = t->stream == PN_STREAM_COMPUTE;
  GArray *pend = compute ? pending_of(b, gpu) : NULL;
  uint32_t n   = n_deps + (pend ? pend->len : 0);
  /* The dependency list is assembled on the stack (a million tasks, a few deps each); only the
   * rare long ones (a barrier over every stream) go through the scratch array. */
  PnTaskId small[16];
  PnTaskId *all = small;
  if (n > G_N_ELEMENTS(small)) {
    g_array_set_size(b->scratch_deps, n);
    all = (PnTaskId *)(void *)b->scratch_deps->data;
  }
  if (n_deps > 0)
    memcpy(all, deps, n_deps * sizeof *all);
  if (pend && pend->len > 0) {
    memcpy(all + n_deps, pend->data, pend->len * sizeof *all);
    g_array_set_size(pend, 0);
  }
  PnTaskId id                                                               = pn_graph_add(b->g, t, all, n);
  g_array_index(b->last_on_gpu, PnTaskId, gpu)                              = id;
  g_array_index(b->last_on_stream, PnTaskId, gpu * PN_STREAM_N + t->stream) = id;
  if (compute)
    g_array_index(b->last_compute, PnTaskId, gpu) = id;
  return id;
}

/* What a side-stream task launched now waits for (CUDA: the side stream waits for an event
 * recorded on the compute stream): the latest compute-stream task, and the joins already
 * waited for on the compute stream (`pending`: inserted before now, carried by the next compute
 * task). Appends to deps[*n]; deps needs room for 1 + pending->len. */
static void now_deps(PnBuilder *b, uint32_t gpu, PnTaskId *deps, uint32_t *n)
{
  PnTaskId lc = g_array_index(b->last_compute, PnTaskId, gpu);
  if (lc != PN_TASK_NONE)
    deps[(*n)++] = lc;
  GArray *pend = pending_of(b, gpu);
  for (guint i = 0; i < pend->len; i++)
    deps[(*n)++] = g_array_index(pend, PnTaskId, i);
}

/* Adds a side-stream task launched now: it waits for the latest compute-stream task only, not
 * for the pending joins as now_deps() does for a template's side tasks (a parameter all-gather
 * launched from a forward pre-hook must not wait for the pipeline receive made pending before
 * that forward). */
PnTaskId pn__add_side_task(PnBuilder *b, uint32_t gpu, PnTask *t)
{
  PnTaskId lc = g_array_index(b->last_compute, PnTaskId, gpu);
  return pn__add_task(b, gpu, t, &lc, lc == PN_TASK_NONE ? 0 : 1);
}

/* Same, launched after `after` instead (PN_TASK_NONE: the compute stream's tail). */
PnTaskId pn__add_side_task_after(PnBuilder *b, uint32_t gpu, PnTask *t, PnTaskId after)
{
  return after == PN_TASK_NONE ? pn__add_side_task(b, gpu, t) : pn__add_task(b, gpu, t, &after, 1);
}

void pn__push_pending(PnBuilder *b, uint32_t gpu, PnTaskId id) { g_array_append_val(pending_of(b, gpu), id); }

/* Appends a template's tasks for one (micro-batch, chunk, layer): template-relative deps, the
 * compute-stream tail for side tasks launched now, joins made pending once their partner is
 * issued (join_at is the entry or the next, or further on through extra_join). With a chain
 * (combined 1F1B), the first task also waits for *chain, which then advances to the template's
 * last task on its stream. Communication nodes (dispatch, combine) run entirely on the EP stream
 * (the unpermutation and residual add of moe_combine included); compute templates keep their
 * userbuffers / TE-async side tasks on their own streams. */
static void emit_node(PnBuilder *b, uint32_t gpu, const GArray *tpl, bool comm_node, PnTaskId *chain, int32_t mb,
                      int16_t chunk, int16_t layer, PnEntryHook hook, void *ctx)
{
  if (tpl->len == 0)
    return;
  PnTaskId ids[tpl->len];
  PnStream node_stream = comm_node ? PN_STREAM_EP_COMM : PN_STREAM_COMPUTE;
  PnTaskId last        = PN_TASK_NONE;
  for (guint i = 0; i < tpl->len; i++) {
    const PnTplEntry *e = &g_array_index(tpl, PnTplEntry, i);
    PnTask t            = e->task;
    t.microbatch        = mb;
    t.chunk             = chunk;
    t.layer             = layer;
    if (comm_node)
      t.stream = (uint8_t)node_stream;
    if (hook)
      hook(b, gpu, i, PN_TASK_NONE, ctx); /* what it makes pending, the next compute task waits for */
    PnTaskId deps[4 + pending_of(b, gpu)->len];
    uint32_t n = 0;
    for (int k = 0; k < 2; k++)
      if (e->dep[k] >= 0)
        deps[n++] = ids[e->dep[k]];
    if (!comm_node && e->after_compute && t.stream != PN_STREAM_COMPUTE)
      now_deps(b, gpu, deps, &n);
    if (i == 0 && *chain != PN_TASK_NONE)
      deps[n++] = *chain;
    ids[i] = pn__add_task(b, gpu, &t, deps, n);
    if (hook)
      hook(b, gpu, i, ids[i], ctx);
    if (t.stream == node_stream)
      last = ids[i];
    if (!comm_node) {
      for (guint j = i > 0 ? i - 1 : 0; j <= i; j++) {
        const PnTplEntry *ej = &g_array_index(tpl, PnTplEntry, j);
        if (ej->join && (guint)ej->join_at == i)
          pn__push_pending(b, gpu, ids[j]);
      }
      if (e->extra_join >= 0)
        pn__push_pending(b, gpu, ids[e->extra_join]);
    }
  }
  if (last != PN_TASK_NONE)
    *chain = last;
}

void pn__emit_node(PnBuilder *b, uint32_t gpu, const GArray *tpl, bool comm_node, PnTaskId *chain, int32_t mb,
                   int16_t chunk, int16_t layer)
{
  emit_node(b, gpu, tpl, comm_node, chain, mb, chunk, layer, NULL, NULL);
}

void pn__emit_node_hooked(PnBuilder *b, uint32_t gpu, const GArray *tpl, bool comm_node, PnTaskId *chain, int32_t mb,
                          int16_t chunk, int16_t layer, PnEntryHook hook, void *ctx)
{
  emit_node(b, gpu, tpl, comm_node, chain, mb, chunk, layer, hook, ctx);
}

void pn__emit_template(PnBuilder *b, uint32_t gpu, const GArray *tpl, int32_t mb, int16_t chunk, int16_t layer)
{
  PnTaskId no_chain = PN_TASK_NONE;
  emit_node(b, gpu, tpl, false, &no_chain, mb, chunk, layer, NULL, NULL);
}

void pn__emit_template_hooked(PnBuilder *b, uint32_t gpu, const GArray *tpl, int32_t mb, int16_t chunk, int16_t layer,
                              PnEntryHook hook, void *ctx)
{
  PnTaskId no_chain = PN_TASK_NONE;
  emit_node(b, gpu, tpl, false, &no_chain, mb, chunk, layer, hook, ctx);
}
