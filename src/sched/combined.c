/* combined.c — Megatron-Core's combined 1F1B, the schedule of MoE expert-parallel overlap
 * (overlap_moe_expert_parallel_comm; pipeline_parallel/combined_1f1b.py,
 * models/common/model_chunk_schedule_plan.py): a steady forward and the backward after it merged
 * layer by layer, node by node, so that one micro-batch's EP all-to-all (dispatch, combine, on the
 * EP stream) runs beside the other's compute. build.h describes the model; build.c builds the
 * nodes' templates (node_templates_build) and hands each step here. */
#include "sched/sched-private.h"

/* The two event chains of a combined step: every node of the forward (backward) micro-batch
 * waits for the previous node of the same chain, whatever its stream (ScheduleNode waits for
 * and records one CUDA event per model-chunk plan, pipeline_parallel/utils.py). */
typedef struct {
  PnTaskId f, b;
} PnChains;

typedef struct {
  const PnSchedAction *f, *b;
  int64_t f_first, b_first; /* first global layer of each chunk */
  int64_t nf, nb;           /* transformer layers in each */
  int32_t f_unit0, b_unit0; /* unit index of each chunk's first layer */
  bool gather, reduce;      /* the DP hooks act: the chunk's first forward, its last backward */
} PnCombined;

/* A part of layer `li` (its index in the chunk) of the forward (`fwd`) or backward micro-batch,
 * `part` its PnLayerNode (forward) or PnBwdPart: a node of the chain `chain`, or with chain NULL
 * a backward_dw() call (compute stream, program order). The DP hooks act in the nodes (forward
 * pre-hooks, gradient-ready launches) as in build.c's units. */
static void emit_part(PnBuilder *b, uint32_t gpu, const PnCombined *c, bool fwd, int64_t li, int part,
                      const GArray *tpl, bool comm_node, PnTaskId *chain)
{
  if (!tpl || tpl->len == 0)
    return;
  const PnSchedAction *a = fwd ? c->f : c->b;
  int16_t layer          = (int16_t)((fwd ? c->f_first : c->b_first) + li);
  PnEntryHook hook       = NULL;
  PnDpUnit dp            = {0};
  if (fwd ? c->gather : c->reduce) {
    pn__dp_unit(b, gpu, a->chunk, (int32_t)li + (fwd ? c->f_unit0 : c->b_unit0), PN_AT_COMBINED, &dp);
    dp.part = part * PN_AT_PART;
    if (pn__dp_unit_any(&dp))
      hook = fwd ? pn__dp_gather_hook : pn__dp_reduce_hook;
  }
  if (chain)
    pn__emit_node_hooked(b, gpu, tpl, comm_node, chain, a->microbatch, a->chunk, layer, hook, &dp);
  else
    pn__emit_template_hooked(b, gpu, tpl, a->microbatch, a->chunk, layer, hook, &dp);
}

/* The embedding or the head (unit `unit`) of the forward or backward micro-batch, with its DP hooks. */
static void emit_end_unit(PnBuilder *b, uint32_t gpu, const PnCombined *c, bool fwd, int32_t unit, const GArray *tpl)
{
  const PnSchedAction *a = fwd ? c->f : c->b;
  PnEntryHook hook       = NULL;
  PnDpUnit dp            = {0};
  if (fwd ? c->gather : c->reduce) {
    pn__dp_unit(b, gpu, a->chunk, unit, PN_AT_COMBINED, &dp);
    if (pn__dp_unit_any(&dp))
      hook = fwd ? pn__dp_gather_hook : pn__dp_reduce_hook;
  }
  pn__emit_template_hooked(b, gpu, tpl, a->microbatch, a->chunk, -1, hook, &dp);
}

