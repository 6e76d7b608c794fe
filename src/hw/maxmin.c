/* maxmin.c — progressive filling over the connected components that changed (maxmin.h).
 *
 * Data: each flow owns an array of elements {resource, coefficient, position}; each resource
 * keeps an array of references to the elements that use it (flow, element index), and each
 * element remembers its position there, so removing a flow is O(its resources).
 *
 * Incremental solve: adding or removing a flow marks its resources dirty. pn_maxmin_solve()
 * gathers, by BFS over the flow–resource incidence, every resource and flow connected to a
 * dirty one, and runs progressive filling on that set only. Flows outside it share no resource
 * with anything that changed, so their max-min rates are unchanged: the result is the exact
 * max-min solution of the whole system.
 *
 * Progressive filling uses a lazy min-heap of levels (core/heap.h): resources keyed by
 * L_r = remaining_r / sum of a_{f,r} over unfixed flows (re-pushed with a new version when that
 * changes; stale entries are skipped) and bounded flows keyed by their bound. Fixing flows can
 * only raise the level of the other resources, so popping the minimum is exactly "take the
 * smallest level". Cost per solve: O(E log E) for the E flow–resource elements of the component.
 *
 * Numerical safety: remaining capacities are clamped at 0; a resource's coefficient sum is
 * recomputed exactly when cancellation has eaten most of it; levels and rates are never negative
 * or NaN. A rate within a relative 1e-12 of the previous one is kept unchanged and not reported,
 * so callers do not move completion events for rounding noise.
 */
#include "hw/maxmin.h"

#include <math.h>
#include <string.h>

#include "core/heap.h"

/* Growable arrays on the hot path: plain pointer/count/capacity triples (GArray's out-of-line
 * calls cost more than the solver's work on small components). */
#define VEC_PUSH(ptr, n, cap, x)                                                                                       \
  do {                                                                                                                 \
    if ((n) == (cap)) {                                                                                                \
      (cap) = (cap) ? 2 * (cap) : 8;                                                                                   \
      (ptr) = g_realloc_n((ptr), (cap), sizeof *(ptr));                                                                \
    }                                                                                                                  \
    (ptr)[(n)++] = (x);                                                                                                \
  } while (0)

#define PN_MAXMIN_REL_TOL 1e-12
/* A resource has room for a demand below (1 - this) of its capacity: the shortcuts that skip
 * progressive filling (solve_all_bounded, try_place) leave floating-point near-ties to it. */
#define PN_MAXMIN_ROOM_MARGIN 1e-9
/* Below this fraction of its initial value, a coefficient sum is recomputed from scratch. */
#define PN_MAXMIN_SUM_RESYNC 1e-9

typedef struct {
  PnResourceId r;
  double a;     /* usage coefficient a_{f,r} > 0 */
  uint32_t pos; /* index of this element's reference in the resource's `users` */
} Elem;

typedef struct {
  PnFlowId f;
  int32_t k; /* element index within the flow */
} ElemRef;

typedef struct {
  double capacity;
  double usage;
  ElemRef *users; /* the flows using this resource */
  uint32_t n_users, cap_users;
  /* solve scratch */
  double rem;
  double sum_a;
  double sum_a0;
  int32_t n_unfixed;
  uint32_t version;
  uint32_t mark; /* == PnMaxMin.epoch when in the current component */
  bool dirty;
  bool touched;
} Res;

typedef struct {
  Elem *elems;
  int n;
  int cap;
  double bound; /* <= 0: none */
  double rate;
  double level; /* solve scratch: the rate progressive filling gives */
  uint32_t mark;
  bool active;
  bool fresh; /* added since the last solve: always reported as changed */
  bool fixed;
} Flow;

struct PnMaxMin {
  GArray *res;   /* of Res */
  GArray *flows; /* of Flow */
  Res *res_v;    /* res->data and flows->data, kept in step with every append: the solver */
  Flow *flow_v;  /* indexes them all the time, and a GArray access is two dependent loads */
  PnFlowId *free_flows;
  uint32_t n_free, cap_free;
  int n_active;
  uint32_t epoch;
  PnResourceId *dirty_res;
  uint32_t n_dirty_res, cap_dirty_res;
  PnFlowId *dirty_flows; /* added since the last solve */
  uint32_t n_dirty_flows, cap_dirty_flows;
  PnFlowId *placed; /* added since the last solve and given their rate at once (try_place) */
  uint32_t n_placed, cap_placed;
  /* solve scratch, kept between calls so a solve allocates nothing once grown */
  PnResourceId *comp_res;
  uint32_t n_comp_res, cap_comp_res;
  PnFlowId *comp_flows;
  uint32_t n_comp_flows, cap_comp_flows;
  PnResourceId *touched;
  uint32_t n_touched, cap_touched;
  PnHeap heap; /* levels (push_level) */
};

