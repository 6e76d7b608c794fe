/* out.c — output files and report directories (see out.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/out.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum {
  PN_OUT_STDOUT,   /* "-" */
  PN_OUT_IN_PLACE, /* a FIFO or a character device, written as it is */
  PN_OUT_REPLACE   /* a regular file or nothing: a temporary file renamed over it */
} PnOutKind;

/* What an output path comes to once its links are followed. */
typedef struct {
  PnOutKind kind;
  char *target;  /* the path written (path itself, or the end of its links) */
  bool replaces; /* PN_OUT_REPLACE over an existing file */
  mode_t mode;   /* that file's permission bits */
} PnOutTarget;

struct PnOut {
  char *path; /* the user's, for messages */
  PnOutTarget t;
  char *tmp; /* PN_OUT_REPLACE: "<target>.XXXXXX" */
  FILE *file;
  int err; /* errno of the first failed pn_out_write, 0 while none */
};

struct PnOutDir {
  char *path;
};

static const char *display(const char *path) { return strcmp(path, "-") == 0 ? "standard output" : path; }

static void G_GNUC_PRINTF(4, 5) fail(GError **error, const char *path, const char *target, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (target != NULL && strcmp(target, path) != 0)
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s -> %s: %s", path, target, msg);
  else
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "%s: %s", display(path), msg);
}

/* Follows the links at `path` to what stands at its end (*st, when *exists) or to the name that
 * would be created. Returns the target (g_free), or NULL with the error. */
static char *follow_links(const char *path, bool *exists, struct stat *st, GError **error)
{
  g_autofree char *p = g_strdup(path);
  for (int links = 0;; links++) {
    if (lstat(p, st) != 0) {
      int e = errno;
      if (e != ENOENT) {
        fail(error, path, p, "cannot write: %s", g_strerror(e));
        return NULL;
      }
      *exists = false;
      return g_steal_pointer(&p);
    }
    if (!S_ISLNK(st->st_mode)) {
      *exists = true;
      return g_steal_pointer(&p);
    }
    g_autoptr(GError) local = NULL;
    g_autofree char *to     = links < PN_OUT_MAX_LINKS ? g_file_read_link(p, &local) : NULL;
    if (to == NULL) {
      fail(error, path, NULL, "cannot write: %s", local ? local->message : "too many levels of symbolic links");
      return NULL;
    }
    if (!g_path_is_absolute(to)) {
      g_autofree char *dir = g_path_get_dirname(p);
      g_free(p);
      p = g_build_filename(dir, to, NULL);
    } else {
      g_free(p);
      p = g_steal_pointer(&to);
    }
  }
}

/* The directory that will hold the temporary file must exist and let a file be created. */
static gboolean check_dir_of(const char *path, const char *target, GError **error)
{
  g_autofree char *dir = g_path_get_dirname(target);
  struct stat st;
  if (stat(dir, &st) != 0) {
    int e = errno;
    if (e == ENOENT)
      fail(error, path, target, "directory %s does not exist", dir);
    else
      fail(error, path, target, "cannot write in directory %s: %s", dir, g_strerror(e));
    return FALSE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    int e = errno;
    fail(error, path, target, "cannot create a file in directory %s: %s", dir, g_strerror(e));
    return FALSE;
  }
  return TRUE;
}

static gboolean check(const char *path, PnOutTarget *t, GError **error)
{
  g_return_val_if_fail(path != NULL, FALSE);
  *t = (PnOutTarget){0};
  if (*path == '\0') {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "\"\": expected a file name (or - for standard output)");
    return FALSE;
  }
  if (strcmp(path, "-") == 0) {
    t->kind = PN_OUT_STDOUT;
    return TRUE;
  }
  bool exists = false;
  struct stat st;
  g_autofree char *target = follow_links(path, &exists, &st, error);
  if (target == NULL)
    return FALSE;
  if (!exists) {
    if (!check_dir_of(path, target, error))
      return FALSE;
    t->kind   = PN_OUT_REPLACE;
    t->target = g_steal_pointer(&target);
    return TRUE;
  }
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
    const char *what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    fail(error, path, target, "is %s, expected a file (a new or regular file, a FIFO, a character device or -)", what);
    return FALSE;
  }
  if (access(target, W_OK) != 0) {
    int e = errno;
    fail(error, path, target, "cannot write: %s", g_strerror(e));
    return FALSE;
  }
  if (S_ISREG(st.st_mode)) {
    if (!check_dir_of(path, target, error))
      return FALSE;
    t->kind     = PN_OUT_REPLACE;
    t->replaces = true;
    t->mode     = st.st_mode & 07777;
  } else {
    t->kind = PN_OUT_IN_PLACE;
  }
  t->target = g_steal_pointer(&target);
  return TRUE;
}

gboolean pn_out_check_path(const char *path, GError **error)
{
  PnOutTarget t;
  gboolean ok = check(path, &t, error);
  g_free(t.target);
  return ok;
}

static void out_free(PnOut *out)
{
  g_free(out->path);
  g_free(out->t.target);
  g_free(out->tmp);
  g_free(out);
}

