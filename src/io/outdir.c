/* outdir.c — a report directory written whole and put in place at once (out.h, PnOutStage). */
#define _GNU_SOURCE /* renameat2 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/out.h"

struct PnOutStage {
  char *path; /* the user's, trailing '/' removed */
  PnOutDir *dir;
  char *tmp;
};

static gboolean fail_errno(GError **error, const char *path, const char *what, int e)
{
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: %s: %s", path, what, g_strerror(e));
  return FALSE;
}

static char *strip(const char *path)
{
  char *p = g_strdup(path);
  for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
    p[n - 1] = '\0';
  return p;
}

/* Whether the directory `path` holds anything; -1 with errno when it cannot be read. */
static int has_entries(const char *path)
{
  GDir *d = g_dir_open(path, 0, NULL);
  if (d == NULL)
    return -1;
  int any = g_dir_read_name(d) != NULL;
  g_dir_close(d);
  return any;
}

gboolean pn_out_stage_check(const char *path, bool replace, GError **error)
{
  g_autofree char *p = strip(path);
  struct stat st;
  if (*p != '\0' && lstat(p, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: is not a directory, expected a directory (created)", p);
      return FALSE;
    }
    int any = has_entries(p);
    if (any < 0)
      return fail_errno(error, p, "cannot read it", errno);
    if (any && !replace) {
      g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: exists and is not empty (--force replaces it)", p);
      return FALSE;
    }
  }
  /* the temporary directory is made beside it: its parent (or nearest existing ancestor) must let it */
  g_autofree char *parent = g_path_get_dirname(p);
  if (!pn_out_dir_check_path(parent, error)) {
    g_prefix_error(error, "%s: ", p);
    return FALSE;
  }
  return TRUE;
}

PnOutStage *pn_out_stage_open(const char *path, bool replace, GError **error)
{
  if (!pn_out_stage_check(path, replace, error))
    return NULL;
  g_autofree char *p      = strip(path);
  g_autofree char *parent = g_path_get_dirname(p);
  if (g_mkdir_with_parents(parent, 0777) != 0)
    return fail_errno(error, p, "cannot create its parent", errno), NULL;
  char *tmp = g_strdup_printf("%s.XXXXXX", p);
  if (g_mkdtemp(tmp) == NULL) {
    int e = errno;
    g_free(tmp);
    return fail_errno(error, p, "cannot create a temporary directory beside it", e), NULL;
  }
  /* mkdtemp's 0700 would become the report's mode: give it what mkdir would */
  mode_t mask = umask(0);
  umask(mask);
  chmod(tmp, 0777 & ~mask);
  PnOutStage *s = g_new0(PnOutStage, 1);
  s->path       = g_steal_pointer(&p);
  s->tmp        = tmp;
  s->dir        = pn_out_dir_open(tmp, error);
  if (s->dir == NULL) {
    pn_out_stage_abort(s);
    return NULL;
  }
  return s;
}

const PnOutDir *pn_out_stage_dir(const PnOutStage *stage) { return stage->dir; }

/* Removes the tree at `path` (no link is followed). */
static void remove_tree(const char *path)
{
  struct stat st;
  if (lstat(path, &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    GDir *d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
      g_autofree char *child = g_build_filename(path, name, NULL);
      remove_tree(child);
    }
    if (d != NULL)
      g_dir_close(d);
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

static void stage_free(PnOutStage *s)
{
  pn_out_dir_free(s->dir);
  g_free(s->path);
  g_free(s->tmp);
  g_free(s);
}

gboolean pn_out_stage_commit(PnOutStage *s, GError **error)
{
  struct stat st;
  bool exists = lstat(s->path, &st) == 0;
  int rc      = exists && has_entries(s->path) > 0 ? renameat2(AT_FDCWD, s->tmp, AT_FDCWD, s->path, RENAME_EXCHANGE)
                                                   : rename(s->tmp, s->path);
  if (rc != 0) {
    fail_errno(error, s->path, "cannot put the report in place", errno);
    pn_out_stage_abort(s);
    return FALSE;
  }
  remove_tree(s->tmp); /* the old directory, after an exchange; nothing otherwise */
  stage_free(s);
  return TRUE;
}

void pn_out_stage_abort(PnOutStage *s)
{
  if (s == NULL)
    return;
  remove_tree(s->tmp);
  stage_free(s);
}
