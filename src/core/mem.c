/* mem.c — see mem.h. */
#define _DEFAULT_SOURCE /* madvise */
#include "core/mem.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Below this, huge pages would save little and could waste most of a 2 MiB page. */
#define PN_MEM_LARGE_BYTES ((size_t)4 << 20)
/* What one populate call maps in: one 2 MiB huge page, so the address-space lock it holds is
 * released often (the main thread's madvise and mmap calls wait for it). */
#define PN_MEM_PREFAULT_SLICE ((uintptr_t)2 << 20)

struct PnPrefault {
  GThread *thread;
  GAsyncQueue *ranges; /* of Range*; a range with p == NULL ends the helper */
};

typedef struct {
  void *p;
  size_t bytes;
} Range;

static GMutex g_scope_lock;
static PnPrefault *g_scope; /* the active scope, under g_scope_lock */

/* Whole pages inside [p, p + bytes): false when there are none. */
static bool page_span(void *p, size_t bytes, uintptr_t *begin, uintptr_t *end)
{
  long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0)
    return false;
  uintptr_t page = (uintptr_t)page_size;
  *begin         = ((uintptr_t)p + page - 1) & ~(page - 1); /* madvise wants whole pages */
  *end           = ((uintptr_t)p + bytes) & ~(page - 1);
  return *end > *begin;
}

static gpointer prefault_main(gpointer data)
{
  PnPrefault *pf = data;
  for (;;) {
    Range *r = g_async_queue_pop(pf->ranges);
    if (r->p == NULL) {
      g_free(r);
      break;
    }
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    /* in slices: the call holds the address-space lock, which the main thread's own mappings
     * (a growing array's mremap) must wait for */
    uintptr_t begin, end;
    if (page_span(r->p, r->bytes, &begin, &end))
      for (uintptr_t a = begin; a < end; a += PN_MEM_PREFAULT_SLICE) {
        uintptr_t b = end - a > PN_MEM_PREFAULT_SLICE ? a + PN_MEM_PREFAULT_SLICE : end;
        if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) != 0)
          break; /* refused or unmapped: the rest is left to the writer */
      }
#endif
    g_free(r);
  }
  return NULL;
}

PnPrefault *pn_mem_prefault_begin(void)
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  g_mutex_lock(&g_scope_lock);
  PnPrefault *pf = NULL;
  if (g_scope == NULL) {
    pf         = g_new0(PnPrefault, 1);
    pf->ranges = g_async_queue_new();
    pf->thread = g_thread_try_new("pn-prefault", prefault_main, pf, NULL);
    if (pf->thread == NULL) {
      g_async_queue_unref(pf->ranges);
      g_clear_pointer(&pf, g_free);
    }
    g_scope = pf;
  }
  g_mutex_unlock(&g_scope_lock);
  return pf;
#else
  return NULL;
#endif
}

void pn_mem_prefault_end(PnPrefault *pf)
{
  if (pf == NULL)
    return;
  g_mutex_lock(&g_scope_lock);
  g_assert(g_scope == pf);
  g_scope = NULL;
  g_mutex_unlock(&g_scope_lock);
  g_async_queue_push(pf->ranges, g_new0(Range, 1)); /* the end marker */
  g_thread_join(pf->thread);
  g_async_queue_unref(pf->ranges);
  g_free(pf);
}

void pn_mem_hint_large(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  uintptr_t begin, end;
  if (p == NULL || bytes < PN_MEM_LARGE_BYTES || !page_span(p, bytes, &begin, &end))
    return;
  (void)madvise((void *)begin, end - begin, MADV_HUGEPAGE);
  g_mutex_lock(&g_scope_lock);
  if (g_scope) {
    Range *r = g_new(Range, 1);
    *r       = (Range){p, bytes};
    g_async_queue_push(g_scope->ranges, r);
  }
  g_mutex_unlock(&g_scope_lock);
#else
  (void)p;
  (void)bytes;
#endif
}
