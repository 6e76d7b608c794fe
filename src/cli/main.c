/* main.c — the `penumbra` command: subcommands over io/ and sim/.
 *
 * Exit status: 0 success; 2 bad input (file, JSON, inconsistent configuration); 1 internal error.
 * Errors print one line on stderr: `penumbra: <file>: <json path>: <what was expected>`.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hw/exec.h"
#include "io/calibio.h"
#include "io/hwprofile.h"
#include "io/report.h"
#include "io/scenario.h"
#include "io/trace.h"
#include "io/validate.h"
#include "overlap/gating.h"
#include "overlap/strategy.h"
#include "sim/sim.h"

#ifndef PN_DATA_DIR
#define PN_DATA_DIR "."
#endif

#ifndef PN_VERSION
#define PN_VERSION "dev"
#endif

typedef int (*PnCommandFn)(int argc, char **argv);

static int fail(const GError *error);

/* A command's report: to FILE (written atomically) with -o, else to stdout. */
static int emit(const char *output, const char *text)
{
  g_autoptr(GError) error = NULL;
  if (!output) {
    fputs(text, stdout);
    return 0;
  }
  return pn_io_write_file_atomic(output, text, strlen(text), &error) ? 0 : fail(error);
}

typedef struct {
  const char *name;
  PnCommandFn fn;
  const char *summary;
} PnCommand;

static int fail(const GError *error)
{
  fprintf(stderr, "penumbra: %s\n", error->message);
  /* an executor failure is ours (exit 1), unless the inputs were absurd enough to overflow time */
  return (error->domain == PN_EXEC_ERROR && error->code != PN_EXEC_ERROR_HORIZON) ? 1 : 2;
}

static double total_exposed(const PnResult *r)
{
  double e = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    e += r->exposed_comm_s[c];
  return e;
}

/* Each applicable overlap knob switched off and on, from the scenario as given. */
static int what_if(const char *path, char **sets, int n_sets, const PnScenario *base, const PnResult *base_r, bool json,
                   const char *output)
{
  PnPlan plan;
  g_autoptr(GError) error = NULL;
  if (!pn_overlap_resolve(base, &plan, NULL, &error))
    return fail(error);
  g_autoptr(GString) out = g_string_new(NULL);
  if (json)
    g_string_append(out, "[\n");
  else
    g_string_append_printf(out,
                           "what-if for %s (baseline %.4f s, exposed comm %.4f s)\n%-48s %-5s %12s %12s %12s %12s\n",
                           path, base_r->iteration_time_s, total_exposed(base_r), "knob", "now", "off (s)", "on (s)",
                           "on-off (s)", "exposed on-off");
  bool first = true;
  for (size_t k = 0; k < pn_overlap_n_what_if; k++) {
    const PnOverlapStrategy *knob = pn_overlap_what_if[k];
    if (!knob->applies(base))
      continue;
    double t[2], e[2];
    for (int v = 0; v < 2; v++) {
      g_autoptr(GPtrArray) all = g_ptr_array_new();
      for (int i = 0; i < n_sets; i++)
        g_ptr_array_add(all, sets[i]);
      const char *const *add = v ? knob->set_on : knob->set_off;
      for (int i = 0; i < 2 && add[i]; i++)
        g_ptr_array_add(all, (gpointer)add[i]);
      g_autoptr(PnScenario) sc = pn_scenario_load(path, (const char *const *)all->pdata, (int)all->len, NULL, &error);
      if (!sc)
        return fail(error);
      sc->training.iterations = base->training.iterations;
      g_autoptr(PnResult) r   = pn_sim_run(sc, NULL, &error);
      if (!r)
        return fail(error);
      t[v] = r->iteration_time_s;
      e[v] = total_exposed(r);
    }
    bool now = knob->is_on(&plan);
    if (json)
      g_string_append_printf(out,
                             "%s  {\"knob\": \"%s\", \"now\": %s, \"off_s\": %.9g, \"on_s\": %.9g, "
                             "\"exposed_off_s\": %.9g, \"exposed_on_s\": %.9g}",
                             first ? "" : ",\n", knob->name, now ? "true" : "false", t[0], t[1], e[0], e[1]);
    else
      g_string_append_printf(out, "%-48s %-5s %12.4f %12.4f %+12.4f %+12.4f\n", knob->name, now ? "on" : "off", t[0],
                             t[1], t[1] - t[0], e[1] - e[0]);
    first = false;
  }
  if (json)
    g_string_append(out, "\n]\n");
  return emit(output, out->str);
}