/* TransformerLayerSchedulePlan.run(f_layer, b_layer): the issue order of its nodes.
 *   comm stream:    combine_bwd | dispatch_fwd -> dispatch_bwd | combine_fwd
 *   compute stream: pre_dispatch_fwd | mlp_bwd -> mlp_dw -> mlp_fwd | pre_dispatch_bwd -> attn_dw
 * `fi` / `bi` are layer indices within their chunk (-1: none); the pre-dispatch wgrad of the
 * first `delayed` backward layers waits for post_backward (the chunk-level call). */
static void emit_layer_pair(PnBuilder *b, uint32_t gpu, const PnCombined *c, int64_t fi, int64_t bi, PnChains *ch)
{
  bool F = fi >= 0, B = bi >= 0;
  /* each layer's own nodes: a dense layer of a MoE model has no dispatch or combine */
  const PnTemplates *TF = pn__layer_tpl(b, c->f_first + MAX(fi, 0)), *TB = pn__layer_tpl(b, c->b_first + MAX(bi, 0));
  bool delayed = B && bi < b->plan->p2p_wgrad_delayed_layers;
  if (B)
    emit_part(b, gpu, c, false, bi, PN_BWD_PART_COMBINE, TB->node_bwd[PN_NODE_COMBINE], true, &ch->b);
  if (F)
    emit_part(b, gpu, c, true, fi, PN_NODE_ATTN, TF->node_fwd[PN_NODE_ATTN], false, &ch->f);
  if (B)
    emit_part(b, gpu, c, false, bi, PN_BWD_PART_MLP, TB->node_bwd[PN_NODE_MLP], false, &ch->b);
  if (F)
    emit_part(b, gpu, c, true, fi, PN_NODE_DISPATCH, TF->node_fwd[PN_NODE_DISPATCH], true, &ch->f);
  if (B && !(delayed && b->plan->p2p_delay_mlp_wgrad))
    emit_part(b, gpu, c, false, bi, PN_BWD_PART_MLP_DW, TB->mlp_dw, false, NULL);
  if (B)
    emit_part(b, gpu, c, false, bi, PN_BWD_PART_DISPATCH, TB->node_bwd[PN_NODE_DISPATCH], true, &ch->b);
  if (F) {
    emit_part(b, gpu, c, true, fi, PN_NODE_MLP, TF->node_fwd[PN_NODE_MLP], false, &ch->f);
    emit_part(b, gpu, c, true, fi, PN_NODE_COMBINE, TF->node_fwd[PN_NODE_COMBINE], true, &ch->f);
  }
  if (B) {
    emit_part(b, gpu, c, false, bi, PN_BWD_PART_ATTN, TB->node_bwd[PN_NODE_ATTN], false, &ch->b);
    if (!delayed)
      emit_part(b, gpu, c, false, bi, PN_BWD_PART_ATTN_DW, TB->attn_dw, false, NULL);
  }
}

/* The compute stream waits for a chain's event (wait_current_stream): a zero-length marker. */
static void emit_event_wait(PnBuilder *b, uint32_t gpu, PnTaskId chain)
{
  if (chain == PN_TASK_NONE)
    return;
  PnTask t;
  pn__task_init(&t, PN_TASK_DELAY, PN_STREAM_COMPUTE, "event_wait", PN_PHASE_OTHER);
  pn__add_task(b, gpu, &t, &chain, 1);
}

/* The chunk's first forward: with align_param_gather every group of the chunk and the next is
 * dispatched; the forward pre-hooks wait for them inside the nodes (emit_part). */
static void combined_param_gather(PnBuilder *b, uint32_t rank, const PnSchedAction *a)
{
  if (a->first_forward_of_chunk && pn__param_overlap_now(b) && b->plan->align_param_gather)
    pn__emit_param_gather_aligned(b, rank, a->chunk);
}

