/* sched-private.h — the task-graph builder of build.h, as shared by the files of sched/ (no other
 * layer includes it; functions used across these files carry the pn__ prefix).
 *
 * Structure. The per-layer op lists of workload/ops.h are turned once into templates: arrays of
 * priced tasks with their stream and their dependencies inside the template (a userbuffers
 * GEMM split into chunks waiting on ring-exchange steps, a collective running beside a GEMM).
 * Emitting a template appends its tasks for one (micro-batch, chunk, layer). Two per-GPU
 * registers carry dependencies across templates: `last_compute` (the latest task on the
 * compute stream: what a side-stream task launched "now" must wait for) and `pending` (side
 * stream tasks the next compute-stream task must wait for: a join, a handle.wait()).
 *
 * Files. build.c drives the iteration (templates, schedule actions, optimizer step). emit.c holds
 * the primitives the others are written in: pricing an op, template entries, adding a task under
 * the two registers. Each overlap mechanism has a file of its own: pp_p2p.c (pipeline P2P calls),
 * tp_slots.c (TE userbuffers and async TP collectives beside their GEMMs), cp_ring.c
 * (context-parallel ring attention), dp_buckets.c (DP gradient buckets and parameter all-gather),
 * combined.c (the combined 1F1B of MoE expert-parallel overlap), graphs.c (CUDA graphs: what a
 * captured scope costs the host).
 *
 * Units: task times in ns, sizes in bytes (PnTask). Cost: adding a task is O(its dependencies).
 */
#ifndef PN_SCHED_PRIVATE_H
#define PN_SCHED_PRIVATE_H

#include "hw/graph.h"
#include "sched/build.h"
#include "sched/order.h"
#include "workload/ops.h"

/* A template entry: a priced task, where it waits inside the template and which compute it joins. */
typedef struct {
  PnTask task;
  int16_t dep[2];     /* template-relative dependencies, -1 = none */
  bool after_compute; /* waits for the last compute-stream task issued before it */
  bool join;          /* a later compute-stream task waits for it: the first one issued after entry `join_at` */
  int16_t join_at;    /* template index; the entry itself when it is the last of its group */
  int16_t extra_join; /* an entry whose join_at is this one, other than itself and the previous (-1: none) */
} PnTplEntry;

/* The templates, built once per build and emitted per (micro-batch, chunk, layer). */
typedef struct {
  GArray *layer_fwd, *layer_bwd, *layer_bwd_plain; /* of PnTplEntry; plain: not recomputed */
  GArray *emb_fwd, *emb_bwd;
  GArray *head_fwd, *head_bwd;
  /* combined 1F1B (EP overlap): a layer split into the nodes of Megatron's fine-grained layer
   * schedule (PnLayerNode), forward and backward, and the two delayed-wgrad parts */
  GArray *node_fwd[PN_NODE_N], *node_bwd[PN_NODE_N];
  GArray *attn_dw, *mlp_dw;
} PnTemplates;

/* A unit of a model chunk, the granularity at which it is emitted: the embedding, one layer (a
 * dense layer of a MoE model, moe_layer_freq, is a kind of its own: its templates and parameters
 * are the dense twin's), or the output head. */
typedef enum { PN_UNIT_EMB, PN_UNIT_LAYER, PN_UNIT_HEAD, PN_UNIT_DENSE } PnUnitKind;
#define PN_UNIT_KINDS 4
typedef struct {
  PnUnitKind kind;
  int64_t layer;        /* global layer index (PN_UNIT_LAYER, PN_UNIT_DENSE) */
  double params;        /* parameters on this GPU reduced over dp x cp */
  double expert_params; /* expert parameters on this GPU, reduced over the expert-DP group */
} PnUnit;

/* Where a unit's parameter acts in the unit's templates, by emission variant: the position where
 * its module's forward starts (fwd; the forward pre-hook runs before it) and the position after
 * which its gradient is complete (bwd). A position is an entry of the unit's template (plain:
 * the layer's backward without recompute, recomputed: with it) or, in the combined 1F1B of EP
 * overlap, part * PN_AT_PART + an entry of that part's node template (forward: the PnLayerNode;
 * backward: the PnBwdPart). */
