#!/usr/bin/env python3
"""mb_host_ref: this host's speed beside a published host's (kind "host_ref").

    python3 mb_host_ref.py [--out host_ref.json] [--rounds 5] [--iters 50] [--reps 15]

A training step's host time (kernel launches, PyTorch dispatch, Megatron-Core's and Transformer
Engine's Python) scales with the speed of the CPU core that runs it, and the profiles' host
figures were measured on one machine (`host.cpu`). To set that machine beside the hosts of
published runs, each round times the one figure a published measurement exists for:

  linear  one torch.nn.Linear(2048, 2048) forward in bf16 on 8192 tokens (a 7B-class layer's
          shape), host time per call: NVIDIA/TransformerEngine issue 2053 measured it on an H100
          DGX (Intel Xeon Platinum 8480C) at 13.48 us for torch (GH200 33.17 us, GB200 37.08 us).
          `iters` calls back to back after a warm-up (each call's GEMM runs ~100 us on the GPU, so
          the host never waits for it), timed with perf_counter, `reps` times, the median; mode
          "grad" (the parameters require grad, as in training: autograd records each call) and
          "no_grad".
  layer   beside it in the same minute, mb_host.py's eager h2048 GPT layer (a stack of `layers`,
          forward and backward host time per layer), so that the minute's speed can be set
          beside the hour the profile's host figures were measured in (host_torch.json's row).
  cpu     mb_host.py's pure-Python loop (ns per iteration).

Rounds are interleaved so that drifts of the host's speed (tens of percent within the hour on a
shared VM) show as spread, not as bias.
"""
import argparse
import json
import sys
import time

import torch

from mb_attention import median
from mb_host import cpu_rows, host_env, layer_eager, stack


def linear_host_ns(dev, grad, iters, reps):
    m = torch.nn.Linear(2048, 2048, device=dev, dtype=torch.bfloat16)
    m.requires_grad_(grad)
    x = torch.randn(8192, 2048, device=dev, dtype=torch.bfloat16)
    ts = []
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        for r in range(reps + 3):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(iters):
                y = m(x)
            t1 = time.perf_counter_ns()
            del y
            torch.cuda.synchronize()
            if r >= 3:
                ts.append((t1 - t0) / iters)
    return median(ts), min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="host_ref.json")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    env = host_env("mb_host_ref.py", a.device)
    rows = []
    for rnd in range(a.rounds):
        for grad in (True, False):
            med, best = linear_host_ns(dev, grad, a.iters, a.reps)
            rows.append({"test": "linear", "shape": "8192x2048 @ 2048x2048^T + b", "dtype": "bf16",
                         "mode": "grad" if grad else "no_grad", "iters": a.iters, "reps": a.reps,
                         "host_ns": med, "host_ns_min": best, "round": rnd})
            print(f"round {rnd} linear {rows[-1]['mode']:7s} host {med / 1e3:6.2f} us/call", file=sys.stderr)
        m, x, gout = stack(dev, "h2048", a.layers)
        f, b, tot, gpu = layer_eager(m, x, gout, a.reps)
        rows.append({"test": "layer", "size": "h2048", "variant": "eager", "layers": a.layers, "reps": a.reps,
                     "host_fwd_ns": f / a.layers, "host_bwd_ns": b / a.layers, "host_ns": tot / a.layers,
                     "gpu_ns": gpu / a.layers, "round": rnd})
        print(f"round {rnd} layer h2048 eager host fwd {f / a.layers / 1e3:7.1f} us/layer", file=sys.stderr)
        del m, x, gout
        for row in cpu_rows():
            row["round"] = rnd
            rows.append(row)
    env["date_utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc = {"schema_version": 1, "kind": "host_ref", "truncated": False, "note": "", "env": env, "results": rows}
    with open(a.out, "w") as fh:
        json.dump(doc, fh, indent=1)
    print(f"wrote {len(rows)} host_ref results to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
