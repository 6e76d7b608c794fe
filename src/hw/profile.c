/* profile.c — freeing a hardware profile and evaluating its calibration curves (profile.h). */
#include "hw/profile.h"

#include <math.h>

/* The profile's owned memory, listed once for copy and free (a field added to PnHwProfile that
 * owns memory goes into one of these two lists): its flat tables (pointer, count), and its
 * curves, the shape-contention ones inside the shape_contention table included. */
#define PROFILE_TABLES(X, p)                                                                                           \
  X((p)->gemm_bf16.pts, (p)->gemm_bf16.n)                                                                              \
  X((p)->gemm_fp8.pts, (p)->gemm_fp8.n)                                                                                \
  X((p)->gemm_accum[0][0].pts, (p)->gemm_accum[0][0].n)                                                                \
  X((p)->gemm_accum[0][1].pts, (p)->gemm_accum[0][1].n)                                                                \
  X((p)->gemm_accum[1][0].pts, (p)->gemm_accum[1][0].n)                                                                \
  X((p)->gemm_accum[1][1].pts, (p)->gemm_accum[1][1].n)                                                                \
  X((p)->attn_bf16.pts, (p)->attn_bf16.n)                                                                              \
  X((p)->bmm_bf16.pts, (p)->bmm_bf16.n)                                                                                \
  X((p)->nccl_table.pts, (p)->nccl_table.n)                                                                            \
  X((p)->contention_points, (p)->n_contention_points)                                                                  \
  X((p)->shape_contention, (p)->n_shape_contention)

static void for_each_curve(PnHwProfile *p, void (*fn)(PnCurve *c))
{
  PnCurve *curves[] = {&p->gemm_sm_scaling,       &p->mem_sm_scaling,      &p->coll_size_efficiency,
                       &p->gemm_sm_limit_scaling, &p->coll_efficiency[0],  &p->coll_efficiency[1],
                       &p->coll_efficiency[2],    &p->coll_efficiency[3],  &p->coll_efficiency[4],
                       &p->mem_bandwidth[0],      &p->mem_bandwidth[1],    &p->mem_bandwidth[2],
                       &p->mem_bandwidth[3],      &p->mem_bandwidth[4],    &p->hbm_share.pressure,
                       &p->ub_push_bytes_per_ns,  &p->ub_pull_bytes_per_ns};
  for (size_t i = 0; i < G_N_ELEMENTS(curves); i++)
    fn(curves[i]);
  for (int k = 0; k < PN_TK_N; k++)
    fn(&p->torch_kernel_vs_copy[k]);
  for (int i = 0; i < p->n_shape_contention; i++)
    for (int v = 0; v < 2; v++)
      fn(&p->shape_contention[i].curve[v]);
}

static void curve_dup(PnCurve *c)
{
  c->x = c->n > 0 ? g_memdup2(c->x, (gsize)c->n * sizeof *c->x) : NULL;
  c->y = c->n > 0 ? g_memdup2(c->y, (gsize)c->n * sizeof *c->y) : NULL;
}

static void curve_free(PnCurve *c)
{
  g_free(c->x);
  g_free(c->y);
}

#define DUP_TABLE(ptr, n) (ptr) = (n) > 0 ? g_memdup2((ptr), (gsize)(n) * sizeof *(ptr)) : NULL;
#define FREE_TABLE(ptr, n) g_free(ptr);

PnHwProfile *pn_hw_profile_copy(const PnHwProfile *p)
{
  g_assert(p != NULL);
  PnHwProfile *c = g_memdup2(p, sizeof *p);
  PROFILE_TABLES(DUP_TABLE, c)
  for_each_curve(c, curve_dup); /* after the tables: shape_contention holds curves */
  return c;
}

