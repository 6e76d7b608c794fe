#!/usr/bin/env python3
"""profile_summary: what the GPU did during a profiled Megatron-LM iteration (kind "profile_summary").

    python3 profile_summary.py TRACE.json[.gz] --out summary.json

Reads the Chrome trace that Megatron-LM's --use-pytorch-profiler writes (torch.profiler:
`<tensorboard_dir>/../torch_profile/rank-0.json.gz`) and keeps what penumbra's step model can be
held against, small enough to commit: the profiled span (first kernel start to last kernel end on
the GPU), the time at least one kernel ran (the union of kernel intervals), the idle remainder,
the kernel count, and per kernel name its count and total time (names cut at 120 characters).
"""
import argparse
import collections
import gzip
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--out", default="profile_summary.json")
    a = ap.parse_args()
    opener = gzip.open if a.trace.endswith(".gz") else open
    with opener(a.trace, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kernels.sort(key=lambda e: e["ts"])
    busy, end = 0.0, None
    for e in kernels:
        s, t = e["ts"], e["ts"] + e.get("dur", 0.0)
        if end is None or s >= end:
            busy += t - s
            end = t
        elif t > end:
            busy += t - end
            end = t
    span = (max(e["ts"] + e.get("dur", 0.0) for e in kernels) - kernels[0]["ts"]) if kernels else 0.0
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for e in kernels:
        r = by_name[e["name"][:120]]
        r[0] += 1
        r[1] += e.get("dur", 0.0)
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])
    out = {"schema_version": 1, "kind": "profile_summary", "trace": a.trace, "span_us": span, "busy_us": busy,
           "idle_us": span - busy, "kernels": len(kernels),
           "by_name": [{"name": k, "count": v[0], "total_us": v[1]} for k, v in top]}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"span {span / 1e3:.1f} ms, GPU busy {busy / 1e3:.1f} ms, idle {(span - busy) / 1e3:.1f} ms, "
          f"{len(kernels)} kernels", file=sys.stderr)
    for k, v in top[:25]:
        print(f"  {v[1] / 1e3:8.2f} ms  {v[0]:6d}x  {k[:90]}", file=sys.stderr)


if __name__ == "__main__":
    main()
