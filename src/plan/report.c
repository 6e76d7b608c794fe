/* report.c — a plan's report: its blocks (Markdown, HTML), CSV and JSON (report.h). */
#include "plan/report.h"

#include <math.h>
#include <string.h>

#include "io/jsonw.h"
#include "sweep/output.h"
#include "workload/rules.h"
#include "workload/split.h"

#define DAY_S 86400.0
#define GIB (1024.0 * 1024.0 * 1024.0)
#define RUNNER_UPS 10 /* at most, in the report (the CSV of the kind's layouts has them all) */

/* What penumbra does not simulate: the README's list ("What is simulated"), one line each. */
static const char *const not_simulated[] = {
    "NVLink SHARP; of MLA: the fused down projection, userbuffers for its up projections, the TP all-reduce of its "
    "down projections' gradients; DeepSeek's sigmoid group-limited router (priced as softmax top-k); fp8 "
    "Adam moments' scaling; MTP layers inside EP overlap's combined 1F1B (run whole); of Megatron-FSDP: hybrid "
    "FSDP, nccl_ub, its hooks' host Python with optim_grads, FP8 transposes re-made after each gather, its gathers "
    "inside EP overlap's combined 1F1B",
    "the host only in part: launch costs are eager PyTorch's on the device machine, Transformer Engine's per-module "
    "Python a published figure; without a host slowed by a busy GPU or a DGX host's speed",
    "MoE router imbalance (routing is balanced; token dropping is simulated under it)",
    "the SM clock under the power cap as a function of the step's GEMM duty cycle (the GEMM tables were timed in "
    "~8 ms bursts; up to 14% apart between a duty cycle of 1.0 and 0.6)",
    "NVSwitch groups larger than the 8 GPUs measured (published figures are used)",
    "the slowdown of an NCCL collective by the GEMMs beside it beyond their HBM sharing (overlapped communication is "
    "predicted slightly too fast); a copy engine's share of HBM beside kernels",
    "failures, restarts and checkpoints: --goodput stands for them",
};

/* CSV column names, as the sweep's CSV spells them */
static const char *const part_keys[PN_PLAN_PARTS]  = {"compute_s",    "bubble_s",     "exposed_dp_s", "exposed_tp_s",
                                                      "exposed_pp_s", "exposed_cp_s", "exposed_ep_s", "other_s"};
static const char *const part_names[PN_PLAN_PARTS] = {"compute",    "bubble",     "exposed DP", "exposed TP",
                                                      "exposed PP", "exposed CP", "exposed EP", "other"};

void pn_plan_breakdown(const PnSweepRow *row, double parts[PN_PLAN_PARTS])
{
  parts[0]   = row->compute_s;
  parts[1]   = row->bubble_s;
  double sum = parts[0] + parts[1];
  for (int k = 0; k < 5; k++)
    sum += parts[2 + k] = k < PN_CLASS_N ? row->exposed_s[k] : 0.0;
  parts[7] = MAX(0.0, row->iteration_s - sum);
}

static const PnPlanPoint *point(const PnPlanResult *r, int i)
{
  return i < 0 ? NULL : &g_array_index(r->points, PnPlanPoint, (guint)i);
}
static const char *kind_name(const PnPlanResult *r, const PnPlanPoint *p)
{
  return g_array_index(r->spec->kinds, PnPlanKind, p->kind).profile;
}

/* "TP4 PP2 VPP1 CP2 DP32 MBS1 recompute none" (EP with experts; a split not even after the VPP:
 * "PP8 VPP1 last_stage=5 CP1"). */
