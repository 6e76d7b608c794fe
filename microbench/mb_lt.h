// mb_lt.h: one cuBLASLt matmul, set up the way Transformer Engine sets up its GEMMs.
//
// Shapes are given as the row-major product C[M,N] = op(A)[M,K] . op(B)[K,N] that the model
// code writes (see gen_shapes.py). cuBLAS is column-major, so the call computes
// C^T[N,M]: cuBLAS m = N, n = M, k = K, and `layout` names cuBLAS's (transa, transb):
//   fprop  Y[T,Nout]  = X[T,Kin] W[Nout,Kin]^T   -> "TN"  (A_c = W, B_c = X)
//   dgrad  dX[T,Kin]  = dY[T,Nout] W[Nout,Kin]   -> "NN"  (A_c = W, B_c = dY)
//   wgrad  dW[Nout,Kin] = dY[T,Nout]^T X[T,Kin]  -> "NT"  (A_c = X, B_c = dY)
// bf16: bf16 A/B/C/D, fp32 accumulate and scale. fp8: e4m3 A/B with per-tensor scale pointers
// (1.0), bf16 C/D, fp32 accumulate; Hopper fp8 needs "TN" (TE transposes in its cast kernels),
// and FAST_ACCUM is on for fprop only, as TE's default recipe does.
// CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET (when > 0) is what TE's set_sm_margin sets.
#pragma once

#include <cublasLt.h>

#include "mb_common.h"

