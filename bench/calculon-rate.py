#!/usr/bin/python3
"""How fast Calculon (github.com/calculon-ai/calculon, an analytical model of Megatron-style LLM training)
evaluates the layouts of the Llama 3 70B sweep: layouts per second of wall time on N worker processes, the
other half of bench/sweep-vs-calculon.sh.

    bench/calculon-rate.py --calculon DIR [-j N] [--gpus 64:1024] [--seq-length 8192]
                           [--global-batch-size 512] [--layouts 10000 | --all] [--seed 1]
                           [--own-search ROWS] [--json FILE|-]

The layouts are those Calculon's own `llm-optimal-execution` tries, in its order: for every GPU count
in --gpus, every TP (dividing the GPUs, hidden and heads), PP (dividing the GPUs and layers), PP
interleaving, recompute (full, attn_only, none), optimizer sharding, TP communication (ar, p2p_rs_ag,
rs_ag = sequence parallel), then per row the inner options: all-gather redo, DP overlap, TP overlap
(none, ring, pipe), weight / activation / optimizer offload (the H100 system has a second memory
tier), micro-batch size, and which network tier carries TP, PP and DP. One difference: a layout's DP
must divide the global batch (Megatron's rule, so every layout trains on exactly that batch), where
the CLI rounds the batch down to a multiple of DP; for a power-of-two GPU count up to 1,024 the two
enumerations are the same (the counts match `llm-optimal-execution -d` at 64, 256 and 1,024 GPUs).

The space holds millions of layouts (5.36 M at 256 GPUs alone, mostly offload and network-tier
variants), hours of Calculon time, so by default a uniform random sample of --layouts of them
(seeded) is evaluated: the rate is that of the whole enumeration, whose size is printed. Each layout
is evaluated in-process as the CLI's worker does: `Llm(app).compile(system, execution)`, `run(system)`
and, when it fits, `get_stats_json()`; a layout Calculon refuses (`Llm.Error`, in compile: network
tier too small or not filled, interleaving, offload; in run: over memory) counts as evaluated.

The model: Calculon has no grouped-query attention (`attention_type` is multihead or multiquery, and
the CLI always uses multihead), so the 8 KV groups are modelled as 64 KV heads (multihead, as the
CLI); its MLP is two matrices (no SwiGLU gate); it models the transformer blocks only (no embedding,
LM head or vocabulary). Datatype float16 (2 bytes, as bf16; the system file has no bfloat16 rates).

Calculon's model writes about 1,300 debug messages per layout through the logger it is given. The CLI's
worker hands it a fresh `logging.Logger('sub')`, which has no level and so builds every record (about
80 % of the time of a computed layout); by default this script gives it a logger at WARNING, which
drops them: the fastest Calculon, the one to beat. --cli-logger times it with the CLI's logger.

Only the evaluation is timed (workers already started); start-up (interpreter, imports, enumeration,
sampling, pool) is reported separately. --own-search ROWS also times Calculon's own search function
(`OptimalExecution.search` through `multiprocessing.Pool.starmap`, as the CLI runs it, with the CLI's
logger) on ROWS random outer rows of the same enumeration.
"""
import argparse
import bisect
import datetime
import json
import logging
import math
import multiprocessing as mp
import os
import random
import subprocess
import sys
import time

# Llama 3 70B in Calculon's application schema (hidden, feedforward, seq_size, attn_heads, attn_size,
# num_blocks); seq_size is set from --seq-length.
LLAMA3_70B = {"hidden": 8192, "feedforward": 28672, "attn_heads": 64, "attn_size": 128, "num_blocks": 80}
DATATYPE = "float16"
OUTER_RECOMPUTE = ("full", "attn_only", "none")
OUTER_TP_COMM = ("ar", "p2p_rs_ag", "rs_ag")

