#!/usr/bin/env bash
# penumbra import / export megatron-args: every shipped scenario exported as a Megatron-LM launch
# line and imported back predicts the same iteration time, and import -> export -> import is a
# fixed point; every mapped argument lands on its key; an argument Megatron-LM accepts but penumbra
# does not model is listed as ignored; one Megatron-LM rejects is an error with a did-you-mean.
set -euo pipefail
bin=$1 src=$2
cd "$src"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
iter() { "$bin" run "$1" -f json | grep -m1 '"iteration_time_s"'; }

for s in scenarios/*.json; do
  "$bin" export megatron-args "$s" >"$tmp/line" 2>/dev/null || fail "export $s"
  prof=$(sed -n 's/.*"profile": "\([^"]*\)".*/\1/p' "$s")
  eval "set -- $(cat "$tmp/line")"
  "$bin" import megatron-args -s hardware.profile="$prof" -o "$tmp/s1.json" -- "$@" 2>"$tmp/err" ||
    fail "import of the export of $s: $(cat "$tmp/err")"
  [ "$(iter "$s")" = "$(iter "$tmp/s1.json")" ] || fail "$s and its round trip predict different iteration times"
  "$bin" export megatron-args "$tmp/s1.json" >"$tmp/line2" 2>/dev/null
  cmp -s "$tmp/line" "$tmp/line2" || fail "$s: export -> import -> export is not a fixed point"
  eval "set -- $(cat "$tmp/line2")"
  "$bin" import megatron-args -s hardware.profile="$prof" -o "$tmp/s2.json" -- "$@" 2>/dev/null
  cmp -s "$tmp/s1.json" "$tmp/s2.json" || fail "$s: import -> export -> import is not a fixed point"
done

# every mapped argument, on one whole launch line
key() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d[sys.argv[2]][sys.argv[3]]))' "$@"; }
# expect_keys FILE WHAT "SECTION KEY VALUE"...: each key of scenario FILE holds VALUE (JSON, spaces dropped)
expect_keys() {
  local f=$1 what=$2 kv
  shift 2
  for kv in "$@"; do
    set -- $kv
    [ "$(key "$f" "$1" "$2" | tr -d ' ')" = "$3" ] || fail "$what $1.$2: expected $3, got $(key "$f" "$1" "$2")"
  done
}
# round_trip NAME WHAT: $tmp/NAME.json exported into $tmp/NAME.line (kept for the caller's checks) and
# imported back on 8 GPUs predicts the same time
round_trip() {
  local name=$1 what=$2
  "$bin" export megatron-args "$tmp/$name.json" >"$tmp/$name.line" 2>/dev/null || fail "$what export"
  eval "set -- $(sed 's/^.*pretrain_gpt.py//' "$tmp/$name.line")"
  "$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/${name}2.json" -- "$@" 2>/dev/null || fail "$what re-import"
  [ "$(iter "$tmp/$name.json")" = "$(iter "$tmp/${name}2.json")" ] || fail "$what: import -> export -> import moved the prediction"
}
"$bin" import megatron-args -o "$tmp/all.json" -- CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 FOO=bar \
  python3 -m torch.distributed.run --nproc_per_node 8 --nnodes=4 --master_port 6000 pretrain_gpt.py \
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
  --group-query-attention --num-query-groups 8 --kv-channels 128 --swiglu --normalization RMSNorm \
  --vocab-size 128256 --make-vocab-size-divisible-by 128 --untie-embeddings-and-output-weights \
  --disable-bias-linear --hidden-dropout 0.0 --attention-dropout 0.0 --max-position-embeddings 8192 \
  --position-embedding-type rope --seq-length 8192 --micro-batch-size 1 --global-batch-size 256 --bf16 \
  --fp8-format hybrid --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 4 \
  --num-layers-per-virtual-pipeline-stage 4 --context-parallel-size 2 --cp-comm-type a2a \
  --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --ddp-bucket-size 40000000 \
  --accumulate-allreduce-grads-in-fp32 --tp-comm-overlap --overlap-p2p-communication-warmup-flush \
  --recompute-granularity full --recompute-method block --recompute-num-layers 2 \
  --no-gradient-accumulation-fusion --no-bias-swiglu-fusion --no-rope-fusion --no-bias-dropout-fusion \
  --no-masked-softmax-fusion --no-persist-layer-norm --lr 3e-4 --data-path /data/a 0.5 /data/b \
  --transformer-impl transformer_engine 2>"$tmp/err" || fail "import of the full line: $(cat "$tmp/err")"
