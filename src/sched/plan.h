/* plan.h — the resolved execution plan: which overlap mechanisms are on, after the frameworks'
 * gating (overlap/ fills it from the scenario; sched/ builds the task graph from it).
 *
 * Every field is a decision the real frameworks make at start-up: Megatron-Bridge's
 * CommOverlapConfig defaults and gating, Megatron-Core's argument checks, and TE's userbuffers
 * configuration. The builder never looks at raw user options for these.
 */
#ifndef PN_SCHED_PLAN_H
#define PN_SCHED_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "workload/config.h"

/* Transformer Engine userbuffers GEMM slots (TE initialize_ub), in a fixed order. */
typedef enum {
  PN_UB_QKV_FPROP,
  PN_UB_PROJ_FPROP,
  PN_UB_FC1_FPROP,
  PN_UB_FC2_FPROP,
  PN_UB_QKV_DGRAD,
  PN_UB_QKV_WGRAD,
  PN_UB_FC1_DGRAD,
  PN_UB_FC1_WGRAD,
  PN_UB_PROJ_DGRAD,
  PN_UB_FC2_DGRAD,
  PN_UB_PROJ_WGRAD,
  PN_UB_FC2_WGRAD,
  PN_UB_N
} PnUbSlot;

typedef enum { PN_UB_NONE, PN_UB_BULK, PN_UB_PIPELINE, PN_UB_RING_EXCHANGE } PnUbMethod;

/* One slot's userbuffers configuration (TE get_default_config / Bridge presets). */
typedef struct {
  PnUbMethod method;
  int num_sm; /* CTAs of the SM-driven comm kernel (bulk, pipeline) */
  int cga_size;
  int num_splits;     /* pipeline chunks; ring_exchange uses tp steps */
  bool set_sm_margin; /* GEMM runs on sm_count - num_sm SMs */
  bool aggregate;     /* ring_exchange with 2-chunk steps */
  bool atomic_gemm;
  bool fp8_buf;
} PnUbCfg;

typedef struct {
  /* data parallel (Megatron-Core DistributedDataParallelConfig) */
  bool use_distributed_optimizer;
  bool overlap_grad_reduce;
  bool overlap_param_gather;
  bool align_param_gather;
  bool overlap_param_gather_with_optimizer_step; /* not simulated yet: the builder gathers as without it */
  int64_t bucket_size;                           /* elements; resolved default max(40M, 1M * dp_cp) */
  double grad_bytes_per_elem;                    /* 4 with grad_reduce_in_fp32, else 2 */
  double param_bytes_per_elem;                   /* 1 with fp8_param_gather, else 2 */
  /* Megatron-FSDP (overlap/dp.c, sched/dp_buckets.c): its units' parameters in one group each */
  bool fsdp;
  PnFsdpShard fsdp_shard;
  double fsdp_prefetch_elems; /* suggested_AG_prefetch_size: elements gathered ahead of a unit */
  double fsdp_rs_queue_elems; /* suggested_RS_queue_capacity: elements of reductions in flight */
  bool fsdp_double_buffer;    /* at most two units gathered at once */
  /* tensor parallel */
  bool tp_comm_overlap;
  PnUbCfg ub[PN_UB_N]; /* meaningful when tp_comm_overlap */
  /* pipeline parallel */
  bool overlap_p2p_comm;
  bool batch_p2p_comm;
  bool overlap_p2p_comm_warmup_flush;
  /* context parallel */
  PnCpCommType cp_comm_type;
  /* expert parallel */
  bool overlap_moe_expert_parallel_comm; /* combined 1F1B: EP all-to-all on its own stream */
  bool delay_wgrad_compute;              /* TE defers TE-linear wgrads to backward_dw() */
  /* Megatron-LM PR #4268, only with the combined 1F1B schedule */
  bool p2p_backward_on_comm_stream; /* post_backward launched from the B chain, not the compute stream */
  int64_t p2p_wgrad_delayed_layers; /* last backward layers whose pre-dispatch wgrad runs after post_backward */
  bool p2p_delay_mlp_wgrad;         /* ... and their MLP (expert) wgrad too */
  /* CUDA graphs (Megatron-Core cuda_graph_impl; overlap/graphs.c, sched/graphs.c) */
  PnCudaGraphImpl cuda_graph_impl;
  uint32_t cuda_graph_modules; /* PnCudaGraphModule bits the per-layer graphs capture, as gated; 0 = whole layer */
  /* environment */
  int max_connections;
  int nccl_min_ctas, nccl_max_ctas;
  int fwd_ln_sm_margin, bwd_ln_sm_margin;
} PnPlan;

/* Slot name ("qkv_fprop", ...) of a slot and back; -1 when unknown. */
const char *pn_ub_slot_name(PnUbSlot s);
int pn_ub_slot_from_name(const char *name);

#endif
