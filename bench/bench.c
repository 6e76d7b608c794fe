/* bench.c — penumbra-bench: how fast the simulator is (not a test; results in bench/RESULTS.md).
 *
 * Sections (all by default; name some on the command line to run only those):
 *   engine  events per second of the core event queue: the classic "hold" loop (pop the earliest
 *           event, schedule one at now + U[1, 1000] ns) with 12 (the executor's average on the 405B
 *           run: the queue's small sorted form), 1,000 and 100,000 events pending,
 *           and the executor's pattern (every fourth event also cancels a pending event and
 *           schedules it anew, as a rate change does).
 *   load    pn_hw_profile_load of the calibrated hwprofiles/h100-sxm.json (every scenario loads
 *           its profile): the first load in the process (parse), then cached ones.
 *   405b    Llama 3.1 405B (models/llama3.1-405b.json), TP8 PP8 VPP8 CP2, sequence parallel, TP
 *           overlap, account_for_{embedding,loss}_in_pipeline_split, micro-batch 1, sequence
 *           8192, on 1,024 / 4,096 / 16,384 H100s with global batch 512 / 2,048 / 8,192 (data
 *           parallel 8 / 32 / 128, so 64 micro-batches per pipeline each time). One iteration:
 *           load, build (overlap plan + task graph), execute, and the whole pn_sim_run; best of
 *           5, with the CPU time of the process and of pn_sim_run's own thread (the time the
 *           hypervisor takes from the VM is in the wall time, not in these). Each size runs in a
 *           child process so its peak RSS is its own.
 *   host    the machine's state, to read the other figures against (a shared host's caches come
 *           and go with its neighbours' load): the latency of a dependent random walk over 1, 8
 *           and 64 MiB (a private L2 hit, a shared L3 hit, DRAM, when the L3 is available; the
 *           8 MiB walk at DRAM latency means the L3 is not) and the time of a fixed chain of
 *           integer multiplies (the core's own latency) and of four independent chains of
 *           one-cycle integer operations (its throughput, which a busy sibling hyperthread takes).
 *   sweep   1,000 Llama 3 70B scenarios in one process (tp x pp x vpp x cp x mbs x gbs x gpus,
 *           in a fixed order, the valid ones): time per scenario (load + simulate) and the
 *           process's RSS before and after (a leak would grow it).
 * Options: --reps N (405b repetitions, default 5).
 *
 * Build: cmake --build build --target penumbra-bench (RelWithDebInfo: -O3 -g, see CMakeLists.txt).
 */
#define _GNU_SOURCE

#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "calib/calib.h"
#include "core/engine.h"
#include "core/mem.h"
#include "hw/exec.h"
#include "io/hwprofile.h"
#include "io/scenario.h"
#include "overlap/gating.h"
#include "sched/build.h"
#include "sim/sim.h"

static double now_s(void) { return (double)g_get_monotonic_time() * 1e-6; }

/* CPU time of this process: less disturbed than wall time when other jobs share the cores. */
static double clock_s(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }
/* This thread's CPU time: the time the hypervisor takes from the VM (steal) is not in it. */
static double thread_cpu_s(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }

