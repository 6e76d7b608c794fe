/* tp_slots.c — tensor-parallel communication beside its GEMM. A TP slot is a collective and the
 * GEMM that shares its ub_slot in workload/ops.h. With tp_comm_overlap and a method for the slot,
 * it runs as Transformer Engine's userbuffers overlap (comm_gemm_overlap.cpp: a bulk comm kernel,
 * a pipelined reduce-scatter over GEMM chunks, or a ring exchange of copy-engine transfers; the
 * per-slot PnUbCfg of plan.h); without, TE still overlaps the async collectives of a column-parallel
 * linear with sequence parallel (layernorm_linear.py). Either way a slot becomes a few template
 * entries on the TP comm stream and the compute stream (the folding of a split GEMM into three
 * entries is explained at tpl_ub_group). */
#include <math.h>

#include "hw/cost.h"
#include "sched/sched-private.h"

/* TE userbuffers: the last pipeline RS chunk runs with UB_MAX_SM CTAs (comm_gemm_overlap.cpp). */
#define PN_UB_MAX_SM 32

/* A userbuffers comm kernel inside the TP group (NVLink): `sms` CTAs move the data; sms == 0 is
 * a copy-engine transfer (ring_exchange with use_ce), which holds no SM. `bytes` per GPU.
 * Its rate is not an NCCL channel's: on an NVSwitch system Transformer Engine (>= 1.6) runs the
 * bulk and pipelined kernels through NVLink multicast (common/comm_gemm_overlap/userbuffers/
 * userbuffers.cu, allgather2_userbuff_inplace and reducescatter2_userbuff_*: the all-gather writes
 * its shard once and the switch replicates it, the reduce-scatter reduces in the switch; off only
 * with UB_SKIPMC=1, userbuffers-host.cpp), so even the 2 blocks of the 405B preset's bulk slots
 * move at the GPU's NVLink rate (a published figure: multicast is off on the machines we measure
 * on); with UB_SKIPMC=1 its blocks move the data through NVLink IPC with plain accesses, at the
 * rate measured for that many CTAs (mb_p2p_sm: an all-gather's push, ub_push_bytes_per_ns; a
 * reduce-scatter's loads from its peers (`reduce`), ub_pull_bytes_per_ns; an NCCL channel's
 * per-CTA rate where the profile has neither). */
static void ub_task(const PnBuilder *b, double bytes, int sms, int steps, bool reduce, PnTask *t)
{
  const PnHwProfile *hw = b->sc->hw;
  t->kind               = PN_TASK_COMM;
  t->cls                = PN_CLASS_TP;
  t->sms                = (int16_t)sms;
  t->latency_ns         = steps * hw->nccl_nvlink_hop_ns;
  t->nvlink_bytes       = bytes;
  const PnCurve *c      = reduce ? &hw->ub_pull_bytes_per_ns : &hw->ub_push_bytes_per_ns;
  double push           = c->n > 0 ? pn_curve_eval(c, sms, 0.0) : sms * hw->nccl_cta_bytes_per_ns;
  double per_blocks     = b->sc->env.ub_skipmc ? fmin(push, hw->nvlink_bytes_per_ns) : hw->nvlink_bytes_per_ns;
  t->max_bytes_per_ns   = sms > 0 ? per_blocks : hw->nvlink_ce_bytes_per_ns;
}

/* A side-stream collective `t` and its GEMM `gt`. Issued first, the collective runs beside the
 * GEMM (it moves a tensor the GEMM does not read) and the compute after the GEMM joins it; issued
 * after, it consumes the GEMM's output and the next compute joins it. */
static void tpl_comm_beside_gemm(GArray *tpl, const PnTask *t, const PnTask *gt, bool comm_first)
{
  if (comm_first) {
    pn__tpl_join_after_next(tpl, pn__tpl_add(tpl, t, -1, -1, true, true));
    pn__tpl_add(tpl, gt, -1, -1, false, false);
  } else {
    pn__tpl_add(tpl, gt, -1, -1, false, false);
    pn__tpl_add(tpl, t, -1, -1, true, true);
  }
}

