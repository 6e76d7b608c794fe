/* build.c — Megatron's iteration as a task graph (see build.h): the driver. Templates are built
 * once from the ops of workload/ops.h; each rank's schedule actions (order.h) are emitted in turn,
 * then the gradient-norm barrier and the optimizer step. What each overlap mechanism does to the
 * graph lives in its own file beside this one (sched-private.h lists them). */
#include "sched/build.h"

#include "sched/order.h"
#include "sched/sched-private.h"
#include "workload/ops.h"
#include "workload/split.h"

GQuark pn_build_error_quark(void) { return g_quark_from_static_string("pn-build-error-quark"); }

/* Beyond this a simulation would need gigabytes: the configuration is refused with a message. */
#define PN_BUILD_MAX_TASKS 2.0e7
/* Template entries are indexed by int16_t: ring-exchange / CP-ring steps are bounded well below. */
#define PN_BUILD_MAX_RING_STEPS 1024

/* ---- templates --------------------------------------------------------------------------- */

/* Joins further away than the next entry are recorded on their target (pn__emit_template checks an
 * entry, the previous one and extra_join). */
static void tpl_link_far_joins(GArray *tpl)
{
  for (guint i = 0; i < tpl->len; i++) {
    const PnTplEntry *e = &g_array_index(tpl, PnTplEntry, i);
    if (e->join && e->join_at != (int16_t)i && e->join_at != (int16_t)(i + 1)) {
      PnTplEntry *target = &g_array_index(tpl, PnTplEntry, e->join_at);
      g_assert(target->extra_join < 0);
      target->extra_join = (int16_t)i;
    }
  }
}

static GArray *tpl_from_ops(PnBuilder *b, GArray *ops)
{
  GArray *tpl       = g_array_new(FALSE, FALSE, sizeof(PnTplEntry));
  int16_t side_last = -1; /* last entry on the shared-expert stream, not yet joined */
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *op   = &g_array_index(ops, PnOp, i);
    const PnOp *next = i + 1 < ops->len ? &g_array_index(ops, PnOp, i + 1) : NULL;
    /* moe_shared_expert_overlap: on their own stream, launched after the compute before them */
    if (op->side) {
      PnTask t;
      pn__price_op(b, op, &t);
      t.stream  = PN_STREAM_SHARED_EXPERT;
      side_last = pn__tpl_add(tpl, &t, -1, -1, side_last < 0, false);
      continue;
    }
    if (op->join_side && side_last >= 0 && tpl->len > 0) {
      /* the compute issued after the previous entry (this op) waits for the side stream */
      PnTplEntry *e = &g_array_index(tpl, PnTplEntry, side_last);
      e->join       = true;
      e->join_at    = (int16_t)(tpl->len - 1);
      side_last     = -1;
    }
    int last = pn__tpl_tp_slot(b, tpl, ops, i);
    if (last >= 0) {
      i = (guint)last;
      continue;
    }
    /* Context-parallel P2P ring: the KV exchange op followed by its attention op. */
    if (op->kind == PN_OP_COMM && op->group == PN_GROUP_CP && op->coll == PN_COLL_SEND_RECV && next &&
        next->kind == PN_OP_ATTN && b->cp > 1) {
      pn__tpl_cp_ring(b, tpl, op, next);
      i++;
      continue;
    }
    pn__tpl_plain(b, tpl, op);
  }
  tpl_link_far_joins(tpl);
  return tpl;
}

typedef void (*PnOpsFn)(const PnScenario *sc, PnPhase phase, GArray *out);

static GArray *template_of(PnBuilder *b, PnOpsFn fn, PnPhase phase)
{
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  fn(b->sc, phase, ops);
  return tpl_from_ops(b, ops);
}

/* The layer's op lists split by schedule node. With delay_wgrad_compute the TE-linear wgrad
 * GEMMs leave their node for the backward_dw() parts: the experts' (and MLP's) for mlp_dw, the
 * attention's and shared experts' for attn_dw (fine_grained_callables.py backward_dw). Every
 * layer is recomputed alike here (EP overlap rules out full recompute). */
