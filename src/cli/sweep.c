#define _POSIX_C_SOURCE 200809L /* sigaction */
/* sweep.c — `penumbra sweep`: many layouts of one job, ranked (sweep/sweep.h). The command reads
 * the options, builds the base scenario and the space, runs the two passes with a progress line
 * on a terminal, and writes the table and the files. Ctrl-C stops at the next layout and writes
 * what is done, saying so. */
#include <math.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli-private.h"
#include "io/out.h"
#include "io/scenario.h"
#include "io/space.h"
#include "io/validate.h"
#include "pn_version.h" /* generated at build time (cmake/version.cmake) */
#include "sweep/output.h"
#include "sweep/space.h"

static volatile gint interrupted;

static void on_sigint(int sig)
{
  (void)sig;
  g_atomic_int_set(&interrupted, 1);
}

typedef struct {
  char *model, *profile, *gpus, *precision, *space_file, *csv, *json, *rejected;
  char *seq_length_s, *global_batch_size_s, *top_s, *threads_s; /* numbers: pn__cli_number */
  gint64 seq_length, global_batch_size;
  char **vary, **sets;
  gboolean all_overlap, exact, layouts;
  gint top, threads;
} SweepArgs;

/* "N" or "A:B" into [min, max]. */
static gboolean parse_gpus(const char *text, int64_t *min, int64_t *max, GError **error)
{
  char *end         = NULL;
  const char *colon = strchr(text, ':');
  *min              = g_ascii_strtoll(text, &end, 10);
  *max              = colon ? g_ascii_strtoll(colon + 1, &end, 10) : *min;
  if (end == NULL || *end != '\0' || (colon && end == colon + 1) || *min < 1 || *max < *min || *max > 10000000) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
                "--gpus: expected a GPU count N or a range MIN:MAX (1 <= MIN <= MAX <= 10000000), got \"%.40s\"", text);
    return FALSE;
  }
  return TRUE;
}

/* The base: the scenario file, or a scenario written from --model and friends (one GPU, so that
 * the loader's layout checks pass whatever the counts the axes will set). */
static PnScenario *load_base(const SweepArgs *a, const char *path, GError **error)
{
  int n_sets = a->sets ? (int)g_strv_length(a->sets) : 0;
  if (path != NULL)
    return pn_scenario_load(path, (const char *const *)a->sets, n_sets, NULL, error);
  const char *missing = a->model == NULL            ? "--model"
                        : a->gpus == NULL           ? "--gpus"
                        : a->seq_length <= 0        ? "--seq-length"
                        : a->global_batch_size <= 0 ? "--global-batch-size"
                                                    : NULL;
  if (missing != NULL) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
                "%s: required without a scenario file (give SCENARIO.json, or --model, --gpus, --seq-length and "
                "--global-batch-size)",
                missing);
    return NULL;
  }
  g_autofree char *model = g_strescape(a->model, NULL), *profile = g_strescape(a->profile, NULL);
  g_autofree char *prec = g_strescape(a->precision, NULL);
  g_autofree char *json =
      g_strdup_printf("{\"schema_version\": 1, \"model\": \"%s\", \"hardware\": {\"profile\": \"%s\", \"num_gpus\": 1},"
                      " \"training\": {\"seq_length\": %" G_GINT64_FORMAT ", \"global_batch_size\": %" G_GINT64_FORMAT
                      ", \"precision\": \"%s\"}}",
                      model, profile, a->seq_length, a->global_batch_size, prec);
  return pn_scenario_load_string(json, "sweep options", (const char *const *)a->sets, n_sets, NULL, error);
}

typedef struct {
  const PnSweepSpec *spec;
  PnSweepResult *result;
  PnSweepProgress *progress;
  bool simulate;
  gint finished;
} PassJob;

static gpointer pass_thread(gpointer data)
{
  PassJob *job = data;
  if (job->simulate)
    pn_sweep_simulate(job->spec, job->result, job->progress);
  else
    pn_sweep_check(job->spec, job->result, job->progress);
  g_atomic_int_set(&job->finished, 1);
  return NULL;
}

/* Runs a pass on its own thread while this one draws the progress line on a terminal:
 * done / total, rate, ETA. Nothing on a pipe. */
