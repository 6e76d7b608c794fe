#!/usr/bin/env python3
"""mb_host: host time PyTorch eager spends per op and per transformer layer (kind "host_torch").

    python3 mb_host.py [--out host_torch.json] [--budget-s 100] [--device 0] [--iters 200]
        [--reps 15] [--layers 4] [--no-kernel-count]

Rows carry `test`:
  op     one PyTorch op on shapes so small that the GPU idles (the "tiny" sizes below), `iters`
         calls back to back, timed `reps` times: host_ns = host wall time per call (dispatch,
         autograd bookkeeping, the caching allocator, the kernel launches), gpu_ns = CUDA-event
         time per call over the same window (about host_ns when the host is the bottleneck).
         mode "no_grad" (under torch.no_grad), "grad" (inputs and weights require grad: autograd
         records the graph, as in a training forward), "graph" (`iters` calls captured in one CUDA
         graph; host_ns = replay host time / iters, gpu_ns = replay GPU time / iters).
  layer  a GPT-like layer (LayerNorm, QKV linear, causal SDPA, projection, dropout, residual,
         LayerNorm, fc1, SwiGLU, fc2, dropout, residual; bf16, training mode), `layers` of them in
         a stack, one forward + backward per rep from an idle GPU; per-layer figures are the
         stack's / layers. variant "eager"; "graphed_per_layer" (torch.cuda.make_graphed_callables
         on each layer: a forward and a backward graph per layer, as Transformer Engine's and
         Megatron's per-layer CUDA graphs); "graphed_whole" (forward + backward of the stack
         captured as one graph and replayed). host_fwd_ns / host_bwd_ns: host wall time until
         forward returns / until backward() returns (it returns once the autograd engine has
         launched everything, not when the GPU is done); gpu_ns: CUDA events around both.
         Sizes: "tiny" (seq 128, h 256, 4 heads, ffn 1024: host-bound) and "h2048" (seq 2048,
         h 2048, 16 heads, ffn 5632: about where a 1B model's layer is).
  collective  one torch.distributed NCCL call on a 1-rank process group (the host side of a
         collective: Python, ProcessGroupNCCL's bookkeeping, the NCCL enqueue; no transfer),
         `iters` calls back to back, async_op False and True; send_recv is a batch_isend_irecv
         of a send and a receive to the rank itself.
  cpu    a pure-Python loop (ns per iteration) and a C-level one (sum over a list): how fast this
         host's core runs Python, to set beside other hosts' figures.
  sync   host round trip of a read the host waits for, GPU idle: torch.cuda.synchronize, a
         scalar's .item() (found-inf, grad norm), an int64[128]'s .tolist() / .cpu() (MoE token
         counts), a non-blocking copy + synchronize.
kernels_fwd_per_layer: the forward's share of kernels_per_layer (eager and per-layer graphs).
kernels_per_call / kernels_per_layer: GPU activities (kernels, memsets, copies) per call counted with
torch.profiler after all timings (the profiler stays out of the timed runs); null with
--no-kernel-count or when the profiler fails.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

from mb_attention import make_env, median, smi


def host_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def host_env(program, device):
    """The result file's env: make_env's, the program and its command line, and the host (its
    CPU model, CPUs online, Python version), which the host figures depend on."""
    env = make_env(device, sys.argv[1:])
    env["program"] = program
    env["command_line"] = " ".join([program] + sys.argv[1:])
    env["host_cpu"] = host_cpu()
    env["host_cpus_online"] = os.cpu_count()
    env["python_version"] = sys.version.split()[0]
    return env


def tensors(dev, grad, s=128, h=256, heads=4, ffn=1024):
    """Inputs of the op table; leaves require grad when `grad`."""
    g = torch.Generator(device=dev).manual_seed(3)

    def r(*shape):
        t = torch.randn(*shape, device=dev, generator=g, dtype=torch.bfloat16)
        return t.requires_grad_(grad)

    hd = h // heads
    return {"s": s, "h": h, "heads": heads, "hd": hd,
            "x": r(s, h), "y": r(s, h), "w_qkv": r(3 * h, h), "b_qkv": r(3 * h), "w_sq": r(h, h),
            "ln_w": r(h), "ln_b": r(h), "u": r(s, 2 * ffn), "scores": r(heads, s, s),
            "q": r(1, heads, s, hd), "k": r(1, heads, s, hd), "v": r(1, heads, s, hd)}


def ops(t):
    """(name, shape, callable, launches a kernel) for the ops a transformer layer issues."""
    s, h, heads, hd = t["s"], t["h"], t["heads"], t["hd"]
    x, y, ln_w = t["x"], t["y"], t["ln_w"]

    def rms_unfused():
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * ln_w

    def swiglu():
        a, b = t["u"].chunk(2, -1)
        return F.silu(a) * b

    return [
        ("linear", f"{s}x{h} @ {3 * h}x{h}^T", lambda: F.linear(x, t["w_qkv"]), True),
        ("linear_bias", f"{s}x{h} @ {3 * h}x{h}^T + b", lambda: F.linear(x, t["w_qkv"], t["b_qkv"]), True),
        ("matmul", f"{s}x{h} @ {h}x{h}", lambda: torch.matmul(x, t["w_sq"]), True),
        ("add", f"{s}x{h}", lambda: x + y, True),
        ("mul", f"{s}x{h}", lambda: x * y, True),
        ("mul_scalar", f"{s}x{h}", lambda: x * 0.5, True),
        ("layer_norm", f"{s}x{h}", lambda: F.layer_norm(x, (h,), ln_w, t["ln_b"]), True),
        ("rms_norm", f"{s}x{h}", lambda: F.rms_norm(x, (h,), ln_w), True),
        ("rms_norm_unfused", f"{s}x{h}", rms_unfused, True),
        ("silu", f"{s}x{h}", lambda: F.silu(x), True),
        ("gelu_tanh", f"{s}x{h}", lambda: F.gelu(x, approximate="tanh"), True),
        ("swiglu", f"{s}x{t['u'].shape[1]}", swiglu, True),
        ("softmax", f"{heads}x{s}x{s}", lambda: torch.softmax(t["scores"], -1), True),
        ("sdpa_causal", f"1x{heads}x{s}x{hd}",
         lambda: F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True), True),
        ("dropout", f"{s}x{h} p=0.1", lambda: F.dropout(x, 0.1, training=True), True),
        ("cat", f"2x {s}x{h}", lambda: torch.cat([x, y], -1), True),
        ("view", f"{s}x{h}", lambda: x.view(s, 1, heads, hd), False),
        ("transpose_contiguous", f"{s}x{h}", lambda: x.view(s, heads, hd).transpose(0, 1).contiguous(), True),
        ("cast_float", f"{s}x{h}", lambda: x.float(), True),
        ("sum", f"{s}x{h}", lambda: x.sum(), True),
    ]


class Layer(torch.nn.Module):
    """A GPT layer as Megatron's local (non-TE) spec computes it, [s, b, h] layout."""

    def __init__(self, h, heads, ffn):
        super().__init__()
        self.heads, self.hd = heads, h // heads
        self.ln1 = torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, 3 * h)
        self.proj = torch.nn.Linear(h, h)
        self.ln2 = torch.nn.LayerNorm(h)
        self.fc1 = torch.nn.Linear(h, 2 * ffn)
        self.fc2 = torch.nn.Linear(ffn, h)

    def forward(self, x):
        s, b, h = x.shape
        qkv = self.qkv(self.ln1(x)).view(s, b, 3, self.heads, self.hd)
        q, k, v = (qkv[:, :, i].permute(1, 2, 0, 3) for i in range(3))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o.permute(2, 0, 1, 3).reshape(s, b, h)
        x = x + F.dropout(self.proj(o), 0.1, self.training)
        a, g = self.fc1(self.ln2(x)).chunk(2, -1)
        return x + F.dropout(self.fc2(F.silu(a) * g), 0.1, self.training)


