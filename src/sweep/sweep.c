/* sweep.c — the two passes of a sweep over threads (sweep.h). */
#include "sweep/sweep.h"

#include <math.h>
#include <string.h>

#include "overlap/gating.h"
#include "sched/build.h"
#include "sim/sim.h"
#include "workload/memory.h"
#include "workload/rules.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

void pn_sweep_axis_free(PnSweepAxis *a)
{
  if (a == NULL)
    return;
  g_array_free(a->values, TRUE);
  g_free(a->splits);
  g_free(a);
}

static void row_clear(gpointer p) { g_free(((PnSweepRow *)p)->error); }
static void reason_clear(gpointer p) { g_free(((PnSweepReason *)p)->reason); }

PnSweepResult *pn_sweep_result_new(void)
{
  PnSweepResult *r  = g_new0(PnSweepResult, 1);
  r->reasons        = g_array_new(FALSE, TRUE, sizeof(PnSweepReason));
  r->accepted_index = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  r->accepted_bound = g_array_new(FALSE, FALSE, sizeof(double));
  r->pruned_index   = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  r->rows           = g_array_new(FALSE, TRUE, sizeof(PnSweepRow));
  g_array_set_clear_func(r->reasons, reason_clear);
  g_array_set_clear_func(r->rows, row_clear);
  return r;
}

void pn_sweep_result_free(PnSweepResult *r)
{
  if (r == NULL)
    return;
  g_array_free(r->reasons, TRUE);
  g_array_free(r->accepted_index, TRUE);
  g_array_free(r->accepted_bound, TRUE);
  g_array_free(r->pruned_index, TRUE);
  g_array_free(r->rows, TRUE);
  g_free(r);
}

uint64_t pn_sweep_size(const PnSweepSpec *spec)
{
  uint64_t n = 1;
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    if (n > (UINT64_C(1) << 62) / ax->values->len)
      return 0;
    n *= ax->values->len;
  }
  return n;
}

const PnScenarioValue *pn_sweep_value(const PnSweepSpec *spec, guint a, uint64_t index)
{
  for (guint k = spec->axes->len; k-- > a + 1;)
    index /= ((const PnSweepAxis *)g_ptr_array_index(spec->axes, k))->values->len;
  const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
  return &g_array_index(ax->values, PnScenarioValue, index % ax->values->len);
}

void pn_sweep_candidate(const PnSweepSpec *spec, uint64_t index, PnScenario *out)
{
  *out = *spec->base;
  if (spec->sp_follows_tp)
    out->parallel.sequence_parallel = true; /* turned off at tp 1 by the rules, as Megatron does */
  if (spec->etp_follows_tp)
    out->parallel.expert_tensor_parallel_size = 0;
  if (spec->vpp_follows_layout)
    out->parallel.virtual_pipeline_model_parallel_size = 1; /* null: the rules derive it from the layout */
  const PnSplitKeys *split = pn_sweep_split(spec, index);
  for (guint k = spec->axes->len; k-- > 0;) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, k);
    pn_scenario_field_set(&ax->field, out, &g_array_index(ax->values, PnScenarioValue, index % ax->values->len));
    index /= ax->values->len;
  }
  if (split != NULL)
    pn_workload_split_keys_set(&out->parallel, split);
}

const char *const pn_sweep_split_keys[4] = {
    "parallel.num_layers_in_first_pipeline_stage", "parallel.num_layers_in_last_pipeline_stage",
    "parallel.account_for_embedding_in_pipeline_split", "parallel.account_for_loss_in_pipeline_split"};

const PnSplitKeys *pn_sweep_split(const PnSweepSpec *spec, uint64_t index)
{
  if (!spec->split_chosen)
    return NULL;
  guint at_pp = 0, at_vpp = 0, n_vpp = 1; /* the candidate's values on the split's axes */
  for (guint k = spec->axes->len; k-- > 0;) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, k);
    guint at              = (guint)(index % ax->values->len);
    at_pp                 = (int)k == spec->split_pp_axis ? at : at_pp;
    if ((int)k == spec->split_vpp_axis)
      at_vpp = at, n_vpp = ax->values->len;
    index /= ax->values->len;
  }
  const PnSweepAxis *own =
      g_ptr_array_index(spec->axes, spec->split_pp_axis >= 0 ? spec->split_pp_axis : spec->split_vpp_axis);
  return &own->splits[at_pp * n_vpp + at_vpp];
}

