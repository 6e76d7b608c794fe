#define _POSIX_C_SOURCE 200809L /* sigaction */
/* plan.c — `penumbra plan`: how many GPUs, of which kind, for how long and at what cost
 * (plan/plan.h). The command reads and checks the options, checks the report directory before
 * any work, evaluates the plan with a progress line on a terminal, and writes the report
 * directory whole (io/out.h, PnOutStage). Exit 3 when a deadline or budget is not met (the report
 * says which plan comes closest). */
#include <signal.h>
#include <unistd.h>

#include "cli/cli-private.h"
#include "plan/report.h"
#include "pn_version.h" /* generated at build time (cmake/version.cmake) */
#include "sweep/output.h"

#define DAY_S 86400.0

static volatile gint interrupted;

static void on_sigint(int sig)
{
  (void)sig;
  g_atomic_int_set(&interrupted, 1);
}

typedef struct {
  char *model, *tokens_s, *gpus, *seq_s, *batch_s, *deadline_s, *budget_s, *goodput_s, *precision, *out, *threads_s;
  char **profiles, **prices;
  gboolean force, exhaustive;
} PlanArgs;

/* A positive number, with a binary suffix K, M, G or T when `binary` (4M = 4 x 2^20 tokens: the
 * published recipes' "4M-token batch" is 512 sequences of 8,192). */
static bool range_value(const char *text, bool binary, double *v)
{
  g_autofree char *num      = g_strdup(text);
  gsize n                   = strlen(num);
  static const char units[] = "KMGT";
  const char *u             = binary && n > 1 ? strchr(units, g_ascii_toupper(num[n - 1])) : NULL;
  double scale              = u ? ldexp(1.0, 10 * (int)(u - units + 1)) : 1.0;
  if (u)
    num[n - 1] = '\0';
  if (!pn__cli_strtod(num, v) || *v <= 0)
    return false;
  *v *= scale;
  return true;
}

/* "MIN:MAX" (or one number) into [lo, hi]. */
static bool parse_range(const char *cmd, const char *option, const char *text, bool binary, double max, double *lo,
                        double *hi)
{
  g_auto(GStrv) ab   = g_strsplit(text, ":", -1);
  guint n            = g_strv_length(ab);
  g_autofree char *q = pn_io_quote(text);
  if (n < 1 || n > 2 || !range_value(ab[0], binary, lo) || !range_value(ab[n - 1], binary, hi) || *hi > max) {
    pn__cli_bad(cmd, option, "expected MIN:MAX of positive numbers up to %.0g%s, got %s", max,
                binary ? " (K, M, G, T: x 1024^n)" : "", q);
    return false;
  }
  if (*lo > *hi) {
    pn__cli_bad(cmd, option, "%s is an empty range (MIN > MAX)", q);
    return false;
  }
  return true;
}

/* "60d", "36h", "3600s" or a number of days. */
static bool parse_deadline(const char *cmd, const char *text, double *out_s)
{
  g_autofree char *num = g_strdup(text);
  gsize n              = strlen(num);
  double unit          = DAY_S;
  if (n > 0 && strchr("dhs", num[n - 1]) != NULL) {
    unit       = num[n - 1] == 'd' ? DAY_S : num[n - 1] == 'h' ? 3600.0 : 1.0;
    num[n - 1] = '\0';
  }
  double v = 0;
  if (pn__cli_strtod(num, &v) && v > 0 && v * unit < 1e12) {
    *out_s = v * unit;
    return true;
  }
  g_autofree char *q = pn_io_quote(text);
  pn__cli_bad(cmd, "--deadline", "expected a positive duration: days (60d or 60), hours (36h) or seconds (s), got %s",
              q);
  return false;
}

