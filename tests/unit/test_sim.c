/* test_sim.c — scenario → graph → execution → accounting, end to end (sched/build.c, sim/sim.c).
 *
 * Scenarios are built from strings and use the repository's models/ and hwprofiles/ (found
 * through the compiled-in source directory). Each test states its expectation first.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hw/coll.h"
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
      " \"training\": {\"seq_length\": 4096, \"micro_batch_size\": 1, \"global_batch_size\": %d, \"precision\": "
      "\"bf16\"},"
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

/* Per stage: compute + exposed communication + bubble = iteration time (sim/result.h); the compute
 * lost to SM contention (the DP collectives' SMs during the backward) lies within the compute. */
START_TEST(accounting_identity)
{
  static const int layouts[][4] = {{8, 1, 1, 1}, {8, 2, 1, 1}, {16, 2, 4, 1}, {16, 1, 4, 2}, {32, 4, 4, 2}};
  double contention             = 0.0;
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
      double lost = 0.0;
      for (int c = 0; c < PN_CLASS_N; c++) {
        ck_assert(st->exposed_comm_s[c] <= st->total_comm_s[c] + 1e-9);
        ck_assert(st->contention_s[c] >= 0.0);
        lost += st->contention_s[c];
      }
      ck_assert_msg(lost <= st->compute_s + 1e-9, "layout %zu stage %u: %.9f lost of %.9f compute", i, s, lost,
                    st->compute_s);
      contention += lost;
    }
  }
  ck_assert(contention > 0.0);
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
  /* no pipeline: all the idle compute is waiting for the host's launches. Without
   * overlap_param_gather: with it the first kernel waits for the first bucket group's all-gather,
   * and the host's launch of that collective is idle time no kernel is ready in. */
  const char *sets[]     = {"ddp.overlap_param_gather=false"};
  g_autoptr(PnResult) r2 = simulate(json, sets, 1);
  ck_assert(r2->host_bound_s > 0.0);
  ck_assert_msg(r2->bubble_s <= r2->host_bound_s + 1e-12, "bubble %g, host-bound %g", r2->bubble_s, r2->host_bound_s);
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
  g_autofree char *json =
      scenario_json(64, 1, 1, 1, 64, "\"ddp\": {\"overlap_grad_reduce\": true, \"overlap_param_gather\": true}");
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
  g_autofree char *a     = pn_report_json(sc, r1, NULL);
  g_autofree char *b     = pn_report_json(sc, r2, NULL);
  ck_assert_str_eq(a, b);
}
END_TEST

/* Model FLOPs do not depend on the layout: TFLOP/s x GPUs x time is the same for TP 1 and 2. */
START_TEST(model_flops_layout_independent)
{
  g_autofree char *j1   = scenario_json(8, 1, 1, 1, 64, NULL);
  g_autofree char *j2   = scenario_json(8, 2, 1, 1, 64, NULL);
  g_autoptr(PnResult) a = simulate(j1, NULL, 0);
  g_autoptr(PnResult) b = simulate(j2, NULL, 0);
  ck_assert_double_eq_tol(a->model_flops_per_iteration, b->model_flops_per_iteration, 1.0);
  ck_assert_double_eq_tol(a->model_tflops_per_gpu * a->iteration_time_s, b->model_tflops_per_gpu * b->iteration_time_s,
                          1e-6 * a->model_tflops_per_gpu * a->iteration_time_s);
}
END_TEST

/* ---- mixture of experts ------------------------------------------------------------------ */

/* A small MoE model (16 experts, top-2) on `gpus` GPUs with expert parallelism `ep`; `extra`
 * adds top-level members. */
static char *moe_json(int gpus, int pp, int vpp, int ep, int gbs, const char *extra)
{
  return g_strdup_printf(
      "{\"schema_version\": 1, \"name\": \"moe\","
      " \"model\": {\"name\": \"moe\", \"num_layers\": 8, \"hidden_size\": 2048, \"ffn_hidden_size\": 8192,"
      "   \"num_attention_heads\": 16, \"num_query_groups\": 4, \"gated_linear_unit\": true, \"vocab_size\": 256,"
      "   \"normalization\": \"RMSNorm\", \"position_embedding_type\": \"rope\", \"add_bias_linear\": false,"
      "   \"untie_embeddings_and_output_weights\": true, \"num_moe_experts\": 16, \"moe_router_topk\": 2,"
      "   \"moe_ffn_hidden_size\": 2048},"
      " \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": %d},"
      " \"training\": {\"seq_length\": 4096, \"micro_batch_size\": 1, \"global_batch_size\": %d, \"precision\": "
      "\"bf16\"},"
      " \"parallel\": {\"pipeline_model_parallel_size\": %d, \"virtual_pipeline_model_parallel_size\": %d,"
      "   \"expert_model_parallel_size\": %d, \"moe_token_dispatcher_type\": \"alltoall\"},"
      " \"env\": {\"CUDA_DEVICE_MAX_CONNECTIONS\": 8}%s%s}",
      gpus, gbs, pp, vpp, ep, extra ? ", " : "", extra ? extra : "");
}

