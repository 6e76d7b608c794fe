/* scenario.c — scenario JSON (+ --set overrides) into a validated PnScenario (see scenario.h). */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "io/hwprofile.h"
#include "io/io-private.h"
#include "io/scenario.h"
#include "workload/ops.h"
#include "workload/rules.h"
#include "workload/split.h"

#define SCENARIO_SCHEMA_VERSION 1

/* ---- schema tables ---- */

#define F_INT(st, k, field, lo, hi)                                                                                    \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_INT, .offset = offsetof(st, field), .size = sizeof(((st *)0)->field), .min = lo,        \
    .max = hi, .absurd = true                                                                                          \
  }
#define F_INT_REQ(st, k, field, lo, hi)                                                                                \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_INT, .offset = offsetof(st, field), .size = sizeof(((st *)0)->field), .min = lo,        \
    .max = hi, .absurd = true, .required = true                                                                        \
  }
#define F_RANGE(st, k, field, lo, hi)                                                                                  \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_INT, .offset = offsetof(st, field), .size = sizeof(((st *)0)->field), .min = lo,        \
    .max = hi, .absurd = false                                                                                         \
  }
#define F_INT_NULL(st, k, field, lo, hi, absurd_, nullv)                                                               \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_INT_NULL, .offset = offsetof(st, field), .size = sizeof(((st *)0)->field), .min = lo,   \
    .max = hi, .absurd = absurd_, .null_value = nullv                                                                  \
  }
#define F_KIND(st, k, kind_, field)                                                                                    \
  {                                                                                                                    \
    .key = k, .kind = kind_, .offset = offsetof(st, field), .size = sizeof(((st *)0)->field)                           \
  }
#define F_ENUM(st, k, kind_, field, tbl, nullv)                                                                        \
  {                                                                                                                    \
    .key = k, .kind = kind_, .offset = offsetof(st, field), .size = sizeof(((st *)0)->field), .names = tbl,            \
    .null_value = nullv                                                                                                \
  }

G_STATIC_ASSERT(sizeof(PnPrecision) == sizeof(int) && sizeof(PnCpCommType) == sizeof(int) &&
                sizeof(PnRecomputeGranularity) == sizeof(int) && sizeof(PnRecomputeMethod) == sizeof(int) &&
                sizeof(PnMoeDispatcher) == sizeof(int) && sizeof(PnFp8Recipe) == sizeof(int) &&
                sizeof(PnCeFusionImpl) == sizeof(int));
G_STATIC_ASSERT(sizeof(PnCudaGraphImpl) == sizeof(int));

const PnEnumName pn__io_precision_names[]        = {{"bf16", PN_PREC_BF16}, {"fp8", PN_PREC_FP8}, {NULL, 0}};
static const PnEnumName fp8_recipe_names[]       = {{"delayed", PN_FP8_DELAYED},
                                                    {"tensorwise", PN_FP8_TENSORWISE},
                                                    {"blockwise", PN_FP8_BLOCKWISE},
                                                    {"mxfp8", PN_FP8_MXFP8},
                                                    {NULL, 0}};
static const PnEnumName transformer_impl_names[] = {
    {"transformer_engine", PN_TRANSFORMER_IMPL_TE}, {"local", PN_TRANSFORMER_IMPL_LOCAL}, {NULL, 0}};
static const PnEnumName framework_names[] = {
    {"megatron_core", PN_FRAMEWORK_MEGATRON_CORE}, {"pytorch", PN_FRAMEWORK_PYTORCH}, {NULL, 0}};
static const PnEnumName attention_backend_names[] = {
    {"auto", PN_ATTN_BACKEND_AUTO},       {"flash", PN_ATTN_BACKEND_FLASH}, {"fused", PN_ATTN_BACKEND_FUSED},
    {"unfused", PN_ATTN_BACKEND_UNFUSED}, {"local", PN_ATTN_BACKEND_LOCAL}, {NULL, 0}};
static const PnEnumName ce_fusion_names[] = {{"native", PN_CE_FUSION_NATIVE}, {"te", PN_CE_FUSION_TE}, {NULL, 0}};
const PnEnumName pn__io_cp_comm_names[]   = {
      {"p2p", PN_CP_P2P}, {"all_gather", PN_CP_ALL_GATHER}, {"a2a", PN_CP_A2A}, {"a2a+p2p", PN_CP_A2A_P2P}, {NULL, 0}};
const PnEnumName pn__io_fsdp_shard_names[]        = {{"no_shard", PN_FSDP_NO_SHARD},
                                                     {"optim", PN_FSDP_OPTIM},
                                                     {"optim_grads", PN_FSDP_OPTIM_GRADS},
                                                     {"optim_grads_params", PN_FSDP_OPTIM_GRADS_PARAMS},
                                                     {NULL, 0}};
static const PnEnumName main_params_dtype_names[] = {{"fp32", PN_OPTIM_FP32}, {"fp16", PN_OPTIM_FP16}, {NULL, 0}};
static const PnEnumName moment_dtype_names[]      = {
         {"fp32", PN_OPTIM_FP32}, {"fp16", PN_OPTIM_FP16}, {"bf16", PN_OPTIM_BF16}, {"fp8", PN_OPTIM_FP8}, {NULL, 0}};
static const PnEnumName granularity_names[] = {
    {"selective", PN_RECOMPUTE_SELECTIVE}, {"full", PN_RECOMPUTE_FULL}, {NULL, 0}};
static const PnEnumName method_names[] = {
    {"uniform", PN_RECOMPUTE_METHOD_UNIFORM}, {"block", PN_RECOMPUTE_METHOD_BLOCK}, {NULL, 0}};
static const PnEnumName dispatcher_names[]      = {{"allgather", PN_MOE_DISPATCHER_ALLGATHER},
                                                   {"alltoall", PN_MOE_DISPATCHER_ALLTOALL},
                                                   {"flex", PN_MOE_DISPATCHER_FLEX},
                                                   {NULL, 0}};
static const PnEnumName cuda_graph_impl_names[] = {{"none", PN_CUDA_GRAPH_IMPL_NONE},
                                                   {"local", PN_CUDA_GRAPH_IMPL_LOCAL},
                                                   {"transformer_engine", PN_CUDA_GRAPH_IMPL_TE},
                                                   {"full_iteration", PN_CUDA_GRAPH_IMPL_FULL_ITERATION},
                                                   {NULL, 0}};
/* Megatron-Core's recompute_modules choices and CudaGraphModule members (bit sets, see config.h). */
static const PnEnumName recompute_module_names[]  = {{"core_attn", PN_RECOMPUTE_MODULE_CORE_ATTN},
                                                     {"moe_act", PN_RECOMPUTE_MODULE_MOE_ACT},
                                                     {"layernorm", PN_RECOMPUTE_MODULE_LAYERNORM},
                                                     {"mla_up_proj", PN_RECOMPUTE_MODULE_MLA_UP_PROJ},
                                                     {"mlp", PN_RECOMPUTE_MODULE_MLP},
                                                     {"moe", PN_RECOMPUTE_MODULE_MOE},
                                                     {"shared_experts", PN_RECOMPUTE_MODULE_SHARED_EXPERTS},
                                                     {NULL, 0}};
static const PnEnumName cuda_graph_module_names[] = {{"attn", PN_CUDA_GRAPH_ATTN},
                                                     {"mlp", PN_CUDA_GRAPH_MLP},
                                                     {"moe", PN_CUDA_GRAPH_MOE},
                                                     {"moe_router", PN_CUDA_GRAPH_MOE_ROUTER},
                                                     {"moe_preprocess", PN_CUDA_GRAPH_MOE_PREPROCESS},
                                                     {"mamba", PN_CUDA_GRAPH_MAMBA},
                                                     {NULL, 0}};

