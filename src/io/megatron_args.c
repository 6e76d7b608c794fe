/* megatron_args.c — Megatron-LM launch lines into scenarios and back (megatron.h).
 *
 * Import reads the line in three parts (environment, launcher, the script's arguments), checks
 * every argument against Megatron-LM's own parser (megatron_flags.c), and fills a scenario object
 * through the rows of pn_megatron_args; the rows of form CUSTOM are converted here. Absent
 * arguments take Megatron-LM's defaults, written out, so that the scenario runs what Megatron-LM
 * would run rather than what Megatron-Bridge's gating would choose. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io/io-private.h"
#include "io/megatron.h"
#include "io/scenario.h"
#include "overlap/gating.h"
#include "workload/split.h"

typedef struct {
  const char *name;  /* "--num-layers" */
  GPtrArray *values; /* char* (borrowed from argv, or owned by `owned`) */
  bool used;         /* mapped, or said why not */
} PnSeenArg;

typedef struct {
  GPtrArray *args;     /* PnSeenArg*, in the order first seen */
  GHashTable *by_name; /* name → PnSeenArg* */
  GPtrArray *env;      /* "NAME=VALUE", borrowed */
  GPtrArray *owned;    /* strings split off "--name=value" */
  int64_t num_gpus;    /* 0: unknown */
  const char *script;  /* NULL: arguments alone */
  GPtrArray *notes;
  GPtrArray *warnings;
} PnLaunch;

static void seen_free(gpointer p)
{
  PnSeenArg *a = p;
  g_ptr_array_free(a->values, TRUE);
  g_free(a);
}

static void launch_clear(PnLaunch *l)
{
  g_ptr_array_free(l->args, TRUE);
  g_hash_table_destroy(l->by_name);
  g_ptr_array_free(l->env, TRUE);
  g_ptr_array_free(l->owned, TRUE);
}

static PnSeenArg *arg_get(PnLaunch *l, const char *name) { return g_hash_table_lookup(l->by_name, name); }

/* The single value of `name` (marked used), or NULL when absent. */
static const char *arg_value(PnLaunch *l, const char *name)
{
  PnSeenArg *a = arg_get(l, name);
  if (a == NULL)
    return NULL;
  a->used = true;
  return a->values->len ? g_ptr_array_index(a->values, 0) : "";
}

static bool arg_present(PnLaunch *l, const char *name) { return arg_value(l, name) != NULL; }

static void note(GPtrArray *to, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void note(GPtrArray *to, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (to != NULL)
    g_ptr_array_add(to, g_strdup_vprintf(fmt, ap));
  va_end(ap);
}

/* ---- reading the line ---- */

static bool is_env_assignment(const char *t)
{
  const char *eq = strchr(t, '=');
  if (eq == NULL || eq == t || !(g_ascii_isalpha(t[0]) || t[0] == '_'))
    return false;
  for (const char *c = t; c < eq; c++)
    if (!g_ascii_isalnum(*c) && *c != '_')
      return false;
  return true;
}

static bool is_python(const char *t)
{
  g_autofree char *base = g_path_get_basename(t);
  return g_str_has_prefix(base, "python") && !g_str_has_suffix(base, ".py");
}

/* torchrun's options that take no value (everything else of the form --x takes one). */
static bool launcher_flag(const char *opt)
{
  static const char *const flags[] = {"--standalone", "--no-python", "--no_python", "--run-path",
                                      "--run_path",   "--module",    "-m"};
  for (gsize i = 0; i < G_N_ELEMENTS(flags); i++)
    if (strcmp(opt, flags[i]) == 0)
      return true;
  return false;
}

/* A count of the launcher's, or 0 (with a note) for what is not one ("gpu", an elastic "1:4"). */
static int64_t launcher_count(PnLaunch *l, const char *opt, const char *text)
{
  char *end = NULL;
  gint64 v  = g_ascii_strtoll(text, &end, 10);
  if (end != text && *end == '\0' && v >= 1 && v <= 10000000)
    return v;
  note(l->warnings, "launcher %s %s: not a count; the GPU count comes from --set hardware.num_gpus", opt, text);
  return 0;
}

/* The launcher's options from argv[*i] up to the script; the GPU count from them (0: unknown). */
static void read_launcher(int argc, char **argv, int *i, PnLaunch *l)
{
  int64_t nproc = 1, nnodes = 1;
  while (*i < argc && argv[*i][0] == '-') {
    g_autofree char *opt = g_strdup(argv[*i]);
    char *eq             = strchr(opt, '=');
    const char *value    = NULL;
    if (eq != NULL) {
      *eq   = '\0';
      value = eq + 1;
    } else if (!launcher_flag(opt) && *i + 1 < argc) {
      value = argv[++*i];
    }
    (*i)++;
    if (value != NULL && (strcmp(opt, "--nproc_per_node") == 0 || strcmp(opt, "--nproc-per-node") == 0))
      nproc = launcher_count(l, opt, value);
    else if (value != NULL && strcmp(opt, "--nnodes") == 0)
      nnodes = launcher_count(l, opt, value);
  }
  l->num_gpus = nproc * nnodes;
}

/* Environment, launcher and script: argv[*i] is left on the script's first argument. */
static gboolean read_prefix(int argc, char **argv, int *i, PnLaunch *l, GError **error)
{
  for (; *i < argc && (strcmp(argv[*i], "env") == 0 || is_env_assignment(argv[*i])); (*i)++)
    if (strcmp(argv[*i], "env") != 0)
      g_ptr_array_add(l->env, argv[*i]);
  if (*i >= argc || g_str_has_prefix(argv[*i], "--"))
    return TRUE; /* the script's arguments alone */
  g_autofree char *base = g_path_get_basename(argv[*i]);
  bool torchrun         = strcmp(base, "torchrun") == 0;
  bool module_run =
      is_python(argv[*i]) && *i + 2 < argc && strcmp(argv[*i + 1], "-m") == 0 &&
      (strcmp(argv[*i + 2], "torch.distributed.run") == 0 || strcmp(argv[*i + 2], "torch.distributed.launch") == 0);
  if (torchrun || module_run) {
    *i += torchrun ? 1 : 3;
    read_launcher(argc, argv, i, l);
  } else if (is_python(argv[*i])) {
    (*i)++;
    l->num_gpus = 1; /* one process, one GPU */
  }
  if (*i < argc && is_python(argv[*i]))
    (*i)++;
  if (*i >= argc || !g_str_has_suffix(argv[*i], ".py")) {
    g_autofree char *q = pn__io_quote(*i < argc ? argv[*i] : "");
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "expected the training script (pretrain_gpt.py) after the environment and the launcher, got %s", q);
    return FALSE;
  }
  l->script = argv[(*i)++];
  return TRUE;
}

