#!/usr/bin/env bash
# penumbra compare on tests/data/megatron/llama3-8b-8gpu-synthetic.log (Megatron-LM's line formats,
# made-up numbers). Expected values, by hand from the log:
#   iterations 6..12 (after the default --skip 5), ms: 13838.5 13844.9 13836.2 13842.0 13839.3
#   13845.6 13837.8; sorted, the 4th is the median: 13839.3 ms; mean 13840.614286 ms, sample
#   stdev sqrt(78.748571 / 6) = 3.622811 ms; min 13836.2, max 13845.6
#   TFLOP/s/GPU of the same lines: 547.4 547.1 547.5 547.2 547.4 547.1 547.4 -> sorted median 547.4
#   max allocated: 52011.50 (rank 0) and 52100.25 (rank 2) MiB -> 52100.25 / 1024 = 50.879150 GiB
#   --skip 0: all 12 lines, the median of 13842.0 and 13844.9 = 13843.45 ms
# The scenario from the log's argument dump predicts exactly what the hand-written scenario of the
# same job (llama3-8b-8gpu-synthetic.json) does.
set -euo pipefail
bin=$1 src=$2
cd "$src"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
log=tests/data/megatron/llama3-8b-8gpu-synthetic.log
get() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
near() { python3 -c 'import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(abs(a-b) > t)' "$@"; }

"$bin" compare "$log" -f json >"$tmp/dump.json" 2>"$tmp/err" || fail "compare: $(cat "$tmp/err")"
near "$(get "$tmp/dump.json" measured_step_s)" 13.8393 1e-9 || fail "median $(get "$tmp/dump.json" measured_step_s)"
near "$(get "$tmp/dump.json" measured_step_s_stdev)" 0.003622811 1e-8 || fail "stdev"
near "$(get "$tmp/dump.json" measured_step_s_min)" 13.8362 1e-9 || fail "min"
near "$(get "$tmp/dump.json" measured_step_s_max)" 13.8456 1e-9 || fail "max"
[ "$(get "$tmp/dump.json" skipped_iterations)" = 5 ] || fail "skipped_iterations"
[ "$(get "$tmp/dump.json" measured_log_lines)" = 7 ] || fail "measured_log_lines"
near "$(get "$tmp/dump.json" measured_tflops_per_gpu)" 547.4 1e-9 || fail "TFLOP/s"
near "$(get "$tmp/dump.json" measured_max_allocated_gib)" 50.87915 1e-5 || fail "max allocated"
p=$(get "$tmp/dump.json" predicted_step_s)
near "$(get "$tmp/dump.json" error_pct)" "$(python3 -c "print(($p - 13.8393) / 13.8393 * 100)")" 1e-4 || fail "error_pct"
grep -q "the scenario is the log's argument dump" "$tmp/err" || fail "should say where the scenario came from"
! grep -q "CUDA_DEVICE_MAX_CONNECTIONS" "$tmp/err" || fail "TP2 on Hopper implies CUDA_DEVICE_MAX_CONNECTIONS=1"

"$bin" compare "$log" tests/data/megatron/llama3-8b-8gpu-synthetic.json -f json >"$tmp/given.json" 2>/dev/null
[ "$(get "$tmp/given.json" predicted_step_s)" = "$p" ] || fail "the dump's scenario and the hand-written one differ"

"$bin" compare "$log" --skip 0 -f json >"$tmp/all.json" 2>/dev/null
near "$(get "$tmp/all.json" measured_step_s)" 13.84345 1e-9 || fail "--skip 0 median"
[ "$(get "$tmp/all.json" skipped_iterations)" = 0 ] || fail "--skip 0 skipped_iterations"

# prefixes added by launchers do not matter
sed 's/^/[default0]:/' "$log" >"$tmp/prefixed.log"
"$bin" compare "$tmp/prefixed.log" -f json 2>/dev/null | grep -v '"commit"' >"$tmp/p.json"
grep -v '"commit"' "$tmp/dump.json" | cmp -s - "$tmp/p.json" || fail "a line prefix changes the result"

