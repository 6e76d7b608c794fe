// mb_gemm_accum: what accumulating into the output costs a weight-gradient GEMM (kind "gemm_accum").
//
//   mb_gemm_accum --shapes models.txt [--dtypes bf16,fp8] [--into fp32,bf16] [--out gemm_accum.json]
//                 [--budget-s 240] [--target-ms 6] [--min-reps 4] [--max-reps 16] [--device 0]
//
// With gradient-accumulation fusion (Megatron-LM's default, Transformer Engine's
// fuse_wgrad_accumulation), the wgrad GEMM adds its product straight into the parameter's
// main_grad: D = C + op(A) op(B) with C aliasing D (beta = 1) and D in main_grad's dtype, fp32
// when grad_reduce_in_fp32 is on, else bf16. The gemm table (mb_gemm) times the same shapes with
// beta = 0 and a bf16 D. For each "wgrad" shape of the shapes file, this program times both,
// alternating run by run in one stream (so clock drift under the power cap hits both alike):
// the plain GEMM (the table's case) and the accumulating one, for each input dtype (bf16 with the
// shape's layout; fp8 e4m3 TN, fast_accum off, as TE's wgrad) and each main_grad dtype.
// Reported per row: baseline_ns and median_ns (medians), ratio = median_ns / baseline_ns.
// Input and output buffers rotate over sets of at least 3x L2, as in mb_gemm; the accumulating
// outputs start as random values in [-1, 1).
// Correctness: one small case per (dtype, into) is checked against C + a naive fp32 product.
#include <set>
#include <tuple>

#include "mb_lt.h"

namespace {

using mb::GemmShape;

struct Shape {
  long m, n, k;
  char ta, tb;
};

std::vector<Shape> read_wgrad_shapes(const char *path)
{
  std::vector<Shape> out;
  FILE *f = std::fopen(path, "r");
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path);
    std::exit(1);
  }
  char line[256];
  std::set<std::tuple<long, long, long, char, char>> seen;
  while (std::fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n')
      continue;
    long m, n, k;
    char lay[8] = {0}, pass[16] = {0};
    if (std::sscanf(line, "%ld %ld %ld %7s %15s", &m, &n, &k, lay, pass) < 5 || std::string(pass) != "wgrad")
      continue;
    if (seen.insert(std::make_tuple(m, n, k, lay[0], lay[1])).second)
      out.push_back({m, n, k, lay[0], lay[1]});
  }
  std::fclose(f);
  return out;
}

template <typename T> __global__ void to_float_kernel(const T *x, float *y, size_t n)
{
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    y[i] = static_cast<float>(x[i]);
}