static char *layout_of(const PnPlanResult *r, const PnPlanPoint *p, const PnSweepRow *row)
{
  const PnPlanSweep *s = r->sweeps->pdata[p->kind];
  PnScenario c;
  pn_sweep_candidate(&s->sweep, row->index, &c);
  pn_workload_check(&c, NULL, NULL);
  const PnParallelConfig *q = &c.parallel;
  GString *t                = g_string_new(NULL);
  g_string_printf(t, "TP%" G_GINT64_FORMAT " PP%" G_GINT64_FORMAT " VPP%" G_GINT64_FORMAT,
                  q->tensor_model_parallel_size, q->pipeline_model_parallel_size,
                  MAX(1, q->virtual_pipeline_model_parallel_size));
  PnSplitKeys split = pn_workload_split_keys_of(q); /* the split the sweep chose, when not even */
  pn_workload_split_describe(t, &split, false);
  g_string_append_printf(t, " CP%" G_GINT64_FORMAT, q->context_parallel_size);
  if (c.model.num_moe_experts > 0)
    g_string_append_printf(t, " EP%" G_GINT64_FORMAT, q->expert_model_parallel_size);
  PnScenarioField f;
  PnScenarioValue v;
  pn_scenario_field_find("recompute.recompute_granularity", "plan", &f, NULL);
  pn_scenario_field_get(&f, &c, &v);
  g_string_append_printf(t, " DP%" G_GINT64_FORMAT " MBS%" G_GINT64_FORMAT " recompute %s", q->data_parallel_size,
                         c.training.micro_batch_size,
                         strcmp(v.text, "null") == 0 ? "none" : g_strstrip(g_strdelimit(v.text, "\"", ' ')));
  return g_string_free(t, FALSE);
}

static GPtrArray *cells(void) { return g_ptr_array_new_with_free_func(g_free); }
static void row(PnDoc *d, GPtrArray *c)
{
  g_ptr_array_add(c, NULL);
  pn_doc_row(d, (const char *const *)c->pdata);
}

static char *money(double v) { return isnan(v) ? g_strdup("-") : g_strdup_printf("%.3g", v); }

/* "h100-sxm x 2048 GPUs, batch 1024 x 8192 tokens: 41.2 days, 2.02e+06 GPU-hours, cost 5.05e+06" */
static char *summary(const PnPlanResult *r, const PnPlanPoint *p)
{
  g_autofree char *cost = money(p->cost);
  return g_strdup_printf("%s x %" G_GINT64_FORMAT " GPUs, global batch %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                         " tokens: %.1f days, %.3g GPU-hours, cost %s",
                         kind_name(r, p), p->gpus, p->batch, r->spec->seq_length, p->train_s / DAY_S, p->gpu_hours,
                         cost);
}

static void doc_answer(PnDoc *d, const PnPlanResult *r)
{
  const PnPlanSpec *s = r->spec;
  pn_doc_heading(d, "Answer");
  if (r->recommended < 0) {
    pn_doc_para(d, "No layout of any planned GPU count fits and runs: there is no plan.");
    return;
  }
  const char *by            = r->priced ? "cost" : "GPU-hours (no price for every kind)";
  g_autofree char *deadline = isnan(s->deadline_s) ? g_strdup("no deadline given")
                                                   : g_strdup_printf("deadline %.1f days", s->deadline_s / DAY_S);
  if (r->cheapest >= 0) {
    g_autofree char *t = summary(r, point(r, r->cheapest));
    if (isnan(s->deadline_s))
      pn_doc_item(d, "Cheapest plan (by %s; no deadline given): %s.", by, t);
    else
      pn_doc_item(d, "Cheapest plan (by %s) that meets the %s: %s.", by, deadline, t);
  } else {
    const PnPlanPoint *c = point(r, r->closest_deadline);
    g_autofree char *t   = summary(r, c);
    pn_doc_item(d, "No plan meets the %s. The closest, the fastest: %s; it misses by %.1f days (%.0f%%).", deadline, t,
                (c->train_s - s->deadline_s) / DAY_S, 100.0 * (c->train_s / s->deadline_s - 1.0));
  }
  if (!isnan(s->budget) && r->fastest >= 0) {
    g_autofree char *t = summary(r, point(r, r->fastest));
    pn_doc_item(d, "Fastest plan within the budget of %.3g: %s.", s->budget, t);
  } else if (!isnan(s->budget)) {
    const PnPlanPoint *c = point(r, r->closest_budget);
    g_autofree char *t   = summary(r, c);
    pn_doc_item(d, "No plan is within the budget of %.3g. The closest, the cheapest: %s; it misses by %.3g (%.0f%%).",
                s->budget, t, c->cost - s->budget, 100.0 * (c->cost / s->budget - 1.0));
  } else if (r->fastest >= 0) {
    g_autofree char *t = summary(r, point(r, r->fastest));
    pn_doc_item(d, "Fastest plan (no budget given): %s.", t);
  }
  const PnPlanPoint *rec = point(r, r->recommended);
  g_autofree char *lay   = layout_of(r, rec, pn_plan_best(rec));
  pn_doc_para(d, "Recommended layout (%s x %" G_GINT64_FORMAT "): %s, %.1f model TFLOP/s per GPU, MFU %.1f%%.",
              kind_name(r, rec), rec->gpus, lay, pn_plan_best(rec)->tflops_per_gpu, 100.0 * pn_plan_best(rec)->mfu);
}

