/* test_sched.c — Megatron pipeline schedule order (src/sched/order.h) and the data-parallel
 * bucket groups of the builder (src/sched/dp_buckets.c).
 *
 * Golden sequences are derived by hand from megatron/core/pipeline_parallel/schedules.py
 * (NVIDIA/Megatron-LM d98e8a64dd); property tests run every configuration in kConfigs. Bucket
 * sizes are derived by hand from param_and_grad_buffer.py / distrib_optimizer.py at the same
 * commit. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/scenario.h"
#include "overlap/gating.h"
#include "sched/build.h"
#include "sched/order.h"
#include "sched/sched-private.h" /* white box: the bound's template walk (bound.c) */

/* ---- configurations ---------------------------------------------------------------------- */

typedef struct {
  int64_t pp, vpp, m, group;
} Shape;

/* 1F1B shapes include m < pp and m not a multiple of pp; interleaved shapes include all-warm-up
 * ranks (4,2,4), groups larger than pp, and m not a multiple of pp or of the group. */
static const Shape kShapes1f1b[] = {
    {1, 1, 1, 0}, {1, 1, 4, 0},  {2, 1, 1, 0}, {2, 1, 5, 0},  {4, 1, 2, 0},
    {4, 1, 8, 0}, {4, 1, 13, 0}, {8, 1, 3, 0}, {8, 1, 16, 0},
};
static const Shape kShapesInterleaved[] = {
    {2, 2, 2, 0},  {2, 2, 4, 2},  {2, 2, 5, 3}, {2, 4, 6, 2},  {3, 2, 3, 0},  {3, 2, 4, 4},
    {3, 2, 9, 0},  {3, 3, 5, 5},  {4, 2, 4, 0}, {4, 2, 8, 0},  {4, 2, 10, 5}, {4, 2, 13, 9},
    {4, 2, 14, 5}, {4, 3, 12, 6}, {4, 4, 9, 4}, {8, 2, 16, 0}, {8, 4, 24, 0}, {8, 2, 19, 11},
};

/* Every valid parameter set: 1F1B shapes once, interleaved shapes under every p2p variant. */
static GArray *all_params(void)
{
  GArray *ps = g_array_new(FALSE, TRUE, sizeof(PnSchedParams));
  for (size_t i = 0; i < G_N_ELEMENTS(kShapes1f1b); i++) {
    const Shape *s  = &kShapes1f1b[i];
    PnSchedParams p = {.pp = s->pp, .vpp = s->vpp, .num_microbatches = s->m, .group_size = s->group};
    g_array_append_val(ps, p);
    if (s->pp == 1) { /* combined 1F1B (EP overlap) without pipelining */
      p.combined_1f1b = true;
      g_array_append_val(ps, p);
    }
  }
  for (size_t i = 0; i < G_N_ELEMENTS(kShapesInterleaved); i++) {
    const Shape *s = &kShapesInterleaved[i];
    for (int variant = 0; variant < 10; variant++) {
      PnSchedParams p                 = {.pp = s->pp, .vpp = s->vpp, .num_microbatches = s->m, .group_size = s->group};
      p.overlap_p2p_comm              = variant % 5 > 0;
      p.deallocate_pipeline_outputs   = variant % 5 == 2 || variant % 5 == 4;
      p.overlap_p2p_comm_warmup_flush = variant % 5 >= 3;
      p.combined_1f1b                 = variant >= 5;
      if (!pn_sched_validate(&p, NULL))
        continue; /* pp == 2 without overlap */
      g_array_append_val(ps, p);
    }
  }
  return ps;
}

static char *params_str(const PnSchedParams *p)
{
  return g_strdup_printf("pp=%" G_GINT64_FORMAT " vpp=%" G_GINT64_FORMAT " m=%" G_GINT64_FORMAT " g=%" G_GINT64_FORMAT
                         " overlap=%d dealloc=%d flush=%d combined=%d",
                         p->pp, p->vpp, p->num_microbatches, p->group_size, p->overlap_p2p_comm,
                         p->deallocate_pipeline_outputs, p->overlap_p2p_comm_warmup_flush, p->combined_1f1b);
}

/* All ranks' action lists; element r is a GArray of PnSchedAction. */
static GPtrArray *all_ranks(const PnSchedParams *p)
{
  GPtrArray *ranks = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  for (int64_t r = 0; r < p->pp; r++) {
    GArray *a           = g_array_new(FALSE, TRUE, sizeof(PnSchedAction));
    GError *err         = NULL;
    gboolean ok         = pn_sched_actions(p, r, a, &err);
    g_autofree char *ps = params_str(p);
    ck_assert_msg(ok, "%s rank %" G_GINT64_FORMAT ": %s", ps, r, err ? err->message : "?");
    g_ptr_array_add(ranks, a);
  }
  return ranks;
}

#define ACT(arr, i) (&g_array_index((arr), PnSchedAction, (i)))

static bool xfer_eq(const PnXfer *a, const PnXfer *b)
{
  return a->send == b->send && a->activation == b->activation && a->microbatch == b->microbatch &&
         a->chunk == b->chunk && a->peer == b->peer;
}

/* ---- rendering for golden sequences ------------------------------------------------------ */

static const char *short_call(uint8_t call)
{
  static const char *names[] = {"?", "rf", "sf", "rb", "sb", "sfrb", "sbrf", "sfrf", "sbrb", "sfbrfb"};
  return call < G_N_ELEMENTS(names) ? names[call] : "?";
}

static void render_xfer(GString *s, const PnXfer *x)
{
  g_string_append_printf(s, "%c%c%d.%d", x->send ? 's' : 'r', x->activation ? 'a' : 'g', x->microbatch, x->chunk);
}

/* "F<mb>.<chunk>", "B<mb>.<chunk>", "<call>(<xfers>)" with '~' for async, "w(<xfer>)" for
 * waits, "|" between phases. */
static char *render(const GArray *acts)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < acts->len; i++) {
    const PnSchedAction *a = ACT(acts, i);
    if (i > 0)
      g_string_append(s, a->phase != ACT(acts, i - 1)->phase ? " | " : " ");
    switch (a->kind) {
    case PN_ACT_FWD:
    case PN_ACT_BWD:
      g_string_append_printf(s, "%c%d.%d", a->kind == PN_ACT_FWD ? 'F' : 'B', a->microbatch, a->chunk);
      break;
    case PN_ACT_COMM:
      g_string_append_printf(s, "%s%s(", a->async ? "~" : "", short_call(a->call));
      for (int x = 0; x < a->n_xfers; x++) {
        if (x > 0)
          g_string_append_c(s, ' ');
        render_xfer(s, &a->xfer[x]);
      }
      g_string_append_c(s, ')');
      break;
    case PN_ACT_WAIT:
      g_string_append(s, "w(");
      render_xfer(s, &a->xfer[0]);
      g_string_append_c(s, ')');
      break;
    }
  }
  return g_string_free(s, FALSE);
}

static char *render_rank(const PnSchedParams *p, int64_t r)
{
  g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(PnSchedAction));
  GError *err         = NULL;
  ck_assert_msg(pn_sched_actions(p, r, a, &err), "%s", err ? err->message : "?");
  return render(a);
}

/* ---- TCase: compute counts and order ------------------------------------------------------ */

/* Each rank runs F and B of every (micro-batch, chunk) exactly once, F first. */
START_TEST(test_every_step_once_forward_first)
{
  g_autoptr(GArray) ps = all_params();
  for (guint i = 0; i < ps->len; i++) {
    const PnSchedParams *p  = &g_array_index(ps, PnSchedParams, i);
    g_autoptr(GPtrArray) rs = all_ranks(p);
    g_autofree char *pstr   = params_str(p);
    int64_t n               = p->num_microbatches * p->vpp;
    for (guint r = 0; r < rs->len; r++) {
      GArray *acts           = g_ptr_array_index(rs, r);
      g_autofree int *fwd_at = g_new(int, n);
      g_autofree int *bwd_at = g_new(int, n);
      int nf = 0, nb = 0;
      for (int64_t j = 0; j < n; j++)
        fwd_at[j] = bwd_at[j] = -1;
      for (guint j = 0; j < acts->len; j++) {
        const PnSchedAction *a = ACT(acts, j);
        if (a->kind != PN_ACT_FWD && a->kind != PN_ACT_BWD)
          continue;
        ck_assert_msg(a->microbatch >= 0 && a->microbatch < p->num_microbatches && a->chunk >= 0 && a->chunk < p->vpp,
                      "%s rank %u: bad step %d.%d", pstr, r, a->microbatch, a->chunk);
        int64_t id = (int64_t)a->chunk * p->num_microbatches + a->microbatch;
        int *slot  = a->kind == PN_ACT_FWD ? &fwd_at[id] : &bwd_at[id];
        ck_assert_msg(*slot < 0, "%s rank %u: step %d.%d twice", pstr, r, a->microbatch, a->chunk);
        *slot = (int)j;
        if (a->kind == PN_ACT_FWD)
          nf++;
        else
          nb++;
      }
      ck_assert_int_eq(nf, n);
      ck_assert_int_eq(nb, n);
      for (int64_t j = 0; j < n; j++)
        ck_assert_msg(fwd_at[j] < bwd_at[j], "%s rank %u: backward before forward", pstr, r);
    }
  }
}
END_TEST

/* ---- TCase: warm-up counts --------------------------------------------------------------- */

/* Interleaved: W = (pp - r - 1)*2 + (vpp - 1)*g, capped at m*vpp. PP=4, VP=2, g=4, m=8:
 * rank 0: 3*2 + 4 = 10 (< 16); rank 1: 2*2 + 4 = 8; rank 3: 0 + 4 = 4. With m=4 the cap 8
 * binds on rank 0 (all warm-up). 1F1B: W = min(pp - r - 1, m). */
START_TEST(test_warmup_counts)
{
  PnSchedParams p = {.pp = 4, .vpp = 2, .num_microbatches = 8, .group_size = 4};
  ck_assert_int_eq(pn_sched_num_warmup(&p, 0), 10);
  ck_assert_int_eq(pn_sched_num_warmup(&p, 1), 8);
  ck_assert_int_eq(pn_sched_num_warmup(&p, 3), 4);
  p.num_microbatches = 4;
  ck_assert_int_eq(pn_sched_num_warmup(&p, 0), 8);
  ck_assert_int_eq(pn_sched_num_warmup(&p, 3), 4);
  p.group_size = 0; /* defaults to pp */
  ck_assert_int_eq(pn_sched_num_warmup(&p, 2), 6);
  PnSchedParams q = {.pp = 8, .vpp = 1, .num_microbatches = 3};
  ck_assert_int_eq(pn_sched_num_warmup(&q, 0), 3);
  ck_assert_int_eq(pn_sched_num_warmup(&q, 5), 2);
  ck_assert_int_eq(pn_sched_num_warmup(&q, 7), 0);

  /* The action lists agree: forwards before the first backward = W, plus the steady state's
   * first forward when there is one. */
  g_autoptr(GArray) ps = all_params();
  for (guint i = 0; i < ps->len; i++) {
    const PnSchedParams *pi = &g_array_index(ps, PnSchedParams, i);
    g_autoptr(GPtrArray) rs = all_ranks(pi);
    for (guint r = 0; r < rs->len; r++) {
      int64_t w = pn_sched_num_warmup(pi, r), total = pi->num_microbatches * pi->vpp;
      int64_t extra = pi->combined_1f1b ? 1 : 0; /* combined 1F1B: one more warm-up forward */
      int64_t expect_w =
          pi->vpp == 1
              ? MIN((int64_t)pi->pp - r - 1 + extra, pi->num_microbatches)
              : MIN((pi->pp - r - 1) * 2 + (pi->vpp - 1) * (pi->group_size ? pi->group_size : pi->pp) + extra, total);
      ck_assert_int_eq(w, expect_w);
      GArray *acts = g_ptr_array_index(rs, r);
      int64_t nf = 0, nwarm = 0;
      for (guint j = 0; j < acts->len && ACT(acts, j)->kind != PN_ACT_BWD; j++)
        nf += ACT(acts, j)->kind == PN_ACT_FWD;
      for (guint j = 0; j < acts->len; j++)
        nwarm += ACT(acts, j)->kind == PN_ACT_FWD && ACT(acts, j)->phase == PN_PHASE_WARMUP;
      ck_assert_int_eq(nf, w + (w < total ? 1 : 0));
      ck_assert_int_eq(nwarm, w);
    }
  }
}
END_TEST

