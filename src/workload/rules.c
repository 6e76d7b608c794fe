/* rules.c — Megatron-Core's layout rules (rules.h), with the messages the scenario loader prints. */
#include "workload/rules.h"

#include <glib.h>
#include <stdarg.h>
#include <string.h>

#include "workload/split.h"

#define I64 "%" G_GINT64_FORMAT

static const char *const summaries[PN_RULE_N] = {
    [PN_RULE_OK]                   = "accepted",
    [PN_RULE_TP_HEADS]             = "tensor_model_parallel_size does not divide num_attention_heads",
    [PN_RULE_TP_QUERY_GROUPS]      = "tensor_model_parallel_size does not divide num_query_groups",
    [PN_RULE_WORLD]                = "tensor x pipeline x context parallel size does not divide the GPUs",
    [PN_RULE_VPP_NEEDS_PP]         = "virtual_pipeline_model_parallel_size needs pipeline_model_parallel_size > 1",
    [PN_RULE_PP_SPLIT_ARGS]        = "more than one way to split the pipeline (uneven stages, a layout, account_for_*)",
    [PN_RULE_PP_LAYERS]            = "pipeline_model_parallel_size does not divide num_layers",
    [PN_RULE_VPP_LAYERS]           = "virtual_pipeline_model_parallel_size does not divide the layers of a stage",
    [PN_RULE_PP_UNEVEN]            = "num_layers_in_first/last_pipeline_stage leave no even split of the rest",
    [PN_RULE_PP_LAYOUT]            = "pipeline_model_parallel_layout does not fit the pipeline or the model",
    [PN_RULE_VPP_PP2_P2P]          = "interleaving at pipeline_model_parallel_size 2 needs overlap_p2p_comm",
    [PN_RULE_BATCH]                = "micro_batch_size x data_parallel_size does not divide global_batch_size",
    [PN_RULE_VPP_GROUP]            = "microbatch_group_size_per_vp_stage outside [pipeline size, num_microbatches]",
    [PN_RULE_VPP_MICROBATCHES]     = "interleaving needs num_microbatches a multiple of pipeline_model_parallel_size",
    [PN_RULE_VPP_GROUP_REMAINDER]  = "num_microbatches mod microbatch_group_size_per_vp_stage is in (0, pp)",
    [PN_RULE_CP_SEQUENCE]          = "2 x context_parallel_size does not divide seq_length",
    [PN_RULE_SP_SEQUENCE]          = "tensor_model_parallel_size does not divide the sequence (sequence_parallel)",
    [PN_RULE_CP_A2A_HEADS]         = "context_parallel_size does not divide the heads of a TP rank (a2a)",
    [PN_RULE_MAX_POSITIONS]        = "seq_length exceeds max_position_embeddings",
    [PN_RULE_EXPERTS_NEED_MOE]     = "expert parallelism needs a MoE model",
    [PN_RULE_EP_EXPERTS]           = "expert_model_parallel_size does not divide num_moe_experts",
    [PN_RULE_EP_RANKS]             = "expert_tensor x expert_model parallel size does not divide tp x cp x dp",
    [PN_RULE_ETP_FFN]              = "expert_tensor_parallel_size does not divide moe_ffn_hidden_size",
    [PN_RULE_EP_NEEDS_SP]          = "tensor with expert parallelism needs sequence_parallel",
    [PN_RULE_DISTOPT_INSTANCES]    = "num_distributed_optimizer_instances does not divide data_parallel_size",
    [PN_RULE_FP8_PARAM_GATHER]     = "fp8_param_gather needs fp8 training",
    [PN_RULE_RECOMPUTE_LAYERS]     = "recompute_num_layers exceeds the layers of a stage",
    [PN_RULE_NCCL_CTAS]            = "NCCL_MIN_CTAS exceeds NCCL_MAX_CTAS",
    [PN_RULE_FWD_LAYERNORM_MARGIN] = "NVTE_FWD_LAYERNORM_SM_MARGIN leaves no SM",
    [PN_RULE_BWD_LAYERNORM_MARGIN] = "NVTE_BWD_LAYERNORM_SM_MARGIN leaves no SM",
};

const char *pn_rule_summary(PnRule r) { return r >= 0 && r < PN_RULE_N ? summaries[r] : "unknown rule"; }

