/* report.h — what a plan reports: the answer (the cheapest plan that meets the deadline, the
 * fastest within the budget, or which comes closest and by how much it misses), a plan per GPU
 * kind and count with its time to train, GPU-hours, cost, throughput, MFU and scaling
 * efficiency, where the iteration goes, memory against HBM, what each overlap strategy is worth
 * on the recommended layout and the layouts within penumbra's error of it, and the assumptions.
 * As Markdown and HTML of the same blocks (doc.h), CSV and JSON of every evaluated point, and
 * gnuplot figures.
 */
#ifndef PN_PLAN_REPORT_H
#define PN_PLAN_REPORT_H

#include <glib.h>

#include "io/out.h"
#include "plan/doc.h"
#include "plan/plan.h"

/* Where a layout's iteration goes: compute, bubble, exposed DP, TP, PP, CP, EP communication,
 * and the rest (what the accounting leaves, never negative), in seconds. */
#define PN_PLAN_PARTS 8
void pn_plan_breakdown(const PnSweepRow *row, double parts[PN_PLAN_PARTS]);

/* The report's blocks; `version` and `commit` name the build. */
PnDoc *pn_plan_doc(const PnPlanResult *r, const char *version, const char *commit);
char *pn_plan_csv(const PnPlanResult *r);
char *pn_plan_json(const PnPlanResult *r, const char *version, const char *commit);
/* The data, the scripts and the figures (gnuplot) in `plots`. Errors: a file, gnuplot. */
gboolean pn_plan_figures(const PnPlanResult *r, const PnOutDir *plots, GError **error);

#endif
