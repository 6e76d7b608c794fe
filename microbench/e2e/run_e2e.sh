#!/bin/bash
# Runs the microbench/e2e configurations on the GPUs of this host and writes to $OUT:
# e2e-results.json (every config run), e2e-log.txt, e2e-nvidia-smi.txt and e2e-traces.tar.gz
# (gzipped torch.profiler traces of the profiled steps; every rank, or rank 0 only, or none,
# whichever first fits the 15 MB a returned file may have): 4 files.
#
# World sizes: every power of two from the GPU count down to 2 (8 GPUs: 8, 4, 2), largest first;
# a world of W runs on GPUs 0..W-1 with the configs whose dp x tp x pp is W (e2e_model.py):
# dpW_nooverlap, dpW_overlap, dpW_nocomm, tpW_sp, tpW_sp_overlap, tpW_sp_sync, tpW_sp_overlap_p2p,
# tpW_sp_nocomm, and pp2_1f1b at W = 2. Two process groups per world, because
# CUDA_DEVICE_MAX_CONNECTIONS is fixed per process: 8 for the DP and PP configs
# (Megatron-Bridge's launcher value without TP), 1 for the TP configs (Megatron asserts it with
# TP > 1 on Hopper). About 110 s for W = 2 on 2 x H200.
#
# Time: E2E_TOTAL_S (default 560) bounds the whole script; each (world, group) launch gets
# min(E2E_GROUP_TIMEOUT_S, its fair share of the time left) and at least 60 s, a launch that
# would get less is skipped (logged); e2e.py rewrites its file after every config, so a launch
# cut by its timeout keeps the configs it finished (those with a penumbra scenario run first).
# E2E_OPTIONAL_WORLDS (e.g. "2"): worlds run last and only with 100 s or more left, and left out
# of the fair shares. Knobs: E2E_WORLDS ("8 4", default all), E2E_CONFIGS (comma list: run only
# these), E2E_STEPS
# (10), E2E_WARMUP (3), E2E_PROFILE_STEPS (2), E2E_GROUP_TIMEOUT_S (170), PYTHON (python3).
# E2E_CPU=1 E2E_NGPU=N: the same orchestration on the CPU (gloo, fp32, --tiny) with N processes,
# a logic check of this script (E2E_TORCHRUN_ARGS adds launcher options, e.g. "--redirects 1
# --tee 1" for Debian's torch 1.13 launcher under Python 3.11).
set -u -o pipefail
# NVLink multicast stays off everywhere (shared machines).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/e2e-out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
STEPS=${E2E_STEPS:-10}
WARMUP=${E2E_WARMUP:-3}
PROF=${E2E_PROFILE_STEPS:-2}
GT=${E2E_GROUP_TIMEOUT_S:-170}
TOTAL=${E2E_TOTAL_S:-560}
CPU=${E2E_CPU:-0}
read -r -a LAUNCH_ARGS <<<"${E2E_TORCHRUN_ARGS:-}"
START=$(date +%s)
TMP=$(mktemp -d)
LOG=$OUT/e2e-log.txt
: >"$LOG"
log() { echo "$*" | tee -a "$LOG"; }

if ((CPU)); then
  NGPU=${E2E_NGPU:-2}
  EXTRA=(--cpu --tiny)
  echo "CPU logic check, $NGPU processes" >"$OUT/e2e-nvidia-smi.txt"
else
  EXTRA=()
  { nvidia-smi; nvidia-smi topo -m; } >"$OUT/e2e-nvidia-smi.txt" 2>&1
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  ((NGPU >= 1)) || NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())' 2>&1 | tee -a "$LOG"
fi
if ((NGPU < 2)); then
  log "run_e2e: $NGPU GPU(s); the configurations need 2 or more"
  exit 1
fi
if [ -n "${E2E_WORLDS:-}" ]; then
  read -r -a WORLDS <<<"${E2E_WORLDS//,/ }"
else
  WORLDS=()
  for w in 8 4 2; do ((w <= NGPU)) && WORLDS+=("$w"); done
fi
read -r -a OPTIONAL <<<"${E2E_OPTIONAL_WORLDS:-}"
log "run_e2e: $NGPU GPUs, worlds ${WORLDS[*]}, optional ${OPTIONAL[*]:-none}, budget ${TOTAL}s, NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"