# the text report says the same numbers
"$bin" compare "$log" >"$tmp/text" 2>/dev/null
grep -q "^measured:  13.8393 s per step (median of 7 log lines after iteration 5; stdev 0.0036 s" "$tmp/text" ||
  fail "text report: $(cat "$tmp/text")"
grep -q "^error: " "$tmp/text" && grep -q "^  compute " "$tmp/text" || fail "text report lacks the error or breakdown"

# bad inputs: exit 2, one line
rc=0; "$bin" compare "$log" --skip 12 2>"$tmp/err" >/dev/null || rc=$?
[ $rc = 2 ] && grep -q "no \"elapsed time per iteration (ms)\" line after iteration 12" "$tmp/err" || fail "--skip 12"
grep -v "arguments ---\|end of arguments\|^  " "$log" >"$tmp/nodump.log"
rc=0; "$bin" compare "$tmp/nodump.log" 2>"$tmp/err" >/dev/null || rc=$?
[ $rc = 2 ] && grep -q "no argument dump" "$tmp/err" || fail "a log without a dump needs a scenario: $(cat "$tmp/err")"
rc=0; "$bin" compare "$tmp/missing.log" 2>"$tmp/err" >/dev/null || rc=$?
[ $rc = 2 ] || fail "a missing log should exit 2"
# Real Megatron-LM runs on our H100 (microbench/megatron_runs.sh; local layers, no TE or Apex), made
# on the machine the profiles' host figures were measured on: hardware.host_speed 1 (the profiles
# otherwise run a DGX host's speed).
vm=(-s hardware.host_speed=1)
# By hand from llama-local-h100.log, iterations 6..30 (ms): 977.4 958.2 981.8 909.1 966.0 975.0
# 941.7 922.3 1028.7 945.3 986.4 939.0 904.4 898.4 902.3 928.2 956.6 1054.0 935.6 894.1 891.6
# 897.7 941.5 888.8 925.5; sorted, the 13th of 25 is the median: 939.0 ms; min 888.8, max 1054.0;
# max allocated (the largest of its two memory lines) 24037.94 MiB = 23.4746 GiB. gpt-local-h100.log: median 646.7 ms (min 571.0, max
# 764.2). The argument dump gives the scenario, the log's warning that TE and Apex are missing
# gives torch's AdamW, and the dump's bf16 run reduces its gradients in fp32.
for run in "llama-local 0.9390 0.8888 1.0540" "gpt-local 0.6467 0.5710 0.7642"; do
  set -- $run
  "$bin" compare "tests/data/megatron/$1-h100.log" "${vm[@]}" -f json >"$tmp/$1.json" 2>"$tmp/err" || fail "$1: $(cat "$tmp/err")"
  near "$(get "$tmp/$1.json" measured_step_s)" "$2" 1e-9 || fail "$1: median $(get "$tmp/$1.json" measured_step_s)"
  near "$(get "$tmp/$1.json" measured_step_s_min)" "$3" 1e-9 || fail "$1: min"
  near "$(get "$tmp/$1.json" measured_step_s_max)" "$4" 1e-9 || fail "$1: max"
  [ "$(get "$tmp/$1.json" skipped_iterations)" = 5 ] || fail "$1: skipped_iterations"
  grep -q "the log says Transformer Engine and Apex are not installed" "$tmp/err" || fail "$1: the TE / Apex warning"
done
near "$(get "$tmp/llama-local.json" measured_max_allocated_gib)" 23.4746 1e-4 || fail "llama-local: max allocated"
# the scenario the dump gives is the launch line's (imported with the two keys the log's warning sets)
"$bin" import megatron-args -s training.fused_adam=false -s comm_overlap.transformer_engine=false \
  -o "$tmp/launch.json" -- $(cat tests/data/megatron/llama-local-h100.launch) 2>/dev/null || fail "import the launch line"
