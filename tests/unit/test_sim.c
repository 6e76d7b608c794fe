/* test_sim.c — scenario → graph → execution → accounting, end to end (sched/build.c, sim/sim.c).
 *
 * Scenarios are built from strings and use the repository's models/ and hwprofiles/ (found
 * through the compiled-in source directory). Each test states its expectation first.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "io/report.h"
#include "io/scenario.h"
#include "sim/sim.h"

/* A dense model small enough to simulate fast, with a tiny vocabulary so that the output layer
 * does not unbalance the last pipeline stage. */
static char *scenario_json(int gpus, int tp, int pp, int vpp, int gbs, const char *extra)
{
  return g_strdup_printf(
    "{\"schema_version\": 1, \"name\": \"t\","
    " \"model\": {\"name\": \"t\", \"num_layers\": 16, \"hidden_size\": 4096, \"ffn_hidden_size\": 14336,"
    "   \"num_attention_heads\": 32, \"num_query_groups\": 8, \"gated_linear_unit\": true, \"vocab_size\": 256,"
    "   \"normalization\": \"RMSNorm\", \"position_embedding_type\": \"rope\", \"add_bias_linear\": false,"
    "   \"untie_embeddings_and_output_weights\": true},"
    " \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": %d},"
    " \"training\": {\"seq_length\": 4096, \"micro_batch_size\": 1, \"global_batch_size\": %d, \"precision\": \"bf16\"},"
    " \"parallel\": {\"tensor_model_parallel_size\": %d, \"pipeline_model_parallel_size\": %d,"
    "   \"virtual_pipeline_model_parallel_size\": %d, \"sequence_parallel\": %s}%s%s}",
    gpus, gbs, tp, pp, vpp, tp > 1 ? "true" : "false", extra ? ", " : "", extra ? extra : "");
}

static PnResult *simulate(const char *json, const char *const *sets, int n_sets)
{
  g_autoptr(GError) error  = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load_string(json, "test.json", sets, n_sets, NULL, &error);
  ck_assert_msg(sc != NULL, "load: %s", error ? error->message : "?");
  PnResult *r = pn_sim_run(sc, NULL, &error);
  ck_assert_msg(r != NULL, "sim: %s", error ? error->message : "?");
  return r;
}

static double exposed_sum(const PnStageStats *st)
{
  double e = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    e += st->exposed_comm_s[c];
  return e;
}

/* Per stage: compute + exposed communication + bubble = iteration time (sim/result.h). */
START_TEST(accounting_identity)
{
  static const int layouts[][4] = {{8, 1, 1, 1}, {8, 2, 1, 1}, {16, 2, 4, 1}, {16, 1, 4, 2}, {32, 4, 4, 2}};
  for (size_t i = 0; i < G_N_ELEMENTS(layouts); i++) {
    g_autofree char *json = scenario_json(layouts[i][0], layouts[i][1], layouts[i][2], layouts[i][3], 64,
                                          "\"ddp\": {\"overlap_grad_reduce\": true}");
    g_autoptr(PnResult) r = simulate(json, NULL, 0);
    for (guint s = 0; s < r->stages->len; s++) {
      const PnStageStats *st = &g_array_index(r->stages, PnStageStats, s);
      double sum             = st->compute_s + st->bubble_s + exposed_sum(st);
      ck_assert_msg(fabs(sum - r->iteration_time_s) <= 1e-6 * r->iteration_time_s + 2e-9,
                    "layout %zu stage %u: %.9f + %.9f + %.9f != %.9f", i, s, st->compute_s, st->bubble_s,
                    exposed_sum(st), r->iteration_time_s);
      for (int c = 0; c < PN_CLASS_N; c++)
        ck_assert(st->exposed_comm_s[c] <= st->total_comm_s[c] + 1e-9);
    }
  }
}
END_TEST

/* Only the groups that exist communicate: TP=1, PP=1, CP=1 has no tp/pp/cp traffic at all. */
START_TEST(no_phantom_communication)
{
  g_autofree char *json = scenario_json(8, 1, 1, 1, 64, NULL);
  g_autoptr(PnResult) r = simulate(json, NULL, 0);
  ck_assert_double_eq(r->total_comm_s[PN_CLASS_TP], 0.0);
  ck_assert_double_eq(r->total_comm_s[PN_CLASS_PP], 0.0);
  ck_assert_double_eq(r->total_comm_s[PN_CLASS_CP], 0.0);
  ck_assert(r->total_comm_s[PN_CLASS_DP] > 0.0);
  ck_assert_double_eq(r->bubble_s, 0.0);
}
END_TEST

/* 1F1B with p stages and m micro-batches of (nearly) equal per-stage time t: the iteration lasts
 * about (m + p - 1) t and each stage idles (p - 1) t, a bubble fraction of (p-1)/(m+p-1). With
 * p = 4, m = 8: 3/11 = 0.273. The embedding, head and P2P make stages slightly unequal: allow
 * +-0.04. */
START_TEST(one_f_one_b_bubble)
{
  g_autofree char *json = scenario_json(4, 1, 4, 1, 8, NULL);
  g_autoptr(PnResult) r = simulate(json, NULL, 0);
  double frac           = r->bubble_s / r->iteration_time_s;
  ck_assert_msg(fabs(frac - 3.0 / 11.0) < 0.04, "bubble fraction %.3f", frac);
}
END_TEST

/* Interleaving divides the bubble by about vpp: (p-1)/(vpp m + p - 1) = 3/19 = 0.158 for
 * vpp = 2, against 0.273 without. */
