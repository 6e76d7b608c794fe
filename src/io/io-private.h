/* io-private.h — what the io/ source files share: reading and parsing JSON safely, JSON-pointer
 * error messages, did-you-mean, and the table-driven conversion of JSON objects into C structs.
 *
 * Only io/ includes this header (and so cJSON). Every error built here has the product's one-line
 * form `<file>: <JSON pointer>: <what is wrong>` (parse errors: `<file>:<line>:<col>: ...`) and
 * the PN_IO_ERROR domain. User-derived text (keys, strings, --set arguments, the text at a syntax
 * error) enters a message only through pn__io_echo (values) or a pointer (keys): escaped and cut
 * to PN_IO_ECHO_CHARS characters, so a message is one short printable line whatever the input.
 *
 * Cost: parsing is linear in the file; conversion is linear in keys times the section's table.
 */
#ifndef PN_IO_PRIVATE_H
#define PN_IO_PRIVATE_H

#include <cjson/cJSON.h>
#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/profile.h"
#include "io/file.h"
#include "workload/config.h"

/* Deeper nesting than this is refused before cJSON sees the text (cJSON's own limit is 1000 and
 * its recursive free/print would use that much stack); penumbra's files nest at most 4 deep. */
#define PN_IO_MAX_DEPTH 64

/* Where conversion errors are attributed. `file` is shown in messages; a pointer at or below a
 * path in `set_paths` (a set of JSON pointers, lookup only) is attributed to "--set" instead,
 * because the value there came from the command line. `where_else` (may be NULL) names the
 * section a misplaced key belongs to, for the unknown-key hint. */
typedef struct {
  const char *file;
  GHashTable *set_paths;
  const char *(*where_else)(const char *key);
} PnIoCtx;

/* ---- errors ---- */
/* Echoed input is cut after this many characters (a 1 MiB key still gives a readable line). */
#define PN_IO_ECHO_CHARS 60

/* Reports `fmt` at pointer `ptr` (NULL: none) of the context's file. The pointer is shown as
 * echoed input: each segment escaped and cut (a 1 MiB key shows as "/aaa... (1048576 bytes)"). */
