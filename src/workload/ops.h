/* ops.h — one transformer layer (and the embedding, the output head, the optimizer step) as the
 * sequence of kernels and collectives one GPU runs, with their FLOPs and bytes.
 *
 * What it models: a Megatron-Core GPT model built from the Transformer Engine layer spec
 * (TELayerNormColumnParallelLinear for qkv and fc1, TERowParallelLinear for proj and fc2,
 * TEDotProductAttention for core attention, fused rope, fused bias-dropout-add), sharded by TP
 * (with or without sequence parallelism) and CP, for one micro-batch, in the order the kernels
 * are issued on one GPU. Every TP/CP/DP rank of a stage does the same work, so one list serves
 * them all. The lists carry no timing; they mark what the overlaps act on (`ub_slot`,
 * `te_wgrad`, `node`), and the one overlap they decide themselves is moe_shared_expert_overlap's
 * (`side`, below). overlap/ gates the user's overlap options into a plan (sched/plan.h);
 * sched/ builds the task graph from these lists and that plan: it places the ops on streams and,
 * with TP overlap, runs the GEMM and the TP comm op that share a `ub_slot` as that slot's
 * userbuffers method.
 *
 * Shapes, per GPU (Megatron names): h = hidden_size, a = num_attention_heads, g =
 * num_query_groups, d = kv_channels, q = a*d, kv = g*d, f = ffn_hidden_size, fc1 width
 * f1 = f*(2 if gated_linear_unit else 1), tp, cp, b = micro_batch_size, s = seq_length.
 *   T   = s/cp * b                     tokens this GPU's GEMMs see
 *   Tsp = T/tp with sequence parallel, T otherwise: tokens of norms, dropout, residual adds
 *   qkv  fprop: m=T, n=(q+2kv)/tp, k=h     proj fprop: m=T, n=h, k=q/tp
 *   fc1  fprop: m=T, n=f1/tp,      k=h     fc2  fprop: m=T, n=h, k=f/tp
 *   dgrad of a GEMM (m,n,k): (m, k, n); wgrad: (n, k, m). So backward GEMM FLOPs = 2x forward.
 * Sequence parallel is off when tp == 1 (Megatron turns it off).
 *
 * TP communication, as Megatron-Core + TE issue it without userbuffers overlap:
 *   forward, SP:   AG(ln out) before qkv and fc1 [qkv_fprop, fc1_fprop];
 *                  RS(out) after proj and fc2 [proj_fprop, fc2_fprop]
 *   forward, !SP:  AR(out) after proj and fc2 (ub_slot NULL: UB overlap requires SP)
 *   backward, SP:  row-parallel proj/fc2: AG(dY) [proj_dgrad, fc2_dgrad], dgrad, wgrad
 *                  [proj_wgrad, fc2_wgrad: no comm];
 *                  column-parallel qkv/fc1: AG(saved ln out, for wgrad) [qkv_dgrad, fc1_dgrad],
 *                  dgrad, RS(dX) [qkv_wgrad, fc1_wgrad], wgrad. TE launches the AG before the
 *                  dgrad GEMM and the RS before the wgrad GEMM (async on NCCL's stream); the list
 *                  gives that issue order.
 *   backward, !SP: column-parallel: dgrad, AR(dX), wgrad; row-parallel: no comm.
 * Collective bytes follow nccl-tests: S = AG output / RS input / AR buffer = T*h*2 bytes (bf16).
 * With fp8 training TE gathers quantized tensors, so the AGs of GEMM inputs (ln out, dY) move
 * 1 byte per element; RS and AR stay bf16.
 *
 * Context parallelism (group PN_GROUP_CP, op just before the attention, not overlapped here):
 *   p2p (and a2a+p2p, modelled as p2p): SEND_RECV, bytes = total sent per GPU over the ring:
 *     fwd (cp-1)*2*(s/cp)*b*(g/tp)*d*2 (K and V, bf16); bwd twice that (KV and dKV).
 *   all_gather: AG of K,V with S = s*b*(g/tp)*d*2*2; bwd: AG again, then RS of dK,dV (same S).
 *   a2a (Ulysses): A2A of q,k,v before and of o after the attention (per-rank buffer bytes),
 *     the reverse in backward; the attention then runs on all s tokens and a/(tp*cp) heads.
 *   Attention op fields: p2p/all_gather: seq_q = s/cp, seq_kv = s (load-balanced causal: FLOPs
 *   = full causal / cp); a2a: seq_q = seq_kv = s, heads/(tp*cp).
 *
 * FLOPs (`flops`, what the GPU executes): GEMM 2mnk; attention forward
 * 4*b*seq_q*seq_kv*heads*d, halved when causal; attention backward 2.5x its forward (flash
 * attention recomputes QK^T: 5 matmuls against 2). Memory ops and comms: 0.
 *
 * Memory ops (`bytes` = read + written, bf16 = 2 B/elem, fp32 = 4):
 *   norm fwd: read x, write y (1 B/elem in fp8: TE's norm writes the fp8 GEMM input) = Tsp*h*(2+e)
 *   norm bwd: read dy, x; write dx = Tsp*h*6; then the residual-branch gradient add, Tsp*h*6
 *   rope fwd/bwd (position_embedding_type "rope", TE's fused kernel): read+write q and k = T*(q+kv)/tp*4
 *   activation fwd: swiglu T*f/tp*6 (read 2f, write f); gelu/relu^2 T*f/tp*4
 *   activation bwd: swiglu T*f/tp*10; others T*f/tp*6
 *   dropout+residual add fwd: Tsp*h*6 (+1 mask byte when hidden_dropout > 0); its backward is
 *     an op only with dropout (Tsp*h*5); attention dropout is ignored (flash attention). Without
 *     bias_dropout_fusion, three eager kernels: bias add Tsp*h*4 (biased models), dropout Tsp*h*5
 *     (with hidden_dropout), residual add Tsp*h*6.
 *   fp8 casts (training.precision == fp8; TE delayed/current scaling on Hopper, which needs a
 *     transposed copy of every wgrad/dgrad operand): forward cast_transpose of the row-parallel
 *     GEMM inputs (attention out, activation out): read bf16, write fp8 + fp8^T = 4 B/elem;
 *     backward cast_transpose of each GEMM's dY (4 B/elem; with SP the row-parallel dY is cast
 *     on the local shard, 3 B/elem, gathered in fp8, and the gathered copy transposed, 2 B/elem);
 *     transpose of the re-gathered ln output for the wgrad (2 B/elem). Weight casts happen on a
 *     chunk's first micro-batch only (TE caches them) and delayed scaling's amax reduction once
 *     per chunk: pn_workload_fp8_weight_ops / pn_workload_fp8_amax_ops, outside these lists.
 *   fp8 with tensorwise (current) scaling (training.fp8_recipe): every cast above is preceded by
 *     an amax pass (`fp8_amax`, a read of the bf16 tensor, 2 B/elem) and a scale kernel
 *     (`fp8_scale`, 12 B); the norms write bf16 with a fused amax (Tsp*h*(2+2)), then scale and a
 *     rowwise cast (`qkv_in_cast`, `fc1_in_cast`: 3 B/elem). With sequence parallelism the amax of
 *     the column-parallel inputs (forward) and of the row-parallel dY (backward) is all-reduced over
 *     TP: a 4-byte fp32 all-reduce (`fp8_amax_tp_ar`), 2 forward and 2 backward per dense layer.
 *
 * Saved activations (`saved_bytes`, FWD ops only; for memory.h): what each op keeps for its
 * backward. norms: input x (Tsp*h*2) + statistics (fp32 per token: 2 for LayerNorm, 1 for
 * RMSNorm); qkv/fc1: their input as TE saves it (the local ln-out shard, e = 1 B fp8 / 2 B bf16);
 * core attention: q, k, v, o (bf16) and the softmax LSE (fp32 per query and head); proj/fc2:
 * their input (fp8: the fp8 transpose copy, 1 B/elem; bf16 proj input = attention's o, counted
 * once, except with CP a2a where the a2a makes a new tensor); activation: its input; dropout:
 * the mask (1 B/elem). Full recompute: a recomputed layer keeps only its input (Tsp*h*2, on the
 * ln1 op); the RECOMPUTE ops carry the full amounts (one layer is live while its backward runs).
 * Selective (core attention) recompute: the attention keeps q, k, v only (its checkpoint
 * inputs); o is then held by proj.
 *
 * Recompute in the BWD list: full granularity: the layer's whole forward (phase
 * PN_PHASE_RECOMPUTE, TP and CP comms included) comes first; selective: the core-attention
 * forward (and its CP exchange) is recomputed where Megatron's checkpoint runs it, right before
 * the attention backward. Megatron's uniform method with recompute_num_layers = k > 1 recomputes
 * k layers together before their backwards: sched/ may reorder the RECOMPUTE ops of k
 * consecutive layers; pn_workload_layer_is_recomputed() says which layers the block method
 * recomputes.
 *
 * Megatron-Core's local layers (training.transformer_impl "local": the layer spec pretrain_gpt.py
 * builds without Transformer Engine, gpt_layer_specs.py get_gpt_layer_local_spec). Their TP
 * communication is the same as above: tensor_parallel/layers.py
 * LinearWithGradAccumulationAndAsyncCommunication gathers the SP input synchronously before the
 * forward GEMM, and in the backward launches the input's all-gather before the dgrad GEMM and the
 * dgrad's reduce-scatter (all-reduce without SP) before the wgrad GEMM, both async_op=True beside
 * them; RowParallelLinear's reduce-scatter / all-reduce (mappings.py) is synchronous after its GEMM,
 * and its backward all-gather before the dgrad. So the op list is the TE one with these changes:
 * no fp8 (io/ refuses it), no userbuffers (overlap/ gates them off), no TE module Python
 * (sched/emit.c), and the core attention below. Not modelled: the bias gradients' reductions of
 * biased linears (TE fuses them into the GEMM epilogue), Apex's vs torch's norm kernels (one class).
 *
 * Unfused attention (training.transformer_impl "local", or attention_backend "unfused" / "local":
 * Megatron-Core's DotProductAttention; TE's UnfusedDotProductAttention runs the same kernels with
 * TE's fused softmax). np = heads/tp, B = b*np matrices, s = seq_length (no CP), sc = B*s*s scores,
 * q = T*q_tp elements:
 *   forward: [GQA: repeat_interleave of k and v, 2 kernels, 4 B per output element each]; QK^T
 *     as torch.baddbmm (batch B, m = s, n = s, k = d); the scale-mask-softmax: one fused kernel
 *     (4 B / score; TE's, or Apex's with masked_softmax_fusion for 16 < s <= 4096) or the causal
 *     masked_fill_ in place (4 B / score + the s*s mask) and torch's softmax (4 B / score);
 *     [attention_dropout > 0: dropout, 5 B / score with its 1-byte mask]; PV as torch.bmm (B, s,
 *     d, s); the context's permute().contiguous() (4 B / element of q).
 *   backward (autograd): dP and dV (bmm, (B, s, s, d) and (B, s, d, s)), [dropout's backward,
 *     5 B / score], softmax's backward (6 B / score, 2 kernels) [unfused: because masked_fill_ ran
 *     in place on a view of the GEMM's output, autograd's AsStrided / CopySlices passes, a zero
 *     fill and five copies, 22 B / score in 6 kernels, and masked_fill's backward, in place on the
 *     copy at the forward kernel's speed, 4 B / score + mask; as torch.profiler lists them], dQ and dK (bmm, (B, s, d,
 * s) each), baddbmm's scaling of both (2 kernels, 4 B per element), [GQA: the sums of the repeated k, v gradients, 2
 * kernels]. FLOPs: all s*s scores are computed (no causal skipping): forward 4*B*s*s*d, backward twice. Saved: q, the
 * expanded k and v, the probabilities (2 B / score), with dropout its mask and the dropped probabilities (3 B / score),
 * the context (the projection's input), all on the first op; selective recompute keeps only q, k, v and recomputes the
 * rest before the backward. Priced: the batched GEMMs from the profile's bmm_bf16 table, the torch kernels at their
 * measured bandwidth relative to a copy (hw/profile.h PnTorchKernel); the fused softmax (no Apex or TE on the
 * measurement machine) and the small scale / sum kernels by the copy class. RoPE without apply_rope_fusion
 * (Megatron-Core's _apply_rotary_pos_emb_bshd per q and k): 24 B per element in 6 kernels (t * cos, the negated half,
 * rotate_half's cat, * sin, the sum, the cat with the pass-through part) plus 6 small kernels on the [s, d]
 * frequencies, forward; its backward 24 B per element in 6 kernels per tensor; priced as the measured unfused RoPE
 * kernels.
 *
 * Mixture of experts (num_moe_experts = E > 0: every layer; Megatron-Core MoELayer with
 * TEGroupedMLP, router top-k, token dispatcher), per GPU, balanced routing (the published runs
 * force-balance their routers): ep = expert_model_parallel_size, etp =
 * expert_tensor_parallel_size, L = E/ep local experts, F = moe_ffn_hidden_size.
 *   Tm  = Tsp tokens enter the MoE layer (the sequence-parallel shard);
 *   R   = Tm*topk*etp rows reach this GPU's experts, R/L per expert.
 *   pre_dispatch: ln2 (a separate TENorm: bf16 output), [shared experts: a dense TP MLP of
 *     moe_shared_expert_intermediate_size], router GEMM (Tm, E, h) + softmax/top-k
 *     (Tm*E*12 B), permute (read Tm*h, write Tm*topk*h, bf16; fused into the dispatch kernel
 *     with the flex dispatcher).
 *   dispatch: alltoall/flex: A2A over ep, S = Tm*topk*h*2 per rank; then with etp > 1 an AG over
 *     etp of R*h*2. allgather: AG over etp*ep of S = Tm*h*2*etp*ep.
 *   mlp: sort_chunks_by_idxs (alltoall, L > 1: R*h*4 B) | local permute (allgather: R*h*4),
 *     [fp8 cast], grouped fc1 (R/L, F*(2 if gated)/etp, h) x L, activation (R rows),
 *     [fp8 cast], grouped fc2 (R/L, h, F/etp) x L, unsort (alltoall) | local unpermute.
 *   combine: [RS over etp], A2A back | RS over etp*ep (allgather), unpermute (read Tm*topk*h,
 *     write Tm*h; fused with flex), residual add.
 *   backward: the mirror image; a2a bytes equal, unpermute_bwd also reads the expert output
 *     for the probability gradient.
 *   moe_shared_expert_overlap (alltoall dispatcher): the shared experts run on their own stream
 *     (`side`), launched after the permutation, beside the dispatch all-to-all and the experts,
 *     and the unpermutation waits for them (moe/shared_experts.py: pre_forward_comm and fc1 beside
 *     the dispatch, fc2 and post_forward_comm before / after the combine); their backward runs
 *     beside the backward all-to-alls, and the permutation's backward waits for it.
 *   The host waits for the routing's token counts (`host_reads` on router_topk, forward and
 *   recompute): every dispatcher copies them to the host to size its buffers (alltoall:
 *   d2h_event.synchronize() before the token all-to-all; allgather: .cpu(); flex: DeepEP's host
 *   spins on the received counts), but for the alltoall dispatcher's drop and pad.
 *   Token dropping (model.moe_expert_capacity_factor): with balanced routing an expert keeps
 *   min(Tm * topk / E, capacity) of a GPU's copies, capacity = ceil(Tm * topk / E * factor), or
 *   exactly the capacity with moe_pad_expert_input_to_capacity; the routed rows (Dims.routed)
 *   size the all-to-alls, the permutations and the experts' GEMMs.
 * A2A bytes are bf16 (no fp8 dispatch). Not modelled: router load imbalance, aux-loss kernels,
 * latent MoE.
 *
 * Not modelled: bias-add kernels (fused in GEMM epilogues), fp8 attention.
 *
 * Ownership: functions append to a caller-owned GArray of PnOp; names are static strings.
 * Cost: O(ops) per call (~30 ops per layer), no allocation besides the GArray growth.
 */
