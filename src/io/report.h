/* report.h — a simulated scenario's result as JSON (for scripts) or text (for people).
 *
 * JSON (`penumbra run --format json`): one object, keys in a fixed order, two-space indents,
 * ending with a newline. Numbers are printed with 9 significant digits ("%.9g", C locale),
 * integers exactly, non-finite values as null. The same scenario and result give byte-identical
 * output (text too). The run's own metadata is written only with PnReportOptions.timing
 * (`--timing`; "simulator" then gains events and wall_s): the wall-clock time varies from run to
 * run, and the engine's event count with the engine's implementation (its kernel chains change
 * it, not the result). Keys (schema_version 1; a key added changes no schema_version, one removed or
 * changed in meaning does):
 *   schema_version, penumbra {version, commit}, then the summary:
 *     scenario {name, model, profile, num_gpus, tp, pp, vpp, cp, ep, dp, sequence_parallel,
 *     micro_batch_size, global_batch_size, num_microbatches, seq_length, precision},
 *     hardware {name, gpu}, iteration_time_s, tokens_per_s_per_gpu, model_tflops_per_gpu, mfu,
 *     exposed_comm_s {dp, tp, pp, cp, ep}, total_comm_s {dp, tp, pp, cp, ep}, sm_contention_s {dp,
 *     tp, pp, cp, ep, total} (the compute lost to SM contention, sim/result.h), bubble_s, compute_s,
 *     memory_gib_per_gpu (= memory.total_gib), hbm_gib_per_gpu, fits_in_hbm, memory {weights_gib,
 *     gradients_gib, optimizer_gib, activations_gib, other_gib, total_gib}, overlap {strategies
 *     [{name, applies, on}], bucket_size, align_param_gather, batch_p2p_comm, cp_comm_type,
 *     max_connections, data_parallel_sharding_strategy (Megatron-FSDP's; null without it),
 *     tp_comm_overlap_cfg},
 *   then model_flops_per_iteration, tokens_per_iteration, iterations, iteration_times_s [..],
 *   stages [{stage, compute_s, bubble_s, exposed_comm_s {..}, total_comm_s {..}, sm_contention_s {..},
 *   end_s, dp_buckets, dp_bucket_groups}] (dp_buckets: Megatron-Core's data-parallel gradient
 *   buckets over the stage's model chunks, dense and expert buffers; dp_bucket_groups: the
 *   collectives they make, one gradient reduction and one parameter all-gather per group and
 *   iteration, sched/dp_buckets.c),
 *   comm_ops [{op, class, total_s, exposed_s}], simulator {tasks, cost_fallbacks},
 *   warnings [..].
 * scenario.name is the scenario file's name without directory and ".json"; hardware.name the
 * profile's own name. overlap is the plan simulated, after the frameworks' gating: each strategy
 * of the registry that has a knob (overlap/strategy.h, in its order), whether it can act in this
 * scenario (a strategy can be on where it does nothing: the p2p ring at CP 1) and whether the
 * plan runs it, then the values the gating resolved (bucket_size in elements; tp_comm_overlap_cfg the
 * userbuffers preset, "default" for Transformer Engine's defaults, null without TP overlap).
 *
 * Text: a headline (iteration time, tokens/s/GPU, TFLOP/s/GPU, MFU), communication per class
 * (total, exposed, hidden %), the compute lost to SM contention with the classes that caused it
 * (a line only where there is any), bubble and compute, the memory breakdown, one row per pipeline
 * stage, the simulator's counters (with timing its events and wall time too), then each warning
 * on a line "warning: ...".
 *
 * What-if (`penumbra run --what-if`): the overlap knobs that apply, each simulated off and on.
 * Text: a line with the baseline's iteration time and exposed communication, then one row per
 * knob (now on or off, the two iteration times, on - off for the time and for the exposed
 * communication), followed, where the knob changes the compute lost to SM contention (as shown,
 * to 4 decimals), by a line "  compute lost to SM contention: off X s, on Y s (on-off D)"; a
 * direction the frameworks refuse shows "-" and is followed by a line
 * "  <off|on> refused: <reason>". JSON: an object {schema_version, penumbra, baseline (the run
 * report's summary), knobs [..]}, the knobs one-line objects {knob, now, off_s, on_s,
 * exposed_off_s, exposed_on_s, sm_contention_off_s, sm_contention_on_s, off_refused, on_refused},
 * the times of a refused direction null and its *_refused the reason (null when it ran).
 *
 * All only read their arguments; the caller g_free()s the returned string. Cost: linear in
 * stages, iterations, warnings and knobs.
 */
#ifndef PN_IO_REPORT_H
#define PN_IO_REPORT_H

#include <glib.h>
#include <stdbool.h>

#include "sim/result.h"
#include "workload/config.h"

/* What a report adds to the result: penumbra's version and the commit it was built from (JSON;
 * both "unknown" when `opt` or a field is NULL) and the run's timing (off when `opt` is NULL). */
typedef struct {
  const char *version;
  const char *commit;
  bool timing; /* the simulator's events and wall time (the latter differs run to run) */
} PnReportOptions;

char *pn_report_json(const PnScenario *sc, const PnResult *r, const PnReportOptions *opt);
char *pn_report_text(const PnScenario *sc, const PnResult *r, const PnReportOptions *opt);

/* One what-if knob: [0] off, [1] on. A refused direction was not simulated: its times are NaN
 * and refused[] holds the reason, one line (owned by whoever owns the knob). */
typedef struct {
  const char *name; /* the registry's (overlap/strategy.h) */
  bool now;         /* the baseline's resolved plan runs it */
  double iteration_time_s[2];
  double exposed_comm_s[2]; /* all classes */
  double contention_s[2];   /* compute lost to SM contention, all classes (sim/result.h) */
  char *refused[2];         /* NULL when simulated */
} PnWhatIfKnob;

/* `base` is the scenario as given and `base_r` its result; `knobs` holds PnWhatIfKnob. */
char *pn_report_what_if_json(const PnScenario *base, const PnResult *base_r, const GArray *knobs,
                             const PnReportOptions *opt);
char *pn_report_what_if_text(const PnScenario *base, const PnResult *base_r, const GArray *knobs);

#endif