static inline Res *res_at(const PnMaxMin *mm, PnResourceId r) { return &mm->res_v[r]; }
static inline Flow *flow_at(const PnMaxMin *mm, PnFlowId f) { return &mm->flow_v[f]; }

PnMaxMin *pn_maxmin_new(void)
{
  PnMaxMin *mm = g_new0(PnMaxMin, 1);
  mm->res      = g_array_new(FALSE, TRUE, sizeof(Res));
  mm->flows    = g_array_new(FALSE, TRUE, sizeof(Flow));
  return mm;
}

void pn_maxmin_free(PnMaxMin *mm)
{
  if (!mm)
    return;
  for (guint i = 0; i < mm->res->len; i++)
    g_free(res_at(mm, (PnResourceId)i)->users);
  for (guint i = 0; i < mm->flows->len; i++)
    g_free(flow_at(mm, (PnFlowId)i)->elems);
  g_array_free(mm->res, TRUE);
  g_array_free(mm->flows, TRUE);
  g_free(mm->free_flows);
  g_free(mm->dirty_res);
  g_free(mm->dirty_flows);
  g_free(mm->placed);
  g_free(mm->comp_res);
  g_free(mm->comp_flows);
  g_free(mm->touched);
  pn_heap_clear(&mm->heap);
  g_free(mm);
}

PnResourceId pn_maxmin_add_resource(PnMaxMin *mm, double capacity)
{
  g_assert(capacity > 0.0 && isfinite(capacity));
  g_assert(mm->res->len < INT32_MAX);
  Res r = {.capacity = capacity};
  g_array_append_val(mm->res, r);
  mm->res_v = (Res *)(void *)mm->res->data;
  return (PnResourceId)(mm->res->len - 1);
}

double pn_maxmin_resource_capacity(const PnMaxMin *mm, PnResourceId r)
{
  g_assert(r >= 0 && (guint)r < mm->res->len);
  return res_at(mm, r)->capacity;
}

double pn_maxmin_resource_usage(const PnMaxMin *mm, PnResourceId r)
{
  g_assert(r >= 0 && (guint)r < mm->res->len);
  return res_at(mm, r)->usage;
}

static void mark_dirty(PnMaxMin *mm, PnResourceId r)
{
  Res *res = res_at(mm, r);
  if (!res->dirty) {
    res->dirty = true;
    VEC_PUSH(mm->dirty_res, mm->n_dirty_res, mm->cap_dirty_res, r);
  }
}

static inline void recompute_usage(PnMaxMin *mm, Res *r);

void pn_maxmin_set_bound(PnMaxMin *mm, PnFlowId f, double bound)
{
  g_assert(f >= 0 && (guint)f < mm->flows->len);
  g_assert(!isnan(bound));
  Flow *fl = flow_at(mm, f);
  g_assert(fl->active && (fl->n > 0 || bound > 0.0));
  double b = bound > 0.0 ? bound : 0.0;
  if (fl->bound == b)
    return;
  fl->bound = b;
  for (int k = 0; k < fl->n; k++)
    mark_dirty(mm, fl->elems[k].r);
}

/* Incremental cases that need no solve. The allocation is the unique max-min fair one, and
 * these changes leave every other flow's rate where it is:
 *  - a bounded flow joins resources with no change pending, on each of which the usage plus its
 *    bound stays below capacity (with a margin): nothing becomes a bottleneck, it runs at its
 *    bound, and progressive filling would pop its bound before any of its resources' levels;
 *  - a flow joins resources with no change pending that nobody else uses: its component is
 *    itself, and it gets what solve_single would give it (its bound or the tightest capacity);
 *  - a flow leaves resources with no change pending on which every other flow runs exactly at
 *    its own bound: the capacity it frees can raise nobody.
 * Rates are reported by the next solve as if it had computed them (it would find the same,
 * within its tolerance, and report the new flow). Usages are summed again exactly. */

