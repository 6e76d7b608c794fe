#!/usr/bin/env bash
# The committed profiles are what `penumbra calibrate` makes of the committed measurements
# (byte for byte), and replaying every measured case through them stays within 5% where a
# table or curve point stands for it (penumbra calibrate --check exits 3 otherwise).
set -euo pipefail
bin=$1 src=$2
cd "$src"
C=hwprofiles/calibration
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
h100=("$C"/h100-sxm/{gemm,gemm_moe_experts,gemm_moe_router,gemm_contention,attention,attention_hd,memory}.json "$C"/h200-sxm-8gpu/collective.json "$C"/h200-sxm/copy_engine.json)
h200=("$C"/h200-sxm/{gemm,gemm_moe_experts,gemm_moe_router,gemm_contention,attention,attention_hd,memory,copy_engine}.json "$C"/h200-sxm-8gpu/collective.json)
# re-fitting a committed profile from the committed measurements must change nothing
for p in h100-sxm h200-sxm; do cp "hwprofiles/$p.json" "$tmp/$p-base.json"; done
"$bin" calibrate "${h100[@]}" --base "$tmp/h100-sxm-base.json" -o "$tmp/h100-sxm.json" >/dev/null
"$bin" calibrate "${h200[@]}" --base "$tmp/h200-sxm-base.json" -o "$tmp/h200-sxm.json" >/dev/null
for p in h100-sxm h200-sxm; do
  cmp -s "$tmp/$p.json" "hwprofiles/$p.json" || { echo "FAIL: hwprofiles/$p.json is not what penumbra calibrate makes of $C"; diff <(head -c 2000 "$tmp/$p.json") <(head -c 2000 "hwprofiles/$p.json") | head; exit 1; }
done
"$bin" calibrate --check --profile hwprofiles/h100-sxm.json "${h100[@]}"
"$bin" calibrate --check --profile hwprofiles/h200-sxm.json "${h200[@]}"
# the GEMM-beside-NCCL rows (8 x H200) are read and replayed (reported, not fitted: README)
"$bin" calibrate --check --profile hwprofiles/h200-sxm.json "$C"/h200-sxm-8gpu/gemm_nccl_overlap.json >"$tmp/ovl.txt"
grep -Eq "GEMM rate beside NCCL, SMs held +56 " "$tmp/ovl.txt" && grep -Eq "GEMM rate beside NCCL, SM margin +48 " "$tmp/ovl.txt" ||
  { echo "FAIL: gemm_nccl_overlap rows not replayed"; cat "$tmp/ovl.txt"; exit 1; }
echo "calibration: profiles reproducible, replay within 5%"
