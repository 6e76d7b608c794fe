/* order.c — Megatron-Core's pipeline schedules as per-rank action lists (see order.h). */
#include "sched/order.h"

#include <string.h>

GQuark pn_sched_error_quark(void) { return g_quark_from_static_string("pn-sched-error-quark"); }

/* Bounds that keep every id inside the int32 / int16 fields of PnSchedAction. */
#define PN_SCHED_MAX_TOTAL ((int64_t)1 << 24) /* m * vpp */
#define PN_SCHED_MAX_PP ((int64_t)1 << 20)

/* One outstanding p2p handle: transfer `xfer` of action `action`. */
typedef struct {
  int32_t action;
  uint8_t xfer;
} Handle;

/* FIFO of handles; Megatron keeps recv handles in Python lists and pops index 0. */
typedef struct {
  GArray *items; /* of Handle */
  guint head;
} HandleQueue;

typedef struct {
  /* configuration, resolved */
  int64_t pp, vpp, m, group, rank, total, warmup, remaining;
  bool all_warmup, overlap, warmup_flush, dealloc;
  int32_t next, prev;
  /* schedule table, indexed by virtual micro-batch id */
  int32_t *tab_mb;
  int16_t *tab_chunk;
  /* receives so far per (direction, chunk): Megatron appends received tensors to per-chunk
   * lists and micro-batch i of a chunk consumes entry i, so this count is the micro-batch */
  int32_t *recv_act_count, *recv_grad_count;
  /* async handle state of the overlap path (names as in schedules.py) */
  HandleQueue recv_prev_handles, recv_next_handles;
  Handle send_next_handle, send_prev_handle; /* action < 0: None */
  PnSchedPhase phase;
  GArray *out;
} Builder;

static void queue_push(HandleQueue *q, Handle h) { g_array_append_val(q->items, h); }

static bool queue_empty(const HandleQueue *q) { return q->head >= q->items->len; }

static Handle queue_pop(HandleQueue *q)
{
  g_assert(!queue_empty(q));
  return g_array_index(q->items, Handle, q->head++);
}

/* ---- validation -------------------------------------------------------------------------- */

static int64_t effective_group(const PnSchedParams *p) { return p->group_size > 0 ? p->group_size : p->pp; }

bool pn_sched_overlap_p2p_effective(const PnSchedParams *p) { return p->overlap_p2p_comm && p->vpp > 1; }

