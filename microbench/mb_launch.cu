// mb_launch: what the host pays to issue GPU work, and the GPU's floor per kernel (kind "launch").
//
//   mb_launch [--out launch.json] [--device 0] [--budget-s 60] [--batch 256] [--stream-n 16384]
//             [--copy-kib 4,16,64,256,1024,4096,16384,65536] [--gemm 64,128,256,512,1024,2048]
//
// Rows carry `test`:
//   launch_host      host wall time per call of one API (empty kernel, a kernel with 8 pointer
//                    arguments, a 132-CTA empty kernel, cudaEventRecord, cudaStreamWaitEvent,
//                    cudaMemcpyAsync D2D 4 KiB, cublasLtMatmul 64^3 bf16), `batch` calls in a row
//                    behind a launch gate (the GPU holds the stream, so the queue never drains
//                    nor fills and only the host is timed); host_ns = batch time / batch.
//   launch_stream    `calls` empty kernels back to back, no gate (many thousands: the launch
//                    queue fills when the GPU is slower than the host): host_ns per launch and
//                    gpu_ns per kernel (one event pair around all of them).
//   queue_depth      behind a closed gate, how many empty kernels the host enqueues before a
//                    launch blocks (the gate opens by itself after 200 ms).
//   gpu_floor        GPU time per kernel with the host far ahead: `n` kernels of one class back to
//                    back, issued either behind the gate (`issue` "stream") or as one CUDA graph
//                    (`issue` "graph"), one event pair around the n; gpu_ns = time / n. Classes:
//                    "empty" (1 CTA of 32), "empty_full" (4 CTAs per SM of 256), "copy" (fp32 copy
//                    of `bytes` moved = read + write, 16-byte accesses, 256 threads, one vector per
//                    thread up to 8 CTAs per SM, then grid-stride), "gemm" (cuBLASLt bf16 m=n=k,
//                    TN, mb_lt.h). copy and gemm rotate over buffer sets so the n kernels read at
//                    least 3x L2 in all, as a training step's do.
//   graph_launch     a graph of `nodes` empty kernels: host_ns per cudaGraphLaunch (GPU idle,
//                    queue empty), instantiate_ns (once), gpu_ns per node of a replay.
//   sync             host round trips: cudaStreamSynchronize / cudaEventSynchronize / cudaEventQuery
//                    on an idle stream; one empty kernel + cudaStreamSynchronize; a D2H copy of
//                    `bytes` (4 B, 8 B, 4 KiB) to pinned or pageable memory + cudaStreamSynchronize
//                    (the MoE token-count copy, the found-inf / grad-norm read); cudaMemcpy D2H
//                    4 B (synchronous).
// Every time is a median over `reps` (host: steady_clock; GPU: CUDA events); `min_ns` beside it.
#include "mb_lt.h"

