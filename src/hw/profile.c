/* profile.c — freeing a hardware profile and evaluating its calibration curves (profile.h). */
#include "hw/profile.h"

#include <math.h>

void pn_hw_profile_free(PnHwProfile *p)
{
  if (!p)
    return;
  PnCurve *curves[] = {&p->gemm_sm_scaling,     &p->mem_sm_scaling,     &p->coll_size_efficiency,
                       &p->gemm_sm_limit_scaling, &p->coll_efficiency[0], &p->coll_efficiency[1],
                       &p->coll_efficiency[2],    &p->coll_efficiency[3], &p->coll_efficiency[4],
                       &p->mem_bandwidth[0],      &p->mem_bandwidth[1],   &p->mem_bandwidth[2],
                       &p->mem_bandwidth[3]};
  for (size_t i = 0; i < G_N_ELEMENTS(curves); i++) {
    g_free(curves[i]->x);
    g_free(curves[i]->y);
  }
  g_free(p->gemm_bf16.pts);
  g_free(p->gemm_fp8.pts);
  g_free(p->attn_bf16.pts);
  g_free(p->nccl_pair_table.pts);
  g_free(p);
}

double pn_curve_eval(const PnCurve *c, double x, double dflt)
{
  if (!c || c->n <= 0)
    return dflt;
  int n = c->n;
  if (n == 1 || !(x > c->x[0])) /* also catches NaN x */
    return c->y[0];
  if (x >= c->x[n - 1])
    return c->y[n - 1];
  /* Binary search for the segment x[lo] <= x < x[lo + 1]. */
  int lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (c->x[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  double x0 = c->x[lo], x1 = c->x[hi];
  if (!(x1 > x0)) /* unsorted or duplicate abscissae: take the left point, never divide by 0 */
    return c->y[lo];
  double t;
  if (c->log_x && x0 > 0.0)
    t = (log2(x) - log2(x0)) / (log2(x1) - log2(x0));
  else
    t = (x - x0) / (x1 - x0);
  return c->y[lo] + t * (c->y[hi] - c->y[lo]);
}
