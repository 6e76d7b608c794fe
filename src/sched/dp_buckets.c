/* dp_buckets.c — data-parallel gradient reduction and parameter all-gather, bucket by bucket, as
 * Megatron-Core's DistributedDataParallel does (distributed_data_parallel.py,
 * param_and_grad_buffer.py). A model chunk is a list of units (embedding, layers, head) grouped
 * into buckets in backprop order. With overlap_grad_reduce a bucket's reduce-scatter (all-reduce
 * without the distributed optimizer) is launched on the DP stream when the backward is done with
 * it and waited for in finish_grad_sync; with overlap_param_gather a bucket's all-gather is
 * launched ahead of the forward that needs it (forward pre-hooks, or a chunk at a time with
 * align_param_gather); without them both run on the compute stream. Dense parameters reduce over
 * dp x cp, expert parameters over the expert data-parallel group. */
#include "sched/sched-private.h"

/* The chunk's units in forward order, with DP buckets formed as Megatron does: walking the
 * parameters in backprop order, a bucket closes once it holds bucket_size elements; only PP
 * rank 0's chunk 0 is split into several buckets (training.py / distributed_data_parallel.py). */
void pn__units_build(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  GArray *u    = pn__units_of(b, rank, chunk);
  int64_t vs   = pn__vstage_of(b, rank, chunk);
  int64_t last = b->pp * b->vpp - 1;
  if (vs == 0) {
    PnUnit e = {PN_UNIT_EMB, -1, pn_workload_embedding_params(b->sc), 0.0, 0};
    g_array_append_val(u, e);
  }
  int64_t first = g_array_index(b->vs_first_layer, int64_t, vs);
  for (int64_t l = 0; l < g_array_index(b->vs_layers, int64_t, vs); l++) {
    double experts = pn_workload_layer_expert_params(b->sc);
    PnUnit e       = {PN_UNIT_LAYER, first + l, pn_workload_layer_params(b->sc) - experts, experts, 0};
    g_array_append_val(u, e);
  }
  if (vs == last) {
    PnUnit e = {PN_UNIT_HEAD, -1, pn_workload_head_params(b->sc), 0.0, 0};
    g_array_append_val(u, e);
  }
  bool multi     = b->plan->bucket_size > 0 && rank == 0 && chunk == 0;
  int16_t bucket = 0;
  double fill    = 0.0;
  for (gint i = (gint)u->len - 1; i >= 0; i--) {
    PnUnit *e = &g_array_index(u, PnUnit, i);
    e->bucket = bucket;
    fill += e->params + e->expert_params;
    if (multi && fill >= (double)b->plan->bucket_size && i > 0) {
      bucket++;
      fill = 0.0;
    }
  }
}

int pn__n_buckets(GArray *units) { return units->len ? g_array_index(units, PnUnit, 0).bucket + 1 : 0; }

/* Parameters of one bucket (bucket < 0: the whole chunk), dense and expert. */
double pn__bucket_params(GArray *units, int bucket, double *expert)
{
  double p = 0.0, e = 0.0;
  for (guint i = 0; i < units->len; i++) {
    const PnUnit *u = &g_array_index(units, PnUnit, i);
    if (bucket < 0 || u->bucket == bucket) {
      p += u->params;
      e += u->expert_params;
    }
  }
  *expert = e;
  return p;
}

static bool dense_dp_active(const PnBuilder *b) { return b->dp * b->cp > 1; }
static bool dp_active(const PnBuilder *b) { return dense_dp_active(b) || pn_workload_expert_dp(b->sc) > 1; }

/* A DP collective over an explicit span (ranks, ranks per node), on the DP stream when `side`. */
static PnTaskId emit_dp_span(PnBuilder *b, uint32_t rank, PnCollKind kind, double bytes, int64_t ranks,
                             int64_t per_node, const char *label, int16_t chunk, bool side)
{
  PnTask t;
  pn__task_init(&t, PN_TASK_COMM, side ? PN_STREAM_DP_COMM : PN_STREAM_COMPUTE, label, PN_PHASE_OPTIM);
  pn__span_task(b, kind, bytes, ranks, per_node, PN_CLASS_DP, &t);
  t.chunk = chunk;
  return side ? pn__add_side_task(b, rank, &t) : pn__add_task(b, rank, &t, NULL, 0);
}

/* The data-parallel span of the distributed optimizer: with num_distributed_optimizer_instances
 * I > 1 the dp x cp group is split into I instances of consecutive DP ranks; gradients are
 * reduce-scattered inside an instance and the shard all-reduced across instances, parameters
 * gathered inside an instance (distributed_data_parallel.py, param_and_grad_buffer.py). */
static int64_t dp_instances(const PnBuilder *b)
{
  int64_t i = b->sc->ddp.num_distributed_optimizer_instances;
  return (b->plan->use_distributed_optimizer && i > 1) ? i : 1;
}

