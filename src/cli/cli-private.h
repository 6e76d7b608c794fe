/* cli-private.h — what the subcommands of `penumbra` share: their entry points (main.c's table
 * dispatches to them) and how a command reports and fails.
 *
 * Exit status: 0 success; 2 bad input (an option, an operand, a file, JSON, an inconsistent
 * configuration, an output that cannot be written); 1 internal error; 3 a check the command was
 * asked to make did not hold (validate --max-mape, calibrate --check).
 * Errors print one line on stderr: `penumbra: <file>: <json path>: <what was expected>` for an
 * input file, `penumbra <cmd>: <option>: <what was expected>` for an option, and
 * `penumbra <cmd>: <option>: <path>: <what is wrong>` for an output path (checked before any work,
 * io/out.h).
 */
#ifndef PN_CLI_PRIVATE_H
#define PN_CLI_PRIVATE_H

#include <float.h>
#include <glib.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hw/exec.h"
#include "io/file.h"
#include "io/out.h"
#include "io/report.h"
#include "sim/result.h"
#include "sweep/sweep.h"
#include "workload/config.h"

/* A subcommand: argv[0] is "penumbra <name>"; returns the exit status. */
typedef int (*PnCommandFn)(int argc, char **argv);

/* A row of main.c's table of subcommands. A new subcommand needs its row and nothing else to be
 * dispatched, listed by `penumbra --help`, set in the man page (help.c runs its --help) and
 * completed by the bash completion (which asks `penumbra --list-commands` and its --help). */
typedef struct {
  const char *name;
  PnCommandFn fn;
  const char *summary;
} PnCliCommand;

/* The exit statuses, as every --help and the man page print them. */
#define PN_CLI_EXIT_STATUS                                                                                             \
  "Exit status:\n"                                                                                                     \
  "  0  success\n"                                                                                                     \
  "  1  internal error (a bug: please report it)\n"                                                                    \
  "  2  bad input: an option, an operand, a file, JSON, an infeasible configuration, an output that\n"                 \
  "     cannot be written (one line on stderr says which and what was expected)\n"                                     \
  "  3  a check or a target the command was asked for did not hold (validate --max-mape, calibrate\n"                  \
  "     --check, regress beyond its tolerance, plan's deadline or budget unmet)\n"

/* help.c: `penumbra --version`, `--help-man` (the man page from the commands' own --help), and
 * `--list-commands` / `--data-dir` (for the bash completion). Each returns the exit status. */
int pn__cli_version(void);
int pn__cli_help_man(const PnCliCommand *commands, size_t n);
int pn__cli_list(const char *what, const PnCliCommand *commands, size_t n);

int pn__cli_run(int argc, char **argv);
int pn__cli_validate(int argc, char **argv);
int pn__cli_calibrate(int argc, char **argv);
int pn__cli_sweep(int argc, char **argv);
int pn__cli_regress(int argc, char **argv);
int pn__cli_plan(int argc, char **argv);
int pn__cli_import(int argc, char **argv);
int pn__cli_export(int argc, char **argv);
int pn__cli_compare(int argc, char **argv);

/* MPI for `penumbra sweep` (sweep_mpi.c; one process without -DPN_MPI=ON or outside mpirun):
 * start (rank and size), gather every rank's rows into rank 0's result and rank them, stop. */
void pn__cli_mpi_init(int *argc, char ***argv, int *rank, int *size);
void pn__cli_mpi_gather(PnSweepResult *r, int rank, int size);
void pn__cli_mpi_finalize(void);

/* `run --what-if` (whatif.c): each overlap knob of the registry that applies to `base` (loaded
 * from `path` with the `sets`), simulated off and on, reported beside the baseline `base_r` as
 * text or JSON (with `ro`) into *report (g_free). Returns the exit status: 0 when every knob was
 * reported, those refused for the layout included. */
int pn__cli_what_if(const char *path, char **sets, int n_sets, const PnScenario *base, const PnResult *base_r,
                    bool json, const PnReportOptions *ro, char **report);

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
 * part, followed by the exit statuses. A bad option prints "penumbra <name>: <why>" and returns
 * false (exit 2). */
static inline bool pn__cli_parse(const GOptionEntry *entries, const char *parameters, const char *examples, int *argc,
                                 char ***argv)
{
  g_autoptr(GOptionContext) ctx = g_option_context_new(parameters);
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autofree char *description = g_strconcat(examples, "\n" PN_CLI_EXIT_STATUS, NULL);
  g_option_context_set_description(ctx, description);
  g_autoptr(GError) error = NULL;
  if (g_option_context_parse(ctx, argc, argv, &error))
    return true;
  fprintf(stderr, "%s: %s\n", (*argv)[0], error->message);
  return false;
}

/* A bad option: prints "<cmd>: <option>: <why>" (cmd is argv[0], "penumbra <name>") and returns
 * the exit status, 2. */
