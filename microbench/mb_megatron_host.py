#!/usr/bin/env python3
"""mb_megatron_host: the host time of Megatron-Core's own transformer layers (kind "megatron_host").

    python3 mb_megatron_host.py --megatron MEGATRON_LM_DIR --out megatron_host.json

What a Megatron-LM step's Python costs per layer, measured on Megatron-Core's layers themselves
rather than on a bare PyTorch layer (mb_host.py): a TransformerBlock of the local spec
(get_gpt_layer_local_spec: ColumnParallelLinear / RowParallelLinear with their custom autograd
functions, the unfused DotProductAttention, Megatron's fused bias-GeLU / bias-dropout-add jit
functions, the CUDA RNG tracker's fork around every dropout), wrapped in Megatron-Core's
DistributedDataParallel (its main_grad hooks run in the backward), built as
`microbench/megatron_runs.sh` configures its runs (`gpt`: LayerNorm, GeLU, biases, dropout 0.1;
`llama`: RMSNorm, SwiGLU, no biases, GQA 4:1, unfused RoPE).

Each row times the block's forward and its backward on the host (time.perf_counter around
`block(...)` and around `out.backward(...)`; neither waits for the GPU) and on the GPU (events),
at two sizes: `tiny` (hidden 256, sequence 256: the GPU finishes each kernel before the host
launches the next, so the host runs beside an idle GPU) and `full` (the runs' own hidden size and
sequence: the GPU runs behind or beside the host, as in training). torch.profiler counts the CUDA
kernels (memsets and copies included) of one forward and one forward + backward, so a row also
gives the host time per kernel launched.

Each (variant, size) is measured twice, under two wrappers (`wrapper`): Megatron-Core's
DistributedDataParallel (`ddp`) and Megatron-FSDP (`fsdp`: FullyShardedDataParallel with
optim_grads_params, every TransformerLayer an FSDP unit, as `--use-megatron-fsdp` builds it), over
a data-parallel group of one: the FSDP rows' difference per layer is what its hooks cost the host
per unit and pass (the pre-forward all-gather and release, the pre-backward all-gather, the
post-backward gradient copy and reduce-scatter, their NCCL calls included).

Each (variant, size) is also measured in the shape of the Transformer Engine spec
(`spec` "te_shaped", DDP only): get_gpt_layer_with_transformer_engine_spec's structure (no
separate layer norms: the norm fused into the QKV and FC1 linears; TransformerLayer, SelfAttention,
MLP and the bias-dropout-add unchanged) with each TE module replaced by a plain PyTorch module of
the same interface (a norm and a matmul, a matmul, one scaled_dot_product_attention), since the
machine has no Transformer Engine. Beyond its kernels' launches at the eager per-kernel rate, such a
layer's host time is Megatron-Core's own Python around the TE modules (the layer, attention and MLP
forwards, the QKV split and RoPE, the bias-dropout-adds, the DDP hooks), which a TE-spec layer
pays too; the TE modules' own Python beyond a plain module call is `module_ns` (published).

Megatron-LM's public source is carried to the machine; Transformer Engine and Apex are not
needed (the local spec and torch's fallbacks).
"""
import argparse
import os
import statistics
import sys
import time

import torch

from mb_attention import write_results
from mb_host import fwd_bwd_times, host_env

VARIANTS = {
    # name: (layers, heads, query groups, ffn, norm, gated, bias, dropout, rope, mbs, full hidden, full seq)
    "gpt": dict(layers=12, heads=16, groups=16, ffn_mult=4, norm="LayerNorm", gated=False, bias=True, dropout=0.1,
                rope=False, mbs=4, hidden=2048, seq=1024),
    "llama": dict(layers=16, heads=16, groups=4, ffn=5632, norm="RMSNorm", gated=True, bias=False, dropout=0.0,
                  rope=True, mbs=2, hidden=2048, seq=2048),
}
SIZES = {"tiny": (256, 256), "full": None}
WRAPPERS = ("ddp", "fsdp")


def init_megatron(src):
    sys.path.insert(0, src)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    parallel_state.initialize_model_parallel(1, 1)
    model_parallel_cuda_manual_seed(1234)


