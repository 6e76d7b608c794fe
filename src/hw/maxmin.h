/* maxmin.h — max-min fair sharing of capacities among fluid flows (SimGrid's LMM, simplified).
 *
 * What it models: resources (a link direction, a NIC, HBM) with a capacity in units per ns, and
 * flows (a transfer, a collective) that each use several resources. A flow's rate x_f is in its
 * own nominal units per ns; on resource r it consumes a_{f,r} * x_f, where a_{f,r} > 0 is its
 * usage coefficient (e.g. wire bytes on r per nominal byte). Each flow may also have an upper
 * bound b_f on x_f (e.g. what its NCCL channels can drive).
 *
 * Solution (progressive filling): all flows start unfixed. Repeatedly, for each resource r with
 * unfixed flows, the level it allows is L_r = (C_r - used_r) / sum_{unfixed f on r} a_{f,r};
 * a flow's own level is b_f. The smallest level L* is taken; every unfixed flow on that resource
 * (or that bounded flow) gets x_f = L*, its consumption is charged to all its resources, and
 * those flows are fixed. Ends when all flows are fixed. The result: no resource above capacity,
 * and no flow can grow without shrinking a flow whose rate is not larger (max-min fairness).
 *
 * Units: capacities and rates are doubles (units per ns); times are the caller's.
 * Cost: O(F * R_f * iterations) per solve; the solver only re-solves the connected component of
 * resources touched since the last solve (flows added/removed), and reports which flows'
 * rates changed so the caller moves only those completion events. No allocation per solve once
 * arrays have grown.
 */
#ifndef PN_HW_MAXMIN_H
#define PN_HW_MAXMIN_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct PnMaxMin PnMaxMin;
typedef int32_t PnResourceId;
typedef int32_t PnFlowId;

PnMaxMin *pn_maxmin_new(void);
void pn_maxmin_free(PnMaxMin *mm); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnMaxMin, pn_maxmin_free)

/* capacity > 0, in units per ns. */
PnResourceId pn_maxmin_add_resource(PnMaxMin *mm, double capacity);
double pn_maxmin_resource_capacity(const PnMaxMin *mm, PnResourceId r);
/* Sum over active flows of a_{f,r} * x_f after the last solve. */
double pn_maxmin_resource_usage(const PnMaxMin *mm, PnResourceId r);

/* Adds an active flow using n resources with coefficients coef[i] > 0; bound <= 0 means none.
 * Flow ids may be reused after pn_maxmin_remove_flow(). */
PnFlowId pn_maxmin_add_flow(PnMaxMin *mm, int n, const PnResourceId *res, const double *coef, double bound);
/* Same, and when the flow can be given its bound at once (bounded, on resources with no change
 * pending, each with room for it: see maxmin.c), sets *placed: its rate is then final until a
 * change touches its resources, and no solve reports it (the caller takes it from here). */
PnFlowId pn_maxmin_add_flow_placed(PnMaxMin *mm, int n, const PnResourceId *res, const double *coef, double bound,
                                   bool *placed);
void pn_maxmin_remove_flow(PnMaxMin *mm, PnFlowId f);
/* Changes an active flow's bound (<= 0: none); the next solve re-solves the flows that share a
 * resource with it. */
void pn_maxmin_set_bound(PnMaxMin *mm, PnFlowId f, double bound);

/* Re-solves what changed since the last call. Fills `changed` (if not NULL) with the ids of
 * active flows whose rate differs from before the call (new flows included). */
void pn_maxmin_solve(PnMaxMin *mm, GArray *changed /* of PnFlowId */);
double pn_maxmin_flow_rate(const PnMaxMin *mm, PnFlowId f);
int pn_maxmin_active_flows(const PnMaxMin *mm);

#endif