/* `count` consecutive chunks of a GEMM split into `parts` equal chunks along M, as one task:
 * each chunk is priced at its own shape and pays its own launch (the executor adds the last),
 * unless a CUDA graph replays them (graphs.c). */
static void gemm_chunks(PnBuilder *b, const PnOp *gemm, int parts, int count, int sm_limit, PnTask *t)
{
  PnOp part  = *gemm;
  part.m     = (gemm->m + parts - 1) / parts;
  part.flops = gemm->flops / parts;
  pn__price_op(b, &part, t);
  t->sms           = (int16_t)sm_limit;
  double launch_ns = pn__graphs_capture_op(b, gemm) ? 0.0 : b->sc->hw->kernel_launch_ns;
  t->work_ns       = t->work_ns * count + (count - 1) * launch_ns;
}

static int ub_gemm_sm_limit(const PnBuilder *b, const PnUbCfg *cfg)
{
  int left = b->sc->hw->sm_count - cfg->num_sm;
  return cfg->set_sm_margin ? (left > 0 ? left : 1) : 0; /* a comm kernel wider than the GPU leaves it one SM */
}

/* Userbuffers or TE-async overlap of one GEMM with its TP collective. `comm` and `gemm` are the
 * two ops of a slot; `comm_first` says which comes first in issue order.
 *
 * Folding. TE runs a split GEMM as s chunks g_i interleaved with s - 1 transfers c_i; simulated
 * one by one that is 2s tasks per GEMM (72% of a 405B graph). With durations g and c, chunk by
 * chunk (stream order, one hardware queue), a ring-exchange AG ends at max(s g, (s-1) c + g), an
 * RS (ring or pipelined) at g + max((s-1) g, (s-1) c) before its tail, and the communication
 * not covered by a GEMM is the difference to s g. Three tasks give the same: the s - 1
 * transfers as one transfer of their bytes and latencies, the s - 1 chunks they overlap as one
 * GEMM task (each chunk priced at its shape, with its launch), and the chunk on the other side
 * of the dependency apart. Only rate changes inside the group (another stream's kernel taking
 * SMs, another NVLink flow) land differently: measured over every shipped scenario and
 * validation row, 0.10% at most. */
