/* ops.c — builds the per-GPU op lists of ops.h. Formulas and sources are in the header; this file
 * only adds why a line is as it is where the header does not say. */
#include "workload/ops.h"

#include <math.h>
#include <string.h>

/* The scenario, reduced to the per-GPU shapes the op lists need. */
typedef struct {
  int64_t h, heads, groups, kvc, ffn, tp, cp, b, s;
  int64_t T;                /* tokens per GPU */
  int64_t Tsp;              /* tokens of norms / dropout / residual adds */
  int64_t q_tp;             /* heads*kvc/tp (Q width) */
  int64_t kv_tp;            /* groups*kvc/tp (the K and the V width of a fused qkv) */
  int64_t k_tp, v_tp, o_tp; /* K, V and attention-output widths: kv_tp, kv_tp, q_tp; MLA's own */
  /* multi-latent attention (mla_qkv_forward): q_lora_rank (0: none), kv_lora_rank, the no-rope and
   * rope parts of a query / key head, a value head; qk_layernorm */
  bool mla, qk_ln; /* qk_ln: MLA's latent norms; without MLA, the per-head q and k norms (qk_norm) */
  bool qk_norm;
  int64_t qlr, kvlr, nope, pe, vd;
  int64_t f_tp;   /* ffn/tp */
  int64_t fc1_tp; /* ffn*(2 if gated)/tp */
  int64_t vocab_tp;
  bool sp, fp8, cs, tp_comm, gated, rope, dropout, layernorm, swiglu, bias;
  bool act_unfused;     /* bias_activation_fusion off: the dense MLP's bias and activation as separate kernels */
  bool rope_unfused;    /* rope without apply_rope_fusion: Megatron-Core's _apply_rotary_pos_emb_bshd */
  bool bda_unfused;     /* bias_dropout_fusion off: bias add, dropout and residual add as separate kernels */
  bool unfused_attn;    /* DotProductAttention (local layers, attention_backend local / unfused) */
  bool softmax_fused;   /* its scale-mask-softmax as one fused kernel (TE's, or Apex's with masked_softmax_fusion) */
  bool attn_dropout;    /* attention_dropout > 0 with the unfused attention (flash attention drops inside) */
  bool wgrad_fusion;    /* gradient_accumulation_fusion: wgrad GEMMs add into main_grad themselves */
  PnDtype main_grad_dt; /* main_grad's dtype: fp32 with grad_reduce_in_fp32, else bf16 */
  /* the cross entropy's bytes per logit, forward and backward, and what the forward keeps */
  double ce_fwd_bytes, ce_bwd_bytes, ce_saved_bytes;
  PnCpCommType cp_type;
  double e;        /* bytes per element of a quantizable GEMM input: 1 (fp8) or 2 */
  double norm_e;   /* bytes per element a fused norm writes: 1 (fp8 delayed scaling) or 2 */
  PnDtype gemm_dt; /* dtype of the layer GEMMs */
  /* mixture of experts (ops.h) */
  bool moe;
  PnMoeDispatcher dispatcher;
  int64_t E, topk, ep, etp, L; /* experts, top-k, expert parallel, expert tensor parallel, local experts */
  int64_t Tm, R, rows_e;       /* tokens entering the layer, rows reaching local experts, rows per expert */
  int64_t routed;              /* token copies a GPU routes: Tm * topk, or as capacity drops / pads them */
  bool drop_and_pad;           /* moe_pad_expert_input_to_capacity: static sizes, no host read */
  int64_t mf, mfc1;            /* expert fc2 input width F/etp, fc1 output width F*(2 if gated)/etp */
  int64_t sf_tp, sfc1_tp;      /* shared experts: width/tp, fc1 output width/tp */
  bool shared_overlap;         /* moe_shared_expert_overlap with the alltoall dispatcher */
  bool glu_clamp;              /* activation_func_clamp_value: the experts' GLU halves clamped (push_glu_clamp) */
  /* selective recompute (Rc, rc_of) */
  uint32_t rc_modules; /* recompute_modules */
  bool norms_separate; /* the norms are modules of their own (local layers); TE fuses them into qkv / fc1 */
  bool ln2_rc_blocked; /* the pre-MLP norm's recompute is disabled by the MoE router's CUDA graph */
} Dims;

/* Bytes per logit the loss moves (megatron/core/tensor_parallel/cross_entropy.py, fusions/
 * fused_cross_entropy.py; transformer_engine/pytorch/triton/cross_entropy.py), each kernel a full
 * pass over the [tokens, vocab / TP] logits:
 *  - unfused (Megatron-Core's default): .float() (2 r + 4 w), max (4 r), the in-place subtraction
 *    of the max (4 r + 4 w), exp in place (4 r + 4 w), its sum (4 r), the division by the sum
 *    (4 r + 4 w) = 38; backward: grad = softmax - onehot times dLoss in place (4 r + 4 w), cast
 *    back to bf16 for the output layer (4 r + 2 w) = 14; the fp32 softmax is kept (4);
 *  - "native" (jit-fused): cast and max (2 r + 4 w), subtract + exp + sum (4 r + 4 w), divide
 *    (4 r + 4 w) = 22; backward fused into one pass ending in bf16 (4 r + 2 w) = 6; keeps 4;
 *  - "te" (Triton): the online softmax reads the bf16 logits (2), the loss kernel reads them
 *    again and writes the gradient in place (2 r + 2 w) = 6; backward scales it by dLoss
 *    (2 r + 2 w) = 4; keeps the bf16 gradient (2). */
static void ce_bytes(const PnTrainingConfig *tr, Dims *d)
{
  if (!tr->cross_entropy_loss_fusion) {
    d->ce_fwd_bytes = 38.0, d->ce_bwd_bytes = 14.0, d->ce_saved_bytes = 4.0;
  } else if (tr->cross_entropy_fusion_impl == PN_CE_FUSION_TE) {
    d->ce_fwd_bytes = 6.0, d->ce_bwd_bytes = 4.0, d->ce_saved_bytes = 2.0;
  } else {
    d->ce_fwd_bytes = 22.0, d->ce_bwd_bytes = 6.0, d->ce_saved_bytes = 4.0;
  }
}

static void dims_init(const PnScenario *sc, Dims *d)
{
  const PnModelConfig *m = &sc->model;
  memset(d, 0, sizeof *d);
  d->h      = m->hidden_size;
  d->heads  = m->num_attention_heads;
  d->groups = m->num_query_groups > 0 ? m->num_query_groups : m->num_attention_heads;
  d->kvc    = m->kv_channels > 0 ? m->kv_channels : m->hidden_size / m->num_attention_heads;
  d->ffn    = m->ffn_hidden_size;
  d->tp     = MAX(sc->parallel.tensor_model_parallel_size, 1);
  d->cp     = MAX(sc->parallel.context_parallel_size, 1);
  d->b      = sc->training.micro_batch_size;
  d->s      = sc->training.seq_length;
  g_assert(d->heads % d->tp == 0 && d->groups % d->tp == 0);
  g_assert(d->s % d->cp == 0);
  d->T       = d->s / d->cp * d->b;
  d->sp      = sc->parallel.sequence_parallel && d->tp > 1;
  d->tp_comm = d->tp > 1;
  d->Tsp     = d->sp ? d->T / d->tp : d->T;
  d->q_tp    = d->heads * d->kvc / d->tp;
  d->kv_tp   = d->groups * d->kvc / d->tp;
  d->k_tp    = d->kv_tp;
  d->v_tp    = d->kv_tp;
  d->o_tp    = d->q_tp;
  d->mla     = m->multi_latent_attention;
  d->qk_norm = m->qk_layernorm && !d->mla;
  if (d->mla) { /* every head its own key and value: no groups; kvc is a query / key head */
    d->qlr    = m->q_lora_rank;
    d->kvlr   = m->kv_lora_rank;
    d->nope   = m->qk_head_dim;
    d->pe     = m->qk_pos_emb_head_dim;
    d->vd     = m->v_head_dim;
    d->qk_ln  = m->qk_layernorm;
    d->groups = d->heads;
    d->kvc    = d->nope + d->pe;
    d->q_tp   = d->heads / d->tp * d->kvc;
    d->kv_tp  = d->q_tp;
    d->k_tp   = d->q_tp;
    d->v_tp   = d->heads / d->tp * d->vd;
    d->o_tp   = d->v_tp;
  }
  d->gated    = m->gated_linear_unit;
  d->f_tp     = d->ffn / d->tp;
  d->fc1_tp   = d->f_tp * (d->gated ? 2 : 1);
  d->vocab_tp = pn_workload_padded_vocab(sc) / d->tp;
  d->fp8      = sc->training.precision == PN_PREC_FP8;
  /* YaRN is RoPE with scaled frequencies and a concentration factor (mscale) on cos / sin; the fused
   * RoPE kernel takes no mscale, so Megatron-Core runs it unfused whenever mscale != 1, i.e. for
   * every YaRN scaling factor above 1 (models/common/embeddings/yarn_rotary_pos_embedding.py,
   * transformer/attention.py's apply_rotary_pos_emb path) */
  bool yarn       = strcmp(m->position_embedding_type, "yarn") == 0;
  d->rope         = yarn || strcmp(m->position_embedding_type, "rope") == 0;
  d->dropout      = m->hidden_dropout > 0.0;
  d->layernorm    = m->normalization == PN_NORM_LAYERNORM;
  d->swiglu       = d->gated;
  d->bias         = m->add_bias_linear;
  d->act_unfused  = !sc->training.bias_activation_fusion;
  d->rope_unfused = d->rope && (yarn || !sc->training.apply_rope_fusion);
  if (d->mla) { /* MLA always rotates its rope part; its fused kernels take YaRN's cos / sin */
    d->rope         = true;
    d->rope_unfused = !sc->training.apply_rope_fusion;
  }
  d->bda_unfused  = !sc->training.bias_dropout_fusion;
  d->unfused_attn = pn_workload_unfused_attention(sc);
  /* Megatron-Core's FusedScaleMaskSoftmax takes its fused kernel only for 16 < sk <= 4096 (and
   * shapes divisible by 4); TE's UnfusedDotProductAttention has TE's own fused softmax */
  d->softmax_fused = sc->training.transformer_impl == PN_TRANSFORMER_IMPL_TE ||
                     (sc->training.masked_softmax_fusion && d->s > 16 && d->s <= 4096 && d->s % 4 == 0);
  d->attn_dropout = d->unfused_attn && m->attention_dropout > 0.0;
  d->wgrad_fusion = sc->training.gradient_accumulation_fusion;
  d->main_grad_dt = sc->ddp.grad_reduce_in_fp32 ? PN_DT_FP32 : PN_DT_BF16;
  ce_bytes(&sc->training, d);
  d->cp_type = sc->comm_overlap.cp_comm_type;
  d->cs      = d->fp8 && sc->training.fp8_recipe == PN_FP8_TENSORWISE;
  d->e       = d->fp8 ? 1.0 : 2.0;
  d->norm_e  = d->fp8 && !d->cs ? 1.0 : 2.0;
  d->gemm_dt = d->fp8 ? PN_DT_FP8 : PN_DT_BF16;
  d->moe     = m->num_moe_experts > 0;
  if (d->moe) {
    int64_t F     = m->moe_ffn_hidden_size > 0 ? m->moe_ffn_hidden_size : m->ffn_hidden_size;
    d->dispatcher = sc->parallel.moe_token_dispatcher_type;
    d->E          = m->num_moe_experts;
    d->topk       = MAX(m->moe_router_topk, 1);
    d->ep         = MAX(sc->parallel.expert_model_parallel_size, 1);
    d->etp        = sc->parallel.expert_tensor_parallel_size > 0 ? sc->parallel.expert_tensor_parallel_size : d->tp;
    d->L          = MAX(d->E / d->ep, 1);
    d->Tm         = d->Tsp;
    d->routed     = d->Tm * d->topk;
    /* token dropping (moe_utils.py get_capacity: ceil(tokens * topk / experts * factor) per expert
     * of a GPU's tokens): routing is balanced, so an expert takes Tm * topk / E copies, at most the
     * capacity, and with the pad exactly the capacity (the permuted buffer holds capacity * E rows,
     * token_dispatcher.py preprocess) */
    double cf       = m->moe_expert_capacity_factor;
    d->drop_and_pad = cf > 0.0 && m->moe_pad_expert_input_to_capacity;
    if (cf > 0.0) {
      int64_t cap = (int64_t)ceil((double)d->routed / (double)d->E * cf);
      d->routed   = d->drop_and_pad ? cap * d->E : MIN(d->routed, cap * d->E);
    }
    d->R       = d->routed * d->etp;
    d->rows_e  = (d->R + d->L - 1) / d->L;
    d->mf      = F / d->etp;
    d->mfc1    = d->mf * (d->gated ? 2 : 1);
    d->sf_tp   = m->moe_shared_expert_intermediate_size / d->tp;
    d->sfc1_tp = d->sf_tp * (d->gated ? 2 : 1);
    /* The option as the gating leaves it, so the plan carries no copy: overlap/ep.c refuses it
     * with the allgather dispatcher and only warns without shared experts, where it has no ops
     * to move. The dispatcher test keeps op lists built without the gating (tests) consistent. */
    d->shared_overlap =
        sc->comm_overlap.moe_shared_expert_overlap && d->sf_tp > 0 && d->dispatcher != PN_MOE_DISPATCHER_ALLGATHER;
    d->glu_clamp = d->gated && m->activation_func_clamp_value > 0.0;
  }
  d->rc_modules     = sc->recompute.recompute_modules;
  d->norms_separate = sc->training.transformer_impl == PN_TRANSFORMER_IMPL_LOCAL;
  /* TransformerLayer.__init__ (transformer_layer.py, can_recompute_pre_mlp_layernorm_for_cudagraph):
   * with the MoE router in a TE-scoped CUDA graph the norm's output is a graph output in a static
   * buffer, unless the preprocess is captured too with the alltoall dispatcher (and never beside
   * moe_shared_expert_overlap) */
  uint32_t graphs = sc->training.cuda_graph_impl == PN_CUDA_GRAPH_IMPL_TE ? sc->training.cuda_graph_modules : 0u;
  d->ln2_rc_blocked =
      d->moe && (graphs & PN_CUDA_GRAPH_MOE_ROUTER) &&
      (d->shared_overlap || !(graphs & PN_CUDA_GRAPH_MOE_PREPROCESS) || d->dispatcher != PN_MOE_DISPATCHER_ALLTOALL);
}

/* ---- op constructors ---- */

static PnOp op_base(PnOpKind kind, const char *name, PnPhase phase)
{
  PnOp o;
  memset(&o, 0, sizeof o);
  o.kind       = kind;
  o.name       = name;
  o.phase      = (uint8_t)phase;
  o.role       = PN_GEMM_NONE;
  o.dtype      = PN_DT_BF16;
  o.groups     = 1;
  o.node       = PN_NODE_ATTN;
  o.accum_into = PN_DT_NONE;
  return o;
}

/* What Megatron-LM's unfused bias and activation (bias_activation_fusion off) move beyond the fused
 * kernel that "act" / "act_bwd" price, in bytes per element of the activation's output (bf16):
 *   the bias add, over the fc1 output: 2 (gated) or 1 inputs read and written, 4 bytes each;
 *   SwiGLU as F.silu(y1) * y2: silu (2 read + 2 written) and the product (4 + 2) are 10 bytes
 *   against the fused 6, so 4 more; its autograd backward, g * silu(y1), g * y2, silu's backward
 *   (6 bytes each) and the cat of the two halves (4 read + 4 written), 26 against the fused 10;
 *   GELU's own kernels move as much unfused as fused.
 * The bytes are priced by the profile's memory-bound class, like every elementwise op. The silu
 * output the unfused product keeps for its backward is not added to the activation memory. */