PnRule pn__rule_broken(PnRuleViolation *v, PnRule rule, const char *path, const char *fmt, ...)
{
  if (v != NULL) {
    v->rule = rule;
    v->path = path;
    va_list ap;
    va_start(ap, fmt);
    g_vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
  }
  return rule;
}

/* Each part reads what the ones before it derived (data_parallel_size, the layers of a stage,
 * num_microbatches). */

static PnRule check_layout(PnScenario *sc, PnRuleViolation *v)
{
  const PnModelConfig *m = &sc->model;
  PnParallelConfig *par  = &sc->parallel;
  int64_t tp = par->tensor_model_parallel_size, pp = par->pipeline_model_parallel_size;
  int64_t cp = par->context_parallel_size, gpus = sc->hardware.num_gpus;

  /* tensor parallelism splits heads and query groups */
  if (m->num_attention_heads % tp != 0)
    return pn__rule_broken(v, PN_RULE_TP_HEADS, "/parallel/tensor_model_parallel_size",
                           I64 " does not divide num_attention_heads " I64, tp, m->num_attention_heads);
  if (m->num_query_groups % tp != 0)
    return pn__rule_broken(v, PN_RULE_TP_QUERY_GROUPS, "/parallel/tensor_model_parallel_size",
                           I64 " does not divide num_query_groups " I64, tp, m->num_query_groups);

  /* world = tp * pp * cp * dp; each factor <= num_gpus <= 1e7, so the products below fit */
  int64_t tp_pp     = (tp > gpus || pp > gpus) ? gpus + 1 : tp * pp;
  int64_t model_par = (tp_pp > gpus || cp > gpus) ? gpus + 1 : tp_pp * cp;
  if (model_par > gpus || gpus % model_par != 0)
    return pn__rule_broken(v, PN_RULE_WORLD, "/hardware/num_gpus",
                           I64 " is not divisible by tensor x pipeline x context parallel size (" I64 " x " I64
                               " x " I64 ")",
                           gpus, tp, pp, cp);
  par->data_parallel_size = gpus / model_par;
  return PN_RULE_OK;
}

static PnRule check_pipeline(PnScenario *sc, int64_t *stage_layers_out, PnRuleViolation *v)
{
  PnParallelConfig *par = &sc->parallel;
  int64_t pp = par->pipeline_model_parallel_size, vpp = par->virtual_pipeline_model_parallel_size;
  const char *vpp_ptr = "/parallel/virtual_pipeline_model_parallel_size";

  /* a layout says how many virtual stages there are: Megatron-LM derives the virtual size from it
   * (arguments.py validate_args: num_stages // pp, None when 1), and TransformerConfig refuses
   * another one given */
  int64_t layout_stages = pn_workload_layout_stages(par->pipeline_model_parallel_layout);
  if (layout_stages > 0) {
    if (layout_stages % pp != 0 || (vpp > 1 && vpp != layout_stages / pp))
      return pn_workload_stage_layers(sc, pp, vpp, NULL, v); /* the layout's own complaint */
    par->virtual_pipeline_model_parallel_size = vpp = layout_stages / pp;
    vpp_ptr                                         = "/parallel/pipeline_model_parallel_layout";
  }
  /* pipeline stages and virtual chunks hold whole layers */
  if (vpp > 1 && pp == 1)
    return pn__rule_broken(v, PN_RULE_VPP_NEEDS_PP, vpp_ptr,
                           I64 " needs pipeline_model_parallel_size > 1 (interleaving splits each pipeline stage)",
                           vpp);
  g_autoptr(GArray) layers = g_array_new(FALSE, FALSE, sizeof(int64_t));
  PnRule r                 = pn_workload_stage_layers(sc, pp, vpp, layers, v);
  if (r != PN_RULE_OK)
    return r;
  if (vpp > 1 && pp == 2 && sc->comm_overlap.overlap_p2p_comm == PN_TRI_FALSE)
    return pn__rule_broken(v, PN_RULE_VPP_PP2_P2P, "/comm_overlap/overlap_p2p_comm",
                           "false is not supported with interleaving (virtual_pipeline_model_parallel_size " I64
                           ") at pipeline_model_parallel_size 2: Megatron requires pp > 2 when overlap_p2p_comm is off",
                           vpp);
  /* the most layers a pipeline stage holds, an accounted embedding or loss counting as one */
  int64_t most = 0;
  for (int64_t rank = 0; rank < pp; rank++) {
    int64_t n = (rank == 0 && par->account_for_embedding_in_pipeline_split ? 1 : 0) +
                (rank == pp - 1 && par->account_for_loss_in_pipeline_split ? 1 : 0);
    for (int64_t chunk = 0; chunk < MAX(vpp, 1); chunk++)
      n += g_array_index(layers, int64_t, chunk * pp + rank);
    most = MAX(most, n);
  }
  *stage_layers_out = most;
  return PN_RULE_OK;
}

