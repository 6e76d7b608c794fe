// mb_gemm: cuBLASLt GEMM time per shape, bf16 and fp8 (kind "gemm").
//
//   mb_gemm --shapes models.txt [--grid grid.txt] [--moe moe.txt] [--dtypes bf16,fp8]
//           [--out gemm.json] [--budget-s 170] [--target-ms 8] [--min-reps 3] [--max-reps 20]
//           [--device 0] [--warm-ms 0] [--heat-s 0]
//
// Shape files hold "M N K LAYOUT PASS [DTYPES]" lines (gen_shapes.py; rows are labelled
// source "model", "grid", "moe" by the option that named the file). The optional sixth field
// is a comma list of the dtypes the shape is timed in (gen_shapes.py --moe marks the router
// "bf16"); without it, every dtype of --dtypes. For each shape: the heuristic's
// best algorithm with a 64 MiB workspace, warm-up, then `reps` timed runs (CUDA events, one
// pair per run), rotating over enough input/output buffer sets that the working set is at
// least 3x L2, inputs uniform random in [-1, 1). Reported: the median and the minimum.
// The soft budget stops before a shape that would not fit; the file then says truncated.
//
// Sustained mode (--warm-ms W, --heat-s H): a training step keeps the GPU busy, so under the
// power cap its SM clock is the capped one, while a shape timed for a few milliseconds between
// idle gaps can run at the boost clock. With --heat-s the run first keeps an 8192^3 GEMM of the
// first dtype running for H seconds; with --warm-ms each shape then runs back to back for W ms
// right before its timed runs, queued on the same stream with no synchronisation between them,
// so the timed runs see the clock a busy GPU has. The rows carry "warm_ms".
#include <map>
#include <set>
#include <tuple>

#include "mb_lt.h"

