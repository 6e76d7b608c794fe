/* report.c — PnResult as deterministic JSON and as a readable text summary (see report.h).
 *
 * The JSON goes through io/jsonw.h rather than cJSON so that the number format ("%.9g" in the C
 * locale), the key order and the indentation are fixed by io/ alone.
 */
#include <math.h>
#include <string.h>

#include "io/report.h"

#include "hw/coll.h"
#include "io/io-private.h"
#include "io/jsonw.h"
#include "overlap/strategy.h"

#define REPORT_SCHEMA_VERSION 1

/* io/ sits above sim/ but keeps its own names so the report format does not depend on sim's. */
static const char *const class_names[] = {"dp", "tp", "pp", "cp", "ep"};
G_STATIC_ASSERT(G_N_ELEMENTS(class_names) == PN_CLASS_N);

static const char *class_name(int c) { return c >= 0 && c < PN_CLASS_N ? class_names[c] : "?"; }
G_STATIC_ASSERT(PN_CLASS_DP == 0 && PN_CLASS_TP == 1 && PN_CLASS_PP == 2 && PN_CLASS_CP == 3 && PN_CLASS_EP == 4);

/* "scenarios/x.json" -> "x" */
static char *scenario_name(const PnScenario *sc)
{
  char *base = g_path_get_basename(sc->path[0] ? sc->path : "scenario");
  if (g_str_has_suffix(base, ".json") && strlen(base) > 5)
    base[strlen(base) - 5] = '\0';
  return base;
}

/* ---- JSON ---- */

static void classes_json(PnJsonWriter *w, const char *key, const double v[PN_CLASS_N])
{
  pn_jsonw_object(w, key, PN_JSONW_BLOCK);
  for (int c = 0; c < PN_CLASS_N; c++)
    pn_jsonw_double(w, class_names[c], v[c]);
  pn_jsonw_end(w);
}

static double classes_sum(const double v[PN_CLASS_N])
{
  double sum = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    sum += v[c];
  return sum;
}

/* The compute lost to SM contention: by class, then the total. */
static void contention_json(PnJsonWriter *w, const double v[PN_CLASS_N])
{
  pn_jsonw_object(w, "sm_contention_s", PN_JSONW_BLOCK);
  for (int c = 0; c < PN_CLASS_N; c++)
    pn_jsonw_double(w, class_names[c], v[c]);
  pn_jsonw_double(w, "total", classes_sum(v));
  pn_jsonw_end(w);
}

/* "default" for Transformer Engine's own userbuffers configuration, NULL without TP overlap */
static const char *ub_preset(const PnScenario *sc, const PnPlan *plan)
{
  if (!plan->tp_comm_overlap)
    return NULL;
  return sc->comm_overlap.tp_comm_overlap_cfg[0] ? sc->comm_overlap.tp_comm_overlap_cfg : "default";
}

/* The plan simulated: each registry strategy with a knob (whether it can act in this scenario,
 * whether the plan runs it), then the values the gating resolved. */
