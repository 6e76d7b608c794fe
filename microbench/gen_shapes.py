#!/usr/bin/env python3
"""Emit the GEMM shapes of the penumbra model table for microbench/mb_gemm.

Output, one shape a line:  M N K LAYOUT PASS
  M,N,K   the row-major product  C[M,N] = op(A)[M,K] . op(B)[K,N]
  LAYOUT  cuBLAS (column-major) transa/transb, as Transformer Engine issues them:
          fprop  Y[T,N]  = X[T,K] . W[N,K]^T   M=T N=N K=K   TN
          dgrad  dX[T,K] = dY[T,N] . W[N,K]    M=T N=K K=N   NN
          wgrad  dW[N,K] = dY[T,N]^T . X[T,K]  M=N N=K K=T   NT
  PASS    fprop | dgrad | wgrad (fp8 runs fprop with fast accumulation, as TE does)

Shapes are deduplicated on (M,N,K,LAYOUT,PASS); a comment line before the
shapes lists how many (model, tp, T, gemm) sources produced them.

--moe: the expert GEMMs of the MoE models (Transformer Engine's grouped linear runs n_local
GEMMs of one shape per micro-batch), with balanced routing and expert TP size etp = 1:
  Tmoe = seq * mbs / tp       tokens of the sequence-parallel shard entering the MoE layer
  n_local = experts / ep      experts per rank
  m = Tmoe * topk * etp / n_local   token rows per expert
  fc1: K = hidden, N = moe_ffn (2 if gated) / etp;  fc2: K = moe_ffn / etp, N = hidden
  (fprop/dgrad/wgrad as above, T = m), and the router: T = Tmoe, K = hidden, N = experts.
Router lines carry a sixth field "bf16": mb_gemm times them in bf16 only (the router runs
outside the fp8 autocast). Shapes whose (M,N,K) the model or grid list already holds are left
out (the table keys on (M,N,K), so they are measured already); the header says how many.
A comment line per (model, tp, ep, mbs) case gives its Tmoe, n_local and m.
Usage: gen_shapes.py [--grid | --moe] > shapes.txt
"""
import sys

# name: hidden, ffn, heads, kv_heads, head_dim, vocab, gated
MODELS = {
    "llama2-7b": (4096, 11008, 32, 32, 128, 32000, True),
    "llama2-13b": (5120, 13824, 40, 40, 128, 32000, True),
    "llama2-70b": (8192, 28672, 64, 8, 128, 32000, True),
    "llama3-8b": (4096, 14336, 32, 8, 128, 128256, True),
    "llama3-70b": (8192, 28672, 64, 8, 128, 128256, True),
    "llama3.1-405b": (16384, 53248, 128, 8, 128, 128256, True),
    "gpt3-175b": (12288, 49152, 96, 96, 128, 51200, False),
    "nemotron4-15b": (6144, 24576, 48, 8, 128, 256000, False),
    "nemotron4-340b": (18432, 73728, 96, 8, 192, 256000, False),
}
# name: hidden, moe_ffn, experts, topk, gated, seq, cases (tp, ep, mbs)
MOE_MODELS = {
    "qwen3-30b-a3b": (2048, 768, 128, 8, True, 4096, ((1, 8, 2), (1, 16, 1), (1, 8, 1))),
    "qwen3-235b-a22b": (4096, 1536, 128, 8, True, 4096, ((2, 32, 1), (1, 8, 1))),
    "gpt-oss-120b": (2880, 2880, 128, 4, True, 4096, ((1, 8, 4), (1, 8, 1))),
    "mixtral-8x7b": (4096, 14336, 8, 2, True, 4096, ((1, 8, 1), (2, 4, 1), (4, 8, 1))),
}
MOE_ETP = 1
TPS = (1, 2, 4, 8)
TOKENS = (2048, 4096, 8192, 16384)
GRID = (256, 512, 1024, 2048, 4096, 8192, 16384)