LAYER_SIZES = {"tiny": (128, 256, 4, 1024), "h2048": (2048, 2048, 16, 5632)}


def stack(dev, size, layers):
    s, h, heads, ffn = LAYER_SIZES[size]
    torch.manual_seed(5)
    m = torch.nn.Sequential(*[Layer(h, heads, ffn) for _ in range(layers)]).to(dev, torch.bfloat16)
    m.train()
    x = torch.randn(s, 1, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    gout = torch.randn(s, 1, h, device=dev, dtype=torch.bfloat16)
    return m, x, gout


def timed(fn, iters, reps):
    """Host ns per call (perf_counter) and GPU ns per call (events) of `iters` calls of fn."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    host, gpu = [], []
    for _ in range(reps):
        torch.cuda.synchronize()
        e0.record()
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            fn()
        t1 = time.perf_counter_ns()
        e1.record()
        torch.cuda.synchronize()
        host.append((t1 - t0) / iters)
        gpu.append(e0.elapsed_time(e1) * 1e6 / iters)
    return median(host), min(host), median(gpu)


def capture(fn, iters):
    """One CUDA graph of `iters` calls of fn (warmed up on a side stream first, as torch asks)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()
    return g


def kernels_per_call(fn, calls=5):
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA) / calls


def op_rows(dev, a, over):
    rows, counts = [], []
    # One untimed pass over every op in both modes first: the first mode timed otherwise pays
    # for the CPU's and the libraries' warm-up (seen: no_grad slower than grad when timed first).
    for grad in (False, True):
        t = tensors(dev, grad=grad)
        with torch.enable_grad() if grad else torch.no_grad():
            for _, _, fn, _ in ops(t):
                for _ in range(a.iters):
                    fn()
    torch.cuda.synchronize()
    for mode in ("no_grad", "grad", "graph"):
        t = tensors(dev, grad=(mode == "grad"))
        ctx = torch.enable_grad() if mode == "grad" else torch.no_grad()
        with ctx:
            for name, shape, fn, launches in ops(t):
                if over():
                    return rows, counts, True
                row = {"test": "op", "op": name, "mode": mode, "shape": shape, "dtype": "bf16",
                       "iters": a.iters, "reps": a.reps, "kernels_per_call": None, "status": "ok"}
                try:
                    if mode == "graph":
                        if not launches:
                            continue
                        g = capture(fn, a.iters)
                        h, mn, gp = timed(g.replay, 1, a.reps)
                        h, mn, gp = h / a.iters, mn / a.iters, gp / a.iters
                        del g
                    else:
                        h, mn, gp = timed(fn, a.iters, a.reps)
                        if mode == "no_grad":
                            counts.append((row, fn))
                    row.update(host_ns=h, min_ns=mn, gpu_ns=gp)
                except RuntimeError as e:
                    row.update(host_ns=None, min_ns=None, gpu_ns=None, status=f"failed: {str(e).splitlines()[0][:200]}")
                rows.append(row)
                print(f"op {name:22s} {mode:8s} host {row['host_ns'] or 0:8.0f} ns  gpu {row['gpu_ns'] or 0:8.0f} ns",
                      file=sys.stderr)
    return rows, counts, False