static const char *suggest_flag(const char *name)
{
  g_autofree const char **names = g_new(const char *, pn_megatron_n_flags);
  for (gsize i = 0; i < pn_megatron_n_flags; i++)
    names[i] = pn_megatron_flags[i].name;
  return pn__io_suggest(name, names, pn_megatron_n_flags);
}

/* Megatron-LM argument names of earlier releases that the current one no longer takes, read as
 * their replacement (with a note). */
static const char *legacy_flag(const char *name)
{
  if (strcmp(name, "--virtual-pipeline-model-parallel-size") == 0)
    return "--num-virtual-stages-per-pipeline-rank";
  return NULL;
}

static gboolean unknown_flag(const char *name, GError **error)
{
  g_autofree char *q = pn__io_quote(name);
  const char *sugg   = suggest_flag(name);
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "%s: Megatron-LM rejects this argument (%s)%s%s%s", q,
              PN_MEGATRON_LM_COMMIT, sugg ? "; did you mean " : "", sugg ? sugg : "", sugg ? "?" : "");
  return FALSE;
}

/* One "--name [values]" or "--name=value" at argv[*i]. */
static gboolean read_arg(int argc, char **argv, int *i, PnLaunch *l, GError **error)
{
  const char *tok = argv[(*i)++];
  if (!g_str_has_prefix(tok, "--")) {
    g_autofree char *q = pn__io_quote(tok);
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "%s: expected an argument (--name): Megatron-LM takes no positional arguments", q);
    return FALSE;
  }
  const char *eq = strchr(tok, '=');
  char *name     = eq ? g_strndup(tok, (gsize)(eq - tok)) : g_strdup(tok);
  g_ptr_array_add(l->owned, name);
  const PnMegatronFlag *f = pn_megatron_flag(name);
  if (f == NULL && legacy_flag(name) != NULL) {
    note(l->warnings, "%s: not an argument of %s any more; read as %s", name, PN_MEGATRON_LM_COMMIT, legacy_flag(name));
    f = pn_megatron_flag(legacy_flag(name));
  }
  if (f == NULL)
    return unknown_flag(name, error);
  PnSeenArg *a = arg_get(l, f->name);
  if (a == NULL) {
    a         = g_new0(PnSeenArg, 1);
    a->name   = f->name;
    a->values = g_ptr_array_new();
    g_ptr_array_add(l->args, a);
    g_hash_table_insert(l->by_name, (gpointer)f->name, a);
  }
  g_ptr_array_set_size(a->values, 0); /* argparse: the last occurrence wins */
  if (eq != NULL)
    g_ptr_array_add(a->values, (gpointer)(eq + 1));
  if (f->arity <= PN_MEGATRON_SETS_FALSE && eq != NULL) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "%s: takes no value", name);
    return FALSE;
  }
  if (f->arity == PN_MEGATRON_ONE_VALUE && eq == NULL) {
    if (*i >= argc || g_str_has_prefix(argv[*i], "--")) {
      g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "%s: expected a value", name);
      return FALSE;
    }
    g_ptr_array_add(a->values, argv[(*i)++]);
  }
  while (f->arity == PN_MEGATRON_VALUES && eq == NULL && *i < argc && !g_str_has_prefix(argv[*i], "--"))
    g_ptr_array_add(a->values, argv[(*i)++]);
  return TRUE;
}

static gboolean read_line(int argc, char **argv, PnLaunch *l, GError **error)
{
  int i = 0;
  if (!read_prefix(argc, argv, &i, l, error))
    return FALSE;
  while (i < argc)
    if (!read_arg(argc, argv, &i, l, error))
      return FALSE;
  return TRUE;
}

/* ---- into the scenario object ---- */

/* `text` as JSON: a number when it is one, otherwise a string. */
static cJSON *json_value(const char *text)
{
  char *end = NULL;
  double v  = g_ascii_strtod(text, &end);
  if (end != text && *end == '\0' && isfinite(v))
    return cJSON_CreateNumber(v);
  return cJSON_CreateString(text);
}

static void put(cJSON *root, const char *key, cJSON *value)
{
  const char *dot          = strchr(key, '.');
  g_autofree char *section = g_strndup(key, (gsize)(dot - key));
  cJSON *obj               = cJSON_GetObjectItemCaseSensitive(root, section);
  if (obj == NULL)
    obj = cJSON_AddObjectToObject(root, section);
  cJSON_DeleteItemFromObjectCaseSensitive(obj, dot + 1);
  cJSON_AddItemToObject(obj, dot + 1, value);
}

