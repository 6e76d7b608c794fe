/* bound.c — a lower bound on the iteration time from kernel prices alone (build.h states the
 * argument): the builder's templates, summed per rank instead of emitted. */
#include <math.h>

#include "sched/sched-private.h"

/* One rank's work: per micro-batch over all its chunks, and its lightest chunk's forward and
 * backward. */
typedef struct {
  double work_ns, least_fwd_ns, least_bwd_ns;
} RankWork;

/* The least time of a collective (hw/exec_links.c): its latency, then one flow of max(nvlink,
 * nic) nominal bytes whose rate no link lets past its bandwidth (the NIC's shared by
 * gpus_per_nic GPUs) and no bound past max_bytes_per_ns. */
static double comm_least_ns(const PnHwProfile *hw, const PnTask *t)
{
  double x = 0.0;
  if (t->nvlink_bytes > 0.0)
    x = fmax(x, t->nvlink_bytes / hw->nvlink_bytes_per_ns);
  if (t->nic_bytes > 0.0)
    x = fmax(x, t->nic_bytes * pn_hw_profile_gpus_per_nic(hw) / hw->nic_bytes_per_ns);
  if (t->max_bytes_per_ns > 0.0)
    x = fmax(x, fmax(t->nvlink_bytes, t->nic_bytes) / t->max_bytes_per_ns);
  return t->latency_ns + x;
}

/* The least time of a task alone: a kernel at full speed, a collective at its least, nothing for
 * what may take no time (a P2P leg, a delay). Each completion is rounded up from its time but
 * never by less than -1e-6 ns (exec-private.h, Rounding), twice for a collective (its latency,
 * its flow): that slack is taken off. */
static double task_least_ns(const PnHwProfile *hw, const PnTask *t)
{
  if (t->kind == PN_TASK_COMPUTE)
    return fmax(0.0, t->work_ns + (t->graphed ? 0.0 : hw->kernel_launch_ns) - 1e-6);
  if (t->kind == PN_TASK_COMM)
    return fmax(0.0, comm_least_ns(hw, t) - 2e-6);
  return 0.0;
}

/* The least time a template holds its GPU's compute stream, from the moment the stream is free
 * for it to the end of its last compute-stream task; *side set when a kernel runs on another
 * stream. Tasks at their least and only the constraints of the template that always hold: a
 * stream runs its tasks in order, a task waits for its template-relative dependencies, a side task
 * launched after the compute issued before it (after_compute) waits for it, and a compute task
 * waits for the joins made pending before it (pn__emit_template). A side stream may still be
 * busy with, or done early with, an earlier template's tasks: a side task that nothing in the
 * template anchors may have run at any time before (-inf), so only what the template itself
 * orders counts. At least the compute-stream tasks one after another; more where a compute task
 * waits for communication (the ring attention's exchanges, a collective joined before a GEMM). */
double pn__template_least_ns(const PnHwProfile *hw, const GArray *tpl, bool *side)
{
  double end[tpl->len];
  double stream_end[PN_STREAM_N];
  for (int k = 0; k < PN_STREAM_N; k++)
    stream_end[k] = k == PN_STREAM_COMPUTE ? 0.0 : -(double)INFINITY;
  double pending = -(double)INFINITY; /* the latest end among the joins the next compute task waits for */
  for (guint i = 0; i < tpl->len; i++) {
    const PnTplEntry *e = &g_array_index(tpl, PnTplEntry, i);
    const PnTask *t     = &e->task;
    bool compute_stream = t->stream == PN_STREAM_COMPUTE;
    if (t->kind == PN_TASK_COMPUTE && !compute_stream)
      *side = true;
    double start = stream_end[t->stream];
    for (int k = 0; k < 2; k++)
      if (e->dep[k] >= 0)
        start = fmax(start, end[e->dep[k]]);
    if (compute_stream)
      start = fmax(start, pending), pending = -(double)INFINITY;
    else if (e->after_compute)
      start = fmax(start, stream_end[PN_STREAM_COMPUTE]);
    end[i]                = start + task_least_ns(hw, t);
    stream_end[t->stream] = end[i];
    for (guint j = i > 0 ? i - 1 : 0; j <= i; j++) {
      const PnTplEntry *ej = &g_array_index(tpl, PnTplEntry, j);
      if (ej->join && (guint)ej->join_at == i)
        pending = fmax(pending, end[j]);
    }
    if (e->extra_join >= 0)
      pending = fmax(pending, end[e->extra_join]);
  }
  return stream_end[PN_STREAM_COMPUTE];
}

/* [1]: a MoE model's dense layers (b->dense_tpl) */
typedef struct {
  double layer_fwd[2], layer_bwd[2], layer_bwd_plain[2], emb_fwd, emb_bwd, head_fwd, head_bwd;
} TemplateWork;

