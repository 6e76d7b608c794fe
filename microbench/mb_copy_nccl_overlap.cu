// mb_copy_nccl_overlap: a memory-bound copy kernel beside a real NCCL collective on every GPU of
// a group (kind "copy_nccl_overlap"): how the two share each GPU's HBM.
//
//   mb_copy_nccl_overlap [--nranks 2] [--ctas 0,4,16,32] [--colls all_gather,reduce_scatter]
//                        [--sizes-mib 128,512] [--sms 16,66,rest] [--reps 9] [--window-ms 25]
//                        [--region-mib 2048] [--max-batch 160] [--watchdog-s 3] [--budget-s 170]
//                        [--no-gate] [--out copy_nccl_overlap.json]
//
// The group is GPUs 0..nranks-1 (one process, one thread, group calls; mb_nccl.h). On every GPU
// the collective runs on a high-priority comm stream and the copy kernel on a low-priority
// compute stream. The copy kernel is mb_hbm_share's (mb_gemm_contention's spinner_mem copy
// loop): CTAs of 1024 threads asking for all opt-in shared memory, so exactly one fits per SM
// and no NCCL CTA can share its SM; layout "hbm" (the k CTAs' slices span --region-mib, 2 GiB per
// direction, far above the 50 MiB L2), thread 0 logging %globaltimer and a phase word at the top
// of every 8 MiB pass. Its bandwidth is the sum over CTAs of (passes wholly inside phase 1) x
// 16 MiB (read + written) over their span, exactly as in mb_hbm_share.
//
// The collective (bf16, nccl-tests' size and busbw conventions, mb_nccl.h) runs in batches of
// n_coll back-to-back timed calls, one event pair per call and rank, enough to span --window-ms
// when alone (at least 3, at most --max-batch), after n_leader untimed calls of the largest size
// (>= 3 ms in all). Each
// batch starts behind the launch gate of mb_nccl.h (every rank's comm stream held until all is
// enqueued; one ungated call per (collective, size) first, since NCCL connects its channels at
// the first call and that can hold the host longer than the gate waits). A copy-engine write on
// the comm stream raises phase 1 right before the first timed call and phase 2 right after the
// last, so the copy's window is the timed batch itself. The copy kernel (or the idle spinner) is
// launched 200 us after the gate opens, inside the leader's first call (>= 1 ms), and the host
// waits until every CTA is resident: NCCL's CTAs keep the SMs they chose and the spinner fills
// others. (Launched first, the spinner left NCCL scattered SMs: NCCL launches clusters of 4 CTAs
// on Hopper, which need 4 free SMs of one GPC, so 4 CTAs beside 128 held SMs never started and
// 24 beside 108 ran at half speed; launched in the tail of a short leader call it took SMs NCCL
// had just freed, with the same effects.) A rep whose spinner was not resident before phase 1
// is dropped (`late_reps`).
// The spinner runs until a copy-engine write of a stop flag after the batch ended. A batch that
// has not finished within --watchdog-s (NCCL waiting for SMs the spinner holds) is released by
// stopping the spinner, and the row's status says so.
//
// k (--sms): SMs held by the copy kernel; "rest" = SMs - the SMs the collective occupies,
// measured per (CTA setting, collective) by a probe: 200 us into a long batch of the collective
// at the largest size, a kernel of SMs CTAs of the spinner's footprint is launched beside it; the
// CTAs that start 50 us or more after the first waited for an SM held by NCCL (`coll_sms_seen`,
// the largest count over the ranks).
//
// Per (CTA setting, collective, size), every rep (reps outermost; rep 0 is a warm-up) runs:
// the collective alone, then for every k: the collective beside the idle spinner on k SMs
// (nanosleep loop: SM scheduling without HBM traffic), beside the copy kernel on k SMs, and the
// copy kernel alone on k SMs (host-timed window of --window-ms), so that clock drift hits all
// alike. Collective times are medians over every call of every rep's batch (the slowest rank
// of each call); copy bandwidths are medians over reps per GPU, then the mean over the GPUs.
// Rows carry `beside` "copy" or "idle" (the same k, the same reps), plus rows `beside` "none"
// (mode copy_alone) with the copy kernel alone on all SMs (HBM's capacity for this kernel).
#include <functional>
#include <memory>

#include "mb_copy_spinner.h"
#include "mb_nccl.h"

