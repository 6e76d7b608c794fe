/* gantt.c — the Gantt chart's data for plots/gantt.gp (see gantt.h). */
#include "io/gantt.h"

#include "io/file.h"
#include "io/plot.h"
#include "sim/sim.h"

/* Colours (0xRRGGBB) of compute and of each communication class, in PnCommClass order. */
#define PN_GANTT_COMPUTE 0x4878CF
static const unsigned class_rgb[PN_CLASS_N] = {0x59A14F, 0xF28E2B, 0xB07AA1, 0x9C755F, 0x76B7B2};
#define PN_GANTT_BUBBLE 0xBBBBBB
#define PN_GANTT_BUBBLE_BAND 0xE4E4E4
#define PN_GANTT_EXPOSED_BAND 0xFFC8C8

static const char *const stream_names[PN_STREAM_N] = {"compute", "tp comm", "dp comm", "pp send",
                                                      "pp recv", "cp comm", "ep comm", "shared expert"};

gboolean pn_gantt_group_window(const PnGraph *g, const PnExecResult *ex, int group, int size, PnTimeNs from_ns,
                               PnTimeNs *start_ns, PnTimeNs *end_ns)
{
  PnTimeNs a = -1, b = -1;
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    const PnTask *t      = &pn_graph_tasks(g)[id];
    const PnTaskTime *tt = &g_array_index(ex->times, PnTaskTime, id);
    if (t->kind != PN_TASK_COMPUTE || t->microbatch < 0 || t->microbatch / size != group || tt->start_ns < from_ns)
      continue;
    a = a < 0 ? tt->start_ns : MIN(a, tt->start_ns);
    b = MAX(b, tt->end_ns);
  }
  *start_ns = a;
  *end_ns   = b;
  return a >= 0 && b > a;
}

/* The chart's rows: for each GPU, its streams with a task in the window, then its exposed row. */
typedef struct {
  int row[PN_STREAM_N]; /* -1: not shown */
  int exposed_row, first_row;
} PnGanttStage;

static void box(GString *s, double x0_ms, double x1_ms, double y0, double y1, unsigned rgb)
{
  g_string_append_printf(s, "%.6f %.6f %.2f %.2f %u\n", x0_ms, x1_ms, y0, y1, rgb);
}

static bool clip(PnTimeNs *a, PnTimeNs *b, PnTimeNs start_ns, PnTimeNs end_ns)
{
  *a = MAX(*a, start_ns);
  *b = MIN(*b, end_ns);
  return *b > *a;
}

/* Assigns rows, top to bottom; returns how many. */
static int layout(const PnGraph *g, const PnExecResult *ex, PnTimeNs s0, PnTimeNs s1, PnGanttStage *st)
{
  for (uint32_t gpu = 0; gpu < g->n_gpus; gpu++)
    for (int k = 0; k < PN_STREAM_N; k++)
      st[gpu].row[k] = -1;
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    const PnTask *t      = &pn_graph_tasks(g)[id];
    const PnTaskTime *tt = &g_array_index(ex->times, PnTaskTime, id);
    PnTimeNs a = tt->start_ns, b = tt->end_ns;
    if (t->kind != PN_TASK_DELAY && clip(&a, &b, s0, s1))
      st[t->gpu].row[t->stream] = 0;
  }
  int rows = 0;
  for (uint32_t gpu = 0; gpu < g->n_gpus; gpu++) {
    st[gpu].first_row = rows;
    for (int k = 0; k < PN_STREAM_N; k++)
      if (st[gpu].row[k] == 0)
        st[gpu].row[k] = rows++;
    st[gpu].exposed_row = rows++;
  }
  return rows;
}

