/* cp.c — context parallelism: the attention's communication scheme (cp_comm_type), taken as the
 * user gives it: no framework gates it (io/scenario.c checks that the layout divides as "a2a"
 * needs). */
#include "overlap/overlap-private.h"

gboolean pn__overlap_gate_cp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  (void)warnings;
  (void)error;
  plan->cp_comm_type = sc->comm_overlap.cp_comm_type;
  return TRUE;
}
