/* calibio.h — reading microbenchmark result files and writing calibrated hardware profiles.
 *
 * Result files are the JSON that microbench/ writes (microbench/README.md): {schema_version 1,
 * kind, env, results[]}, kind one of gemm, gemm_contention, attention, memory, collective,
 * copy_engine, gemm_nccl_overlap (the last is read for the check, not fitted), launch (its
 * gpu_floor rows: microbench/mb_launch.cu), host_torch (microbench/mb_host.py), gemm_accum,
 * torch_mem (its dropout rows) and unfused_attn (microbench/mb_unfused_attn.py: its "bmm" and
 * "mem" rows; its "layer" rows are not read). Rows whose "status" is present and not "ok" are
 * skipped. Errors name the file and the JSON path.
 *
 * Writing: the base profile's JSON is kept as it is (every number with its source); the
 * figures a fit replaced get their new value and a source naming the result file, the GPU and
 * the date of the measurement (the host fit's: the file, GPU, day and host CPU, and, when the GPU
 * measured is another model than the profile's, that the profile takes that machine's figures);
 * a fitted "host" section is added before "calibration" and compute.kernel_floor_ns at the end
 * of "compute" when the base lacks them; the "calibration" section is rewritten, and
 * "calibrated" is set to p->calibrated (removed when that is empty). Written atomically, and
 * read back with the profile reader before it replaces out_path: a fit that would not load
 * (absurd measurements) fails with PN_IO_ERROR_INVALID and leaves out_path as it was.
 */
#ifndef PN_IO_CALIBIO_H
#define PN_IO_CALIBIO_H

#include <glib.h>

#include "calib/calib.h"

/* Appends the rows of one result file to `d`; `provenance` (may be NULL) gets one line naming
 * the file, its kind, GPU and date (none for launch, host_torch, gemm_accum, torch_mem and
 * unfused_attn files, whose figures name their file in their own sources). */
gboolean pn_calib_read_results(const char *path, PnCalData *d, GString *provenance, GError **error);

/* Writes `fitted` profile `p` to `out_path`, starting from the JSON of `base_path`. */
gboolean pn_calib_write_profile(const char *base_path, const char *out_path, const PnHwProfile *p,
                                const PnCalFitted *fitted, const char *provenance, GError **error);

#endif
