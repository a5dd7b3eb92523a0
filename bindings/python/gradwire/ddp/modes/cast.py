"""Cast all-reduce (methods "fp16" and "bf16"): one all_reduce of the bucket in 16 bits.

Each rank adds its error-feedback residual to its bucket divided by the world
size, y = e + g * (1/M) (divided first, as torch's fp16_compress_hook does, so
the 16-bit sum does not overflow), casts y to float16 (codec "fp16") or
bfloat16 ("bf16"), keeps the rounding error as its new residual, e = y -
cast(y) (exact: what it sends plus what it keeps is what came in), and issues
ONE all_reduce(SUM) of the 16-bit bucket with async_op=True on the state's
group; the sum, cast back into the bucket's own buffer, is the average. Values
too large for float16 saturate at +-65504 (as gradwire's fp16 codec does: the
excess stays in the residual); a NaN or Inf goes out as it is (the average is
then NaN / Inf, as with DDP's own hook, for a GradScaler to see) and leaves
its residual as it was.

The hook issues each bucket from the autograd thread (`issue`, like torch's
hook: no exchange thread, the all-reduces in flight together, each cast back
in its future's callback); `exchange` is the same arithmetic on the state's
exchange thread, for the steps that go there (never_slower's timed and decided
steps, find_unused_parameters' flags). y, the cast and the new residual are
one native pass over the whole bucket (gw_ef_cast, a tile at a time in cache,
the GIL released), on buffers kept across steps: faster than torch's vector
ops doing the same in four passes, and than per-parameter gradwire fp16
workers, whose frames (header, CRC) are also not one contiguous float16
tensor for gloo to sum (docs/performance.md, "The cast all-reduce").

State per parameter (`Residual`: float32, in units of what the rank sends,
gradient / M; `state.held_back()` reports it times M), stored while in use in
one contiguous buffer per bucket layout so each step is one call per bucket. Residuals are rescaled by lr_prev / lr when the optimizer's
learning rate changes, checkpoint with the state and re-shard to another world
size (the mass the job owes kept: e' = sum of the old ranks' e / M').
"""

from __future__ import annotations

import math
import struct
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..._torch import torch
from ... import ef_cast

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}

# A residual's checkpoint blob: magic, version, n, the learning rate it was
# kept at (NaN before its first step), then n little-endian float32.
_MAGIC = b"GWCR"
_HEAD = struct.Struct("<4sIQd")


class Residual:
    """One parameter's cast residual on this rank: the state's handle kind "r",
    with the interface the state uses of gradwire's own handles."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.e = torch.zeros(n, dtype=torch.float32)  # a view into a bucket's buffer when in use
        self.lr: Optional[float] = None
        self.owner: Any = None  # the _Buffers whose residual buffer self.e is a view of

    def save(self) -> bytes:
        lr = math.nan if self.lr is None else self.lr
        return _HEAD.pack(_MAGIC, 1, self.n, lr) + self.e.numpy().astype("<f4").tobytes()

    def load(self, blob: Any) -> None:
        n, lr, e = parse(blob)
        if n != self.n:
            raise ValueError(f"gradwire: a cast residual of {n} elements cannot load into "
                             f"one of {self.n}")
        self.e.copy_(torch.from_numpy(e))
        self.lr = lr

    def residual(self) -> np.ndarray:
        return self.e.numpy().copy()

    def close(self) -> None:
        self.owner = None


def parse(blob: Any) -> Tuple[int, Optional[float], np.ndarray]:
    """(n, lr or None, residual) of a Residual's blob; ValueError if it is not one."""
    blob = bytes(blob)
    if len(blob) < _HEAD.size:
        raise ValueError("gradwire: not a cast residual (too short)")
    magic, version, n, lr = _HEAD.unpack_from(blob)
    if magic != _MAGIC or version != 1:
        raise ValueError("gradwire: not a cast residual blob (magic or version)")
    if len(blob) != _HEAD.size + 4 * n:
        raise ValueError(f"gradwire: a cast residual of {n} elements holds "
                         f"{len(blob) - _HEAD.size} bytes")
    e = np.frombuffer(blob, dtype="<f4", count=n, offset=_HEAD.size).astype(np.float32)
    return n, None if math.isnan(lr) else lr, e


def reshard_blobs(blobs: Sequence[Any], workers_out: int) -> bytes:
    """A new rank's residual from every old rank's: their sum / M', so the mass
    the job owes (the sum over the ranks, in what they send) is kept."""
    parts = [parse(b) for b in blobs]
    n, lr = parts[0][0], parts[0][1]
    if any(p[0] != n for p in parts):
        raise ValueError("gradwire: the ranks' cast residuals differ in length")
    total = np.sum([p[2].astype(np.float64) for p in parts], axis=0) / workers_out
    r = Residual(n)
    r.e.copy_(torch.from_numpy(total.astype(np.float32)))
    r.lr = lr
    return r.save()


