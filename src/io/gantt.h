/* gantt.h — one simulated iteration as a Gantt chart drawn by gnuplot (plots/gantt.gp, io/plot.h):
 * one row per CUDA stream that has work, per pipeline stage, its tasks coloured by what they are
 * (compute, or the class of their communication); below each stage's streams a row of its
 * exposed communication (the accounting's spans, sim.h PnSimSpan, coloured by class and outlined
 * in red) and its bubble (grey); behind each stage's rows the same exposed spans as a light red
 * band and the bubble as a grey one, so that what the step waits on shows across the streams.
 *
 * A window [start_ns, end_ns) keeps a long iteration readable: tasks and spans are clipped to it.
 * Cost: linear in tasks (the data), plus gnuplot drawing one box per task in the window.
 */
#ifndef PN_IO_GANTT_H
#define PN_IO_GANTT_H

#include <glib.h>

#include "hw/exec.h"
#include "hw/graph.h"

typedef struct {
  PnTimeNs start_ns, end_ns; /* the window; end_ns <= start_ns: up to the last task's end */
  const char *title;         /* the chart's title (the scenario) */
} PnGanttOptions;

/* The window of micro-batch group `group` (micro-batches group x size .. (group + 1) x size - 1):
 * from the earliest start to the latest end of their compute tasks that start at or after
 * `from_ns` (the reported iteration's start). FALSE when the group has no such task. */
gboolean pn_gantt_group_window(const PnGraph *g, const PnExecResult *ex, int group, int size, PnTimeNs from_ns,
                               PnTimeNs *start_ns, PnTimeNs *end_ns);

/* Draws the chart of the executed graph `g` with its `spans` (of PnSimSpan) to `path` (.svg or
 * .png). Errors: those of io/plot.h; PN_IO_ERROR_INVALID when nothing runs in the window. */
gboolean pn_gantt_write(const char *path, const PnGraph *g, const PnExecResult *ex, const GArray *spans,
                        const PnGanttOptions *opt, GError **error);

#endif
