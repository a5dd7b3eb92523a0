"""Collectives over torch.distributed on uint8 / float32 tensors, issued
with async_op=True: each call returns a future of its output tensor and
counts the bytes this rank hands over (`sent`).

Frames are written by gradwire straight into the send tensors and decoded
straight from the receive tensors (a uint8 tensor is a buffer the bindings
borrow), so no bytes object is made on the way. Messages whose sizes the
receivers cannot know in advance take one exchange of sizes first; callers
skip it where frame bounds fix the sizes.

`rank`, `size` and every root (`src`) are ranks within `group`, which may be
any subgroup (its ranks need not be 0..M-1 of the world): roots are mapped
to the global ranks torch.distributed expects.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from ._torch import dist, torch

Future = torch.futures.Future


def _done(value: torch.Tensor) -> Future:
    fut: Future = Future()
    fut.set_result(value)
    return fut


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

    def _future(self, work, out: torch.Tensor) -> Future:
        return work.get_future().then(lambda _: out)

    def all_to_all(self, send: torch.Tensor, send_sizes: Sequence[int],
                   recv_sizes: Sequence[int]) -> Future:
        """send[sum(send_sizes[:j]) ...] goes to rank j; the future holds what
        every rank sent to this one, back to back in rank order."""
        recv = torch.empty(sum(recv_sizes), dtype=send.dtype)
        send = send[:sum(send_sizes)]
        self._count(send)
        work = dist.all_to_all_single(recv, send, list(recv_sizes), list(send_sizes),
                                      group=self.group, async_op=True)
        return self._future(work, recv)

    def all_gather(self, send: torch.Tensor) -> Future:
        """Every rank's tensor (all of one size), back to back in rank order."""
        every = torch.empty(self.size * send.numel(), dtype=send.dtype)
        self._count(send)
        work = dist.all_gather_into_tensor(every, send, group=self.group, async_op=True)
        return self._future(work, every)

    def broadcast(self, buf: torch.Tensor, src: int) -> Future:
        """`buf` of the group's rank `src` into every rank's `buf` (same size)."""
        if self.rank == src:
            self._count(buf)
        work = dist.broadcast(buf, self.global_rank(src), group=self.group, async_op=True)
        return self._future(work, buf)

    def all_reduce_sum(self, t: torch.Tensor) -> Future:
        if t.numel() == 0:
            return _done(t)
        self._count(t)
        return self._future(dist.all_reduce(t, group=self.group, async_op=True), t)

    # Sizes, for messages whose length only the sender knows.
    def exchange_sizes(self, sizes: Sequence[int]) -> List[int]:
        """all_to_all of one size per destination: what each rank will send here."""
        send = torch.tensor(list(sizes), dtype=torch.int64)
        return self.all_to_all(send, [1] * self.size, [1] * self.size).wait().tolist()

    def gather_sizes(self, size: int) -> List[int]:
        """Every rank's one size, in rank order."""
        return self.all_gather(torch.tensor([size], dtype=torch.int64)).wait().tolist()

    def broadcast_size(self, size: int, src: int) -> int:
        return int(self.broadcast(torch.tensor([size], dtype=torch.int64), src).wait())

    def sparse_mean(self, t: torch.Tensor) -> Future:
        """The group's average of a sparse (COO) tensor: a plain all_reduce."""
        t = t.coalesce()
        self._count(t.indices())
        self._count(t.values())
        work = dist.all_reduce(t, group=self.group, async_op=True)
        # gloo's sparse sum is a new tensor, the future's value.
        return work.get_future().then(lambda f: f.value()[0].div_(self.size))