static inline bool has_room(const Res *r, double demand)
{
  return demand < r->capacity * (1.0 - PN_MAXMIN_ROOM_MARGIN);
}

static bool clean_distinct(const PnMaxMin *mm, const Flow *fl)
{
  for (int k = 0; k < fl->n; k++) {
    if (res_at(mm, fl->elems[k].r)->dirty)
      return false;
    for (int j = 0; j < k; j++)
      if (fl->elems[j].r == fl->elems[k].r)
        return false;
  }
  return true;
}

/* The rate of a flow that is alone in its component: progressive filling would push its bound
 * and each resource's level capacity / (sum of the flow's coefficients on it), pop the smallest
 * and fix the flow there. The sums run in element order from 0, as progressive filling's do. */
static double lone_level(const PnMaxMin *mm, const Flow *fl)
{
  double level = fl->bound > 0.0 ? fl->bound : HUGE_VAL;
  for (int k = 0; k < fl->n; k++) {
    const Res *r = res_at(mm, fl->elems[k].r);
    double sum_a = 0.0;
    for (int j = 0; j < fl->n; j++)
      if (fl->elems[j].r == fl->elems[k].r)
        sum_a += fl->elems[j].a;
    double rem = r->capacity > 0.0 ? r->capacity : 0.0;
    double l   = sum_a > 0.0 ? rem / sum_a : 0.0;
    if (l < level)
      level = l;
  }
  return level;
}

/* The rate solve_single would give a flow alone on each of its resources; -1 when another flow
 * uses one of them, or when the flow would stall or be unbounded (left to the solve). */
static double alone_rate(const PnMaxMin *mm, const Flow *fl)
{
  for (int k = 0; k < fl->n; k++)
    if (res_at(mm, fl->elems[k].r)->n_users != 1)
      return -1.0;
  double level = lone_level(mm, fl);
  return level > 0.0 && level < HUGE_VAL ? level : -1.0;
}

static bool try_place(PnMaxMin *mm, PnFlowId f)
{
  Flow *fl = flow_at(mm, f);
  if (!clean_distinct(mm, fl))
    return false;
  double rate = fl->bound;
  bool room   = fl->bound > 0.0;
  for (int k = 0; k < fl->n && room; k++) {
    const Res *r = res_at(mm, fl->elems[k].r);
    room         = has_room(r, r->usage + fl->elems[k].a * fl->bound);
  }
  if (!room) { /* not at its bound: still known when nothing else uses its resources */
    rate = alone_rate(mm, fl);
    if (rate < 0.0)
      return false;
  }
  fl->rate  = rate;
  fl->level = rate;
  fl->fixed = true;
  for (int k = 0; k < fl->n; k++)
    recompute_usage(mm, res_at(mm, fl->elems[k].r));
  VEC_PUSH(mm->placed, mm->n_placed, mm->cap_placed, f);
  return true;
}

static bool others_at_bound(const PnMaxMin *mm, PnFlowId f)
{
  const Flow *fl = flow_at(mm, f);
  if (!clean_distinct(mm, fl))
    return false;
  for (int k = 0; k < fl->n; k++) {
    const Res *r = res_at(mm, fl->elems[k].r);
    for (uint32_t j = 0; j < r->n_users; j++) {
      const Flow *o = flow_at(mm, r->users[j].f);
      if (r->users[j].f != f && !(o->bound > 0.0 && o->rate == o->bound))
        return false;
    }
  }
  return true;
}

static PnFlowId add_flow(PnMaxMin *mm, int n, const PnResourceId *res, const double *coef, double bound, bool *placed);

PnFlowId pn_maxmin_add_flow(PnMaxMin *mm, int n, const PnResourceId *res, const double *coef, double bound)
{
  return add_flow(mm, n, res, coef, bound, NULL);
}

PnFlowId pn_maxmin_add_flow_placed(PnMaxMin *mm, int n, const PnResourceId *res, const double *coef, double bound,
                                   bool *placed)
{
  g_assert(placed != NULL);
  return add_flow(mm, n, res, coef, bound, placed);
}

