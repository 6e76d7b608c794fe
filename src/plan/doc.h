/* doc.h — a report as a list of blocks (headings, paragraphs, lists, tables, figures), rendered
 * twice from the same blocks: Markdown (figures as PNG) and a self-contained HTML page (figures
 * as SVG files beside it, tables sortable by a click on a header, no network). So the two hold
 * the same content by construction.
 *
 * Text is plain: the renderers escape what their format needs (HTML's <, >, &; Markdown's table
 * bars). Cost: linear in the text.
 */
#ifndef PN_PLAN_DOC_H
#define PN_PLAN_DOC_H

#include <glib.h>

typedef struct PnDoc PnDoc;

PnDoc *pn_doc_new(const char *title);
void pn_doc_free(PnDoc *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnDoc, pn_doc_free)

void pn_doc_heading(PnDoc *d, const char *text);
void G_GNUC_PRINTF(2, 3) pn_doc_para(PnDoc *d, const char *fmt, ...);
/* A list item; consecutive items make one list. */
void G_GNUC_PRINTF(2, 3) pn_doc_item(PnDoc *d, const char *fmt, ...);
/* A table: its header (a NULL-terminated array), then rows of as many cells. */
void pn_doc_table(PnDoc *d, const char *const *header);
void pn_doc_row(PnDoc *d, const char *const *cells);
/* A figure: plots/<name>.png in Markdown, plots/<name>.svg in HTML. */
void pn_doc_figure(PnDoc *d, const char *name, const char *caption);

char *pn_doc_markdown(const PnDoc *d);
char *pn_doc_html(const PnDoc *d);

#endif