static void tpl_ub_group(PnBuilder *b, GArray *tpl, const PnOp *comm, const PnOp *gemm, bool comm_first,
                         const PnUbCfg *cfg)
{
  PnTask t;
  double n     = (double)b->tp;
  double S     = comm->bytes;
  int sm_limit = ub_gemm_sm_limit(b, cfg);
  /* an FP8 reduce-scatter buffer (fp8_buf) moves one byte per element instead of two */
  if (!comm_first && cfg->fp8_buf && b->sc->training.precision == PN_PREC_FP8)
    S *= 0.5;
  switch (cfg->method) {
  case PN_UB_BULK: {
    /* One comm kernel beside one GEMM; the stream after them waits for both. */
    pn__task_init(&t, PN_TASK_COMM, PN_STREAM_TP_COMM, comm->name, comm->phase);
    ub_task(b, S * (n - 1.0) / n, cfg->num_sm, (int)(n - 1), comm->coll == PN_COLL_REDUCE_SCATTER, &t);
    PnTask gt;
    pn__price_op(b, gemm, &gt);
    gt.sms = (int16_t)sm_limit;
    tpl_comm_beside_gemm(tpl, &t, &gt, comm_first);
    break;
  }
  case PN_UB_PIPELINE: {
    /* GEMM in num_splits chunks along M; chunk i's reduce-scatter runs beside GEMM i+1; the
     * last RS chunk (UB_MAX_SM CTAs) is exposed. Only valid for RS (GEMM first). Folded (above): chunk 0, the
     * reduce-scatters of chunks 0..s-2 as one comm kernel beside chunks 1..s-1 as one GEMM task, then the last, exposed
     * reduce-scatter. */
    int splits = cfg->num_splits > 0 ? cfg->num_splits : 4;
    PnTask gt;
    gemm_chunks(b, gemm, splits, 1, sm_limit, &gt);
    pn__tpl_add(tpl, &gt, -1, -1, false, false);
    if (splits > 1) {
      pn__task_init(&t, PN_TASK_COMM, PN_STREAM_TP_COMM, comm->name, comm->phase);
      ub_task(b, S / splits * (splits - 1) * (n - 1.0) / n, cfg->num_sm, (splits - 1) * (int)(n - 1), true, &t);
      pn__tpl_add(tpl, &t, -1, -1, true, false);
      gemm_chunks(b, gemm, splits, splits - 1, sm_limit, &gt);
      pn__tpl_add(tpl, &gt, -1, -1, false, false);
    }
    pn__task_init(&t, PN_TASK_COMM, PN_STREAM_TP_COMM, comm->name, comm->phase);
    ub_task(b, S / splits * (n - 1.0) / n, PN_UB_MAX_SM, (int)(n - 1), true, &t);
    pn__tpl_add(tpl, &t, -1, -1, true, true);
    break;
  }
  case PN_UB_RING_EXCHANGE:
  default: {
    int steps = cfg->aggregate ? (int)(n / 2) : (int)n;
    if (steps < 1)
      steps = 1;
    PnTask gt;
    if (steps == 1 && comm_first) {
      gemm_chunks(b, gemm, 1, 1, sm_limit, &gt);
      pn__tpl_add(tpl, &gt, -1, -1, false, false);
      break;
    }
    /* The steps' copy-engine transfers as one (steps - 1 latencies, all their bytes). */
    pn__task_init(&t, PN_TASK_COMM, PN_STREAM_TP_COMM, comm->name, comm->phase);
    ub_task(b, S / steps * (steps - 1), 0, steps - 1, false, &t);
    int16_t last = -1;
    if (comm_first) {
      /* AG: step 0 multiplies the local chunk; each later step waits for the chunk received by
       * the previous transfer to the ring neighbour. Folded: the transfers beside steps
       * 0..s-2, and the last step after both. */
      int16_t c = pn__tpl_add(tpl, &t, -1, -1, true, false);
      gemm_chunks(b, gemm, steps, steps - 1, sm_limit, &gt);
      pn__tpl_add(tpl, &gt, -1, -1, false, false);
      gemm_chunks(b, gemm, steps, 1, sm_limit, &gt);
      pn__tpl_add(tpl, &gt, c, -1, false, false);
    } else {
      /* RS: each step's partial output goes to its owner while the next partial GEMM runs; a
       * reduce kernel on the main stream sums the received partials after the last transfer.
       * Folded: step 0, then the transfers beside steps 1..s-1. */
      gemm_chunks(b, gemm, steps, 1, sm_limit, &gt);
      pn__tpl_add(tpl, &gt, -1, -1, false, false);
      if (steps > 1) {
        last = pn__tpl_add(tpl, &t, -1, -1, true, false);
        gemm_chunks(b, gemm, steps, steps - 1, sm_limit, &gt);
        pn__tpl_add(tpl, &gt, -1, -1, false, false);
      }
      PnTask red;
      pn__task_init(&red, PN_TASK_COMPUTE, PN_STREAM_COMPUTE, "ub_reduce", comm->phase);
      red.scaling = PN_SCALE_MEMORY;
      red.work_ns = pn_cost_memory_ns(b->sc->hw, S / n * 2.0 * (n + 1.0) / 2.0);
      pn__tpl_add(tpl, &red, last, -1, false, false);
    }
    break;
  }
  }
}

