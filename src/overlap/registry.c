/* registry.c — the overlap strategies (strategy.h) and pn_overlap_resolve, which runs their gates
 * in order (gating.h). */
#include "overlap/strategy.h"

#include "overlap/overlap-private.h"

GQuark pn_overlap_error_quark(void) { return g_quark_from_static_string("pn-overlap-error-quark"); }

/* ---- where a knob can act, and whether the plan runs it ---- */

static bool applies_dp(const PnScenario *sc)
{
  return sc->parallel.data_parallel_size * sc->parallel.context_parallel_size > 1;
}
/* Megatron-FSDP overlaps its reduce-scatter whenever it shards gradients (overlap/dp.c) */
static bool applies_grad(const PnScenario *sc)
{
  return applies_dp(sc) &&
         !(sc->ddp.use_megatron_fsdp && sc->ddp.data_parallel_sharding_strategy >= PN_FSDP_OPTIM_GRADS);
}
static bool applies_dist_opt(const PnScenario *sc)
{
  return applies_dp(sc) && sc->ddp.use_distributed_optimizer && !sc->ddp.use_megatron_fsdp;
}
/* the parameter all-gather overlap needs the gradient reduction's (Megatron-Core asserts): not a
 * knob of its own where the scenario turns that off */
static bool applies_param(const PnScenario *sc)
{
  return applies_dist_opt(sc) && sc->ddp.overlap_grad_reduce != PN_TRI_FALSE;
}
/* userbuffers are Transformer Engine's: Megatron-Core's local linear layers never use them */
static bool applies_tp(const PnScenario *sc)
{
  return sc->parallel.tensor_model_parallel_size > 1 && sc->parallel.sequence_parallel &&
         sc->training.transformer_impl == PN_TRANSFORMER_IMPL_TE;
}
/* Megatron-FSDP wherever there is a data-parallel group, but not beside the combined 1F1B of EP
 * overlap, whose per-micro-batch gathers are not simulated (overlap/dp.c refuses it) */
static bool applies_fsdp(const PnScenario *sc)
{
  return applies_dp(sc) && !sc->comm_overlap.overlap_moe_expert_parallel_comm;
}
static bool applies_vpp(const PnScenario *sc) { return sc->parallel.virtual_pipeline_model_parallel_size > 1; }
static bool applies_cp(const PnScenario *sc) { return sc->parallel.context_parallel_size > 1; }
/* EP overlap where Megatron accepts it: MoE with EP > 1, alltoall / flex, VPP when pipelined, no
 * full recompute (overlap/ep.c has the whole list and says why when it refuses) */
static bool applies_ep(const PnScenario *sc)
{
  const PnParallelConfig *p = &sc->parallel;
  return sc->model.num_moe_experts > 1 && p->expert_model_parallel_size > 1 &&
         p->moe_token_dispatcher_type != PN_MOE_DISPATCHER_ALLGATHER &&
         (p->pipeline_model_parallel_size == 1 || p->virtual_pipeline_model_parallel_size > 1) &&
         sc->recompute.recompute_granularity != PN_RECOMPUTE_FULL && !sc->comm_overlap.moe_shared_expert_overlap;
}
static bool applies_delay(const PnScenario *sc)
{
  return applies_ep(sc) && sc->comm_overlap.overlap_moe_expert_parallel_comm;
}
static bool applies_conn(const PnScenario *sc)
{
  return sc->parallel.tensor_model_parallel_size > 1 || applies_cp(sc) || applies_delay(sc);
}
/* CUDA graphs where Megatron-Core would capture something (overlap/graphs.c): the knob turns on
 * Transformer Engine's per-layer graphs, which need TE and exclude full recompute and
 * Megatron-FSDP */
static bool applies_graphs(const PnScenario *sc)
{
  return sc->comm_overlap.transformer_engine && sc->recompute.recompute_granularity != PN_RECOMPUTE_FULL &&
         !sc->ddp.use_megatron_fsdp;
}
static bool on_grad(const PnPlan *p) { return p->overlap_grad_reduce; }
static bool on_fsdp(const PnPlan *p) { return p->fsdp; }
static bool on_param(const PnPlan *p) { return p->overlap_param_gather; }
static bool on_tp(const PnPlan *p) { return p->tp_comm_overlap; }
static bool on_p2p(const PnPlan *p) { return p->overlap_p2p_comm; }
static bool on_cp(const PnPlan *p) { return p->cp_comm_type == PN_CP_P2P; }
static bool on_conn(const PnPlan *p) { return p->max_connections == 1; }
static bool on_ep(const PnPlan *p) { return p->overlap_moe_expert_parallel_comm; }
static bool on_delay(const PnPlan *p) { return p->delay_wgrad_compute; }
static bool on_graphs(const PnPlan *p) { return p->cuda_graph_impl != PN_CUDA_GRAPH_IMPL_NONE; }