static double get_number(cJSON *root, const char *section, const char *key, double dflt)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, section), key);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* One row of pn_megatron_args that is not CUSTOM. */
static gboolean map_row(PnLaunch *l, const PnMegatronArg *row, cJSON *root, GError **error)
{
  if (row->form == PN_MEGATRON_DERIVED || row->form == PN_MEGATRON_CUSTOM)
    return TRUE;
  if (row->form == PN_MEGATRON_ENVIRONMENT) {
    gsize n = strlen(row->arg);
    for (guint i = 0; i < l->env->len; i++) {
      const char *e = g_ptr_array_index(l->env, i);
      if (strncmp(e, row->arg, n) == 0 && e[n] == '=')
        put(root, row->key, json_value(e + n + 1));
    }
    return TRUE;
  }
  PnSeenArg *a = arg_get(l, row->arg);
  if (a != NULL)
    a->used = true;
  if (row->form == PN_MEGATRON_FLAG) {
    put(root, row->key, cJSON_CreateBool(a != NULL));
  } else if (row->form == PN_MEGATRON_NEG_FLAG) {
    /* Megatron-LM turns overlap_p2p_comm off itself without interleaving: absent, the gating says */
    if (a != NULL || strcmp(row->key, "comm_overlap.overlap_p2p_comm") != 0)
      put(root, row->key, cJSON_CreateBool(a == NULL));
  } else if (a != NULL) {
    for (guint i = 1; i < a->values->len; i++)
      if (strcmp(g_ptr_array_index(a->values, i), g_ptr_array_index(a->values, 0)) != 0) {
        g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                    "%s: one value for every layer is simulated (%s), got several", row->arg, row->key);
        return FALSE;
      }
    if (a->values->len > 0)
      put(root, row->key, json_value(g_ptr_array_index(a->values, 0)));
  }
  return TRUE;
}

static void map_activation(PnLaunch *l, cJSON *root)
{
  bool swiglu = arg_present(l, "--swiglu"), squared = arg_present(l, "--squared-relu");
  put(root, "model.gated_linear_unit", cJSON_CreateBool(swiglu));
  put(root, "model.activation", cJSON_CreateString(swiglu ? "swiglu" : squared ? "squared_relu" : "gelu"));
  /* Megatron-LM: bias_activation_fusion is bias_swiglu_fusion with --swiglu, else bias_gelu_fusion */
  bool off_swiglu = arg_present(l, "--no-bias-swiglu-fusion"), off_gelu = arg_present(l, "--no-bias-gelu-fusion");
  put(root, "training.bias_activation_fusion", cJSON_CreateBool(!(swiglu ? off_swiglu : off_gelu)));
  if (arg_present(l, "--use-rotary-position-embeddings") && !arg_present(l, "--position-embedding-type"))
    put(root, "model.position_embedding_type", cJSON_CreateString("rope"));
}

/* Megatron-LM's defaults for what the model file leaves to penumbra's defaults otherwise. */
static void map_model_defaults(PnLaunch *l, cJSON *root)
{
  double h = get_number(root, "model", "hidden_size", 0.0);
  if (!arg_present(l, "--ffn-hidden-size") && h > 0.0) {
    bool swiglu = arg_present(l, "--swiglu");
    /* arguments.py: 4h, or with SwiGLU 2/3 of it rounded down to a multiple of 64 */
    put(root, "model.ffn_hidden_size", cJSON_CreateNumber(swiglu ? floor(4.0 * h * 2.0 / 3.0 / 64.0) * 64.0 : 4.0 * h));
  }
  if (!arg_present(l, "--hidden-dropout"))
    put(root, "model.hidden_dropout", cJSON_CreateNumber(0.1));
  if (!arg_present(l, "--attention-dropout"))
    put(root, "model.attention_dropout", cJSON_CreateNumber(0.1));
  bool gqa           = arg_present(l, "--group-query-attention");
  const char *groups = arg_value(l, "--num-query-groups");
  if (gqa && groups != NULL)
    put(root, "model.num_query_groups", json_value(groups));
  else if (groups != NULL)
    note(l->notes,
         "ignored: --num-query-groups %s (without --group-query-attention Megatron-LM uses multi-head "
         "attention)",
         groups);
  if (get_number(root, "model", "num_moe_experts", 0.0) > 0.0 && !arg_present(l, "--moe-router-topk"))
    put(root, "model.moe_router_topk", cJSON_CreateNumber(2.0));
  /* arguments.py's MLA defaults, where MLATransformerConfig (the model file's) has others */
  if (arg_present(l, "--multi-latent-attention")) {
    if (!arg_present(l, "--q-lora-rank"))
      put(root, "model.q_lora_rank", cJSON_CreateNull());
    if (!arg_present(l, "--kv-lora-rank"))
      put(root, "model.kv_lora_rank", cJSON_CreateNumber(32.0));
  }
}

/* --moe-layer-freq (arguments.py moe_freq_type): an int, or a Python expression of a list of 0 / 1
 * ("[0]*3+[1]*58", "([1]*1+[0]*1)*24") that Megatron-LM eval()s: lists, '+' concatenation,
 * '*' repetition by an integer, parentheses. Read here without Python, into `out` (0 / 1 each);
 * FALSE past PN_MAX_MOE_LAYER_PATTERN entries or on anything else. */
typedef struct {
  const char *p;
  GByteArray *out;
} FreqParser;

static void freq_space(FreqParser *f)
{
  while (*f->p == ' ')
    f->p++;
}

static gboolean freq_sum(FreqParser *f);

static gboolean freq_term(FreqParser *f)
{
  freq_space(f);
  guint from = f->out->len;
  if (*f->p == '[') {
    f->p++;
    for (freq_space(f); *f->p != ']'; freq_space(f)) {
      if ((*f->p != '0' && *f->p != '1') || f->out->len >= PN_MAX_MOE_LAYER_PATTERN)
        return FALSE;
      guint8 v = (guint8)(*f->p++ - '0');
      g_byte_array_append(f->out, &v, 1);
      freq_space(f);
      if (*f->p == ',')
        f->p++;
      else if (*f->p != ']')
        return FALSE;
    }
    f->p++;
  } else if (*f->p == '(') {
    f->p++;
    if (!freq_sum(f))
      return FALSE;
    freq_space(f);
    if (*f->p++ != ')')
      return FALSE;
  } else {
    return FALSE;
  }
  for (freq_space(f); *f->p == '*'; freq_space(f)) {
    f->p++;
    freq_space(f);
    char *end = NULL;
    gint64 n  = g_ascii_strtoll(f->p, &end, 10);
    if (end == f->p || n < 0 || (gint64)(f->out->len - from) * n > PN_MAX_MOE_LAYER_PATTERN)
      return FALSE;
    f->p          = end;
    guint len     = f->out->len - from;
    guint8 *chunk = g_memdup2(f->out->data + from, len);
    g_byte_array_set_size(f->out, from);
    for (gint64 k = 0; k < n; k++)
      g_byte_array_append(f->out, chunk, len);
    g_free(chunk);
  }
  return TRUE;
}