static void doc_inputs(PnDoc *d, const PnPlanResult *r)
{
  const PnPlanSpec *s = r->spec;
  pn_doc_heading(d, "Inputs");
  pn_doc_item(d, "Model %s, %.4g tokens, sequence length %" G_GINT64_FORMAT ", %s.", s->model, s->tokens, s->seq_length,
              s->precision);
  GString *c = g_string_new(NULL);
  for (guint i = 0; i < r->counts->len; i++)
    g_string_append_printf(c, "%s%" G_GINT64_FORMAT, i ? ", " : "", g_array_index(r->counts, int64_t, i));
  pn_doc_item(d, "GPU counts planned in %" G_GINT64_FORMAT ":%" G_GINT64_FORMAT ": %s (the powers of two%s%s).",
              s->gpus_min, s->gpus_max, c->str, r->counts_why ? "; added: " : "", r->counts_why ? r->counts_why : "");
  g_string_truncate(c, 0);
  for (guint i = 0; i < r->batches->len; i++) {
    int64_t b = g_array_index(r->batches, int64_t, i);
    g_string_append_printf(c, "%s%" G_GINT64_FORMAT " (%.3g M tokens)", i ? ", " : "", b,
                           (double)(b * s->seq_length) / 1048576.0);
  }
  pn_doc_item(d,
              "Global batches in %.4g:%.4g tokens, in sequences: %s. The batch changes convergence: these are the "
              "only ones planned, and each count's plan is the one of them with the most tokens/s.",
              s->batch_tokens_min, s->batch_tokens_max, c->str);
  g_string_free(c, TRUE);
  pn_doc_item(d,
              "Goodput %.3g: the fraction of wall time that trains (checkpoints, restarts and failures take the "
              "rest)%s.",
              s->goodput, s->goodput == 1.0 ? "; 1 is the default, an ideal run" : "");
  for (guint k = 0; k < s->kinds->len; k++) {
    const PnPlanKind *kind = &g_array_index(s->kinds, PnPlanKind, k);
    g_autofree char *price = money(kind->price);
    pn_doc_item(d, "GPU kind %s: price per GPU-hour %s.", kind->profile, price);
  }
}

static const char *const plan_header[] = {"GPU kind",   "GPUs",         "batch", "layout",    "TFLOP/s/GPU",
                                          "MFU %",      "tokens/s",     "days",  "GPU-hours", "cost",
                                          "efficiency", "within error", NULL};

