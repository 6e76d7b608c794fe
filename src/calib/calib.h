/* calib.h — microbenchmark measurements → the calibration tables of a hardware profile.
 *
 * What it does: takes the rows measured by microbench/ (already parsed by io/calibio.c into the
 * plain structs below) and fits what the simulator reads:
 *   - gemm_bf16 / gemm_fp8: every measured (m, n, k) with the median of its repeated timings
 *     (several passes / layouts of one shape are averaged);
 *   - gemm_sm_scaling: a GEMM launched for all SMs while another kernel holds k of them
 *     ("spinner" rows): x = sm_count - k, y = 1 / median slowdown over the measured shapes;
 *   - gemm_sm_limit_scaling: a GEMM restricted to sm_count - k SMs while a kernel runs on the
 *     other k ("spinner_sm_target" rows: TE's set_sm_margin), same form;
 *   - gemm_accum (bf16 / fp8 inputs into a bf16 / fp32 main_grad): per measured wgrad (m, n, k),
 *     the median ratio of the accumulating GEMM's time to the plain GEMM's (timed alternately),
 *     times the plain table's price of that shape, so both stay in the plain table's clock regime;
 *   - attn_bf16: fused attention forward/backward per (batch, seq, heads, kv_heads, head_dim),
 *     the fastest backend measured;
 *   - bmm_bf16 (mb_unfused_attn.py "bmm" rows): every measured (batch, m, n, k) of the unfused
 *     attention's strided-batched GEMMs with the median of its rows (QK^T and dP share a shape,
 *     as do PV, dV, dQ and dK);
 *   - torch_kernel_vs_copy (its "mem" rows): per PyTorch kernel, x = sequence length, y = the
 *     median of its measured bandwidth over a copy's at that length;
 *   - hbm_bytes_per_ns: median bandwidth of the memory-bound kernels moving >= 256 MiB;
 *   - hbm_share (hbm.c): a GEMM's HBM bytes per FLOP, bf16 and fp8, from its slowdown beside a
 *     spinner copying on k SMs over beside an idle one (mb_gemm_contention's spinner_mem rows,
 *     with the spinner's bandwidth from mb_hbm_share's copy_alone rows; mb_hbm_share's
 *     gemm_beside_copy rows); turns HBM sharing on;
 *   - mem_bandwidth_<class>: bandwidth vs size of each kernel class (copy, norm, activation,
 *     optimizer) from 64 MiB up (smaller timings are launch-dominated), median over its kernels;
 *   - per collective on 2 GPUs: the large-size bus bandwidth (nccl_pair_busbw), the NCCL base
 *     latency (smallest message minus one NVLink hop), the efficiency curve
 *     y(size) = wire bytes / (t - latency) / large-size busbw, and the bandwidth of one channel
 *     (1-CTA runs);
 *   - nvlink_ce_bytes_per_ns: one-way peer copy bandwidth at >= 256 MiB;
 *   - the host (host.c, PnHostProfile), from mb_host.py's rows: per eager kernel, the h2048
 *     eager layer's forward host time / its forward kernels (kernel_ns) and backward host time
 *     / its backward kernels (kernel_bwd_ns); the median async collective call (collective_ns)
 *     and the batched send/recv (p2p_ns); torch.cuda.synchronize on an idle GPU (sync_ns); a
 *     per-layer graph's forward and backward (graph_layer_*_ns); the whole captured stack's
 *     replay (graph_launch_ns); the CPU and its Python loop speed (information);
 *   - from mb_launch's gpu_floor rows: kernel_launch_ns = an empty kernel's time per kernel on
 *     a stream minus in a CUDA graph (the gap a graph removes), and the floors kernel_floor_ns
 *     = the smallest GEMM and copy in a graph; the attention floor is mb_host.py's causal SDPA
 *     call in a graph.
 * Anything without measurements is left as it was (the profile keeps its published source).
 *
 * The check (pn_calib_check) replays every measured case through a profile's cost model, and
 * prices each point of each table by the table without it (leave-one-out, PnCalLoo): the replay
 * of a table's own points is exact by construction, the leave-one-out error is what a shape,
 * size or SM count between measured ones gets. The host rows are replayed as the simulator
 * prices them: a layer's launches at kernel_ns / kernel_bwd_ns, a small kernel on a stream at
 * max(its floor, its price) + kernel_launch_ns.
 *
 * Cost: the fit O(rows log rows); the check O(n^2) in the points of the largest table (the
 * leave-one-out). Pure computation: no I/O, no JSON.
 */
