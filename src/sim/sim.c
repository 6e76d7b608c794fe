/* sim.c — scenario → plan → graph → execution → accounting (see sim.h, result.h). */
#include "sim/sim.h"

#include <math.h>
#include <string.h>

#include "overlap/gating.h"
#include "sched/build.h"
#include "workload/flops.h"
#include "workload/memory.h"
#include "workload/ops.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* One end of an interval on a GPU's timeline, packed into a sortable key:
 *   bits 63..12: time in ns (>= 0, < 2^52 ns = 52 days),  bit 11: 1 opens / 0 closes (closes
 *   sort first at a tie),  bits 10..3: communication op index (PN_MAX_OPS),  bits 2..0: class + 1
 *   (0 = compute).
 * Sorting keys is a radix sort: the accounting of a 10^6-task iteration must not cost more than
 * its simulation. */
typedef uint64_t PnEdge;

#define PN_MAX_OPS 256

static PnEdge edge_make(PnTimeNs t, int8_t cls, int op, bool open)
{
  return ((uint64_t)t << 12) | ((uint64_t)(open ? 1 : 0) << 11) | ((uint64_t)op << 3) | (uint64_t)(cls + 1);
}

static void radix_sort(uint64_t *v, size_t n)
{
  if (n < 2)
    return;
  g_autofree uint64_t *tmp = g_new(uint64_t, n);
  uint64_t max             = 0;
  for (size_t i = 0; i < n; i++)
    max = v[i] > max ? v[i] : max;
  uint64_t *src = v, *dst = tmp;
  for (int shift = 0; shift < 64 && (max >> shift) != 0; shift += 16) {
    size_t count[65537] = {0};
    for (size_t i = 0; i < n; i++)
      count[((src[i] >> shift) & 0xffff) + 1]++;
    for (size_t d = 0; d < 65536; d++)
      count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++)
      dst[count[(src[i] >> shift) & 0xffff]++] = src[i];
    uint64_t *t = src;
    src         = dst;
    dst         = t;
  }
  if (src != v)
    memcpy(v, src, n * sizeof *v);
}

static gint op_cmp(gconstpointer a, gconstpointer b)
{
  const PnOpStats *x = a, *y = b;
  if (x->exposed_s != y->exposed_s)
    return x->exposed_s > y->exposed_s ? -1 : 1;
  return strcmp(x->op, y->op);
}

/* When the data of a P2P task actually moves: from the first leg whose both ends had started. */
static PnTimeNs p2p_transfer_start(const PnGraph *g, const PnExecResult *ex, PnTaskId id)
{
  const PnTask *t   = &g_array_index(g->tasks, PnTask, id);
  PnTimeNs own      = g_array_index(ex->times, PnTaskTime, id).start_ns;
  PnTimeNs earliest = PN_TIME_NEVER;
  for (int i = 0; i < t->n_legs; i++) {
    PnTimeNs peer  = g_array_index(ex->times, PnTaskTime, pn_graph_legs(g, t)[i].peer).start_ns;
    PnTimeNs begin = own > peer ? own : peer;
    if (begin < earliest)
      earliest = begin;
  }
  return earliest == PN_TIME_NEVER ? own : earliest;
}

static void add_edges(GArray *edges, int8_t cls, int op, PnTimeNs a, PnTimeNs b, PnTimeNs w0, PnTimeNs w1)
{
  if (a < w0)
    a = w0;
  if (b > w1)
    b = w1;
  if (b <= a)
    return;
  PnEdge open = edge_make(a, cls, op, true), close = edge_make(b, cls, op, false);
  g_array_append_val(edges, open);
  g_array_append_val(edges, close);
}

/* Sweep one GPU's intervals inside [w0, w1]: compute busy, exposed comm per class (split
 * equally among the classes in flight while no compute runs), idle. */
/* `op_exposed` (PN_MAX_OPS entries) accumulates each op's share of the exposed time: an exposed
 * instant is split equally among the classes in flight, and a class's share equally among its
 * ops in flight. */
