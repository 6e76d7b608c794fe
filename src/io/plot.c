/* plot.c — gnuplot behind penumbra's pictures (see plot.h). */
#include "io/plot.h"

#include <glib/gstdio.h>
#include <string.h>

#include "io/file.h"
#include "io/io-private.h"
#include "io/out.h"

gboolean pn_plot_check_path(const char *path, GError **error)
{
  if (g_str_has_suffix(path, ".svg") || g_str_has_suffix(path, ".png"))
    return TRUE;
  g_autofree char *q = pn_io_quote(path);
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID, "%s: expected a file name ending in .svg or .png", q);
  return FALSE;
}

static char *find_script(const char *script, GError **error)
{
  g_autoptr(GPtrArray) dirs = pn__io_search_dirs(NULL, "plots");
  for (guint i = 0; i < dirs->len; i++) {
    char *p = g_build_filename(dirs->pdata[i], script, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_REGULAR))
      return p;
    g_free(p);
  }
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "plots/%s: not found (set PENUMBRA_DATA_DIR to the source tree)",
              script);
  return NULL;
}

/* name='value' for gnuplot -e, the value's quotes doubled (gnuplot's single-quoted strings). */
static char *assignment(const char *name, const char *value)
{
  g_auto(GStrv) parts = g_strsplit(value, "'", -1);
  g_autofree char *v  = g_strjoinv("''", parts);
  return g_strdup_printf("%s='%s'", name, v);
}

/* Runs gnuplot with `argv`; FALSE with its first line of complaint. */
static gboolean run_gnuplot(char **argv, GError **error)
{
  g_autofree char *err_text = NULL;
  int status                = 0;
  g_autoptr(GError) spawn   = NULL;
  if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err_text,
                    &status, &spawn)) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "gnuplot cannot be run (install gnuplot-nox): %s",
                spawn->message);
    return FALSE;
  }
  if (g_spawn_check_wait_status(status, NULL))
    return TRUE;
  g_strstrip(err_text);
  char *nl = strchr(err_text, '\n');
  if (nl)
    *nl = '\0';
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "gnuplot failed: %s", *err_text ? err_text : "no message");
  return FALSE;
}

/* The picture drawn into `dir`: its bytes (g_free), or NULL. */
static char *draw(const char *dir, const char *script_path, const char *data, const char *const *vars, const char *ext,
                  gsize *len, GError **error)
{
  g_autofree char *datafile = g_build_filename(dir, "plot.dat", NULL);
  g_autofree char *outname  = g_strconcat("plot.", ext, NULL);
  g_autofree char *outfile  = g_build_filename(dir, outname, NULL);
  if (!g_file_set_contents(datafile, data, -1, error))
    return NULL;
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(argv, g_strdup("gnuplot"));
  const char *fixed[] = {"datafile", datafile, "outfile", outfile, "ext", ext};
  for (gsize i = 0; i < G_N_ELEMENTS(fixed); i += 2) {
    g_ptr_array_add(argv, g_strdup("-e"));
    g_ptr_array_add(argv, assignment(fixed[i], fixed[i + 1]));
  }
  for (gsize i = 0; vars != NULL && vars[i] != NULL && vars[i + 1] != NULL; i += 2) {
    g_ptr_array_add(argv, g_strdup("-e"));
    g_ptr_array_add(argv, assignment(vars[i], vars[i + 1]));
  }
  g_ptr_array_add(argv, g_strdup(script_path));
  g_ptr_array_add(argv, NULL);
  char *bytes = NULL;
  if (!run_gnuplot((char **)argv->pdata, error) || !g_file_get_contents(outfile, &bytes, len, error))
    return NULL;
  return bytes;
}

gboolean pn_plot_render(const char *script, const char *data, const char *const *vars, const char *path, GError **error)
{
  if (!pn_plot_check_path(path, error) || !pn_out_check_path(path, error))
    return FALSE;
  g_autofree char *script_path = find_script(script, error);
  if (script_path == NULL)
    return FALSE;
  g_autofree char *dir = g_dir_make_tmp("penumbra-plot-XXXXXX", error);
  if (dir == NULL)
    return FALSE;
  gsize len = 0;
  g_autofree char *img =
      draw(dir, script_path, data, vars, g_str_has_suffix(path, ".svg") ? "svg" : "png", &len, error);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  for (const char *n = d ? g_dir_read_name(d) : NULL; n != NULL; n = g_dir_read_name(d)) {
    g_autofree char *f = g_build_filename(dir, n, NULL);
    g_unlink(f);
  }
  g_rmdir(dir);
  return img != NULL && pn_out_write_file(path, img, len, error);
}
