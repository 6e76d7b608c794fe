/* megatron.c — the scenario-key ↔ Megatron-LM argument table (megatron.h). Names as in
 * Megatron-LM's megatron/training/arguments.py (core_r0.14 and later). */
#include "io/megatron.h"

#include <stdlib.h>
#include <string.h>

const PnMegatronArg pn_megatron_args[] = {
    {"model.num_layers", "--num-layers", PN_MEGATRON_VALUE},
    {"model.hidden_size", "--hidden-size", PN_MEGATRON_VALUE},
    {"model.ffn_hidden_size", "--ffn-hidden-size", PN_MEGATRON_VALUE},
    {"model.num_attention_heads", "--num-attention-heads", PN_MEGATRON_VALUE},
    {"model.num_query_groups", "--group-query-attention --num-query-groups", PN_MEGATRON_CUSTOM},
    {"model.kv_channels", "--kv-channels", PN_MEGATRON_VALUE},
    {"model.activation", "--swiglu or --squared-relu (GELU without either)", PN_MEGATRON_CUSTOM},
    {"model.gated_linear_unit", "--swiglu", PN_MEGATRON_CUSTOM},
    {"model.normalization", "--normalization", PN_MEGATRON_VALUE},
    {"model.vocab_size", "--vocab-size", PN_MEGATRON_VALUE},
    {"model.make_vocab_size_divisible_by", "--make-vocab-size-divisible-by", PN_MEGATRON_VALUE},
    {"model.untie_embeddings_and_output_weights", "--untie-embeddings-and-output-weights", PN_MEGATRON_FLAG},
    {"model.add_bias_linear", "--disable-bias-linear", PN_MEGATRON_NEG_FLAG},
    {"model.add_qkv_bias", "--add-qkv-bias", PN_MEGATRON_FLAG},
    {"model.hidden_dropout", "--hidden-dropout", PN_MEGATRON_VALUE},
    {"model.attention_dropout", "--attention-dropout", PN_MEGATRON_VALUE},
    {"model.max_position_embeddings", "--max-position-embeddings", PN_MEGATRON_VALUE},
    {"model.position_embedding_type", "--position-embedding-type", PN_MEGATRON_VALUE},
    {"model.num_moe_experts", "--num-experts", PN_MEGATRON_VALUE},
    {"model.moe_router_topk", "--moe-router-topk", PN_MEGATRON_VALUE},
    {"model.moe_ffn_hidden_size", "--moe-ffn-hidden-size", PN_MEGATRON_VALUE},
    {"model.moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size", PN_MEGATRON_VALUE},
    {"model.moe_grouped_gemm", "--moe-grouped-gemm", PN_MEGATRON_FLAG},
    {"model.moe_expert_capacity_factor", "--moe-expert-capacity-factor", PN_MEGATRON_VALUE},
    {"model.moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity", PN_MEGATRON_FLAG},
    {"model.moe_layer_freq", "--moe-layer-freq", PN_MEGATRON_CUSTOM},
    {"model.mtp_num_layers", "--mtp-num-layers", PN_MEGATRON_VALUE},
    {"model.multi_latent_attention", "--multi-latent-attention", PN_MEGATRON_FLAG},
    {"model.q_lora_rank", "--q-lora-rank", PN_MEGATRON_VALUE},
    {"model.kv_lora_rank", "--kv-lora-rank", PN_MEGATRON_VALUE},
    {"model.qk_head_dim", "--qk-head-dim", PN_MEGATRON_VALUE},
    {"model.qk_pos_emb_head_dim", "--qk-pos-emb-head-dim", PN_MEGATRON_VALUE},
    {"model.v_head_dim", "--v-head-dim", PN_MEGATRON_VALUE},
    {"model.qk_layernorm", "--qk-layernorm", PN_MEGATRON_FLAG},
    {"model.activation_func_clamp_value", "--activation-func-clamp-value", PN_MEGATRON_VALUE},
    {"hardware.num_gpus", "the launcher's world size (nodes x GPUs per node)", PN_MEGATRON_DERIVED},
    {"training.precision", "--bf16, --fp8-format", PN_MEGATRON_CUSTOM},
    {"training.fp8_recipe", "--fp8-recipe", PN_MEGATRON_VALUE},
    {"training.gradient_accumulation_fusion", "--no-gradient-accumulation-fusion", PN_MEGATRON_NEG_FLAG},
    {"training.masked_softmax_fusion", "--no-masked-softmax-fusion", PN_MEGATRON_NEG_FLAG},
    {"training.check_for_nan_in_loss_and_grad", "--no-check-for-nan-in-loss-and-grad", PN_MEGATRON_NEG_FLAG},
    {"training.bias_activation_fusion", "--no-bias-swiglu-fusion or --no-bias-gelu-fusion", PN_MEGATRON_CUSTOM},
    {"training.bias_dropout_fusion", "--no-bias-dropout-fusion", PN_MEGATRON_NEG_FLAG},
    {"training.apply_rope_fusion", "--no-rope-fusion", PN_MEGATRON_NEG_FLAG},
    {"training.persist_layer_norm", "--no-persist-layer-norm", PN_MEGATRON_NEG_FLAG},
    {"training.cross_entropy_loss_fusion", "--cross-entropy-loss-fusion", PN_MEGATRON_FLAG},
    {"training.cross_entropy_fusion_impl", "--cross-entropy-fusion-impl", PN_MEGATRON_VALUE},
    {"training.cuda_graph_impl", "--cuda-graph-impl", PN_MEGATRON_VALUE},
    {"training.use_precision_aware_optimizer", "--use-precision-aware-optimizer", PN_MEGATRON_FLAG},
    {"training.main_params_dtype", "--main-params-dtype", PN_MEGATRON_VALUE},
    {"training.exp_avg_dtype", "--exp-avg-dtype", PN_MEGATRON_VALUE},
    {"training.exp_avg_sq_dtype", "--exp-avg-sq-dtype", PN_MEGATRON_VALUE},
    {"training.transformer_impl", "--transformer-impl", PN_MEGATRON_VALUE},
    {"training.attention_backend", "--attention-backend", PN_MEGATRON_VALUE},
    {"training.cuda_graph_modules", "--cuda-graph-modules", PN_MEGATRON_CUSTOM},
    {"training.seq_length", "--seq-length", PN_MEGATRON_VALUE},
    {"training.micro_batch_size", "--micro-batch-size", PN_MEGATRON_VALUE},
    {"training.global_batch_size", "--global-batch-size", PN_MEGATRON_VALUE},
    {"parallel.tensor_model_parallel_size", "--tensor-model-parallel-size", PN_MEGATRON_VALUE},
    {"parallel.pipeline_model_parallel_size", "--pipeline-model-parallel-size", PN_MEGATRON_VALUE},
    {"parallel.virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank", PN_MEGATRON_VALUE},
    {"parallel.context_parallel_size", "--context-parallel-size", PN_MEGATRON_VALUE},
    {"parallel.expert_model_parallel_size", "--expert-model-parallel-size", PN_MEGATRON_VALUE},
    {"parallel.expert_tensor_parallel_size", "--expert-tensor-parallel-size", PN_MEGATRON_VALUE},
    {"parallel.moe_token_dispatcher_type", "--moe-token-dispatcher-type", PN_MEGATRON_VALUE},
    {"parallel.sequence_parallel", "--sequence-parallel", PN_MEGATRON_FLAG},
    {"parallel.microbatch_group_size_per_vp_stage", "--microbatch-group-size-per-virtual-pipeline-stage",
     PN_MEGATRON_VALUE},
    {"parallel.account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split", PN_MEGATRON_FLAG},
    {"parallel.account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split", PN_MEGATRON_FLAG},
    /* TransformerConfig's num_layers_in_first/last_pipeline_stage (training/argument_utils.py) */
    {"parallel.num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers", PN_MEGATRON_VALUE},
    {"parallel.num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers", PN_MEGATRON_VALUE},
    {"parallel.pipeline_model_parallel_layout", "--pipeline-model-parallel-layout", PN_MEGATRON_CUSTOM},
    {"ddp.use_distributed_optimizer", "--use-distributed-optimizer", PN_MEGATRON_FLAG},
    {"ddp.overlap_grad_reduce", "--overlap-grad-reduce", PN_MEGATRON_FLAG},
    {"ddp.overlap_param_gather", "--overlap-param-gather", PN_MEGATRON_FLAG},
    {"ddp.align_param_gather", "--no-align-param-gather", PN_MEGATRON_NEG_FLAG},
    {"ddp.overlap_param_gather_with_optimizer_step", "--overlap-param-gather-with-optimizer-step", PN_MEGATRON_FLAG},
    {"ddp.bucket_size", "--ddp-bucket-size", PN_MEGATRON_VALUE},
    {"ddp.grad_reduce_in_fp32", "--accumulate-allreduce-grads-in-fp32 (the default with --bf16), --grad-reduce-in-bf16",
     PN_MEGATRON_CUSTOM},
    {"ddp.fp8_param_gather", "--fp8-param-gather", PN_MEGATRON_FLAG},
    {"ddp.num_distributed_optimizer_instances", "--num-distributed-optimizer-instances", PN_MEGATRON_VALUE},
    {"ddp.average_in_collective", "--ddp-average-in-collective", PN_MEGATRON_FLAG},
    {"ddp.use_megatron_fsdp", "--use-megatron-fsdp", PN_MEGATRON_FLAG},
    {"ddp.data_parallel_sharding_strategy", "--data-parallel-sharding-strategy", PN_MEGATRON_VALUE},
    {"ddp.suggested_communication_unit_size", "--suggested-communication-unit-size", PN_MEGATRON_VALUE},
    {"ddp.fsdp_double_buffer", "--fsdp-double-buffer", PN_MEGATRON_FLAG},
    {"comm_overlap.tp_comm_overlap", "--tp-comm-overlap", PN_MEGATRON_FLAG},
    {"comm_overlap.tp_comm_overlap_cfg", "--tp-comm-overlap-cfg", PN_MEGATRON_VALUE},
    {"comm_overlap.overlap_p2p_comm", "--no-overlap-p2p-communication", PN_MEGATRON_NEG_FLAG},
    {"comm_overlap.batch_p2p_comm", "not overlap_p2p_comm", PN_MEGATRON_DERIVED},
    {"comm_overlap.overlap_p2p_comm_warmup_flush", "--overlap-p2p-communication-warmup-flush", PN_MEGATRON_FLAG},
    {"comm_overlap.cp_comm_type", "--cp-comm-type", PN_MEGATRON_VALUE},
    {"comm_overlap.defer_embedding_wgrad_compute", "--defer-embedding-wgrad-compute", PN_MEGATRON_FLAG},
    {"comm_overlap.delay_wgrad_compute", "--delay-wgrad-compute", PN_MEGATRON_FLAG},
    {"comm_overlap.overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm", PN_MEGATRON_FLAG},
    {"comm_overlap.moe_shared_expert_overlap", "--moe-shared-expert-overlap", PN_MEGATRON_FLAG},
    {"recompute.recompute_granularity", "--recompute-granularity", PN_MEGATRON_VALUE},
    {"recompute.recompute_method", "--recompute-method", PN_MEGATRON_VALUE},
    {"recompute.recompute_num_layers", "--recompute-num-layers", PN_MEGATRON_VALUE},
    {"recompute.recompute_modules", "--recompute-modules", PN_MEGATRON_CUSTOM},
    {"env.CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_DEVICE_MAX_CONNECTIONS", PN_MEGATRON_ENVIRONMENT},
    {"env.NVTE_FWD_LAYERNORM_SM_MARGIN", "NVTE_FWD_LAYERNORM_SM_MARGIN", PN_MEGATRON_ENVIRONMENT},
    {"env.NVTE_BWD_LAYERNORM_SM_MARGIN", "NVTE_BWD_LAYERNORM_SM_MARGIN", PN_MEGATRON_ENVIRONMENT},
    {"env.NCCL_MIN_CTAS", "NCCL_MIN_CTAS", PN_MEGATRON_ENVIRONMENT},
    {"env.NCCL_MAX_CTAS", "NCCL_MAX_CTAS", PN_MEGATRON_ENVIRONMENT},
    {"env.NCCL_NVLS_ENABLE", "NCCL_NVLS_ENABLE", PN_MEGATRON_ENVIRONMENT},
    {"env.UB_SKIPMC", "UB_SKIPMC", PN_MEGATRON_ENVIRONMENT},
};
const size_t pn_megatron_n_args = G_N_ELEMENTS(pn_megatron_args);

