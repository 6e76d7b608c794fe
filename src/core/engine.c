/* engine.c — event queue and loop (see engine.h for the contract).
 *
 * Layout: the queue holds small keys (heap.h's {key, ord} = {t_ns, seq << 24 | slot}, 16 bytes)
 * and the payload of each pending event (fn, ctx, arg, cancelled flag) lives in a slot table, so
 * heap moves stay cheap and cancel is an O(1) store. A slot is released when its event is popped
 * and reused through a free list: memory is bounded by the largest number of pending events, not
 * by the number of events ever scheduled.
 *
 * Event ids: id = (generation << 32) | slot. A slot's generation is bumped when its event is
 * popped, so a stale id (fired or cancelled-and-popped) no longer matches and cancelling it is a
 * no-op. A slot whose generation would wrap is retired instead of reused, so ids are never
 * reused (generation starts at 1, hence id 0 is never valid).
 *
 * Events due now: an event scheduled at the current time (a simulator's "settle" or a zero
 * delay) goes to a FIFO beside the heap instead of into it. Its key is larger than every key
 * already queued at this instant and the FIFO drains before time can advance, so the FIFO holds
 * only keys at `now`, in seq order: popping the smaller of the FIFO's head and the heap's top
 * gives exactly the (t_ns, seq) order, at O(1) for these events.
 *
 * Queues: PN_QUEUE_HEAP is the production queue. While at most SMALL_MAX keys are pending (the
 * executor keeps 11 on average and never 64 for a 405B run) they are a sorted array, ascending
 * from `q_head`: the earliest is popped by advancing q_head, and a new key is placed by scanning
 * back from the latest, which it usually is or nearly is (a kernel's completion comes after most
 * pending events), so a push is a few compares and moves and a pop one load, where a heap pays a
 * sift-up and a bottom-up deletion. Past SMALL_MAX the array becomes a 4-ary min-heap (an
 * ascending array is already one: the switch is a move to the front), and it goes back to sorted
 * below SMALL_MIN (an insertion sort of a few keys); the gap keeps a queue that hovers near the
 * limit from switching at every event. PN_QUEUE_LIST keeps the same keys sorted in descending
 * order, so the earliest is at the end (O(1) pop) and an insertion scans from the end (O(n)): the
 * obviously-correct reference the tests compare with.
 */
#include "core/engine.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/heap.h"

/* A pending event's key (PnHeapKey): `key` is its time (t_ns, >= 0), `ord` holds seq (scheduling
 * order, unique: breaks ties FIFO) in its high 40 bits and the slot in the low 24, so that a key
 * is two words and compares as one 128-bit number. At most 2^24 events may be pending at once
 * (the executor keeps a few per simulated GPU); seq is renumbered, order kept, in the unlikely
 * case it reaches 2^40 (10^12 events scheduled). */
#define SLOT_BITS 24
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define SEQ_LIMIT ((uint64_t)1 << (64 - SLOT_BITS))

static inline uint32_t key_slot(const PnHeapKey *k) { return (uint32_t)(k->ord & SLOT_MASK); }

typedef struct {
  PnEventFn fn;
  void *ctx;
  uint64_t arg;
  uint32_t gen; /* generation of the event currently (or next) in this slot */
  bool cancelled;
} PnEventSlot;

/* Plain growable arrays rather than GArray: the hot path is a handful of loads and stores, and
 * GArray's out-of-line size checks cost more than the heap operations at small sizes. */
struct PnEngine {
  PnQueueKind kind;
  PnTimeNs now_ns;
  uint64_t next_seq;
  uint64_t fired;
  PnHeap queue; /* HEAP: sorted ascending from q_head, or a heap (q_head 0); LIST: descending */
  size_t q_head;
  bool sorted; /* HEAP: the small sorted form (see the top of this file) */
  PnEventSlot *slots;
  uint32_t n_slots, cap_slots;
  uint32_t *free_slots; /* a stack */
  uint32_t n_free, cap_free;
  uint64_t stall_limit; /* pn_engine_set_stall_limit; 0 = none */
  PnHeapKey *due;       /* HEAP only: events scheduled at now_ns, oldest first, from due_head */
  size_t due_head, n_due, cap_due;
  PnEventFn hook_fn; /* the instant hook (pn_engine_set_instant_hook) */
  void *hook_ctx;
  bool hook_pending; /* requested: called before time next advances */
};