# Set in each worker by _init (and in the parent): Calculon's module, the application, the system, the
# enumeration rows and their first indices.
_W = {}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calculon", default=os.environ.get("CALCULON_DIR"),
                    help="Calculon checkout (the directory holding calculon/ and systems/); default $CALCULON_DIR")
    ap.add_argument("-j", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--gpus", default="64:1024", help="GPU counts LO:HI (every count in between) or N")
    ap.add_argument("--seq-length", type=int, default=8192)
    ap.add_argument("--global-batch-size", type=int, default=512)
    ap.add_argument("--system", help="Calculon system file (default DIR/systems/h100_80g_nvl8.json)")
    ap.add_argument("--layouts", type=int, default=10000, help="how many layouts to sample (default 10000)")
    ap.add_argument("--all", action="store_true", help="evaluate the whole enumeration, in Calculon's order")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cli-logger", action="store_true",
                    help="give each layout the CLI's logging.Logger('sub'), which builds the debug records")
    ap.add_argument("--own-search", type=int, default=0, metavar="ROWS",
                    help="also time Calculon's OptimalExecution.search on ROWS random outer rows")
    ap.add_argument("--json", metavar="FILE", help="write the figures as JSON to FILE ('-': stdout)")
    a = ap.parse_args()
    if not a.calculon:
        ap.error("give Calculon's checkout with --calculon DIR or CALCULON_DIR")
    lo, _, hi = a.gpus.partition(":")
    a.gpu_counts = range(int(lo), int(hi or lo) + 1)
    if a.j < 1 or a.layouts < 1 or not a.gpu_counts:
        ap.error("-j, --layouts and the GPU range must be positive")
    a.system = a.system or os.path.join(a.calculon, "systems", "h100_80g_nvl8.json")
    return a


def inner_axes(has_mem2, num_nets, app, gbs, tp, pp, dp, recompute, tp_comm):
    """The options OptimalExecution.search loops over inside one outer row, outermost first."""
    pick, Llm = _W["calculon"].pick, _W["calculon"].Llm
    return (
        ("seq_par_ag_redo", pick(Llm.can_redo_ag(tp_comm, recompute), [True, False], [False])),
        ("data_par_overlap", pick(dp > 1, [True, False], [False])),
        ("tensor_par_overlap", pick(tp > 1, ["none", "ring", "pipe"], ["none"])),
        ("weight_offload", pick(has_mem2, [True, False], [False])),
        ("activations_offload", [True, False] if has_mem2 and recompute != "full" else [False]),
        ("optimizer_offload", pick(has_mem2, [True, False], [False])),
        ("fused_activation", [True]),
        ("microbatch_size", list(Llm.get_valid_microbatch_sizes(app.seq_size, tp, dp, gbs, pp))),
        ("tensor_par_net", list(pick(tp > 1, range(num_nets), [0]))),
        ("pipeline_par_net", list(pick(pp > 1, range(num_nets), [0]))),
        ("data_par_net", list(pick(dp > 1, range(num_nets), [0]))),
    )


def enumerate_rows(app, syst, gpu_counts, gbs):
    """The outer rows (one CLI task each) with their inner axes and layout counts."""
    Llm = _W["calculon"].Llm
    rows = []
    for gpus in gpu_counts:
        for tp in Llm.get_all_tensor_parallelisms(gpus, app.hidden, app.attn_heads):
            for pp in Llm.get_all_pipeline_parallelisms(gpus, tp, app.num_blocks):
                dp = Llm.get_data_parallelism(gpus, tp, pp)
                if gbs % dp != 0:
                    continue
                for ppint in Llm.get_valid_pipeline_interleavings(app.num_blocks, pp):
                    for recompute in OUTER_RECOMPUTE:
                        for sharding in [True, False] if dp > 1 else [False]:
                            for tp_comm in OUTER_TP_COMM:
                                axes = inner_axes(syst.mem2.capacity > 0, syst.num_networks, app, gbs, tp, pp, dp,
                                                  recompute, tp_comm)
                                count = math.prod(len(v) for _, v in axes)
                                rows.append({"gpus": gpus, "tp": tp, "pp": pp, "dp": dp, "ppint": ppint,
                                             "recompute": recompute, "sharding": sharding, "tp_comm": tp_comm,
                                             "axes": axes, "count": count})
    return rows


