/* trace.h — a simulated timeline as a Chrome / Perfetto trace ("traceEvents" JSON).
 *
 * One process per simulated GPU (pipeline stage), one thread per CUDA stream; every task is a
 * complete event ("ph": "X") with its label, micro-batch, chunk, layer, class and SMs held.
 * Beside the tasks (trace-private.h): a flow arrow ("s" / "f", one id per leg) from each P2P send
 * to its receive; per GPU a track per class of the exposed spans the accounting charges ("exposed
 * pp", each with its "share": 1 / the classes in flight; the sum over a class's events of dur x
 * share, over GPUs and divided by their number, is the report's exposed_comm_s of that class) and
 * a track of the idle spans ("bubble"), both over the reported (last) iteration; and counters
 * ("C") of the SMs held by communication kernels and of NVLink and NIC traffic (GB/s).
 * Times in microseconds (the format's unit) with nanosecond decimals. Open the file in
 * chrome://tracing or ui.perfetto.dev.
 *
 * Size: about 180 bytes per task, so a run near the builder's task limit (2e7) would take some
 * GB. A trace is written only within a bound (PnTraceOptions.max_bytes): its size is estimated
 * before anything is opened, and the writing stops, leaving the path untouched, should the text
 * pass the bound all the same. A time window keeps the tasks of a part of the run.
 * Cost: linear in tasks; streamed to the output (io/out.h: published over the path only when
 * complete), holding about 64 KiB (io/jsonw.h) whatever the trace's size.
 */
#ifndef PN_IO_TRACE_H
#define PN_IO_TRACE_H

#include <glib.h>
#include <stdbool.h>

#include "hw/exec.h"
#include "hw/graph.h"

#define PN_TRACE_MAX_BYTES ((guint64)1 << 30) /* the command's default bound */

typedef struct {
  guint64 max_bytes; /* refuse a trace larger than this; 0: no bound */
  bool window;       /* keep only the tasks running at some time in [start_ns, end_ns) (a task
                        of no duration: starting in it) */
  PnTimeNs start_ns, end_ns;
} PnTraceOptions;

/* Writes the trace of the executed graph `g` to `path` (io/out.h); `spans` (of PnSimSpan, sim.h;
 * NULL: no exposed or bubble tracks) are the run's; `opt` NULL: all tasks, no bound. Errors: those of io/out.h, and
 * PN_IO_ERROR_BOUND, "<path>: the trace would take about 4.1 GiB (23000000 events), more than its bound of 1.0 GiB". */
gboolean pn_trace_write(const char *path, const PnGraph *g, const PnExecResult *ex, const GArray *spans,
                        const PnTraceOptions *opt, GError **error);

#endif