def sync_rows(dev, a):
    """Host round trips of the reads a step makes (idle GPU): MoE token counts, found-inf, norms."""
    counts = torch.randint(0, 4096, (128,), device=dev)
    flag = torch.zeros((), device=dev)
    rows = []
    for what, fn in (("torch.cuda.synchronize", torch.cuda.synchronize),
                     ("scalar.item", flag.item),
                     ("int64[128].tolist", counts.tolist),
                     ("int64[128].cpu", counts.cpu),
                     ("int64[128].to_cpu_non_blocking+synchronize",
                      lambda: (counts.to("cpu", non_blocking=True), torch.cuda.synchronize()))):
        h, mn, gp = timed(fn, a.iters, a.reps)
        rows.append({"test": "sync", "what": what, "host_ns": h, "min_ns": mn, "iters": a.iters, "reps": a.reps})
        print(f"sync {what:44s} host {h:8.0f} ns", file=sys.stderr)
    return rows


def collective_rows(dev, a):
    """Host cost of torch.distributed NCCL calls, one rank (no transfer: the host side alone)."""
    import torch.distributed as dist
    rows = []
    try:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    except Exception as e:  # noqa: BLE001 (any failure is recorded, not fatal)
        return [{"test": "collective", "status": f"failed: {str(e).splitlines()[0][:200]}"}]
    x = torch.ones(1 << 12, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(x)
    calls = {
        "all_reduce": lambda op: dist.all_reduce(x, async_op=op),
        "all_gather_into_tensor": lambda op: dist.all_gather_into_tensor(out, x, async_op=op),
        "reduce_scatter_tensor": lambda op: dist.reduce_scatter_tensor(out, x, async_op=op),
        "send_recv": lambda op: [w.wait() for w in dist.batch_isend_irecv(
            [dist.P2POp(dist.isend, x, 0), dist.P2POp(dist.irecv, out, 0)])],
    }
    for name, fn in calls.items():
        for op in ((False, True) if name != "send_recv" else (True,)):
            row = {"test": "collective", "call": name, "async_op": op, "bytes": x.numel() * 2, "iters": a.iters,
                   "reps": a.reps, "status": "ok"}
            try:
                h, mn, gp = timed(lambda: fn(op), a.iters, a.reps)
                row.update(host_ns=h, min_ns=mn, gpu_ns=gp)
            except Exception as e:  # noqa: BLE001
                row.update(host_ns=None, min_ns=None, gpu_ns=None, status=f"failed: {str(e).splitlines()[0][:200]}")
            rows.append(row)
            print(f"collective {name:24s} async {op!s:5s} host {row['host_ns'] or 0:8.0f} ns", file=sys.stderr)
    dist.destroy_process_group()
    return rows


def cpu_rows():
    """How fast this core runs Python: a bytecode loop and a C-level reduction."""
    def loop(n):
        s = 0
        for i in range(n):
            s += i & 7
        return s

    data = list(range(1 << 20))
    rows = []
    for what, fn, n in (("python_loop", lambda: loop(1 << 20), 1 << 20), ("builtin_sum", lambda: sum(data), 1 << 20)):
        fn()
        ts = []
        for _ in range(7):
            t0 = time.perf_counter_ns()
            fn()
            ts.append((time.perf_counter_ns() - t0) / n)
        rows.append({"test": "cpu", "what": what, "ns_per_iter": median(ts), "min_ns": min(ts), "reps": 7})
        print(f"cpu {what:12s} {median(ts):6.2f} ns/iter", file=sys.stderr)
    return rows


def fwd_bwd_times(forward, zero, gout, reps):
    """Per repeat after 3 warm-ups, from an idle GPU: the host ns of forward() and of the
    backward of its output (until backward() returns), and the GPU ns of both (events); zero()
    clears the gradients first."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fwd, bwd, gpu = [], [], []
    for r in range(reps + 3):
        zero()
        torch.cuda.synchronize()
        e0.record()
        t0 = time.perf_counter_ns()
        out = forward()
        t1 = time.perf_counter_ns()
        out.backward(gout)
        t2 = time.perf_counter_ns()
        e1.record()
        torch.cuda.synchronize()
        if r >= 3:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
            gpu.append(e0.elapsed_time(e1) * 1e6)
    return fwd, bwd, gpu


def layer_eager(m, x, gout, reps):
    def zero():
        m.zero_grad(set_to_none=True)
        x.grad = None

    fwd, bwd, gpu = fwd_bwd_times(lambda: m(x), zero, gout, reps)
    return median(fwd), median(bwd), median([f + b for f, b in zip(fwd, bwd)]), median(gpu)


def layer_whole_graph(m, x, gout, reps):
    def step():
        m(x).backward(gout)

    m.zero_grad(set_to_none=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    m.zero_grad(set_to_none=True)
    x.grad = None
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    host, gpu = [], []
    for r in range(reps + 3):
        torch.cuda.synchronize()
        e0.record()
        t0 = time.perf_counter_ns()
        g.replay()
        t1 = time.perf_counter_ns()
        e1.record()
        torch.cuda.synchronize()
        if r >= 3:
            host.append(t1 - t0)
            gpu.append(e0.elapsed_time(e1) * 1e6)
    return None, None, median(host), median(gpu), g


def layer_rows(dev, a, over):
    rows, counts = [], []
    for size in LAYER_SIZES:
        for variant in ("eager", "graphed_per_layer", "graphed_whole"):
            if over():
                return rows, counts, True
            m, x, gout = stack(dev, size, a.layers)
            s, h, heads, ffn = LAYER_SIZES[size]
            row = {"test": "layer", "size": size, "variant": variant, "seq": s, "batch": 1, "hidden": h,
                   "heads": heads, "ffn": ffn, "dtype": "bf16", "layers": a.layers,
                   "params_per_layer": sum(p.numel() for p in m[0].parameters()), "reps": a.reps,
                   "kernels_per_layer": None, "status": "ok"}
            try:
                if variant == "graphed_whole":
                    f, b, tot, gpu, g = layer_whole_graph(m, x, gout, a.reps)
                    # The graph reads the stack's memory: keep the stack alive with it.
                    counts.append((row, lambda g=g, keep=(m, x, gout): g.replay()))
                else:
                    if variant == "graphed_per_layer":
                        sample = tuple((x.detach().clone().requires_grad_(True),) for _ in m)
                        m = torch.nn.Sequential(*torch.cuda.make_graphed_callables(tuple(m), sample))
                    f, b, tot, gpu = layer_eager(m, x, gout, a.reps)
                    counts.append((row, (lambda mm, xx, gg: lambda: mm(xx).backward(gg))(m, x, gout)))
                    counts.append((row, (lambda mm, xx: lambda: mm(xx))(m, x), "kernels_fwd_per_layer"))
                n = a.layers
                row.update(host_fwd_ns=None if f is None else f / n, host_bwd_ns=None if b is None else b / n,
                           host_ns=tot / n, gpu_ns=gpu / n)
            except RuntimeError as e:
                row.update(host_fwd_ns=None, host_bwd_ns=None, host_ns=None, gpu_ns=None,
                           status=f"failed: {str(e).splitlines()[0][:200]}")
            rows.append(row)
            print(f"layer {size:6s} {variant:18s} host {row['host_ns'] or 0:10.0f} ns/layer  "
                  f"gpu {row['gpu_ns'] or 0:10.0f} ns/layer", file=sys.stderr)
    return rows, counts, False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="host_torch.json")
    ap.add_argument("--budget-s", type=float, default=100.0)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--no-kernel-count", action="store_true")
    a = ap.parse_args()
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    env = host_env("mb_host.py", a.device)
    t0 = time.time()

    def over():
        return time.time() - t0 > a.budget_s

    rows, counts, truncated = op_rows(dev, a, over)
    rows += sync_rows(dev, a)
    rows += cpu_rows()
    rows += collective_rows(dev, a)
    if not truncated:
        lrows, lcounts, truncated = layer_rows(dev, a, over)
        rows += lrows
        counts += lcounts
    note = "time budget reached" if truncated else ""
    if not a.no_kernel_count:
        key = {"op": "kernels_per_call", "layer": "kernels_per_layer"}
        try:
            for row, fn, *field in counts:
                if over():
                    note = (note + "; " if note else "") + "kernel counts cut by the time budget"
                    break
                if row["test"] == "op":
                    with torch.no_grad():
                        row[key["op"]] = kernels_per_call(fn)
                else:
                    row[field[0] if field else key["layer"]] = kernels_per_call(fn) / a.layers
        except RuntimeError as e:
            note = (note + "; " if note else "") + f"kernel count failed: {str(e).splitlines()[0][:200]}"
    after, _, _ = smi(a.device)
    env["clocks_after"] = [after]
    env["date_utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc = {"schema_version": 1, "kind": "host_torch", "truncated": truncated, "note": note, "env": env,
           "results": rows}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {len(rows)} host_torch results to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
