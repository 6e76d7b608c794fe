/* validate.c — `penumbra validate`: published (or our own end-to-end) measured runs predicted
 * and compared (io/validate.h); exit 3 when the mean absolute error exceeds --max-mape. */
#include "io/validate.h"
#include "cli/cli-private.h"
#include "io/hwprofile.h"

/* The options that belong to one mode (published records, or --e2e results) and not the other,
 * the --profile of the records, the directory of the e2e `scenarios` (--e2e-scenarios, `e2e_dir`,
 * or its default) and the outputs: all checked before any record is predicted. */
static int check_options(const char *cmd, int argc, const char *e2e, const char *e2e_dir, const char *scenarios,
                         const char *profile, const char *output, const char *plot, const char *write_dir, bool force)
{
  if (force && !write_dir)
    return pn__cli_bad(cmd, "--force", "replaces the --scenarios directory; give --scenarios DIR");
  if (e2e && write_dir)
    return pn__cli_bad(cmd, "--scenarios", "writes the scenarios built for published records; --e2e reads its own");
  if (e2e && argc == 2)
    return pn__cli_bad(cmd, "--e2e", "compares end-to-end results, not RECORDS.json (give one or the other)");
  if (e2e && profile)
    return pn__cli_bad(cmd, "--profile", "applies to published records; each --e2e scenario names its profile");
  if (!e2e && e2e_dir)
    return pn__cli_bad(cmd, "--e2e-scenarios", "applies only with --e2e FILE");
  if (e2e && !g_file_test(scenarios, G_FILE_TEST_IS_DIR))
    return pn__cli_bad(cmd, "--e2e-scenarios", "%s: expected a directory of scenarios (<config>.json)", scenarios);
  g_autoptr(GError) error = NULL;
  if (!e2e) {
    g_autofree char *path = pn_io_find_profile("--profile", profile ? profile : "h100-sxm", &error);
    if (path == NULL)
      return pn__cli_fail_at(cmd, NULL, error);
    g_autoptr(PnHwProfile) p = pn_hw_profile_load(path, &error);
    if (p == NULL)
      return pn__cli_fail_at(cmd, "--profile", error);
  }
  if (!pn__cli_stdout_once(cmd, "--plot-data", plot, output) || !pn__cli_check_output(cmd, "--output", output) ||
      !pn__cli_check_output(cmd, "--plot-data", plot))
    return 2;
  if (write_dir && !pn_out_stage_check(write_dir, force, &error))
    return pn__cli_fail_at(cmd, "--scenarios", error);
  return 0;
}

/* Each predicted record's scenario as DIR/<record id>.json, the directory written whole (io/out.h). */
static gboolean write_scenarios(const GPtrArray *rows, const char *path, bool force, GError **error)
{
  g_autoptr(PnOutStage) stage = pn_out_stage_open(path, force, error);
  if (stage == NULL)
    return FALSE;
  for (guint i = 0; i < rows->len; i++) {
    const PnValidationRow *r = rows->pdata[i];
    if (r->scenario_json == NULL)
      continue;
    g_autofree char *name = g_strdup_printf("%s.json", r->id);
    PnOut *out            = pn_out_dir_file(pn_out_stage_dir(stage), name, error);
    if (out == NULL)
      return FALSE;
    pn_out_write(out, r->scenario_json, strlen(r->scenario_json));
    if (!pn_out_commit(out, error))
      return FALSE;
  }
  return pn_out_stage_commit(g_steal_pointer(&stage), error);
}

