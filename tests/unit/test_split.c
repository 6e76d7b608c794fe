/* test_split.c — Megatron-Core's pipeline split (workload/split.h): the layout parser on
 * Megatron's own examples and on DeepSeek-V3's layouts from Megatron-Bridge's recipe, the uneven
 * first / last stages with and without virtual pipelining, each of Megatron's assertions as an
 * error at the key it blames, the rules that derive the virtual size from a layout, the scenario
 * keys, and the builder on virtual stages without layers.
 *
 * Expected splits are worked out in each test's comment from Megatron-Core's code
 * (transformer_block.py get_num_layers_to_build, transformer_layer.py
 * get_transformer_layer_offset, pipeline_parallel_layer_layout.py). Virtual stages are listed in
 * Megatron's order, vs = chunk * pp + rank.
 */
#include <check.h>
#include <glib.h>
#include <string.h>

#include "io/scenario.h"
#include "sim/result.h"
#include "sim/sim.h"
#include "workload/rules.h"
#include "workload/split.h"

#define LAYOUT_PTR "/parallel/pipeline_model_parallel_layout"
#define FIRST_PTR "/parallel/num_layers_in_first_pipeline_stage"
#define LAST_PTR "/parallel/num_layers_in_last_pipeline_stage"

/* ---- helpers ---- */

/* `layout` in normal form, or the rule's message. */
static char *expand(const char *layout)
{
  char out[PN_LAYOUT_MAX];
  PnRuleViolation v;
  if (pn_workload_layout_expand(layout, out, sizeof out, &v) != PN_RULE_OK)
    return g_strdup_printf("error: %s: %s", v.path, v.message);
  return g_strdup(out);
}

/* The scenario the split reads: num_layers, mtp_num_layers and the pipeline keys. */
static void split_scenario(PnScenario *sc, int64_t layers, int64_t mtp, const char *layout)
{
  memset(sc, 0, sizeof *sc);
  sc->model.num_layers     = layers;
  sc->model.mtp_num_layers = mtp;
  if (layout != NULL) {
    PnRuleViolation v;
    ck_assert_msg(pn_workload_layout_expand(layout, sc->parallel.pipeline_model_parallel_layout,
                                            sizeof sc->parallel.pipeline_model_parallel_layout, &v) == PN_RULE_OK,
                  "%s: %s", layout, v.message);
  }
}

/* The layers of each virtual stage, "4 4 1", or "error: <path>: <message>". */
static char *split_text(const PnScenario *sc, int64_t pp, int64_t vpp)
{
  g_autoptr(GArray) layers = g_array_new(FALSE, FALSE, sizeof(int64_t));
  PnRuleViolation v;
  if (pn_workload_stage_layers(sc, pp, vpp, layers, &v) != PN_RULE_OK)
    return g_strdup_printf("error: %s: %s", v.path, v.message);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < layers->len; i++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? " " : "", g_array_index(layers, int64_t, i));
  return g_string_free(s, FALSE);
}

/* A scenario of `model` on `gpus` H100s with the parallel keys `parallel` and the further top-level
 * keys `extra` (may be NULL). */
static PnScenario *load_with(const char *model, int gpus, const char *parallel, const char *extra, GError **error)
{
  g_autofree char *json = g_strdup_printf(
      "{\"schema_version\": 1, \"model\": %s, \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": %d},"
      " \"training\": {\"seq_length\": 1024, \"micro_batch_size\": 1, \"global_batch_size\": 64},"
      " \"parallel\": {%s}%s%s}",
      model, gpus, parallel, extra ? ", " : "", extra ? extra : "");
  return pn_scenario_load_string(json, "test.json", NULL, 0, NULL, error);
}

static PnScenario *load(const char *model, int gpus, const char *parallel, GError **error)
{
  return load_with(model, gpus, parallel, NULL, error);
}

static PnScenario *load_ok(const char *model, int gpus, const char *parallel)
{
  g_autoptr(GError) error = NULL;
  PnScenario *sc          = load(model, gpus, parallel, &error);
  ck_assert_msg(sc != NULL, "%s: %s", parallel, error ? error->message : "?");
  return sc;
}

/* ---- layouts ---- */

/* PipelineParallelLayerLayout.parse_str_to_list: commas go first, then r'\(([^)]+)\)\*(\d+)' and
 * r'(.)\*(\d+)' are unrolled left to right, each once. Its own examples (with layer letters for
 * its placeholder ones): "Ettt|(tt|)*29,m|L" is [E t t t] + [t t] x 29 + [m] + [L]; the
 * TransformerConfig docstring's "Et*3|(tt|)*29,m|L" the same; "xy(ab|cd|ef)*2,pq" ->
 * "xyab|cd|efab|cd|efpq", "(ab)*3" -> "ababab", "ab,(cd|)*2" -> "abcd|cd|", "(|ab)*2,cd" ->
 * "|ab|abcd"; --pipeline-model-parallel-layout's help "E|(t|)*3,m|m||L". A group is repeated
 * before its inner "t*2" (which the second pass then unrolls), a nested group is not unrolled
 * (its '(' is no layer), "x*0" is nothing. */
START_TEST(test_layout_expand)
{
  g_autoptr(GString) want = g_string_new("Ettt|");
  for (int i = 0; i < 29; i++)
    g_string_append(want, "tt|");
  g_string_append(want, "m|L");
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"tE(tt|LL|mm)*2,Lt", "tEtt|LL|mmtt|LL|mmLt"},
      {"(tt)*3", "tttttt"},
      {"tt,(Et|)*2", "ttEt|Et|"},
      {"(|tt)*2,EL", "|tt|ttEL"},
      {"E|(t|)*3,m|m||L", "E|t|t|t|m|m||L"},
      {"E|(tt|)*2,(t|)*4,mL", "E|tt|tt|t|t|t|t|mL"},
      {"(t*2)*2,EL", "ttttEL"},
      {"Et*0L", "EL"},
      {"E(t|)*0,t*12L", "EttttttttttttL"},
      {"E|tt||tL", "E|tt||tL"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *got = expand(cases[i].in);
    ck_assert_msg(strcmp(got, cases[i].out) == 0, "%s: %s, expected %s", cases[i].in, got, cases[i].out);
    g_autofree char *again = expand(got); /* the normal form reads back as itself */
    ck_assert_str_eq(again, got);
  }
  g_autofree char *a = expand("Ettt|(tt|)*29,m|L"), *b = expand("Et*3|(tt|)*29,m|L");
  ck_assert_str_eq(a, want->str);
  ck_assert_str_eq(b, want->str);
  ck_assert_int_eq(pn_workload_layout_stages(a), 32);
  ck_assert_int_eq(pn_workload_layout_stages(""), 0);
  ck_assert_int_eq(pn_workload_layout_stages("E|tt||tL"), 4);

  static const struct {
    const char *in, *why;
  } bad[] = {
      {"Etx|L", "invalid layer character 'x' in virtual stage 0"},
      {"Et|t L", "invalid layer character ' ' in virtual stage 1"}, /* no spaces in Megatron's strings */
      {"E((t)*2|)*2,L", "invalid layer character '('"},
      {"Et*2*3L", "invalid layer character '*'"},
      {"|", "holds no layer"},
      {"", "holds no layer"},
      {"Et*2000L", "is 2002 characters written out, at most 1023 are read"},
      {"E(t*100000|)*100000L", "unrolls to more than"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *got = expand(bad[i].in);
    ck_assert_msg(g_str_has_prefix(got, "error: " LAYOUT_PTR ": ") && strstr(got, bad[i].why) != NULL,
                  "%s: %s, expected %s", bad[i].in, got, bad[i].why);
  }
}
END_TEST

