"""The Fashion-MNIST demo as a real multi-process job: torch
DistributedDataParallel on gloo over 127.0.0.1, one process per worker, with
each gradwire method as the DDP communication hook, set up as the README
says: GradwireState(ddp, method=m, optimizer=opt) with an ordinary optimizer
(SGD with momentum, or Adam). `ddp` is plain DDP with no hook. Prints
per-epoch loss and test accuracy and the bytes each rank handed to
torch.distributed per step, then a summary against plain DDP.

    python examples/train_fmnist_ddp.py --processes 4 --methods ddp,ef,topk
    python examples/train_fmnist_ddp.py --model cnn --epochs 4 --lr 0.02 --no-nesterov --no-check-optimizer
    bash scripts/demo.sh --processes 4          # the same, after installing what is missing
"""
import argparse
import gzip
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

from gradwire.ddp import METHODS, GradwireState, hook


def load_idx(data_dir, name):
    def read(path):
        for p in (path + ".gz", path):
            if os.path.exists(p):
                with (gzip.open(p) if p.endswith(".gz") else open(p, "rb")) as f:
                    return f.read()
        raise FileNotFoundError(f"{path}(.gz): install dataset-fashion-mnist or pass --data")
    img = read(os.path.join(data_dir, f"{name}-images-idx3-ubyte"))
    lab = read(os.path.join(data_dir, f"{name}-labels-idx1-ubyte"))
    x = np.frombuffer(img, np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255.0
    y = np.frombuffer(lab, np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def make_model(kind, seed=0):
    torch.manual_seed(1 + seed)
    nn = torch.nn
    if kind == "cnn":  # a small CNN: 2 conv layers and a classifier, 26k parameters
        return nn.Sequential(nn.Unflatten(1, (1, 28, 28)), nn.Conv2d(1, 16, 5), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(512, 32), nn.ReLU(), nn.Linear(32, 10))
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def make_optimizer(args, params):
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=args.lr)
    return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum,
                           nesterov=args.nesterov and args.momentum > 0)