static void account_gpu(GArray *edges, PnTimeNs w0, PnTimeNs w1, PnStageStats *st, double *op_exposed)
{
  radix_sort((uint64_t *)edges->data, edges->len);
  int active_compute = 0, active[PN_CLASS_N] = {0};
  int op_active[PN_MAX_OPS] = {0}, op_class[PN_MAX_OPS] = {0};
  PnTimeNs prev = w0;
  double idle_ns = 0.0, compute_ns = 0.0, exposed_ns[PN_CLASS_N] = {0};
  for (guint i = 0; i <= edges->len; i++) {
    PnTimeNs t = i < edges->len ? (PnTimeNs)(g_array_index(edges, PnEdge, i) >> 12) : w1;
    double dt  = (double)(t - prev);
    if (dt > 0) {
      int n_cls = 0;
      for (int c = 0; c < PN_CLASS_N; c++)
        n_cls += active[c] > 0;
      if (active_compute > 0)
        compute_ns += dt;
      else if (n_cls > 0) {
        for (int c = 0; c < PN_CLASS_N; c++)
          exposed_ns[c] += active[c] > 0 ? dt / n_cls : 0.0;
        for (int o = 0; o < PN_MAX_OPS; o++)
          if (op_active[o] > 0)
            op_exposed[o] += dt / n_cls * op_active[o] / active[op_class[o]] * 1e-9;
      }
      else
        idle_ns += dt;
      prev = t;
    }
    if (i == edges->len)
      break;
    PnEdge e  = g_array_index(edges, PnEdge, i);
    int cls   = (int)(e & 7) - 1;
    int op    = (int)((e >> 3) & 0xff);
    int delta = (e >> 11) & 1 ? +1 : -1;
    if (cls == PN_CLASS_NONE) {
      active_compute += delta;
    } else {
      active[cls] += delta;
      op_active[op] += delta;
      op_class[op] = cls;
    }
  }
  st->compute_s = compute_ns * 1e-9;
  st->bubble_s  = idle_ns * 1e-9;
  for (int c = 0; c < PN_CLASS_N; c++)
    st->exposed_comm_s[c] = exposed_ns[c] * 1e-9;
}

