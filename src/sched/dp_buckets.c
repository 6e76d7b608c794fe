/* dp_buckets.c — data-parallel gradient reduction and parameter all-gather, bucket by bucket, as
 * Megatron-Core's DistributedDataParallel does (distributed_data_parallel.py,
 * param_and_grad_buffer.py). A model chunk's parameters are laid out in buffers and cut into
 * buckets in backprop order, the buckets grouped into bucket groups (below). With
 * overlap_grad_reduce a group's reduce-scatter (all-reduce without the distributed optimizer) is
 * launched on the DP stream when the backward has produced all its gradients and waited for in
 * finish_grad_sync; with overlap_param_gather a group's all-gather is launched ahead of the
 * forward that needs it (forward pre-hooks, or a chunk at a time with align_param_gather);
 * without them both run on the compute stream. Dense parameters reduce over dp x cp, expert
 * parameters in their own buffer over the expert data-parallel group. Megatron-FSDP
 * (plan->fsdp) forms one group per FSDP unit and acts per micro-batch (its section below).
 *
 * Buckets, as Megatron-LM forms them (d98e8a64dd):
 *   - size: the user's ddp.bucket_size, else Bridge's 128 Mi with the distributed optimizer and
 *     DP > 1, else max(40 M, 1 M x dp x cp) (training.py resolve_ddp_bucket_size); none (one
 *     bucket per buffer) without overlap_grad_reduce (the same, and DistributedDataParallel.
 *     __init__); resolved in overlap/dp.c into plan->bucket_size, 0 = none.
 *   - none either on every pipeline rank but the first and on every model chunk but the first,
 *     which are also `disable_bucketing` (all buckets of a buffer list in one group), as every
 *     chunk is with overlap_param_gather_with_optimizer_step (training.py get_model:
 *     per_chunk_disable_bucketing, per_chunk_bucket_sizes; distributed_data_parallel.py
 *     __init__ repeats the pp_rank > 0 rule).
 *   - buffers (param_and_grad_buffer.py group_params_for_buffers): one per (storage dtype, expert):
 *     TE linear weights are fp8 storage with fp8_param_gather (_param_uses_quantized_storage);
 *     expert parameters have a buffer of their own when ep > 1 or etp != tp (their
 *     allreduce = False, extensions/transformer_engine.py), else they share the dense one.
 *   - fill (distrib_optimizer.py DistributedOptimizer._compute_per_buffer_param_layout with the
 *     distributed optimizer, param_and_grad_buffer.py _compute_default_per_buffer_param_layout
 *     without): parameters in reverse registration order; with the distributed optimizer each
 *     starts at a multiple of 64 elements (param_layout.py pad_param_start); a bucket closes right
 *     after the parameter that brings it (padding included) to bucket_size elements, so a bucket
 *     can end inside a layer and every bucket but a buffer's last holds at least bucket_size;
 *     with the distributed optimizer a shared_embedding parameter (tied embedding with pp > 1)
 *     closes the bucket before it and gets one of its own (_does_param_require_new_bucket), and
 *     each bucket's end is padded to lcm(DP size, 128) (param_layout.py pad_bucket_end; the
 *     pad_buckets_for_high_nccl_busbw lcm with 2^16 has no scenario key). Collectives move the
 *     padded bucket.
 *   - groups (param_and_grad_buffer.py partition_buckets, dense and expert buffers apart): one
 *     bucket each; all buckets of the list in one with disable_bucketing; with an fp8 buffer, one
 *     per fp8 bucket, the non-fp8 buckets (norms, biases, embedding, output layer) joining the
 *     last, which is complete only when the first layers' gradients are.
 * Where a group acts, at module granularity (PnParamAt; the parameter lists of workload/ops.h
 * name each module's first forward op and last backward op):
 *   - backward (overlap_grad_reduce, the chunk's last backward): register_grad_ready counts a
 *     parameter when autograd hands over its gradient, at the end of its module's backward, and
 *     the group's collective starts once all are counted. Here a module's parameters are ready
 *     together after the op that ends its backward (its wgrad GEMM, or the norm backward that
 *     ends TE's LayerNormLinear), and the group is launched after that op of the last of its
 *     modules, in the unit holding its earliest-registered parameter: a bucket ending inside a
 *     layer is launched inside that layer's backward. Groups ready at the same op go back to
 *     back on the DP stream, as in Megatron.
 *   - forward (overlap_param_gather, the chunk's first forward): the forward pre-hook of a module
 *     calls finish_param_sync on its parameters' groups (_make_forward_pre_hook): a group never
 *     dispatched is dispatched and waited for at once, a wait dispatches the next group of its
 *     chain (one ahead, next_param_gather_bucket_group) unless align_param_gather dispatched
 *     them all. Here before the op the module's forward starts with; Megatron registers
 *     linear_proj before linear_qkv, so with small buckets the qkv groups are dispatched late, as
 *     Megatron's "mismatch between the order of parameter registration and forward pass
 *     execution" warning says. With fp8, a layer's weight casts are emitted before the layer
 *     and read every weight: the layer's groups are waited for before them.
 *   - the combined 1F1B of EP overlap acts at the same ops inside its node templates. */
#include "sched/sched-private.h"