gboolean pn_sched_validate(const PnSchedParams *p, GError **error)
{
  g_return_val_if_fail(p != NULL, FALSE);
  if (p->pp < 1 || p->pp > PN_SCHED_MAX_PP) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "pipeline_model_parallel_size %" G_GINT64_FORMAT " must be in [1, %" G_GINT64_FORMAT "]", p->pp,
                PN_SCHED_MAX_PP);
    return FALSE;
  }
  if (p->vpp < 1 || p->vpp > INT16_MAX) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "virtual_pipeline_model_parallel_size %" G_GINT64_FORMAT " must be in [1, %d] (1 = no interleaving)",
                p->vpp, INT16_MAX);
    return FALSE;
  }
  if (p->num_microbatches < 1 || p->num_microbatches > PN_SCHED_MAX_TOTAL / p->vpp) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "num_microbatches %" G_GINT64_FORMAT " must be in [1, %" G_GINT64_FORMAT
                "] for virtual_pipeline_model_parallel_size %" G_GINT64_FORMAT,
                p->num_microbatches, PN_SCHED_MAX_TOTAL / p->vpp, p->vpp);
    return FALSE;
  }
  if (p->group_size < 0) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "microbatch_group_size_per_vp_stage %" G_GINT64_FORMAT " must be >= 0 (0 = pipeline size)",
                p->group_size);
    return FALSE;
  }
  /* model_parallel_config.py __post_init__; with vpp == 1 arguments.py has already forced
   * overlap_p2p_comm off, so the warm-up/flush flag fails there too. */
  if (p->overlap_p2p_comm_warmup_flush && !pn_sched_overlap_p2p_effective(p)) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "overlap_p2p_comm_warmup_flush requires overlap_p2p_comm with the interleaved schedule "
                "(virtual_pipeline_model_parallel_size %" G_GINT64_FORMAT ", overlap_p2p_comm %s)",
                p->vpp, p->overlap_p2p_comm ? "true" : "false");
    return FALSE;
  }
  if (p->vpp == 1)
    return TRUE;

  /* Interleaved. get_forward_backward_func runs forward_backward_no_pipelining for pp == 1,
   * which asserts a single model chunk; arguments.py asks pp > 2 without p2p overlap (a
   * 2-rank batch would hold two sends and two receives between the same pair). */
  if (p->pp < 2 || (!p->overlap_p2p_comm && p->pp < 3)) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "virtual_pipeline_model_parallel_size %" G_GINT64_FORMAT
                " (interleaved schedule) needs pipeline_model_parallel_size > %d%s, got %" G_GINT64_FORMAT,
                p->vpp, p->overlap_p2p_comm ? 1 : 2, p->overlap_p2p_comm ? "" : " when overlap_p2p_comm is false",
                p->pp);
    return FALSE;
  }
  int64_t g = effective_group(p);
  if (p->num_microbatches < p->pp) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "num_microbatches %" G_GINT64_FORMAT " < pipeline_model_parallel_size %" G_GINT64_FORMAT
                ": the interleaved schedule needs microbatch_group_size_per_vp_stage in [pp, num_microbatches]",
                p->num_microbatches, p->pp);
    return FALSE;
  }
  /* forward_backward_pipelining_with_interleaving: ValueError, then RuntimeError. */
  if (g < p->pp || g > p->num_microbatches) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "microbatch_group_size_per_vp_stage %" G_GINT64_FORMAT
                " must be in [pipeline_model_parallel_size %" G_GINT64_FORMAT ", num_microbatches %" G_GINT64_FORMAT
                "]",
                g, p->pp, p->num_microbatches);
    return FALSE;
  }
  int64_t rem = p->num_microbatches % g;
  if (rem > 0 && rem < p->pp) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "num_microbatches %" G_GINT64_FORMAT " mod microbatch_group_size_per_vp_stage %" G_GINT64_FORMAT
                " = %" G_GINT64_FORMAT " must be 0 or >= pipeline_model_parallel_size %" G_GINT64_FORMAT
                " (a smaller last group leaves dependency bubbles)",
                p->num_microbatches, g, rem, p->pp);
    return FALSE;
  }
  return TRUE;
}

int64_t pn_sched_num_warmup(const PnSchedParams *p, int64_t pp_rank)
{
  g_assert(pp_rank >= 0 && pp_rank < p->pp);
  if (p->pp == 1)
    return p->combined_1f1b ? MIN(1, p->num_microbatches) : 0;
  if (p->vpp == 1)
    return MIN(p->pp - pp_rank - 1, p->num_microbatches);
  int64_t total = p->num_microbatches * p->vpp;
  int64_t w     = (p->pp - pp_rank - 1) * 2 + (p->vpp - 1) * effective_group(p) + (p->combined_1f1b ? 1 : 0);
  return MIN(w, total);
}

/* ---- emitting ---------------------------------------------------------------------------- */

static PnSchedAction blank_action(const Builder *b, PnActKind kind)
{
  PnSchedAction a;
  memset(&a, 0, sizeof a);
  a.kind        = (uint8_t)kind;
  a.phase       = (uint8_t)b->phase;
  a.call        = PN_P2P_NONE;
  a.microbatch  = -1;
  a.chunk       = -1;
  a.virtual_id  = -1;
  a.wait_action = -1;
  return a;
}

static int16_t fwd_chunk(const Builder *b, int64_t k) { return b->tab_chunk[k % b->total]; }

static int16_t bwd_chunk(const Builder *b, int64_t k) { return (int16_t)(b->vpp - 1 - b->tab_chunk[k % b->total]); }

static void emit_compute(Builder *b, PnActKind kind, int64_t k)
{
  PnSchedAction a = blank_action(b, kind);
  a.virtual_id    = (int32_t)k;
  a.microbatch    = b->tab_mb[k];
  if (kind == PN_ACT_FWD) {
    a.chunk                  = fwd_chunk(b, k);
    a.first_forward_of_chunk = a.microbatch == 0;
  } else {
    a.chunk                  = bwd_chunk(b, k);
    a.last_backward_of_chunk = a.microbatch == b->m - 1;
  }
  g_array_append_val(b->out, a);
}

/* The transfers of one call, built before it is emitted. */
typedef struct {
  int n;
  PnXfer x[PN_SCHED_MAX_XFERS];
} XferList;

