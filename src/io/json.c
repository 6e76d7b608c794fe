/* json.c — safe JSON parsing, one-line error messages with JSON pointers, did-you-mean, and the
 * table-driven conversion of JSON objects into C structs (see io-private.h). */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "io/io-private.h"

/* Integers beyond 2^53 are not exactly representable in JSON's double. */
#define PN_IO_MAX_EXACT_INT 9007199254740992.0

/* ---- echoing input ---- */

/* Appends at most `max_chars` characters of `s` (`len` bytes, NULs allowed) to `out` so that they
 * print on one line: control and other non-printing characters as \uXXXX (a surrogate pair
 * beyond the BMP), bytes that are not UTF-8 as \xNN and, when `quoted`, '"' and '\' as \" and \\.
 * Returns whether it cut. */
static gboolean echo_chars(GString *out, const char *s, gsize len, gsize max_chars, gboolean quoted)
{
  gsize i = 0;
  for (gsize n = 0; i < len; n++) {
    if (n == max_chars)
      return TRUE;
    unsigned char b = (unsigned char)s[i];
    if (b < 0x80) {
      if (quoted && (b == '"' || b == '\\'))
        g_string_append_printf(out, "\\%c", b);
      else if (b < 0x20 || b == 0x7f)
        g_string_append_printf(out, "\\u%04x", b);
      else
        g_string_append_c(out, (char)b);
      i++;
      continue;
    }
    gunichar c = g_utf8_get_char_validated(s + i, (gssize)(len - i));
    if (c == (gunichar)-1 || c == (gunichar)-2) {
      g_string_append_printf(out, "\\x%02x", b);
      i++;
      continue;
    }
    gsize w = (gsize)g_utf8_skip[b];
    if (g_unichar_isprint(c))
      g_string_append_len(out, s + i, (gssize)w);
    else if (c <= 0xFFFF)
      g_string_append_printf(out, "\\u%04x", c);
    else
      g_string_append_printf(out, "\\u%04x\\u%04x", 0xD800 + ((c - 0x10000) >> 10), 0xDC00 + ((c - 0x10000) & 0x3FF));
    i += w;
  }
  return FALSE;
}

void pn__io_echo(GString *out, const char *s, gsize len)
{
  g_string_append_c(out, '"');
  if (echo_chars(out, s, len, PN_IO_ECHO_CHARS, TRUE))
    g_string_append_printf(out, "...\" (%" G_GSIZE_FORMAT " bytes)", len);
  else
    g_string_append_c(out, '"');
}

char *pn__io_quote(const char *s)
{
  GString *out = g_string_new(NULL);
  pn__io_echo(out, s, strlen(s));
  return g_string_free(out, FALSE);
}

char *pn_io_quote(const char *s) { return pn__io_quote(s); }

/* One segment of a pointer as a message shows it: unquoted, cut like a quoted echo. */
static void echo_segment(GString *out, const char *seg, gsize len)
{
  if (echo_chars(out, seg, len, PN_IO_ECHO_CHARS, FALSE))
    g_string_append_printf(out, "... (%" G_GSIZE_FORMAT " bytes)", len);
}

/* The key `key` (`len` bytes, NULs allowed) as a pointer segment (RFC 6901: '~' is "~0", '/' is
 * "~1"), shown. */
static void echo_key(GString *out, const char *key, gsize len)
{
  g_autoptr(GString) seg = g_string_sized_new(len);
  for (gsize i = 0; i < len; i++) {
    if (key[i] == '~')
      g_string_append(seg, "~0");
    else if (key[i] == '/')
      g_string_append(seg, "~1");
    else
      g_string_append_c(seg, key[i]);
  }
  echo_segment(out, seg->str, seg->len);
}

/* A pointer as messages show it: each segment shown ("/" for the root). */
static void echo_ptr(GString *out, const char *ptr)
{
  if (*ptr == '\0') {
    g_string_append_c(out, '/');
    return;
  }
  while (*ptr == '/') {
    const char *seg = ptr + 1, *end = strchr(seg, '/');
    gsize n = end ? (gsize)(end - seg) : strlen(seg);
    g_string_append_c(out, '/');
    echo_segment(out, seg, n);
    ptr = seg + n;
  }
}

/* ---- messages ---- */

const char *pn__io_ctx_file(const PnIoCtx *ctx, const char *ptr)
{
  if (ctx->set_paths != NULL && ptr != NULL) {
    /* ptr or one of its ancestors ("/a/b" -> "/a/b", "/a") was written by --set */
    g_autofree char *p = g_strdup(ptr);
    for (;;) {
      if (g_hash_table_contains(ctx->set_paths, p))
        return "--set";
      char *slash = strrchr(p, '/');
      if (slash == NULL || slash == p)
        break;
      *slash = '\0';
    }
  }
  return ctx->file;
}

