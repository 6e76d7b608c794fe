// mb_collectives: NCCL collective time over message size and CTA count, for groups of 2, 4,
// 8, ... GPUs of one machine (kind "collective").
//
//   mb_collectives [--group-sizes 8,4,2] [--ctas 0,1,2,4,8,16,32] [--min-bytes 1024]
//                  [--max-bytes 4294967296] [--no-gate] [--out collective.json] [--budget-s 150]
//
// One process; a group of n ranks is GPUs 0..n-1, one rank each (see mb_nccl.h for the size
// and busbw conventions and the launch gate). --group-sizes defaults to every power of two from
// the GPU count down to 2; the groups run one after another, each with the time its share of
// what is left of --budget-s (a group that finishes early leaves its rest to the next). bf16
// data, out of place, uniform random inputs. Per group and CTA setting (0 = NCCL default) fresh
// communicators; each collective x size: an ungated warm-up, then reps back-to-back launches
// behind the launch gate with events on every rank; a rep's time is the slowest rank's; the
// median is reported. Every row records its group size (nranks).
// NVLink SHARP (NVLS) must stay off: the program refuses to run unless NCCL_NVLS_ENABLE=0.
#include "mb_nccl.h"

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int ndev = mb::nccl_devices("mb_collectives", 2);
  if (ndev < 0)
    return 1;
  const std::vector<int> groups = mb::group_sizes(args.get("--group-sizes", ""), ndev);
  const std::vector<long> ctas  = mb::parse_list(args.get("--ctas", "0,1,2,4,8,16,32"));
  const size_t min_b            = static_cast<size_t>(args.geti("--min-bytes", 1024));
  const size_t max_b            = static_cast<size_t>(args.geti("--max-bytes", 4294967296L));
  const double budget_s         = args.getf("--budget-s", 150.0);
  const int nused               = *std::max_element(groups.begin(), groups.end());
  std::vector<int> devs(nused);
  for (int d = 0; d < nused; ++d)
    devs[d] = d;
  mb::Report rep("collective", args.get("--out", "collective.json"), args.joined("mb_collectives"), devs);
  mb::Gate gate(!args.has("--no-gate"));
  rep.env()
      .s("nccl_version", mb::nccl_version_string())
      .i("nranks", nused)
      .s("group_sizes", mb::join_ints(groups))
      .s("dtype", "bf16")
      .b("launch_gate", gate.enabled());
  const double t0 = mb::now_s();

  // One buffer pair per GPU of the largest group, each big enough for any collective.
  std::vector<char *> send(nused), recv(nused);
  std::vector<cudaStream_t> st(nused);
  for (int d = 0; d < nused; ++d) {
    MB_CK(cudaSetDevice(d));
    MB_CK(cudaMalloc(&send[d], max_b));
    MB_CK(cudaMalloc(&recv[d], max_b));
    mb::fill(reinterpret_cast<__nv_bfloat16 *>(send[d]), max_b / 2, 100 + d);
    MB_CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    MB_CK(cudaDeviceSynchronize());
  }
  const mb::Coll colls[] = {mb::Coll::AllGather, mb::Coll::ReduceScatter, mb::Coll::AllReduce, mb::Coll::AllToAll,
                            mb::Coll::SendRecv};
  std::string note;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const int n        = groups[gi];
    const double g0    = mb::now_s();
    const double share = (budget_s - (g0 - t0)) / static_cast<double>(groups.size() - gi);
    const std::vector<cudaStream_t> gst(st.begin(), st.begin() + n);
    bool truncated = false;
    for (long c : ctas) {
      if (mb::now_s() - g0 > share) {
        truncated = true;
        break;
      }
      mb::Comms comms(n, static_cast<int>(c));
      for (mb::Coll coll : colls) {
        for (size_t bytes = min_b; bytes <= max_b; bytes *= 4) {
          if (bytes < 2u * n * n)
            continue; // every rank needs whole elements per peer
          if (mb::now_s() - g0 > share) {
            truncated = true;
            break;
          }
          auto launch            = [&](int) { comms.launch(coll, bytes, send, recv, gst); };
          std::vector<double> w  = mb::time_multi(gst, bytes < (1u << 20) ? 5 : 2, launch); // ungated warm-up
          const double est       = w.back();
          const int reps         = std::max(3, std::min(50, static_cast<int>(2e7 / std::max(est, 1.0)) + 1));
          bool gated             = false;
          std::vector<double> ns = mb::time_multi(gst, reps, launch, &gate, &gated);
          const double med       = mb::median(ns);
          const size_t moved     = mb::coll_bytes(coll, bytes, n);
          const double algbw     = static_cast<double>(moved) / med;
          mb::Row row;
          row.s("collective", mb::coll_name(coll))
              .i("ctas_requested", c)
              .i("nranks", n)
              .s("dtype", "bf16")
              .i("size_bytes", static_cast<long long>(moved))
              .f("median_ns", med)
              .f("min_ns", mb::minimum(ns))
              .f("algbw_gbps", algbw)
              .f("busbw_gbps", algbw * mb::busbw_factor(coll, n))
              .i("reps", reps)
              .b("launch_gated", gated);
          rep.add(row);
        }
        std::fprintf(stderr, "[%6.1fs] n=%d ctas=%ld %s done\n", mb::now_s() - t0, n, c, mb::coll_name(coll));
      }
    }
    if (truncated)
      note += (note.empty() ? "time budget reached for n=" : ",") + std::to_string(n);
  }
  rep.env().i("launch_gate_timeouts", gate.timeouts());
  for (int d = 0; d < nused; ++d) {
    MB_CK(cudaSetDevice(d));
    cudaFree(send[d]);
    cudaFree(recv[d]);
  }
  return rep.close(!note.empty(), note);
}