static void add_send_next(Builder *b, XferList *l, int64_t k)
{
  l->x[l->n++] =
      (PnXfer){.send = true, .activation = true, .microbatch = b->tab_mb[k], .chunk = fwd_chunk(b, k), .peer = b->next};
}

static void add_send_prev(Builder *b, XferList *l, int64_t k)
{
  l->x[l->n++] = (PnXfer){
      .send = true, .activation = false, .microbatch = b->tab_mb[k], .chunk = bwd_chunk(b, k), .peer = b->prev};
}

static void add_recv_prev(Builder *b, XferList *l, int16_t chunk)
{
  l->x[l->n++] = (PnXfer){
      .send = false, .activation = true, .microbatch = b->recv_act_count[chunk]++, .chunk = chunk, .peer = b->prev};
}

static void add_recv_next(Builder *b, XferList *l, int16_t chunk)
{
  l->x[l->n++] = (PnXfer){
      .send = false, .activation = false, .microbatch = b->recv_grad_count[chunk]++, .chunk = chunk, .peer = b->next};
}

/* Emits the call unless it has no transfer (Megatron then posts nothing). Returns its index, or
 * -1 when omitted. */
static int32_t emit_comm(Builder *b, PnP2pCall call, const XferList *l, bool async)
{
  if (l->n == 0)
    return -1;
  PnSchedAction a = blank_action(b, PN_ACT_COMM);
  a.call          = (uint8_t)call;
  a.async         = async;
  a.n_xfers       = (uint8_t)l->n;
  memcpy(a.xfer, l->x, sizeof(PnXfer) * (size_t)l->n);
  g_array_append_val(b->out, a);
  return (int32_t)b->out->len - 1;
}

/* The handle of the transfer of `action` going in this direction, or action -1 (None). */
static Handle find_handle(const Builder *b, int32_t action, bool send, bool activation)
{
  Handle h = {.action = -1, .xfer = 0};
  if (action < 0)
    return h;
  const PnSchedAction *a = &g_array_index(b->out, PnSchedAction, action);
  for (uint8_t i = 0; i < a->n_xfers; i++)
    if (a->xfer[i].send == send && a->xfer[i].activation == activation) {
      h.action = action;
      h.xfer   = i;
    }
  return h;
}

static void emit_wait(Builder *b, Handle h)
{
  g_assert(h.action >= 0);
  PnSchedAction a = blank_action(b, PN_ACT_WAIT);
  a.wait_action   = h.action;
  a.wait_xfer     = h.xfer;
  a.n_xfers       = 1;
  a.xfer[0]       = g_array_index(b->out, PnSchedAction, h.action).xfer[h.xfer];
  g_array_append_val(b->out, a);
}

/* Pops and waits the oldest handle of q, as `handles.pop(0).wait()`. When `required`
 * (overlap_p2p_comm_warmup_flush) Megatron asserts the list is non-empty; otherwise an empty
 * list means the tensor came from a blocking call and nothing is waited. */
static gboolean wait_oldest(Builder *b, HandleQueue *q, bool required, int64_t k, GError **error)
{
  if (queue_empty(q)) {
    if (required) {
      g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                  "pp rank %" G_GINT64_FORMAT ", iteration %" G_GINT64_FORMAT
                  ": Megatron's schedule would fail its 'should have registered recv handle' assertion",
                  b->rank, k);
      return FALSE;
    }
    return TRUE;
  }
  emit_wait(b, queue_pop(q));
  return TRUE;
}

/* After an async call: wait the previous send of that direction, keep this one's send as the
 * new "previous" and queue its receive (the bookkeeping after each async call in schedules.py). */
static void after_async(Builder *b, int32_t action, bool activation)
{
  Handle *prev_send = activation ? &b->send_next_handle : &b->send_prev_handle;
  if (prev_send->action >= 0)
    emit_wait(b, *prev_send);
  *prev_send = find_handle(b, action, true, activation);
  Handle r   = find_handle(b, action, false, activation);
  if (r.action >= 0)
    queue_push(activation ? &b->recv_prev_handles : &b->recv_next_handles, r);
  /* deallocate_pipeline_outputs: the activation buffer is freed right away, so its send is
   * waited on now (forward direction only). */
  if (activation && b->dealloc && prev_send->action >= 0) {
    emit_wait(b, *prev_send);
    prev_send->action = -1;
  }
}

