/* megatron-memory.c — Megatron's theoretical memory formula and the comparison table; the
 * formulas and the reasons for the "same layout" variants are in megatron-memory.h. */
#include "megatron-memory.h"

#include <math.h>
#include <string.h>

#include "io/scenario.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

void pn_megatron_args_from_scenario(const PnScenario *sc, PnMegatronArgs *a)
{
  const PnModelConfig *m    = &sc->model;
  const PnParallelConfig *p = &sc->parallel;
  memset(a, 0, sizeof *a);
  a->num_layers          = m->num_layers;
  a->hidden_size         = m->hidden_size;
  a->ffn_hidden_size     = m->ffn_hidden_size;
  a->num_attention_heads = m->num_attention_heads;
  a->num_query_groups    = m->num_query_groups > 0 ? m->num_query_groups : m->num_attention_heads;
  a->kv_channels         = m->kv_channels > 0 ? m->kv_channels : m->hidden_size / m->num_attention_heads;
  a->swiglu              = m->gated_linear_unit;
  a->rmsnorm             = m->normalization == PN_NORM_RMSNORM;
  a->untie_embeddings_and_output_weights = m->untie_embeddings_and_output_weights;
  a->add_bias_linear                     = m->add_bias_linear;
  a->tensor_model_parallel_size          = p->tensor_model_parallel_size;
  /* Megatron's _vocab_size_with_padding: up to a multiple of make_vocab_size_divisible_by * tp */
  int64_t multiple =
      (m->make_vocab_size_divisible_by > 0 ? m->make_vocab_size_divisible_by : 128) * p->tensor_model_parallel_size;
  a->padded_vocab_size                    = (m->vocab_size + multiple - 1) / multiple * multiple;
  a->num_experts                          = m->num_moe_experts;
  a->moe_ffn_hidden_size                  = m->moe_ffn_hidden_size > 0 ? m->moe_ffn_hidden_size : m->ffn_hidden_size;
  a->moe_shared_expert_intermediate_size  = m->moe_shared_expert_intermediate_size;
  a->pipeline_model_parallel_size         = p->pipeline_model_parallel_size;
  a->virtual_pipeline_model_parallel_size = MAX(p->virtual_pipeline_model_parallel_size, 1);
  a->expert_tensor_parallel_size =
      p->expert_tensor_parallel_size > 0 ? p->expert_tensor_parallel_size : p->tensor_model_parallel_size;
  a->expert_model_parallel_size = MAX(p->expert_model_parallel_size, 1);
  a->world_size                 = sc->hardware.num_gpus;
  a->data_parallel_size         = sc->hardware.num_gpus /
                          (p->tensor_model_parallel_size * p->pipeline_model_parallel_size * p->context_parallel_size);
  a->use_distributed_optimizer = sc->ddp.use_distributed_optimizer;
  a->seq_length                = sc->training.seq_length;
  a->micro_batch_size          = sc->training.micro_batch_size;
  a->num_microbatches = sc->training.global_batch_size / (sc->training.micro_batch_size * a->data_parallel_size);
}

/* One layer's parameters as a GPU holds them, in the formula's terms, and the model's embedding
 * and final norm. */
typedef struct {
  double tp_split;   /* attention + dense MLP or shared experts: split by tp */
  double replicated; /* the two norms, the router */
  double experts;    /* routed experts: split by etp * ep */
  double embedding, final_norm;
} PnMegatronParams;

static void megatron_params(const PnMegatronArgs *a, PnMegatronParams *p)
{
  double h = (double)a->hidden_size, heads = (double)a->num_attention_heads;
  double q_to_h = (double)a->kv_channels * heads / h;
  double gated  = a->swiglu ? 1.5 : 1.0;
  double norm   = a->rmsnorm ? 1.0 : 2.0; /* LayerNorm has a bias */
  double attn   = 2.0 * h * h * (1.0 + (double)a->num_query_groups / heads) * q_to_h;
  bool moe      = a->num_experts > 0;
  double e      = (double)a->num_experts;
  p->tp_split   = attn + 2.0 * h * (double)(moe ? a->moe_shared_expert_intermediate_size : a->ffn_hidden_size) * gated;
  p->replicated = 2.0 * h * norm + (moe ? h * e + (a->add_bias_linear ? e : 0.0) : 0.0);
  p->experts    = moe ? 2.0 * h * (double)a->moe_ffn_hidden_size * e * gated : 0.0;
  p->embedding  = h * (double)a->padded_vocab_size;
  p->final_norm = norm * h;
}

