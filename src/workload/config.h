/* config.h — the validated scenario, as plain C structs.
 *
 * What it models: everything a user states about one training job — the model (Megatron
 * TransformerConfig names), the training shape, the parallel layout, DDP, communication overlap,
 * recomputation and launch environment. io/ fills these from JSON and validates them; every
 * layer above hw/ reads them. Field names follow Megatron-Core / Megatron-Bridge so a user can
 * copy values from a recipe.
 *
 * Units: sizes in elements or tokens unless the name says `_bytes`; booleans are `bool`.
 * Invariants after pn_scenario validation (io/): every size > 0; tp*pp*cp divides num_gpus;
 * the layers split over pp * vpp virtual stages as Megatron-Core splits them (workload/split.h: evenly,
 * num_layers + 1 for each account_for_*_in_pipeline_split, or unevenly, or by a layout, whose vpp
 * is then derived); global_batch % (micro_batch * dp) == 0.
 * Tri-state options (`PnTri`) distinguish "user left unset" from an explicit value, because the
 * frameworks' gating (Megatron-Bridge CommOverlapConfig) lets explicit user values win.
 */
#ifndef PN_WORKLOAD_CONFIG_H
#define PN_WORKLOAD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/profile.h"

typedef enum { PN_TRI_UNSET = -1, PN_TRI_FALSE = 0, PN_TRI_TRUE = 1 } PnTri;

/* Bytes of a pipeline layout in normal form, with its NUL (split.h): room for ~1,000 layers. */
#define PN_LAYOUT_MAX 1024

typedef enum { PN_ACT_GELU, PN_ACT_SWIGLU, PN_ACT_SQUARED_RELU, PN_ACT_RELU } PnActivation;
typedef enum { PN_NORM_LAYERNORM, PN_NORM_RMSNORM } PnNorm;
typedef enum { PN_PREC_BF16, PN_PREC_FP8 } PnPrecision;
/* Megatron-Core fp8_recipe (transformer_config.py; default "delayed"). Only delayed and tensorwise
 * (per-tensor current scaling) are simulated; io/ refuses the others for fp8 runs. */
typedef enum { PN_FP8_DELAYED, PN_FP8_TENSORWISE, PN_FP8_BLOCKWISE, PN_FP8_MXFP8 } PnFp8Recipe;
/* Megatron-Core cross_entropy_fusion_impl (model_parallel_config.py; default "native"): which fused
 * cross entropy runs when cross_entropy_loss_fusion is on. */
typedef enum { PN_CE_FUSION_NATIVE, PN_CE_FUSION_TE } PnCeFusionImpl;
/* A tensor's storage type in the optimizer (Megatron-LM's --main-params-dtype / --exp-avg-dtype
 * choices); PN_OPTIM_FP32 is Megatron's default. */
typedef enum { PN_OPTIM_FP32, PN_OPTIM_FP16, PN_OPTIM_BF16, PN_OPTIM_FP8 } PnOptimDtype;
typedef enum { PN_RECOMPUTE_NONE, PN_RECOMPUTE_SELECTIVE, PN_RECOMPUTE_FULL } PnRecomputeGranularity;
typedef enum { PN_RECOMPUTE_METHOD_UNIFORM, PN_RECOMPUTE_METHOD_BLOCK } PnRecomputeMethod;
typedef enum { PN_CP_P2P, PN_CP_ALL_GATHER, PN_CP_A2A, PN_CP_A2A_P2P } PnCpCommType;
/* Megatron-FSDP's data_parallel_sharding_strategy (ZeRO-0 to ZeRO-3); optim_grads_params is its
 * default. */
typedef enum { PN_FSDP_NO_SHARD, PN_FSDP_OPTIM, PN_FSDP_OPTIM_GRADS, PN_FSDP_OPTIM_GRADS_PARAMS } PnFsdpShard;
/* Megatron-Core moe_token_dispatcher_type; "allgather" is its default. */
typedef enum { PN_MOE_DISPATCHER_ALLGATHER, PN_MOE_DISPATCHER_ALLTOALL, PN_MOE_DISPATCHER_FLEX } PnMoeDispatcher;