namespace {

__global__ void empty_kernel() {}

__global__ void args_kernel(const float *a, const float *b, const float *c, const float *d, float *e, float *f,
                            float *g, float *h)
{
  if (a == nullptr && threadIdx.x == 1024) // never true: keeps the arguments alive
    *e = *b + *c + *d + *f + *g + *h;
}

__global__ void copy_kernel(const float4 *__restrict__ x, float4 *__restrict__ y, size_t n4)
{
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

__device__ inline unsigned long long global_ns()
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds a stream until the host sets *flag (mapped host memory) or the timeout passes.
__global__ void gate_kernel(const volatile int *flag, volatile int *timed_out, unsigned long long timeout_ns)
{
  const unsigned long long t0 = global_ns();
  while (*flag == 0) {
    if (global_ns() - t0 > timeout_ns) {
      *timed_out = 1;
      __threadfence_system();
      return;
    }
    __nanosleep(1000);
  }
}

// The launch gate of mb_nccl.h for one stream (that header needs NCCL).
struct Gate {
  int *host = nullptr, *dev = nullptr;
  Gate()
  {
    void *p = nullptr;
    MB_CK(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped));
    host    = static_cast<int *>(p);
    host[0] = host[1] = 0;
    void *d           = nullptr;
    MB_CK(cudaHostGetDevicePointer(&d, p, 0));
    dev = static_cast<int *>(d);
  }
  ~Gate() { cudaFreeHost(host); }
  void hold(cudaStream_t s, unsigned long long timeout_ns = 2000000000ull)
  {
    gate_kernel<<<1, 1, 0, s>>>(dev, dev + 1, timeout_ns);
    MB_CK_LAUNCH();
  }
  void release() { __atomic_store_n(&host[0], 1, __ATOMIC_SEQ_CST); }
  // After the stream was synchronized: true when the gate opened on release(), not by timeout.
  bool finish()
  {
    const bool ok = __atomic_load_n(&host[1], __ATOMIC_SEQ_CST) == 0;
    __atomic_store_n(&host[0], 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&host[1], 0, __ATOMIC_SEQ_CST);
    return ok;
  }
};

double elapsed_ns(cudaEvent_t a, cudaEvent_t b)
{
  float ms = 0;
  MB_CK(cudaEventElapsedTime(&ms, a, b));
  return 1e6 * ms;
}

struct Ctx {
  cudaStream_t st;
  Gate gate;
  cudaEvent_t e0, e1;
  int sms;
  size_t l2;
  mb::Report *rep;
};

// Host time per call of `fn` (which enqueues one operation on ctx.st), batch calls behind the gate.
template <typename F> void launch_host(Ctx &c, const char *api, int batch, int reps, F &&fn)
{
  std::vector<double> per;
  bool gated = true;
  // Ungated first call: a kernel's first launch loads its module (CUDA's lazy loading), which
  // waits for the device and so would wait for the gate's timeout.
  fn();
  MB_CK(cudaStreamSynchronize(c.st));
  for (int r = 0; r < reps + 2; ++r) {
    c.gate.hold(c.st);
    const double t0 = mb::now_s();
    for (int i = 0; i < batch; ++i)
      fn();
    const double t1 = mb::now_s();
    c.gate.release();
    MB_CK(cudaStreamSynchronize(c.st));
    gated = c.gate.finish() && gated;
    if (r >= 2)
      per.push_back(1e9 * (t1 - t0) / batch);
  }
  mb::Row row;
  row.s("test", "launch_host")
      .s("api", api)
      .i("batch", batch)
      .f("host_ns", mb::median(per))
      .f("min_ns", mb::minimum(per))
      .i("reps", reps)
      .b("launch_gated", gated);
  c.rep->add(row);
  std::fprintf(stderr, "launch_host %-26s %7.0f ns\n", api, mb::median(per));
}

// GPU time per operation of n back-to-back operations (fn(i) enqueues the i-th on stream s).
template <typename F> double gpu_per_op(Ctx &c, bool graph, int n, int reps, F &&fn, double *min_ns, bool *gated)
{
  std::vector<double> per;
  *gated               = true;
  cudaGraphExec_t exec = nullptr;
  fn(0, c.st); // loads the modules ungated (see launch_host)
  MB_CK(cudaStreamSynchronize(c.st));
  if (graph) {
    cudaGraph_t g;
    MB_CK(cudaStreamBeginCapture(c.st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; ++i)
      fn(i, c.st);
    MB_CK(cudaStreamEndCapture(c.st, &g));
    MB_CK(cudaGraphInstantiate(&exec, g, 0));
    MB_CK(cudaGraphDestroy(g));
  }
  for (int r = 0; r < reps + 1; ++r) {
    if (graph) {
      MB_CK(cudaEventRecord(c.e0, c.st));
      MB_CK(cudaGraphLaunch(exec, c.st));
      MB_CK(cudaEventRecord(c.e1, c.st));
      MB_CK(cudaStreamSynchronize(c.st));
    } else {
      c.gate.hold(c.st);
      MB_CK(cudaEventRecord(c.e0, c.st));
      for (int i = 0; i < n; ++i)
        fn(i, c.st);
      MB_CK(cudaEventRecord(c.e1, c.st));
      c.gate.release();
      MB_CK(cudaStreamSynchronize(c.st));
      *gated = c.gate.finish() && *gated;
    }
    if (r >= 1)
      per.push_back(elapsed_ns(c.e0, c.e1) / n);
  }
  if (exec)
    MB_CK(cudaGraphExecDestroy(exec));
  *min_ns = mb::minimum(per);
  return mb::median(per);
}

template <typename F>
void gpu_floor(Ctx &c, const char *cls, long size, double bytes, double flops, int n, int reps, F &&fn)
{
  for (int graph = 0; graph < 2; ++graph) {
    double mn       = 0;
    bool gated      = false;
    const double ns = gpu_per_op(c, graph != 0, n, reps, fn, &mn, &gated);
    mb::Row row;
    row.s("test", "gpu_floor")
        .s("class", cls)
        .s("issue", graph ? "graph" : "stream")
        .i("size", size)
        .f("bytes", bytes)
        .f("flops", flops)
        .i("n", n)
        .f("gpu_ns", ns)
        .f("min_ns", mn)
        .f("gbps", bytes > 0 ? bytes / ns : NAN)
        .f("tflops", flops > 0 ? flops / ns / 1e3 : NAN)
        .i("reps", reps)
        .b("launch_gated", graph ? false : gated);
    c.rep->add(row);
    std::fprintf(stderr, "gpu_floor %-10s %-6s size %8ld: %8.2f us per kernel\n", cls, graph ? "graph" : "stream", size,
                 ns / 1e3);
  }
}

// Host round trip of `fn` (which ends in a synchronization), on an idle stream.
template <typename F> void sync_row(Ctx &c, const char *what, long bytes, int reps, F &&fn)
{
  std::vector<double> t;
  for (int r = 0; r < reps + 5; ++r) {
    const double t0 = mb::now_s();
    fn();
    const double t1 = mb::now_s();
    if (r >= 5)
      t.push_back(1e9 * (t1 - t0));
  }
  std::vector<double> s = t;
  std::sort(s.begin(), s.end());
  mb::Row row;
  row.s("test", "sync")
      .s("what", what)
      .i("bytes", bytes)
      .f("host_ns", mb::median(t))
      .f("min_ns", s.front())
      .f("p90_ns", s[s.size() * 9 / 10])
      .i("reps", reps);
  c.rep->add(row);
  std::fprintf(stderr, "sync %-30s %6ld B: %7.0f ns\n", what, bytes, mb::median(t));
}

std::string host_cpu()
{
  std::string m = mb::shell_line("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2");
  while (!m.empty() && m.front() == ' ')
    m.erase(m.begin());
  return m;
}

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int dev = static_cast<int>(args.geti("--device", 0));
  MB_CK(cudaSetDevice(dev));
  const double budget_s             = args.getf("--budget-s", 60.0);
  int batch                         = static_cast<int>(args.geti("--batch", 256));
  const int stream_n                = static_cast<int>(args.geti("--stream-n", 16384));
  const std::vector<long> copy_kib  = mb::parse_list(args.get("--copy-kib", "4,16,64,256,1024,4096,16384,65536"));
  const std::vector<long> gemm_dims = mb::parse_list(args.get("--gemm", "64,128,256,512,1024,2048"));
  mb::Report rep("launch", args.get("--out", "launch.json"), args.joined("mb_launch"), {dev});
  const double t0 = mb::now_s();
  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, dev));
  rep.env()
      .s("host_cpu", host_cpu())
      .i("host_cpus_online", sysconf(_SC_NPROCESSORS_ONLN))
      .i("cublaslt_version", static_cast<long long>(cublasLtGetVersion()));

  Ctx c;
  MB_CK(cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking));
  MB_CK(cudaEventCreate(&c.e0));
  MB_CK(cudaEventCreate(&c.e1));
  c.sms = prop.multiProcessorCount;
  c.l2  = static_cast<size_t>(prop.l2CacheSize);
  c.rep = &rep;

  long max_kib = 4;
  for (long k : copy_kib)
    max_kib = std::max(max_kib, k);
  const size_t pool_bytes = std::max<size_t>(static_cast<size_t>(max_kib) << 10, 4 * c.l2) * 2;
  char *pool              = nullptr;
  MB_CK(cudaMalloc(&pool, pool_bytes));
  mb::fill(reinterpret_cast<float *>(pool), pool_bytes / 4, 7, 1.0f, c.st);
  float *fp = reinterpret_cast<float *>(pool);
  cudaEvent_t ev_other;
  MB_CK(cudaEventCreateWithFlags(&ev_other, cudaEventDisableTiming));
  MB_CK(cudaEventRecord(ev_other, c.st));
  cublasLtHandle_t lt;
  MB_CKLT(cublasLtCreate(&lt));
  mb::LtGemm small(lt);
  mb::GemmShape s64;
  s64.m = s64.n = s64.k = 64;
  std::string err;
  if (!small.setup(s64, &err)) {
    std::fprintf(stderr, "gemm 64: %s\n", err.c_str());
    return 1;
  }
  MB_CK(cudaStreamSynchronize(c.st));

  // --- launch queue depth: launches behind a closed gate until one blocks
  int queue_cap = 1 << 30;
  {
    const int cap = 65536;
    std::vector<double> t(cap + 1);
    c.gate.hold(c.st, 300000000ull);
    t[0]      = mb::now_s();
    int depth = -1;
    for (int i = 0; i < cap; ++i) {
      empty_kernel<<<1, 32, 0, c.st>>>();
      t[i + 1] = mb::now_s();
      if (t[i + 1] - t[i] > 0.02) { // blocked until the gate timed out
        depth = i;
        break;
      }
    }
    MB_CK_LAUNCH();
    c.gate.release();
    MB_CK(cudaStreamSynchronize(c.st));
    c.gate.finish();
    mb::Row row;
    row.s("test", "queue_depth").i("queue_depth_kernels", depth).i("cap", cap);
    if (depth > 0)
      row.f("host_ns_before_block", 1e9 * (t[depth] - t[0]) / depth);
    rep.add(row);
    std::fprintf(stderr, "queue depth: %d empty kernels before a launch blocked\n", depth);
    // Gated batches must fit the queue, or the host would wait for the gate's timeout.
    if (depth > 0)
      queue_cap = depth / 2;
  }

  // --- host cost per call, behind the gate
  batch            = std::min(batch, queue_cap);
  const int reps_h = 30;
  launch_host(c, "kernel_empty_1x32", batch, reps_h, [&] {
    empty_kernel<<<1, 32, 0, c.st>>>();
    MB_CK_LAUNCH();
  });
  launch_host(c, "kernel_empty_4xSMx256", batch, reps_h, [&] {
    empty_kernel<<<4 * c.sms, 256, 0, c.st>>>();
    MB_CK_LAUNCH();
  });
  launch_host(c, "kernel_8_pointer_args", batch, reps_h, [&] {
    args_kernel<<<1, 32, 0, c.st>>>(fp, fp + 1, fp + 2, fp + 3, fp + 4, fp + 5, fp + 6, fp + 7);
    MB_CK_LAUNCH();
  });
  launch_host(c, "cudaEventRecord", batch, reps_h, [&] { MB_CK(cudaEventRecord(ev_other, c.st)); });
  launch_host(c, "cudaStreamWaitEvent", batch, reps_h, [&] { MB_CK(cudaStreamWaitEvent(c.st, ev_other, 0)); });
  launch_host(c, "cudaMemcpyAsync_d2d_4KiB", batch, reps_h,
              [&] { MB_CK(cudaMemcpyAsync(pool + 8192, pool, 4096, cudaMemcpyDeviceToDevice, c.st)); });
  launch_host(c, "cublasLtMatmul_64_bf16", batch, reps_h, [&] { small.run(pool, pool + 65536, pool + 131072, c.st); });

  // --- many thousands of launches, no gate: the sustained rate
  for (int n : {batch, stream_n}) {
    std::vector<double> host, gpu;
    for (int r = 0; r < 7; ++r) {
      MB_CK(cudaStreamSynchronize(c.st));
      MB_CK(cudaEventRecord(c.e0, c.st));
      const double a = mb::now_s();
      for (int i = 0; i < n; ++i)
        empty_kernel<<<1, 32, 0, c.st>>>();
      const double b = mb::now_s();
      MB_CK_LAUNCH();
      MB_CK(cudaEventRecord(c.e1, c.st));
      MB_CK(cudaStreamSynchronize(c.st));
      if (r >= 2) {
        host.push_back(1e9 * (b - a) / n);
        gpu.push_back(elapsed_ns(c.e0, c.e1) / n);
      }
    }
    mb::Row row;
    row.s("test", "launch_stream")
        .s("api", "kernel_empty_1x32")
        .i("calls", n)
        .f("host_ns", mb::median(host))
        .f("min_ns", mb::minimum(host))
        .f("gpu_ns", mb::median(gpu))
        .i("reps", static_cast<long long>(host.size()));
    rep.add(row);
    std::fprintf(stderr, "launch_stream %6d calls: host %6.0f ns, gpu %6.0f ns per kernel\n", n, mb::median(host),
                 mb::median(gpu));
  }

  bool truncated = false;
  // --- GPU floor per kernel class
  const int n_floor = std::min(200, queue_cap), reps_f = 15;
  gpu_floor(c, "empty", 0, 0, 0, n_floor, reps_f, [&](int, cudaStream_t s) {
    empty_kernel<<<1, 32, 0, s>>>();
    MB_CK_LAUNCH();
  });
  gpu_floor(c, "empty_full", 0, 0, 0, n_floor, reps_f, [&](int, cudaStream_t s) {
    empty_kernel<<<4 * c.sms, 256, 0, s>>>();
    MB_CK_LAUNCH();
  });
  for (long kib : copy_kib) {
    if (mb::now_s() - t0 > budget_s) {
      truncated = true;
      break;
    }
    const size_t moved = static_cast<size_t>(kib) << 10, arr = moved / 2, n4 = arr / 16;
    const size_t nsets  = std::max<size_t>(1, std::min<size_t>(64, pool_bytes / moved));
    const unsigned grid = static_cast<unsigned>(std::min<size_t>((n4 + 255) / 256, static_cast<size_t>(8 * c.sms)));
    const int n         = kib >= 16384 ? 40 : n_floor;
    gpu_floor(c, "copy", static_cast<long>(moved), static_cast<double>(moved), 0, n, reps_f,
              [&](int i, cudaStream_t s) {
                char *b = pool + (static_cast<size_t>(i) % nsets) * moved;
                copy_kernel<<<grid, 256, 0, s>>>(reinterpret_cast<const float4 *>(b),
                                                 reinterpret_cast<float4 *>(b + arr), n4);
                MB_CK_LAUNCH();
              });
  }
  for (long d : gemm_dims) {
    if (mb::now_s() - t0 > budget_s) {
      truncated = true;
      break;
    }
    mb::GemmShape sh;
    sh.m = sh.n = sh.k = d;
    mb::LtGemm g(lt);
    if (!g.setup(sh, &err)) {
      std::fprintf(stderr, "gemm %ld: %s\n", d, err.c_str());
      continue;
    }
    const size_t set = (sh.a_bytes() + sh.b_bytes() + sh.d_bytes() + 255) & ~size_t(255);
    const size_t nsets =
        std::max<size_t>(1, std::min<size_t>(std::min<size_t>(64, (3 * c.l2) / set + 1), pool_bytes / set));
    const int n = d >= 1024 ? 40 : n_floor;
    gpu_floor(c, "gemm", d, static_cast<double>(set), sh.flops(), n, reps_f, [&](int i, cudaStream_t s) {
      char *b = pool + (static_cast<size_t>(i) % nsets) * set;
      g.run(b, b + sh.a_bytes(), b + sh.a_bytes() + sh.b_bytes(), s);
    });
  }

  // --- CUDA graphs of N empty kernels: host cost of a launch, GPU time per node
  for (int nodes : {1, 10, 100, 1000}) {
    cudaGraph_t g;
    cudaGraphExec_t exec;
    MB_CK(cudaStreamBeginCapture(c.st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nodes; ++i)
      empty_kernel<<<1, 32, 0, c.st>>>();
    MB_CK(cudaStreamEndCapture(c.st, &g));
    const double a = mb::now_s();
    MB_CK(cudaGraphInstantiate(&exec, g, 0));
    const double inst_ns = 1e9 * (mb::now_s() - a);
    MB_CK(cudaGraphUpload(exec, c.st));
    std::vector<double> host, gpu;
    for (int r = 0; r < 32; ++r) {
      MB_CK(cudaStreamSynchronize(c.st));
      MB_CK(cudaEventRecord(c.e0, c.st));
      const double h0 = mb::now_s();
      MB_CK(cudaGraphLaunch(exec, c.st));
      const double h1 = mb::now_s();
      MB_CK(cudaEventRecord(c.e1, c.st));
      MB_CK(cudaStreamSynchronize(c.st));
      if (r >= 2) {
        host.push_back(1e9 * (h1 - h0));
        gpu.push_back(elapsed_ns(c.e0, c.e1) / nodes);
      }
    }
    // Back to back: the host cost per launch when launches follow each other.
    std::vector<double> b2b;
    for (int r = 0; r < 7; ++r) {
      c.gate.hold(c.st);
      const double h0 = mb::now_s();
      for (int i = 0; i < 32; ++i)
        MB_CK(cudaGraphLaunch(exec, c.st));
      const double h1 = mb::now_s();
      c.gate.release();
      MB_CK(cudaStreamSynchronize(c.st));
      c.gate.finish();
      b2b.push_back(1e9 * (h1 - h0) / 32);
    }
    mb::Row row;
    row.s("test", "graph_launch")
        .s("node", "kernel_empty_1x32")
        .i("nodes", nodes)
        .f("host_ns", mb::median(host))
        .f("min_ns", mb::minimum(host))
        .f("host_ns_back_to_back", mb::median(b2b))
        .f("instantiate_ns", inst_ns)
        .f("gpu_ns", mb::median(gpu))
        .i("reps", static_cast<long long>(host.size()));
    rep.add(row);
    std::fprintf(stderr, "graph_launch %4d nodes: host %7.0f ns (b2b %7.0f), gpu %6.0f ns per node\n", nodes,
                 mb::median(host), mb::median(b2b), mb::median(gpu));
    MB_CK(cudaGraphExecDestroy(exec));
    MB_CK(cudaGraphDestroy(g));
  }

  // --- host synchronizations
  void *pinned = nullptr;
  MB_CK(cudaMallocHost(&pinned, 4096));
  std::vector<char> pageable(4096);
  const int reps_s = 200;
  MB_CK(cudaStreamSynchronize(c.st));
  sync_row(c, "cudaStreamSynchronize_idle", 0, reps_s, [&] { MB_CK(cudaStreamSynchronize(c.st)); });
  MB_CK(cudaEventRecord(c.e0, c.st));
  MB_CK(cudaStreamSynchronize(c.st));
  sync_row(c, "cudaEventSynchronize_done", 0, reps_s, [&] { MB_CK(cudaEventSynchronize(c.e0)); });
  sync_row(c, "cudaEventQuery_done", 0, reps_s, [&] { MB_CK(cudaEventQuery(c.e0)); });
  sync_row(c, "cudaDeviceSynchronize_idle", 0, reps_s, [&] { MB_CK(cudaDeviceSynchronize()); });
  sync_row(c, "kernel_empty+cudaStreamSynchronize", 0, reps_s, [&] {
    empty_kernel<<<1, 32, 0, c.st>>>();
    MB_CK(cudaStreamSynchronize(c.st));
  });
  sync_row(c, "kernel_empty+eventRecord+cudaEventSynchronize", 0, reps_s, [&] {
    empty_kernel<<<1, 32, 0, c.st>>>();
    MB_CK(cudaEventRecord(c.e1, c.st));
    MB_CK(cudaEventSynchronize(c.e1));
  });
  for (long b : {4L, 8L, 4096L}) {
    sync_row(c, "memcpyAsync_d2h_pinned+cudaStreamSynchronize", b, reps_s, [&] {
      MB_CK(cudaMemcpyAsync(pinned, pool, static_cast<size_t>(b), cudaMemcpyDeviceToHost, c.st));
      MB_CK(cudaStreamSynchronize(c.st));
    });
    sync_row(c, "memcpyAsync_d2h_pageable+cudaStreamSynchronize", b, reps_s, [&] {
      MB_CK(cudaMemcpyAsync(pageable.data(), pool, static_cast<size_t>(b), cudaMemcpyDeviceToHost, c.st));
      MB_CK(cudaStreamSynchronize(c.st));
    });
  }
  sync_row(c, "cudaMemcpy_d2h_pageable", 4, reps_s,
           [&] { MB_CK(cudaMemcpy(pageable.data(), pool, 4, cudaMemcpyDeviceToHost)); });

  MB_CK(cudaFreeHost(pinned));
  MB_CK(cudaEventDestroy(ev_other));
  MB_CK(cudaEventDestroy(c.e0));
  MB_CK(cudaEventDestroy(c.e1));
  cudaFree(pool);
  return rep.close(truncated, truncated ? "time budget reached: the largest copy / GEMM sizes were skipped" : "");
}
