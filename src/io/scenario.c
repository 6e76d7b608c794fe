/* scenario.c — scenario JSON (+ --set overrides) into a validated PnScenario (see scenario.h). */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "io/hwprofile.h"
#include "io/io-private.h"
#include "io/scenario.h"

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
                sizeof(PnMoeDispatcher) == sizeof(int));

const PnEnumName pn__io_precision_names[] = {{"bf16", PN_PREC_BF16}, {"fp8", PN_PREC_FP8}, {NULL, 0}};
const PnEnumName pn__io_cp_comm_names[]   = {
      {"p2p", PN_CP_P2P}, {"all_gather", PN_CP_ALL_GATHER}, {"a2a", PN_CP_A2A}, {"a2a+p2p", PN_CP_A2A_P2P}, {NULL, 0}};
static const PnEnumName granularity_names[] = {
    {"selective", PN_RECOMPUTE_SELECTIVE}, {"full", PN_RECOMPUTE_FULL}, {NULL, 0}};
static const PnEnumName method_names[] = {
    {"uniform", PN_RECOMPUTE_METHOD_UNIFORM}, {"block", PN_RECOMPUTE_METHOD_BLOCK}, {NULL, 0}};
static const PnEnumName dispatcher_names[] = {{"allgather", PN_MOE_DISPATCHER_ALLGATHER},
                                              {"alltoall", PN_MOE_DISPATCHER_ALLTOALL},
                                              {"flex", PN_MOE_DISPATCHER_FLEX},
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
    {.key = NULL},
};

static const PnField training_fields[] = {
    F_INT_REQ(PnTrainingConfig, "seq_length", seq_length, 1, 100000000),
    F_INT(PnTrainingConfig, "micro_batch_size", micro_batch_size, 1, 1000000000),
    F_INT_REQ(PnTrainingConfig, "global_batch_size", global_batch_size, 1, 1000000000),
    F_ENUM(PnTrainingConfig, "precision", PN_FIELD_ENUM, precision, pn__io_precision_names, 0),
    F_RANGE(PnTrainingConfig, "iterations", iterations, 1, 100),
    F_KIND(PnTrainingConfig, "gradient_accumulation_fusion", PN_FIELD_BOOL, gradient_accumulation_fusion),
    {.key = "cuda_graph_modules", .kind = PN_FIELD_CUSTOM},
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
  cJSON *value     = cJSON_ParseWithOpts(text, NULL, TRUE);
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

/* The scenario's consistency, one part at a time and in this order: each part reads what the ones
 * before it derived (data_parallel_size, the layers of a stage, num_microbatches). */

static gboolean validate_layout(const PnIoCtx *ctx, PnScenario *sc, GError **error)
{
  const PnModelConfig *m = &sc->model;
  PnParallelConfig *par  = &sc->parallel;
  int64_t tp = par->tensor_model_parallel_size, pp = par->pipeline_model_parallel_size;
  int64_t cp = par->context_parallel_size, gpus = sc->hardware.num_gpus;

  /* tensor parallelism splits heads and query groups */
  if (m->num_attention_heads % tp != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/tensor_model_parallel_size",
                I64 " does not divide num_attention_heads " I64, tp, m->num_attention_heads);
    return FALSE;
  }
  if (m->num_query_groups % tp != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/tensor_model_parallel_size",
                I64 " does not divide num_query_groups " I64, tp, m->num_query_groups);
    return FALSE;
  }

  /* world = tp * pp * cp * dp; each factor <= num_gpus <= 1e7, so the products below fit */
  int64_t tp_pp     = (tp > gpus || pp > gpus) ? gpus + 1 : tp * pp;
  int64_t model_par = (tp_pp > gpus || cp > gpus) ? gpus + 1 : tp_pp * cp;
  if (model_par > gpus || gpus % model_par != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/hardware/num_gpus",
                I64 " is not divisible by tensor x pipeline x context parallel size (" I64 " x " I64 " x " I64 ")",
                gpus, tp, pp, cp);
    return FALSE;
  }
  int64_t dp              = gpus / model_par;
  par->data_parallel_size = dp;
  return TRUE;
}

