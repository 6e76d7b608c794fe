/* jsonw.c — the streaming JSON writer (see jsonw.h). */
#include "io/jsonw.h"

#include <math.h>

#include "io/out.h"

typedef struct {
  char closer;
  bool block;
  bool has_items;
} Container;

struct PnJsonWriter {
  GString *buf;   /* the text, or (output writer) what is not yet written out */
  PnOut *out;     /* NULL: an in-memory writer */
  guint64 copied; /* bytes written out to `out` */
  int indent;
  int depth;    /* containers open */
  bool started; /* the top-level container was opened */
  Container open[PN_JSONW_MAX_DEPTH];
};

PnJsonWriter *pn_jsonw_new(int indent)
{
  g_return_val_if_fail(indent >= 0, NULL);
  PnJsonWriter *w = g_new0(PnJsonWriter, 1);
  w->buf          = g_string_new(NULL);
  w->indent       = indent;
  return w;
}

PnJsonWriter *pn_jsonw_new_out(PnOut *out, int indent)
{
  g_return_val_if_fail(out != NULL && indent >= 0, NULL);
  PnJsonWriter *w = g_new0(PnJsonWriter, 1);
  w->buf          = g_string_sized_new(PN_JSONW_FLUSH_BYTES + 4096);
  w->out          = out;
  w->indent       = indent;
  return w;
}

void pn_jsonw_free(PnJsonWriter *w)
{
  if (w == NULL)
    return;
  g_string_free(w->buf, TRUE);
  g_free(w);
}

char *pn_jsonw_free_to_string(PnJsonWriter *w)
{
  g_assert(w->out == NULL && w->started && w->depth == 0);
  char *text = g_string_free(w->buf, FALSE);
  g_free(w);
  return text;
}

guint64 pn_jsonw_bytes(const PnJsonWriter *w) { return w->copied + w->buf->len; }

static void copy_out(PnJsonWriter *w)
{
  pn_out_write(w->out, w->buf->str, w->buf->len);
  w->copied += w->buf->len;
  g_string_truncate(w->buf, 0);
}

void pn_jsonw_finish(PnJsonWriter *w)
{
  g_assert(w->out != NULL && w->started && w->depth == 0);
  copy_out(w);
  pn_jsonw_free(w);
}

static void flush_if_full(PnJsonWriter *w)
{
  if (w->out != NULL && w->buf->len >= PN_JSONW_FLUSH_BYTES)
    copy_out(w);
}

static void escape(GString *out, const char *s)
{
  /* keys and labels are ASCII: validated as UTF-8 only when a byte is not */
  const char *c = s;
  while (*c != '\0' && (unsigned char)*c < 0x80)
    c++;
  g_autofree char *valid = *c == '\0' || g_utf8_validate(c, -1, NULL) ? NULL : g_utf8_make_valid(s, -1);
  c                      = valid != NULL ? valid : s;
  g_string_append_c(out, '"');
  for (;;) {
    const char *run = c; /* bytes that go out as they are */
    while (*c != '\0' && *c != '"' && *c != '\\' && (unsigned char)*c >= 0x20 && *c != 0x7f)
      c++;
    g_string_append_len(out, run, c - run);
    switch (*c) {
    case '\0':
      g_string_append_c(out, '"');
      return;
    case '"':
      g_string_append(out, "\\\"");
      break;
    case '\\':
      g_string_append(out, "\\\\");
      break;
    case '\n':
      g_string_append(out, "\\n");
      break;
    case '\r':
      g_string_append(out, "\\r");
      break;
    case '\t':
      g_string_append(out, "\\t");
      break;
    default:
      g_string_append_printf(out, "\\u%04x", (unsigned char)*c);
    }
    c++;
  }
}

static void newline(PnJsonWriter *w, int level)
{
  g_string_append_c(w->buf, '\n');
  for (int i = 0; i < level * w->indent; i++)
    g_string_append_c(w->buf, ' ');
}

