/* cp_ring.c — context parallelism's ring attention, the p2p cp_comm_type: its KV exchanges on the
 * CP comm stream, overlapped step by step with the attention (Transformer Engine's
 * AttnFuncWithCPAndKVP2P). */
#include "sched/sched-private.h"

/* Context-parallel ring attention (TE AttnFuncWithCPAndKVP2P): cp steps; step i computes on the
 * KV received in step i-1 while the next exchange is in flight; step 0 uses the local KV. */
void pn__tpl_cp_ring(PnBuilder *b, GArray *tpl, const PnOp *comm, const PnOp *attn)
{
  int steps = (int)b->cp;
  PnTask at;
  pn__price_op(b, attn, &at);
  at.work_ns /= steps;
  int16_t prev_comm = -1;
  for (int i = 0; i < steps; i++) {
    int16_t comm_i = -1;
    if (i < steps - 1) {
      PnTask t;
      pn__task_init(&t, PN_TASK_COMM, PN_STREAM_CP_COMM, comm->name, comm->phase);
      pn__nccl_task(b, PN_COLL_SEND_RECV, comm->bytes / (steps - 1), PN_GROUP_CP, &t);
      comm_i = pn__tpl_add(tpl, &t, -1, -1, i == 0, false);
    }
    pn__tpl_add(tpl, &at, prev_comm, -1, false, false);
    prev_comm = comm_i;
  }
}
