/* trace.c — Chrome trace writer (see trace.h). */
#include "io/trace.h"

#include "hw/coll.h"
#include "io/jsonw.h"
#include "io/out.h"
#include "io/trace-private.h"

static const char *const stream_names[PN_STREAM_N] = {"compute", "tp_comm", "dp_comm", "pp_next",
                                                      "pp_prev", "cp_comm", "ep_comm", "shared_expert"};
static const char *const class_names[PN_CLASS_N]   = {"dp", "tp", "pp", "cp", "ep"};

/* A metadata event naming a process (a GPU) or a thread (a stream, tid >= 0). */
static void name_event(PnJsonWriter *w, const char *what, uint32_t gpu, int tid, const char *name)
{
  pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_string(w, "ph", "M");
  pn_jsonw_string(w, "name", what);
  pn_jsonw_int(w, "pid", gpu);
  if (tid >= 0)
    pn_jsonw_int(w, "tid", tid);
  pn_jsonw_object(w, "args", PN_JSONW_INLINE);
  pn_jsonw_string(w, "name", name);
  pn_jsonw_end(w);
  pn_jsonw_end(w);
}

static void task_event(PnJsonWriter *w, PnTaskId id, const PnTask *t, const PnTaskTime *tt)
{
  pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_string(w, "ph", "X");
  pn_jsonw_string(w, "name", t->label ? t->label : "?");
  pn_jsonw_string(w, "cat", t->cls >= 0 && t->cls < PN_CLASS_N ? class_names[t->cls] : "compute");
  pn_jsonw_int(w, "pid", t->gpu);
  pn_jsonw_int(w, "tid", t->stream);
  pn_jsonw_fixed(w, "ts", (double)tt->start_ns / 1e3, 3);
  pn_jsonw_fixed(w, "dur", (double)(tt->end_ns - tt->start_ns) / 1e3, 3);
  pn_jsonw_object(w, "args", PN_JSONW_INLINE);
  pn_jsonw_int(w, "id", id);
  pn_jsonw_int(w, "mb", t->microbatch);
  pn_jsonw_int(w, "chunk", t->chunk);
  pn_jsonw_int(w, "layer", t->layer);
  pn_jsonw_int(w, "sms", t->sms);
  if (t->kind == PN_TASK_COMM && t->coll.bytes > 0.0f && tt->end_ns > tt->start_ns) {
    /* nccl-tests' figures of this call: S, n, algbw = S / time, busbw = algbw x factor */
    double algbw = (double)t->coll.bytes / (double)(tt->end_ns - tt->start_ns);
    pn_jsonw_string(w, "collective", pn_coll_kind_name((PnCollKind)t->coll.kind));
    pn_jsonw_int(w, "ranks", t->coll.ranks);
    pn_jsonw_fixed(w, "size_bytes", (double)t->coll.bytes, 0);
    pn_jsonw_fixed(w, "algbw_gbps", algbw, 2);
    pn_jsonw_fixed(w, "busbw_gbps", algbw * pn_coll_busbw_factor((PnCollKind)t->coll.kind, t->coll.ranks), 2);
  }
  pn_jsonw_end(w);
  pn_jsonw_end(w);
}

static bool in_window(const PnTraceOptions *opt, const PnTaskTime *tt)
{
  return !opt->window || (tt->start_ns < opt->end_ns && (tt->end_ns > opt->start_ns || tt->start_ns >= opt->start_ns));
}

static const PnTaskTime *task_time(const PnExecResult *ex, PnTaskId id)
{
  return &g_array_index(ex->times, PnTaskTime, id);
}

/* The opening and the names of the processes and threads, before the tasks. */
static void begin(PnJsonWriter *w, const PnGraph *g)
{
  pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_string(w, "displayTimeUnit", "ns");
  pn_jsonw_array(w, "traceEvents", PN_JSONW_BLOCK);
  for (uint32_t gpu = 0; gpu < g->n_gpus; gpu++) {
    char stage[32];
    g_snprintf(stage, sizeof stage, "stage %u", gpu);
    name_event(w, "process_name", gpu, -1, stage);
    for (int st = 0; st < PN_STREAM_N; st++)
      name_event(w, "thread_name", gpu, st, stream_names[st]);
    for (int c = 0; c < PN_CLASS_N; c++) {
      char track[32];
      g_snprintf(track, sizeof track, "exposed %s", class_names[c]);
      name_event(w, "thread_name", gpu, PN_TRACE_TID_EXPOSED + c, track);
    }
    name_event(w, "thread_name", gpu, PN_TRACE_TID_BUBBLE, "bubble");
  }
}