static gboolean freq_sum(FreqParser *f)
{
  if (!freq_term(f))
    return FALSE;
  for (freq_space(f); *f->p == '+'; freq_space(f)) {
    f->p++;
    if (!freq_term(f))
      return FALSE;
  }
  return TRUE;
}

static gboolean map_moe_layer_freq(PnLaunch *l, cJSON *root, GError **error)
{
  const char *text = arg_value(l, "--moe-layer-freq");
  if (text == NULL)
    return TRUE;
  char *end = NULL;
  gint64 n  = g_ascii_strtoll(text, &end, 10);
  if (end != text && *end == '\0' && n >= 1) {
    put(root, "model.moe_layer_freq", cJSON_CreateNumber((double)n));
    return TRUE;
  }
  g_autoptr(GByteArray) bytes = g_byte_array_new();
  FreqParser f                = {text, bytes};
  gboolean ok                 = freq_sum(&f);
  freq_space(&f);
  if (!ok || *f.p != '\0' || bytes->len == 0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "--moe-layer-freq %s: expected an integer >= 1 or a list expression of 0 / 1 such as "
                "\"[0]*3+[1]*58\" (at most %d layers)",
                text, PN_MAX_MOE_LAYER_PATTERN);
    return FALSE;
  }
  cJSON *arr = cJSON_CreateArray();
  for (guint i = 0; i < bytes->len; i++)
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(bytes->data[i]));
  put(root, "model.moe_layer_freq", arr);
  return TRUE;
}

static gboolean map_precision(PnLaunch *l, cJSON *root, GError **error)
{
  const char *fp8 = arg_value(l, "--fp8-format");
  bool bf16 = arg_present(l, "--bf16"), fp16 = arg_present(l, "--fp16");
  if (fp8 == NULL && !bf16 && !fp16) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "no --bf16, --fp16 or --fp8-format: penumbra prices bf16 and fp8 training, not fp32");
    return FALSE;
  }
  if (fp8 == NULL && fp16)
    note(l->warnings, "--fp16: simulated as bf16 (the same tensor-core rate; the loss scaling is not priced)");
  put(root, "training.precision", cJSON_CreateString(fp8 != NULL ? "fp8" : "bf16"));
  /* arguments.py: with --bf16, gradients accumulate and reduce in fp32 unless --grad-reduce-in-bf16
   * (or --main-grads-dtype bf16) says otherwise */
  bool acc_fp32          = arg_present(l, "--accumulate-allreduce-grads-in-fp32"),
       in_bf16           = arg_present(l, "--grad-reduce-in-bf16");
  const char *main_grads = arg_value(l, "--main-grads-dtype");
  bool fp32_main         = main_grads == NULL || strcmp(main_grads, "fp32") == 0;
  put(root, "ddp.grad_reduce_in_fp32", cJSON_CreateBool(!in_bf16 && (acc_fp32 || (bf16 && fp32_main))));
  return TRUE;
}

static gboolean map_layout(PnLaunch *l, cJSON *root, GError **error)
{
  const char *per_stage = arg_value(l, "--num-layers-per-virtual-pipeline-stage");
  const char *layout    = arg_value(l, "--pipeline-model-parallel-layout");
  /* arguments.py validate_args: one way to give the virtual size; and with uneven first / last
   * stages only as a count of virtual stages */
  if (layout != NULL && (per_stage != NULL || arg_present(l, "--num-virtual-stages-per-pipeline-rank"))) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "--pipeline-model-parallel-layout gives the virtual pipeline size itself: no "
                "--num-layers-per-virtual-pipeline-stage or --num-virtual-stages-per-pipeline-rank with it "
                "(Megatron-LM)");
    return FALSE;
  }
  if (per_stage != NULL &&
      (arg_present(l, "--decoder-first-pipeline-num-layers") || arg_present(l, "--decoder-last-pipeline-num-layers"))) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "--num-layers-per-virtual-pipeline-stage: with --decoder-first-pipeline-num-layers or "
                "--decoder-last-pipeline-num-layers Megatron-LM wants --num-virtual-stages-per-pipeline-rank");
    return FALSE;
  }
  if (layout != NULL)
    put(root, "parallel.pipeline_model_parallel_layout", cJSON_CreateString(layout));
  if (per_stage != NULL) {
    /* arguments.py: the accounted embedding and loss count as layers of the stages divided */
    double layers = get_number(root, "model", "num_layers", 0.0) +
                    (arg_present(l, "--account-for-embedding-in-pipeline-split") ? 1.0 : 0.0) +
                    (arg_present(l, "--account-for-loss-in-pipeline-split") ? 1.0 : 0.0);
    double pp  = get_number(root, "parallel", "pipeline_model_parallel_size", 1.0);
    double n   = g_ascii_strtod(per_stage, NULL);
    double vpp = n >= 1.0 ? layers / pp / n : 0.0;
    if (!(vpp >= 1.0 && vpp == floor(vpp))) {
      g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                  "--num-layers-per-virtual-pipeline-stage %s: does not divide the %g layers of each of the %g "
                  "pipeline stages",
                  per_stage, layers, pp);
      return FALSE;
    }
    put(root, "parallel.virtual_pipeline_model_parallel_size", cJSON_CreateNumber(vpp));
  }
  PnSeenArg *modules = arg_get(l, "--recompute-modules");
  if (modules != NULL) {
    modules->used = true;
    cJSON *arr    = cJSON_CreateArray();
    for (guint i = 0; i < modules->values->len; i++)
      cJSON_AddItemToArray(arr, cJSON_CreateString(g_ptr_array_index(modules->values, i)));
    put(root, "recompute.recompute_modules", arr);
  }
  if (arg_present(l, "--recompute-activations") && !arg_present(l, "--recompute-granularity"))
    put(root, "recompute.recompute_granularity", cJSON_CreateString("selective"));
  return TRUE;
}