static void account(const PnScenario *sc, const PnGraph *g, const PnExecResult *ex, const PnBuildInfo *info,
                    PnResult *r)
{
  uint32_t n_gpus = g->n_gpus;
  int iters       = (int)(info->iteration_end->len / n_gpus);
  PnTimeNs prev   = 0, w0 = 0, w1 = 0;
  for (int it = 0; it < iters; it++) {
    PnTimeNs end = 0;
    for (uint32_t gpu = 0; gpu < n_gpus; gpu++) {
      PnTaskId id = g_array_index(info->iteration_end, PnTaskId, it * n_gpus + gpu);
      PnTimeNs e  = g_array_index(ex->times, PnTaskTime, id).end_ns;
      end         = e > end ? e : end;
    }
    double secs = (double)(end - prev) * 1e-9;
    g_array_append_val(r->iteration_times_s, secs);
    w0   = prev;
    w1   = end;
    prev = end;
  }
  r->iteration_time_s = (double)(w1 - w0) * 1e-9;

  /* communication ops by label (lookup only; the report order is sorted below) */
  g_autoptr(GHashTable) op_index = g_hash_table_new(g_str_hash, g_str_equal);
  const char *op_label[PN_MAX_OPS];
  int op_cls[PN_MAX_OPS];
  double op_total[PN_MAX_OPS] = {0}, op_exposed[PN_MAX_OPS] = {0};
  int n_ops = 0;
  g_autoptr(GPtrArray) edges = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  for (uint32_t gpu = 0; gpu < n_gpus; gpu++)
    g_ptr_array_add(edges, g_array_new(FALSE, FALSE, sizeof(PnEdge)));
  g_array_set_size(r->stages, n_gpus);
  for (PnTaskId id = 0; id < pn_graph_n_tasks(g); id++) {
    const PnTask *t      = &g_array_index(g->tasks, PnTask, id);
    const PnTaskTime *tt = &g_array_index(ex->times, PnTaskTime, id);
    GArray *e            = g_ptr_array_index(edges, t->gpu);
    PnStageStats *st     = &g_array_index(r->stages, PnStageStats, t->gpu);
    if (tt->end_ns <= w0 || tt->start_ns >= w1)
      continue;
    if (tt->end_ns > st->end_s * 1e9)
      st->end_s = (double)tt->end_ns * 1e-9;
    if (t->kind == PN_TASK_COMPUTE) {
      add_edges(e, PN_CLASS_NONE, 0, tt->start_ns, tt->end_ns, w0, w1);
    } else if (t->kind == PN_TASK_COMM || t->kind == PN_TASK_P2P) {
      PnTimeNs a = t->kind == PN_TASK_P2P ? p2p_transfer_start(g, ex, id) : tt->start_ns;
      PnTimeNs b = tt->end_ns;
      a          = a < w0 ? w0 : a;
      b          = b > w1 ? w1 : b;
      if (t->cls >= 0 && b > a) {
        const char *label = t->label ? t->label : "comm";
        gpointer found    = g_hash_table_lookup(op_index, label);
        int op            = found ? GPOINTER_TO_INT(found) - 1 : -1;
        if (op < 0) {
          op = n_ops < PN_MAX_OPS - 1 ? n_ops++ : PN_MAX_OPS - 1; /* the last slot collects any overflow */
          if (op == n_ops - 1) {
            op_label[op] = label;
            op_cls[op]   = t->cls;
          }
          g_hash_table_insert(op_index, (gpointer)label, GINT_TO_POINTER(op + 1));
        }
        add_edges(e, t->cls, op, a, b, w0, w1);
        st->total_comm_s[t->cls] += (double)(b - a) * 1e-9;
        op_total[op] += (double)(b - a) * 1e-9;
      }
    }
  }
  for (uint32_t gpu = 0; gpu < n_gpus; gpu++) {
    PnStageStats *st = &g_array_index(r->stages, PnStageStats, gpu);
    account_gpu(g_ptr_array_index(edges, gpu), w0, w1, st, op_exposed);
    st->end_s -= (double)w0 * 1e-9;
    r->compute_s += st->compute_s / n_gpus;
    r->bubble_s += st->bubble_s / n_gpus;
    for (int c = 0; c < PN_CLASS_N; c++) {
      r->exposed_comm_s[c] += st->exposed_comm_s[c] / n_gpus;
      r->total_comm_s[c] += st->total_comm_s[c] / n_gpus;
    }
  }
  for (int o = 0; o < n_ops; o++) {
    PnOpStats os = {op_label[o], op_cls[o], op_total[o] / n_gpus, op_exposed[o] / n_gpus};
    g_array_append_val(r->comm_ops, os);
  }
  g_array_sort(r->comm_ops, op_cmp);
  (void)sc;
}

