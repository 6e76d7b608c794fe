// mb_p2p_sm: what k SMs move over NVLink with plain loads and stores (kind "p2p_sm").
//
//   mb_p2p_sm [--blocks 1,2,4,8,16,32,64,132] [--sizes-mib 64,256] [--reps 10] [--out p2p_sm.json]
//
// Transformer Engine's userbuffers kernels without NVLink multicast (UB_SKIPMC=1) move their data
// with SM loads and stores through peer mappings of the other GPUs' buffers; their cost is a
// rate per CTA, not an NCCL channel's. This times a kernel of k CTAs (1024 threads each, 16-byte
// accesses, grid-stride) on GPU 0 and 1 with peer access enabled, copying `bytes`:
//   push_0to1   GPU 0's kernel reads its own buffer and stores into GPU 1's (a peer write)
//   pull_1to0   GPU 0's kernel loads from GPU 1's buffer into its own (a peer read)
//   push_bidir  both GPUs push to each other at once (a ring step of two): gbps is per direction
//   local       GPU 0 copies inside its own memory (the reference)
// For each (mode, k, bytes): two warm-ups, then `reps` runs timed with CUDA events on GPU 0's
// stream (for push_bidir GPU 1's stream starts on GPU 0's start event and GPU 0's end waits for
// it); gbps = bytes / median time. Correctness: one push and one pull are checked element by
// element. Needs 2 GPUs with peer access (exit 3 otherwise).
#include "mb_common.h"

