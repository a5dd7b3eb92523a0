"""A compressed reduce-scatter for FSDP2 (torch.distributed.fsdp.fully_shard).

    from gradwire.fsdp import GradwireReduceScatter
    for layer in model.layers:
        fully_shard(layer)
        layer.set_custom_reduce_scatter(GradwireReduceScatter("scaled_sign"))
    fully_shard(model)
    model.set_custom_reduce_scatter(GradwireReduceScatter("scaled_sign"))

FSDP2 hands the reduce-scatter one flat buffer per module: chunk j (of
world_size equal chunks) is rank j's shard of every parameter. Here each
rank compresses chunk j with its own error-feedback worker (one per chunk,
so the residual of every shard persists across steps), the frames go
all-to-all to their owners, and each owner decodes the world_size frames
into its shard, summed or averaged as FSDP asks. Give every fully_shard
module its own instance: the error feedback is per module. Only the
gradients are compressed: FSDP's parameter all-gather stays exact, and the
optimizer updates the sharded parameters as usual.

`op` may be AVG or SUM (what FSDP2 uses for float32 and bfloat16 reduction
and with set_force_sum_reduction_for_comms); PREMUL_SUM, which FSDP uses
only with a custom gradient divide factor, raises NotImplementedError.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._torch import dist, torch  # first: says how to install torch if it is missing
from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter

import numpy as np

from . import CodecSpec, Worker, decode_accumulate_many
from ._blob import with_vectors
from ._collectives import Collectives
from ._frames import SendBuffer, fixed_size, regions, split


class GradwireReduceScatter(ReduceScatter):
    """Reduce-scatter with a gradwire codec and per-chunk error feedback."""

    def __init__(self, codec: Union[str, CodecSpec] = "scaled_sign", *, momentum: str = "none",
                 mu: float = 0.0, seed: int = 0, tensor: int = 0) -> None:
        self.codec = codec if isinstance(codec, CodecSpec) else CodecSpec(codec)
        self.momentum, self.mu, self.seed, self.tensor = momentum, mu, seed, tensor
        self.workers: Dict[int, Worker] = {}
        self._comms: Dict[Any, Collectives] = {}
        self.numel: Optional[int] = None
        self.world: Optional[Tuple[int, int]] = None  # (size, rank) of the last call

    def allocate(self, size: Sequence[Union[int, torch.SymInt]], *, dtype: torch.dtype,
                 device: torch.device) -> torch.Tensor:
        return torch.empty(*size, dtype=dtype, device=device)

    @property
    def bytes_sent(self) -> int:
        return sum(c.sent for c in self._comms.values())

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor,
                 group: dist.ProcessGroup, op: Any, async_op: bool = False) -> None:
        comm = self._comms.get(group)
        if comm is None:
            comm = self._comms[group] = Collectives(group)
        M, r = comm.size, comm.rank
        self.world = (M, r)
        if op == dist.ReduceOp.AVG:
            alpha = 1.0 / M
        elif op == dist.ReduceOp.SUM:
            alpha = 1.0
        else:
            raise NotImplementedError(f"gradwire reduce-scatter supports AVG and SUM, not {op}")
        flat = input_tensor.reshape(-1)
        shard = output_tensor.numel()
        if flat.numel() != shard * M:
            raise ValueError(f"reduce-scatter input holds {flat.numel()} elements, expected "
                             f"{M} x {shard}")
        if self.numel is None:
            self.numel = flat.numel()
        elif self.numel != flat.numel():
            raise ValueError("one GradwireReduceScatter per fully_shard module: this one saw "
                             f"{self.numel} elements before, now {flat.numel()}")
        workers = []
        for j in range(M):
            w = self.workers.get(j)
            if w is None:
                w = self.workers[j] = Worker(shard, self.codec, momentum=self.momentum,
                                             mu=self.mu, tensor=self.tensor, seed=self.seed)
            workers.append(w)
        # Frames straight into the send tensor, chunk j's for rank j; every
        # chunk has one size, so fixed-size codecs exchange no sizes.
        bound = workers[0].frame_bound()
        send = SendBuffer(M * bound)
        sizes = [send.write(bound, lambda o: w.step(flat[j * shard:(j + 1) * shard], out=o))
                 for j, w in enumerate(workers)]
        recv_sizes = [bound] * M if fixed_size(self.codec) else comm.exchange_sizes(sizes)
        mine = comm.all_to_all(send.data, sizes, recv_sizes).wait()
        frames = [split(m, 1, "a worker message")[0] for m in regions(mine, recv_sizes)]
        acc = torch.zeros(shard, dtype=torch.float32)
        decode_accumulate_many(frames, acc, alpha)
        output_tensor.reshape(-1).copy_(acc)
        return None

    def state_dict(self) -> Dict[str, Any]:
        """This rank's error feedback (each rank keeps its own)."""
        return {"format": 1, "codec": (self.codec.name, self.codec.params), "numel": self.numel,
                "world": self.world, "workers": {j: w.save() for j, w in self.workers.items()}}

    def load_state_dict(self, sd: Union[Dict[str, Any], Sequence[Dict[str, Any]]], *,
                        shapes: Optional[Sequence[Sequence[int]]] = None,
                        world: Optional[Tuple[int, int]] = None) -> None:
        """Restore this rank's state_dict(); or, given the state_dict()s of all
        ranks of a job (a list, in rank order, any world size), this rank's share
        re-sharded for `world` = (size, rank) (default: the default group's).
        Re-sharding needs the module's parameter shapes in FSDP's order
        (`[p.shape for p in module.parameters()]` for a module whose parameters
        are all its own), to find each element in the flat buffer; every
        element's residual becomes the mean over the old ranks (padding,
        which no parameter owns, is dropped)."""
        if isinstance(sd, (list, tuple)):
            if shapes is None:
                raise ValueError("re-sharding a reduce-scatter state needs shapes=: the "
                                 "module's parameter shapes in FSDP's order")
            if world is None:
                world = (dist.get_world_size(), dist.get_rank())
            sd = reshard_flat(sd, self, [tuple(s) for s in shapes], tuple(world))
        if sd.get("format") != 1:
            raise ValueError("not a gradwire reduce-scatter state (format 1)")
        if CodecSpec(sd["codec"][0], **sd["codec"][1]) != self.codec:
            raise ValueError("state was saved with another codec")
        self.world = tuple(sd["world"]) if sd.get("world") is not None else None
        self.numel, self.workers = sd["numel"], {}
        M = len(sd["workers"])
        for j, blob in sd["workers"].items():
            w = Worker(self.numel // M, self.codec, momentum=self.momentum, mu=self.mu,
                       tensor=self.tensor, seed=self.seed)
            w.load(blob)
            self.workers[j] = w


