/* report.c — PnResult as deterministic JSON and as a readable text summary (see report.h).
 *
 * The JSON is written by hand rather than through cJSON so that the number format ("%.9g" in
 * the C locale), the key order and the indentation are fixed by this file alone.
 */
#include <math.h>
#include <string.h>

#include "io/report.h"

#define REPORT_SCHEMA_VERSION 1

/* io/ sits above sim/ but keeps its own names so the report format does not depend on sim's. */
static const char *const class_names[] = {"dp", "tp", "pp", "cp", "ep"};
G_STATIC_ASSERT(G_N_ELEMENTS(class_names) == PN_CLASS_N);

static const char *class_name(int c) { return c >= 0 && c < PN_CLASS_N ? class_names[c] : "?"; }
G_STATIC_ASSERT(PN_CLASS_DP == 0 && PN_CLASS_TP == 1 && PN_CLASS_PP == 2 && PN_CLASS_CP == 3 && PN_CLASS_EP == 4);

static const char *precision_name(PnPrecision p) { return p == PN_PREC_FP8 ? "fp8" : "bf16"; }

/* "scenarios/x.json" -> "x" */
static char *scenario_name(const PnScenario *sc)
{
  char *base = g_path_get_basename(sc->path[0] ? sc->path : "scenario");
  if (g_str_has_suffix(base, ".json") && strlen(base) > 5)
    base[strlen(base) - 5] = '\0';
  return base;
}

/* ---- JSON writer ---- */

#define JW_MAX_DEPTH 8

typedef struct {
  GString *out;
  int depth; /* containers open */
  bool has_items[JW_MAX_DEPTH + 1];
} JsonWriter;

static void jw_escape(GString *out, const char *s)
{
  g_autofree char *valid = g_utf8_make_valid(s, -1);
  g_string_append_c(out, '"');
  for (const unsigned char *c = (const unsigned char *)valid; *c; c++) {
    switch (*c) {
    case '"':
      g_string_append(out, "\\\"");
      break;
    case '\\':
      g_string_append(out, "\\\\");
      break;
    case '\n':
      g_string_append(out, "\\n");
      break;
    case '\r':
      g_string_append(out, "\\r");
      break;
    case '\t':
      g_string_append(out, "\\t");
      break;
    default:
      if (*c < 0x20 || *c == 0x7f)
        g_string_append_printf(out, "\\u%04x", *c);
      else
        g_string_append_c(out, (char)*c);
    }
  }
  g_string_append_c(out, '"');
}

static void jw_newline(JsonWriter *w)
{
  g_string_append_c(w->out, '\n');
  for (int i = 0; i < w->depth; i++)
    g_string_append(w->out, "  ");
}

/* Starts a member (key != NULL) or an array element (key == NULL) of the open container. */
static void jw_item(JsonWriter *w, const char *key)
{
  if (w->has_items[w->depth])
    g_string_append_c(w->out, ',');
  w->has_items[w->depth] = true;
  jw_newline(w);
  if (key != NULL) {
    jw_escape(w->out, key);
    g_string_append(w->out, ": ");
  }
}

static void jw_open(JsonWriter *w, const char *key, char bracket)
{
  if (w->depth > 0)
    jw_item(w, key);
  g_string_append_c(w->out, bracket);
  w->depth++;
  g_assert(w->depth <= JW_MAX_DEPTH);
  w->has_items[w->depth] = false;
}

static void jw_close(JsonWriter *w, char bracket)
{
  bool had = w->has_items[w->depth];
  w->depth--;
  if (had)
    jw_newline(w);
  g_string_append_c(w->out, bracket);
}

static void jw_num(JsonWriter *w, const char *key, double v)
{
  jw_item(w, key);
  if (!isfinite(v)) {
    g_string_append(w->out, "null");
    return;
  }
  if (v == 0.0)
    v = 0.0; /* no "-0" */
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append(w->out, g_ascii_formatd(buf, sizeof buf, "%.9g", v));
}

static void jw_int(JsonWriter *w, const char *key, int64_t v)
{
  jw_item(w, key);
  g_string_append_printf(w->out, "%" G_GINT64_FORMAT, v);
}

static void jw_uint(JsonWriter *w, const char *key, uint64_t v)
{
  jw_item(w, key);
  g_string_append_printf(w->out, "%" G_GUINT64_FORMAT, v);
}

static void jw_bool(JsonWriter *w, const char *key, bool v)
{
  jw_item(w, key);
  g_string_append(w->out, v ? "true" : "false");
}