/* CUDA graphs (arguments.py ~611-641): --cuda-graph-modules, or the deprecated --cuda-graph-scope
 * whose "full_iteration" meant the impl (and "full", like Megatron's default, the whole layer);
 * the deprecated --enable-cuda-graph is the local impl, --external-cuda-graph transformer_engine,
 * which Megatron-LM refuses together. --cuda-graph-impl itself is a plain row. */
static gboolean map_cuda_graphs(PnLaunch *l, cJSON *root, GError **error)
{
  bool local = arg_present(l, "--enable-cuda-graph"), external = arg_present(l, "--external-cuda-graph");
  if (local && external) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "--enable-cuda-graph and --external-cuda-graph cannot be used together (Megatron-LM)");
    return FALSE;
  }
  bool impl_given = arg_present(l, "--cuda-graph-impl");
  PnSeenArg *mods = arg_get(l, "--cuda-graph-modules"), *dep = arg_get(l, "--cuda-graph-scope");
  if (dep != NULL)
    dep->used = true; /* read when --cuda-graph-modules is absent, as Megatron-LM does */
  PnSeenArg *scope = mods != NULL ? mods : dep;
  if (scope != NULL) {
    scope->used = true;
    cJSON *arr  = cJSON_CreateArray();
    for (guint i = 0; i < scope->values->len; i++) {
      const char *v = g_ptr_array_index(scope->values, i);
      if (strcmp(v, "full_iteration") == 0 && scope == dep && !impl_given)
        put(root, "training.cuda_graph_impl", cJSON_CreateString("full_iteration"));
      else if (strcmp(v, "full") != 0 && !g_str_has_prefix(v, "full_iteration"))
        cJSON_AddItemToArray(arr, cJSON_CreateString(v));
    }
    put(root, "training.cuda_graph_modules", arr);
  }
  if (!impl_given && (local || external))
    put(root, "training.cuda_graph_impl", cJSON_CreateString(local ? "local" : "transformer_engine"));
  return TRUE;
}

/* What penumbra reads but does not simulate as Megatron-LM would run it: said, and recorded. */
static void map_implementation(PnLaunch *l, GString *description)
{
  const char *opt = arg_value(l, "--optimizer");
  if (opt != NULL && strcmp(opt, "adam") != 0)
    note(l->warnings, "--optimizer %s: simulated as Adam (the optimizer step penumbra prices)", opt);
  PnSeenArg *spec = arg_get(l, "--spec");
  if (spec != NULL) {
    spec->used                 = true;
    g_autoptr(GString) modules = g_string_new(NULL);
    for (guint i = 0; i < spec->values->len; i++)
      g_string_append_printf(modules, "%s%s", i ? " " : "", (const char *)g_ptr_array_index(spec->values, i));
    g_string_append_printf(description, "; custom layer spec --spec %s, simulated as the standard GPT layer",
                           modules->str);
    note(l->warnings, "--spec %s: a custom layer spec; simulated as Megatron-Core's standard GPT layer", modules->str);
  }
}

/* Everything read but neither mapped nor commented on: one note each, in the line's order. */
static void note_ignored(PnLaunch *l)
{
  for (guint i = 0; i < l->env->len; i++) {
    const char *e = g_ptr_array_index(l->env, i);
    bool known    = false;
    for (size_t r = 0; r < pn_megatron_n_args; r++) {
      gsize n = strlen(pn_megatron_args[r].arg);
      known |= pn_megatron_args[r].form == PN_MEGATRON_ENVIRONMENT && strncmp(e, pn_megatron_args[r].arg, n) == 0 &&
               e[n] == '=';
    }
    if (!known && !g_str_has_prefix(e, "WORLD_SIZE="))
      note(l->notes, "ignored: %s (not modelled)", e);
  }
  for (guint i = 0; i < l->args->len; i++) {
    const PnSeenArg *a = g_ptr_array_index(l->args, i);
    if (a->used)
      continue;
    g_autoptr(GString) line = g_string_new(a->name);
    for (guint v = 0; v < a->values->len; v++)
      g_string_append_printf(line, " %s", (const char *)g_ptr_array_index(a->values, v));
    note(l->notes, "ignored: %s (not modelled)", line->str);
  }
}

static const char *const sections[] = {"model", "hardware",     "training",  "parallel",
                                       "ddp",   "comm_overlap", "recompute", "env"};

