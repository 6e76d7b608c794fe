/* hbm.c — HBM shared by pressure (hbm.h). */
#include "hw/hbm.h"

#include <math.h>

double pn_hbm_capacity(const PnHwProfile *hw, double w)
{
  const PnCurve *c = &hw->hbm_share.pressure;
  if (!(w > 0.0) || c->n == 0)
    return 0.0;
  if (w < c->x[0]) /* below the first point: its rate per SM-equivalent */
    return c->y[0] * w / c->x[0];
  return pn_curve_eval(c, w, 0.0);
}

double pn_hbm_nccl_bytes_per_byte(const PnHwProfile *hw)
{
  return hw->hbm_share.nccl_bytes_per_busbw_byte > 0.0 ? hw->hbm_share.nccl_bytes_per_busbw_byte : 3.0;
}

double pn_hbm_transfer_pressure(const PnHwProfile *hw, int sms, double need)
{
  return fmax((double)sms, need / pn_hbm_unloaded(hw));
}

double pn_hbm_unloaded(const PnHwProfile *hw)
{
  const PnCurve *c = &hw->hbm_share.pressure;
  return c->n > 0 && c->x[0] > 0.0 ? c->y[0] / c->x[0] : 0.0;
}

double pn_hbm_share(const PnHwProfile *hw, PnHbmUser *u, int n)
{
  double w_all = 0.0;
  int fixed    = 0;
  for (int i = 0; i < n; i++) {
    bool none   = !(u[i].w > 0.0);   /* pressing nothing, served nothing */
    u[i].served = none ? 0.0 : -1.0; /* -1: not fixed */
    fixed += none;
    w_all += none ? 0.0 : u[i].w;
  }
  double left = pn_hbm_capacity(hw, w_all), lambda = HUGE_VAL;
  while (fixed < n) {
    double w = 0.0;
    for (int i = 0; i < n; i++)
      if (u[i].served < 0.0)
        w += u[i].w;
    lambda     = w > 0.0 ? fmax(left, 0.0) / w : HUGE_VAL;
    bool again = false;
    for (int i = 0; i < n; i++)
      if (u[i].served < 0.0 && u[i].need <= lambda * u[i].w) { /* needs no more than its share: met */
        u[i].served = u[i].need;
        left -= u[i].need;
        fixed++;
        again = true;
      }
    if (!again) {
      for (int i = 0; i < n; i++)
        if (u[i].served < 0.0)
          u[i].served = lambda * u[i].w;
      break;
    }
  }
  return lambda;
}
