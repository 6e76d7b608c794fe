/* sim.c — scenario → plan → graph → execution → accounting (see sim.h, result.h). */
#include "sim/sim.h"

#include <math.h>
#include <string.h>

#include "hw/coll.h"
#include "overlap/gating.h"
#include "sched/build.h"
#include "workload/flops.h"
#include "workload/memory.h"
#include "workload/ops.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Accounting runs beside the executor (PnExecObserver): each GPU's timeline is swept as it is
 * made, in time order, so nothing is stored per interval and nothing is sorted. Per GPU, the
 * time since its last change is charged when the next change comes: to compute when a compute
 * kernel runs, else split equally among the communication classes in flight (each class's
 * share split among its ops in flight by their task counts), else to idle. The reported window
 * [w0, w1] is the last iteration: w0 is the moment the last GPU finishes the iteration before
 * (nothing before it is charged), w1 the moment the last GPU finishes the last one (nothing
 * after it). A task counts when it ends after w0 and starts before w1, clipped to the window.
 * The compute lost to SM contention comes from the executor by interval, clipped the same way. */

#define PN_MAX_OPS 256

static gint op_cmp(gconstpointer a, gconstpointer b)
{
  const PnOpStats *x = a, *y = b;
  if (x->exposed_s != y->exposed_s)
    return x->exposed_s > y->exposed_s ? -1 : 1;
  return strcmp(x->op, y->op);
}

/* The communication ops in flight on a GPU, as a list with O(1) insert and remove: an exposed
 * interval charges only these, not all PN_MAX_OPS slots. Each op's share is its own
 * accumulator, so the order of the list does not change any sum. */
typedef struct {
  int count[PN_MAX_OPS]; /* tasks of the op in flight */
  int pos[PN_MAX_OPS];   /* index in `live` while count > 0 */
  int live[PN_MAX_OPS];
  int n_live;
} PnOpsInFlight;

