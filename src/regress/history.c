/* history.c — the SQLite history of predictions (see history.h). */
#include "regress/history.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "io/file.h"
#include "io/jsonw.h"

struct PnHistory {
  sqlite3 *db;
  char *path;
};

static const char schema[] = "CREATE TABLE IF NOT EXISTS predictions ("
                             " run INTEGER NOT NULL, time TEXT NOT NULL, version TEXT NOT NULL,"
                             " git_commit TEXT NOT NULL, scenario TEXT NOT NULL, scenario_sha256 TEXT NOT NULL,"
                             " profile_sha256 TEXT NOT NULL, metric TEXT NOT NULL, value REAL, reason TEXT);"
                             "CREATE INDEX IF NOT EXISTS predictions_by_scenario ON predictions (scenario, run);";

char *pn_history_default_path(void)
{
  /* GLib's user data directory is $XDG_DATA_HOME, else ~/.local/share */
  return g_build_filename(g_get_user_data_dir(), "penumbra", "history.db", NULL);
}

static gboolean fail(GError **error, const PnHistory *h, const char *what)
{
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: %s: %s", h->path, what, sqlite3_errmsg(h->db));
  return FALSE;
}

/* WAL (readers never block the writer, and a crashed writer leaves the database as it was) and
 * the schema. Two processes setting up a new database at once can get SQLITE_BUSY at once: a lock
 * upgrade that could deadlock does not wait on the busy handler. So the set-up is retried, 10 ms
 * apart, for up to the busy timeout. */
static int setup(sqlite3 *db)
{
  int rc = SQLITE_BUSY;
  for (int waited_ms = 0; (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && waited_ms <= PN_HISTORY_BUSY_MS;
       waited_ms += 10) {
    if (waited_ms > 0)
      g_usleep(10 * 1000);
    rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL;", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
      rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
  }
  return rc;
}

PnHistory *pn_history_open(const char *path, GError **error)
{
  g_autofree char *dir = g_path_get_dirname(path);
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: cannot create its directory (%s)", path, g_strerror(errno));
    return NULL;
  }
  PnHistory *h = g_new0(PnHistory, 1);
  h->path      = g_strdup(path);
  int rc = sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_busy_timeout(h->db, PN_HISTORY_BUSY_MS);
  if (rc == SQLITE_OK)
    rc = setup(h->db);
  if (rc != SQLITE_OK) {
    fail(error, h, "cannot be opened as penumbra's history (SQLite)");
    pn_history_close(h);
    return NULL;
  }
  return h;
}

void pn_history_close(PnHistory *h)
{
  if (!h)
    return;
  sqlite3_close(h->db);
  g_free(h->path);
  g_free(h);
}

static char *now_text(void)
{
  g_autoptr(GDateTime) t = g_date_time_new_now_utc();
  return g_date_time_format(t, "%Y-%m-%dT%H:%M:%S.%fZ");
}

/* The rows of one run, inside the caller's transaction. */
static gboolean insert_run(PnHistory *h, sqlite3_stmt *ins, const PnBaseline *now, gint64 run, const char *time,
                           const char *version, const char *commit, const char *reason, GError **error)
{
  for (guint i = 0; i < now->entries->len; i++) {
    const PnBaselineEntry *e = &g_array_index(now->entries, PnBaselineEntry, i);
    for (int m = 0; m < PN_METRIC_N; m++) {
      sqlite3_reset(ins);
      sqlite3_bind_int64(ins, 1, run);
      sqlite3_bind_text(ins, 2, time, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 3, version, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 4, commit, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 5, e->name, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 6, e->scenario_sha256, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 7, e->profile_sha256, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 8, pn_metric_name(m), -1, SQLITE_STATIC);
      sqlite3_bind_double(ins, 9, e->value[m]);
      if (reason)
        sqlite3_bind_text(ins, 10, reason, -1, SQLITE_STATIC);
      else
        sqlite3_bind_null(ins, 10);
      if (sqlite3_step(ins) != SQLITE_DONE)
        return fail(error, h, "cannot append");
    }
  }
  return TRUE;
}