#ifndef PN_CALIB_CALIB_H
#define PN_CALIB_CALIB_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "hw/coll.h"
#include "hw/profile.h"

typedef struct {
  int64_t m, n, k;
  bool fp8;
  double ns;
  int64_t batch; /* matrices of a strided-batched GEMM (the unfused_attn "bmm" rows); 0 for one GEMM */
} PnCalGemm;

/* One of the unfused attention's PyTorch kernels (microbench/mb_unfused_attn.py "mem" rows): its
 * time and its bandwidth relative to a bf16 copy of the same bytes timed alternately. */
typedef struct {
  PnTorchKernel kernel;
  int64_t seq;
  double bytes; /* moved, as the op model counts them */
  double ns;
  double vs_copy;
} PnCalTorchKernel;

/* A wgrad GEMM accumulating into main_grad (microbench gemm_accum): its time over the plain
 * GEMM's, both measured alternately. */
typedef struct {
  int64_t m, n, k;
  bool fp8, into_fp32;
  double ratio;
} PnCalGemmAccum;

/* spinner_mem: the spinner's CTAs copy 8 MiB each in a loop (HBM traffic beside the GEMM) */
typedef enum {
  PN_CAL_SPINNER,
  PN_CAL_SM_TARGET,
  PN_CAL_SPINNER_SM_TARGET,
  PN_CAL_SPINNER_MEM,
  PN_CAL_OTHER
} PnCalVariant;

typedef struct {
  int64_t m, n, k;
  bool fp8;
  PnCalVariant variant;
  int sms_held;
  double slowdown;
  double baseline_ns; /* the same GEMM alone with all SMs, timed alternately (0 = not recorded) */
} PnCalContention;

/* A real NCCL collective on 2+ GPUs beside a copy kernel on k SMs, or beside an idle spinner
 * holding them (microbench/mb_copy_nccl_overlap.cu, kind "copy_nccl_overlap", mode coll_beside). */
typedef struct {
  PnCollKind kind;
  int nranks, ctas;               /* ctas: the SMs its kernel was seen to hold */
  int k;                          /* SMs of the copy (or the idle spinner) */
  bool copy;                      /* beside a copy kernel, else an idle spinner */
  double busbw;                   /* the collective alone, bytes/ns of bus bandwidth */
  double slowdown;                /* its time beside the copy (or spinner) over alone */
  double copy_alone, copy_beside; /* the copy's bandwidth on its k SMs (copy rows) */
} PnCalCopyNccl;

/* How HBM bandwidth is shared on one GPU (microbench/mb_hbm_share.cu, kind "hbm_share"): two
 * users A and B, each alone and both at once (bytes/ns; for a GEMM, A is its speed relative to
 * the GEMM beside an idle spinner on the same SMs: a_alone = 1). */
typedef enum {
  PN_CAL_HBM_COPY_ALONE, /* A: a copying spinner on sms_a SMs (`spinner` layout: mb_gemm_contention's) */
  PN_CAL_HBM_COPY_PAIR,  /* A on sms_a SMs, B on sms_b SMs, two copy kernels */
  PN_CAL_HBM_CE,         /* A: a copy-engine D2D copy, B: a copy kernel on sms_b SMs */
  PN_CAL_HBM_GEMM        /* A: a GEMM on the other SMs, B: a copying spinner on sms_b SMs */
} PnCalHbmMode;

