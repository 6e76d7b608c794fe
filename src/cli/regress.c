/* regress.c — `penumbra regress`: a suite of scenarios re-simulated and held to its committed
 * baseline (regress/regress.h), every run appended to the history database (regress/history.h);
 * --update rewrites the baseline on purpose, --history lists or plots what was recorded. */
#include "regress/regress.h"
#include "cli/cli-private.h"
#include "io/plot.h"
#include "pn_version.h" /* generated at build time (cmake/version.cmake) */
#include "regress/history.h"

typedef struct {
  char *suite, *baseline, *format, *message, *scenario, *plot, *db, *jobs_s;
  char **tolerances;
  gboolean update, history;
} PnRegressArgs;

static void args_clear(PnRegressArgs *a)
{
  g_free(a->suite), g_free(a->baseline), g_free(a->format), g_free(a->message), g_free(a->scenario);
  g_free(a->plot), g_free(a->db), g_free(a->jobs_s);
  g_strfreev(a->tolerances);
}

/* The options that go together, and the tolerances; false after an error line (exit 2). */
static bool check_args(const char *cmd, PnRegressArgs *a, bool *json, PnTolerance *tol, int *threads)
{
  *json = a->format && strcmp(a->format, "json") == 0;
  if (a->format && !*json && strcmp(a->format, "text") != 0) {
    g_autofree char *q = pn_io_quote(a->format);
    return pn__cli_bad(cmd, "--format", "expected \"text\" or \"json\", got %s", q) == 0;
  }
  if (a->update && (a->message == NULL || *a->message == '\0'))
    return pn__cli_bad(cmd, "--update",
                       "needs -m \"why the predictions moved\" (it is kept in the baseline and "
                       "the history)") == 0;
  if (a->message && !a->update)
    return pn__cli_bad(cmd, "--message", "applies only with --update") == 0;
  if (a->history && (a->update || a->tolerances))
    return pn__cli_bad(cmd, "--history", "lists what was recorded: no --update or --tolerance with it") == 0;
  if (!a->history && (a->scenario || a->plot))
    return pn__cli_bad(cmd, a->scenario ? "--scenario" : "--plot", "applies only with --history") == 0;
  g_autoptr(GError) error = NULL;
  if (a->plot && !pn_plot_check_path(a->plot, &error))
    return pn__cli_fail_at(cmd, "--plot", error) == 0;
  pn_tolerance_init(tol);
  for (int i = 0; a->tolerances && a->tolerances[i]; i++)
    if (!pn_tolerance_apply(tol, a->tolerances[i], &error))
      return pn__cli_fail_at(cmd, "--tolerance", error) == 0;
  double v = 0.0;
  if (a->jobs_s && !pn__cli_number(cmd, "-j", a->jobs_s, 1, 1024, true, "1 to 1024 threads", &v))
    return false;
  *threads = v > 0 ? (int)v : (int)g_get_num_processors();
  return pn__cli_check_output(cmd, "--plot", a->plot);
}

static int history(const char *cmd, const PnRegressArgs *a, const char *db, bool json)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PnHistory) h  = pn_history_open(db, &error);
  if (h == NULL)
    return pn__cli_fail_at(cmd, "--db", error);
  g_autoptr(GArray) rows = pn_history_rows(h, a->scenario, &error);
  if (rows == NULL)
    return pn__cli_fail_at(cmd, "--db", error);
  if (a->scenario && rows->len == 0) {
    g_autofree char *q = pn_io_quote(a->scenario);
    return pn__cli_bad(cmd, "--scenario", "%s: no prediction of this scenario in %s", q, db);
  }
  if (a->plot) {
    g_autofree char *data    = pn_history_plot_data(rows);
    const char *const vars[] = {"title", a->scenario ? a->scenario : "every scenario of the suite", NULL, NULL};
    if (!pn_plot_render("trend.gp", data, vars, a->plot, &error))
      return pn__cli_fail_at(cmd, "--plot", error);
  }
  g_autofree char *text = json ? pn_history_json(rows) : pn_history_text(rows);
  return pn__cli_emit(cmd, NULL, NULL, text);
}

