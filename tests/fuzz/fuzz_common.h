/* fuzz_common.h — what the libFuzzer harnesses in tests/fuzz/ share.
 *
 * Each harness (fuzz_<target>.c) defines LLVMFuzzerTestOneInput: it hands the input to one
 * loader, and when the loader accepts it, simulates the resulting scenario if it is small enough
 * to keep one execution in the milliseconds, renders both reports and frees everything. A crash,
 * an assertion (g_assert on user input is a bug), a sanitizer report, a leak or a hang is a
 * finding; a GError is the expected outcome for bad input.
 *
 * Files: loaders that only take a path are fed through one temporary file per process
 * (pn_fuzz_temp_file). Loaded scenarios may name other files by path; fopen is wrapped at link
 * time (-Wl,--wrap=fopen) so that nothing but regular files outside /proc, /sys and /dev can be
 * opened: a fuzzed "model": "/dev/stdin" must not block the run.
 *
 * Build: cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DPN_FUZZ=ON (see CMakeLists.txt);
 * run:   build-fuzz/fuzz_scenario -max_total_time=60 tests/fuzz/corpus/scenario
 */
#ifndef PN_FUZZ_COMMON_H
#define PN_FUZZ_COMMON_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "workload/config.h"

/* Larger estimated task graphs are loaded and validated but not simulated (see common.c). */
#define PN_FUZZ_MAX_SIM_TASKS 12000

/* One-time setup: GLib criticals become fatal (a g_return_if_fail on fuzzed input is a bug);
 * PENUMBRA_DATA_DIR points at trimmed stand-ins of the calibrated profiles (common.c says why),
 * so profile names resolve there first and model names in the source tree's models/. */
void pn_fuzz_init(void);

/* The source tree (compiled in as PN_SOURCE_DIR). */
const char *pn_fuzz_source_dir(void);

/* Writes `size` bytes to this process's temporary file (<tmp>/pn-fuzz-XXXXXX/input.json) and
 * returns its path (owned by the module, the same every call). */
const char *pn_fuzz_temp_file(const uint8_t *data, size_t size);

/* A path named `name` in the same temporary directory (g_free); removed at exit. */
char *pn_fuzz_temp_path(const char *name);

/* A NUL-terminated copy of the input (g_free). */
char *pn_fuzz_strdup(const uint8_t *data, size_t size);

/* Rough number of tasks pn_sched_build would create for `sc` (saturating, never overflows). */
double pn_fuzz_estimated_tasks(const PnScenario *sc);

/* Simulates `sc` when it is small enough, renders the JSON and text reports and frees them.
 * Returns TRUE when the simulation ran (successfully or with a GError). */
gboolean pn_fuzz_simulate(const PnScenario *sc, const GPtrArray *warnings);

#endif
