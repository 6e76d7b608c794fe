/* test_core.c — the event engine and its heap. Every behaviour test of the engine is a Check loop
 * test run once per queue implementation (_i = 0: PN_QUEUE_HEAP, _i = 1: PN_QUEUE_LIST), as ns-3
 * runs one test case over each scheduler; the property test compares the two on the same random
 * operations. The heap (heap.h) is compared with a sorted array. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/heap.h"

static const PnQueueKind kinds[] = {PN_QUEUE_HEAP, PN_QUEUE_LIST};

typedef struct {
  PnTimeNs t_ns;
  uint64_t arg;
} Fired;

/* What callbacks record into, plus knobs for the callbacks that act on the engine. */
typedef struct {
  GArray *log; /* of Fired */
  PnEventId victim;
  int chain_left;
  GRand *rng;
  GArray *ids; /* of PnEventId: every id handed out (property test) */
} Rec;

static void rec_init(Rec *r)
{
  *r     = (Rec){0};
  r->log = g_array_new(FALSE, FALSE, sizeof(Fired));
  r->ids = g_array_new(FALSE, FALSE, sizeof(PnEventId));
}

static void rec_clear(Rec *r)
{
  g_array_free(r->log, TRUE);
  g_array_free(r->ids, TRUE);
  if (r->rng)
    g_rand_free(r->rng);
}

static void record(PnEngine *eng, void *ctx, uint64_t arg)
{
  Rec *r  = ctx;
  Fired f = {pn_engine_now(eng), arg};
  g_array_append_val(r->log, f);
}

static void expect_log(const Rec *r, guint n, const PnTimeNs *t, const uint64_t *arg)
{
  ck_assert_uint_eq(r->log->len, n);
  for (guint i = 0; i < n; i++) {
    Fired f = g_array_index(r->log, Fired, i);
    ck_assert_int_eq(f.t_ns, t[i]);
    ck_assert_uint_eq(f.arg, arg[i]);
  }
}

/* Events scheduled out of order fire in time order, and now() follows them. */
START_TEST(test_order_by_time)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  pn_engine_schedule(eng, 30, record, &r, 3);
  pn_engine_schedule(eng, 10, record, &r, 1);
  pn_engine_schedule(eng, 20, record, &r, 2);
  pn_engine_schedule(eng, 0, record, &r, 0);
  ck_assert_uint_eq(pn_engine_pending(eng), 4);
  ck_assert_int_eq(pn_engine_now(eng), 0);
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 4, (PnTimeNs[]){0, 10, 20, 30}, (uint64_t[]){0, 1, 2, 3});
  ck_assert_int_eq(pn_engine_now(eng), 30);
  ck_assert_uint_eq(pn_engine_events_fired(eng), 4);
  ck_assert_uint_eq(pn_engine_pending(eng), 0);
  ck_assert(!pn_engine_step(eng));
  rec_clear(&r);
}
END_TEST

/* Equal times fire in scheduling order (FIFO), whatever was scheduled in between. */
START_TEST(test_fifo_ties)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  for (uint64_t k = 0; k < 6; k++) {
    pn_engine_schedule(eng, 7, record, &r, k);
    pn_engine_schedule(eng, 9, record, &r, 100 + k);
    pn_engine_schedule(eng, 5 - (PnTimeNs)(k % 2), record, &r, 200 + k);
  }
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 18, (PnTimeNs[]){4, 4, 4, 5, 5, 5, 7, 7, 7, 7, 7, 7, 9, 9, 9, 9, 9, 9},
             (uint64_t[]){201, 203, 205, 200, 202, 204, 0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105});
  rec_clear(&r);
}
END_TEST

/* A cancelled event never fires; it still counts as pending until it reaches the head. */
START_TEST(test_cancel_before_fire)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  pn_engine_schedule(eng, 1, record, &r, 1);
  PnEventId b = pn_engine_schedule(eng, 2, record, &r, 2);
  pn_engine_schedule(eng, 3, record, &r, 3);
  ck_assert_uint_ne(b, 0);
  pn_engine_cancel(eng, b);
  pn_engine_cancel(eng, b); /* twice: no-op */
  ck_assert_uint_eq(pn_engine_pending(eng), 3);
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 2, (PnTimeNs[]){1, 3}, (uint64_t[]){1, 3});
  ck_assert_uint_eq(pn_engine_events_fired(eng), 2);
  rec_clear(&r);
}
END_TEST