// D = C + A B on a small random case, against the naive fp32 product plus C. Returns the
// relative Frobenius error of the accumulated part (D - C against A B).
double check_accum(cublasLtHandle_t h, GemmShape s)
{
  mb::LtGemm g(h);
  if (!g.setup(s, nullptr))
    return -1.0;
  const size_t na = static_cast<size_t>(s.n) * s.k, nb = static_cast<size_t>(s.k) * s.m;
  const size_t nd = static_cast<size_t>(s.m) * s.n;
  void *A, *B, *D;
  float *C, *P, *Df;
  MB_CK(cudaMalloc(&A, s.a_bytes()));
  MB_CK(cudaMalloc(&B, s.b_bytes()));
  MB_CK(cudaMalloc(&D, s.d_bytes()));
  MB_CK(cudaMalloc(&C, nd * 4));
  MB_CK(cudaMalloc(&P, nd * 4));
  MB_CK(cudaMalloc(&Df, nd * 4));
  const bool f32 = s.accum == GemmShape::kIntoFp32;
  if (f32)
    mb::fill(static_cast<float *>(D), nd, 13);
  else
    mb::fill(static_cast<__nv_bfloat16 *>(D), nd, 13);
  const unsigned blocks = static_cast<unsigned>((nd + 255) / 256);
  if (f32)
    to_float_kernel<<<blocks, 256>>>(static_cast<const float *>(D), C, nd);
  else
    to_float_kernel<<<blocks, 256>>>(static_cast<const __nv_bfloat16 *>(D), C, nd);
  MB_CK_LAUNCH();
  dim3 grid(static_cast<unsigned>((s.n + 127) / 128), static_cast<unsigned>(s.m));
  cublasStatus_t st;
  if (s.fp8) {
    mb::fill(static_cast<__nv_fp8_e4m3 *>(A), na, 11);
    mb::fill(static_cast<__nv_fp8_e4m3 *>(B), nb, 12);
    st = g.try_run(A, B, D, 0);
    mb::ref_gemm_kernel<<<grid, 128>>>(static_cast<const __nv_fp8_e4m3 *>(A), static_cast<const __nv_fp8_e4m3 *>(B), P,
                                       s.n, s.m, s.k, s.ta == 'T', s.tb == 'T');
  } else {
    mb::fill(static_cast<__nv_bfloat16 *>(A), na, 11);
    mb::fill(static_cast<__nv_bfloat16 *>(B), nb, 12);
    st = g.try_run(A, B, D, 0);
    mb::ref_gemm_kernel<<<grid, 128>>>(static_cast<const __nv_bfloat16 *>(A), static_cast<const __nv_bfloat16 *>(B), P,
                                       s.n, s.m, s.k, s.ta == 'T', s.tb == 'T');
  }
  MB_CK_LAUNCH();
  if (f32)
    to_float_kernel<<<blocks, 256>>>(static_cast<const float *>(D), Df, nd);
  else
    to_float_kernel<<<blocks, 256>>>(static_cast<const __nv_bfloat16 *>(D), Df, nd);
  MB_CK_LAUNCH();
  MB_CK(cudaDeviceSynchronize());
  std::vector<float> c(nd), p(nd), d(nd);
  MB_CK(cudaMemcpy(c.data(), C, nd * 4, cudaMemcpyDeviceToHost));
  MB_CK(cudaMemcpy(p.data(), P, nd * 4, cudaMemcpyDeviceToHost));
  MB_CK(cudaMemcpy(d.data(), Df, nd * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t i = 0; i < nd; ++i) {
    double x = static_cast<double>(d[i]) - c[i], y = p[i];
    num += (x - y) * (x - y);
    den += y * y;
  }
  for (void *q : {A, B, D, static_cast<void *>(C), static_cast<void *>(P), static_cast<void *>(Df)})
    cudaFree(q);
  if (st != CUBLAS_STATUS_SUCCESS)
    return -2.0 - static_cast<int>(st);
  double e = std::sqrt(num / (den > 0 ? den : 1.0));
  return std::isfinite(e) ? e : 1e30;
}

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int dev = static_cast<int>(args.geti("--device", 0));
  MB_CK(cudaSetDevice(dev));
  const double budget_s    = args.getf("--budget-s", 240.0);
  const double target_ns   = 1e6 * args.getf("--target-ms", 6.0);
  const int min_reps       = static_cast<int>(args.geti("--min-reps", 4));
  const int max_reps       = static_cast<int>(args.geti("--max-reps", 16));
  const std::string dtypes = args.get("--dtypes", "bf16,fp8");
  const std::string into   = args.get("--into", "fp32,bf16");
  const char *shapes       = args.get("--shapes", nullptr);
  if (!shapes) {
    std::fprintf(stderr, "usage: mb_gemm_accum --shapes FILE [--dtypes bf16,fp8] [--into fp32,bf16] [--out FILE]\n");
    return 1;
  }
  mb::Report rep("gemm_accum", args.get("--out", "gemm_accum.json"), args.joined("mb_gemm_accum"), {dev});
  const double t0 = mb::now_s();
  cublasLtHandle_t lt;
  MB_CKLT(cublasLtCreate(&lt));
  rep.env().i("cublaslt_version", static_cast<long long>(cublasLtGetVersion()));
  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, dev));
  const size_t l2 = static_cast<size_t>(prop.l2CacheSize);

  struct Variant {
    bool fp8;
    GemmShape::Accum accum;
  };
  std::vector<Variant> variants;
  for (const char *dt : {"bf16", "fp8"})
    for (const char *in : {"fp32", "bf16"})
      if (dtypes.find(dt) != std::string::npos && into.find(in) != std::string::npos)
        variants.push_back(
            {std::string(dt) == "fp8", std::string(in) == "fp32" ? GemmShape::kIntoFp32 : GemmShape::kIntoBf16});

  std::string checks = "[";
  for (const Variant &v : variants) {
    GemmShape s;
    s.m = 384, s.n = 256, s.k = 512;
    s.ta  = v.fp8 ? 'T' : 'N';
    s.tb  = v.fp8 ? 'N' : 'T';
    s.fp8 = v.fp8, s.accum = v.accum;
    const double e = check_accum(lt, s);
    const char *in = v.accum == GemmShape::kIntoFp32 ? "fp32" : "bf16";
    std::fprintf(stderr, "check %s into %s: rel err %.3g\n", v.fp8 ? "fp8" : "bf16", in, e);
    checks += std::string(checks.size() > 1 ? ", " : "") +
              mb::Row().s("dtype", v.fp8 ? "fp8" : "bf16").s("into", in).f("rel_err", e).str();
    // bf16 accumulation rounds the sum to bf16: its error is that of C's magnitude, larger.
    if (e < 0 || e > (v.accum == GemmShape::kIntoBf16 ? 5e-2 : 2e-2)) {
      std::fprintf(stderr, "accumulating GEMM check failed\n");
      return 4;
    }
  }
  rep.env().raw("correctness_checks", checks + "]");

  const std::vector<Shape> list = read_wgrad_shapes(shapes);
  size_t in_need = 0, out_need = 0;
  for (const Shape &s : list) {
    in_need  = std::max(in_need, 2 * static_cast<size_t>(s.k) * (s.m + s.n) + 512);
    out_need = std::max(out_need, 4 * static_cast<size_t>(s.m) * s.n + 256);
  }
  const size_t in_pool = std::max(in_need, 4 * l2), out_pool = std::max(out_need, 4 * l2);
  char *pin = nullptr, *pbase = nullptr, *pacc = nullptr;
  MB_CK(cudaMalloc(&pin, in_pool));
  MB_CK(cudaMalloc(&pbase, out_pool));
  MB_CK(cudaMalloc(&pacc, out_pool));
  MB_CK(cudaMemset(pbase, 0, out_pool));
  std::fprintf(stderr, "%zu wgrad shapes x %zu variants, pools %.2f + 2 x %.2f GB\n", list.size(), variants.size(),
               in_pool / 1e9, out_pool / 1e9);

  cudaStream_t st;
  MB_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  mb::LtGemm base(lt), acc(lt);
  auto align     = [](size_t x) { return (x + 255) & ~size_t(255); };
  bool truncated = false;
  size_t skipped = 0, done = 0;
  for (const Variant &v : variants) {
    if (v.fp8)
      mb::fill(reinterpret_cast<__nv_fp8_e4m3 *>(pin), in_pool, 1234, 1.0f, st);
    else
      mb::fill(reinterpret_cast<__nv_bfloat16 *>(pin), in_pool / 2, 1234, 1.0f, st);
    if (v.accum == GemmShape::kIntoFp32)
      mb::fill(reinterpret_cast<float *>(pacc), out_pool / 4, 77, 1.0f, st);
    else
      mb::fill(reinterpret_cast<__nv_bfloat16 *>(pacc), out_pool / 2, 77, 1.0f, st);
    const char *in = v.accum == GemmShape::kIntoFp32 ? "fp32" : "bf16";
    for (const Shape &sh : list) {
      GemmShape s;
      s.m = sh.m, s.n = sh.n, s.k = sh.k, s.fp8 = v.fp8;
      s.ta               = v.fp8 ? 'T' : sh.ta;
      s.tb               = v.fp8 ? 'N' : sh.tb;
      const double est_s = 2.0 * (min_reps + 2) * s.flops() / (v.fp8 ? 1.2e15 : 0.65e15) + 0.004;
      if (mb::now_s() - t0 + est_s > budget_s) {
        truncated = true;
        ++skipped;
        continue;
      }
      GemmShape sa = s;
      sa.accum     = v.accum;
      mb::Row row;
      row.i("m", s.m).i("n", s.n).i("k", s.k).s("dtype", v.fp8 ? "fp8" : "bf16").s("layout", s.layout());
      row.s("pass", "wgrad").s("into", in);
      std::string err;
      if (!base.setup(s, &err) || !acc.setup(sa, &err)) {
        row.s("status", err);
        rep.add(row);
        continue;
      }
      const size_t a_sz = align(s.a_bytes()), b_sz = align(s.b_bytes());
      const size_t d0 = align(s.d_bytes()), d1 = align(sa.d_bytes());
      const size_t want = std::min<size_t>(64, (3 * l2) / (a_sz + b_sz) + 1);
      const size_t nin  = std::max<size_t>(1, std::min(want, in_pool / (a_sz + b_sz)));
      const size_t nout = std::max<size_t>(1, std::min(want, out_pool / d1));
      auto run_pair     = [&](int r, cudaEvent_t e0, cudaEvent_t e1, cudaEvent_t e2) {
        const char *A  = pin + (static_cast<size_t>(r) % nin) * (a_sz + b_sz);
        const size_t o = static_cast<size_t>(r) % nout;
        MB_CK(cudaEventRecord(e0, st));
        base.run(A, A + a_sz, pbase + o * d0, st);
        MB_CK(cudaEventRecord(e1, st));
        acc.run(A, A + a_sz, pacc + o * d1, st);
        MB_CK(cudaEventRecord(e2, st));
      };
      // Warm-up pairs (also the estimate that sizes the timed run), then the timed pairs.
      int reps = 2;
      std::vector<double> tb, ta;
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<cudaEvent_t> ev(3 * reps);
        for (auto &e : ev)
          MB_CK(cudaEventCreate(&e));
        for (int r = 0; r < reps; ++r)
          run_pair(r + pass * 2, ev[3 * r], ev[3 * r + 1], ev[3 * r + 2]);
        MB_CK(cudaStreamSynchronize(st));
        tb.assign(reps, 0.0);
        ta.assign(reps, 0.0);
        for (int r = 0; r < reps; ++r) {
          float m0 = 0, m1 = 0;
          MB_CK(cudaEventElapsedTime(&m0, ev[3 * r], ev[3 * r + 1]));
          MB_CK(cudaEventElapsedTime(&m1, ev[3 * r + 1], ev[3 * r + 2]));
          tb[r] = 1e6 * m0;
          ta[r] = 1e6 * m1;
        }
        for (auto &e : ev)
          MB_CK(cudaEventDestroy(e));
        if (pass == 0)
          reps = std::max(min_reps, std::min(max_reps, static_cast<int>(target_ns / std::max(tb[1], 1.0)) + 1));
      }
      const double mb0 = mb::median(tb), ma = mb::median(ta);
      row.f("baseline_ns", mb0)
          .f("median_ns", ma)
          .f("ratio", ma / mb0)
          .f("flops", s.flops())
          .f("tflops", s.flops() / ma / 1e3)
          .i("reps", reps);
      acc.describe(row).s("status", "ok");
      rep.add(row);
      if (++done % 200 == 0)
        std::fprintf(stderr, "[%6.1fs] %zu %s into %s %ldx%ldx%ld: %.3f\n", mb::now_s() - t0, done,
                     v.fp8 ? "fp8" : "bf16", in, s.m, s.n, s.k, ma / mb0);
    }
  }
  MB_CK(cudaStreamSynchronize(st));
  cudaFree(pin);
  cudaFree(pbase);
  cudaFree(pacc);
  cublasLtDestroy(lt);
  std::string note = truncated ? std::to_string(skipped) + " shapes skipped by the time budget" : "";
  return rep.close(truncated, note);
}