/* Without EP overlap the dispatcher's all-to-alls run on the compute stream: all exposed. With
 * it (combined 1F1B) one micro-batch's all-to-all runs beside the other's compute: less exposed,
 * a shorter step, and never more exposed than issued. */
START_TEST(moe_ep_overlap_hides_all_to_all)
{
  g_autofree char *off = moe_json(16, 1, 1, 16, 128, "\"comm_overlap\": {\"overlap_moe_expert_parallel_comm\": false}");
  g_autofree char *on  = moe_json(16, 1, 1, 16, 128, "\"comm_overlap\": {\"overlap_moe_expert_parallel_comm\": true}");
  g_autoptr(PnResult) a = simulate(off, NULL, 0);
  g_autoptr(PnResult) b = simulate(on, NULL, 0);
  ck_assert(a->total_comm_s[PN_CLASS_EP] > 0.0);
  ck_assert(a->exposed_comm_s[PN_CLASS_EP] > 0.95 * a->total_comm_s[PN_CLASS_EP]);
  ck_assert(b->exposed_comm_s[PN_CLASS_EP] < 0.5 * a->exposed_comm_s[PN_CLASS_EP]);
  ck_assert(b->iteration_time_s < a->iteration_time_s);
  for (int c = 0; c < PN_CLASS_N; c++)
    ck_assert(b->exposed_comm_s[c] <= b->total_comm_s[c] * (1.0 + 1e-9) + 1e-12);
}
END_TEST

/* The run with its graph and task times kept. */
/* `free_host`: the profile's host launches for free (its syncs stay), for tests of a schedule's
 * order on models so small that the measured launch costs would leave every kernel waiting. */
static void simulate_full_host(const char *json, PnSimRun *run, bool free_host)
{
  g_autoptr(GError) error  = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load_string(json, "test.json", NULL, 0, NULL, &error);
  ck_assert_msg(sc != NULL, "load: %s", error ? error->message : "?");
  if (free_host)
    sc->hw->host = (PnHostProfile){0};
  PnSimOptions opt = {.keep_graph = true};
  ck_assert_msg(pn_sim_run_full(sc, NULL, &opt, run, &error), "sim: %s", error ? error->message : "?");
}

static void simulate_full(const char *json, PnSimRun *run) { simulate_full_host(json, run, false); }

static const PnTask *find_task(const PnSimRun *run, const char *label, int32_t mb, int16_t layer, PnTaskId *id)
{
  for (guint i = 0; i < pn_graph_n_tasks(run->graph); i++) {
    const PnTask *t = &pn_graph_tasks(run->graph)[i];
    if (t->gpu == 0 && t->label && strcmp(t->label, label) == 0 && t->microbatch == mb && t->layer == layer) {
      if (id)
        *id = i;
      return t;
    }
  }
  return NULL;
}

static PnTaskTime task_time(const PnSimRun *run, PnTaskId id) { return g_array_index(run->exec.times, PnTaskTime, id); }

/* delay_wgrad_compute: the experts' wgrad leaves mlp_bwd for mlp.backward_dw(), so the backward
 * dispatch all-to-all (which waits for mlp_bwd) starts before that wgrad ends; without it the
 * all-to-all waits for the wgrad. Micro-batch 0, layer 3, a combined step. */
