/* trace-private.h — the trace's events beyond the tasks (trace_marks.c), for trace.c: flow arrows
 * from each P2P send to its receive, the exposed and idle spans of the accounting as tracks of
 * their own, and per-GPU counters of the SMs held by communication kernels and of link traffic.
 *
 * Each is gathered first as a PnTraceMark (a fixed-size record), so that the writer can estimate
 * the trace's size from a sample before it writes anything, as it does for tasks.
 * Link traffic: a transfer's bytes spread evenly over its task (its average rate, latency
 * included), summed over the transfers in flight per GPU and link kind (NVLink, NIC), in GB/s:
 * what the links carried on average over each task, not the max-min solver's instantaneous rates.
 */
#ifndef PN_IO_TRACE_PRIVATE_H
#define PN_IO_TRACE_PRIVATE_H

#include <glib.h>

#include "hw/exec.h"
#include "hw/graph.h"
#include "io/jsonw.h"
#include "io/trace.h"

/* Thread ids after the streams' (0 .. PN_STREAM_N-1): one track per class's exposed spans, then
 * the bubble's. */
#define PN_TRACE_TID_EXPOSED PN_STREAM_N
#define PN_TRACE_TID_BUBBLE (PN_STREAM_N + PN_CLASS_N)

typedef enum {
  PN_MARK_FLOW_START,  /* "s": at the send, id */
  PN_MARK_FLOW_FINISH, /* "f": at the receive, id */
  PN_MARK_EXPOSED,     /* "X" on the class's exposed track; share = 1 / classes in flight */
  PN_MARK_BUBBLE,      /* "X" on the bubble track */
  PN_MARK_COUNTER      /* "C": comm SMs, NVLink and NIC GB/s of one GPU from ts on */
} PnMarkKind;

typedef struct {
  uint8_t kind; /* PnMarkKind */
  int8_t cls;
  uint8_t tid;
  uint32_t gpu;
  PnTimeNs ts_ns, dur_ns;
  uint64_t id;
  double share, sms, nvlink_gbps, nic_gbps;
} PnTraceMark;

/* Every mark of the run that `opt`'s window keeps (spans clipped to it), GPU by GPU in time order
 * for the counters. `spans` (of PnSimSpan) may be NULL: no exposed or bubble tracks. */
GArray *pn__trace_marks(const PnGraph *g, const PnExecResult *ex, const GArray *spans, const PnTraceOptions *opt);
void pn__trace_mark_event(PnJsonWriter *w, const PnTraceMark *m);

#endif
