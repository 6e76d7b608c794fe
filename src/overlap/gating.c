/* gating.c — Megatron-Bridge CommOverlapConfig defaults and gating, Megatron-Core checks. */
#include "overlap/gating.h"

#include <stdarg.h>

#include "overlap/ub.h"

G_DEFINE_QUARK(pn - overlap - error - quark, pn_overlap_error)

static void warn(GPtrArray *warnings, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void warn(GPtrArray *warnings, const char *fmt, ...)
{
  if (!warnings)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_ptr_array_add(warnings, g_strdup_vprintf(fmt, ap));
  va_end(ap);
}

static bool tri_or(PnTri t, bool dflt) { return t == PN_TRI_UNSET ? dflt : t == PN_TRI_TRUE; }

/* A hard failure: "<scenario>: <JSON pointer of the option>: <violated invariant>". */
static gboolean fail(GError **error, const PnScenario *sc, const char *ptr, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static gboolean fail(GError **error, const PnScenario *sc, const char *ptr, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, PN_OVERLAP_ERROR, PN_OVERLAP_ERROR_INVALID, "%s: %s: %s", sc->path, ptr, msg);
  return FALSE;
}

#define I64 "%" G_GINT64_FORMAT

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
    return fail(error, sc, ptr,
                "requires /parallel/expert_model_parallel_size > 1, got " I64 " (overlap_moe_expert_parallel_comm is "
                "only supported when expert_model_parallel_size > 1)",
                par->expert_model_parallel_size);
  if (m->num_moe_experts <= 1)
    return fail(error, sc, ptr,
                "requires /model/num_moe_experts > 1, got " I64 " (overlap_moe_expert_parallel_comm is only supported "
                "when num_moe_experts > 1)",
                m->num_moe_experts);
  if (par->moe_token_dispatcher_type != PN_MOE_DISPATCHER_ALLTOALL &&
      par->moe_token_dispatcher_type != PN_MOE_DISPATCHER_FLEX)
    return fail(error, sc, ptr,
                "requires /parallel/moe_token_dispatcher_type \"alltoall\" or \"flex\", got \"%s\" "
                "(overlap_moe_expert_parallel_comm is only supported when moe_token_dispatcher_type == 'alltoall' or "
                "'flex')",
                dispatchers[par->moe_token_dispatcher_type]);
  if (par->pipeline_model_parallel_size > 1 && par->virtual_pipeline_model_parallel_size <= 1)
    return fail(error, sc, ptr,
                "requires /parallel/virtual_pipeline_model_parallel_size > 1 with pipeline_model_parallel_size " I64
                " (If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
                "pipeline_model_parallel_size > 1)",
                par->pipeline_model_parallel_size);
  if (rc->recompute_granularity == PN_RECOMPUTE_FULL)
    return fail(error, sc, ptr,
                "requires /recompute/recompute_granularity other than \"full\" (disable full recomputation when "
                "enabling overlap_moe_expert_parallel_comm)");
  if (rc->recompute_num_layers > 0)
    return fail(error, sc, ptr,
                "requires /recompute/recompute_num_layers null, got " I64 " (recompute_num_layers must be None when "
                "enabling overlap_moe_expert_parallel_comm)",
                rc->recompute_num_layers);
  if (rc->recompute_modules & PN_RECOMPUTE_MODULE_MOE)
    return fail(error, sc, ptr,
                "requires \"moe\" not in /recompute/recompute_modules (disable moe in recompute_modules when "
                "enabling overlap_moe_expert_parallel_comm)");
  if (sc->comm_overlap.moe_shared_expert_overlap)
    return fail(error, sc, ptr,
                "requires /comm_overlap/moe_shared_expert_overlap false (disable moe_shared_expert_overlap when "
                "enabling overlap_moe_expert_parallel_comm)");
  if (m->mtp_num_layers > 1)
    return fail(error, sc, ptr,
                "requires /model/mtp_num_layers null, 0 or 1, got " I64 " (MTP supports at most one layer when "
                "enabling overlap_moe_expert_parallel_comm.)",
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
  if (sc->ddp.overlap_grad_reduce == PN_TRI_TRUE && !te)
    return fail(error, sc, ptr,
                "requires Transformer Engine >= 2.7.0 with /ddp/overlap_grad_reduce true, but "
                "/comm_overlap/transformer_engine is false");
  if (tr->gradient_accumulation_fusion && !te)
    return fail(error, sc, ptr,
                "requires Transformer Engine >= 2.7.0 with /training/gradient_accumulation_fusion true, but "
                "/comm_overlap/transformer_engine is false");
  if (!sc->comm_overlap.overlap_moe_expert_parallel_comm)
    return fail(error, sc, ptr,
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
    return fail(error, sc, ptr,
                "requires Transformer Engine >= 2.12.0 with /training/cuda_graph_modules capturing the wgrad, but "
                "/comm_overlap/transformer_engine is false (CUDA graph with delay_wgrad_compute requires TE version "
                ">= 2.12.0.)");
  if (!tr->gradient_accumulation_fusion)
    return fail(error, sc, ptr,
                "requires /training/gradient_accumulation_fusion true when /training/cuda_graph_modules captures the "
                "wgrad (CUDA graph with delay_wgrad_compute requires gradient_accumulation_fusion to be enabled. "
                "This is because default gradient accumulation does not use static memory addresses, which breaks "
                "CUDA graph requirements.)");
  if (attn_scope && (m->add_bias_linear || m->add_qkv_bias))
    return fail(error, sc, ptr,
                "requires /model/add_bias_linear and /model/add_qkv_bias false when /training/cuda_graph_modules "
                "contains \"attn\", got %s (CUDA graph with delay_wgrad_compute does not support attention bias "
                "for now.)",
                m->add_bias_linear ? "add_bias_linear true" : "add_qkv_bias true");
  return TRUE;
}

gboolean pn_overlap_resolve(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnParallelConfig *par   = &sc->parallel;
  const PnDdpConfig *ddp        = &sc->ddp;
  const PnCommOverlapConfig *co = &sc->comm_overlap;
  *plan                         = (PnPlan){0};
  int64_t dp_cp                 = par->data_parallel_size * par->context_parallel_size;

  /* TP: _get_model_comm_overlap_cfgs, checked in this order. */
  bool tp_overlap = co->tp_comm_overlap == PN_TRI_TRUE;
  if (tp_overlap && par->tensor_model_parallel_size < 2) {
    warn(warnings, "Disabling tensor parallel communication overlap due to TP size < 2.");
    tp_overlap = false;
  } else if (tp_overlap && !par->sequence_parallel) {
    warn(warnings, "Disabling tensor parallel communication overlap due to sequence_parallel=False.");
    tp_overlap = false;
  } else if (tp_overlap && !co->transformer_engine) {
    warn(warnings, "Disabling tensor parallel communication overlap due to TE not detected.");
    tp_overlap = false;
  }
  plan->tp_comm_overlap = tp_overlap;
  if (tp_overlap) {
    const char *preset = co->tp_comm_overlap_cfg;
    if (preset[0] == '\0') {
      warn(warnings, "Tensor parallel overlap: No overlap config provided. Initializing TP comm overlap with the "
                     "default config.");
      pn_ub_defaults(plan->ub);
    } else if (!pn_ub_preset(preset, plan->ub)) {
      g_autoptr(GString) names = g_string_new(NULL);
      pn_ub_preset_names(names);
      g_set_error(error, PN_OVERLAP_ERROR, PN_OVERLAP_ERROR_INVALID,
                  "%s: /comm_overlap/tp_comm_overlap_cfg: unknown userbuffers preset \"%s\" (known: %s)", sc->path,
                  preset, names->str);
      return FALSE;
    }
  }

  /* PP: Bridge defaults from PP/VPP, user values win. */
  bool vpp           = par->virtual_pipeline_model_parallel_size > 1;
  bool d_overlap_p2p = false, d_batch_p2p = false;
  if (par->pipeline_model_parallel_size > 1) {
    d_overlap_p2p = vpp;
    d_batch_p2p   = !vpp;
  }
  plan->overlap_p2p_comm = tri_or(co->overlap_p2p_comm, d_overlap_p2p);
  plan->batch_p2p_comm   = tri_or(co->batch_p2p_comm, d_batch_p2p);
  /* Megatron-Core: overlap_p2p_comm is turned off without interleaving (arguments.py). */
  if (plan->overlap_p2p_comm && !vpp) {
    if (co->overlap_p2p_comm == PN_TRI_TRUE && par->pipeline_model_parallel_size > 1)
      warn(warnings, "overlap_p2p_comm=True has no effect without virtual pipeline parallelism: Megatron-Core turns it "
                     "off and runs blocking P2P");
    plan->overlap_p2p_comm = false;
  }
  if (plan->overlap_p2p_comm && plan->batch_p2p_comm) {
    warn(warnings, "batch_p2p_comm=True cannot be combined with overlap_p2p_comm (Megatron-Core raises ValueError); "
                   "simulating batch_p2p_comm=False");
    plan->batch_p2p_comm = false;
  }
  plan->overlap_p2p_comm_warmup_flush = co->overlap_p2p_comm_warmup_flush;
  if (plan->overlap_p2p_comm_warmup_flush && (!plan->overlap_p2p_comm || plan->batch_p2p_comm)) {
    warn(warnings, "overlap_p2p_comm_warmup_flush requires overlap_p2p_comm=True and batch_p2p_comm=False; ignored");
    plan->overlap_p2p_comm_warmup_flush = false;
  }

  /* EP: Bridge asserts Megatron-Core's invariants when the user asks for the overlaps. */
  if (co->overlap_moe_expert_parallel_comm && !check_moe_ep_overlap(sc, error))
    return FALSE;
  if (co->delay_wgrad_compute && !check_delay_wgrad(sc, error))
    return FALSE;
  plan->overlap_moe_expert_parallel_comm = co->overlap_moe_expert_parallel_comm;
  plan->delay_wgrad_compute              = co->delay_wgrad_compute;
  if (plan->overlap_moe_expert_parallel_comm && sc->env.cuda_device_max_connections == 1)
    warn(warnings, "overlap_moe_expert_parallel_comm with CUDA_DEVICE_MAX_CONNECTIONS=1: every stream feeds one "
                   "hardware queue, so the expert all-to-all of one micro-batch waits behind the other's kernels "
                   "(Megatron-LM warns; recipes use 8 or 32)");

  /* DP: _get_optimizer_overlap_cfgs applies only with the distributed optimizer (setup()). */
  plan->use_distributed_optimizer = ddp->use_distributed_optimizer;
  bool bridge_dp_defaults         = par->data_parallel_size > 1 && ddp->use_distributed_optimizer;
  int64_t d_bucket                = 0;
  if (bridge_dp_defaults)
    d_bucket = 128LL * 1024 * 1024;
  plan->overlap_grad_reduce  = tri_or(ddp->overlap_grad_reduce, bridge_dp_defaults);
  plan->overlap_param_gather = tri_or(ddp->overlap_param_gather, bridge_dp_defaults);
  plan->align_param_gather =
      tri_or(ddp->align_param_gather, bridge_dp_defaults && vpp && par->pipeline_model_parallel_size > 1);
  if (plan->overlap_param_gather && !ddp->use_distributed_optimizer) {
    warn(warnings, "overlap_param_gather requires use_distributed_optimizer (Megatron-Core asserts); turned off");
    plan->overlap_param_gather = false;
  }
  if (plan->overlap_param_gather && !plan->overlap_grad_reduce) {
    warn(warnings, "overlap_param_gather requires overlap_grad_reduce (Megatron-Core asserts); turned off");
    plan->overlap_param_gather = false;
  }
  if (plan->align_param_gather && !vpp) {
    plan->align_param_gather = false; /* forced off without VPP (arguments.py), silently harmless */
  }
  /* Bridge keeps it off ("an issue with checkpointing"); Megatron-LM asserts its requirements. */
  plan->overlap_param_gather_with_optimizer_step = ddp->overlap_param_gather_with_optimizer_step == PN_TRI_TRUE;
  if (plan->overlap_param_gather_with_optimizer_step) {
    static const char ptr[] = "/ddp/overlap_param_gather_with_optimizer_step";
    if (!ddp->use_distributed_optimizer)
      return fail(error, sc, ptr, "requires /ddp/use_distributed_optimizer true");
    if (!plan->overlap_param_gather)
      return fail(error, sc, ptr, "requires /ddp/overlap_param_gather true");
    if (!vpp)
      return fail(error, sc, ptr,
                  "requires interleaving (/parallel/virtual_pipeline_model_parallel_size > 1), got " I64,
                  par->virtual_pipeline_model_parallel_size);
    warn(warnings, "overlap_param_gather_with_optimizer_step is not simulated yet: the parameter all-gathers run as "
                   "with overlap_param_gather alone");
  }
  if (dp_cp <= 1 && (plan->overlap_grad_reduce || plan->overlap_param_gather)) {
    if (ddp->overlap_grad_reduce == PN_TRI_TRUE || ddp->overlap_param_gather == PN_TRI_TRUE)
      warn(warnings, "DP overlap requested with a data-parallel group of 1: there is no DP communication");
    plan->overlap_grad_reduce = plan->overlap_param_gather = false;
  }
  int64_t bucket = ddp->bucket_size > 0 ? ddp->bucket_size : d_bucket;
  if (bucket <= 0) {
    bucket = 40000000;
    if (1000000 * dp_cp > bucket)
      bucket = 1000000 * dp_cp;
  }
  if (!plan->overlap_grad_reduce)
    bucket = 0; /* Megatron-Core: bucket_size=None (one bucket) without overlap_grad_reduce */
  plan->bucket_size          = bucket;
  plan->grad_bytes_per_elem  = ddp->grad_reduce_in_fp32 ? 4.0 : 2.0;
  plan->param_bytes_per_elem = (ddp->fp8_param_gather && sc->training.precision == PN_PREC_FP8) ? 1.0 : 2.0;
  if (ddp->fp8_param_gather && sc->training.precision != PN_PREC_FP8)
    warn(warnings, "fp8_param_gather has no effect when training.precision is not fp8");

  /* Megatron-LM PR #4268 (unmerged) acts inside the combined 1F1B schedule only. */
  bool pr4268 = co->overlap_p2p_backward_on_comm_stream || co->overlap_p2p_with_transformer_layer_wgrad ||
                co->overlap_p2p_wgrad_delayed_layer_number > 1;
  if (pr4268 && !plan->overlap_moe_expert_parallel_comm)
    warn(warnings, "overlap_p2p_backward_on_comm_stream / overlap_p2p_wgrad_delayed_layer_number / "
                   "overlap_p2p_with_transformer_layer_wgrad act inside the fine-grained EP-overlap (combined 1F1B) "
                   "schedule of Megatron-LM PR #4268 (unmerged); ignored without overlap_moe_expert_parallel_comm");
  else if (pr4268)
    warn(warnings, "overlap_p2p_backward_on_comm_stream / overlap_p2p_wgrad_delayed_layer_number / "
                   "overlap_p2p_with_transformer_layer_wgrad are Megatron-LM PR #4268, not merged upstream: simulated "
                   "as its description says");
  plan->p2p_backward_on_comm_stream = plan->overlap_moe_expert_parallel_comm && co->overlap_p2p_backward_on_comm_stream;
  plan->p2p_wgrad_delayed_layers =
      plan->overlap_moe_expert_parallel_comm ? MAX(co->overlap_p2p_wgrad_delayed_layer_number, 1) : 1;
  plan->p2p_delay_mlp_wgrad = plan->overlap_moe_expert_parallel_comm && co->overlap_p2p_with_transformer_layer_wgrad;
  if (sc->env.nccl_nvls_enable)
    warn(warnings, "NCCL_NVLS_ENABLE=1: NVLink SHARP (NVLS) collectives are not simulated (they could not be measured "
                   "here); collectives are priced as NCCL ring/tree");
  plan->cp_comm_type     = co->cp_comm_type;
  plan->max_connections  = sc->env.cuda_device_max_connections > 0 ? sc->env.cuda_device_max_connections : 8;
  plan->nccl_min_ctas    = sc->env.nccl_min_ctas;
  plan->nccl_max_ctas    = sc->env.nccl_max_ctas;
  plan->fwd_ln_sm_margin = sc->env.nvte_fwd_layernorm_sm_margin;
  plan->bwd_ln_sm_margin = sc->env.nvte_bwd_layernorm_sm_margin;
  /* Megatron-LM only warns (EP overlap prefers more connections) with overlap_moe_expert_parallel_comm */
  if (plan->max_connections != 1 && (par->tensor_model_parallel_size > 1 || par->context_parallel_size > 1) &&
      !plan->overlap_moe_expert_parallel_comm)
    warn(warnings, "CUDA_DEVICE_MAX_CONNECTIONS=%d with TP or CP > 1: Megatron-LM asserts it is 1 on Hopper",
         plan->max_connections);
  return TRUE;
}