# The launches: world x group, with their configs (filtered by E2E_CONFIGS); optional ones last.
launches=()
nreq=0
for w in "${WORLDS[@]}" "${OPTIONAL[@]}"; do
  if ((w > NGPU || w < 2)); then
    log "SKIP world $w: $NGPU GPUs"
    continue
  fi
  opt=0
  [[ " ${OPTIONAL[*]} " == *" $w "* ]] && opt=1
  [[ " ${WORLDS[*]} " == *" $w "* ]] && ((opt)) && continue  # listed in both: required
  for group in cdmc8 cdmc1; do
    cfgs=$("$PY" "$HERE/e2e_model.py" --group-configs "$group" "$w")
    if [ -n "${E2E_CONFIGS:-}" ]; then
      keep=""
      for c in ${cfgs//,/ }; do
        [[ ",$E2E_CONFIGS," == *",$c,"* ]] && keep="$keep,$c"
      done
      cfgs=${keep#,}
    fi
    if [ -n "$cfgs" ]; then
      launches+=("$opt:$w:$group:$cfgs")
      ((opt)) || nreq=$((nreq + 1))
    fi
  done
done

port=29511
parts=()
i=0
for l in "${launches[@]}"; do
  IFS=: read -r opt w group cfgs <<<"$l"
  cdmc=${group#cdmc}
  left=$((TOTAL - ($(date +%s) - START)))
  lim=$GT
  if ((opt)); then
    need=100
  else
    share=$((left / (nreq - i)))  # fair share of the required launches still to run
    i=$((i + 1))
    ((share < lim)) && lim=$share
    ((lim < 60)) && lim=60
    need=60
  fi
  ((lim > left - 15)) && lim=$((left - 15))
  if ((lim < need)); then
    log "== SKIP world $w group $group ($cfgs): only ${left}s left"
    continue
  fi
  devs=$(seq -s, 0 $((w - 1)))
  part="$TMP/e2e-w$w-$group.json"
  log "== world $w group $group (CUDA_DEVICE_MAX_CONNECTIONS=$cdmc, GPUs $devs, limit ${lim}s): $cfgs"
  t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$devs CUDA_DEVICE_MAX_CONNECTIONS=$cdmc timeout -k 10 "$lim" \
    "$PY" -m torch.distributed.run "${LAUNCH_ARGS[@]}" --nproc_per_node="$w" --master_port=$port "$HERE/e2e.py" \
    --configs "$cfgs" "${EXTRA[@]}" --steps "$STEPS" --warmup "$WARMUP" --profile-steps "$PROF" \
    --out "$part" --trace-dir "$TMP/traces" 2>&1 | tee -a "$LOG"
  log "== world $w group $group rc=$? in $(($(date +%s) - t0)) s (t=$(($(date +%s) - START)) s)"
  [ -e "$part" ] && parts+=("$part")
  port=$((port + 1))
done
if ((${#parts[@]})); then
  "$PY" "$HERE/merge.py" "$OUT/e2e-results.json" "${parts[@]}" 2>&1 | tee -a "$LOG"
  "$PY" "$HERE/check_agreement.py" "$OUT/e2e-results.json" 2>&1 | tail -2 | tee -a "$LOG"
else
  log "run_e2e: no results"
fi
if [ -d "$TMP/traces" ]; then
  tar czf "$OUT/e2e-traces.tar.gz" -C "$TMP" traces
  # keep under the 16 MiB a returned file may have: rank 0's traces, else none
  if [ "$(stat -c %s "$OUT/e2e-traces.tar.gz")" -gt 15000000 ]; then
    (cd "$TMP" && tar czf "$OUT/e2e-traces.tar.gz" traces/*rank0*)
    if [ "$(stat -c %s "$OUT/e2e-traces.tar.gz")" -gt 15000000 ]; then
      rm -f "$OUT/e2e-traces.tar.gz"
      log "run_e2e: traces too large even for rank 0 alone: not kept"
    else
      log "run_e2e: traces of rank 0 only (all ranks over 15 MB)"
    fi
  fi
fi
rm -rf "$TMP"
log "run_e2e: done in $(($(date +%s) - START)) s"
ls -l "$OUT" | tee -a "$LOG"