/* Cancelling a fired event (or an id never issued) changes nothing, even after its slot is reused. */
START_TEST(test_cancel_after_fire_is_noop)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  PnEventId a = pn_engine_schedule(eng, 1, record, &r, 1);
  ck_assert(pn_engine_step(eng));
  PnEventId b = pn_engine_schedule(eng, 2, record, &r, 2); /* likely reuses a's storage */
  ck_assert_uint_ne(a, b);
  pn_engine_cancel(eng, a);
  pn_engine_cancel(eng, 0);
  pn_engine_cancel(eng, UINT64_MAX);
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 2, (PnTimeNs[]){1, 2}, (uint64_t[]){1, 2});
  rec_clear(&r);
}
END_TEST

static void cancel_victim(PnEngine *eng, void *ctx, uint64_t arg)
{
  Rec *r = ctx;
  record(eng, ctx, arg);
  pn_engine_cancel(eng, r->victim);
}

/* A callback cancels a later event (it does not fire) and an event at its own time scheduled
 * after it (it does not fire either); cancelling itself is a no-op. */
START_TEST(test_cancel_from_callback)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  PnEventId self = pn_engine_schedule(eng, 1, cancel_victim, &r, 1);
  r.victim       = pn_engine_schedule(eng, 5, record, &r, 5);
  pn_engine_schedule(eng, 6, record, &r, 6);
  ck_assert(pn_engine_step(eng));
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 2, (PnTimeNs[]){1, 6}, (uint64_t[]){1, 6});

  rec_clear(&r);
  rec_init(&r);
  g_autoptr(PnEngine) e2 = pn_engine_new(kinds[_i]);
  pn_engine_schedule(e2, 3, cancel_victim, &r, 1);
  r.victim = pn_engine_schedule(e2, 3, record, &r, 2); /* same time, later seq */
  ck_assert(pn_engine_run(e2, 0, NULL));
  expect_log(&r, 1, (PnTimeNs[]){3}, (uint64_t[]){1});
  (void)self;
  rec_clear(&r);
}
END_TEST

static void self_cancel(PnEngine *eng, void *ctx, uint64_t arg)
{
  Rec *r = ctx;
  record(eng, ctx, arg);
  pn_engine_cancel(eng, r->victim); /* victim == this very event */
}

START_TEST(test_cancel_self_in_callback)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  r.victim = pn_engine_schedule(eng, 4, self_cancel, &r, 4);
  pn_engine_schedule(eng, 4, record, &r, 5);
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 2, (PnTimeNs[]){4, 4}, (uint64_t[]){4, 5});
  rec_clear(&r);
}
END_TEST

static void spawn(PnEngine *eng, void *ctx, uint64_t arg)
{
  Rec *r = ctx;
  record(eng, ctx, arg);
  if (arg == 1) {
    pn_engine_schedule(eng, pn_engine_now(eng), record, r, 10);   /* at now: after what is queued at now */
    pn_engine_schedule(eng, pn_engine_now(eng) + 5, spawn, r, 2); /* later, spawns again */
  } else if (arg == 2) {
    pn_engine_schedule(eng, pn_engine_now(eng), record, r, 20);
  }
}

/* Events scheduled from callbacks, including at the current time, fire after the events already
 * queued at that time: t=10: [1 (spawn), 3 (queued before)] then 10 (spawned at now);
 * t=15: 2 (spawned), then 20 (spawned at now by 2); t=30: 4. */
START_TEST(test_schedule_from_callback)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  pn_engine_schedule(eng, 10, spawn, &r, 1);
  pn_engine_schedule(eng, 10, record, &r, 3);
  pn_engine_schedule(eng, 30, record, &r, 4);
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 6, (PnTimeNs[]){10, 10, 10, 15, 15, 30}, (uint64_t[]){1, 3, 10, 2, 20, 4});
  rec_clear(&r);
}
END_TEST

static void forever(PnEngine *eng, void *ctx, uint64_t arg)
{
  pn_engine_schedule(eng, pn_engine_now(eng) + 1, forever, ctx, arg + 1);
}

