/* hbm.c — HBM sharing (hw/hbm.h): the pressure curve, the memory kernels' SM curve and the GEMMs'
 * pressure and demand fitted from microbench/mb_hbm_share.cu and mb_gemm_contention.cu, and every
 * measured pair of HBM users replayed through the executor's rule.
 *
 * The curve: what a copy kernel alone on k SMs moves (mb_hbm_share's copy_alone rows, the "hbm"
 * layout, 2 GiB per direction: no L2 reuse), x = k, y = bytes/ns, the median per k. Measured on
 * another GPU model than the profile's, it is scaled to the profile's HBM figure: F(w) =
 * (C / C_m) F_m(w C_m / C), C = hbm_bytes_per_ns, C_m the measured curve's last value: the same
 * unloaded rate per SM (an SM property), saturating at this GPU's bandwidth. mem_sm_scaling is
 * F(s) / F(sm_count) at the same points: a memory-bound kernel on s SMs presses s.
 *
 * The GEMMs (per input dtype): pressure per SM pi and demand b bytes per FLOP minimizing the
 * squared log errors of, over every GEMM timed beside a spinner copying on k SMs,
 *   - the GEMM's slowdown over the same GEMM beside an idle spinner on the same SMs, and
 *   - where measured (mb_hbm_share's gemm_beside_copy rows), the spinner's bandwidth beside it
 *     over alone,
 * when the two share the HBM by hw/hbm.h: the spinner presses k and needs what it moves alone
 * (measured, or F(k) for mb_gemm_contention's rows), the GEMM on the other SMs presses
 * pi (sm - k) and needs r b (FLOPs per ns alone), r its SM rate beside the idle spinner, at most
 * F(pi (sm - k)). A grid over pi in [0.02, 1] (step 0.01) and b in [0, 0.006] (step 5e-5); the
 * error is not smooth (min, max), a grid cannot be misled by that.
 *
 * NCCL's HBM bytes per bus-bandwidth byte: from collectives beside copy kernels ("NCCL
 * collectives beside copy kernels" below).
 */
#include "calib/calib-private.h"

#include <math.h>

#include "hw/hbm.h"

#define PI_LO 0.02
#define PI_HI 1.0
#define PI_STEP 0.01
#define BPF_HI 0.006
#define BPF_STEP 5e-5

/* ---- the pressure curve ---- */

static gint cmp_int(gconstpointer a, gconstpointer b) { return *(const int *)a - *(const int *)b; }

/* The measured copy_alone points (hbm layout): k ascending, the median bandwidth per k. */
static int copy_points(const PnCalData *d, double **x, double **y)
{
  g_autoptr(GArray) ks = g_array_new(FALSE, FALSE, sizeof(int));
  for (guint i = 0; i < d->hbm->len; i++) {
    const PnCalHbm *h = &g_array_index(d->hbm, PnCalHbm, i);
    bool seen         = false;
    for (guint j = 0; j < ks->len && !seen; j++)
      seen = g_array_index(ks, int, j) == h->sms_a;
    if (h->mode == PN_CAL_HBM_COPY_ALONE && !h->spinner_layout && !seen)
      g_array_append_val(ks, h->sms_a);
  }
  g_array_sort(ks, cmp_int);
  *x                  = g_new(double, ks->len + 1);
  *y                  = g_new(double, ks->len + 1);
  g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint j = 0; j < ks->len; j++) {
    g_array_set_size(v, 0);
    for (guint i = 0; i < d->hbm->len; i++) {
      const PnCalHbm *h = &g_array_index(d->hbm, PnCalHbm, i);
      if (h->mode == PN_CAL_HBM_COPY_ALONE && !h->spinner_layout && h->sms_a == g_array_index(ks, int, j))
        g_array_append_val(v, h->a_alone);
    }
    (*x)[j] = g_array_index(ks, int, j);
    (*y)[j] = pn_calib_median(v);
  }
  return (int)ks->len;
}

