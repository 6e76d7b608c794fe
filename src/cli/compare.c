/* compare.c — `penumbra compare`: a Megatron-LM training log (io/megatron.h) against penumbra's
 * prediction for the same job: the measured step time after the warm-up (median and spread), the
 * predicted one, the error, and where penumbra thinks the time goes. The scenario is the one given,
 * or the one the log's argument dump describes. */
#include "cli/cli-private.h"
#include "io/jsonw.h"
#include "io/megatron.h"
#include "io/scenario.h"
#include "pn_version.h" /* generated at build time (cmake/version.cmake) */
#include "sim/sim.h"

typedef struct {
  int n;                     /* log lines after the warm-up */
  int64_t skipped;           /* iterations skipped: the last one of the skipped lines */
  double median_s, stdev_s;  /* of the step time; stdev over the lines (n - 1), 0 for one line */
  double min_s, max_s;       /* of the step time */
  double tflops;             /* median throughput per GPU; NAN when the log has none */
  double max_allocated_mib;  /* largest "max allocated" of any rank; NAN when the log has none */
  const char *scenario_from; /* the scenario file, or "the log's argument dump" */
} PnMeasured;

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The log's iterations after `skip` into `m`; false when none is left. */
static bool measure(const PnMegatronLog *log, int64_t skip, PnMeasured *m)
{
  g_autofree double *t  = g_new(double, log->iterations->len + 1);
  g_autofree double *tf = g_new(double, log->iterations->len + 1);
  int n_tf              = 0;
  double sum            = 0.0;
  m->n                  = 0;
  m->skipped            = 0;
  for (guint i = 0; i < log->iterations->len; i++) {
    const PnMegatronLogIteration *it = &g_array_index(log->iterations, PnMegatronLogIteration, i);
    if (it->iteration <= skip) {
      m->skipped = MAX(m->skipped, it->iteration);
      continue;
    }
    t[m->n++] = it->elapsed_ms / 1e3;
    sum += it->elapsed_ms / 1e3;
    if (!isnan(it->tflops_per_gpu))
      tf[n_tf++] = it->tflops_per_gpu;
  }
  if (m->n == 0)
    return false;
  double mean = sum / m->n, ss = 0.0;
  for (int i = 0; i < m->n; i++)
    ss += (t[i] - mean) * (t[i] - mean);
  m->stdev_s           = m->n > 1 ? sqrt(ss / (m->n - 1)) : 0.0;
  m->median_s          = median(t, m->n);
  m->min_s             = t[0]; /* sorted by median() */
  m->max_s             = t[m->n - 1];
  m->tflops            = n_tf ? median(tf, n_tf) : (double)NAN;
  m->max_allocated_mib = (double)NAN;
  for (guint i = 0; i < log->memory->len; i++) {
    double v = g_array_index(log->memory, PnMegatronLogMemory, i).max_allocated_mib;
    if (!isnan(v) && (isnan(m->max_allocated_mib) || v > m->max_allocated_mib))
      m->max_allocated_mib = v;
  }
  return true;
}

static double error_pct(const PnMeasured *m, const PnResult *r)
{
  return (r->iteration_time_s - m->median_s) / m->median_s * 100.0;
}

static double exposed_s(const PnResult *r)
{
  double e = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    e += r->exposed_comm_s[c];
  return e;
}

