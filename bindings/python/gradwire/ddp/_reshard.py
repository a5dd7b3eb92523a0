"""Re-sharding a DDP hook's state saved on M ranks for M' ranks
(docs/algorithms.md s.9, docs/distributed.md "Checkpoints and world size").

Each handle's blobs go through gw_reshard (gradwire.reshard): worker
residuals, LAGS residuals and CLT-k memories become the mean over the M
ranks, server slices are cut and joined at gw_shard_range of M'. Mode
"cast" keeps its residuals in units of what a rank sends (gradient / M):
each new rank's is the old ranks' sum / M' (cast.reshard_blobs). In server
mode a rank holds one worker per slice j of M: they are the pieces of its
whole residual, at offsets shard_range(n, M, j).start. The hook's own
momentum (an optimizer's, moved in) becomes the mean over the ranks too: the
update is linear in it, so the averaged update keeps its momentum exactly.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Sequence, Tuple

from .._torch import torch
from .. import reshard as reshard_blobs, shard_range
from .modes import cast


def _length(blob: bytes) -> int:
    """Field 1 of a worker, server, LAGS or CLT-k blob: its n (a server's total).
    docs/wire-format.md: 12-byte header, 12-byte field header, then the u64."""
    return struct.unpack_from("<Q", blob, 24)[0]


def _ordered(states: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    if not states:
        raise ValueError("re-sharding needs the saved states of every rank; got none")
    M = len(states)
    by_rank: Dict[int, Dict[str, Any]] = {}
    for sd in states:
        if not isinstance(sd, dict) or sd.get("format") != 1:
            raise ValueError("not a gradwire DDP hook state (format 1)")
        size, rank = tuple(sd["world"])
        if size != M:
            raise ValueError(f"got {M} states, but one was saved by rank {rank} of {size}: "
                             f"give the states of all {size} ranks")
        if rank in by_rank:
            raise ValueError(f"two states of rank {rank}")
        by_rank[rank] = sd
    first = by_rank[0]
    for sd in by_rank.values():
        for k in ("method", "mode", "codec", "steps"):
            if sd[k] != first[k]:
                raise ValueError(f"the ranks' states differ in {k}: {first[k]!r} and {sd[k]!r}")
    return [by_rank[r] for r in range(M)]


def reshard(states: Sequence[Dict[str, Any]], world: Tuple[int, int]) -> Dict[str, Any]:
    """The state of rank world[1] of world[0] from `states`, the state_dict()s
    of all M ranks of a job (any order). At M' = M it is that rank's own."""
    old = _ordered(states)
    M = len(old)
    M2, rank = world
    if M2 == M:
        return dict(old[rank])
    mode = old[0]["mode"]
    keys = sorted({k for sd in old for k in sd["handles"]})
    for k in keys:
        missing = [r for r, sd in enumerate(old) if k not in sd["handles"]]
        if missing and mode != "server":  # in server mode empty slices have no handle
            raise ValueError(f"handle {k} is missing from the states of ranks {missing}")
    handles: Dict[Tuple, bytes] = {}
    pids = sorted({k[1] for k in keys})
    for pid in pids:
        mine = [k for k in keys if k[1] == pid]
        if mode == "server":
            pieces = [(r, k[2], sd["handles"][k]) for r, sd in enumerate(old)
                      for k in mine if k[0] == "w" and k in sd["handles"]]
            n = sum(_length(b) for r, _, b in pieces if r == 0)
            for j in range(M2):
                s = shard_range(n, M2, j)
                if not len(s):
                    continue
                # Only the old slices overlapping the new one (each call checks its parts).
                near = [(r, shard_range(n, M, i), b) for r, i, b in pieces]
                near = [(r, o, b) for r, o, b in near if o.start < s.stop and s.start < o.stop]
                handles[("w", pid, j)] = reshard_blobs(
                    [b for _, _, b in near], [r for r, _, _ in near],
                    [o.start for _, o, _ in near], workers_in=M, workers_out=M2, rank=rank,
                    offset=s.start, length=len(s))
            if ("s", pid) in mine:
                s = shard_range(n, M2, rank)
                if len(s):  # old rank i served slice i: only those overlapping this one
                    sb = [sd["handles"][("s", pid)] for i, sd in enumerate(old)
                          if ("s", pid) in sd["handles"] and shard_range(n, M, i).start < s.stop
                          and s.start < shard_range(n, M, i).stop]
                    handles[("s", pid)] = reshard_blobs(
                        sb, [0] * len(sb), workers_in=M, workers_out=M2, rank=rank,
                        offset=s.start, length=len(s))
            continue
        for k in mine:  # whole-tensor handles: worker (pid, 0), LAGS layer, CLT-k
            blobs = [sd["handles"][k] for sd in old]
            if k[0] == "r":  # mode "cast": residuals in gradient / M, summed / M'
                handles[k] = cast.reshard_blobs(blobs, M2)
                continue
            handles[k] = reshard_blobs(blobs, range(M), workers_in=M, workers_out=M2,
                                       rank=rank, length=_length(blobs[0]))
    momentum: Dict[int, torch.Tensor] = {}
    for pid in sorted({p for sd in old for p in sd.get("momentum", {})}):
        bufs = [sd.get("momentum", {}).get(pid) for sd in old]
        if any(b is None for b in bufs):
            raise ValueError(f"momentum of parameter {pid} is missing from some ranks' states")
        momentum[pid] = torch.stack([b.to(torch.float64) for b in bufs]).mean(0).float()
    out = dict(old[0])
    out.update(world=(M2, rank), handles=handles, momentum=momentum)
    return out
