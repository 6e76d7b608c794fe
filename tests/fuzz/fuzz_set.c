/* fuzz_set.c — libFuzzer harness: `--set dotted.key=value` overrides.
 *
 * The input is split at newlines into at most 16 override strings, applied in order to a fixed
 * valid scenario (tests/data/io/scenarios/tiny-8gpu.json with global_batch_size 8, so that four
 * micro-batches keep the simulation fast) by pn_scenario_load, as `penumbra run --set ...`
 * does. An accepted result is simulated when small. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "io/scenario.h"

#define MAX_SETS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  pn_fuzz_init();
  static char *base = NULL;
  if (base == NULL)
    base = g_build_filename(pn_fuzz_source_dir(), "tests", "data", "io", "scenarios", "tiny-8gpu.json", NULL);
  g_autofree char *text = pn_fuzz_strdup(data, size);
  g_auto(GStrv) lines   = g_strsplit(text, "\n", MAX_SETS);
  const char *sets[MAX_SETS + 1];
  int n_sets     = 0;
  sets[n_sets++] = "training.global_batch_size=8";
  for (int i = 0; lines[i] != NULL; i++)
    sets[n_sets++] = lines[i];
  if (n_sets > 1 && sets[n_sets - 1][0] == '\0')
    n_sets--; /* a trailing newline is not an empty override */
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) error       = NULL;
  g_autoptr(PnScenario) sc      = pn_scenario_load(base, sets, n_sets, warnings, &error);
  if (sc == NULL) {
    g_assert(error != NULL && error->domain == PN_IO_ERROR && strchr(error->message, '\n') == NULL);
    return 0;
  }
  g_assert(error == NULL);
  pn_fuzz_simulate(sc, warnings);
  return 0;
}
