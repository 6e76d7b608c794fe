/* exec.c — runs a task graph on simulated GPUs (exec.h; graph.h says when a task may start): the
 * engine's loop, settling each instant and starting tasks. exec-private.h holds the run state and
 * names the files below this one: the queues (exec_queues.c), kernels (exec_kernels.c), transfers
 * (exec_links.c) and the setup before the run (exec_setup.c).
 *
 * Event flow: handlers (task done, latency elapsed, transfer done) only change state and mark
 * what needs attention; "settle", the engine's end-of-instant hook, runs once every event due
 * at the current time has fired and (1) starts every dispatchable task in task-id order (a
 * min-heap worklist), (2) recomputes the compute rates of the GPUs whose SM occupancy changed,
 * (3) re-solves the max-min flows and moves the completion events of the flows whose rate
 * changed. Zero-delay events it schedules (a latency of 0) fire next, and settle runs again
 * after them. (It was an event scheduled at the current time: the same order, since such an
 * event came after every event already due then, at one event per instant more.)
 *
 * Kernel chains (exec_kernels.c): a run of compute kernels that nothing outside it observes
 * between them is one Run, and alone on its GPU needs one completion event in all.
 */
#include "hw/exec-private.h"

#include <inttypes.h>

#include "core/mem.h"

GQuark pn_exec_error_quark(void) { return g_quark_from_static_string("pn-exec-error-quark"); }

/* Tasks are dispatched in issue order per GPU, and a GPU's tasks are mostly consecutive ids:
 * while one starts, the lines of the tasks a few places further on are requested from memory,
 * so that they are in cache when their turn comes (eight GPUs walk the arrays at once, which
 * defeats the hardware's stream detection). A hint only: it changes no value. */
#define PN_EXEC_PREFETCH_AHEAD 4

static inline void prefetch_ahead(const Exec *ex, PnTaskId t)
{
  PnTaskId a = t + PN_EXEC_PREFETCH_AHEAD;
  if (a >= ex->n_tasks)
    return;
  __builtin_prefetch(&ex->rt[a]);
  __builtin_prefetch(&ex->times[a], 1);
}

static void start_task(Exec *ex, PnTaskId t)
{
  TaskRt *r    = &ex->rt[t];
  PnTimeNs now = pn_engine_now(ex->eng);
  prefetch_ahead(ex, t);
  set_st(ex, t, ST_RUNNING);
  ex->times[t].start_ns = now;
  PnTaskId last = t, next = r->queue_next; /* a chain leaves its queue as one task */
  while (next != PN_TASK_NONE && ex->rt[next].cont) {
    last = next;
    next = ex->rt[next].queue_next;
  }
  ex->qhead[r->gq] = next;
  ex->qcur[r->gq]  = 0;
  if (next != PN_TASK_NONE && pn__ready(ex, next, r->gq))
    pn__work_push(ex, next);
  if (ex->obs && (r->kind == PN_TASK_COMPUTE || r->kind == PN_TASK_COMM))
    ex->obs->open(ex->obs->ctx, t, r->gpu, r->stream, r->kind, r->tag, now);
  switch (r->kind) {
  case PN_TASK_COMPUTE: {
    GpuRt *g         = &ex->gpus[r->gpu];
    r->aux           = g->n_run;
    ex->rt[last].aux = g->n_run;
    Run run          = {.task = t, .last = last, .sm_limit = r->sms, .remaining_ns = r->work, .since_ns = now};
    VEC_PUSH(g->run, g->n_run, g->cap_run, run);
    mark_gpu(ex, r->gpu); /* the refresh schedules its completion */
    break;
  }
  case PN_TASK_DELAY:
    pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(r->work, 0), t), pn__on_task_done, ex, t);
    break;
  case PN_TASK_COMM:
    hold_sms(ex, r, +1);
    __builtin_prefetch(&ex->xf[r->aux]); /* read when the latency has elapsed */
    pn_engine_schedule(ex->eng, at_ns(ex, dur_ns(r->work, 0), t), pn__on_comm_ready, ex, t);
    break;
  case PN_TASK_P2P:
    hold_sms(ex, r, +1);
    r->legs_left = r->n_legs;
    for (int k = 0; k < r->n_legs; k++) {
      uint32_t xi    = ex->leg_xfer[r->aux + k];
      PnTaskId other = xfer_other(&ex->xf[xi], t);
      g_assert(st(ex, other) != ST_ENDED);
      if (st(ex, other) == ST_RUNNING) /* the later of the two ends starts the leg */
        pn__start_leg(ex, xi);
    }
    break;
  default:
    g_assert_not_reached();
  }
}

