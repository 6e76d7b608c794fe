/* memory.h — device memory per GPU at the peak of one training iteration, per pipeline stage.
 *
 * What it models (bytes, per GPU; P = parameters held by the stage's GPU, TP-sharded, of the
 * stage's layers as Megatron splits them (workload/split.h: evenly, num_layers plus one slot for
 * the embedding and one for the loss with account_for_*_in_pipeline_split over pp * vp virtual
 * stages, or with uneven first / last stages, or by a pipeline_model_parallel_layout):
 *   weights      P * 2 (bf16). fp8 training: TE also caches the fp8 weight and, on Hopper, its
 *                fp8 transpose: + 2 B per weight-matrix parameter (pn_workload_layer_linear_params);
 *                with ddp.fp8_param_gather the fp8 copies are the primary weights and no extra
 *                copy is kept.
 *   gradients    P * (4 if ddp.grad_reduce_in_fp32 else 2): Megatron DDP's contiguous main_grad
 *                buffer (never sharded, even with the distributed optimizer).
 *   optimizer    P * 12 (fp32 master params + Adam m, v) / shard, shard = dp * cp /
 *                num_distributed_optimizer_instances with the distributed optimizer, 1 without;
 *                the precision-aware optimizer's masters and moments as ops.h's
 *                pn_workload_optimizer_bytes says (Transformer Engine's 16-bit master remainders,
 *                bf16 moments: P * 6 / shard).
 *                MoE: the experts' share shards over the expert data-parallel group instead
 *                (tp*cp*dp / (etp*ep), over num_distributed_optimizer_instances too), so with
 *                edp = 1 it is not sharded at all.
 *                When the grad buffer is bf16 the optimizer step copies the grads to fp32
 *                (P * 4 / shard; not when Transformer Engine's FusedAdam holds the masters and
 *                reads the grads in place); the copy lives until the next iteration's zero_grad, which
 *                Megatron's train_step runs before the first forward, so it is never live with
 *                activations: it adds only what it exceeds them by (the peak is the larger of
 *                the step's and the forward-backward's).
 *   activations  (in-flight micro-batches) * (saved bytes of one micro-batch on the stage)
 *                + what is live while one recomputation runs; the per-layer saved bytes are the
 *                sum of PnOp.saved_bytes over the layer's FWD op list (ops.h says what each op
 *                saves: GEMM and norm inputs, q, k, v, o and softmax LSE, activation input,
 *                dropout masks, SP dividing the norm/dropout ones by tp).
 *                In flight, stage r of pp, m micro-batches, vp virtual chunks:
 *                  vp == 1: min(pp - r, m) micro-batches of all layers of the stage;
 *                  vp > 1:  min((pp - r - 1)*2 + (vp - 1)*group + 1, m*vp) chunk-micro-batches
 *                           (Megatron's warm-up count + 1), group =
 *                           microbatch_group_size_per_vp_stage (default pp): the first ones of
 *                           Megatron's schedule table (group by group, each chunk in turn over
 *                           the group's micro-batches), each of its chunk's layers.
 *                Recompute: none: every layer keeps its full saved bytes; selective: the core
 *                attention keeps only q, k, v; full, uniform with k = recompute_num_layers
 *                (0 → 1): ceil(layers_per_chunk / k) layer inputs (Tsp*h*2 each) per chunk, plus
 *                k layers' full activations live during recomputation; full, block with N: N
 *                layers keep their input, the rest keep everything, plus one layer live.
 *                First stage: embedding dropout masks (per in-flight micro-batch of chunk 0);
 *                last stage: final-norm input, output-layer input, the fp32 softmax of the
 *                cross entropy (T * V/tp * 4), for one micro-batch (1F1B runs the last chunk's
 *                backward right after its forward).
 *   Megatron-FSDP (ddp.use_megatron_fsdp; its sharding strategy): no_shard shards nothing, optim
 *                the optimizer as above (shard = dp * cp), optim_grads also the gradients: P * g /
 *                shard plus one layer's unsharded buffer; optim_grads_params also the weights:
 *                P * 2 / shard plus one layer's and the embedding and output layer's (the root's,
 *                gathered for the whole forward and backward); each capped at the stage's P. That
 *                is what is unsharded at the activations' peak, the end of a forward: each layer
 *                was released after its forward, the backward's gathers and reductions have not
 *                begun (the prefetch window and the reduce-scatter queue hold more earlier and
 *                later, beside fewer activations). Measured (tests/data/megatron/megatron-fsdp,
 *                gpt-local on two H100s): FSDP's max allocated 2.1 GiB below DDP's, 1.5 predicted.
 *   other        1.5 GiB (CUDA context, cuBLAS / cuDNN / TE workspaces, allocator slack)
 *                + 0.25 GiB of NCCL buffers per communicator of size > 1 (TP, CP, PP, DP x CP)
 *                + TE userbuffers when the resolved plan runs TP overlap (the caller's
 *                  `tp_userbuffers`: the option as gated, which also means TP > 1 with SP): ten
 *                  [T, h] buffers, the six AG slots at 1 B/elem in fp8 (fp8_buf) else 2, the four
 *                  RS slots at 2.
 * Transient tensors (logits gradients, GEMM outputs in flight) are not counted.
 *
 * When the estimate exceeds the GPU, pn_workload_memory_fits names the single changes that would
 * bring it under, each priced with this same estimate, in the order a Megatron user tries them:
 * the distributed optimizer, Megatron-FSDP (optim_grads_params), selective then full recompute, a larger pipeline size
 * (the virtual size lowered to one that still divides the stage), a larger tensor size, CP 2, micro-batch 1. It keeps
 * only layouts Megatron accepts (workload/rules.h).
 *
 * Cost: builds one layer's op lists a few times: O(ops) per stage, O(pp * ops) for the worst.
 * pn_workload_memory_fits: at most 5 + divisors(num_layers) + max_tp estimates, each O(pp' * ops).
 */