/* The chunk's units in forward order. */
void pn__units_build(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  GArray *u    = pn__units_of(b, rank, chunk);
  int64_t vs   = pn__vstage_of(b, rank, chunk);
  int64_t last = b->pp * b->vpp - 1;
  if (vs == 0) {
    PnUnit e = {PN_UNIT_EMB, -1, pn_workload_embedding_params(b->sc), 0.0};
    g_array_append_val(u, e);
  }
  int64_t first = g_array_index(b->vs_first_layer, int64_t, vs);
  for (int64_t l = 0; l < g_array_index(b->vs_layers, int64_t, vs); l++) {
    bool dense            = b->mixed && !pn_workload_layer_is_moe(b->sc, first + l);
    const PnScenario *lsc = dense ? &b->dense_sc : b->sc;
    double experts        = pn_workload_layer_expert_params(lsc);
    PnUnit e = {dense ? PN_UNIT_DENSE : PN_UNIT_LAYER, first + l, pn_workload_layer_params(lsc) - experts, experts};
    g_array_append_val(u, e);
  }
  if (vs == last) {
    double experts = pn_workload_head_expert_params(b->sc);
    PnUnit e       = {PN_UNIT_HEAD, -1, pn_workload_head_params(b->sc) - experts, experts};
    g_array_append_val(u, e);
  }
}

double pn__chunk_params(GArray *units, double *expert)
{
  double p = 0.0, e = 0.0;
  for (guint i = 0; i < units->len; i++) {
    const PnUnit *u = &g_array_index(units, PnUnit, i);
    p += u->params;
    e += u->expert_params;
  }
  *expert = e;
  return p;
}

/* The first forward entry labelled `op` in `tpl`, or -1. */
static int32_t first_fwd(const GArray *tpl, const char *op)
{
  for (guint i = 0; tpl && i < tpl->len; i++) {
    const PnTask *t = &g_array_index(tpl, PnTplEntry, i).task;
    if (t->phase == PN_PHASE_FWD && strcmp(t->label, op) == 0)
      return (int32_t)i;
  }
  return -1;
}

/* The last backward entry labelled `op` in `tpl`, or -1. */
static int32_t last_bwd(const GArray *tpl, const char *op)
{
  int32_t found = -1;
  for (guint i = 0; tpl && i < tpl->len; i++) {
    const PnTask *t = &g_array_index(tpl, PnTplEntry, i).task;
    if (t->phase == PN_PHASE_BWD && strcmp(t->label, op) == 0)
      found = (int32_t)i;
  }
  return found;
}

const GArray *pn__bwd_part_tpl(const PnTemplates *t, PnBwdPart part)
{
  switch (part) {
  case PN_BWD_PART_COMBINE:
    return t->node_bwd[PN_NODE_COMBINE];
  case PN_BWD_PART_MLP:
    return t->node_bwd[PN_NODE_MLP];
  case PN_BWD_PART_MLP_DW:
    return t->mlp_dw;
  case PN_BWD_PART_DISPATCH:
    return t->node_bwd[PN_NODE_DISPATCH];
  case PN_BWD_PART_ATTN:
    return t->node_bwd[PN_NODE_ATTN];
  case PN_BWD_PART_ATTN_DW:
  case PN_BWD_PARTS:
    break;
  }
  return t->attn_dw;
}

/* A layer parameter's positions in the combined 1F1B: its op's first forward node entry (else the
 * attention node's first) and last backward one in issue order (else the attention node's
 * last, which every backward emits). */
static void combined_at(const PnTemplates *t, const PnParam *p, PnParamAt *at)
{
  at->fwd[PN_AT_COMBINED] = 0;
  for (int n = 0; n < PN_NODE_N; n++) {
    int32_t e = first_fwd(t->node_fwd[n], p->fwd_op);
    if (e >= 0) {
      at->fwd[PN_AT_COMBINED] = n * PN_AT_PART + e;
      break;
    }
  }
  at->bwd[PN_AT_COMBINED] = PN_BWD_PART_ATTN * PN_AT_PART + (int32_t)t->node_bwd[PN_NODE_ATTN]->len - 1;
  for (int n = PN_BWD_PARTS - 1; n >= 0; n--) {
    int32_t e = last_bwd(pn__bwd_part_tpl(t, (PnBwdPart)n), p->bwd_op);
    if (e >= 0) {
      at->bwd[PN_AT_COMBINED] = n * PN_AT_PART + e;
      break;
    }
  }
}