/* ---- pass 1: check ---- */

typedef struct {
  uint64_t first, end;
  GArray *accepted; /* of uint64_t */
  GArray *bounds;   /* of double, beside `accepted` when pruning */
  uint64_t by_rule[PN_RULE_N];
  GHashTable *other; /* reason -> count (gating refusals, duplicates) */
  uint64_t over_memory;
  double least_over_gib;
} CheckChunk;

/* Whether the candidate is the same layout as another of the space: sequence_parallel true at
 * tp 1 runs as false, which the space also holds when its axis has false. */
static bool duplicate_sp(const PnSweepSpec *spec, unsigned notes)
{
  if (!(notes & PN_RULE_NOTE_SP_DISABLED) || spec->sp_follows_tp)
    return false;
  for (guint a = 0; a < spec->axes->len; a++) {
    const PnSweepAxis *ax = g_ptr_array_index(spec->axes, a);
    if (strcmp(ax->field.name, "parallel.sequence_parallel") == 0)
      for (guint v = 0; v < ax->values->len; v++)
        if (strcmp(g_array_index(ax->values, PnScenarioValue, v).text, "false") == 0)
          return true;
  }
  return false;
}

static void count_other(CheckChunk *ch, const char *reason)
{
  if (ch->other == NULL)
    ch->other = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  gpointer old = g_hash_table_lookup(ch->other, reason);
  g_hash_table_replace(ch->other, g_strdup(reason), GSIZE_TO_POINTER(GPOINTER_TO_SIZE(old) + 1));
}

/* The bound's terms per layout, shared by the layouts that differ only in their global batch
 * (sched/build.h, PnBoundTerms): the key is the scenario with its batch and micro-batch count
 * cleared (neither enters the templates or the overlap plan). */
typedef struct {
  GMutex lock;
  GHashTable *terms; /* SHA-256 of the key -> PnBoundTerms (NULL: the build refused the split) */
} BoundCache;

static void terms_free(gpointer p)
{
  if (p != NULL)
    pn_bound_terms_clear(p);
  g_free(p);
}

static double cached_bound(BoundCache *cache, const PnScenario *c, const PnPlan *plan)
{
  PnScenario k                 = *c;
  k.training.global_batch_size = 0;
  k.parallel.num_microbatches  = 0;
  g_autofree char *key         = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)&k, sizeof k);
  g_mutex_lock(&cache->lock);
  gpointer found = NULL;
  bool hit       = g_hash_table_lookup_extended(cache->terms, key, NULL, &found);
  g_mutex_unlock(&cache->lock);
  if (!hit) {
    PnBoundTerms *t = g_new0(PnBoundTerms, 1);
    if (!pn_sched_bound_terms(c, plan, t, NULL))
      g_clear_pointer(&t, terms_free);
    g_mutex_lock(&cache->lock);
    if (g_hash_table_lookup_extended(cache->terms, key, NULL, &found)) /* another thread's, the same */
      terms_free(t);
    else
      g_hash_table_insert(cache->terms, g_steal_pointer(&key), found = t);
    g_mutex_unlock(&cache->lock);
  }
  /* a split the build refuses fails its simulation: no bound, it is simulated */
  return found == NULL ? 0.0 : pn_sched_bound_at(found, c->parallel.num_microbatches);
}

/* pn_sweep_classify, and when `cache` is not NULL an accepted layout's bound on its iteration in
 * *bound_ns (0: none). */
static PnSweepVerdict classify(const PnSweepSpec *spec, uint64_t index, PnRule *rule, char *why, gsize why_size,
                               double *over_gib, BoundCache *cache, double *bound_ns)
{
  PnScenario c;
  pn_sweep_candidate(spec, index, &c);
  unsigned notes = 0;
  PnRuleViolation v;
  *rule = pn_workload_check(&c, &v, &notes);
  if (*rule != PN_RULE_OK) {
    g_snprintf(why, why_size, "%s: %s", v.path, v.message);
    return PN_SWEEP_REJECTED;
  }
  if (duplicate_sp(spec, notes)) {
    g_strlcpy(why, "sequence_parallel true at tensor_model_parallel_size 1 (runs as false: a duplicate)", why_size);
    return PN_SWEEP_REJECTED;
  }
  PnPlan plan;
  g_autoptr(GError) error = NULL;
  if (!pn_overlap_resolve(&c, &plan, NULL, &error)) {
    g_snprintf(why, why_size, "overlap gating: %s", error->message);
    return PN_SWEEP_REJECTED;
  }
  PnWorkloadMemory m;
  pn_workload_memory(&c, plan.tp_comm_overlap, &m);
  if (m.total_bytes > c.hw->hbm_bytes) {
    *over_gib = (m.total_bytes - c.hw->hbm_bytes) / GIB;
    g_snprintf(why, why_size, "estimated memory %.1f GiB exceeds the %.1f GiB of the GPU", m.total_bytes / GIB,
               c.hw->hbm_bytes / GIB);
    return PN_SWEEP_OVER_MEMORY;
  }
  if (cache != NULL)
    *bound_ns = cached_bound(cache, &c, &plan);
  return PN_SWEEP_ACCEPTED;
}