void pn__io_fail(GError **error, PnIoError code, const PnIoCtx *ctx, const char *ptr, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  const char *file = pn__io_ctx_file(ctx, ptr);
  if (ptr == NULL) {
    g_set_error(error, PN_IO_ERROR, code, "%s: %s", file, msg);
    return;
  }
  g_autoptr(GString) shown = g_string_new(NULL);
  echo_ptr(shown, ptr);
  g_set_error(error, PN_IO_ERROR, code, "%s: %s: %s", file, shown->str, msg);
}

char *pn__io_ptr_child(const char *ptr, const char *key)
{
  GString *out = g_string_new(ptr);
  g_string_append_c(out, '/');
  for (const char *c = key; *c; c++) {
    if (*c == '~')
      g_string_append(out, "~0");
    else if (*c == '/')
      g_string_append(out, "~1");
    else
      g_string_append_c(out, *c);
  }
  return g_string_free(out, FALSE);
}

char *pn__io_ptr_index(const char *ptr, gsize i) { return g_strdup_printf("%s/%" G_GSIZE_FORMAT, ptr, i); }

const char *pn__io_type_name(const cJSON *v)
{
  if (cJSON_IsString(v))
    return "a string";
  if (cJSON_IsNumber(v))
    return "a number";
  if (cJSON_IsBool(v))
    return "a boolean";
  if (cJSON_IsNull(v))
    return "null";
  if (cJSON_IsArray(v))
    return "an array";
  if (cJSON_IsObject(v))
    return "an object";
  return "an invalid value";
}

char *pn__io_describe(const cJSON *v)
{
  if (cJSON_IsString(v))
    return pn__io_quote(v->valuestring);
  if (cJSON_IsNumber(v)) {
    if (!isfinite(v->valuedouble))
      return g_strdup("a number out of range (not finite)");
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup(g_ascii_formatd(buf, sizeof buf, "%.15g", v->valuedouble));
  }
  if (cJSON_IsTrue(v))
    return g_strdup("true");
  if (cJSON_IsFalse(v))
    return g_strdup("false");
  return g_strdup(pn__io_type_name(v));
}

/* Optimal-string-alignment distance (Damerau-Levenshtein with adjacent transpositions),
 * case-insensitive. Keys are short; O(|a|*|b|) with three rows. */
static gsize osa_distance(const char *a, const char *b)
{
  gsize na = strlen(a), nb = strlen(b);
  if (na > 128 || nb > 128)
    return G_MAXSIZE;
  gsize rows[3][130];
  gsize *pp = rows[0], *p = rows[1], *c = rows[2];
  for (gsize j = 0; j <= nb; j++)
    p[j] = j;
  for (gsize i = 1; i <= na; i++) {
    c[0] = i;
    for (gsize j = 1; j <= nb; j++) {
      char ai = g_ascii_tolower(a[i - 1]), bj = g_ascii_tolower(b[j - 1]);
      gsize cost = ai == bj ? 0 : 1;
      gsize v    = MIN(MIN(p[j] + 1, c[j - 1] + 1), p[j - 1] + cost);
      if (i > 1 && j > 1 && ai == g_ascii_tolower(b[j - 2]) && g_ascii_tolower(a[i - 2]) == bj)
        v = MIN(v, pp[j - 2] + 1);
      c[j] = v;
    }
    gsize *t = pp;
    pp       = p;
    p        = c;
    c        = t;
  }
  return p[nb];
}

const char *pn__io_suggest(const char *key, const char *const *known, gsize n)
{
  gsize len        = strlen(key);
  gsize limit      = len <= 4 ? 1 : len <= 8 ? 2 : MAX(3, len / 3);
  const char *best = NULL;
  gsize best_d     = G_MAXSIZE;
  for (gsize i = 0; i < n; i++) {
    gsize d = osa_distance(key, known[i]);
    if (d < best_d) {
      best_d = d;
      best   = known[i];
    }
  }
  return best_d <= limit ? best : NULL;
}

/* ---- parsing ---- */