#ifndef PN_WORKLOAD_MEMORY_H
#define PN_WORKLOAD_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include "workload/config.h"

typedef struct {
  double weights_bytes;
  double gradients_bytes;
  double optimizer_bytes;
  double activations_bytes;
  double other_bytes;
  double total_bytes; /* sum of the above */
  int64_t stage;      /* pipeline stage these numbers are for */
} PnWorkloadMemory;

/* The pipeline stage with the largest total (the lowest such stage on ties). `tp_userbuffers`:
 * TE allocates its userbuffers, i.e. the plan overlap/ resolved runs TP overlap
 * (PnPlan.tp_comm_overlap); the raw comm_overlap.tp_comm_overlap is not it, since the gating turns
 * the option off without TP > 1, SP or Transformer Engine. */
void pn_workload_memory(const PnScenario *sc, bool tp_userbuffers, PnWorkloadMemory *out);
/* One stage, 0 <= stage < pipeline_model_parallel_size. */
void pn_workload_memory_stage(const PnScenario *sc, int64_t stage, bool tp_userbuffers, PnWorkloadMemory *out);

/* One change that makes the estimate fit, as a Megatron user writes it. */
typedef struct {
  char change[256];   /* e.g. "pipeline_model_parallel_size=8 with virtual_pipeline_model_parallel_size=2" */
  double total_bytes; /* pn_workload_memory's total with the change */
} PnMemoryFit;

#define PN_MEMORY_FITS_MAX 3

/* Writes to `out` up to `max_out` single changes to `sc` whose estimate (pn_workload_memory with
 * the same `tp_userbuffers`) is at most `capacity_bytes`, in the order of memory.h's header, and
 * returns how many. A pipeline or tensor size is the smallest larger one Megatron accepts that
 * fits; tensor sizes go up to `max_tp` (the GPUs of a node: TP across nodes is no fix). Reads
 * `sc` only; returns 0 when nothing fits. */
int pn_workload_memory_fits(const PnScenario *sc, bool tp_userbuffers, double capacity_bytes, int64_t max_tp,
                            PnMemoryFit *out, int max_out);

/* Saved activation bytes of one layer and one micro-batch under `granularity` (sum of the FWD
 * ops' saved_bytes). */
double pn_workload_layer_activation_bytes(const PnScenario *sc, PnRecomputeGranularity granularity);
/* Micro-batches (vp == 1) or chunk-micro-batches (vp > 1) whose activations stage `stage` holds
 * at its peak. */
int64_t pn_workload_inflight_microbatches(const PnScenario *sc, int64_t stage);

#endif
