/* strategy.h — the registry of overlap strategies: one entry per mechanism the frameworks can
 * switch on (Redis's command table), with the scenario keys it owns, the gate that turns those
 * keys into plan fields, and, when it has one, the what-if knob that flips it.
 *
 * Invariants: every key of the scenario's ddp, comm_overlap and env objects belongs to exactly
 * one entry (tests/unit/test_overlap.c checks it against the loader's schema); the registry's
 * order is the gating order (pn_overlap_resolve runs the gates in it, so warnings and errors come
 * in that order); an entry with a knob has applies, is_on and set_on / set_off, one without has
 * none of them. The tables are constant; nothing here allocates.
 *
 * Adding a strategy: an entry here (registry.c) and its gate in overlap/<dimension>.c, a plan
 * field (sched/plan.h) and the graph that follows it (sched/), the scenario key
 * (workload/config.h, io/scenario.c). `run --what-if` picks the knob up from the registry.
 */
#ifndef PN_OVERLAP_STRATEGY_H
#define PN_OVERLAP_STRATEGY_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

#include "sched/plan.h"
#include "workload/config.h"

#define PN_OVERLAP_MAX_KEYS 8

typedef struct {
  const char *name;                      /* as `run --what-if` prints it */
  const char *keys[PN_OVERLAP_MAX_KEYS]; /* dotted scenario keys ("ddp.bucket_size"), NULL after the last */
  /* Writes the entry's plan fields, warns for what it silently changes, fails where the frameworks
   * refuse; NULL when the entry before it gates it too (one framework check covers both). */
  gboolean (*gate)(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
  /* The knob (all NULL without one): */
  bool (*applies)(const PnScenario *sc); /* the mechanism can act in this scenario */
  bool (*is_on)(const PnPlan *plan);     /* the resolved plan runs it */
  const char *set_on[2], *set_off[2];    /* one or two --set each (NULL: none) */
} PnOverlapStrategy;

/* In gating order (Megatron-Bridge's CommOverlapConfig.setup, then Megatron-Core's checks). */
extern const PnOverlapStrategy pn_overlap_strategies[];
extern const size_t pn_overlap_n_strategies;

/* The entries with a knob, in the order `run --what-if` prints them (data parallelism first, as
 * it always has), which is not the gating order. */
extern const PnOverlapStrategy *const pn_overlap_what_if[];
extern const size_t pn_overlap_n_what_if;

#endif
