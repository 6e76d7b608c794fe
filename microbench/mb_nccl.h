// mb_nccl.h: one process driving every visible GPU through NCCL (single thread, group calls).
//
// Communicators are made with ncclCommInitRankConfig inside one group, so each CTA setting
// (ncclConfig_t minCTAs = maxCTAs = c; c = 0 leaves NCCL's default) gets fresh communicators.
// Collectives follow nccl-tests' conventions for size and bus bandwidth:
//   size_bytes   AG: the gathered output; RS: the input; AR: the buffer; A2A: one rank's send
//                buffer; sendrecv: the buffer each rank sends
//   algbw_gbps   size_bytes / time_ns
//   busbw_gbps   algbw x 2(n-1)/n (AR), x (n-1)/n (AG, RS, A2A), x 1 (sendrecv)
// All-to-all is a group of ncclSend/ncclRecv to every rank, itself included, as nccl-tests does.
// Sendrecv: every rank sends to rank+1 and receives from rank-1 at once.
#pragma once

#include <nccl.h>

#include "mb_common.h"

#define MB_CKN(call)                                                                             \
  do {                                                                                           \
    ncclResult_t mb_r_ = (call);                                                                 \
    if (mb_r_ != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(mb_r_)); \
      std::exit(6);                                                                              \
    }                                                                                            \
  } while (0)

namespace mb {

enum class Coll { AllGather, ReduceScatter, AllReduce, AllToAll, SendRecv };

inline const char *coll_name(Coll c) {
  switch (c) {
    case Coll::AllGather: return "all_gather";
    case Coll::ReduceScatter: return "reduce_scatter";
    case Coll::AllReduce: return "all_reduce";
    case Coll::AllToAll: return "all_to_all";
    case Coll::SendRecv: return "sendrecv";
  }
  return "?";
}

inline double busbw_factor(Coll c, int n) {
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::SendRecv: return 1.0;
    default: return static_cast<double>(n - 1) / n;
  }
}

inline std::string nccl_version_string() {
  int v = 0;
  ncclGetVersion(&v);
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

struct Comms {
  int n = 0;
  std::vector<ncclComm_t> comm;

  // ctas == 0: NCCL's defaults; otherwise minCTAs = maxCTAs = ctas.
  Comms(int ndev, int ctas) : n(ndev), comm(ndev) {
    ncclUniqueId id;
    MB_CKN(ncclGetUniqueId(&id));
    MB_CKN(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      MB_CK(cudaSetDevice(r));
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      if (ctas > 0) {
        cfg.minCTAs = ctas;
        cfg.maxCTAs = ctas;
      }
      MB_CKN(ncclCommInitRankConfig(&comm[r], n, id, r, &cfg));
    }
    MB_CKN(ncclGroupEnd());
  }
  ~Comms() {
    for (auto c : comm) ncclCommDestroy(c);
  }
  Comms(const Comms &) = delete;
  Comms &operator=(const Comms &) = delete;

  // Enqueues one collective of `size_bytes` (bf16) on every rank's stream.
  void launch(Coll c, size_t size_bytes, const std::vector<char *> &send, const std::vector<char *> &recv,
              const std::vector<cudaStream_t> &st) const {
    const size_t count = size_bytes / 2;  // bf16 elements
    MB_CKN(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      switch (c) {
        case Coll::AllGather:
          MB_CKN(ncclAllGather(send[r], recv[r], count / n, ncclBfloat16, comm[r], st[r]));
          break;
        case Coll::ReduceScatter:
          MB_CKN(ncclReduceScatter(send[r], recv[r], count / n, ncclBfloat16, ncclSum, comm[r], st[r]));
          break;
        case Coll::AllReduce:
          MB_CKN(ncclAllReduce(send[r], recv[r], count, ncclBfloat16, ncclSum, comm[r], st[r]));
          break;
        case Coll::AllToAll: {
          const size_t per = count / n;
          for (int p = 0; p < n; ++p) {
            MB_CKN(ncclSend(send[r] + p * per * 2, per, ncclBfloat16, p, comm[r], st[r]));
            MB_CKN(ncclRecv(recv[r] + p * per * 2, per, ncclBfloat16, p, comm[r], st[r]));
          }
          break;
        }
        case Coll::SendRecv:
          MB_CKN(ncclSend(send[r], count, ncclBfloat16, (r + 1) % n, comm[r], st[r]));
          MB_CKN(ncclRecv(recv[r], count, ncclBfloat16, (r + n - 1) % n, comm[r], st[r]));
          break;
      }
    }
    MB_CKN(ncclGroupEnd());
  }
};

// Per-rank event pairs around `reps` back-to-back launches; a rep's time is the slowest rank's.
template <typename F>
inline std::vector<double> time_multi(const std::vector<cudaStream_t> &st, int reps, F &&fn) {
  const int n = static_cast<int>(st.size());
  std::vector<std::vector<cudaEvent_t>> ev(n, std::vector<cudaEvent_t>(2 * reps));
  for (int r = 0; r < n; ++r) {
    MB_CK(cudaSetDevice(r));
    for (auto &e : ev[r]) MB_CK(cudaEventCreate(&e));
  }
  for (int i = 0; i < reps; ++i) {
    for (int r = 0; r < n; ++r) {
      MB_CK(cudaSetDevice(r));
      MB_CK(cudaEventRecord(ev[r][2 * i], st[r]));
    }
    fn(i);
    for (int r = 0; r < n; ++r) {
      MB_CK(cudaSetDevice(r));
      MB_CK(cudaEventRecord(ev[r][2 * i + 1], st[r]));
    }
  }
  std::vector<double> ns(reps, 0.0);
  for (int r = 0; r < n; ++r) {
    MB_CK(cudaSetDevice(r));
    MB_CK(cudaStreamSynchronize(st[r]));
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      MB_CK(cudaEventElapsedTime(&ms, ev[r][2 * i], ev[r][2 * i + 1]));
      ns[i] = std::max(ns[i], 1e6 * ms);
    }
    for (auto &e : ev[r]) MB_CK(cudaEventDestroy(e));
  }
  return ns;
}

}  // namespace mb
