/* file.h — io's error domain and safe file writing.
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
  PN_IO_ERROR_FILE,   /* cannot open / read / write, too large, not a regular file */
  PN_IO_ERROR_PARSE,  /* not JSON: syntax, empty, NUL bytes, invalid UTF-8, too deep */
  PN_IO_ERROR_SCHEMA, /* JSON, but a key is unknown, missing, of the wrong type or out of range */
  PN_IO_ERROR_INVALID /* well-formed, but the combination is infeasible (divisibility, ...) */
} PnIoError;

GQuark pn_io_error_quark(void);

/* Writes `len` bytes of `data` to `path` atomically: a temporary file in the same directory is
 * written, flushed and renamed over `path`, so readers see the old or the new content, never a
 * mix, and a failure leaves no temporary file behind. Fails with PN_IO_ERROR_FILE
 * ("<path>: cannot write: <reason>"). */
gboolean pn_io_write_file_atomic(const char *path, const char *data, gsize len, GError **error);

/* The same for output too large to hold in memory (traces): a file written piece by piece and
 * published over `path` only when complete. pn_io_stream_open creates the temporary file
 * ("<path>.XXXXXX", beside `path`); pn_io_stream_write appends (a failure is remembered and
 * reported by the commit); pn_io_stream_commit flushes it (to disk, when it replaces a file) and
 * renames it over `path`; pn_io_stream_abort removes it. Commit and abort free the stream (abort
 * of NULL is a no-op). Errors: PN_IO_ERROR_FILE, "<path>: cannot write: <reason>"; after any
 * failure no temporary file is left behind. */
typedef struct PnIoStream PnIoStream;
PnIoStream *pn_io_stream_open(const char *path, GError **error);
void pn_io_stream_write(PnIoStream *s, const char *data, gsize len);
gboolean pn_io_stream_commit(PnIoStream *s, GError **error);
void pn_io_stream_abort(PnIoStream *s);

#endif