void pn__io_fail(GError **error, PnIoError code, const PnIoCtx *ctx, const char *ptr, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
const char *pn__io_ctx_file(const PnIoCtx *ctx, const char *ptr); /* "--set" or ctx->file */
char *pn__io_ptr_child(const char *ptr, const char *key);         /* ptr + "/" + escaped key; g_free */
char *pn__io_ptr_index(const char *ptr, gsize i);                 /* ptr + "/" + i; g_free */
char *pn__io_describe(const cJSON *v);                            /* `"4096"`, `4096.5`, `an object`; g_free */
/* Appends `len` bytes of user text (NULs allowed) quoted, with '"', '\\', control and other
 * non-printing characters escaped (\u0000, \u202e), bytes that are not UTF-8 as \xNN, and cut
 * at a character boundary after PN_IO_ECHO_CHARS characters: "aaaa..." (1048576 bytes). */
void pn__io_echo(GString *out, const char *s, gsize len);
char *pn__io_quote(const char *s);            /* pn__io_echo of s as a new string; g_free */
const char *pn__io_type_name(const cJSON *v); /* "a string", "an array", ... */
/* Best match of `key` among `known` (n names) by case-insensitive Damerau-Levenshtein distance,
 * or NULL when nothing is close enough to be a plausible typo. */
const char *pn__io_suggest(const char *key, const char *const *known, gsize n);

/* ---- reading ---- */
/* Reads the whole file, refusing more than PN_IO_MAX_FILE_BYTES (regular files are measured
 * before reading). *out is NUL-terminated (g_free); *out_len excludes the NUL. */
gboolean pn__io_read_file(const char *path, const char *display, char **out, gsize *out_len, GError **error);
/* Reads `path` (at most PN_IO_MAX_FILE_BYTES) and parses it. `display` names the file in
 * messages. On success *out owns the tree (cJSON_Delete). */
gboolean pn__io_read_json(const char *path, const char *display, cJSON **out, GError **error);
/* Parses `len` bytes at `buf` (buf[len] must be '\0'): refuses empty input, NUL bytes, invalid
 * UTF-8, nesting deeper than PN_IO_MAX_DEPTH, and reports line:column of syntax errors (a lone
 * UTF-16 surrogate escape, text after the top-level value named as such). It also refuses, at
 * their pointer, what cJSON accepts but would read wrong: a NUL character (\u0000) in a string
 * or key, and a key twice in one object. A UTF-8 byte-order mark is skipped; -0 is zero. */
gboolean pn__io_parse_json(const char *display, const char *buf, gsize len, cJSON **out, GError **error);
/* The value of a --set override written at pointer `ptr`: *out is the parsed tree when `text` is
 * JSON, NULL when it is not (the caller takes it as a bare string). Returns FALSE, *out NULL,
 * when it is JSON that pn__io_parse_json would refuse (a NUL character, a duplicate key). */
gboolean pn__io_parse_set_value(const char *ptr, const char *text, cJSON **out, GError **error);
/* Applies one --set ("dotted.key=value", checked against the scenario schema) to the scenario
 * object `root`, as the loader does (scenario.c). */
gboolean pn__io_scenario_apply_set(cJSON *root, const char *set, GError **error);

/* The directories searched for a name of penumbra's data under `subdir`, in order:
 * $PENUMBRA_DATA_DIR/<subdir>, <base_dir>/../<subdir> (when base_dir is given),
 * pn_io_data_dir()/<subdir>. Only those given; not necessarily existing. g_ptr_array_unref. */
GPtrArray *pn__io_search_dirs(const char *base_dir, const char *subdir);

/* Resolves a model or hardware-profile reference `ref` found at `ptr`: a path (contains '/' or
 * ends in ".json") relative to `base_dir` (then the current directory), or a name looked up in
 * $PENUMBRA_DATA_DIR/<subdir>, <base_dir>/../<subdir>, pn_io_data_dir()/<subdir>. Returns the path
 * (g_free) or NULL with an error listing the available names. `what` ("model", "hardware
 * profile") names the kind in messages. */
char *pn__io_resolve(const PnIoCtx *ctx, const char *ptr, const char *ref, const char *base_dir, const char *subdir,
                     const char *what, GError **error);

/* ---- table-driven conversion ---- */
typedef enum {
  PN_FIELD_INT,         /* integer in [min, max] into int64_t or int (by size) */
  PN_FIELD_INT_NULL,    /* same, or null: stores null_value */
  PN_FIELD_BOOL,        /* true/false into bool */
  PN_FIELD_BOOL01,      /* true/false or 0/1 into bool */
  PN_FIELD_TRI,         /* true/false/null into PnTri */
  PN_FIELD_DOUBLE,      /* finite number in [dmin, dmax) into double */
  PN_FIELD_STRING,      /* string into char[size] */
  PN_FIELD_STRING_NULL, /* same, or null: stores "" */
  PN_FIELD_ENUM,        /* one of `names` into an int-sized enum */
  PN_FIELD_ENUM_NULL,   /* same, or null: stores null_value */
  PN_FIELD_IGNORED_STRING,
  PN_FIELD_IGNORED_INT,
  PN_FIELD_CUSTOM, /* known key, converted by the caller */
} PnFieldKind;

typedef struct {
  const char *name;
  int value;
} PnEnumName;

/* The scenario's spellings of its enums (scenario.c), shared by the loader and the report so that
 * a report names a value as the scenario writes it. */
extern const PnEnumName pn__io_precision_names[];
extern const PnEnumName pn__io_cp_comm_names[];
extern const PnEnumName pn__io_fsdp_shard_names[];

/* The names of PnTorchKernel, by value (hwprofile.c): the ops of microbench/mb_unfused_attn.py's
 * "mem" rows and of mb_torch_mem.py's glu_clamp rows, and the keys of a profile's
 * calibration.torch_kernel_vs_copy. */
extern const char *const pn__io_torch_kernel_names[PN_TK_N];

/* The name of value v in table t (terminated by {NULL, 0}); "?" when t has none. */
const char *pn__io_enum_name(const PnEnumName *t, int v);

typedef struct {
  const char *key;
  PnFieldKind kind;
  size_t offset;
  size_t size;
  int64_t min, max;        /* INT: inclusive */
  bool absurd;             /* max is a sanity bound ("absurdly large"), not a rule of the format */
  double dmin, dmax;       /* DOUBLE: dmin <= v < dmax */
  const PnEnumName *names; /* ENUM: terminated by {NULL, 0} */
  int null_value;
  bool required;
} PnField;

/* Field tables end with an entry whose key is NULL. */
gsize pn__io_fields_count(const PnField *fields);
const PnField *pn__io_field_find(const PnField *fields, const char *key);

/* Checks that `obj` is an object whose keys are all in `fields` (the parsers refused duplicates). */
gboolean pn__io_check_keys(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const PnField *fields,
                           GError **error);
/* Converts every non-CUSTOM field present in `obj` into `dst`; with `check_required`, a missing
 * required field is an error. Call pn__io_check_keys first. */
gboolean pn__io_apply_fields(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const PnField *fields, void *dst,
                             gboolean check_required, GError **error);

/* Value checks shared with the hardware profile reader. `ptr` is the value's pointer. */
gboolean pn__io_get_int(const PnIoCtx *ctx, const cJSON *v, const char *ptr, int64_t min, int64_t max, bool absurd,
                        int64_t *out, GError **error);
gboolean pn__io_get_double(const PnIoCtx *ctx, const cJSON *v, const char *ptr, double dmin, double dmax,
                           bool dmin_exclusive, double *out, GError **error);
gboolean pn__io_get_string(const PnIoCtx *ctx, const cJSON *v, const char *ptr, gsize max_len, const char **out,
                           GError **error);

/* ---- models (model.c) ---- */
extern const PnField pn__io_model_fields[]; /* includes "base" as CUSTOM */
/* Converts the model value at `ptr` (a name/path string or an inline object, with optional
 * "base") into `out`. `base_dir` resolves names and relative paths. */
gboolean pn__io_model_from_value(const PnIoCtx *ctx, const cJSON *v, const char *ptr, const char *base_dir,
                                 PnModelConfig *out, GError **error);

#endif