/* Megatron-Core recompute_modules (selective recompute), as a bit set; Megatron's default is
 * ["core_attn"]. workload/ops.c simulates each (its Rc). */
typedef enum {
  PN_RECOMPUTE_MODULE_CORE_ATTN      = 1u << 0,
  PN_RECOMPUTE_MODULE_MOE_ACT        = 1u << 1,
  PN_RECOMPUTE_MODULE_LAYERNORM      = 1u << 2,
  PN_RECOMPUTE_MODULE_MLA_UP_PROJ    = 1u << 3,
  PN_RECOMPUTE_MODULE_MLP            = 1u << 4,
  PN_RECOMPUTE_MODULE_MOE            = 1u << 5,
  PN_RECOMPUTE_MODULE_SHARED_EXPERTS = 1u << 6,
} PnRecomputeModule;

/* Megatron-Core CudaGraphModule (per-layer CUDA graph capture regions, cuda_graph_modules), as
 * a bit set; 0 (Megatron's "full", normalized to []) captures the whole layer. It acts with a
 * per-layer cuda_graph_impl (overlap/graphs.c gates it, sched/graphs.c captures it) and feeds the
 * gating of delay_wgrad_compute. */
typedef enum {
  PN_CUDA_GRAPH_ATTN           = 1u << 0,
  PN_CUDA_GRAPH_MLP            = 1u << 1,
  PN_CUDA_GRAPH_MOE            = 1u << 2,
  PN_CUDA_GRAPH_MOE_ROUTER     = 1u << 3,
  PN_CUDA_GRAPH_MOE_PREPROCESS = 1u << 4,
  PN_CUDA_GRAPH_MAMBA          = 1u << 5,
} PnCudaGraphModule;

/* Megatron-LM --transformer-impl: the layer spec of pretrain_gpt.py (gpt_builders.py
 * _get_transformer_layer_spec): Transformer Engine's modules, or Megatron-Core's own ("local":
 * tensor_parallel ColumnParallelLinear / RowParallelLinear over torch.matmul, a torch or Apex norm,
 * DotProductAttention). */
typedef enum { PN_TRANSFORMER_IMPL_TE, PN_TRANSFORMER_IMPL_LOCAL } PnTransformerImpl;

/* What drives the layers: Megatron-Core (its TransformerLayer, attention and MLP modules, its DDP,
 * whose Python the host runs around the kernels: host.te_layer_* / local_layer_* / moe_*), or a
 * plain PyTorch training loop with none of it ("pytorch": microbench/e2e's harness). */
typedef enum { PN_FRAMEWORK_MEGATRON_CORE, PN_FRAMEWORK_PYTORCH } PnFramework;
/* Megatron-Core AttnBackend (transformer/enums.py; --attention-backend, default auto): with TE
 * layers, which TE attention runs (flash, fused = cuDNN, unfused = TE's UnfusedDotProductAttention,
 * auto = TE's choice, a fused one on Hopper); local = Megatron-Core's DotProductAttention. The local
 * layer spec always runs DotProductAttention. */
typedef enum {
  PN_ATTN_BACKEND_AUTO,
  PN_ATTN_BACKEND_FLASH,
  PN_ATTN_BACKEND_FUSED,
  PN_ATTN_BACKEND_UNFUSED,
  PN_ATTN_BACKEND_LOCAL
} PnAttnBackend;

/* Megatron-Core cuda_graph_impl (transformer_config.py): none; per-layer graphs recorded by
 * Megatron's CudaGraphManager (local; the deprecated enable_cuda_graph) or made by TE's
 * make_graphed_callables (transformer_engine; the deprecated external_cuda_graph); or the whole
 * forward_backward_func captured once (full_iteration, full_cuda_graph.py). */
typedef enum {
  PN_CUDA_GRAPH_IMPL_NONE,
  PN_CUDA_GRAPH_IMPL_LOCAL,
  PN_CUDA_GRAPH_IMPL_TE,
  PN_CUDA_GRAPH_IMPL_FULL_ITERATION,
} PnCudaGraphImpl;

/* Longest moe_layer_freq list (layers) a model may give. */
#define PN_MAX_MOE_LAYER_PATTERN 1024