static void dp_intra_span(const PnBuilder *b, int64_t *ranks, int64_t *per_node)
{
  *ranks    = b->dp * b->cp / dp_instances(b);
  *per_node = pn_sched_ranks_per_node(b->sc, b->tp, *ranks);
}

static PnTaskId emit_dp_collective(PnBuilder *b, uint32_t rank, PnCollKind kind, double bytes, const char *label,
                                   int16_t chunk, bool side)
{
  int64_t ranks, per_node;
  dp_intra_span(b, &ranks, &per_node);
  PnTaskId id  = emit_dp_span(b, rank, kind, bytes, ranks, per_node, label, chunk, side);
  int64_t inst = dp_instances(b);
  if (kind == PN_COLL_REDUCE_SCATTER && inst > 1) {
    /* the local shard, all-reduced across instances: ranks one instance apart never share a node
     * unless the whole data-parallel group fits in one */
    int64_t stride   = b->tp * ranks;
    int64_t inter_pn = pn_sched_ranks_per_node(b->sc, stride, inst);
    id = emit_dp_span(b, rank, PN_COLL_ALL_REDUCE, bytes / (double)ranks, inst, inter_pn, "dp_grad_inter_instance_ar",
                      chunk, side);
  }
  return id;
}

/* A DP collective of a bucket: the dense parameters over dp x cp, then the experts' over the
 * expert data-parallel group (Megatron keeps them in separate buffers; expert ranks are laid
 * out etp x ep x edp, so edp ranks are etp*ep apart). Returns the last task (both run on the
 * same stream), or PN_TASK_NONE when neither group has more than one rank. */
static PnTaskId emit_dp_pair(PnBuilder *b, uint32_t rank, PnCollKind kind, double dense_bytes, double expert_bytes,
                             const char *label, int16_t chunk, bool side)
{
  PnTaskId id = PN_TASK_NONE;
  if (dense_dp_active(b))
    id = emit_dp_collective(b, rank, kind, dense_bytes, label, chunk, side);
  int64_t edp = pn_workload_expert_dp(b->sc);
  if (edp > 1 && expert_bytes > 0.0) {
    int64_t stride = b->sc->parallel.expert_tensor_parallel_size * b->sc->parallel.expert_model_parallel_size;
    id =
        emit_dp_span(b, rank, kind, expert_bytes, edp, pn_sched_ranks_per_node(b->sc, stride, edp), label, chunk, side);
  }
  return id;
}

static PnCollKind grad_coll(const PnBuilder *b)
{
  return b->plan->use_distributed_optimizer ? PN_COLL_REDUCE_SCATTER : PN_COLL_ALL_REDUCE;
}

static const char *grad_label(const PnBuilder *b)
{
  return b->plan->use_distributed_optimizer ? "dp_grad_reduce_scatter" : "dp_grad_all_reduce";
}

bool pn__grad_overlap_now(const PnBuilder *b)
{
  return b->plan->overlap_grad_reduce && !b->first_iteration && dp_active(b);
}
bool pn__param_overlap_now(const PnBuilder *b)
{
  return b->plan->overlap_param_gather && !b->first_iteration && dp_active(b) && b->plan->use_distributed_optimizer;
}

/* Param all-gather of one bucket on the DP stream, launched now (overlap_param_gather). */
static PnTaskId emit_param_ag(PnBuilder *b, uint32_t rank, int64_t chunk, int bucket)
{
  GArray *units = pn__units_of(b, rank, chunk);
  double experts, dense = pn__bucket_params(units, bucket, &experts);
  double e = b->plan->param_bytes_per_elem;
  return emit_dp_pair(b, rank, PN_COLL_ALL_GATHER, dense * e, experts * e, "dp_param_all_gather", (int16_t)chunk, true);
}

static GArray *chunk_ag_of(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  return g_ptr_array_index(b->chunk_ag, rank * b->vpp + chunk);
}

/* Aligned param gather (VPP): all buckets of a chunk at once. */
static void dispatch_chunk_ag(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  if (chunk >= b->vpp)
    return;
  GArray *ags = chunk_ag_of(b, rank, chunk);
  if (ags->len)
    return;
  GArray *units = pn__units_of(b, rank, chunk);
  for (int k = pn__n_buckets(units) - 1; k >= 0; k--) {
    PnTaskId id = emit_param_ag(b, rank, chunk, k);
    g_array_append_val(ags, id);
  }
}

/* The parameter all-gather of a whole chunk, waited for before the chunk's first forward: every
 * bucket of it and, with align_param_gather, of the next chunk (chunks 0 and 1 at schedule start;
 * chunk k+1 when chunk k's first forward starts). */
void pn__emit_param_gather_chunk(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  dispatch_chunk_ag(b, rank, chunk);
  if (b->plan->align_param_gather)
    dispatch_chunk_ag(b, rank, chunk + 1);
  GArray *ags = chunk_ag_of(b, rank, chunk);
  for (guint i = 0; i < ags->len; i++)
    pn__push_pending(b, rank, g_array_index(ags, PnTaskId, i));
}

