"""Double quantization on Fashion-MNIST: the AsyLPG family against full precision.

Reproduces, in miniature, the experiments of Yu et al. 2019 (papers/003, s.5):
multinomial logistic regression with L1 + L2 regularization and a 3-layer MLP
(784-100-10, ReLU), trained by one master and M asynchronous workers with
bounded delay (gradients computed on models up to M-1 versions old), through
gradwire's AsylpgMaster / AsylpgWorker. For each method it counts every byte
that crosses the network (frames as written, headers included: the model
frames master -> worker, the gradient frames worker -> master, and once per
epoch the full-precision snapshot broadcast and the full-gradient gather) and
reports the bits sent until the training loss first falls below a threshold:

  AsyFPG         full precision both ways (the baseline)
  QGrad          full-precision model, gradients quantized to b bits
  AsyLPG         model b_x bits, gradients b bits (double quantization)
  Sparse-AsyLPG  model b_x bits, gradients sparsified then b bits
  Acc-AsyLPG     AsyLPG with the accelerated epochs

then a mu sweep (AsyLPG with b_x chosen in 1..8 by the mu-condition).
Writes a CSV of loss against bits (scripts/plot_asylpg.py draws it).

    python examples/asylpg_fmnist.py [--samples 10000] [--csv asylpg.csv]
"""
from __future__ import annotations

import argparse
import collections
import gzip
import os
import sys
import time

import numpy as np

import gradwire as gw

DATA = "/usr/share/datasets/fashion-mnist"