static void jw_str(JsonWriter *w, const char *key, const char *s)
{
  jw_item(w, key);
  jw_escape(w->out, s ? s : "");
}

static void jw_classes(JsonWriter *w, const char *key, const double v[PN_CLASS_N])
{
  jw_open(w, key, '{');
  for (int c = 0; c < PN_CLASS_N; c++)
    jw_num(w, class_names[c], v[c]);
  jw_close(w, '}');
}

char *pn_report_json(const PnScenario *sc, const PnResult *r)
{
  g_return_val_if_fail(sc != NULL && r != NULL, NULL);
  JsonWriter w                = {.out = g_string_new(NULL)};
  const PnParallelConfig *par = &sc->parallel;
  g_autofree char *name       = scenario_name(sc);

  jw_open(&w, NULL, '{');
  jw_int(&w, "schema_version", REPORT_SCHEMA_VERSION);
  jw_open(&w, "scenario", '{');
  jw_str(&w, "name", name);
  jw_str(&w, "model", sc->model.name);
  jw_str(&w, "profile", sc->hardware.profile);
  jw_int(&w, "num_gpus", sc->hardware.num_gpus);
  jw_int(&w, "tp", par->tensor_model_parallel_size);
  jw_int(&w, "pp", par->pipeline_model_parallel_size);
  jw_int(&w, "vpp", par->virtual_pipeline_model_parallel_size);
  jw_int(&w, "cp", par->context_parallel_size);
  jw_int(&w, "ep", par->expert_model_parallel_size);
  jw_int(&w, "dp", par->data_parallel_size);
  jw_bool(&w, "sequence_parallel", par->sequence_parallel);
  jw_int(&w, "micro_batch_size", sc->training.micro_batch_size);
  jw_int(&w, "global_batch_size", sc->training.global_batch_size);
  jw_int(&w, "num_microbatches", par->num_microbatches);
  jw_int(&w, "seq_length", sc->training.seq_length);
  jw_str(&w, "precision", precision_name(sc->training.precision));
  jw_close(&w, '}');

  jw_num(&w, "iteration_time_s", r->iteration_time_s);
  jw_num(&w, "tokens_per_s_per_gpu", r->tokens_per_s_per_gpu);
  jw_num(&w, "model_tflops_per_gpu", r->model_tflops_per_gpu);
  jw_num(&w, "mfu", r->mfu);
  jw_classes(&w, "exposed_comm_s", r->exposed_comm_s);
  jw_classes(&w, "total_comm_s", r->total_comm_s);
  jw_num(&w, "bubble_s", r->bubble_s);
  jw_num(&w, "compute_s", r->compute_s);
  jw_num(&w, "memory_gib_per_gpu", r->memory.total_gib);
  jw_open(&w, "memory", '{');
  jw_num(&w, "weights_gib", r->memory.weights_gib);
  jw_num(&w, "gradients_gib", r->memory.gradients_gib);
  jw_num(&w, "optimizer_gib", r->memory.optimizer_gib);
  jw_num(&w, "activations_gib", r->memory.activations_gib);
  jw_num(&w, "other_gib", r->memory.other_gib);
  jw_num(&w, "total_gib", r->memory.total_gib);
  jw_close(&w, '}');
  jw_num(&w, "model_flops_per_iteration", r->model_flops_per_iteration);
  jw_num(&w, "tokens_per_iteration", r->tokens_per_iteration);
  jw_int(&w, "iterations", r->iterations);

  jw_open(&w, "iteration_times_s", '[');
  for (guint i = 0; r->iteration_times_s != NULL && i < r->iteration_times_s->len; i++)
    jw_num(&w, NULL, g_array_index(r->iteration_times_s, double, i));
  jw_close(&w, ']');

  jw_open(&w, "stages", '[');
  for (guint i = 0; r->stages != NULL && i < r->stages->len; i++) {
    const PnStageStats *st = &g_array_index(r->stages, PnStageStats, i);
    jw_open(&w, NULL, '{');
    jw_int(&w, "stage", i);
    jw_num(&w, "compute_s", st->compute_s);
    jw_num(&w, "bubble_s", st->bubble_s);
    jw_classes(&w, "exposed_comm_s", st->exposed_comm_s);
    jw_classes(&w, "total_comm_s", st->total_comm_s);
    jw_num(&w, "end_s", st->end_s);
    jw_close(&w, '}');
  }
  jw_close(&w, ']');

  jw_open(&w, "comm_ops", '[');
  for (guint i = 0; r->comm_ops != NULL && i < r->comm_ops->len; i++) {
    const PnOpStats *os = &g_array_index(r->comm_ops, PnOpStats, i);
    jw_open(&w, NULL, '{');
    jw_str(&w, "op", os->op);
    jw_str(&w, "class", class_name(os->cls));
    jw_num(&w, "total_s", os->total_s);
    jw_num(&w, "exposed_s", os->exposed_s);
    jw_close(&w, '}');
  }
  jw_close(&w, ']');

  jw_open(&w, "simulator", '{');
  jw_uint(&w, "tasks", r->tasks);
  jw_uint(&w, "events", r->events);
  jw_uint(&w, "cost_fallbacks", r->cost_fallbacks);
  if (g_strcmp0(g_getenv("PENUMBRA_REPORT_WALL"), "1") == 0)
    jw_num(&w, "wall_s", r->sim_wall_s);
  jw_close(&w, '}');

  jw_open(&w, "warnings", '[');
  for (guint i = 0; r->warnings != NULL && i < r->warnings->len; i++)
    jw_str(&w, NULL, r->warnings->pdata[i]);
  jw_close(&w, ']');

  jw_close(&w, '}');
  g_assert(w.depth == 0);
  g_string_append_c(w.out, '\n');
  return g_string_free(w.out, FALSE);
}

