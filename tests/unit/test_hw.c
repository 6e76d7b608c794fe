/* test_hw.c — the max-min solver, the task graph, profile curves and the executor.
 *
 * Solver tests state their system and expected numbers first (SimGrid's maxmin_test style).
 * Executor tests use a small profile built here: 132 SMs, NVLink 400 bytes/ns, NIC 50 bytes/ns
 * per direction, no kernel launch cost, uncalibrated (linear) SM curves, unless a test says
 * otherwise. Expected times are worked out in each test's comment. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "hw/coll.h"
#include "hw/cost.h"
#include "hw/exec.h"
#include "hw/graph.h"
#include "hw/hbm.h"
#include "hw/maxmin.h"
#include "hw/profile.h"

#define EPS 1e-9
#define ck_assert_close(x, y) ck_assert_double_eq_tol((x), (y), EPS *fmax(1.0, fabs(y)))

/* ======================================================================== max-min solver */

static double rate(const PnMaxMin *mm, PnFlowId f) { return pn_maxmin_flow_rate(mm, f); }

static gboolean contains(GArray *ids, PnFlowId f)
{
  for (guint i = 0; i < ids->len; i++)
    if (g_array_index(ids, PnFlowId, i) == f)
      return TRUE;
  return FALSE;
}

/* System: x1 <= C = 10 (one flow, coefficient 1, no bound).
 * Expect: x1 = 10, usage 10. */
START_TEST(test_mm_single_flow)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  PnResourceId r         = pn_maxmin_add_resource(mm, 10.0);
  PnFlowId f             = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, 0.0);
  pn_maxmin_solve(mm, NULL);
  ck_assert_close(rate(mm, f), 10.0);
  ck_assert_close(pn_maxmin_resource_usage(mm, r), 10.0);
  ck_assert_close(pn_maxmin_resource_capacity(mm, r), 10.0);
  ck_assert_int_eq(pn_maxmin_active_flows(mm), 1);
}
END_TEST

/* System: x1 + x2 <= 10.  Expect: x1 = x2 = 5. */
START_TEST(test_mm_two_equal_flows)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  PnResourceId r         = pn_maxmin_add_resource(mm, 10.0);
  PnFlowId a             = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, 0.0);
  PnFlowId b             = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, -1.0);
  pn_maxmin_solve(mm, NULL);
  ck_assert_close(rate(mm, a), 5.0);
  ck_assert_close(rate(mm, b), 5.0);
  ck_assert_close(pn_maxmin_resource_usage(mm, r), 10.0);
}
END_TEST

/* System: x1 + x2 <= 10, x1 <= b1 = 2.
 * Levels: resource 10/2 = 5, bound 2 -> x1 = 2 first; then x2 = (10 - 2)/1 = 8. */
START_TEST(test_mm_bound_leaves_rest)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  PnResourceId r         = pn_maxmin_add_resource(mm, 10.0);
  PnFlowId a             = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, 2.0);
  PnFlowId b             = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, 0.0);
  pn_maxmin_solve(mm, NULL);
  ck_assert_close(rate(mm, a), 2.0);
  ck_assert_close(rate(mm, b), 8.0);
  /* A bound above the fair share changes nothing: b1 = 7 > 5 -> 5, 5. */
  g_autoptr(PnMaxMin) m2 = pn_maxmin_new();
  PnResourceId r2        = pn_maxmin_add_resource(m2, 10.0);
  PnFlowId c             = pn_maxmin_add_flow(m2, 1, &r2, (double[]){1.0}, 7.0);
  PnFlowId d             = pn_maxmin_add_flow(m2, 1, &r2, (double[]){1.0}, 0.0);
  pn_maxmin_solve(m2, NULL);
  ck_assert_close(rate(m2, c), 5.0);
  ck_assert_close(rate(m2, d), 5.0);
}
END_TEST

/* Line topology. Links L1 (C = 1) and L2 (C = 2); flow A crosses both, B only L1, C only L2:
 *   L1: xA + xB <= 1,   L2: xA + xC <= 2.
 * Levels: L1 = 1/2 = 0.5, L2 = 2/2 = 1 -> L1 is the bottleneck: xA = xB = 0.5.
 * Then L2 has 2 - 0.5 = 1.5 left for C alone: xC = 1.5. Both links end saturated (1 and 2). */
START_TEST(test_mm_line_topology)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  PnResourceId l1        = pn_maxmin_add_resource(mm, 1.0);
  PnResourceId l2        = pn_maxmin_add_resource(mm, 2.0);
  PnFlowId a             = pn_maxmin_add_flow(mm, 2, (PnResourceId[]){l1, l2}, (double[]){1.0, 1.0}, 0.0);
  PnFlowId b             = pn_maxmin_add_flow(mm, 1, &l1, (double[]){1.0}, 0.0);
  PnFlowId c             = pn_maxmin_add_flow(mm, 1, &l2, (double[]){1.0}, 0.0);
  pn_maxmin_solve(mm, NULL);
  ck_assert_close(rate(mm, a), 0.5);
  ck_assert_close(rate(mm, b), 0.5);
  ck_assert_close(rate(mm, c), 1.5);
  ck_assert_close(pn_maxmin_resource_usage(mm, l1), 1.0);
  ck_assert_close(pn_maxmin_resource_usage(mm, l2), 2.0);
}
END_TEST

/* Usage coefficients. In this solver every flow fixed at a bottleneck gets the same rate (the
 * level) and consumes a * x there.
 * (1) One flow with a = 2 alone on C = 10: 2 x <= 10 -> x = 5, half the rate a = 1 would get.
 * (2) a1 = 2 and a2 = 1 on C = 12: level 12 / (2 + 1) = 4 -> x1 = x2 = 4; usage 8 + 4 = 12.
 * (3) Coefficient on a non-bottleneck: flow A uses L1 (C = 10, a = 1) and L2 (C = 4, a = 0.25);
 *     levels 10 and 4/0.25 = 16 -> xA = 10, L2 usage 2.5. */
START_TEST(test_mm_coefficients)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  PnResourceId r         = pn_maxmin_add_resource(mm, 10.0);
  PnFlowId f             = pn_maxmin_add_flow(mm, 1, &r, (double[]){2.0}, 0.0);
  pn_maxmin_solve(mm, NULL);
  ck_assert_close(rate(mm, f), 5.0);
  ck_assert_close(pn_maxmin_resource_usage(mm, r), 10.0);

  g_autoptr(PnMaxMin) m2 = pn_maxmin_new();
  PnResourceId r2        = pn_maxmin_add_resource(m2, 12.0);
  PnFlowId f1            = pn_maxmin_add_flow(m2, 1, &r2, (double[]){2.0}, 0.0);
  PnFlowId f2            = pn_maxmin_add_flow(m2, 1, &r2, (double[]){1.0}, 0.0);
  pn_maxmin_solve(m2, NULL);
  ck_assert_close(rate(m2, f1), 4.0);
  ck_assert_close(rate(m2, f2), 4.0);
  ck_assert_close(pn_maxmin_resource_usage(m2, r2), 12.0);

  g_autoptr(PnMaxMin) m3 = pn_maxmin_new();
  PnResourceId a1        = pn_maxmin_add_resource(m3, 10.0);
  PnResourceId a2        = pn_maxmin_add_resource(m3, 4.0);
  PnFlowId fa            = pn_maxmin_add_flow(m3, 2, (PnResourceId[]){a1, a2}, (double[]){1.0, 0.25}, 0.0);
  pn_maxmin_solve(m3, NULL);
  ck_assert_close(rate(m3, fa), 10.0);
  ck_assert_close(pn_maxmin_resource_usage(m3, a2), 2.5);
}
END_TEST

/* Removal restores rates. x1 + x2 <= 10 -> 5, 5; remove x2 -> x1 = 10, and x1 alone is
 * reported as changed. Removing everything leaves usage 0. A removed id may be reused. */
START_TEST(test_mm_removal_restores)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  g_autoptr(GArray) ch   = g_array_new(FALSE, FALSE, sizeof(PnFlowId));
  PnResourceId r         = pn_maxmin_add_resource(mm, 10.0);
  PnFlowId a             = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, 0.0);
  PnFlowId b             = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, 0.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_close(rate(mm, a), 5.0);
  pn_maxmin_remove_flow(mm, b);
  ck_assert_int_eq(pn_maxmin_active_flows(mm), 1);
  pn_maxmin_solve(mm, ch);
  ck_assert_close(rate(mm, a), 10.0);
  ck_assert_uint_eq(ch->len, 1);
  ck_assert_int_eq(g_array_index(ch, PnFlowId, 0), a);
  pn_maxmin_remove_flow(mm, a);
  pn_maxmin_solve(mm, ch);
  ck_assert_uint_eq(ch->len, 0);
  ck_assert_close(pn_maxmin_resource_usage(mm, r), 0.0);
  PnFlowId c = pn_maxmin_add_flow(mm, 1, &r, (double[]){1.0}, 3.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_close(rate(mm, c), 3.0);
  ck_assert_uint_eq(ch->len, 1);
}
END_TEST

/* `changed` reports new flows and flows whose rate moved, and nothing outside the touched
 * component. Resources RA (C = 10) and RB (C = 6), disjoint.
 *  step 1: f1 on RA                     -> f1 = 10;           changed {f1}
 *  step 2: f2 on RB                     -> f2 = 6;            changed {f2} (RA untouched)
 *  step 3: f3 on RA                     -> f1 = f3 = 5;       changed {f1, f3}
 *  step 4: solve with nothing new       -> changed {}
 *  step 5: RC (C = 10) with g1, g2 bounded at 2 -> 2, 2; add g3 bounded at 2 -> 2, 2, 2:
 *          changed {g3} only (g1, g2 re-solved but unchanged). */
