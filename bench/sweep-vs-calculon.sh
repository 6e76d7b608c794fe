#!/usr/bin/env bash
# penumbra's `sweep` against Calculon on the Llama 3 70B layout sweep (64–1,024 H100s, sequence 8192,
# global batch 512), in one invocation and paired (penumbra, Calculon, penumbra, Calculon, ... ROUNDS
# rounds, same -j), since the machine's speed drifts within minutes. Each side's rate is layouts per
# second of wall time: penumbra's is the layouts its JSON counts as simulated over the command's whole
# wall time (start-up included); Calculon's is bench/calculon-rate.py's, evaluation only (its start-up,
# 1.5–4 s of Python imports and enumeration, left out), a uniform sample of CALCULON_LAYOUTS of its
# 35.5 M-layout enumeration. Prints every round, the medians and their ratio (the target is ≥ 2), and
# the ratio against only the layouts Calculon computes (it refuses about 60 % of its enumeration in
# 0.05 ms each, before modelling them: network tier too small or not filled).
#   CALCULON_DIR=/path/to/calculon bench/sweep-vs-calculon.sh [J=2] [ROUNDS=3]
# Environment: PENUMBRA (default build/penumbra), PYTHON (default /usr/bin/python3, with Debian's
# python3-numpy python3-pandas python3-psutil), CALCULON_LAYOUTS (default 10000).
# Exits 2 when the penumbra binary has no `sweep` command.
set -euo pipefail
j=${1:-2} rounds=${2:-3}
penumbra=${PENUMBRA:-build/penumbra}
python=${PYTHON:-/usr/bin/python3}
layouts=${CALCULON_LAYOUTS:-10000}
here=$(cd "$(dirname "$0")" && pwd)

if ! "$penumbra" sweep --help >/dev/null 2>&1; then
  echo "sweep-vs-calculon: $penumbra has no sweep command" >&2
  exit 2
fi
: "${CALCULON_DIR:?set CALCULON_DIR to a Calculon checkout (bench/RESULTS.md says where to get it)}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
echo "load before: $(cat /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  t0=$(now)
  "$penumbra" sweep --model llama3-70b --profile h100-sxm --gpus 64:1024 --seq-length 8192 \
    --global-batch-size 512 -j "$j" --json "$tmp/sweep.json" >"$tmp/sweep.out"
  t1=$(now)
  "$python" "$here/calculon-rate.py" --calculon "$CALCULON_DIR" -j "$j" --gpus 64:1024 --seq-length 8192 \
    --global-batch-size 512 --layouts "$layouts" --json "$tmp/calculon.json" >"$tmp/calculon.out"
  t2=$(now)
  "$python" - "$r" "$t0" "$t1" "$t2" "$tmp/sweep.json" "$tmp/calculon.json" >>"$tmp/rounds.tsv" <<'EOF'
import json, sys
r, t0, t1, t2 = sys.argv[1], *map(float, sys.argv[2:5])
simulated = json.load(open(sys.argv[5]))["counts"]["simulated"]
c = json.load(open(sys.argv[6]))
print(r, simulated, t1 - t0, c["counts"]["evaluated"], c["wall_s"], t2 - t1, c["computed_per_s"], sep="\t")
EOF
  tail -n 1 "$tmp/rounds.tsv" | awk -F'\t' '{printf "round %d: penumbra %d layouts in %.2f s = %.1f/s | ", $1, $2, $3, $2 / $3;
    printf "Calculon %d in %.2f s (process %.2f s) = %.1f/s, computed %.1f/s\n", $4, $5, $6, $4 / $5, $7}'
done
echo "load after: $(cat /proc/loadavg)"
"$python" - "$j" "$tmp/rounds.tsv" <<'EOF'
import statistics, sys
j = int(sys.argv[1])
rows = [line.split("\t") for line in open(sys.argv[2])]
pen = statistics.median(int(r[1]) / float(r[2]) for r in rows)
cal = statistics.median(int(r[3]) / float(r[4]) for r in rows)
cal_proc = statistics.median(int(r[3]) / float(r[5]) for r in rows)
cal_computed = statistics.median(float(r[6]) for r in rows)
print(f"median of {len(rows)} rounds, -j {j}: penumbra {pen:.1f} layouts/s ({pen / j:.1f} per core), "
      f"Calculon {cal:.1f} ({cal / j:.1f} per core; {cal_proc:.1f} counting its start-up; "
      f"{cal_computed:.1f} counting only the layouts it computes)")
print(f"penumbra / Calculon: {pen / cal:.2f}x (target >= 2); against the layouts Calculon computes, "
      f"{pen / cal_computed:.2f}x")
EOF