#ifndef PN_WORKLOAD_OPS_H
#define PN_WORKLOAD_OPS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "hw/coll.h"
#include "hw/cost.h"
#include "hw/graph.h"
#include "workload/config.h"

typedef enum { PN_OP_GEMM, PN_OP_ATTN, PN_OP_MEM, PN_OP_COMM } PnOpKind;
typedef enum { PN_GEMM_FPROP, PN_GEMM_DGRAD, PN_GEMM_WGRAD, PN_GEMM_NONE } PnGemmRole;
/* Groups: EP = the expert-parallel group (etp x ep ranks for the allgather dispatcher, ep for
 * the others); ETP = expert tensor parallel (etp consecutive ranks). */
/* AMAX = Megatron's amax reduction group for delayed scaling, tp x dp x cp ranks
 * (parallel_state.get_amax_reduction_group(with_context_parallel=True)). */
typedef enum { PN_GROUP_TP, PN_GROUP_CP, PN_GROUP_DP, PN_GROUP_EP, PN_GROUP_PP, PN_GROUP_ETP, PN_GROUP_AMAX } PnGroup;

/* Which node of Megatron-Core's fine-grained layer schedule (model_chunk_schedule_plan.py
 * TransformerLayerSchedulePlan) an op belongs to: pre_dispatch_computation (attention, pre-MLP
 * norm, router, permutation), moe_dispatch (its all-to-all), mlp (experts, or the dense MLP),
 * moe_combine (all-to-all, unpermutation, residual add). Dense layers use ATTN and MLP only. */
