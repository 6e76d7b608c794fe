/* run.c — `penumbra run`: one scenario simulated (sim/), reported as text or JSON (io/report.h),
 * optionally traced, and with --what-if followed by its overlap knobs (whatif.c). */
#include "cli/cli-private.h"
#include "io/gantt.h"
#include "io/plot.h"
#include "io/report.h"
#include "io/scenario.h"
#include "io/trace.h"
#include "pn_version.h" /* generated at build time (cmake/version.cmake) */
#include "sim/sim.h"

/* --trace-window START_MS:END_MS, milliseconds of simulated time from the start of the run. */
static bool parse_window(const char *cmd, const char *text, PnTraceOptions *to)
{
  g_auto(GStrv) parts = g_strsplit(text, ":", -1);
  double start_ms = 0.0, end_ms = 0.0;
  if (g_strv_length(parts) == 2 && pn__cli_strtod(parts[0], &start_ms) && pn__cli_strtod(parts[1], &end_ms) &&
      start_ms >= 0.0 && start_ms < end_ms && end_ms <= 1e12) { /* 1e12 ms: 31 years, far inside PnTimeNs */
    to->window   = true;
    to->start_ns = (PnTimeNs)llround(start_ms * 1e6);
    to->end_ns   = (PnTimeNs)llround(end_ms * 1e6);
    return true;
  }
  g_autofree char *q = pn_io_quote(text);
  pn__cli_bad(cmd, "--trace-window", "expected START_MS:END_MS, milliseconds with 0 <= START < END, got %s", q);
  return false;
}

/* The trace options, checked: --trace-max-size and --trace-window go with --trace. */
static bool trace_options(const char *cmd, const char *trace, const char *max_size, const char *window,
                          PnTraceOptions *to)
{
  *to = (PnTraceOptions){.max_bytes = PN_TRACE_MAX_BYTES};
  if (trace == NULL && (max_size || window)) {
    pn__cli_bad(cmd, max_size ? "--trace-max-size" : "--trace-window", "applies only with --trace FILE");
    return false;
  }
  return (!max_size || pn__cli_bytes(cmd, "--trace-max-size", max_size, &to->max_bytes)) &&
         (!window || parse_window(cmd, window, to));
}

static int write_trace(const char *cmd, const char *trace, const PnSimRun *run, const PnTraceOptions *to)
{
  g_autoptr(GError) error = NULL;
  if (pn_trace_write(trace, run->graph, &run->exec, run->spans, to, &error))
    return 0;
  if (!g_error_matches(error, PN_IO_ERROR, PN_IO_ERROR_BOUND))
    return pn__cli_fail_at(cmd, "--trace", error);
  fprintf(stderr, "%s: --trace: %s (raise --trace-max-size, or keep a part with --trace-window START_MS:END_MS)\n", cmd,
          error->message);
  return pn__cli_status(error);
}

/* --gantt's window: --from / --to (ms), or --window GROUP (a micro-batch group of the reported
 * iteration: as many micro-batches as pipeline stages). */
typedef struct {
  const char *path, *from, *to, *group;
} PnGanttArgs;

static bool gantt_options(const char *cmd, const PnGanttArgs *ga, PnGanttOptions *go, int *group)
{
  *go    = (PnGanttOptions){0};
  *group = -1;
  if (ga->path == NULL && (ga->from || ga->to || ga->group))
    return pn__cli_bad(cmd, ga->from ? "--from" : ga->to ? "--to" : "--window", "applies only with --gantt FILE") == 0;
  if (ga->group && (ga->from || ga->to))
    return pn__cli_bad(cmd, "--window", "a micro-batch group or --from/--to, not both") == 0;
  g_autoptr(GError) error = NULL;
  if (ga->path && !pn_plot_check_path(ga->path, &error))
    return pn__cli_fail_at(cmd, "--gantt", error) == 0;
  double from = 0.0, to = 0.0, g = 0.0;
  if ((ga->from && !pn__cli_number(cmd, "--from", ga->from, 0, 1e12, false, "milliseconds >= 0", &from)) ||
      (ga->to && !pn__cli_number(cmd, "--to", ga->to, DBL_TRUE_MIN, 1e12, false, "milliseconds > 0", &to)) ||
      (ga->group && !pn__cli_number(cmd, "--window", ga->group, 0, 1e9, true, "a micro-batch group, 0 or more", &g)))
    return false;
  if (ga->to && to <= from)
    return pn__cli_bad(cmd, "--to", "expected a time after --from (%g ms), got %s", from, ga->to) == 0;
  go->start_ns = (PnTimeNs)llround(from * 1e6);
  go->end_ns   = (PnTimeNs)llround(to * 1e6);
  *group       = ga->group ? (int)g : -1;
  return pn__cli_check_output(cmd, "--gantt", ga->path);
}