START_TEST(delay_wgrad_moves_expert_wgrad_beside_dispatch)
{
  for (int delay = 0; delay < 2; delay++) {
    g_autofree char *extra =
        g_strdup_printf("\"comm_overlap\": {\"overlap_moe_expert_parallel_comm\": true, \"delay_wgrad_compute\": %s}",
                        delay ? "true" : "false");
    g_autofree char *json = moe_json(16, 1, 1, 16, 64, extra);
    PnSimRun run          = {0};
    simulate_full(json, &run);
    PnTaskId a2a_id, wgrad_id;
    ck_assert_ptr_nonnull(find_task(&run, "moe_dispatch_a2a_bwd", 0, 3, &a2a_id));
    ck_assert_ptr_nonnull(find_task(&run, "moe_fc1_wgrad", 0, 3, &wgrad_id));
    PnTaskTime a2a = task_time(&run, a2a_id), wgrad = task_time(&run, wgrad_id);
    if (delay)
      ck_assert_msg(a2a.start_ns < wgrad.end_ns, "delayed: a2a starts %lld, wgrad ends %lld", (long long)a2a.start_ns,
                    (long long)wgrad.end_ns);
    else
      ck_assert_msg(a2a.start_ns >= wgrad.end_ns, "not delayed: a2a starts %lld, wgrad ends %lld",
                    (long long)a2a.start_ns, (long long)wgrad.end_ns);
    pn_sim_run_clear(&run);
  }
}
END_TEST

/* Combined 1F1B: the forward dispatch of micro-batch 1 runs while the backward of micro-batch 0
 * computes (TransformerLayerSchedulePlan.run): some expert dgrad of micro-batch 0 overlaps it in
 * time. With a free host: this model's kernels are so short that at the measured launch costs the
 * host launches the dispatch only after the dgrad it should hide behind has ended. */
START_TEST(combined_1f1b_overlaps_forward_comm_with_backward_compute)
{
  g_autofree char *json = moe_json(16, 1, 1, 16, 64, "\"comm_overlap\": {\"overlap_moe_expert_parallel_comm\": true}");
  PnSimRun run          = {0};
  simulate_full_host(json, &run, true);
  bool overlap = false;
  for (int16_t layer = 0; layer < 8 && !overlap; layer++) {
    PnTaskId f_id;
    if (!find_task(&run, "moe_dispatch_a2a", 1, layer, &f_id))
      continue;
    PnTaskTime f = task_time(&run, f_id);
    for (int16_t l2 = 0; l2 < 8 && !overlap; l2++) {
      PnTaskId d_id;
      if (!find_task(&run, "moe_fc2_dgrad", 0, l2, &d_id))
        continue;
      PnTaskTime d = task_time(&run, d_id);
      overlap      = d.start_ns < f.end_ns && f.start_ns < d.end_ns;
    }
  }
  ck_assert(overlap);
  pn_sim_run_clear(&run);
}
END_TEST

/* Megatron-LM PR #4268: with overlap_p2p_wgrad_delayed_layer_number = all layers of a chunk,
 * every attention wgrad of a backward step is issued after that step's post_backward P2P; by
 * default (1) only the chunk's first layer waits. PP 2, VPP 2, EP overlap, delayed wgrad. */
START_TEST(pr4268_delays_attention_wgrads_after_post_backward)
{
  for (int n = 1; n <= 4; n += 3) {
    g_autofree char *extra = g_strdup_printf(
        "\"comm_overlap\": {\"overlap_moe_expert_parallel_comm\": true, \"delay_wgrad_compute\": true,"
        " \"overlap_p2p_comm\": true, \"batch_p2p_comm\": false, \"overlap_p2p_wgrad_delayed_layer_number\": %d}",
        n);
    g_autofree char *json = moe_json(32, 2, 2, 16, 64, extra);
    PnSimRun run          = {0};
    simulate_full(json, &run);
    /* rank 0, chunk 1 (layers 4, 5 of stage 0's second chunk: global layers 4..5), micro-batch 1 */
    PnTaskId send = PN_TASK_NONE, first_wgrad = PN_TASK_NONE;
    for (guint i = 0; i < pn_graph_n_tasks(run.graph); i++) {
      const PnTask *t = &pn_graph_tasks(run.graph)[i];
      if (t->gpu != 0 || t->microbatch != 1 || t->chunk != 1)
        continue;
      if (t->kind == PN_TASK_P2P && t->phase == PN_PHASE_BWD && send == PN_TASK_NONE)
        send = i;
      if (t->label && strcmp(t->label, "qkv_wgrad") == 0 && first_wgrad == PN_TASK_NONE)
        first_wgrad = i;
    }
    ck_assert(send != PN_TASK_NONE && first_wgrad != PN_TASK_NONE);
    if (n == 1)
      ck_assert_msg(first_wgrad < send, "default: a layer's attention wgrad is issued before post_backward");
    else
      ck_assert_msg(first_wgrad > send, "all delayed: every attention wgrad after post_backward");
    pn_sim_run_clear(&run);
  }
}
END_TEST