/* Bytes per parameter: bf16 weight 2, fp32 grad 4, fp32 master weight and Adam m, v 12 (sharded
 * over `shard` GPUs with the distributed optimizer). */
static double bytes_per_param(bool dist_opt, double shard) { return dist_opt ? 6.0 + 12.0 / shard : 18.0; }

double pn_megatron_weight_and_optimizer_bytes(const PnMegatronArgs *a)
{
  PnMegatronParams p;
  megatron_params(a, &p);
  double layers = (double)a->num_layers, pp = (double)a->pipeline_model_parallel_size;
  double tp    = (double)a->tensor_model_parallel_size;
  double split = p.tp_split * layers / pp + p.embedding;
  if (a->untie_embeddings_and_output_weights && a->pipeline_model_parallel_size == 1)
    split += p.embedding;
  double replicated = (p.replicated * layers + p.final_norm) / pp;
  double etp_ep     = (double)(a->expert_tensor_parallel_size * a->expert_model_parallel_size);
  double experts    = p.experts * layers / pp / etp_ep;
  int64_t expert_dp = a->world_size / (a->expert_tensor_parallel_size * a->expert_model_parallel_size *
                                       a->pipeline_model_parallel_size);
  return (split / tp + replicated) * bytes_per_param(a->use_distributed_optimizer, (double)a->data_parallel_size) +
         experts * bytes_per_param(a->use_distributed_optimizer, (double)expert_dp);
}

double pn_megatron_weight_and_optimizer_bytes_same_layout(const PnScenario *sc)
{
  PnMegatronArgs a;
  PnMegatronParams p;
  pn_megatron_args_from_scenario(sc, &a);
  megatron_params(&a, &p);
  const PnParallelConfig *par = &sc->parallel;
  int64_t pp = a.pipeline_model_parallel_size, vp = a.virtual_pipeline_model_parallel_size, n_vs = pp * vp;
  double instances = (double)MAX(sc->ddp.num_distributed_optimizer_instances, 1);
  double shard     = (double)(a.data_parallel_size * par->context_parallel_size) / instances;
  double etp_ep    = (double)(a.expert_tensor_parallel_size * a.expert_model_parallel_size);
  double expert_dp = (double)a.world_size / (etp_ep * (double)pp) / instances;
  bool emb = par->account_for_embedding_in_pipeline_split, loss = par->account_for_loss_in_pipeline_split;
  int64_t per_vs  = (a.num_layers + (emb ? 1 : 0) + (loss ? 1 : 0)) / n_vs;
  double position = strcmp(sc->model.position_embedding_type, "learned_absolute") == 0
                        ? (double)sc->model.max_position_embeddings * (double)a.hidden_size
                        : 0.0;
  double most     = 0.0;
  for (int64_t s = 0; s < pp; s++) {
    int64_t layers = 0;
    for (int64_t c = 0; c < vp; c++) {
      int64_t vs = c * pp + s;
      layers += per_vs - ((emb && vs == 0) ? 1 : 0) - ((loss && vs == n_vs - 1) ? 1 : 0);
    }
    bool first = s == 0, last = s == pp - 1;
    int embeddings    = (first ? 1 : 0) + ((last && (a.untie_embeddings_and_output_weights || pp > 1)) ? 1 : 0);
    double split      = (p.tp_split * (double)layers + p.embedding * embeddings) / (double)a.tensor_model_parallel_size;
    double replicated = p.replicated * (double)layers + (last ? p.final_norm : 0.0) + (first ? position : 0.0);
    double experts    = p.experts * (double)layers / etp_ep;
    double bytes      = (split + replicated) * bytes_per_param(a.use_distributed_optimizer, shard) +
                   experts * bytes_per_param(a.use_distributed_optimizer, expert_dp);
    most = MAX(most, bytes);
  }
  return most;
}