static int cmd_run(int argc, char **argv)
{
  g_auto(GStrv) sets      = NULL;
  g_autofree char *format = NULL;
  g_autofree char *output = NULL;
  int iterations          = 0;
  gboolean whatif         = FALSE;
  g_autofree char *trace  = NULL;
  GOptionEntry entries[]  = {
       {"trace", 't', 0, G_OPTION_ARG_FILENAME, &trace, "Write the timeline as a Chrome/Perfetto trace to FILE", "FILE"},
       {"what-if", 0, 0, G_OPTION_ARG_NONE, &whatif, "Also simulate each applicable overlap knob off and on", NULL},
       {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario value (repeatable)", "dotted.key=value"},
       {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text (default) or json", "FORMAT"},
       {"iterations", 'n', 0, G_OPTION_ARG_INT, &iterations, "Simulate N iterations (overrides training.iterations)",
        "N"},
       {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE (atomically) instead of stdout",
        "FILE"},
       {NULL, 0, 0, 0, NULL, NULL, NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("SCENARIO.json - simulate one training iteration");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    fprintf(stderr, "penumbra run: %s\n", error->message);
    return 2;
  }
  if (argc != 2) {
    fprintf(stderr, "penumbra run: expected exactly one SCENARIO.json (see penumbra run --help)\n");
    return 2;
  }
  bool json = false;
  if (format && strcmp(format, "json") == 0)
    json = true;
  else if (format && strcmp(format, "text") != 0) {
    fprintf(stderr, "penumbra run: --format: expected \"text\" or \"json\", got \"%s\"\n", format);
    return 2;
  }
  if (iterations < 0 || iterations > 100) {
    fprintf(stderr, "penumbra run: --iterations: expected 1..100, got %d\n", iterations);
    return 2;
  }
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  int n_sets                    = sets ? (int)g_strv_length(sets) : 0;
  g_autoptr(PnScenario) sc      = pn_scenario_load(argv[1], (const char *const *)sets, n_sets, warnings, &error);
  if (!sc)
    return fail(error);
  if (iterations > 0)
    sc->training.iterations = iterations;
  PnSimOptions so = {.keep_graph = trace != NULL};
  PnSimRun run;
  if (!pn_sim_run_full(sc, warnings, &so, &run, &error)) {
    if (!g_str_has_prefix(error->message, argv[1])) /* overlap errors already name the file */
      g_prefix_error(&error, "%s: ", argv[1]);
    return fail(error);
  }
  g_autoptr(PnResult) r = g_steal_pointer(&run.result);
  if (trace && !pn_trace_write(trace, run.graph, &run.exec, &error)) {
    pn_sim_run_clear(&run);
    return fail(error);
  }
  pn_sim_run_clear(&run);
  if (whatif)
    return what_if(argv[1], sets, n_sets, sc, r, json, output);
  g_autofree char *report = json ? pn_report_json(sc, r) : pn_report_text(sc, r);
  return emit(output, report);
}

static int cmd_validate(int argc, char **argv)
{
  g_autofree char *format  = NULL;
  g_autofree char *profile = NULL;
  g_autofree char *output  = NULL;
  double max_mape          = 0.0;
  g_autofree char *e2e     = NULL;
  g_autofree char *e2e_dir = NULL;
  g_autofree char *plot    = NULL;
  GOptionEntry entries[]   = {
        {"e2e", 0, 0, G_OPTION_ARG_FILENAME, &e2e, "Compare our end-to-end runs (microbench/e2e results) instead",
         "FILE"},
        {"e2e-scenarios", 0, 0, G_OPTION_ARG_FILENAME, &e2e_dir,
         "Scenarios of the e2e configs (default microbench/e2e/scenarios)", "DIR"},
        {"plot-data", 0, 0, G_OPTION_ARG_FILENAME, &plot, "Also write measured/predicted pairs to FILE (gnuplot)",
         "FILE"},
        {"profile", 'p', 0, G_OPTION_ARG_STRING, &profile, "Hardware profile for H100 records (default h100-sxm)",
         "NAME"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text (default) or json", "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE (atomically)", "FILE"},
        {"max-mape", 0, 0, G_OPTION_ARG_DOUBLE, &max_mape, "Exit 3 when the mean absolute error exceeds PCT", "PCT"},
        {NULL, 0, 0, 0, NULL, NULL, NULL}};
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("[RECORDS.json] - predict published measured runs and report the step-time error");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    fprintf(stderr, "penumbra validate: %s\n", error->message);
    return 2;
  }
  if (argc > 2) {
    fprintf(stderr, "penumbra validate: expected at most one RECORDS.json\n");
    return 2;
  }
  bool json = format && strcmp(format, "json") == 0;
  if (format && !json && strcmp(format, "text") != 0) {
    fprintf(stderr, "penumbra validate: --format: expected \"text\" or \"json\", got \"%s\"\n", format);
    return 2;
  }
  g_autofree char *dflt = g_build_filename(PN_DATA_DIR, "tests", "data", "validation", "published-visible.json", NULL);
  const char *records   = argc == 2 ? argv[1] : dflt;
  g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)pn_validation_row_free);
  g_autofree char *dflt_e2e = g_build_filename(PN_DATA_DIR, "microbench", "e2e", "scenarios", NULL);
  if (e2e ? !pn_validate_e2e(e2e, e2e_dir ? e2e_dir : dflt_e2e, rows, &error)
          : !pn_validate_file(records, profile ? profile : "h100-sxm", rows, &error))
    return fail(error);
  if (plot) {
    g_autofree char *dat = pn_validate_plot_data(rows);
    if (!pn_io_write_file_atomic(plot, dat, strlen(dat), &error))
      return fail(error);
  }
  g_autofree char *report = json ? pn_validate_report_json(rows) : pn_validate_report_text(rows);
  int rc                  = emit(output, report);
  if (rc != 0)
    return rc;
  int n;
  double mape = pn_validate_mape(rows, &n);
  if (n == 0) {
    fprintf(stderr, "penumbra validate: %s: no record could be predicted\n", records);
    return 1;
  }
  return (max_mape > 0 && mape > max_mape) ? 3 : 0;
}

static gint cmp_abs(gconstpointer a, gconstpointer b)
{
  double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/* One line of the replay check: count, median / p90 / max |error|, share within `tol`. */
static bool check_line(GString *out, const char *what, GArray *err, double tol)
{
  if (err->len == 0) {
    g_string_append_printf(out, "  %-34s %6s\n", what, "-");
    return true;
  }
  g_array_sort(err, cmp_abs);
  guint n = err->len, within = 0;
  for (guint i = 0; i < n; i++)
    within += fabs(g_array_index(err, double, i)) <= tol;
  double med = fabs(g_array_index(err, double, n / 2)), p90 = fabs(g_array_index(err, double, (n * 9) / 10));
  double max = fabs(g_array_index(err, double, n - 1));
  g_string_append_printf(out, "  %-34s %6u %8.2f%% %8.2f%% %8.2f%% %8.1f%%\n", what, n, med * 100, p90 * 100, max * 100,
                         100.0 * within / n);
  return within == n;
}

static int cmd_calibrate(int argc, char **argv)
{
  g_autofree char *base    = NULL;
  g_autofree char *output  = NULL;
  g_autofree char *profile = NULL;
  gboolean check           = FALSE;
  double tol_pct           = 5.0;
  g_autofree char *plot    = NULL;
  GOptionEntry entries[]   = {
        {"base", 'b', 0, G_OPTION_ARG_FILENAME, &base, "Profile to start from (its sourced figures are kept)", "FILE"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the calibrated profile to FILE (atomically)", "FILE"},
        {"check", 'c', 0, G_OPTION_ARG_NONE, &check, "Replay every measured case through --profile and report errors",
         NULL},
        {"profile", 'p', 0, G_OPTION_ARG_FILENAME, &profile, "Profile to check (with --check)", "FILE"},
        {"tolerance", 0, 0, G_OPTION_ARG_DOUBLE, &tol_pct, "--check: error bound in percent (default 5)", "PCT"},
        {"plot-data", 0, 0, G_OPTION_ARG_FILENAME, &plot, "--check: write measured vs predicted points to FILE (gnuplot)",
         "FILE"},
        {NULL, 0, 0, 0, NULL, NULL, NULL}};
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("RESULTS.json... - fit hardware-profile tables from microbenchmark results");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    fprintf(stderr, "penumbra calibrate: %s\n", error->message);
    return 2;
  }
  if (argc < 2) {
    fprintf(stderr, "penumbra calibrate: expected one or more microbenchmark RESULTS.json\n");
    return 2;
  }
  if (check ? !profile : !(base && output)) {
    fprintf(stderr, "penumbra calibrate: expected --base FILE -o FILE, or --check --profile FILE\n");
    return 2;
  }
  PnCalData data;
  pn_cal_data_init(&data);
  g_autoptr(GString) prov = g_string_new(NULL);
  int rc                  = 0;
  for (int i = 1; i < argc && rc == 0; i++)
    if (!pn_calib_read_results(argv[i], &data, prov, &error))
      rc = fail(error);
  if (rc == 0) {
    g_autoptr(PnHwProfile) p = pn_hw_profile_load(check ? profile : base, &error);
    if (!p) {
      rc = fail(error);
    } else if (check) {
      PnCalCheck c;
      pn_calib_check(&data, p, &c);
      double tol             = tol_pct / 100.0;
      g_autoptr(GString) out = g_string_new(NULL);
      g_string_append_printf(out, "replay of the measured cases through %s (|predicted/measured - 1|)\n", profile);
      g_string_append_printf(out, "  %-34s %6s %9s %9s %9s %9s\n", "kind", "n", "median", "p90", "max", "within");
      bool ok = check_line(out, "gemm (table replay)", c.gemm, tol);
      check_line(out, "gemm (leave-one-out interpolation)", c.gemm_loo, tol);
      ok = check_line(out, "attention", c.attn, tol) && ok;
      ok = check_line(out, "collectives, NCCL default channels", c.coll_default, tol) && ok;
      ok = check_line(out, "collectives, NCCL_MAX_CTAS forced", c.coll_ctas, tol) && ok;
      for (guint k = 0; c.coll_groups->len > 1 && k < c.coll_groups->len; k++) {
        g_autofree char *what = g_strdup_printf("  default channels, %d GPUs", g_array_index(c.coll_groups, int, k));
        ok                    = check_line(out, what, g_ptr_array_index(c.coll_by_group, k), tol) && ok;
      }
      ok = check_line(out, "SM contention, median per SMs held", c.contention_median, tol) && ok;
      ok = check_line(out, "memory-bound kernels >= 256 MiB", c.memory, tol) && ok;
      ok = check_line(out, "SM contention, every shape", c.contention, tol) && ok;
      g_string_append(out, "  (reported, not required: one figure or curve stands for several measured cases)\n");
      check_line(out, "cudaMemcpy D2D >= 256 MiB (hbm figure)", c.memory_other, tol);
      check_line(out, "collectives, non-monotone outliers", c.coll_outliers, tol);
      GArray *beside[]    = {c.nccl_overlap, c.nccl_overlap_margin};
      const char *names[] = {"GEMM rate beside NCCL, SMs held", "GEMM rate beside NCCL, SM margin"};
      for (int b = 0; b < 2; b++) {
        g_autoptr(GArray) sorted = g_array_copy(beside[b]);
        double med               = pn_calib_median(sorted); /* signed: < 0 means the model is too slow */
        if (check_line(out, names[b], beside[b], tol))      /* all within, or no rows */
          continue;
        g_string_append_printf(out, "  %-34s %+15.2f%% (median of predicted/measured - 1)\n", "", med * 100.0);
      }
      for (guint k = 1; k + 1 < c.coll_groups->len; k++) {
        g_autofree char *what =
            g_strdup_printf("collectives, %d GPUs from the others", g_array_index(c.coll_groups, int, k));
        check_line(out, what, g_ptr_array_index(c.coll_group_loo, k), tol);
      }
      fputs(out->str, stdout);
      if (plot) {
        /* one gnuplot data block per series ("index" in plots/calibration.gp) */
        static const char *const series[] = {"gemm_bf16",           "gemm_fp8",        "coll_all_gather",
                                             "coll_reduce_scatter", "coll_all_reduce", "coll_all_to_all",
                                             "coll_send_recv",      "sm_held",         "sm_margin"};
        g_autoptr(GString) dat            = g_string_new("# penumbra calibrate --check: x measured predicted\n");
        for (size_t si = 0; si < G_N_ELEMENTS(series); si++) {
          g_string_append_printf(dat, "# %s\n", series[si]);
          double last_x = -1.0;
          for (guint i = 0; i < c.points->len; i++) {
            const PnCalPoint *pt = &g_array_index(c.points, PnCalPoint, i);
            if (strcmp(pt->series, series[si]) != 0)
              continue;
            if (pt->x < last_x)
              g_string_append(dat, "\n"); /* a new group size: one blank line breaks gnuplot's line */
            last_x = pt->x;
            g_string_append_printf(dat, "%.6g %.6g %.6g\n", pt->x, pt->measured, pt->predicted);
          }
          g_string_append(dat, "\n\n");
        }
        if (!pn_io_write_file_atomic(plot, dat->str, dat->len, &error))
          ok = (fail(error), false);
      }
      pn_cal_check_clear(&c);
      rc = ok ? 0 : 3;
    } else {
      PnCalFitted fitted;
      if (!pn_calib_fit(&data, p, &fitted, &error) ||
          !pn_calib_write_profile(base, output, p, &fitted, prov->str, &error))
        rc = fail(error);
      else
        printf("calibrated %s: %d bf16 + %d fp8 GEMM points, %d attention points, %s%s%s%s%s\n", output,
               fitted.gemm_bf16_points, fitted.gemm_fp8_points, fitted.attn_points,
               fitted.gemm_sm_scaling ? "SM-contention curve, " : "",
               fitted.gemm_sm_limit_scaling ? "SM-margin curve, " : "", fitted.hbm ? "HBM bandwidth, " : "",
               fitted.coll ? "NCCL collectives, " : "", fitted.copy ? "copy engine" : "");
    }
  }
  pn_cal_data_clear(&data);
  return rc;
}

static const PnCommand commands[] = {
    {"run", cmd_run, "simulate one scenario and report iteration time, throughput and exposed communication"},
    {"calibrate", cmd_calibrate,
     "fit hardware-profile tables from microbenchmark results, or check a profile against them"},
    {"validate", cmd_validate, "predict published measured runs and report the step-time error"},
};

static void usage(FILE *to)
{
  fprintf(to, "usage: penumbra COMMAND [OPTIONS] ...\n\ncommands:\n");
  for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(to, "\n`penumbra COMMAND --help` describes each command.\n");
}

int main(int argc, char **argv)
{
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("penumbra %s\n", PN_VERSION);
    return 0;
  }
  for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(argv[1], commands[i].name) == 0) {
      g_autofree char *prog = g_strdup_printf("penumbra %s", commands[i].name);
      argv[1]               = prog;
      return commands[i].fn(argc - 1, argv + 1);
    }
  fprintf(stderr, "penumbra: unknown command \"%s\" (penumbra --help lists the commands)\n", argv[1]);
  return 2;
}
