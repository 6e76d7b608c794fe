/* test_workload.c — workload/: op lists, model FLOPs, memory estimate, model parameters.
 *
 * Expected numbers are computed by hand in the comments from the shapes in ops.h / flops.h /
 * memory.h. Scenarios are built directly (no io/). */
#include <check.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "workload/flops.h"
#include "workload/memory.h"
#include "workload/ops.h"
#include "workload/rules.h"

/* ---- scenarios ---- */

static void model_llama3_8b(PnModelConfig *m)
{
  memset(m, 0, sizeof *m);
  g_strlcpy(m->name, "llama3-8b", sizeof m->name);
  m->num_layers                          = 32;
  m->hidden_size                         = 4096;
  m->ffn_hidden_size                     = 14336;
  m->num_attention_heads                 = 32;
  m->num_query_groups                    = 8;
  m->kv_channels                         = 128;
  m->gated_linear_unit                   = true;
  m->activation                          = PN_ACT_SWIGLU;
  m->normalization                       = PN_NORM_RMSNORM;
  m->vocab_size                          = 128256;
  m->make_vocab_size_divisible_by        = 128;
  m->untie_embeddings_and_output_weights = true;
  m->max_position_embeddings             = 8192;
  g_strlcpy(m->position_embedding_type, "rope", sizeof m->position_embedding_type);
}

static void model_llama3_70b(PnModelConfig *m)
{
  model_llama3_8b(m);
  g_strlcpy(m->name, "llama3-70b", sizeof m->name);
  m->num_layers          = 80;
  m->hidden_size         = 8192;
  m->ffn_hidden_size     = 28672;
  m->num_attention_heads = 64;
}

static void model_llama31_405b(PnModelConfig *m)
{
  model_llama3_8b(m);
  g_strlcpy(m->name, "llama3.1-405b", sizeof m->name);
  m->num_layers          = 126;
  m->hidden_size         = 16384;
  m->ffn_hidden_size     = 53248;
  m->num_attention_heads = 128;
}

/* Llama3-8B, seq 8192, mbs 1, gbs 128 on `gpus` GPUs with the given layout. */
static void scenario(PnScenario *sc, int64_t gpus, int64_t tp, bool sp, int64_t pp, int64_t vp, int64_t cp)
{
  memset(sc, 0, sizeof *sc);
  model_llama3_8b(&sc->model);
  sc->hardware.num_gpus                             = gpus;
  sc->training.seq_length                           = 8192;
  sc->training.micro_batch_size                     = 1;
  sc->training.global_batch_size                    = 128;
  sc->training.precision                            = PN_PREC_BF16;
  sc->training.iterations                           = 1;
  sc->training.bias_activation_fusion               = true; /* the loader's default, as Megatron-LM's */
  sc->training.gradient_accumulation_fusion         = true; /* likewise */
  sc->training.fused_adam                           = true;
  sc->training.apply_rope_fusion                    = true;
  sc->training.masked_softmax_fusion                = true;
  sc->training.check_for_nan_in_loss_and_grad       = true;
  sc->training.bias_dropout_fusion                  = true;
  sc->parallel.tensor_model_parallel_size           = tp;
  sc->parallel.pipeline_model_parallel_size         = pp;
  sc->parallel.virtual_pipeline_model_parallel_size = vp;
  sc->parallel.context_parallel_size                = cp;
  sc->parallel.expert_model_parallel_size           = 1;
  sc->parallel.sequence_parallel                    = sp;
  sc->parallel.data_parallel_size                   = gpus / (tp * pp * cp);
  sc->parallel.num_microbatches                     = 128 / sc->parallel.data_parallel_size;
  sc->ddp.use_distributed_optimizer                 = true;
  sc->ddp.grad_reduce_in_fp32                       = true;
  sc->ddp.num_distributed_optimizer_instances       = 1;
  sc->comm_overlap.tp_comm_overlap                  = PN_TRI_UNSET;
  sc->comm_overlap.cp_comm_type                     = PN_CP_P2P;
  sc->recompute.recompute_granularity               = PN_RECOMPUTE_NONE;
  sc->recompute.recompute_modules                   = PN_RECOMPUTE_MODULE_CORE_ATTN; /* Megatron's default */
  sc->env.cuda_device_max_connections               = 8;
}

static GArray *ops_new(void) { return g_array_new(FALSE, FALSE, sizeof(PnOp)); }

static GArray *layer(const PnScenario *sc, PnPhase phase)
{
  GArray *a = ops_new();
  pn_workload_layer_ops(sc, phase, a);
  return a;
}

static const PnOp *find(const GArray *ops, const char *name)
{
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *o = &g_array_index(ops, PnOp, i);
    if (strcmp(o->name, name) == 0)
      return o;
  }
  return NULL;
}

static int index_of(const GArray *ops, const char *name)
{
  for (guint i = 0; i < ops->len; i++)
    if (strcmp(g_array_index(ops, PnOp, i).name, name) == 0)
      return (int)i;
  return -1;
}

static double sum_flops(const GArray *ops, int kind, int phase)
{
  double s = 0.0;
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *o = &g_array_index(ops, PnOp, i);
    if ((kind < 0 || (int)o->kind == kind) && (phase < 0 || o->phase == phase))
      s += o->flops;
  }
  return s;
}

static int count(const GArray *ops, int kind, int phase)
{
  int n = 0;
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *o = &g_array_index(ops, PnOp, i);
    if ((kind < 0 || (int)o->kind == kind) && (phase < 0 || o->phase == phase))
      n++;
  }
  return n;
}

#define ck_assert_rel(x, y, tol)                                                                                       \
  ck_assert_msg(fabs((double)(x) - (double)(y)) <= (tol)*fabs((double)(y)), "%s = %.6g, expected %.6g (rel %g)", #x,   \
                (double)(x), (double)(y), (double)(tol))

/* ---- ops: shapes ---- */

/* bias_activation_fusion off (Megatron-LM's --no-bias-swiglu-fusion), Llama 3 8B at TP1, so the
 * activation's output is T * ffn = 8192 * 14336 elements: SwiGLU as silu then a product moves
 * 4 bytes per element more than the fused kernel forward, 16 more backward (ops.c
 * act_unfused_bytes); with linear biases the forward adds the bias pass over the 2 * ffn fc1
 * outputs, 8 bytes per output element. Fused, neither op exists. */
START_TEST(test_unfused_bias_swiglu)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  double out           = 8192.0 * 14336.0;
  g_autoptr(GArray) f0 = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_null(find(f0, "act_unfused"));
  sc.training.bias_activation_fusion = false;
  g_autoptr(GArray) f                = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b                = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(f, "act_unfused")->bytes, 4.0 * out);
  ck_assert_double_eq(find(b, "act_unfused_bwd")->bytes, 16.0 * out);
  ck_assert_int_eq(index_of(f, "act_unfused"), index_of(f, "act") + 1);
  sc.model.add_bias_linear = true;
  g_autoptr(GArray) fb     = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(fb, "act_unfused")->bytes, 12.0 * out);
}
END_TEST

/* Gradient-accumulation fusion (Megatron-LM's default): every wgrad of a TE linear, the grouped
 * experts and the output layer adds into main_grad itself, in main_grad's dtype (fp32 with
 * grad_reduce_in_fp32, else bf16), and nothing else touches main_grad. Off
 * (--no-gradient-accumulation-fusion): the wgrad writes a plain output and the DDP hook's
 * main_grad.add_(grad) follows it, reading the bf16 gradient (2 B) and main_grad (4 B) and writing
 * main_grad (4 B) per weight element: fc1's wgrad (Llama 3 8B, TP 1) is 2 * 14336 x 4096, so
 * 10 * 2 * 14336 * 4096 bytes. The router (a plain torch linear) never fuses. */
static void moe_scenario_ops(PnScenario *sc, int64_t etp, PnMoeDispatcher disp);

START_TEST(test_wgrad_accumulation)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  ck_assert_ptr_null(find(b, "main_grad_add"));
  for (guint i = 0; i < b->len; i++) {
    const PnOp *o = &g_array_index(b, PnOp, i);
    ck_assert_int_eq(o->accum_into, o->role == PN_GEMM_WGRAD ? PN_DT_FP32 : PN_DT_NONE);
  }
  sc.ddp.grad_reduce_in_fp32 = false;
  g_autoptr(GArray) b16      = layer(&sc, PN_PHASE_BWD);
  ck_assert_int_eq(find(b16, "fc1_wgrad")->accum_into, PN_DT_BF16);
  g_autoptr(GArray) hb = g_array_new(FALSE, FALSE, sizeof(PnOp));
  pn_workload_head_ops(&sc, PN_PHASE_BWD, hb);
  ck_assert_int_eq(find(hb, "logits_wgrad")->accum_into, PN_DT_BF16);

  sc.ddp.grad_reduce_in_fp32               = true;
  sc.training.gradient_accumulation_fusion = false;
  g_autoptr(GArray) u                      = layer(&sc, PN_PHASE_BWD);
  int wgrads = 0, adds = 0;
  for (guint i = 0; i < u->len; i++) {
    const PnOp *o = &g_array_index(u, PnOp, i);
    ck_assert_int_eq(o->accum_into, PN_DT_NONE);
    if (o->role == PN_GEMM_WGRAD) {
      wgrads++;
      ck_assert_uint_lt(i + 1, u->len);
      const PnOp *add = &g_array_index(u, PnOp, i + 1);
      ck_assert_str_eq(add->name, "main_grad_add");
      ck_assert_int_eq(add->kind, PN_OP_MEM);
      ck_assert_double_eq(add->bytes, 10.0 * (double)o->m * (double)o->n);
    }
    adds += strcmp(o->name, "main_grad_add") == 0;
  }
  ck_assert_int_eq(wgrads, 4); /* qkv, proj, fc1, fc2 */
  ck_assert_int_eq(adds, wgrads);
  const PnOp *fc1 = find(u, "fc1_wgrad");
  ck_assert_double_eq(g_array_index(u, PnOp, index_of(u, "fc1_wgrad") + 1).bytes, 10.0 * 2.0 * 14336.0 * 4096.0);
  ck_assert_int_eq(fc1->m * fc1->n, 2 * 14336 * 4096);

  PnScenario moe;
  moe_scenario_ops(&moe, 1, PN_MOE_DISPATCHER_ALLTOALL);
  g_autoptr(GArray) mb = layer(&moe, PN_PHASE_BWD);
  ck_assert_int_eq(find(mb, "moe_fc1_wgrad")->accum_into, PN_DT_FP32);
  ck_assert_int_eq(find(mb, "router_wgrad")->accum_into, PN_DT_NONE);
  ck_assert_int_eq(index_of(mb, "main_grad_add"), index_of(mb, "router_wgrad") + 1);
}
END_TEST

/* Dropout (hidden_dropout > 0) runs as its own memory class (PN_MEM_DROPOUT: the RNG and the mask):
 * the bias-dropout-adds of the forward (7 B per element, the mask included) and their backward
 * (5 B) are marked, and without dropout the forward adds are plain (6 B, not marked) and have no
 * backward of their own. */
START_TEST(test_dropout_ops)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  const double hsp     = 8192.0 * 4096.0;
  g_autoptr(GArray) f0 = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b0 = layer(&sc, PN_PHASE_BWD);
  ck_assert(!find(f0, "dropout_add")->rng && !find(f0, "dropout_add2")->rng);
  ck_assert_double_eq(find(f0, "dropout_add")->bytes, 6.0 * hsp);
  ck_assert_ptr_null(find(b0, "dropout_add_bwd"));
  sc.model.hidden_dropout = 0.1;
  g_autoptr(GArray) f     = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b     = layer(&sc, PN_PHASE_BWD);
  ck_assert(find(f, "dropout_add")->rng && find(f, "dropout_add2")->rng);
  ck_assert_double_eq(find(f, "dropout_add")->bytes, 7.0 * hsp);
  ck_assert(find(b, "dropout_add_bwd")->rng && find(b, "dropout_add2_bwd")->rng);
  ck_assert_double_eq(find(b, "dropout_add_bwd")->bytes, 5.0 * hsp);
  for (guint i = 0; i < b->len; i++) {
    const PnOp *o = &g_array_index(b, PnOp, i);
    ck_assert(!o->rng || (o->kind == PN_OP_MEM && strstr(o->name, "dropout") != NULL));
  }
  /* bias_dropout_fusion off: Megatron-Core's eager _bias_dropout_add_func, x + bias (4 B, biased
   * models only), dropout (5 B with its mask, kept) and residual + out (6 B); the backward as fused */
  sc.training.bias_dropout_fusion = false;
  sc.model.add_bias_linear        = true;
  g_autoptr(GArray) fu            = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) bu            = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(fu, "bias_add")->bytes, 4.0 * hsp);
  ck_assert_double_eq(find(fu, "dropout")->bytes, 5.0 * hsp);
  ck_assert(find(fu, "dropout")->rng && !find(fu, "dropout_add")->rng);
  ck_assert_double_eq(find(fu, "dropout")->saved_bytes, hsp);
  ck_assert_double_eq(find(fu, "dropout_add")->bytes, 6.0 * hsp);
  ck_assert_int_eq(index_of(fu, "dropout"), index_of(fu, "bias_add") + 1);
  ck_assert_int_eq(index_of(fu, "dropout_add"), index_of(fu, "dropout") + 1);
  ck_assert_ptr_nonnull(find(fu, "dropout2"));
  ck_assert_double_eq(find(bu, "dropout_add_bwd")->bytes, 5.0 * hsp);
  sc.model.hidden_dropout = 0.0;
  g_autoptr(GArray) fn    = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_null(find(fn, "dropout"));
  ck_assert_double_eq(find(fn, "dropout_add")->bytes, 6.0 * hsp);
}
END_TEST

/* TP=1, T = 8192: qkv n = (heads + 2*groups) * kv_channels = (32 + 16) * 128 = 6144. */
START_TEST(test_qkv_dims_tp1)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  const PnOp *qkv     = find(f, "qkv");
  ck_assert_ptr_nonnull(qkv);
  ck_assert_int_eq(qkv->kind, PN_OP_GEMM);
  ck_assert_int_eq(qkv->role, PN_GEMM_FPROP);
  ck_assert_int_eq(qkv->m, 8192);
  ck_assert_int_eq(qkv->n, 6144);
  ck_assert_int_eq(qkv->k, 4096);
  ck_assert_int_eq(qkv->dtype, PN_DT_BF16);
  ck_assert_double_eq(qkv->flops, 2.0 * 8192 * 6144 * 4096);
  /* fc1 gated: n = 2 * 14336; fc2 k = 14336; proj k = 32 * 128. */
  ck_assert_int_eq(find(f, "fc1")->n, 28672);
  ck_assert_int_eq(find(f, "fc2")->k, 14336);
  ck_assert_int_eq(find(f, "proj")->k, 4096);
  ck_assert_int_eq(find(f, "proj")->n, 4096);
  /* No TP: no communication at all. */
  ck_assert_int_eq(count(f, PN_OP_COMM, -1), 0);
  /* ln1: read x + write y at 2 B/elem over all 8192 tokens. */
  ck_assert_double_eq(find(f, "ln1")->bytes, 8192.0 * 4096 * 4);
}
END_TEST

/* TP=4 with SP: norms on T/tp = 2048 tokens; AG of ln out S = T*h*2 = 8192*4096*2 = 64 MiB. */
START_TEST(test_tp4_sp_comm)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  const PnOp *ln1     = find(f, "ln1");
  ck_assert_double_eq(ln1->bytes, 2048.0 * 4096 * 4);
  const PnOp *ag = find(f, "qkv_ag");
  ck_assert_ptr_nonnull(ag);
  ck_assert_int_eq(ag->kind, PN_OP_COMM);
  ck_assert_int_eq(ag->coll, PN_COLL_ALL_GATHER);
  ck_assert_int_eq(ag->group, PN_GROUP_TP);
  ck_assert_double_eq(ag->bytes, 67108864.0);
  ck_assert_str_eq(ag->ub_slot, "qkv_fprop");
  const PnOp *qkv = find(f, "qkv");
  ck_assert_int_eq(qkv->m, 8192);
  ck_assert_int_eq(qkv->n, 1536);
  ck_assert_str_eq(qkv->ub_slot, "qkv_fprop");
  const PnOp *rs = find(f, "proj_rs");
  ck_assert_int_eq(rs->coll, PN_COLL_REDUCE_SCATTER);
  ck_assert_double_eq(rs->bytes, 67108864.0);
  ck_assert_str_eq(rs->ub_slot, "proj_fprop");
  ck_assert_str_eq(find(f, "fc2_rs")->ub_slot, "fc2_fprop");
  ck_assert_str_eq(find(f, "fc1_ag")->ub_slot, "fc1_fprop");
  /* Issue order: ln1 < qkv_ag < qkv < rope < core_attn < proj < proj_rs < dropout_add < ln2 <
   * fc1_ag < fc1 < act < fc2 < fc2_rs < dropout_add2. */
  const char *order[] = {"ln1", "qkv_ag", "qkv", "rope", "core_attn", "proj",   "proj_rs",     "dropout_add",
                         "ln2", "fc1_ag", "fc1", "act",  "fc2",       "fc2_rs", "dropout_add2"};
  ck_assert_int_eq(f->len, G_N_ELEMENTS(order));
  for (guint i = 0; i < G_N_ELEMENTS(order); i++)
    ck_assert_str_eq(g_array_index(f, PnOp, i).name, order[i]);
  ck_assert_int_eq(count(f, PN_OP_COMM, -1), 4);
}
END_TEST

/* FP8 with SP: TE gathers the fp8 ln output (1 B/elem), the norm writes fp8, row-parallel inputs
 * get a cast_transpose; RS stays bf16. */
