#!/usr/bin/env bash
# The compute lost to SM contention (sim/result.h): with TP overlap on, the text report has one line
# for it after the communication table, its classes largest first, and the JSON report has it by
# class with its total, in the summary and in each stage; the total is the classes' sum, within
# the compute time (per stage too), and the text shows the JSON's figure. A scenario without any
# (no communication kernel beside compute) has no such line and zeros in the JSON.
set -euo pipefail
bin=$1 src=$2
cd "$src"
s=scenarios/llama3-70b-h100-64gpu.json # tp_comm_overlap with userbuffers, PP, CP and DP overlap
text=$("$bin" run "$s")
line=$(echo "$text" | grep '^compute lost to SM contention') || { echo "FAIL: $s: no contention line:"; echo "$text"; exit 1; }
[ "$(echo "$text" | grep -c '^compute lost to SM contention')" = 1 ] || { echo "FAIL: $s: more than one contention line"; exit 1; }
echo "$line" | grep -Eq '^compute lost to SM contention  [0-9]+\.[0-9]{4} s  \((dp|tp|pp|cp|ep) [0-9]+\.[0-9]{4}(, (dp|tp|pp|cp|ep) [0-9]+\.[0-9]{4})*\)$' ||
  { echo "FAIL: $s: malformed contention line: $line"; exit 1; }
echo "$text" | grep -B1 '^compute lost to SM contention' | head -1 | grep -q '^  all ' ||
  { echo "FAIL: $s: the contention line should follow the communication table"; exit 1; }
echo "$line" | awk '{ gsub(/[(),]/, ""); for (i = 9; i + 2 <= NF; i += 2) if ($i + 0 < $(i + 2) + 0) exit 1 }' ||
  { echo "FAIL: $s: classes not largest first: $line"; exit 1; }
case "$line" in *'tp '*) ;; *) echo "FAIL: $s: TP overlap's comm kernels should take compute: $line"; exit 1 ;; esac

# JSON: {dp, tp, pp, cp, ep, total} in the summary (before compute_s) and in each stage (after its compute_s)
json=$("$bin" run "$s" --format json)
echo "$json" | awk -v line="$line" '
  function close_block(indent,   sum) {
    sum = v["dp"] + v["tp"] + v["pp"] + v["cp"] + v["ep"]
    if (n != 6) fail("sm_contention_s should have 6 keys, has " n)
    if (v["total"] < sum - 1e-6 * sum || v["total"] > sum + 1e-6 * sum) fail("total " v["total"] " is not the sum " sum)
    if (indent == 2) { top = v["total"]; tops++ }
    else { stages++; if (v["total"] > stage_compute + 1e-9) fail("stage " stages ": " v["total"] " lost of " stage_compute " compute") }
  }
  function fail(m) { print "FAIL: JSON: " m; bad = 1; exit 1 }
  /^  "compute_s": / { compute = $2 + 0 }
  /^      "compute_s": / { stage_compute = $2 + 0 }
  /^(  |      )"sm_contention_s": \{$/ { inb = 1; indent = index($0, "\"") - 1; n = 0; delete v; next }
  inb && /^ *\},?$/ { inb = 0; close_block(indent); next }
  inb { gsub(/[",:]/, ""); v[$1] = $2 + 0; n++ }
  END {
    if (bad) exit 1
    if (tops != 1 || stages < 2) { print "FAIL: JSON: sm_contention_s in the summary " tops + 0 "x, in " stages + 0 " stages"; exit 1 }
    if (!(top > 0) || top > compute) { print "FAIL: JSON: " top " s lost of " compute " s compute"; exit 1 }
    split(line, w, " "); if (sprintf("%.4f", top) != w[6]) { print "FAIL: the text shows " w[6] " s, the JSON " top; exit 1 }
  }' || exit 1

# none without communication kernels beside compute
s=microbench/e2e/scenarios/dp2_nooverlap.json
if "$bin" run "$s" | grep -q 'SM contention'; then echo "FAIL: $s: a contention line without contention"; exit 1; fi
"$bin" run "$s" --format json | grep -A6 '^  "sm_contention_s": {$' | grep -q '^    "total": 0$' ||
  { echo "FAIL: $s: the JSON should say 0 s lost"; exit 1; }
echo "contention: $line"