/* `placed` NULL: a placed flow is reported by the next solve; else the caller is told. */
static PnFlowId add_flow(PnMaxMin *mm, int n, const PnResourceId *res, const double *coef, double bound, bool *placed)
{
  g_assert(n >= 0 && (n == 0 || (res != NULL && coef != NULL)));
  g_assert(!isnan(bound));
  g_assert(n > 0 || bound > 0.0); /* a flow using nothing and unbounded would have an infinite rate */
  PnFlowId f;
  if (mm->n_free > 0) {
    f = mm->free_flows[--mm->n_free];
  } else {
    g_assert(mm->flows->len < INT32_MAX);
    g_array_set_size(mm->flows, mm->flows->len + 1); /* zero-filled */
    mm->flow_v = (Flow *)(void *)mm->flows->data;
    f          = (PnFlowId)(mm->flows->len - 1);
  }
  Flow *fl = flow_at(mm, f);
  if (fl->cap < n) {
    fl->elems = g_renew(Elem, fl->elems, n);
    fl->cap   = n;
  }
  fl->n      = n;
  fl->bound  = bound > 0.0 ? bound : 0.0;
  fl->rate   = 0.0;
  fl->active = true;
  fl->fresh  = true;
  fl->fixed  = false;
  for (int k = 0; k < n; k++) {
    g_assert(res[k] >= 0 && (guint)res[k] < mm->res->len);
    g_assert(coef[k] > 0.0 && isfinite(coef[k]));
    Res *r       = res_at(mm, res[k]);
    ElemRef ref  = {.f = f, .k = k};
    fl->elems[k] = (Elem){.r = res[k], .a = coef[k], .pos = r->n_users};
    VEC_PUSH(r->users, r->n_users, r->cap_users, ref);
  }
  mm->n_active++;
  if (placed)
    *placed = false;
  if (try_place(mm, f)) {
    if (placed) { /* the caller takes the rate: nothing to report */
      *placed   = true;
      fl->fresh = false;
      mm->n_placed--;
    }
    return f;
  }
  for (int k = 0; k < n; k++)
    mark_dirty(mm, res[k]);
  VEC_PUSH(mm->dirty_flows, mm->n_dirty_flows, mm->cap_dirty_flows, f);
  return f;
}

void pn_maxmin_remove_flow(PnMaxMin *mm, PnFlowId f)
{
  g_assert(f >= 0 && (guint)f < mm->flows->len);
  Flow *fl = flow_at(mm, f);
  g_assert(fl->active);
  bool quiet = others_at_bound(mm, f);
  for (int k = 0; k < fl->n; k++) {
    Elem *e = &fl->elems[k];
    Res *r  = res_at(mm, e->r);
    /* Swap-remove our reference; fix the position of the one moved into its place. */
    uint32_t last = --r->n_users;
    if (e->pos != last) {
      ElemRef moved                            = r->users[last];
      r->users[e->pos]                         = moved;
      flow_at(mm, moved.f)->elems[moved.k].pos = e->pos;
    }
    if (quiet)
      recompute_usage(mm, r);
    else
      mark_dirty(mm, e->r);
  }
  fl->active = false;
  fl->fresh  = false;
  fl->rate   = 0.0;
  fl->n      = 0;
  VEC_PUSH(mm->free_flows, mm->n_free, mm->cap_free, f);
  mm->n_active--;
}

double pn_maxmin_flow_rate(const PnMaxMin *mm, PnFlowId f)
{
  g_assert(f >= 0 && (guint)f < mm->flows->len && flow_at(mm, f)->active);
  return flow_at(mm, f)->rate;
}

int pn_maxmin_active_flows(const PnMaxMin *mm) { return mm->n_active; }

/* ---- solve ---- */

/* A level in the heap: the key is the level's bits (levels are +0.0 or more, and such doubles'
 * bits order as their values do), then at an equal level a flow before a resource (a bound equal
 * to a resource level: fix the bounded flow first), then the id. A resource's version rides in
 * the low bits: it must match Res.version, else the entry is stale (two entries of one resource
 * differ only there, and only the newest can be current). */
#define LEVEL_OF_RESOURCE ((uint64_t)1 << 63)

typedef struct {
  double level;
  int32_t id;
  uint32_t version;
  bool is_flow;
} Level;

static inline void push_level(PnMaxMin *mm, double level, bool is_flow, int32_t id, uint32_t version)
{
  int64_t bits;
  memcpy(&bits, &level, sizeof bits);
  uint64_t ord = (is_flow ? 0 : LEVEL_OF_RESOURCE) | (uint64_t)(uint32_t)id << 32 | version;
  pn_heap_push(&mm->heap, (PnHeapKey){.key = bits, .ord = ord});
}

