/* ep.c — expert parallelism: Megatron-Core's moe_shared_expert_overlap checks, the
 * overlap_moe_expert_parallel_comm and delay_wgrad_compute invariants Megatron-Bridge asserts
 * (copies of Megatron-Core's), and the flags of Megatron-LM PR #4268 that act inside the combined
 * 1F1B schedule (see gating.h). */
#include "overlap/overlap-private.h"

/* Megatron-Core's moe_shared_expert_overlap checks (TransformerConfig.__post_init__ and the MoE
 * layer), made when the model is configured, before Bridge's: hence first in the registry. */
gboolean pn__overlap_gate_shared_expert(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  (void)plan;
  const PnModelConfig *m = &sc->model;
  if (m->num_moe_experts == 0 || !sc->comm_overlap.moe_shared_expert_overlap)
    return TRUE;
  if (sc->parallel.moe_token_dispatcher_type == PN_MOE_DISPATCHER_ALLGATHER)
    return pn__overlap_fail(
        error, sc, "/comm_overlap/moe_shared_expert_overlap",
        "expected false with the \"allgather\" dispatcher (Megatron-Core: moe_shared_expert_overlap "
        "only works with alltoall or flex token dispatcher)");
  if (m->moe_shared_expert_intermediate_size == 0)
    pn__overlap_warn(warnings,
                     "%s: /comm_overlap/moe_shared_expert_overlap: has no effect without shared experts "
                     "(moe_shared_expert_intermediate_size is 0)",
                     sc->path);
  if ((sc->recompute.recompute_modules & PN_RECOMPUTE_MODULE_SHARED_EXPERTS) &&
      sc->recompute.recompute_granularity == PN_RECOMPUTE_SELECTIVE)
    return pn__overlap_fail(error, sc, "/recompute/recompute_modules",
                            "\"shared_experts\" recompute cannot work with moe_shared_expert_overlap (Megatron-Core)");
  return TRUE;
}

/* Megatron-Bridge _get_model_comm_overlap_cfgs: the overlap_moe_expert_parallel_comm assertions
 * (a copy of Megatron-Core TransformerConfig.__post_init__'s), in Bridge's order. Each message
 * ends with Bridge's own assertion text. Two of Bridge's checks cannot fail here: "bf16 or
 * fp16" (penumbra's precisions are bf16 and fp8, and Megatron runs fp8 with bf16=True), and
 * torch >= 2.6 (assumed). recompute_method must be None: penumbra only reads it under full
 * recompute, which the check before it already refuses. */
static gboolean check_moe_ep_overlap(const PnScenario *sc, GError **error)
{
  static const char ptr[]                = "/comm_overlap/overlap_moe_expert_parallel_comm";
  static const char *const dispatchers[] = {"allgather", "alltoall", "flex"};
  const PnParallelConfig *par            = &sc->parallel;
  const PnModelConfig *m                 = &sc->model;
  const PnRecomputeConfig *rc            = &sc->recompute;
  if (par->expert_model_parallel_size <= 1)
    return pn__overlap_fail(error, sc, ptr,
                            "requires /parallel/expert_model_parallel_size > 1, got " I64
                            " (overlap_moe_expert_parallel_comm is only supported when expert_model_parallel_size > 1)",
                            par->expert_model_parallel_size);
  if (m->num_moe_experts <= 1)
    return pn__overlap_fail(error, sc, ptr,
                            "requires /model/num_moe_experts > 1, got " I64
                            " (overlap_moe_expert_parallel_comm is only supported when num_moe_experts > 1)",
                            m->num_moe_experts);
  if (par->moe_token_dispatcher_type != PN_MOE_DISPATCHER_ALLTOALL &&
      par->moe_token_dispatcher_type != PN_MOE_DISPATCHER_FLEX)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires /parallel/moe_token_dispatcher_type \"alltoall\" or \"flex\", got \"%s\" "
        "(overlap_moe_expert_parallel_comm is only supported when moe_token_dispatcher_type == 'alltoall' or "
        "'flex')",
        dispatchers[par->moe_token_dispatcher_type]);
  if (par->pipeline_model_parallel_size > 1 && par->virtual_pipeline_model_parallel_size <= 1)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires /parallel/virtual_pipeline_model_parallel_size > 1 with pipeline_model_parallel_size " I64
        " (If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
        "pipeline_model_parallel_size > 1)",
        par->pipeline_model_parallel_size);
  if (rc->recompute_granularity == PN_RECOMPUTE_FULL)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires /recompute/recompute_granularity other than \"full\" (disable full recomputation when "
        "enabling overlap_moe_expert_parallel_comm)");
  if (rc->recompute_num_layers > 0)
    return pn__overlap_fail(error, sc, ptr,
                            "requires /recompute/recompute_num_layers null, got " I64
                            " (recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm)",
                            rc->recompute_num_layers);
  if (rc->recompute_modules & PN_RECOMPUTE_MODULE_MOE)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires \"moe\" not in /recompute/recompute_modules (disable moe in recompute_modules when "
        "enabling overlap_moe_expert_parallel_comm)");
  if (sc->comm_overlap.moe_shared_expert_overlap)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires /comm_overlap/moe_shared_expert_overlap false (disable moe_shared_expert_overlap when "
        "enabling overlap_moe_expert_parallel_comm)");
  if (m->mtp_num_layers > 1)
    return pn__overlap_fail(error, sc, ptr,
                            "requires /model/mtp_num_layers null, 0 or 1, got " I64
                            " (MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm.)",
                            m->mtp_num_layers);
  return TRUE;
}

