// mb_gemm_nccl_overlap: a bf16 GEMM beside a real NCCL collective on every GPU of a group of
// 2, 4, 8, ... GPUs (kind "gemm_nccl_overlap").
//
//   mb_gemm_nccl_overlap [--group-sizes 8,2] [--ctas 0,1,2,4,8,16,32]
//                        [--colls all_gather,reduce_scatter] [--sizes-mib 128,512]
//                        [--shape 8192x8192x8192] [--reps 8] [--no-gate]
//
// A group of n ranks is GPUs 0..n-1 (--group-sizes as in mb_collectives: by default every power
// of two from the GPU count down to 2; groups run in turn, each with its share of what is left
// of --budget-s). On each GPU of the group the collective goes on a comm stream and the GEMM on
// a compute stream, the collective launched first (as Megatron / TE issue them). Per (group,
// ctas, collective, size, sm_margin, mode) this records medians over reps, the slowest rank each
// time. Every rep runs, back to back: the GEMM(s) alone on all SMs, alone with the margin, the
// collective alone, then both together (interleaved so that power-cap clock drift hits all four
// alike):
//   gemm_full_sms_alone_ns  one GEMM alone, all SMs (per GEMM of an n_gemm batch)
//   gemm_alone_ns     one GEMM alone with this row's SM_COUNT_TARGET (per GEMM of a batch)
//   coll_alone_ns     the collective alone
//   mode "single":    one GEMM and one collective started together (TE bulk overlap);
//                     gemm_overlap_ns and coll_overlap_ns are each stream's own time
//   mode "covered":   n_gemm back-to-back GEMMs, enough to outlast the collective alone;
//                     gemm_stream_ns is their total, and
//                     gemm_rate_while_overlapped = 1 - (gemm_stream_ns - n_gemm*gemm_alone_ns)
//                                                      / coll_overlap_ns
//                     is the GEMM's speed relative to alone while the collective ran
// sm_margin = 1 sets CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = SMs - ctas (TE set_sm_margin);
// only for an explicit CTA count. CUDA_DEVICE_MAX_CONNECTIONS is left as found (the record has
// it): with 1 connection an event behind the collective would hold back the GEMM's dispatch.
// Each timed phase starts behind the launch gate of mb_nccl.h (every stream of the group held
// until the host has enqueued everything), so that with 8 GPUs the last rank's GEMM does not
// start ~n launches later than the first's; rows say "launch_gated".
#include <memory>

#include "mb_lt.h"
#include "mb_nccl.h"

namespace {

struct Side {
  std::vector<cudaEvent_t> c0, c1, g0, g1;
};

} // namespace

