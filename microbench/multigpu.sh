#!/usr/bin/env bash
# The multi-GPU measurements in one command on a 4- or 8-GPU H200 node (nvidia-h200-x4 /
# nvidia-h200-x8): the NCCL collective sweep over groups of 2, 4, 8 GPUs, the GEMM beside a 4- and
# 8-GPU collective, and the end-to-end harness at DP = TP = 4 and 8 (2 as well when time is left),
# within 10 minutes (the longest one command may run on the lent machines). See
# microbench/MULTIGPU.md.
#
#   bash microbench/multigpu.sh                 (writes to $OUT, else ./multigpu-out)
#
# Returns 7 files, all in $OUT: collective.json, gemm_nccl_overlap.json, run_log.txt (from
# run_all.sh), e2e-results.json, e2e-log.txt, e2e-nvidia-smi.txt, e2e-traces.tar.gz (from
# run_e2e.sh); the lent machines bring back 8 files at most.
# Time (MULTIGPU_TOTAL_S, default 570 s): the microbenchmarks get MULTIGPU_MB_S (default 330 s:
# build of the two NCCL programs, collectives <= 170 s, overlap <= 100 s), the e2e harness what
# is left (>= 240 s). MULTIGPU_PART=mb or e2e runs one half only, with the whole budget: two
# commands in a row give each half a full 10 minutes, should the one-command run come back
# truncated.
# NVLink multicast stays off in every process (exported here, again by both scripts, and the
# NCCL programs refuse to start without NCCL_NVLS_ENABLE=0).
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT_DIR=${OUT:-$PWD/multigpu-out}
TOTAL=${MULTIGPU_TOTAL_S:-570}
PART=${MULTIGPU_PART:-all}
START=$(date +%s)
mkdir -p "$OUT_DIR"

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "multigpu: $NGPU GPUs, part $PART, budget ${TOTAL}s, out $OUT_DIR"
if ((NGPU < 2)); then
  echo "multigpu: needs 2 or more GPUs"
  exit 1
fi
# Groups: every power of two up to the GPU count, largest first. The GEMM-beside-collective
# measurement leaves out the pair (measured on the 2-GPU machine already) unless only 2 exist.
groups=""
for g in 8 4 2; do ((g <= NGPU)) && groups="$groups,$g"; done
groups=${groups#,}
ovl_groups=${groups%,2}
[ -n "$ovl_groups" ] || ovl_groups=2

if [[ $PART == all || $PART == mb ]]; then
  if [[ $PART == all ]]; then
    mb_s=${MULTIGPU_MB_S:-330}
    coll_lim=${MB_COLL_LIMIT_S:-170}
    ovl_lim=${MB_OVL_LIMIT_S:-100}
  else
    mb_s=$TOTAL
    coll_lim=${MB_COLL_LIMIT_S:-300}
    ovl_lim=${MB_OVL_LIMIT_S:-200}
  fi
  MB_TOTAL_S=$mb_s MB_STEPS=${MB_STEPS:-build,collectives,overlap} MB_GROUPS=${MB_GROUPS:-$groups} \
    MB_OVL_GROUPS=${MB_OVL_GROUPS:-$ovl_groups} MB_COLL_LIMIT_S=$coll_lim MB_OVL_LIMIT_S=$ovl_lim \
    bash "$HERE/run_all.sh" "$OUT_DIR"
  echo "multigpu: microbenchmarks done at t=$(($(date +%s) - START))s"
fi

if [[ $PART == all || $PART == e2e ]]; then
  left=$((TOTAL - ($(date +%s) - START)))
  # Worlds 8 and 4 (or 4) are required; 2 (measured on the 2-GPU machine) only if time is left.
  worlds=""
  for w in 8 4; do ((w <= NGPU)) && worlds="$worlds $w"; done
  [ -n "$worlds" ] || worlds=2
  OUT=$OUT_DIR E2E_TOTAL_S=$left E2E_WORLDS=${E2E_WORLDS:-$worlds} E2E_OPTIONAL_WORLDS=${E2E_OPTIONAL_WORLDS-2} \
    bash "$HERE/e2e/run_e2e.sh"
  echo "multigpu: e2e done at t=$(($(date +%s) - START))s"
fi
ls -l "$OUT_DIR"
