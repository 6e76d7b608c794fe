/* pp_p2p.c — pipeline-parallel P2P calls (Megatron-Core's p2p_communication.py, issued where the
 * schedules of order.h put them): a call's sends and receives as NCCL P2P tasks on the stream that
 * torch keeps for the peer pair, or as one batch_isend_irecv kernel (batch_p2p_comm). A blocking
 * call makes the compute stream wait for it; an async one (overlap_p2p_comm) is waited for where
 * the schedule's wait action stands. The two sides of a transfer, built on two GPUs, are paired in
 * the graph through a key both compute. */
#include "sched/sched-private.h"

/* Pairing key of a transfer: which tensor (activation or gradient) of which micro-batch, for
 * which consuming virtual stage. Both sides compute the same key. */
static gint64 xfer_key(const PnBuilder *b, uint32_t rank, const PnXfer *x)
{
  int64_t vs = pn__vstage_of(b, rank, x->chunk), consumer;
  if (x->activation)
    consumer = x->send ? vs + 1 : vs;
  else
    consumer = x->send ? vs - 1 : vs;
  return ((gint64)b->iteration << 48) | ((gint64)(x->activation ? 1 : 0) << 47) | ((gint64)x->microbatch << 20) |
         (gint64)consumer;
}

static bool stages_cross_nodes(const PnBuilder *b, int64_t r1, int64_t r2)
{
  int64_t stride = b->tp * b->cp * b->dp, gpn = b->sc->hw->gpus_per_node;
  return (r1 * stride) / gpn != (r2 * stride) / gpn;
}

static void pair_xfer(PnBuilder *b, uint32_t rank, PnTaskId id, const PnXfer *x)
{
  gint64 key     = xfer_key(b, rank, x);
  gpointer other = g_hash_table_lookup(b->p2p_open, &key);
  if (!other) {
    gint64 *k = g_new(gint64, 1);
    *k        = key;
    g_hash_table_insert(b->p2p_open, k, GUINT_TO_POINTER(id + 1));
    return;
  }
  PnTaskId peer = GPOINTER_TO_UINT(other) - 1;
  g_hash_table_remove(b->p2p_open, &key);
  bool cross = stages_cross_nodes(b, rank, x->peer);
  if (x->send)
    pn_graph_pair_p2p(b->g, id, peer, b->p2p_bytes, cross);
  else
    pn_graph_pair_p2p(b->g, peer, id, b->p2p_bytes, cross);
}

/* Which PP stream carries a transfer: torch keeps one NCCL communicator (and stream) per pair
 * of ranks for P2P, so traffic with the next and with the previous rank flow independently;
 * with pp == 2 both are the same rank and Megatron sends one direction over another group. */
static PnStream xfer_stream(const PnBuilder *b, uint32_t rank, const PnXfer *x)
{
  if (b->pp == 2)
    return x->activation ? PN_STREAM_PP_SEND : PN_STREAM_PP_RECV;
  return x->peer == (int32_t)((rank + 1) % b->pp) ? PN_STREAM_PP_SEND : PN_STREAM_PP_RECV;
}

/* One p2p call. Batched (batch_isend_irecv) calls are one kernel with every transfer; otherwise
 * each peer's transfers go on that peer's stream. Blocking calls make the compute stream wait; after a
 * batched one the host waits for the whole GPU (p2p_communication.py: torch.cuda.synchronize() after
 * batch_isend_irecv, "to protect against race condition"), so it can never run ahead of a P2P.
 * A call that sends is launched after `after` (PN_TASK_NONE: the compute stream's tail; the
 * combined 1F1B launches post_forward from the forward chain). */
void pn__emit_p2p(PnBuilder *b, uint32_t rank, const PnSchedAction *a, guint action_index, PnTaskId after)
{
  const PnHwProfile *hw         = b->sc->hw;
  bool batched                  = b->plan->batch_p2p_comm && !a->async;
  PnTaskId *slots               = &g_array_index(b->action_task, PnTaskId, action_index * PN_SCHED_MAX_XFERS);
  bool done[PN_SCHED_MAX_XFERS] = {false};
  PnTaskId waits[PN_SCHED_MAX_XFERS];
  int n_waits = 0;
  for (int i = 0; i < a->n_xfers; i++) {
    if (done[i])
      continue;
    PnStream stream = batched ? PN_STREAM_PP_SEND : xfer_stream(b, rank, &a->xfer[i]);
    PnTask t;
    pn__task_init(&t, PN_TASK_P2P, stream, a->xfer[i].send ? "pp_send" : "pp_recv",
                  a->xfer[i].activation ? PN_PHASE_FWD : PN_PHASE_BWD);
    t.cls         = PN_CLASS_PP;
    t.microbatch  = a->xfer[i].microbatch;
    t.chunk       = a->xfer[i].chunk;
    bool over_nic = stages_cross_nodes(b, rank, a->xfer[i].peer);
    /* PyTorch runs a batched call on the pipeline group's communicator and a lone isend / irecv
     * on a communicator of the two ranks (ProcessGroupNCCL::pointToPoint); one that reaches a
     * peer over the network gives every peer NCCL's network channel count (profile.h) */
    bool net_comm = batched ? stages_cross_nodes(b, 0, b->pp - 1) : over_nic;
    t.sms         = (int16_t)(net_comm ? pn_hw_profile_p2p_net_ctas(hw) : hw->nccl_p2p_ctas);
    t.latency_ns  = hw->nccl_base_latency_ns + (over_nic ? hw->nccl_net_hop_ns : hw->nccl_nvlink_hop_ns);
    double per_cta =
        hw->nccl_cta_busbw[PN_COLL_SEND_RECV] > 0 ? hw->nccl_cta_busbw[PN_COLL_SEND_RECV] : hw->nccl_cta_bytes_per_ns;
    t.max_bytes_per_ns = t.sms * per_cta;
    /* a batched call ends in torch.cuda.synchronize() (batch_p2p_sync, always on: no flag sets it) */
    t.host_ns   = (float)hw->host.p2p_ns;
    t.host_sync = batched ? PN_HOST_SYNC_DEVICE : PN_HOST_SYNC_NONE;
    /* a send waits for the compute that produced its tensor; a receive can be posted early */
    bool has_send = false;
    for (int j = i; j < a->n_xfers; j++)
      if (!done[j] && (batched || xfer_stream(b, rank, &a->xfer[j]) == stream))
        has_send = has_send || a->xfer[j].send;
    if (a->n_xfers > 1)
      t.label = "pp_p2p";
    PnTaskId id = has_send ? pn__add_side_task_after(b, rank, &t, after) : pn__add_task(b, rank, &t, NULL, 0);
    for (int j = i; j < a->n_xfers; j++) {
      if (done[j] || !(batched || xfer_stream(b, rank, &a->xfer[j]) == stream))
        continue;
      done[j]  = true;
      slots[j] = id;
      pair_xfer(b, rank, id, &a->xfer[j]);
    }
    waits[n_waits++] = id;
  }
  /* the call's requests are waited for once all are posted (req.wait() after the isend/irecvs) */
  if (!a->async)
    for (int i = 0; i < n_waits; i++)
      pn__push_pending(b, rank, waits[i]);
}

void pn__emit_wait(PnBuilder *b, uint32_t rank, const PnSchedAction *a)
{
  if (a->wait_action < 0)
    return;
  PnTaskId id = g_array_index(b->action_task, PnTaskId, (guint)a->wait_action * PN_SCHED_MAX_XFERS + a->wait_xfer);
  if (id != PN_TASK_NONE)
    pn__push_pending(b, rank, id);
}
