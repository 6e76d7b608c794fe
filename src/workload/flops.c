/* flops.c — Megatron-Bridge model FLOPs; formulas in flops.h. */
#include "workload/flops.h"

#include <glib.h>

#include "workload/ops.h"

static double model_flops(const PnModelConfig *m, int64_t seq_length, int64_t global_batch, int64_t padded_vocab,
                          double core_factor)
{
  g_assert(m && m->num_attention_heads > 0);
  const double h      = (double)m->hidden_size;
  const double heads  = (double)m->num_attention_heads;
  const double groups = (double)(m->num_query_groups > 0 ? m->num_query_groups : m->num_attention_heads);
  const double kvc    = (double)(m->kv_channels > 0 ? m->kv_channels : m->hidden_size / m->num_attention_heads);
  const double q      = kvc * heads;
  const double kv     = kvc * groups;
  const double T      = (double)global_batch * (double)seq_length;
  const double S2     = (double)global_batch * (double)seq_length * (double)seq_length;
  const double gate   = m->gated_linear_unit ? 3.0 : 2.0;

  double attn = 6.0 * T * (h * (q + 2.0 * kv) + q * h);
  double core = core_factor * q * S2;
  if (m->multi_latent_attention) { /* Megatron-Bridge's MLA branch: projections, norms' +1, QK^T and PV */
    const double qk = (double)(m->qk_head_dim + m->qk_pos_emb_head_dim), v = (double)m->v_head_dim;
    double q_term = m->q_lora_rank > 0 ? (double)m->q_lora_rank * (h + heads * qk + 1.0) : h * heads * qk;
    double kv_term =
        (double)m->kv_lora_rank * (h + heads * ((double)m->qk_head_dim + v) + 1.0) + h * (double)m->qk_pos_emb_head_dim;
    attn = 6.0 * T * (q_term + kv_term + heads * v * h);
    core = core_factor / 2.0 * heads * (qk + v) * S2;
  }
  /* MoE and dense layers by moe_layer_freq; each MTP layer is of the last layer's kind and adds its
   * norms and eh_proj, and its own logits */
  double moe_layers = 0.0, mtp = (double)m->mtp_num_layers;
  bool last_moe = false;
  for (int64_t l = 0; m->num_moe_experts > 0 && l < m->num_layers; l++) {
    last_moe = pn_workload_model_layer_is_moe(m, l);
    moe_layers += last_moe ? 1.0 : 0.0;
  }
  moe_layers += last_moe ? mtp : 0.0;
  double layers      = (double)m->num_layers + mtp;
  double dense_layer = 6.0 * T * h * (double)m->ffn_hidden_size * gate;
  double moe_layer =
      6.0 * T * h *
      ((double)m->moe_ffn_hidden_size * (double)m->moe_router_topk + (double)m->moe_shared_expert_intermediate_size) *
      gate;
  double mlp      = moe_layers * moe_layer + (layers - moe_layers) * dense_layer;
  double mtp_proj = 6.0 * T * mtp * (3.0 * h + 2.0 * h * h);
  double logits   = 6.0 * T * h * (double)padded_vocab * (1.0 + mtp);
  return layers * (attn + core) + mlp + mtp_proj + logits;
}

double pn_workload_model_flops(const PnModelConfig *m, int64_t seq_length, int64_t global_batch, int64_t padded_vocab)
{
  return model_flops(m, seq_length, global_batch, padded_vocab, 6.0);
}

double pn_workload_model_flops_full_attention(const PnModelConfig *m, int64_t seq_length, int64_t global_batch,
                                              int64_t padded_vocab)
{
  return model_flops(m, seq_length, global_batch, padded_vocab, 12.0);
}
