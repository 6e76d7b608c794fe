/* profile.h — one GPU system's capabilities: SMs, HBM, peak FLOP/s, links, NCCL behaviour, and
 * the calibration tables measured by microbench/ and fitted by `penumbra calibrate`.
 *
 * Units: bytes, ns, bytes per ns (= GB/s), FLOPs per ns (= GFLOP/s). A PnCurve is piecewise
 * linear between its points (x ascending), clamped at both ends; curves over sizes interpolate
 * in log2(x). Tables with n == 0 mean "not calibrated": the cost model then falls back to the
 * roofline numbers and says so (PnCostSource).
 *
 * Every number in hwprofiles/<name>.json carries a `source`; datasheet figures are placeholders until
 * calibration replaces them. The struct is plain data, filled by io/ and freed here.
 */
#ifndef PN_HW_PROFILE_H
#define PN_HW_PROFILE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* Memory-bound kernel classes with their own measured bandwidth (PnMemClass in cost.h). */
#define PN_PROFILE_MEM_CLASSES 5

/* Collective kinds with their own calibration (the order of PnCollKind in coll.h). */
#define PN_PROFILE_COLL_KINDS 5

typedef struct {
  int n;
  double *x;
  double *y;
  bool log_x; /* interpolate in log2(x) (sizes) */
} PnCurve;

typedef struct {
  int64_t m, n, k; /* C[m,n] = A[m,k] B[k,n] */
  double ns;       /* median measured duration with all SMs */
  int64_t batch;   /* matrices of a strided-batched GEMM (bmm_bf16); 0 or 1 for one GEMM */
} PnGemmPoint;

typedef struct {
  int n;
  PnGemmPoint *pts;
} PnGemmTable;

typedef struct {
  int64_t batch, seq, heads, kv_heads, head_dim; /* per GPU, causal */
  int64_t head_dim_v;                            /* the value heads' (MLA: 128 beside 192); head_dim otherwise */
  double fwd_ns, bwd_ns;
} PnAttnPoint;

typedef struct {
  int n;
  PnAttnPoint *pts;
} PnAttnTable;

#define PN_PROFILE_MAX_TABLE_RANKS 1024 /* measured groups (one node) are far smaller */
typedef struct {
  int kind;     /* PnCollKind */
  int ranks;    /* GPUs in the group (one node, NVLink / NVSwitch) */
  int ctas;     /* channels (NCCL_MIN_CTAS = NCCL_MAX_CTAS); NCCL's default count for default rows */
  double bytes; /* nccl-tests size */
  double ns;    /* median measured time */
} PnCollPoint;

typedef struct {
  int n;
  PnCollPoint *pts; /* in no particular order (pn_coll_cost selects and sorts) */
} PnCollTable;

/* A GEMM's measured slowdown while `sms_held` SMs run another kernel (variant 0: the GEMM is
 * launched for all SMs; 1: it is restricted to the others, TE's set_sm_margin). */
typedef struct {
  int64_t m, n, k;
  bool fp8;
  int variant;
  int sms_held;
  double slowdown;
} PnContentionPoint;

/* Per measured GEMM shape, its two contention curves (x = SMs usable, y = throughput relative to
 * all SMs), built from the points by pn_hw_profile_index_contention(). */
typedef struct {
  int64_t m, n, k;
  bool fp8;
  PnCurve curve[2];
} PnShapeContention;

/* The PyTorch kernels of Megatron-Core's unfused paths (DotProductAttention, the rotary embedding
 * without fusion), each priced at the copy class's bandwidth times its measured ratio to a copy
 * (microbench/mb_unfused_attn.py): masked_fill_ of the causal mask and the out-of-place
 * masked_fill of a gradient (autograd runs the in-place kernel in this attention's backward, so the
 * op model prices both with PN_TK_MASKED_FILL), softmax and
 * its backward, dropout of the probabilities and its backward (the [B, s, s] scores), the GQA
 * repeat_interleave of k and v, the context's permute().contiguous(), the unfused RoPE forward and
 * backward (five kernels each); and the clamps of a GLU's halves with activation_func_clamp_value
 * (two clamps and a cat forward, nine kernels backward: microbench/mb_torch_mem.py glu_clamp). */
typedef enum {
  PN_TK_MASKED_FILL,
  PN_TK_MASKED_FILL_BWD,
  PN_TK_SOFTMAX_FWD,
  PN_TK_SOFTMAX_BWD,
  PN_TK_DROPOUT_FWD,
  PN_TK_DROPOUT_BWD,
  PN_TK_REPEAT_INTERLEAVE,
  PN_TK_CONTEXT_COPY,
  PN_TK_ROPE_FWD,
  PN_TK_ROPE_BWD,
  PN_TK_GLU_CLAMP_FWD,
  PN_TK_GLU_CLAMP_BWD,
  PN_TK_N
} PnTorchKernel;