def linears(h, ffn, heads, kv, hd, vocab, gated, tp):
    """(name, in_features K, out_features N) of one TP shard."""
    kv_tp = max(1, kv // tp)  # Megatron replicates KV heads when tp > kv_heads
    return [
        ("qkv", h, (heads // tp + 2 * kv_tp) * hd),
        ("proj", heads * hd // tp, h),
        ("fc1", h, ffn * (2 if gated else 1) // tp),
        ("fc2", ffn // tp, h),
        ("logits", h, vocab // tp),
    ]


def model_shapes():
    seen = {}
    for name, (h, ffn, heads, kv, hd, vocab, gated) in MODELS.items():
        for tp in TPS:
            for t in TOKENS:
                for gemm, k_in, n_out in linears(h, ffn, heads, kv, hd, vocab, gated, tp):
                    for key in ((t, n_out, k_in, "TN", "fprop"),
                                (t, k_in, n_out, "NN", "dgrad"),
                                (n_out, k_in, t, "NT", "wgrad")):
                        seen.setdefault(key, 0)
                        seen[key] += 1
    return seen


def passes(t, k_in, n_out):
    """fprop, dgrad, wgrad keys of a linear K=k_in -> N=n_out over t token rows."""
    return ((t, n_out, k_in, "TN", "fprop"),
            (t, k_in, n_out, "NN", "dgrad"),
            (n_out, k_in, t, "NT", "wgrad"))


def exact_div(a, b, what):
    if a % b:
        raise SystemExit(f"gen_shapes.py: {what}: {a} is not a multiple of {b}")
    return a // b


def moe_shapes():
    """(shapes, cases, already): shape key -> [sources, bf16_only]; one comment per case; the
    number of MoE keys left out because the model or grid list holds their (M,N,K)."""
    measured = {key[:3] for key in model_shapes()} | {key[:3] for key in grid_shapes()}
    seen, cases, already = {}, [], set()
    etp = MOE_ETP
    for name, (h, ffn, experts, topk, gated, seq, runs) in MOE_MODELS.items():
        for tp, ep, mbs in runs:
            tmoe = exact_div(seq * mbs, tp, f"{name} seq*mbs/tp")
            n_local = exact_div(experts, ep, f"{name} experts/ep")
            m = exact_div(tmoe * topk * etp, n_local, f"{name} Tmoe*topk*etp/n_local")
            n_fc1 = exact_div(ffn * (2 if gated else 1), etp, f"{name} fc1 width/etp")
            k_fc2 = exact_div(ffn, etp, f"{name} moe_ffn/etp")
            cases.append(f"# {name} tp={tp} ep={ep} etp={etp} mbs={mbs}: Tmoe={tmoe} "
                         f"n_local={n_local} m={m} fc1 {h}->{n_fc1} fc2 {k_fc2}->{h} "
                         f"router {h}->{experts} over Tmoe")
            gemms = [(m, h, n_fc1, False), (m, k_fc2, h, False), (tmoe, h, experts, True)]
            for t, k_in, n_out, bf16_only in gemms:
                for key in passes(t, k_in, n_out):
                    if key[:3] in measured:
                        already.add(key)
                        continue
                    src = seen.setdefault(key, [0, True])
                    src[0] += 1
                    src[1] = src[1] and bf16_only  # an expert GEMM of that shape needs fp8 too
    return seen, cases, len(already)


def grid_shapes():
    out = {}
    for m in GRID:
        for n in GRID:
            for k in GRID:
                # keep the grid short: skip the corner where all three are tiny
                # or the product is enormous (> 2^40 multiply-adds)
                if m * n * k > 1 << 40:
                    continue
                if max(m, n, k) < 1024:
                    continue
                out[(m, n, k, "TN", "fprop")] = 1
    return out


def main_moe():
    shapes, cases, already = moe_shapes()
    total = sum(2.0 * m * n * k for (m, n, k, _, _) in shapes)
    print(f"# moe shapes: {len(shapes)} unique, {sum(s[0] for s in shapes.values())} sources, "
          f"{total:.3e} flop per pass over the list; {already} more already in the model/grid "
          f"lists; sixth field: dtypes (router: bf16 only)")
    for c in cases:
        print(c)
    for (m, n, k, lay, p), (_, bf16_only) in sorted(shapes.items()):
        print(m, n, k, lay, p, *(["bf16"] if bf16_only else []))


def main():
    if "--moe" in sys.argv[1:]:
        main_moe()
        return
    grid = "--grid" in sys.argv[1:]
    shapes = grid_shapes() if grid else model_shapes()
    total = sum(2.0 * m * n * k for (m, n, k, _, _) in shapes)
    print(f"# {'grid' if grid else 'model'} shapes: {len(shapes)} unique, "
          f"{sum(shapes.values())} sources, {total:.3e} flop per pass over the list")
    for (m, n, k, lay, p) in sorted(shapes):
        print(m, n, k, lay, p)


if __name__ == "__main__":
    main()
