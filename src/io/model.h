/* model.h — model files (models/<name>.json) into PnModelConfig (workload/config.h).
 *
 * A model file is one flat object of Megatron TransformerConfig names (num_layers, hidden_size,
 * num_attention_heads, ...; sizes are counts, not bytes), with optional "name", "source" and
 * "schema_version". Unknown keys, wrong types and absurd sizes are refused as in a scenario (see
 * scenario.h), and "base" is not allowed in a file: only an inline model of a scenario may start
 * from another model. Defaults that depend on other fields are filled after the keys are read:
 * name (the file's name without ".json"), activation (swiglu with gated_linear_unit, else gelu),
 * num_query_groups (num_attention_heads) and kv_channels (hidden_size / num_attention_heads).
 * Invariants of a loaded model: the required sizes are positive, num_query_groups divides
 * num_attention_heads, kv_channels is set, and an MoE model routes each token to 1 ..
 * num_moe_experts experts.
 *
 * The same conversion serves the "model" section of a scenario (io-private.h); this entry point
 * is for a model file alone. Errors: PN_IO_ERROR, one line naming `path` and the JSON pointer
 * (file.h). Cost: one read and parse of the file.
 */
#ifndef PN_IO_MODEL_H
#define PN_IO_MODEL_H

#include <glib.h>

#include "io/file.h"
#include "workload/config.h"

/* Loads a model file (a flat object of the model keys; "base" is not allowed there) into `out`,
 * with defaults filled and its fields checked. Errors name `path`. `out` is unchanged on failure. */
gboolean pn_model_load(const char *path, PnModelConfig *out, GError **error);

#endif
