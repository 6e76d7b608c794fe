#!/usr/bin/env python3
"""mb_scaled_mm: FP8 GEMMs as a framework calls them, through torch._scaled_mm (kind "scaled_mm").

    python3 mb_scaled_mm.py [--out scaled_mm.json] [--shapes MxNxK,...] [--reps 20]

mb_gemm times cuBLASLt FP8 GEMMs without scaling factors; Transformer Engine (and torch's
_scaled_mm) pass per-tensor scale pointers, an e4m3 x e4m3 forward with fast accumulation and
e4m3 x e5m2 gradients without it, and a bf16 output. This times, per shape, torch._scaled_mm
(e4m3 x e4m3, fast accumulation; and e5m2 x e4m3 without) and torch.mm in bf16 on the same
shapes, two warm-ups, `reps` runs timed with CUDA events over rotating input sets (>= 3x L2),
so the rows can be set beside the gemm tables (`penumbra calibrate` reads nothing here yet).
Fields: `m`, `n`, `k`, `op` (bf16_mm | fp8_fast | fp8_e5m2_slow), `median_ns`, `min_ns`, `tflops`.
"""
import argparse, json, socket, sys, time
import torch

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="scaled_mm.json")
    ap.add_argument("--shapes", default="8192x7168x8192,8192x8192x28672,8192x28672x8192,8192x10240x8192,"
                    "8192x8192x7168,4096x13312x16384,4096x16384x6656,8192x4096x14336,8192x28672x4096,"
                    "8192x6144x4096,16384x8192x8192,8192x8192x8192")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    dev = torch.device("cuda", 0)
    p = torch.cuda.get_device_properties(0)
    l2 = getattr(p, "L2_cache_size", 50 << 20)
    results = []
    one = torch.ones((), device=dev, dtype=torch.float32)
    for spec in a.shapes.split(","):
        m, n, k = (int(x) for x in spec.split("x"))
        nsets = max(2, min(8, int(3 * l2 // (m * k + n * k)) + 1))
        def timeit(fn, sets):
            for i in range(2):
                fn(sets[i % len(sets)])
            torch.cuda.synchronize()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(a.reps)]
            for r, (s0, s1) in enumerate(ev):
                s0.record(); fn(sets[r % len(sets)]); s1.record()
            torch.cuda.synchronize()
            t = sorted(1e6 * s0.elapsed_time(s1) for s0, s1 in ev)
            return t[len(t) // 2], t[0]
        bsets = [(torch.randn(m, k, device=dev, dtype=torch.bfloat16), torch.randn(n, k, device=dev, dtype=torch.bfloat16)) for _ in range(nsets)]
        rows = {"bf16_mm": timeit(lambda s: torch.mm(s[0], s[1].t()), bsets)}
        e4 = [(x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)) for x, w in bsets]
        rows["fp8_fast"] = timeit(lambda s: torch._scaled_mm(s[0], s[1].t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True), e4)
        e5 = [(x.to(torch.float8_e5m2), w.to(torch.float8_e4m3fn)) for x, w in bsets]
        rows["fp8_e5m2_slow"] = timeit(lambda s: torch._scaled_mm(s[0], s[1].t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=False), e5)
        for op, (med, mn) in rows.items():
            results.append({"m": m, "n": n, "k": k, "op": op, "median_ns": med, "min_ns": mn, "tflops": 2.0 * m * n * k / med / 1e3})
            print(f"{spec:20s} {op:14s} {med/1e3:9.1f} us  {2.0*m*n*k/med/1e3:7.1f} TFLOP/s", file=sys.stderr)
        del bsets, e4, e5
    env = {"program": "mb_scaled_mm.py", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "hostname": socket.gethostname(), "gpu_name": p.name, "torch_version": torch.__version__,
           "cuda_version": torch.version.cuda}
    with open(a.out, "w") as f:
        json.dump({"schema_version": 1, "kind": "scaled_mm", "truncated": False, "note": "", "env": env, "results": results}, f, indent=1)

if __name__ == "__main__":
    main()
