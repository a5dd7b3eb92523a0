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

from typing import Any, Dict, Optional, Sequence, Union

from ._torch import dist, torch  # first: says how to install torch if it is missing
from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter

from . import CodecSpec, Worker, decode_accumulate_many
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
                "workers": {j: w.save() for j, w in self.workers.items()}}

    def load_state_dict(self, sd: Dict[str, Any]) -> None:
        if sd.get("format") != 1:
            raise ValueError("not a gradwire reduce-scatter state (format 1)")
        if CodecSpec(sd["codec"][0], **sd["codec"][1]) != self.codec:
            raise ValueError("state was saved with another codec")
        self.numel, self.workers = sd["numel"], {}
        M = len(sd["workers"])
        for j, blob in sd["workers"].items():
            w = Worker(self.numel // M, self.codec, momentum=self.momentum, mu=self.mu,
                       tensor=self.tensor, seed=self.seed)
            w.load(blob)
            self.workers[j] = w