/* ---- TCase: schedule table --------------------------------------------------------------- */

/* schedules.py's comment for PP2 N3 M5 VP2 (N = group 3, M = 5 micro-batches):
 *   virtual id 0 1 2 3 4 5 6 7 8 9
 *   microbatch 0 1 2 0 1 2 3 4 3 4
 *   chunk      0 0 0 1 1 1 0 0 1 1
 * Backward k runs the same micro-batch on chunk vpp-1-chunk. model_parallel_config.py's
 * PP2 VP2 g2 m4 example: 0 1 0 1 2 3 2 3. */
START_TEST(test_schedule_table_docstring)
{
  PnSchedParams p     = {.pp = 2, .vpp = 2, .num_microbatches = 5, .group_size = 3, .overlap_p2p_comm = true};
  g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(PnSchedAction));
  ck_assert(pn_sched_actions(&p, 0, a, NULL));
  const int mb[]    = {0, 1, 2, 0, 1, 2, 3, 4, 3, 4};
  const int chunk[] = {0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
  int nf = 0, nb = 0;
  for (guint i = 0; i < a->len; i++) {
    const PnSchedAction *x = ACT(a, i);
    if (x->kind == PN_ACT_FWD) {
      ck_assert_int_eq(x->virtual_id, nf);
      ck_assert_int_eq(x->microbatch, mb[nf]);
      ck_assert_int_eq(x->chunk, chunk[nf]);
      nf++;
    } else if (x->kind == PN_ACT_BWD) {
      ck_assert_int_eq(x->virtual_id, nb);
      ck_assert_int_eq(x->microbatch, mb[nb]);
      ck_assert_int_eq(x->chunk, 1 - chunk[nb]);
      nb++;
    }
  }
  ck_assert_int_eq(nf, 10);
  ck_assert_int_eq(nb, 10);

  PnSchedParams q = {.pp = 2, .vpp = 2, .num_microbatches = 4, .group_size = 2, .overlap_p2p_comm = true};
  ck_assert(pn_sched_actions(&q, 1, a, NULL));
  const int mb2[] = {0, 1, 0, 1, 2, 3, 2, 3};
  nf              = 0;
  for (guint i = 0; i < a->len; i++)
    if (ACT(a, i)->kind == PN_ACT_FWD)
      ck_assert_int_eq(ACT(a, i)->microbatch, mb2[nf++]);
  ck_assert_int_eq(nf, 8);
}
END_TEST

/* ---- TCase: golden call sequences -------------------------------------------------------- */

/* 1F1B, pp=3, m=4, rank 1: W=1, R=3. Warm-up recv_forward/F/send_forward; recv_forward before
 * the steady state; the last steady iteration sends its gradient with send_backward; cool-down
 * recv_backward/B/send_backward. Rank 0 never receives activations, rank 2 never sends them;
 * rank 2 has no warm-up, so its first recv_forward is already in the steady phase. */
START_TEST(test_golden_1f1b)
{
  PnSchedParams p     = {.pp = 3, .vpp = 1, .num_microbatches = 4};
  g_autofree char *r1 = render_rank(&p, 1);
  ck_assert_str_eq(r1, "rf(ra0.0) F0.0 sf(sa0.0) | rf(ra1.0) F1.0 sfrb(sa1.0 rg0.0) B0.0 sbrf(sg0.0 ra2.0) "
                       "F2.0 sfrb(sa2.0 rg1.0) B1.0 sbrf(sg1.0 ra3.0) F3.0 sfrb(sa3.0 rg2.0) B2.0 sb(sg2.0) | "
                       "rb(rg3.0) B3.0 sb(sg3.0)");
  g_autofree char *r0 = render_rank(&p, 0);
  ck_assert_str_eq(r0, "F0.0 sf(sa0.0) F1.0 sf(sa1.0) | F2.0 sfrb(sa2.0 rg0.0) B0.0 F3.0 sfrb(sa3.0 rg1.0) B1.0 | "
                       "rb(rg2.0) B2.0 rb(rg3.0) B3.0");
  g_autofree char *r2 = render_rank(&p, 2);
  ck_assert_str_eq(r2, "rf(ra0.0) F0.0 B0.0 sbrf(sg0.0 ra1.0) F1.0 B1.0 sbrf(sg1.0 ra2.0) F2.0 B2.0 "
                       "sbrf(sg2.0 ra3.0) F3.0 B3.0 sb(sg3.0)");
  /* pp == 1 is forward_backward_no_pipelining: F, B per micro-batch, no p2p. */
  PnSchedParams q    = {.pp = 1, .vpp = 1, .num_microbatches = 2};
  g_autofree char *s = render_rank(&q, 0);
  ck_assert_str_eq(s, "F0.0 B0.0 F1.0 B1.0");
}
END_TEST

/* Interleaved without overlap, pp=3, vpp=2, m=3 (g=3), rank 2: W = 0 + 3 = 3, R = 3.
 * Table: mb 0 1 2 0 1 2, chunk 0 0 0 1 1 1. Rank 2 sends chunk-0 activations to rank 0 (ring);
 * its chunk 1 is the last virtual stage (no activation out, no gradient in). It leads the
 * backward direction: its first gradient receive is after backward k = pp-1 = 2, aligned with
 * rank 0's backward 0 (chunk 1), so it is for chunk 0. The last warm-up step uses the fused
 * 4-way call; it has no gradient to receive here. */
START_TEST(test_golden_interleaved)
{
  PnSchedParams p     = {.pp = 3, .vpp = 2, .num_microbatches = 3};
  g_autofree char *r2 = render_rank(&p, 2);
  ck_assert_str_eq(r2, "rf(ra0.0) F0.0 sfrf(sa0.0 ra1.0) F1.0 sfrf(sa1.0 ra2.0) F2.0 sfbrfb(sa2.0 ra0.1) | "
                       "F0.1 B0.1 sfbrfb(sg0.1 ra1.1) F1.1 B1.1 sfbrfb(sg1.1 ra2.1) F2.1 B2.1 sfbrfb(sg2.1 rg0.0) | "
                       "B0.0 sbrb(sg0.0 rg1.0) B1.0 sbrb(sg1.0 rg2.0) B2.0 sbrb(sg2.0)");
}
END_TEST

/* Interleaved with overlap, pp=2, vpp=2, m=2 (g=2), rank 1: W=2, R=2. Warm-up is blocking; the
 * async send_backward_recv_backward after warm-up has nothing to do on the last rank. Steady:
 * wait the oldest activation recv before a forward that needs it (none queued at first), post
 * async, wait the previous send of the same direction. Cool-down waits the gradient receive
 * posted by the last steady step, then blocks; the last async gradient send is waited at the
 * end. With deallocate_pipeline_outputs the activation sends are waited at once (none here). */
START_TEST(test_golden_interleaved_overlap)
{
  PnSchedParams p     = {.pp = 2, .vpp = 2, .num_microbatches = 2, .overlap_p2p_comm = true};
  g_autofree char *r1 = render_rank(&p, 1);
  ck_assert_str_eq(r1, "rf(ra0.0) F0.0 sfrf(sa0.0 ra1.0) F1.0 sfrf(sa1.0 ra0.1) | "
                       "F0.1 ~sfrf(ra1.1) B0.1 ~sbrb(sg0.1) w(ra1.1) F1.1 B1.1 ~sbrb(sg1.1 rg0.0) w(sg0.1) | "
                       "w(rg0.0) B0.0 sbrb(sg0.0 rg1.0) B1.0 sbrb(sg1.0) w(sg1.1)");
  /* Rank 0 with m=4: W = 2 + 2 = 4 < 8. It leads the forward: its chunk-1 inputs come from
   * rank 1 (ring), aligned pp-1 = 1 step behind, none after rank 1's chunk-1 forwards. With
   * deallocate_pipeline_outputs each activation send is waited right after it is posted. */
  p.num_microbatches            = 4;
  p.deallocate_pipeline_outputs = true;
  g_autofree char *r0           = render_rank(&p, 0);
  ck_assert_str_eq(r0, "F0.0 sfrf(sa0.0) F1.0 sfrf(sa1.0 ra0.1) F0.1 sfrf(sa0.1 ra1.1) F1.1 sfrf(sa1.1) ~sbrb(rg0.1) | "
                       "F2.0 ~sfrf(sa2.0) w(sa2.0) w(rg0.1) B0.1 ~sbrb(sg0.1 rg1.1) "
                       "F3.0 ~sfrf(sa3.0 ra2.1) w(sa3.0) w(rg1.1) B1.1 ~sbrb(sg1.1 rg0.0) w(sg0.1) "
                       "w(ra2.1) F2.1 ~sfrf(sa2.1 ra3.1) w(sa2.1) w(rg0.0) B0.0 ~sbrb(rg1.0) w(sg1.1) "
                       "w(ra3.1) F3.1 ~sfrf(sa3.1) w(sa3.1) w(rg1.0) B1.0 ~sbrb(rg2.1) | "
                       "w(rg2.1) B2.1 sbrb(sg2.1 rg3.1) B3.1 sbrb(sg3.1 rg2.0) B2.0 sbrb(rg3.0) B3.0");
  /* m=2: rank 0's W = 4 = m*vpp, all warm-up: no steady state, blocking recv_backward first. */
  p.num_microbatches  = 2;
  g_autofree char *a0 = render_rank(&p, 0);
  ck_assert_str_eq(a0, "F0.0 sfrf(sa0.0) F1.0 sfrf(sa1.0 ra0.1) F0.1 sfrf(sa0.1 ra1.1) F1.1 sfrf(sa1.1) | "
                       "rb(rg0.1) B0.1 sbrb(sg0.1 rg1.1) B1.1 sbrb(sg1.1 rg0.0) B0.0 sbrb(rg1.0) B1.0");
}
END_TEST

/* ---- TCase: global send/recv matching ---------------------------------------------------- */

/* Identity of a transfer: (activation, micro-batch, virtual stage that produced it). A receive
 * on rank b for chunk c is consumed at virtual stage c*pp + b, so it was produced one stage
 * earlier (activation) or later (gradient). */