START_TEST(test_mm_changed_contents)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  g_autoptr(GArray) ch   = g_array_new(FALSE, FALSE, sizeof(PnFlowId));
  PnResourceId ra        = pn_maxmin_add_resource(mm, 10.0);
  PnResourceId rb        = pn_maxmin_add_resource(mm, 6.0);
  PnFlowId f1            = pn_maxmin_add_flow(mm, 1, &ra, (double[]){1.0}, 0.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_uint_eq(ch->len, 1);
  ck_assert(contains(ch, f1));
  PnFlowId f2 = pn_maxmin_add_flow(mm, 1, &rb, (double[]){1.0}, 0.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_uint_eq(ch->len, 1);
  ck_assert(contains(ch, f2));
  ck_assert_close(rate(mm, f2), 6.0);
  PnFlowId f3 = pn_maxmin_add_flow(mm, 1, &ra, (double[]){1.0}, 0.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_uint_eq(ch->len, 2);
  ck_assert(contains(ch, f1) && contains(ch, f3));
  ck_assert_close(rate(mm, f1), 5.0);
  ck_assert_close(rate(mm, f3), 5.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_uint_eq(ch->len, 0);

  PnResourceId rc = pn_maxmin_add_resource(mm, 10.0);
  PnFlowId g1     = pn_maxmin_add_flow(mm, 1, &rc, (double[]){1.0}, 2.0);
  PnFlowId g2     = pn_maxmin_add_flow(mm, 1, &rc, (double[]){1.0}, 2.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_uint_eq(ch->len, 2);
  PnFlowId g3 = pn_maxmin_add_flow(mm, 1, &rc, (double[]){1.0}, 2.0);
  pn_maxmin_solve(mm, ch);
  ck_assert_uint_eq(ch->len, 1);
  ck_assert(contains(ch, g3));
  ck_assert_close(rate(mm, g1), 2.0);
  ck_assert_close(rate(mm, g2), 2.0);
  ck_assert_close(pn_maxmin_resource_usage(mm, rc), 6.0);
}
END_TEST

/* A flow with only a bound and no resources gets its bound. */
START_TEST(test_mm_bound_only_flow)
{
  g_autoptr(PnMaxMin) mm = pn_maxmin_new();
  PnFlowId f             = pn_maxmin_add_flow(mm, 0, NULL, NULL, 3.5);
  pn_maxmin_solve(mm, NULL);
  ck_assert_close(rate(mm, f), 3.5);
}
END_TEST

typedef struct {
  int n;
  PnResourceId res[4];
  double coef[4];
  double bound;
  PnFlowId id; /* -1 when removed */
} TFlow;

/* Checks the max-min optimality certificate of the current solution, and compares it with a
 * from-scratch solve of the same active flows in a fresh solver. */
static void check_certificate(const PnMaxMin *mm, const double *cap, int n_res, const TFlow *fl, int n_fl)
{
  double *use  = g_new0(double, n_res);
  double *maxr = g_new0(double, n_res);
  for (int i = 0; i < n_fl; i++) {
    if (fl[i].id < 0)
      continue;
    double x = pn_maxmin_flow_rate(mm, fl[i].id);
    ck_assert(isfinite(x) && x >= 0.0);
    for (int k = 0; k < fl[i].n; k++) {
      use[fl[i].res[k]] += fl[i].coef[k] * x;
      maxr[fl[i].res[k]] = fmax(maxr[fl[i].res[k]], x);
    }
  }
  for (int r = 0; r < n_res; r++) {
    ck_assert(use[r] <= cap[r] * (1 + EPS));                                         /* feasible */
    ck_assert_double_eq_tol(pn_maxmin_resource_usage(mm, r), use[r], 1e-9 * cap[r]); /* reported usage */
  }
  /* Every flow is bottlenecked: at its bound, or on a saturated resource where no flow is faster. */
  for (int i = 0; i < n_fl; i++) {
    if (fl[i].id < 0)
      continue;
    double x        = pn_maxmin_flow_rate(mm, fl[i].id);
    bool bottleneck = fl[i].bound > 0 && x >= fl[i].bound * (1 - EPS);
    for (int k = 0; k < fl[i].n && !bottleneck; k++) {
      int r      = fl[i].res[k];
      bottleneck = use[r] >= cap[r] * (1 - EPS) && x >= maxr[r] * (1 - EPS);
    }
    ck_assert_msg(bottleneck, "flow %d (rate %g) is not bottlenecked", i, x);
    if (fl[i].bound > 0)
      ck_assert(x <= fl[i].bound * (1 + EPS));
  }
  /* Incremental == from scratch. */
  g_autoptr(PnMaxMin) ref = pn_maxmin_new();
  for (int r = 0; r < n_res; r++)
    pn_maxmin_add_resource(ref, cap[r]);
  PnFlowId *ids = g_new(PnFlowId, (gsize)MAX(n_fl, 1));
  for (int i = 0; i < n_fl; i++)
    ids[i] = fl[i].id < 0 ? -1 : pn_maxmin_add_flow(ref, fl[i].n, fl[i].res, fl[i].coef, fl[i].bound);
  pn_maxmin_solve(ref, NULL);
  for (int i = 0; i < n_fl; i++)
    if (fl[i].id >= 0) {
      double a = pn_maxmin_flow_rate(mm, fl[i].id), b = pn_maxmin_flow_rate(ref, ids[i]);
      ck_assert_double_eq_tol(a, b, 1e-9 * fmax(1.0, b));
    }
  g_free(ids);
  g_free(use);
  g_free(maxr);
}

/* The distribution of a random max-min instance (the two property tests below). */
typedef struct {
  int max_res;             /* resources: 1..max_res (at most 12) */
  double cap_lo, cap_hi;   /* capacities */
  int max_elems;           /* resources per flow: 1..max_elems (at most 4), repeats allowed */
  double coef_lo, coef_hi; /* usage coefficients */
  int bound_draw;          /* a flow's bound: a draw in [0, bound_draw) ... */
  bool bound_on_zero;      /* ... bounded when it is 0 (else when it is not) */
  double bound_lo, bound_hi;
} TDist;

/* A new instance's resources; returns their number. */
static int random_resources(GRand *rng, const TDist *d, PnMaxMin *mm, double cap[12])
{
  int n_res = g_rand_int_range(rng, 1, d->max_res + 1);
  for (int r = 0; r < n_res; r++) {
    cap[r] = g_rand_double_range(rng, d->cap_lo, d->cap_hi);
    pn_maxmin_add_resource(mm, cap[r]);
  }
  return n_res;
}

/* `batch` random changes: two adds for one removal (of a random flow, if still active). */
static void random_batch(GRand *rng, const TDist *d, PnMaxMin *mm, int n_res, TFlow fl[64], int *n_fl, int batch)
{
  for (int b = 0; b < batch; b++) {
    bool add = *n_fl < 64 && (*n_fl == 0 || g_rand_int_range(rng, 0, 3) > 0);
    if (add) {
      TFlow *f = &fl[(*n_fl)++];
      f->n     = g_rand_int_range(rng, 1, MIN(d->max_elems, n_res) + 1);
      for (int k = 0; k < f->n; k++) {
        f->res[k]  = g_rand_int_range(rng, 0, n_res); /* repeats allowed */
        f->coef[k] = g_rand_double_range(rng, d->coef_lo, d->coef_hi);
      }
      bool bounded = (g_rand_int_range(rng, 0, d->bound_draw) == 0) == d->bound_on_zero;
      f->bound     = bounded ? g_rand_double_range(rng, d->bound_lo, d->bound_hi) : 0.0;
      f->id        = pn_maxmin_add_flow(mm, f->n, f->res, f->coef, f->bound);
    } else {
      int i = g_rand_int_range(rng, 0, *n_fl);
      if (fl[i].id >= 0) {
        pn_maxmin_remove_flow(mm, fl[i].id);
        fl[i].id = -1;
      }
    }
  }
}

/* Property: random instances (1-12 resources, flows over 1-4 of them with coefficients in
 * [0.25, 3], a third bounded), grown and shrunk by random adds and removes with a solve after
 * each batch. After every solve: no resource above capacity (usage <= C (1 + 1e-9)), every flow
 * bottlenecked (the max-min certificate), and the incremental result equals a fresh solve. */
START_TEST(test_mm_property_random)
{
  static const TDist dist = {12, 0.5, 100.0, 4, 0.25, 3.0, 3, true, 0.1, 50.0};
  GRand *rng              = g_rand_new_with_seed(7);
  for (int inst = 0; inst < 300; inst++) {
    double cap[12];
    g_autoptr(PnMaxMin) mm = pn_maxmin_new();
    int n_res              = random_resources(rng, &dist, mm, cap);
    TFlow fl[64];
    int n_fl = 0;
    for (int round = 0; round < 12; round++) {
      random_batch(rng, &dist, mm, n_res, fl, &n_fl, g_rand_int_range(rng, 1, 5));
      pn_maxmin_solve(mm, NULL);
      check_certificate(mm, cap, n_res, fl, n_fl);
    }
  }
  g_rand_free(rng);
}
END_TEST

/* Property, mostly bounded flows (7 in 8) on roomy resources (so that flows are placed at their
 * bound without a solve, and leave without one, maxmin.c): the certificate and the from-scratch
 * equality as above, and the report: each solve lists every flow added in its batch (and still
 * active) exactly once, whether its rate came from a solve or from the placement. */
START_TEST(test_mm_property_placed)
{
  static const TDist dist = {8, 50.0, 200.0, 3, 0.5, 2.0, 8, false, 1.0, 30.0};
  GRand *rng              = g_rand_new_with_seed(11);
  int placed_batches      = 0;
  for (int inst = 0; inst < 300; inst++) {
    double cap[12];
    g_autoptr(PnMaxMin) mm = pn_maxmin_new();
    int n_res              = random_resources(rng, &dist, mm, cap);
    TFlow fl[64];
    int n_fl                  = 0;
    g_autoptr(GArray) changed = g_array_new(FALSE, FALSE, sizeof(PnFlowId));
    for (int round = 0; round < 16; round++) {
      int first_new = n_fl;
      random_batch(rng, &dist, mm, n_res, fl, &n_fl, g_rand_int_range(rng, 1, 4));
      pn_maxmin_solve(mm, changed);
      for (int i = first_new; i < n_fl; i++) {
        if (fl[i].id < 0)
          continue;
        int seen = 0;
        for (guint j = 0; j < changed->len; j++)
          seen += g_array_index(changed, PnFlowId, j) == fl[i].id;
        ck_assert_int_eq(seen, 1);
      }
      for (guint j = 0; j < changed->len; j++)
        for (guint k = j + 1; k < changed->len; k++)
          ck_assert_int_ne(g_array_index(changed, PnFlowId, j), g_array_index(changed, PnFlowId, k));
      placed_batches += changed->len > 0;
      check_certificate(mm, cap, n_res, fl, n_fl);
    }
  }
  ck_assert_int_gt(placed_batches, 100);
  g_rand_free(rng);
}
END_TEST

/* ======================================================================== graph and profile */

static PnTask mk(PnTaskKind kind, uint32_t gpu, PnStream stream, const char *label)
{
  return (PnTask){.gpu        = gpu,
                  .stream     = (uint8_t)stream,
                  .kind       = (uint8_t)kind,
                  .cls        = PN_CLASS_NONE,
                  .label      = label,
                  .microbatch = -1,
                  .chunk      = -1,
                  .layer      = -1};
}

START_TEST(test_graph_build)
{
  g_autoptr(PnGraph) g = pn_graph_new(2);
  PnTask t             = mk(PN_TASK_COMPUTE, 0, PN_STREAM_COMPUTE, "a");
  t.dep_first = 77, t.dep_count = 5; /* ignored: the graph fills them */
  PnTaskId a       = pn_graph_add(g, &t, NULL, 0);
  PnTaskId b       = pn_graph_add(g, &t, NULL, 0);
  PnTaskId deps[2] = {a, b};
  PnTaskId c       = pn_graph_add(g, &t, deps, 2);
  deps[0]          = 99; /* copied: changing the caller's array changes nothing */
  pn_graph_add_dep(g, c, a);
  ck_assert_uint_eq(pn_graph_n_tasks(g), 3);
  ck_assert_uint_eq(pn_graph_task(g, a)->dep_count, 0);
  ck_assert_uint_eq(pn_graph_task(g, c)->dep_count, 3);
  PnTask *tc = pn_graph_task(g, c);
  ck_assert_uint_eq(pn_graph_deps(g)[tc->dep_first + 0], a);
  ck_assert_uint_eq(pn_graph_deps(g)[tc->dep_first + 1], b);
  ck_assert_uint_eq(pn_graph_deps(g)[tc->dep_first + 2], a);

  PnTask p   = mk(PN_TASK_P2P, 0, PN_STREAM_PP_SEND, "s");
  PnTaskId s = pn_graph_add(g, &p, NULL, 0);
  p.gpu      = 1;
  PnTaskId r = pn_graph_add(g, &p, NULL, 0);
  pn_graph_pair_p2p(g, s, r, 1024.0, true);
  pn_graph_pair_p2p(g, r, s, 2048.0, false);
  const PnTask *ts = pn_graph_task(g, s), *tr = pn_graph_task(g, r);
  ck_assert_uint_eq(ts->n_legs, 2);
  ck_assert_uint_eq(tr->n_legs, 2);
  const PnP2pLeg *sl = pn_graph_legs(g, ts), *rl = pn_graph_legs(g, tr);
  ck_assert(sl[0].is_send && !rl[0].is_send);
  ck_assert(sl[0].over_nic && rl[0].over_nic);
  ck_assert_uint_eq(sl[0].peer, r);
  ck_assert_uint_eq(rl[0].peer, s);
  ck_assert_double_eq(sl[0].bytes, 1024.0);
  ck_assert(!sl[1].is_send && rl[1].is_send && !rl[1].over_nic);
  ck_assert_double_eq(rl[1].bytes, 2048.0);
  pn_graph_free(NULL);
}
END_TEST

/* pn_graph_add_dep on a task that is not the last one is a programming error. */
START_TEST(test_graph_add_dep_not_last_asserts)
{
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTask t             = mk(PN_TASK_DELAY, 0, PN_STREAM_COMPUTE, "d");
  PnTaskId a           = pn_graph_add(g, &t, NULL, 0);
  PnTaskId b           = pn_graph_add(g, &t, NULL, 0);
  pn_graph_add(g, &t, NULL, 0);
  pn_graph_add_dep(g, b, a); /* aborts */
}
END_TEST

/* GEMM pricing from a table: the nearest four points in log2(m, n, k) space (at most 2 away),
 * their rates blended with inverse-square-distance weights in log space. The reference below is
 * that rule written the plain way (three logarithms, a square root and an ordered insertion per
 * point); the priced durations must match it bit for bit on random tables: grids with repeated
 * sizes (where distances tie exactly), off-grid sizes, exact hits and queries far from any point. */
static double ref_gemm_rate(const PnGemmTable *t, int64_t m, int64_t n, int64_t k, bool *exact)
{
  double bd[4], br[4];
  int nb = 0;
  for (int i = 0; i < t->n; i++) {
    const PnGemmPoint *p = &t->pts[i];
    double dm = log2((double)m / (double)p->m), dn = log2((double)n / (double)p->n);
    double dk = log2((double)k / (double)p->k);
    double d  = sqrt(dm * dm + dn * dn + dk * dk);
    double r  = 2.0 * (double)p->m * (double)p->n * (double)p->k / p->ns;
    int at    = nb < 4 ? nb : (d < bd[3] ? 3 : -1);
    if (at < 0)
      continue;
    nb     = nb < 4 ? nb + 1 : 4;
    bd[at] = d, br[at] = r;
    for (int j = at; j > 0 && bd[j] < bd[j - 1]; j--) {
      double td = bd[j], tr = br[j];
      bd[j] = bd[j - 1], br[j] = br[j - 1];
      bd[j - 1] = td, br[j - 1] = tr;
    }
  }
  *exact = false;
  if (nb == 0 || bd[0] > 2.0)
    return 0.0;
  if (bd[0] < 1e-9) {
    *exact = true;
    return br[0];
  }
  double ws = 0.0, ls = 0.0;
  for (int i = 0; i < nb && bd[i] <= 2.0; i++) {
    double w = 1.0 / (bd[i] * bd[i]);
    ws += w;
    ls += w * log(br[i]);
  }
  return exp(ls / ws);
}

START_TEST(test_cost_gemm_table_exact)
{
  GRand *rng                  = g_rand_new_with_seed(7);
  PnHwProfile hw              = {.sm_count               = 132,
                                 .peak_bf16_flops_per_ns = 989e3,
                                 .gemm_efficiency        = 0.8,
                                 .gemm_tile_m            = 128,
                                 .gemm_tile_n            = 256,
                                 .hbm_bytes_per_ns       = 3350.0};
  static const int64_t grid[] = {8, 64, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 53248};
  int checked = 0, hits = 0, roofline = 0;
  for (int round = 0; round < 40; round++) {
    int n          = g_rand_int_range(rng, 1, 400);
    PnGemmPoint *p = g_new(PnGemmPoint, n);
    for (int i = 0; i < n; i++) {
      int64_t d[3];
      for (int j = 0; j < 3; j++)
        d[j] = g_rand_int_range(rng, 0, 4) == 0 ? g_rand_int_range(rng, 1, 70000)
                                                : grid[g_rand_int_range(rng, 0, G_N_ELEMENTS(grid))];
      p[i] = (PnGemmPoint){.m = d[0], .n = d[1], .k = d[2], .ns = g_rand_double_range(rng, 1e3, 1e7)};
    }
    hw.gemm_bf16 = (PnGemmTable){.n = n, .pts = p};
    for (int q = 0; q < 200; q++) {
      int64_t d[3];
      const PnGemmPoint *at = &p[g_rand_int_range(rng, 0, n)];
      bool on_point         = g_rand_int_range(rng, 0, 4) == 0; /* an exact hit */
      for (int j = 0; j < 3; j++) {
        int how = g_rand_int_range(rng, 0, 3);
        d[j]    = on_point || how == 2 ? (&at->m)[j]
                  : how == 0           ? grid[g_rand_int_range(rng, 0, G_N_ELEMENTS(grid))]
                                       : g_rand_int_range(rng, 1, 200000);
      }
      bool exact;
      double rate = ref_gemm_rate(&hw.gemm_bf16, d[0], d[1], d[2], &exact);
      PnCostSource src;
      double ns = pn_cost_gemm_ns(&hw, d[0], d[1], d[2], PN_DT_BF16, &src);
      if (rate > 0.0) {
        double want = 2.0 * (double)d[0] * (double)d[1] * (double)d[2] / rate;
        ck_assert_msg(ns == want, "m %ld n %ld k %ld: %.17g ns, the plain rule gives %.17g", (long)d[0], (long)d[1],
                      (long)d[2], ns, want);
        ck_assert_int_eq(src, exact ? PN_COST_TABLE : PN_COST_INTERPOLATED);
        hits += exact;
      } else {
        ck_assert_int_eq(src, PN_COST_ROOFLINE);
        roofline++;
      }
      checked++;
    }
    g_free(p);
  }
  ck_assert_int_eq(checked, 8000);
  ck_assert_msg(hits > 1000 && roofline > 1000 && checked - hits - roofline > 1000, "exact %d, roofline %d of %d", hits,
                roofline, checked); /* each outcome, often */
  g_rand_free(rng);
}
END_TEST

/* Curve: points (1, 0.2), (3, 0.6), (5, 1.0); linear between, clamped outside; empty -> default.
 * log_x: (1024, 0.2), (4096, 0.6): x = 2048 is halfway in log2 -> 0.4. */
START_TEST(test_curve_eval)
{
  double x[] = {1, 3, 5}, y[] = {0.2, 0.6, 1.0};
  PnCurve c = {.n = 3, .x = x, .y = y};
  ck_assert_close(pn_curve_eval(&c, 0.0, -1), 0.2);
  ck_assert_close(pn_curve_eval(&c, 1.0, -1), 0.2);
  ck_assert_close(pn_curve_eval(&c, 2.0, -1), 0.4);
  ck_assert_close(pn_curve_eval(&c, 3.0, -1), 0.6);
  ck_assert_close(pn_curve_eval(&c, 4.5, -1), 0.9);
  ck_assert_close(pn_curve_eval(&c, 9.0, -1), 1.0);
  PnCurve empty = {0};
  ck_assert_close(pn_curve_eval(&empty, 2.0, 0.75), 0.75);
  PnCurve one = {.n = 1, .x = x, .y = y};
  ck_assert_close(pn_curve_eval(&one, 100.0, -1), 0.2);
  double lx[] = {1024, 4096}, ly[] = {0.2, 0.6};
  PnCurve lc = {.n = 2, .x = lx, .y = ly, .log_x = true};
  ck_assert_close(pn_curve_eval(&lc, 2048.0, -1), 0.4);
  ck_assert_close(pn_curve_eval(&lc, 1.0, -1), 0.2);
  /* A heap-allocated profile frees its tables. */
  PnHwProfile *p                            = g_new0(PnHwProfile, 1);
  p->gemm_sm_scaling.n                      = 2;
  p->gemm_sm_scaling.x                      = g_new0(double, 2);
  p->gemm_sm_scaling.y                      = g_new0(double, 2);
  p->gemm_bf16.n                            = 1;
  p->gemm_bf16.pts                          = g_new0(PnGemmPoint, 1);
  p->bmm_bf16.n                             = 1;
  p->bmm_bf16.pts                           = g_new0(PnGemmPoint, 1);
  p->torch_kernel_vs_copy[PN_TK_ROPE_BWD].n = 2;
  p->torch_kernel_vs_copy[PN_TK_ROPE_BWD].x = g_new0(double, 2);
  p->torch_kernel_vs_copy[PN_TK_ROPE_BWD].y = g_new0(double, 2);
  PnHwProfile *copy                         = pn_hw_profile_copy(p); /* its own tables and curves */
  ck_assert(copy->bmm_bf16.pts != p->bmm_bf16.pts);
  ck_assert(copy->torch_kernel_vs_copy[PN_TK_ROPE_BWD].x != p->torch_kernel_vs_copy[PN_TK_ROPE_BWD].x);
  pn_hw_profile_free(copy);
  pn_hw_profile_free(p);
  pn_hw_profile_free(NULL);
}
END_TEST

/* ======================================================================== executor */

/* nccl-tests' bus-bandwidth factors: all-reduce 2(n-1)/n (8 ranks: 1.75), all-gather,
 * reduce-scatter and all-to-all (n-1)/n (8: 0.875; 2: 0.5), send/recv 1; one rank moves nothing. */
START_TEST(test_busbw_factor)
{
  ck_assert_double_eq(pn_coll_busbw_factor(PN_COLL_ALL_REDUCE, 8), 1.75);
  ck_assert_double_eq(pn_coll_busbw_factor(PN_COLL_ALL_GATHER, 8), 0.875);
  ck_assert_double_eq(pn_coll_busbw_factor(PN_COLL_REDUCE_SCATTER, 2), 0.5);
  ck_assert_double_eq(pn_coll_busbw_factor(PN_COLL_ALL_TO_ALL, 8), 0.875);
  ck_assert_double_eq(pn_coll_busbw_factor(PN_COLL_SEND_RECV, 2), 1.0);
  ck_assert_double_eq(pn_coll_busbw_factor(PN_COLL_ALL_REDUCE, 1), 0.0);
}
END_TEST

/* A wgrad accumulating into main_grad is priced from the gemm_accum table of its (input dtype,
 * main_grad dtype): one bf16 point 4096^3 at 1000 ns plain and 1200 ns into fp32 gives 1200 ns
 * for that shape and, at constant rate, 2 x 1200 for 4096 x 4096 x 8192 (the table's own
 * neighbour rule); a table that is empty (into bf16, fp8 into fp32 here) prices the plain GEMM. */
START_TEST(test_gemm_accum_cost)
{
  PnHwProfile hw       = {0};
  PnGemmPoint plain[]  = {{.m = 4096, .n = 4096, .k = 4096, .ns = 1000.0}};
  PnGemmPoint accum[]  = {{.m = 4096, .n = 4096, .k = 4096, .ns = 1200.0}};
  PnGemmPoint plain8[] = {{.m = 4096, .n = 4096, .k = 4096, .ns = 600.0}};
  hw.gemm_bf16         = (PnGemmTable){.n = 1, .pts = plain};
  hw.gemm_fp8          = (PnGemmTable){.n = 1, .pts = plain8};
  hw.gemm_accum[0][1]  = (PnGemmTable){.n = 1, .pts = accum};
  PnCostSource src;
  ck_assert_double_eq(pn_cost_gemm_accum_ns(&hw, 4096, 4096, 4096, PN_DT_BF16, PN_DT_FP32, &src), 1200.0);
  ck_assert_int_eq(src, PN_COST_TABLE);
  ck_assert_double_eq_tol(pn_cost_gemm_accum_ns(&hw, 4096, 4096, 8192, PN_DT_BF16, PN_DT_FP32, &src), 2400.0, 1e-9);
  ck_assert_int_eq(src, PN_COST_INTERPOLATED);
  ck_assert_double_eq(pn_cost_gemm_accum_ns(&hw, 4096, 4096, 4096, PN_DT_BF16, PN_DT_BF16, NULL), 1000.0);
  ck_assert_double_eq(pn_cost_gemm_accum_ns(&hw, 4096, 4096, 4096, PN_DT_FP8, PN_DT_FP32, NULL), 600.0);
  ck_assert_double_eq(pn_cost_gemm_ns(&hw, 4096, 4096, 4096, PN_DT_BF16, NULL), 1000.0);
}
END_TEST

/* A strided-batched GEMM from the bmm_bf16 table, the GEMM rule with log2(batch) as a fourth
 * dimension and 2 batch m n k FLOPs. With M = 1024 x 1024 x 64 and two points, batch 8 in
 * 30000 ns (rate r8 = 2 x 8 M / 30000) and batch 32 in 60000 ns (r32 = 2 x 32 M / 60000):
 *   batch 8 (exact)  -> 2 x 8 M / r8 = 30000 ns, PN_COST_TABLE;
 *   batch 16 (1 from each in log2, equal weights) -> rate sqrt(r8 r32),
 *     2 x 16 M / sqrt(r8 r32) = sqrt(30000 x 60000) = 42426.41 ns, PN_COST_INTERPOLATED;
 *   k = 1024 (4 from both in log2, beyond 2) -> the folded GEMM (8 x 1024, 1024, 1024) of gemm_bf16.
 * An empty table prices every bmm as that folded GEMM: (8 x 1024, 1024, 64) at its 25000 ns. A
 * batch of 0 or 1 is one GEMM: a table of such points prices as the same points in gemm_bf16,
 * bit for bit (random tables and queries, the roofline included). */
/* MLA's attention (query / key heads 192, value heads 128): the rows of those two widths price it
 * at their own rate; without them, the d = 192 rows' rate for the work of (192 + 128) / 2 wide
 * heads: QK^T over 192, PV over 128, so (192 + 128) / (2 * 192) of the symmetric kernel's time. */
START_TEST(test_cost_attention_mla)
{
  PnHwProfile hw   = {.sm_count = 132, .peak_bf16_flops_per_ns = 989e3, .attn_efficiency = 0.5};
  PnAttnPoint pt[] = {{.batch      = 1,
                       .seq        = 4096,
                       .heads      = 64,
                       .kv_heads   = 64,
                       .head_dim   = 192,
                       .head_dim_v = 192,
                       .fwd_ns     = 678000.0,
                       .bwd_ns     = 3230000.0},
                      {.batch      = 1,
                       .seq        = 4096,
                       .heads      = 64,
                       .kv_heads   = 64,
                       .head_dim   = 192,
                       .head_dim_v = 128,
                       .fwd_ns     = 602000.0,
                       .bwd_ns     = 2059000.0}};
  hw.attn_bf16     = (PnAttnTable){.n = 1, .pts = pt};
  PnCostSource src;
  ck_assert_double_eq_tol(pn_cost_attention_ns(&hw, 1, 4096, 4096, 64, 64, 192, 192, true, false, &src), 678000.0,
                          1e-6);
  ck_assert_double_eq_tol(pn_cost_attention_ns(&hw, 1, 4096, 4096, 64, 64, 192, 0, true, true, &src), 3230000.0, 1e-6);
  ck_assert_double_eq_tol(pn_cost_attention_ns(&hw, 1, 4096, 4096, 64, 64, 192, 128, true, false, &src),
                          678000.0 * 320.0 / 384.0, 1e-6);
  hw.attn_bf16 = (PnAttnTable){.n = 2, .pts = pt};
  ck_assert_double_eq_tol(pn_cost_attention_ns(&hw, 1, 4096, 4096, 64, 64, 192, 128, true, false, &src), 602000.0,
                          1e-6);
  ck_assert_int_eq(src, PN_COST_TABLE);
  ck_assert_double_eq_tol(pn_cost_attention_ns(&hw, 1, 4096, 4096, 64, 64, 192, 128, true, true, &src), 2059000.0,
                          1e-6);
  /* a symmetric query still takes the symmetric row */
  ck_assert_double_eq_tol(pn_cost_attention_ns(&hw, 1, 4096, 4096, 64, 64, 192, 192, true, true, &src), 3230000.0,
                          1e-6);
}
END_TEST

START_TEST(test_cost_bmm)
{
  PnHwProfile hw     = {.sm_count               = 132,
                        .peak_bf16_flops_per_ns = 989e3,
                        .gemm_efficiency        = 0.8,
                        .gemm_tile_m            = 128,
                        .gemm_tile_n            = 256,
                        .hbm_bytes_per_ns       = 3350.0};
  PnGemmPoint bmm[]  = {{.batch = 8, .m = 1024, .n = 1024, .k = 64, .ns = 30000.0},
                        {.batch = 32, .m = 1024, .n = 1024, .k = 64, .ns = 60000.0}};
  PnGemmPoint gemm[] = {{.m = 8 * 1024, .n = 1024, .k = 64, .ns = 25000.0},
                        {.m = 8 * 1024, .n = 1024, .k = 1024, .ns = 90000.0}};
  hw.gemm_bf16       = (PnGemmTable){.n = 2, .pts = gemm};
  PnCostSource src;
  ck_assert_double_eq_tol(pn_cost_bmm_ns(&hw, 8, 1024, 1024, 64, &src), 25000.0, 1e-9); /* no bmm table yet */
  ck_assert_int_eq(src, PN_COST_TABLE);
  hw.bmm_bf16 = (PnGemmTable){.n = 2, .pts = bmm};
  ck_assert_double_eq_tol(pn_cost_bmm_ns(&hw, 8, 1024, 1024, 64, &src), 30000.0, 1e-9);
  ck_assert_int_eq(src, PN_COST_TABLE);
  ck_assert_double_eq_tol(pn_cost_bmm_ns(&hw, 16, 1024, 1024, 64, &src), sqrt(30000.0 * 60000.0), 1e-6);
  ck_assert_int_eq(src, PN_COST_INTERPOLATED);
  ck_assert_double_eq_tol(pn_cost_bmm_ns(&hw, 8, 1024, 1024, 1024, &src), 90000.0, 1e-9);
  ck_assert_int_eq(src, PN_COST_TABLE);

  GRand *rng = g_rand_new_with_seed(11);
  for (int round = 0; round < 20; round++) {
    int n          = g_rand_int_range(rng, 1, 200);
    PnGemmPoint *p = g_new(PnGemmPoint, n);
    for (int i = 0; i < n; i++)
      p[i] = (PnGemmPoint){.m     = g_rand_int_range(rng, 1, 70000),
                           .n     = g_rand_int_range(rng, 1, 70000),
                           .k     = g_rand_int_range(rng, 1, 70000),
                           .ns    = g_rand_double_range(rng, 1e3, 1e7),
                           .batch = g_rand_int_range(rng, 0, 2)};
    PnHwProfile one = hw, batched = hw;
    one.gemm_bf16     = (PnGemmTable){.n = n, .pts = p};
    one.bmm_bf16      = (PnGemmTable){0};
    batched.gemm_bf16 = one.gemm_bf16;
    batched.bmm_bf16  = one.gemm_bf16;
    for (int q = 0; q < 100; q++) {
      const PnGemmPoint *at = &p[g_rand_int_range(rng, 0, n)];
      bool near             = g_rand_boolean(rng);
      int64_t m = near ? at->m : g_rand_int_range(rng, 1, 70000), nn = near ? at->n : g_rand_int_range(rng, 1, 70000);
      int64_t k =
          near ? at->k * g_rand_int_range(rng, 1, 3) : g_rand_int_range(rng, 1, 70000); /* on a point, or near */
      PnCostSource s1, s2;
      double plain = pn_cost_gemm_ns(&one, m, nn, k, PN_DT_BF16, &s1);
      ck_assert(pn_cost_bmm_ns(&batched, 1, m, nn, k, &s2) == plain);
      ck_assert_int_eq(s1, s2);
    }
    g_free(p);
  }
  g_rand_free(rng);
}
END_TEST

/* A PyTorch kernel of the unfused paths: the copy class's time over the kernel's ratio to a copy
 * at its sequence length. Copy curve (1e8 B, 2000 B/ns), (1e9 B, 2500 B/ns): 1e9 B copy in
 * 400000 ns. softmax_fwd's ratio (1024, 0.6), (4096, 0.4), log_x:
 *   seq 2048 (halfway in log2) -> 0.5 -> 400000 / 0.5 = 800000 ns;
 *   seq 512 (clamped)          -> 0.6 -> 666666.67 ns;   seq 8192 -> 0.4 -> 1000000 ns;
 * a kernel without a curve (dropout_bwd) -> 1: the copy's 400000 ns; and a profile without a
 * copy curve takes hbm_bytes_per_ns (3350): 1e9 / 3350 / 0.5 = 597014.9 ns at seq 2048. */
START_TEST(test_cost_torch_kernel)
{
  double cx[] = {1e8, 1e9}, cy[] = {2000.0, 2500.0};
  double sx[] = {1024, 4096}, sy[] = {0.6, 0.4};
  PnHwProfile hw                             = {.hbm_bytes_per_ns = 3350.0};
  hw.torch_kernel_vs_copy[PN_TK_SOFTMAX_FWD] = (PnCurve){.n = 2, .x = sx, .y = sy, .log_x = true};
  ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(&hw, 1e9, PN_TK_SOFTMAX_FWD, 2048), 1e9 / 3350.0 / 0.5, 1e-6);
  hw.mem_bandwidth[PN_MEM_COPY] = (PnCurve){.n = 2, .x = cx, .y = cy, .log_x = true};
  ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(&hw, 1e9, PN_TK_SOFTMAX_FWD, 2048), 800000.0, 1e-6);
  ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(&hw, 1e9, PN_TK_SOFTMAX_FWD, 512), 400000.0 / 0.6, 1e-6);
  ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(&hw, 1e9, PN_TK_SOFTMAX_FWD, 8192), 1000000.0, 1e-6);
  ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(&hw, 1e9, PN_TK_DROPOUT_BWD, 2048), 400000.0, 1e-6);
}
END_TEST

