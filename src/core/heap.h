/* heap.h — a min-heap of (key, ord) pairs: the event engine's queue when it is large (times) and
 * the max-min solver's levels. (The executor's dispatch worklist keeps a binary heap of bare
 * 4-byte task ids, exec_queues.c: it pops once per task started, and these 16-byte keys cost it
 * twice the instructions.)
 *
 * What it models: nothing; it orders. A key is two words compared as one 128-bit number: `key`,
 * which must be >= 0 (a time, an id, or the bits of a non-negative double, which order as the
 * doubles do), then `ord`, any 64 bits. Pairs that are all distinct come out in one order,
 * whatever the shape the heap took: the callers make them so (a sequence number, a task id), and
 * their runs are deterministic.
 *
 * Invariants: keys[0 .. n) is in 4-ary heap order (the children of i are 4i+1 .. 4i+4). The array
 * is the caller's to read; a caller may also fill it itself in ascending order, which is a heap
 * (the engine keeps a small queue sorted and switches to the heap as it grows).
 *
 * Cost: push O(log4 n) compares, fewer when the new key is among the largest (most of the
 * engine's are); pop about 4 log4 n compares, at most 2 log4 n + 1 moves; no allocation once the
 * array has grown. There is no decrease-key and no removal but the minimum: the callers cancel by
 * a flag (engine) or a version (max-min) and drop what is stale when it surfaces.
 */
#ifndef PN_CORE_HEAP_H
#define PN_CORE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int64_t key;  /* >= 0 */
  uint64_t ord; /* the tie-break */
} PnHeapKey;

/* Zero-initialized: an empty heap. Free the array with pn_heap_clear. */
typedef struct {
  PnHeapKey *keys;
  size_t n, cap;
} PnHeap;

#define PN_HEAP_D 4

static inline bool pn_heap_less(const PnHeapKey *a, const PnHeapKey *b)
{
  /* one 128-bit compare (a compare and a subtract-with-borrow, no branch): key is not negative */
  unsigned __int128 x = ((unsigned __int128)(uint64_t)a->key << 64) | a->ord;
  unsigned __int128 y = ((unsigned __int128)(uint64_t)b->key << 64) | b->ord;
  return x < y;
}

/* Doubles the room in `keys` (at least 16): for a push into a full heap, or a caller's own fill. */
void pn_heap_grow(PnHeap *h);
/* Frees the array; the heap is empty and may be used again. */
void pn_heap_clear(PnHeap *h);

static inline void pn_heap_push(PnHeap *h, PnHeapKey k)
{
  if (h->n == h->cap)
    pn_heap_grow(h);
  PnHeapKey *a = h->keys;
  size_t i     = h->n++;
  while (i > 0) {
    size_t parent = (i - 1) / PN_HEAP_D;
    if (!pn_heap_less(&k, &a[parent]))
      break;
    a[i] = a[parent];
    i    = parent;
  }
  a[i] = k;
}

/* Removes and returns the least key (the heap is not empty). The hole descends along the least
 * children to a leaf, then the last key is sifted up from there, usually by a level or none
 * ("bottom-up" deletion). The four children of a node are adjacent (two cache lines), and the
 * least of them is chosen with flag arithmetic rather than branches, which a random key order
 * would mispredict half the time. */
static inline PnHeapKey pn_heap_pop(PnHeap *h)
{
  PnHeapKey *a  = h->keys;
  PnHeapKey top = a[0];
  size_t n      = --h->n;
  if (n == 0)
    return top;
  PnHeapKey last = a[n];
  size_t i       = 0;
  for (;;) {
    size_t c = PN_HEAP_D * i + 1;
    size_t m;
    if (c + 3 < n) {
      size_t m01 = c + pn_heap_less(&a[c + 1], &a[c]);
      size_t m23 = c + 2 + pn_heap_less(&a[c + 3], &a[c + 2]);
      m          = pn_heap_less(&a[m23], &a[m01]) ? m23 : m01;
    } else if (c < n) {
      m = c;
      for (size_t j = c + 1; j < n; j++)
        if (pn_heap_less(&a[j], &a[m]))
          m = j;
    } else {
      break;
    }
    a[i] = a[m];
    i    = m;
  }
  while (i > 0) {
    size_t parent = (i - 1) / PN_HEAP_D;
    if (!pn_heap_less(&last, &a[parent]))
      break;
    a[i] = a[parent];
    i    = parent;
  }
  a[i] = last;
  return top;
}

#endif
