"""Elastic DDP training with gradwire: checkpoints every K steps hold every
rank's error-feedback state; a job that lost a rank restarts from the last
one on however many processes it has, and the state is re-sharded
(docs/distributed.md, "Checkpoints and world size").

Each step trains on one global batch of --global-batch samples, split evenly
over the processes, in an order that depends only on the step: a job resumed
on M' processes sees the same data a job of M would have. Rank 0 gathers the
ranks' GradwireState.state_dict()s and writes one checkpoint file (atomic,
checksummed) with the model, the optimizer and the held-back mass; a resumed
rank loads the list and takes its share (GradwireState.load_state_dict).

    python examples/elastic_ddp.py --processes 4 --checkpoint /tmp/ck --kill-rank 1 --kill-step 130
    python examples/elastic_ddp.py --processes 3 --checkpoint /tmp/ck --resume

(tests/python/test_elastic.py runs these two, with its own directory, and on 5 and 4.)
"""
import argparse
import glob
import hashlib
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

from gradwire.ddp import METHODS, GradwireState, hook, load_checkpoint, save_checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_fmnist_ddp import free_port, load_idx  # noqa: E402


def checkpoints(directory):
    """Checkpoint files, newest first."""
    return sorted(glob.glob(os.path.join(directory, "step-*.ckpt")), reverse=True)


def latest(directory):
    """The newest checkpoint that is whole, and what was skipped."""
    skipped = []
    for path in checkpoints(directory):
        try:
            return load_checkpoint(path), path, skipped
        except ValueError as e:
            skipped.append(str(e))
    return None, None, skipped


def mass(state, model, world):
    """What the job owes the model: the sum over ranks of what each holds back,
    over the world size, per parameter (float64)."""
    held = state.held_back()
    out = {}
    for pid, p in enumerate(model.parameters()):
        k = held.get(pid, torch.zeros(p.numel())).to(torch.float64)
        dist.all_reduce(k)
        out[pid] = k / world
    return out


def params_digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def run(rank, world, port, args):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    xtr, ytr = load_idx(args.data, "train")
    xtr, ytr = xtr[:args.samples], ytr[:args.samples]
    torch.manual_seed(1 + args.seed)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    state = GradwireState(model, method=args.method, optimizer=opt)
    model.register_comm_hook(state, hook)
    start = 0
    if args.resume:
        ck, path, skipped = latest(args.checkpoint)
        if ck is None:
            raise SystemExit(f"no whole checkpoint in {args.checkpoint}: {skipped}")
        model.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        state.load_state_dict(ck["gradwire"])  # all ranks' states: re-sharded for this world
        start = ck["step"]
        after = mass(state, model, world)
        if rank == 0:
            for s in skipped:
                print(f"skipped {s}", flush=True)
            worst = max(float((after[p] - ck["mass"][p]).abs().max()) for p in after)
            scale = max(float(ck["mass"][p].abs().max()) for p in after)
            print(f"resumed {os.path.basename(path)} (step {start}, saved by {ck['world']} "
                  f"ranks) on {world}: mass max |after - before| {worst:.3g} of max "
                  f"{scale:.3g}", flush=True)
    per_rank = args.global_batch // world
    steps_per_epoch = len(xtr) // args.global_batch
    for t in range(start, args.steps):
        epoch, s = divmod(t, steps_per_epoch)
        perm = torch.randperm(len(xtr), generator=torch.Generator().manual_seed(epoch + 1000 * args.seed))
        base = s * args.global_batch + rank * per_rank
        idx = perm[base:base + per_rank]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
        if t == args.kill_step and rank == args.kill_rank:
            # Die in the middle of the step: once backward has begun and the
            # other ranks' collectives of this step are under way.
            next(model.parameters()).register_hook(
                lambda g: os.kill(os.getpid(), signal.SIGKILL))
        loss.backward()
        opt.step()
        if args.checkpoint and (t + 1) % args.every == 0:
            states = [None] * world
            dist.all_gather_object(states, state.state_dict())
            owed = mass(state, model, world)
            if rank == 0:
                save_checkpoint(os.path.join(args.checkpoint, f"step-{t + 1:08d}.ckpt"),
                                dict(step=t + 1, world=world, model=model.module.state_dict(),
                                     optimizer=opt.state_dict(), gradwire=states, mass=owed))
    if rank == 0:
        xte, yte = load_idx(args.data, "t10k")
        with torch.no_grad():
            out = model.module(xte)
            acc = (out.argmax(1) == yte).float().mean().item()
            test_loss = torch.nn.functional.cross_entropy(out, yte).item()
        print(f"final: step {args.steps} on {world} processes: test acc {100 * acc:.2f}% "
              f"loss {test_loss:.4f} params {params_digest(model.module)}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)  # as train_fmnist_ddp.py: a gloo thread may outlive finalization


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--method", default="topk", choices=sorted(METHODS))
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--global-batch", type=int, default=120,
                    help="samples per step over all processes (divisible by the process count)")
    ap.add_argument("--samples", type=int, default=12000, help="training samples used")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0, help="of the initial weights and data order")
    ap.add_argument("--checkpoint", default=None, help="directory of checkpoint files")
    ap.add_argument("--every", type=int, default=25, help="checkpoint every K steps")
    ap.add_argument("--resume", action="store_true", help="from the newest whole checkpoint")
    ap.add_argument("--kill-rank", type=int, default=-1, help="this rank SIGKILLs itself ...")
    ap.add_argument("--kill-step", type=int, default=-1, help="... in the middle of this step")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args(argv)
    if args.global_batch % args.processes:
        ap.error(f"--global-batch {args.global_batch} is not divisible by {args.processes}")
    if args.checkpoint:
        os.makedirs(args.checkpoint, exist_ok=True)
    print(f"{args.method} on {args.processes} processes, steps {args.steps}, global batch "
          f"{args.global_batch}", flush=True)
    procs = mp.start_processes(run, args=(args.processes, free_port(), args),
                               nprocs=args.processes, join=False, start_method="spawn")
    # As torchrun does: when one rank dies the job is stopped, not left hanging
    # in the others' collectives.
    while True:
        codes = [p.exitcode for p in procs.processes]
        dead = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
        if dead:
            for p in procs.processes:
                if p.exitcode is None:
                    p.kill()
            for p in procs.processes:
                p.join()
            r, c = dead[0]
            why = f"signal {-c}" if c < 0 else f"exit status {c}"
            print(f"rank {r} died ({why}); the job was stopped. Restart it with --resume, on "
                  "any number of processes", flush=True)
            return 3
        if all(c == 0 for c in codes):
            return 0
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