namespace {

// The SM probe: the spinner's footprint (one CTA per SM); each CTA logs its start and holds its
// SM for hold_ns.
__global__ void __launch_bounds__(kSpinThreads, 1) sm_probe(unsigned long long *t, int *smid, unsigned hold_ns)
{
  extern __shared__ float4 smem[];
  if (threadIdx.x == 0) {
    const unsigned long long t0 = global_ns();
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    t[blockIdx.x]    = t0;
    smid[blockIdx.x] = static_cast<int>(id);
    while (global_ns() - t0 < hold_ns)
      __nanosleep(1000);
    if (smem[0].x == 1234.5f)
      t[0] = 0; // keep smem allocated
  }
  __syncthreads();
}

struct Meas {
  bool ok        = false;
  double bw      = NAN; // sum of CTA rates, bytes per ns
  double span_ns = NAN;
  int passes_min = 0;
  std::string why;
};

// One GPU's copy kernel: src / dst regions, started flags, pass log; runs on stream st.
struct CopyKernel {
  float4 *src = nullptr, *dst = nullptr;
  size_t region  = 0;
  int *started_h = nullptr, *started_d = nullptr, *count_d = nullptr;
  PassMark *log_d = nullptr;
  cudaStream_t st{};
  int nsm = 0, k = 0, chunks = 1;
  size_t smem = 0;
  std::vector<PassMark> log_h;
  std::vector<int> count_h;