GQuark pn_engine_error_quark(void) { return g_quark_from_static_string("pn-engine-error-quark"); }

PnEngine *pn_engine_new(PnQueueKind kind)
{
  g_assert(kind == PN_QUEUE_HEAP || kind == PN_QUEUE_LIST);
  PnEngine *eng  = g_new0(PnEngine, 1);
  eng->kind      = kind;
  eng->sorted    = kind == PN_QUEUE_HEAP;
  eng->cap_slots = eng->cap_free = 64;
  eng->queue                     = (PnHeap){.keys = g_new(PnHeapKey, 64), .cap = 64};
  eng->slots                     = g_new(PnEventSlot, eng->cap_slots);
  eng->free_slots                = g_new(uint32_t, eng->cap_free);
  return eng;
}

void pn_engine_free(PnEngine *eng)
{
  if (!eng)
    return;
  pn_heap_clear(&eng->queue);
  g_free(eng->slots);
  g_free(eng->free_slots);
  g_free(eng->due);
  g_free(eng);
}

PnTimeNs pn_engine_now(const PnEngine *eng) { return eng->now_ns; }
void pn_engine_skip_seq_for_test(PnEngine *eng, uint64_t left) { eng->next_seq = SEQ_LIMIT - MIN(left, SEQ_LIMIT); }
void pn_engine_set_stall_limit(PnEngine *eng, uint64_t max_events) { eng->stall_limit = max_events; }
uint64_t pn_engine_events_fired(const PnEngine *eng) { return eng->fired; }
size_t pn_engine_pending(const PnEngine *eng) { return eng->queue.n + (eng->n_due - eng->due_head); }

/* ---- slots ---- */

static inline uint32_t slot_acquire(PnEngine *eng)
{
  if (eng->n_free > 0)
    return eng->free_slots[--eng->n_free];
  if (eng->n_slots > SLOT_MASK)
    g_error("event engine: more than %u events pending at once", SLOT_MASK + 1);
  if (eng->n_slots == eng->cap_slots) {
    eng->cap_slots *= 2;
    eng->slots = g_renew(PnEventSlot, eng->slots, eng->cap_slots);
  }
  eng->slots[eng->n_slots] = (PnEventSlot){.gen = 1};
  return eng->n_slots++;
}

/* Invalidates the slot's id and makes it reusable (or retires it if its generation is spent). */
static inline void slot_release(PnEngine *eng, PnEventSlot *s, uint32_t slot)
{
  s->cancelled = false;
  if (s->gen == UINT32_MAX)
    return; /* retired: never handed out again, so no id repeats */
  s->gen++;
  if (eng->n_free == eng->cap_free) {
    eng->cap_free *= 2;
    eng->free_slots = g_renew(uint32_t, eng->free_slots, eng->cap_free);
  }
  eng->free_slots[eng->n_free++] = slot;
}

static inline void queue_reserve(PnEngine *eng)
{
  if (eng->queue.n == eng->queue.cap)
    pn_heap_grow(&eng->queue);
}

/* ---- heap queue: sorted while small, a 4-ary heap (heap.h) when large ---- */

#define SMALL_MAX 64
#define SMALL_MIN 16

/* The earliest pending key (the queue is not empty). */
static inline PnHeapKey *queue_front(const PnEngine *eng) { return &eng->queue.keys[eng->q_head]; }