/* TransformerModelChunkSchedulePlan.run(f, b) (model_chunk_schedule_plan.py): a forward step
 * and a backward step of other micro-batches merged layer by layer; either may be absent
 * (warm-up, cool-down). Actions (fi, bi) of this rank's list are between the two steps (the
 * forward's p2p: post_forward, launched from the forward chain on the comm stream) and
 * (bi, end) after the backward (post_backward, launched from the compute stream, or from the
 * backward chain with overlap_p2p_backward_on_comm_stream). */
static void emit_combined(PnBuilder *b, uint32_t rank, guint fi, guint bi, guint end)
{
  /* the actions after the forward (post_forward) and after the backward (post_backward) */
  guint pf0 = fi + 1, pf1 = bi < end ? bi : end, pb0 = bi + 1, pb1 = end;
  if (fi == G_MAXUINT)
    pf0 = pf1 = 0;
  if (bi == G_MAXUINT)
    pb0 = pb1 = 0;
  const GArray *acts = b->actions;
  PnCombined c       = {0};
  c.f                = fi < acts->len ? &g_array_index(acts, PnSchedAction, fi) : NULL;
  c.b                = bi < acts->len ? &g_array_index(acts, PnSchedAction, bi) : NULL;
  if (c.f && c.f->kind != PN_ACT_FWD)
    c.f = NULL;
  if (c.b && c.b->kind != PN_ACT_BWD)
    c.b = NULL;
  int64_t last_vs = b->pp * b->vpp - 1;
  int64_t fvs = c.f ? pn__vstage_of(b, rank, c.f->chunk) : -1, bvs = c.b ? pn__vstage_of(b, rank, c.b->chunk) : -1;
  if (c.f) {
    c.f_first = g_array_index(b->vs_first_layer, int64_t, fvs);
    c.nf      = g_array_index(b->vs_layers, int64_t, fvs);
  }
  if (c.b) {
    c.b_first = g_array_index(b->vs_first_layer, int64_t, bvs);
    c.nb      = g_array_index(b->vs_layers, int64_t, bvs);
  }
  c.f_unit0 = fvs == 0 ? 1 : 0;
  c.b_unit0 = bvs == 0 ? 1 : 0;
  c.gather  = c.f && c.f->first_forward_of_chunk && pn__param_overlap_now(b);
  c.reduce  = c.b && (c.b->last_backward_of_chunk || pn__fsdp_reduces_every_microbatch(b)) && pn__grad_overlap_now(b);
  /* pre_backward: waits on receives posted before this step */
  if (c.f && c.b)
    for (guint x = pf0; x < pf1; x++) {
      const PnSchedAction *a = &g_array_index(acts, PnSchedAction, x);
      if (a->kind == PN_ACT_WAIT && a->wait_action < (int32_t)fi)
        pn__emit_wait(b, rank, a);
    }
  if (c.f)
    combined_param_gather(b, rank, c.f);
  PnChains ch = {PN_TASK_NONE, PN_TASK_NONE};
  if (c.f && fvs == 0)
    emit_end_unit(b, rank, &c, true, 0, b->tpl.emb_fwd);
  ch.f = g_array_index(b->last_compute, PnTaskId, rank);
  if (c.b && bvs == last_vs)
    emit_end_unit(b, rank, &c, false, c.b_unit0 + (int32_t)c.nb, b->tpl.head_bwd);
  ch.b = g_array_index(b->last_compute, PnTaskId, rank);

  int64_t both = MIN(c.nf, c.nb);
  for (int64_t i = 0; i < both; i++)
    emit_layer_pair(b, rank, &c, i, c.nb - 1 - i, &ch);
  for (int64_t i = both; i < c.nb; i++)
    emit_layer_pair(b, rank, &c, -1, c.nb - 1 - i, &ch);
  for (int64_t i = both; i < c.nf; i++)
    emit_layer_pair(b, rank, &c, i, -1, &ch);

  /* a wait on a receive after a step is for the next step's input: it is made at the start of
   * the next step (pre_forward / pre_backward), after this one's delayed wgrads */
  g_autoptr(GArray) next_input = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint x = pf0; x < pf1; x++) {
    const PnSchedAction *a = &g_array_index(acts, PnSchedAction, x);
    if (a->kind == PN_ACT_COMM)
      pn__emit_p2p(b, rank, a, x, ch.f);
    else if (a->kind == PN_ACT_WAIT && !a->xfer[0].send && !c.b)
      g_array_append_val(next_input, x);
    else if (a->kind == PN_ACT_WAIT && (!c.b || a->wait_action >= (int32_t)fi))
      pn__emit_wait(b, rank, a);
  }
  if (c.b)
    for (guint x = pb0; x < pb1; x++) {
      const PnSchedAction *a = &g_array_index(acts, PnSchedAction, x);
      if (a->kind == PN_ACT_COMM)
        pn__emit_p2p(b, rank, a, x, b->plan->p2p_backward_on_comm_stream ? ch.b : PN_TASK_NONE);
      else if (a->kind == PN_ACT_WAIT && !a->xfer[0].send)
        g_array_append_val(next_input, x);
      else if (a->kind == PN_ACT_WAIT)
        pn__emit_wait(b, rank, a);
    }
  /* the delayed pre-dispatch wgrads of the last backward layers, after post_backward */
  if (c.b)
    for (int64_t i = 0; i < MIN(b->plan->p2p_wgrad_delayed_layers, c.nb); i++) {
      const PnTemplates *t = pn__layer_tpl(b, c.b_first + i);
      if (b->plan->p2p_delay_mlp_wgrad)
        emit_part(b, rank, &c, false, i, PN_BWD_PART_MLP_DW, t->mlp_dw, false, NULL);
      emit_part(b, rank, &c, false, i, PN_BWD_PART_ATTN_DW, t->attn_dw, false, NULL);
    }
  emit_event_wait(b, rank, ch.f);
  emit_event_wait(b, rank, ch.b);
  if (c.f && fvs == last_vs)
    emit_end_unit(b, rank, &c, true, c.f_unit0 + (int32_t)c.nf, b->tpl.head_fwd);
  if (c.b && bvs == 0)
    emit_end_unit(b, rank, &c, false, 0, b->tpl.emb_bwd);
  for (guint k = 0; k < next_input->len; k++)
    pn__emit_wait(b, rank, &g_array_index(acts, PnSchedAction, g_array_index(next_input, guint, k)));
}

