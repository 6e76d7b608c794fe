// mb_common.h: shared plumbing of penumbra's CUDA microbenchmarks.
//
// What lives here: error checks that abort with file:line, a minimal JSON writer (every
// result file has schema_version, kind, env, results; see README.md), the env block (GPU,
// driver, runtime, library versions, clocks read through nvidia-smi before and after the run),
// random fills that never produce zeros-only or NaN data, a median, and a tiny argument parser.
// Header-only on purpose: each program is one .cu file plus this header, so a reader can
// follow a measurement end to end.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <unistd.h>

#define MB_CK(call)                                                                                                    \
  do {                                                                                                                 \
    cudaError_t mb_err_ = (call);                                                                                      \
    if (mb_err_ != cudaSuccess) {                                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(mb_err_));                 \
      std::exit(2);                                                                                                    \
    }                                                                                                                  \
  } while (0)

#define MB_CK_LAUNCH() MB_CK(cudaGetLastError())

namespace mb {

// ---------------------------------------------------------------------------------------------
// Arguments: --key value pairs and bare --flags.
struct Args {
  std::vector<std::string> v;
  Args(int argc, char **argv) : v(argv + 1, argv + argc) {}
  const char *get(const char *key, const char *dflt) const
  {
    for (size_t i = 0; i + 1 < v.size(); ++i)
      if (v[i] == key)
        return v[i + 1].c_str();
    return dflt;
  }
  long geti(const char *key, long dflt) const
  {
    const char *s = get(key, nullptr);
    return s ? std::strtol(s, nullptr, 0) : dflt;
  }
  double getf(const char *key, double dflt) const
  {
    const char *s = get(key, nullptr);
    return s ? std::strtod(s, nullptr) : dflt;
  }
  bool has(const char *key) const { return std::find(v.begin(), v.end(), key) != v.end(); }
  std::string joined(const char *prog) const
  {
    std::string s = prog;
    for (const auto &a : v)
      s += " " + a;
    return s;
  }
};

// Comma-separated integer list, e.g. "0,1,2,4".
inline std::vector<long> parse_list(const char *s)
{
  std::vector<long> out;
  while (s && *s) {
    char *end = nullptr;
    out.push_back(std::strtol(s, &end, 0));
    if (end == s)
      break;
    s = (*end == ',') ? end + 1 : end;
  }
  return out;
}

inline double now_s()
{
  using clk = std::chrono::steady_clock;
  return std::chrono::duration<double>(clk::now().time_since_epoch()).count();
}

// Waits (up to 5 s, then exits 5) until the `k` CTAs of a kernel that holds its SMs have written
// their flag in the host-mapped `started` array; `who` names the kernel in the message.
inline void wait_started(const int *started, int k, const char *who)
{
  const double t0 = now_s();
  for (;;) {
    int n = 0;
    for (int i = 0; i < k; ++i)
      n += reinterpret_cast<const volatile int *>(started)[i];
    if (n == k)
      return;
    if (now_s() - t0 > 5.0) {
      std::fprintf(stderr, "%s: only %d of %d CTAs started\n", who, n, k);
      std::exit(5);
    }
  }
}

inline double median(std::vector<double> x)
{
  if (x.empty())
    return NAN;
  std::sort(x.begin(), x.end());
  size_t n = x.size();
  return (n % 2) ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

inline double minimum(const std::vector<double> &x) { return x.empty() ? NAN : *std::min_element(x.begin(), x.end()); }

// ---------------------------------------------------------------------------------------------
// JSON: values are pre-rendered strings so that a row is a flat list of (key, json-text).
inline std::string jstr(const std::string &s)
{
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}
inline std::string jnum(double x)
{
  if (!std::isfinite(x))
    return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}
inline std::string jint(long long x) { return std::to_string(x); }
inline std::string jbool(bool x) { return x ? "true" : "false"; }

struct Row {
  std::vector<std::pair<std::string, std::string>> kv;
  Row &s(const char *k, const std::string &v)
  {
    kv.emplace_back(k, jstr(v));
    return *this;
  }
  Row &i(const char *k, long long v)
  {
    kv.emplace_back(k, jint(v));
    return *this;
  }
  Row &f(const char *k, double v)
  {
    kv.emplace_back(k, jnum(v));
    return *this;
  }
  Row &b(const char *k, bool v)
  {
    kv.emplace_back(k, jbool(v));
    return *this;
  }
  Row &raw(const char *k, const std::string &v)
  {
    kv.emplace_back(k, v);
    return *this;
  }
  std::string str() const
  {
    std::string o = "{";
    for (size_t n = 0; n < kv.size(); ++n)
      o += (n ? ", " : "") + jstr(kv[n].first) + ": " + kv[n].second;
    return o + "}";
  }
};

// ---------------------------------------------------------------------------------------------
// Environment: read once before the measurements and once after (clocks).
inline std::string shell_line(const std::string &cmd)
{
  std::string out;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p))
    out += buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' '))
    out.pop_back();
  return out;
}

