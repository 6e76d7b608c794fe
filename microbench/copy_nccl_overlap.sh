#!/usr/bin/env bash
# Build mb_copy_nccl_overlap and run it on GPUs 0..1 (kind copy_nccl_overlap).
#
#   microbench/copy_nccl_overlap.sh [OUT_DIR] [extra mb_copy_nccl_overlap args...]
#
# OUT_DIR defaults to $OUT if set, else ./mb-results. Writes copy_nccl_overlap.json,
# run_log_copy_nccl_overlap.txt (machine, nvidia-smi, topology, the program's progress lines, the
# NCCL init lines giving version, channel counts, CTA settings and the P2P transport),
# log_copy_nccl_overlap.txt (the program's stderr) and nccl_debug.txt (NCCL_DEBUG=INFO, INIT and
# ENV subsystems, written through NCCL_DEBUG_FILE so that it does not interleave with the
# program's lines).
# MB_SMOKE=1: a short check (default CTAs and 4, all_gather 128 MiB, 1 rep). MB_LIMIT_S: hard
# limit of the program (default 230 s; its --budget-s is 75% of it unless given).
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT_DIR=${1:-${OUT:-$PWD/mb-results}}
(($# > 0)) && shift
BUILD=${MB_BUILD_DIR:-$HERE/../build-mb}
LIMIT=${MB_LIMIT_S:-230}
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/run_log_copy_nccl_overlap.txt
FULL=$OUT_DIR/log_copy_nccl_overlap.txt
NLOG=$OUT_DIR/nccl_debug.txt

# NVLink multicast stays off (the device README): NCCL, PyTorch, NVSHMEM.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

{
  echo "# copy_nccl_overlap run, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  uname -a
  nvidia-smi || echo "nvidia-smi failed"
  nvidia-smi topo -m 2>&1 || true
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv 2>&1 || true
  command -v nvcc && nvcc --version | tail -2
  env | grep -E '^(NCCL|CUDA|TORCH|NVSHMEM)_' | sort
} >"$LOG" 2>&1

t0=$(date +%s)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if ! { cmake -S "$HERE" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a &&
  cmake --build "$BUILD" -j "$(nproc)" --target mb_copy_nccl_overlap; } >"$OUT_DIR/log_build.txt" 2>&1; then
  echo "=== build FAILED" | tee -a "$LOG"
  cat "$OUT_DIR/log_build.txt" | tee -a "$LOG"
  exit 1
fi
grep -E 'microbench: NCCL' "$OUT_DIR/log_build.txt" >>"$LOG"
echo "=== build ok after $(($(date +%s) - t0))s" | tee -a "$LOG"
rm -f "$OUT_DIR/log_build.txt"

args=()
[[ "${MB_SMOKE:-0}" == 1 ]] && args=(--ctas 0,4 --colls all_gather --sizes-mib 128 --reps 1)
budget=()
[[ " $* " == *" --budget-s "* ]] || budget=(--budget-s $((LIMIT * 3 / 4)))
cmd=("$BUILD/mb_copy_nccl_overlap" --out "$OUT_DIR/copy_nccl_overlap.json" "${args[@]}" "${budget[@]}" "$@")
echo "=== NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE=$NLOG timeout -k 10 $LIMIT ${cmd[*]}" |
  tee -a "$LOG"
t0=$(date +%s)
rm -f "$NLOG"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE=$NLOG timeout -k 10 "$LIMIT" "${cmd[@]}" >"$FULL" 2>&1
rc=$?
echo "=== rc=$rc after $(($(date +%s) - t0))s" | tee -a "$LOG"
{
  echo "--- program output (NCCL lines left out)"
  grep -v 'NCCL INFO' "$FULL"
  echo "--- NCCL init lines: version, CTA settings, channel counts, P2P transport (first 4), init complete"
  cat "$NLOG" "$FULL" 2>/dev/null |
    grep -E 'NCCL INFO (NCCL version|cudaDriverVersion|NCCL_|Comm config|.*coll channels|.*Init COMPLETE)'
  cat "$NLOG" "$FULL" 2>/dev/null | grep -E 'NCCL INFO Channel .* via ' | head -4
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv 2>&1 || true
} >>"$LOG"
grep -v 'NCCL INFO' "$FULL" | tail -40
exit $rc
