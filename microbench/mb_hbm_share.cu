// mb_hbm_share: how one GPU's HBM bandwidth is shared between concurrent users (kind "hbm_share").
//
//   mb_hbm_share [--modes copy_alone,copy_pair,ce_beside_copy,gemm_beside_copy]
//                [--sms 1,2,4,8,16,24,32,48,64,96,132] [--pair-sms 8,16,33,66,99,124]
//                [--gemm-sms 16,32,48,64] [--ce-sms 132,66]
//                [--shapes "8192x8192x8192:bf16,8192x8192x8192:fp8,8192x8192x2048:bf16"]
//                [--reps 9] [--window-ms 20] [--region-mib 2048] [--ce-mib 1024]
//                [--gemm-layout spinner|hbm] [--watchdog-s 5] [--budget-s 200] [--out hbm_share.json]
//                [--device 0]
//
// The user under test is mb_gemm_contention's spinner_mem kernel: CTAs of 1024 threads that ask
// for all the shared memory one block may have (so exactly one fits per SM, and nothing else can
// share that SM), each copying 8 MiB (float4 loads and stores, block-stride loop) per pass, pass
// after pass, until a device flag raised by a copy-engine write stops it. The copy loop is that
// kernel's, unchanged; two things are added around it:
//   - a CTA's slice may hold several 8 MiB chunks, one pass per chunk in turn (layout "hbm":
//     the slices of all CTAs together span `--region-mib` per direction, 2 GiB, far above the
//     50 MiB L2, whatever k is). Layout "spinner" is one chunk per CTA, exactly spinner_mem:
//     its k * 16 MiB footprint fits in L2 for small k, so there its numbers are L2 bandwidth.
//   - thread 0 logs, at the top of every pass (where it already reads the stop flag), the
//     %globaltimer and a "phase" word read from the same device-memory control block. The host
//     (or the stream of the work timed beside the copy) sets phase 1 / phase 2 with copy-engine
//     writes at the start / end of the measurement window. A pass counts when the phase read
//     1 both before it and after it, i.e. it lay wholly inside the window; a CTA's rate is its
//     counted passes x 16 MiB (8 read + 8 written) over the time from the first counted pass's
//     start to the last's end; the kernel's bandwidth is the sum of its CTAs' rates
//     (`bytes_per_ns` = read + written bytes per ns = GB/s). Nothing polls host-mapped memory
//     from the GPU (mb_gemm_contention: that slowed GEMMs 4-8x); the host-mapped `started`
//     flags are written once per CTA.
// Modes (one row per case, `mode` says which):
//   copy_alone        the copy kernel on k SMs alone, layouts "hbm" and "spinner".
//   copy_pair         two copy kernels at once on two streams, A on k SMs, B on SMs - k ("hbm"):
//                     each one's bandwidth together, and each alone (re-measured in the same rep:
//                     A alone, B alone, both), their sum, and what a demand-proportional and a
//                     max-min fair split of the measured sum would give A.
//   ce_beside_copy    cudaMemcpyAsync device-to-device of `--ce-mib` (a batch of them, one event
//                     pair each, long enough to span the window) alone, the copy kernel on k SMs
//                     alone, and both at once; also through cudaMemcpyBatchAsync with
//                     cudaMemcpyFlagPreferOverlapWithCompute (`api`).
//   gemm_beside_copy  the cuBLASLt GEMM (mb_lt.h, tuned for all SMs, TN, no fast accum) in
//                     batches of back-to-back runs (one event pair each, long enough to span the
//                     window): nothing held (plain), k SMs held by the idle spinner, k SMs held
//                     by the copying spinner (layout `--gemm-layout`, default "spinner", i.e.
//                     mb_gemm_contention's spinner_mem), and the copying spinner alone; the
//                     copy's bandwidth is measured over the GEMM batch.
// Every rep runs all the cases of a row (or, for copy_alone, all k) one after the other, so that
// clock drift hits them alike; figures are medians over reps (GEMM times: over every run of
// every batch). A copy kernel beside work that does not finish within `--watchdog-s` (5) is
// stopped, and the row says so in `status`.
#include "mb_copy_spinner.h"
#include "mb_lt.h"

#include <functional>