/* Korthikanti's first-stage activations with `per_layer` bytes per layer per s*b*h, `s` tokens
 * of sequence per GPU, and the embedding dropout mask or not. */
static double korthikanti_bytes(const PnMegatronArgs *a, double per_layer, double s, bool embedding_mask)
{
  double b = (double)a->micro_batch_size, h = (double)a->hidden_size;
  double pp = (double)a->pipeline_model_parallel_size, vp = (double)a->virtual_pipeline_model_parallel_size;
  double sbh = s * b * h;
  double act = sbh * per_layer * (double)a->num_layers + 8.0 * s * b * pp + (embedding_mask ? sbh * pp : 0.0);
  if (a->virtual_pipeline_model_parallel_size > 1)
    act *= 1.0 + (pp - 1.0) / (pp * vp);
  else if (a->pipeline_model_parallel_size > 1)
    act *= MIN(1.0, (double)a->num_microbatches / pp);
  if (a->pipeline_model_parallel_size == 1)
    act += sbh * 4.0 * (1.0 + (double)a->padded_vocab_size / h);
  return act / (double)a->tensor_model_parallel_size;
}

double pn_megatron_activation_bytes(const PnMegatronArgs *a)
{
  return korthikanti_bytes(a, pn_megatron_layer_coefficient(a), (double)a->seq_length, true);
}

double pn_megatron_layer_coefficient(const PnMegatronArgs *a)
{
  return 18.0 + 4.0 * (double)a->ffn_hidden_size / (double)a->hidden_size;
}

double pn_megatron_layer_coefficient_same_layout(const PnScenario *sc)
{
  PnMegatronArgs a;
  pn_megatron_args_from_scenario(sc, &a);
  double h  = (double)a.hidden_size;
  double q  = (double)(a.num_attention_heads * a.kv_channels) / h;
  double kv = (double)(a.num_query_groups * a.kv_channels) / h;
  double f  = (double)a.ffn_hidden_size / h;
  double f1 = a.swiglu ? 2.0 * f : f;
  /* norms 4, qkv input 2, q, k, v, proj input, fc1 input 2, activation input, fc2 input, masks */
  return 4.0 + 2.0 + 2.0 * q + 4.0 * kv + 2.0 * q + 2.0 + 2.0 * f1 + 2.0 * f +
         (sc->model.hidden_dropout > 0.0 ? 2.0 : 0.0);
}

double pn_megatron_activation_bytes_same_layout(const PnScenario *sc)
{
  PnMegatronArgs a;
  pn_megatron_args_from_scenario(sc, &a);
  return korthikanti_bytes(&a, pn_megatron_layer_coefficient_same_layout(sc),
                           (double)(a.seq_length / sc->parallel.context_parallel_size), sc->model.hidden_dropout > 0.0);
}

/* ---- the layouts ---- */

/* The model of Megatron-LM's CI memory tests gpt3_7b_*_memory_speed (model_config.yaml): 32
 * layers, hidden 4096, 32 heads, 8 query groups, vocabulary 131,073 (NullTokenizer), untied, and
 * Megatron's defaults for what the file leaves out: ffn 4h, GeLU, LayerNorm, linear biases,
 * learned absolute positions, hidden and attention dropout 0.1. */
#define CI_7B_MODEL                                                                                                    \
  "{\"name\": \"megatron-ci-gpt3-7b\", \"num_layers\": 32, \"hidden_size\": 4096, \"ffn_hidden_size\": 16384,"         \
  " \"num_attention_heads\": 32, \"num_query_groups\": 8, \"kv_channels\": 128, \"gated_linear_unit\": false,"         \
  " \"activation\": \"gelu\", \"normalization\": \"LayerNorm\", \"vocab_size\": 131073,"                               \
  " \"make_vocab_size_divisible_by\": 128, \"untie_embeddings_and_output_weights\": true, \"add_bias_linear\": true,"  \
  " \"hidden_dropout\": 0.1, \"attention_dropout\": 0.1, \"max_position_embeddings\": 8192,"                           \
  " \"position_embedding_type\": \"learned_absolute\"}"

