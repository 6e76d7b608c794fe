#!/usr/bin/env python3
"""Prints penumbra's predictions for microbench/e2e/scenarios/*.json beside the measured
e2e results (a Markdown table). No GPU needed.

    python3 microbench/e2e/compare.py [--penumbra build/penumbra]
        [--results hwprofiles/calibration/h200-sxm/e2e-results.json]
"""
import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--penumbra", default=os.path.join(ROOT, "build", "penumbra"))
    ap.add_argument("--results", default=os.path.join(ROOT, "hwprofiles", "calibration", "h200-sxm",
                                                      "e2e-results.json"))
    a = ap.parse_args()
    with open(a.results) as f:
        meas = {r["config"]: r for r in json.load(f)["results"]}
    print("| config | step measured (ms) | step predicted (ms) | exposed comm measured, rank 0 / mean of ranks (ms) "
          "| exposed comm predicted (ms) | compute measured, rank 0 (ms) | compute predicted (ms) "
          "| non-compute measured per rank (ms) | bubble + exposed predicted per stage (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(HERE, "scenarios", "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        out = subprocess.run([a.penumbra, "run", path, "--format", "json"], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"| {name} | penumbra failed: {out.stderr.strip()[:120]} |")
            continue
        p = json.loads(out.stdout)
        r = meas.get(name)
        if r is None:
            print(f"| {name} | not measured |")
            continue
        pe = sum(p["exposed_comm_s"].values()) * 1e3
        em = r.get("exposed_comm_ms_mean_over_ranks")
        if em is None:
            em = sum(pr["exposed_comm_ms"] for pr in r["per_rank"]) / len(r["per_rank"])
        nonc_m = " / ".join(f"{pr['step_time_ms'] - pr['compute_ms']:.1f}" for pr in r["per_rank"] if "compute_ms" in pr)
        nonc_p = " / ".join(f"{(st['bubble_s'] + sum(st['exposed_comm_s'].values())) * 1e3:.1f}" for st in p["stages"])
        print(f"| {name} | {r['step_time_ms']:.1f} | {p['iteration_time_s'] * 1e3:.1f} | "
              f"{r['exposed_comm_ms']:.1f} / {em:.1f} | {pe:.1f} | "
              f"{r['compute_ms']:.1f} | {p['compute_s'] * 1e3:.1f} | {nonc_m} | {nonc_p} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