static inline Level pop_level(PnMaxMin *mm)
{
  PnHeapKey k = pn_heap_pop(&mm->heap);
  Level l     = {.id      = (int32_t)((k.ord & ~LEVEL_OF_RESOURCE) >> 32),
                 .version = (uint32_t)k.ord,
                 .is_flow = !(k.ord & LEVEL_OF_RESOURCE)};
  memcpy(&l.level, &k.key, sizeof l.level);
  return l;
}

static inline double res_level(const Res *r)
{
  double rem = r->rem > 0.0 ? r->rem : 0.0;
  return r->sum_a > 0.0 ? rem / r->sum_a : 0.0;
}

static void push_res(PnMaxMin *mm, PnResourceId id)
{
  Res *r = res_at(mm, id);
  r->version++;
  push_level(mm, res_level(r), false, id, r->version);
}

/* Exact coefficient sum over the unfixed flows of r, used when subtraction lost precision. */
static double resync_sum(const PnMaxMin *mm, const Res *r)
{
  double s = 0.0;
  for (uint32_t i = 0; i < r->n_users; i++) {
    ElemRef ref    = r->users[i];
    const Flow *fl = flow_at(mm, ref.f);
    if (!fl->fixed)
      s += fl->elems[ref.k].a;
  }
  return s;
}

/* Fixes flow f at rate x and charges its resources; they go on the `touched` list. */
static void fix_flow(PnMaxMin *mm, PnFlowId f, double x)
{
  Flow *fl  = flow_at(mm, f);
  fl->fixed = true;
  fl->level = x;
  for (int k = 0; k < fl->n; k++) {
    Elem *e = &fl->elems[k];
    Res *r  = res_at(mm, e->r);
    r->rem -= e->a * x;
    if (r->rem < 0.0)
      r->rem = 0.0;
    r->sum_a -= e->a;
    r->n_unfixed--;
    if (!r->touched) {
      r->touched = true;
      VEC_PUSH(mm->touched, mm->n_touched, mm->cap_touched, e->r);
    }
  }
}

/* Re-keys every resource touched since the last call whose level may have changed. */
static void flush_touched(PnMaxMin *mm)
{
  for (uint32_t i = 0; i < mm->n_touched; i++) {
    PnResourceId id = mm->touched[i];
    Res *r          = res_at(mm, id);
    r->touched      = false;
    if (r->n_unfixed <= 0) {
      r->sum_a = 0.0;
      continue;
    }
    if (!(r->sum_a > PN_MAXMIN_SUM_RESYNC * r->sum_a0))
      r->sum_a = resync_sum(mm, r);
    push_res(mm, id);
  }
  mm->n_touched = 0;
}

/* Collects the component(s) reachable from the dirty resources and new flows. */
static void gather_component(PnMaxMin *mm)
{
  uint32_t ep = ++mm->epoch;
  if (ep == 0) { /* wrapped: clear every mark once so old marks cannot alias */
    for (guint i = 0; i < mm->res->len; i++)
      res_at(mm, (PnResourceId)i)->mark = 0;
    for (guint i = 0; i < mm->flows->len; i++)
      flow_at(mm, (PnFlowId)i)->mark = 0;
    ep = mm->epoch = 1;
  }
  mm->n_comp_res = mm->n_comp_flows = 0;
  for (uint32_t i = 0; i < mm->n_dirty_res; i++) {
    PnResourceId r = mm->dirty_res[i];
    Res *res       = res_at(mm, r);
    res->dirty     = false;
    if (res->mark != ep) {
      res->mark = ep;
      VEC_PUSH(mm->comp_res, mm->n_comp_res, mm->cap_comp_res, r);
    }
  }
  for (uint32_t i = 0; i < mm->n_dirty_flows; i++) {
    PnFlowId f = mm->dirty_flows[i];
    Flow *fl   = flow_at(mm, f);
    if (fl->active && fl->mark != ep) {
      fl->mark = ep;
      VEC_PUSH(mm->comp_flows, mm->n_comp_flows, mm->cap_comp_flows, f);
    }
  }
  mm->n_dirty_res = mm->n_dirty_flows = 0;

  uint32_t ri = 0, fi = 0;
  while (ri < mm->n_comp_res || fi < mm->n_comp_flows) {
    for (; ri < mm->n_comp_res; ri++) {
      Res *res = res_at(mm, mm->comp_res[ri]);
      for (uint32_t j = 0; j < res->n_users; j++) {
        PnFlowId f = res->users[j].f;
        Flow *fl   = flow_at(mm, f);
        if (fl->mark != ep) {
          fl->mark = ep;
          VEC_PUSH(mm->comp_flows, mm->n_comp_flows, mm->cap_comp_flows, f);
        }
      }
    }
    for (; fi < mm->n_comp_flows; fi++) {
      Flow *fl = flow_at(mm, mm->comp_flows[fi]);
      for (int k = 0; k < fl->n; k++) {
        PnResourceId r = fl->elems[k].r;
        Res *res       = res_at(mm, r);
        if (res->mark != ep) {
          res->mark = ep;
          VEC_PUSH(mm->comp_res, mm->n_comp_res, mm->cap_comp_res, r);
        }
      }
    }
  }
}