enum { PN_AT_PLAIN, PN_AT_RECOMPUTED, PN_AT_COMBINED, PN_AT_N };
#define PN_AT_PART 32768
typedef struct {
  int32_t fwd[PN_AT_N];
  int32_t bwd[PN_AT_N];
} PnParamAt;

/* A layer's parts in the combined 1F1B, in the order they are issued: forward, the nodes of
 * PnLayerNode; backward, its nodes with the two backward_dw() parts (build.h). */
typedef enum {
  PN_BWD_PART_COMBINE,
  PN_BWD_PART_MLP,
  PN_BWD_PART_MLP_DW,
  PN_BWD_PART_DISPATCH,
  PN_BWD_PART_ATTN,
  PN_BWD_PART_ATTN_DW,
  PN_BWD_PARTS
} PnBwdPart;

/* A DP bucket group of a model chunk (Megatron-Core's _ParamAndGradBucketGroup): what one
 * gradient reduce-scatter / all-reduce and one parameter all-gather move, the buckets of
 * param_and_grad_buffer.py coalesced (dp_buckets.c says how they are formed). A bucket's
 * boundaries fall on parameters, possibly inside a layer. `unit` holds the group's
 * earliest-registered parameter: the backward produces its gradients last there, and the forward
 * needs the group first there, at module granularity (the entries). */
typedef struct {
  int32_t unit;       /* forward index in the chunk's units */
  PnParamAt at;       /* in that unit: where the forward first needs it, where its last gradient is complete */
  int32_t next;       /* the group whose all-gather waiting for this one dispatches
                         (next_param_gather_bucket_group): an index in the chunk's groups, -1 none */
  int32_t buckets;    /* Megatron buckets coalesced */
  bool expert;        /* expert parameters in their own buffer: reduced over the expert-DP group */
  int64_t last_param; /* walk position (backprop order) of its earliest-registered parameter */
  double elems;       /* elements reduced: its buckets' sizes, padded (distributed optimizer) */
  double param_bytes; /* bytes all-gathered: elems x 1 in an fp8 buffer (fp8_param_gather), else x 2 */
} PnBucketGroup;

/* A Megatron-FSDP gradient reduce-scatter in flight, and the elements it reduces. */
typedef struct {
  PnTaskId id;
  double elems;
} PnFsdpQueued;

/* One pn_sched_build call: the scenario, the graph it fills, and the per-GPU registers. */
typedef struct {
  const PnScenario *sc;
  const PnPlan *plan;
  PnGraph *g;
  PnBuildInfo *info;
  PnTemplates tpl;
  /* a MoE model's dense layers (moe_layer_freq): their scenario (workload/ops.h; sharing sc's hw)
   * and layer templates; `mixed` false, and dense_tpl empty, when every layer is of one kind */
  bool mixed;
  PnScenario dense_sc;
  PnTemplates dense_tpl;
  int64_t pp, vpp, tp, cp, dp, m;
  GArray *vs_first_layer; /* of int64_t: first global layer of each virtual stage */
  GArray *vs_layers;      /* of int64_t: transformer layers in each virtual stage */
  double p2p_bytes;
  GHashTable *p2p_open;            /* pairing key -> (task id + 1) of the side seen first */
  GArray *actions;                 /* scratch, of PnSchedAction */
  GArray *action_task;             /* scratch: per action index, per xfer, the P2P task that carries it */
  GArray *last_on_gpu;             /* of PnTaskId: latest task per GPU */
  GArray *last_on_stream;          /* of PnTaskId: latest task per GPU * PN_STREAM_N (PN_TASK_NONE) */
  GArray *last_compute;            /* of PnTaskId: latest compute-stream task per GPU (PN_TASK_NONE) */
  GPtrArray *pending;              /* per GPU: GArray of PnTaskId the next compute-stream task waits for */
  GPtrArray *dp_wait;              /* per GPU: GArray of PnTaskId finish_grad_sync waits for */
  GPtrArray *fsdp_rs_queue;        /* per GPU: Megatron-FSDP's reduce-scatters in flight (dp_buckets.c) */
  GPtrArray *units;                /* per GPU * vpp: GArray of PnUnit, forward order */
  GArray *params[PN_UNIT_KINDS];   /* of PnParam: one unit's parameters in registration order, by kind */
  GArray *param_at[PN_UNIT_KINDS]; /* of PnParamAt, beside params */
  GPtrArray *groups;               /* per GPU * vpp: GArray of PnBucketGroup, in backprop (launch) order */
  GPtrArray *chunk_ag;             /* per GPU * vpp: GArray of PnTaskId, param AG per group (PN_TASK_NONE: not yet) */
  GArray *scratch_buckets;         /* dp_buckets.c's buckets of one chunk while they are grouped */
  int iteration;
  bool first_iteration; /* Megatron's first iteration: no DP overlap yet (golden counts recorded) */
  GArray *scratch_deps;
} PnBuilder;