typedef enum { PN_NODE_ATTN, PN_NODE_DISPATCH, PN_NODE_MLP, PN_NODE_COMBINE, PN_NODE_N } PnLayerNode;

typedef struct {
  PnOpKind kind;
  const char *name;     /* static: "ln1", "qkv", "qkv_ag", ... */
  const char *ub_slot;  /* static TE userbuffers slot ("qkv_fprop", ...) of TP GEMMs and their
                           adjacent SP collectives; NULL otherwise */
  uint8_t phase;        /* PnPhase: FWD, BWD, RECOMPUTE, OPTIM */
  uint8_t role;         /* PnGemmRole; PN_GEMM_NONE for non-GEMMs */
  PnDtype dtype;        /* GEMM input dtype (fp8 when training.precision == fp8); COMM: element
                           dtype moved; bf16 otherwise */
  int64_t m, n, k;      /* GEMM, per GPU: C[m,n] = A[m,k] B[k,n] */
  int64_t groups;       /* GEMM: TE grouped GEMM of `groups` GEMMs of this shape (local experts); 1 otherwise */
  uint8_t node;         /* PnLayerNode of layer ops; PN_NODE_ATTN elsewhere */
  bool te_wgrad;        /* GEMM: a wgrad TE can defer to backward_dw() (delay_wgrad_compute) */
  PnDtype accum_into;   /* GEMM wgrad with gradient-accumulation fusion: adds into main_grad of this
                           dtype (PN_DT_FP32 or PN_DT_BF16); PN_DT_NONE: writes its output */
  bool side;            /* runs on the shared-expert stream (moe_shared_expert_overlap) */
  bool join_side;       /* the first op that needs the side ops before it */
  bool host_reads;      /* the host reads its result (a device-to-host copy it waits for) before it goes on */
  bool rng;             /* MEM: draws dropout's random numbers and writes or reads its mask (hidden_dropout > 0) */
  uint8_t torch_kernel; /* MEM: 1 + the PnTorchKernel it is priced as (the unfused paths' PyTorch kernels,
                           at sequence length seq_q); 0: by its memory class */
  uint8_t kernels;      /* MEM: kernels the op stands for (launches, floors); 0 = 1 */
  int64_t batch, seq_q, seq_kv, heads, kv_heads, head_dim; /* ATTN, per GPU; GEMM: `batch` > 0 is a
                                                             strided-batched GEMM of that many
                                                             matrices (torch.bmm), one kernel */
  int64_t head_dim_v; /* ATTN: the value head when it differs from head_dim (MLA); 0: head_dim */
  bool causal;
  bool backward;      /* ATTN: backward kernel */
  double bytes;       /* MEM: bytes read + written; COMM: S in nccl-tests convention
                         (SEND_RECV: bytes each GPU sends) */
  PnCollKind coll;    /* COMM */
  PnGroup group;      /* COMM */
  double flops;       /* executed on this GPU */
  double saved_bytes; /* FWD/RECOMPUTE ops: activation bytes kept for the backward */
} PnOp;