static void ops_in_flight_add(PnOpsInFlight *f, int op, int delta)
{
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

/* A communication task in flight on one stream (a stream runs one task at a time). */
typedef struct {
  PnTimeNs open_ns;
  int8_t cls; /* PN_CLASS_NONE: nothing counted */
  uint8_t op;
} PnOpenComm;

typedef struct {
  PnTimeNs last_ns; /* charged up to here */
  int active_compute, active[PN_CLASS_N], n_cls;
  PnOpsInFlight ops;
  PnOpenComm open[PN_STREAM_N];
  double compute_ns, idle_ns, exposed_ns[PN_CLASS_N];
  double total_comm_ns[PN_CLASS_N];
  double contention_ns[PN_CLASS_N];
  double op_exposed_ns[PN_MAX_OPS];
  bool op_called[PN_MAX_OPS]; /* an NCCL collective of the op ran on this GPU within the window */
  PnTimeNs end_ns;            /* latest end of a counted task, -1 none */
  gint64 last_span;           /* its latest span in PnAcct.spans, -1 none */
} PnAcctGpu;

typedef struct {
  const PnBuildInfo *info;
  uint32_t n_gpus;
  int iters;
  PnAcctGpu *gpu;
  int *finished;   /* per iteration: GPUs that finished it */
  bool *done;      /* per (iteration, GPU): its iteration-end task ended */
  PnTimeNs w0, w1; /* the window; PN_TIME_NEVER until known */
  PnOpIndex ops;
  double op_total_ns[PN_MAX_OPS];
  bool op_seen[PN_MAX_OPS];
  /* the NCCL collectives among the ops (PnTask.coll): calls, sum of S and of their durations
   * within the window, the kind and group size of the op's first call */
  const PnTask *tasks;
  double op_calls[PN_MAX_OPS], op_coll_bytes[PN_MAX_OPS], op_coll_ns[PN_MAX_OPS];
  int op_coll_kind[PN_MAX_OPS];
  int64_t op_coll_ranks[PN_MAX_OPS];
  GArray *spans; /* of PnSimSpan, when the run keeps them; NULL otherwise */
} PnAcct;

/* Records [t0, t1] of GPU g as charged with `classes` (0: idle), extending its latest span when
 * that one ends at t0 with the same classes. */
static void acct_span(PnAcct *ac, PnAcctGpu *g, uint8_t classes, PnTimeNs t0, PnTimeNs t1)
{
  if (g->last_span >= 0) {
    PnSimSpan *last = &g_array_index(ac->spans, PnSimSpan, g->last_span);
    if (last->end_ns == t0 && last->classes == classes) {
      last->end_ns = t1;
      return;
    }
  }
  PnSimSpan sp = {.gpu = (uint32_t)(g - ac->gpu), .classes = classes, .start_ns = t0, .end_ns = t1};
  g_array_append_val(ac->spans, sp);
  g->last_span = (gint64)ac->spans->len - 1;
}

static uint8_t classes_of(const PnAcctGpu *g)
{
  uint8_t m = 0;
  for (int c = 0; c < PN_CLASS_N; c++)
    m |= (uint8_t)((g->active[c] > 0) << c);
  return m;
}

/* Charges GPU g's state from its last change to `t` (clipped to the window). */
static inline void acct_charge(PnAcct *ac, PnAcctGpu *g, PnTimeNs t)
{
  if (ac->w0 == PN_TIME_NEVER)
    return; /* before the window: nothing is charged (last_ns is set when w0 is known) */
  if (t > ac->w1)
    t = ac->w1;
  if (t <= g->last_ns)
    return;
  double dt = (double)(t - g->last_ns);
  if (ac->spans != NULL && g->active_compute == 0)
    acct_span(ac, g, classes_of(g), g->last_ns, t);
  g->last_ns = t;
  if (g->active_compute > 0) {
    g->compute_ns += dt;
  } else if (g->n_cls > 0) {
    double share = dt / g->n_cls;
    for (int c = 0; c < PN_CLASS_N; c++)
      if (g->active[c] > 0)
        g->exposed_ns[c] += share;
    for (int k = 0; k < g->ops.n_live; k++) {
      int o = g->ops.live[k];
      g->op_exposed_ns[o] += share * g->ops.count[o] / g->active[ac->ops.cls[o]];
    }
  } else {
    g->idle_ns += dt;
  }
}

/* A communication task's tag: its class + 1 (0: not counted) in the high byte, its op index in
 * the low one. */
static uint16_t acct_tag(void *ctx, PnTaskId id, const PnTask *tk)
{
  PnAcct *ac = ctx;
  if (tk->cls < 0 || tk->cls >= PN_CLASS_N)
    return 0;
  int op = op_index_of(&ac->ops, tk->label ? tk->label : "comm", tk->cls);
  return (uint16_t)(((tk->cls + 1) << 8) | op);
}

static void acct_open(void *ctx, PnTaskId id, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag, PnTimeNs t)
{
  PnAcct *ac   = ctx;
  PnAcctGpu *g = &ac->gpu[gpu];
  acct_charge(ac, g, t);
  if (kind == PN_TASK_COMPUTE) {
    g->active_compute++;
    return;
  }
  PnOpenComm *oc = &g->open[stream];
  oc->open_ns    = t;
  oc->cls        = (int8_t)((tag >> 8) - 1);
  if (oc->cls < 0)
    return;
  oc->op = (uint8_t)(tag & 0xff);
  if (g->active[oc->cls]++ == 0)
    g->n_cls++;
  ops_in_flight_add(&g->ops, oc->op, +1);
}

/* Compute lost to SM contention (result.h) over [t0, t1], at a constant rate: the part inside the
 * window. The executor reports an interval once it has ended, so one reported before the window
 * opened lies before it. */
static void acct_contention(void *ctx, uint32_t gpu, PnTimeNs t0, PnTimeNs t1, const double lost_ns[PN_CLASS_N])
{
  PnAcct *ac = ctx;
  if (ac->w0 == PN_TIME_NEVER)
    return;
  PnTimeNs a = t0 < ac->w0 ? ac->w0 : t0, b = ac->w1 != PN_TIME_NEVER && t1 > ac->w1 ? ac->w1 : t1;
  if (b <= a)
    return;
  double part = (double)(b - a) / (double)(t1 - t0);
  for (int c = 0; c < PN_CLASS_N; c++)
    ac->gpu[gpu].contention_ns[c] += lost_ns[c] * part;
}

/* The window opens (w0) or closes (w1) when the last GPU finishes an iteration. */
static void acct_iteration_end(PnAcct *ac, int k, PnTimeNs t)
{
  if (++ac->finished[k] < (int)ac->n_gpus)
    return;
  if (k == ac->iters - 2) {
    ac->w0 = t;
    for (uint32_t i = 0; i < ac->n_gpus; i++)
      ac->gpu[i].last_ns = t;
  } else if (k == ac->iters - 1) { /* with one iteration, w0 = 0 from acct_iterations */
    for (uint32_t i = 0; i < ac->n_gpus; i++)
      acct_charge(ac, &ac->gpu[i], t);
    ac->w1 = t;
  }
}

static void acct_close(void *ctx, PnTaskId id, uint32_t gpu, uint8_t stream, uint8_t kind, uint16_t tag, PnTimeNs start,
                       PnTimeNs t)
{
  PnAcct *ac   = ctx;
  PnAcctGpu *g = &ac->gpu[gpu];
  acct_charge(ac, g, t);
  bool counted = ac->w0 != PN_TIME_NEVER && t > ac->w0 && start < ac->w1;
  if (counted && t > g->end_ns)
    g->end_ns = t;
  if (kind == PN_TASK_COMPUTE) {
    g->active_compute--;
  } else if (kind != PN_TASK_DELAY) {
    PnOpenComm *oc = &g->open[stream];
    if (oc->cls >= 0) {
      if (--g->active[oc->cls] == 0)
        g->n_cls--;
      ops_in_flight_add(&g->ops, oc->op, -1);
      PnTimeNs a = oc->open_ns, b = t;
      if (ac->w0 != PN_TIME_NEVER) {
        a = a < ac->w0 ? ac->w0 : a;
        b = b > ac->w1 ? ac->w1 : b;
      }
      if (counted && b > a) {
        g->total_comm_ns[oc->cls] += (double)(b - a);
        ac->op_total_ns[oc->op] += (double)(b - a);
        ac->op_seen[oc->op] = true;
      }
      const PnTask *tk = &ac->tasks[id];
      if (counted && kind == PN_TASK_COMM && tk->coll.bytes > 0.0f) {
        g->op_called[oc->op] = true;
        ac->op_calls[oc->op] += 1.0;
        ac->op_coll_bytes[oc->op] += (double)tk->coll.bytes;
        ac->op_coll_ns[oc->op] += (double)(t - oc->open_ns);
        if (ac->op_coll_kind[oc->op] < 0) {
          ac->op_coll_kind[oc->op]  = tk->coll.kind;
          ac->op_coll_ranks[oc->op] = tk->coll.ranks;
        }
      }
    }
  }
  const PnTaskId *ends = (const PnTaskId *)(const void *)ac->info->iteration_end->data;
  for (int k = 0; k < ac->iters; k++) {
    size_t i = (size_t)k * ac->n_gpus + gpu;
    if (ends[i] == id && !ac->done[i]) {
      ac->done[i] = true;
      acct_iteration_end(ac, k, t);
    }
  }
}

/* Before the build: the op index (asked by acct_tag while the executor prepares) and the GPUs. */
static void acct_init(PnAcct *ac, uint32_t n_gpus)
{
  *ac     = (PnAcct){.n_gpus = n_gpus,
                     .w0     = PN_TIME_NEVER,
                     .w1     = PN_TIME_NEVER,
                     .ops    = {.by_text = g_hash_table_new(g_str_hash, g_str_equal)}};
  ac->gpu = g_new0(PnAcctGpu, ac->n_gpus ? ac->n_gpus : 1);
  for (int o = 0; o < PN_MAX_OPS; o++)
    ac->op_coll_kind[o] = -1;
  for (uint32_t i = 0; i < ac->n_gpus; i++) {
    ac->gpu[i].end_ns    = -1;
    ac->gpu[i].last_span = -1;
  }
}

/* After the build: the iterations and their end tasks. */
static void acct_iterations(PnAcct *ac, const PnBuildInfo *info)
{
  ac->info     = info;
  ac->iters    = (int)(info->iteration_end->len / (ac->n_gpus ? ac->n_gpus : 1));
  ac->finished = g_new0(int, ac->iters ? ac->iters : 1);
  ac->done     = g_new0(bool, (size_t)(ac->iters ? ac->iters : 1) * (ac->n_gpus ? ac->n_gpus : 1));
  if (ac->iters == 1)
    ac->w0 = 0;
}

static gint span_cmp(gconstpointer a, gconstpointer b)
{
  const PnSimSpan *x = a, *y = b;
  if (x->gpu != y->gpu)
    return x->gpu < y->gpu ? -1 : 1;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void acct_clear(PnAcct *ac)
{
  if (ac->spans)
    g_array_unref(ac->spans);
  g_free(ac->gpu);
  g_free(ac->finished);
  g_free(ac->done);
  g_hash_table_unref(ac->ops.by_text);
}

/* The iteration times and the last one's breakdown, from the sweep and the iteration ends. */
static void account(const PnGraph *g, const PnExecResult *ex, const PnBuildInfo *info, PnAcct *ac, PnResult *r)
{
  uint32_t n_gpus = g->n_gpus;
  int iters       = ac->iters;
  PnTimeNs prev = 0, w0 = 0, w1 = 0;
  const PnTaskTime *times = (const PnTaskTime *)(const void *)ex->times->data;
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
  double host_ns[n_gpus ? n_gpus : 1];
  memset(host_ns, 0, sizeof host_ns);
  for (guint i = 0; ex->host_waits && i < ex->host_waits->len; i++) {
    const PnHostWait *hw = &g_array_index(ex->host_waits, PnHostWait, i);
    PnTimeNs a = MAX(hw->t0_ns, w0), z = MIN(hw->t1_ns, w1);
    if (z > a && hw->gpu < n_gpus)
      host_ns[hw->gpu] += (double)(z - a);
  }
  g_assert(iters == 0 || (ac->w0 == w0 && ac->w1 == w1));

  double op_exposed[PN_MAX_OPS] = {0};
  g_array_set_size(r->stages, n_gpus);
  PnStageStats *stages = (PnStageStats *)(void *)r->stages->data;
  for (uint32_t gpu = 0; gpu < n_gpus; gpu++) {
    PnAcctGpu *ag = &ac->gpu[gpu];
    acct_charge(ac, ag, w1); /* the rest of the window in the final state */
    PnStageStats *st = &stages[gpu];
    st->compute_s    = ag->compute_ns * 1e-9;
    st->bubble_s     = ag->idle_ns * 1e-9;
    st->end_s        = ag->end_ns >= 0 ? (double)(ag->end_ns - w0) * 1e-9 : 0.0;
    st->host_bound_s = host_ns[gpu] * 1e-9;
    if (info->dp_buckets && gpu < info->dp_buckets->len) {
      st->dp_buckets       = g_array_index(info->dp_buckets, int64_t, gpu);
      st->dp_bucket_groups = g_array_index(info->dp_bucket_groups, int64_t, gpu);
    }
    r->host_bound_s += st->host_bound_s / n_gpus;
    for (int c = 0; c < PN_CLASS_N; c++) {
      st->exposed_comm_s[c] = ag->exposed_ns[c] * 1e-9;
      st->total_comm_s[c]   = ag->total_comm_ns[c] * 1e-9;
      st->contention_s[c]   = ag->contention_ns[c] * 1e-9;
    }
    for (int o = 0; o < ac->ops.n; o++)
      op_exposed[o] += ag->op_exposed_ns[o] * 1e-9;
    r->compute_s += st->compute_s / n_gpus;
    r->bubble_s += st->bubble_s / n_gpus;
    for (int c = 0; c < PN_CLASS_N; c++) {
      r->exposed_comm_s[c] += st->exposed_comm_s[c] / n_gpus;
      r->total_comm_s[c] += st->total_comm_s[c] / n_gpus;
      r->contention_s[c] += st->contention_s[c] / n_gpus;
    }
  }
  for (int o = 0; o < ac->ops.n; o++) {
    if (!ac->op_seen[o])
      continue;
    PnOpStats os = {.op        = ac->ops.label[o],
                    .cls       = ac->ops.cls[o],
                    .total_s   = ac->op_total_ns[o] * 1e-9 / n_gpus,
                    .exposed_s = op_exposed[o] / n_gpus,
                    .coll_kind = -1};
    if (ac->op_coll_kind[o] >= 0 && ac->op_calls[o] > 0.0 && ac->op_coll_ns[o] > 0.0) {
      os.coll_kind = ac->op_coll_kind[o];
      os.ranks     = ac->op_coll_ranks[o];
      int running  = 0; /* the stages that run it: the output layer's collectives run on the last one */
      for (uint32_t gpu = 0; gpu < n_gpus; gpu++)
        running += ac->gpu[gpu].op_called[o];
      os.calls      = ac->op_calls[o] / MAX(running, 1);
      os.size_bytes = ac->op_coll_bytes[o] / ac->op_calls[o];
      os.algbw_gbps = ac->op_coll_bytes[o] / ac->op_coll_ns[o]; /* bytes per ns = GB/s */
      os.busbw_gbps = os.algbw_gbps * pn_coll_busbw_factor((PnCollKind)os.coll_kind, os.ranks);
    }
    g_array_append_val(r->comm_ops, os);
  }
  g_array_sort(r->comm_ops, op_cmp);
}

/* The estimate exceeds the GPU: say by what, and which single changes would fit (memory.h). */
static void warn_memory(const PnScenario *sc, const PnPlan *plan, PnResult *r)
{
  double hbm_gib = sc->hw->hbm_bytes / GIB;
  if (r->memory.total_gib <= hbm_gib)
    return;
  PnMemoryFit fits[PN_MEMORY_FITS_MAX];
  int n = pn_workload_memory_fits(sc, plan->tp_comm_overlap, sc->hw->hbm_bytes, sc->hw->gpus_per_node, fits,
                                  PN_MEMORY_FITS_MAX);
  g_autoptr(GString) how = g_string_new(n > 0 ? "; it would fit with " : "");
  for (int i = 0; i < n; i++) {
    const char *sep = i == 0 ? "" : (i == n - 1 ? " or " : ", ");
    g_string_append_printf(how, "%s%s (%.1f GiB)", sep, fits[i].change, fits[i].total_bytes / GIB);
  }
  if (n == 0)
    g_string_append(how, "; no single change of the distributed optimizer, recompute, pipeline or tensor "
                         "parallel size, context_parallel_size=2 or micro_batch_size=1 makes it fit");
  g_ptr_array_add(r->warnings, g_strdup_printf("estimated memory %.1f GiB per GPU exceeds the %.1f GiB of %s: the "
                                               "configuration would not fit (weights %.1f, gradients %.1f, optimizer "
                                               "%.1f, activations %.1f GiB)%s",
                                               r->memory.total_gib, hbm_gib, sc->hw->gpu, r->memory.weights_gib,
                                               r->memory.gradients_gib, r->memory.optimizer_gib,
                                               r->memory.activations_gib, how->str));
}

static void fill_headline(const PnScenario *sc, const PnPlan *plan, PnResult *r)
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
  pn_workload_memory(sc, plan->tp_comm_overlap, &mem);
  r->memory.weights_gib     = mem.weights_bytes / GIB;
  r->memory.gradients_gib   = mem.gradients_bytes / GIB;
  r->memory.optimizer_gib   = mem.optimizer_bytes / GIB;
  r->memory.activations_gib = mem.activations_bytes / GIB;
  r->memory.other_gib       = mem.other_bytes / GIB;
  r->memory.total_gib       = r->memory.weights_gib + r->memory.gradients_gib + r->memory.optimizer_gib +
                        r->memory.activations_gib + r->memory.other_gib;
  r->memory.hbm_gib = sc->hw->hbm_bytes / GIB;
  r->memory.fits    = r->memory.total_gib <= r->memory.hbm_gib;
  warn_memory(sc, plan, r);
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
  r->plan              = plan;
  g_autoptr(PnGraph) g = pn_graph_new((uint32_t)sc->parallel.pipeline_model_parallel_size);
  PnAcct ac;
  acct_init(&ac, g->n_gpus);
  if (opt && opt->keep_spans)
    ac.spans = g_array_new(FALSE, FALSE, sizeof(PnSimSpan));
  PnExecObserver obs = {
      .ctx = &ac, .tag = acct_tag, .open = acct_open, .close = acct_close, .contention = acct_contention};
  PnExecOptions eo = {.max_connections = plan.max_connections, .observer = &obs, .unfused = opt && opt->unfused};
  PnBuildInfo info = {0};
  if (!pn_sched_build(sc, &plan, g, &info, error)) {
    acct_clear(&ac);
    pn_build_info_clear(&info);
    return FALSE;
  }
  acct_iterations(&ac, &info);
  ac.tasks        = pn_graph_tasks(g); /* now that the graph is built: its array moves while it grows */
  eo.keep_whole   = (const PnTaskId *)(const void *)info.iteration_end->data;
  eo.n_keep_whole = info.iteration_end->len;
  PnExecResult ex = {0};
  gboolean ran    = pn_exec_run(g, sc->hw, &eo, &ex, error);
  if (!ran) {
    acct_clear(&ac);
    pn_build_info_clear(&info);
    return FALSE;
  }
  account(g, &ex, &info, &ac, r);
  if (ac.spans) {
    g_array_sort(ac.spans, span_cmp);
    out->spans = g_steal_pointer(&ac.spans);
  }
  acct_clear(&ac);
  fill_headline(sc, &plan, r);
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
  if (run->spans)
    g_array_unref(run->spans);
  *run = (PnSimRun){0};
}
