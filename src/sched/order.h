/* order.h — the per-rank order of compute steps and point-to-point calls of Megatron-Core's
 * pipeline schedules (1F1B and interleaved 1F1B), for one training step.
 *
 * What it models. For pipeline rank r of a PP group of size pp, the exact sequence of what
 * Megatron's schedule function does on that rank: every forward / backward step of a
 * (micro-batch, model chunk), every p2p call it makes (one PN_ACT_COMM per call, with the one to
 * four transfers that call posts), and, for the asynchronous calls of the overlap path, every
 * handle wait (PN_ACT_WAIT). No durations, no tensor sizes: those belong to the layers above.
 * Sources (NVIDIA/Megatron-LM, read at commit d98e8a64dd, 2026-08-22; paths, not code):
 *   megatron/core/pipeline_parallel/schedules.py
 *     forward_backward_pipelining_without_interleaving   (vpp == 1, pp > 1)
 *     forward_backward_no_pipelining                     (pp == 1: same order as 1F1B, no p2p)
 *     forward_backward_pipelining_with_interleaving       (vpp > 1), and inside it
 *       get_model_chunk_id, recv_tensor_from_previous_stage, pp_pre_/pp_post_forward/backward
 *     get_pp_rank_microbatches  (warm-up counts), get_schedule_table (chunk order)
 *   megatron/core/pipeline_parallel/p2p_communication.py  (P2PCommunicator: which transfers
 *     each call posts, and that first/last stages skip _communicate entirely)
 *   megatron/training/arguments.py  (validate_args: interleaving needs pp > 2 without overlap)
 *   megatron/training/argument_utils.py  (Megatron-LM sets batch_p2p_comm = !overlap_p2p_comm and
 *     deallocate_pipeline_outputs = True)
 *
 * Semantics, 1F1B (vpp == 1). W = min(pp - r - 1, m) warm-up forwards, R = m - W steady pairs.
 *   warm-up  W x: recv_forward, F(i), send_forward
 *   then     if R > 0: recv_forward
 *   steady   R x: F(W+i), send_forward_recv_backward, B(i),
 *                 send_backward_recv_forward (the last iteration: send_backward)
 *   cooldown W x: recv_backward, B(R+i), send_backward
 * First stage: every call that only receives activations / sends gradients is skipped (no
 * _communicate at all); last stage likewise for sending activations / receiving gradients.
 * Every call is blocking. overlap_p2p_comm is ignored here (arguments.py forces it off; the
 * caller should warn).
 *
 * Semantics, interleaved (vpp > 1). Virtual micro-batch ids k in [0, m*vpp). The schedule table
 * (get_schedule_table) lists, group by group of g = microbatch_group_size_per_vp_stage
 * micro-batches, chunk 0 on the group, then chunk 1 on the same group, ...; the last group takes
 * the remainder. Forward k runs (table[k].mb, table[k].chunk); backward k runs
 * (table[k].mb, vpp-1-table[k].chunk). Warm-up W = min((pp-r-1)*2 + (vpp-1)*g, m*vpp); when the
 * cap binds every forward is in warm-up ("all warm-up", no steady state; this is the only
 * all-warm-up rule in current Megatron, there is no special case for m == pp any more).
 * Virtual stage of chunk c on rank r is c*pp + r; the activation leaving rank pp-1's chunk c wraps
 * round the PP ring to rank 0's chunk c+1 (and the gradient the other way). The receiving chunk
 * is found as recv_tensor_from_previous_stage does: on the leading rank (rank 0 forward, rank
 * pp-1 backward) it is the chunk the trailing rank ran pp-1 steps earlier, plus (minus) one.
 *   start       recv_forward (not on rank 0)
 *   warm-up  k: F(k), then send_forward_recv_forward; without overlap the last warm-up iteration
 *               instead calls send_forward_backward_recv_forward_backward, which also receives the
 *               first gradient; with overlap it is followed by an async send_backward_recv_backward
 *               that only receives it. All blocking, except with overlap_p2p_comm_warmup_flush.
 *   steady   k: no overlap: F(W+k), B(k), send_forward_backward_recv_forward_backward (blocking,
 *               up to four transfers). Overlap: [wait oldest activation recv] F(W+k),
 *               async send_forward_recv_forward, [wait previous activation send]
 *               ([wait this send] when deallocate_pipeline_outputs), [wait oldest gradient recv]
 *               B(k), async send_backward_recv_backward, [wait previous gradient send].
 *   cooldown k: (all warm-up: recv_backward first) [wait oldest gradient recv] B(k),
 *               send_backward_recv_backward (blocking); at the end, wait the last async
 *               gradient send. The last async activation send of the steady state is never
 *               waited explicitly: it completes when rank r+1 receives it.
 * overlap_p2p_comm_warmup_flush makes warm-up and cool-down asynchronous too: non-leading ranks
 * prefetch the next receive before the compute, and waits move as in the steady state.
 *
 * Invariants (tests/unit/test_sched.c holds them): every rank runs m*vpp forwards and m*vpp
 * backwards, each (micro-batch, chunk) forward before its backward; over all ranks, the i-th
 * transfer posted from rank a to rank b matches the i-th receive posted by b from a, with the
 * same (direction, micro-batch, virtual stage); with blocking calls completing when every
 * transfer's counterpart is posted and waits completing when their transfer is matched, all
 * ranks finish; every received tensor is waited on before the step that consumes it.
 *
 * Cost: pn_sched_actions is O(m*vpp) time and memory per rank (about 5 actions per
 * micro-batch and chunk); nothing else allocates.
 */
