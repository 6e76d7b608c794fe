/* doc.c — a report's blocks and their two renderings (doc.h). */
#include "plan/doc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

typedef enum { BLOCK_HEADING, BLOCK_PARA, BLOCK_ITEM, BLOCK_TABLE, BLOCK_ROW, BLOCK_FIGURE } BlockKind;

typedef struct {
  BlockKind kind;
  char *text;   /* heading, paragraph, item; a figure's caption */
  char *name;   /* a figure's file name, without extension */
  char **cells; /* a table's header or a row */
} Block;

struct PnDoc {
  char *title;
  GArray *blocks;
};

static void block_clear(gpointer p)
{
  Block *b = p;
  g_free(b->text), g_free(b->name), g_strfreev(b->cells);
}

PnDoc *pn_doc_new(const char *title)
{
  PnDoc *d  = g_new0(PnDoc, 1);
  d->title  = g_strdup(title);
  d->blocks = g_array_new(FALSE, TRUE, sizeof(Block));
  g_array_set_clear_func(d->blocks, block_clear);
  return d;
}

void pn_doc_free(PnDoc *d)
{
  if (d == NULL)
    return;
  g_free(d->title);
  g_array_free(d->blocks, TRUE);
  g_free(d);
}

static void add(PnDoc *d, BlockKind kind, char *text, const char *name, const char *const *cells)
{
  Block b = {.kind = kind, .text = text, .name = g_strdup(name), .cells = g_strdupv((char **)cells)};
  g_array_append_val(d->blocks, b);
}

void pn_doc_heading(PnDoc *d, const char *text) { add(d, BLOCK_HEADING, g_strdup(text), NULL, NULL); }

void pn_doc_para(PnDoc *d, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  add(d, BLOCK_PARA, g_strdup_vprintf(fmt, ap), NULL, NULL);
  va_end(ap);
}

void pn_doc_item(PnDoc *d, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  add(d, BLOCK_ITEM, g_strdup_vprintf(fmt, ap), NULL, NULL);
  va_end(ap);
}

void pn_doc_table(PnDoc *d, const char *const *header) { add(d, BLOCK_TABLE, NULL, NULL, header); }
void pn_doc_row(PnDoc *d, const char *const *cells) { add(d, BLOCK_ROW, NULL, NULL, cells); }
void pn_doc_figure(PnDoc *d, const char *name, const char *caption)
{
  add(d, BLOCK_FIGURE, g_strdup(caption), name, NULL);
}

static const Block *at(const PnDoc *d, guint i) { return &g_array_index(d->blocks, Block, i); }

static void md_cells(GString *s, char **cells)
{
  g_string_append(s, "|");
  for (char **c = cells; *c; c++) {
    g_auto(GStrv) parts = g_strsplit(*c, "|", -1);
    g_autofree char *t  = g_strjoinv("\\|", parts);
    g_string_append_printf(s, " %s |", t);
  }
  g_string_append_c(s, '\n');
}

char *pn_doc_markdown(const PnDoc *d)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "# %s\n", d->title);
  for (guint i = 0; i < d->blocks->len; i++) {
    const Block *b   = at(d, i);
    BlockKind before = i ? at(d, i - 1)->kind : BLOCK_HEADING;
    bool continues   = (b->kind == BLOCK_ITEM && before == BLOCK_ITEM) || b->kind == BLOCK_ROW;
    if (!continues)
      g_string_append_c(s, '\n');
    switch (b->kind) {
    case BLOCK_HEADING:
      g_string_append_printf(s, "## %s\n", b->text);
      break;
    case BLOCK_PARA:
      g_string_append_printf(s, "%s\n", b->text);
      break;
    case BLOCK_ITEM:
      g_string_append_printf(s, "- %s\n", b->text);
      break;
    case BLOCK_TABLE:
      md_cells(s, b->cells);
      g_string_append(s, "|");
      for (char **c = b->cells; *c; c++)
        g_string_append(s, "---|");
      g_string_append_c(s, '\n');
      break;
    case BLOCK_ROW:
      md_cells(s, b->cells);
      break;
    case BLOCK_FIGURE:
      g_string_append_printf(s, "![%s](plots/%s.png)\n", b->text, b->name);
      break;
    }
  }
  return g_string_free(s, FALSE);
}

