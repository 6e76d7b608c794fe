/* dp.c — data parallelism: Megatron-Bridge's DP defaults (_get_optimizer_overlap_cfgs), Megatron-
 * Core's rules for overlap_param_gather and overlap_param_gather_with_optimizer_step, the gradient
 * bucket size, the layernorm SM margins (NVTE_*_LAYERNORM_SM_MARGIN), which recipes set so
 * that TE's layernorms leave SMs to the DP collectives beside them (see gating.h), and
 * Megatron-FSDP's rules (below). */
#include "overlap/overlap-private.h"
#include "workload/ops.h"

/* Megatron-FSDP (Megatron-LM d98e8a64dd: training/arguments.py validate_args, megatron_fsdp.py
 * MegatronFSDP.__init__, distributed/fsdp/mcore_fsdp_adapter.py):
 *   - v1 always runs the distributed optimizer ("Megatron-FSDP v1 is only compatible with
 *     --use-distributed-optimizer. Using DistributedOptimizer..."); with no_shard nothing is
 *     sharded, so here it reduces as DDP does (all-reduce) and steps every parameter;
 *   - optim_grads and optim_grads_params turn overlap_grad_reduce on, optim_grads_params turns
 *     overlap_param_gather on, silently (MegatronFSDP.__init__: "Default to overlapped ...");
 *     align_param_gather and overlap_param_gather_with_optimizer_step are the distributed
 *     optimizer's and have no effect;
 *   - the communication unit: suggested_communication_unit_size, else twice the mean FSDP
 *     unit's elements (optim_grads_params) or bucket_size, then at least 1e9 elements; the
 *     all-gather prefetches half of it ahead, the reduce-scatter queue holds all of it;
 *   - hybrid FSDP (an outer DP group) is not simulated: num_distributed_optimizer_instances must
 *     stay 1. CUDA_DEVICE_MAX_CONNECTIONS=1 is refused in env.c, per-layer CUDA graphs in graphs.c. */
/* Megatron-FSDP's communication unit in elements (megatron_fsdp.py MegatronFSDP.__init__):
 * suggested_communication_unit_size, else twice a layer's parameters with optim_grads_params,
 * else bucket_size, else 1e9; at least 1e9 unless the user gave it. */
static double comm_unit(const PnScenario *sc)
{
  const PnDdpConfig *ddp = &sc->ddp;
  if (ddp->suggested_communication_unit_size > 0)
    return (double)ddp->suggested_communication_unit_size;
  double unit = 1e9;
  if (ddp->data_parallel_sharding_strategy == PN_FSDP_OPTIM_GRADS_PARAMS)
    unit = 2.0 * pn_workload_layer_params(sc); /* every FSDP unit is a transformer layer */
  else if (ddp->bucket_size > 0)
    unit = (double)ddp->bucket_size;
  return MAX(unit, 1e9);
}

gboolean pn__overlap_gate_fsdp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnDdpConfig *ddp = &sc->ddp;
  plan->fsdp             = ddp->use_megatron_fsdp;
  if (!plan->fsdp)
    return TRUE;
  plan->fsdp_shard         = ddp->data_parallel_sharding_strategy;
  plan->fsdp_double_buffer = ddp->fsdp_double_buffer;
  if (ddp->num_distributed_optimizer_instances > 1)
    return pn__overlap_fail(error, sc, "/ddp/num_distributed_optimizer_instances",
                            "Megatron-FSDP shards over the whole data-parallel group (hybrid FSDP is not "
                            "simulated yet): expected 1, got " I64,
                            ddp->num_distributed_optimizer_instances);
  if (plan->fsdp_shard == PN_FSDP_OPTIM_GRADS_PARAMS && plan->overlap_moe_expert_parallel_comm)
    return pn__overlap_fail(error, sc, "/ddp/data_parallel_sharding_strategy",
                            "\"optim_grads_params\" with /comm_overlap/overlap_moe_expert_parallel_comm: "
                            "Megatron-FSDP's per-micro-batch parameter gathers inside the combined 1F1B are not "
                            "simulated yet; expected \"optim_grads\" or EP overlap off");
  if (!ddp->use_distributed_optimizer)
    pn__overlap_warn(warnings,
                     "%s: /ddp/use_megatron_fsdp: Megatron-FSDP v1 runs the distributed optimizer "
                     "(Megatron-LM: \"Using DistributedOptimizer...\"); use_distributed_optimizer "
                     "taken as true",
                     sc->path);
  double unit               = comm_unit(sc);
  plan->fsdp_prefetch_elems = unit / 2.0;
  plan->fsdp_rs_queue_elems = unit;
  return TRUE;
}

/* Megatron-Core asserts; penumbra turns the option off and says so. */
static void param_gather_rules(const PnScenario *sc, PnPlan *plan, bool vpp, GPtrArray *warnings)
{
  if (plan->overlap_param_gather && !sc->ddp.use_distributed_optimizer) {
    pn__overlap_warn(warnings,
                     "overlap_param_gather requires use_distributed_optimizer (Megatron-Core asserts); turned off");
    plan->overlap_param_gather = false;
  }
  if (plan->overlap_param_gather && !plan->overlap_grad_reduce) {
    pn__overlap_warn(warnings, "overlap_param_gather requires overlap_grad_reduce (Megatron-Core asserts); turned off");
    plan->overlap_param_gather = false;
  }
  if (plan->align_param_gather && !vpp) {
    plan->align_param_gather = false; /* forced off without VPP (arguments.py), silently harmless */
  }
}

