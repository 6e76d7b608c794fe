/* regress.c — simulating a suite and comparing it with its baseline (see regress.h). */
#include "regress/regress.h"

#include <math.h>
#include <string.h>

#include "io/file.h"
#include "io/scenario.h"
#include "sim/sim.h"

/* ---- tolerances ---- */

void pn_tolerance_init(PnTolerance *t)
{
  for (int m = 0; m < PN_METRIC_N; m++)
    t->pct[m] = PN_REGRESS_DEFAULT_TOLERANCE_PCT;
}

/* "0.5" or "0.5%": a finite percentage >= 0. */
static bool parse_pct(const char *text, double *out)
{
  g_autofree char *num = g_strdup(text);
  gsize n              = strlen(num);
  if (n > 0 && num[n - 1] == '%')
    num[n - 1] = '\0';
  char *end = NULL;
  double v  = g_ascii_strtod(num, &end);
  if (end == num || *end != '\0' || !isfinite(v) || v < 0.0)
    return false;
  *out = v;
  return true;
}

gboolean pn_tolerance_apply(PnTolerance *t, const char *arg, GError **error)
{
  const char *eq          = strchr(arg, '=');
  g_autofree char *metric = eq ? g_strndup(arg, (gsize)(eq - arg)) : NULL;
  const char *pct_text    = eq ? eq + 1 : arg;
  double pct              = 0.0;
  g_autofree char *q      = pn_io_quote(arg);
  if (!parse_pct(pct_text, &pct)) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
                "expected a percentage (0.5%%) or METRIC=PERCENT (exposed_comm_s=2%%), got %s", q);
    return FALSE;
  }
  int hits = 0;
  for (int m = 0; m < PN_METRIC_N; m++) {
    const char *name = pn_metric_name(m);
    gsize n          = metric ? strlen(metric) : 0;
    if (metric == NULL || strcmp(name, metric) == 0 || (strncmp(name, metric, n) == 0 && name[n] == '.')) {
      t->pct[m] = pct;
      hits++;
    }
  }
  if (hits == 0) {
    g_autofree char *qm = pn_io_quote(metric);
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID,
                "unknown metric %s (expected model_tflops_per_gpu, iteration_time_s, exposed_comm_s or "
                "exposed_comm_s.<dp|tp|pp|cp|ep>, bubble_s, memory_gib_per_gpu)",
                qm);
    return FALSE;
  }
  return TRUE;
}

/* ---- simulating the suite ---- */

typedef struct {
  char *path;
  PnBaselineEntry entry;
  GError *error;
} PnSuiteSlot;

static char *sha256_of_file(const char *path, GError **error)
{
  g_autofree char *data = NULL;
  gsize len             = 0;
  if (!g_file_get_contents(path, &data, &len, NULL)) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: cannot be read", path);
    return NULL;
  }
  return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
}

/* One scenario, as `penumbra run` simulates it; runs on a pool thread, touching only its slot. */
static void simulate_one(gpointer data, gpointer user_data)
{
  PnSuiteSlot *s                = data;
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(PnScenario) sc      = pn_scenario_load(s->path, NULL, 0, warnings, &s->error);
  if (sc == NULL)
    return;
  g_autofree char *profile = pn_io_find_profile("hardware.profile", sc->hardware.profile, &s->error);
  if (profile == NULL || (s->entry.scenario_sha256 = sha256_of_file(s->path, &s->error)) == NULL ||
      (s->entry.profile_sha256 = sha256_of_file(profile, &s->error)) == NULL)
    return;
  g_autoptr(PnResult) r = pn_sim_run(sc, warnings, &s->error);
  if (r == NULL) {
    if (!g_str_has_prefix(s->error->message, s->path))
      g_prefix_error(&s->error, "%s: ", s->path);
    return;
  }
  pn_metric_values(r, s->entry.value);
  /* as the baseline keeps them (9 significant digits): an unchanged prediction compares equal */
  for (int m = 0; m < PN_METRIC_N; m++) {
    char text[G_ASCII_DTOSTR_BUF_SIZE];
    s->entry.value[m] = g_ascii_strtod(g_ascii_formatd(text, sizeof text, "%.9g", s->entry.value[m]), NULL);
  }
}

