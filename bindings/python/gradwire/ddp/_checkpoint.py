"""Checkpoint files that are whole or refused: a write goes to a temporary
file in the same directory, is flushed to disk and renamed over the target
(atomic on POSIX), and the file carries its length and CRC32C, so a file cut
short mid-write, or damaged later, never loads as valid.

    magic b"GWCKPT1\\n" | u64 payload length | payload (torch.save) | u32 CRC32C of all before
"""

from __future__ import annotations

import io
import os
import struct
from typing import Any

from .._torch import torch
from .. import crc32c

_MAGIC = b"GWCKPT1\n"


def save_checkpoint(path: str, obj: Any) -> None:
    """torch.save(obj) to `path`, atomically and checksummed."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    body = _MAGIC + struct.pack("<Q", buf.getbuffer().nbytes) + buf.getvalue()
    data = body + struct.pack("<I", crc32c(body))
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(directory, os.O_RDONLY)  # the rename itself reaches the disk
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_checkpoint(path: str) -> Any:
    """What save_checkpoint wrote; ValueError if the file is not whole."""
    with open(path, "rb") as f:
        data = f.read()
    head = len(_MAGIC) + 8
    if len(data) < head + 4 or not data.startswith(_MAGIC):
        raise ValueError(f"{path}: not a gradwire checkpoint, or cut short")
    (n,) = struct.unpack_from("<Q", data, len(_MAGIC))
    if len(data) != head + n + 4:
        raise ValueError(f"{path}: {len(data)} bytes, the header says {head + n + 4}: cut short "
                         "(a write that did not finish) or extended")
    (crc,) = struct.unpack_from("<I", data, head + n)
    if crc32c(data[:head + n]) != crc:
        raise ValueError(f"{path}: checksum mismatch: the file is damaged")
    return torch.load(io.BytesIO(data[head:head + n]), weights_only=False)
