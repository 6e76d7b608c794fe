"""mb_gemm_duty.py: how fast a GEMM runs under the power cap as a function of how busy the GPU is.

A training step is not a GEMM loop: GEMMs alternate with memory-bound kernels, communication and
host waits, so the GPU's average power, and with it the SM clock its power limiter allows, depends
on the duty cycle. This times one GEMM shape in blocks of `block_ms` of back-to-back runs separated
by idle gaps (the host sleeps after synchronising), for duty cycles from 1.0 down, after a 3 s heat,
each for `seconds` s; the GEMM rate is the median over the blocks of the last half. nvidia-smi's
SM clock and power are sampled after each setting. With --gap copy the gaps are not idle but
filled with device-to-device copies of 256 MiB (a memory-bound kernel, as a step's norms,
activations and casts are), so the duty cycle is the GEMMs' share of a busy GPU.

    python3 microbench/mb_gemm_duty.py --out gemm_duty.json [--seconds 4] [--gap idle|copy]
"""
import argparse, json, os, socket, subprocess, sys, time

import torch


def smi():
    q = "clocks.sm,power.draw,clocks_event_reasons.active"
    try:
        out = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.strip().split(",")
        return {"sm_mhz": float(out[0]), "power_w": float(out[1]), "reasons": out[2].strip()}
    except Exception:
        return {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gemm_duty.json")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--gap", choices=("idle", "copy"), default="idle")
    a = ap.parse_args()
    dev = torch.device("cuda")
    src = torch.empty(128 << 20, device=dev, dtype=torch.bfloat16)  # 256 MiB
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    c0.record(); [dst.copy_(src) for _ in range(10)]; c1.record(); torch.cuda.synchronize()
    t_copy = c0.elapsed_time(c1) / 10 / 1e3  # s
    results = []
    shapes = [("bf16", 8192, 8192, 8192), ("bf16", 4096, 4096, 2048), ("fp8", 8192, 8192, 8192)]
    settings = [(1.0, 20.0), (0.8, 20.0), (0.6, 20.0), (0.4, 20.0), (0.2, 20.0), (0.5, 2.0), (0.5, 200.0)]
    for dt, m, n, k in shapes:
        if dt == "fp8":
            A = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            B = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
            one = torch.ones((), device=dev)
            gemm = lambda: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)
        else:
            A = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            B = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
            gemm = lambda: A @ B
        for _ in range(5):
            gemm()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); [gemm() for _ in range(20)]; e1.record(); torch.cuda.synchronize()
        t_one = e0.elapsed_time(e1) / 20  # ms
        t0 = time.time()  # heat
        while time.time() - t0 < 3.0:
            [gemm() for _ in range(20)]
            torch.cuda.synchronize()
        for duty, block_ms in settings:
            per_block = max(1, int(block_ms / t_one + 0.5))
            gap_s = per_block * t_one / 1e3 * (1.0 - duty) / duty
            rates, t0 = [], time.time()
            while time.time() - t0 < a.seconds:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); [gemm() for _ in range(per_block)]; e.record(); torch.cuda.synchronize()
                if time.time() - t0 > a.seconds / 2:
                    rates.append(2.0 * m * n * k * per_block / (s.elapsed_time(e) / 1e3) / 1e12)
                if gap_s > 0 and a.gap == "copy":
                    for _ in range(max(1, int(gap_s / t_copy + 0.5))):
                        dst.copy_(src)
                    torch.cuda.synchronize()
                elif gap_s > 0:
                    time.sleep(gap_s)
            rates.sort()
            row = {"dtype": dt, "m": m, "n": n, "k": k, "gap": a.gap, "duty": duty, "block_ms": block_ms,
                   "gemms_per_block": per_block,
                   "tflops_median": rates[len(rates) // 2], "blocks_timed": len(rates), **smi()}
            print(json.dumps(row), file=sys.stderr)
            results.append(row)
    env = {"program": "mb_gemm_duty.py", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "hostname": socket.gethostname(), "gpu_name": torch.cuda.get_device_name(0), "torch_version": torch.__version__}
    json.dump({"schema_version": 1, "kind": "gemm_duty", "truncated": False, "note": "", "env": env, "results": results},
              open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
