#!/usr/bin/env bash
# A GEMM beside bucket-sized all-reduces (and reduce-scatters for reference) on groups of 8 and 4
# GPUs: the interference the DP-overlap e2e rows point at (README, "Overlap A/B pairs"). Two GEMM
# shapes: 8192^3 (the other gemm_nccl_overlap rows) and the e2e model's fc1 (4096 x 14336 x 4096).
# One call on nvidia-h200-x8 (groups 8, 4) or -x4 (4, 2): bash microbench/ar_overlap.sh (writes to $OUT, else ./ar-out).
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT_DIR=${OUT:-$PWD/ar-out}; mkdir -p "$OUT_DIR"
cmake -S microbench -B build-mb -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT_DIR/ar_build.log" 2>&1 &&
  cmake --build build-mb -j 32 --target mb_gemm_nccl_overlap >>"$OUT_DIR/ar_build.log" 2>&1 || { tail -30 "$OUT_DIR/ar_build.log"; exit 1; }
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); groups=4,2; ((NGPU >= 8)) && groups=8,4
echo "ar_overlap: $NGPU GPUs, groups $groups"
for shape in 8192x8192x8192 4096x14336x4096; do
  timeout 220 build-mb/mb_gemm_nccl_overlap --group-sizes "$groups" --colls all_reduce,reduce_scatter --sizes-mib 80,512 \
    --ctas 0,8,16,32 --shape "$shape" --budget-s 150 --out "$OUT_DIR/gemm_nccl_overlap_ar_$shape.json" 2>&1 | tail -5
done
ls -la "$OUT_DIR"
