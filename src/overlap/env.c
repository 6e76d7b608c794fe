/* env.c — the launch environment the overlaps depend on: NCCL's CTA bounds and NVLS, and
 * CUDA_DEVICE_MAX_CONNECTIONS (hardware queues per GPU, which decide whether streams overlap). */
#include "overlap/overlap-private.h"

gboolean pn__overlap_gate_nccl(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  (void)error;
  if (sc->env.nccl_nvls_enable)
    pn__overlap_warn(warnings, "NCCL_NVLS_ENABLE=1: NVLink SHARP (NVLS) collectives are not simulated (they could not "
                               "be measured here); collectives are priced as NCCL ring/tree");
  plan->nccl_min_ctas = sc->env.nccl_min_ctas;
  plan->nccl_max_ctas = sc->env.nccl_max_ctas;
  return TRUE;
}

/* Reads plan->overlap_moe_expert_parallel_comm: gated after EP. */
gboolean pn__overlap_gate_connections(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnParallelConfig *par = &sc->parallel;
  plan->max_connections       = sc->env.cuda_device_max_connections > 0 ? sc->env.cuda_device_max_connections : 8;
  bool tp_or_cp               = par->tensor_model_parallel_size > 1 || par->context_parallel_size > 1;
  /* Megatron-FSDP's AG and RS streams must run beside the compute stream (arguments.py) */
  if (plan->fsdp && plan->max_connections == 1)
    return pn__overlap_fail(error, sc, "/env/CUDA_DEVICE_MAX_CONNECTIONS",
                            "Megatron-FSDP requires it > 1 or unset (Megatron-LM: \"FSDP requires "
                            "CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset.\"), got 1");
  if (plan->fsdp && tp_or_cp)
    pn__overlap_warn(warnings,
                     "%s: Megatron-FSDP with TP or CP > 1: they prefer different CUDA_DEVICE_MAX_CONNECTIONS "
                     "(Megatron-LM warns); simulated with %d",
                     sc->path, plan->max_connections);
  /* Megatron-LM only warns (EP overlap prefers more connections) with overlap_moe_expert_parallel_comm */
  if (plan->max_connections != 1 && tp_or_cp && !plan->overlap_moe_expert_parallel_comm && !plan->fsdp)
    pn__overlap_warn(warnings,
                     "CUDA_DEVICE_MAX_CONNECTIONS=%d with TP or CP > 1: Megatron-LM asserts it is 1 on Hopper",
                     plan->max_connections);
  return TRUE;
}