/* "NVIDIA H100 80GB HBM3" and a profile's "NVIDIA H100 SXM5 80GB": the model (H100, H200) matches. */
static bool same_model(const char *measured, const char *profile)
{
  for (const char *m = measured; *m; m++)
    if (m[0] == 'H' && g_ascii_isdigit(m[1]) && g_ascii_isdigit(m[2]) && g_ascii_isdigit(m[3])) {
      char model[5] = {m[0], m[1], m[2], m[3], 0};
      return strstr(profile, model) != NULL;
    }
  return true; /* not recorded: taken as this GPU's */
}

/* The hbm_share rows were measured on this profile's GPU model (else only their curve is used,
 * scaled). */
static bool own_rows(const PnCalData *d, const PnHwProfile *p)
{
  return same_model(d->origin[PN_CAL_KIND_HBM_SHARE].gpu, p->gpu);
}

static void set_curve(PnCurve *c, int n, double *x, double *y)
{
  g_free(c->x);
  g_free(c->y);
  *c = (PnCurve){.n = n, .x = x, .y = y, .log_x = false};
}

/* The pressure curve and mem_sm_scaling; false when no copy_alone rows were measured. */
static bool fit_curves(const PnCalData *d, PnHwProfile *p, PnCalFitted *f)
{
  double *x, *y;
  int n = copy_points(d, &x, &y);
  if (n < 2) {
    g_free(x);
    g_free(y);
    return false;
  }
  f->hbm_curve_scaled = !own_rows(d, p);
  if (f->hbm_curve_scaled) { /* another GPU's: scaled to this one's HBM figure */
    double s = p->hbm_bytes_per_ns / y[n - 1];
    for (int i = 0; i < n; i++)
      x[i] *= s, y[i] *= s;
  }
  set_curve(&p->hbm_share.pressure, n, x, y);
  /* a memory-bound kernel on s SMs presses s: its rate is F(s) / F(sm_count), at the measured s */
  double full = pn_hbm_capacity(p, p->sm_count);
  double *mx = g_new(double, n + 1), *my = g_new(double, n + 1);
  int m = 0;
  for (int i = 0; i < n && x[i] < p->sm_count; i++, m++) {
    mx[m] = x[i];
    my[m] = pn_hbm_capacity(p, x[i]) / full;
  }
  mx[m]   = p->sm_count;
  my[m++] = 1.0;
  set_curve(&p->mem_sm_scaling, m, mx, my);
  f->hbm_curve_points = n;
  return true;
}

/* ---- GEMMs beside a copying spinner ---- */

typedef struct {
  bool fp8;
  int k;             /* SMs the spinner holds */
  double r;          /* the GEMM's SM rate beside the idle spinner */
  double flops_rate; /* its FLOPs per ns alone with all SMs */
  double spin_need;  /* the spinner's bandwidth alone: measured, or F(k) */
  double rho;        /* measured: the GEMM's time beside the copying spinner over beside the idle one */
  double spin_ratio; /* measured: the spinner's bandwidth beside the GEMM over alone; 0 = not measured */
} GemmBeside;