void pn__params_build(PnBuilder *b)
{
  const PnTemplates *t = &b->tpl, *dt = &b->dense_tpl;
  const GArray *fwd[PN_UNIT_KINDS]        = {t->emb_fwd, t->layer_fwd, t->head_fwd, dt->layer_fwd};
  const GArray *plain[PN_UNIT_KINDS]      = {t->emb_bwd, t->layer_bwd_plain, t->head_bwd, dt->layer_bwd_plain};
  const GArray *recomputed[PN_UNIT_KINDS] = {t->emb_bwd, t->layer_bwd, t->head_bwd, dt->layer_bwd};
  for (int k = 0; k < PN_UNIT_KINDS; k++) {
    b->params[k]   = g_array_new(FALSE, FALSE, sizeof(PnParam));
    b->param_at[k] = g_array_new(FALSE, FALSE, sizeof(PnParamAt));
  }
  pn_workload_embedding_param_list(b->sc, b->params[PN_UNIT_EMB]);
  pn_workload_layer_param_list(b->sc, b->params[PN_UNIT_LAYER]);
  pn_workload_head_param_list(b->sc, b->params[PN_UNIT_HEAD]);
  if (b->mixed)
    pn_workload_layer_param_list(&b->dense_sc, b->params[PN_UNIT_DENSE]);
  for (int k = 0; k < PN_UNIT_KINDS; k++)
    for (guint i = 0; i < b->params[k]->len; i++) {
      const PnParam *p = &g_array_index(b->params[k], PnParam, i);
      int32_t f = first_fwd(fwd[k], p->fwd_op), bp = last_bwd(plain[k], p->bwd_op);
      int32_t br   = last_bwd(recomputed[k], p->bwd_op);
      PnParamAt at = {.fwd = {MAX(f, 0), MAX(f, 0), MAX(f, 0)},
                      .bwd = {bp >= 0 ? bp : (int32_t)plain[k]->len - 1, br >= 0 ? br : (int32_t)recomputed[k]->len - 1,
                              bp >= 0 ? bp : (int32_t)plain[k]->len - 1}};
      if ((k == PN_UNIT_LAYER || k == PN_UNIT_DENSE) && b->plan->overlap_moe_expert_parallel_comm)
        combined_at(k == PN_UNIT_DENSE ? dt : t, p, &at);
      g_array_append_val(b->param_at[k], at);
    }
}

/* The buffers of a chunk: dense and expert, each in bf16 and fp8 storage. */
enum { BUF_DENSE, BUF_DENSE_FP8, BUF_EXPERT, BUF_EXPERT_FP8, BUF_N };

/* One buffer's walk (the index arithmetic of _compute_per_buffer_param_layout). */
typedef struct {
  int64_t param_start;  /* where the next parameter would start */
  int64_t bucket_start; /* where the open bucket starts */
  int64_t divisor;      /* bucket ends padded to a multiple of it; 1 = no padding */
  bool open;            /* the open bucket holds a parameter */
  int32_t unit;         /* the unit of the last parameter added */
  int64_t pos;          /* and its walk position */
  PnParamAt at;         /* of the open bucket's parameters in that unit: the first forward
                           positions, the last backward ones */
} BufWalk;

