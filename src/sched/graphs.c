/* graphs.c — CUDA graphs (plan.cuda_graph_impl, gated by overlap/graphs.c): what a captured scope
 * costs the host that launches it (graph.h, "The host").
 *
 * A captured kernel is not launched from Python: its task costs its host nothing and skips the
 * per-kernel launch gap (PnTask.graphed; its kernel floor stays, being the GPU's own). The
 * replay is charged to the first task of each captured region:
 *  - per-layer graphs (local: Megatron's CudaGraphManager, transformer/cuda_graphs.py ~1854;
 *    transformer_engine: TE's make_graphed_callables per layer and micro-batch, TECudaGraphHelper
 *    ~2177): one forward and one backward graph per captured scope of a layer. A region is a run
 *    of template entries of one scope (the whole layer, or attn, mlp, moe_router, moe_preprocess);
 *    it costs the host graph_layer_fwd_ns (backward: graph_layer_bwd_ns), the replay of a whole
 *    layer with its autograd wrapper as measured, times the region's share of what the layer costs
 *    the host eagerly (the sum of its tasks' host_ns). A whole layer thus costs exactly the
 *    measured replay, and a part of it the measured replay scaled by the Python and launches it
 *    replaces; that the replay's fixed cost does not scale with the part is not modelled.
 *    Everything outside the layers stays eager (embedding, output layer and loss, P2P, DP hooks,
 *    optimizer), and so do the MoE dispatch, experts and combine of a dropless MoE, with the
 *    host's wait for the token counts after the router graph.
 *  - full_iteration (full_cuda_graph.py FullCudaGraphWrapper ~138-260): forward_backward_func is
 *    captured whole, every micro-batch, its P2P, the parameter all-gathers of the forward
 *    pre-hooks and the DP gradient reduction of finalize_model_grads: one CUDAGraph.replay() per
 *    iteration (graph_launch_ns, charged to its first task on each GPU), no other host cost and no host synchronization
 * inside (the batched P2P's device sync and the token-count copies are not captured: the gate keeps MoE out). The
 * gradient-norm all-reduce, the optimizer step and train_step's final synchronization stay eager. Megatron captures
 * after cuda_graph_warmup_steps eager iterations: every simulated iteration is a replayed one.
 *
 * Cost: one pass over each template (per-layer) or over the iteration's tasks (full_iteration).
 */
#include "sched/sched-private.h"

/* A region key for the whole layer, beside the PnCudaGraphModule bits. */
#define WHOLE_LAYER (1u << 31)

/* The module an op of a layer belongs to, as Megatron-Core splits a TransformerLayer
 * (transformer_layer.py: _forward_attention: input norm, attention, residual; _forward_mlp:
 * pre-MLP norm, MLP, residual; for MoE, moe_layer.py: the router with the pre-MLP norm and the
 * shared experts, then the dispatch preprocess, the permutation). The dispatch, experts and
 * combine nodes are "moe", and so are the shared experts on their own stream beside the dispatch
 * (moe_shared_expert_overlap): none is captured with a dropless MoE. */
static uint32_t op_module(const PnOp *op, bool moe)
{
  if (!moe)
    return op->node == PN_NODE_MLP ? PN_CUDA_GRAPH_MLP : PN_CUDA_GRAPH_ATTN;
  if (op->node != PN_NODE_ATTN || op->side)
    return PN_CUDA_GRAPH_MOE;
  if (g_str_has_prefix(op->name, "permute"))
    return PN_CUDA_GRAPH_MOE_PREPROCESS;
  static const char *const router[] = {"ln2", "residual_grad_add2", "router", "shared_"};
  for (gsize i = 0; i < G_N_ELEMENTS(router); i++)
    if (g_str_has_prefix(op->name, router[i]))
      return PN_CUDA_GRAPH_MOE_ROUTER;
  return PN_CUDA_GRAPH_ATTN;
}

bool pn__graphs_capture_op(const PnBuilder *b, const PnOp *op)
{
  uint32_t scope = b->plan->cuda_graph_modules;
  switch (b->plan->cuda_graph_impl) {
  case PN_CUDA_GRAPH_IMPL_NONE:
    return false;
  case PN_CUDA_GRAPH_IMPL_FULL_ITERATION:
    return true;
  default:
    return scope == 0 || (scope & op_module(op, pn_workload_is_moe(b->sc))) != 0;
  }
}

/* Label -> region key (0: eager) of every op of a layer, forward, backward and recompute. A
 * template entry carries its op's name as label; the few entries the builder adds itself (a
 * userbuffers reduction) have other labels and belong to the op before them. */
static GHashTable *region_keys(const PnBuilder *b)
{
  GHashTable *keys      = g_hash_table_new(g_str_hash, g_str_equal);
  bool moe              = pn_workload_is_moe(b->sc);
  uint32_t scope        = b->plan->cuda_graph_modules;
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(PnOp));
  pn_workload_layer_ops(b->sc, PN_PHASE_FWD, ops);
  pn_workload_layer_ops(b->sc, PN_PHASE_BWD, ops);
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *op = &g_array_index(ops, PnOp, i);
    uint32_t m     = op_module(op, moe);
    uint32_t key   = scope == 0 ? WHOLE_LAYER : (scope & m);
    g_hash_table_insert(keys, (gpointer)op->name, GUINT_TO_POINTER(key));
  }
  return keys;
}