/* The trace's size in bytes, about: the names exactly, the events (tasks, then `marks`) from a
 * sample of at most PN_TRACE_SAMPLE of them spread over the run (an event's size varies with its
 * label and digits only); exact when there are no more events than that. *n_events: the events
 * kept. */
#define PN_TRACE_SAMPLE 4096
static guint64 estimate_bytes(const PnGraph *g, const PnExecResult *ex, const GArray *marks, const PnTraceOptions *opt,
                              guint64 *n_events)
{
  guint64 n = marks->len;
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++)
    n += in_window(opt, task_time(ex, id));
  g_autoptr(PnJsonWriter) w = pn_jsonw_new(0);
  begin(w, g);
  guint64 names = pn_jsonw_bytes(w), stride = MAX(1, n / PN_TRACE_SAMPLE), kept = 0, sampled = 0;
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    if (!in_window(opt, task_time(ex, id)))
      continue;
    if (kept++ % stride == 0) {
      task_event(w, id, &pn_graph_tasks(g)[id], task_time(ex, id));
      sampled++;
    }
  }
  for (guint i = 0; i < marks->len; i++)
    if (kept++ % stride == 0) {
      pn__trace_mark_event(w, &g_array_index(marks, PnTraceMark, i));
      sampled++;
    }
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  *n_events    = n;
  guint64 tail = pn_jsonw_bytes(w) - names; /* the sampled events and the closing */
  return sampled == n ? pn_jsonw_bytes(w) : names + (guint64)((double)tail * (double)n / (double)sampled);
}

/* "1.0 GiB": g_format_size would put a no-break space in a message meant for grep. */
static char *size_text(guint64 bytes)
{
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v                         = (double)bytes;
  int u                            = 0;
  while (v >= 1024.0 && u + 1 < (int)G_N_ELEMENTS(units)) {
    v /= 1024.0;
    u++;
  }
  return u == 0 ? g_strdup_printf("%" G_GUINT64_FORMAT " bytes", bytes) : g_strdup_printf("%.1f %s", v, units[u]);
}

static void fail_bound(GError **error, const char *path, guint64 estimate, guint64 n, guint64 max)
{
  g_autofree char *size  = size_text(estimate);
  g_autofree char *bound = size_text(max);
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_BOUND,
              "%s: the trace would take about %s (%" G_GUINT64_FORMAT " events), more than its bound of %s", path, size,
              n, bound);
}

/* The text passed the bound though the estimate kept within it (its sample missed longer labels):
 * the writing stops there. */
static gboolean passed(GError **error, const char *path, const PnJsonWriter *w, guint64 n, const PnTraceOptions *opt)
{
  if (opt->max_bytes == 0 || pn_jsonw_bytes(w) <= opt->max_bytes)
    return FALSE;
  g_autofree char *bound = size_text(opt->max_bytes);
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_BOUND,
              "%s: the trace (%" G_GUINT64_FORMAT " events) passed its bound of %s while being written", path, n,
              bound);
  return TRUE;
}

gboolean pn_trace_write(const char *path, const PnGraph *g, const PnExecResult *ex, const GArray *spans,
                        const PnTraceOptions *opt, GError **error)
{
  const PnTraceOptions all = {0};
  opt                      = opt ? opt : &all;
  guint64 n                = 0;
  g_autoptr(GArray) marks  = pn__trace_marks(g, ex, spans, opt);
  if (opt->max_bytes > 0) {
    guint64 estimate = estimate_bytes(g, ex, marks, opt, &n);
    if (estimate > opt->max_bytes) {
      fail_bound(error, path, estimate, n, opt->max_bytes);
      return FALSE;
    }
  }
  g_autoptr(PnOut) out = pn_out_open(path, error);
  if (out == NULL)
    return FALSE;
  /* declared after `out`, so freed before it is aborted */
  /* indent 0: the events' array puts one event on each line, unindented */
  g_autoptr(PnJsonWriter) w = pn_jsonw_new_out(out, 0);
  begin(w, g);
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    if (!in_window(opt, task_time(ex, id)))
      continue;
    task_event(w, id, &pn_graph_tasks(g)[id], task_time(ex, id));
    if (passed(error, path, w, n, opt))
      return FALSE;
  }
  for (guint i = 0; i < marks->len; i++) {
    pn__trace_mark_event(w, &g_array_index(marks, PnTraceMark, i));
    if (passed(error, path, w, n, opt))
      return FALSE;
  }
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  if (passed(error, path, w, n, opt))
    return FALSE;
  pn_jsonw_finish(g_steal_pointer(&w));
  return pn_out_commit(g_steal_pointer(&out), error);
}
