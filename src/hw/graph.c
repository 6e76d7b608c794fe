/* graph.c — building the task graph (graph.h). Plain appends into GArrays; no validation beyond
 * assertions on programming errors: pn_exec_run() validates the finished graph. */
#include "hw/graph.h"

#include "core/mem.h"

PnGraph *pn_graph_new(uint32_t n_gpus)
{
  PnGraph *g = g_new0(PnGraph, 1);
  g->n_gpus  = n_gpus;
  g->tasks   = g_array_new(FALSE, TRUE, sizeof(PnTask));
  g->deps    = g_array_new(FALSE, FALSE, sizeof(PnTaskId));
  g->legs    = g_array_new(FALSE, TRUE, sizeof(PnP2pLeg));
  return g;
}

void pn_graph_free(PnGraph *g)
{
  if (!g)
    return;
  g_array_free(g->tasks, TRUE);
  g_array_free(g->deps, TRUE);
  g_array_free(g->legs, TRUE);
  g_free(g);
}

PnTaskId pn_graph_add(PnGraph *g, const PnTask *t, const PnTaskId *deps, uint32_t n_deps)
{
  g_assert(t != NULL);
  g_assert(n_deps == 0 || deps != NULL);
  g_assert(g->tasks->len < PN_TASK_NONE);
  PnTaskId id = g->tasks->len;
  for (uint32_t i = 0; i < n_deps; i++)
    g_assert(deps[i] < id); /* deps must be earlier tasks: the graph stays acyclic */
  /* Appended first, then completed in place: one copy of the task instead of two. */
  g_array_append_vals(g->tasks, t, 1);
  PnTask *copy    = pn_graph_task(g, id);
  copy->dep_first = g->deps->len;
  copy->dep_count = n_deps;
  copy->n_legs    = 0;
  copy->leg_first = UINT32_MAX;
  if (copy->kind == PN_TASK_P2P) {
    copy->leg_first = g->legs->len;
    g_array_set_size(g->legs, g->legs->len + PN_TASK_MAX_LEGS);
  }
  if (n_deps > 0)
    g_array_append_vals(g->deps, deps, n_deps);
  return id;
}

void pn_graph_add_dep(PnGraph *g, PnTaskId task, PnTaskId dep)
{
  g_assert(g->tasks->len > 0 && task == g->tasks->len - 1); /* only the last task: deps stay contiguous */
  g_assert(dep < task);
  PnTask *t = pn_graph_task(g, task);
  g_assert(t->dep_first + t->dep_count == g->deps->len);
  g_array_append_val(g->deps, dep);
  t->dep_count++;
}

void pn_graph_pair_p2p(PnGraph *g, PnTaskId send, PnTaskId recv, double bytes, bool over_nic)
{
  g_assert(send < g->tasks->len && recv < g->tasks->len && send != recv);
  PnTask *s = pn_graph_task(g, send);
  PnTask *r = pn_graph_task(g, recv);
  g_assert(s->kind == PN_TASK_P2P && r->kind == PN_TASK_P2P);
  g_assert(s->n_legs < PN_TASK_MAX_LEGS && r->n_legs < PN_TASK_MAX_LEGS);
  pn_graph_legs(g, s)[s->n_legs++] = (PnP2pLeg){.peer = recv, .bytes = bytes, .is_send = true, .over_nic = over_nic};
  pn_graph_legs(g, r)[r->n_legs++] = (PnP2pLeg){.peer = send, .bytes = bytes, .is_send = false, .over_nic = over_nic};
}

void pn_graph_reserve(PnGraph *g, uint32_t n)
{
  /* A new array allocated at the final size rather than a set_size round trip, which would zero
   * (and so fault in) every page of it now instead of as tasks are written. */
  guint len = g->tasks->len;
  GArray *a = g_array_sized_new(FALSE, TRUE, sizeof(PnTask), len + n);
  pn_mem_hint_large(a->data, ((size_t)len + n) * sizeof(PnTask));
  g_array_append_vals(a, g->tasks->data, len);
  g_array_free(g->tasks, TRUE);
  g->tasks = a;
}