def run(rank, world, port, args, queue):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    xtr, ytr = load_idx(args.data, "train")
    xte, yte = load_idx(args.data, "t10k")
    if args.quick:
        xtr, ytr = xtr[:6000], ytr[:6000]
    numel = sum(p.numel() for p in make_model(args.model).parameters())
    for method in args.methods:
        model = DDP(make_model(args.model, args.seed))
        opt = make_optimizer(args, model.parameters())
        state = None
        if method != "ddp":
            # The README's two lines; optimizer=opt moves the optimizer's momentum
            # into the hook, before compression (docs/distributed.md, "Momentum").
            given = (dict(check_optimizer=False) if args.momentum_after else
                     dict(optimizer=opt, check_optimizer=args.check_optimizer))
            state = GradwireState(model, method=method, seed=args.seed, **given)
            model.register_comm_hook(state, hook)
        steps_per_epoch = len(xtr) // (args.batch * world)
        t0 = time.time()
        for epoch in range(args.epochs):
            order = torch.Generator().manual_seed(epoch + 1000 * args.seed)
            perm = torch.randperm(len(xtr), generator=order)
            total = 0.0
            for s in range(steps_per_epoch):
                idx = perm[(s * world + rank) * args.batch:(s * world + rank + 1) * args.batch]
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
                loss.backward()
                opt.step()
                total += loss.item()
            if rank == 0:
                with torch.no_grad():
                    out = model.module(xte)
                    acc = (out.argmax(1) == yte).float().mean().item()
                    test_loss = torch.nn.functional.cross_entropy(out, yte).item()
                per_step = state.bytes_sent / state.steps if state else 4.0 * numel
                queue.put(dict(method=method, epoch=epoch + 1, loss=total / steps_per_epoch,
                               test_loss=test_loss, lr=opt.param_groups[0]["lr"], acc=acc, bytes=per_step, full=4.0 * numel,
                               secs=time.time() - t0))
        dist.barrier()
    dist.destroy_process_group()
    # Exit without finalizing Python: a gloo runloop thread may still drop the
    # last reference to a finished collective, which needs the GIL of an
    # interpreter being torn down and aborts the process (a torch bug,
    # pytorch/pytorch#190489). Everything this rank reports is already queued.
    sys.stdout.flush()
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=4, help="DDP processes (workers)")
    ap.add_argument("--methods", "--method", default="ddp,allreduce,ef,topk,lags,cltk",
                    help=f"comma-separated, of ddp (no hook),{','.join(METHODS)}")
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    ap.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                    help="sgd: SGD with --momentum; adam: Adam at --lr")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32, help="samples per process per step")
    ap.add_argument("--lr", type=float, default=None, help="default 0.05 (sgd), 0.001 (adam)")
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--nesterov", action=argparse.BooleanOptionalAction, default=True,
                    help="SGD's Nesterov momentum (default) or heavy-ball (--no-nesterov)")
    ap.add_argument("--momentum-after", action="store_true",
                    help="leave the optimizer's momentum after the exchange (not given to the "
                         "state; what gradwire refuses by default): to see why it is refused")
    ap.add_argument("--check-optimizer", action=argparse.BooleanOptionalAction, default=True,
                    help="--no-check-optimizer runs what gradwire refuses with the optimizer "
                         "given to the state (Adam; heavy-ball SGD with lags or cltk)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seeds the model's initial weights, the data order and gradwire's streams")
    ap.add_argument("--quick", action="store_true", help="6000 training samples, 1 epoch")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--csv", default="",
                    help="per-epoch results as CSV, the C demo's columns (scripts/plot_demo.py "
                         "plots them)")
    args = ap.parse_args(argv)
    args.methods = args.methods.split(",")
    if args.lr is None:
        args.lr = 0.001 if args.optimizer == "adam" else 0.05
    for m in args.methods:
        if m != "ddp" and m not in METHODS:
            ap.error(f"unknown method {m!r}: one of {', '.join(METHODS)}")
    if args.quick:
        args.epochs = 1
    model = "784-256-10 MLP" if args.model == "mlp" else "small CNN (26k parameters)"
    optim = (f"Adam lr {args.lr}" if args.optimizer == "adam"
             else f"SGD lr {args.lr} {'Nesterov ' if args.nesterov else ''}momentum "
                  f"{args.momentum}")
    print(f"Fashion-MNIST, {model}, {args.processes} DDP processes (gloo, 127.0.0.1), "
          f"batch {args.batch}/process, {optim}, {args.epochs} epochs", flush=True)
    print(f"{'method':10} {'epoch':>5} {'loss':>8} {'test acc':>9} {'bytes/step':>11} "
          f"{'vs full':>8} {'time':>7}", flush=True)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = mp.start_processes(run, args=(args.processes, free_port(), args, queue),
                               nprocs=args.processes, join=False, start_method="spawn")
    final = {}
    csv = open(args.csv, "w") if args.csv else None
    if csv:
        csv.write("method,epoch,lr,train_loss,test_loss,test_acc,bytes_per_step,diag_name,diag\n")
    expected = len(args.methods) * args.epochs
    got = 0
    while got < expected:
        if not queue.empty():
            r = queue.get()
            got += 1
            final[r["method"]] = r
            print(f"{r['method']:10} {r['epoch']:5d} {r['loss']:8.4f} {100 * r['acc']:8.2f}% "
                  f"{r['bytes']:11.0f} {r['full'] / r['bytes']:7.1f}x {r['secs']:6.1f}s",
                  flush=True)
            if csv:
                csv.write(f"{r['method']},{r['epoch']},{r['lr']:.6f},{r['loss']:.6f},"
                          f"{r['test_loss']:.6f},{100 * r['acc']:.4f},{r['bytes']:.0f},,0\n")
                csv.flush()
        elif not any(p.is_alive() for p in procs.processes):
            break
        else:
            time.sleep(0.05)
    procs.join()
    if got < expected:
        print("a process failed", file=sys.stderr)
        return 1
    print("bytes/step: what each rank handed to torch.distributed per step (sizes and padding "
          "included); vs full: 4 bytes x parameters / that", flush=True)
    summary(final)
    return 0


def summary(final):
    """Final accuracy of each method and its gap to plain DDP (when it ran)."""
    base = final.get("ddp")
    print(f"\nsummary after {max(r['epoch'] for r in final.values())} epochs:")
    print(f"  {'method':10} {'test acc':>9} {'gap (pts)':>10} {'vs full':>8} {'time':>7}")
    for name, r in final.items():
        gap = f"{100 * (base['acc'] - r['acc']):+10.2f}" if base and name != "ddp" else f"{'-':>10}"
        print(f"  {name:10} {100 * r['acc']:8.2f}% {gap} {r['full'] / r['bytes']:7.1f}x "
              f"{r['secs']:6.1f}s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
