/* baseline.c — the regression baseline's JSON (see baseline.h). */
#include "io/baseline.h"

#include <math.h>
#include <string.h>

#include "io/io-private.h"
#include "io/jsonw.h"

static const char *const metric_names[PN_METRIC_N] = {
    "model_tflops_per_gpu", "iteration_time_s",  "exposed_comm_s.dp", "exposed_comm_s.tp", "exposed_comm_s.pp",
    "exposed_comm_s.cp",    "exposed_comm_s.ep", "bubble_s",          "memory_gib_per_gpu"};

#define EXPOSED_PREFIX "exposed_comm_s."

const char *pn_metric_name(int m) { return m >= 0 && m < PN_METRIC_N ? metric_names[m] : NULL; }

int pn_metric_find(const char *name)
{
  for (int m = 0; m < PN_METRIC_N; m++)
    if (strcmp(name, metric_names[m]) == 0)
      return m;
  return -1;
}

void pn_metric_values(const PnResult *r, double out[PN_METRIC_N])
{
  out[PN_METRIC_TFLOPS]    = r->model_tflops_per_gpu;
  out[PN_METRIC_ITERATION] = r->iteration_time_s;
  for (int c = 0; c < PN_CLASS_N; c++)
    out[PN_METRIC_EXPOSED_DP + c] = r->exposed_comm_s[c];
  out[PN_METRIC_BUBBLE] = r->bubble_s;
  out[PN_METRIC_MEMORY] = r->memory.total_gib;
}

static void entry_clear(gpointer p)
{
  PnBaselineEntry *e = p;
  g_free(e->name);
  g_free(e->scenario_sha256);
  g_free(e->profile_sha256);
}

PnBaseline *pn_baseline_new(void)
{
  PnBaseline *b = g_new0(PnBaseline, 1);
  b->reason     = g_strdup("");
  b->version    = g_strdup("");
  b->commit     = g_strdup("");
  b->entries    = g_array_new(FALSE, TRUE, sizeof(PnBaselineEntry));
  g_array_set_clear_func(b->entries, entry_clear);
  return b;
}

void pn_baseline_free(PnBaseline *b)
{
  if (!b)
    return;
  g_free(b->reason);
  g_free(b->version);
  g_free(b->commit);
  g_array_unref(b->entries);
  g_free(b);
}

/* The index of `name`, or where it would go (*found false). */
static guint entry_index(const PnBaseline *b, const char *name, bool *found)
{
  guint lo = 0, hi = b->entries->len;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    int c     = strcmp(g_array_index(b->entries, PnBaselineEntry, mid).name, name);
    if (c == 0) {
      *found = true;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = false;
  return lo;
}

const PnBaselineEntry *pn_baseline_find(const PnBaseline *b, const char *name)
{
  bool found = false;
  guint i    = entry_index(b, name, &found);
  return found ? &g_array_index(b->entries, PnBaselineEntry, i) : NULL;
}

void pn_baseline_put(PnBaseline *b, const PnBaselineEntry *e)
{
  PnBaselineEntry copy = *e;
  copy.name            = g_strdup(e->name);
  copy.scenario_sha256 = g_strdup(e->scenario_sha256 ? e->scenario_sha256 : "");
  copy.profile_sha256  = g_strdup(e->profile_sha256 ? e->profile_sha256 : "");
  bool found           = false;
  guint i              = entry_index(b, e->name, &found);
  if (found)
    g_array_remove_index(b->entries, i);
  g_array_insert_val(b->entries, i, copy);
}

/* ---- reading ---- */

static gboolean get_string(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const char *key, bool required,
                           char **out, GError **error)
{
  const cJSON *v      = cJSON_GetObjectItemCaseSensitive(obj, key);
  g_autofree char *at = pn__io_ptr_child(ptr, key);
  const char *s       = NULL;
  if (v == NULL && !required)
    return TRUE;
  if (v == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, at, "missing: expected a string");
    return FALSE;
  }
  if (!pn__io_get_string(ctx, v, at, 4096, &s, error))
    return FALSE;
  g_free(*out);
  *out = g_strdup(s);
  return TRUE;
}

/* A metric's value at `ptr`: a finite number, present. */
static gboolean get_metric(const PnIoCtx *ctx, const cJSON *v, const char *ptr, double *out, GError **error)
{
  if (v == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "missing: expected a finite number");
    return FALSE;
  }
  return pn__io_get_double(ctx, v, ptr, -INFINITY, INFINITY, false, out, error);
}