PnOut *pn_out_open(const char *path, GError **error)
{
  PnOut *out = g_new0(PnOut, 1);
  out->path  = g_strdup(path);
  if (!check(path, &out->t, error)) {
    out_free(out);
    return NULL;
  }
  int fd = -1;
  if (out->t.kind == PN_OUT_STDOUT) {
    out->file = stdout;
    return out;
  }
  if (out->t.kind == PN_OUT_IN_PLACE) {
    fd = open(out->t.target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  } else {
    out->tmp = g_strconcat(out->t.target, ".XXXXXX", NULL);
    /* the mode a new file gets from a shell's `>` (0666 less the umask), or the replaced file's */
    fd = g_mkstemp_full(out->tmp, O_RDWR | O_CLOEXEC, 0666);
    if (fd >= 0 && out->t.replaces && fchmod(fd, out->t.mode) != 0) {
      int e = errno;
      close(fd);
      g_unlink(out->tmp);
      errno = e;
      fd    = -1;
    }
  }
  if (fd >= 0)
    out->file = fdopen(fd, "w");
  if (out->file == NULL) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    if (out->tmp != NULL)
      g_unlink(out->tmp);
    fail(error, path, out->t.target, "cannot write: %s", g_strerror(e));
    out_free(out);
    return NULL;
  }
  return out;
}

FILE *pn_out_file(PnOut *out) { return out->file; }

void pn_out_write(PnOut *out, const void *data, gsize len)
{
  if (len > 0 && fwrite(data, 1, len, out->file) != len && out->err == 0)
    out->err = errno != 0 ? errno : EIO;
}

/* errno of the first failure of what was written so far, after flushing it; 0 when none. */
static int flush(PnOut *out)
{
  int err = out->err;
  errno   = 0;
  if (fflush(out->file) != 0 && err == 0)
    err = errno != 0 ? errno : EIO;
  if (ferror(out->file) && err == 0)
    err = EIO; /* a failed write through pn_out_file, whose reason stdio does not keep */
  return err;
}

const char *pn_out_staged_path(PnOut *out)
{
  return out->t.kind == PN_OUT_REPLACE && flush(out) == 0 ? out->tmp : NULL;
}

gboolean pn_out_commit(PnOut *out, GError **error)
{
  int err = flush(out);
  if (out->t.kind != PN_OUT_STDOUT) {
    /* As g_file_set_contents: to disk before the rename only when an existing file is replaced,
     * so that a crash leaves the old content or the new, never an empty file in its place. */
    if (err == 0 && out->t.replaces && fsync(fileno(out->file)) != 0)
      err = errno;
    if (fclose(out->file) != 0 && err == 0)
      err = errno;
    if (err == 0 && out->tmp != NULL && g_rename(out->tmp, out->t.target) != 0)
      err = errno;
    if (err != 0 && out->tmp != NULL)
      g_unlink(out->tmp);
  }
  if (err != 0)
    fail(error, out->path, out->t.target, "cannot write: %s", g_strerror(err));
  out_free(out);
  return err == 0;
}

void pn_out_abort(PnOut *out)
{
  if (out == NULL)
    return;
  if (out->t.kind != PN_OUT_STDOUT)
    fclose(out->file);
  if (out->tmp != NULL)
    g_unlink(out->tmp);
  out_free(out);
}

gboolean pn_out_write_file(const char *path, const char *data, gsize len, GError **error)
{
  PnOut *out = pn_out_open(path, error);
  if (out == NULL)
    return FALSE;
  pn_out_write(out, data, len);
  return pn_out_commit(out, error);
}

/* ---- report directories ---- */

gboolean pn_out_dir_check_path(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, FALSE);
  if (*path == '\0') {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_FILE, "\"\": expected a directory name");
    return FALSE;
  }
  /* the directory itself, or its nearest existing ancestor, which must let it be created */
  g_autofree char *p = g_strdup(path);
  for (;;) {
    struct stat st;
    if (stat(p, &st) == 0) {
      bool self = strcmp(p, path) == 0;
      if (!S_ISDIR(st.st_mode)) {
        if (self)
          fail(error, path, NULL, "is not a directory, expected a directory (created when missing)");
        else
          fail(error, path, NULL, "cannot create it: %s is not a directory", p);
        return FALSE;
      }
      if (access(p, W_OK | X_OK) != 0) {
        int e = errno;
        if (self)
          fail(error, path, NULL, "cannot write in it: %s", g_strerror(e));
        else
          fail(error, path, NULL, "cannot create it in %s: %s", p, g_strerror(e));
        return FALSE;
      }
      return TRUE;
    }
    int e = errno;
    if (e != ENOENT && e != ENOTDIR) { /* ENOTDIR: a file on the way, found going up */
      fail(error, path, NULL, "cannot write: %s", g_strerror(e));
      return FALSE;
    }
    char *up = g_path_get_dirname(p);
    g_free(p);
    p = up; /* ends at "." or "/", which exist */
  }
}

PnOutDir *pn_out_dir_open(const char *path, GError **error)
{
  if (!pn_out_dir_check_path(path, error))
    return NULL;
  if (g_mkdir_with_parents(path, 0777) != 0) {
    int e = errno;
    fail(error, path, NULL, "cannot create it: %s", g_strerror(e));
    return NULL;
  }
  PnOutDir *dir = g_new0(PnOutDir, 1);
  dir->path     = g_strdup(path);
  return dir;
}

PnOut *pn_out_dir_file(const PnOutDir *dir, const char *name, GError **error)
{
  g_return_val_if_fail(name != NULL && *name != '\0' && strchr(name, '/') == NULL, NULL);
  g_autofree char *path = g_build_filename(dir->path, name, NULL);
  return pn_out_open(path, error);
}

const char *pn_out_dir_path(const PnOutDir *dir) { return dir->path; }

void pn_out_dir_free(PnOutDir *dir)
{
  if (dir == NULL)
    return;
  g_free(dir->path);
  g_free(dir);
}