namespace {

struct Meas {
  bool ok        = false;
  double bw      = NAN; // sum of CTA rates, bytes per ns
  double cta_min = NAN, cta_max = NAN;
  double span_ns = NAN; // longest CTA span counted
  int passes_min = 0;   // fewest whole passes a CTA had in the window
  std::string why;
};

// One copy kernel: its own src / dst regions, stream, started flags and pass log.
struct CopyKernel {
  float4 *src = nullptr, *dst = nullptr;
  size_t region  = 0; // bytes per direction
  int *started_h = nullptr, *started_d = nullptr, *count_d = nullptr;
  PassMark *log_d = nullptr;
  cudaStream_t st{};
  int nsm = 0, k = 0, chunks = 1;
  bool mem    = true;
  size_t smem = 0;
  std::vector<PassMark> log_h;
  std::vector<int> count_h;

  CopyKernel(int nsm_, size_t region_, size_t smem_, uint64_t seed) : region(region_), nsm(nsm_), smem(smem_)
  {
    MB_CK(cudaMalloc(&src, region));
    MB_CK(cudaMalloc(&dst, region));
    mb::fill(reinterpret_cast<float *>(src), region / 4, seed);
    MB_CK(cudaMemset(dst, 0xff, region));
    MB_CK(cudaHostAlloc(&started_h, sizeof(int) * nsm, cudaHostAllocMapped));
    MB_CK(cudaHostGetDevicePointer(&started_d, started_h, 0));
    MB_CK(cudaMalloc(&count_d, sizeof(int) * nsm));
    MB_CK(cudaMalloc(&log_d, sizeof(PassMark) * kLogCap * nsm));
    MB_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    log_h.resize(static_cast<size_t>(kLogCap) * nsm);
    count_h.resize(nsm);
  }
  // 8 MiB chunks per CTA: layout "hbm" spreads k CTAs over the whole region, "spinner" is 1.
  int chunks_for(int kk, bool hbm) const
  {
    return hbm ? std::max<int>(1, static_cast<int>(region / (static_cast<size_t>(kk) * kPassBytes))) : 1;
  }
  void launch(const Ctrl &c, int kk, int ch, bool m)
  {
    k      = kk;
    chunks = ch;
    mem    = m;
    if (static_cast<size_t>(k) * chunks * kPassBytes > region) {
      std::fprintf(stderr, "copy kernel: %d CTAs x %d chunks exceed the region\n", k, chunks);
      std::exit(5);
    }
    std::memset(started_h, 0, sizeof(int) * nsm);
    copy_spinner<<<k, kSpinThreads, smem, st>>>(c.d, started_d, src, dst, chunks, mem ? 1 : 0, 0, log_d, count_d);
    MB_CK_LAUNCH();
  }
  void wait_started() const { mb::wait_started(started_h, k, "copy kernel"); }
  void sync() const { MB_CK(cudaStreamSynchronize(st)); }
  // After the kernel ended: the bandwidth over the passes that lay wholly in phase 1.
  Meas analyze()
  {
    Meas r;
    MB_CK(cudaMemcpy(count_h.data(), count_d, sizeof(int) * k, cudaMemcpyDeviceToHost));
    MB_CK(cudaMemcpy(log_h.data(), log_d, sizeof(PassMark) * kLogCap * k, cudaMemcpyDeviceToHost));
    double sum = 0, mn = INFINITY, mx = 0, span = 0;
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
        r.why        = "a CTA had no whole pass inside the window";
        r.passes_min = 0;
        return r;
      }
      const double dt   = static_cast<double>(lg[b + 1].t_ns - lg[a].t_ns);
      const double rate = np * kPassMoved / dt;
      sum += rate;
      mn   = std::min(mn, rate);
      mx   = std::max(mx, rate);
      span = std::max(span, dt);
    }
    r.ok         = true;
    r.bw         = sum;
    r.cta_min    = mn;
    r.cta_max    = mx;
    r.span_ns    = span;
    r.passes_min = pmin;
    return r;
  }
};

// Copy kernels alone or together: launched one after the other (each resident before the
// next), phase 1, the window on the host clock, phase 2, stop.
struct Kspec {
  CopyKernel *kern;
  int k, chunks;
};
std::vector<Meas> measure_copies(const Ctrl &c, const std::vector<Kspec> &ks, double window_ms)
{
  c.reset(ks[0].kern->st);
  for (const Kspec &s : ks) {
    s.kern->launch(c, s.k, s.chunks, true);
    s.kern->wait_started();
  }
  c.phase(1, c.st);
  MB_CK(cudaStreamSynchronize(c.st));
  usleep(static_cast<useconds_t>(window_ms * 1000.0));
  c.phase(2, c.st);
  c.stop();
  std::vector<Meas> out;
  for (const Kspec &s : ks) {
    s.kern->sync();
    out.push_back(s.kern->analyze());
  }
  return out;
}