PnSweepVerdict pn_sweep_classify(const PnSweepSpec *spec, uint64_t index, PnRule *rule, char *why, gsize why_size,
                                 double *over_gib)
{
  return classify(spec, index, rule, why, why_size, over_gib, NULL, NULL);
}

static void check_one(const PnSweepSpec *spec, BoundCache *cache, CheckChunk *ch, uint64_t index)
{
  PnRule rule;
  char why[512];
  double over = 0.0, bound = 0.0;
  switch (classify(spec, index, &rule, why, sizeof why, &over, spec->prune_within > 0.0 ? cache : NULL, &bound)) {
  case PN_SWEEP_ACCEPTED:
    g_array_append_val(ch->accepted, index);
    if (spec->prune_within > 0.0)
      g_array_append_val(ch->bounds, bound);
    break;
  case PN_SWEEP_REJECTED:
    if (rule != PN_RULE_OK)
      ch->by_rule[rule]++;
    else
      count_other(ch, why);
    break;
  case PN_SWEEP_OVER_MEMORY:
    if (ch->over_memory == 0 || over < ch->least_over_gib)
      ch->least_over_gib = over;
    ch->over_memory++;
    break;
  }
}

typedef struct {
  const PnSweepSpec *spec;
  CheckChunk *chunks;
  guint n_chunks;
  gint next;
  PnSweepProgress *progress;
  BoundCache bounds;
} CheckJob;

static void check_worker(gpointer data, gpointer user)
{
  (void)data;
  CheckJob *job = user;
  for (;;) {
    gint k = g_atomic_int_add(&job->next, 1);
    if (k >= (gint)job->n_chunks)
      return;
    CheckChunk *ch = &job->chunks[k];
    for (uint64_t i = ch->first; i < ch->end; i++) {
      if (job->spec->cancel != NULL && g_atomic_int_get(job->spec->cancel))
        return;
      check_one(job->spec, &job->bounds, ch, i);
    }
    if (job->progress != NULL)
      g_atomic_int_add(&job->progress->done, (gint)(ch->end - ch->first));
  }
}

static void run_workers(int threads, GFunc fn, gpointer job)
{
  GThreadPool *pool = g_thread_pool_new(fn, job, threads, TRUE, NULL);
  for (int t = 0; t < threads; t++)
    g_thread_pool_push(pool, GINT_TO_POINTER(t + 1), NULL);
  g_thread_pool_free(pool, FALSE, TRUE);
}

static gint reason_order(gconstpointer a, gconstpointer b)
{
  const PnSweepReason *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return strcmp(x->reason, y->reason);
}

/* Chunks in index order: their accepted lists concatenate into an ascending list, and their
 * counts add up the same whichever thread took which chunk. */