static GArray *gemm_beside_rows(const PnCalData *d, const PnHwProfile *p)
{
  GArray *rows = g_array_new(FALSE, FALSE, sizeof(GemmBeside));
  for (guint i = 0; i < d->contention->len; i++) {
    const PnCalContention *c = &g_array_index(d->contention, PnCalContention, i);
    if (c->variant != PN_CAL_SPINNER_MEM || c->sms_held < 1 || !(c->baseline_ns > 0.0))
      continue;
    for (guint j = 0; j < d->contention->len; j++) {
      const PnCalContention *s = &g_array_index(d->contention, PnCalContention, j);
      if (s->variant == PN_CAL_SPINNER && s->m == c->m && s->n == c->n && s->k == c->k && s->fp8 == c->fp8 &&
          s->sms_held == c->sms_held && s->slowdown > 0.0) {
        GemmBeside g = {.fp8        = c->fp8,
                        .k          = c->sms_held,
                        .r          = 1.0 / s->slowdown,
                        .flops_rate = 2.0 * (double)c->m * (double)c->n * (double)c->k / c->baseline_ns,
                        .spin_need  = pn_hbm_capacity(p, c->sms_held),
                        .rho        = c->slowdown / s->slowdown};
        g_array_append_val(rows, g);
        break;
      }
    }
  }
  for (guint i = 0; own_rows(d, p) && i < d->hbm->len; i++) {
    const PnCalHbm *h = &g_array_index(d->hbm, PnCalHbm, i);
    if (h->mode != PN_CAL_HBM_GEMM || !(h->gemm_plain_ns > 0.0) || !(h->gemm_idle_ns > 0.0))
      continue;
    GemmBeside g = {.fp8        = h->fp8,
                    .k          = h->sms_b,
                    .r          = h->gemm_plain_ns / h->gemm_idle_ns,
                    .flops_rate = 2.0 * (double)h->m * (double)h->n * (double)h->k / h->gemm_plain_ns,
                    .spin_need  = h->b_alone,
                    .rho        = 1.0 / h->a_with,
                    .spin_ratio = h->b_with / h->b_alone};
    g_array_append_val(rows, g);
  }
  return rows;
}

/* The row through hw/hbm.h with pressure pi and demand bpf: the GEMM's slowdown, *spin the
 * spinner's served fraction. */
static double gemm_pred(const PnHwProfile *p, const GemmBeside *g, double pi, double bpf, double *spin)
{
  double w       = pi * (double)(p->sm_count - g->k);
  PnHbmUser u[2] = {{.w = (double)g->k, .need = g->spin_need},
                    {.w = w, .need = fmin(g->r * g->flops_rate * bpf, pn_hbm_capacity(p, w))}};
  pn_hbm_share(p, u, 2);
  *spin = u[0].need > 0.0 ? u[0].served / u[0].need : 1.0;
  return u[1].need > 0.0 && u[1].served > 0.0 ? fmax(1.0, u[1].need / u[1].served) : 1.0;
}

static double fit_cost(const PnHwProfile *p, const GArray *rows, bool fp8, double pi, double bpf)
{
  double s = 0.0;
  for (guint i = 0; i < rows->len; i++) {
    const GemmBeside *g = &g_array_index(rows, GemmBeside, i);
    if (g->fp8 != fp8)
      continue;
    double spin, e = log(gemm_pred(p, g, pi, bpf, &spin) / g->rho);
    s += e * e;
    if (g->spin_ratio > 0.0) {
      double es = log(spin / g->spin_ratio);
      s += es * es;
    }
  }
  return s;
}

/* ---- NCCL collectives beside copy kernels ----
 *
 * mb_copy_nccl_overlap's rows, replayed on the GPU they were measured on (the measured copy curve,
 * unscaled: the profile being fitted may be another GPU's): the copy on k SMs presses k and needs
 * what it moves alone; the collective presses the SMs its kernel holds (at least its need over the
 * unloaded rate, as the executor has it) and needs c HBM bytes per byte of its bus bandwidth
 * alone. Its predicted slowdown is need / served. c is fitted (a grid over [1, 8], step 0.01)
 * to the slowdowns' squared log errors: an NCCL property, the same on any GPU. */

/* `m`: `p` with the measured copy curve as its pressure curve (points owned by the caller). */
static bool measured_curve(const PnCalData *d, const PnHwProfile *p, PnHwProfile *m, double **x, double **y)
{
  int n                 = copy_points(d, x, y);
  *m                    = *p;
  m->hbm_share.pressure = (PnCurve){.n = n, .x = *x, .y = *y};
  return n >= 2;
}

static double copy_nccl_pred(const PnHwProfile *m, const PnCalCopyNccl *c, double per_byte, double *copy_served)
{
  double need    = per_byte * c->busbw;
  PnHbmUser u[2] = {{.w = (double)c->k, .need = c->copy_alone},
                    {.w = pn_hbm_transfer_pressure(m, c->ctas, need), .need = need}};
  pn_hbm_share(m, u, 2);
  *copy_served = u[0].served;
  return u[1].served > 0.0 ? fmax(1.0, need / u[1].served) : 1.0;
}

