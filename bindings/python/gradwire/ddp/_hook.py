"""The communication hook: on the autograd thread it reads the bucket's
layout and queues the exchange; the state's engine thread does the rest."""


import time
from typing import List, Optional, Tuple

from .._torch import dist, torch
from ._optim import hand_back, take_over
from ._policy import Timer, drop, held_back
from ._state import GradwireState
from .modes import DIRECT, MODES

Layout = List[Tuple[int, int, int]]  # (pid, offset, numel) in the bucket's flat buffer


class Bucket:
    """What a mode's exchange reads and writes."""
    __slots__ = ("flat", "out", "layout")

    def __init__(self, flat: torch.Tensor, out: torch.Tensor, layout: Layout) -> None:
        self.flat, self.out, self.layout = flat, out, layout


def _layout(state: GradwireState, bucket: dist.GradBucket) -> Layout:
    if state.comm is None:
        raise RuntimeError("gradwire: call state.bind(model) after unpickling the hook state")
    out, off = [], 0
    for p in bucket.parameters():
        pid = state._pid.get(id(p))
        if pid is None:
            raise RuntimeError("gradwire: a bucket holds a parameter of another model; "
                               "bind the state to the DDP model")
        out.append((pid, off, p.numel()))
        off += p.numel()
    if off != bucket.buffer().numel():
        raise RuntimeError(f"gradwire: bucket buffer holds {bucket.buffer().numel()} elements, "
                           f"its parameters {off}")
    return out