#define MB_CKLT(call)                                                                                                  \
  do {                                                                                                                 \
    cublasStatus_t mb_st_ = (call);                                                                                    \
    if (mb_st_ != CUBLAS_STATUS_SUCCESS) {                                                                             \
      std::fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call, static_cast<int>(mb_st_));      \
      std::exit(3);                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace mb {

struct GemmShape {
  long m = 0, n = 0, k = 0; // row-major C[M,N] = op(A)[M,K] op(B)[K,N]
  char ta = 'T', tb = 'N';  // cuBLAS transa / transb
  bool fp8        = false;
  bool fast_accum = false; // fp8 only
  int sm_target   = 0;     // 0: all SMs
  // Accumulation into the output, as a wgrad GEMM with gradient-accumulation fusion does
  // (D = C + op(A) op(B), beta = 1, C aliasing D): none (beta = 0, bf16 D), into a bf16 or an
  // fp32 D (Megatron's main_grad in the dtype of grad_reduce_in_fp32).
  enum Accum { kNone = 0, kIntoBf16, kIntoFp32 } accum = kNone;
  size_t elt() const { return fp8 ? 1 : 2; }
  size_t a_bytes() const { return elt() * static_cast<size_t>(n) * k; } // A_c holds cuBLAS m x k = N x K
  size_t b_bytes() const { return elt() * static_cast<size_t>(k) * m; } // B_c holds K x M
  size_t d_bytes() const { return (accum == kIntoFp32 ? 4 : 2) * static_cast<size_t>(m) * n; }
  double flops() const { return 2.0 * m * n * k; }
  std::string layout() const { return std::string(1, ta) + tb; }
};

class LtGemm {
public:
  static constexpr size_t kWorkspaceBytes = 64ull << 20;

  explicit LtGemm(cublasLtHandle_t h) : h_(h)
  {
    MB_CK(cudaMalloc(&ws_, kWorkspaceBytes));
    // Two per-tensor scales (1.0), each on its own 256-byte line.
    MB_CK(cudaMalloc(&scale_, 128 * sizeof(float)));
    std::vector<float> one(128, 1.0f);
    MB_CK(cudaMemcpy(scale_, one.data(), one.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~LtGemm()
  {
    release();
    cudaFree(ws_);
    cudaFree(scale_);
  }
  LtGemm(const LtGemm &)            = delete;
  LtGemm &operator=(const LtGemm &) = delete;

  // Builds the descriptors and asks the heuristic for its best algorithm.
  // Returns false (with a reason in err) when cuBLASLt has no algorithm for this case.
  bool setup(const GemmShape &s, std::string *err)
  {
    release();
    s_                      = s;
    const cudaDataType_t in = s.fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const int64_t cm = s.n, cn = s.m, ck = s.k; // cuBLAS dims
    MB_CKLT(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = s.ta == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = s.tb == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    MB_CKLT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    MB_CKLT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (s.fp8) {
      float *sa = scale_, *sb = scale_ + 64;
      MB_CKLT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
      MB_CKLT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
      int8_t fa = s.fast_accum ? 1 : 0;
      MB_CKLT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
    }
    if (s.sm_target > 0) {
      int32_t t = s.sm_target;
      MB_CKLT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &t, sizeof t));
    }
    // Column-major stored shapes: A_c is (cm x ck) after op, B_c is (ck x cn) after op.
    MB_CKLT(cublasLtMatrixLayoutCreate(&a_, in, ta == CUBLAS_OP_T ? ck : cm, ta == CUBLAS_OP_T ? cm : ck,
                                       ta == CUBLAS_OP_T ? ck : cm));
    MB_CKLT(cublasLtMatrixLayoutCreate(&b_, in, tb == CUBLAS_OP_T ? cn : ck, tb == CUBLAS_OP_T ? ck : cn,
                                       tb == CUBLAS_OP_T ? cn : ck));
    MB_CKLT(cublasLtMatrixLayoutCreate(&d_, s.accum == GemmShape::kIntoFp32 ? CUDA_R_32F : CUDA_R_16BF, cm, cn, cm));
    cublasLtMatmulPreference_t pref = nullptr;
    MB_CKLT(cublasLtMatmulPreferenceCreate(&pref));
    size_t wsb = kWorkspaceBytes;
    MB_CKLT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    int nres          = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h_, op_, a_, b_, d_, d_, pref, 1, &res_, &nres);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || nres == 0) {
      if (err)
        *err = "no cuBLASLt algorithm (status " + std::to_string(static_cast<int>(st)) + ")";
      release();
      return false;
    }
    ready_ = true;
    return true;
  }

  // D = op(A) op(B) + beta D: beta = 0 (C aliases D as TE's non-accumulating GEMMs do), or 1
  // when the shape accumulates.
  cublasStatus_t try_run(const void *A, const void *B, void *D, cudaStream_t st) const
  {
    const float alpha = 1.0f, beta = s_.accum == GemmShape::kNone ? 0.0f : 1.0f;
    return cublasLtMatmul(h_, op_, &alpha, A, a_, B, b_, &beta, D, d_, D, d_, &res_.algo, ws_, kWorkspaceBytes, st);
  }
  void run(const void *A, const void *B, void *D, cudaStream_t st) const { MB_CKLT(try_run(A, B, D, st)); }

  // Identity of the chosen algorithm, for the record.
  Row &describe(Row &r) const
  {
    int algo_id = -1, tile = -1, splitk = -1, stages = -1;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&res_.algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof algo_id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&res_.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&res_.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&res_.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    return r.i("algo_id", algo_id)
        .i("tile_id", tile)
        .i("splitk", splitk)
        .i("stages_id", stages)
        .i("algo_workspace_bytes", static_cast<long long>(res_.workspaceSize));
  }

  bool ready() const { return ready_; }

private:
  void release()
  {
    if (a_)
      cublasLtMatrixLayoutDestroy(a_);
    if (b_)
      cublasLtMatrixLayoutDestroy(b_);
    if (d_)
      cublasLtMatrixLayoutDestroy(d_);
    if (op_)
      cublasLtMatmulDescDestroy(op_);
    a_ = b_ = d_ = nullptr;
    op_          = nullptr;
    ready_       = false;
  }

  cublasLtHandle_t h_;
  void *ws_     = nullptr;
  float *scale_ = nullptr;
  GemmShape s_;
  cublasLtMatmulDesc_t op_  = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulHeuristicResult_t res_{};
  bool ready_ = false;
};

// Naive fp32 reference of the same column-major call, to check the layout mapping above.
template <typename T>
__global__ void ref_gemm_kernel(const T *A, const T *B, float *D, long cm, long cn, long ck, bool ta, bool tb)
{
  long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; // row of D_c (0..cm)
  long j = blockIdx.y;                                               // column of D_c (0..cn)
  if (i >= cm)
    return;
  float acc = 0.0f;
  for (long l = 0; l < ck; ++l) {
    float a = static_cast<float>(ta ? A[l + i * ck] : A[i + l * cm]);
    float b = static_cast<float>(tb ? B[j + l * cn] : B[l + j * ck]);
    acc += a * b;
  }
  D[i + j * cm] = acc;
}

// Compares LtGemm against the reference on one small random case. Returns the relative
// Frobenius error; -1 when no algorithm exists, -2 - status when cublasLtMatmul refused.
inline double check_gemm(cublasLtHandle_t h, GemmShape s)
{
  LtGemm g(h);
  std::string err;
  if (!g.setup(s, &err))
    return -1.0;
  void *A, *B, *D;
  float *R;
  MB_CK(cudaMalloc(&A, s.a_bytes()));
  MB_CK(cudaMalloc(&B, s.b_bytes()));
  MB_CK(cudaMalloc(&D, s.d_bytes()));
  MB_CK(cudaMalloc(&R, sizeof(float) * s.m * s.n));
  MB_CK(cudaMemset(D, 0xff, s.d_bytes())); // poison: NaN in bf16
  const size_t na = static_cast<size_t>(s.n) * s.k, nb = static_cast<size_t>(s.k) * s.m;
  dim3 grid(static_cast<unsigned>((s.n + 127) / 128), static_cast<unsigned>(s.m));
  cublasStatus_t st;
  if (s.fp8) {
    fill(static_cast<__nv_fp8_e4m3 *>(A), na, 11);
    fill(static_cast<__nv_fp8_e4m3 *>(B), nb, 12);
    st = g.try_run(A, B, D, 0);
    ref_gemm_kernel<<<grid, 128>>>(static_cast<const __nv_fp8_e4m3 *>(A), static_cast<const __nv_fp8_e4m3 *>(B), R, s.n,
                                   s.m, s.k, s.ta == 'T', s.tb == 'T');
  } else {
    fill(static_cast<__nv_bfloat16 *>(A), na, 11);
    fill(static_cast<__nv_bfloat16 *>(B), nb, 12);
    st = g.try_run(A, B, D, 0);
    ref_gemm_kernel<<<grid, 128>>>(static_cast<const __nv_bfloat16 *>(A), static_cast<const __nv_bfloat16 *>(B), R, s.n,
                                   s.m, s.k, s.ta == 'T', s.tb == 'T');
  }
  MB_CK_LAUNCH();
  MB_CK(cudaDeviceSynchronize());
  std::vector<__nv_bfloat16> d(static_cast<size_t>(s.m) * s.n);
  std::vector<float> r(d.size());
  MB_CK(cudaMemcpy(d.data(), D, d.size() * 2, cudaMemcpyDeviceToHost));
  MB_CK(cudaMemcpy(r.data(), R, r.size() * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    double x = static_cast<double>(__bfloat162float(d[i])), y = r[i];
    num += (x - y) * (x - y);
    den += y * y;
  }
  cudaFree(A);
  cudaFree(B);
  cudaFree(D);
  cudaFree(R);
  if (st != CUBLAS_STATUS_SUCCESS)
    return -2.0 - static_cast<int>(st);
  double e = std::sqrt(num / (den > 0 ? den : 1.0));
  return std::isfinite(e) ? e : 1e30;
}

} // namespace mb