static void chain(PnEngine *eng, void *ctx, uint64_t arg)
{
  Rec *r = ctx;
  if (--r->chain_left > 0)
    pn_engine_schedule(eng, pn_engine_now(eng) + 2, chain, ctx, arg + 1);
}

/* A self-rescheduling event exhausts a budget of 100: error PN_ENGINE_ERROR_BUDGET after exactly
 * 100 fired events at t = 99. A chain of exactly 10 events fits a budget of 10; a cancelled
 * leftover does not count as work left. */
START_TEST(test_budget)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  pn_engine_schedule(eng, 0, forever, NULL, 0);
  g_autoptr(GError) err = NULL;
  ck_assert(!pn_engine_run(eng, 100, &err));
  ck_assert(g_error_matches(err, PN_ENGINE_ERROR, PN_ENGINE_ERROR_BUDGET));
  ck_assert_ptr_nonnull(strstr(err->message, "budget"));
  ck_assert_uint_eq(pn_engine_events_fired(eng), 100);
  ck_assert_int_eq(pn_engine_now(eng), 99);

  Rec r;
  rec_init(&r);
  r.chain_left           = 10;
  g_autoptr(PnEngine) e2 = pn_engine_new(kinds[_i]);
  pn_engine_schedule(e2, 0, chain, &r, 0);
  PnEventId dead = pn_engine_schedule(e2, 1000, record, &r, 99);
  pn_engine_cancel(e2, dead);
  g_autoptr(GError) err2 = NULL;
  ck_assert(pn_engine_run(e2, 10, &err2));
  ck_assert_ptr_null(err2);
  ck_assert_uint_eq(pn_engine_events_fired(e2), 10);
  ck_assert_int_eq(pn_engine_now(e2), 18);
  ck_assert_uint_eq(r.log->len, 0);
  rec_clear(&r);
}
END_TEST

static void spin(PnEngine *eng, void *ctx, uint64_t arg)
{
  pn_engine_schedule(eng, pn_engine_now(eng), spin, ctx, arg + 1);
}

/* Time must advance: with a stall limit of 50, an event re-scheduling itself at the current
 * instant fails with PN_ENGINE_ERROR_STALLED after exactly 50 events at t = 7, well inside the
 * budget. 50 events at one instant followed by a later one are fine, and the count restarts when
 * time moves (the chain of +2 steps runs unlimited). Limit 0 means none. */
START_TEST(test_stall)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  pn_engine_set_stall_limit(eng, 50);
  pn_engine_schedule(eng, 7, spin, NULL, 0);
  g_autoptr(GError) err = NULL;
  ck_assert(!pn_engine_run(eng, 1000000, &err));
  ck_assert(g_error_matches(err, PN_ENGINE_ERROR, PN_ENGINE_ERROR_STALLED));
  ck_assert_msg(strstr(err->message, "50 events fired at t=7 ns") != NULL, "%s", err->message);
  ck_assert_uint_eq(pn_engine_events_fired(eng), 50);

  Rec r;
  rec_init(&r);
  g_autoptr(PnEngine) e2 = pn_engine_new(kinds[_i]);
  pn_engine_set_stall_limit(e2, 50);
  for (int i = 0; i < 50; i++)
    pn_engine_schedule(e2, 3, record, &r, (uint64_t)i);
  r.chain_left = 1000;
  pn_engine_schedule(e2, 4, chain, &r, 0);
  g_autoptr(GError) err2 = NULL;
  ck_assert_msg(pn_engine_run(e2, 0, &err2), "%s", err2 ? err2->message : "");
  ck_assert_uint_eq(pn_engine_events_fired(e2), 1050);
  rec_clear(&r);

  g_autoptr(PnEngine) e3 = pn_engine_new(kinds[_i]);
  pn_engine_schedule(e3, 0, spin, NULL, 0);
  g_autoptr(GError) err3 = NULL;
  ck_assert(!pn_engine_run(e3, 10000, &err3));
  ck_assert(g_error_matches(err3, PN_ENGINE_ERROR, PN_ENGINE_ERROR_BUDGET));
}
END_TEST

/* Scheduling before now is a programming error: it aborts. */
START_TEST(test_past_asserts)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  pn_engine_schedule(eng, 10, forever, NULL, 0);
  pn_engine_cancel(eng, pn_engine_schedule(eng, 11, forever, NULL, 0));
  ck_assert(pn_engine_step(eng));
  pn_engine_schedule(eng, 9, forever, NULL, 0); /* aborts */
}
END_TEST

