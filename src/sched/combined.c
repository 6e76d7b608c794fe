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

/* A backward_dw() call: issued on the compute stream in program order, no event wait. */
static void emit_dw(PnBuilder *b, uint32_t gpu, const GArray *tpl, int32_t mb, int16_t chunk, int16_t layer)
{
  if (tpl && tpl->len)
    pn__emit_template(b, gpu, tpl, mb, chunk, layer);
}

typedef struct {
  const PnSchedAction *f, *b;
  int64_t f_first, b_first; /* first global layer of each chunk */
  int64_t nf, nb;           /* transformer layers in each */
} PnCombined;

/* TransformerLayerSchedulePlan.run(f_layer, b_layer): the issue order of its nodes.
 *   comm stream:    combine_bwd | dispatch_fwd -> dispatch_bwd | combine_fwd
 *   compute stream: pre_dispatch_fwd | mlp_bwd -> mlp_dw -> mlp_fwd | pre_dispatch_bwd -> attn_dw
 * `fi` / `bi` are layer indices within their chunk (-1: none); the pre-dispatch wgrad of the
 * first `delayed` backward layers waits for post_backward (the chunk-level call). */
static void emit_layer_pair(PnBuilder *b, uint32_t gpu, const PnCombined *c, int64_t fi, int64_t bi, PnChains *ch)
{
  const PnTemplates *T = &b->tpl;
  bool F = fi >= 0, B = bi >= 0;
  int32_t fmb = F ? c->f->microbatch : -1, bmb = B ? c->b->microbatch : -1;
  int16_t fc = F ? c->f->chunk : -1, bc = B ? c->b->chunk : -1;
  int16_t fl = F ? (int16_t)(c->f_first + fi) : -1, bl = B ? (int16_t)(c->b_first + bi) : -1;
  bool delayed = B && bi < b->plan->p2p_wgrad_delayed_layers;
  if (B)
    pn__emit_node(b, gpu, T->node_bwd[PN_NODE_COMBINE], true, &ch->b, bmb, bc, bl);
  if (F)
    pn__emit_node(b, gpu, T->node_fwd[PN_NODE_ATTN], false, &ch->f, fmb, fc, fl);
  if (B)
    pn__emit_node(b, gpu, T->node_bwd[PN_NODE_MLP], false, &ch->b, bmb, bc, bl);
  if (F)
    pn__emit_node(b, gpu, T->node_fwd[PN_NODE_DISPATCH], true, &ch->f, fmb, fc, fl);
  if (B && !(delayed && b->plan->p2p_delay_mlp_wgrad))
    emit_dw(b, gpu, T->mlp_dw, bmb, bc, bl);
  if (B)
    pn__emit_node(b, gpu, T->node_bwd[PN_NODE_DISPATCH], true, &ch->b, bmb, bc, bl);
  if (F) {
    pn__emit_node(b, gpu, T->node_fwd[PN_NODE_MLP], false, &ch->f, fmb, fc, fl);
    pn__emit_node(b, gpu, T->node_fwd[PN_NODE_COMBINE], true, &ch->f, fmb, fc, fl);
  }
  if (B) {
    pn__emit_node(b, gpu, T->node_bwd[PN_NODE_ATTN], false, &ch->b, bmb, bc, bl);
    if (!delayed)
      emit_dw(b, gpu, T->attn_dw, bmb, bc, bl);
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

static void combined_param_gather(PnBuilder *b, uint32_t rank, const PnSchedAction *a)
{
  if (!(a->first_forward_of_chunk && pn__param_overlap_now(b)))
    return;
  /* Megatron's per-bucket pre-hooks run inside the layers; at chunk granularity here: every
   * bucket of the chunk (and, aligned, of the next) is gathered before the chunk starts. */
  pn__emit_param_gather_chunk(b, rank, a->chunk);
}

static void combined_grad_reduce(PnBuilder *b, uint32_t rank, const PnSchedAction *a)
{
  if (!(a->last_backward_of_chunk && pn__grad_overlap_now(b)))
    return;
  /* at chunk granularity: the buckets launch when the chunk's backward ends */
  for (int k = 0; k < pn__n_buckets(pn__units_of(b, rank, a->chunk)); k++)
    pn__emit_grad_bucket(b, rank, a->chunk, k);
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
    pn__emit_template(b, rank, b->tpl.emb_fwd, c.f->microbatch, c.f->chunk, -1);
  ch.f = g_array_index(b->last_compute, PnTaskId, rank);
  if (c.b && bvs == last_vs)
    pn__emit_template(b, rank, b->tpl.head_bwd, c.b->microbatch, c.b->chunk, -1);
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
      int16_t layer = (int16_t)(c.b_first + i);
      if (b->plan->p2p_delay_mlp_wgrad)
        emit_dw(b, rank, b->tpl.mlp_dw, c.b->microbatch, c.b->chunk, layer);
      emit_dw(b, rank, b->tpl.attn_dw, c.b->microbatch, c.b->chunk, layer);
    }
  emit_event_wait(b, rank, ch.f);
  emit_event_wait(b, rank, ch.b);
  if (c.f && fvs == last_vs)
    pn__emit_template(b, rank, b->tpl.head_fwd, c.f->microbatch, c.f->chunk, -1);
  if (c.b && bvs == 0)
    pn__emit_template(b, rank, b->tpl.emb_bwd, c.b->microbatch, c.b->chunk, -1);
  if (c.b)
    combined_grad_reduce(b, rank, c.b);
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