/* Data set 0: the bands behind each stage; 1: the exposed row. */
static void span_sets(GString *bands, GString *exposed, const GArray *spans, const PnGanttStage *st, PnTimeNs s0,
                      PnTimeNs s1)
{
  for (guint i = 0; spans != NULL && i < spans->len; i++) {
    const PnSimSpan *sp = &g_array_index(spans, PnSimSpan, i);
    PnTimeNs a = sp->start_ns, b = sp->end_ns;
    if (!clip(&a, &b, s0, s1))
      continue;
    const PnGanttStage *gs = &st[sp->gpu];
    double x0 = (double)a * 1e-6, x1 = (double)b * 1e-6;
    box(bands, x0, x1, gs->first_row - 0.5, gs->exposed_row + 0.5,
        sp->classes ? PN_GANTT_EXPOSED_BAND : PN_GANTT_BUBBLE_BAND);
    int n = __builtin_popcount(sp->classes), k = 0;
    if (n == 0)
      box(exposed, x0, x1, gs->exposed_row - 0.35, gs->exposed_row + 0.35, PN_GANTT_BUBBLE);
    for (int c = 0; c < PN_CLASS_N; c++) /* classes in flight together share the row's height */
      if (sp->classes & (1u << c)) {
        double y0 = gs->exposed_row - 0.35 + 0.7 * k / n;
        box(exposed, x0, x1, y0, y0 + 0.7 / n, class_rgb[c]);
        k++;
      }
  }
}

static char *chart_data(const PnGraph *g, const PnExecResult *ex, const GArray *spans, PnTimeNs s0, PnTimeNs s1,
                        int *rows)
{
  g_autofree PnGanttStage *st = g_new0(PnGanttStage, MAX(1, g->n_gpus));
  *rows                       = layout(g, ex, s0, s1, st);
  GString *tasks = g_string_new(NULL), *bands = g_string_new(NULL), *exposed = g_string_new(NULL);
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    const PnTask *t      = &pn_graph_tasks(g)[id];
    const PnTaskTime *tt = &g_array_index(ex->times, PnTaskTime, id);
    PnTimeNs a = tt->start_ns, b = tt->end_ns;
    if (t->kind == PN_TASK_DELAY || !clip(&a, &b, s0, s1))
      continue;
    int r = st[t->gpu].row[t->stream];
    box(tasks, (double)a * 1e-6, (double)b * 1e-6, r - 0.35, r + 0.35,
        t->cls >= 0 && t->cls < PN_CLASS_N ? class_rgb[t->cls] : PN_GANTT_COMPUTE);
  }
  span_sets(bands, exposed, spans, st, s0, s1);
  GString *s            = g_string_new("# x0_ms x1_ms y0 y1 rgb; data sets: bands, tasks, exposed row, row names\n");
  const GString *sets[] = {bands, tasks, exposed};
  for (int i = 0; i < 3; i++) /* an empty set still takes its index: a box of no width */
    g_string_append_printf(s, "%s%.6f %.6f 0 0 0\n\n\n", sets[i]->str, (double)s0 * 1e-6, (double)s0 * 1e-6);
  for (uint32_t gpu = 0; gpu < g->n_gpus; gpu++) {
    for (int k = 0; k < PN_STREAM_N; k++)
      if (st[gpu].row[k] >= 0)
        g_string_append_printf(s, "%d \"stage %u %s\"\n", st[gpu].row[k], gpu, stream_names[k]);
    g_string_append_printf(s, "%d \"stage %u exposed / bubble\"\n", st[gpu].exposed_row, gpu);
  }
  g_string_free(tasks, TRUE), g_string_free(bands, TRUE), g_string_free(exposed, TRUE);
  return g_string_free(s, FALSE);
}

gboolean pn_gantt_write(const char *path, const PnGraph *g, const PnExecResult *ex, const GArray *spans,
                        const PnGanttOptions *opt, GError **error)
{
  PnTimeNs s0 = opt->start_ns, s1 = opt->end_ns > opt->start_ns ? opt->end_ns : ex->makespan_ns;
  if (s1 <= s0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID, "%s: nothing runs in the window (the run ends at %.3f ms)",
                path, (double)ex->makespan_ns * 1e-6);
    return FALSE;
  }
  int rows              = 0;
  g_autofree char *data = chart_data(g, ex, spans, s0, s1, &rows);
  char rows_text[16], from[32], to[32];
  g_snprintf(rows_text, sizeof rows_text, "%d", rows);
  g_ascii_formatd(from, sizeof from, "%.6f", (double)s0 * 1e-6);
  g_ascii_formatd(to, sizeof to, "%.6f", (double)s1 * 1e-6);
  const char *const vars[] = {"title", opt->title ? opt->title : "", "rows", rows_text, "xfrom", from, "xto", to, NULL,
                              NULL};
  return pn_plot_render("gantt.gp", data, vars, path, error);
}