/* 1-based line and column (in characters) of byte `pos` of `buf`. */
static void line_col(const char *buf, gsize pos, gsize *line, gsize *col)
{
  gsize l = 1, c = 1;
  for (gsize i = 0; i < pos; i++) {
    if (buf[i] == '\n') {
      l++;
      c = 1;
    } else if (((unsigned char)buf[i] & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *col  = c;
}

G_GNUC_PRINTF(5, 6)
static void fail_at(GError **error, const char *display, const char *buf, gsize pos, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  gsize line, col;
  line_col(buf, pos, &line, &col);
  g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_PARSE, "%s:%" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT ": %s", display, line,
              col, msg);
}

/* Structure scan before cJSON: finds unclosed strings and brackets (truncated files), mismatched
 * brackets and nesting deeper than PN_IO_MAX_DEPTH, with positions a user can go to. */
static gboolean prescan(const char *display, const char *buf, gsize len, GError **error)
{
  gsize open_pos[PN_IO_MAX_DEPTH];
  char open_ch[PN_IO_MAX_DEPTH];
  int depth = 0;
  for (gsize i = 0; i < len; i++) {
    char c = buf[i];
    if (c == '"') {
      gsize start = i;
      for (i++; i < len && buf[i] != '"'; i++) {
        if (buf[i] == '\\')
          i++;
        else if (buf[i] == '\n') {
          fail_at(error, display, buf, start, "string is not closed before the end of the line");
          return FALSE;
        }
      }
      if (i >= len) {
        gsize l, col;
        line_col(buf, start, &l, &col);
        fail_at(error, display, buf, len,
                "unexpected end of input: the string starting at %" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT
                " is never closed",
                l, col);
        return FALSE;
      }
    } else if (c == '{' || c == '[') {
      if (depth == PN_IO_MAX_DEPTH) {
        fail_at(error, display, buf, i, "nesting deeper than %d levels", PN_IO_MAX_DEPTH);
        return FALSE;
      }
      open_pos[depth] = i;
      open_ch[depth]  = c;
      depth++;
    } else if (c == '}' || c == ']') {
      if (depth == 0)
        continue; /* cJSON reports it */
      char want = open_ch[depth - 1] == '{' ? '}' : ']';
      if (c != want) {
        gsize l, col;
        line_col(buf, open_pos[depth - 1], &l, &col);
        fail_at(error, display, buf, i, "'%c' does not close the '%c' at %" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT, c,
                open_ch[depth - 1], l, col);
        return FALSE;
      }
      depth--;
    }
  }
  if (depth > 0) {
    gsize l, col;
    line_col(buf, open_pos[depth - 1], &l, &col);
    fail_at(error, display, buf, len,
            "unexpected end of input: the '%c' at %" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT " is never closed",
            open_ch[depth - 1], l, col);
    return FALSE;
  }
  return TRUE;
}

/* A hint for the common mistakes at a syntax error position. */
static const char *syntax_hint(const char *buf, gsize pos, gsize len)
{
  const char *p = buf + pos;
  if (pos >= len)
    return "unexpected end of input";
  if (*p == '\'')
    return "strings and keys need double quotes";
  if (*p == '\\')
    return "invalid escape sequence in a string (a backslash is written \\\\)";
  if (*p == '/' || *p == '#')
    return "comments are not allowed in JSON";
  if (g_str_has_prefix(p, "NaN") || g_str_has_prefix(p, "Infinity") || g_str_has_prefix(p, "-Infinity") ||
      g_ascii_strncasecmp(p, "nan", 3) == 0 || g_ascii_strncasecmp(p, "inf", 3) == 0)
    return "NaN and Infinity are not JSON numbers";
  if (*p == '}' || *p == ']') {
    gsize i = pos;
    while (i > 0 && g_ascii_isspace(buf[i - 1]))
      i--;
    if (i > 0 && buf[i - 1] == ',')
      return "trailing comma";
  }
  return NULL;
}

/* cJSON reports a missing object key one byte past the offending character ({"a": 1,} points
 * after the '}'); move back onto it when the context says a key was expected. */
static gsize error_position(const char *buf, gsize start, gsize pos)
{
  if (pos <= start)
    return pos;
  gsize q = pos - 1;
  char c  = buf[q];
  if (c == '"' || g_ascii_isspace(c))
    return pos;
  gsize i = q;
  while (i > start && g_ascii_isspace(buf[i - 1]))
    i--;
  if (i == start)
    return pos;
  char prev       = buf[i - 1];
  bool value_char = g_ascii_isalnum(c) || c == '-' || c == '.' || c == '+';
  if (prev == '{' || (prev == ',' && !value_char))
    return q;
  return pos;
}

/* The code unit of the escape \uXXXX at `p` (`n` bytes left), or -1 when there is none. */
static long escape_at(const char *p, gsize n)
{
  if (n < 6 || p[0] != '\\' || p[1] != 'u')
    return -1;
  long v = 0;
  for (int i = 2; i < 6; i++) {
    int d = g_ascii_xdigit_value(p[i]);
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* What is wrong with a \u escape cJSON refused at `pos`: a UTF-16 surrogate without its other
 * half encodes no character (JSON text is UTF-8 here, so a pair is only an escape's way to write
 * a character beyond the BMP). NULL when the escape is not a lone surrogate. */
static char *lone_surrogate(const char *buf, gsize pos, gsize len)
{
  long u = escape_at(buf + pos, len - pos);
  if (u >= 0xD800 && u <= 0xDBFF) {
    long lo = escape_at(buf + pos + 6, len - pos - 6);
    if (lo >= 0xDC00 && lo <= 0xDFFF)
      return NULL;
    return g_strdup_printf("lone UTF-16 surrogate \\u%04lx (a high surrogate, \\ud800-\\udbff, must be followed by a "
                           "low one, \\udc00-\\udfff)",
                           u);
  }
  if (u >= 0xDC00 && u <= 0xDFFF)
    return g_strdup_printf(
        "lone UTF-16 surrogate \\u%04lx (a low surrogate, \\udc00-\\udfff, must follow a high one, \\ud800-\\udbff)",
        u);
  return NULL;
}

/* The message for text cJSON refused, with cJSON's error position `end`. */
static void fail_syntax(GError **error, const char *display, const char *buf, gsize start, gsize len, const char *end)
{
  gsize pos             = end != NULL && end >= buf + start && end <= buf + len ? (gsize)(end - buf) : start;
  g_autofree char *surr = lone_surrogate(buf, pos, len);
  if (surr != NULL) {
    fail_at(error, display, buf, pos, "%s", surr);
    return;
  }
  pos              = error_position(buf, start, pos);
  const char *hint = syntax_hint(buf, pos, len);
  if (hint == NULL) {
    /* a value that parses when what follows it is ignored: text after the top-level value */
    cJSON *prefix = cJSON_ParseWithLengthOpts(buf + start, len - start + 1, NULL, FALSE);
    if (prefix != NULL)
      hint = "text after the end of the top-level value";
    cJSON_Delete(prefix);
  }
  if (pos >= len) {
    fail_at(error, display, buf, pos, "invalid JSON: %s", hint ? hint : "unexpected end of input");
    return;
  }
  /* the text there: up to 24 characters of the rest of its line */
  gsize n = 0;
  while (pos + n < len && buf[pos + n] != '\n' && buf[pos + n] != '\r')
    n++;
  g_autoptr(GString) at = g_string_new("\"");
  if (echo_chars(at, buf + pos, n, 24, TRUE))
    g_string_append(at, "...");
  g_string_append_c(at, '"');
  if (hint != NULL)
    fail_at(error, display, buf, pos, "invalid JSON at %s: %s", at->str, hint);
  else
    fail_at(error, display, buf, pos, "invalid JSON at %s", at->str);
}

/* ---- what cJSON accepts and penumbra does not ---- */

/* Four hex digits as cJSON reads them (parse_hex4): a value, or 0 when any is not a hex digit. */
static long hex4_as_cjson(const char *p)
{
  long v = 0;
  for (int i = 0; i < 4; i++) {
    int d = g_ascii_xdigit_value(p[i]);
    if (d < 0)
      return 0;
    v = v * 16 + d;
  }
  return v;
}

/* Decodes the string literal at t[*i] (its opening quote) of `len` bytes of text cJSON has parsed
 * into `out`, NULs included, and moves *i past its closing quote. Returns whether it holds a NUL.
 * It reads as cJSON does: the literal ends at the first quote no backslash escapes, and a \u
 * whose four characters are not all hex digits is a NUL (cJSON's parse_hex4 gives 0); nothing is
 * read past the closing quote. */
static gboolean decode_string(const char *t, gsize len, gsize *i, GString *out)
{
  gsize end = *i + 1;
  while (end < len && t[end] != '"')
    end += t[end] == '\\' ? 2 : 1;
  end          = MIN(end, len);
  gboolean nul = FALSE;
  gsize p      = *i + 1;
  g_string_truncate(out, 0);
  while (p < end) {
    if (t[p] != '\\' || p + 1 >= end) {
      g_string_append_c(out, t[p++]);
      continue;
    }
    char e = t[p + 1];
    p += 2;
    switch (e) {
    case 'b':
      g_string_append_c(out, '\b');
      break;
    case 'f':
      g_string_append_c(out, '\f');
      break;
    case 'n':
      g_string_append_c(out, '\n');
      break;
    case 'r':
      g_string_append_c(out, '\r');
      break;
    case 't':
      g_string_append_c(out, '\t');
      break;
    case 'u': {
      if (p + 4 > end) { /* cJSON refuses a short escape: not reached in text it parsed */
        p = end;
        break;
      }
      long c = hex4_as_cjson(t + p);
      p += 4;
      if (c >= 0xD800 && c <= 0xDBFF && p + 6 <= end && t[p] == '\\' && t[p + 1] == 'u') {
        /* cJSON accepted it: a low surrogate follows */
        c = 0x10000 + ((c - 0xD800) << 10) + (hex4_as_cjson(t + p + 2) - 0xDC00);
        p += 6;
      }
      if (c == 0) {
        nul = TRUE;
        g_string_append_c(out, '\0');
      } else if (g_unichar_validate((gunichar)c)) {
        g_string_append_unichar(out, (gunichar)c);
      }
      break;
    }
    default: /* '"', '\\', '/' */
      g_string_append_c(out, e);
      break;
    }
  }
  *i = end + 1;
  return nul;
}

/* A container the scan below is in: an object with the key of its current member, or an array
 * with the index of its current element. */
typedef struct {
  bool object;
  gsize index;
  GString *key;
} ScanFrame;

static void scan_frame_clear(gpointer p) { g_string_free(((ScanFrame *)p)->key, TRUE); }

/* cJSON ends a C string at a NUL, so "bf16\u0000junk" would read as "bf16". Scans `t` (`len`
 * bytes of text cJSON has parsed, whose root is at pointer `base` of `file`) for a string or key
 * holding one and names it by its pointer. */
static gboolean check_nul(const char *file, const char *base, const char *t, gsize len, GError **error)
{
  g_autoptr(GArray) frames = g_array_new(FALSE, FALSE, sizeof(ScanFrame));
  g_array_set_clear_func(frames, scan_frame_clear);
  g_autoptr(GString) str = g_string_new(NULL);
  bool want_key          = false;
  for (gsize i = 0; i < len;) {
    char c         = t[i];
    ScanFrame *top = frames->len ? &g_array_index(frames, ScanFrame, frames->len - 1) : NULL;
    if (c == '{' || c == '[') {
      ScanFrame f = {.object = c == '{', .key = g_string_new(NULL)};
      g_array_append_val(frames, f);
      want_key = f.object;
    } else if (c == '}' || c == ']') {
      g_array_set_size(frames, frames->len - 1);
    } else if (c == ',') {
      want_key = top->object;
      top->index++;
    } else if (c == '"') {
      bool is_key = want_key;
      want_key    = false;
      if (!decode_string(t, len, &i, str)) {
        if (is_key) {
          g_string_truncate(top->key, 0);
          g_string_append_len(top->key, str->str, (gssize)str->len);
        }
        continue;
      }
      g_autoptr(GString) msg = g_string_new(NULL);
      if (*base != '\0')
        echo_ptr(msg, base);
      for (guint k = 0; k < frames->len; k++) {
        const ScanFrame *f = &g_array_index(frames, ScanFrame, k);
        g_string_append_c(msg, '/');
        if (!f->object)
          g_string_append_printf(msg, "%" G_GSIZE_FORMAT, f->index);
        else if (is_key && k == frames->len - 1)
          echo_key(msg, str->str, str->len);
        else
          echo_key(msg, f->key->str, f->key->len);
      }
      if (msg->len == 0)
        g_string_append_c(msg, '/'); /* the root itself */
      if (is_key) {
        g_string_append(msg, ": expected a key without NUL characters (\\u0000)");
      } else {
        g_string_append(msg, ": expected a string without NUL characters (\\u0000), got ");
        pn__io_echo(msg, str->str, str->len);
      }
      g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_PARSE, "%s: %s", file, msg->str);
      return FALSE;
    }
    i++;
  }
  return TRUE;
}

/* The path from the tree's root down to a node, innermost first. */
typedef struct WalkFrame {
  const struct WalkFrame *up;
  const cJSON *node;
} WalkFrame;

static void echo_walk(GString *out, const char *base, const WalkFrame *f)
{
  if (f->up == NULL) {
    if (*base != '\0')
      echo_ptr(out, base);
    return;
  }
  echo_walk(out, base, f->up);
  g_string_append_c(out, '/');
  if (cJSON_IsObject(f->up->node)) {
    echo_key(out, f->node->string, strlen(f->node->string));
    return;
  }
  gsize i = 0;
  for (const cJSON *c = f->up->node->child; c != f->node; c = c->next)
    i++;
  g_string_append_printf(out, "%" G_GSIZE_FORMAT, i);
}

/* cJSON keeps both members of a key written twice, and lookups find the first: a second one
 * would be silently ignored. Refused in every object, with the second one's pointer. */
static gboolean check_dups(const char *file, const char *base, const WalkFrame *here, GError **error)
{
  const cJSON *node          = here->node;
  const cJSON *dup           = NULL;
  g_autoptr(GHashTable) seen = NULL;
  gsize n                    = 0;
  for (const cJSON *c = cJSON_IsObject(node) ? node->child : NULL; c != NULL && dup == NULL; c = c->next, n++) {
    if (n == 16) { /* a long object: a set of the keys so far, not a quadratic scan */
      seen = g_hash_table_new(g_str_hash, g_str_equal);
      for (const cJSON *d = node->child; d != c; d = d->next)
        g_hash_table_add(seen, d->string);
    }
    if (seen != NULL) {
      if (!g_hash_table_add(seen, c->string))
        dup = c;
      continue;
    }
    for (const cJSON *d = node->child; d != c && dup == NULL; d = d->next)
      if (strcmp(d->string, c->string) == 0)
        dup = c;
  }
  if (dup != NULL) {
    WalkFrame at             = {here, dup};
    g_autoptr(GString) shown = g_string_new(NULL);
    echo_walk(shown, base, &at);
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_SCHEMA, "%s: %s: duplicate key", file, shown->str);
    return FALSE;
  }
  for (const cJSON *c = node->child; c != NULL; c = c->next) {
    WalkFrame below = {here, c};
    if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && !check_dups(file, base, &below, error))
      return FALSE;
  }
  return TRUE;
}

/* The checks of a tree cJSON parsed from `len` bytes at `text`, its root at pointer `base`. */
static gboolean check_parsed(const char *file, const char *base, const char *text, gsize len, const cJSON *root,
                             GError **error)
{
  if (g_strstr_len(text, (gssize)len, "\\u0000") != NULL && !check_nul(file, base, text, len, error))
    return FALSE;
  WalkFrame top = {NULL, root};
  return check_dups(file, base, &top, error);
}

/* What cJSON also accepts, on purpose: -0 (zero; the getters read it as +0), numbers
 * beyond the range of a double (they read as infinity, which every getter refuses as "not
 * finite") and integers beyond 2^53 (refused as integers; they are not exact in a double), and
 * a UTF-8 byte-order mark before the text (skipped, as some editors write one). */
gboolean pn__io_parse_json(const char *display, const char *buf, gsize len, cJSON **out, GError **error)
{
  g_assert(buf[len] == '\0');
  if (len == 0) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_PARSE, "%s: file is empty, expected a JSON object", display);
    return FALSE;
  }
  const char *nul = memchr(buf, '\0', len);
  if (nul != NULL) {
    fail_at(error, display, buf, (gsize)(nul - buf), "NUL byte in the text (is this a binary file?)");
    return FALSE;
  }
  const char *bad = NULL;
  if (!g_utf8_validate_len(buf, len, &bad)) {
    fail_at(error, display, buf, (gsize)(bad - buf), "invalid UTF-8 (is this a binary file?)");
    return FALSE;
  }
  gsize start = 0;
  if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
    start = 3; /* a UTF-8 byte-order mark some editors write */
  gsize i = start;
  while (i < len && g_ascii_isspace(buf[i]))
    i++;
  if (i == len) {
    g_set_error(error, PN_IO_ERROR, PN_IO_ERROR_PARSE, "%s: file holds only whitespace, expected a JSON object",
                display);
    return FALSE;
  }
  if (!prescan(display, buf, len, error))
    return FALSE;
  const char *end = NULL;
  /* length includes the terminating NUL: cJSON then requires nothing but whitespace after the value */
  cJSON *root = cJSON_ParseWithLengthOpts(buf + start, len - start + 1, &end, TRUE);
  if (root == NULL) {
    fail_syntax(error, display, buf, start, len, end);
    return FALSE;
  }
  if (!check_parsed(display, "", buf + start, len - start, root, error)) {
    cJSON_Delete(root);
    return FALSE;
  }
  *out = root;
  return TRUE;
}