static const PnField hardware_fields[] = {
    {.key = "profile", .kind = PN_FIELD_CUSTOM, .required = true},
    F_INT_REQ(PnHardwareConfig, "num_gpus", num_gpus, 1, 10000000),
    {.key    = "host_speed",
     .kind   = PN_FIELD_DOUBLE,
     .offset = offsetof(PnHardwareConfig, host_speed),
     .size   = sizeof(double),
     .dmin   = 0.01,
     .dmax   = 100.0},
    {.key = NULL},
};

static const PnField training_fields[] = {
    F_INT_REQ(PnTrainingConfig, "seq_length", seq_length, 1, 100000000),
    F_INT(PnTrainingConfig, "micro_batch_size", micro_batch_size, 1, 1000000000),
    F_INT_REQ(PnTrainingConfig, "global_batch_size", global_batch_size, 1, 1000000000),
    F_ENUM(PnTrainingConfig, "precision", PN_FIELD_ENUM, precision, pn__io_precision_names, 0),
    F_ENUM(PnTrainingConfig, "fp8_recipe", PN_FIELD_ENUM, fp8_recipe, fp8_recipe_names, 0),
    F_RANGE(PnTrainingConfig, "iterations", iterations, 1, 100),
    F_KIND(PnTrainingConfig, "gradient_accumulation_fusion", PN_FIELD_BOOL, gradient_accumulation_fusion),
    {.key = "cuda_graph_modules", .kind = PN_FIELD_CUSTOM},
    F_ENUM(PnTrainingConfig, "cuda_graph_impl", PN_FIELD_ENUM, cuda_graph_impl, cuda_graph_impl_names, 0),
    F_KIND(PnTrainingConfig, "masked_softmax_fusion", PN_FIELD_BOOL, masked_softmax_fusion),
    F_KIND(PnTrainingConfig, "check_for_nan_in_loss_and_grad", PN_FIELD_BOOL, check_for_nan_in_loss_and_grad),
    F_KIND(PnTrainingConfig, "bias_activation_fusion", PN_FIELD_BOOL, bias_activation_fusion),
    F_KIND(PnTrainingConfig, "bias_dropout_fusion", PN_FIELD_BOOL, bias_dropout_fusion),
    F_KIND(PnTrainingConfig, "apply_rope_fusion", PN_FIELD_BOOL, apply_rope_fusion),
    F_KIND(PnTrainingConfig, "cross_entropy_loss_fusion", PN_FIELD_BOOL, cross_entropy_loss_fusion),
    F_ENUM(PnTrainingConfig, "cross_entropy_fusion_impl", PN_FIELD_ENUM, cross_entropy_fusion_impl, ce_fusion_names, 0),
    F_KIND(PnTrainingConfig, "persist_layer_norm", PN_FIELD_BOOL, persist_layer_norm),
    F_KIND(PnTrainingConfig, "fused_adam", PN_FIELD_BOOL, fused_adam),
    F_KIND(PnTrainingConfig, "use_precision_aware_optimizer", PN_FIELD_BOOL, use_precision_aware_optimizer),
    F_ENUM(PnTrainingConfig, "main_params_dtype", PN_FIELD_ENUM, main_params_dtype, main_params_dtype_names, 0),
    F_ENUM(PnTrainingConfig, "exp_avg_dtype", PN_FIELD_ENUM, exp_avg_dtype, moment_dtype_names, 0),
    F_ENUM(PnTrainingConfig, "exp_avg_sq_dtype", PN_FIELD_ENUM, exp_avg_sq_dtype, moment_dtype_names, 0),
    F_ENUM(PnTrainingConfig, "transformer_impl", PN_FIELD_ENUM, transformer_impl, transformer_impl_names, 0),
    F_ENUM(PnTrainingConfig, "framework", PN_FIELD_ENUM, framework, framework_names, 0),
    F_ENUM(PnTrainingConfig, "attention_backend", PN_FIELD_ENUM, attention_backend, attention_backend_names, 0),
    {.key = NULL},
};

static const PnField parallel_fields[] = {
    F_INT(PnParallelConfig, "tensor_model_parallel_size", tensor_model_parallel_size, 1, 10000000),
    F_INT(PnParallelConfig, "pipeline_model_parallel_size", pipeline_model_parallel_size, 1, 10000000),
    F_INT_NULL(PnParallelConfig, "virtual_pipeline_model_parallel_size", virtual_pipeline_model_parallel_size, 1,
               100000, true, 1),
    F_INT(PnParallelConfig, "context_parallel_size", context_parallel_size, 1, 10000000),
    F_INT(PnParallelConfig, "expert_model_parallel_size", expert_model_parallel_size, 1, 10000000),
    F_INT_NULL(PnParallelConfig, "expert_tensor_parallel_size", expert_tensor_parallel_size, 1, 10000000, true, 0),
    F_ENUM(PnParallelConfig, "moe_token_dispatcher_type", PN_FIELD_ENUM, moe_token_dispatcher_type, dispatcher_names,
           0),
    F_KIND(PnParallelConfig, "sequence_parallel", PN_FIELD_BOOL, sequence_parallel),
    F_INT_NULL(PnParallelConfig, "microbatch_group_size_per_vp_stage", microbatch_group_size_per_vp_stage, 1,
               1000000000, true, 0),
    F_KIND(PnParallelConfig, "account_for_embedding_in_pipeline_split", PN_FIELD_BOOL,
           account_for_embedding_in_pipeline_split),
    F_KIND(PnParallelConfig, "account_for_loss_in_pipeline_split", PN_FIELD_BOOL, account_for_loss_in_pipeline_split),
    F_INT_NULL(PnParallelConfig, "num_layers_in_first_pipeline_stage", num_layers_in_first_pipeline_stage, 1, 100000,
               true, 0),
    F_INT_NULL(PnParallelConfig, "num_layers_in_last_pipeline_stage", num_layers_in_last_pipeline_stage, 1, 100000,
               true, 0),
    {.key = "pipeline_model_parallel_layout", .kind = PN_FIELD_CUSTOM},
    {.key = NULL},
};

static const PnField ddp_fields[] = {
    F_KIND(PnDdpConfig, "use_distributed_optimizer", PN_FIELD_BOOL, use_distributed_optimizer),
    F_KIND(PnDdpConfig, "overlap_grad_reduce", PN_FIELD_TRI, overlap_grad_reduce),
    F_KIND(PnDdpConfig, "overlap_param_gather", PN_FIELD_TRI, overlap_param_gather),
    F_KIND(PnDdpConfig, "align_param_gather", PN_FIELD_TRI, align_param_gather),
    F_KIND(PnDdpConfig, "overlap_param_gather_with_optimizer_step", PN_FIELD_TRI,
           overlap_param_gather_with_optimizer_step),
    F_INT_NULL(PnDdpConfig, "bucket_size", bucket_size, 1, 1000000000000LL, true, 0),
    F_KIND(PnDdpConfig, "grad_reduce_in_fp32", PN_FIELD_BOOL, grad_reduce_in_fp32),
    F_KIND(PnDdpConfig, "fp8_param_gather", PN_FIELD_BOOL, fp8_param_gather),
    F_INT(PnDdpConfig, "num_distributed_optimizer_instances", num_distributed_optimizer_instances, 1, 1000000),
    F_KIND(PnDdpConfig, "average_in_collective", PN_FIELD_BOOL, average_in_collective),
    F_KIND(PnDdpConfig, "use_megatron_fsdp", PN_FIELD_BOOL, use_megatron_fsdp),
    F_ENUM(PnDdpConfig, "data_parallel_sharding_strategy", PN_FIELD_ENUM, data_parallel_sharding_strategy,
           pn__io_fsdp_shard_names, 0),
    F_INT_NULL(PnDdpConfig, "suggested_communication_unit_size", suggested_communication_unit_size, 1, 1000000000000LL,
               true, 0),
    F_KIND(PnDdpConfig, "fsdp_double_buffer", PN_FIELD_BOOL, fsdp_double_buffer),
    {.key = NULL},
};