/* ---- text ---- */

/* A number for a table: fixed decimals in the C locale, "n/a" when not finite. */
typedef struct {
  char s[G_ASCII_DTOSTR_BUF_SIZE];
} Num;

static Num fmt(const char *format, double v)
{
  Num n;
  if (!isfinite(v) || fabs(v) >= 1e15)
    g_strlcpy(n.s, isfinite(v) ? "huge" : "n/a", sizeof n.s);
  else
    g_ascii_formatd(n.s, sizeof n.s, format, v == 0.0 ? 0.0 : v);
  return n;
}

static Num hidden_pct(double total, double exposed)
{
  if (!(total > 0.0)) {
    Num n;
    g_strlcpy(n.s, "-", sizeof n.s);
    return n;
  }
  Num n = fmt("%.1f", 100.0 * (total - exposed) / total);
  g_strlcat(n.s, "%", sizeof n.s);
  return n;
}

char *pn_report_text(const PnScenario *sc, const PnResult *r)
{
  g_return_val_if_fail(sc != NULL && r != NULL, NULL);
  GString *o                  = g_string_new(NULL);
  const PnParallelConfig *par = &sc->parallel;
  g_autofree char *name       = scenario_name(sc);

  g_string_append_printf(o, "%s: %s on %" G_GINT64_FORMAT " x %s%s%s%s\n", name, sc->model.name, sc->hardware.num_gpus,
                         sc->hardware.profile, sc->hw ? " (" : "", sc->hw ? sc->hw->gpu : "", sc->hw ? ")" : "");
  g_string_append_printf(o,
                         "  layout   TP %" G_GINT64_FORMAT "  PP %" G_GINT64_FORMAT "  VPP %" G_GINT64_FORMAT
                         "  CP %" G_GINT64_FORMAT "  EP %" G_GINT64_FORMAT "  DP %" G_GINT64_FORMAT "%s\n",
                         par->tensor_model_parallel_size, par->pipeline_model_parallel_size,
                         par->virtual_pipeline_model_parallel_size, par->context_parallel_size,
                         par->expert_model_parallel_size, par->data_parallel_size,
                         par->sequence_parallel ? "  (sequence parallel)" : "");
  g_string_append_printf(o,
                         "  batch    micro %" G_GINT64_FORMAT ", global %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT
                         " micro-batches), sequence %" G_GINT64_FORMAT ", %s\n\n",
                         sc->training.micro_batch_size, sc->training.global_batch_size, par->num_microbatches,
                         sc->training.seq_length, precision_name(sc->training.precision));

  g_string_append_printf(o, "%-22s %12s s\n", "iteration time", fmt("%.4f", r->iteration_time_s).s);
  g_string_append_printf(o, "%-22s %12s\n", "tokens/s/GPU", fmt("%.1f", r->tokens_per_s_per_gpu).s);
  g_string_append_printf(o, "%-22s %12s\n", "model TFLOP/s/GPU", fmt("%.1f", r->model_tflops_per_gpu).s);
  g_string_append_printf(o, "%-22s %12s %%\n\n", "MFU", fmt("%.1f", 100.0 * r->mfu).s);

  g_string_append_printf(o, "%-14s %12s %12s %9s\n", "communication", "total (s)", "exposed (s)", "hidden");
  double tot_all = 0.0, exp_all = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++) {
    tot_all += r->total_comm_s[c];
    exp_all += r->exposed_comm_s[c];
    g_string_append_printf(o, "  %-12s %12s %12s %9s\n", class_names[c], fmt("%.4f", r->total_comm_s[c]).s,
                           fmt("%.4f", r->exposed_comm_s[c]).s, hidden_pct(r->total_comm_s[c], r->exposed_comm_s[c]).s);
  }
  g_string_append_printf(o, "  %-12s %12s %12s %9s\n", "all", fmt("%.4f", tot_all).s, fmt("%.4f", exp_all).s,
                         hidden_pct(tot_all, exp_all).s);
  g_string_append_printf(o, "%-14s %12s s\n", "bubble", fmt("%.4f", r->bubble_s).s);
  g_string_append_printf(o, "%-14s %12s s\n\n", "compute", fmt("%.4f", r->compute_s).s);

  g_string_append_printf(o, "%-14s %12s\n", "memory/GPU", "GiB");
  const struct {
    const char *label;
    double v;
  } mem[] = {{"weights", r->memory.weights_gib},     {"gradients", r->memory.gradients_gib},
             {"optimizer", r->memory.optimizer_gib}, {"activations", r->memory.activations_gib},
             {"other", r->memory.other_gib},         {"total", r->memory.total_gib}};
  for (gsize i = 0; i < G_N_ELEMENTS(mem); i++)
    g_string_append_printf(o, "  %-12s %12s\n", mem[i].label, fmt("%.2f", mem[i].v).s);
  if (sc->hw != NULL && sc->hw->hbm_bytes > 0.0)
    g_string_append_printf(o, "  %-12s %12s\n", "(HBM)", fmt("%.2f", sc->hw->hbm_bytes / (1024.0 * 1024.0 * 1024.0)).s);
  g_string_append_c(o, '\n');

  if (r->comm_ops != NULL && r->comm_ops->len > 0) {
    g_string_append_printf(o, "%-30s %-5s %10s %12s\n", "exposed by operation", "class", "total (s)", "exposed (s)");
    for (guint i = 0; i < r->comm_ops->len && i < 10; i++) {
      const PnOpStats *os = &g_array_index(r->comm_ops, PnOpStats, i);
      if (os->exposed_s <= 0.0 && i > 0)
        break;
      g_string_append_printf(o, "  %-28s %-5s %10s %12s\n", os->op, class_name(os->cls), fmt("%.4f", os->total_s).s,
                             fmt("%.4f", os->exposed_s).s);
    }
    g_string_append_c(o, '\n');
  }

  if (r->stages != NULL && r->stages->len > 0) {
    g_string_append_printf(o, "%-6s %12s %12s %12s %12s\n", "stage", "compute (s)", "bubble (s)", "exposed (s)",
                           "end (s)");
    for (guint i = 0; i < r->stages->len; i++) {
      const PnStageStats *st = &g_array_index(r->stages, PnStageStats, i);
      double exposed         = 0.0;
      for (int c = 0; c < PN_CLASS_N; c++)
        exposed += st->exposed_comm_s[c];
      g_string_append_printf(o, "%6u %12s %12s %12s %12s\n", i, fmt("%.4f", st->compute_s).s,
                             fmt("%.4f", st->bubble_s).s, fmt("%.4f", exposed).s, fmt("%.4f", st->end_s).s);
    }
    g_string_append_c(o, '\n');
  }

  if (r->iteration_times_s != NULL && r->iteration_times_s->len > 1) {
    g_string_append(o, "iterations (s)");
    for (guint i = 0; i < r->iteration_times_s->len; i++)
      g_string_append_printf(o, " %s", fmt("%.4f", g_array_index(r->iteration_times_s, double, i)).s);
    g_string_append_c(o, '\n');
  }
  g_string_append_printf(o,
                         "simulator: %" G_GUINT64_FORMAT " tasks, %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT
                         " kernels priced by roofline, %s s wall\n",
                         r->tasks, r->events, r->cost_fallbacks, fmt("%.3f", r->sim_wall_s).s);

  for (guint i = 0; r->warnings != NULL && i < r->warnings->len; i++) {
    g_autofree char *valid = g_utf8_make_valid(r->warnings->pdata[i], -1);
    g_string_append_printf(o, "warning: %s\n", valid);
  }
  return g_string_free(o, FALSE);
}