gboolean pn__io_parse_set_value(const char *ptr, const char *text, cJSON **out, GError **error)
{
  *out     = NULL;
  cJSON *v = cJSON_ParseWithOpts(text, NULL, TRUE);
  if (v == NULL)
    return TRUE;
  if (!check_parsed("--set", ptr, text, strlen(text), v, error)) {
    cJSON_Delete(v);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

/* ---- values ---- */

static char *int_expectation(int64_t min, int64_t max, bool absurd, bool nullable)
{
  const char *null = nullable ? " or null" : "";
  if (absurd && min == 1)
    return g_strdup_printf("a positive integer%s", null);
  if (absurd && min == 0)
    return g_strdup_printf("a non-negative integer%s", null);
  return g_strdup_printf("an integer from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT "%s", min, max, null);
}

static gboolean get_int_impl(const PnIoCtx *ctx, const cJSON *v, const char *ptr, int64_t min, int64_t max, bool absurd,
                             bool nullable, int64_t *out, GError **error)
{
  /* The checks first, the messages only on failure: profiles hold thousands of numbers, and
   * formatting each one eagerly was most of their load time. */
  double d = cJSON_IsNumber(v) ? v->valuedouble : (double)NAN;
  if (isfinite(d) && d == floor(d) && fabs(d) <= PN_IO_MAX_EXACT_INT && (int64_t)d >= min && (int64_t)d <= max) {
    *out = (int64_t)d;
    return TRUE;
  }
  g_autofree char *want = int_expectation(min, max, absurd, nullable);
  g_autofree char *got  = pn__io_describe(v);
  if (!cJSON_IsNumber(v) || !isfinite(d)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected %s, got %s", want, got);
  } else if (d != floor(d)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected %s, got %s (not an integer)", want, got);
  } else if (fabs(d) > PN_IO_MAX_EXACT_INT) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected %s, got %s (beyond 2^53: absurdly large)", want, got);
  } else if ((int64_t)d < min) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected %s, got %s", want, got);
  } else if (absurd) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "%s is absurdly large (at most %" G_GINT64_FORMAT ")", got, max);
  } else {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected %s, got %s", want, got);
  }
  return FALSE;
}