/* The scenario object of the line read into `l`. */
static cJSON *build(PnLaunch *l, int argc, char **argv, GError **error)
{
  g_autoptr(GString) line = g_string_new(NULL);
  for (int i = 0; i < argc; i++)
    g_string_append_printf(line, "%s%s", i ? " " : "", argv[i]);
  g_autoptr(GString) description =
      g_string_new("Imported from a Megatron-LM launch line (arguments checked against " PN_MEGATRON_LM_COMMIT ")");
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "schema_version", 1);
  g_autofree char *base = g_path_get_basename(l->script ? l->script : "megatron-args");
  if (g_str_has_suffix(base, ".py"))
    base[strlen(base) - 3] = '\0';
  cJSON_AddStringToObject(root, "name", base);
  cJSON *desc = cJSON_AddStringToObject(root, "description", "");
  cJSON_AddStringToObject(root, "source", line->str);
  for (gsize i = 0; i < G_N_ELEMENTS(sections); i++)
    cJSON_AddObjectToObject(root, sections[i]);
  put(root, "hardware.profile", cJSON_CreateString("h100-sxm"));
  for (guint i = 0; l->num_gpus == 0 && i < l->env->len; i++)
    if (g_str_has_prefix(g_ptr_array_index(l->env, i), "WORLD_SIZE="))
      l->num_gpus = g_ascii_strtoll((const char *)g_ptr_array_index(l->env, i) + strlen("WORLD_SIZE="), NULL, 10);
  if (l->num_gpus > 0)
    put(root, "hardware.num_gpus", cJSON_CreateNumber((double)l->num_gpus));
  gboolean ok = TRUE;
  for (size_t r = 0; ok && r < pn_megatron_n_args; r++)
    ok = map_row(l, &pn_megatron_args[r], root, error);
  if (ok) {
    map_activation(l, root);
    map_model_defaults(l, root);
    ok = map_precision(l, root, error) && map_layout(l, root, error) && map_cuda_graphs(l, root, error) &&
         map_moe_layer_freq(l, root, error);
  }
  if (!ok) {
    cJSON_Delete(root);
    return NULL;
  }
  map_implementation(l, description);
  cJSON_SetValuestring(desc, description->str);
  note_ignored(l);
  return root;
}

/* The JSON text of `root` as the shipped scenarios are written: two-space indents. */
static char *print_scenario(const cJSON *root)
{
  g_autofree char *raw = cJSON_Print(root);
  GString *out         = g_string_new(NULL);
  bool line_start      = true;
  for (const char *c = raw; *c; c++) {
    if (*c == '\t' && line_start)
      g_string_append(out, "  ");
    else if (*c == '\t')
      g_string_append_c(out, ' ');
    else
      g_string_append_c(out, *c);
    line_start = *c == '\n' || (line_start && *c == '\t');
  }
  g_string_append_c(out, '\n');
  return g_string_free(out, FALSE);
}

/* A required key neither the line nor --set gave: what to add, as an error. */
static gboolean require(cJSON *root, const char *section, const char *key, const char *how, GError **error)
{
  if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, section), key) != NULL)
    return TRUE;
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "%s.%s: not in the launch line: %s, or --set %s.%s=N", section,
              key, how, section, key);
  return FALSE;
}

char *pn_megatron_import(int argc, char **argv, const char *const *sets, int n_sets, GPtrArray *notes,
                         GPtrArray *warnings, GError **error)
{
  PnLaunch l  = {.args     = g_ptr_array_new_with_free_func(seen_free),
                 .by_name  = g_hash_table_new(g_str_hash, g_str_equal),
                 .env      = g_ptr_array_new(),
                 .owned    = g_ptr_array_new_with_free_func(g_free),
                 .notes    = notes,
                 .warnings = warnings};
  cJSON *root = read_line(argc, argv, &l, error) ? build(&l, argc, argv, error) : NULL;
  launch_clear(&l);
  if (root == NULL)
    return NULL;
  gboolean ok = TRUE;
  for (int i = 0; ok && i < n_sets; i++)
    ok = pn__io_scenario_apply_set(root, sets[i], error);
  ok = ok &&
       require(root, "hardware", "num_gpus", "give the launcher (torchrun --nproc_per_node N --nnodes M)", error) &&
       require(root, "model", "vocab_size", "give --vocab-size (Megatron-LM's log prints the padded size)", error);
  for (gsize i = 0; ok && i < G_N_ELEMENTS(sections); i++)
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, sections[i])) == 0)
      cJSON_DeleteItemFromObjectCaseSensitive(root, sections[i]);
  char *text = ok ? print_scenario(root) : NULL;
  cJSON_Delete(root);
  if (text == NULL)
    return NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load_string(text, "<imported>", NULL, 0, warnings, error);
  if (sc == NULL)
    g_clear_pointer(&text, g_free);
  return text;
}

/* ---- out of a scenario ---- */

/* The shortest text that reads back as the same double. */
static void shortest_double(PnScenarioValue *out, double v)
{
  for (int digits = 1; digits <= 17; digits++) {
    g_autofree char *fmt = g_strdup_printf("%%.%dg", digits);
    g_ascii_formatd(out->text, sizeof out->text, fmt, v);
    if (g_ascii_strtod(out->text, NULL) == v)
      break;
  }
}

/* A model field as a user writes it in JSON (the model file's conversion table, io/model.c). */
static void model_value(const PnModelConfig *m, const char *field, PnScenarioValue *out)
{
  const PnField *f = pn__io_field_find(pn__io_model_fields, field);
  g_assert(f != NULL);
  const char *p = (const char *)m + f->offset;
  switch (f->kind) {
  case PN_FIELD_INT:
  case PN_FIELD_INT_NULL:
    if (f->kind == PN_FIELD_INT_NULL && *(const int64_t *)p == f->null_value)
      g_strlcpy(out->text, "null", sizeof out->text);
    else
      g_snprintf(out->text, sizeof out->text, "%" G_GINT64_FORMAT, *(const int64_t *)p);
    break;
  case PN_FIELD_BOOL:
    g_strlcpy(out->text, *(const bool *)p ? "true" : "false", sizeof out->text);
    break;
  case PN_FIELD_DOUBLE:
    shortest_double(out, *(const double *)p);
    break;
  case PN_FIELD_ENUM:
    g_snprintf(out->text, sizeof out->text, "\"%s\"", pn__io_enum_name(f->names, *(const int *)p));
    break;
  default:
    if (strcmp(field, "activation_func_clamp_value") == 0) /* 0: none, left out like the other zeros */
      shortest_double(out, m->activation_func_clamp_value);
    else if (strcmp(field, "moe_expert_capacity_factor") == 0) /* 0: None (dropless), left out */
      m->moe_expert_capacity_factor > 0.0 ? shortest_double(out, m->moe_expert_capacity_factor)
                                          : (void)g_strlcpy(out->text, "null", sizeof out->text);
    else /* position_embedding_type, the one string */
      g_snprintf(out->text, sizeof out->text, "\"%s\"", m->position_embedding_type);
    break;
  }
}