static void chunk_work(PnBuilder *b, const TemplateWork *tw, uint32_t rank, int64_t chunk, double *fwd, double *bwd)
{
  int64_t vs = pn__vstage_of(b, rank, chunk), last = b->pp * b->vpp - 1;
  int64_t n = g_array_index(b->vs_layers, int64_t, vs), l0 = g_array_index(b->vs_first_layer, int64_t, vs);
  *fwd = 0.0;
  *bwd = 0.0;
  for (int64_t l = 0; l < n; l++) {
    int k = pn__layer_is_dense(b, l0 + l);
    *fwd += tw->layer_fwd[k];
    *bwd += pn_workload_layer_is_recomputed(b->sc, l) ? tw->layer_bwd[k] : tw->layer_bwd_plain[k];
  }
  if (vs == 0)
    *fwd += tw->emb_fwd, *bwd += tw->emb_bwd;
  if (vs == last)
    *fwd += tw->head_fwd, *bwd += tw->head_bwd;
}

/* The bound's terms from the templates of a builder set up by the caller (n = 0 when a template
 * puts compute on a side stream). */
static void terms_of(PnBuilder *b, PnBoundTerms *out)
{
  const PnHwProfile *hw = b->sc->hw;
  bool side             = false;
  TemplateWork tw       = {0};
  for (int k = 0; k < (b->mixed ? 2 : 1); k++) {
    const PnTemplates *t  = k ? &b->dense_tpl : &b->tpl;
    tw.layer_fwd[k]       = pn__template_least_ns(hw, t->layer_fwd, &side);
    tw.layer_bwd[k]       = pn__template_least_ns(hw, t->layer_bwd, &side);
    tw.layer_bwd_plain[k] = pn__template_least_ns(hw, t->layer_bwd_plain, &side);
  }
  tw.emb_fwd        = pn__template_least_ns(hw, b->tpl.emb_fwd, &side);
  tw.emb_bwd        = pn__template_least_ns(hw, b->tpl.emb_bwd, &side);
  tw.head_fwd       = pn__template_least_ns(hw, b->tpl.head_fwd, &side);
  tw.head_bwd       = pn__template_least_ns(hw, b->tpl.head_bwd, &side);
  out->upstream_ns  = g_new(double, b->pp);
  out->work_ns      = g_new(double, b->pp);
  double upstream   = 0.0;
  out->optimizer_ns = 0.0;
  for (uint32_t r = 0; r < b->pp; r++) {
    RankWork w = {0.0, INFINITY, INFINITY};
    for (int64_t c = 0; c < b->vpp; c++) {
      double f, bw;
      chunk_work(b, &tw, r, c, &f, &bw);
      w.work_ns += f + bw;
      w.least_fwd_ns = fmin(w.least_fwd_ns, f);
      w.least_bwd_ns = fmin(w.least_bwd_ns, bw);
    }
    out->upstream_ns[r] = upstream;
    out->work_ns[r]     = w.work_ns;
    upstream += w.least_fwd_ns + w.least_bwd_ns;
    g_autoptr(GArray) opt = pn__optimizer_template(b, r);
    out->optimizer_ns     = fmax(out->optimizer_ns, pn__template_least_ns(hw, opt, &side));
  }
  out->n = side ? 0 : b->pp;
}

gboolean pn_sched_bound_terms(const PnScenario *sc, const PnPlan *plan, PnBoundTerms *out, GError **error)
{
  *out = (PnBoundTerms){0};
  if (plan->overlap_moe_expert_parallel_comm || plan->delay_wgrad_compute || sc->training.iterations > 1)
    return TRUE;
  PnBuildInfo info = {0};
  PnBuilder b      = {0};
  pn__builder_layout(&b, sc, plan, &info);
  if (!pn__split_layers(&b, error))
    return FALSE;
  b.units = pn__arrays_new((guint)(b.pp * b.vpp), sizeof(PnUnit));
  for (uint32_t r = 0; r < b.pp; r++)
    for (int64_t c = 0; c < b.vpp; c++)
      pn__units_build(&b, r, c);
  pn__templates_build(&b);
  terms_of(&b, out);
  pn__templates_free(&b);
  g_ptr_array_unref(b.units);
  g_array_unref(b.vs_first_layer);
  g_array_unref(b.vs_layers);
  return TRUE;
}

double pn_sched_bound_at(const PnBoundTerms *t, int64_t num_microbatches)
{
  if (t->n == 0)
    return 0.0;
  double ranks = 0.0;
  for (guint r = 0; r < t->n; r++)
    ranks = fmax(ranks, t->upstream_ns[r] + (double)num_microbatches * t->work_ns[r]);
  return ranks + t->optimizer_ns;
}

void pn_bound_terms_clear(PnBoundTerms *t)
{
  g_free(t->upstream_ns);
  g_free(t->work_ns);
  *t = (PnBoundTerms){0};
}

gboolean pn_sched_compute_bound(const PnScenario *sc, const PnPlan *plan, double *bound_ns, GError **error)
{
  PnBoundTerms t;
  *bound_ns = 0.0;
  if (!pn_sched_bound_terms(sc, plan, &t, error))
    return FALSE;
  *bound_ns = pn_sched_bound_at(&t, sc->parallel.num_microbatches);
  pn_bound_terms_clear(&t);
  return TRUE;
}
