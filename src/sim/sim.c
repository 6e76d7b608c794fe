/* sim.c — scenario → plan → graph → execution → accounting (see sim.h, result.h). */
#include "sim/sim.h"

#include <math.h>
#include <string.h>

#include "core/mem.h"
#include "overlap/gating.h"
#include "sched/build.h"
#include "workload/flops.h"
#include "workload/memory.h"
#include "workload/ops.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* One end of an interval on a GPU's timeline, packed into a key:
 *   bits 63..12: time in ns (>= 0, < 2^52 ns = 52 days),  bit 11: 1 opens / 0 closes,
 *   bits 10..3: communication op index (PN_MAX_OPS),  bits 2..0: class + 1 (0 = compute).
 * The sweep needs the ends in time order only: ends at the same instant are all applied before
 * the next interval is charged, so their order among themselves changes nothing. Sorting is a
 * radix sort on the time bits: the accounting of a 10^6-task iteration must not cost more than
 * its simulation. */
typedef uint64_t PnEdge;

#define PN_MAX_OPS 256

static PnEdge edge_make(PnTimeNs t, int8_t cls, int op, bool open)
{
  return ((uint64_t)t << 12) | ((uint64_t)(open ? 1 : 0) << 11) | ((uint64_t)op << 3) | (uint64_t)(cls + 1);
}

static inline uint64_t edge_time(PnEdge e) { return e >> 12; }

/* Radix digits of 12 bits: a 4096-entry count table stays in L1 and the scatter writes to few
 * enough places to stay in cache (16-bit digits scattered to 65536 places ran at memory speed). */
#define PN_RADIX_BITS 12
#define PN_RADIX_SIZE (1u << PN_RADIX_BITS)

/* Sorts edges by time (LSD radix on time - earliest, stable; ties keep their order). */
static void sort_edges_by_time(PnEdge *v, size_t n)
{
  if (n < 2)
    return;
  uint64_t t_min = UINT64_MAX, t_max = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t t = edge_time(v[i]);
    t_min      = t < t_min ? t : t_min;
    t_max      = t > t_max ? t : t_max;
  }
  uint64_t span = t_max - t_min;
  if (span == 0)
    return;
  g_autofree PnEdge *tmp = g_new(PnEdge, n);
  pn_mem_hint_large(tmp, n * sizeof *tmp);
  g_autofree size_t *count = g_new(size_t, PN_RADIX_SIZE + 1);
  PnEdge *src = v, *dst = tmp;
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += PN_RADIX_BITS) {
    memset(count, 0, (PN_RADIX_SIZE + 1) * sizeof *count);
    for (size_t i = 0; i < n; i++)
      count[((edge_time(src[i]) - t_min) >> shift & (PN_RADIX_SIZE - 1)) + 1]++;
    for (size_t d = 0; d < PN_RADIX_SIZE; d++)
      count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++)
      dst[count[(edge_time(src[i]) - t_min) >> shift & (PN_RADIX_SIZE - 1)]++] = src[i];
    PnEdge *t = src;
    src       = dst;
    dst       = t;
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

/* A growable array of interval ends (a plain pointer/count/capacity triple: two appends per
 * task of a 10^6-task graph). */
typedef struct {
  PnEdge *v;
  size_t n, cap;
} PnEdgeVec;

/* One GPU's interval ends, appended in task order. Opens and closes are kept apart: tasks start
 * in issue order on most runs, so the opens usually arrive already sorted and only the closes
 * need sorting; the sweep merges the two. */
typedef struct {
  PnEdgeVec open, close;
} PnEdges;

static inline void edges_push(PnEdgeVec *e, PnEdge x)
{
  if (e->n == e->cap) {
    e->cap = e->cap ? 2 * e->cap : 1024;
    e->v   = g_renew(PnEdge, e->v, e->cap);
    pn_mem_hint_large(e->v, e->cap * sizeof *e->v);
  }
  e->v[e->n++] = x;
}

static void add_edges(PnEdges *edges, int8_t cls, int op, PnTimeNs a, PnTimeNs b, PnTimeNs w0, PnTimeNs w1)
{
  if (a < w0)
    a = w0;
  if (b > w1)
    b = w1;
  if (b <= a)
    return;
  edges_push(&edges->open, edge_make(a, cls, op, true));
  edges_push(&edges->close, edge_make(b, cls, op, false));
}

static void sort_if_needed(PnEdgeVec *e)
{
  for (size_t i = 1; i < e->n; i++)
    if (edge_time(e->v[i]) < edge_time(e->v[i - 1])) {
      sort_edges_by_time(e->v, e->n);
      return;
    }
}