static int write_gantt(const char *cmd, const PnGanttArgs *ga, PnGanttOptions *go, int group, const char *path,
                       const PnScenario *sc, const PnResult *r, const PnSimRun *run)
{
  if (group >= 0) {
    double before_s = 0.0; /* the reported iteration starts where the ones before it ended */
    for (guint i = 0; i + 1 < r->iteration_times_s->len; i++)
      before_s += g_array_index(r->iteration_times_s, double, i);
    int size = (int)sc->parallel.pipeline_model_parallel_size;
    if (!pn_gantt_group_window(run->graph, &run->exec, group, size, (PnTimeNs)llround(before_s * 1e9), &go->start_ns,
                               &go->end_ns))
      return pn__cli_bad(cmd, "--window",
                         "no micro-batch group %d: the iteration has %" G_GINT64_FORMAT " micro-batches, %d a group",
                         group, r->num_microbatches, size);
  }
  g_autofree char *title  = g_path_get_basename(path);
  go->title               = title;
  g_autoptr(GError) error = NULL;
  if (!pn_gantt_write(ga->path, run->graph, &run->exec, run->spans, go, &error))
    return pn__cli_fail_at(cmd, "--gantt", error);
  return 0;
}

/* --format, --timing beside --what-if, --iterations; false after an error line (exit 2). */
static bool report_options(const char *cmd, const char *format, bool timing, bool whatif, const char *iterations_s,
                           bool *json, double *iterations)
{
  *json = format && strcmp(format, "json") == 0;
  if (format && !*json && strcmp(format, "text") != 0) {
    g_autofree char *q = pn_io_quote(format);
    return pn__cli_bad(cmd, "--format", "expected \"text\" or \"json\", got %s", q) == 0;
  }
  if (timing && whatif)
    return pn__cli_bad(cmd, "--timing", "the what-if report has no timing (time the command instead)") == 0;
  return !iterations_s ||
         pn__cli_number(cmd, "--iterations", iterations_s, 1, 100, true, "an integer from 1 to 100", iterations);
}

