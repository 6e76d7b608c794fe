#!/usr/bin/env bash
# megatron_runs.sh — the Megatron-LM runs whose logs penumbra's tests compare against
# (tests/data/megatron/*-h100.log), on one GPU of the device machine, without Transformer Engine or
# Apex (its image has neither), so with Megatron-Core's local layers and unfused attention.
#
#   microbench/megatron_runs.sh MEGATRON_LM_DIR OUT_DIR
#
# llama-local: a Llama-style decoder (RMSNorm, SwiGLU, RoPE, GQA 4:1, no biases, no dropout).
# gpt-local:   a GPT-style decoder (LayerNorm, GeLU, learned positions, biases, Megatron's default
#              dropout 0.1 in the attention probabilities and the hidden states, tied embeddings).
# *-tiny:      the same layer structure, layer count and micro-batch count at hidden 256 and
#              sequence 256, so that the GPU's work is negligible and the step time is the host's:
#              what Megatron-LM's Python costs per layer and micro-batch.
# TRAIN_ITERS=N sets the iterations (default 30; gpt-local is committed at 100: its step keeps
# getting faster until about iteration 20). With PROFILE=1 each run also records iterations 11-12 with torch.profiler and keeps the summary of
# what the GPU did (microbench/profile_summary.py -> OUT_DIR/NAME-profile.json).
#
#   microbench/megatron_runs.sh MEGATRON_LM_DIR OUT_DIR [NAME ...]   (default: the first four)
#
# The *-dp2 runs need two GPUs (below).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$1 out=$2
common=(--transformer-impl local --no-masked-softmax-fusion --no-gradient-accumulation-fusion
  --no-persist-layer-norm --bf16 --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine --weight-decay 0.1
  --clip-grad 1.0 --adam-beta2 0.95 --train-iters "${TRAIN_ITERS:-30}" --log-interval 1 --log-throughput
  --eval-iters 0 --eval-interval 1000 --mock-data --tokenizer-type NullTokenizer
  --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --distributed-backend nccl)
llama=(--num-layers 16 --ffn-hidden-size 5632 --num-attention-heads 16 --group-query-attention --num-query-groups 4
  --position-embedding-type rope --no-rope-fusion --normalization RMSNorm --swiglu --disable-bias-linear
  --untie-embeddings-and-output-weights --attention-dropout 0.0 --hidden-dropout 0.0 --vocab-size 32000
  --micro-batch-size 2 --global-batch-size 16)
gpt=(--num-layers 12 --num-attention-heads 16 --micro-batch-size 4 --global-batch-size 32 --vocab-size 50257)
run() {
  local name=$1 limit=$2
  shift 2
  if [ "${PROFILE:-0}" = 1 ]; then
    "$here/mb_megatron.sh" "$src" "$out" "$name" "${NPROC:-1}" "$limit" -- "$@" --train-iters 13 --profile \
      --use-pytorch-profiler --profile-step-start 11 --profile-step-end 12 --tensorboard-dir "/tmp/$name/tb"
    python3 "$here/profile_summary.py" "/tmp/$name/torch_profile/rank-0.json.gz" --out "$out/$name-profile.json"
  else
    "$here/mb_megatron.sh" "$src" "$out" "$name" "${NPROC:-1}" "$limit" -- "$@"
  fi
}
# gpt-local-fsdp, gpt-local-tiny-fsdp: one GPU under Megatron-FSDP (a data-parallel group of one).
# Two GPUs, data-parallel (global batch doubled: the same 8 micro-batches per rank): the
# distributed optimizer with both overlaps, or Megatron-FSDP (optim_grads_params by default,
# FSDP=optim_grads for ZeRO-2), which refuses CUDA_DEVICE_MAX_CONNECTIONS=1; its checkpoint format
# is required even when nothing is saved.
dp2=(--global-batch-size 64 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather)
fsdp=(--use-megatron-fsdp --data-parallel-sharding-strategy "${FSDP:-optim_grads_params}" --ckpt-format fsdp_dtensor)
dp2run() {
  (
    export NPROC=2 CUDA_DEVICE_MAX_CONNECTIONS=8
    run "$@"
  )
}
names=("${@:3}")
[ ${#names[@]} -eq 0 ] && names=(llama-local gpt-local llama-local-tiny gpt-local-tiny)
tiny=(--hidden-size 256 --seq-length 256 --max-position-embeddings 256)
for n in "${names[@]}"; do
  case $n in
  llama-local) run $n 240 "${common[@]}" "${llama[@]}" --hidden-size 2048 --seq-length 2048 --max-position-embeddings 2048 ;;
  gpt-local) run $n 200 "${common[@]}" "${gpt[@]}" --hidden-size 2048 --seq-length 1024 --max-position-embeddings 1024 ;;
  llama-local-tiny) run $n 150 "${common[@]}" "${llama[@]}" "${tiny[@]}" ;;
  gpt-local-tiny) run $n 150 "${common[@]}" "${gpt[@]}" "${tiny[@]}" ;;
  # the tiny runs at half the layers (-l), half the micro-batches (-m) or both: their differences
  # split the host's step into per layer and micro-batch, per micro-batch and per step parts
  llama-local-tiny-l8) run $n 150 "${common[@]}" "${llama[@]}" "${tiny[@]}" --num-layers 8 ;;
  llama-local-tiny-m4) run $n 150 "${common[@]}" "${llama[@]}" "${tiny[@]}" --global-batch-size 8 ;;
  llama-local-tiny-l8-m4) run $n 150 "${common[@]}" "${llama[@]}" "${tiny[@]}" --num-layers 8 --global-batch-size 8 ;;
  gpt-local-tiny-l6) run $n 150 "${common[@]}" "${gpt[@]}" "${tiny[@]}" --num-layers 6 ;;
  gpt-local-tiny-m4) run $n 150 "${common[@]}" "${gpt[@]}" "${tiny[@]}" --global-batch-size 16 ;;
  gpt-local-tiny-l6-m4) run $n 150 "${common[@]}" "${gpt[@]}" "${tiny[@]}" --num-layers 6 --global-batch-size 16 ;;
  gpt-local-fsdp) (export CUDA_DEVICE_MAX_CONNECTIONS=8; run $n 200 "${common[@]}" "${gpt[@]}" --hidden-size 2048 --seq-length 1024 --max-position-embeddings 1024 "${fsdp[@]}") ;;
  gpt-local-tiny-fsdp) (export CUDA_DEVICE_MAX_CONNECTIONS=8; run $n 150 "${common[@]}" "${gpt[@]}" "${tiny[@]}" "${fsdp[@]}") ;;
  gpt-local-dp2) dp2run $n 200 "${common[@]}" "${gpt[@]}" --hidden-size 2048 --seq-length 1024 --max-position-embeddings 1024 "${dp2[@]}" ;;
  gpt-local-dp2-fsdp) dp2run $n 200 "${common[@]}" "${gpt[@]}" --hidden-size 2048 --seq-length 1024 --max-position-embeddings 1024 "${dp2[@]}" "${fsdp[@]}" ;;
  gpt-local-tiny-dp2) dp2run $n 200 "${common[@]}" "${gpt[@]}" "${tiny[@]}" "${dp2[@]}" ;;
  gpt-local-tiny-dp2-fsdp) dp2run $n 200 "${common[@]}" "${gpt[@]}" "${tiny[@]}" "${dp2[@]}" "${fsdp[@]}" ;;
  *) echo "unknown run $n" >&2 ;;
  esac
done