static const PnField comm_overlap_fields[] = {
    F_KIND(PnCommOverlapConfig, "tp_comm_overlap", PN_FIELD_TRI, tp_comm_overlap),
    F_KIND(PnCommOverlapConfig, "tp_comm_overlap_cfg", PN_FIELD_STRING_NULL, tp_comm_overlap_cfg),
    F_KIND(PnCommOverlapConfig, "overlap_p2p_comm", PN_FIELD_TRI, overlap_p2p_comm),
    F_KIND(PnCommOverlapConfig, "batch_p2p_comm", PN_FIELD_TRI, batch_p2p_comm),
    F_KIND(PnCommOverlapConfig, "overlap_p2p_comm_warmup_flush", PN_FIELD_BOOL, overlap_p2p_comm_warmup_flush),
    F_ENUM(PnCommOverlapConfig, "cp_comm_type", PN_FIELD_ENUM, cp_comm_type, pn__io_cp_comm_names, 0),
    F_KIND(PnCommOverlapConfig, "defer_embedding_wgrad_compute", PN_FIELD_BOOL, defer_embedding_wgrad_compute),
    F_KIND(PnCommOverlapConfig, "delay_wgrad_compute", PN_FIELD_BOOL, delay_wgrad_compute),
    F_KIND(PnCommOverlapConfig, "overlap_moe_expert_parallel_comm", PN_FIELD_BOOL, overlap_moe_expert_parallel_comm),
    F_KIND(PnCommOverlapConfig, "moe_shared_expert_overlap", PN_FIELD_BOOL, moe_shared_expert_overlap),
    F_KIND(PnCommOverlapConfig, "transformer_engine", PN_FIELD_BOOL, transformer_engine),
    F_KIND(PnCommOverlapConfig, "overlap_p2p_backward_on_comm_stream", PN_FIELD_BOOL,
           overlap_p2p_backward_on_comm_stream),
    F_INT(PnCommOverlapConfig, "overlap_p2p_wgrad_delayed_layer_number", overlap_p2p_wgrad_delayed_layer_number, 1,
          100000),
    F_KIND(PnCommOverlapConfig, "overlap_p2p_with_transformer_layer_wgrad", PN_FIELD_BOOL,
           overlap_p2p_with_transformer_layer_wgrad),
    {.key = NULL},
};

static const PnField recompute_fields[] = {
    F_ENUM(PnRecomputeConfig, "recompute_granularity", PN_FIELD_ENUM_NULL, recompute_granularity, granularity_names,
           PN_RECOMPUTE_NONE),
    F_ENUM(PnRecomputeConfig, "recompute_method", PN_FIELD_ENUM, recompute_method, method_names, 0),
    F_INT_NULL(PnRecomputeConfig, "recompute_num_layers", recompute_num_layers, 0, 100000, true, 0),
    {.key = "recompute_modules", .kind = PN_FIELD_CUSTOM},
    {.key = NULL},
};

static const PnField env_fields[] = {
    F_RANGE(PnEnvConfig, "CUDA_DEVICE_MAX_CONNECTIONS", cuda_device_max_connections, 1, 32),
    F_RANGE(PnEnvConfig, "NVTE_FWD_LAYERNORM_SM_MARGIN", nvte_fwd_layernorm_sm_margin, 0, 1024),
    F_RANGE(PnEnvConfig, "NVTE_BWD_LAYERNORM_SM_MARGIN", nvte_bwd_layernorm_sm_margin, 0, 1024),
    F_INT_NULL(PnEnvConfig, "NCCL_MIN_CTAS", nccl_min_ctas, 1, 64, false, 0),
    F_INT_NULL(PnEnvConfig, "NCCL_MAX_CTAS", nccl_max_ctas, 1, 64, false, 0),
    F_KIND(PnEnvConfig, "NCCL_NVLS_ENABLE", PN_FIELD_BOOL01, nccl_nvls_enable),
    F_KIND(PnEnvConfig, "UB_SKIPMC", PN_FIELD_BOOL01, ub_skipmc),
    {.key = NULL},
};

typedef struct {
  const char *key;
  const char *ptr; /* "/key" */
  const PnField *fields;
  size_t offset; /* of the struct in PnScenario */
  bool required;
} PnSection;

static const PnSection sections[] = {
    {"hardware", "/hardware", hardware_fields, offsetof(PnScenario, hardware), true},
    {"training", "/training", training_fields, offsetof(PnScenario, training), true},
    {"parallel", "/parallel", parallel_fields, offsetof(PnScenario, parallel), false},
    {"ddp", "/ddp", ddp_fields, offsetof(PnScenario, ddp), false},
    {"comm_overlap", "/comm_overlap", comm_overlap_fields, offsetof(PnScenario, comm_overlap), false},
    {"recompute", "/recompute", recompute_fields, offsetof(PnScenario, recompute), false},
    {"env", "/env", env_fields, offsetof(PnScenario, env), false},
};

static const PnField top_fields[] = {
    {.key = "schema_version", .kind = PN_FIELD_CUSTOM},
    {.key = "name", .kind = PN_FIELD_IGNORED_STRING},
    {.key = "description", .kind = PN_FIELD_IGNORED_STRING},
    {.key = "source", .kind = PN_FIELD_IGNORED_STRING},
    {.key = "model", .kind = PN_FIELD_CUSTOM},
    {.key = "hardware", .kind = PN_FIELD_CUSTOM},
    {.key = "training", .kind = PN_FIELD_CUSTOM},
    {.key = "parallel", .kind = PN_FIELD_CUSTOM},
    {.key = "ddp", .kind = PN_FIELD_CUSTOM},
    {.key = "comm_overlap", .kind = PN_FIELD_CUSTOM},
    {.key = "recompute", .kind = PN_FIELD_CUSTOM},
    {.key = "env", .kind = PN_FIELD_CUSTOM},
    {.key = NULL},
};

static const PnSection *section_find(const char *key)
{
  for (gsize i = 0; i < G_N_ELEMENTS(sections); i++)
    if (strcmp(sections[i].key, key) == 0)
      return &sections[i];
  return NULL;
}

const char **pn_scenario_section_keys(const char *section)
{
  const PnSection *s = section_find(section);
  if (s == NULL)
    return NULL;
  gsize n           = pn__io_fields_count(s->fields);
  const char **keys = g_new0(const char *, n + 1);
  for (gsize i = 0; i < n; i++)
    keys[i] = s->fields[i].key;
  return keys;
}

/* ---- one field, without JSON ---- */

static bool field_settable(const PnField *f)
{
  switch (f->kind) {
  case PN_FIELD_INT:
  case PN_FIELD_INT_NULL:
  case PN_FIELD_BOOL:
  case PN_FIELD_BOOL01:
  case PN_FIELD_TRI:
  case PN_FIELD_ENUM:
  case PN_FIELD_ENUM_NULL:
  case PN_FIELD_STRING:
  case PN_FIELD_STRING_NULL:
    return f->size <= PN_SCENARIO_VALUE_MAX;
  default:
    return false;
  }
}

