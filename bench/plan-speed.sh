#!/usr/bin/env bash
# The plan of the issue that asked for `penumbra plan`, timed: Llama 3 70B, two GPU kinds,
# 512-8,192 GPUs, sequence 8,192, the default global batches (4M:16M tokens). Target: under a
# minute on the 2-core machine. Prints the wall and CPU seconds and the layouts simulated (the
# plans' layouts_simulated column: the ones the compute bound could not rule out).
#   bench/plan-speed.sh [build/penumbra] [threads] [REPORT_DIR: keep the report there]
set -euo pipefail
bin=${1:-build/penumbra}
jobs=${2:-2}
keep=${3:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
/usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KB peak RSS' \
  "$bin" plan --model llama3-70b --tokens 15e12 --profile h100-sxm --profile h200-sxm --gpus 512:8192 \
  --seq-length 8192 --price h100-sxm=2.5 --price h200-sxm=3.2 -j "$jobs" --out "$out/report" || test $? -eq 3
end=$(date +%s.%N)
layouts=$(python3 -c 'import csv, sys; print(sum(int(r["layouts_simulated"]) for r in csv.DictReader(open(sys.argv[1]))))' \
  "$out/report/plans.csv")
[ -z "$keep" ] || { rm -rf "$keep"; cp -r "$out/report" "$keep"; }
echo "plan llama3-70b, h100-sxm + h200-sxm, 512:8192 GPUs: $layouts layouts simulated," \
  "$(echo "$end - $start" | bc) s wall at -j $jobs"