/* Megatron-Bridge _get_model_comm_overlap_cfgs: the delay_wgrad_compute assertions. Bridge's
 * Transformer Engine version checks (>= 2.7 with overlap_grad_reduce or gradient accumulation
 * fusion, >= 2.12 with a CUDA graph around the wgrad) assume a recent TE when one is installed
 * and fail when comm_overlap.transformer_engine is false. Bridge accepts EP overlap from the
 * model config or the user's CommOverlapConfig; penumbra has the one scenario key. */
static gboolean check_delay_wgrad(const PnScenario *sc, GError **error)
{
  static const char ptr[]    = "/comm_overlap/delay_wgrad_compute";
  const PnTrainingConfig *tr = &sc->training;
  const PnModelConfig *m     = &sc->model;
  bool te                    = sc->comm_overlap.transformer_engine;
  if (tr->transformer_impl == PN_TRANSFORMER_IMPL_LOCAL)
    return pn__overlap_fail(error, sc, ptr,
                            "is only supported with /training/transformer_impl \"transformer_engine\" (Megatron-LM: "
                            "Delaying wgrad compute is only supported with transformer_engine implementation)");
  if (sc->ddp.overlap_grad_reduce == PN_TRI_TRUE && !te)
    return pn__overlap_fail(error, sc, ptr,
                            "requires Transformer Engine >= 2.7.0 with /ddp/overlap_grad_reduce true, but "
                            "/comm_overlap/transformer_engine is false");
  if (tr->gradient_accumulation_fusion && !te)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires Transformer Engine >= 2.7.0 with /training/gradient_accumulation_fusion true, but "
        "/comm_overlap/transformer_engine is false");
  if (!sc->comm_overlap.overlap_moe_expert_parallel_comm)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires /comm_overlap/overlap_moe_expert_parallel_comm true (overlap_moe_expert_parallel_comm is "
        "required for delay_wgrad_compute)");
  /* CUDA-graph scopes that capture a delayed wgrad: attention, or the router when a shared
   * expert runs in the same graph (moe_shared_expert_overlap off). */
  bool attn_scope   = (tr->cuda_graph_modules & PN_CUDA_GRAPH_ATTN) != 0;
  bool router_scope = (tr->cuda_graph_modules & PN_CUDA_GRAPH_MOE_ROUTER) != 0 &&
                      m->moe_shared_expert_intermediate_size > 0 && !sc->comm_overlap.moe_shared_expert_overlap;
  if (!attn_scope && !router_scope)
    return TRUE;
  if (!te)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires Transformer Engine >= 2.12.0 with /training/cuda_graph_modules capturing the wgrad, but "
        "/comm_overlap/transformer_engine is false (CUDA graph with delay_wgrad_compute requires TE version "
        ">= 2.12.0.)");
  if (!tr->gradient_accumulation_fusion)
    return pn__overlap_fail(
        error, sc, ptr,
        "requires /training/gradient_accumulation_fusion true when /training/cuda_graph_modules captures the "
        "wgrad (CUDA graph with delay_wgrad_compute requires gradient_accumulation_fusion to be enabled. "
        "This is because default gradient accumulation does not use static memory addresses, which breaks "
        "CUDA graph requirements.)");
  if (attn_scope && (m->add_bias_linear || m->add_qkv_bias))
    return pn__overlap_fail(
        error, sc, ptr,
        "requires /model/add_bias_linear and /model/add_qkv_bias false when /training/cuda_graph_modules "
        "contains \"attn\", got %s (CUDA graph with delay_wgrad_compute does not support attention bias "
        "for now.)",
        m->add_bias_linear ? "add_bias_linear true" : "add_qkv_bias true");
  return TRUE;
}

