/* gating.c — Megatron-Bridge CommOverlapConfig defaults and gating, Megatron-Core checks. */
#include "overlap/gating.h"

#include <stdarg.h>

#include "overlap/ub.h"

G_DEFINE_QUARK(pn-overlap-error-quark, pn_overlap_error)

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

gboolean pn_overlap_resolve(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnParallelConfig *par = &sc->parallel;
  const PnDdpConfig *ddp      = &sc->ddp;
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
  bool vpp = par->virtual_pipeline_model_parallel_size > 1;
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

  /* DP: _get_optimizer_overlap_cfgs applies only with the distributed optimizer (setup()). */
  plan->use_distributed_optimizer = ddp->use_distributed_optimizer;
  bool bridge_dp_defaults         = par->data_parallel_size > 1 && ddp->use_distributed_optimizer;
  int64_t d_bucket                = 0;
  if (bridge_dp_defaults)
    d_bucket = 128LL * 1024 * 1024;
  plan->overlap_grad_reduce  = tri_or(ddp->overlap_grad_reduce, bridge_dp_defaults);
  plan->overlap_param_gather = tri_or(ddp->overlap_param_gather, bridge_dp_defaults);
  plan->align_param_gather   = tri_or(ddp->align_param_gather, bridge_dp_defaults && vpp &&
                                                                  par->pipeline_model_parallel_size > 1);
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

  plan->cp_comm_type     = co->cp_comm_type;
  plan->max_connections  = sc->env.cuda_device_max_connections > 0 ? sc->env.cuda_device_max_connections : 8;
  plan->nccl_min_ctas    = sc->env.nccl_min_ctas;
  plan->nccl_max_ctas    = sc->env.nccl_max_ctas;
  plan->fwd_ln_sm_margin = sc->env.nvte_fwd_layernorm_sm_margin;
  plan->bwd_ln_sm_margin = sc->env.nvte_bwd_layernorm_sm_margin;
  if (plan->max_connections != 1 &&
      (par->tensor_model_parallel_size > 1 || par->context_parallel_size > 1))
    warn(warnings, "CUDA_DEVICE_MAX_CONNECTIONS=%d with TP or CP > 1: Megatron-LM asserts it is 1 on Hopper",
         plan->max_connections);
  return TRUE;
}
