/* cost.h — how long a kernel takes alone on a GPU with all its SMs.
 *
 * GEMMs and attention are priced from the profile's calibration tables (measured by microbench/)
 * when a measured point is close enough; otherwise by a roofline: FLOPs / (peak * efficiency)
 * with wave quantization over tiles, and memory-bound kernels by bytes / HBM bandwidth.
 * PnCostSource tells which was used, so reports can say how much rests on fallbacks.
 */
#ifndef PN_HW_COST_H
#define PN_HW_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/profile.h"

typedef enum { PN_DT_BF16, PN_DT_FP8, PN_DT_FP32, PN_DT_NONE } PnDtype;
typedef enum { PN_COST_TABLE, PN_COST_INTERPOLATED, PN_COST_ROOFLINE } PnCostSource;

/* C[m,n] = A[m,k] B[k,n]: 2mnk FLOPs. */
double pn_cost_gemm_ns(const PnHwProfile *hw, int64_t m, int64_t n, int64_t k, PnDtype dt, PnCostSource *src);
/* The same GEMM adding its product into an output of dtype `into` (PN_DT_FP32 or PN_DT_BF16:
 * main_grad's), beta = 1, as a wgrad with gradient-accumulation fusion runs: priced from the
 * profile's gemm_accum table of (dt, into) when it has one, else as pn_cost_gemm_ns. */
double pn_cost_gemm_accum_ns(const PnHwProfile *hw, int64_t m, int64_t n, int64_t k, PnDtype dt, PnDtype into,
                             PnCostSource *src);
/* A strided-batched bf16 GEMM of `batch` matrices C[m,n] = A[m,k] B[k,n] (torch.bmm / baddbmm):
 * from the profile's bmm_bf16 table (nearest points in log(batch, m, n, k)), else as one GEMM of
 * (batch*m, n, k). */
double pn_cost_bmm_ns(const PnHwProfile *hw, int64_t batch, int64_t m, int64_t n, int64_t k, PnCostSource *src);
/* Causal flash attention, per GPU: batch, sequence (q = kv), heads and query groups on this GPU,
 * query / key heads of head_dim, value heads of head_dim_v (0: head_dim; MLA's differ). From the
 * profile's attn_bf16 rows of those two widths (nearest shapes, at their FLOP rate: QK^T counts
 * head_dim, PV head_dim_v); with none of a narrower value head, the head_dim rows' rate. */
double pn_cost_attention_ns(const PnHwProfile *hw, int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads,
                            int64_t kv_heads, int64_t head_dim, int64_t head_dim_v, bool causal, bool backward,
                            PnCostSource *src);
/* Memory-bound kernel classes, each with its measured bandwidth curve (microbench memory rows:
 * copy, rmsnorm, gelu/swiglu, adam). */
/* PN_MEM_DROPOUT: a kernel drawing random numbers for dropout and writing or reading its mask
 * (Megatron-Core's bias-dropout-add with hidden_dropout > 0, forward and backward). */
typedef enum { PN_MEM_COPY, PN_MEM_NORM, PN_MEM_ACTIVATION, PN_MEM_OPTIMIZER, PN_MEM_DROPOUT } PnMemClass;

/* Memory-bound kernel moving `bytes` (reads + writes): bytes / hbm_bytes_per_ns. */
double pn_cost_memory_ns(const PnHwProfile *hw, double bytes);
/* Same, at the bandwidth measured for its class and size. Below the smallest size of the curve
 * the bandwidth of that size is used: small kernels' measured times are dominated by the
 * launch and timing overhead, which kernel_launch_ns already stands for. */
double pn_cost_memory_class_ns(const PnHwProfile *hw, double bytes, PnMemClass cls);
/* One of the unfused paths' PyTorch kernels (PnTorchKernel) moving `bytes` at sequence length
 * `seq`: the copy class's time for those bytes over the kernel's measured ratio to a copy. */
double pn_cost_torch_kernel_ns(const PnHwProfile *hw, double bytes, PnTorchKernel kernel, int64_t seq);
double pn_dtype_bytes(PnDtype dt);

#endif
