// mb_memory: achieved HBM bandwidth of the memory-bound kernels of a training step (kind "memory").
//
//   mb_memory [--sizes-mib 1,4,16,64,256,1024,4096] [--out memory.json] [--device 0]
//
// Each size is the bytes one launch moves (every input read once + every output written once);
// gbps = moved_bytes / median_ns. Kernels (16-byte accesses, grid-stride):
//   copy        fp32 y = x                              8 B/element
//   memcpy_d2d  cudaMemcpyAsync device to device        8 B/element (read + write)
//   gelu        bf16 y = gelu_tanh(x)                   4 B/element
//   swiglu      bf16 y = silu(gate) * up                6 B/element
//   rmsnorm     bf16 rows of 8192, y = x*rsqrt(mean(x^2)+eps)*w, one CTA per row   4 B/element
//   adam        fp32 p,g,m,v read; p,m,v written       28 B/element
// Sizes under 3x L2 rotate over several buffer sets so each launch reads from HBM.
#include "mb_common.h"

namespace {

constexpr int kHidden = 8192;

__global__ void copy_kernel(const float4 *__restrict__ x, float4 *__restrict__ y, size_t n4)
{
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

__device__ inline float gelu_tanh(float x)
{
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}
__device__ inline float silu(float x) { return x / (1.0f + __expf(-x)); }

// 8 bf16 per 16-byte vector.
union V8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

__global__ void gelu_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ y, size_t n8)
{
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n8;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    V8 a, o;
    a.u = x[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 f = __bfloat1622float2(a.h[j]);
      o.h[j]   = __floats2bfloat162_rn(gelu_tanh(f.x), gelu_tanh(f.y));
    }
    y[i] = o.u;
  }
}

__global__ void swiglu_kernel(const uint4 *__restrict__ g, const uint4 *__restrict__ u, uint4 *__restrict__ y,
                              size_t n8)
{
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n8;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    V8 a, b, o;
    a.u = g[i];
    b.u = u[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 fa = __bfloat1622float2(a.h[j]), fb = __bfloat1622float2(b.h[j]);
      o.h[j] = __floats2bfloat162_rn(silu(fa.x) * fb.x, silu(fa.y) * fb.y);
    }
    y[i] = o.u;
  }
}

// One CTA of 256 threads per row of kHidden bf16: each thread holds 4 vectors of 8.
constexpr int kNormThreads = 256;
constexpr int kNormVec     = kHidden / 8 / kNormThreads;
__global__ void __launch_bounds__(kNormThreads)
    rmsnorm_kernel(const uint4 *__restrict__ x, const uint4 *__restrict__ w, uint4 *__restrict__ y, size_t rows)
{
  __shared__ float part[kNormThreads / 32];
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const uint4 *xr = x + r * (kHidden / 8);
    V8 v[kNormVec];
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < kNormVec; ++j) {
      v[j].u = xr[threadIdx.x + j * kNormThreads];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float2 f = __bfloat1622float2(v[j].h[q]);
        ss += f.x * f.x + f.y * f.y;
      }
    }
    for (int o = 16; o > 0; o >>= 1)
      ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0)
      part[threadIdx.x / 32] = ss;
    __syncthreads();
    float tot = 0.0f;
#pragma unroll
    for (int q = 0; q < kNormThreads / 32; ++q)
      tot += part[q];
    __syncthreads();
    const float scale = rsqrtf(tot / kHidden + 1e-5f);
#pragma unroll
    for (int j = 0; j < kNormVec; ++j) {
      V8 wv, o;
      wv.u = w[threadIdx.x + j * kNormThreads];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float2 f = __bfloat1622float2(v[j].h[q]), ww = __bfloat1622float2(wv.h[q]);
        o.h[q] = __floats2bfloat162_rn(f.x * scale * ww.x, f.y * scale * ww.y);
      }
      y[r * (kHidden / 8) + threadIdx.x + j * kNormThreads] = o.u;
    }
  }
}

__global__ void adam_kernel(float4 *__restrict__ p, const float4 *__restrict__ g, float4 *__restrict__ m,
                            float4 *__restrict__ v, size_t n4, float lr, float b1, float b2, float eps, float wd,
                            float c1, float c2)
{
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 P = p[i], G = g[i], M = m[i], V = v[i];
    float *pp = &P.x, *gg = &G.x, *mm = &M.x, *vv = &V.x;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      mm[j] = b1 * mm[j] + (1.0f - b1) * gg[j];
      vv[j] = b2 * fabsf(vv[j]) + (1.0f - b2) * gg[j] * gg[j];
      pp[j] -= lr * ((mm[j] * c1) / (sqrtf(vv[j] * c2) + eps) + wd * pp[j]);
    }
    p[i] = P;
    m[i] = M;
    v[i] = V;
  }
}