/* Every key of `obj` must be one of `known` (n of them). */
static gboolean known_keys(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const char *const *known, gsize n,
                           GError **error)
{
  if (!cJSON_IsObject(obj)) {
    g_autofree char *got = pn__io_describe(obj);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected an object, got %s", got);
    return FALSE;
  }
  for (const cJSON *k = obj->child; k != NULL; k = k->next) {
    gsize i = 0;
    while (i < n && strcmp(k->string, known[i]) != 0)
      i++;
    if (i == n) {
      g_autofree char *at = pn__io_ptr_child(ptr, k->string);
      const char *near    = pn__io_suggest(k->string, known, n);
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, at, "unknown key%s%s%s", near ? " (did you mean \"" : "",
                  near ? near : "", near ? "\"?)" : "");
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean read_entry(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, PnBaselineEntry *e, GError **error)
{
  static const char *const keys[] = {"scenario_sha256", "profile_sha256", "model_tflops_per_gpu", "iteration_time_s",
                                     "exposed_comm_s",  "bubble_s",       "memory_gib_per_gpu"};
  if (!known_keys(ctx, obj, ptr, keys, G_N_ELEMENTS(keys), error) ||
      !get_string(ctx, obj, ptr, "scenario_sha256", true, &e->scenario_sha256, error) ||
      !get_string(ctx, obj, ptr, "profile_sha256", true, &e->profile_sha256, error))
    return FALSE;
  const cJSON *exposed         = cJSON_GetObjectItemCaseSensitive(obj, "exposed_comm_s");
  g_autofree char *exposed_ptr = pn__io_ptr_child(ptr, "exposed_comm_s");
  const char *classes[PN_CLASS_N];
  for (int c = 0; c < PN_CLASS_N; c++)
    classes[c] = pn_comm_class_name(c);
  if (exposed == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, exposed_ptr, "missing: expected an object of seconds by class");
    return FALSE;
  }
  if (!known_keys(ctx, exposed, exposed_ptr, classes, PN_CLASS_N, error))
    return FALSE;
  for (int m = 0; m < PN_METRIC_N; m++) {
    const char *name    = metric_names[m];
    const cJSON *parent = obj;
    const char *at      = ptr;
    if (g_str_has_prefix(name, EXPOSED_PREFIX)) {
      parent = exposed;
      at     = exposed_ptr;
      name += strlen(EXPOSED_PREFIX);
    }
    g_autofree char *vp = pn__io_ptr_child(at, name);
    if (!get_metric(ctx, cJSON_GetObjectItemCaseSensitive(parent, name), vp, &e->value[m], error))
      return FALSE;
  }
  return TRUE;
}

static gboolean read_root(const PnIoCtx *ctx, const cJSON *root, PnBaseline *b, GError **error)
{
  static const char *const keys[]   = {"schema_version", "updated", "scenarios"};
  static const char *const upkeys[] = {"reason", "version", "commit"};
  int64_t schema                    = 0;
  if (!known_keys(ctx, root, "", keys, G_N_ELEMENTS(keys), error))
    return FALSE;
  const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
  if (sv == NULL) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/schema_version", "missing: expected 1");
    return FALSE;
  }
  if (!pn__io_get_int(ctx, sv, "/schema_version", 1, 1, false, &schema, error))
    return FALSE;
  const cJSON *up = cJSON_GetObjectItemCaseSensitive(root, "updated");
  if (up != NULL && (!known_keys(ctx, up, "/updated", upkeys, G_N_ELEMENTS(upkeys), error) ||
                     !get_string(ctx, up, "/updated", "reason", false, &b->reason, error) ||
                     !get_string(ctx, up, "/updated", "version", false, &b->version, error) ||
                     !get_string(ctx, up, "/updated", "commit", false, &b->commit, error)))
    return FALSE;
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(root, "scenarios");
  if (!cJSON_IsObject(sc)) {
    g_autofree char *got = pn__io_describe(sc);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, "/scenarios", "expected an object of scenarios by name, got %s",
                sc ? got : "nothing");
    return FALSE;
  }
  for (const cJSON *s = sc->child; s != NULL; s = s->next) {
    g_autofree char *ptr = pn__io_ptr_child("/scenarios", s->string);
    PnBaselineEntry e    = {.name = s->string};
    gboolean ok          = read_entry(ctx, s, ptr, &e, error);
    if (ok)
      pn_baseline_put(b, &e);
    g_free(e.scenario_sha256);
    g_free(e.profile_sha256);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

PnBaseline *pn_baseline_load(const char *path, GError **error)
{
  cJSON *root = NULL;
  if (!pn__io_read_json(path, path, &root, error))
    return NULL;
  PnIoCtx ctx             = {.file = path};
  g_autoptr(PnBaseline) b = pn_baseline_new();
  gboolean ok             = read_root(&ctx, root, b, error);
  cJSON_Delete(root);
  return ok ? g_steal_pointer(&b) : NULL;
}

/* ---- writing ---- */

char *pn_baseline_json(const PnBaseline *b)
{
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_int(w, "schema_version", 1);
  pn_jsonw_object(w, "updated", PN_JSONW_BLOCK);
  pn_jsonw_string(w, "reason", b->reason);
  pn_jsonw_string(w, "version", b->version);
  pn_jsonw_string(w, "commit", b->commit);
  pn_jsonw_end(w);
  pn_jsonw_object(w, "scenarios", PN_JSONW_BLOCK);
  for (guint i = 0; i < b->entries->len; i++) {
    const PnBaselineEntry *e = &g_array_index(b->entries, PnBaselineEntry, i);
    pn_jsonw_object(w, e->name, PN_JSONW_BLOCK);
    pn_jsonw_string(w, "scenario_sha256", e->scenario_sha256);
    pn_jsonw_string(w, "profile_sha256", e->profile_sha256);
    pn_jsonw_double(w, "model_tflops_per_gpu", e->value[PN_METRIC_TFLOPS]);
    pn_jsonw_double(w, "iteration_time_s", e->value[PN_METRIC_ITERATION]);
    pn_jsonw_object(w, "exposed_comm_s", PN_JSONW_INLINE);
    for (int c = 0; c < PN_CLASS_N; c++)
      pn_jsonw_double(w, pn_comm_class_name(c), e->value[PN_METRIC_EXPOSED_DP + c]);
    pn_jsonw_end(w);
    pn_jsonw_double(w, "bubble_s", e->value[PN_METRIC_BUBBLE]);
    pn_jsonw_double(w, "memory_gib_per_gpu", e->value[PN_METRIC_MEMORY]);
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
}
