"""One rank of the FSDP2 test: for each codec, fully_shard each Linear and
the root, each with its own GradwireReduceScatter, train, save the full
parameters (all codecs in one process: starting torch is the cost).

    python fsdp_worker.py RANK WORLD PORT OUTDIR CODEC [CODEC ...]
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

sys.path.insert(0, os.path.dirname(__file__))
import ddp_common as C  # noqa: E402
from gradwire.fsdp import GradwireReduceScatter  # noqa: E402


def train(codec, rank, mesh, outdir):
    model = C.make_model()
    comms = []
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
            comms.append(GradwireReduceScatter(codec))
            layer.set_custom_reduce_scatter(comms[-1])
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=C.LR)
    for step in range(C.STEPS):
        opt.zero_grad()
        C.loss_of(model, *C.batch(step, rank, 0)).backward()
        opt.step()
    full = [p.full_tensor().detach().clone() for p in model.parameters()]
    if rank == 0:
        torch.save({"params": full, "bytes": sum(c.bytes_sent for c in comms),
                    "calls": [c.workers[0].step_count() for c in comms]},
                   os.path.join(outdir, f"fsdp_{codec}.pt"))


def main():
    rank, world, port, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    for codec in sys.argv[5:]:
        train(codec, rank, mesh, outdir)
    C.shut_down()


if __name__ == "__main__":
    main()
