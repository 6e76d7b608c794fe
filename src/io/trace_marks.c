/* trace_marks.c — the trace's flows, exposed and idle tracks and counters (see trace-private.h). */
#include "io/trace-private.h"

#include <math.h>

#include "sim/sim.h"

static const PnTaskTime *time_of(const PnExecResult *ex, PnTaskId id)
{
  return &g_array_index(ex->times, PnTaskTime, id);
}

static bool kept(const PnTraceOptions *opt, PnTimeNs t)
{
  return !opt->window || (t >= opt->start_ns && t < opt->end_ns);
}

/* An arrow from each send leg to its receive, at the moment the transfer can start (both ends
 * posted: NCCL's rendezvous), which lies inside both tasks. */
static void add_flows(GArray *marks, const PnGraph *g, const PnExecResult *ex, const PnTraceOptions *opt)
{
  const PnTask *tasks = pn_graph_tasks(g);
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    const PnTask *t = &tasks[id];
    if (t->kind != PN_TASK_P2P)
      continue;
    const PnP2pLeg *legs = pn_graph_legs(g, t);
    for (int l = 0; l < t->n_legs; l++) {
      if (!legs[l].is_send)
        continue;
      const PnTask *peer = &tasks[legs[l].peer];
      PnTimeNs ts        = MAX(time_of(ex, id)->start_ns, time_of(ex, legs[l].peer)->start_ns);
      if (!kept(opt, ts))
        continue;
      PnTraceMark s = {.kind  = PN_MARK_FLOW_START,
                       .gpu   = t->gpu,
                       .tid   = t->stream,
                       .ts_ns = ts,
                       .id    = (uint64_t)id * PN_TASK_MAX_LEGS + (uint64_t)l};
      PnTraceMark f = s;
      f.kind        = PN_MARK_FLOW_FINISH;
      f.gpu         = peer->gpu;
      f.tid         = peer->stream;
      g_array_append_val(marks, s);
      g_array_append_val(marks, f);
    }
  }
}

/* The accounting's spans, clipped to the window: one mark per class in flight, or the bubble's. */
static void add_spans(GArray *marks, const GArray *spans, const PnTraceOptions *opt)
{
  for (guint i = 0; spans != NULL && i < spans->len; i++) {
    const PnSimSpan *sp = &g_array_index(spans, PnSimSpan, i);
    PnTimeNs a = sp->start_ns, b = sp->end_ns;
    if (opt->window) {
      a = MAX(a, opt->start_ns);
      b = MIN(b, opt->end_ns);
    }
    if (b <= a)
      continue;
    int n = __builtin_popcount(sp->classes);
    if (n == 0) {
      PnTraceMark m = {.kind = PN_MARK_BUBBLE, .gpu = sp->gpu, .tid = PN_TRACE_TID_BUBBLE, .ts_ns = a, .dur_ns = b - a};
      g_array_append_val(marks, m);
      continue;
    }
    for (int c = 0; c < PN_CLASS_N; c++)
      if (sp->classes & (1u << c)) {
        PnTraceMark m = {.kind   = PN_MARK_EXPOSED,
                         .cls    = (int8_t)c,
                         .gpu    = sp->gpu,
                         .tid    = (uint8_t)(PN_TRACE_TID_EXPOSED + c),
                         .ts_ns  = a,
                         .dur_ns = b - a,
                         .share  = 1.0 / n};
        g_array_append_val(marks, m);
      }
  }
}

/* A change of a GPU's counters at t. */
typedef struct {
  uint32_t gpu;
  PnTimeNs t;
  double sms, nvlink, nic; /* SMs, bytes per ns */
} PnDelta;

static gint delta_cmp(gconstpointer a, gconstpointer b)
{
  const PnDelta *x = a, *y = b;
  if (x->gpu != y->gpu)
    return x->gpu < y->gpu ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

/* The changes every communication task brings at its start and takes back at its end. */
static GArray *counter_deltas(const PnGraph *g, const PnExecResult *ex)
{
  GArray *d           = g_array_new(FALSE, FALSE, sizeof(PnDelta));
  const PnTask *tasks = pn_graph_tasks(g);
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    const PnTask *t      = &tasks[id];
    const PnTaskTime *tt = time_of(ex, id);
    double dur           = (double)(tt->end_ns - tt->start_ns);
    if ((t->kind != PN_TASK_COMM && t->kind != PN_TASK_P2P) || dur <= 0.0)
      continue;
    PnDelta on = {.gpu = t->gpu, .t = tt->start_ns, .sms = t->sms};
    if (t->kind == PN_TASK_COMM) {
      on.nvlink = t->nvlink_bytes / dur;
      on.nic    = t->nic_bytes / dur;
    } else {
      const PnP2pLeg *legs = pn_graph_legs(g, t);
      for (int l = 0; l < t->n_legs; l++)
        *(legs[l].over_nic ? &on.nic : &on.nvlink) += legs[l].bytes / dur;
    }
    PnDelta off = {.gpu = t->gpu, .t = tt->end_ns, .sms = -on.sms, .nvlink = -on.nvlink, .nic = -on.nic};
    g_array_append_val(d, on);
    g_array_append_val(d, off);
  }
  g_array_sort(d, delta_cmp);
  return d;
}