typedef struct {
  bool activation;
  int32_t microbatch;
  int64_t producer_vstage;
} Ident;

static Ident xfer_ident(const PnSchedParams *p, int64_t rank, const PnXfer *x)
{
  int64_t vs = (int64_t)x->chunk * p->pp + rank;
  if (!x->send)
    vs += x->activation ? -1 : 1;
  return (Ident){.activation = x->activation, .microbatch = x->microbatch, .producer_vstage = vs};
}

/* For each ordered pair (a, b), the sequence of a's sends to b, in a's action order, equals the
 * sequence of b's receives from a, in b's order (NCCL matches p2p per pair in posting order; for
 * pp == 2 both directions' tensors share one pair). Peers are ring neighbours. */
START_TEST(test_send_recv_match)
{
  g_autoptr(GArray) ps = all_params();
  for (guint i = 0; i < ps->len; i++) {
    const PnSchedParams *p    = &g_array_index(ps, PnSchedParams, i);
    g_autoptr(GPtrArray) rs   = all_ranks(p);
    g_autofree char *pstr     = params_str(p);
    int64_t pp                = p->pp;
    g_autofree GArray **sends = g_new0(GArray *, pp * pp);
    g_autofree GArray **recvs = g_new0(GArray *, pp * pp);
    for (int64_t k = 0; k < pp * pp; k++) {
      sends[k] = g_array_new(FALSE, FALSE, sizeof(Ident));
      recvs[k] = g_array_new(FALSE, FALSE, sizeof(Ident));
    }
    for (int64_t r = 0; r < pp; r++) {
      GArray *acts = g_ptr_array_index(rs, r);
      for (guint j = 0; j < acts->len; j++) {
        const PnSchedAction *a = ACT(acts, j);
        if (a->kind != PN_ACT_COMM)
          continue;
        ck_assert(a->n_xfers >= 1 && a->n_xfers <= PN_SCHED_MAX_XFERS);
        for (int x = 0; x < a->n_xfers; x++) {
          const PnXfer *t = &a->xfer[x];
          int64_t want    = (t->send == t->activation) ? (r + 1) % pp : (r - 1 + pp) % pp;
          ck_assert_msg(t->peer == want, "%s rank %" G_GINT64_FORMAT ": peer %d, want %" G_GINT64_FORMAT, pstr, r,
                        t->peer, want);
          Ident id = xfer_ident(p, r, t);
          if (t->send)
            g_array_append_val(sends[r * pp + t->peer], id);
          else
            g_array_append_val(recvs[t->peer * pp + r], id);
        }
      }
    }
    int64_t n_xfers = 0;
    for (int64_t a = 0; a < pp; a++)
      for (int64_t b = 0; b < pp; b++) {
        GArray *s = sends[a * pp + b], *v = recvs[a * pp + b];
        ck_assert_msg(s->len == v->len, "%s: %" G_GINT64_FORMAT "->%" G_GINT64_FORMAT " %u sends, %u recvs", pstr, a, b,
                      s->len, v->len);
        for (guint k = 0; k < s->len; k++) {
          Ident x = g_array_index(s, Ident, k), y = g_array_index(v, Ident, k);
          ck_assert_msg(x.activation == y.activation && x.microbatch == y.microbatch &&
                            x.producer_vstage == y.producer_vstage,
                        "%s: %" G_GINT64_FORMAT "->%" G_GINT64_FORMAT " #%u: sent %c mb %d vstage %" G_GINT64_FORMAT
                        ", received as %c mb %d vstage %" G_GINT64_FORMAT,
                        pstr, a, b, k, x.activation ? 'a' : 'g', x.microbatch, x.producer_vstage,
                        y.activation ? 'a' : 'g', y.microbatch, y.producer_vstage);
        }
        n_xfers += s->len;
        g_array_unref(s);
        g_array_unref(v);
      }
    /* Every stage boundary is crossed once per micro-batch in each direction. */
    int64_t boundaries = p->pp * p->vpp - 1;
    ck_assert_int_eq(n_xfers, 2 * boundaries * p->num_microbatches);
  }
}
END_TEST

/* ---- TCase: deadlock freedom ------------------------------------------------------------- */

/* Posting model. A COMM posts all its transfers when its rank reaches it; a blocking COMM then
 * completes when each of its transfers is matched (the peer has posted the counterpart, i-th
 * send of a->b with i-th receive of b from a); an async COMM completes at once; a WAIT completes
 * when its transfer is matched; FWD/BWD complete at once. Ranks advance in rounds until none
 * can; all must reach their end, with nothing left unmatched. */
typedef struct {
  const PnSchedParams *p;
  GPtrArray *ranks;
  int64_t *posted_sends, *posted_recvs; /* [src*pp + dst] */
  GArray **seq;                         /* per rank: int32 channel seq per action*4 + xfer */
  guint *pc;
} Sim;

static bool xfer_matched(const Sim *s, int64_t r, const PnXfer *x, int32_t seq)
{
  int64_t pp = s->p->pp;
  if (x->send)
    return s->posted_recvs[r * pp + x->peer] > seq;
  return s->posted_sends[x->peer * pp + r] > seq;
}

static int32_t *seq_slot(Sim *s, int64_t r, guint action, int x)
{
  return &g_array_index(s->seq[r], int32_t, action * PN_SCHED_MAX_XFERS + (guint)x);
}

/* Advances rank r as far as it can; returns whether anything happened. */
static bool sim_advance(Sim *s, int64_t r)
{
  GArray *acts  = g_ptr_array_index(s->ranks, r);
  int64_t pp    = s->p->pp;
  bool progress = false;
  while (s->pc[r] < acts->len) {
    guint j                = s->pc[r];
    const PnSchedAction *a = ACT(acts, j);
    if (a->kind == PN_ACT_COMM) {
      if (*seq_slot(s, r, j, 0) < 0) {
        for (int x = 0; x < a->n_xfers; x++) {
          const PnXfer *t       = &a->xfer[x];
          int64_t *cnt          = t->send ? &s->posted_sends[r * pp + t->peer] : &s->posted_recvs[t->peer * pp + r];
          *seq_slot(s, r, j, x) = (int32_t)(*cnt)++;
        }
        progress = true;
      }
      if (!a->async)
        for (int x = 0; x < a->n_xfers; x++)
          if (!xfer_matched(s, r, &a->xfer[x], *seq_slot(s, r, j, x)))
            return progress;
    } else if (a->kind == PN_ACT_WAIT) {
      ck_assert(a->wait_action >= 0 && (guint)a->wait_action < j);
      const PnSchedAction *c = ACT(acts, a->wait_action);
      ck_assert(c->kind == PN_ACT_COMM && c->async && a->wait_xfer < c->n_xfers);
      if (!xfer_matched(s, r, &c->xfer[a->wait_xfer], *seq_slot(s, r, (guint)a->wait_action, a->wait_xfer)))
        return progress;
    }
    s->pc[r]++;
    progress = true;
  }
  return progress;
}

START_TEST(test_deadlock_free)
{
  g_autoptr(GArray) ps = all_params();
  for (guint i = 0; i < ps->len; i++) {
    const PnSchedParams *p  = &g_array_index(ps, PnSchedParams, i);
    g_autoptr(GPtrArray) rs = all_ranks(p);
    g_autofree char *pstr   = params_str(p);
    int64_t pp              = p->pp;
    Sim s                   = {.p = p, .ranks = rs};
    s.posted_sends          = g_new0(int64_t, pp * pp);
    s.posted_recvs          = g_new0(int64_t, pp * pp);
    s.seq                   = g_new0(GArray *, pp);
    s.pc                    = g_new0(guint, pp);
    for (int64_t r = 0; r < pp; r++) {
      GArray *acts = g_ptr_array_index(rs, r);
      s.seq[r]     = g_array_new(FALSE, FALSE, sizeof(int32_t));
      g_array_set_size(s.seq[r], acts->len * PN_SCHED_MAX_XFERS);
      for (guint k = 0; k < s.seq[r]->len; k++)
        g_array_index(s.seq[r], int32_t, k) = -1;
    }
    bool progress = true;
    while (progress) {
      progress = false;
      for (int64_t r = 0; r < pp; r++)
        progress |= sim_advance(&s, r);
    }
    for (int64_t r = 0; r < pp; r++) {
      GArray *acts = g_ptr_array_index(rs, r);
      if (s.pc[r] < acts->len) {
        g_autofree char *all = render(acts);
        ck_abort_msg("%s: rank %" G_GINT64_FORMAT " stuck at action %u of %u: %s", pstr, r, s.pc[r], acts->len, all);
      }
    }
    for (int64_t k = 0; k < pp * pp; k++)
      ck_assert_msg(s.posted_sends[k] == s.posted_recvs[k], "%s: unmatched transfers on pair %" G_GINT64_FORMAT, pstr,
                    k);
    for (int64_t r = 0; r < pp; r++)
      g_array_unref(s.seq[r]);
    g_free(s.posted_sends);
    g_free(s.posted_recvs);
    g_free(s.seq);
    g_free(s.pc);
  }
}
END_TEST

/* ---- TCase: received tensors are ready before use ---------------------------------------- */

/* A received tensor is usable after its blocking call returns or after a WAIT on its async
 * receive. Every forward except the first virtual stage's, and every backward except the last
 * virtual stage's, must find its input ready (Megatron waits on the oldest outstanding receive
 * before each such step). Every async receive is waited exactly once; waits name earlier async
 * calls of the same rank. */
START_TEST(test_recv_waited_before_use)
{
  g_autoptr(GArray) ps = all_params();
  for (guint i = 0; i < ps->len; i++) {
    const PnSchedParams *p  = &g_array_index(ps, PnSchedParams, i);
    g_autoptr(GPtrArray) rs = all_ranks(p);
    g_autofree char *pstr   = params_str(p);
    int64_t n               = p->num_microbatches * p->vpp;
    for (int64_t r = 0; r < p->pp; r++) {
      GArray *acts             = g_ptr_array_index(rs, r);
      g_autofree bool *act_ok  = g_new0(bool, n); /* [chunk*m + mb] */
      g_autofree bool *grad_ok = g_new0(bool, n);
      g_autofree int *wait_cnt = g_new0(int, acts->len *PN_SCHED_MAX_XFERS);
      for (guint j = 0; j < acts->len; j++) {
        const PnSchedAction *a = ACT(acts, j);
        if (a->kind == PN_ACT_COMM && !a->async) {
          for (int x = 0; x < a->n_xfers; x++)
            if (!a->xfer[x].send) {
              int64_t id = (int64_t)a->xfer[x].chunk * p->num_microbatches + a->xfer[x].microbatch;
              (a->xfer[x].activation ? act_ok : grad_ok)[id] = true;
            }
        } else if (a->kind == PN_ACT_WAIT) {
          const PnSchedAction *c = ACT(acts, a->wait_action);
          ck_assert(a->wait_action >= 0 && (guint)a->wait_action < j && c->kind == PN_ACT_COMM && c->async);
          const PnXfer *t = &c->xfer[a->wait_xfer];
          ck_assert(xfer_eq(&a->xfer[0], t));
          ck_assert_msg(++wait_cnt[a->wait_action * PN_SCHED_MAX_XFERS + a->wait_xfer] == 1, "%s: double wait", pstr);
          if (!t->send) {
            int64_t id                             = (int64_t)t->chunk * p->num_microbatches + t->microbatch;
            (t->activation ? act_ok : grad_ok)[id] = true;
          }
        } else if (a->kind == PN_ACT_FWD) {
          if (!(a->chunk == 0 && r == 0))
            ck_assert_msg(act_ok[(int64_t)a->chunk * p->num_microbatches + a->microbatch],
                          "%s rank %" G_GINT64_FORMAT " action %u: F%d.%d input not ready", pstr, r, j, a->microbatch,
                          a->chunk);
        } else if (a->kind == PN_ACT_BWD) {
          if (!(a->chunk == p->vpp - 1 && r == p->pp - 1))
            ck_assert_msg(grad_ok[(int64_t)a->chunk * p->num_microbatches + a->microbatch],
                          "%s rank %" G_GINT64_FORMAT " action %u: B%d.%d output grad not ready", pstr, r, j,
                          a->microbatch, a->chunk);
        }
      }
      for (guint j = 0; j < acts->len; j++) {
        const PnSchedAction *a = ACT(acts, j);
        if (a->kind == PN_ACT_COMM && a->async)
          for (int x = 0; x < a->n_xfers; x++)
            if (!a->xfer[x].send)
              ck_assert_msg(wait_cnt[j * PN_SCHED_MAX_XFERS + (guint)x] == 1,
                            "%s rank %" G_GINT64_FORMAT ": async receive at %u never waited", pstr, r, j);
      }
    }
  }
}
END_TEST