/* Current resident set size in MiB (from /proc/self/statm). */
static double rss_mib(void)
{
  FILE *f    = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f != NULL) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    fclose(f);
  }
  return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static double peak_rss_mib(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

/* ---- engine ---- */

typedef struct {
  uint64_t rng;
  uint64_t left;    /* events still to schedule */
  int cancel_every; /* 0: plain hold; k: every k-th event also moves the previous one */
  uint64_t n;
  PnEventId last; /* the event scheduled by the previous firing, and when it is due */
  PnTimeNs last_at;
} HoldCtx;

static inline uint64_t xorshift(uint64_t *s)
{
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static void hold_fire(PnEngine *eng, void *ctx, uint64_t arg)
{
  HoldCtx *h = ctx;
  if (h->left == 0)
    return;
  h->left--;
  PnTimeNs now = pn_engine_now(eng);
  /* The executor's rate change: cancel a pending completion and schedule it anew (only when
   * it is certainly still pending, so the number of pending events stays constant). */
  if (h->cancel_every > 0 && ++h->n % (uint64_t)h->cancel_every == 0 && h->last != 0 && h->last_at > now) {
    pn_engine_cancel(eng, h->last);
    pn_engine_schedule(eng, now + 1 + (PnTimeNs)(xorshift(&h->rng) % 1000), hold_fire, h, arg);
  }
  h->last_at = now + 1 + (PnTimeNs)(xorshift(&h->rng) % 1000);
  h->last    = pn_engine_schedule(eng, h->last_at, hold_fire, h, arg + 1);
}

static void bench_engine_case(const char *what, uint32_t pending, uint64_t events, int cancel_every)
{
  double best    = 0.0;
  uint64_t fired = 0;
  for (int rep = 0; rep < 3; rep++) {
    g_autoptr(PnEngine) eng = pn_engine_new(PN_QUEUE_HEAP);
    HoldCtx h               = {.rng = 88172645463325252ULL, .left = events, .cancel_every = cancel_every};
    for (uint32_t i = 0; i < pending; i++)
      pn_engine_schedule(eng, (PnTimeNs)(xorshift(&h.rng) % 1000), hold_fire, &h, i);
    double t0               = now_s();
    g_autoptr(GError) error = NULL;
    if (!pn_engine_run(eng, 0, &error))
      g_error("engine: %s", error->message);
    double dt = now_s() - t0;
    fired     = pn_engine_events_fired(eng);
    double r  = (double)fired / dt;
    if (r > best)
      best = r;
  }
  printf("  %-44s %8u pending  %10" PRIu64 " events  %6.1f M events/s\n", what, pending, fired, best * 1e-6);
}

static void bench_engine(void)
{
  printf("engine (PN_QUEUE_HEAP, best of 3; target >= 10 M events/s)\n");
  bench_engine_case("hold: pop + schedule", 12, 20000000, 0); /* the 405B run's average: sorted form */
  bench_engine_case("hold: pop + schedule", 1000, 20000000, 0);
  bench_engine_case("hold: pop + schedule", 100000, 20000000, 0);
  bench_engine_case("hold + cancel/re-schedule every 4th", 1000, 20000000, 4);
  bench_engine_case("hold + cancel/re-schedule every 4th", 100000, 20000000, 4);
}

/* ---- loading ---- */

static void bench_load(void)
{
  g_autofree char *path = g_build_filename(PN_SOURCE_DIR, "hwprofiles", "h100-sxm.json", NULL);
  const int n           = 50;
  double first          = 0.0;
  double t0             = now_s();
  for (int i = 0; i <= n; i++) {
    g_autoptr(GError) error   = NULL;
    g_autoptr(PnHwProfile) hw = pn_hw_profile_load(path, &error);
    if (hw == NULL)
      g_error("load: %s", error->message);
    if (i == 0) {
      first = now_s() - t0;
      t0    = now_s();
    }
  }
  double dt = (now_s() - t0) / n;
  printf("loading: hwprofiles/h100-sxm.json (calibrated) %.2f ms the first time in a process (read + parse), then "
         "%.2f ms per pn_hw_profile_load (mean of %d: read, found in the process's cache, copied)\n",
         first * 1e3, dt * 1e3, n);
}

/* ---- host ---- */

/* ns per step of a dependent walk through one random cycle over `bytes` (a step per 64-byte
 * line, so every step is a cache-line access and none can be predicted). */
static double chase_ns(size_t bytes)
{
  size_t n       = bytes / 64;
  uint32_t *perm = g_new(uint32_t, n);
  for (size_t i = 0; i < n; i++)
    perm[i] = (uint32_t)i;
  GRand *rng = g_rand_new_with_seed(42);
  for (size_t i = n - 1; i > 0; i--) {
    size_t j   = (size_t)g_rand_int_range(rng, 0, (gint32)(i + 1));
    uint32_t t = perm[i];
    perm[i]    = perm[j];
    perm[j]    = t;
  }
  g_rand_free(rng);
  uint64_t *next = g_malloc(n * 64); /* 8 words per line; only the first is used */
  for (size_t i = 0; i < n; i++)
    next[(size_t)perm[i] * 8] = (uint64_t)perm[(i + 1) % n] * 8;
  g_free(perm);
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) /* once around: warm the TLB and whatever cache holds it */
    at = next[at];
  long steps = 2000000;
  double t0  = now_s();
  for (long i = 0; i < steps; i++)
    at = next[at];
  double dt              = now_s() - t0;
  volatile uint64_t sink = at;
  (void)sink;
  g_free(next);
  return dt / (double)steps * 1e9;
}

/* ms for 10^8 steps of four independent add-xor-rotate chains: 1.2 * 10^9 one-cycle integer
 * operations that a core can issue four at a time (the simulator's own code runs at an IPC of
 * about 2.5 when the host is quiet). A latency chain does not notice a busy sibling hyperthread
 * (it leaves the issue ports idle anyway); this does, so it reads the core's throughput. The
 * empty asm keeps the four chains in scalar registers (no vectorization). */
static double throughput_ms(void)
{
  volatile uint64_t seed = 1;
  uint64_t a = seed, b = seed + 1, c = seed + 2, d = seed + 3;
  double t0 = now_s();
  for (long i = 0; i < 100000000; i++) {
    a = ((a + 0x9E3779B97F4A7C15ull) ^ (uint64_t)i);
    b = ((b + 0xC2B2AE3D27D4EB4Full) ^ (uint64_t)i);
    c = ((c + 0x165667B19E3779F9ull) ^ (uint64_t)i);
    d = ((d + 0x27D4EB2F165667C5ull) ^ (uint64_t)i);
    a = (a << 7) | (a >> 57);
    b = (b << 11) | (b >> 53);
    c = (c << 13) | (c >> 51);
    d = (d << 17) | (d >> 47);
    __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  }
  double dt = now_s() - t0;
  seed      = a ^ b ^ c ^ d;
  return dt * 1e3;
}

static void bench_host(void)
{
  double t0           = now_s();
  volatile uint64_t x = 1;
  uint64_t y          = x;
  for (long i = 0; i < 100000000; i++)
    y = y * 6364136223846793005ull + 1;
  x            = y;
  double chain = now_s() - t0;
  printf("host: dependent random walk %.1f ns at 1 MiB, %.1f ns at 8 MiB, %.1f ns at 64 MiB per step; "
         "10^8 dependent multiply-adds %.0f ms; 10^8 steps of 4 independent add-xor-rotate chains %.0f ms\n",
         chase_ns((size_t)1 << 20), chase_ns((size_t)8 << 20), chase_ns((size_t)64 << 20), chain * 1e3,
         throughput_ms());
}

/* ---- Llama 3.1 405B ---- */

static char *scenario_405b(int gpus, int gbs)
{
  return g_strdup_printf(
      "{\"schema_version\": 1, \"name\": \"bench-405b\", \"model\": \"llama3.1-405b\",\n"
      " \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": %d},\n"
      " \"training\": {\"seq_length\": 8192, \"micro_batch_size\": 1, \"global_batch_size\": %d, \"precision\": "
      "\"bf16\"},\n"
      " \"parallel\": {\"tensor_model_parallel_size\": 8, \"pipeline_model_parallel_size\": 8,\n"
      "              \"virtual_pipeline_model_parallel_size\": 8, \"context_parallel_size\": 2,\n"
      "              \"sequence_parallel\": true, \"account_for_embedding_in_pipeline_split\": true,\n"
      "              \"account_for_loss_in_pipeline_split\": true},\n"
      " \"ddp\": {\"use_distributed_optimizer\": true, \"grad_reduce_in_fp32\": false},\n"
      " \"comm_overlap\": {\"tp_comm_overlap\": true},\n"
      " \"env\": {\"CUDA_DEVICE_MAX_CONNECTIONS\": 1}}\n",
      gpus, gbs);
}

