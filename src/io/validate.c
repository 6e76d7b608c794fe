/* validate.c — published records → scenarios → predictions → error table (see validate.h). */
#include "io/validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "io/io-private.h"
#include "io/scenario.h"
#include "overlap/gating.h"
#include "sim/sim.h"

void pn_validation_row_free(PnValidationRow *row)
{
  if (!row)
    return;
  g_free(row->id);
  g_free(row->source_family);
  g_free(row->model);
  g_free(row->precision);
  g_free(row->layout);
  g_free(row->scenario_json);
  g_free(row->reason);
  g_free(row);
}

static const cJSON *obj_get(const cJSON *o, const char *key)
{
  return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static double num_or(const cJSON *o, const char *key, double dflt)
{
  const cJSON *v = obj_get(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
  const cJSON *v = obj_get(o, key);
  return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* Published model names that have a file in models/. */
static const char *model_file(const char *name)
{
  static const char *const map[][2] = {
      {"LLAMA3-8B", "llama3-8b"},         {"LLAMA3-70B", "llama3-70b"},           {"LLAMA3.1-405B", "llama3.1-405b"},
      {"LLAMA2-7B", "llama2-7b"},         {"LLAMA2-13B", "llama2-13b"},           {"LLAMA2-70B", "llama2-70b"},
      {"GPT3-175B", "gpt3-175b"},         {"Nemotron4-340B", "nemotron4-340b"},   {"Nemotron4-15B", "nemotron4-15b"},
      {"Qwen3-30B-A3B", "qwen3-30b-a3b"}, {"Qwen3-235B-A22B", "qwen3-235b-a22b"}, {"GPT-OSS-120B", "gpt-oss-120b"},
      {"DeepSeek-V3", "deepseek-v3"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
    if (strcmp(name, map[i][0]) == 0)
      return map[i][1];
  return NULL;
}

/* An inline model from the record's architecture block, with the family's conventions. */
static cJSON *inline_model(const char *name, const cJSON *arch, GString *notes)
{
  cJSON *m        = cJSON_CreateObject();
  double hidden   = num_or(arch, "hidden", 0);
  double heads    = num_or(arch, "heads", 0);
  double ffn      = num_or(arch, "ffn_hidden", 0);
  double kv       = num_or(arch, "kv_heads", heads);
  double vocab    = num_or(arch, "vocab", 0);
  bool gated      = cJSON_IsTrue(obj_get(arch, "gated_linear_unit"));
  const char *act = str_or(arch, "activation", "");
  bool nemotron   = g_str_has_prefix(name, "Nemotron");
  bool llama      = g_str_has_prefix(name, "LLAMA");
  if (ffn <= 0) {
    ffn = 4 * hidden;
    g_string_append(notes, "ffn_hidden not stated: 4*hidden assumed; ");
  }
  if (vocab <= 0) {
    vocab = llama ? 32000 : nemotron ? 256000 : 50257;
    g_string_append_printf(notes, "vocab from the tokenizer (%.0f); ", vocab);
  }
  cJSON_AddStringToObject(m, "name", name);
  cJSON_AddNumberToObject(m, "num_layers", num_or(arch, "layers", 0));
  cJSON_AddNumberToObject(m, "hidden_size", hidden);
  cJSON_AddNumberToObject(m, "ffn_hidden_size", ffn);
  cJSON_AddNumberToObject(m, "num_attention_heads", heads);
  cJSON_AddNumberToObject(m, "num_query_groups", kv);
  cJSON_AddNumberToObject(m, "vocab_size", vocab);
  cJSON_AddBoolToObject(m, "gated_linear_unit", gated);
  if (gated)
    cJSON_AddStringToObject(m, "activation", "swiglu");
  else if (strstr(act, "squared_relu"))
    cJSON_AddStringToObject(m, "activation", "squared_relu");
  else
    cJSON_AddStringToObject(m, "activation", "gelu");
  cJSON_AddStringToObject(m, "normalization", llama ? "RMSNorm" : "LayerNorm");
  cJSON_AddStringToObject(m, "position_embedding_type", (llama || nemotron) ? "rope" : "learned_absolute");
  cJSON_AddBoolToObject(m, "untie_embeddings_and_output_weights", llama || nemotron);
  cJSON_AddBoolToObject(m, "add_bias_linear", !(llama || nemotron));
  cJSON_AddNumberToObject(m, "max_position_embeddings", num_or(arch, "seq_len", 4096));
  return m;
}

/* The userbuffers preset a NeMo / Bridge recipe would name for this layout, if it exists. */
static const char *ub_preset_for(char *buf, size_t len, bool fp8, long hidden, long tp, long cp, long mbs, long seq)
{
  PnUbCfg cfg[PN_UB_N];
  for (int with_cp = 1; with_cp >= 0; with_cp--) {
    if (with_cp && cp <= 1)
      continue;
    char cp_part[32] = "";
    if (with_cp)
      g_snprintf(cp_part, sizeof cp_part, "_cp%ld", cp);
    g_snprintf(buf, len, "userbuffers_%s_h100_h%ld_tp%ld%s_mbs%ld_seqlen%ld", fp8 ? "fp8" : "bf16", hidden, tp, cp_part,
               mbs, seq);
    if (pn_ub_preset(buf, cfg))
      return buf;
  }
  return NULL;
}

static PnValidationRow *skip(PnValidationRow *row, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static PnValidationRow *skip(PnValidationRow *row, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  row->skipped = true;
  g_free(row->reason);
  row->reason = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return row;
}

/* What Megatron-Bridge's performance scripts of a release set for an H100 MoE row beyond the layout
 * its summary prints: the 25.11 starter pack (NVIDIA-NeMo/Megatron-Bridge@97ad8cc6f, "Added 25.11
 * starter pack", the commit that published the 25.11 rows) gives both Qwen3 H100 presets
 * moe_a2a_overlap=True (scripts/performance/configs/qwen/qwen3_workload_base_configs.py), which
 * scripts/performance/utils/overrides.py turns into overlap_moe_expert_parallel_comm and
 * delay_wgrad_compute on, moe_shared_expert_overlap off. (Its GPT-OSS H100 preset's
 * recompute_modules act on nothing: no recipe of that pack sets recompute_granularity "selective".)
 * The 25.09 pack (v0.1.0rc4, scripts/performance/configs/qwen3/ YAML files) sets none of them. */
static bool bridge_pack_ep_overlap(const cJSON *rec, const char *model)
{
  static const char *const models[] = {"Qwen3-30B-A3B", "Qwen3-235B-A22B"};
  const char *container             = str_or(obj_get(rec, "software"), "container", "");
  if (strcmp(container, "NeMo 25.11") != 0)
    return false;
  for (gsize i = 0; i < G_N_ELEMENTS(models); i++)
    if (strcmp(model, models[i]) == 0)
      return true;
  return false;
}

/* Megatron-Bridge's DeepSeek-V3 H100 performance run, the same in its 25.09 script
 * (v0.1.0rc4's scripts/performance/run_script.py: pp_vp_map "h100": (8, 4), the layout, DeepEP,
 * A2A_1F1B, recompute_modules, overlap_grad_reduce False) and its 25.11 pack
 * (Megatron-Bridge@97ad8cc6f scripts/performance/configs/deepseek/: the H100 base config's
 * moe_flex_dispatcher_backend "deepep", moe_a2a_overlap, recompute_modules, the layout, and
 * "cfg.comm_overlap.overlap_grad_reduce = False"): the pipeline layout "Et|(tt|)*30mL" (the
 * embedding and one layer, thirty stages of two, the MTP layer and the loss), the flex
 * dispatcher, EP overlap with delayed wgrad, moe_shared_expert_overlap off, selective recompute of
 * mla_up_proj and mlp (the dense layers' MLPs), no overlap of the gradient reduction; the
 * recipe's apply_rope_fusion is off (recipes/deepseek/deepseek_v3.py). */
static bool bridge_deepseek_v3_h100(const cJSON *rec, const char *model, long pp, long vp)
{
  return strcmp(model, "DeepSeek-V3") == 0 && pp == 8 && vp == 4 &&
         g_str_has_prefix(str_or(rec, "source_family", ""), "megatron-bridge");
}

/* The scenario a record describes, as JSON: its layout, and the frameworks' defaults (Megatron-Bridge's
 * recipes, Megatron-LM's overlap flags) for what it leaves out. Sets row->layout; what had to be
 * assumed is appended to `notes` ("...; "). */
static cJSON *record_scenario(const cJSON *rec, PnValidationRow *row, const char *profile, GString *notes)
{
  const cJSON *model = obj_get(rec, "model");
  const cJSON *par   = obj_get(rec, "parallelism");
  const cJSON *arch  = obj_get(model, "architecture");
  long tp = (long)num_or(par, "tp", 1), pp = (long)num_or(par, "pp", 1), cp = (long)num_or(par, "cp", 1);
  long vp = (long)num_or(par, "vp", 1), gbs = (long)num_or(par, "gbs", 0);
  long mbs = (long)num_or(par, "mbs", 0);
  long seq = (long)num_or(model, "seq_len_used", num_or(arch, "seq_len", 0));
  if (mbs <= 0) {
    mbs = 1;
    g_string_append(notes, "micro-batch size not stated: 1 assumed; ");
  }
  bool fp8      = g_str_has_prefix(row->precision, "FP8");
  bool mlm      = g_str_has_prefix(row->source_family, "megatron-lm");
  const char *f = model_file(row->model);

  cJSON *sc = cJSON_CreateObject();
  cJSON_AddNumberToObject(sc, "schema_version", 1);
  cJSON_AddStringToObject(sc, "name", row->id);
  /* Megatron-Bridge 25.09's "(tokendrop)" rows: its performance script applied
   * apply_moe_token_drop to the Qwen3 recipes (v0.1.0rc4 scripts/performance/run_script.py;
   * training/utils/moe_token_drop.py: capacity factor 1.0, padded to capacity); 25.11's are
   * dropless with forced balance (the page's footnote, v0.2.0 configs/qwen3) */
  bool tokendrop = strstr(str_or(rec, "model_label_in_source", ""), "tokendrop") != NULL;
  cJSON *mo      = f ? NULL : inline_model(row->model, arch, notes);
  if (f && tokendrop) {
    mo = cJSON_CreateObject();
    cJSON_AddStringToObject(mo, "base", f);
  }
  if (tokendrop) {
    cJSON_AddNumberToObject(mo, "moe_expert_capacity_factor", 1.0);
    cJSON_AddBoolToObject(mo, "moe_pad_expert_input_to_capacity", true);
    g_string_append(notes, "token drop as the 25.09 script set it (capacity 1.0, padded); ");
  }
  if (mo != NULL)
    cJSON_AddItemToObject(sc, "model", mo);
  else
    cJSON_AddStringToObject(sc, "model", f);
  cJSON *h = cJSON_AddObjectToObject(sc, "hardware");
  cJSON_AddStringToObject(h, "profile", profile);
  cJSON_AddNumberToObject(h, "num_gpus", (double)row->gpus);
  cJSON *tr = cJSON_AddObjectToObject(sc, "training");
  cJSON_AddNumberToObject(tr, "seq_length", (double)seq);
  cJSON_AddNumberToObject(tr, "micro_batch_size", (double)mbs);
  cJSON_AddNumberToObject(tr, "global_batch_size", (double)gbs);
  cJSON_AddStringToObject(tr, "precision", fp8 ? "fp8" : "bf16");
  /* The scaling recipe, from the record's precision: Megatron-Bridge 25.11 writes "FP8-CS" (current
   * scaling, Megatron-Core's "tensorwise"); its 25.09 page has no precision column and "says
   * numbers in parentheses use a different FP8 quantization granularity (... blockwise)", so the
   * main value is current scaling too (its perf harness offers fp8_cs, fp8_mx and fp8_sc only:
   * scripts/performance/utils/precision.py). NeMo 24.07's "FP8" is Transformer Engine's delayed
   * scaling, the only recipe NeMo configured then and Megatron-Core's default. */
  if (fp8)
    cJSON_AddStringToObject(tr, "fp8_recipe",
                            strstr(row->precision, "CS") || g_str_has_prefix(row->source_family, "megatron-bridge")
                                ? "tensorwise"
                                : "delayed");
  /* The loss: Megatron-Bridge's GPTModelProvider turns cross_entropy_loss_fusion on and its
   * performance harness chooses Transformer Engine's implementation (cross_entropy_fusion_impl
   * "te": 25.09's scripts/performance/configs/<model>/<model>_llm_pretrain.yaml, 25.11's
   * scripts/performance/utils/helpers.py); Megatron-LM and NeMo 24.07 run Megatron-Core's default,
   * the unfused vocab-parallel cross entropy. */
  if (g_str_has_prefix(row->source_family, "megatron-bridge")) {
    cJSON_AddBoolToObject(tr, "cross_entropy_loss_fusion", true);
    cJSON_AddStringToObject(tr, "cross_entropy_fusion_impl", "te");
  }
  /* GPT-OSS's provider turns the bias-dropout-add fusion off (Megatron-Bridge v0.2.0, 25.11's
   * release: models/gpt_oss/gpt_oss_provider.py, bias_dropout_fusion=False; still so at 067f987,
   * models/gpt_oss/gpt_oss_bridge.py:74) */
  if (f && strcmp(f, "gpt-oss-120b") == 0)
    cJSON_AddBoolToObject(tr, "bias_dropout_fusion", false);
  bool deepseek = bridge_deepseek_v3_h100(rec, row->model, pp, vp);
  if (deepseek)
    cJSON_AddBoolToObject(tr, "apply_rope_fusion", false);
  /* The optimizer: Megatron-Bridge's performance harness turns the precision-aware optimizer on
   * for bf16 runs (25.09's v0.1.0rc4 and 25.11's v0.2.0 scripts/performance/run_script.py:
   * `if args.compute_dtype == "bf16": recipe.optimizer.use_precision_aware_optimizer = True`) but
   * not with Megatron-FSDP (utils/helpers.py turns it off there); the DeepSeek-V3 recipe sets it
   * with bf16 moments and bf16 main grads (recipes/deepseek/deepseek_v3.py). */
  bool fsdp = num_or(par, "fsdp", 0) > 0; /* FSDP > 0: Megatron-FSDP (below) */
  if (g_str_has_prefix(row->source_family, "megatron-bridge") && ((!fp8 && !fsdp) || deepseek))
    cJSON_AddBoolToObject(tr, "use_precision_aware_optimizer", true);
  if (deepseek) {
    cJSON_AddStringToObject(tr, "exp_avg_dtype", "bf16");
    cJSON_AddStringToObject(tr, "exp_avg_sq_dtype", "bf16");
  }
  cJSON *p = cJSON_AddObjectToObject(sc, "parallel");
  cJSON_AddNumberToObject(p, "tensor_model_parallel_size", (double)tp);
  cJSON_AddNumberToObject(p, "pipeline_model_parallel_size", (double)pp);
  if (vp > 1)
    cJSON_AddNumberToObject(p, "virtual_pipeline_model_parallel_size", (double)vp);
  cJSON_AddNumberToObject(p, "context_parallel_size", (double)cp);
  cJSON_AddBoolToObject(p, "sequence_parallel", tp > 1);
  long layers = (long)num_or(arch, "layers", 0), stages = pp * (vp > 1 ? vp : 1);
  if (deepseek) {
    cJSON_AddStringToObject(p, "pipeline_model_parallel_layout", "Et|(tt|)*30mL");
    g_string_append(notes, "the Bridge H100 script's layout, DeepEP, EP overlap and recompute; ");
  } else if (layers % stages != 0 && (layers + 2) % stages == 0) {
    /* Megatron-Bridge's recipes for such models (Llama 3.1 405B) count the embedding and the
     * loss as pipeline layers: the only split Megatron accepts for this layout */
    cJSON_AddBoolToObject(p, "account_for_embedding_in_pipeline_split", true);
    cJSON_AddBoolToObject(p, "account_for_loss_in_pipeline_split", true);
    g_string_append(notes, "embedding and loss accounted in the pipeline split; ");
  }
  const cJSON *moe = obj_get(arch, "moe");
  long ep          = (long)num_or(par, "ep", 1);
  bool pack_ep     = moe && (bridge_pack_ep_overlap(rec, row->model) || deepseek);
  bool ep_overlap  = cJSON_IsTrue(obj_get(obj_get(par, "overlap"), "overlap_moe_expert_parallel_comm")) || pack_ep;
  if (pack_ep && !deepseek)
    g_string_append(notes, "EP overlap and delayed wgrad as the 25.11 pack sets them; ");
  if (moe) {
    /* Megatron-Bridge's MoE recipes: expert TP 1, the alltoall dispatcher of the model providers
     * unless the record names another, EP overlap and delayed wgrad only when it says so */
    const char *disp = str_or(par, "moe_dispatcher", "");
    cJSON_AddNumberToObject(p, "expert_model_parallel_size", (double)ep);
    cJSON_AddNumberToObject(p, "expert_tensor_parallel_size", 1);
    cJSON_AddStringToObject(p, "moe_token_dispatcher_type",
                            g_str_has_prefix(disp, "flex") || deepseek ? "flex" : "alltoall");
    if (!*disp && !deepseek && !tokendrop) /* token drop asserts alltoall (moe_token_drop.py) */
      g_string_append(notes, "MoE dispatcher not stated: alltoall assumed; ");
  }
  cJSON *d = cJSON_AddObjectToObject(sc, "ddp");
  cJSON_AddBoolToObject(d, "use_distributed_optimizer", true);
  cJSON_AddBoolToObject(d, "grad_reduce_in_fp32", false);
  /* FSDP > 0: Megatron-FSDP over #GPUs / (TP * PP), as the performance harness sets it
   * (scripts/performance/utils/overrides.py _set_megatron_fsdp_overrides: optim_grads_params,
   * average_in_collective off) */
  if (fsdp) {
    cJSON_AddBoolToObject(d, "use_megatron_fsdp", true);
    cJSON_AddStringToObject(d, "data_parallel_sharding_strategy", "optim_grads_params");
    cJSON_AddBoolToObject(d, "average_in_collective", false);
  }
  if (mlm) {
    cJSON_AddBoolToObject(d, "overlap_grad_reduce", true);
    cJSON_AddBoolToObject(d, "overlap_param_gather", true);
  }
  if (deepseek)
    cJSON_AddBoolToObject(d, "overlap_grad_reduce", false);
  cJSON *co = cJSON_AddObjectToObject(sc, "comm_overlap");
  cJSON_AddBoolToObject(co, "tp_comm_overlap", tp > 1);
  char preset[128];
  long hidden = (long)num_or(arch, "hidden", 0);
  if (tp > 1 && ub_preset_for(preset, sizeof preset, fp8, hidden, tp, cp, mbs, seq))
    cJSON_AddStringToObject(co, "tp_comm_overlap_cfg", preset);
  if (moe) {
    cJSON_AddBoolToObject(co, "overlap_moe_expert_parallel_comm", ep_overlap);
    cJSON_AddBoolToObject(co, "delay_wgrad_compute", cJSON_IsTrue(obj_get(par, "delay_wgrad_compute")) || pack_ep);
  }
  if (deepseek) {
    cJSON_AddBoolToObject(co, "moe_shared_expert_overlap", false);
    cJSON *rc = cJSON_AddObjectToObject(sc, "recompute");
    cJSON_AddStringToObject(rc, "recompute_granularity", "selective");
    cJSON *mods = cJSON_AddArrayToObject(rc, "recompute_modules");
    cJSON_AddItemToArray(mods, cJSON_CreateString("mla_up_proj"));
    cJSON_AddItemToArray(mods, cJSON_CreateString("mlp"));
  }
  cJSON *env = cJSON_AddObjectToObject(sc, "env");
  /* Megatron-LM asserts one connection with TP / CP on Hopper; the MoE recipes run 8 or 32 */
  cJSON_AddNumberToObject(env, "CUDA_DEVICE_MAX_CONNECTIONS", (!moe && !fsdp && (tp > 1 || cp > 1)) ? 1 : 8);

  if (moe)
    row->layout = g_strdup_printf("TP%ld PP%ld VP%ld CP%ld EP%ld MBS%ld GBS%ld%s", tp, pp, vp, cp, ep, mbs, gbs,
                                  ep_overlap ? " EP-overlap" : "");
  else
    row->layout =
        g_strdup_printf("TP%ld PP%ld VP%ld CP%ld MBS%ld GBS%ld%s", tp, pp, vp, cp, mbs, gbs, fsdp ? " FSDP" : "");
  return sc;
}

static PnValidationRow *validate_record(const cJSON *rec, const char *profile)
{
  PnValidationRow *row    = g_new0(PnValidationRow, 1);
  const cJSON *model      = obj_get(rec, "model");
  const cJSON *hw         = obj_get(rec, "hardware");
  const cJSON *arch       = obj_get(model, "architecture");
  const cJSON *summary    = obj_get(rec, "summary");
  row->id                 = g_strdup(str_or(rec, "id", "?"));
  row->source_family      = g_strdup(str_or(rec, "source_family", "?"));
  row->model              = g_strdup(str_or(model, "name", "?"));
  row->gpus               = (long)num_or(hw, "gpus_total", 0);
  row->precision          = g_strdup(str_or(rec, "precision", "?"));
  row->published_step_s   = num_or(obj_get(summary, "step_time_s"), "value", (double)NAN);
  row->measured_exposed_s = (double)NAN;
  const char *gpu         = str_or(hw, "gpu", "");
  if (!strstr(gpu, "H100"))
    return skip(row, "not an H100 record (%s)", gpu);
  if (!cJSON_IsTrue(obj_get(rec, "config_complete")))
    return skip(row, "configuration incomplete in the source");
  if (strcmp(str_or(rec, "task", "pretrain"), "pretrain") != 0)
    return skip(row, "not pretraining");
  if (!cJSON_IsObject(arch))
    return skip(row, "architecture not stated");
  if (!isfinite(row->published_step_s) || row->published_step_s <= 0)
    return skip(row, "no step time or throughput");

  g_autoptr(GString) notes = g_string_new(NULL);
  cJSON *sc                = record_scenario(rec, row, profile, notes);
  g_autofree char *text    = cJSON_PrintUnformatted(sc);
  char *pretty             = cJSON_Print(sc);
  row->scenario_json       = pretty ? g_strdup_printf("%s\n", pretty) : NULL;
  cJSON_free(pretty);
  cJSON_Delete(sc);
  g_autoptr(GError) error  = NULL;
  g_autofree char *display = g_strdup_printf("%s.json", row->id);
  g_autoptr(PnScenario) s  = pn_scenario_load_string(text, display, NULL, 0, NULL, &error);
  if (!s)
    return skip(row, "%s%s", notes->str, error->message);
  g_autoptr(PnResult) r = pn_sim_run(s, NULL, &error);
  if (!r)
    return skip(row, "%s%s", notes->str, error->message);
  row->predicted_step_s = r->iteration_time_s;
  row->error_pct        = (row->predicted_step_s - row->published_step_s) / row->published_step_s * 100.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    row->exposed_comm_s += r->exposed_comm_s[c];
  row->bubble_s = r->bubble_s;
  if (notes->len >= 2)
    g_string_truncate(notes, notes->len - 2);
  row->reason = g_strdup(notes->str);
  return row;
}

gboolean pn_validate_file(const char *records_path, const char *profile, GPtrArray *rows, GError **error)
{
  cJSON *root = NULL;
  if (!pn__io_read_json(records_path, records_path, &root, error))
    return FALSE;
  if (!cJSON_IsArray(root)) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "%s: /: expected an array of records", records_path);
    cJSON_Delete(root);
    return FALSE;
  }
  const cJSON *rec;
  cJSON_ArrayForEach(rec, root)
  {
    if (!cJSON_IsObject(rec))
      continue;
    g_ptr_array_add(rows, validate_record(rec, profile));
  }
  cJSON_Delete(root);
  return TRUE;
}

gboolean pn_validate_e2e(const char *results_path, const char *scenario_dir, GPtrArray *rows, GError **error)
{
  cJSON *root = NULL;
  if (!pn__io_read_json(results_path, results_path, &root, error))
    return FALSE;
  const cJSON *results = obj_get(root, "results");
  if (!cJSON_IsArray(results) || strcmp(str_or(root, "kind", ""), "e2e") != 0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "%s: /kind: expected an end-to-end result file (kind \"e2e\")",
                results_path);
    cJSON_Delete(root);
    return FALSE;
  }
  const char *gpu = str_or(obj_get(root, "env"), "gpu", str_or(obj_get(root, "env"), "gpu_name", ""));
  const cJSON *res;
  cJSON_ArrayForEach(res, results)
  {
    const char *config       = str_or(res, "config", "");
    g_autofree char *sc_path = g_strdup_printf("%s/%s.json", scenario_dir, config);
    if (!g_file_test(sc_path, G_FILE_TEST_EXISTS))
      continue; /* reference runs without communication have no scenario */
    PnValidationRow *row    = g_new0(PnValidationRow, 1);
    row->id                 = g_strdup(config);
    row->gpus               = (long)(num_or(res, "dp", 1) * num_or(res, "tp", 1) * num_or(res, "pp", 1));
    row->source_family      = g_strdup_printf("e2e, %ld GPUs (our runs)", row->gpus); /* per machine size */
    row->model              = g_strdup("llama-like 8-layer (microbench/e2e)");
    row->precision          = g_strdup("bf16");
    row->published_step_s   = num_or(res, "step_time_ms", (double)NAN) * 1e-3;
    row->measured_exposed_s = num_or(res, "exposed_comm_ms", (double)NAN) * 1e-3;
    row->layout             = g_strdup_printf("DP%.0f TP%.0f PP%.0f (%s)", num_or(res, "dp", 1), num_or(res, "tp", 1),
                                              num_or(res, "pp", 1), gpu);
    g_autoptr(GError) err   = NULL;
    g_autoptr(PnScenario) s = pn_scenario_load(sc_path, NULL, 0, NULL, &err);
    g_autoptr(PnResult) r   = s ? pn_sim_run(s, NULL, &err) : NULL;
    if (!r) {
      g_ptr_array_add(rows, skip(row, "%s", err->message));
      continue;
    }
    row->predicted_step_s = r->iteration_time_s;
    row->error_pct        = (row->predicted_step_s - row->published_step_s) / row->published_step_s * 100.0;
    for (int c = 0; c < PN_CLASS_N; c++)
      row->exposed_comm_s += r->exposed_comm_s[c];
    row->bubble_s = r->bubble_s;
    row->reason   = g_strdup_printf("exposed comm measured %.1f ms, predicted %.1f ms", row->measured_exposed_s * 1e3,
                                    row->exposed_comm_s * 1e3);
    g_ptr_array_add(rows, row);
  }
  cJSON_Delete(root);
  return TRUE;
}

char *pn_validate_plot_data(const GPtrArray *rows)
{
  GString *s = g_string_new("# measured_step_s predicted_step_s id\n");
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = g_ptr_array_index(rows, i);
    if (!r->skipped)
      g_string_append_printf(s, "%.6g %.6g %s\n", r->published_step_s, r->predicted_step_s, r->id);
  }
  return g_string_free(s, FALSE);
}

double pn_validate_mape(const GPtrArray *rows, int *n_out)
{
  double sum = 0.0;
  int n      = 0;
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = g_ptr_array_index(rows, i);
    if (r->skipped)
      continue;
    sum += fabs(r->error_pct);
    n++;
  }
  if (n_out)
    *n_out = n;
  return n ? sum / n : (double)NAN;
}

/* MAPE of the rows whose `key` (source family or model) equals `value`, and their mean signed
 * error (*signed_pct: a family's bias, which the MAPE hides). */
static double group_mape(const GPtrArray *rows, bool by_model, const char *value, int *n, double *signed_pct)
{
  double sum = 0.0, sum_signed = 0.0;
  *n = 0;
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = g_ptr_array_index(rows, i);
    if (r->skipped || strcmp(by_model ? r->model : r->source_family, value) != 0)
      continue;
    sum += fabs(r->error_pct);
    sum_signed += r->error_pct;
    (*n)++;
  }
  *signed_pct = *n ? sum_signed / *n : (double)NAN;
  return *n ? sum / *n : (double)NAN;
}