/* Ids are non-zero and never repeat, even when storage is reused one event at a time. */
START_TEST(test_ids_unique)
{
  g_autoptr(PnEngine) eng    = pn_engine_new(kinds[_i]);
  g_autoptr(GHashTable) seen = g_hash_table_new(g_int64_hash, g_int64_equal);
  GArray *ids                = g_array_new(FALSE, FALSE, sizeof(PnEventId));
  for (int k = 0; k < 5000; k++) {
    PnEventId id = pn_engine_schedule(eng, k, forever, NULL, 0);
    if (k % 3 == 0)
      pn_engine_schedule(eng, k, forever, NULL, 0);
    g_array_append_val(ids, id);
    if (k % 2)
      pn_engine_cancel(eng, id);
    (void)pn_engine_step(eng);
  }
  for (guint k = 0; k < ids->len; k++) {
    PnEventId *p = &g_array_index(ids, PnEventId, k);
    ck_assert_uint_ne(*p, 0);
    ck_assert(!g_hash_table_contains(seen, p));
    g_hash_table_add(seen, p);
  }
  g_array_free(ids, TRUE);
}
END_TEST

/* ---- random workloads: determinism and heap-vs-list equivalence ---- */

static void random_cb(PnEngine *eng, void *ctx, uint64_t arg)
{
  Rec *r = ctx;
  record(eng, ctx, arg);
  /* One event in four schedules a follow-up (sometimes at now); one in eight cancels a random id. */
  guint32 u = g_rand_int(r->rng);
  if (u % 4 == 0) {
    PnEventId id = pn_engine_schedule(eng, pn_engine_now(eng) + (PnTimeNs)(u / 4 % 50), random_cb, r, arg * 7 + 1);
    g_array_append_val(r->ids, id);
  } else if (u % 8 == 1 && r->ids->len > 0) {
    pn_engine_cancel(eng, g_array_index(r->ids, PnEventId, g_rand_int_range(r->rng, 0, (gint32)r->ids->len)));
  }
}

/* Drives an engine with `n_ops` random schedule / cancel / step operations from `seed`. */
static void random_ops(PnEngine *eng, Rec *r, guint32 seed, int n_ops)
{
  r->rng = g_rand_new_with_seed(seed);
  for (int op = 0; op < n_ops; op++) {
    guint32 u = g_rand_int_range(r->rng, 0, 100);
    if (u < 42) {
      PnTimeNs at  = pn_engine_now(eng) + g_rand_int_range(r->rng, 0, 1000) / (u % 3 == 0 ? 100 : 1);
      PnEventId id = pn_engine_schedule(eng, at, random_cb, r, (uint64_t)op);
      g_array_append_val(r->ids, id);
    } else if (u < 58) {
      if (r->ids->len > 0)
        pn_engine_cancel(eng, g_array_index(r->ids, PnEventId, g_rand_int_range(r->rng, 0, (gint32)r->ids->len)));
    } else {
      pn_engine_step(eng);
    }
  }
  ck_assert(pn_engine_run(eng, 0, NULL));
}

/* Same seed, same queue kind: the same firing sequence. */
START_TEST(test_determinism)
{
  Rec a, b;
  rec_init(&a);
  rec_init(&b);
  g_autoptr(PnEngine) ea = pn_engine_new(kinds[_i]);
  g_autoptr(PnEngine) eb = pn_engine_new(kinds[_i]);
  random_ops(ea, &a, 42, 20000);
  random_ops(eb, &b, 42, 20000);
  ck_assert_uint_gt(a.log->len, 1000);
  ck_assert_uint_eq(a.log->len, b.log->len);
  ck_assert_int_eq(memcmp(a.log->data, b.log->data, a.log->len * sizeof(Fired)), 0);
  rec_clear(&a);
  rec_clear(&b);
}
END_TEST

/* Runs `drive` with `seed` on the production queue and on the sorted-list reference: the same
 * events fire in the same order at the same times (at least `min_fired` of them), time never
 * decreases, and both end with the same counters and nothing pending. */
typedef void (*Driver)(PnEngine *eng, Rec *r, guint32 seed);