/* Written back short (export, the sweep's launch line): Bridge's H100 DeepSeek-V3 layout is
 * "Et|(tt|)*30,mL" again; runs of three or more layers as "t*N", of two stages or more as
 * "(S|)*N,"; and for 2,000 random normal forms (seeded) the short form expands to the same. */
START_TEST(test_layout_compact)
{
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"Et|(tt|)*30mL", "Et|(tt|)*30,mL"},
      {"Et*4|(t*4|)*14,tL", "Et*4|(t*4|)*14,tL"},
      {"Ettt|tt|ttL", "Et*3|tt|ttL"},
      {"E|tt||tL", "E|tt||tL"},
      {"E||||tL", "E|(|)*3,tL"},
      {"Et|tL|||", "Et|tL|(|)*2"},
      {"Et|tL||", "Et|tL||"},
      {"Ett|Ett|Ett", "(Ett|)*2,Ett"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *normal = expand(cases[i].in);
    g_autofree char *got    = pn_workload_layout_compact(normal);
    ck_assert_msg(strcmp(got, cases[i].out) == 0, "%s: %s, expected %s", cases[i].in, got, cases[i].out);
  }
  static const char *const pool[] = {"", "t", "tt", "ttt", "tttt", "Et", "E", "tL", "tmL", "mL", "L", "ttmtt"};
  GRand *rand                     = g_rand_new_with_seed(20260822);
  for (int k = 0; k < 2000; k++) {
    g_autoptr(GString) normal = g_string_new(NULL);
    int stages                = g_rand_int_range(rand, 1, 40);
    /* few distinct stages, so that runs of them are common */
    int distinct = g_rand_int_range(rand, 1, 4), first = g_rand_int_range(rand, 0, G_N_ELEMENTS(pool) - 3);
    for (int st = 0; st < stages; st++)
      g_string_append_printf(normal, "%s%s", st ? "|" : "", pool[first + g_rand_int_range(rand, 0, distinct)]);
    if (strpbrk(normal->str, "ELtm") == NULL)
      g_string_prepend_c(normal, 'E');
    g_autofree char *shortened = pn_workload_layout_compact(normal->str);
    g_autofree char *back      = expand(shortened);
    ck_assert_msg(strcmp(back, normal->str) == 0, "%s -> %s -> %s", normal->str, shortened, back);
  }
  g_rand_free(rand);
}
END_TEST

/* TransformerConfig's docstring example 'E|(tt|)*2,(t|)*4,mL' (one MTP layer, 8 decoder layers):
 * 8 virtual stages, at pp 4 vpp 2: chunk 0 of rank 0 holds the embedding, ranks 1-2 two layers,
 * rank 3 one; chunk 1 of ranks 0-2 one each, of rank 3 the MTP layer and the loss:
 *   layers 0 2 2 1 1 1 1 0. At pp 2 vpp 4 the same list, and the MTP layer still sits in the last
 * chunk of the last rank. At pp 8 every rank holds one chunk. */
START_TEST(test_layout_docstring)
{
  PnScenario sc;
  split_scenario(&sc, 8, 1, "E|(tt|)*2,(t|)*4,mL");
  g_autofree char *p4 = split_text(&sc, 4, 1), *p2 = split_text(&sc, 2, 1), *p8 = split_text(&sc, 8, 1);
  ck_assert_str_eq(p4, "0 2 2 1 1 1 1 0");
  ck_assert_str_eq(p2, "0 2 2 1 1 1 1 0");
  ck_assert_str_eq(p8, "0 2 2 1 1 1 1 0");
  g_autofree char *given = split_text(&sc, 4, 2), *wrong = split_text(&sc, 4, 4);
  ck_assert_str_eq(given, "0 2 2 1 1 1 1 0");
  ck_assert_str_eq(wrong, "error: /parallel/virtual_pipeline_model_parallel_size: 4 conflicts with "
                          "pipeline_model_parallel_layout's 2 virtual stages per pipeline rank (8 stages / "
                          "pipeline_model_parallel_size 4)");
}
END_TEST

/* DeepSeek-V3 (61 layers) from Megatron-Bridge's recipe (recipes/deepseek/deepseek_v3.py,
 * layout_map): [E + 4t], 14 x [4t], [t + mtp + L] for (pp, vp) = (16, 1), (8, 2) and (4, 4) (16
 * virtual stages: not PP 8 VP 4, which its H100 performance run splits by a layout of its own):
 * 16 virtual stages of 4 layers but the last of 1. As Bridge gives it (a list of lists) and as a
 * string they are one normal form; the virtual size follows the pipeline size; with one MTP layer
 * (model.mtp_num_layers 1) the 'm' beside the loss is accepted, without it refused. */
