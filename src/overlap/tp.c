/* tp.c — tensor parallelism: Megatron-Bridge's TP-overlap cascade and Transformer Engine's
 * userbuffers configurations (TE's defaults and Bridge's named presets, one table row per
 * preset; see gating.h). */
#include <string.h>

#include "overlap/overlap-private.h"

const char *pn_ub_method_name(PnUbMethod m)
{
  static const char *const names[] = {"none", "bulk", "pipeline", "ring_exchange"};
  return (unsigned)m < G_N_ELEMENTS(names) ? names[m] : "?";
}

/* Shorthands of the reference's table: B(n,c,m), P(n,c,s,m), R, R(1,m=T). */
#define B(n, c, m)                                                                                                     \
  {                                                                                                                    \
    PN_UB_BULK, n, c, 0, m, false, false, false                                                                        \
  }
/* Bridge's PipelineOverlapCfg defaults fp8_buf to the tuple (False,), which is truthy: TE then
 * keeps the pipelined reduce-scatter buffer in FP8 whenever the run is FP8 (reference §2.5). */
#define P(n, c, s, m)                                                                                                  \
  {                                                                                                                    \
    PN_UB_PIPELINE, n, c, s, m, false, false, true                                                                     \
  }
#define R                                                                                                              \
  {                                                                                                                    \
    PN_UB_RING_EXCHANGE, 1, 1, 0, false, false, false, false                                                           \
  }
#define RM                                                                                                             \
  {                                                                                                                    \
    PN_UB_RING_EXCHANGE, 1, 1, 0, true, false, false, false                                                            \
  }
#define OFF                                                                                                            \
  {                                                                                                                    \
    PN_UB_NONE, 0, 0, 0, false, false, false, false                                                                    \
  }

typedef struct {
  const char *name;
  PnUbCfg bulk[4]; /* qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad */
  PnUbCfg proj_fprop, fc2_fprop;
} PnUbPreset;

static const PnUbPreset presets[] = {
    {"userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",
     {B(4, 2, false), B(24, 2, false), B(2, 2, false), B(4, 2, false)},
     P(24, 2, 4, true),
     P(16, 2, 4, true)},
    {"userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192",
     {B(4, 2, false), B(24, 2, false), B(2, 2, false), B(4, 2, false)},
     RM,
     RM},
    {"userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192",
     {B(2, 2, false), B(24, 2, false), B(2, 2, false), B(2, 2, false)},
     P(24, 2, 4, true),
     P(8, 2, 4, true)},
    {"userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192",
     {B(2, 2, false), B(24, 2, false), B(2, 2, false), B(2, 2, false)},
     RM,
     RM},
    {"userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048",
     {B(8, 2, false), B(16, 2, false), B(4, 2, false), B(16, 2, false)},
     P(16, 2, 4, true),
     P(24, 2, 4, true)},
    {"userbuffers_fp8_h100_h6144_tp2_mbs2_seqlen2048",
     {B(8, 2, false), B(16, 2, false), B(4, 2, false), B(16, 2, false)},
     P(16, 2, 4, true),
     P(24, 2, 4, true)},
    {"userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048",
     {B(4, 2, false), B(4, 2, false), B(2, 2, false), B(4, 2, false)},
     P(24, 2, 4, true),
     RM},
    {"userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048",
     {B(4, 2, false), B(4, 2, false), B(2, 2, false), B(4, 2, false)},
     RM,
     RM},
};

/* TE's get_default_config for all slots (used when tp_comm_overlap is on without a preset). */
static void ub_defaults(PnUbCfg cfg[PN_UB_N])
{
  /* TE initialize_ub get_default_config: ring_exchange (num_sm 1, cga 1, no margin, tp steps)
   * for the AG slots; pipeline (num_sm 16, cga 2, 4 splits, margin) for the RS fprop slots;
   * bulk (num_sm 16, cga 2, margin) for the dgrad/wgrad bulk slots; proj/fc2 wgrad are
   * "external" (no comm of their own). */
  static const PnUbCfg ring = R, pipe = P(16, 2, 4, true), bulk = B(16, 2, true), off = OFF;
  /* TE's get_default_config: fp8_buf on for the all-gather slots (their AG already moves FP8 in
   * workload/ops.c) and off for the reduce-scatter slots, unless a preset opts in */
  for (int i = 0; i < PN_UB_N; i++)
    cfg[i] = off;
  cfg[PN_UB_QKV_FPROP] = cfg[PN_UB_FC1_FPROP] = cfg[PN_UB_PROJ_DGRAD] = cfg[PN_UB_FC2_DGRAD] = ring;
  cfg[PN_UB_PROJ_FPROP] = cfg[PN_UB_FC2_FPROP] = pipe;
  cfg[PN_UB_PROJ_FPROP].fp8_buf = cfg[PN_UB_FC2_FPROP].fp8_buf = false;
  cfg[PN_UB_QKV_DGRAD] = cfg[PN_UB_QKV_WGRAD] = cfg[PN_UB_FC1_DGRAD] = cfg[PN_UB_FC1_WGRAD] = bulk;
}

