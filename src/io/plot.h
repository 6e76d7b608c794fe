/* plot.h — pictures drawn by gnuplot (gnuplot-nox) from a script in plots/, fed with data penumbra
 * writes: the trend of `penumbra regress --history --plot` and the Gantt chart of `penumbra run
 * --gantt`.
 *
 * The script is found in $PENUMBRA_DATA_DIR/plots, then PN_DATA_DIR/plots (the source tree).
 * It receives its variables with `gnuplot -e`: `datafile` (the data, in a temporary file),
 * `outfile` (where to draw), `ext` ("svg" or "png", from the output's name) and the caller's
 * own. gnuplot draws into a temporary directory; the picture then goes to the output path under
 * io/out.h's rules (atomically; "-" is standard output), so a failed plot leaves the path as it
 * was. Cost: one gnuplot process.
 */
#ifndef PN_IO_PLOT_H
#define PN_IO_PLOT_H

#include <glib.h>

/* Whether `path` names a picture this module draws (ends in .svg or .png); FALSE with
 * PN_IO_ERROR_INVALID "<path>: expected a file name ending in .svg or .png". */
gboolean pn_plot_check_path(const char *path, GError **error);

/* Draws `path` with the script `script` (a file name in plots/) from `data`; `vars` are
 * NULL-terminated name, value pairs given to the script as strings (may be NULL). Errors
 * (PN_IO_ERROR_FILE): no script, no gnuplot, gnuplot failed (its first line of complaint),
 * or those of io/out.h. */
gboolean pn_plot_render(const char *script, const char *data, const char *const *vars, const char *path,
                        GError **error);

#endif
