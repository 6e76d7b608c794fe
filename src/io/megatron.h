/* megatron.h — scenario keys as Megatron-LM command-line arguments: one table, read by everything
 * that speaks Megatron-LM's language (the sweep's layouts today; import and export of argument
 * lists and training logs later).
 *
 * Each row maps one scenario key to the `pretrain_gpt.py` argument that sets it
 * (megatron/training/arguments.py), with the argument's form: a value (`--tensor-model-parallel-size 4`),
 * a flag present when true (`--sequence-parallel`), a flag present when false
 * (`--no-overlap-p2p-communication`), or none when Megatron-LM derives the setting itself (then
 * `arg` says how, for messages). Keys Megatron-LM has no argument for (penumbra's own, or
 * Megatron-Bridge-only) are absent. The table is constant; nothing here allocates but the
 * formatting helper's string.
 */
#ifndef PN_IO_MEGATRON_H
#define PN_IO_MEGATRON_H

#include <glib.h>

#include "io/scenario.h"

typedef enum {
  PN_MEGATRON_VALUE,      /* --arg VALUE (enum names and integers as written; null: the argument is left out) */
  PN_MEGATRON_FLAG,       /* --arg when true */
  PN_MEGATRON_NEG_FLAG,   /* --arg when false (Megatron-LM's --no-... with action store_false) */
  PN_MEGATRON_DERIVED,    /* no argument: Megatron-LM derives it (`arg` says from what) */
  PN_MEGATRON_ENVIRONMENT /* an environment variable of the launch, not an argument */
} PnMegatronForm;

typedef struct {
  const char *key; /* dotted scenario key: "parallel.tensor_model_parallel_size" */
  const char *arg; /* "--tensor-model-parallel-size" */
  PnMegatronForm form;
} PnMegatronArg;

extern const PnMegatronArg pn_megatron_args[];
extern const size_t pn_megatron_n_args;

/* The row of `key`, or NULL when Megatron-LM has no argument for it. */
const PnMegatronArg *pn_megatron_arg(const char *key);

/* `key` set to `v` as Megatron-LM arguments, appended to `out` with a leading space when it
 * writes anything: " --tensor-model-parallel-size 4", " --sequence-parallel", " NAME=VALUE" for
 * an environment variable, nothing for a flag in its default state or a derived key. */
void pn_megatron_append(GString *out, const char *key, const PnScenarioValue *v);

#endif