static void expect_heap_matches_list(Driver drive, guint32 seed, guint min_fired)
{
  Rec h, l;
  rec_init(&h);
  rec_init(&l);
  g_autoptr(PnEngine) eh = pn_engine_new(PN_QUEUE_HEAP);
  g_autoptr(PnEngine) el = pn_engine_new(PN_QUEUE_LIST);
  drive(eh, &h, seed);
  drive(el, &l, seed);
  ck_assert_uint_gt(h.log->len, min_fired);
  ck_assert_uint_eq(h.log->len, l.log->len);
  for (guint i = 0; i < h.log->len; i++) {
    Fired x = g_array_index(h.log, Fired, i), y = g_array_index(l.log, Fired, i);
    ck_assert_int_eq(x.t_ns, y.t_ns);
    ck_assert_uint_eq(x.arg, y.arg);
    if (i > 0)
      ck_assert_int_ge(x.t_ns, g_array_index(h.log, Fired, i - 1).t_ns);
  }
  ck_assert_uint_eq(pn_engine_events_fired(eh), pn_engine_events_fired(el));
  ck_assert_int_eq(pn_engine_now(eh), pn_engine_now(el));
  ck_assert_uint_eq(pn_engine_pending(eh), 0);
  ck_assert_uint_eq(pn_engine_pending(el), 0);
  rec_clear(&h);
  rec_clear(&l);
}

static void random_ops_100k(PnEngine *eng, Rec *r, guint32 seed) { random_ops(eng, r, seed, 100000); }

/* Property: on 10^5 random operations (schedule, cancel of any id ever issued, step, and callbacks
 * that schedule and cancel; the pending count grows into the thousands), the production queue
 * fires exactly what the reference fires. */
START_TEST(test_heap_matches_list)
{
  for (guint32 seed = 1; seed <= 3; seed++)
    expect_heap_matches_list(random_ops_100k, seed, 30000);
}
END_TEST

/* Property: the production queue keeps few events as a sorted array and many as a heap, switching
 * above 64 pending and back below 16. Twenty times over, the pending count climbs from a handful
 * to 90-140 (schedules, many at equal times, and cancels of any id) and falls back to a few
 * (steps, whose callbacks schedule and cancel too): every switch, both ways, with ties and
 * cancelled keys in the array being converted, fires exactly what the reference fires. */
static void oscillate(PnEngine *eng, Rec *r, guint32 seed)
{
  r->rng = g_rand_new_with_seed(seed);
  for (int round = 0; round < 20; round++) {
    size_t top = 90 + (size_t)g_rand_int_range(r->rng, 0, 50);
    while (pn_engine_pending(eng) < top) {
      guint32 u    = g_rand_int_range(r->rng, 0, 100);
      PnTimeNs at  = pn_engine_now(eng) + g_rand_int_range(r->rng, 0, u < 30 ? 4 : 2000);
      PnEventId id = pn_engine_schedule(eng, at, random_cb, r, (uint64_t)(round * 100000 + u));
      g_array_append_val(r->ids, id);
      if (u < 10)
        pn_engine_cancel(eng, g_array_index(r->ids, PnEventId, g_rand_int_range(r->rng, 0, (gint32)r->ids->len)));
    }
    while (pn_engine_pending(eng) > 4)
      pn_engine_step(eng);
  }
  ck_assert(pn_engine_run(eng, 0, NULL));
}

START_TEST(test_small_heap_switch_matches_list)
{
  for (guint32 seed = 11; seed <= 13; seed++)
    expect_heap_matches_list(oscillate, seed, 2000);
}
END_TEST

/* The instant hook: requested from a callback at t = 5, it runs after every event due at 5
 * (scheduled before or during that instant), before the event at 6, and is not an event. When
 * it schedules an event at the current time and requests itself again, that event fires next
 * and the hook runs once more, still at 5. A hook requested with nothing left in the queue
 * runs at the end; the budget counts events only, and a hook left pending when it is spent
 * runs first (here it schedules nothing, so the run ends cleanly). */
typedef struct {
  Rec *rec;
  int calls, again;
} Hooked;

static void hook_request(PnEngine *eng, void *ctx, uint64_t arg)
{
  record(eng, ((Hooked *)ctx)->rec, arg);
  pn_engine_request_instant_hook(eng);
}