/* The source families (or models) of the predicted rows, each once, in the order the rows first
 * name them (strings borrowed from the rows). */
static GPtrArray *group_keys(const GPtrArray *rows, bool by_model)
{
  GPtrArray *keys = g_ptr_array_new();
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = g_ptr_array_index(rows, i);
    const char *key          = by_model ? r->model : r->source_family;
    bool dup                 = r->skipped;
    for (guint j = 0; j < keys->len && !dup; j++)
      dup = strcmp(g_ptr_array_index(keys, j), key) == 0;
    if (!dup)
      g_ptr_array_add(keys, (gpointer)key);
  }
  return keys;
}

static void append_groups(GString *s, const GPtrArray *rows, bool by_model)
{
  g_autoptr(GPtrArray) keys = group_keys(rows, by_model);
  for (guint i = 0; i < keys->len; i++) {
    const char *key = g_ptr_array_index(keys, i);
    int n;
    double sgn, m = group_mape(rows, by_model, key, &n, &sgn);
    g_string_append_printf(s, "  %-44s %3d  %6.1f%%  %+6.1f%%\n", key, n, m, sgn);
  }
}

static gint by_abs_error(gconstpointer a, gconstpointer b)
{
  const PnValidationRow *x = *(PnValidationRow *const *)a, *y = *(PnValidationRow *const *)b;
  double ex = fabs(x->error_pct), ey = fabs(y->error_pct);
  return ex < ey ? 1 : ex > ey ? -1 : strcmp(x->id, y->id);
}