static gboolean validate_pipeline(const PnIoCtx *ctx, const PnScenario *sc, int64_t *stage_layers_out, GError **error)
{
  const PnModelConfig *m      = &sc->model;
  const PnParallelConfig *par = &sc->parallel;
  int64_t pp = par->pipeline_model_parallel_size, vpp = par->virtual_pipeline_model_parallel_size;

  /* pipeline stages and virtual chunks hold whole layers */
  if (vpp > 1 && pp == 1) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/virtual_pipeline_model_parallel_size",
                I64 " needs pipeline_model_parallel_size > 1 (interleaving splits each pipeline stage)", vpp);
    return FALSE;
  }
  /* Megatron's account_for_{embedding,loss}_in_pipeline_split count the embedding (first stage)
   * and the output layer + loss (last stage) as one layer each when splitting */
  int64_t extra =
      (par->account_for_embedding_in_pipeline_split ? 1 : 0) + (par->account_for_loss_in_pipeline_split ? 1 : 0);
  int64_t split_layers = m->num_layers + extra;
  g_autofree char *counted =
      extra == 0
          ? g_strdup_printf("num_layers " I64, m->num_layers)
          : g_strdup_printf("num_layers " I64 " + " I64 " (account_for_*_in_pipeline_split)", m->num_layers, extra);
  if (pp > split_layers || split_layers % pp != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/pipeline_model_parallel_size", I64 " does not divide %s",
                pp, counted);
    return FALSE;
  }
  int64_t stage_layers = split_layers / pp;
  if (vpp > 1 && stage_layers % vpp != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/virtual_pipeline_model_parallel_size",
                I64 " does not divide the " I64 " layers of each pipeline stage (%s / pipeline_model_parallel_size " I64
                    ")",
                vpp, stage_layers, counted, pp);
    return FALSE;
  }
  if (vpp > 1 && pp == 2 && sc->comm_overlap.overlap_p2p_comm == PN_TRI_FALSE) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/comm_overlap/overlap_p2p_comm",
                "false is not supported with interleaving (virtual_pipeline_model_parallel_size " I64
                ") at pipeline_model_parallel_size 2: Megatron requires pp > 2 when overlap_p2p_comm is off",
                vpp);
    return FALSE;
  }
  *stage_layers_out = stage_layers;
  return TRUE;
}