static void doc_plans(PnDoc *d, const PnPlanResult *r)
{
  pn_doc_heading(d, "Plans: one per GPU kind and count");
  pn_doc_para(d, "Each row is the best layout of the sweep's default space at that count and the best of the global "
                 "batches; efficiency is tokens/s per GPU relative to the kind's smallest count; 'within error' counts "
                 "the layouts whose prediction is within penumbra's measured error of the best (it included).");
  pn_doc_table(d, plan_header);
  for (guint i = 0; i < r->points->len; i++) {
    const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
    if (!p->chosen)
      continue;
    const PnSweepRow *b  = pn_plan_best(p);
    g_autofree char *lay = layout_of(r, p, b), *cost = money(p->cost);
    g_autoptr(GPtrArray) c = cells();
    g_ptr_array_add(c, g_strdup(kind_name(r, p)));
    g_ptr_array_add(c, g_strdup_printf("%" G_GINT64_FORMAT, p->gpus));
    g_ptr_array_add(c, g_strdup_printf("%" G_GINT64_FORMAT, p->batch));
    g_ptr_array_add(c, g_strdup(lay));
    g_ptr_array_add(c, g_strdup_printf("%.1f", b->tflops_per_gpu));
    g_ptr_array_add(c, g_strdup_printf("%.1f", 100.0 * b->mfu));
    g_ptr_array_add(c, g_strdup_printf("%.4g", p->tokens_per_s));
    g_ptr_array_add(c, g_strdup_printf("%.1f", p->train_s / DAY_S));
    g_ptr_array_add(c, g_strdup_printf("%.4g", p->gpu_hours));
    g_ptr_array_add(c, g_strdup(cost));
    g_ptr_array_add(c, g_strdup_printf("%.3f", p->efficiency));
    g_ptr_array_add(c, g_strdup_printf("%u", p->within));
    row(d, c);
  }
  pn_doc_figure(d, "time", "Time to train against GPU count, per GPU kind");
  pn_doc_figure(d, "cost", r->priced ? "Cost against GPU count" : "GPU-hours against GPU count (no price given)");
  pn_doc_figure(d, "tflops", "Model TFLOP/s per GPU against GPU count");
  pn_doc_figure(d, "efficiency", "Scaling efficiency: tokens/s per GPU relative to the smallest count");
}

static void doc_breakdown(PnDoc *d, const PnPlanResult *r)
{
  pn_doc_heading(d, "Where the iteration goes");
  pn_doc_para(d, "Percent of each plan's iteration: compute, pipeline bubble, communication left exposed by class, and "
                 "the rest (optimizer step, waits the accounting does not attribute).");
  const char *h[PN_PLAN_PARTS + 4] = {"GPU kind", "GPUs", "iteration s"};
  for (int k = 0; k < PN_PLAN_PARTS; k++)
    h[3 + k] = part_names[k];
  pn_doc_table(d, h);
  for (guint i = 0; i < r->points->len; i++) {
    const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
    if (!p->chosen)
      continue;
    double parts[PN_PLAN_PARTS];
    const PnSweepRow *b = pn_plan_best(p);
    pn_plan_breakdown(b, parts);
    g_autoptr(GPtrArray) c = cells();
    g_ptr_array_add(c, g_strdup(kind_name(r, p)));
    g_ptr_array_add(c, g_strdup_printf("%" G_GINT64_FORMAT, p->gpus));
    g_ptr_array_add(c, g_strdup_printf("%.3f", b->iteration_s));
    for (int k = 0; k < PN_PLAN_PARTS; k++)
      g_ptr_array_add(c, g_strdup_printf("%.1f", 100.0 * parts[k] / b->iteration_s));
    row(d, c);
  }
  pn_doc_figure(d, "breakdown", "Where the iteration goes, for each plan");
}

static void doc_memory(PnDoc *d, const PnPlanResult *r)
{
  pn_doc_heading(d, "Memory per GPU");
  pn_doc_table(d, (const char *const[]){"GPU kind", "GPUs", "estimate GiB", "HBM GiB", "headroom GiB", NULL});
  for (guint i = 0; i < r->points->len; i++) {
    const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
    if (!p->chosen)
      continue;
    const PnSweepRow *b    = pn_plan_best(p);
    const PnPlanSweep *s   = r->sweeps->pdata[p->kind];
    g_autoptr(GPtrArray) c = cells();
    g_ptr_array_add(c, g_strdup(kind_name(r, p)));
    g_ptr_array_add(c, g_strdup_printf("%" G_GINT64_FORMAT, p->gpus));
    g_ptr_array_add(c, g_strdup_printf("%.1f", b->memory_gib));
    g_ptr_array_add(c, g_strdup_printf("%.1f", s->base->hw->hbm_bytes / GIB));
    g_ptr_array_add(c, g_strdup_printf("%.1f", b->headroom_gib));
    row(d, c);
  }
  pn_doc_figure(d, "memory", "Memory per GPU (estimate) against the GPU's HBM");
}