typedef struct {
  PnCalHbmMode mode;
  bool spinner_layout; /* COPY_ALONE: the spinner's layout (8 MiB per CTA), else the "hbm" layout */
  int sms_a, sms_b;
  double a_alone, a_with, b_alone, b_with;
  int64_t m, n, k; /* GEMM */
  bool fp8;
  double gemm_plain_ns, gemm_idle_ns; /* GEMM: alone with all SMs, and beside the idle spinner */
} PnCalHbm;

typedef struct {
  PnCollKind kind;
  int ctas; /* 0 = NCCL default */
  int nranks;
  double bytes; /* nccl-tests size */
  double ns;
  double busbw_bytes_per_ns;
} PnCalColl;

/* A GEMM beside a real NCCL collective on every GPU of a group (microbench gemm_nccl_overlap,
 * mode "covered": GEMMs back to back for as long as the collective runs). */
typedef struct {
  int64_t m, n, k;
  int ctas; /* 0 = NCCL default */
  int nranks;
  bool sm_margin; /* the GEMM restricted to the SMs the collective leaves (TE set_sm_margin) */
  double rate;    /* GEMM speed while the collective ran, relative to the same GEMM alone */
  PnCollKind kind;
  double bytes;         /* the collective's nccl-tests size */
  double coll_alone_ns; /* the collective alone */
  double coll_slowdown; /* its time beside the GEMMs over its time alone */
  double gemm_alone_ns; /* one GEMM alone with all SMs */
} PnCalNcclOverlap;

typedef struct {
  double bytes;
  double ns;
  int mem_class; /* memory rows: PnMemClass, or -1 for kernels no op behaves like (cudaMemcpy) */
} PnCalBytes;

typedef struct {
  int blocks; /* CTAs */
  bool pull;  /* loading from the peer (pull_1to0), else pushing both ways (push_bidir) */
  double bytes;
  double ns;
} PnCalP2p;

/* A kernel's GPU time with the host far ahead (mb_launch "gpu_floor" rows): `n` kernels of one
 * class back to back, issued one by one on a stream or as one CUDA graph, time / n. */
typedef enum { PN_CAL_FLOOR_EMPTY, PN_CAL_FLOOR_COPY, PN_CAL_FLOOR_GEMM, PN_CAL_FLOOR_OTHER } PnCalFloorClass;
typedef struct {
  PnCalFloorClass cls;
  bool graph;  /* issued as one CUDA graph (else back to back on a stream) */
  double size; /* copy: bytes moved (read + write); gemm: m = n = k; empty: 0 */
  double gpu_ns;
} PnCalFloor;

/* One host-side row of mb_host.py (kind "host_torch"). `test` is the row's: "op" (name = the op,
 * mode no_grad / grad / graph), "sync" (name = what), "cpu" (name = what, host_ns = ns per loop
 * iteration), "collective" (name = the call, mode "async" or "blocking"). */
typedef struct {
  char test[16];
  char name[48];
  char mode[16];
  double host_ns, gpu_ns; /* gpu_ns NAN where the row has none */
} PnCalHostRow;

/* A "layer" row of mb_host.py: a transformer layer's forward + backward from an idle GPU, per
 * layer of a stack. host_fwd_ns / host_bwd_ns are NAN for graphed_whole (one replay), the kernel
 * counts NAN where the profiler did not count them. */
typedef struct {
  char size[16];    /* "tiny", "h2048" */
  char variant[24]; /* "eager", "graphed_per_layer", "graphed_whole" */
  int layers;
  double host_fwd_ns, host_bwd_ns, host_ns, gpu_ns;
  double kernels_per_layer, kernels_fwd_per_layer;
} PnCalLayer;

/* A row of mb_megatron_host.py (kind "megatron_host"): a stack of Megatron-Core's own local-spec
 * transformer layers (its Python, its autograd functions, its DDP hooks), host time of the
 * forward and of the backward per layer, and the CUDA kernels each launches per layer. */
