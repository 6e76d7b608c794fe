#!/usr/bin/env python3
"""mb_torch_mem: the memory-bound kernels a Megatron-Core step launches, as PyTorch runs them (kind "torch_mem").

    python3 mb_torch_mem.py [--out torch_mem.json] [--device 0] [--shapes 8192x4096,16384x8192,32768x8192]
        [--vocab 32768,131072] [--reps 20]

mb_memory times penumbra's own idealized kernels (16-byte accesses, one pass); this times the
kernels the frameworks actually launch for the same work, through PyTorch on the same GPU, so
that each op class can be priced at the bandwidth the real kernel reaches. For each activation
shape [tokens, hidden] (bf16) and each op, two warm-ups, then reps timed with CUDA events,
rotating over enough input sets that every run reads from HBM (>= 3x L2). Per row: `op`,
`cls` (the penumbra memory class the op is priced by; "dropout" rows are what `penumbra
calibrate` fits the dropout class from), `tokens`, `hidden` (or `vocab`),
`moved_bytes` (every input read once + every output written once, the op model's count: for
dropout with its 1-byte mask),
`median_ns`, `min_ns`, `gbps` = moved_bytes / median_ns, and `copy_gbps`, the bandwidth of a
bf16 clone of the same bytes timed alternately with it, so `vs_copy` = gbps / copy_gbps is free
of clock drift. Ops:
  - clone (bf16 copy), add (residual add), cast_bf16_fp32 / cast_fp32_bf16;
  - bias_dropout_add: Megatron-Core's fused training function (bias + x, dropout p = 0.1,
    + residual) scripted as Megatron scripts it (torch.jit.script), and with p = 0 as Megatron
    runs models without dropout;
  - layer_norm / rms_norm forward and backward (torch.nn.functional, fp32 statistics, bf16 I/O);
  - gelu (tanh) and swiglu (silu(gate) * up) forward and backward, eager, and swiglu as
    Megatron-Core's scripted fused_bias_swiglu and its backward;
  - the unfused vocab-parallel cross entropy's passes over [tokens, vocab] fp32 logits (cast,
    max, in-place subtract, exp, sum, divide; backward: in-place multiply and cast to bf16), as
    one op: megatron/core/tensor_parallel/cross_entropy.py;
  - the same fused functions compiled with torch.compile, as Megatron-Core's jit_fuser compiles
    them (megatron/core/jit.py): bias_dropout_add (p = 0.1 and 0) and its backward, swiglu and
    swiglu_back, gelu and gelu_back (the tanh form of fused_bias_gelu.py);
  - adam: torch.optim's fused AdamW step (fused=True) over fp32 params, 28 B per element moved;
  - glu_clamp: the clamps a GLU's two halves get with activation_func_clamp_value (GPT-OSS), as
    Megatron-Core's weighted_bias_quick_geglu_impl applies them before its fused kernel
    (megatron/core/fusions/fused_bias_geglu.py: chunk, clamp each half, cat), forward (two clamps
    and the cat: 16 B per element of a half) and backward through autograd (two clamp backwards
    reading the saved halves and the gradient, the chunk's backward concatenating them: 20 B),
    at [rows, ffn] halves (--glu-shapes).
--ops NAME,... measures only the ops whose name starts with one of the NAMEs.
"""
import argparse
import os
import socket
import sys
import time

import torch
import torch.nn.functional as F

from mb_attention import median, smi, write_results


def scripted(fn):
    """torch.jit.script as Megatron-Core's jit_fuser applies it; the plain function (recorded in
    env.jit) where this PyTorch no longer scripts it."""
    try:
        return torch.jit.script(fn)
    except Exception as e:  # noqa: BLE001 - any scripting failure falls back
        JIT_FAILURES.append(f"{fn.__name__}: {str(e).splitlines()[0][:120]}")
        return fn


JIT_FAILURES = []


def bias_dropout_add(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, prob: float) -> torch.Tensor:
    """megatron/core/fusions/fused_bias_dropout.py _bias_dropout_add_func, training, with a bias."""
    out = torch.nn.functional.dropout(x + bias, p=prob, training=True)
    return residual + out


def swiglu(y: torch.Tensor) -> torch.Tensor:
    y_1, y_2 = torch.chunk(y, 2, -1)
    return torch.nn.functional.silu(y_1) * y_2


