/* calibrate.c — `penumbra calibrate`: microbenchmark results (microbench/) fitted into a hardware
 * profile (calib/, io/calibio.h), or, with --check, replayed through a profile and reported;
 * exit 3 when a required replay is off by more than --tolerance. */
#include <math.h>

#include "cli/cli-private.h"
#include "io/calibio.h"
#include "io/hwprofile.h"

static gint cmp_abs(gconstpointer a, gconstpointer b)
{
  double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/* One line of the replay check: count, median / p90 / max |error|, share within `tol`. */
static bool check_line(GString *out, const char *what, GArray *err, double tol)
{
  if (err->len == 0) {
    g_string_append_printf(out, "  %-34s %6s\n", what, "-");
    return true;
  }
  g_array_sort(err, cmp_abs);
  guint n = err->len, within = 0;
  for (guint i = 0; i < n; i++)
    within += fabs(g_array_index(err, double, i)) <= tol;
  double med = fabs(g_array_index(err, double, n / 2)), p90 = fabs(g_array_index(err, double, (n * 9) / 10));
  double max = fabs(g_array_index(err, double, n - 1));
  g_string_append_printf(out, "  %-34s %6u %8.2f%% %8.2f%% %8.2f%% %8.1f%%\n", what, n, med * 100, p90 * 100, max * 100,
                         100.0 * within / n);
  return within == n;
}

/* The replay table of --check; true when every line that is required holds within `tol`. */
static bool check_report(GString *out, PnCalCheck *c, const char *profile, double tol)
{
  g_string_append_printf(out, "replay of the measured cases through %s (|predicted/measured - 1|)\n", profile);
  g_string_append_printf(out, "  %-34s %6s %9s %9s %9s %9s\n", "kind", "n", "median", "p90", "max", "within");
  bool ok = check_line(out, "gemm (table replay)", c->gemm, tol);
  ok      = check_line(out, "wgrad into main_grad (ratio replay)", c->gemm_accum, tol) && ok;
  ok      = check_line(out, "batched GEMMs (table replay)", c->bmm, tol) && ok;
  ok      = check_line(out, "attention", c->attn, tol) && ok;
  ok      = check_line(out, "collectives, NCCL default channels", c->coll_default, tol) && ok;
  ok      = check_line(out, "collectives, NCCL_MAX_CTAS forced", c->coll_ctas, tol) && ok;
  for (guint k = 0; c->coll_groups->len > 1 && k < c->coll_groups->len; k++) {
    g_autofree char *what = g_strdup_printf("  default channels, %d GPUs", g_array_index(c->coll_groups, int, k));
    ok                    = check_line(out, what, g_ptr_array_index(c->coll_by_group, k), tol) && ok;
  }
  ok = check_line(out, "SM contention, median per SMs held", c->contention_median, tol) && ok;
  ok = check_line(out, "memory-bound kernels >= 256 MiB", c->memory, tol) && ok;
  ok = check_line(out, "SM contention, every shape", c->contention, tol) && ok;
  ok = check_line(out, "host per layer, h2048 (fitted)", c->host_layer_fit, tol) && ok;
  g_string_append(out, "  (reported, not required: one figure or curve stands for several measured cases)\n");
  check_line(out, "host per layer, tiny (cross-check)", c->host_layer_tiny, tol);
  check_line(out, "host per Megatron-Core local layer, fwd / bwd", c->host_local_layer, tol);
  check_line(out, "  the same under Megatron-FSDP (its hooks)", c->host_fsdp_unit, tol);
  check_line(out, "  TE-shaped (Megatron-Core around TE modules)", c->host_te_layer, tol);
  check_line(out, "host reference call (nn.Linear, per round)", c->host_ref, tol);
  check_line(out, "  an MoE layer from its dense twin", c->host_moe_layer, tol);
  check_line(out, "  SequentialMLP's experts from one", c->host_moe_expert, tol);
  check_line(out, "copy on a stream, floor + launch", c->floor_copy, tol);
  check_line(out, "GEMM on a stream, floor + launch", c->floor_gemm, tol);
  check_line(out, "cudaMemcpy D2D >= 256 MiB (hbm figure)", c->memory_other, tol);
  check_line(out, "batched GEMMs (torch.bmm)", c->bmm_rows, tol);
  check_line(out, "PyTorch kernels, vs copy", c->torch_kernels, tol);
  check_line(out, "userbuffers push / pull, no multicast", c->ub_push, tol);
  check_line(out, "collectives, non-monotone outliers", c->coll_outliers, tol);
  GArray *beside[]    = {c->nccl_overlap, c->nccl_overlap_margin};
  const char *names[] = {"GEMM rate beside NCCL, SMs held", "GEMM rate beside NCCL, SM margin"};
  for (int b = 0; b < 2; b++) {
    g_autoptr(GArray) sorted = g_array_copy(beside[b]);
    double med               = pn_calib_median(sorted); /* signed: < 0 means the model is too slow */
    if (check_line(out, names[b], beside[b], tol))      /* all within, or no rows */
      continue;
    g_string_append_printf(out, "  %-34s %+15.2f%% (median of predicted/measured - 1)\n", "", med * 100.0);
  }
  GArray *hbm[]           = {c->hbm_gemm,      c->hbm_spinner,   c->hbm_pair,      c->hbm_ce,
                             c->hbm_copy_nccl, c->hbm_nccl_copy, c->hbm_nccl_gemm, c->hbm_nccl_coll};
  const char *hbm_names[] = {"HBM: GEMM beside a copying spinner", "HBM: the spinner beside the GEMM",
                             "HBM: two copy kernels at once",      "HBM: copy engine beside a copy",
                             "HBM: NCCL time beside a copy",       "HBM: the copy beside NCCL",
                             "HBM: GEMM rate beside NCCL",         "HBM: NCCL time beside the GEMM"};
  for (size_t h = 0; h < G_N_ELEMENTS(hbm); h++) {
    g_autoptr(GArray) sorted = g_array_copy(hbm[h]);
    double med               = pn_calib_median(sorted);
    if (!check_line(out, hbm_names[h], hbm[h], tol))
      g_string_append_printf(out, "  %-34s %+15.2f%% (median of predicted/measured - 1)\n", "", med * 100.0);
  }
  for (guint k = 1; k + 1 < c->coll_groups->len; k++) {
    g_autofree char *what =
        g_strdup_printf("collectives, %d GPUs from the others", g_array_index(c->coll_groups, int, k));
    check_line(out, what, g_ptr_array_index(c->coll_group_loo, k), tol);
  }
  g_string_append(out, "leave-one-out: each point of a table priced by the table without it (reported)\n");
  for (guint i = 0; i < c->loo->len; i++) {
    const PnCalLoo *l = &g_array_index(c->loo, PnCalLoo, i);
    check_line(out, l->table, l->errors, tol);
  }
  return ok;
}

static gint cmp_point_x(gconstpointer a, gconstpointer b)
{
  const PnCalPoint *x = a, *y = b;
  return x->x < y->x ? -1 : x->x > y->x ? 1 : x->measured < y->measured ? -1 : x->measured > y->measured ? 1 : 0;
}

/* One gnuplot data set of --plot-data: the points of `series` (and `group`, when not 0), by x. */
static void plot_block(GString *dat, const PnCalCheck *c, const char *series, int group)
{
  g_autoptr(GArray) pts = g_array_new(FALSE, FALSE, sizeof(PnCalPoint));
  for (guint i = 0; i < c->points->len; i++) {
    const PnCalPoint *pt = &g_array_index(c->points, PnCalPoint, i);
    if (strcmp(pt->series, series) == 0 && pt->group == group)
      g_array_append_val(pts, *pt);
  }
  if (pts->len == 0)
    return;
  g_array_sort(pts, cmp_point_x);
  if (group)
    g_string_append_printf(dat, "# %s_%dgpu\n", series, group);
  else
    g_string_append_printf(dat, "# %s\n", series);
  for (guint i = 0; i < pts->len; i++) {
    const PnCalPoint *pt = &g_array_index(pts, PnCalPoint, i);
    g_string_append_printf(dat, "%.6g %.6g %.6g %.4g\n", pt->x, pt->measured, pt->predicted, 100.0 * pt->error);
  }
  g_string_append(dat, "\n\n");
}

/* The points of --check --plot-data: a header saying which profile was checked and where each
 * kind of result was measured, then one gnuplot data set per series (`index "<name>"` in
 * plots/calibration.gp): x, measured, leave-one-out prediction, its error in percent. */
static GString *plot_data(const PnCalData *data, const PnHwProfile *p, const char *profile, const PnCalCheck *c)
{
  static const char *const series[] = {"gemm_bf16", "gemm_fp8", "attn_fwd", "attn_bwd",       "sm_held",
                                       "sm_margin", "mem_copy", "mem_norm", "mem_activation", "mem_optimizer"};
  static const char *const nccl[]   = {"nccl_all_gather", "nccl_reduce_scatter", "nccl_all_reduce", "nccl_all_to_all",
                                       "nccl_send_recv"};
  GString *dat                      = g_string_new(NULL);
  g_string_append_printf(dat, "# penumbra calibrate --check --plot-data\n# profile: %s (%s, %s)\n", p->name, p->gpu,
                         profile);
  for (int k = 0; k < PN_CAL_KINDS; k++) {
    const PnCalOrigin *o = &data->origin[k];
    if (o->gpu[0])
      g_string_append_printf(dat, "# measured on, %s: %s, %d GPU%s, %s\n", pn_cal_kind_name((PnCalKind)k), o->gpu,
                             o->gpus, o->gpus == 1 ? "" : "s", o->date[0] ? o->date : "date not recorded");
  }
  g_string_append(dat, "# columns: x measured leave-one-out-prediction error-percent (calib.h, PnCalPoint)\n\n\n");
  for (size_t si = 0; si < G_N_ELEMENTS(series); si++)
    plot_block(dat, c, series[si], 0);
  for (size_t si = 0; si < G_N_ELEMENTS(nccl); si++)
    for (guint k = 0; k < c->coll_groups->len; k++)
      plot_block(dat, c, nccl[si], g_array_index(c->coll_groups, int, k));
  return dat;
}

/* --check: 0 when the required replays hold, 3 otherwise; 2 when the plot data cannot be written. */
static int check_profile(const char *cmd, const PnCalData *data, const PnHwProfile *p, const char *profile, double tol,
                         const char *plot)
{
  PnCalCheck c;
  pn_calib_check(data, p, &c);
  g_autoptr(GString) out = g_string_new(NULL);
  bool ok                = check_report(out, &c, profile, tol);
  int rc                 = pn__cli_emit(cmd, NULL, NULL, out->str);
  if (rc == 0 && plot) {
    g_autoptr(GString) dat = plot_data(data, p, profile, &c);
    rc                     = pn__cli_emit(cmd, "--plot-data", plot, dat->str);
  }
  pn_cal_check_clear(&c);
  return rc != 0 ? rc : ok ? 0 : 3;
}

/* Fits and writes the profile, calibrated on `date` when given, else on the day of the newest
 * measurement fitted (so that refitting the same results writes the same bytes), else today (UTC). */
static int fit_profile(const PnCalData *data, PnHwProfile *p, const char *base, const char *output, const char *prov,
                       const char *date)
{
  PnCalFitted fitted;
  g_autoptr(GError) error = NULL;
  if (!pn_calib_fit(data, p, &fitted, &error))
    return pn__cli_fail(error);
  if (date) {
    g_strlcpy(p->calibrated, date, sizeof p->calibrated);
  } else if (p->calibrated[0] == '\0') {
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *today   = g_date_time_format(now, "%Y-%m-%d");
    g_strlcpy(p->calibrated, today, sizeof p->calibrated);
  }
  if (!pn_calib_write_profile(base, output, p, &fitted, prov, &error))
    return pn__cli_fail(error);
  FILE *say = strcmp(output, "-") == 0 ? stderr : stdout; /* the profile itself is on stdout */
  int accum = fitted.gemm_accum_points[0][0] + fitted.gemm_accum_points[0][1] + fitted.gemm_accum_points[1][0] +
              fitted.gemm_accum_points[1][1];
  g_autofree char *accum_s = accum ? g_strdup_printf(" (+ %d accumulating into main_grad)", accum) : g_strdup("");
  int kernels              = 0;
  for (int k = 0; k < PN_TK_N; k++)
    kernels += fitted.torch_kernel_points[k] > 0;
  g_autofree char *unfused_s =
      fitted.bmm_points || kernels
          ? g_strdup_printf("%d batched GEMM points, %d PyTorch kernel curves, ", fitted.bmm_points, kernels)
          : g_strdup("");
  fprintf(say, "calibrated %s (%s): %d bf16 + %d fp8 GEMM points%s, %d attention points, %s%s%s%s%s%s%s%s\n", output,
          p->calibrated, fitted.gemm_bf16_points, fitted.gemm_fp8_points, accum_s, fitted.attn_points, unfused_s,
          fitted.gemm_sm_scaling ? "SM-contention curve, " : "",
          fitted.gemm_sm_limit_scaling ? "SM-margin curve, " : "", fitted.hbm ? "HBM bandwidth, " : "",
          fitted.coll ? "NCCL collectives, " : "", fitted.host.kernel ? "host launch costs, " : "",
          fitted.host.launch ? "kernel launch gap and floors, " : "", fitted.copy ? "copy engine" : "");
  return 0;
}

int pn__cli_calibrate(int argc, char **argv)
{
  g_autofree char *base    = NULL;
  g_autofree char *output  = NULL;
  g_autofree char *profile = NULL;
  gboolean check           = FALSE;
  g_autofree char *tol_s   = NULL;
  g_autofree char *plot    = NULL;
  g_autofree char *date    = NULL;
  GOptionEntry entries[]   = {
        {"base", 'b', 0, G_OPTION_ARG_FILENAME, &base, "Profile to start from (its sourced figures are kept)", "FILE"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the calibrated profile to FILE (atomically)", "FILE"},
        {"check", 'c', 0, G_OPTION_ARG_NONE, &check, "Replay every measured case through --profile and report errors",
         NULL},
        {"profile", 'p', 0, G_OPTION_ARG_FILENAME, &profile, "Profile to check (with --check)", "FILE"},
        {"tolerance", 0, 0, G_OPTION_ARG_STRING, &tol_s, "--check: error bound in percent, > 0 (default 5)", "PCT"},
        {"date", 0, 0, G_OPTION_ARG_STRING, &date,
         "Day the measurements were taken, written to the profile as \"calibrated\" (default: the newest result's "
           "date_utc, else today in UTC)",
         "YYYY-MM-DD"},
        {"plot-data", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "--check: write measured vs leave-one-out points to FILE (gnuplot)", "FILE"},
        {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(
          entries, "RESULTS.json... - fit hardware-profile tables from microbenchmark results",
          "Examples:\n"
          "  penumbra calibrate hwprofiles/calibration/h100-sxm/gemm.json \\\n"
          "      --base hwprofiles/h100-sxm.json -o h100.json\n"
          "  penumbra calibrate --check --profile hwprofiles/h100-sxm.json hwprofiles/calibration/h100-sxm/*.json\n"
          "  penumbra calibrate --check --profile hwprofiles/h200-sxm.json \\\n"
          "      hwprofiles/calibration/h200-sxm-8gpu/collective.json --plot-data calibration.dat\n",
          &argc, &argv))
    return 2;
  const char *cmd         = argv[0];
  g_autoptr(GError) error = NULL;
  if (argc < 2) {
    fprintf(stderr, "penumbra calibrate: expected one or more microbenchmark RESULTS.json\n");
    return 2;
  }
  if (check ? !profile : !(base && output)) {
    fprintf(stderr, "penumbra calibrate: expected --base FILE -o FILE, or --check --profile FILE\n");
    return 2;
  }
  /* an option of the other mode would be ignored: refused instead */
  const char *fit_only = base ? "--base" : output ? "--output" : date ? "--date" : NULL;
  const char *chk_only = profile ? "--profile" : tol_s ? "--tolerance" : plot ? "--plot-data" : NULL;
  if (check && fit_only)
    return pn__cli_bad(cmd, fit_only, "applies to a fit, not to --check");
  if (!check && chk_only)
    return pn__cli_bad(cmd, chk_only, "applies only with --check");
  double tol_pct = 5.0;
  if (tol_s && !pn__cli_number(cmd, "--tolerance", tol_s, DBL_TRUE_MIN, DBL_MAX, false, "a percentage > 0", &tol_pct))
    return 2;
  if (date && !pn_hw_profile_date_ok(date)) {
    g_autofree char *q = pn_io_quote(date);
    return pn__cli_bad(cmd, "--date", "expected a calendar day YYYY-MM-DD from 2000-01-01 to 2099-12-31, got %s", q);
  }
  if (!pn__cli_stdout_once(cmd, "--plot-data", plot, NULL) || !pn__cli_check_output(cmd, "--output", output) ||
      !pn__cli_check_output(cmd, "--plot-data", plot))
    return 2;
  PnCalData data;
  pn_cal_data_init(&data);
  g_autoptr(GString) prov = g_string_new(NULL);
  int rc                  = 0;
  for (int i = 1; i < argc && rc == 0; i++)
    if (!pn_calib_read_results(argv[i], &data, prov, &error))
      rc = pn__cli_fail(error);
  if (rc == 0) {
    g_autoptr(PnHwProfile) p = pn_hw_profile_load(check ? profile : base, &error);
    if (!p)
      rc = pn__cli_fail(error);
    else
      rc = check ? check_profile(cmd, &data, p, profile, tol_pct / 100.0, plot)
                 : fit_profile(&data, p, base, output, prov->str, date);
  }
  pn_cal_data_clear(&data);
  return rc;
}