int main(int argc, char **argv)
{
  mb::Args args(argc, argv);
  const int ndev = mb::nccl_devices("mb_gemm_nccl_overlap", 2);
  if (ndev < 0)
    return 1;
  const std::vector<int> groups     = mb::group_sizes(args.get("--group-sizes", ""), ndev);
  const std::vector<long> ctas      = mb::parse_list(args.get("--ctas", "0,1,2,4,8,16,32"));
  const std::vector<long> sizes_mib = mb::parse_list(args.get("--sizes-mib", "128,512"));
  const std::string colls_arg       = args.get("--colls", "all_gather,reduce_scatter");
  const int reps                    = static_cast<int>(args.geti("--reps", 8));
  const double budget_s             = args.getf("--budget-s", 90.0);
  mb::GemmShape shape;
  if (std::sscanf(args.get("--shape", "8192x8192x8192"), "%ldx%ldx%ld", &shape.m, &shape.n, &shape.k) != 3) {
    std::fprintf(stderr, "bad --shape\n");
    return 1;
  }
  const int nused = *std::max_element(groups.begin(), groups.end());
  std::vector<int> devs(nused);
  for (int d = 0; d < nused; ++d)
    devs[d] = d;
  mb::Report rep("gemm_nccl_overlap", args.get("--out", "gemm_nccl_overlap.json"), args.joined("mb_gemm_nccl_overlap"),
                 devs);
  mb::Gate gate(!args.has("--no-gate"));
  rep.env()
      .s("nccl_version", mb::nccl_version_string())
      .i("nranks", nused)
      .s("group_sizes", mb::join_ints(groups))
      .i("cublaslt_version", static_cast<long long>(cublasLtGetVersion()))
      .b("launch_gate", gate.enabled());
  const double t0 = mb::now_s();
  cudaDeviceProp prop{};
  MB_CK(cudaGetDeviceProperties(&prop, 0));
  const int nsm = prop.multiProcessorCount;

  long max_mib = 1;
  for (long s : sizes_mib)
    max_mib = std::max(max_mib, s);
  const size_t coll_bytes = static_cast<size_t>(max_mib) << 20;
  // GEMM buffers: 4 sets to rotate over (8192^3 bf16: 128 MiB + 128 MiB in, 128 MiB out).
  const int nsets   = 4;
  const size_t a_sz = (shape.a_bytes() + 255) & ~size_t(255), b_sz = (shape.b_bytes() + 255) & ~size_t(255);
  const size_t d_sz = (shape.d_bytes() + 255) & ~size_t(255), set = a_sz + b_sz + d_sz;

  // Everything per GPU of the largest group; a group of n uses entries 0..n-1.
  std::vector<char *> send(nused), recv(nused), gpool(nused);
  std::vector<cudaStream_t> comm_st(nused), comp_st(nused);
  std::vector<cublasLtHandle_t> lt(nused);
  std::vector<std::unique_ptr<mb::LtGemm>> gemm(nused), gemm_full(nused); // variant / all SMs
  for (int d = 0; d < nused; ++d) {
    MB_CK(cudaSetDevice(d));
    MB_CK(cudaMalloc(&send[d], coll_bytes));
    MB_CK(cudaMalloc(&recv[d], coll_bytes));
    MB_CK(cudaMalloc(&gpool[d], set * nsets));
    mb::fill(reinterpret_cast<__nv_bfloat16 *>(send[d]), coll_bytes / 2, 200 + d);
    mb::fill(reinterpret_cast<__nv_bfloat16 *>(gpool[d]), set * nsets / 2, 300 + d);
    int lo = 0, hi = 0;
    MB_CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    // TE: comm streams at the highest priority, GEMM streams at the lowest.
    MB_CK(cudaStreamCreateWithPriority(&comm_st[d], cudaStreamNonBlocking, hi));
    MB_CK(cudaStreamCreateWithPriority(&comp_st[d], cudaStreamNonBlocking, lo));
    MB_CKLT(cublasLtCreate(&lt[d]));
    gemm[d]      = std::make_unique<mb::LtGemm>(lt[d]);
    gemm_full[d] = std::make_unique<mb::LtGemm>(lt[d]);
    MB_CK(cudaDeviceSynchronize());
  }
  int n           = nused; // the group being measured: GPUs 0..n-1
  auto setup_gemm = [&](std::vector<std::unique_ptr<mb::LtGemm>> &gs, int sm_target) {
    mb::GemmShape s = shape;
    s.sm_target     = sm_target;
    for (int d = 0; d < nused; ++d) {
      MB_CK(cudaSetDevice(d));
      std::string err;
      if (!gs[d]->setup(s, &err)) {
        std::fprintf(stderr, "gemm setup: %s\n", err.c_str());
        std::exit(4);
      }
    }
  };
  setup_gemm(gemm_full, 0);
  int rot               = 0;
  auto launch_gemm_with = [&](const mb::LtGemm &g, int d) {
    MB_CK(cudaSetDevice(d));
    char *base = gpool[d] + static_cast<size_t>(rot % nsets) * set;
    g.run(base, base + a_sz, base + a_sz + b_sz, comp_st[d]);
  };
  auto launch_gemm = [&](int d) { launch_gemm_with(*gemm[d], d); };

  // One overlapped rep: per rank, events around the collective and around the GEMM run; both
  // streams of every rank start behind the gate.
  Side sd;
  for (auto *v : {&sd.c0, &sd.c1, &sd.g0, &sd.g1}) {
    v->resize(nused);
    for (int d = 0; d < nused; ++d) {
      MB_CK(cudaSetDevice(d));
      MB_CK(cudaEventCreate(&(*v)[d]));
    }
  }
  bool all_gated  = true; // of the current row's timings
  auto overlapped = [&](const mb::Comms &comms, mb::Coll coll, size_t bytes, int n_gemm, double *g_ns, double *c_ns) {
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      gate.hold(comm_st[d]);
      gate.hold(comp_st[d]);
      MB_CK(cudaEventRecord(sd.c0[d], comm_st[d]));
    }
    comms.launch(coll, bytes, send, recv, comm_st);
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      MB_CK(cudaEventRecord(sd.c1[d], comm_st[d]));
    }
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      MB_CK(cudaEventRecord(sd.g0[d], comp_st[d]));
      for (int i = 0; i < n_gemm; ++i) {
        launch_gemm(d);
        ++rot;
      }
      MB_CK(cudaEventRecord(sd.g1[d], comp_st[d]));
    }
    gate.release();
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      MB_CK(cudaDeviceSynchronize());
    }
    all_gated = gate.finish() && all_gated;
    *g_ns = *c_ns = 0;
    for (int d = 0; d < n; ++d) {
      MB_CK(cudaSetDevice(d));
      float a = 0, b = 0;
      MB_CK(cudaEventElapsedTime(&a, sd.g0[d], sd.g1[d]));
      MB_CK(cudaEventElapsedTime(&b, sd.c0[d], sd.c1[d]));
      *g_ns = std::max(*g_ns, 1e6 * a);
      *c_ns = std::max(*c_ns, 1e6 * b);
    }
  };

  std::vector<mb::Coll> colls;
  if (colls_arg.find("all_gather") != std::string::npos)
    colls.push_back(mb::Coll::AllGather);
  if (colls_arg.find("reduce_scatter") != std::string::npos)
    colls.push_back(mb::Coll::ReduceScatter);
  if (colls_arg.find("all_reduce") != std::string::npos)
    colls.push_back(mb::Coll::AllReduce);

  // Interleaved design: every rep times, back to back, the GEMM(s) alone on all SMs, the
  // GEMM(s) alone with the margin (if any), the collective alone, then both together. Heavy
  // GEMMs push the GPU into its power cap within milliseconds, so timing "alone" in one batch
  // and "overlapped" in a later one would bias the comparison; interleaving cancels that.
  auto gemms_alone = [&](std::vector<std::unique_ptr<mb::LtGemm>> &gs, int n_gemm) {
    const std::vector<cudaStream_t> st(comp_st.begin(), comp_st.begin() + n);
    bool g         = false;
    const double t = mb::time_multi(
        st, 1,
        [&](int) {
          for (int d = 0; d < n; ++d)
            for (int i = 0; i < n_gemm; ++i) {
              launch_gemm_with(*gs[d], d);
              ++rot;
            }
        },
        &gate, &g)[0];
    all_gated = g && all_gated;
    return t;
  };
  std::string note;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    n                  = groups[gi];
    const double g0    = mb::now_s();
    const double share = (budget_s - (g0 - t0)) / static_cast<double>(groups.size() - gi);
    const std::vector<cudaStream_t> cst(comm_st.begin(), comm_st.begin() + n);
    bool truncated = false;
    for (long c : ctas) {
      if (mb::now_s() - g0 > share) {
        truncated = true;
        break;
      }
      mb::Comms comms(n, static_cast<int>(c));
      for (mb::Coll coll : colls) {
        for (long mib : sizes_mib) {
          const size_t bytes = static_cast<size_t>(mib) << 20;
          auto coll_alone    = [&]() {
            bool g         = false;
            const double t = mb::time_multi(
                   cst, 1, [&](int) { comms.launch(coll, bytes, send, recv, cst); }, &gate, &g)[0];
            all_gated = g && all_gated;
            return t;
          };
          for (int margin = 0; margin <= (c > 0 ? 1 : 0); ++margin) {
            const int target = margin ? nsm - static_cast<int>(c) : 0;
            setup_gemm(gemm, target);
            // Estimates that size the "covered" mode.
            coll_alone();
            gemms_alone(gemm, 1);
            const double c_est = coll_alone(), g_est = gemms_alone(gemm, 1);
            for (const char *mode : {"single", "covered"}) {
              const bool covered = std::string(mode) == "covered";
              const int n_gemm   = covered ? std::max(1, static_cast<int>(std::ceil(c_est / g_est)) + 1) : 1;
              std::vector<double> gf, ga, ca, go, co;
              all_gated = true;
              for (int r = 0; r <= reps; ++r) { // r == 0 is a warm-up
                double gfull  = gemms_alone(gemm_full, n_gemm);
                double galone = margin ? gemms_alone(gemm, n_gemm) : gfull;
                double calone = coll_alone();
                double g_ns, c_ns;
                overlapped(comms, coll, bytes, n_gemm, &g_ns, &c_ns);
                if (r == 0)
                  continue;
                gf.push_back(gfull / n_gemm);
                ga.push_back(galone / n_gemm);
                ca.push_back(calone);
                go.push_back(g_ns);
                co.push_back(c_ns);
              }
              const double g_full = mb::median(gf), g_alone = mb::median(ga), c_alone = mb::median(ca);
              const double gm = mb::median(go), cm = mb::median(co);
              mb::Row row;
              row.s("collective", mb::coll_name(coll))
                  .i("ctas_requested", c)
                  .i("nranks", n)
                  .i("size_bytes", static_cast<long long>(mb::coll_bytes(coll, bytes, n)))
                  .i("m", shape.m)
                  .i("n", shape.n)
                  .i("k", shape.k)
                  .s("dtype", "bf16")
                  .s("layout", shape.layout())
                  .b("sm_margin", margin != 0)
                  .i("sm_count_target", target)
                  .s("mode", mode)
                  .i("n_gemm", n_gemm)
                  .f("gemm_alone_ns", g_alone)
                  .f("gemm_full_sms_alone_ns", g_full)
                  .f("coll_alone_ns", c_alone)
                  .f(covered ? "gemm_stream_ns" : "gemm_overlap_ns", gm)
                  .f("coll_overlap_ns", cm)
                  .f("coll_slowdown", cm / c_alone)
                  .i("reps", reps)
                  .b("launch_gated", all_gated);
              if (covered)
                row.f("gemm_rate_while_overlapped", 1.0 - (gm - n_gemm * g_alone) / cm)
                    .b("gemm_outlasted_coll", gm >= cm);
              else
                row.f("gemm_slowdown", gm / g_alone).f("gemm_slowdown_vs_full", gm / g_full);
              rep.add(row);
            }
          }
        }
        std::fprintf(stderr, "[%5.1fs] n=%d ctas=%ld %s done\n", mb::now_s() - t0, n, c, mb::coll_name(coll));
      }
    }
    if (truncated)
      note += (note.empty() ? "time budget reached for n=" : ",") + std::to_string(n);
  }
  rep.env().i("launch_gate_timeouts", gate.timeouts());
  for (int d = 0; d < nused; ++d) {
    MB_CK(cudaSetDevice(d));
    gemm[d].reset();
    gemm_full[d].reset();
    cublasLtDestroy(lt[d]);
  }
  return rep.close(!note.empty(), note);
}