START_TEST(test_layout_deepseek_v3)
{
  GString *list = g_string_new("[[\"embedding\", \"decoder\", \"decoder\", \"decoder\", \"decoder\"]");
  for (int i = 0; i < 14; i++)
    g_string_append(list, ", [\"decoder\", \"decoder\", \"decoder\", \"decoder\"]");
  g_autofree char *no_mtp   = g_strdup_printf("%s, [\"decoder\", \"loss\"]]", list->str);
  g_autofree char *with_mtp = g_strdup_printf("%s, [\"Decoder\", \" mtp \", \"loss\"]]", list->str);
  g_string_free(list, TRUE);
  const char *model               = "{\"base\": \"llama3-8b\", \"num_layers\": 61}";
  const char *mtp                 = "{\"base\": \"llama3-8b\", \"num_layers\": 61, \"mtp_num_layers\": 1}";
  static const int64_t sizes[][2] = {{16, 1}, {8, 2}, {4, 4}};
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    int64_t pp           = sizes[i][0];
    g_autofree char *par = g_strdup_printf(
        "\"pipeline_model_parallel_size\": %" G_GINT64_FORMAT ", \"pipeline_model_parallel_layout\": %s", pp, no_mtp);
    g_autofree char *str     = g_strdup_printf("\"pipeline_model_parallel_size\": %" G_GINT64_FORMAT
                                               ", \"pipeline_model_parallel_layout\": \"Et*4|(t*4|)*14,tL\"",
                                               pp);
    g_autoptr(PnScenario) a  = load_ok(model, (int)pp, par);
    g_autoptr(PnScenario) b  = load_ok(model, (int)pp, str);
    g_autofree char *mtp_par = g_strdup_printf(
        "\"pipeline_model_parallel_size\": %" G_GINT64_FORMAT ", \"pipeline_model_parallel_layout\": %s", pp, with_mtp);
    g_autoptr(PnScenario) c    = load_ok(mtp, (int)pp, mtp_par);
    g_autoptr(GError) error    = NULL;
    g_autoptr(PnScenario) none = load(model, (int)pp, mtp_par, &error);
    ck_assert_ptr_null(none);
    ck_assert_ptr_nonnull(strstr(error->message, "test.json: " LAYOUT_PTR ": holds 1 MTP layers 'm' but "
                                                 "model.mtp_num_layers is 0"));
    ck_assert_str_eq(a->parallel.pipeline_model_parallel_layout, b->parallel.pipeline_model_parallel_layout);
    ck_assert_int_eq(a->parallel.virtual_pipeline_model_parallel_size, sizes[i][1]);
    ck_assert_int_eq(c->parallel.virtual_pipeline_model_parallel_size, sizes[i][1]);
    g_autofree char *got     = split_text(a, pp, a->parallel.virtual_pipeline_model_parallel_size);
    g_autofree char *got_mtp = split_text(c, pp, sizes[i][1]);
    ck_assert_str_eq(got, "4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 1");
    ck_assert_str_eq(got_mtp, got);
  }
  /* Bridge's H100 performance run (scripts/performance/run_script.py: pp 8, vp 4) passes its own
   * layout "Et|(tt|)*30mL": 32 virtual stages, [E t], 30 x [t t], [m L]: one layer in the first,
   * none in the last, beside which the MTP layer sits */
  PnScenario perf;
  split_scenario(&perf, 61, 1, "Et|(tt|)*30mL");
  g_autofree char *perf_got    = split_text(&perf, 8, 4);
  g_autoptr(GString) perf_want = g_string_new("1");
  for (int i = 0; i < 30; i++)
    g_string_append(perf_want, " 2");
  g_string_append(perf_want, " 0");
  ck_assert_str_eq(perf_got, perf_want->str);
  /* the string form with the MTP layer: its last stage is "tmL" */
  g_autoptr(PnScenario) s = load_ok(mtp, 16,
                                    "\"pipeline_model_parallel_size\": 16, \"pipeline_model_parallel_layout\": "
                                    "\"Et*4|(t*4|)*14,tmL\"");
  ck_assert_str_eq(strrchr(s->parallel.pipeline_model_parallel_layout, '|'), "|tmL");
}
END_TEST

/* Each check of PipelineParallelLayerLayout and validate_layer_layout, and penumbra's own refusal
 * of an MTP layer away from the loss, in the order Megatron checks them. */