gboolean pn_history_append(PnHistory *h, const PnBaseline *now, const char *version, const char *commit,
                           const char *reason, GError **error)
{
  /* IMMEDIATE takes the write lock at once (waiting up to the busy timeout), so the run number
   * read below is still the largest when the rows go in */
  if (sqlite3_exec(h->db, "BEGIN IMMEDIATE;", NULL, NULL, NULL) != SQLITE_OK)
    return fail(error, h, "cannot append");
  sqlite3_stmt *max = NULL, *ins = NULL;
  gboolean ok =
      sqlite3_prepare_v2(h->db, "SELECT COALESCE(MAX(run), 0) + 1 FROM predictions;", -1, &max, NULL) == SQLITE_OK &&
      sqlite3_step(max) == SQLITE_ROW &&
      sqlite3_prepare_v2(h->db, "INSERT INTO predictions VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10);", -1, &ins,
                         NULL) == SQLITE_OK;
  if (!ok)
    fail(error, h, "cannot append");
  gint64 run            = ok ? sqlite3_column_int64(max, 0) : 0;
  g_autofree char *time = now_text();
  ok                    = ok && insert_run(h, ins, now, run, time, version, commit, reason, error);
  sqlite3_finalize(max);
  sqlite3_finalize(ins);
  if (ok && sqlite3_exec(h->db, "COMMIT;", NULL, NULL, NULL) != SQLITE_OK)
    ok = fail(error, h, "cannot append");
  if (!ok)
    sqlite3_exec(h->db, "ROLLBACK;", NULL, NULL, NULL);
  return ok;
}

static void row_clear(gpointer p)
{
  PnHistoryRow *r = p;
  g_free(r->time);
  g_free(r->version);
  g_free(r->commit);
  g_free(r->scenario);
  g_free(r->scenario_sha256);
  g_free(r->profile_sha256);
  g_free(r->reason);
}

static char *column_text(sqlite3_stmt *q, int col)
{
  const unsigned char *t = sqlite3_column_text(q, col);
  return t ? g_strdup((const char *)t) : NULL;
}

/* Starts a row for the statement's current (run, scenario). */
static PnHistoryRow row_from(sqlite3_stmt *q)
{
  PnHistoryRow r    = {.run = sqlite3_column_int64(q, 0)};
  r.time            = column_text(q, 1);
  r.version         = column_text(q, 2);
  r.commit          = column_text(q, 3);
  r.scenario        = column_text(q, 4);
  r.scenario_sha256 = column_text(q, 5);
  r.profile_sha256  = column_text(q, 6);
  r.reason          = column_text(q, 9);
  for (int m = 0; m < PN_METRIC_N; m++)
    r.value[m] = NAN;
  return r;
}

GArray *pn_history_rows(PnHistory *h, const char *scenario, GError **error)
{
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(h->db,
                         "SELECT run, time, version, git_commit, scenario, scenario_sha256, profile_sha256, metric,"
                         " value, reason FROM predictions WHERE ?1 IS NULL OR scenario = ?1 ORDER BY scenario, run;",
                         -1, &q, NULL) != SQLITE_OK) {
    fail(error, h, "cannot be read");
    return NULL;
  }
  if (scenario)
    sqlite3_bind_text(q, 1, scenario, -1, SQLITE_STATIC);
  GArray *rows = g_array_new(FALSE, TRUE, sizeof(PnHistoryRow));
  g_array_set_clear_func(rows, row_clear);
  int rc = 0;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    PnHistoryRow *last = rows->len ? &g_array_index(rows, PnHistoryRow, rows->len - 1) : NULL;
    if (last == NULL || last->run != sqlite3_column_int64(q, 0) ||
        strcmp(last->scenario, (const char *)sqlite3_column_text(q, 4)) != 0) {
      PnHistoryRow r = row_from(q);
      g_array_append_val(rows, r);
      last = &g_array_index(rows, PnHistoryRow, rows->len - 1);
    }
    int m = pn_metric_find((const char *)sqlite3_column_text(q, 7));
    if (m >= 0)
      last->value[m] = sqlite3_column_double(q, 8);
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_DONE) {
    g_array_unref(rows);
    fail(error, h, "cannot be read");
    return NULL;
  }
  return rows;
}

/* ---- output ---- */