static void hook_fn(PnEngine *eng, void *ctx, uint64_t arg)
{
  Hooked *h = ctx;
  h->calls++;
  record(eng, h->rec, 1000 + (uint64_t)h->calls);
  if (h->again-- > 0) {
    pn_engine_schedule(eng, pn_engine_now(eng), record, h->rec, 500);
    pn_engine_request_instant_hook(eng);
  }
}

START_TEST(test_instant_hook)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  Hooked h = {.rec = &r, .again = 1};
  pn_engine_set_instant_hook(eng, hook_fn, &h);
  pn_engine_schedule(eng, 5, hook_request, &h, 1);
  pn_engine_schedule(eng, 5, record, &r, 2);
  pn_engine_schedule(eng, 6, hook_request, &h, 3);
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 7, (PnTimeNs[]){5, 5, 5, 5, 5, 6, 6}, (uint64_t[]){1, 2, 1001, 500, 1002, 3, 1003});
  ck_assert_uint_eq(pn_engine_events_fired(eng), 4);
  ck_assert_int_eq(h.calls, 3);

  g_autoptr(PnEngine) e2 = pn_engine_new(kinds[_i]);
  Rec r2;
  rec_init(&r2);
  Hooked h2 = {.rec = &r2};
  pn_engine_set_instant_hook(e2, hook_fn, &h2);
  pn_engine_schedule(e2, 1, hook_request, &h2, 7);
  ck_assert(pn_engine_run(e2, 1, NULL)); /* budget 1: the event, then the hook, then nothing */
  expect_log(&r2, 2, (PnTimeNs[]){1, 1}, (uint64_t[]){7, 1001});
  rec_clear(&r);
  rec_clear(&r2);
}
END_TEST

/* The scheduling counter reaching its limit (40 bits) renumbers the pending events without
 * changing their order: ties at one time still fire in scheduling order across the jump, with
 * events in the heap, in the due-now FIFO and scheduled after it. */
START_TEST(test_seq_renumber)
{
  g_autoptr(PnEngine) eng = pn_engine_new(kinds[_i]);
  Rec r;
  rec_init(&r);
  pn_engine_schedule(eng, 0, record, &r, 0);
  ck_assert(pn_engine_step(eng)); /* now = 0 */
  pn_engine_skip_seq_for_test(eng, 3);
  pn_engine_schedule(eng, 9, record, &r, 1);
  pn_engine_schedule(eng, 0, record, &r, 2); /* due now */
  pn_engine_schedule(eng, 9, record, &r, 3);
  pn_engine_schedule(eng, 9, record, &r, 4); /* renumbers first */
  pn_engine_schedule(eng, 0, record, &r, 5);
  pn_engine_schedule(eng, 5, record, &r, 6);
  pn_engine_schedule(eng, 9, record, &r, 7);
  ck_assert(pn_engine_run(eng, 0, NULL));
  expect_log(&r, 8, (PnTimeNs[]){0, 0, 0, 5, 9, 9, 9, 9}, (uint64_t[]){0, 2, 5, 6, 1, 3, 4, 7});
  rec_clear(&r);
}
END_TEST

/* ---- the heap (heap.h) ---- */

/* A key from a narrow range (many equal keys, and equal pairs) or from the whole range (keys up to
 * INT64_MAX, ords with the top bit set: the 128-bit compare must read both words unsigned, the key
 * first). */
static PnHeapKey random_key(GRand *rng, bool narrow)
{
  uint64_t hi = ((uint64_t)g_rand_int(rng) << 32) | g_rand_int(rng);
  uint64_t lo = ((uint64_t)g_rand_int(rng) << 32) | g_rand_int(rng);
  if (narrow)
    return (PnHeapKey){.key = (int64_t)(hi % 8), .ord = lo % 16};
  return (PnHeapKey){.key = (int64_t)(hi >> 1), .ord = lo};
}

/* The reference: the same keys sorted in descending order, the least at the end. */
static void ref_insert(GArray *ref, PnHeapKey k)
{
  guint i = ref->len;
  while (i > 0 && pn_heap_less(&g_array_index(ref, PnHeapKey, i - 1), &k))
    i--;
  g_array_insert_val(ref, i, k);
}