inline std::string pci_bus_id(int dev)
{
  char b[64] = {0};
  if (cudaDeviceGetPCIBusId(b, sizeof b, dev) != cudaSuccess)
    return "";
  return b;
}

// One nvidia-smi reading of device `dev` (matched by PCI bus id, since CUDA and nvidia-smi may
// number GPUs differently). Fields that nvidia-smi cannot give become null.
inline std::string smi_reading(int dev, std::string *driver, std::string *smi_name)
{
  std::string bus  = pci_bus_id(dev);
  std::string line = shell_line("nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,"
                                "clocks.max.sm,clocks.max.mem,power.draw,power.limit,temperature.gpu,"
                                "clocks_event_reasons.active --format=csv,noheader,nounits -i " +
                                bus + " 2>/dev/null");
  std::vector<std::string> f;
  size_t pos = 0;
  while (!line.empty()) {
    size_t c      = line.find(',', pos);
    std::string t = line.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    while (!t.empty() && t.front() == ' ')
      t.erase(t.begin());
    f.push_back(t);
    if (c == std::string::npos)
      break;
    pos = c + 1;
  }
  auto num = [&](size_t i) -> std::string {
    if (i >= f.size())
      return "null";
    char *end = nullptr;
    double x  = std::strtod(f[i].c_str(), &end);
    return (end == f[i].c_str()) ? "null" : jnum(x);
  };
  if (f.size() >= 2) {
    if (smi_name)
      *smi_name = f[0];
    if (driver)
      *driver = f[1];
  }
  Row r;
  r.i("device", dev)
      .raw("sm_mhz", num(2))
      .raw("mem_mhz", num(3))
      .raw("max_sm_mhz", num(4))
      .raw("max_mem_mhz", num(5))
      .raw("power_w", num(6))
      .raw("power_limit_w", num(7))
      .raw("temp_c", num(8))
      .s("clocks_event_reasons", f.size() > 9 ? f[9] : "");
  return r.str();
}

