#!/usr/bin/env bash
# penumbra run --what-if lists every overlap knob that applies to the scenario, each simulated off
# and on: the MoE EP-overlap pair gets the EP knobs (turning EP overlap on shortens its step and
# lowers its exposed communication), a dense DP-only scenario gets the DP knobs and no EP ones.
set -euo pipefail
bin=$1 src=$2
cd "$src"
out=$("$bin" run scenarios/qwen3-30b-a3b-h100-16gpu-ep-overlap-on.json --what-if)
echo "$out" | sed -n '/^what-if/,$p'
row=$(echo "$out" | grep '^comm_overlap.overlap_moe_expert_parallel_comm ') || { echo "FAIL: no EP-overlap row"; exit 1; }
read -r _ now off on diff exposed <<<"$row"
[ "$now" = on ] || { echo "FAIL: EP overlap should be on in this scenario: $row"; exit 1; }
awk -v d="$diff" -v e="$exposed" 'BEGIN { exit !(d < 0 && e < 0) }' || { echo "FAIL: EP overlap on should cut step and exposed comm: $row"; exit 1; }
echo "$out" | grep -q '^comm_overlap.delay_wgrad_compute ' || { echo "FAIL: no delay_wgrad_compute row"; exit 1; }
dense=$("$bin" run scenarios/llama3-8b-h100-8gpu.json --what-if)
echo "$dense" | grep -q '^ddp.overlap_grad_reduce ' || { echo "FAIL: dense scenario lacks the DP knob"; exit 1; }
if echo "$dense" | grep -q 'moe_expert_parallel'; then echo "FAIL: EP knob offered for a dense model"; exit 1; fi
json=$("$bin" run scenarios/qwen3-30b-a3b-h100-16gpu-ep-overlap-on.json --what-if --format json)
case "$json" in *'"knob": "comm_overlap.overlap_moe_expert_parallel_comm"'*) ;; *) echo "FAIL: JSON what-if lacks the EP knob"; exit 1 ;; esac
echo "what-if: ok"
