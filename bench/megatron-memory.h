/* megatron-memory.h — Megatron-LM's theoretical memory formula, and the layouts on which
 * memory-vs-megatron (the table of the README) and tests/unit/test_memory.c hold penumbra's
 * estimate (src/workload/memory.h) against it and against measured peaks.
 *
 * The formula is NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py at commit
 * d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22), written here from its equations (bytes
 * per GPU):
 *   weights + gradients + optimizer (compute_weight_and_optimizer_memory): the parameters of the
 *     most loaded shard, num_layers / pp layers (fractional), one embedding, the output layer too
 *     when untied and pp == 1; attention, MLP, shared experts and embeddings split by tp, norms,
 *     the final norm (its 1/pp share) and the router replicated, routed experts split by etp * ep;
 *     times 18 B (bf16 weight, fp32 grad, fp32 master weight, Adam m and v: the formula assumes
 *     bf16 training with fp32 main grads) or, with the distributed optimizer, 6 + 12/d B, d =
 *     data_parallel_size (world / (tp*pp*cp): CP excluded) and, for the routed experts,
 *     world // (etp*ep*pp). Linear biases (but the router's) and learned position embeddings
 *     are not counted.
 *   activations (compute_activation_memory, what Megatron reports for sequence parallel with
 *     selective recompute; other layouts get another formula): Korthikanti et al. 2022 Table 2,
 *     s*b*h*(18 + 4*ffn/h) per layer for all num_layers (the first stage: pp micro-batches of
 *     num_layers/pp layers), + 8*s*b*pp (token ids) + s*b*h*pp (embedding dropout mask); times
 *     1 + (pp-1)/(pp*vp) when interleaved, else min(1, m/pp) when pp > 1; + 4*s*b*h*(1 + V/h)
 *     (output-layer input and fp32 logits) when pp == 1; all over tp. s is the whole sequence
 *     (CP is not in the formula).
 *
 * "Same layout" applies the formula's own per-parameter and per-layer accounting to what Megatron
 * allocates for the layout, so that what is left between it and penumbra is penumbra's modelling:
 *   state: each stage with its layers from Megatron's split (account_for_*_in_pipeline_split),
 *     the word embedding on the first stage and the output layer (a copy of the tied embedding
 *     when pp > 1) and the final norm on the last, the learned position embedding (replicated, on
 *     the first), and the distributed optimizer sharding over dp*cp / instances and expert-DP /
 *     instances (megatron/core/optimizer/__init__.py: intra_dp_cp_group, intra_expt_dp_group);
 *     the most loaded stage;
 *   activations (dense layers, no accounted embedding or loss): s/cp tokens, and in place of
 *     18 + 4*ffn/h the same derivation for the actual layer (in units of s*b*h bytes): norm
 *     inputs 4, qkv input 2, q 2*q/h, k and v 2*kv/h each, proj input 2*q/h, fc1 input 2,
 *     activation input 2*f1/h (f1 = 2*ffn when gated), fc2 input 2*ffn/h, and the two dropout
 *     masks 2 when hidden_dropout > 0, as the embedding's (q = heads*kv_channels, kv =
 *     groups*kv_channels). With MHA, ffn = 4h, GeLU and dropout this is the formula's 34.
 *
 * Penumbra's side, like with like: the same layout with bf16 weights and fp32 grads (what the
 * formula assumes: no fp8 weight copies, no fp32 copy of bf16 grads), weights + gradients +
 * optimizer of its most loaded stage, activations of its first stage. The totals "as configured"
 * (the layout's precision and grad dtype, the worst stage, with `other`) are shown beside them.
 *
 * Cost: a layout loads one scenario (io/) and prices pp stages a few times (memory.h).
 */
#ifndef PN_BENCH_MEGATRON_MEMORY_H
#define PN_BENCH_MEGATRON_MEMORY_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "workload/config.h"
#include "workload/memory.h"

/* The arguments of Megatron-LM the formula reads (Megatron's names). vp 1 is Megatron's None. */
typedef struct {
  int64_t num_layers, hidden_size, ffn_hidden_size, num_attention_heads, num_query_groups, kv_channels;
  bool swiglu, rmsnorm, untie_embeddings_and_output_weights, add_bias_linear;
  int64_t padded_vocab_size;
  int64_t num_experts, moe_ffn_hidden_size, moe_shared_expert_intermediate_size; /* num_experts 0: None */
  int64_t tensor_model_parallel_size, pipeline_model_parallel_size, virtual_pipeline_model_parallel_size;
  int64_t expert_tensor_parallel_size, expert_model_parallel_size, world_size, data_parallel_size;
  bool use_distributed_optimizer;
  int64_t seq_length, micro_batch_size, num_microbatches;
} PnMegatronArgs;

