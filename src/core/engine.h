/* engine.h — the discrete-event engine: integer-nanosecond time and an event queue.
 *
 * What it models: a single simulated clock. Events are callbacks scheduled at absolute times;
 * the engine pops them in (t_ns, seq) order, where seq is the insertion counter, so ties are
 * broken by scheduling order and every run is deterministic (ns-3, libuv's timer heap).
 * Cancellation sets a flag; a cancelled event is dropped when it reaches the head (ns-3).
 *
 * Invariants: time never goes backwards (scheduling before now() is a programming error and
 * asserts); an event id is never reused within one engine. At most 2^24 events may be pending at
 * once (more aborts with a message; a simulator keeps a few per simulated GPU).
 *
 * Cost: cancel O(1). PN_QUEUE_HEAP keeps up to 64 pending events as a sorted array (pop O(1),
 * schedule a scan back from the latest, at most 64 steps) and more as a 4-ary heap (heap.h:
 * schedule and pop O(log n)). The sorted-list reference queue (PN_QUEUE_LIST) is O(n) per schedule
 * and exists to be run through the same tests. Neither allocates per event once its arrays have
 * grown.
 */
#ifndef PN_CORE_ENGINE_H
#define PN_CORE_ENGINE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef int64_t PnTimeNs;
#define PN_TIME_NEVER INT64_MAX

typedef struct PnEngine PnEngine;
typedef uint64_t PnEventId; /* 0 is never a valid id */

/* Called when the event fires. `ctx` and `arg` are what was given to pn_engine_schedule(). */
typedef void (*PnEventFn)(PnEngine *eng, void *ctx, uint64_t arg);

typedef enum { PN_QUEUE_HEAP, PN_QUEUE_LIST } PnQueueKind;

#define PN_ENGINE_ERROR (pn_engine_error_quark())
GQuark pn_engine_error_quark(void);
typedef enum { PN_ENGINE_ERROR_BUDGET, PN_ENGINE_ERROR_STALLED } PnEngineError;

PnEngine *pn_engine_new(PnQueueKind kind);
void pn_engine_free(PnEngine *eng); /* NULL is a no-op; pending events are dropped */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnEngine, pn_engine_free)

PnTimeNs pn_engine_now(const PnEngine *eng);

/* Schedules fn(eng, ctx, arg) at absolute time at_ns >= now. Returns its id. */
PnEventId pn_engine_schedule(PnEngine *eng, PnTimeNs at_ns, PnEventFn fn, void *ctx, uint64_t arg);

/* Cancels a pending event; cancelling an event that already fired or was cancelled is a no-op. */
void pn_engine_cancel(PnEngine *eng, PnEventId id);

/* Runs until the queue is empty. Fails with PN_ENGINE_ERROR_BUDGET after `event_budget` fired
 * events (0 = unlimited), so a malformed configuration ends with an error instead of hanging.
 * The budget counts events fired by this call; running out exactly as the queue empties (only
 * cancelled events left) is success. */
gboolean pn_engine_run(PnEngine *eng, uint64_t event_budget, GError **error);

/* Makes pn_engine_run fail with PN_ENGINE_ERROR_STALLED once more than `max_events` events have
 * fired in a row without simulated time advancing (0, the default, means no limit): a loop of
 * zero-duration events ends with an error naming the instant, even under a large budget. */
void pn_engine_set_stall_limit(PnEngine *eng, uint64_t max_events);

/* End-of-instant hook: once requested, fn(eng, ctx, 0) is called when every event due at the
 * current time has fired, before time advances (or the queue runs dry). It may schedule events
 * at the current time; they fire next, and a new request calls it again after them. One hook
 * call is not an event (not counted, not budgeted): a simulator's "settle everything that
 * changed at this instant" step, without an event each time. */
void pn_engine_set_instant_hook(PnEngine *eng, PnEventFn fn, void *ctx);
void pn_engine_request_instant_hook(PnEngine *eng);

/* Pops and fires one event (first calling a requested instant hook when its instant is over);
 * returns false when the queue is empty and no hook is requested. */
bool pn_engine_step(PnEngine *eng);

uint64_t pn_engine_events_fired(const PnEngine *eng);
/* Tests only: the scheduling counter jumps to `left` short of its limit, so that a test reaches
 * the renumbering of pending events (otherwise after 10^12 schedules). */
void pn_engine_skip_seq_for_test(PnEngine *eng, uint64_t left);
size_t pn_engine_pending(const PnEngine *eng); /* includes cancelled-but-not-yet-popped events */

#endif