/* Starts a value: the top-level container, or a member (key) or element (NULL) of the open one. */
static void begin_value(PnJsonWriter *w, const char *key)
{
  flush_if_full(w);
  if (w->depth == 0) {
    g_assert(key == NULL && !w->started);
    w->started = true;
    return;
  }
  Container *c = &w->open[w->depth - 1];
  g_assert((key != NULL) == (c->closer == '}'));
  if (c->has_items)
    g_string_append_c(w->buf, ',');
  if (c->block)
    newline(w, w->depth);
  else if (c->has_items)
    g_string_append_c(w->buf, ' ');
  c->has_items = true;
  if (key != NULL) {
    escape(w->buf, key);
    g_string_append(w->buf, ": ");
  }
}

/* Starts a number, string or boolean: only inside a container. */
static void begin_scalar(PnJsonWriter *w, const char *key)
{
  g_assert(w->depth > 0);
  begin_value(w, key);
}

static void open_container(PnJsonWriter *w, const char *key, PnJsonLayout layout, char opener, char closer)
{
  begin_value(w, key);
  g_assert(w->depth < PN_JSONW_MAX_DEPTH);
  g_string_append_c(w->buf, opener);
  w->open[w->depth++] = (Container){.closer = closer, .block = layout == PN_JSONW_BLOCK};
}

void pn_jsonw_object(PnJsonWriter *w, const char *key, PnJsonLayout layout)
{
  open_container(w, key, layout, '{', '}');
}

void pn_jsonw_array(PnJsonWriter *w, const char *key, PnJsonLayout layout) { open_container(w, key, layout, '[', ']'); }

void pn_jsonw_end(PnJsonWriter *w)
{
  g_assert(w->depth > 0);
  const Container *c = &w->open[--w->depth];
  if (c->block && c->has_items)
    newline(w, w->depth);
  g_string_append_c(w->buf, c->closer);
  if (w->depth == 0)
    g_string_append_c(w->buf, '\n');
}

/* `v` through `format` (one conversion of a double) in the C locale; -0 as 0, non-finite as null. */
static void number(PnJsonWriter *w, const char *key, double v, const char *format)
{
  begin_scalar(w, key);
  if (!isfinite(v)) {
    g_string_append(w->buf, "null");
    return;
  }
  char buf[G_ASCII_DTOSTR_BUF_SIZE + 320]; /* "%.17f" of DBL_MAX has 309 + 18 characters */
  g_string_append(w->buf, g_ascii_formatd(buf, sizeof buf, format, v == 0.0 ? 0.0 : v));
}

void pn_jsonw_double(PnJsonWriter *w, const char *key, double v) { number(w, key, v, "%.9g"); }

void pn_jsonw_fixed(PnJsonWriter *w, const char *key, double v, int decimals)
{
  g_assert(decimals >= 0 && decimals <= 17);
  char format[8];
  g_snprintf(format, sizeof format, "%%.%df", decimals);
  number(w, key, v, format);
}

/* Decimal digits by hand: g_string_append_printf allocates a string per call, and a trace has
 * millions of integers. */
static void append_decimal(GString *out, uint64_t magnitude, bool negative)
{
  char digits[24];
  char *p = digits + sizeof digits;
  do {
    *--p = (char)('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude > 0);
  if (negative)
    *--p = '-';
  g_string_append_len(out, p, digits + sizeof digits - p);
}

void pn_jsonw_int(PnJsonWriter *w, const char *key, int64_t v)
{
  begin_scalar(w, key);
  append_decimal(w->buf, v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v, v < 0);
}

void pn_jsonw_uint(PnJsonWriter *w, const char *key, uint64_t v)
{
  begin_scalar(w, key);
  append_decimal(w->buf, v, false);
}

void pn_jsonw_bool(PnJsonWriter *w, const char *key, bool v)
{
  begin_scalar(w, key);
  g_string_append(w->buf, v ? "true" : "false");
}

void pn_jsonw_null(PnJsonWriter *w, const char *key)
{
  begin_scalar(w, key);
  g_string_append(w->buf, "null");
}

void pn_jsonw_string(PnJsonWriter *w, const char *key, const char *s)
{
  g_assert(s != NULL);
  begin_scalar(w, key);
  escape(w->buf, s);
}
