/* out.h — every file penumbra writes (reports, traces, plot data, calibrated profiles, report
 * directories): one set of rules for what may stand at an output path, checked before the work
 * (pn_out_check_path) and applied when writing (pn_out_open ... pn_out_commit).
 *
 * What stands at the path decides how it is written:
 *   - "-": standard output, written in place (commit flushes it, never closes it).
 *   - nothing yet, or a regular file: written to a temporary file "<name>.XXXXXX" in the same
 *     directory, which pn_out_commit flushes (to disk, when it replaces a file) and renames over
 *     the path: a reader sees the old content or the new, never a mix, and the old file is
 *     untouched until then. A replaced file keeps its permission bits. An existing file must be
 *     writable, and its directory must let the temporary file be created.
 *   - a FIFO or a character device (/dev/null, a terminal): opened and written in place, never
 *     replaced by a regular file; what was written cannot be taken back by an abort.
 *   - a symbolic link: followed (up to PN_OUT_MAX_LINKS links), and the rules apply to its
 *     target; the link itself stays (a regular target is replaced in its own directory). A link
 *     to nothing creates its target, as a shell's `>` does.
 *   - a directory, a block device, a socket, or an empty name: refused.
 * A missing directory is never created for a file (pn_out_dir_open creates one on purpose).
 *
 * Errors: PN_IO_ERROR_FILE, one line naming the user's path (never the temporary file; a link's
 * target follows the path as "<path> -> <target>"): "<path>: <what is wrong or expected>";
 * standard output is named "standard output". After any failure, no temporary file is left.
 * Cost: a check is a few stat(2) calls; writing is buffered (stdio); a commit that replaces a file
 * costs one fsync.
 */
#ifndef PN_IO_OUT_H
#define PN_IO_OUT_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>

#include "io/file.h"

#define PN_OUT_MAX_LINKS 40

typedef struct PnOut PnOut;

/* Checks, before any work, that `path` can be written under the rules above; nothing is created.
 * FALSE with the error an open would give. */
gboolean pn_out_check_path(const char *path, GError **error);

/* Checks `path` and opens it for writing (a temporary file, or the special file itself; a FIFO
 * blocks until a reader opens it). NULL with PN_IO_ERROR_FILE. */
PnOut *pn_out_open(const char *path, GError **error);

/* The stream to write to (owned by `out`; never fclose it). A write error is remembered by the
 * stream and reported by pn_out_commit. */
FILE *pn_out_file(PnOut *out);

/* Writes `len` bytes; the reason of the first failure is kept for pn_out_commit's message. */
void pn_out_write(PnOut *out, const void *data, gsize len);

/* For a writer that reads back what it wrote before publishing it: flushes what was written and
 * returns the temporary file's name (owned by `out`), or NULL when the output is written in place
 * (standard output, a FIFO, a device) or a write failed (the commit reports it). */
const char *pn_out_staged_path(PnOut *out);

/* Publishes what was written (flush, fsync and rename for a replaced file; flush and close
 * otherwise) and frees `out`. On failure the path is left as it was, for a regular file. */
gboolean pn_out_commit(PnOut *out, GError **error);

/* Drops what was written: the temporary file is removed and the path never touched (a special
 * file keeps what already went to it). Frees `out`; NULL is a no-op. */
void pn_out_abort(PnOut *out);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnOut, pn_out_abort)

/* pn_out_open + pn_out_write + pn_out_commit of `len` bytes of `data`. */
gboolean pn_out_write_file(const char *path, const char *data, gsize len, GError **error);

/* A report directory: created (with its missing parents) when it does not exist, reused when it
 * does; a path that names something else (a file, a device) is refused, never replaced. Each file
 * in it is an output of its own under the rules above (written atomically). Errors name the
 * directory ("<dir>: ...") or the file in it ("<dir>/<name>: ..."). */
typedef struct PnOutDir PnOutDir;

/* Checks, before any work, that `path` is a writable directory or can be created (its nearest
 * existing ancestor is a writable directory); nothing is created. */
gboolean pn_out_dir_check_path(const char *path, GError **error);
/* Checks `path` and creates it if missing. NULL with PN_IO_ERROR_FILE. */
PnOutDir *pn_out_dir_open(const char *path, GError **error);
/* Opens the file `name` (one path component, no '/') in `dir`, as pn_out_open. */
PnOut *pn_out_dir_file(const PnOutDir *dir, const char *name, GError **error);
const char *pn_out_dir_path(const PnOutDir *dir);
void pn_out_dir_free(PnOutDir *dir); /* NULL is a no-op; the directory stays */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnOutDir, pn_out_dir_free)

/* A report directory written whole (outdir.c): its files go into a temporary directory
 * "<path>.XXXXXX" beside it (made with its missing parents), which pn_out_stage_commit puts in
 * the place of `path` at once: rename(2) where nothing or an empty directory stands, an exchange
 * (renameat2's RENAME_EXCHANGE) with an existing directory, which is then removed. A reader sees
 * the old directory or the new one, never a mix; after a failure or an abort the temporary
 * directory is removed and `path` is as it was. An existing directory that is not empty is
 * refused unless `replace`; a file, a link or anything else at `path` always is. */
typedef struct PnOutStage PnOutStage;

/* Checks, before any work, what pn_out_stage_open would refuse; nothing is created. */
gboolean pn_out_stage_check(const char *path, bool replace, GError **error);
PnOutStage *pn_out_stage_open(const char *path, bool replace, GError **error);
/* The temporary directory, where the files go (pn_out_dir_file); owned by `stage`. */
const PnOutDir *pn_out_stage_dir(const PnOutStage *stage);
/* Puts the directory in place and frees `stage`. FALSE (and `path` untouched) on failure. */
gboolean pn_out_stage_commit(PnOutStage *stage, GError **error);
/* Removes the temporary directory and frees `stage`; NULL is a no-op. */
void pn_out_stage_abort(PnOutStage *stage);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnOutStage, pn_out_stage_abort)

#endif
