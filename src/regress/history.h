/* history.h — every prediction `penumbra regress` made, kept in an SQLite database: one row per
 * (scenario, metric, penumbra version and commit, scenario file hash, profile file hash, time),
 * so a prediction can be followed over a team's commits and its moves told apart: the simulator
 * changed (another commit), the scenario changed (another scenario hash), or the profile did.
 *
 *   predictions(run INTEGER, time TEXT (ISO 8601, UTC), version TEXT, git_commit TEXT,
 *               scenario TEXT, scenario_sha256 TEXT, profile_sha256 TEXT, metric TEXT,
 *               value REAL, reason TEXT (the --update message, NULL for a check))
 *
 * Concurrency: the database is in WAL mode and waits up to PN_HISTORY_BUSY_MS for a lock; a run
 * appends all its rows in one IMMEDIATE transaction and numbers itself (`run`, 1 + the largest)
 * inside it, so two processes appending at once each get their own run number and every row.
 * Cost: an append is one transaction of scenarios x PN_METRIC_N inserts; a query scans the
 * table (indexed by scenario).
 */
#ifndef PN_REGRESS_HISTORY_H
#define PN_REGRESS_HISTORY_H

#include <glib.h>

#include "io/baseline.h"

#define PN_HISTORY_BUSY_MS 30000

typedef struct PnHistory PnHistory;

/* $XDG_DATA_HOME/penumbra/history.db, else ~/.local/share/penumbra/history.db (g_free). */
char *pn_history_default_path(void);
/* Opens (creating it and its missing directories) the database at `path`. NULL with
 * PN_IO_ERROR_FILE: "<path>: <what SQLite says>". */
PnHistory *pn_history_open(const char *path, GError **error);
void pn_history_close(PnHistory *h); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnHistory, pn_history_close)

/* Appends one run: every metric of every scenario of `now`, made by penumbra `version` at
 * `commit`, at the current time; `reason` NULL for a check, the --update message otherwise. */
gboolean pn_history_append(PnHistory *h, const PnBaseline *now, const char *version, const char *commit,
                           const char *reason, GError **error);

/* One scenario's predictions in one run. */
typedef struct {
  gint64 run;
  char *time, *version, *commit, *scenario, *scenario_sha256, *profile_sha256, *reason; /* reason NULL: a check */
  double value[PN_METRIC_N];                                                            /* NAN: not recorded */
} PnHistoryRow;

/* The rows of `scenario` (NULL: every scenario), by scenario then run. NULL on an SQLite error. */
GArray *pn_history_rows(PnHistory *h, const char *scenario, GError **error);

/* The rows as text (one line per scenario and run, with what changed since the scenario's row
 * before: "simulator" for another commit, "scenario", "profile"), as JSON, and as gnuplot data
 * for plots/trend.gp (one data set per scenario: run, TFLOP/s/GPU, whether the simulator changed,
 * whether the scenario changed, commit). g_free. */
char *pn_history_text(const GArray *rows);
char *pn_history_json(const GArray *rows);
char *pn_history_plot_data(const GArray *rows);

#endif