/* The communication ops in flight during a sweep, as a list with O(1) insert and remove: an
 * exposed interval charges only these, not all PN_MAX_OPS slots. Each op's share is its own
 * accumulator, so the order of the list does not change any sum. */
typedef struct {
  int count[PN_MAX_OPS]; /* tasks of the op in flight */
  int cls[PN_MAX_OPS];
  int pos[PN_MAX_OPS]; /* index in `live` while count > 0 */
  int live[PN_MAX_OPS];
  int n_live;
} PnOpsInFlight;

static void ops_in_flight_add(PnOpsInFlight *f, int op, int cls, int delta)
{
  f->cls[op] = cls;
  int before = f->count[op];
  f->count[op] += delta;
  if (before <= 0 && f->count[op] > 0) {
    f->pos[op]           = f->n_live;
    f->live[f->n_live++] = op;
  } else if (before > 0 && f->count[op] <= 0) {
    int last            = f->live[--f->n_live];
    f->live[f->pos[op]] = last;
    f->pos[last]        = f->pos[op];
  }
}

/* Sweep one GPU's intervals inside [w0, w1]: compute busy, exposed comm per class (split
 * equally among the classes in flight while no compute runs), idle. */
/* `op_exposed` (PN_MAX_OPS entries) accumulates each op's share of the exposed time: an exposed
 * instant is split equally among the classes in flight, and a class's share equally among its
 * ops in flight. */
static void account_gpu(PnEdges *edges, PnTimeNs w0, PnTimeNs w1, PnStageStats *st, double *op_exposed)
{
  sort_if_needed(&edges->open);
  sort_if_needed(&edges->close);
  int active_compute = 0, active[PN_CLASS_N] = {0};
  PnOpsInFlight *ops = g_new0(PnOpsInFlight, 1);
  PnTimeNs prev      = w0;
  double idle_ns = 0.0, compute_ns = 0.0, exposed_ns[PN_CLASS_N] = {0};
  const PnEdgeVec *op = &edges->open, *cl = &edges->close;
  size_t io = 0, ic = 0;
  for (;;) {
    /* the earlier of the two heads (at a tie either: ends at one instant commute) */
    bool done      = io == op->n && ic == cl->n;
    bool take_open = !done && (ic == cl->n || (io < op->n && edge_time(op->v[io]) < edge_time(cl->v[ic])));
    PnEdge e       = done ? 0 : take_open ? op->v[io++] : cl->v[ic++];
    PnTimeNs t     = done ? w1 : (PnTimeNs)edge_time(e);
    double dt      = (double)(t - prev);
    if (dt > 0) {
      int n_cls = 0;
      for (int c = 0; c < PN_CLASS_N; c++)
        n_cls += active[c] > 0;
      if (active_compute > 0)
        compute_ns += dt;
      else if (n_cls > 0) {
        for (int c = 0; c < PN_CLASS_N; c++)
          exposed_ns[c] += active[c] > 0 ? dt / n_cls : 0.0;
        for (int k = 0; k < ops->n_live; k++) {
          int o = ops->live[k];
          op_exposed[o] += dt / n_cls * ops->count[o] / active[ops->cls[o]] * 1e-9;
        }
      } else
        idle_ns += dt;
      prev = t;
    }
    if (done)
      break;
    int cls   = (int)(e & 7) - 1;
    int opi   = (int)((e >> 3) & 0xff);
    int delta = (e >> 11) & 1 ? +1 : -1;
    if (cls == PN_CLASS_NONE) {
      active_compute += delta;
    } else {
      active[cls] += delta;
      ops_in_flight_add(ops, opi, cls, delta);
    }
  }
  g_free(ops);
  st->compute_s = compute_ns * 1e-9;
  st->bubble_s  = idle_ns * 1e-9;
  for (int c = 0; c < PN_CLASS_N; c++)
    st->exposed_comm_s[c] = exposed_ns[c] * 1e-9;
}

/* Op index by label. Labels are static strings, so a label pointer seen before maps to its op
 * through a small direct-mapped cache; the string table (equal text, different pointers) is
 * consulted only on a cache miss. */
typedef struct {
  GHashTable *by_text; /* label -> op + 1 */
  const char *key[64];
  int op[64];
  const char *label[PN_MAX_OPS];
  int cls[PN_MAX_OPS];
  int n;
} PnOpIndex;

