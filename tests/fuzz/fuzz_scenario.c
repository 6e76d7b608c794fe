/* fuzz_scenario.c — libFuzzer harness: scenario JSON text (pn_scenario_load_string).
 *
 * The text is loaded as if it were scenarios/fuzz.json, so model and profile names and relative
 * paths resolve against the source tree's models/ and hwprofiles/ as for the real scenarios.
 * Accepted scenarios are simulated when small (fuzz_common.h). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "io/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  pn_fuzz_init();
  static char *display = NULL;
  if (display == NULL)
    display = g_build_filename(pn_fuzz_source_dir(), "scenarios", "fuzz.json", NULL);
  g_autofree char *text         = pn_fuzz_strdup(data, size);
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) error       = NULL;
  g_autoptr(PnScenario) sc      = pn_scenario_load_string(text, display, NULL, 0, warnings, &error);
  if (sc == NULL) {
    g_assert(error != NULL && error->domain == PN_IO_ERROR && error->message != NULL);
    g_assert(strchr(error->message, '\n') == NULL); /* messages are one line */
    return 0;
  }
  g_assert(error == NULL);
  pn_fuzz_simulate(sc, warnings);
  return 0;
}
