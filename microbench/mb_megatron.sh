#!/usr/bin/env bash
# mb_megatron.sh — a real Megatron-LM training run on this machine's GPUs, for `penumbra compare`.
#
#   microbench/mb_megatron.sh MEGATRON_LM_DIR OUT_DIR NAME NPROC [SECONDS] -- <pretrain_gpt.py arguments>
#
# Runs Megatron-LM's own pretrain_gpt.py (a checkout of its public source: the megatron/ package,
# pretrain_gpt.py, gpt_builders.py, model_provider.py) under torchrun with NPROC GPUs on mock data,
# and writes OUT_DIR/NAME.log (the whole training log: the argument dump, one line per iteration)
# and OUT_DIR/NAME.launch (the launch line, with its environment, as a user would type it).
# Machines without Transformer Engine or Apex run it with `--transformer-impl local` and the
# switches that need neither (`--no-masked-softmax-fusion --no-gradient-accumulation-fusion
# --no-rope-fusion --no-persist-layer-norm`); the caller passes them.
#
# Megatron compiles its dataset index helpers (megatron/core/datasets/Makefile) with pybind11 at
# start-up; where `python3 -m pybind11` is missing, the same source is compiled here against the
# pybind11 headers PyTorch ships, so that Megatron finds the module built.
set -u
src=$1 out=$2 name=$3 nproc=$4
limit=${5:-300}
shift 4
[ "${1:-}" != "--" ] && shift
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
cd "$src" || exit 2

helpers=megatron/core/datasets
if ! python3 -m pybind11 --includes >/dev/null 2>&1; then
  ext=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  inc=$(python3 -c 'import sysconfig, torch.utils.cpp_extension as c; print(" ".join(["-I" + p for p in c.include_paths()] + ["-I" + sysconfig.get_paths()["include"]]))')
  if g++ -O3 -shared -std=c++17 -fPIC $inc "$helpers/helpers.cpp" -o "$helpers/helpers_cpp$ext" 2>"$out/$name.helpers.err"; then
    # Megatron's Makefile names the target from python3-config; make must find it up to date
    cfg_ext=$(python3-config --extension-suffix 2>/dev/null || true)
    [ "$cfg_ext" != "$ext" ] && cp "$helpers/helpers_cpp$ext" "$helpers/helpers_cpp$cfg_ext"
    touch "$helpers"/helpers_cpp*
  fi
fi

export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}
export NCCL_NVLS_ENABLE=0
launch="CUDA_DEVICE_MAX_CONNECTIONS=$CUDA_DEVICE_MAX_CONNECTIONS torchrun --nproc_per_node $nproc --nnodes 1 pretrain_gpt.py $*"
printf '%s\n' "$launch" >"$out/$name.launch"
timeout "$limit" torchrun --nproc_per_node "$nproc" --nnodes 1 --master_port 29511 pretrain_gpt.py "$@" \
  >"$out/$name.log" 2>&1
rc=$?
echo "$name: exit $rc, $(grep -c 'elapsed time per iteration' "$out/$name.log") iterations logged"
exit $rc