int pn__cli_validate(int argc, char **argv)
{
  g_autofree char *format     = NULL;
  g_autofree char *profile    = NULL;
  g_autofree char *output     = NULL;
  g_autofree char *max_mape_s = NULL;
  g_autofree char *e2e        = NULL;
  g_autofree char *e2e_dir    = NULL;
  g_autofree char *plot       = NULL;
  g_autofree char *write_dir  = NULL;
  gboolean force              = FALSE;
  GOptionEntry entries[]      = {
           {"e2e", 0, 0, G_OPTION_ARG_FILENAME, &e2e, "Compare our end-to-end runs (microbench/e2e results) instead",
            "FILE"},
           {"e2e-scenarios", 0, 0, G_OPTION_ARG_FILENAME, &e2e_dir,
            "Scenarios of the e2e configs (default microbench/e2e/scenarios)", "DIR"},
           {"plot-data", 0, 0, G_OPTION_ARG_FILENAME, &plot, "Also write measured/predicted pairs to FILE (gnuplot)",
            "FILE"},
           {"scenarios", 0, 0, G_OPTION_ARG_FILENAME, &write_dir,
            "Also write the scenario built for each record to DIR/<id>.json (a new or empty directory)", "DIR"},
           {"force", 0, 0, G_OPTION_ARG_NONE, &force, "--scenarios: replace a directory that is not empty", NULL},
           {"profile", 'p', 0, G_OPTION_ARG_STRING, &profile, "Hardware profile for H100 records (default h100-sxm)",
            "NAME"},
           {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text (default) or json", "FORMAT"},
           {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE (atomically)", "FILE"},
           {"max-mape", 0, 0, G_OPTION_ARG_STRING, &max_mape_s,
            "Exit 3 when the mean absolute error exceeds PCT (a percentage > 0)", "PCT"},
           {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(entries, "[RECORDS.json] - predict published measured runs and report the step-time error",
                     "Examples:\n"
                     "  penumbra validate\n"
                     "    (the records of tests/data/validation/published-visible.json)\n"
                     "  penumbra validate tests/data/validation/published-visible.json --max-mape 15\n"
                     "  penumbra validate --e2e hwprofiles/calibration/h200-sxm/e2e-results.json -f json\n"
                     "  penumbra validate --plot-data validation.dat\n"
                     "  penumbra validate --scenarios records/ && penumbra run records/<id>.json --what-if\n",
                     &argc, &argv))
    return 2;
  const char *cmd         = argv[0];
  g_autoptr(GError) error = NULL;
  if (argc > 2) {
    fprintf(stderr, "penumbra validate: expected at most one RECORDS.json\n");
    return 2;
  }
  bool json = format && strcmp(format, "json") == 0;
  if (format && !json && strcmp(format, "text") != 0) {
    g_autofree char *q = pn_io_quote(format);
    return pn__cli_bad(cmd, "--format", "expected \"text\" or \"json\", got %s", q);
  }
  double max_mape = 0.0; /* 0: no check */
  if (max_mape_s &&
      !pn__cli_number(cmd, "--max-mape", max_mape_s, DBL_TRUE_MIN, DBL_MAX, false, "a percentage > 0", &max_mape))
    return 2;
  g_autofree char *data_dir = pn_io_data_dir();
  g_autofree char *dflt     = g_build_filename(data_dir, "tests", "data", "validation", "published-visible.json", NULL);
  g_autofree char *dflt_e2e = g_build_filename(data_dir, "microbench", "e2e", "scenarios", NULL);
  const char *records       = argc == 2 ? argv[1] : dflt;
  const char *scenarios     = e2e_dir ? e2e_dir : dflt_e2e;
  int rc = check_options(cmd, argc, e2e, e2e_dir, scenarios, profile, output, plot, write_dir, force);
  if (rc != 0)
    return rc;
  g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)pn_validation_row_free);
  if (e2e ? !pn_validate_e2e(e2e, scenarios, rows, &error)
          : !pn_validate_file(records, profile ? profile : "h100-sxm", rows, &error))
    return pn__cli_fail(error);
  if (write_dir && !write_scenarios(rows, write_dir, force, &error))
    return pn__cli_fail_at(cmd, "--scenarios", error);
  if (plot) {
    g_autofree char *dat = pn_validate_plot_data(rows);
    if ((rc = pn__cli_emit(cmd, "--plot-data", plot, dat)) != 0)
      return rc;
  }
  g_autofree char *report = json ? pn_validate_report_json(rows) : pn_validate_report_text(rows);
  if ((rc = pn__cli_emit(cmd, "--output", output, report)) != 0)
    return rc;
  int n;
  double mape = pn_validate_mape(rows, &n);
  if (n == 0) {
    fprintf(stderr, "%s: %s: no record could be predicted (the report says why each was skipped)\n", cmd,
            e2e ? e2e : records);
    return 2;
  }
  return (max_mape > 0 && mape > max_mape) ? 3 : 0;
}