START_TEST(test_tp4_sp_fp8)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  sc.training.precision = PN_PREC_FP8;
  g_autoptr(GArray) f   = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(f, "qkv_ag")->bytes, 33554432.0);
  ck_assert_double_eq(find(f, "ln1")->bytes, 2048.0 * 4096 * 3);
  ck_assert_int_eq(find(f, "qkv")->dtype, PN_DT_FP8);
  ck_assert_double_eq(find(f, "proj_rs")->bytes, 67108864.0);
  /* cast_transpose of the attention output: T * q/tp * (2 + 1 + 1) = 8192 * 1024 * 4 */
  ck_assert_double_eq(find(f, "proj_in_cast")->bytes, 8192.0 * 1024 * 4);
  ck_assert_int_lt(index_of(f, "proj_in_cast"), index_of(f, "proj"));
  ck_assert_ptr_nonnull(find(f, "fc2_in_cast"));
  /* FP8 changes no FLOPs. */
  PnScenario bf;
  scenario(&bf, 8, 4, true, 1, 1, 1);
  g_autoptr(GArray) fb = layer(&bf, PN_PHASE_FWD);
  ck_assert_double_eq(sum_flops(f, -1, -1), sum_flops(fb, -1, -1));
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(b, "proj_dgrad_ag")->bytes, 33554432.0);
  ck_assert_double_eq(find(b, "qkv_wgrad_rs")->bytes, 67108864.0);
}
END_TEST

static int count_named(const GArray *ops, const char *name, int phase)
{
  int n = 0;
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *o = &g_array_index(ops, PnOp, i);
    if (strcmp(o->name, name) == 0 && (phase < 0 || o->phase == phase))
      n++;
  }
  return n;
}

/* Tensorwise (current) scaling, TP4 with SP, Llama 3 8B (T = 8192, Tsp = 2048, h = 4096): the
 * norm writes bf16 with its amax (Tsp*h*4), the amax is all-reduced over TP (4 B), the scale is
 * computed (12 B) and the rowwise cast moves 3 B/elem before the fp8 gather; proj's input gets an
 * amax pass (T*q/tp*2 B) before its cast_transpose. Per dense layer: 2 TP amax all-reduces forward
 * (qkv, fc1 inputs) and 2 backward (proj, fc2 dY). Delayed scaling has none of these ops. */
START_TEST(test_fp8_tensorwise)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  sc.training.precision  = PN_PREC_FP8;
  sc.training.fp8_recipe = PN_FP8_TENSORWISE;
  g_autoptr(GArray) f    = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(f, "ln1")->bytes, 2048.0 * 4096 * 4);
  ck_assert_double_eq(find(f, "qkv_in_cast")->bytes, 2048.0 * 4096 * 3);
  const PnOp *ar = find(f, "fp8_amax_tp_ar");
  ck_assert(ar->kind == PN_OP_COMM && ar->coll == PN_COLL_ALL_REDUCE && ar->group == PN_GROUP_TP);
  ck_assert_double_eq(ar->bytes, 4.0);
  ck_assert_double_eq(find(f, "fp8_scale")->bytes, 12.0);
  ck_assert_int_lt(index_of(f, "fp8_amax_tp_ar"), index_of(f, "fp8_scale"));
  ck_assert_int_lt(index_of(f, "fp8_scale"), index_of(f, "qkv_in_cast"));
  ck_assert_int_lt(index_of(f, "qkv_in_cast"), index_of(f, "qkv_ag"));
  ck_assert_double_eq(find(f, "fp8_amax")->bytes, 8192.0 * 1024 * 2); /* proj's input */
  ck_assert_int_eq(count_named(f, "fp8_amax_tp_ar", -1), 2);
  ck_assert_int_eq(count_named(f, "fp8_scale", -1), 4); /* ln1, proj in, ln2, fc2 in */
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  ck_assert_int_eq(count_named(b, "fp8_amax_tp_ar", -1), 2);
  ck_assert_int_eq(count_named(b, "fp8_scale", -1), 4); /* dY of fc2, fc1, proj, qkv */
  sc.training.fp8_recipe = PN_FP8_DELAYED;
  g_autoptr(GArray) fd   = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(fd, "ln1")->bytes, 2048.0 * 4096 * 3);
  ck_assert_ptr_null(find(fd, "fp8_scale"));
  ck_assert_ptr_null(find(fd, "qkv_in_cast"));
  /* without SP (TP1) the amax stays local */
  scenario(&sc, 8, 1, false, 1, 1, 1);
  sc.training.precision  = PN_PREC_FP8;
  sc.training.fp8_recipe = PN_FP8_TENSORWISE;
  g_autoptr(GArray) f1   = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b1   = layer(&sc, PN_PHASE_BWD);
  ck_assert_ptr_null(find(f1, "fp8_amax_tp_ar"));
  ck_assert_ptr_null(find(b1, "fp8_amax_tp_ar"));
}
END_TEST

/* Delayed scaling's amax reduction at the autocast exit, TP4 x DP2, 32 layers on the rank: forward
 * n = 3 x 4 GEMMs x 32 = 384 floats: cat 8n = 3072 B, all-reduce 4n = 1536 B over the amax group,
 * update 20n = 7680 B; backward n = 256 (all-reduce 1024 B). One GPU: no all-reduce. Tensorwise
 * and bf16: nothing. */
START_TEST(test_fp8_amax_ops)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  sc.training.precision = PN_PREC_FP8;
  g_autoptr(GArray) f   = ops_new();
  pn_workload_fp8_amax_ops(&sc, PN_PHASE_FWD, 32, 0, f);
  ck_assert_int_eq(f->len, 3);
  ck_assert_double_eq(find(f, "fp8_amax_cat")->bytes, 3072.0);
  const PnOp *ar = find(f, "fp8_amax_all_reduce");
  ck_assert(ar->coll == PN_COLL_ALL_REDUCE && ar->group == PN_GROUP_AMAX && ar->dtype == PN_DT_FP32);
  ck_assert_double_eq(ar->bytes, 1536.0);
  ck_assert_double_eq(find(f, "fp8_scale_update")->bytes, 7680.0);
  g_autoptr(GArray) b = ops_new();
  pn_workload_fp8_amax_ops(&sc, PN_PHASE_BWD, 32, 0, b);
  ck_assert_double_eq(find(b, "fp8_amax_all_reduce")->bytes, 1024.0);
  ck_assert_int_eq(find(b, "fp8_amax_all_reduce")->phase, PN_PHASE_BWD);
  scenario(&sc, 1, 1, false, 1, 1, 1);
  sc.training.precision = PN_PREC_FP8;
  g_autoptr(GArray) one = ops_new();
  pn_workload_fp8_amax_ops(&sc, PN_PHASE_FWD, 32, 0, one);
  ck_assert_int_eq(one->len, 2);
  ck_assert_ptr_null(find(one, "fp8_amax_all_reduce"));
  sc.training.fp8_recipe = PN_FP8_TENSORWISE;
  g_autoptr(GArray) cs   = ops_new();
  pn_workload_fp8_amax_ops(&sc, PN_PHASE_FWD, 32, 0, cs);
  ck_assert_int_eq(cs->len, 0);
  sc.training.precision  = PN_PREC_BF16;
  sc.training.fp8_recipe = PN_FP8_DELAYED;
  pn_workload_fp8_amax_ops(&sc, PN_PHASE_FWD, 32, 0, cs);
  ck_assert_int_eq(cs->len, 0);
}
END_TEST

/* First micro-batch weight casts, Llama 3 8B at TP4: qkv = h*(q+2kv)/tp = 4096*1536 elements,
 * cast_transpose 4 B/elem; one op per weight (4 dense), and all four together are the layer's
 * linear parameters. Tensorwise adds amax and scale per weight (12 ops); fp8_param_gather leaves
 * the transposes, 2 B/elem. */
START_TEST(test_fp8_weight_ops)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  sc.training.precision = PN_PREC_FP8;
  g_autoptr(GArray) w   = ops_new();
  pn_workload_fp8_weight_ops(&sc, w);
  ck_assert_int_eq(w->len, 4);
  ck_assert_double_eq(find(w, "qkv_weight_cast")->bytes, 4096.0 * 1536 * 4);
  double elems = 0.0;
  for (guint i = 0; i < w->len; i++)
    elems += g_array_index(w, PnOp, i).bytes / 4.0;
  ck_assert_double_eq(elems, pn_workload_layer_linear_params(&sc));
  sc.training.fp8_recipe = PN_FP8_TENSORWISE;
  g_autoptr(GArray) cs   = ops_new();
  pn_workload_fp8_weight_ops(&sc, cs);
  ck_assert_int_eq(cs->len, 12);
  ck_assert_double_eq(find(cs, "fp8_amax")->bytes, 4096.0 * 1536 * 2);
  sc.ddp.fp8_param_gather = true;
  g_autoptr(GArray) pg    = ops_new();
  pn_workload_fp8_weight_ops(&sc, pg);
  ck_assert_int_eq(pg->len, 4);
  ck_assert_double_eq(find(pg, "qkv_weight_cast")->bytes, 4096.0 * 1536 * 2);
  sc.training.precision = PN_PREC_BF16;
  g_autoptr(GArray) bf  = ops_new();
  pn_workload_fp8_weight_ops(&sc, bf);
  ck_assert_int_eq(bf->len, 0);
}
END_TEST

/* TP=4 without SP: all-reduces after proj and fc2 (S = T*h*2), norms on all T tokens, no AG. */
START_TEST(test_tp4_no_sp)
{
  PnScenario sc;
  scenario(&sc, 8, 4, false, 1, 1, 1);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_null(find(f, "qkv_ag"));
  const PnOp *ar = find(f, "proj_rs");
  ck_assert_int_eq(ar->coll, PN_COLL_ALL_REDUCE);
  ck_assert_double_eq(ar->bytes, 67108864.0);
  ck_assert_ptr_null(ar->ub_slot);
  ck_assert_int_eq(find(f, "fc2_rs")->coll, PN_COLL_ALL_REDUCE);
  ck_assert_double_eq(find(f, "ln1")->bytes, 8192.0 * 4096 * 4);
  ck_assert_int_eq(count(f, PN_OP_COMM, -1), 2);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  /* backward: AR of dX after the qkv and fc1 dgrads only */
  ck_assert_int_eq(count(b, PN_OP_COMM, -1), 2);
  ck_assert_int_eq(find(b, "qkv_wgrad_rs")->coll, PN_COLL_ALL_REDUCE);
  ck_assert_int_eq(find(b, "fc1_wgrad_rs")->coll, PN_COLL_ALL_REDUCE);
}
END_TEST

/* Backward with SP: order and userbuffers slots per reference §2.1. */
START_TEST(test_bwd_order_and_slots)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  struct {
    const char *name, *slot;
  } exp[] = {
      {"fc2_dgrad_ag", "fc2_dgrad"},
      {"fc2_dgrad", "fc2_dgrad"},
      {"fc2_wgrad", "fc2_wgrad"},
      {"act_bwd", NULL},
      {"fc1_dgrad_ag", "fc1_dgrad"},
      {"fc1_dgrad", "fc1_dgrad"},
      {"fc1_wgrad_rs", "fc1_wgrad"},
      {"fc1_wgrad", "fc1_wgrad"},
      {"ln2_bwd", NULL},
      {"residual_grad_add2", NULL},
      {"proj_dgrad_ag", "proj_dgrad"},
      {"proj_dgrad", "proj_dgrad"},
      {"proj_wgrad", "proj_wgrad"},
      {"core_attn_bwd", NULL},
      {"rope_bwd", NULL},
      {"qkv_dgrad_ag", "qkv_dgrad"},
      {"qkv_dgrad", "qkv_dgrad"},
      {"qkv_wgrad_rs", "qkv_wgrad"},
      {"qkv_wgrad", "qkv_wgrad"},
      {"ln1_bwd", NULL},
      {"residual_grad_add", NULL},
      {"param_grad_adds", NULL},
  };
  ck_assert_int_eq(b->len, G_N_ELEMENTS(exp));
  for (guint i = 0; i < G_N_ELEMENTS(exp); i++) {
    const PnOp *o = &g_array_index(b, PnOp, i);
    ck_assert_str_eq(o->name, exp[i].name);
    if (exp[i].slot)
      ck_assert_str_eq(o->ub_slot, exp[i].slot);
    else
      ck_assert_ptr_null(o->ub_slot);
    ck_assert_int_eq(o->phase, PN_PHASE_BWD);
  }
  /* proj dgrad: m=T, n=k_fwd=q/tp=1024, k=n_fwd=h; wgrad: m=n_fwd=h, n=k_fwd=1024, k=T. */
  const PnOp *dg = find(b, "proj_dgrad"), *wg = find(b, "proj_wgrad");
  ck_assert_int_eq(dg->role, PN_GEMM_DGRAD);
  ck_assert_int_eq(dg->m, 8192);
  ck_assert_int_eq(dg->n, 1024);
  ck_assert_int_eq(dg->k, 4096);
  ck_assert_int_eq(wg->role, PN_GEMM_WGRAD);
  ck_assert_int_eq(wg->m, 4096);
  ck_assert_int_eq(wg->n, 1024);
  ck_assert_int_eq(wg->k, 8192);
  /* qkv dgrad: m=T, n=h, k=1536 */
  const PnOp *qd = find(b, "qkv_dgrad");
  ck_assert_int_eq(qd->n, 4096);
  ck_assert_int_eq(qd->k, 1536);
  ck_assert_int_eq(find(b, "qkv_wgrad_rs")->coll, PN_COLL_REDUCE_SCATTER);
  ck_assert_double_eq(find(b, "qkv_dgrad_ag")->bytes, 67108864.0);
  ck_assert_double_eq(find(b, "proj_dgrad_ag")->bytes, 67108864.0);
}
END_TEST

/* ---- ops: FLOPs ---- */

/* Forward GEMMs of one layer: 2*T*(h*(q+2kv) + q*h + h*ffn*3)/tp with q = 4096, kv = 1024:
 * 2*8192*(4096*6144 + 4096*4096 + 4096*14336*3)/tp. */
START_TEST(test_layer_gemm_flops)
{
  const double T = 8192, h = 4096, q = 4096, kv = 1024, ffn = 14336;
  const int64_t tps[] = {1, 2, 4, 8};
  for (guint i = 0; i < G_N_ELEMENTS(tps); i++) {
    PnScenario sc;
    scenario(&sc, 8, tps[i], true, 1, 1, 1);
    g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
    g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
    double expect       = 2.0 * T * (h * (q + 2 * kv) + q * h + h * ffn * 3) / (double)tps[i];
    ck_assert_rel(sum_flops(f, PN_OP_GEMM, -1), expect, 1e-12);
    /* backward GEMMs (dgrad + wgrad) = 2x forward */
    ck_assert_rel(sum_flops(b, PN_OP_GEMM, -1), 2.0 * expect, 1e-12);
    ck_assert_int_eq(count(b, PN_OP_GEMM, -1), 2 * count(f, PN_OP_GEMM, -1));
  }
}
END_TEST

/* Causal attention forward per GPU: 4*b*s*s*heads*d/2 / tp = 2*8192^2*32*128 / tp; backward 2.5x. */
START_TEST(test_attention_flops)
{
  PnScenario sc;
  scenario(&sc, 8, 2, true, 1, 1, 1);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  const PnOp *a       = find(f, "core_attn");
  double expect       = 2.0 * 8192.0 * 8192.0 * 32 * 128 / 2;
  ck_assert_double_eq(a->flops, expect);
  ck_assert_int_eq(a->heads, 16);
  ck_assert_int_eq(a->kv_heads, 4);
  ck_assert_int_eq(a->head_dim, 128);
  ck_assert(a->causal && !a->backward);
  const PnOp *ab = find(b, "core_attn_bwd");
  ck_assert(ab->backward);
  ck_assert_double_eq(ab->flops, 2.5 * expect);
}
END_TEST

/* Full recompute: the BWD list starts with the whole forward (phase RECOMPUTE, TP comms too), so
 * backward FLOPs grow by exactly the forward FLOPs. */
START_TEST(test_full_recompute)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  g_autoptr(GArray) f                = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b0               = layer(&sc, PN_PHASE_BWD);
  sc.recompute.recompute_granularity = PN_RECOMPUTE_FULL;
  g_autoptr(GArray) b                = layer(&sc, PN_PHASE_BWD);
  ck_assert_rel(sum_flops(b, -1, -1), sum_flops(b0, -1, -1) + sum_flops(f, -1, -1), 1e-12);
  ck_assert_rel(sum_flops(b, -1, PN_PHASE_RECOMPUTE), sum_flops(f, -1, -1), 1e-12);
  ck_assert_int_eq(b->len, b0->len + f->len);
  for (guint i = 0; i < f->len; i++) {
    const PnOp *r = &g_array_index(b, PnOp, i), *o = &g_array_index(f, PnOp, i);
    ck_assert_int_eq(r->phase, PN_PHASE_RECOMPUTE);
    ck_assert_str_eq(r->name, o->name);
    ck_assert_double_eq(r->bytes, o->bytes);
  }
  ck_assert_int_eq(count(b, PN_OP_COMM, PN_PHASE_RECOMPUTE), 4);
  /* The forward list itself does not change with recompute (only what it saves). */
  g_autoptr(GArray) f2 = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(sum_flops(f2, -1, -1), sum_flops(f, -1, -1));
}
END_TEST

/* Selective recompute: only the core attention forward is re-run, right before its backward. */
START_TEST(test_selective_recompute)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  g_autoptr(GArray) f                = layer(&sc, PN_PHASE_FWD);
  sc.recompute.recompute_granularity = PN_RECOMPUTE_SELECTIVE;
  g_autoptr(GArray) b                = layer(&sc, PN_PHASE_BWD);
  ck_assert_int_eq(count(b, -1, PN_PHASE_RECOMPUTE), 1);
  ck_assert_double_eq(sum_flops(b, -1, PN_PHASE_RECOMPUTE), find(f, "core_attn")->flops);
  int r = -1;
  for (guint i = 0; i < b->len; i++)
    if (g_array_index(b, PnOp, i).phase == PN_PHASE_RECOMPUTE)
      r = (int)i;
  ck_assert_int_eq(r + 1, index_of(b, "core_attn_bwd"));
}
END_TEST