static void doc_runner_ups(PnDoc *d, const PnPlanResult *r, const PnPlanPoint *p)
{
  pn_doc_heading(d, "How flat the optimum is");
  if (isnan(r->error_pct)) {
    pn_doc_para(d, "penumbra has no measured error for this model: no layout is marked as within it.");
    return;
  }
  g_autofree char *pruned_note =
      p->checked > p->simulated
          ? g_strdup_printf(" (of %u checked; a lower bound on their iteration time put the other %u beyond it)",
                            p->checked, p->checked - p->simulated)
          : g_strdup("");
  pn_doc_para(d,
              "%u of the %u layouts simulated at the recommended count and batch%s predict within %.1f%% "
              "(penumbra's measured error on %s) of the best: the prediction cannot tell them apart. The first %u:",
              p->within, p->simulated, pruned_note, r->error_pct, r->error_family, MIN(p->within, (guint)RUNNER_UPS));
  pn_doc_table(d, (const char *const[]){"rank", "layout", "TFLOP/s/GPU", "behind the best %", "memory GiB", NULL});
  double best = pn_plan_best(p)->tflops_per_gpu;
  for (guint k = 0; k < MIN(p->within, (guint)RUNNER_UPS); k++) {
    const PnSweepRow *w    = &g_array_index(p->layouts->rows, PnSweepRow, k);
    g_autoptr(GPtrArray) c = cells();
    g_ptr_array_add(c, g_strdup_printf("%u", k + 1));
    g_ptr_array_add(c, layout_of(r, p, w));
    g_ptr_array_add(c, g_strdup_printf("%.1f", w->tflops_per_gpu));
    g_ptr_array_add(c, g_strdup_printf("%.1f", 100.0 * (1.0 - w->tflops_per_gpu / best)));
    g_ptr_array_add(c, g_strdup_printf("%.1f", w->memory_gib));
    row(d, c);
  }
}

static char *seconds(double v) { return isnan(v) ? g_strdup("refused") : g_strdup_printf("%.3f", v); }

static void doc_what_if(PnDoc *d, const PnPlanResult *r)
{
  pn_doc_heading(d, "What each overlap strategy is worth on the recommended layout");
  pn_doc_para(d, "Each knob of the overlap registry that acts on the layout, simulated off and on (every micro-batch, "
                 "everything else as recommended); worth = iteration off - iteration on.");
  pn_doc_table(d, (const char *const[]){"knob", "recommended", "iteration off s", "iteration on s", "worth s",
                                        "worth %", "refused", NULL});
  for (guint i = 0; i < r->knobs->len; i++) {
    const PnWhatIfKnob *k = &g_array_index(r->knobs, PnWhatIfKnob, i);
    double off = k->iteration_time_s[0], on = k->iteration_time_s[1];
    g_autoptr(GPtrArray) c = cells();
    g_ptr_array_add(c, g_strdup(k->name));
    g_ptr_array_add(c, g_strdup(k->now ? "on" : "off"));
    g_ptr_array_add(c, seconds(off));
    g_ptr_array_add(c, seconds(on));
    g_ptr_array_add(c, seconds(off - on));
    g_ptr_array_add(c, isnan(off - on) ? g_strdup("-") : g_strdup_printf("%.1f", 100.0 * (off - on) / off));
    g_ptr_array_add(c, g_strdup(k->refused[0] ? k->refused[0] : k->refused[1] ? k->refused[1] : ""));
    row(d, c);
  }
}

