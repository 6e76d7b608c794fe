#!/usr/bin/env python3
"""Print the headline numbers of a microbench result folder (any subset of the kinds).

    python3 mb_summary.py DIR
"""
import glob
import json
import os
import sys


def load(d):
    out = {}
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        try:
            with open(p) as f:
                doc = json.load(f)
            out[doc["kind"]] = doc
        except (OSError, ValueError, KeyError) as e:
            print(f"{p}: unreadable ({e})")
    return out


def gemm(doc):
    rows = [r for r in doc["results"] if r.get("status") == "ok"]
    bad = [r for r in doc["results"] if r.get("status") != "ok"]
    print(f"gemm: {len(rows)} ok, {len(bad)} failed, truncated={doc['truncated']} {doc['note']}")
    by_source = {}
    for r in rows:
        by_source[r.get("source", "?")] = by_source.get(r.get("source", "?"), 0) + 1
    print("  ok rows by source: " + ", ".join(f"{k} {v}" for k, v in sorted(by_source.items())))
    want = [(8192, 8192, 8192, "TN"), (4096, 4096, 4096, "TN"), (16384, 16384, 16384, "TN"),
            (8192, 7168, 8192, "TN"), (8192, 8192, 7168, "TN"), (8192, 14336, 8192, "TN"),
            (16384, 8192, 28672, "TN"), (4096, 28672, 8192, "TN")]
    for m, n, k, lay in want:
        for dt in ("bf16", "fp8"):
            hits = [r for r in rows if (r["m"], r["n"], r["k"], r["dtype"]) == (m, n, k, dt)
                    and (r["layout"] == lay or dt == "fp8")]
            for r in hits[:2]:
                print(f"  {dt:4s} {m}x{n}x{k} {r['layout']} {r['pass']:5s} fa={int(r['fast_accum'])}: "
                      f"{r['tflops']:6.1f} TFLOP/s  {r['median_ns'] / 1e3:9.1f} us")
    for dt in ("bf16", "fp8"):
        t = sorted(r["tflops"] for r in rows if r["dtype"] == dt)
        if t:
            print(f"  {dt}: median over shapes {t[len(t) // 2]:.0f}, max {t[-1]:.0f} TFLOP/s")


def contention(doc):
    print(f"gemm_contention: truncated={doc['truncated']}")
    for r in doc["results"]:
        if r.get("status") == "ok" and r["sms_held"] in (0, 16, 32, 64):
            print(f"  {r['dtype']:4s} {r['m']}x{r['n']}x{r['k']} {r['variant']:17s} k={r['sms_held']:2d}: "
                  f"{r['median_ns'] / 1e3:8.1f} us  slowdown {r['slowdown']:.3f}")


def attention(doc):
    rows = [r for r in doc["results"] if r.get("status") == "ok"]
    print(f"attention: {len(rows)} ok of {len(doc['results'])}, checks {doc['env'].get('correctness_checks')}")
    for r in rows:
        if r["heads"] in (8, 32) and r["seq_len"] in (4096, 8192, 16384) and r["kv_heads"] == r["heads"]:
            print(f"  {r['backend']:5s} s={r['seq_len']:5d} h={r['heads']:2d} d={r['head_dim']}: fwd "
                  f"{r['fwd_tflops']:5.0f} bwd {r['bwd_tflops']:5.0f} TFLOP/s")
    bad = {r["status"] for r in doc["results"] if r.get("status") != "ok"}
    for b in sorted(bad)[:5]:
        print("  !", b)


def memory(doc):
    print("memory:")
    for r in doc["results"]:
        if r["moved_bytes"] >= 2 ** 28:
            print(f"  {r['kernel']:10s} {r['moved_bytes'] / 2 ** 20:7.0f} MiB {r['gbps']:7.1f} GB/s")


def collective(doc):
    print(f"collective: nccl {doc['env'].get('nccl_version')} groups {doc['env'].get('group_sizes', '2')} "
          f"truncated={doc['truncated']} {doc.get('note', '')}")
    gated = [r.get("launch_gated") for r in doc["results"]]
    if any(g is not None for g in gated):
        print(f"  launch gate: {sum(1 for g in gated if g)} of {len(gated)} rows gated, "
              f"{doc['env'].get('launch_gate_timeouts', 0)} timeouts")
    for r in doc["results"]:
        if r["ctas_requested"] == 0 and r["size_bytes"] in (2 ** 10, 2 ** 20, 2 ** 26, 2 ** 30, 2 ** 32):
            print(f"  n={r.get('nranks', 2)} {r['collective']:14s} ctas={r['ctas_requested']:2d} {r['size_bytes']:>10d} B "
                  f"{r['median_ns'] / 1e3:10.1f} us busbw {r['busbw_gbps']:6.1f} GB/s")


