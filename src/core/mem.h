/* mem.h — memory hints for the few arrays that grow with the task graph (10^6 tasks: tens to
 * hundreds of MB, written once and then walked).
 *
 * Touching such an array page by page costs one page fault per 4 KiB (about a fifth of a
 * 405B-scale run was the kernel zeroing and mapping pages) and one TLB entry per 4 KiB while the
 * executor walks eight places of it at once. Asking for transparent huge pages (2 MiB) removes
 * almost all of both. The kernel still zeroes every page on first touch (about a tenth of such a
 * run); inside a prefault scope a helper thread asks for those pages ahead of the code that will
 * write them (MADV_POPULATE_WRITE), so the zeroing runs on the other core. Neither hint changes
 * a value, only how and when memory is mapped; both are no-ops where the system does not support
 * them and for small arrays.
 */
#ifndef PN_CORE_MEM_H
#define PN_CORE_MEM_H

#include <stddef.h>

/* Advises the kernel to back [p, p + bytes) with huge pages, best done before the memory is
 * first written; inside a prefault scope, also queues the range for the helper thread. Arrays
 * under a few MiB are left alone. Never fails (a refused hint is ignored). */
void pn_mem_hint_large(void *p, size_t bytes);

/* A prefault scope: between begin and end, large arrays hinted by this process are mapped in
 * by a helper thread. Only one scope is active at a time in a process: begin returns NULL (and
 * end(NULL) does nothing) when another is active or no thread can be made. end waits for the
 * helper. A range freed before the helper reaches it is harmless: populating never writes. */
typedef struct PnPrefault PnPrefault;
PnPrefault *pn_mem_prefault_begin(void);
void pn_mem_prefault_end(PnPrefault *pf);

#endif
