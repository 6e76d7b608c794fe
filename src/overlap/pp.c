/* pp.c — pipeline parallelism: Megatron-Bridge's P2P defaults from PP/VPP and Megatron-Core's
 * rules for overlap_p2p_comm, batch_p2p_comm and overlap_p2p_comm_warmup_flush (see gating.h). */
#include "overlap/overlap-private.h"

/* PP: Bridge defaults from PP/VPP, user values win. */
gboolean pn__overlap_gate_p2p(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  (void)error;
  const PnParallelConfig *par   = &sc->parallel;
  const PnCommOverlapConfig *co = &sc->comm_overlap;
  bool vpp                      = par->virtual_pipeline_model_parallel_size > 1;
  bool d_overlap_p2p = false, d_batch_p2p = false;
  if (par->pipeline_model_parallel_size > 1) {
    d_overlap_p2p = vpp;
    d_batch_p2p   = !vpp;
  }
  plan->overlap_p2p_comm = pn__overlap_tri_or(co->overlap_p2p_comm, d_overlap_p2p);
  plan->batch_p2p_comm   = pn__overlap_tri_or(co->batch_p2p_comm, d_batch_p2p);
  /* Megatron-Core: overlap_p2p_comm is turned off without interleaving (arguments.py). */
  if (plan->overlap_p2p_comm && !vpp) {
    if (co->overlap_p2p_comm == PN_TRI_TRUE && par->pipeline_model_parallel_size > 1)
      pn__overlap_warn(warnings, "overlap_p2p_comm=True has no effect without virtual pipeline parallelism: "
                                 "Megatron-Core turns it off and runs blocking P2P");
    plan->overlap_p2p_comm = false;
  }
  if (plan->overlap_p2p_comm && plan->batch_p2p_comm) {
    pn__overlap_warn(warnings, "batch_p2p_comm=True cannot be combined with overlap_p2p_comm (Megatron-Core raises "
                               "ValueError); simulating batch_p2p_comm=False");
    plan->batch_p2p_comm = false;
  }
  plan->overlap_p2p_comm_warmup_flush = co->overlap_p2p_comm_warmup_flush;
  if (plan->overlap_p2p_comm_warmup_flush && (!plan->overlap_p2p_comm || plan->batch_p2p_comm)) {
    pn__overlap_warn(warnings,
                     "overlap_p2p_comm_warmup_flush requires overlap_p2p_comm=True and batch_p2p_comm=False; ignored");
    plan->overlap_p2p_comm_warmup_flush = false;
  }
  return TRUE;
}