static PnHwProfile test_hw(void)
{
  PnHwProfile hw = {0};
  g_strlcpy(hw.name, "test", sizeof hw.name);
  hw.sm_count            = 132;
  hw.nvlink_bytes_per_ns = 400.0;
  hw.nic_bytes_per_ns    = 50.0;
  hw.kernel_launch_ns    = 0.0;
  return hw;
}

static PnTaskId add(PnGraph *g, PnTask t, uint32_t n_deps, const PnTaskId *deps)
{
  return pn_graph_add(g, &t, deps, n_deps);
}

static PnTask compute(uint32_t gpu, PnStream s, double work_ns)
{
  PnTask t  = mk(PN_TASK_COMPUTE, gpu, s, "gemm");
  t.work_ns = work_ns;
  t.scaling = PN_SCALE_GEMM;
  return t;
}

static PnTask delay(uint32_t gpu, PnStream s, double work_ns)
{
  PnTask t  = mk(PN_TASK_DELAY, gpu, s, "delay");
  t.work_ns = work_ns;
  return t;
}

static PnTask comm(uint32_t gpu, PnStream s, int sms, double latency_ns, double nvlink_bytes, double nic_bytes)
{
  PnTask t       = mk(PN_TASK_COMM, gpu, s, "coll");
  t.cls          = PN_CLASS_TP;
  t.sms          = (int16_t)sms;
  t.latency_ns   = latency_ns;
  t.nvlink_bytes = nvlink_bytes;
  t.nic_bytes    = nic_bytes;
  return t;
}

static PnTask p2p(uint32_t gpu, PnStream s, int sms, double latency_ns, const char *label)
{
  PnTask t     = mk(PN_TASK_P2P, gpu, s, label);
  t.cls        = PN_CLASS_PP;
  t.sms        = (int16_t)sms;
  t.latency_ns = latency_ns;
  return t;
}

static PnExecResult run_ok(const PnGraph *g, const PnHwProfile *hw, int max_connections)
{
  PnExecOptions opt = {.max_connections = max_connections};
  PnExecResult res;
  g_autoptr(GError) err = NULL;
  gboolean ok           = pn_exec_run(g, hw, &opt, &res, &err);
  ck_assert_msg(ok, "pn_exec_run failed: %s", err ? err->message : "?");
  ck_assert_uint_eq(res.times->len, pn_graph_n_tasks(g));
  return res;
}