namespace {

struct Job {
  mb::GemmShape s;
  std::string pass, source;
};

// Whether the comma list `list` names `item`.
bool in_list(const std::string &list, const std::string &item)
{
  return ("," + list + ",").find("," + item + ",") != std::string::npos;
}

std::vector<Job> read_shapes(const char *path, const char *source, bool fp8)
{
  std::vector<Job> out;
  FILE *f = std::fopen(path, "r");
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path);
    std::exit(1);
  }
  char line[256];
  std::set<std::tuple<long, long, long, char, char, bool>> seen;
  while (std::fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n')
      continue;
    long m, n, k;
    char lay[8] = {0}, pass[16] = {0}, only[32] = {0};
    const int fields = std::sscanf(line, "%ld %ld %ld %7s %15s %31s", &m, &n, &k, lay, pass, only);
    if (fields < 5)
      continue;
    if (fields == 6 && !in_list(only, fp8 ? "fp8" : "bf16"))
      continue;
    Job j;
    j.s.m    = m;
    j.s.n    = n;
    j.s.k    = k;
    j.s.fp8  = fp8;
    j.pass   = pass;
    j.source = source;
    if (fp8) { // Hopper fp8 is TN only; TE casts+transposes so every pass runs TN
      j.s.ta         = 'T';
      j.s.tb         = 'N';
      j.s.fast_accum = (j.pass == "fprop");
    } else {
      j.s.ta = lay[0];
      j.s.tb = lay[1];
    }
    auto key = std::make_tuple(m, n, k, j.s.ta, j.s.tb, j.s.fast_accum);
    if (seen.insert(key).second)
      out.push_back(j);
  }
  std::fclose(f);
  return out;
}

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int dev = static_cast<int>(args.geti("--device", 0));
  MB_CK(cudaSetDevice(dev));
  const double budget_s    = args.getf("--budget-s", 170.0);
  const double target_ns   = 1e6 * args.getf("--target-ms", 8.0);
  const int min_reps       = static_cast<int>(args.geti("--min-reps", 3));
  const int max_reps       = static_cast<int>(args.geti("--max-reps", 20));
  const std::string dtypes = args.get("--dtypes", "bf16,fp8");
  const char *shapes       = args.get("--shapes", nullptr);
  const char *grid         = args.get("--grid", nullptr);
  const char *moe          = args.get("--moe", nullptr);
  const double warm_ns     = 1e6 * args.getf("--warm-ms", 0.0);
  const double heat_s      = args.getf("--heat-s", 0.0);
  if (!shapes && !grid && !moe) {
    std::fprintf(stderr,
                 "usage: mb_gemm [--shapes FILE] [--grid FILE] [--moe FILE] [--dtypes bf16,fp8] [--out FILE]\n");
    return 1;
  }
  mb::Report rep("gemm", args.get("--out", "gemm.json"), args.joined("mb_gemm"), {dev});
  const double t0 = mb::now_s();

  cublasLtHandle_t lt;
  MB_CKLT(cublasLtCreate(&lt));
  rep.env()
      .i("cublaslt_version", static_cast<long long>(cublasLtGetVersion()))
      .i("workspace_bytes", static_cast<long long>(mb::LtGemm::kWorkspaceBytes));
  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, dev));
  const size_t l2 = static_cast<size_t>(prop.l2CacheSize);

  // Check the layout mapping against a naive reference once per (dtype, layout).
  std::string checks = "[";
  for (int f8 = 0; f8 < 2; ++f8) {
    for (const char *lay : {"TN", "NN", "NT"}) {
      if (f8 && std::string(lay) != "TN")
        continue;
      mb::GemmShape s;
      s.m      = 384;
      s.n      = 256;
      s.k      = 512;
      s.ta     = lay[0];
      s.tb     = lay[1];
      s.fp8    = f8;
      double e = mb::check_gemm(lt, s);
      std::fprintf(stderr, "check %s %s: rel err %.3g\n", f8 ? "fp8" : "bf16", lay, e);
      checks += std::string(checks.size() > 1 ? ", " : "") +
                mb::Row().s("dtype", f8 ? "fp8" : "bf16").s("layout", lay).f("rel_err", e).str();
      if (e > 2e-2) {
        std::fprintf(stderr, "GEMM check failed\n");
        return 4;
      }
    }
  }
  rep.env().raw("correctness_checks", checks + "]");

  std::vector<Job> jobs;
  for (const char *dt : {"bf16", "fp8"}) {
    if (dtypes.find(dt) == std::string::npos)
      continue;
    bool f8 = std::string(dt) == "fp8";
    if (shapes)
      for (auto &j : read_shapes(shapes, "model", f8))
        jobs.push_back(j);
    if (grid)
      for (auto &j : read_shapes(grid, "grid", f8))
        jobs.push_back(j);
    if (moe)
      for (auto &j : read_shapes(moe, "moe", f8))
        jobs.push_back(j);
  }

  // Buffer pools sized for the largest job; small jobs rotate over several sets inside them.
  size_t in_need = 0, out_need = 0;
  for (auto &j : jobs) {
    in_need  = std::max(in_need, j.s.a_bytes() + j.s.b_bytes() + 512);
    out_need = std::max(out_need, j.s.d_bytes() + 256);
  }
  const size_t in_pool = std::max(in_need, 4 * l2), out_pool = std::max(out_need, 4 * l2);
  char *pin = nullptr, *pout = nullptr;
  MB_CK(cudaMalloc(&pin, in_pool));
  MB_CK(cudaMalloc(&pout, out_pool));
  MB_CK(cudaMemset(pout, 0, out_pool));
  std::fprintf(stderr, "%zu jobs, pools %.2f + %.2f GB\n", jobs.size(), in_pool / 1e9, out_pool / 1e9);

  cudaStream_t st;
  MB_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  mb::LtGemm g(lt);
  int filled_fp8 = -1;
  bool truncated = false;
  size_t skipped = 0;
  auto align     = [](size_t x) { return (x + 255) & ~size_t(255); };

  if (heat_s > 0.0 && !jobs.empty()) { // bring the GPU to its power-capped steady state
    mb::GemmShape h;
    h.m = h.n = h.k = 8192;
    h.ta            = 'T';
    h.tb            = 'N';
    h.fp8           = jobs[0].s.fp8;
    std::string err;
    if (h.fp8) // random inputs, as the timed shapes get (a GEMM of zeros draws less power)
      mb::fill(reinterpret_cast<__nv_fp8_e4m3 *>(pin), in_pool, 1234, 1.0f, st);
    else
      mb::fill(reinterpret_cast<__nv_bfloat16 *>(pin), in_pool / 2, 1234, 1.0f, st);
    filled_fp8 = h.fp8;
    if (in_pool >= align(h.a_bytes()) + h.b_bytes() && out_pool >= h.d_bytes() && g.setup(h, &err)) {
      const double th0 = mb::now_s();
      while (mb::now_s() - th0 < heat_s) {
        for (int r = 0; r < 50; ++r)
          g.run(pin, pin + align(h.a_bytes()), pout, st);
        MB_CK(cudaStreamSynchronize(st));
      }
      std::fprintf(stderr, "heated %.1f s with an 8192^3 %s GEMM\n", mb::now_s() - th0, h.fp8 ? "fp8" : "bf16");
    }
  }

  for (size_t ji = 0; ji < jobs.size(); ++ji) {
    const Job &j = jobs[ji];
    // Rough cost guard: 700/1400 TFLOP/s with ~(min_reps + 2) runs.
    const double est_s = (min_reps + 2) * j.s.flops() / (j.s.fp8 ? 1.4e15 : 0.7e15) + 0.003 + 2e-9 * warm_ns;
    if (mb::now_s() - t0 + est_s > budget_s) {
      truncated = true;
      ++skipped;
      continue;
    }
    if (filled_fp8 != static_cast<int>(j.s.fp8)) { // refill inputs with this dtype's values
      if (j.s.fp8)
        mb::fill(reinterpret_cast<__nv_fp8_e4m3 *>(pin), in_pool, 1234, 1.0f, st);
      else
        mb::fill(reinterpret_cast<__nv_bfloat16 *>(pin), in_pool / 2, 1234, 1.0f, st);
      filled_fp8 = j.s.fp8;
    }
    mb::Row row;
    row.i("m", j.s.m)
        .i("n", j.s.n)
        .i("k", j.s.k)
        .s("dtype", j.s.fp8 ? "fp8" : "bf16")
        .s("layout", j.s.layout())
        .s("pass", j.pass)
        .s("source", j.source)
        .b("fast_accum", j.s.fast_accum);
    std::string err;
    if (!g.setup(j.s, &err)) {
      row.s("status", err);
      rep.add(row);
      continue;
    }
    const size_t a_sz = align(j.s.a_bytes()), b_sz = align(j.s.b_bytes()), d_sz = align(j.s.d_bytes());
    const size_t want = std::min<size_t>(64, (3 * l2) / (a_sz + b_sz) + 1);
    const size_t nin  = std::max<size_t>(1, std::min(want, in_pool / (a_sz + b_sz)));
    const size_t nout = std::max<size_t>(1, std::min(want, out_pool / d_sz));
    auto launch       = [&](int r) {
      size_t si = static_cast<size_t>(r) % nin, so = static_cast<size_t>(r) % nout;
      const char *A = pin + si * (a_sz + b_sz);
      g.run(A, A + a_sz, pout + so * d_sz, st);
    };
    { // one checked run: a refused shape becomes a row with a status instead of an abort
      cublasStatus_t cs = g.try_run(pin, pin + a_sz, pout, st);
      if (cs != CUBLAS_STATUS_SUCCESS) {
        row.s("status", "cublasLtMatmul status " + std::to_string(static_cast<int>(cs)));
        rep.add(row);
        continue;
      }
    }
    // Warm-up (also the estimate that sizes the timed run).
    std::vector<double> w = mb::time_reps(st, 2, launch);
    const double t_est    = w[1];
    const int reps = std::max(min_reps, std::min(max_reps, static_cast<int>(target_ns / std::max(t_est, 1.0)) + 1));
    // sustained mode: the shape back to back for warm_ns first, on the stream, unsynchronised
    const int warm = warm_ns > 0.0 ? static_cast<int>(warm_ns / std::max(t_est, 1.0)) + 1 : 0;
    for (int r = 0; r < warm; ++r)
      launch(r);
    std::vector<double> ns = mb::time_reps(st, reps, [&](int r) { launch(r + 2); });
    const double med       = mb::median(ns);
    row.f("median_ns", med)
        .f("min_ns", mb::minimum(ns))
        .f("tflops", j.s.flops() / med / 1e3)
        .f("flops", j.s.flops())
        .i("reps", reps)
        .f("warm_ms", warm_ns / 1e6)
        .i("buffer_sets_in", static_cast<long long>(nin))
        .i("buffer_sets_out", static_cast<long long>(nout))
        .i("working_set_bytes", static_cast<long long>(nin * (a_sz + b_sz) + nout * d_sz));
    g.describe(row).s("status", "ok");
    rep.add(row);
    if (ji % 200 == 0)
      std::fprintf(stderr, "[%6.1fs] %zu/%zu %s %ldx%ldx%ld %s: %.1f TFLOP/s\n", mb::now_s() - t0, ji, jobs.size(),
                   j.s.fp8 ? "fp8" : "bf16", j.s.m, j.s.n, j.s.k, j.s.layout().c_str(), j.s.flops() / med / 1e3);
  }
  MB_CK(cudaStreamSynchronize(st));
  cudaFree(pin);
  cudaFree(pout);
  cublasLtDestroy(lt);
  std::string note = truncated ? std::to_string(skipped) + " shapes skipped by the time budget" : "";
  return rep.close(truncated, note);
}