typedef struct {
  double load_s, build_s, exec_s, sim_s, sim_cpu_s, sim_thread_cpu_s;
  uint32_t tasks;
  uint64_t events;
  double iteration_s;
} Run405;

static void run_405b_once(const char *json, Run405 *out)
{
  g_autoptr(GError) error  = NULL;
  double t0                = now_s();
  g_autoptr(PnScenario) sc = pn_scenario_load_string(json, NULL, NULL, 0, NULL, &error);
  if (sc == NULL)
    g_error("405b: %s", error->message);
  double t1 = now_s();
  /* the phases of pn_sim_run, timed one by one */
  PnPlan plan;
  if (!pn_overlap_resolve(sc, &plan, NULL, &error))
    g_error("405b: %s", error->message);
  g_autoptr(PnGraph) g = pn_graph_new((uint32_t)sc->parallel.pipeline_model_parallel_size);
  PnBuildInfo info     = {0};
  if (!pn_sched_build(sc, &plan, g, &info, &error))
    g_error("405b: %s", error->message);
  double t2        = now_s();
  PnExecOptions eo = {.max_connections = plan.max_connections};
  PnExecResult ex  = {0};
  if (!pn_exec_run(g, sc->hw, &eo, &ex, &error))
    g_error("405b: %s", error->message);
  double t3   = now_s();
  out->tasks  = pn_graph_n_tasks(g);
  out->events = ex.events;
  pn_exec_result_clear(&ex);
  pn_build_info_clear(&info);
  g_clear_pointer(&g, pn_graph_free);
  /* and the real thing, end to end */
  double t4             = now_s();
  double c4             = cpu_s();
  double m4             = thread_cpu_s();
  g_autoptr(PnResult) r = pn_sim_run(sc, NULL, &error);
  if (r == NULL)
    g_error("405b: %s", error->message);
  double t5             = now_s();
  out->sim_thread_cpu_s = thread_cpu_s() - m4;
  out->sim_cpu_s        = cpu_s() - c4;
  out->load_s           = t1 - t0;
  out->build_s          = t2 - t1;
  out->exec_s           = t3 - t2;
  out->sim_s            = t5 - t4;
  out->iteration_s      = r->iteration_time_s;
}