static void node_templates_build(PnBuilder *b)
{
  g_autoptr(GArray) ops  = g_array_new(FALSE, FALSE, sizeof(PnOp));
  g_autoptr(GArray) part = g_array_new(FALSE, FALSE, sizeof(PnOp));
  g_autoptr(GArray) dw   = g_array_new(FALSE, FALSE, sizeof(PnOp));
  for (int phase = 0; phase < 2; phase++) {
    g_array_set_size(ops, 0);
    pn_workload_layer_ops(b->sc, phase == 0 ? PN_PHASE_FWD : PN_PHASE_BWD, ops);
    for (int n = 0; n < PN_NODE_N; n++) {
      g_array_set_size(part, 0);
      g_array_set_size(dw, 0);
      for (guint i = 0; i < ops->len; i++) {
        const PnOp *o = &g_array_index(ops, PnOp, i);
        if (o->node != n)
          continue;
        if (phase == 1 && b->plan->delay_wgrad_compute && o->kind == PN_OP_GEMM && o->te_wgrad)
          g_array_append_val(dw, *o);
        else
          g_array_append_val(part, *o);
      }
      GArray **slot = phase == 0 ? &b->tpl.node_fwd[n] : &b->tpl.node_bwd[n];
      *slot         = tpl_from_ops(b, part);
      if (phase == 1 && n == PN_NODE_ATTN)
        b->tpl.attn_dw = tpl_from_ops(b, dw);
      else if (phase == 1 && n == PN_NODE_MLP)
        b->tpl.mlp_dw = tpl_from_ops(b, dw);
    }
  }
}

/* Megatron-Core's own Python in a local-spec layer (host.local_layer_*_ns: its modules, autograd
 * functions and DDP hooks beyond the kernels' launches), spread over the template's host costs in
 * proportion to them, so that the layer's host time is its kernels' launches plus that Python
 * and each op keeps its place: host_ns *= 1 + python / (the template's host_ns). */
static void tpl_add_python_set(GArray *const *tpls, size_t n, double python_ns)
{
  double total = 0.0;
  for (size_t k = 0; k < n; k++)
    for (guint i = 0; tpls[k] && i < tpls[k]->len; i++)
      total += (double)g_array_index(tpls[k], PnTplEntry, i).task.host_ns;
  if (!(python_ns > 0.0 && total > 0.0))
    return;
  double f = 1.0 + python_ns / total;
  for (size_t k = 0; k < n; k++)
    for (guint i = 0; tpls[k] && i < tpls[k]->len; i++) {
      PnTask *t  = &g_array_index(tpls[k], PnTplEntry, i).task;
      t->host_ns = (float)((double)t->host_ns * f);
    }
}

static void tpl_add_python(GArray *tpl, double python_ns) { tpl_add_python_set(&tpl, 1, python_ns); }

/* Python of `fwd` / `bwd` ns per layer forward / backward spread over a layer's templates (in
 * the combined 1F1B of EP overlap also over its node templates); a fully recomputed layer runs its
 * forward's again in its backward (a selective recompute re-runs one module's, not charged). */
static void add_layer_python(PnBuilder *b, double fwd, double bwd)
{
  bool full = b->sc->recompute.recompute_granularity == PN_RECOMPUTE_FULL;
  tpl_add_python(b->tpl.layer_fwd, fwd);
  tpl_add_python(b->tpl.layer_bwd, bwd + (full ? fwd : 0.0));
  tpl_add_python(b->tpl.layer_bwd_plain, bwd);
  if (!b->plan->overlap_moe_expert_parallel_comm)
    return;
  tpl_add_python_set(b->tpl.node_fwd, PN_NODE_N, fwd);
  GArray *bwds[PN_NODE_N + 2];
  for (int n = 0; n < PN_NODE_N; n++)
    bwds[n] = b->tpl.node_bwd[n];
  bwds[PN_NODE_N]     = b->tpl.attn_dw;
  bwds[PN_NODE_N + 1] = b->tpl.mlp_dw;
  tpl_add_python_set(bwds, G_N_ELEMENTS(bwds), bwd);
}

/* Megatron-Core's own Python per layer beyond its kernels' launches: a local-spec layer's
 * (host.local_layer_*_ns: its linear modules, autograd functions and DDP hooks), or what it runs
 * around a Transformer Engine layer's modules (host.te_layer_*_ns; the TE modules' own is module_ns
 * on their ops). None in a plain PyTorch loop (training.framework "pytorch"). */
static void layer_python(PnBuilder *b)
{
  if (b->sc->training.framework == PN_FRAMEWORK_PYTORCH)
    return;
  const PnHostProfile *h = &b->sc->hw->host;
  bool local             = b->sc->training.transformer_impl == PN_TRANSFORMER_IMPL_LOCAL;
  double fwd             = local ? h->local_layer_fwd_ns : h->te_layer_fwd_ns,
         bwd             = local ? h->local_layer_bwd_ns : h->te_layer_bwd_ns;
  add_layer_python(b, fwd, bwd);
}

