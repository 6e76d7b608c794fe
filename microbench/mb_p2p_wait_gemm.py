#!/usr/bin/env python3
"""mb_p2p_wait_gemm: does an NCCL receive that waits for its sender slow a GEMM beside it?
(kind "p2p_wait_gemm")

    torchrun --nproc_per_node 2 mb_p2p_wait_gemm.py --out p2p_wait_gemm.json

A pipeline stage posts its receive early (Megatron-Core's overlapped P2P) and the NCCL kernel
then sits on its CTAs until the peer sends. penumbra counts those CTAs' SMs as taken from the
compute kernels beside it for as long as the kernel runs. Here rank 0 posts a receive (a lone
`irecv`, and a `batch_isend_irecv` of a receive, as Megatron calls them) whose sender, rank 1,
waits on the host until rank 0's GEMMs are done; meanwhile rank 0 times back-to-back bf16 GEMMs
of three shapes on its compute stream with CUDA events, against the same GEMMs with no receive
posted (alternated, medians). A row gives both times, their ratio, and the SM share the model
would take (`sms_held` / SM count, with the channel count NCCL logged when NCCL_DEBUG=INFO).
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.distributed as dist

from mb_attention import make_env, write_results


def gemms(a, b, n):
    for _ in range(n):
        torch.mm(a, b)


def timed(fn):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="p2p_wait_gemm.json")
    ap.add_argument("--shapes", default="8192x8192x8192,4096x8192x8192,8192x4096x4096")
    ap.add_argument("--gemms", type=int, default=10, help="GEMMs back to back per timing")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--bytes", type=int, default=64 << 20, help="the receive's size")
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    buf = torch.empty(a.bytes // 2, dtype=torch.bfloat16, device=dev)
    # host-side signals on gloo: an NCCL barrier would queue behind the waiting receive
    host = dist.new_group(backend="gloo")
    # one transfer first: the communicators (the pair's and the group's) are created outside the timing
    for batched in (False, True):
        if rank == 0:
            ops = [dist.P2POp(dist.irecv, buf, 1)] if batched else None
            w = dist.batch_isend_irecv(ops)[0] if batched else dist.irecv(buf, 1)
        else:
            ops = [dist.P2POp(dist.isend, buf, 0)] if batched else None
            w = dist.batch_isend_irecv(ops)[0] if batched else dist.isend(buf, 0)
        w.wait()
    torch.cuda.synchronize()
    dist.barrier(group=host)
    rows = []
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        y = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        for mode in ("irecv", "batch_isend_irecv"):
            alone, beside = [], []
            for r in range(a.reps + 1):
                # alone
                dist.barrier(group=host)
                if rank == 0:
                    t = timed(lambda: gemms(x, y, a.gemms))
                    if r:
                        alone.append(t)
                # beside a waiting receive: rank 1 sends only after rank 0 says its GEMMs are done
                dist.barrier(group=host)
                if rank == 0:
                    if mode == "irecv":
                        w = dist.irecv(buf, 1)
                    else:
                        w = dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, 1)])[0]
                    time.sleep(0.002)  # the receive kernel is on the GPU before the GEMMs
                    t = timed(lambda: gemms(x, y, a.gemms))
                    if r:
                        beside.append(t)
                    dist.barrier(group=host)
                    w.wait()
                    torch.cuda.synchronize()
                else:
                    dist.barrier(group=host)  # returns once rank 0's GEMMs are timed
                    if mode == "irecv":
                        w = dist.isend(buf, 0)
                    else:
                        w = dist.batch_isend_irecv([dist.P2POp(dist.isend, buf, 0)])[0]
                    w.wait()
                    torch.cuda.synchronize()
            if rank == 0:
                ta, tb = statistics.median(alone), statistics.median(beside)
                row = {"test": "gemm_beside_waiting_recv", "mode": mode, "m": m, "n": n, "k": k,
                       "gemms": a.gemms, "reps": a.reps, "alone_ns": ta / a.gemms, "beside_ns": tb / a.gemms,
                       "slowdown": tb / ta, "sm_count": sms, "recv_bytes": a.bytes, "status": "ok"}
                rows.append(row)
                print(f"{mode:18s} {shape:16s} alone {ta / a.gemms / 1e3:8.1f} us  beside a waiting receive "
                      f"{tb / a.gemms / 1e3:8.1f} us  x{tb / ta:.3f}", file=sys.stderr)
    if rank == 0:
        env = make_env(rank, sys.argv[1:])
        env["program"] = "mb_p2p_wait_gemm.py"
        env["command_line"] = " ".join(["mb_p2p_wait_gemm.py"] + sys.argv[1:])
        env["gpu_count_used"] = dist.get_world_size()
        env["nccl_version"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        write_results(a.out, "p2p_wait_gemm", env, rows, rank)
    dist.barrier(group=host)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
