/* megatron.h — scenario keys as Megatron-LM command-line arguments: one table, read by everything
 * that speaks Megatron-LM's language (the sweep's layouts, import and export of launch lines, the
 * training log's argument dump), and the list of every argument Megatron-LM accepts.
 *
 * Each row maps one scenario key to the `pretrain_gpt.py` argument that sets it
 * (megatron/training/arguments.py), with the argument's form: a value (`--tensor-model-parallel-size 4`),
 * a flag present when true (`--sequence-parallel`), a flag present when false
 * (`--no-overlap-p2p-communication`), or none when Megatron-LM derives the setting itself (then
 * `arg` says how, for messages), or several arguments that megatron_args.c converts (CUSTOM: the
 * activation, the precision, GQA). Keys Megatron-LM has no argument for (penumbra's own, or
 * Megatron-Bridge-only) are absent. The table is constant; nothing here allocates but the
 * formatting helper's string.
 */
#ifndef PN_IO_MEGATRON_H
#define PN_IO_MEGATRON_H

#include <glib.h>

#include "io/scenario.h"

typedef enum {
  PN_MEGATRON_VALUE,       /* --arg VALUE (enum names and integers as written; null: the argument is left out) */
  PN_MEGATRON_FLAG,        /* --arg when true */
  PN_MEGATRON_NEG_FLAG,    /* --arg when false (Megatron-LM's --no-... with action store_false) */
  PN_MEGATRON_DERIVED,     /* no argument: Megatron-LM derives it (`arg` says from what) */
  PN_MEGATRON_ENVIRONMENT, /* an environment variable of the launch, not an argument */
  PN_MEGATRON_CUSTOM       /* several arguments, or one in another form: megatron_args.c converts it */
} PnMegatronForm;

typedef struct {
  const char *key; /* dotted scenario key: "parallel.tensor_model_parallel_size" */
  const char *arg; /* "--tensor-model-parallel-size" */
  PnMegatronForm form;
} PnMegatronArg;

extern const PnMegatronArg pn_megatron_args[];
extern const size_t pn_megatron_n_args;

/* ---- what Megatron-LM accepts (megatron_flags.c, generated from its parser) ---- */

#define PN_MEGATRON_LM_COMMIT "NVIDIA/Megatron-LM@d98e8a64ddf3 (2026-08-22)"

typedef enum {
  PN_MEGATRON_SETS_TRUE,  /* no value: store_true */
  PN_MEGATRON_SETS_FALSE, /* no value: store_false (--no-..., --disable-...) */
  PN_MEGATRON_ONE_VALUE,  /* --arg VALUE */
  PN_MEGATRON_VALUES      /* --arg V1 V2 ... (nargs "+", "*" or a count) */
} PnMegatronArity;

typedef struct {
  const char *name; /* "--num-layers" */
  const char *dest; /* the attribute it sets, as the argument dump prints it: "num_layers" */
  PnMegatronArity arity;
} PnMegatronFlag;

extern const PnMegatronFlag pn_megatron_flags[]; /* sorted by name (strcmp) */
extern const size_t pn_megatron_n_flags;

/* The flag `name` ("--num-layers", no "=value"), or NULL when Megatron-LM rejects it. O(log n). */
const PnMegatronFlag *pn_megatron_flag(const char *name);

/* The row of `key`, or NULL when Megatron-LM has no argument for it. */
const PnMegatronArg *pn_megatron_arg(const char *key);

/* `key` set to `v` as Megatron-LM arguments, appended to `out` with a leading space when it
 * writes anything: " --tensor-model-parallel-size 4", " --sequence-parallel", " NAME=VALUE" for
 * an environment variable, nothing for a flag in its default state or a derived key. */
void pn_megatron_append(GString *out, const char *key, const PnScenarioValue *v);

/* ---- launch lines in and out (megatron_args.c) ---- */

/* A scenario (JSON text, g_free) from a Megatron-LM launch line: `argv` is either the arguments of
 * pretrain_gpt.py alone or a whole line: NAME=VALUE environment assignments, then `torchrun` or
 * `python3 -m torch.distributed.run` with their options (--nproc_per_node, --nnodes: the GPU
 * count), then the script and its arguments. Every argument is checked against Megatron-LM's own
 * list (an unknown one is an error with a did-you-mean), mapped through pn_megatron_args, or, when
 * penumbra does not model it, named in `notes` ("ignored: --lr 3e-4", one string each, g_free).
 * `sets` ("dotted.key=value", as run --set) apply last. `warnings` gets what is recorded but not
 * simulated as Megatron-LM would run it. The text is validated as pn_scenario_load would; errors
 * in PN_IO_ERROR. */
char *pn_megatron_import(int argc, char **argv, const char *const *sets, int n_sets, GPtrArray *notes,
                         GPtrArray *warnings, GError **error);

/* `sc` as one launch line (g_free): environment, torchrun with the GPU count, pretrain_gpt.py and
 * the arguments of every mapped key, the overlap switches as the gating resolved them (so that
 * the line runs what penumbra simulates). pn_megatron_import of the line gives back a scenario
 * whose export is the same line. Fails only when the scenario's overlap settings are refused. */
char *pn_megatron_export(const PnScenario *sc, GPtrArray *warnings, GError **error);

/* ---- training logs (megatron_log.c) ---- */

/* One "iteration N/M | ... elapsed time per iteration (ms): X | ..." line: Megatron-LM logs every
 * --log-interval iterations the mean over the interval. */
typedef struct {
  int64_t iteration; /* the last iteration of the interval */
  double elapsed_ms;
  double tflops_per_gpu; /* "throughput per GPU (TFLOP/s/GPU)"; NAN without --log-throughput */
} PnMegatronLogIteration;

/* One "[Rank R] (after N iterations) memory (MB) | allocated: ... | max allocated: ..." line. */
typedef struct {
  int rank;
  int64_t after_iteration; /* 0 when the line says otherwise ("(before save_checkpoint ...)") */
  double allocated_mib, max_allocated_mib, reserved_mib, max_reserved_mib; /* Megatron-LM's "MB" are MiB; NAN: absent */
} PnMegatronLogMemory;

typedef struct {
  GArray *iterations;   /* PnMegatronLogIteration, in the log's order */
  GArray *memory;       /* PnMegatronLogMemory, in the log's order */
  GPtrArray *dump;      /* the first argument dump: name, value, name, value, ... (char*, as printed) */
  bool without_te_apex; /* Megatron-LM warned that neither Transformer Engine nor Apex is installed (it then
                           runs torch.optim.AdamW) */
} PnMegatronLog;

/* Reads the log at `path` (any size; other lines are skipped). NULL with a PN_IO_ERROR_FILE
 * error when it cannot be read; a log with none of the lines above is not an error here. */
PnMegatronLog *pn_megatron_log_read(const char *path, GError **error);
void pn_megatron_log_free(PnMegatronLog *log); /* NULL is a no-op */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PnMegatronLog, pn_megatron_log_free)

/* The launch line the argument dump describes, as pn_megatron_import reads it (WORLD_SIZE=N, then
 * one argument per attribute that a flag of Megatron-LM sets; a tokenizer's vocabulary as its
 * padded size), NULL-terminated (g_strfreev); NULL when the log has no dump. */
char **pn_megatron_log_args(const PnMegatronLog *log);

#endif
