#!/usr/bin/env bash
# penumbra run --trace and --gantt: the trace of an interleaved pipeline (P2P between stages, two
# iterations), of an EP-overlap MoE and of a window is valid trace-event JSON whose flows are
# matched and whose exposed spans sum to the report's exposed communication (tracecheck.py);
# --gantt draws a non-empty PNG and SVG, whole or windowed; its bad options are one line, exit 2.
set -euo pipefail
bin=$1 src=$2
cd "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() {
  "$bin" run "$@" -t "$tmp/t.json" -f json -o "$tmp/r.json"
  python3 tests/cli/tracecheck.py "$tmp/t.json" "$tmp/r.json"
}
check scenarios/llama2-13b-h100-16gpu.json -n 2
check scenarios/qwen3-30b-a3b-h100-16gpu-ep-overlap-on.json
grep -q '"ph": "s"' "$tmp/t.json" && { echo "FAIL: flows without a pipeline"; exit 1; }
"$bin" run scenarios/llama2-13b-h100-16gpu.json -t "$tmp/w.json" --trace-window 100:300 >/dev/null
python3 - "$tmp/w.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
phs = {e["ph"] for e in ev}
assert {"X", "C", "s", "f"} <= phs, phs
assert all(100e3 <= e["ts"] < 300e3 for e in ev if e["ph"] in "sfC"), "a flow or counter outside the window"
PY

g=(scenarios/llama2-13b-h100-16gpu.json -s training.global_batch_size=32)
"$bin" run "${g[@]}" --gantt "$tmp/g.png" >/dev/null
"$bin" run "${g[@]}" --gantt "$tmp/g.svg" --window 1 >/dev/null
"$bin" run "${g[@]}" --gantt "$tmp/w.png" --from 100 --to 300 >/dev/null
for f in g.png w.png; do
  [ "$(head -c 8 "$tmp/$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || { echo "FAIL: $f is not a PNG"; exit 1; }
  [ "$(stat -c %s "$tmp/$f")" -gt 10000 ] || { echo "FAIL: $f is nearly empty"; exit 1; }
done
grep -q 'stage 3 exposed / bubble' "$tmp/g.svg" || { echo "FAIL: the SVG has no exposed row"; exit 1; }

bad() {
  local rc=0; "$bin" run "${g[@]}" "$@" >/dev/null 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "FAIL: run $* exited $rc:"; cat "$tmp/err"; exit 1; }
}
bad --gantt "$tmp/g.jpg"
bad --from 10
bad --gantt "$tmp/x.png" --from 10 --to 5
bad --gantt "$tmp/x.png" --window 99
bad --gantt "$tmp/x.png" --window 1 --from 3
bad --gantt "$tmp/x.png" --to abc
bad --gantt "$tmp/none/x.png"
[ ! -e "$tmp/x.png" ] || { echo "FAIL: a refused chart left a file"; exit 1; }
echo "timeline: traces valid and matching the report, Gantt charts drawn, bad options refused"