typedef struct {
  char variant[16]; /* "gpt", "llama" */
  char size[16];    /* "tiny", "full" */
  bool fsdp;        /* wrapped in Megatron-FSDP (wrapper "fsdp"), else in Megatron-Core's DDP */
  bool moe_block;   /* a row of mb_megatron_moe_host.py (test "moe_block"): variant "dense", "moe1", "moe8" */
  bool te_shaped;   /* spec "te_shaped": the TE spec's structure with plain PyTorch modules in place of TE's */
  int experts;      /* moe_block: local experts (0: the dense layer) */
  int round;        /* the measurement round: a DDP and an FSDP row of one round and shape pair up */
  double host_fwd_ns, host_bwd_ns;
  double kernels_fwd, kernels_bwd;
} PnCalMegatronLayer;

/* A row of mb_host_ref.py (kind "host_ref"): per round, the reference call's host time (one
 * torch.nn.Linear(2048, 2048) bf16 forward on 8192 tokens, parameters requiring grad) or, in the
 * same minute, the eager h2048 layer's forward host time per layer. */
typedef struct {
  int round;
  bool layer;     /* the eager layer row, else the reference call */
  double host_ns; /* the call's host time, or the layer's forward host time per layer */
} PnCalHostRef;

/* The kinds of result file microbench/ writes (their "kind"). */
typedef enum {
  PN_CAL_KIND_GEMM,
  PN_CAL_KIND_CONTENTION,
  PN_CAL_KIND_ATTENTION,
  PN_CAL_KIND_MEMORY,
  PN_CAL_KIND_COLLECTIVE,
  PN_CAL_KIND_COPY_ENGINE,
  PN_CAL_KIND_NCCL_OVERLAP,
  PN_CAL_KIND_LAUNCH,
  PN_CAL_KIND_HOST_TORCH,
  PN_CAL_KIND_GEMM_ACCUM,
  PN_CAL_KIND_TORCH_MEM,
  PN_CAL_KIND_UNFUSED_ATTN,
  PN_CAL_KIND_HBM_SHARE,
  PN_CAL_KIND_COPY_NCCL,
  PN_CAL_KIND_P2P_SM,
  PN_CAL_KIND_MEGATRON_HOST,
  PN_CAL_KIND_HOST_REF,
  PN_CAL_KINDS
} PnCalKind;

/* The kind's name in result files ("gemm", "gemm_contention", ...). */
const char *pn_cal_kind_name(PnCalKind k);

/* Where the rows of one kind were measured, from the result files' env: what the plots and the
 * profile's calibration date say. */
typedef struct {
  char gpu[128];      /* nvidia-smi's name ("" = no file of the kind); several names joined by " + " */
  int gpus;           /* GPUs the benchmark ran on (the most over the files; 0 = not recorded) */
  char date[11];      /* the day of the newest file, YYYY-MM-DD ("" = not recorded) */
  char files[512];    /* the files' paths, joined by " + " */
  char host_cpu[128]; /* the host CPU (env.host_cpu, "" = not recorded) and how many it had online */
  int host_cpus;
} PnCalOrigin;

typedef struct {
  GArray *gemm;          /* of PnCalGemm */
  GArray *contention;    /* of PnCalContention */
  GArray *attn;          /* of PnAttnPoint (with batch) */
  GArray *memory;        /* of PnCalBytes: memory-bound kernels */
  GArray *coll;          /* of PnCalColl */
  GArray *copy;          /* of PnCalBytes: one-way peer copies */
  GArray *nccl_overlap;  /* of PnCalNcclOverlap: read for the check, not fitted */
  GArray *floor;         /* of PnCalFloor */
  GArray *host;          /* of PnCalHostRow */
  GArray *layers;        /* of PnCalLayer */
  GArray *accum;         /* of PnCalGemmAccum */
  GArray *bmm;           /* of PnCalGemm (with batch): the unfused attention's torch.bmm / baddbmm */
  GArray *torch_kernels; /* of PnCalTorchKernel */
  GArray *hbm;           /* of PnCalHbm */
  GArray *copy_nccl;     /* of PnCalCopyNccl */
  GArray *p2p;           /* of PnCalP2p: CTAs pushing to or loading from a peer (mb_p2p_sm) */
  GArray *megatron;      /* of PnCalMegatronLayer */
  GArray *host_ref;      /* of PnCalHostRef */
  int sm_count;          /* from the measurements' env (0 = unknown) */
  PnCalOrigin origin[PN_CAL_KINDS];
} PnCalData;

