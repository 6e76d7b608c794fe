// mb_collectives: NCCL collective time over message size and CTA count (kind "collective").
//
//   mb_collectives [--ctas 0,1,2,4,8,16,32] [--min-bytes 1024] [--max-bytes 4294967296]
//                  [--out collective.json] [--budget-s 150]
//
// One process, every visible GPU a rank (see mb_nccl.h for the size and busbw conventions).
// bf16 data, out of place, uniform random inputs. For each CTA setting (0 = NCCL default)
// fresh communicators; each size x collective: warm-up, then reps back-to-back launches with
// events on every rank; a rep's time is the slowest rank's; the median is reported.
// NVLink SHARP (NVLS) must stay off: the program refuses to run unless NCCL_NVLS_ENABLE=0.
#include "mb_nccl.h"

int main(int argc, char **argv) {
  mb::Args args(argc, argv);
  const char *nvls = std::getenv("NCCL_NVLS_ENABLE");
  if (!nvls || std::string(nvls) != "0") {
    std::fprintf(stderr, "refusing to run: export NCCL_NVLS_ENABLE=0 first\n");
    return 1;
  }
  int ndev = 0;
  MB_CK(cudaGetDeviceCount(&ndev));
  if (ndev < 2) {
    std::fprintf(stderr, "mb_collectives needs 2 or more GPUs (found %d)\n", ndev);
    return 1;
  }
  const std::vector<long> ctas = mb::parse_list(args.get("--ctas", "0,1,2,4,8,16,32"));
  const size_t min_b = static_cast<size_t>(args.geti("--min-bytes", 1024));
  const size_t max_b = static_cast<size_t>(args.geti("--max-bytes", 4294967296L));
  const double budget_s = args.getf("--budget-s", 150.0);
  std::vector<int> devs(ndev);
  for (int d = 0; d < ndev; ++d) devs[d] = d;
  mb::Report rep("collective", args.get("--out", "collective.json"), args.joined("mb_collectives"), devs);
  rep.env().s("nccl_version", mb::nccl_version_string()).i("nranks", ndev).s("dtype", "bf16");
  const double t0 = mb::now_s();

  std::vector<char *> send(ndev), recv(ndev);
  std::vector<cudaStream_t> st(ndev);
  for (int d = 0; d < ndev; ++d) {
    MB_CK(cudaSetDevice(d));
    MB_CK(cudaMalloc(&send[d], max_b));
    MB_CK(cudaMalloc(&recv[d], max_b));
    mb::fill(reinterpret_cast<__nv_bfloat16 *>(send[d]), max_b / 2, 100 + d);
    MB_CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    MB_CK(cudaDeviceSynchronize());
  }
  const mb::Coll colls[] = {mb::Coll::AllGather, mb::Coll::ReduceScatter, mb::Coll::AllReduce, mb::Coll::AllToAll,
                            mb::Coll::SendRecv};
  bool truncated = false;
  for (long c : ctas) {
    if (mb::now_s() - t0 > budget_s) {
      truncated = true;
      break;
    }
    mb::Comms comms(ndev, static_cast<int>(c));
    for (mb::Coll coll : colls) {
      for (size_t bytes = min_b; bytes <= max_b; bytes *= 4) {
        if (bytes < 2u * ndev * ndev) continue;  // every rank needs whole elements per peer
        if (mb::now_s() - t0 > budget_s) {
          truncated = true;
          break;
        }
        auto launch = [&](int) { comms.launch(coll, bytes, send, recv, st); };
        std::vector<double> w = mb::time_multi(st, bytes < (1u << 20) ? 5 : 2, launch);
        const double est = w.back();
        const int reps = std::max(3, std::min(50, static_cast<int>(2e7 / std::max(est, 1.0)) + 1));
        std::vector<double> ns = mb::time_multi(st, reps, launch);
        const double med = mb::median(ns);
        const double algbw = static_cast<double>(bytes) / med;
        mb::Row row;
        row.s("collective", mb::coll_name(coll)).i("ctas_requested", c).i("nranks", ndev).s("dtype", "bf16")
            .i("size_bytes", static_cast<long long>(bytes)).f("median_ns", med).f("min_ns", mb::minimum(ns))
            .f("algbw_gbps", algbw).f("busbw_gbps", algbw * mb::busbw_factor(coll, ndev)).i("reps", reps);
        rep.add(row);
      }
      std::fprintf(stderr, "[%6.1fs] ctas=%ld %s done\n", mb::now_s() - t0, c, mb::coll_name(coll));
    }
  }
  for (int d = 0; d < ndev; ++d) {
    MB_CK(cudaSetDevice(d));
    cudaFree(send[d]);
    cudaFree(recv[d]);
  }
  return rep.close(truncated, truncated ? "time budget reached" : "");
}
