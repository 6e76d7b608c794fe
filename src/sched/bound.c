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

/* The least time of a template's compute-stream tasks, one after another: kernels at full speed,
 * collectives at their least; *side set when a kernel runs on another stream. Each completion is
 * rounded up from its time but never by less than -1e-6 ns (exec-private.h, Rounding), twice for
 * a collective (its latency, its flow): that slack is taken off. */
static double template_work(const PnHwProfile *hw, const GArray *tpl, bool *side)
{
  double w = 0.0;
  for (guint i = 0; i < tpl->len; i++) {
    const PnTask *t = &g_array_index(tpl, PnTplEntry, i).task;
    if (t->kind == PN_TASK_COMPUTE && t->stream != PN_STREAM_COMPUTE)
      *side = true;
    else if (t->kind == PN_TASK_COMPUTE)
      w += fmax(0.0, t->work_ns + (t->graphed ? 0.0 : hw->kernel_launch_ns) - 1e-6);
    else if (t->kind == PN_TASK_COMM && t->stream == PN_STREAM_COMPUTE)
      w += fmax(0.0, comm_least_ns(hw, t) - 2e-6);
  }
  return w;
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

/* The bound from the templates of a builder set up by the caller; 0 when a template puts compute
 * on a side stream. */
static double bound_of(PnBuilder *b)
{
  const PnHwProfile *hw = b->sc->hw;
  bool side             = false;
  TemplateWork tw       = {0};
  for (int k = 0; k < (b->mixed ? 2 : 1); k++) {
    const PnTemplates *t  = k ? &b->dense_tpl : &b->tpl;
    tw.layer_fwd[k]       = template_work(hw, t->layer_fwd, &side);
    tw.layer_bwd[k]       = template_work(hw, t->layer_bwd, &side);
    tw.layer_bwd_plain[k] = template_work(hw, t->layer_bwd_plain, &side);
  }
  tw.emb_fwd      = template_work(hw, b->tpl.emb_fwd, &side);
  tw.emb_bwd      = template_work(hw, b->tpl.emb_bwd, &side);
  tw.head_fwd     = template_work(hw, b->tpl.head_fwd, &side);
  tw.head_bwd     = template_work(hw, b->tpl.head_bwd, &side);
  double upstream = 0.0, ranks = 0.0, optimizer = 0.0;
  for (uint32_t r = 0; r < b->pp; r++) {
    RankWork w = {0.0, INFINITY, INFINITY};
    for (int64_t c = 0; c < b->vpp; c++) {
      double f, bw;
      chunk_work(b, &tw, r, c, &f, &bw);
      w.work_ns += f + bw;
      w.least_fwd_ns = fmin(w.least_fwd_ns, f);
      w.least_bwd_ns = fmin(w.least_bwd_ns, bw);
    }
    ranks = fmax(ranks, upstream + (double)b->m * w.work_ns);
    upstream += w.least_fwd_ns + w.least_bwd_ns;
    g_autoptr(GArray) opt = pn__optimizer_template(b, r);
    optimizer             = fmax(optimizer, template_work(hw, opt, &side));
  }
  return side ? 0.0 : ranks + optimizer;
}

gboolean pn_sched_compute_bound(const PnScenario *sc, const PnPlan *plan, double *bound_ns, GError **error)
{
  *bound_ns = 0.0;
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
  *bound_ns = bound_of(&b);
  pn__templates_free(&b);
  g_ptr_array_unref(b.units);
  g_array_unref(b.vs_first_layer);
  g_array_unref(b.vs_layers);
  return TRUE;
}