char *pn_validate_report_text(const GPtrArray *rows)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%-58s %-30s %10s %10s %8s\n", "record", "layout", "published", "predicted", "error");
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = g_ptr_array_index(rows, i);
    if (r->skipped)
      continue;
    bool note = r->reason && r->reason[0];
    g_string_append_printf(s, "%-58s %-30s %9.3fs %9.3fs %+7.1f%%%s%s%s\n", r->id, r->layout, r->published_step_s,
                           r->predicted_step_s, r->error_pct, note ? "  (" : "", note ? r->reason : "",
                           note ? ")" : "");
  }
  int n;
  double mape = pn_validate_mape(rows, &n);
  g_string_append_printf(s, "\nMAPE on step time: %.1f%% over %d records\n", mape, n);
  g_string_append(s, "\nby source family:                              n    MAPE  signed\n");
  append_groups(s, rows, false);
  g_string_append(s, "by model:\n");
  append_groups(s, rows, true);
  g_autoptr(GPtrArray) sorted = g_ptr_array_new();
  for (guint i = 0; i < rows->len; i++)
    if (!((PnValidationRow *)g_ptr_array_index(rows, i))->skipped)
      g_ptr_array_add(sorted, g_ptr_array_index(rows, i));
  g_ptr_array_sort(sorted, by_abs_error);
  g_string_append(s, "worst five:\n");
  for (guint i = 0; i < sorted->len && i < 5; i++) {
    const PnValidationRow *r = g_ptr_array_index(sorted, i);
    g_string_append_printf(s, "  %-58s %+7.1f%%\n", r->id, r->error_pct);
  }
  g_string_append(s, "skipped:\n");
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = g_ptr_array_index(rows, i);
    if (r->skipped)
      g_string_append_printf(s, "  %-58s %s\n", r->id, r->reason);
  }
  return g_string_free(s, FALSE);
}