static int op_index_of(PnOpIndex *ix, const char *label, int cls)
{
  guint slot = (guint)(((uintptr_t)label >> 3) * 0x9E3779B1u) >> 26; /* 0..63 */
  if (ix->key[slot] == label)
    return ix->op[slot];
  gpointer found = g_hash_table_lookup(ix->by_text, label);
  int op         = found ? GPOINTER_TO_INT(found) - 1 : -1;
  if (op < 0) {
    op = ix->n < PN_MAX_OPS - 1 ? ix->n++ : PN_MAX_OPS - 1; /* the last slot collects any overflow */
    if (op == ix->n - 1) {
      ix->label[op] = label;
      ix->cls[op]   = cls;
    }
    g_hash_table_insert(ix->by_text, (gpointer)label, GINT_TO_POINTER(op + 1));
  }
  ix->key[slot] = label;
  ix->op[slot]  = op;
  return op;
}

static void account(const PnScenario *sc, const PnGraph *g, const PnExecResult *ex, const PnBuildInfo *info,
                    PnResult *r)
{
  uint32_t n_gpus = g->n_gpus;
  int iters       = (int)(info->iteration_end->len / n_gpus);
  PnTimeNs prev = 0, w0 = 0, w1 = 0;
  const PnTaskTime *times = (const PnTaskTime *)(const void *)ex->times->data;
  const PnTask *tasks     = (const PnTask *)(const void *)g->tasks->data;
  for (int it = 0; it < iters; it++) {
    PnTimeNs end = 0;
    for (uint32_t gpu = 0; gpu < n_gpus; gpu++) {
      PnTaskId id = g_array_index(info->iteration_end, PnTaskId, it * n_gpus + gpu);
      PnTimeNs e  = times[id].end_ns;
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
  PnOpIndex ops               = {.by_text = g_hash_table_new(g_str_hash, g_str_equal)};
  double op_total[PN_MAX_OPS] = {0}, op_exposed[PN_MAX_OPS] = {0};
  PnEdges *edges = g_new0(PnEdges, n_gpus ? n_gpus : 1);
  g_array_set_size(r->stages, n_gpus);
  PnStageStats *stages = (PnStageStats *)(void *)r->stages->data;
  uint32_t n_tasks     = pn_graph_n_tasks(g);
  for (PnTaskId id = 0; id < n_tasks; id++) {
    const PnTask *t      = &tasks[id];
    const PnTaskTime *tt = &times[id];
    PnEdges *e           = &edges[t->gpu];
    PnStageStats *st     = &stages[t->gpu];
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
        int op = op_index_of(&ops, t->label ? t->label : "comm", t->cls);
        add_edges(e, t->cls, op, a, b, w0, w1);
        st->total_comm_s[t->cls] += (double)(b - a) * 1e-9;
        op_total[op] += (double)(b - a) * 1e-9;
      }
    }
  }
  for (uint32_t gpu = 0; gpu < n_gpus; gpu++) {
    PnStageStats *st = &stages[gpu];
    account_gpu(&edges[gpu], w0, w1, st, op_exposed);
    g_free(edges[gpu].open.v);
    g_free(edges[gpu].close.v);
    st->end_s -= (double)w0 * 1e-9;
    r->compute_s += st->compute_s / n_gpus;
    r->bubble_s += st->bubble_s / n_gpus;
    for (int c = 0; c < PN_CLASS_N; c++) {
      r->exposed_comm_s[c] += st->exposed_comm_s[c] / n_gpus;
      r->total_comm_s[c] += st->total_comm_s[c] / n_gpus;
    }
  }
  g_free(edges);
  for (int o = 0; o < ops.n; o++) {
    PnOpStats os = {ops.label[o], ops.cls[o], op_total[o] / n_gpus, op_exposed[o] / n_gpus};
    g_array_append_val(r->comm_ops, os);
  }
  g_hash_table_unref(ops.by_text);
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
  double peak_tflops =
      (tr->precision == PN_PREC_FP8 ? sc->hw->peak_fp8_flops_per_ns : sc->hw->peak_bf16_flops_per_ns) * 1e-3;
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
    g_ptr_array_add(r->warnings,
                    g_strdup_printf("estimated memory %.1f GiB per GPU exceeds the %.1f GiB of %s: the "
                                    "configuration would not fit (weights %.1f, gradients %.1f, optimizer "
                                    "%.1f, activations %.1f GiB)",
                                    r->memory.total_gib, hbm_gib, sc->hw->gpu, r->memory.weights_gib,
                                    r->memory.gradients_gib, r->memory.optimizer_gib, r->memory.activations_gib));
}

gboolean pn_sim_run_full(const PnScenario *sc, const GPtrArray *load_warnings, const PnSimOptions *opt, PnSimRun *out,
                         GError **error)
{
  gint64 t0             = g_get_monotonic_time();
  *out                  = (PnSimRun){0};
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
                    g_strdup_printf("%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                                    " GEMM/attention kernel shapes had no "
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