static const PnField *field_lookup(const char *name, const PnSection **sec_out)
{
  const char *dot = strchr(name, '.');
  for (gsize i = 0; i < G_N_ELEMENTS(sections); i++) {
    const PnSection *s = &sections[i];
    const PnField *f   = NULL;
    if (dot != NULL && strlen(s->key) == (gsize)(dot - name) && strncmp(s->key, name, dot - name) == 0)
      f = pn__io_field_find(s->fields, dot + 1);
    else if (dot == NULL)
      f = pn__io_field_find(s->fields, name);
    if (f != NULL && f->kind != PN_FIELD_CUSTOM) {
      *sec_out = s;
      return f;
    }
  }
  return NULL;
}

gboolean pn_scenario_field_find(const char *name, const char *display, PnScenarioField *out, GError **error)
{
  PnIoCtx ctx        = {.file = display};
  const PnSection *s = NULL;
  const PnField *f   = field_lookup(name, &s);
  g_autofree char *q = pn__io_quote(name);
  const char *dot    = strchr(name, '.');
  for (gsize i = 0; f == NULL && dot != NULL && i < G_N_ELEMENTS(sections); i++) {
    /* a key of the schema read by hand (a list, a layout): known, but not one value to set */
    const PnField *c = pn__io_field_find(sections[i].fields, dot + 1);
    if (c != NULL && strlen(sections[i].key) == (gsize)(dot - name) &&
        strncmp(sections[i].key, name, dot - name) == 0) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, NULL,
                  "%s cannot be varied (only numbers, booleans, names and short strings can)", q);
      return FALSE;
    }
  }
  if (f == NULL) {
    g_autoptr(GPtrArray) known = g_ptr_array_new_with_free_func(g_free);
    for (gsize i = 0; i < G_N_ELEMENTS(sections); i++)
      for (const PnField *k = sections[i].fields; k->key != NULL; k++)
        if (field_settable(k))
          g_ptr_array_add(known, g_strdup_printf("%s.%s", sections[i].key, k->key));
    const char *hint = pn__io_suggest(name, (const char *const *)known->pdata, known->len);
    if (hint == NULL && strchr(name, '.') != NULL)
      hint = pn__io_suggest(strchr(name, '.') + 1, (const char *const *)known->pdata, known->len);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, NULL, "unknown scenario key %s%s%s%s", q,
                hint ? " (did you mean " : "", hint ? hint : "", hint ? "?)" : "");
    return FALSE;
  }
  if (!field_settable(f)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, NULL,
                "%s cannot be varied (only numbers, booleans, names and strings can)", q);
    return FALSE;
  }
  g_snprintf(out->name, sizeof out->name, "%s.%s", s->key, f->key);
  out->offset    = s->offset + f->offset;
  out->size      = f->size;
  out->enum_like = f->kind != PN_FIELD_INT && f->kind != PN_FIELD_INT_NULL;
  return TRUE;
}

gboolean pn_scenario_field_parse(const PnScenarioField *f, const char *text, const char *display, PnScenarioValue *out,
                                 GError **error)
{
  const PnSection *s = NULL;
  const PnField *fd  = field_lookup(f->name, &s);
  g_assert(fd != NULL);
  PnIoCtx ctx  = {.file = display};
  cJSON *value = cJSON_Parse(text);
  if (value == NULL)
    value = cJSON_CreateString(text);
  cJSON *obj = cJSON_CreateObject();
  cJSON_AddItemToObject(obj, fd->key, value);
  g_autofree PnScenario *scratch = g_new0(PnScenario, 1);
  gboolean ok = pn__io_apply_fields(&ctx, obj, s->ptr, s->fields, (char *)scratch + s->offset, FALSE, error);
  if (ok) {
    memset(out, 0, sizeof *out);
    memcpy(out->bytes, (const char *)scratch + f->offset, f->size);
    char *printed = cJSON_PrintUnformatted(value);
    g_strlcpy(out->text, printed, sizeof out->text);
    cJSON_free(printed);
  }
  cJSON_Delete(obj);
  return ok;
}

void pn_scenario_field_get(const PnScenarioField *f, const PnScenario *sc, PnScenarioValue *out)
{
  const PnSection *s = NULL;
  const PnField *fd  = field_lookup(f->name, &s);
  g_assert(fd != NULL);
  memset(out, 0, sizeof *out);
  memcpy(out->bytes, (const char *)sc + f->offset, f->size);
  const void *p = out->bytes;
  int64_t iv    = f->size == sizeof(int64_t) ? *(const int64_t *)p : f->size == sizeof(int) ? *(const int *)p : 0;
  switch (fd->kind) {
  case PN_FIELD_STRING:
  case PN_FIELD_STRING_NULL: {
    const char *str = (const char *)out->bytes;
    if (fd->kind == PN_FIELD_STRING_NULL && str[0] == '\0') {
      g_strlcpy(out->text, "null", sizeof out->text);
    } else {
      g_autofree char *esc = g_strescape(str, NULL);
      g_snprintf(out->text, sizeof out->text, "\"%s\"", esc);
    }
    break;
  }
  case PN_FIELD_BOOL:
  case PN_FIELD_BOOL01:
    g_strlcpy(out->text, *(const bool *)p ? "true" : "false", sizeof out->text);
    break;
  case PN_FIELD_TRI:
    g_strlcpy(out->text, iv == PN_TRI_UNSET ? "null" : iv ? "true" : "false", sizeof out->text);
    break;
  case PN_FIELD_ENUM:
  case PN_FIELD_ENUM_NULL:
    if (fd->kind == PN_FIELD_ENUM_NULL && iv == fd->null_value)
      g_strlcpy(out->text, "null", sizeof out->text);
    else
      g_snprintf(out->text, sizeof out->text, "\"%s\"", pn__io_enum_name(fd->names, (int)iv));
    break;
  default:
    if (fd->kind == PN_FIELD_INT_NULL && iv == fd->null_value)
      g_strlcpy(out->text, "null", sizeof out->text);
    else
      g_snprintf(out->text, sizeof out->text, "%" G_GINT64_FORMAT, iv);
  }
}

int pn_scenario_field_choices(const PnScenarioField *f, PnScenarioValue *out, int max)
{
  const PnSection *s = NULL;
  const PnField *fd  = field_lookup(f->name, &s);
  g_assert(fd != NULL);
  int n = 0;
  if (fd->kind == PN_FIELD_BOOL || fd->kind == PN_FIELD_BOOL01 || fd->kind == PN_FIELD_TRI) {
    for (int i = 0; i < 2 && n < max; i++)
      n += pn_scenario_field_parse(f, i ? "true" : "false", "choices", &out[n], NULL) ? 1 : 0;
  } else if (fd->kind == PN_FIELD_ENUM || fd->kind == PN_FIELD_ENUM_NULL) {
    for (const PnEnumName *e = fd->names; e->name != NULL && n < max; e++) {
      g_autofree char *q = g_strdup_printf("\"%s\"", e->name);
      n += pn_scenario_field_parse(f, q, "choices", &out[n], NULL) ? 1 : 0;
    }
  }
  return n;
}

/* For the unknown-key hint: where a misplaced key belongs. */
static const char *scenario_where_else(const char *key)
{
  for (gsize i = 0; i < G_N_ELEMENTS(sections); i++)
    if (pn__io_field_find(sections[i].fields, key) != NULL)
      return sections[i].ptr;
  const PnField *mf = pn__io_field_find(pn__io_model_fields, key);
  if (mf != NULL && strcmp(key, "name") != 0 && strcmp(key, "schema_version") != 0)
    return "/model";
  if (pn__io_field_find(top_fields, key) != NULL)
    return "the top level";
  return NULL;
}

