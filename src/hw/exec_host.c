/* exec_host.c — the host threads (graph.h, "The host"; exec-private.h): one per GPU, launching its
 * tasks in issue order and blocking at synchronizations.
 *
 * A host's launches are computed ahead, not simulated one by one: from where it stands it walks its
 * GPU's tasks in issue order, each launched at clock += host_ns (rounded up to whole ns), until it
 * reaches a task it must synchronize on; nothing the GPU does can change those times, so no event
 * is needed for them. The GPU side reads them: a queue head whose other conditions hold but whose
 * launch lies ahead waits for one event at its launch time, and one the host has not reached yet
 * (it is blocked at a synchronization before it) joins its host's waiter list. When the task (or,
 * for a device synchronization, every task launched so far) ends, the host goes on at
 * max(its clock, the end + sync_ns), computing the next stretch, and its waiters are checked again.
 *
 * Host-bound time: a compute-stream head that waits for its launch after everything else it needs
 * has ended leaves the GPU's compute stream idle for want of a launch; those waits are the run's
 * PnExecResult.host_waits. */
#include "hw/exec-private.h"

/* Launches GPU `gpu`'s tasks from its host's clock on, up to and including the next task it must
 * synchronize on, then checks the queues that waited for it. */
static void host_run(Exec *ex, uint32_t gpu)
{
  HostRt *h = &ex->hosts[gpu];
  while (h->next != PN_TASK_NONE) {
    PnTaskId t       = h->next;
    const PnTask *tk = &ex->tasks[t];
    h->clock_ns += (double)tk->host_ns;
    PnTimeNs at = dur_ns(h->clock_ns, 0);
    if (at >= PN_EXEC_HORIZON_NS && ex->horizon_task == PN_TASK_NONE)
      ex->horizon_task = t;
    ex->launch_ns[t] = at;
    h->launched++;
    h->next = ex->gpu_next[t];
    if (tk->host_sync != PN_HOST_SYNC_NONE) {
      h->blocked = t;
      h->mode    = tk->host_sync;
      break;
    }
  }
  uint32_t q = h->waiters;
  h->waiters = PN_TASK_NONE;
  pn__wake_queues(ex, q);
}

void pn__host_start(Exec *ex)
{
  for (uint32_t g = 0; g < ex->n_gpus; g++)
    host_run(ex, g);
}

/* A queue's head was waiting for its launch time, which has come. */
static void on_launched(PnEngine *eng, void *ctx, uint64_t arg)
{
  (void)eng;
  Exec *ex   = ctx;
  uint32_t q = (uint32_t)arg;
  PnTaskId t = ex->qhead[q];
  if (pn__ready(ex, t, q))
    pn__work_push(ex, t);
}

bool pn__host_launched(Exec *ex, PnTaskId t, uint32_t q)
{
  PnTimeNs now = pn_engine_now(ex->eng);
  PnTimeNs at  = ex->launch_ns[t];
  if (at <= now) {
    if (ex->host_since[q] >= 0) {
      if (ex->rt[t].stream == PN_STREAM_COMPUTE && now > ex->host_since[q]) {
        PnHostWait w = {.gpu = ex->rt[t].gpu, .t0_ns = ex->host_since[q], .t1_ns = now};
        g_array_append_val(ex->host_waits, w);
      }
      ex->host_since[q] = -1;
    }
    return true;
  }
  if (ex->host_since[q] < 0)
    ex->host_since[q] = now;
  if (at == PN_EXEC_UNLAUNCHED) {
    HostRt *h    = &ex->hosts[ex->rt[t].gpu];
    ex->qlink[q] = h->waiters;
    h->waiters   = q;
  } else {
    pn_engine_schedule(ex->eng, at, on_launched, ex, q);
  }
  return false;
}

void pn__host_task_ended(Exec *ex, PnTaskId t)
{
  uint32_t gpu = ex->rt[t].gpu;
  HostRt *h    = &ex->hosts[gpu];
  h->ended++;
  if (h->blocked == PN_TASK_NONE)
    return;
  if (h->mode == PN_HOST_SYNC_TASK ? h->blocked != t : h->ended < h->launched)
    return;
  h->blocked    = PN_TASK_NONE;
  double resume = (double)pn_engine_now(ex->eng) + ex->hw->host.sync_ns;
  if (resume > h->clock_ns)
    h->clock_ns = resume;
  host_run(ex, gpu);
}
