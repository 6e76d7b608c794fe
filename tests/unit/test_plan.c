/* test_plan.c — the arithmetic of a plan (plan/plan.h) against hand computation, and the GPU
 * counts and global batches it plans. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "overlap/gating.h"
#include "plan/plan.h"
#include "plan/report.h"
#include "sched/build.h"
#include "sim/sim.h"
#include "workload/rules.h"

/* 15e12 tokens at 1e6 tokens/s with goodput 0.9: 15e12 / 1e6 / 0.9 = 16,666,666.67 s = 192.9 days.
 * On 2,048 GPUs: 16,666,666.67 x 2,048 / 3,600 = 9,481,481.48 GPU-hours; at 2.5 per GPU-hour
 * 23,703,703.70. Throughput per GPU 900 against 1,000 at the smallest count: efficiency 0.9. */
START_TEST(test_arithmetic)
{
  double t = pn_plan_train_s(15e12, 1e6, 0.9);
  ck_assert_double_eq_tol(t, 16666666.666667, 1e-3);
  ck_assert_double_eq_tol(t / 86400.0, 192.901235, 1e-6);
  double h = pn_plan_gpu_hours(t, 2048);
  ck_assert_double_eq_tol(h, 9481481.481481, 1e-3);
  ck_assert_double_eq_tol(pn_plan_cost(h, 2.5), 23703703.703704, 1e-3);
  ck_assert_double_eq_tol(pn_plan_efficiency(900.0, 1000.0), 0.9, 1e-12);
  /* goodput 1: the ideal run, time = tokens / rate exactly */
  ck_assert_double_eq(pn_plan_train_s(3600.0, 1.0, 1.0), 3600.0);
  ck_assert_double_eq(pn_plan_gpu_hours(3600.0, 8), 8.0);
}
END_TEST

static GString *counts_text(GArray *a)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < a->len; i++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? " " : "", g_array_index(a, int64_t, i));
  return s;
}

/* The pipeline sizes up to 16 an even split of `layers` takes, as bits (plan.h). */
static uint32_t divisors(int64_t layers)
{
  uint32_t bits = 0;
  for (int64_t pp = 1; pp <= 16; pp++)
    if (layers % pp == 0)
      bits |= 1u << pp;
  return bits;
}

/* Llama 3 70B (80 layers): powers of two 512..8192, and PP 5 / 10 need multiples of 5: 640, 1280,
 * 2560, 5120 (one per octave). 126 layers (405B): odd parts 3, 7, 9 give three counts per octave.
 * A split that takes PP 6 and 12 but not 3 (uneven stages) still plans multiples of 3. */
START_TEST(test_gpu_counts)
{
  char *why            = NULL;
  g_autoptr(GArray) c  = pn_plan_gpu_counts(512, 8192, 8, divisors(80), &why);
  g_autoptr(GString) s = counts_text(c);
  ck_assert_str_eq(s->str, "512 640 1024 1280 2048 2560 4096 5120 8192");
  ck_assert_ptr_nonnull(strstr(why, "pipeline sizes 5 10"));
  g_free(why);
  g_autoptr(GArray) d  = pn_plan_gpu_counts(512, 1023, 8, divisors(126), &why);
  g_autoptr(GString) t = counts_text(d);
  ck_assert_str_eq(t->str, "512 576 768 896");
  g_free(why);
  /* below a node: counts that divide it; none in a range without a power of two of whole nodes */
  g_autoptr(GArray) e  = pn_plan_gpu_counts(2, 16, 8, divisors(32), &why);
  g_autoptr(GString) u = counts_text(e);
  ck_assert_str_eq(u->str, "2 4 8 16");
  ck_assert_ptr_null(why);
  g_autoptr(GArray) f = pn_plan_gpu_counts(9, 15, 8, divisors(32), &why);
  ck_assert_uint_eq(f->len, 0);
  g_autoptr(GArray) g  = pn_plan_gpu_counts(512, 1023, 8, 1u << 1 | 1u << 2 | 1u << 6 | 1u << 12, &why);
  g_autoptr(GString) w = counts_text(g);
  ck_assert_str_eq(w->str, "512 768");
  ck_assert_ptr_nonnull(strstr(why, "3 (pipeline sizes 6 12)"));
  g_free(why);
}
END_TEST

/* 4M:16M tokens (2^22 .. 2^24) of 8,192-token sequences: 512, 1024, 2048; a range between two
 * powers of two holds none. */
START_TEST(test_batches)
{
  g_autoptr(GArray) b  = pn_plan_batches(4194304, 16777216, 8192);
  g_autoptr(GString) s = counts_text(b);
  ck_assert_str_eq(s->str, "512 1024 2048");
  g_autoptr(GArray) none = pn_plan_batches(5e6, 8e6, 8192);
  ck_assert_uint_eq(none->len, 0);
}
END_TEST

/* Where an iteration goes: the parts add up to the iteration, the rest never negative. */
START_TEST(test_breakdown)
{
  PnSweepRow row   = {.iteration_s = 10.0, .compute_s = 7.0, .bubble_s = 1.0};
  row.exposed_s[0] = 0.5, row.exposed_s[1] = 0.25;
  double parts[PN_PLAN_PARTS];
  pn_plan_breakdown(&row, parts);
  double sum = 0;
  for (int k = 0; k < PN_PLAN_PARTS; k++)
    sum += parts[k];
  ck_assert_double_eq_tol(sum, 10.0, 1e-12);
  ck_assert_double_eq_tol(parts[PN_PLAN_PARTS - 1], 1.25, 1e-12);
  row.compute_s = 9.5;
  pn_plan_breakdown(&row, parts);
  ck_assert_double_eq(parts[PN_PLAN_PARTS - 1], 0.0);
}
END_TEST