static inline int G_GNUC_PRINTF(3, 4) pn__cli_bad(const char *cmd, const char *option, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *why = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s: %s\n", cmd, option, why);
  return 2;
}

/* Prints an error about what `option` named (NULL: standard output) as "<cmd>: <option>:
 * <message>" and returns its exit status. */
static inline int pn__cli_fail_at(const char *cmd, const char *option, const GError *error)
{
  if (option != NULL)
    fprintf(stderr, "%s: %s: %s\n", cmd, option, error->message);
  else
    fprintf(stderr, "%s: %s\n", cmd, error->message);
  return pn__cli_status(error);
}

/* ---- numbers on the command line: every numeric option goes through these ---- */

/* The whole of `text` as a finite number, in the C locale whatever the process's ("nan", "inf",
 * "", "5x" are not numbers). */
static inline bool pn__cli_strtod(const char *text, double *out)
{
  char *end = NULL;
  double v  = g_ascii_strtod(text, &end);
  if (end == text || *end != '\0' || !isfinite(v))
    return false;
  *out = v;
  return true;
}

/* Option `option`'s `text` as a number in [min, max] (min DBL_TRUE_MIN: positive), whole when
 * `integer`; otherwise "<cmd>: <option>: expected <expected>, got "<text>"" and false (exit 2). */
static inline bool pn__cli_number(const char *cmd, const char *option, const char *text, double min, double max,
                                  bool integer, const char *expected, double *out)
{
  double v = 0.0;
  if (pn__cli_strtod(text, &v) && v >= min && v <= max && (!integer || v == floor(v))) {
    *out = v;
    return true;
  }
  g_autofree char *q = pn_io_quote(text);
  pn__cli_bad(cmd, option, "expected %s, got %s", expected, q);
  return false;
}

/* A size: a number of bytes, or a number with a binary unit (KiB, MiB, GiB, TiB, or K, M, G, T;
 * "B" for bytes), a space between them allowed: "1073741824", "512MiB", "1.5 GiB". Positive,
 * at most 2^62 bytes; otherwise an error line as pn__cli_number's and false. */
static inline bool pn__cli_bytes(const char *cmd, const char *option, const char *text, guint64 *out)
{
  static const char units[] = "BKMGT"; /* shifts 0, 10, 20, 30, 40 */
  g_autofree char *num      = g_strdup(text);
  char *unit                = num + strlen(num);
  while (unit > num && g_ascii_isalpha(unit[-1]))
    unit--;
  double scale = 0.0, v = 0.0;
  if (*unit == '\0') {
    scale = 1.0;
  } else {
    const char *u = strchr(units, g_ascii_toupper(unit[0]));
    if (u != NULL && (unit[1] == '\0' || (u != units && g_ascii_strcasecmp(unit + 1, "iB") == 0)))
      scale = ldexp(1.0, 10 * (int)(u - units));
  }
  *unit = '\0';
  g_strchomp(num);
  if (scale > 0.0 && pn__cli_strtod(num, &v) && v * scale >= 1.0 && v * scale <= ldexp(1.0, 62)) {
    *out = (guint64)(v * scale);
    return true;
  }
  g_autofree char *q = pn_io_quote(text);
  pn__cli_bad(cmd, option, "expected a size in bytes, or with a unit (KiB, MiB, GiB), e.g. 512MiB, got %s", q);
  return false;
}

/* ---- outputs (io/out.h) ---- */

/* Checks, before any work, the output path given to `option` (NULL: not given, nothing to check);
 * false after printing "<cmd>: <option>: <path>: <why>". */
static inline bool pn__cli_check_output(const char *cmd, const char *option, const char *path)
{
  g_autoptr(GError) error = NULL;
  if (path == NULL || pn_out_check_path(path, &error))
    return true;
  pn__cli_fail_at(cmd, option, error);
  return false;
}

/* "-" given to `option` while the report (`report_path`, NULL: standard output) goes to standard
 * output as well: refused (the two would mix) with an error line, false. */
static inline bool pn__cli_stdout_once(const char *cmd, const char *option, const char *path, const char *report_path)
{
  if (path == NULL || strcmp(path, "-") != 0 || (report_path != NULL && strcmp(report_path, "-") != 0))
    return true;
  pn__cli_bad(cmd, option, "-: standard output carries the report (give the report a file: -o FILE)");
  return false;
}

/* A command's report `text`: to `path`, the file given to `option` (io/out.h: atomically for a
 * regular file), or to standard output when `path` is NULL. Returns the exit status. */
static inline int pn__cli_emit(const char *cmd, const char *option, const char *path, const char *text)
{
  g_autoptr(GError) error = NULL;
  if (pn_out_write_file(path ? path : "-", text, strlen(text), &error))
    return 0;
  return pn__cli_fail_at(cmd, path ? option : NULL, error);
}

#endif