/* The scenario files of `dir`, sorted by name. */
static GPtrArray *suite_files(const char *dir, GError **error)
{
  g_autoptr(GError) err = NULL;
  g_autoptr(GDir) d     = g_dir_open(dir, 0, &err);
  if (d == NULL) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: cannot be read as a suite directory (%s)", dir,
                err->message);
    return NULL;
  }
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (const char *n = g_dir_read_name(d); n != NULL; n = g_dir_read_name(d))
    if (g_str_has_suffix(n, ".json") && strlen(n) > 5 && strcmp(n, PN_REGRESS_BASELINE) != 0)
      g_ptr_array_add(names, g_strdup(n));
  g_ptr_array_sort(names, (GCompareFunc)(void (*)(void))g_strcmp0);
  if (names->len == 0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: no scenario (*.json) in the suite directory", dir);
    g_ptr_array_unref(names);
    return NULL;
  }
  return names;
}

PnBaseline *pn_regress_simulate(const char *dir, int threads, GError **error)
{
  g_autoptr(GPtrArray) names = suite_files(dir, error);
  if (names == NULL)
    return NULL;
  PnSuiteSlot *slots = g_new0(PnSuiteSlot, names->len);
  GThreadPool *pool  = g_thread_pool_new(simulate_one, NULL, MAX(1, threads), TRUE, NULL);
  for (guint i = 0; i < names->len; i++) {
    const char *n       = g_ptr_array_index(names, i);
    slots[i].path       = g_build_filename(dir, n, NULL);
    slots[i].entry.name = g_strndup(n, strlen(n) - 5);
    g_thread_pool_push(pool, &slots[i], NULL);
  }
  g_thread_pool_free(pool, FALSE, TRUE);
  PnBaseline *b = pn_baseline_new();
  for (guint i = 0; i < names->len; i++) {
    PnSuiteSlot *s = &slots[i];
    if (s->error != NULL && error != NULL && *error == NULL)
      g_propagate_error(error, g_steal_pointer(&s->error));
    else if (s->error == NULL)
      pn_baseline_put(b, &s->entry);
    g_clear_error(&s->error);
    g_free(s->path);
    g_free(s->entry.name);
    g_free(s->entry.scenario_sha256);
    g_free(s->entry.profile_sha256);
  }
  g_free(slots);
  if (b->entries->len < names->len) {
    pn_baseline_free(b);
    return NULL;
  }
  return b;
}

/* ---- comparing ---- */

static gint row_cmp(gconstpointer a, gconstpointer b)
{
  const PnRegressRow *x = a, *y = b;
  if (x->largest != y->largest)
    return x->largest > y->largest ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void compare_row(PnRegressRow *row, const PnTolerance *tol)
{
  if (row->now == NULL || row->then == NULL) {
    row->largest = (double)INFINITY;
    return;
  }
  row->scenario_changed = strcmp(row->now->scenario_sha256, row->then->scenario_sha256) != 0;
  row->profile_changed  = strcmp(row->now->profile_sha256, row->then->profile_sha256) != 0;
  for (int m = 0; m < PN_METRIC_N; m++) {
    double now = row->now->value[m], then = row->then->value[m];
    double ch      = now == then   ? 0.0
                     : then != 0.0 ? (now - then) / fabs(then)
                     : now > 0.0   ? (double)INFINITY
                                   : -(double)INFINITY;
    row->change[m] = ch;
    row->beyond[m] = fabs(ch) * 100.0 > tol->pct[m];
    row->largest   = MAX(row->largest, fabs(ch));
  }
}

PnRegressReport *pn_regress_compare(const PnBaseline *now, const PnBaseline *then, const PnTolerance *tol)
{
  PnRegressReport *r = g_new0(PnRegressReport, 1);
  r->rows            = g_array_new(FALSE, TRUE, sizeof(PnRegressRow));
  guint i = 0, j = 0;
  while (i < now->entries->len || j < then->entries->len) { /* a merge of two lists sorted by name */
    const PnBaselineEntry *a = i < now->entries->len ? &g_array_index(now->entries, PnBaselineEntry, i) : NULL;
    const PnBaselineEntry *b = j < then->entries->len ? &g_array_index(then->entries, PnBaselineEntry, j) : NULL;
    int c                    = a == NULL ? 1 : b == NULL ? -1 : strcmp(a->name, b->name);
    PnRegressRow row = {.name = c <= 0 ? a->name : b->name, .now = c <= 0 ? a : NULL, .then = c >= 0 ? b : NULL};
    i += c <= 0;
    j += c >= 0;
    compare_row(&row, tol);
    for (int m = 0; m < PN_METRIC_N; m++)
      r->n_beyond += row.beyond[m];
    r->n_unpaired += row.now == NULL || row.then == NULL;
    g_array_append_val(r->rows, row);
  }
  g_array_sort(r->rows, row_cmp);
  return r;
}

void pn_regress_report_free(PnRegressReport *r)
{
  if (!r)
    return;
  g_array_unref(r->rows);
  g_free(r);
}