/* Megatron-Core's MoE layer's own Python (host.moe_layer_*_ns: router, token dispatcher,
 * permutation, measured beyond a dense layer's): every layer of an MoE model, TE or local. */
static void moe_python(PnBuilder *b)
{
  if (!pn_workload_is_moe(b->sc) || b->sc->training.framework == PN_FRAMEWORK_PYTORCH)
    return;
  const PnHostProfile *h = &b->sc->hw->host;
  /* SequentialMLP (no moe_grouped_gemm): a call per local expert, each with its own Python */
  double experts = b->sc->model.moe_grouped_gemm ? 0.0 : (double)pn_workload_local_experts(b->sc);
  double fwd     = h->moe_layer_fwd_ns + experts * h->moe_expert_fwd_ns;
  double bwd     = h->moe_layer_bwd_ns + experts * h->moe_expert_bwd_ns;
  add_layer_python(b, fwd, bwd);
}

static void templates_build(PnBuilder *b)
{
  b->tpl.layer_fwd      = template_of(b, pn_workload_layer_ops, PN_PHASE_FWD);
  b->tpl.layer_bwd      = template_of(b, pn_workload_layer_ops, PN_PHASE_BWD);
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  pn_workload_layer_ops_with(b->sc, PN_PHASE_BWD, PN_RECOMPUTE_NONE, ops);
  b->tpl.layer_bwd_plain = tpl_from_ops(b, ops);
  if (b->plan->fsdp && b->plan->fsdp_shard == PN_FSDP_OPTIM_GRADS_PARAMS) {
    /* Megatron-FSDP's hooks around every layer (an FSDP unit), whatever the data-parallel size;
     * a fully recomputed layer's forward runs its pre-forward hook again */
    const PnHostProfile *h = &b->sc->hw->host;
    bool full              = b->sc->recompute.recompute_granularity == PN_RECOMPUTE_FULL;
    tpl_add_python(b->tpl.layer_fwd, h->fsdp_unit_fwd_ns);
    tpl_add_python(b->tpl.layer_bwd, h->fsdp_unit_bwd_ns + (full ? h->fsdp_unit_fwd_ns : 0.0));
    tpl_add_python(b->tpl.layer_bwd_plain, h->fsdp_unit_bwd_ns);
  }
  b->tpl.emb_fwd  = template_of(b, pn_workload_embedding_ops, PN_PHASE_FWD);
  b->tpl.emb_bwd  = template_of(b, pn_workload_embedding_ops, PN_PHASE_BWD);
  b->tpl.head_fwd = template_of(b, pn_workload_head_ops, PN_PHASE_FWD);
  b->tpl.head_bwd = template_of(b, pn_workload_head_ops, PN_PHASE_BWD);
  if (b->plan->overlap_moe_expert_parallel_comm)
    node_templates_build(b);
  layer_python(b);
  moe_python(b);
  pn__graphs_capture_templates(b);
}

/* A MoE model's dense layers are the layers of its dense twin: their templates are built with b->sc
 * standing for it, then the model's own. */
void pn__templates_build(PnBuilder *b)
{
  if (b->mixed) {
    const PnScenario *sc = b->sc;
    b->sc                = &b->dense_sc;
    templates_build(b);
    b->dense_tpl = b->tpl;
    memset(&b->tpl, 0, sizeof b->tpl);
    b->sc = sc;
  }
  templates_build(b);
}

static void templates_free(PnTemplates *t)
{
  GArray **all[] = {&t->layer_fwd, &t->layer_bwd, &t->layer_bwd_plain, &t->emb_fwd,
                    &t->emb_bwd,   &t->head_fwd,  &t->head_bwd};
  for (size_t i = 0; i < G_N_ELEMENTS(all); i++)
    g_clear_pointer(all[i], g_array_unref);
  for (int n = 0; n < PN_NODE_N; n++) {
    g_clear_pointer(&t->node_fwd[n], g_array_unref);
    g_clear_pointer(&t->node_bwd[n], g_array_unref);
  }
  g_clear_pointer(&t->attn_dw, g_array_unref);
  g_clear_pointer(&t->mlp_dw, g_array_unref);
}

void pn__templates_free(PnBuilder *b)
{
  templates_free(&b->tpl);
  templates_free(&b->dense_tpl);
}

/* ---- the iteration ----------------------------------------------------------------------- */