static PnRule check_batch(PnScenario *sc, PnRuleViolation *v)
{
  PnParallelConfig *par      = &sc->parallel;
  const PnTrainingConfig *tr = &sc->training;
  int64_t pp = par->pipeline_model_parallel_size, vpp = par->virtual_pipeline_model_parallel_size;
  int64_t dp = par->data_parallel_size;

  /* batch: gbs = mbs * dp * num_microbatches */
  int64_t mbs_dp = tr->micro_batch_size * dp; /* <= 1e9 * 1e7 */
  if (tr->global_batch_size % mbs_dp != 0)
    return pn__rule_broken(v, PN_RULE_BATCH, "/training/global_batch_size",
                           I64 " is not divisible by micro_batch_size x data_parallel_size (" I64 " x " I64 " = " I64
                               ")",
                           tr->global_batch_size, tr->micro_batch_size, dp, mbs_dp);
  int64_t nmb           = tr->global_batch_size / mbs_dp;
  par->num_microbatches = nmb;

  /* Megatron's interleaved schedule: pp <= group <= m, and m % group is 0 or >= pp */
  if (vpp > 1) {
    int64_t group    = par->microbatch_group_size_per_vp_stage ? par->microbatch_group_size_per_vp_stage : pp;
    const char *gptr = par->microbatch_group_size_per_vp_stage ? "/parallel/microbatch_group_size_per_vp_stage"
                                                               : "/training/global_batch_size";
    if (group < pp || group > nmb)
      return pn__rule_broken(v, PN_RULE_VPP_GROUP, gptr,
                             "the interleaved schedule needs pipeline_model_parallel_size (" I64
                             ") <= microbatch_group_size_per_vp_stage (" I64 ") <= num_microbatches (" I64 ")",
                             pp, group, nmb);
    if (nmb % group != 0 && nmb % group < pp && !par->microbatch_group_size_per_vp_stage)
      return pn__rule_broken(v, PN_RULE_VPP_MICROBATCHES, gptr,
                             "the interleaved schedule (virtual_pipeline_model_parallel_size " I64
                             ") needs num_microbatches (" I64 " = " I64 " / (micro_batch_size " I64
                             " x data_parallel_size " I64 ")) to be a multiple of pipeline_model_parallel_size " I64
                             " (Megatron raises otherwise)",
                             vpp, nmb, tr->global_batch_size, tr->micro_batch_size, dp, pp);
    if (nmb % group != 0 && nmb % group < pp)
      return pn__rule_broken(v, PN_RULE_VPP_GROUP_REMAINDER, gptr,
                             "num_microbatches " I64 " mod microbatch_group_size_per_vp_stage " I64 " = " I64
                             " must be 0 or >= pipeline_model_parallel_size " I64 " (Megatron: dependency bubbles)",
                             nmb, group, nmb % group, pp);
  }
  return PN_RULE_OK;
}

