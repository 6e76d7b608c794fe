#!/usr/bin/env bash
# Bad input: exit status 2 and exactly one line on stderr naming the file, the JSON path and
# what was expected; nothing on stdout; never a crash (status > 128) or a hang.
set -uo pipefail
bin=$1 src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
good="$src/scenarios/llama3-8b-h100-8gpu.json"
fail=0 n=0
# expect NAME PATTERN -- ARGS...: status 2, one stderr line matching PATTERN
expect() {
  local name=$1 pattern=$2; shift 3
  n=$((n + 1))
  timeout 20 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local st=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$st" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qE -- "$pattern" "$tmp/err" || [ -s "$tmp/out" ]; then
    echo "FAIL: $name: status $st, $lines stderr lines, stdout $(wc -c <"$tmp/out") bytes:"; cat "$tmp/err"; fail=1
  fi
}
mk() { printf '%s' "$2" >"$tmp/$1"; }
mk empty.json ''
mk trunc.json '{"schema_version": 1, "model": "llama3-8b", "hardware": {"profile": "h100-sxm"'
mk notobj.json '[1, 2, 3]'
head -c 4096 /dev/urandom >"$tmp/binary.json" 2>/dev/null || true
expect missing-file 'nonexistent\.json' -- run "$tmp/nonexistent.json"
expect empty 'empty\.json' -- run "$tmp/empty.json"
expect truncated 'trunc\.json' -- run "$tmp/trunc.json"
expect not-object 'notobj\.json' -- run "$tmp/notobj.json"
expect binary 'binary\.json' -- run "$tmp/binary.json"
expect unknown-set-key 'did you mean' -- run "$good" --set parallel.tensor_model_paralel_size=2
expect tp-not-dividing-heads '/parallel/tensor_model_parallel_size' -- run "$good" --set parallel.tensor_model_parallel_size=3
expect gpus-not-divisible '/hardware/num_gpus' -- run "$good" --set hardware.num_gpus=12 --set parallel.tensor_model_parallel_size=8
expect layers-not-divisible 'num_layers' -- run "$good" --set parallel.pipeline_model_parallel_size=3 --set hardware.num_gpus=24 --set training.global_batch_size=120
expect gbs-not-divisible '/training/global_batch_size' -- run "$good" --set training.global_batch_size=101
# The precision-aware optimizer's own checks (Megatron-Core's OptimizerConfig and get_megatron_optimizer)
expect pa-no-distopt '/training/use_precision_aware_optimizer: needs the distributed optimizer' -- run "$good" --set training.use_precision_aware_optimizer=true --set ddp.use_distributed_optimizer=false
expect pa-torch-adamw '/training/use_precision_aware_optimizer: needs Transformer Engine.s FusedAdam' -- run "$good" --set training.use_precision_aware_optimizer=true --set training.fused_adam=false
expect moments-without-pa '/training/exp_avg_dtype: can only be "fp32" without /training/use_precision_aware_optimizer' -- run "$good" --set 'training.exp_avg_dtype="bf16"'
expect moment-dtype '/training/exp_avg_sq_dtype' -- run "$good" --set training.use_precision_aware_optimizer=true --set 'training.exp_avg_sq_dtype="fp64"'
# The host: a speed in (0.01, 100) of the profile's measurement host; the framework by name
expect host-speed-zero '/hardware/host_speed: expected a number in \[0.01, 100), got 0' -- run "$good" --set hardware.host_speed=0
expect framework-name '/training/framework: expected one of "megatron_core", "pytorch"' -- run "$good" --set training.framework=jax
# Token dropping: Megatron-Core's TransformerConfig checks
qwen="$src/scenarios/qwen3-30b-a3b-h100-16gpu-ep-overlap-off.json"
expect pad-without-capacity '/model/moe_pad_expert_input_to_capacity: needs /model/moe_expert_capacity_factor' -- run "$qwen" --set model.moe_pad_expert_input_to_capacity=true
expect capacity-zero '/model/moe_expert_capacity_factor: expected a capacity factor > 0' -- run "$qwen" --set model.moe_expert_capacity_factor=0
# Megatron-Core's uneven stages and pipeline layouts (workload/split.h): each refusal at its key
expect uneven-rest '/parallel/num_layers_in_first_pipeline_stage: leaves 25 layers, not divisible by the 2 middle' -- run "$good" --set parallel.pipeline_model_parallel_size=4 --set hardware.num_gpus=8 --set parallel.num_layers_in_first_pipeline_stage=3 --set parallel.num_layers_in_last_pipeline_stage=4
expect uneven-with-account '/parallel/num_layers_in_last_pipeline_stage: cannot be set together with account_for' -- run "$good" --set parallel.num_layers_in_last_pipeline_stage=4 --set parallel.account_for_loss_in_pipeline_split=true
expect layout-letter '^penumbra: --set: /parallel/pipeline_model_parallel_layout: invalid layer character .x. in virtual stage 1 ' -- run "$good" --set 'parallel.pipeline_model_parallel_layout=Et*16|t*16xL'
expect layout-stages '/parallel/pipeline_model_parallel_layout: has 3 virtual stages, not a multiple of pipeline_model_parallel_size 2' -- run "$good" --set parallel.pipeline_model_parallel_size=2 --set 'parallel.pipeline_model_parallel_layout=E|t*16|t*16L'
expect layout-layers "/parallel/pipeline_model_parallel_layout: holds 31 decoder layers 't', the model's num_layers is 32" -- run "$good" --set 'parallel.pipeline_model_parallel_layout=Et*31L'
expect layout-list '/parallel/pipeline_model_parallel_layout/0/1: expected "embedding", "decoder", "mtp" or "loss"' -- run "$good" --set 'parallel.pipeline_model_parallel_layout=[["embedding", "transformer"]]'
expect layout-vpp '/parallel/virtual_pipeline_model_parallel_size: 4 conflicts with pipeline_model_parallel_layout' -- run "$good" --set parallel.pipeline_model_parallel_size=2 --set parallel.virtual_pipeline_model_parallel_size=4 --set 'parallel.pipeline_model_parallel_layout=E(t*8|)*3,t*8L'
expect negative-size '/training/seq_length' -- run "$good" --set training.seq_length=-5
expect wrong-type '/training/micro_batch_size' -- run "$good" --set 'training.micro_batch_size="two"'
expect bad-format 'format' -- run "$good" --format yaml
# what cJSON accepts but would read wrong: a NUL character cuts a string ("bf16\u0000junk" ran as
# bf16), a key written twice; a lone surrogate is no character
sed 's/"bf16"/"bf16\\u0000junk"/' "$good" >"$tmp/nul.json"
sed 's/"precision"/"precision\\u0000x"/' "$good" >"$tmp/nulkey.json"
sed 's/"bf16"/"bf16\\ud800"/' "$good" >"$tmp/surrogate.json"
sed 's/"precision": "bf16"/"precision": "bf16", "precision": "fp8"/' "$good" >"$tmp/dup.json"
expect nul-in-string '^penumbra: [^ ]*nul\.json: /training/precision: expected a string without NUL characters \(\\u0000\), got "bf16\\u0000junk"$' -- run "$tmp/nul.json"
expect nul-in-key '^penumbra: [^ ]*nulkey\.json: /training/precision\\u0000x: expected a key without NUL characters' -- run "$tmp/nulkey.json"
expect nul-in-set '^penumbra: --set: /training/precision: expected a string without NUL characters' -- run "$good" --set 'training.precision="bf16\u0000junk"'
expect lone-surrogate '^penumbra: [^ ]*surrogate\.json:[0-9]+:[0-9]+: lone UTF-16 surrogate \\ud800 ' -- run "$tmp/surrogate.json"
expect duplicate-key '^penumbra: [^ ]*dup\.json: /training/precision: duplicate key$' -- run "$tmp/dup.json"
# echoed input is cut: a 1 MiB key, a 100 kB --set argument give short lines
{ printf '{"schema_version": 1, "'; head -c 1048576 /dev/zero | tr '\0' a; printf '": 1}'; } >"$tmp/bigkey.json"
expect huge-key '^penumbra: [^ ]*bigkey\.json: /a{60}\.\.\. \(1048576 bytes\): unknown key .{0,200}$' -- run "$tmp/bigkey.json"
expect huge-set '^penumbra: --set: "a{60}\.\.\." \(100000 bytes\): expected dotted\.key=value' -- run "$good" --set "$(head -c 100000 /dev/zero | tr '\0' a)"
expect unknown-command 'unknown command' -- frobnicate
[ "$fail" = 0 ] && echo "bad input: $n cases rejected cleanly"
exit $fail