while read -r section k want; do
  got=$(key "$tmp/all.json" "$section" "$k")
  [ "$got" = "$want" ] || fail "$section.$k: expected $want, got $got"
done <<'KEYS'
model num_layers 32
model hidden_size 4096
model ffn_hidden_size 14336
model num_attention_heads 32
model num_query_groups 8
model kv_channels 128
model gated_linear_unit true
model activation "swiglu"
model normalization "RMSNorm"
model vocab_size 128256
model make_vocab_size_divisible_by 128
model untie_embeddings_and_output_weights true
model add_bias_linear false
model hidden_dropout 0
model attention_dropout 0
model max_position_embeddings 8192
model position_embedding_type "rope"
hardware num_gpus 32
training seq_length 8192
training micro_batch_size 1
training global_batch_size 256
training precision "fp8"
training gradient_accumulation_fusion false
training bias_activation_fusion false
training apply_rope_fusion false
training bias_dropout_fusion false
training masked_softmax_fusion false
training persist_layer_norm false
parallel tensor_model_parallel_size 2
parallel sequence_parallel true
parallel pipeline_model_parallel_size 4
parallel virtual_pipeline_model_parallel_size 2
parallel context_parallel_size 2
ddp use_distributed_optimizer true
ddp overlap_grad_reduce true
ddp overlap_param_gather true
ddp bucket_size 40000000
ddp grad_reduce_in_fp32 true
comm_overlap tp_comm_overlap true
comm_overlap cp_comm_type "a2a"
comm_overlap overlap_p2p_comm_warmup_flush true
recompute recompute_granularity "full"
recompute recompute_method "block"
recompute recompute_num_layers 2
env CUDA_DEVICE_MAX_CONNECTIONS 1
env NCCL_NVLS_ENABLE 0
KEYS
for ignored in "ignored: FOO=bar (not modelled)" "ignored: --lr 3e-4 (not modelled)" \
  "ignored: --data-path /data/a 0.5 /data/b (not modelled)"; do
  grep -qxF "penumbra import: $ignored" "$tmp/err" || fail "expected \"$ignored\" on stderr: $(cat "$tmp/err")"
done
# the fusions switched off on that line are priced now, none said as not priced
! grep -q "false is not priced" "$tmp/err" || fail "the unfused RoPE and bias-dropout-add are priced, not warned"
! grep -q "gradient_accumulation_fusion: false is not priced" "$tmp/err" || fail "gradient_accumulation_fusion off is priced, not warned"
[ "$(grep -c . "$tmp/err")" -le 8 ] || fail "too much on stderr: $(cat "$tmp/err")"

# the other mapped arguments, on a second line
"$bin" import megatron-args -o "$tmp/rest.json" -- NVTE_FWD_LAYERNORM_SM_MARGIN=16 NVTE_BWD_LAYERNORM_SM_MARGIN=8 \
  NCCL_MIN_CTAS=4 NCCL_MAX_CTAS=16 CUDA_DEVICE_MAX_CONNECTIONS=32 torchrun --nproc_per_node 8 --nnodes 8 \
  pretrain_gpt.py --num-layers 14 --hidden-size 2048 --num-attention-heads 16 --squared-relu --add-qkv-bias \
  --use-rotary-position-embeddings --vocab-size 32000 --seq-length 4096 --max-position-embeddings 4096 \
  --micro-batch-size 1 --global-batch-size 256 --bf16 --num-experts 16 --moe-router-topk 2 \
  --moe-ffn-hidden-size 1024 --moe-shared-expert-intermediate-size 512 --mtp-num-layers 1 \
  --activation-func-clamp-value 7.5 --expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --moe-token-dispatcher-type alltoall \
  --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 4 \
  --num-virtual-stages-per-pipeline-rank 2 --account-for-embedding-in-pipeline-split \
  --account-for-loss-in-pipeline-split --microbatch-group-size-per-virtual-pipeline-stage 4 \
  --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --no-align-param-gather \
  --overlap-param-gather-with-optimizer-step --num-distributed-optimizer-instances 2 --ddp-average-in-collective \
  --no-overlap-p2p-communication --defer-embedding-wgrad-compute --overlap-moe-expert-parallel-comm \
  --delay-wgrad-compute --moe-shared-expert-overlap --recompute-activations --recompute-modules core_attn moe_act \
  2>"$tmp/err" || fail "import of the second line: $(cat "$tmp/err")"