/* What changed since the scenario's row before (`prev` NULL: its first row). */
static const char *changed(const PnHistoryRow *prev, const PnHistoryRow *r, bool *sim, bool *scn)
{
  *sim      = prev && strcmp(prev->commit, r->commit) != 0;
  *scn      = prev && strcmp(prev->scenario_sha256, r->scenario_sha256) != 0;
  bool prof = prev && strcmp(prev->profile_sha256, r->profile_sha256) != 0;
  if (prev == NULL)
    return "first";
  static const char *const what[8] = {
      "-",       "simulator",          "scenario",          "simulator, scenario",
      "profile", "simulator, profile", "scenario, profile", "simulator, scenario, profile"};
  return what[(*sim ? 1 : 0) | (*scn ? 2 : 0) | (prof ? 4 : 0)];
}

static const PnHistoryRow *previous(const GArray *rows, guint i)
{
  const PnHistoryRow *r = &g_array_index(rows, PnHistoryRow, i);
  if (i == 0 || strcmp(g_array_index(rows, PnHistoryRow, i - 1).scenario, r->scenario) != 0)
    return NULL;
  return &g_array_index(rows, PnHistoryRow, i - 1);
}

char *pn_history_text(const GArray *rows)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%-40s %5s %-27s %-16s %-12s %-12s %11s %11s  %s\n", "scenario", "run", "time (UTC)",
                         "commit", "scenario", "profile", "TFLOP/s/GPU", "iteration s", "changed");
  for (guint i = 0; i < rows->len; i++) {
    const PnHistoryRow *r = &g_array_index(rows, PnHistoryRow, i);
    bool sim = false, scn = false;
    const char *what = changed(previous(rows, i), r, &sim, &scn);
    g_string_append_printf(s, "%-40s %5" G_GINT64_FORMAT " %-27s %-16s %-12.12s %-12.12s %11.1f %11.4f  %s%s%s\n",
                           r->scenario, r->run, r->time, r->commit, r->scenario_sha256, r->profile_sha256,
                           r->value[PN_METRIC_TFLOPS], r->value[PN_METRIC_ITERATION], what,
                           r->reason ? "; updated: " : "", r->reason ? r->reason : "");
  }
  if (rows->len == 0)
    g_string_append(s, "(no predictions recorded)\n");
  return g_string_free(s, FALSE);
}

char *pn_history_json(const GArray *rows)
{
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_int(w, "schema_version", 1);
  pn_jsonw_array(w, "history", PN_JSONW_BLOCK);
  for (guint i = 0; i < rows->len; i++) {
    const PnHistoryRow *r = &g_array_index(rows, PnHistoryRow, i);
    bool sim = false, scn = false;
    changed(previous(rows, i), r, &sim, &scn);
    pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
    pn_jsonw_string(w, "scenario", r->scenario);
    pn_jsonw_int(w, "run", r->run);
    pn_jsonw_string(w, "time", r->time);
    pn_jsonw_string(w, "version", r->version);
    pn_jsonw_string(w, "commit", r->commit);
    pn_jsonw_string(w, "scenario_sha256", r->scenario_sha256);
    pn_jsonw_string(w, "profile_sha256", r->profile_sha256);
    pn_jsonw_bool(w, "simulator_changed", sim);
    pn_jsonw_bool(w, "scenario_changed", scn);
    if (r->reason)
      pn_jsonw_string(w, "reason", r->reason);
    else
      pn_jsonw_null(w, "reason");
    for (int m = 0; m < PN_METRIC_N; m++)
      pn_jsonw_double(w, pn_metric_name(m), r->value[m]); /* NaN (not recorded) is written null */
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
}

char *pn_history_plot_data(const GArray *rows)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < rows->len; i++) {
    const PnHistoryRow *r    = &g_array_index(rows, PnHistoryRow, i);
    const PnHistoryRow *prev = previous(rows, i);
    bool sim = false, scn = false;
    changed(prev, r, &sim, &scn);
    if (prev == NULL) /* a data set per scenario, its header line naming it (gnuplot's columnheader(6)) */
      g_string_append_printf(s, "%srun tflops simulator scenario commit %s\n", i ? "\n\n" : "", r->scenario);
    g_string_append_printf(s, "%" G_GINT64_FORMAT " %.9g %d %d %s\n", r->run, r->value[PN_METRIC_TFLOPS], sim, scn,
                           r->commit);
  }
  return g_string_free(s, FALSE);
}