/* ---- 1F1B (vpp == 1) --------------------------------------------------------------------- */

static void build_1f1b(Builder *b)
{
  bool first = b->rank == 0, last = b->rank == b->pp - 1;
  int64_t w = b->warmup, r = b->remaining;
  XferList l;

  b->phase = PN_PHASE_WARMUP;
  for (int64_t i = 0; i < w; i++) {
    l.n = 0;
    if (!first)
      add_recv_prev(b, &l, 0);
    emit_comm(b, PN_P2P_RECV_FORWARD, &l, false);
    emit_compute(b, PN_ACT_FWD, i);
    l.n = 0;
    if (!last)
      add_send_next(b, &l, i);
    emit_comm(b, PN_P2P_SEND_FORWARD, &l, false);
  }

  b->phase = PN_PHASE_STEADY;
  if (r > 0) {
    l.n = 0;
    if (!first)
      add_recv_prev(b, &l, 0);
    emit_comm(b, PN_P2P_RECV_FORWARD, &l, false);
  }
  for (int64_t i = 0; i < r; i++) {
    emit_compute(b, PN_ACT_FWD, w + i);
    l.n = 0;
    if (!last) {
      add_send_next(b, &l, w + i);
      add_recv_next(b, &l, 0);
    }
    emit_comm(b, PN_P2P_SEND_FORWARD_RECV_BACKWARD, &l, false);
    emit_compute(b, PN_ACT_BWD, i);
    l.n = 0;
    if (!first) {
      add_send_prev(b, &l, i);
      if (i != r - 1)
        add_recv_prev(b, &l, 0);
    }
    emit_comm(b, i == r - 1 ? PN_P2P_SEND_BACKWARD : PN_P2P_SEND_BACKWARD_RECV_FORWARD, &l, false);
  }

  b->phase = PN_PHASE_COOLDOWN;
  for (int64_t i = 0; i < w; i++) {
    l.n = 0;
    if (!last)
      add_recv_next(b, &l, 0);
    emit_comm(b, PN_P2P_RECV_BACKWARD, &l, false);
    emit_compute(b, PN_ACT_BWD, r + i);
    l.n = 0;
    if (!first)
      add_send_prev(b, &l, r + i);
    emit_comm(b, PN_P2P_SEND_BACKWARD, &l, false);
  }
}

/* ---- interleaved (vpp > 1) --------------------------------------------------------------- */

/* recv_tensor_from_previous_stage: whether the call after step k receives (activation when
 * forward, gradient otherwise) and for which chunk of this rank. */
static bool recv_from_previous(const Builder *b, int64_t k, bool forward, int16_t *chunk)
{
  bool leading = forward ? b->rank == 0 : b->rank == b->pp - 1;
  if (!leading) {
    *chunk = forward ? fwd_chunk(b, k + 1) : bwd_chunk(b, k + 1);
    return true;
  }
  /* The trailing rank of this direction runs pp-1 steps behind the leading one. */
  bool recv = true;
  int64_t aligned;
  if (k < b->pp - 1) {
    recv    = false;
    aligned = k + 1;
  } else {
    aligned = k - (b->pp - 1);
  }
  int16_t c = forward ? fwd_chunk(b, aligned) : bwd_chunk(b, aligned);
  if (c == (forward ? b->vpp - 1 : 0))
    recv = false; /* the final virtual stage produces nothing to pass on */
  *chunk = (int16_t)(forward ? c + 1 : c - 1);
  return recv;
}

static bool is_first_vstage(const Builder *b, int16_t chunk) { return chunk == 0 && b->rank == 0; }

static bool is_last_vstage(const Builder *b, int16_t chunk) { return chunk == b->vpp - 1 && b->rank == b->pp - 1; }

/* Warm-up ("Run warmup forward passes" in schedules.py): forwards only; the call after the last
 * one also posts the receive of the first backward's gradient. */