static const PnOp *find_in(const GArray *ops, const char *name, int phase)
{
  for (guint i = 0; i < ops->len; i++) {
    const PnOp *o = &g_array_index(ops, PnOp, i);
    if (strcmp(o->name, name) == 0 && o->phase == phase)
      return o;
  }
  return NULL;
}

static int index_in(const GArray *ops, const char *name, int phase)
{
  const PnOp *o = find_in(ops, name, phase);
  return o ? (int)(o - &g_array_index(ops, PnOp, 0)) : -1;
}

static double saved_of(const GArray *ops, int phase)
{
  double s = 0.0;
  for (guint i = 0; i < ops->len; i++)
    if (g_array_index(ops, PnOp, i).phase == phase)
      s += g_array_index(ops, PnOp, i).saved_bytes;
  return s;
}

/* Megatron-Core's recompute_modules, module by module, on the MoE layer of moe_scenario_ops
 * (Tm = 4096 tokens of h 4096 enter it, R = 8192 rows reach the 2 local experts, F = 2048, fc1
 * out 4096; RMSNorm: 4 B of statistics per token) and on Llama 3 8B's dense layer (TP 2, SP:
 * 4096 tokens per norm). A checkpointed piece keeps its input, drops what its ops keep, and runs
 * its forward again (phase RECOMPUTE) when autograd reaches it. */
START_TEST(test_recompute_modules)
{
  const double hm = 4096.0 * 4096.0, R = 8192.0, F = 2048.0;
  PnScenario sc;
  moe_scenario_ops(&sc, 1, PN_MOE_DISPATCHER_ALLTOALL);
  sc.recompute.recompute_granularity = PN_RECOMPUTE_SELECTIVE;

  /* layernorm: with TE the input norm is qkv's (nothing to recompute); the MoE layer's pre-MLP
   * norm keeps its input only, the router no copy of its output; it re-runs first in the
   * backward (the MoE block's output gradient), keeping its output and statistics meanwhile */
  sc.recompute.recompute_modules = PN_RECOMPUTE_MODULE_LAYERNORM;
  g_autoptr(GArray) lf           = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) lb           = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(lf, "ln2")->saved_bytes, hm * 2.0);
  ck_assert_double_eq(find(lf, "router")->saved_bytes, 0.0);
  ck_assert_int_eq(index_in(lb, "ln2", PN_PHASE_RECOMPUTE), 0);
  ck_assert_double_eq(find_in(lb, "ln2", PN_PHASE_RECOMPUTE)->saved_bytes, hm * 2.0 + 4096.0 * 4.0);
  ck_assert_int_eq(find_in(lb, "ln2", PN_PHASE_RECOMPUTE)->node, PN_NODE_COMBINE);
  ck_assert_ptr_null(find_in(lb, "ln1", PN_PHASE_RECOMPUTE));
  ck_assert_int_eq(count(lb, -1, PN_PHASE_RECOMPUTE), 1); /* and no core attention */
  /* ... unless the router's TE graph holds the norm's output in a static buffer: Megatron-Core
   * recomputes it then only with the preprocess captured too and the alltoall dispatcher */
  sc.training.cuda_graph_impl    = PN_CUDA_GRAPH_IMPL_TE;
  sc.training.cuda_graph_modules = PN_CUDA_GRAPH_MOE_ROUTER;
  g_autoptr(GArray) gb           = layer(&sc, PN_PHASE_BWD);
  ck_assert_int_eq(count(gb, -1, PN_PHASE_RECOMPUTE), 0);
  sc.training.cuda_graph_modules = PN_CUDA_GRAPH_MOE_ROUTER | PN_CUDA_GRAPH_MOE_PREPROCESS;
  g_autoptr(GArray) gb2          = layer(&sc, PN_PHASE_BWD);
  ck_assert_int_eq(count(gb2, -1, PN_PHASE_RECOMPUTE), 1);
  sc.training.cuda_graph_impl    = PN_CUDA_GRAPH_IMPL_NONE;
  sc.training.cuda_graph_modules = 0;

  /* moe_act: fc2 keeps no input (R x F bf16), the activation still keeps fc1's output (the
   * checkpoint's input, R x 2F); the activation re-runs just before fc2's dgrad */
  sc.recompute.recompute_modules = PN_RECOMPUTE_MODULE_MOE_ACT;
  g_autoptr(GArray) af           = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) ab           = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(af, "moe_fc2")->saved_bytes, 0.0);
  ck_assert_double_eq(find(af, "moe_act")->saved_bytes, R * 2.0 * F * 2.0);
  ck_assert_double_eq(saved_of(lf, PN_PHASE_FWD) - saved_of(af, PN_PHASE_FWD), -hm * 2.0 - 4096.0 * 4.0 + R * F * 2.0);
  const PnOp *ar = find_in(ab, "moe_act", PN_PHASE_RECOMPUTE);
  ck_assert_double_eq(ar->bytes, find(af, "moe_act")->bytes);
  ck_assert_int_eq(index_in(ab, "moe_act", PN_PHASE_RECOMPUTE) + 1, index_of(ab, "moe_fc2_dgrad"));
  ck_assert_int_eq(count(ab, -1, PN_PHASE_RECOMPUTE), 1);
  /* with the GLU clamps the checkpoint covers them: nothing of theirs kept, both re-run */
  sc.model.activation_func_clamp_value = 7.0;
  g_autoptr(GArray) cf                 = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) cb                 = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(cf, "moe_act_clamp")->saved_bytes, 0.0);
  ck_assert_int_eq(index_in(cb, "moe_act_clamp", PN_PHASE_RECOMPUTE) + 1, index_in(cb, "moe_act", PN_PHASE_RECOMPUTE));
  sc.model.activation_func_clamp_value = 0.0;

  /* moe: the whole block from the router to the combine, its all-to-alls too, keeps nothing and
   * re-runs (as node COMBINE) before the combine's backward; the norm keeps its output for it */
  sc.recompute.recompute_modules  = PN_RECOMPUTE_MODULE_MOE;
  g_autoptr(GArray) mf            = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) mb            = layer(&sc, PN_PHASE_BWD);
  static const char *const body[] = {"router", "router_topk", "moe_fc1", "moe_act", "moe_fc2"};
  for (gsize i = 0; i < G_N_ELEMENTS(body); i++)
    ck_assert_msg(find(mf, body[i])->saved_bytes == 0.0, "%s keeps nothing", body[i]);
  ck_assert_double_eq(find(mf, "ln2")->saved_bytes, hm * 2.0 + 4096.0 * 4.0);
  ck_assert_ptr_nonnull(find_in(mb, "moe_dispatch_a2a", PN_PHASE_RECOMPUTE));
  ck_assert_int_lt(index_in(mb, "moe_combine_a2a", PN_PHASE_RECOMPUTE), index_of(mb, "moe_combine_a2a_bwd"));
  ck_assert_double_eq(sum_flops(mb, PN_OP_GEMM, PN_PHASE_RECOMPUTE),
                      find(mf, "router")->flops + find(mf, "moe_fc1")->flops + find(mf, "moe_fc2")->flops);
  for (guint i = 0; i < mb->len; i++)
    if (g_array_index(mb, PnOp, i).phase == PN_PHASE_RECOMPUTE)
      ck_assert_int_eq(g_array_index(mb, PnOp, i).node, PN_NODE_COMBINE);

  /* a dense layer (Llama 3 8B, TP 2 with SP, TE): layernorm recomputes nothing (TE fuses both
   * norms); mlp drops fc1's, the activation's and fc2's inputs, keeps the norm's input, and
   * re-runs the MLP with its TP collectives when its output gradient arrives */
  PnScenario dn;
  scenario(&dn, 8, 2, true, 1, 1, 1);
  const double hsp                   = 4096.0 * 4096.0;
  g_autoptr(GArray) nf               = layer(&dn, PN_PHASE_FWD);
  dn.recompute.recompute_granularity = PN_RECOMPUTE_SELECTIVE;
  dn.recompute.recompute_modules     = PN_RECOMPUTE_MODULE_LAYERNORM;
  g_autoptr(GArray) nlf              = layer(&dn, PN_PHASE_FWD);
  g_autoptr(GArray) nlb              = layer(&dn, PN_PHASE_BWD);
  ck_assert_double_eq(saved_of(nlf, PN_PHASE_FWD), saved_of(nf, PN_PHASE_FWD));
  ck_assert_int_eq(count(nlb, -1, PN_PHASE_RECOMPUTE), 0);
  dn.recompute.recompute_modules = PN_RECOMPUTE_MODULE_MLP;
  g_autoptr(GArray) pf           = layer(&dn, PN_PHASE_FWD);
  g_autoptr(GArray) pb           = layer(&dn, PN_PHASE_BWD);
  ck_assert_double_eq(find(pf, "ln2")->saved_bytes, hsp * 2.0);
  ck_assert_double_eq(find(pf, "fc1")->saved_bytes + find(pf, "act")->saved_bytes + find(pf, "fc2")->saved_bytes, 0.0);
  ck_assert_ptr_nonnull(find_in(pb, "fc1_ag", PN_PHASE_RECOMPUTE));
  ck_assert_ptr_nonnull(find_in(pb, "fc2_rs", PN_PHASE_RECOMPUTE));
  ck_assert_int_lt(index_in(pb, "fc2", PN_PHASE_RECOMPUTE), index_of(pb, "fc2_dgrad"));
  ck_assert_double_eq(sum_flops(pb, PN_OP_GEMM, PN_PHASE_RECOMPUTE), find(pf, "fc1")->flops + find(pf, "fc2")->flops);
  ck_assert(pn_workload_layer_activation_bytes(&dn, PN_RECOMPUTE_SELECTIVE) <
            pn_workload_layer_activation_bytes(&dn, PN_RECOMPUTE_NONE));
  /* the local layers' norms are modules of their own: both recomputed, each before the first
   * backward op that needs its output (qkv's, the MLP's) */
  dn.training.transformer_impl   = PN_TRANSFORMER_IMPL_LOCAL;
  dn.recompute.recompute_modules = PN_RECOMPUTE_MODULE_LAYERNORM;
  g_autoptr(GArray) of           = layer(&dn, PN_PHASE_FWD);
  g_autoptr(GArray) ob           = layer(&dn, PN_PHASE_BWD);
  ck_assert_double_eq(find(of, "ln1")->saved_bytes, hsp * 2.0);
  ck_assert_double_eq(find(of, "qkv")->saved_bytes + find(of, "fc1")->saved_bytes, 0.0);
  ck_assert_int_lt(index_in(ob, "ln1", PN_PHASE_RECOMPUTE), index_of(ob, "qkv_dgrad"));
  ck_assert_int_lt(index_in(ob, "ln2", PN_PHASE_RECOMPUTE), index_of(ob, "fc2_dgrad"));
  ck_assert_int_eq(count(ob, -1, PN_PHASE_RECOMPUTE), 2);
}
END_TEST

/* CP = 2, p2p: q holds s/cp = 4096 tokens against kv = 8192; FLOPs = full causal / cp. KV
 * exchange (cp-1)*2*(s/cp)*b*(g/tp)*d*2 = 1*2*4096*8*128*2 = 16 MiB; backward twice that. */
START_TEST(test_cp_p2p)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 2);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  const PnOp *a       = find(f, "core_attn");
  ck_assert_int_eq(a->seq_q, 4096);
  ck_assert_int_eq(a->seq_kv, 8192);
  ck_assert_double_eq(a->flops, 2.0 * 8192.0 * 8192.0 * 32 * 128 / 2);
  ck_assert_int_eq(find(f, "qkv")->m, 4096);
  const PnOp *kv = find(f, "cp_kv_p2p");
  ck_assert_int_eq(kv->group, PN_GROUP_CP);
  ck_assert_int_eq(kv->coll, PN_COLL_SEND_RECV);
  ck_assert_double_eq(kv->bytes, 16777216.0);
  ck_assert_int_eq(index_of(f, "cp_kv_p2p") + 1, index_of(f, "core_attn"));
  const PnOp *kvb = find(b, "cp_kv_dkv_p2p");
  ck_assert_double_eq(kvb->bytes, 2.0 * 16777216.0);
  ck_assert_int_eq(index_of(b, "cp_kv_dkv_p2p") + 1, index_of(b, "core_attn_bwd"));
  /* cp_comm_type all_gather: S = s*b*(g/tp)*d*2*2 = 8192*8*128*4 = 32 MiB */
  sc.comm_overlap.cp_comm_type = PN_CP_ALL_GATHER;
  g_autoptr(GArray) f2         = layer(&sc, PN_PHASE_FWD);
  const PnOp *ag               = find(f2, "cp_kv_ag");
  ck_assert_int_eq(ag->coll, PN_COLL_ALL_GATHER);
  ck_assert_double_eq(ag->bytes, 33554432.0);
  /* a2a: attention on all s tokens and heads/cp, same FLOPs */
  sc.comm_overlap.cp_comm_type = PN_CP_A2A;
  g_autoptr(GArray) f3         = layer(&sc, PN_PHASE_FWD);
  const PnOp *a3               = find(f3, "core_attn");
  ck_assert_int_eq(a3->seq_q, 8192);
  ck_assert_int_eq(a3->heads, 16);
  ck_assert_double_eq(a3->flops, a->flops);
  ck_assert_ptr_nonnull(find(f3, "cp_qkv_a2a"));
  ck_assert_ptr_nonnull(find(f3, "cp_out_a2a"));
}
END_TEST

/* ---- embedding, head, optimizer, parameters ---- */

/* The loss over Llama 3 8B's logits at TP 1, 8192 tokens x 128256 = 1,050,673,152 per micro-batch:
 * Megatron-Core's unfused cross entropy moves 38 B per logit forward (cast 2 r + 4 w, max 4 r,
 * subtract 4 r + 4 w, exp 4 r + 4 w, sum 4 r, divide 4 r + 4 w) and 14 backward (4 r + 4 w, cast
 * 4 r + 2 w), keeping the fp32 softmax (4); the jit-fused "native" one 22 and 6, keeping 4;
 * Transformer Engine's Triton one 6 and 4, keeping the bf16 gradient (2). */
START_TEST(test_cross_entropy_bytes)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  const double logits = 8192.0 * 128256.0;
  const struct {
    bool fusion;
    PnCeFusionImpl impl;
    double fwd, bwd, kept;
  } cases[] = {
      {false, PN_CE_FUSION_TE, 38, 14, 4}, {true, PN_CE_FUSION_NATIVE, 22, 6, 4}, {true, PN_CE_FUSION_TE, 6, 4, 2}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    sc.training.cross_entropy_loss_fusion = cases[i].fusion;
    sc.training.cross_entropy_fusion_impl = cases[i].impl;
    g_autoptr(GArray) f                   = g_array_new(FALSE, FALSE, sizeof(PnOp));
    g_autoptr(GArray) b                   = g_array_new(FALSE, FALSE, sizeof(PnOp));
    pn_workload_head_ops(&sc, PN_PHASE_FWD, f);
    pn_workload_head_ops(&sc, PN_PHASE_BWD, b);
    ck_assert_double_eq(find(f, "cross_entropy")->bytes, cases[i].fwd * logits);
    ck_assert_double_eq(find(f, "cross_entropy")->saved_bytes, cases[i].kept * logits);
    ck_assert_double_eq(find(b, "cross_entropy_bwd")->bytes, cases[i].bwd * logits);
  }
}
END_TEST

/* 128256 is a multiple of 128 (= 1002 * 128); with tp 4 the multiple is 512: 251 * 512 = 128512;
 * with tp 8, 1024: 126 * 1024 = 129024. */
START_TEST(test_padded_vocab)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  ck_assert_int_eq(pn_workload_padded_vocab(&sc), 128256);
  sc.parallel.tensor_model_parallel_size = 4;
  ck_assert_int_eq(pn_workload_padded_vocab(&sc), 128512);
  sc.parallel.tensor_model_parallel_size = 8;
  ck_assert_int_eq(pn_workload_padded_vocab(&sc), 129024);
  sc.model.vocab_size = 50257; /* GPT-2 BPE at tp 8 -> 51200 */
  ck_assert_int_eq(pn_workload_padded_vocab(&sc), 51200);
}
END_TEST

/* Llama3-8B: layer = 4096*6144 + 4096*4096 + 4096*28672 + 14336*4096 + 2*4096 = 218,112,000;
 * model = 32 layers + embedding 128256*4096 + output 128256*4096 + final norm 4096
 *       = 8,030,261,248 (the published 8.03B). */
START_TEST(test_params)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  ck_assert_double_eq(pn_workload_layer_params(&sc), 218112000.0);
  double total = 32 * pn_workload_layer_params(&sc) + pn_workload_embedding_params(&sc) + pn_workload_head_params(&sc);
  ck_assert_double_eq(total, 8030261248.0);
  sc.parallel.tensor_model_parallel_size = 4;
  ck_assert_double_eq(pn_workload_layer_params(&sc), (218112000.0 - 8192) / 4 + 8192);
  ck_assert_double_eq(pn_workload_embedding_params(&sc), 128512.0 / 4 * 4096);
}
END_TEST

