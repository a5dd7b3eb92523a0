"""Checkpoint files that are whole or refused: a write goes to a temporary
file in the same directory, is flushed to disk and renamed over the target
(atomic on POSIX), and the file carries its length and CRC32C, so a file cut
short mid-write, or damaged later, never loads as valid.

    magic b"GWCKPT1\\n" | u64 payload length | payload (torch.save) | u32 CRC32C of all before

With torch.distributed.checkpoint (DCP) instead: dcp_entry puts each rank's
state under a key of its own, dcp_states reads them all back.
"""

from __future__ import annotations

import io
import os
import struct
from typing import Any, Dict, List

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


def dcp_entry(state_dict: Any, rank: int, key: str = "gradwire") -> Dict[str, Any]:
    """One rank's gradwire state as an entry of a torch.distributed.checkpoint
    state dict: a uint8 tensor under a key of this rank's own ("gradwire.3"),
    since DCP keeps a single copy of an entry every rank has under one key."""
    buf = io.BytesIO()
    torch.save(state_dict, buf)
    return {f"{key}.{rank}": torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)}


def dcp_states(checkpoint_id: Any, key: str = "gradwire") -> List[Any]:
    """Every rank's gradwire state saved with dcp_entry into a DCP checkpoint, in
    rank order: what load_state_dict takes to re-shard for this job's size."""
    import torch.distributed.checkpoint as dcp
    meta = dcp.FileSystemReader(checkpoint_id).read_metadata().state_dict_metadata
    names = sorted((int(k.rsplit(".", 1)[1]), k) for k in meta
                   if k.startswith(key + ".") and k.rsplit(".", 1)[1].isdigit())
    if not names or [r for r, _ in names] != list(range(len(names))):
        raise ValueError(f"{checkpoint_id}: no {key}.0 ... {key}.<M-1> entries, found "
                         f"{[k for _, k in names]}")
    entries = {k: torch.empty(meta[k].size, dtype=torch.uint8) for _, k in names}
    dcp.load(entries, checkpoint_id=checkpoint_id)
    return [torch.load(io.BytesIO(entries[k].numpy().tobytes()), weights_only=False)
            for _, k in names]