def swiglu_back(g: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y_1, y_2 = torch.chunk(y, 2, -1)
    return torch.cat((g * torch.sigmoid(y_1) * (1 + y_1 * (1 - torch.sigmoid(y_1))) * y_2,
                      g * torch.nn.functional.silu(y_1)), -1)


def gelu(y: torch.Tensor) -> torch.Tensor:
    return y * 0.5 * (1.0 + torch.tanh(0.79788456 * y * (1 + 0.044715 * y * y)))


def gelu_back(g: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    tanh_out = torch.tanh(0.79788456 * y * (1 + 0.044715 * y * y))
    ff = 0.5 * y * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * y * y)) + 0.5 * (1 + tanh_out)
    return ff * g


# the same functions scripted with torch.jit.script, as Megatron-Core's jit_fuser did before
# torch.compile
bias_dropout_add_fused_train = scripted(bias_dropout_add)
swiglu_jit = scripted(swiglu)
swiglu_back_jit = scripted(swiglu_back)


def ce_forward_backward(logits_bf16):
    """The unfused vocab-parallel cross entropy, forward and backward, pass by pass."""
    x = logits_bf16.float()
    m = torch.max(x, dim=-1)[0]
    x -= m.unsqueeze(-1)
    torch.exp(x, out=x)
    s = x.sum(dim=-1)
    x.div_(s.unsqueeze(-1))
    x.mul_(s.unsqueeze(-1).reciprocal())  # backward: grad_input.mul_(grad_output)
    return x.to(torch.bfloat16)