static double act_unfused_bytes(const Dims *d, bool backward)
{
  double bias = d->bias && !backward ? (d->gated ? 8.0 : 4.0) : 0.0;
  double act  = d->swiglu ? (backward ? 16.0 : 4.0) : 0.0;
  return bias + act;
}

static void push_mem(GArray *out, const char *name, PnPhase phase, double bytes, double saved_bytes)
{
  PnOp o        = op_base(PN_OP_MEM, name, phase);
  o.bytes       = bytes;
  o.saved_bytes = saved_bytes;
  g_array_append_val(out, o);
}

static void push_gemm(GArray *out, const char *name, const char *slot, PnPhase phase, PnGemmRole role, PnDtype dt,
                      int64_t m, int64_t n, int64_t k, double saved_bytes)
{
  PnOp o        = op_base(PN_OP_GEMM, name, phase);
  o.ub_slot     = slot;
  o.role        = (uint8_t)role;
  o.dtype       = dt;
  o.m           = m;
  o.n           = n;
  o.k           = k;
  o.flops       = 2.0 * (double)m * (double)n * (double)k;
  o.saved_bytes = saved_bytes;
  o.te_wgrad    = role == PN_GEMM_WGRAD;
  g_array_append_val(out, o);
}

/* The last op appended draws dropout's random numbers (and writes or reads its mask) when `on`. */
static void mark_rng(GArray *out, bool on) { g_array_index(out, PnOp, out->len - 1).rng = on; }

/* The ops appended since `from` belong to layer-schedule node `node`. */
static void tag_node(GArray *out, guint from, PnLayerNode node)
{
  for (guint i = from; i < out->len; i++)
    g_array_index(out, PnOp, i).node = (uint8_t)node;
}

/* The last op appended is a TE grouped GEMM over `groups` experts. */
static void make_grouped(GArray *out, int64_t groups)
{
  PnOp *o   = &g_array_index(out, PnOp, out->len - 1);
  o->groups = groups;
  o->flops *= (double)groups;
}

/* A GEMM's dgrad and wgrad from its forward shape (m, n, k): dgrad (m, k, n), wgrad (n, k, m). */
static void push_dgrad(GArray *out, const char *name, const char *slot, PnPhase phase, PnDtype dt, int64_t m, int64_t n,
                       int64_t k)
{
  push_gemm(out, name, slot, phase, PN_GEMM_DGRAD, dt, m, k, n, 0.0);
}

/* A weight's gradient into its main_grad (Megatron's param-and-grad buffer). With
 * gradient_accumulation_fusion (`fusable`: TE linears, grouped experts, the output layer's
 * ColumnParallelLinear) the wgrad GEMM adds its product into main_grad itself: beta = 1, its
 * output in main_grad's dtype (priced from the profile's gemm_accum tables). Otherwise (the
 * switch off, or a plain torch linear such as the router) it writes a bf16 gradient that the
 * DDP hook adds into main_grad (`param.main_grad.add_(param.grad)`): one more kernel reading
 * the gradient (2 B) and main_grad (2 or 4 B) and writing main_grad, per weight element.
 * `groups` > 1: a TE grouped GEMM over that many experts of this shape. */
static void push_wgrad(GArray *out, const Dims *d, const char *name, const char *slot, PnPhase phase, PnDtype dt,
                       int64_t m, int64_t n, int64_t k, int64_t groups, bool fusable)
{
  push_gemm(out, name, slot, phase, PN_GEMM_WGRAD, dt, n, k, m, 0.0);
  if (groups > 1)
    make_grouped(out, groups);
  if (fusable && d->wgrad_fusion) {
    g_array_index(out, PnOp, out->len - 1).accum_into = d->main_grad_dt;
    return;
  }
  double mg = d->main_grad_dt == PN_DT_FP32 ? 4.0 : 2.0;
  push_mem(out, "main_grad_add", phase, (double)n * (double)k * (double)MAX(groups, 1) * (2.0 + 2.0 * mg), 0.0);
}

static void push_comm(GArray *out, const char *name, const char *slot, PnPhase phase, PnCollKind coll, PnGroup group,
                      double bytes, PnDtype dt)
{
  PnOp o    = op_base(PN_OP_COMM, name, phase);
  o.ub_slot = slot;
  o.coll    = coll;
  o.group   = group;
  o.bytes   = bytes;
  o.dtype   = dt;
  g_array_append_val(out, o);
}

static double attn_fwd_flops(int64_t b, int64_t sq, int64_t skv, int64_t heads, int64_t d, bool causal)
{
  double f = 4.0 * (double)b * (double)sq * (double)skv * (double)heads * (double)d;
  return causal ? f / 2.0 : f;
}

/* ---- pieces of a layer ---- */

static double norm_stats_bytes(const Dims *d) { return (double)d->Tsp * 4.0 * (d->layernorm ? 2.0 : 1.0); }

/* Norm forward; `out_e` bytes per output element. Saves x and the statistics. */
static void push_norm_fwd(GArray *out, const Dims *d, const char *name, PnPhase phase, double out_e, double saved)
{
  double elems = (double)d->Tsp * (double)d->h;
  push_mem(out, name, phase, elems * (2.0 + out_e), saved);
}

static void set_kernels(GArray *out, int kernels);

/* A norm's backward: TE's (and torch's) norm backward is two kernels, the main one and a
 * finalize kernel reducing the per-CTA dgamma / dbeta partials
 * (TransformerEngine common/layer_norm/ln_bwd_semi_cuda_kernel.cu). */
static void push_norm_bwd(GArray *out, const Dims *d, const char *name, const char *add_name, PnPhase phase)
{
  double elems = (double)d->Tsp * (double)d->h;
  push_mem(out, name, phase, elems * 6.0, 0.0);
  set_kernels(out, 2);
  if (add_name)
    push_mem(out, add_name, phase, elems * 6.0, 0.0); /* residual branch + norm branch gradients */
}

/* Tensorwise (current) scaling: what TE's Float8CurrentScalingQuantizer::quantize_impl
 * (transformer_engine/pytorch/csrc/quantizer.cpp) runs before the cast of `elems` elements: the
 * amax (a bf16 read; fused into the norm kernel when `amax_fused`), its 1-float all-reduce over TP
 * when `tp_amax`, and the scale from the amax. Delayed scaling casts with the previous scale. */
static void push_cs_prologue(GArray *out, const Dims *d, PnPhase phase, double elems, bool amax_fused, bool tp_amax)
{
  if (!d->cs)
    return;
  if (!amax_fused)
    push_mem(out, "fp8_amax", phase, elems * 2.0, 0.0);
  if (tp_amax)
    push_comm(out, "fp8_amax_tp_ar", NULL, phase, PN_COLL_ALL_REDUCE, PN_GROUP_TP, 4.0, PN_DT_FP32);
  push_mem(out, "fp8_scale", phase, 12.0, 0.0); /* amax read, scale and scale_inv written (fp32) */
}

/* An fp8 quantization of `elems` elements moving `bytes_per_elem` in the cast kernel. */
static void push_cast(GArray *out, const Dims *d, const char *name, PnPhase phase, double elems, double bytes_per_elem,
                      bool tp_amax)
{
  push_cs_prologue(out, d, phase, elems, false, tp_amax);
  push_mem(out, name, phase, elems * bytes_per_elem, 0.0);
}

/* Column-parallel TE LayerNormLinear forward of a `kin`-wide input: [AG of ln out] + GEMM. `saved`
 * is the GEMM's input as TE keeps it (the local shard with SP). */
static void push_column_fwd_k(GArray *out, const Dims *d, const char *name, const char *ag_name, const char *slot,
                              const char *norm_cast, PnPhase phase, int64_t n, int64_t kin, double saved)
{
  /* current scaling: the norm writes bf16 and its amax (FUSED_NORM_AMAX_FP8), all-reduced over
   * TP with SP (layernorm_linear.py), then the rowwise cast; the transpose is made for the wgrad */
  if (norm_cast && d->cs) {
    push_cs_prologue(out, d, phase, (double)d->Tsp * (double)kin, true, d->sp);
    push_mem(out, norm_cast, phase, (double)d->Tsp * (double)kin * 3.0, 0.0);
  }
  if (d->sp)
    push_comm(out, ag_name, slot, phase, PN_COLL_ALL_GATHER, PN_GROUP_TP, (double)d->T * (double)kin * d->e,
              d->gemm_dt);
  push_gemm(out, name, slot, phase, PN_GEMM_FPROP, d->gemm_dt, d->T, n, kin, saved);
}

static void push_column_fwd(GArray *out, const Dims *d, const char *name, const char *ag_name, const char *slot,
                            const char *norm_cast, PnPhase phase, int64_t n, double saved)
{
  push_column_fwd_k(out, d, name, ag_name, slot, norm_cast, phase, n, d->h, saved);
}

/* Row-parallel TE Linear forward: [fp8 cast_transpose of the input] + GEMM + RS (SP) / AR. */
static void push_row_fwd(GArray *out, const Dims *d, const char *name, const char *cast_name, const char *comm_name,
                         const char *slot, PnPhase phase, int64_t k, double saved)
{
  if (d->fp8)
    push_cast(out, d, cast_name, phase, (double)d->T * (double)k, 4.0, false);
  push_gemm(out, name, slot, phase, PN_GEMM_FPROP, d->gemm_dt, d->T, d->h, k, saved);
  double S = (double)d->T * (double)d->h * 2.0;
  if (d->sp)
    push_comm(out, comm_name, slot, phase, PN_COLL_REDUCE_SCATTER, PN_GROUP_TP, S, PN_DT_BF16);
  else if (d->tp_comm)
    push_comm(out, comm_name, NULL, phase, PN_COLL_ALL_REDUCE, PN_GROUP_TP, S, PN_DT_BF16);
}

/* Row-parallel backward: [fp8 cast of dY] [AG dY (SP)] [fp8 transpose of the gathered dY] dgrad,
 * wgrad. */
static void push_row_bwd(GArray *out, const Dims *d, const char *dgrad_name, const char *wgrad_name,
                         const char *cast_name, const char *ag_name, const char *tr_name, const char *dgrad_slot,
                         const char *wgrad_slot, PnPhase phase, int64_t k)
{
  double full = (double)d->T * (double)d->h;
  if (d->sp) {
    if (d->fp8) /* current scaling: the grad_output amax is all-reduced over TP (linear.py) */
      push_cast(out, d, cast_name, phase, (double)d->Tsp * (double)d->h, 3.0, true);
    push_comm(out, ag_name, dgrad_slot, phase, PN_COLL_ALL_GATHER, PN_GROUP_TP, full * d->e, d->gemm_dt);
    if (d->fp8)
      push_mem(out, tr_name, phase, full * 2.0, 0.0);
  } else if (d->fp8) {
    push_cast(out, d, cast_name, phase, full, 4.0, false);
  }
  push_dgrad(out, dgrad_name, dgrad_slot, phase, d->gemm_dt, d->T, d->h, k);
  push_wgrad(out, d, wgrad_name, wgrad_slot, phase, d->gemm_dt, d->T, d->h, k, 1, true);
}

/* Column-parallel backward of a `kin`-wide input: [fp8 cast of dY] [AG of the saved ln out (SP)]
 * dgrad [fp8 transpose of the ln out] [RS (SP) / AR of dX] wgrad. */
static void push_column_bwd_k(GArray *out, const Dims *d, const char *dgrad_name, const char *wgrad_name,
                              const char *cast_name, const char *ag_name, const char *tr_name, const char *rs_name,
                              const char *dgrad_slot, const char *wgrad_slot, PnPhase phase, int64_t n, int64_t kin)
{
  double full = (double)d->T * (double)kin;
  if (d->fp8)
    push_cast(out, d, cast_name, phase, (double)d->T * (double)n, 4.0, false);
  if (d->sp)
    push_comm(out, ag_name, dgrad_slot, phase, PN_COLL_ALL_GATHER, PN_GROUP_TP, full * d->e, d->gemm_dt);
  push_dgrad(out, dgrad_name, dgrad_slot, phase, d->gemm_dt, d->T, n, kin);
  if (d->fp8)
    push_mem(out, tr_name, phase, full * 2.0, 0.0);
  if (d->sp)
    push_comm(out, rs_name, wgrad_slot, phase, PN_COLL_REDUCE_SCATTER, PN_GROUP_TP, full * 2.0, PN_DT_BF16);
  else if (d->tp_comm)
    push_comm(out, rs_name, NULL, phase, PN_COLL_ALL_REDUCE, PN_GROUP_TP, full * 2.0, PN_DT_BF16);
  push_wgrad(out, d, wgrad_name, wgrad_slot, phase, d->gemm_dt, d->T, n, kin, 1, true);
}

static void push_column_bwd(GArray *out, const Dims *d, const char *dgrad_name, const char *wgrad_name,
                            const char *cast_name, const char *ag_name, const char *tr_name, const char *rs_name,
                            const char *dgrad_slot, const char *wgrad_slot, PnPhase phase, int64_t n)
{
  push_column_bwd_k(out, d, dgrad_name, wgrad_name, cast_name, ag_name, tr_name, rs_name, dgrad_slot, wgrad_slot, phase,
                    n, d->h);
}

static bool cp_a2a(const Dims *d) { return d->cp > 1 && d->cp_type == PN_CP_A2A; }

/* Bytes of K+V (bf16) of this GPU's tokens and TP share of query groups. */
static double kv_local_bytes(const Dims *d) { return (double)d->T * (double)(d->k_tp + d->v_tp) * 2.0; }

/* CP exchange before the attention (forward or its recompute). */
static void push_cp_fwd(GArray *out, const Dims *d, PnPhase phase)
{
  if (d->cp <= 1)
    return;
  switch (d->cp_type) {
  case PN_CP_P2P:
  case PN_CP_A2A_P2P:
    push_comm(out, "cp_kv_p2p", NULL, phase, PN_COLL_SEND_RECV, PN_GROUP_CP, (double)(d->cp - 1) * kv_local_bytes(d),
              PN_DT_BF16);
    break;
  case PN_CP_ALL_GATHER:
    push_comm(out, "cp_kv_ag", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_CP, (double)d->cp * kv_local_bytes(d),
              PN_DT_BF16);
    break;
  case PN_CP_A2A:
    push_comm(out, "cp_qkv_a2a", NULL, phase, PN_COLL_ALL_TO_ALL, PN_GROUP_CP,
              (double)d->T * (double)(d->q_tp + d->k_tp + d->v_tp) * 2.0, PN_DT_BF16);
    break;
  }
}

static void push_cp_fwd_after(GArray *out, const Dims *d, PnPhase phase)
{
  if (cp_a2a(d))
    push_comm(out, "cp_out_a2a", NULL, phase, PN_COLL_ALL_TO_ALL, PN_GROUP_CP, (double)d->T * (double)d->o_tp * 2.0,
              PN_DT_BF16);
}