/* Bridge keeps it off ("an issue with checkpointing"); Megatron-LM asserts its requirements. */
static gboolean optimizer_step_rules(const PnScenario *sc, PnPlan *plan, bool vpp, GPtrArray *warnings, GError **error)
{
  const PnDdpConfig *ddp                         = &sc->ddp;
  plan->overlap_param_gather_with_optimizer_step = ddp->overlap_param_gather_with_optimizer_step == PN_TRI_TRUE;
  if (!plan->overlap_param_gather_with_optimizer_step)
    return TRUE;
  static const char ptr[] = "/ddp/overlap_param_gather_with_optimizer_step";
  if (!ddp->use_distributed_optimizer)
    return pn__overlap_fail(error, sc, ptr, "requires /ddp/use_distributed_optimizer true");
  if (!plan->overlap_param_gather)
    return pn__overlap_fail(error, sc, ptr, "requires /ddp/overlap_param_gather true");
  if (!vpp)
    return pn__overlap_fail(error, sc, ptr,
                            "requires interleaving (/parallel/virtual_pipeline_model_parallel_size > 1), got " I64,
                            sc->parallel.virtual_pipeline_model_parallel_size);
  pn__overlap_warn(warnings, "overlap_param_gather_with_optimizer_step is not simulated yet: the parameter all-gathers "
                             "run as with overlap_param_gather alone");
  return TRUE;
}

/* Elements per gradient bucket: the user's, else Bridge's default, else Megatron-Core's. */
static int64_t bucket_size(const PnScenario *sc, const PnPlan *plan, int64_t d_bucket, int64_t dp_cp)
{
  int64_t bucket = sc->ddp.bucket_size > 0 ? sc->ddp.bucket_size : d_bucket;
  if (bucket <= 0) {
    bucket = 40000000;
    if (1000000 * dp_cp > bucket)
      bucket = 1000000 * dp_cp;
  }
  if (!plan->overlap_grad_reduce)
    bucket = 0; /* Megatron-Core: bucket_size=None (one bucket) without overlap_grad_reduce */
  return bucket;
}

/* Both DP overlaps in one gate: Megatron-Core's param-gather rules read the grad-reduce result,
 * and a data-parallel group of 1 turns both off with one warning. Reads the Megatron-FSDP gate's
 * plan fields: gated after it. */
gboolean pn__overlap_gate_dp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnParallelConfig *par = &sc->parallel;
  const PnDdpConfig *ddp      = &sc->ddp;
  bool vpp                    = par->virtual_pipeline_model_parallel_size > 1;
  int64_t dp_cp               = par->data_parallel_size * par->context_parallel_size;

  /* DP: _get_optimizer_overlap_cfgs applies only with the distributed optimizer (setup()). */
  bool dist_opt                   = ddp->use_distributed_optimizer || plan->fsdp;
  plan->use_distributed_optimizer = plan->fsdp ? plan->fsdp_shard != PN_FSDP_NO_SHARD : dist_opt;
  bool bridge_dp_defaults         = par->data_parallel_size > 1 && dist_opt;
  int64_t d_bucket                = 0;
  if (bridge_dp_defaults)
    d_bucket = 128LL * 1024 * 1024;
  plan->overlap_grad_reduce  = pn__overlap_tri_or(ddp->overlap_grad_reduce, bridge_dp_defaults);
  plan->overlap_param_gather = pn__overlap_tri_or(ddp->overlap_param_gather, bridge_dp_defaults);
  plan->align_param_gather =
      pn__overlap_tri_or(ddp->align_param_gather, bridge_dp_defaults && vpp && par->pipeline_model_parallel_size > 1);
  if (plan->fsdp) {
    plan->overlap_grad_reduce |= plan->fsdp_shard >= PN_FSDP_OPTIM_GRADS;
    plan->overlap_param_gather = plan->fsdp_shard != PN_FSDP_NO_SHARD &&
                                 (plan->overlap_param_gather || plan->fsdp_shard == PN_FSDP_OPTIM_GRADS_PARAMS);
    plan->align_param_gather = false;
  } else {
    param_gather_rules(sc, plan, vpp, warnings);
    if (!optimizer_step_rules(sc, plan, vpp, warnings, error))
      return FALSE;
  }
  if (dp_cp <= 1 && (plan->overlap_grad_reduce || plan->overlap_param_gather)) {
    if (ddp->overlap_grad_reduce == PN_TRI_TRUE || ddp->overlap_param_gather == PN_TRI_TRUE)
      pn__overlap_warn(warnings, "DP overlap requested with a data-parallel group of 1: there is no DP communication");
    plan->overlap_grad_reduce = plan->overlap_param_gather = false;
  }
  plan->bucket_size          = bucket_size(sc, plan, d_bucket, dp_cp);
  plan->grad_bytes_per_elem  = ddp->grad_reduce_in_fp32 ? 4.0 : 2.0;
  plan->param_bytes_per_elem = (ddp->fp8_param_gather && sc->training.precision == PN_PREC_FP8) ? 1.0 : 2.0;
  if (ddp->fp8_param_gather && sc->training.precision != PN_PREC_FP8)
    pn__overlap_warn(warnings, "fp8_param_gather has no effect when training.precision is not fp8");
  plan->fwd_ln_sm_margin = sc->env.nvte_fwd_layernorm_sm_margin;
  plan->bwd_ln_sm_margin = sc->env.nvte_bwd_layernorm_sm_margin;
  return TRUE;
}
