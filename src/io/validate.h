/* validate.h — predictions against published measured runs.
 *
 * What it does: reads a file of published training-throughput records (the layout of
 * shared/validation/published-visible.json; a copy is in tests/data/validation/), turns every
 * complete H100 record of a dense or MoE model into a scenario, simulates it and compares the
 * predicted step time with the published one (measured, or derived by the source's own
 * tokens/s/GPU: the step time does not depend on a FLOP convention).
 *
 * The mapping from a record to a scenario uses only what the record states plus the documented
 * defaults of the framework that produced it (never a per-row or per-model correction):
 *   - NeMo 24.07 and Megatron-Bridge performance recipes: sequence parallel and TE userbuffers
 *     TP overlap when TP > 1 (the preset named for the model's hidden size / TP / seq when one
 *     exists, TE defaults otherwise), distributed optimizer, Bridge's DP and PP overlap gating,
 *     grad_reduce_in_fp32 = false, CUDA_DEVICE_MAX_CONNECTIONS = 1 when TP or CP > 1.
 *   - Megatron-LM README (2024 weak scaling): the flags it lists (overlap_grad_reduce,
 *     overlap_param_gather, tp_comm_overlap), sequence parallel with TP > 1, BF16,
 *     micro-batch 1 (not stated: an assumption reported with the row).
 *   - Megatron-Bridge MoE rows: expert TP 1, the alltoall dispatcher unless the record names
 *     another, and what the release's performance pack sets for that model on H100 (validate.c,
 *     bridge_pack_ep_overlap: 25.11's Qwen3 presets run EP overlap with delayed wgrad), GPT-OSS as
 *     its provider configures it (YaRN, bias-dropout-add fusion off).
 *   - A vocabulary the record leaves null comes from the model's tokenizer (Llama 2: 32000,
 *     GPT-3 (GPT-2 BPE): 50257 padded by Megatron, Nemotron: 256000).
 *   - FSDP > 0: Megatron-FSDP, optim_grads_params, as Bridge's performance harness sets it.
 * Records are skipped, with the reason, when: not H100, configuration incomplete, MLA,
 * not pretraining, no step time or throughput, or the scenario does not load.
 */
#ifndef PN_IO_VALIDATE_H
#define PN_IO_VALIDATE_H

#include <glib.h>
#include <stdbool.h>

typedef struct {
  char *id;
  char *source_family;
  char *model;
  long gpus;
  char *precision;
  char *layout; /* "TP4 PP8 VP5 CP1 DP2 MBS1 GBS128" */
  bool skipped;
  char *reason; /* skip reason, or the assumptions made */
  double published_step_s;
  double predicted_step_s;
  double error_pct;          /* (predicted - published) / published * 100 */
  double exposed_comm_s;     /* predicted, all classes */
  double measured_exposed_s; /* e2e runs: measured on rank 0 (NaN when not measured) */
  double bubble_s;
  char *scenario_json; /* published records: the scenario simulated for it (indented JSON); NULL otherwise */
} PnValidationRow;

void pn_validation_row_free(PnValidationRow *row);

/* Fills `rows` (a GPtrArray with free func pn_validation_row_free) with one row per record. */
gboolean pn_validate_file(const char *records_path, const char *profile, GPtrArray *rows, GError **error);

/* Our own end-to-end runs (microbench/e2e, kind "e2e"): each result whose config has a scenario
 * `<scenario_dir>/<config>.json` is simulated and compared (step time and exposed comm). */
gboolean pn_validate_e2e(const char *results_path, const char *scenario_dir, GPtrArray *rows, GError **error);

/* Per-record table, then mean absolute percentage error by source family, by model and overall,
 * and the worst five records. */
char *pn_validate_report_text(const GPtrArray *rows);
char *pn_validate_report_json(const GPtrArray *rows);
/* gnuplot data: "published predicted id" per predicted row. */
char *pn_validate_plot_data(const GPtrArray *rows);
/* Mean absolute percentage error over the rows that were not skipped (NAN when none). */
double pn_validate_mape(const GPtrArray *rows, int *n_out);

/* penumbra's measured step-time error (pn_validate_mape) on the published H100 runs of a model's
 * family (the letters and first digits of its name: "llama3" for llama3-70b and LLAMA3.1-405B),
 * from the records shipped in tests/data/validation/, or on every record when the family has
 * fewer than three. *family_out (g_free) says which: "llama3 models", "all H100 records (fewer
 * than 3 of gpt)"; without records *pct is NaN, *n 0 and *family_out untouched. */
void pn_validate_family_error(const char *model_name, double *pct, int *n, char **family_out);

#endif