/* EP: Bridge asserts Megatron-Core's invariants when the user asks for the overlaps. */
gboolean pn__overlap_gate_moe_ep(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnCommOverlapConfig *co = &sc->comm_overlap;
  if (co->overlap_moe_expert_parallel_comm && !check_moe_ep_overlap(sc, error))
    return FALSE;
  plan->overlap_moe_expert_parallel_comm = co->overlap_moe_expert_parallel_comm;
  if (plan->overlap_moe_expert_parallel_comm && sc->env.cuda_device_max_connections == 1)
    pn__overlap_warn(warnings,
                     "overlap_moe_expert_parallel_comm with CUDA_DEVICE_MAX_CONNECTIONS=1: every stream feeds "
                     "one hardware queue, so the expert all-to-all of one micro-batch waits behind the "
                     "other's kernels (Megatron-LM warns; recipes use 8 or 32)");
  return TRUE;
}

gboolean pn__overlap_gate_delay_wgrad(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  (void)warnings;
  if (sc->comm_overlap.delay_wgrad_compute && !check_delay_wgrad(sc, error))
    return FALSE;
  plan->delay_wgrad_compute = sc->comm_overlap.delay_wgrad_compute;
  return TRUE;
}

/* Megatron-LM PR #4268 (unmerged) acts inside the combined 1F1B schedule only. Reads
 * plan->overlap_moe_expert_parallel_comm: gated after EP. */
gboolean pn__overlap_gate_pr4268(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  (void)error;
  const PnCommOverlapConfig *co = &sc->comm_overlap;
  bool pr4268 = co->overlap_p2p_backward_on_comm_stream || co->overlap_p2p_with_transformer_layer_wgrad ||
                co->overlap_p2p_wgrad_delayed_layer_number > 1;
  if (pr4268 && !plan->overlap_moe_expert_parallel_comm)
    pn__overlap_warn(warnings, "overlap_p2p_backward_on_comm_stream / overlap_p2p_wgrad_delayed_layer_number / "
                               "overlap_p2p_with_transformer_layer_wgrad act inside the fine-grained EP-overlap "
                               "(combined 1F1B) schedule of Megatron-LM PR #4268 (unmerged); ignored without "
                               "overlap_moe_expert_parallel_comm");
  else if (pr4268)
    pn__overlap_warn(warnings, "overlap_p2p_backward_on_comm_stream / overlap_p2p_wgrad_delayed_layer_number / "
                               "overlap_p2p_with_transformer_layer_wgrad are Megatron-LM PR #4268, not merged "
                               "upstream: simulated as its description says");
  plan->p2p_backward_on_comm_stream = plan->overlap_moe_expert_parallel_comm && co->overlap_p2p_backward_on_comm_stream;
  plan->p2p_wgrad_delayed_layers =
      plan->overlap_moe_expert_parallel_comm ? MAX(co->overlap_p2p_wgrad_delayed_layer_number, 1) : 1;
  plan->p2p_delay_mlp_wgrad = plan->overlap_moe_expert_parallel_comm && co->overlap_p2p_with_transformer_layer_wgrad;
  return TRUE;
}
