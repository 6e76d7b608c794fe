// mb_copy_engine: copy-engine transfers between GPUs (kind "copy_engine").
//
//   mb_copy_engine [--sizes-kib-min 1] [--sizes-mib-max 1024] [--out copy_engine.json]
//
// This is how TE's userbuffers ring-exchange moves data (use_ce=1: cudaMemcpyAsync to the
// peer's pointer), so it costs no SMs. Directions, GPU 0 and 1 (peer access enabled when the
// driver allows it; the record says whether):
//   peer_0to1, peer_1to0  cudaMemcpyPeerAsync one way, timed with events on the source's stream
//   peer_bidir            both directions at once (stream 1 waits on stream 0's start event,
//                         stream 0 waits on stream 1's end); gbps counts both directions' bytes
//   local_d2d             cudaMemcpyAsync inside GPU 0, gbps counts the bytes copied once
// Sizes go up x4 from 1 KiB. With one GPU only local_d2d runs.
#include "mb_common.h"

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  int ndev = 0;
  MB_CK(cudaGetDeviceCount(&ndev));
  const size_t max_bytes = static_cast<size_t>(args.geti("--sizes-mib-max", 1024)) << 20;
  const size_t min_bytes = static_cast<size_t>(args.geti("--sizes-kib-min", 1)) << 10;
  const double budget_s  = args.getf("--budget-s", 40.0);
  std::vector<int> devs  = {0};
  if (ndev >= 2)
    devs.push_back(1);
  mb::Report rep("copy_engine", args.get("--out", "copy_engine.json"), args.joined("mb_copy_engine"), devs);
  const double t0 = mb::now_s();

  int can01 = 0, can10 = 0;
  if (ndev >= 2) {
    MB_CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
    MB_CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
  }
  rep.env().b("peer_access_0to1", can01).b("peer_access_1to0", can10);
  std::vector<char *> src(devs.size()), dst(devs.size());
  std::vector<cudaStream_t> st(devs.size());
  for (size_t d = 0; d < devs.size(); ++d) {
    MB_CK(cudaSetDevice(devs[d]));
    if (devs.size() == 2 && (d == 0 ? can01 : can10))
      MB_CK(cudaDeviceEnablePeerAccess(devs[1 - d], 0));
    MB_CK(cudaMalloc(&src[d], max_bytes));
    MB_CK(cudaMalloc(&dst[d], max_bytes));
    mb::fill(reinterpret_cast<float *>(src[d]), max_bytes / 4, 3 + d);
    MB_CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    MB_CK(cudaDeviceSynchronize());
  }

  std::vector<std::string> modes = {"local_d2d"};
  if (devs.size() == 2)
    modes = {"peer_0to1", "peer_1to0", "peer_bidir", "local_d2d"};
  bool truncated = false;
  for (const std::string &mode : modes) {
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
      if (mb::now_s() - t0 > budget_s) {
        truncated = true;
        break;
      }
      const int s0 = mode == "peer_1to0" ? 1 : 0; // the stream the events live on
      MB_CK(cudaSetDevice(devs[s0]));
      cudaEvent_t mid_start, mid_end; // bidir handshakes
      MB_CK(cudaSetDevice(devs[0]));
      MB_CK(cudaEventCreateWithFlags(&mid_start, cudaEventDisableTiming));
      if (devs.size() == 2)
        MB_CK(cudaSetDevice(devs[1]));
      MB_CK(cudaEventCreateWithFlags(&mid_end, cudaEventDisableTiming));
      MB_CK(cudaSetDevice(devs[s0]));
      auto launch = [&](int) {
        if (mode == "peer_0to1") {
          MB_CK(cudaMemcpyPeerAsync(dst[1], devs[1], src[0], devs[0], bytes, st[0]));
        } else if (mode == "peer_1to0") {
          MB_CK(cudaMemcpyPeerAsync(dst[0], devs[0], src[1], devs[1], bytes, st[1]));
        } else if (mode == "peer_bidir") {
          MB_CK(cudaSetDevice(devs[0]));
          MB_CK(cudaEventRecord(mid_start, st[0]));
          MB_CK(cudaMemcpyPeerAsync(dst[1], devs[1], src[0], devs[0], bytes, st[0]));
          MB_CK(cudaSetDevice(devs[1]));
          MB_CK(cudaStreamWaitEvent(st[1], mid_start, 0));
          MB_CK(cudaMemcpyPeerAsync(dst[0], devs[0], src[1], devs[1], bytes, st[1]));
          MB_CK(cudaEventRecord(mid_end, st[1]));
          MB_CK(cudaSetDevice(devs[0]));
          MB_CK(cudaStreamWaitEvent(st[0], mid_end, 0));
        } else {
          MB_CK(cudaMemcpyAsync(dst[0], src[0], bytes, cudaMemcpyDeviceToDevice, st[0]));
        }
      };
      std::vector<double> w  = mb::time_reps(st[s0], 3, launch);
      const int reps         = std::max(5, std::min(100, static_cast<int>(2e7 / std::max(w[2], 1.0)) + 1));
      std::vector<double> ns = mb::time_reps(st[s0], reps, launch);
      if (devs.size() == 2) {
        MB_CK(cudaSetDevice(devs[1 - s0]));
        MB_CK(cudaDeviceSynchronize());
        MB_CK(cudaSetDevice(devs[s0]));
      }
      MB_CK(cudaEventDestroy(mid_start));
      MB_CK(cudaEventDestroy(mid_end));
      const double med   = mb::median(ns);
      const double moved = static_cast<double>(bytes) * (mode == "peer_bidir" ? 2 : 1);
      mb::Row row;
      row.s("mode", mode)
          .i("size_bytes", static_cast<long long>(bytes))
          .i("moved_bytes", std::llround(moved))
          .f("median_ns", med)
          .f("min_ns", mb::minimum(ns))
          .f("gbps", moved / med)
          .i("reps", reps);
      rep.add(row);
    }
    std::fprintf(stderr, "[%5.1fs] %s done\n", mb::now_s() - t0, mode.c_str());
  }
  return rep.close(truncated, truncated ? "time budget reached" : "");
}