/* Sorts a table by the clicked column (numbers as numbers), and writes each figure's natural size
 * into its data-size attribute, where a headless browser's --dump-dom can read it. */
static const char html_script[] =
    "<script>\n"
    "function num(t){var v=parseFloat(t.replace(/[^0-9eE.+-]/g,''));return isNaN(v)?null:v;}\n"
    "document.querySelectorAll('table').forEach(function(tb){\n"
    "  tb.querySelectorAll('th').forEach(function(th,col){th.onclick=function(){\n"
    "    var rows=Array.from(tb.querySelectorAll('tr')).slice(1),up=th.dataset.up!=='1';th.dataset.up=up?'1':'0';\n"
    "    rows.sort(function(a,b){var x=a.cells[col].textContent,y=b.cells[col].textContent,p=num(x),q=num(y);\n"
    "      var c=(p!==null&&q!==null)?p-q:x.localeCompare(y);return up?c:-c;});\n"
    "    rows.forEach(function(r){tb.appendChild(r);});};});});\n"
    "function sizes(){document.querySelectorAll('img').forEach(function(im){\n"
    "  im.setAttribute('data-size',im.complete?im.naturalWidth+'x'+im.naturalHeight:'0x0');});}\n"
    "window.addEventListener('load',sizes);sizes();\n"
    "</script>\n";

static const char html_style[] =
    "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0;font-size:90%}th,td{border:1px solid #ccc;padding:.2em .5em;"
    "text-align:right}th{background:#eee;cursor:pointer}td:first-child{text-align:left}"
    "figure{margin:1em 0}img{max-width:100%}figcaption{font-size:90%;color:#555}</style>\n";

char *pn_doc_html(const PnDoc *d)
{
  GString *s         = g_string_new(NULL);
  g_autofree char *t = g_markup_escape_text(d->title, -1);
  g_string_append_printf(s,
                         "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n%s"
                         "</head>\n<body>\n<h1>%s</h1>\n",
                         t, html_style, t);
  for (guint i = 0; i < d->blocks->len; i++) {
    const Block *b     = at(d, i);
    BlockKind next     = i + 1 < d->blocks->len ? at(d, i + 1)->kind : BLOCK_HEADING;
    BlockKind prev     = i ? at(d, i - 1)->kind : BLOCK_HEADING;
    g_autofree char *x = b->text ? g_markup_escape_text(b->text, -1) : NULL;
    switch (b->kind) {
    case BLOCK_HEADING:
      g_string_append_printf(s, "<h2>%s</h2>\n", x);
      break;
    case BLOCK_PARA:
      g_string_append_printf(s, "<p>%s</p>\n", x);
      break;
    case BLOCK_ITEM:
      g_string_append_printf(s, "%s<li>%s</li>\n%s", prev == BLOCK_ITEM ? "" : "<ul>\n", x,
                             next == BLOCK_ITEM ? "" : "</ul>\n");
      break;
    case BLOCK_TABLE:
    case BLOCK_ROW:
      g_string_append(s, b->kind == BLOCK_TABLE ? "<table>\n<tr>" : "<tr>");
      for (char **c = b->cells; *c; c++) {
        g_autofree char *e = g_markup_escape_text(*c, -1);
        g_string_append_printf(s, b->kind == BLOCK_TABLE ? "<th>%s</th>" : "<td>%s</td>", e);
      }
      g_string_append(s, next == BLOCK_ROW ? "</tr>\n" : "</tr>\n</table>\n");
      break;
    case BLOCK_FIGURE:
      g_string_append_printf(s, "<figure><img src=\"plots/%s.svg\" alt=\"%s\"><figcaption>%s</figcaption></figure>\n",
                             b->name, x, x);
      break;
    }
  }
  g_string_append_printf(s, "%s</body>\n</html>\n", html_script);
  return g_string_free(s, FALSE);
}