/* Ops of one layer for one micro-batch, in issue order. phase: PN_PHASE_FWD or PN_PHASE_BWD (the
 * BWD list includes the recomputation the scenario's recompute_granularity asks for). */
void pn_workload_layer_ops(const PnScenario *sc, PnPhase phase, GArray *out /* of PnOp */);
/* Same, with the recompute granularity given explicitly (for layers the block method does not
 * recompute, and for memory accounting). */
void pn_workload_layer_ops_with(const PnScenario *sc, PnPhase phase, PnRecomputeGranularity granularity, GArray *out);
/* Whether layer `layer_in_chunk` (0-based within its virtual pipeline chunk, or within the stage
 * when not interleaved) is recomputed: selective and full-uniform: every layer; full-block: the
 * first recompute_num_layers (0 = all). */
bool pn_workload_layer_is_recomputed(const PnScenario *sc, int64_t layer_in_chunk);

/* First pipeline stage: word (+ learned position) embedding lookup, the TP reduction of its
 * output (RS with SP, AR without), dropout; backward: the TP gather of the gradient (SP) and the
 * embedding weight-gradient accumulation. */
void pn_workload_embedding_ops(const PnScenario *sc, PnPhase phase, GArray *out);
/* Last pipeline stage: final norm, AG (SP), logits GEMM (m=T, n=padded_vocab/tp, k=h, bf16: the
 * output layer is outside TE's fp8 autocast), vocab-parallel cross entropy (+ one AR of T*4*3
 * bytes standing for its three small all-reduces); backward: cross-entropy backward, AG of the
 * saved input (SP), dgrad, RS/AR of dX, wgrad, final norm backward. */