static void merge_chunks(const CheckJob *job, PnSweepResult *r)
{
  uint64_t by_rule[PN_RULE_N] = {0};
  g_autoptr(GHashTable) other = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < job->n_chunks; k++) {
    CheckChunk *ch = &job->chunks[k];
    g_array_append_vals(r->accepted_index, ch->accepted->data, ch->accepted->len);
    g_array_append_vals(r->accepted_bound, ch->bounds->data, ch->bounds->len);
    for (int i = 0; i < PN_RULE_N; i++)
      by_rule[i] += ch->by_rule[i];
    if (ch->over_memory > 0 && (r->over_memory == 0 || ch->least_over_gib < r->over_memory_least_gib))
      r->over_memory_least_gib = ch->least_over_gib;
    r->over_memory += ch->over_memory;
    if (ch->other != NULL) {
      GHashTableIter it;
      gpointer key, value;
      g_hash_table_iter_init(&it, ch->other);
      while (g_hash_table_iter_next(&it, &key, &value)) {
        gpointer old = g_hash_table_lookup(other, key);
        g_hash_table_replace(other, g_strdup(key), GSIZE_TO_POINTER(GPOINTER_TO_SIZE(old) + GPOINTER_TO_SIZE(value)));
      }
      g_hash_table_destroy(ch->other);
    }
    g_array_free(ch->accepted, TRUE);
    g_array_free(ch->bounds, TRUE);
  }
  for (int i = 1; i < PN_RULE_N; i++)
    if (by_rule[i] > 0) {
      PnSweepReason rs = {.reason = g_strdup(pn_rule_summary((PnRule)i)), .count = by_rule[i]};
      g_array_append_val(r->reasons, rs);
      r->rejected += by_rule[i];
    }
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, other);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    PnSweepReason rs = {.reason = g_strdup(key), .count = GPOINTER_TO_SIZE(value)};
    g_array_append_val(r->reasons, rs);
    r->rejected += rs.count;
  }
  g_array_sort(r->reasons, reason_order);
  r->accepted = r->accepted_index->len;
}

void pn_sweep_check(const PnSweepSpec *spec, PnSweepResult *r, PnSweepProgress *progress)
{
  r->candidates = pn_sweep_size(spec);
  /* at most ~4,096 chunks whatever the size of the space: memory stays O(accepted) */
  uint64_t chunk = MAX(UINT64_C(1024), r->candidates / 4096 + 1);
  CheckJob job   = {.spec = spec, .progress = progress};
  job.n_chunks   = (guint)((r->candidates + chunk - 1) / chunk);
  job.chunks     = g_new0(CheckChunk, job.n_chunks);
  for (guint k = 0; k < job.n_chunks; k++) {
    job.chunks[k].first    = k * chunk;
    job.chunks[k].end      = MIN(r->candidates, (k + 1) * chunk);
    job.chunks[k].accepted = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    job.chunks[k].bounds   = g_array_new(FALSE, FALSE, sizeof(double));
  }
  if (progress != NULL) {
    progress->total = (gint64)r->candidates;
    g_atomic_int_set(&progress->done, 0);
  }
  g_mutex_init(&job.bounds.lock);
  job.bounds.terms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, terms_free);
  run_workers(spec->threads, check_worker, &job);
  g_hash_table_destroy(job.bounds.terms);
  g_mutex_clear(&job.bounds.lock);
  merge_chunks(&job, r);
  g_free(job.chunks);
  if (spec->cancel != NULL && g_atomic_int_get(spec->cancel))
    r->interrupted = true;
}

/* ---- pass 2: simulate ---- */

static void row_from(PnSweepRow *row, const PnResult *res)
{
  row->iteration_s          = res->iteration_time_s;
  row->tflops_per_gpu       = res->model_tflops_per_gpu;
  row->tokens_per_s_per_gpu = res->tokens_per_s_per_gpu;
  row->mfu                  = res->mfu;
  row->memory_gib           = res->memory.total_gib;
  row->headroom_gib         = res->memory.hbm_gib - res->memory.total_gib;
  for (int k = 0; k < PN_CLASS_N; k++)
    row->exposed_s[k] = res->exposed_comm_s[k];
  row->bubble_s           = res->bubble_s;
  row->compute_s          = res->compute_s;
  row->data_parallel_size = res->data_parallel_size;
  row->num_microbatches   = res->num_microbatches;
}

/* Runs already simulated in this pass, by the SHA-256 of the scenario's bytes (every candidate is
 * a copy of the same base, padding included, so equal bytes are the same simulation). A plan's
 * global batches at one GPU count share the fast-forward's two runs: they depend on the batch only
 * through m1's congruence. */
typedef struct {
  GMutex lock;
  GHashTable *rows; /* digest -> PnSweepRow* (error owned) */
} Memo;

static void memo_row_free(gpointer p)
{
  PnSweepRow *row = p;
  g_free(row->error);
  g_free(row);
}

/* `c` simulated as it is, into `row` (figures, or `failed` with its error): from the memo when
 * the same scenario ran before. */