char *pn_validate_report_json(const GPtrArray *rows)
{
  cJSON *root = cJSON_CreateObject();
  int n;
  double mape = pn_validate_mape(rows, &n);
  cJSON_AddNumberToObject(root, "mape_pct", isfinite(mape) ? mape : 0.0);
  cJSON_AddNumberToObject(root, "n", n);
  /* per source family, in the order the records first name them: MAPE and mean signed error */
  cJSON *fams               = cJSON_AddArrayToObject(root, "families");
  g_autoptr(GPtrArray) keys = group_keys(rows, false);
  for (guint i = 0; i < keys->len; i++) {
    const char *family = g_ptr_array_index(keys, i);
    int fn;
    double sgn, m = group_mape(rows, false, family, &fn, &sgn);
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "source_family", family);
    cJSON_AddNumberToObject(f, "n", fn);
    cJSON_AddNumberToObject(f, "mape_pct", m);
    cJSON_AddNumberToObject(f, "signed_pct", sgn);
    cJSON_AddItemToArray(fams, f);
  }
  cJSON *arr = cJSON_AddArrayToObject(root, "records");
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = g_ptr_array_index(rows, i);
    cJSON *o                 = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "source_family", r->source_family);
    cJSON_AddStringToObject(o, "model", r->model);
    cJSON_AddBoolToObject(o, "skipped", r->skipped);
    cJSON_AddStringToObject(o, "note", r->reason ? r->reason : "");
    if (!r->skipped) {
      cJSON_AddStringToObject(o, "layout", r->layout);
      cJSON_AddNumberToObject(o, "published_step_s", r->published_step_s);
      cJSON_AddNumberToObject(o, "predicted_step_s", r->predicted_step_s);
      cJSON_AddNumberToObject(o, "error_pct", r->error_pct);
      cJSON_AddNumberToObject(o, "exposed_comm_s", r->exposed_comm_s);
      cJSON_AddNumberToObject(o, "bubble_s", r->bubble_s);
    }
    cJSON_AddItemToArray(arr, o);
  }
  char *out = cJSON_Print(root);
  cJSON_Delete(root);
  char *res = g_strconcat(out, "\n", NULL);
  free(out);
  return res;
}