/* ---- TCase: grad-sync and param-gather markers ------------------------------------------- */

/* Exactly one first_forward_of_chunk per chunk, on its first forward (micro-batch 0); exactly
 * one last_backward_of_chunk per chunk, on its last backward (micro-batch m-1). */
START_TEST(test_chunk_markers)
{
  g_autoptr(GArray) ps = all_params();
  for (guint i = 0; i < ps->len; i++) {
    const PnSchedParams *p  = &g_array_index(ps, PnSchedParams, i);
    g_autoptr(GPtrArray) rs = all_ranks(p);
    for (guint r = 0; r < rs->len; r++) {
      GArray *acts           = g_ptr_array_index(rs, r);
      g_autofree int *nfirst = g_new0(int, p->vpp);
      g_autofree int *nlast  = g_new0(int, p->vpp);
      g_autofree int *seen_f = g_new0(int, p->vpp);
      g_autofree int *left_b = g_new0(int, p->vpp);
      for (int64_t c = 0; c < p->vpp; c++)
        left_b[c] = (int)p->num_microbatches;
      for (guint j = 0; j < acts->len; j++) {
        const PnSchedAction *a = ACT(acts, j);
        if (a->kind == PN_ACT_FWD) {
          ck_assert_int_eq(a->first_forward_of_chunk, seen_f[a->chunk] == 0);
          ck_assert_int_eq(a->first_forward_of_chunk, a->microbatch == 0);
          ck_assert(!a->last_backward_of_chunk);
          seen_f[a->chunk]++;
          nfirst[a->chunk] += a->first_forward_of_chunk;
        } else if (a->kind == PN_ACT_BWD) {
          left_b[a->chunk]--;
          ck_assert_int_eq(a->last_backward_of_chunk, left_b[a->chunk] == 0);
          ck_assert_int_eq(a->last_backward_of_chunk, a->microbatch == p->num_microbatches - 1);
          ck_assert(!a->first_forward_of_chunk);
          nlast[a->chunk] += a->last_backward_of_chunk;
        }
      }
      for (int64_t c = 0; c < p->vpp; c++) {
        ck_assert_int_eq(nfirst[c], 1);
        ck_assert_int_eq(nlast[c], 1);
      }
    }
  }
}
END_TEST

/* ---- TCase: p2p call set per schedule ---------------------------------------------------- */

/* Which P2PCommunicator methods each path calls: 1F1B never uses the interleaved combined
 * calls; interleaved never uses the 1F1B pairs; only the overlap path posts async calls and
 * waits; the 4-way call appears only without overlap; COMMs never are empty. */
START_TEST(test_call_sets)
{
  g_autoptr(GArray) ps = all_params();
  for (guint i = 0; i < ps->len; i++) {
    const PnSchedParams *p  = &g_array_index(ps, PnSchedParams, i);
    g_autoptr(GPtrArray) rs = all_ranks(p);
    bool ov                 = pn_sched_overlap_p2p_effective(p);
    for (guint r = 0; r < rs->len; r++) {
      GArray *acts = g_ptr_array_index(rs, r);
      for (guint j = 0; j < acts->len; j++) {
        const PnSchedAction *a = ACT(acts, j);
        if (a->kind == PN_ACT_WAIT)
          ck_assert(ov);
        if (a->kind != PN_ACT_COMM) {
          ck_assert_int_eq(a->call, PN_P2P_NONE);
          continue;
        }
        ck_assert(a->n_xfers >= 1);
        ck_assert(!a->async || ov);
        if (p->vpp == 1)
          ck_assert(a->call >= PN_P2P_RECV_FORWARD && a->call <= PN_P2P_SEND_BACKWARD_RECV_FORWARD);
        else
          ck_assert(a->call == PN_P2P_RECV_FORWARD || a->call == PN_P2P_RECV_BACKWARD ||
                    a->call >= PN_P2P_SEND_FORWARD_RECV_FORWARD);
        if (a->call == PN_P2P_SEND_FORWARD_BACKWARD_RECV_FORWARD_BACKWARD)
          ck_assert(!ov);
        if (a->n_xfers > 2)
          ck_assert_int_eq(a->call, PN_P2P_SEND_FORWARD_BACKWARD_RECV_FORWARD_BACKWARD);
      }
    }
  }
  ck_assert_str_eq(pn_sched_call_name(PN_P2P_SEND_FORWARD_RECV_BACKWARD), "send_forward_recv_backward");
  ck_assert_str_eq(pn_sched_kind_name(PN_ACT_WAIT), "wait");
  ck_assert_str_eq(pn_sched_phase_name(PN_PHASE_COOLDOWN), "cooldown");
}
END_TEST

/* ---- TCase: determinism ------------------------------------------------------------------ */

static bool action_eq(const PnSchedAction *a, const PnSchedAction *b)
{
  if (a->kind != b->kind || a->phase != b->phase || a->call != b->call || a->async != b->async ||
      a->microbatch != b->microbatch || a->chunk != b->chunk || a->virtual_id != b->virtual_id ||
      a->n_xfers != b->n_xfers || a->wait_action != b->wait_action || a->wait_xfer != b->wait_xfer ||
      a->last_backward_of_chunk != b->last_backward_of_chunk || a->first_forward_of_chunk != b->first_forward_of_chunk)
    return false;
  for (int x = 0; x < a->n_xfers; x++)
    if (!xfer_eq(&a->xfer[x], &b->xfer[x]))
      return false;
  return true;
}

/* Same parameters, same list; a reused output array is overwritten, not appended to. */
START_TEST(test_deterministic)
{
  PnSchedParams p     = {.pp = 4, .vpp = 2, .num_microbatches = 14, .group_size = 5, .overlap_p2p_comm = true};
  g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(PnSchedAction));
  g_autoptr(GArray) b = g_array_new(FALSE, TRUE, sizeof(PnSchedAction));
  ck_assert(pn_sched_actions(&p, 1, a, NULL));
  ck_assert(pn_sched_actions(&p, 2, b, NULL));
  ck_assert(pn_sched_actions(&p, 1, b, NULL));
  ck_assert_uint_eq(a->len, b->len);
  for (guint i = 0; i < a->len; i++)
    ck_assert(action_eq(ACT(a, i), ACT(b, i)));
}
END_TEST

/* ---- TCase: validation ------------------------------------------------------------------- */

static void expect_invalid(PnSchedParams p, const char *needle)
{
  GError *err = NULL;
  ck_assert(!pn_sched_validate(&p, &err));
  ck_assert(err != NULL);
  ck_assert_int_eq(err->code, PN_SCHED_ERROR_INVALID);
  ck_assert(g_error_matches(err, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID));
  ck_assert_msg(strstr(err->message, needle) != NULL, "'%s' lacks '%s'", err->message, needle);
  g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(PnSchedAction));
  GError *err2        = NULL;
  ck_assert(!pn_sched_actions(&p, 0, a, &err2));
  ck_assert_uint_eq(a->len, 0);
  g_error_free(err2);
  g_error_free(err);
}

START_TEST(test_validation)
{
  /* m < pp with interleaving */
  expect_invalid((PnSchedParams){.pp = 4, .vpp = 2, .num_microbatches = 3, .overlap_p2p_comm = true},
                 "num_microbatches 3 < pipeline_model_parallel_size 4");
  /* group outside [pp, m] */
  expect_invalid((PnSchedParams){.pp = 4, .vpp = 2, .num_microbatches = 8, .group_size = 3, .overlap_p2p_comm = true},
                 "microbatch_group_size_per_vp_stage 3 must be in [pipeline_model_parallel_size 4");
  expect_invalid((PnSchedParams){.pp = 4, .vpp = 2, .num_microbatches = 8, .group_size = 9, .overlap_p2p_comm = true},
                 "num_microbatches 8]");
  /* remainder of m / group in (0, pp) */
  expect_invalid((PnSchedParams){.pp = 4, .vpp = 2, .num_microbatches = 10, .overlap_p2p_comm = true},
                 "num_microbatches 10 mod microbatch_group_size_per_vp_stage 4 = 2");
  /* interleaving: pp > 2 without overlap, pp > 1 with */
  expect_invalid((PnSchedParams){.pp = 2, .vpp = 2, .num_microbatches = 4}, "pipeline_model_parallel_size > 2");
  expect_invalid((PnSchedParams){.pp = 1, .vpp = 2, .num_microbatches = 4, .overlap_p2p_comm = true},
                 "pipeline_model_parallel_size > 1");
  /* the flush flag needs the overlap path */
  expect_invalid((PnSchedParams){.pp = 4, .vpp = 2, .num_microbatches = 8, .overlap_p2p_comm_warmup_flush = true},
                 "overlap_p2p_comm_warmup_flush");
  expect_invalid(
      (PnSchedParams){
          .pp = 4, .vpp = 1, .num_microbatches = 8, .overlap_p2p_comm = true, .overlap_p2p_comm_warmup_flush = true},
      "overlap_p2p_comm_warmup_flush");
  /* ranges */
  expect_invalid((PnSchedParams){.pp = 0, .vpp = 1, .num_microbatches = 8}, "pipeline_model_parallel_size 0");
  expect_invalid((PnSchedParams){.pp = 2, .vpp = 0, .num_microbatches = 8}, "virtual_pipeline_model_parallel_size 0");
  expect_invalid((PnSchedParams){.pp = 2, .vpp = 1, .num_microbatches = 0}, "num_microbatches 0");
  expect_invalid((PnSchedParams){.pp = 2, .vpp = 1, .num_microbatches = 4, .group_size = -1},
                 "microbatch_group_size_per_vp_stage -1");

  /* accepted: remainder 0 or >= pp; 1F1B with any m; overlap ignored (not an error) for 1F1B */
  ck_assert(pn_sched_validate(&(PnSchedParams){.pp = 4, .vpp = 2, .num_microbatches = 14, .group_size = 5}, NULL));
  ck_assert(pn_sched_validate(&(PnSchedParams){.pp = 4, .vpp = 2, .num_microbatches = 12}, NULL));
  ck_assert(pn_sched_validate(&(PnSchedParams){.pp = 8, .vpp = 1, .num_microbatches = 3}, NULL));
  PnSchedParams o = {.pp = 4, .vpp = 1, .num_microbatches = 8, .overlap_p2p_comm = true};
  ck_assert(pn_sched_validate(&o, NULL));
  ck_assert(!pn_sched_overlap_p2p_effective(&o));

  /* rank out of range */
  g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(PnSchedAction));
  GError *err         = NULL;
  ck_assert(!pn_sched_actions(&o, 4, a, &err));
  ck_assert(strstr(err->message, "pipeline rank 4") != NULL);
  g_error_free(err);
}
END_TEST

