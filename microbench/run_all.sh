#!/usr/bin/env bash
# Build and run every penumbra microbenchmark on this GPU machine.
#
#   microbench/run_all.sh [OUT_DIR]          (default: $OUT if set, else ./mb-results)
#
# Writes one JSON per kind (gemm, gemm_contention, attention, memory; with 2+ GPUs also
# collective, copy_engine, gemm_nccl_overlap) and run_log.txt into OUT_DIR: 8 files at most
# (the optional launch and host steps add two more: ask for them in a run of their own).
# With 2+ GPUs the single-GPU suite runs split over GPU 0 (gemm) and GPU 1 (contention,
# memory, attention) at the same time, then the multi-GPU steps run: collectives and
# gemm_nccl_overlap on groups of 2, 4, 8, ... GPUs (every power of two up to the GPU count,
# largest first, one group at a time; each row records its group size as nranks), the copy
# engine on GPUs 0 and 1.
# Three optional steps, not in the default list, run on GPU 0 alone after the single-GPU suite:
# launch (mb_launch: launch, graph and synchronization costs, the GPU floor per kernel), host
# (mb_host.py: PyTorch eager host time per op and per layer) and accum (mb_gemm_accum: the wgrad
# GEMMs accumulating into main_grad against the plain ones); they write launch.json,
# host_torch.json and gemm_accum.json. A fourth, sustain, times one 8192^3 GEMM in a burst and for
# 20 s back to back with the clocks logged (gemm_burst_*.json, gemm_sustained_*.json, clocks.csv).
# Knobs (environment): MB_TOTAL_S total wall budget in s (default 530); MB_STEPS comma list
# of steps to run (build,gemm,contention,attention,memory,collectives,copy,overlap, and the
# optional launch,host,accum,sustain; build compiles only the programs of the steps listed); MB_GROUPS group
# sizes of the collective sweep (e.g. 8,4,2; default all powers of two, largest first); MB_OVL_GROUPS the same for
# gemm_nccl_overlap (default MB_GROUPS); MB_COLL_CTAS / MB_OVL_CTAS CTA lists (default
# 0,1,2,4,8,16,32); MB_COLL_LIMIT_S / MB_OVL_LIMIT_S the hard time limits of those two steps
# (default 120 + 60 s and 50 + 50 s per group size; each program's soft budget is 80% of it);
# MB_GEMM_SETS comma list of the GEMM shape lists the gemm step times (models,grid,moe; default
# all three; e.g. MB_STEPS=build,gemm MB_GEMM_SETS=moe times only the MoE expert and router
# GEMMs); MB_BUILD_DIR (default build-mb beside microbench/); MB_QUICK=1 for a short smoke run.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT_DIR=${1:-${OUT:-$PWD/mb-results}}
BUILD=${MB_BUILD_DIR:-$HERE/../build-mb}
TOTAL=${MB_TOTAL_S:-530}
STEPS=${MB_STEPS:-build,gemm,contention,attention,memory,collectives,copy,overlap}
QUICK=${MB_QUICK:-0}
GEMM_SETS=${MB_GEMM_SETS:-models,grid,moe}
START=$(date +%s)

# NVLink multicast (NVLS) stays off in every process started from here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1

mkdir -p "$OUT_DIR" "$BUILD"
LOG=$OUT_DIR/run_log.txt
: >"$LOG"
log() { echo "$*" | tee -a "$LOG"; }
left() { echo $((TOTAL - ($(date +%s) - START))); }
want() { [[ ",$STEPS," == *",$1,"* ]]; }
want_set() { [[ ",$GEMM_SETS," == *",$1,"* ]]; }

