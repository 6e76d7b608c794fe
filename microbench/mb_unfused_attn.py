#!/usr/bin/env python3
"""mb_unfused_attn: the unfused attention of Megatron-Core, kernel by kernel (kind "unfused_attn").

    python3 mb_unfused_attn.py [--out unfused_attn.json] [--device 0] [--seqs 512,1024,2048,4096,8192]
        [--head-dims 64,128] [--batches 8,32,128] [--reps 10]

Megatron-Core's DotProductAttention (megatron/core/transformer/dot_product_attention.py: the core
attention of `--transformer-impl local`, and of `--attention-backend unfused` / `local`; TE's
UnfusedDotProductAttention runs the same kernels) computes attention with batched GEMMs over
B = micro-batch x heads-per-GPU matrices and memory-bound kernels over the [B, s, s] scores:

  forward:  k, v repeat_interleave over the query groups (GQA); torch.baddbmm(buf, q^T, k^T^T,
            beta=0, alpha=1/sqrt(d)) -> scores [B, s, s]; the causal mask, masked_fill_ in place
            (FusedScaleMaskSoftmax.forward_torch_softmax with attention_mask_func); softmax over
            the last dim (bf16 in and out); dropout of the probabilities (attention_dropout > 0);
            torch.bmm(probs, v^T) -> [B, s, d]; the context permuted back, .contiguous().
  backward: (autograd) the copy's backward, bmm's two GEMMs (dP = dC V^T, dV = P^T dC), dropout's
            backward, softmax's backward, masked_fill's backward (a new tensor), baddbmm's two
            GEMMs (dQ = dS K, dK = dS^T Q), the scale, the GQA sums.

Rows, all timed with CUDA events after two warm-ups (median of --reps):
  - `bmm`: each of the six batched GEMMs (op qk, pv, dp, dv, dq, dk), torch laying out its operands
    as the module's tensors are laid out ([s, B, d] transposed: q, k, v, dC), with `batch`, `m`, `n`,
    `k` (C[m,n] = A[m,k] B[k,n] per matrix), `median_ns`, `tflops`. `penumbra calibrate` makes the
    profile's batched-GEMM table from them.
  - `mem`: each memory-bound kernel with `moved_bytes` as penumbra's op model counts it (every
    input read once, every output written once; the [s, s] mask broadcast over B counted once),
    `median_ns`, `gbps`, and `copy_gbps`, a bf16 clone of the same bytes timed alternately, so
    `vs_copy` is free of clock drift. Ops: masked_fill (in place, 4 B / score), softmax_fwd (4),
    softmax_bwd (6), masked_fill_bwd (4), dropout_fwd (5, a 1-byte mask), dropout_bwd (5),
    repeat_interleave (GQA, per output element 4), context_copy (the permute's .contiguous(), 4),
    rope_unfused_fwd / _bwd (Megatron's _apply_rotary_pos_emb_bshd without fusion: per element of
    q or k 20 B over 5 kernels each way).
  - `layer`: the whole forward and backward of the module (forward then autograd backward),
    with the configuration, `fwd_ns`, `bwd_ns`, so the sum of the pieces can be checked.
  - `kernel` (with --profile): every CUDA kernel of one forward and backward of each module
    configuration, in order (torch.profiler): the configuration, `name`, `duration_ns`.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F

from mb_attention import make_env, median, smi, time_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="unfused_attn.json")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seqs", default="512,1024,2048,4096,8192")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--batches", default="8,32,128")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--max-score-bytes", type=float, default=12e9)
    ap.add_argument("--profile", action="store_true",
                    help="also record every kernel of each module forward and backward (torch.profiler)")
    ap.add_argument("--layers", default="",
                    help="module configurations s:b:heads:groups:d:dropout,... (default: four)")
    ap.add_argument("--only-layers", action="store_true", help="time the modules only (no bmm / mem rows)")
    a = ap.parse_args()
    torch.cuda.set_device(a.device)
    dev = torch.device("cuda", a.device)
    env = make_env(a.device, sys.argv[1:])
    env["program"] = "mb_unfused_attn.py"
    env["command_line"] = " ".join(["mb_unfused_attn.py"] + sys.argv[1:])
    results = []
    bf = torch.bfloat16
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)

    def rnd(*shape, dtype=bf):
        return torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen).to(dtype)

    def timed(fn):
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        return median(time_ms(fn, a.reps)) * 1e6

    def bmm_row(op, B, m, n, k, fn, extra):
        ns = timed(fn)
        row = {"kind": "bmm", "op": op, "batch": B, "m": m, "n": n, "k": k, **extra, "median_ns": ns,
               "tflops": 2.0 * B * m * n * k / ns / 1e3}
        results.append(row)
        print(f"bmm {op:3s} B={B:4d} m={m:5d} n={n:5d} k={k:5d}  {row['tflops']:6.1f} TFLOP/s", file=sys.stderr)

    def mem_row(op, moved, fn, extra):
        src = torch.empty(int(moved // 4) + 1, device=dev, dtype=bf)
        for _ in range(2):
            fn()
            src.clone()
        torch.cuda.synchronize()
        ev = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(a.reps)]
        for e in ev:
            e[0].record()
            fn()
            e[1].record()
            e[2].record()
            src.clone()
            e[3].record()
        torch.cuda.synchronize()
        med = median([1e6 * e[0].elapsed_time(e[1]) for e in ev])
        cmed = median([1e6 * e[2].elapsed_time(e[3]) for e in ev])
        copy_gbps = 4.0 * src.numel() / cmed
        row = {"kind": "mem", "op": op, **extra, "moved_bytes": moved, "median_ns": med, "gbps": moved / med,
               "copy_gbps": copy_gbps, "vs_copy": (moved / med) / copy_gbps}
        results.append(row)
        print(f"mem {op:18s} {extra}  {row['gbps']:6.0f} GB/s ({row['vs_copy']:.2f} of copy)", file=sys.stderr)
        del src

    seqs = [int(x) for x in a.seqs.split(",")] if not a.only_layers else []
    dims = [int(x) for x in a.head_dims.split(",")]
    batches = [int(x) for x in a.batches.split(",")]
    for s in seqs:
        for d in dims:
            for B in batches:
                if B * s * s * 2 * 3 > a.max_score_bytes:
                    continue
                ex = {"seq": s, "head_dim": d}
                # the module's tensors: q, k, v, dC as [s, B, d]; scores / probs [B, s, s]
                q, k, v, dc = rnd(s, B, d), rnd(s, B, d), rnd(s, B, d), rnd(s, B, d)
                buf = torch.empty(B, s, s, device=dev, dtype=bf)
                p = torch.softmax(rnd(B, s, s), dim=-1)
                bmm_row("qk", B, s, s, d, lambda: torch.baddbmm(buf, q.transpose(0, 1),
                                                                k.transpose(0, 1).transpose(1, 2),
                                                                beta=0.0, alpha=0.088), ex)
                bmm_row("pv", B, s, d, s, lambda: torch.bmm(p, v.transpose(0, 1)), ex)
                # autograd of C = P V (V as v^T): dP = dC V^T, dV = P^T dC
                bmm_row("dp", B, s, s, d, lambda: torch.bmm(dc.transpose(0, 1), v.transpose(0, 1).transpose(1, 2)), ex)
                bmm_row("dv", B, s, d, s, lambda: torch.bmm(p.transpose(1, 2), dc.transpose(0, 1)), ex)
                # autograd of S = a Q K^T: dQ = a dS K, dK = a dS^T Q (dS: the [B, s, s] gradient)
                bmm_row("dq", B, s, d, s, lambda: torch.bmm(p, k.transpose(0, 1)), ex)
                bmm_row("dk", B, s, d, s, lambda: torch.bmm(p.transpose(1, 2), q.transpose(0, 1)), ex)
                del q, k, v, dc, buf, p
                torch.cuda.empty_cache()
        # memory-bound kernels at one B per sequence (bandwidth does not depend on B at these sizes)
        B = max(b for b in batches if b * s * s * 2 * 4 <= a.max_score_bytes) if any(
            b * s * s * 2 * 4 <= a.max_score_bytes for b in batches) else None
        if B is None:
            continue
        n = B * s * s
        ex = {"seq": s, "batch": B}
        scores = rnd(B, s, s)
        mask = torch.triu(torch.ones(s, s, device=dev, dtype=torch.bool), diagonal=1)
        grad = rnd(B, s, s)
        mem_row("masked_fill", 4.0 * n + s * s, lambda: scores.masked_fill_(mask, -10000.0), ex)
        probs = torch.softmax(scores, dim=-1)
        mem_row("softmax_fwd", 4.0 * n, lambda: torch.softmax(scores, dim=-1), ex)
        mem_row("softmax_bwd", 6.0 * n, lambda: torch._softmax_backward_data(grad, probs, -1, bf), ex)
        mem_row("masked_fill_bwd", 4.0 * n + s * s, lambda: grad.masked_fill(mask, 0.0), ex)
        out, dmask = torch.ops.aten.native_dropout(probs, 0.1, True)
        mem_row("dropout_fwd", 5.0 * n, lambda: torch.ops.aten.native_dropout(probs, 0.1, True), ex)
        mem_row("dropout_bwd", 5.0 * n, lambda: torch.ops.aten.native_dropout_backward(grad, dmask, 1 / 0.9), ex)
        del scores, grad, probs, out, dmask
        torch.cuda.empty_cache()
        for d in dims:
            heads, groups, b = 32, 8, max(1, min(8, (1 << 26) // (s * 32 * d)))
            ex = {"seq": s, "batch": b, "heads": heads, "groups": groups, "head_dim": d}
            kv = rnd(s, b, groups, d)
            mem_row("repeat_interleave", 4.0 * s * b * heads * d,
                    lambda: kv.repeat_interleave(heads // groups, dim=2), ex)
            ctx = rnd(b, heads, s, d)
            mem_row("context_copy", 4.0 * s * b * heads * d, lambda: ctx.permute(2, 0, 1, 3).contiguous(), ex)
            t = rnd(s, b, heads, d)
            freqs = rnd(s, 1, 1, d).float()
            cos_, sin_ = torch.cos(freqs).to(bf), torch.sin(freqs).to(bf)

            def rope_fwd():
                x1, x2 = torch.chunk(t, 2, dim=-1)
                return t * cos_ + torch.cat((-x2, x1), dim=-1) * sin_
            mem_row("rope_unfused_fwd", 20.0 * s * b * heads * d, rope_fwd, ex)
            tg = t.detach().requires_grad_()

            def make_bwd():
                x1, x2 = torch.chunk(tg, 2, dim=-1)
                return tg * cos_ + torch.cat((-x2, x1), dim=-1) * sin_
            y = make_bwd()
            gy = rnd(s, b, heads, d)
            mem_row("rope_unfused_bwd", 20.0 * s * b * heads * d,
                    lambda: torch.autograd.grad(y, tg, gy, retain_graph=True), ex)
            del kv, ctx, t, tg, y, gy
            torch.cuda.empty_cache()

    # the whole module, forward and backward, as DotProductAttention runs it (causal, bf16
    # softmax, GQA 4:1), at a few shapes
    layers = [(2048, 2, 16, 4, 128, 0.0), (2048, 2, 16, 4, 128, 0.1), (4096, 1, 32, 8, 128, 0.0),
              (1024, 4, 16, 16, 64, 0.0)]
    if a.layers:
        layers = [tuple(float(x) if i == 5 else int(x) for i, x in enumerate(spec.split(":")))
                  for spec in a.layers.split(",")]
    for (s, b, heads, groups, d, p_drop) in layers:
        mask = torch.triu(torch.ones(s, s, device=dev, dtype=torch.bool), diagonal=1)

        def fwd(q, k, v):
            k = k.repeat_interleave(heads // groups, dim=2)
            v = v.repeat_interleave(heads // groups, dim=2)
            buf = torch.empty(b * heads, s, s, device=dev, dtype=bf)
            sc = torch.baddbmm(buf, q.reshape(s, b * heads, d).transpose(0, 1),
                               k.reshape(s, b * heads, d).transpose(0, 1).transpose(1, 2), beta=0.0,
                               alpha=d ** -0.5).view(b, heads, s, s)
            pr = torch.softmax(sc.masked_fill_(mask, -10000.0), dim=-1)
            pr = F.dropout(pr, p=p_drop, training=True) if p_drop > 0 else pr
            ctx = torch.bmm(pr.view(b * heads, s, s), v.reshape(s, b * heads, d).transpose(0, 1))
            return ctx.view(b, heads, s, d).permute(2, 0, 1, 3).contiguous()
        q = rnd(s, b, heads, d).requires_grad_()
        k = rnd(s, b, groups, d).requires_grad_()
        v = rnd(s, b, groups, d).requires_grad_()
        go = rnd(s, b, heads, d)
        fwd_ns = timed(lambda: fwd(q, k, v))
        outs = []

        def run_bwd():
            torch.autograd.grad(outs[-1], (q, k, v), go)
        bwd = []
        for r in range(a.reps + 2):
            outs.append(fwd(q, k, v))
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            run_bwd()
            e1.record()
            torch.cuda.synchronize()
            outs.clear()
            if r >= 2:
                bwd.append(e0.elapsed_time(e1) * 1e6)
        if a.profile:
            # every kernel of one forward and backward, in order, as CUPTI sees them
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                out = fwd(q, k, v)
                torch.autograd.grad(out, (q, k, v), go)
                torch.cuda.synchronize()
            for e in prof.events():
                if e.device_type.name == "CUDA":
                    results.append({"kind": "kernel", "seq": s, "batch": b, "heads": heads, "groups": groups,
                                    "head_dim": d, "attention_dropout": p_drop, "name": e.name[:160],
                                    "start_us": e.time_range.start, "duration_ns": e.time_range.elapsed_us() * 1e3})
        results.append({"kind": "layer", "op": "dot_product_attention", "seq": s, "batch": b, "heads": heads,
                        "groups": groups, "head_dim": d, "attention_dropout": p_drop, "fwd_ns": fwd_ns,
                        "bwd_ns": median(bwd)})
        print(f"layer s={s} b={b} heads={heads} groups={groups} d={d} p={p_drop}: fwd {fwd_ns / 1e3:.0f} us, "
              f"bwd {median(bwd) / 1e3:.0f} us", file=sys.stderr)
        del q, k, v, go
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    env["clocks_after"] = [smi(a.device)[0]]
    env["date_utc_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc = {"schema_version": 1, "kind": "unfused_attn", "truncated": False, "note": "", "env": env,
           "results": results}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {len(results)} unfused_attn results to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