/* The median of a GArray of double (sorted in place; NAN when empty). */
double pn_calib_median(GArray *v);

void pn_cal_data_init(PnCalData *d);
void pn_cal_data_clear(PnCalData *d);

/* What the host fit (host_torch and launch rows) replaced, and the measured figures each value
 * was derived from (for the sources the writer gives them). */
typedef struct {
  bool kernel;                              /* kernel_ns, kernel_bwd_ns */
  double eager_fwd_ns, eager_bwd_ns;        /* the h2048 eager layer, per layer */
  double kernels_fwd, kernels_bwd;          /* its kernels in the forward, in the backward */
  bool collective;                          /* collective_ns */
  int collective_rows;                      /* async collective calls it is the median of */
  bool p2p, sync, graph_layer, graph_whole; /* p2p_ns, sync_ns, graph_layer_*_ns, graph_launch_ns */
  int whole_layers;                         /* layers in the graph replayed whole */
  bool cpu, python_loop;                    /* cpu, python_loop_ns */
  bool launch;                              /* kernel_launch_ns */
  double empty_stream_ns, empty_graph_ns;   /* the empty kernel's gpu_floor rows */
  bool floor[PN_FLOOR_N];                   /* kernel_floor_ns, per class */
  double floor_size[PN_FLOOR_N];            /* the row each floor is: GEMM m = n = k, copy bytes */
  PnCalOrigin host_from, launch_from;       /* where the host_torch and launch rows were measured */
  int local_layer_rows;                     /* megatron_host rows local_layer_*_ns are the median of (0: kept) */
  int fsdp_unit_pairs;    /* (DDP, FSDP) megatron_host row pairs fsdp_unit_*_ns are the median of (0: kept) */
  int moe_layer_pairs;    /* (dense, one-expert MoE) tiny moe_block row pairs moe_layer_*_ns are the median of */
  int moe_expert_pairs;   /* (one-expert, E-expert) moe_block row pairs moe_expert_*_ns are the median of */
  int te_layer_pairs;     /* (local, te_shaped) megatron_host row pairs te_layer_*_ns are the median of */
  int ref_rounds;         /* host_ref rounds ref_linear_ns is the median of (0: kept) */
  PnCalOrigin ref_from;   /* where they were measured */
  PnCalOrigin local_from; /* where they were measured */
} PnCalHostFitted;

/* Which parts of a profile a fit replaced (so the writer can update their sources). */
typedef struct {
  bool gemm_bf16, gemm_fp8, gemm_sm_scaling, gemm_sm_limit_scaling, attn, hbm, coll, copy, mem_classes;
  int gemm_bf16_points, gemm_fp8_points, attn_points, coll_rows;
  int gemm_accum_points[2][2];      /* [fp8][into fp32]: points of each gemm_accum table fitted (0: kept as it was) */
  PnCalOrigin accum_from;           /* where the gemm_accum rows were measured */
  PnCalOrigin torch_mem_from;       /* where the torch_mem rows (the dropout class) were measured */
  int bmm_points;                   /* points of the bmm_bf16 table fitted (0: kept as it was) */
  int torch_kernel_points[PN_TK_N]; /* points of each torch_kernel_vs_copy curve fitted (0: kept) */
  PnCalOrigin unfused_from;         /* where the unfused_attn rows were measured */
  int hbm_share_rows[2];            /* [fp8]: GEMMs beside copying spinners their pressure and demand were fitted on */
  int hbm_curve_points;             /* points of the hbm_pressure curve (and mem_sm_scaling) fitted (0: kept) */
  bool hbm_curve_scaled;            /* that curve was measured on another GPU model, scaled to this one's HBM */
  int hbm_nccl_rows;                /* collectives beside copy kernels nccl_bytes_per_busbw_byte was fitted on */
  PnCalOrigin hbm_nccl_from;        /* where they were measured */
  PnCalOrigin hbm_share_from;       /* where the hbm_share rows (the spinner's bandwidth) were measured */
  PnCalOrigin hbm_contention_from;  /* where the gemm_contention rows (spinner_mem) were measured */
  int ub_push_points;               /* points of ub_push_bytes_per_ns fitted (0: kept as it was) */
  int ub_pull_points;               /* and of ub_pull_bytes_per_ns */
  PnCalOrigin ub_push_from;         /* where the p2p_sm rows were measured */
  PnCalHostFitted host;
} PnCalFitted;