static inline int64_t pn__vstage_of(const PnBuilder *b, int64_t rank, int64_t chunk) { return chunk * b->pp + rank; }

static inline bool pn__unit_is_layer(const PnUnit *u) { return u->kind == PN_UNIT_LAYER || u->kind == PN_UNIT_DENSE; }

/* Whether global layer `layer` is a MoE model's dense layer (built from the dense twin's templates
 * and scenario, b->dense_tpl and b->dense_sc). */
static inline bool pn__layer_is_dense(const PnBuilder *b, int64_t layer)
{
  return b->mixed && !pn_workload_layer_is_moe(b->sc, layer);
}

/* The layer templates of global layer `layer`: the dense twin's for a MoE model's dense layers. */
static inline const PnTemplates *pn__layer_tpl(const PnBuilder *b, int64_t layer)
{
  return pn__layer_is_dense(b, layer) ? &b->dense_tpl : &b->tpl;
}

static inline GArray *pn__units_of(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  return g_ptr_array_index(b->units, rank * b->vpp + chunk);
}

static inline GArray *pn__groups_of(PnBuilder *b, uint32_t rank, int64_t chunk)
{
  return g_ptr_array_index(b->groups, rank * b->vpp + chunk);
}

/* ---- build.c: the parts of a build that the compute bound (bound.c) shares ------------------ */

/* The layout's sizes into `b` (sc, plan, info, pp .. m); nothing allocated. */
void pn__builder_layout(PnBuilder *b, const PnScenario *sc, const PnPlan *plan, PnBuildInfo *info);
/* n GArrays of `elem`-byte elements, freed with the array. */
GPtrArray *pn__arrays_new(guint n, guint elem);
/* b->vs_first_layer and b->vs_layers (owned by b): Megatron's split (workload/split.h); FALSE,
 * with the rule's message, when it refuses the layout. */
gboolean pn__split_layers(PnBuilder *b, GError **error);
/* b->tpl, and with dense layers in a MoE model b->mixed, b->dense_sc and b->dense_tpl. */
void pn__templates_build(PnBuilder *b);
void pn__templates_free(PnBuilder *b);
/* The optimizer step of `rank` (its local parameters from b->units), as a template. */
GArray *pn__optimizer_template(PnBuilder *b, uint32_t rank);

/* ---- emit.c: primitives ------------------------------------------------------------------ */

void pn__task_init(PnTask *t, PnTaskKind kind, PnStream stream, const char *label, uint8_t phase);
void pn__span_task(const PnBuilder *b, PnCollKind kind, double bytes, int64_t ranks, int64_t per_node, PnCommClass cls,
                   PnTask *t);
void pn__nccl_task(const PnBuilder *b, PnCollKind kind, double bytes, PnGroup grp, PnTask *t);
void pn__price_op(PnBuilder *b, const PnOp *op, PnTask *t);