class NullLinear(torch.nn.Module):
    """A TE linear's interface as plain PyTorch: (output, bias) from one matmul, behind the layer
    norm TE's LayerNormLinear fuses in front of it when `norm` is set."""

    def __init__(self, input_size, output_size, *, config, bias=True, skip_bias_add=False, norm=None, **_):
        super().__init__()
        kw = dict(device="cuda", dtype=config.params_dtype)
        self.weight = torch.nn.Parameter(torch.randn(output_size, input_size, **kw) * 0.02)
        self.bias = torch.nn.Parameter(torch.zeros(output_size, **kw)) if bias else None
        self.skip_bias_add, self.norm, self.eps = skip_bias_add, norm, config.layernorm_epsilon
        if norm:
            self.norm_weight = torch.nn.Parameter(torch.ones(input_size, **kw))
            self.norm_bias = torch.nn.Parameter(torch.zeros(input_size, **kw)) if norm == "LayerNorm" else None

    def forward(self, x):
        import torch.nn.functional as F
        if self.norm == "RMSNorm":
            x = F.rms_norm(x, (x.shape[-1],), self.norm_weight, self.eps)
        elif self.norm == "LayerNorm":
            x = F.layer_norm(x, (x.shape[-1],), self.norm_weight, self.norm_bias, self.eps)
        out = torch.matmul(x, self.weight.t())
        if self.bias is not None and not self.skip_bias_add:
            return out + self.bias, None
        return out, self.bias


def null_norm_linear(norm):
    def make(*args, **kw):
        return NullLinear(*args, norm=norm, **kw)
    return make


class NullAttention(torch.nn.Module):
    """TEDotProductAttention's interface as one causal scaled_dot_product_attention call
    ([s, b, heads, d] in, [s, b, heads * d] out)."""

    def __init__(self, *_, **__):
        super().__init__()

    def forward(self, query, key, value, attention_mask, attn_mask_type=None, attention_bias=None,
                packed_seq_params=None, **_):
        import torch.nn.functional as F
        q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=q.shape[1] != k.shape[1])
        return out.permute(2, 0, 1, 3).reshape(out.shape[2], out.shape[0], -1)