/* Whether unit `u`'s backward runs the recomputed layer template (PN_AT_RECOMPUTED). */
static bool unit_recomputed(PnBuilder *b, uint32_t rank, const PnUnit *u, int16_t chunk)
{
  int64_t l0 = g_array_index(b->vs_first_layer, int64_t, pn__vstage_of(b, rank, chunk));
  return pn__unit_is_layer(u) && pn_workload_layer_is_recomputed(b->sc, u->layer - l0);
}

/* One unit's template, with `hook` around its entries (NULL: none). */
static void emit_unit(PnBuilder *b, uint32_t rank, const PnUnit *u, bool fwd, int32_t mb, int16_t chunk,
                      PnEntryHook hook, void *ctx)
{
  const GArray *tpl = NULL;
  switch (u->kind) {
  case PN_UNIT_EMB:
    tpl = fwd ? b->tpl.emb_fwd : b->tpl.emb_bwd;
    break;
  case PN_UNIT_HEAD:
    tpl = fwd ? b->tpl.head_fwd : b->tpl.head_bwd;
    break;
  case PN_UNIT_LAYER:
  case PN_UNIT_DENSE: {
    const PnTemplates *t = pn__layer_tpl(b, u->layer);
    tpl = fwd ? t->layer_fwd : (unit_recomputed(b, rank, u, chunk) ? t->layer_bwd : t->layer_bwd_plain);
    break;
  }
  }
  pn__emit_template_hooked(b, rank, tpl, mb, chunk, pn__unit_is_layer(u) ? (int16_t)u->layer : -1, hook, ctx);
}

/* fp8 ops outside the layer templates (workload/ops.h), emitted for one chunk of `rank`: the
 * weight casts of a chunk's first micro-batch, per layer (`layer` >= 0), or delayed scaling's amax
 * reduction (`layer` < 0). Built per call: they depend on the rank's layer count, and a chunk
 * emits them at most twice per micro-batch. */
static void emit_fp8(PnBuilder *b, uint32_t rank, bool fwd, int32_t mb, int16_t chunk, int64_t layer)
{
  if (b->sc->training.precision != PN_PREC_FP8)
    return;
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  if (layer >= 0) { /* a dense layer of a MoE model casts a dense layer's weights */
    pn_workload_fp8_weight_ops(pn__layer_is_dense(b, layer) ? &b->dense_sc : b->sc, ops);
  } else {
    int64_t layers = 0, dense = 0;
    for (int64_t c = 0; c < b->vpp; c++) {
      int64_t vs = pn__vstage_of(b, rank, c), l0 = g_array_index(b->vs_first_layer, int64_t, vs);
      for (int64_t l = l0; l < l0 + g_array_index(b->vs_layers, int64_t, vs); l++)
        *(pn__layer_is_dense(b, l) ? &dense : &layers) += 1;
    }
    pn_workload_fp8_amax_ops(b->sc, fwd ? PN_PHASE_FWD : PN_PHASE_BWD, layers, dense, ops);
  }
  if (ops->len == 0)
    return;
  g_autoptr(GArray) tpl = tpl_from_ops(b, ops);
  pn__emit_template(b, rank, tpl, mb, chunk, (int16_t)layer);
}

static bool unit_is_layer(GArray *units, gint i)
{
  return i >= 0 && i < (gint)units->len && pn__unit_is_layer(&g_array_index(units, PnUnit, i));
}

/* The forward pre-hooks of the DP bucket groups (overlap_param_gather) act in the chunk's first
 * forward, before the module of a unit that first uses a group; Megatron-FSDP's (sharded
 * parameters) in every forward, before each unit. With fp8, TE casts a module's
 * weights after its pre-hook; here a layer's casts come before the layer, after the groups of its
 * first module only, the others still waited for at their modules. */