static void fit_nccl(const PnCalData *d, PnHwProfile *p, PnCalFitted *f)
{
  double *x = NULL, *y = NULL;
  PnHwProfile m;
  int n = 0;
  for (guint i = 0; i < d->copy_nccl->len; i++)
    n += g_array_index(d->copy_nccl, PnCalCopyNccl, i).copy;
  if (n > 0 && measured_curve(d, p, &m, &x, &y)) {
    double best = HUGE_VAL;
    for (int s = 100; s <= 800; s++) {
      double c = s * 0.01, cost = 0.0, served;
      for (guint i = 0; i < d->copy_nccl->len; i++) {
        const PnCalCopyNccl *r = &g_array_index(d->copy_nccl, PnCalCopyNccl, i);
        if (r->copy) {
          double e = log(copy_nccl_pred(&m, r, c, &served) / r->slowdown);
          cost += e * e;
        }
      }
      if (cost < best) {
        best                                   = cost;
        p->hbm_share.nccl_bytes_per_busbw_byte = c;
      }
    }
    f->hbm_nccl_rows = n;
    f->hbm_nccl_from = d->origin[PN_CAL_KIND_COPY_NCCL];
  }
  g_free(x);
  g_free(y);
}

void pn__calib_fit_hbm(const PnCalData *d, PnHwProfile *p, PnCalFitted *f)
{
  if (!fit_curves(d, p, f))
    return;
  fit_nccl(d, p, f);
  f->hbm_share_from      = d->origin[PN_CAL_KIND_HBM_SHARE];
  f->hbm_contention_from = d->origin[PN_CAL_KIND_CONTENTION];
  p->hbm_share.on        = true;
  g_autoptr(GArray) rows = gemm_beside_rows(d, p);
  for (int fp8 = 0; fp8 < 2; fp8++) {
    int n = 0;
    for (guint i = 0; i < rows->len; i++)
      n += g_array_index(rows, GemmBeside, i).fp8 == fp8;
    if (n == 0)
      continue;
    double best = HUGE_VAL;
    for (int a = 0; PI_LO + a * PI_STEP <= PI_HI + 1e-9; a++)
      for (int b = 0; b * BPF_STEP <= BPF_HI + 1e-12; b++) {
        double pi = PI_LO + a * PI_STEP, bpf = b * BPF_STEP, c = fit_cost(p, rows, fp8, pi, bpf);
        if (c < best) {
          best                                  = c;
          p->hbm_share.gemm_pressure[fp8]       = pi;
          p->hbm_share.gemm_bytes_per_flop[fp8] = bpf;
        }
      }
    f->hbm_share_rows[fp8] = n;
  }
}

/* ---- the check ---- */

/* A collective's wire bytes per ns at each GPU, in nccl-tests' bus-bandwidth convention. */
static double wire_rate(PnCollKind kind, int n, double bytes, double ns)
{
  return bytes / ns * pn_coll_busbw_factor(kind, n);
}

/* Two users alone and together: each one's measured bandwidth together against hw/hbm.h's. */
static void check_pair(const PnHwProfile *p, GArray *dst, double wa, double a_alone, double a_with, double wb,
                       double b_alone, double b_with)
{
  PnHbmUser u[2] = {{.w = wa, .need = a_alone}, {.w = wb, .need = b_alone}};
  pn_hbm_share(p, u, 2);
  pn__calib_push_err(dst, a_with, u[0].served); /* bandwidths: measured / predicted - 1, as a time error */
  pn__calib_push_err(dst, b_with, u[1].served);
}

