#!/usr/bin/env bash
# Output paths (io/out.h): what stands at -o, --trace, --plot-data and calibrate -o is written as
# it should be (a FIFO or a device in place, a link followed, a regular file replaced atomically
# with its mode kept) or refused before any work with one line naming the option and the path;
# a trace over its bound leaves the path untouched; a window keeps part of the trace.
set -uo pipefail
bin=$(readlink -f "$1") src=$(readlink -f "$2")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" # what a wrong binary writes by mistake ("-o -" as a file named "-") lands here
S=$src/scenarios/llama3-8b-h100-8gpu.json
fail=0 n=0
bad() { echo "FAIL: $*"; fail=1; }
# refused NAME PATTERN -- ARGS...: status 2, one stderr line matching PATTERN, nothing on stdout
refused() {
  local name=$1 pattern=$2; shift 3
  n=$((n + 1))
  timeout 60 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local st=$?
  if [ "$st" -ne 2 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qE -- "$pattern" "$tmp/err" || [ -s "$tmp/out" ]; then
    bad "$name: status $st, stdout $(wc -c <"$tmp/out") bytes, stderr:"; cat "$tmp/err"
  fi
}
"$bin" run "$S" >"$tmp/want.txt" || bad "the reference run failed"

# a FIFO is written in place, not replaced by a regular file
n=$((n + 1))
mkfifo "$tmp/fifo"
timeout 30 cat "$tmp/fifo" >"$tmp/from-fifo" & reader=$!
timeout 30 "$bin" run "$S" -o "$tmp/fifo" 2>"$tmp/err" || bad "fifo: status $?: $(cat "$tmp/err")"
[ -p "$tmp/fifo" ] || { bad "fifo: replaced by a regular file"; kill "$reader" 2>/dev/null; }
wait "$reader"
cmp -s "$tmp/from-fifo" "$tmp/want.txt" || bad "fifo: the reader did not get the report"

# a character device is written in place: a node of our own (root), else /dev/null (not root:
# the old behaviour could not replace it either)
dev=
if mknod "$tmp/null" c 1 3 2>/dev/null && echo x >"$tmp/null" 2>/dev/null; then dev=$tmp/null
elif [ "$(id -u)" != 0 ]; then dev=/dev/null; fi
if [ -n "$dev" ]; then
  n=$((n + 1))
  "$bin" run "$S" -o "$dev" 2>"$tmp/err" || bad "device: status $?: $(cat "$tmp/err")"
  [ -c "$dev" ] || bad "device: $dev replaced by a regular file"
fi

# a link is followed: its target replaced, the link kept; a dangling link creates its target
n=$((n + 1))
echo old >"$tmp/real.txt"; ln -s real.txt "$tmp/link.txt"; ln -s made.txt "$tmp/dangling.txt"
"$bin" run "$S" -o "$tmp/link.txt" && "$bin" run "$S" -o "$tmp/dangling.txt" || bad "links: status $?"
[ -L "$tmp/link.txt" ] && cmp -s "$tmp/real.txt" "$tmp/want.txt" || bad "links: the link's target was not written"
[ -L "$tmp/dangling.txt" ] && cmp -s "$tmp/made.txt" "$tmp/want.txt" || bad "links: the dangling link's target was not made"

# a regular file is replaced keeping its mode; "-" is standard output
n=$((n + 1))
echo old >"$tmp/r.txt"; chmod 640 "$tmp/r.txt"
"$bin" run "$S" -o "$tmp/r.txt" || bad "regular: status $?"
[ "$(stat -c %a "$tmp/r.txt")" = 640 ] || bad "regular: mode $(stat -c %a "$tmp/r.txt"), expected 640"
cmp -s "$tmp/r.txt" "$tmp/want.txt" || bad "regular: not the report"
"$bin" run "$S" -o - | cmp -s - "$tmp/want.txt" || bad "-o -: not the report on stdout"

# refused before the simulation, so no trace is written beside a bad -o
mkdir "$tmp/dir"
refused directory "^penumbra run: --output: $tmp/dir: is a directory" -- run "$S" -o "$tmp/dir"
refused missing-dir "^penumbra run: --output: $tmp/nodir/r.json: directory $tmp/nodir does not exist" -- \
  run "$S" -t "$tmp/early-trace.json" -o "$tmp/nodir/r.json"
[ ! -e "$tmp/early-trace.json" ] || bad "missing-dir: the trace was written before -o was checked"
refused empty-name '^penumbra run: --output: "": expected a file name' -- run "$S" -o ""
refused trace-dir "^penumbra run: --trace: $tmp/dir: is a directory" -- run "$S" -t "$tmp/dir"
refused plot-dir "^penumbra validate: --plot-data: $tmp/dir: is a directory" -- validate --plot-data "$tmp/dir"
ln -s dir "$tmp/to-dir"
refused link-to-dir "^penumbra run: --output: $tmp/to-dir -> $tmp/dir: is a directory" -- run "$S" -o "$tmp/to-dir"
C=$src/hwprofiles/calibration/h100-sxm
refused calibrate-missing-dir "^penumbra calibrate: --output: $tmp/nodir/p.json: directory $tmp/nodir does not exist\$" -- \
  calibrate "$C/gemm.json" --base "$src/hwprofiles/h100-sxm.json" -o "$tmp/nodir/p.json"
n=$((n + 1))
st=0; "$bin" run "$S" >/dev/full 2>"$tmp/err" || st=$?
[ "$st" = 2 ] && grep -q '^penumbra run: standard output: cannot write: No space left on device$' "$tmp/err" ||
  bad "stdout full: status $st: $(cat "$tmp/err")"

# a trace over its bound is refused with its size, the file at the path untouched, nothing left
echo old >"$tmp/t.json"
refused trace-bound "^penumbra run: --trace: $tmp/t.json: the trace would take about 6\.[0-9] MiB \([0-9]+ events\), more than its bound of 1\.0 KiB" -- \
  run "$S" -t "$tmp/t.json" --trace-max-size 1KiB
[ "$(cat "$tmp/t.json")" = old ] || bad "trace-bound: the file at the path was changed"
ls "$tmp" | grep -q '\.json\.' && bad "trace-bound: a temporary file was left: $(ls "$tmp")"
# a window keeps the tasks running in it: every event starts before its end (ts in microseconds)
n=$((n + 1))
"$bin" run "$S" -t "$tmp/all.json" >/dev/null && "$bin" run "$S" -t "$tmp/w.json" --trace-window 100:150 >/dev/null ||
  bad "window: status $?"
all=$(grep -c '"ph": "X"' "$tmp/all.json" 2>/dev/null) win=$(grep -c '"ph": "X"' "$tmp/w.json" 2>/dev/null)
all=${all:-0} win=${win:-0}
[ "$win" -gt 0 ] && [ "$win" -lt "$all" ] || bad "window: $win of $all events kept"
grep -s '"ph": "X"' "$tmp/w.json" | awk -F'"ts": |, "dur": |, "args"' '{ if ($2 >= 150000 || $2 + $3 < 100000) bad++ } END { exit bad > 0 }' ||
  bad "window: events outside 100:150 ms"
[ "$fail" = 0 ] && echo "outputs: $n cases written or refused as they should be"
exit $fail
