/* split.h — Megatron-Core's pipeline split: how many decoder layers each virtual pipeline stage
 * builds. One copy of the arithmetic serves the rules (rules.c), the task-graph builder
 * (sched/build.c), the memory estimate (memory.c), the sweep's and the plan's pipeline sizes.
 *
 * Megatron-Core splits a model in one of three ways (megatron/core/transformer/transformer_block.py
 * get_num_layers_to_build, transformer_layer.py get_transformer_layer_offset, checked by
 * transformer_config.py TransformerConfig.__post_init__):
 *   even    num_layers, plus one slot for the embedding and one for the loss with
 *           account_for_{embedding,loss}_in_pipeline_split, over pp * vpp virtual stages; the
 *           accounted embedding and loss take a layer's place in the first and the last virtual
 *           stage (which may then build none);
 *   uneven  num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage: that many
 *           layers on the first / last pipeline stage, the other stages share the rest evenly; each
 *           stage's layers are split evenly over its vpp chunks. Not with account_for_*;
 *   layout  pipeline_model_parallel_layout (pipeline_parallel_layer_layout.py): every virtual
 *           stage's layers written out, pp * vpp of them in Megatron's order, vpp derived from
 *           their number (megatron/training/arguments.py). Not with the keys of the other two.
 * Virtual stage vs = chunk * pp + rank (chunk c of pipeline rank r); a virtual stage's decoder
 * layers follow the previous virtual stage's (the offsets of transformer_layer.py), so the first
 * layer of vs is the sum of the layers of the ones before it. The embedding is built on virtual
 * stage 0 and the output layer and loss on the last, whatever the split.
 *
 * Layouts. Megatron's string ("Et*3|(tt|)*29,m|L": E embedding, t decoder layer, m multi-token
 * prediction layer, L loss, '|' between virtual stages, x*N and (...)*N repetition, ',' cosmetic)
 * is read as PipelineParallelLayerLayout.parse_str_to_list reads it and kept in its normal form:
 * the letters of each virtual stage, stages joined by '|' ("Ettt|tt|tt|...|m|L"); the normal form
 * reads back as itself. A stage may be empty ("E|tt||tL": the third builds nothing and passes its
 * input on). The layout's checks are validate_layer_layout's; its 'm' must number
 * model.mtp_num_layers, as Megatron checks, and sit beside the 'L' (penumbra prices MTP with the
 * loss: layout_mtp in split.c is the one place that says so).
 *
 * Errors are PnRuleViolation (rules.h): the JSON pointer of the key to blame and Megatron's check
 * in words. Cost: linear in the layout's length; the split O(pp * vpp), its check alone O(1) but
 * for a layout.
 */
#ifndef PN_WORKLOAD_SPLIT_H
#define PN_WORKLOAD_SPLIT_H

#include <glib.h>

#include "workload/config.h"
#include "workload/rules.h"

/* Megatron's layout string `layout` into its normal form in `out` (`out_size` bytes, NUL-terminated).
 * Returns PN_RULE_OK, or PN_RULE_PP_LAYOUT with `v` (may be NULL) filled, blaming
 * /parallel/pipeline_model_parallel_layout: a character that names no layer, no layer at all,
 * a normal form longer than out_size - 1 bytes. */
PnRule pn_workload_layout_expand(const char *layout, char *out, gsize out_size, PnRuleViolation *v);

/* A layout in normal form written back short in Megatron's syntax (g_free): runs of three or more
 * of a layer as "t*N", runs of a virtual stage as "(S|)*N," ("Et|(tt|)*30,mL"); expanding it
 * gives the normal form back. */
char *pn_workload_layout_compact(const char *layout);

/* The virtual stages a layout in normal form describes; 0 for "" (no layout). */
int64_t pn_workload_layout_stages(const char *layout);

/* Megatron-Core's split of `sc`'s decoder layers at pipeline size `pp` (>= 1) and virtual size
 * `vpp` (<= 1: not interleaved; with a layout, <= 1 is Megatron's None: the layout's own count of
 * virtual stages over pp), by the keys of sc->parallel and sc->model.num_layers (and mtp_num_layers
 * for a layout's 'm'). Fills `layers` (may be NULL: a check only; else resized) with the decoder
 * layers of each virtual stage, by vs = chunk * pp + rank. Returns PN_RULE_OK, or the rule broken
 * (PN_RULE_PP_SPLIT_ARGS, PN_RULE_PP_LAYERS, PN_RULE_VPP_LAYERS, PN_RULE_PP_UNEVEN,
 * PN_RULE_PP_LAYOUT) with `v` (may be NULL) filled. Does not check that vpp > 1 needs pp > 1
 * (rules.c does). */