void pn__calib_check_hbm(const PnCalData *d, const PnHwProfile *p, PnCalCheck *out)
{
  double u0 = pn_hbm_unloaded(p);
  if (!p->hbm_share.on || !(u0 > 0.0))
    return;
  g_autoptr(GArray) rows = gemm_beside_rows(d, p);
  for (guint i = 0; i < rows->len; i++) {
    const GemmBeside *g = &g_array_index(rows, GemmBeside, i);
    double spin,
        rho = gemm_pred(p, g, p->hbm_share.gemm_pressure[g->fp8], p->hbm_share.gemm_bytes_per_flop[g->fp8], &spin);
    pn__calib_push_err(out->hbm_gemm, rho, g->rho);
    if (g->spin_ratio > 0.0)
      pn__calib_push_err(out->hbm_spinner, g->spin_ratio, spin); /* bandwidths: as a time error */
  }
  for (guint i = 0; own_rows(d, p) && i < d->hbm->len; i++) {
    const PnCalHbm *h = &g_array_index(d->hbm, PnCalHbm, i);
    if (h->mode == PN_CAL_HBM_COPY_PAIR)
      check_pair(p, out->hbm_pair, h->sms_a, h->a_alone, h->a_with, h->sms_b, h->b_alone, h->b_with);
    else if (h->mode == PN_CAL_HBM_CE) /* a transfer presses what it needs at the unloaded rate */
      check_pair(p, out->hbm_ce, pn_hbm_transfer_pressure(p, 0, h->a_alone), h->a_alone, h->a_with, h->sms_b,
                 h->b_alone, h->b_with);
  }
  /* a real NCCL collective beside a copy kernel, on the GPU it was measured on */
  double *x = NULL, *y = NULL;
  PnHwProfile m;
  if (d->copy_nccl->len > 0 && p->hbm_share.nccl_bytes_per_busbw_byte > 0.0 && measured_curve(d, p, &m, &x, &y))
    for (guint i = 0; i < d->copy_nccl->len; i++) {
      const PnCalCopyNccl *c = &g_array_index(d->copy_nccl, PnCalCopyNccl, i);
      double served;
      if (!c->copy)
        continue;
      pn__calib_push_err(out->hbm_copy_nccl, copy_nccl_pred(&m, c, p->hbm_share.nccl_bytes_per_busbw_byte, &served),
                         c->slowdown);
      pn__calib_push_err(out->hbm_nccl_copy, c->copy_beside, served); /* bandwidths: as a time error */
    }
  g_free(x);
  g_free(y);
  /* a GEMM beside a real NCCL collective: the SMs the collective holds, then the HBM both press
   * (the collective: its CTAs, as the executor's transfers) */
  for (guint i = 0; i < d->nccl_overlap->len; i++) {
    const PnCalNcclOverlap *o = &g_array_index(d->nccl_overlap, PnCalNcclOverlap, i);
    if (o->sm_margin || !(o->coll_alone_ns > 0.0) || !(o->gemm_alone_ns > 0.0) || !(o->coll_slowdown > 0.0))
      continue;
    int held;
    double r = pn__calib_nccl_overlap_sm_rate(p, o, &held);
    if (r < 0.0)
      continue;
    double wg      = p->hbm_share.gemm_pressure[0] * (double)(p->sm_count - held);
    double ng      = fmin(r * 2.0 * (double)o->m * (double)o->n * (double)o->k / o->gemm_alone_ns *
                              p->hbm_share.gemm_bytes_per_flop[0],
                          pn_hbm_capacity(p, wg));
    double nc      = pn_hbm_nccl_bytes_per_byte(p) * wire_rate(o->kind, o->nranks, o->bytes, o->coll_alone_ns);
    PnHbmUser u[2] = {{.w = wg, .need = ng}, {.w = pn_hbm_transfer_pressure(p, held, nc), .need = nc}};
    pn_hbm_share(p, u, 2);
    pn__calib_push_err(out->hbm_nccl_gemm, ng > 0.0 ? r * u[0].served / ng : r, o->rate);
    pn__calib_push_err(out->hbm_nccl_coll, nc > 0.0 && u[1].served > 0.0 ? nc / u[1].served : 1.0, o->coll_slowdown);
  }
}