/* GPT-3 175B as Korthikanti et al. trained it, with dropout (the shipped model has NeMo's 0). */
#define GPT3_DROPOUT "{\"base\": \"gpt3-175b\", \"hidden_dropout\": 0.1, \"attention_dropout\": 0.1}"

#define CI_SOURCE                                                                                                      \
  "NVIDIA/Megatron-LM@d98e8a64 tests/functional_tests/test_cases/gpt/%s/golden_values_dev_dgx_h100.json (iterations "  \
  "2-25) and model_config.yaml; 1 node of 8 GPUs (tests/test_utils/recipes/h100/gpt.yaml)"

enum {
  SP            = PN_MEMCHECK_SP,
  FP8           = PN_MEMCHECK_FP8,
  DIST_OPT      = PN_MEMCHECK_DIST_OPT,
  GRADS_FP32    = PN_MEMCHECK_GRADS_FP32,
  SELECTIVE     = PN_MEMCHECK_SELECTIVE,
  ACCOUNT_SPLIT = PN_MEMCHECK_ACCOUNT_SPLIT
};

static const PnMemcheckMeasured ci_7b_tp1_pp4 = {60720852992.0, 24808996864.0, "gpt3_7b_tp1_pp4_memory_speed"};
static const PnMemcheckMeasured ci_7b_tp4_pp1 = {57143791616.0, 20663519232.0, "gpt3_7b_tp4_pp1_memory_speed"};

const PnMemcheckLayout pn_memcheck_layouts[] = {
    /* label, model, {gpus, tp, pp, vp, cp, ep, etp}, {seq, mbs, gbs}, flags, what, measured */
    {"GPT-3 175B",
     GPT3_DROPOUT,
     {64, 8, 8, 1, 1, 1, 0},
     {2048, 1, 64},
     SP | SELECTIVE | GRADS_FP32,
     "Korthikanti et al.'s 175B run (dropout 0.1): the formula's own case",
     NULL},
    {"GPT-3 175B",
     GPT3_DROPOUT,
     {64, 8, 8, 1, 1, 1, 0},
     {2048, 1, 4},
     SP | SELECTIVE | DIST_OPT | GRADS_FP32,
     "4 micro-batches on 8 stages: min(1, m/pp)",
     NULL},
    {"GPT-3 175B",
     GPT3_DROPOUT,
     {128, 4, 8, 6, 1, 1, 0},
     {2048, 1, 256},
     SP | SELECTIVE | DIST_OPT | GRADS_FP32,
     "the shipped NeMo layout, with dropout",
     NULL},
    {"Llama-3 8B",
     "llama3-8b",
     {8, 2, 1, 1, 1, 1, 0},
     {8192, 1, 128},
     SP | SELECTIVE | GRADS_FP32,
     "PP 1: output layer and logits on the stage",
     NULL},
    {"Llama-3 8B", "llama3-8b", {8, 1, 1, 1, 2, 1, 0}, {8192, 1, 128}, DIST_OPT, "shipped layout", NULL},
    {"Llama-3 8B", "llama3-8b", {8, 1, 1, 1, 1, 1, 0}, {8192, 1, 128}, FP8 | DIST_OPT, "FP8", NULL},
    {"Llama-3 70B",
     "llama3-70b",
     {64, 4, 4, 5, 2, 1, 0},
     {8192, 1, 256},
     SP | SELECTIVE | DIST_OPT,
     "shipped layout",
     NULL},
    {"Llama-3 70B", "llama3-70b", {64, 8, 4, 5, 1, 1, 0}, {8192, 1, 128}, SP | SELECTIVE | FP8 | DIST_OPT, "FP8", NULL},
    {"Llama-3 70B",
     "llama3-70b",
     {64, 4, 8, 1, 1, 1, 0},
     {8192, 1, 128},
     SP | SELECTIVE | GRADS_FP32,
     "1F1B, no distributed optimizer",
     NULL},
    {"Llama 3.1 405B",
     "llama3.1-405b",
     {1024, 8, 8, 8, 2, 1, 0},
     {8192, 1, 1536},
     SP | SELECTIVE | DIST_OPT | ACCOUNT_SPLIT,
     "shipped layout",
     NULL},
    {"Llama 3.1 405B",
     "llama3.1-405b",
     {1152, 8, 9, 7, 1, 1, 0},
     {8192, 1, 2304},
     SP | SELECTIVE | DIST_OPT | GRADS_FP32,
     "126 layers as 9 x 7 x 2, nothing accounted in the split",
     NULL},
    {"Nemotron-4 340B",
     "nemotron4-340b",
     {256, 8, 8, 12, 1, 1, 0},
     {4096, 1, 64},
     SP | SELECTIVE | DIST_OPT,
     "shipped layout",
     NULL},
    {"Nemotron-4 340B",
     "nemotron4-340b",
     {128, 8, 8, 12, 1, 1, 0},
     {4096, 1, 32},
     SP | SELECTIVE | FP8 | DIST_OPT,
     "NeMo 24.07's FP8 row (validation config)",
     NULL},
    {"Qwen3-30B-A3B",
     "qwen3-30b-a3b",
     {16, 1, 1, 1, 1, 16, 1},
     {4096, 1, 1024},
     DIST_OPT,
     "shipped layout: expert-DP 1",
     NULL},
    {"Qwen3-30B-A3B",
     "qwen3-30b-a3b",
     {32, 2, 2, 1, 1, 8, 1},
     {4096, 1, 256},
     SP | SELECTIVE | DIST_OPT | GRADS_FP32,
     "expert-DP 2",
     NULL},
    {"Qwen3-235B-A22B",
     "qwen3-235b-a22b",
     {256, 2, 8, 4, 1, 32, 1},
     {4096, 1, 8192},
     SP | SELECTIVE | FP8 | DIST_OPT | ACCOUNT_SPLIT,
     "shipped layout: expert-DP 1",
     NULL},
    {"Qwen3-235B-A22B",
     "qwen3-235b-a22b",
     {256, 4, 2, 1, 1, 16, 1},
     {4096, 1, 512},
     SP | SELECTIVE | GRADS_FP32,
     "no distributed optimizer",
     NULL},
    {"GPT 7B (Megatron CI)",
     CI_7B_MODEL,
     {8, 1, 4, 8, 1, 1, 0},
     {8192, 1, 8},
     DIST_OPT | GRADS_FP32,
     "measured: gpt3_7b_tp1_pp4_memory_speed",
     &ci_7b_tp1_pp4},
    {"GPT 7B (Megatron CI)",
     CI_7B_MODEL,
     {8, 4, 1, 1, 1, 1, 0},
     {8192, 2, 8},
     DIST_OPT | GRADS_FP32,
     "measured: gpt3_7b_tp4_pp1_memory_speed (TP 4 without SP)",
     &ci_7b_tp4_pp1},
};
const size_t pn_memcheck_n_layouts = G_N_ELEMENTS(pn_memcheck_layouts);