int pn__cli_run(int argc, char **argv)
{
  g_autofree char *gantt        = NULL;
  g_autofree char *gantt_from   = NULL;
  g_autofree char *gantt_to     = NULL;
  g_autofree char *gantt_group  = NULL;
  g_auto(GStrv) sets            = NULL;
  g_autofree char *format       = NULL;
  g_autofree char *output       = NULL;
  g_autofree char *iterations_s = NULL;
  gboolean whatif               = FALSE;
  gboolean timing               = FALSE;
  g_autofree char *trace        = NULL;
  g_autofree char *trace_max    = NULL;
  g_autofree char *trace_window = NULL;
  GOptionEntry entries[]        = {
             {"trace", 't', 0, G_OPTION_ARG_FILENAME, &trace, "Write the timeline as a Chrome/Perfetto trace to FILE", "FILE"},
             {"trace-max-size", 0, 0, G_OPTION_ARG_STRING, &trace_max,
              "--trace: refuse a trace larger than SIZE (bytes, or 512MiB, 4GiB; default 1GiB)", "SIZE"},
             {"trace-window", 0, 0, G_OPTION_ARG_STRING, &trace_window,
              "--trace: keep only the tasks running between START and END ms of simulated time", "START_MS:END_MS"},
             {"gantt", 0, 0, G_OPTION_ARG_FILENAME, &gantt,
              "Draw the iteration as a Gantt chart (gnuplot): streams per stage, exposed communication and bubble",
              "FILE.svg|png"},
             {"from", 0, 0, G_OPTION_ARG_STRING, &gantt_from, "--gantt: start the chart at MS of simulated time", "MS"},
             {"to", 0, 0, G_OPTION_ARG_STRING, &gantt_to, "--gantt: end the chart at MS of simulated time", "MS"},
             {"window", 0, 0, G_OPTION_ARG_STRING, &gantt_group,
              "--gantt: only micro-batch group GROUP (as many micro-batches as stages)", "GROUP"},
             {"what-if", 0, 0, G_OPTION_ARG_NONE, &whatif, "Also simulate each applicable overlap knob off and on", NULL},
             {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario value (repeatable)", "dotted.key=value"},
             {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text (default) or json", "FORMAT"},
             {"iterations", 'n', 0, G_OPTION_ARG_STRING, &iterations_s,
              "Simulate N iterations, 1 to 100 (overrides training.iterations)", "N"},
             {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE (atomically) instead of stdout",
              "FILE"},
             {"timing", 0, 0, G_OPTION_ARG_NONE, &timing,
              "Add the simulator's events and wall time to the report (which then differs run to run)", NULL},
             {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(
          entries, "SCENARIO.json - simulate one training iteration",
          "Examples:\n"
          "  penumbra run scenarios/llama3-8b-h100-8gpu.json\n"
          "  penumbra run scenarios/llama3-8b-h100-8gpu.json --what-if\n"
          "  penumbra run scenarios/llama3-8b-h100-8gpu.json -s ddp.overlap_grad_reduce=false -f json -o report.json\n"
          "  penumbra run scenarios/qwen3-30b-a3b-h100-16gpu-ep-overlap-on.json -n 2 -t trace.json\n"
          "    (open trace.json in https://ui.perfetto.dev)\n"
          "  penumbra run scenarios/llama2-70b-h100-64gpu.json -s training.global_batch_size=64 --gantt gantt.png\n",
          &argc, &argv))
    return 2;
  const char *cmd         = argv[0];
  g_autoptr(GError) error = NULL;
  if (argc != 2) {
    fprintf(stderr, "penumbra run: expected exactly one SCENARIO.json (see penumbra run --help)\n");
    return 2;
  }
  bool json         = false;
  double iterations = 0.0;
  if (!report_options(cmd, format, timing, whatif, iterations_s, &json, &iterations))
    return 2;
  PnTraceOptions to;
  if (!trace_options(cmd, trace, trace_max, trace_window, &to))
    return 2;
  if (!pn__cli_stdout_once(cmd, "--trace", trace, output) || !pn__cli_check_output(cmd, "--output", output) ||
      !pn__cli_check_output(cmd, "--trace", trace))
    return 2;
  PnGanttArgs ga = {gantt, gantt_from, gantt_to, gantt_group};
  PnGanttOptions go;
  int group = -1;
  if (!gantt_options(cmd, &ga, &go, &group) || !pn__cli_stdout_once(cmd, "--gantt", gantt, output))
    return 2;
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  int n_sets                    = sets ? (int)g_strv_length(sets) : 0;
  g_autoptr(PnScenario) sc      = pn_scenario_load(argv[1], (const char *const *)sets, n_sets, warnings, &error);
  if (!sc)
    return pn__cli_fail(error);
  if (iterations > 0)
    sc->training.iterations = (int)iterations;
  bool timeline   = trace != NULL || gantt != NULL;
  PnSimOptions so = {.keep_graph = timeline, .keep_spans = timeline};
  PnSimRun run;
  if (!pn_sim_run_full(sc, warnings, &so, &run, &error)) {
    if (!g_str_has_prefix(error->message, argv[1])) /* overlap errors already name the file */
      g_prefix_error(&error, "%s: ", argv[1]);
    return pn__cli_fail(error);
  }
  g_autoptr(PnResult) r = g_steal_pointer(&run.result);
  int rc                = trace ? write_trace(cmd, trace, &run, &to) : 0;
  if (rc == 0 && gantt)
    rc = write_gantt(cmd, &ga, &go, group, argv[1], sc, r, &run);
  pn_sim_run_clear(&run);
  if (rc != 0)
    return rc;
  PnReportOptions ro      = {.version = PN_VERSION, .commit = PN_GIT_COMMIT, .timing = timing};
  g_autofree char *report = NULL;
  if (whatif)
    rc = pn__cli_what_if(argv[1], sets, n_sets, sc, r, json, &ro, &report);
  else
    report = json ? pn_report_json(sc, r, &ro) : pn_report_text(sc, r, &ro);
  return rc != 0 ? rc : pn__cli_emit(cmd, "--output", output, report);
}
