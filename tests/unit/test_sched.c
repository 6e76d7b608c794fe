/* test_sched.c — Megatron pipeline schedule order (src/sched/order.h).
 *
 * Golden sequences are derived by hand from megatron/core/pipeline_parallel/schedules.py
 * (NVIDIA/Megatron-LM d98e8a64dd); property tests run every configuration in kConfigs. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "sched/build.h"
#include "sched/order.h"

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
