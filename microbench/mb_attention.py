#!/usr/bin/env python3
"""mb_attention: causal bf16 attention forward and backward time (kind "attention").

    python3 mb_attention.py [--out attention.json] [--budget-s 100] [--device 0]
        [--seqs 2048,4096,8192,16384] [--heads 4,8,16,32,64] [--head-dims 128,192]
        [--backends cudnn,flash] [--v-head-dim N]

PyTorch's scaled_dot_product_attention pinned to one backend at a time (cuDNN fused attention,
which Transformer Engine uses by default on Hopper, and FlashAttention-2), batch 1, layout
[b, h, s, d], is_causal=True. Query groups: MHA (kv_heads = heads) and GQA with
kv_heads = max(1, heads // 8) (enable_gqa=True). For each case: two warm-ups, then reps
timed with CUDA events: fwd_ns around the forward (inputs require grad, as in training),
bwd_ns around torch.autograd.grad of a fresh forward's output. FLOPs count causal as half:
fwd_flops = 4*b*h*s^2*d / 2, bwd_flops = 2.5 * fwd_flops. Unsupported cases are recorded with
status "unsupported: <reason>".

With --v-head-dim N (> 0) the values (and the output) have heads of N, the queries and keys of
each --head-dims d: multi-latent attention's shape (DeepSeek-V3: d = 192, N = 128); the rows say
"head_dim_v" and count fwd_flops = 2*b*h*s^2*(d + N) / 2 (QK^T over d, PV over N). calibrate keeps
them out of the attention table and replays them in --check against the table's d-wide kernel
priced for (d + N) / 2d of its work.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def smi(dev_index):
    p = torch.cuda.get_device_properties(dev_index)
    bus = None
    if all(hasattr(p, x) for x in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
        bus = f"{p.pci_domain_id:08X}:{p.pci_bus_id:02X}:{p.pci_device_id:02X}.0"
    q = ("name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,"
         "power.limit,temperature.gpu,clocks_event_reasons.active")
    cmd = ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"]
    if bus:
        cmd += ["-i", bus]
    try:
        line = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
        f = [x.strip() for x in line[0].split(",")] if line else []
    except (OSError, subprocess.SubprocessError):
        f = []

    def num(i):
        try:
            return float(f[i])
        except (IndexError, ValueError):
            return None

    reading = {"device": dev_index, "sm_mhz": num(2), "mem_mhz": num(3), "max_sm_mhz": num(4),
               "max_mem_mhz": num(5), "power_w": num(6), "power_limit_w": num(7), "temp_c": num(8),
               "clocks_event_reasons": f[9] if len(f) > 9 else ""}
    return reading, (f[0] if f else ""), (f[1] if len(f) > 1 else "")


def make_env(dev, argv):
    p = torch.cuda.get_device_properties(dev)
    before, smi_name, driver = smi(dev)
    cuda = torch.version.cuda or "0.0"
    major, minor = (int(x) for x in cuda.split(".")[:2])
    env = {
        "program": "mb_attention.py",
        "command_line": " ".join(["mb_attention.py"] + argv),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hostname": socket.gethostname(),
        "gpu_name": p.name,
        "gpu_name_nvidia_smi": smi_name,
        "gpu_count_visible": torch.cuda.device_count(),
        "gpu_count_used": 1,
        "sm_count": p.multi_processor_count,
        "compute_capability": f"{p.major}.{p.minor}",
        "l2_bytes": getattr(p, "L2_cache_size", None),
        "memory_bytes": p.total_memory,
        "driver_version": driver,
        "cuda_runtime_version": major * 1000 + minor * 10,
        "torch_version": torch.__version__,
        "cudnn_version": torch.backends.cudnn.version(),
        "env_vars": {k: os.environ.get(k) for k in (
            "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE",
            "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")},
        "clocks_before": [before],
    }
    return env


def write_results(path, kind, env, results, device, truncated=False, note=""):
    """The result file every Python benchmark writes: the clocks after, the end date, its rows."""
    env["clocks_after"] = [smi(device)[0]]
    env["date_utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc = {"schema_version": 1, "kind": kind, "truncated": truncated, "note": note, "env": env, "results": results}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {len(results)} {kind} results to {path}", file=sys.stderr)


def time_ms(fn, reps):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]


def median(x):
    s = sorted(x)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def check(backend, dev):
    """Relative error against the math backend in float32 on a small random case."""
    g = torch.Generator(device=dev).manual_seed(1)
    q, k, v = (torch.randn(1, 4, 256, 128, device=dev, generator=g, dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel([BACKENDS[backend]]):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True).float()
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    return float((out - ref).norm() / ref.norm())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="attention.json")
    ap.add_argument("--budget-s", type=float, default=100.0)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seqs", default="2048,4096,8192,16384")
    ap.add_argument("--heads", default="4,8,16,32,64")
    ap.add_argument("--head-dims", default="128,192")
    ap.add_argument("--backends", default="cudnn,flash")
    ap.add_argument("--target-ms", type=float, default=40.0)
    ap.add_argument("--v-head-dim", type=int, default=0)
    a = ap.parse_args()
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    env = make_env(a.device, sys.argv[1:])
    t0 = time.time()
    results, truncated = [], False
    checks = {}
    backends = [b for b in a.backends.split(",") if b]
    for b in backends:
        try:
            checks[b] = check(b, dev)
        except RuntimeError as e:
            checks[b] = f"unsupported: {str(e).splitlines()[0][:200]}"
        print(f"check {b}: {checks[b]}", file=sys.stderr)
    env["correctness_checks"] = checks

    seqs = [int(x) for x in a.seqs.split(",")]
    heads = [int(x) for x in a.heads.split(",")]
    dims = [int(x) for x in a.head_dims.split(",")]
    batch = 1
    for d in dims:
        for s in seqs:
            for h in heads:
                for kvh in sorted({h, max(1, h // 8)}, reverse=True):
                    for b in backends:
                        if time.time() - t0 > a.budget_s:
                            truncated = True
                            break
                        dv = a.v_head_dim if a.v_head_dim > 0 else d
                        fwd_flops = 2.0 * batch * h * s * s * (d + dv) / 2
                        row = {"seq_len": s, "batch": batch, "heads": h, "kv_heads": kvh, "head_dim": d,
                               "causal": True, "dtype": "bf16", "layout": "bhsd", "backend": b,
                               "fwd_flops": fwd_flops, "bwd_flops": 2.5 * fwd_flops}
                        if dv != d:
                            row["head_dim_v"] = dv
                        q = k = v = dout = None
                        try:
                            gen = torch.Generator(device=dev).manual_seed(s + h + d)
                            q = torch.randn(batch, h, s, d, device=dev, dtype=torch.bfloat16, generator=gen)
                            k = torch.randn(batch, kvh, s, d, device=dev, dtype=torch.bfloat16, generator=gen)
                            v = torch.randn(batch, kvh, s, dv, device=dev, dtype=torch.bfloat16, generator=gen)
                            dout = torch.randn(batch, h, s, dv, device=dev, dtype=torch.bfloat16, generator=gen)
                            for t in (q, k, v):
                                t.requires_grad_(True)
                            gqa = kvh != h
                            with sdpa_kernel([BACKENDS[b]]):
                                def fwd():
                                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                                outs = []

                                def bwd():
                                    torch.autograd.grad(outs[-1], (q, k, v), dout)

                                w = time_ms(fwd, 2)
                                reps = max(3, min(20, int(a.target_ms / max(w[-1], 1e-3))))
                                f_ms = time_ms(fwd, reps)
                                b_ms = []
                                for r in range(reps + 2):
                                    outs.append(fwd())
                                    ms = time_ms(bwd, 1)[0]
                                    outs.clear()
                                    if r >= 2:
                                        b_ms.append(ms)
                            fm, bm = median(f_ms) * 1e6, median(b_ms) * 1e6
                            row.update({"fwd_ns": fm, "bwd_ns": bm, "fwd_min_ns": min(f_ms) * 1e6,
                                        "bwd_min_ns": min(b_ms) * 1e6, "fwd_tflops": fwd_flops / fm / 1e3,
                                        "bwd_tflops": 2.5 * fwd_flops / bm / 1e3, "reps": reps, "status": "ok"})
                        except (RuntimeError, torch.OutOfMemoryError) as e:
                            row["status"] = "unsupported: " + str(e).splitlines()[0][:200]
                        results.append(row)
                        q = k = v = dout = None
                last = results[-1] if results else {}
                print(f"[{time.time() - t0:6.1f}s] d={d} s={s} h={h} done "
                      f"({last.get('fwd_tflops', float('nan')):.0f}/"
                      f"{last.get('bwd_tflops', float('nan')):.0f} TFLOP/s last)", file=sys.stderr)
    torch.cuda.synchronize()
    env["clocks_after"] = [smi(a.device)[0]]
    env["date_utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc = {"schema_version": 1, "kind": "attention", "truncated": truncated,
           "note": "time budget reached" if truncated else "", "env": env, "results": results}
    with open(a.out, "w") as f:
        f.write("{\n")
        for i, key in enumerate(("schema_version", "kind", "truncated", "note", "env")):
            f.write(f"{json.dumps(key)}: {json.dumps(doc[key])},\n")
        f.write('"results": [\n')
        f.write(",\n".join(json.dumps(r) for r in results))
        f.write("\n]\n}\n")
    print(f"wrote {len(results)} attention results to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