/* Kernel classes with a measured floor (PnHwProfile.kernel_floor_ns). */
typedef enum { PN_FLOOR_GEMM, PN_FLOOR_ATTN, PN_FLOOR_MEM, PN_FLOOR_N } PnFloorClass;

/* The host thread that launches a GPU's kernels (graph.h, "The host"): what launching and
 * synchronizing cost it. All 0 (a profile without a "host" section): the host launches
 * everything at once, as before the host was modelled. Measured by microbench/mb_host.py on one
 * machine, whose CPU and Python speed the profile records (`cpu`, `python_loop_ns`) so that a
 * user can set them beside another host's; the simulator does not read those two. */
typedef struct {
  double kernel_ns;     /* one kernel launched by an eager PyTorch op in the forward (dispatch + cudaLaunchKernel) */
  double kernel_bwd_ns; /* the same under autograd's backward */
  double module_ns;     /* Python of one framework module call (a TE module), beyond its kernels' launches */
  double local_layer_fwd_ns; /* Megatron-Core's local transformer layer (--transformer-impl local): its forward's
                                Python per layer beyond its kernels' launches (mb_megatron_host.py) */
  double local_layer_bwd_ns; /* the same for its backward (autograd functions, DDP hooks) */
  double te_layer_fwd_ns;    /* Megatron-Core's own Python around a Transformer Engine layer (the layer, attention
                                and MLP forwards, the QKV split, RoPE, bias-dropout-adds, DDP hooks) per forward,
                                beyond its kernels' launches and the TE modules' own (module_ns) */
  double te_layer_bwd_ns;    /* the same for its backward */
  double ref_linear_ns;      /* one torch.nn.Linear(2048, 2048) bf16 forward on 8192 tokens, host time per call,
                                at this profile's host speed (mb_host_ref.py): what hosts are compared by */
  double dgx_ref_linear_ns;  /* the same on a DGX H100 / H200 host (Xeon Platinum 8480C), published */
  double fsdp_unit_fwd_ns;   /* Megatron-FSDP's hooks (optim_grads_params) per FSDP unit and forward, beyond its
                                collective's launch: the pre-forward gather and the release (mb_megatron_host.py) */
  double fsdp_unit_bwd_ns;   /* the same per backward: the pre-backward gather, the gradient copy, the reduce-scatter */
  double moe_layer_fwd_ns;   /* Megatron-Core's MoE layer's Python beyond a dense layer's and beyond its kernels'
                                launches, per forward: router, token dispatcher, permutation (mb_megatron_moe_host.py) */
  double moe_layer_bwd_ns;   /* the same per backward */
  double moe_expert_fwd_ns;  /* SequentialMLP (no moe_grouped_gemm): each local expert's call, per forward, beyond
                                the two GEMM launches a grouped GEMM is charged per expert (mb_megatron_moe_host.py) */
  double moe_expert_bwd_ns;  /* the same per backward, beyond four GEMM launches */
  double collective_ns;      /* one torch.distributed NCCL call */
  double p2p_ns;             /* one batched send/recv (batch_isend_irecv + wait) */
  double sync_ns;            /* from the end of the GPU work a synchronization waits for to the host going on */
  double graph_launch_ns;    /* one replay of a graph captured whole (CUDAGraph.replay: a forward + backward) */
  double graph_layer_fwd_ns; /* a layer's forward as a per-layer CUDA graph: the replay and its autograd wrapper */
  double graph_layer_bwd_ns; /* the same layer's backward graph */
  double python_loop_ns;     /* information: one iteration of a pure-Python loop on this host (its speed) */
  char cpu[128];             /* information: the host CPU measured ("" = not recorded) */
} PnHostProfile;

/* HBM bandwidth shared by a GPU's concurrent users (hw/hbm.h): on when the profile has an
 * "hbm_share" section. A compute kernel's demand is the bytes it moves to and from HBM over its
 * time alone (PnTask.hbm_bytes): memory-bound kernels their bytes, attention its inputs and
 * outputs, a GEMM its FLOPs times the bytes per FLOP below; its pressure per SM is 1 for
 * memory-bound kernels and gemm_pressure for GEMMs and attention. Both GEMM figures are fitted
 * by `calibrate` from GEMMs timed beside copying spinners (calib/hbm.c). */
typedef struct {
  bool on;
  double gemm_bytes_per_flop[2];    /* [0] bf16, [1] fp8 inputs: a GEMM's HBM demand per FLOP */
  double gemm_pressure[2];          /* the same: its pressure per SM, in SM-equivalents of a streaming copy */
  double nccl_bytes_per_busbw_byte; /* HBM bytes an NCCL collective moves per byte of bus bandwidth, per GPU;
                                       0: 3, its data path's least (hw/exec_links.c) */
  PnCurve pressure;                 /* x = pressure (SM-equivalents), y = bytes/ns HBM delivers: a copy kernel alone
                                       on x SMs */
} PnHbmShare;

