/* dp.c — data parallelism: Megatron-Bridge's DP defaults (_get_optimizer_overlap_cfgs), Megatron-
 * Core's rules for overlap_param_gather and overlap_param_gather_with_optimizer_step, the gradient
 * bucket size, and the layernorm SM margins (NVTE_*_LAYERNORM_SM_MARGIN), which recipes set so
 * that TE's layernorms leave SMs to the DP collectives beside them (see gating.h). */
#include "overlap/overlap-private.h"

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
 * and a data-parallel group of 1 turns both off with one warning. */
gboolean pn__overlap_gate_dp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnParallelConfig *par = &sc->parallel;
  const PnDdpConfig *ddp      = &sc->ddp;
  bool vpp                    = par->virtual_pipeline_model_parallel_size > 1;
  int64_t dp_cp               = par->data_parallel_size * par->context_parallel_size;

  /* DP: _get_optimizer_overlap_cfgs applies only with the distributed optimizer (setup()). */
  plan->use_distributed_optimizer = ddp->use_distributed_optimizer;
  bool bridge_dp_defaults         = par->data_parallel_size > 1 && ddp->use_distributed_optimizer;
  int64_t d_bucket                = 0;
  if (bridge_dp_defaults)
    d_bucket = 128LL * 1024 * 1024;
  plan->overlap_grad_reduce  = pn__overlap_tri_or(ddp->overlap_grad_reduce, bridge_dp_defaults);
  plan->overlap_param_gather = pn__overlap_tri_or(ddp->overlap_param_gather, bridge_dp_defaults);
  plan->align_param_gather =
      pn__overlap_tri_or(ddp->align_param_gather, bridge_dp_defaults && vpp && par->pipeline_model_parallel_size > 1);
  param_gather_rules(sc, plan, vpp, warnings);
  if (!optimizer_step_rules(sc, plan, vpp, warnings, error))
    return FALSE;
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