/* The family of a model's name: its letters and first digits ("llama3" for llama3-70b and
 * LLAMA3.1-405B). */
static char *family_of(const char *name)
{
  GString *s    = g_string_new(NULL);
  const char *p = name;
  while (g_ascii_isalpha(*p))
    g_string_append_c(s, g_ascii_tolower(*p++));
  while (g_ascii_isdigit(*p))
    g_string_append_c(s, *p++);
  return g_string_free(s, FALSE);
}

void pn_validate_family_error(const char *model_name, double *pct, int *n, char **family_out)
{
  *pct                      = NAN;
  *n                        = 0;
  g_autofree char *data     = pn_io_data_dir();
  g_autofree char *records  = g_build_filename(data, "tests", "data", "validation", "published-visible.json", NULL);
  g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)pn_validation_row_free);
  if (!pn_validate_file(records, "h100-sxm", rows, NULL))
    return;
  g_autofree char *fam         = family_of(model_name);
  g_autoptr(GPtrArray) members = g_ptr_array_new(); /* borrowed rows of the family */
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = rows->pdata[i];
    g_autofree char *rf      = family_of(r->model);
    if (fam[0] != '\0' && rf[0] != '\0' && (g_str_has_prefix(rf, fam) || g_str_has_prefix(fam, rf)))
      g_ptr_array_add(members, rows->pdata[i]);
  }
  int n_fam = 0, n_all = 0;
  double fam_pct = pn_validate_mape(members, &n_fam), all_pct = pn_validate_mape(rows, &n_all);
  if (n_fam >= 3) {
    *pct        = fam_pct;
    *n          = n_fam;
    *family_out = g_strdup_printf("%s models", fam);
  } else if (n_all > 0) {
    *pct        = all_pct;
    *n          = n_all;
    *family_out = g_strdup_printf("all H100 records (fewer than 3 of %s)", fam[0] ? fam : "this model");
  }
}