gboolean pn__io_get_int(const PnIoCtx *ctx, const cJSON *v, const char *ptr, int64_t min, int64_t max, bool absurd,
                        int64_t *out, GError **error)
{
  return get_int_impl(ctx, v, ptr, min, max, absurd, false, out, error);
}

gboolean pn__io_get_double(const PnIoCtx *ctx, const cJSON *v, const char *ptr, double dmin, double dmax,
                           bool dmin_exclusive, double *out, GError **error)
{
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
    double d = v->valuedouble;
    if (!(d < dmin || (dmin_exclusive && d == dmin) || d >= dmax)) {
      *out = d == 0.0 ? 0.0 : d; /* -0 reads as 0 */
      return TRUE;
    }
  }
  g_autofree char *got = pn__io_describe(v);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a finite number, got %s", got);
    return FALSE;
  }
  char lo[G_ASCII_DTOSTR_BUF_SIZE], hi[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(lo, sizeof lo, "%g", dmin);
  g_ascii_formatd(hi, sizeof hi, "%g", dmax);
  pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a number in %c%s, %s), got %s", dmin_exclusive ? '(' : '[',
              lo, hi, got);
  return FALSE;
}

gboolean pn__io_get_string(const PnIoCtx *ctx, const cJSON *v, const char *ptr, gsize max_len, const char **out,
                           GError **error)
{
  if (!cJSON_IsString(v) || v->valuestring == NULL) {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a string, got %s", got);
    return FALSE;
  }
  if (strlen(v->valuestring) > max_len) {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "string %s is too long (at most %" G_GSIZE_FORMAT " bytes)", got,
                max_len);
    return FALSE;
  }
  *out = v->valuestring;
  return TRUE;
}