def glu_clamp(x: torch.Tensor, clamp_value: float) -> torch.Tensor:
    """The prologue of weighted_bias_quick_geglu_impl when clamp_value is set."""
    x_glu, x_linear = x.chunk(2, -1)
    return torch.cat((x_glu.clamp(min=None, max=clamp_value), x_linear.clamp(min=-clamp_value, max=clamp_value)), -1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torch_mem.json")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--shapes", default="8192x4096,16384x8192,32768x8192")
    ap.add_argument("--vocab", default="32768,131072")
    ap.add_argument("--glu-shapes", default="65536x2880,32768x4096")
    ap.add_argument("--ops", default="")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    wanted = [w for w in a.ops.split(",") if w]
    torch.cuda.set_device(a.device)
    dev = torch.device("cuda", a.device)
    p = torch.cuda.get_device_properties(a.device)
    l2 = getattr(p, "L2_cache_size", 50 << 20)
    before, smi_name, driver = smi(a.device)
    env = {"program": "mb_torch_mem.py", "command_line": " ".join(["mb_torch_mem.py"] + sys.argv[1:]),
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hostname": socket.gethostname(),
           "gpu_name": p.name, "gpu_name_nvidia_smi": smi_name, "gpu_count_used": 1,
           "sm_count": p.multi_processor_count, "l2_bytes": l2, "driver_version": driver,
           "torch_version": torch.__version__, "cuda_version": torch.version.cuda, "clocks_before": [before],
           "env_vars": {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE")},
           "jit_failures": JIT_FAILURES}
    results = []
    bf = torch.bfloat16
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)

    def rnd(*shape, dtype=bf, grad=False):
        t = torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen).to(dtype)
        return t.requires_grad_(grad) if grad else t

    def measure(op, cls, moved, make, run, extra):
        """make() builds one input set; run(set) enqueues the op. Times the op and a bf16 clone of
        the same bytes alternately."""
        if wanted and not any(op.startswith(w) for w in wanted):
            return
        one = make()
        set_bytes = max(moved, 1)
        nsets = max(1, min(8, int(3 * l2 // set_bytes) + 1))
        sets = [one] + [make() for _ in range(nsets - 1)]
        src = torch.empty(int(moved // 4) + 1, device=dev, dtype=bf)  # clone moves 2 x 2 B per element
        for i in range(2):
            run(sets[i % nsets])
            src.clone()
        torch.cuda.synchronize()
        ev = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(a.reps)]
        for r in range(a.reps):
            e = ev[r]
            e[0].record()
            run(sets[r % nsets])
            e[1].record()
            e[2].record()
            src.clone()
            e[3].record()
        torch.cuda.synchronize()
        t = [1e6 * e[0].elapsed_time(e[1]) for e in ev]
        c = [1e6 * e[2].elapsed_time(e[3]) for e in ev]
        med, cmed = median(t), median(c)
        copy_moved = 4.0 * src.numel()
        row = {"op": op, "cls": cls, **extra, "moved_bytes": moved, "median_ns": med, "min_ns": min(t),
               "gbps": moved / med, "copy_gbps": copy_moved / cmed, "vs_copy": (moved / med) / (copy_moved / cmed),
               "reps": a.reps, "input_sets": nsets, "status": "ok"}
        results.append(row)
        print(f"{op:24s} {extra}  {row['gbps']:7.0f} GB/s  ({row['vs_copy']:.2f} of copy)", file=sys.stderr)
        del sets, src

    for spec in a.shapes.split(","):
        T, H = (int(x) for x in spec.split("x"))
        n = T * H
        ex = {"tokens": T, "hidden": H}
        measure("clone", "copy", 4.0 * n, lambda: rnd(T, H), lambda s: s.clone(), ex)
        measure("add", "copy", 6.0 * n, lambda: (rnd(T, H), rnd(T, H)), lambda s: s[0] + s[1], ex)
        measure("cast_bf16_fp32", "copy", 6.0 * n, lambda: rnd(T, H), lambda s: s.float(), ex)
        measure("cast_fp32_bf16", "copy", 6.0 * n, lambda: rnd(T, H, dtype=torch.float32), lambda s: s.to(bf), ex)
        for prob in (0.1, 0.0):
            measure(f"bias_dropout_add_p{prob:g}", "copy", 6.0 * n + 2 * H,
                    lambda: (rnd(T, H), rnd(H), rnd(T, H)),
                    lambda s, prob=prob: bias_dropout_add_fused_train(s[0], s[1], s[2], prob), ex)
        w = torch.ones(H, device=dev, dtype=bf)
        b = torch.zeros(H, device=dev, dtype=bf)
        measure("layer_norm_fwd", "norm", 4.0 * n, lambda: rnd(T, H), lambda s: F.layer_norm(s, (H,), w, b), ex)
        measure("rms_norm_fwd", "norm", 4.0 * n, lambda: rnd(T, H), lambda s: F.rms_norm(s, (H,), w), ex)
        for name, fn in (("layer_norm_bwd", lambda x: F.layer_norm(x, (H,), w.float().to(bf).requires_grad_(),
                                                                     b.float().to(bf).requires_grad_())),
                         ("rms_norm_bwd", lambda x: F.rms_norm(x, (H,), w.float().to(bf).requires_grad_()))):
            def make(fn=fn):
                x = rnd(T, H, grad=True)
                y = fn(x)
                return x, y, rnd(T, H)
            # backward reads x (or its normalized copy) and dy, writes dx: 6 B per element
            measure(name, "norm", 6.0 * n, make,
                    lambda s: torch.autograd.grad(s[1], s[0], s[2], retain_graph=True), ex)
        measure("gelu_fwd", "activation", 4.0 * n, lambda: rnd(T, H), lambda s: F.gelu(s, approximate="tanh"), ex)

        def make_gelu():
            x = rnd(T, H, grad=True)
            return x, F.gelu(x, approximate="tanh"), rnd(T, H)
        measure("gelu_bwd", "activation", 6.0 * n, make_gelu,
                lambda s: torch.autograd.grad(s[1], s[0], s[2], retain_graph=True), ex)
        measure("swiglu_fwd", "activation", 6.0 * n, lambda: (rnd(T, H), rnd(T, H)),
                lambda s: F.silu(s[0]) * s[1], ex)

        def make_swiglu():
            g, u = rnd(T, H, grad=True), rnd(T, H, grad=True)
            return (g, u), F.silu(g) * u, rnd(T, H)
        measure("swiglu_bwd", "activation", 10.0 * n, make_swiglu,
                lambda s: torch.autograd.grad(s[1], s[0], s[2], retain_graph=True), ex)
        # Megatron-Core's fused_bias_swiglu (scripted): [T, 2H] in, [T, H] out; back: 2H + H in, 2H out
        measure("swiglu_fwd_jit", "activation", 6.0 * n, lambda: rnd(T, 2 * H), swiglu_jit, ex)
        measure("swiglu_bwd_jit", "activation", 10.0 * n, lambda: (rnd(T, H), rnd(T, 2 * H)),
                lambda s: swiglu_back_jit(s[0], s[1]), ex)
    # Megatron-Core's jit_fuser is torch.compile (megatron/core/jit.py, PyTorch >= 2.2): the fused
    # functions as it compiles them, forward and backward
    compiled = {}
    try:
        compiled = {"bda": torch.compile(bias_dropout_add, dynamic=False),
                    "swiglu": torch.compile(swiglu, dynamic=False),
                    "swiglu_back": torch.compile(swiglu_back, dynamic=False),
                    "gelu": torch.compile(gelu, dynamic=False),
                    "gelu_back": torch.compile(gelu_back, dynamic=False)}
    except Exception as e:  # noqa: BLE001
        JIT_FAILURES.append("torch.compile: " + str(e).splitlines()[0][:160])
    for spec in a.shapes.split(",") if compiled else []:
        T, H = (int(x) for x in spec.split("x"))
        n = T * H
        ex = {"tokens": T, "hidden": H}
        # bytes as the op model counts them (workload/ops.c): x and the residual read, the output
        # written, and with dropout its 1-byte mask written; backward: dy and the mask read, dx
        # written (the residual's gradient is dy itself)
        for prob in (0.1, 0.0):
            measure(f"bias_dropout_add_p{prob:g}_compiled", "dropout" if prob > 0 else "copy",
                    (7.0 if prob > 0 else 6.0) * n,
                    lambda: (rnd(T, H, grad=True), rnd(H, grad=True), rnd(T, H, grad=True)),
                    lambda s, prob=prob: compiled["bda"](s[0], s[1], s[2], prob), ex)

        def make_bda():
            x, b_, r = rnd(T, H, grad=True), rnd(H, grad=True), rnd(T, H, grad=True)
            return (x, r), compiled["bda"](x, b_, r, 0.1), rnd(T, H)
        measure("bias_dropout_add_p0.1_bwd_compiled", "dropout", 5.0 * n, make_bda,
                lambda s: torch.autograd.grad(s[1], s[0], s[2], retain_graph=True), ex)
        measure("swiglu_fwd_compiled", "activation", 6.0 * n, lambda: rnd(T, 2 * H), compiled["swiglu"], ex)
        measure("swiglu_bwd_compiled", "activation", 10.0 * n, lambda: (rnd(T, H), rnd(T, 2 * H)),
                lambda s: compiled["swiglu_back"](s[0], s[1]), ex)
        measure("gelu_fwd_compiled", "activation", 4.0 * n, lambda: rnd(T, H), compiled["gelu"], ex)
        measure("gelu_bwd_compiled", "activation", 6.0 * n, lambda: (rnd(T, H), rnd(T, H)),
                lambda s: compiled["gelu_back"](s[0], s[1]), ex)
    for V in (int(x) for x in a.vocab.split(",")):
        T = 8192
        measure("cross_entropy_unfused", "copy", (38.0 + 14.0) * T * V, lambda: rnd(T, V),
                ce_forward_backward, {"tokens": T, "vocab": V})
    for N in (1 << 24, 1 << 26):
        def make_adam(N=N):
            ps = [torch.zeros(N, device=dev, dtype=torch.float32, requires_grad=True)]
            ps[0].grad = torch.randn(N, device=dev, dtype=torch.float32, generator=gen)
            opt = torch.optim.AdamW(ps, lr=1e-4, fused=True)
            opt.step()
            return opt
        measure("adam_fused", "optimizer", 28.0 * N, make_adam, lambda s: s.step(), {"elements": N})
    def kernels_of(run, s):
        """The CUDA kernels one call launches (torch.profiler), recorded in the row."""
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            run(s)
            torch.cuda.synchronize()
        return sorted(e.name[:80] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)

    for spec in a.glu_shapes.split(","):
        R, Fh = (int(x) for x in spec.split("x"))
        n = R * Fh
        ex = {"tokens": R, "hidden": Fh}
        measure("glu_clamp_fwd", "copy", 16.0 * n, lambda: rnd(R, 2 * Fh), lambda s: glu_clamp(s, 7.0), ex)

        def make_clamp():
            x = rnd(R, 2 * Fh, grad=True)
            return x, glu_clamp(x, 7.0), rnd(R, 2 * Fh)
        measure("glu_clamp_bwd", "copy", 20.0 * n, make_clamp,
                lambda s: torch.autograd.grad(s[1], s[0], s[2], retain_graph=True), ex)
        if results and results[-1]["op"] == "glu_clamp_bwd":
            try:
                results[-2]["kernels"] = kernels_of(lambda s: glu_clamp(s, 7.0), rnd(R, 2 * Fh))
                st = make_clamp()
                results[-1]["kernels"] = kernels_of(
                    lambda s: torch.autograd.grad(s[1], s[0], s[2], retain_graph=True), st)
            except Exception as e:  # noqa: BLE001 - the kernel list is information
                results[-1]["kernels_error"] = str(e).splitlines()[0][:160]
    torch.cuda.synchronize()
    write_results(a.out, "torch_mem", env, results, a.device)


if __name__ == "__main__":
    main()
