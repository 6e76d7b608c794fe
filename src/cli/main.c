/* main.c — the `penumbra` command: subcommands over io/ and sim/.
 *
 * Exit status: 0 success; 2 bad input (file, JSON, inconsistent configuration); 1 internal error.
 * Errors print one line on stderr: `penumbra: <file>: <json path>: <what was expected>`.
 */
#include <stdio.h>
#include <string.h>

#include "hw/exec.h"
#include "io/report.h"
#include "io/scenario.h"
#include "io/validate.h"
#include "sim/sim.h"

#ifndef PN_DATA_DIR
#define PN_DATA_DIR "."
#endif

#ifndef PN_VERSION
#define PN_VERSION "dev"
#endif

typedef int (*PnCommandFn)(int argc, char **argv);

typedef struct {
  const char *name;
  PnCommandFn fn;
  const char *summary;
} PnCommand;

static int fail(const GError *error)
{
  fprintf(stderr, "penumbra: %s\n", error->message);
  return error->domain == PN_EXEC_ERROR ? 1 : 2;
}

static int cmd_run(int argc, char **argv)
{
  g_auto(GStrv) sets       = NULL;
  g_autofree char *format  = NULL;
  g_autofree char *output  = NULL;
  int iterations           = 0;
  GOptionEntry entries[]   = {
    {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario value (repeatable)", "dotted.key=value"},
    {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text (default) or json", "FORMAT"},
    {"iterations", 'n', 0, G_OPTION_ARG_INT, &iterations, "Simulate N iterations (overrides training.iterations)", "N"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE (atomically) instead of stdout", "FILE"},
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
  g_autoptr(PnResult) r = pn_sim_run(sc, warnings, &error);
  if (!r) {
    g_prefix_error(&error, "%s: ", argv[1]);
    return fail(error);
  }
  g_autofree char *report = json ? pn_report_json(sc, r) : pn_report_text(sc, r);
  if (output) {
    if (!pn_io_write_file_atomic(output, report, strlen(report), &error))
      return fail(error);
  } else {
    fputs(report, stdout);
  }
  return 0;
}

static int cmd_validate(int argc, char **argv)
{
  g_autofree char *format  = NULL;
  g_autofree char *profile = NULL;
  g_autofree char *output  = NULL;
  double max_mape          = 0.0;
  GOptionEntry entries[]   = {
    {"profile", 'p', 0, G_OPTION_ARG_STRING, &profile, "Hardware profile for H100 records (default h100-sxm)", "NAME"},
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
  if (!pn_validate_file(records, profile ? profile : "h100-sxm", rows, &error))
    return fail(error);
  g_autofree char *report = json ? pn_validate_report_json(rows) : pn_validate_report_text(rows);
  if (output) {
    if (!pn_io_write_file_atomic(output, report, strlen(report), &error))
      return fail(error);
  } else {
    fputs(report, stdout);
  }
  int n;
  double mape = pn_validate_mape(rows, &n);
  if (n == 0) {
    fprintf(stderr, "penumbra validate: %s: no record could be predicted\n", records);
    return 1;
  }
  return (max_mape > 0 && mape > max_mape) ? 3 : 0;
}

static const PnCommand commands[] = {
  {"run", cmd_run, "simulate one scenario and report iteration time, throughput and exposed communication"},
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