/* Core attention forward op and what it saves. */
static void push_attn(GArray *out, const Dims *d, PnPhase phase, bool backward, double saved)
{
  PnOp o       = op_base(PN_OP_ATTN, backward ? "core_attn_bwd" : "core_attn", phase);
  o.batch      = d->b;
  o.head_dim   = d->kvc;
  o.head_dim_v = d->mla ? d->vd : 0;
  o.causal     = true;
  o.backward   = backward;
  if (cp_a2a(d)) {
    o.seq_q    = d->s;
    o.seq_kv   = d->s;
    o.heads    = MAX(d->heads / (d->tp * d->cp), 1);
    o.kv_heads = MAX(d->groups / (d->tp * d->cp), 1);
  } else {
    o.seq_q    = d->s / d->cp;
    o.seq_kv   = d->s;
    o.heads    = d->heads / d->tp;
    o.kv_heads = d->groups / d->tp;
  }
  /* Load-balanced causal CP: every rank does 1/cp of the full causal work. */
  /* QK^T over the query / key head, PV over the value head (MLA's differ) */
  double full_causal = attn_fwd_flops(d->b, d->s, d->s, d->heads / d->tp, d->kvc, true) *
                       (d->mla ? (double)(d->kvc + d->vd) / (2.0 * (double)d->kvc) : 1.0);
  double fwd    = full_causal / (double)d->cp;
  o.flops       = backward ? 2.5 * fwd : fwd;
  o.saved_bytes = saved;
  g_array_append_val(out, o);
}

/* One of the unfused paths' PyTorch kernels (ops.h), `kernels` launches, priced at the bandwidth
 * measured for it against a copy at this sequence length. */
static void push_torch(GArray *out, const Dims *d, const char *name, PnPhase phase, PnTorchKernel kernel, double bytes,
                       int kernels, double saved)
{
  push_mem(out, name, phase, bytes, saved);
  PnOp *o         = &g_array_index(out, PnOp, out->len - 1);
  o->torch_kernel = (uint8_t)(kernel + 1);
  o->kernels      = (uint8_t)kernels;
  o->seq_q        = d->s;
}

/* The last op appended stands for `kernels` kernels. */
static void set_kernels(GArray *out, int kernels) { g_array_index(out, PnOp, out->len - 1).kernels = (uint8_t)kernels; }

/* A bias's gradient as its own reduction over the rows of the output gradient (2 B per element
 * read, the bias written): Megatron-Core builds proj, fc1 and fc2 with skip_bias_add, so TE
 * computes no dbias in the GEMM (transformer/mlp.py, attention.py; TE module/linear.py); fc1's
 * bias gradient leaves the bias-GeLU / SwiGLU backward whole and autograd sums it (a memset and
 * a reduction: fusions/fused_bias_gelu.py), proj's and fc2's are reduced in the compiled
 * bias-dropout-add's backward (two kernels). qkv's is fused into TE's wgrad GEMM. */
static void push_dbias(GArray *out, const Dims *d, const char *name, PnPhase phase, double rows, double width)
{
  if (!d->bias)
    return;
  push_mem(out, name, phase, rows * width * 2.0 + width * 4.0, 0.0);
  set_kernels(out, 2);
}

/* Megatron's DDP hook adds each 1-D parameter's gradient into main_grad (`main_grad.add_(grad)`,
 * distributed/distributed_data_parallel.py: the norms' weights and biases and the linear biases
 * have no wgrad GEMM to accumulate into it): one small kernel each, per layer backward. */
static void push_param_grad_adds(GArray *out, const Dims *d, PnPhase phase)
{
  int n        = d->layernorm ? 4 : 2;
  double elems = (double)n * (double)d->h;
  if (d->mla && d->qk_ln) { /* MLA's latent norms (RMSNorm weights) */
    n += d->qlr > 0 ? 2 : 1;
    elems += (double)(d->qlr + d->kvlr);
  }
  if (d->qk_norm) { /* the q and k norms' weights (and biases) */
    n += d->layernorm ? 4 : 2;
    elems += (double)d->kvc * (d->layernorm ? 4.0 : 2.0);
  }
  if (d->bias) { /* MLA's projections have no bias */
    n += d->mla ? 3 : 4;
    elems += (double)(d->mla ? 0 : d->q_tp + 2 * d->kv_tp) + 2.0 * (double)d->h + (double)d->fc1_tp;
  }
  double mg = d->main_grad_dt == PN_DT_FP32 ? 4.0 : 2.0;
  push_mem(out, "param_grad_adds", phase, elems * (2.0 + 2.0 * mg), 0.0);
  set_kernels(out, n);
}

/* A strided-batched bf16 GEMM of `batch` matrices (torch.bmm / baddbmm): one kernel. */
static void push_bmm(GArray *out, const char *name, PnPhase phase, int64_t batch, int64_t m, int64_t n, int64_t k,
                     double saved)
{
  push_gemm(out, name, NULL, phase, PN_GEMM_NONE, PN_DT_BF16, m, n, k, saved);
  PnOp *o  = &g_array_index(out, PnOp, out->len - 1);
  o->batch = batch;
  o->flops *= (double)batch;
}

/* Elements of the [B, s, s] attention scores of this GPU (B = micro-batch x heads / TP). */
static double unfused_scores(const Dims *d)
{
  return (double)d->b * (double)(d->heads / d->tp) * (double)d->s * (double)d->s;
}

/* What Megatron-Core's DotProductAttention forward keeps for its backward: q and the k, v the
 * GEMMs read (expanded over the query groups), the probabilities (softmax's output), with dropout
 * its 1-byte mask and the dropped probabilities (the second GEMM's input), and the context, which
 * the projection keeps as its input. */
static double unfused_attn_saved(const Dims *d)
{
  double q = (double)d->T * (double)d->q_tp, sc = unfused_scores(d);
  return q * 2.0 * 4.0 + sc * 2.0 + (d->attn_dropout ? sc * 3.0 : 0.0);
}

/* DotProductAttention forward (ops.h, "Unfused attention"); the first op carries `saved`. */
static void push_attn_unfused_fwd(GArray *out, const Dims *d, PnPhase phase, double saved)
{
  int64_t B = d->b * (d->heads / d->tp), s = d->s;
  double sc = unfused_scores(d), q = (double)d->T * (double)d->q_tp;
  bool gqa = d->groups < d->heads;
  if (gqa)
    push_torch(out, d, "attn_kv_repeat", phase, PN_TK_REPEAT_INTERLEAVE, 2.0 * 4.0 * q, 2, saved);
  push_bmm(out, "attn_qk", phase, B, s, s, d->kvc, gqa ? 0.0 : saved);
  if (d->softmax_fused) {
    push_mem(out, "attn_softmax", phase, sc * 4.0, 0.0);
  } else {
    push_torch(out, d, "attn_mask_fill", phase, PN_TK_MASKED_FILL, sc * 4.0 + (double)s * (double)s, 1, 0.0);
    push_torch(out, d, "attn_softmax", phase, PN_TK_SOFTMAX_FWD, sc * 4.0, 1, 0.0);
  }
  if (d->attn_dropout) {
    push_torch(out, d, "attn_dropout", phase, PN_TK_DROPOUT_FWD, sc * 5.0, 1, 0.0);
    mark_rng(out, true);
  }
  push_bmm(out, "attn_pv", phase, B, s, d->kvc, s, 0.0);
  push_torch(out, d, "attn_context_copy", phase, PN_TK_CONTEXT_COPY, 4.0 * q, 1, 0.0);
}

/* Its backward, as autograd runs it. */
static void push_attn_unfused_bwd(GArray *out, const Dims *d, PnPhase B_)
{
  int64_t B = d->b * (d->heads / d->tp), s = d->s;
  double sc = unfused_scores(d), q = (double)d->T * (double)d->q_tp, kv = (double)d->T * (double)d->kv_tp;
  push_bmm(out, "attn_dp", B_, B, s, s, d->kvc, 0.0);
  push_bmm(out, "attn_dv", B_, B, s, d->kvc, s, 0.0);
  if (d->attn_dropout) {
    push_torch(out, d, "attn_dropout_bwd", B_, PN_TK_DROPOUT_BWD, sc * 5.0, 1, 0.0);
    mark_rng(out, true);
  }
  if (d->softmax_fused) {
    push_mem(out, "attn_softmax_bwd", B_, sc * 6.0, 0.0);
  } else {
    /* softmax's backward is two kernels (an elementwise product, then the reduction kernel),
     * both in the measured row */
    push_torch(out, d, "attn_softmax_bwd", B_, PN_TK_SOFTMAX_BWD, sc * 6.0, 2, 0.0);
    /* masked_fill_ ran in place on a view of baddbmm's output, so autograd goes through
     * AsStridedBackward and CopySlices (torch.profiler of the module on the H100,
     * hwprofiles/calibration/h100-sxm/unfused_attn_module.json): a zero-filled base gradient
     * (2 B / score) and five device-to-device copies of the scores' gradient (4 B / score each)
     * at a copy's bandwidth, and masked_fill's backward as an in-place masked_fill_ on the copy
     * (the forward's kernel, at its speed) */
    push_mem(out, "attn_inplace_view_bwd", B_, sc * (2.0 + 5.0 * 4.0), 0.0);
    set_kernels(out, 6);
    push_torch(out, d, "attn_mask_fill_bwd", B_, PN_TK_MASKED_FILL, sc * 4.0 + (double)s * (double)s, 1, 0.0);
  }
  push_bmm(out, "attn_dq", B_, B, s, d->kvc, s, 0.0);
  push_bmm(out, "attn_dk", B_, B, s, d->kvc, s, 0.0);
  /* baddbmm's backward scales both gradients by alpha (a multiply each, maybe_multiply) */
  push_mem(out, "attn_scale_bwd", B_, 2.0 * 4.0 * q, 0.0);
  set_kernels(out, 2);
  if (d->groups < d->heads) { /* repeat_interleave's backward sums the copies of k and v */
    push_mem(out, "attn_kv_repeat_bwd", B_, 2.0 * (2.0 * q + 2.0 * kv), 0.0);
    set_kernels(out, 2);
  }
}

/* qk_layernorm without MLA (attention.py get_query_key_value_tensors): TENorm over each query
 * and key head after the qkv split, before the rope (Qwen3): read 2 B, write 2 B per element,
 * keeping its input and its per-head statistics (fp32). */
static void push_qk_norms(GArray *out, const Dims *d, PnPhase phase, double keep)
{
  if (!d->qk_norm)
    return;
  double q = (double)d->T * (double)d->q_tp, k = (double)d->T * (double)d->kv_tp;
  push_mem(out, "q_norm", phase, q * 4.0, keep * (q * 2.0 + q / (double)d->kvc * 4.0));
  push_mem(out, "k_norm", phase, k * 4.0, keep * (k * 2.0 + k / (double)d->kvc * 4.0));
}

/* The rotary embedding of q and k: TE's fused kernel (read + write, 4 B per element), or without
 * apply_rope_fusion Megatron-Core's _apply_rotary_pos_emb_bshd per tensor: t * cos, the negated
 * half, the cat of rotate_half, * sin, the sum and the final cat with the pass-through part, 24 B per
 * element over 6 kernels, plus the cos / sin of the [s, d] frequencies (6 small kernels); its
 * autograd backward likewise. */
static void push_rope(GArray *out, const Dims *d, PnPhase phase, bool backward)
{
  double elems = (double)d->T * (double)(d->q_tp + d->kv_tp);
  if (!d->rope_unfused) {
    push_mem(out, backward ? "rope_bwd" : "rope", phase, elems * 4.0, 0.0);
    return;
  }
  push_torch(out, d, backward ? "rope_bwd" : "rope", phase, backward ? PN_TK_ROPE_BWD : PN_TK_ROPE_FWD, elems * 24.0,
             backward ? 12 : 24, 0.0);
}

/* Activation bytes the core attention keeps: q, k, v (bf16, after rope) and o + LSE. */
static double attn_qkv_bytes(const Dims *d) { return (double)d->T * (double)(d->q_tp + d->k_tp + d->v_tp) * 2.0; }
static double attn_o_lse_bytes(const Dims *d)
{
  return (double)d->T * (double)d->o_tp * 2.0 + (double)d->T * (double)(d->heads / d->tp) * 4.0;
}

/* The bias-dropout-add after the attention and after the MLP (fusions/fused_bias_dropout.py):
 * with bias_dropout_fusion, one compiled kernel, 6 B per element (+1 for dropout's mask); without
 * it, _bias_dropout_add_func runs eagerly: x + bias (4 B, with biases), torch's dropout (5 B with
 * its mask, only when hidden_dropout > 0) and residual + out (6 B). The mask is what it keeps. */
static void push_bda(GArray *out, const Dims *d, const char *bias_name, const char *drop_name, const char *add_name,
                     PnPhase phase, double keep)
{
  const double hsp = (double)d->Tsp * (double)d->h;
  if (!d->bda_unfused) {
    push_mem(out, add_name, phase, hsp * (6.0 + (d->dropout ? 1.0 : 0.0)), keep * (d->dropout ? hsp : 0.0));
    mark_rng(out, d->dropout);
    return;
  }
  if (d->bias)
    push_mem(out, bias_name, phase, hsp * 4.0, 0.0);
  if (d->dropout) {
    push_mem(out, drop_name, phase, hsp * 5.0, keep * hsp);
    mark_rng(out, true);
  }
  push_mem(out, add_name, phase, hsp * 6.0, 0.0);
}

/* Selective recompute (recompute_granularity "selective") as Megatron-Core applies each of its
 * recompute_modules to a layer (transformer/transformer_layer.py, attention.py, moe/experts.py,
 * moe/moe_layer.py, moe/shared_experts.py): a checkpointed piece keeps its input, drops what its
 * ops would keep for the backward, and runs its forward again when autograd reaches it.
 *   core_attn: the core attention (its q, k, v kept); layernorm: the norms that are modules of
 *   their own (the local layers' two, and a MoE layer's pre-MLP norm; Transformer Engine fuses the
 *   others into qkv / fc1), their output dropped, re-run before the first op needing it back;
 *   moe_act: the experts' activation (with the GLU clamps), the fc2 input dropped, re-run before
 *   fc2's backward; mlp: a dense layer's whole MLP (its TP collectives too); moe: the whole MoE
 *   block from the router to the combine (its all-to-alls too); shared_experts: the shared
 *   experts' MLP; mla_up_proj: MLA's up projections and rope (mla_qkv_forward). With MLA the input
 *   norm is a module of its own too. */
typedef struct {
  bool attn, ln1, ln2, moe_act, mlp, moe, shared, up;
} Rc;

static Rc rc_of(const Dims *d, PnRecomputeGranularity gran)
{
  Rc r = {0};
  if (gran != PN_RECOMPUTE_SELECTIVE)
    return r;
  uint32_t m = d->rc_modules;
  r.attn     = m & PN_RECOMPUTE_MODULE_CORE_ATTN;
  r.ln1      = (m & PN_RECOMPUTE_MODULE_LAYERNORM) && (d->norms_separate || d->mla);
  r.ln2      = (m & PN_RECOMPUTE_MODULE_LAYERNORM) && (d->norms_separate || d->moe) && !d->ln2_rc_blocked;
  r.moe_act  = (m & PN_RECOMPUTE_MODULE_MOE_ACT) && d->moe;
  r.mlp      = (m & PN_RECOMPUTE_MODULE_MLP) && !d->moe;
  r.moe      = (m & PN_RECOMPUTE_MODULE_MOE) && d->moe;
  r.shared   = (m & PN_RECOMPUTE_MODULE_SHARED_EXPERTS) && d->moe && d->sf_tp > 0;
  r.up       = (m & PN_RECOMPUTE_MODULE_MLA_UP_PROJ) && d->mla;
  return r;
}

/* ---- multi-latent attention ---- */

/* A down projection (TELinear "duplicated" over TP: the same weight on every TP rank, applied to
 * this GPU's sequence-parallel tokens, no communication): [fp8 cast_transpose of its input] GEMM. */