static void settle(PnEngine *eng, void *ctx, uint64_t arg)
{
  Exec *ex = ctx;
  /* settle_pending stays true while settling: whatever the steps below mark is handled below. */
  /* 1. Dispatch, in task-id order. Starting a task may expose the next one of its queue. */
  while (ex->n_work > 0) {
    PnTaskId t = pn__work_pop(ex); /* a queue head whose stream predecessor and dependencies ended */
    if (st(ex, t) == ST_WAITING && ex->qhead[ex->rt[t].gq] == t)
      start_task(ex, t);
  }
  /* 2. Compute rates of the GPUs whose running set or held SMs changed. */
  for (uint32_t i = 0; i < ex->n_dirty; i++)
    pn__refresh_gpu(ex, ex->dirty_gpus[i]);
  ex->n_dirty = 0;
  /* 3. Link sharing. */
  if (ex->mm_dirty)
    pn__solve_links(ex);
  /* Nothing above leaves work for this instant: starts and rate changes only schedule events. */
  g_assert(ex->n_work == 0 && ex->n_dirty == 0 && !ex->mm_dirty);
  ex->settle_pending = false;
}

/* ---- failure reports ---- */

static void describe_stuck(const Exec *ex, GString *why, PnTaskId t)
{
  const PnTask *tk = &ex->tasks[t];
  const TaskRt *r  = &ex->rt[t];
  if (st(ex, t) == ST_RUNNING) {
    if (tk->kind == PN_TASK_P2P)
      for (int k = 0; k < tk->n_legs; k++) {
        PnTaskId o = xfer_other(&ex->xf[ex->leg_xfer[r->aux + k]], t);
        if (st(ex, o) == ST_WAITING) {
          g_string_append_printf(why, "started at %" PRId64 " ns, waiting for its peer " TASK_FMT " to start",
                                 ex->times[t].start_ns, TASK_ARGS(o, &ex->tasks[o]));
          if (ex->host_on && ex->launch_ns[o] == PN_EXEC_UNLAUNCHED)
            g_string_append_printf(why, ", which its host never launched (blocked synchronizing on task %u)",
                                   ex->hosts[ex->tasks[o].gpu].blocked);
          return;
        }
      }
    g_string_append(why, "running with no pending event");
    return;
  }
  for (PnTaskId p = t; p-- > 0;)
    if (ex->tasks[p].gpu == tk->gpu && ex->tasks[p].stream == tk->stream) {
      if (st(ex, p) != ST_ENDED) {
        g_string_append_printf(why, "waits for the previous task of its stream, " TASK_FMT,
                               TASK_ARGS(p, &ex->tasks[p]));
        return;
      }
      break;
    }
  for (uint32_t i = 0; i < tk->dep_count; i++) {
    PnTaskId d = ex->deps[tk->dep_first + i];
    if (st(ex, d) != ST_ENDED) {
      g_string_append_printf(why, "waits for dependency " TASK_FMT, TASK_ARGS(d, &ex->tasks[d]));
      return;
    }
  }
  if (ex->host_on && ex->launch_ns[t] == PN_EXEC_UNLAUNCHED) {
    g_string_append_printf(why, "its host never launched it (blocked synchronizing on task %u)",
                           ex->hosts[tk->gpu].blocked);
    return;
  }
  PnTaskId h = ex->qhead[r->gq];
  if (h != t && h != PN_TASK_NONE) {
    g_string_append_printf(why, "queued behind " TASK_FMT " in its hardware queue (max_connections = %d)",
                           TASK_ARGS(h, &ex->tasks[h]), ex->max_connections);
    return;
  }
  g_string_append(why, "never dispatched");
}

/* The engine ran dry: the run is complete unless tasks were left that never ended (a deadlock) or
 * a completion was pushed to the horizon; either is reported in `error`. */