/* Replaces the tables and figures of `p` the data covers, and sets p->calibrated to the day of
 * the newest measurement fitted ("" when no result file says). Fails when the data disagree
 * with the profile (a different SM count). */
gboolean pn_calib_fit(const PnCalData *d, PnHwProfile *p, PnCalFitted *fitted, GError **error);

/* One measured case and its leave-one-out prediction, for the calibration plots (--plot-data),
 * by series: "gemm_bf16", "gemm_fp8", "attn_fwd", "attn_bwd" (x = FLOPs, values in TFLOP/s);
 * "sm_held", "sm_margin" (x = SMs held, values = median slowdown over the shapes);
 * "mem_copy", "mem_norm", "mem_activation", "mem_optimizer" (x = bytes moved, values in GB/s);
 * "nccl_<collective>" (group = GPUs, x = message bytes, values = bus bandwidth in GB/s, NCCL's
 * default channels). */
typedef struct {
  const char *series;
  int group; /* nccl_*: GPUs in the group; 0 otherwise */
  double x, measured, predicted;
  double error; /* predicted / measured time - 1 (for rates: measured / predicted rate - 1) */
} PnCalPoint;

/* Leave-one-out over one table of the profile: each of its points predicted, through the
 * simulator's own lookup, by the table without that point. A table replays its own points
 * exactly; this is how far its interpolation is off at a shape, size or SM count it lacks. */
typedef struct {
  const char *table; /* the profile's key (and which of its rows) */
  GArray *errors;    /* of double: predicted / measured time - 1 */
} PnCalLoo;

/* Replay of every measured case through the simulator's cost model with profile `p`: the
 * relative errors (predicted / measured - 1), per kind, in `errors` (of double). */
