#!/usr/bin/env python3
"""The harness's correctness check: every layout trains the same 8 sequences from the same full
weights, so the first step's loss and gradient norm (and, on the CPU in fp32, the loss after the
timed steps) must agree across configurations and world sizes. The *_nocomm timing references
compute wrong numbers on purpose and are left out.

    python3 check_agreement.py RESULTS.json [MORE.json ...] [--tol 1e-4]

Prints each config's figures and the largest relative deviation from their median; exits 1 if a
deviation exceeds --tol (default: 1e-4 for fp32 / CPU results, 1e-3 for bf16 GPU results; the
2 x H200 run agreed to 3e-5).
"""
import argparse
import json
import statistics
import sys


def load(paths):
    rows, precisions = [], set()
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        precisions.add((doc.get("model") or {}).get("precision", "bf16"))
        for r in doc.get("results", []):
            rows.append(r)
    return rows, precisions


def check(rows, tol):
    """Returns (ok, lines)."""
    keep = [r for r in rows if not r["config"].endswith("_nocomm")]
    lines, ok = [], True
    if len(keep) < 2:
        return True, [f"agreement: {len(keep)} config(s), nothing to compare"]
    for key in ("first_step_loss", "first_step_grad_norm"):
        vals = [r.get(key) for r in keep]
        if any(v is None or v != v for v in vals):
            lines.append(f"agreement: {key} missing or NaN in "
                         f"{[r['config'] for r in keep if r.get(key) is None or r.get(key) != r.get(key)]}")
            ok = False
            continue
        med = statistics.median(vals)
        dev = max(abs(v - med) / abs(med) for v in vals)
        worst = max(keep, key=lambda r: abs(r[key] - med))["config"]
        good = dev <= tol
        ok = ok and good
        lines.append(f"agreement: {key} median {med:.6f}, max rel dev {dev:.2e} ({worst}) over {len(keep)} configs: "
                     f"{'OK' if good else 'MISMATCH'} (tol {tol:g})")
    return ok, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+")
    ap.add_argument("--tol", type=float, default=None)
    a = ap.parse_args()
    rows, precisions = load(a.results)
    tol = a.tol if a.tol is not None else (1e-4 if precisions == {"fp32"} else 1e-3)
    for r in rows:
        print(f"{r['config']:20s} W={r.get('world_size', r['dp'] * r['tp'] * r['pp'])}  loss0 {r['first_step_loss']:.7f}  "
              f"gnorm0 {r['first_step_grad_norm']:.7f}  loss_last {r.get('last_timed_step_loss', float('nan')):.7f}")
    ok, lines = check(rows, tol)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