/* Sorted form: places a new key by scanning back from the latest (room is made at the tail
 * first). A new key's seq is above every pending one (seq only grows, and renumber() keeps
 * next_seq above the keys it renumbers), so it goes before a key exactly when its time is
 * earlier: the scan compares times only. */
static inline void small_push(PnEngine *eng, PnHeapKey key)
{
  if (eng->q_head + eng->queue.n == eng->queue.cap) {
    if (eng->q_head > 0) { /* popped slots at the front: slide down rather than grow */
      memmove(eng->queue.keys, queue_front(eng), eng->queue.n * sizeof *eng->queue.keys);
      eng->q_head = 0;
    } else {
      queue_reserve(eng);
    }
  }
  PnHeapKey *a = queue_front(eng);
  size_t i     = eng->queue.n++;
  while (i > 0 && key.key < a[i - 1].key) {
    a[i] = a[i - 1];
    i--;
  }
  a[i] = key;
}

/* Sorted form -> heap: an ascending array is a valid min-heap once it starts at index 0. */
static void small_to_heap(PnEngine *eng)
{
  if (eng->q_head > 0)
    memmove(eng->queue.keys, queue_front(eng), eng->queue.n * sizeof *eng->queue.keys);
  eng->q_head = 0;
  eng->sorted = false;
}

/* Heap -> sorted form: an insertion sort of the (fewer than SMALL_MIN) keys. */
static void heap_to_small(PnEngine *eng)
{
  PnHeapKey *a = eng->queue.keys;
  for (size_t j = 1; j < eng->queue.n; j++) {
    PnHeapKey k = a[j];
    size_t i    = j;
    while (i > 0 && pn_heap_less(&k, &a[i - 1])) {
      a[i] = a[i - 1];
      i--;
    }
    a[i] = k;
  }
  eng->sorted = true;
}

static inline void adaptive_push(PnEngine *eng, PnHeapKey key)
{
  if (G_LIKELY(eng->sorted)) {
    if (G_LIKELY(eng->queue.n < SMALL_MAX)) {
      small_push(eng, key);
      return;
    }
    small_to_heap(eng);
  }
  pn_heap_push(&eng->queue, key);
}

static inline PnHeapKey adaptive_pop(PnEngine *eng)
{
  if (G_LIKELY(eng->sorted)) {
    PnHeapKey key = eng->queue.keys[eng->q_head++];
    if (--eng->queue.n == 0)
      eng->q_head = 0;
    return key;
  }
  PnHeapKey key = pn_heap_pop(&eng->queue);
  if (eng->queue.n < SMALL_MIN)
    heap_to_small(eng);
  return key;
}

/* ---- sorted-list queue (reference) ---- */

static void list_push(PnEngine *eng, PnHeapKey key)
{
  /* Descending order; skip from the end over every key that comes before the new one. */
  queue_reserve(eng);
  PnHeapKey *a = eng->queue.keys;
  size_t i     = eng->queue.n;
  while (i > 0 && pn_heap_less(&a[i - 1], &key))
    i--;
  memmove(&a[i + 1], &a[i], (eng->queue.n - i) * sizeof *a);
  a[i] = key;
  eng->queue.n++;
}

static inline PnHeapKey list_pop(PnEngine *eng) { return eng->queue.keys[--eng->queue.n]; }

/* ---- events due now (HEAP) ---- */

static inline void due_push(PnEngine *eng, PnHeapKey key)
{
  if (eng->n_due == eng->cap_due) {
    eng->cap_due = eng->cap_due ? 2 * eng->cap_due : 64;
    eng->due     = g_renew(PnHeapKey, eng->due, eng->cap_due);
  }
  eng->due[eng->n_due++] = key;
}

/* True when the next event is the FIFO's head rather than the heap's top. */
static inline bool due_first(const PnEngine *eng)
{
  return eng->due_head < eng->n_due && (eng->queue.n == 0 || pn_heap_less(&eng->due[eng->due_head], queue_front(eng)));
}