/* A transformer decoder, Megatron TransformerConfig names. MoE fields are carried (num_moe_experts
 * > 0) so the format is stable; dense models leave them 0. */
typedef struct {
  char name[64];
  int64_t num_layers;
  int64_t hidden_size;
  int64_t ffn_hidden_size;
  int64_t num_attention_heads;
  int64_t num_query_groups; /* == num_attention_heads for MHA */
  int64_t kv_channels;      /* head dim; hidden/heads when unset */
  bool gated_linear_unit;   /* SwiGLU: fc1 produces 2*ffn */
  PnActivation activation;
  PnNorm normalization;
  int64_t vocab_size; /* as given; padded by make_vocab_size_divisible_by * tp */
  int64_t make_vocab_size_divisible_by;
  bool untie_embeddings_and_output_weights;
  bool add_bias_linear;
  bool add_qkv_bias;
  double hidden_dropout; /* > 0 adds dropout kernels */
  double attention_dropout;
  int64_t max_position_embeddings;
  char position_embedding_type[24]; /* "rope" | "learned_absolute" | "none" */
  /* mixture of experts: every layer is a MoE layer when num_moe_experts > 0 (moe_layer_freq 1) */
  int64_t num_moe_experts;
  int64_t moe_router_topk;
  int64_t moe_ffn_hidden_size;
  int64_t moe_shared_expert_intermediate_size;
  /* token dropping (TransformerConfig.moe_expert_capacity_factor, 0 = None: dropless): each expert
   * takes at most ceil(tokens * topk / experts * factor) of a GPU's routed token copies; with
   * moe_pad_expert_input_to_capacity every expert's input is padded to that capacity, so the
   * alltoall dispatcher knows its sizes without reading the token counts on the host */
  double moe_expert_capacity_factor;
  bool moe_pad_expert_input_to_capacity;
  bool moe_grouped_gemm; /* the local experts in one grouped GEMM (TEGroupedMLP); false: Megatron-Core's
                            SequentialMLP, a Python call per local expert. Default true (Bridge's recipes) */
  /* moe_layer_freq (num_moe_experts > 0): layer i (from 0) is a MoE layer when i % moe_layer_freq
   * == 0 (Megatron's int form, default 1: every layer), or, with moe_layer_pattern_set, when
   * moe_layer_pattern[i] is 1 (the list form, one entry per layer); the others are dense layers
   * with an ffn_hidden_size MLP (gpt_layer_specs.py get_gpt_decoder_layer_specs) */
  int64_t moe_layer_freq;
  bool moe_layer_pattern_set;
  uint8_t moe_layer_pattern[PN_MAX_MOE_LAYER_PATTERN];
  int64_t mtp_num_layers; /* multi-token prediction layers, 0 = none (Megatron None), on the last stage */
  /* multi-latent attention (MLATransformerConfig; transformer/multi_latent_attention.py): q through
   * a q_lora_rank bottleneck (0: Megatron's None, q straight from the hidden state), k and v through
   * kv_lora_rank, query / key heads of qk_head_dim + qk_pos_emb_head_dim (the rope part, one key
   * head shared by all heads), value heads of v_head_dim; num_query_groups and kv_channels unused */
  bool multi_latent_attention;
  int64_t q_lora_rank;
  int64_t kv_lora_rank;
  int64_t qk_head_dim;
  int64_t qk_pos_emb_head_dim;
  int64_t v_head_dim;
  bool qk_layernorm;                  /* MLA: the q / kv latents normalized, fused into their up projections */
  double activation_func_clamp_value; /* the GLU halves clamped to it before the activation (GPT-OSS), 0 = none */
} PnModelConfig;

