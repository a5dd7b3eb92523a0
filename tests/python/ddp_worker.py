"""One rank of the DDP hook tests: trains ddp_common's model with each method
through DistributedDataParallel + gradwire.ddp.hook on gloo, and saves the
final parameters (plus the checks it makes itself) for test_ddp.py.

    python ddp_worker.py RANK WORLD PORT OUTDIR [accumulate]
"""
import io
import os
import pickle
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(__file__))
import ddp_common as C  # noqa: E402
from gradwire.ddp import GradwireState, hook  # noqa: E402


def train(name, rank, accumulate, start=None, stop=C.STEPS):
    """Train steps [start.step or 0, stop); start: a pickled checkpoint."""
    model = C.make_model()
    # Tiny buckets: several per model, so the rebuild after step 1 reshuffles them.
    ddp = DDP(model, bucket_cap_mb=0.0002)
    opt = torch.optim.SGD(ddp.parameters(), lr=C.LR)
    first = 0
    if start is None:
        state = GradwireState(ddp, **C.state_options(name))
    else:
        ck = pickle.loads(start)
        ddp.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        state = ck["hook"].bind(ddp)
        first = ck["step"]
    ddp.register_comm_hook(state, hook)
    checkpoint = None
    for step in range(first, stop):
        opt.zero_grad()
        if accumulate:
            with ddp.no_sync():
                C.loss_of(ddp, *C.batch(step, rank, 1)).backward()
        C.loss_of(ddp, *C.batch(step, rank, 0)).backward()
        opt.step()
        if step == 2:
            checkpoint = pickle.dumps({"model": ddp.module.state_dict(), "opt": opt.state_dict(),
                                       "hook": state, "step": step + 1})
    return [p.detach().clone() for p in ddp.module.parameters()], checkpoint, state


def main():
    rank, world, port, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    accumulate = len(sys.argv) > 5 and sys.argv[5] == "accumulate"
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    result = {}
    for name in C.METHODS:
        params, ck, state = train(name, rank, accumulate)
        resumed, _, _ = train(name, rank, accumulate, start=ck)
        result[name] = {"params": params, "resumed": resumed,
                        "bytes": state.bytes_sent, "steps": state.steps,
                        "hook_time": state.hook_time}
    buf = io.BytesIO()
    torch.save(result, buf)
    with open(os.path.join(outdir, f"rank{rank}.pt"), "wb") as f:
        f.write(buf.getvalue())
    C.shut_down()


if __name__ == "__main__":
    main()