static gboolean interleaved_warmup(Builder *b, GError **error)
{
  bool first = b->rank == 0, last = b->rank == b->pp - 1;
  bool wf = b->warmup_flush, ov = b->overlap;
  int64_t w = b->warmup, total = b->total;
  XferList l;
  int16_t nc;

  b->phase = PN_PHASE_WARMUP;
  l.n      = 0;
  if (!first)
    add_recv_prev(b, &l, 0);
  emit_comm(b, PN_P2P_RECV_FORWARD, &l, false);

  for (int64_t k = 0; k < w; k++) {
    int16_t c = fwd_chunk(b, k);
    if (wf && !is_first_vstage(b, c) && k != 0 && !wait_oldest(b, &b->recv_prev_handles, true, k, error))
      return FALSE;
    bool recv_prev = recv_from_previous(b, k, true, &nc);
    if (k == total - 1)
      recv_prev = false;
    if (wf && !first) { /* prefetch the next input before computing */
      l.n = 0;
      if (recv_prev)
        add_recv_prev(b, &l, nc);
      int32_t ai = emit_comm(b, PN_P2P_SEND_FORWARD_RECV_FORWARD, &l, true);
      Handle h   = find_handle(b, ai, false, true);
      if (h.action >= 0)
        queue_push(&b->recv_prev_handles, h);
    }
    emit_compute(b, PN_ACT_FWD, k);
    bool send = !is_last_vstage(b, c);
    if (!wf) {
      bool fused = k == w - 1 && !ov && !b->all_warmup;
      l.n        = 0;
      if (send)
        add_send_next(b, &l, k);
      if (recv_prev)
        add_recv_prev(b, &l, nc);
      if (fused && !last)
        add_recv_next(b, &l, (int16_t)(b->vpp - 1));
      emit_comm(b, fused ? PN_P2P_SEND_FORWARD_BACKWARD_RECV_FORWARD_BACKWARD : PN_P2P_SEND_FORWARD_RECV_FORWARD, &l,
                false);
    } else {
      l.n = 0;
      if (send)
        add_send_next(b, &l, k);
      if (first && recv_prev) /* no prefetch on the first rank */
        add_recv_prev(b, &l, nc);
      after_async(b, emit_comm(b, PN_P2P_SEND_FORWARD_RECV_FORWARD, &l, true), true);
    }
    if (ov && k == w - 1 && !b->all_warmup) {
      l.n = 0;
      if (!last)
        add_recv_next(b, &l, (int16_t)(b->vpp - 1));
      after_async(b, emit_comm(b, PN_P2P_SEND_BACKWARD_RECV_BACKWARD, &l, true), false);
    }
  }
  return TRUE;
}

/* Steady state ("Run 1F1B in steady state"): a forward and a backward per step; with
 * overlap_p2p_comm each is followed by its own async call, without it they share one blocking call. */
static gboolean interleaved_steady(Builder *b, GError **error)
{
  bool wf = b->warmup_flush, ov = b->overlap;
  int64_t w = b->warmup;
  XferList l;
  int16_t nc;

  b->phase = PN_PHASE_STEADY;
  for (int64_t k = 0; k < b->remaining; k++) {
    int64_t fk = k + w, bk = k;
    int16_t fc = fwd_chunk(b, fk), bc = bwd_chunk(b, bk), nbc;
    if (ov) {
      if (!is_first_vstage(b, fc) && !wait_oldest(b, &b->recv_prev_handles, wf, fk, error))
        return FALSE;
      emit_compute(b, PN_ACT_FWD, fk);
      bool recv_prev = recv_from_previous(b, fk, true, &nc);
      if (k == b->remaining - 1)
        recv_prev = false;
      l.n = 0;
      if (!is_last_vstage(b, fc))
        add_send_next(b, &l, fk);
      if (recv_prev)
        add_recv_prev(b, &l, nc);
      after_async(b, emit_comm(b, PN_P2P_SEND_FORWARD_RECV_FORWARD, &l, true), true);

      if (!is_last_vstage(b, bc) && !wait_oldest(b, &b->recv_next_handles, wf, bk, error))
        return FALSE;
      emit_compute(b, PN_ACT_BWD, bk);
      bool recv_next = recv_from_previous(b, bk, false, &nbc);
      l.n            = 0;
      if (!is_first_vstage(b, bc))
        add_send_prev(b, &l, bk);
      if (recv_next)
        add_recv_next(b, &l, nbc);
      after_async(b, emit_comm(b, PN_P2P_SEND_BACKWARD_RECV_BACKWARD, &l, true), false);
    } else {
      emit_compute(b, PN_ACT_FWD, fk);
      emit_compute(b, PN_ACT_BWD, bk);
      bool recv_prev = recv_from_previous(b, fk, true, &nc);
      bool recv_next = recv_from_previous(b, bk, false, &nbc);
      if (k == b->remaining - 1)
        recv_prev = false;
      l.n = 0;
      if (!is_last_vstage(b, fc))
        add_send_next(b, &l, fk);
      if (!is_first_vstage(b, bc))
        add_send_prev(b, &l, bk);
      if (recv_prev)
        add_recv_prev(b, &l, nc);
      if (recv_next)
        add_recv_next(b, &l, nbc);
      emit_comm(b, PN_P2P_SEND_FORWARD_BACKWARD_RECV_FORWARD_BACKWARD, &l, false);
    }
  }
  return TRUE;
}

