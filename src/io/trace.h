/* trace.h — a simulated timeline as a Chrome / Perfetto trace ("traceEvents" JSON).
 *
 * One process per simulated GPU (pipeline stage), one thread per CUDA stream; every task is a
 * complete event ("ph": "X") with its label, micro-batch, chunk, layer, class and SMs held.
 * Times in microseconds (the format's unit) with nanosecond decimals. Open the file in
 * chrome://tracing or ui.perfetto.dev. Cost: linear in tasks; streamed to the output (io/out.h:
 * published over `path` only when complete), holding about 64 KiB (io/jsonw.h).
 */
#ifndef PN_IO_TRACE_H
#define PN_IO_TRACE_H

#include <glib.h>

#include "hw/exec.h"
#include "hw/graph.h"

gboolean pn_trace_write(const char *path, const PnGraph *g, const PnExecResult *ex, GError **error);

#endif
