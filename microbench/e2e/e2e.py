#!/usr/bin/env python3
"""e2e: real training steps of a Llama-like decoder stack on W = 2, 4 or 8 GPUs, per parallel layout.

    torchrun --nproc_per_node=W e2e.py --group cdmc8 --out part.json    # the W-GPU configs of a group
    torchrun --nproc_per_node=2 e2e.py --configs dp2_nooverlap,dp2_overlap --out part.json \
        [--steps 10] [--warmup 3] [--profile-steps 2] [--trace-dir DIR]
    torchrun --nproc_per_node=4 e2e.py --cpu --tiny --configs all     # gloo / fp32 logic check

Every config has a world size (dp x tp x pp, in its name: dp4_overlap, tp8_sp, ...); a run
takes the configs whose world size is its number of processes ("all" or --group), and refuses
others.

Plain PyTorch (no Megatron, no Transformer Engine); the Megatron-Core mechanisms are rebuilt:
  * model: token embedding, N x [RMSNorm, QKV (GQA), RoPE, causal SDPA, out-proj, residual,
    RMSNorm, SwiGLU fc1 (gate|up), fc2, residual], final RMSNorm, untied output layer,
    (vocab-parallel) cross entropy; bf16 params and activations, micro-batch 1.
  * gradients: every weight has a `main_grad` view into one flat bf16 buffer laid out in reverse
    registration order (Megatron's param-and-grad buffer). The wgrad GEMM accumulates straight
    into main_grad (addmm_, beta = 1: gradient-accumulation fusion) and then calls the bucket
    hook, which is what Megatron's post-accumulate-grad hook does.
  * DP (no distributed optimizer): "nooverlap" scales the flat buffer by 1/dp and all-reduces it
    once after the last micro-batch's backward (one bucket, finish_grad_sync). "overlap" cuts the
    buffer into buckets of >= bucket_size elements (closed after the param that fills them, in
    backprop order) and, during the last micro-batch's backward only, launches each bucket's
    scale + async all-reduce as soon as its last param's gradient is accumulated; all handles are
    waited after the backward.
  * TP = W with sequence parallelism (Megatron column/row-parallel linears): see e2e_model.py
    for the modes. The ring exchange uses torch.distributed P2P (NCCL send/recv kernels, not the
    copy engine that TE userbuffers use), or at TP = 2 in "overlap" one async all-gather.
  * PP = 2: Megatron's non-interleaved 1F1B (warm-up min(pp - rank - 1, m), steady 1F1B,
    cool-down) with blocking batch_isend_irecv + wait + torch.cuda.synchronize()
    (batch_p2p_comm = True, batch_p2p_sync = True).
  * optimizer: fp32 master weights, global grad-norm (all-reduced over the model-parallel group)
    and clipping at 1.0, torch fused Adam, copy back to the bf16 params, zero the grad buffer.

Measurements per config (after --warmup steps):
  * step_time_ms: the median over --steps steps of the slowest rank's wall time of one step
    (host barrier on a gloo group, torch.cuda.synchronize() before and after the step).
  * exposed_comm_ms, comm_total_ms, compute_ms: from a torch.profiler (CUPTI) kernel timeline of
    --profile-steps further steps on every rank: comm = union of NCCL kernel intervals, compute =
    union of all other kernels, memcpys and memsets; exposed = |comm minus compute|; all per step.
    NCCL kernels run from launch to completion, so a receive (or a collective) whose peer is late
    counts as comm for its whole wait: in 1F1B the time a stage waits for its neighbour's
    activation shows up as exposed P2P, not as bubble. Rank 0 fills the top-level fields; every
    rank is under "per_rank".
  * "nocomm" configs give the other estimate: exposed ~= step(config) - step(nocomm).
"""
import os

# NVLink multicast (NVLS, symmetric memory) must stay off on the shared machines.
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_model  # noqa: E402


# ---------------------------------------------------------------------------------------------
# runtime


class RT:
    rank = 0
    world = 1
    device = None
    dtype = torch.bfloat16
    cuda = False
    nccl = False
    gloo = None  # host-side barrier / object exchange group
    attn_mode = "manual"


class Done:
    def wait(self):
        pass


def sync():
    if RT.cuda:
        torch.cuda.synchronize()


def host_barrier():
    dist.barrier(group=RT.gloo)


def comm_all_gather(out, inp, group, async_op):
    if RT.nccl:
        return dist.all_gather_into_tensor(out, inp, group=group, async_op=async_op) or Done()
    n = dist.get_world_size(group)
    dist.all_gather(list(out.chunk(n)), inp, group=group)
    return Done()


def comm_reduce_scatter(out, inp, group, async_op):
    if RT.nccl:
        return dist.reduce_scatter_tensor(out, inp, group=group, async_op=async_op) or Done()
    n, r = dist.get_world_size(group), dist.get_rank(group)
    tmp = inp.clone()
    dist.all_reduce(tmp, group=group)
    out.copy_(tmp.chunk(n)[r])
    return Done()


def p2p(ops):
    """ops: list of ("send"|"recv", tensor, peer). Posted as one batch; returns the works."""
    if not ops:
        return []
    plist = [dist.P2POp(dist.isend if k == "send" else dist.irecv, t, peer) for k, t, peer in ops]
    return dist.batch_isend_irecv(plist)


# ---------------------------------------------------------------------------------------------
# tensor parallel communication

OVERLAP = ("overlap", "overlap_p2p")