while read -r section k want; do
  got=$(key "$tmp/rest.json" "$section" "$k")
  [ "$got" = "$want" ] || fail "$section.$k: expected $want, got $got"
done <<'KEYS'
model activation "squared_relu"
model gated_linear_unit false
model add_qkv_bias true
model position_embedding_type "rope"
model num_moe_experts 16
model moe_router_topk 2
model moe_ffn_hidden_size 1024
model moe_shared_expert_intermediate_size 512
model mtp_num_layers 1
model activation_func_clamp_value 7.5
hardware num_gpus 64
parallel expert_model_parallel_size 8
parallel expert_tensor_parallel_size 1
parallel moe_token_dispatcher_type "alltoall"
parallel virtual_pipeline_model_parallel_size 2
parallel account_for_embedding_in_pipeline_split true
parallel account_for_loss_in_pipeline_split true
parallel microbatch_group_size_per_vp_stage 4
ddp align_param_gather false
ddp overlap_param_gather_with_optimizer_step true
ddp num_distributed_optimizer_instances 2
ddp average_in_collective true
comm_overlap overlap_p2p_comm false
comm_overlap defer_embedding_wgrad_compute true
comm_overlap overlap_moe_expert_parallel_comm true
comm_overlap delay_wgrad_compute true
comm_overlap moe_shared_expert_overlap true
recompute recompute_granularity "selective"
recompute recompute_modules ["core_attn", "moe_act"]
env NVTE_FWD_LAYERNORM_SM_MARGIN 16
env NVTE_BWD_LAYERNORM_SM_MARGIN 8
env NCCL_MIN_CTAS 4
env NCCL_MAX_CTAS 16
env CUDA_DEVICE_MAX_CONNECTIONS 32
KEYS

# MoE, the legacy VPP spelling, --spec, and the GPU count from --set
"$bin" import megatron-args -s hardware.num_gpus=16 -- --num-layers 8 --hidden-size 1024 --num-attention-heads 8 \
  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 --vocab-size 32000 \
  --bf16 --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 512 --expert-model-parallel-size 8 \
  --moe-token-dispatcher-type alltoall --pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 2 \
  --spec my.module layer_spec --no-bias-gelu-fusion >"$tmp/moe.json" 2>"$tmp/err" || fail "MoE import: $(cat "$tmp/err")"
for kv in "model num_moe_experts 16" "model moe_router_topk 4" "model moe_ffn_hidden_size 512" \
  "parallel expert_model_parallel_size 8" 'parallel moe_token_dispatcher_type "alltoall"' \
  "parallel virtual_pipeline_model_parallel_size 2" "hardware num_gpus 16" "model ffn_hidden_size 4096" \
  "model hidden_dropout 0.1"; do
  set -- $kv
  [ "$(key "$tmp/moe.json" "$1" "$2")" = "$3" ] || fail "$1.$2: expected $3, got $(key "$tmp/moe.json" "$1" "$2")"
done
grep -q "warning: --spec my.module layer_spec: a custom layer spec" "$tmp/err" || fail "--spec must be warned about"
grep -q "bias_activation_fusion: false is not priced.*the experts' unfused bias and activation" "$tmp/err" ||
  fail "an unfused switch that is not priced must be said: $(cat "$tmp/err")"
grep -q "custom layer spec --spec my.module layer_spec" "$tmp/moe.json" || fail "--spec must be recorded"
grep -q "virtual-pipeline-model-parallel-size: not an argument" "$tmp/err" || fail "the legacy spelling must be said"
[ "$(key "$tmp/moe.json" model moe_grouped_gemm)" = false ] ||
  fail "without --moe-grouped-gemm Megatron-LM runs SequentialMLP: model.moe_grouped_gemm false"

