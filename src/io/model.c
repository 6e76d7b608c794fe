/* model.c — model files (models/<name>.json) and inline models into PnModelConfig.
 *
 * A model is a flat object of Megatron TransformerConfig names. In a scenario, "model" is a
 * name, a path, or an inline object; an inline object may start from a file with "base" and
 * override fields. The base file is validated on its own first (its errors name that file), then
 * its keys and the overrides are merged and converted once more, so defaults derived from other
 * fields (kv_channels, num_query_groups, activation) follow the overrides.
 */
#include "io/model.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "io/io-private.h"

#define M_INT(k, field, lo, hi, req)                                                                                   \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_INT, .offset = offsetof(PnModelConfig, field),                                          \
    .size = sizeof(((PnModelConfig *)0)->field), .min = lo, .max = hi, .absurd = true, .required = req                 \
  }
#define M_BOOL(k, field)                                                                                               \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_BOOL, .offset = offsetof(PnModelConfig, field),                                         \
    .size = sizeof(((PnModelConfig *)0)->field)                                                                        \
  }
#define M_DROPOUT(k, field)                                                                                            \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_DOUBLE, .offset = offsetof(PnModelConfig, field),                                       \
    .size = sizeof(((PnModelConfig *)0)->field), .dmin = 0.0, .dmax = 1.0                                              \
  }
#define M_ENUM(k, field, tbl)                                                                                          \
  {                                                                                                                    \
    .key = k, .kind = PN_FIELD_ENUM, .offset = offsetof(PnModelConfig, field),                                         \
    .size = sizeof(((PnModelConfig *)0)->field), .names = tbl                                                          \
  }

static const PnEnumName activation_names[] = {{"gelu", PN_ACT_GELU},
                                              {"swiglu", PN_ACT_SWIGLU},
                                              {"squared_relu", PN_ACT_SQUARED_RELU},
                                              {"relu", PN_ACT_RELU},
                                              {NULL, 0}};
static const PnEnumName norm_names[]      = {{"LayerNorm", PN_NORM_LAYERNORM}, {"RMSNorm", PN_NORM_RMSNORM}, {NULL, 0}};
static const char *const position_names[] = {"rope", "yarn", "learned_absolute", "none"};

G_STATIC_ASSERT(sizeof(PnActivation) == sizeof(int) && sizeof(PnNorm) == sizeof(int));
G_STATIC_ASSERT(sizeof(((PnModelConfig *)0)->position_embedding_type) > sizeof "learned_absolute" - 1);

const PnField pn__io_model_fields[] = {
    {.key    = "name",
     .kind   = PN_FIELD_STRING,
     .offset = offsetof(PnModelConfig, name),
     .size   = sizeof(((PnModelConfig *)0)->name)},
    {.key = "source", .kind = PN_FIELD_IGNORED_STRING},
    {.key = "schema_version", .kind = PN_FIELD_IGNORED_INT},
    {.key = "base", .kind = PN_FIELD_CUSTOM},
    M_INT("num_layers", num_layers, 1, 100000, true),
    M_INT("hidden_size", hidden_size, 1, 10000000, true),
    M_INT("ffn_hidden_size", ffn_hidden_size, 1, 100000000, true),
    M_INT("num_attention_heads", num_attention_heads, 1, 1000000, true),
    M_INT("num_query_groups", num_query_groups, 1, 1000000, false),
    M_INT("kv_channels", kv_channels, 1, 1000000, false),
    M_BOOL("gated_linear_unit", gated_linear_unit),
    M_ENUM("activation", activation, activation_names),
    M_ENUM("normalization", normalization, norm_names),
    M_INT("vocab_size", vocab_size, 1, 1000000000, true),
    M_INT("make_vocab_size_divisible_by", make_vocab_size_divisible_by, 1, 1000000, false),
    M_BOOL("untie_embeddings_and_output_weights", untie_embeddings_and_output_weights),
    M_BOOL("add_bias_linear", add_bias_linear),
    M_BOOL("add_qkv_bias", add_qkv_bias),
    M_DROPOUT("hidden_dropout", hidden_dropout),
    M_DROPOUT("attention_dropout", attention_dropout),
    M_INT("max_position_embeddings", max_position_embeddings, 0, 1000000000, false),
    {.key = "position_embedding_type", .kind = PN_FIELD_CUSTOM},
    M_INT("num_moe_experts", num_moe_experts, 0, 1000000, false),
    M_INT("moe_router_topk", moe_router_topk, 0, 1000000, false),
    M_INT("moe_ffn_hidden_size", moe_ffn_hidden_size, 0, 100000000, false),
    M_INT("moe_shared_expert_intermediate_size", moe_shared_expert_intermediate_size, 0, 100000000, false),
    M_BOOL("moe_grouped_gemm", moe_grouped_gemm),
    {.key = "moe_expert_capacity_factor", .kind = PN_FIELD_CUSTOM},
    M_BOOL("moe_pad_expert_input_to_capacity", moe_pad_expert_input_to_capacity),
    {.key        = "mtp_num_layers",
     .kind       = PN_FIELD_INT_NULL,
     .offset     = offsetof(PnModelConfig, mtp_num_layers),
     .size       = sizeof(((PnModelConfig *)0)->mtp_num_layers),
     .min        = 0,
     .max        = 1000,
     .absurd     = true,
     .null_value = 0},
    {.key = "activation_func_clamp_value", .kind = PN_FIELD_CUSTOM},
    {.key = "moe_layer_freq", .kind = PN_FIELD_CUSTOM},
    M_BOOL("multi_latent_attention", multi_latent_attention),
    {.key        = "q_lora_rank",
     .kind       = PN_FIELD_INT_NULL,
     .offset     = offsetof(PnModelConfig, q_lora_rank),
     .size       = sizeof(((PnModelConfig *)0)->q_lora_rank),
     .min        = 1,
     .max        = 10000000,
     .absurd     = true,
     .null_value = 0},
    M_INT("kv_lora_rank", kv_lora_rank, 1, 10000000, false),
    M_INT("qk_head_dim", qk_head_dim, 1, 1000000, false),
    M_INT("qk_pos_emb_head_dim", qk_pos_emb_head_dim, 0, 1000000, false),
    M_INT("v_head_dim", v_head_dim, 1, 1000000, false),
    M_BOOL("qk_layernorm", qk_layernorm),
    {.key = NULL},
};