static char *report_json(const PnMeasured *m, const PnResult *r)
{
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_object(w, "penumbra", PN_JSONW_BLOCK);
  pn_jsonw_string(w, "version", PN_VERSION);
  pn_jsonw_string(w, "commit", PN_GIT_COMMIT);
  pn_jsonw_end(w);
  pn_jsonw_string(w, "scenario", m->scenario_from);
  pn_jsonw_double(w, "measured_step_s", m->median_s);
  pn_jsonw_double(w, "measured_step_s_stdev", m->stdev_s);
  pn_jsonw_double(w, "measured_step_s_min", m->min_s);
  pn_jsonw_double(w, "measured_step_s_max", m->max_s);
  pn_jsonw_int(w, "measured_log_lines", m->n);
  pn_jsonw_int(w, "skipped_iterations", m->skipped);
  pn_jsonw_double(w, "predicted_step_s", r->iteration_time_s);
  pn_jsonw_double(w, "error_pct", error_pct(m, r));
  if (isnan(m->tflops))
    pn_jsonw_null(w, "measured_tflops_per_gpu");
  else
    pn_jsonw_double(w, "measured_tflops_per_gpu", m->tflops);
  pn_jsonw_double(w, "predicted_tflops_per_gpu", r->model_tflops_per_gpu);
  if (isnan(m->max_allocated_mib))
    pn_jsonw_null(w, "measured_max_allocated_gib");
  else
    pn_jsonw_double(w, "measured_max_allocated_gib", m->max_allocated_mib / 1024.0);
  pn_jsonw_double(w, "predicted_memory_gib", r->memory.total_gib);
  pn_jsonw_object(w, "predicted_breakdown_s", PN_JSONW_BLOCK);
  pn_jsonw_double(w, "compute", r->compute_s);
  for (int c = 0; c < PN_CLASS_N; c++) {
    g_autofree char *k = g_strdup_printf("exposed_%s", pn_comm_class_name(c));
    pn_jsonw_double(w, k, r->exposed_comm_s[c]);
  }
  pn_jsonw_double(w, "bubble", r->bubble_s);
  pn_jsonw_double(w, "host_bound", r->host_bound_s); /* of the bubble and exposed time: waiting for launches */
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
}

static char *report_text(const PnMeasured *m, const PnResult *r)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "scenario:  %s\n", m->scenario_from);
  g_string_append_printf(s,
                         "measured:  %.4f s per step (median of %d log lines after iteration %" G_GINT64_FORMAT
                         "; stdev %.4f s, %.4f .. %.4f s)\n",
                         m->median_s, m->n, m->skipped, m->stdev_s, m->min_s, m->max_s);
  g_string_append_printf(s, "predicted: %.4f s per step\n", r->iteration_time_s);
  g_string_append_printf(s, "error:     %+.1f%%\n", error_pct(m, r));
  if (!isnan(m->tflops))
    g_string_append_printf(s, "TFLOP/s per GPU: measured %.1f (Megatron-LM's count), predicted %.1f\n", m->tflops,
                           r->model_tflops_per_gpu);
  if (!isnan(m->max_allocated_mib))
    g_string_append_printf(s, "memory per GPU: measured max allocated %.1f GiB, predicted %.1f GiB\n",
                           m->max_allocated_mib / 1024.0, r->memory.total_gib);
  double t = r->iteration_time_s > 0.0 ? r->iteration_time_s : 1.0;
  g_string_append(s, "where penumbra thinks the step goes (per GPU):\n");
  g_string_append_printf(s, "  compute         %8.4f s  %5.1f%%\n", r->compute_s, 100.0 * r->compute_s / t);
  for (int c = 0; c < PN_CLASS_N; c++)
    if (r->exposed_comm_s[c] > 0.0)
      g_string_append_printf(s, "  exposed %-6s  %8.4f s  %5.1f%%\n", pn_comm_class_name(c), r->exposed_comm_s[c],
                             100.0 * r->exposed_comm_s[c] / t);
  g_string_append_printf(s, "  bubble          %8.4f s  %5.1f%%\n", r->bubble_s, 100.0 * r->bubble_s / t);
  if (r->host_bound_s > 0.0)
    g_string_append_printf(s, "    host-bound    %8.4f s  %5.1f%%  (the GPU waiting for the host's launches)\n",
                           r->host_bound_s, 100.0 * r->host_bound_s / t);
  g_string_append_printf(s, "  (exposed communication in all: %.4f s)\n", exposed_s(r));
  return g_string_free(s, FALSE);
}

