/* regress.h — a suite of scenarios held to a baseline of their predictions (`penumbra regress`).
 *
 * A suite is a directory of scenario files (`<name>.json`; links to scenarios kept elsewhere
 * work too; `baseline.json` beside them is the baseline, never a scenario). Each is simulated as
 * `penumbra run` would, on a pool of threads, and its metrics (io/baseline.h) are compared with
 * the baseline's: a change is relative to the baseline's value, (now - then) / |then|, and is
 * beyond its tolerance when its magnitude exceeds the tolerance of its metric (a baseline of 0
 * that is no longer 0 is an infinite change). A scenario missing from either side is a change
 * beyond tolerance too: the baseline must be updated on purpose.
 *
 * Determinism: results are gathered by scenario index and sorted by name, whatever the number
 * of threads; the comparison is sorted by the largest change (its magnitude), then by name.
 * Cost: one simulation per scenario (pn_sim_run), split over `threads`.
 */
#ifndef PN_REGRESS_REGRESS_H
#define PN_REGRESS_REGRESS_H

#include <glib.h>
#include <stdbool.h>

#include "io/baseline.h"

#define PN_REGRESS_DEFAULT_TOLERANCE_PCT 0.5
#define PN_REGRESS_BASELINE "baseline.json"

/* Tolerances in percent, per metric. */
typedef struct {
  double pct[PN_METRIC_N];
} PnTolerance;

/* Every metric at PN_REGRESS_DEFAULT_TOLERANCE_PCT. */
void pn_tolerance_init(PnTolerance *t);
/* Applies one --tolerance argument: "PCT" or "PCT%" (every metric), or "METRIC=PCT[%]" where
 * METRIC is a metric's name or a family of them ("exposed_comm_s": every class). PCT is a finite
 * number >= 0. FALSE with PN_IO_ERROR_INVALID saying what was expected. */
gboolean pn_tolerance_apply(PnTolerance *t, const char *arg, GError **error);

/* Simulates every scenario of the suite in `dir` on `threads` threads (>= 1). The result holds
 * one entry per scenario with its hashes and metrics (reason, version and commit empty). Errors:
 * the directory cannot be read or holds no scenario (PN_IO_ERROR_FILE), the first scenario by
 * name that fails to load or simulate (its error, prefixed by its path when it does not name it). */
PnBaseline *pn_regress_simulate(const char *dir, int threads, GError **error);

typedef struct {
  const char *name;            /* borrowed from the baselines compared */
  const PnBaselineEntry *now;  /* NULL: in the baseline, no longer in the suite */
  const PnBaselineEntry *then; /* NULL: new in the suite */
  double change[PN_METRIC_N];  /* relative change; 0 when either side is missing */
  bool beyond[PN_METRIC_N];
  double largest;                         /* the largest |change|; INFINITY for a missing side */
  bool scenario_changed, profile_changed; /* the hashes differ from the baseline's */
} PnRegressRow;

typedef struct {
  GArray *rows;   /* of PnRegressRow, by largest change (descending), then name */
  int n_beyond;   /* metrics beyond tolerance, over all rows */
  int n_unpaired; /* scenarios on one side only */
} PnRegressReport;

/* Compares `now` with `then` (both borrowed; they must outlive the report). */
PnRegressReport *pn_regress_compare(const PnBaseline *now, const PnBaseline *then, const PnTolerance *tol);
void pn_regress_report_free(PnRegressReport *r); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnRegressReport, pn_regress_report_free)
/* Whether the suite passes: nothing beyond tolerance, nothing unpaired. */
static inline bool pn_regress_passed(const PnRegressReport *r) { return r->n_beyond == 0 && r->n_unpaired == 0; }

/* The report as a text table (one row per scenario: each metric's value now and its change,
 * then a line per change beyond tolerance) or as JSON; g_free. */
char *pn_regress_report_text(const PnRegressReport *r, const PnTolerance *tol);
char *pn_regress_report_json(const PnRegressReport *r, const PnTolerance *tol);

#endif