static gboolean run_complete(const Exec *ex, GError **error)
{
  uint32_t n = ex->n_tasks;
  if (ex->n_ended < n) {
    PnTaskId t = 0;
    while (st(ex, t) == ST_ENDED)
      t++;
    const PnTask *tk       = &ex->tasks[t];
    g_autoptr(GString) why = g_string_new(NULL);
    describe_stuck(ex, why, t);
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_DEADLOCK,
                "deadlock at t=%" PRId64 " ns: %u of %u tasks never ended; first stuck: " TASK_FMT
                ", microbatch %d: %s",
                pn_engine_now(ex->eng), n - ex->n_ended, n, TASK_ARGS(t, tk), tk->microbatch, why->str);
    return FALSE;
  }
  if (ex->horizon_task != PN_TASK_NONE) {
    const PnTask *tk = &ex->tasks[ex->horizon_task];
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_HORIZON,
                "simulated time would pass %" PRId64 " ns (146 years): " TASK_FMT
                " takes that long (work %.3g ns, %.3g NVLink / %.3g NIC bytes); check the scenario's sizes and the "
                "profile's rates",
                PN_EXEC_HORIZON_NS, TASK_ARGS(ex->horizon_task, tk),
                tk->kind == PN_TASK_COMPUTE || tk->kind == PN_TASK_DELAY ? tk->work_ns : 0.0, tk->nvlink_bytes,
                tk->nic_bytes);
    return FALSE;
  }
  return TRUE;
}

/* ---- API ---- */

gboolean pn_exec_run(const PnGraph *g, const PnHwProfile *hw, const PnExecOptions *opt, PnExecResult *out,
                     GError **error)
{
  g_assert(g != NULL && hw != NULL && out != NULL);
  *out            = (PnExecResult){0};
  PnExecOptions o = opt ? *opt : (PnExecOptions){.max_connections = 8};
  Exec exec;
  Exec *ex = &exec;
  if (!pn__exec_setup(ex, g, hw, &o, error))
    return FALSE;
  pn_engine_set_instant_hook(ex->eng, settle, ex);
  uint32_t n    = ex->n_tasks;
  GArray *times = g_array_sized_new(FALSE, FALSE, sizeof(PnTaskTime), n);
  pn_mem_hint_large(times->data, (size_t)n * sizeof(PnTaskTime));
  g_array_set_size(times, n);
  ex->times = (PnTaskTime *)(void *)times->data;

  if (ex->host_on)
    pn__host_start(ex);
  for (uint32_t q = 0; q < ex->n_gpus * ex->n_queues; q++)
    if (ex->qhead[q] != PN_TASK_NONE && pn__ready(ex, ex->qhead[q], q))
      pn__work_push(ex, ex->qhead[q]);

  uint64_t budget = o.event_budget ? o.event_budget : 64 * (uint64_t)n + 1000000;
  /* At one instant a task fires at most ~10 events (its latency or start, its completion, two per
   * P2P leg): more than that means time stopped advancing. */
  pn_engine_set_stall_limit(ex->eng, 24 * (uint64_t)n + 1000);
  g_autoptr(GError) e = NULL;
  gboolean ok         = pn_engine_run(ex->eng, budget, &e);
  if (!ok) {
    g_set_error(error, PN_EXEC_ERROR, PN_EXEC_ERROR_BUDGET,
                "execution stopped at t=%" PRId64 " ns with %u of %u tasks ended: %s%s", pn_engine_now(ex->eng),
                ex->n_ended, n, e->message,
                g_error_matches(e, PN_ENGINE_ERROR, PN_ENGINE_ERROR_BUDGET)
                    ? " (raise event_budget if the graph is just large)"
                    : "");
  } else {
    ok = run_complete(ex, error);
  }
  if (ok) {
    out->times       = times;
    out->makespan_ns = ex->makespan_ns;
    out->events      = pn_engine_events_fired(ex->eng);
    out->host_waits  = g_steal_pointer(&ex->host_waits);
  } else {
    g_array_free(times, TRUE);
  }
  pn__exec_free(ex);
  return ok;
}

void pn_exec_result_clear(PnExecResult *r)
{
  if (!r)
    return;
  if (r->times)
    g_array_free(r->times, TRUE);
  if (r->host_waits)
    g_array_free(r->host_waits, TRUE);
  *r = (PnExecResult){0};
}
