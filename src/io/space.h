/* space.h — the axes a user gives a sweep, as text: `--vary KEY=V1,V2,...` and a `--space FILE`
 * (a JSON object of scenario keys, each with one value or an array of values:
 * {"parallel.tensor_model_parallel_size": [2, 4, 8], "training.micro_batch_size": 1}). Keys and
 * values are checked by the scenario's schema later (scenario.h, pn_scenario_field_*), where
 * errors name `display` (the option or the file) and the key.
 */
#ifndef PN_IO_SPACE_H
#define PN_IO_SPACE_H

#include <glib.h>

typedef struct {
  char *display;     /* "--vary" or "<file>: /<key>" */
  char *key;         /* as given */
  GPtrArray *values; /* of char*: value texts (JSON, or bare strings), at least one */
} PnSpaceEntry;

void pn_space_entry_free(PnSpaceEntry *e);
/* "KEY=V1,V2,..." into an entry; NULL with PN_IO_ERROR_INVALID when malformed or a value is empty. */
PnSpaceEntry *pn_space_entry_parse(const char *arg, GError **error);
/* Appends the entries of the --space file at `path` to `out` (free func pn_space_entry_free), in
 * the file's order. Errors: the file (file.h), not an object, an empty array, a nested value. */
gboolean pn_space_file_load(const char *path, GPtrArray *out, GError **error);

#endif