/* ---- tables ---- */

gsize pn__io_fields_count(const PnField *fields)
{
  gsize n = 0;
  while (fields[n].key != NULL)
    n++;
  return n;
}

const PnField *pn__io_field_find(const PnField *fields, const char *key)
{
  for (const PnField *f = fields; f->key != NULL; f++)
    if (strcmp(f->key, key) == 0)
      return f;
  return NULL;
}

gboolean pn__io_check_keys(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const PnField *fields, GError **error)
{
  if (!cJSON_IsObject(obj)) {
    g_autofree char *got = pn__io_describe(obj);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected an object, got %s", got);
    return FALSE;
  }
  gsize n                       = pn__io_fields_count(fields);
  g_autofree const char **known = g_new(const char *, n + 1);
  for (gsize i = 0; i < n; i++)
    known[i] = fields[i].key;
  known[n] = NULL;
  for (const cJSON *c = obj->child; c != NULL; c = c->next) {
    const char *key = c->string ? c->string : "";
    if (pn__io_field_find(fields, key) == NULL) {
      g_autofree char *cptr = pn__io_ptr_child(ptr, key);
      const char *sugg      = pn__io_suggest(key, known, n);
      const char *elsewhere = ctx->where_else ? ctx->where_else(key) : NULL;
      if (sugg != NULL) {
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, cptr, "unknown key (did you mean \"%s\"?)", sugg);
      } else if (elsewhere != NULL && strcmp(elsewhere, ptr) != 0) {
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, cptr, "unknown key here (it belongs in %s)", elsewhere);
      } else {
        g_autofree char *list = g_strjoinv(", ", (char **)known);
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, cptr, "unknown key (expected one of: %s)", list);
      }
      return FALSE;
    }
  }
  return TRUE;
}

