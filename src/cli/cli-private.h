/* cli-private.h — what the subcommands of `penumbra` share: their entry points (main.c's table
 * dispatches to them) and how a command reports and fails.
 *
 * Exit status: 0 success; 2 bad input (file, JSON, inconsistent configuration); 1 internal error;
 * 3 a check the command was asked to make did not hold (validate --max-mape, calibrate --check).
 * Errors print one line on stderr: `penumbra: <file>: <json path>: <what was expected>`.
 */
#ifndef PN_CLI_PRIVATE_H
#define PN_CLI_PRIVATE_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hw/exec.h"
#include "io/file.h"
#include "io/report.h"
#include "sim/result.h"
#include "sweep/sweep.h"
#include "workload/config.h"

#ifndef PN_DATA_DIR
#define PN_DATA_DIR "."
#endif

/* A subcommand: argv[0] is "penumbra <name>"; returns the exit status. */
typedef int (*PnCommandFn)(int argc, char **argv);

int pn__cli_run(int argc, char **argv);
int pn__cli_validate(int argc, char **argv);
int pn__cli_calibrate(int argc, char **argv);
int pn__cli_sweep(int argc, char **argv);

/* MPI for `penumbra sweep` (sweep_mpi.c; one process without -DPN_MPI=ON or outside mpirun):
 * start (rank and size), gather every rank's rows into rank 0's result and rank them, stop. */
void pn__cli_mpi_init(int *argc, char ***argv, int *rank, int *size);
void pn__cli_mpi_gather(PnSweepResult *r, int rank, int size);
void pn__cli_mpi_finalize(void);

/* `run --what-if` (whatif.c): each overlap knob of the registry that applies to `base` (loaded
 * from `path` with the `sets`), simulated off and on, reported beside the baseline `base_r` as
 * text or JSON (with `ro`) on stdout or `output`. Returns the exit status: 0 when every knob was
 * reported, those refused for the layout included. */
int pn__cli_what_if(const char *path, char **sets, int n_sets, const PnScenario *base, const PnResult *base_r,
                    bool json, const PnReportOptions *ro, const char *output);

/* The exit status an error gives. */
static inline int pn__cli_status(const GError *error)
{
  /* an executor failure is ours (exit 1), unless the inputs were absurd enough to overflow time */
  return (error->domain == PN_EXEC_ERROR && error->code != PN_EXEC_ERROR_HORIZON) ? 1 : 2;
}

/* Prints the error and returns its exit status. */
static inline int pn__cli_fail(const GError *error)
{
  fprintf(stderr, "penumbra: %s\n", error->message);
  return pn__cli_status(error);
}

/* Parses a subcommand's options into `entries`' targets and leaves its operands in *argc / *argv
 * (argv[0] is "penumbra <name>"). `parameters` is --help's first line, `examples` its last
 * part. A bad option prints "penumbra <name>: <why>" and returns false (exit 2). */
static inline bool pn__cli_parse(const GOptionEntry *entries, const char *parameters, const char *examples, int *argc,
                                 char ***argv)
{
  g_autoptr(GOptionContext) ctx = g_option_context_new(parameters);
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(ctx, examples);
  g_autoptr(GError) error = NULL;
  if (g_option_context_parse(ctx, argc, argv, &error))
    return true;
  fprintf(stderr, "%s: %s\n", (*argv)[0], error->message);
  return false;
}

/* A command's report: to FILE (written atomically) with -o, else to stdout. */
static inline int pn__cli_emit(const char *output, const char *text)
{
  g_autoptr(GError) error = NULL;
  if (!output) {
    fputs(text, stdout);
    return 0;
  }
  return pn_io_write_file_atomic(output, text, strlen(text), &error) ? 0 : pn__cli_fail(error);
}

#endif