/* --price NAME=X for profiles that are planned, once each. */
static bool parse_prices(const char *cmd, char **prices, GArray *kinds)
{
  for (char **p = prices; p != NULL && *p != NULL; p++) {
    g_auto(GStrv) kv   = g_strsplit(*p, "=", 2);
    g_autofree char *q = pn_io_quote(*p);
    guint k            = 0;
    while (kv[0] && k < kinds->len && strcmp(g_array_index(kinds, PnPlanKind, k).profile, kv[0]) != 0)
      k++;
    if (kv[0] == NULL || kv[1] == NULL) {
      pn__cli_bad(cmd, "--price", "expected PROFILE=PRICE (per GPU-hour), got %s", q);
      return false;
    }
    if (k == kinds->len) {
      pn__cli_bad(cmd, "--price", "%s: the profile is not planned (give it with --profile)", q);
      return false;
    }
    PnPlanKind *kind = &g_array_index(kinds, PnPlanKind, k);
    if (!isnan(kind->price)) {
      pn__cli_bad(cmd, "--price", "%s: a second price for %s", q, kind->profile);
      return false;
    }
    if (!pn__cli_number(cmd, "--price", kv[1], 0, 1e9, false, "a price per GPU-hour, 0 or more", &kind->price))
      return false;
  }
  return true;
}

static bool parse_kinds(const char *cmd, const PlanArgs *a, GArray *kinds)
{
  static char *fallback[] = {"h100-sxm", NULL};
  for (char **p = a->profiles ? a->profiles : fallback; *p != NULL; p++) {
    for (guint k = 0; k < kinds->len; k++)
      if (strcmp(g_array_index(kinds, PnPlanKind, k).profile, *p) == 0) {
        g_autofree char *q = pn_io_quote(*p);
        pn__cli_bad(cmd, "--profile", "%s is given twice", q);
        return false;
      }
    PnPlanKind k = {.profile = *p, .price = NAN};
    g_array_append_val(kinds, k);
  }
  return parse_prices(cmd, a->prices, kinds);
}

static bool parse_spec(const char *cmd, PlanArgs *a, PnPlanSpec *s)
{
  double lo = 0, hi = 0, v = 0;
  const char *missing = !a->model      ? "--model"
                        : !a->tokens_s ? "--tokens"
                        : !a->gpus     ? "--gpus"
                        : !a->seq_s    ? "--seq-length"
                        : !a->out      ? "--out"
                                       : NULL;
  if (missing != NULL) {
    pn__cli_bad(cmd, missing, "required (see --help)");
    return false;
  }
  s->model = a->model, s->precision = a->precision;
  if (!pn__cli_number(cmd, "--tokens", a->tokens_s, DBL_TRUE_MIN, 1e18, false, "a number of tokens > 0", &s->tokens))
    return false;
  if (!parse_range(cmd, "--gpus", a->gpus, false, 1e7, &lo, &hi))
    return false;
  s->gpus_min = (int64_t)ceil(lo), s->gpus_max = (int64_t)floor(hi);
  if (!pn__cli_number(cmd, "--seq-length", a->seq_s, 1, 1e8, true, "a whole number from 1 to 1e8", &v))
    return false;
  s->seq_length = (int64_t)v;
  if (!parse_range(cmd, "--global-batch-tokens", a->batch_s, true, 1e15, &s->batch_tokens_min, &s->batch_tokens_max))
    return false;
  s->deadline_s = s->budget = NAN;
  if (a->deadline_s && !parse_deadline(cmd, a->deadline_s, &s->deadline_s))
    return false;
  if (a->budget_s &&
      !pn__cli_number(cmd, "--budget", a->budget_s, DBL_TRUE_MIN, 1e18, false, "a budget > 0", &s->budget))
    return false;
  s->goodput = 1.0;
  if (a->goodput_s &&
      !pn__cli_number(cmd, "--goodput", a->goodput_s, DBL_TRUE_MIN, 1, false, "a fraction in (0, 1]", &s->goodput))
    return false;
  v = 0;
  if (a->threads_s && !pn__cli_number(cmd, "-j", a->threads_s, 1, 1024, true, "1 to 1024 threads", &v))
    return false;
  s->threads = v > 0 ? (int)v : (int)g_get_num_processors();
  if (strcmp(a->precision, "bf16") != 0 && strcmp(a->precision, "fp8") != 0) {
    g_autofree char *q = pn_io_quote(a->precision);
    pn__cli_bad(cmd, "--precision", "expected bf16 or fp8, got %s", q);
    return false;
  }
  if (!parse_kinds(cmd, a, s->kinds))
    return false;
  for (guint k = 0; k < s->kinds->len && !isnan(s->budget); k++)
    if (isnan(g_array_index(s->kinds, PnPlanKind, k).price)) {
      pn__cli_bad(cmd, "--budget", "needs a --price for every profile (none for %s)",
                  g_array_index(s->kinds, PnPlanKind, k).profile);
      return false;
    }
  return true;
}