static void emit_forward(PnBuilder *b, uint32_t rank, const PnSchedAction *a)
{
  GArray *units = pn__units_of(b, rank, a->chunk);
  bool gather   = a->first_forward_of_chunk && pn__param_overlap_now(b);
  bool fsdp     = pn__fsdp_gathers(b);
  bool fp8      = b->sc->training.precision == PN_PREC_FP8;
  if (gather && b->plan->align_param_gather)
    pn__emit_param_gather_aligned(b, rank, a->chunk);
  if (fsdp)
    pn__fsdp_release(b, rank, a->chunk, true);
  for (guint i = 0; i < units->len; i++) {
    const PnUnit *u = &g_array_index(units, PnUnit, i);
    if (fsdp)
      pn__fsdp_gather(b, rank, a->chunk, (int32_t)i, true);
    PnDpUnit dp;
    pn__dp_unit(b, rank, a->chunk, (int32_t)i, PN_AT_PLAIN, &dp);
    bool hooked = gather && pn__dp_unit_any(&dp);
    if (hooked && fp8 && pn__unit_is_layer(u))
      pn__dp_gather_first(b, rank, &dp);
    if (pn__unit_is_layer(u) && a->first_forward_of_chunk)
      emit_fp8(b, rank, true, a->microbatch, a->chunk, u->layer);
    emit_unit(b, rank, u, true, a->microbatch, a->chunk, hooked ? pn__dp_gather_hook : NULL, &dp);
    if (pn__unit_is_layer(u) && !unit_is_layer(units, (gint)i + 1))
      emit_fp8(b, rank, true, a->microbatch, a->chunk, -1); /* the block's fp8_autocast exits */
  }
}

/* In the chunk's last backward (overlap_grad_reduce; Megatron-FSDP sharding gradients: every
 * backward) a bucket group's reduction is launched once
 * the backward has produced all its gradients: after the entry that ends the backward of the
 * module (in the unit holding its earliest-registered parameter) whose gradients come last
 * (register_grad_ready counts them per parameter; a module's all come together, when its
 * autograd function returns). */
static void emit_backward(PnBuilder *b, uint32_t rank, const PnSchedAction *a)
{
  GArray *units = pn__units_of(b, rank, a->chunk);
  bool reduce   = (a->last_backward_of_chunk || pn__fsdp_reduces_every_microbatch(b)) && pn__grad_overlap_now(b);
  bool fsdp     = pn__fsdp_gathers(b);
  if (fsdp)
    pn__fsdp_release(b, rank, a->chunk, false);
  for (gint i = (gint)units->len - 1; i >= 0; i--) {
    const PnUnit *u = &g_array_index(units, PnUnit, i);
    if (fsdp)
      pn__fsdp_gather(b, rank, a->chunk, (int32_t)i, false);
    PnDpUnit dp;
    pn__dp_unit(b, rank, a->chunk, (int32_t)i, unit_recomputed(b, rank, u, a->chunk) ? PN_AT_RECOMPUTED : PN_AT_PLAIN,
                &dp);
    bool hooked = reduce && pn__dp_unit_any(&dp);
    emit_unit(b, rank, u, false, a->microbatch, a->chunk, hooked ? pn__dp_reduce_hook : NULL, &dp);
    if (pn__unit_is_layer(u) && !unit_is_layer(units, i - 1))
      emit_fp8(b, rank, false, a->microbatch, a->chunk, -1); /* the block's first fp8 module's backward ends */
  }
}

/* The gradient-norm all-reduce of clip_grad_norm spans every rank: no stage starts its
 * optimizer step before all stages have reduced their gradients. */
static void emit_barrier(PnBuilder *b)
{
  g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(PnTaskId));
  for (guint i = 0; i < b->last_on_stream->len; i++) {
    PnTaskId id = g_array_index(b->last_on_stream, PnTaskId, i);
    if (id != PN_TASK_NONE)
      g_array_append_val(deps, id);
  }
  int64_t world = b->sc->hardware.num_gpus;
  int64_t gpn   = b->sc->hw->gpus_per_node;
  for (uint32_t r = 0; r < b->pp; r++) {
    PnTask t;
    pn__task_init(&t, PN_TASK_COMM, PN_STREAM_COMPUTE, "grad_norm_all_reduce", PN_PHASE_OPTIM);
    pn__span_task(b, PN_COLL_ALL_REDUCE, 8.0, world, world < gpn ? world : gpn, PN_CLASS_DP, &t);
    pn__add_task(b, r, &t, (const PnTaskId *)deps->data, deps->len);
  }
}

GArray *pn__optimizer_template(PnBuilder *b, uint32_t rank)
{
  double params = 0.0, experts = 0.0;
  for (int64_t c = 0; c < b->vpp; c++) {
    double e;
    params += pn__chunk_params(pn__units_of(b, rank, c), &e);
    experts += e;
  }
  double local          = b->plan->use_distributed_optimizer
                              ? params / (double)(b->dp * b->cp) + experts / (double)pn_workload_expert_dp(b->sc)
                              : params + experts;
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  pn_workload_optimizer_ops(b->sc, local, params + experts, ops);
  return tpl_from_ops(b, ops);
}