static int64_t gcd64(int64_t a, int64_t b)
{
  while (b != 0) {
    int64_t t = a % b;
    a         = b;
    b         = t;
  }
  return a;
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

static bool dist_opt(const PnBuilder *b) { return b->plan->use_distributed_optimizer; }

/* Megatron-FSDP with FSDP units (every strategy but no_shard): each transformer layer's
 * parameters in buckets of their own, coalesced into one group per unit and expert-ness
 * (param_and_grad_buffer.py: fsdp_unit_id, bucket_group_by_fsdp_unit). */
static bool fsdp_units(const PnBuilder *b) { return b->plan->fsdp && b->plan->fsdp_shard != PN_FSDP_NO_SHARD; }

/* fp8_param_gather in effect: TE linear weights live in fp8 storage and gather 1 B each. */
static bool fp8_storage(const PnBuilder *b) { return b->plan->param_bytes_per_elem < 2.0; }

/* Expert parameters are in their own buffer when they use the expert process groups. */
static bool experts_own_buffer(const PnBuilder *b)
{
  const PnParallelConfig *p = &b->sc->parallel;
  int64_t etp               = p->expert_tensor_parallel_size > 0 ? p->expert_tensor_parallel_size : b->tp;
  return pn_workload_is_moe(b->sc) && (p->expert_model_parallel_size > 1 || etp != b->tp);
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

/* A closed bucket (b->scratch_buckets): a group of one, and its buffer. */
typedef struct {
  PnBucketGroup g;
  int buf;
} Bucket;

/* The bucket [bucket_start, end) closed, its end padded. */
static void close_bucket(PnBuilder *b, BufWalk *w, int buf, int64_t end)
{
  int64_t padded = round_up(end, w->divisor);
  double elems   = (double)(padded - w->bucket_start);
  double bytes   = (buf == BUF_DENSE_FP8 || buf == BUF_EXPERT_FP8) ? b->plan->param_bytes_per_elem : 2.0;
  Bucket k       = {.g   = {.unit        = w->unit,
                            .at          = w->at,
                            .next        = -1,
                            .buckets     = 1,
                            .expert      = buf >= BUF_EXPERT,
                            .last_param  = w->pos,
                            .elems       = elems,
                            .param_bytes = elems * bytes},
                    .buf = buf};
  g_array_append_val(b->scratch_buckets, k);
  w->bucket_start = w->param_start = padded;
  w->open                          = false;
}

/* The module entries of `at` (unit `unit`) joined to those of `k`'s (`unit_k`): the earliest unit
 * counts, and within it the first forward entry and the last backward ones. */
static void join_at(int32_t *unit_k, PnParamAt *k, int32_t unit, const PnParamAt *at)
{
  if (unit > *unit_k)
    return;
  if (unit < *unit_k) {
    *unit_k = unit;
    *k      = *at;
    return;
  }
  for (int v = 0; v < PN_AT_N; v++) {
    k->fwd[v] = MIN(k->fwd[v], at->fwd[v]);
    k->bwd[v] = MAX(k->bwd[v], at->bwd[v]);
  }
}

/* One parameter into its buffer's open bucket, in backprop order. */
static void add_param(PnBuilder *b, BufWalk *w, int buf, const PnParam *p, const PnParamAt *at, int64_t bucket_size,
                      int32_t unit, int64_t pos)
{
  bool shared = dist_opt(b) && p->shared_embedding;
  if (dist_opt(b))
    w->param_start = round_up(w->param_start, 64);
  if (shared && w->open)
    close_bucket(b, w, buf, w->param_start);
  int64_t param_end = w->param_start + p->elems;
  if (!w->open) {
    w->unit = unit;
    w->at   = *at;
  }
  join_at(&w->unit, &w->at, unit, at);
  w->open = true;
  w->pos  = pos;
  if ((bucket_size > 0 && param_end - w->bucket_start >= bucket_size) || shared)
    close_bucket(b, w, buf, param_end);
  else
    w->param_start = param_end;
}

/* The group of `k` takes bucket `o` too. */
static void merge_into(PnBucketGroup *k, const PnBucketGroup *o)
{
  join_at(&k->unit, &k->at, o->unit, &o->at);
  k->last_param = MAX(k->last_param, o->last_param);
  k->buckets += o->buckets;
  k->elems += o->elems;
  k->param_bytes += o->param_bytes;
}

static gint group_cmp(gconstpointer a, gconstpointer b)
{
  const PnBucketGroup *x = a, *y = b;
  return x->last_param < y->last_param ? -1 : x->last_param > y->last_param;
}

/* partition_buckets over one list of buffers (dense: BUF_DENSE and BUF_DENSE_FP8, or expert),
 * from the closed buckets, each buffer's in its order, into `out`. */
static void partition(const GArray *buckets, int bf16, bool disable, GArray *out)
{
  int fp8   = bf16 + 1;
  int n_fp8 = 0, n = 0;
  for (guint i = 0; i < buckets->len; i++) {
    int buf = g_array_index(buckets, Bucket, i).buf;
    n += buf == bf16 || buf == fp8;
    n_fp8 += buf == fp8;
  }
  if (n == 0)
    return;
  guint first = out->len;
  if (disable || n_fp8 == 0) {
    for (guint i = 0; i < buckets->len; i++) {
      const Bucket *k = &g_array_index(buckets, Bucket, i);
      if (k->buf != bf16 && k->buf != fp8)
        continue;
      if (disable && out->len > first)
        merge_into(&g_array_index(out, PnBucketGroup, first), &k->g);
      else
        g_array_append_val(out, k->g);
    }
    return;
  }
  for (guint i = 0; i < buckets->len; i++) /* one group per fp8 bucket */
    if (g_array_index(buckets, Bucket, i).buf == fp8)
      g_array_append_val(out, g_array_index(buckets, Bucket, i).g);
  PnBucketGroup *last = &g_array_index(out, PnBucketGroup, out->len - 1);
  for (guint i = 0; i < buckets->len; i++)
    if (g_array_index(buckets, Bucket, i).buf == bf16)
      merge_into(last, &g_array_index(buckets, Bucket, i).g);
}

/* Megatron-FSDP's groups: the buckets of one unit (bf16 and fp8 storage) coalesced, dense and
 * expert apart. The walk closes a unit's buckets before the next unit's, so they are adjacent. */
static void fsdp_partition(const GArray *buckets, GArray *out)
{
  for (guint i = 0; i < buckets->len; i++) {
    const Bucket *k = &g_array_index(buckets, Bucket, i);
    guint same      = out->len;
    for (guint j = out->len; j-- > 0;) { /* this unit's group of the same expert-ness */
      const PnBucketGroup *g = &g_array_index(out, PnBucketGroup, j);
      if (g->unit != k->g.unit)
        break;
      if (g->expert == k->g.expert)
        same = j;
    }
    if (same < out->len)
      merge_into(&g_array_index(out, PnBucketGroup, same), &k->g);
    else
      g_array_append_val(out, k->g);
  }
}

void pn__buckets_build(PnBuilder *b, uint32_t rank, int64_t chunk, int64_t *n_buckets, int64_t *n_groups)
{
  GArray *units = pn__units_of(b, rank, chunk);
  GArray *out   = pn__groups_of(b, rank, chunk);
  bool disable  = chunk > 0 || b->plan->overlap_param_gather_with_optimizer_step;
  int64_t size  = (disable || rank > 0) ? 0 : b->plan->bucket_size;
  /* the distributed optimizer shards each bucket over the (intra-instance) DP group */
  int64_t dense_dp = b->dp * b->cp / dp_instances(b), expert_dp = pn_workload_expert_dp(b->sc);
  BufWalk w[BUF_N];
  for (int k = 0; k < BUF_N; k++) {
    int64_t dp = k >= BUF_EXPERT ? expert_dp : dense_dp;
    w[k]       = (BufWalk){.divisor = dist_opt(b) ? dp / gcd64(dp, 128) * 128 : 1};
  }
  bool own = experts_own_buffer(b), fp8 = fp8_storage(b);
  if (!b->scratch_buckets)
    b->scratch_buckets = g_array_new(FALSE, FALSE, sizeof(Bucket));
  g_array_set_size(b->scratch_buckets, 0);
  int64_t pos = 0;
  if (b->plan->fsdp)
    size = 0; /* FSDP units bound the buckets; no_shard: one per buffer */
  for (gint i = (gint)units->len - 1; i >= 0; i--) {
    PnUnitKind kind = g_array_index(units, PnUnit, i).kind;
    if (fsdp_units(b))
      for (int k = 0; k < BUF_N; k++)
        if (w[k].open)
          close_bucket(b, &w[k], k, w[k].param_start);
    const GArray *params = b->params[kind];
    for (gint k = (gint)params->len - 1; k >= 0; k--, pos++) {
      const PnParam *p = &g_array_index(params, PnParam, k);
      int buf          = (own && p->expert) ? BUF_EXPERT : BUF_DENSE;
      if (fp8 && p->te_weight)
        buf++;
      add_param(b, &w[buf], buf, p, &g_array_index(b->param_at[kind], PnParamAt, k), size, i, pos);
    }
  }
  for (int k = 0; k < BUF_N; k++)
    if (w[k].open)
      close_bucket(b, &w[k], k, w[k].param_start);
  *n_buckets += b->scratch_buckets->len;
  g_array_set_size(out, 0);
  if (fsdp_units(b)) {
    fsdp_partition(b->scratch_buckets, out);
  } else {
    partition(b->scratch_buckets, BUF_DENSE, disable, out);
    partition(b->scratch_buckets, BUF_EXPERT, disable, out);
  }
  g_array_sort(out, group_cmp);
  /* the all-gather chain of each list runs from the first layers' group to the last layers' */
  gint prev[2] = {-1, -1};
  for (guint i = 0; i < out->len; i++) {
    PnBucketGroup *k = &g_array_index(out, PnBucketGroup, i);
    k->next          = prev[k->expert];
    prev[k->expert]  = (gint)i;
  }
  *n_groups += out->len;
  g_array_set_size(g_ptr_array_index(b->chunk_ag, rank * b->vpp + chunk), out->len);
}

static bool dense_dp_active(const PnBuilder *b) { return b->dp * b->cp > 1; }
static bool dp_active(const PnBuilder *b) { return dense_dp_active(b) || pn_workload_expert_dp(b->sc) > 1; }

/* A DP collective over an explicit span (ranks, ranks per node), on the DP stream when `side`,
 * launched after `after` (PN_TASK_NONE: now). */
static PnTaskId emit_dp_span(PnBuilder *b, uint32_t rank, PnCollKind kind, double bytes, int64_t ranks,
                             int64_t per_node, const char *label, int16_t chunk, bool side, PnTaskId after)
{
  PnTask t;
  pn__task_init(&t, PN_TASK_COMM, side ? PN_STREAM_DP_COMM : PN_STREAM_COMPUTE, label, PN_PHASE_OPTIM);
  pn__span_task(b, kind, bytes, ranks, per_node, PN_CLASS_DP, &t);
  t.chunk = chunk;
  return side ? pn__add_side_task_after(b, rank, &t, after) : pn__add_task(b, rank, &t, NULL, 0);
}

static void dp_intra_span(const PnBuilder *b, int64_t *ranks, int64_t *per_node)
{
  *ranks    = b->dp * b->cp / dp_instances(b);
  *per_node = pn_sched_ranks_per_node(b->sc, b->tp, *ranks);
}

static PnTaskId emit_dp_collective(PnBuilder *b, uint32_t rank, PnCollKind kind, double bytes, const char *label,
                                   int16_t chunk, bool side, PnTaskId after)
{
  int64_t ranks, per_node;
  dp_intra_span(b, &ranks, &per_node);
  PnTaskId id  = emit_dp_span(b, rank, kind, bytes, ranks, per_node, label, chunk, side, after);
  int64_t inst = dp_instances(b);
  if (kind == PN_COLL_REDUCE_SCATTER && inst > 1) {
    /* the local shard, all-reduced across instances: ranks one instance apart never share a node
     * unless the whole data-parallel group fits in one */
    int64_t stride   = b->tp * ranks;
    int64_t inter_pn = pn_sched_ranks_per_node(b->sc, stride, inst);
    id = emit_dp_span(b, rank, PN_COLL_ALL_REDUCE, bytes / (double)ranks, inst, inter_pn, "dp_grad_inter_instance_ar",
                      chunk, side, id);
  }
  return id;
}

/* A DP collective of a bucket group: dense parameters over dp x cp, experts in their own buffer
 * over the expert data-parallel group (expert ranks are laid out etp x ep x edp, so edp ranks are
 * etp*ep apart). PN_TASK_NONE when that group is one rank. */
static PnTaskId emit_group(PnBuilder *b, uint32_t rank, const PnBucketGroup *k, PnCollKind kind, double bytes,
                           const char *label, int16_t chunk, bool side, PnTaskId after)
{
  if (!k->expert)
    return dense_dp_active(b) ? emit_dp_collective(b, rank, kind, bytes, label, chunk, side, after) : PN_TASK_NONE;
  const PnParallelConfig *p = &b->sc->parallel;
  int64_t edp               = pn_workload_expert_dp(b->sc);
  if (edp <= 1)
    return PN_TASK_NONE;
  int64_t etp    = p->expert_tensor_parallel_size > 0 ? p->expert_tensor_parallel_size : b->tp;
  int64_t stride = etp * MAX(p->expert_model_parallel_size, 1);
  return emit_dp_span(b, rank, kind, bytes, edp, pn_sched_ranks_per_node(b->sc, stride, edp), label, chunk, side,
                      after);
}

static PnCollKind grad_coll(const PnBuilder *b)
{
  return b->plan->use_distributed_optimizer ? PN_COLL_REDUCE_SCATTER : PN_COLL_ALL_REDUCE;
}

static const char *grad_label(const PnBuilder *b)
{
  return b->plan->use_distributed_optimizer ? "dp_grad_reduce_scatter" : "dp_grad_all_reduce";
}

bool pn__fsdp_reduces_every_microbatch(const PnBuilder *b)
{
  return b->plan->fsdp && b->plan->fsdp_shard >= PN_FSDP_OPTIM_GRADS && dp_active(b);
}
bool pn__fsdp_gathers(const PnBuilder *b)
{
  return b->plan->fsdp && b->plan->fsdp_shard == PN_FSDP_OPTIM_GRADS_PARAMS && dp_active(b);
}

/* Megatron's first iteration runs DDP's collectives synchronously; Megatron-FSDP's sharded
 * gradients and parameters are reduced and gathered asynchronously from the first one on. */
bool pn__grad_overlap_now(const PnBuilder *b)
{
  return b->plan->overlap_grad_reduce && (!b->first_iteration || pn__fsdp_reduces_every_microbatch(b)) && dp_active(b);
}
bool pn__param_overlap_now(const PnBuilder *b)
{
  return b->plan->overlap_param_gather && !b->first_iteration && dp_active(b) && b->plan->use_distributed_optimizer &&
         !pn__fsdp_gathers(b);
}

static const PnBucketGroup *group_at(PnBuilder *b, uint32_t rank, int64_t chunk, gint k)
{
  return &g_array_index(pn__groups_of(b, rank, chunk), PnBucketGroup, k);
}

static GArray *chunk_ag_of(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  return g_ptr_array_index(b->chunk_ag, rank * b->vpp + chunk);
}

/* Group k's parameter all-gather on the DP stream, launched now (overlap_param_gather), unless it
 * was already. */
static void dispatch_ag(PnBuilder *b, uint32_t rank, int64_t chunk, gint k)
{
  PnTaskId *ag = &g_array_index(chunk_ag_of(b, rank, chunk), PnTaskId, k);
  if (*ag != PN_TASK_NONE)
    return;
  const PnBucketGroup *g = group_at(b, rank, chunk, k);
  *ag = emit_group(b, rank, g, PN_COLL_ALL_GATHER, g->param_bytes, "dp_param_all_gather", (int16_t)chunk, true,
                   PN_TASK_NONE);
}

/* Every group of a chunk, in the order the forward needs them. */
static void dispatch_chunk_ag(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  if (chunk >= b->vpp)
    return;
  for (gint k = (gint)pn__groups_of(b, rank, chunk)->len - 1; k >= 0; k--)
    dispatch_ag(b, rank, chunk, k);
}

static void wait_ag(PnBuilder *b, uint32_t rank, int64_t chunk, gint k)
{
  PnTaskId ag = g_array_index(chunk_ag_of(b, rank, chunk), PnTaskId, k);
  if (ag != PN_TASK_NONE)
    pn__push_pending(b, rank, ag);
}

void pn__emit_param_gather_aligned(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  dispatch_chunk_ag(b, rank, chunk);
  dispatch_chunk_ag(b, rank, chunk + 1);
}

/* The first all-gather of an iteration, launched by optimizer.zero_grad() before the schedule
 * runs (distrib_optimizer.py step_with_ready_grads: "the first all-gather is launched
 * asynchronously in the next optimizer.zero_grad() call and subsequent all-gathers are launched in
 * the forward pre-hook"): chunk 0's first group of the dense and of the expert chain, or with
 * align_param_gather its whole first chunk(s). Launched before the first pipeline receive, it runs
 * while the stage waits for its input, and no host synchronization of a P2P call holds it back. */
void pn__emit_param_gather_start(PnBuilder *b, uint32_t rank)
{
  if (!pn__param_overlap_now(b))
    return;
  if (b->plan->align_param_gather) {
    dispatch_chunk_ag(b, rank, 0);
    dispatch_chunk_ag(b, rank, 1);
    return;
  }
  bool seen[2] = {false, false};
  for (gint k = (gint)pn__groups_of(b, rank, 0)->len - 1; k >= 0; k--) {
    bool expert = group_at(b, rank, 0, k)->expert;
    if (!seen[expert])
      dispatch_ag(b, rank, 0, k);
    seen[expert] = true;
  }
}

/* finish_param_sync of group k: dispatched now if it was not (and then waited for at once: exposed),
 * waited for, and (one ahead) the next group of its chain dispatched, unless align_param_gather
 * dispatched them all (skip_next_bucket_dispatch). */
static void finish_param_sync(PnBuilder *b, uint32_t rank, int64_t chunk, gint k)
{
  dispatch_ag(b, rank, chunk, k);
  wait_ag(b, rank, chunk, k);
  gint next = group_at(b, rank, chunk, k)->next;
  if (next >= 0 && !b->plan->align_param_gather)
    dispatch_ag(b, rank, chunk, next);
}

void pn__dp_unit(PnBuilder *b, uint32_t rank, int64_t chunk, int32_t unit, int variant, PnDpUnit *u)
{
  GArray *groups = pn__groups_of(b, rank, chunk);
  /* groups run from the last unit's to the first's: binary search for the unit's range */
  guint lo = 0, hi = groups->len;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    if (g_array_index(groups, PnBucketGroup, mid).unit > unit)
      lo = mid + 1;
    else
      hi = mid;
  }
  hi = lo;
  while (hi < groups->len && g_array_index(groups, PnBucketGroup, hi).unit == unit)
    hi++;
  *u = (PnDpUnit){.chunk = chunk, .unit = unit, .variant = variant, .lo = lo, .hi = hi};
}

bool pn__dp_unit_any(const PnDpUnit *u) { return u->hi > u->lo; }

/* The unit's groups in the order its modules' pre-hooks meet them: a module's parameters in
 * registration order, the reverse of the groups'. */
void pn__dp_gather_hook(PnBuilder *b, uint32_t gpu, guint entry, PnTaskId id, void *ctx)
{
  const PnDpUnit *u = ctx;
  if (id != PN_TASK_NONE || (entry == 0 && u->first_waited))
    return;
  for (guint k = u->hi; k-- > u->lo;)
    if (group_at(b, gpu, u->chunk, (gint)k)->at.fwd[u->variant] == u->part + (int32_t)entry)
      finish_param_sync(b, gpu, u->chunk, (gint)k);
}

void pn__dp_gather_first(PnBuilder *b, uint32_t rank, PnDpUnit *u)
{
  pn__dp_gather_hook(b, rank, 0, PN_TASK_NONE, u);
  u->first_waited = true;
}

/* ---- Megatron-FSDP's parameter all-gathers (optim_grads_params) ----
 * Each micro-batch's forward and backward gather a unit's groups in the unit's pre-hook
 * (megatron_fsdp.py _pre_forward_param_unshard / _pre_backward_param_unshard ->
 * AllGatherPipeline.all_gather_params), which also prefetches the groups that follow in that
 * pass's order until the elements gathered beyond the unit's own reach suggested_AG_prefetch_size
 * (with fsdp_double_buffer: no third unit), then waits for the unit's own. A transformer layer's
 * parameters are released after its forward and after its backward; the embedding and output
 * layer are not FSDP units (the root module's), gathered with the forward and kept until the
 * root's post-backward. Gathers and reductions share the data-parallel communicator, so they run
 * in launch order, one DP stream here. */

/* Every group of the chunk released (forward: all; backward: the layers', the root's kept). */
void pn__fsdp_release(PnBuilder *b, uint32_t rank, int64_t chunk, bool fwd)
{
  GArray *ags    = chunk_ag_of(b, rank, chunk);
  GArray *units  = pn__units_of(b, rank, chunk);
  GArray *groups = pn__groups_of(b, rank, chunk);
  for (guint k = 0; k < groups->len; k++) {
    const PnBucketGroup *g = &g_array_index(groups, PnBucketGroup, k);
    if (fwd || pn__unit_is_layer(&g_array_index(units, PnUnit, g->unit)))
      g_array_index(ags, PnTaskId, k) = PN_TASK_NONE;
  }
}

void pn__fsdp_gather(PnBuilder *b, uint32_t rank, int64_t chunk, int32_t unit, bool fwd)
{
  PnDpUnit u;
  pn__dp_unit(b, rank, chunk, unit, PN_AT_PLAIN, &u);
  if (!pn__dp_unit_any(&u))
    return;
  for (guint k = u.lo; k < u.hi; k++)
    dispatch_ag(b, rank, chunk, (gint)k);
  /* groups run from the last unit's to the first's: the forward prefetches downwards */
  gint len = (gint)pn__groups_of(b, rank, chunk)->len, step = fwd ? -1 : 1;
  double ahead = 0.0;
  int32_t last = unit, units = 1;
  for (gint k = fwd ? (gint)u.lo - 1 : (gint)u.hi; k >= 0 && k < len; k += step) {
    const PnBucketGroup *g = group_at(b, rank, chunk, k);
    if (ahead >= b->plan->fsdp_prefetch_elems)
      break;
    if (g->unit != last && ++units > 2 && b->plan->fsdp_double_buffer)
      break;
    last = g->unit;
    ahead += g->elems;
    dispatch_ag(b, rank, chunk, k);
  }
  for (guint k = u.lo; k < u.hi; k++)
    wait_ag(b, rank, chunk, (gint)k);
}

/* Megatron-FSDP's reduce-scatter queue (GradReducePipeline.wait_for_previous_grad_reduce): before
 * a group's reduction is launched, the compute stream waits for the oldest queued ones while
 * the queue holds more than suggested_RS_queue_capacity elements. */
static void fsdp_queue_wait(PnBuilder *b, uint32_t rank)
{
  GArray *q    = g_ptr_array_index(b->fsdp_rs_queue, rank);
  double total = 0.0;
  for (guint i = 0; i < q->len; i++)
    total += g_array_index(q, PnFsdpQueued, i).elems;
  guint popped = 0;
  while (popped < q->len && total > b->plan->fsdp_rs_queue_elems) {
    const PnFsdpQueued *o = &g_array_index(q, PnFsdpQueued, popped++);
    pn__push_pending(b, rank, o->id);
    total -= o->elems;
  }
  g_array_remove_range(q, 0, popped);
}

/* One group's gradient reduction on the DP stream, launched after `after` (overlap_grad_reduce);
 * the compute stream waits for it in finish_grad_sync (pn__emit_grad_sync). */
static void emit_grad_group(PnBuilder *b, uint32_t rank, int16_t chunk, gint k, PnTaskId after)
{
  GArray *waits          = g_ptr_array_index(b->dp_wait, rank);
  const PnBucketGroup *g = group_at(b, rank, chunk, k);
  bool queued            = pn__fsdp_reduces_every_microbatch(b);
  if (queued)
    fsdp_queue_wait(b, rank);
  PnTaskId id =
      emit_group(b, rank, g, grad_coll(b), g->elems * b->plan->grad_bytes_per_elem, grad_label(b), chunk, true, after);
  if (id == PN_TASK_NONE)
    return;
  g_array_append_val(waits, id);
  if (queued) {
    PnFsdpQueued o = {id, g->elems};
    g_array_append_val(g_ptr_array_index(b->fsdp_rs_queue, rank), o);
  }
}

void pn__dp_reduce_hook(PnBuilder *b, uint32_t gpu, guint entry, PnTaskId id, void *ctx)
{
  const PnDpUnit *u = ctx;
  if (id == PN_TASK_NONE)
    return;
  for (guint k = u->lo; k < u->hi; k++)
    if (group_at(b, gpu, u->chunk, (gint)k)->at.bwd[u->variant] == u->part + (int32_t)entry)
      emit_grad_group(b, gpu, (int16_t)u->chunk, (gint)k, id);
}

/* A chunk's groups on the compute stream, synchronous, in Megatron's order: the dense buffers'
 * groups, then the experts' (bucket_groups + expert_parallel_bucket_groups). */
static void emit_chunk_sync(PnBuilder *b, uint32_t rank, int64_t chunk, bool grads)
{
  GArray *groups = pn__groups_of(b, rank, chunk);
  for (int expert = 0; expert < 2; expert++)
    for (guint k = 0; k < groups->len; k++) {
      const PnBucketGroup *g = &g_array_index(groups, PnBucketGroup, k);
      if (g->expert != (expert == 1))
        continue;
      if (grads)
        emit_group(b, rank, g, grad_coll(b), g->elems * b->plan->grad_bytes_per_elem, grad_label(b), (int16_t)chunk,
                   false, PN_TASK_NONE);
      else
        emit_group(b, rank, g, PN_COLL_ALL_GATHER, g->param_bytes, "dp_param_all_gather", (int16_t)chunk, false,
                   PN_TASK_NONE);
    }
}

/* finalize_model_grads: without overlap (or in the first iteration) each group's reduce-scatter
 * (distributed optimizer) or all-reduce, synchronous on the compute stream, chunk by chunk; with
 * overlap, the compute stream waits for the groups launched during the backward. */
void pn__emit_grad_sync(PnBuilder *b, uint32_t rank)
{
  if (!dp_active(b))
    return;
  GArray *waits = g_ptr_array_index(b->dp_wait, rank);
  g_array_set_size(g_ptr_array_index(b->fsdp_rs_queue, rank), 0);
  if (pn__grad_overlap_now(b)) {
    for (guint i = 0; i < waits->len; i++)
      pn__push_pending(b, rank, g_array_index(waits, PnTaskId, i));
    g_array_set_size(waits, 0);
    return;
  }
  for (int64_t c = b->vpp - 1; c >= 0; c--)
    emit_chunk_sync(b, rank, c, true);
}

/* Without overlap_param_gather the updated parameters are gathered right after the step;
 * with it, in the next iteration's forward (and in the first iteration not at all). */
void pn__emit_param_gather_after_step(PnBuilder *b, uint32_t rank)
{
  if (b->plan->use_distributed_optimizer && dp_active(b) && !b->plan->overlap_param_gather)
    for (int64_t c = 0; c < b->vpp; c++)
      emit_chunk_sync(b, rank, c, false);
}

gboolean pn_sched_dp_buckets(const PnScenario *sc, const PnPlan *plan, uint32_t rank, int64_t chunk, GArray *out,
                             GError **error)
{
  PnBuildInfo info = {0};
  PnBuilder b      = {0};
  pn__builder_layout(&b, sc, plan, &info);
  g_return_val_if_fail(rank < (uint32_t)b.pp && chunk >= 0 && chunk < b.vpp, FALSE);
  if (!pn__split_layers(&b, error))
    return FALSE;
  guint n    = (guint)(b.pp * b.vpp);
  b.units    = pn__arrays_new(n, sizeof(PnUnit));
  b.groups   = pn__arrays_new(n, sizeof(PnBucketGroup));
  b.chunk_ag = pn__arrays_new(n, sizeof(PnTaskId));
  pn__templates_build(&b);
  pn__params_build(&b);
  pn__units_build(&b, rank, chunk);
  int64_t buckets = 0, groups = 0;
  pn__buckets_build(&b, rank, chunk, &buckets, &groups);
  GArray *gs = pn__groups_of(&b, rank, chunk);
  for (guint i = 0; i < gs->len; i++) {
    const PnBucketGroup *k = &g_array_index(gs, PnBucketGroup, i);
    PnDpBucketGroup o      = {k->elems, k->param_bytes, k->buckets, k->unit, k->expert};
    g_array_append_val(out, o);
  }
  pn__templates_free(&b);
  for (int k = 0; k < PN_UNIT_KINDS; k++) {
    g_clear_pointer(&b.params[k], g_array_unref);
    g_clear_pointer(&b.param_at[k], g_array_unref);
  }
  g_clear_pointer(&b.scratch_buckets, g_array_unref);
  g_ptr_array_unref(b.units);
  g_ptr_array_unref(b.groups);
  g_ptr_array_unref(b.chunk_ag);
  g_array_unref(b.vs_first_layer);
  g_array_unref(b.vs_layers);
  return TRUE;
}