// Event pairs around n operations enqueued on one stream.
struct EventBatch {
  std::vector<cudaEvent_t> ev;
  explicit EventBatch(int n) : ev(2 * n)
  {
    for (auto &e : ev)
      MB_CK(cudaEventCreate(&e));
  }
  ~EventBatch()
  {
    for (auto &e : ev)
      cudaEventDestroy(e);
  }
  void record(cudaStream_t s, int n, const std::function<void(int)> &fn)
  {
    for (int i = 0; i < n; ++i) {
      MB_CK(cudaEventRecord(ev[2 * i], s));
      fn(i);
      MB_CK(cudaEventRecord(ev[2 * i + 1], s));
    }
  }
  std::vector<double> ns(int n) const
  {
    std::vector<double> out(n);
    for (int i = 0; i < n; ++i) {
      float ms = 0;
      MB_CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
      out[i] = 1e6 * ms;
    }
    return out;
  }
};

// Work on stream ws (n ops, timed one by one) beside a copy kernel on k SMs (mem) or an idle
// spinner (!mem), or alone (kern == nullptr). The window is the work itself: phase 1 / 2 are
// written on ws right before the first op and right after the last.
struct Beside {
  std::vector<double> ns; // per op
  Meas copy;
  bool hung = false;
};
Beside run_beside(const Ctrl &c, CopyKernel *kern, int k, int chunks, bool mem, cudaStream_t ws, int n,
                  const std::function<void(int)> &op, double watchdog_s)
{
  Beside r;
  if (kern) {
    c.reset(kern->st);
    kern->launch(c, k, chunks, mem);
    kern->wait_started();
  }
  EventBatch eb(n);
  if (kern)
    c.phase(1, ws);
  eb.record(ws, n, op);
  if (kern)
    c.phase(2, ws);
  const double tw = mb::now_s();
  while (cudaStreamQuery(ws) == cudaErrorNotReady)
    if (mb::now_s() - tw > watchdog_s) {
      r.hung = true;
      break;
    }
  if (kern)
    c.stop();
  MB_CK(cudaStreamSynchronize(ws));
  if (kern) {
    kern->sync();
    if (mem && !r.hung)
      r.copy = kern->analyze();
  }
  r.ns = eb.ns(n);
  return r;
}

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