static void run_pass(const PnSweepSpec *spec, PnSweepResult *r, bool simulate, bool show)
{
  PnSweepProgress progress = {0};
  PassJob job              = {.spec = spec, .result = r, .progress = &progress, .simulate = simulate};
  bool tty                 = show && isatty(STDERR_FILENO);
  gint64 t0                = g_get_monotonic_time();
  GThread *t               = g_thread_new("sweep-pass", pass_thread, &job);
  while (!g_atomic_int_get(&job.finished)) {
    g_usleep(100000);
    if (!tty)
      continue;
    double dt   = (g_get_monotonic_time() - t0) / 1e6;
    gint done   = g_atomic_int_get(&progress.done);
    double rate = dt > 0 ? done / dt : 0.0;
    double eta  = rate > 0 ? (progress.total - done) / rate : 0.0;
    fprintf(stderr, "\r\033[K%s %d / %" G_GINT64_FORMAT "  %.0f %s/s  ETA %.0f s", simulate ? "simulating" : "checking",
            done, progress.total, rate, simulate ? "layouts" : "candidates", eta);
  }
  g_thread_join(t);
  if (tty)
    fprintf(stderr, "\r\033[K");
}

static void out_sink(const char *data, gsize len, gpointer user) { pn_out_write(user, data, len); }

static int write_outputs(const char *cmd, const SweepArgs *a, const PnSweepSpec *spec, const PnSweepResult *r,
                         const PnSweepReportOptions *o)
{
  if (a->csv != NULL) {
    g_autofree char *csv = pn_sweep_csv(spec, r, o);
    int rc               = pn__cli_emit(cmd, "--csv", a->csv, csv);
    if (rc != 0)
      return rc;
  }
  if (a->json != NULL) {
    g_autofree char *json = pn_sweep_json(spec, r, o);
    int rc                = pn__cli_emit(cmd, "--json", a->json, json);
    if (rc != 0)
      return rc;
  }
  if (a->rejected != NULL) {
    g_autoptr(GError) error = NULL;
    PnOut *out              = pn_out_open(a->rejected, &error);
    if (out == NULL)
      return pn__cli_fail_at(cmd, "--rejected", error);
    pn_sweep_write_rejected(spec, out_sink, out);
    if (!pn_out_commit(out, &error))
      return pn__cli_fail_at(cmd, "--rejected", error);
  }
  return 0;
}

/* Every output path, before any work (io/out.h); at most one of them on standard output ("-"),
 * where the table goes otherwise. */
static bool check_outputs(const char *cmd, const SweepArgs *a)
{
  const char *paths[][2] = {{"--csv", a->csv}, {"--json", a->json}, {"--rejected", a->rejected}};
  for (gsize i = 0; i < G_N_ELEMENTS(paths); i++)
    if (!pn__cli_check_output(cmd, paths[i][0], paths[i][1]))
      return false;
  for (gsize i = 0; i < G_N_ELEMENTS(paths); i++)
    if (paths[i][1] != NULL && strcmp(paths[i][1], "-") == 0) {
      pn__cli_bad(cmd, paths[i][0], "standard output carries the ranked table: give a file");
      return false;
    }
  return true;
}

/* The axes: --space, then each --vary, then the defaults around them (space.h). */
static gboolean build_space(const SweepArgs *a, bool from_model, PnSweepSpec *spec, GError **error)
{
  PnSpaceOptions o          = {.layout = from_model || a->layouts, .all_overlap = a->all_overlap};
  g_autoptr(GPtrArray) ents = g_ptr_array_new_with_free_func((GDestroyNotify)pn_space_entry_free);
  o.entries                 = ents;
  if (a->gpus != NULL && !parse_gpus(a->gpus, &o.gpus_min, &o.gpus_max, error))
    return FALSE;
  if (a->space_file != NULL && !pn_space_file_load(a->space_file, ents, error))
    return FALSE;
  for (char **v = a->vary; v != NULL && *v != NULL; v++) {
    PnSpaceEntry *e = pn_space_entry_parse(*v, error);
    if (e == NULL)
      return FALSE;
    g_ptr_array_add(ents, e);
  }
  return pn_sweep_space_build(spec, &o, error);
}

/* The numeric options, through the command line's one number parser (finite, whole, in range). */
static bool parse_numbers(const char *cmd, SweepArgs *a)
{
  double v = 0.0;
  if (a->seq_length_s &&
      !pn__cli_number(cmd, "--seq-length", a->seq_length_s, 1, 100000000, true, "a whole number from 1 to 1e8", &v))
    return false;
  a->seq_length = a->seq_length_s ? (gint64)v : 0;
  if (a->global_batch_size_s && !pn__cli_number(cmd, "--global-batch-size", a->global_batch_size_s, 1, 1000000000, true,
                                                "a whole number from 1 to 1e9", &v))
    return false;
  a->global_batch_size = a->global_batch_size_s ? (gint64)v : 0;
  v                    = 20;
  if (a->top_s && !pn__cli_number(cmd, "--top", a->top_s, 0, G_MAXINT, true, "0 (all) or a count of rows", &v))
    return false;
  a->top = (gint)v;
  v      = 0;
  if (a->threads_s && !pn__cli_number(cmd, "-j", a->threads_s, 1, 1024, true, "1 to 1024 threads", &v))
    return false;
  a->threads = (gint)v;
  return true;
}