static void doc_assumptions(PnDoc *d, const PnPlanResult *r)
{
  pn_doc_heading(d, "Assumptions");
  for (guint k = 0; k < r->sweeps->len; k++) {
    const PnPlanSweep *s = r->sweeps->pdata[k];
    pn_doc_item(d, "Hardware profile %s (hwprofiles/%s.json), calibrated %s; %.0f GiB HBM, %d GPUs per node.",
                s->base->hw->name, s->base->hw->name,
                s->base->hw->calibrated[0] ? s->base->hw->calibrated : "(no date)", s->base->hw->hbm_bytes / GIB,
                s->base->hw->gpus_per_node);
  }
  if (isnan(r->error_pct))
    pn_doc_item(d, "Accuracy: no published run to measure penumbra's error on.");
  else
    pn_doc_item(d,
                "Accuracy: penumbra's step-time error on %s is %.1f%% (mean absolute, %d published H100 runs, "
                "`penumbra validate`); on other GPU kinds it is not measured against published runs.",
                r->error_family, r->error_pct, r->error_n);
  pn_doc_item(d, "The layouts are the sweep's default space (`penumbra sweep --help`): tensor, pipeline, virtual "
                 "pipeline and context sizes, micro-batch size and recompute vary; overlap switches as the recipes' "
                 "gating gives them; layouts over the GPU's memory are left out.");
  pn_doc_para(d, "Not simulated (README, What is simulated):");
  for (gsize i = 0; i < G_N_ELEMENTS(not_simulated); i++)
    pn_doc_item(d, "%s", not_simulated[i]);
}

PnDoc *pn_plan_doc(const PnPlanResult *r, const char *version, const char *commit)
{
  g_autofree char *title = g_strdup_printf("Capacity plan: %s on %.4g tokens", r->spec->model, r->spec->tokens);
  PnDoc *d               = pn_doc_new(title);
  pn_doc_para(d,
              "penumbra %s (%s). Files beside this report: plans.csv and plans.json (every evaluated point: GPU "
              "kind, count and batch), layouts-<kind>.csv (%s), plots/ (data and figures).",
              version, commit,
              r->spec->exhaustive ? "every simulated layout"
                                  : "the simulated layouts that come within penumbra's error of their point's best");
  doc_answer(d, r);
  doc_inputs(d, r);
  if (r->recommended >= 0) {
    doc_plans(d, r);
    doc_breakdown(d, r);
    doc_memory(d, r);
    doc_runner_ups(d, r, point(r, r->recommended));
    doc_what_if(d, r);
  }
  doc_assumptions(d, r);
  return d;
}

/* ---- CSV and JSON: every evaluated point ---- */

char *pn_plan_csv(const PnPlanResult *r)
{
  GString *s = g_string_new("gpu_kind,gpus,global_batch_size,global_batch_tokens,feasible,chosen,layout,layouts_"
                            "simulated,within_error,iteration_s,tflops_per_gpu,mfu,tokens_per_s,train_days,gpu_hours,"
                            "cost,efficiency,memory_gib,headroom_gib");
  for (int k = 0; k < PN_PLAN_PARTS; k++)
    g_string_append_printf(s, ",%s", part_keys[k]);
  g_string_append_c(s, '\n');
  for (guint i = 0; i < r->points->len; i++) {
    const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
    g_string_append_printf(s, "%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%d,%d,",
                           kind_name(r, p), p->gpus, p->batch, p->batch * r->spec->seq_length, p->feasible, p->chosen);
    if (!p->feasible) {
      g_string_append_printf(s, ",%u,,,,,,,,,,,,", p->simulated);
      for (int k = 0; k < PN_PLAN_PARTS; k++)
        g_string_append_c(s, ',');
      g_string_append_c(s, '\n');
      continue;
    }
    const PnSweepRow *b  = pn_plan_best(p);
    g_autofree char *lay = layout_of(r, p, b);
    pn_sweep_csv_cell(s, lay); /* account_for=embedding,loss: one quoted CSV field */
    g_string_append_printf(s, ",%u,%u,%.6f,%.3f,%.5f,%.1f,%.4f,%.1f,", p->simulated, p->within, b->iteration_s,
                           b->tflops_per_gpu, b->mfu, p->tokens_per_s, p->train_s / DAY_S, p->gpu_hours);
    if (!isnan(p->cost))
      g_string_append_printf(s, "%.1f", p->cost);
    g_string_append_printf(s, ",%.5f,%.3f,%.3f", p->efficiency, b->memory_gib, b->headroom_gib);
    double parts[PN_PLAN_PARTS];
    pn_plan_breakdown(b, parts);
    for (int k = 0; k < PN_PLAN_PARTS; k++)
      g_string_append_printf(s, ",%.6f", parts[k]);
    g_string_append_c(s, '\n');
  }
  return g_string_free(s, FALSE);
}