/* The overlap switches the launch line carries as the gating resolved them (sched/plan.h). */
static const struct {
  const char *key;
  size_t offset;
} resolved[] = {
    {"ddp.use_distributed_optimizer", offsetof(PnPlan, use_distributed_optimizer)},
    {"ddp.overlap_grad_reduce", offsetof(PnPlan, overlap_grad_reduce)},
    {"ddp.overlap_param_gather", offsetof(PnPlan, overlap_param_gather)},
    {"ddp.align_param_gather", offsetof(PnPlan, align_param_gather)},
    {"ddp.overlap_param_gather_with_optimizer_step", offsetof(PnPlan, overlap_param_gather_with_optimizer_step)},
    {"comm_overlap.tp_comm_overlap", offsetof(PnPlan, tp_comm_overlap)},
    {"comm_overlap.overlap_p2p_comm", offsetof(PnPlan, overlap_p2p_comm)},
    {"comm_overlap.overlap_p2p_comm_warmup_flush", offsetof(PnPlan, overlap_p2p_comm_warmup_flush)},
    {"comm_overlap.delay_wgrad_compute", offsetof(PnPlan, delay_wgrad_compute)},
};

/* Row `key`'s value in `sc`: the plan's where the gating decides, else the scenario's. */
static void key_value(const PnScenario *sc, const PnPlan *plan, const char *key, PnScenarioValue *v)
{
  if (g_str_has_prefix(key, "model.")) {
    model_value(&sc->model, key + strlen("model."), v);
    return;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(resolved); i++)
    if (strcmp(key, resolved[i].key) == 0) {
      g_strlcpy(v->text, *(const bool *)((const char *)plan + resolved[i].offset) ? "true" : "false", sizeof v->text);
      return;
    }
  PnScenarioField f;
  gboolean found = pn_scenario_field_find(key, "megatron", &f, NULL);
  g_assert(found);
  pn_scenario_field_get(&f, sc, v);
}

/* Keys that do not act in `sc` and that import gives back when left out: the expert layout of a
 * dense model, the CP ring type without CP, the full-recompute method without full recompute,
 * Megatron-FSDP's settings without it, the
 * LayerNorm SM margins and NCCL CTA bounds at their defaults, CUDA graphs off, Megatron-LM's default
 * layers and attention backend, the optimizer's dtypes at fp32. */
static bool inert(const PnScenario *sc, const char *key, const char *text)
{
  bool dense = sc->model.num_moe_experts == 0;
  if (dense && (g_str_has_prefix(key, "parallel.expert_") || strcmp(key, "parallel.moe_token_dispatcher_type") == 0 ||
                strcmp(key, "model.moe_grouped_gemm") == 0))
    return true;
  if (sc->parallel.context_parallel_size == 1 && strcmp(key, "comm_overlap.cp_comm_type") == 0)
    return true;
  /* MLA's sizes without MLA; without a q_lora_rank, Megatron-LM's default */
  static const char *const mla_keys[] = {"model.q_lora_rank", "model.kv_lora_rank", "model.qk_head_dim",
                                         "model.qk_pos_emb_head_dim", "model.v_head_dim"};
  for (gsize i = 0; i < G_N_ELEMENTS(mla_keys); i++)
    if (strcmp(key, mla_keys[i]) == 0 && (!sc->model.multi_latent_attention || strcmp(text, "null") == 0))
      return true;
  if (sc->model.multi_latent_attention && strcmp(key, "model.kv_channels") == 0) /* MLA's heads are its own */
    return true;
  /* a layout gives the virtual size: Megatron-LM refuses a count of virtual stages beside it */
  if (sc->parallel.pipeline_model_parallel_layout[0] != '\0' &&
      strcmp(key, "parallel.virtual_pipeline_model_parallel_size") == 0)
    return true;
  if (sc->training.precision != PN_PREC_FP8 && strcmp(key, "training.fp8_recipe") == 0)
    return true;
  if (!sc->ddp.use_megatron_fsdp && g_str_has_prefix(key, "ddp.") &&
      (strcmp(key, "ddp.data_parallel_sharding_strategy") == 0 ||
       strcmp(key, "ddp.suggested_communication_unit_size") == 0 || strcmp(key, "ddp.fsdp_double_buffer") == 0))
    return true;
  if (strcmp(key, "ddp.suggested_communication_unit_size") == 0 && strcmp(text, "null") == 0)
    return true;
  if (sc->recompute.recompute_granularity != PN_RECOMPUTE_FULL &&
      (strcmp(key, "recompute.recompute_method") == 0 || strcmp(key, "recompute.recompute_num_layers") == 0))
    return true;
  if (strcmp(key, "training.cuda_graph_impl") == 0 && strcmp(text, "\"none\"") == 0)
    return true;
  if ((strcmp(key, "training.transformer_impl") == 0 && strcmp(text, "\"transformer_engine\"") == 0) ||
      (strcmp(key, "training.attention_backend") == 0 && strcmp(text, "\"auto\"") == 0))
    return true;
  /* the optimizer's dtypes at Megatron-LM's default, fp32 (the only value without the
   * precision-aware optimizer) */
  if (g_str_has_prefix(key, "training.") && g_str_has_suffix(key, "_dtype") && strcmp(text, "\"fp32\"") == 0)
    return true;
  return (g_str_has_prefix(key, "env.NVTE_") && strcmp(text, "0") == 0) ||
         (g_str_has_prefix(key, "env.NCCL_M") && strcmp(text, "null") == 0);
}

