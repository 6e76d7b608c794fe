#!/usr/bin/env bash
# penumbra regress: the committed suite passes against its committed baseline (a change that moves
# a prediction must update scenarios/suite/baseline.json on purpose); -j 1 and -j 2 print the same
# report; a baseline with one prediction moved by 1% fails (exit 3) and names it, and passes with a
# tolerance of 2% for that metric; --update writes a baseline that then passes and keeps the reason,
# in the baseline and the history; two processes appending to one history at once leave every
# row; bad input is one line and exit 2.
set -euo pipefail
bin=$1 src=$2
cd "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/history.db

"$bin" regress --db "$db" -j 2 >"$tmp/j2.txt" || { cat "$tmp/j2.txt"; echo "FAIL: the suite moved from scenarios/suite/baseline.json (update it on purpose: penumbra regress --update -m \"why\")"; exit 1; }
tail -1 "$tmp/j2.txt"
"$bin" regress --db "$db" -j 1 >"$tmp/j1.txt"
cmp "$tmp/j1.txt" "$tmp/j2.txt" || { echo "FAIL: -j 1 and -j 2 differ"; exit 1; }

# one prediction moved by 1%
python3 - scenarios/suite/baseline.json "$tmp/moved.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
b["scenarios"]["llama3-8b-h100-8gpu"]["model_tflops_per_gpu"] *= 1.01
json.dump(b, open(sys.argv[2], "w"), indent=2)
PY
rc=0; "$bin" regress --db "$db" --baseline "$tmp/moved.json" -f json >"$tmp/moved.out" || rc=$?
[ "$rc" = 3 ] || { echo "FAIL: a 1% change exited $rc, expected 3"; exit 1; }
python3 - "$tmp/moved.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["passed"] and r["beyond_tolerance"] == 1, r["beyond_tolerance"]
first = r["scenarios"][0]
assert first["name"] == "llama3-8b-h100-8gpu", "the largest mover is not first: " + first["name"]
m = first["metrics"]["model_tflops_per_gpu"]
assert m["beyond"] and abs(m["change_pct"] + 0.990099) < 1e-3, m
PY
"$bin" regress --db "$db" --baseline "$tmp/moved.json" --tolerance model_tflops_per_gpu=2% >/dev/null ||
  { echo "FAIL: the 1% change is within a 2% tolerance"; exit 1; }

# --update on a copy of the suite: the reason goes to the baseline and the history
mkdir "$tmp/suite"
cp -L scenarios/suite/llama3-8b-h100-8gpu.json scenarios/suite/llama2-7b-h100-8gpu.json "$tmp/suite/"
"$bin" regress --suite "$tmp/suite" --db "$db" --update -m "two-scenario suite" >/dev/null 2>&1
grep -q '"reason": "two-scenario suite"' "$tmp/suite/baseline.json" || { echo "FAIL: the reason is not in the baseline"; exit 1; }
"$bin" regress --suite "$tmp/suite" --db "$db" >/dev/null
"$bin" regress --db "$db" --history --scenario llama2-7b-h100-8gpu | grep -q 'updated: two-scenario suite' ||
  { echo "FAIL: the reason is not in the history"; exit 1; }

# two writers at once, 5 runs each, on a fresh history: 10 runs x 2 scenarios x 9 metrics
cdb=$tmp/concurrent.db
writer() { for _ in 1 2 3 4 5; do "$bin" regress --suite "$tmp/suite" --db "$cdb" -j 1 >/dev/null || exit 1; done; }
writer & p1=$!
writer & p2=$!
wait "$p1" && wait "$p2" || { echo "FAIL: a concurrent writer failed"; exit 1; }
"$bin" regress --db "$cdb" --history -f json >"$tmp/hist.json"
python3 - "$tmp/hist.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))["history"]
runs = sorted({r["run"] for r in h})
assert runs == list(range(1, 11)), runs
assert len(h) == 20, len(h)
assert all(r["model_tflops_per_gpu"] is not None and r["memory_gib_per_gpu"] is not None for r in h)
print(f"concurrent writers: {len(runs)} runs, {len(h)} scenario rows, every metric present")
PY
if command -v sqlite3 >/dev/null; then
  n=$(sqlite3 "$cdb" 'SELECT COUNT(*) FROM predictions;'); [ "$n" = 180 ] || { echo "FAIL: $n rows, expected 180"; exit 1; }
  [ "$(sqlite3 "$cdb" 'PRAGMA integrity_check;')" = ok ] || { echo "FAIL: integrity check"; exit 1; }
  [ "$(sqlite3 "$cdb" 'PRAGMA journal_mode;')" = wal ] || { echo "FAIL: not in WAL mode"; exit 1; }
fi

# the trend plot draws
"$bin" regress --db "$db" --history --plot "$tmp/trend.svg" >/dev/null
[ -s "$tmp/trend.svg" ] || { echo "FAIL: no trend plot"; exit 1; }

# bad input: one line, exit 2
bad() {
  local rc=0; "$bin" regress --db "$db" "$@" >/dev/null 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "FAIL: regress $* exited $rc:"; cat "$tmp/err"; exit 1; }
}
bad --tolerance abc
bad --tolerance -1%
bad --tolerance exposed_comm=2%
bad --update
bad -m "no update"
bad --suite "$tmp/none"
bad --baseline "$tmp/none.json"
bad --history --plot "$tmp/trend.txt"
bad --scenario x
bad --format xml
bad -j 0
bad extra-operand
echo '{"schema_version": 1, "scenarios": {"x": {"scenario_sha256": "a"}}}' >"$tmp/broken.json"
bad --baseline "$tmp/broken.json"
grep -q 'broken.json: /scenarios/x/profile_sha256' "$tmp/err" || { cat "$tmp/err"; echo "FAIL: the error does not name the JSON path"; exit 1; }
echo "regress: suite passes, a 1% move fails, --update, concurrent writers, bad input"
