// mb_nccl.h: one process driving a group of GPUs through NCCL (single thread, group calls).
//
// A group of n ranks is GPUs 0..n-1 (rank r = device r); the programs measure groups of
// 2, 4, 8, ... GPUs of one machine in turn, one group at a time (the other GPUs idle).
// Communicators are made with ncclCommInitRankConfig inside one group call, so each
// (group size, CTA setting) (ncclConfig_t minCTAs = maxCTAs = c; c = 0 leaves NCCL's default)
// gets fresh communicators.
// Collectives follow nccl-tests' conventions for size and bus bandwidth:
//   size_bytes   AG: the gathered output; RS: the input; AR: the buffer; A2A: one rank's send
//                buffer; sendrecv: the buffer each rank sends (all rounded down to a multiple of
//                n elements where the collective splits the buffer over the ranks)
//   algbw_gbps   size_bytes / time_ns
//   busbw_gbps   algbw x 2(n-1)/n (AR), x (n-1)/n (AG, RS, A2A), x 1 (sendrecv)
// Buffers per rank: AG sends size/n and receives size; RS sends size and receives size/n; AR,
// A2A and sendrecv send and receive size; a buffer of the largest size serves every collective.
// All-to-all is a group of ncclSend/ncclRecv to every rank, itself included, as nccl-tests does.
// Sendrecv is a ring shift: every rank sends to rank+1 and receives from rank-1 at once (n = 2:
// both directions of the pair busy; n > 2: every GPU sends one message and receives another).
//
// Launch gate: one thread enqueues every rank's work, and with 8 ranks a rep's launches
// (n kernels + 2n events) take longer than a small collective runs, so back-to-back reps would
// time the host, and rank n-1 would start each collective late. The timed batches therefore
// start behind a gate: a one-thread kernel on every stream waits on a flag in mapped host memory
// while the host enqueues all reps, then the host opens it and every GPU starts at once and runs
// the reps back to back from its own queue. The gate opens by itself after 2 s (a host blocked
// inside an NCCL call until the GPU runs cannot deadlock); that batch counts as not gated and the
// gate stays off for the rest of the run (rows say "launch_gated").
#pragma once

#include <nccl.h>

#include "mb_common.h"

