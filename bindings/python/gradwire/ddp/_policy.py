"""policy="never_slower": each bucket goes dense (DDP's own all-reduce) where
compressing it did not make its exchange faster on this link.

Rather than a model of the link and the codecs, the hook times both ways on
the job's own buckets, link and processors: after any warm-up (and DDP's
first step, after which it builds its buckets anew), `probe` steps run every
bucket as a plain all-reduce (issued as DDP's own hook does, each timed from
its issue or the end of the one before it to its end), then `probe` steps
with the method, each bucket's exchange timed on the engine thread (encode,
collectives, decode); the last step of each phase counts. At the next step the
ranks average their timings (one all_reduce, so every rank decides alike)
and each bucket keeps the faster way for the rest of the run; a bucket seen
in only one phase keeps the method. If the method's timings summed over the
step are not below the dense ones, every bucket goes dense: per-bucket
timings do not add up when both ways share the processors and the link.

With reprobe_steps=R the decision is not for good: R steps after it the
probe starts again (dense, method, a new decision), so a link that changes
speed is followed within 2 probe + R steps. Buckets on the method keep their
residuals through the dense probe (nothing is handed over there); buckets
that went dense start the method probe from zero residuals, as at the first.

A bucket that goes dense hands over what it held back: at its first dense
step each rank adds its error-feedback residuals (in gradient units, the
server's slice residual counted M times since the server averages, a cast
residual M times since it is kept in units of gradient / M) to its
gradient before the all-reduce, and the handles are dropped, so no mass is
lost and none is left behind. The optimizer's momentum, when taken over,
goes on running in the hook for dense buckets, until every bucket is dense
and flushed: then it goes back to the optimizer (_optim.hand_back).
"""

from __future__ import annotations

import time
from typing import Dict, Optional, Set, Tuple

from .._torch import torch
from .. import shard_range

Key = Tuple[int, ...]  # a bucket: its parameters' ids


class NeverSlower:
    every, cycle = 0, 0  # what a state pickled before reprobe_steps holds

    def __init__(self, probe: int = 2, every: int = 0) -> None:
        if probe < 1:
            raise ValueError(f"never_slower needs probe >= 1 steps, not {probe}")
        if every < 0:
            raise ValueError(f"never_slower needs reprobe_steps >= 0 (0: decide once), "
                             f"not {every}")
        self.probe = probe
        self.every = every                      # steps a decision holds; 0: for good
        self.cycle: Optional[int] = 0           # probes begun after the first
        self.dense_time: Dict[Key, float] = {}
        self.method_time: Dict[Key, float] = {}
        self.dense: Optional[Set[Key]] = None   # decided buckets, None until then
        self.flushed: Set[int] = set()          # parameters whose residuals went out
        self.last_done = 0.0                    # when the last timed all-reduce ended
        self.all_dense = False                  # decided: every bucket dense

    def phase(self, k: int) -> str:
        """Step k (counted from 1 after the warm-up, or after DDP's first step):
        'warm' (dense, not timed), 'dense', 'method' or 'decided'."""
        if k <= 0:
            return "warm"
        if self.every:
            if self.cycle is None:  # resumed under another reprobe_steps
                return "decided"
            k = (k - 1) % (2 * self.probe + self.every) + 1
        if k <= self.probe:
            return "dense"
        if k <= 2 * self.probe:
            return "method"
        return "decided"

    def begin(self, k: int) -> bool:
        """At bucket 0 of step k (the engine idle): whether a new probe begins,
        which forgets the last decision and its timings."""
        if not self.every or k <= 0:
            return False
        length = 2 * self.probe + self.every
        if self.cycle is None and (k - 1) % length:
            return False  # resumed under another reprobe_steps: wait for a probe's start
        cycle = (k - 1) // length
        if cycle == self.cycle:
            return False
        self.cycle = cycle
        self.dense, self.all_dense, self.flushed = None, False, set()
        self.dense_time, self.method_time = {}, {}
        return True

    def record(self, phase: str, key: Key, seconds: float) -> None:
        (self.dense_time if phase == "dense" else self.method_time)[key] = seconds

    def decide(self, comm) -> None:
        """On the engine thread, at the first bucket of the first decided step:
        the group's mean timings, the same decision on every rank."""
        keys = sorted(set(self.dense_time) & set(self.method_time))
        times = torch.tensor([t for k in keys for t in (self.dense_time[k], self.method_time[k])],
                             dtype=torch.float64)
        times = comm.all_reduce_sum(times).wait()
        self.dense = {k for i, k in enumerate(keys) if times[2 * i] <= times[2 * i + 1]}
        # Per-bucket timings do not add up when both ways share the processors
        # and the link: if the method did not make the whole step's exchange
        # faster, every bucket goes dense (and, once flushed, by the hook's
        # own all-reduces, as DDP's).
        if keys and float(times[0::2].sum()) <= float(times[1::2].sum()):
            self.dense = set(keys)
        self.all_dense = bool(keys) and self.dense == set(self.dense_time) | set(self.method_time)

    def state_dict(self) -> dict:
        return {"probe": self.probe, "every": self.every, "cycle": self.cycle,
                "dense": None if self.dense is None else sorted(self.dense),
                "flushed": sorted(self.flushed), "dense_time": dict(self.dense_time),
                "method_time": dict(self.method_time), "all_dense": self.all_dense}

    def load_state_dict(self, sd: dict) -> None:
        self.probe = sd["probe"]
        # reprobe_steps is the resuming state's own; under another than the
        # saved one the decision holds until the next probe due under it.
        self.cycle = sd.get("cycle", 0) if sd.get("every", 0) == self.every else None
        self.dense = None if sd["dense"] is None else {tuple(k) for k in sd["dense"]}
        self.all_dense = sd.get("all_dense", False)
        self.flushed = set(sd["flushed"])
        self.dense_time, self.method_time = dict(sd["dense_time"]), dict(sd["method_time"])