def execution_json(row, k, gbs):
    """Layout k of a row, as the CLI builds its execution JSON (innermost axis fastest)."""
    inner = {}
    for name, values in reversed(row["axes"]):
        k, r = divmod(k, len(values))
        inner[name] = values[r]
    return dict(inner, num_procs=row["gpus"], tensor_par=row["tp"], pipeline_par=row["pp"], data_par=row["dp"],
                batch_size=gbs, datatype=DATATYPE, attention_type="multihead", activation_recompute=row["recompute"],
                pipeline_interleaving=row["ppint"], optimizer_sharding=row["sharding"],
                tensor_par_comm_type=row["tp_comm"], training=True)


def _init(calculon_dir, app_cfg, sys_cfg, rows, gbs, cli_logger):
    sys.path.insert(0, calculon_dir)
    import calculon
    _W.update(calculon=calculon, app=calculon.Llm.Application(app_cfg), sys=calculon.System(sys_cfg), rows=rows,
              gbs=gbs, starts=list(_prefix([r["count"] for r in rows])), cli_logger=cli_logger,
              quiet=logging.Logger("calculon-rate", logging.WARNING))


def _prefix(counts):
    total = 0
    for c in counts:
        yield total
        total += c


def _ready(_):
    return os.getpid()


def _evaluate(indices):
    """Evaluates the layouts at these global indices; returns counts and the worker's CPU seconds per
    outcome (CPU time moves less than wall time with the other jobs on the machine) and the best fitting
    layout per GPU count (by Calculon's sample rate)."""
    Llm = _W["calculon"].Llm
    out = {"rejected": 0, "oom": 0, "fit": 0, "rejected_s": 0.0, "oom_s": 0.0, "fit_s": 0.0, "best": {}}
    for index in indices:
        r = bisect.bisect_right(_W["starts"], index) - 1
        row = _W["rows"][r]
        t = time.process_time()
        exe = execution_json(row, index - _W["starts"][r], _W["gbs"])
        model = Llm(_W["app"], logging.Logger("sub") if _W["cli_logger"] else _W["quiet"])
        try:
            model.compile(_W["sys"], Llm.Execution.from_json(exe))
        except Llm.Error:
            out["rejected"] += 1
            out["rejected_s"] += time.process_time() - t
            continue
        try:
            model.run(_W["sys"])
        except Llm.Error:
            out["oom"] += 1
            out["oom_s"] += time.process_time() - t
            continue
        stats = model.get_stats_json(False)
        out["fit"] += 1
        out["fit_s"] += time.process_time() - t
        best = out["best"].get(row["gpus"])
        if best is None or stats["sample_rate"] > best[0]:
            out["best"][row["gpus"]] = (stats["sample_rate"], exe)
    return out


def own_search(args, app_cfg, sys_cfg, rows):
    """Times Calculon's OptimalExecution.search over a seeded sample of outer rows, the way the CLI
    runs it (a fresh pool, starmap, application and system pickled with every task)."""
    calculon = _W["calculon"]
    app, syst = calculon.Llm.Application(app_cfg), calculon.System(sys_cfg)
    picked = random.Random(args.seed).sample(rows, min(args.own_search, len(rows)))
    params = [(False, 1, False, r["gpus"], args.global_batch_size, DATATYPE, app, syst, r["tp"], r["pp"], r["dp"],
               r["ppint"], args.global_batch_size, r["recompute"], r["sharding"], r["tp_comm"], [True], False, True,
               True) for r in picked]
    start = datetime.datetime.now()
    with mp.Pool(args.j) as pool:
        searches = pool.starmap(calculon.OptimalExecution.search, params)
    wall_s = (datetime.datetime.now() - start).total_seconds()
    executions = sum(s[1] for s in searches)
    return {"rows": len(picked), "executions": executions, "good": sum(s[2] for s in searches), "wall_s": wall_s,
            "layouts_per_s": executions / wall_s, "rows_picked": [
                {k: r[k] for k in ("gpus", "tp", "pp", "ppint", "recompute", "sharding", "tp_comm", "count")}
                for r in picked]}


