/* flops.c — Megatron-Bridge model FLOPs; formulas in flops.h. */
#include "workload/flops.h"

#include <glib.h>

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
  double mlp;
  if (m->num_moe_experts > 0)
    mlp =
        6.0 * T * h *
        ((double)m->moe_ffn_hidden_size * (double)m->moe_router_topk + (double)m->moe_shared_expert_intermediate_size) *
        gate;
  else
    mlp = 6.0 * T * h * (double)m->ffn_hidden_size * gate;
  double logits = 6.0 * T * h * (double)padded_vocab;
  return (double)m->num_layers * (attn + core + mlp) + logits;
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