inline std::string utc_now()
{
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

// Writes one result file: {"schema_version":1,"kind":..., "env":{...}, "results":[...]}.
// Rows are kept in memory and written at close(), so a killed program leaves no half file.
class Report {
public:
  Report(const char *kind, const std::string &path, const std::string &cmdline, std::vector<int> devs)
      : kind_(kind), path_(path), devs_(std::move(devs))
  {
    env_.s("program", cmdline.substr(0, cmdline.find(' '))).s("command_line", cmdline);
    env_.s("date_utc", utc_now());
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    env_.s("hostname", host);
    int rt = 0, drv = 0, ndev = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    cudaGetDeviceCount(&ndev);
    cudaDeviceProp p{};
    MB_CK(cudaGetDeviceProperties(&p, devs_.empty() ? 0 : devs_[0]));
    std::string driver, smi_name;
    std::string before = "[";
    for (size_t n = 0; n < devs_.size(); ++n)
      before += (n ? ", " : "") + smi_reading(devs_[n], &driver, &smi_name);
    before += "]";
    env_.s("gpu_name", p.name)
        .s("gpu_name_nvidia_smi", smi_name)
        .i("gpu_count_visible", ndev)
        .i("gpu_count_used", static_cast<long long>(devs_.size()))
        .i("sm_count", p.multiProcessorCount)
        .s("compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor))
        .i("l2_bytes", p.l2CacheSize)
        .i("memory_bytes", static_cast<long long>(p.totalGlobalMem))
        .i("smem_per_sm_bytes", static_cast<long long>(p.sharedMemPerMultiprocessor))
        .s("pci_bus_id", pci_bus_id(devs_.empty() ? 0 : devs_[0]))
        .s("driver_version", driver)
        .i("cuda_driver_api_version", drv)
        .i("cuda_runtime_version", rt);
    const char *vars[] = {"CUDA_DEVICE_MAX_CONNECTIONS",
                          "CUDA_VISIBLE_DEVICES",
                          "NCCL_NVLS_ENABLE",
                          "NCCL_ALGO",
                          "NCCL_PROTO",
                          "NCCL_MIN_CTAS",
                          "NCCL_MAX_CTAS",
                          "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                          "NVSHMEM_DISABLE_NVLS"};
    Row ev;
    for (const char *v : vars) {
      const char *x = std::getenv(v);
      ev.raw(v, x ? jstr(x) : "null");
    }
    env_.raw("env_vars", ev.str());
    clocks_before_ = before;
  }

  Row &env() { return env_; }
  void add(const Row &r) { rows_.push_back(r.str()); }
  size_t size() const { return rows_.size(); }

  // Reads the clocks again and writes the file. Returns 0 on success.
  int close(bool truncated, const std::string &note = "")
  {
    std::string after = "[";
    for (size_t n = 0; n < devs_.size(); ++n)
      after += (n ? ", " : "") + smi_reading(devs_[n], nullptr, nullptr);
    after += "]";
    env_.raw("clocks_before", clocks_before_).raw("clocks_after", after);
    env_.s("date_utc_end", utc_now());
    FILE *f = path_ == "-" ? stdout : std::fopen(path_.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", path_.c_str());
      return 1;
    }
    std::fprintf(
        f,
        "{\n\"schema_version\": 1,\n\"kind\": %s,\n\"truncated\": %s,\n\"note\": %s,\n\"env\": %s,\n\"results\": [\n",
        jstr(kind_).c_str(), truncated ? "true" : "false", jstr(note).c_str(), env_.str().c_str());
    for (size_t n = 0; n < rows_.size(); ++n)
      std::fprintf(f, "%s%s\n", rows_[n].c_str(), n + 1 < rows_.size() ? "," : "");
    std::fprintf(f, "]\n}\n");
    if (f != stdout)
      std::fclose(f);
    std::fprintf(stderr, "wrote %zu %s results to %s\n", rows_.size(), kind_.c_str(), path_.c_str());
    return 0;
  }

private:
  std::string kind_, path_;
  std::vector<int> devs_;
  Row env_;
  std::string clocks_before_;
  std::vector<std::string> rows_;
};

// ---------------------------------------------------------------------------------------------
// Random fills: uniform in [-scale, scale), from a counter hash (no state, any launch shape).
__host__ __device__ inline uint32_t hash32(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}
__device__ inline float unif(uint64_t i, uint64_t seed)
{
  return static_cast<float>(hash32(i * 0x9E3779B97F4A7C15ULL + seed)) * (2.0f / 4294967296.0f) - 1.0f;
}

template <typename T> __device__ inline T from_float(float x);
template <> __device__ inline float from_float<float>(float x) { return x; }
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __device__ inline __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) { return __nv_fp8_e4m3(x); }

template <typename T> __global__ void fill_kernel(T *p, size_t n, uint64_t seed, float scale)
{
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    p[i] = from_float<T>(scale * unif(i, seed));
}

template <typename T> inline void fill(T *p, size_t n, uint64_t seed, float scale = 1.0f, cudaStream_t s = 0)
{
  fill_kernel<T><<<1024, 256, 0, s>>>(p, n, seed, scale);
  MB_CK_LAUNCH();
}

// Time `fn` (which enqueues work on `s`) `reps` times with one event pair per rep.
// `before_sync` runs after everything is enqueued and before the host waits for it.
template <typename F, typename G>
inline std::vector<double> time_reps(cudaStream_t s, int reps, F &&fn, G &&before_sync)
{
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto &e : ev)
    MB_CK(cudaEventCreate(&e));
  for (int r = 0; r < reps; ++r) {
    MB_CK(cudaEventRecord(ev[2 * r], s));
    fn(r);
    MB_CK(cudaEventRecord(ev[2 * r + 1], s));
  }
  before_sync();
  MB_CK(cudaStreamSynchronize(s));
  std::vector<double> ns(reps);
  for (int r = 0; r < reps; ++r) {
    float ms = 0;
    MB_CK(cudaEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]));
    ns[r] = 1e6 * ms;
  }
  for (auto &e : ev)
    MB_CK(cudaEventDestroy(e));
  return ns;
}

template <typename F> inline std::vector<double> time_reps(cudaStream_t s, int reps, F &&fn)
{
  return time_reps(s, reps, fn, [] {});
}

} // namespace mb