# MLA, --moe-layer-freq's list expression and MTP: Megatron-LM's defaults where the flags are left
# out (q_lora_rank None, kv_lora_rank 32), the expression read into one entry per layer, the export
# written back as runs, a bad expression refused
mla=(--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024
  --micro-batch-size 1 --global-batch-size 16 --vocab-size 32000 --bf16 --num-experts 8 --moe-router-topk 2
  --moe-ffn-hidden-size 512 --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall
  --multi-latent-attention --qk-layernorm --mtp-num-layers 1)
"$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/mla.json" -- "${mla[@]}" --moe-layer-freq '([0]*1+[1]*1)*2' \
  2>"$tmp/err" || fail "MLA import: $(cat "$tmp/err")"
expect_keys "$tmp/mla.json" MLA "model q_lora_rank null" "model kv_lora_rank 32" "model qk_layernorm true" \
  "model mtp_num_layers 1" "model moe_layer_freq [0,1,0,1]"
round_trip mla MLA
grep -q -- "--moe-layer-freq '\[0\]\*1+\[1\]\*1+\[0\]\*1+\[1\]\*1'" "$tmp/mla.line" ||
  fail "--moe-layer-freq must be exported as runs: $(cat "$tmp/mla.line")"
grep -q -- "--kv-lora-rank 32 " "$tmp/mla.line" && ! grep -q -- "--q-lora-rank" "$tmp/mla.line" ||
  fail "MLA's sizes must be exported as Megatron-LM reads them: $(cat "$tmp/mla.line")"
set +e
"$bin" import megatron-args -s hardware.num_gpus=8 -- "${mla[@]}" --moe-layer-freq '[0,2]*2' >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q -- "--moe-layer-freq \[0,2\]\*2: expected an integer >= 1 or a list expression" "$tmp/err" ||
  fail "a bad --moe-layer-freq must exit 2 with its message (rc $rc): $(cat "$tmp/err")"

# The precision-aware optimizer: its flag and dtypes land on their keys (--main-grads-dtype bf16 on
# the gradient buffer, as arguments.py ties them), export gives them back, the round trip is a
# fixed point, and the moments' dtype changes the optimizer's memory
pa=(--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024
  --micro-batch-size 1 --global-batch-size 16 --vocab-size 32000 --bf16 --use-distributed-optimizer
  --use-precision-aware-optimizer --main-grads-dtype bf16 --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)
"$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/pa.json" -- "${pa[@]}" 2>"$tmp/err" ||
  fail "precision-aware import: $(cat "$tmp/err")"
expect_keys "$tmp/pa.json" precision-aware "training use_precision_aware_optimizer true" \
  'training exp_avg_dtype "bf16"' 'training exp_avg_sq_dtype "bf16"' "ddp grad_reduce_in_fp32 false"
round_trip pa precision-aware
grep -q -- "--use-precision-aware-optimizer .*--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16" "$tmp/pa.line" ||
  fail "the precision-aware optimizer must be exported: $(cat "$tmp/pa.line")"
opt() { "$bin" run "$1" -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["memory"]["optimizer_gib"])'; }
"$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/nopa.json" -- "${pa[@]:0:18}" 2>/dev/null || fail "import without the optimizer flags"
python3 - "$(opt "$tmp/pa.json")" "$(opt "$tmp/nopa.json")" <<'PY' || fail "precision-aware: bf16 moments and 16-bit master remainders must hold half the default's optimizer bytes"
import sys
pa, default = map(float, sys.argv[1:])
assert abs(pa / default - 6 / 12) < 1e-6, (pa, default)
PY
"$bin" export megatron-args "$tmp/nopa.json" 2>/dev/null | grep -qE -- "--(main-params|exp-avg|exp-avg-sq)-dtype" &&
  fail "the optimizer's default fp32 dtypes must not be exported"

