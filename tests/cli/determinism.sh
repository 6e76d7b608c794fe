#!/usr/bin/env bash
# Same input, byte-identical output: every scenario under scenarios/, run twice, as the JSON and
# as the text report. The run's own metadata (events, wall time) appears only with --timing, in
# both formats.
set -euo pipefail
bin=$1 src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
same() { # label, command...: two runs of the command print the same bytes
  local what=$1; shift
  "$@" >"$tmp/a"
  "$@" >"$tmp/b"
  cmp -s "$tmp/a" "$tmp/b" || { echo "FAIL: $what: two runs differ"; diff "$tmp/a" "$tmp/b" | head; exit 1; }
}
n=0
for s in "$src"/scenarios/*.json; do
  same "$s (json)" "$bin" run "$s" --format json
  same "$s (text)" "$bin" run "$s"
  n=$((n + 1))
done
# also with several iterations, where first-iteration effects show
s=$src/scenarios/llama3-8b-h100-8gpu.json
same "--iterations 3 (json)" "$bin" run "$s" --iterations 3 --format json
same "--iterations 3 (text)" "$bin" run "$s" --iterations 3

# --timing: the simulator's line and object gain the events and the wall time, nothing else changes
"$bin" run "$s" >"$tmp/plain"
"$bin" run "$s" --timing >"$tmp/timed"
if grep -Eq 'events|wall' "$tmp/plain"; then echo "FAIL: the text report has timing without --timing"; exit 1; fi
diff "$tmp/plain" "$tmp/timed" >"$tmp/diff" || true
grep -Eq '^> simulator: [0-9]+ tasks, [0-9]+ kernels priced by roofline, [0-9]+ events, [0-9.]+ s wall$' "$tmp/diff" ||
  { echo "FAIL: --timing should add the events and the wall time to the simulator's line:"; cat "$tmp/diff"; exit 1; }
[ "$(grep -c '^[<>]' "$tmp/diff")" = 2 ] || { echo "FAIL: --timing changed more than the simulator's line:"; cat "$tmp/diff"; exit 1; }
"$bin" run "$s" --format json >"$tmp/plain"
"$bin" run "$s" --format json --timing >"$tmp/timed"
if grep -Eq '"(events|wall_s)"' "$tmp/plain"; then echo "FAIL: the JSON report has timing without --timing"; exit 1; fi
diff "$tmp/plain" "$tmp/timed" >"$tmp/diff" || true
grep -Eq '^>     "events": [0-9]+,$' "$tmp/diff" && grep -Eq '^>     "wall_s": [0-9.e-]+$' "$tmp/diff" ||
  { echo "FAIL: --timing should add simulator.events and simulator.wall_s:"; cat "$tmp/diff"; exit 1; }
[ "$(grep -c '^[<>]' "$tmp/diff")" = 4 ] || { echo "FAIL: --timing changed more than the simulator object:"; cat "$tmp/diff"; exit 1; }
echo "determinism: $((n + 1)) scenarios byte-identical across runs (JSON and text); --timing adds the run's metadata"