/* moe_shared_expert_overlap: the shared experts run on their own stream beside the dispatch
 * all-to-all (shared_fc1 of layer 2, micro-batch 0 overlaps its moe_dispatch_a2a in time), the
 * unpermutation waits for them, and the step is shorter than with the shared experts in line.
 * The host launches everything at once here: with the MoE layer's measured Python this model's
 * host falls behind its GPU, and the shared experts are then launched after the all-to-all ends. */
START_TEST(shared_expert_overlap_runs_beside_dispatch)
{
  double t[2];
  for (int ov = 0; ov < 2; ov++) {
    g_autofree char *extra =
        g_strdup_printf("\"comm_overlap\": {\"moe_shared_expert_overlap\": %s}", ov ? "true" : "false");
    g_autofree char *base = moe_json(16, 1, 1, 16, 64, extra);
    /* the same model with shared experts of width 4096 */
    gchar **parts = g_strsplit(base, "\"moe_ffn_hidden_size\": 2048", 2);
    g_autofree char *json =
        g_strjoinv("\"moe_ffn_hidden_size\": 2048, \"moe_shared_expert_intermediate_size\": 4096", parts);
    g_strfreev(parts);
    PnSimRun run = {0};
    simulate_full_host(json, &run, true);
    t[ov] = run.result->iteration_time_s;
    PnTaskId fc1_id, a2a_id, unperm_id;
    ck_assert_ptr_nonnull(find_task(&run, "shared_fc1", 0, 2, &fc1_id));
    ck_assert_ptr_nonnull(find_task(&run, "moe_dispatch_a2a", 0, 2, &a2a_id));
    ck_assert_ptr_nonnull(find_task(&run, "unpermute", 0, 2, &unperm_id));
    PnTaskTime fc1 = task_time(&run, fc1_id), a2a = task_time(&run, a2a_id), un = task_time(&run, unperm_id);
    const PnTask *fc1_task = &pn_graph_tasks(run.graph)[fc1_id];
    if (ov) {
      ck_assert_int_eq(fc1_task->stream, PN_STREAM_SHARED_EXPERT);
      ck_assert(fc1.start_ns < a2a.end_ns && a2a.start_ns < fc1.end_ns);
      ck_assert(un.start_ns >= fc1.end_ns);
    } else {
      ck_assert_int_eq(fc1_task->stream, PN_STREAM_COMPUTE);
      ck_assert(fc1.end_ns <= a2a.start_ns);
    }
    pn_sim_run_clear(&run);
  }
  ck_assert_double_lt(t[1], t[0]);
}
END_TEST

/* Kernel chains (hw/exec_kernels.c) change nothing a user sees: every shipped scenario and validation
 * configuration, simulated with one and with two iterations (the window then starts at the first
 * iteration's end: its end tasks must close on their own), gives the same report with and
 * without them (the report leaves out the event count and the wall time, which they do change,
 * unless asked for its timing). */
START_TEST(kernel_chains_change_nothing)
{
  const char *src = g_getenv("PN_SOURCE_DIR");
  ck_assert_msg(src != NULL, "PN_SOURCE_DIR is not set");
  const char *dirs[] = {"scenarios", "scenarios/validation"};
  int n_checked      = 0;
  for (size_t d = 0; d < G_N_ELEMENTS(dirs); d++) {
    g_autofree char *dir_path = g_build_filename(src, dirs[d], NULL);
    g_autoptr(GDir) dir       = g_dir_open(dir_path, 0, NULL);
    ck_assert(dir != NULL);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (const char *f; (f = g_dir_read_name(dir)) != NULL;)
      if (g_str_has_suffix(f, ".json"))
        g_ptr_array_add(names, g_build_filename(dir_path, f, NULL));
    for (guint i = 0; i < names->len; i++)
      for (int iters = 1; iters <= 2; iters++) {
        g_autofree char *set     = g_strdup_printf("training.iterations=%d", iters);
        const char *sets[]       = {set};
        g_autoptr(GError) error  = NULL;
        g_autoptr(PnScenario) sc = pn_scenario_load(g_ptr_array_index(names, i), sets, 1, NULL, &error);
        ck_assert_msg(sc != NULL, "%s", error ? error->message : "?");
        char *report[2];
        for (int u = 0; u < 2; u++) {
          PnSimOptions opt = {.unfused = u == 1};
          PnSimRun run;
          ck_assert_msg(pn_sim_run_full(sc, NULL, &opt, &run, &error), "%s", error ? error->message : "?");
          report[u] = pn_report_json(sc, run.result, NULL);
          pn_sim_run_clear(&run);
        }
        ck_assert_msg(strcmp(report[0], report[1]) == 0, "%s, %d iterations: reports differ",
                      (char *)g_ptr_array_index(names, i), iters);
        g_free(report[0]);
        g_free(report[1]);
        n_checked++;
      }
  }
  ck_assert_int_ge(n_checked, 2 * 20);
}
END_TEST