static gboolean validate_batch(const PnIoCtx *ctx, PnScenario *sc, GError **error)
{
  PnParallelConfig *par      = &sc->parallel;
  const PnTrainingConfig *tr = &sc->training;
  int64_t pp = par->pipeline_model_parallel_size, vpp = par->virtual_pipeline_model_parallel_size;
  int64_t dp = par->data_parallel_size;

  /* batch: gbs = mbs * dp * num_microbatches */
  int64_t mbs_dp = tr->micro_batch_size * dp; /* <= 1e9 * 1e7 */
  if (tr->global_batch_size % mbs_dp != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/global_batch_size",
                I64 " is not divisible by micro_batch_size x data_parallel_size (" I64 " x " I64 " = " I64 ")",
                tr->global_batch_size, tr->micro_batch_size, dp, mbs_dp);
    return FALSE;
  }
  int64_t nmb           = tr->global_batch_size / mbs_dp;
  par->num_microbatches = nmb;

  /* Megatron's interleaved schedule: pp <= group <= m, and m % group is 0 or >= pp */
  if (vpp > 1) {
    int64_t group    = par->microbatch_group_size_per_vp_stage ? par->microbatch_group_size_per_vp_stage : pp;
    const char *gptr = par->microbatch_group_size_per_vp_stage ? "/parallel/microbatch_group_size_per_vp_stage"
                                                               : "/training/global_batch_size";
    if (group < pp || group > nmb) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, gptr,
                  "the interleaved schedule needs pipeline_model_parallel_size (" I64
                  ") <= microbatch_group_size_per_vp_stage (" I64 ") <= num_microbatches (" I64 ")",
                  pp, group, nmb);
      return FALSE;
    }
    if (nmb % group != 0 && nmb % group < pp && !par->microbatch_group_size_per_vp_stage) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, gptr,
                  "the interleaved schedule (virtual_pipeline_model_parallel_size " I64 ") needs num_microbatches (" I64
                  " = " I64 " / (micro_batch_size " I64 " x data_parallel_size " I64
                  ")) to be a multiple of pipeline_model_parallel_size " I64 " (Megatron raises otherwise)",
                  vpp, nmb, tr->global_batch_size, tr->micro_batch_size, dp, pp);
      return FALSE;
    }
    if (nmb % group != 0 && nmb % group < pp) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, gptr,
                  "num_microbatches " I64 " mod microbatch_group_size_per_vp_stage " I64 " = " I64
                  " must be 0 or >= pipeline_model_parallel_size " I64 " (Megatron: dependency bubbles)",
                  nmb, group, nmb % group, pp);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean validate_sequence(const PnIoCtx *ctx, PnScenario *sc, GPtrArray *warnings, GError **error)
{
  const PnModelConfig *m     = &sc->model;
  PnParallelConfig *par      = &sc->parallel;
  const PnTrainingConfig *tr = &sc->training;
  int64_t tp = par->tensor_model_parallel_size, cp = par->context_parallel_size;

  /* sequence: CP splits it into 2*cp chunks (load balancing), SP shards each CP slice over TP */
  if (cp > 1 && tr->seq_length % (2 * cp) != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/seq_length",
                I64 " is not divisible by 2 x context_parallel_size = " I64
                    " (context parallelism splits the sequence into 2*cp chunks for load balancing)",
                tr->seq_length, 2 * cp);
    return FALSE;
  }
  if (par->sequence_parallel && tp == 1) {
    warn(warnings, ctx, "/parallel/sequence_parallel",
         "disabled because tensor_model_parallel_size is 1 (as Megatron does)");
    par->sequence_parallel = false;
  }
  if (par->sequence_parallel && (tr->seq_length / cp) % tp != 0) {
    if (cp > 1)
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/seq_length",
                  I64 " / context_parallel_size " I64 " = " I64 " is not divisible by tensor_model_parallel_size " I64
                      " (sequence_parallel)",
                  tr->seq_length, cp, tr->seq_length / cp, tp);
    else
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/seq_length",
                  I64 " is not divisible by tensor_model_parallel_size " I64 " (sequence_parallel)", tr->seq_length,
                  tp);
    return FALSE;
  }
  if (cp > 1 && sc->comm_overlap.cp_comm_type == PN_CP_A2A && (m->num_attention_heads / tp) % cp != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/context_parallel_size",
                I64 " does not divide the " I64 " attention heads per tensor-parallel rank (cp_comm_type \"a2a\")", cp,
                m->num_attention_heads / tp);
    return FALSE;
  }
  if (m->max_position_embeddings > 0 && strcmp(m->position_embedding_type, "learned_absolute") == 0 &&
      tr->seq_length > m->max_position_embeddings) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/training/seq_length",
                I64 " exceeds the model's max_position_embeddings " I64 " (learned absolute positions)", tr->seq_length,
                m->max_position_embeddings);
    return FALSE;
  }
  return TRUE;
}

static gboolean validate_experts(const PnIoCtx *ctx, PnScenario *sc, GError **error)
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
  if (m->num_moe_experts == 0 && (ep > 1 || etp != tp)) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx,
                ep > 1 ? "/parallel/expert_model_parallel_size" : "/parallel/expert_tensor_parallel_size",
                I64 " needs a MoE model (num_moe_experts > 0)", ep > 1 ? ep : etp);
    return FALSE;
  }
  if (m->num_moe_experts > 0) {
    if (m->num_moe_experts % ep != 0) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/expert_model_parallel_size",
                  I64 " does not divide num_moe_experts " I64, ep, m->num_moe_experts);
      return FALSE;
    }
    if (etp > gpus || ep > gpus || (tp * cp * dp) % (etp * ep) != 0) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/expert_model_parallel_size",
                  "expert_tensor_parallel_size x expert_model_parallel_size = " I64 " x " I64
                  " does not divide the ranks of a pipeline stage (tp x cp x dp = " I64 ")",
                  etp, ep, tp * cp * dp);
      return FALSE;
    }
    int64_t moe_ffn = m->moe_ffn_hidden_size > 0 ? m->moe_ffn_hidden_size : m->ffn_hidden_size;
    if (moe_ffn % etp != 0) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/expert_tensor_parallel_size",
                  I64 " does not divide moe_ffn_hidden_size " I64, etp, moe_ffn);
      return FALSE;
    }
    if (tp > 1 && ep > 1 && !par->sequence_parallel) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/parallel/sequence_parallel",
                  "expected true: Megatron-Core requires sequence parallelism with tensor and expert parallelism");
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean validate_training(const PnIoCtx *ctx, const PnScenario *sc, int64_t stage_layers, GPtrArray *warnings,
                                  GError **error)
{
  const PnTrainingConfig *tr = &sc->training;
  int64_t dp                 = sc->parallel.data_parallel_size;

  /* optimizer, precision, recompute */
  if (dp % sc->ddp.num_distributed_optimizer_instances != 0) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/ddp/num_distributed_optimizer_instances",
                I64 " does not divide data_parallel_size " I64, sc->ddp.num_distributed_optimizer_instances, dp);
    return FALSE;
  }
  if (sc->ddp.fp8_param_gather && tr->precision != PN_PREC_FP8) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/ddp/fp8_param_gather", "true needs training.precision \"fp8\"");
    return FALSE;
  }
  const PnRecomputeConfig *rc = &sc->recompute;
  if (rc->recompute_num_layers > 0) {
    if (rc->recompute_granularity != PN_RECOMPUTE_FULL) {
      warn(warnings, ctx, "/recompute/recompute_num_layers", "ignored unless recompute_granularity is \"full\"");
    } else if (rc->recompute_num_layers > stage_layers) {
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/recompute/recompute_num_layers",
                  I64 " exceeds the " I64 " layers of a pipeline stage", rc->recompute_num_layers, stage_layers);
      return FALSE;
    }
  }
  if (rc->recompute_granularity == PN_RECOMPUTE_SELECTIVE && rc->recompute_modules != PN_RECOMPUTE_MODULE_CORE_ATTN)
    warn(warnings, ctx, "/recompute/recompute_modules",
         "only \"core_attn\" recomputation is simulated in this version: selective recompute runs as "
         "[\"core_attn\"]");
  if (tr->cuda_graph_modules != 0)
    warn(warnings, ctx, "/training/cuda_graph_modules",
         "CUDA graphs are not simulated in this version (kernels keep their launch cost)");
  return TRUE;
}

