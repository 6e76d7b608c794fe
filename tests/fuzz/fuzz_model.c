/* fuzz_model.c — libFuzzer harness: model files (pn_model_load, through a temporary file).
 *
 * An accepted model is then used by a one-GPU scenario (h100-sxm, two micro-batches) that is
 * loaded and, when small, simulated: the model's sizes reach workload/, sched/ and hw/. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "io/model.h"
#include "io/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  pn_fuzz_init();
  const char *path        = pn_fuzz_temp_file(data, size);
  g_autoptr(GError) error = NULL;
  PnModelConfig m;
  memset(&m, 0x5a, sizeof m);
  if (!pn_model_load(path, &m, &error)) {
    g_assert(error != NULL && error->domain == PN_IO_ERROR && strchr(error->message, '\n') == NULL);
    return 0;
  }
  g_assert(error == NULL && m.num_layers > 0 && m.hidden_size > 0 && m.num_attention_heads > 0);

  int64_t seq = 256;
  if (strcmp(m.position_embedding_type, "learned_absolute") == 0 && m.max_position_embeddings > 0 &&
      m.max_position_embeddings < seq)
    seq = m.max_position_embeddings;
  g_autofree char *json = g_strdup_printf(
      "{\"schema_version\": 1, \"model\": \"%s\", \"hardware\": {\"profile\": \"h100-sxm\", \"num_gpus\": 1}, "
      "\"training\": {\"seq_length\": %" G_GINT64_FORMAT ", \"global_batch_size\": 2}}",
      path, seq);
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(PnScenario) sc      = pn_scenario_load_string(json, NULL, NULL, 0, warnings, &error);
  if (sc == NULL) {
    g_assert(error != NULL && error->domain == PN_IO_ERROR);
    return 0;
  }
  pn_fuzz_simulate(sc, warnings);
  return 0;
}
