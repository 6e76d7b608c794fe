#!/usr/bin/env bash
# Absurd and non-finite values end with one clear line on stderr, never a crash (status > 128),
# a hang or a result: 10^30 parameters, 10^9 GPUs, infinite / zero / negative / denormal sizes
# and rates, profiles whose rates would make a duration infinite or outlast the simulated clock.
# Input errors exit 2; a run whose simulated time would pass 2^62 ns (146 years) is refused by
# the executor (exit 1 or 2, the cli decides) with a message naming the task.
set -uo pipefail
bin=$1 src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
good="$src/scenarios/llama3-8b-h100-8gpu.json"
tiny="$src/tests/data/io/models/tiny.json"
fail=0 n=0
# expect NAME STATUSES PATTERN -- ARGS...: status in STATUSES ("2" or "1|2"), one stderr line matching PATTERN
expect() {
  local name=$1 statuses=$2 pattern=$3; shift 4
  n=$((n + 1))
  timeout 60 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local st=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if ! [[ "$st" =~ ^($statuses)$ ]] || [ "$lines" -ne 1 ] || ! grep -qE -- "$pattern" "$tmp/err" || [ -s "$tmp/out" ]; then
    echo "FAIL: $name: status $st, $lines stderr lines, stdout $(wc -c <"$tmp/out") bytes:"; head -c 2000 "$tmp/err"; fail=1
  fi
}
# a copy of the fixture profile with one compute/network value replaced
profile() { # NAME SECTION KEY VALUE
  sed -E "s/(\"$3\": \{\"value\": )[^,]*/\1$4/" "$src/tests/data/io/hwprofiles/test-gpu.json" >"$tmp/$1.json"
  grep -q "\"$3\": {\"value\": $4" "$tmp/$1.json" || { echo "FAIL: could not edit $3 in the fixture"; fail=1; }
}
scenario_with() { # NAME PROFILE: tiny model, TP2 PP2 on 16 GPUs of PROFILE
  printf '{"schema_version": 1, "model": "%s", "hardware": {"profile": "%s", "num_gpus": 16},
  "training": {"seq_length": 1024, "global_batch_size": 8},
  "parallel": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "sequence_parallel": true}}\n' \
    "$tiny" "$2" >"$tmp/$1"
}

expect gpus-1e9 2 '/hardware/num_gpus: 1000000000 is absurdly large' -- run "$good" --set hardware.num_gpus=1000000000
expect params-1e30 2 '/model/hidden_size: .*(absurdly large|beyond 2\^53)' -- \
  run "$good" --set 'model={"base": "llama3-8b", "hidden_size": 1e30}'
expect layers-1e15 2 '/model/num_layers: .*absurdly large' -- run "$good" --set model.num_layers=1e15
expect seq-inf 2 '/training/seq_length: .*not finite' -- run "$good" --set training.seq_length=1e999
expect seq-zero 2 '/training/seq_length: expected a positive integer, got 0' -- run "$good" --set training.seq_length=0
expect mbs-negative 2 '/training/micro_batch_size: expected a positive integer, got -1' -- \
  run "$good" --set training.micro_batch_size=-1
expect gbs-fraction 2 '/training/global_batch_size: .*not an integer' -- run "$good" --set training.global_batch_size=1.5
expect nan-set 2 '/hardware/num_gpus: expected a positive integer, got "NaN"' -- run "$good" --set hardware.num_gpus=NaN
printf '{"schema_version": 1, "model": "llama3-8b", "hardware": {"profile": "h100-sxm", "num_gpus": NaN},
 "training": {"seq_length": 8192, "global_batch_size": 128}}\n' >"$tmp/nan.json"
expect nan-in-file 2 'nan\.json:1:[0-9]+: .*NaN and Infinity are not JSON numbers' -- run "$tmp/nan.json"

for case in "zero-nvlink network nvlink_bytes_per_ns 0" "negative-nic network nic_bytes_per_ns -46" \
  "denormal-nvlink network nvlink_bytes_per_ns 1e-300" "tiny-flops compute peak_bf16_flops_per_ns 1e-300" \
  "zero-efficiency compute gemm_efficiency 0" "huge-sm-count compute sm_count 40000" \
  "inf-hbm compute hbm_bytes_per_ns 1e999"; do
  read -r -a words <<<"$case"; set -- "${words[@]}"
  profile "$1" "$2" "$3" "$4"
  scenario_with "$1-scenario.json" "$tmp/$1.json"
  expect "profile-$1" 2 "$1\.json: /$2/$3/value: expected" -- run "$tmp/$1-scenario.json"
done

# Every rate at its floor and the largest model the loader accepts: durations are finite but
# far beyond 146 years; the executor refuses instead of overflowing its clock.
cp "$src/tests/data/io/hwprofiles/test-gpu.json" "$tmp/slow.json"
for k in hbm_bytes_per_ns peak_bf16_flops_per_ns peak_fp8_flops_per_ns nvlink_bytes_per_ns nvlink_ce_bytes_per_ns \
  nic_bytes_per_ns cta_bytes_per_ns; do
  sed -i -E "s/(\"$k\": \{\"value\": )[^,]*/\11e-3/" "$tmp/slow.json"
done
printf '{"schema_version": 1, "model": {"base": "%s", "hidden_size": 10000000, "ffn_hidden_size": 100000000,
  "num_attention_heads": 16, "num_query_groups": 16, "num_layers": 2},
 "hardware": {"profile": "%s", "num_gpus": 1}, "training": {"seq_length": 100000, "global_batch_size": 1}}\n' \
  "$tiny" "$tmp/slow.json" >"$tmp/forever.json"
expect horizon '1|2' 'simulated time would pass 4611686018427387904 ns \(146 years\): task' -- run "$tmp/forever.json"

[ "$fail" = 0 ] && echo "absurd input: $n cases refused with one clear line"
exit $fail
