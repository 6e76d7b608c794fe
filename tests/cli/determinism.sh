#!/usr/bin/env bash
# Same input, byte-identical output: every scenario under scenarios/ (JSON report), run twice.
set -euo pipefail
bin=$1 src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0
for s in "$src"/scenarios/*.json; do
  "$bin" run "$s" --format json >"$tmp/a.json"
  "$bin" run "$s" --format json >"$tmp/b.json"
  if ! cmp -s "$tmp/a.json" "$tmp/b.json"; then
    echo "FAIL: $s: two runs differ"; diff "$tmp/a.json" "$tmp/b.json" | head; exit 1
  fi
  n=$((n + 1))
done
# also with several iterations, where first-iteration effects show
"$bin" run "$src/scenarios/llama3-8b-h100-8gpu.json" --iterations 3 --format json >"$tmp/a.json"
"$bin" run "$src/scenarios/llama3-8b-h100-8gpu.json" --iterations 3 --format json >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || { echo "FAIL: --iterations 3 runs differ"; exit 1; }
echo "determinism: $((n + 1)) scenarios byte-identical across runs"
