// mb_gemm_contention: cuBLASLt GEMM while k SMs are held by other work (kind "gemm_contention").
//
//   mb_gemm_contention [--sms 0,1,2,4,8,16,24,32,48,64] [--dtypes bf16,fp8] [--out FILE]
//                      [--shapes "8192x8192x8192,8192x14336x8192"] [--reps 15] [--device 0]
//
// A "spinner" kernel of k CTAs is launched first on its own stream. Each CTA asks for all the
// shared memory one block may have and 1024 threads, so exactly one fits per SM and no GEMM
// CTA can share that SM: k SMs are held, as an NCCL / userbuffers comm kernel of k CTAs holds
// them. The host waits until every spinner CTA has reported in, times the GEMM on a second
// stream, then raises the stop flag. Variants per k:
//   spinner            k spinner CTAs (idle: one thread polls a flag), GEMM tuned for all SMs
//   spinner_mem        k spinner CTAs that copy 8 MiB each in a loop (HBM traffic of a comm
//                      kernel), GEMM tuned for all SMs
//   sm_target          no spinner, GEMM with CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = SMs - k
//   spinner_sm_target  k idle spinners and SM_COUNT_TARGET = SMs - k (TE's set_sm_margin case)
// Each row interleaves reps of the plain GEMM (all SMs, nothing held; baseline_ns) with reps
// of the variant (median_ns), so that power-cap clock drift (heavy GEMMs reach the 700 W cap
// within milliseconds) hits both alike; slowdown = median_ns / baseline_ns.
#include "mb_lt.h"