# run_step NAME HARD_LIMIT_S CMD...: runs CMD under `timeout`, clamped to the time left;
# the step's own output goes to a per-step log merged into run_log.txt at the end.
# Programs get a soft budget (MB_SOFT) of 80% of the limit, so they end with a file written.
run_step() {
  local name=$1 lim=$2
  shift 2
  local l
  l=$(left)
  ((lim > l - 10)) && lim=$((l - 10))
  if ((lim < 15)); then
    log "SKIP $name: only ${l}s left"
    return 0
  fi
  MB_SOFT=$((lim * 8 / 10 - 5))
  local t0 rc
  t0=$(date +%s)
  echo "=== $name: limit ${lim}s soft ${MB_SOFT}s: $* --budget-s $MB_SOFT" >"$OUT_DIR/log_$name.txt"
  timeout -k 10 "$lim" "$@" --budget-s "$MB_SOFT" >>"$OUT_DIR/log_$name.txt" 2>&1
  rc=$?
  log "=== $name rc=$rc after $(($(date +%s) - t0))s (t=$(($(date +%s) - START))s)"
  return 0
}

{
  echo "# microbench run, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  uname -a
  nvidia-smi || echo "nvidia-smi failed"
  nvidia-smi topo -m 2>&1 || true
  nvidia-smi nvlink --status 2>&1 | head -40 || true
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv 2>&1 || true
  command -v nvcc && nvcc --version | tail -2
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "gpus", torch.cuda.device_count())' 2>&1
  grep -h -E '#define NCCL_(MAJOR|MINOR|PATCH) ' /usr/include/nccl.h 2>/dev/null | tr '\n' ' '; echo
  ls -l /usr/lib/x86_64-linux-gnu/libnccl* 2>/dev/null
  env | grep -E '^(NCCL|CUDA|TORCH|NVSHMEM)_' | sort
} >>"$LOG" 2>&1

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
log "GPUs: $NGPU; budget ${TOTAL}s; steps $STEPS; out $OUT_DIR"
if ((NGPU < 1)); then
  log "no GPU: nothing to run"
  exit 1
fi