static PnRule check_sequence(PnScenario *sc, unsigned *notes, PnRuleViolation *v)
{
  const PnModelConfig *m     = &sc->model;
  PnParallelConfig *par      = &sc->parallel;
  const PnTrainingConfig *tr = &sc->training;
  int64_t tp = par->tensor_model_parallel_size, cp = par->context_parallel_size;

  /* sequence: CP splits it into 2*cp chunks (load balancing), SP shards each CP slice over TP */
  if (cp > 1 && tr->seq_length % (2 * cp) != 0)
    return pn__rule_broken(v, PN_RULE_CP_SEQUENCE, "/training/seq_length",
                           I64 " is not divisible by 2 x context_parallel_size = " I64
                               " (context parallelism splits the sequence into 2*cp chunks for load balancing)",
                           tr->seq_length, 2 * cp);
  if (par->sequence_parallel && tp == 1) {
    *notes |= PN_RULE_NOTE_SP_DISABLED; /* as Megatron does */
    par->sequence_parallel = false;
  }
  if (par->sequence_parallel && (tr->seq_length / cp) % tp != 0) {
    if (cp > 1)
      return pn__rule_broken(v, PN_RULE_SP_SEQUENCE, "/training/seq_length",
                             I64 " / context_parallel_size " I64 " = " I64
                                 " is not divisible by tensor_model_parallel_size " I64 " (sequence_parallel)",
                             tr->seq_length, cp, tr->seq_length / cp, tp);
    return pn__rule_broken(v, PN_RULE_SP_SEQUENCE, "/training/seq_length",
                           I64 " is not divisible by tensor_model_parallel_size " I64 " (sequence_parallel)",
                           tr->seq_length, tp);
  }
  if (cp > 1 && sc->comm_overlap.cp_comm_type == PN_CP_A2A && (m->num_attention_heads / tp) % cp != 0)
    return pn__rule_broken(v, PN_RULE_CP_A2A_HEADS, "/parallel/context_parallel_size",
                           I64 " does not divide the " I64
                               " attention heads per tensor-parallel rank (cp_comm_type \"a2a\")",
                           cp, m->num_attention_heads / tp);
  if (m->max_position_embeddings > 0 && strcmp(m->position_embedding_type, "learned_absolute") == 0 &&
      tr->seq_length > m->max_position_embeddings)
    return pn__rule_broken(v, PN_RULE_MAX_POSITIONS, "/training/seq_length",
                           I64 " exceeds the model's max_position_embeddings " I64 " (learned absolute positions)",
                           tr->seq_length, m->max_position_embeddings);
  return PN_RULE_OK;
}

static PnRule check_experts(PnScenario *sc, PnRuleViolation *v)
{
  const PnModelConfig *m = &sc->model;
  PnParallelConfig *par  = &sc->parallel;
  int64_t tp = par->tensor_model_parallel_size, cp = par->context_parallel_size;
  int64_t ep = par->expert_model_parallel_size, dp = par->data_parallel_size, gpus = sc->hardware.num_gpus;

  /* experts: Megatron-Core lays the expert ranks of a stage out as etp x ep x edp over its
   * tp x cp x dp ranks; expert_tensor_parallel_size defaults to tensor_model_parallel_size */
  if (par->expert_tensor_parallel_size == 0)
    par->expert_tensor_parallel_size = tp;
  int64_t etp = par->expert_tensor_parallel_size;
  if (m->num_moe_experts == 0 && (ep > 1 || etp != tp))
    return pn__rule_broken(v, PN_RULE_EXPERTS_NEED_MOE,
                           ep > 1 ? "/parallel/expert_model_parallel_size" : "/parallel/expert_tensor_parallel_size",
                           I64 " needs a MoE model (num_moe_experts > 0)", ep > 1 ? ep : etp);
  if (m->num_moe_experts == 0)
    return PN_RULE_OK;
  if (m->num_moe_experts % ep != 0)
    return pn__rule_broken(v, PN_RULE_EP_EXPERTS, "/parallel/expert_model_parallel_size",
                           I64 " does not divide num_moe_experts " I64, ep, m->num_moe_experts);
  if (etp > gpus || ep > gpus || (tp * cp * dp) % (etp * ep) != 0)
    return pn__rule_broken(v, PN_RULE_EP_RANKS, "/parallel/expert_model_parallel_size",
                           "expert_tensor_parallel_size x expert_model_parallel_size = " I64 " x " I64
                           " does not divide the ranks of a pipeline stage (tp x cp x dp = " I64 ")",
                           etp, ep, tp * cp * dp);
  int64_t moe_ffn = m->moe_ffn_hidden_size > 0 ? m->moe_ffn_hidden_size : m->ffn_hidden_size;
  if (moe_ffn % etp != 0)
    return pn__rule_broken(v, PN_RULE_ETP_FFN, "/parallel/expert_tensor_parallel_size",
                           I64 " does not divide moe_ffn_hidden_size " I64, etp, moe_ffn);
  if (tp > 1 && ep > 1 && !par->sequence_parallel)
    return pn__rule_broken(
        v, PN_RULE_EP_NEEDS_SP, "/parallel/sequence_parallel",
        "expected true: Megatron-Core requires sequence parallelism with tensor and expert parallelism");
  return PN_RULE_OK;
}

