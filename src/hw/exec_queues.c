/* exec_queues.c — when a task may start, and what its end sets free (exec-private.h): the head of
 * each hardware queue is checked against its stream predecessor and its dependencies, a head that
 * must wait joins the waiter list of the task it waits for, and a head found ready goes to the
 * worklist that settle starts tasks from, in task-id order. */
#include "hw/exec-private.h"

/* The worklist is a binary min-heap of the task ids themselves, not core/heap.h's (key, ord)
 * pairs: it pops once per task started, and with those 16-byte keys the pops of a 405B run took
 * 18.9 M instructions instead of 9.3 M (the whole run 1.8% more). */
void pn__work_push(Exec *ex, PnTaskId t)
{
  if (ex->state[t] & ST_QUEUED)
    return;
  ex->state[t] |= ST_QUEUED;
  __builtin_prefetch(&ex->rt[t]); /* read when it is popped, in this instant's settle */
  if (ex->n_work == ex->cap_work) {
    ex->cap_work = ex->cap_work ? 2 * ex->cap_work : 64;
    ex->work     = g_renew(PnTaskId, ex->work, ex->cap_work);
  }
  PnTaskId *h = ex->work;
  size_t i    = ex->n_work++;
  while (i > 0 && h[(i - 1) / 2] > t) {
    h[i] = h[(i - 1) / 2];
    i    = (i - 1) / 2;
  }
  h[i] = t;
  need_settle(ex);
}

PnTaskId pn__work_pop(Exec *ex)
{
  PnTaskId *h  = ex->work;
  PnTaskId top = h[0];
  size_t n     = --ex->n_work;
  PnTaskId x   = h[n];
  size_t i     = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && h[c + 1] < h[c])
      c++;
    if (h[c] >= x)
      break;
    h[i] = h[c];
    i    = c;
  }
  if (n > 0)
    h[i] = x;
  ex->state[top] &= (uint8_t)~ST_QUEUED;
  return top;
}

/* Whether task t, the head of hardware queue q, may start: its stream predecessor and all its
 * dependencies have ended, and its host has launched it (exec_host.c). If not, the queue joins the
 * waiter list of the first task found unfinished, and is checked again when that task ends (or
 * waits for its launch: exec_host.c); the cursor remembers how many dependencies were seen ended
 * (they stay ended). A queue is in at most one list: it is checked only when its head changes or
 * its list is woken. */
bool pn__ready(Exec *ex, PnTaskId t, uint32_t q)
{
  const TaskRt *r = &ex->rt[t];
  PnTaskId w      = PN_TASK_NONE;
  if (r->stream_prev != PN_TASK_NONE && (ex->state[r->stream_prev] & ST_MASK) != ST_ENDED) {
    w = r->stream_prev;
  } else {
    uint32_t k = ex->qcur[q];
    while (k < r->dep_count && (ex->state[ex->deps[r->dep_first + k]] & ST_MASK) == ST_ENDED)
      k++;
    ex->qcur[q] = k;
    if (k == r->dep_count)
      return !ex->host_on || pn__host_launched(ex, t, q);
    w = ex->deps[r->dep_first + k];
  }
  ex->qlink[q]  = ex->waiter[w];
  ex->waiter[w] = q;
  return false;
}

void pn__wake_queues(Exec *ex, uint32_t q)
{
  while (q != PN_TASK_NONE) {
    uint32_t next = ex->qlink[q];
    PnTaskId h    = ex->qhead[q];
    if (pn__ready(ex, h, q))
      pn__work_push(ex, h);
    q = next;
  }
}

/* Task t has ended: the queues whose heads waited for it are checked again. */
static void wake_waiters(Exec *ex, PnTaskId t)
{
  uint32_t q    = ex->waiter[t];
  ex->waiter[t] = PN_TASK_NONE;
  pn__wake_queues(ex, q);
}

void pn__end_task(Exec *ex, PnTaskId t)
{
  const TaskRt *r = &ex->rt[t];
  g_assert(st(ex, t) == ST_RUNNING);
  set_st(ex, t, ST_ENDED);
  ex->times[t].end_ns = pn_engine_now(ex->eng);
  ex->makespan_ns     = ex->times[t].end_ns;
  ex->n_ended++;
  if (ex->obs)
    ex->obs->close(ex->obs->ctx, t, r->gpu, r->stream, r->kind, r->tag, ex->times[t].start_ns, ex->times[t].end_ns);
  if (r->kind == PN_TASK_COMPUTE) {
    GpuRt *g                     = &ex->gpus[r->gpu];
    uint32_t pos                 = r->aux;
    g->run[pos]                  = g->run[--g->n_run];
    ex->rt[g->run[pos].task].aux = ex->rt[g->run[pos].last].aux = pos; /* no-op when t was last */
    mark_gpu(ex, r->gpu);
  } else if (r->kind == PN_TASK_COMM || r->kind == PN_TASK_P2P) {
    hold_sms(ex, r, -1);
  }
  wake_waiters(ex, t);
  if (ex->host_on)
    pn__host_task_ended(ex, t);
  need_settle(ex);
}