if want build; then
  t0=$(date +%s)
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  # Only the programs of the steps asked for (the NCCL ones only where NCCL was found).
  targets=()
  want gemm && targets+=(mb_gemm)
  want contention && targets+=(mb_gemm_contention)
  want memory && targets+=(mb_memory)
  want launch && targets+=(mb_launch)
  want accum && targets+=(mb_gemm_accum)
  want sustain && targets+=(mb_gemm)
  want copy && targets+=(mb_copy_engine)
  nccl_targets=()
  want collectives && nccl_targets+=(mb_collectives)
  want overlap && nccl_targets+=(mb_gemm_nccl_overlap)
  if cmake -S "$HERE" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
      >"$OUT_DIR/log_build.txt" 2>&1; then
    if grep -q "NCCL not found" "$OUT_DIR/log_build.txt"; then
      ((${#nccl_targets[@]})) && log "NCCL not found: ${nccl_targets[*]} not built"
    else
      targets+=("${nccl_targets[@]}")
    fi
    cfg_ok=1
  else
    cfg_ok=0
  fi
  if ((cfg_ok)) && { ((${#targets[@]} == 0)) ||
    timeout 300 cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" >>"$OUT_DIR/log_build.txt" 2>&1; }; then
    log "=== build ok after $(($(date +%s) - t0))s"
  else
    log "=== build FAILED"
    cat "$OUT_DIR/log_build.txt" >>"$LOG"
    rm -f "$OUT_DIR/log_build.txt"
    exit 1
  fi
fi

# Model shapes: regenerate when python3 is there, else the committed copy.
SHAPES=$HERE/shapes_models.txt
GRID=$HERE/shapes_grid.txt
MOE=$HERE/shapes_moe.txt
if command -v python3 >/dev/null; then
  python3 "$HERE/gen_shapes.py" >"$BUILD/shapes_models.txt" && SHAPES=$BUILD/shapes_models.txt
  python3 "$HERE/gen_shapes.py" --grid >"$BUILD/shapes_grid.txt" && GRID=$BUILD/shapes_grid.txt
  python3 "$HERE/gen_shapes.py" --moe >"$BUILD/shapes_moe.txt" && MOE=$BUILD/shapes_moe.txt
fi
if ((QUICK)); then
  { head -40 "$SHAPES"; echo "8192 8192 8192 TN fprop"; tail -3 "$SHAPES"; } >"$BUILD/shapes_quick.txt"
  SHAPES=$BUILD/shapes_quick.txt
  GEMM_ARGS=()
  want_set models && GEMM_ARGS=(--shapes "$SHAPES")
  ATT_ARGS=(--seqs 2048,8192 --heads 8,32 --head-dims 128)
  CONT_ARGS=(--sms 0,16,32 --shapes 8192x8192x8192)
  MEM_ARGS=(--sizes-mib 1,64,1024)
  COLL_ARGS=(--ctas 0,8 --max-bytes 67108864)
  OVL_ARGS=(--ctas 0,16 --sizes-mib 128)
else
  GEMM_ARGS=()
  want_set models && GEMM_ARGS+=(--shapes "$SHAPES")
  want_set grid && GEMM_ARGS+=(--grid "$GRID")
  want_set moe && GEMM_ARGS+=(--moe "$MOE")
  ATT_ARGS=()
  CONT_ARGS=()
  MEM_ARGS=()
  COLL_ARGS=(--ctas "${MB_COLL_CTAS:-0,1,2,4,8,16,32}")
  OVL_ARGS=(--ctas "${MB_OVL_CTAS:-0,1,2,4,8,16,32}")
fi

# Group sizes of the multi-GPU steps: every power of two from the GPU count down to 2, largest
# first (the 2-GPU figures exist already; on a short budget the big groups should come first).
# Each program splits its time budget over its groups (a group that ends early leaves its rest
# to the next), and within a group the CTA settings run in the order given (0 = NCCL default
# first, then 1, which calibrate's per-CTA bandwidth needs), so a truncated run loses the
# largest CTA counts of the last group first and says so in "note".
pow2_groups() {
  local p=2 g=""
  while ((p * 2 <= NGPU)); do p=$((p * 2)); done
  ((p != NGPU)) && g="$NGPU,"
  while ((p >= 2)); do
    g="$g$p,"
    p=$((p / 2))
  done
  echo "${g%,}"
}
if ((NGPU >= 2)); then
  GROUPS_COLL=${MB_GROUPS:-$(pow2_groups)}
  GROUPS_OVL=${MB_OVL_GROUPS:-$GROUPS_COLL}
  n_coll=$(echo "$GROUPS_COLL" | tr ',' '\n' | grep -c .)
  n_ovl=$(echo "$GROUPS_OVL" | tr ',' '\n' | grep -c .)
  # Hard limits: 2 GPUs took 17 s (collectives) and 18 s (overlap) on 2 x H200; a group of 8
  # is expected to take about twice as long (7/8 of the bytes cross the links instead of 1/2,
  # 8 communicators to set up per CTA setting).
  LIM_COLL=${MB_COLL_LIMIT_S:-$((120 + 60 * n_coll))}
  LIM_OVL=${MB_OVL_LIMIT_S:-$((50 + 50 * n_ovl))}
  log "group sizes: collectives $GROUPS_COLL (limit ${LIM_COLL}s), overlap $GROUPS_OVL (limit ${LIM_OVL}s)"
fi

gemm_step() {
  want gemm && run_step gemm 230 env CUDA_VISIBLE_DEVICES="$1" "$BUILD/mb_gemm" "${GEMM_ARGS[@]}" \
    --out "$OUT_DIR/gemm.json"
}
other_single_gpu_steps() {
  local dev=$1
  want contention && run_step contention 100 env CUDA_VISIBLE_DEVICES="$dev" "$BUILD/mb_gemm_contention" \
    "${CONT_ARGS[@]}" --out "$OUT_DIR/gemm_contention.json"
  want memory && run_step memory 60 env CUDA_VISIBLE_DEVICES="$dev" "$BUILD/mb_memory" "${MEM_ARGS[@]}" \
    --out "$OUT_DIR/memory.json"
  want attention && run_step attention 130 env CUDA_VISIBLE_DEVICES="$dev" python3 "$HERE/mb_attention.py" \
    "${ATT_ARGS[@]}" --out "$OUT_DIR/attention.json"
}

# The host-timing steps run with nothing else on the machine (a busy CPU would slow the host).
host_steps() {
  want launch && run_step launch 90 env CUDA_VISIBLE_DEVICES=0 "$BUILD/mb_launch" --out "$OUT_DIR/launch.json"
  want host && run_step host 150 env CUDA_VISIBLE_DEVICES=0 python3 "$HERE/mb_host.py" --out "$OUT_DIR/host_torch.json"
  want accum && run_step accum 280 env CUDA_VISIBLE_DEVICES=0 "$BUILD/mb_gemm_accum" \
    --shapes "$SHAPES" --budget-s 240 --out "$OUT_DIR/gemm_accum.json"
  want sustain && sustain_step
}

# Whether the GEMM table's ~8 ms per shape reads the clocks a training step runs at: one
# 8192^3 GEMM per dtype timed in an 8 ms burst after 5 s idle, then back to back for 20 s, with
# nvidia-smi sampling the SM clock, power and throttle reasons every 200 ms into clocks.csv.
sustain_step() {
  local shape=$OUT_DIR/.sustain_shape.txt
  echo "8192 8192 8192 TN fprop" >"$shape"
  nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader -lms 200 >"$OUT_DIR/clocks.csv" 2>/dev/null &
  local smi=$!
  for dt in bf16 fp8; do
    sleep 5
    run_step "sustain_burst_$dt" 30 env CUDA_VISIBLE_DEVICES=0 "$BUILD/mb_gemm" --shapes "$shape" --dtypes "$dt" \
      --target-ms 8 --out "$OUT_DIR/gemm_burst_$dt.json"
    run_step "sustain_$dt" 40 env CUDA_VISIBLE_DEVICES=0 "$BUILD/mb_gemm" --shapes "$shape" --dtypes "$dt" \
      --target-ms 20000 --min-reps 50 --max-reps 100000 --out "$OUT_DIR/gemm_sustained_$dt.json"
  done
  kill "$smi" 2>/dev/null
  rm -f "$shape"
}

if ((NGPU >= 2)); then
  # GPU 0: the GEMM table; GPU 1 meanwhile: contention, memory, attention.
  gemm_step 0 &
  p0=$!
  other_single_gpu_steps 1 &
  p1=$!
  wait "$p0" "$p1"
  host_steps
  want collectives && run_step collectives "$LIM_COLL" env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
    "$BUILD/mb_collectives" --group-sizes "$GROUPS_COLL" "${COLL_ARGS[@]}" --out "$OUT_DIR/collective.json"
  want copy && run_step copy 45 "$BUILD/mb_copy_engine" --out "$OUT_DIR/copy_engine.json"
  want overlap && run_step overlap "$LIM_OVL" "$BUILD/mb_gemm_nccl_overlap" --group-sizes "$GROUPS_OVL" \
    "${OVL_ARGS[@]}" --out "$OUT_DIR/gemm_nccl_overlap.json"
else
  gemm_step 0
  other_single_gpu_steps 0
  host_steps
  log "one GPU: collectives, copy engine and gemm_nccl_overlap not run"
fi

# Merge the per-step logs into run_log.txt (the result folder keeps 8 files at most).
for f in "$OUT_DIR"/log_*.txt; do
  [[ -e $f ]] || continue
  { echo; echo "##### $(basename "$f")"; cat "$f"; } >>"$LOG"
  rm -f "$f"
done
log "=== done after $(($(date +%s) - START))s"
command -v python3 >/dev/null && python3 "$HERE/mb_summary.py" "$OUT_DIR" 2>&1 | tee -a "$LOG"
exit 0