void pn_hw_profile_free(PnHwProfile *p)
{
  if (!p)
    return;
  for_each_curve(p, curve_free); /* before the tables: shape_contention holds curves */
  PROFILE_TABLES(FREE_TABLE, p)
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

static bool same_shape(const PnShapeContention *s, const PnContentionPoint *c)
{
  return s->m == c->m && s->n == c->n && s->k == c->k && s->fp8 == c->fp8;
}

void pn_hw_profile_index_contention(PnHwProfile *p)
{
  for (int i = 0; i < p->n_shape_contention; i++)
    for (int v = 0; v < 2; v++) {
      g_free(p->shape_contention[i].curve[v].x);
      g_free(p->shape_contention[i].curve[v].y);
    }
  g_free(p->shape_contention);
  p->shape_contention   = g_new0(PnShapeContention, p->n_contention_points ? p->n_contention_points : 1);
  p->n_shape_contention = 0;
  for (int i = 0; i < p->n_contention_points; i++) {
    const PnContentionPoint *c = &p->contention_points[i];
    int s                      = 0;
    while (s < p->n_shape_contention && !same_shape(&p->shape_contention[s], c))
      s++;
    if (s == p->n_shape_contention)
      p->shape_contention[p->n_shape_contention++] =
          (PnShapeContention){.m = c->m, .n = c->n, .k = c->k, .fp8 = c->fp8};
  }
  for (int s = 0; s < p->n_shape_contention; s++) {
    PnShapeContention *sc = &p->shape_contention[s];
    for (int v = 0; v < 2; v++) {
      /* points by SMs usable, ascending (= SMs held descending), and all SMs at 1 */
      GArray *xs = g_array_new(FALSE, FALSE, sizeof(double)), *ys = g_array_new(FALSE, FALSE, sizeof(double));
      for (int held = p->sm_count - 1; held >= 1; held--)
        for (int i = 0; i < p->n_contention_points; i++) {
          const PnContentionPoint *c = &p->contention_points[i];
          if (same_shape(sc, c) && c->variant == v && c->sms_held == held) {
            double x = (double)(p->sm_count - held), y = 1.0 / c->slowdown;
            g_array_append_val(xs, x);
            g_array_append_val(ys, y);
            break;
          }
        }
      if (xs->len > 0) {
        double x = (double)p->sm_count, y = 1.0;
        g_array_append_val(xs, x);
        g_array_append_val(ys, y);
        sc->curve[v] = (PnCurve){.n = (int)xs->len,
                                 .x = (double *)(void *)g_array_free(xs, FALSE),
                                 .y = (double *)(void *)g_array_free(ys, FALSE)};
      } else {
        g_array_free(xs, TRUE);
        g_array_free(ys, TRUE);
      }
    }
  }
}

int pn_hw_profile_nearest_contention(const PnHwProfile *p, int64_t m, int64_t n, int64_t k, bool fp8)
{
  int best      = -1;
  double best_d = 0.0;
  for (int s = 0; s < p->n_shape_contention; s++) {
    const PnShapeContention *sc = &p->shape_contention[s];
    double dm = log2((double)m / (double)sc->m), dn = log2((double)n / (double)sc->n),
           dk = log2((double)k / (double)sc->k);
    /* contention depends on how the GEMM's tiles fill the waves of SMs, which nearby shapes need
     * not share: only a shape within a factor of sqrt(2) in every dimension, of the same dtype,
     * stands for another */
    if (fabs(dm) > 0.5 || fabs(dn) > 0.5 || fabs(dk) > 0.5 || sc->fp8 != fp8)
      continue;
    double d = dm * dm + dn * dn + dk * dk;
    if (best < 0 || d < best_d) {
      best   = s;
      best_d = d;
    }
  }
  return best;
}

int pn_hw_profile_p2p_net_ctas(const PnHwProfile *p)
{
  int nics = MAX(1, (int)lround(1.0 / pn_hw_profile_gpus_per_nic(p))); /* the GPU's own NICs */
  int n    = MAX(nics, (int)ceil(p->nic_bytes_per_ns / 14.0 - 1e-9));
  int pow2 = 1;
  while (pow2 < n && pow2 < 64) /* NCCL's MAXCHANNELS bounds the channels per peer */
    pow2 *= 2;
  return pow2;
}

double pn_hw_profile_dgx_host_speed(const PnHwProfile *p)
{
  if (!(p->host.ref_linear_ns > 0.0 && p->host.dgx_ref_linear_ns > 0.0))
    return 1.0;
  return p->host.ref_linear_ns / p->host.dgx_ref_linear_ns;
}

double pn_hw_profile_gpus_per_nic(const PnHwProfile *p)
{
  if (p->gpus_per_node <= 0 || p->nics_per_node <= 0)
    return 1.0;
  return (double)p->gpus_per_node / (double)p->nics_per_node;
}