#define MB_CKN(call)                                                                                                   \
  do {                                                                                                                 \
    ncclResult_t mb_r_ = (call);                                                                                       \
    if (mb_r_ != ncclSuccess) {                                                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(mb_r_));                   \
      std::exit(6);                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace mb {

enum class Coll { AllGather, ReduceScatter, AllReduce, AllToAll, SendRecv };

inline const char *coll_name(Coll c)
{
  switch (c) {
  case Coll::AllGather:
    return "all_gather";
  case Coll::ReduceScatter:
    return "reduce_scatter";
  case Coll::AllReduce:
    return "all_reduce";
  case Coll::AllToAll:
    return "all_to_all";
  case Coll::SendRecv:
    return "sendrecv";
  }
  return "?";
}

inline double busbw_factor(Coll c, int n)
{
  switch (c) {
  case Coll::AllReduce:
    return 2.0 * (n - 1) / n;
  case Coll::SendRecv:
    return 1.0;
  default:
    return static_cast<double>(n - 1) / n;
  }
}

// The bytes a call of `size_bytes` really moves under the conventions above: AG, RS and A2A
// split the buffer into n equal bf16 parts, so the size rounds down to a multiple of 2n bytes.
inline size_t coll_bytes(Coll c, size_t size_bytes, int n)
{
  const size_t count = size_bytes / 2;
  switch (c) {
  case Coll::AllGather:
  case Coll::ReduceScatter:
  case Coll::AllToAll:
    return (count / n) * n * 2;
  default:
    return count * 2;
  }
}

inline std::string nccl_version_string()
{
  int v = 0;
  ncclGetVersion(&v);
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

// The GPUs an NCCL benchmark may use: NVLink SHARP must be off (NCCL_NVLS_ENABLE=0, as on the
// measurement machines) and `need` GPUs present; otherwise one line on stderr saying why and -1
// (the program exits 1).
inline int nccl_devices(const char *prog, int need)
{
  const char *nvls = std::getenv("NCCL_NVLS_ENABLE");
  if (!nvls || std::string(nvls) != "0") {
    std::fprintf(stderr, "refusing to run: export NCCL_NVLS_ENABLE=0 first\n");
    return -1;
  }
  int ndev = 0;
  MB_CK(cudaGetDeviceCount(&ndev));
  if (ndev < need) {
    std::fprintf(stderr, "%s needs %d or more GPUs (found %d)\n", prog, need, ndev);
    return -1;
  }
  return ndev;
}

// Group sizes to measure: "--group-sizes 8,4,2", or by default every power of two from the
// largest that fits down to 2 (plus ndev itself first when it is not a power of two).
inline std::vector<int> group_sizes(const char *arg, int ndev)
{
  std::vector<int> g;
  if (arg && *arg) {
    for (long x : parse_list(arg)) {
      if (x < 2 || x > ndev) {
        std::fprintf(stderr, "--group-sizes: %ld is not in 2..%d (the GPUs visible)\n", x, ndev);
        std::exit(1);
      }
      g.push_back(static_cast<int>(x));
    }
    return g;
  }
  int p = 2;
  while (p * 2 <= ndev)
    p *= 2;
  if (p != ndev)
    g.push_back(ndev);
  for (; p >= 2; p /= 2)
    g.push_back(p);
  return g;
}

inline std::string join_ints(const std::vector<int> &v)
{
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Launch gate (see the top of this file).
__device__ inline unsigned long long global_ns()
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

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

class Gate {
public:
  // on = false: hold/release/finish do nothing and finish() reports "not gated".
  explicit Gate(bool on) : enabled_(on)
  {
    if (!on)
      return;
    void *p = nullptr;
    MB_CK(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    host_    = static_cast<int *>(p);
    host_[0] = host_[1] = 0;
    void *d             = nullptr;
    MB_CK(cudaHostGetDevicePointer(&d, p, 0)); // with UVA the same address on every device
    dev_ = static_cast<int *>(d);
  }
  ~Gate()
  {
    if (host_)
      cudaFreeHost(host_);
  }
  Gate(const Gate &)            = delete;
  Gate &operator=(const Gate &) = delete;

  bool enabled() const { return enabled_; }
  int timeouts() const { return timeouts_; }

  // Holds stream `s` (of the current device) until release() or the timeout.
  void hold(cudaStream_t s)
  {
    if (!enabled_)
      return;
    gate_kernel<<<1, 1, 0, s>>>(dev_, dev_ + 1, 2000000000ull);
    MB_CK_LAUNCH();
  }
  void release()
  {
    if (enabled_)
      __atomic_store_n(&host_[0], 1, __ATOMIC_SEQ_CST);
  }
  // Call after every held stream was synchronized. True when the batch started on release();
  // after a timeout the gate switches itself off for good.
  bool finish()
  {
    if (!enabled_)
      return false;
    const bool ok = __atomic_load_n(&host_[1], __ATOMIC_SEQ_CST) == 0;
    __atomic_store_n(&host_[0], 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&host_[1], 0, __ATOMIC_SEQ_CST);
    if (!ok) {
      ++timeouts_;
      enabled_ = false;
      std::fprintf(stderr, "launch gate: the host did not finish enqueuing within 2 s; gate off from here\n");
    }
    return ok;
  }

private:
  bool enabled_;
  int timeouts_ = 0;
  int *host_ = nullptr, *dev_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
struct Comms {
  int n = 0;
  std::vector<ncclComm_t> comm;

  // n ranks on devices 0..n-1. ctas == 0: NCCL's defaults; otherwise minCTAs = maxCTAs = ctas.
  Comms(int nranks, int ctas) : n(nranks), comm(nranks)
  {
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
  ~Comms()
  {
    for (auto c : comm)
      ncclCommDestroy(c);
  }
  Comms(const Comms &)            = delete;
  Comms &operator=(const Comms &) = delete;

  // Enqueues one collective of `size_bytes` (bf16) on every rank's stream; send/recv/st hold
  // at least n entries (rank r's buffers and stream first).
  void launch(Coll c, size_t size_bytes, const std::vector<char *> &send, const std::vector<char *> &recv,
              const std::vector<cudaStream_t> &st) const
  {
    const size_t count = size_bytes / 2; // bf16 elements
    const size_t per   = count / n;      // per-rank part of AG / RS / A2A
    MB_CKN(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      switch (c) {
      case Coll::AllGather:
        MB_CKN(ncclAllGather(send[r], recv[r], per, ncclBfloat16, comm[r], st[r]));
        break;
      case Coll::ReduceScatter:
        MB_CKN(ncclReduceScatter(send[r], recv[r], per, ncclBfloat16, ncclSum, comm[r], st[r]));
        break;
      case Coll::AllReduce:
        MB_CKN(ncclAllReduce(send[r], recv[r], count, ncclBfloat16, ncclSum, comm[r], st[r]));
        break;
      case Coll::AllToAll:
        for (int p = 0; p < n; ++p) {
          MB_CKN(ncclSend(send[r] + p * per * 2, per, ncclBfloat16, p, comm[r], st[r]));
          MB_CKN(ncclRecv(recv[r] + p * per * 2, per, ncclBfloat16, p, comm[r], st[r]));
        }
        break;
      case Coll::SendRecv:
        MB_CKN(ncclSend(send[r], count, ncclBfloat16, (r + 1) % n, comm[r], st[r]));
        MB_CKN(ncclRecv(recv[r], count, ncclBfloat16, (r + n - 1) % n, comm[r], st[r]));
        break;
      }
    }
    MB_CKN(ncclGroupEnd());
  }
};

// Per-rank event pairs around `reps` back-to-back launches on st[0..n-1] (stream r on device
// r); a rep's time is the slowest rank's. With a gate the batch starts behind it; *gated (if
// given) says whether it did.
template <typename F>
inline std::vector<double> time_multi(const std::vector<cudaStream_t> &st, int reps, F &&fn, Gate *gate = nullptr,
                                      bool *gated = nullptr)
{
  const int n = static_cast<int>(st.size());
  std::vector<std::vector<cudaEvent_t>> ev(n, std::vector<cudaEvent_t>(2 * reps));
  for (int r = 0; r < n; ++r) {
    MB_CK(cudaSetDevice(r));
    for (auto &e : ev[r])
      MB_CK(cudaEventCreate(&e));
    if (gate)
      gate->hold(st[r]);
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
  if (gate)
    gate->release();
  for (int r = 0; r < n; ++r) {
    MB_CK(cudaSetDevice(r));
    MB_CK(cudaStreamSynchronize(st[r]));
  }
  const bool g = gate ? gate->finish() : false;
  if (gated)
    *gated = g;
  std::vector<double> ns(reps, 0.0);
  for (int r = 0; r < n; ++r) {
    MB_CK(cudaSetDevice(r));
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      MB_CK(cudaEventElapsedTime(&ms, ev[r][2 * i], ev[r][2 * i + 1]));
      ns[i] = std::max(ns[i], 1e6 * ms);
    }
    for (auto &e : ev[r])
      MB_CK(cudaEventDestroy(e));
  }
  return ns;
}

} // namespace mb