#ifndef PN_SCHED_ORDER_H
#define PN_SCHED_ORDER_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define PN_SCHED_ERROR (pn_sched_error_quark())
GQuark pn_sched_error_quark(void);
typedef enum { PN_SCHED_ERROR_INVALID } PnSchedError;

typedef enum {
  PN_ACT_FWD,  /* forward step of (microbatch, chunk) */
  PN_ACT_BWD,  /* backward step of (microbatch, chunk) */
  PN_ACT_COMM, /* one p2p call: posts xfer[0..n_xfers) together */
  PN_ACT_WAIT, /* handle.wait() on one transfer of an earlier async COMM of this rank */
} PnActKind;

typedef enum { PN_PHASE_WARMUP, PN_PHASE_STEADY, PN_PHASE_COOLDOWN } PnSchedPhase;

/* The P2PCommunicator method a COMM stands for (p2p_communication.py names). */
typedef enum {
  PN_P2P_NONE, /* FWD / BWD / WAIT */
  PN_P2P_RECV_FORWARD,
  PN_P2P_SEND_FORWARD,
  PN_P2P_RECV_BACKWARD,
  PN_P2P_SEND_BACKWARD,
  PN_P2P_SEND_FORWARD_RECV_BACKWARD,
  PN_P2P_SEND_BACKWARD_RECV_FORWARD,
  PN_P2P_SEND_FORWARD_RECV_FORWARD,
  PN_P2P_SEND_BACKWARD_RECV_BACKWARD,
  PN_P2P_SEND_FORWARD_BACKWARD_RECV_FORWARD_BACKWARD,
} PnP2pCall;

#define PN_SCHED_MAX_XFERS 4

typedef struct {
  bool send;          /* true: this rank sends; false: receives */
  bool activation;    /* true: forward activation tensor; false: gradient (backward) */
  int32_t microbatch; /* micro-batch index of the tensor */
  int16_t chunk;      /* model chunk on THIS rank that produced (send) or will consume (recv) it */
  int32_t peer;       /* pipeline rank on the other side: (r+1)%pp or (r-1+pp)%pp */
} PnXfer;

