/* graph.c — building the task graph (graph.h). Plain appends into its arrays; no validation beyond
 * assertions on programming errors: pn_exec_run() validates the finished graph. */
#include "hw/graph.h"

#include <string.h>

#include "core/mem.h"

PnGraph *pn_graph_new(uint32_t n_gpus)
{
  PnGraph *g = g_new0(PnGraph, 1);
  g->n_gpus  = n_gpus;
  g->legs    = g_array_new(FALSE, TRUE, sizeof(PnP2pLeg));
  return g;
}

void pn_graph_free(PnGraph *g)
{
  if (!g)
    return;
  g_free(g->tasks);
  g_free(g->deps);
  g_array_free(g->legs, TRUE);
  g_free(g);
}

/* Room for `n` more tasks: a new array at the final size (copying the tasks so far), never a
 * zero-filled one, so its pages are faulted in as tasks are written, not all now. */
static void grow_tasks(PnGraph *g, uint32_t n)
{
  g_assert(n <= PN_TASK_NONE - g->n_tasks);
  uint32_t cap = g->n_tasks + n;
  PnTask *a    = g_new(PnTask, cap);
  pn_mem_hint_large(a, (size_t)cap * sizeof(PnTask));
  if (g->n_tasks > 0)
    memcpy(a, g->tasks, (size_t)g->n_tasks * sizeof(PnTask));
  g_free(g->tasks);
  g->tasks     = a;
  g->cap_tasks = cap;
}

static void grow_deps(PnGraph *g, uint32_t n)
{
  g_assert(n <= UINT32_MAX - g->n_deps);
  size_t cap  = MAX((size_t)g->n_deps + n, MIN(2 * (size_t)g->cap_deps, (size_t)UINT32_MAX));
  cap         = MAX(cap, 64);
  g->deps     = g_renew(PnTaskId, g->deps, cap);
  g->cap_deps = (uint32_t)cap;
}

static inline void push_deps(PnGraph *g, const PnTaskId *deps, uint32_t n)
{
  if (n > g->cap_deps - g->n_deps)
    grow_deps(g, n);
  memcpy(g->deps + g->n_deps, deps, n * sizeof *deps);
  g->n_deps += n;
}

PnTaskId pn_graph_add(PnGraph *g, const PnTask *t, const PnTaskId *deps, uint32_t n_deps)
{
  g_assert(t != NULL);
  g_assert(n_deps == 0 || deps != NULL);
  g_assert(g->n_tasks < PN_TASK_NONE);
  PnTaskId id = g->n_tasks;
  for (uint32_t i = 0; i < n_deps; i++)
    g_assert(deps[i] < id); /* deps must be earlier tasks: the graph stays acyclic */
  if (g->n_tasks == g->cap_tasks)
    grow_tasks(g, MAX(g->cap_tasks, 64));
  PnTask *copy    = &g->tasks[g->n_tasks++];
  *copy           = *t;
  copy->dep_first = g->n_deps;
  copy->dep_count = n_deps;
  copy->n_legs    = 0;
  copy->leg_first = UINT32_MAX;
  if (copy->kind == PN_TASK_P2P) {
    copy->leg_first = g->legs->len;
    g_array_set_size(g->legs, g->legs->len + PN_TASK_MAX_LEGS);
  }
  if (n_deps > 0)
    push_deps(g, deps, n_deps);
  return id;
}

void pn_graph_add_dep(PnGraph *g, PnTaskId task, PnTaskId dep)
{
  g_assert(g->n_tasks > 0 && task == g->n_tasks - 1); /* only the last task: deps stay contiguous */
  g_assert(dep < task);
  PnTask *t = pn_graph_task(g, task);
  g_assert(t->dep_first + t->dep_count == g->n_deps);
  push_deps(g, &dep, 1);
  t->dep_count++;
}

void pn_graph_append_raw_dep(PnGraph *g, PnTaskId dep) { push_deps(g, &dep, 1); }

void pn_graph_pair_p2p(PnGraph *g, PnTaskId send, PnTaskId recv, double bytes, bool over_nic)
{
  g_assert(send < g->n_tasks && recv < g->n_tasks && send != recv);
  PnTask *s = pn_graph_task(g, send);
  PnTask *r = pn_graph_task(g, recv);
  g_assert(s->kind == PN_TASK_P2P && r->kind == PN_TASK_P2P);
  g_assert(s->n_legs < PN_TASK_MAX_LEGS && r->n_legs < PN_TASK_MAX_LEGS);
  pn_graph_legs(g, s)[s->n_legs++] = (PnP2pLeg){.peer = recv, .bytes = bytes, .is_send = true, .over_nic = over_nic};
  pn_graph_legs(g, r)[r->n_legs++] = (PnP2pLeg){.peer = send, .bytes = bytes, .is_send = false, .over_nic = over_nic};
}

void pn_graph_reserve(PnGraph *g, uint32_t n)
{
  if (n > g->cap_tasks - g->n_tasks)
    grow_tasks(g, n);
}
