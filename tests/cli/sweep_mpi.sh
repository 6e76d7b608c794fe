#!/usr/bin/env bash
# `mpirun -n 2 penumbra sweep` writes exactly what one process writes (stdout, CSV, JSON but its
# commit line). Skipped (77) when penumbra was built without MPI (-DPN_MPI=ON) or mpirun is missing.
set -euo pipefail
bin=$1 src=$2
cd "$src"
"$bin" --version | grep -q 'with MPI' || { echo "penumbra built without MPI: skipped"; exit 77; }
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(sweep --model llama3-8b --gpus 8 --seq-length 4096 --global-batch-size 128 -j 1
  --vary parallel.tensor_model_parallel_size=1,2,4 --vary parallel.pipeline_model_parallel_size=1,2
  --vary parallel.virtual_pipeline_model_parallel_size=1,2 --vary parallel.context_parallel_size=1
  --vary training.micro_batch_size=1 --vary recompute.recompute_granularity=null)
"$bin" "${args[@]}" --csv "$tmp/one.csv" --json "$tmp/one.json" >"$tmp/one.txt"
mpirun -n 2 --oversubscribe "$bin" "${args[@]}" --csv "$tmp/two.csv" --json "$tmp/two.json" >"$tmp/two.txt"
cmp "$tmp/one.txt" "$tmp/two.txt" || { echo "FAIL: stdout differs between 1 process and 2 ranks"; exit 1; }
cmp "$tmp/one.csv" "$tmp/two.csv" || { echo "FAIL: CSV differs"; exit 1; }
cmp <(grep -v '"commit"' "$tmp/one.json") <(grep -v '"commit"' "$tmp/two.json") || { echo "FAIL: JSON differs"; exit 1; }
echo "sweep over 2 MPI ranks: identical to one process ($(($(wc -l <"$tmp/one.csv") - 1)) layouts)"