static gboolean check_options(const SweepArgs *a, GError **error)
{
  if (strcmp(a->precision, "bf16") != 0 && strcmp(a->precision, "fp8") != 0) {
    g_autofree char *q = pn_io_quote(a->precision);
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID, "--precision: expected bf16 or fp8, got %s", q);
    return FALSE;
  }
  return TRUE;
}

/* No layout to simulate: say which rule removed the most, or that memory did. */
static int nothing_accepted(const PnSweepResult *r)
{
  if (r->over_memory > 0 &&
      (r->reasons->len == 0 || r->over_memory >= g_array_index(r->reasons, PnSweepReason, 0).count))
    fprintf(stderr,
            "penumbra sweep: no layout of the space fits: %" G_GUINT64_FORMAT
            " accepted layouts exceed the GPU's memory (the closest by %.1f GiB)\n",
            r->over_memory, r->over_memory_least_gib);
  else if (r->reasons->len > 0)
    fprintf(stderr,
            "penumbra sweep: no valid layout in the space: the most frequent reason (%" G_GUINT64_FORMAT
            " of %" G_GUINT64_FORMAT " candidates): %s\n",
            g_array_index(r->reasons, PnSweepReason, 0).count, r->candidates,
            g_array_index(r->reasons, PnSweepReason, 0).reason);
  else
    fprintf(stderr, "penumbra sweep: the space is empty\n");
  return 2;
}

static int sweep_main(SweepArgs *a, int argc, char **argv, int rank, int size)
{
  /* first of all: a Ctrl-C while the base loads must not kill the process before the handler */
  struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND};
  sigaction(SIGINT, &sa, NULL);
  g_autoptr(GError) error = NULL;
  if (argc > 2 || (argc == 2 && a->model != NULL)) {
    fprintf(stderr, "penumbra sweep: give one scenario file or --model, not both (see --help)\n");
    return 2;
  }
  if (!parse_numbers(argv[0], a))
    return 2;
  if (!check_options(a, &error))
    return pn__cli_fail(error);
  if (!check_outputs(argv[0], a))
    return 2;
  g_autoptr(PnScenario) base = load_base(a, argc == 2 ? argv[1] : NULL, &error);
  if (base == NULL)
    return pn__cli_fail(error);
  PnSweepSpec spec          = {.base    = base,
                               .threads = a->threads > 0 ? a->threads : (int)g_get_num_processors(),
                               .part    = rank,
                               .parts   = size,
                               .exact   = a->exact,
                               .cancel  = &interrupted};
  spec.axes                 = g_ptr_array_new_with_free_func((GDestroyNotify)pn_sweep_axis_free);
  g_autoptr(GPtrArray) axes = spec.axes;
  if (!build_space(a, argc < 2, &spec, &error))
    return pn__cli_fail(error);
  if (pn_sweep_size(&spec) == 0) {
    fprintf(stderr, "penumbra sweep: the space has more than 2^62 candidates: fix some axes\n");
    return 2;
  }

  g_autoptr(PnSweepResult) r = pn_sweep_result_new();
  run_pass(&spec, r, false, rank == 0);
  g_autofree char *split = pn_sweep_text_space(&spec, r);
  if (rank == 0)
    fputs(split, stdout), fflush(stdout);
  if (r->accepted == 0 && !r->interrupted)
    return rank == 0 ? nothing_accepted(r) : 2;
  if (!r->interrupted)
    run_pass(&spec, r, true, rank == 0);
  pn__cli_mpi_gather(r, rank, size);
  if (rank != 0)
    return 0;

  g_autofree char *family = NULL;
  PnSweepReportOptions o  = {.version = PN_VERSION, .commit = PN_GIT_COMMIT, .top = a->top};
  o.source                = argc == 2 ? argv[1] : a->model;
  pn_validate_family_error(base->model.name, &o.error_pct, &o.error_n, &family);
  o.error_family         = family ? family : "no records";
  g_autofree char *table = pn_sweep_text_table(&spec, r, &o);
  fputs("\n", stdout);
  fputs(table, stdout);
  int status = write_outputs(argv[0], a, &spec, r, &o);
  if (r->interrupted) {
    fprintf(stderr,
            "penumbra sweep: interrupted: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
            " layouts simulated; the table and files hold those\n",
            r->simulated, r->accepted);
    return status ? status : 130;
  }
  return status;
}

