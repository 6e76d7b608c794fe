/* mem.h — memory hints for the few arrays that grow with the task graph (10^6 tasks: tens to
 * hundreds of MB, written once and then walked).
 *
 * Touching such an array page by page costs one page fault per 4 KiB (about a fifth of a
 * 405B-scale run was the kernel zeroing and mapping pages) and one TLB entry per 4 KiB while the
 * executor walks eight places of it at once. Asking for transparent huge pages (2 MiB) removes
 * almost all of both. The hint changes no value, only how memory is mapped; it is a no-op where
 * the system does not support it and for small arrays.
 */
#ifndef PN_CORE_MEM_H
#define PN_CORE_MEM_H

#include <stddef.h>

/* Advises the kernel to back [p, p + bytes) with huge pages, best done before the memory is
 * first written. Arrays under a few MiB are left alone. Never fails (a refused hint is
 * ignored). */
void pn_mem_hint_large(void *p, size_t bytes);

/* Keeps the memory a simulation frees for the next one of the same process: glibc serves large
 * blocks from their own mappings and returns freed heap tops to the kernel, so each simulation
 * of a large graph had its pages zeroed and mapped again (about a tenth of a 405B-scale run);
 * `--what-if`, sweeps and plans run many. Called once by each program's main() before any
 * simulation; the process's peak memory is unchanged (the next simulation reuses what the last
 * freed), only not handed back between them. A no-op without glibc. */
void pn_mem_keep_freed(void);

#endif