START_TEST(test_head_and_embedding)
{
  PnScenario sc;
  scenario(&sc, 8, 8, true, 1, 1, 1);
  g_autoptr(GArray) hf = ops_new();
  pn_workload_head_ops(&sc, PN_PHASE_FWD, hf);
  const PnOp *lg = find(hf, "logits");
  ck_assert_int_eq(lg->m, 8192);
  ck_assert_int_eq(lg->n, 129024 / 8);
  ck_assert_int_eq(lg->k, 4096);
  ck_assert_int_eq(lg->dtype, PN_DT_BF16);
  ck_assert_double_eq(find(hf, "output_ag")->bytes, 67108864.0);
  ck_assert_double_eq(find(hf, "cross_entropy_ar")->bytes, 8192.0 * 12);
  g_autoptr(GArray) hb = ops_new();
  pn_workload_head_ops(&sc, PN_PHASE_BWD, hb);
  ck_assert_rel(sum_flops(hb, PN_OP_GEMM, -1), 2.0 * lg->flops, 1e-12);
  ck_assert_int_eq(find(hb, "output_rs")->coll, PN_COLL_REDUCE_SCATTER);
  g_autoptr(GArray) ef = ops_new();
  pn_workload_embedding_ops(&sc, PN_PHASE_FWD, ef);
  ck_assert_int_eq(find(ef, "embedding_rs")->coll, PN_COLL_REDUCE_SCATTER);
  g_autoptr(GArray) eb = ops_new();
  pn_workload_embedding_ops(&sc, PN_PHASE_BWD, eb);
  ck_assert_ptr_nonnull(find(eb, "embedding_grad_ag"));
  ck_assert_ptr_nonnull(find(eb, "embedding_wgrad"));
  sc.parallel.sequence_parallel = false;
  g_autoptr(GArray) ef2         = ops_new();
  pn_workload_embedding_ops(&sc, PN_PHASE_FWD, ef2);
  ck_assert_int_eq(find(ef2, "embedding_ar")->coll, PN_COLL_ALL_REDUCE);
}
END_TEST

/* The step, per parameter of the shard (ops.h). Megatron's own fp32 masters, fp32 grads: no
 * cast, grad norm 4 B, Adam (4 reads + 3 writes) x 4 B = 28 B, the masters copied into the bf16
 * parameters 4 + 2 = 6 B, the next step's zeroed buffer 4 B per unsharded param. With bf16 grads
 * the step casts them first (2 + 4 = 6 B) and zeroes 2 B. The precision-aware optimizer in bf16
 * training: Transformer Engine holds the masters as 16-bit remainders and reads the bf16 grads in
 * place: grad norm 2 B, Adam 2 (grad) + 2 x (2 + 2) (parameter and remainder) + 2 x (4 + 4)
 * (fp32 moments) = 26 B, 2 + 8 + 2 x (2 + 2) = 18 B with bf16 moments, no cast, no copy; with
 * fp16 masters 2 + (2 x 2 + 2) + 16 = 24 B. With current fp8 scaling and fp32 masters Megatron
 * keeps its masters: the default's cast, 4 + 8 + 2 x (2 + 2) = 20 B with bf16 moments, and the
 * copy, 4 + 1 into fp8 parameters with fp8_param_gather. torch.optim.AdamW (no fused Adam): eight
 * fp32 foreach passes, 80 B, and the same copy. */
START_TEST(test_optimizer_ops)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  sc.ddp.grad_reduce_in_fp32 = true;
  g_autoptr(GArray) o        = ops_new();
  pn_workload_optimizer_ops(&sc, 1e9, 8e9, o);
  ck_assert_ptr_null(find(o, "main_grad_cast"));
  ck_assert_double_eq(find(o, "grad_norm")->bytes, 4e9);
  ck_assert_double_eq(find(o, "adam_step")->bytes, 28e9);
  ck_assert_double_eq(find(o, "main_param_copy")->bytes, 6e9);
  ck_assert_double_eq(find(o, "zero_grad_buffer")->bytes, 32e9);
  ck_assert_int_eq(find(o, "adam_step")->phase, PN_PHASE_OPTIM);
  sc.ddp.grad_reduce_in_fp32 = false;
  g_autoptr(GArray) b        = ops_new();
  pn_workload_optimizer_ops(&sc, 1e9, 8e9, b);
  ck_assert_double_eq(find(b, "main_grad_cast")->bytes, 6e9);
  ck_assert_double_eq(find(b, "zero_grad_buffer")->bytes, 16e9);
  PnOptimizerBytes ob;
  pn_workload_optimizer_bytes(&sc, &ob);
  ck_assert(!ob.te_masters && ob.master_bytes == 4.0 && ob.moment_bytes == 8.0 && ob.grad_copy == 4.0);

  sc.training.use_precision_aware_optimizer = true;
  g_autoptr(GArray) pa                      = ops_new();
  pn_workload_optimizer_ops(&sc, 1e9, 8e9, pa);
  ck_assert_ptr_null(find(pa, "main_grad_cast"));
  ck_assert_ptr_null(find(pa, "main_param_copy"));
  ck_assert_double_eq(find(pa, "grad_norm")->bytes, 2e9);
  ck_assert_double_eq(find(pa, "adam_step")->bytes, 26e9);
  pn_workload_optimizer_bytes(&sc, &ob);
  ck_assert(ob.te_masters && ob.master_bytes == 2.0 && ob.moment_bytes == 8.0 && ob.grad_copy == 0.0);
  sc.training.exp_avg_dtype = sc.training.exp_avg_sq_dtype = PN_OPTIM_BF16;
  g_autoptr(GArray) pb                                     = ops_new();
  pn_workload_optimizer_ops(&sc, 1e9, 8e9, pb);
  ck_assert_double_eq(find(pb, "adam_step")->bytes, 18e9);
  sc.training.main_params_dtype = PN_OPTIM_FP16;
  sc.training.exp_avg_dtype = sc.training.exp_avg_sq_dtype = PN_OPTIM_FP32;
  g_autoptr(GArray) ph                                     = ops_new();
  pn_workload_optimizer_ops(&sc, 1e9, 8e9, ph);
  ck_assert_double_eq(find(ph, "adam_step")->bytes, 24e9);

  sc.training.main_params_dtype = PN_OPTIM_FP32;
  sc.training.exp_avg_dtype = sc.training.exp_avg_sq_dtype = PN_OPTIM_BF16;
  sc.training.precision                                    = PN_PREC_FP8;
  sc.training.fp8_recipe                                   = PN_FP8_TENSORWISE;
  sc.ddp.fp8_param_gather                                  = true;
  g_autoptr(GArray) cs                                     = ops_new();
  pn_workload_optimizer_ops(&sc, 1e9, 8e9, cs);
  ck_assert_double_eq(find(cs, "main_grad_cast")->bytes, 6e9);
  ck_assert_double_eq(find(cs, "adam_step")->bytes, 20e9);
  ck_assert_double_eq(find(cs, "main_param_copy")->bytes, 5e9);
  pn_workload_optimizer_bytes(&sc, &ob);
  ck_assert(!ob.te_masters && ob.master_bytes == 4.0 && ob.moment_bytes == 4.0 && ob.grad_copy == 4.0);
  sc.training.fp8_recipe = PN_FP8_DELAYED; /* delayed scaling: Transformer Engine's masters again */
  pn_workload_optimizer_bytes(&sc, &ob);
  ck_assert(ob.te_masters && ob.master_bytes == 2.0);

  scenario(&sc, 8, 1, false, 1, 1, 1);
  sc.ddp.grad_reduce_in_fp32 = true;
  sc.training.fused_adam     = false;
  g_autoptr(GArray) t        = ops_new();
  pn_workload_optimizer_ops(&sc, 1e9, 8e9, t);
  ck_assert_ptr_null(find(t, "adam_step"));
  ck_assert_double_eq(find(t, "adamw_torch_step")->bytes, 80e9);
  ck_assert_double_eq(find(t, "main_param_copy")->bytes, 6e9);
  ck_assert_double_eq(find(t, "grad_norm")->bytes, 4e9);
}
END_TEST

/* What a layer's backward adds beyond its GEMMs for its small parameters (ops.c, push_dbias,
 * push_param_grad_adds; TP 4 with SP, T = 8192, h = 4096): RMSNorm's backward is two kernels
 * (main + dgamma finalize); without biases the DDP hook adds the two norm weights' gradients into
 * fp32 main_grads, 2 kernels of 2 x 4096 elements x (2 + 2 x 4) B. With add_bias_linear and
 * LayerNorm: fc2's and proj's bias gradients reduced over the sequence shard (2048 rows x 4096,
 * 2 B read, 4096 x 4 B written), fc1's over all 8192 rows of its 14336 / 4 x 2 (gated) columns,
 * two kernels each; the hook then adds 8 parameters: 4 norm vectors, the qkv bias (1024 + 2 x 256),
 * proj's and fc2's (4096 each) and fc1's (7168). */
START_TEST(test_small_param_grads)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  ck_assert_int_eq(find(b, "ln1_bwd")->kernels, 2);
  ck_assert_ptr_null(find(b, "fc1_dbias"));
  const PnOp *adds = find(b, "param_grad_adds");
  ck_assert_int_eq(adds->kernels, 2);
  ck_assert_double_eq(adds->bytes, 2.0 * 4096 * 10.0);
  sc.model.add_bias_linear = true;
  sc.model.normalization   = PN_NORM_LAYERNORM;
  g_autoptr(GArray) c      = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(c, "fc2_dbias")->bytes, 2048.0 * 4096 * 2.0 + 4096 * 4.0);
  ck_assert_double_eq(find(c, "proj_dbias")->bytes, 2048.0 * 4096 * 2.0 + 4096 * 4.0);
  ck_assert_double_eq(find(c, "fc1_dbias")->bytes, 8192.0 * 7168 * 2.0 + 7168 * 4.0);
  ck_assert_int_eq(find(c, "fc1_dbias")->kernels, 2);
  adds = find(c, "param_grad_adds");
  ck_assert_int_eq(adds->kernels, 8);
  ck_assert_double_eq(adds->bytes, (4.0 * 4096 + 1024 + 2 * 256 + 2 * 4096 + 7168) * 10.0);
}
END_TEST

/* The loss check (check_for_nan_in_loss_and_grad, on by default): the host reads each
 * micro-batch's loss (the cross_entropy op's host_reads), unless the check is off or the whole
 * iteration is one CUDA graph (which Megatron-LM runs without it). */
START_TEST(test_loss_check_sync)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  ck_assert(sc.training.check_for_nan_in_loss_and_grad);
  for (int c = 0; c < 3; c++) {
    sc.training.check_for_nan_in_loss_and_grad = c != 1;
    sc.training.cuda_graph_impl                = c == 2 ? PN_CUDA_GRAPH_IMPL_FULL_ITERATION : PN_CUDA_GRAPH_IMPL_NONE;
    g_autoptr(GArray) f                        = g_array_new(FALSE, FALSE, sizeof(PnOp));
    pn_workload_head_ops(&sc, PN_PHASE_FWD, f);
    int reads = 0;
    for (guint i = 0; i < f->len; i++)
      reads += g_array_index(f, PnOp, i).host_reads;
    ck_assert_int_eq(reads, c == 0 ? 1 : 0);
    if (c == 0)
      ck_assert(find(f, "cross_entropy")->host_reads);
  }
}
END_TEST

/* Every op is well formed: non-negative numbers, GEMMs have a role, the BWD list's GEMMs are
 * dgrad/wgrad (or recomputed fprop), comm ops have bytes. Over several layouts. */
START_TEST(test_ops_well_formed)
{
  const int64_t tps[] = {1, 2, 8};
  for (guint t = 0; t < G_N_ELEMENTS(tps); t++)
    for (int sp = 0; sp <= 1; sp++)
      for (int rc = PN_RECOMPUTE_NONE; rc <= PN_RECOMPUTE_FULL; rc++)
        for (int fp8 = 0; fp8 <= 1; fp8++) {
          PnScenario sc;
          scenario(&sc, 16, tps[t], sp, 1, 1, 2);
          sc.recompute.recompute_granularity = (PnRecomputeGranularity)rc;
          sc.training.precision              = fp8 ? PN_PREC_FP8 : PN_PREC_BF16;
          for (int ph = PN_PHASE_FWD; ph <= PN_PHASE_BWD; ph++) {
            g_autoptr(GArray) a = layer(&sc, (PnPhase)ph);
            for (guint i = 0; i < a->len; i++) {
              const PnOp *o = &g_array_index(a, PnOp, i);
              ck_assert(o->flops >= 0 && o->bytes >= 0 && o->saved_bytes >= 0);
              ck_assert(isfinite(o->flops) && isfinite(o->bytes));
              if (o->kind == PN_OP_GEMM) {
                ck_assert(o->m > 0 && o->n > 0 && o->k > 0);
                ck_assert_int_ne(o->role, PN_GEMM_NONE);
                if (o->phase == PN_PHASE_BWD)
                  ck_assert_int_ne(o->role, PN_GEMM_FPROP);
              } else {
                ck_assert_int_eq(o->role, PN_GEMM_NONE);
              }
              if (o->kind == PN_OP_COMM)
                ck_assert(o->bytes > 0);
              if (o->kind == PN_OP_MEM)
                ck_assert(o->bytes > 0);
            }
          }
        }
}
END_TEST

/* ---- model FLOPs ---- */

/* Implied GFLOP/token (flops / (gbs * seq)) from validation/README.md. Bridge convention within
 * 0.5 %: 8B 51.5, 70B 449.0, 405B 2521.9. Full-s^2 convention within 1 %: 8B 57.9, 70B 481.5.
 * Padded vocab of the published layouts: 8B tp 1 -> 128256, 70B tp 4 -> 128512, 405B tp 8 ->
 * 129024 (the padding moves these ratios by < 0.01 %). */
START_TEST(test_model_flops_per_token)
{
  struct {
    void (*model)(PnModelConfig *);
    int64_t vocab;
    double bridge, full;
  } rows[] = {
      {model_llama3_8b, 128256, 51.5, 57.9},
      {model_llama3_70b, 128512, 449.0, 481.5},
      {model_llama31_405b, 129024, 2521.9, 0.0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
    PnModelConfig m;
    rows[i].model(&m);
    double per_tok = pn_workload_model_flops(&m, 8192, 128, rows[i].vocab) / (128.0 * 8192) / 1e9;
    ck_assert_rel(per_tok, rows[i].bridge, 0.005);
    if (rows[i].full > 0) {
      double full = pn_workload_model_flops_full_attention(&m, 8192, 128, rows[i].vocab) / (128.0 * 8192) / 1e9;
      ck_assert_rel(full, rows[i].full, 0.01);
    }
  }
}
END_TEST

/* Llama3.1-405B, full s^2: the formula with the model's 8 query groups gives
 * 126*16384^2*(12 + 12*8/128 + 18*53248/16384 + 12*8192/16384) + 6*128256*16384
 *   = 2625.42 GFLOP/token, 1.0 % under the README's 2652.8 (NeMo 24.07, n = 1) and 2648.9
 * (dgxc). dgxc's README computes it with 16 query groups (its notes: "1 + 16/128"), which gives
 * 2650.79: that is the whole difference. */
START_TEST(test_model_flops_405b_full_attention)
{
  PnModelConfig m;
  model_llama31_405b(&m);
  double full = pn_workload_model_flops_full_attention(&m, 8192, 1, 128256) / 8192 / 1e9;
  ck_assert_rel(full, 2625.42, 1e-5);
  m.num_query_groups = 16;
  double dgxc        = pn_workload_model_flops_full_attention(&m, 8192, 1, 128256) / 8192 / 1e9;
  ck_assert_rel(dgxc, 2650.79, 1e-5);
  ck_assert_rel(dgxc, 2652.8, 0.005);
  ck_assert_rel(dgxc, 2648.9, 0.005);
}
END_TEST

/* Exact terms for a small model: h=64, heads=4, groups=2, d=16 (q=64, kv=32), ffn=128, gated,
 * L=2, seq=32, gbs=2, V=100: T=64, S2=2048.
 *   attn = 6*64*(64*(64+64) + 64*64) = 4718592; core = 6*64*2048 = 786432;
 *   mlp = 6*64*64*128*3 = 9437184; logits = 6*64*64*100 = 2457600.
 *   total = 2*(4718592 + 786432 + 9437184) + 2457600 = 32342016; full attention adds 2*786432. */
START_TEST(test_model_flops_exact)
{
  PnModelConfig m;
  memset(&m, 0, sizeof m);
  m.num_layers          = 2;
  m.hidden_size         = 64;
  m.num_attention_heads = 4;
  m.num_query_groups    = 2;
  m.kv_channels         = 16;
  m.ffn_hidden_size     = 128;
  m.gated_linear_unit   = true;
  ck_assert_double_eq(pn_workload_model_flops(&m, 32, 2, 100), 32342016.0);
  ck_assert_double_eq(pn_workload_model_flops_full_attention(&m, 32, 2, 100), 32342016.0 + 2 * 786432.0);
}
END_TEST

/* ---- memory ---- */

/* One layer's saved bytes, Llama3-8B, TP 1, bf16, T = 8192 (h = 4096, q = 4096, kv = 1024):
 *   ln1: x 8192*4096*2 + rsigma 8192*4 = 67108864 + 32768;  qkv input 67108864
 *   attention: q,k,v 8192*6144*2 = 100663296; o 67108864; LSE 8192*32*4 = 1048576
 *   ln2: 67108864 + 32768; fc1 input 67108864; act input 8192*28672*2 = 469762048;
 *   fc2 input 8192*14336*2 = 234881024
 *   total 1141964800. Full recompute keeps the input only: 67108864. */
START_TEST(test_layer_activation_bytes)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  ck_assert_double_eq(pn_workload_layer_activation_bytes(&sc, PN_RECOMPUTE_NONE), 1141964800.0);
  ck_assert_double_eq(pn_workload_layer_activation_bytes(&sc, PN_RECOMPUTE_FULL), 67108864.0);
  /* selective drops only the LSE here (o stays, as proj's input) */
  ck_assert_double_eq(pn_workload_layer_activation_bytes(&sc, PN_RECOMPUTE_SELECTIVE), 1141964800.0 - 1048576.0);
}
END_TEST