static void expect_pop(PnHeap *h, GArray *ref)
{
  PnHeapKey got  = pn_heap_pop(h);
  PnHeapKey want = g_array_index(ref, PnHeapKey, ref->len - 1);
  g_array_set_size(ref, ref->len - 1);
  ck_assert_int_eq(got.key, want.key);
  ck_assert_uint_eq(got.ord, want.ord);
  ck_assert_uint_eq(h->n, ref->len);
}

/* Property: through random pushes and pops (the heap growing from empty to hundreds of keys and
 * draining, with runs of equal keys), every pop returns the least key of a sorted reference that
 * holds the same keys. Every other round starts from an ascending array written in directly, as
 * the engine's queue switches from its sorted form. */
START_TEST(test_heap_matches_sorted)
{
  GRand *rng = g_rand_new_with_seed(7);
  for (int round = 0; round < 16; round++) {
    bool narrow           = round % 4 < 2;
    PnHeap h              = {0};
    g_autoptr(GArray) ref = g_array_new(FALSE, FALSE, sizeof(PnHeapKey));
    if (round % 2 == 1) {
      size_t n0 = (size_t)g_rand_int_range(rng, 1, 100);
      for (size_t i = 0; i < n0; i++)
        ref_insert(ref, random_key(rng, narrow));
      while (h.cap < n0)
        pn_heap_grow(&h);
      for (size_t i = 0; i < n0; i++)
        h.keys[i] = g_array_index(ref, PnHeapKey, n0 - 1 - i);
      h.n = n0;
    }
    for (int op = 0; op < 4000; op++) {
      int push_pct = op < 2000 ? 60 : 35; /* grow, then drain */
      if (ref->len == 0 || g_rand_int_range(rng, 0, 100) < push_pct) {
        PnHeapKey k = random_key(rng, narrow);
        pn_heap_push(&h, k);
        ref_insert(ref, k);
        ck_assert_uint_eq(h.n, ref->len);
      } else {
        expect_pop(&h, ref);
      }
    }
    while (ref->len > 0)
      expect_pop(&h, ref);
    pn_heap_clear(&h);
    ck_assert_ptr_null(h.keys);
    ck_assert_uint_eq(h.cap, 0);
  }
  g_rand_free(rng);
}
END_TEST

static Suite *core_suite(void)
{
  Suite *s = suite_create("core");
#define LOOP_TCASE(name, fn)                                                                                           \
  do {                                                                                                                 \
    TCase *tc_ = tcase_create(name);                                                                                   \
    tcase_add_loop_test(tc_, fn, 0, (int)G_N_ELEMENTS(kinds));                                                         \
    suite_add_tcase(s, tc_);                                                                                           \
  } while (0)
  LOOP_TCASE("order_by_time", test_order_by_time);
  LOOP_TCASE("fifo_ties", test_fifo_ties);
  LOOP_TCASE("cancel_before_fire", test_cancel_before_fire);
  LOOP_TCASE("cancel_after_fire", test_cancel_after_fire_is_noop);
  LOOP_TCASE("cancel_from_callback", test_cancel_from_callback);
  LOOP_TCASE("cancel_self", test_cancel_self_in_callback);
  LOOP_TCASE("schedule_from_callback", test_schedule_from_callback);
  LOOP_TCASE("budget", test_budget);
  LOOP_TCASE("stall", test_stall);
  LOOP_TCASE("ids_unique", test_ids_unique);
  LOOP_TCASE("determinism", test_determinism);
  LOOP_TCASE("instant_hook", test_instant_hook);
  LOOP_TCASE("seq_renumber", test_seq_renumber);
  TCase *tc = tcase_create("monotone_time");
  tcase_add_loop_test_raise_signal(tc, test_past_asserts, SIGABRT, 0, (int)G_N_ELEMENTS(kinds));
  suite_add_tcase(s, tc);
  tc = tcase_create("heap_matches_list");
  tcase_add_test(tc, test_heap_matches_list);
  suite_add_tcase(s, tc);
  tc = tcase_create("small_heap_switch_matches_list");
  tcase_add_test(tc, test_small_heap_switch_matches_list);
  suite_add_tcase(s, tc);
  tc = tcase_create("heap_matches_sorted");
  tcase_add_test(tc, test_heap_matches_sorted);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(core_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