/* The error domains read "pn-<module>-error-quark": clang-format spaces out the bare argument of
 * G_DEFINE_QUARK ("pn - sched - error - quark"), so they are spelled as strings. */
START_TEST(test_error_quarks)
{
  ck_assert_str_eq(g_quark_to_string(PN_SCHED_ERROR), "pn-sched-error-quark");
  ck_assert_str_eq(g_quark_to_string(PN_BUILD_ERROR), "pn-build-error-quark");
  GError *err = NULL;
  ck_assert(!pn_sched_validate(&(PnSchedParams){.pp = 0, .vpp = 1, .num_microbatches = 8}, &err));
  ck_assert(g_error_matches(err, PN_SCHED_ERROR, PN_SCHED_ERROR_INVALID));
  g_error_free(err);
}
END_TEST

/* ---- TCases: data-parallel buckets (sched/dp_buckets.c) ------------------------------------ */

/* A tiny dense model: h = 256, 4 heads (kv 64, no GQA), ffn 1024 (not gated), 2 layers, RMSNorm,
 * no biases, vocab 1024 (a multiple of 128: no padding), tied embedding, rope. Per GPU at TP 1,
 * in registration order, a layer holds
 *   proj.weight 256*256 = 65,536; qkv.layer_norm_weight 256; qkv.weight 256*768 = 196,608;
 *   fc1.layer_norm_weight 256; fc1.weight 256*1024 = 262,144; fc2.weight 1024*256 = 262,144
 * = 786,944; the embedding 1024*256 = 262,144; the head only the final norm, 256 (tied, PP 1).
 * Units: 0 embedding, 1 layer 0, 2 layer 1, 3 head. */
#define TINY_JSON(gpus, gbs, layers, precision, parallel, ddp)                                                         \
  "{\"schema_version\": 1, \"name\": \"tiny\",\n"                                                                      \
  " \"model\": {\"name\": \"tiny\", \"num_layers\": " layers ", \"hidden_size\": 256, \"ffn_hidden_size\": 1024,\n"    \
  "   \"num_attention_heads\": 4, \"vocab_size\": 1024, \"normalization\": \"RMSNorm\",\n"                             \
  "   \"position_embedding_type\": \"rope\", \"add_bias_linear\": false},\n"                                           \
  " \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": " gpus "},\n"                                              \
  " \"training\": {\"seq_length\": 1024, \"micro_batch_size\": 1, \"global_batch_size\": " gbs                         \
  ", \"precision\": \"" precision "\"},\n"                                                                             \
  " \"parallel\": " parallel ",\n"                                                                                     \
  " \"ddp\": " ddp "}"
#define TINY_DP2(ddp) TINY_JSON("2", "2", "2", "bf16", "{}", ddp)
#define DDP_AR "{\"use_distributed_optimizer\": false, \"overlap_grad_reduce\": true}"
#define DDP_RS "{\"use_distributed_optimizer\": true, \"overlap_grad_reduce\": true, \"overlap_param_gather\": true}"

static PnScenario *load_tiny(const char *json, const char *set, PnPlan *plan)
{
  const char *sets[]    = {set};
  g_autoptr(GError) err = NULL;
  PnScenario *sc        = pn_scenario_load_string(json, "tiny.json", sets, set ? 1 : 0, NULL, &err);
  ck_assert_msg(sc != NULL, "load: %s", err ? err->message : "?");
  ck_assert_msg(pn_overlap_resolve(sc, plan, NULL, &err), "resolve: %s", err ? err->message : "?");
  return sc;
}

/* The bucket groups of (rank, chunk), `set` a --set override or NULL. */
static GArray *groups_of(const char *json, const char *set, uint32_t rank, int64_t chunk)
{
  PnPlan plan;
  g_autoptr(PnScenario) sc = load_tiny(json, set, &plan);
  GArray *out              = g_array_new(FALSE, FALSE, sizeof(PnDpBucketGroup));
  g_autoptr(GError) err    = NULL;
  ck_assert_msg(pn_sched_dp_buckets(sc, &plan, rank, chunk, out, &err), "%s", err ? err->message : "?");
  return out;
}

#define GROUP(a, i) (&g_array_index((a), PnDpBucketGroup, (i)))

/* `n` groups of one bucket each, of these elements and units, in backprop order. */
static void expect_groups(const GArray *gs, guint n, const double *elems, const int32_t *units, const char *what)
{
  ck_assert_msg(gs->len == n, "%s: %u groups, expected %u", what, gs->len, n);
  for (guint i = 0; i < n; i++) {
    ck_assert_msg(GROUP(gs, i)->elems == elems[i], "%s: group %u holds %.0f elements, expected %.0f", what, i,
                  GROUP(gs, i)->elems, elems[i]);
    ck_assert_msg(GROUP(gs, i)->unit == units[i], "%s: group %u at unit %d, expected %d", what, i, GROUP(gs, i)->unit,
                  units[i]);
    ck_assert_int_eq(GROUP(gs, i)->buckets, 1);
    ck_assert(!GROUP(gs, i)->expert);
  }
}

/* Bucket count and sizes, all-reduce (no distributed optimizer: no padding), DP 2. Backprop order
 * walks head norm 256, layer 1 (fc2 262,144, fc1.weight 262,144, fc1 norm 256, qkv.weight 196,608,
 * qkv norm 256, proj 65,536), layer 0 (the same), embedding 262,144; a bucket closes right after
 * the parameter that brings it to bucket_size (param_and_grad_buffer.py
 * _compute_default_per_buffer_param_layout):
 *   bucket_size 1: every parameter alone, 14 buckets.
 *   300,000: 256 + 262,144 + 262,144 = 524,544 (head, layer 1 fc2 and fc1.weight; unit 2);
 *            256 + 196,608 + 256 + 65,536 + 262,144 = 524,800 (the rest of layer 1 and layer 0's
 *            fc2: it starts inside layer 1 and ends inside layer 0; unit 1);
 *            262,144 + 256 + 196,608 = 459,008 (layer 0 fc1.weight to qkv.weight; unit 1);
 *            256 + 65,536 + 262,144 = 327,936 (the remainder, down to the embedding; unit 0).
 *   1,000,000: head, layer 1 and layer 0's fc2: 256 + 786,944 + 262,144 = 1,049,344 (unit 1), then
 *            the remainder 786,944 - 262,144 + 262,144 = 786,944 (unit 0).
 *   10^12, or overlap_grad_reduce off (bucket_size None): one bucket, 1,836,288 (unit 0). */
START_TEST(test_dp_bucket_sizes)
{
  g_autoptr(GArray) one     = groups_of(TINY_DP2(DDP_AR), "ddp.bucket_size=1", 0, 0);
  static const double e1[]  = {256,    262144, 262144, 256,    196608, 256,   65536,
                               262144, 262144, 256,    196608, 256,    65536, 262144};
  static const int32_t u1[] = {3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0};
  expect_groups(one, 14, e1, u1, "bucket_size 1");

  g_autoptr(GArray) mid     = groups_of(TINY_DP2(DDP_AR), "ddp.bucket_size=300000", 0, 0);
  static const double e2[]  = {524544, 524800, 459008, 327936};
  static const int32_t u2[] = {2, 1, 1, 0};
  expect_groups(mid, 4, e2, u2, "bucket_size 300000");

  g_autoptr(GArray) big     = groups_of(TINY_DP2(DDP_AR), "ddp.bucket_size=1000000", 0, 0);
  static const double e3[]  = {1049344, 786944};
  static const int32_t u3[] = {1, 0};
  expect_groups(big, 2, e3, u3, "bucket_size 1000000");

  static const double e4[]  = {1836288};
  static const int32_t u4[] = {0};
  g_autoptr(GArray) huge    = groups_of(TINY_DP2(DDP_AR), "ddp.bucket_size=1000000000000", 0, 0);
  expect_groups(huge, 1, e4, u4, "bucket_size 1e12");
  g_autoptr(GArray) off = groups_of(TINY_DP2("{\"use_distributed_optimizer\": false, \"overlap_grad_reduce\": false}"),
                                    "ddp.bucket_size=1", 0, 0);
  expect_groups(off, 1, e4, u4, "overlap_grad_reduce off");
}
END_TEST

/* Padding with the distributed optimizer (distrib_optimizer.py _compute_per_buffer_param_layout,
 * param_layout.py pad_param_start / pad_bucket_end): each parameter starts at a multiple of 64
 * elements and each bucket ends at a multiple of lcm(DP, 128). A model whose sizes are not
 * multiples of 64: h = 200, 4 heads (kv 50), ffn 600, one layer; per GPU proj 40,000, qkv norm
 * 200, qkv 120,000, fc1 norm 200, fc1 120,000, fc2 120,000, embedding 128*200 = 25,600, head norm
 * 200 (426,200 in all). DP 3: lcm(3, 128) = 384. bucket_size 100,000, backprop order:
 *   head norm [0, 200); fc2 starts at 256: [256, 120,256) reaches 100,000: the bucket ends at
 *     ceil(120,256 / 384) * 384 = 120,576                                   -> 120,576 elements;
 *   fc1 [120,576, 240,576), end 627 * 384 = 240,768                          -> 120,192;
 *   fc1 norm [240,768, 240,968), qkv from 241,024 to 361,024, end 941 * 384 = 361,344
 *                                                                            -> 120,576;
 *   qkv norm [361,344, 361,544), proj [361,600, 401,600), embedding [401,600, 427,200): the last
 *     bucket, end 1113 * 384 = 427,392                                       -> 66,048.
 * Without the distributed optimizer nothing is padded: 120,200, 120,000, 120,200, 65,800. */
#define PAD_JSON(ddp)                                                                                                  \
  "{\"schema_version\": 1, \"name\": \"pad\",\n"                                                                       \
  " \"model\": {\"name\": \"pad\", \"num_layers\": 1, \"hidden_size\": 200, \"ffn_hidden_size\": 600,\n"               \
  "   \"num_attention_heads\": 4, \"vocab_size\": 128, \"normalization\": \"RMSNorm\",\n"                              \
  "   \"position_embedding_type\": \"rope\", \"add_bias_linear\": false},\n"                                           \
  " \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": 3},\n"                                                     \
  " \"training\": {\"seq_length\": 1024, \"micro_batch_size\": 1, \"global_batch_size\": 3},\n"                        \
  " \"ddp\": " ddp "}"
