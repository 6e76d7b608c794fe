/* file.c — reading files with a size cap, and finding model / profile files. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io-private.h"

GQuark pn_io_error_quark(void) { return g_quark_from_static_string("pn-io-error-quark"); }

static void fail_too_large(GError **error, const char *display, double bytes)
{
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: file is too large (%.1f MiB; at most %u MiB is read)", display,
              bytes / (1024.0 * 1024.0), (unsigned)(PN_IO_MAX_FILE_BYTES / (1024 * 1024)));
}

/* Reads the whole file, refusing more than PN_IO_MAX_FILE_BYTES. Regular files are measured
 * before reading; other files (pipes, devices) are read up to the cap and refused past it. */
gboolean pn__io_read_file(const char *path, const char *display, char **out, gsize *out_len, GError **error)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: cannot open: %s", display, g_strerror(e));
    return FALSE;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    int e = errno;
    fclose(f);
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: cannot read: %s", display, g_strerror(e));
    return FALSE;
  }
  if (S_ISDIR(st.st_mode)) {
    fclose(f);
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: is a directory, expected a JSON file", display);
    return FALSE;
  }
  if (S_ISREG(st.st_mode) && (guint64)st.st_size > PN_IO_MAX_FILE_BYTES) {
    fclose(f);
    fail_too_large(error, display, (double)st.st_size);
    return FALSE;
  }
  gsize cap = S_ISREG(st.st_mode) ? (gsize)st.st_size + 1 : 65536;
  gsize len = 0;
  char *buf = g_malloc(cap + 1);
  for (;;) {
    if (len == cap) {
      if (cap > PN_IO_MAX_FILE_BYTES) {
        g_free(buf);
        fclose(f);
        fail_too_large(error, display, (double)len);
        return FALSE;
      }
      cap = MIN(cap * 2, PN_IO_MAX_FILE_BYTES + 1);
      buf = g_realloc(buf, cap + 1);
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f)) {
        int e = errno;
        g_free(buf);
        fclose(f);
        g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: cannot read: %s", display, g_strerror(e));
        return FALSE;
      }
      break;
    }
  }
  fclose(f);
  if (len > PN_IO_MAX_FILE_BYTES) { /* a regular file that grew while being read */
    g_free(buf);
    fail_too_large(error, display, (double)len);
    return FALSE;
  }
  buf[len] = '\0';
  *out     = buf;
  *out_len = len;
  return TRUE;
}

gboolean pn__io_read_json(const char *path, const char *display, cJSON **out, GError **error)
{
  g_autofree char *buf = NULL;
  gsize len            = 0;
  if (!pn__io_read_file(path, display, &buf, &len, error))
    return FALSE;
  return pn__io_parse_json(display, buf, len, out, error);
}

/* ---- model / profile lookup ---- */

static gboolean is_path_ref(const char *ref) { return strchr(ref, '/') != NULL || g_str_has_suffix(ref, ".json"); }

static gboolean is_valid_name(const char *ref)
{
  if (*ref == '\0')
    return FALSE;
  for (const char *c = ref; *c; c++)
    if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_' && *c != '.' && *c != '+')
      return FALSE;
  return TRUE;
}

static gboolean holds_data(const char *dir)
{
  g_autofree char *profiles = g_build_filename(dir, "hwprofiles", NULL);
  return g_file_test(profiles, G_FILE_TEST_IS_DIR);
}

char *pn_io_data_dir(void)
{
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  if (exe != NULL) {
    g_autofree char *bin   = g_path_get_dirname(exe);
    g_autofree char *share = g_build_filename(bin, "..", "share", "penumbra", NULL);
    if (holds_data(share))
      return g_canonicalize_filename(share, NULL);
  }
#ifdef PN_INSTALL_DATA_DIR
  if (holds_data(PN_INSTALL_DATA_DIR))
    return g_strdup(PN_INSTALL_DATA_DIR);
#endif
#ifdef PN_DATA_DIR
  return g_strdup(PN_DATA_DIR);
#else
  return g_strdup(".");
#endif
}