static char *layout_json(const PnMemcheckLayout *l)
{
  GString *j = g_string_new("{\"schema_version\": 1, \"model\": ");
  if (l->model[0] == '{')
    g_string_append(j, l->model);
  else
    g_string_append_printf(j, "\"%s\"", l->model);
  g_string_append_printf(j, ", \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": %" G_GINT64_FORMAT "}",
                         l->grid.gpus);
  g_string_append_printf(j,
                         ", \"training\": {\"seq_length\": %" G_GINT64_FORMAT
                         ", \"micro_batch_size\": %" G_GINT64_FORMAT ", \"global_batch_size\": %" G_GINT64_FORMAT
                         ", \"precision\": \"%s\"}",
                         l->shape.seq, l->shape.mbs, l->shape.gbs, (l->flags & PN_MEMCHECK_FP8) ? "fp8" : "bf16");
  g_string_append_printf(
      j,
      ", \"parallel\": {\"tensor_model_parallel_size\": %" G_GINT64_FORMAT
      ", \"pipeline_model_parallel_size\": %" G_GINT64_FORMAT
      ", \"virtual_pipeline_model_parallel_size\": %" G_GINT64_FORMAT ", \"context_parallel_size\": %" G_GINT64_FORMAT
      ", \"expert_model_parallel_size\": %" G_GINT64_FORMAT
      ", \"sequence_parallel\": %s, \"account_for_embedding_in_pipeline_split\": %s"
      ", \"account_for_loss_in_pipeline_split\": %s",
      l->grid.tp, l->grid.pp, l->grid.vp, l->grid.cp, l->grid.ep, (l->flags & PN_MEMCHECK_SP) ? "true" : "false",
      (l->flags & PN_MEMCHECK_ACCOUNT_SPLIT) ? "true" : "false",
      (l->flags & PN_MEMCHECK_ACCOUNT_SPLIT) ? "true" : "false");
  if (l->grid.etp > 0)
    g_string_append_printf(j, ", \"expert_tensor_parallel_size\": %" G_GINT64_FORMAT, l->grid.etp);
  g_string_append_printf(j, "}, \"ddp\": {\"use_distributed_optimizer\": %s, \"grad_reduce_in_fp32\": %s}",
                         (l->flags & PN_MEMCHECK_DIST_OPT) ? "true" : "false",
                         (l->flags & PN_MEMCHECK_GRADS_FP32) ? "true" : "false");
  g_string_append_printf(j, ", \"recompute\": {\"recompute_granularity\": %s}}",
                         (l->flags & PN_MEMCHECK_SELECTIVE) ? "\"selective\"" : "null");
  return g_string_free(j, FALSE);
}