static GError *run_err(const PnGraph *g, const PnHwProfile *hw, PnExecOptions opt)
{
  PnExecResult res;
  GError *err = NULL;
  ck_assert(!pn_exec_run(g, hw, &opt, &res, &err));
  ck_assert_ptr_nonnull(err);
  ck_assert_ptr_null(res.times);
  pn_exec_result_clear(&res);
  return err;
}

#define T(res, id) (g_array_index((res).times, PnTaskTime, (id)))
#define ck_span(res, id, s, e)                                                                                         \
  do {                                                                                                                 \
    ck_assert_int_eq(T(res, id).start_ns, (s));                                                                        \
    ck_assert_int_eq(T(res, id).end_ns, (e));                                                                          \
  } while (0)

/* A chain on one stream sums durations: 100, 200, 300 -> [0,100] [100,300] [300,600].
 * With kernel_launch_ns = 5 each kernel is 5 ns longer: [0,105] [105,310] [310,615]. */
START_TEST(test_exec_chain)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTaskId a           = add(g, compute(0, PN_STREAM_COMPUTE, 100), 0, NULL);
  PnTaskId b           = add(g, compute(0, PN_STREAM_COMPUTE, 200), 0, NULL);
  PnTaskId c           = add(g, compute(0, PN_STREAM_COMPUTE, 300), 0, NULL);
  PnExecResult r       = run_ok(g, &hw, 1);
  ck_span(r, a, 0, 100);
  ck_span(r, b, 100, 300);
  ck_span(r, c, 300, 600);
  ck_assert_int_eq(r.makespan_ns, 600);
  ck_assert_uint_gt(r.events, 0);
  pn_exec_result_clear(&r);
  hw.kernel_launch_ns = 5;
  r                   = run_ok(g, &hw, 8);
  ck_span(r, a, 0, 105);
  ck_span(r, b, 105, 310);
  ck_span(r, c, 310, 615);
  pn_exec_result_clear(&r);
}
END_TEST

/* Two streams run concurrently.
 * (1) compute 1000 (compute stream) beside a DELAY 1000 (TP stream): the delay holds no SMs,
 *     both [0,1000].
 * (2) two compute 1000 on two streams of one GPU: 66 SMs each -> rate 66/132 = 0.5 -> both
 *     [0,2000].
 * (3) the same on two GPUs: [0,1000] each. */
START_TEST(test_exec_streams_concurrent)
{
  PnHwProfile hw        = test_hw();
  g_autoptr(PnGraph) g1 = pn_graph_new(1);
  PnTaskId a            = add(g1, compute(0, PN_STREAM_COMPUTE, 1000), 0, NULL);
  PnTaskId b            = add(g1, delay(0, PN_STREAM_TP_COMM, 1000), 0, NULL);
  PnExecResult r        = run_ok(g1, &hw, 8);
  ck_span(r, a, 0, 1000);
  ck_span(r, b, 0, 1000);
  pn_exec_result_clear(&r);

  g_autoptr(PnGraph) g2 = pn_graph_new(2);
  a                     = add(g2, compute(0, PN_STREAM_COMPUTE, 1000), 0, NULL);
  b                     = add(g2, compute(0, PN_STREAM_SHARED_EXPERT, 1000), 0, NULL);
  r                     = run_ok(g2, &hw, 8);
  ck_span(r, a, 0, 2000);
  ck_span(r, b, 0, 2000);
  pn_exec_result_clear(&r);

  g_autoptr(PnGraph) g3 = pn_graph_new(2);
  a                     = add(g3, compute(0, PN_STREAM_COMPUTE, 1000), 0, NULL);
  b                     = add(g3, compute(1, PN_STREAM_COMPUTE, 1000), 0, NULL);
  r                     = run_ok(g3, &hw, 1);
  ck_span(r, a, 0, 1000);
  ck_span(r, b, 0, 1000);
  pn_exec_result_clear(&r);
}
END_TEST

/* A dependency across streams delays: A compute 500 (compute stream); B DELAY 100 (TP stream)
 * waits for A -> [500,600]; C DELAY 50 (DP stream), no deps -> [0,50]. A dependency across GPUs
 * too: D DELAY 10 on GPU 1 after A -> [500,510]. */
START_TEST(test_exec_dependency)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(2);
  PnTaskId a           = add(g, compute(0, PN_STREAM_COMPUTE, 500), 0, NULL);
  PnTaskId b           = add(g, delay(0, PN_STREAM_TP_COMM, 100), 1, &a);
  PnTaskId c           = add(g, delay(0, PN_STREAM_DP_COMM, 50), 0, NULL);
  PnTaskId d           = add(g, delay(1, PN_STREAM_COMPUTE, 10), 1, &a);
  PnExecResult r       = run_ok(g, &hw, 8);
  ck_span(r, a, 0, 500);
  ck_span(r, b, 500, 600);
  ck_span(r, c, 0, 50);
  ck_span(r, d, 500, 510);
  ck_assert_int_eq(r.makespan_ns, 600);
  pn_exec_result_clear(&r);
}
END_TEST

/* CUDA_DEVICE_MAX_CONNECTIONS. Issue order X, A, B on GPU 0:
 *   X: DELAY 1000 on the compute stream (0); A: DELAY 100 on TP (1), waits for X;
 *   B: DELAY 100 on DP (2), no deps.
 * max_connections = 1: one queue X, A, B. A cannot be dispatched before 1000, and B is behind A:
 *   B [1000,1100] (false serialization). max_connections = 8: streams use queues 0, 1, 2 and B
 *   runs at once: [0,100]. A is [1000,1100] either way.
 * max_connections = 2 maps stream s to queue s % 2: with B on PP_SEND (3), A (1) and B (3) share
 *   queue 1 -> B [1000,1100]; with B on DP (2, queue 0) it runs at once. */