GPtrArray *pn__io_search_dirs(const char *base_dir, const char *subdir)
{
  GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
  const char *env = g_getenv("PENUMBRA_DATA_DIR");
  if (env != NULL && *env != '\0')
    g_ptr_array_add(dirs, g_build_filename(env, subdir, NULL));
  if (base_dir != NULL)
    g_ptr_array_add(dirs, g_build_filename(base_dir, "..", subdir, NULL));
  g_autofree char *data = pn_io_data_dir();
  g_ptr_array_add(dirs, g_build_filename(data, subdir, NULL));
  return dirs;
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "a, b, c": the names (files *.json) found in `dirs`, sorted, without duplicates. */
static char *available_names(GPtrArray *dirs)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < dirs->len; i++) {
    g_autoptr(GDir) d = g_dir_open(dirs->pdata[i], 0, NULL);
    if (d == NULL)
      continue;
    const char *e;
    while ((e = g_dir_read_name(d)) != NULL)
      if (e[0] != '.' && g_str_has_suffix(e, ".json") && strlen(e) > 5)
        g_ptr_array_add(names, g_strndup(e, strlen(e) - 5));
  }
  g_ptr_array_sort(names, cmp_str);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < names->len; i++) {
    if (i > 0 && strcmp(names->pdata[i], names->pdata[i - 1]) == 0)
      continue;
    if (s->len > 0)
      g_string_append(s, ", ");
    g_string_append(s, names->pdata[i]);
  }
  return g_string_free(s, FALSE);
}

char *pn__io_resolve(const PnIoCtx *ctx, const char *ptr, const char *ref, const char *base_dir, const char *subdir,
                     const char *what, GError **error)
{
  if (is_path_ref(ref)) {
    if (g_path_is_absolute(ref)) {
      if (g_file_test(ref, G_FILE_TEST_EXISTS))
        return g_strdup(ref);
      g_autofree char *q = pn__io_quote(ref);
      pn__io_fail(error, PN_IO_ERROR_FILE, ctx, ptr, "%s file %s not found", what, q);
      return NULL;
    }
    g_autofree char *rel = g_build_filename(base_dir ? base_dir : ".", ref, NULL);
    if (g_file_test(rel, G_FILE_TEST_EXISTS))
      return g_steal_pointer(&rel);
    if (g_file_test(ref, G_FILE_TEST_EXISTS))
      return g_strdup(ref);
    g_autofree char *q    = pn__io_quote(ref);
    g_autofree char *qrel = pn__io_quote(rel);
    pn__io_fail(error, PN_IO_ERROR_FILE, ctx, ptr, "%s file %s not found (looked for %s and in the current directory)",
                what, q, qrel);
    return NULL;
  }
  g_autofree char *q = pn__io_quote(ref);
  if (!is_valid_name(ref)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr,
                "expected a %s name (letters, digits, '-', '_', '.') or a path ending in .json, got %s", what, q);
    return NULL;
  }
  g_autoptr(GPtrArray) dirs = pn__io_search_dirs(base_dir, subdir);
  g_autofree char *file     = g_strconcat(ref, ".json", NULL);
  for (guint i = 0; i < dirs->len; i++) {
    char *p = g_build_filename(dirs->pdata[i], file, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_REGULAR))
      return p;
    g_free(p);
  }
  g_autofree char *avail = available_names(dirs);
  if (*avail != '\0') {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "unknown %s %s (available: %s)", what, q, avail);
  } else {
    g_autoptr(GString) searched = g_string_new(NULL);
    for (guint i = 0; i < dirs->len; i++)
      g_string_append_printf(searched, "%s%s", i ? ", " : "", (const char *)dirs->pdata[i]);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "unknown %s %s (no %s files found in: %s)", what, q, what,
                searched->len ? searched->str : "(no search directory; set PENUMBRA_DATA_DIR)");
  }
  return NULL;
}

char *pn_io_find_profile(const char *option, const char *ref, GError **error)
{
  g_return_val_if_fail(option != NULL && ref != NULL, NULL);
  /* the base directory a scenario built in memory gets (pn_scenario_load_string) */
  PnIoCtx ctx = {.file = option};
  return pn__io_resolve(&ctx, NULL, ref, ".", "hwprofiles", "hardware profile", error);
}