START_TEST(test_activation_sp_and_recompute)
{
  PnScenario sp, nosp;
  scenario(&sp, 8, 4, true, 1, 1, 1);
  scenario(&nosp, 8, 4, false, 1, 1, 1);
  double a_sp   = pn_workload_layer_activation_bytes(&sp, PN_RECOMPUTE_NONE);
  double a_nosp = pn_workload_layer_activation_bytes(&nosp, PN_RECOMPUTE_NONE);
  ck_assert(a_sp < a_nosp);
  /* With SP everything on the layer is divided by tp (the norms/dropout ones now too), except
   * the norm statistics: a_sp ~ a(tp=1) / 4. */
  PnScenario one;
  scenario(&one, 8, 1, false, 1, 1, 1);
  ck_assert_rel(a_sp, pn_workload_layer_activation_bytes(&one, PN_RECOMPUTE_NONE) / 4, 1e-3);

  PnWorkloadMemory m_sp, m_nosp, m_full, m_sel;
  pn_workload_memory(&sp, false, &m_sp);
  pn_workload_memory(&nosp, false, &m_nosp);
  ck_assert(m_sp.activations_bytes < m_nosp.activations_bytes);
  sp.recompute.recompute_granularity = PN_RECOMPUTE_FULL;
  sp.recompute.recompute_method      = PN_RECOMPUTE_METHOD_UNIFORM;
  sp.recompute.recompute_num_layers  = 1;
  pn_workload_memory(&sp, false, &m_full);
  ck_assert(m_full.activations_bytes < m_sp.activations_bytes / 4);
  /* Selective (core attention) recompute with flash attention saves little: in bf16 only the
   * LSE (o stays alive as proj's input) and the recomputation briefly needs a new o; in fp8 proj
   * keeps its own fp8 copy, so o and LSE both go. */
  sp.recompute.recompute_granularity = PN_RECOMPUTE_SELECTIVE;
  pn_workload_memory(&sp, false, &m_sel);
  ck_assert(m_sel.activations_bytes > m_full.activations_bytes);
  ck_assert_rel(m_sel.activations_bytes, m_sp.activations_bytes, 0.01);
  sp.training.precision = PN_PREC_FP8;
  PnWorkloadMemory m_fp8, m_fp8_sel;
  pn_workload_memory(&sp, false, &m_fp8_sel);
  sp.recompute.recompute_granularity = PN_RECOMPUTE_NONE;
  pn_workload_memory(&sp, false, &m_fp8);
  ck_assert(m_fp8_sel.activations_bytes < m_fp8.activations_bytes);
  ck_assert(m_fp8.activations_bytes < m_sp.activations_bytes); /* fp8 GEMM inputs: 1 B/elem */
  /* weights, grads and optimizer do not depend on activations choices */
  ck_assert_double_eq(m_full.weights_bytes, m_sp.weights_bytes);
}
END_TEST

/* Distributed optimizer: 12 B/param sharded over dp*cp. Llama3-8B TP 1 on 8 GPUs (dp 8):
 * 8,030,261,248 params -> 96.36 GB unsharded, / 8 sharded. Weights 2 B, grads 4 B. */
START_TEST(test_memory_dist_opt)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  PnWorkloadMemory a, b;
  pn_workload_memory(&sc, false, &a);
  sc.ddp.use_distributed_optimizer = false;
  pn_workload_memory(&sc, false, &b);
  ck_assert_double_eq(b.optimizer_bytes, 8030261248.0 * 12);
  ck_assert_double_eq(a.optimizer_bytes, b.optimizer_bytes / 8);
  ck_assert_double_eq(a.weights_bytes, 8030261248.0 * 2);
  ck_assert_double_eq(a.gradients_bytes, 8030261248.0 * 4);
  ck_assert_double_eq(a.activations_bytes, b.activations_bytes);
  ck_assert_double_eq(a.total_bytes,
                      a.weights_bytes + a.gradients_bytes + a.optimizer_bytes + a.activations_bytes + a.other_bytes);
  /* CP widens the shard group: 16 GPUs as dp 8 x cp 2 shards over 16 */
  PnScenario c;
  scenario(&c, 16, 1, false, 1, 1, 2);
  PnWorkloadMemory mc;
  pn_workload_memory(&c, false, &mc);
  ck_assert_double_eq(mc.optimizer_bytes, 8030261248.0 * 12 / 16);
}
END_TEST

/* TE userbuffers count when the caller's resolved plan runs TP overlap, never from the raw
 * option (the gating turns it off without TP > 1, SP or TE). Llama3-8B TP 4 + SP, seq 8192, mbs 1:
 * [T, h] = 8192 * 4096 = 33,554,432 elements; bf16: 6 AG slots * 2 B + 4 RS slots * 2 B = 20 B
 * -> 671,088,640 B; fp8: 6 * 1 + 4 * 2 = 14 B -> 469,762,048 B. Nothing else changes. */
START_TEST(test_memory_userbuffers)
{
  PnScenario sc;
  scenario(&sc, 8, 4, true, 1, 1, 1);
  sc.comm_overlap.tp_comm_overlap = PN_TRI_TRUE; /* asked for, gated off: not counted */
  PnWorkloadMemory off, on;
  pn_workload_memory(&sc, false, &off);
  pn_workload_memory(&sc, true, &on);
  ck_assert_double_eq(on.other_bytes - off.other_bytes, 671088640.0);
  ck_assert_double_eq(on.total_bytes - off.total_bytes, 671088640.0);
  ck_assert_double_eq(on.activations_bytes, off.activations_bytes);
  sc.comm_overlap.tp_comm_overlap = PN_TRI_UNSET;
  PnWorkloadMemory unset;
  pn_workload_memory(&sc, false, &unset);
  ck_assert_double_eq(unset.other_bytes, off.other_bytes);
  sc.training.precision = PN_PREC_FP8;
  pn_workload_memory(&sc, false, &off);
  pn_workload_memory(&sc, true, &on);
  ck_assert_double_eq(on.other_bytes - off.other_bytes, 469762048.0);
}
END_TEST

/* In-flight micro-batches: 1F1B pp 4, m 8: stage 0 holds 4, stage 3 holds 1. Interleaved vp 2,
 * group pp = 4: stage 0 warm-up (4-0-1)*2 + (2-1)*4 = 10, +1 = 11; stage 3: 0 + 4 + 1 = 5; with
 * m = 2 the cap m*vp = 4 applies. */
START_TEST(test_inflight)
{
  PnScenario sc;
  scenario(&sc, 32, 1, false, 4, 1, 1); /* dp 8, m = 16 */
  sc.parallel.num_microbatches = 8;
  ck_assert_int_eq(pn_workload_inflight_microbatches(&sc, 0), 4);
  ck_assert_int_eq(pn_workload_inflight_microbatches(&sc, 3), 1);
  sc.parallel.virtual_pipeline_model_parallel_size = 2;
  ck_assert_int_eq(pn_workload_inflight_microbatches(&sc, 0), 11);
  ck_assert_int_eq(pn_workload_inflight_microbatches(&sc, 3), 5);
  sc.parallel.num_microbatches = 2;
  ck_assert_int_eq(pn_workload_inflight_microbatches(&sc, 0), 4);
  /* the worst stage of a pipeline with 4 micro-batches in flight on stage 0 is stage 0 here */
  sc.parallel.num_microbatches                     = 8;
  sc.parallel.virtual_pipeline_model_parallel_size = 1;
  PnWorkloadMemory m;
  pn_workload_memory(&sc, false, &m);
  ck_assert_int_eq(m.stage, 0);
  PnWorkloadMemory last;
  pn_workload_memory_stage(&sc, 3, false, &last);
  ck_assert(last.activations_bytes < m.activations_bytes);
}
END_TEST

static double estimate(const PnScenario *sc)
{
  PnWorkloadMemory m;
  pn_workload_memory(sc, false, &m);
  return m.total_bytes;
}

/* Changes that would fit. Llama3-8B on 8 GPUs, TP 1, PP 1, grads in fp32, distributed optimizer
 * off: the P = 8,030,261,248 parameters hold 2 + 4 + 12 B each. The distributed optimizer shards
 * the 12 B over dp 8, saving 12 P * 7/8 = 84,317,743,104 B; with the capacity set to exactly the
 * total that leaves, the search lists, in order:
 *   use_distributed_optimizer=true at that total (it fits, on the capacity);
 *   use_megatron_fsdp=true (optim_grads_params): the optimizer sharded the same way, and the
 *   weights and gradients too but for the units gathered or being reduced;
 *   no recompute: selective saves only the LSE and adds the recomputation's live bytes, full
 *   saves about 33 GB of the 84 GB needed;
 *   pipeline_model_parallel_size=4: PP 2 still holds about half the 18 B per parameter (~111 GB);
 * and stops at three (tensor_model_parallel_size=2, half the parameters and activations, ~99 GB,
 * would come next). With max_out 1 only the first is written. */
START_TEST(test_memory_fits)
{
  const double P = 8030261248.0;
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  sc.ddp.use_distributed_optimizer = false;
  double cap                       = estimate(&sc) - 12 * P * 7 / 8;
  PnMemoryFit f[PN_MEMORY_FITS_MAX + 2];
  int n = pn_workload_memory_fits(&sc, false, cap, 8, f, PN_MEMORY_FITS_MAX);
  ck_assert_int_eq(n, 3);
  ck_assert_str_eq(f[0].change, "use_distributed_optimizer=true");
  ck_assert_double_eq(f[0].total_bytes, cap);
  PnScenario pp2, pp4, fsdp = sc;
  scenario(&pp2, 8, 1, false, 2, 1, 1);
  scenario(&pp4, 8, 1, false, 4, 1, 1);
  pp2.ddp.use_distributed_optimizer = pp4.ddp.use_distributed_optimizer = false;
  fsdp.ddp.use_megatron_fsdp = fsdp.ddp.use_distributed_optimizer = true;
  fsdp.ddp.data_parallel_sharding_strategy                        = PN_FSDP_OPTIM_GRADS_PARAMS;
  ck_assert(estimate(&pp2) > cap);
  ck_assert_str_eq(f[1].change, "use_megatron_fsdp=true");
  ck_assert_double_eq(f[1].total_bytes, estimate(&fsdp));
  ck_assert(estimate(&fsdp) < cap);
  ck_assert_str_eq(f[2].change, "pipeline_model_parallel_size=4");
  ck_assert_double_eq(f[2].total_bytes, estimate(&pp4));
  ck_assert_int_eq(pn_workload_memory_fits(&sc, false, cap, 8, f, 1), 1);
  ck_assert_str_eq(f[0].change, "use_distributed_optimizer=true");
  ck_assert_int_eq(pn_workload_memory_fits(&sc, false, 1e9, 8, f, PN_MEMORY_FITS_MAX), 0);
}
END_TEST

/* Only layouts Megatron accepts. 24 GPUs, GBS 120, distributed optimizer on, the capacity set to
 * PP 4's estimate: PP 3 would fit by the estimate of an even split but does not divide the 32
 * layers, and the split a Megatron user would write there (11, 11, 10: the last stage lighter)
 * holds more than PP 4's 8 a stage, over the capacity; TP 3
 * divides neither the 32 heads nor the 8 query groups (pricing it would assert in ops.c), so the
 * list is Megatron-FSDP (its sharded weights and gradients fit), PP 4 (on the capacity) and TP 2;
 * PP 2, full recompute and CP 2 stay above it. */
START_TEST(test_memory_fits_divisibility)
{
  PnScenario sc, pp3, pp4;
  scenario(&sc, 24, 1, false, 1, 1, 1);
  scenario(&pp3, 24, 1, false, 3, 1, 1);
  scenario(&pp4, 24, 1, false, 4, 1, 1);
  PnScenario *all[] = {&sc, &pp3, &pp4};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    all[i]->training.global_batch_size = 120;
    all[i]->parallel.num_microbatches  = 120 / all[i]->parallel.data_parallel_size;
  }
  double cap = estimate(&pp4);
  ck_assert(estimate(&pp3) <= cap);
  PnScenario pp3_uneven                                 = pp3;
  pp3_uneven.parallel.num_layers_in_last_pipeline_stage = 10;
  ck_assert(pn_workload_check(&pp3_uneven, NULL, NULL) == PN_RULE_OK && estimate(&pp3_uneven) > cap);
  PnMemoryFit f[8];
  int n = pn_workload_memory_fits(&sc, false, cap, 8, f, 8);
  ck_assert_int_eq(n, 3);
  ck_assert_str_eq(f[0].change, "use_megatron_fsdp=true");
  ck_assert_str_eq(f[1].change, "pipeline_model_parallel_size=4");
  ck_assert_double_eq(f[1].total_bytes, cap);
  ck_assert_str_eq(f[2].change, "tensor_model_parallel_size=2");
  /* TP stops at max_tp (the GPUs of a node) */
  ck_assert_int_eq(pn_workload_memory_fits(&sc, false, cap, 1, f, 8), 2);
}
END_TEST

/* The order, and the virtual size a larger pipeline keeps. PP 2 with VPP 16 (one layer per
 * chunk), micro-batch 2, everything fitting: Megatron-FSDP, selective, full, PP 4 whose 8-layer stages take VPP 8
 * (16 no longer divides them), TP 2, CP 2, micro-batch 1; the distributed optimizer is on already. */
START_TEST(test_memory_fits_order)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 2, 16, 1);
  sc.comm_overlap.overlap_p2p_comm = PN_TRI_UNSET; /* Megatron refuses it off at PP 2 with VPP */
  sc.training.micro_batch_size     = 2;
  sc.parallel.num_microbatches     = 16;
  PnMemoryFit f[8];
  int n              = pn_workload_memory_fits(&sc, false, 1e15, 8, f, 8);
  const char *want[] = {"use_megatron_fsdp=true",
                        "recompute_granularity=selective",
                        "recompute_granularity=full",
                        "pipeline_model_parallel_size=4 with virtual_pipeline_model_parallel_size=8",
                        "tensor_model_parallel_size=2",
                        "context_parallel_size=2",
                        "micro_batch_size=1"};
  ck_assert_int_eq(n, G_N_ELEMENTS(want));
  for (int i = 0; i < n; i++)
    ck_assert_str_eq(f[i].change, want[i]);
  PnScenario pp4                                    = sc;
  pp4.parallel.pipeline_model_parallel_size         = 4;
  pp4.parallel.virtual_pipeline_model_parallel_size = 8;
  pp4.parallel.data_parallel_size                   = 2;
  pp4.parallel.num_microbatches                     = 32;
  ck_assert_double_eq(f[3].total_bytes, estimate(&pp4));
}
END_TEST

/* A larger pipeline where the layers do not divide: the split a Megatron user would write
 * (pn_workload_split_choose), said in the change. 31 layers: PP 2 holds 16 and 15, the last stage
 * lighter; with 63 (and no room for account_for_*'s 65 over 2) the same at 32 and 31. */
START_TEST(test_memory_fits_split)
{
  static const struct {
    int64_t layers;
    const char *want;
  } cases[] = {{31, "pipeline_model_parallel_size=2 with num_layers_in_last_pipeline_stage=15"},
               {63, "pipeline_model_parallel_size=2 with num_layers_in_last_pipeline_stage=31"}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    PnScenario sc;
    scenario(&sc, 8, 1, false, 1, 1, 1);
    sc.model.num_layers = cases[i].layers;
    PnMemoryFit f[8];
    int n           = pn_workload_memory_fits(&sc, false, 1e15, 8, f, 8);
    const char *got = NULL;
    for (int k = 0; k < n && got == NULL; k++)
      if (g_str_has_prefix(f[k].change, "pipeline_model_parallel_size="))
        got = f[k].change;
    ck_assert_msg(got != NULL && strcmp(got, cases[i].want) == 0, "%" G_GINT64_FORMAT " layers: %s", cases[i].layers,
                  got ? got : "no pipeline size");
  }
}
END_TEST

/* ---- mixture of experts ---- */

/* Llama-3-8B attention with 16 experts of width 2048, top-2, on 64 GPUs, TP 2 + SP, EP 8, expert
 * TP 1, alltoall: T = 8192 tokens, Tm = 4096 (the SP shard) enter the MoE layer, R = Tm * 2 = 8192
 * rows reach this GPU's L = 2 experts, 4096 each. */
static void moe_scenario_ops(PnScenario *sc, int64_t etp, PnMoeDispatcher disp)
{
  scenario(sc, 64, 2, true, 1, 1, 1);
  sc->model.num_moe_experts                = 16;
  sc->model.moe_router_topk                = 2;
  sc->model.moe_ffn_hidden_size            = 2048;
  sc->parallel.expert_model_parallel_size  = 8;
  sc->parallel.expert_tensor_parallel_size = etp;
  sc->parallel.moe_token_dispatcher_type   = disp;
}

/* Token dropping (model.moe_expert_capacity_factor; moe_utils.py get_capacity, token_dispatcher.py
 * preprocess), on moe_scenario_ops's layer: Tm = 4096 tokens x top-2 = 8192 routed copies over 16
 * experts, 512 an expert. Capacity 1.0, padded: ceil(512 x 1.0) = 512 an expert, the same rows,
 * and the alltoall dispatcher no longer reads the token counts on the host (static sizes); 1.5,
 * padded: 768 an expert, 12288 rows (a2a 12288 x 4096 x 2 B, 6144 a local expert); 0.5 without
 * the pad: 256 an expert kept, 4096 rows, and the host still reads the counts (the output size is
 * dynamic: "before_permutation_1"); the flex dispatcher reads them whatever the pad. */
