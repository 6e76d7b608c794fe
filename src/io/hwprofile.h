/* hwprofile.h — hardware profile files (hwprofiles/<name>.json) into PnHwProfile (hw/profile.h).
 *
 * Format (schema_version 1): top-level "schema_version", "name", "gpu" (strings, at most 63
 * bytes), optional "description", optional "calibrated": "YYYY-MM-DD" (the day the calibration
 * data was measured, a calendar day from 2000-01-01 to 2099-12-31; `penumbra calibrate` writes
 * it), and the sections "compute", "network", "nccl" (required), "host", "hbm_share" and "calibration" (optional).
 * Every scalar of compute / network / nccl is required and is written
 *   {"value": <number>, "source": "<where the number comes from>"}
 * (optional "unit" and "note" strings are allowed): a number without a non-empty source is an
 * error, because datasheet placeholders must stay distinguishable from measurements. Integer
 * fields (sm_count, gemm_tile_m/n, gpus_per_node, nics_per_node, ctas_nvlink, ctas_net,
 * p2p_ctas) must be integers; every value must be finite and positive (latencies and launch cost
 * may be 0; efficiencies are at most 1); rates (bytes or FLOPs per ns) and efficiencies are at
 * least 1e-3, so that no size a scenario accepts gives an infinite duration.
 *
 * compute may hold "kernel_floor_ns": {"gemm", "attention", "memory"}, each an optional sourced
 * scalar in [0, 1e9] (profile.h, PnFloorClass). The "host" section (profile.h, PnHostProfile)
 * holds optional sourced scalars kernel_ns, kernel_bwd_ns, module_ns, collective_ns, p2p_ns,
 * sync_ns, graph_launch_ns, graph_layer_fwd_ns, graph_layer_bwd_ns (ns in [0, 1e9]) and
 * python_loop_ns (ns in [0, 1e6]), and "cpu": {"value": "<CPU name, at most 127 bytes>",
 * "source": "..."}. What is absent is 0: a profile without them has no host model and no floors.
 * The "hbm_share" section (profile.h, PnHbmShare), when present with the calibration curve
 * hbm_pressure, turns HBM sharing on (hw/hbm.h): it holds gemm_bf16_bytes_per_flop,
 * gemm_fp8_bytes_per_flop, gemm_bf16_pressure_per_sm, gemm_fp8_pressure_per_sm and
 * nccl_bytes_per_busbw_byte (optional
 * sourced scalars in [0, 1e3]; an absent one is 0; `penumbra calibrate` writes them).
 *
 * calibration entries, each optional:
 *   curves gemm_sm_scaling, mem_sm_scaling, hbm_pressure, coll_size_efficiency:
 *     {"x": [...], "y": [...], "log_x": bool, "source": "..."} — same length, x strictly
 *     ascending, finite, y >= 1e-6, x > 0 when log_x (default: true for coll_size_efficiency only);
 *   tables gemm_bf16, gemm_fp8 (columns m, n, k, ns) and attn_bf16 (columns batch, seq, heads,
 *     kv_heads, head_dim, fwd_ns, bwd_ns): {"columns": [...], "rows": [[...], ...], "source": "..."}
 *     — columns in any order but exactly those names; every row has one value per column, sizes
 *     positive integers, durations positive and finite; bmm_bf16 (columns batch, m, n, k, ns:
 *     strided-batched GEMMs) the same;
 *   torch_kernel_vs_copy: {"<op>": curve, ...}, op one of masked_fill, masked_fill_bwd,
 *     softmax_fwd, softmax_bwd, dropout_fwd, dropout_bwd, repeat_interleave, context_copy,
 *     rope_unfused_fwd, rope_unfused_bwd (profile.h, PnTorchKernel), each optional, a curve as
 *     above over the sequence length (log_x by default).
 * Empty curves and tables are allowed and mean "not calibrated" (n == 0).
 */
#ifndef PN_IO_HWPROFILE_H
#define PN_IO_HWPROFILE_H

#include <glib.h>

#include "hw/profile.h"
#include "io/file.h"

/* Loads and validates the profile at `path`. Returns a new profile (free with
 * pn_hw_profile_free; tables are allocated with g_new) or NULL with `error` set
 * (PN_IO_ERROR; messages name `path` and the JSON pointer). */
PnHwProfile *pn_hw_profile_load(const char *path, GError **error);

/* True when `date` is what a profile's "calibrated" date may be: a calendar day written
 * YYYY-MM-DD, from 2000-01-01 to 2099-12-31. */
gboolean pn_hw_profile_date_ok(const char *date);

#endif