/* Publishes flow f's new level: its rate moves (and f is reported) when the level differs by more
 * than the tolerance, or when f is new. */
static inline void publish_rate(PnMaxMin *mm, PnFlowId f, PnFlowId *changed, uint32_t *n_changed)
{
  Flow *fl = flow_at(mm, f);
  g_assert(fl->fixed);
  double x   = fl->level > 0.0 ? fl->level : 0.0; /* also maps NaN to 0 */
  double old = fl->rate;
  bool moved = fabs(x - old) > PN_MAXMIN_REL_TOL * fmax(fabs(x), fabs(old));
  if (moved || fl->fresh) {
    fl->rate = x;
    if (changed)
      changed[(*n_changed)++] = f;
  }
  fl->fresh = false;
}

/* A resource's usage, summed over its flows in their order. */
static inline void recompute_usage(PnMaxMin *mm, Res *r)
{
  double u = 0.0;
  for (uint32_t j = 0; j < r->n_users; j++) {
    ElemRef ref = r->users[j];
    Flow *fl    = flow_at(mm, ref.f);
    u += fl->elems[ref.k].a * fl->rate;
  }
  r->usage = u;
}

/* A component with at most one flow (most of them: a transfer alone on its links, or links a
 * transfer just left): the flow's level is lone_level's, without the heap. */
static void solve_single(PnMaxMin *mm, PnFlowId *changed, uint32_t *n_changed)
{
  if (mm->n_comp_flows == 1) {
    PnFlowId f = mm->comp_flows[0];
    Flow *fl   = flow_at(mm, f);
    fl->fixed  = true;
    fl->level  = lone_level(mm, fl);
    publish_rate(mm, f, changed, n_changed);
  }
  for (uint32_t i = 0; i < mm->n_comp_res; i++)
    recompute_usage(mm, res_at(mm, mm->comp_res[i]));
}

/* A component where every flow has a bound and every resource has room for what the bounds
 * ask (sum of a * bound below its capacity, with a margin): each flow gets its bound, and this
 * is what progressive filling gives. There, a resource's level rem / sum_a stays above the
 * weighted mean of its unfixed flows' bounds, hence above the smallest of them, so every pop is
 * a flow's own bound (x = bound exactly) and fixing it keeps the invariant. The margin keeps
 * floating-point near-ties on the general path. False (nothing changed) when it does not apply. */
static bool solve_all_bounded(PnMaxMin *mm, PnFlowId *changed, uint32_t *n_changed)
{
  for (uint32_t i = 0; i < mm->n_comp_flows; i++)
    if (!(flow_at(mm, mm->comp_flows[i])->bound > 0.0))
      return false;
  for (uint32_t i = 0; i < mm->n_comp_res; i++) {
    const Res *r  = res_at(mm, mm->comp_res[i]);
    double demand = 0.0;
    for (uint32_t j = 0; j < r->n_users; j++) {
      const Flow *fl = flow_at(mm, r->users[j].f);
      demand += fl->elems[r->users[j].k].a * fl->bound;
    }
    if (!has_room(r, demand))
      return false;
  }
  for (uint32_t i = 0; i < mm->n_comp_flows; i++) {
    Flow *fl  = flow_at(mm, mm->comp_flows[i]);
    fl->fixed = true;
    fl->level = fl->bound;
    publish_rate(mm, mm->comp_flows[i], changed, n_changed);
  }
  for (uint32_t i = 0; i < mm->n_comp_res; i++)
    recompute_usage(mm, res_at(mm, mm->comp_res[i]));
  return true;
}