class _Buffers:
    """What one bucket layout keeps across steps: the residuals of its
    parameters in one contiguous float32 buffer (packed in layout order), and
    the 16-bit tensor the all_reduce sums."""

    def __init__(self, state, layout, dtype) -> None:
        n = sum(k for _, _, k in layout)
        self.e = torch.zeros(n, dtype=torch.float32)
        self.h = torch.empty(n, dtype=dtype)
        self.handles: List[Tuple[int, Residual]] = []
        pos = 0
        for pid, _, k in layout:
            r = state.cast_residual(pid, k)
            self.e[pos:pos + k].copy_(r.e)
            r.e, r.owner = self.e[pos:pos + k], self
            self.handles.append((pid, r))
            pos += k
        # whether the layout packs the flat bucket as it is (no gaps): then the
        # bucket's buffer and the packed vectors coincide
        self.dense = all(off == p for (_, off, _), p in zip(layout, _starts(layout)))

    def valid(self, state) -> bool:
        hs = state._handles
        return all(hs.get(("r", pid)) is r and r.owner is self for pid, r in self.handles)


def _starts(layout) -> List[int]:
    out, pos = [], 0
    for _, _, k in layout:
        out.append(pos)
        pos += k
    return out


def _buffers(state, layout, dtype) -> _Buffers:
    cache: Dict[Tuple, _Buffers] = state._cast_buffers
    key = (tuple(layout), dtype)
    b = cache.get(key)
    if b is not None and b.valid(state):
        return b
    pids = {pid for pid, _, _ in layout}
    for k in [k for k in cache if pids & {pid for pid, _, _ in k[0]}]:
        del cache[k]  # DDP's rebuilt buckets: the old layouts go
    b = cache[key] = _Buffers(state, layout, dtype)
    return b


_local = threading.local()


def _scratch(name: str, n: int) -> torch.Tensor:
    """A float32 work tensor of n elements, kept per thread between calls."""
    t = getattr(_local, name, None)
    if t is None or t.numel() < n:
        t = torch.empty(max(n, 1), dtype=torch.float32)
        setattr(_local, name, t)
    return t[:n]


def _encode(state, b: _Buffers, x: torch.Tensor, M: int) -> int:
    """b.h = cast(y), b.e = y - b.h for y = b.e + x / M (x: float32, the bucket's
    direction, packed), in one native pass (gw_ef_cast). Returns how many y
    were NaN or Inf: they went into b.h as they are, their residuals stayed."""
    for pid, r in b.handles:  # residuals kept at another learning rate
        lr = state.lr_of(pid)
        if r.lr != lr:
            if r.lr is not None:
                r.e.mul_(r.lr / lr)
            r.lr = lr
    return ef_cast(x, b.e, b.h, 1.0 / M)


def _packed(flat: torch.Tensor, b: _Buffers, layout) -> torch.Tensor:
    """The layout's elements of flat as a float32 scratch tensor (packed)."""
    n = b.e.numel()
    x = _scratch("x", n)
    if b.dense:
        x.copy_(flat[:n])
    else:
        for (_, off, k), p in zip(layout, _starts(layout)):
            x[p:p + k].copy_(flat[off:off + k])
    return x


def issue(state, buf: torch.Tensor, flat: torch.Tensor, layout) -> torch.futures.Future:
    """On the autograd thread: the bucket's all_reduce issued, a future of the
    bucket's buffer holding the average (written by the future's callback)."""
    M = state.comm.size
    b = _buffers(state, layout, DTYPES[state.codec.name])
    # y is computed in place where the direction is the bucket's float32 buffer
    # (or the hook's float32 copy of it); other dtypes go through a work tensor.
    n = b.e.numel()
    x = flat[:n] if flat.dtype == torch.float32 and b.dense else _packed(flat, b, layout)
    _encode(state, b, x, M)
    fut = state.comm.all_reduce_sum(b.h)
    h, out = b.h, buf.reshape(-1)
    if b.dense:
        return fut.then(lambda _: _cast_back(out, h, buf))
    return fut.then(lambda _: _scatter(out, h, layout, buf))


def _cast_back(out: torch.Tensor, h: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    out[:h.numel()].copy_(h)
    return buf


def _scatter(out: torch.Tensor, h: torch.Tensor, layout, buf: torch.Tensor) -> torch.Tensor:
    for (_, off, k), p in zip(layout, _starts(layout)):
        out[off:off + k].copy_(h[p:p + k])
    return buf


def exchange(state, bucket) -> None:
    """On the exchange thread: the same, synchronously, into bucket.out (zeros
    outside the layout: parameters nobody used)."""
    M, layout = state.comm.size, bucket.layout
    b = _buffers(state, layout, DTYPES[state.codec.name])
    flat, n = bucket.flat, b.e.numel()
    x = flat[:n] if flat.dtype == torch.float32 and b.dense else _packed(flat, b, layout)
    _encode(state, b, x, M)
    h = state.comm.all_reduce_sum(b.h).wait()
    if b.dense:
        bucket.out[:h.numel()].copy_(h)
    else:
        _scatter(bucket.out, h, layout, bucket.out)