void pn_workload_head_ops(const PnScenario *sc, PnPhase phase, GArray *out);
/* What the distributed optimizer holds and moves per parameter of its shard
 * (megatron/core/optimizer/distrib_optimizer.py, optimizer_config.py, __init__.py):
 *   Megatron's own master parameters (the default): fp32 masters (4 B) and fp32 moments (4 + 4);
 *   the step casts each bf16 main-grad shard to fp32 (`shard_model_grad.float()`: a 4 B copy,
 *   none when the grads are fp32 already), Adam updates the masters, and
 *   _copy_main_params_to_model_params writes them back into the bf16 (or fp8, with
 *   fp8_param_gather) parameters;
 *   the precision-aware optimizer (training.use_precision_aware_optimizer) with Transformer
 *   Engine's FusedAdam holding the masters (use_precision_aware_optimizer_no_fp8_or_ds_fp8: bf16
 *   training, delayed fp8 scaling, or fp16 masters): the fp32 master as the 16 bits a bf16
 *   parameter lacks (store_param_remainders, on by default: 2 B) or an fp16 master (2 B); the
 *   gradients read in place (decoupled_grad: no copy), the parameters written by the Adam kernel;
 *   with current fp8 scaling and fp32 masters Megatron keeps its own masters (as the default)
 *   and only the moments take their dtypes. Megatron-FSDP keeps its own main weights (the
 *   default's masters). Moments: exp_avg_dtype and exp_avg_sq_dtype (fp32 4, fp16 / bf16 2, fp8
 *   1 B) under the precision-aware optimizer, else fp32. */
