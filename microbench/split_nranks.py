#!/usr/bin/env python3
"""Split a multi-group result file (kind "collective" or "gemm_nccl_overlap", rows with nranks
2, 4, 8, ...) into one file per group size, and print busbw per group size side by side.

    python3 microbench/split_nranks.py collective.json [OUT_DIR]

Writes OUT_DIR/<name>-n<k>.json (default OUT_DIR: beside the input) with the same header
(env, truncated, note) and only the rows of k ranks; env.nranks becomes k and env.group_sizes
is kept. For inspection: `penumbra calibrate` takes the whole multi-group file (its pair figures
from the 2-rank rows, its measured table from every group size; see microbench/MULTIGPU.md).
"""
import copy
import json
import os
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    src = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(src))
    with open(src) as f:
        doc = json.load(f)
    rows = doc.get("results", [])
    sizes = sorted({r.get("nranks", 2) for r in rows})
    stem = os.path.splitext(os.path.basename(src))[0]
    os.makedirs(out_dir, exist_ok=True)
    for k in sizes:
        part = copy.deepcopy(doc)
        part["results"] = [r for r in rows if r.get("nranks", 2) == k]
        part["env"]["nranks"] = k
        path = os.path.join(out_dir, f"{stem}-n{k}.json")
        with open(path, "w") as f:
            json.dump(part, f, indent=0)
            f.write("\n")
        print(f"{path}: {len(part['results'])} rows")
    if doc.get("kind") == "collective":
        print(f"\nbusbw GB/s at NCCL's default channels (ctas 0), by group size {sizes}:")
        big = [2 ** 20, 2 ** 26, 2 ** 30, 2 ** 32]
        for coll in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "sendrecv"):
            for b in big:
                cells = []
                for k in sizes:
                    hit = [r for r in rows if r.get("nranks", 2) == k and r["collective"] == coll
                           and r["ctas_requested"] == 0 and abs(r["size_bytes"] - b) <= 2 * k]
                    cells.append(f"{hit[0]['busbw_gbps']:7.1f}" if hit else "      -")
                print(f"  {coll:14s} {b:>11d} B " + " ".join(cells))
        print("latency (us) of the smallest size, ctas 0:")
        for coll in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "sendrecv"):
            cells = []
            for k in sizes:
                hit = sorted((r for r in rows if r.get("nranks", 2) == k and r["collective"] == coll
                              and r["ctas_requested"] == 0), key=lambda r: r["size_bytes"])
                cells.append(f"{hit[0]['median_ns'] / 1e3:7.1f}" if hit else "      -")
            print(f"  {coll:14s} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