static void emit_optimizer(PnBuilder *b, uint32_t rank)
{
  g_autoptr(GArray) tpl = pn__optimizer_template(b, rank);
  pn__emit_template(b, rank, tpl, -1, -1, -1);
  pn__emit_param_gather_after_step(b, rank);
}

static gboolean emit_iteration(PnBuilder *b, GError **error)
{
  PnSchedParams sp = {.pp                            = b->pp,
                      .vpp                           = b->vpp,
                      .num_microbatches              = b->m,
                      .group_size                    = b->sc->parallel.microbatch_group_size_per_vp_stage,
                      .overlap_p2p_comm              = b->plan->overlap_p2p_comm,
                      .overlap_p2p_comm_warmup_flush = b->plan->overlap_p2p_comm_warmup_flush,
                      .combined_1f1b                 = b->plan->overlap_moe_expert_parallel_comm,
                      .deallocate_pipeline_outputs   = true};
  for (guint i = 0; i < b->chunk_ag->len; i++) {
    GArray *ags = g_ptr_array_index(b->chunk_ag, i);
    for (guint k = 0; k < ags->len; k++)
      g_array_index(ags, PnTaskId, k) = PN_TASK_NONE;
  }
  PnTaskId first = pn_graph_n_tasks(b->g); /* forward_backward_func starts */
  for (uint32_t r = 0; r < b->pp; r++) {
    if (!pn_sched_actions(&sp, r, b->actions, error))
      return FALSE;
    g_array_set_size(b->action_task, b->actions->len * PN_SCHED_MAX_XFERS);
    for (guint i = 0; i < b->action_task->len; i++)
      g_array_index(b->action_task, PnTaskId, i) = PN_TASK_NONE;
    pn__emit_param_gather_start(b, r);
    for (guint i = 0; i < b->actions->len; i++) {
      const PnSchedAction *a = &g_array_index(b->actions, PnSchedAction, i);
      if (b->plan->overlap_moe_expert_parallel_comm && (a->kind == PN_ACT_FWD || a->kind == PN_ACT_BWD)) {
        i = pn__emit_combined_step(b, r, i) - 1;
        continue;
      }
      switch (a->kind) {
      case PN_ACT_FWD:
        emit_forward(b, r, a);
        break;
      case PN_ACT_BWD:
        emit_backward(b, r, a);
        break;
      case PN_ACT_COMM:
        pn__emit_p2p(b, r, a, i, PN_TASK_NONE);
        break;
      case PN_ACT_WAIT:
        pn__emit_wait(b, r, a);
        break;
      }
    }
    pn__emit_grad_sync(b, r);
  }
  if (g_hash_table_size(b->p2p_open) != 0) {
    g_set_error(error, PN_BUILD_ERROR, PN_BUILD_ERROR_INVALID,
                "pipeline schedule left %u P2P transfers without a matching peer (internal error)",
                g_hash_table_size(b->p2p_open));
    return FALSE;
  }
  pn__graphs_capture_iteration(b, first);
  emit_barrier(b);
  for (uint32_t r = 0; r < b->pp; r++)
    emit_optimizer(b, r);
  /* train_step reads the step's results on the host (update_successful, grad norm, zeros: .item()),
   * so each host waits for everything its GPU was given before it launches the next iteration */
  for (uint32_t r = 0; r < b->pp; r++) {
    PnTaskId last = g_array_index(b->last_on_gpu, PnTaskId, r);
    g_array_append_val(b->info->iteration_end, last);
    pn_graph_task(b->g, last)->host_sync = PN_HOST_SYNC_DEVICE;
  }
  return TRUE;
}

/* ---- the build --------------------------------------------------------------------------- */

/* Megatron's pipeline split of the scenario's layout (workload/split.h): the layers of each
 * virtual stage, each starting where the previous one ends. */
gboolean pn__split_layers(PnBuilder *b, GError **error)
{
  PnRuleViolation v;
  g_autoptr(GArray) layers = g_array_new(FALSE, FALSE, sizeof(int64_t));
  if (pn_workload_stage_layers(b->sc, b->pp, b->vpp, layers, &v) != PN_RULE_OK) {
    g_set_error(error, PN_BUILD_ERROR, PN_BUILD_ERROR_INVALID, "%s: %s", v.path, v.message);
    return FALSE;
  }
  g_assert(layers->len == (guint)(b->pp * b->vpp)); /* a layout's vpp is the one the rules derived */
  b->vs_first_layer = g_array_new(FALSE, FALSE, sizeof(int64_t));
  for (int64_t vs = 0, first = 0; vs < (int64_t)layers->len; vs++) {
    g_array_append_val(b->vs_first_layer, first);
    first += g_array_index(layers, int64_t, vs);
  }
  b->vs_layers = g_steal_pointer(&layers);
  return TRUE;
}