static PnRule check_training(const PnScenario *sc, int64_t stage_layers, PnRuleViolation *v)
{
  int64_t dp = sc->parallel.data_parallel_size;

  /* optimizer, precision, recompute */
  if (dp % sc->ddp.num_distributed_optimizer_instances != 0)
    return pn__rule_broken(v, PN_RULE_DISTOPT_INSTANCES, "/ddp/num_distributed_optimizer_instances",
                           I64 " does not divide data_parallel_size " I64, sc->ddp.num_distributed_optimizer_instances,
                           dp);
  if (sc->ddp.fp8_param_gather && sc->training.precision != PN_PREC_FP8)
    return pn__rule_broken(v, PN_RULE_FP8_PARAM_GATHER, "/ddp/fp8_param_gather",
                           "true needs training.precision \"fp8\"");
  const PnRecomputeConfig *rc = &sc->recompute;
  if (rc->recompute_num_layers > 0 && rc->recompute_granularity == PN_RECOMPUTE_FULL &&
      rc->recompute_num_layers > stage_layers)
    return pn__rule_broken(v, PN_RULE_RECOMPUTE_LAYERS, "/recompute/recompute_num_layers",
                           I64 " exceeds the " I64 " layers of a pipeline stage", rc->recompute_num_layers,
                           stage_layers);
  return PN_RULE_OK;
}

static PnRule check_environment(const PnScenario *sc, PnRuleViolation *v)
{
  const PnHwProfile *hw  = sc->hw;
  const PnEnvConfig *env = &sc->env;

  /* launch environment against the hardware */
  if (env->nccl_min_ctas > 0 && env->nccl_max_ctas > 0 && env->nccl_min_ctas > env->nccl_max_ctas)
    return pn__rule_broken(v, PN_RULE_NCCL_CTAS, "/env/NCCL_MIN_CTAS", "%d exceeds NCCL_MAX_CTAS %d",
                           env->nccl_min_ctas, env->nccl_max_ctas);
  if (hw == NULL) /* the SM margins are checked against a loaded profile */
    return PN_RULE_OK;
  if (env->nvte_fwd_layernorm_sm_margin >= hw->sm_count)
    return pn__rule_broken(v, PN_RULE_FWD_LAYERNORM_MARGIN, "/env/NVTE_FWD_LAYERNORM_SM_MARGIN",
                           "%d leaves no SM for the kernel (the GPU has %d)", env->nvte_fwd_layernorm_sm_margin,
                           hw->sm_count);
  if (env->nvte_bwd_layernorm_sm_margin >= hw->sm_count)
    return pn__rule_broken(v, PN_RULE_BWD_LAYERNORM_MARGIN, "/env/NVTE_BWD_LAYERNORM_SM_MARGIN",
                           "%d leaves no SM for the kernel (the GPU has %d)", env->nvte_bwd_layernorm_sm_margin,
                           hw->sm_count);
  return PN_RULE_OK;
}

PnRule pn_workload_check(PnScenario *sc, PnRuleViolation *v, unsigned *notes)
{
  unsigned local_notes = 0;
  int64_t stage_layers = 0;
  PnRule r;
  if ((r = check_layout(sc, v)) == PN_RULE_OK && (r = check_pipeline(sc, &stage_layers, v)) == PN_RULE_OK &&
      (r = check_batch(sc, v)) == PN_RULE_OK && (r = check_sequence(sc, &local_notes, v)) == PN_RULE_OK &&
      (r = check_experts(sc, v)) == PN_RULE_OK && (r = check_training(sc, stage_layers, v)) == PN_RULE_OK)
    r = check_environment(sc, v);
  if (notes != NULL)
    *notes = local_notes;
  return r;
}