START_TEST(interleaving_shrinks_bubble)
{
  g_autofree char *j1    = scenario_json(4, 1, 4, 1, 8, NULL);
  g_autofree char *j2    = scenario_json(4, 1, 4, 2, 8, NULL);
  g_autoptr(PnResult) r1 = simulate(j1, NULL, 0);
  g_autoptr(PnResult) r2 = simulate(j2, NULL, 0);
  double f1 = r1->bubble_s / r1->iteration_time_s, f2 = r2->bubble_s / r2->iteration_time_s;
  ck_assert_msg(f2 < f1 && fabs(f2 - 3.0 / 19.0) < 0.04, "bubble %.3f (vpp 1) vs %.3f (vpp 2)", f1, f2);
}
END_TEST

/* Megatron's first iteration launches no gradient reduce-scatter during the backward: with DP
 * overlap on, iteration 1 of 2 exposes more DP communication than iteration 2. */
START_TEST(first_iteration_exposes_dp)
{
  g_autofree char *json = scenario_json(64, 1, 1, 1, 64,
                                        "\"ddp\": {\"overlap_grad_reduce\": true, \"overlap_param_gather\": true}");
  const char *sets[]    = {"training.iterations=2"};
  g_autoptr(PnResult) r = simulate(json, sets, 1);
  ck_assert_int_eq(r->iteration_times_s->len, 2);
  double first = g_array_index(r->iteration_times_s, double, 0);
  double last  = g_array_index(r->iteration_times_s, double, 1);
  ck_assert_msg(first > last, "first %.6f s, steady %.6f s", first, last);
}
END_TEST

/* Full recomputation re-runs each layer's forward before its backward: about one forward more,
 * i.e. the iteration grows by 25-40% (backward ~2x forward), and activation memory drops. */
START_TEST(full_recompute_costs_a_forward)
{
  g_autofree char *json = scenario_json(8, 1, 1, 1, 64, NULL);
  const char *sets[]    = {"recompute.recompute_granularity=\"full\""};
  g_autoptr(PnResult) a = simulate(json, NULL, 0);
  g_autoptr(PnResult) b = simulate(json, sets, 1);
  double ratio          = b->iteration_time_s / a->iteration_time_s;
  ck_assert_msg(ratio > 1.25 && ratio < 1.40, "ratio %.3f", ratio);
  ck_assert(b->memory.activations_gib < a->memory.activations_gib);
}
END_TEST

/* With every task on the compute stream (no overlap of any kind), the hardware-queue setting
 * cannot change anything. */
START_TEST(max_connections_irrelevant_without_side_streams)
{
  g_autofree char *json = scenario_json(1, 1, 1, 1, 4, NULL);
  const char *s1[]      = {"env.CUDA_DEVICE_MAX_CONNECTIONS=1"};
  const char *s8[]      = {"env.CUDA_DEVICE_MAX_CONNECTIONS=8"};
  g_autoptr(PnResult) a = simulate(json, s1, 1);
  g_autoptr(PnResult) b = simulate(json, s8, 1);
  ck_assert_double_eq(a->iteration_time_s, b->iteration_time_s);
}
END_TEST

/* Same input, same bytes out. */
START_TEST(deterministic_report)
{
  g_autofree char *json    = scenario_json(32, 4, 4, 2, 64, "\"ddp\": {\"overlap_grad_reduce\": true}");
  g_autoptr(GError) error  = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load_string(json, "test.json", NULL, 0, NULL, &error);
  ck_assert(sc != NULL);
  g_autoptr(PnResult) r1 = pn_sim_run(sc, NULL, &error);
  g_autoptr(PnResult) r2 = pn_sim_run(sc, NULL, &error);
  g_autofree char *a     = pn_report_json(sc, r1);
  g_autofree char *b     = pn_report_json(sc, r2);
  ck_assert_str_eq(a, b);
}
END_TEST

/* Model FLOPs do not depend on the layout: TFLOP/s x GPUs x time is the same for TP 1 and 2. */
START_TEST(model_flops_layout_independent)
{
  g_autofree char *j1    = scenario_json(8, 1, 1, 1, 64, NULL);
  g_autofree char *j2    = scenario_json(8, 2, 1, 1, 64, NULL);
  g_autoptr(PnResult) a  = simulate(j1, NULL, 0);
  g_autoptr(PnResult) b  = simulate(j2, NULL, 0);
  ck_assert_double_eq_tol(a->model_flops_per_iteration, b->model_flops_per_iteration, 1.0);
  ck_assert_double_eq_tol(a->model_tflops_per_gpu * a->iteration_time_s, b->model_tflops_per_gpu * b->iteration_time_s,
                          1e-6 * a->model_tflops_per_gpu * a->iteration_time_s);
}
END_TEST

static Suite *sim_suite(void)
{
  Suite *s = suite_create("sim");
  struct {
    const char *name;
    const TTest *test;
  } cases[] = {
    {"accounting_identity", accounting_identity},
    {"no_phantom_communication", no_phantom_communication},
    {"one_f_one_b_bubble", one_f_one_b_bubble},
    {"interleaving_shrinks_bubble", interleaving_shrinks_bubble},
    {"first_iteration_exposes_dp", first_iteration_exposes_dp},
    {"full_recompute_costs_a_forward", full_recompute_costs_a_forward},
    {"max_connections_irrelevant_without_side_streams", max_connections_irrelevant_without_side_streams},
    {"deterministic_report", deterministic_report},
    {"model_flops_layout_independent", model_flops_layout_independent},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(sim_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