typedef struct PnHwProfile {
  char name[64];
  char gpu[64];
  char calibrated[11]; /* the day its calibration data was measured, YYYY-MM-DD ("" = not recorded) */
  /* compute */
  int sm_count;
  double hbm_bytes;
  double hbm_bytes_per_ns;       /* achievable HBM bandwidth (copy kernels) */
  double peak_bf16_flops_per_ns; /* dense datasheet peak */
  double peak_fp8_flops_per_ns;
  double gemm_efficiency;       /* fallback: fraction of peak a large GEMM reaches */
  double attn_efficiency;       /* fallback: fraction of bf16 peak flash attention reaches */
  int gemm_tile_m, gemm_tile_n; /* fallback wave-quantization tile */
  double kernel_launch_ns;      /* fixed cost added to every kernel launched from a stream (a CUDA graph saves it) */
  double kernel_floor_ns[PN_FLOOR_N]; /* shortest time a kernel of each class occupies its stream in a CUDA graph,
                                         kernel_launch_ns aside (ramp and tail); 0 = none */
  PnHostProfile host;
  PnHbmShare hbm_share;
  /* node and links (per GPU, per direction) */
  int gpus_per_node;
  double nvlink_bytes_per_ns;    /* NCCL ring bus bandwidth ceiling inside a node */
  double nvlink_ce_bytes_per_ns; /* copy-engine peer copy */
  int nics_per_node;             /* NICs (rails) of a node; GPUs share them: pn_hw_profile_gpus_per_nic */
  double nic_bytes_per_ns;       /* achievable per NIC (NDR 400 Gb/s: ~46-48 GB/s) */
  /* NCCL */
  double nccl_base_latency_ns;
  double nccl_nvlink_hop_ns;
  double nccl_net_hop_ns;
  int nccl_ctas_nvlink;         /* default CTAs (SMs held) of a collective inside a node */
  int nccl_ctas_net;            /* default CTAs of a collective spanning nodes */
  int nccl_p2p_ctas;            /* CTAs of a send/recv kernel */
  double nccl_cta_bytes_per_ns; /* bus bandwidth one channel can drive */
  /* calibration tables (n == 0 = not calibrated) */
  PnCurve gemm_sm_scaling;                        /* x = SMs usable by the GEMM, y = throughput / throughput(all SMs) */
  PnCurve mem_sm_scaling;                         /* same, for memory-bound kernels */
  PnCurve ub_push_bytes_per_ns;                   /* x = CTAs, y = bytes/ns they push to a peer through NVLink with
                                                     plain stores, both GPUs at once (mb_p2p_sm push_bidir): a
                                                     userbuffers all-gather without multicast (UB_SKIPMC=1) */
  PnCurve ub_pull_bytes_per_ns;                   /* the same CTAs loading from the peer's buffer (pull_1to0): a
                                                     userbuffers reduce-scatter without multicast */
  PnCurve coll_size_efficiency;                   /* x = bytes per rank moved, y = fraction of the link ceiling */
  PnCurve gemm_sm_limit_scaling;                  /* x = SMs a GEMM is restricted to (TE set_sm_margin: cuBLASLt
                                                     SM_COUNT_TARGET) while the others run a comm kernel, y = throughput /
                                                     throughput(all SMs); empty: gemm_sm_scaling is used */
  PnCurve coll_efficiency[PN_PROFILE_COLL_KINDS]; /* per collective (PnCollKind order: AG, RS, AR, A2A, send/recv):
                                       x = bytes per rank, y = bus bandwidth / its large-size value; empty:
                                       coll_size_efficiency */
  double nccl_pair_busbw[PN_PROFILE_COLL_KINDS];  /* large-size bus bandwidth measured for a group of 2 GPUs on
                                        NVLink, per collective (bytes/ns); 0 = nvlink_bytes_per_ns */
  double nccl_pair_latency_ns[PN_PROFILE_COLL_KINDS]; /* smallest-message time of each collective on 2 GPUs
                                       (ns); 0 = base latency + hops */
  PnCurve mem_bandwidth[PN_PROFILE_MEM_CLASSES];      /* per class (elementwise copy, norm, activation, optimizer):
                                            x = bytes moved, y = achieved bytes/ns; empty: hbm_bytes_per_ns */
  int n_contention_points;                            /* measured per shape (calibration gemm_contention_table) */
  PnContentionPoint *contention_points;
  int n_shape_contention; /* derived from the points */
  PnShapeContention *shape_contention;
  PnCollTable nccl_table; /* measured collectives of groups of GPUs inside one node (2, 4, 8 on NVSwitch):
                             interpolated in log(size), log(channels) and log(group size) between measured
                             groups; a group inside a node uses it before the curves above when its size lies
                             within the measured ones */
  double nccl_cta_busbw[PN_PROFILE_COLL_KINDS]; /* large-size bus bandwidth of one channel (NCCL_MAX_CTAS=1), per
                                      collective (bytes/ns); 0 = nccl_cta_bytes_per_ns */
  PnGemmTable gemm_bf16;
  PnGemmTable gemm_fp8;
  /* The same GEMMs accumulating into their output (a wgrad with gradient-accumulation fusion:
   * D = C + A B, beta = 1, D in main_grad's dtype), [input fp8][main_grad fp32]: the measured
   * ratio to the plain GEMM times the plain table's time of that shape (calib.h). Empty: the
   * accumulation is priced as the plain GEMM. */
  PnGemmTable gemm_accum[2][2];
  PnAttnTable attn_bf16;
  /* strided-batched bf16 GEMMs as torch.bmm / torch.baddbmm run them (the unfused attention's
   * QK^T, PV and their gradients), points with `batch`; empty: priced as one GEMM of
   * (batch x m, n, k) from gemm_bf16 */
  PnGemmTable bmm_bf16;
  /* per PnTorchKernel: x = sequence length, y = the kernel's bandwidth relative to the copy class
   * (the copy class's time for the bytes it moved over its measured time); empty: 1 */
  PnCurve torch_kernel_vs_copy[PN_TK_N];
} PnHwProfile;