static void mla_down_fwd(GArray *out, const Dims *d, const char *name, const char *cast_name, PnPhase phase, int64_t n,
                         double saved)
{
  if (d->fp8)
    push_cast(out, d, cast_name, phase, (double)d->Tsp * (double)d->h, 4.0, false);
  push_gemm(out, name, NULL, phase, PN_GEMM_FPROP, d->gemm_dt, d->Tsp, n, d->h, saved);
}

static void mla_down_bwd(GArray *out, const Dims *d, const char *dgrad_name, const char *wgrad_name,
                         const char *cast_name, PnPhase phase, int64_t n)
{
  if (d->fp8)
    push_cast(out, d, cast_name, phase, (double)d->Tsp * (double)n, 4.0, false);
  push_dgrad(out, dgrad_name, NULL, phase, d->gemm_dt, d->Tsp, n, d->h);
  push_wgrad(out, d, wgrad_name, NULL, phase, d->gemm_dt, d->Tsp, n, d->h, 1, true);
}

/* An up projection of a `kin`-wide latent to `n` columns on this GPU (column parallel): with
 * qk_layernorm a TE LayerNormLinear, its RMSNorm over the local tokens keeping its input and
 * statistics, else a TE Linear casting its input for fp8; then the all-gather (SP) and the GEMM.
 * `keep` scales what it keeps (0 under mla_up_proj recompute). */
static void mla_up_fwd(GArray *out, const Dims *d, const char *name, const char *norm_name, const char *ag_name,
                       const char *cast_name, PnPhase phase, int64_t n, int64_t kin, double keep)
{
  double elems = (double)d->Tsp * (double)kin;
  if (d->qk_ln && norm_name) {
    push_mem(out, norm_name, phase, elems * (2.0 + d->norm_e), keep * (elems * 2.0 + (double)d->Tsp * 4.0));
    push_column_fwd_k(out, d, name, ag_name, NULL, cast_name, phase, n, kin, keep * elems * d->e);
    return;
  }
  if (d->fp8)
    push_cast(out, d, cast_name, phase, elems, 4.0, d->sp);
  push_column_fwd_k(out, d, name, ag_name, NULL, NULL, phase, n, kin, keep * elems * d->e);
}

/* Width of linear_kv_up_proj's output on this GPU: each head's no-rope key and value. */
static int64_t mla_kv_up_tp(const Dims *d) { return d->heads / d->tp * (d->nope + d->vd); }

/* MLA's projections on this GPU in registration order (MLASelfAttention.__init__, after
 * linear_proj): linear_q_proj, or linear_q_down_proj and linear_q_up_proj; linear_kv_down_proj,
 * linear_kv_up_proj. `norm`: its latent norm (qk_layernorm, TE LayerNormLinear's
 * layer_norm_weight, registered first); fwd / bwd: the ops its forward starts and backward ends with. */
typedef struct {
  const char *weight, *norm_weight, *fwd_op, *bwd_op, *cast;
  int64_t in, out;
} MlaLinear;

static int mla_linears(const Dims *d, MlaLinear l[4])
{
  int n = 0;
  if (d->qlr == 0) {
    l[n++] = (MlaLinear){
        "self_attention.linear_q_proj.weight", NULL, "q_proj", "q_proj_wgrad", "q_proj_weight_cast", d->h, d->q_tp};
  } else {
    l[n++] = (MlaLinear){
        "self_attention.linear_q_down_proj.weight", NULL, "q_down", "q_down_wgrad", "q_down_weight_cast", d->h, d->qlr};
    l[n++] = (MlaLinear){"self_attention.linear_q_up_proj.weight",
                         d->qk_ln ? "self_attention.linear_q_up_proj.layer_norm_weight" : NULL,
                         d->qk_ln ? "q_norm" : "q_up",
                         d->qk_ln ? "q_norm_bwd" : "q_up_wgrad",
                         "q_up_weight_cast",
                         d->qlr,
                         d->q_tp};
  }
  l[n++] = (MlaLinear){"self_attention.linear_kv_down_proj.weight",
                       NULL,
                       "kv_down",
                       "kv_down_wgrad",
                       "kv_down_weight_cast",
                       d->h,
                       d->kvlr + d->pe};
  l[n++] = (MlaLinear){"self_attention.linear_kv_up_proj.weight",
                       d->qk_ln ? "self_attention.linear_kv_up_proj.layer_norm_weight" : NULL,
                       d->qk_ln ? "kv_norm" : "kv_up",
                       d->qk_ln ? "kv_norm_bwd" : "kv_up_wgrad",
                       "kv_up_weight_cast",
                       d->kvlr,
                       mla_kv_up_tp(d)};
  return n;
}

/* The weights of the attention's input projections on this GPU (qkv, or MLA's). */
static double attn_in_weights(const Dims *d)
{
  if (!d->mla)
    return (double)d->h * (double)(d->q_tp + 2 * d->kv_tp);
  MlaLinear l[4];
  double w = 0.0;
  for (int i = 0, n = mla_linears(d, l); i < n; i++)
    w += (double)l[i].in * (double)l[i].out;
  return w;
}

/* The rope of the query's and the shared key's rope parts and the assembly of the query, key and
 * value heads: with apply_rope_fusion fused_apply_mla_rope_for_q (reads q, writes the query) and
 * _for_kv (reads the up projection's output and the rope key, writes key and value); without it
 * apply_rotary_pos_emb on q_pos_emb and k_pos_emb (push_rope's kernels) and torch.cat of the query,
 * of the key (the rope key expanded over the heads), and value.contiguous() (a split's view). Its
 * backward moves as much. */
static void mla_rope(GArray *out, const Dims *d, PnPhase phase, bool backward)
{
  double T = (double)d->T, q = T * (double)d->q_tp, k = T * (double)d->k_tp, v = T * (double)d->v_tp;
  double kv = T * (double)mla_kv_up_tp(d), kpe = T * (double)d->pe;
  if (!d->rope_unfused) {
    push_mem(out, backward ? "mla_rope_q_bwd" : "mla_rope_q", phase, q * 4.0, 0.0);
    push_mem(out, backward ? "mla_rope_kv_bwd" : "mla_rope_kv", phase, (kv + kpe + k + v) * 2.0, 0.0);
    return;
  }
  double rot = T * (double)(d->heads / d->tp * d->pe) + kpe;
  push_torch(out, d, backward ? "rope_bwd" : "rope", phase, backward ? PN_TK_ROPE_BWD : PN_TK_ROPE_FWD, rot * 24.0,
             backward ? 12 : 24, 0.0);
  push_mem(out, backward ? "mla_q_cat_bwd" : "mla_q_cat", phase, q * 4.0, 0.0);
  push_mem(out, backward ? "mla_k_cat_bwd" : "mla_k_cat", phase, k * 4.0, 0.0);
  push_mem(out, backward ? "mla_v_copy_bwd" : "mla_v_copy", phase, v * 4.0, 0.0);
}

/* The up projections and the rope: what mla_up_proj recompute checkpoints. */
static void mla_up_forward(GArray *out, const Dims *d, PnPhase phase, double keep)
{
  if (d->qlr > 0)
    mla_up_fwd(out, d, "q_up", "q_norm", "q_up_ag", "q_up_in_cast", phase, d->q_tp, d->qlr, keep);
  else /* linear_q_proj from the input norm's output, which the down projection keeps in bf16 */
    mla_up_fwd(out, d, "q_proj", NULL, "q_proj_ag", "q_proj_in_cast", phase, d->q_tp, d->h, d->fp8 ? keep : 0.0);
  mla_up_fwd(out, d, "kv_up", "kv_norm", "kv_up_ag", "kv_up_in_cast", phase, mla_kv_up_tp(d), d->kvlr, keep);
  mla_rope(out, d, phase, false);
}

/* Multi-latent attention's query, key and value (MLASelfAttention.get_query_key_value_tensors, the
 * Transformer Engine layer spec without mla_down_proj_fusion, gpt_layer_specs.py): the input norm
 * is a module of its own (a bf16 output); linear_q_down_proj and linear_kv_down_proj run on this
 * GPU's tokens; the rope key (qk_pos_emb_head_dim wide, one for all heads) is all-gathered over
 * the sequence with SP (gather_from_sequence_parallel_region); then the up projections and the
 * rope. Under mla_up_proj recompute (CheckpointWithoutOutput) those keep nothing and their outputs
 * are freed once the attention ran: the checkpoint keeps its inputs, the two latents and the
 * gathered rope key, charged to the down projections. */
static void mla_qkv_forward(GArray *out, const Dims *d, PnPhase phase, double keep, const Rc *rc, bool full)
{
  const double hsp = (double)d->Tsp * (double)d->h;
  push_norm_fwd(out, d, "ln1", phase, 2.0, full || rc->ln1 ? hsp * 2.0 : hsp * 2.0 + norm_stats_bytes(d));
  /* the down projections' input as each keeps it: its own fp8 copy, or the one bf16 norm output
   * (dropped under layernorm recompute) */
  double in_bf16 = rc->ln1 ? 0.0 : keep * hsp * 2.0, in_fp8 = keep * hsp;
  int64_t kvw = d->kvlr + d->pe;
  double ckpt = rc->up ? keep : 0.0;
  if (d->qlr > 0)
    mla_down_fwd(out, d, "q_down", "q_down_in_cast", phase, d->qlr,
                 (d->fp8 ? in_fp8 : in_bf16) + ckpt * (double)d->Tsp * (double)d->qlr * 2.0);
  mla_down_fwd(out, d, "kv_down", "kv_down_in_cast", phase, kvw,
               (d->fp8 ? in_fp8 : (d->qlr > 0 ? 0.0 : in_bf16)) +
                   ckpt * ((double)d->Tsp * (double)kvw * 2.0 + (double)d->T * (double)d->pe * 2.0));
  if (d->sp)
    push_comm(out, "kv_pe_ag", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_TP, (double)d->T * (double)d->pe * 2.0,
              PN_DT_BF16);
  mla_up_forward(out, d, phase, rc->up ? 0.0 : keep);
}

static void mla_up_bwd(GArray *out, const Dims *d, const char *prefix_dgrad, const char *prefix_wgrad,
                       const char *cast_name, const char *ag_name, const char *tr_name, const char *rs_name,
                       const char *norm_bwd, int64_t n, int64_t kin)
{
  /* TE's asynchronous all-gather beside the dgrad and reduce-scatter beside the wgrad, as for qkv
   * without userbuffers (sched/tp_slots.c); MLA's userbuffers slots are not simulated */
  push_column_bwd_k(out, d, prefix_dgrad, prefix_wgrad, cast_name, ag_name, tr_name, rs_name, "mla_up_dgrad",
                    "mla_up_wgrad", PN_PHASE_BWD, n, kin);
  if (d->qk_ln && norm_bwd) {
    push_mem(out, norm_bwd, PN_PHASE_BWD, (double)d->Tsp * (double)kin * 6.0, 0.0);
    set_kernels(out, 2);
  }
}

/* Backward of mla_qkv_forward, from the attention's input gradients to the layer input's: the rope
 * and assembly, each up projection (its all-gather of the saved latent and its dgrad's
 * reduce-scatter with SP), the rope key's reduce-scatter, the down projections, the sum of their
 * input gradients, the input norm. */
static void mla_qkv_backward(GArray *out, const Dims *d, const Rc *rc)
{
  const PnPhase B  = PN_PHASE_BWD;
  const double hsp = (double)d->Tsp * (double)d->h;
  int64_t kvw      = d->kvlr + d->pe;
  mla_rope(out, d, B, true);
  mla_up_bwd(out, d, "kv_up_dgrad", "kv_up_wgrad", "kv_up_dy_cast", "kv_up_dgrad_ag", "kv_up_in_transpose",
             "kv_up_dgrad_rs", "kv_norm_bwd", mla_kv_up_tp(d), d->kvlr);
  if (d->sp)
    push_comm(out, "kv_pe_rs", NULL, B, PN_COLL_REDUCE_SCATTER, PN_GROUP_TP, (double)d->T * (double)d->pe * 2.0,
              PN_DT_BF16);
  if (d->qlr > 0)
    mla_up_bwd(out, d, "q_up_dgrad", "q_up_wgrad", "q_up_dy_cast", "q_up_dgrad_ag", "q_up_in_transpose",
               "q_up_dgrad_rs", "q_norm_bwd", d->q_tp, d->qlr);
  if (rc->ln1) /* the input norm's output, dropped, is wanted back by the down projections' wgrads */
    push_norm_fwd(out, d, "ln1", PN_PHASE_RECOMPUTE, 2.0, hsp * 2.0 + norm_stats_bytes(d));
  if (d->qlr == 0)
    mla_up_bwd(out, d, "q_proj_dgrad", "q_proj_wgrad", "q_proj_dy_cast", "q_proj_dgrad_ag", "q_proj_in_transpose",
               "q_proj_dgrad_rs", NULL, d->q_tp, d->h);
  /* kv_combined's gradient is the concatenation of the latent's and the rope key's */
  push_mem(out, "kv_down_dy_cat", B, (double)d->Tsp * (double)kvw * 4.0, 0.0);
  mla_down_bwd(out, d, "kv_down_dgrad", "kv_down_wgrad", "kv_down_dy_cast", B, kvw);
  if (d->qlr > 0)
    mla_down_bwd(out, d, "q_down_dgrad", "q_down_wgrad", "q_down_dy_cast", B, d->qlr);
  push_mem(out, "mla_dx_add", B, hsp * 6.0, 0.0); /* autograd sums the norm output's two gradients */
  push_norm_bwd(out, d, "ln1_bwd", "residual_grad_add", B);
}

/* ---- mixture of experts (ops.h) ---- */

static bool moe_permute_separate(const Dims *d) { return d->dispatcher != PN_MOE_DISPATCHER_FLEX; }

/* Bytes of the tokens one GPU sends to (receives from) the experts: its routed rows (Tm*topk, or
 * as the capacity drops or pads them) of h, bf16. */
static double moe_a2a_bytes(const Dims *d) { return (double)d->routed * (double)d->h * 2.0; }

/* allgather dispatcher: the hidden states of the etp*ep group, gathered (and reduce-scattered back). */
static double moe_ag_bytes(const Dims *d) { return (double)d->Tm * (double)d->h * 2.0 * (double)(d->etp * d->ep); }

/* The ops appended since `from` run on the shared-expert stream. */
static void mark_side(GArray *out, guint from)
{
  for (guint i = from; i < out->len; i++)
    g_array_index(out, PnOp, i).side = true;
}

/* The last op appended waits for the side ops before it. */
static void mark_join_side(GArray *out) { g_array_index(out, PnOp, out->len - 1).join_side = true; }

/* Shared experts: a dense TP MLP beside the routed experts (SharedExpertMLP). */
static void moe_shared_forward(GArray *out, const Dims *d, PnPhase phase, double keep)
{
  if (d->sf_tp <= 0)
    return;
  const double hsp = (double)d->Tsp * (double)d->h;
  push_column_fwd(out, d, "shared_fc1", "shared_fc1_ag", NULL, NULL, phase, d->sfc1_tp, keep * hsp * d->e);
  double f_out = (double)d->T * (double)d->sf_tp;
  push_mem(out, "shared_act", phase, f_out * (d->swiglu ? 6.0 : 4.0), keep * (double)d->T * (double)d->sfc1_tp * 2.0);
  push_row_fwd(out, d, "shared_fc2", "shared_fc2_in_cast", "shared_fc2_rs", NULL, phase, d->sf_tp,
               keep * f_out * (d->fp8 ? 1.0 : 2.0));
}

