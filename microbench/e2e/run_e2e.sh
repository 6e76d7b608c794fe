#!/bin/bash
# Runs every microbench/e2e configuration on 2 GPUs of one host (about 3 minutes on 2 x H200)
# and writes to $OUT: e2e-results.json (all configs), e2e-log.txt, e2e-nvidia-smi.txt and
# e2e-traces.tar.gz (gzipped torch.profiler traces of the profiled steps, every rank).
# Two process groups, because CUDA_DEVICE_MAX_CONNECTIONS is fixed per process: 8 for the DP and
# PP configs (Megatron-Bridge's launcher value without TP), 1 for the TP configs (Megatron asserts
# it with TP > 1 on Hopper).
#   E2E_STEPS (10), E2E_WARMUP (3), E2E_PROFILE_STEPS (2), E2E_GROUP_TIMEOUT_S (170)
set -u -o pipefail
# NVLink multicast stays off everywhere (shared machines).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/e2e-out}
mkdir -p "$OUT"
STEPS=${E2E_STEPS:-10}
WARMUP=${E2E_WARMUP:-3}
PROF=${E2E_PROFILE_STEPS:-2}
GT=${E2E_GROUP_TIMEOUT_S:-170}
TMP=$(mktemp -d)
LOG=$OUT/e2e-log.txt
: >"$LOG"
{ nvidia-smi; nvidia-smi topo -m; } >"$OUT/e2e-nvidia-smi.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())' 2>&1 | tee -a "$LOG"
port=29511
parts=()
for group in cdmc8 cdmc1; do
  cdmc=${group#cdmc}
  echo "== group $group (CUDA_DEVICE_MAX_CONNECTIONS=$cdmc)" | tee -a "$LOG"
  t0=$(date +%s)
  CUDA_DEVICE_MAX_CONNECTIONS=$cdmc timeout -k 10 "$GT" \
    python3 -m torch.distributed.run --nproc_per_node=2 --master_port=$port "$HERE/e2e.py" --group "$group" \
    --steps "$STEPS" --warmup "$WARMUP" --profile-steps "$PROF" \
    --out "$TMP/e2e-$group.json" --trace-dir "$TMP/traces" 2>&1 | tee -a "$LOG"
  echo "== group $group rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
  parts+=("$TMP/e2e-$group.json")
  port=$((port + 1))
done
python3 "$HERE/merge.py" "$OUT/e2e-results.json" "${parts[@]}" 2>&1 | tee -a "$LOG"
if [ -d "$TMP/traces" ]; then
  tar czf "$OUT/e2e-traces.tar.gz" -C "$TMP" traces
  # keep under the 16 MiB a returned file may have: fall back to rank 0's traces
  if [ "$(stat -c %s "$OUT/e2e-traces.tar.gz")" -gt 15000000 ]; then
    tar czf "$OUT/e2e-traces.tar.gz" -C "$TMP" $(cd "$TMP" && ls traces/*rank0*)
  fi
fi
ls -l "$OUT" | tee -a "$LOG"
