#!/usr/bin/env bash
# penumbra validate runs from the committed data: every complete dense or MoE (not MLA) H100 record is predicted
# (none may fail to load or simulate), and the end-to-end runs of microbench/e2e are compared.
# The error table is printed; the accuracy target is reported in the README, not enforced here.
set -euo pipefail
bin=$1 src=$2
cd "$src"
out=$("$bin" validate)
echo "$out" | sed -n '/^MAPE/,/^worst five/p'
n=$(echo "$out" | sed -n 's/^MAPE on step time: .* over \([0-9]*\) records$/\1/p')
[ "${n:-0}" -ge 33 ] || { echo "FAIL: only ${n:-0} records predicted (expected >= 33: 25 dense + 8 MoE)"; exit 1; }
if echo "$out" | sed -n '/^skipped:/,$p' | grep -q "\.json:"; then
  echo "FAIL: a record's scenario did not load:"; echo "$out" | sed -n '/^skipped:/,$p' | grep "\.json:"; exit 1
fi
e2e=$("$bin" validate --e2e hwprofiles/calibration/h200-sxm/e2e-results.json)
echo "$e2e" | sed -n '1,8p' # (not `| head`: with pipefail, SIGPIPE would fail the test)
json=$("$bin" validate --format json)
case "$json" in *'"mape_pct"'*) ;; *) echo "FAIL: validate --format json has no mape_pct"; exit 1 ;; esac
echo "validate: $n published records predicted"
