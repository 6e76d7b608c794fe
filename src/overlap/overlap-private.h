/* overlap-private.h — what the overlap/ source files share: the gate of each registry entry
 * (registry.c lists them, one dimension file each defines them) and the helpers every gate uses.
 *
 * A gate reads the scenario, writes its own fields of the plan (and reads only fields that gates
 * before it in the registry wrote), appends a warning for every option it silently changes, and
 * fails with "<scenario path>: <JSON pointer>: <violated invariant>" in the PN_OVERLAP_ERROR
 * domain where the frameworks refuse a configuration outright. Only overlap/ includes this header.
 */
#ifndef PN_OVERLAP_PRIVATE_H
#define PN_OVERLAP_PRIVATE_H

#include <glib.h>
#include <stdarg.h>
#include <stdbool.h>

#include "overlap/gating.h"
#include "sched/plan.h"
#include "workload/config.h"

#define I64 "%" G_GINT64_FORMAT

/* Appends a formatted warning; nothing when `warnings` is NULL. */
G_GNUC_PRINTF(2, 3)
static inline void pn__overlap_warn(GPtrArray *warnings, const char *fmt, ...)
{
  if (!warnings)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_ptr_array_add(warnings, g_strdup_vprintf(fmt, ap));
  va_end(ap);
}

/* A hard failure: "<scenario>: <JSON pointer of the option>: <violated invariant>". Returns FALSE. */
G_GNUC_PRINTF(4, 5)
static inline gboolean pn__overlap_fail(GError **error, const PnScenario *sc, const char *ptr, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, PN_OVERLAP_ERROR, PN_OVERLAP_ERROR_INVALID, "%s: %s: %s", sc->path, ptr, msg);
  return FALSE;
}

static inline bool pn__overlap_tri_or(PnTri t, bool dflt) { return t == PN_TRI_UNSET ? dflt : t == PN_TRI_TRUE; }

/* ---- gates, in registry order (registry.c) ---- */
gboolean pn__overlap_gate_shared_expert(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_tp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_p2p(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_moe_ep(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_delay_wgrad(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_fsdp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_dp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_pr4268(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_nccl(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_cp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_connections(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);
gboolean pn__overlap_gate_cuda_graphs(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error);

#endif