def _layout(shapes: List[Tuple[int, ...]], M: int) -> List[Tuple[int, int, int]]:
    """Per parameter: (rows per chunk, elements per row, elements) of FSDP's
    flat buffer over M ranks (dim 0 padded to a multiple of M)."""
    out = []
    for shape in shapes:
        inner = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        out.append((-(-shape[0] // M), inner, int(np.prod(shape)) if shape else 1))
    return out


def reshard_flat(states: Sequence[Dict[str, Any]], rs: GradwireReduceScatter,
                 shapes: List[Tuple[int, ...]], world: Tuple[int, int]) -> Dict[str, Any]:
    """Rank world[1]'s reduce-scatter state for world[0] ranks from the states of
    all M ranks (list order is rank order where a state does not say its rank)."""
    M = len(states)
    M2, rank = world
    order: List[Optional[Dict[str, Any]]] = [None] * M
    for i, sd in enumerate(states):
        r = sd["world"][1] if sd.get("world") is not None else i
        if sd.get("world") is not None and sd["world"][0] != M:
            raise ValueError(f"got {M} states, one was saved by a job of {sd['world'][0]}")
        if order[r] is not None:
            raise ValueError(f"two states of rank {r}")
        order[r] = sd
    if M2 == M:
        return dict(order[rank])
    old, new = _layout(shapes, M), _layout(shapes, M2)
    shard = sum(rows * inner for rows, inner, _ in old)
    numel = sum(n for _, _, n in old)
    fields = ("residual", "momentum") if rs.momentum != "none" else ("residual",)
    mean = {f: np.zeros(numel, np.float64) for f in fields}
    steps = set()
    for sd in order:
        if sd["numel"] != shard * M or sorted(sd["workers"]) != list(range(M)):
            raise ValueError(f"a state of {sd['numel']} elements and chunks "
                             f"{sorted(sd['workers'])} does not fit these shapes on {M} ranks")
        for j in range(M):
            w = Worker(shard, rs.codec, momentum=rs.momentum, mu=rs.mu, tensor=rs.tensor,
                       seed=rs.seed)
            w.load(sd["workers"][j])
            steps.add(w.step_count())
            for f in fields:
                v, pos, base = getattr(w, f)(), 0, 0
                for rows, inner, n in old:  # chunk j holds rows [j rows, (j+1) rows) of each
                    lo = min(j * rows * inner, n)
                    hi = min((j + 1) * rows * inner, n)
                    mean[f][base + lo:base + hi] += v[pos:pos + hi - lo]
                    pos += rows * inner
                    base += n
    if len(steps) != 1:
        raise ValueError(f"the ranks' states are at different steps: {sorted(steps)}")
    shard2 = sum(rows * inner for rows, inner, _ in new)
    template = order[0]["workers"][0]
    workers = {}
    for j in range(M2):
        vec = {f: np.zeros(shard2, np.float32) for f in fields}
        pos, base = 0, 0
        for rows, inner, n in new:
            lo = min(j * rows * inner, n)
            hi = min((j + 1) * rows * inner, n)
            for f in fields:
                vec[f][pos:pos + hi - lo] = mean[f][base + lo:base + hi] / M
            pos += rows * inner
            base += n
        workers[j] = with_vectors(template, shard2, {65: vec["residual"],
                                                     64: vec.get("momentum")})
    out = dict(order[0])
    out.update(numel=shard2 * M2, world=(M2, rank), workers=workers)
    return out
