"""Model dimensions, run configurations and penumbra scenarios of the end-to-end harness.

Imports nothing beyond the standard library, so that the scenarios can be written on a machine
without PyTorch (python3 e2e_model.py --write-scenarios DIR).
"""
import argparse
import copy
import json
import os

# Llama-3-8B layer shapes, 8 layers, a 32000-token vocabulary (divisible by 128 * tp).
MODEL = {
    "num_layers": 8,
    "hidden_size": 4096,
    "ffn_hidden_size": 14336,
    "num_attention_heads": 32,
    "num_query_groups": 8,
    "kv_channels": 128,
    "vocab_size": 32000,
    "seq_length": 4096,
    "micro_batch_size": 1,
    "global_batch_size": 8,
    "norm_eps": 1e-5,
    "rope_theta": 500000.0,
}

# Tiny dimensions for a CPU / gloo check of the parallel mechanics (same code paths). The head
# counts divide by 8 (TP up to 8 keeps GQA: 2 query heads per KV head on every rank), and the
# sequence leaves every TP rank 8 rows (the pipelined RS splits them into 4 chunks of 2).
TINY = {
    "num_layers": 4,
    "hidden_size": 64,
    "ffn_hidden_size": 96,
    "num_attention_heads": 16,
    "num_query_groups": 8,
    "kv_channels": 8,
    "vocab_size": 256,
    "seq_length": 64,
    "micro_batch_size": 1,
    "global_batch_size": 8,
    "norm_eps": 1e-5,
    "rope_theta": 10000.0,
}

# Every configuration runs the same global batch (8 sequences), so the first step's loss and
# gradient norm must agree across layouts (a correctness check of the parallel code).
# Configurations exist for world sizes W = 2, 4, 8 (DP over all W GPUs, or TP over all W GPUs);
# the name carries W (dp4_overlap, tp8_sp, ...). pp2_1f1b is for W = 2 only.
#   tp_mode: "sync"    every TP collective blocks the compute stream (no overlap at all)
#            "async"   Megatron-Core / TE without userbuffers: column-parallel backward launches
#                      the input all-gather beside the dgrad GEMM and the dgrad reduce-scatter
#                      beside the wgrad GEMM; forward AG / RS and the row-parallel backward AG
#                      are blocking (this is tp_comm_overlap = false)
#            "overlap" "async" plus TE userbuffers' default methods, rebuilt on NCCL: the
#                      ring-exchange AG->GEMM for qkv/fc1 forward and the proj/fc2 dgrad (TP
#                      steps; step i computes the GEMM on the rows of rank (r - i) mod TP while
#                      the next rows travel one hop round the ring; at TP = 2 the one exchange is
#                      an async NCCL all-gather), the pipelined GEMM->RS for proj/fc2 forward (4
#                      chunks, chunk i's async NCCL reduce-scatter beside GEMM chunk i + 1)
#            "overlap_p2p" as "overlap", with every ring step done by batched torch.distributed
#                      P2P send/recv (NCCL SendRecv kernels), also at TP = 2, and the RS done as
#                      TE's ring-exchange RS: TP - 1 steps, each computing the partial rows of
#                      rank (r + i) mod TP and sending them there while the next are computed
#            "nocomm"  collectives replaced by local copies of the same size (timing only)
#   cdmc: CUDA_DEVICE_MAX_CONNECTIONS of the process group running the config (Megatron asserts 1
#         with TP > 1 on Hopper; Megatron-Bridge's launcher uses 8 otherwise).
WORLD_SIZES = (2, 4, 8)


def _configs():
    c = {}
    for w in WORLD_SIZES:
        c[f"dp{w}_nooverlap"] = {"dp": w, "tp": 1, "pp": 1, "dp_overlap": False, "cdmc": 8, "scenario": True}
        c[f"dp{w}_overlap"] = {"dp": w, "tp": 1, "pp": 1, "dp_overlap": True, "bucket_size": 40_000_000,
                               "cdmc": 8, "scenario": True}
        c[f"dp{w}_nocomm"] = {"dp": w, "tp": 1, "pp": 1, "dp_overlap": False, "nocomm": True, "cdmc": 8,
                              "scenario": False}
        if w == 2:
            c["pp2_1f1b"] = {"dp": 1, "tp": 1, "pp": 2, "cdmc": 8, "scenario": True}
        for suffix, mode, scen in (("sp_sync", "sync", False), ("sp", "async", True), ("sp_overlap", "overlap", True),
                                   ("sp_overlap_p2p", "overlap_p2p", False), ("sp_nocomm", "nocomm", False)):
            c[f"tp{w}_{suffix}"] = {"dp": 1, "tp": w, "pp": 1, "tp_mode": mode, "cdmc": 1, "scenario": scen}
    return c


CONFIGS = _configs()


def world_size(cfg):
    return cfg["dp"] * cfg["tp"] * cfg["pp"]


# Process groups (CUDA_DEVICE_MAX_CONNECTIONS is fixed per process): each holds the configs of
# every world size; e2e.py runs those whose world size is the number of processes it has.
GROUPS = {
    "cdmc8": [n for n, c in CONFIGS.items() if c["cdmc"] == 8],
    "cdmc1": [n for n, c in CONFIGS.items() if c["cdmc"] == 1],
}