static const PnOpStats *op_stats(const PnResult *r, const char *op)
{
  for (guint i = 0; i < r->comm_ops->len; i++)
    if (strcmp(g_array_index(r->comm_ops, PnOpStats, i).op, op) == 0)
      return &g_array_index(r->comm_ops, PnOpStats, i);
  return NULL;
}

/* Each NCCL collective's figures as nccl-tests prints them. TP 2 with SP and no userbuffers, DP
 * 4, 16 layers, 4 micro-batches of 4096 tokens, hidden 4096: the all-gather before qkv runs
 * 16 x 4 = 64 times per iteration over 2 ranks, S = 4096 x 4096 x 2 B (its gathered output);
 * algbw = sum(S) / sum(time) and, with one stage and calls that never overlap each other,
 * sum(time) is the op's total time: algbw = 64 S / total; busbw = algbw (n - 1) / n = algbw / 2.
 * An all-reduce over 2 ranks has busbw = algbw x 2 (2 - 1) / 2 = algbw. Every collective's figures
 * are finite and positive, its bus bandwidth below the sum of the GPU's NVLink and NIC. */
START_TEST(collective_figures)
{
  g_autofree char *json = scenario_json(8, 2, 1, 1, 16, "\"comm_overlap\": {\"tp_comm_overlap\": false}");
  g_autoptr(PnResult) r = simulate(json, NULL, 0);
  const PnOpStats *ag   = op_stats(r, "qkv_ag");
  ck_assert_ptr_nonnull(ag);
  ck_assert_int_eq(ag->coll_kind, PN_COLL_ALL_GATHER);
  ck_assert_int_eq(ag->ranks, 2);
  ck_assert_double_eq(ag->calls, 64.0);
  ck_assert_double_eq(ag->size_bytes, 4096.0 * 4096.0 * 2.0);
  ck_assert_double_eq_tol(ag->algbw_gbps, 64.0 * ag->size_bytes / (ag->total_s * 1e9), 1e-6 * ag->algbw_gbps);
  ck_assert_double_eq_tol(ag->busbw_gbps, ag->algbw_gbps / 2.0, 1e-12 * ag->algbw_gbps);
  const PnOpStats *ar = op_stats(r, "cross_entropy_ar");
  ck_assert_ptr_nonnull(ar);
  ck_assert_int_eq(ar->coll_kind, PN_COLL_ALL_REDUCE);
  ck_assert_double_eq_tol(ar->busbw_gbps, ar->algbw_gbps, 1e-12 * ar->algbw_gbps);
  const PnOpStats *dp = op_stats(r, "dp_grad_reduce_scatter");
  ck_assert_ptr_nonnull(dp);
  ck_assert_int_eq(dp->ranks, 4);
  for (guint i = 0; i < r->comm_ops->len; i++) {
    const PnOpStats *os = &g_array_index(r->comm_ops, PnOpStats, i);
    if (os->coll_kind < 0)
      continue;
    ck_assert_msg(os->calls > 0.0 && os->size_bytes > 0.0 && os->algbw_gbps > 0.0 && isfinite(os->busbw_gbps),
                  "%s: calls %g size %g algbw %g", os->op, os->calls, os->size_bytes, os->algbw_gbps);
    ck_assert_msg(os->busbw_gbps < 450.0 + 50.0, "%s: busbw %g GB/s beyond NVLink + NIC", os->op, os->busbw_gbps);
  }
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
      {"moe_ep_overlap_hides_all_to_all", moe_ep_overlap_hides_all_to_all},
      {"delay_wgrad_moves_expert_wgrad_beside_dispatch", delay_wgrad_moves_expert_wgrad_beside_dispatch},
      {"combined_1f1b_overlaps_forward_comm_with_backward_compute",
       combined_1f1b_overlaps_forward_comm_with_backward_compute},
      {"pr4268_delays_attention_wgrads_after_post_backward", pr4268_delays_attention_wgrads_after_post_backward},
      {"shared_expert_overlap_runs_beside_dispatch", shared_expert_overlap_runs_beside_dispatch},
      {"kernel_chains_change_nothing", kernel_chains_change_nothing},
      {"collective_figures", collective_figures},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_set_timeout(tc, cases[i].test == kernel_chains_change_nothing ? 600 : 60); /* 44 runs, ASan too */
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