static void moe_shared_backward(GArray *out, const Dims *d, PnPhase B)
{
  if (d->sf_tp <= 0)
    return;
  push_row_bwd(out, d, "shared_fc2_dgrad", "shared_fc2_wgrad", "shared_fc2_dy_cast", "shared_fc2_dgrad_ag",
               "shared_fc2_dy_transpose", NULL, NULL, B, d->sf_tp);
  push_mem(out, "shared_act_bwd", B, (double)d->T * (double)d->sf_tp * (d->swiglu ? 10.0 : 6.0), 0.0);
  push_column_bwd(out, d, "shared_fc1_dgrad", "shared_fc1_wgrad", "shared_fc1_dy_cast", "shared_fc1_dgrad_ag",
                  "shared_fc1_in_transpose", "shared_fc1_wgrad_rs", NULL, NULL, B, d->sfc1_tp);
}

/* The experts' second linear returns its bias (skip_bias_add) and TEGroupedMLP._apply_bias adds it
 * in Python, expert by expert (moe/experts.py): the output split per local expert, each chunk
 * `t + bias * probs` (a multiply and an add), then a concatenation: 2 kernels per expert and one,
 * about 10 B per output element (chunks read and written, the probabilities read, the
 * concatenation read and written). Its backward: per expert the bias gradient (grad * probs, then
 * a reduction over the rows) and the probabilities' gradient (grad * bias, a row reduction): 4
 * kernels per expert, the output gradient read twice: 8 B per element. Measured on one H100 as
 * PyTorch runs Megatron-Core's code (GPT-OSS-120B's shapes): 1.06 ms forward, 3.0 ms with the
 * backward, at 65,536 rows of 2,880 over 16 experts. */
static void push_expert_bias(GArray *out, const Dims *d, PnPhase phase, bool backward)
{
  if (!d->bias)
    return;
  double rh = (double)d->R * (double)d->h;
  push_mem(out, backward ? "moe_fc2_bias_bwd" : "moe_fc2_bias", phase, rh * (backward ? 8.0 : 10.0), 0.0);
  set_kernels(out, (int)MIN(255, backward ? 4 * d->L : 2 * d->L + 1));
}

/* The clamps of the experts' GLU halves (activation_func_clamp_value, GPT-OSS): Megatron-Core's
 * weighted_bias_quick_geglu_impl (fusions/fused_bias_geglu.py) chunks the fc1 output, clamps the
 * gate half from above and the linear half on both sides and concatenates them before its fused
 * kernel: 3 kernels, 16 B per element of a half (each clamp reads and writes a half, the cat reads
 * both and writes the whole); the clamps keep their input (the fc1 output) for the backward. Its
 * autograd backward: each clamp's mask and masked gradient, the chunk's backward concatenating the
 * two (9 kernels on PyTorch 2.11), counted 20 B per element. Priced at their measured ratio to a
 * copy (microbench mb_torch_mem.py glu_clamp: 0.63 and 0.40 on an H100). The unfused activation
 * path clamps the same way without the forward's cat; it is priced alike. */
static void push_glu_clamp(GArray *out, const Dims *d, PnPhase phase, bool backward, double keep)
{
  if (!d->glu_clamp)
    return;
  double half = (double)d->R * (double)d->mf;
  push_torch(out, d, backward ? "moe_act_clamp_bwd" : "moe_act_clamp", phase,
             backward ? PN_TK_GLU_CLAMP_BWD : PN_TK_GLU_CLAMP_FWD, half * (backward ? 20.0 : 16.0), backward ? 9 : 3,
             backward ? 0.0 : keep * half * 4.0);
  g_array_index(out, PnOp, out->len - 1).seq_q = d->R; /* the curve's x: rows */
}

/* The MoE block from the router to the combine (MoELayer.forward): `keep` scales what its ops keep
 * for the backward, `rc` its own checkpointed pieces. */
static void moe_body(GArray *out, const Dims *d, PnPhase phase, double keep, const Rc *rc)
{
  const double hm = (double)d->Tm * (double)d->h, rh = (double)d->R * (double)d->h;
  const bool a2a  = d->dispatcher != PN_MOE_DISPATCHER_ALLGATHER;
  const double sk = rc->shared ? 0.0 : keep;  /* checkpointed shared experts keep nothing */
  const double ak = rc->moe_act ? 0.0 : keep; /* a checkpointed activation: the fc2 input dropped */
  /* pre_dispatch_computation: shared experts, router, permutation; the router keeps the norm's
   * output unless the norm is recomputed */
  if (!d->shared_overlap)
    moe_shared_forward(out, d, phase, sk);
  push_gemm(out, "router", NULL, phase, PN_GEMM_FPROP, PN_DT_BF16, d->Tm, d->E, d->h, rc->ln2 ? 0.0 : keep * hm * 2.0);
  push_mem(out, "router_topk", phase, (double)d->Tm * (double)d->E * 12.0, keep * (double)d->Tm * (double)d->E * 4.0);
  /* the dispatcher's token counts, but for the alltoall dispatcher's drop and pad (static sizes) */
  g_array_index(out, PnOp, out->len - 1).host_reads = !(d->drop_and_pad && d->dispatcher == PN_MOE_DISPATCHER_ALLTOALL);
  if (a2a && moe_permute_separate(d))
    push_mem(out, "permute", phase, hm * 2.0 + (double)d->routed * (double)d->h * 2.0, 0.0);
  if (d->shared_overlap) {
    guint side = out->len;
    moe_shared_forward(out, d, phase, sk);
    mark_side(out, side);
  }

  guint node = out->len;
  if (a2a) {
    push_comm(out, "moe_dispatch_a2a", NULL, phase, PN_COLL_ALL_TO_ALL, PN_GROUP_EP, moe_a2a_bytes(d), PN_DT_BF16);
    if (d->etp > 1)
      push_comm(out, "moe_dispatch_ag", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_ETP, rh * 2.0, PN_DT_BF16);
  } else {
    push_comm(out, "moe_dispatch_ag", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_EP, moe_ag_bytes(d), PN_DT_BF16);
  }
  tag_node(out, node, PN_NODE_DISPATCH);

  node = out->len;
  if (!a2a)
    push_mem(out, "permute", phase, rh * 4.0, 0.0);
  else if (d->ep > 1 && d->L > 1)
    push_mem(out, "sort_chunks", phase, rh * 4.0, 0.0);
  if (d->fp8)
    push_cast(out, d, "moe_fc1_in_cast", phase, rh, 4.0, false);
  push_gemm(out, "moe_fc1", NULL, phase, PN_GEMM_FPROP, d->gemm_dt, d->rows_e, d->mfc1, d->h, keep * rh * d->e);
  make_grouped(out, d->L);
  double act_in = (double)d->R * (double)d->mf;
  push_glu_clamp(out, d, phase, false, ak);
  /* the fc1 output: what the activation keeps, or the checkpoint's input */
  push_mem(out, "moe_act", phase, act_in * (d->swiglu ? 6.0 : 4.0), keep * (double)d->R * (double)d->mfc1 * 2.0);
  if (d->fp8)
    push_cast(out, d, "moe_fc2_in_cast", phase, act_in, 4.0, false);
  push_gemm(out, "moe_fc2", NULL, phase, PN_GEMM_FPROP, d->gemm_dt, d->rows_e, d->h, d->mf,
            ak * act_in * (d->fp8 ? 1.0 : 2.0));
  make_grouped(out, d->L);
  push_expert_bias(out, d, phase, false);
  if (!a2a)
    push_mem(out, "unpermute", phase, rh * 4.0, 0.0);
  else if (d->ep > 1 && d->L > 1)
    push_mem(out, "unsort_chunks", phase, rh * 4.0, 0.0);
  tag_node(out, node, PN_NODE_MLP);

  node = out->len;
  if (a2a) {
    if (d->etp > 1)
      push_comm(out, "moe_combine_rs", NULL, phase, PN_COLL_REDUCE_SCATTER, PN_GROUP_ETP, rh * 2.0, PN_DT_BF16);
    push_comm(out, "moe_combine_a2a", NULL, phase, PN_COLL_ALL_TO_ALL, PN_GROUP_EP, moe_a2a_bytes(d), PN_DT_BF16);
    if (moe_permute_separate(d))
      push_mem(out, "unpermute", phase, (double)d->routed * (double)d->h * 2.0 + hm * 2.0, 0.0);
    if (d->shared_overlap)
      mark_join_side(out); /* the shared experts' output is added here */
  } else {
    push_comm(out, "moe_combine_rs", NULL, phase, PN_COLL_REDUCE_SCATTER, PN_GROUP_EP, moe_ag_bytes(d), PN_DT_BF16);
  }
  tag_node(out, node, PN_NODE_COMBINE);
}

/* The MoE half of a layer: the pre-MLP norm, the MoE block, the bias-dropout-add. */
static void moe_forward(GArray *out, const Dims *d, PnPhase phase, double keep, const Rc *rc)
{
  const double hm = (double)d->Tm * (double)d->h;
  /* a recomputed norm keeps its input only; a checkpointed MoE block keeps the norm's output */
  double ln2_saved = rc->ln2 ? hm * 2.0 : hm * 2.0 + norm_stats_bytes(d);
  push_norm_fwd(out, d, "ln2", phase, 2.0, keep * (ln2_saved + (rc->moe && rc->ln2 ? hm * 2.0 : 0.0)));
  moe_body(out, d, phase, rc->moe ? 0.0 : keep, rc);
  guint node = out->len;
  push_bda(out, d, "bias_add2", "dropout2", "dropout_add2", phase, keep);
  if (d->shared_overlap && !moe_permute_separate(d))
    mark_join_side(out); /* flex: no unpermutation kernel; the residual add takes the sum */
  tag_node(out, node, PN_NODE_COMBINE);
}

/* Backward of the MoE half of a layer (the mirror image of moe_forward), then the pre-MLP norm:
 * combine, mlp, dispatch, then the pre_dispatch part (node ATTN, with the attention backward
 * that follows). */
static void moe_backward(GArray *out, const Dims *d, const Rc *rc)
{
  const PnPhase B = PN_PHASE_BWD;
  const double hm = (double)d->Tm * (double)d->h, rh = (double)d->R * (double)d->h;
  const bool a2a   = d->dispatcher != PN_MOE_DISPATCHER_ALLGATHER;
  const double hsp = (double)d->Tsp * (double)d->h;

  guint node = out->len;
  /* the recomputed norm and MoE block run when the block's output gradient arrives, i.e. first:
   * their ops keep what they keep in a plain forward (live while the backward runs) */
  if (rc->ln2)
    push_norm_fwd(out, d, "ln2", PN_PHASE_RECOMPUTE, 2.0, hm * 2.0 + norm_stats_bytes(d));
  if (rc->moe) {
    const Rc inner = {.moe_act = rc->moe_act, .shared = rc->shared, .ln2 = false};
    moe_body(out, d, PN_PHASE_RECOMPUTE, 1.0, &inner);
  }
  tag_node(out, node, PN_NODE_COMBINE);
  if (d->dropout) {
    push_mem(out, "dropout_add2_bwd", B, hsp * 5.0, 0.0);
    mark_rng(out, true);
  }
  if (a2a) {
    if (moe_permute_separate(d))
      push_mem(out, "unpermute_bwd", B, hm * 2.0 + (double)d->routed * (double)d->h * 4.0, 0.0);
    if (d->shared_overlap) {
      guint side = out->len;
      moe_shared_backward(out, d, B);
      mark_side(out, side);
    }
    push_comm(out, "moe_combine_a2a_bwd", NULL, B, PN_COLL_ALL_TO_ALL, PN_GROUP_EP, moe_a2a_bytes(d), PN_DT_BF16);
    if (d->etp > 1)
      push_comm(out, "moe_combine_ag_bwd", NULL, B, PN_COLL_ALL_GATHER, PN_GROUP_ETP, rh * 2.0, PN_DT_BF16);
  } else {
    push_comm(out, "moe_combine_ag_bwd", NULL, B, PN_COLL_ALL_GATHER, PN_GROUP_EP, moe_ag_bytes(d), PN_DT_BF16);
  }
  tag_node(out, node, PN_NODE_COMBINE);

  node = out->len;
  if (!a2a)
    push_mem(out, "unpermute_bwd", B, rh * 6.0, 0.0);
  else if (d->ep > 1 && d->L > 1)
    push_mem(out, "unsort_chunks_bwd", B, rh * 4.0, 0.0);
  double act_in = (double)d->R * (double)d->mf;
  if (d->fp8)
    push_cast(out, d, "moe_fc2_dy_cast", B, rh, 4.0, false);
  push_expert_bias(out, d, B, true);
  if (rc->moe_act) {
    /* the activation's checkpoint re-runs when fc2's output gradient arrives (experts.py:
     * discard_output_and_register_recompute); fc2 saved its original input, cast again for fp8 */
    double act_keep = (double)d->R * (double)d->mfc1 * 2.0;
    push_glu_clamp(out, d, PN_PHASE_RECOMPUTE, false, 1.0);
    push_mem(out, "moe_act", PN_PHASE_RECOMPUTE, act_in * (d->swiglu ? 6.0 : 4.0), act_keep + act_in * 2.0);
    if (d->fp8)
      push_cast(out, d, "moe_fc2_in_cast", PN_PHASE_RECOMPUTE, act_in, 4.0, false);
  }
  push_dgrad(out, "moe_fc2_dgrad", NULL, B, d->gemm_dt, d->rows_e, d->h, d->mf);
  make_grouped(out, d->L);
  push_wgrad(out, d, "moe_fc2_wgrad", NULL, B, d->gemm_dt, d->rows_e, d->h, d->mf, d->L, true);
  push_mem(out, "moe_act_bwd", B, act_in * (d->swiglu ? 10.0 : 6.0), 0.0);
  push_glu_clamp(out, d, B, true, 0.0);
  if (d->fp8)
    push_cast(out, d, "moe_fc1_dy_cast", B, (double)d->R * (double)d->mfc1, 4.0, false);
  push_dgrad(out, "moe_fc1_dgrad", NULL, B, d->gemm_dt, d->rows_e, d->mfc1, d->h);
  make_grouped(out, d->L);
  push_wgrad(out, d, "moe_fc1_wgrad", NULL, B, d->gemm_dt, d->rows_e, d->mfc1, d->h, d->L, true);
  if (!a2a)
    push_mem(out, "permute_bwd", B, rh * 6.0, 0.0);
  else if (d->ep > 1 && d->L > 1)
    push_mem(out, "sort_chunks_bwd", B, rh * 4.0, 0.0);
  tag_node(out, node, PN_NODE_MLP);

  node = out->len;
  if (a2a) {
    if (d->etp > 1)
      push_comm(out, "moe_dispatch_rs_bwd", NULL, B, PN_COLL_REDUCE_SCATTER, PN_GROUP_ETP, rh * 2.0, PN_DT_BF16);
    push_comm(out, "moe_dispatch_a2a_bwd", NULL, B, PN_COLL_ALL_TO_ALL, PN_GROUP_EP, moe_a2a_bytes(d), PN_DT_BF16);
  } else {
    push_comm(out, "moe_dispatch_rs_bwd", NULL, B, PN_COLL_REDUCE_SCATTER, PN_GROUP_EP, moe_ag_bytes(d), PN_DT_BF16);
  }
  tag_node(out, node, PN_NODE_DISPATCH);

  /* pre_dispatch backward (node ATTN): permutation (a scatter-add), router, shared experts, norm */
  if (a2a && moe_permute_separate(d)) {
    push_mem(out, "permute_bwd", B, (double)d->routed * (double)d->h * 2.0 + hm * 4.0, 0.0);
    if (d->shared_overlap)
      mark_join_side(out); /* the input gradient sums both branches */
  }
  push_mem(out, "router_topk_bwd", B, (double)d->Tm * (double)d->E * 12.0, 0.0);
  if (d->shared_overlap && !moe_permute_separate(d))
    mark_join_side(out);
  push_dgrad(out, "router_dgrad", NULL, B, PN_DT_BF16, d->Tm, d->E, d->h);
  push_wgrad(out, d, "router_wgrad", NULL, B, PN_DT_BF16, d->Tm, d->E, d->h, 1, false);
  g_array_index(out, PnOp, out->len - 2).te_wgrad =
      false; /* a torch Linear: not deferred (its main_grad add follows) */
  if (!d->shared_overlap) {
    if (rc->shared)
      moe_shared_forward(out, d, PN_PHASE_RECOMPUTE, 1.0);
    moe_shared_backward(out, d, B);
  }
  push_norm_bwd(out, d, "ln2_bwd", "residual_grad_add2", B);
}