/* Appends the flows placed since the last solve and not reported by it (a solve of their
 * component reports them itself), and forgets them. */
static void report_placed(PnMaxMin *mm, GArray *changed_out)
{
  for (uint32_t i = 0; i < mm->n_placed; i++) {
    Flow *fl = flow_at(mm, mm->placed[i]);
    if (fl->active && fl->fresh) {
      fl->fresh = false;
      if (changed_out)
        g_array_append_val(changed_out, mm->placed[i]);
    }
  }
  mm->n_placed = 0;
}

void pn_maxmin_solve(PnMaxMin *mm, GArray *changed_out)
{
  if (changed_out) {
    g_assert(g_array_get_element_size(changed_out) == sizeof(PnFlowId));
    g_array_set_size(changed_out, 0);
  }
  if (mm->n_dirty_res == 0 && mm->n_dirty_flows == 0) {
    report_placed(mm, changed_out);
    return;
  }
  gather_component(mm);
  /* Every flow of the component may be reported: room for all of them, trimmed at the end. */
  PnFlowId *changed  = NULL;
  uint32_t n_changed = 0;
  if (changed_out) {
    g_array_set_size(changed_out, mm->n_comp_flows);
    changed = (PnFlowId *)(void *)changed_out->data;
  }
  if (mm->n_comp_flows <= 1) {
    solve_single(mm, changed, &n_changed);
    if (changed_out)
      g_array_set_size(changed_out, n_changed);
    report_placed(mm, changed_out);
    return;
  }

  if (solve_all_bounded(mm, changed, &n_changed)) {
    if (changed_out)
      g_array_set_size(changed_out, n_changed);
    report_placed(mm, changed_out);
    return;
  }

  /* Progressive filling on the component. */
  for (uint32_t i = 0; i < mm->n_comp_res; i++) {
    Res *r       = res_at(mm, mm->comp_res[i]);
    r->rem       = r->capacity;
    r->sum_a     = 0.0;
    r->n_unfixed = 0;
  }
  mm->heap.n = 0;
  for (uint32_t i = 0; i < mm->n_comp_flows; i++) {
    PnFlowId f = mm->comp_flows[i];
    Flow *fl   = flow_at(mm, f);
    fl->fixed  = false;
    fl->level  = 0.0;
    for (int k = 0; k < fl->n; k++) {
      Res *r = res_at(mm, fl->elems[k].r);
      r->sum_a += fl->elems[k].a;
      r->n_unfixed++;
    }
    if (fl->bound > 0.0)
      push_level(mm, fl->bound, true, f, 0);
  }
  for (uint32_t i = 0; i < mm->n_comp_res; i++) {
    PnResourceId id = mm->comp_res[i];
    Res *r          = res_at(mm, id);
    r->sum_a0       = r->sum_a;
    if (r->n_unfixed > 0)
      push_res(mm, id);
  }
  while (mm->heap.n > 0) {
    Level e = pop_level(mm);
    if (e.is_flow) {
      if (!flow_at(mm, e.id)->fixed)
        fix_flow(mm, e.id, e.level);
    } else {
      Res *r = res_at(mm, e.id);
      if (e.version != r->version || r->n_unfixed <= 0)
        continue; /* stale: the level moved since this entry was pushed */
      /* Every unfixed flow of the bottleneck gets its level. fix_flow() may not reorder
       * r->users (it only touches scratch fields), so the index loop is safe. */
      for (uint32_t j = 0; j < r->n_users; j++) {
        PnFlowId f = r->users[j].f;
        if (!flow_at(mm, f)->fixed)
          fix_flow(mm, f, e.level);
      }
    }
    flush_touched(mm);
  }

  /* Publish rates, report the ones that moved, and recompute usages exactly. */
  for (uint32_t i = 0; i < mm->n_comp_flows; i++)
    publish_rate(mm, mm->comp_flows[i], changed, &n_changed);
  for (uint32_t i = 0; i < mm->n_comp_res; i++)
    recompute_usage(mm, res_at(mm, mm->comp_res[i]));
  if (changed_out)
    g_array_set_size(changed_out, n_changed);
  report_placed(mm, changed_out);
}