START_TEST(test_moe_token_drop)
{
  PnScenario sc;
  moe_scenario_ops(&sc, 1, PN_MOE_DISPATCHER_ALLTOALL);
  g_autoptr(GArray) base = layer(&sc, PN_PHASE_FWD);
  ck_assert(find(base, "router_topk")->host_reads);
  sc.model.moe_expert_capacity_factor       = 1.0;
  sc.model.moe_pad_expert_input_to_capacity = true;
  g_autoptr(GArray) one                     = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(one, "moe_dispatch_a2a")->bytes, find(base, "moe_dispatch_a2a")->bytes);
  ck_assert_int_eq(find(one, "moe_fc1")->m, 4096);
  ck_assert(!find(one, "router_topk")->host_reads);
  sc.model.moe_expert_capacity_factor = 1.5;
  g_autoptr(GArray) pad               = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(pad, "moe_dispatch_a2a")->bytes, 12288.0 * 4096 * 2);
  ck_assert_int_eq(find(pad, "moe_fc1")->m, 6144);
  ck_assert_double_eq(find(pad, "permute")->bytes, 4096.0 * 4096 * 2 + 12288.0 * 4096 * 2);
  sc.model.moe_expert_capacity_factor       = 0.5;
  sc.model.moe_pad_expert_input_to_capacity = false;
  g_autoptr(GArray) drop                    = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(drop, "moe_dispatch_a2a")->bytes, 4096.0 * 4096 * 2);
  ck_assert_int_eq(find(drop, "moe_fc1")->m, 2048);
  ck_assert(find(drop, "router_topk")->host_reads);
  sc.model.moe_expert_capacity_factor       = 1.0;
  sc.model.moe_pad_expert_input_to_capacity = true;
  sc.parallel.moe_token_dispatcher_type     = PN_MOE_DISPATCHER_FLEX;
  g_autoptr(GArray) flex                    = layer(&sc, PN_PHASE_FWD);
  ck_assert(find(flex, "router_topk")->host_reads);
}
END_TEST

START_TEST(test_moe_ops)
{
  PnScenario sc;
  moe_scenario_ops(&sc, 1, PN_MOE_DISPATCHER_ALLTOALL);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  const PnOp *a2a     = find(f, "moe_dispatch_a2a");
  ck_assert_ptr_nonnull(a2a);
  ck_assert_int_eq(a2a->coll, PN_COLL_ALL_TO_ALL);
  ck_assert_int_eq(a2a->group, PN_GROUP_EP);
  ck_assert_double_eq(a2a->bytes, 4096.0 * 2 * 4096 * 2); /* Tm * topk * h * 2 B */
  ck_assert_double_eq(find(f, "moe_combine_a2a")->bytes, a2a->bytes);
  const PnOp *fc1 = find(f, "moe_fc1"), *fc2 = find(f, "moe_fc2");
  ck_assert(fc1->m == 4096 && fc1->n == 4096 && fc1->k == 4096 && fc1->groups == 2); /* (R/L, 2F, h) x L */
  ck_assert(fc2->m == 4096 && fc2->n == 4096 && fc2->k == 2048 && fc2->groups == 2); /* (R/L, h, F) x L */
  ck_assert_double_eq(fc1->flops + fc2->flops, 2.0 * 8192 * 4096 * (4096 + 2048));
  const PnOp *router = find(f, "router");
  ck_assert(router->m == 4096 && router->n == 16 && router->k == 4096);
  ck_assert_ptr_null(find(f, "fc1"));          /* no dense MLP */
  ck_assert_ptr_null(find(f, "moe_fc2_bias")); /* no biases (llama-like) */
  /* with biases, TEGroupedMLP._apply_bias per local expert: 2 kernels each and the concatenation,
   * 10 B per output element (R x h = 8192 x 4096); backward 4 kernels per expert, 8 B */
  sc.model.add_bias_linear = true;
  g_autoptr(GArray) fb     = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) bb     = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(fb, "moe_fc2_bias")->bytes, 8192.0 * 4096 * 10.0);
  ck_assert_int_eq(find(fb, "moe_fc2_bias")->kernels, 5);
  ck_assert_double_eq(find(bb, "moe_fc2_bias_bwd")->bytes, 8192.0 * 4096 * 8.0);
  ck_assert_int_eq(find(bb, "moe_fc2_bias_bwd")->kernels, 8);
  sc.model.add_bias_linear = false;
  /* activation_func_clamp_value: the GLU halves clamped and concatenated before the fused
   * activation, 16 B per element of a half (R x F = 8192 x 2048), 3 kernels, keeping the fc1
   * output (4 B per element of a half); the backward after the activation's, 20 B, 9 kernels;
   * both priced at their measured ratio to a copy, x = the rows */
  ck_assert_ptr_null(find(f, "moe_act_clamp"));
  sc.model.activation_func_clamp_value = 7.0;
  g_autoptr(GArray) fc                 = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) bc                 = layer(&sc, PN_PHASE_BWD);
  const PnOp *cf = find(fc, "moe_act_clamp"), *cb = find(bc, "moe_act_clamp_bwd");
  ck_assert_double_eq(cf->bytes, 8192.0 * 2048 * 16.0);
  ck_assert_double_eq(cf->saved_bytes, 8192.0 * 2048 * 4.0);
  ck_assert_int_eq(cf->kernels, 3);
  ck_assert_int_eq(cf->torch_kernel, PN_TK_GLU_CLAMP_FWD + 1);
  ck_assert_int_eq(cf->seq_q, 8192);
  ck_assert_int_eq(index_of(fc, "moe_act"), index_of(fc, "moe_act_clamp") + 1);
  ck_assert_double_eq(cb->bytes, 8192.0 * 2048 * 20.0);
  ck_assert_double_eq(cb->saved_bytes, 0.0);
  ck_assert_int_eq(cb->kernels, 9);
  ck_assert_int_eq(cb->torch_kernel, PN_TK_GLU_CLAMP_BWD + 1);
  ck_assert_int_eq(index_of(bc, "moe_act_clamp_bwd"), index_of(bc, "moe_act_bwd") + 1);
  sc.model.gated_linear_unit = false; /* no halves to clamp */
  g_autoptr(GArray) fn       = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_null(find(fn, "moe_act_clamp"));
  sc.model.gated_linear_unit           = true;
  sc.model.activation_func_clamp_value = 0.0;
  /* nodes in schedule order: pre-dispatch, dispatch, experts, combine */
  uint8_t node = PN_NODE_ATTN;
  for (guint i = 0; i < f->len; i++) {
    const PnOp *o = &g_array_index(f, PnOp, i);
    ck_assert_msg(o->node >= node, "%s: node %u after %u", o->name, o->node, node);
    node = o->node;
  }
  ck_assert_int_eq(find(f, "ln2")->node, PN_NODE_ATTN);
  ck_assert_int_eq(find(f, "permute")->node, PN_NODE_ATTN);
  ck_assert_int_eq(a2a->node, PN_NODE_DISPATCH);
  ck_assert_int_eq(find(f, "sort_chunks")->node, PN_NODE_MLP);
  ck_assert_int_eq(find(f, "unpermute")->node, PN_NODE_COMBINE);

  g_autoptr(GArray) b          = layer(&sc, PN_PHASE_BWD);
  static const uint8_t order[] = {PN_NODE_COMBINE, PN_NODE_MLP, PN_NODE_DISPATCH, PN_NODE_ATTN};
  int at                       = 0;
  for (guint i = 0; i < b->len; i++) {
    const PnOp *o = &g_array_index(b, PnOp, i);
    while (at < 4 && order[at] != o->node)
      at++;
    ck_assert_msg(at < 4, "%s out of the backward node order", o->name);
  }
  ck_assert(find(b, "moe_fc1_wgrad")->te_wgrad && find(b, "qkv_wgrad")->te_wgrad);
  ck_assert(!find(b, "router_wgrad")->te_wgrad); /* a torch Linear, not deferred by TE */
  ck_assert_double_eq(find(b, "moe_dispatch_a2a_bwd")->bytes, a2a->bytes);

  /* parameters: L experts of h*2F + F*h; expert DP = tp*cp*dp / (etp*ep) = 64 / 8 */
  ck_assert_double_eq(pn_workload_layer_expert_params(&sc), 2.0 * (4096.0 * 4096 + 2048.0 * 4096));
  ck_assert_int_eq(pn_workload_expert_dp(&sc), 8);
}
END_TEST

/* Expert TP 2: R doubles (the etp group's tokens), expert widths halve, and the dispatcher adds
 * an all-gather / reduce-scatter over the etp group. The allgather dispatcher gathers the
 * hidden states of the etp x ep group instead of the all-to-all. */
START_TEST(test_moe_etp_and_allgather)
{
  PnScenario sc;
  moe_scenario_ops(&sc, 2, PN_MOE_DISPATCHER_ALLTOALL);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  const PnOp *fc1     = find(f, "moe_fc1");
  ck_assert(fc1->m == 8192 && fc1->n == 2048 && fc1->k == 4096);
  const PnOp *ag = find(f, "moe_dispatch_ag");
  ck_assert(ag && ag->group == PN_GROUP_ETP && ag->coll == PN_COLL_ALL_GATHER);
  ck_assert_double_eq(ag->bytes, 16384.0 * 4096 * 2);
  ck_assert_ptr_nonnull(find(f, "moe_combine_rs"));
  ck_assert_int_eq(pn_workload_expert_dp(&sc), 4);

  moe_scenario_ops(&sc, 1, PN_MOE_DISPATCHER_ALLGATHER);
  g_autoptr(GArray) g = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_null(find(g, "moe_dispatch_a2a"));
  const PnOp *gag = find(g, "moe_dispatch_ag");
  ck_assert(gag && gag->group == PN_GROUP_EP);
  ck_assert_double_eq(gag->bytes, 4096.0 * 4096 * 2 * 8); /* Tm * h * 2 B * (etp * ep) */
  ck_assert_double_eq(find(g, "moe_combine_rs")->bytes, gag->bytes);
}
END_TEST

/* Megatron's rules (workload/rules.h): the base layout passes; each case breaks exactly one rule
 * and is refused by that rule, at the key it blames. */
typedef void (*Breaker)(PnScenario *sc);
static void rules_base(PnScenario *sc, int64_t tp, bool sp)
{
  scenario(sc, 16, tp, sp, 2, 2, 1); /* 32 layers: 16 per stage, 8 per chunk */
  sc->comm_overlap.overlap_p2p_comm                       = PN_TRI_UNSET;
  sc->comm_overlap.batch_p2p_comm                         = PN_TRI_UNSET;
  sc->comm_overlap.overlap_p2p_wgrad_delayed_layer_number = 1;
}
static void brk_tp_heads(PnScenario *sc) { sc->parallel.tensor_model_parallel_size = 3; }
static void brk_tp_groups(PnScenario *sc)
{
  sc->model.num_query_groups = 2, sc->parallel.tensor_model_parallel_size = 4;
}
static void brk_world(PnScenario *sc) { sc->hardware.num_gpus = 18; }
static void brk_vpp_pp(PnScenario *sc) { sc->parallel.pipeline_model_parallel_size = 1, sc->hardware.num_gpus = 8; }
static void brk_pp_layers(PnScenario *sc) { sc->model.num_layers = 31; }
static void brk_vpp_layers(PnScenario *sc) { sc->parallel.virtual_pipeline_model_parallel_size = 3; }
static void brk_vpp_p2p(PnScenario *sc) { sc->comm_overlap.overlap_p2p_comm = PN_TRI_FALSE; }
static void brk_batch(PnScenario *sc) { sc->training.global_batch_size = 130; }
static void brk_group(PnScenario *sc) { sc->parallel.microbatch_group_size_per_vp_stage = 1; }
static void brk_vpp_mb(PnScenario *sc)
{
  sc->training.global_batch_size = 4 * 6, sc->parallel.pipeline_model_parallel_size = 4, sc->hardware.num_gpus = 32,
  sc->parallel.virtual_pipeline_model_parallel_size = 2;
}
static void brk_group_rem(PnScenario *sc)
{
  sc->parallel.microbatch_group_size_per_vp_stage = 3, sc->training.global_batch_size = 4 * 7;
}
static void brk_cp_seq(PnScenario *sc)
{
  sc->parallel.context_parallel_size = 2, sc->training.seq_length = 8190, sc->hardware.num_gpus = 32;
}
static void brk_sp_seq(PnScenario *sc)
{
  sc->parallel.sequence_parallel = true, sc->parallel.tensor_model_parallel_size = 4, sc->training.seq_length = 8190,
  sc->hardware.num_gpus = 32;
}
static void brk_a2a(PnScenario *sc)
{
  sc->parallel.context_parallel_size = 8, sc->parallel.tensor_model_parallel_size = 8,
  sc->comm_overlap.cp_comm_type = PN_CP_A2A, sc->hardware.num_gpus = 128, sc->model.num_attention_heads = 32;
}
static void brk_positions(PnScenario *sc)
{
  g_strlcpy(sc->model.position_embedding_type, "learned_absolute", 24), sc->model.max_position_embeddings = 4096;
}
static void brk_need_moe(PnScenario *sc) { sc->parallel.expert_model_parallel_size = 2; }
static void moe(PnScenario *sc)
{
  sc->model.num_moe_experts = 8, sc->model.moe_router_topk = 2, sc->model.moe_ffn_hidden_size = 1024;
}
static void brk_ep_experts(PnScenario *sc) { moe(sc), sc->parallel.expert_model_parallel_size = 3; }
static void brk_ep_ranks(PnScenario *sc)
{
  moe(sc), sc->parallel.expert_model_parallel_size = 8, sc->parallel.tensor_model_parallel_size = 1,
           sc->hardware.num_gpus = 8;
}
static void brk_etp_ffn(PnScenario *sc)
{
  moe(sc), sc->model.moe_ffn_hidden_size = 1026, sc->parallel.expert_tensor_parallel_size = 4,
           sc->parallel.tensor_model_parallel_size = 4, sc->parallel.sequence_parallel = true,
           sc->hardware.num_gpus = 32;
}
static void brk_ep_sp(PnScenario *sc)
{
  moe(sc), sc->parallel.expert_model_parallel_size = 2, sc->parallel.tensor_model_parallel_size = 2,
           sc->parallel.sequence_parallel = false;
}
static void brk_instances(PnScenario *sc) { sc->ddp.num_distributed_optimizer_instances = 3; }
static void brk_fp8_gather(PnScenario *sc) { sc->ddp.fp8_param_gather = true; }
static void brk_recompute(PnScenario *sc)
{
  sc->recompute.recompute_granularity = PN_RECOMPUTE_FULL, sc->recompute.recompute_num_layers = 17;
}
static void brk_ctas(PnScenario *sc) { sc->env.nccl_min_ctas = 8, sc->env.nccl_max_ctas = 4; }

START_TEST(test_rules)
{
  static const struct {
    Breaker brk;
    PnRule rule;
    const char *path;
  } cases[] = {
      {brk_tp_heads, PN_RULE_TP_HEADS, "/parallel/tensor_model_parallel_size"},
      {brk_tp_groups, PN_RULE_TP_QUERY_GROUPS, "/parallel/tensor_model_parallel_size"},
      {brk_world, PN_RULE_WORLD, "/hardware/num_gpus"},
      {brk_vpp_pp, PN_RULE_VPP_NEEDS_PP, "/parallel/virtual_pipeline_model_parallel_size"},
      {brk_pp_layers, PN_RULE_PP_LAYERS, "/parallel/pipeline_model_parallel_size"},
      {brk_vpp_layers, PN_RULE_VPP_LAYERS, "/parallel/virtual_pipeline_model_parallel_size"},
      {brk_vpp_p2p, PN_RULE_VPP_PP2_P2P, "/comm_overlap/overlap_p2p_comm"},
      {brk_batch, PN_RULE_BATCH, "/training/global_batch_size"},
      {brk_group, PN_RULE_VPP_GROUP, "/parallel/microbatch_group_size_per_vp_stage"},
      {brk_vpp_mb, PN_RULE_VPP_MICROBATCHES, "/training/global_batch_size"},
      {brk_group_rem, PN_RULE_VPP_GROUP_REMAINDER, "/parallel/microbatch_group_size_per_vp_stage"},
      {brk_cp_seq, PN_RULE_CP_SEQUENCE, "/training/seq_length"},
      {brk_sp_seq, PN_RULE_SP_SEQUENCE, "/training/seq_length"},
      {brk_a2a, PN_RULE_CP_A2A_HEADS, "/parallel/context_parallel_size"},
      {brk_positions, PN_RULE_MAX_POSITIONS, "/training/seq_length"},
      {brk_need_moe, PN_RULE_EXPERTS_NEED_MOE, "/parallel/expert_model_parallel_size"},
      {brk_ep_experts, PN_RULE_EP_EXPERTS, "/parallel/expert_model_parallel_size"},
      {brk_ep_ranks, PN_RULE_EP_RANKS, "/parallel/expert_model_parallel_size"},
      {brk_etp_ffn, PN_RULE_ETP_FFN, "/parallel/expert_tensor_parallel_size"},
      {brk_ep_sp, PN_RULE_EP_NEEDS_SP, "/parallel/sequence_parallel"},
      {brk_instances, PN_RULE_DISTOPT_INSTANCES, "/ddp/num_distributed_optimizer_instances"},
      {brk_fp8_gather, PN_RULE_FP8_PARAM_GATHER, "/ddp/fp8_param_gather"},
      {brk_recompute, PN_RULE_RECOMPUTE_LAYERS, "/recompute/recompute_num_layers"},
      {brk_ctas, PN_RULE_NCCL_CTAS, "/env/NCCL_MIN_CTAS"},
  };
  PnScenario sc;
  rules_base(&sc, 2, false); /* dp 4, 32 micro-batches */
  ck_assert_int_eq(pn_workload_check(&sc, NULL, NULL), PN_RULE_OK);
  ck_assert_int_eq(sc.parallel.num_microbatches, 32);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    rules_base(&sc, 2, false);
    cases[i].brk(&sc);
    PnRuleViolation v;
    PnRule got = pn_workload_check(&sc, &v, NULL);
    ck_assert_msg(got == cases[i].rule, "case %zu: rule %d, expected %d (%s)", i, got, cases[i].rule,
                  got ? v.message : "accepted");
    ck_assert_str_eq(v.path, cases[i].path);
    ck_assert_str_ne(pn_rule_summary(got), "unknown rule");
  }
  /* sequence parallelism at tp 1 is turned off, as Megatron does, and said so */
  rules_base(&sc, 1, true);
  unsigned notes = 0;
  ck_assert_int_eq(pn_workload_check(&sc, NULL, &notes), PN_RULE_OK);
  ck_assert(!sc.parallel.sequence_parallel && (notes & PN_RULE_NOTE_SP_DISABLED));
}
END_TEST