typedef struct {
  int64_t seq_length;
  int64_t micro_batch_size;
  int64_t global_batch_size;
  PnPrecision precision;
  PnFp8Recipe fp8_recipe;            /* how TE scales the fp8 tensors (precision fp8 only) */
  int iterations;                    /* simulated iterations (>= 1) */
  bool gradient_accumulation_fusion; /* wgrad GEMMs accumulate into main_grad (Bridge GPTModelProvider
                                        default: on when the fused kernels exist) */
  uint32_t cuda_graph_modules;       /* PnCudaGraphModule bits; 0 = the whole layer (with a per-layer impl) */
  PnCudaGraphImpl cuda_graph_impl;   /* none (default): every kernel launched eagerly */
  /* Megatron-LM's fusion switches (--no-masked-softmax-fusion, --no-bias-swiglu-fusion /
   * --no-bias-gelu-fusion, --no-bias-dropout-fusion, --no-rope-fusion, --no-persist-layer-norm),
   * all on by default as in Megatron-LM. The op model prices the fused kernels, and the dense
   * MLP's unfused bias and activation, the unfused rotary embedding and the eager
   * bias-dropout-add as the extra kernels they run (ops.c); the MoE experts' unfused bias and
   * activation are carried so that the loader can say they are not priced. masked_softmax_fusion acts on the softmax of
   * Megatron-Core's DotProductAttention (the unfused attention, ops.c); persist_layer_norm only on Apex's LayerNorm,
   * whose kernels the norm class prices either way. */
  bool masked_softmax_fusion;
  /* Megatron-LM's loss check (pretrain_gpt.py loss_func, on by default; Megatron-Bridge's
   * RerunStateMachineConfig.check_for_nan_in_loss likewise): rerun_state_machine.validate_result
   * evaluates torch.isnan(loss) and torch.isinf(loss) as Python bools, so the host waits for each
   * micro-batch's loss (ops.c) */
  bool check_for_nan_in_loss_and_grad;
  bool bias_activation_fusion;
  bool bias_dropout_fusion;
  bool apply_rope_fusion;
  bool persist_layer_norm;
  /* the optimizer step is Transformer Engine's or Apex's FusedAdam; false: torch.optim.AdamW, which
   * Megatron-LM falls back to without either (megatron/core/optimizer/__init__.py) */
  bool fused_adam;
  /* Megatron-Core's precision-aware optimizer (OptimizerConfig.use_precision_aware_optimizer:
   * Transformer Engine's FusedAdam with the master parameters and moments in the dtypes below;
   * only with the distributed optimizer). Without it the dtypes must stay fp32, as Megatron
   * asserts. main_params_dtype: fp32 or fp16; exp_avg(_sq)_dtype: fp32, fp16, bf16, fp8. The main
   * gradients' dtype is the gradient buffer's (ddp.grad_reduce_in_fp32), as Megatron-LM's
   * arguments.py ties --main-grads-dtype to it. */
  bool use_precision_aware_optimizer;
  PnOptimDtype main_params_dtype;
  PnOptimDtype exp_avg_dtype;
  PnOptimDtype exp_avg_sq_dtype;
  /* the loss: Megatron-Core's unfused vocab-parallel cross entropy (default), or with
   * cross_entropy_loss_fusion its jit-fused version ("native") or Transformer Engine's Triton
   * parallel cross entropy ("te"; Megatron-Bridge's performance recipes) */
  bool cross_entropy_loss_fusion;
  PnCeFusionImpl cross_entropy_fusion_impl;
  PnTransformerImpl transformer_impl; /* default transformer_engine */
  PnAttnBackend attention_backend;    /* default auto */
  PnFramework framework;              /* default megatron_core */
} PnTrainingConfig;

typedef struct {
  int64_t tensor_model_parallel_size;
  int64_t pipeline_model_parallel_size;
  int64_t virtual_pipeline_model_parallel_size; /* 1 when not interleaved */
  int64_t context_parallel_size;
  int64_t expert_model_parallel_size;
  int64_t expert_tensor_parallel_size; /* 0 = unset: Megatron-Core takes tensor_model_parallel_size */
  PnMoeDispatcher moe_token_dispatcher_type;
  bool sequence_parallel;
  int64_t microbatch_group_size_per_vp_stage;   /* 0 = default (pp) */
  bool account_for_embedding_in_pipeline_split; /* the embedding counts as one layer of the first stage */
  bool account_for_loss_in_pipeline_split;      /* the output layer + loss count as one layer of the last */
  /* Megatron-Core's uneven split (workload/split.h): the decoder layers of the first / last
   * pipeline stage, 0 = unset (Megatron None) */
  int64_t num_layers_in_first_pipeline_stage;
  int64_t num_layers_in_last_pipeline_stage;
  /* Megatron-Core's pipeline_model_parallel_layout in split.h's normal form ("Ettt|tttt|ttL"), or
   * "" for none */
  char pipeline_model_parallel_layout[PN_LAYOUT_MAX];
  int64_t data_parallel_size; /* derived: gpus / (tp*pp*cp) */
  int64_t num_microbatches;   /* derived: gbs / (mbs*dp) */
} PnParallelConfig;