static void model_defaults(PnModelConfig *m)
{
  memset(m, 0, sizeof *m);
  m->make_vocab_size_divisible_by = 128;
  m->add_bias_linear              = true;
  m->moe_grouped_gemm             = true;
  m->normalization                = PN_NORM_LAYERNORM;
  m->moe_layer_freq               = 1;
  /* MLATransformerConfig's defaults (transformer_config.py) */
  m->q_lora_rank         = 512;
  m->kv_lora_rank        = 512;
  m->qk_head_dim         = 128;
  m->qk_pos_emb_head_dim = 64;
  m->v_head_dim          = 128;
  g_strlcpy(m->position_embedding_type, "learned_absolute", sizeof m->position_embedding_type);
}

/* moe_layer_freq: Megatron's int (every N-th layer from the first is a MoE layer) or its list of
 * 0 / 1 per layer (its length checked against num_layers below, once overrides are merged). */
static gboolean moe_layer_freq_convert(const PnIoCtx *ctx, const cJSON *v, const char *ptr, PnModelConfig *m,
                                       GError **error)
{
  g_autofree char *fptr = pn__io_ptr_child(ptr, "moe_layer_freq");
  if (cJSON_IsNumber(v))
    return pn__io_get_int(ctx, v, fptr, 1, 100000, true, &m->moe_layer_freq, error);
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
  if (n < 1 || n > PN_MAX_MOE_LAYER_PATTERN) {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, fptr,
                "expected an integer >= 1 or a list of 1 to %d entries 0 / 1 (one per layer), got %s",
                PN_MAX_MOE_LAYER_PATTERN, got);
    return FALSE;
  }
  int i = 0;
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    if (!cJSON_IsNumber(e) || (e->valuedouble != 0.0 && e->valuedouble != 1.0)) {
      g_autofree char *eptr = g_strdup_printf("%s/%d", fptr, i);
      g_autofree char *got  = pn__io_describe(e);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, eptr, "expected 0 (dense layer) or 1 (MoE layer), got %s", got);
      return FALSE;
    }
    m->moe_layer_pattern[i] = (uint8_t)e->valuedouble;
  }
  memset(m->moe_layer_pattern + n, 0, sizeof m->moe_layer_pattern - (size_t)n);
  m->moe_layer_pattern_set = true;
  m->moe_layer_freq        = n; /* the list's length until checked */
  return TRUE;
}

