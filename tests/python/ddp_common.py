"""What the DDP tests train, shared by the per-rank script (ddp_worker.py) and
the single-process simulation in test_ddp.py: a small MLP, its initial
weights, and each rank's batch of each step, all from fixed seeds."""

import os
import sys

import torch
import torch.distributed as dist

import gradwire as gw

STEPS = 6
LR = 0.1
# Methods the hook runs, with the state options each test uses.
METHODS = {
    "allreduce": {},
    "ef": {},
    "ef_nesterov": dict(method="ef", momentum="nesterov", mu=0.9),
    "topk": {},
    "topk_server": dict(method="topk", mode="server"),  # two-way: topk before it went one-way
    "fp16": {},
    "bf16": {},
    "efsignsgd": {},
    "lags": {},
    # the preset is refused by name (it does not train); its mode, explicitly
    "randomk": dict(method="randomk", mode="randomk", seed=7,
                    codec=gw.CodecSpec("randomk", density_ppm=10000)),
    "cltk": dict(method="cltk", warmup_steps=1),
}


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4),
                               torch.nn.ReLU(), torch.nn.Linear(4, 3))


def batch(step: int, rank: int, micro: int = 0):
    g = torch.Generator().manual_seed(1000 * step + 10 * rank + micro)
    x = torch.randn(8, 10, generator=g)
    y = torch.randint(0, 3, (8,), generator=g)
    return x, y


def loss_of(model, x, y):
    return torch.nn.functional.cross_entropy(model(x), y)


def state_options(name: str) -> dict:
    opts = dict(METHODS[name])
    opts.setdefault("method", name)
    return opts


def shut_down() -> None:
    """Leave a torch.distributed (gloo) process without finalizing Python.
    A gloo runloop thread can still hold the last reference to a finished
    collective's work (and its tensors) when the main thread exits; dropping
    it then needs the GIL of an interpreter being torn down, and the process
    aborts ("terminate called without an active exception"). Plain FSDP2
    without gradwire does it in about 1 exit of 20 with torch 2.15; see
    pytorch/pytorch#190489 and #179291. Results are written before this."""
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
