/* figures.c — a plan's figures: gnuplot data and scripts in <report>/plots/, and the SVG (for the
 * HTML page) and PNG (for the Markdown) that gnuplot draws from them there (report.h). */
#include <math.h>
#include <string.h>

#include "io/file.h"
#include "plan/report.h"

#define DAY_S 86400.0

/* A gnuplot script that draws `plot` twice: plots/<name>.svg and plots/<name>.png. */
static char *script(const char *name, const char *setup, const char *plot)
{
  return g_strdup_printf("# %s: drawn by penumbra plan from the data beside it; run `gnuplot %s.gp` here to redraw\n"
                         "set terminal svg size 720,420 dynamic font 'sans,12'\nset output '%s.svg'\n"
                         "set grid\nset key top left\n%s\n%s\n"
                         "set terminal pngcairo size 720,420 font 'sans,10'\nset output '%s.png'\nreplot\n",
                         name, name, name, setup, plot, name);
}

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

/* `plot` of column `col` of plans.dat, a line per kind. */
static char *per_kind(const PnPlanResult *r, const char *col, bool hbm)
{
  GString *s = g_string_new("plot ");
  for (guint k = 0; k < r->sweeps->len; k++) {
    const PnPlanKind *kind = &g_array_index(r->spec->kinds, PnPlanKind, k);
    g_string_append_printf(s, "%s'plans.dat' index %u using 1:%s with linespoints lw 2 pt 7 title '%s'", k ? ", " : "",
                           k, col, kind->profile);
    if (hbm)
      g_string_append_printf(s, ", '' index %u using 1:7 with lines dt 2 lw 1 title '%s HBM'", k, kind->profile);
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

static gboolean draw(const PnOutDir *dir, const char *name, GError **error)
{
  g_autofree char *gp  = g_strdup_printf("%s.gp", name);
  const char *argv[]   = {"gnuplot", gp, NULL};
  g_autofree char *err = NULL;
  gint status          = 0;
  if (!g_spawn_sync(pn_out_dir_path(dir), (char **)argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                    NULL, NULL, &err, &status, error))
    return FALSE;
  if (!g_spawn_check_wait_status(status, NULL)) { /* warnings on stderr (a range of one count) are not failures */
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "gnuplot %s.gp: %s", name,
                err && *err ? g_strchomp(err) : "failed");
    return FALSE;
  }
  return TRUE;
}

gboolean pn_plan_figures(const PnPlanResult *r, const PnOutDir *plots, GError **error)
{
  const char *x = "set logscale x 2\nset xlabel 'GPUs'\nset xtics (";
  GString *xt   = g_string_new(x);
  for (guint c = 0; c < r->counts->len; c++)
    g_string_append_printf(xt, "%s%" G_GINT64_FORMAT, c ? ", " : "", g_array_index(r->counts, int64_t, c));
  g_string_append(xt, ")\n");
  g_autofree char *xs = g_string_free(xt, FALSE);
  g_autofree char *spend_label =
      g_strdup_printf("%sset ylabel '%s'\nset title 'Cost of the run'", xs, r->priced ? "cost" : "GPU-hours");
  g_autofree char *time_setup = g_strdup_printf("%sset ylabel 'days'\nset title 'Time to train'", xs);
  g_autofree char *tf_setup =
      g_strdup_printf("%sset ylabel 'model TFLOP/s per GPU'\nset title 'Throughput per GPU'", xs);
  g_autofree char *eff_setup = g_strdup_printf(
      "%sset ylabel 'tokens/s/GPU relative to the smallest count'\nset yrange [0:1.1]\nset title 'Scaling efficiency'",
      xs);
  g_autofree char *mem_setup =
      g_strdup_printf("%sset ylabel 'GiB per GPU'\nset yrange [0:*]\nset title 'Memory per GPU against HBM'", xs);
  const char *bar_setup =
      "set style data histogram\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
      "set boxwidth 0.75\nset ylabel 'percent of the iteration'\nset yrange [0:100]\n"
      "set xtics rotate by -45\nset key outside right\nset title 'Where the iteration goes'";
  const char *bar_plot    = "plot 'breakdown.dat' using 2:xtic(1) title 'compute', '' using 3 title 'bubble', "
                            "'' using 4 title 'exposed DP', '' using 5 title 'exposed TP', '' using 6 title 'exposed PP', "
                            "'' using 7 title 'exposed CP', '' using 8 title 'exposed EP', '' using 9 title 'other'";
  g_autofree char *p_time = per_kind(r, "2", false), *p_spend = per_kind(r, "3", false);
  g_autofree char *p_tf = per_kind(r, "4", false), *p_eff = per_kind(r, "5", false), *p_mem = per_kind(r, "6", true);
  const struct {
    const char *name, *setup, *plot;
  } figs[] = {{"time", time_setup, p_time},     {"cost", spend_label, p_spend},     {"tflops", tf_setup, p_tf},
              {"efficiency", eff_setup, p_eff}, {"breakdown", bar_setup, bar_plot}, {"memory", mem_setup, p_mem}};
  if (!put(plots, "plans.dat", plans_data(r), error) || !put(plots, "breakdown.dat", breakdown_data(r), error))
    return FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS(figs); i++) {
    g_autofree char *gp = g_strdup_printf("%s.gp", figs[i].name);
    if (!put(plots, gp, script(figs[i].name, figs[i].setup, figs[i].plot), error) || !draw(plots, figs[i].name, error))
      return FALSE;
  }
  return TRUE;
}