static void scenario_defaults(PnScenario *sc)
{
  memset(sc, 0, sizeof *sc);
  sc->training.micro_batch_size                           = 1;
  sc->training.precision                                  = PN_PREC_BF16;
  sc->training.iterations                                 = 1;
  sc->training.gradient_accumulation_fusion               = true;
  sc->training.masked_softmax_fusion                      = true;
  sc->training.check_for_nan_in_loss_and_grad             = true;
  sc->training.bias_activation_fusion                     = true;
  sc->training.bias_dropout_fusion                        = true;
  sc->training.apply_rope_fusion                          = true;
  sc->training.persist_layer_norm                         = true;
  sc->training.fused_adam                                 = true;
  sc->parallel.tensor_model_parallel_size                 = 1;
  sc->parallel.pipeline_model_parallel_size               = 1;
  sc->parallel.virtual_pipeline_model_parallel_size       = 1;
  sc->parallel.context_parallel_size                      = 1;
  sc->parallel.expert_model_parallel_size                 = 1;
  sc->ddp.use_distributed_optimizer                       = true;
  sc->ddp.overlap_grad_reduce                             = PN_TRI_UNSET;
  sc->ddp.overlap_param_gather                            = PN_TRI_UNSET;
  sc->ddp.align_param_gather                              = PN_TRI_UNSET;
  sc->ddp.overlap_param_gather_with_optimizer_step        = PN_TRI_UNSET;
  sc->ddp.num_distributed_optimizer_instances             = 1;
  sc->ddp.data_parallel_sharding_strategy                 = PN_FSDP_OPTIM_GRADS_PARAMS;
  sc->comm_overlap.tp_comm_overlap                        = PN_TRI_UNSET;
  sc->comm_overlap.overlap_p2p_comm                       = PN_TRI_UNSET;
  sc->comm_overlap.batch_p2p_comm                         = PN_TRI_UNSET;
  sc->comm_overlap.cp_comm_type                           = PN_CP_P2P;
  sc->comm_overlap.transformer_engine                     = true;
  sc->comm_overlap.overlap_p2p_wgrad_delayed_layer_number = 1;
  sc->recompute.recompute_granularity                     = PN_RECOMPUTE_NONE;
  sc->recompute.recompute_method                          = PN_RECOMPUTE_METHOD_UNIFORM;
  sc->recompute.recompute_modules                         = PN_RECOMPUTE_MODULE_CORE_ATTN;
  sc->env.cuda_device_max_connections                     = 8;
}

void pn_scenario_free(PnScenario *sc)
{
  if (sc == NULL)
    return;
  pn_hw_profile_free(sc->hw);
  g_free(sc);
}

/* ---- --set ---- */

static const char *const top_keys[] = {"schema_version", "name",     "description", "source", "model",
                                       "hardware",       "training", "parallel",    "ddp",    "comm_overlap",
                                       "recompute",      "env"};

static gboolean set_unknown(const PnIoCtx *sctx, const char *ptr, const char *key, const PnField *fields,
                            GError **error)
{
  const char *sugg = NULL;
  if (fields == NULL) {
    sugg = pn__io_suggest(key, top_keys, G_N_ELEMENTS(top_keys));
  } else {
    gsize n                       = pn__io_fields_count(fields);
    g_autofree const char **known = g_new(const char *, n);
    for (gsize i = 0; i < n; i++)
      known[i] = fields[i].key;
    sugg = pn__io_suggest(key, known, n);
  }
  const char *elsewhere = sugg == NULL ? scenario_where_else(key) : NULL;
  if (sugg != NULL)
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, sctx, ptr, "unknown key (did you mean \"%s\"?)", sugg);
  else if (elsewhere != NULL)
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, sctx, ptr, "unknown key here (it belongs in %s)", elsewhere);
  else
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, sctx, ptr, "unknown key");
  return FALSE;
}

/* Applies one "dotted.key=value" to `root` and records the pointer it wrote in `set_paths`. */
static gboolean apply_set(const PnIoCtx *fctx, cJSON *root, const char *set, GHashTable *set_paths, GError **error)
{
  const PnIoCtx sctx = {.file = "--set"};
  if (!g_utf8_validate(set, -1, NULL)) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "--set: argument is not valid UTF-8");
    return FALSE;
  }
  g_autofree char *qset = pn__io_quote(set);
  const char *eq        = strchr(set, '=');
  if (eq == NULL || eq == set) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "--set: %s: expected dotted.key=value (e.g. %s)", qset,
                "parallel.tensor_model_parallel_size=4");
    return FALSE;
  }
  g_autofree char *dotted = g_strndup(set, (gsize)(eq - set));
  g_auto(GStrv) segs      = g_strsplit(dotted, ".", -1);
  guint n                 = g_strv_length(segs);
  for (guint i = 0; i < n; i++) {
    if (segs[i][0] == '\0') {
      g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "--set: %s: empty key in the dotted path", qset);
      return FALSE;
    }
  }

  /* validate the path against the schema */
  g_autofree char *ptr0 = pn__io_ptr_child("", segs[0]);
  if (pn__io_field_find(top_fields, segs[0]) == NULL)
    return set_unknown(&sctx, ptr0, segs[0], NULL, error);
  const PnSection *sec = section_find(segs[0]);
  gboolean is_model    = strcmp(segs[0], "model") == 0;
  g_autofree char *ptr = g_strdup(ptr0);
  if (n >= 2) {
    g_free(ptr);
    ptr = pn__io_ptr_child(ptr0, segs[1]);
    if (sec == NULL && !is_model) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, &sctx, ptr, "unknown key (%s is not an object)", ptr0);
      return FALSE;
    }
    const PnField *fields = is_model ? pn__io_model_fields : sec->fields;
    if (pn__io_field_find(fields, segs[1]) == NULL)
      return set_unknown(&sctx, ptr, segs[1], fields, error);
  }
  if (n >= 3) {
    g_autofree char *ptr2 = pn__io_ptr_child(ptr, segs[2]);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &sctx, ptr2, "unknown key (%s is not an object)", ptr);
    return FALSE;
  }

  /* the value: JSON when it parses as JSON, else a bare string */
  const char *text = eq + 1;
  cJSON *value     = NULL;
  if (!pn__io_parse_set_value(ptr, text, &value, error))
    return FALSE;
  if (value == NULL)
    value = cJSON_CreateString(text);

  if (n == 1) {
    if (cJSON_GetObjectItemCaseSensitive(root, segs[0]) != NULL)
      cJSON_ReplaceItemInObjectCaseSensitive(root, segs[0], value);
    else
      cJSON_AddItemToObject(root, segs[0], value);
  } else {
    cJSON *container = cJSON_GetObjectItemCaseSensitive(root, segs[0]);
    if (container == NULL) {
      container = cJSON_AddObjectToObject(root, segs[0]);
    } else if (is_model && cJSON_IsString(container)) {
      /* a model given by name: override fields on top of it */
      cJSON *obj = cJSON_CreateObject();
      cJSON_AddStringToObject(obj, "base", container->valuestring);
      cJSON_ReplaceItemInObjectCaseSensitive(root, segs[0], obj);
      container = obj;
    } else if (!cJSON_IsObject(container)) {
      g_autofree char *got = pn__io_describe(container);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, fctx, ptr0, "expected an object, got %s", got);
      cJSON_Delete(value);
      return FALSE;
    }
    if (cJSON_GetObjectItemCaseSensitive(container, segs[1]) != NULL)
      cJSON_ReplaceItemInObjectCaseSensitive(container, segs[1], value);
    else
      cJSON_AddItemToObject(container, segs[1], value);
  }
  g_hash_table_add(set_paths, g_steal_pointer(&ptr));
  return TRUE;
}