/* ---- the registry ---- */

/* Gating order: Megatron-Core's model-configuration checks (shared experts), Megatron-Bridge's
 * _get_model_comm_overlap_cfgs (TP, PP, EP, delayed wgrad), Megatron-FSDP's rules (which decide
 * what the DP gate sees), Bridge's _get_optimizer_overlap_cfgs (DP); then what penumbra adds or
 * takes as given (PR #4268, NCCL, CP), and CUDA_DEVICE_MAX_CONNECTIONS after them because its
 * check reads the EP and FSDP results. CUDA graphs are Megatron-Core's TransformerConfig checks,
 * run after the others because no gate reads them (the delayed-wgrad check reads the raw scope,
 * as Bridge does). */
enum {
  SHARED_EXPERT,
  TP,
  P2P,
  MOE_EP,
  DELAY_WGRAD,
  FSDP,
  DP_GRAD,
  DP_PARAM,
  PR4268,
  NCCL,
  CP,
  CONNECTIONS,
  CUDA_GRAPHS,
  N_STRATEGIES
};

const PnOverlapStrategy pn_overlap_strategies[N_STRATEGIES] = {
    [SHARED_EXPERT] =
        {
            .name = "comm_overlap.moe_shared_expert_overlap",
            .keys = {"comm_overlap.moe_shared_expert_overlap"},
            .gate = pn__overlap_gate_shared_expert,
        },
    [TP] =
        {
            .name    = "comm_overlap.tp_comm_overlap",
            .keys    = {"comm_overlap.tp_comm_overlap", "comm_overlap.tp_comm_overlap_cfg",
                        "comm_overlap.transformer_engine", "env.UB_SKIPMC"},
            .gate    = pn__overlap_gate_tp,
            .applies = applies_tp,
            .is_on   = on_tp,
            .set_on  = {"comm_overlap.tp_comm_overlap=true"},
            .set_off = {"comm_overlap.tp_comm_overlap=false"},
        },
    /* defer_embedding_wgrad_compute (the output layer's wgrad in the pipeline flush) is accepted
     * and not simulated */
    [P2P] =
        {
            .name    = "comm_overlap.overlap_p2p_comm",
            .keys    = {"comm_overlap.overlap_p2p_comm", "comm_overlap.batch_p2p_comm",
                        "comm_overlap.overlap_p2p_comm_warmup_flush", "comm_overlap.defer_embedding_wgrad_compute"},
            .gate    = pn__overlap_gate_p2p,
            .applies = applies_vpp,
            .is_on   = on_p2p,
            .set_on  = {"comm_overlap.overlap_p2p_comm=true"},
            .set_off = {"comm_overlap.overlap_p2p_comm=false"},
        },
    [MOE_EP] =
        {
            .name    = "comm_overlap.overlap_moe_expert_parallel_comm",
            .keys    = {"comm_overlap.overlap_moe_expert_parallel_comm"},
            .gate    = pn__overlap_gate_moe_ep,
            .applies = applies_ep,
            .is_on   = on_ep,
            .set_on  = {"comm_overlap.overlap_moe_expert_parallel_comm=true"},
            /* off also drops delay_wgrad_compute, which Bridge accepts only with EP overlap */
            .set_off = {"comm_overlap.overlap_moe_expert_parallel_comm=false",
                        "comm_overlap.delay_wgrad_compute=false"},
        },
    [DELAY_WGRAD] =
        {
            .name    = "comm_overlap.delay_wgrad_compute",
            .keys    = {"comm_overlap.delay_wgrad_compute"},
            .gate    = pn__overlap_gate_delay_wgrad,
            .applies = applies_delay,
            .is_on   = on_delay,
            .set_on  = {"comm_overlap.delay_wgrad_compute=true"},
            .set_off = {"comm_overlap.delay_wgrad_compute=false"},
        },
    /* Megatron-FSDP in place of DistributedDataParallel: the knob shards parameters, gradients
     * and optimizer states (Megatron's default strategy, optim_grads_params) and unsets
     * CUDA_DEVICE_MAX_CONNECTIONS=1, which Megatron-FSDP refuses (8: the driver's default) */
    [FSDP] =
        {
            .name    = "ddp.use_megatron_fsdp (Megatron-FSDP)",
            .keys    = {"ddp.use_megatron_fsdp", "ddp.data_parallel_sharding_strategy",
                        "ddp.suggested_communication_unit_size", "ddp.fsdp_double_buffer"},
            .gate    = pn__overlap_gate_fsdp,
            .applies = applies_fsdp,
            .is_on   = on_fsdp,
            .set_on  = {"ddp.use_megatron_fsdp=true", "env.CUDA_DEVICE_MAX_CONNECTIONS=8"},
            .set_off = {"ddp.use_megatron_fsdp=false"},
        },
    /* average_in_collective is accepted and not simulated (the reduction moves the same bytes) */
    [DP_GRAD] =
        {
            .name    = "ddp.overlap_grad_reduce",
            .keys    = {"ddp.overlap_grad_reduce", "ddp.use_distributed_optimizer", "ddp.bucket_size",
                        "ddp.grad_reduce_in_fp32", "ddp.num_distributed_optimizer_instances", "ddp.average_in_collective",
                        "env.NVTE_FWD_LAYERNORM_SM_MARGIN", "env.NVTE_BWD_LAYERNORM_SM_MARGIN"},
            .gate    = pn__overlap_gate_dp,
            .applies = applies_grad,
            .is_on   = on_grad,
            .set_on  = {"ddp.overlap_grad_reduce=true"},
            .set_off = {"ddp.overlap_grad_reduce=false"},
        },
    [DP_PARAM] =
        {
            .name    = "ddp.overlap_param_gather",
            .keys    = {"ddp.overlap_param_gather", "ddp.align_param_gather",
                        "ddp.overlap_param_gather_with_optimizer_step", "ddp.fp8_param_gather"},
            .gate    = NULL, /* pn__overlap_gate_dp, with the grad reduce */
            .applies = applies_param,
            .is_on   = on_param,
            .set_on  = {"ddp.overlap_param_gather=true"},
            .set_off = {"ddp.overlap_param_gather=false"},
        },
    [PR4268] =
        {
            .name = "comm_overlap.overlap_p2p_* (Megatron-LM PR #4268)",
            .keys = {"comm_overlap.overlap_p2p_backward_on_comm_stream",
                     "comm_overlap.overlap_p2p_wgrad_delayed_layer_number",
                     "comm_overlap.overlap_p2p_with_transformer_layer_wgrad"},
            .gate = pn__overlap_gate_pr4268,
        },
    [NCCL] =
        {
            .name = "env.NCCL_*",
            .keys = {"env.NCCL_MIN_CTAS", "env.NCCL_MAX_CTAS", "env.NCCL_NVLS_ENABLE"},
            .gate = pn__overlap_gate_nccl,
        },
    [CP] =
        {
            .name    = "comm_overlap.cp_comm_type (p2p ring vs all_gather)",
            .keys    = {"comm_overlap.cp_comm_type"},
            .gate    = pn__overlap_gate_cp,
            .applies = applies_cp,
            .is_on   = on_cp,
            .set_on  = {"comm_overlap.cp_comm_type=\"p2p\""},
            .set_off = {"comm_overlap.cp_comm_type=\"all_gather\""},
        },
    [CONNECTIONS] =
        {
            .name    = "env.CUDA_DEVICE_MAX_CONNECTIONS (1 vs 8)",
            .keys    = {"env.CUDA_DEVICE_MAX_CONNECTIONS"},
            .gate    = pn__overlap_gate_connections,
            .applies = applies_conn,
            .is_on   = on_conn,
            .set_on  = {"env.CUDA_DEVICE_MAX_CONNECTIONS=1"},
            .set_off = {"env.CUDA_DEVICE_MAX_CONNECTIONS=8"},
        },
    /* the knob turns on Transformer Engine's per-layer graphs of the scenario's scope */
    [CUDA_GRAPHS] =
        {
            .name    = "training.cuda_graph_impl (CUDA graphs)",
            .keys    = {"training.cuda_graph_impl", "training.cuda_graph_modules"},
            .gate    = pn__overlap_gate_cuda_graphs,
            .applies = applies_graphs,
            .is_on   = on_graphs,
            .set_on  = {"training.cuda_graph_impl=\"transformer_engine\""},
            .set_off = {"training.cuda_graph_impl=\"none\""},
        },
};
const size_t pn_overlap_n_strategies = N_STRATEGIES;

const PnOverlapStrategy *const pn_overlap_what_if[] = {
    &pn_overlap_strategies[DP_GRAD],     &pn_overlap_strategies[DP_PARAM],    &pn_overlap_strategies[FSDP],
    &pn_overlap_strategies[TP],          &pn_overlap_strategies[P2P],         &pn_overlap_strategies[CP],
    &pn_overlap_strategies[MOE_EP],      &pn_overlap_strategies[DELAY_WGRAD], &pn_overlap_strategies[CONNECTIONS],
    &pn_overlap_strategies[CUDA_GRAPHS],
};
const size_t pn_overlap_n_what_if = G_N_ELEMENTS(pn_overlap_what_if);

gboolean pn_overlap_resolve(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  *plan = (PnPlan){0};
  for (size_t i = 0; i < pn_overlap_n_strategies; i++) {
    const PnOverlapStrategy *s = &pn_overlap_strategies[i];
    if (s->gate && !s->gate(sc, plan, warnings, error))
      return FALSE;
  }
  return TRUE;
}