/* Cool-down ("Run cooldown backward passes"): the remaining backwards, then the wait for the
 * last send. */
static gboolean interleaved_cooldown(Builder *b, GError **error)
{
  bool last     = b->rank == b->pp - 1;
  bool wf       = b->warmup_flush;
  int64_t total = b->total;
  XferList l;

  b->phase = PN_PHASE_COOLDOWN;
  if (b->all_warmup) {
    l.n = 0;
    if (!last)
      add_recv_next(b, &l, (int16_t)(b->vpp - 1));
    emit_comm(b, PN_P2P_RECV_BACKWARD, &l, false);
  }
  for (int64_t k = b->remaining; k < total; k++) {
    int16_t c = bwd_chunk(b, k), nbc;
    if (!is_last_vstage(b, c) && k != 0 && !wait_oldest(b, &b->recv_next_handles, wf, k, error))
      return FALSE;
    bool recv_next = recv_from_previous(b, k, false, &nbc);
    if (k == total - 1)
      recv_next = false;
    if (wf && !last) { /* prefetch the next output gradient */
      l.n = 0;
      if (recv_next)
        add_recv_next(b, &l, nbc);
      int32_t ai = emit_comm(b, PN_P2P_SEND_BACKWARD_RECV_BACKWARD, &l, true);
      Handle h   = find_handle(b, ai, false, false);
      if (h.action >= 0)
        queue_push(&b->recv_next_handles, h);
    }
    emit_compute(b, PN_ACT_BWD, k);
    l.n = 0;
    if (!is_first_vstage(b, c))
      add_send_prev(b, &l, k);
    if (wf) {
      if (last && recv_next)
        add_recv_next(b, &l, nbc);
      after_async(b, emit_comm(b, PN_P2P_SEND_BACKWARD_RECV_BACKWARD, &l, true), false);
    } else {
      if (recv_next)
        add_recv_next(b, &l, nbc);
      emit_comm(b, PN_P2P_SEND_BACKWARD_RECV_BACKWARD, &l, false);
    }
  }
  if (b->send_prev_handle.action >= 0)
    emit_wait(b, b->send_prev_handle);
  return TRUE;
}

static gboolean build_interleaved(Builder *b, GError **error)
{
  if (!interleaved_warmup(b, error) || !interleaved_steady(b, error) || !interleaved_cooldown(b, error))
    return FALSE;
  /* schedules.py asserts both receive lists are drained at the end of a step. */
  g_assert(queue_empty(&b->recv_prev_handles));
  g_assert(queue_empty(&b->recv_next_handles));
  return TRUE;
}

/* get_schedule_table: group by group, every chunk in turn over the group's micro-batches; the
 * last group (the one reaching m) takes whatever remains. */
static void fill_schedule_table(Builder *b)
{
  int64_t v = 0;
  for (int64_t lo = 0; lo < b->m; lo += b->group) {
    int64_t hi = lo + b->group >= b->m ? b->m : lo + b->group;
    for (int64_t c = 0; c < b->vpp; c++)
      for (int64_t mb = lo; mb < hi; mb++) {
        b->tab_mb[v]    = (int32_t)mb;
        b->tab_chunk[v] = (int16_t)c;
        v++;
      }
  }
  g_assert(v == b->total);
}