# Token dropping: the capacity factor and the pad land on the model's keys and come back out; a
# negative factor is Megatron's None (dropless), written nowhere
"$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/drop.json" -- "${mla[@]}" \
  --moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity 2>"$tmp/err" || fail "token drop import: $(cat "$tmp/err")"
expect_keys "$tmp/drop.json" "token drop" "model moe_expert_capacity_factor 1.25" \
  "model moe_pad_expert_input_to_capacity true"
round_trip drop "token drop"
grep -q -- "--moe-expert-capacity-factor 1.25 .*--moe-pad-expert-input-to-capacity" "$tmp/drop.line" ||
  fail "token drop must be exported: $(cat "$tmp/drop.line")"
"$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/nodrop.json" -- "${mla[@]}" --moe-expert-capacity-factor -1 \
  2>/dev/null || fail "a negative capacity factor must import (Megatron's None)"
"$bin" export megatron-args "$tmp/nodrop.json" 2>/dev/null | grep -q -- "--moe-expert-capacity-factor" &&
  fail "a dropless model must not export a capacity factor"

# Megatron-Core's uneven stages and pipeline layouts (workload/split.h): the arguments land on their
# keys (a layout as written; the loader reads it and derives the virtual size), export gives them
# back (the layout written short in Megatron's syntax, quoted for the shell, without a virtual
# size beside it: Megatron-LM refuses both), predicting the same time, and the round trips are
# fixed points
tiny=(--num-layers 8 --hidden-size 64 --num-attention-heads 2 --seq-length 64 --max-position-embeddings 64
  --global-batch-size 8 --vocab-size 100 --bf16)