/* The suite against its baseline; with --update the baseline rewritten. */
static int check(const char *cmd, const PnRegressArgs *a, const char *db, bool json, const PnTolerance *tol,
                 int threads)
{
  g_autofree char *baseline =
      a->baseline ? g_strdup(a->baseline) : g_build_filename(a->suite, PN_REGRESS_BASELINE, NULL);
  if (a->update && !pn__cli_check_output(cmd, "--baseline", baseline))
    return 2;
  g_autoptr(GError) error    = NULL;
  g_autoptr(PnBaseline) then = NULL;
  if (!a->update || g_file_test(baseline, G_FILE_TEST_EXISTS))
    then = pn_baseline_load(baseline, &error);
  else
    then = pn_baseline_new(); /* the suite's first baseline */
  if (then == NULL)
    return pn__cli_fail(error);
  g_autoptr(PnBaseline) now = pn_regress_simulate(a->suite, threads, &error);
  if (now == NULL)
    return pn__cli_fail(error);
  g_autoptr(PnRegressReport) r = pn_regress_compare(now, then, tol);
  g_autoptr(PnHistory) h       = pn_history_open(db, &error);
  if (h == NULL || !pn_history_append(h, now, PN_VERSION, PN_GIT_COMMIT, a->update ? a->message : NULL, &error))
    return pn__cli_fail_at(cmd, "--db", error);
  if (a->update) {
    g_free(now->reason), g_free(now->version), g_free(now->commit);
    now->reason           = g_strdup(a->message);
    now->version          = g_strdup(PN_VERSION);
    now->commit           = g_strdup(PN_GIT_COMMIT);
    g_autofree char *text = pn_baseline_json(now);
    if (!pn_out_write_file(baseline, text, strlen(text), &error))
      return pn__cli_fail_at(cmd, "--baseline", error);
  }
  g_autofree char *report = json ? pn_regress_report_json(r, tol) : pn_regress_report_text(r, tol);
  int rc                  = pn__cli_emit(cmd, NULL, NULL, report);
  if (rc == 0 && a->update)
    fprintf(stderr, "%s: %s rewritten (%u scenarios): %s\n", cmd, baseline, now->entries->len, a->message);
  return rc != 0 ? rc : a->update || pn_regress_passed(r) ? 0 : 3;
}

int pn__cli_regress(int argc, char **argv)
{
  PnRegressArgs a        = {0};
  GOptionEntry entries[] = {
      {"suite", 0, 0, G_OPTION_ARG_FILENAME, &a.suite, "The suite's directory (default scenarios/suite)", "DIR"},
      {"baseline", 0, 0, G_OPTION_ARG_FILENAME, &a.baseline, "The baseline (default DIR/baseline.json)", "FILE"},
      {"tolerance", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.tolerances,
       "Largest change allowed, in percent (default 0.5%); METRIC=PCT for one metric or family (repeatable)",
       "[METRIC=]PCT%"},
      {"format", 'f', 0, G_OPTION_ARG_STRING, &a.format, "Output format: text (default) or json", "FORMAT"},
      {"jobs", 'j', 0, G_OPTION_ARG_STRING, &a.jobs_s, "Threads (default: every core)", "N"},
      {"update", 0, 0, G_OPTION_ARG_NONE, &a.update, "Rewrite the baseline with the new predictions (needs -m)", NULL},
      {"message", 'm', 0, G_OPTION_ARG_STRING, &a.message, "--update: why the predictions moved", "TEXT"},
      {"history", 0, 0, G_OPTION_ARG_NONE, &a.history, "List the recorded predictions instead", NULL},
      {"scenario", 0, 0, G_OPTION_ARG_STRING, &a.scenario, "--history: only this scenario", "NAME"},
      {"plot", 0, 0, G_OPTION_ARG_FILENAME, &a.plot, "--history: draw the TFLOP/s/GPU over runs (gnuplot)",
       "trend.svg|png"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &a.db,
       "The history database (default $XDG_DATA_HOME/penumbra/history.db, else ~/.local/share/penumbra/)", "PATH"},
      {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(entries, "- hold a suite's predictions to its baseline",
                     "Exit status: 0 every change within tolerance, 3 a change beyond it (or a scenario on one side\n"
                     "only), 2 bad input.\n\n"
                     "Examples:\n"
                     "  penumbra regress\n"
                     "  penumbra regress --tolerance 0.5% --tolerance exposed_comm_s=2% -f json\n"
                     "  penumbra regress --update -m \"P2P latency from the new microbenchmark\"\n"
                     "  penumbra regress --history --scenario llama3-8b-h100-8gpu --plot trend.svg\n",
                     &argc, &argv)) {
    args_clear(&a);
    return 2;
  }
  const char *cmd = argv[0];
  bool json       = false;
  int threads     = 1;
  PnTolerance tol;
  int rc = 2;
  if (argc != 1)
    fprintf(stderr, "%s: takes no operand (the suite is --suite DIR; see penumbra regress --help)\n", cmd);
  else if (check_args(cmd, &a, &json, &tol, &threads)) {
    if (a.suite == NULL)
      a.suite = g_strdup("scenarios/suite");
    g_autofree char *db = a.db ? g_strdup(a.db) : pn_history_default_path();
    rc                  = a.history ? history(cmd, &a, db, json) : check(cmd, &a, db, json, &tol, threads);
  }
  args_clear(&a);
  return rc;
}
