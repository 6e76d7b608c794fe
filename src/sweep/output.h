/* output.h — what a sweep reports: the ranked table on stdout, CSV and JSON files with every
 * simulated layout (whatever --top is), the rejected layouts with their reasons, and the
 * summaries that keep a ranking honest (penumbra's measured error band, which axes matter).
 *
 * Columns, in every format: the rank, the candidate index, each axis's value (scenario key
 * names, which are Megatron-Core's config names), the derived data_parallel_size and
 * num_microbatches, TFLOP/s per GPU, tokens/s per GPU, MFU, iteration time, memory and headroom,
 * exposed communication per class, bubble, compute, whether the layout is within penumbra's
 * error of the best, the layout as Megatron-LM arguments (io/megatron.h) and, for a layout that
 * failed to simulate, its error. Numbers are printed with fixed decimals: outputs are
 * byte-identical for any number of threads or processes.
 */
#ifndef PN_SWEEP_OUTPUT_H
#define PN_SWEEP_OUTPUT_H

#include <glib.h>

#include "sweep/sweep.h"

typedef struct {
  const char *version, *commit; /* of penumbra */
  const char *source;           /* the scenario file, or "--model NAME" */
  double error_pct;             /* penumbra's measured step-time error for this model family (NaN: unknown) */
  int error_n;                  /* the records it is measured on */
  const char *error_family;     /* which records: "llama3", "all dense models", ... */
  int top;                      /* rows in the table (0: all) */
} PnSweepReportOptions;

/* One axis's effect: the best TFLOP/s among layouts with each of its values; spread = max - min. */
typedef struct {
  guint axis;
  double spread, best_tflops;
  const PnScenarioValue *best_value;
} PnSweepAxisEffect;

/* The axes that vary, by spread (largest first). `out` has room for spec->axes->len. */
guint pn_sweep_axis_effects(const PnSweepSpec *spec, const PnSweepResult *r, PnSweepAxisEffect *out);

/* Whether row `k` of the ranking predicts within error_pct of the best (so is not clearly worse). */
bool pn_sweep_within_error(const PnSweepResult *r, guint k, double error_pct);

/* The candidate as Megatron-LM arguments (every axis and the base's batch and sequence). */
char *pn_sweep_megatron_args(const PnSweepSpec *spec, uint64_t index);

/* The split of the space, before simulating: sizes and the most frequent rejection reasons. */
char *pn_sweep_text_space(const PnSweepSpec *spec, const PnSweepResult *r);
/* The ranked table, the error band, the axes' effects, the best layout's arguments. */
char *pn_sweep_text_table(const PnSweepSpec *spec, const PnSweepResult *r, const PnSweepReportOptions *o);
char *pn_sweep_csv(const PnSweepSpec *spec, const PnSweepResult *r, const PnSweepReportOptions *o);
/* `text` appended to `s` as one CSV field: quoted (quotes doubled, newlines as spaces) when it
 * holds a comma, a quote or a newline. */
void pn_sweep_csv_cell(GString *s, const char *text);
char *pn_sweep_json(const PnSweepSpec *spec, const PnSweepResult *r, const PnSweepReportOptions *o);
/* Every rejected candidate (index, axis values, verdict, reason) as CSV, handed to `sink` in
 * pieces of about 64 KiB; O(candidates) time, O(1) memory. Returns the rows written. */
typedef void (*PnSweepSink)(const char *data, gsize len, gpointer user);
uint64_t pn_sweep_write_rejected(const PnSweepSpec *spec, PnSweepSink sink, gpointer user);

#endif
