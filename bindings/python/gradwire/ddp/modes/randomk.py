"""Random-k: values at k positions drawn from a seed every rank shares, so a
plain sum all_reduce adds them (no frames cross the wire). Each rank's
worker keeps the error feedback; its frame holds the values at the step's
positions (gw_randk_positions of the codec's revision), which go into the all_reduce tensor."""

from __future__ import annotations

import math

import numpy as np

from ... import CodecSpec, decode, gather, randk_indices
from ..._torch import torch


def k_of(spec: CodecSpec, n: int) -> int:
    k = spec["k"]
    return min(n, k) if k else min(n, math.ceil(n * spec["density_ppm"] / 1e6))


def exchange(state, bucket) -> None:
    comm, flat, layout = state.comm, bucket.flat, bucket.layout
    M = comm.size
    picks = []  # (positions, this rank's values there) per parameter
    dense = np.empty(max(n for _, _, n in layout), np.float32)  # one decode space for all
    for pid, off, n in layout:
        w = state.worker(pid, 0, n)
        idx = randk_indices(state.seed, w.step_count(), pid, n, k_of(state.codec, n),
                            revision=state.codec["revision"])
        decode(w.step(flat[off:off + n], state.lr_of(pid)), out=dense[:n])
        picks.append((idx, gather(dense[:n], idx)))
        state._moment.mask_at(pid, idx)  # DGC's masking, where momentum is taken over
    values = torch.from_numpy(np.concatenate([v for _, v in picks]))
    summed = comm.all_reduce_sum(values).wait().numpy()
    pos = 0
    out = bucket.out.numpy()
    for (pid, off, n), (idx, _) in zip(layout, picks):
        out[off + idx] = summed[pos:pos + idx.size] / M
        pos += idx.size
