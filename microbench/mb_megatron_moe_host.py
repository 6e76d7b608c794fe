#!/usr/bin/env python3
"""mb_megatron_moe_host: the host time of Megatron-Core's MoE layer (kind "megatron_host", rows
"moe_block").

    python3 mb_megatron_moe_host.py --megatron MEGATRON_LM_DIR --out megatron_moe_host.json

What a Megatron-Core MoE layer's Python costs beyond a dense layer's: Qwen3-30B-A3B's layer shape
(hidden 2048, 32 heads of 128 in 4 query groups, RMSNorm, SwiGLU, no biases, expert ffn 768,
sequence 4096, micro-batch 1) and a tiny one (hidden 256, sequence 256: the GPU idles behind the
host), as a TransformerBlock of Megatron-Core's local spec (get_gpt_layer_local_spec) in its DDP:
  - `dense`: the layer with a dense MLP of the expert's ffn (one expert's work, no routing);
  - `moe1`: the same layer with an MoE of one expert, top-1 (softmax before the top-k, which
    Megatron requires at top-1), the alltoall token dispatcher and the aux-loss router
    (Megatron-Bridge's Qwen3 recipes): the router, the dispatcher's preprocessing
    (token counts read back on the host), the permutation and unpermutation, the expert;
  - `moe8`: eight local experts, top-8 (Qwen3-30B-A3B's local experts at EP 16), in the local
    spec's SequentialMLP, which loops over the experts in Python: against `moe1`, per added
    expert, what a SequentialMLP call costs (Megatron-LM without --moe-grouped-gemm; Transformer
    Engine's grouped linear runs them as one call).
Each row: host time of the forward and of the backward per layer (perf_counter around the calls,
which do not wait for the GPU except where Megatron-Core reads the token counts), GPU time, and
the CUDA kernels launched (torch.profiler). `moe1 - dense`, less their kernels' launches, is the
MoE layer's Python beyond a dense layer's: router, dispatcher and permutation orchestration,
the same code whichever linear layers the experts use. World size 1: expert parallelism 1, so
the dispatcher's all-to-alls are not issued (the simulator charges their launches itself).

Megatron-LM's public source is carried to the machine; Transformer Engine and Apex are not needed
(the local spec: unfused permutation and router kernels, whose launches the fit subtracts).
"""
import statistics
import sys

import torch

from mb_host import fwd_bwd_times
from mb_megatron_host import kernels, run_main

SHAPES = {"tiny": dict(hidden=256, heads=2, seq=256), "full": dict(hidden=2048, heads=32, seq=4096)}
KINDS = {"dense": (0, 0), "moe1": (1, 1), "moe8": (8, 8)}  # (experts, top-k)
LAYERS = 4
FFN = {"tiny": 96, "full": 768}  # Qwen3-30B-A3B's expert ffn, scaled with hidden at the tiny size


def build(kind, size):
    import torch.nn.functional as F
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlock
    from megatron.core.transformer.transformer_config import TransformerConfig

    s = SHAPES[size]
    experts, topk = KINDS[kind]
    moe = dict(num_moe_experts=experts, moe_router_topk=topk, moe_ffn_hidden_size=FFN[size],
               moe_token_dispatcher_type="alltoall", moe_router_load_balancing_type="aux_loss",
               moe_aux_loss_coeff=1e-3, moe_grouped_gemm=False, moe_router_dtype="fp32",
               moe_router_pre_softmax=topk == 1) if experts else {}  # Megatron requires it at top-1
    cfg = TransformerConfig(
        num_layers=LAYERS, hidden_size=s["hidden"], ffn_hidden_size=FFN[size], num_attention_heads=s["heads"],
        num_query_groups=max(s["heads"] // 8, 1), kv_channels=128, normalization="RMSNorm",
        gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False, hidden_dropout=0.0,
        attention_dropout=0.0, bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
        masked_softmax_fusion=False, gradient_accumulation_fusion=False, persist_layer_norm=False,
        apply_rope_fusion=False, bias_activation_fusion=False, bias_dropout_fusion=False,
        transformer_impl="local", **moe)
    spec = get_gpt_layer_local_spec(num_experts=experts or None, moe_grouped_gemm=False, normalization="RMSNorm")
    block = TransformerBlock(cfg, spec).cuda().bfloat16()
    ddp = DistributedDataParallel(cfg, DistributedDataParallelConfig(grad_reduce_in_fp32=True), block)
    x = torch.randn(s["seq"], 1, s["hidden"], device="cuda", dtype=torch.bfloat16, requires_grad=True)
    gout = torch.randn_like(x)
    mask = torch.ones(1, 1, s["seq"], s["seq"], device="cuda").tril() < 0.5
    rope = RotaryEmbedding(kv_channels=128, rotary_percent=1.0)(s["seq"])
    return ddp, x, gout, mask, rope


def measure(kind, size, reps):
    ddp, x, gout, mask, rope = build(kind, size)

    def fwd():
        return ddp(x, mask, rotary_pos_emb=rope)

    def zero():
        ddp.zero_grad_buffer()
        x.grad = None

    fwd_ns, bwd_ns, gpu_ns = fwd_bwd_times(fwd, zero, gout, reps)
    k_fwd = kernels(lambda: fwd())
    k_all = kernels(lambda: fwd().backward(gout))
    experts, topk = KINDS[kind]
    row = {"test": "moe_block", "variant": kind, "size": size, "experts": experts, "topk": topk,
           "layers": LAYERS, "hidden": SHAPES[size]["hidden"], "seq": SHAPES[size]["seq"], "reps": reps,
           "host_fwd_ns_per_layer": statistics.median(fwd_ns) / LAYERS,
           "host_bwd_ns_per_layer": statistics.median(bwd_ns) / LAYERS,
           "gpu_ns_per_layer": statistics.median(gpu_ns) / LAYERS,
           "kernels_fwd_per_layer": k_fwd / LAYERS, "kernels_bwd_per_layer": (k_all - k_fwd) / LAYERS}
    print(f"{kind:5s} {size:5s} host fwd {row['host_fwd_ns_per_layer'] / 1e3:7.0f} us/layer "
          f"({row['kernels_fwd_per_layer']:.1f} kernels)  bwd {row['host_bwd_ns_per_layer'] / 1e3:7.0f} us/layer "
          f"({row['kernels_bwd_per_layer']:.1f})  gpu {row['gpu_ns_per_layer'] / 1e3:7.0f} us/layer", file=sys.stderr)
    del ddp, x, gout, mask
    torch.cuda.empty_cache()
    return row


def main():
    cases = [(kind, size) for size in SHAPES for kind in KINDS]
    run_main("mb_megatron_moe_host.py", "megatron_moe_host.json", 3, cases, lambda c, reps: measure(*c, reps))


if __name__ == "__main__":
    main()