static void overlap_json(PnJsonWriter *w, const PnScenario *sc, const PnPlan *plan)
{
  pn_jsonw_object(w, "overlap", PN_JSONW_BLOCK);
  pn_jsonw_array(w, "strategies", PN_JSONW_BLOCK);
  for (size_t i = 0; i < pn_overlap_n_strategies; i++) {
    const PnOverlapStrategy *s = &pn_overlap_strategies[i];
    if (!s->is_on)
      continue;
    pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
    pn_jsonw_string(w, "name", s->name);
    pn_jsonw_bool(w, "applies", s->applies(sc));
    pn_jsonw_bool(w, "on", s->is_on(plan));
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
  pn_jsonw_int(w, "bucket_size", plan->bucket_size);
  pn_jsonw_bool(w, "align_param_gather", plan->align_param_gather);
  pn_jsonw_bool(w, "batch_p2p_comm", plan->batch_p2p_comm);
  pn_jsonw_string(w, "cp_comm_type", pn__io_enum_name(pn__io_cp_comm_names, (int)plan->cp_comm_type));
  pn_jsonw_int(w, "max_connections", plan->max_connections);
  if (plan->fsdp)
    pn_jsonw_string(w, "data_parallel_sharding_strategy",
                    pn__io_enum_name(pn__io_fsdp_shard_names, (int)plan->fsdp_shard));
  else
    pn_jsonw_null(w, "data_parallel_sharding_strategy");
  const char *preset = ub_preset(sc, plan);
  if (preset)
    pn_jsonw_string(w, "tp_comm_overlap_cfg", preset);
  else
    pn_jsonw_null(w, "tp_comm_overlap_cfg");
  pn_jsonw_end(w);
}

/* schema_version and the build (report.h) */
static void header_json(PnJsonWriter *w, const PnReportOptions *opt)
{
  pn_jsonw_int(w, "schema_version", REPORT_SCHEMA_VERSION);
  pn_jsonw_object(w, "penumbra", PN_JSONW_BLOCK);
  pn_jsonw_string(w, "version", opt && opt->version ? opt->version : "unknown");
  pn_jsonw_string(w, "commit", opt && opt->commit ? opt->commit : "unknown");
  pn_jsonw_end(w);
}

/* The summary: the run report's first part and the what-if's baseline (report.h). */
static void summary_json(PnJsonWriter *w, const PnScenario *sc, const PnResult *r)
{
  const PnParallelConfig *par = &sc->parallel;
  g_autofree char *name       = scenario_name(sc);
  pn_jsonw_object(w, "scenario", PN_JSONW_BLOCK);
  pn_jsonw_string(w, "name", name);
  pn_jsonw_string(w, "model", sc->model.name);
  pn_jsonw_string(w, "profile", sc->hardware.profile);
  pn_jsonw_int(w, "num_gpus", sc->hardware.num_gpus);
  pn_jsonw_double(w, "host_speed", sc->hardware.host_speed);
  pn_jsonw_int(w, "tp", par->tensor_model_parallel_size);
  pn_jsonw_int(w, "pp", par->pipeline_model_parallel_size);
  pn_jsonw_int(w, "vpp", par->virtual_pipeline_model_parallel_size);
  pn_jsonw_int(w, "cp", par->context_parallel_size);
  pn_jsonw_int(w, "ep", par->expert_model_parallel_size);
  pn_jsonw_int(w, "dp", par->data_parallel_size);
  pn_jsonw_bool(w, "sequence_parallel", par->sequence_parallel);
  pn_jsonw_int(w, "micro_batch_size", sc->training.micro_batch_size);
  pn_jsonw_int(w, "global_batch_size", sc->training.global_batch_size);
  pn_jsonw_int(w, "num_microbatches", par->num_microbatches);
  pn_jsonw_int(w, "seq_length", sc->training.seq_length);
  pn_jsonw_string(w, "precision", pn__io_enum_name(pn__io_precision_names, (int)sc->training.precision));
  pn_jsonw_end(w);
  pn_jsonw_object(w, "hardware", PN_JSONW_BLOCK);
  pn_jsonw_string(w, "name", sc->hw ? sc->hw->name : sc->hardware.profile);
  pn_jsonw_string(w, "gpu", sc->hw ? sc->hw->gpu : "");
  if (sc->hw && sc->hw->calibrated[0])
    pn_jsonw_string(w, "calibrated", sc->hw->calibrated);
  else
    pn_jsonw_null(w, "calibrated");
  pn_jsonw_end(w);

  pn_jsonw_double(w, "iteration_time_s", r->iteration_time_s);
  pn_jsonw_double(w, "tokens_per_s_per_gpu", r->tokens_per_s_per_gpu);
  pn_jsonw_double(w, "model_tflops_per_gpu", r->model_tflops_per_gpu);
  pn_jsonw_double(w, "mfu", r->mfu);
  classes_json(w, "exposed_comm_s", r->exposed_comm_s);
  classes_json(w, "total_comm_s", r->total_comm_s);
  contention_json(w, r->contention_s);
  pn_jsonw_double(w, "bubble_s", r->bubble_s);
  pn_jsonw_double(w, "host_bound_s", r->host_bound_s);
  pn_jsonw_double(w, "compute_s", r->compute_s);
  pn_jsonw_double(w, "memory_gib_per_gpu", r->memory.total_gib);
  pn_jsonw_double(w, "hbm_gib_per_gpu", r->memory.hbm_gib);
  pn_jsonw_bool(w, "fits_in_hbm", r->memory.fits);
  pn_jsonw_object(w, "memory", PN_JSONW_BLOCK);
  pn_jsonw_double(w, "weights_gib", r->memory.weights_gib);
  pn_jsonw_double(w, "gradients_gib", r->memory.gradients_gib);
  pn_jsonw_double(w, "optimizer_gib", r->memory.optimizer_gib);
  pn_jsonw_double(w, "activations_gib", r->memory.activations_gib);
  pn_jsonw_double(w, "other_gib", r->memory.other_gib);
  pn_jsonw_double(w, "total_gib", r->memory.total_gib);
  pn_jsonw_end(w);
  overlap_json(w, sc, &r->plan);
}

char *pn_report_json(const PnScenario *sc, const PnResult *r, const PnReportOptions *opt)
{
  g_return_val_if_fail(sc != NULL && r != NULL, NULL);
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  header_json(w, opt);
  summary_json(w, sc, r);
  pn_jsonw_double(w, "model_flops_per_iteration", r->model_flops_per_iteration);
  pn_jsonw_double(w, "tokens_per_iteration", r->tokens_per_iteration);
  pn_jsonw_int(w, "iterations", r->iterations);

  pn_jsonw_array(w, "iteration_times_s", PN_JSONW_BLOCK);
  for (guint i = 0; r->iteration_times_s != NULL && i < r->iteration_times_s->len; i++)
    pn_jsonw_double(w, NULL, g_array_index(r->iteration_times_s, double, i));
  pn_jsonw_end(w);

  pn_jsonw_array(w, "stages", PN_JSONW_BLOCK);
  for (guint i = 0; r->stages != NULL && i < r->stages->len; i++) {
    const PnStageStats *st = &g_array_index(r->stages, PnStageStats, i);
    pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
    pn_jsonw_int(w, "stage", i);
    pn_jsonw_double(w, "compute_s", st->compute_s);
    pn_jsonw_double(w, "bubble_s", st->bubble_s);
    pn_jsonw_double(w, "host_bound_s", st->host_bound_s);
    classes_json(w, "exposed_comm_s", st->exposed_comm_s);
    classes_json(w, "total_comm_s", st->total_comm_s);
    contention_json(w, st->contention_s);
    pn_jsonw_double(w, "end_s", st->end_s);
    pn_jsonw_int(w, "dp_buckets", st->dp_buckets);
    pn_jsonw_int(w, "dp_bucket_groups", st->dp_bucket_groups);
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);

  pn_jsonw_array(w, "comm_ops", PN_JSONW_BLOCK);
  for (guint i = 0; r->comm_ops != NULL && i < r->comm_ops->len; i++) {
    const PnOpStats *os = &g_array_index(r->comm_ops, PnOpStats, i);
    pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
    pn_jsonw_string(w, "op", os->op ? os->op : "");
    pn_jsonw_string(w, "class", class_name(os->cls));
    pn_jsonw_double(w, "total_s", os->total_s);
    pn_jsonw_double(w, "exposed_s", os->exposed_s);
    if (os->coll_kind >= 0) { /* an NCCL collective: its figures as nccl-tests prints them */
      pn_jsonw_string(w, "collective", pn_coll_kind_name((PnCollKind)os->coll_kind));
      pn_jsonw_int(w, "ranks", os->ranks);
      pn_jsonw_double(w, "calls", os->calls);
      pn_jsonw_double(w, "size_bytes", os->size_bytes);
      pn_jsonw_double(w, "algbw_gbps", os->algbw_gbps);
      pn_jsonw_double(w, "busbw_gbps", os->busbw_gbps);
    }
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);

  pn_jsonw_object(w, "simulator", PN_JSONW_BLOCK);
  pn_jsonw_uint(w, "tasks", r->tasks);
  pn_jsonw_uint(w, "cost_fallbacks", r->cost_fallbacks);
  if (opt && opt->timing) {
    pn_jsonw_uint(w, "events", r->events);
    pn_jsonw_double(w, "wall_s", r->sim_wall_s);
  }
  pn_jsonw_end(w);

  pn_jsonw_array(w, "warnings", PN_JSONW_BLOCK);
  for (guint i = 0; r->warnings != NULL && i < r->warnings->len; i++)
    pn_jsonw_string(w, NULL, r->warnings->pdata[i] ? r->warnings->pdata[i] : "");
  pn_jsonw_end(w);

  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
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

/* "compute lost to SM contention  0.3120 s  (tp 0.2980, dp 0.0140)": the classes that lost any,
 * most first; no line at all when none did. */
static void contention_text(GString *o, const double v[PN_CLASS_N])
{
  double total = classes_sum(v);
  if (!(total > 0.0))
    return;
  int order[PN_CLASS_N], n = 0;
  for (int c = 0; c < PN_CLASS_N; c++) {
    if (!(v[c] > 0.0))
      continue;
    int i = n++;
    for (; i > 0 && v[order[i - 1]] < v[c]; i--) /* by value, descending; ties in class order */
      order[i] = order[i - 1];
    order[i] = c;
  }
  g_string_append_printf(o, "compute lost to SM contention  %s s  (", fmt("%.4f", total).s);
  for (int i = 0; i < n; i++)
    g_string_append_printf(o, "%s%s %s", i ? ", " : "", class_names[order[i]], fmt("%.4f", v[order[i]]).s);
  g_string_append(o, ")\n");
}

char *pn_report_text(const PnScenario *sc, const PnResult *r, const PnReportOptions *opt)
{
  g_return_val_if_fail(sc != NULL && r != NULL, NULL);
  GString *o                  = g_string_new(NULL);
  const PnParallelConfig *par = &sc->parallel;
  g_autofree char *name       = scenario_name(sc);

  g_string_append_printf(o, "%s: %s on %" G_GINT64_FORMAT " x %s%s%s%s\n", name, sc->model.name, sc->hardware.num_gpus,
                         sc->hardware.profile, sc->hw ? " (" : "", sc->hw ? sc->hw->gpu : "", sc->hw ? ")" : "");
  g_string_append_printf(
      o,
      "  layout   TP %" G_GINT64_FORMAT "  PP %" G_GINT64_FORMAT "  VPP %" G_GINT64_FORMAT "  CP %" G_GINT64_FORMAT
      "  EP %" G_GINT64_FORMAT "  DP %" G_GINT64_FORMAT "%s%s%s\n",
      par->tensor_model_parallel_size, par->pipeline_model_parallel_size, par->virtual_pipeline_model_parallel_size,
      par->context_parallel_size, par->expert_model_parallel_size, par->data_parallel_size,
      par->sequence_parallel ? "  (sequence parallel)" : "", sc->ddp.use_megatron_fsdp ? "  Megatron-FSDP " : "",
      sc->ddp.use_megatron_fsdp
          ? pn__io_enum_name(pn__io_fsdp_shard_names, (int)sc->ddp.data_parallel_sharding_strategy)
          : "");
  if (sc->hardware.host_speed != 1.0)
    g_string_append_printf(o, "  host     %s%.2fx the speed of the machine the host figures were measured on (%s)\n",
                           sc->hardware.host_speed_default ? "a DGX host's CPU: " : "", sc->hardware.host_speed,
                           sc->hw && sc->hw->host.cpu[0] ? sc->hw->host.cpu : "not recorded");
  g_string_append_printf(o,
                         "  batch    micro %" G_GINT64_FORMAT ", global %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT
                         " micro-batches), sequence %" G_GINT64_FORMAT ", %s\n\n",
                         sc->training.micro_batch_size, sc->training.global_batch_size, par->num_microbatches,
                         sc->training.seq_length,
                         pn__io_enum_name(pn__io_precision_names, (int)sc->training.precision));

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
  contention_text(o, r->contention_s);
  g_string_append_printf(o, "%-14s %12s s\n", "bubble", fmt("%.4f", r->bubble_s).s);
  if (r->host_bound_s > 0.0)
    g_string_append_printf(o, "  %-12s %12s s  (kernels ready, waiting for the host to launch them)\n", "host-bound",
                           fmt("%.4f", r->host_bound_s).s);
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

  bool colls = false;
  for (guint i = 0; r->comm_ops != NULL && i < r->comm_ops->len; i++)
    colls = colls || g_array_index(r->comm_ops, PnOpStats, i).coll_kind >= 0;
  if (colls) {
    g_string_append_printf(o, "%-30s %-14s %6s %7s %11s %10s %11s %11s\n", "NCCL collectives (nccl-tests)",
                           "collective", "ranks", "calls", "size (MiB)", "time (ms)", "algbw GB/s", "busbw GB/s");
    for (guint i = 0; i < r->comm_ops->len; i++) {
      const PnOpStats *os = &g_array_index(r->comm_ops, PnOpStats, i);
      if (os->coll_kind < 0)
        continue;
      double per_call_ms = os->size_bytes / os->algbw_gbps * 1e-6; /* bytes / (bytes per ns) */
      g_string_append_printf(o, "  %-28s %-14s %6" G_GINT64_FORMAT " %7s %11s %10s %11s %11s\n", os->op,
                             pn_coll_kind_name((PnCollKind)os->coll_kind), os->ranks, fmt("%.1f", os->calls).s,
                             fmt("%.2f", os->size_bytes / 1048576.0).s, fmt("%.3f", per_call_ms).s,
                             fmt("%.1f", os->algbw_gbps).s, fmt("%.1f", os->busbw_gbps).s);
    }
    g_string_append(o, "  (time: each call's simulated duration beside the rest of the step, not on idle links)\n\n");
  }

  if (r->stages != NULL && r->stages->len > 0) {
    bool host = r->host_bound_s > 0.0;
    g_string_append_printf(o, "%-6s %12s %12s %12s %12s%s\n", "stage", "compute (s)", "bubble (s)", "exposed (s)",
                           "end (s)", host ? "     host (s)" : "");
    for (guint i = 0; i < r->stages->len; i++) {
      const PnStageStats *st = &g_array_index(r->stages, PnStageStats, i);
      double exposed         = 0.0;
      for (int c = 0; c < PN_CLASS_N; c++)
        exposed += st->exposed_comm_s[c];
      g_string_append_printf(o, "%6u %12s %12s %12s %12s", i, fmt("%.4f", st->compute_s).s, fmt("%.4f", st->bubble_s).s,
                             fmt("%.4f", exposed).s, fmt("%.4f", st->end_s).s);
      if (host)
        g_string_append_printf(o, " %12s", fmt("%.4f", st->host_bound_s).s);
      g_string_append_c(o, '\n');
    }
    g_string_append_c(o, '\n');
  }

  if (r->iteration_times_s != NULL && r->iteration_times_s->len > 1) {
    g_string_append(o, "iterations (s)");
    for (guint i = 0; i < r->iteration_times_s->len; i++)
      g_string_append_printf(o, " %s", fmt("%.4f", g_array_index(r->iteration_times_s, double, i)).s);
    g_string_append_c(o, '\n');
  }
  g_string_append_printf(o, "simulator: %" G_GUINT64_FORMAT " tasks, %" G_GUINT64_FORMAT " kernels priced by roofline",
                         r->tasks, r->cost_fallbacks);
  if (opt && opt->timing)
    g_string_append_printf(o, ", %" G_GUINT64_FORMAT " events, %s s wall", r->events, fmt("%.3f", r->sim_wall_s).s);
  g_string_append_c(o, '\n');

  for (guint i = 0; r->warnings != NULL && i < r->warnings->len; i++) {
    g_autofree char *valid = g_utf8_make_valid(r->warnings->pdata[i], -1);
    g_string_append_printf(o, "warning: %s\n", valid);
  }
  return g_string_free(o, FALSE);
}

/* ---- what-if ---- */

static double exposed_all(const PnResult *r)
{
  double e = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    e += r->exposed_comm_s[c];
  return e;
}

static const char *const direction[2] = {"off", "on"};

char *pn_report_what_if_json(const PnScenario *base, const PnResult *base_r, const GArray *knobs,
                             const PnReportOptions *opt)
{
  g_return_val_if_fail(base != NULL && base_r != NULL && knobs != NULL, NULL);
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  header_json(w, opt);
  pn_jsonw_object(w, "baseline", PN_JSONW_BLOCK);
  summary_json(w, base, base_r);
  pn_jsonw_end(w);
  pn_jsonw_array(w, "knobs", PN_JSONW_BLOCK);
  for (guint i = 0; i < knobs->len; i++) {
    const PnWhatIfKnob *k = &g_array_index(knobs, PnWhatIfKnob, i);
    pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
    pn_jsonw_string(w, "knob", k->name);
    pn_jsonw_bool(w, "now", k->now);
    pn_jsonw_double(w, "off_s", k->iteration_time_s[0]);
    pn_jsonw_double(w, "on_s", k->iteration_time_s[1]);
    pn_jsonw_double(w, "exposed_off_s", k->exposed_comm_s[0]);
    pn_jsonw_double(w, "exposed_on_s", k->exposed_comm_s[1]);
    pn_jsonw_double(w, "sm_contention_off_s", k->contention_s[0]);
    pn_jsonw_double(w, "sm_contention_on_s", k->contention_s[1]);
    for (int v = 0; v < 2; v++) {
      g_autofree char *key = g_strdup_printf("%s_refused", direction[v]);
      if (k->refused[v])
        pn_jsonw_string(w, key, k->refused[v]);
      else
        pn_jsonw_null(w, key);
    }
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
}

/* A what-if cell: "-" where a direction was refused (NaN). */
static Num cell(const char *format, double v)
{
  if (!isnan(v))
    return fmt(format, v);
  Num n;
  g_strlcpy(n.s, "-", sizeof n.s);
  return n;
}

char *pn_report_what_if_text(const PnScenario *base, const PnResult *base_r, const GArray *knobs)
{
  g_return_val_if_fail(base != NULL && base_r != NULL && knobs != NULL, NULL);
  GString *o = g_string_new(NULL);
  g_string_append_printf(o, "what-if for %s (baseline %s s, exposed comm %s s)\n", base->path,
                         fmt("%.4f", base_r->iteration_time_s).s, fmt("%.4f", exposed_all(base_r)).s);
  g_string_append_printf(o, "%-48s %-5s %12s %12s %12s %12s\n", "knob", "now", "off (s)", "on (s)", "on-off (s)",
                         "exposed on-off");
  for (guint i = 0; i < knobs->len; i++) {
    const PnWhatIfKnob *k = &g_array_index(knobs, PnWhatIfKnob, i);
    g_string_append_printf(o, "%-48s %-5s %12s %12s %12s %12s\n", k->name, k->now ? "on" : "off",
                           cell("%.4f", k->iteration_time_s[0]).s, cell("%.4f", k->iteration_time_s[1]).s,
                           cell("%+.4f", k->iteration_time_s[1] - k->iteration_time_s[0]).s,
                           cell("%+.4f", k->exposed_comm_s[1] - k->exposed_comm_s[0]).s);
    double dc = k->contention_s[1] - k->contention_s[0];
    if (fabs(dc) >= 0.5e-4) /* shows as non-zero at 4 decimals; NaN (refused) fails */
      g_string_append_printf(o, "  compute lost to SM contention: off %s s, on %s s (on-off %s)\n",
                             fmt("%.4f", k->contention_s[0]).s, fmt("%.4f", k->contention_s[1]).s, fmt("%+.4f", dc).s);
    for (int v = 0; v < 2; v++)
      if (k->refused[v])
        g_string_append_printf(o, "  %s refused: %s\n", direction[v], k->refused[v]);
  }
  return g_string_free(o, FALSE);
}
