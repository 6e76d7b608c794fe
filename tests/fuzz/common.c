/* common.c — shared helpers of the fuzz harnesses (see fuzz_common.h). */
#define _GNU_SOURCE

#include "fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hw/exec.h"
#include "io/hwprofile.h"
#include "io/report.h"
#include "sim/sim.h"

#ifndef PN_SOURCE_DIR
#define PN_SOURCE_DIR "."
#endif

/* ---- fopen guard (linked with -Wl,--wrap=fopen) ---- */

FILE *__real_fopen(const char *path, const char *mode);
FILE *__wrap_fopen(const char *path, const char *mode);

/* Only regular files outside the kernel's pseudo file systems: a fuzzed reference to a FIFO,
 * a terminal, /dev/zero or /proc/kmsg would block or stream forever. Directories pass (the
 * loaders must refuse them themselves). */
FILE *__wrap_fopen(const char *path, const char *mode)
{
  char *real = realpath(path, NULL);
  if (real != NULL) {
    gboolean pseudo = g_str_has_prefix(real, "/proc") || g_str_has_prefix(real, "/sys") ||
                      g_str_has_prefix(real, "/dev") || g_str_has_prefix(real, "/run");
    free(real);
    struct stat st;
    if (pseudo || stat(path, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
      errno = EACCES;
      return NULL;
    }
  }
  return __real_fopen(path, mode);
}

/* ---- setup ---- */

static char *temp_dirs[2]; /* removed at exit */

static void remove_tree(const char *path)
{
  g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
  const char *e;
  while (d != NULL && (e = g_dir_read_name(d)) != NULL) {
    g_autofree char *child = g_build_filename(path, e, NULL);
    if (g_file_test(child, G_FILE_TEST_IS_DIR) && !g_file_test(child, G_FILE_TEST_IS_SYMLINK))
      remove_tree(child);
    else
      g_unlink(child);
  }
  g_rmdir(path);
}

static void remove_temp_dirs(void)
{
  for (size_t i = 0; i < G_N_ELEMENTS(temp_dirs); i++)
    if (temp_dirs[i] != NULL)
      remove_tree(temp_dirs[i]);
}

/* Writes <dir>/hwprofiles/<name>.json: the source tree's profile with every calibration table cut
 * to about 24 evenly spaced rows. The calibrated profiles hold thousands of GEMM rows; loading
 * them dominated each execution that names a profile, for no coverage (their content is not
 * fuzzed here: fuzz_hwprofile does that), while the cost model still sees the same kinds of
 * tables. Aborts if the result does not load, so a stale stand-in cannot go unnoticed. */
static void write_standin_profile(const char *dir, const char *name)
{
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  g_autofree char *src  = g_build_filename(PN_SOURCE_DIR, "hwprofiles", file, NULL);
  g_autofree char *dst  = g_build_filename(dir, "hwprofiles", file, NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents(src, &text, NULL, NULL))
    return; /* no such profile in this tree: nothing to stand in for */
  cJSON *root = cJSON_Parse(text);
  g_assert(root != NULL);
  cJSON *cal = cJSON_GetObjectItemCaseSensitive(root, "calibration");
  for (cJSON *t = cal ? cal->child : NULL; t != NULL; t = t->next) {
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(t, "rows");
    int n       = cJSON_GetArraySize(rows);
    if (!cJSON_IsArray(rows) || n <= 32)
      continue;
    int stride = n / 24, i = 0;
    for (cJSON *r = rows->child, *next; r != NULL; r = next, i++) {
      next = r->next;
      if (i % stride != 0)
        cJSON_Delete(cJSON_DetachItemViaPointer(rows, r));
    }
  }
  char *out = cJSON_Print(root);
  cJSON_Delete(root);
  g_assert(out != NULL && g_file_set_contents(dst, out, -1, NULL));
  cJSON_free(out);
  g_autoptr(GError) error   = NULL;
  g_autoptr(PnHwProfile) hw = pn_hw_profile_load(dst, &error);
  if (hw == NULL)
    g_error("fuzz stand-in for hwprofiles/%s does not load: %s", file, error->message);
}

/* GLib ends a fatal log message (g_error, a critical made fatal) with a breakpoint trap, which
 * libFuzzer does not treat as a crash: it would exit without saving the input. */
static void trap_to_abort(int sig)
{
  (void)sig;
  abort();
}

void pn_fuzz_init(void)
{
  static gboolean done = FALSE;
  if (done)
    return;
  done = TRUE;
  signal(SIGTRAP, trap_to_abort);
  g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR);
  /* Profile names resolve first in a private data dir of trimmed stand-ins, then, like model
   * names, in the source tree's hwprofiles/ and models/. */
  const char *dir = temp_dirs[0] = g_dir_make_tmp("pn-fuzz-data-XXXXXX", NULL);
  g_assert(dir != NULL);
  atexit(remove_temp_dirs);
  g_autofree char *hw_dir = g_build_filename(dir, "hwprofiles", NULL);
  g_assert(g_mkdir_with_parents(hw_dir, 0700) == 0);
  write_standin_profile(dir, "h100-sxm");
  write_standin_profile(dir, "h200-sxm");
  g_setenv("PENUMBRA_DATA_DIR", dir, TRUE);
}

