/* flops.h — the model FLOPs per iteration that Megatron-LM / Megatron-Bridge report, for
 * TFLOP/s/GPU and MFU. These are not the FLOPs the GPUs execute (ops.h has those: recompute,
 * flash-attention backward): they follow the frameworks' bookkeeping exactly, so that predicted
 * TFLOP/s compare with published ones.
 *
 * Source: Megatron-LM megatron/training/training.py::num_floating_point_operations (mirrored by
 * Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py), dense and MoE GQA models,
 * BSHD batches. With T = global_batch * seq tokens, S2 = global_batch * seq^2, h = hidden,
 * L = layers, q = kv_channels * heads, kv = kv_channels * query_groups, V = padded vocab, and the
 * factor 6 = 3 (forward + dgrad + wgrad) * 2 (multiply-add):
 *   attention, token-linear   6 * T * [h*(q + 2*kv) + q*h]            per layer
 *   core attention (causal)   6 * q * S2   (= 3 * 2 * q * seq/2 * 2 per token: QK^T and PV,
 *                                            half the s^2 counted for the causal mask)
 *   MLP, dense                6 * T * h * ffn * (3 if gated_linear_unit else 2)
 *   MLP, MoE                  6 * T * h * [moe_ffn * topk + shared_ffn] * (3 | 2)  (the layers moe_layer_freq
 *                                                                                     makes MoE; the others dense)
 *   logits                    6 * T * h * V * (1 + mtp_num_layers)
 *   MTP layers                each one more layer of the last layer's kind, and 6 * T * (3h + 2h^2)
 *                             (its norms and eh_proj)
 *   total = L * (attention + core + MLP) + logits (+ MTP). Recompute is not counted.
 * Multi-latent attention (flop_utils.py's MLA branch), with r_q = q_lora_rank, r_kv = kv_lora_rank,
 * d_qk = qk_head_dim + qk_pos_emb_head_dim, n = heads, d_v = v_head_dim, d_r = qk_pos_emb_head_dim:
 *   attention, token-linear   6 * T * [r_q*(h + n*d_qk + 1) (or h*n*d_qk without r_q)
 *                                      + r_kv*(h + n*(qk_head_dim + d_v) + 1) + h*d_r + n*d_v*h]
 *   core attention (causal)   3 * n * (d_qk + d_v) * S2
 * The "full attention" variant counts all of s^2 (core term 12 * q * S2): NeMo's flops_formulas
 * before NeMo commit 6251117f4c (2025-08-09), the Megatron-LM 2024 README table and the
 * dgxc-benchmarking READMEs use it.
 * Known divergence: dgxc-benchmarking's Llama 3.1 405B README plugs 16 query groups into the
 * formula (the model has 8), which adds 12*L*h^2*(8/128) per token (+1.0%, 2650.8 instead of
 * 2625.4 GFLOP/token); NeMo's 24.07 405B row shows the same +1%.
 *
 * Units: FLOPs per iteration (double). Cost: O(1).
 */
#ifndef PN_WORKLOAD_FLOPS_H
#define PN_WORKLOAD_FLOPS_H

#include <stdint.h>

#include "workload/config.h"

/* Megatron-Bridge model FLOPs of one iteration (causal attention counted as half). */
double pn_workload_model_flops(const PnModelConfig *m, int64_t seq_length, int64_t global_batch, int64_t padded_vocab);
/* Older NeMo / Megatron-LM convention: full s^2 attention. */
double pn_workload_model_flops_full_attention(const PnModelConfig *m, int64_t seq_length, int64_t global_batch,
                                              int64_t padded_vocab);

#endif