static void run_memo(Memo *memo, const PnScenario *c, PnSweepRow *row)
{
  g_autofree char *key = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)c, sizeof *c);
  g_mutex_lock(&memo->lock);
  const PnSweepRow *hit = g_hash_table_lookup(memo->rows, key);
  if (hit != NULL) {
    *row       = *hit;
    row->error = g_strdup(hit->error);
  }
  g_mutex_unlock(&memo->lock);
  if (hit != NULL)
    return;
  *row                    = (PnSweepRow){0};
  g_autoptr(GError) error = NULL;
  g_autoptr(PnResult) res = pn_sim_run(c, NULL, &error);
  if (res == NULL) {
    row->failed = true;
    row->error  = g_strdup(error->message);
  } else
    row_from(row, res);
  PnSweepRow *keep = g_memdup2(row, sizeof *row);
  keep->error      = g_strdup(row->error);
  g_mutex_lock(&memo->lock);
  g_hash_table_replace(memo->rows, g_steal_pointer(&key), keep);
  g_mutex_unlock(&memo->lock);
}

/* The same layout with m micro-batches per iteration (the global batch scaled to match). */
static void run_with_microbatches(Memo *memo, const PnScenario *c, int64_t m, PnSweepRow *row)
{
  PnScenario v                 = *c;
  v.training.global_batch_size = m * c->training.micro_batch_size * c->parallel.data_parallel_size;
  pn_workload_check(&v, NULL, NULL);
  run_memo(memo, &v, row);
}

/* Fast-forward of the pipeline's steady state. Costs are deterministic, so once the schedule is
 * in its steady state, `period` more micro-batches (1 for 1F1B, the micro-batch group of the
 * interleaved schedule) add the same tasks shifted in time: every additive figure of the
 * iteration (time, exposed communication, bubble, compute) grows by the same amount. Two runs
 * at m1 and m1 + period micro-batches (past the warm-up, congruent to m) give the iteration at m.
 * 1F1B settles at once: m1 = pp (2 without a pipeline: the first and last micro-batches carry the
 * parameter gather and the gradient reduction) matches the full simulation to the microsecond
 * (the CSV's precision) on the 622 non-interleaved Llama 3 70B layouts of 64 and 128 GPUs. The
 * interleaved schedule settles
 * slowly: at m1 = 3 x pp the iteration time is off by at most 0.07% on the 380 interleaved
 * layouts of 64 GPUs (PP 4 VPP 2 the worst; 2 x pp gives 0.32%, 4 x pp 0.03%). tests/cli/sweep.sh
 * holds every layout of its spaces to 0.1% of the full simulation (--exact). Throughputs scale
 * with the batch: FLOPs and tokens grow as m, time as extended. */
/* False when there are too few micro-batches for it to pay (then the caller runs the layout as it
 * is); otherwise `row` holds the extension, or `failed` with the error of a run. */
static bool fast_forward(Memo *memo, const PnScenario *c, PnSweepRow *row)
{
  const PnParallelConfig *p = &c->parallel;
  int64_t m = p->num_microbatches, pp = p->pipeline_model_parallel_size;
  int64_t period = 1, warm = MAX(pp, 2);
  if (p->virtual_pipeline_model_parallel_size > 1) {
    period = p->microbatch_group_size_per_vp_stage ? p->microbatch_group_size_per_vp_stage : pp;
    warm   = MAX(3 * pp, 2 * period);
  }
  int64_t m1 = warm + (((m - warm) % period) + period) % period;
  if (m < m1 + 3 * period) /* too few micro-batches for it to pay */
    return false;
  PnSweepRow r1, r2;
  run_with_microbatches(memo, c, m1, &r1);
  if (r1.failed) {
    *row = r1;
    return true;
  }
  run_with_microbatches(memo, c, m1 + period, &r2);
  if (r2.failed) {
    *row = r2;
    return true;
  }
  double k         = (double)(m - m1) / (double)period;
  *row             = r2;
  row->iteration_s = r1.iteration_s + k * (r2.iteration_s - r1.iteration_s);
  for (int i = 0; i < PN_CLASS_N; i++)
    row->exposed_s[i] = r1.exposed_s[i] + k * (r2.exposed_s[i] - r1.exposed_s[i]);
  row->bubble_s  = r1.bubble_s + k * (r2.bubble_s - r1.bubble_s);
  row->compute_s = r1.compute_s + k * (r2.compute_s - r1.compute_s);
  double scale   = ((double)m / (double)(m1 + period)) * (r2.iteration_s / row->iteration_s);
  row->tflops_per_gpu *= scale;
  row->tokens_per_s_per_gpu *= scale;
  row->mfu *= scale;
  row->num_microbatches = m;
  return true;
}