"$bin" compare tests/data/megatron/llama-local-h100.log "$tmp/launch.json" "${vm[@]}" -f json >"$tmp/given.json" 2>/dev/null
[ "$(get "$tmp/given.json" predicted_step_s)" = "$(get "$tmp/llama-local.json" predicted_step_s)" ] ||
  fail "the dump's scenario and the launch line's differ"
# a host-bound run says how much of its step waits for the host's launches (text and JSON)
"$bin" compare tests/data/megatron/gpt-local-tiny-h100.log "${vm[@]}" >"$tmp/tiny.txt" 2>/dev/null || fail "compare the tiny run"
grep -q "^    host-bound  .*(the GPU waiting for the host's launches)" "$tmp/tiny.txt" || fail "host-bound line: $(cat "$tmp/tiny.txt")"
"$bin" compare tests/data/megatron/gpt-local-tiny-h100.log "${vm[@]}" -f json 2>/dev/null |
  python3 -c 'import json,sys; d=json.load(sys.stdin)["predicted_breakdown_s"]; sys.exit(not (0 < d["host_bound"] <= d["bubble"] + 1e-9))' ||
  fail "predicted_breakdown_s.host_bound"
# Megatron-FSDP (tests/data/megatron/megatron-fsdp/): the dump's use_megatron_fsdp, its sharding
# strategy and world size 2 give the scenario. By hand from gpt-local-dp2-fsdp-h100.log, iterations
# 6..30 (ms): 1083.3 1116.2 1105.2 1276.8 1365.8 1171.2 1230.8 1260.1 1117.2 1264.0 1234.2 1160.0
# 1222.0 1305.6 1192.1 1067.1 1068.2 1269.4 1113.5 1229.0 1260.3 1058.5 1315.6 1231.8 1131.6:
# median 1222.0, min 1058.5, max 1365.8. The FSDP run is predicted slower than its DDP twin by at
# least its hooks' host time, 12 layers x 8 micro-batches x (fsdp_unit_fwd_ns + fsdp_unit_bwd_ns),
# less what the DDP run's host had to spare: more than 0.2 s here.
d=tests/data/megatron/megatron-fsdp
"$bin" compare $d/gpt-local-dp2-fsdp-h100.log "${vm[@]}" -f json >"$tmp/fsdp.json" 2>/dev/null || fail "compare the FSDP run"
near "$(get "$tmp/fsdp.json" measured_step_s)" 1.2220 1e-9 || fail "FSDP run: median $(get "$tmp/fsdp.json" measured_step_s)"
near "$(get "$tmp/fsdp.json" measured_step_s_min)" 1.0585 1e-9 || fail "FSDP run: min"
near "$(get "$tmp/fsdp.json" measured_step_s_max)" 1.3658 1e-9 || fail "FSDP run: max"
"$bin" compare $d/gpt-local-dp2-h100.log "${vm[@]}" -f json >"$tmp/ddp.json" 2>/dev/null || fail "compare the DDP twin"
python3 -c 'import json,sys; f, d = (json.load(open(p))["predicted_step_s"] for p in sys.argv[1:]); sys.exit(not f - d > 0.2)' \
  "$tmp/fsdp.json" "$tmp/ddp.json" || fail "the FSDP run is not predicted slower than its DDP twin by its hooks"
"$bin" import megatron-args -s training.fused_adam=false -s comm_overlap.transformer_engine=false \
  -o "$tmp/fsdp-launch.json" -- $(cat $d/gpt-local-dp2-fsdp-h100.launch) 2>/dev/null || fail "import the FSDP launch line"
grep -q '"use_megatron_fsdp": true' "$tmp/fsdp-launch.json" || fail "the FSDP launch line's scenario"
echo "compare: $log and the Megatron-LM runs parsed and compared"