/* The scenario given, or the one of the log's argument dump. */
static PnScenario *scenario_of(const char *cmd, const char *log_path, const PnMegatronLog *log, const char *path,
                               char **sets, GPtrArray *warnings, GError **error)
{
  int n_sets = sets ? (int)g_strv_length(sets) : 0;
  if (path != NULL)
    return pn_scenario_load(path, (const char *const *)sets, n_sets, warnings, error);
  g_auto(GStrv) args = pn_megatron_log_args(log);
  if (args == NULL) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA,
                "%s: no argument dump (\"------------------------ arguments ------------------------\"): give the "
                "SCENARIO.json",
                log_path);
    return NULL;
  }
  /* what the arguments cannot say: the log's own warning that TE and Apex are missing (the user's
   * --set come after, and win) */
  g_autoptr(GPtrArray) all_sets = g_ptr_array_new();
  if (log->without_te_apex) {
    g_ptr_array_add(all_sets, "training.fused_adam=false");
    g_ptr_array_add(all_sets, "comm_overlap.transformer_engine=false");
    fprintf(stderr,
            "%s: the log says Transformer Engine and Apex are not installed: torch.optim.AdamW, no TE "
            "(training.fused_adam=false, comm_overlap.transformer_engine=false)\n",
            cmd);
  }
  for (int i = 0; i < n_sets; i++)
    g_ptr_array_add(all_sets, sets[i]);
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *text      = pn_megatron_import((int)g_strv_length(args), args, (const char *const *)all_sets->pdata,
                                                  (int)all_sets->len, notes, warnings, error);
  if (text == NULL) {
    g_prefix_error(error, "%s: the argument dump: ", log_path);
    return NULL;
  }
  fprintf(stderr,
          "%s: the scenario is the log's argument dump (%u arguments not modelled: penumbra import "
          "megatron-args lists them)\n",
          cmd, notes->len);
  return pn_scenario_load_string(text, log_path, NULL, 0, NULL, error);
}

int pn__cli_compare(int argc, char **argv)
{
  g_auto(GStrv) sets      = NULL;
  g_autofree char *format = NULL, *output = NULL, *skip_s = NULL;
  GOptionEntry entries[] = {
      {"skip", 0, 0, G_OPTION_ARG_STRING, &skip_s, "Leave out the warm-up: iterations 1 to N (default 5)", "N"},
      {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario value (repeatable)", "dotted.key=value"},
      {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text (default) or json", "FORMAT"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE (atomically) instead of stdout",
       "FILE"},
      {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(entries, "LOG [SCENARIO.json] - a Megatron-LM training log against the prediction",
                     "Examples:\n"
                     "  penumbra compare train.log                      (the scenario from the log's arguments)\n"
                     "  penumbra compare train.log scenarios/llama3-8b-h100-8gpu.json --skip 10\n"
                     "  penumbra compare train.log -s env.CUDA_DEVICE_MAX_CONNECTIONS=1 -f json\n"
                     "The log is Megatron-LM's standard output: its argument dump, the \"elapsed time per\n"
                     "iteration (ms)\" lines (--log-interval 1 gives one per step) and the memory reports.\n",
                     &argc, &argv))
    return 2;
  const char *cmd = argv[0];
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "%s: expected LOG and optionally SCENARIO.json (see %s --help)\n", cmd, cmd);
    return 2;
  }
  bool json = format && strcmp(format, "json") == 0;
  if (format && !json && strcmp(format, "text") != 0) {
    g_autofree char *q = pn_io_quote(format);
    return pn__cli_bad(cmd, "--format", "expected \"text\" or \"json\", got %s", q);
  }
  double skip = 5;
  if ((skip_s && !pn__cli_number(cmd, "--skip", skip_s, 0, 1e12, true, "an integer >= 0", &skip)) ||
      !pn__cli_check_output(cmd, "--output", output))
    return 2;
  g_autoptr(GError) error      = NULL;
  g_autoptr(PnMegatronLog) log = pn_megatron_log_read(argv[1], &error);
  if (log == NULL)
    return pn__cli_fail(error);
  PnMeasured m = {.scenario_from = argc == 3 ? argv[2] : "the log's argument dump"};
  if (!measure(log, (int64_t)skip, &m)) {
    fprintf(stderr,
            "%s: %s: no \"elapsed time per iteration (ms)\" line after iteration %.0f (%u in the log; "
            "lower --skip)\n",
            cmd, argv[1], skip, log->iterations->len);
    return 2;
  }
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(PnScenario) sc      = scenario_of(cmd, argv[1], log, argc == 3 ? argv[2] : NULL, sets, warnings, &error);
  g_autoptr(PnResult) r         = sc ? pn_sim_run(sc, warnings, &error) : NULL;
  if (r == NULL)
    return pn__cli_fail(error);
  for (guint i = 0; i < r->warnings->len; i++)
    fprintf(stderr, "%s: warning: %s\n", cmd, (const char *)g_ptr_array_index(r->warnings, i));
  g_autofree char *report = json ? report_json(&m, r) : report_text(&m, r);
  return pn__cli_emit(cmd, "--output", output, report);
}
