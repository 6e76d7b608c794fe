/* calib-private.h — what the fits (calib.c, host.c), the replay check (check.c) and its
 * leave-one-out predictions (loo.c) share: the fits' own readings of the measurements, so that
 * the check replays what the tables hold, and the check's primitives. */
#ifndef PN_CALIB_PRIVATE_H
#define PN_CALIB_PRIVATE_H

#include <stdbool.h>

#include "calib/calib.h"

/* Transfers at least this large are bandwidth-bound: the HBM and copy-engine figures and their
 * replay use them alone. */
#define PN_CAL_LARGE_BYTES (256.0 * 1024 * 1024)

/* The attention table the fit keeps: the fastest backend per shape (replaces t's points). */
void pn__calib_fit_attn(const PnCalData *d, PnAttnTable *t);

/* A measurement slower than a larger message of the same collective, group and channel count:
 * not physical (a warm-up or a disturbed sample); the fit ignores it, the check reports it. */
bool pn__calib_coll_outlier(const PnCalData *d, const PnCalColl *c);

/* Appends predicted / measured - 1 to `errors` (of double); a case without a measurement or
 * a finite prediction is left out. */
void pn__calib_push_err(GArray *errors, double predicted, double measured);

/* A measured collective's time alone through profile `p` (`cost` gets its latency and rate). */
double pn__calib_coll_predict(const PnHwProfile *p, const PnCalColl *c, PnCollCost *cost);

/* The host figures, kernel_launch_ns and the kernel floors from the launch and host_torch rows
 * (host.c); what the rows do not cover is left as it was. */
void pn__calib_fit_host(const PnCalData *d, PnHwProfile *p, PnCalHostFitted *f);

/* The replay of the host rows through `p` (host.c): out->host_layer_*, out->floor_*. */
void pn__calib_check_host(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out);

/* The leave-one-out replay of every table of `p` (loo.c): out->loo and out->points. */
/* hbm.c: the GEMMs' HBM bytes per FLOP (profile hbm_share) from GEMMs beside copying spinners, and
 * the replay of every measured pair of HBM users. */
void pn__calib_fit_hbm(const PnCalData *d, PnHwProfile *p, PnCalFitted *f);
void pn__calib_check_hbm(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out);
/* A GEMM beside a real NCCL collective on all SMs (check.c): its rate relative to alone, from its
 * shape's SMs-held curve (else the profile's) at the SMs the collective's CTAs leave (*held); < 0
 * when the profile has no such curve. */
double pn__calib_nccl_overlap_sm_rate(const PnHwProfile *p, const PnCalNcclOverlap *o, int *held);
void pn__calib_check_loo(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out);

#endif