/* A chunk's first all-gather, `bucket`, unless one was dispatched already; returns the chunk's
 * dispatched all-gathers. */
static GArray *dispatch_first_bucket(PnBuilder *b, uint32_t rank, int64_t chunk, int bucket)
{
  GArray *ags = chunk_ag_of(b, rank, chunk);
  if (ags->len == 0) {
    PnTaskId id = emit_param_ag(b, rank, chunk, bucket);
    g_array_append_val(ags, id);
  }
  return ags;
}

/* The first all-gather of an iteration, launched by optimizer.zero_grad() before the schedule
 * runs (distrib_optimizer.py step_with_ready_grads: "the first all-gather is launched
 * asynchronously in the next optimizer.zero_grad() call and subsequent all-gathers are launched in
 * the forward pre-hook"): chunk 0's first bucket, or with align_param_gather its whole first
 * chunk(s). Launched before the first pipeline receive, it runs while the stage waits for its
 * input, and no host synchronization of a P2P call holds it back. */
void pn__emit_param_gather_start(PnBuilder *b, uint32_t rank)
{
  if (!pn__param_overlap_now(b))
    return;
  if (b->plan->align_param_gather) {
    dispatch_chunk_ag(b, rank, 0);
    dispatch_chunk_ag(b, rank, 1);
    return;
  }
  GArray *units = pn__units_of(b, rank, 0);
  if (units->len > 0)
    dispatch_first_bucket(b, rank, 0, g_array_index(units, PnUnit, 0).bucket);
}

/* The forward pre-hook of a bucket: the first bucket is dispatched and waited at once, each wait
 * then dispatches the next bucket (one ahead). Buckets run backwards in forward order. */
void pn__emit_param_gather_bucket(PnBuilder *b, uint32_t rank, int64_t chunk, int bucket)
{
  GArray *ags = dispatch_first_bucket(b, rank, chunk, bucket);
  pn__push_pending(b, rank, g_array_index(ags, PnTaskId, ags->len - 1));
  if (bucket > 0) {
    PnTaskId id = emit_param_ag(b, rank, chunk, bucket - 1);
    g_array_append_val(ags, id);
  }
}

/* One bucket's gradient reduction on the DP stream, launched now (overlap_grad_reduce); the
 * compute stream waits for it in finish_grad_sync (pn__emit_grad_sync). */
void pn__emit_grad_bucket(PnBuilder *b, uint32_t rank, int16_t chunk, int bucket)
{
  GArray *waits = g_ptr_array_index(b->dp_wait, rank);
  double experts, dense = pn__bucket_params(pn__units_of(b, rank, chunk), bucket, &experts);
  double g    = b->plan->grad_bytes_per_elem;
  PnTaskId id = emit_dp_pair(b, rank, grad_coll(b), dense * g, experts * g, grad_label(b), chunk, true);
  if (id != PN_TASK_NONE)
    g_array_append_val(waits, id);
}

/* finalize_model_grads: without overlap (or in the first iteration) one synchronous
 * reduce-scatter (distributed optimizer) or all-reduce per model chunk on the compute stream;
 * with overlap, the compute stream waits for the buckets launched during the backward. */
void pn__emit_grad_sync(PnBuilder *b, uint32_t rank)
{
  if (!dp_active(b))
    return;
  GArray *waits = g_ptr_array_index(b->dp_wait, rank);
  if (pn__grad_overlap_now(b)) {
    for (guint i = 0; i < waits->len; i++)
      pn__push_pending(b, rank, g_array_index(waits, PnTaskId, i));
    g_array_set_size(waits, 0);
    return;
  }
  for (int64_t c = b->vpp - 1; c >= 0; c--) {
    double experts, dense = pn__bucket_params(pn__units_of(b, rank, c), -1, &experts);
    double g = b->plan->grad_bytes_per_elem;
    emit_dp_pair(b, rank, grad_coll(b), dense * g, experts * g, grad_label(b), (int16_t)c, false);
  }
}

/* Without overlap_param_gather the updated parameters are gathered right after the step;
 * with it, in the next iteration's forward (and in the first iteration not at all). */
void pn__emit_param_gather_after_step(PnBuilder *b, uint32_t rank)
{
  if (b->plan->use_distributed_optimizer && dp_active(b) && !b->plan->overlap_param_gather)
    for (int64_t c = 0; c < b->vpp; c++) {
      double experts_c, dense = pn__bucket_params(pn__units_of(b, rank, c), -1, &experts_c);
      double e = b->plan->param_bytes_per_elem;
      emit_dp_pair(b, rank, PN_COLL_ALL_GATHER, dense * e, experts_c * e, "dp_param_all_gather", (int16_t)c, false);
    }
}