gboolean pn_sched_actions(const PnSchedParams *p, int64_t pp_rank, GArray *out, GError **error)
{
  g_return_val_if_fail(p != NULL && out != NULL, FALSE);
  g_return_val_if_fail(g_array_get_element_size(out) == sizeof(PnSchedAction), FALSE);
  g_array_set_size(out, 0);
  if (!pn_sched_validate(p, error))
    return FALSE;
  if (pp_rank < 0 || pp_rank >= p->pp) {
    g_set_error(error, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID,
                "pipeline rank %" G_GINT64_FORMAT " outside [0, pipeline_model_parallel_size %" G_GINT64_FORMAT ")",
                pp_rank, p->pp);
    return FALSE;
  }

  Builder b = {0};
  b.pp      = p->pp;
  b.vpp     = p->vpp;
  b.m       = p->num_microbatches;
  /* vpp == 1: one chunk, so the table is the identity whatever the group */
  b.group                   = p->vpp > 1 ? effective_group(p) : b.m;
  b.rank                    = pp_rank;
  b.total                   = b.m * b.vpp;
  b.warmup                  = pn_sched_num_warmup(p, pp_rank);
  b.remaining               = b.total - b.warmup;
  b.all_warmup              = p->vpp > 1 && b.remaining == 0;
  b.overlap                 = pn_sched_overlap_p2p_effective(p);
  b.warmup_flush            = b.overlap && p->overlap_p2p_comm_warmup_flush;
  b.dealloc                 = p->deallocate_pipeline_outputs;
  b.next                    = (int32_t)((pp_rank + 1) % p->pp);
  b.prev                    = (int32_t)((pp_rank - 1 + p->pp) % p->pp);
  b.out                     = out;
  b.send_next_handle.action = -1;
  b.send_prev_handle.action = -1;

  g_autofree int32_t *tab_mb    = g_new(int32_t, b.total);
  g_autofree int16_t *tab_chunk = g_new(int16_t, b.total);
  g_autofree int32_t *recv_act  = g_new0(int32_t, b.vpp);
  g_autofree int32_t *recv_grad = g_new0(int32_t, b.vpp);
  b.tab_mb                      = tab_mb;
  b.tab_chunk                   = tab_chunk;
  b.recv_act_count              = recv_act;
  b.recv_grad_count             = recv_grad;
  b.recv_prev_handles.items     = g_array_new(FALSE, FALSE, sizeof(Handle));
  b.recv_next_handles.items     = g_array_new(FALSE, FALSE, sizeof(Handle));
  fill_schedule_table(&b);

  gboolean ok = TRUE;
  if (p->vpp == 1)
    build_1f1b(&b);
  else
    ok = build_interleaved(&b, error);

  g_array_free(b.recv_prev_handles.items, TRUE);
  g_array_free(b.recv_next_handles.items, TRUE);
  if (!ok)
    g_array_set_size(out, 0);
  return ok;
}

/* ---- names ------------------------------------------------------------------------------- */

const char *pn_sched_call_name(PnP2pCall call)
{
  switch (call) {
  case PN_P2P_NONE:
    return "none";
  case PN_P2P_RECV_FORWARD:
    return "recv_forward";
  case PN_P2P_SEND_FORWARD:
    return "send_forward";
  case PN_P2P_RECV_BACKWARD:
    return "recv_backward";
  case PN_P2P_SEND_BACKWARD:
    return "send_backward";
  case PN_P2P_SEND_FORWARD_RECV_BACKWARD:
    return "send_forward_recv_backward";
  case PN_P2P_SEND_BACKWARD_RECV_FORWARD:
    return "send_backward_recv_forward";
  case PN_P2P_SEND_FORWARD_RECV_FORWARD:
    return "send_forward_recv_forward";
  case PN_P2P_SEND_BACKWARD_RECV_BACKWARD:
    return "send_backward_recv_backward";
  case PN_P2P_SEND_FORWARD_BACKWARD_RECV_FORWARD_BACKWARD:
    return "send_forward_backward_recv_forward_backward";
  }
  return "?";
}

const char *pn_sched_kind_name(PnActKind kind)
{
  switch (kind) {
  case PN_ACT_FWD:
    return "fwd";
  case PN_ACT_BWD:
    return "bwd";
  case PN_ACT_COMM:
    return "comm";
  case PN_ACT_WAIT:
    return "wait";
  }
  return "?";
}

const char *pn_sched_phase_name(PnSchedPhase phase)
{
  switch (phase) {
  case PN_PHASE_WARMUP:
    return "warmup";
  case PN_PHASE_STEADY:
    return "steady";
  case PN_PHASE_COOLDOWN:
    return "cooldown";
  }
  return "?";
}