static void bench_405b_child(int gpus, int gbs, int reps)
{
  g_autofree char *json  = scenario_405b(gpus, gbs);
  Run405 best            = {0};
  g_autoptr(GArray) sims = g_array_sized_new(FALSE, FALSE, sizeof(double), (guint)reps);
  double min_thread_cpu  = 0.0;
  for (int i = 0; i < reps; i++) {
    Run405 r;
    run_405b_once(json, &r);
    g_array_append_val(sims, r.sim_s);
    if (i == 0 || r.sim_s < best.sim_s)
      best = r;
    if (i == 0 || r.sim_thread_cpu_s < min_thread_cpu)
      min_thread_cpu = r.sim_thread_cpu_s;
  }
  double median = pn_calib_median(sims);
  printf("  %6d GPUs  GBS %5d  %7u tasks %8" PRIu64 " events | load %6.1f ms  build %6.1f ms  exec %6.1f ms | "
         "pn_sim_run %6.1f ms (median %6.1f, cpu %6.1f ms, main thread's cpu %6.1f ms, least of %d %6.1f)  "
         "(%.1f M events/s)  predicted %.3f s",
         gpus, gbs, best.tasks, best.events, best.load_s * 1e3, best.build_s * 1e3, best.exec_s * 1e3, best.sim_s * 1e3,
         median * 1e3, best.sim_cpu_s * 1e3, best.sim_thread_cpu_s * 1e3, reps, min_thread_cpu * 1e3,
         (double)best.events / best.exec_s * 1e-6, best.iteration_s);
  fflush(stdout);
}

static void bench_405b(int reps)
{
  printf("Llama 3.1 405B, TP8 PP8 VPP8 CP2, mbs 1, seq 8192, 64 micro-batches per pipeline (best and median of %d; "
         "targets: "
         "pn_sim_run < 100 ms and peak RSS < 200 MB at 16,384 GPUs)\n",
         reps);
  static const int sizes[][2] = {{1024, 512}, {4096, 2048}, {16384, 8192}};
  for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
      g_error("fork failed");
    if (pid == 0) {
      bench_405b_child(sizes[i][0], sizes[i][1], reps);
      fflush(stdout);
      _exit(0);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      g_error("405b child for %d GPUs failed", sizes[i][0]);
    printf(" | peak RSS %.1f MB\n", (double)ru.ru_maxrss * 1024.0 / 1e6);
  }
}

/* ---- sweep: 1,000 Llama 3 70B scenarios in one process ---- */