bool pn_ub_preset(const char *name, PnUbCfg cfg[PN_UB_N])
{
  for (size_t i = 0; i < G_N_ELEMENTS(presets); i++) {
    const PnUbPreset *p = &presets[i];
    if (strcmp(name, p->name) != 0)
      continue;
    ub_defaults(cfg); /* ring_exchange AG slots are the same in every preset */
    cfg[PN_UB_QKV_DGRAD]  = p->bulk[0];
    cfg[PN_UB_QKV_WGRAD]  = p->bulk[1];
    cfg[PN_UB_FC1_DGRAD]  = p->bulk[2];
    cfg[PN_UB_FC1_WGRAD]  = p->bulk[3];
    cfg[PN_UB_PROJ_FPROP] = p->proj_fprop;
    cfg[PN_UB_FC2_FPROP]  = p->fc2_fprop;
    return true;
  }
  return false;
}

void pn_ub_preset_names(GString *out)
{
  for (size_t i = 0; i < G_N_ELEMENTS(presets); i++)
    g_string_append_printf(out, "%s%s", i ? ", " : "", presets[i].name);
}

const char *pn_ub_preset_name(size_t i) { return i < G_N_ELEMENTS(presets) ? presets[i].name : NULL; }

/* TP: _get_model_comm_overlap_cfgs, checked in this order. */
gboolean pn__overlap_gate_tp(const PnScenario *sc, PnPlan *plan, GPtrArray *warnings, GError **error)
{
  const PnParallelConfig *par   = &sc->parallel;
  const PnCommOverlapConfig *co = &sc->comm_overlap;
  bool tp_overlap               = co->tp_comm_overlap == PN_TRI_TRUE;
  if (tp_overlap && par->tensor_model_parallel_size < 2) {
    pn__overlap_warn(warnings, "Disabling tensor parallel communication overlap due to TP size < 2.");
    tp_overlap = false;
  } else if (tp_overlap && !par->sequence_parallel) {
    pn__overlap_warn(warnings, "Disabling tensor parallel communication overlap due to sequence_parallel=False.");
    tp_overlap = false;
  } else if (tp_overlap && !co->transformer_engine) {
    pn__overlap_warn(warnings, "Disabling tensor parallel communication overlap due to TE not detected.");
    tp_overlap = false;
  } else if (tp_overlap && sc->training.transformer_impl == PN_TRANSFORMER_IMPL_LOCAL) {
    /* Megatron-LM initializes TE's userbuffers (initialize.py _initialize_tp_communicators), but
     * the local ColumnParallelLinear / RowParallelLinear issue plain NCCL collectives */
    pn__overlap_warn(warnings,
                     "%s: /comm_overlap/tp_comm_overlap: no effect with /training/transformer_impl "
                     "\"local\" (userbuffers overlap only Transformer Engine's linear layers): off",
                     sc->path);
    tp_overlap = false;
  }
  plan->tp_comm_overlap = tp_overlap;
  if (!tp_overlap)
    return TRUE;
  if (sc->model.multi_latent_attention)
    pn__overlap_warn(warnings,
                     "%s: /comm_overlap/tp_comm_overlap: multi-latent attention's up projections run Transformer "
                     "Engine's asynchronous collectives here, not userbuffers (their slots are not simulated); "
                     "linear_proj and the MLPs use the userbuffers",
                     sc->path);
  const char *preset = co->tp_comm_overlap_cfg;
  if (preset[0] == '\0') {
    pn__overlap_warn(warnings, "Tensor parallel overlap: No overlap config provided. Initializing TP comm overlap with "
                               "the default config.");
    ub_defaults(plan->ub);
  } else if (!pn_ub_preset(preset, plan->ub)) {
    g_autoptr(GString) names = g_string_new(NULL);
    pn_ub_preset_names(names);
    g_set_error(error, PN_OVERLAP_ERROR, PN_OVERLAP_ERROR_INVALID,
                "%s: /comm_overlap/tp_comm_overlap_cfg: unknown userbuffers preset \"%s\" (known: %s)", sc->path,
                preset, names->str);
    return FALSE;
  }
  return TRUE;
}