namespace {

__global__ void copy16(const int4 *__restrict__ src, int4 *__restrict__ dst, size_t n)
{
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

bool check_copy(const int4 *src, int src_dev, const int4 *dst, int dst_dev, size_t n)
{
  std::vector<int4> a(n), b(n);
  MB_CK(cudaSetDevice(src_dev));
  MB_CK(cudaMemcpy(a.data(), src, n * sizeof(int4), cudaMemcpyDeviceToHost));
  MB_CK(cudaSetDevice(dst_dev));
  MB_CK(cudaMemcpy(b.data(), dst, n * sizeof(int4), cudaMemcpyDeviceToHost));
  return std::memcmp(a.data(), b.data(), n * sizeof(int4)) == 0;
}

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  int ndev = 0;
  MB_CK(cudaGetDeviceCount(&ndev));
  if (ndev < 2) {
    std::fprintf(stderr, "mb_p2p_sm: needs 2 GPUs, found %d\n", ndev);
    return 3;
  }
  int can01 = 0, can10 = 0;
  MB_CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
  MB_CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
  if (!can01 || !can10) {
    std::fprintf(stderr, "mb_p2p_sm: GPUs 0 and 1 have no peer access\n");
    return 3;
  }
  const std::vector<long> blocks = mb::parse_list(args.get("--blocks", "1,2,4,8,16,32,64,132"));
  const std::vector<long> sizes  = mb::parse_list(args.get("--sizes-mib", "64,256"));
  const int reps                 = static_cast<int>(args.geti("--reps", 10));
  size_t max_bytes               = 0;
  for (long s : sizes)
    max_bytes = std::max(max_bytes, static_cast<size_t>(s) << 20);
  mb::Report rep("p2p_sm", args.get("--out", "p2p_sm.json"), args.joined("mb_p2p_sm"), {0, 1});
  rep.env().i("threads_per_block", 1024).i("access_bytes", 16);

  char *src[2], *dst[2];
  cudaStream_t st[2];
  for (int d = 0; d < 2; ++d) {
    MB_CK(cudaSetDevice(d));
    MB_CK(cudaDeviceEnablePeerAccess(1 - d, 0));
    MB_CK(cudaMalloc(&src[d], max_bytes));
    MB_CK(cudaMalloc(&dst[d], max_bytes));
    mb::fill(reinterpret_cast<float *>(src[d]), max_bytes / 4, 11 + d);
    MB_CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    MB_CK(cudaDeviceSynchronize());
  }
  { // correctness: a push 0 -> 1 and a pull 1 -> 0 of 4 MiB with 8 CTAs
    const size_t n = (4u << 20) / sizeof(int4);
    MB_CK(cudaSetDevice(0));
    copy16<<<8, 1024, 0, st[0]>>>(reinterpret_cast<const int4 *>(src[0]), reinterpret_cast<int4 *>(dst[1]), n);
    MB_CK_LAUNCH();
    copy16<<<8, 1024, 0, st[0]>>>(reinterpret_cast<const int4 *>(src[1]), reinterpret_cast<int4 *>(dst[0]), n);
    MB_CK_LAUNCH();
    MB_CK(cudaStreamSynchronize(st[0]));
    bool ok = check_copy(reinterpret_cast<int4 *>(src[0]), 0, reinterpret_cast<int4 *>(dst[1]), 1, n) &&
              check_copy(reinterpret_cast<int4 *>(src[1]), 1, reinterpret_cast<int4 *>(dst[0]), 0, n);
    rep.env().b("copies_checked", ok);
    if (!ok) {
      std::fprintf(stderr, "mb_p2p_sm: a peer copy did not arrive intact\n");
      return 4;
    }
  }

  for (const char *mode : {"push_0to1", "pull_1to0", "push_bidir", "local"}) {
    const std::string m = mode;
    for (long mib : sizes) {
      const size_t bytes = static_cast<size_t>(mib) << 20, n = bytes / sizeof(int4);
      for (long k : blocks) {
        const int4 *s0 = reinterpret_cast<const int4 *>(m == "pull_1to0" ? src[1] : src[0]);
        int4 *d0       = reinterpret_cast<int4 *>(m == "push_0to1" || m == "push_bidir" ? dst[1] : dst[0]);
        auto run       = [&](cudaEvent_t e0, cudaEvent_t e1, cudaEvent_t f1) {
          MB_CK(cudaSetDevice(0));
          MB_CK(cudaEventRecord(e0, st[0]));
          if (m == "push_bidir") {
            MB_CK(cudaSetDevice(1));
            MB_CK(cudaStreamWaitEvent(st[1], e0, 0));
            copy16<<<static_cast<unsigned>(k), 1024, 0, st[1]>>>(reinterpret_cast<const int4 *>(src[1]),
                                                                 reinterpret_cast<int4 *>(dst[0]), n);
            MB_CK_LAUNCH();
            MB_CK(cudaEventRecord(f1, st[1]));
            MB_CK(cudaSetDevice(0));
          }
          copy16<<<static_cast<unsigned>(k), 1024, 0, st[0]>>>(s0, d0, n);
          MB_CK_LAUNCH();
          if (m == "push_bidir")
            MB_CK(cudaStreamWaitEvent(st[0], f1, 0));
          MB_CK(cudaEventRecord(e1, st[0]));
        };
        std::vector<double> ns;
        for (int r = 0; r < reps + 2; ++r) {
          cudaEvent_t e0, e1, f1;
          MB_CK(cudaSetDevice(0));
          MB_CK(cudaEventCreate(&e0));
          MB_CK(cudaEventCreate(&e1));
          MB_CK(cudaSetDevice(1));
          MB_CK(cudaEventCreateWithFlags(&f1, cudaEventDisableTiming));
          run(e0, e1, f1);
          MB_CK(cudaSetDevice(0));
          MB_CK(cudaEventSynchronize(e1));
          float ms = 0;
          MB_CK(cudaEventElapsedTime(&ms, e0, e1));
          if (r >= 2)
            ns.push_back(1e6 * ms);
          MB_CK(cudaEventDestroy(e0));
          MB_CK(cudaEventDestroy(e1));
          MB_CK(cudaSetDevice(1));
          MB_CK(cudaEventDestroy(f1));
        }
        const double med = mb::median(ns);
        rep.add(mb::Row()
                    .s("mode", m)
                    .i("blocks", k)
                    .i("bytes", static_cast<long long>(bytes))
                    .f("median_ns", med)
                    .f("min_ns", mb::minimum(ns))
                    .f("gbps", static_cast<double>(bytes) / med)
                    .i("reps", reps)
                    .s("status", "ok"));
        std::fprintf(stderr, "%-10s %5ld MiB %4ld CTAs: %7.1f GB/s\n", mode, mib, k, static_cast<double>(bytes) / med);
      }
    }
  }
  for (int d = 0; d < 2; ++d) {
    MB_CK(cudaSetDevice(d));
    cudaFree(src[d]);
    cudaFree(dst[d]);
  }
  return rep.close(false);
}