static void bench_sweep(void)
{
  static const int gpus_v[] = {64, 128, 256}, tp_v[] = {1, 2, 4, 8}, pp_v[] = {1, 2, 4, 8}, vpp_v[] = {1, 2, 5},
                   cp_v[] = {1, 2}, mbs_v[] = {1, 2}, gbs_v[] = {64, 128};
  const int want             = 1000;
  g_autoptr(GPtrArray) jsons = g_ptr_array_new_with_free_func(g_free);
  for (int overlap = 0; overlap < 2 && (int)jsons->len < want; overlap++)
    for (size_t a = 0; a < G_N_ELEMENTS(gpus_v); a++)
      for (size_t b = 0; b < G_N_ELEMENTS(tp_v); b++)
        for (size_t c = 0; c < G_N_ELEMENTS(pp_v); c++)
          for (size_t d = 0; d < G_N_ELEMENTS(vpp_v); d++)
            for (size_t e = 0; e < G_N_ELEMENTS(cp_v); e++)
              for (size_t f = 0; f < G_N_ELEMENTS(mbs_v); f++)
                for (size_t h = 0; h < G_N_ELEMENTS(gbs_v); h++) {
                  if (pp_v[c] == 1 && vpp_v[d] > 1)
                    continue;
                  char *j = g_strdup_printf(
                      "{\"schema_version\": 1, \"model\": \"llama3-70b\", \"hardware\": {\"profile\": \"h100-sxm\", "
                      "\"num_gpus\": %d}, \"training\": {\"seq_length\": 8192, \"micro_batch_size\": %d, "
                      "\"global_batch_size\": %d}, \"parallel\": {\"tensor_model_parallel_size\": %d, "
                      "\"pipeline_model_parallel_size\": %d, \"virtual_pipeline_model_parallel_size\": %d, "
                      "\"context_parallel_size\": %d, \"sequence_parallel\": %s}, \"comm_overlap\": "
                      "{\"tp_comm_overlap\": %s}, \"env\": {\"CUDA_DEVICE_MAX_CONNECTIONS\": %d}}",
                      gpus_v[a], mbs_v[f], gbs_v[h], tp_v[b], pp_v[c], vpp_v[d], cp_v[e],
                      tp_v[b] > 1 ? "true" : "false", overlap && tp_v[b] > 1 ? "true" : "false", overlap ? 1 : 8);
                  g_ptr_array_add(jsons, j);
                }
  printf("sweep: Llama 3 70B over gpus x tp x pp x vpp x cp x mbs x gbs (x TP overlap), the first %d that load\n",
         want);
  double rss0 = rss_mib(), t0 = now_s(), sim_total = 0.0, worst = 0.0;
  int done = 0, rejected = 0;
  uint64_t tasks = 0;
  for (guint i = 0; i < jsons->len && done < want; i++) {
    g_autoptr(GError) error  = NULL;
    double a                 = now_s();
    g_autoptr(PnScenario) sc = pn_scenario_load_string(jsons->pdata[i], NULL, NULL, 0, NULL, &error);
    if (sc == NULL) {
      rejected++;
      continue;
    }
    g_autoptr(PnResult) r = pn_sim_run(sc, NULL, &error);
    if (r == NULL)
      g_error("sweep: %s", error->message);
    double dt = now_s() - a;
    sim_total += dt;
    worst = dt > worst ? dt : worst;
    tasks += r->tasks;
    done++;
    if (done == 100)
      rss0 = rss_mib(); /* after the allocator has warmed up */
  }
  double wall = now_s() - t0;
  printf("  %d scenarios simulated (%d configurations rejected by validation) in %.2f s: %.1f ms per scenario "
         "(load + simulate; worst %.1f ms), %.0f tasks on average\n",
         done, rejected, wall, sim_total / done * 1e3, worst * 1e3, (double)tasks / done);
  printf("  RSS after 100 scenarios %.1f MiB, after %d %.1f MiB; peak %.1f MiB\n", rss0, done, rss_mib(),
         peak_rss_mib());
}

int main(int argc, char **argv)
{
  gboolean all = TRUE, engine = FALSE, load = FALSE, b405 = FALSE, sweep = FALSE, host = FALSE;
  int reps = 5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "engine") == 0)
      engine = TRUE, all = FALSE;
    else if (strcmp(argv[i], "load") == 0)
      load = TRUE, all = FALSE;
    else if (strcmp(argv[i], "405b") == 0)
      b405 = TRUE, all = FALSE;
    else if (strcmp(argv[i], "sweep") == 0)
      sweep = TRUE, all = FALSE;
    else if (strcmp(argv[i], "host") == 0)
      host = TRUE, all = FALSE;
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: penumbra-bench [host] [engine] [load] [405b] [sweep] [--reps N]\n");
      return 2;
    }
  }
  if (reps < 1)
    reps = 1;
  pn_mem_keep_freed(); /* as penumbra's main() */
  g_unsetenv("PENUMBRA_DATA_DIR");
  if (all || host)
    bench_host();
  if (all || engine)
    bench_engine();
  if (all || load)
    bench_load();
  if (all || b405)
    bench_405b(reps);
  if (all || sweep)
    bench_sweep();
  return 0;
}
