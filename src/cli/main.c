/* main.c — the `penumbra` command: a table of subcommands (one file each: run.c, sweep.c,
 * validate.c, calibrate.c) and the dispatch to them. Exit statuses and error lines: cli-private.h. */
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "io/file.h"
#include "pn_version.h" /* generated at build time (cmake/version.cmake) */

typedef struct {
  const char *name;
  PnCommandFn fn;
  const char *summary;
} PnCommand;

static const PnCommand commands[] = {
    {"run", pn__cli_run, "simulate one scenario and report iteration time, throughput and exposed communication"},
    {"sweep", pn__cli_sweep, "simulate every layout of a job that Megatron accepts and that fits, ranked by TFLOP/s"},
    {"plan", pn__cli_plan, "how many GPUs, of which kind, for how long and at what cost: a capacity-planning report"},
    {"calibrate", pn__cli_calibrate,
     "fit hardware-profile tables from microbenchmark results, or check a profile against them"},
    {"validate", pn__cli_validate, "predict published measured runs and report the step-time error"},
    {"regress", pn__cli_regress, "re-simulate a suite of scenarios and hold its predictions to a baseline"},
    {"import", pn__cli_import, "write a scenario from a Megatron-LM launch line (import megatron-args -- ...)"},
    {"export", pn__cli_export, "print a scenario as a Megatron-LM launch line (export megatron-args FILE)"},
    {"compare", pn__cli_compare, "compare a Megatron-LM training log's step time with the prediction"},
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
#ifdef PN_MPI
    printf("penumbra %s (%s) with MPI\n", PN_VERSION, PN_GIT_COMMIT);
#else
    printf("penumbra %s (%s)\n", PN_VERSION, PN_GIT_COMMIT);
#endif
    return 0;
  }
  for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(argv[1], commands[i].name) == 0) {
      g_autofree char *prog = g_strdup_printf("penumbra %s", commands[i].name);
      argv[1]               = prog;
      return commands[i].fn(argc - 1, argv + 1);
    }
  g_autofree char *q = pn_io_quote(argv[1]);
  fprintf(stderr, "penumbra: unknown command %s (penumbra --help lists the commands)\n", q);
  return 2;
}