static void simulate_one(const PnSweepSpec *spec, Memo *memo, uint64_t index, PnSweepRow *row)
{
  PnScenario c;
  pn_sweep_candidate(spec, index, &c);
  pn_workload_check(&c, NULL, NULL); /* derives dp and the micro-batches, as in pass 1 */
  if (spec->exact || !fast_forward(memo, &c, row))
    run_memo(memo, &c, row);
  row->index = index;
}

/* Pass 2's pruning (sweep.h, Pruning): per layout to simulate, its bound and group; per group, the
 * best time so far. */
typedef struct {
  double margin;   /* (1 + prune_within) x (1 + PN_SWEEP_PRUNE_SLACK) */
  double *bound_s; /* per todo entry */
  guint *group;    /* per todo entry */
  double *best_s;  /* per group: the best iteration so far (INFINITY) */
  guint n_groups;
  GMutex lock;
} Prune;

typedef struct {
  const PnSweepSpec *spec;
  const GArray *todo; /* of uint64_t: candidate indices */
  PnSweepRow *rows;
  gboolean *done;
  gint next;
  PnSweepProgress *progress;
  Memo memo;
  Prune *prune; /* NULL: simulate every layout */
} SimJob;

/* Whether todo entry k's bound rules it out against its group's best so far. */
static bool prune_skips(Prune *p, gint k)
{
  g_mutex_lock(&p->lock);
  double best = p->best_s[p->group[k]];
  g_mutex_unlock(&p->lock);
  return p->bound_s[k] > best * p->margin;
}

static void prune_record(Prune *p, gint k, const PnSweepRow *row)
{
  if (row->failed)
    return;
  g_mutex_lock(&p->lock);
  double *best = &p->best_s[p->group[k]];
  *best        = MIN(*best, row->iteration_s);
  g_mutex_unlock(&p->lock);
}

static void simulate_worker(gpointer data, gpointer user)
{
  (void)data;
  SimJob *job = user;
  for (;;) {
    gint k = g_atomic_int_add(&job->next, 1);
    if (k >= (gint)job->todo->len || (job->spec->cancel != NULL && g_atomic_int_get(job->spec->cancel)))
      return;
    if (job->prune == NULL || !prune_skips(job->prune, k)) {
      simulate_one(job->spec, &job->memo, g_array_index(job->todo, uint64_t, k), &job->rows[k]);
      job->done[k] = TRUE;
      if (job->prune != NULL)
        prune_record(job->prune, k, &job->rows[k]);
    }
    if (job->progress != NULL)
      g_atomic_int_inc(&job->progress->done);
  }
}

typedef struct {
  uint64_t index;
  double bound_ns;
} Bounded;

