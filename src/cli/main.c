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
#include "sim/sim.h"

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

static const PnCommand commands[] = {
  {"run", cmd_run, "simulate one scenario and report iteration time, throughput and exposed communication"},
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
