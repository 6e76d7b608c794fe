#!/usr/bin/env bash
# Every option of run, validate and calibrate: a bad value, or an option that does not apply, is
# bad input: exit 2 and one line on stderr naming the option, nothing on stdout; never exit 1
# (an internal error) nor an input file the user did not name. Numbers must be finite and in
# range (NaN, infinities, negatives and trailing garbage are refused, not taken as "off").
set -uo pipefail
bin=$(readlink -f "$1") src=$(readlink -f "$2")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" # what a wrong binary writes by mistake ("-o -" as a file named "-") lands here
S=$src/scenarios/llama3-8b-h100-8gpu.json
C=$src/hwprofiles/calibration/h100-sxm
E2E=$src/hwprofiles/calibration/h200-sxm/e2e-results.json
fail=0 n=0
# expect NAME OPTION -- ARGS...: status 2, one stderr line "penumbra <cmd>: OPTION: ...", no stdout
expect() {
  local name=$1 option=$2; shift 3
  n=$((n + 1))
  timeout 60 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local st=$?
  if [ "$st" -ne 2 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qE -- "^penumbra $1: $option: " "$tmp/err" ||
    grep -q published-visible "$tmp/err" || [ -s "$tmp/out" ]; then
    echo "FAIL: $name: status $st, stdout $(wc -c <"$tmp/out") bytes, stderr:"; cat "$tmp/err"; fail=1
  fi
}
for v in nan inf -5 0 abc 15x ""; do
  expect "max-mape $v" --max-mape -- validate --max-mape "$v"
  expect "tolerance $v" --tolerance -- calibrate --check --profile "$src/hwprofiles/h100-sxm.json" "$C/gemm.json" --tolerance "$v"
done
for v in 0 -5 101 2.5 nan abc ""; do expect "iterations $v" --iterations -- run "$S" -n "$v"; done
for v in 0 -1 nan 1Mb MiB 1.5XiB ""; do expect "trace-max-size $v" --trace-max-size -- run "$S" -t "$tmp/t.json" --trace-max-size "$v"; done
for v in 5:1 -1:2 1 a:b 1:2:3 1:inf ""; do expect "trace-window $v" --trace-window -- run "$S" -t "$tmp/t.json" --trace-window "$v"; done
expect trace-max-size-alone --trace-max-size -- run "$S" --trace-max-size 1GiB
expect trace-window-alone --trace-window -- run "$S" --trace-window 0:1
expect trace-and-report-on-stdout --trace -- run "$S" -t -
expect plot-and-report-on-stdout --plot-data -- validate --plot-data - -o -
expect plot-and-replay-on-stdout --plot-data -- calibrate --check --profile "$src/hwprofiles/h100-sxm.json" "$C/gemm.json" --plot-data -
expect timing-what-if --timing -- run "$S" --timing --what-if
expect profile-unknown --profile -- validate --profile nosuch
expect profile-broken --profile -- validate --profile "$C/gemm.json"
expect e2e-scenarios-missing --e2e-scenarios -- validate --e2e "$E2E" --e2e-scenarios "$tmp/nonexistent"
expect e2e-scenarios-alone --e2e-scenarios -- validate --e2e-scenarios "$src/microbench/e2e/scenarios"
expect e2e-with-profile --profile -- validate --e2e "$E2E" --profile h100-sxm
expect e2e-with-records --e2e -- validate "$src/tests/data/validation/published-visible.json" --e2e "$E2E"
expect check-with-base --base -- calibrate --check --profile "$src/hwprofiles/h100-sxm.json" --base "$src/hwprofiles/h100-sxm.json" "$C/gemm.json"
expect fit-with-tolerance --tolerance -- calibrate --base "$src/hwprofiles/h100-sxm.json" -o "$tmp/p.json" --tolerance 5 "$C/gemm.json"
expect fit-with-plot-data --plot-data -- calibrate --base "$src/hwprofiles/h100-sxm.json" -o "$tmp/p.json" --plot-data "$tmp/p.dat" "$C/gemm.json"
[ ! -e "$tmp/p.json" ] || { echo "FAIL: a refused calibrate wrote its profile"; fail=1; }
# in range they are taken
n=$((n + 1))
"$bin" run "$S" -n 2 -t "$tmp/t.json" --trace-max-size '64 MiB' --trace-window 0.5:20 >/dev/null || { echo "FAIL: valid run options refused"; fail=1; }
[ "$fail" = 0 ] && echo "options: $n cases handled as they should be"
exit $fail