/* Converts one model object (keys already known to be valid for its origin) at `ptr`. */
static gboolean model_convert(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const char *default_name,
                              PnModelConfig *out, GError **error)
{
  if (!pn__io_check_keys(ctx, obj, ptr, pn__io_model_fields, error))
    return FALSE;
  PnModelConfig m;
  model_defaults(&m);
  if (!pn__io_apply_fields(ctx, obj, ptr, pn__io_model_fields, &m, TRUE, error))
    return FALSE;

  const cJSON *pos = cJSON_GetObjectItemCaseSensitive(obj, "position_embedding_type");
  if (pos != NULL) {
    g_autofree char *pptr = pn__io_ptr_child(ptr, "position_embedding_type");
    gboolean ok           = FALSE;
    for (gsize i = 0; cJSON_IsString(pos) && i < G_N_ELEMENTS(position_names); i++)
      if (strcmp(pos->valuestring, position_names[i]) == 0)
        ok = TRUE;
    if (!ok) {
      g_autofree char *got = pn__io_describe(pos);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, pptr,
                  "expected one of \"rope\", \"yarn\", \"learned_absolute\", \"none\", got %s", got);
      return FALSE;
    }
    g_strlcpy(m.position_embedding_type, pos->valuestring, sizeof m.position_embedding_type);
  }

  /* Megatron-Core's TransformerConfig: None, or a finite clamp > 0 */
  const cJSON *clamp = cJSON_GetObjectItemCaseSensitive(obj, "activation_func_clamp_value");
  if (clamp != NULL && !cJSON_IsNull(clamp)) {
    g_autofree char *cptr = pn__io_ptr_child(ptr, "activation_func_clamp_value");
    if (!pn__io_get_double(ctx, clamp, cptr, 0.0, HUGE_VAL, true, &m.activation_func_clamp_value, error))
      return FALSE;
  }

  /* TransformerConfig.__post_init__: a negative capacity factor is None (dropless); a pad to
   * capacity needs one */
  const cJSON *cf        = cJSON_GetObjectItemCaseSensitive(obj, "moe_expert_capacity_factor");
  g_autofree char *cfptr = pn__io_ptr_child(ptr, "moe_expert_capacity_factor");
  if (cf != NULL && !cJSON_IsNull(cf)) {
    if (!pn__io_get_double(ctx, cf, cfptr, -HUGE_VAL, HUGE_VAL, false, &m.moe_expert_capacity_factor, error))
      return FALSE;
    if (m.moe_expert_capacity_factor == 0.0) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, cfptr,
                  "expected a capacity factor > 0 (or null, or a negative number, for dropless MoE): 0 would drop "
                  "every token");
      return FALSE;
    }
    m.moe_expert_capacity_factor = MAX(m.moe_expert_capacity_factor, 0.0);
  }
  if (m.moe_pad_expert_input_to_capacity && m.moe_expert_capacity_factor == 0.0) {
    g_autofree char *pptr = pn__io_ptr_child(ptr, "moe_pad_expert_input_to_capacity");
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, pptr,
                "needs /model/moe_expert_capacity_factor (Megatron-Core: \"moe_expert_capacity_factor must be set to "
                "use moe_pad_expert_input_to_capacity\")");
    return FALSE;
  }

  const cJSON *freq = cJSON_GetObjectItemCaseSensitive(obj, "moe_layer_freq");
  if (freq != NULL && !moe_layer_freq_convert(ctx, freq, ptr, &m, error))
    return FALSE;

  /* defaults that depend on other fields */
  if (m.name[0] == '\0')
    g_strlcpy(m.name, default_name, sizeof m.name);
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(obj, "activation");
  const cJSON *glu = cJSON_GetObjectItemCaseSensitive(obj, "gated_linear_unit");
  if (act == NULL) {
    m.activation = m.gated_linear_unit ? PN_ACT_SWIGLU : PN_ACT_GELU;
  } else if (m.activation == PN_ACT_SWIGLU && !m.gated_linear_unit) {
    if (glu != NULL) {
      g_autofree char *aptr = pn__io_ptr_child(ptr, "activation");
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, aptr,
                  "\"swiglu\" is a gated linear unit, but gated_linear_unit is false");
      return FALSE;
    }
    m.gated_linear_unit = true; /* Megatron's --swiglu sets gated_linear_unit */
  }
  if (m.num_query_groups == 0)
    m.num_query_groups = m.num_attention_heads;
  if (m.kv_channels == 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      g_autofree char *hptr = pn__io_ptr_child(ptr, "num_attention_heads");
      pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, hptr,
                  "%" G_GINT64_FORMAT " does not divide hidden_size %" G_GINT64_FORMAT
                  " (set kv_channels, the head dimension)",
                  m.num_attention_heads, m.hidden_size);
      return FALSE;
    }
    m.kv_channels = m.hidden_size / m.num_attention_heads;
  }

  /* consistency */
  if (m.num_attention_heads % m.num_query_groups != 0) {
    g_autofree char *qptr = pn__io_ptr_child(ptr, "num_query_groups");
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, qptr,
                "%" G_GINT64_FORMAT " does not divide num_attention_heads %" G_GINT64_FORMAT, m.num_query_groups,
                m.num_attention_heads);
    return FALSE;
  }
  if (m.moe_layer_pattern_set && m.moe_layer_freq != m.num_layers) {
    g_autofree char *fptr = pn__io_ptr_child(ptr, "moe_layer_freq");
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, fptr,
                "a list of %" G_GINT64_FORMAT " entries, expected one per layer (num_layers %" G_GINT64_FORMAT ")",
                m.moe_layer_freq, m.num_layers);
    return FALSE;
  }
  if (m.moe_layer_pattern_set)
    m.moe_layer_freq = 0;
  if (m.num_moe_experts > 0 && (m.moe_router_topk < 1 || m.moe_router_topk > m.num_moe_experts)) {
    g_autofree char *tptr = pn__io_ptr_child(ptr, "moe_router_topk");
    pn__io_fail(error, PN_IO_ERROR_INVALID, ctx, tptr,
                "expected 1 to num_moe_experts (%" G_GINT64_FORMAT ") experts per token, got %" G_GINT64_FORMAT,
                m.num_moe_experts, m.moe_router_topk);
    return FALSE;
  }
  *out = m;
  return TRUE;
}