/* A dense layer's MLP (the pre-MLP norm unless `norm_saved` is negative, fc1, the activation,
 * fc2): the norm keeps `norm_saved` bytes, the others `keep` times what they would; fc1 keeps no
 * input when the norm is recomputed (`ln2_rc`: the norm's output is made again). */
static void mlp_forward(GArray *out, const Dims *d, PnPhase phase, double keep, bool ln2_rc, double norm_saved)
{
  const double hsp = (double)d->Tsp * (double)d->h;
  guint mlp        = out->len;
  if (norm_saved >= 0.0)
    push_norm_fwd(out, d, "ln2", phase, d->norm_e, norm_saved);
  push_column_fwd(out, d, "fc1", "fc1_ag", "fc1_fprop", "fc1_in_cast", phase, d->fc1_tp,
                  ln2_rc ? 0.0 : keep * hsp * d->e);
  double fc1_out = (double)d->T * (double)d->f_tp;
  push_mem(out, "act", phase, fc1_out * (d->swiglu ? 6.0 : 4.0), keep * (double)d->T * (double)d->fc1_tp * 2.0);
  if (d->act_unfused && act_unfused_bytes(d, false) > 0.0)
    push_mem(out, "act_unfused", phase, fc1_out * act_unfused_bytes(d, false), 0.0);
  push_row_fwd(out, d, "fc2", "fc2_in_cast", "fc2_rs", "fc2_fprop", phase, d->f_tp,
               keep * fc1_out * (d->fp8 ? 1.0 : 2.0));
  tag_node(out, mlp, PN_NODE_MLP);
}

/* The forward of one layer. `phase` FWD or RECOMPUTE; `gran` decides what FWD ops save. */
static void layer_forward(GArray *out, const Dims *d, PnPhase phase, PnRecomputeGranularity gran)
{
  const bool full  = gran == PN_RECOMPUTE_FULL && phase == PN_PHASE_FWD;
  const Rc rc      = rc_of(d, phase == PN_PHASE_FWD ? gran : PN_RECOMPUTE_NONE);
  const double hsp = (double)d->Tsp * (double)d->h;
  /* Under full recompute the layer keeps only its input, charged to ln1. */
  double keep = full ? 0.0 : 1.0;

  if (d->mla) {
    mla_qkv_forward(out, d, phase, keep, &rc, full);
  } else {
    double ln1_saved = full || rc.ln1 ? hsp * 2.0 : hsp * 2.0 + norm_stats_bytes(d);
    push_norm_fwd(out, d, "ln1", phase, d->norm_e, ln1_saved);
    push_column_fwd(out, d, "qkv", "qkv_ag", "qkv_fprop", "qkv_in_cast", phase, d->q_tp + 2 * d->kv_tp,
                    rc.ln1 ? 0.0 : keep * hsp * d->e);
    push_qk_norms(out, d, phase, keep);
    if (d->rope)
      push_rope(out, d, phase, false);
  }
  if (d->unfused_attn) {
    /* selective recompute checkpoints the core attention: it keeps its inputs q, k, v */
    double saved = phase == PN_PHASE_FWD && rc.attn ? attn_qkv_bytes(d) : unfused_attn_saved(d);
    push_attn_unfused_fwd(out, d, phase, keep * saved);
  } else {
    push_cp_fwd(out, d, phase);
    /* mla_up_proj frees the q, k, v the attention keeps (refilled by its recompute) */
    double attn_saved = (rc.up ? 0.0 : attn_qkv_bytes(d)) + (rc.attn ? 0.0 : attn_o_lse_bytes(d));
    push_attn(out, d, phase, false, keep * attn_saved);
    push_cp_fwd_after(out, d, phase);
  }

  /* proj input: in fp8 the transposed fp8 copy; in bf16 attention's o, unless selective recompute
   * dropped it from the attention or the CP a2a made a separate tensor. */
  double proj_in    = (double)d->T * (double)d->o_tp;
  double proj_saved = d->fp8 ? proj_in : ((rc.attn || cp_a2a(d)) && !d->unfused_attn ? proj_in * 2.0 : 0.0);
  push_row_fwd(out, d, "proj", "proj_in_cast", "proj_rs", "proj_fprop", phase, d->o_tp, keep * proj_saved);
  push_bda(out, d, "bias_add", "dropout", "dropout_add", phase, keep);

  if (d->moe) {
    moe_forward(out, d, phase, keep, &rc);
    return;
  }
  /* a checkpointed MLP keeps its input: the norm's input with TE (the norm is fc1's), its output
   * for the local layers' own norm */
  if (rc.mlp)
    mlp_forward(out, d, phase, 0.0, false,
                keep * (hsp * 2.0 + (d->norms_separate && !rc.ln2 ? norm_stats_bytes(d) + hsp * 2.0 : 0.0)));
  else
    mlp_forward(out, d, phase, keep, rc.ln2, keep * (hsp * 2.0 + (rc.ln2 ? 0.0 : norm_stats_bytes(d))));
  guint bda = out->len;
  push_bda(out, d, "bias_add2", "dropout2", "dropout_add2", phase, keep);
  tag_node(out, bda, PN_NODE_MLP);
}

/* CP exchange in the attention backward. */
static void push_cp_bwd_before(GArray *out, const Dims *d, PnPhase phase)
{
  if (d->cp <= 1)
    return;
  switch (d->cp_type) {
  case PN_CP_P2P:
  case PN_CP_A2A_P2P:
    push_comm(out, "cp_kv_dkv_p2p", NULL, phase, PN_COLL_SEND_RECV, PN_GROUP_CP,
              2.0 * (double)(d->cp - 1) * kv_local_bytes(d), PN_DT_BF16);
    break;
  case PN_CP_ALL_GATHER:
    push_comm(out, "cp_kv_ag_bwd", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_CP, (double)d->cp * kv_local_bytes(d),
              PN_DT_BF16);
    break;
  case PN_CP_A2A:
    push_comm(out, "cp_dout_a2a", NULL, phase, PN_COLL_ALL_TO_ALL, PN_GROUP_CP, (double)d->T * (double)d->o_tp * 2.0,
              PN_DT_BF16);
    break;
  }
}

static void push_cp_bwd_after(GArray *out, const Dims *d, PnPhase phase)
{
  if (d->cp <= 1)
    return;
  if (d->cp_type == PN_CP_ALL_GATHER)
    push_comm(out, "cp_dkv_rs", NULL, phase, PN_COLL_REDUCE_SCATTER, PN_GROUP_CP, (double)d->cp * kv_local_bytes(d),
              PN_DT_BF16);
  else if (d->cp_type == PN_CP_A2A)
    push_comm(out, "cp_dqkv_a2a", NULL, phase, PN_COLL_ALL_TO_ALL, PN_GROUP_CP,
              (double)d->T * (double)(d->q_tp + d->k_tp + d->v_tp) * 2.0, PN_DT_BF16);
}

static void layer_backward(GArray *out, const Dims *d, PnRecomputeGranularity gran)
{
  const PnPhase B  = PN_PHASE_BWD;
  const double hsp = (double)d->Tsp * (double)d->h;

  const Rc rc = rc_of(d, gran);
  if (gran == PN_RECOMPUTE_FULL)
    layer_forward(out, d, PN_PHASE_RECOMPUTE, PN_RECOMPUTE_NONE);

  if (d->moe) {
    moe_backward(out, d, &rc);
  } else {
    guint mlp = out->len;
    /* a recomputed MLP (or its norm alone) re-runs when its output gradient arrives */
    if (rc.ln2)
      push_norm_fwd(out, d, "ln2", PN_PHASE_RECOMPUTE, d->norm_e, hsp * 2.0 + norm_stats_bytes(d));
    if (rc.mlp) /* with TE the norm is fc1's and re-runs with it; the local layers' norm is outside */
      mlp_forward(out, d, PN_PHASE_RECOMPUTE, 1.0, false, d->norms_separate ? -1.0 : hsp * 2.0 + norm_stats_bytes(d));
    if (d->dropout) {
      push_mem(out, "dropout_add2_bwd", B, hsp * 5.0, 0.0);
      mark_rng(out, true);
    }
    push_dbias(out, d, "fc2_dbias", B, (double)d->Tsp, (double)d->h);
    push_row_bwd(out, d, "fc2_dgrad", "fc2_wgrad", "fc2_dy_cast", "fc2_dgrad_ag", "fc2_dy_transpose", "fc2_dgrad",
                 "fc2_wgrad", B, d->f_tp);
    double fc1_out = (double)d->T * (double)d->f_tp;
    push_mem(out, "act_bwd", B, fc1_out * (d->swiglu ? 10.0 : 6.0), 0.0);
    if (d->act_unfused && act_unfused_bytes(d, true) > 0.0)
      push_mem(out, "act_unfused_bwd", B, fc1_out * act_unfused_bytes(d, true), 0.0);
    push_dbias(out, d, "fc1_dbias", B, (double)d->T, (double)d->fc1_tp);
    push_column_bwd(out, d, "fc1_dgrad", "fc1_wgrad", "fc1_dy_cast", "fc1_dgrad_ag", "fc1_in_transpose", "fc1_wgrad_rs",
                    "fc1_dgrad", "fc1_wgrad", B, d->fc1_tp);
    push_norm_bwd(out, d, "ln2_bwd", "residual_grad_add2", B);
    tag_node(out, mlp, PN_NODE_MLP);
  }

  if (d->dropout) {
    push_mem(out, "dropout_add_bwd", B, hsp * 5.0, 0.0);
    mark_rng(out, true);
  }
  push_dbias(out, d, "proj_dbias", B, (double)d->Tsp, (double)d->h);
  push_row_bwd(out, d, "proj_dgrad", "proj_wgrad", "proj_dy_cast", "proj_dgrad_ag", "proj_dy_transpose", "proj_dgrad",
               "proj_wgrad", B, d->o_tp);

  if (rc.up) /* its hook on the attention output's gradient re-runs the up projections and rope */
    mla_up_forward(out, d, PN_PHASE_RECOMPUTE, 0.0);
  if (d->unfused_attn) {
    if (rc.attn)
      push_attn_unfused_fwd(out, d, PN_PHASE_RECOMPUTE, unfused_attn_saved(d) - attn_qkv_bytes(d));
    push_attn_unfused_bwd(out, d, B);
  } else {
    if (rc.attn) {
      /* Megatron's checkpointed core attention re-runs its forward (CP exchange included) when
       * autograd reaches it, i.e. here. */
      push_cp_fwd(out, d, PN_PHASE_RECOMPUTE);
      push_attn(out, d, PN_PHASE_RECOMPUTE, false, attn_o_lse_bytes(d));
      push_cp_fwd_after(out, d, PN_PHASE_RECOMPUTE);
    }
    push_cp_bwd_before(out, d, B);
    push_attn(out, d, B, true, 0.0);
    push_cp_bwd_after(out, d, B);
  }
  if (d->mla) {
    mla_qkv_backward(out, d, &rc);
    if (!d->moe)
      push_param_grad_adds(out, d, B);
    return;
  }
  if (d->rope)
    push_rope(out, d, B, true);
  if (d->qk_norm) { /* 2 B read of each gradient and input, 2 B written: the main and finalize kernels */
    push_mem(out, "k_norm_bwd", B, (double)d->T * (double)d->kv_tp * 6.0, 0.0);
    set_kernels(out, 2);
    push_mem(out, "q_norm_bwd", B, (double)d->T * (double)d->q_tp * 6.0, 0.0);
    set_kernels(out, 2);
  }
  if (rc.ln1) /* the input norm's checkpoint re-runs when qkv's input gradient is wanted */
    push_norm_fwd(out, d, "ln1", PN_PHASE_RECOMPUTE, d->norm_e, hsp * 2.0 + norm_stats_bytes(d));
  push_column_bwd(out, d, "qkv_dgrad", "qkv_wgrad", "qkv_dy_cast", "qkv_dgrad_ag", "qkv_in_transpose", "qkv_wgrad_rs",
                  "qkv_dgrad", "qkv_wgrad", B, d->q_tp + 2 * d->kv_tp);
  push_norm_bwd(out, d, "ln1_bwd", "residual_grad_add", B);
  if (!d->moe)
    push_param_grad_adds(out, d, B);
}

void pn_workload_layer_ops_with(const PnScenario *sc, PnPhase phase, PnRecomputeGranularity granularity, GArray *out)
{
  g_assert(sc && out);
  g_assert(phase == PN_PHASE_FWD || phase == PN_PHASE_BWD);
  Dims d;
  dims_init(sc, &d);
  if (phase == PN_PHASE_FWD)
    layer_forward(out, &d, PN_PHASE_FWD, granularity);
  else
    layer_backward(out, &d, granularity);
}

void pn_workload_layer_ops(const PnScenario *sc, PnPhase phase, GArray *out)
{
  pn_workload_layer_ops_with(sc, phase, sc->recompute.recompute_granularity, out);
}

bool pn_workload_layer_is_recomputed(const PnScenario *sc, int64_t layer_in_chunk)
{
  const PnRecomputeConfig *r = &sc->recompute;
  switch (r->recompute_granularity) {
  case PN_RECOMPUTE_NONE:
    return false;
  case PN_RECOMPUTE_SELECTIVE:
    return true;
  case PN_RECOMPUTE_FULL:
    if (r->recompute_method == PN_RECOMPUTE_METHOD_BLOCK && r->recompute_num_layers > 0)
      return layer_in_chunk < r->recompute_num_layers;
    return true;
  }
  return false;
}

/* ---- embedding, head, optimizer ---- */