/* The graph's final size, roughly: every rank runs m * vpp forwards and backwards of its layers,
 * plus P2P calls, embedding, head and the optimizer (reserving avoids copying a 10^6-task array).
 * FALSE, with a message, past PN_BUILD_MAX_TASKS. */
static gboolean reserve_graph(PnBuilder *b, GError **error)
{
  const PnScenario *sc = b->sc;
  double per_layer     = (double)(b->tpl.layer_fwd->len + b->tpl.layer_bwd->len);
  double extra = (double)(b->tpl.emb_fwd->len + b->tpl.emb_bwd->len + b->tpl.head_fwd->len + b->tpl.head_bwd->len);
  double estimate =
      (double)(sc->training.iterations > 0 ? sc->training.iterations : 1) *
      ((double)sc->model.num_layers * (double)b->m * per_layer + (double)b->m * (extra + 8.0 * b->vpp * b->pp));
  if (!(estimate <= PN_BUILD_MAX_TASKS)) {
    g_set_error(error, PN_BUILD_ERROR, PN_BUILD_ERROR_INVALID,
                "the iteration would need about %.3g simulated tasks (layers x micro-batches x kernels per layer); "
                "at most %.0f are simulated",
                estimate, (double)PN_BUILD_MAX_TASKS);
    return FALSE;
  }
  if (estimate > 0)
    pn_graph_reserve(b->g, (uint32_t)(estimate * 1.05));
  return TRUE;
}

static void builder_free(PnBuilder *b)
{
  pn__templates_free(b);
  g_hash_table_unref(b->p2p_open);
  g_array_unref(b->actions);
  g_array_unref(b->action_task);
  g_array_unref(b->last_on_gpu);
  g_array_unref(b->last_compute);
  g_array_unref(b->scratch_deps);
  g_array_unref(b->last_on_stream);
  g_ptr_array_unref(b->pending);
  g_ptr_array_unref(b->dp_wait);
  g_ptr_array_unref(b->fsdp_rs_queue);
  g_ptr_array_unref(b->units);
  g_ptr_array_unref(b->groups);
  g_ptr_array_unref(b->chunk_ag);
  for (int k = 0; k < PN_UNIT_KINDS; k++) {
    g_clear_pointer(&b->params[k], g_array_unref);
    g_clear_pointer(&b->param_at[k], g_array_unref);
  }
  g_clear_pointer(&b->scratch_buckets, g_array_unref);
  g_array_unref(b->vs_first_layer);
  g_array_unref(b->vs_layers);
}

void pn__builder_layout(PnBuilder *b, const PnScenario *sc, const PnPlan *plan, PnBuildInfo *info)
{
  const PnParallelConfig *par = &sc->parallel;
  b->sc                       = sc;
  b->plan                     = plan;
  b->info                     = info;
  b->pp                       = par->pipeline_model_parallel_size;
  b->vpp   = par->virtual_pipeline_model_parallel_size > 0 ? par->virtual_pipeline_model_parallel_size : 1;
  b->tp    = par->tensor_model_parallel_size;
  b->cp    = par->context_parallel_size;
  b->dp    = par->data_parallel_size;
  b->m     = par->num_microbatches;
  b->mixed = pn_workload_has_dense_layers(sc);
  if (b->mixed)
    pn_workload_dense_layer_scenario(sc, &b->dense_sc);
}

GPtrArray *pn__arrays_new(guint n, guint elem)
{
  GPtrArray *a = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(a, g_array_new(FALSE, FALSE, elem));
  return a;
}