while IFS=';' read -r args gpus want; do
  eval "set -- $args"
  "$bin" import megatron-args -s hardware.num_gpus="$gpus" -o "$tmp/split.json" -- "${tiny[@]}" "$@" 2>"$tmp/err" ||
    fail "import $args: $(cat "$tmp/err")"
  for kv in $want; do
    k=${kv%%=*} v=${kv#*=}
    [ "$(key "$tmp/split.json" parallel "$k")" = "$v" ] ||
      fail "$args: parallel.$k, expected $v, got $(key "$tmp/split.json" parallel "$k")"
  done
  "$bin" export megatron-args "$tmp/split.json" >"$tmp/split.line" 2>/dev/null || fail "export $args"
  ! grep -q -- "--pipeline-model-parallel-layout.*--num-virtual-stages\|--num-virtual-stages.*--pipeline-model-parallel-layout" \
    "$tmp/split.line" || fail "$args: a layout and a virtual size exported together: $(cat "$tmp/split.line")"
  eval "set -- $(cat "$tmp/split.line")"
  "$bin" import megatron-args -o "$tmp/split1.json" -- "$@" 2>/dev/null || fail "import of the export of $args"
  [ "$(iter "$tmp/split.json")" = "$(iter "$tmp/split1.json")" ] || fail "$args: the round trip predicts another time"
  "$bin" export megatron-args "$tmp/split1.json" >"$tmp/split.line2" 2>/dev/null
  cmp -s "$tmp/split.line" "$tmp/split.line2" || fail "$args: export -> import -> export is not a fixed point"
  eval "set -- $(cat "$tmp/split.line2")"
  "$bin" import megatron-args -o "$tmp/split2.json" -- "$@" 2>/dev/null
  cmp -s "$tmp/split1.json" "$tmp/split2.json" || fail "$args: import -> export -> import is not a fixed point"
done <<'SPLIT'
--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 1;4;pipeline_model_parallel_size=4 num_layers_in_first_pipeline_stage=1 num_layers_in_last_pipeline_stage=1
--pipeline-model-parallel-size 4 --decoder-last-pipeline-num-layers 2 --num-virtual-stages-per-pipeline-rank 2;4;num_layers_in_last_pipeline_stage=2 virtual_pipeline_model_parallel_size=2
--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'E(t*2|)*3,ttL';2;pipeline_model_parallel_layout="E(t*2|)*3,ttL"
--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*4,,|t*4L';2;pipeline_model_parallel_layout="Et*4,,|t*4L"
SPLIT
grep -q -- "--pipeline-model-parallel-layout 'Et\*4|t\*4L'" "$tmp/split.line" || fail "the layout exported: $(cat "$tmp/split.line")"
# what Megatron-LM refuses: a layout beside a virtual size, uneven stages with layers per virtual
# stage; a layout Megatron-Core refuses
while IFS=';' read -r args why; do
  read -r -a words <<<"$args"
  rc=0
  "$bin" import megatron-args -s hardware.num_gpus=2 -- "${tiny[@]}" --pipeline-model-parallel-size 2 "${words[@]}" \
    >/dev/null 2>"$tmp/err" || rc=$?
  [ $rc = 2 ] && grep -q -- "$why" "$tmp/err" || fail "$args: exit $rc: $(cat "$tmp/err")"
done <<'BAD'
--pipeline-model-parallel-layout Et*4|t*4L --num-virtual-stages-per-pipeline-rank 1;gives the virtual pipeline size itself
--decoder-first-pipeline-num-layers 4 --num-layers-per-virtual-pipeline-stage 2;wants --num-virtual-stages-per-pipeline-rank
--pipeline-model-parallel-layout Et*4|t*4;/parallel/pipeline_model_parallel_layout: the last layer must be the loss
BAD

# the local layers and the attention backends (training.transformer_impl / attention_backend), and
# gradient reduction in fp32, Megatron-LM's default with --bf16 (arguments.py) unless
# --grad-reduce-in-bf16; export gives each back
small=(--num-layers 2 --hidden-size 64 --num-attention-heads 2 --seq-length 64 --max-position-embeddings 64
  --global-batch-size 8 --vocab-size 100 --bf16)
while IFS='|' read -r args impl backend fp32 back; do
  eval "set -- $args"
  "$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/impl.json" -- "${small[@]}" "$@" 2>"$tmp/err" ||
    fail "import $args: $(cat "$tmp/err")"
  [ "$(key "$tmp/impl.json" training transformer_impl 2>/dev/null || echo absent)" = "$impl" ] ||
    fail "$args: transformer_impl, expected $impl"
  [ "$(key "$tmp/impl.json" training attention_backend 2>/dev/null || echo absent)" = "$backend" ] ||
    fail "$args: attention_backend, expected $backend"
  [ "$(key "$tmp/impl.json" ddp grad_reduce_in_fp32)" = "$fp32" ] || fail "$args: grad_reduce_in_fp32, expected $fp32"
  ! grep -q "not modelled in this version" "$tmp/err" || fail "$args: modelled now: $(cat "$tmp/err")"
  "$bin" export megatron-args "$tmp/impl.json" >"$tmp/impl.args" 2>/dev/null || fail "export $args"
  for w in $back; do grep -q -- " $w" "$tmp/impl.args" || fail "$args: export lacks $w: $(cat "$tmp/impl.args")"; done
done <<'IMPL'
|absent|absent|true|
--transformer-impl local|"local"|absent|true|--transformer-impl local
--attention-backend unfused --grad-reduce-in-bf16|absent|"unfused"|false|--attention-backend unfused --grad-reduce-in-bf16
--transformer-impl local --attention-backend local --accumulate-allreduce-grads-in-fp32|"local"|"local"|true|local
--main-grads-dtype bf16|absent|absent|false|--grad-reduce-in-bf16
IMPL
# what Megatron-LM refuses with the local layers: fp8 and context parallelism (exit 2, one line)
for bad in "--fp8-format hybrid|/training/transformer_impl" "--context-parallel-size 2|/parallel/context_parallel_size"; do
  rc=0
  "$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/bad-impl.json" -- "${small[@]}" --transformer-impl local \
    ${bad%%|*} 2>"$tmp/err" >/dev/null || rc=$?
  [ $rc = 2 ] && [ "$(grep -c . "$tmp/err")" -ge 1 ] && grep -q -- "${bad##*|}" "$tmp/err" && [ ! -e "$tmp/bad-impl.json" ] ||
    fail "--transformer-impl local ${bad%%|*}: exit $rc: $(cat "$tmp/err")"
done

# CUDA graphs: the deprecated spellings (arguments.py ~611-641) land on cuda_graph_impl / _modules
while IFS='|' read -r args impl mods; do
  eval "set -- $args"
  "$bin" import megatron-args -s hardware.num_gpus=8 -o "$tmp/cg.json" -- "${small[@]}" "$@" 2>"$tmp/err" ||
    fail "import $args: $(cat "$tmp/err")"
  [ "$(key "$tmp/cg.json" training cuda_graph_impl)" = "$impl" ] || fail "$args: cuda_graph_impl, expected $impl"
  [ "$(key "$tmp/cg.json" training cuda_graph_modules 2>/dev/null || echo absent)" = "$mods" ] ||
    fail "$args: cuda_graph_modules, expected $mods"
done <<'GRAPHS'
--enable-cuda-graph|"local"|absent
--external-cuda-graph --cuda-graph-scope attn mlp|"transformer_engine"|["attn", "mlp"]
--cuda-graph-scope full_iteration|"full_iteration"|[]
--cuda-graph-impl local --cuda-graph-modules moe_router moe_preprocess|"local"|["moe_router", "moe_preprocess"]
GRAPHS
rc=0
"$bin" import megatron-args -s hardware.num_gpus=8 -- "${small[@]}" --enable-cuda-graph --external-cuda-graph \
  2>"$tmp/err" >/dev/null || rc=$?
[ $rc = 2 ] && grep -q "cannot be used together" "$tmp/err" || fail "--enable- and --external-cuda-graph together"

# rejected by Megatron-LM: exit 2, did-you-mean, nothing written
rc=0
"$bin" import megatron-args -o "$tmp/bad.json" -- --num-layer 32 --bf16 2>"$tmp/err" || rc=$?
[ $rc = 2 ] || fail "a typo should exit 2, got $rc"
grep -q -- '"--num-layer": Megatron-LM rejects this argument (NVIDIA/Megatron-LM@.*); did you mean --num-layers?' \
  "$tmp/err" || fail "expected a did-you-mean: $(cat "$tmp/err")"
[ ! -e "$tmp/bad.json" ] || fail "a refused import must not write its output"
rc=0
"$bin" import megatron-args -- --num-layers 2 --hidden-size 64 --num-attention-heads 2 --seq-length 64 \
  --global-batch-size 8 --vocab-size 100 --bf16 2>"$tmp/err" >/dev/null || rc=$?
[ $rc = 2 ] && grep -q "not in the launch line" "$tmp/err" || fail "no GPU count should be an error: $(cat "$tmp/err")"
# without "--" the line starts after megatron-args; a launcher count that is not one wants --set
"$bin" import -s hardware.num_gpus=4 megatron-args torchrun --nproc_per_node gpu my_train.py --num-layers 2 \
  --hidden-size 64 --num-attention-heads 2 --seq-length 64 --max-position-embeddings 64 --global-batch-size 8 \
  --vocab-size 100 --bf16 >"$tmp/gpu.json" 2>"$tmp/err" || fail "import without --: $(cat "$tmp/err")"
[ "$(key "$tmp/gpu.json" hardware num_gpus)" = 4 ] || fail "--set hardware.num_gpus"
grep -q "launcher --nproc_per_node gpu: not a count" "$tmp/err" || fail "the launcher's \"gpu\" must be said"
# A scenario that is not a Megatron-LM run (our e2e harness: a plain PyTorch loop, on the host the
# profiles were measured on) exports its model and layout and says what no argument carries
"$bin" export megatron-args microbench/e2e/scenarios/dp2_overlap.json >"$tmp/e2e.line" 2>"$tmp/err" || fail "export an e2e scenario"
grep -q 'training.framework "pytorch": the scenario is a plain PyTorch loop' "$tmp/err" || fail "framework pytorch not said: $(cat "$tmp/err")"
grep -q 'hardware.host_speed: a property of the hosts, not an argument' "$tmp/err" || fail "host_speed not said"
"$bin" export megatron-args scenarios/llama3-8b-h100-8gpu.json 2>"$tmp/err" >/dev/null
grep -q 'host_speed\|framework' "$tmp/err" && fail "a shipped scenario's default host and framework must pass silently"
echo "megatron-args: round trips of $(ls scenarios/*.json | wc -l) scenarios, mapped, ignored and rejected arguments"