static void fill_headline(const PnScenario *sc, PnResult *r)
{
  const PnTrainingConfig *tr = &sc->training;
  double gpus                = (double)sc->hardware.num_gpus;
  r->tokens_per_iteration    = (double)tr->global_batch_size * (double)tr->seq_length;
  r->model_flops_per_iteration =
    pn_workload_model_flops(&sc->model, tr->seq_length, tr->global_batch_size, pn_workload_padded_vocab(sc));
  r->data_parallel_size = sc->parallel.data_parallel_size;
  r->num_microbatches   = sc->parallel.num_microbatches;
  if (r->iteration_time_s > 0) {
    r->tokens_per_s_per_gpu = r->tokens_per_iteration / r->iteration_time_s / gpus;
    r->model_tflops_per_gpu = r->model_flops_per_iteration / r->iteration_time_s / gpus * 1e-12;
  }
  double peak_tflops = (tr->precision == PN_PREC_FP8 ? sc->hw->peak_fp8_flops_per_ns : sc->hw->peak_bf16_flops_per_ns) *
                       1e-3;
  r->mfu = peak_tflops > 0 ? r->model_tflops_per_gpu / peak_tflops : 0.0;

  PnWorkloadMemory mem;
  pn_workload_memory(sc, &mem);
  r->memory.weights_gib     = mem.weights_bytes / GIB;
  r->memory.gradients_gib   = mem.gradients_bytes / GIB;
  r->memory.optimizer_gib   = mem.optimizer_bytes / GIB;
  r->memory.activations_gib = mem.activations_bytes / GIB;
  r->memory.other_gib       = mem.other_bytes / GIB;
  r->memory.total_gib       = r->memory.weights_gib + r->memory.gradients_gib + r->memory.optimizer_gib +
                        r->memory.activations_gib + r->memory.other_gib;
  double hbm_gib = sc->hw->hbm_bytes / GIB;
  if (r->memory.total_gib > hbm_gib)
    g_ptr_array_add(r->warnings, g_strdup_printf("estimated memory %.1f GiB per GPU exceeds the %.1f GiB of %s: the "
                                                 "configuration would not fit (weights %.1f, gradients %.1f, optimizer "
                                                 "%.1f, activations %.1f GiB)",
                                                 r->memory.total_gib, hbm_gib, sc->hw->gpu, r->memory.weights_gib,
                                                 r->memory.gradients_gib, r->memory.optimizer_gib,
                                                 r->memory.activations_gib));
}

gboolean pn_sim_run_full(const PnScenario *sc, const GPtrArray *load_warnings, const PnSimOptions *opt, PnSimRun *out,
                         GError **error)
{
  gint64 t0          = g_get_monotonic_time();
  *out               = (PnSimRun){0};
  g_autoptr(PnResult) r = pn_result_new();
  if (load_warnings)
    for (guint i = 0; i < load_warnings->len; i++)
      g_ptr_array_add(r->warnings, g_strdup(g_ptr_array_index(load_warnings, i)));
  r->iterations = sc->training.iterations > 0 ? sc->training.iterations : 1;

  PnPlan plan;
  if (!pn_overlap_resolve(sc, &plan, r->warnings, error))
    return FALSE;
  g_autoptr(PnGraph) g = pn_graph_new((uint32_t)sc->parallel.pipeline_model_parallel_size);
  PnBuildInfo info     = {0};
  if (!pn_sched_build(sc, &plan, g, &info, error)) {
    pn_build_info_clear(&info);
    return FALSE;
  }
  PnExecOptions eo = {.max_connections = plan.max_connections};
  PnExecResult ex  = {0};
  if (!pn_exec_run(g, sc->hw, &eo, &ex, error)) {
    pn_build_info_clear(&info);
    return FALSE;
  }
  account(sc, g, &ex, &info, r);
  fill_headline(sc, r);
  r->tasks          = pn_graph_n_tasks(g);
  r->events         = ex.events;
  r->cost_fallbacks = info.cost_fallbacks;
  if (info.cost_fallbacks > 0)
    g_ptr_array_add(r->warnings,
                    g_strdup_printf("%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " GEMM/attention kernel shapes had no "
                                    "calibration point nearby in %s and were priced by the roofline fallback",
                                    info.cost_fallbacks, info.cost_templates, sc->hw->name));
  pn_build_info_clear(&info);
  r->sim_wall_s = (double)(g_get_monotonic_time() - t0) * 1e-6;
  if (opt && opt->keep_graph) {
    out->graph = g_steal_pointer(&g);
    out->exec  = ex;
  } else {
    pn_exec_result_clear(&ex);
  }
  out->result = g_steal_pointer(&r);
  return TRUE;
}

PnResult *pn_sim_run(const PnScenario *sc, const GPtrArray *load_warnings, GError **error)
{
  PnSimRun run;
  if (!pn_sim_run_full(sc, load_warnings, NULL, &run, error))
    return NULL;
  return run.result;
}

void pn_sim_run_clear(PnSimRun *run)
{
  pn_result_free(run->result);
  pn_graph_free(run->graph);
  if (run->exec.times)
    pn_exec_result_clear(&run->exec);
  *run = (PnSimRun){0};
}