typedef struct {
  bool te_masters;     /* Transformer Engine's FusedAdam holds the master parameters */
  double master_bytes; /* per parameter of the shard */
  double moment_bytes; /* exp_avg + exp_avg_sq */
  double grad_copy;    /* the fp32 copy of the main grads the step makes (0: none) */
} PnOptimizerBytes;
void pn_workload_optimizer_bytes(const PnScenario *sc, PnOptimizerBytes *out);

/* Optimizer step over `params_on_gpu` parameters (already sharded by the caller when the
 * distributed optimizer is on), as pn_workload_optimizer_bytes says it runs, with g the main
 * grads' bytes (4 with grad_reduce_in_fp32, else 2), a + q the moments' and M the masters':
 *   Megatron's masters: the grads' cast to fp32 (g + 4 B/param, bf16 grads only), the grad-norm
 *   read (4), the fused Adam step (grad, master and moments read, master and moments written:
 *   4 + 2 (4 + a + q), 28 B/param in fp32), the masters copied into the parameters (4 + 2; 4 + 1
 *   into fp8 parameters with fp8_param_gather);
 *   Transformer Engine's masters: the grad-norm read (g), the Adam step reading the grads (g) and
 *   reading and writing the bf16 parameters, the masters' remainders and the moments (2 (2 + M + a
 *   + q)), or with fp16 masters reading the master and writing it and the parameter.
 * Without a fused Adam (training.fused_adam false) the step is torch.optim.AdamW's multi-tensor
 * path, one fp32 pass per foreach op (torch/optim/adam.py, _multi_tensor_adam with decoupled weight
 * decay): param *= 1 - lr*wd (8 B), m.lerp_(g) (12), v *= beta2 (8), v.addcmul_(g, g) (12), sqrt(v)
 * into a new tensor (8), its div_ (8) and add_ of eps (8), param.addcdiv_(m, denom) (16): 80
 * B/param, around the same cast and copy as Megatron's masters. Then Megatron's zero_grad_buffer
 * for the next step: the whole gradient buffer of the GPU's `params_unsharded` parameters zeroed (a
 * memset of g B/param; distributed/param_and_grad_buffer.py). Phase PN_PHASE_OPTIM. */
