/* trace.c — Chrome trace writer (see trace.h). */
#include "io/trace.h"

#include "io/jsonw.h"
#include "io/out.h"

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
  pn_jsonw_end(w);
  pn_jsonw_end(w);
}

gboolean pn_trace_write(const char *path, const PnGraph *g, const PnExecResult *ex, GError **error)
{
  g_autoptr(PnOut) out = pn_out_open(path, error);
  if (out == NULL)
    return FALSE;
  /* declared after `out`, so freed before it is aborted; indent 0: the events' array puts one
   * event on each line, unindented */
  g_autoptr(PnJsonWriter) w = pn_jsonw_new_out(out, 0);
  pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_string(w, "displayTimeUnit", "ns");
  pn_jsonw_array(w, "traceEvents", PN_JSONW_BLOCK);
  for (uint32_t gpu = 0; gpu < g->n_gpus; gpu++) {
    char stage[32];
    g_snprintf(stage, sizeof stage, "stage %u", gpu);
    name_event(w, "process_name", gpu, -1, stage);
    for (int st = 0; st < PN_STREAM_N; st++)
      name_event(w, "thread_name", gpu, st, stream_names[st]);
  }
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++)
    task_event(w, id, &pn_graph_tasks(g)[id], &g_array_index(ex->times, PnTaskTime, id));
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  pn_jsonw_finish(g_steal_pointer(&w));
  return pn_out_commit(g_steal_pointer(&out), error);
}