START_TEST(test_exec_max_connections)
{
  PnHwProfile hw = test_hw();
  for (int variant = 0; variant < 2; variant++) {
    PnStream bs          = variant == 0 ? PN_STREAM_DP_COMM : PN_STREAM_PP_SEND;
    g_autoptr(PnGraph) g = pn_graph_new(1);
    PnTaskId x           = add(g, delay(0, PN_STREAM_COMPUTE, 1000), 0, NULL);
    PnTaskId a           = add(g, delay(0, PN_STREAM_TP_COMM, 100), 1, &x);
    PnTaskId b           = add(g, delay(0, bs, 100), 0, NULL);
    PnExecResult r       = run_ok(g, &hw, 1);
    ck_span(r, a, 1000, 1100);
    ck_span(r, b, 1000, 1100);
    pn_exec_result_clear(&r);
    r = run_ok(g, &hw, 8);
    ck_span(r, a, 1000, 1100);
    ck_span(r, b, 0, 100);
    pn_exec_result_clear(&r);
    r = run_ok(g, &hw, 2);
    if (variant == 0)
      ck_span(r, b, 0, 100);
    else
      ck_span(r, b, 1000, 1100);
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* Head of queue means dispatched, not ended: with max_connections = 1, A (DELAY 1000, compute
 * stream) then B (DELAY 10, TP stream) share the queue, yet B starts at 0 because A was
 * dispatched at 0. */
START_TEST(test_exec_queue_dispatch_not_end)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTaskId a           = add(g, delay(0, PN_STREAM_COMPUTE, 1000), 0, NULL);
  PnTaskId b           = add(g, delay(0, PN_STREAM_TP_COMM, 10), 0, NULL);
  PnExecResult r       = run_ok(g, &hw, 1);
  ck_span(r, a, 0, 1000);
  ck_span(r, b, 0, 10);
  pn_exec_result_clear(&r);
}
END_TEST

/* A COMM holding 32 of 132 SMs slows a GEMM beside it.
 * COMM M: 32 SMs, no latency, 200000 NVLink bytes at 400 bytes/ns -> [0,500].
 * GEMM C: 1000 ns of work. Uncalibrated curve: rate (132 - 32)/132 = 100/132 on [0,500]: it
 *   does 500 * 100/132 = 378.79 ns of work; 621.21 left at full speed -> ends 500 + 622 = 1122.
 * Calibrated gemm curve {(100, 0.9), (132, 1.0)}: rate 0.9 on [0,500] -> 450 done, 550 left ->
 *   ends 1050. A memory-bound kernel ignores the gemm curve (its own curve is empty): 1122.
 * A COMM with sms = 0 leaves the GEMM alone: C [0,1000]. */
START_TEST(test_exec_comm_sms_slow_compute)
{
  PnHwProfile hw = test_hw();
  for (int variant = 0; variant < 4; variant++) {
    double x[] = {100, 132}, y[] = {0.9, 1.0};
    hw.gemm_sm_scaling   = variant == 1 || variant == 2 ? (PnCurve){.n = 2, .x = x, .y = y} : (PnCurve){0};
    g_autoptr(PnGraph) g = pn_graph_new(1);
    PnTask ct            = compute(0, PN_STREAM_COMPUTE, 1000);
    if (variant == 2)
      ct.scaling = PN_SCALE_MEMORY;
    PnTaskId c     = add(g, ct, 0, NULL);
    PnTaskId m     = add(g, comm(0, PN_STREAM_TP_COMM, variant == 3 ? 0 : 32, 0, 200000, 0), 0, NULL);
    PnExecResult r = run_ok(g, &hw, 8);
    ck_span(r, m, 0, 500);
    PnTimeNs expect[] = {1122, 1050, 1122, 1000};
    ck_span(r, c, 0, expect[variant]);
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* What the `contention` callback of an observer reports, per GPU and class; each GPU's intervals
 * must come in time order without overlapping. open/close are required of an observer: no-ops. */
typedef struct {
  double lost_ns[3][PN_CLASS_N];
  PnTimeNs last_t1[3];
  int reports;
} LostObs;

static void lost_obs_open(void *ctx, PnTaskId task, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag,
                          PnTimeNs t)
{
}

static void lost_obs_close(void *ctx, PnTaskId task, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag,
                           PnTimeNs start, PnTimeNs t)
{
}

static void lost_obs_contention(void *ctx, uint32_t gpu, PnTimeNs t0, PnTimeNs t1, const double lost_ns[PN_CLASS_N])
{
  LostObs *o = ctx;
  ck_assert_int_lt(t0, t1);
  ck_assert_int_ge(t0, o->last_t1[gpu]);
  o->last_t1[gpu] = t1;
  o->reports++;
  for (int c = 0; c < PN_CLASS_N; c++) {
    ck_assert(lost_ns[c] >= 0.0);
    o->lost_ns[gpu][c] += lost_ns[c];
  }
}

static LostObs run_lost(const PnGraph *g, const PnHwProfile *hw, PnExecResult *res)
{
  LostObs o          = {0};
  PnExecObserver obs = {.ctx = &o, .open = lost_obs_open, .close = lost_obs_close, .contention = lost_obs_contention};
  PnExecOptions opt  = {.max_connections = 8, .observer = &obs};
  ck_assert(pn_exec_run(g, hw, &opt, res, NULL));
  return o;
}

/* Compute lost to SM contention (exec_kernels.c), linear curves (s SMs: rate s/132):
 * (1) GEMM C, 1000 ns of work, beside a TP collective A holding 33 SMs on [0,400] (latency only,
 *     no bytes) and a DP collective B holding 22 SMs on [200,600] (after a 200 ns delay):
 *       [0,200)   99 SMs free: rate 0.75, lost 200 * (1 - 0.75) = 50, all TP;
 *       [200,400) 77 free: rate 7/12, lost 200 * 55/132 = 83.33, split 33:22 -> TP 50, DP 33.33;
 *       [400,600) 110 free: rate 5/6, lost 200 * 22/132 = 33.33, all DP;
 *     done by 600: 150 + 116.67 + 166.67 = 433.33, the rest alone: C ends at 600 + 567 = 1167.
 *     TP 100, DP 66.67, in all 166.67 (= 1166.67 - 1000: a lone kernel loses exactly what it is
 *     late by).
 * (2) The same with C held to 66 SMs (sm_limit): 99 or more free all along, it runs at 0.5 as it
 *     would with every SM free: nothing lost.
 * (3) Two unlimited GEMMs (1000 ns each, two streams) beside A alone: on [0,400) 49.5 SMs each,
 *     rate 0.375, against 66 each (0.5) with A's SMs free: the GPU loses 400 * (1 - 0.75 / 1.0) =
 *     100, all TP (each kernel is 25% slow: counted once for the GPU, not once per kernel). */
START_TEST(test_exec_lost_to_contention)
{
  PnHwProfile hw = test_hw();
  for (int variant = 0; variant < 3; variant++) {
    g_autoptr(PnGraph) g = pn_graph_new(1);
    PnTask ct            = compute(0, PN_STREAM_COMPUTE, 1000);
    if (variant == 1)
      ct.sms = 66;
    PnTaskId c = add(g, ct, 0, NULL);
    if (variant == 2)
      add(g, compute(0, PN_STREAM_SHARED_EXPERT, 1000), 0, NULL);
    add(g, comm(0, PN_STREAM_TP_COMM, 33, 400, 0, 0), 0, NULL);
    if (variant < 2) {
      add(g, delay(0, PN_STREAM_DP_COMM, 200), 0, NULL);
      PnTask b = comm(0, PN_STREAM_DP_COMM, 22, 400, 0, 0);
      b.cls    = PN_CLASS_DP;
      add(g, b, 0, NULL);
    }
    PnExecResult r;
    LostObs o   = run_lost(g, &hw, &r);
    double tp[] = {100.0, 0.0, 100.0}, dp[] = {200.0 / 3.0, 0.0, 0.0};
    ck_assert_double_eq_tol(o.lost_ns[0][PN_CLASS_TP], tp[variant], 1e-9);
    ck_assert_double_eq_tol(o.lost_ns[0][PN_CLASS_DP], dp[variant], 1e-9);
    for (int k = 0; k < PN_CLASS_N; k++)
      if (k != PN_CLASS_TP && k != PN_CLASS_DP)
        ck_assert_double_eq(o.lost_ns[0][k], 0.0);
    ck_assert_int_eq(o.reports == 0, variant == 1); /* only intervals that lost something */
    PnTimeNs end[] = {1167, 1000 * 132 / 66, 2100};
    ck_assert_int_eq(T(r, c).end_ns, end[variant]);
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* sm_limit caps a kernel and the rest goes to the others (water-filling). C1: 1000 ns with
 * sm_limit 32; C2: 1000 ns unlimited, another stream. Fair share 66 > 32, so C1 gets 32 and C2
 * the other 100: C2 rate 100/132 -> ends 1320; C1 stays at 32/132 even alone -> 1000*132/32 =
 * 4125. */
START_TEST(test_exec_sm_limit)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTask lim           = compute(0, PN_STREAM_COMPUTE, 1000);
  lim.sms              = 32;
  PnTaskId c1          = add(g, lim, 0, NULL);
  PnTaskId c2          = add(g, compute(0, PN_STREAM_SHARED_EXPERT, 1000), 0, NULL);
  PnExecResult r       = run_ok(g, &hw, 8);
  ck_span(r, c2, 0, 1320);
  ck_span(r, c1, 0, 4125);
  pn_exec_result_clear(&r);
}
END_TEST

/* Link sharing through the max-min solver.
 * (1) one COMM, 200000 NVLink bytes at 400 bytes/ns -> [0,500]; with latency 300 -> [0,800].
 * (2) two such COMMs on two streams of one GPU share NVLink tx/rx: 200 bytes/ns each -> both
 *     [0,1000], twice as long as alone.
 * (3) bounded at max_bytes_per_ns = 100 -> 2000 ns.
 * (4) NVLink 200000 and NIC 50000 bytes: nominal unit = NVLink byte, NIC coefficient 0.25;
 *     NIC level 50/0.25 = 200 < NVLink 400 -> 200000/200 = 1000 ns (NIC-bound: 50000 B / 50).
 * (5) no bytes at all: ends after its latency, [0,70]. */
START_TEST(test_exec_comm_bandwidth)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTaskId a           = add(g, comm(0, PN_STREAM_TP_COMM, 0, 0, 200000, 0), 0, NULL);
  PnTaskId b           = add(g, comm(0, PN_STREAM_TP_COMM, 0, 300, 200000, 0), 0, NULL);
  PnExecResult r       = run_ok(g, &hw, 8);
  ck_span(r, a, 0, 500);
  ck_span(r, b, 500, 1300);
  pn_exec_result_clear(&r);

  g_autoptr(PnGraph) g2 = pn_graph_new(1);
  a                     = add(g2, comm(0, PN_STREAM_TP_COMM, 0, 0, 200000, 0), 0, NULL);
  b                     = add(g2, comm(0, PN_STREAM_DP_COMM, 0, 0, 200000, 0), 0, NULL);
  r                     = run_ok(g2, &hw, 8);
  ck_span(r, a, 0, 1000);
  ck_span(r, b, 0, 1000);
  pn_exec_result_clear(&r);

  g_autoptr(PnGraph) g3 = pn_graph_new(1);
  PnTask bt             = comm(0, PN_STREAM_TP_COMM, 0, 0, 200000, 0);
  bt.max_bytes_per_ns   = 100;
  a                     = add(g3, bt, 0, NULL);
  b                     = add(g3, comm(0, PN_STREAM_DP_COMM, 0, 0, 200000, 50000), 0, NULL);
  PnTaskId c            = add(g3, comm(0, PN_STREAM_CP_COMM, 0, 70, 0, 0), 0, NULL);
  r                     = run_ok(g3, &hw, 8);
  /* a (bounded at 100) and b (NIC-bound at 200) share NVLink: 100 + 200 <= 400, no contention. */
  ck_span(r, a, 0, 2000);
  ck_span(r, b, 0, 1000);
  ck_span(r, c, 0, 70);
  pn_exec_result_clear(&r);
}
END_TEST

/* A P2P pair. GPU 0: S sends (latency 100). GPU 1: a DELAY 300, then R receives on the same
 * stream (latency 100). The transfer needs both sides started (300), waits the latency (400), and
 * moves 40000 bytes over NVLink at 400 bytes/ns (100 ns): both end at 500.
 * S [0,500], R [300,500]. Over the NIC (50 bytes/ns): 800 ns -> both end at 1200.
 * S holds 32 SMs from 0 until its end at 500: a GEMM of 1000 on GPU 0 runs at 100/132 meanwhile
 * and ends at 1122 (as in test_exec_comm_sms_slow_compute). */
START_TEST(test_exec_p2p_pair)
{
  PnHwProfile hw = test_hw();
  for (int nic = 0; nic < 2; nic++) {
    g_autoptr(PnGraph) g = pn_graph_new(2);
    PnTaskId c           = add(g, compute(0, PN_STREAM_COMPUTE, 1000), 0, NULL);
    PnTaskId s           = add(g, p2p(0, PN_STREAM_PP_SEND, 32, 100, "send"), 0, NULL);
    PnTaskId d           = add(g, delay(1, PN_STREAM_PP_RECV, 300), 0, NULL);
    PnTaskId rv          = add(g, p2p(1, PN_STREAM_PP_RECV, 0, 100, "recv"), 0, NULL);
    pn_graph_pair_p2p(g, s, rv, 40000, nic);
    PnExecResult r = run_ok(g, &hw, 1);
    PnTimeNs end   = nic ? 1200 : 500;
    ck_span(r, d, 0, 300);
    ck_span(r, s, 0, end);
    ck_span(r, rv, 300, end);
    if (!nic)
      ck_span(r, c, 0, 1122);
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* batch_isend_irecv: X on GPU 0 and Y on GPU 1 each carry two legs, forward X->Y 40000 bytes and
 * backward Y->X 80000 bytes, listed in opposite orders on the two sides. The legs use different
 * resources (GPU 0 tx + GPU 1 rx, GPU 1 tx + GPU 0 rx): forward 100 ns, backward 200 ns; latency
 * 50 -> forward done at 150, backward at 250; both tasks end at 250, no deadlock.
 * Two legs sharing a resource: Z on GPU 0 sends 40000 bytes to GPU 1 and to GPU 2; both leave
 * through GPU 0's NVLink tx at 200 bytes/ns -> 200 ns each, Z ends at 200. */
START_TEST(test_exec_p2p_batched)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(2);
  PnTaskId x           = add(g, p2p(0, PN_STREAM_PP_SEND, 0, 50, "x"), 0, NULL);
  PnTaskId y           = add(g, p2p(1, PN_STREAM_PP_SEND, 0, 50, "y"), 0, NULL);
  pn_graph_pair_p2p(g, x, y, 40000, false);
  pn_graph_pair_p2p(g, y, x, 80000, false);
  PnP2pLeg *yl   = pn_graph_legs(g, pn_graph_task(g, y));
  PnP2pLeg tmp   = yl[0];
  yl[0]          = yl[1];
  yl[1]          = tmp;
  PnExecResult r = run_ok(g, &hw, 1);
  ck_span(r, x, 0, 250);
  ck_span(r, y, 0, 250);
  pn_exec_result_clear(&r);

  g_autoptr(PnGraph) g2 = pn_graph_new(3);
  PnTaskId z            = add(g2, p2p(0, PN_STREAM_PP_SEND, 0, 0, "z"), 0, NULL);
  PnTaskId r1           = add(g2, p2p(1, PN_STREAM_PP_RECV, 0, 0, "r1"), 0, NULL);
  PnTaskId r2           = add(g2, p2p(2, PN_STREAM_PP_RECV, 0, 0, "r2"), 0, NULL);
  pn_graph_pair_p2p(g2, z, r1, 40000, false);
  pn_graph_pair_p2p(g2, z, r2, 40000, false);
  r = run_ok(g2, &hw, 8);
  ck_span(r, z, 0, 200);
  ck_span(r, r1, 0, 200);
  ck_span(r, r2, 0, 200);
  pn_exec_result_clear(&r);
}
END_TEST

/* Both GPUs post their receive first on one stream, then their send: GPU 0 A = recv from D,
 * C = send to B; GPU 1 B = recv from C, D = send to A. A waits for D, D for B (stream order),
 * B for C, C for A: a deadlock, reported with the first stuck task (A, id 0). */
START_TEST(test_exec_deadlock)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(2);
  PnTask ta            = p2p(0, PN_STREAM_PP_SEND, 0, 0, "recv_fwd");
  ta.microbatch        = 3;
  PnTaskId a           = add(g, ta, 0, NULL);
  PnTaskId c           = add(g, p2p(0, PN_STREAM_PP_SEND, 0, 0, "send_bwd"), 0, NULL);
  PnTaskId b           = add(g, p2p(1, PN_STREAM_PP_SEND, 0, 0, "recv_bwd"), 0, NULL);
  PnTaskId d           = add(g, p2p(1, PN_STREAM_PP_SEND, 0, 0, "send_fwd"), 0, NULL);
  pn_graph_pair_p2p(g, d, a, 1000, false);
  pn_graph_pair_p2p(g, c, b, 1000, false);
  g_autoptr(GError) err = run_err(g, &hw, (PnExecOptions){.max_connections = 8});
  ck_assert(g_error_matches(err, PN_EXEC_ERROR, PN_EXEC_ERROR_DEADLOCK));
  ck_assert_msg(strstr(err->message, "task 0 'recv_fwd' (gpu 0, stream 3)") != NULL, "%s", err->message);
  ck_assert_msg(strstr(err->message, "microbatch 3") != NULL, "%s", err->message);
  ck_assert_msg(strstr(err->message, "peer task 3") != NULL, "%s", err->message);
}
END_TEST

/* Invalid graphs and options are GError PN_EXEC_ERROR_INVALID, not crashes. */
START_TEST(test_exec_invalid)
{
  PnHwProfile hw    = test_hw();
  PnExecOptions opt = {.max_connections = 8};
  for (int variant = 0; variant < 7; variant++) {
    g_autoptr(PnGraph) g = pn_graph_new(2);
    PnTaskId a           = add(g, compute(0, PN_STREAM_COMPUTE, 10), 0, NULL);
    PnTaskId s           = add(g, p2p(0, PN_STREAM_PP_SEND, 0, 0, "s"), 0, NULL);
    PnTaskId r           = add(g, p2p(1, PN_STREAM_PP_RECV, 0, 0, "r"), 0, NULL);
    pn_graph_pair_p2p(g, s, r, 100, false);
    PnExecOptions o = opt;
    switch (variant) {
    case 0:
      pn_graph_task(g, a)->stream = 20;
      break;
    case 1:
      pn_graph_task(g, a)->work_ns = NAN;
      break;
    case 2:
      pn_graph_task(g, a)->gpu = 2;
      break;
    case 3:
      pn_graph_task(g, r)->n_legs = 0;
      break;
    case 4:
      pn_graph_legs(g, pn_graph_task(g, r))[0].bytes = 99;
      break;
    case 5:
      o.max_connections = 0;
      break;
    case 6: {
      PnTaskId later = 2;
      pn_graph_append_raw_dep(g, later);
      pn_graph_task(g, a)->dep_first = 0;
      pn_graph_task(g, a)->dep_count = 1;
      break;
    }
    }
    g_autoptr(GError) err = run_err(g, &hw, o);
    ck_assert_msg(g_error_matches(err, PN_EXEC_ERROR, PN_EXEC_ERROR_INVALID), "variant %d: %s", variant, err->message);
  }
}
END_TEST

START_TEST(test_exec_invalid_dep_forward)
{
  /* A dependency on a later task (only possible by editing the arrays): invalid. */
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(1);
  add(g, compute(0, PN_STREAM_COMPUTE, 10), 0, NULL);
  PnTaskId b   = add(g, compute(0, PN_STREAM_COMPUTE, 10), 0, NULL);
  PnTaskId fwd = 1;
  pn_graph_append_raw_dep(g, fwd);
  pn_graph_task(g, b)->dep_first = 0;
  pn_graph_task(g, b)->dep_count = 1;
  g_autoptr(GError) err          = run_err(g, &hw, (PnExecOptions){.max_connections = 1});
  ck_assert(g_error_matches(err, PN_EXEC_ERROR, PN_EXEC_ERROR_INVALID));
}
END_TEST

/* A budget too small for the graph: PN_EXEC_ERROR_BUDGET. 100 chained delays need > 100 events. */
START_TEST(test_exec_budget)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(1);
  for (int i = 0; i < 100; i++)
    add(g, delay(0, PN_STREAM_COMPUTE, 10), 0, NULL);
  g_autoptr(GError) err = run_err(g, &hw, (PnExecOptions){.max_connections = 1, .event_budget = 50});
  ck_assert(g_error_matches(err, PN_EXEC_ERROR, PN_EXEC_ERROR_BUDGET));
  PnExecResult r = run_ok(g, &hw, 1);
  ck_assert_int_eq(r.makespan_ns, 1000);
  pn_exec_result_clear(&r);
}
END_TEST

/* Absurd durations saturate at the 2^62 ns horizon instead of overflowing the clock: three
 * 4e18 ns delays in a row (the second would end at 8e18, the third past INT64_MAX), a flow of
 * 1e30 bytes over a 1e-300 bytes/ns link, and a 1e300 ns kernel all fail with HORIZON, naming
 * the task. A chain just below the horizon still runs. */
START_TEST(test_exec_horizon)
{
  PnHwProfile hw = test_hw();
  {
    g_autoptr(PnGraph) g = pn_graph_new(1);
    for (int i = 0; i < 3; i++)
      add(g, delay(0, PN_STREAM_COMPUTE, 4e18), 0, NULL);
    g_autoptr(GError) err = run_err(g, &hw, (PnExecOptions){.max_connections = 1});
    ck_assert(g_error_matches(err, PN_EXEC_ERROR, PN_EXEC_ERROR_HORIZON));
    ck_assert_msg(strstr(err->message, "task 1 'delay'") != NULL, "%s", err->message);
  }
  {
    PnHwProfile slow         = test_hw();
    slow.nvlink_bytes_per_ns = 1e-300;
    g_autoptr(PnGraph) g     = pn_graph_new(1);
    add(g, comm(0, PN_STREAM_TP_COMM, 0, 0.0, 1e30, 0.0), 0, NULL);
    add(g, comm(0, PN_STREAM_TP_COMM, 0, 0.0, 1e30, 0.0), 0, NULL);
    g_autoptr(GError) err = run_err(g, &slow, (PnExecOptions){.max_connections = 8});
    ck_assert(g_error_matches(err, PN_EXEC_ERROR, PN_EXEC_ERROR_HORIZON));
  }
  {
    g_autoptr(PnGraph) g = pn_graph_new(1);
    add(g, compute(0, PN_STREAM_COMPUTE, 1e300), 0, NULL);
    g_autoptr(GError) err = run_err(g, &hw, (PnExecOptions){.max_connections = 8});
    ck_assert(g_error_matches(err, PN_EXEC_ERROR, PN_EXEC_ERROR_HORIZON));
  }
  {
    g_autoptr(PnGraph) g = pn_graph_new(1);
    add(g, delay(0, PN_STREAM_COMPUTE, 2e18), 0, NULL);
    add(g, delay(0, PN_STREAM_COMPUTE, 2e18), 0, NULL);
    PnExecResult r = run_ok(g, &hw, 1);
    ck_assert_int_eq(r.makespan_ns, 4000000000000000000LL);
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* An empty graph runs in no time; NULL options mean the defaults. */
START_TEST(test_exec_empty)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(4);
  PnExecResult r;
  ck_assert(pn_exec_run(g, &hw, NULL, &r, NULL));
  ck_assert_int_eq(r.makespan_ns, 0);
  ck_assert_uint_eq(r.times->len, 0);
  pn_exec_result_clear(&r);
  pn_exec_result_clear(&r);
}
END_TEST

/* Random graphs: 3 GPUs, 400 tasks of every kind (P2P pairs added back to back, so no deadlock),
 * random streams and up to 3 dependencies. For max_connections 1, 2 and 8, check:
 *  - every task ran, start <= end, no task starts before its dependencies end;
 *  - stream order: a task starts after the previous task of its stream ended;
 *  - each hardware queue dispatches in issue order (start times non-decreasing);
 *  - no speed-up: a compute task lasts at least work_ns + launch, a COMM at least its latency
 *    plus its bytes over the link bandwidth, a DELAY exactly ceil(work_ns);
 *  - determinism: a second run gives byte-identical times. */
/* Appends random tasks to g (3 GPUs) until it has n_target: compute, delay, COMM and paired P2P
 * tasks on random streams with random earlier dependencies. */
static void random_tasks(GRand *rng, PnGraph *g, uint32_t n_target)
{
  while (pn_graph_n_tasks(g) < n_target) {
    uint32_t n   = pn_graph_n_tasks(g);
    uint32_t gpu = (uint32_t)g_rand_int_range(rng, 0, 3);
    PnStream st  = (PnStream)g_rand_int_range(rng, 0, PN_STREAM_N);
    PnTaskId deps[3];
    uint32_t nd = n > 0 ? (uint32_t)g_rand_int_range(rng, 0, 4) : 0;
    for (uint32_t k = 0; k < nd; k++)
      deps[k] = (PnTaskId)g_rand_int_range(rng, 0, (gint32)n);
    int kind = g_rand_int_range(rng, 0, 10);
    if (kind < 4) {
      PnTask t  = compute(gpu, st, g_rand_double_range(rng, 1, 1000));
      t.scaling = (uint8_t)g_rand_int_range(rng, 0, 2);
      t.sms     = g_rand_int_range(rng, 0, 3) == 0 ? (int16_t)g_rand_int_range(rng, 8, 133) : 0;
      add(g, t, nd, deps);
    } else if (kind < 6) {
      add(g, delay(gpu, st, g_rand_double_range(rng, 0, 300)), nd, deps);
    } else if (kind < 9) {
      PnTask t           = comm(gpu, st, g_rand_int_range(rng, 0, 33), g_rand_double_range(rng, 0, 50),
                      g_rand_int_range(rng, 0, 4) ? g_rand_double_range(rng, 0, 1e5) : 0,
                      g_rand_int_range(rng, 0, 2) ? g_rand_double_range(rng, 0, 2e4) : 0);
      t.max_bytes_per_ns = g_rand_int_range(rng, 0, 3) == 0 ? g_rand_double_range(rng, 50, 500) : 0;
      add(g, t, nd, deps);
    } else {
      uint32_t peer = (gpu + (uint32_t)g_rand_int_range(rng, 1, 3)) % 3;
      PnTask s      = p2p(gpu, PN_STREAM_PP_SEND, g_rand_int_range(rng, 0, 9), g_rand_double_range(rng, 0, 40), "s");
      s.max_bytes_per_ns = g_rand_int_range(rng, 0, 2) ? 100 : 0;
      PnTaskId sid       = add(g, s, nd, deps);
      PnTaskId rid       = add(g, p2p(peer, PN_STREAM_PP_RECV, 4, 20, "r"), nd, deps); /* deps all < sid */
      pn_graph_pair_p2p(g, sid, rid, g_rand_double_range(rng, 0, 5e4), g_rand_int_range(rng, 0, 2));
    }
  }
}

START_TEST(test_exec_property_random)
{
  PnHwProfile hw      = test_hw();
  hw.kernel_launch_ns = 3;
  double cx[] = {16, 66, 132}, cy[] = {0.2, 0.6, 1.0};
  hw.gemm_sm_scaling = (PnCurve){.n = 3, .x = cx, .y = cy};
  GRand *rng         = g_rand_new_with_seed(2024);
  for (int inst = 0; inst < 30; inst++) {
    g_autoptr(PnGraph) g = pn_graph_new(3);
    random_tasks(rng, g, 400);
    int conns[] = {1, 2, 8};
    for (int ci = 0; ci < 3; ci++) {
      int c           = conns[ci];
      PnExecResult r  = run_ok(g, &hw, c);
      PnExecResult r2 = run_ok(g, &hw, c);
      ck_assert_int_eq(r.makespan_ns, r2.makespan_ns);
      ck_assert_int_eq(memcmp(r.times->data, r2.times->data, r.times->len * sizeof(PnTaskTime)), 0);
      PnTaskId last_stream[3][PN_STREAM_N];
      PnTimeNs last_queue[3][PN_STREAM_N];
      memset(last_stream, 0xff, sizeof last_stream);
      for (int gq = 0; gq < 3; gq++)
        for (int q = 0; q < PN_STREAM_N; q++)
          last_queue[gq][q] = 0;
      uint32_t n = pn_graph_n_tasks(g);
      for (PnTaskId t = 0; t < n; t++) {
        const PnTask *tk = pn_graph_task(g, t);
        PnTaskTime tt    = T(r, t);
        ck_assert_int_ge(tt.start_ns, 0);
        ck_assert_int_ge(tt.end_ns, tt.start_ns);
        ck_assert_int_le(tt.end_ns, r.makespan_ns);
        for (uint32_t k = 0; k < tk->dep_count; k++)
          ck_assert_int_ge(tt.start_ns, T(r, pn_graph_deps(g)[tk->dep_first + k]).end_ns);
        PnTaskId prev = last_stream[tk->gpu][tk->stream];
        if (prev != PN_TASK_NONE)
          ck_assert_int_ge(tt.start_ns, T(r, prev).end_ns);
        last_stream[tk->gpu][tk->stream] = t;
        int q                            = c == 1 ? 0 : tk->stream % c;
        ck_assert_int_ge(tt.start_ns, last_queue[tk->gpu][q]);
        last_queue[tk->gpu][q] = tt.start_ns;
        double dur             = (double)(tt.end_ns - tt.start_ns);
        if (tk->kind == PN_TASK_COMPUTE)
          ck_assert(dur >= tk->work_ns + hw.kernel_launch_ns - 1e-6);
        else if (tk->kind == PN_TASK_DELAY)
          ck_assert_int_eq(tt.end_ns - tt.start_ns, (PnTimeNs)ceil(tk->work_ns - 1e-6));
        else if (tk->kind == PN_TASK_COMM)
          ck_assert(dur >= ceil(tk->latency_ns - 1e-6) +
                               fmax(tk->nvlink_bytes / hw.nvlink_bytes_per_ns, tk->nic_bytes / hw.nic_bytes_per_ns) -
                               1e-6);
      }
      pn_exec_result_clear(&r);
      pn_exec_result_clear(&r2);
    }
  }
  g_rand_free(rng);
}
END_TEST

/* Kernel chains (exec_kernels.c): kernels issued back to back on one stream, with nothing between
 * them that another task waits for, run as one chain; the times are those of the kernels run one
 * by one. Here, with 8 hardware queues (the compute and TP streams dispatch independently), no
 * curves (a kernel with s SMs runs at s/132) and no launch time:
 *   GPU 0 compute: A (100 ns), B (50 ns, sm_limit 66), C (30 ns), back to back;
 *   GPU 0 TP:      a 150 ns delay, then a collective holding 66 SMs for its 100 ns latency.
 *   A runs alone at full speed: [0, 100]. B is held to its 66 SMs, rate 0.5: 100 ns, [100, 200];
 *   the collective takes 66 SMs at 150, which leaves B its 66 (it is not below the 66 free, so
 *   the shared curve applies, also 0.5). C starts at 200 on the 66 free SMs, rate 0.5: by 250 it
 *   has done 25 of its 30 ns; the collective ends at 250 and C finishes the last 5 at full speed:
 *   [200, 255]. The same times unfused, with more events (each kernel's own completion). */
START_TEST(test_exec_chain_times)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTask b             = compute(0, PN_STREAM_COMPUTE, 50);
  b.sms                = 66;
  PnTaskId ia          = add(g, compute(0, PN_STREAM_COMPUTE, 100), 0, NULL);
  PnTaskId ib          = add(g, b, 0, NULL);
  PnTaskId ic          = add(g, compute(0, PN_STREAM_COMPUTE, 30), 0, NULL);
  add(g, delay(0, PN_STREAM_TP_COMM, 150), 0, NULL);
  PnTaskId icoll = add(g, comm(0, PN_STREAM_TP_COMM, 66, 100, 0, 0), 0, NULL);
  PnExecResult r[2];
  for (int u = 0; u < 2; u++) {
    PnExecOptions opt = {.max_connections = 8, .unfused = u == 1};
    ck_assert(pn_exec_run(g, &hw, &opt, &r[u], NULL));
    ck_assert_int_eq(T(r[u], ia).start_ns, 0);
    ck_assert_int_eq(T(r[u], ia).end_ns, 100);
    ck_assert_int_eq(T(r[u], ib).start_ns, 100);
    ck_assert_int_eq(T(r[u], ib).end_ns, 200);
    ck_assert_int_eq(T(r[u], ic).start_ns, 200);
    ck_assert_int_eq(T(r[u], ic).end_ns, 255);
    ck_assert_int_eq(T(r[u], icoll).start_ns, 150);
    ck_assert_int_eq(T(r[u], icoll).end_ns, 250);
  }
  ck_assert_uint_lt(r[0].events, r[1].events);
  pn_exec_result_clear(&r[0]);
  pn_exec_result_clear(&r[1]);
}
END_TEST

/* What an observer sees, per GPU: the time during which some compute task is open, and the
 * number of closes of each task (a chain's kernels close as one). */
typedef struct {
  int open_compute[3];
  PnTimeNs since[3], busy_ns[3], last_t;
  uint32_t *closes;
  LostObs lost;
} ChainObs;

static void chain_obs_open(void *ctx, PnTaskId task, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag,
                           PnTimeNs t)
{
  ChainObs *o = ctx;
  ck_assert_int_ge(t, o->last_t);
  o->last_t = t;
  if (kind == PN_TASK_COMPUTE && o->open_compute[gpu]++ == 0)
    o->since[gpu] = t;
}

static void chain_obs_close(void *ctx, PnTaskId task, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag,
                            PnTimeNs start, PnTimeNs t)
{
  ChainObs *o = ctx;
  ck_assert_int_ge(t, o->last_t);
  o->last_t = t;
  o->closes[task]++;
  if (kind == PN_TASK_COMPUTE && --o->open_compute[gpu] == 0)
    o->busy_ns[gpu] += t - o->since[gpu];
}

static void chain_obs_contention(void *ctx, uint32_t gpu, PnTimeNs t0, PnTimeNs t1, const double lost_ns[PN_CLASS_N])
{
  ChainObs *o = ctx;
  lost_obs_contention(&o->lost, gpu, t0, t1, lost_ns);
}

/* Appends chain-rich random work to g (3 GPUs) until it has n_target tasks: runs of compute
 * kernels on the compute stream (some with an sm_limit, some memory-bound), kernels on a second
 * compute stream beside them (so a chain shares the SMs with other kernels), collectives holding
 * SMs on the TP and DP streams, delays, P2P pairs, and dependencies on recent tasks (some on the
 * middle of a run, which must cut the chain there). */
static void chain_tasks(GRand *rng, PnGraph *g, uint32_t n_target)
{
  while (pn_graph_n_tasks(g) < n_target) {
    uint32_t n   = pn_graph_n_tasks(g);
    uint32_t gpu = (uint32_t)g_rand_int_range(rng, 0, 3);
    PnTaskId deps[2];
    uint32_t nd = 0;
    if (n > 0 && g_rand_int_range(rng, 0, 4) == 0)
      deps[nd++] = (PnTaskId)g_rand_int_range(rng, n > 12 ? (gint32)n - 12 : 0, (gint32)n);
    int kind = g_rand_int_range(rng, 0, 20);
    if (kind < 12) {
      int run = g_rand_int_range(rng, 1, 6);
      for (int k = 0; k < run; k++) {
        PnTask t   = compute(gpu, PN_STREAM_COMPUTE, g_rand_double_range(rng, 1, 500));
        t.scaling  = (uint8_t)g_rand_int_range(rng, 0, 2);
        t.sm_shape = (uint8_t)g_rand_int_range(rng, 0, 2);
        t.sms      = g_rand_int_range(rng, 0, 3) == 0 ? (int16_t)g_rand_int_range(rng, 8, 133) : 0;
        add(g, t, k == 0 ? nd : 0, deps);
      }
    } else if (kind < 14) {
      add(g, compute(gpu, PN_STREAM_SHARED_EXPERT, g_rand_double_range(rng, 1, 800)), nd, deps);
    } else if (kind < 17) {
      PnStream st = g_rand_int_range(rng, 0, 2) ? PN_STREAM_TP_COMM : PN_STREAM_DP_COMM;
      add(g,
          comm(gpu, st, g_rand_int_range(rng, 0, 40), g_rand_double_range(rng, 0, 50), g_rand_double_range(rng, 0, 1e5),
               g_rand_int_range(rng, 0, 2) ? g_rand_double_range(rng, 0, 1e4) : 0),
          nd, deps);
    } else if (kind < 19) {
      add(g,
          delay(gpu, g_rand_int_range(rng, 0, 2) ? PN_STREAM_COMPUTE : PN_STREAM_TP_COMM,
                g_rand_double_range(rng, 0, 300)),
          nd, deps);
    } else {
      uint32_t peer = (gpu + (uint32_t)g_rand_int_range(rng, 1, 3)) % 3;
      PnTaskId sid  = add(g, p2p(gpu, PN_STREAM_PP_SEND, g_rand_int_range(rng, 0, 20), 10, "s"), nd, deps);
      PnTaskId rid  = add(g, p2p(peer, PN_STREAM_PP_RECV, 4, 20, "r"), nd, deps);
      pn_graph_pair_p2p(g, sid, rid, g_rand_double_range(rng, 0, 5e4), g_rand_int_range(rng, 0, 2));
    }
  }
}

/* Property: on chain-rich random graphs (40 instances x max_connections 1, 2, 8, with calibrated
 * curves, per-shape curves and a launch time), the run with kernel chains gives byte-identical
 * task times to the run without, no more events, and the observer sees the same compute-busy time
 * per GPU, in time order, and the same compute lost to SM contention (up to rounding; never more
 * than the busy time); every task closes once unfused, and a kept task (keep_whole, the iteration
 * ends of sim.c) closes on its own; a kernel of absurd length fails both runs with the same error. */
static void check_chains_match_unfused(bool hbm)
{
  PnHwProfile hw      = test_hw();
  hw.kernel_launch_ns = 3;
  hw.hbm_share.on     = hbm;
  double hx[] = {1, 40, 132}, hy[] = {10, 250, 300};
  hw.hbm_share.pressure = (PnCurve){.n = 3, .x = hx, .y = hy};
  double cx[] = {16, 66, 132}, cy[] = {0.2, 0.6, 1.0}, my[] = {0.5, 0.9, 1.0}, sy[] = {0.1, 0.5, 1.0};
  hw.gemm_sm_scaling       = (PnCurve){.n = 3, .x = cx, .y = cy};
  hw.mem_sm_scaling        = (PnCurve){.n = 3, .x = cx, .y = my};
  hw.gemm_sm_limit_scaling = (PnCurve){.n = 3, .x = cx, .y = sy};
  PnShapeContention shape  = {.curve = {{.n = 3, .x = cx, .y = sy}, {.n = 3, .x = cx, .y = my}}};
  hw.shape_contention      = &shape;
  hw.n_shape_contention    = 1;
  GRand *rng               = g_rand_new_with_seed(4242);
  uint64_t fused_events = 0, unfused_events = 0;
  double lost_total = 0.0;
  for (int inst = 0; inst < 40; inst++) {
    g_autoptr(PnGraph) g = pn_graph_new(3);
    chain_tasks(rng, g, 600);
    uint32_t n = pn_graph_n_tasks(g);
    for (PnTaskId t = 0; hbm && t < n; t++) /* HBM demands from 0 to 400 bytes/ns: some over the capacity */
      if (pn_graph_task(g, t)->kind == PN_TASK_COMPUTE)
        pn_graph_task(g, t)->hbm_bytes = (float)(pn_graph_task(g, t)->work_ns * g_rand_double_range(rng, 0, 400)),
                         pn_graph_task(g, t)->hbm_pi = (float)g_rand_double_range(rng, 0.1, 1.0);
    int conns[] = {1, 2, 8};
    for (int ci = 0; ci < 3; ci++) {
      PnExecResult r[2];
      ChainObs o[2];
      PnTaskId keep = (PnTaskId)g_rand_int_range(rng, 0, (gint32)n);
      for (int u = 0; u < 2; u++) {
        o[u]               = (ChainObs){.closes = g_new0(uint32_t, n)};
        PnExecObserver obs = {
            .ctx = &o[u], .open = chain_obs_open, .close = chain_obs_close, .contention = chain_obs_contention};
        PnExecOptions opt = {
            .max_connections = conns[ci], .observer = &obs, .unfused = u == 1, .keep_whole = &keep, .n_keep_whole = 1};
        g_autoptr(GError) e = NULL;
        ck_assert_msg(pn_exec_run(g, &hw, &opt, &r[u], &e), "%s", e ? e->message : "?");
      }
      ck_assert_int_eq(r[0].makespan_ns, r[1].makespan_ns);
      ck_assert_int_eq(memcmp(r[0].times->data, r[1].times->data, n * sizeof(PnTaskTime)), 0);
      ck_assert_uint_le(r[0].events, r[1].events);
      fused_events += r[0].events;
      unfused_events += r[1].events;
      for (int gpu = 0; gpu < 3; gpu++) {
        ck_assert_int_eq(o[0].open_compute[gpu], 0);
        ck_assert_int_eq(o[0].busy_ns[gpu], o[1].busy_ns[gpu]);
        double lost[2] = {0.0, 0.0};
        for (int u = 0; u < 2; u++)
          for (int c = 0; c < PN_CLASS_N; c++)
            lost[u] += o[u].lost.lost_ns[gpu][c];
        ck_assert_double_eq_tol(lost[0], lost[1], 1e-9 * fmax(1.0, lost[1]));
        ck_assert(lost[0] <= (double)o[0].busy_ns[gpu] + 1e-6);
        lost_total += lost[0];
      }
      for (PnTaskId t = 0; t < n; t++) {
        ck_assert_uint_eq(o[1].closes[t], 1);
        ck_assert_uint_le(o[0].closes[t], 1);
      }
      ck_assert_uint_eq(o[0].closes[keep], 1);
      for (int u = 0; u < 2; u++) {
        g_free(o[u].closes);
        pn_exec_result_clear(&r[u]);
      }
    }
  }
  ck_assert_uint_lt(fused_events, unfused_events); /* chains happened */
  ck_assert(lost_total > 0.0);                     /* and so did SM contention */
  /* absurd: the second kernel of a chain would end after the horizon */
  g_autoptr(PnGraph) g = pn_graph_new(1);
  add(g, compute(0, PN_STREAM_COMPUTE, 10), 0, NULL);
  add(g, compute(0, PN_STREAM_COMPUTE, 1e30), 0, NULL);
  add(g, compute(0, PN_STREAM_COMPUTE, 10), 0, NULL);
  g_autoptr(GError) e0 = run_err(g, &hw, (PnExecOptions){.max_connections = 1});
  g_autoptr(GError) e1 = run_err(g, &hw, (PnExecOptions){.max_connections = 1, .unfused = true});
  ck_assert(g_error_matches(e0, PN_EXEC_ERROR, PN_EXEC_ERROR_HORIZON));
  ck_assert_str_eq(e0->message, e1->message);
  g_rand_free(rng);
}

START_TEST(test_exec_chains_match_unfused) { check_chains_match_unfused(false); }
END_TEST

/* The same with HBM sharing on: a chain's kernels each ask their own share of the HBM. */
START_TEST(test_exec_chains_match_unfused_hbm) { check_chains_match_unfused(true); }
END_TEST

/* hw/hbm.h's rule: F from the curve (w below the first point: its slope u from 0; flat past the
 * last), and weighted water-filling. Users (w 50, need 100) and (w 50, need 2000): W = 100,
 * F = 1200, 12 per unit: the first needs 100 <= 600, met; the other gets the remaining 1100. Three
 * users of need above their share (w 10, 20, 30; F(60) = 1040): each is served w * 1040 / 60.
 * Nobody pressing: nothing delivered. */
START_TEST(test_hbm_share_rule)
{
  PnHwProfile hw = test_hw();
  double px[] = {1, 50, 100}, py[] = {20, 1000, 1200};
  hw.hbm_share.pressure = (PnCurve){.n = 3, .x = px, .y = py};
  ck_assert_double_eq_tol(pn_hbm_unloaded(&hw), 20.0, 1e-12);
  ck_assert_double_eq_tol(pn_hbm_capacity(&hw, 0.5), 10.0, 1e-12);
  ck_assert_double_eq_tol(pn_hbm_capacity(&hw, 75.0), 1100.0, 1e-9);
  ck_assert_double_eq_tol(pn_hbm_capacity(&hw, 1e9), 1200.0, 1e-9);
  ck_assert_double_eq(pn_hbm_capacity(&hw, 0.0), 0.0);
  PnHbmUser u[3] = {{.w = 50, .need = 100}, {.w = 50, .need = 2000}};
  pn_hbm_share(&hw, u, 2);
  ck_assert_double_eq_tol(u[0].served, 100.0, 1e-9);
  ck_assert_double_eq_tol(u[1].served, 1100.0, 1e-9);
  PnHbmUser v[3] = {{.w = 10, .need = 1e4}, {.w = 20, .need = 1e4}, {.w = 30, .need = 1e4}};
  pn_hbm_share(&hw, v, 3);
  for (int i = 0; i < 3; i++)
    ck_assert_double_eq_tol(v[i].served, v[i].w * 1040.0 / 60.0, 1e-9);
  PnHbmUser z = {.w = 0, .need = 0};
  pn_hbm_share(&hw, &z, 1);
  ck_assert_double_eq(z.served, 0.0);
}
END_TEST

/* HBM sharing (hw/hbm.h) on a 100-SM GPU whose HBM delivers F(w) = 20 w bytes/ns under pressure
 * w <= 50 SM-equivalents, 1000 + 4 (w - 50) up to w = 100, 1200 beyond (u = 20); the memory
 * kernels' SM curve is F(s) / F(100); no launch cost.
 * 1. Two memory kernels side by side, 1000 ns of work asking D = 1200 bytes/ns alone: 50 SMs
 *    each, SM rate 1000 / 1200, need 1000 each, pressure 50 each. W = 100, F = 1200: each is
 *    served 600 of its 1000: rate 0.5, both end at 2000 (without sharing: 1200).
 * 2. A GEMM of pressure 0.5 per SM on all 100 SMs (w = 50) asking D = 1500 (capped at what it
 *    gets alone, F(50) = 1000) beside a copy-engine transfer of 100,000 bytes on NVLink (500
 *    bytes/ns alone), 2 HBM bytes per byte: need 1000, pressure 1000 / 20 = 50. W = 100, F = 1200,
 *    12 per unit of pressure: each is served 600 of its 1000: the transfer runs at 300 bytes/ns
 *    and ends at 334 (333.3 rounded up), the GEMM at 0.6 until then, and ends at
 *    334 + 1000 - 0.6 * 334 = 1133.6 -> 1134. An NCCL transfer (3 per byte) needs 1500, presses
 *    75: W = 125, F = 1200, 9.6 per unit: the GEMM is served 480 (0.48), the transfer 720 (240
 *    bytes/ns): 417 (416.7) and 417 + 1000 - 0.48 * 417 -> 1217. Without sharing: 200 and 1000. */
START_TEST(test_exec_hbm_share)
{
  PnHwProfile hw         = test_hw();
  hw.sm_count            = 100;
  hw.nvlink_bytes_per_ns = 500;
  double px[] = {1, 50, 100}, py[] = {20, 1000, 1200}, my[] = {20.0 / 1200, 1000.0 / 1200, 1.0};
  hw.hbm_share.pressure = (PnCurve){.n = 3, .x = px, .y = py};
  hw.mem_sm_scaling     = (PnCurve){.n = 3, .x = px, .y = my};
  for (int on = 0; on < 2; on++) {
    hw.hbm_share.on      = on;
    g_autoptr(PnGraph) g = pn_graph_new(1);
    PnTask m             = compute(0, PN_STREAM_COMPUTE, 1000);
    m.scaling            = PN_SCALE_MEMORY;
    m.hbm_bytes          = 1.2e6f;
    PnTaskId a           = add(g, m, 0, NULL);
    m.stream             = PN_STREAM_SHARED_EXPERT;
    PnTaskId b           = add(g, m, 0, NULL);
    PnExecResult r       = run_ok(g, &hw, 8);
    ck_span(r, a, 0, on ? 2000 : 1200);
    ck_span(r, b, 0, on ? 2000 : 1200);
    pn_exec_result_clear(&r);
    for (int nccl = 0; nccl < 2; nccl++) {
      g_autoptr(PnGraph) g2 = pn_graph_new(1);
      PnTask k              = compute(0, PN_STREAM_COMPUTE, 1000);
      k.hbm_bytes           = 1.5e6f;
      k.hbm_pi              = 0.5f;
      PnTaskId c            = add(g2, k, 0, NULL);
      PnTask x2             = comm(0, PN_STREAM_TP_COMM, 0, 0, 100000, 0);
      x2.coll.bytes         = nccl ? 100000.0f : 0.0f;
      PnTaskId t            = add(g2, x2, 0, NULL);
      r                     = run_ok(g2, &hw, 8);
      ck_span(r, t, 0, !on ? 200 : nccl ? 417 : 334);
      ck_span(r, c, 0, !on ? 1000 : nccl ? 1217 : 1134);
      pn_exec_result_clear(&r);
    }
  }
}
END_TEST

/* The measured collective table by group size: a measured size is replayed, a size between two
 * measured ones is interpolated in log(group size) (here the geometric mean of 2 and 8 for 4),
 * and a size outside them, or a group spanning nodes, keeps the NVSwitch/network model. */
START_TEST(test_coll_table_group_sizes)
{
  PnCollPoint pts[] = {
      {.kind = PN_COLL_ALL_GATHER, .ranks = 2, .ctas = 24, .bytes = 1048576.0, .ns = 10000.0},
      {.kind = PN_COLL_ALL_GATHER, .ranks = 2, .ctas = 24, .bytes = 1073741824.0, .ns = 4000000.0},
      {.kind = PN_COLL_ALL_GATHER, .ranks = 8, .ctas = 24, .bytes = 1048576.0, .ns = 20000.0},
      {.kind = PN_COLL_ALL_GATHER, .ranks = 8, .ctas = 24, .bytes = 1073741824.0, .ns = 3000000.0},
  };
  PnHwProfile hw   = {.name                  = "coll-table",
                      .sm_count              = 132,
                      .gpus_per_node         = 16,
                      .nvlink_bytes_per_ns   = 1e6, /* the table, not the link, bounds every transfer */
                      .nic_bytes_per_ns      = 50.0,
                      .nccl_base_latency_ns  = 5000.0,
                      .nccl_nvlink_hop_ns    = 1000.0,
                      .nccl_net_hop_ns       = 4000.0,
                      .nccl_ctas_nvlink      = 24,
                      .nccl_ctas_net         = 24,
                      .nccl_p2p_ctas         = 8,
                      .nccl_cta_bytes_per_ns = 20.0};
  PnHwProfile bare = hw; /* no table: the model */
  hw.nccl_table    = (PnCollTable){.n = G_N_ELEMENTS(pts), .pts = pts};
  double big       = 1073741824.0;
  struct {
    int64_t ranks, per_node;
    double expect; /* < 0: as without the table */
  } cases[] = {{2, 2, 4000000.0}, {8, 8, 3000000.0}, {4, 4, sqrt(4000000.0 * 3000000.0)}, {16, 16, -1}, {8, 4, -1}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    PnCollSpec spec = {
        .kind = PN_COLL_ALL_GATHER, .bytes = big, .ranks = cases[i].ranks, .ranks_per_node = cases[i].per_node};
    PnCollCost c, m;
    pn_coll_cost(&hw, &spec, &c);
    pn_coll_cost(&bare, &spec, &m);
    double t    = pn_coll_time_alone_ns(&hw, &c),
           want = cases[i].expect > 0 ? cases[i].expect : pn_coll_time_alone_ns(&bare, &m);
    ck_assert_msg(fabs(t / want - 1.0) < 1e-9, "ranks %ld per node %ld: %.1f ns, expected %.1f", (long)cases[i].ranks,
                  (long)cases[i].per_node, t, want);
    ck_assert(c.latency_ns >= 0.0 && c.max_bytes_per_ns > 0.0);
  }
  /* the latency comes from the smallest measured size of the group's rows */
  PnCollSpec small = {.kind = PN_COLL_ALL_GATHER, .bytes = 1048576.0, .ranks = 8, .ranks_per_node = 8};
  PnCollCost c;
  pn_coll_cost(&hw, &small, &c);
  ck_assert(fabs(pn_coll_time_alone_ns(&hw, &c) / 20000.0 - 1.0) < 1e-9);
}
END_TEST

/* Two-level nodes for the collective cost tests: 8 GPUs a node, NIC 50 and NVLink 400 bytes/ns,
 * NCCL base latency 10000 ns, NVLink hop 1000, network hop 5000; channels and protocol not
 * limiting. `nics` NICs a node. */
static PnHwProfile coll_test_hw(int nics)
{
  return (PnHwProfile){.name                  = "coll",
                       .sm_count              = 132,
                       .gpus_per_node         = 8,
                       .nics_per_node         = nics,
                       .nvlink_bytes_per_ns   = 400.0,
                       .nic_bytes_per_ns      = 50.0,
                       .nccl_base_latency_ns  = 10000.0,
                       .nccl_nvlink_hop_ns    = 1000.0,
                       .nccl_net_hop_ns       = 5000.0,
                       .nccl_ctas_nvlink      = 16,
                       .nccl_ctas_net         = 16,
                       .nccl_p2p_ctas         = 8,
                       .nccl_cta_bytes_per_ns = 1e6};
}

/* A node with fewer NICs than GPUs shares them: NCCL sends each GPU's inter-node traffic through
 * its nearest NIC, and every GPU of a node crosses the network at once (each is in one of the
 * symmetric groups of a collective that spans nodes), so a GPU gets nics / gpus of the node's
 * NIC bandwidth. All-reduce of S = 2^30 bytes over 16 GPUs, 8 per node (2 nodes), 8 GPUs a node,
 * NIC 50 and NVLink 400 bytes/ns, channels and protocol not limiting:
 *   ring bytes 2 S 15/16 = 2013265920 per GPU: NVLink 7/8 = 1761607680 (4404019.2 ns at 400),
 *   NIC 1/8 = 251658240;
 *   latency: base 10000 + min(ring 4 x 5000 + 26 x 1000, tree 2 (2 x 5000 + 7 x 1000)) = 44000.
 *   8 NICs: 50 per GPU  -> 5033164.8 ns on the NIC: 5077164.8 ns;
 *   4 NICs: 25 per GPU  -> 10066329.6 ns:             10110329.6 ns;
 *   16 NICs: 100 per GPU -> 2516582.4 ns, NVLink-bound: 4448019.2 ns.
 * Inside one node nothing changes: 8 GPUs, 8 per node, NVLink only. */
START_TEST(test_coll_nics_per_node)
{
  PnHwProfile hw = coll_test_hw(8);
  struct {
    int nics;
    double want_ns;
  } cases[]        = {{8, 5077164.8}, {4, 10110329.6}, {16, 4448019.2}};
  PnCollSpec spec  = {.kind = PN_COLL_ALL_REDUCE, .bytes = 1073741824.0, .ranks = 16, .ranks_per_node = 8};
  PnCollSpec intra = {.kind = PN_COLL_ALL_REDUCE, .bytes = 1073741824.0, .ranks = 8, .ranks_per_node = 8};
  double intra_ns[G_N_ELEMENTS(cases)];
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    hw.nics_per_node = cases[i].nics;
    PnCollCost c;
    pn_coll_cost(&hw, &spec, &c);
    ck_assert(c.nvlink_bytes == 1761607680.0 && c.nic_bytes == 251658240.0 && c.latency_ns == 44000.0);
    double t = pn_coll_time_alone_ns(&hw, &c);
    ck_assert_msg(fabs(t / cases[i].want_ns - 1.0) < 1e-12, "%d NICs: %.1f ns, expected %.1f", cases[i].nics, t,
                  cases[i].want_ns);
    pn_coll_cost(&hw, &intra, &c);
    intra_ns[i] = pn_coll_time_alone_ns(&hw, &c);
  }
  ck_assert(intra_ns[1] == intra_ns[0] && intra_ns[2] == intra_ns[0]);
}
END_TEST

/* NCCL's send/recv channels on a communicator that reaches a peer over the network (NCCL 2.28
 * graph/paths.cc): max(the GPU's NICs, ceil(NIC GB/s / 14)), rounded up to a power of two:
 * 50 GB/s -> ceil(3.57) = 4; 12.5 -> 1; 100 -> 8; 200 -> 15 -> 16; a GPU with two NICs of 12.5
 * -> 2. A group that spans nodes gives its send/recv those CTAs, one inside a node
 * nccl_p2p_ctas (8 here). */
START_TEST(test_coll_p2p_net_ctas)
{
  PnHwProfile hw = coll_test_hw(8);
  struct {
    double nic;
    int nics, want;
  } cases[] = {{50.0, 8, 4}, {12.5, 8, 1}, {100.0, 8, 8}, {200.0, 8, 16}, {12.5, 16, 2}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    hw.nic_bytes_per_ns = cases[i].nic;
    hw.nics_per_node    = cases[i].nics;
    ck_assert_int_eq(pn_hw_profile_p2p_net_ctas(&hw), cases[i].want);
  }
  hw                = coll_test_hw(8);
  PnCollSpec across = {.kind = PN_COLL_SEND_RECV, .bytes = 1 << 20, .ranks = 2, .ranks_per_node = 1};
  PnCollSpec inside = {.kind = PN_COLL_SEND_RECV, .bytes = 1 << 20, .ranks = 2, .ranks_per_node = 2};
  PnCollCost c;
  pn_coll_cost(&hw, &across, &c);
  ck_assert_int_eq(c.sms, 4);
  pn_coll_cost(&hw, &inside, &c);
  ck_assert_int_eq(c.sms, 8);
}
END_TEST

/* NCCL's latency per collective over nodes (src/graph/tuning.cc): an all-gather or reduce-scatter
 * has no tree; with several GPUs per node it rings over every rank, with one GPU per node PAT may
 * be shorter. Base 10000, NVLink hop 1000, network hop 5000 ns:
 *   reduce-scatter, 16 ranks 8 per node: ring 2 x 5000 + 13 x 1000 = 23000 -> 33000 (the
 *     all-reduce's tree would give 17000: not NCCL's for a reduce-scatter);
 *   all-gather, 48 ranks 1 per node: min(ring 48 x 5000 = 240000, PAT floor(log2 48) x 5000 / 3.5
 *     + 48 x 2800 = 141542.857) -> 151542.857; reduce-scatter, 4 ranks 1 per node: PAT 2 x 5000 /
 *     3.5 + 4 x 2800 = 14057.143 against the ring's 20000 -> 24057.143;
 *   all-reduce, 16 ranks 8 per node: min(ring 4 x 5000 + 26 x 1000, tree 2 (2 x 5000 + 7 x 1000))
 *     = 34000 -> 44000. */
START_TEST(test_coll_latency_algorithms)
{
  PnHwProfile hw = coll_test_hw(8);
  struct {
    PnCollKind kind;
    int ranks, per_node;
    double want_ns;
  } cases[] = {{PN_COLL_REDUCE_SCATTER, 16, 8, 33000.0},
               {PN_COLL_ALL_GATHER, 16, 8, 33000.0},
               {PN_COLL_ALL_GATHER, 48, 1, 10000.0 + 5.0 * 5000.0 / 3.5 + 48.0 * 2800.0},
               {PN_COLL_REDUCE_SCATTER, 4, 1, 10000.0 + 2.0 * 5000.0 / 3.5 + 4.0 * 2800.0},
               {PN_COLL_ALL_REDUCE, 16, 8, 44000.0}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    PnCollSpec spec = {
        .kind = cases[i].kind, .bytes = 1 << 20, .ranks = cases[i].ranks, .ranks_per_node = cases[i].per_node};
    PnCollCost c;
    pn_coll_cost(&hw, &spec, &c);
    ck_assert_msg(fabs(c.latency_ns - cases[i].want_ns) < 1e-6, "case %zu: %.3f, expected %.3f", (size_t)i,
                  c.latency_ns, cases[i].want_ns);
  }
}
END_TEST

/* The executor charges a GPU's NIC for the GPUs that share it. test_hw() (NIC 50 bytes/ns) with 8
 * GPUs a node: a collective (GPU 2) moving 50000 bytes over the NIC only takes 1000 ns with 8 NICs,
 * 2000 with 4 (25 bytes/ns each); a P2P leg from GPU 0 to GPU 1 of 40000 bytes across nodes (latency 100 on both sides)
 * 100 + 800 = 900 ns with 8 NICs, 100 + 1600 = 1700 with 4. */
START_TEST(test_exec_nic_share)
{
  PnHwProfile hw   = test_hw();
  hw.gpus_per_node = 8;
  for (int nics = 8; nics >= 4; nics -= 4) {
    hw.nics_per_node     = nics;
    g_autoptr(PnGraph) g = pn_graph_new(3);
    PnTaskId a           = add(g, comm(2, PN_STREAM_DP_COMM, 0, 0, 0, 50000), 0, NULL);
    PnTaskId s           = add(g, p2p(0, PN_STREAM_PP_SEND, 0, 100, "send"), 0, NULL);
    PnTaskId rv          = add(g, p2p(1, PN_STREAM_PP_RECV, 0, 100, "recv"), 0, NULL);
    pn_graph_pair_p2p(g, s, rv, 40000, true);
    PnExecResult r = run_ok(g, &hw, 8);
    if (nics == 8) {
      ck_span(r, a, 0, 1000);
      ck_span(r, s, 0, 900);
    } else {
      ck_span(r, a, 0, 2000);
      ck_span(r, s, 0, 1700);
    }
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* ======================================================================== the host */

static PnTask hosted(PnTask t, float host_ns, PnHostSync sync)
{
  t.host_ns   = host_ns;
  t.host_sync = (uint8_t)sync;
  return t;
}

/* The host launches in issue order, launch_i = sum_{j <= i} host_ns_j, and a kernel starts at
 * max(launch_i, end of the one before). Host-bound (100 ns kernels, 300 ns launches): launches
 * 300, 600, 900 -> [300,400] [600,700] [900,1000]; the compute stream waited 300 + 200 + 200 ns for
 * launches. GPU-bound (1000 ns kernels): [300,1300] [1300,2300] [2300,3300], waited 300 ns. */
START_TEST(test_exec_host_launch)
{
  PnHwProfile hw         = test_hw();
  double works[2]        = {100, 1000};
  PnTimeNs want[2][3][2] = {{{300, 400}, {600, 700}, {900, 1000}}, {{300, 1300}, {1300, 2300}, {2300, 3300}}};
  double waited[2]       = {700, 300};
  for (int v = 0; v < 2; v++) {
    g_autoptr(PnGraph) g = pn_graph_new(1);
    for (int i = 0; i < 3; i++)
      add(g, hosted(compute(0, PN_STREAM_COMPUTE, works[v]), 300, PN_HOST_SYNC_NONE), 0, NULL);
    PnExecResult r = run_ok(g, &hw, 1);
    for (PnTaskId i = 0; i < 3; i++)
      ck_span(r, i, want[v][i][0], want[v][i][1]);
    ck_assert_ptr_nonnull(r.host_waits);
    double sum = 0.0;
    for (guint i = 0; i < r.host_waits->len; i++)
      sum +=
          (double)(g_array_index(r.host_waits, PnHostWait, i).t1_ns - g_array_index(r.host_waits, PnHostWait, i).t0_ns);
    ck_assert_double_eq(sum, waited[v]);
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* Synchronizations (sync_ns = 5). GPU 0: a 1000 ns delay on the DP stream (launched at 0), then A
 * (100 ns, launched at 10), then B (100 ns, host 10).
 *  - none: B is launched at 20 and runs after A: [110,210];
 *  - A syncs its own end (110): B is launched at 110 + 5 + 10 = 125: [125,225];
 *  - A syncs the device: the host waits for the delay too (1000): B at 1000 + 5 + 10: [1015,1115].
 * GPU 1's host is another thread: its kernel C (host 10) runs [10,110] whatever GPU 0's host does. */
START_TEST(test_exec_host_sync)
{
  PnHwProfile hw      = test_hw();
  hw.host.sync_ns     = 5;
  PnHostSync mode[3]  = {PN_HOST_SYNC_NONE, PN_HOST_SYNC_TASK, PN_HOST_SYNC_DEVICE};
  PnTimeNs b_start[3] = {110, 125, 1015};
  for (int v = 0; v < 3; v++) {
    g_autoptr(PnGraph) g = pn_graph_new(2);
    add(g, delay(0, PN_STREAM_DP_COMM, 1000), 0, NULL);
    PnTaskId a     = add(g, hosted(compute(0, PN_STREAM_COMPUTE, 100), 10, mode[v]), 0, NULL);
    PnTaskId c     = add(g, hosted(compute(1, PN_STREAM_COMPUTE, 100), 10, PN_HOST_SYNC_NONE), 0, NULL);
    PnTaskId b     = add(g, hosted(compute(0, PN_STREAM_COMPUTE, 100), 10, PN_HOST_SYNC_NONE), 0, NULL);
    PnExecResult r = run_ok(g, &hw, 8);
    ck_span(r, a, 10, 110);
    ck_span(r, b, b_start[v], b_start[v] + 100);
    ck_span(r, c, 10, 110);
    pn_exec_result_clear(&r);
  }
}
END_TEST

/* A kernel replayed from a CUDA graph (graph.h: `graphed`) skips the per-kernel launch gap:
 * kernel_launch_ns = 50, three 100 ns kernels, the second graphed: [0,150] [150,250] [250,400]. */
START_TEST(test_exec_graphed_no_launch_gap)
{
  PnHwProfile hw       = test_hw();
  hw.kernel_launch_ns  = 50;
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTask k             = compute(0, PN_STREAM_COMPUTE, 100);
  add(g, k, 0, NULL);
  k.graphed = 1;
  add(g, k, 0, NULL);
  k.graphed = 0;
  add(g, k, 0, NULL);
  PnExecResult r = run_ok(g, &hw, 1);
  ck_span(r, 0, 0, 150);
  ck_span(r, 1, 150, 250);
  ck_span(r, 2, 250, 400);
  pn_exec_result_clear(&r);
}
END_TEST

/* Blocking sends on both sides: each host waits for its send's end before it launches its recv,
 * so neither send meets its peer recv (NCCL would hang as well): a deadlock naming the host. A
 * negative host_ns or an unknown host_sync is rejected. */
START_TEST(test_exec_host_errors)
{
  PnHwProfile hw       = test_hw();
  g_autoptr(PnGraph) g = pn_graph_new(2);
  PnTaskId s0          = add(g, hosted(p2p(0, PN_STREAM_PP_SEND, 1, 10, "send"), 1, PN_HOST_SYNC_TASK), 0, NULL);
  PnTaskId s1          = add(g, hosted(p2p(1, PN_STREAM_PP_SEND, 1, 10, "send"), 1, PN_HOST_SYNC_TASK), 0, NULL);
  PnTaskId r0          = add(g, p2p(0, PN_STREAM_PP_RECV, 1, 10, "recv"), 0, NULL);
  PnTaskId r1          = add(g, p2p(1, PN_STREAM_PP_RECV, 1, 10, "recv"), 0, NULL);
  pn_graph_pair_p2p(g, s0, r1, 1000, false);
  pn_graph_pair_p2p(g, s1, r0, 1000, false);
  g_autoptr(GError) e = run_err(g, &hw, (PnExecOptions){.max_connections = 8});
  ck_assert_msg(strstr(e->message, "deadlock") && strstr(e->message, "host never launched"), "%s", e->message);

  g_autoptr(PnGraph) g2         = pn_graph_new(1);
  PnTaskId a                    = add(g2, compute(0, PN_STREAM_COMPUTE, 100), 0, NULL);
  pn_graph_task(g2, a)->host_ns = -1.0f;
  g_autoptr(GError) e2          = run_err(g2, &hw, (PnExecOptions){.max_connections = 8});
  ck_assert_msg(strstr(e2->message, "host_ns"), "%s", e2->message);
  pn_graph_task(g2, a)->host_ns   = 0.0f;
  pn_graph_task(g2, a)->host_sync = 9;
  g_autoptr(GError) e3            = run_err(g2, &hw, (PnExecOptions){.max_connections = 8});
  ck_assert_msg(strstr(e3->message, "host_sync"), "%s", e3->message);
}
END_TEST

static Suite *hw_suite(void)
{
  Suite *s = suite_create("hw");
#define TC(name, fn)                                                                                                   \
  do {                                                                                                                 \
    TCase *tc_ = tcase_create(name);                                                                                   \
    tcase_add_test(tc_, fn);                                                                                           \
    suite_add_tcase(s, tc_);                                                                                           \
  } while (0)
  TC("gemm_accum_cost", test_gemm_accum_cost);
  TC("cost_bmm", test_cost_bmm);
  TC("cost_attention_mla", test_cost_attention_mla);
  TC("cost_torch_kernel", test_cost_torch_kernel);
  TC("busbw_factor", test_busbw_factor);
  TC("maxmin_single_flow", test_mm_single_flow);
  TC("maxmin_two_equal_flows", test_mm_two_equal_flows);
  TC("maxmin_bound", test_mm_bound_leaves_rest);
  TC("maxmin_line_topology", test_mm_line_topology);
  TC("maxmin_coefficients", test_mm_coefficients);
  TC("maxmin_removal", test_mm_removal_restores);
  TC("maxmin_changed", test_mm_changed_contents);
  TC("maxmin_bound_only", test_mm_bound_only_flow);
  TC("maxmin_property", test_mm_property_random);
  TC("maxmin_property_placed", test_mm_property_placed);
  TC("graph_build", test_graph_build);
  TC("exec_host_launch", test_exec_host_launch);
  TC("exec_host_sync", test_exec_host_sync);
  TC("exec_graphed_no_launch_gap", test_exec_graphed_no_launch_gap);
  TC("exec_host_errors", test_exec_host_errors);
  TCase *tc = tcase_create("graph_add_dep_not_last");
  tcase_add_test_raise_signal(tc, test_graph_add_dep_not_last_asserts, SIGABRT);
  suite_add_tcase(s, tc);
  TC("curve_eval", test_curve_eval);
  TC("cost_gemm_table_exact", test_cost_gemm_table_exact);
  TC("coll_table_group_sizes", test_coll_table_group_sizes);
  TC("coll_nics_per_node", test_coll_nics_per_node);
  TC("coll_p2p_net_ctas", test_coll_p2p_net_ctas);
  TC("coll_latency_algorithms", test_coll_latency_algorithms);
  TC("exec_chain", test_exec_chain);
  TC("exec_streams_concurrent", test_exec_streams_concurrent);
  TC("exec_dependency", test_exec_dependency);
  TC("exec_max_connections", test_exec_max_connections);
  TC("exec_queue_dispatch_not_end", test_exec_queue_dispatch_not_end);
  TC("exec_comm_sms", test_exec_comm_sms_slow_compute);
  TC("exec_lost_to_contention", test_exec_lost_to_contention);
  TC("exec_sm_limit", test_exec_sm_limit);
  TC("exec_comm_bandwidth", test_exec_comm_bandwidth);
  TC("exec_p2p_pair", test_exec_p2p_pair);
  TC("exec_p2p_batched", test_exec_p2p_batched);
  TC("exec_nic_share", test_exec_nic_share);
  TC("exec_deadlock", test_exec_deadlock);
  TC("exec_invalid", test_exec_invalid);
  TC("exec_invalid_dep_forward", test_exec_invalid_dep_forward);
  TC("exec_budget", test_exec_budget);
  TC("exec_horizon", test_exec_horizon);
  TC("exec_empty", test_exec_empty);
  TC("exec_property", test_exec_property_random);
  TC("exec_chain_times", test_exec_chain_times);
  TC("exec_chains_match_unfused", test_exec_chains_match_unfused);
  TC("exec_chains_match_unfused_hbm", test_exec_chains_match_unfused_hbm);
  TC("exec_hbm_share", test_exec_hbm_share);
  TC("hbm_share_rule", test_hbm_share_rule);
#undef TC
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(hw_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
