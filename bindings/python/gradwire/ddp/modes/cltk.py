"""ScaleCom's CLT-k: a leader that rotates every step picks the indices
(chunk-wise top-k of its own low-pass accumulator, sent as an index frame),
every rank's values at those indices are summed by an all_reduce.

A tensor's leader is its step mod M (none while warming up, when every value
is summed); tensors that sat out steps (unused by every rank) have their
own, so there is one broadcast per distinct leader, in leader order (the
same on every rank: the handles agree). Index frames vary in size: the
leader broadcasts the size first.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from ... import gwnative as _n
from ..._frames import SendBuffer, split
from ..._torch import torch


def exchange(state, bucket) -> None:
    comm, flat, layout = state.comm, bucket.flat, bucket.layout
    r = comm.rank
    hs = []
    for pid, off, n in layout:
        h = state.cltk(pid, n)
        h.begin(flat[off:off + n], state.lr_of(pid))
        hs.append(h)
    leaders = [h.leader() for h in hs]
    frames: List[Optional[torch.Tensor]] = [None] * len(hs)
    for leader in sorted(set(leaders) - {_n.GW_CLTK_NO_LEADER}):
        mine = [i for i, l in enumerate(leaders) if l == leader]
        if r == leader:
            send = SendBuffer(sum(hs[i].index_frame_bound() for i in mine))
            for i in mine:
                send.write(hs[i].index_frame_bound(), lambda o: hs[i].select(out=o))
            size = comm.broadcast_size(send.pos, leader)
            msg = send.data[:size]
        else:
            size = comm.broadcast_size(0, leader)
            msg = torch.empty(size, dtype=torch.uint8)
        comm.broadcast(msg, leader).wait()
        for i, f in zip(mine, split(msg, len(mine), "the leader's message")):
            frames[i] = f
    values = [h.extract(f) for h, f in zip(hs, frames)]
    for (pid, _, _), h, f in zip(layout, hs, frames):
        if f is not None:  # a sparse round: DGC's masking, where momentum is taken over
            state._moment.mask_at(pid, h.indices())
    summed = comm.all_reduce_sum(torch.from_numpy(np.concatenate(values))).wait().numpy()
    pos = 0
    x = np.zeros(max(n for _, _, n in layout), np.float32)
    for (pid, off, n), h, v in zip(layout, hs, values):
        x[:n] = 0
        h.apply(summed[pos:pos + v.size], x[:n])   # x[I] -= sum / M
        bucket.out[off:off + n] = torch.from_numpy(x[:n]).mul_(-1.0 / state.lr_of(pid))
        pos += v.size