void pn_hw_profile_free(PnHwProfile *p); /* frees the tables and p; NULL is a no-op */
/* A deep copy (every table duplicated): free it with pn_hw_profile_free. */
PnHwProfile *pn_hw_profile_copy(const PnHwProfile *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnHwProfile, pn_hw_profile_free)

/* Rebuilds shape_contention from contention_points (call after changing the points). */
void pn_hw_profile_index_contention(PnHwProfile *p);
/* Index (>= 0) of the measured shape nearest to a GEMM (log distance over m, n, k), among those
 * of the same dtype within a factor sqrt(2) in every dimension; -1 when there is none (the
 * median curves gemm_sm_scaling / gemm_sm_limit_scaling then apply). */
int pn_hw_profile_nearest_contention(const PnHwProfile *p, int64_t m, int64_t n, int64_t k, bool fp8);

/* GPUs per NIC of a node: gpus_per_node / nics_per_node (2 when 8 GPUs share 4 NICs, 0.5 when
 * each GPU has two). NCCL sends a GPU's inter-node traffic through the NIC(s) nearest to it, its
 * rail, and across nodes the GPUs of a node all send at once: every one of them is in one of the
 * symmetric groups of a collective that spans nodes, and at a stage boundary every GPU of a
 * pipeline stage that fills the node sends to the next. So a GPU gets nic_bytes_per_ns / this of
 * the network: coll.c prices collectives with that share and the executor charges a GPU's NIC
 * this many bytes per byte it moves. A stage narrower than one NIC's GPUs (tp x cp x dp below
 * this) would leave the NIC to fewer senders than charged. 1 when either count is 0 (unset in a
 * profile built in C: one NIC per GPU). */
double pn_hw_profile_gpus_per_nic(const PnHwProfile *p);

/* How many times faster a DGX H100 / H200 host (Xeon Platinum 8480C) runs a training step's host
 * work than this profile's host: host.ref_linear_ns / host.dgx_ref_linear_ns (the same call
 * measured here and published there); 1 when either is unknown. */
double pn_hw_profile_dgx_host_speed(const PnHwProfile *p);

/* The CTAs (channels) NCCL gives each send/recv peer on a communicator that reaches a peer over
 * the network (NCCL 2.28 graph/paths.cc: ncclTopoGetNchannels takes, for a remote peer, the
 * GPU's NICs or ceil(NIC GB/s / NCCL_P2P_PER_CHANNEL_NET_BW = 14), whichever is more;
 * ncclTopoComputeP2pChannelsPerPeer keeps the minimum over all the communicator's peers and
 * ncclTopoComputeP2pChannels rounds it up to a power of two): 4 for a 400 Gb/s rail NIC. Such a
 * communicator uses it for its NVLink peers too; one inside a node uses nccl_p2p_ctas. At most
 * 64 (MAXCHANNELS). */
int pn_hw_profile_p2p_net_ctas(const PnHwProfile *p);

/* Value of the curve at x (clamped at both ends); `dflt` when the curve is empty. */
double pn_curve_eval(const PnCurve *c, double x, double dflt);

#endif