static void json_point(PnJsonWriter *w, const PnPlanResult *r, const char *key, int i)
{
  if (i < 0) {
    pn_jsonw_null(w, key);
    return;
  }
  const PnPlanPoint *p = point(r, i);
  pn_jsonw_object(w, key, PN_JSONW_INLINE);
  pn_jsonw_string(w, "gpu_kind", kind_name(r, p));
  pn_jsonw_int(w, "gpus", p->gpus);
  pn_jsonw_int(w, "global_batch_size", p->batch);
  pn_jsonw_end(w);
}

static void json_points(PnJsonWriter *w, const PnPlanResult *r)
{
  pn_jsonw_array(w, "points", PN_JSONW_BLOCK);
  for (guint i = 0; i < r->points->len; i++) {
    const PnPlanPoint *p = &g_array_index(r->points, PnPlanPoint, i);
    pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
    pn_jsonw_string(w, "gpu_kind", kind_name(r, p));
    pn_jsonw_int(w, "gpus", p->gpus);
    pn_jsonw_int(w, "global_batch_size", p->batch);
    pn_jsonw_bool(w, "feasible", p->feasible);
    pn_jsonw_bool(w, "chosen", p->chosen);
    pn_jsonw_uint(w, "layouts_simulated", p->simulated);
    if (p->feasible) {
      const PnSweepRow *b  = pn_plan_best(p);
      g_autofree char *lay = layout_of(r, p, b);
      pn_jsonw_string(w, "layout", lay);
      pn_jsonw_uint(w, "within_error", p->within);
      pn_jsonw_fixed(w, "iteration_s", b->iteration_s, 6);
      pn_jsonw_fixed(w, "tflops_per_gpu", b->tflops_per_gpu, 3);
      pn_jsonw_fixed(w, "mfu", b->mfu, 5);
      pn_jsonw_fixed(w, "tokens_per_s", p->tokens_per_s, 1);
      pn_jsonw_fixed(w, "train_s", p->train_s, 0);
      pn_jsonw_fixed(w, "gpu_hours", p->gpu_hours, 1);
      pn_jsonw_fixed(w, "cost", p->cost, 1);
      pn_jsonw_fixed(w, "efficiency", p->efficiency, 5);
      pn_jsonw_fixed(w, "memory_gib", b->memory_gib, 3);
      pn_jsonw_fixed(w, "headroom_gib", b->headroom_gib, 3);
    }
    pn_jsonw_end(w);
  }
  pn_jsonw_end(w);
}

char *pn_plan_json(const PnPlanResult *r, const char *version, const char *commit)
{
  const PnPlanSpec *s = r->spec;
  PnJsonWriter *w     = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_string(w, "penumbra", version);
  pn_jsonw_string(w, "commit", commit);
  pn_jsonw_string(w, "model", s->model);
  pn_jsonw_double(w, "tokens", s->tokens);
  pn_jsonw_int(w, "seq_length", s->seq_length);
  pn_jsonw_double(w, "goodput", s->goodput);
  pn_jsonw_fixed(w, "deadline_s", s->deadline_s, 0);
  pn_jsonw_double(w, "budget", s->budget);
  pn_jsonw_fixed(w, "measured_error_pct", r->error_pct, 2);
  pn_jsonw_string(w, "measured_error_on", r->error_family);
  json_point(w, r, "cheapest_meeting_deadline", r->cheapest);
  json_point(w, r, "fastest_within_budget", r->fastest);
  json_point(w, r, "closest_to_deadline", r->closest_deadline);
  json_point(w, r, "closest_to_budget", r->closest_budget);
  json_point(w, r, "recommended", r->recommended);
  json_points(w, r);
  pn_jsonw_end(w);
  return pn_jsonw_free_to_string(w);
}