typedef struct {
  GArray *gemm, *attn, *memory;
  GArray *gemm_accum;          /* each measured wgrad accumulating into main_grad: the profile's accumulating
                                  price over its plain price, against the measured ratio */
  GArray *bmm;                 /* each point of the bmm_bf16 table through pn_cost_bmm_ns */
  GArray *bmm_rows;            /* each measured torch.bmm / baddbmm (qk, pv, dp, dv, dq, dk) through
                                  pn_cost_bmm_ns: the ops of one shape share its point, their median */
  GArray *torch_kernels;       /* each measured unfused-attention kernel through pn_cost_torch_kernel_ns: the
                                  copy class's time of its bytes over the ratio curve at its sequence */
  GArray *ub_push;             /* each mb_p2p_sm push_bidir / pull_1to0 row through the profile's ub_push_bytes_per_ns /
                                  ub_pull_bytes_per_ns */
  GArray *coll_default;        /* collectives at NCCL's default channel count */
  GArray *coll_ctas;           /* collectives with NCCL_MIN_CTAS = NCCL_MAX_CTAS forced */
  GArray *coll_outliers;       /* measurements slower than a larger message of the same collective */
  GArray *nccl_overlap;        /* GEMM beside a real NCCL collective, rate predicted from the SMs it holds */
  GArray *nccl_overlap_margin; /* same, the GEMM restricted to the other SMs (the model: no slowdown) */
  GArray *coll_groups;         /* of int: the group sizes of the collective rows, ascending */
  GPtrArray *coll_by_group;    /* of GArray of double, one per coll_groups entry: its default-channel rows */
  GPtrArray *coll_group_loo;   /* same rows predicted with their group size's rows left out of the profile's
                                  table (interpolated between the neighbouring sizes; empty for the smallest
                                  and largest size, which nothing brackets) */
  GArray *contention;          /* every (shape, SMs held) row */
  GArray *contention_median;   /* the median slowdown over shapes per SMs held (what the curve fits) */
  GArray *loo;                 /* of PnCalLoo, one per table of the profile that has points */
  GArray *points;              /* of PnCalPoint: measured vs leave-one-out, for plots */
  GArray *memory_other;        /* memory rows of kernels no op behaves like (cudaMemcpy), at hbm_bytes_per_ns */
  GArray *host_layer_fit;      /* the h2048 eager layer's host time: forward kernels x kernel_ns + backward kernels
                                  x kernel_bwd_ns against host_ns (the size the host figures are derived from) */
  GArray *host_local_layer;    /* each megatron_host row's forward and backward host time per layer: its kernels at
                                  kernel_ns / kernel_bwd_ns plus local_layer_fwd_ns / local_layer_bwd_ns */
  GArray *host_fsdp_unit;      /* the same for the rows under Megatron-FSDP, plus fsdp_unit_fwd_ns / _bwd_ns and
                                  its collectives' launches at collective_ns */
  GArray *host_ref;            /* each host_ref round's reference call: ref_linear_ns x the round's eager layer
                                  forward over the profile's (kernels x kernel_ns) */
  GArray *host_te_layer;       /* each te_shaped row from its local twin: the twin's host time over its prediction
                                  (the minute's host speed) x (its kernels at kernel_ns / kernel_bwd_ns plus
                                  te_layer_fwd_ns / te_layer_bwd_ns) */
  GArray *host_moe_layer;      /* each one-expert moe_block row's host time per layer from its dense twin's: the kernels
                                  it adds at kernel_ns / kernel_bwd_ns plus moe_layer_fwd_ns / _bwd_ns */
  GArray *host_moe_expert;     /* each E-expert moe_block row from its one-expert twin plus E - 1 experts at
                                  moe_expert_fwd_ns / _bwd_ns and their GEMM launches */
  GArray *host_layer_tiny;     /* the same for the tiny layer, not used by the fit (a cross-check) */
  GArray *floor_copy;          /* a copy issued on a stream: max(memory floor, bytes / copy bandwidth) +
                                  kernel_launch_ns against the gpu_floor stream rows */
  GArray *floor_gemm;          /* same for a GEMM: max(GEMM floor, its table price) + kernel_launch_ns */
  /* HBM sharing (hbm.c), with the profile's hbm_share on: */
  GArray *hbm_gemm;      /* a GEMM's slowdown beside a copying spinner over beside an idle one */
  GArray *hbm_spinner;   /* the copying spinner's bandwidth beside the GEMM (as a time error) */
  GArray *hbm_pair;      /* two copy kernels on disjoint SMs at once: each one's bandwidth */
  GArray *hbm_ce;        /* a copy-engine copy beside a copy kernel: each one's bandwidth */
  GArray *hbm_nccl_gemm; /* a GEMM beside a real NCCL collective: its rate, SMs held and HBM shared */
  GArray *hbm_nccl_coll; /* the collective's slowdown beside the GEMMs */
  GArray *hbm_copy_nccl; /* a real NCCL collective's slowdown beside a copy kernel on k SMs (fitted: bytes per byte) */
  GArray *hbm_nccl_copy; /* that copy kernel's bandwidth beside the collective (as a time error) */
} PnCalCheck;

void pn_calib_check(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out);
void pn_cal_check_clear(PnCalCheck *c);

#define PN_CALIB_ERROR (pn_calib_error_quark())
GQuark pn_calib_error_quark(void);
typedef enum { PN_CALIB_ERROR_INVALID } PnCalibError;

#endif