/* The arguments Megatron derives for scenario `sc`. */
void pn_megatron_args_from_scenario(const PnScenario *sc, PnMegatronArgs *a);
/* compute_weight_and_optimizer_memory, bytes. */
double pn_megatron_weight_and_optimizer_bytes(const PnMegatronArgs *a);
/* compute_activation_memory, bytes. */
double pn_megatron_activation_bytes(const PnMegatronArgs *a);
/* Saved bytes of one layer per s*b*h: the formula's 18 + 4*ffn/h. */
double pn_megatron_layer_coefficient(const PnMegatronArgs *a);
/* The "same layout" variants above (the layer's own coefficient: dense layers). */
double pn_megatron_weight_and_optimizer_bytes_same_layout(const PnScenario *sc);
double pn_megatron_layer_coefficient_same_layout(const PnScenario *sc);
double pn_megatron_activation_bytes_same_layout(const PnScenario *sc);

/* A peak measured by Megatron-LM's CI on a layout: mem-max-allocated-bytes and
 * mem-allocated-bytes (torch.cuda.memory_stats after an iteration, logged by the last rank: the
 * last pipeline stage) at steady state, and the CI test case they come from. */
typedef struct {
  double max_allocated_bytes, allocated_bytes;
  const char *test_case;
} PnMemcheckMeasured;

/* What a layout of the table trains with. */
typedef enum {
  PN_MEMCHECK_SP            = 1u << 0, /* sequence parallel */
  PN_MEMCHECK_FP8           = 1u << 1, /* FP8 GEMMs, else BF16 */
  PN_MEMCHECK_DIST_OPT      = 1u << 2, /* distributed optimizer */
  PN_MEMCHECK_GRADS_FP32    = 1u << 3, /* grad_reduce_in_fp32 */
  PN_MEMCHECK_SELECTIVE     = 1u << 4, /* selective (core attention) recompute, else none */
  PN_MEMCHECK_ACCOUNT_SPLIT = 1u << 5, /* account_for_{embedding,loss}_in_pipeline_split */
} PnMemcheckFlag;

/* One layout of the table. `model` is a name in models/ or an inline model object (JSON). */
typedef struct {
  const char *model_label;
  const char *model;
  struct {
    int64_t gpus, tp, pp, vp, cp, ep, etp; /* vp 1: not interleaved; etp 0: Megatron's default (tp) */
  } grid;
  struct {
    int64_t seq, mbs, gbs;
  } shape;
  unsigned flags;                     /* PnMemcheckFlag */
  const char *what;                   /* why the layout is in the table */
  const PnMemcheckMeasured *measured; /* NULL: none */
} PnMemcheckLayout;

extern const PnMemcheckLayout pn_memcheck_layouts[];
extern const size_t pn_memcheck_n_layouts;

typedef struct {
  double megatron_state, megatron_state_same;           /* formula as Megatron prints it; same layout */
  double penumbra_state;                                /* most loaded stage, bf16 weights + fp32 grads */
  bool act_formula, act_same;                           /* the formula applies; its same-layout variant does */
  double megatron_act, megatron_act_same, penumbra_act; /* first stage, bf16 */
  double coefficient, coefficient_same;                 /* per layer, per s*b*h (act_formula, act_same) */
  bool learned_positions;                               /* the model has a learned position embedding */
  int64_t num_layers;
  PnWorkloadMemory as_configured; /* penumbra's worst stage as configured */
  PnWorkloadMemory last_stage;    /* as configured: the rank Megatron logs */
} PnMemcheckRow;

/* |penumbra - Megatron| / Megatron that test_memory holds on the same-layout figures (state
 * always, activations where act_same); memory-vs-megatron prints it under the table. */
#define PN_MEMCHECK_TOLERANCE 0.01

/* Loads layout `l` (models/ and hwprofiles/ of the source tree) and fills `row`; FALSE with
 * `error` when the scenario does not load. */
gboolean pn_memcheck_row(const PnMemcheckLayout *l, PnMemcheckRow *row, GError **error);

/* The README's tables (markdown) for every layout, appended to `out`; FALSE with `error` when a
 * layout does not load. */
gboolean pn_memcheck_markdown(GString *out, GError **error);

#endif