/* ---- parameter lists ---- */

/* The parameter lists behind the DP buckets (PnParam): Megatron's registration order, element
 * counts adding up to the totals above, and op names the op lists have.
 *   Llama3-8B, TP 1: self_attention.linear_proj.weight 4096*4096 = 16,777,216; linear_qkv norm
 *   4096; linear_qkv.weight 4096*6144 = 25,165,824; mlp.linear_fc1 norm 4096; fc1.weight
 *   4096*28672 = 117,440,512; fc2.weight 14336*4096 = 58,720,256 (= 218,112,000). Embedding
 *   128256*4096; head: final norm 4096 and the untied output layer 128256*4096.
 *   GPT style (LayerNorm, biases, learned positions), MoE with biases and shared experts, TP 2:
 *   the sums match pn_workload_*_params; tied with PP 1 the head has no output weight, with PP 2
 *   both copies carry shared_embedding. */
/* The elements of a list, or of its expert weights only. */
static double list_sum(const GArray *l, bool expert_weights)
{
  double s = 0.0;
  for (guint i = 0; i < l->len; i++) {
    const PnParam *p = &g_array_index(l, PnParam, i);
    if (!expert_weights || (p->expert && p->te_weight))
      s += (double)p->elems;
  }
  return s;
}

/* Every parameter names a forward op of `fwd` and a backward op of `bwd`. */
static void check_param_ops(const GArray *params, const GArray *fwd, const GArray *bwd)
{
  for (guint i = 0; i < params->len; i++) {
    const PnParam *p = &g_array_index(params, PnParam, i);
    ck_assert_msg(find(fwd, p->fwd_op) && find(fwd, p->fwd_op)->phase == PN_PHASE_FWD, "%s: no forward op %s", p->name,
                  p->fwd_op);
    const PnOp *b = find(bwd, p->bwd_op);
    ck_assert_msg(b && b->phase == PN_PHASE_BWD, "%s: no backward op %s", p->name, p->bwd_op);
  }
}

static void check_lists(const PnScenario *sc)
{
  g_autoptr(GArray) l = g_array_new(FALSE, FALSE, sizeof(PnParam));
  g_autoptr(GArray) e = g_array_new(FALSE, FALSE, sizeof(PnParam));
  g_autoptr(GArray) h = g_array_new(FALSE, FALSE, sizeof(PnParam));
  pn_workload_layer_param_list(sc, l);
  pn_workload_embedding_param_list(sc, e);
  pn_workload_head_param_list(sc, h);
  ck_assert_double_eq(list_sum(l, false), pn_workload_layer_params(sc));
  ck_assert_double_eq(list_sum(l, true), pn_workload_layer_expert_params(sc));
  ck_assert_double_eq(list_sum(e, false), pn_workload_embedding_params(sc));
  ck_assert_double_eq(list_sum(h, false), pn_workload_head_params(sc));
  g_autoptr(GArray) fwd = layer(sc, PN_PHASE_FWD);
  g_autoptr(GArray) bwd = layer(sc, PN_PHASE_BWD);
  check_param_ops(l, fwd, bwd);
  g_autoptr(GArray) ef = ops_new(), eb = ops_new(), hf = ops_new(), hb = ops_new();
  pn_workload_embedding_ops(sc, PN_PHASE_FWD, ef);
  pn_workload_embedding_ops(sc, PN_PHASE_BWD, eb);
  pn_workload_head_ops(sc, PN_PHASE_FWD, hf);
  pn_workload_head_ops(sc, PN_PHASE_BWD, hb);
  check_param_ops(e, ef, eb);
  check_param_ops(h, hf, hb);
}

START_TEST(test_param_lists)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  g_autoptr(GArray) l = g_array_new(FALSE, FALSE, sizeof(PnParam));
  pn_workload_layer_param_list(&sc, l);
  static const char *names[]   = {"self_attention.linear_proj.weight",
                                  "self_attention.linear_qkv.layer_norm_weight",
                                  "self_attention.linear_qkv.weight",
                                  "mlp.linear_fc1.layer_norm_weight",
                                  "mlp.linear_fc1.weight",
                                  "mlp.linear_fc2.weight"};
  static const int64_t elems[] = {16777216, 4096, 25165824, 4096, 117440512, 58720256};
  ck_assert_uint_eq(l->len, 6);
  for (guint i = 0; i < l->len; i++) {
    const PnParam *p = &g_array_index(l, PnParam, i);
    ck_assert_str_eq(p->name, names[i]);
    ck_assert_int_eq(p->elems, elems[i]);
    ck_assert(p->te_weight == (elems[i] > 4096) && !p->expert && !p->shared_embedding);
  }
  check_lists(&sc);
  sc.parallel.tensor_model_parallel_size = 4;
  check_lists(&sc);

  /* GPT style: LayerNorm (weight and bias), linear biases, learned positions: 12 and 2 tensors */
  scenario(&sc, 8, 2, true, 1, 1, 1);
  sc.model.normalization   = PN_NORM_LAYERNORM;
  sc.model.add_bias_linear = true;
  g_strlcpy(sc.model.position_embedding_type, "learned_absolute", sizeof sc.model.position_embedding_type);
  check_lists(&sc);
  g_array_set_size(l, 0);
  pn_workload_layer_param_list(&sc, l);
  ck_assert_uint_eq(l->len, 12);
  g_autoptr(GArray) e = g_array_new(FALSE, FALSE, sizeof(PnParam));
  pn_workload_embedding_param_list(&sc, e);
  ck_assert_uint_eq(e->len, 2);

  /* MoE with biases and shared experts: the local experts' weight{i} and bias{i}, fc1 then fc2 */
  moe_scenario_ops(&sc, 1, PN_MOE_DISPATCHER_ALLTOALL);
  sc.model.add_bias_linear                     = true;
  sc.model.moe_shared_expert_intermediate_size = 2048;
  check_lists(&sc);
  g_array_set_size(l, 0);
  pn_workload_layer_param_list(&sc, l);
  int experts = 0;
  for (guint i = 0; i < l->len; i++)
    experts += g_array_index(l, PnParam, i).expert;
  ck_assert_int_eq(experts, 2 * 2 * 2); /* L = 2 local experts x (fc1, fc2) x (weight, bias) */

  /* tied embedding: no output weight with PP 1; with PP 2 both copies get their own bucket */
  scenario(&sc, 8, 1, false, 1, 1, 1);
  sc.model.untie_embeddings_and_output_weights = false;
  g_autoptr(GArray) h                          = g_array_new(FALSE, FALSE, sizeof(PnParam));
  pn_workload_head_param_list(&sc, h);
  ck_assert_uint_eq(h->len, 1);
  check_lists(&sc);
  scenario(&sc, 8, 1, false, 2, 1, 1);
  sc.model.untie_embeddings_and_output_weights = false;
  g_array_set_size(h, 0);
  g_array_set_size(e, 0);
  pn_workload_head_param_list(&sc, h);
  pn_workload_embedding_param_list(&sc, e);
  ck_assert_uint_eq(h->len, 2);
  ck_assert(g_array_index(h, PnParam, 1).shared_embedding && g_array_index(e, PnParam, 0).shared_embedding);
  check_lists(&sc);
}
END_TEST

/* DeepSeek-V3's multi-latent attention at TP 2 with SP, seq 4096, mbs 1, by hand: T = 4096 tokens,
 * Tsp = 2048, 64 heads per GPU, query / key heads 128 + 64 = 192 wide (q_tp = 12288), value heads
 * 128 (v_tp = 8192), linear_kv_up_proj's output 64 * (128 + 128) = 16384. */
static void mla_scenario(PnScenario *sc)
{
  scenario(sc, 16, 2, true, 1, 1, 1);
  sc->training.seq_length          = 4096;
  sc->model.hidden_size            = 7168;
  sc->model.ffn_hidden_size        = 18432;
  sc->model.num_attention_heads    = 128;
  sc->model.num_query_groups       = 128;
  sc->model.multi_latent_attention = true;
  sc->model.q_lora_rank            = 1536;
  sc->model.kv_lora_rank           = 512;
  sc->model.qk_head_dim            = 128;
  sc->model.qk_pos_emb_head_dim    = 64;
  sc->model.v_head_dim             = 128;
  sc->model.qk_layernorm           = true;
}

START_TEST(test_mla_ops)
{
  PnScenario sc;
  mla_scenario(&sc);
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  ck_assert_ptr_null(find(f, "qkv"));
  /* the down projections on the local tokens, no TP communication */
  const PnOp *qd = find(f, "q_down"), *kd = find(f, "kv_down");
  ck_assert(qd->m == 2048 && qd->n == 1536 && qd->k == 7168);
  ck_assert(kd->m == 2048 && kd->n == 576 && kd->k == 7168);
  ck_assert_double_eq(qd->saved_bytes, 2048.0 * 7168 * 2); /* the one bf16 norm output */
  ck_assert_double_eq(kd->saved_bytes, 0.0);
  /* the rope key gathered over the sequence; each latent gathered before its up projection */
  ck_assert_double_eq(find(f, "kv_pe_ag")->bytes, 4096.0 * 64 * 2);
  ck_assert_double_eq(find(f, "q_up_ag")->bytes, 4096.0 * 1536 * 2);
  ck_assert_double_eq(find(f, "kv_up_ag")->bytes, 4096.0 * 512 * 2);
  const PnOp *qu = find(f, "q_up"), *ku = find(f, "kv_up");
  ck_assert(qu->m == 4096 && qu->n == 12288 && qu->k == 1536);
  ck_assert(ku->m == 4096 && ku->n == 16384 && ku->k == 512);
  /* the latent norms fused into the up projections (qk_layernorm): 2 + 2 B per element */
  ck_assert_double_eq(find(f, "q_norm")->bytes, 2048.0 * 1536 * 4);
  ck_assert_int_lt(index_of(f, "q_down"), index_of(f, "q_up"));
  ck_assert_int_lt(index_of(f, "kv_up"), index_of(f, "core_attn"));
  /* the attention: QK^T over 192, PV over 128: 2 * s^2 * heads * (192 + 128) / 2 (causal) */
  const PnOp *at = find(f, "core_attn");
  ck_assert(at->head_dim == 192 && at->head_dim_v == 128 && at->heads == 64 && at->kv_heads == 64);
  ck_assert_double_eq(at->flops, 2.0 * 4096 * 4096 * 64 * 320 / 2);
  ck_assert_double_eq(at->saved_bytes, 4096.0 * (12288 + 12288 + 8192) * 2 + 4096.0 * 8192 * 2 + 4096.0 * 64 * 4);
  const PnOp *pj = find(f, "proj");
  ck_assert(pj->m == 4096 && pj->n == 7168 && pj->k == 8192);
  /* unfused rope (apply_rope_fusion off): the rope parts rotated, the heads assembled */
  sc.training.apply_rope_fusion = false;
  g_autoptr(GArray) fu          = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(fu, "rope")->bytes, (4096.0 * 64 * 64 + 4096.0 * 64) * 24);
  ck_assert_double_eq(find(fu, "mla_q_cat")->bytes, 4096.0 * 12288 * 4);
  ck_assert_double_eq(find(fu, "mla_v_copy")->bytes, 4096.0 * 8192 * 4);
  ck_assert_ptr_null(find(f, "mla_q_cat"));
  sc.training.apply_rope_fusion = true;
  /* backward: each up projection's dgrad reduce-scattered, the down projections' dgrads summed */
  const PnOp *kud = find(b, "kv_up_dgrad");
  ck_assert(kud->m == 4096 && kud->n == 512 && kud->k == 16384);
  ck_assert_double_eq(find(b, "kv_up_dgrad_rs")->bytes, 4096.0 * 512 * 2);
  ck_assert_double_eq(find(b, "kv_pe_rs")->bytes, 4096.0 * 64 * 2);
  const PnOp *qdw = find(b, "q_down_wgrad");
  ck_assert(qdw->m == 1536 && qdw->n == 7168 && qdw->k == 2048);
  ck_assert_int_lt(index_of(b, "kv_down_wgrad"), index_of(b, "mla_dx_add"));
  ck_assert_int_lt(index_of(b, "mla_dx_add"), index_of(b, "ln1_bwd"));
  /* parameters: h*r_q + r_q*q_tp + h*(r_kv + 64) + r_kv*16384 + the two latent norms, proj 8192*h */
  double attn = 7168.0 * 1536 + 1536.0 * 12288 + 7168.0 * 576 + 512.0 * 16384 + 8192.0 * 7168;
  double mlp  = 7168.0 * 18432 * 3 / 2;
  ck_assert_double_eq(pn_workload_layer_linear_params(&sc), attn + mlp);
  ck_assert_double_eq(pn_workload_layer_params(&sc), attn + mlp + 2.0 * 7168 + 1536 + 512);
  check_lists(&sc);
  /* mla_up_proj recompute: the up projections and rope keep nothing, the attention drops q, k, v
   * and keeps o + LSE; the checkpoint keeps the latents and the gathered rope key; all re-run
   * (their all-gathers too) before the attention's backward */
  sc.recompute.recompute_granularity = PN_RECOMPUTE_SELECTIVE;
  sc.recompute.recompute_modules     = PN_RECOMPUTE_MODULE_MLA_UP_PROJ;
  g_autoptr(GArray) fr               = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) br               = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(fr, "q_up")->saved_bytes, 0.0);
  ck_assert_double_eq(find(fr, "core_attn")->saved_bytes, 4096.0 * 8192 * 2 + 4096.0 * 64 * 4);
  ck_assert_double_eq(find(fr, "kv_down")->saved_bytes, 2048.0 * 576 * 2 + 4096.0 * 64 * 2);
  int up = index_of(br, "q_up");
  ck_assert_int_ge(up, 0);
  ck_assert_int_eq(g_array_index(br, PnOp, up).phase, PN_PHASE_RECOMPUTE);
  ck_assert_int_lt(up, index_of(br, "core_attn_bwd"));
  ck_assert_int_lt(index_of(br, "proj_dgrad"), up);
  /* no q_lora_rank: linear_q_proj straight from the norm output */
  sc.recompute.recompute_granularity = PN_RECOMPUTE_NONE;
  sc.model.q_lora_rank               = 0;
  g_autoptr(GArray) fq               = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_null(find(fq, "q_down"));
  const PnOp *qp = find(fq, "q_proj");
  ck_assert(qp->m == 4096 && qp->n == 12288 && qp->k == 7168);
  check_lists(&sc);
}
END_TEST

/* qk_layernorm without MLA (Qwen3): TENorm over each query and key head after the split, before
 * the rope, Llama 3 8B at TP 1 (q_tp 4096, kv_tp 1024, heads of 128): 4 B per element moved,
 * keeping the input (2 B) and 4 B of statistics per head; the backward's 6 B in two kernels each;
 * one weight of 128 per norm. */
START_TEST(test_qk_layernorm)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  double p0             = pn_workload_layer_params(&sc);
  sc.model.qk_layernorm = true;
  g_autoptr(GArray) f   = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b   = layer(&sc, PN_PHASE_BWD);
  const double T        = 8192.0;
  const PnOp *q = find(f, "q_norm"), *k = find(f, "k_norm");
  ck_assert_double_eq(q->bytes, T * 4096 * 4);
  ck_assert_double_eq(q->saved_bytes, T * 4096 * 2 + T * 32 * 4);
  ck_assert_double_eq(k->saved_bytes, T * 1024 * 2 + T * 8 * 4);
  ck_assert_int_lt(index_of(f, "qkv"), index_of(f, "q_norm"));
  ck_assert_int_lt(index_of(f, "k_norm"), index_of(f, "rope"));
  ck_assert_double_eq(find(b, "q_norm_bwd")->bytes, T * 4096 * 6);
  ck_assert_int_eq(find(b, "k_norm_bwd")->kernels, 2);
  ck_assert_int_lt(index_of(b, "rope_bwd"), index_of(b, "k_norm_bwd"));
  ck_assert_int_lt(index_of(b, "q_norm_bwd"), index_of(b, "qkv_dgrad"));
  ck_assert_double_eq(pn_workload_layer_params(&sc), p0 + 2 * 128);
  check_lists(&sc);
}
END_TEST

/* Bridge's MLA FLOPs per token, DeepSeek-V3's attention: 6 * [r_q (h + n d_qk + 1) + r_kv (h +
 * n (128 + 128) + 1) + h * 64 + n * 128 * h] + 3 * n * (192 + 128) * s per layer. */
START_TEST(test_mla_flops)
{
  PnScenario sc;
  mla_scenario(&sc);
  sc.model.num_layers = 1;
  sc.model.vocab_size = 1;
  double h = 7168, n = 128, s = 4096;
  double proj = 1536 * (h + n * 192 + 1) + 512 * (h + n * 256 + 1) + h * 64 + n * 128 * h;
  double mlp  = h * 18432 * 3;
  double v    = (double)pn_workload_padded_vocab(&sc);
  double want = s * (6 * proj + 3 * n * 320 * s + 6 * mlp + 6 * h * v);
  ck_assert_rel(pn_workload_model_flops(&sc.model, 4096, 1, pn_workload_padded_vocab(&sc)), want, 1e-12);
}
END_TEST

/* moe_layer_freq: the int form (every N-th layer from layer 0) and the list form; a dense layer is
 * the dense twin's layer, an ffn_hidden_size MLP with no router or all-to-all. */
