/* whatif.h — one layout with each overlap knob of the registry (overlap/strategy.h) that applies
 * to it flipped off and on, everything else as given: what each strategy is worth there.
 *
 * The caller says how a variant is simulated (`run`: from a scenario file with --set for
 * `run --what-if`, from a sweep's candidate for `plan`), and may watch the progress. A direction
 * the frameworks refuse for this layout (overlap_p2p_comm off with VPP at PP 2, for one) is
 * recorded as refused with its reason and the other knobs still run; only an internal error
 * stops the loop. Cost: two simulations per knob that applies.
 */
#ifndef PN_SWEEP_WHATIF_H
#define PN_SWEEP_WHATIF_H

#include <glib.h>
#include <stdbool.h>

#include "io/report.h"
#include "sim/result.h"
#include "workload/config.h"

/* Simulates the layout with `set` (one or two "key=value", NULL after the last) applied. Returns
 * the result, or NULL with *refused set (the frameworks refuse it; g_free) or, on an internal
 * error, with `error` set. */
typedef PnResult *(*PnWhatIfRun)(const char *const set[2], gpointer user, char **refused, GError **error);
/* Run `i` of `n` is about to start (knob `knob`, direction "off" / "on"); with `knob` NULL, the
 * loop is over. */
typedef void (*PnWhatIfProgress)(int i, int n, const char *knob, const char *direction, gpointer user);

/* An array for PnWhatIfKnob (io/report.h) that frees each knob's refusals. */
GArray *pn_sweep_what_if_knobs_new(void);

/* Appends to `knobs` one PnWhatIfKnob per knob that applies to `base`, in the registry's what-if
 * order. FALSE with `error` set when the gating refuses `base` itself or a run fails internally. */
gboolean pn_sweep_what_if(const PnScenario *base, PnWhatIfRun run, PnWhatIfProgress progress, gpointer user,
                          GArray *knobs, GError **error);

#endif