struct KernelSpec {
  const char *name;
  int narrays;         // arrays per buffer set (inputs + outputs)
  double bytes_per_el; // moved per element
  int elt_bytes;       // element size of the arrays
};

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int dev = static_cast<int>(args.geti("--device", 0));
  MB_CK(cudaSetDevice(dev));
  const std::vector<long> sizes_mib = mb::parse_list(args.get("--sizes-mib", "1,4,16,64,256,1024,4096"));
  const double budget_s             = args.getf("--budget-s", 60.0);
  mb::Report rep("memory", args.get("--out", "memory.json"), args.joined("mb_memory"), {dev});
  const double t0 = mb::now_s();
  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, dev));
  const size_t l2 = static_cast<size_t>(prop.l2CacheSize);
  long max_mib    = 1;
  for (long s : sizes_mib)
    max_mib = std::max(max_mib, s);
  const size_t pool_bytes = (static_cast<size_t>(max_mib) << 20) + std::max<size_t>(4 * l2, 256ull << 20);
  char *pool              = nullptr;
  MB_CK(cudaMalloc(&pool, pool_bytes));
  cudaStream_t st;
  MB_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int grid = prop.multiProcessorCount * 8, block = 512;
  rep.env().i("grid_ctas", grid).i("block_threads", block).i("rmsnorm_hidden", kHidden);

  const KernelSpec specs[] = {{"copy", 2, 8, 4},   {"memcpy_d2d", 2, 8, 4}, {"gelu", 2, 4, 2},
                              {"swiglu", 3, 6, 2}, {"rmsnorm", 2, 4, 2},    {"adam", 4, 28, 4}};
  bool truncated           = false;
  for (const KernelSpec &k : specs) {
    if (k.elt_bytes == 4)
      mb::fill(reinterpret_cast<float *>(pool), pool_bytes / 4, 5, 1.0f, st);
    else
      mb::fill(reinterpret_cast<__nv_bfloat16 *>(pool), pool_bytes / 2, 5, 1.0f, st);
    for (long mib : sizes_mib) {
      if (mb::now_s() - t0 > budget_s) {
        truncated = true;
        break;
      }
      const size_t moved_target = static_cast<size_t>(mib) << 20;
      size_t n                  = static_cast<size_t>(moved_target / k.bytes_per_el);
      n -= n % kHidden; // whole rows for rmsnorm, whole vectors for all
      if (n == 0)
        continue;
      const size_t arr   = ((n * k.elt_bytes) + 255) & ~size_t(255);
      const size_t set   = arr * k.narrays + (std::string(k.name) == "rmsnorm" ? 2 * kHidden : 0);
      const size_t want  = std::min<size_t>(64, (3 * l2) / set + 1);
      const size_t nsets = std::max<size_t>(1, std::min(want, pool_bytes / set));
      const double moved =
          static_cast<double>(n) * k.bytes_per_el + (std::string(k.name) == "rmsnorm" ? 2.0 * kHidden : 0.0);
      const std::string name = k.name;
      auto launch            = [&](int r) {
        char *b = pool + static_cast<size_t>(r % nsets) * set;
        if (name == "copy") {
          copy_kernel<<<grid, block, 0, st>>>(reinterpret_cast<const float4 *>(b), reinterpret_cast<float4 *>(b + arr),
                                              n / 4);
        } else if (name == "memcpy_d2d") {
          MB_CK(cudaMemcpyAsync(b + arr, b, n * 4, cudaMemcpyDeviceToDevice, st));
        } else if (name == "gelu") {
          gelu_kernel<<<grid, block, 0, st>>>(reinterpret_cast<const uint4 *>(b), reinterpret_cast<uint4 *>(b + arr),
                                              n / 8);
        } else if (name == "swiglu") {
          swiglu_kernel<<<grid, block, 0, st>>>(reinterpret_cast<const uint4 *>(b),
                                                reinterpret_cast<const uint4 *>(b + arr),
                                                reinterpret_cast<uint4 *>(b + 2 * arr), n / 8);
        } else if (name == "rmsnorm") {
          const size_t rows = n / kHidden;
          const unsigned g  = static_cast<unsigned>(std::min<size_t>(rows, 65535));
          rmsnorm_kernel<<<g, kNormThreads, 0, st>>>(reinterpret_cast<const uint4 *>(b),
                                                     reinterpret_cast<const uint4 *>(b + 2 * arr),
                                                     reinterpret_cast<uint4 *>(b + arr), rows);
        } else {
          adam_kernel<<<grid, block, 0, st>>>(reinterpret_cast<float4 *>(b), reinterpret_cast<const float4 *>(b + arr),
                                              reinterpret_cast<float4 *>(b + 2 * arr),
                                              reinterpret_cast<float4 *>(b + 3 * arr), n / 4, 1e-4f, 0.9f, 0.95f, 1e-8f,
                                              0.1f, 1.1f, 1.05f);
        }
        MB_CK_LAUNCH();
      };
      std::vector<double> w  = mb::time_reps(st, 3, launch);
      const int reps         = std::max(5, std::min(200, static_cast<int>(2e7 / std::max(w[2], 1.0)) + 1));
      std::vector<double> ns = mb::time_reps(st, reps, [&](int r) { launch(r + 3); });
      const double med       = mb::median(ns);
      mb::Row row;
      row.s("kernel", k.name)
          .i("elements", static_cast<long long>(n))
          .i("moved_bytes", std::llround(moved))
          .f("median_ns", med)
          .f("min_ns", mb::minimum(ns))
          .f("gbps", moved / med)
          .f("gbps_best", moved / mb::minimum(ns))
          .i("reps", reps)
          .i("buffer_sets", static_cast<long long>(nsets));
      rep.add(row);
      std::fprintf(stderr, "[%5.1fs] %-10s %6ld MiB %8.1f GB/s\n", mb::now_s() - t0, k.name, mib, moved / med);
    }
  }
  cudaFree(pool);
  return rep.close(truncated, truncated ? "time budget reached" : "");
}