static inline PnHeapKey due_pop(PnEngine *eng)
{
  PnHeapKey key = eng->due[eng->due_head++];
  if (eng->due_head == eng->n_due)
    eng->due_head = eng->n_due = 0; /* drained: reuse from the start */
  return key;
}

static inline PnHeapKey queue_pop(PnEngine *eng)
{
  if (eng->kind != PN_QUEUE_HEAP)
    return list_pop(eng);
  return due_first(eng) ? due_pop(eng) : adaptive_pop(eng);
}

static inline const PnHeapKey *queue_peek(const PnEngine *eng)
{
  if (eng->kind == PN_QUEUE_HEAP && due_first(eng))
    return &eng->due[eng->due_head];
  if (eng->queue.n == 0)
    return NULL;
  return eng->kind == PN_QUEUE_HEAP ? queue_front(eng) : &eng->queue.keys[eng->queue.n - 1];
}

/* ---- renumbering ---- */

static int key_cmp(const void *a, const void *b)
{
  const PnHeapKey *x = *(const PnHeapKey *const *)a, *y = *(const PnHeapKey *const *)b;
  return pn_heap_less(x, y) ? -1 : pn_heap_less(y, x) ? 1 : 0;
}

/* seq would pass its 40 bits: every pending key gets a new seq from 0, in the keys' order, so
 * the (t_ns, seq) order of all pending events (heap, FIFO or list) is unchanged and each
 * container's arrangement stays valid. */
static void renumber(PnEngine *eng)
{
  size_t n_due = eng->n_due - eng->due_head, n = eng->queue.n + n_due;
  PnHeapKey **all = g_new(PnHeapKey *, n ? n : 1);
  for (size_t i = 0; i < eng->queue.n; i++)
    all[i] = &eng->queue.keys[eng->q_head + i]; /* q_head is 0 except in the sorted form */
  for (size_t i = 0; i < n_due; i++)
    all[eng->queue.n + i] = &eng->due[eng->due_head + i];
  qsort(all, n, sizeof *all, key_cmp);
  for (size_t i = 0; i < n; i++)
    all[i]->ord = ((uint64_t)i << SLOT_BITS) | key_slot(all[i]);
  eng->next_seq = n;
  g_free(all);
}

/* ---- API ---- */

PnEventId pn_engine_schedule(PnEngine *eng, PnTimeNs at_ns, PnEventFn fn, void *ctx, uint64_t arg)
{
  g_assert(fn != NULL);
  g_assert(at_ns >= eng->now_ns); /* time never goes backwards */
  uint32_t slot  = slot_acquire(eng);
  PnEventSlot *s = &eng->slots[slot];
  s->fn          = fn;
  s->ctx         = ctx;
  s->arg         = arg;
  s->cancelled   = false;
  if (eng->next_seq == SEQ_LIMIT)
    renumber(eng);
  PnHeapKey key = {.key = at_ns, .ord = (eng->next_seq++ << SLOT_BITS) | slot};
  if (eng->kind == PN_QUEUE_HEAP && at_ns == eng->now_ns)
    due_push(eng, key);
  else if (eng->kind == PN_QUEUE_HEAP)
    adaptive_push(eng, key);
  else
    list_push(eng, key);
  return ((uint64_t)s->gen << 32) | slot;
}

void pn_engine_cancel(PnEngine *eng, PnEventId id)
{
  uint32_t slot = (uint32_t)(id & 0xffffffffu);
  uint32_t gen  = (uint32_t)(id >> 32);
  if (slot >= eng->n_slots)
    return;
  PnEventSlot *s = &eng->slots[slot];
  if (s->gen == gen) /* still pending: a fired event's slot has moved on to the next generation */
    s->cancelled = true;
}

void pn_engine_set_instant_hook(PnEngine *eng, PnEventFn fn, void *ctx)
{
  eng->hook_fn  = fn;
  eng->hook_ctx = ctx;
}

