/* graphs.c — CUDA graphs: what Megatron-Core requires of training.cuda_graph_impl and
 * training.cuda_graph_modules, and what it excludes. Megatron raises where a scope cannot be
 * captured; penumbra warns, one line naming the key and the reason, and runs what Megatron would
 * accept: the scope narrowed, or the graphs off. Sources (Megatron-LM): transformer_config.py
 * TransformerConfig.__post_init__ (~2793-2960), training/arguments.py, full_cuda_graph.py.
 *
 * check_for_nan_in_loss_and_grad must be off with full_iteration (arguments.py ~1235: its host
 * syncs inside the forward and backward cannot be captured): warned, and taken as off (the
 * loss's host read is left out, workload/ops.c).
 *
 * Megatron-FSDP takes none or full_iteration (mcore_fsdp_adapter.py asserts).
 *
 * Not checked, for want of a scenario key: CPU offloading (refused with every impl but
 * full_iteration), hybrid CP. */
#include "overlap/overlap-private.h"

static const char *const impl_names[] = {"none", "local", "transformer_engine", "full_iteration"};

static void warn_off(GPtrArray *warnings, const PnScenario *sc, const char *why)
{
  pn__overlap_warn(warnings, "%s: /training/cuda_graph_impl: \"%s\" %s: CUDA graphs off", sc->path,
                   impl_names[sc->training.cuda_graph_impl], why);
}

/* The per-layer scopes Megatron-Core accepts for this model. penumbra's MoE is dropless (no
 * capacity factor, no padding to capacity), so the MoE layer's dispatch and experts stay eager
 * ('moe cuda graph is only supported with drop-padding MoE.'): only moe_router and
 * moe_preprocess are captured there, which Megatron-Bridge's recipes use for dropless MoE
 * (qwen3_moe.py). Returns the scope, 0 for the whole (dense) layer; sets *none when nothing the
 * user asked for can be captured. */
static uint32_t layer_scope(const PnScenario *sc, GPtrArray *warnings, bool *none)
{
  static const char ptr[] = "/training/cuda_graph_modules";
  uint32_t asked = sc->training.cuda_graph_modules, mods = asked;
  bool moe                = sc->model.num_moe_experts > 0;
  const uint32_t moe_bits = PN_CUDA_GRAPH_MOE | PN_CUDA_GRAPH_MOE_ROUTER | PN_CUDA_GRAPH_MOE_PREPROCESS;
  if (mods & PN_CUDA_GRAPH_MAMBA) {
    pn__overlap_warn(warnings, "%s: %s: \"mamba\" ignored: the model has no Mamba layers", sc->path, ptr);
    mods &= ~(uint32_t)PN_CUDA_GRAPH_MAMBA;
  }
  if (!moe && (mods & moe_bits)) {
    pn__overlap_warn(warnings,
                     "%s: %s: \"moe\", \"moe_router\", \"moe_preprocess\" ignored on a dense model "
                     "(Megatron-Core: moe cuda graph is only supported for MoE.)",
                     sc->path, ptr);
    mods &= ~moe_bits;
  }
  if (moe && (mods & PN_CUDA_GRAPH_MLP)) {
    pn__overlap_warn(warnings,
                     "%s: %s: \"mlp\" ignored: every layer is MoE (Megatron-Core: mlp cuda graph is only "
                     "supported for dense layers, but not found in the model.)",
                     sc->path, ptr);
    mods &= ~(uint32_t)PN_CUDA_GRAPH_MLP;
  }
  if (moe && (mods == 0 || (mods & PN_CUDA_GRAPH_MOE))) {
    pn__overlap_warn(warnings,
                     "%s: %s: %s: the dispatch and experts of a dropless MoE stay eager, moe_router and "
                     "moe_preprocess are captured (Megatron-Core: moe cuda graph is only supported with "
                     "drop-padding MoE.)",
                     sc->path, ptr, mods == 0 ? "the whole layer" : "\"moe\"");
    mods = (mods == 0 ? PN_CUDA_GRAPH_ATTN : mods & ~(uint32_t)PN_CUDA_GRAPH_MOE) | PN_CUDA_GRAPH_MOE_ROUTER |
           PN_CUDA_GRAPH_MOE_PREPROCESS;
  }
  if ((mods & PN_CUDA_GRAPH_MOE_PREPROCESS) && !(mods & PN_CUDA_GRAPH_MOE_ROUTER)) {
    pn__overlap_warn(warnings,
                     "%s: %s: \"moe_router\" added (Megatron-Core: moe_preprocess cuda graph is only "
                     "supported with moe_router cuda graph.)",
                     sc->path, ptr);
    mods |= PN_CUDA_GRAPH_MOE_ROUTER;
  }
  *none = asked != 0 && mods == 0;
  return mods;
}

