#!/usr/bin/env bash
# penumbra run --what-if lists every overlap knob that applies to the scenario, each simulated off
# and on: the MoE EP-overlap pair gets the EP knobs (turning EP overlap on shortens its step and
# lowers its exposed communication), a dense DP-only scenario gets the DP knobs and no EP ones. A
# direction the frameworks refuse for the layout is reported as refused, with its reason, and the
# other knobs still run (exit 0): on the interleaved PP 2 layout below, and on every shipped
# scenario and a fixed set of random layouts Megatron accepts. On a terminal stderr shows which
# simulation runs, and nothing when it is not one.
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

# Megatron refuses overlap_p2p_comm off with VPP at PP 2: that direction is refused, the rest runs.
pp2=(scenarios/llama3-70b-h100-64gpu.json --what-if --set parallel.tensor_model_parallel_size=4
  --set parallel.pipeline_model_parallel_size=2 --set parallel.virtual_pipeline_model_parallel_size=5
  --set parallel.context_parallel_size=2 --set 'training.precision="fp8"' --set hardware.num_gpus=256)
out=$("$bin" run "${pp2[@]}") || { echo "FAIL: --what-if on TP4 PP2 VPP5 CP2 exited $?"; exit 1; }
row=$(echo "$out" | grep -A1 '^comm_overlap.overlap_p2p_comm ') || { echo "FAIL: no P2P-overlap row:"; echo "$out"; exit 1; }
read -r _ now off on diff exposed <<<"$(echo "$row" | head -1)"
[ "$now $off $diff $exposed" = "on - - -" ] && [ "$on" != - ] || { echo "FAIL: P2P off should be refused, on simulated: $row"; exit 1; }
case "$(echo "$row" | tail -1)" in
  "  off refused: /comm_overlap/overlap_p2p_comm: false is not supported with interleaving"*"Megatron requires pp > 2"*) ;;
  *) echo "FAIL: the refusal should say why: $row"; exit 1 ;;
