"""Byte messages over torch.distributed, counting what this rank hands over.

Frames have different sizes on different ranks, so each exchange first
shares the sizes (one int64 per message) and pads where a collective
demands equal sizes (all_gather). `sent` counts every byte this rank hands
to torch.distributed, sizes and padding included, which is what the demo
reports against full precision.

`rank`, `size` and every root (`src`) are ranks within `group`, which may be
any subgroup (its ranks need not be 0..M-1 of the world): roots are mapped
to the global ranks torch.distributed expects.
"""

from __future__ import annotations

from typing import List, Optional

from ._torch import dist, torch


class Collectives:
    def __init__(self, group: Optional[dist.ProcessGroup] = None) -> None:
        self.group = group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        self.sent = 0  # bytes handed to torch.distributed so far

    def global_rank(self, group_rank: int) -> int:
        """The global rank of this group's rank `group_rank` (what `src=` takes)."""
        if self.group is None:
            return group_rank
        return dist.get_global_rank(self.group, group_rank)

    def _count(self, t: torch.Tensor) -> None:
        self.sent += t.numel() * t.element_size()

    def all_to_all(self, msgs: List[bytes]) -> List[bytes]:
        """msgs[j] goes to rank j; returns what each rank sent to this one."""
        sizes = torch.tensor([len(m) for m in msgs], dtype=torch.int64)
        recv_sizes = torch.empty(self.size, dtype=torch.int64)
        self._count(sizes)
        dist.all_to_all_single(recv_sizes, sizes, group=self.group)
        send = torch.frombuffer(bytearray(b"".join(msgs)) or bytearray(1), dtype=torch.uint8)
        send = send[:int(sizes.sum())]
        recv = torch.empty(int(recv_sizes.sum()), dtype=torch.uint8)
        self._count(send)
        dist.all_to_all_single(recv, send, recv_sizes.tolist(), sizes.tolist(), group=self.group)
        out, pos, data = [], 0, recv.numpy().tobytes()
        for s in recv_sizes.tolist():
            out.append(data[pos:pos + s])
            pos += s
        return out

    def all_gather(self, msg: bytes) -> List[bytes]:
        """Every rank's message, in rank order."""
        size = torch.tensor([len(msg)], dtype=torch.int64)
        sizes = torch.empty(self.size, dtype=torch.int64)
        self._count(size)
        dist.all_gather_into_tensor(sizes, size, group=self.group)
        width = max(1, int(sizes.max()))
        mine = torch.zeros(width, dtype=torch.uint8)
        if msg:
            mine[:len(msg)] = torch.frombuffer(bytearray(msg), dtype=torch.uint8)
        every = torch.empty(self.size * width, dtype=torch.uint8)
        self._count(mine)
        dist.all_gather_into_tensor(every, mine, group=self.group)
        data = every.numpy().tobytes()
        return [data[i * width:i * width + s] for i, s in enumerate(sizes.tolist())]

    def broadcast(self, msg: Optional[bytes], src: int) -> bytes:
        """The message of the group's rank `src` (its rank within the group)."""
        root = self.global_rank(src)
        size = torch.tensor([len(msg) if self.rank == src else 0], dtype=torch.int64)
        if self.rank == src:
            self._count(size)
        dist.broadcast(size, root, group=self.group)
        buf = torch.empty(int(size), dtype=torch.uint8)
        if self.rank == src:
            buf.copy_(torch.frombuffer(bytearray(msg), dtype=torch.uint8) if msg else buf)
            self._count(buf)
        dist.broadcast(buf, root, group=self.group)
        return buf.numpy().tobytes()

    def all_reduce_sum(self, t: torch.Tensor) -> torch.Tensor:
        self._count(t)
        dist.all_reduce(t, group=self.group)
        return t

    def sparse_mean(self, t: torch.Tensor) -> torch.Tensor:
        """The group's average of a sparse (COO) tensor: a plain all_reduce."""
        t = t.coalesce()
        self._count(t.indices())
        self._count(t.values())
        fut = dist.all_reduce(t, group=self.group, async_op=True).get_future()
        return fut.wait()[0].div_(self.size)  # gloo's sparse sum is a new tensor
