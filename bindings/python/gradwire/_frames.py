"""Frames in the hook's send and receive tensors: written by the handles
straight into a uint8 tensor, split and decoded from one without copies."""

from __future__ import annotations

from typing import Callable, List

from ._torch import torch
from . import CodecSpec, frame_size
from . import gwnative as _n

# Codecs whose frames always fill their bound (a frame's size follows from
# the codec and the element count): a receiver knows how many bytes each rank
# sends, so no sizes are exchanged first. The sparse codecs' frames vary (the
# zstd stage, data-dependent counts): they share sizes first, since padding
# to the bound costs more on the wire than a round trip of M integers.
FIXED_SIZE = frozenset({"identity", "fp16", "bf16", "sign", "scaled_sign", "randomk", "quant",
                        "qsgd", "terngrad"})


# Codecs that send a subset of the elements (the rest stays in the residual).
SPARSE = frozenset({"topk", "chunk_topk", "sampled_topk", "threshold", "randomk", "index",
                    "sparse_quant"})


def fixed_size(spec: CodecSpec) -> bool:
    return spec.name in FIXED_SIZE


def sparse(spec: CodecSpec) -> bool:
    return spec.name in SPARSE


class SendBuffer:
    """Frames written back to back into one uint8 tensor of `capacity` bytes."""

    def __init__(self, capacity: int) -> None:
        self.data = torch.empty(max(capacity, 1), dtype=torch.uint8)
        self.pos = 0

    def write(self, bound: int, make: Callable[[torch.Tensor], int]) -> int:
        """make(out) writes one frame of at most `bound` bytes into out and
        returns its size."""
        size = make(self.data[self.pos:self.pos + bound])
        self.pos += size
        return size


def split(buf: torch.Tensor, count: int, what: str = "message") -> List[torch.Tensor]:
    """The first `count` frames laid back to back in `buf` (views). Bytes
    after them are padding."""
    frames, pos = [], 0
    end = buf.numel()
    for _ in range(count):
        if end - pos < _n.GW_FRAME_HEADER_SIZE:
            raise RuntimeError(f"gradwire: {what} ends inside a frame header")
        size = frame_size(buf[pos:pos + _n.GW_FRAME_HEADER_SIZE])
        if size > end - pos:
            raise RuntimeError(f"gradwire: {what} holds a truncated frame")
        frames.append(buf[pos:pos + size])
        pos += size
    return frames


def regions(buf: torch.Tensor, sizes: List[int]) -> List[torch.Tensor]:
    """buf cut into consecutive pieces of the given sizes."""
    out, pos = [], 0
    for s in sizes:
        out.append(buf[pos:pos + s])
        pos += s
    return out