esac
echo "$out" | grep -Eq '^comm_overlap.tp_comm_overlap +on +[0-9.]+ +[0-9.]+ ' || { echo "FAIL: the other knobs should still run:"; echo "$out"; exit 1; }
json=$("$bin" run "${pp2[@]}" --format json)
case "$json" in
  '{
  "schema_version": 1,
  "penumbra": {'*'
  "baseline": {
    "scenario": {'*'"tp": 4,
      "pp": 2,
      "vpp": 5,
      "cp": 2,'*'
  "knobs": [
    {"knob": '*) ;;
  *) echo "FAIL: JSON what-if should be {schema_version, penumbra, baseline, knobs}:"; echo "$json"; exit 1 ;;
esac
case "$json" in
  *'"knob": "comm_overlap.overlap_p2p_comm", "now": true, "off_s": null, "on_s": '[0-9]*', "exposed_off_s": null, '*'"off_refused": "/comm_overlap/overlap_p2p_comm: false is not supported'*'"on_refused": null}'*) ;;
  *) echo "FAIL: JSON what-if should mark P2P off refused:"; echo "$json"; exit 1 ;;
esac

# --what-if's report has no timing: asking for it is an error, not an option silently ignored.
if "$bin" run scenarios/llama3-8b-h100-8gpu.json --what-if --timing >/dev/null 2>&1; then
  echo "FAIL: --what-if --timing should be refused"; exit 1
fi

# Progress: one line per simulation on a terminal's stderr (script(1) gives one), rewritten in
# place and erased at the end; nothing on a stderr that is not a terminal; the same report.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
s=scenarios/llama2-7b-h100-8gpu.json # its four knobs: the DP ones, Megatron-FSDP and CUDA graphs
"$bin" run $s --what-if >"$tmp/plain" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || { echo "FAIL: progress written to a stderr that is not a terminal:"; cat "$tmp/err"; exit 1; }
if command -v script >/dev/null; then
  script -qec "'$bin' run $s --what-if >'$tmp/tty'" /dev/null >"$tmp/typescript" </dev/null
  want=$(printf '\r\033[Kwhat-if 1/8: ddp.overlap_grad_reduce off\r\033[Kwhat-if 2/8: ddp.overlap_grad_reduce on')
  want+=$(printf '\r\033[Kwhat-if 3/8: ddp.overlap_param_gather off\r\033[Kwhat-if 4/8: ddp.overlap_param_gather on')
  want+=$(printf '\r\033[Kwhat-if 5/8: ddp.use_megatron_fsdp (Megatron-FSDP) off')
  want+=$(printf '\r\033[Kwhat-if 6/8: ddp.use_megatron_fsdp (Megatron-FSDP) on')
  want+=$(printf '\r\033[Kwhat-if 7/8: training.cuda_graph_impl (CUDA graphs) off')
  want+=$(printf '\r\033[Kwhat-if 8/8: training.cuda_graph_impl (CUDA graphs) on\r\033[K')
  [ "$(cat "$tmp/typescript")" = "$want" ] || { echo "FAIL: progress on a terminal:"; od -c "$tmp/typescript" | head; exit 1; }
  cmp -s "$tmp/plain" "$tmp/tty" || { echo "FAIL: the report differs on a terminal"; exit 1; }
else
  echo "(script(1) not found: progress on a terminal not checked)"
fi

# Every row is a knob with a time or "-" per direction; a "-" comes with its refusal line; a knob
# that changes the compute lost to SM contention has a line saying by how much, under its row.
check_table() { # label, what-if text
  awk -v what="$1" '
    function unexplained() { return want["off"] || want["on"] }
    NR <= 2 { next }
    /^  (off|on) refused: ./ { if (!want[$1]) { bad = "a refusal for a direction that ran: " $0; exit } want[$1] = 0; next }
    /^  compute lost to SM contention: off [0-9.]+ s, on [0-9.]+ s \(on-off [-+][0-9.]+\)$/ {
      if (prev == "" || unexplained()) { bad = "an SM contention line out of place: " $0; exit } next
    }
    {
      if (unexplained()) { bad = "a refused direction without its reason: " prev; exit }
      off = $(NF - 3); on = $(NF - 2)
      if (NF < 6 || (off != "-" && off !~ /^[0-9.]+$/) || (on != "-" && on !~ /^[0-9.]+$/)) { bad = "bad row: " $0; exit }
      want["off"] = off == "-"; want["on"] = on == "-"; prev = $0
    }
    END {
      if (bad == "" && unexplained()) bad = "a refused direction without its reason: " prev
      if (bad != "") { print "FAIL: " what ": " bad; exit 1 }
    }' <<<"$2"
}

n=0
for s in scenarios/*.json scenarios/validation/*.json; do
  out=$("$bin" run "$s" --what-if) || { echo "FAIL: $s: --what-if exited $?"; exit 1; }
  check_table "$s" "$out"
  n=$((n + 1))
done

# Random layouts (a fixed seed, the same every run) from a few scenarios: TP, PP, VPP, CP, DP,
# EP for the MoE one, and the micro-batch size, within the sizes Megatron takes. A layout the
# baseline itself rejects (exit 2: heads, layers or batch do not divide) is skipped.
seed=20261124
rnd() { # rnd N...: one of the arguments
  seed=$(((seed * 1103515245 + 12345) % 2147483648))
  local a=("$@")
  pick=${a[$(((seed >> 16) % $#))]}
}
tried=0 valid=0
while [ "$tried" -lt 40 ]; do
  tried=$((tried + 1))
  rnd scenarios/llama3-8b-h100-8gpu.json scenarios/llama3-70b-h100-64gpu.json scenarios/nemotron4-15b-h100-64gpu.json \
    scenarios/qwen3-30b-a3b-h100-16gpu-ep-overlap-on.json
  s=$pick
  rnd 1 2 4 8; tp=$pick
  rnd 1 2 4; pp=$pick
  rnd 1 2 4 5; vpp=$pick
  [ "$pp" -gt 1 ] || vpp=1
  rnd 1 2; cp=$pick
  rnd 1 2 4; dp=$pick
  rnd 1 2; mbs=$pick
  rnd 1 2 4; m=$pick
  args=(--set parallel.tensor_model_parallel_size="$tp" --set parallel.pipeline_model_parallel_size="$pp"
    --set parallel.virtual_pipeline_model_parallel_size="$( [ "$vpp" -gt 1 ] && echo "$vpp" || echo null)"
    --set parallel.context_parallel_size="$cp" --set "parallel.sequence_parallel=$( [ "$tp" -gt 1 ] && echo true || echo false)"
    --set hardware.num_gpus=$((tp * pp * cp * dp)) --set training.micro_batch_size="$mbs"
    --set training.global_batch_size=$((mbs * dp * pp * m)))
  case $s in *qwen3*) rnd 1 2 4 8; [ "$pick" -le $((dp * cp)) ] || pick=$((dp * cp)); args+=(--set parallel.expert_model_parallel_size="$pick") ;; esac
  rc=0; "$bin" run "$s" "${args[@]}" >/dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] && continue
  [ "$rc" = 0 ] || { echo "FAIL: $s ${args[*]}: the baseline exited $rc"; exit 1; }
  out=$("$bin" run "$s" "${args[@]}" --what-if) || { echo "FAIL: $s ${args[*]}: --what-if exited $?"; exit 1; }
  check_table "$s ${args[*]}" "$out"
  valid=$((valid + 1))
done
[ "$valid" -ge 15 ] || { echo "FAIL: only $valid of $tried random layouts were valid: the generator drifted"; exit 1; }
echo "what-if: ok ($n shipped scenarios, $valid of $tried random layouts)"
