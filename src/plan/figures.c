/* figures.c — a plan's figures: their data in <report>/plots/ (plans.dat, breakdown.dat), and the
 * SVG (for the HTML page) and PNG (for the Markdown) of each, drawn there by gnuplot from the
 * script plots/plan.gp of penumbra's data directory (io/plot.h) (report.h). */
#include <math.h>
#include <string.h>

#include "io/file.h"
#include "io/plot.h"
#include "plan/report.h"

#define DAY_S 86400.0

/* plans.dat: one block per kind (gnuplot's `index`), a line per planned count. */
static char *plans_data(const PnPlanResult *r)
{
  GString *s = g_string_new("# gpus train_days spend tflops_per_gpu efficiency memory_gib hbm_gib\n");
  for (guint k = 0; k < r->sweeps->len; k++) {
    const PnPlanKind *kind = &g_array_index(r->spec->kinds, PnPlanKind, k);
    const PnPlanSweep *sw  = r->sweeps->pdata[k];
    g_string_append_printf(s, "%s# %s\n", k ? "\n\n" : "", kind->profile);
    for (guint i = 0; i < r->points->len; i++) {
      const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
      if (p->kind != k || !p->chosen)
        continue;
      const PnSweepRow *b = pn_plan_best(p);
      g_string_append_printf(s, "%" G_GINT64_FORMAT " %.4f %.4f %.2f %.4f %.3f %.3f\n", p->gpus, p->train_s / DAY_S,
                             r->priced ? p->cost : p->gpu_hours, b->tflops_per_gpu, p->efficiency, b->memory_gib,
                             sw->base->hw->hbm_bytes / (1024.0 * 1024.0 * 1024.0));
    }
  }
  return g_string_free(s, FALSE);
}

/* breakdown.dat: where each plan's iteration goes, in percent of it. */
static char *breakdown_data(const PnPlanResult *r)
{
  GString *s = g_string_new("# plan compute bubble dp tp pp cp ep other (percent of the iteration)\n");
  for (guint i = 0; i < r->points->len; i++) {
    const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
    if (!p->chosen)
      continue;
    double parts[PN_PLAN_PARTS];
    pn_plan_breakdown(pn_plan_best(p), parts);
    const PnPlanKind *kind = &g_array_index(r->spec->kinds, PnPlanKind, p->kind);
    g_string_append_printf(s, "\"%s %" G_GINT64_FORMAT "\"", kind->profile, p->gpus);
    double it = pn_plan_best(p)->iteration_s;
    for (int k = 0; k < PN_PLAN_PARTS; k++)
      g_string_append_printf(s, " %.3f", 100.0 * parts[k] / it);
    g_string_append_c(s, '\n');
  }
  return g_string_free(s, FALSE);
}

static gboolean put(const PnOutDir *dir, const char *name, char *text, GError **error)
{
  g_autofree char *owned = text;
  g_autoptr(PnOut) out   = pn_out_dir_file(dir, name, error);
  if (out == NULL)
    return FALSE;
  pn_out_write(out, owned, strlen(owned));
  return pn_out_commit(g_steal_pointer(&out), error);
}

/* plots/<name>.svg and plots/<name>.png, from plots/plan.gp with `vars` and fig=<name>. */
static gboolean draw(const PnOutDir *dir, const char *name, const char *data, const char **vars, GError **error)
{
  vars[1] = name; /* vars[0] is "fig" */
  for (int e = 0; e < 2; e++) {
    g_autofree char *file = g_strdup_printf("%s.%s", name, e == 0 ? "svg" : "png");
    g_autofree char *path = g_build_filename(pn_out_dir_path(dir), file, NULL);
    if (!pn_plot_render("plan.gp", data, vars, path, error))
      return FALSE;
  }
  return TRUE;
}

gboolean pn_plan_figures(const PnPlanResult *r, const PnOutDir *plots, GError **error)
{
  GString *xt = g_string_new(NULL), *kinds = g_string_new(NULL);
  for (guint c = 0; c < r->counts->len; c++)
    g_string_append_printf(xt, "%s%" G_GINT64_FORMAT, c ? ", " : "", g_array_index(r->counts, int64_t, c));
  for (guint k = 0; k < r->sweeps->len; k++)
    g_string_append_printf(kinds, "%s%s", k ? " " : "", g_array_index(r->spec->kinds, PnPlanKind, k).profile);
  g_autofree char *xtics = g_string_free(xt, FALSE), *kind_list = g_string_free(kinds, FALSE);
  const char *vars[]     = {"fig", NULL, "kinds", kind_list, "xtics", xtics, "spend", r->priced ? "cost" : "GPU-hours",
                            NULL,  NULL};
  g_autofree char *plans = plans_data(r), *breakdown = breakdown_data(r);
  if (!put(plots, "plans.dat", g_strdup(plans), error) || !put(plots, "breakdown.dat", g_strdup(breakdown), error))
    return FALSE;
  const char *lines[] = {"time", "cost", "tflops", "efficiency", "memory"};
  for (gsize i = 0; i < G_N_ELEMENTS(lines); i++)
    if (!draw(plots, lines[i], plans, vars, error))
      return FALSE;
  return draw(plots, "breakdown", breakdown, vars, error);
}