/* "models/llama3-8b.json" -> "llama3-8b" */
static char *name_from_path(const char *path)
{
  g_autofree char *base = g_path_get_basename(path);
  if (g_str_has_suffix(base, ".json"))
    base[strlen(base) - 5] = '\0';
  return g_steal_pointer(&base);
}

/* Loads and validates a model file; *root_out (may be NULL) receives its tree. */
static gboolean model_load_file(const char *path, PnModelConfig *out, cJSON **root_out, GError **error)
{
  cJSON *root = NULL;
  if (!pn__io_read_json(path, path, &root, error))
    return FALSE;
  PnIoCtx ctx           = {.file = path};
  g_autofree char *dflt = name_from_path(path);
  gboolean ok           = TRUE;
  if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "base") != NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, "/base",
                "\"base\" is only allowed in a scenario's inline model, not in a model file");
    ok = FALSE;
  } else if (!cJSON_IsObject(root)) {
    g_autofree char *got = pn__io_describe(root);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, "", "expected a model object at the top level, got %s", got);
    ok = FALSE;
  } else {
    ok = model_convert(&ctx, root, "", dflt, out, error);
  }
  if (ok && root_out != NULL)
    *root_out = root;
  else
    cJSON_Delete(root);
  return ok;
}

gboolean pn_model_load(const char *path, PnModelConfig *out, GError **error)
{
  g_return_val_if_fail(path != NULL && out != NULL, FALSE);
  return model_load_file(path, out, NULL, error);
}

gboolean pn__io_model_from_value(const PnIoCtx *ctx, const cJSON *v, const char *ptr, const char *base_dir,
                                 PnModelConfig *out, GError **error)
{
  if (cJSON_IsString(v)) {
    g_autofree char *path = pn__io_resolve(ctx, ptr, v->valuestring, base_dir, "models", "model", error);
    return path != NULL && model_load_file(path, out, NULL, error);
  }
  if (!cJSON_IsObject(v)) {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr,
                "expected a model name, a path ending in .json, or an inline model object, got %s", got);
    return FALSE;
  }
  if (!pn__io_check_keys(ctx, v, ptr, pn__io_model_fields, error))
    return FALSE;
  const cJSON *base = cJSON_GetObjectItemCaseSensitive(v, "base");
  if (base == NULL)
    return model_convert(ctx, v, ptr, "inline", out, error);

  g_autofree char *bptr = pn__io_ptr_child(ptr, "base");
  const char *ref;
  if (!pn__io_get_string(ctx, base, bptr, 4096, &ref, error))
    return FALSE;
  g_autofree char *path = pn__io_resolve(ctx, bptr, ref, base_dir, "models", "model", error);
  if (path == NULL)
    return FALSE;
  cJSON *merged = NULL;
  PnModelConfig base_model;
  if (!model_load_file(path, &base_model, &merged, error))
    return FALSE;
  cJSON_DeleteItemFromObjectCaseSensitive(merged, "name");
  for (const cJSON *c = v->child; c != NULL; c = c->next) {
    if (strcmp(c->string, "base") == 0)
      continue;
    cJSON *copy = cJSON_Duplicate(c, TRUE);
    if (cJSON_GetObjectItemCaseSensitive(merged, c->string) != NULL)
      cJSON_ReplaceItemInObjectCaseSensitive(merged, c->string, copy);
    else
      cJSON_AddItemToObject(merged, c->string, copy);
  }
  gboolean ok = model_convert(ctx, merged, ptr, base_model.name, out, error);
  cJSON_Delete(merged);
  return ok;
}
