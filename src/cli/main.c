/* main.c — the `penumbra` command: a table of subcommands (one file each: run.c, sweep.c,
 * validate.c, calibrate.c) and the dispatch to them. Exit statuses and error lines: cli-private.h. */
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "core/mem.h"
#include "io/file.h"

static const PnCliCommand commands[] = {
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
  fprintf(to, "usage: penumbra COMMAND [OPTIONS] ...\n       penumbra --help | --version\n\ncommands:\n");
  for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(to,
          "\n`penumbra COMMAND --help` describes each command, with examples.\n\n"
          "Examples:\n"
          "  penumbra import megatron-args -o job.json -- torchrun --nproc_per_node 8 pretrain_gpt.py ...\n"
          "  penumbra run scenarios/llama3-8b-h100-8gpu.json --what-if\n"
          "  penumbra compare train.log\n\n%s",
          PN_CLI_EXIT_STATUS);
}

int main(int argc, char **argv)
{
  pn_mem_keep_freed();
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0)
    return pn__cli_version();
  if (strcmp(argv[1], "--help-man") == 0)
    return pn__cli_help_man(commands, G_N_ELEMENTS(commands));
  if (strcmp(argv[1], "--list-commands") == 0 || strcmp(argv[1], "--data-dir") == 0)
    return pn__cli_list(argv[1], commands, G_N_ELEMENTS(commands));
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