def group_configs(group, world):
    """The configs of process group `group` ("cdmc8" / "cdmc1") for `world` processes, those with
    a penumbra scenario first (a run cut short by its time limit loses the references first)."""
    names = [n for n in GROUPS[group] if world_size(CONFIGS[n]) == world]
    return sorted(names, key=lambda n: not CONFIGS[n]["scenario"])


def micro_batches(model, cfg):
    return model["global_batch_size"] // (model["micro_batch_size"] * cfg["dp"])


def scenario_model(model):
    return {
        "num_layers": model["num_layers"],
        "hidden_size": model["hidden_size"],
        "ffn_hidden_size": model["ffn_hidden_size"],
        "num_attention_heads": model["num_attention_heads"],
        "num_query_groups": model["num_query_groups"],
        "kv_channels": model["kv_channels"],
        "gated_linear_unit": True,
        "activation": "swiglu",
        "normalization": "RMSNorm",
        "vocab_size": model["vocab_size"],
        "make_vocab_size_divisible_by": 128,
        "untie_embeddings_and_output_weights": True,
        "add_bias_linear": False,
        "add_qkv_bias": False,
        "hidden_dropout": 0.0,
        "attention_dropout": 0.0,
        "max_position_embeddings": model["seq_length"],
        "position_embedding_type": "rope",
    }


# Where each world size's measurement lives (2: the nvidia-h200-x2 runs; 4 and 8: the nvidia-h200-x8
# run of microbench/multigpu.sh, see microbench/MULTIGPU.md).
RESULTS = {
    2: "hwprofiles/calibration/h200-sxm/e2e-results.json",
    4: "hwprofiles/calibration/h200-sxm-8gpu/e2e-results.json (or h200-sxm-4gpu/), not yet measured",
    8: "hwprofiles/calibration/h200-sxm-8gpu/e2e-results.json, not yet measured",
}


def scenario(name, model=MODEL):
    cfg = CONFIGS[name]
    tp, pp, dp = cfg["tp"], cfg["pp"], cfg["dp"]
    ddp = {"use_distributed_optimizer": False, "overlap_grad_reduce": bool(cfg.get("dp_overlap", False)),
           "overlap_param_gather": False, "grad_reduce_in_fp32": False, "average_in_collective": False}
    if cfg.get("dp_overlap"):
        ddp["bucket_size"] = cfg["bucket_size"]
    comm = {"tp_comm_overlap": cfg.get("tp_mode") in ("overlap", "overlap_p2p")}
    if pp > 1:
        comm["overlap_p2p_comm"] = False
        comm["batch_p2p_comm"] = True
    return {
        "schema_version": 1,
        "name": f"e2e-{name}",
        "description": (f"microbench/e2e harness config {name}: plain-PyTorch Llama-like stack on {dp * tp * pp} x H200, "
                        f"DP {dp} TP {tp} PP {pp}; measured in {RESULTS.get(dp * tp * pp, RESULTS[8])}"),
        "model": scenario_model(model),
        # measured on the device machine, whose host is the one the profile's host figures come from
        "hardware": {"profile": "h200-sxm", "num_gpus": dp * tp * pp, "host_speed": 1},
        # the harness applies RoPE as separate torch ops (apply_rope: a cat, two products, a sum per
        # tensor) and SwiGLU as F.silu(g) * u, i.e. unfused: Megatron-LM's --no-rope-fusion and
        # --no-bias-swiglu-fusion run the same kernels; its loop is plain PyTorch, without
        # Megatron-Core's modules and their Python
        "training": {"seq_length": model["seq_length"], "micro_batch_size": model["micro_batch_size"],
                     "global_batch_size": model["global_batch_size"], "precision": "bf16",
                     "apply_rope_fusion": False, "bias_activation_fusion": False, "framework": "pytorch"},
        "parallel": {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp,
                     "virtual_pipeline_model_parallel_size": None, "context_parallel_size": 1,
                     "sequence_parallel": tp > 1},
        "ddp": ddp,
        "comm_overlap": comm,
        "recompute": {"recompute_granularity": None},
        "env": {"CUDA_DEVICE_MAX_CONNECTIONS": cfg["cdmc"], "NCCL_NVLS_ENABLE": 0},
    }


def write_scenarios(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for name, cfg in CONFIGS.items():
        if not cfg["scenario"]:
            continue
        path = os.path.join(out_dir, f"{name}.json")
        with open(path, "w") as f:
            json.dump(scenario(name), f, indent=2)
            f.write("\n")
        names.append(path)
    return names


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-scenarios", metavar="DIR")
    ap.add_argument("--group-configs", nargs=2, metavar=("GROUP", "WORLD"),
                    help="print the configs of a process group for a world size, comma-separated")
    a = ap.parse_args()
    if a.write_scenarios:
        for p in write_scenarios(a.write_scenarios):
            print(p)
    if a.group_configs:
        print(",".join(group_configs(a.group_configs[0], int(a.group_configs[1]))))