def load(samples: int):
    with gzip.open(os.path.join(DATA, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(DATA, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return (x[:samples].astype(np.float32) / 255.0), y[:samples].astype(np.int64)


def softmax_ce(logits, y):
    """Mean cross-entropy and its gradient with respect to the logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    loss = float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean())
    p[np.arange(len(y)), y] -= 1.0
    return loss, p / np.float32(len(y))


class Logistic:
    name = "logistic"

    def __init__(self):
        self.d = 784 * 10 + 10

    def init(self, rng):
        return np.zeros(self.d, np.float32)

    def loss_grad(self, w, x, y, grad=True):
        W, b = w[:7840].reshape(784, 10), w[7840:]
        loss, dz = softmax_ce(x @ W + b, y)
        if not grad:
            return loss, None
        g = np.empty_like(w)
        g[:7840] = (x.T @ dz).ravel()
        g[7840:] = dz.sum(axis=0)
        return loss, g


class Mlp:
    name = "mlp"

    def __init__(self, hidden=100):
        self.h = hidden
        self.sizes = [784 * hidden, hidden, hidden * 10, 10]
        self.d = sum(self.sizes)

    def views(self, w):
        o = np.cumsum([0] + self.sizes)
        return (w[o[0]:o[1]].reshape(784, self.h), w[o[1]:o[2]],
                w[o[2]:o[3]].reshape(self.h, 10), w[o[3]:o[4]])

    def init(self, rng):
        w = np.zeros(self.d, np.float32)
        W1, _, W2, _ = self.views(w)
        W1[:] = rng.normal(0, np.sqrt(2 / 784), W1.shape)
        W2[:] = rng.normal(0, np.sqrt(2 / self.h), W2.shape)
        return w

    def loss_grad(self, w, x, y, grad=True):
        W1, b1, W2, b2 = self.views(w)
        a = x @ W1 + b1
        h = np.maximum(a, 0)
        loss, dz = softmax_ce(h @ W2 + b2, y)
        if not grad:
            return loss, None
        g = np.empty_like(w)
        gW1, gb1, gW2, gb2 = self.views(g)
        gW2[:] = h.T @ dz
        gb2[:] = dz.sum(axis=0)
        da = (dz @ W2.T) * (a > 0)
        gW1[:] = x.T @ da
        gb1[:] = da.sum(axis=0)
        return loss, g


def objective(model, w, x, y, l1, l2):
    loss, _ = model.loss_grad(w, x, y, grad=False)
    return loss + l1 * float(np.abs(w).sum()) + 0.5 * l2 * float(w @ w)


def full_gradient(model, w, x, y, chunk=5000):
    g = np.zeros_like(w)
    for i in range(0, len(y), chunk):
        _, gi = model.loss_grad(w, x[i:i + chunk], y[i:i + chunk])
        g += gi * np.float32(len(y[i:i + chunk]) / len(y))
    return g


def frame_bytes(d):
    """An identity (float32) frame of d elements: 40-byte header, payload, CRC."""
    return 40 + 4 * d + 4


def run(model, method, x, y, args, lr, *, mu=None, bits=None, log=None):
    """Train one method; returns (bits until threshold or None, final loss, mean b_x)."""
    rng = np.random.default_rng(args.seed)
    w0 = model.init(np.random.default_rng(args.seed))
    d, M = model.d, args.workers
    l1, l2 = (args.l1, args.l2) if model.name == "logistic" else (0.0, args.l2)
    b, bx = args.bits, args.model_bits
    variant = "acc" if method == "Acc-AsyLPG" else "plain"
    if method in ("AsyFPG", "QGrad"):
        mbits = (0, 0)
    elif bits is not None:
        mbits = bits
    else:
        mbits = (bx, bx)
    if method == "AsyFPG":
        codec = gw.CodecSpec("identity")
    elif method == "Sparse-AsyLPG":
        codec = gw.CodecSpec("sparse_quant", bits=b)
    else:
        codec = gw.CodecSpec("quant", bits=b)
    m_len = args.epoch_length or 2 * len(y) // args.batch
    master = gw.AsylpgMaster(w0, lr=lr, epoch_length=m_len, variant=variant, l1=l1, l2=l2,
                             tau=M - 1, mu=mu if mu is not None else args.mu, bits=mbits,
                             seed=args.seed)
    workers = [gw.AsylpgWorker(d, codec, seed=1000 * args.seed + k) for k in range(M)]
    parts = np.array_split(rng.permutation(len(y)), M)  # each worker's data partition
    sent = 0  # bytes on the wire
    curve = [(0, objective(model, w0, x, y, l1, l2))]
    hit, bx_sum, bx_n = None, 0, 0
    every = max(1, m_len // 4)
    t0 = time.time()
    for epoch in range(1, args.epochs + 1):
        snap = master.snapshot()
        # Map-reduce full gradient: snapshot broadcast, partial gradients gathered (fp32).
        master.begin_epoch(full_gradient(model, snap, x, y))
        sent += 2 * M * frame_bytes(d)
        for wk in workers:
            wk.set_snapshot(snap)
        pending = collections.deque()
        pulls = pushes = 0
        while pushes < m_len:
            while len(pending) < M and pulls < m_len:
                wk = workers[pulls % M]
                f = master.model()
                sent += len(f)
                if master.last_bits() not in (0, 32):
                    bx_sum += master.last_bits()
                    bx_n += 1
                wk.receive(f)
                part = parts[pulls % M]
                idx = part[rng.integers(0, len(part), args.batch)]
                _, gm = model.loss_grad(wk.model(), x[idx], y[idx])
                _, gs = model.loss_grad(snap, x[idx], y[idx])
                g = wk.step(gm, gs)
                sent += len(g)
                pending.append(g)
                pulls += 1
            master.push(pending.popleft())
            pushes += 1
            if pushes % every == 0:
                loss = objective(model, master.params(), x, y, l1, l2)
                curve.append((sent * 8, loss))
                if log:
                    log.write(f"{model.name},{method},{lr},{mu if mu is not None else ''},"
                              f"{epoch},{pushes},{sent * 8},{loss:.6f}\n")
                if hit is None and loss < args.threshold[model.name]:
                    hit = sent * 8
                if not np.isfinite(loss):
                    break
        print(f"  {method:14s} lr {lr:<5g} epoch {epoch:2d}  loss {curve[-1][1]:.4f}  "
              f"{sent * 8 / 1e6:9.1f} Mbit  {time.time() - t0:5.1f} s", flush=True)
        if hit is not None and epoch >= args.min_epochs:
            break
    return hit, curve[-1][1], (bx_sum / bx_n if bx_n else None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=10000, help="training images used")
    ap.add_argument("--models", default="logistic,mlp")
    ap.add_argument("--methods", default="AsyFPG,QGrad,AsyLPG,Sparse-AsyLPG,Acc-AsyLPG")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=30, help="at most")
    ap.add_argument("--min-epochs", type=int, default=1)
    ap.add_argument("--epoch-length", type=int, default=0, help="m (default 2 N / batch)")
    ap.add_argument("--bits", type=int, default=4, help="gradient bits b")
    ap.add_argument("--model-bits", type=int, default=8, help="b_x")
    ap.add_argument("--mu", type=float, default=1.0)
    ap.add_argument("--mu-sweep", default="0.01,0.1,1,10,100", help="empty: skip")
    ap.add_argument("--l1", type=float, default=1e-5)
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--lrs", default="0.02,0.03",
                    help="learning rates tried per method; the one with the fewest bits is kept")
    ap.add_argument("--threshold-logistic", type=float, default=0.42)
    ap.add_argument("--threshold-mlp", type=float, default=0.35)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", default="")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every method reaches the threshold and every "
                         "low-precision one with fewer bits than the first (full precision)")
    args = ap.parse_args(argv)
    lrs = [float(v) for v in args.lrs.split(",")]
    args.threshold = {"logistic": args.threshold_logistic, "mlp": args.threshold_mlp}
    x, y = load(args.samples)
    log = open(args.csv, "w") if args.csv else None
    if log:
        log.write("model,method,lr,mu,epoch,update,bits,loss\n")
    models = {"logistic": Logistic(), "mlp": Mlp()}
    ok = True
    for name in args.models.split(","):
        model = models[name]
        print(f"{name}: d = {model.d}, N = {len(y)}, {args.workers} workers, delay <= "
              f"{args.workers - 1}, threshold {args.threshold[name]}", flush=True)
        rows = []
        for method in args.methods.split(","):
            best = None
            for lr in lrs:
                hit, final, bx = run(model, method, x, y, args, lr, log=log)
                if best is None or (hit is not None and (best[1] is None or hit < best[1])):
                    best = (lr, hit, final, bx)
            rows.append((method,) + best)
        base = rows[0][2]
        print(f"\n{name}: bits until the training loss < {args.threshold[name]} "
              f"(best learning rate of {args.lrs} per method)")
        print(f"  {'method':14s} {'lr':>5s} {'Mbit':>10s} {'ratio':>7s} {'final loss':>10s} "
              f"{'mean b_x':>8s}")
        for method, lr, hit, final, bx in rows:
            ratio = f"{base / hit:6.2f}x" if hit and base else "     -"
            mbit = f"{hit / 1e6:10.1f}" if hit else "   not hit"
            bxs = f"{bx:8.2f}" if bx else "       -"
            print(f"  {method:14s} {lr:5g} {mbit} {ratio} {final:10.4f} {bxs}")
            ok = ok and hit is not None and (method == rows[0][0] or (base and hit < base))
        if args.mu_sweep:
            lr = next((r[1] for r in rows if r[0] == "AsyLPG"), lrs[0])
            print(f"\n{name}: AsyLPG (lr {lr:g}) with b_x chosen in 1..8 by the mu-condition")
            print(f"  {'mu':>8s} {'mean b_x':>8s} {'Mbit':>10s} {'final loss':>10s}")
            for mu in [float(v) for v in args.mu_sweep.split(",")]:
                hit, final, bx = run(model, "AsyLPG", x, y, args, lr, mu=mu, bits=(1, 8), log=log)
                mbit = f"{hit / 1e6:10.1f}" if hit else "  not hit"
                print(f"  {mu:8g} {bx or 0:8.2f} {mbit} {final:10.4f}", flush=True)
        print()
    if log:
        log.close()
    if args.check and not ok:
        print("check failed: a method missed the threshold or sent more bits than full precision")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
