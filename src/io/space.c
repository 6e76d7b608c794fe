/* space.c — --vary arguments and --space files (space.h). */
#include "io/space.h"

#include <string.h>

#include "io/file.h"
#include "io/io-private.h"

void pn_space_entry_free(PnSpaceEntry *e)
{
  if (e == NULL)
    return;
  g_free(e->display);
  g_free(e->key);
  g_ptr_array_unref(e->values);
  g_free(e);
}

PnSpaceEntry *pn_space_entry_parse(const char *arg, GError **error)
{
  const char *eq = strchr(arg, '=');
  if (eq == NULL || eq == arg || eq[1] == '\0') {
    g_autofree char *q = pn__io_quote(arg);
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID, "--vary: expected KEY=VALUE[,VALUE...], got %s", q);
    return NULL;
  }
  PnSpaceEntry *e  = g_new0(PnSpaceEntry, 1);
  e->display       = g_strdup("--vary");
  e->key           = g_strndup(arg, eq - arg);
  e->values        = g_ptr_array_new_with_free_func(g_free);
  g_auto(GStrv) vs = g_strsplit(eq + 1, ",", -1);
  for (char **v = vs; *v != NULL; v++) {
    if (**v == '\0') {
      g_autofree char *q = pn__io_quote(e->key);
      g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_INVALID, "--vary: %s: an empty value in the list", q);
      pn_space_entry_free(e);
      return NULL;
    }
    g_ptr_array_add(e->values, g_strdup(*v));
  }
  return e;
}

static gboolean add_value(const PnIoCtx *ctx, const char *ptr, const cJSON *v, PnSpaceEntry *e, GError **error)
{
  if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a value or an array of values, got %s", got);
    return FALSE;
  }
  char *text = cJSON_PrintUnformatted(v);
  g_ptr_array_add(e->values, g_strdup(text));
  cJSON_free(text);
  return TRUE;
}

gboolean pn_space_file_load(const char *path, GPtrArray *out, GError **error)
{
  g_autofree char *buf = NULL;
  gsize len            = 0;
  cJSON *root          = NULL;
  if (!pn__io_read_file(path, path, &buf, &len, error) || !pn__io_parse_json(path, buf, len, &root, error))
    return FALSE;
  PnIoCtx ctx = {.file = path};
  gboolean ok = TRUE;
  if (!cJSON_IsObject(root) || root->child == NULL) {
    g_autofree char *got = pn__io_describe(root);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, "",
                "expected an object of scenario keys and their values ({\"parallel.tensor_model_parallel_size\": "
                "[2, 4]}), got %s",
                got);
    ok = FALSE;
  }
  for (const cJSON *item = ok ? root->child : NULL; item != NULL && ok; item = item->next) {
    g_autofree char *ptr = pn__io_ptr_child("", item->string);
    PnSpaceEntry *e      = g_new0(PnSpaceEntry, 1);
    e->display           = g_strdup_printf("%s: %s", path, ptr);
    e->key               = g_strdup(item->string);
    e->values            = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(out, e);
    if (cJSON_IsArray(item) && cJSON_GetArraySize(item) == 0) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, &ctx, ptr, "expected at least one value, got an empty array");
      ok = FALSE;
    }
    if (cJSON_IsArray(item))
      for (const cJSON *v = item->child; v != NULL && ok; v = v->next)
        ok = add_value(&ctx, ptr, v, e, error);
    else if (ok)
      ok = add_value(&ctx, ptr, item, e, error);
  }
  cJSON_Delete(root);
  return ok;
}