int16_t pn__tpl_add(GArray *tpl, const PnTask *t, int16_t dep0, int16_t dep1, bool after_compute, bool join);
void pn__tpl_join_after_next(GArray *tpl, int16_t entry);
void pn__tpl_plain(PnBuilder *b, GArray *tpl, const PnOp *op);

/* bound.c: the least time template `tpl` holds its GPU's compute stream once the stream is free
 * for it (its tasks at their least, only the orderings the template itself makes); *side set when
 * a kernel runs on another stream. */
double pn__template_least_ns(const PnHwProfile *hw, const GArray *tpl, bool *side);

PnTaskId pn__add_task(PnBuilder *b, uint32_t gpu, PnTask *t, const PnTaskId *deps, uint32_t n_deps);
PnTaskId pn__add_side_task(PnBuilder *b, uint32_t gpu, PnTask *t);
PnTaskId pn__add_side_task_after(PnBuilder *b, uint32_t gpu, PnTask *t, PnTaskId after);
void pn__push_pending(PnBuilder *b, uint32_t gpu, PnTaskId id);
void pn__emit_node(PnBuilder *b, uint32_t gpu, const GArray *tpl, bool comm_node, PnTaskId *chain, int32_t mb,
                   int16_t chunk, int16_t layer);
void pn__emit_template(PnBuilder *b, uint32_t gpu, const GArray *tpl, int32_t mb, int16_t chunk, int16_t layer);
/* Called around each entry of a template emitted with pn__emit_template_hooked: before entry
 * `entry` is added (id PN_TASK_NONE; what it makes pending, the entry or the next compute task
 * waits for) and after (id its task). */
typedef void (*PnEntryHook)(PnBuilder *b, uint32_t gpu, guint entry, PnTaskId id, void *ctx);
void pn__emit_node_hooked(PnBuilder *b, uint32_t gpu, const GArray *tpl, bool comm_node, PnTaskId *chain, int32_t mb,
                          int16_t chunk, int16_t layer, PnEntryHook hook, void *ctx);
void pn__emit_template_hooked(PnBuilder *b, uint32_t gpu, const GArray *tpl, int32_t mb, int16_t chunk, int16_t layer,
                              PnEntryHook hook, void *ctx);

/* ---- pp_p2p.c: pipeline P2P calls -------------------------------------------------------- */

void pn__emit_p2p(PnBuilder *b, uint32_t rank, const PnSchedAction *a, guint action_index, PnTaskId after);
void pn__emit_wait(PnBuilder *b, uint32_t rank, const PnSchedAction *a);

/* ---- tp_slots.c: TP collectives beside their GEMMs --------------------------------------- */

int pn__tpl_tp_slot(PnBuilder *b, GArray *tpl, GArray *ops, guint i);

/* ---- cp_ring.c: context-parallel ring attention ------------------------------------------ */

void pn__tpl_cp_ring(PnBuilder *b, GArray *tpl, const PnOp *comm, const PnOp *attn);

/* ---- dp_buckets.c: DP gradient buckets and parameter all-gather -------------------------- */

/* The chunk's units (b->units), forward order. */
void pn__units_build(PnBuilder *b, uint32_t rank, int64_t chunk);
/* b->params and b->param_at, from the workload's parameter lists and the templates (b->tpl,
 * built): a module whose op a template lacks acts at the unit's start (forward) or end (backward). */
void pn__params_build(PnBuilder *b);
/* The chunk's parameters of every unit into bucket groups (b->groups; b->chunk_ag sized to them);
 * its bucket and group counts added to *buckets, *groups. Cost: O(parameters of the chunk);
 * allocates nothing past the first chunk. */