static void store_int(void *dst, const PnField *f, int64_t v)
{
  char *p = (char *)dst + f->offset;
  if (f->size == sizeof(int64_t)) {
    memcpy(p, &v, sizeof v);
  } else {
    g_assert(f->size == sizeof(int) && v >= G_MININT && v <= G_MAXINT);
    int i = (int)v;
    memcpy(p, &i, sizeof i);
  }
}

static void store_bool(void *dst, const PnField *f, bool v)
{
  g_assert(f->size == sizeof(bool));
  memcpy((char *)dst + f->offset, &v, sizeof v);
}

static void store_enum(void *dst, const PnField *f, int v)
{
  g_assert(f->size == sizeof(int));
  memcpy((char *)dst + f->offset, &v, sizeof v);
}

/* *cache, or the description of v stored there. */
static const char *describe_once(char **cache, const cJSON *v)
{
  if (*cache == NULL)
    *cache = pn__io_describe(v);
  return *cache;
}

/* A STRING or STRING_NULL field (null stores ""). */
static gboolean apply_string(const PnIoCtx *ctx, const cJSON *v, const char *ptr, const PnField *f, void *dst,
                             GError **error)
{
  char *p = (char *)dst + f->offset;
  if (cJSON_IsNull(v) && f->kind == PN_FIELD_STRING_NULL) {
    p[0] = '\0';
    return TRUE;
  }
  const char *s;
  if (!cJSON_IsString(v)) {
    g_autofree char *got = pn__io_describe(v);
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a string%s, got %s",
                f->kind == PN_FIELD_STRING_NULL ? " or null" : "", got);
    return FALSE;
  }
  if (!pn__io_get_string(ctx, v, ptr, f->size - 1, &s, error))
    return FALSE;
  g_strlcpy(p, s, f->size);
  return TRUE;
}

const char *pn__io_enum_name(const PnEnumName *t, int v)
{
  for (const PnEnumName *e = t; e->name != NULL; e++)
    if (e->value == v)
      return e->name;
  return "?";
}