gboolean pn__io_scenario_apply_set(cJSON *root, const char *set, GError **error)
{
  const PnIoCtx ctx           = {.file = "--set"};
  g_autoptr(GHashTable) paths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  return apply_set(&ctx, root, set, paths, error);
}

/* ---- validation ---- */

G_GNUC_PRINTF(4, 5)
static void warn(GPtrArray *warnings, const PnIoCtx *ctx, const char *ptr, const char *fmt, ...)
{
  if (warnings == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_ptr_array_add(warnings, g_strdup_printf("%s: %s: %s", pn__io_ctx_file(ctx, ptr), ptr, msg));
}

#define I64 "%" G_GINT64_FORMAT

/* A fusion switched off runs more, unfused kernels than the op model prices (its memory-bound
 * classes are measured on the fused kernels): said, never silently simulated as fused. The dense
 * MLP's unfused bias and activation are priced (workload/ops.c, act_unfused_bytes), and so are
 * gradient_accumulation_fusion off (the main_grad add after each wgrad, workload/ops.c push_wgrad),
 * the unfused rotary embedding, masked_softmax_fusion off (the unfused attention's torch softmax)
 * and the eager bias-dropout-add (ops.c push_rope, push_attn_unfused_fwd, push_bda). persist_layer_norm chooses among
 * Apex's LayerNorm kernels, which the norm class prices either way. */
static void unfused_warnings(const PnIoCtx *ctx, const PnScenario *sc, GPtrArray *warnings)
{
  const PnTrainingConfig *tr = &sc->training;
  const struct {
    bool on;
    const char *ptr, *what;
  } fusions[] = {
      {tr->bias_activation_fusion || sc->model.num_moe_experts == 0, "/training/bias_activation_fusion",
       "the experts' unfused bias and activation kernels (the dense MLP's are priced)"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(fusions); i++)
    if (!fusions[i].on)
      warn(warnings, ctx, fusions[i].ptr,
           "false is not priced in this version: the step is simulated with the fused kernels, without %s "
           "(the predicted time is low)",
           fusions[i].what);
}

/* The scenario's consistency: Megatron's layout rules (workload/rules.h) as errors at the key
 * they blame, then the warnings about what is accepted but not simulated as written. */
static gboolean validate(const PnIoCtx *ctx, PnScenario *sc, GPtrArray *warnings, GError **error)
{
  PnRuleViolation v;
  unsigned notes = 0;
  PnRule broken  = pn_workload_check(sc, &v, &notes);
  if (notes & PN_RULE_NOTE_SP_DISABLED)
    warn(warnings, ctx, "/parallel/sequence_parallel",
         "disabled because tensor_model_parallel_size is 1 (as Megatron does)");
  if (broken != PN_RULE_OK) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, v.path, "%s", v.message);
    return FALSE;
  }
  /* Transformer Engine refuses MXFP8 below compute capability 10.0 (quantization.py
   * _compute_mxfp8_support); blockwise runs on Hopper with CUDA >= 12.9, but its 1x128 / 128x128
   * scales are not simulated. The recipe does not act without fp8 (Megatron reads it only with
   * --fp8-format). */
  if (sc->training.precision == PN_PREC_FP8 && sc->training.fp8_recipe == PN_FP8_MXFP8) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/fp8_recipe",
                "\"mxfp8\" needs a Blackwell GPU (Transformer Engine: compute capability 10.0 or higher); penumbra's "
                "profiles are Hopper: use \"delayed\" or \"tensorwise\"");
    return FALSE;
  }
  if (sc->training.precision == PN_PREC_FP8 && sc->training.fp8_recipe == PN_FP8_BLOCKWISE) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/fp8_recipe",
                "\"blockwise\" scaling is not simulated in this version: use \"delayed\" or \"tensorwise\"");
    return FALSE;
  }
  /* Megatron-Core's local layers run torch.matmul in the parameters' dtype: fp8 needs TE's */
  if (sc->training.precision == PN_PREC_FP8 && sc->training.transformer_impl == PN_TRANSFORMER_IMPL_LOCAL) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/transformer_impl",
                "\"local\" has no fp8 GEMMs (Megatron-Core's ColumnParallelLinear / RowParallelLinear): use "
                "\"transformer_engine\" or precision \"bf16\"");
    return FALSE;
  }
  /* DotProductAttention asserts context_parallel_size == 1; TE's context parallelism needs its
   * flash or fused attention */
  if (sc->parallel.context_parallel_size > 1 && pn_workload_unfused_attention(sc)) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/context_parallel_size",
                "context parallelism needs Transformer Engine's flash or fused attention, not the unfused attention "
                "of /training/transformer_impl \"local\" or /training/attention_backend \"unfused\" / \"local\"");
    return FALSE;
  }
  /* Megatron-Core's local layer spec has an MLA of its own (torch linears and DotProductAttention
   * with two head sizes), which is not simulated */
  if (sc->model.multi_latent_attention && pn_workload_unfused_attention(sc)) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/model/multi_latent_attention",
                "multi-latent attention is simulated with Transformer Engine's layers and fused attention only, not "
                "with /training/transformer_impl \"local\" or /training/attention_backend \"unfused\" / \"local\"");
    return FALSE;
  }
  /* OptimizerConfig.__post_init__ and get_megatron_optimizer (megatron/core/optimizer/): the
   * precision-aware optimizer is Transformer Engine's FusedAdam beside the distributed optimizer;
   * without it every optimizer dtype stays fp32 */
  const PnTrainingConfig *tr = &sc->training;
  if (tr->use_precision_aware_optimizer && !sc->ddp.use_distributed_optimizer && !sc->ddp.use_megatron_fsdp) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/use_precision_aware_optimizer",
                "needs the distributed optimizer (/ddp/use_distributed_optimizer true; Megatron-Core: "
                "\"--use-precision-aware-optimizer only supported with distributed optimizer\")");
    return FALSE;
  }
  if (tr->use_precision_aware_optimizer && !tr->fused_adam) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/use_precision_aware_optimizer",
                "needs Transformer Engine's FusedAdam (/training/fused_adam true), not torch's AdamW");
    return FALSE;
  }
  static const struct {
    const char *path;
    size_t offset;
  } dtypes[] = {{"/training/main_params_dtype", offsetof(PnTrainingConfig, main_params_dtype)},
                {"/training/exp_avg_dtype", offsetof(PnTrainingConfig, exp_avg_dtype)},
                {"/training/exp_avg_sq_dtype", offsetof(PnTrainingConfig, exp_avg_sq_dtype)}};
  for (gsize i = 0; i < G_N_ELEMENTS(dtypes) && !tr->use_precision_aware_optimizer; i++)
    if (*(const PnOptimDtype *)((const char *)tr + dtypes[i].offset) != PN_OPTIM_FP32) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, dtypes[i].path,
                  "can only be \"fp32\" without /training/use_precision_aware_optimizer true (as Megatron-Core "
                  "asserts)");
      return FALSE;
    }
  const PnModelConfig *mc = &sc->model;
  if (mc->activation_func_clamp_value > 0.0 && !mc->gated_linear_unit)
    warn(warnings, ctx, "/model/activation_func_clamp_value",
         "clamps the halves of a gated linear unit: without one it changes nothing");
  else if (mc->activation_func_clamp_value > 0.0 &&
           (mc->num_moe_experts == 0 || mc->moe_shared_expert_intermediate_size > 0))
    warn(warnings, ctx, "/model/activation_func_clamp_value",
         "the clamps are priced in the routed experts only, not in a dense or shared-expert MLP");
  const PnRecomputeConfig *rc = &sc->recompute;
  if (rc->recompute_num_layers > 0 && rc->recompute_granularity != PN_RECOMPUTE_FULL)
    warn(warnings, ctx, "/recompute/recompute_num_layers", "ignored unless recompute_granularity is \"full\"");
  /* TransformerConfig.__post_init__ (transformer_config.py): what Megatron-Core refuses */
  if (rc->recompute_granularity == PN_RECOMPUTE_SELECTIVE) {
    if ((rc->recompute_modules & PN_RECOMPUTE_MODULE_MLA_UP_PROJ) && !sc->model.multi_latent_attention) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/recompute/recompute_modules",
                  "\"mla_up_proj\" is only supported with multi-latent attention (model.multi_latent_attention)");
      return FALSE;
    }
    if ((rc->recompute_modules & (PN_RECOMPUTE_MODULE_MOE_ACT | PN_RECOMPUTE_MODULE_LAYERNORM)) &&
        sc->training.precision == PN_PREC_FP8 && sc->training.fp8_recipe == PN_FP8_DELAYED) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/recompute/recompute_modules",
                  "delayed scaling does not support moe_act and layernorm recompute for fp8 (Megatron-Core); "
                  "use /training/fp8_recipe \"tensorwise\" or drop them");
      return FALSE;
    }
    uint32_t moe_only = PN_RECOMPUTE_MODULE_MOE_ACT | PN_RECOMPUTE_MODULE_MOE | PN_RECOMPUTE_MODULE_SHARED_EXPERTS;
    if ((rc->recompute_modules & moe_only) && sc->model.num_moe_experts == 0)
      warn(warnings, ctx, "/recompute/recompute_modules",
           "\"moe_act\", \"moe\" and \"shared_experts\" act on MoE layers only: a dense model recomputes none");
    if ((rc->recompute_modules & PN_RECOMPUTE_MODULE_MLP) && sc->model.num_moe_experts > 0 &&
        !pn_workload_has_dense_layers(sc))
      warn(warnings, ctx, "/recompute/recompute_modules",
           "\"mlp\" acts on dense MLPs only (Megatron-Core skips it in MoE layers)");
    if ((rc->recompute_modules & PN_RECOMPUTE_MODULE_LAYERNORM) && sc->model.num_moe_experts == 0 &&
        !sc->model.multi_latent_attention && sc->training.transformer_impl == PN_TRANSFORMER_IMPL_TE)
      warn(warnings, ctx, "/recompute/recompute_modules",
           "\"layernorm\" recomputes nothing here: Transformer Engine fuses a dense layer's norms into qkv and fc1");
  }
  unfused_warnings(ctx, sc, warnings);
  if (sc->training.cuda_graph_modules != 0 && sc->training.cuda_graph_impl == PN_CUDA_GRAPH_IMPL_NONE)
    warn(warnings, ctx, "/training/cuda_graph_modules",
         "captures nothing with /training/cuda_graph_impl \"none\" (kernels keep their launch cost)");
  const PnHwProfile *hw = sc->hw;
  int64_t tp = sc->parallel.tensor_model_parallel_size, gpus = sc->hardware.num_gpus;
  if (tp > hw->gpus_per_node)
    warn(warnings, ctx, "/parallel/tensor_model_parallel_size",
         I64 " exceeds gpus_per_node %d: tensor-parallel collectives cross the network", tp, hw->gpus_per_node);
  if (gpus > hw->gpus_per_node && gpus % hw->gpus_per_node != 0)
    warn(warnings, ctx, "/hardware/num_gpus",
         I64 " is not a multiple of gpus_per_node %d: the last node is partly used", gpus, hw->gpus_per_node);
  return TRUE;
}