gboolean pn__overlap_gate_cuda_graphs(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  (void)error;
  const PnTrainingConfig *tr = &sc->training;
  plan->cuda_graph_impl      = PN_CUDA_GRAPH_IMPL_NONE;
  plan->cuda_graph_modules   = 0;
  if (tr->cuda_graph_impl == PN_CUDA_GRAPH_IMPL_NONE)
    return TRUE;
  bool full = tr->cuda_graph_impl == PN_CUDA_GRAPH_IMPL_FULL_ITERATION;
  if (!full && plan->fsdp) {
    warn_off(warnings, sc,
             "with /ddp/use_megatron_fsdp (Megatron-FSDP: cuda_graph_impl must be \"none\" or "
             "\"full_iteration\")");
    return TRUE;
  }
  if (tr->cuda_graph_impl == PN_CUDA_GRAPH_IMPL_TE && !sc->comm_overlap.transformer_engine) {
    warn_off(warnings, sc,
             "needs Transformer Engine's make_graphed_callables, but /comm_overlap/transformer_engine "
             "is false");
    return TRUE;
  }
  if (!full && sc->recompute.recompute_granularity == PN_RECOMPUTE_FULL) {
    warn_off(warnings, sc,
             "with /recompute/recompute_granularity \"full\" (Megatron-Core: full recompute is only "
             "supported with full iteration CUDA graph.)");
    return TRUE;
  }
  uint32_t mods = 0;
  if (full && tr->check_for_nan_in_loss_and_grad)
    pn__overlap_warn(warnings,
                     "%s: /training/check_for_nan_in_loss_and_grad: taken as false, the whole iteration is "
                     "captured (Megatron-LM: \"--no-check-for-nan-in-loss-and-grad should be set with "
                     "--cuda-graph-impl=full_iteration for training.\")",
                     sc->path);
  if (full && tr->cuda_graph_modules != 0)
    pn__overlap_warn(warnings,
                     "%s: /training/cuda_graph_modules: ignored, the whole iteration is captured "
                     "(Megatron-Core: cuda_graph_modules must be empty when cuda_graph_impl=\"full_iteration\".)",
                     sc->path);
  /* [derived; Megatron has no explicit check] every dispatcher reads the routing's token counts on
   * the host (alltoall: a device-to-host copy it synchronizes on; flex: DeepEP, "not compatible
   * with CUDA graph"), which no graph captured whole can hold */
  if (full && sc->model.num_moe_experts > 0) {
    warn_off(warnings, sc,
             "with a dropless MoE: the dispatcher's host synchronization on the token counts "
             "cannot be captured");
    return TRUE;
  }
  if (!full) {
    bool none;
    mods = layer_scope(sc, warnings, &none);
    if (none) {
      warn_off(warnings, sc, "with nothing in /training/cuda_graph_modules that this model can capture");
      return TRUE;
    }
  }
  plan->cuda_graph_impl    = tr->cuda_graph_impl;
  plan->cuda_graph_modules = mods;
  return TRUE;
}
