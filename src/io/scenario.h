/* scenario.h — scenario and model files into validated PnScenario / PnModelConfig.
 *
 * A scenario (schema_version 1) has the sections model, hardware, training, parallel, ddp,
 * comm_overlap, recompute and env, with Megatron-Core / Megatron-Bridge field names
 * (workload/config.h lists them and their meaning). Loading a scenario:
 *   1. reads and parses the file (at most PN_IO_MAX_FILE_BYTES; see file.h);
 *   2. applies the --set overrides, in order, to the JSON tree;
 *   3. converts every section, refusing unknown keys (with a did-you-mean), wrong types,
 *      non-finite or fractional numbers where integers are required, and absurd sizes;
 *   4. resolves the model (a name in models/, a path, or an inline object, optionally with
 *      "base": "<model>" plus overrides) and loads the hardware profile (hwprofiles/);
 *   5. fills defaults, derives data_parallel_size and num_microbatches, and checks that the
 *      layout is feasible (divisibility by TP / PP / VPP / CP / EP, Megatron's interleaving rules).
 * Afterwards the invariants of workload/config.h hold. Top-level "name", "description" and
 * "source" are free text (checked to be strings, not stored; reports name a scenario by its file).
 *
 * Names (not paths: no '/', no ".json" suffix) are looked up in order in
 * $PENUMBRA_DATA_DIR/{models,hwprofiles}, <scenario dir>/../{models,hwprofiles}, and penumbra's
 * data directory (io/file.h, pn_io_data_dir: the installed share/penumbra, or the source tree). Paths are relative to
 * the scenario's directory, then to the current directory.
 *
 * --set: each override is "dotted.key=value" (e.g. "parallel.tensor_model_parallel_size=4",
 * "model.num_layers=40"). The value is JSON if it parses as JSON (number, true/false/null,
 * "quoted string", object, array), otherwise it is taken as a bare string. The key must be one
 * the schema knows. Setting a field of a model given by name turns it into {"base": name, ...}.
 * Errors at a key written by --set are reported as "--set: /path: ...".
 *
 * Errors (GError, PN_IO_ERROR domain; one line, see file.h). Warnings are appended to
 * `warnings` as newly allocated strings of the same form (the array should free its elements
 * with g_free); `warnings` may be NULL. Loading costs one parse of each file involved.
 */
#ifndef PN_IO_SCENARIO_H
#define PN_IO_SCENARIO_H

#include <glib.h>
#include <string.h>

#include "io/file.h"
#include "workload/config.h"

/* Loads the scenario at `path`. Returns a new scenario (free with pn_scenario_free; it owns its
 * hardware profile) or NULL with `error` set. */
PnScenario *pn_scenario_load(const char *path, const char *const *sets, int n_sets, GPtrArray *warnings,
                             GError **error);

/* As pn_scenario_load, from JSON text (NUL-terminated). `display_name` names it in messages
 * and in sc->path, and its directory (when it exists) resolves relative model and profile
 * paths; NULL means "<string>" and the current directory. */
PnScenario *pn_scenario_load_string(const char *json, const char *display_name, const char *const *sets, int n_sets,
                                    GPtrArray *warnings, GError **error);

/* The keys the loader accepts in the scenario object `section` ("ddp", "comm_overlap", "env",
 * ...), in its schema's order and NULL-terminated; NULL when there is no such object. The array
 * is the caller's (g_free), the strings are static. */
const char **pn_scenario_section_keys(const char *section);

/* ---- one field of a scenario, set without JSON: what a sweep varies ---- */

#define PN_SCENARIO_VALUE_MAX 96 /* bytes: the longest settable value (a userbuffers preset name) */

/* An integer, boolean, tri-state, enum or string key of a scenario section, by its dotted name. */
typedef struct {
  char name[96];  /* "parallel.tensor_model_parallel_size" */
  size_t offset;  /* of the value in PnScenario */
  size_t size;    /* of the value, at most PN_SCENARIO_VALUE_MAX bytes */
  bool enum_like; /* booleans, tri-states, enums and strings: the value is a name, not a magnitude */
} PnScenarioField;

/* One value of a field, converted and range-checked as the loader does. */
typedef struct {
  unsigned char bytes[PN_SCENARIO_VALUE_MAX]; /* as stored in PnScenario */
  char text[PN_SCENARIO_VALUE_MAX + 16];      /* as a user writes it in JSON ("4", "true", "null", "\"selective\"") */
} PnScenarioValue;

/* Finds `name`: "section.key" or a bare key that only one section has. Unknown names get a
 * did-you-mean; list and model keys cannot be set this way. `display` prefixes errors
 * (an option such as "--vary", or a file). */
gboolean pn_scenario_field_find(const char *name, const char *display, PnScenarioField *out, GError **error);
/* Converts `text` (JSON if it parses as JSON, otherwise a bare string, as --set does). */
gboolean pn_scenario_field_parse(const PnScenarioField *f, const char *text, const char *display, PnScenarioValue *out,
                                 GError **error);
/* The value of `f` in `sc`, as pn_scenario_field_parse would have made it. */
void pn_scenario_field_get(const PnScenarioField *f, const PnScenario *sc, PnScenarioValue *out);
/* Every value a boolean (false, true), tri-state (false, true: null, the gating's choice, is left
 * out) or enum field can take, into `out` (at most `max`); 0 for an integer field. */
int pn_scenario_field_choices(const PnScenarioField *f, PnScenarioValue *out, int max);
static inline void pn_scenario_field_set(const PnScenarioField *f, PnScenario *sc, const PnScenarioValue *v)
{
  memcpy((char *)sc + f->offset, v->bytes, f->size);
}

/* Frees `sc` and its hardware profile; NULL is a no-op. */
void pn_scenario_free(PnScenario *sc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnScenario, pn_scenario_free)

#endif