/* The CUSTOM rows: arguments that are not one key each. */
static void append_custom(GString *out, const PnScenario *sc)
{
  const PnModelConfig *m = &sc->model;
  if (m->num_moe_experts > 0 && m->moe_layer_pattern_set) { /* runs of equal entries: "[0]*3+[1]*58" */
    g_autoptr(GString) expr = g_string_new(NULL);
    for (int64_t i = 0, j; i < m->num_layers; i = j) {
      for (j = i; j < m->num_layers && m->moe_layer_pattern[j] == m->moe_layer_pattern[i]; j++)
        ;
      g_string_append_printf(expr, "%s[%d]*%" G_GINT64_FORMAT, i ? "+" : "", m->moe_layer_pattern[i], j - i);
    }
    g_autofree char *quoted = g_shell_quote(expr->str);
    g_string_append_printf(out, " --moe-layer-freq %s", quoted);
  } else if (m->num_moe_experts > 0 && m->moe_layer_freq > 1) {
    g_string_append_printf(out, " --moe-layer-freq %" G_GINT64_FORMAT, m->moe_layer_freq);
  }
  if (m->num_query_groups != m->num_attention_heads)
    g_string_append_printf(out, " --group-query-attention --num-query-groups %" G_GINT64_FORMAT, m->num_query_groups);
  if (m->activation == PN_ACT_SWIGLU && m->gated_linear_unit)
    g_string_append(out, " --swiglu");
  else if (m->activation == PN_ACT_SQUARED_RELU)
    g_string_append(out, " --squared-relu");
  g_string_append(out, " --bf16");
  if (!sc->ddp.grad_reduce_in_fp32)
    g_string_append(out, " --grad-reduce-in-bf16");
  if (sc->training.precision == PN_PREC_FP8)
    g_string_append(out, " --fp8-format hybrid");
  if (sc->ddp.use_megatron_fsdp) /* Megatron-LM asserts it with --use-megatron-fsdp */
    g_string_append(out, " --ckpt-format fsdp_dtensor");
  if (!sc->training.bias_activation_fusion)
    g_string_append(out, m->activation == PN_ACT_SWIGLU ? " --no-bias-swiglu-fusion" : " --no-bias-gelu-fusion");
  uint32_t mods = sc->recompute.recompute_modules;
  if (sc->recompute.recompute_granularity == PN_RECOMPUTE_SELECTIVE && mods != PN_RECOMPUTE_MODULE_CORE_ATTN) {
    static const char *const names[] = {"core_attn", "moe_act", "layernorm",     "mla_up_proj",
                                        "mlp",       "moe",     "shared_experts"};
    g_string_append(out, " --recompute-modules");
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
      if (mods & (1u << i))
        g_string_append_printf(out, " %s", names[i]);
  }
  if (sc->parallel.pipeline_model_parallel_layout[0] != '\0') { /* '|', '(' and '*' need quotes on a shell line */
    g_autofree char *layout = pn_workload_layout_compact(sc->parallel.pipeline_model_parallel_layout);
    g_autofree char *quoted = g_shell_quote(layout);
    g_string_append_printf(out, " --pipeline-model-parallel-layout %s", quoted);
  }
  uint32_t graphs = sc->training.cuda_graph_modules;
  if (graphs != 0 && sc->training.cuda_graph_impl != PN_CUDA_GRAPH_IMPL_NONE) {
    static const char *const names[] = {"attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"};
    g_string_append(out, " --cuda-graph-modules");
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
      if (graphs & (1u << i))
        g_string_append_printf(out, " %s", names[i]);
  }
}

char *pn_megatron_export(const PnScenario *sc, GPtrArray *warnings, GError **error)
{
  PnPlan plan;
  if (!pn_overlap_resolve(sc, &plan, warnings, error))
    return NULL;
  GString *env = g_string_new(NULL), *args = g_string_new(NULL);
  for (size_t r = 0; r < pn_megatron_n_args; r++) {
    const PnMegatronArg *row = &pn_megatron_args[r];
    if (row->form == PN_MEGATRON_DERIVED || row->form == PN_MEGATRON_CUSTOM)
      continue;
    if (strcmp(row->key, "comm_overlap.tp_comm_overlap_cfg") == 0 && !plan.tp_comm_overlap)
      continue; /* a preset without the overlap it configures */
    PnScenarioValue v;
    key_value(sc, &plan, row->key, &v);
    if ((g_str_has_prefix(row->key, "model.") && strcmp(v.text, "0") == 0 && !strstr(row->key, "dropout")) ||
        inert(sc, row->key, v.text))
      continue; /* a MoE or position size a dense model does not have, or a key that does not act */
    pn_megatron_append(row->form == PN_MEGATRON_ENVIRONMENT ? env : args, row->key, &v);
  }
  append_custom(args, sc);
  if (!sc->training.fused_adam)
    note(warnings, "training.fused_adam false: no argument says it (Megatron-LM takes torch.optim.AdamW when neither "
                   "Transformer Engine nor Apex is installed)");
  if (sc->model.activation == PN_ACT_RELU)
    note(warnings, "model.activation \"relu\": Megatron-LM has no argument for it (--swiglu and --squared-relu only)");
  if (sc->training.framework == PN_FRAMEWORK_PYTORCH)
    note(warnings, "training.framework \"pytorch\": the scenario is a plain PyTorch loop, not a Megatron-LM run; the "
                   "arguments say the same model and layout");
  if (!sc->hardware.host_speed_default)
    note(warnings, "hardware.host_speed: a property of the hosts, not an argument (left out)");
  int64_t gpus = sc->hardware.num_gpus, per_node = MIN(gpus, (int64_t)sc->hw->gpus_per_node);
  if (gpus % per_node != 0)
    per_node = gpus; /* a partly used node: one launcher line cannot say it otherwise */
  GString *out = g_string_new(env->len ? env->str + 1 : "");
  g_string_append_printf(
      out, "%storchrun --nproc_per_node %" G_GINT64_FORMAT " --nnodes %" G_GINT64_FORMAT " pretrain_gpt.py%s\n",
      env->len ? " " : "", per_node, gpus / per_node, args->str);
  g_string_free(env, TRUE);
  g_string_free(args, TRUE);
  return g_string_free(out, FALSE);
}
