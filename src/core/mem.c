/* mem.c — see mem.h. */
#define _DEFAULT_SOURCE /* madvise */
#include "core/mem.h"

#include <limits.h>
#include <stdint.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Below this, huge pages would save little and could waste most of a 2 MiB page. */
#define PN_MEM_LARGE_BYTES ((size_t)4 << 20)

void pn_mem_hint_large(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p == NULL || bytes < PN_MEM_LARGE_BYTES)
    return;
  long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0)
    return;
  uintptr_t page  = (uintptr_t)page_size;
  uintptr_t begin = ((uintptr_t)p + page - 1) & ~(page - 1); /* madvise wants whole pages */
  uintptr_t end   = ((uintptr_t)p + bytes) & ~(page - 1);
  if (end > begin)
    (void)madvise((void *)begin, end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

void pn_mem_keep_freed(void)
{
#if defined(__GLIBC__)
  (void)mallopt(M_MMAP_MAX, 0);             /* large blocks from the heap, reused once freed */
  (void)mallopt(M_TRIM_THRESHOLD, INT_MAX); /* no heap top handed back between simulations */
#endif
}