double med_of(const std::vector<Meas> &v, double Meas::*f)
{
  std::vector<double> x;
  for (const Meas &m : v)
    if (m.ok)
      x.push_back(m.*f);
  return mb::median(x);
}
int min_passes(const std::vector<Meas> &v)
{
  int p = 1 << 30;
  for (const Meas &m : v)
    p = std::min(p, m.passes_min);
  return v.empty() ? 0 : p;
}
std::string status_of(const std::vector<Meas> &v)
{
  for (const Meas &m : v)
    if (!m.ok)
      return m.why.empty() ? std::string("not measured") : m.why;
  return "ok";
}
double cta_med(const std::vector<Meas> &v, bool lo) { return med_of(v, lo ? &Meas::cta_min : &Meas::cta_max); }

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int dev = static_cast<int>(args.geti("--device", 0));
  MB_CK(cudaSetDevice(dev));
  const std::vector<std::string> modes =
      split(args.get("--modes", "copy_alone,copy_pair,ce_beside_copy,gemm_beside_copy"));
  const std::vector<long> sms_alone = mb::parse_list(args.get("--sms", "1,2,4,8,16,24,32,48,64,96,132"));
  const std::vector<long> sms_pair  = mb::parse_list(args.get("--pair-sms", "8,16,33,66,99,124"));
  const std::vector<long> sms_gemm  = mb::parse_list(args.get("--gemm-sms", "16,32,48,64"));
  const std::vector<long> sms_ce    = mb::parse_list(args.get("--ce-sms", "132,66"));
  const std::vector<std::string> shape_list =
      split(args.get("--shapes", "8192x8192x8192:bf16,8192x8192x8192:fp8,8192x8192x2048:bf16"));
  const int reps          = static_cast<int>(args.geti("--reps", 9));
  const double window_ms  = args.getf("--window-ms", 20.0);
  const size_t region     = static_cast<size_t>(args.geti("--region-mib", 2048)) << 20;
  const size_t ce_bytes   = static_cast<size_t>(args.geti("--ce-mib", 1024)) << 20;
  const bool gemm_hbm     = std::string(args.get("--gemm-layout", "spinner")) == "hbm";
  const double budget_s   = args.getf("--budget-s", 200.0);
  const double watchdog_s = args.getf("--watchdog-s", 5.0);
  mb::Report rep("hbm_share", args.get("--out", "hbm_share.json"), args.joined("mb_hbm_share"), {dev});
  const double t0 = mb::now_s();
  auto has_mode   = [&](const char *m) { return std::find(modes.begin(), modes.end(), m) != modes.end(); };
  auto over       = [&] { return mb::now_s() - t0 > budget_s; };
  bool truncated  = false;
  std::string note;
  auto cut = [&](const char *what) {
    truncated = true;
    if (note.find(what) == std::string::npos)
      note += std::string(note.empty() ? "time budget reached in " : ", ") + what;
  };

  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, dev));
  const int nsm = prop.multiProcessorCount;
  if (region < static_cast<size_t>(nsm) * kPassBytes) {
    std::fprintf(stderr, "--region-mib must be at least %d (8 MiB per SM)\n", nsm * 8);
    return 1;
  }
  const size_t smem = prop.sharedMemPerBlockOptin - 1024; // as mb_gemm_contention's spinner
  MB_CK(cudaFuncSetAttribute(copy_spinner, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  {
    int per_sm = 0;
    MB_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_spinner, kSpinThreads, smem));
    if (per_sm != 1) {
      std::fprintf(stderr, "copy kernel occupancy is %d CTAs/SM, expected 1\n", per_sm);
      return 5;
    }
  }
  Ctrl ctrl;
  CopyKernel A(nsm, region, smem, 77), B(nsm, region, smem, 78);
  MB_CK(cudaDeviceSynchronize());

  // Correctness: one run on all SMs, layout "hbm" (the first chunk of every CTA's slice is
  // copied at least once), dst poisoned before, compared bit for bit.
  long long mismatches = -1;
  size_t checked_bytes = 0;
  {
    const int ch            = A.chunks_for(nsm, true);
    std::vector<Meas> m     = measure_copies(ctrl, {{&A, nsm, ch}}, window_ms);
    unsigned long long *bad = nullptr;
    MB_CK(cudaMalloc(&bad, sizeof *bad));
    MB_CK(cudaMemset(bad, 0, sizeof *bad));
    for (int c = 0; c < nsm; ++c) {
      const size_t off = static_cast<size_t>(c) * ch * kPassBytes;
      count_mismatch<<<256, 256>>>(reinterpret_cast<const uint4 *>(reinterpret_cast<char *>(A.src) + off),
                                   reinterpret_cast<const uint4 *>(reinterpret_cast<char *>(A.dst) + off),
                                   kPassBytes / 16, bad);
      MB_CK_LAUNCH();
      checked_bytes += kPassBytes;
    }
    unsigned long long h = 0;
    MB_CK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
    cudaFree(bad);
    mismatches = static_cast<long long>(h);
    std::fprintf(stderr, "check: %lld mismatching words in %zu MiB; warm-up %d SMs %.1f B/ns\n", mismatches,
                 checked_bytes >> 20, nsm, m[0].bw);
    if (mismatches != 0) {
      std::fprintf(stderr, "copy kernel check failed\n");
      return 4;
    }
  }

  cublasLtHandle_t lt;
  MB_CKLT(cublasLtCreate(&lt));
  rep.env()
      .i("cublaslt_version", static_cast<long long>(cublasLtGetVersion()))
      .i("spinner_threads", kSpinThreads)
      .i("spinner_smem_bytes", static_cast<long long>(smem))
      .i("pass_bytes_per_direction", static_cast<long long>(kPassBytes))
      .i("region_bytes_per_direction", static_cast<long long>(region))
      .f("window_ms", window_ms)
      .i("reps", reps)
      .i("copy_check_bytes", static_cast<long long>(checked_bytes))
      .i("copy_check_mismatches", mismatches);

  // ------------------------------------------------------------------------------------------
  // copy_alone: every (layout, k) once per rep, reps outermost.
  if (has_mode("copy_alone")) {
    std::vector<std::pair<bool, int>> cases;
    for (bool hbm : {true, false})
      for (long k : sms_alone)
        if (k >= 1 && k <= nsm)
          cases.emplace_back(hbm, static_cast<int>(k));
    std::vector<std::vector<Meas>> ms(cases.size());
    int done_reps = 0;
    for (int r = 0; r < reps; ++r) {
      if (over()) {
        cut("copy_alone");
        break;
      }
      for (size_t i = 0; i < cases.size(); ++i) {
        const int ch = A.chunks_for(cases[i].second, cases[i].first);
        ms[i].push_back(measure_copies(ctrl, {{&A, cases[i].second, ch}}, window_ms)[0]);
      }
      ++done_reps;
    }
    for (size_t i = 0; i < cases.size() && done_reps > 0; ++i) {
      const int k = cases[i].second, ch = A.chunks_for(k, cases[i].first);
      std::vector<double> bws;
      for (const Meas &m : ms[i])
        if (m.ok)
          bws.push_back(m.bw);
      const double bw = mb::median(bws);
      mb::Row row;
      row.s("mode", "copy_alone")
          .s("layout", cases[i].first ? "hbm" : "spinner")
          .i("sms", k)
          .i("sm_count", nsm)
          .i("slice_bytes", static_cast<long long>(ch * kPassBytes))
          .i("footprint_bytes", static_cast<long long>(2ull * k * ch * kPassBytes))
          .f("bytes_per_ns", bw)
          .f("min_bytes_per_ns", mb::minimum(bws))
          .f("max_bytes_per_ns", bws.empty() ? NAN : *std::max_element(bws.begin(), bws.end()))
          .f("per_sm_bytes_per_ns", bw / k)
          .f("cta_min_bytes_per_ns", cta_med(ms[i], true))
          .f("cta_max_bytes_per_ns", cta_med(ms[i], false))
          .f("window_ns", med_of(ms[i], &Meas::span_ns))
          .i("passes_min", min_passes(ms[i]))
          .i("reps", static_cast<long long>(bws.size()))
          .s("status", status_of(ms[i]));
      rep.add(row);
      std::fprintf(stderr, "copy_alone %-7s k=%3d  %7.1f B/ns  (%.2f per SM, passes>=%d)\n",
                   cases[i].first ? "hbm" : "spinner", k, bw, bw / k, min_passes(ms[i]));
    }
    std::fprintf(stderr, "[%5.1fs] copy_alone done\n", mb::now_s() - t0);
  }

  // ------------------------------------------------------------------------------------------
  // copy_pair: per k, per rep: A alone, B alone, A + B.
  if (has_mode("copy_pair")) {
    for (long kl : sms_pair) {
      const int ka = static_cast<int>(kl), kb = nsm - ka;
      if (ka < 1 || kb < 1)
        continue;
      if (over()) {
        cut("copy_pair");
        break;
      }
      const int ca = A.chunks_for(ka, true), cb = B.chunks_for(kb, true);
      std::vector<Meas> a1, b1, a2, b2;
      std::vector<double> sums;
      for (int r = 0; r < reps; ++r) {
        a1.push_back(measure_copies(ctrl, {{&A, ka, ca}}, window_ms)[0]);
        b1.push_back(measure_copies(ctrl, {{&B, kb, cb}}, window_ms)[0]);
        std::vector<Meas> m = measure_copies(ctrl, {{&A, ka, ca}, {&B, kb, cb}}, window_ms);
        a2.push_back(m[0]);
        b2.push_back(m[1]);
        if (m[0].ok && m[1].ok)
          sums.push_back(m[0].bw + m[1].bw);
      }
      const double a = med_of(a2, &Meas::bw), b = med_of(b2, &Meas::bw);
      const double aa = med_of(a1, &Meas::bw), ba = med_of(b1, &Meas::bw);
      const double s = mb::median(sums);
      std::string st = status_of(a1);
      for (const auto *v : {&b1, &a2, &b2})
        if (st == "ok")
          st = status_of(*v);
      mb::Row row;
      row.s("mode", "copy_pair")
          .s("layout", "hbm")
          .i("sms_a", ka)
          .i("sms_b", kb)
          .i("sm_count", nsm)
          .f("a_bytes_per_ns", a)
          .f("b_bytes_per_ns", b)
          .f("sum_bytes_per_ns", s)
          .f("a_alone_bytes_per_ns", aa)
          .f("b_alone_bytes_per_ns", ba)
          .f("demand_sum_bytes_per_ns", aa + ba)
          .f("a_share", a / (a + b))
          .f("a_demand_share", aa / (aa + ba))
          .f("a_sm_share", static_cast<double>(ka) / nsm)
          .f("a_ratio", a / aa)
          .f("b_ratio", b / ba)
          .f("pred_proportional_a_bytes_per_ns", s * aa / (aa + ba))
          .f("pred_maxmin_a_bytes_per_ns", std::min(aa, std::max(0.5 * s, s - ba)))
          .f("a_cta_min_bytes_per_ns", cta_med(a2, true))
          .f("a_cta_max_bytes_per_ns", cta_med(a2, false))
          .f("b_cta_min_bytes_per_ns", cta_med(b2, true))
          .f("b_cta_max_bytes_per_ns", cta_med(b2, false))
          .i("passes_min", std::min(min_passes(a2), min_passes(b2)))
          .i("reps", reps)
          .s("status", st);
      rep.add(row);
      std::fprintf(stderr, "copy_pair k=%3d/%3d  A %7.1f (alone %7.1f)  B %7.1f (alone %7.1f)  sum %7.1f\n", ka, kb, a,
                   aa, b, ba, s);
    }
    std::fprintf(stderr, "[%5.1fs] copy_pair done\n", mb::now_s() - t0);
  }

  // ------------------------------------------------------------------------------------------
  // ce_beside_copy: per api, per rep: CE alone, then per k: copy alone, CE + copy.
  if (has_mode("ce_beside_copy")) {
    char *ce_src = nullptr, *ce_dst = nullptr;
    MB_CK(cudaMalloc(&ce_src, ce_bytes));
    MB_CK(cudaMalloc(&ce_dst, ce_bytes));
    mb::fill(reinterpret_cast<float *>(ce_src), ce_bytes / 4, 91);
    cudaStream_t cs;
    MB_CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    MB_CK(cudaDeviceSynchronize());
    for (const char *api : {"memcpy_async", "batch_prefer_overlap"}) {
      if (over()) {
        cut("ce_beside_copy");
        break;
      }
      const bool batch = std::string(api) == "batch_prefer_overlap";
      std::string api_err;
      auto op = [&](int) {
        if (!batch) {
          MB_CK(cudaMemcpyAsync(ce_dst, ce_src, ce_bytes, cudaMemcpyDeviceToDevice, cs));
          return;
        }
        void *dsts[1]       = {ce_dst};
        const void *srcs[1] = {ce_src};
        size_t sizes[1]     = {ce_bytes};
        cudaMemcpyAttributes at{};
        at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        at.flags          = cudaMemcpyFlagPreferOverlapWithCompute;
        size_t idx        = 0;
        cudaError_t e     = cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &at, &idx, 1, cs);
        if (e != cudaSuccess && api_err.empty())
          api_err = cudaGetErrorString(e);
      };
      // Batch size: enough copies to span the window when alone.
      Beside w = run_beside(ctrl, nullptr, 0, 0, false, cs, 3, op, watchdog_s);
      if (!api_err.empty()) {
        cudaGetLastError();
        mb::Row row;
        row.s("mode", "ce_beside_copy").s("api", api).s("status", "api error: " + api_err);
        rep.add(row);
        continue;
      }
      const int n = std::max(4, std::min(256, static_cast<int>(std::ceil(window_ms * 1e6 / mb::median(w.ns)))));
      std::vector<double> ce_alone;
      std::vector<std::vector<double>> ce_with(sms_ce.size());
      std::vector<std::vector<Meas>> cp_alone(sms_ce.size()), cp_with(sms_ce.size());
      std::vector<int> hung(sms_ce.size(), 0);
      for (int r = 0; r < reps; ++r) {
        Beside b = run_beside(ctrl, nullptr, 0, 0, false, cs, n, op, watchdog_s);
        ce_alone.insert(ce_alone.end(), b.ns.begin(), b.ns.end());
        for (size_t i = 0; i < sms_ce.size(); ++i) {
          const int k = static_cast<int>(std::min<long>(sms_ce[i], nsm)), ch = A.chunks_for(k, true);
          if (hung[i])
            continue;
          cp_alone[i].push_back(measure_copies(ctrl, {{&A, k, ch}}, window_ms)[0]);
          Beside t = run_beside(ctrl, &A, k, ch, true, cs, n, op, watchdog_s);
          if (t.hung) {
            hung[i] = 1;
            continue;
          }
          ce_with[i].insert(ce_with[i].end(), t.ns.begin(), t.ns.end());
          cp_with[i].push_back(t.copy);
        }
      }
      const double ce_a = 2.0 * ce_bytes / mb::median(ce_alone);
      for (size_t i = 0; i < sms_ce.size(); ++i) {
        const int k      = static_cast<int>(std::min<long>(sms_ce[i], nsm));
        const double cew = 2.0 * ce_bytes / mb::median(ce_with[i]);
        const double ca = med_of(cp_alone[i], &Meas::bw), cw = med_of(cp_with[i], &Meas::bw);
        std::string st = hung[i] ? "timeout: the copies did not finish within " + std::to_string(watchdog_s) +
                                       " s beside the copy kernel (they wait for SMs?)"
                                 : status_of(cp_with[i]);
        if (st == "ok")
          st = status_of(cp_alone[i]);
        mb::Row row;
        row.s("mode", "ce_beside_copy")
            .s("api", api)
            .i("copy_sms", k)
            .i("sm_count", nsm)
            .i("ce_bytes", static_cast<long long>(ce_bytes))
            .f("ce_alone_bytes_per_ns", ce_a)
            .f("ce_beside_bytes_per_ns", hung[i] ? NAN : cew)
            .f("ce_alone_ns", mb::median(ce_alone))
            .f("ce_beside_ns", hung[i] ? NAN : mb::median(ce_with[i]))
            .f("copy_alone_bytes_per_ns", ca)
            .f("copy_beside_bytes_per_ns", hung[i] ? NAN : cw)
            .f("sum_beside_bytes_per_ns", hung[i] ? NAN : cew + cw)
            .f("ce_ratio", hung[i] ? NAN : cew / ce_a)
            .f("copy_ratio", hung[i] ? NAN : cw / ca)
            .i("ce_copies_per_batch", n)
            .i("passes_min", min_passes(cp_with[i]))
            .i("reps", static_cast<long long>(cp_with[i].size()))
            .s("status", st);
        rep.add(row);
        std::fprintf(stderr, "ce_beside_copy %-20s k=%3d  CE %7.1f (alone %7.1f)  copy %7.1f (alone %7.1f)  %s\n", api,
                     k, cew, ce_a, cw, ca, st.c_str());
      }
    }
    cudaFree(ce_src);
    cudaFree(ce_dst);
    std::fprintf(stderr, "[%5.1fs] ce_beside_copy done\n", mb::now_s() - t0);
  }

  // ------------------------------------------------------------------------------------------
  // gemm_beside_copy: per (shape, k), per rep: plain, idle spinner, copying spinner, copy alone.
  if (has_mode("gemm_beside_copy")) {
    std::vector<mb::GemmShape> shapes;
    std::vector<std::string> dts;
    for (const std::string &t : shape_list) {
      mb::GemmShape s;
      char dt[16] = {0};
      if (std::sscanf(t.c_str(), "%ldx%ldx%ld:%15s", &s.m, &s.n, &s.k, dt) != 4 ||
          (std::string(dt) != "bf16" && std::string(dt) != "fp8")) {
        std::fprintf(stderr, "bad shape %s (want MxNxK:bf16|fp8)\n", t.c_str());
        return 1;
      }
      s.fp8 = std::string(dt) == "fp8";
      shapes.push_back(s);
      dts.push_back(dt);
    }
    size_t need = 0;
    for (auto s : shapes) {
      s.fp8 = false;
      need  = std::max(need, s.a_bytes() + s.b_bytes() + s.d_bytes() + 768);
    }
    const int nsets = static_cast<int>(std::max<size_t>(2, (3 * static_cast<size_t>(prop.l2CacheSize)) / need + 1));
    const size_t pool_bytes = need * nsets + 4096;
    char *pool              = nullptr;
    MB_CK(cudaMalloc(&pool, pool_bytes));
    cudaStream_t gs;
    MB_CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
    mb::LtGemm g(lt);
    for (size_t si = 0; si < shapes.size(); ++si) {
      mb::GemmShape s = shapes[si];
      const char *dt  = dts[si].c_str();
      if (over()) {
        cut("gemm_beside_copy");
        break;
      }
      if (s.fp8)
        mb::fill(reinterpret_cast<__nv_fp8_e4m3 *>(pool), pool_bytes, 99, 1.0f, gs);
      else
        mb::fill(reinterpret_cast<__nv_bfloat16 *>(pool), pool_bytes / 2, 99, 1.0f, gs);
      const size_t a = (s.a_bytes() + 255) & ~size_t(255), b = (s.b_bytes() + 255) & ~size_t(255);
      const size_t set = a + b + ((s.d_bytes() + 255) & ~size_t(255));
      std::string err;
      mb::Row base;
      base.s("mode", "gemm_beside_copy").i("m", s.m).i("n", s.n).i("k", s.k).s("dtype", dt).s("layout", s.layout());
      if (!g.setup(s, &err) || g.try_run(pool, pool + a, pool + a + b, gs) != CUBLAS_STATUS_SUCCESS) {
        base.s("status", err.empty() ? "cublasLtMatmul failed" : err);
        rep.add(base);
        continue;
      }
      int counter = 0;
      auto op     = [&](int) {
        char *p = pool + static_cast<size_t>(counter++ % nsets) * set;
        g.run(p, p + a, p + a + b, gs);
      };
      Beside w    = run_beside(ctrl, nullptr, 0, 0, false, gs, 5, op, watchdog_s);
      const int n = std::max(3, std::min(400, static_cast<int>(std::ceil(window_ms * 1e6 / mb::median(w.ns)))));
      for (long kl : sms_gemm) {
        const int k = static_cast<int>(kl);
        if (k < 1 || k >= nsm)
          continue;
        if (over()) {
          cut("gemm_beside_copy");
          break;
        }
        const int ch = A.chunks_for(k, gemm_hbm);
        std::vector<double> plain, idle, busy;
        std::vector<Meas> cp_alone, cp_with;
        bool hung = false;
        for (int r = 0; r < reps && !hung; ++r) {
          Beside p = run_beside(ctrl, nullptr, 0, 0, false, gs, n, op, watchdog_s);
          Beside i = run_beside(ctrl, &A, k, ch, false, gs, n, op, watchdog_s);
          Beside c = run_beside(ctrl, &A, k, ch, true, gs, n, op, watchdog_s);
          hung     = i.hung || c.hung;
          plain.insert(plain.end(), p.ns.begin(), p.ns.end());
          idle.insert(idle.end(), i.ns.begin(), i.ns.end());
          busy.insert(busy.end(), c.ns.begin(), c.ns.end());
          cp_with.push_back(c.copy);
          cp_alone.push_back(measure_copies(ctrl, {{&A, k, ch}}, window_ms)[0]);
        }
        mb::Row row = base;
        row.i("sms_held", k).i("sm_count", nsm).s("copy_layout", gemm_hbm ? "hbm" : "spinner");
        if (hung) {
          row.s("status",
                "timeout: GEMM did not finish within " + std::to_string(watchdog_s) + " s while SMs were held");
          rep.add(row);
          continue;
        }
        const double tp = mb::median(plain), ti = mb::median(idle), tc = mb::median(busy);
        const double ca = med_of(cp_alone, &Meas::bw), cw = med_of(cp_with, &Meas::bw);
        const double minb = static_cast<double>(s.a_bytes() + s.b_bytes() + s.d_bytes());
        std::string st    = status_of(cp_with);
        if (st == "ok")
          st = status_of(cp_alone);
        row.f("gemm_plain_ns", tp)
            .f("gemm_idle_ns", ti)
            .f("gemm_copy_ns", tc)
            .f("slowdown_idle", ti / tp)
            .f("slowdown_copy", tc / tp)
            .f("slowdown_copy_vs_idle", tc / ti)
            .f("tflops_copy", s.flops() / tc / 1e3)
            .f("copy_alone_bytes_per_ns", ca)
            .f("copy_beside_bytes_per_ns", cw)
            .f("copy_ratio", cw / ca)
            .f("copy_cta_min_bytes_per_ns", cta_med(cp_with, true))
            .f("copy_cta_max_bytes_per_ns", cta_med(cp_with, false))
            .i("gemm_min_bytes", static_cast<long long>(minb))
            .f("gemm_min_bytes_per_ns", minb / tc)
            .i("gemms_per_batch", n)
            .i("passes_min", min_passes(cp_with))
            .i("reps", reps);
        g.describe(row).s("status", st);
        rep.add(row);
        std::fprintf(stderr,
                     "gemm %s %ldx%ldx%ld k=%2d  plain %8.0f idle %8.0f copy %8.0f ns (x%.3f)  copy %7.1f alone %7.1f "
                     "(x%.3f)\n",
                     dt, s.m, s.n, s.k, k, tp, ti, tc, tc / ti, cw, ca, cw / ca);
      }
    }
    cudaFree(pool);
    std::fprintf(stderr, "[%5.1fs] gemm_beside_copy done\n", mb::now_s() - t0);
  }
  cublasLtDestroy(lt);
  return rep.close(truncated, note);
}