typedef struct {
  uint8_t kind;                    /* PnActKind */
  uint8_t phase;                   /* PnSchedPhase: the loop of Megatron's schedule the action belongs to */
  uint8_t call;                    /* COMM: PnP2pCall; PN_P2P_NONE otherwise */
  bool async;                      /* COMM: posted with overlap_p2p_comm=True (no wait inside the call); each
                                      transfer then completes on its own, observed through PN_ACT_WAITs */
  int32_t microbatch;              /* FWD/BWD; -1 otherwise */
  int16_t chunk;                   /* FWD/BWD: model chunk on this rank (virtual stage = chunk*pp + rank); -1 */
  int32_t virtual_id;              /* FWD/BWD: Megatron's virtual_microbatch_id (the microbatch when vpp == 1) */
  uint8_t n_xfers;                 /* COMM: 1..4 transfers (only the 4-way call has more than 2); WAIT: 1 */
  PnXfer xfer[PN_SCHED_MAX_XFERS]; /* COMM: in posting order; WAIT: xfer[0] = the awaited one */
  int32_t wait_action;             /* WAIT: index in this rank's list of the async COMM; -1 */
  uint8_t wait_xfer;               /* WAIT: index of the awaited transfer in that COMM */
  bool last_backward_of_chunk;     /* BWD: the chunk's last micro-batch (grad sync enabled before) */
  bool first_forward_of_chunk;     /* FWD: the chunk's first micro-batch (param all-gather point) */
} PnSchedAction;

typedef struct {
  int64_t pp;                         /* pipeline_model_parallel_size >= 1 */
  int64_t vpp;                        /* virtual_pipeline_model_parallel_size; 1 = not interleaved */
  int64_t num_microbatches;           /* m, per pipeline, per step */
  int64_t group_size;                 /* microbatch_group_size_per_vp_stage; 0 = pp (Megatron's default) */
  bool overlap_p2p_comm;              /* interleaved only: async forward/backward p2p in the steady state */
  bool overlap_p2p_comm_warmup_flush; /* interleaved + overlap: async p2p in warm-up / cool-down */
  bool combined_1f1b;                 /* overlap_moe_expert_parallel_comm: Megatron's combined 1F1B. pp == 1:
                                         F(0), then [F(i+1) + B(i)], then B(m-1) (one warm-up forward);
                                         interleaved: one more warm-up forward (schedules.py
                                         get_pp_rank_microbatches), so every steady F and B are
                                         independent and can be merged layer by layer */
  bool deallocate_pipeline_outputs;   /* overlap path: wait each activation send right after
                                         posting it. ModelParallelConfig default False;
                                         Megatron-LM training sets True */
} PnSchedParams;

/* Megatron's checks on the schedule configuration (schedules.py, model_parallel_config.py,
 * arguments.py). Fails with PN_SCHED_ERROR_INVALID and a message naming the parameters. */
gboolean pn_sched_validate(const PnSchedParams *p, GError **error);

/* Whether overlap_p2p_comm takes effect: only with vpp > 1. Megatron-LM turns it off silently
 * for the 1F1B schedule; a caller that got it set should warn. */
bool pn_sched_overlap_p2p_effective(const PnSchedParams *p);

/* Warm-up forward count of rank pp_rank (get_pp_rank_microbatches; 1F1B: min(pp-r-1, m)).
 * p must validate; pp_rank in [0, pp). */
int64_t pn_sched_num_warmup(const PnSchedParams *p, int64_t pp_rank);

/* Fills `out` (a GArray of PnSchedAction, owned by the caller; its previous contents are
 * dropped) with rank pp_rank's actions in Megatron's call order. Fails with
 * PN_SCHED_ERROR_INVALID if p does not validate or pp_rank is out of range; `out` is then
 * empty. */
gboolean pn_sched_actions(const PnSchedParams *p, int64_t pp_rank, GArray *out, GError **error);

/* Static names for traces and messages ("send_forward_recv_backward", "fwd", "warmup"). */
const char *pn_sched_call_name(PnP2pCall call);
const char *pn_sched_kind_name(PnActKind kind);
const char *pn_sched_phase_name(PnSchedPhase phase);

#endif