  CopyKernel(int nsm_, size_t region_, size_t smem_, uint64_t seed, cudaStream_t s)
      : region(region_), st(s), nsm(nsm_), smem(smem_)
  {
    MB_CK(cudaMalloc(&src, region));
    MB_CK(cudaMalloc(&dst, region));
    mb::fill(reinterpret_cast<float *>(src), region / 4, seed);
    MB_CK(cudaMemset(dst, 0xff, region));
    MB_CK(cudaHostAlloc(&started_h, sizeof(int) * nsm, cudaHostAllocMapped | cudaHostAllocPortable));
    MB_CK(cudaHostGetDevicePointer(&started_d, started_h, 0));
    MB_CK(cudaMalloc(&count_d, sizeof(int) * nsm));
    MB_CK(cudaMalloc(&log_d, sizeof(PassMark) * kLogCap * nsm));
    log_h.resize(static_cast<size_t>(kLogCap) * nsm);
    count_h.resize(nsm);
  }
  int chunks_for(int kk) const
  {
    return std::max<int>(1, static_cast<int>(region / (static_cast<size_t>(kk) * kPassBytes)));
  }
  void launch(const Ctrl &c, int kk, bool mem)
  {
    k      = kk;
    chunks = chunks_for(kk);
    std::memset(started_h, 0, sizeof(int) * nsm);
    copy_spinner<<<k, kSpinThreads, smem, st>>>(c.d, started_d, src, dst, chunks, mem ? 1 : 0, 1, log_d, count_d);
    MB_CK_LAUNCH();
  }
  void wait_started() const { mb::wait_started(started_h, k, "copy kernel"); }
  // True when every CTA started before the window opened (its first mark read phase 0).
  bool started_before_window()
  {
    std::vector<PassMark> first(k);
    MB_CK(cudaMemcpy2D(first.data(), sizeof(PassMark), log_d, sizeof(PassMark) * kLogCap, sizeof(PassMark), k,
                       cudaMemcpyDeviceToHost));
    for (const PassMark &m : first)
      if (m.phase != 0)
        return false;
    return true;
  }
  Meas analyze()
  {
    Meas r;
    MB_CK(cudaMemcpy(count_h.data(), count_d, sizeof(int) * k, cudaMemcpyDeviceToHost));
    MB_CK(cudaMemcpy(log_h.data(), log_d, sizeof(PassMark) * kLogCap * k, cudaMemcpyDeviceToHost));
    double sum = 0, span = 0;
    int pmin = 1 << 30;
    for (int c = 0; c < k; ++c) {
      const PassMark *lg = log_h.data() + static_cast<size_t>(c) * kLogCap;
      const int n        = std::min(count_h[c], kLogCap);
      if (count_h[c] > kLogCap && lg[n - 1].phase < 2) {
        r.why = "pass log overflow";
        return r;
      }
      int a = -1, b = -1;
      for (int j = 0; j + 1 < n; ++j)
        if (lg[j].phase == 1 && lg[j + 1].phase == 1) {
          if (a < 0)
            a = j;
          b = j;
        }
      const int np = a < 0 ? 0 : b - a + 1;
      pmin         = std::min(pmin, np);
      if (np < 1) {
        r.why = "a CTA had no whole pass inside the window";
        return r;
      }
      const double dt = static_cast<double>(lg[b + 1].t_ns - lg[a].t_ns);
      sum += np * kPassMoved / dt;
      span = std::max(span, dt);
    }
    r.ok         = true;
    r.bw         = sum;
    r.span_ns    = span;
    r.passes_min = pmin;
    return r;
  }
};

std::vector<std::string> split(const std::string &s)
{
  std::vector<std::string> out;
  for (size_t p = 0; p <= s.size();) {
    size_t c = s.find(',', p);
    if (c == std::string::npos)
      c = s.size();
    if (c > p)
      out.push_back(s.substr(p, c - p));
    p = c + 1;
  }
  return out;
}

double med_bw(const std::vector<Meas> &v)
{
  std::vector<double> x;
  for (const Meas &m : v)
    if (m.ok)
      x.push_back(m.bw);
  return mb::median(x);
}
int min_passes(const std::vector<Meas> &v)
{
  int p = 1 << 30;
  for (const Meas &m : v)
    p = std::min(p, m.ok ? m.passes_min : 0);
  return v.empty() ? 0 : p;
}
std::string status_of(const std::vector<Meas> &v)
{
  for (const Meas &m : v)
    if (!m.ok)
      return m.why.empty() ? std::string("not measured") : m.why;
  return "ok";
}

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int ndev = mb::nccl_devices("mb_copy_nccl_overlap", 2);
  if (ndev < 0)
    return 1;
  const int n = static_cast<int>(args.geti("--nranks", 2));
  if (n < 2 || n > ndev) {
    std::fprintf(stderr, "mb_copy_nccl_overlap: --nranks %d needs 2..%d GPUs (found %d)\n", n, ndev, ndev);
    return 1;
  }
  const std::vector<long> ctas            = mb::parse_list(args.get("--ctas", "0,4,16,32"));
  const std::vector<long> sizes_mib       = mb::parse_list(args.get("--sizes-mib", "128,512"));
  const std::string colls_arg             = args.get("--colls", "all_gather,reduce_scatter");
  const std::vector<std::string> sms_list = split(args.get("--sms", "16,66,rest"));
  const int reps                          = static_cast<int>(args.geti("--reps", 9));
  const double window_ms                  = args.getf("--window-ms", 25.0);
  const size_t region                     = static_cast<size_t>(args.geti("--region-mib", 2048)) << 20;
  const int max_batch                     = static_cast<int>(args.geti("--max-batch", 160));
  const double watchdog_s                 = args.getf("--watchdog-s", 3.0);
  const double budget_s                   = args.getf("--budget-s", 170.0);
  std::vector<int> devs(n);
  for (int d = 0; d < n; ++d)
    devs[d] = d;
  mb::Report rep("copy_nccl_overlap", args.get("--out", "copy_nccl_overlap.json"), args.joined("mb_copy_nccl_overlap"),
                 devs);
  mb::Gate gate(!args.has("--no-gate"));
  const double t0 = mb::now_s();
  auto over       = [&] { return mb::now_s() - t0 > budget_s; };

  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, 0));
  const int nsm = prop.multiProcessorCount;
  if (region < static_cast<size_t>(nsm) * kPassBytes) {
    std::fprintf(stderr, "--region-mib must be at least %d (8 MiB per SM)\n", nsm * 8);
    return 1;
  }
  const size_t smem = prop.sharedMemPerBlockOptin - 1024; // as mb_gemm_contention's spinner

  long max_mib = 1;
  for (long s : sizes_mib)
    max_mib = std::max(max_mib, s);
  const size_t coll_buf = static_cast<size_t>(max_mib) << 20;

  // Per GPU: collective buffers, streams (TE: comm highest priority, compute lowest), the
  // control block, the copy kernel, the probe's log, event pairs for a batch.
  std::vector<char *> send(n), recv(n);
  std::vector<cudaStream_t> comm_st(n), comp_st(n);
  std::vector<std::unique_ptr<Ctrl>> ctrl(n);
  std::vector<std::unique_ptr<CopyKernel>> kern(n);
  std::vector<unsigned long long *> probe_t(n);
  std::vector<int *> probe_sm(n);
  std::vector<std::vector<cudaEvent_t>> ev(n, std::vector<cudaEvent_t>(2 * max_batch));
  for (int d = 0; d < n; ++d) {
    MB_CK(cudaSetDevice(d));
    cudaDeviceProp p{};
    MB_CK(cudaGetDeviceProperties(&p, d));
    if (p.multiProcessorCount != nsm) {
      std::fprintf(stderr, "GPU %d has %d SMs, GPU 0 %d: mixed GPUs are not supported\n", d, p.multiProcessorCount,
                   nsm);
      return 1;
    }
    MB_CK(cudaFuncSetAttribute(copy_spinner, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    MB_CK(cudaFuncSetAttribute(sm_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    int per_sm = 0, per_sm_probe = 0;
    MB_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_spinner, kSpinThreads, smem));
    MB_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_probe, sm_probe, kSpinThreads, smem));
    if (per_sm != 1 || per_sm_probe != 1) {
      std::fprintf(stderr, "spinner / probe occupancy is %d / %d CTAs per SM, expected 1\n", per_sm, per_sm_probe);
      return 5;
    }
    MB_CK(cudaMalloc(&send[d], coll_buf));
    MB_CK(cudaMalloc(&recv[d], coll_buf));
    mb::fill(reinterpret_cast<__nv_bfloat16 *>(send[d]), coll_buf / 2, 200 + d);
    MB_CK(cudaMemset(recv[d], 0, coll_buf));
    int lo = 0, hi = 0;
    MB_CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    MB_CK(cudaStreamCreateWithPriority(&comm_st[d], cudaStreamNonBlocking, hi));
    MB_CK(cudaStreamCreateWithPriority(&comp_st[d], cudaStreamNonBlocking, lo));
    ctrl[d] = std::make_unique<Ctrl>();
    kern[d] = std::make_unique<CopyKernel>(nsm, region, smem, 77 + d, comp_st[d]);
    MB_CK(cudaMalloc(&probe_t[d], sizeof(unsigned long long) * nsm));
    MB_CK(cudaMalloc(&probe_sm[d], sizeof(int) * nsm));
    for (auto &e : ev[d])
      MB_CK(cudaEventCreate(&e));
    MB_CK(cudaDeviceSynchronize());
  }

  // The copy kernels alone on k SMs of every GPU at once, over a host-timed window.
  auto copies_alone = [&](int k) {
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      ctrl[d]->reset(comp_st[d]);
      kern[d]->launch(*ctrl[d], k, true);
    }
    for (int d = 0; d < n; ++d)
      kern[d]->wait_started();
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      ctrl[d]->phase(1, ctrl[d]->st);
    }
    for (int d = 0; d < n; ++d)
      MB_CK(cudaStreamSynchronize(ctrl[d]->st));
    usleep(static_cast<useconds_t>(window_ms * 1000.0));
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      ctrl[d]->phase(2, ctrl[d]->st);
      ctrl[d]->stop_async();
    }
    std::vector<Meas> out(n);
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      MB_CK(cudaStreamSynchronize(comp_st[d]));
      out[d] = kern[d]->analyze();
    }
    return out;
  };

  // Correctness: one run on all SMs of every GPU; the first chunk of every CTA's slice compared
  // bit for bit with its source.
  long long mismatches = 0;
  size_t checked_bytes = 0;
  {
    std::vector<Meas> m = copies_alone(nsm);
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      unsigned long long *bad = nullptr;
      MB_CK(cudaMalloc(&bad, sizeof *bad));
      MB_CK(cudaMemset(bad, 0, sizeof *bad));
      const int ch = kern[d]->chunks_for(nsm);
      for (int c = 0; c < nsm; ++c) {
        const size_t off = static_cast<size_t>(c) * ch * kPassBytes;
        count_mismatch<<<256, 256>>>(reinterpret_cast<const uint4 *>(reinterpret_cast<char *>(kern[d]->src) + off),
                                     reinterpret_cast<const uint4 *>(reinterpret_cast<char *>(kern[d]->dst) + off),
                                     kPassBytes / 16, bad);
        MB_CK_LAUNCH();
        checked_bytes += kPassBytes;
      }
      unsigned long long h = 0;
      MB_CK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
      cudaFree(bad);
      mismatches += static_cast<long long>(h);
      std::fprintf(stderr, "GPU %d check: %llu mismatching words; warm-up %d SMs %.1f B/ns\n", d, h, nsm, m[d].bw);
    }
    if (mismatches != 0) {
      std::fprintf(stderr, "copy kernel check failed\n");
      return 4;
    }
  }
  rep.env()
      .s("nccl_version", mb::nccl_version_string())
      .i("nranks", n)
      .s("group_sizes", std::to_string(n))
      .b("launch_gate", gate.enabled())
      .i("spinner_threads", kSpinThreads)
      .i("spinner_smem_bytes", static_cast<long long>(smem))
      .i("pass_bytes_per_direction", static_cast<long long>(kPassBytes))
      .i("region_bytes_per_direction", static_cast<long long>(region))
      .f("window_ms", window_ms)
      .i("reps", reps)
      .i("copy_check_bytes", static_cast<long long>(checked_bytes))
      .i("copy_check_mismatches", mismatches);

  // The copy kernel alone on all SMs: HBM's capacity for this kernel.
  {
    std::vector<std::vector<Meas>> m(n);
    for (int r = 0; r < std::max(3, reps / 2); ++r) {
      std::vector<Meas> x = copies_alone(nsm);
      for (int d = 0; d < n; ++d)
        m[d].push_back(x[d]);
    }
    mb::Row row;
    double sum = 0;
    row.s("mode", "copy_alone").s("beside", "none").i("sms_held", nsm).i("sm_count", nsm).i("nranks", n);
    for (int d = 0; d < n; ++d) {
      const double b = med_bw(m[d]);
      sum += b;
      row.f(("copy_alone_gpu" + std::to_string(d) + "_bytes_per_ns").c_str(), b);
    }
    row.f("copy_alone_bytes_per_ns", sum / n)
        .i("reps", static_cast<long long>(m[0].size()))
        .s("status", status_of(m[0]));
    rep.add(row);
    std::fprintf(stderr, "copy alone on all %d SMs: %.1f B/ns (mean over %d GPUs)\n", nsm, sum / n, n);
  }

  std::vector<mb::Coll> colls;
  if (colls_arg.find("all_gather") != std::string::npos)
    colls.push_back(mb::Coll::AllGather);
  if (colls_arg.find("reduce_scatter") != std::string::npos)
    colls.push_back(mb::Coll::ReduceScatter);
  if (colls_arg.find("all_reduce") != std::string::npos)
    colls.push_back(mb::Coll::AllReduce);

  // One batch behind the gate: nl untimed "leader" calls, phase 1, nb timed calls (one event pair
  // each), phase 2. With k > 0 the spinner (mem: copy, else idle) is launched on k SMs of every
  // GPU once the leader runs, so that NCCL's CTAs (clusters of 4 on Hopper: NCCL_CGA_CLUSTER_SIZE)
  // keep the SMs they chose and the spinner fills others; `late` flags a spinner that was not
  // resident before phase 1.
  struct Batch {
    std::vector<double> ns; // per call, slowest rank
    double span_ns = NAN;   // first timed call's start to last call's end, slowest rank
    std::vector<Meas> copy; // per GPU
    bool hung = false, gated = false, late = false;
  };
  auto batch = [&](const mb::Comms &comms, mb::Coll coll, size_t bytes, size_t lead_bytes, int nl, int nb, int k,
                   bool mem) {
    Batch b;
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      ctrl[d]->reset(ctrl[d]->st);
      MB_CK(cudaStreamSynchronize(ctrl[d]->st));
      gate.hold(comm_st[d]);
    }
    for (int i = 0; i < nl; ++i)
      comms.launch(coll, lead_bytes, send, recv, comm_st);
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      ctrl[d]->phase(1, comm_st[d]);
    }
    for (int i = 0; i < nb; ++i) {
      for (int d = 0; d < n; ++d) {
        MB_CK(cudaSetDevice(d));
        MB_CK(cudaEventRecord(ev[d][2 * i], comm_st[d]));
      }
      comms.launch(coll, bytes, send, recv, comm_st);
      for (int d = 0; d < n; ++d) {
        MB_CK(cudaSetDevice(d));
        MB_CK(cudaEventRecord(ev[d][2 * i + 1], comm_st[d]));
      }
    }
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      ctrl[d]->phase(2, comm_st[d]);
    }
    gate.release();
    if (k > 0) {
      usleep(200);
      for (int d = 0; d < n; ++d) {
        MB_CK(cudaSetDevice(d));
        kern[d]->launch(*ctrl[d], k, mem);
      }
      for (int d = 0; d < n; ++d)
        kern[d]->wait_started();
    }
    const double tw = mb::now_s();
    for (int d = 0; d < n && !b.hung; ++d) {
      MB_CK(cudaSetDevice(d));
      while (cudaStreamQuery(comm_st[d]) == cudaErrorNotReady)
        if (mb::now_s() - tw > watchdog_s) {
          b.hung = true;
          break;
        }
    }
    if (k > 0)
      for (int d = 0; d < n; ++d) {
        MB_CK(cudaSetDevice(d));
        ctrl[d]->stop_async();
      }
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      MB_CK(cudaStreamSynchronize(comm_st[d]));
      MB_CK(cudaStreamSynchronize(comp_st[d]));
    }
    b.gated = gate.finish();
    if (k > 0)
      for (int d = 0; d < n; ++d) {
        MB_CK(cudaSetDevice(d));
        b.late = b.late || !kern[d]->started_before_window();
      }
    if (k > 0 && mem && !b.hung && !b.late)
      for (int d = 0; d < n; ++d) {
        MB_CK(cudaSetDevice(d));
        b.copy.push_back(kern[d]->analyze());
      }
    b.ns.assign(nb, 0.0);
    b.span_ns = 0;
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      for (int i = 0; i < nb; ++i) {
        float ms = 0;
        MB_CK(cudaEventElapsedTime(&ms, ev[d][2 * i], ev[d][2 * i + 1]));
        b.ns[i] = std::max(b.ns[i], 1e6 * ms);
      }
      float ms = 0;
      MB_CK(cudaEventElapsedTime(&ms, ev[d][0], ev[d][2 * nb - 1]));
      b.span_ns = std::max(b.span_ns, 1e6 * static_cast<double>(ms));
    }
    return b;
  };

  // The SMs a collective occupies: a long batch behind the gate, then (once it runs) the probe
  // kernel on all SMs beside it; CTAs that start >= 50 us after the first waited for NCCL's SMs.
  auto probe = [&](const mb::Comms &comms, mb::Coll coll, size_t bytes, int nb) {
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      gate.hold(comm_st[d]);
    }
    for (int i = 0; i < nb; ++i)
      comms.launch(coll, bytes, send, recv, comm_st);
    gate.release();
    usleep(200);
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      sm_probe<<<nsm, kSpinThreads, smem, comp_st[d]>>>(probe_t[d], probe_sm[d], 200000u);
      MB_CK_LAUNCH();
    }
    int seen = 0;
    std::vector<unsigned long long> t(nsm);
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      MB_CK(cudaDeviceSynchronize());
      MB_CK(cudaMemcpy(t.data(), probe_t[d], sizeof(unsigned long long) * nsm, cudaMemcpyDeviceToHost));
      const unsigned long long first = *std::min_element(t.begin(), t.end());
      int late                       = 0;
      for (unsigned long long x : t)
        late += x - first >= 50000ull;
      seen = std::max(seen, late);
    }
    gate.finish();
    return seen;
  };

  bool truncated = false;
  std::string note;
  for (long c : ctas) {
    if (over()) {
      truncated = true;
      note += (note.empty() ? "time budget reached before ctas=" : ",") + std::to_string(c);
      continue;
    }
    mb::Comms comms(n, static_cast<int>(c));
    for (mb::Coll coll : colls) {
      // The leader: calls of the largest size (>= 1 ms each here), >= 3 ms in all. The spinner
      // and the probe are launched 200 us after the gate opens, inside the leader's first call
      // and far from its end, when NCCL holds all its SMs (launched in the tail of a short call
      // they took SMs NCCL had just freed, and the next call's clusters found no room). One
      // call ungated first (NCCL connects its channels at a collective's first call, which can
      // block the host for longer than the gate waits).
      if (over()) {
        truncated = true;
        note += std::string(note.empty() ? "time budget reached at " : ", ") + "ctas=" + std::to_string(c) + " " +
                mb::coll_name(coll);
        continue;
      }
      const size_t lead_bytes = coll_buf;
      comms.launch(coll, lead_bytes, send, recv, comm_st);
      for (int d = 0; d < n; ++d) {
        MB_CK(cudaSetDevice(d));
        MB_CK(cudaDeviceSynchronize());
      }
      batch(comms, coll, lead_bytes, 0, 0, 2, 0, false);
      const double lead_est = mb::median(batch(comms, coll, lead_bytes, 0, 0, 3, 0, false).ns);
      const int nl          = std::max(1, std::min(100, static_cast<int>(std::ceil(3e6 / lead_est))));
      const int np          = std::max(3, std::min(max_batch, static_cast<int>(std::ceil(8e6 / lead_est))));
      const int seen        = probe(comms, coll, lead_bytes, np);
      for (long mib : sizes_mib) {
        if (over()) {
          truncated = true;
          note += std::string(note.empty() ? "time budget reached at " : ", ") + "ctas=" + std::to_string(c) + " " +
                  mb::coll_name(coll) + " " + std::to_string(mib) + " MiB";
          continue;
        }
        const size_t bytes  = static_cast<size_t>(mib) << 20;
        const double moved  = static_cast<double>(mb::coll_bytes(coll, bytes, n));
        const double bus_of = mb::busbw_factor(coll, n);
        // One call ungated, then estimate the call's time alone and size the batch.
        comms.launch(coll, bytes, send, recv, comm_st);
        for (int d = 0; d < n; ++d) {
          MB_CK(cudaSetDevice(d));
          MB_CK(cudaDeviceSynchronize());
        }
        batch(comms, coll, bytes, lead_bytes, 0, 2, 0, false);
        const double c_est = mb::median(batch(comms, coll, bytes, lead_bytes, 0, 3, 0, false).ns);
        const int nb       = std::max(3, std::min(max_batch, static_cast<int>(std::ceil(window_ms * 1e6 / c_est))));
        std::vector<std::pair<std::string, int>> ks;
        for (const std::string &s : sms_list) {
          const int k = s == "rest" ? nsm - seen : std::atoi(s.c_str());
          if (k >= 1 && k < nsm)
            ks.emplace_back(s, k);
        }
        const size_t nk = ks.size();
        std::vector<double> alone, alone_span;
        std::vector<std::vector<double>> idle(nk), busy(nk), idle_span(nk), busy_span(nk);
        std::vector<std::vector<std::vector<Meas>>> cp_alone(nk, std::vector<std::vector<Meas>>(n)),
            cp_with(nk, std::vector<std::vector<Meas>>(n));
        std::vector<int> hung(nk, 0), late(nk, 0);
        bool gated     = true;
        int done_reps  = 0;
        bool rep_short = false;
        for (int r = 0; r <= reps; ++r) { // r == 0: warm-up
          if (r > 1 && over()) {
            rep_short = true;
            break;
          }
          Batch a = batch(comms, coll, bytes, lead_bytes, nl, nb, 0, false);
          gated   = gated && a.gated;
          if (r > 0) {
            alone.insert(alone.end(), a.ns.begin(), a.ns.end());
            alone_span.push_back(a.span_ns / nb);
          }
          for (size_t i = 0; i < nk; ++i) {
            if (hung[i])
              continue;
            const int k = ks[i].second;
            Batch bi    = batch(comms, coll, bytes, lead_bytes, nl, nb, k, false);
            Batch bc    = batch(comms, coll, bytes, lead_bytes, nl, nb, k, true);
            gated       = gated && bi.gated && bc.gated;
            if (bi.hung || bc.hung) {
              hung[i] = 1;
              continue;
            }
            if (bi.late || bc.late) {
              late[i] += r > 0;
              continue;
            }
            std::vector<Meas> ca = copies_alone(k);
            if (r == 0)
              continue;
            idle[i].insert(idle[i].end(), bi.ns.begin(), bi.ns.end());
            busy[i].insert(busy[i].end(), bc.ns.begin(), bc.ns.end());
            idle_span[i].push_back(bi.span_ns / nb);
            busy_span[i].push_back(bc.span_ns / nb);
            for (int d = 0; d < n; ++d) {
              cp_alone[i][d].push_back(ca[d]);
              cp_with[i][d].push_back(bc.copy[d]);
            }
          }
          if (r > 0)
            ++done_reps;
        }
        if (rep_short) {
          truncated = true;
          note += std::string(note.empty() ? "time budget reached at " : ", ") + "ctas=" + std::to_string(c) + " " +
                  mb::coll_name(coll) + " " + std::to_string(mib) + " MiB (" + std::to_string(done_reps) + " reps)";
        }
        const double c_alone  = mb::median(alone);
        const double bw_alone = moved / c_alone * bus_of;
        for (size_t i = 0; i < nk; ++i) {
          const int k = ks[i].second;
          for (const char *beside : {"idle", "copy"}) {
            const bool cp = std::string(beside) == "copy";
            mb::Row row;
            row.s("mode", "coll_beside")
                .s("beside", beside)
                .s("collective", mb::coll_name(coll))
                .i("nranks", n)
                .i("ctas_requested", c)
                .i("coll_sms_seen", seen)
                .i("size_bytes", static_cast<long long>(moved))
                .s("sms_label", ks[i].first)
                .i("sms_held", k)
                .i("sm_count", nsm)
                .i("n_coll", nb)
                .i("n_leader", nl)
                .i("leader_size_bytes", static_cast<long long>(mb::coll_bytes(coll, lead_bytes, n)))
                .f("coll_alone_ns", c_alone)
                .f("coll_alone_mean_ns", mb::median(alone_span))
                .f("coll_busbw_alone_gbps", bw_alone);
            if (hung[i] || done_reps == 0) {
              row.i("reps", done_reps)
                  .b("launch_gated", gated)
                  .s("status", hung[i] ? "timeout: the collective did not finish within " + std::to_string(watchdog_s) +
                                             " s beside the spinner (it waits for SMs the spinner holds)"
                                       : std::string("not measured"));
              rep.add(row);
              continue;
            }
            const double t_idle = mb::median(idle[i]), t_busy = mb::median(busy[i]);
            const double t    = cp ? t_busy : t_idle;
            const double bw_t = moved / t * bus_of;
            row.f("coll_overlap_ns", t)
                .f("coll_overlap_mean_ns", mb::median(cp ? busy_span[i] : idle_span[i]))
                .f("coll_slowdown", t / c_alone)
                .f("coll_busbw_overlap_gbps", bw_t);
            std::string st = "ok";
            if (cp) {
              double ca = 0, cw = 0;
              int pmin = 1 << 30;
              for (int d = 0; d < n; ++d) {
                const double a = med_bw(cp_alone[i][d]), w = med_bw(cp_with[i][d]);
                ca += a / n;
                cw += w / n;
                row.f(("copy_alone_gpu" + std::to_string(d) + "_bytes_per_ns").c_str(), a)
                    .f(("copy_beside_gpu" + std::to_string(d) + "_bytes_per_ns").c_str(), w);
                pmin = std::min(pmin, min_passes(cp_with[i][d]));
                if (st == "ok")
                  st = status_of(cp_with[i][d]);
                if (st == "ok")
                  st = status_of(cp_alone[i][d]);
              }
              const double loss = ca - cw, per_sm = cw / k;
              row.f("coll_idle_ns", t_idle)
                  .f("coll_slowdown_vs_idle", t_busy / t_idle)
                  .f("copy_alone_bytes_per_ns", ca)
                  .f("copy_beside_bytes_per_ns", cw)
                  .f("copy_ratio", cw / ca)
                  .f("copy_loss_bytes_per_ns", loss)
                  .f("copy_beside_per_sm_bytes_per_ns", per_sm)
                  .f("hbm_per_busbw_from_copy_loss", loss / bw_t)
                  .f("coll_sm_equiv_from_copy_loss", loss / per_sm)
                  .f("coll_sm_equiv_3x_busbw", 3.0 * bw_t / per_sm)
                  .i("copy_passes_min", pmin);
            }
            if (st == "ok" && (idle[i].empty() || busy[i].empty()))
              st = "not measured: the spinner started late in every rep";
            row.i("reps", done_reps - late[i]).i("late_reps", late[i]).b("launch_gated", gated).s("status", st);
            rep.add(row);
          }
          const double ti = mb::median(idle[i]), tb = mb::median(busy[i]);
          double ca = 0, cw = 0;
          for (int d = 0; d < n; ++d) {
            ca += med_bw(cp_alone[i][d]) / n;
            cw += med_bw(cp_with[i][d]) / n;
          }
          std::fprintf(stderr,
                       "ctas=%2ld(seen %2d) %-14s %4ld MiB k=%3d(%s): coll alone %9.0f ns (busbw %5.1f) idle x%.3f "
                       "copy x%.3f | copy alone %7.1f beside %7.1f B/ns%s\n",
                       c, seen, mb::coll_name(coll), mib, k, ks[i].first.c_str(), c_alone, bw_alone, ti / c_alone,
                       tb / c_alone, ca, cw, hung[i] ? "  TIMEOUT" : "");
        }
        std::fprintf(stderr, "[%5.1fs] ctas=%ld %s %ld MiB done (n_coll %d, %d reps)\n", mb::now_s() - t0, c,
                     mb::coll_name(coll), mib, nb, done_reps);
      }
    }
  }
  rep.env().i("launch_gate_timeouts", gate.timeouts());
  return rep.close(truncated, note);
}