void pn_workload_optimizer_ops(const PnScenario *sc, double params_on_gpu, double params_unsharded, GArray *out);

/* Delayed scaling's amax reduction, where Megatron's one fp8_autocast around a model chunk's
 * transformer block exits (forward, phase FWD) and where the block's first fp8 module ends its
 * backward (phase BWD): once per micro-batch per chunk (TE quantization.py
 * reduce_and_update_fp8_tensors). TE's global buffer holds the amaxes of every fp8 module on the
 * rank, all chunks: n = 3 (FWD) or 2 (BWD) fp32 per fp8 GEMM x GEMMs per layer (4 dense; 2 + 2
 * shared + 2 per local expert in MoE layers) x `layers_on_rank`. Ops: the torch.cat of the
 * buffer (8n B), the all-reduce (MAX) of 4n B over PN_GROUP_AMAX (none when that group is one
 * rank), and tex.fused_amax_and_scale_update_after_reduction (20n B: amax history and scale read,
 * history, scale and scale_inv written, history length 1 as Megatron's default). Empty unless
 * fp8 with the delayed recipe. `dense_layers`: a MoE model's dense layers (moe_layer_freq) on the
 * rank beside the `layers_on_rank` MoE layers, each with a dense layer's GEMMs. */
void pn_workload_fp8_amax_ops(const PnScenario *sc, PnPhase phase, int64_t layers_on_rank, int64_t dense_layers,
                              GArray *out);
/* One layer's weight quantization, which TE runs on a chunk's first micro-batch only and caches
 * (is_first_microbatch; layernorm_linear.py quantize_weight): per weight matrix (experts one by
 * one) a cast_transpose, 4 B/elem, preceded with current scaling by its amax and scale kernels;
 * with ddp.fp8_param_gather the weights are already fp8 and Hopper needs only their transpose
 * after the all-gather (tensor/utils.py post_all_gather_processing), 2 B/elem. Phase FWD; empty
 * without fp8. */
void pn_workload_fp8_weight_ops(const PnScenario *sc, GArray *out);

/* Parameters per GPU. Layer: qkv, proj, fc1, fc2 weights split by TP, their biases (column
 * biases split, row biases replicated), both norms replicated. MoE layers: attention, norms,
 * router (E*h, replicated), shared experts (split by TP) and the L local experts (split by
 * etp). */
double pn_workload_layer_params(const PnScenario *sc);
/* Of which expert parameters (their gradients reduce over the expert data-parallel group
 * tp*cp*dp / (etp*ep), not over dp*cp). 0 for dense models. */
double pn_workload_layer_expert_params(const PnScenario *sc);
/* Expert data-parallel size: tp*cp*dp / (etp*ep); 1 for dense models. */
int64_t pn_workload_expert_dp(const PnScenario *sc);
/* Experts held by one GPU: num_moe_experts / expert_model_parallel_size (0 for a dense model). */
int64_t pn_workload_local_experts(const PnScenario *sc);
bool pn_workload_is_moe(const PnScenario *sc);
/* Whether layer `layer` (global, from 0) is a MoE layer: MoE models by moe_layer_freq
 * (config.h); always false for a dense model. */
bool pn_workload_layer_is_moe(const PnScenario *sc, int64_t layer);
/* The same, of a model alone. */
bool pn_workload_model_layer_is_moe(const PnModelConfig *m, int64_t layer);
/* A MoE model with dense layers (moe_layer_freq other than 1). */
bool pn_workload_has_dense_layers(const PnScenario *sc);
/* The scenario of a MoE model's dense layers: the same with num_moe_experts 0 (their MLP is
 * ffn_hidden_size wide, tensor parallel, as Megatron-Core builds it); the layer lists, parameters
 * and memory of a dense layer are those of this scenario's layers. */