const PnMegatronArg *pn_megatron_arg(const char *key)
{
  for (size_t i = 0; i < pn_megatron_n_args; i++)
    if (strcmp(pn_megatron_args[i].key, key) == 0)
      return &pn_megatron_args[i];
  return NULL;
}

static int flag_cmp(const void *key, const void *row) { return strcmp(key, ((const PnMegatronFlag *)row)->name); }

const PnMegatronFlag *pn_megatron_flag(const char *name)
{
  return bsearch(name, pn_megatron_flags, pn_megatron_n_flags, sizeof pn_megatron_flags[0], flag_cmp);
}

void pn_megatron_append(GString *out, const char *key, const PnScenarioValue *v)
{
  const PnMegatronArg *a = pn_megatron_arg(key);
  if (a == NULL || strcmp(v->text, "null") == 0)
    return;
  /* enum names are written bare on a command line */
  gsize n               = strlen(v->text);
  const char *text      = v->text;
  g_autofree char *bare = n >= 2 && text[0] == '"' && text[n - 1] == '"' ? g_strndup(text + 1, n - 2) : g_strdup(text);
  switch (a->form) {
  case PN_MEGATRON_VALUE:
    g_string_append_printf(out, " %s %s", a->arg, bare);
    break;
  case PN_MEGATRON_FLAG:
    if (strcmp(bare, "true") == 0)
      g_string_append_printf(out, " %s", a->arg);
    break;
  case PN_MEGATRON_NEG_FLAG:
    if (strcmp(bare, "false") == 0)
      g_string_append_printf(out, " %s", a->arg);
    break;
  case PN_MEGATRON_ENVIRONMENT:
    g_string_append_printf(out, " %s=%s", a->arg,
                           strcmp(bare, "true") == 0    ? "1"
                           : strcmp(bare, "false") == 0 ? "0"
                                                        : bare);
    break;
  case PN_MEGATRON_DERIVED:
  case PN_MEGATRON_CUSTOM:
    break;
  }
}
