/* baseline.h — the predictions a regression suite is held to (`penumbra regress`), as JSON:
 *
 *   {"schema_version": 1,
 *    "updated": {"reason": "why the predictions moved", "version": "0.1.0", "commit": "57b3f3b"},
 *    "scenarios": {
 *      "<scenario name>": {"scenario_sha256": "...", "profile_sha256": "...",
 *                          "model_tflops_per_gpu": 571.025931, "iteration_time_s": 11.8143995,
 *                          "exposed_comm_s": {"dp": 0.0065, "tp": 0, "pp": 0, "cp": 0, "ep": 0},
 *                          "bubble_s": 0, "memory_gib_per_gpu": 62.17}, ...}}
 *
 * The metrics carry the names `penumbra run --format json` gives them; a class's exposed
 * communication is the metric "exposed_comm_s.<class>" (flat names are what tolerances and the
 * history use). Scenarios are kept sorted by name, so a rewritten baseline differs from the old
 * one only where predictions, hashes or the reason did. Numbers are written with 9 significant
 * digits, as in the report: a prediction read back differs from the simulated one by at most a
 * few parts in 10^9.
 * Cost: loading and writing are linear in scenarios x metrics; lookup by name is a binary search.
 */
#ifndef PN_IO_BASELINE_H
#define PN_IO_BASELINE_H

#include <glib.h>

#include "sim/result.h"

/* The metrics compared, in this order everywhere (tables, JSON, history). */
typedef enum {
  PN_METRIC_TFLOPS,
  PN_METRIC_ITERATION,
  PN_METRIC_EXPOSED_DP, /* then one per class, in PnCommClass order */
  PN_METRIC_BUBBLE = PN_METRIC_EXPOSED_DP + PN_CLASS_N,
  PN_METRIC_MEMORY,
  PN_METRIC_N
} PnMetric;

/* "model_tflops_per_gpu", "iteration_time_s", "exposed_comm_s.dp", ..., "bubble_s",
 * "memory_gib_per_gpu"; NULL past the last. */
const char *pn_metric_name(int m);
/* The metric of that name, or -1. */
int pn_metric_find(const char *name);
/* The metrics of one simulated scenario. */
void pn_metric_values(const PnResult *r, double out[PN_METRIC_N]);

typedef struct {
  char *name;            /* the scenario's file name without ".json" */
  char *scenario_sha256; /* hex of the scenario file's bytes */
  char *profile_sha256;  /* hex of its hardware profile file's bytes */
  double value[PN_METRIC_N];
} PnBaselineEntry;

typedef struct {
  char *reason, *version, *commit; /* of the last update; "" when absent */
  GArray *entries;                 /* of PnBaselineEntry, sorted by name, names unique */
} PnBaseline;

PnBaseline *pn_baseline_new(void);
void pn_baseline_free(PnBaseline *b); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnBaseline, pn_baseline_free)

/* Adds a copy of `e` (its strings copied) in name order; an entry of that name is replaced. */
void pn_baseline_put(PnBaseline *b, const PnBaselineEntry *e);
/* The entry of that name, or NULL. */
const PnBaselineEntry *pn_baseline_find(const PnBaseline *b, const char *name);

/* Reads `path`. Errors (PN_IO_ERROR): the file (file.h), its JSON, "<path>: /scenarios/x/
 * iteration_time_s: expected a finite number ..." for a missing or wrong metric, an unknown key. */
PnBaseline *pn_baseline_load(const char *path, GError **error);
/* The baseline as JSON text (g_free), in the layout above. */
char *pn_baseline_json(const PnBaseline *b);

#endif