static const char examples[] =
    "Examples:\n"
    "  penumbra sweep --model llama3-70b --profile h100-sxm --gpus 256 --seq-length 8192 --global-batch-size 512\n"
    "  penumbra sweep --model llama3-70b --gpus 64:1024 --seq-length 8192 --global-batch-size 512 --top 10\n"
    "    (every whole number of nodes from 64 to 1,024 GPUs)\n"
    "  penumbra sweep scenarios/llama3-70b-h100-64gpu.json --vary parallel.tensor_model_parallel_size=2,4,8 \\\n"
    "      --vary training.micro_batch_size=1,2\n"
    "  penumbra sweep ... --all-overlap --csv out.csv --json out.json -j 2\n"
    "\n"
    "With --model, tensor, pipeline, virtual pipeline, context (and expert) sizes, the micro-batch size and\n"
    "the recompute granularity vary; with a scenario file only the axes given by --vary / --space do\n"
    "(--layouts adds the default layout axes, and the table says where the scenario's own layout ranks).\n"
    "Overlap switches take the value the recipes' gating gives them unless an axis names them;\n"
    "--all-overlap opens every switch of the overlap registry. The space's size and how it splits are\n"
    "printed before simulating; the CSV and JSON hold every simulated layout (--top limits the table).";

int pn__cli_sweep(int argc, char **argv)
{
  /* the string defaults are set after parsing: GOption replaces a value without freeing the one before */
  SweepArgs a                  = {.top = 20};
  const GOptionEntry entries[] = {
      {"model", 0, 0, G_OPTION_ARG_STRING, &a.model, "Model name (models/) or file, without a scenario", "NAME"},
      {"profile", 0, 0, G_OPTION_ARG_STRING, &a.profile, "Hardware profile (default h100-sxm)", "NAME"},
      {"gpus", 0, 0, G_OPTION_ARG_STRING, &a.gpus, "GPU count, or a range of whole nodes", "N|MIN:MAX"},
      {"seq-length", 0, 0, G_OPTION_ARG_STRING, &a.seq_length_s, "Sequence length (with --model)", "N"},
      {"global-batch-size", 0, 0, G_OPTION_ARG_STRING, &a.global_batch_size_s, "Global batch size (with --model)", "N"},
      {"precision", 0, 0, G_OPTION_ARG_STRING, &a.precision, "bf16 (default) or fp8 (with --model)", "P"},
      {"vary", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.vary, "Vary or fix a scenario key (repeatable)", "KEY=V1,V2"},
      {"space", 0, 0, G_OPTION_ARG_FILENAME, &a.space_file, "Axes from a JSON object of keys and values", "FILE"},
      {"layouts", 0, 0, G_OPTION_ARG_NONE, &a.layouts,
       "With a scenario file, also vary the default layout axes around it", NULL},
      {"all-overlap", 0, 0, G_OPTION_ARG_NONE, &a.all_overlap, "Open every overlap switch of the registry", NULL},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.sets, "Override a key of the base scenario", "KEY=VALUE"},
      {"top", 0, 0, G_OPTION_ARG_STRING, &a.top_s, "Rows in the table on stdout (default 20, 0: all)", "N"},
      {"csv", 0, 0, G_OPTION_ARG_FILENAME, &a.csv, "Write every simulated layout as CSV", "FILE"},
      {"json", 0, 0, G_OPTION_ARG_FILENAME, &a.json, "Write the sweep as JSON", "FILE"},
      {"rejected", 0, 0, G_OPTION_ARG_FILENAME, &a.rejected, "Write every rejected layout and why, as CSV", "FILE"},
      {"exact", 0, 0, G_OPTION_ARG_NONE, &a.exact, "Simulate every micro-batch (no steady-state fast-forward)", NULL},
      {"jobs", 'j', 0, G_OPTION_ARG_STRING, &a.threads_s, "Threads (default: every core)", "N"},
      {NULL}};
  int status = 2;
  if (pn__cli_parse(entries, "[SCENARIO.json] - rank the layouts of one training job", examples, &argc, &argv)) {
    a.profile   = a.profile ? a.profile : g_strdup("h100-sxm");
    a.precision = a.precision ? a.precision : g_strdup("bf16");
    int rank, size;
    pn__cli_mpi_init(&argc, &argv, &rank, &size);
    status = sweep_main(&a, argc, argv, rank, size);
    pn__cli_mpi_finalize();
  }
  g_free(a.model), g_free(a.profile), g_free(a.gpus), g_free(a.precision), g_free(a.space_file);
  g_free(a.csv), g_free(a.json), g_free(a.rejected);
  g_free(a.seq_length_s), g_free(a.global_batch_size_s), g_free(a.top_s), g_free(a.threads_s);
  g_strfreev(a.vary), g_strfreev(a.sets);
  return status;
}