gboolean pn_memcheck_row(const PnMemcheckLayout *l, PnMemcheckRow *row, GError **error)
{
  g_autofree char *json    = layout_json(l);
  g_autoptr(PnScenario) sc = pn_scenario_load_string(json, l->model_label, NULL, 0, NULL, error);
  if (sc == NULL)
    return FALSE;
  memset(row, 0, sizeof *row);
  /* what the formula counts: bf16 weights, fp32 grads (no fp8 copies, no fp32 copy of the grads) */
  PnScenario same              = *sc;
  same.training.precision      = PN_PREC_BF16;
  same.ddp.grad_reduce_in_fp32 = true;

  PnMegatronArgs a;
  pn_megatron_args_from_scenario(sc, &a);
  row->megatron_state      = pn_megatron_weight_and_optimizer_bytes(&a);
  row->megatron_state_same = pn_megatron_weight_and_optimizer_bytes_same_layout(sc);
  for (int64_t s = 0; s < l->grid.pp; s++) {
    PnWorkloadMemory m;
    pn_workload_memory_stage(&same, s, false, &m);
    row->penumbra_state = MAX(row->penumbra_state, m.weights_bytes + m.gradients_bytes + m.optimizer_bytes);
  }
  /* Megatron turns sequence parallelism off at TP 1 and reports the SP formula only with it */
  row->act_formula = (l->flags & PN_MEMCHECK_SP) && l->grid.tp > 1 && (l->flags & PN_MEMCHECK_SELECTIVE) &&
                     sc->model.num_moe_experts == 0;
  row->act_same = row->act_formula && !(l->flags & PN_MEMCHECK_ACCOUNT_SPLIT);
  if (row->act_formula) {
    row->megatron_act = pn_megatron_activation_bytes(&a);
    row->coefficient  = pn_megatron_layer_coefficient(&a);
  }
  if (row->act_same) {
    row->megatron_act_same = pn_megatron_activation_bytes_same_layout(sc);
    row->coefficient_same  = pn_megatron_layer_coefficient_same_layout(sc);
  }
  row->learned_positions = strcmp(sc->model.position_embedding_type, "learned_absolute") == 0;
  row->num_layers        = sc->model.num_layers;
  PnWorkloadMemory first;
  pn_workload_memory_stage(&same, 0, false, &first);
  row->penumbra_act = first.activations_bytes;
  pn_workload_memory(sc, false, &row->as_configured);
  pn_workload_memory_stage(sc, l->grid.pp - 1, false, &row->last_stage);
  return TRUE;
}

/* ---- markdown ---- */

static double rel(double ours, double theirs) { return (ours - theirs) / theirs; }