/* Index of the next FWD or BWD action at or after `from` (actions->len when none). */
static guint next_step(const GArray *acts, guint from)
{
  for (guint x = from; x < acts->len; x++) {
    uint8_t k = g_array_index(acts, PnSchedAction, x).kind;
    if (k == PN_ACT_FWD || k == PN_ACT_BWD)
      return x;
  }
  return acts->len;
}

/* One rank's actions under the combined 1F1B schedule: a steady-state forward is merged with the
 * backward that follows it; warm-up forwards and cool-down backwards run alone, through the
 * same node schedule; the p2p calls that follow a step are its post_forward / post_backward.
 * Returns the index of the first action not consumed. */
guint pn__emit_combined_step(PnBuilder *b, uint32_t rank, guint i)
{
  const GArray *acts     = b->actions;
  const PnSchedAction *a = &g_array_index(acts, PnSchedAction, i);
  if (a->kind == PN_ACT_FWD && a->phase == PN_PHASE_STEADY) {
    guint bi = next_step(acts, i + 1);
    if (bi < acts->len && g_array_index(acts, PnSchedAction, bi).kind == PN_ACT_BWD) {
      guint end = next_step(acts, bi + 1);
      emit_combined(b, rank, i, bi, end);
      return end;
    }
  }
  guint end = next_step(acts, i + 1);
  if (a->kind == PN_ACT_FWD)
    emit_combined(b, rank, i, G_MAXUINT, end);
  else
    emit_combined(b, rank, G_MAXUINT, i, end);
  return end;
}