/* TE without userbuffers still overlaps two backward collectives of a column-parallel linear
 * with sequence parallel: the async all-gather of the saved ln output runs beside the dgrad
 * GEMM, and the async reduce-scatter of dX beside the wgrad GEMM (layernorm_linear.py). MLA's
 * up projections ("mla_up_*", not userbuffers slots) always run so. */
static bool slot_is_te_async(const char *slot)
{
  return slot &&
         (g_str_equal(slot, "qkv_dgrad") || g_str_equal(slot, "fc1_dgrad") || g_str_equal(slot, "qkv_wgrad") ||
          g_str_equal(slot, "fc1_wgrad") || g_str_equal(slot, "mla_up_dgrad") || g_str_equal(slot, "mla_up_wgrad"));
}

/* The GEMM a TP collective at `i` belongs to: the next op when it carries the same slot, or one
 * a few memory-bound kernels later (TE casts / transposes dY between the gather and its GEMM in
 * FP8; with userbuffers the cast happens first and the transpose for the wgrad after). -1 when
 * none. */
static int slot_partner(GArray *ops, guint i)
{
  const PnOp *op = &g_array_index(ops, PnOp, i);
  for (guint j = i + 1; j < ops->len && j <= i + 3; j++) {
    const PnOp *o = &g_array_index(ops, PnOp, j);
    if (o->ub_slot && g_str_equal(o->ub_slot, op->ub_slot) && (o->kind == PN_OP_COMM) != (op->kind == PN_OP_COMM) &&
        (o->kind == PN_OP_GEMM || op->kind == PN_OP_GEMM))
      return (int)j;
    if (o->kind != PN_OP_MEM || o->ub_slot)
      return -1;
  }
  return -1;
}

/* The TP slot opened by ops[i], if the plan overlaps it, appended to `tpl`. Returns the index of
 * the last op it took (ops[i] and the ops up to its partner), or -1 when ops[i] is not overlapped
 * here (the caller adds it as it is). */
int pn__tpl_tp_slot(PnBuilder *b, GArray *tpl, GArray *ops, guint i)
{
  const PnOp *op = &g_array_index(ops, PnOp, i);
  /* A TP slot group: one COMM and one GEMM sharing a ub_slot. */
  int j = op->ub_slot ? slot_partner(ops, i) : -1;
  if (j > 0) {
    const PnOp *partner = &g_array_index(ops, PnOp, j);
    const PnOp *comm    = op->kind == PN_OP_COMM ? op : partner;
    const PnOp *gemm    = op->kind == PN_OP_COMM ? partner : op;
    int slot            = pn_ub_slot_from_name(op->ub_slot);
    bool ub             = b->plan->tp_comm_overlap && slot >= 0 && b->plan->ub[slot].method != PN_UB_NONE;
    if (ub || slot_is_te_async(op->ub_slot)) {
      if (ub) {
        tpl_ub_group(b, tpl, comm, gemm, op == comm, &b->plan->ub[slot]);
      } else {
        PnTask t, gt;
        pn__price_op(b, comm, &t);
        t.stream = PN_STREAM_TP_COMM;
        pn__price_op(b, gemm, &gt);
        tpl_comm_beside_gemm(tpl, &t, &gt, op == comm);
      }
      /* memory-bound kernels skipped over (dY transposes for the wgrad) run after the pair */
      for (guint k = i + 1; k < (guint)j; k++)
        pn__tpl_plain(b, tpl, &g_array_index(ops, PnOp, k));
      return j;
    }
  }
  /* A TE async collective whose wgrad GEMM was deferred to backward_dw() (delay_wgrad_compute)
   * still runs on its stream beside what follows; the next compute after it joins it. */
  if (j < 0 && op->kind == PN_OP_COMM && slot_is_te_async(op->ub_slot)) {
    PnTask t;
    pn__price_op(b, op, &t);
    t.stream = PN_STREAM_TP_COMM;
    pn__tpl_join_after_next(tpl, pn__tpl_add(tpl, &t, -1, -1, true, true));
    return (int)i;
  }
  return -1;
}