static void layout_text(GString *o, const PnMemcheckLayout *l)
{
  int64_t dp = l->grid.gpus / (l->grid.tp * l->grid.pp * l->grid.cp);
  g_string_append_printf(o, "TP%" G_GINT64_FORMAT " PP%" G_GINT64_FORMAT, l->grid.tp, l->grid.pp);
  if (l->grid.vp > 1)
    g_string_append_printf(o, " VPP%" G_GINT64_FORMAT, l->grid.vp);
  if (l->grid.cp > 1)
    g_string_append_printf(o, " CP%" G_GINT64_FORMAT, l->grid.cp);
  if (l->grid.ep > 1)
    g_string_append_printf(o, " EP%" G_GINT64_FORMAT " ETP%" G_GINT64_FORMAT, l->grid.ep,
                           l->grid.etp > 0 ? l->grid.etp : l->grid.tp);
  g_string_append_printf(
      o, " DP%" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " GPUs)%s%s%s, mbs %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT, dp,
      l->grid.gpus, (l->flags & PN_MEMCHECK_SP) && l->grid.tp > 1 ? ", SP" : "",
      (l->flags & PN_MEMCHECK_SELECTIVE) ? ", selective" : "",
      (l->flags & PN_MEMCHECK_ACCOUNT_SPLIT) ? ", emb./loss in split" : "", l->shape.mbs, l->shape.seq);
}

/* Why the formula's own figure and the same layout's differ (nothing when they agree). */
static void state_note(GString *o, const PnMemcheckLayout *l, const PnMemcheckRow *r)
{
  if (fabs(rel(r->megatron_state_same, r->megatron_state)) < 5e-4)
    return;
  g_string_append_printf(o, "; same layout: W+G+O %.2f GiB (penumbra %+.1f %%): ", r->megatron_state_same / GIB,
                         100.0 * rel(r->penumbra_state, r->megatron_state_same));
  const char *sep = "";
  if (l->grid.cp > 1 && (l->flags & PN_MEMCHECK_DIST_OPT)) {
    int64_t dp = l->grid.gpus / (l->grid.tp * l->grid.pp * l->grid.cp);
    g_string_append_printf(o, "the optimizer shards over DP x CP %" G_GINT64_FORMAT ", not DP %" G_GINT64_FORMAT,
                           dp * l->grid.cp, dp);
    sep = "; ";
  }
  if ((l->flags & PN_MEMCHECK_ACCOUNT_SPLIT)) {
    g_string_append_printf(o,
                           "%sthe split gives middle stages (%" G_GINT64_FORMAT " + 2) / %" G_GINT64_FORMAT
                           " layers, not %" G_GINT64_FORMAT " / %" G_GINT64_FORMAT " and an embedding",
                           sep, r->num_layers, l->grid.pp, r->num_layers, l->grid.pp);
    sep = "; ";
  }
  if (r->learned_positions)
    g_string_append_printf(o, "%sthe learned position embedding", sep);
}

static void act_note(GString *o, const PnMemcheckLayout *l, const PnMemcheckRow *r)
{
  if (!r->act_formula)
    return;
  if (!r->act_same) {
    g_string_append(o, "; activations: the formula's first stage holds num_layers x its interleaving factor, the "
                       "split gives it fewer layers than the middle stages");
    return;
  }
  if (fabs(rel(r->megatron_act_same, r->megatron_act)) < 5e-4)
    return;
  g_string_append_printf(o,
                         "; same layer: activations %.2f GiB (penumbra %+.1f %%): %.2f, not %.2f, x s·b·h per layer%s",
                         r->megatron_act_same / GIB, 100.0 * rel(r->penumbra_act, r->megatron_act_same),
                         r->coefficient_same, r->coefficient, l->grid.cp > 1 ? ", s / CP tokens per GPU" : "");
}

static void precision_text(GString *o, const PnMemcheckLayout *l)
{
  g_string_append_printf(o, "%s, %s, %s grads", (l->flags & PN_MEMCHECK_FP8) ? "FP8" : "BF16",
                         (l->flags & PN_MEMCHECK_DIST_OPT) ? "dist. opt." : "no dist. opt.",
                         (l->flags & PN_MEMCHECK_GRADS_FP32) ? "fp32" : "bf16");
}