typedef struct {
  bool use_distributed_optimizer;
  PnTri overlap_grad_reduce;
  PnTri overlap_param_gather;
  PnTri align_param_gather;
  PnTri overlap_param_gather_with_optimizer_step;
  int64_t bucket_size; /* elements; 0 = default max(40M, 1M*dp_cp) */
  bool grad_reduce_in_fp32;
  bool fp8_param_gather;
  int64_t num_distributed_optimizer_instances;
  bool average_in_collective;
  /* Megatron-FSDP (--use-megatron-fsdp) in place of Megatron-Core's DistributedDataParallel */
  bool use_megatron_fsdp;
  PnFsdpShard data_parallel_sharding_strategy;
  int64_t suggested_communication_unit_size; /* elements; 0 = Megatron-FSDP's default */
  bool fsdp_double_buffer;
} PnDdpConfig;

typedef struct {
  PnTri tp_comm_overlap;
  char tp_comm_overlap_cfg[96]; /* preset name or "" */
  PnTri overlap_p2p_comm;
  PnTri batch_p2p_comm;
  bool overlap_p2p_comm_warmup_flush;
  PnCpCommType cp_comm_type;
  bool defer_embedding_wgrad_compute;
  bool delay_wgrad_compute;
  bool overlap_moe_expert_parallel_comm; /* EP all-to-all overlap: Megatron's combined 1F1B schedule */
  bool moe_shared_expert_overlap;
  bool transformer_engine; /* Transformer Engine is installed (Bridge HAVE_TE); default true */
  /* Megatron-LM PR #4268 (unmerged): P2P / delayed-wgrad overlap inside the fine-grained EP-overlap
   * (combined 1F1B) schedule. */
  bool overlap_p2p_backward_on_comm_stream;
  int64_t overlap_p2p_wgrad_delayed_layer_number; /* default 1 */
  bool overlap_p2p_with_transformer_layer_wgrad;
} PnCommOverlapConfig;

typedef struct {
  PnRecomputeGranularity recompute_granularity;
  PnRecomputeMethod recompute_method;
  int64_t recompute_num_layers; /* full recompute: layers per stage recomputed (0 = all) */
  uint32_t recompute_modules;   /* PnRecomputeModule bits (selective); default core_attn */
} PnRecomputeConfig;

typedef struct {
  int cuda_device_max_connections; /* CUDA_DEVICE_MAX_CONNECTIONS, default 8 */
  int nvte_fwd_layernorm_sm_margin;
  int nvte_bwd_layernorm_sm_margin;
  int nccl_min_ctas; /* 0 = NCCL default */
  int nccl_max_ctas;
  bool nccl_nvls_enable;
  bool ub_skipmc; /* UB_SKIPMC: Transformer Engine's userbuffers without NVLink multicast */
} PnEnvConfig;

typedef struct {
  char profile[64]; /* name of hwprofiles/<profile>.json */
  int64_t num_gpus;
  double host_speed;       /* the training hosts' CPU speed over the host the profile's figures were measured on
                              (host.cpu): host work (launches, framework Python) takes host_ns / host_speed; 1 =
                              that host; unset (0 in the file): a DGX host's (pn_hw_profile_dgx_host_speed) */
  bool host_speed_default; /* derived: it was unset */
} PnHardwareConfig;

typedef struct {
  char path[512]; /* file it came from, for messages */
  PnModelConfig model;
  PnHardwareConfig hardware;
  PnTrainingConfig training;
  PnParallelConfig parallel;
  PnDdpConfig ddp;
  PnCommOverlapConfig comm_overlap;
  PnRecomputeConfig recompute;
  PnEnvConfig env;
  PnHwProfile *hw; /* owned; loaded from hardware.profile */
} PnScenario;

#endif