void pn_workload_dense_layer_scenario(const PnScenario *sc, PnScenario *out);
/* Whether the core attention is Megatron-Core's DotProductAttention or TE's unfused one (batched
 * GEMMs over the [B, s, s] scores): transformer_impl local, or attention_backend unfused / local. */
bool pn_workload_unfused_attention(const PnScenario *sc);
/* Of which weight matrices (the fp8-cast ones). */
double pn_workload_layer_linear_params(const PnScenario *sc);
/* Word embedding (padded_vocab/tp rows) + learned position embedding (replicated). */
double pn_workload_embedding_params(const PnScenario *sc);
/* Last stage: final norm + output layer (padded_vocab/tp * h) when untied, or when tied with
 * pp > 1 (the last stage keeps its own copy of the shared weight); with mtp_num_layers, the MTP
 * layers' (enorm, hnorm, eh_proj, a transformer layer, final norm) and, with pp > 1, the last
 * stage's copy of the word embedding. */
double pn_workload_head_params(const PnScenario *sc);
/* Of which expert parameters (an MTP layer's routed experts). */
double pn_workload_head_expert_params(const PnScenario *sc);
/* One parameter tensor on this GPU, as Megatron-Core registers it (module.named_parameters()
 * order; the data-parallel gradient buckets are filled in the reverse of that order,
 * param_and_grad_buffer.py / distrib_optimizer.py _compute_per_buffer_param_layout). */
typedef struct {
  const char *name;      /* static: "self_attention.linear_qkv.weight", ... (experts share one name) */
  const char *fwd_op;    /* the op of the unit's forward list its module starts with (the forward
                            pre-hook runs before it) */
  const char *bwd_op;    /* the op of the unit's backward list its module's backward ends with (its
                            gradient is complete after it) */
  int64_t elems;         /* elements on this GPU */
  bool expert;           /* a local expert's (TEGroupedLinear weight{i} / bias{i}) */
  bool te_weight;        /* a Transformer Engine linear weight: fp8 storage with ddp.fp8_param_gather */
  bool shared_embedding; /* the tied word embedding / output weight with pp > 1
                            (language_module.py setup_embeddings_and_output_layer) */
} PnParam;

/* The parameters of one layer, the embedding and the head in registration order (appended to
 * `out`, of PnParam); their elements add up to pn_workload_layer_params, _embedding_params and
 * _head_params. Layer (TE spec): self_attention.linear_proj (weight, bias), linear_qkv
 * (layer_norm_weight, layer_norm_bias, weight, bias): Attention.__init__ builds linear_proj before
 * SelfAttention builds linear_qkv, and TE's LayerNormLinear registers its norm first; then, dense,
 * mlp.linear_fc1 (norm, weight, bias) and linear_fc2 (weight, bias); MoE, pre_mlp_layernorm, the
 * router, the experts' fc1 then fc2 (weight{i}, bias{i} per local expert, TE GroupedLinear) and
 * the shared experts' fc1 and fc2; with qk_layernorm, the q and k norms after linear_qkv; with
 * MLA, input_layernorm first, linear_proj, then MLA's projections (their latent norms first).
 * Biases and norm biases only where the model has them.
 * Embedding: word_embeddings, then position_embeddings (learned_absolute). Head: the decoder's
 * final_layernorm, then output_layer (untied, or tied with pp > 1). fwd_op / bwd_op name ops of
 * pn_workload_layer_ops (embedding_ops, head_ops): a module's norm, or its fprop GEMM, and its
 * wgrad, or the norm backward TE's LayerNormLinear ends with. Not listed, as in the totals:
 * the router's bias, the shared experts' biases. Cost: O(params), ~12 + 2 x local
 * experts for a layer. */
void pn_workload_layer_param_list(const PnScenario *sc, GArray *out);
void pn_workload_embedding_param_list(const PnScenario *sc, GArray *out);
void pn_workload_head_param_list(const PnScenario *sc, GArray *out);
/* Megatron's padded vocabulary: vocab_size rounded up to make_vocab_size_divisible_by * tp
 * (divisible_by <= 0 means Megatron's default 128). */
int64_t pn_workload_padded_vocab(const PnScenario *sc);

#endif