START_TEST(test_dp_bucket_padding)
{
  g_autoptr(GArray) rs      = groups_of(PAD_JSON(DDP_RS), "ddp.bucket_size=100000", 0, 0);
  static const double e1[]  = {120576, 120192, 120576, 66048};
  static const int32_t u1[] = {1, 1, 1, 0};
  expect_groups(rs, 4, e1, u1, "distributed optimizer, DP 3");
  for (guint i = 0; i < rs->len; i++)
    ck_assert_double_eq(GROUP(rs, i)->param_bytes, 2.0 * GROUP(rs, i)->elems);
  g_autoptr(GArray) ar     = groups_of(PAD_JSON(DDP_AR), "ddp.bucket_size=100000", 0, 0);
  static const double e2[] = {120200, 120000, 120200, 65800};
  expect_groups(ar, 4, e2, u1, "all-reduce");
}
END_TEST

/* Megatron's default size (training.py resolve_ddp_bucket_size) reaches the buckets: without the
 * distributed optimizer Bridge's 128 Mi does not apply (overlap/dp.c), so max(40,000,000,
 * 1,000,000 x dp x cp) = 40,000,000 at DP 2. The tiny model with 128 layers holds
 * 128 x 786,944 + 262,144 + 256 = 100,991,232 elements; walking them in backprop order, a bucket
 * closes right after the parameter that brings it to 40 M: 40,068,608 (the head norm, layers 127
 * to 78, layer 77's fc2, fc1 and qkv weights and fc1 norm: 256 + 50 x 786,944 + 262,144 x 2 + 256 +
 * 196,608), 40,134,144, and the remainder 20,788,480. At bucket_size
 * 20,000,000: 20,198,144, 20,198,400, 20,132,608, 20,001,536, 20,132,608 and 327,936. */
START_TEST(test_dp_bucket_default_size)
{
  const char *json = TINY_JSON("2", "2", "128", "bf16", "{}", DDP_AR);
  PnPlan plan;
  g_autoptr(PnScenario) sc = load_tiny(json, NULL, &plan);
  ck_assert_int_eq(plan.bucket_size, 40000000);
  g_autoptr(GArray) gs    = groups_of(json, NULL, 0, 0);
  static const double e[] = {40068608, 40134144, 20788480};
  ck_assert_uint_eq(gs->len, 3);
  for (guint i = 0; i < gs->len; i++)
    ck_assert_double_eq(GROUP(gs, i)->elems, e[i]);
  g_autoptr(GArray) g20     = groups_of(json, "ddp.bucket_size=20000000", 0, 0);
  static const double e20[] = {20198144, 20198400, 20132608, 20001536, 20132608, 327936};
  ck_assert_uint_eq(g20->len, 6);
  for (guint i = 0; i < g20->len; i++)
    ck_assert_double_eq(GROUP(g20, i)->elems, e20[i]);
}
END_TEST

/* Pipeline and virtual pipeline: bucketing is disabled on every model chunk but the first and on
 * every pipeline rank but the first (training.py get_model: per_chunk_bucket_sizes,
 * per_chunk_disable_bucketing; distributed_data_parallel.py __init__), and with the distributed
 * optimizer the tied embedding's copies (shared_embedding with pp > 1) take a bucket of their own
 * (_does_param_require_new_bucket). PP 2 x VPP 2, 4 layers (one per virtual stage), 8 GPUs (DP 4),
 * bucket_size 1:
 *   rank 0 chunk 0 (embedding, layer 0): every parameter alone, 6 + 1 = 7 groups;
 *   rank 0 chunk 1 (layer 2): one bucket;   rank 1 chunk 0 (layer 1): one bucket (pp rank 1);
 *   rank 1 chunk 1 (layer 3, head): the output layer's copy alone and the rest: 2 buckets, in
 *   one group (disable_bucketing puts a chunk's buckets in one group, partition_buckets).
 * bucket_size 10^12: rank 0 chunk 0 still has 2 groups, layer 0 and the word embedding. */
START_TEST(test_dp_bucket_chunks)
{
  const char *json =
      TINY_JSON("8", "8", "4", "bf16",
                "{\"pipeline_model_parallel_size\": 2, \"virtual_pipeline_model_parallel_size\": 2}", DDP_RS);
  g_autoptr(GArray) r0c0 = groups_of(json, "ddp.bucket_size=1", 0, 0);
  ck_assert_uint_eq(r0c0->len, 7);
  ck_assert_double_eq(GROUP(r0c0, 6)->elems, 262144); /* the word embedding, last */
  g_autoptr(GArray) r0c1 = groups_of(json, "ddp.bucket_size=1", 0, 1);
  ck_assert_uint_eq(r0c1->len, 1);
  ck_assert_int_eq(GROUP(r0c1, 0)->buckets, 1);
  ck_assert_double_eq(GROUP(r0c1, 0)->elems, 786944);
  g_autoptr(GArray) r1c0 = groups_of(json, "ddp.bucket_size=1", 1, 0);
  ck_assert_uint_eq(r1c0->len, 1);
  ck_assert_double_eq(GROUP(r1c0, 0)->elems, 786944);
  g_autoptr(GArray) r1c1 = groups_of(json, "ddp.bucket_size=1", 1, 1);
  ck_assert_uint_eq(r1c1->len, 1);
  ck_assert_int_eq(GROUP(r1c1, 0)->buckets, 2);
  ck_assert_double_eq(GROUP(r1c1, 0)->elems, 262144 + 786944 + 256); /* output copy + layer 3 + norm */
  g_autoptr(GArray) whole = groups_of(json, "ddp.bucket_size=1000000000000", 0, 0);
  ck_assert_uint_eq(whole->len, 2);
  ck_assert_double_eq(GROUP(whole, 0)->elems, 786944);
  ck_assert_double_eq(GROUP(whole, 1)->elems, 262144);
}
END_TEST

/* fp8_param_gather (fp8 training, distributed optimizer): TE's linear weights are fp8 storage, a
 * buffer of their own, and the bf16 buffer's buckets (norms, embedding) join the last fp8 bucket's
 * group (partition_buckets). bucket_size 300,000:
 *   fp8 buffer (weights only): layer 1 fc2 + fc1 = 524,288; layer 1 qkv + proj + layer 0 fc2 =
 *     524,288; layer 0 fc1 + qkv = 458,752; layer 0 proj = 65,536 (the last);
 *   bf16 buffer: 256 x 5 norms + 262,144 = 263,424, one bucket.
 * 4 groups, 5 buckets; the last group reduces 65,536 + 263,424 = 328,960 elements and gathers
 * 65,536 x 1 + 263,424 x 2 = 592,384 bytes, waiting for the embedding's gradient (unit 0). */
START_TEST(test_dp_bucket_fp8_groups)
{
  const char *json     = TINY_JSON("2", "2", "2", "fp8", "{}",
                                   "{\"use_distributed_optimizer\": true, \"overlap_grad_reduce\": true, "
                                       "\"overlap_param_gather\": true, \"fp8_param_gather\": true}");
  g_autoptr(GArray) gs = groups_of(json, "ddp.bucket_size=300000", 0, 0);
  ck_assert_uint_eq(gs->len, 4);
  static const double elems[]  = {524288, 524288, 458752, 328960};
  static const double bytes[]  = {524288, 524288, 458752, 592384};
  static const int32_t units[] = {2, 1, 1, 0};
  for (guint i = 0; i < 4; i++) {
    ck_assert_double_eq(GROUP(gs, i)->elems, elems[i]);
    ck_assert_double_eq(GROUP(gs, i)->param_bytes, bytes[i]);
    ck_assert_int_eq(GROUP(gs, i)->unit, units[i]);
    ck_assert_int_eq(GROUP(gs, i)->buckets, i == 3 ? 2 : 1);
  }
}
END_TEST

/* Expert parameters: their own buffer when ep > 1 (allreduce = False), else in the dense one. The
 * tiny model with 4 experts of ffn 1024 (top 2), alltoall, 4 GPUs (DP 4): at EP 2 a layer holds 2
 * local experts, fc1 256*1024 and fc2 1024*256 each: 4 x 262,144 = 1,048,576 expert elements, in
 * expert groups; at EP 1 the experts sit in the dense groups and no group is an expert one. */
#define MOE_JSON(ep)                                                                                                   \
  "{\"schema_version\": 1, \"name\": \"moe\",\n"                                                                       \
  " \"model\": {\"name\": \"moe\", \"num_layers\": 2, \"hidden_size\": 256, \"ffn_hidden_size\": 1024,\n"              \
  "   \"num_attention_heads\": 4, \"vocab_size\": 1024, \"normalization\": \"RMSNorm\",\n"                             \
  "   \"position_embedding_type\": \"rope\", \"add_bias_linear\": false, \"num_moe_experts\": 4,\n"                    \
  "   \"moe_router_topk\": 2},\n"                                                                                      \
  " \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": 4},\n"                                                     \
  " \"training\": {\"seq_length\": 1024, \"micro_batch_size\": 1, \"global_batch_size\": 4},\n"                        \
  " \"parallel\": {\"expert_model_parallel_size\": " ep ", \"moe_token_dispatcher_type\": \"alltoall\"},\n"            \
  " \"ddp\": " DDP_RS "}"
START_TEST(test_dp_bucket_experts)
{
  for (int ep = 1; ep <= 2; ep++) {
    g_autoptr(GArray) gs = groups_of(ep == 1 ? MOE_JSON("1") : MOE_JSON("2"), "ddp.bucket_size=1", 0, 0);
    double expert        = 0.0;
    for (guint i = 0; i < gs->len; i++)
      if (GROUP(gs, i)->expert)
        expert += GROUP(gs, i)->elems;
    ck_assert_double_eq(expert, ep == 1 ? 0.0 : 2 * 1048576.0);
  }
}
END_TEST

/* The graph of a tiny run and the DP reductions in it (labels dp_grad_*). */
typedef struct {
  PnScenario *sc;
  PnPlan plan;
  PnGraph *g;
  PnBuildInfo info;
} Built;

static void build_tiny(Built *b, const char *json, const char *set)
{
  b->sc                 = load_tiny(json, set, &b->plan);
  b->g                  = pn_graph_new((uint32_t)b->sc->parallel.pipeline_model_parallel_size);
  g_autoptr(GError) err = NULL;
  ck_assert_msg(pn_sched_build(b->sc, &b->plan, b->g, &b->info, &err), "%s", err ? err->message : "?");
}

static void built_clear(Built *b)
{
  pn_build_info_clear(&b->info);
  pn_graph_free(b->g);
  pn_scenario_free(b->sc);
}

static bool is_grad_reduction(const PnTask *t)
{
  return g_str_has_prefix(t->label, "dp_grad_reduce_scatter") || g_str_has_prefix(t->label, "dp_grad_all_reduce");
}

/* A bucket ending inside a layer is reduced inside that layer's backward: the reduction waits for
 * the op that completes its last gradient, not for the layer's end. bucket_size 300,000 (the
 * groups of test_dp_bucket_sizes), one micro-batch, all-reduce:
 *   group 0 (head, layer 1 fc2 and fc1.weight): after layer 1's fc1 backward, which TE's
 *     LayerNormLinear ends with its norm backward, ln2_bwd;
 *   group 1 (layer 1's attention, layer 0's fc2): after layer 0's fc2_wgrad;
 *   group 2 (layer 0's fc1 and qkv weight): after layer 0's qkv module, ln1_bwd;
 *   group 3 (the rest, to the embedding): after embedding_wgrad. */
