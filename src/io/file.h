/* file.h — io's error domain and the cap on the files it reads (writing: io/out.h).
 *
 * Every error io/ reports is a user error (bad file, bad JSON, wrong schema, infeasible
 * configuration) in the PN_IO_ERROR domain; the cli exits 2 for them. The message is one line:
 *   `<file>: <JSON pointer>: <what was expected / what is wrong>`
 * (JSON syntax errors: `<file>:<line>:<column>: ...`; command-line overrides: `--set: ...`).
 *
 * Files read by io/ are at most PN_IO_MAX_FILE_BYTES; larger ones are refused before parsing.
 */
#ifndef PN_IO_FILE_H
#define PN_IO_FILE_H

#include <glib.h>

#define PN_IO_MAX_FILE_BYTES ((gsize)64 * 1024 * 1024)

#define PN_IO_ERROR (pn_io_error_quark())
typedef enum {
  PN_IO_ERROR_FILE,    /* cannot open / read / write, too large, not a regular file */
  PN_IO_ERROR_PARSE,   /* not JSON: syntax, empty, NUL bytes, invalid UTF-8, too deep */
  PN_IO_ERROR_SCHEMA,  /* JSON, but a key is unknown, missing, of the wrong type or out of range */
  PN_IO_ERROR_INVALID, /* well-formed, but the combination is infeasible (divisibility, ...) */
  PN_IO_ERROR_BOUND    /* an output would be larger than the bound it was given (a trace) */
} PnIoError;

GQuark pn_io_error_quark(void);

/* User text as every message echoes it: quoted, escaped, cut after 60 characters with its length
 * ("aaaa..." (1048576 bytes)). g_free. */
char *pn_io_quote(const char *s);

/* The file of the hardware profile `ref` names, found as a scenario's hardware.profile is (a path,
 * or a name looked up in the profile directories; io-private.h, pn__io_resolve). Returns the path
 * (g_free), or NULL with "<option>: unknown hardware profile \"x\" (available: ...)", `option`
 * naming where `ref` came from (a command-line option). */
char *pn_io_find_profile(const char *option, const char *ref, GError **error);

/* The directory of penumbra's own data (models/, hwprofiles/, scenarios/, the validation data),
 * searched after $PENUMBRA_DATA_DIR: the first that holds a hwprofiles/ folder of
 * <the executable's directory>/../share/penumbra (an installed tree, wherever it was moved), the
 * install prefix's share/penumbra, and the source tree the binary was built from. g_free. One
 * readlink and a few stats. */
char *pn_io_data_dir(void);

#endif