/* ---- conversion ---- */

/* Keys whose value is a JSON array of names (or null), stored as a bit set (config.h). */
typedef struct {
  const char *section;
  const char *key;
  const PnEnumName *names;
  size_t offset;       /* of the uint32_t in PnScenario */
  uint32_t null_value; /* what null means: Megatron's default */
} PnNameSet;

static const PnNameSet name_sets[] = {
    {"training", "cuda_graph_modules", cuda_graph_module_names, offsetof(PnScenario, training.cuda_graph_modules), 0},
    {"recompute", "recompute_modules", recompute_module_names, offsetof(PnScenario, recompute.recompute_modules),
     PN_RECOMPUTE_MODULE_CORE_ATTN},
};

static gboolean convert_name_set(const PnIoCtx *ctx, const cJSON *root, const PnNameSet *ns, PnScenario *sc,
                                 GError **error)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, ns->section), ns->key);
  if (v == NULL)
    return TRUE;
  uint32_t *dst = (uint32_t *)(void *)((char *)sc + ns->offset);
  if (cJSON_IsNull(v)) {
    *dst = ns->null_value;
    return TRUE;
  }
  g_autofree char *sptr   = pn__io_ptr_child("", ns->section);
  g_autofree char *ptr    = pn__io_ptr_child(sptr, ns->key);
  g_autoptr(GString) list = g_string_new(NULL);
  for (const PnEnumName *e = ns->names; e->name != NULL; e++)
    g_string_append_printf(list, "%s\"%s\"", list->len ? ", " : "", e->name);
  if (!cJSON_IsArray(v)) {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected an array of %s, or null, got %s", list->str, got);
    return FALSE;
  }
  uint32_t bits = 0;
  gsize i       = 0;
  for (const cJSON *item = v->child; item != NULL; item = item->next, i++) {
    const PnEnumName *hit = NULL;
    for (const PnEnumName *e = ns->names; hit == NULL && e->name != NULL && cJSON_IsString(item); e++)
      if (strcmp(item->valuestring, e->name) == 0)
        hit = e;
    if (hit == NULL) {
      g_autofree char *iptr = pn__io_ptr_index(ptr, i);
      g_autofree char *got  = pn__io_describe(item);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr, "expected one of %s, got %s", list->str, got);
      return FALSE;
    }
    bits |= (uint32_t)hit->value;
  }
  *dst = bits;
  return TRUE;
}

/* parallel.pipeline_model_parallel_layout: Megatron's layout string, or the list of lists of layer
 * names Megatron-Bridge's recipes give (recipes/deepseek/deepseek_v3.py layout_map), into the
 * normal form of workload/split.h. A list's names are read as PipelineParallelLayerLayout.__init__
 * reads them: stripped, lowercased, LayerType members (so "E" is the string form's letter only). */
