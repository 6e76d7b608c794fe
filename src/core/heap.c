/* heap.c — the heap's growth and release (heap.h); push and pop are inline there. */
#include "core/heap.h"

#include <glib.h>

void pn_heap_grow(PnHeap *h)
{
  h->cap  = h->cap ? 2 * h->cap : 16;
  h->keys = g_renew(PnHeapKey, h->keys, h->cap);
}

void pn_heap_clear(PnHeap *h)
{
  g_free(h->keys);
  *h = (PnHeap){0};
}