def copy_engine(doc):
    print("copy_engine:")
    for r in doc["results"]:
        if r["size_bytes"] >= 2 ** 24:
            print(f"  {r['mode']:10s} {r['size_bytes']:>10d} B {r['gbps']:7.1f} GB/s")


def overlap(doc):
    print(f"gemm_nccl_overlap: truncated={doc['truncated']}")
    for r in doc["results"]:
        extra = (f"gemm x{r['gemm_slowdown']:.3f}" if r["mode"] == "single"
                 else f"gemm rate {r['gemm_rate_while_overlapped']:.3f}")
        print(f"  n={r.get('nranks', 2)} {r['collective']:14s} ctas={r['ctas_requested']:2d} {r['size_bytes'] >> 20:4d}MiB "
              f"margin={int(r['sm_margin'])} {r['mode']:7s} coll x{r['coll_slowdown']:.3f} {extra}")


def launch(doc):
    print(f"launch: host {doc['env'].get('host_cpu')}")
    for r in doc["results"]:
        t = r["test"]
        if t in ("launch_host", "launch_stream"):
            gpu = f"  gpu {r['gpu_ns']:6.0f} ns" if "gpu_ns" in r else ""
            print(f"  {t:13s} {r['api']:26s} x{r.get('batch', r.get('calls'))}: host {r['host_ns']:7.0f} ns{gpu}")
        elif t == "queue_depth":
            print(f"  queue depth {r['queue_depth_kernels']} kernels")
        elif t == "gpu_floor":
            print(f"  gpu_floor {r['class']:10s} {r['issue']:6s} size {r['size']:>9d}: {r['gpu_ns'] / 1e3:8.2f} us")
        elif t == "graph_launch":
            print(f"  graph {r['nodes']:4d} nodes: launch host {r['host_ns']:7.0f} ns (back to back "
                  f"{r['host_ns_back_to_back']:7.0f}), gpu {r['gpu_ns']:6.0f} ns/node")
        elif t == "sync":
            print(f"  sync {r['what']:48s} {r['bytes']:5d} B: {r['host_ns'] / 1e3:6.1f} us "
                  f"(p90 {r['p90_ns'] / 1e3:.1f})")


def host_torch(doc):
    print(f"host_torch: torch {doc['env'].get('torch_version')} host {doc['env'].get('host_cpu')} "
          f"truncated={doc['truncated']} {doc['note']}")
    ops = {}
    for r in doc["results"]:
        if r["test"] == "op":
            ops.setdefault(r["op"], {})[r["mode"]] = r
    for name, m in ops.items():
        cols = "  ".join(f"{k} {m[k]['host_ns'] / 1e3:6.1f}" if m[k].get("host_ns") is not None else f"{k} -"
                         for k in ("no_grad", "grad") if k in m)
        gg = m.get("graph", {}).get("gpu_ns")
        graph = f"  gpu in graph {gg / 1e3:5.2f}" if gg is not None else ""
        kern = m.get("no_grad", {}).get("kernels_per_call")
        print(f"  {name:22s} host us/call: {cols}{graph}  kernels {kern}")
    for r in doc["results"]:
        if r["test"] == "sync":
            print(f"  sync {r['what']:44s} host {r['host_ns'] / 1e3:6.1f} us")
        if r["test"] == "layer" and r.get("host_ns") is not None:
            print(f"  layer {r['size']:6s} {r['variant']:18s} host {r['host_ns'] / 1e3:8.1f} us/layer "
                  f"gpu {r['gpu_ns'] / 1e3:8.1f} us/layer kernels {r['kernels_per_layer']}")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    docs = load(d)
    for kind, fn in (("gemm", gemm), ("gemm_contention", contention), ("attention", attention),
                     ("memory", memory), ("collective", collective), ("copy_engine", copy_engine),
                     ("gemm_nccl_overlap", overlap), ("launch", launch),
                     ("host_torch", host_torch)):
        if kind in docs:
            try:
                fn(docs[kind])
            except (KeyError, TypeError, ValueError) as e:
                print(f"{kind}: summary failed ({e})")


if __name__ == "__main__":
    main()