namespace {

constexpr int kSpinThreads      = 1024;
constexpr size_t kSpinCopyBytes = 8ull << 20; // per CTA, spinner_mem

__global__ void __launch_bounds__(kSpinThreads, 1)
    spinner_kernel(volatile int *stop, volatile int *started, const float4 *src, float4 *dst, int mem)
{
  extern __shared__ float4 smem[];
  __shared__ int done;
  if (threadIdx.x == 0) {
    started[blockIdx.x] = 1;
    __threadfence_system();
  }
  const size_t per_cta = kSpinCopyBytes / sizeof(float4);
  const float4 *s      = src + blockIdx.x * per_cta;
  float4 *d            = dst + blockIdx.x * per_cta;
  for (;;) {
    if (threadIdx.x == 0)
      done = *stop;
    __syncthreads();
    if (done)
      break;
    if (mem) {
      for (size_t i = threadIdx.x; i < per_cta; i += blockDim.x)
        d[i] = s[i];
    } else {
      __nanosleep(500);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && smem[0].x == 1234.5f)
    d[0] = smem[0]; // keep smem allocated
}

// The stop flag lives in device memory and is raised by a copy-engine write from the host:
// a first version polled host-mapped memory from the spinner CTAs and that alone slowed the
// GEMM on the other SMs 4-8x (H200, Firecracker VM), which no comm kernel does.
// `started` is host-mapped but written once per CTA, never polled from the GPU.
struct Spinner {
  int *one_h = nullptr, *started_h = nullptr;
  int *stop_d = nullptr, *started_d = nullptr;
  float4 *src = nullptr, *dst = nullptr;
  size_t smem = 0;
  cudaStream_t st{}, ctrl{};
  int max_ctas = 0;

  explicit Spinner(int dev, int ctas) : max_ctas(ctas)
  {
    cudaDeviceProp p{};
    MB_CK(cudaGetDeviceProperties(&p, dev));
    smem = p.sharedMemPerBlockOptin - 1024; // leave room for the static __shared__ int
    MB_CK(cudaFuncSetAttribute(spinner_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    MB_CK(cudaHostAlloc(&one_h, sizeof(int), cudaHostAllocDefault));
    *one_h = 1;
    MB_CK(cudaMalloc(&stop_d, 256));
    MB_CK(cudaHostAlloc(&started_h, sizeof(int) * ctas, cudaHostAllocMapped));
    MB_CK(cudaHostGetDevicePointer(&started_d, started_h, 0));
    MB_CK(cudaMalloc(&src, kSpinCopyBytes * ctas));
    MB_CK(cudaMalloc(&dst, kSpinCopyBytes * ctas));
    mb::fill(reinterpret_cast<float *>(src), kSpinCopyBytes * ctas / 4, 77);
    MB_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    MB_CK(cudaStreamCreateWithFlags(&ctrl, cudaStreamNonBlocking));
    MB_CK(cudaDeviceSynchronize());
    int per_sm = 0;
    MB_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spinner_kernel, kSpinThreads, smem));
    if (per_sm != 1) {
      std::fprintf(stderr, "spinner occupancy is %d CTAs/SM, expected 1\n", per_sm);
      std::exit(5);
    }
  }

  // Launches k CTAs and returns once all are resident.
  void start(int k, bool mem)
  {
    if (k == 0)
      return;
    std::memset(started_h, 0, sizeof(int) * max_ctas);
    MB_CK(cudaMemsetAsync(stop_d, 0, sizeof(int), st));
    spinner_kernel<<<k, kSpinThreads, smem, st>>>(stop_d, started_d, src, dst, mem ? 1 : 0);
    MB_CK_LAUNCH();
    mb::wait_started(started_h, k, "spinner");
  }
  void stop(int k)
  {
    if (k == 0)
      return;
    MB_CK(cudaMemcpyAsync(stop_d, one_h, sizeof(int), cudaMemcpyHostToDevice, ctrl));
    MB_CK(cudaStreamSynchronize(ctrl));
    MB_CK(cudaStreamSynchronize(st));
  }
};

mb::GemmShape parse_shape(const std::string &t)
{
  mb::GemmShape s;
  if (std::sscanf(t.c_str(), "%ldx%ldx%ld", &s.m, &s.n, &s.k) != 3) {
    std::fprintf(stderr, "bad shape %s (want MxNxK)\n", t.c_str());
    std::exit(1);
  }
  return s;
}

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int dev = static_cast<int>(args.geti("--device", 0));
  MB_CK(cudaSetDevice(dev));
  const std::vector<long> ks = mb::parse_list(args.get("--sms", "0,1,2,4,8,16,24,32,48,64"));
  const std::string dtypes   = args.get("--dtypes", "bf16,fp8");
  const int reps             = static_cast<int>(args.geti("--reps", 15));
  const double budget_s      = args.getf("--budget-s", 80.0);
  std::string shape_list     = args.get("--shapes", "8192x8192x8192,8192x14336x8192,8192x2560x8192,8192x8192x2048");
  mb::Report rep("gemm_contention", args.get("--out", "gemm_contention.json"), args.joined("mb_gemm_contention"),
                 {dev});
  const double t0 = mb::now_s();
  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, dev));
  const int nsm = prop.multiProcessorCount;
  long kmax     = 0;
  for (long k : ks)
    kmax = std::max(kmax, k);
  if (kmax >= nsm) {
    std::fprintf(stderr, "k must stay below the SM count %d\n", nsm);
    return 1;
  }

  cublasLtHandle_t lt;
  MB_CKLT(cublasLtCreate(&lt));
  Spinner spin(dev, static_cast<int>(kmax > 0 ? kmax : 1));
  rep.env()
      .i("cublaslt_version", static_cast<long long>(cublasLtGetVersion()))
      .i("spinner_threads", kSpinThreads)
      .i("spinner_smem_bytes", static_cast<long long>(spin.smem))
      .i("spinner_mem_bytes_per_cta", static_cast<long long>(kSpinCopyBytes));

  std::vector<mb::GemmShape> shapes;
  for (size_t p = 0; p <= shape_list.size();) {
    size_t c = shape_list.find(',', p);
    if (c == std::string::npos)
      c = shape_list.size();
    if (c > p)
      shapes.push_back(parse_shape(shape_list.substr(p, c - p)));
    p = c + 1;
  }

  // Inputs: a pool big enough to rotate over > 3x L2 for every shape.
  size_t need = 0;
  for (auto s : shapes) {
    s.fp8 = false;
    need  = std::max(need, s.a_bytes() + s.b_bytes() + s.d_bytes());
  }
  const int nsets = static_cast<int>(std::max<size_t>(2, (3 * static_cast<size_t>(prop.l2CacheSize)) / need + 1));
  const size_t pool_bytes = need * nsets + 4096;
  char *pool              = nullptr;
  MB_CK(cudaMalloc(&pool, pool_bytes));
  cudaStream_t st;
  MB_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  mb::LtGemm g(lt), gb(lt); // g: the variant's GEMM; gb: the plain GEMM for adjacent baselines
  const char *variants[] = {"spinner", "spinner_mem", "sm_target", "spinner_sm_target"};
  bool truncated         = false;

  for (const char *dt : {"bf16", "fp8"}) {
    if (dtypes.find(dt) == std::string::npos)
      continue;
    const bool f8 = std::string(dt) == "fp8";
    if (f8)
      mb::fill(reinterpret_cast<__nv_fp8_e4m3 *>(pool), pool_bytes, 99, 1.0f, st);
    else
      mb::fill(reinterpret_cast<__nv_bfloat16 *>(pool), pool_bytes / 2, 99, 1.0f, st);
    for (mb::GemmShape s : shapes) {
      s.fp8          = f8;
      s.fast_accum   = false;
      const size_t a = (s.a_bytes() + 255) & ~size_t(255), b = (s.b_bytes() + 255) & ~size_t(255);
      const size_t set = a + b + ((s.d_bytes() + 255) & ~size_t(255));
      auto launch      = [&](int r) {
        char *base = pool + static_cast<size_t>(r % nsets) * set;
        g.run(base, base + a, base + a + b, st);
      };
      auto launch_base = [&](int r) {
        char *base = pool + static_cast<size_t>(r % nsets) * set;
        gb.run(base, base + a, base + a + b, st);
      };
      {
        mb::GemmShape sb = s;
        sb.sm_target     = 0;
        std::string err;
        if (!gb.setup(sb, &err) || gb.try_run(pool, pool + a, pool + a + b, st) != CUBLAS_STATUS_SUCCESS) {
          std::fprintf(stderr, "%s %ldx%ldx%ld: no plain GEMM (%s), skipped\n", dt, s.m, s.n, s.k, err.c_str());
          continue;
        }
      }
      for (const char *var : variants) {
        const std::string v = var;
        const bool use_spin = v.rfind("spinner", 0) == 0, mem = v == "spinner_mem",
                   tgt = v.find("sm_target") != std::string::npos;
        for (long k : ks) {
          if (mb::now_s() - t0 > budget_s) {
            truncated = true;
            break;
          }
          s.sm_target = (tgt && k > 0) ? nsm - static_cast<int>(k) : 0;
          std::string err;
          mb::Row row;
          row.i("m", s.m)
              .i("n", s.n)
              .i("k", s.k)
              .s("dtype", dt)
              .s("layout", s.layout())
              .s("variant", v)
              .i("sms_held", k)
              .i("sm_count_target", s.sm_target)
              .i("sm_count", nsm);
          if (!g.setup(s, &err)) {
            row.s("status", err);
            rep.add(row);
            continue;
          }
          {
            char *base        = pool;
            cublasStatus_t cs = g.try_run(base, base + a, base + a + b, st);
            if (cs != CUBLAS_STATUS_SUCCESS) {
              row.s("status", "cublasLtMatmul status " + std::to_string(static_cast<int>(cs)));
              rep.add(row);
              continue;
            }
          }
          // Interleaved reps: the plain GEMM (all SMs, nothing held), then the variant with k
          // SMs held, rep after rep, so that power-cap clock drift hits both alike.
          mb::time_reps(st, 2, launch_base);
          mb::time_reps(st, 2, launch);
          // Watchdog: a GEMM that cannot finish while SMs are held (inter-CTA waits) is
          // released by stopping the spinner, and the row says so.
          bool hung = false;
          std::vector<double> ns, bns;
          for (int r = 0; r < reps && !hung; ++r) {
            bns.push_back(mb::time_reps(st, 1, [&](int) { launch_base(2 * r); })[0]);
            spin.start(use_spin ? static_cast<int>(k) : 0, mem);
            const double v = mb::time_reps(
                st, 1, [&](int) { launch(2 * r + 1); },
                [&] {
                  const double tw = mb::now_s();
                  while (cudaStreamQuery(st) == cudaErrorNotReady)
                    if (mb::now_s() - tw > 20.0) {
                      hung = true;
                      break;
                    }
                  spin.stop(use_spin ? static_cast<int>(k) : 0);
                })[0];
            ns.push_back(v);
          }
          if (hung) {
            row.s("status", "timeout: GEMM did not finish within 20 s while SMs were held");
            rep.add(row);
            continue;
          }
          const double base_ns = mb::median(bns);
          const double med     = mb::median(ns);
          row.f("median_ns", med)
              .f("min_ns", mb::minimum(ns))
              .f("tflops", s.flops() / med / 1e3)
              .f("baseline_ns", base_ns)
              .f("slowdown", med / base_ns)
              .i("reps", reps);
          g.describe(row).s("status", "ok");
          rep.add(row);
        }
        std::fprintf(stderr, "[%5.1fs] %s %ldx%ldx%ld %s done\n", mb::now_s() - t0, dt, s.m, s.n, s.k, var);
      }
    }
  }
  cudaFree(pool);
  cublasLtDestroy(lt);
  return rep.close(truncated, truncated ? "time budget reached" : "");
}
