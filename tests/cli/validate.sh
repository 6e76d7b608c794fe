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
# each source family's MAPE and mean signed error, text and JSON
echo "$out" | grep -q '^by source family: *n *MAPE *signed$' || { echo "FAIL: no signed error by family"; exit 1; }
case "$json" in *'"signed_pct"'*) ;; *) echo "FAIL: validate --format json has no families[].signed_pct"; exit 1 ;; esac
# --scenarios writes the scenario each record was predicted with: one per predicted record, and
# running one of them predicts what validate printed for its record; a directory that is not
# empty is refused (exit 2, left as it was) unless --force
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin" validate --scenarios "$tmp/s" >/dev/null
[ "$(ls "$tmp/s" | wc -l)" -eq "$n" ] || { echo "FAIL: --scenarios wrote $(ls "$tmp/s" | wc -l) files for $n records"; exit 1; }
id=nemo-24.07-GPT3-5B-64gpu-FP8
want=$(echo "$out" | awk -v id="$id" '$1 == id { print $9 }' | tr -d s) # id, 6 layout fields, published, predicted
got=$("$bin" run "$tmp/s/$id.json" | awk '/^iteration time/ { printf "%.3f", $3 }')
[ -n "$want" ] && [ "$want" = "$got" ] || { echo "FAIL: $id: validate predicted $want s, its scenario runs in $got s"; exit 1; }
rc=0; "$bin" validate --scenarios "$tmp/s" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--scenarios: $tmp/s: exists and is not empty" "$tmp/err" && [ "$(ls "$tmp/s" | wc -l)" -eq "$n" ] ||
  { echo "FAIL: a non-empty --scenarios directory: exit $rc"; cat "$tmp/err"; exit 1; }
"$bin" validate --scenarios "$tmp/s" --force >/dev/null
echo "validate: $n published records predicted"
