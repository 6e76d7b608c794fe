#!/usr/bin/env bash
# penumbra plan: bad input is one line naming the option and exit 2, with nothing written; a
# deadline no plan meets writes the report, says which plan comes closest and exits 3; the
# report.md of a small plan equals tests/golden/plan-llama3-8b.md but for the version line;
# a non-empty report directory is kept unless --force, which replaces it whole; pruning by the
# compute bound changes no plan against --exhaustive and gives the same report at -j 1 and -j 2.
# Regenerate the golden: penumbra plan <the args below> --out DIR, then copy DIR/report.md with
# its second paragraph's "penumbra X (COMMIT)" written as "penumbra VERSION (COMMIT)".
set -euo pipefail
bin=$1 src=$2
cd "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
small=(--model llama3-8b --tokens 1e10 --gpus 8:8 --seq-length 1024 --global-batch-tokens 64K:64K -j 2)

bad() { # expected-substring, args...
  local want=$1
  shift
  set +e
  "$bin" plan "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  set -e
  if [ $rc -ne 2 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q -- "$want" "$tmp/err"; then
    echo "FAIL: plan $* -> rc $rc, stderr:"
    cat "$tmp/err"
    exit 1
  fi
  cat "$tmp/err"
  [ ! -e "$tmp/bad" ] || { echo "FAIL: a report was written for bad input"; exit 1; }
}
bad "--tokens: expected a number of tokens > 0" "${small[@]}" --tokens 0 --out "$tmp/bad"
bad "--tokens: expected" "${small[@]}" --tokens -5 --out "$tmp/bad"
bad "--gpus: \"64:8\" is an empty range" "${small[@]}" --gpus 64:8 --out "$tmp/bad"
bad "--gpus: 9:15 holds no power of two" "${small[@]}" --gpus 9:15 --out "$tmp/bad"
bad "no-such-gpu" "${small[@]}" --profile no-such-gpu --out "$tmp/bad"
bad "--price: \"h200-sxm=3\": the profile is not planned" "${small[@]}" --price h200-sxm=3 --out "$tmp/bad"
bad "--price: expected PROFILE=PRICE" "${small[@]}" --price h100-sxm --out "$tmp/bad"
bad "--budget: needs a --price" "${small[@]}" --budget 1e6 --out "$tmp/bad"
bad "--goodput: expected a fraction" "${small[@]}" --goodput 1.5 --out "$tmp/bad"
bad "--deadline: expected a positive duration" "${small[@]}" --deadline 3w --out "$tmp/bad"
bad "--global-batch-tokens: no power of two" "${small[@]}" --global-batch-tokens 65K:100K --out "$tmp/bad"
bad "--out: required" "${small[@]}"
touch "$tmp/file"
bad "--out: $tmp/file: is not a directory" "${small[@]}" --out "$tmp/file"
mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
if [ "$(id -u)" -ne 0 ]; then bad "--out: $tmp/ro/r" "${small[@]}" --out "$tmp/ro/r"; fi
bad "--out: $tmp/file/x: $tmp/file: is not a directory" "${small[@]}" --out "$tmp/file/x"

# A deadline no plan meets: the report is written, names the closest plan and the miss, exit 3.
set +e
"$bin" plan "${small[@]}" --deadline 1d --out "$tmp/r" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ $rc -eq 3 ] || { echo "FAIL: an unmet deadline exits $rc, expected 3"; cat "$tmp/err"; exit 1; }
grep -q "deadline is not met" "$tmp/err"
grep -q "^- No plan meets the deadline 1.0 days. The closest, the fastest: h100-sxm x 8 GPUs" "$tmp/r/report.md"
grep -q "it misses by [0-9.]* days" "$tmp/r/report.md"
for f in index.html report.md plans.csv plans.json layouts-h100-sxm.csv plots/time.svg plots/time.png \
  plots/cost.svg plots/tflops.svg plots/efficiency.svg plots/breakdown.svg plots/memory.svg plots/memory.png; do
  [ -s "$tmp/r/$f" ] || { echo "FAIL: $f missing or empty"; exit 1; }
done
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['closest_to_deadline']['gpus']==8, j" \
  "$tmp/r/plans.json"
ls "$tmp" | grep -q '^r\.' && { echo "FAIL: a temporary directory was left"; exit 1; }

# The golden, after normalizing the version line.
norm() { sed -E 's/^penumbra [^ ]+ \([^)]*\)\./penumbra VERSION (COMMIT)./' "$1"; }
diff <(norm "$tmp/r/report.md") tests/golden/plan-llama3-8b.md || { echo "FAIL: report.md differs from the golden"; exit 1; }

# The README's list of what is not simulated and the report's hold as many items.
readme=$(sed -n '/^\*\*Not simulated yet\*\*/,/^## Accuracy/p' README.md | grep -c '^- ')
report=$(sed -n '/^Not simulated/,$p' "$tmp/r/report.md" | grep -c '^- ')
[ "$report" -eq $((readme + 1)) ] || { echo "FAIL: README lists $readme not simulated, the report $report (+1: goodput)"; exit 1; }

# Pruning by the compute bound (sweep.h, Pruning) changes no plan: plans.csv equals --exhaustive's
# but for the layouts_simulated column; and the pruned report is the same at -j 1 and -j 2.
two=(--model llama3-8b --tokens 1e10 --gpus 8:16 --seq-length 1024 --global-batch-tokens 64K:128K)
"$bin" plan "${two[@]}" -j 2 --exhaustive --out "$tmp/all" >/dev/null
"$bin" plan "${two[@]}" -j 2 --out "$tmp/p2" >/dev/null
"$bin" plan "${two[@]}" -j 1 --out "$tmp/p1" >/dev/null
diff <(cut -d, -f8 --complement "$tmp/all/plans.csv") <(cut -d, -f8 --complement "$tmp/p2/plans.csv") ||
  { echo "FAIL: pruning changed plans.csv"; exit 1; }
for f in report.md plans.csv plans.json layouts-h100-sxm.csv; do
  cmp "$tmp/p1/$f" "$tmp/p2/$f" || { echo "FAIL: $f differs between -j 1 and -j 2"; exit 1; }
done
# the layouts kept are the exhaustive run's within the margin: its best of each point among them
[ "$(wc -l <"$tmp/p2/layouts-h100-sxm.csv")" -lt "$(wc -l <"$tmp/all/layouts-h100-sxm.csv")" ] ||
  { echo "FAIL: pruning kept every layout"; exit 1; }
grep -q "a lower bound on their iteration time put the other [0-9]* beyond it" "$tmp/p2/report.md"

# A non-empty directory is kept without --force, replaced whole with it.
bad "--out: $tmp/r: exists and is not empty (--force replaces it)" "${small[@]}" --out "$tmp/r"
touch "$tmp/r/stale"
"$bin" plan "${small[@]}" --force --out "$tmp/r" >/dev/null
[ ! -e "$tmp/r/stale" ] && [ -s "$tmp/r/report.md" ] || { echo "FAIL: --force did not replace the directory"; exit 1; }
echo "plan: ok"