# DDP checks these annotations at registration (hence no postponed annotations in this file).
def hook(state: "GradwireState", bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """The communication hook: returns at once a future of the bucket's average
    update, which the state's engine thread computes while backward goes on
    (or, in a step of plain all-reduces only, torch.distributed itself)."""
    if bucket.index() == 0:
        state.begin_step()
    buf = bucket.buffer()
    # A step whose every bucket is a plain all-reduce issues them here, in DDP's
    # order on every rank, as DDP's own hook does (no thread hand-off); any
    # other step sends every bucket through the engine, so their collectives
    # keep one order.
    phase = None
    if state.policy is not None and state.steps > state.start_step:
        # Counted from the step after DDP's first (which builds its buckets anew).
        k = state.steps - max(state.start_step, 1)
        if bucket.index() == 0:
            state.policy.begin(k)  # reprobe_steps: a new probe forgets the decision
        phase = state.policy.phase(k)
    if bucket.index() == 0:
        # Between steps the engine is idle (the last bucket waited), so every
        # rank sees the same handles here and takes the same path all step.
        state._dense_decided = phase == "decided" and _all_flushed(state)
        if state._dense_decided and state._moment and state._optimizer is not None:
            hand_back(state._moment, state._optimizer, state._pid, state.comm)
            state._handed_back = True
        elif phase == "method" and state._handed_back:  # a new probe of the method
            take_over(state._optimizer, state._pid, state._moment, buffers=True)
            state._handed_back = False
    dense_step = (state.mode == "allreduce" or state.steps <= state.start_step
                  or phase in ("warm", "dense") or state._dense_decided)
    # A mode that runs on this thread (modes.DIRECT), where nothing needs the
    # exchange thread: every bucket of the step goes this way, as DDP's own.
    direct = (not dense_step and state.mode in DIRECT and phase is None
              and not state._track_use)
    if buf.layout != torch.strided:
        # Sparse gradients (nn.Embedding(sparse=True)), alone in their bucket:
        # averaged by a plain all_reduce, never compressed.
        if dense_step or direct:
            return state.comm.sparse_mean(buf)
        return state.engine.submit(lambda: state.comm.sparse_mean(buf).wait())
    layout = _layout(state, bucket)
    index = bucket.index()
    mode = state.mode
    used: Optional[List[bool]] = None
    if mode != "allreduce":
        # Zero-element parameters carry nothing: no handle, no frame.
        layout = [x for x in layout if x[2]]
        if state._track_use:
            # This rank's marks, read here: the engine thread runs while backward
            # goes on marking the parameters of later buckets.
            used = [pid in state._used for pid, _, _ in layout]
            state._used.difference_update(pid for pid, _, _ in layout)
    if dense_step:
        # Warm-up (start_step), the policy's dense probe, or method allreduce:
        # no state touched (residuals start at zero).
        return _all_reduce_now(state, buf, layout, phase, index)
    if direct:
        with state.engine.clock():
            flat = _directions(state, buf.reshape(-1), layout, index)
            return DIRECT[mode](state, buf, flat, layout)
    fut = state.engine.submit(lambda: _timed(state, buf, layout, mode, used, phase, index))
    if bucket.is_last():
        # Right after the last bucket's hook DDP issues collectives of its own
        # on the same group from this thread (find_unused_parameters' all_reduce
        # of the used-parameter map): ours must all be issued first, or ranks
        # could order them differently. Nothing is left to overlap with here.
        fut.wait()
    return fut


def _all_flushed(state: GradwireState) -> bool:
    """never_slower decided every bucket dense and each has handed over its
    residuals (at its first dense step, through the engine): what is left is
    DDP's own all-reduce."""
    policy = state.policy
    return policy.all_dense and not state._handles and not state._blobs


def _all_reduce_now(state: GradwireState, buf: torch.Tensor, layout: Layout,
                    phase: Optional[str], index: int) -> torch.futures.Future:
    flat = _directions(state, buf.reshape(-1), layout, index)
    issued = time.perf_counter()
    # Divided first, as DDP's own all-reduce does (no overflow in float16).
    fut = state.comm.all_reduce_sum(flat.div_(state.comm.size))
    if phase == "dense":
        key = tuple(pid for pid, _, _ in layout)
        fut = fut.then(lambda f: _recorded(state, key, issued, f.value()))
    if flat.dtype != buf.dtype:
        fut = fut.then(lambda f: f.value().to(buf.dtype))
    return fut


def _recorded(state: GradwireState, key: Tuple[int, ...], issued: float,
              out: torch.Tensor) -> torch.Tensor:
    """A dense bucket's own time: from its issue, or from the end of the
    all-reduce before it that gloo was still running, to its end (gloo
    completes them in order, and runs this callback as each does)."""
    done = time.perf_counter()
    policy = state.policy
    policy.record("dense", key, done - max(issued, policy.last_done))
    policy.last_done = done
    return out


def _timed(state: GradwireState, buf: torch.Tensor, layout: Layout, mode: str,
           used: Optional[List[bool]], phase: Optional[str], index: int) -> torch.Tensor:
    """_exchange under policy='never_slower' (_policy.py): its probe phases
    timed, then each bucket the faster way."""
    if phase is None:
        return _exchange(state, buf, layout, mode, used, index)
    policy, key = state.policy, tuple(pid for pid, _, _ in layout)
    if phase == "decided":
        if policy.dense is None:
            policy.decide(state.comm)
        if key not in policy.dense:
            return _exchange(state, buf, layout, mode, used, index)
        return _exchange(state, buf, layout, "allreduce", used, index, flush=True)
    timer = Timer()  # phase "method": the dense phases go by _all_reduce_now
    out = _exchange(state, buf, layout, mode, used, index)
    policy.record(phase, key, timer.seconds())
    return out


def _exchange(state: GradwireState, buf: torch.Tensor, layout: Layout, mode: str,
              used: Optional[List[bool]], index: int, flush: bool = False) -> torch.Tensor:
    flat = _directions(state, buf.reshape(-1), layout, index)
    if flush:
        flat = _hand_over(state, flat, layout)
    if mode == "allreduce":
        b = Bucket(flat, None, layout)
        MODES[mode](state, b)  # b.out: the average in flat's dtype
        return b.out if b.out.dtype == buf.dtype else b.out.to(buf.dtype)
    out = _output(state, buf, flat, index)
    if used is not None:
        # Only parameters some rank used (DDP drops the others' updates: their
        # residuals keep the mass). The same layout on every rank afterwards.
        flags = state.comm.all_reduce_sum(torch.tensor(used, dtype=torch.int32)).wait()
        layout = [x for x, f in zip(layout, flags.tolist()) if f]
    if layout:  # the same on every rank: DDP's buckets agree
        if flat.dtype == torch.float64:
            flat = flat.to(torch.float32)
        MODES[mode](state, Bucket(flat, out, layout))
    return out if buf.dtype == torch.float32 else out.to(buf.dtype)


def _output(state: GradwireState, buf: torch.Tensor, flat: torch.Tensor,
            index: int) -> torch.Tensor:
    """Zeros for the bucket's average (float32): the bucket's own buffer, as
    DDP's all-reduce hook returns it, where the exchange reads the gradient
    from elsewhere (the momentum directions); else a buffer kept for it."""
    if buf.dtype == torch.float32 and buf.is_contiguous() \
            and flat.untyped_storage().data_ptr() != buf.untyped_storage().data_ptr():
        out = buf.view(-1)
    else:
        out = state.scratch(("out", index), buf.numel())
    return out.zero_()


def _directions(state: GradwireState, flat: torch.Tensor, layout: Layout,
                index: int) -> torch.Tensor:
    """The gradient, or with the optimizer's momentum taken over, each parameter's
    momentum direction (float32, in a buffer kept for the bucket)."""
    moment = state._moment
    if not moment or not any(pid in moment.rule for pid, _, _ in layout):
        return flat
    out = state.scratch(("dir", index), flat.numel())
    for pid, off, n in layout:
        if n:
            g = flat[off:off + n]
            moment.apply(pid, g if g.dtype == torch.float32 else g.float(), out=out[off:off + n])
    return out


def _hand_over(state: GradwireState, flat: torch.Tensor, layout: Layout) -> torch.Tensor:
    """A bucket going dense: what its parameters' handles held back joins this
    rank's gradient (once), and the handles go."""
    pending = [x for x in layout if x[0] not in state.policy.flushed and x[2]]
    if not pending:
        return flat
    flat = flat.to(torch.float32, copy=True)
    for pid, off, n in pending:
        kept = held_back(state, pid, n)
        if kept is not None:
            flat[off:off + n] += kept
        drop(state, pid)
        state.policy.flushed.add(pid)
    return flat
