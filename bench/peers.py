"""The operations gradwire does, as users write them in PyTorch and numpy,
timed in the same run on the same arrays beside gradwire's Python binding.

Prints one table: median time of each, and how many times slower the peer is
than gradwire (torch with 1 and 2 threads; numpy is single-threaded).

    python bench/peers.py [--n 16777216] [--repeat 7]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import gradwire as gw


def median_time(fn, repeat):
    fn()  # warm-up (allocations, lazy init)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def torch_ef_sign_step(g, m, e, mu=0.9):
    """Nesterov momentum + error feedback + scaled sign + residual, as a user writes it."""
    m.mul_(mu).add_(g)
    p = g + mu * m + e
    scale = p.abs().mean()
    neg = p < 0
    sent = torch.where(neg, -scale, scale)
    e.copy_(p - sent)
    return np.packbits(neg.numpy(), bitorder="little")


def torch_quantize(x, bits=4):
    """Stochastic rounding to b bits with delta = max|x| / (2^(b-1) - 1), packed two per byte."""
    levels = 2 ** (bits - 1) - 1
    delta = x.abs().max() / levels
    t = x / delta
    f = torch.floor(t)
    q = f + (torch.rand_like(x) < (t - f)).float()
    codes = (q + levels).to(torch.uint8)
    return codes[0::2] | (codes[1::2] << 4)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    n, rep = args.n, args.repeat
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n, dtype=np.float32)
    tx = torch.from_numpy(x)
    rows = []

    def row(name, gw_fn, torch_fn=None, numpy_fn=None):
        t_gw = median_time(gw_fn, rep)
        t = {}
        for threads in (1, 2):
            if torch_fn is not None:
                torch.set_num_threads(threads)
                t[threads] = median_time(torch_fn, rep)
        t_np = median_time(numpy_fn, rep) if numpy_fn is not None else None
        rows.append((name, t_gw, t.get(1), t.get(2), t_np))
        print(f"  measured {name}", flush=True)

    # 1. The worker step: momentum, error feedback, scaled sign, residual.
    w = gw.Worker(n, "scaled_sign")
    frame = bytearray(w.frame_bound())
    m, e = torch.zeros(n), torch.zeros(n)
    row("EF + scaled sign worker step (Nesterov)", lambda: w.step(x, lr=0.1, out=frame),
        lambda: torch_ef_sign_step(tx, m, e))
    # 2. Exact top-k by magnitude, 0.1% and 1%.
    for density in (0.001, 0.01):
        k = int(n * density)
        spec = gw.CodecSpec("topk", k=k, zstd=0)
        out = bytearray(spec.encode_bound(n))
        row(f"top-k {density:.1%} (gradwire: whole frame)", lambda: gw.encode(spec, x, out=out),
            lambda: torch.topk(tx.abs(), k, sorted=False),
            lambda: np.argpartition(np.abs(x), n - k)[n - k:])
    # 3. Stochastic 4-bit quantization + packing.
    q4 = gw.CodecSpec("quant", bits=4)
    out4 = bytearray(q4.encode_bound(n))
    row("stochastic 4-bit quantize + pack", lambda: gw.encode(q4, x, seed=1, out=out4),
        lambda: torch_quantize(tx))
    # 4. Sparse accumulation: 1% entries added into a dense buffer.
    k = n // 100
    sp = gw.CodecSpec("topk", k=k, zstd=0)
    f = gw.encode(sp, x)
    idx = torch.from_numpy(np.sort(rng.choice(n, k, replace=False)).astype(np.int64))
    vals = torch.randn(k)
    acc = np.zeros(n, np.float32)
    tacc = torch.zeros(n)
    row("sparse accumulate, 1% entries", lambda: gw.decode_accumulate(f, acc, 0.5),
        lambda: tacc.index_add_(0, idx, vals, alpha=0.5),
        lambda: np.add.at(acc, idx.numpy(), vals.numpy()))
    # 5. fp16 cast.
    h = gw.CodecSpec("fp16")
    outh = bytearray(h.encode_bound(n))
    row("fp16 cast", lambda: gw.encode(h, x, out=outh), lambda: tx.half(), lambda: x.astype(np.float16))

    print(f"\nn = {n} float32 elements, medians of {rep}; ratio = peer time / gradwire time")
    print(f"{'operation':44s} {'gradwire':>10s} {'torch 1T':>10s} {'ratio':>7s} {'torch 2T':>10s} "
          f"{'ratio':>7s} {'numpy':>10s} {'ratio':>7s}")
    for name, g, t1, t2, tn in rows:
        def cell(t):
            return (f"{t * 1e3:8.2f}ms {t / g:6.1f}x") if t is not None else f"{'-':>10s} {'-':>7s}"
        print(f"{name:44s} {g * 1e3:8.2f}ms {cell(t1)} {cell(t2)} {cell(tn)}")


if __name__ == "__main__":
    main()