START_TEST(test_dp_bucket_launch_inside_layer)
{
  Built b;
  build_tiny(&b, TINY_DP2(DDP_AR), "ddp.bucket_size=300000");
  static const char *after[]   = {"ln2_bwd", "fc2_wgrad", "ln1_bwd", "embedding_wgrad"};
  static const int16_t layer[] = {1, 0, 0, -1};
  guint n                      = 0;
  for (PnTaskId id = 0; id < pn_graph_n_tasks(b.g); id++) {
    const PnTask *t = &pn_graph_tasks(b.g)[id];
    if (!is_grad_reduction(t))
      continue;
    ck_assert_uint_lt(n, 4);
    ck_assert_uint_eq(t->dep_count, 1);
    const PnTask *d = &pn_graph_tasks(b.g)[pn_graph_deps(b.g)[t->dep_first]];
    ck_assert_msg(strcmp(d->label, after[n]) == 0 && d->layer == layer[n], "reduction %u after %s of layer %d", n,
                  d->label, d->layer);
    n++;
  }
  ck_assert_uint_eq(n, 4);
  ck_assert_int_eq(g_array_index(b.info.dp_buckets, int64_t, 0), 4);
  ck_assert_int_eq(g_array_index(b.info.dp_bucket_groups, int64_t, 0), 4);
  built_clear(&b);
}
END_TEST

/* Every bucket group is reduced once per iteration, whatever emits the backward: plain layers,
 * recomputed ones, fp8, pipelining with VPP, the combined 1F1B of EP overlap with experts in
 * their own buffer. Count: the reductions of the graph = the groups of PnBuildInfo. */
START_TEST(test_dp_bucket_every_group_reduced)
{
  static const struct {
    const char *json, *set;
  } cases[] = {
      {TINY_DP2(DDP_RS), "ddp.bucket_size=1"},
      {TINY_DP2(DDP_RS), "recompute.recompute_granularity=full"},
      {TINY_DP2(DDP_AR), "recompute.recompute_granularity=selective"},
      {TINY_JSON("2", "2", "2", "fp8", "{}", DDP_RS), "ddp.bucket_size=300000"},
      {TINY_JSON("8", "8", "4", "bf16",
                 "{\"pipeline_model_parallel_size\": 2, \"virtual_pipeline_model_parallel_size\": 2}", DDP_RS),
       "ddp.bucket_size=1"},
      {MOE_JSON("2"), "ddp.bucket_size=1"},
      {MOE_JSON("2"), "comm_overlap.overlap_moe_expert_parallel_comm=true"},
  };
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    Built b;
    build_tiny(&b, cases[c].json, cases[c].set);
    int64_t groups = 0, reductions = 0;
    for (guint r = 0; r < b.info.dp_bucket_groups->len; r++)
      groups += g_array_index(b.info.dp_bucket_groups, int64_t, r);
    for (PnTaskId id = 0; id < pn_graph_n_tasks(b.g); id++)
      reductions += is_grad_reduction(&pn_graph_tasks(b.g)[id]);
    ck_assert_msg(reductions == groups, "case %zu (%s): %" G_GINT64_FORMAT " reductions, %" G_GINT64_FORMAT " groups",
                  c, cases[c].set, reductions, groups);
    built_clear(&b);
  }
}
END_TEST

/* ---- TCases: Megatron-FSDP (sched/dp_buckets.c) ------------------------------------------ */

#define DDP_FSDP(strategy) "{\"use_megatron_fsdp\": true, \"data_parallel_sharding_strategy\": \"" strategy "\"}"

/* Megatron-FSDP's groups are its units (param_and_grad_buffer.py fsdp_unit_id,
 * bucket_group_by_fsdp_unit): whatever bucket_size says, the tiny model's head norm (256, unit 3),
 * each layer (786,944, units 2 and 1) and the embedding (262,144, unit 0) are one group each
 * (every size a multiple of 64 and of lcm(2, 128): no padding). With fp8_param_gather a layer's
 * fp8 weights (786,432) and bf16 norms (512) are two buckets coalesced in one group, gathering
 * 786,432 x 1 + 512 x 2 = 787,456 bytes. no_shard has no units: one group for the whole chunk. */
START_TEST(test_fsdp_groups)
{
  static const double e[]  = {256, 786944, 786944, 262144};
  static const int32_t u[] = {3, 2, 1, 0};
  for (int shard = 0; shard < 3; shard++) {
    static const char *const json[] = {TINY_DP2(DDP_FSDP("optim")), TINY_DP2(DDP_FSDP("optim_grads")),
                                       TINY_DP2(DDP_FSDP("optim_grads_params"))};
    g_autoptr(GArray) gs            = groups_of(json[shard], "ddp.bucket_size=1", 0, 0);
    expect_groups(gs, 4, e, u, json[shard]);
  }
  g_autoptr(GArray) none = groups_of(TINY_DP2(DDP_FSDP("no_shard")), "ddp.bucket_size=1", 0, 0);
  ck_assert_uint_eq(none->len, 1);
  ck_assert_double_eq(GROUP(none, 0)->elems, 1836288);
  const char *fp8 = TINY_JSON("2", "2", "2", "fp8", "{}", "{\"use_megatron_fsdp\": true, \"fp8_param_gather\": true}");
  g_autoptr(GArray) gs = groups_of(fp8, NULL, 0, 0);
  ck_assert_uint_eq(gs->len, 4);
  ck_assert_int_eq(GROUP(gs, 1)->buckets, 2);
  ck_assert_double_eq(GROUP(gs, 1)->elems, 786944);
  ck_assert_double_eq(GROUP(gs, 1)->param_bytes, 787456);
}
END_TEST

static int64_t count_label(const PnGraph *g, const char *label)
{
  int64_t n = 0;
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++)
    n += strcmp(pn_graph_tasks(g)[id].label, label) == 0;
  return n;
}

/* moe_layer_freq [0, 1]: layer 0 is a dense layer (its dense MLP, no router, no all-to-all),
 * layer 1 a MoE layer: one dispatch and one combine per micro-batch where every layer MoE has
 * two, one dense fc1 forward, and the expert buckets hold one layer's experts; the same with EP
 * overlap's combined 1F1B (a dense layer's nodes have no dispatch or combine). Global batch 8
 * over DP 4: 2 micro-batches. */
START_TEST(test_moe_layer_kinds)
{
  static const char *const overlap[] = {NULL, "comm_overlap.overlap_moe_expert_parallel_comm=true"};
  for (int o = 0; o < 2; o++) {
    for (int mixed = 0; mixed < 2; mixed++) {
      g_autoptr(GString) json = g_string_new(MOE_JSON("2"));
      g_string_replace(json, "\"global_batch_size\": 4", "\"global_batch_size\": 8", 1);
      if (mixed)
        g_string_replace(json, "\"moe_router_topk\": 2", "\"moe_router_topk\": 2, \"moe_layer_freq\": [0, 1]", 1);
      Built b;
      build_tiny(&b, json->str, overlap[o]);
      ck_assert_int_eq(b.plan.overlap_moe_expert_parallel_comm, o == 1);
      ck_assert_int_eq(count_label(b.g, "moe_dispatch_a2a"), mixed ? 2 : 4);
      ck_assert_int_eq(count_label(b.g, "moe_combine_a2a_bwd"), mixed ? 2 : 4);
      ck_assert_int_eq(count_label(b.g, "fc1"), mixed ? 2 : 0);
      ck_assert_int_eq(count_label(b.g, "router"), mixed ? 2 : 4);
      built_clear(&b);
    }
  }
  g_autoptr(GString) json = g_string_new(MOE_JSON("2"));
  g_string_replace(json, "\"moe_router_topk\": 2", "\"moe_router_topk\": 2, \"moe_layer_freq\": [0, 1]", 1);
  g_autoptr(GArray) gs = groups_of(json->str, "ddp.bucket_size=1", 0, 0);
  double expert        = 0.0;
  for (guint i = 0; i < gs->len; i++)
    if (GROUP(gs, i)->expert)
      expert += GROUP(gs, i)->elems;
  ck_assert_double_eq(expert, 1048576.0);
}
END_TEST

/* What each strategy moves per iteration, the tiny model at DP 2 with m = 2 micro-batches
 * (global batch 4), U = 4 units of which L = 2 layers:
 *   optim               reduce-scatters once (the last micro-batch): U; gathers once: U;
 *   optim_grads         reduce-scatters every micro-batch: m x U = 8; gathers once: U = 4;
 *   optim_grads_params  also gathers every pass: m x (U + L) = 12 (forward: every unit;
 *                       backward: the layers, the root's embedding and head kept);
 *   no_shard            all-reduces its one group once.
 * Each gather of a layer moves its 786,944 elements x 2 bytes. */
START_TEST(test_fsdp_traffic)
{
  static const struct {
    const char *strategy;
    int64_t rs, ag, ar;
  } cases[] = {{"optim", 4, 4, 0}, {"optim_grads", 8, 4, 0}, {"optim_grads_params", 8, 12, 0}, {"no_shard", 0, 0, 1}};
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autofree char *set = g_strdup_printf("ddp.data_parallel_sharding_strategy=\"%s\"", cases[c].strategy);
    Built b;
    build_tiny(&b, TINY_JSON("2", "4", "2", "bf16", "{}", DDP_FSDP("optim")), set);
    ck_assert_msg(count_label(b.g, "dp_grad_reduce_scatter") == cases[c].rs, "%s: reduce-scatters", cases[c].strategy);
    ck_assert_msg(count_label(b.g, "dp_param_all_gather") == cases[c].ag, "%s: all-gathers", cases[c].strategy);
    ck_assert_msg(count_label(b.g, "dp_grad_all_reduce") == cases[c].ar, "%s: all-reduces", cases[c].strategy);
    for (PnTaskId id = 0; id < pn_graph_n_tasks(b.g); id++) {
      const PnTask *t = &pn_graph_tasks(b.g)[id];
      if (strcmp(t->label, "dp_param_all_gather") == 0 && (double)t->coll.bytes > 600000.0)
        ck_assert_msg((double)t->coll.bytes == 786944.0 * 2.0 || (double)t->coll.bytes == 262144.0 * 2.0,
                      "gather of %.0f bytes", (double)t->coll.bytes);
    }
    built_clear(&b);
  }
}
END_TEST

/* The prefetch (AllGatherPipeline.all_gather_params): a unit's pre-hook gathers its groups and
 * the following ones in pass order until the elements beyond its own reach
 * suggested_AG_prefetch_size = suggested_communication_unit_size / 2. Before the embedding's
 * first forward op of micro-batch 0 (optim_grads_params, tiny model):
 *   unit size 2 (prefetch 1 element): the embedding and layer 0 (0 < 1: one more, then stop): 2;
 *   default (at least 1e9 elements): every unit, 4;
 *   default with fsdp_double_buffer: no third unit, 2. */