class TP:
    """Tensor-parallel communication of one rank in a TP group of `size` ranks (any size)."""

    def __init__(self, size, rank, mode, group=None):
        self.size, self.rank, self.mode, self.group = size, rank, mode, group
        self.next = (rank + 1) % size  # ring neighbours (TE's _next_rank / _prev_rank)
        self.prev = (rank - 1) % size

    def all_gather(self, x, async_op=False):
        out = torch.empty((x.shape[0] * self.size,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        if self.mode == "nocomm":
            for r in range(self.size):
                out[r * x.shape[0]:(r + 1) * x.shape[0]].copy_(x)
            return out, Done()
        return out, comm_all_gather(out, x, self.group, async_op)

    def reduce_scatter(self, x, async_op=False):
        n = x.shape[0] // self.size
        out = torch.empty((n,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        if self.mode == "nocomm":
            out.copy_(x[self.rank * n:(self.rank + 1) * n])
            return out, Done()
        return out, comm_reduce_scatter(out, x, self.group, async_op)

    def all_reduce(self, t, op=dist.ReduceOp.SUM):
        if self.size > 1 and self.mode != "nocomm":
            dist.all_reduce(t, op=op, group=self.group)

    def ag_gemm(self, x, w, keep_full):
        """allgather(x) @ w (w already in GEMM orientation) with the comm beside the GEMM: TE's
        ring exchange (CommOverlapP2PBase::split_overlap_ag, TP steps). At step i this rank holds
        the rows of rank c = (r - i) mod TP; it posts their send to the next rank and the receive
        of rank c - 1's rows from the previous one, then multiplies its rows while they travel,
        and waits. Every comm is posted before its step's GEMM: an NCCL op waits for the work
        already on the compute stream, so posting it after the GEMM would serialise the two.
        "overlap" at TP = 2: the one exchange is an async NCCL all-gather launched before the
        GEMM on the local rows. Otherwise batched P2P send/recv (NCCL SendRecv kernels)."""
        n, tp, me = x.shape[0], self.size, self.rank
        out = torch.empty((tp * n, w.shape[1]), dtype=x.dtype, device=x.device)
        if self.mode == "overlap" and tp == 2:
            peer = 1 - me
            full, work = self.all_gather(x, async_op=True)
            torch.mm(x, w, out=out[me * n:(me + 1) * n])
            work.wait()
            torch.mm(full[peer * n:(peer + 1) * n], w, out=out[peer * n:(peer + 1) * n])
            return out, (full if keep_full else None)
        full = None
        if keep_full:
            full = torch.empty((tp * n,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        cur, c = x, me
        for i in range(tp):
            works, recv = [], None
            if i < tp - 1:
                src = (c - 1) % tp
                recv = full[src * n:(src + 1) * n] if keep_full else torch.empty_like(x)
                works = p2p([("send", cur, self.next), ("recv", recv, self.prev)])
            torch.mm(cur, w, out=out[c * n:(c + 1) * n])
            if i == 0 and keep_full:
                full[me * n:(me + 1) * n].copy_(x)
            for wk in works:
                wk.wait()
            if recv is not None:
                cur, c = recv, (c - 1) % tp
        return out, full

    def gemm_rs(self, x, w, splits=4):
        """reduce_scatter(x @ w) with the comm beside the GEMM.
        "overlap": TE's pipeline method (its default for proj/fc2 fprop, num_splits 4): the GEMM
        runs in `splits` chunks, chunk i holding the i-th slice of every rank's rows, and chunk
        i's async NCCL reduce-scatter runs beside GEMM chunk i + 1; the last one is exposed.
        "overlap_p2p": TE's ring-exchange RS (CommOverlapP2PBase::split_overlap_rs): step i
        (0..TP-1) computes the partial rows of rank (r + i + 1) mod TP (the last step: this
        rank's own), and beside it step i - 1's partial goes to its rank while rank
        (r - i)'s partial for us arrives; then the TP - 1 received partials are added to ours.
        At TP = 2: the peer's partial first, sent while the local rows are computed."""
        if self.mode == "overlap":
            T, f = x.shape
            n = T // self.size
            rows = n // splits
            y = torch.empty((n, w.shape[1]), dtype=x.dtype, device=x.device)
            xv = x.view(self.size, splits, rows, f)
            works = []
            for i in range(splits):
                part = torch.mm(xv[:, i].reshape(self.size * rows, f), w)
                out_i = y[i * rows:(i + 1) * rows]
                works.append(comm_reduce_scatter(out_i, part, self.group, True))
            for wk in works:
                wk.wait()
            return y
        tp, me = self.size, self.rank
        n = x.shape[0] // tp
        works, recvs, sent, prev_part = [], [], [], None
        for i in range(tp):
            if i > 0:
                buf = torch.empty_like(prev_part)
                recvs.append(buf)
                sent.append(prev_part)  # alive until its send is waited
                works += p2p([("send", prev_part, (me + i) % tp), ("recv", buf, (me - i) % tp)])
            dest = (me + i + 1) % tp
            prev_part = torch.mm(x[dest * n:(dest + 1) * n], w)
        y = prev_part  # dest == me at i = tp - 1
        for wk in works:
            wk.wait()
        for buf in recvs:
            y.add_(buf)
        return y


# ---------------------------------------------------------------------------------------------
# autograd functions (weights get no .grad; their gradient goes to main_grad + bucket hook)


class LinearFn(torch.autograd.Function):
    """y = x @ w.T. mode "plain" (no TP), "col" (SP input [T/tp, k] -> [T, n/tp]) or
    "row" (input [T, k/tp] -> SP output [T/tp, n])."""

    @staticmethod
    def forward(ctx, x, w, mode, tp, hook):
        ctx.w, ctx.mode, ctx.tp, ctx.hook = w, mode, tp, hook
        if mode == "plain":
            y = torch.mm(x, w.t())
        elif mode == "col":
            if tp.mode in OVERLAP:
                y, _ = tp.ag_gemm(x, w.t(), keep_full=False)
            else:
                full, _ = tp.all_gather(x)
                y = torch.mm(full, w.t())
                del full
        else:
            if tp.mode in OVERLAP:
                y = tp.gemm_rs(x, w.t())
            else:
                part = torch.mm(x, w.t())
                y, _ = tp.reduce_scatter(part)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        w, mode, tp = ctx.w, ctx.mode, ctx.tp
        dy = dy.contiguous()
        if mode == "plain":
            dx = torch.mm(dy, w)
            w.main_grad.addmm_(dy.t(), x)
        elif mode == "col":
            if tp.mode in ("sync", "nocomm"):
                full, _ = tp.all_gather(x)
                dx_full = torch.mm(dy, w)
                dx, _ = tp.reduce_scatter(dx_full)
                w.main_grad.addmm_(dy.t(), full)
            else:  # Megatron / TE without userbuffers (and TE's bulk overlap with them)
                full, h = tp.all_gather(x, async_op=True)
                dx_full = torch.mm(dy, w)
                h.wait()
                dx, h = tp.reduce_scatter(dx_full, async_op=True)
                w.main_grad.addmm_(dy.t(), full)
                h.wait()
        else:
            if tp.mode in OVERLAP:
                dx, dy_full = tp.ag_gemm(dy, w, keep_full=True)
            else:
                dy_full, _ = tp.all_gather(dy)
                dx = torch.mm(dy_full, w)
            w.main_grad.addmm_(dy_full.t(), x)
        if ctx.hook is not None:
            ctx.hook(w)
        return dx, None, None, None, None


class EmbedFn(torch.autograd.Function):
    """Vocab-parallel embedding; with TP the partial rows are reduce-scattered to SP."""

    @staticmethod
    def forward(ctx, ids, w, tp, hook):
        ctx.w, ctx.tp, ctx.hook = w, tp, hook
        if tp.size == 1:
            ctx.save_for_backward(ids)
            return F.embedding(ids, w)
        v = w.shape[0]
        start = tp.rank * v
        mask = (ids < start) | (ids >= start + v)
        lid = (ids - start).masked_fill(mask, 0)
        out = F.embedding(lid, w)
        out.masked_fill_(mask.unsqueeze(1), 0)
        y, _ = tp.reduce_scatter(out)
        ctx.save_for_backward(lid, mask)
        return y

    @staticmethod
    def backward(ctx, dy):
        w, tp = ctx.w, ctx.tp
        dy = dy.contiguous()
        if tp.size == 1:
            (ids,) = ctx.saved_tensors
            w.main_grad.index_add_(0, ids, dy)
        else:
            lid, mask = ctx.saved_tensors
            full, _ = tp.all_gather(dy)
            full.masked_fill_(mask.unsqueeze(1), 0)
            w.main_grad.index_add_(0, lid, full)
        if ctx.hook is not None:
            ctx.hook(w)
        return None, None, None, None


class GradToMain(torch.autograd.Function):
    """Identity on a (norm) weight whose backward adds the gradient into main_grad."""

    @staticmethod
    def forward(ctx, w, hook):
        ctx.w, ctx.hook = w, hook
        return w.detach().clone()

    @staticmethod
    def backward(ctx, g):
        ctx.w.main_grad.add_(g)
        if ctx.hook is not None:
            ctx.hook(ctx.w)
        return None, None


class VocabCE(torch.autograd.Function):
    """Megatron's vocab-parallel cross entropy on [T, V/tp] logits; per-token fp32 loss."""

    @staticmethod
    def forward(ctx, logits, labels, tp):
        lf = logits.to(torch.float32, copy=True)
        v = lf.shape[1]
        mx = lf.max(dim=1).values
        tp.all_reduce(mx, dist.ReduceOp.MAX)
        lf.sub_(mx.unsqueeze(1))
        start = tp.rank * v
        inr = (labels >= start) & (labels < start + v)
        lt = (labels - start).clamp(0, v - 1)
        pred = lf.gather(1, lt.unsqueeze(1)).squeeze(1) * inr
        tp.all_reduce(pred)
        lf.exp_()
        se = lf.sum(dim=1)
        tp.all_reduce(se)
        loss = torch.log(se) - pred
        lf.div_(se.unsqueeze(1))
        ctx.save_for_backward(lf, lt, inr)
        ctx.in_dtype = logits.dtype
        return loss

    @staticmethod
    def backward(ctx, g):
        sm, lt, inr = ctx.saved_tensors
        sm.scatter_add_(1, lt.unsqueeze(1), -inr.to(sm.dtype).unsqueeze(1))
        sm.mul_(g.unsqueeze(1))
        return sm.to(ctx.in_dtype), None, None


# ---------------------------------------------------------------------------------------------
# parameters: flat bf16 param / grad buffers in reverse registration order


def _gen(name, seed=1234):
    g = torch.Generator(device=RT.device)
    g.manual_seed(seed + zlib.crc32(name.encode()))
    return g


def rand_full(name, rows, cols, std=0.02):
    return torch.randn(rows, cols, generator=_gen(name), device=RT.device, dtype=torch.float32) * std


class Store:
    def __init__(self):
        self.specs = []  # (name, shape, init, replicated_in_tp)
        self.p = {}

    def add(self, name, shape, init, replicated=False):
        self.specs.append((name, tuple(shape), init, replicated))

    def build(self):
        layout = list(reversed(self.specs))  # backprop order
        total = sum(math.prod(s[1]) for s in layout)
        self.numel = total
        self.param_flat = torch.empty(total, dtype=RT.dtype, device=RT.device)
        self.grad_flat = torch.zeros(total, dtype=RT.dtype, device=RT.device)
        self.layout = []  # (name, offset, numel) in buffer order
        off = 0
        for name, shape, init, repl in layout:
            n = math.prod(shape)
            view = self.param_flat[off:off + n].view(shape)
            with torch.no_grad():
                view.copy_(init())
            p = torch.nn.Parameter(view, requires_grad=True)
            p.main_grad = self.grad_flat[off:off + n].view(shape)
            p.replicated = repl
            p.pname = name
            self.p[name] = p
            self.layout.append((name, off, n))
            off += n
        del self.specs


# ---------------------------------------------------------------------------------------------
# DP gradient buckets


class Buckets:
    def __init__(self, store, dp, overlap, bucket_size, nocomm):
        self.store, self.dp, self.overlap, self.nocomm = store, dp, overlap, nocomm
        self.enabled = False
        self.buckets = []  # [start, end, nparams]
        self.of = {}
        cur = None
        for name, off, n in store.layout:
            if cur is None:
                cur = [off, off, 0]
            cur[1] = off + n
            cur[2] += 1
            self.of[name] = len(self.buckets)
            if overlap and cur[1] - cur[0] >= bucket_size:
                self.buckets.append(cur)
                cur = None
        if cur is not None:
            self.buckets.append(cur)
        self.reset()

    def reset(self):
        self.pending = [b[2] for b in self.buckets]
        self.launched = [False] * len(self.buckets)
        self.handles = []
        self.in_backward = 0

    def _launch(self, i):
        s, e, _ = self.buckets[i]
        view = self.store.grad_flat[s:e]
        view.mul_(1.0 / self.dp)
        if not self.nocomm:
            self.handles.append(dist.all_reduce(view, async_op=True) or Done())
        self.launched[i] = True

    def hook(self, p):
        if not (self.overlap and self.enabled):
            return
        i = self.of[p.pname]
        self.pending[i] -= 1
        if self.pending[i] == 0:
            self._launch(i)
            self.in_backward += 1

    def finish(self):
        """finish_grad_sync: launch what is left (everything, without overlap) and wait."""
        self.last_in_backward = self.in_backward
        if not self.overlap:
            g = self.store.grad_flat
            g.mul_(1.0 / self.dp)
            if not self.nocomm:
                dist.all_reduce(g)
        else:
            for i in range(len(self.buckets)):
                if not self.launched[i]:
                    self._launch(i)
            for h in self.handles:
                h.wait()
        self.reset()


# ---------------------------------------------------------------------------------------------
# the model


def rope_tables(T, D, theta):
    inv = 1.0 / (theta ** (torch.arange(0, D, 2, device=RT.device, dtype=torch.float32) / D))
    t = torch.arange(T, device=RT.device, dtype=torch.float32)
    fr = torch.outer(t, inv)
    emb = torch.cat([fr, fr], dim=1)
    return emb.cos().to(RT.dtype).unsqueeze(1), emb.sin().to(RT.dtype).unsqueeze(1)


def apply_rope(x, cos, sin):
    d = x.shape[-1] // 2
    rot = torch.cat([-x[..., d:], x[..., :d]], dim=-1)
    return x * cos + rot * sin


def rms_norm(x, w, eps):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight=w, eps=eps)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def attention(q, k, v):
    """q [T, hq, D], k/v [T, hkv, D] -> [T, hq*D], causal."""
    T, hq, D = q.shape
    hkv = k.shape[1]
    q4, k4, v4 = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    mode = RT.attn_mode
    if mode == "manual":
        if hkv != hq:
            k4 = k4.repeat_interleave(hq // hkv, dim=1)
            v4 = v4.repeat_interleave(hq // hkv, dim=1)
        s = torch.matmul(q4.float(), k4.float().transpose(-1, -2)) / math.sqrt(D)
        causal = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(causal, float("-inf")).softmax(-1)
        o = torch.matmul(s, v4.float()).to(q.dtype)
    else:
        backend, gqa = mode.split("_")
        if gqa == "expand" and hkv != hq:
            k4 = k4.repeat_interleave(hq // hkv, dim=1)
            v4 = v4.repeat_interleave(hq // hkv, dim=1)
        with sdpa_ctx(backend):
            if gqa == "gqa":
                o = F.scaled_dot_product_attention(q4, k4, v4, is_causal=True, enable_gqa=True)
            else:
                o = F.scaled_dot_product_attention(q4, k4, v4, is_causal=True)
    return o.squeeze(0).transpose(0, 1).reshape(T, hq * D)


def sdpa_ctx(backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
         "efficient": SDPBackend.EFFICIENT_ATTENTION}.get(backend)
    return sdpa_kernel([b]) if b is not None else contextlib.nullcontext()


def probe_attention(M, tp):
    """Pick the fastest-available fused causal GQA attention: cuDNN (what TE uses on Hopper),
    then FlashAttention-2; native GQA first, K/V expansion second."""
    if not RT.cuda or not hasattr(F, "scaled_dot_product_attention"):
        return "manual"
    hq = M["num_attention_heads"] // tp
    hkv = M["num_query_groups"] // tp
    D, T = M["kv_channels"], M["seq_length"]
    for mode in ("cudnn_gqa", "cudnn_expand", "flash_gqa", "flash_expand"):
        try:
            RT.attn_mode = mode
            q = torch.randn(T, hq, D, device=RT.device, dtype=RT.dtype, requires_grad=True)
            k = torch.randn(T, hkv, D, device=RT.device, dtype=RT.dtype, requires_grad=True)
            v = torch.randn(T, hkv, D, device=RT.device, dtype=RT.dtype, requires_grad=True)
            o = attention(q, k, v)
            # reference on a slice: the first 256 queries only see the first 256 keys
            n = 256
            RT.attn_mode = "manual"
            ref = attention(q[:n].detach(), k[:n].detach(), v[:n].detach())
            RT.attn_mode = mode
            err = ((o[:n].float() - ref.float()).norm() / ref.float().norm()).item()
            o.float().sum().backward()
            sync()
            if not (err < 2e-2 and torch.isfinite(q.grad).all().item()):
                raise RuntimeError(f"wrong result, rel err {err}")
            return mode
        except Exception as e:  # noqa: BLE001
            if RT.rank == 0:
                print(f"[e2e] attention {mode} unavailable: {str(e).splitlines()[0][:160]}", flush=True)
    return "default_expand"


class Model:
    """The slice of the stack that one rank holds (its PP stage, its TP shard)."""

    def __init__(self, M, cfg, tp, pp_rank, pp, hook):
        self.M, self.tp, self.hook = M, tp, hook
        L, h, f = M["num_layers"], M["hidden_size"], M["ffn_hidden_size"]
        H, G, D, V = M["num_attention_heads"], M["num_query_groups"], M["kv_channels"], M["vocab_size"]
        t, r = tp.size, tp.rank
        qd, kvd = H * D, G * D
        self.hq, self.hkv, self.D = H // t, G // t, D
        per = L // pp
        self.layers = list(range(pp_rank * per, (pp_rank + 1) * per))
        self.first, self.last = pp_rank == 0, pp_rank == pp - 1
        self.lin = "plain" if t == 1 else None
        s = Store()

        def rows(full, n):  # this rank's rows of a [n, *] weight
            return full[r * (n // t):(r + 1) * (n // t)]

        ones = lambda: torch.ones(h, device=RT.device)  # noqa: E731
        if self.first:
            s.add("embed", (V // t, h), lambda: rows(rand_full("embed", V, h), V))
        for i in self.layers:
            p = f"layers.{i}."
            s.add(p + "norm1", (h,), ones, replicated=t > 1)
            s.add(p + "qkv", ((qd + 2 * kvd) // t, h), lambda p=p: torch.cat([
                rows(rand_full(p + "q", qd, h), qd), rows(rand_full(p + "k", kvd, h), kvd),
                rows(rand_full(p + "v", kvd, h), kvd)]))
            s.add(p + "proj", (h, qd // t), lambda p=p: rows(rand_full(p + "proj", qd, h), qd).t())
            s.add(p + "norm2", (h,), ones, replicated=t > 1)
            s.add(p + "fc1", (2 * f // t, h), lambda p=p: torch.cat([
                rows(rand_full(p + "gate", f, h), f), rows(rand_full(p + "up", f, h), f)]))
            s.add(p + "fc2", (h, f // t), lambda p=p: rows(rand_full(p + "fc2", f, h), f).t())
        if self.last:
            s.add("final_norm", (h,), ones, replicated=t > 1)
            s.add("output", (V // t, h), lambda: rows(rand_full("output", V, h), V))
        s.build()
        self.store = s
        self.cos, self.sin = rope_tables(M["seq_length"], D, M["rope_theta"])
        self.eps = M["norm_eps"]

    def linear(self, x, name, kind):
        mode = "plain" if self.tp.size == 1 else kind
        return LinearFn.apply(x, self.store.p[name], mode, self.tp, self.hook)

    def norm(self, x, name):
        return rms_norm(x, GradToMain.apply(self.store.p[name], self.hook), self.eps)

    def layer(self, x, i):
        p = f"layers.{i}."
        T = self.M["seq_length"]
        hq, hkv, D = self.hq, self.hkv, self.D
        qkv = self.linear(self.norm(x, p + "norm1"), p + "qkv", "col")
        q = qkv[:, :hq * D].view(T, hq, D)
        k = qkv[:, hq * D:(hq + hkv) * D].view(T, hkv, D)
        v = qkv[:, (hq + hkv) * D:].view(T, hkv, D)
        q, k = apply_rope(q, self.cos, self.sin), apply_rope(k, self.cos, self.sin)
        o = attention(q, k, v)
        x = x + self.linear(o, p + "proj", "row")
        h1 = self.linear(self.norm(x, p + "norm2"), p + "fc1", "col")
        g, u = h1.chunk(2, dim=1)
        x = x + self.linear(F.silu(g) * u, p + "fc2", "row")
        return x

    def forward(self, inp, labels):
        x = EmbedFn.apply(inp, self.store.p["embed"], self.tp, self.hook) if self.first else inp
        for i in self.layers:
            x = self.layer(x, i)
        if not self.last:
            return x
        x = self.norm(x, "final_norm")
        logits = self.linear(x, "output", "col")
        return VocabCE.apply(logits, labels, self.tp)


# ---------------------------------------------------------------------------------------------
# optimizer


class Optimizer:
    CHUNK = 1 << 28

    def __init__(self, store, tp, mp_group_size):
        self.store, self.tp, self.mp = store, tp, mp_group_size
        self.master = store.param_flat.to(torch.float32, copy=True)
        self.g32 = torch.empty_like(self.master)
        self.mchunks = list(self.master.split(self.CHUNK))
        self.gchunks = list(self.g32.split(self.CHUNK))
        self.pchunks = list(store.param_flat.split(self.CHUNK))
        self.grchunks = list(store.grad_flat.split(self.CHUNK))
        for m, g in zip(self.mchunks, self.gchunks):
            m.grad = g
        kw = {"fused": True} if RT.cuda else {}
        self.opt = torch.optim.Adam(self.mchunks, lr=1e-5, betas=(0.9, 0.95), eps=1e-8, **kw)
        self.repl = [p.main_grad for p in store.p.values() if p.replicated]

    def step(self):
        sq = torch.stack([torch.linalg.vector_norm(g, dtype=torch.float32) for g in self.grchunks]).square().sum()
        if self.repl and self.tp.rank != 0:  # replicated norm weights count once in the TP group
            sq = sq - torch.stack([torch.linalg.vector_norm(g, dtype=torch.float32) for g in self.repl]).square().sum()
        if self.mp > 1:
            dist.all_reduce(sq)
        norm = sq.sqrt()
        clip = torch.clamp(1.0 / (norm + 1e-6), max=1.0)
        for g, g32 in zip(self.grchunks, self.gchunks):
            torch.mul(g, clip, out=g32)
        self.opt.step()
        for p, m in zip(self.pchunks, self.mchunks):
            p.copy_(m)
        self.store.grad_flat.zero_()
        return norm


# ---------------------------------------------------------------------------------------------
# one config


class Run:
    def __init__(self, M, name, cfg):
        self.M, self.name, self.cfg = M, name, cfg
        self.dp, self.tpn, self.pp = cfg["dp"], cfg["tp"], cfg["pp"]
        assert self.dp * self.tpn * self.pp == RT.world
        self.m = e2e_model.micro_batches(M, cfg)
        r = RT.rank
        self.dp_rank = r if self.dp > 1 else 0
        self.pp_rank = r if self.pp > 1 else 0
        tp_rank = r if self.tpn > 1 else 0
        self.tp = TP(self.tpn, tp_rank, cfg.get("tp_mode", "none") if self.tpn > 1 else "none")
        self.buckets = None
        self.model = Model(M, cfg, self.tp, self.pp_rank, self.pp, hook=None)
        if self.dp > 1:
            self.buckets = Buckets(self.model.store, self.dp, cfg.get("dp_overlap", False),
                                   cfg.get("bucket_size", 0), cfg.get("nocomm", False))
            self.model.hook = self.buckets.hook
        self.opt = Optimizer(self.model.store, self.tp, self.tpn * self.pp)
        T, V = M["seq_length"], M["vocab_size"]
        self.tokens = []
        for j in range(self.m):
            gmb = self.dp_rank * self.m + j
            g = torch.Generator(device=RT.device)
            g.manual_seed(1000 + gmb)
            self.tokens.append(torch.randint(0, V, (T + 1,), generator=g, device=RT.device))
        self.act_shape = (T // self.tpn, M["hidden_size"])

    def mb(self, j):
        t = self.tokens[j]
        return t[:-1], t[1:]

    def loss_of(self, j, inp):
        ids, labels = self.mb(j)
        out = self.model.forward(ids if self.model.first else inp, labels)
        if self.model.last:
            return out.mean() / self.m
        return out

    # -- steps

    def step(self):
        if self.pp == 1:
            losses = []
            for j in range(self.m):
                if self.buckets is not None:
                    self.buckets.enabled = j == self.m - 1
                loss = self.loss_of(j, None)
                loss.backward()
                losses.append(loss.detach())
            if self.buckets is not None:
                self.buckets.finish()
        else:
            losses = self.one_f_one_b()
        if self.tpn > 1 and self.opt.repl and self.tp.mode != "nocomm":
            # _allreduce_non_tensor_model_parallel_grads (norm weights under SP), coalesced
            flat = torch.cat([g.reshape(-1) for g in self.opt.repl])
            self.tp.all_reduce(flat)
            off = 0
            for g in self.opt.repl:
                g.copy_(flat[off:off + g.numel()].view_as(g))
                off += g.numel()
        norm = self.opt.step()
        loss = torch.stack(losses).sum() if losses else torch.zeros((), device=RT.device)
        return loss, norm

    # -- 1F1B (Megatron forward_backward_pipelining_without_interleaving, batch_p2p_comm)

    def _p2p(self, send_next=None, send_prev=None, recv_next=False, recv_prev=False):
        r, ops, got = RT.rank, [], {}
        if send_prev is not None:
            ops.append(("send", send_prev, r - 1))
        if recv_prev:
            got["prev"] = torch.empty(self.act_shape, dtype=RT.dtype, device=RT.device, requires_grad=True)
            ops.append(("recv", got["prev"], r - 1))
        if send_next is not None:
            ops.append(("send", send_next, r + 1))
        if recv_next:
            got["next"] = torch.empty(self.act_shape, dtype=RT.dtype, device=RT.device)
            ops.append(("recv", got["next"], r + 1))
        if ops:
            for w in p2p(ops):
                w.wait()
            sync()  # batch_p2p_sync
        return got

    def one_f_one_b(self):
        first, last = self.model.first, self.model.last
        pp, rank, m = self.pp, self.pp_rank, self.m
        nw = min(pp - rank - 1, m)
        nr = m - nw
        ins, outs, losses = [], [], []
        fi = [0]

        def fwd(inp):
            out = self.loss_of(fi[0], inp)
            fi[0] += 1
            if last:
                losses.append(out.detach())
            return out

        def bwd(inp, out, og):
            if last:
                out.backward()
            else:
                torch.autograd.backward(out, grad_tensors=og)
            return None if first else inp.grad

        recv_fwd = lambda: None if first else self._p2p(recv_prev=True)["prev"]  # noqa: E731
        for _ in range(nw):
            inp = recv_fwd()
            out = fwd(inp)
            if not last:
                self._p2p(send_next=out.detach())
            ins.append(inp)
            outs.append(out)
        inp = recv_fwd() if nr > 0 else None
        for i in range(nr):
            lst = i == nr - 1
            out = fwd(inp)
            og = None if last else self._p2p(send_next=out.detach(), recv_next=True)["next"]
            ins.append(inp)
            outs.append(out)
            ig = bwd(ins.pop(0), outs.pop(0), og)
            if lst:
                inp = None
                if not first:
                    self._p2p(send_prev=ig)
            else:
                inp = None if first else self._p2p(send_prev=ig, recv_prev=True)["prev"]
        for _ in range(nw):
            ii, oo = ins.pop(0), outs.pop(0)
            og = None if last else self._p2p(recv_next=True)["next"]
            ig = bwd(ii, oo, og)
            if not first:
                self._p2p(send_prev=ig)
        return losses

    def free(self):
        self.opt = None
        self.model = None
        self.buckets = None


# ---------------------------------------------------------------------------------------------
# profiler timeline analysis


def _union(iv):
    iv = sorted(iv)
    out = []
    for s, e in iv:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def _length(u):
    return sum(e - s for s, e in u)


def _intersect(a, b):
    i = j = 0
    tot = 0.0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            tot += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def analyze_trace(path, nsteps):
    with open(path) as f:
        tr = json.load(f)
    comm, comp, per_kernel = [], [], {}
    for ev in tr.get("traceEvents", []):
        if ev.get("ph") != "X":
            continue
        cat = ev.get("cat", "")
        if cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        s = float(ev["ts"])
        e = s + float(ev.get("dur", 0.0))
        name = ev.get("name", "")
        is_comm = cat == "kernel" and "nccl" in name.lower()
        (comm if is_comm else comp).append((s, e))
        key = name[:90]
        k = per_kernel.setdefault(key, [0, 0.0, "comm" if is_comm else ("kernel" if cat == "kernel" else cat)])
        k[0] += 1
        k[1] += e - s
    uc, up = _union(comm), _union(comp)
    lc, lp = _length(uc), _length(up)
    over = _intersect(uc, up)
    allu = _union(comm + comp)
    span = (allu[-1][1] - allu[0][0]) if allu else 0.0
    us = 1e-3 / nsteps  # us -> ms per step
    top = sorted(per_kernel.items(), key=lambda kv: -kv[1][1])[:25]
    return {
        "comm_total_ms": lc * us,
        "exposed_comm_ms": (lc - over) * us,
        "compute_ms": lp * us,
        "busy_ms": _length(allu) * us,
        "span_ms": span * us,
        "nccl_kernels": len(comm),
        "top_kernels": [{"name": n, "kind": v[2], "count_per_step": v[0] / nsteps, "ms_per_step": v[1] * us}
                        for n, v in top],
    }


# ---------------------------------------------------------------------------------------------
# driver


def env_info():
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__, "world_size": RT.world,
            "env": {k: os.environ.get(k) for k in ("CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_NVLS_ENABLE",
                                                   "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
                                                   "NCCL_ALGO", "NCCL_PROTO")}}
    if RT.cuda:
        info["gpu"] = torch.cuda.get_device_name(RT.device)
        info["cuda"] = torch.version.cuda
        info["cudnn"] = torch.backends.cudnn.version()
        try:
            v = torch.cuda.nccl.version()
            info["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception:  # noqa: BLE001
            info["nccl"] = None
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout
            info["nvidia_smi"] = [x.strip() for x in out.strip().splitlines()]
            info["driver"] = info["nvidia_smi"][0].split(",")[1].strip() if info["nvidia_smi"] else None
        except (OSError, subprocess.SubprocessError, IndexError):
            info["driver"] = None
        try:
            topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20).stdout
            info["topology"] = topo.strip().splitlines()[:4]
        except (OSError, subprocess.SubprocessError):
            pass
    return info


def gather_obj(obj):
    out = [None] * RT.world
    dist.all_gather_object(out, obj, group=RT.gloo)
    return out


def run_config(M, name, args):
    cfg = e2e_model.CONFIGS[name]
    t_build = time.perf_counter()
    run = Run(M, name, cfg)
    sync()
    host_barrier()
    build_s = time.perf_counter() - t_build

    first_loss = first_norm = None
    for i in range(args.warmup):
        loss, norm = run.step()
        if i == 0:
            sync()
            first_loss, first_norm = loss, norm
    sync()

    times = []
    last_loss = None
    for _ in range(args.steps):
        host_barrier()
        sync()
        t0 = time.perf_counter()
        last_loss, _ = run.step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    ll = last_loss.float().item() if last_loss is not None else float("nan")
    bstats = None
    if run.buckets is not None:
        bstats = {"buckets": len(run.buckets.buckets),
                  "bucket_elems": [b[1] - b[0] for b in run.buckets.buckets],
                  "launched_during_backward": getattr(run.buckets, "last_in_backward", 0)}
    mem = torch.cuda.max_memory_allocated(RT.device) / 2**30 if RT.cuda else 0.0

    prof = None
    if args.profile_steps > 0:
        tdir = tempfile.mkdtemp(prefix="e2e_")
        path = os.path.join(tdir, f"{name}_rank{RT.rank}.json")
        acts = [torch.profiler.ProfilerActivity.CUDA] if RT.cuda else [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(activities=acts) as pr:
            for _ in range(args.profile_steps):
                host_barrier()
                sync()
                run.step()
                sync()
        pr.export_chrome_trace(path)
        prof = analyze_trace(path, args.profile_steps) if RT.cuda else None
        if args.trace_dir and RT.cuda:
            os.makedirs(args.trace_dir, exist_ok=True)
            with open(path, "rb") as fi, gzip.open(os.path.join(args.trace_dir, os.path.basename(path) + ".gz"),
                                                   "wb", compresslevel=6) as fo:
                shutil.copyfileobj(fi, fo)
        shutil.rmtree(tdir, ignore_errors=True)

    # losses: the sum over this rank's micro-batches of loss/m; average over DP, take the last stage
    fl = first_loss.float().item() if first_loss is not None else float("nan")
    fn = first_norm.float().item() if first_norm is not None else float("nan")
    per_rank = gather_obj({"rank": RT.rank, "times_ms": times, "loss": fl, "last_loss": ll, "grad_norm": fn, "profile": prof,
                           "max_mem_gib": mem, "build_s": build_s})
    run.free()
    del run
    gc.collect()
    if RT.cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(RT.device)
    host_barrier()

    step_max = [max(pr["times_ms"][i] for pr in per_rank) for i in range(args.steps)]
    if cfg["dp"] > 1:
        loss = sum(pr["loss"] for pr in per_rank) / cfg["dp"]
        lloss = sum(pr["last_loss"] for pr in per_rank) / cfg["dp"]
    else:
        loss = per_rank[-1]["loss"]  # the last PP stage (every TP rank has the loss)
        lloss = per_rank[-1]["last_loss"]
    p0 = per_rank[0]["profile"] or {}
    res = {
        "config": name,
        "world_size": e2e_model.world_size(cfg),
        "dp": cfg["dp"], "tp": cfg["tp"], "pp": cfg["pp"],
        "sequence_parallel": cfg["tp"] > 1,
        "tp_mode": cfg.get("tp_mode"),
        "dp_overlap": cfg.get("dp_overlap"),
        "bucket_size": cfg.get("bucket_size"),
        "micro_batches": e2e_model.micro_batches(M, cfg),
        "seq_length": M["seq_length"],
        "micro_batch_size": M["micro_batch_size"],
        "global_batch_size": M["global_batch_size"],
        "cuda_device_max_connections": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"),
        "step_time_ms": statistics.median(step_max),
        "step_time_ms_min": min(step_max),
        "step_time_ms_max": max(step_max),
        "step_times_ms": [round(t, 3) for t in step_max],
        "exposed_comm_ms": p0.get("exposed_comm_ms"),
        "comm_total_ms": p0.get("comm_total_ms"),
        "compute_ms": p0.get("compute_ms"),
        "exposed_comm_ms_mean_over_ranks": (statistics.mean(pr["profile"]["exposed_comm_ms"] for pr in per_rank)
                                            if all(pr["profile"] for pr in per_rank) else None),
        "idle_ms": (p0["span_ms"] - p0["busy_ms"]) if p0 else None,
        "profiled_busy_ms": p0.get("busy_ms"),
        "profiled_span_ms": p0.get("span_ms"),
        "first_step_loss": loss,
        "first_step_grad_norm": per_rank[0]["grad_norm"],
        "last_timed_step_loss": lloss,
        "dp_buckets": bstats,
        "attention": RT.attn_mode,
        "method": ("step_time_ms: median over steps of the slowest rank's wall time (gloo host barrier, "
                   "cuda synchronize before/after). exposed_comm_ms / comm_total_ms / compute_ms: rank 0 "
                   "torch.profiler CUPTI kernel timeline over profiled steps, per step: comm = union of NCCL "
                   "kernels, compute = union of other kernels + memcpy/memset, exposed = comm not covered by "
                   "compute (NCCL kernels count from launch, so waiting on a late peer is included)."),
        "per_rank": [{"rank": pr["rank"], "step_time_ms": statistics.median(pr["times_ms"]),
                      "max_mem_gib": pr["max_mem_gib"], "build_s": pr["build_s"],
                      **({k: pr["profile"][k] for k in ("exposed_comm_ms", "comm_total_ms", "compute_ms",
                                                        "busy_ms", "span_ms", "nccl_kernels")}
                         if pr["profile"] else {})} for pr in per_rank],
        "top_kernels_rank0": p0.get("top_kernels"),
    }
    if RT.rank == 0:
        print(f"[e2e] {name:16s} step {res['step_time_ms']:8.2f} ms  exposed {res['exposed_comm_ms'] or 0:7.2f}  "
              f"comm {res['comm_total_ms'] or 0:7.2f}  compute {res['compute_ms'] or 0:8.2f}  "
              f"loss {loss:.5f} -> {lloss:.5f}  gnorm {res['first_step_grad_norm']:.5f}  mem {mem:.1f} GiB", flush=True)
        if bstats:
            print(f"[e2e]   buckets {bstats['buckets']}, launched during backward {bstats['launched_during_backward']}",
                  flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="all", help="comma-separated names of e2e_model.CONFIGS, or all")
    ap.add_argument("--group", default=None, help="a name of e2e_model.GROUPS (overrides --configs)")
    ap.add_argument("--out", default="e2e-part.json")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-steps", type=int, default=2)
    ap.add_argument("--trace-dir", default=None)
    ap.add_argument("--cpu", action="store_true", help="gloo + fp32 on the CPU (logic check)")
    ap.add_argument("--tiny", action="store_true", help="tiny dimensions (logic check)")
    ap.add_argument("--bucket-size", type=int, default=None, help="override the overlap bucket size")
    args = ap.parse_args()

    M = dict(e2e_model.TINY if args.tiny else e2e_model.MODEL)
    RT.cuda = torch.cuda.is_available() and not args.cpu
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if RT.cuda:
        torch.cuda.set_device(local)
        RT.device = torch.device("cuda", local)
        RT.dtype = torch.bfloat16
        dist.init_process_group("nccl", device_id=RT.device)
        RT.nccl = True
    else:
        RT.device = torch.device("cpu")
        RT.dtype = torch.float32
        dist.init_process_group("gloo")
    RT.rank, RT.world = dist.get_rank(), dist.get_world_size()
    RT.gloo = dist.new_group(backend="gloo")
    if args.group:
        names = e2e_model.group_configs(args.group, RT.world)
    elif args.configs == "all":
        names = [n for n, c in e2e_model.CONFIGS.items() if e2e_model.world_size(c) == RT.world]
    else:
        names = args.configs.split(",")
    bad = [n for n in names if n not in e2e_model.CONFIGS or e2e_model.world_size(e2e_model.CONFIGS[n]) != RT.world]
    if bad:
        if RT.rank == 0:
            print(f"[e2e] {bad}: unknown, or not for {RT.world} processes; configs for {RT.world}: "
                  f"{[n for n, c in e2e_model.CONFIGS.items() if e2e_model.world_size(c) == RT.world]}", flush=True)
        dist.destroy_process_group()
        sys.exit(2)
    if args.bucket_size:
        for n in names:
            if "bucket_size" in e2e_model.CONFIGS[n]:
                e2e_model.CONFIGS[n]["bucket_size"] = args.bucket_size
    if RT.cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.perf_counter()
    RT.attn_mode = probe_attention(M, max([e2e_model.CONFIGS[n]["tp"] for n in names] + [1]))
    if RT.rank == 0:
        print(f"[e2e] attention: {RT.attn_mode}; configs {names}", flush=True)
    env = env_info() if RT.rank == 0 else None
    results = []

    def write():
        doc = {"schema_version": 1, "kind": "e2e", "env": env,
               "model": {k: M[k] for k in M} | {"gated_linear_unit": True, "activation": "swiglu",
                                                 "normalization": "RMSNorm", "position_embedding_type": "rope",
                                                 "untie_embeddings_and_output_weights": True,
                                                 "add_bias_linear": False, "precision": "bf16" if RT.cuda else "fp32"},
               "harness": {"steps": args.steps, "warmup": args.warmup, "profile_steps": args.profile_steps,
                           "wall_s": time.perf_counter() - t0, "script": "microbench/e2e/e2e.py"},
               "results": results}
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)

    for name in names:  # the file is rewritten after each config, so a later hang loses nothing
        results.append(run_config(M, name, args))
        if RT.rank == 0:
            write()
    if RT.rank == 0:
        print(f"[e2e] wrote {args.out} ({time.perf_counter() - t0:.1f} s)", flush=True)
    dist.barrier(group=RT.gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
