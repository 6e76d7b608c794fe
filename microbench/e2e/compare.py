#!/usr/bin/env python3
"""Prints penumbra's predictions for microbench/e2e/scenarios/*.json beside the measured
e2e results (a Markdown table). No GPU needed.

    python3 microbench/e2e/compare.py [--penumbra build/penumbra]
        [--results hwprofiles/calibration/h200-sxm/e2e-results.json [--results MORE.json ...]]

Several --results files are merged (a config measured twice: the later file wins); scenarios
with no measurement are listed on one line at the end.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def ms(x):
    """A measured figure, or "-" where the run has none (no profile: CPU runs, --profile-steps 0)."""
    return "-" if x is None else f"{x:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--penumbra", default=os.path.join(ROOT, "build", "penumbra"))
    ap.add_argument("--results", action="append", default=None)
    a = ap.parse_args()
    meas = {}
    for path in a.results or [os.path.join(ROOT, "hwprofiles", "calibration", "h200-sxm", "e2e-results.json")]:
        with open(path) as f:
            meas.update({r["config"]: r for r in json.load(f)["results"]})
    unmeasured = []
    print("| config | step measured (ms) | step predicted (ms) | exposed comm measured, rank 0 / mean of ranks (ms) "
          "| exposed comm predicted (ms) | compute measured, rank 0 (ms) | compute predicted (ms) "
          "| non-compute measured per rank (ms) | bubble + exposed predicted per stage (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(HERE, "scenarios", "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name not in meas:
            unmeasured.append(name)
            continue
        out = subprocess.run([a.penumbra, "run", path, "--format", "json"], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"| {name} | penumbra failed: {out.stderr.strip()[:120]} |")
            continue
        p = json.loads(out.stdout)
        r = meas[name]
        pe = sum(p["exposed_comm_s"].values()) * 1e3
        em = r.get("exposed_comm_ms_mean_over_ranks")
        if em is None and all("exposed_comm_ms" in pr for pr in r["per_rank"]):
            em = sum(pr["exposed_comm_ms"] for pr in r["per_rank"]) / len(r["per_rank"])
        nonc_m = " / ".join(f"{pr['step_time_ms'] - pr['compute_ms']:.1f}" for pr in r["per_rank"] if "compute_ms" in pr)
        nonc_p = " / ".join(f"{(st['bubble_s'] + sum(st['exposed_comm_s'].values())) * 1e3:.1f}" for st in p["stages"])
        print(f"| {name} | {r['step_time_ms']:.1f} | {p['iteration_time_s'] * 1e3:.1f} | "
              f"{ms(r.get('exposed_comm_ms'))} / {ms(em)} | {pe:.1f} | "
              f"{ms(r.get('compute_ms'))} | {p['compute_s'] * 1e3:.1f} | {nonc_m or '-'} | {nonc_p} |")
    if unmeasured:
        print(f"\nnot measured: {', '.join(unmeasured)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