typedef struct {
  PnPlanResult *r;
  PnPlanProgress progress;
  GError *error;
  gboolean ok;
  gint finished;
} EvalJob;

static gpointer eval_thread(gpointer data)
{
  EvalJob *job = data;
  job->ok      = pn_plan_evaluate(job->r, &job->progress, &job->error);
  g_atomic_int_set(&job->finished, 1);
  return NULL;
}

/* Evaluates on its own thread while this one draws the progress line on a terminal: the GPU kind,
 * the pass, done / total, rate, ETA. Nothing on a pipe. */
static gboolean evaluate(PnPlanResult *r, GError **error)
{
  static const char *const phases[] = {"checking", "simulating", "what-if"};
  EvalJob job                       = {.r = r};
  bool tty                          = isatty(STDERR_FILENO);
  gint64 t0 = g_get_monotonic_time(), last_phase = -1;
  GThread *t = g_thread_new("plan", eval_thread, &job);
  while (!g_atomic_int_get(&job.finished)) {
    g_usleep(100000);
    gint phase = g_atomic_int_get(&job.progress.phase) + 3 * g_atomic_int_get(&job.progress.kind);
    if (phase != last_phase)
      t0 = g_get_monotonic_time(), last_phase = phase;
    if (!tty)
      continue;
    double dt   = (g_get_monotonic_time() - t0) / 1e6;
    gint done   = g_atomic_int_get(&job.progress.sweep.done);
    double rate = dt > 0 ? done / dt : 0.0;
    gint kind   = g_atomic_int_get(&job.progress.kind);
    fprintf(stderr, "\r\033[Kplan %s %u/%u: %s %d / %" G_GINT64_FORMAT "  %.0f/s  ETA %.0f s",
            g_array_index(r->spec->kinds, PnPlanKind, kind).profile, kind + 1, r->spec->kinds->len,
            phases[g_atomic_int_get(&job.progress.phase)], done, job.progress.sweep.total, rate,
            rate > 0 ? (job.progress.sweep.total - done) / rate : 0.0);
  }
  g_thread_join(t);
  if (tty)
    fprintf(stderr, "\r\033[K");
  if (!job.ok)
    g_propagate_error(error, job.error);
  return job.ok;
}

static gboolean put(const PnOutDir *dir, const char *name, const char *text, GError **error)
{
  g_autoptr(PnOut) out = pn_out_dir_file(dir, name, error);
  if (out == NULL)
    return FALSE;
  pn_out_write(out, text, strlen(text));
  return pn_out_commit(g_steal_pointer(&out), error);
}