START_TEST(test_layout_errors)
{
  static const struct {
    const char *layout;
    int64_t layers, mtp, pp, vpp;
    const char *want; /* the start of the message; the path is the layout's unless it names another */
  } cases[] = {
      {"Ett|tL", 3, 0, 3, 1,
       "has 2 virtual stages, not a multiple of pipeline_model_parallel_size 3 (Megatron-Core: the length of "
       "pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size)"},
      {"Ett|tL|", 3, 0, 1, 2, "/parallel/virtual_pipeline_model_parallel_size: 2 conflicts"},
      {"tE|tL", 2, 0, 2, 1, "the first layer must be the embedding 'E', got 't'"},
      {"|tEt|tL", 3, 0, 3, 1, "the first layer must be the embedding 'E', got 't'"},
      {"Et|Lt", 2, 0, 2, 1, "the last layer must be the loss 'L', got 't'"},
      {"EtE|tL", 2, 0, 2, 1, "the embedding 'E' must be given exactly once, got 2"},
      {"EtL|tL", 2, 0, 2, 1, "the loss 'L' must be given exactly once, got 2"},
      {"Et|tL", 3, 0, 2, 1, "holds 2 decoder layers 't', the model's num_layers is 3"},
      {"Et|tmL", 2, 0, 2, 1, "holds 1 MTP layers 'm' but model.mtp_num_layers is 0"},
      {"Et|tL", 2, 1, 2, 1, "holds 0 MTP layers 'm' but model.mtp_num_layers is 1"},
      {"Etm|tL", 2, 1, 2, 1, "decoder layers 't' must be placed before the MTP layers 'm'"},
      {"Et|m||L", 1, 1, 2, 2,
       "MTP layers 'm' must be in the last virtual stage of their pipeline rank, got one in "
       "virtual stage 1 (chunk 0 of rank 1)"},
      {"Etm|mL", 1, 2, 2, 1, "all the MTP layers 'm' must be in the same virtual stage"},
      {"Ettm|L", 2, 1, 2, 1, "MTP layers ('m') outside the last virtual stage (Megatron's mtp_standalone)"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    PnScenario sc;
    split_scenario(&sc, cases[i].layers, cases[i].mtp, cases[i].layout);
    g_autofree char *got  = split_text(&sc, cases[i].pp, cases[i].vpp);
    g_autofree char *want = cases[i].want[0] == '/' ? g_strdup_printf("error: %s", cases[i].want)
                                                    : g_strdup_printf("error: " LAYOUT_PTR ": %s", cases[i].want);
    ck_assert_msg(g_str_has_prefix(got, want), "%s: %s, expected %s", cases[i].layout, got, want);
  }
  /* accepted: the MTP layer with the loss, an empty first stage (Megatron checks the flat list: the
   * embedding is built on virtual stage 0 all the same), empty middle and last stages */
  PnScenario sc;
  split_scenario(&sc, 2, 1, "Et|tmL");
  g_autofree char *mtp = split_text(&sc, 2, 1);
  ck_assert_str_eq(mtp, "1 1");
  split_scenario(&sc, 4, 0, "|Ett|tt|L");
  g_autofree char *empty = split_text(&sc, 2, 1);
  ck_assert_str_eq(empty, "0 2 2 0");
}
END_TEST

/* ---- uneven and even splits ---- */

/* get_transformer_layer_offset with uneven stages, by its own formula: with vpp, chunk c of rank
 * r > 0 starts at c * (first + middle + last) / vpp + first / vpp + (r - 1 if first else r) *
 * (middle / vpp) / middle_stages; without, at (middle rank) * per-rank + first. The split's layers
 * must start there (the virtual stages before it, in Megatron's order, hold exactly that many). */
static void check_offsets(const PnScenario *sc, int64_t pp, int64_t vpp, const GArray *layers)
{
  int64_t f = sc->parallel.num_layers_in_first_pipeline_stage, l = sc->parallel.num_layers_in_last_pipeline_stage;
  int64_t middle = sc->model.num_layers - f - l, middle_stages = pp - (f > 0) - (l > 0);
  for (int64_t vs = 0, sum = 0; vs < pp * vpp; sum += g_array_index(layers, int64_t, vs), vs++) {
    int64_t c = vs / pp, r = vs % pp, mrank = f > 0 ? r - 1 : r, offset;
    if (vpp > 1)
      offset = r == 0 ? c * (f / vpp + middle / vpp + l / vpp)
                      : c * (f / vpp + middle / vpp + l / vpp) + f / vpp + mrank * (middle / vpp / middle_stages);
    else
      offset = r == 0 ? 0 : mrank * (middle_stages > 0 ? middle / middle_stages : 0) + f;
    ck_assert_msg(offset == sum,
                  "vs %" G_GINT64_FORMAT ": Megatron's offset %" G_GINT64_FORMAT ", split's %" G_GINT64_FORMAT, vs,
                  offset, sum);
  }
}

/* num_layers_in_first/last_pipeline_stage. 32 layers at pp 4: first 5, the other three stages
 * share 27 (9 each); last 2, 30 over three (10); both 6, 20 over two (10); at vpp 2 with 8 and 8,
 * 8 each, 4 per chunk. 30 layers at pp 4 vpp 3, both 6: 2 + 3 + 3 + 2 per chunk; first 3: the
 * other three share 27 (9: 3 per chunk). 10 layers at pp 2, 4 and 6: no middle stage. 10 at pp 1,
 * first 10: the one stage holds them all. 14 at pp 3 vpp 2, first 2: 12 over two (6: 3 per chunk). */
START_TEST(test_uneven)
{
  static const struct {
    int64_t layers, pp, vpp, first, last;
    const char *want;
  } cases[] = {
      {32, 4, 1, 5, 0, "5 9 9 9"},
      {32, 4, 1, 0, 2, "10 10 10 2"},
      {32, 4, 1, 6, 6, "6 10 10 6"},
      {32, 4, 2, 8, 8, "4 4 4 4 4 4 4 4"},
      {30, 4, 3, 6, 6, "2 3 3 2 2 3 3 2 2 3 3 2"},
      {30, 4, 3, 3, 0, "1 3 3 3 1 3 3 3 1 3 3 3"},
      {10, 2, 1, 4, 6, "4 6"},
      {10, 1, 1, 10, 0, "10"},
      {14, 3, 2, 2, 0, "1 3 3 1 3 3"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    PnScenario sc;
    split_scenario(&sc, cases[i].layers, 0, NULL);
    sc.parallel.num_layers_in_first_pipeline_stage = cases[i].first;
    sc.parallel.num_layers_in_last_pipeline_stage  = cases[i].last;
    g_autofree char *got                           = split_text(&sc, cases[i].pp, cases[i].vpp);
    ck_assert_msg(strcmp(got, cases[i].want) == 0, "case %zu: %s, expected %s", i, got, cases[i].want);
    g_autoptr(GArray) layers = g_array_new(FALSE, FALSE, sizeof(int64_t));
    pn_workload_stage_layers(&sc, cases[i].pp, cases[i].vpp, layers, NULL);
    check_offsets(&sc, cases[i].pp, cases[i].vpp, layers);
  }
}
END_TEST

/* TransformerConfig.__post_init__'s "Uneven PP" checks in its order, and what penumbra refuses
 * that Megatron lets through (then building another model). */
START_TEST(test_uneven_errors)
{
  static const struct {
    int64_t layers, pp, vpp, first, last;
    bool account;
    const char *want;
  } cases[] = {
      {32, 4, 1, 4, 0, true,
       FIRST_PTR ": cannot be set together with account_for_embedding_in_pipeline_split or "
                 "account_for_loss_in_pipeline_split"},
      {32, 4, 2, 5, 0, false,
       FIRST_PTR ": 5 layers of the first stage are not divisible by virtual_pipeline_model_parallel_size 2"},
      {32, 4, 2, 4, 3, false,
       LAST_PTR ": 3 layers of the last stage are not divisible by virtual_pipeline_model_parallel_size 2"},
      {8, 1, 1, 4, 4, false,
       LAST_PTR ": set with num_layers_in_first_pipeline_stage at pipeline_model_parallel_size 1"},
      {8, 3, 1, 6, 6, false, FIRST_PTR ": the first and last stages' 12 layers exceed num_layers 8"},
      {32, 2, 1, 10, 10, false, FIRST_PTR ": leaves 12 layers for 0 middle pipeline stages"},
      {10, 2, 2, 4, 6, false,
       FIRST_PTR ": with num_layers_in_last_pipeline_stage leaves no middle stage at "
                 "pipeline_model_parallel_size 2"},
      {32, 3, 1, 0, 32, false, LAST_PTR ": leaves 0 layers for 2 middle pipeline stages"},
      {32, 4, 1, 4, 5, false, FIRST_PTR ": leaves 23 layers, not divisible by the 2 middle pipeline stages"},
      {34, 4, 2, 4, 4, false,
       FIRST_PTR
       ": leaves 13 layers on each middle pipeline stage, not divisible by virtual_pipeline_model_parallel_size 2"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    PnScenario sc;
    split_scenario(&sc, cases[i].layers, 0, NULL);
    sc.parallel.num_layers_in_first_pipeline_stage      = cases[i].first;
    sc.parallel.num_layers_in_last_pipeline_stage       = cases[i].last;
    sc.parallel.account_for_embedding_in_pipeline_split = cases[i].account;
    g_autofree char *got                                = split_text(&sc, cases[i].pp, cases[i].vpp);
    g_autofree char *want                               = g_strdup_printf("error: %s", cases[i].want);
    ck_assert_msg(g_str_has_prefix(got, want), "case %zu: %s, expected %s", i, got, want);
  }
  /* a layout excludes the other keys (TransformerConfig), uneven ones named first */
  PnScenario sc;
  split_scenario(&sc, 2, 0, "Et|tL");
  sc.parallel.account_for_loss_in_pipeline_split = true;
  g_autofree char *acc                           = split_text(&sc, 2, 1);
  ck_assert_str_eq(acc, "error: " LAYOUT_PTR ": cannot be set with the other pipeline layout keys "
                        "(num_layers_in_first_pipeline_stage 0, num_layers_in_last_pipeline_stage 0, "
                        "account_for_embedding_in_pipeline_split false, account_for_loss_in_pipeline_split true)");
}
END_TEST

/* The even split as before: 30 layers + embedding + loss = 32 slots over pp 4 x vpp 2, the first and
 * last virtual stage giving one to the embedding and the loss; 2 layers + 2 over pp 4 leave the
 * first and last stage none; the messages of PN_RULE_PP_LAYERS / PN_RULE_VPP_LAYERS. */
START_TEST(test_even)
{
  PnScenario sc;
  split_scenario(&sc, 30, 0, NULL);
  sc.parallel.account_for_embedding_in_pipeline_split = true;
  sc.parallel.account_for_loss_in_pipeline_split      = true;
  g_autofree char *acc = split_text(&sc, 4, 2), *bad_pp = split_text(&sc, 3, 1), *bad_vpp = split_text(&sc, 4, 3);
  ck_assert_str_eq(acc, "3 4 4 4 4 4 4 3");
  ck_assert_str_eq(bad_pp, "error: /parallel/pipeline_model_parallel_size: 3 does not divide num_layers 30 + 2 "
                           "(account_for_*_in_pipeline_split)");
  ck_assert_str_eq(bad_vpp, "error: /parallel/virtual_pipeline_model_parallel_size: 3 does not divide the 8 layers of "
                            "each pipeline stage (num_layers 30 + 2 (account_for_*_in_pipeline_split) / "
                            "pipeline_model_parallel_size 4)");
  split_scenario(&sc, 2, 0, NULL);
  sc.parallel.account_for_embedding_in_pipeline_split = true;
  sc.parallel.account_for_loss_in_pipeline_split      = true;
  g_autofree char *empty                              = split_text(&sc, 4, 1);
  ck_assert_str_eq(empty, "0 1 1 0");
  split_scenario(&sc, 32, 0, NULL);
  g_autofree char *plain = split_text(&sc, 4, 2), *wide = split_text(&sc, 64, 1);
  ck_assert_str_eq(plain, "4 4 4 4 4 4 4 4");
  ck_assert_str_eq(wide, "error: /parallel/pipeline_model_parallel_size: 64 does not divide num_layers 32");
  ck_assert(pn_workload_split_ok(&sc, 8, 4) && !pn_workload_split_ok(&sc, 8, 3));
}
END_TEST

/* ---- choosing a split (pn_workload_split_choose) ---- */

/* The split chosen for `layers` at (pp, vpp), as "first F last L account E,L | <virtual stages>"
 * ("-" for an unset key; the virtual stages' layers as split_text writes them, Megatron's check of
 * the chosen keys), or "none" when nothing is accepted. */
static char *choose_text(int64_t layers, int64_t pp, int64_t vpp)
{
  PnScenario sc;
  split_scenario(&sc, layers, 0, NULL);
  PnSplitKeys k;
  if (!pn_workload_split_choose(&sc, pp, vpp, &k)) {
    ck_assert(k.num_layers_in_first_pipeline_stage == 0 && k.num_layers_in_last_pipeline_stage == 0 &&
              !k.account_for_embedding_in_pipeline_split && !k.account_for_loss_in_pipeline_split &&
              k.pipeline_model_parallel_layout[0] == '\0');
    return g_strdup("none");
  }
  pn_workload_split_keys_set(&sc.parallel, &k);
  g_autofree char *stages = split_text(&sc, pp, vpp);
  GString *s              = g_string_new(NULL);
  if (k.num_layers_in_first_pipeline_stage > 0)
    g_string_append_printf(s, "first %" G_GINT64_FORMAT " ", k.num_layers_in_first_pipeline_stage);
  if (k.num_layers_in_last_pipeline_stage > 0)
    g_string_append_printf(s, "last %" G_GINT64_FORMAT " ", k.num_layers_in_last_pipeline_stage);
  if (k.account_for_embedding_in_pipeline_split || k.account_for_loss_in_pipeline_split)
    g_string_append_printf(s, "account %s%s ", k.account_for_embedding_in_pipeline_split ? "E" : "",
                           k.account_for_loss_in_pipeline_split ? "L" : "");
  if (k.pipeline_model_parallel_layout[0] != '\0') {
    g_autofree char *layout = pn_workload_layout_compact(k.pipeline_model_parallel_layout);
    g_string_append_printf(s, "layout %s ", layout);
  }
  g_string_append_printf(s, "| %s", stages);
  return g_string_free(s, FALSE);
}

/* The choice of split.h's four rules, each checked by Megatron's own (split_text: an accepted
 * split lists its virtual stages, a refused one says "error").
 * DeepSeek-V3's 61 layers (prime): at pp 8 the middle stages hold m = ceil(61 / 8) = 8, the ends
 * 61 - 6 x 8 = 13: the first 8 (a middle stage's, left unset), the last 5; pp 16: m 4, ends 5:
 * last 1; pp 4: m 16, ends 29: last 13; pp 2: m 31, last 30; pp 13: m 5, ends 6: last 1. These are
 * Megatron-Bridge's DeepSeek-V3 layouts for (4, 1), (8, 1), (16, 1). Interleaved, no keys: every
 * stage a multiple of vpp 2 or 4 sums to an even count, never 61, and 61 + 2 = 63 is odd; so a
 * layout, the same rule over the virtual stages: 16 of them (pp 8 vpp 2) hold n = 4, the ends
 * 61 - 14 x 4 = 5: the first 4, the last 1 (Bridge's layout_map for (8, 2)); 32 (pp 8 vpp 4, pp
 * 16 vpp 2): n 2, ends 1, the last none (Bridge's H100 DeepSeek-V3 run, at (8, 4)); 64 (pp 16
 * vpp 4): n 1 and 62 middle layers > 61: none. pp 14: m 5, ends 61 - 60 = 1 cannot hold two
 * stages of keys, a layout "Et|(t*5|)*12,L" can; pp 15: m 5, 13 x 5 > 61.
 * Llama 3.1 405B's 126 layers at pp 8: 128 = 8 x 16 with the embedding and the loss accounted
 * (Megatron-Bridge's recipe), also at vpp 2 (8 slots per chunk: 7 beside the embedding and the
 * loss). 80 layers: even wherever they divide (pp 8, pp 4 vpp 5), 82 at pp 41 over 2 chunks is
 * account_for's; at pp 8 vpp 4 (10 a stage, not a multiple of 4) m = 12, ends 80 - 72 = 8: first 4,
 * last 4. 58 layers at pp 4 vpp 2: m 16, ends 26: the first 16 (unset), last 10 (5 a chunk).
 * 17 layers at pp 16: m 2 leaves the ends nothing (14 x 2 > 17), and m 1 would leave them 3, more
 * than a middle stage's 1. pp 1: the one stage, even; interleaved there only when it divides. */
START_TEST(test_split_choose)
{
  static const struct {
    int64_t layers, pp, vpp;
    const char *want;
  } cases[] = {
      {61, 8, 1, "last 5 | 8 8 8 8 8 8 8 5"},
      {61, 16, 1, "last 1 | 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 1"},
      {61, 4, 1, "last 13 | 16 16 16 13"},
      {61, 2, 1, "last 30 | 31 30"},
      {61, 13, 1, "last 1 | 5 5 5 5 5 5 5 5 5 5 5 5 1"},
      {61, 8, 2, "layout Et*4|(t*4|)*14,tL | 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 1"},
      {61, 8, 4, "layout Et|(tt|)*30,L | 1 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 0"},
      {61, 16, 2, "layout Et|(tt|)*30,L | 1 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 0"},
      {61, 16, 4, "none"},
      {61, 14, 1, "layout Et|(t*5|)*12,L | 1 5 5 5 5 5 5 5 5 5 5 5 5 0"},
      {61, 15, 1, "none"},
      {61, 1, 1, "| 61"},
      {126, 8, 1, "account EL | 15 16 16 16 16 16 16 15"},
      {126, 8, 2, "account EL | 7 8 8 8 8 8 8 8 8 8 8 8 8 8 8 7"},
      {80, 8, 1, "| 10 10 10 10 10 10 10 10"},
      {80, 4, 5, "| 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4"},
      {80, 41, 2,
       "account EL | 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 "
       "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 0"},
      {80, 8, 4, "first 4 last 4 | 1 3 3 3 3 3 3 1 1 3 3 3 3 3 3 1 1 3 3 3 3 3 3 1 1 3 3 3 3 3 3 1"},
      {58, 4, 2, "last 10 | 8 8 8 5 8 8 8 5"},
      {17, 16, 1, "none"},
      {80, 1, 5, "| 16 16 16 16 16"},
      {61, 1, 2, "none"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *got = choose_text(cases[i].layers, cases[i].pp, cases[i].vpp);
    ck_assert_msg(strcmp(got, cases[i].want) == 0,
                  "%" G_GINT64_FORMAT " layers at pp %" G_GINT64_FORMAT " vpp %" G_GINT64_FORMAT ": %s, expected %s",
                  cases[i].layers, cases[i].pp, cases[i].vpp, got, cases[i].want);
  }
}
END_TEST

/* A split the scenario states is kept, where Megatron accepts it, and never replaced: uneven keys
 * (32 layers, first 5: pp 4 yes, pp 8 no, though the even split would work there), account_for
 * (30 + 2 at pp 4), a layout (its keys none, its virtual stages dividing over pp 2 and 4, not 3). */
START_TEST(test_split_choose_stated)
{
  PnScenario sc;
  PnSplitKeys k;
  split_scenario(&sc, 32, 0, NULL);
  ck_assert(!pn_workload_split_stated(&sc.parallel));
  sc.parallel.num_layers_in_first_pipeline_stage = 5;
  ck_assert(pn_workload_split_stated(&sc.parallel));
  ck_assert(pn_workload_split_choose(&sc, 4, 1, &k));
  ck_assert(k.num_layers_in_first_pipeline_stage == 5 && k.num_layers_in_last_pipeline_stage == 0);
  ck_assert(!pn_workload_split_choose(&sc, 8, 1, &k) && k.num_layers_in_first_pipeline_stage == 0);
  split_scenario(&sc, 30, 0, NULL);
  sc.parallel.account_for_embedding_in_pipeline_split = sc.parallel.account_for_loss_in_pipeline_split = true;
  ck_assert(pn_workload_split_choose(&sc, 4, 1, &k) && k.account_for_embedding_in_pipeline_split &&
            k.account_for_loss_in_pipeline_split);
  ck_assert(!pn_workload_split_choose(&sc, 3, 1, NULL) && pn_workload_split_choose(&sc, 2, 1, NULL));
  split_scenario(&sc, 14, 0, "Et|(tt|)*6,tL");
  ck_assert(pn_workload_split_stated(&sc.parallel));
  ck_assert(pn_workload_split_choose(&sc, 2, 1, &k) && pn_workload_split_choose(&sc, 4, 1, NULL));
  ck_assert(k.num_layers_in_first_pipeline_stage == 0 && !k.account_for_loss_in_pipeline_split);
  ck_assert(!pn_workload_split_choose(&sc, 3, 1, NULL));
}
END_TEST

/* The largest pipeline stage of the split `sc` states at (pp, vpp); 0 when Megatron refuses it. */
static int64_t largest_stage(const PnScenario *sc, int64_t pp, int64_t vpp)
{
  g_autoptr(GArray) layers = g_array_new(FALSE, FALSE, sizeof(int64_t));
  if (pn_workload_stage_layers(sc, pp, vpp, layers, NULL) != PN_RULE_OK)
    return 0;
  int64_t most = 0;
  for (int64_t rank = 0; rank < pp; rank++) {
    int64_t n = 0;
    for (int64_t chunk = 0; chunk < vpp; chunk++)
      n += g_array_index(layers, int64_t, chunk * pp + rank);
    most = MAX(most, n);
  }
  return most;
}

/* The rule against every split Megatron accepts, 1 to 64 layers at pp 3 to 16 and vpp 1 to 4: the
 * even split when Megatron takes it, else account_for when it takes that, else among every pair of
 * first / last stages it takes (each 1 .. num_layers) whose ends hold no more than a middle stage,
 * one of the least largest stage, the first as full as it gets: the chooser's, stage for stage;
 * where no keys split exists, a layout whose virtual stages hold at most ceil(layers / stages)
 * (the least any split can), every middle one exactly that, the first as full as it gets after
 * them; and "none" exactly when neither exists. */
START_TEST(test_split_choose_exhaustive)
{
  PnScenario sc, t;
  for (int64_t layers = 1; layers <= 64; layers++)
    for (int64_t pp = 3; pp <= 16; pp++)
      for (int64_t vpp = 1; vpp <= 4; vpp++) {
        split_scenario(&sc, layers, 0, NULL);
        PnSplitKeys got;
        gboolean ok                                        = pn_workload_split_choose(&sc, pp, vpp, &got);
        t                                                  = sc;
        PnSplitKeys want                                   = {0};
        bool found                                         = pn_workload_split_ok(&t, pp, vpp);
        t.parallel.account_for_embedding_in_pipeline_split = t.parallel.account_for_loss_in_pipeline_split = true;
        if (!found && pn_workload_split_ok(&t, pp, vpp))
          found = true, want.account_for_embedding_in_pipeline_split = want.account_for_loss_in_pipeline_split = true;
        t.parallel.account_for_embedding_in_pipeline_split = t.parallel.account_for_loss_in_pipeline_split = false;
        int64_t best_middle = 0, best_first = 0;
        for (int64_t f = vpp; !found && f <= layers; f += vpp)
          for (int64_t l = vpp; l + f <= layers; l += vpp) {
            t.parallel.num_layers_in_first_pipeline_stage = f;
            t.parallel.num_layers_in_last_pipeline_stage  = l;
            if (!pn_workload_split_ok(&t, pp, vpp))
              continue;
            int64_t middle = (layers - f - l) / (pp - 2);
            if (f > middle || l > middle)
              continue;
            if (best_middle == 0 || middle < best_middle || (middle == best_middle && f > best_first))
              best_middle = middle, best_first = f, want.num_layers_in_first_pipeline_stage = f,
              want.num_layers_in_last_pipeline_stage = l;
          }
        found = found || best_middle > 0;
        if (!found) { /* a layout, written out (the stages are compared below) */
          int64_t S = pp * vpp, n = (layers + S - 1) / S, ends = layers - (S - 2) * n;
          if (ends >= 0) {
            GString *w = g_string_new("E");
            for (int64_t vs = 0; vs < S; vs++) {
              int64_t k = vs == 0 ? MIN(n, ends) : vs == S - 1 ? ends - MIN(n, ends) : n;
              g_string_append(w, vs ? "|" : "");
              for (int64_t i = 0; i < k; i++)
                g_string_append_c(w, 't');
            }
            g_string_append_c(w, 'L');
            g_strlcpy(want.pipeline_model_parallel_layout, w->str, sizeof want.pipeline_model_parallel_layout);
            g_string_free(w, TRUE);
            t = sc;
            pn_workload_split_keys_set(&t.parallel, &want);
            found = pn_workload_split_ok(&t, pp, vpp);
          }
        }
        ck_assert_msg(ok == found,
                      "%" G_GINT64_FORMAT " layers, pp %" G_GINT64_FORMAT " vpp %" G_GINT64_FORMAT
                      ": chosen %d, a split exists %d",
                      layers, pp, vpp, ok, found);
        if (!ok)
          continue;
        /* the same stages: a first or last of a middle stage's layers is the chooser's unset key */
        PnScenario a = sc, b = sc;
        pn_workload_split_keys_set(&a.parallel, &got);
        pn_workload_split_keys_set(&b.parallel, &want);
        g_autofree char *sa = split_text(&a, pp, vpp), *sb = split_text(&b, pp, vpp);
        ck_assert_msg(strcmp(sa, sb) == 0 && largest_stage(&a, pp, vpp) > 0,
                      "%" G_GINT64_FORMAT " layers, pp %" G_GINT64_FORMAT " vpp %" G_GINT64_FORMAT
                      ": chosen %s, expected %s",
                      layers, pp, vpp, sa, sb);
      }
}
END_TEST

/* ---- the rules and the scenario keys ---- */

/* pn_workload_check derives the virtual size from a layout (arguments.py); a layout at pp 1 with
 * several stages interleaves without a pipeline (blamed on the layout); the recompute bound is the
 * heaviest stage (uneven: the first stage's 20 of 32 layers at pp 2 with last 12). */
START_TEST(test_split_rules)
{
  g_autoptr(PnScenario) sc = load_ok("\"llama3-8b\"", 8,
                                     "\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": "
                                     "\"E(t*4|)*7,t*4L\"");
  ck_assert_int_eq(sc->parallel.virtual_pipeline_model_parallel_size, 4);
  PnRuleViolation v;
  sc->parallel.pipeline_model_parallel_size         = 1;
  sc->parallel.virtual_pipeline_model_parallel_size = 1;
  ck_assert_int_eq(pn_workload_check(sc, &v, NULL), PN_RULE_VPP_NEEDS_PP);
  ck_assert_str_eq(v.path, LAYOUT_PTR);
  sc->parallel.pipeline_model_parallel_size = 3;
  sc->hardware.num_gpus                     = 24;
  ck_assert_int_eq(pn_workload_check(sc, &v, NULL), PN_RULE_PP_LAYOUT);
  ck_assert_str_eq(v.path, LAYOUT_PTR);
  sc->parallel.pipeline_model_parallel_size         = 4;
  sc->parallel.virtual_pipeline_model_parallel_size = 4;
  ck_assert_int_eq(pn_workload_check(sc, &v, NULL), PN_RULE_PP_LAYOUT);
  ck_assert_str_eq(v.path, "/parallel/virtual_pipeline_model_parallel_size");
  sc->parallel.virtual_pipeline_model_parallel_size = 1; /* null: derived */
  sc->hardware.num_gpus                             = 16;
  ck_assert_int_eq(pn_workload_check(sc, &v, NULL), PN_RULE_OK);
  ck_assert_int_eq(sc->parallel.virtual_pipeline_model_parallel_size, 2);
  ck_assert_str_ne(pn_rule_summary(PN_RULE_PP_LAYOUT), "unknown rule");
  ck_assert_str_ne(pn_rule_summary(PN_RULE_PP_UNEVEN), "unknown rule");
  ck_assert_str_ne(pn_rule_summary(PN_RULE_PP_SPLIT_ARGS), "unknown rule");

  g_autoptr(PnScenario) un =
      load_ok("\"llama3-8b\"", 8, "\"pipeline_model_parallel_size\": 2, \"num_layers_in_last_pipeline_stage\": 12");
  un->recompute.recompute_granularity = PN_RECOMPUTE_FULL;
  un->recompute.recompute_num_layers  = 20;
  ck_assert_int_eq(pn_workload_check(un, &v, NULL), PN_RULE_OK);
  un->recompute.recompute_num_layers = 21;
  ck_assert_int_eq(pn_workload_check(un, &v, NULL), PN_RULE_RECOMPUTE_LAYERS);
  ck_assert_str_eq(v.message, "21 exceeds the 20 layers of a pipeline stage");
}
END_TEST

/* The scenario keys: what the loader refuses, one line at the key (exit 2 in the CLI). */
START_TEST(test_split_keys)
{
  static const struct {
    const char *parallel, *want;
  } cases[] = {
      {"\"num_layers_in_first_pipeline_stage\": 0", "test.json: " FIRST_PTR ": "},
      {"\"num_layers_in_last_pipeline_stage\": 2.5", "test.json: " LAST_PTR ": "},
      {"\"pipeline_model_parallel_layout\": 7",
       "test.json: " LAYOUT_PTR ": expected Megatron's layout string (e.g. \"Et*3|(tt|)*29,m|L\"), a non-empty "
       "array of arrays of layer names, or null, got 7"},
      {"\"pipeline_model_parallel_layout\": []", "test.json: " LAYOUT_PTR ": expected Megatron's layout string"},
      {"\"pipeline_model_parallel_layout\": [[\"embedding\"], \"decoder\"]",
       "test.json: " LAYOUT_PTR "/1: expected an array of layer names (a virtual stage), got \"decoder\""},
      {"\"pipeline_model_parallel_layout\": [[\"embedding\"], [\"decoder\", \"E\"]]",
       "test.json: " LAYOUT_PTR "/1/1: expected \"embedding\", \"decoder\", \"mtp\" or \"loss\" (the letters E, t, m, "
       "L are the string form's), got \"E\""},
      {"\"pipeline_model_parallel_layout\": [[\"embedding\", \"encoder\"]]",
       "test.json: " LAYOUT_PTR "/0/1: \"encoder\": encoder layers are not supported"},
      {"\"pipeline_model_parallel_layout\": \"E(t*16|)*2,Lx\"",
       "test.json: " LAYOUT_PTR ": invalid layer character 'x' in virtual stage 2"},
      {"\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": \"E(t*16|)*2,L\"",
       "test.json: " LAYOUT_PTR ": has 3 virtual stages, not a multiple of pipeline_model_parallel_size 2"},
      {"\"pipeline_model_parallel_size\": 2, \"num_layers_in_first_pipeline_stage\": 15, "
       "\"num_layers_in_last_pipeline_stage\": 15",
       "test.json: " FIRST_PTR ": leaves 2 layers for 0 middle pipeline stages"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error  = NULL;
    g_autoptr(PnScenario) sc = load("\"llama3-8b\"", 8, cases[i].parallel, &error);
    ck_assert_msg(sc == NULL, "%s: accepted", cases[i].parallel);
    ck_assert_msg(g_str_has_prefix(error->message, cases[i].want) && strchr(error->message, '\n') == NULL,
                  "%s: %s, expected %s", cases[i].parallel, error->message, cases[i].want);
  }
  /* null is none; a list's names are stripped and lowercased, as Megatron reads them */
  g_autoptr(PnScenario) none = load_ok("\"llama3-8b\"", 8, "\"pipeline_model_parallel_layout\": null");
  ck_assert_str_eq(none->parallel.pipeline_model_parallel_layout, "");
  g_autoptr(PnScenario) list =
      load_ok("{\"base\": \"llama3-8b\", \"num_layers\": 2}", 8,
              "\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": [[\" Embedding\", "
              "\"DECODER\"], [], [], [\"decoder\", \"loss \"]]");
  ck_assert_str_eq(list->parallel.pipeline_model_parallel_layout, "Et|||tL");
  ck_assert_int_eq(list->parallel.virtual_pipeline_model_parallel_size, 2);
}
END_TEST

/* ---- the builder ---- */

static double iteration_s(const char *model, int gpus, const char *parallel, const char *extra)
{
  g_autoptr(GError) error  = NULL;
  g_autoptr(PnScenario) sc = load_with(model, gpus, parallel, extra, &error);
  ck_assert_msg(sc != NULL, "%s: %s", parallel, error ? error->message : "?");
  g_autoptr(PnResult) r = pn_sim_run(sc, NULL, &error);
  ck_assert_msg(r != NULL, "%s: %s", parallel, error ? error->message : "?");
  ck_assert(r->iteration_time_s > 0.0);
  return r->iteration_time_s;
}

/* A layout or uneven stages that give the even split's layers simulate exactly as the even split.
 * Virtual stages without layers build and run, as Megatron runs them (an empty TransformerBlock
 * passes its input on): the embedding alone, the loss alone or nothing in a chunk, plain, with the
 * DP overlap, and with full uniform recompute (whose memory estimate divided by a chunk's zero
 * layers); the even split's own empty chunks (2 layers + embedding + loss over pp 4) likewise.
 * 8 layers, pp 2, 8 GPUs. */
START_TEST(test_split_simulated)
{
  const char *model = "{\"base\": \"llama3-8b\", \"num_layers\": 8}";
  double even       = iteration_s(model, 8, "\"pipeline_model_parallel_size\": 2", NULL);
  ck_assert_double_eq(
      even,
      iteration_s(model, 8, "\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": \"Et*4|t*4L\"",
                  NULL));
  ck_assert_double_eq(
      even,
      iteration_s(model, 8, "\"pipeline_model_parallel_size\": 2, \"num_layers_in_first_pipeline_stage\": 4", NULL));
  double vpp =
      iteration_s(model, 8, "\"pipeline_model_parallel_size\": 2, \"virtual_pipeline_model_parallel_size\": 2", NULL);
  ck_assert_double_eq(
      vpp,
      iteration_s(model, 8, "\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": \"E(tt|)*3,ttL\"",
                  NULL));
  static const char *const empty[] = {
      "\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": \"E|t*4|t*4|L\"",
      "\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": \"Et*4||t*4|L\"",
      "\"pipeline_model_parallel_size\": 2, \"pipeline_model_parallel_layout\": \"|Et*4|t*4L|\"",
      "\"pipeline_model_parallel_size\": 4, \"account_for_embedding_in_pipeline_split\": true, "
      "\"account_for_loss_in_pipeline_split\": true",
  };
  static const char *const extras[] = {
      NULL,
      "\"ddp\": {\"overlap_grad_reduce\": true, \"overlap_param_gather\": true}",
      "\"recompute\": {\"recompute_granularity\": \"full\", \"recompute_method\": \"uniform\"}",
  };
  for (gsize i = 0; i < G_N_ELEMENTS(empty); i++)
    for (gsize k = 0; k < G_N_ELEMENTS(extras); k++) {
      const char *m = strstr(empty[i], "account") ? "{\"base\": \"llama3-8b\", \"num_layers\": 2}" : model;
      iteration_s(m, 8, empty[i], extras[k]);
    }
}
END_TEST

static Suite *split_suite(void)
{
  Suite *s = suite_create("split");
  struct {
    const char *name;
    const TTest *test;
  } cases[] = {
      {"layout_expand", test_layout_expand},
      {"layout_compact", test_layout_compact},
      {"layout_docstring", test_layout_docstring},
      {"layout_deepseek_v3", test_layout_deepseek_v3},
      {"layout_errors", test_layout_errors},
      {"uneven", test_uneven},
      {"uneven_errors", test_uneven_errors},
      {"even", test_even},
      {"split_rules", test_split_rules},
      {"split_keys", test_split_keys},
      {"split_simulated", test_split_simulated},
      {"split_choose", test_split_choose},
      {"split_choose_stated", test_split_choose_stated},
      {"split_choose_exhaustive", test_split_choose_exhaustive},
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
  SRunner *sr = srunner_create(split_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
