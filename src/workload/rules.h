/* rules.h — which layouts Megatron-Core accepts: the divisibility and argument rules of its
 * `validate_args` and of Megatron-Bridge's configuration checks that a parallel layout, batch
 * or sequence can break, one rule per check, in the order they are checked.
 *
 * One copy of the rules serves three callers: the scenario loader (io/scenario.c, which turns a
 * violation into an error at the rule's JSON path), the memory estimate's "what would make it
 * fit" search (workload/memory.c) and the sweep (which counts rejected layouts by rule).
 *
 * pn_workload_check derives, as Megatron does: data_parallel_size = gpus / (tp*pp*cp),
 * virtual_pipeline_model_parallel_size = the layout's virtual stages / pp when a
 * pipeline_model_parallel_layout is set (arguments.py; a vpp > 1 given must be that),
 * num_microbatches = global_batch / (micro_batch * dp), expert_tensor_parallel_size = tp when
 * unset (0), and sequence_parallel off when tp is 1 (noted in `notes`, a warning for users).
 * The pipeline split itself is split.h's.
 * Afterwards the invariants of config.h hold. Cost: O(1).
 */
#ifndef PN_WORKLOAD_RULES_H
#define PN_WORKLOAD_RULES_H

#include "workload/config.h"

typedef enum {
  PN_RULE_OK = 0,
  PN_RULE_TP_HEADS,             /* tp divides num_attention_heads */
  PN_RULE_TP_QUERY_GROUPS,      /* tp divides num_query_groups */
  PN_RULE_WORLD,                /* tp * pp * cp divides num_gpus */
  PN_RULE_VPP_NEEDS_PP,         /* interleaving needs pp > 1 */
  PN_RULE_PP_SPLIT_ARGS,        /* at most one way to split: uneven, layout, or account_for_* (split.h) */
  PN_RULE_PP_LAYERS,            /* pp divides the layers (+ account_for_*_in_pipeline_split) */
  PN_RULE_VPP_LAYERS,           /* vpp divides the layers of a stage */
  PN_RULE_PP_UNEVEN,            /* num_layers_in_first/last_pipeline_stage leave an even rest (split.h) */
  PN_RULE_PP_LAYOUT,            /* pipeline_model_parallel_layout fits pp and the model (split.h) */
  PN_RULE_VPP_PP2_P2P,          /* interleaving at pp 2 needs overlap_p2p_comm */
  PN_RULE_BATCH,                /* micro_batch * dp divides global_batch */
  PN_RULE_VPP_GROUP,            /* pp <= microbatch_group_size_per_vp_stage <= num_microbatches */
  PN_RULE_VPP_MICROBATCHES,     /* interleaving: num_microbatches a multiple of pp (default group) */
  PN_RULE_VPP_GROUP_REMAINDER,  /* num_microbatches mod group is 0 or >= pp (explicit group) */
  PN_RULE_CP_SEQUENCE,          /* 2 * cp divides seq_length */
  PN_RULE_SP_SEQUENCE,          /* tp divides seq_length / cp with sequence parallelism */
  PN_RULE_CP_A2A_HEADS,         /* cp divides the heads of a TP rank (cp_comm_type a2a) */
  PN_RULE_MAX_POSITIONS,        /* seq_length <= max_position_embeddings (learned positions) */
  PN_RULE_EXPERTS_NEED_MOE,     /* ep > 1 or etp != tp needs a MoE model */
  PN_RULE_EP_EXPERTS,           /* ep divides num_moe_experts */
  PN_RULE_EP_RANKS,             /* etp * ep divides tp * cp * dp */
  PN_RULE_ETP_FFN,              /* etp divides moe_ffn_hidden_size */
  PN_RULE_EP_NEEDS_SP,          /* tp > 1 with ep > 1 needs sequence parallelism */
  PN_RULE_DISTOPT_INSTANCES,    /* num_distributed_optimizer_instances divides dp */
  PN_RULE_FP8_PARAM_GATHER,     /* fp8_param_gather needs fp8 training */
  PN_RULE_RECOMPUTE_LAYERS,     /* recompute_num_layers <= the layers of a stage (full recompute) */
  PN_RULE_NCCL_CTAS,            /* NCCL_MIN_CTAS <= NCCL_MAX_CTAS */
  PN_RULE_FWD_LAYERNORM_MARGIN, /* NVTE_FWD_LAYERNORM_SM_MARGIN < the GPU's SMs */
  PN_RULE_BWD_LAYERNORM_MARGIN, /* NVTE_BWD_LAYERNORM_SM_MARGIN < the GPU's SMs */
  PN_RULE_N
} PnRule;

/* What pn_workload_check derived that a user should hear about (bits). */
enum { PN_RULE_NOTE_SP_DISABLED = 1u << 0 };

typedef struct {
  PnRule rule;
  const char *path;  /* JSON pointer of the scenario key to blame, e.g. "/training/global_batch_size" */
  char message[400]; /* what was expected, with the values, e.g. "8 does not divide num_attention_heads 12" */
} PnRuleViolation;

/* Fills `v` (when non-NULL) with `rule`, `path` and the formatted message, and returns `rule`: how
 * the workload layer's checks (rules.c, split.c) report a broken rule. */
PnRule pn__rule_broken(PnRuleViolation *v, PnRule rule, const char *path, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* Checks `sc` rule by rule (the SM-margin rules only when sc->hw is loaded), in the order above, deriving the fields
 * the header names as it goes. Returns PN_RULE_OK, or the first rule broken with `v` filled
 * (when non-NULL). `notes` (may be NULL) receives PN_RULE_NOTE_* bits. */
PnRule pn_workload_check(PnScenario *sc, PnRuleViolation *v, unsigned *notes);

/* A short stable phrase naming the rule, for counts of rejected layouts ("tensor_model_parallel_size
 * does not divide num_attention_heads"). */
const char *pn_rule_summary(PnRule r);

#endif