/* Every file of the report, in a temporary directory put in place of `path` at the end. */
static gboolean write_report(const PnPlanResult *r, const char *path, bool force, GError **error)
{
  g_autoptr(PnOutStage) stage = pn_out_stage_open(path, force, error);
  if (stage == NULL)
    return FALSE;
  const PnOutDir *dir      = pn_out_stage_dir(stage);
  g_autofree char *sub     = g_build_filename(pn_out_dir_path(dir), "plots", NULL);
  g_autoptr(PnOutDir) plot = pn_out_dir_open(sub, error);
  g_autoptr(PnDoc) doc     = pn_plan_doc(r, PN_VERSION, PN_GIT_COMMIT);
  g_autofree char *md = pn_doc_markdown(doc), *html = pn_doc_html(doc), *csv = pn_plan_csv(r);
  g_autofree char *json = pn_plan_json(r, PN_VERSION, PN_GIT_COMMIT);
  if (plot == NULL || !pn_plan_figures(r, plot, error) || !put(dir, "report.md", md, error) ||
      !put(dir, "index.html", html, error) || !put(dir, "plans.csv", csv, error) ||
      !put(dir, "plans.json", json, error))
    return FALSE;
  for (guint k = 0; k < r->sweeps->len; k++) {
    const PnPlanSweep *s     = r->sweeps->pdata[k];
    PnSweepReportOptions o   = {.version = PN_VERSION, .commit = PN_GIT_COMMIT, .source = r->spec->model};
    o.error_pct              = r->error_pct;
    o.error_n                = r->error_n;
    o.error_family           = r->error_family;
    g_autofree char *layouts = pn_sweep_csv(&s->sweep, s->result, &o);
    g_autofree char *name    = g_strdup_printf("layouts-%s.csv", s->base->hw->name);
    if (!put(dir, name, layouts, error))
      return FALSE;
  }
  return pn_out_stage_commit(g_steal_pointer(&stage), error);
}

static int plan_main(PlanArgs *a, int argc, char **argv)
{
  struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND};
  sigaction(SIGINT, &sa, NULL);
  const char *cmd         = argv[0];
  g_autoptr(GArray) kinds = g_array_new(FALSE, FALSE, sizeof(PnPlanKind));
  PnPlanSpec spec         = {.kinds = kinds, .cancel = &interrupted};
  g_autoptr(GError) error = NULL;
  if (argc > 1) {
    g_autofree char *q = pn_io_quote(argv[1]);
    fprintf(stderr, "%s: unexpected operand %s (see --help)\n", cmd, q);
    return 2;
  }
  if (!parse_spec(cmd, a, &spec))
    return 2;
  spec.exhaustive = a->exhaustive;
  if (!pn_out_stage_check(a->out, a->force, &error))
    return pn__cli_fail_at(cmd, "--out", error);
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (gnuplot == NULL) {
    fprintf(stderr, "%s: gnuplot: not found in PATH (the report's figures need it: Debian's gnuplot-nox)\n", cmd);
    return 2;
  }
  g_autoptr(PnPlanResult) r = pn_plan_prepare(&spec, &error);
  if (r == NULL)
    return pn__cli_fail(error);
  if (!evaluate(r, &error))
    return pn__cli_fail(error);
  if (r->interrupted) {
    fprintf(stderr, "%s: interrupted: no report written\n", cmd);
    return 130;
  }
  if (!write_report(r, a->out, a->force, &error))
    return pn__cli_fail_at(cmd, "--out", error);
  g_autofree char *html = g_build_filename(a->out, "index.html", NULL),
                  *md   = g_build_filename(a->out, "report.md", NULL);
  printf("report: %s and %s\n", html, md);
  if (!pn_plan_met(r)) {
    fprintf(stderr, "%s: the %s is not met by any plan: the report says which comes closest\n", cmd,
            r->cheapest < 0 && !isnan(spec.deadline_s) ? "deadline" : "budget");
    return 3;
  }
  return 0;
}

