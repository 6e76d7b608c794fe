/* fuzz_hwprofile.c — libFuzzer harness: hardware profiles (pn_hw_profile_load, through a
 * temporary file).
 *
 * An accepted profile then runs a small scenario (tests/data/io/models/tiny.json on 16 GPUs,
 * TP2 PP2 DP4 with sequence parallelism and TP overlap; fp8 for odd-sized inputs), so the
 * profile's bandwidths, latencies, curves and tables reach the cost model and the executor. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "hw/profile.h"
#include "io/hwprofile.h"
#include "io/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  pn_fuzz_init();
  const char *path          = pn_fuzz_temp_file(data, size);
  g_autoptr(GError) error   = NULL;
  g_autoptr(PnHwProfile) hw = pn_hw_profile_load(path, &error);
  if (hw == NULL) {
    g_assert(error != NULL && error->domain == PN_IO_ERROR && strchr(error->message, '\n') == NULL);
    return 0;
  }
  g_assert(error == NULL && hw->sm_count > 0);
  (void)pn_curve_eval(&hw->coll_size_efficiency, 1e6, 1.0);

  static char *model = NULL;
  if (model == NULL)
    model = g_build_filename(pn_fuzz_source_dir(), "tests", "data", "io", "models", "tiny.json", NULL);
  g_autofree char *json = g_strdup_printf(
      "{\"schema_version\": 1, \"model\": \"%s\", \"hardware\": {\"profile\": \"%s\", \"num_gpus\": 16}, "
      "\"training\": {\"seq_length\": 1024, \"global_batch_size\": 8, \"precision\": \"%s\"}, "
      "\"parallel\": {\"tensor_model_parallel_size\": 2, \"pipeline_model_parallel_size\": 2, "
      "\"sequence_parallel\": true}, \"comm_overlap\": {\"tp_comm_overlap\": true}}",
      model, path, size % 2 ? "fp8" : "bf16");
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(PnScenario) sc      = pn_scenario_load_string(json, NULL, NULL, 0, warnings, &error);
  if (sc == NULL) {
    g_assert(error != NULL && error->domain == PN_IO_ERROR);
    return 0;
  }
  pn_fuzz_simulate(sc, warnings);
  return 0;
}
