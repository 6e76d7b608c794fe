/* hbm.h — how a GPU's HBM bandwidth is shared by the kernels and transfers running on it at once
 * (profile hbm_share; measured by microbench/mb_hbm_share.cu, fitted by calib/hbm.c).
 *
 * The model, from the measurements: HBM serves its users in proportion to their *pressure*, the
 * memory requests each keeps in flight, counted in SM-equivalents of a streaming copy (a copy
 * kernel on s SMs presses s; two copies on 8 and 124 SMs get 6.1% and 93.9% of the bandwidth,
 * their SM shares, to three digits). With total pressure W the HBM delivers F(W): the bandwidth
 * a copy kernel reaches alone on W SMs (profile curve hbm_share.pressure; its slope at 0, the
 * unloaded rate u per SM-equivalent, comes from its first point), flat beyond the last point.
 * A user that needs less than its share is given what it needs; the rest is shared again among
 * the others in proportion to their pressure (weighted water-filling):
 *     lambda: sum_i min(need_i, lambda * w_i) = F(W)   (or every need met),
 *     served_i = min(need_i, lambda * w_i).
 * Users: a compute kernel with SM share s presses pi * s (pi = 1 for memory-bound kernels, the
 * fitted hbm_share.gemm_pressure for GEMMs and attention) and needs its SM rate times its demand
 * at full speed, at most F(pi * s) (what it would get alone: a kernel alone is never slowed, its
 * measured time already holds its memory traffic); a transfer presses the SMs its kernel holds
 * (NCCL's and userbuffers' CTAs copy as a streaming kernel's do), at least need / u (Little's law
 * at the unloaded latency: a copy engine holds no SM), and needs its HBM bytes per byte times the
 * rate it could run at alone.
 * Cost: O(n^2) for n users (a few per GPU). */
#ifndef PN_HW_HBM_H
#define PN_HW_HBM_H

#include "hw/profile.h"

typedef struct {
  double w;      /* pressure, SM-equivalents */
  double need;   /* bytes/ns */
  double served; /* out: bytes/ns */
} PnHbmUser;

/* F(w): what the HBM delivers under pressure w (bytes/ns); 0 for w <= 0. */
double pn_hbm_capacity(const PnHwProfile *hw, double w);
/* u: bytes/ns per SM-equivalent of pressure at no load (> 0 when the curve has points). */
double pn_hbm_unloaded(const PnHwProfile *hw);
/* HBM bytes an NCCL collective moves per byte of its bus bandwidth, per GPU: the profile's
 * hbm_share.nccl_bytes_per_busbw_byte (measured), else 3, its data path's least (a peer writes
 * each chunk into this GPU's FIFO, the kernel reads it there and writes it out or reads the local
 * input it reduces: prims_simple.h). */
double pn_hbm_nccl_bytes_per_byte(const PnHwProfile *hw);
/* A transfer's pressure (above): the `sms` its kernel holds, at least its `need` over u. */
double pn_hbm_transfer_pressure(const PnHwProfile *hw, int sms, double need);
/* Shares F(sum of w) among the n users (weighted water-filling above); returns lambda. */
double pn_hbm_share(const PnHwProfile *hw, PnHbmUser *users, int n);

#endif