def calculon_commit(path):
    try:
        return subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    args = parse_args()
    import psutil
    sys.path.insert(0, args.calculon)
    import calculon
    app_cfg = dict(LLAMA3_70B, seq_size=args.seq_length)
    sys_cfg = calculon.io.read_json_file(args.system)
    _W["calculon"] = calculon
    rows = enumerate_rows(calculon.Llm.Application(app_cfg), calculon.System(sys_cfg), args.gpu_counts,
                          args.global_batch_size)
    total = sum(r["count"] for r in rows)
    if total == 0:
        print(f"calculon-rate: no layout for GPUs {args.gpus} at global batch {args.global_batch_size}",
              file=sys.stderr)
        return 1
    per_gpus = {}
    for r in rows:
        per_gpus[r["gpus"]] = per_gpus.get(r["gpus"], 0) + r["count"]
    if args.all or args.layouts >= total:
        indices = range(total)
    else:
        indices = sorted(random.Random(args.seed).sample(range(total), args.layouts))
    # Small interleaved chunks: neighbouring indices share a row (similar cost), so each chunk spans rows.
    nchunks = min(len(indices), 32 * args.j)
    chunks = [indices[i::nchunks] for i in range(nchunks)]

    with mp.Pool(args.j, initializer=_init,
                 initargs=(args.calculon, app_cfg, sys_cfg, rows, args.global_batch_size, args.cli_logger)) as pool:
        pool.map(_ready, range(args.j), chunksize=1)
        startup_s = time.time() - psutil.Process().create_time()
        t = time.perf_counter()
        parts = pool.map(_evaluate, chunks, chunksize=1)
        wall_s = time.perf_counter() - t

    res = {k: sum(p[k] for p in parts) for k in ("rejected", "oom", "fit", "rejected_s", "oom_s", "fit_s")}
    best = {}
    for p in parts:
        for gpus, b in p["best"].items():
            if gpus not in best or b[0] > best[gpus][0]:
                best[gpus] = b
    evaluated = len(indices)
    computed = res["oom"] + res["fit"]
    cpu_s = res["rejected_s"] + res["oom_s"] + res["fit_s"]
    computed_cpu_s = res["oom_s"] + res["fit_s"]
    doc = {
        "tool": "calculon", "calculon_dir": os.path.abspath(args.calculon),
        "calculon_commit": calculon_commit(args.calculon), "system": os.path.abspath(args.system),
        "model": dict(app_cfg, attention_type="multihead", datatype=DATATYPE), "gpus": args.gpus,
        "global_batch_size": args.global_batch_size, "jobs": args.j,
        "logger": "cli" if args.cli_logger else "warning",
        "enumeration": {"layouts": total, "rows": len(rows), "per_gpu_count": per_gpus},
        "sample": {"all": evaluated == total, "seed": args.seed},
        "counts": {"evaluated": evaluated, "rejected_in_compile": res["rejected"], "computed": computed,
                   "over_memory": res["oom"], "fit": res["fit"]},
        "startup_s": startup_s, "wall_s": wall_s, "layouts_per_s": evaluated / wall_s,
        "layouts_per_s_per_core": evaluated / wall_s / args.j,
        # The computed layouts' share of the wall time is their share of the workers' CPU time.
        "computed_per_s": computed / (wall_s * computed_cpu_s / cpu_s) if computed else None,
        "worker_cpu_s": {"rejected": res["rejected_s"], "computed": computed_cpu_s},
        "layouts_per_cpu_s": evaluated / cpu_s,
        "computed_per_cpu_s": computed / computed_cpu_s if computed else None,
        "rejected_per_cpu_s": res["rejected"] / res["rejected_s"] if res["rejected"] else None,
        "best": {str(g): {"sample_rate": b[0], **{k: b[1][k] for k in (
            "tensor_par", "pipeline_par", "data_par", "pipeline_interleaving", "microbatch_size",
            "activation_recompute", "tensor_par_comm_type", "tensor_par_overlap", "weight_offload",
            "activations_offload", "optimizer_offload")}} for g, b in sorted(best.items())},
    }
    if args.own_search:
        doc["own_search"] = own_search(args, app_cfg, sys_cfg, rows)
    report(doc)
    if args.json:
        text = json.dumps(doc, indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    return 0


def report(doc):
    c, e = doc["counts"], doc["enumeration"]
    counts = ", ".join(f"{g}: {n:,}" for g, n in e["per_gpu_count"].items())
    print(f"Calculon {doc['calculon_commit'][:12]}, Llama 3 70B (seq {doc['model']['seq_size']}, multihead, "
          f"{doc['model']['datatype']}), {os.path.basename(doc['system'])}, global batch {doc['global_batch_size']}")
    print(f"enumeration: {e['layouts']:,} layouts in {e['rows']:,} rows over GPUs {doc['gpus']} ({counts})")
    what = "all of them" if doc["sample"]["all"] else f"a random sample (seed {doc['sample']['seed']})"
    logger = "the CLI's logger (debug records built)" if doc["logger"] == "cli" else "a WARNING logger"
    print(f"evaluated {c['evaluated']:,} ({what}) on -j {doc['jobs']} with {logger}: "
          f"{c['rejected_in_compile']:,} refused in compile, {c['computed']:,} computed ({c['fit']:,} fit, "
          f"{c['over_memory']:,} over memory)")
    print(f"start-up {doc['startup_s']:.2f} s (interpreter, imports, enumeration, workers); evaluation "
          f"{doc['wall_s']:.2f} s wall")
    print(f"layouts/s {doc['layouts_per_s']:.1f}, per core {doc['layouts_per_s_per_core']:.1f}; computed layouts/s "
          f"{doc['computed_per_s'] or 0:.1f}")
    cpu = doc["worker_cpu_s"]
    print(f"workers' CPU time {cpu['rejected'] + cpu['computed']:.2f} s: {doc['layouts_per_cpu_s']:.1f} layouts per "
          f"CPU-second (computed {doc['computed_per_cpu_s'] or 0:.1f}, refused in compile "
          f"{doc['rejected_per_cpu_s'] or 0:.1f})")
    print(f"whole enumeration at this rate: {e['layouts'] / doc['layouts_per_s'] / 3600:.1f} h")
    for g, b in doc["best"].items():
        print(f"  best evaluated at {g:>5} GPUs: {b['sample_rate']:7.2f} samples/s  TP{b['tensor_par']} "
              f"PP{b['pipeline_par']} DP{b['data_par']} VPP{b['pipeline_interleaving']} mbs {b['microbatch_size']} "
              f"{b['activation_recompute']} {b['tensor_par_comm_type']} overlap {b['tensor_par_overlap']}")
    o = doc.get("own_search")
    if o:
        print(f"Calculon's own OptimalExecution.search (Pool.starmap) on {o['rows']} rows: {o['executions']:,} "
              f"executions ({o['good']:,} fit) in {o['wall_s']:.2f} s: {o['layouts_per_s']:.1f} layouts/s, "
              f"{o['layouts_per_s'] / min(doc['jobs'], o['rows']):.1f} per worker")


if __name__ == "__main__":
    sys.exit(main())