static gboolean convert_layout(const PnIoCtx *ctx, const cJSON *root, PnScenario *sc, GError **error)
{
  static const char *const ptr = "/parallel/pipeline_model_parallel_layout";
  static const struct {
    const char *name;
    char letter;
  } types[]      = {{"embedding", 'E'}, {"decoder", 't'}, {"mtp", 'm'}, {"loss", 'L'}};
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "parallel"),
                                                    "pipeline_model_parallel_layout");
  if (v == NULL || cJSON_IsNull(v))
    return TRUE;
  g_autoptr(GString) text = g_string_new(NULL);
  if (cJSON_IsString(v)) {
    g_string_assign(text, v->valuestring);
  } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0) {
    gsize i = 0;
    for (const cJSON *stage = v->child; stage != NULL; stage = stage->next, i++) {
      g_autofree char *sptr = pn__io_ptr_index(ptr, i);
      if (!cJSON_IsArray(stage)) {
        g_autofree char *got = pn__io_describe(stage);
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, sptr, "expected an array of layer names (a virtual stage), got %s",
                    got);
        return FALSE;
      }
      if (i > 0)
        g_string_append_c(text, '|');
      gsize j = 0;
      for (const cJSON *item = stage->child; item != NULL; item = item->next, j++) {
        g_autofree char *iptr = pn__io_ptr_index(sptr, j);
        g_autofree char *name = cJSON_IsString(item) ? g_ascii_strdown(item->valuestring, -1) : NULL;
        char letter           = 0;
        for (gsize k = 0; name != NULL && k < G_N_ELEMENTS(types) && letter == 0; k++)
          if (strcmp(g_strstrip(name), types[k].name) == 0)
            letter = types[k].letter;
        if (letter != 0) {
          g_string_append_c(text, letter);
          continue;
        }
        g_autofree char *got = pn__io_describe(item);
        if (name != NULL && strcmp(name, "encoder") == 0)
          pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, iptr,
                      "\"encoder\": encoder layers are not supported in a pipeline layout (Megatron-Core)");
        else
          pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, iptr,
                      "expected \"embedding\", \"decoder\", \"mtp\" or \"loss\" (the letters E, t, m, L are the "
                      "string form's), got %s",
                      got);
        return FALSE;
      }
    }
  } else {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr,
                "expected Megatron's layout string (e.g. \"Et*3|(tt|)*29,m|L\"), a non-empty array of arrays of layer "
                "names, or null, got %s",
                got);
    return FALSE;
  }
  PnRuleViolation rv;
  if (pn_workload_layout_expand(text->str, sc->parallel.pipeline_model_parallel_layout,
                                sizeof sc->parallel.pipeline_model_parallel_layout, &rv) != PN_RULE_OK) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, ptr, "%s", rv.message);
    return FALSE;
  }
  return TRUE;
}

static gboolean convert(const PnIoCtx *ctx, const cJSON *root, const char *base_dir, PnScenario *sc,
                        GPtrArray *warnings, GError **error)
{
  if (!cJSON_IsObject(root)) {
    g_autofree char *got = pn__io_describe(root);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "", "expected a scenario object at the top level, got %s", got);
    return FALSE;
  }
  if (!pn__io_check_keys(ctx, root, "", top_fields, error))
    return FALSE;
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
  if (ver == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/schema_version", "required key missing (this version reads %d)",
                SCENARIO_SCHEMA_VERSION);
    return FALSE;
  }
  int64_t version;
  if (!pn__io_get_int(ctx, ver, "/schema_version", 1, G_MAXINT32, true, &version, error))
    return FALSE;
  if (version != SCENARIO_SCHEMA_VERSION) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/schema_version",
                "unsupported version " I64 " (this version of penumbra reads %d)", version, SCENARIO_SCHEMA_VERSION);
    return FALSE;
  }
  if (!pn__io_apply_fields(ctx, root, "", top_fields, sc, FALSE, error))
    return FALSE;

  for (gsize i = 0; i < G_N_ELEMENTS(sections); i++) {
    const PnSection *s = &sections[i];
    const cJSON *obj   = cJSON_GetObjectItemCaseSensitive(root, s->key);
    if (obj == NULL) {
      if (s->required) {
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, s->ptr, "required section missing");
        return FALSE;
      }
      continue;
    }
    if (!pn__io_check_keys(ctx, obj, s->ptr, s->fields, error) ||
        !pn__io_apply_fields(ctx, obj, s->ptr, s->fields, (char *)sc + s->offset, TRUE, error))
      return FALSE;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(name_sets); i++)
    if (!convert_name_set(ctx, root, &name_sets[i], sc, error))
      return FALSE;
  if (!convert_layout(ctx, root, sc, error))
    return FALSE;

  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (model == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/model", "required key missing (a model name or an inline object)");
    return FALSE;
  }
  if (!pn__io_model_from_value(ctx, model, "/model", base_dir, &sc->model, error))
    return FALSE;

  const char *pptr = "/hardware/profile";
  const char *ref;
  const cJSON *hw = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "hardware"), "profile");
  if (!pn__io_get_string(ctx, hw, pptr, 4096, &ref, error))
    return FALSE;
  g_autofree char *hw_path = pn__io_resolve(ctx, pptr, ref, base_dir, "hwprofiles", "hardware profile", error);
  if (hw_path == NULL)
    return FALSE;
  g_autofree char *hw_name = g_path_get_basename(ref);
  if (g_str_has_suffix(hw_name, ".json"))
    hw_name[strlen(hw_name) - 5] = '\0';
  if (strlen(hw_name) >= sizeof sc->hardware.profile) {
    g_autofree char *q = pn__io_quote(hw_name);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, pptr, "profile name %s is too long (at most %d bytes)", q,
                (int)sizeof sc->hardware.profile - 1);
    return FALSE;
  }
  g_strlcpy(sc->hardware.profile, hw_name, sizeof sc->hardware.profile);
  sc->hw = pn_hw_profile_load(hw_path, error);
  if (sc->hw == NULL)
    return FALSE;
  /* a profile is a DGX / HGX node, its host included: the host figures measured elsewhere run at a
   * DGX host's speed unless the scenario says otherwise */
  sc->hardware.host_speed_default = sc->hardware.host_speed == 0.0;
  if (sc->hardware.host_speed_default)
    sc->hardware.host_speed = pn_hw_profile_dgx_host_speed(sc->hw);

  return validate(ctx, sc, warnings, error);
}

static PnScenario *load_text(const char *buf, gsize len, const char *display, const char *base_dir,
                             const char *const *sets, int n_sets, GPtrArray *warnings, GError **error)
{
  cJSON *root = NULL;
  if (!pn__io_parse_json(display, buf, len, &root, error))
    return NULL;
  g_autoptr(GHashTable) set_paths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  PnIoCtx ctx                     = {.file = display, .set_paths = set_paths, .where_else = scenario_where_else};
  g_autoptr(PnScenario) sc        = g_new0(PnScenario, 1);
  scenario_defaults(sc);
  g_strlcpy(sc->path, display, sizeof sc->path);
  gboolean ok = TRUE;
  if (!cJSON_IsObject(root)) {
    g_autofree char *got = pn__io_describe(root);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, "", "expected a scenario object at the top level, got %s", got);
    ok = FALSE;
  }
  for (int i = 0; ok && i < n_sets; i++)
    ok = apply_set(&ctx, root, sets[i], set_paths, error);
  g_autoptr(GPtrArray) local_warnings = g_ptr_array_new_with_free_func(g_free);
  if (ok)
    ok = convert(&ctx, root, base_dir, sc, local_warnings, error);
  cJSON_Delete(root);
  if (!ok)
    return NULL;
  for (guint i = 0; warnings != NULL && i < local_warnings->len; i++)
    g_ptr_array_add(warnings, g_strdup(local_warnings->pdata[i]));
  return g_steal_pointer(&sc);
}

PnScenario *pn_scenario_load(const char *path, const char *const *sets, int n_sets, GPtrArray *warnings, GError **error)
{
  g_return_val_if_fail(path != NULL && (n_sets == 0 || sets != NULL), NULL);
  g_autofree char *buf = NULL;
  gsize len            = 0;
  if (!pn__io_read_file(path, path, &buf, &len, error))
    return NULL;
  g_autofree char *dir = g_path_get_dirname(path);
  return load_text(buf, len, path, dir, sets, n_sets, warnings, error);
}

PnScenario *pn_scenario_load_string(const char *json, const char *display_name, const char *const *sets, int n_sets,
                                    GPtrArray *warnings, GError **error)
{
  g_return_val_if_fail(json != NULL && (n_sets == 0 || sets != NULL), NULL);
  const char *display  = display_name ? display_name : "<string>";
  g_autofree char *dir = display_name ? g_path_get_dirname(display_name) : g_strdup(".");
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_free(dir);
    dir = g_strdup(".");
  }
  return load_text(json, strlen(json), display, dir, sets, n_sets, warnings, error);
}
