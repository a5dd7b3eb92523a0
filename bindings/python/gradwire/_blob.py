"""A state blob with other vectors (docs/wire-format.md, "State blobs"): for
re-sharding layouts gw_reshard's contiguous ranges do not describe (FSDP2's
flat buffer, where a chunk interleaves every parameter's rows). The result
is only ever loaded by a handle's loader, which checks all of it."""

from __future__ import annotations

import struct
from typing import Any, Dict, Optional

import numpy as np

from . import crc32c

_HEADER, _FIELD = 12, 12
_WIDTH = {1: 1, 2: 4, 3: 8, 4: 4, 5: 1, 6: 4}  # u8, u32, u64, f32, bytes, f32 array


def with_vectors(template: bytes, n: int, vectors: Dict[int, Optional[Any]]) -> bytes:
    """`template` (a worker, LAGS or CLT-k blob) with field 1 (its length) set
    to n and each float32 array field in `vectors` replaced by its value (n
    elements; None: leave the field out if the template has none)."""
    b = bytes(template)
    count = struct.unpack_from("<I", b, 8)[0]
    out, pos = [b[:_HEADER]], _HEADER
    for _ in range(count):
        fid, ftype, _, fcount = struct.unpack_from("<HBBQ", b, pos)
        data = b[pos + _FIELD:pos + _FIELD + fcount * _WIDTH[ftype]]
        pos += _FIELD + len(data)
        if fid == 1:
            data = struct.pack("<Q", n)
        elif ftype == 6 and vectors.get(fid) is not None:
            data = np.ascontiguousarray(vectors[fid], dtype="<f4").tobytes()
            fcount = n
        out.append(struct.pack("<HBBQ", fid, ftype, 0, fcount) + data)
    body = b"".join(out)
    return body + struct.pack("<I", crc32c(body))