void pn_workload_embedding_ops(const PnScenario *sc, PnPhase phase, GArray *out)
{
  g_assert(sc && out);
  g_assert(phase == PN_PHASE_FWD || phase == PN_PHASE_BWD);
  Dims d;
  dims_init(sc, &d);
  const double th    = (double)d.T * (double)d.h;
  const double hsp   = (double)d.Tsp * (double)d.h;
  const bool learned = strcmp(sc->model.position_embedding_type, "learned_absolute") == 0;
  if (phase == PN_PHASE_FWD) {
    /* Vocab-parallel lookup over all T tokens: ids read, rows read, output written; with tp > 1
     * the out-of-shard rows are masked and zeroed (one more read+write pass). */
    push_mem(out, "embedding", phase, (double)d.T * 8.0 + th * 4.0 + (d.tp > 1 ? th * 4.0 : 0.0), 0.0);
    if (learned)
      push_mem(out, "pos_embedding_add", phase, th * 6.0, 0.0);
    if (d.b > 1) /* [b, s, h] -> [s, b, h] contiguous copy (a view when b == 1) */
      push_mem(out, "embedding_transpose", phase, th * 4.0, 0.0);
    if (d.sp)
      push_comm(out, "embedding_rs", NULL, phase, PN_COLL_REDUCE_SCATTER, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
    else if (d.tp_comm)
      push_comm(out, "embedding_ar", NULL, phase, PN_COLL_ALL_REDUCE, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
    if (d.dropout) {
      push_mem(out, "embedding_dropout", phase, hsp * 5.0, hsp);
      mark_rng(out, true);
    }
  } else {
    if (d.dropout) {
      push_mem(out, "embedding_dropout_bwd", phase, hsp * 5.0, 0.0);
      mark_rng(out, true);
    }
    if (d.sp) /* backward of the RS */
      push_comm(out, "embedding_grad_ag", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
    /* F.embedding's backward writes a dense [V/tp, h] bf16 gradient (zero fill + scatter-add of
     * the T rows), which Megatron's grad hook then adds into main_grad: read grad, read+write
     * main_grad. */
    double vh = (double)d.vocab_tp * (double)d.h;
    double mg = sc->ddp.grad_reduce_in_fp32 ? 4.0 : 2.0;
    push_mem(out, "embedding_wgrad", phase, vh * 2.0 + th * 4.0 + vh * (2.0 + 2.0 * mg), 0.0);
  }
}

/* The output layer and the loss (the decoder's final norm first), forward or backward. */
static void head_ops(const PnScenario *sc, const Dims *dd, PnPhase phase, GArray *out)
{
  const Dims d        = *dd;
  const double th     = (double)d.T * (double)d.h;
  const double hsp    = (double)d.Tsp * (double)d.h;
  const double logits = (double)d.T * (double)d.vocab_tp;
  if (phase == PN_PHASE_FWD) {
    push_norm_fwd(out, &d, "final_norm", phase, 2.0, hsp * 2.0 + norm_stats_bytes(&d));
    if (d.sp)
      push_comm(out, "output_ag", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
    push_gemm(out, "logits", NULL, phase, PN_GEMM_FPROP, PN_DT_BF16, d.T, d.vocab_tp, d.h, hsp * 2.0);
    push_mem(out, "cross_entropy", phase, logits * d.ce_fwd_bytes, logits * d.ce_saved_bytes);
    /* the loss check reads the loss on the host (config.h); a full-iteration graph runs without it
     * (overlap/graphs.c) */
    g_array_index(out, PnOp, out->len - 1).host_reads =
        sc->training.check_for_nan_in_loss_and_grad &&
        sc->training.cuda_graph_impl != PN_CUDA_GRAPH_IMPL_FULL_ITERATION;
    if (d.tp_comm)
      push_comm(out, "cross_entropy_ar", NULL, phase, PN_COLL_ALL_REDUCE, PN_GROUP_TP, (double)d.T * 4.0 * 3.0,
                PN_DT_FP32);
  } else {
    push_mem(out, "cross_entropy_bwd", phase, logits * d.ce_bwd_bytes, 0.0);
    if (d.sp)
      push_comm(out, "output_wgrad_ag", NULL, phase, PN_COLL_ALL_GATHER, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
    push_dgrad(out, "logits_dgrad", NULL, phase, PN_DT_BF16, d.T, d.vocab_tp, d.h);
    if (d.sp)
      push_comm(out, "output_rs", NULL, phase, PN_COLL_REDUCE_SCATTER, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
    else if (d.tp_comm)
      push_comm(out, "output_ar", NULL, phase, PN_COLL_ALL_REDUCE, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
    push_wgrad(out, &d, "logits_wgrad", NULL, phase, PN_DT_BF16, d.T, d.vocab_tp, d.h, 1, true);
    push_norm_bwd(out, &d, "final_norm_bwd", NULL, phase);
  }
}

/* The scenario whose layer an MTP layer is: the decoder's last layer's kind
 * (get_gpt_mtp_block_spec builds it from the decoder's last layer spec). */
static const PnScenario *mtp_layer_scenario(const PnScenario *sc, PnScenario *dense)
{
  if (!pn_workload_has_dense_layers(sc) || pn_workload_layer_is_moe(sc, sc->model.num_layers - 1))
    return sc;
  pn_workload_dense_layer_scenario(sc, dense);
  return dense;
}

/* One multi-token-prediction layer (transformer/multi_token_prediction.py,
 * MultiTokenPredictionLayer and process_mtp_loss), on the last pipeline stage: the embedding of
 * the input shifted by one more token (the model's embedding, roll_tensor), enorm and hnorm
 * (the embedding's and the decoder output's), their concatenation, eh_proj (TE column parallel,
 * 2h -> h, in the fp8 context: the input cast, its sequence all-gather, then the output gathered
 * over TP, gather_from_tensor_model_parallel_region, and split back to the sequence shard), one
 * transformer layer, its final norm, the output layer and the loss. Backward in reverse, the
 * decoder output's gradient summed with the main path's. */
static void mtp_forward(const PnScenario *sc, const Dims *d, GArray *out)
{
  const PnPhase F  = PN_PHASE_FWD;
  const double hsp = (double)d->Tsp * (double)d->h, th = (double)d->T * (double)d->h;
  PnScenario dense;
  pn_workload_embedding_ops(sc, F, out);
  push_norm_fwd(out, d, "mtp_enorm", F, 2.0, hsp * 2.0 + norm_stats_bytes(d));
  push_norm_fwd(out, d, "mtp_hnorm", F, 2.0, hsp * 2.0 + norm_stats_bytes(d));
  push_mem(out, "mtp_cat", F, hsp * 8.0, 0.0);
  if (d->fp8)
    push_cast(out, d, "mtp_eh_proj_in_cast", F, 2.0 * hsp, 4.0, d->sp);
  if (d->sp)
    push_comm(out, "mtp_eh_proj_ag", NULL, F, PN_COLL_ALL_GATHER, PN_GROUP_TP, 2.0 * th * d->e, d->gemm_dt);
  push_gemm(out, "mtp_eh_proj", NULL, F, PN_GEMM_FPROP, d->gemm_dt, d->T, d->h / d->tp, 2 * d->h, 2.0 * hsp * d->e);
  if (d->tp_comm)
    push_comm(out, "mtp_eh_proj_out_ag", NULL, F, PN_COLL_ALL_GATHER, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
  if (d->sp)
    push_mem(out, "mtp_eh_proj_split", F, hsp * 4.0, 0.0);
  pn_workload_layer_ops(mtp_layer_scenario(sc, &dense), F, out);
  head_ops(sc, d, F, out);
}

static void mtp_backward(const PnScenario *sc, const Dims *d, GArray *out)
{
  const PnPhase B = PN_PHASE_BWD;
  const double th = (double)d->T * (double)d->h;
  PnScenario dense;
  head_ops(sc, d, B, out);
  pn_workload_layer_ops(mtp_layer_scenario(sc, &dense), B, out);
  if (d->sp) /* the split's backward gathers the sequence, the gather's backward splits the hidden */
    push_comm(out, "mtp_eh_proj_split_ag", NULL, B, PN_COLL_ALL_GATHER, PN_GROUP_TP, th * 2.0, PN_DT_BF16);
  if (d->fp8)
    push_cast(out, d, "mtp_eh_proj_dy_cast", B, (double)d->T * (double)(d->h / d->tp), 4.0, false);
  if (d->sp)
    push_comm(out, "mtp_eh_proj_dgrad_ag", NULL, B, PN_COLL_ALL_GATHER, PN_GROUP_TP, 2.0 * th * d->e, d->gemm_dt);
  push_dgrad(out, "mtp_eh_proj_dgrad", NULL, B, d->gemm_dt, d->T, d->h / d->tp, 2 * d->h);
  if (d->sp)
    push_comm(out, "mtp_eh_proj_dgrad_rs", NULL, B, PN_COLL_REDUCE_SCATTER, PN_GROUP_TP, 2.0 * th * 2.0, PN_DT_BF16);
  else if (d->tp_comm)
    push_comm(out, "mtp_eh_proj_dgrad_ar", NULL, B, PN_COLL_ALL_REDUCE, PN_GROUP_TP, 2.0 * th * 2.0, PN_DT_BF16);
  push_wgrad(out, d, "mtp_eh_proj_wgrad", NULL, B, d->gemm_dt, d->T, d->h / d->tp, 2 * d->h, 1, true);
  push_norm_bwd(out, d, "mtp_hnorm_bwd", "mtp_hidden_grad_add", B);
  push_norm_bwd(out, d, "mtp_enorm_bwd", NULL, B);
  pn_workload_embedding_ops(sc, B, out);
}

void pn_workload_head_ops(const PnScenario *sc, PnPhase phase, GArray *out)
{
  g_assert(sc && out);
  g_assert(phase == PN_PHASE_FWD || phase == PN_PHASE_BWD);
  Dims d;
  dims_init(sc, &d);
  int64_t mtp = sc->model.mtp_num_layers;
  if (phase == PN_PHASE_FWD) { /* the decoder's final norm, the MTP layers, the main output layer */
    for (int64_t k = 0; k < mtp; k++)
      mtp_forward(sc, &d, out);
    head_ops(sc, &d, phase, out);
    return;
  }
  head_ops(sc, &d, phase, out);
  if (mtp > 0) { /* the MTP layers' backward before the final norm's, which takes both gradients */
    PnOp norm_bwd = g_array_index(out, PnOp, out->len - 1);
    g_array_set_size(out, out->len - 1);
    for (int64_t k = 0; k < mtp; k++)
      mtp_backward(sc, &d, out);
    g_array_append_val(out, norm_bwd);
  }
}

static double optim_dtype_bytes(PnOptimDtype t) { return t == PN_OPTIM_FP32 ? 4.0 : t == PN_OPTIM_FP8 ? 1.0 : 2.0; }

void pn_workload_optimizer_bytes(const PnScenario *sc, PnOptimizerBytes *out)
{
  g_assert(sc && out);
  const PnTrainingConfig *tr = &sc->training;
  bool pa                    = tr->use_precision_aware_optimizer;
  /* optimizer_config.py use_precision_aware_optimizer_no_fp8_or_ds_fp8; Megatron-FSDP's main
   * weights replace FusedAdam's masters (__init__.py: master_weights = False) */
  out->te_masters =
      pa && !sc->ddp.use_megatron_fsdp &&
      (tr->main_params_dtype != PN_OPTIM_FP32 || tr->precision != PN_PREC_FP8 || tr->fp8_recipe == PN_FP8_DELAYED);
  out->master_bytes = out->te_masters ? 2.0 : 4.0; /* a remainder of 16 bits, or an fp16 master */
  out->moment_bytes = pa ? optim_dtype_bytes(tr->exp_avg_dtype) + optim_dtype_bytes(tr->exp_avg_sq_dtype) : 8.0;
  out->grad_copy    = !out->te_masters && !sc->ddp.grad_reduce_in_fp32 ? 4.0 : 0.0;
}

void pn_workload_optimizer_ops(const PnScenario *sc, double params_on_gpu, double params_unsharded, GArray *out)
{
  g_assert(sc && out && params_on_gpu >= 0.0 && params_unsharded >= 0.0);
  PnOptimizerBytes ob;
  pn_workload_optimizer_bytes(sc, &ob);
  double g = sc->ddp.grad_reduce_in_fp32 ? 4.0 : 2.0;
  if (ob.te_masters) {
    double master_rw =
        sc->training.main_params_dtype == PN_OPTIM_FP32 ? 2.0 * (2.0 + ob.master_bytes) : 2.0 * ob.master_bytes + 2.0;
    push_mem(out, "grad_norm", PN_PHASE_OPTIM, params_on_gpu * g, 0.0);
    push_mem(out, "adam_step", PN_PHASE_OPTIM, params_on_gpu * (g + master_rw + 2.0 * ob.moment_bytes), 0.0);
  } else {
    if (ob.grad_copy > 0.0)
      push_mem(out, "main_grad_cast", PN_PHASE_OPTIM, params_on_gpu * (g + ob.grad_copy), 0.0);
    push_mem(out, "grad_norm", PN_PHASE_OPTIM, params_on_gpu * 4.0, 0.0);
    if (sc->training.fused_adam)
      push_mem(out, "adam_step", PN_PHASE_OPTIM, params_on_gpu * (4.0 + 2.0 * 4.0 + 2.0 * ob.moment_bytes), 0.0);
    else
      push_mem(out, "adamw_torch_step", PN_PHASE_OPTIM, params_on_gpu * 80.0, 0.0);
    bool fp8_params = sc->training.precision == PN_PREC_FP8 && sc->ddp.fp8_param_gather;
    push_mem(out, "main_param_copy", PN_PHASE_OPTIM, params_on_gpu * (4.0 + (fp8_params ? 1.0 : 2.0)), 0.0);
  }
  push_mem(out, "zero_grad_buffer", PN_PHASE_OPTIM, params_unsharded * g, 0.0);
}

/* ---- fp8 bookkeeping outside the layer lists (ops.h) ---- */

/* GEMMs of one layer in TE fp8 modules: each has 3 forward and 2 backward amax entries
 * (module/base.py: num_gemms x 3 fwd, x 2 bwd). GroupedLinear counts one per local expert. */
static int64_t fp8_gemms_per_layer(const Dims *d)
{
  MlaLinear l[4];
  int64_t attn = d->mla ? 1 + mla_linears(d, l) : 2;
  if (!d->moe)
    return attn + 2;
  return attn + (d->sf_tp > 0 ? 2 : 0) + 2 * d->L;
}

void pn_workload_fp8_amax_ops(const PnScenario *sc, PnPhase phase, int64_t layers_on_rank, int64_t dense_layers,
                              GArray *out)
{
  g_assert(sc && out && layers_on_rank >= 0 && dense_layers >= 0);
  g_assert(phase == PN_PHASE_FWD || phase == PN_PHASE_BWD);
  Dims d, dd;
  dims_init(sc, &d);
  if (!d.fp8 || d.cs || layers_on_rank + dense_layers == 0)
    return;
  int64_t gemms = fp8_gemms_per_layer(&d) * layers_on_rank;
  if (dense_layers > 0) {
    PnScenario dsc;
    pn_workload_dense_layer_scenario(sc, &dsc);
    dims_init(&dsc, &dd);
    gemms += fp8_gemms_per_layer(&dd) * dense_layers;
  }
  double floats = (double)gemms * (phase == PN_PHASE_FWD ? 3.0 : 2.0);
  push_mem(out, "fp8_amax_cat", phase, floats * 8.0, 0.0);
  const PnParallelConfig *p = &sc->parallel;
  if (d.tp * d.cp * MAX(p->data_parallel_size, 1) > 1)
    push_comm(out, "fp8_amax_all_reduce", NULL, phase, PN_COLL_ALL_REDUCE, PN_GROUP_AMAX, floats * 4.0, PN_DT_FP32);
  push_mem(out, "fp8_scale_update", phase, floats * 20.0, 0.0);
}

/* One weight's quantization: fp8_param_gather: the transpose of the gathered fp8 weight (read 1,
 * write 1 B/elem); else [current scaling: amax, scale] and the cast_transpose (read 2, write 2). */
static void push_weight_cast(GArray *out, const Dims *d, bool fp8_params, const char *name, double elems)
{
  if (fp8_params) {
    push_mem(out, name, PN_PHASE_FWD, elems * 2.0, 0.0);
    return;
  }
  push_cast(out, d, name, PN_PHASE_FWD, elems, 4.0, false);
}

void pn_workload_fp8_weight_ops(const PnScenario *sc, GArray *out)
{
  g_assert(sc && out);
  Dims d;
  dims_init(sc, &d);
  if (!d.fp8)
    return;
  const bool fp8p = sc->ddp.fp8_param_gather;
  const double h  = (double)d.h;
  if (d.mla) {
    MlaLinear l[4];
    for (int i = 0, n = mla_linears(&d, l); i < n; i++)
      push_weight_cast(out, &d, fp8p, l[i].cast, (double)l[i].in * (double)l[i].out);
  } else {
    push_weight_cast(out, &d, fp8p, "qkv_weight_cast", h * (double)(d.q_tp + 2 * d.kv_tp));
  }
  push_weight_cast(out, &d, fp8p, "proj_weight_cast", (double)d.o_tp * h);
  if (!d.moe) {
    push_weight_cast(out, &d, fp8p, "fc1_weight_cast", h * (double)d.fc1_tp);
    push_weight_cast(out, &d, fp8p, "fc2_weight_cast", (double)d.f_tp * h);
    return;
  }
  if (d.sf_tp > 0) {
    push_weight_cast(out, &d, fp8p, "shared_fc1_weight_cast", h * (double)d.sfc1_tp);
    push_weight_cast(out, &d, fp8p, "shared_fc2_weight_cast", (double)d.sf_tp * h);
  }
  for (int64_t e = 0; e < d.L; e++) {
    push_weight_cast(out, &d, fp8p, "moe_fc1_weight_cast", h * (double)d.mfc1);
    push_weight_cast(out, &d, fp8p, "moe_fc2_weight_cast", (double)d.mf * h);
  }
}

/* ---- parameters ---- */

bool pn_workload_is_moe(const PnScenario *sc) { return sc->model.num_moe_experts > 0; }

bool pn_workload_layer_is_moe(const PnScenario *sc, int64_t layer)
{
  return pn_workload_model_layer_is_moe(&sc->model, layer);
}

bool pn_workload_model_layer_is_moe(const PnModelConfig *m, int64_t layer)
{
  if (m->num_moe_experts <= 0 || layer < 0)
    return false;
  if (m->moe_layer_pattern_set)
    return layer < PN_MAX_MOE_LAYER_PATTERN && m->moe_layer_pattern[layer] != 0;
  return layer % MAX(m->moe_layer_freq, 1) == 0;
}

bool pn_workload_has_dense_layers(const PnScenario *sc)
{
  for (int64_t l = 0; pn_workload_is_moe(sc) && l < sc->model.num_layers; l++)
    if (!pn_workload_layer_is_moe(sc, l))
      return true;
  return false;
}

void pn_workload_dense_layer_scenario(const PnScenario *sc, PnScenario *out)
{
  *out                                           = *sc;
  out->model.num_moe_experts                     = 0;
  out->model.moe_router_topk                     = 0;
  out->model.moe_shared_expert_intermediate_size = 0;
  out->model.moe_layer_freq                      = 1;
  out->model.moe_layer_pattern_set               = false;
}

int64_t pn_workload_local_experts(const PnScenario *sc)
{
  return sc->model.num_moe_experts / MAX(sc->parallel.expert_model_parallel_size, 1);
}

bool pn_workload_unfused_attention(const PnScenario *sc)
{
  PnAttnBackend be = sc->training.attention_backend;
  return sc->training.transformer_impl == PN_TRANSFORMER_IMPL_LOCAL || be == PN_ATTN_BACKEND_UNFUSED ||
         be == PN_ATTN_BACKEND_LOCAL;
}

int64_t pn_workload_expert_dp(const PnScenario *sc)
{
  if (!pn_workload_is_moe(sc))
    return 1;
  const PnParallelConfig *p = &sc->parallel;
  int64_t stage =
      MAX(p->tensor_model_parallel_size, 1) * MAX(p->context_parallel_size, 1) * MAX(p->data_parallel_size, 1);
  int64_t etp =
      p->expert_tensor_parallel_size > 0 ? p->expert_tensor_parallel_size : MAX(p->tensor_model_parallel_size, 1);
  return MAX(stage / (etp * MAX(p->expert_model_parallel_size, 1)), 1);
}

double pn_workload_layer_expert_params(const PnScenario *sc)
{
  Dims d;
  dims_init(sc, &d);
  if (!d.moe)
    return 0.0;
  return (double)d.L * ((double)d.h * (double)d.mfc1 + (double)d.mf * (double)d.h);
}

double pn_workload_layer_linear_params(const PnScenario *sc)
{
  Dims d;
  dims_init(sc, &d);
  double h    = (double)d.h;
  double attn = attn_in_weights(&d) + (double)d.o_tp * h;
  if (!d.moe)
    return attn + h * (double)d.fc1_tp + (double)d.f_tp * h;
  return attn + h * (double)d.sfc1_tp + (double)d.sf_tp * h + pn_workload_layer_expert_params(sc);
}

double pn_workload_layer_params(const PnScenario *sc)
{
  Dims d;
  dims_init(sc, &d);
  double h = (double)d.h;
  double p = pn_workload_layer_linear_params(sc);
  if ((sc->model.add_bias_linear || sc->model.add_qkv_bias) && !d.mla) /* MLA's projections have none */
    p += (double)(d.q_tp + 2 * d.kv_tp);
  if (sc->model.add_bias_linear && !d.moe)
    p += h + (double)d.fc1_tp + h; /* proj and fc2 biases are replicated, fc1's split */
  else if (sc->model.add_bias_linear)
    p += h + (double)d.L * ((double)d.mfc1 + h); /* proj; the local experts' biases */
  if (d.moe)
    p += (double)d.E * h; /* router */
  p += 2.0 * (d.layernorm ? 2.0 * h : h);
  if (d.mla && d.qk_ln)
    p += (double)(d.qlr + d.kvlr);
  if (d.qk_norm)
    p += 2.0 * (double)d.kvc * (d.layernorm ? 2.0 : 1.0);
  return p;
}

double pn_workload_embedding_params(const PnScenario *sc)
{
  double h   = (double)sc->model.hidden_size;
  int64_t tp = MAX(sc->parallel.tensor_model_parallel_size, 1);
  double p   = (double)(pn_workload_padded_vocab(sc) / tp) * h;
  if (strcmp(sc->model.position_embedding_type, "learned_absolute") == 0)
    p += (double)sc->model.max_position_embeddings * h;
  return p;
}

double pn_workload_head_expert_params(const PnScenario *sc)
{
  g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(PnParam));
  pn_workload_head_param_list(sc, list);
  double p = 0.0;
  for (guint i = 0; i < list->len; i++)
    if (g_array_index(list, PnParam, i).expert)
      p += (double)g_array_index(list, PnParam, i).elems;
  return p;
}

double pn_workload_head_params(const PnScenario *sc)
{
  g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(PnParam));
  pn_workload_head_param_list(sc, list);
  double p = 0.0;
  for (guint i = 0; i < list->len; i++)
    p += (double)g_array_index(list, PnParam, i).elems;
  return p;
}

/* The parameters of one module: its forward starts with `fwd_op`, its backward ends with `bwd_op`. */
typedef struct {
  GArray *out;
  const char *fwd_op, *bwd_op;
} Module;

static void push_param(const Module *m, const char *name, int64_t elems, bool expert, bool te_weight)
{
  PnParam p = {
      .name = name, .fwd_op = m->fwd_op, .bwd_op = m->bwd_op, .elems = elems, .expert = expert, .te_weight = te_weight};
  g_array_append_val(m->out, p);
}

/* A norm's weight, and its bias with LayerNorm. */
static void push_norm(const Module *m, const Dims *d, const char *weight, const char *bias)
{
  push_param(m, weight, d->h, false, false);
  if (d->layernorm)
    push_param(m, bias, d->h, false, false);
}

void pn_workload_layer_param_list(const PnScenario *sc, GArray *out)
{
  g_assert(sc && out);
  Dims d;
  dims_init(sc, &d);
  const bool bias = sc->model.add_bias_linear;
  Module proj = {out, "proj", "proj_wgrad"}, qkv = {out, "ln1", "ln1_bwd"};
  if (d.mla) { /* the input norm is a module of the layer, registered before the attention */
    Module ln1 = {out, "ln1", "ln1_bwd"};
    push_norm(&ln1, &d, "input_layernorm.weight", "input_layernorm.bias");
  }
  push_param(&proj, "self_attention.linear_proj.weight", d.o_tp * d.h, false, true);
  if (bias)
    push_param(&proj, "self_attention.linear_proj.bias", d.h, false, false); /* row parallel: replicated */
  if (d.mla) {
    MlaLinear l[4];
    for (int i = 0, n = mla_linears(&d, l); i < n; i++) {
      Module lin = {out, l[i].fwd_op, l[i].bwd_op};
      if (l[i].norm_weight)
        push_param(&lin, l[i].norm_weight, l[i].in, false, false);
      push_param(&lin, l[i].weight, l[i].in * l[i].out, false, true);
    }
  } else {
    push_norm(&qkv, &d, "self_attention.linear_qkv.layer_norm_weight", "self_attention.linear_qkv.layer_norm_bias");
    push_param(&qkv, "self_attention.linear_qkv.weight", d.h * (d.q_tp + 2 * d.kv_tp), false, true);
    if (bias || sc->model.add_qkv_bias)
      push_param(&qkv, "self_attention.linear_qkv.bias", d.q_tp + 2 * d.kv_tp, false, false);
    if (d.qk_norm) { /* SelfAttention builds q_layernorm and k_layernorm after linear_qkv */
      Module qn = {out, "q_norm", "q_norm_bwd"}, kn = {out, "k_norm", "k_norm_bwd"};
      push_param(&qn, "self_attention.q_layernorm.weight", d.kvc, false, false);
      if (d.layernorm)
        push_param(&qn, "self_attention.q_layernorm.bias", d.kvc, false, false);
      push_param(&kn, "self_attention.k_layernorm.weight", d.kvc, false, false);
      if (d.layernorm)
        push_param(&kn, "self_attention.k_layernorm.bias", d.kvc, false, false);
    }
  }
  if (!d.moe) {
    Module fc1 = {out, "ln2", "ln2_bwd"}, fc2 = {out, "fc2", "fc2_wgrad"};
    push_norm(&fc1, &d, "mlp.linear_fc1.layer_norm_weight", "mlp.linear_fc1.layer_norm_bias");
    push_param(&fc1, "mlp.linear_fc1.weight", d.h * d.fc1_tp, false, true);
    if (bias)
      push_param(&fc1, "mlp.linear_fc1.bias", d.fc1_tp, false, false);
    push_param(&fc2, "mlp.linear_fc2.weight", d.f_tp * d.h, false, true);
    if (bias)
      push_param(&fc2, "mlp.linear_fc2.bias", d.h, false, false);
    return;
  }
  Module norm = {out, "ln2", "ln2_bwd"}, router = {out, "router", "router_wgrad"};
  Module efc1 = {out, "moe_fc1", "moe_fc1_wgrad"}, efc2 = {out, "moe_fc2", "moe_fc2_wgrad"};
  push_norm(&norm, &d, "pre_mlp_layernorm.weight", "pre_mlp_layernorm.bias");
  push_param(&router, "mlp.router.weight", d.E * d.h, false, false);
  for (int64_t e = 0; e < d.L; e++) {
    push_param(&efc1, "mlp.experts.linear_fc1.weight", d.h * d.mfc1, true, true);
    if (bias)
      push_param(&efc1, "mlp.experts.linear_fc1.bias", d.mfc1, true, false);
  }
  for (int64_t e = 0; e < d.L; e++) {
    push_param(&efc2, "mlp.experts.linear_fc2.weight", d.mf * d.h, true, true);
    if (bias)
      push_param(&efc2, "mlp.experts.linear_fc2.bias", d.h, true, false);
  }
  if (d.sf_tp > 0) {
    Module sfc1 = {out, "shared_fc1", "shared_fc1_wgrad"}, sfc2 = {out, "shared_fc2", "shared_fc2_wgrad"};
    push_param(&sfc1, "mlp.shared_experts.linear_fc1.weight", d.h * d.sfc1_tp, false, true);
    push_param(&sfc2, "mlp.shared_experts.linear_fc2.weight", d.sf_tp * d.h, false, true);
  }
}

/* Tied word embedding and output weight on different stages: both copies carry shared_embedding. */
static bool shared_embedding(const PnScenario *sc)
{
  return !sc->model.untie_embeddings_and_output_weights && sc->parallel.pipeline_model_parallel_size > 1;
}

void pn_workload_embedding_param_list(const PnScenario *sc, GArray *out)
{
  g_assert(sc && out);
  int64_t h  = sc->model.hidden_size;
  int64_t tp = MAX(sc->parallel.tensor_model_parallel_size, 1);
  Module emb = {out, "embedding", "embedding_wgrad"};
  push_param(&emb, "embedding.word_embeddings.weight", pn_workload_padded_vocab(sc) / tp * h, false, false);
  g_array_index(out, PnParam, out->len - 1).shared_embedding = shared_embedding(sc);
  if (strcmp(sc->model.position_embedding_type, "learned_absolute") == 0)
    push_param(&emb, "embedding.position_embeddings.weight", sc->model.max_position_embeddings * h, false, false);
}

void pn_workload_head_param_list(const PnScenario *sc, GArray *out)
{
  g_assert(sc && out);
  Dims d;
  dims_init(sc, &d);
  Module norm = {out, "final_norm", "final_norm_bwd"}, output = {out, "logits", "logits_wgrad"};
  push_norm(&norm, &d, "decoder.final_layernorm.weight", "decoder.final_layernorm.bias");
  if (sc->model.mtp_num_layers > 0) { /* MultiTokenPredictionBlock, registered before output_layer */
    PnScenario dense;
    const PnScenario *lsc = mtp_layer_scenario(sc, &dense);
    /* the last stage builds its own embedding for MTP, kept equal to the first stage's */
    if (sc->parallel.pipeline_model_parallel_size > 1) {
      Module emb = {out, "embedding", "embedding_wgrad"};
      push_param(&emb, "embedding.word_embeddings.weight", d.vocab_tp * d.h, false, false);
      g_array_index(out, PnParam, out->len - 1).shared_embedding = true;
    }
    for (int64_t k = 0; k < sc->model.mtp_num_layers; k++) {
      Module enorm = {out, "mtp_enorm", "mtp_enorm_bwd"}, hnorm = {out, "mtp_hnorm", "mtp_hnorm_bwd"};
      Module eh = {out, "mtp_eh_proj", "mtp_eh_proj_wgrad"}, fnorm = {out, "final_norm", "final_norm_bwd"};
      push_norm(&enorm, &d, "mtp.layers.enorm.weight", "mtp.layers.enorm.bias");
      push_norm(&hnorm, &d, "mtp.layers.hnorm.weight", "mtp.layers.hnorm.bias");
      push_param(&eh, "mtp.layers.eh_proj.weight", 2 * d.h * (d.h / d.tp), false, true);
      pn_workload_layer_param_list(lsc, out);
      push_norm(&fnorm, &d, "mtp.layers.final_layernorm.weight", "mtp.layers.final_layernorm.bias");
    }
  }
  if (sc->model.untie_embeddings_and_output_weights || sc->parallel.pipeline_model_parallel_size > 1) {
    push_param(&output, "output_layer.weight", d.vocab_tp * d.h, false, false);
    g_array_index(out, PnParam, out->len - 1).shared_embedding = shared_embedding(sc);
  }
}

int64_t pn_workload_padded_vocab(const PnScenario *sc)
{
  int64_t div      = sc->model.make_vocab_size_divisible_by > 0 ? sc->model.make_vocab_size_divisible_by : 128;
  int64_t multiple = div * MAX(sc->parallel.tensor_model_parallel_size, 1);
  return (sc->model.vocab_size + multiple - 1) / multiple * multiple;
}