static gboolean validate_environment(const PnIoCtx *ctx, const PnScenario *sc, GPtrArray *warnings, GError **error)
{
  const PnHwProfile *hw = sc->hw;
  int64_t tp = sc->parallel.tensor_model_parallel_size, gpus = sc->hardware.num_gpus;

  /* launch environment against the hardware */
  const PnEnvConfig *env = &sc->env;
  if (env->nccl_min_ctas > 0 && env->nccl_max_ctas > 0 && env->nccl_min_ctas > env->nccl_max_ctas) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/env/NCCL_MIN_CTAS", "%d exceeds NCCL_MAX_CTAS %d",
                env->nccl_min_ctas, env->nccl_max_ctas);
    return FALSE;
  }
  if (env->nvte_fwd_layernorm_sm_margin >= hw->sm_count) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/env/NVTE_FWD_LAYERNORM_SM_MARGIN",
                "%d leaves no SM for the kernel (the GPU has %d)", env->nvte_fwd_layernorm_sm_margin, hw->sm_count);
    return FALSE;
  }
  if (env->nvte_bwd_layernorm_sm_margin >= hw->sm_count) {
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, "/env/NVTE_BWD_LAYERNORM_SM_MARGIN",
                "%d leaves no SM for the kernel (the GPU has %d)", env->nvte_bwd_layernorm_sm_margin, hw->sm_count);
    return FALSE;
  }
  if (tp > hw->gpus_per_node)
    warn(warnings, ctx, "/parallel/tensor_model_parallel_size",
         I64 " exceeds gpus_per_node %d: tensor-parallel collectives cross the network", tp, hw->gpus_per_node);
  if (gpus > hw->gpus_per_node && gpus % hw->gpus_per_node != 0)
    warn(warnings, ctx, "/hardware/num_gpus",
         I64 " is not a multiple of gpus_per_node %d: the last node is partly used", gpus, hw->gpus_per_node);
  return TRUE;
}

static gboolean validate(const PnIoCtx *ctx, PnScenario *sc, GPtrArray *warnings, GError **error)
{
  int64_t stage_layers = 0;
  if (!validate_layout(ctx, sc, error) || !validate_pipeline(ctx, sc, &stage_layers, error) ||
      !validate_batch(ctx, sc, error) || !validate_sequence(ctx, sc, warnings, error) ||
      !validate_experts(ctx, sc, error))
    return FALSE;
  if (sc->model.mtp_num_layers > 0)
    warn(warnings, ctx, "/model/mtp_num_layers",
         "multi-token prediction is not simulated in this version (" I64 " MTP layers ignored)",
         sc->model.mtp_num_layers);
  return validate_training(ctx, sc, stage_layers, warnings, error) && validate_environment(ctx, sc, warnings, error);
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