class Timer:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.t0


def held_back(state, pid: int, n: int) -> Optional[torch.Tensor]:
    """What this rank holds back for parameter pid, in the units of what it
    sends (a gradient), or None if it has no handle for it."""
    h, M, r = state._handles, state.comm.size, state.comm.rank
    for key in [key for key in state._blobs if key[1] == pid]:  # restored, not yet made
        if key[0] == "w":
            state.worker(pid, key[2], len(shard_range(n, M, key[2])) if state.mode == "server"
                         else n)
        elif key[0] == "s":
            state.server(pid, n, shard_range(n, M, r))
        elif key[0] == "l":
            state.lags_layer(pid, n)
        elif key[0] == "r":
            state.cast_residual(pid, n)
        else:
            state.cltk(pid, n)
    k = torch.zeros(n, dtype=torch.float32)
    found = False
    for j in range(M):
        w = h.get(("w", pid, j))
        if w is not None:
            s = shard_range(n, M, j) if state.mode == "server" else range(n)
            k[s.start:s.stop] += torch.from_numpy(w.residual())
            found = True
    if ("s", pid) in h:  # the server averages: its residual counts M times in a sum
        s = shard_range(n, M, r)
        k[s.start:s.stop] += M * torch.from_numpy(h[("s", pid)].residual())
        found = True
    lr = state.lr_of(pid)
    if ("l", pid) in h:  # LAGS keeps lr-scaled values (acc = eps + lr g)
        k += torch.from_numpy(h[("l", pid)].residual()) / lr
        found = True
    if ("c", pid) in h:  # CLT-k's memory is lr-scaled too
        k += torch.from_numpy(h[("c", pid)].memory()) / lr
        found = True
    if ("r", pid) in h:  # a cast residual is in units of what is sent: gradient / M
        k += M * torch.from_numpy(h[("r", pid)].residual())
        found = True
    return k if found else None


def drop(state, pid: int) -> None:
    """Close and forget every handle of parameter pid (its residuals went out)."""
    for key in [k for k in state._handles if k[1] == pid]:
        state._handles.pop(key).close()
    for key in [k for k in state._blobs if k[1] == pid]:
        del state._blobs[key]
    state._cast_buffers.clear()  # mode "cast": bucket buffers holding views of them