PnRule pn_workload_stage_layers(const PnScenario *sc, int64_t pp, int64_t vpp, GArray *layers, PnRuleViolation *v);

/* Whether the split of `sc` works at pipeline size `pp` and virtual size `vpp` (as above). */
gboolean pn_workload_split_ok(const PnScenario *sc, int64_t pp, int64_t vpp);

/* ---- choosing a split ----------------------------------------------------------------------
 *
 * A scenario that states no split of its own is split evenly; at a pipeline size whose virtual
 * stages do not divide num_layers, a Megatron user states one (Megatron-Bridge's Llama 3.1 405B
 * recipe: 126 layers with account_for_embedding/loss_in_pipeline_split, 128 = 8 x 16; its
 * DeepSeek-V3 recipe: 61 layers with a lighter last stage). pn_workload_split_choose makes that
 * choice, for the sweep's candidates and anything else that moves the pipeline size. */

/* The keys of Megatron-Core's splits: what pn_workload_split_choose picks. */
typedef struct {
  bool account_for_embedding_in_pipeline_split;
  bool account_for_loss_in_pipeline_split;
  int64_t num_layers_in_first_pipeline_stage; /* 0: unset (Megatron's None) */
  int64_t num_layers_in_last_pipeline_stage;
  char pipeline_model_parallel_layout[PN_LAYOUT_MAX]; /* normal form; "": none */
} PnSplitKeys;

/* Whether `par` states a split of its own: a layout, the layers of the first or last stage, or an
 * account_for_*_in_pipeline_split true. */
gboolean pn_workload_split_stated(const PnParallelConfig *par);

/* The split of `sc` at pipeline size `pp` (>= 1) and virtual size `vpp` (<= 1: not interleaved)
 * into `keys` (may be NULL: a check only). When sc->parallel states a split, that one (its keys;
 * a layout stays in `sc`). Otherwise the first of these that Megatron-Core accepts
 * (pn_workload_stage_layers holds each to its checks):
 *   1. even: num_layers over pp * vpp virtual stages (no key set);
 *   2. account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split: num_layers
 *      + 2 over pp * vpp (pp > 1);
 *   3. uneven (pp > 1): every middle stage holds m layers, the least multiple of vpp with
 *      pp * m >= num_layers; the first and last stages hold the rest, S = num_layers - (pp - 2) m,
 *      each a multiple of vpp and at most m (they also hold the embedding and the loss), so the
 *      largest stage is as small as it can be; the first takes as many of S as it can (m, or
 *      S - vpp) and the last the others: the last stage also holds the output layer, the loss and
 *      any MTP layers. A stage that holds m stays unset (Megatron treats it as a middle one).
 *      61 layers: pp 4 -> last 13, pp 8 -> last 5, pp 16 -> last 1, Megatron-Bridge's DeepSeek-V3
 *      layouts for (4, 1), (8, 1) and (16, 1) (recipes/deepseek/deepseek_v3.py layout_map);
 *   4. a layout (pp > 1), where the keys cannot say it: rule 3 over the S = pp * vpp virtual
 *      stages, each middle one n = ceil(num_layers / S) layers, the first as many of the rest as
 *      n allows after the embedding, the last the others (possibly none) before the MTP layers and
 *      the loss. 61 layers at (8, 4): "Et|(tt|)*30,mL", the layout of Megatron-Bridge's H100
 *      DeepSeek-V3 script; at (8, 2) and (4, 4) its layout_map's "Etttt|(tttt|)*14,tmL".
 * Returns FALSE when Megatron-Core accepts none (a stated split that fails, or none of the four);
 * `keys` then holds no split. Cost: O(1), pn_workload_split_ok's checks three times at most, then
 * the layout's, linear in its length. */
gboolean pn_workload_split_choose(const PnScenario *sc, int64_t pp, int64_t vpp, PnSplitKeys *keys);

/* The split keys `par` states, its layout among them. */
PnSplitKeys pn_workload_split_keys_of(const PnParallelConfig *par);

/* `keys` in words, each after a space, appended to `s`; nothing for the even split. Short, as the
 * sweep's table and the plan's report say a split: " first_stage=15", " last_stage=5",
 * " account_for=embedding,loss", " layout=Et|(tt|)*30,mL" (the layout written short); with
 * `as_keys`, as scenario keys: " num_layers_in_last_pipeline_stage=5",
 * " account_for_embedding_in_pipeline_split=true", " pipeline_model_parallel_layout=\"Et|...\"". */
void pn_workload_split_describe(GString *s, const PnSplitKeys *keys, bool as_keys);

/* `keys` into the split keys of `par`, the layout among them. */
void pn_workload_split_keys_set(PnParallelConfig *par, const PnSplitKeys *keys);

#endif