/* One counter mark per GPU and moment its counters change (in the window; the value at the
 * window's start opens it). */
static void add_counters(GArray *marks, const PnGraph *g, const PnExecResult *ex, const PnTraceOptions *opt)
{
  g_autoptr(GArray) d = counter_deltas(g, ex);
  PnTraceMark cur     = {.kind = PN_MARK_COUNTER, .gpu = UINT32_MAX};
  bool opened         = false;
  for (guint i = 0; i < d->len; i++) {
    const PnDelta *x = &g_array_index(d, PnDelta, i);
    if (x->gpu != cur.gpu) {
      cur    = (PnTraceMark){.kind = PN_MARK_COUNTER, .gpu = x->gpu};
      opened = false;
    }
    if (opt->window && !opened && x->t >= opt->start_ns) {
      opened = true;
      if (x->t > opt->start_ns && (cur.sms != 0.0 || cur.nvlink_gbps != 0.0 || cur.nic_gbps != 0.0)) {
        cur.ts_ns = opt->start_ns;
        g_array_append_val(marks, cur);
      }
    }
    cur.sms += x->sms;
    cur.nvlink_gbps += x->nvlink;
    cur.nic_gbps += x->nic;
    cur.ts_ns = x->t;
    bool last_of_moment =
        i + 1 == d->len || g_array_index(d, PnDelta, i + 1).gpu != x->gpu || g_array_index(d, PnDelta, i + 1).t != x->t;
    if (last_of_moment && kept(opt, x->t)) {
      /* sums of rates that cancel leave a rounding residue: a link at rest reads 0 */
      PnTraceMark m = cur;
      m.nvlink_gbps = fabs(m.nvlink_gbps) < 1e-9 ? 0.0 : m.nvlink_gbps;
      m.nic_gbps    = fabs(m.nic_gbps) < 1e-9 ? 0.0 : m.nic_gbps;
      g_array_append_val(marks, m);
    }
  }
}

GArray *pn__trace_marks(const PnGraph *g, const PnExecResult *ex, const GArray *spans, const PnTraceOptions *opt)
{
  GArray *marks = g_array_new(FALSE, FALSE, sizeof(PnTraceMark));
  add_flows(marks, g, ex, opt);
  add_spans(marks, spans, opt);
  add_counters(marks, g, ex, opt);
  return marks;
}

static void head(PnJsonWriter *w, const char *ph, const char *name, const char *cat, const PnTraceMark *m)
{
  pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_string(w, "ph", ph);
  pn_jsonw_string(w, "name", name);
  if (cat)
    pn_jsonw_string(w, "cat", cat);
  pn_jsonw_int(w, "pid", m->gpu);
  if (m->kind != PN_MARK_COUNTER)
    pn_jsonw_int(w, "tid", m->tid);
  pn_jsonw_fixed(w, "ts", (double)m->ts_ns / 1e3, 3);
}

void pn__trace_mark_event(PnJsonWriter *w, const PnTraceMark *m)
{
  static const char *const exposed[PN_CLASS_N] = {"exposed dp", "exposed tp", "exposed pp", "exposed cp", "exposed ep"};
  switch (m->kind) {
  case PN_MARK_FLOW_START:
  case PN_MARK_FLOW_FINISH:
    head(w, m->kind == PN_MARK_FLOW_START ? "s" : "f", "p2p", "p2p", m);
    pn_jsonw_uint(w, "id", m->id);
    if (m->kind == PN_MARK_FLOW_FINISH)
      pn_jsonw_string(w, "bp", "e"); /* bind to the receive that encloses ts, not the next slice */
    break;
  case PN_MARK_EXPOSED:
  case PN_MARK_BUBBLE:
    head(w, "X", m->kind == PN_MARK_BUBBLE ? "bubble" : exposed[m->cls],
         m->kind == PN_MARK_BUBBLE ? "bubble" : "exposed", m);
    pn_jsonw_fixed(w, "dur", (double)m->dur_ns / 1e3, 3);
    if (m->kind == PN_MARK_EXPOSED) {
      pn_jsonw_object(w, "args", PN_JSONW_INLINE);
      pn_jsonw_double(w, "share", m->share);
      pn_jsonw_end(w);
    }
    break;
  case PN_MARK_COUNTER:
    head(w, "C", "comm SMs", NULL, m);
    pn_jsonw_object(w, "args", PN_JSONW_INLINE);
    pn_jsonw_fixed(w, "sms", m->sms, 0);
    pn_jsonw_end(w);
    pn_jsonw_end(w);
    head(w, "C", "link GB/s", NULL, m);
    pn_jsonw_object(w, "args", PN_JSONW_INLINE);
    pn_jsonw_fixed(w, "nvlink", m->nvlink_gbps, 3);
    pn_jsonw_fixed(w, "nic", m->nic_gbps, 3);
    pn_jsonw_end(w);
    break;
  }
  pn_jsonw_end(w);
}