static const char examples[] =
    "Examples:\n"
    "  penumbra plan --model llama3-70b --tokens 15e12 --profile h100-sxm --profile h200-sxm --gpus 512:8192 \\\n"
    "      --seq-length 8192 --price h100-sxm=2.5 --price h200-sxm=3.2 --deadline 60d --budget 5e6 --out report/\n"
    "\n"
    "For each GPU kind, each planned GPU count (the powers of two in --gpus, and the counts pipeline sizes with an\n"
    "odd factor need) and each global batch (the powers of two of sequences in --global-batch-tokens, default\n"
    "4M:16M, K/M/G = 1024^n), the best layout by `penumbra sweep`; then time to train, GPU-hours, cost, MFU and\n"
    "scaling efficiency, the cheapest plan that meets --deadline and the fastest within --budget. The report is\n"
    "DIR/index.html and DIR/report.md, with the CSV and JSON of every evaluated plan and the figures in DIR/plots.\n"
    "Exit status 3 when no plan meets the deadline or the budget (the report is written and says which comes\n"
    "closest, by how much).";

int pn__cli_plan(int argc, char **argv)
{
  /* the defaults are set after parsing: GOption replaces a value without freeing the one before */
  PlanArgs a                   = {0};
  const GOptionEntry entries[] = {
      {"model", 0, 0, G_OPTION_ARG_STRING, &a.model, "Model name (models/) or file", "NAME"},
      {"tokens", 0, 0, G_OPTION_ARG_STRING, &a.tokens_s, "Tokens to train on (15e12)", "T"},
      {"profile", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.profiles, "GPU kind, repeatable (default h100-sxm)", "NAME"},
      {"gpus", 0, 0, G_OPTION_ARG_STRING, &a.gpus, "Range of GPU counts", "MIN:MAX"},
      {"seq-length", 0, 0, G_OPTION_ARG_STRING, &a.seq_s, "Sequence length", "N"},
      {"global-batch-tokens", 0, 0, G_OPTION_ARG_STRING, &a.batch_s, "Global batch range in tokens (default 4M:16M)",
       "MIN:MAX"},
      {"price", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.prices, "Price per GPU-hour of a profile, repeatable", "PROFILE=X"},
      {"deadline", 0, 0, G_OPTION_ARG_STRING, &a.deadline_s, "Longest time to train (60d, 36h)", "TIME"},
      {"budget", 0, 0, G_OPTION_ARG_STRING, &a.budget_s, "Most the run may cost (needs prices)", "X"},
      {"goodput", 0, 0, G_OPTION_ARG_STRING, &a.goodput_s, "Fraction of wall time that trains (default 1)", "F"},
      {"precision", 0, 0, G_OPTION_ARG_STRING, &a.precision, "bf16 (default) or fp8", "P"},
      {"out", 'o', 0, G_OPTION_ARG_FILENAME, &a.out, "Report directory (created)", "DIR"},
      {"force", 0, 0, G_OPTION_ARG_NONE, &a.force, "Replace a non-empty report directory", NULL},
      {"jobs", 'j', 0, G_OPTION_ARG_STRING, &a.threads_s, "Threads (default: every core)", "N"},
      {"exhaustive", 0, 0, G_OPTION_ARG_NONE, &a.exhaustive,
       "Simulate every layout, also those a lower bound puts beyond the error (same plans, slower)", NULL},
      {NULL}};
  int status = 2;
  if (pn__cli_parse(entries, "- how many GPUs, of which kind, how long and at what cost", examples, &argc, &argv)) {
    a.precision = a.precision ? a.precision : g_strdup("bf16");
    a.batch_s   = a.batch_s ? a.batch_s : g_strdup("4M:16M");
    status      = plan_main(&a, argc, argv);
  }
  g_free(a.model), g_free(a.tokens_s), g_free(a.gpus), g_free(a.seq_s), g_free(a.batch_s), g_free(a.deadline_s);
  g_free(a.budget_s), g_free(a.goodput_s), g_free(a.precision), g_free(a.out), g_free(a.threads_s);
  g_strfreev(a.profiles), g_strfreev(a.prices);
  return status;
}
