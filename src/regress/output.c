/* output.c — the regression report as a text table and as JSON (see regress.h). */
#include <math.h>
#include <string.h>

#include "io/jsonw.h"
#include "regress/regress.h"

/* A column of the table: the metric's value shown in `unit` (scale applied), and its change. */
typedef struct {
  const char *head;
  double scale;
  int decimals;
} PnColumn;

static const PnColumn columns[PN_METRIC_N] = {
    {"TFLOP/s/GPU", 1.0, 1},   {"iteration s", 1.0, 4},   {"exposed dp ms", 1e3, 1},
    {"exposed tp ms", 1e3, 1}, {"exposed pp ms", 1e3, 1}, {"exposed cp ms", 1e3, 1},
    {"exposed ep ms", 1e3, 1}, {"bubble ms", 1e3, 1},     {"memory GiB", 1.0, 2}};

#define PN_NAME_WIDTH 40
#define PN_CELL_WIDTH 19

/* "+0.00%", "+inf%": a change in percent. */
static void change_text(char *buf, gsize n, double change)
{
  if (change == 0.0)
    g_snprintf(buf, n, "=");
  else if (isinf(change))
    g_snprintf(buf, n, "%s", change > 0 ? "+inf%" : "-inf%");
  else
    g_snprintf(buf, n, "%+.2f%%", change * 100.0 + 0.0);
}

static void row_text(GString *s, const PnRegressRow *row)
{
  g_string_append_printf(s, "%-*s", PN_NAME_WIDTH, row->name);
  if (row->now == NULL || row->then == NULL) {
    g_string_append(s, row->now == NULL ? "  no longer in the suite (still in the baseline)\n"
                                        : "  not in the baseline (new in the suite)\n");
    return;
  }
  for (int m = 0; m < PN_METRIC_N; m++) {
    char ch[32], cell[64];
    change_text(ch, sizeof ch, row->change[m]);
    g_snprintf(cell, sizeof cell, "%.*f %s%s", columns[m].decimals, row->now->value[m] * columns[m].scale, ch,
               row->beyond[m] ? "*" : "");
    g_string_append_printf(s, " %*s", PN_CELL_WIDTH, cell);
  }
  const char *what = row->scenario_changed && row->profile_changed ? "scenario, profile"
                     : row->scenario_changed                       ? "scenario"
                     : row->profile_changed                        ? "profile"
                                                                   : "-";
  g_string_append_printf(s, "  %s\n", what);
}

char *pn_regress_report_text(const PnRegressReport *r, const PnTolerance *tol)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%-*s", PN_NAME_WIDTH, "scenario (largest change first)");
  for (int m = 0; m < PN_METRIC_N; m++)
    g_string_append_printf(s, " %*s", PN_CELL_WIDTH, columns[m].head);
  g_string_append(s, "  changed since\n");
  for (guint i = 0; i < r->rows->len; i++)
    row_text(s, &g_array_index(r->rows, PnRegressRow, i));
  for (guint i = 0; i < r->rows->len; i++) {
    const PnRegressRow *row = &g_array_index(r->rows, PnRegressRow, i);
    for (int m = 0; m < PN_METRIC_N && row->now && row->then; m++) {
      if (!row->beyond[m])
        continue;
      char ch[32];
      change_text(ch, sizeof ch, row->change[m]);
      g_string_append_printf(s, "beyond tolerance: %s: %s %.9g -> %.9g (%s, tolerance %g%%)\n", row->name,
                             pn_metric_name(m), row->then->value[m], row->now->value[m], ch, tol->pct[m]);
    }
  }
  if (pn_regress_passed(r))
    g_string_append_printf(s, "%u scenarios, %u predictions: every change within tolerance\n", r->rows->len,
                           r->rows->len * PN_METRIC_N);
  else
    g_string_append_printf(s,
                           "%u scenarios: %d predictions beyond tolerance, %d scenarios on one side only (* marks "
                           "a change beyond tolerance; update the baseline on purpose: --update -m \"why\")\n",
                           r->rows->len, r->n_beyond, r->n_unpaired);
  return g_string_free(s, FALSE);
}

static void metric_json(PnJsonWriter *w, const PnRegressRow *row, int m, const PnTolerance *tol)
{
  pn_jsonw_object(w, pn_metric_name(m), PN_JSONW_INLINE);
  pn_jsonw_double(w, "baseline", row->then->value[m]);
  pn_jsonw_double(w, "now", row->now->value[m]);
  if (isinf(row->change[m]))
    pn_jsonw_string(w, "change_pct", row->change[m] > 0 ? "+inf" : "-inf");
  else
    pn_jsonw_double(w, "change_pct", row->change[m] * 100.0);
  pn_jsonw_double(w, "tolerance_pct", tol->pct[m]);
  pn_jsonw_bool(w, "beyond", row->beyond[m]);
  pn_jsonw_end(w);
}

char *pn_regress_report_json(const PnRegressReport *r, const PnTolerance *tol)
{
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_int(w, "schema_version", 1);
  pn_jsonw_bool(w, "passed", pn_regress_passed(r));
  pn_jsonw_int(w, "beyond_tolerance", r->n_beyond);
  pn_jsonw_int(w, "unpaired", r->n_unpaired);
  pn_jsonw_array(w, "scenarios", PN_JSONW_BLOCK);
  for (guint i = 0; i < r->rows->len; i++) {
    const PnRegressRow *row = &g_array_index(r->rows, PnRegressRow, i);
    pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
    pn_jsonw_string(w, "name", row->name);
    pn_jsonw_string(w, "status", row->now == NULL ? "missing" : row->then == NULL ? "new" : "compared");
    if (row->now && row->then) {
      pn_jsonw_bool(w, "scenario_changed", row->scenario_changed);
      pn_jsonw_bool(w, "profile_changed", row->profile_changed);
      pn_jsonw_object(w, "metrics", PN_JSONW_BLOCK);
      for (int m = 0; m < PN_METRIC_N; m++)
        metric_json(w, row, m, tol);
      pn_jsonw_end(w);
    }
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
}