/* The bound of sched/build.h for scenario `c` (checked) and its simulated iteration (every
 * micro-batch): the bound never exceeds it. Returns bound / time (0 with no bound). */
static double bound_against_sim(const PnScenario *c, const char *what)
{
  PnPlan plan;
  g_autoptr(GError) error = NULL;
  ck_assert_msg(pn_overlap_resolve(c, &plan, NULL, &error), "%s: %s", what, error ? error->message : "?");
  double bound_ns = -1.0;
  ck_assert_msg(pn_sched_compute_bound(c, &plan, &bound_ns, &error), "%s: %s", what, error ? error->message : "?");
  g_autoptr(PnResult) res = pn_sim_run(c, NULL, &error);
  ck_assert_msg(res != NULL, "%s: %s", what, error ? error->message : "?");
  double t_ns = res->iteration_time_s * 1e9;
  ck_assert_msg(bound_ns >= 0.0 && bound_ns <= t_ns, "%s: bound %.0f ns > simulated %.0f ns", what, bound_ns, t_ns);
  return bound_ns / t_ns;
}

static gint double_order(gconstpointer a, gconstpointer b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void print_tightness(const char *what, GArray *ratios, guint unbounded)
{
  g_array_sort(ratios, double_order);
  guint n = ratios->len;
  printf("%s: %u bounded (%u without a bound), bound / simulated time min %.3f median %.3f max %.3f\n", what, n,
         unbounded, n ? g_array_index(ratios, double, 0) : 0.0, n ? g_array_index(ratios, double, n / 2) : 0.0,
         n ? g_array_index(ratios, double, n - 1) : 0.0);
}

/* The compute bound of sched/build.h against the simulation: every layout of a small plan's space
 * (Llama 3 8B, 8 and 16 GPUs of two kinds, two global batches: tensor, pipeline, virtual, context,
 * recompute and the overlap knobs of the sweep's default space) and every shipped scenario. */
START_TEST(test_bound_below_simulation)
{
  g_autoptr(GArray) kinds = g_array_new(FALSE, FALSE, sizeof(PnPlanKind));
  const char *names[]     = {"h100-sxm", "h200-sxm"};
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
    g_array_append_val(kinds, ((PnPlanKind){.profile = (char *)names[i], .price = NAN}));
  PnPlanSpec spec           = {.model            = "llama3-8b",
                               .precision        = "bf16",
                               .tokens           = 1e10,
                               .kinds            = kinds,
                               .gpus_min         = 8,
                               .gpus_max         = 16,
                               .seq_length       = 1024,
                               .batch_tokens_min = 32768,
                               .batch_tokens_max = 65536,
                               .deadline_s       = NAN,
                               .budget           = NAN,
                               .goodput          = 1.0,
                               .threads          = 1};
  g_autoptr(GError) error   = NULL;
  g_autoptr(PnPlanResult) r = pn_plan_prepare(&spec, &error);
  ck_assert_msg(r != NULL, "%s", error ? error->message : "?");
  g_autoptr(GArray) ratios = g_array_new(FALSE, FALSE, sizeof(double));
  guint unbounded          = 0;
  for (guint k = 0; k < r->sweeps->len; k++) {
    PnPlanSweep *s = r->sweeps->pdata[k];
    pn_sweep_check(&s->sweep, s->result, NULL);
    ck_assert_uint_gt(s->result->accepted, 100);
    for (guint i = 0; i < s->result->accepted_index->len; i++) {
      uint64_t index = g_array_index(s->result->accepted_index, uint64_t, i);
      PnScenario c;
      pn_sweep_candidate(&s->sweep, index, &c);
      pn_workload_check(&c, NULL, NULL);
      g_autofree char *what = g_strdup_printf("%s layout %" G_GUINT64_FORMAT, names[k], index);
      double ratio          = bound_against_sim(&c, what);
      if (ratio > 0.0)
        g_array_append_val(ratios, ratio);
      else
        unbounded++;
    }
  }
  print_tightness("plan space", ratios, unbounded);
  ck_assert_uint_gt(ratios->len, 100);
  g_array_set_size(ratios, 0), unbounded = 0;
  const char *src = g_getenv("PN_SOURCE_DIR");
  ck_assert_msg(src != NULL, "PN_SOURCE_DIR is not set");
  g_autofree char *dir_path = g_build_filename(src, "scenarios", NULL);
  g_autoptr(GDir) dir       = g_dir_open(dir_path, 0, NULL);
  ck_assert(dir != NULL);
  for (const char *f; (f = g_dir_read_name(dir)) != NULL;) {
    if (!g_str_has_suffix(f, ".json"))
      continue;
    g_autofree char *path    = g_build_filename(dir_path, f, NULL);
    g_autoptr(PnScenario) sc = pn_scenario_load(path, NULL, 0, NULL, &error);
    ck_assert_msg(sc != NULL, "%s", error ? error->message : "?");
    double ratio = bound_against_sim(sc, f);
    if (ratio > 0.0)
      g_array_append_val(ratios, ratio);
    else
      unbounded++;
  }
  print_tightness("shipped scenarios", ratios, unbounded);
}
END_TEST

static Suite *plan_suite(void)
{
  Suite *s = suite_create("plan");
  struct {
    const char *name;
    const TTest *test;
  } cases[] = {{"arithmetic", test_arithmetic},
               {"gpu_counts", test_gpu_counts},
               {"batches", test_batches},
               {"breakdown", test_breakdown},
               {"bound_below_simulation", test_bound_below_simulation}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    TCase *tc = tcase_create(cases[i].name);
    /* ~5,500 simulations: about 20 s, six times that under ASan */
    if (cases[i].test == test_bound_below_simulation)
      tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(plan_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