void pn__buckets_build(PnBuilder *b, uint32_t rank, int64_t chunk, int64_t *buckets, int64_t *groups);
/* Parameters of a chunk (its units), dense and expert. */
double pn__chunk_params(GArray *units, double *expert);
bool pn__grad_overlap_now(const PnBuilder *b);
bool pn__param_overlap_now(const PnBuilder *b);
/* Megatron-FSDP: gradients reduce-scattered after every micro-batch's backward (optim_grads,
 * optim_grads_params); parameters gathered per unit in every forward and backward
 * (optim_grads_params), with pn__fsdp_release at a pass's start and pn__fsdp_gather before each
 * unit (its groups dispatched with the prefetch that follows them, then waited for). */
bool pn__fsdp_reduces_every_microbatch(const PnBuilder *b);
bool pn__fsdp_gathers(const PnBuilder *b);
void pn__fsdp_release(PnBuilder *b, uint32_t rank, int64_t chunk, bool fwd);
void pn__fsdp_gather(PnBuilder *b, uint32_t rank, int64_t chunk, int32_t unit, bool fwd);
void pn__emit_param_gather_start(PnBuilder *b, uint32_t rank);
/* align_param_gather: every group of the chunk and of the next dispatched at once. */
void pn__emit_param_gather_aligned(PnBuilder *b, uint32_t rank, int64_t chunk);
/* One unit's emission with its DP hooks: the forward pre-hooks of its groups (gather: the
 * chunk's first forward with overlap_param_gather), the launch of the groups its backward
 * completes (reduce: the chunk's last backward with overlap_grad_reduce). */
typedef struct {
  int64_t chunk;
  int32_t unit;
  int variant;       /* PN_AT_*: which positions the emission follows */
  int32_t part;      /* PN_AT_COMBINED: the part being emitted, times PN_AT_PART */
  guint lo, hi;      /* the unit's groups: [lo, hi) of the chunk's */
  bool first_waited; /* forward: the groups of position 0 were waited for before the unit */
} PnDpUnit;
void pn__dp_unit(PnBuilder *b, uint32_t rank, int64_t chunk, int32_t unit, int variant, PnDpUnit *u);
bool pn__dp_unit_any(const PnDpUnit *u);
/* The template of a backward part of the combined 1F1B. */
const GArray *pn__bwd_part_tpl(const PnTemplates *t, PnBwdPart part);
/* Forward pre-hooks (PnEntryHook, ctx a PnDpUnit): before the entry a module starts with, its
 * groups waited for, dispatched first where they were not (then exposed), each wait dispatching
 * the group's `next` (not with align_param_gather). */
void pn__dp_gather_hook(PnBuilder *b, uint32_t gpu, guint entry, PnTaskId id, void *ctx);
/* The groups of the unit's first module (position 0), waited for before the unit (its fp8 weight
 * casts read the weights first); the hook then skips them. */
void pn__dp_gather_first(PnBuilder *b, uint32_t rank, PnDpUnit *u);
/* Backward (PnEntryHook): after the entry that completes a group's last gradient, its reduction
 * launched on the DP stream, after that entry. */
void pn__dp_reduce_hook(PnBuilder *b, uint32_t gpu, guint entry, PnTaskId id, void *ctx);
void pn__emit_grad_sync(PnBuilder *b, uint32_t rank);
void pn__emit_param_gather_after_step(PnBuilder *b, uint32_t rank);

/* ---- combined.c: combined 1F1B (MoE EP overlap) ------------------------------------------ */

guint pn__emit_combined_step(PnBuilder *b, uint32_t rank, guint i);

/* ---- graphs.c: CUDA graphs ---------------------------------------------------------------- */

/* The captured entries of the templates (b->tpl, built) lose their host cost and launch gap; the
 * first of each captured region carries the replay. Nothing without CUDA graphs. */
void pn__graphs_capture_templates(PnBuilder *b);
/* Whether a layer's op runs inside a captured graph. */
bool pn__graphs_capture_op(const PnBuilder *b, const PnOp *op);
/* full_iteration: the tasks from `first` on (the iteration's forward_backward_func, after each
 * GPU's leading parameter all-gathers) are replayed from one graph: its replay on each GPU's
 * first, no host cost nor host sync on the others. */
void pn__graphs_capture_iteration(PnBuilder *b, PnTaskId first);

#endif