/* An ENUM or ENUM_NULL field: one of f->names (null stores f->null_value). */
static gboolean apply_enum(const PnIoCtx *ctx, const cJSON *v, const char *ptr, const PnField *f, void *dst,
                           GError **error)
{
  if (cJSON_IsNull(v) && f->kind == PN_FIELD_ENUM_NULL) {
    store_enum(dst, f, f->null_value);
    return TRUE;
  }
  GString *list = g_string_new(NULL);
  for (const PnEnumName *e = f->names; e->name != NULL; e++) {
    if (cJSON_IsString(v) && strcmp(v->valuestring, e->name) == 0) {
      g_string_free(list, TRUE);
      store_enum(dst, f, e->value);
      return TRUE;
    }
    g_string_append_printf(list, "%s\"%s\"", list->len ? ", " : "", e->name);
  }
  g_autofree char *got = pn__io_describe(v);
  pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected one of %s%s, got %s", list->str,
              f->kind == PN_FIELD_ENUM_NULL ? ", null" : "", got);
  g_string_free(list, TRUE);
  return FALSE;
}

static gboolean apply_one(const PnIoCtx *ctx, const cJSON *v, const char *ptr, const PnField *f, void *dst,
                          GError **error)
{
  g_autofree char *got = NULL; /* the value, described only for a message (see get_int_impl) */
  bool is_null         = cJSON_IsNull(v);
  switch (f->kind) {
  case PN_FIELD_INT:
  case PN_FIELD_INT_NULL: {
    if (is_null && f->kind == PN_FIELD_INT_NULL) {
      store_int(dst, f, f->null_value);
      return TRUE;
    }
    int64_t i;
    if (!get_int_impl(ctx, v, ptr, f->min, f->max, f->absurd, f->kind == PN_FIELD_INT_NULL, &i, error))
      return FALSE;
    store_int(dst, f, i);
    return TRUE;
  }
  case PN_FIELD_BOOL:
    if (!cJSON_IsBool(v)) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected true or false, got %s", describe_once(&got, v));
      return FALSE;
    }
    store_bool(dst, f, cJSON_IsTrue(v));
    return TRUE;
  case PN_FIELD_BOOL01:
    if (cJSON_IsBool(v)) {
      store_bool(dst, f, cJSON_IsTrue(v));
      return TRUE;
    }
    if (cJSON_IsNumber(v) && (v->valuedouble == 0.0 || v->valuedouble == 1.0)) {
      store_bool(dst, f, v->valuedouble == 1.0);
      return TRUE;
    }
    pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected 0, 1, true or false, got %s", describe_once(&got, v));
    return FALSE;
  case PN_FIELD_TRI: {
    if (!cJSON_IsBool(v) && !is_null) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected true, false or null, got %s", describe_once(&got, v));
      return FALSE;
    }
    PnTri t = is_null ? PN_TRI_UNSET : cJSON_IsTrue(v) ? PN_TRI_TRUE : PN_TRI_FALSE;
    G_STATIC_ASSERT(sizeof(PnTri) == sizeof(int));
    store_enum(dst, f, (int)t);
    return TRUE;
  }
  case PN_FIELD_DOUBLE: {
    double d;
    if (!pn__io_get_double(ctx, v, ptr, f->dmin, f->dmax, false, &d, error))
      return FALSE;
    g_assert(f->size == sizeof(double));
    memcpy((char *)dst + f->offset, &d, sizeof d);
    return TRUE;
  }
  case PN_FIELD_STRING:
  case PN_FIELD_STRING_NULL:
    return apply_string(ctx, v, ptr, f, dst, error);
  case PN_FIELD_ENUM:
  case PN_FIELD_ENUM_NULL:
    return apply_enum(ctx, v, ptr, f, dst, error);
  case PN_FIELD_IGNORED_STRING:
    if (!cJSON_IsString(v)) {
      pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, ptr, "expected a string, got %s", describe_once(&got, v));
      return FALSE;
    }
    return TRUE;
  case PN_FIELD_IGNORED_INT: {
    int64_t i;
    return get_int_impl(ctx, v, ptr, 0, INT32_MAX, true, false, &i, error);
  }
  case PN_FIELD_CUSTOM:
    return TRUE;
  }
  g_assert_not_reached();
  return FALSE;
}

gboolean pn__io_apply_fields(const PnIoCtx *ctx, const cJSON *obj, const char *ptr, const PnField *fields, void *dst,
                             gboolean check_required, GError **error)
{
  for (const PnField *f = fields; f->key != NULL; f++) {
    const cJSON *v        = cJSON_GetObjectItemCaseSensitive(obj, f->key);
    g_autofree char *fptr = pn__io_ptr_child(ptr, f->key);
    if (v == NULL) {
      if (check_required && f->required) {
        pn__io_fail(error, PN_IO_ERROR_SCHEMA, ctx, fptr, "required key missing");
        return FALSE;
      }
      continue;
    }
    if (!apply_one(ctx, v, fptr, f, dst, error))
      return FALSE;
  }
  return TRUE;
}