def te_shaped_spec(v):
    """get_gpt_layer_with_transformer_engine_spec's structure without Transformer Engine."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.identity_op import IdentityOp

    spec = get_gpt_layer_local_spec(normalization=v["norm"])
    sm = spec.submodules
    sm.input_layernorm = IdentityOp
    sm.pre_mlp_layernorm = IdentityOp
    def subs(x):  # a ModuleSpec, or a builder (functools.partial) given its submodules
        return x.submodules if hasattr(x, "submodules") else x.keywords["submodules"]

    att, mlp = subs(sm.self_attention), subs(sm.mlp)
    att.linear_qkv, att.core_attention, att.linear_proj = null_norm_linear(v["norm"]), NullAttention, NullLinear
    mlp.linear_fc1, mlp.linear_fc2 = null_norm_linear(v["norm"]), NullLinear
    return spec


def build(v, hidden, seq, wrapper, spec_kind="local"):
    import torch.nn.functional as F
    from megatron.core.distributed import (DistributedDataParallel, DistributedDataParallelConfig,
                                           FullyShardedDataParallel)
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlock
    from megatron.core.transformer.transformer_config import TransformerConfig

    heads = v["heads"]
    ffn = v.get("ffn") or v["ffn_mult"] * hidden
    if hidden != v["hidden"]:  # the tiny size keeps the ffn / hidden ratio
        ffn = ffn * hidden // v["hidden"]
    cfg = TransformerConfig(
        num_layers=v["layers"], hidden_size=hidden, ffn_hidden_size=ffn, num_attention_heads=heads,
        num_query_groups=v["groups"], kv_channels=hidden // heads, normalization=v["norm"],
        gated_linear_unit=v["gated"], activation_func=F.silu if v["gated"] else F.gelu,
        add_bias_linear=v["bias"], hidden_dropout=v["dropout"], attention_dropout=v["dropout"],
        bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
        masked_softmax_fusion=False, gradient_accumulation_fusion=False, persist_layer_norm=False,
        apply_rope_fusion=False, bias_activation_fusion=True, bias_dropout_fusion=True,
        transformer_impl="local")
    spec = te_shaped_spec(v) if spec_kind == "te_shaped" else get_gpt_layer_local_spec(normalization=v["norm"])
    block = TransformerBlock(cfg, spec).cuda().bfloat16()  # as Float16Module casts the model
    if wrapper == "fsdp":  # as training.py's get_model with --use-megatron-fsdp (v1, its defaults)
        dcfg = DistributedDataParallelConfig(grad_reduce_in_fp32=True, use_distributed_optimizer=True,
                                             overlap_grad_reduce=True, overlap_param_gather=True,
                                             use_megatron_fsdp=True,
                                             data_parallel_sharding_strategy="optim_grads_params")
        ddp = FullyShardedDataParallel(cfg, dcfg, block)
    else:
        ddp = DistributedDataParallel(cfg, DistributedDataParallelConfig(grad_reduce_in_fp32=True), block)
    b = v["mbs"]
    x = torch.randn(seq, b, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    gout = torch.randn_like(x)
    mask = torch.ones(b, 1, seq, seq, device="cuda").tril() < 0.5  # the mock dataset's causal mask
    rope = RotaryEmbedding(kv_channels=hidden // heads, rotary_percent=1.0)(seq) if v["rope"] else None
    return ddp, x, gout, mask, rope


def kernels(fn):
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def measure(name, v, size, wrapper, reps, spec_kind="local"):
    hidden, seq = SIZES[size] or (v["hidden"], v["seq"])
    ddp, x, gout, mask, rope = build(v, hidden, seq, wrapper, spec_kind)
    def fwd():
        return ddp(x, mask, rotary_pos_emb=rope)

    def zero():  # finalize_model_grads, then the next step's zero_grad
        if wrapper == "fsdp":
            ddp.finish_grad_sync()
        ddp.zero_grad_buffer()
        x.grad = None

    fwd_ns, bwd_ns, gpu_ns = fwd_bwd_times(fwd, zero, gout, reps)
    # back to back, as a training step runs them: no synchronisation between the iterations
    loop_ns = []
    for r in range(3):
        zero()
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(5):
            fwd().backward(gout)
        loop_ns.append((time.perf_counter_ns() - t0) / 5)
        torch.cuda.synchronize()
    k_fwd = kernels(lambda: fwd())
    k_all = kernels(lambda: fwd().backward(gout))
    n = v["layers"]
    row = {"test": "block", "variant": name, "size": size, "wrapper": wrapper, "spec": spec_kind, "layers": n,
           "hidden": hidden, "seq": seq,
           "micro_batch": v["mbs"], "reps": reps,
           "host_fwd_ns_per_layer": statistics.median(fwd_ns) / n,
           "host_bwd_ns_per_layer": statistics.median(bwd_ns) / n,
           "host_fwd_ns_min": min(fwd_ns) / n, "host_bwd_ns_min": min(bwd_ns) / n,
           "gpu_ns_per_layer": statistics.median(gpu_ns) / n,
           "host_loop_ns_per_layer": statistics.median(loop_ns) / n,
           "kernels_fwd_per_layer": k_fwd / n, "kernels_bwd_per_layer": (k_all - k_fwd) / n}
    row["host_ns_per_fwd_kernel"] = row["host_fwd_ns_per_layer"] / row["kernels_fwd_per_layer"]
    row["host_ns_per_bwd_kernel"] = row["host_bwd_ns_per_layer"] / row["kernels_bwd_per_layer"]
    print(f"{name:6s} {size:5s} {wrapper:4s} {spec_kind:9s} host fwd {row['host_fwd_ns_per_layer'] / 1e3:7.0f} us/layer "
          f"({row['kernels_fwd_per_layer']:.1f} kernels, {row['host_ns_per_fwd_kernel'] / 1e3:5.1f} us each)  "
          f"bwd {row['host_bwd_ns_per_layer'] / 1e3:7.0f} us/layer ({row['kernels_bwd_per_layer']:.1f}, "
          f"{row['host_ns_per_bwd_kernel'] / 1e3:5.1f} us)  back to back {row['host_loop_ns_per_layer'] / 1e3:7.0f}  gpu {row['gpu_ns_per_layer'] / 1e3:7.0f} us/layer",
          file=sys.stderr)
    del ddp, x, gout, mask
    torch.cuda.empty_cache()
    return row


def run_main(program, default_out, rounds, cases, measure_case, flags=()):
    """The command line both Megatron host benchmarks share: --megatron, --out, --reps, --rounds
    and the on/off `flags` given; Megatron initialised on GPU 0, then every case of `cases` (a
    list, or a function of the parsed arguments giving it) measured by measure_case(case, reps)
    once per round, rounds interleaved, and the rows written as kind "megatron_host"."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--megatron", required=True, help="a checkout of Megatron-LM's public source")
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=rounds, help="each case measured this many times, interleaved")
    for flag, what in flags:
        ap.add_argument(flag, action="store_true", help=what)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    env = host_env(program, 0)
    init_megatron(a.megatron)
    rows = []
    for rnd in range(a.rounds):
        for case in (cases(a) if callable(cases) else cases):
            row = measure_case(case, a.reps)
            row["round"] = rnd
            rows.append(row)
    write_results(a.out, "megatron_host", env, rows, 0)


def main():
    def cases(a):
        if a.te_shaped:
            return [(name, v, size, "ddp", spec) for name, v in VARIANTS.items() for size in SIZES
                    for spec in ("local", "te_shaped")]
        return [(name, v, size, wrapper, "local") for name, v in VARIANTS.items() for size in SIZES
                for wrapper in WRAPPERS]

    te = ("--te-shaped", "each (variant, size) as the local spec in DDP, then right after it TE-shaped "
          "(a pair measured in the same minute: the host's speed drifts from hour to hour)")
    run_main("mb_megatron_host.py", "megatron_host.json", 2, cases,
             lambda c, reps: measure(c[0], c[1], c[2], c[3], reps, c[4]), flags=(te,))


if __name__ == "__main__":
    main()