gboolean pn_memcheck_markdown(GString *o, GError **error)
{
  g_autofree PnMemcheckRow *rows = g_new0(PnMemcheckRow, pn_memcheck_n_layouts);
  for (size_t i = 0; i < pn_memcheck_n_layouts; i++)
    if (!pn_memcheck_row(&pn_memcheck_layouts[i], &rows[i], error))
      return FALSE;

  g_string_append(o, "| # | model | layout | training | W+G+O Megatron | W+G+O penumbra | Δ | activations Megatron | "
                     "activations penumbra | Δ | penumbra total, as trained | notes |\n"
                     "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < pn_memcheck_n_layouts; i++) {
    const PnMemcheckLayout *l = &pn_memcheck_layouts[i];
    const PnMemcheckRow *r    = &rows[i];
    g_string_append_printf(o, "| %zu | %s | ", i + 1, l->model_label);
    layout_text(o, l);
    g_string_append(o, " | ");
    precision_text(o, l);
    g_string_append_printf(o, " | %.2f | %.2f | %+.1f %% | ", r->megatron_state / GIB, r->penumbra_state / GIB,
                           100.0 * rel(r->penumbra_state, r->megatron_state));
    if (r->act_formula)
      g_string_append_printf(o, "%.2f | %.2f | %+.1f %% | ", r->megatron_act / GIB, r->penumbra_act / GIB,
                             100.0 * rel(r->penumbra_act, r->megatron_act));
    else
      g_string_append_printf(o, "– | %.2f | | ", r->penumbra_act / GIB);
    g_string_append_printf(o, "%.2f | %s", r->as_configured.total_bytes / GIB, l->what);
    state_note(o, l, r);
    act_note(o, l, r);
    g_string_append(o, " |\n");
  }
  g_string_append_printf(
      o,
      "\nGiB = 2^30 B per GPU. W+G+O: weights + gradients + optimizer state of the most loaded stage; activations: "
      "the first stage's. Megatron: megatron/training/theoretical_memory_usage.py (NVIDIA/Megatron-LM@d98e8a64), "
      "which assumes BF16 weights and fp32 grads, and gives activations for sequence parallel with selective "
      "recompute only (– elsewhere); penumbra: src/workload/memory.c on the same layout with BF16 weights and fp32 "
      "grads. Δ = (penumbra - Megatron) / Megatron. Total, as trained: penumbra's estimate of the worst stage with "
      "the row's precision and grad dtype, and its 'other' (CUDA context, workspaces, NCCL). "
      "tests/unit/test_memory.c holds |Δ| <= %.0f %% against the same-layout figures of the notes.\n",
      100.0 * PN_MEMCHECK_TOLERANCE);

  g_string_append(o, "\n| run | layout | measured max allocated | penumbra W+G+O+A | Δ | measured allocated after "
                     "the iteration | penumbra W+G+O | Δ | source |\n"
                     "|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < pn_memcheck_n_layouts; i++) {
    const PnMemcheckLayout *l   = &pn_memcheck_layouts[i];
    const PnMemcheckMeasured *x = l->measured;
    if (x == NULL)
      continue;
    const PnWorkloadMemory *m = &rows[i].last_stage;
    double state              = m->weights_bytes + m->gradients_bytes + m->optimizer_bytes;
    g_string_append_printf(o, "| %s | ", x->test_case);
    layout_text(o, l);
    g_string_append_printf(o, " | %.2f | %.2f | %+.1f %% | %.2f | %.2f | %+.1f %% | ", x->max_allocated_bytes / GIB,
                           (state + m->activations_bytes) / GIB,
                           100.0 * rel(state + m->activations_bytes, x->max_allocated_bytes), x->allocated_bytes / GIB,
                           state / GIB, 100.0 * rel(state, x->allocated_bytes));
    g_string_append_printf(o, CI_SOURCE " |\n", x->test_case);
  }
  g_string_append(o, "\nMeasured: Megatron-LM's mem-max-allocated-bytes and mem-allocated-bytes "
                     "(torch.cuda.memory_stats after each iteration, logged by the last rank: the last pipeline "
                     "stage), identical over iterations 2-25 (iteration 1 peaks before Adam's m and v exist). "
                     "penumbra: that stage as trained, without 'other' (the CUDA context and NCCL's buffers are "
                     "not in PyTorch's allocator).\n");
  return TRUE;
}