gboolean pn_sched_build(const PnScenario *sc, const PnPlan *plan, PnGraph *g, PnBuildInfo *info, GError **error)
{
  const PnParallelConfig *par = &sc->parallel;
  PnBuilder b                 = {.g = g};
  pn__builder_layout(&b, sc, plan, info);
  g_return_val_if_fail(g->n_gpus == (uint32_t)b.pp, FALSE);
  if (b.tp > PN_BUILD_MAX_RING_STEPS || b.cp > PN_BUILD_MAX_RING_STEPS) {
    g_set_error(error, PN_BUILD_ERROR, PN_BUILD_ERROR_INVALID,
                "tensor_model_parallel_size %" G_GINT64_FORMAT " / context_parallel_size %" G_GINT64_FORMAT
                ": ring exchanges of more than %d steps are not simulated",
                b.tp, b.cp, PN_BUILD_MAX_RING_STEPS);
    return FALSE;
  }
  if (!pn__split_layers(&b, error))
    return FALSE;
  double tokens = (double)(sc->training.seq_length / b.cp) * (double)sc->training.micro_batch_size;
  if (par->sequence_parallel && b.tp > 1)
    tokens /= (double)b.tp;
  b.p2p_bytes      = tokens * (double)sc->model.hidden_size * 2.0;
  *info            = (PnBuildInfo){.iteration_end    = g_array_new(FALSE, FALSE, sizeof(PnTaskId)),
                                   .dp_buckets       = g_array_new(FALSE, TRUE, sizeof(int64_t)),
                                   .dp_bucket_groups = g_array_new(FALSE, TRUE, sizeof(int64_t))};
  b.p2p_open       = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  b.actions        = g_array_new(FALSE, FALSE, sizeof(PnSchedAction));
  b.action_task    = g_array_new(FALSE, FALSE, sizeof(PnTaskId));
  b.last_on_gpu    = g_array_new(FALSE, TRUE, sizeof(PnTaskId));
  b.last_compute   = g_array_new(FALSE, TRUE, sizeof(PnTaskId));
  b.scratch_deps   = g_array_new(FALSE, FALSE, sizeof(PnTaskId));
  b.last_on_stream = g_array_new(FALSE, FALSE, sizeof(PnTaskId));
  g_array_set_size(b.last_on_stream, (guint)(b.pp * PN_STREAM_N));
  for (guint i = 0; i < b.last_on_stream->len; i++)
    g_array_index(b.last_on_stream, PnTaskId, i) = PN_TASK_NONE;
  g_array_set_size(b.last_on_gpu, (guint)b.pp);
  g_array_set_size(b.last_compute, (guint)b.pp);
  for (guint i = 0; i < (guint)b.pp; i++)
    g_array_index(b.last_compute, PnTaskId, i) = PN_TASK_NONE;
  b.pending       = pn__arrays_new((guint)b.pp, sizeof(PnTaskId));
  b.dp_wait       = pn__arrays_new((guint)b.pp, sizeof(PnTaskId));
  b.fsdp_rs_queue = pn__arrays_new((guint)b.pp, sizeof(PnFsdpQueued));
  b.units         = pn__arrays_new((guint)(b.pp * b.vpp), sizeof(PnUnit));
  b.groups        = pn__arrays_new((guint)(b.pp * b.vpp), sizeof(PnBucketGroup));
  b.chunk_ag      = pn__arrays_new((guint)(b.pp * b.vpp), sizeof(PnTaskId));
  pn__templates_build(&b);
  pn__params_build(&b);
  g_array_set_size(info->dp_buckets, (guint)b.pp);
  g_array_set_size(info->dp_bucket_groups, (guint)b.pp);
  for (uint32_t r = 0; r < b.pp; r++)
    for (int64_t c = 0; c < b.vpp; c++) {
      pn__units_build(&b, r, c);
      pn__buckets_build(&b, r, c, &g_array_index(info->dp_buckets, int64_t, r),
                        &g_array_index(info->dp_bucket_groups, int64_t, r));
    }
  gboolean ok = reserve_graph(&b, error);
  int iters   = sc->training.iterations > 0 ? sc->training.iterations : 1;
  for (b.iteration = 0; ok && b.iteration < iters; b.iteration++) {
    /* One simulated iteration stands for the steady state; with several, the first is the
     * run's first (DP overlap starts from the second, as Megatron records bucket readiness). */
    b.first_iteration = iters > 1 && b.iteration == 0;
    ok                = emit_iteration(&b, error);
  }
  builder_free(&b);
  /* the training hosts' speed against the profile's host (hardware.host_speed): its work, every
   * task's host_ns (launches, framework Python, graph replays), takes 1 / host_speed as long */
  double speed = sc->hardware.host_speed;
  if (ok && speed > 0.0 && speed != 1.0)
    for (uint32_t i = 0; i < g->n_tasks; i++)
      g->tasks[i].host_ns = (float)((double)g->tasks[i].host_ns / speed);
  return ok;
}

void pn_build_info_clear(PnBuildInfo *info)
{
  g_clear_pointer(&info->iteration_end, g_array_unref);
  g_clear_pointer(&info->dp_buckets, g_array_unref);
  g_clear_pointer(&info->dp_bucket_groups, g_array_unref);
}
