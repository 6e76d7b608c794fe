/* jsonw.h — io/'s one JSON writer: reports and traces, written as a stream in a layout and number
 * format fixed by this module.
 *
 * Why not cJSON (which io/ uses to read): cJSON builds the whole tree before it prints, and a trace
 * of a large run is gigabytes; it also indents with tabs and prints 15 to 17 significant digits,
 * and reports are compared byte for byte. Here each value goes out as it is written: into memory
 * (pn_jsonw_new) or into an output (pn_jsonw_new_out, io/out.h: a file published atomically when
 * committed; at most about PN_JSONW_FLUSH_BYTES are held before they are written out).
 *
 * Layout: a container is opened BLOCK (each member on a line of its own, indented `indent` spaces
 * per open container, the closer on a line of its own at its opener's indentation; an empty one is
 * "{}" or "[]") or INLINE (members on one line, separated by ", "). A key is followed by ": ". The
 * text ends with a newline after the top-level container.
 * Numbers: pn_jsonw_double prints 9 significant digits ("%.9g"), pn_jsonw_fixed `decimals` digits
 * after the point ("%.*f"), both in the C locale whatever the process's locale, -0 as 0, NaN and
 * infinities as null; integers are exact.
 * Strings: invalid UTF-8 is replaced (U+FFFD); '"' and '\' are escaped, \n \r \t written as such,
 * the other control characters and DEL as \u00XX.
 *
 * Invariants (g_assert, programming errors): the text is one container; at most PN_JSONW_MAX_DEPTH
 * are open; a member of an object has a key and an element of an array has none (key NULL); the
 * top-level container is closed before the text is taken or the file finished.
 * Cost: linear in the output; a string that is not valid UTF-8 costs one copy.
 */
#ifndef PN_IO_JSONW_H
#define PN_IO_JSONW_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/out.h"

#define PN_JSONW_MAX_DEPTH 16
#define PN_JSONW_FLUSH_BYTES ((gsize)64 * 1024)

typedef enum { PN_JSONW_BLOCK, PN_JSONW_INLINE } PnJsonLayout;

typedef struct PnJsonWriter PnJsonWriter;

/* A writer into memory; take the text with pn_jsonw_free_to_string. */
PnJsonWriter *pn_jsonw_new(int indent);
/* Frees `w` and returns its text (g_free). */
char *pn_jsonw_free_to_string(PnJsonWriter *w);

/* A writer into `out` (not owned: the caller commits or aborts it after the writer is finished or
 * freed). Write errors are kept by `out` and reported by pn_out_commit. */
PnJsonWriter *pn_jsonw_new_out(PnOut *out, int indent);
/* Writes out what is held and frees `w`. */
void pn_jsonw_finish(PnJsonWriter *w);

/* The length of the text so far (held and written out), in bytes. */
guint64 pn_jsonw_bytes(const PnJsonWriter *w);

/* Frees `w` unfinished (what an output writer holds is dropped); NULL is a no-op. */
void pn_jsonw_free(PnJsonWriter *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnJsonWriter, pn_jsonw_free)

/* Containers: `key` names the member in an enclosing object, NULL elsewhere. */
void pn_jsonw_object(PnJsonWriter *w, const char *key, PnJsonLayout layout);
void pn_jsonw_array(PnJsonWriter *w, const char *key, PnJsonLayout layout);
void pn_jsonw_end(PnJsonWriter *w); /* closes the innermost open container */

/* Values: a member of the open object (key) or an element of the open array (key NULL). */
void pn_jsonw_double(PnJsonWriter *w, const char *key, double v);
void pn_jsonw_fixed(PnJsonWriter *w, const char *key, double v, int decimals); /* decimals 0 .. 17 */
void pn_jsonw_int(PnJsonWriter *w, const char *key, int64_t v);
void pn_jsonw_uint(PnJsonWriter *w, const char *key, uint64_t v);
void pn_jsonw_bool(PnJsonWriter *w, const char *key, bool v);
void pn_jsonw_string(PnJsonWriter *w, const char *key, const char *s); /* s not NULL */
void pn_jsonw_null(PnJsonWriter *w, const char *key);

#endif
