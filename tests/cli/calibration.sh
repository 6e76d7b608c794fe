#!/usr/bin/env bash
# The committed profiles are what `penumbra calibrate` makes of the committed measurements
# (byte for byte), and replaying every measured case through them stays within 5% where a
# table or curve point stands for it (penumbra calibrate --check exits 3 otherwise).
set -euo pipefail
bin=$1 src=$2
cd "$src"
C=hwprofiles/calibration
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the host and launch figures come from the H100 machine for both (no H200 host was measured but
# the TE-shaped layers below, whose host is the same VM CPU model)
# the host: launches and a bare PyTorch layer (mb_launch, mb_host.py), Megatron-Core's local layers
# (mb_megatron_host.py, run before and after the Megatron-LM runs of tests/data/megatron/2026-11-27;
# megatron_host_fsdp: the same stacks in DDP and in Megatron-FSDP, beside tests/data/megatron/megatron-fsdp;
# megatron_moe_host: Qwen3-30B-A3B's layer with a one-expert MoE and with a dense MLP, mb_megatron_moe_host.py;
# megatron_host_te_shaped: the same stacks in the TE spec's shape beside local twins, mb_megatron_host.py --te-shaped,
# on the H200 machine's host, the same VM CPU model: each pair is scaled to the profile's host speed by its twin;
# host_ref: the nn.Linear call a DGX host was published at (TE issue 2053), beside the eager layer, mb_host_ref.py)
host=("$C"/h100-sxm/{launch,host_torch,megatron_host,megatron_host_after_runs,megatron_host_fsdp,megatron_moe_host}.json "$C"/h200-sxm/megatron_host_te_shaped{,_2}.json "$C"/h200-sxm/host_ref.json)
# the wgrad GEMMs accumulating into main_grad, the memory-bound torch kernels (the dropout class,
# the GLU clamps) and the unfused attention were measured on each GPU: each profile fits its own
accum=("$C"/h100-sxm/gemm_accum.json)
torch_mem=("$C"/h100-sxm/torch_mem.json "$C"/h100-sxm/torch_mem_glu_clamp.json)
unfused=("$C"/h100-sxm/unfused_attn.json)
# HBM sharing (mb_hbm_share.cu) was measured on the H100: the H200 profile takes its pressure curve
# scaled to its own HBM figure (calib/hbm.c) and fits its GEMMs' pressure from its own contention rows;
# NCCL's HBM bytes per byte (mb_copy_nccl_overlap.cu, two H100s) is NCCL's, taken by both
hbm=("$C"/h100-sxm/hbm_share.json "$C"/h100-sxm-2gpu/copy_nccl_overlap.json)
# userbuffers CTAs pushing without multicast (mb_p2p_sm) were measured on two H200s (NVLink 4, as
# the H100's): both profiles take them
p2p=("$C"/h200-sxm/p2p_sm.json)
h100=("$C"/h100-sxm/{gemm,gemm_moe_experts,gemm_moe_router,gemm_contention,attention,attention_hd,attention_mla,memory}.json "$C"/h200-sxm-8gpu/collective.json "$C"/h200-sxm/copy_engine.json "${host[@]}" "${accum[@]}" "${torch_mem[@]}" "${unfused[@]}" "${hbm[@]}" "${p2p[@]}")
h200=("$C"/h200-sxm/{gemm,gemm_moe_experts,gemm_moe_router,gemm_contention,attention,attention_hd,attention_mla,memory,copy_engine,gemm_accum,torch_mem,unfused_attn}.json "$C"/h200-sxm-8gpu/collective.json "${host[@]}" "${hbm[@]}" "${p2p[@]}")
# re-fitting a committed profile from the committed measurements must change nothing, its
# "calibrated" day included (the newest date_utc of the results, no --date needed); the h200 base
# starts without one, which the fit adds right after "gpu"
for p in h100-sxm h200-sxm; do cp "hwprofiles/$p.json" "$tmp/$p-base.json"; done
grep -q '^	"calibrated":	"2026-11-28",$' "$tmp/h200-sxm-base.json" || { echo "FAIL: hwprofiles/h200-sxm.json has no calibration day"; exit 1; }
sed -i '/^	"calibrated":/d' "$tmp/h200-sxm-base.json"
"$bin" calibrate "${h100[@]}" --base "$tmp/h100-sxm-base.json" -o "$tmp/h100-sxm.json" >/dev/null
"$bin" calibrate "${h200[@]}" --base "$tmp/h200-sxm-base.json" -o "$tmp/h200-sxm.json" >/dev/null
for p in h100-sxm h200-sxm; do
  cmp -s "$tmp/$p.json" "hwprofiles/$p.json" || { echo "FAIL: hwprofiles/$p.json is not what penumbra calibrate makes of $C"; diff <(head -c 2000 "$tmp/$p.json") <(head -c 2000 "hwprofiles/$p.json") | head; exit 1; }
done
# --date sets the day; a bad one is refused before anything is read; results without date_utc
# are dated today (UTC)
"$bin" calibrate "$C"/h200-sxm/memory.json --date 2030-01-02 --base hwprofiles/h200-sxm.json -o "$tmp/dated.json" >/dev/null
grep -q '^	"calibrated":	"2030-01-02",$' "$tmp/dated.json" || { echo "FAIL: --date 2030-01-02 not written"; exit 1; }
for bad in 2026-13-01 2026-02-29 2026-1-02 1999-12-31 yesterday; do
  rc=0; "$bin" calibrate "$C"/h200-sxm/memory.json --date "$bad" --base hwprofiles/h200-sxm.json -o "$tmp/bad.json" 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "--date: expected a calendar day YYYY-MM-DD.*got \"$bad\"" "$tmp/err" && [ ! -e "$tmp/bad.json" ] ||
    { echo "FAIL: --date $bad: exit $rc"; cat "$tmp/err"; exit 1; }
done
sed 's/"date_utc": "[^"]*", //' "$C"/h200-sxm/memory.json >"$tmp/undated.json"
before=$(date -u +%F)
"$bin" calibrate "$tmp/undated.json" --base hwprofiles/h200-sxm.json -o "$tmp/today.json" >/dev/null
after=$(date -u +%F)
grep -Eq "^	\"calibrated\":	\"($before|$after)\",\$" "$tmp/today.json" || { echo "FAIL: undated results not dated $before"; head -5 "$tmp/today.json"; exit 1; }
"$bin" calibrate --check --profile hwprofiles/h100-sxm.json "${h100[@]}" | tee "$tmp/h100-check.txt"
# HBM sharing replayed (reported): every GEMM beside a copying spinner, the copy pairs within 1%
grep -Eq "HBM: GEMM beside a copying spinner +84 " "$tmp/h100-check.txt" &&
  grep -Eq "HBM: NCCL time beside a copy +48 " "$tmp/h100-check.txt" &&
  grep -Eq "HBM: two copy kernels at once +12 +[0-9.]+% +[0-9.]+% +0\.[0-9]+% +100\.0%" "$tmp/h100-check.txt" ||
  { echo "FAIL: HBM sharing rows not replayed as fitted"; grep HBM "$tmp/h100-check.txt"; exit 1; }
"$bin" calibrate --check --profile hwprofiles/h200-sxm.json "${h200[@]}"
# the GEMM-beside-NCCL rows (8 x H200) are read and replayed (reported, not fitted: README)
"$bin" calibrate --check --profile hwprofiles/h200-sxm.json "$C"/h200-sxm-8gpu/gemm_nccl_overlap.json >"$tmp/ovl.txt"
grep -Eq "GEMM rate beside NCCL, SMs held +56 " "$tmp/ovl.txt" && grep -Eq "GEMM rate beside NCCL, SM margin +48 " "$tmp/ovl.txt" ||
  { echo "FAIL: gemm_nccl_overlap rows not replayed"; cat "$tmp/ovl.txt"; exit 1; }
echo "calibration: profiles reproducible, replay within 5%"
