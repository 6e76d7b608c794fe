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
Usage: gen_shapes.py [--grid] > shapes.txt
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


def main():
    grid = "--grid" in sys.argv[1:]
    shapes = grid_shapes() if grid else model_shapes()
    total = sum(2.0 * m * n * k for (m, n, k, _, _) in shapes)
    print(f"# {'grid' if grid else 'model'} shapes: {len(shapes)} unique, "
          f"{sum(shapes.values())} sources, {total:.3e} flop per pass over the list")
    for (m, n, k, lay, p) in sorted(shapes):
        print(m, n, k, lay, p)


if __name__ == "__main__":
    main()