void pn_engine_request_instant_hook(PnEngine *eng)
{
  g_assert(eng->hook_fn != NULL);
  eng->hook_pending = true;
}

bool pn_engine_step(PnEngine *eng)
{
  for (;;) {
    /* queue_peek() then queue_pop(), with the FIFO-or-heap choice made once */
    bool from_due         = eng->kind == PN_QUEUE_HEAP && due_first(eng);
    const PnHeapKey *head = from_due                     ? &eng->due[eng->due_head]
                            : eng->queue.n == 0          ? NULL
                            : eng->kind == PN_QUEUE_HEAP ? queue_front(eng)
                                                         : &eng->queue.keys[eng->queue.n - 1];
    if (eng->hook_pending && (head == NULL || head->key > eng->now_ns)) {
      eng->hook_pending = false; /* the hook may request itself again */
      eng->hook_fn(eng, eng->hook_ctx, 0);
      continue;
    }
    if (head == NULL)
      return false;
    PnHeapKey key  = from_due ? due_pop(eng) : eng->kind == PN_QUEUE_HEAP ? adaptive_pop(eng) : list_pop(eng);
    uint32_t slot  = key_slot(&key);
    PnEventSlot *s = &eng->slots[slot];
    bool cancelled = s->cancelled;
    PnEventFn fn   = s->fn;
    void *ctx      = s->ctx;
    uint64_t arg   = s->arg;
    /* Released before firing, so the callback may cancel its own id (a no-op) or reuse the slot. */
    slot_release(eng, s, slot);
    if (cancelled)
      continue;
    g_assert(key.key >= eng->now_ns);
    eng->now_ns = key.key;
    eng->fired++;
    fn(eng, ctx, arg);
    return true;
  }
}

/* Pops cancelled events sitting at the head; true when a live event remains. */
static bool has_live_event(PnEngine *eng)
{
  const PnHeapKey *head;
  while ((head = queue_peek(eng)) != NULL) {
    PnEventSlot *s = &eng->slots[key_slot(head)];
    if (!s->cancelled)
      return true;
    uint32_t slot = key_slot(head);
    (void)queue_pop(eng);
    slot_release(eng, s, slot);
  }
  return false;
}

gboolean pn_engine_run(PnEngine *eng, uint64_t event_budget, GError **error)
{
  uint64_t n = 0, same_instant = 0;
  PnTimeNs instant = eng->now_ns;
  for (;;) {
    /* The budget is spent: fine if nothing is left. A requested hook whose instant is over runs
     * first (as the next step would): it may end the run cleanly or schedule more. */
    if (event_budget != 0 && n >= event_budget && !has_live_event(eng) && eng->hook_pending) {
      eng->hook_pending = false;
      eng->hook_fn(eng, eng->hook_ctx, 0);
    }
    if (event_budget != 0 && n >= event_budget && (eng->hook_pending || has_live_event(eng))) {
      g_set_error(error, PN_ENGINE_ERROR, PN_ENGINE_ERROR_BUDGET,
                  "event budget exhausted: %" PRIu64 " events fired in this run, %zu still pending at t=%" PRId64
                  " ns (runaway or cyclic schedule?)",
                  n, pn_engine_pending(eng), eng->now_ns);
      return FALSE;
    }
    if (!pn_engine_step(eng))
      return TRUE;
    n++;
    /* time advances, or the run is a zero-duration loop */
    if (eng->now_ns != instant) {
      instant      = eng->now_ns;
      same_instant = 1;
    } else if (eng->stall_limit != 0 && ++same_instant >= eng->stall_limit && has_live_event(eng) &&
               queue_peek(eng)->key == instant) {
      g_set_error(error, PN_ENGINE_ERROR, PN_ENGINE_ERROR_STALLED,
                  "simulated time stopped advancing: %" PRIu64 " events fired at t=%" PRId64
                  " ns and more are due then (zero-duration loop?)",
                  same_instant, instant);
      return FALSE;
    }
  }
}
