#!/usr/bin/env bash
# Where the published, hand-tuned layouts rank among penumbra's sweep: for each shipped validation
# scenario (a published H100 run with its full layout, scenarios/validation/), `penumbra sweep
# SCENARIO --layouts` varies TP, PP, VPP, CP, micro-batch and recompute around it at the same GPU
# count, global batch, sequence and precision (overlap switches as the recipe's gating gives
# them), and the table says where the published layout ranks and how much faster the best
# predicted layout is. Prints a markdown table.
#   bench/published-ranking.sh [build/penumbra] [-j N]
set -euo pipefail
bin=${1:-build/penumbra}; jobs=${2:-$(nproc)}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "| published run | GPUs | published layout | its rank | layouts simulated | published TFLOP/s/GPU (predicted) | best predicted layout | best TFLOP/s/GPU | best is faster by | within penumbra's error |"
echo "|---|---:|---|---:|---:|---:|---|---:|---:|---|"
for s in scenarios/validation/*.json; do
  name=$(basename "$s" .json)
  "$bin" sweep "$s" --layouts -j "$jobs" --top 1 --json "$tmp/$name.json" >"$tmp/$name.txt" 2>/dev/null || { echo "| $name | sweep failed |"; continue; }
  python3 - "$tmp/$name.json" "$name" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); name = sys.argv[2]
L = j["layouts"]
def split(l):  # the split the sweep chose, when not even (as its table says it)
    s = ""
    if "parallel.num_layers_in_first_pipeline_stage" in l: s += " first_stage=%s" % l["parallel.num_layers_in_first_pipeline_stage"]
    if "parallel.num_layers_in_last_pipeline_stage" in l: s += " last_stage=%s" % l["parallel.num_layers_in_last_pipeline_stage"]
    if l.get("parallel.account_for_embedding_in_pipeline_split"): s += " account_for=embedding,loss"
    if "parallel.pipeline_model_parallel_layout" in l: s += " layout=" + l["parallel.pipeline_model_parallel_layout"].replace("|", "\\|")
    return s
def lay(l):
    return "TP%s PP%s VPP%s%s CP%s MBS%s %s" % (l["parallel.tensor_model_parallel_size"], l["parallel.pipeline_model_parallel_size"],
        l["parallel.virtual_pipeline_model_parallel_size"], split(l), l["parallel.context_parallel_size"], l["training.micro_batch_size"],
        l["recompute.recompute_granularity"])
gpus = L[0]["data_parallel_size"] * L[0]["parallel.tensor_model_parallel_size"] * L[0]["parallel.pipeline_model_parallel_size"] * L[0]["parallel.context_parallel_size"] if L else 0
base = [l for l in L if l["index"] == j["base_index"]]
best = L[0]
if not base:
    print(f"| {name} | {gpus} | (not ranked: rejected or over memory by penumbra's estimate) | - | {len(L)} | - | {lay(best)} | {best['model_tflops_per_gpu']:.1f} | - | - |")
else:
    b = base[0]
    faster = (best["model_tflops_per_gpu"] / b["model_tflops_per_gpu"] - 1) * 100
    print(f"| {name} | {gpus} | {lay(b)} | {b['rank']} | {len(L)} | {b['model_tflops_per_gpu']:.1f} | {lay(best)} | {best['model_tflops_per_gpu']:.1f} | {faster:.1f}% | {'yes' if b['within_error_of_best'] else 'no'} |")
PY
done
