/* validate.c — `penumbra validate`: published (or our own end-to-end) measured runs predicted
 * and compared (io/validate.h); exit 3 when the mean absolute error exceeds --max-mape. */
#include "io/validate.h"
#include "cli/cli-private.h"

int pn__cli_validate(int argc, char **argv)
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
  if (!pn__cli_parse(entries, "[RECORDS.json] - predict published measured runs and report the step-time error",
                     "Examples:\n"
                     "  penumbra validate\n"
                     "    (the records of tests/data/validation/published-visible.json)\n"
                     "  penumbra validate tests/data/validation/published-visible.json --max-mape 15\n"
                     "  penumbra validate --e2e hwprofiles/calibration/h200-sxm/e2e-results.json -f json\n"
                     "  penumbra validate --plot-data validation.dat\n",
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
    fprintf(stderr, "penumbra validate: --format: expected \"text\" or \"json\", got \"%s\"\n", format);
    return 2;
  }
  g_autofree char *dflt = g_build_filename(PN_DATA_DIR, "tests", "data", "validation", "published-visible.json", NULL);
  const char *records   = argc == 2 ? argv[1] : dflt;
  if (!pn__cli_stdout_once(cmd, "--plot-data", plot, output) || !pn__cli_check_output(cmd, "--output", output) ||
      !pn__cli_check_output(cmd, "--plot-data", plot))
    return 2;
  g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)pn_validation_row_free);
  g_autofree char *dflt_e2e = g_build_filename(PN_DATA_DIR, "microbench", "e2e", "scenarios", NULL);
  if (e2e ? !pn_validate_e2e(e2e, e2e_dir ? e2e_dir : dflt_e2e, rows, &error)
          : !pn_validate_file(records, profile ? profile : "h100-sxm", rows, &error))
    return pn__cli_fail(error);
  int rc = 0;
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
    fprintf(stderr, "penumbra validate: %s: no record could be predicted\n", records);
    return 1;
  }
  return (max_mape > 0 && mape > max_mape) ? 3 : 0;
}
