#!/usr/bin/env bash
# The GEMM tables timed as a training step runs them: the GPU kept busy, under its power cap.
#
#   microbench/gemm_sustained.sh [OUT_DIR]      (default: $OUT, else ./mb-sustained)
#
# mb_gemm's table times each shape for ~8 ms between idle gaps, so a shape of a few hundred
# microseconds runs at the boost clock while a training step, which keeps the GPU busy, runs
# at the power-capped one (an 8192^3 fp8 GEMM: 1549 TFLOP/s in a burst, 1306 sustained). Here
# the GPU is first heated for 5 s with an 8192^3 GEMM, then each shape runs back to back for
# 15 ms before 15 ms of timed runs (mb_gemm --heat-s --warm-ms), with nvidia-smi logging the SM
# clock, power and throttle reasons every 200 ms. Writes gemm.json (the model and grid shapes),
# gemm_moe.json (the MoE expert and router shapes), clocks.csv and run_log.txt.
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT_DIR=${1:-${OUT:-$PWD/mb-sustained}}
BUILD=${MB_BUILD_DIR:-$HERE/../build-mb}
mkdir -p "$OUT_DIR" "$BUILD"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
LOG=$OUT_DIR/run_log.txt
{
  echo "# gemm_sustained, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
} >"$LOG" 2>&1
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$HERE" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a >>"$LOG" 2>&1 &&
  cmake --build "$BUILD" -j "$(nproc)" --target mb_gemm >>"$LOG" 2>&1 || { echo "build failed" | tee -a "$LOG"; exit 1; }
python3 "$HERE/gen_shapes.py" >"$BUILD/shapes_models.txt"
python3 "$HERE/gen_shapes.py" --grid >"$BUILD/shapes_grid.txt"
python3 "$HERE/gen_shapes.py" --moe >"$BUILD/shapes_moe.txt"
nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 200 >"$OUT_DIR/clocks.csv" 2>/dev/null &
smi=$!
sustained=(--heat-s 5 --warm-ms 15 --target-ms 15 --max-reps 100000)
timeout -k 10 "${MB_GEMM_LIMIT_S:-420}" "$BUILD/mb_gemm" --shapes "$BUILD/shapes_models.txt" --grid "$BUILD/shapes_grid.txt" \
  "${sustained[@]}" --budget-s "${MB_GEMM_BUDGET_S:-380}" --out "$OUT_DIR/gemm.json" >>"$LOG" 2>&1
echo "gemm rc=$?" | tee -a "$LOG"
timeout -k 10 120 "$BUILD/mb_gemm" --moe "$BUILD/shapes_moe.txt" "${sustained[@]}" --budget-s 90 \
  --out "$OUT_DIR/gemm_moe.json" >>"$LOG" 2>&1
echo "gemm_moe rc=$?" | tee -a "$LOG"
kill "$smi" 2>/dev/null