START_TEST(test_moe_layer_freq)
{
  PnScenario sc;
  moe_scenario_ops(&sc, 1, PN_MOE_DISPATCHER_ALLTOALL);
  ck_assert(!pn_workload_has_dense_layers(&sc));
  sc.model.moe_layer_freq = 2;
  ck_assert(pn_workload_layer_is_moe(&sc, 0) && !pn_workload_layer_is_moe(&sc, 1) && pn_workload_layer_is_moe(&sc, 30));
  ck_assert(pn_workload_has_dense_layers(&sc));
  sc.model.moe_layer_freq        = 0;
  sc.model.moe_layer_pattern_set = true;
  memset(sc.model.moe_layer_pattern, 1, (size_t)sc.model.num_layers);
  sc.model.moe_layer_pattern[0] = sc.model.moe_layer_pattern[1] = 0;
  ck_assert(!pn_workload_layer_is_moe(&sc, 1) && pn_workload_layer_is_moe(&sc, 2));
  PnScenario dense;
  pn_workload_dense_layer_scenario(&sc, &dense);
  ck_assert(!pn_workload_is_moe(&dense) && !pn_workload_layer_is_moe(&dense, 2));
  g_autoptr(GArray) f = layer(&dense, PN_PHASE_FWD);
  ck_assert_ptr_null(find(f, "router"));
  ck_assert_int_eq(find(f, "fc1")->n, 14336 * 2 / 2); /* ffn_hidden_size, gated, over TP 2 */
  ck_assert_double_eq(pn_workload_layer_expert_params(&dense), 0.0);
  /* delayed scaling's amax buffer over a MoE layer (qkv, proj, 2 local experts x 2: 6 GEMMs) and
   * a dense one (4): 3 fp32 per GEMM forward, 8 B each in the cat */
  sc.training.precision  = PN_PREC_FP8;
  sc.training.fp8_recipe = PN_FP8_DELAYED;
  g_autoptr(GArray) amax = ops_new();
  pn_workload_fp8_amax_ops(&sc, PN_PHASE_FWD, 1, 1, amax);
  ck_assert_double_eq(find(amax, "fp8_amax_cat")->bytes, (6.0 + 4.0) * 3.0 * 8.0);
  /* a dense model has no MoE layers whatever the pattern says */
  scenario(&sc, 8, 1, false, 1, 1, 1);
  ck_assert(!pn_workload_layer_is_moe(&sc, 0) && !pn_workload_has_dense_layers(&sc));
}
END_TEST

/* One MTP layer at TP 2 with SP: in the head's lists, before the main output layer (forward) and
 * before the decoder's final norm (backward): the embedding of the shifted tokens, enorm, hnorm,
 * eh_proj (T, h / TP, 2h) with its input gathered and its output gathered over TP, a transformer
 * layer, its own final norm, output layer and loss. Its parameters join the head's. */
START_TEST(test_mtp_ops)
{
  PnScenario sc;
  scenario(&sc, 8, 2, true, 2, 1, 1);
  g_autoptr(GArray) f0 = ops_new();
  pn_workload_head_ops(&sc, PN_PHASE_FWD, f0);
  double head0            = pn_workload_head_params(&sc);
  sc.model.mtp_num_layers = 1;
  g_autoptr(GArray) f     = ops_new();
  g_autoptr(GArray) b     = ops_new();
  pn_workload_head_ops(&sc, PN_PHASE_FWD, f);
  pn_workload_head_ops(&sc, PN_PHASE_BWD, b);
  const PnOp *eh = find(f, "mtp_eh_proj");
  ck_assert(eh->m == 8192 && eh->n == 2048 && eh->k == 8192);
  ck_assert_double_eq(find(f, "mtp_eh_proj_ag")->bytes, 8192.0 * 8192 * 2);
  ck_assert_double_eq(find(f, "mtp_eh_proj_out_ag")->bytes, 8192.0 * 4096 * 2);
  ck_assert_int_lt(index_of(f, "embedding"), index_of(f, "mtp_eh_proj"));
  ck_assert_int_lt(index_of(f, "mtp_eh_proj"), index_of(f, "qkv"));
  ck_assert_int_lt(index_of(f, "qkv"), index_of(f, "logits"));
  int logits = 0;
  for (guint i = 0; i < f->len; i++)
    logits += strcmp(g_array_index(f, PnOp, i).name, "logits") == 0;
  ck_assert_int_eq(logits, 2);
  g_autoptr(GArray) lf = layer(&sc, PN_PHASE_FWD), ef = ops_new();
  pn_workload_embedding_ops(&sc, PN_PHASE_FWD, ef);
  /* the embedding, enorm, hnorm, cat, eh_proj's gather, GEMM, output gather and split, the layer,
   * then the head's lists twice */
  ck_assert_uint_eq(f->len, ef->len + 7 + lf->len + 2 * f0->len);
  ck_assert_str_eq(g_array_index(b, PnOp, b->len - 1).name, "final_norm_bwd");
  ck_assert_int_lt(index_of(b, "qkv_wgrad"), index_of(b, "mtp_eh_proj_wgrad"));
  /* enorm, hnorm, eh_proj, the layer, the final norm, and the last stage's embedding copy */
  double emb = (double)pn_workload_padded_vocab(&sc) / 2 * 4096;
  ck_assert_double_eq(pn_workload_head_params(&sc),
                      head0 + emb + 3 * 4096.0 + 2 * 4096.0 * 2048 + pn_workload_layer_params(&sc));
  check_lists(&sc);
}
END_TEST

/* Megatron-Core's DotProductAttention (transformer_impl local), by hand: Llama3-8B at TP 2 with SP,
 * seq 8192 -> s = 4096 here, mbs 2: np = 32/2 = 16 heads, B = 32 matrices, q = T*q_tp = 8192*2048,
 * GQA 4:1. */
START_TEST(test_unfused_attention)
{
  PnScenario sc;
  scenario(&sc, 8, 2, true, 1, 1, 1);
  sc.training.seq_length            = 4096;
  sc.training.micro_batch_size      = 2;
  sc.training.transformer_impl      = PN_TRANSFORMER_IMPL_LOCAL;
  sc.training.apply_rope_fusion     = true;
  sc.training.masked_softmax_fusion = false;
  const double B = 2.0 * 16.0, s = 4096.0, d = 128.0, scores = B * s * s, q = 8192.0 * 2048.0, kv = 8192.0 * 512.0;
  g_autoptr(GArray) f = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b = layer(&sc, PN_PHASE_BWD);
  ck_assert_ptr_null(find(f, "core_attn"));
  ck_assert_ptr_null(find(b, "core_attn_bwd"));
  /* forward, in issue order: repeat_interleave, QK^T, masked_fill_, softmax, PV, the context copy */
  const char *order[] = {"attn_kv_repeat", "attn_qk", "attn_mask_fill", "attn_softmax", "attn_pv", "attn_context_copy"};
  for (gsize i = 1; i < G_N_ELEMENTS(order); i++)
    ck_assert_int_eq(index_of(f, order[i]), index_of(f, order[i - 1]) + 1);
  const PnOp *qk = find(f, "attn_qk"), *pv = find(f, "attn_pv");
  ck_assert_int_eq(qk->kind, PN_OP_GEMM);
  ck_assert_int_eq(qk->batch, 32);
  ck_assert_int_eq(qk->m, 4096);
  ck_assert_int_eq(qk->n, 4096);
  ck_assert_int_eq(qk->k, 128);
  ck_assert_int_eq(pv->m, 4096);
  ck_assert_int_eq(pv->n, 128);
  ck_assert_int_eq(pv->k, 4096);
  /* no causal skipping: 2 B s^2 d per GEMM */
  ck_assert_double_eq(qk->flops, 2.0 * B * s * s * d);
  ck_assert_double_eq(pv->flops, 2.0 * B * s * s * d);
  ck_assert_double_eq(find(f, "attn_kv_repeat")->bytes, 8.0 * q);
  ck_assert_int_eq(find(f, "attn_kv_repeat")->kernels, 2);
  ck_assert_double_eq(find(f, "attn_mask_fill")->bytes, 4.0 * scores + s * s);
  ck_assert_int_eq(find(f, "attn_mask_fill")->torch_kernel, PN_TK_MASKED_FILL + 1);
  ck_assert_double_eq(find(f, "attn_softmax")->bytes, 4.0 * scores);
  ck_assert_int_eq(find(f, "attn_softmax")->torch_kernel, PN_TK_SOFTMAX_FWD + 1);
  ck_assert_int_eq(find(f, "attn_softmax")->seq_q, 4096);
  ck_assert_double_eq(find(f, "attn_context_copy")->bytes, 4.0 * q);
  /* saved: q, expanded k and v, the context (2 B each), the probabilities (2 B / score) */
  ck_assert_double_eq(find(f, "attn_kv_repeat")->saved_bytes, 8.0 * q + 2.0 * scores);
  ck_assert_double_eq(find(f, "proj")->saved_bytes, 0.0);
  ck_assert_ptr_null(find(f, "attn_dropout"));
  /* backward: 4 batched GEMMs (twice the forward's FLOPs), softmax's and masked_fill's backward,
   * the in-place view's autograd passes (22 B / score in 6 kernels), the scales, the GQA sums */
  double bwd_gemm = 0.0;
  for (guint i = 0; i < b->len; i++) {
    const PnOp *o = &g_array_index(b, PnOp, i);
    if (o->kind == PN_OP_GEMM && o->batch > 0)
      bwd_gemm += o->flops;
  }
  ck_assert_double_eq(bwd_gemm, 8.0 * B * s * s * d);
  ck_assert_double_eq(find(b, "attn_softmax_bwd")->bytes, 6.0 * scores);
  ck_assert_double_eq(find(b, "attn_inplace_view_bwd")->bytes, 22.0 * scores);
  ck_assert_int_eq(find(b, "attn_inplace_view_bwd")->kernels, 6);
  ck_assert_int_eq(find(b, "attn_mask_fill_bwd")->torch_kernel, PN_TK_MASKED_FILL + 1);
  ck_assert_double_eq(find(b, "attn_mask_fill_bwd")->bytes, 4.0 * scores + s * s);
  ck_assert_double_eq(find(b, "attn_scale_bwd")->bytes, 8.0 * q);
  ck_assert_double_eq(find(b, "attn_kv_repeat_bwd")->bytes, 2.0 * (2.0 * q + 2.0 * kv));
  /* TP communication is the TE list's: AG before qkv, RS after proj */
  ck_assert_int_lt(index_of(f, "qkv_ag"), index_of(f, "qkv"));
  ck_assert_int_gt(index_of(f, "proj_rs"), index_of(f, "proj"));

  /* with the fused softmax (masked_softmax_fusion, s <= 4096) and attention dropout 0.1 */
  sc.training.masked_softmax_fusion = true;
  sc.model.attention_dropout        = 0.1;
  g_autoptr(GArray) f2              = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b2              = layer(&sc, PN_PHASE_BWD);
  ck_assert_ptr_null(find(f2, "attn_mask_fill"));
  ck_assert_int_eq(find(f2, "attn_softmax")->torch_kernel, 0);
  ck_assert_double_eq(find(f2, "attn_dropout")->bytes, 5.0 * scores);
  ck_assert(find(f2, "attn_dropout")->rng);
  ck_assert_double_eq(find(f2, "attn_kv_repeat")->saved_bytes, 8.0 * q + 5.0 * scores);
  ck_assert_ptr_null(find(b2, "attn_inplace_view_bwd"));
  ck_assert_double_eq(find(b2, "attn_dropout_bwd")->bytes, 5.0 * scores);
  /* the fused kernel stops at 4096: longer sequences take torch's path */
  sc.training.seq_length = 8192;
  g_autoptr(GArray) f3   = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_nonnull(find(f3, "attn_mask_fill"));

  /* selective recompute keeps q, k, v and recomputes the rest before the backward */
  sc.training.seq_length             = 4096;
  sc.recompute.recompute_granularity = PN_RECOMPUTE_SELECTIVE;
  sc.recompute.recompute_modules     = PN_RECOMPUTE_MODULE_CORE_ATTN;
  g_autoptr(GArray) f4               = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b4               = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(f4, "attn_kv_repeat")->saved_bytes, 8192.0 * (2048.0 + 2.0 * 512.0) * 2.0);
  int rq = -1;
  for (guint i = 0; i < b4->len; i++)
    if (strcmp(g_array_index(b4, PnOp, i).name, "attn_qk") == 0 &&
        g_array_index(b4, PnOp, i).phase == PN_PHASE_RECOMPUTE)
      rq = (int)i;
  ck_assert_int_ge(rq, 0);
  ck_assert_int_lt(rq, index_of(b4, "attn_dp"));

  /* TE's layers with attention_backend "unfused": the same kernels with TE's fused softmax */
  sc.recompute.recompute_granularity = PN_RECOMPUTE_NONE;
  sc.training.transformer_impl       = PN_TRANSFORMER_IMPL_TE;
  sc.training.masked_softmax_fusion  = false;
  sc.training.attention_backend      = PN_ATTN_BACKEND_UNFUSED;
  g_autoptr(GArray) f5               = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_nonnull(find(f5, "attn_qk"));
  ck_assert_ptr_null(find(f5, "attn_mask_fill"));
  sc.training.attention_backend = PN_ATTN_BACKEND_FLASH;
  g_autoptr(GArray) f6          = layer(&sc, PN_PHASE_FWD);
  ck_assert_ptr_nonnull(find(f6, "core_attn"));
}
END_TEST

/* The rotary embedding without apply_rope_fusion: 24 B per element of q and k, 24 kernels forward
 * (6 big + 6 small per tensor), 12 backward; with fusion, TE's one kernel at 4 B. */
START_TEST(test_unfused_rope)
{
  PnScenario sc;
  scenario(&sc, 8, 1, false, 1, 1, 1);
  g_strlcpy(sc.model.position_embedding_type, "rope", sizeof sc.model.position_embedding_type);
  sc.training.apply_rope_fusion = true;
  const double elems            = 8192.0 * (4096.0 + 1024.0);
  g_autoptr(GArray) f           = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(f, "rope")->bytes, 4.0 * elems);
  ck_assert_int_eq(find(f, "rope")->torch_kernel, 0);
  sc.training.apply_rope_fusion = false;
  g_autoptr(GArray) f2          = layer(&sc, PN_PHASE_FWD);
  g_autoptr(GArray) b2          = layer(&sc, PN_PHASE_BWD);
  ck_assert_double_eq(find(f2, "rope")->bytes, 24.0 * elems);
  ck_assert_int_eq(find(f2, "rope")->kernels, 24);
  ck_assert_int_eq(find(f2, "rope")->torch_kernel, PN_TK_ROPE_FWD + 1);
  ck_assert_double_eq(find(b2, "rope_bwd")->bytes, 24.0 * elems);
  ck_assert_int_eq(find(b2, "rope_bwd")->kernels, 12);
  ck_assert_int_eq(find(b2, "rope_bwd")->torch_kernel, PN_TK_ROPE_BWD + 1);
  /* YaRN runs unfused whatever apply_rope_fusion says (its mscale is not 1) */
  g_strlcpy(sc.model.position_embedding_type, "yarn", sizeof sc.model.position_embedding_type);
  sc.training.apply_rope_fusion = true;
  g_autoptr(GArray) f3          = layer(&sc, PN_PHASE_FWD);
  ck_assert_double_eq(find(f3, "rope")->bytes, 24.0 * elems);
  ck_assert_int_eq(find(f3, "rope")->torch_kernel, PN_TK_ROPE_FWD + 1);
}
END_TEST

static Suite *workload_suite(void)
{
  Suite *s = suite_create("workload");
  struct {
    const char *name;
    const TTest *test;
  } cases[] = {
      {"qkv_dims_tp1", test_qkv_dims_tp1},
      {"unfused_bias_swiglu", test_unfused_bias_swiglu},
      {"wgrad_accumulation", test_wgrad_accumulation},
      {"dropout_ops", test_dropout_ops},
      {"tp4_sp_comm", test_tp4_sp_comm},
      {"tp4_sp_fp8", test_tp4_sp_fp8},
      {"fp8_tensorwise", test_fp8_tensorwise},
      {"fp8_amax_ops", test_fp8_amax_ops},
      {"fp8_weight_ops", test_fp8_weight_ops},
      {"tp4_no_sp", test_tp4_no_sp},
      {"bwd_order_and_slots", test_bwd_order_and_slots},
      {"layer_gemm_flops", test_layer_gemm_flops},
      {"attention_flops", test_attention_flops},
      {"full_recompute", test_full_recompute},
      {"selective_recompute", test_selective_recompute},
      {"recompute_modules", test_recompute_modules},
      {"cp_p2p", test_cp_p2p},
      {"padded_vocab", test_padded_vocab},
      {"cross_entropy_bytes", test_cross_entropy_bytes},
      {"unfused_attention", test_unfused_attention},
      {"unfused_rope", test_unfused_rope},
      {"params", test_params},
      {"param_lists", test_param_lists},
      {"head_and_embedding", test_head_and_embedding},
      {"optimizer_ops", test_optimizer_ops},
      {"small_param_grads", test_small_param_grads},
      {"loss_check_sync", test_loss_check_sync},
      {"ops_well_formed", test_ops_well_formed},
      {"model_flops_per_token", test_model_flops_per_token},
      {"model_flops_405b_full_attention", test_model_flops_405b_full_attention},
      {"model_flops_exact", test_model_flops_exact},
      {"layer_activation_bytes", test_layer_activation_bytes},
      {"activation_sp_and_recompute", test_activation_sp_and_recompute},
      {"memory_dist_opt", test_memory_dist_opt},
      {"memory_userbuffers", test_memory_userbuffers},
      {"inflight", test_inflight},
      {"memory_fits", test_memory_fits},
      {"memory_fits_divisibility", test_memory_fits_divisibility},
      {"memory_fits_order", test_memory_fits_order},
      {"memory_fits_split", test_memory_fits_split},
      {"moe_ops", test_moe_ops},
      {"moe_token_drop", test_moe_token_drop},
      {"moe_etp_and_allgather", test_moe_etp_and_allgather},
      {"rules", test_rules},
      {"mla_ops", test_mla_ops},
      {"mla_flops", test_mla_flops},
      {"qk_layernorm", test_qk_layernorm},
      {"moe_layer_freq", test_moe_layer_freq},
      {"mtp_ops", test_mtp_ops},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(workload_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