static double host_sum(const GArray *tpl)
{
  double s = 0.0;
  for (guint i = 0; i < tpl->len; i++)
    s += (double)g_array_index(tpl, PnTplEntry, i).task.host_ns;
  return s;
}

/* Captures the regions of `tpl` (a layer's forward or backward, or a part of one): each costs
 * `replay_ns` times its share of `layer_host_ns`, the eager host cost of the whole layer. */
static void capture_regions(GArray *tpl, GHashTable *keys, double replay_ns, double layer_host_ns)
{
  uint32_t key = 0, region = 0;
  guint first  = 0;
  double eager = 0.0;
  for (guint i = 0; i <= tpl->len; i++) {
    PnTask *t = i < tpl->len ? &g_array_index(tpl, PnTplEntry, i).task : NULL;
    gpointer k;
    if (t && g_hash_table_lookup_extended(keys, t->label, NULL, &k))
      key = GPOINTER_TO_UINT(k);
    if (region != 0 && (t == NULL || key != region)) { /* the region [first, i) ends */
      double share                                       = layer_host_ns > 0.0 ? eager / layer_host_ns : 0.0;
      g_array_index(tpl, PnTplEntry, first).task.host_ns = (float)(replay_ns * share);
    }
    if (t == NULL)
      break;
    if (key != region) {
      region = key;
      first  = i;
      eager  = 0.0;
    }
    if (key != 0) {
      eager += (double)t->host_ns;
      t->host_ns = 0.0f;
      t->graphed = 1;
    }
  }
}

static void capture_whole(GArray *tpl)
{
  for (guint i = 0; tpl && i < tpl->len; i++) {
    PnTask *t  = &g_array_index(tpl, PnTplEntry, i).task;
    t->host_ns = 0.0f;
    t->graphed = 1;
  }
}

void pn__graphs_capture_templates(PnBuilder *b)
{
  PnTemplates *tp = &b->tpl;
  if (b->plan->cuda_graph_impl == PN_CUDA_GRAPH_IMPL_FULL_ITERATION) {
    GArray *all[] = {tp->layer_fwd, tp->layer_bwd, tp->layer_bwd_plain, tp->emb_fwd, tp->emb_bwd,
                     tp->head_fwd,  tp->head_bwd,  tp->attn_dw,         tp->mlp_dw};
    for (gsize i = 0; i < G_N_ELEMENTS(all); i++)
      capture_whole(all[i]);
    for (int n = 0; n < PN_NODE_N; n++) {
      capture_whole(tp->node_fwd[n]);
      capture_whole(tp->node_bwd[n]);
    }
    return;
  }
  if (b->plan->cuda_graph_impl == PN_CUDA_GRAPH_IMPL_NONE)
    return;
  const PnHostProfile *host  = &b->sc->hw->host;
  g_autoptr(GHashTable) keys = region_keys(b);
  double fwd_ns = host_sum(tp->layer_fwd), bwd_ns = host_sum(tp->layer_bwd);
  double plain_ns = host_sum(tp->layer_bwd_plain);
  for (int n = 0; n < PN_NODE_N; n++) {
    if (tp->node_fwd[n])
      capture_regions(tp->node_fwd[n], keys, host->graph_layer_fwd_ns, fwd_ns);
    if (tp->node_bwd[n])
      capture_regions(tp->node_bwd[n], keys, host->graph_layer_bwd_ns, bwd_ns);
  }
  if (tp->attn_dw)
    capture_regions(tp->attn_dw, keys, host->graph_layer_bwd_ns, bwd_ns);
  if (tp->mlp_dw)
    capture_regions(tp->mlp_dw, keys, host->graph_layer_bwd_ns, bwd_ns);
  capture_regions(tp->layer_fwd, keys, host->graph_layer_fwd_ns, fwd_ns);
  capture_regions(tp->layer_bwd, keys, host->graph_layer_bwd_ns, bwd_ns);
  capture_regions(tp->layer_bwd_plain, keys, host->graph_layer_bwd_ns, plain_ns);
}

void pn__graphs_capture_iteration(PnBuilder *b, PnTaskId first)
{
  if (b->plan->cuda_graph_impl != PN_CUDA_GRAPH_IMPL_FULL_ITERATION)
    return;
  g_autofree bool *replayed = g_new0(bool, b->pp);
  for (PnTaskId id = first; id < pn_graph_n_tasks(b->g); id++) {
    PnTask *t = pn_graph_task(b->g, id);
    /* the first parameter all-gathers, launched by optimizer.zero_grad() before the replay */
    if (!replayed[t->gpu] && t->phase == PN_PHASE_OPTIM)
      continue;
    t->graphed       = 1;
    t->host_sync     = PN_HOST_SYNC_NONE;
    t->host_ns       = replayed[t->gpu] ? 0.0f : (float)b->sc->hw->host.graph_launch_ns;
    replayed[t->gpu] = true;
  }
}
