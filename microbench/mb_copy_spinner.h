// mb_copy_spinner.h: the copy kernel that mb_hbm_share and mb_copy_nccl_overlap run beside other
// work (mb_gemm_contention's spinner_mem kernel with a pass log and a chunk rotation added): one
// 1,024-thread CTA per SM (all the shared memory one block may have), each copying 8 MiB chunks of
// its slice pass after pass until the device flag ctrl[0] is raised; thread 0 logs, at the top of
// every pass, %globaltimer and the phase word ctrl[1] (mb_hbm_share.cu says how the window is
// read from them). With `mem` 0 the CTAs only hold their SMs (a nanosleep loop); `log_idle_start`
// 1 makes such an idle spinner log its first pass, so that its start can be read too.
// Header-only, included by one .cu file each.
#pragma once

#include "mb_common.h"

namespace {

constexpr int kSpinThreads  = 1024;
constexpr size_t kPassBytes = 8ull << 20;       // per CTA per pass, each direction (spinner_mem's 8 MiB)
constexpr double kPassMoved = 2.0 * kPassBytes; // read + written per pass
constexpr int kLogCap       = 4096;             // pass marks per CTA

struct PassMark {
  unsigned long long t_ns; // %globaltimer at the top of the pass
  int phase;               // the phase word read just before
  int pad;
};

__device__ __forceinline__ unsigned long long global_ns()
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}

// ctrl[0]: stop, ctrl[1]: phase. chunks: 8 MiB chunks in this CTA's slice.
__global__ void __launch_bounds__(kSpinThreads, 1)
    copy_spinner(volatile int *ctrl, volatile int *started, const float4 *src, float4 *dst, int chunks, int mem,
                 int log_idle_start, PassMark *log, int *count)
{
  extern __shared__ float4 smem[];
  __shared__ int done;
  if (threadIdx.x == 0) {
    started[blockIdx.x] = 1;
    __threadfence_system();
  }
  const size_t per_cta = kPassBytes / sizeof(float4);
  const float4 *s0     = src + blockIdx.x * per_cta * chunks;
  float4 *d0           = dst + blockIdx.x * per_cta * chunks;
  const float4 *s      = s0;
  float4 *d            = d0;
  PassMark *lg         = log + static_cast<size_t>(blockIdx.x) * kLogCap;
  int n = 0, c = 0;
  for (;;) {
    if (threadIdx.x == 0) {
      done           = ctrl[0];
      const int ph   = ctrl[1];
      const auto now = global_ns();
      if ((mem || (log_idle_start && n == 0)) && n < kLogCap)
        lg[n] = PassMark{now, ph, 0};
      ++n;
    }
    __syncthreads();
    if (done)
      break;
    if (mem) {
      for (size_t i = threadIdx.x; i < per_cta; i += blockDim.x)
        d[i] = s[i];
      if (++c == chunks)
        c = 0;
      s = s0 + c * per_cta;
      d = d0 + c * per_cta;
    } else {
      __nanosleep(500);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    count[blockIdx.x] = n;
  if (threadIdx.x == 0 && smem[0].x == 1234.5f)
    d[0] = smem[0]; // keep smem allocated
}

// Counts the 32-bit words that differ between a and b (the copies' check).
__global__ void count_mismatch(const uint4 *a, const uint4 *b, size_t n, unsigned long long *bad)
{
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint4 x = a[i], y = b[i];
    local += (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
  }
  if (local)
    atomicAdd(bad, local);
}

// The device control block (ctrl[0] stop, ctrl[1] phase) of one GPU and the pinned host words
// copied into it: {0, 0, 1, 2}, never changed, read by asynchronous copies (portable: every GPU's
// context copies from them).
struct Ctrl {
  int *d = nullptr;
  int *h = nullptr;
  cudaStream_t st{};
  Ctrl()
  {
    MB_CK(cudaMalloc(&d, 256));
    MB_CK(cudaHostAlloc(&h, 4 * sizeof(int), cudaHostAllocPortable));
    h[0] = h[1] = 0;
    h[2]        = 1;
    h[3]        = 2;
    MB_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  }
  void reset(cudaStream_t s) const { MB_CK(cudaMemcpyAsync(d, h, 2 * sizeof(int), cudaMemcpyHostToDevice, s)); }
  void phase(int v, cudaStream_t s) const
  {
    MB_CK(cudaMemcpyAsync(d + 1, h + (v == 1 ? 2 : 3), sizeof(int), cudaMemcpyHostToDevice, s));
  }
  // raise the stop flag from the control stream; stop() also waits for the copy to land
  void stop_async() const { MB_CK(cudaMemcpyAsync(d, h + 2, sizeof(int), cudaMemcpyHostToDevice, st)); }
  void stop() const
  {
    stop_async();
    MB_CK(cudaStreamSynchronize(st));
  }
};

} // namespace