static gint index_order(gconstpointer a, gconstpointer b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static gint bounded_order(gconstpointer a, gconstpointer b)
{
  const Bounded *x = a, *y = b;
  if (x->bound_ns != y->bound_ns)
    return x->bound_ns < y->bound_ns ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The accepted layouts in ascending bound order into `todo`, and `p` set up for them. */
static void prune_setup(const PnSweepSpec *spec, const PnSweepResult *r, GArray *todo, Prune *p)
{
  g_autoptr(GArray) all = g_array_sized_new(FALSE, FALSE, sizeof(Bounded), r->accepted_index->len);
  for (guint k = 0; k < r->accepted_index->len; k++) {
    Bounded e = {g_array_index(r->accepted_index, uint64_t, k), g_array_index(r->accepted_bound, double, k)};
    g_array_append_val(all, e);
  }
  g_array_sort(all, bounded_order);
  p->margin                    = (1.0 + spec->prune_within) * (1.0 + PN_SWEEP_PRUNE_SLACK);
  p->bound_s                   = g_new(double, MAX(all->len, 1));
  p->group                     = g_new(guint, MAX(all->len, 1));
  g_autoptr(GHashTable) groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < all->len; k++) {
    const Bounded *e = &g_array_index(all, Bounded, k);
    g_array_append_val(todo, e->index);
    PnScenario c;
    pn_sweep_candidate(spec, e->index, &c);
    g_autofree char *key =
        g_strdup_printf("%" G_GINT64_FORMAT " %" G_GINT64_FORMAT, c.hardware.num_gpus, c.training.global_batch_size);
    gpointer id;
    if (!g_hash_table_lookup_extended(groups, key, NULL, &id)) {
      id = GUINT_TO_POINTER(g_hash_table_size(groups));
      g_hash_table_insert(groups, g_steal_pointer(&key), id);
    }
    p->group[k]   = GPOINTER_TO_UINT(id);
    p->bound_s[k] = e->bound_ns * 1e-9;
  }
  p->n_groups = g_hash_table_size(groups);
  p->best_s   = g_new(double, MAX(p->n_groups, 1));
  for (guint g = 0; g < p->n_groups; g++)
    p->best_s[g] = INFINITY;
  g_mutex_init(&p->lock);
}

/* The rows every schedule of the threads simulates (sweep.h, Pruning), against each group's final
 * best; the others are dropped, and the counts are of the layouts the bound rules out or not. */
static void prune_finish(const PnSweepSpec *spec, Prune *p, SimJob *job, PnSweepResult *r)
{
  g_autofree bool *ran = g_new0(bool, MAX(p->n_groups, 1));
  for (guint k = 0; k < job->todo->len; k++)
    ran[p->group[k]] = ran[p->group[k]] || (job->done[k] && !job->rows[k].failed);
  for (guint k = 0; k < job->todo->len; k++) {
    double best = p->best_s[p->group[k]];
    if (p->bound_s[k] > best * p->margin) {
      r->pruned++;
      g_array_append_val(r->pruned_index, g_array_index(job->todo, uint64_t, k));
      if (job->done[k])
        row_clear(&job->rows[k]);
      continue;
    }
    if (!job->done[k])
      continue; /* interrupted */
    r->simulated++;
    const PnSweepRow *row = &job->rows[k];
    if (row->failed ? !ran[p->group[k]] : row->iteration_s <= best * (1.0 + spec->prune_within))
      g_array_append_val(r->rows, *row);
    else
      row_clear(&job->rows[k]);
  }
  g_array_sort(r->pruned_index, index_order);
  g_free(p->bound_s), g_free(p->group), g_free(p->best_s);
  g_mutex_clear(&p->lock);
}

void pn_sweep_simulate(const PnSweepSpec *spec, PnSweepResult *r, PnSweepProgress *progress)
{
  g_return_if_fail(spec->prune_within == 0.0 || spec->parts == 1);
  g_autoptr(GArray) todo = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  Prune prune;
  SimJob job = {.spec = spec, .todo = todo, .progress = progress, .prune = spec->prune_within > 0.0 ? &prune : NULL};
  if (job.prune != NULL)
    prune_setup(spec, r, todo, &prune);
  else
    for (guint k = 0; k < r->accepted_index->len; k++)
      if ((int)(k % (guint)spec->parts) == spec->part)
        g_array_append_val(todo, g_array_index(r->accepted_index, uint64_t, k));
  job.rows = g_new0(PnSweepRow, MAX(todo->len, 1));
  job.done = g_new0(gboolean, MAX(todo->len, 1));
  g_mutex_init(&job.memo.lock);
  job.memo.rows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, memo_row_free);
  if (progress != NULL) {
    progress->total = todo->len;
    g_atomic_int_set(&progress->done, 0);
  }
  run_workers(spec->threads, simulate_worker, &job);
  if (job.prune != NULL)
    prune_finish(spec, &prune, &job, r);
  else
    for (guint k = 0; k < todo->len; k++)
      if (job.done[k]) {
        g_array_append_val(r->rows, job.rows[k]);
        r->simulated++;
      }
  if (r->simulated + r->pruned < todo->len)
    r->interrupted = true;
  g_free(job.rows);
  g_free(job.done);
  g_hash_table_destroy(job.memo.rows);
  g_mutex_clear(&job.memo.lock);
  pn_sweep_rank(r);
}

static gint row_order(gconstpointer a, gconstpointer b)
{
  const PnSweepRow *x = a, *y = b;
  if (x->failed != y->failed)
    return x->failed ? 1 : -1;
  if (!x->failed && x->tflops_per_gpu != y->tflops_per_gpu)
    return x->tflops_per_gpu > y->tflops_per_gpu ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index ? 1 : 0;
}

void pn_sweep_rank(PnSweepResult *r) { g_array_sort(r->rows, row_order); }