START_TEST(test_fsdp_prefetch)
{
  static const struct {
    const char *set;
    int64_t before;
  } cases[] = {{"ddp.suggested_communication_unit_size=2", 2},
               {"ddp.suggested_communication_unit_size=null", 4},
               {"ddp.fsdp_double_buffer=true", 2}};
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    Built b;
    build_tiny(&b, TINY_JSON("2", "4", "2", "bf16", "{}", DDP_FSDP("optim_grads_params")), cases[c].set);
    int64_t before = 0;
    for (PnTaskId id = 0; id < pn_graph_n_tasks(b.g); id++) {
      const PnTask *t = &pn_graph_tasks(b.g)[id];
      if (t->gpu != 0)
        continue;
      if (t->kind == PN_TASK_COMPUTE && t->phase == PN_PHASE_FWD)
        break;
      before += strcmp(t->label, "dp_param_all_gather") == 0;
    }
    ck_assert_msg(before == cases[c].before, "%s: %" G_GINT64_FORMAT " gathers before the first forward op",
                  cases[c].set, before);
    built_clear(&b);
  }
}
END_TEST

/* The reduce-scatter queue (GradReducePipeline.wait_for_previous_grad_reduce): with its default
 * capacity (1e9 elements) the forward and backward never wait for a reduction, only
 * finish_grad_sync does; with a capacity of 2 elements every reduction but the iteration's first
 * makes the compute stream wait for the one launched before it: 7 waits, each on the next
 * compute task, 6 of them in the forward and backward (micro-batch 0's last reduction is waited
 * for by micro-batch 1's first forward op), the 7th after the last backward. */
START_TEST(test_fsdp_reduce_queue)
{
  for (int tiny = 0; tiny < 2; tiny++) {
    Built b;
    build_tiny(&b, TINY_JSON("2", "4", "2", "bf16", "{}", DDP_FSDP("optim_grads")),
               tiny ? "ddp.suggested_communication_unit_size=2" : NULL);
    int64_t waited = 0;
    for (PnTaskId id = 0; id < pn_graph_n_tasks(b.g); id++) {
      const PnTask *t = &pn_graph_tasks(b.g)[id];
      if (t->kind != PN_TASK_COMPUTE || (t->phase != PN_PHASE_FWD && t->phase != PN_PHASE_BWD))
        continue;
      for (uint32_t d = 0; d < t->dep_count; d++)
        waited +=
            strcmp(pn_graph_tasks(b.g)[pn_graph_deps(b.g)[t->dep_first + d]].label, "dp_grad_reduce_scatter") == 0;
    }
    ck_assert_msg(waited == (tiny ? 6 : 0), "capacity %s: %" G_GINT64_FORMAT " waits", tiny ? "2" : "default", waited);
    built_clear(&b);
  }
}
END_TEST

/* ---- TCases: the compute bound (sched/bound.c) ------------------------------------------- */

static PnTask least_kernel(double work_ns)
{
  PnTask t;
  pn__task_init(&t, PN_TASK_COMPUTE, PN_STREAM_COMPUTE, "kernel", PN_PHASE_FWD);
  t.work_ns = work_ns;
  return t;
}

/* A collective of latency only: its least time is that latency. */
static PnTask least_exchange(PnStream stream, double latency_ns)
{
  PnTask t;
  pn__task_init(&t, PN_TASK_COMM, stream, "exchange", PN_PHASE_FWD);
  t.latency_ns = latency_ns;
  return t;
}

/* The least time a template holds its compute stream (no launch gap in this profile; each task
 * may end 1e-6 ns early, a collective 2e-6):
 *  - the ring attention of cp_ring.c, 3 steps of a ns, exchanges of c ns on the CP stream (the
 *    first launched after the compute before it, the next behind it on its stream; step i waits
 *    for exchange i - 1): c > a gives 2c + a (the two exchanges back to back, then the last
 *    step), c <= a gives 3a (the compute alone);
 *  - an exchange nothing in the template orders (no dependency, not after the compute) may have
 *    run before the template: a kernel waiting for it takes only its own time;
 *  - a collective launched after the compute and joined after the next GEMM (TE's async
 *    collective beside a GEMM): the kernel after the GEMM waits for it, max(G, J) + K;
 *  - a kernel on a side stream sets *side. */
START_TEST(test_bound_template_least)
{
  PnHwProfile hw = {0};
  struct {
    double a, c, expect;
  } rings[] = {{10.0, 25.0, 60.0}, {10.0, 4.0, 30.0}};
  for (gsize r = 0; r < G_N_ELEMENTS(rings); r++) {
    g_autoptr(GArray) tpl = g_array_new(FALSE, FALSE, sizeof(PnTplEntry));
    PnTask x = least_exchange(PN_STREAM_CP_COMM, rings[r].c), at = least_kernel(rings[r].a);
    int16_t x0 = pn__tpl_add(tpl, &x, -1, -1, true, false);
    pn__tpl_add(tpl, &at, -1, -1, false, false);
    int16_t x1 = pn__tpl_add(tpl, &x, -1, -1, false, false);
    pn__tpl_add(tpl, &at, x0, -1, false, false);
    pn__tpl_add(tpl, &at, x1, -1, false, false);
    bool side = false;
    ck_assert_double_eq_tol(pn__template_least_ns(&hw, tpl, &side), rings[r].expect, 1e-5);
    ck_assert(!side);
  }
  g_autoptr(GArray) loose = g_array_new(FALSE, FALSE, sizeof(PnTplEntry));
  PnTask x = least_exchange(PN_STREAM_TP_COMM, 100.0), k = least_kernel(5.0);
  int16_t xi = pn__tpl_add(loose, &x, -1, -1, false, false);
  pn__tpl_add(loose, &k, xi, -1, false, false);
  bool side = false;
  ck_assert_double_eq_tol(pn__template_least_ns(&hw, loose, &side), 5.0, 1e-5);

  g_autoptr(GArray) joined = g_array_new(FALSE, FALSE, sizeof(PnTplEntry));
  PnTask j = least_exchange(PN_STREAM_TP_COMM, 30.0), g = least_kernel(10.0);
  int16_t ji = pn__tpl_add(joined, &j, -1, -1, true, true);
  pn__tpl_join_after_next(joined, ji);
  pn__tpl_add(joined, &g, -1, -1, false, false);
  pn__tpl_add(joined, &k, -1, -1, false, false);
  ck_assert_double_eq_tol(pn__template_least_ns(&hw, joined, &side), 35.0, 1e-5);
  ck_assert(!side);

  PnTask aside = least_kernel(7.0);
  aside.stream = PN_STREAM_SHARED_EXPERT;
  pn__tpl_add(joined, &aside, -1, -1, true, false);
  pn__template_least_ns(&hw, joined, &side);
  ck_assert(side);
}
END_TEST

/* The bound's terms do not depend on the global batch, and the bound at m micro-batches is
 * max_s (U_s + m w_s) + O, U_0 = 0 and U_s growing with s: the tiny model on PP 2 x DP 2 at
 * global batch 16 (8 micro-batches) and 32 (16). */
START_TEST(test_bound_terms_of_batch)
{
  const char *json[] = {TINY_JSON("4", "16", "4", "bf16", "{\"pipeline_model_parallel_size\": 2}", DDP_RS),
                        TINY_JSON("4", "32", "4", "bf16", "{\"pipeline_model_parallel_size\": 2}", DDP_RS)};
  PnBoundTerms terms[2];
  double bound[2];
  int64_t m[2];
  for (int i = 0; i < 2; i++) {
    PnPlan plan;
    g_autoptr(PnScenario) sc = load_tiny(json[i], NULL, &plan);
    g_autoptr(GError) err    = NULL;
    m[i]                     = sc->parallel.num_microbatches;
    ck_assert_msg(pn_sched_bound_terms(sc, &plan, &terms[i], &err), "%s", err ? err->message : "?");
    ck_assert_msg(pn_sched_compute_bound(sc, &plan, &bound[i], &err), "%s", err ? err->message : "?");
  }
  ck_assert_int_eq(m[0], 8);
  ck_assert_int_eq(m[1], 16);
  ck_assert_uint_eq(terms[0].n, 2);
  ck_assert_uint_eq(terms[1].n, 2);
  ck_assert_double_eq(terms[0].optimizer_ns, terms[1].optimizer_ns);
  ck_assert(terms[0].optimizer_ns > 0.0);
  ck_assert_double_eq(terms[0].upstream_ns[0], 0.0);
  for (guint s = 0; s < 2; s++) {
    ck_assert_double_eq(terms[0].upstream_ns[s], terms[1].upstream_ns[s]);
    ck_assert_double_eq(terms[0].work_ns[s], terms[1].work_ns[s]);
    ck_assert(terms[0].work_ns[s] > 0.0);
  }
  ck_assert(terms[0].upstream_ns[1] > 0.0);
  for (int i = 0; i < 2; i++) {
    double ranks = fmax(terms[0].upstream_ns[0] + (double)m[i] * terms[0].work_ns[0],
                        terms[0].upstream_ns[1] + (double)m[i] * terms[0].work_ns[1]);
    ck_assert_double_eq(pn_sched_bound_at(&terms[0], m[i]), ranks + terms[0].optimizer_ns);
    ck_assert_double_eq(pn_sched_bound_at(&terms[0], m[i]), bound[i]);
  }
  pn_bound_terms_clear(&terms[0]);
  pn_bound_terms_clear(&terms[1]);
  ck_assert_uint_eq(terms[0].n, 0);
  ck_assert_double_eq(pn_sched_bound_at(&terms[0], 8), 0.0);
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------- */

static Suite *sched_suite(void)
{
  Suite *s = suite_create("sched");
  struct {
    const char *name;
    const TTest *test;
  } cases[] = {
      {"every_step_once", test_every_step_once_forward_first},
      {"warmup_counts", test_warmup_counts},
      {"schedule_table", test_schedule_table_docstring},
      {"golden_1f1b", test_golden_1f1b},
      {"golden_interleaved", test_golden_interleaved},
      {"golden_interleaved_overlap", test_golden_interleaved_overlap},
      {"send_recv_match", test_send_recv_match},
      {"deadlock_free", test_deadlock_free},
      {"recv_waited_before_use", test_recv_waited_before_use},
      {"chunk_markers", test_chunk_markers},
      {"call_sets", test_call_sets},
      {"deterministic", test_deterministic},
      {"validation", test_validation},
      {"error_quarks", test_error_quarks},
      {"dp_bucket_sizes", test_dp_bucket_sizes},
      {"dp_bucket_padding", test_dp_bucket_padding},
      {"dp_bucket_default_size", test_dp_bucket_default_size},
      {"dp_bucket_chunks", test_dp_bucket_chunks},
      {"dp_bucket_fp8_groups", test_dp_bucket_fp8_groups},
      {"dp_bucket_experts", test_dp_bucket_experts},
      {"dp_bucket_launch_inside_layer", test_dp_bucket_launch_inside_layer},
      {"dp_bucket_every_group_reduced", test_dp_bucket_every_group_reduced},
      {"fsdp_groups", test_fsdp_groups},
      {"fsdp_traffic", test_fsdp_traffic},
      {"moe_layer_kinds", test_moe_layer_kinds},
      {"fsdp_prefetch", test_fsdp_prefetch},
      {"fsdp_reduce_queue", test_fsdp_reduce_queue},
      {"bound_template_least", test_bound_template_least},
      {"bound_terms_of_batch", test_bound_terms_of_batch},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(sched_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