const char *pn_fuzz_source_dir(void) { return PN_SOURCE_DIR; }

/* ---- inputs ---- */

char *pn_fuzz_temp_path(const char *name)
{
  if (temp_dirs[1] == NULL) {
    temp_dirs[1] = g_dir_make_tmp("pn-fuzz-XXXXXX", NULL);
    g_assert(temp_dirs[1] != NULL);
  }
  return g_build_filename(temp_dirs[1], name, NULL);
}

const char *pn_fuzz_temp_file(const uint8_t *data, size_t size)
{
  static char *path = NULL;
  if (path == NULL)
    path = pn_fuzz_temp_path("input.json");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  g_assert(fd >= 0);
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(fd, data + off, size - off);
    g_assert(w > 0);
    off += (size_t)w;
  }
  close(fd);
  return path;
}

char *pn_fuzz_strdup(const uint8_t *data, size_t size)
{
  char *s = g_malloc(size + 1);
  if (size > 0)
    memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* ---- simulation ---- */

/* Tasks per layer and micro-batch: a few dozen kernels and collectives, plus the chunks of TE
 * userbuffers overlap (up to tp) and of context-parallel ring attention (cp steps), forward and
 * backward. Deliberately generous: the cap only has to keep each execution short. */
double pn_fuzz_estimated_tasks(const PnScenario *sc)
{
  const PnParallelConfig *p = &sc->parallel;
  double per_layer_mb = 80.0 + 6.0 * (double)p->tensor_model_parallel_size + 6.0 * (double)p->context_parallel_size;
  double layers       = (double)sc->model.num_layers + 2.0;
  double iters        = sc->training.iterations > 0 ? (double)sc->training.iterations : 1.0;
  return iters * ((double)p->num_microbatches * layers * per_layer_mb +
                  200.0 * (double)p->pipeline_model_parallel_size * (double)p->virtual_pipeline_model_parallel_size);
}

/* Known bugs, reported and not yet fixed, that would stop every fuzzing run at the same place;
 * PN_FUZZ_STRICT=1 in the environment turns these filters off.
 *  - sched/build.c: with TE userbuffers (tp_comm_overlap) the GEMM's SM limit is
 *    sm_count - num_sm (16), negative on a GPU with fewer SMs: the executor refuses the graph. */
static gboolean known_bug(const PnScenario *sc)
{
  static int strict = -1;
  if (strict < 0)
    strict = g_strcmp0(g_getenv("PN_FUZZ_STRICT"), "1") == 0;
  return !strict && sc->hw->sm_count <= 48;
}

gboolean pn_fuzz_simulate(const PnScenario *sc, const GPtrArray *warnings)
{
  if (pn_fuzz_estimated_tasks(sc) > PN_FUZZ_MAX_SIM_TASKS || sc->parallel.pipeline_model_parallel_size > 64 ||
      known_bug(sc))
    return FALSE;
  g_autoptr(GError) error = NULL;
  g_autoptr(PnResult) r   = pn_sim_run(sc, warnings, &error);
  if (r == NULL) {
    g_assert(error != NULL && error->message != NULL);
    /* A scenario that passed validation but cannot be executed (deadlock, invalid graph, event
     * budget) is what the cli reports as an internal error (exit 1): a finding. Reaching the
     * time horizon is the inputs' fault (absurd sizes or rates), not a bug. */
    if (error->domain == PN_EXEC_ERROR && error->code != PN_EXEC_ERROR_HORIZON)
      g_error("validated scenario failed in the executor: %s", error->message);
    return TRUE;
  }
  g_assert(error == NULL);
  g_autofree char *json = pn_report_json(sc, r, NULL);
  g_autofree char *text = pn_report_text(sc, r, NULL);
  g_assert(json != NULL && text != NULL);
  return TRUE;
}
