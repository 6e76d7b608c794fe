/* trace.c — Chrome trace writer (see trace.h). */
#include "io/trace.h"

#include "io/file.h"

static const char *const stream_names[PN_STREAM_N] = {"compute",     "tp_comm",      "dp_comm", "pp_next",
                                                      "pp_prev",     "cp_comm",      "ep_comm", "ub_compute1",
                                                      "ub_compute2", "shared_expert"};
static const char *const class_names[PN_CLASS_N]   = {"dp", "tp", "pp", "cp", "ep"};

gboolean pn_trace_write(const char *path, const PnGraph *g, const PnExecResult *ex, GError **error)
{
  GString *s = g_string_sized_new(128 * (gsize)pn_graph_n_tasks(g) + 1024);
  g_string_append(s, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  for (uint32_t gpu = 0; gpu < g->n_gpus; gpu++) {
    g_string_append_printf(s,
                           "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %u, \"args\": {\"name\": "
                           "\"stage %u\"}},\n",
                           gpu, gpu);
    for (int st = 0; st < PN_STREAM_N; st++)
      g_string_append_printf(s,
                             "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %u, \"tid\": %d, \"args\": "
                             "{\"name\": \"%s\"}},\n",
                             gpu, st, stream_names[st]);
  }
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    const PnTask *t      = &pn_graph_tasks(g)[id];
    const PnTaskTime *tt = &g_array_index(ex->times, PnTaskTime, id);
    const char *cls      = t->cls >= 0 && t->cls < PN_CLASS_N ? class_names[t->cls] : "compute";
    g_string_append_printf(
        s,
        "{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"%s\", \"pid\": %u, \"tid\": %u, \"ts\": %.3f, "
        "\"dur\": %.3f, \"args\": {\"id\": %u, \"mb\": %d, \"chunk\": %d, \"layer\": %d, \"sms\": %d}},\n",
        t->label ? t->label : "?", cls, t->gpu, t->stream, (double)tt->start_ns / 1e3,
        (double)(tt->end_ns - tt->start_ns) / 1e3, id, t->microbatch, t->chunk, t->layer, t->sms);
  }
  if (s->len >= 2 && s->str[s->len - 2] == ',')
    g_string_truncate(s, s->len - 2);
  g_string_append(s, "\n]}\n");
  gboolean ok = pn_io_write_file_atomic(path, s->str, s->len, error);
  g_string_free(s, TRUE);
  return ok;
}
