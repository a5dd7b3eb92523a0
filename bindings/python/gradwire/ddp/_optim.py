"""The optimizer's momentum, taken into the hook.

Error feedback delays what a compressor leaves out by a few steps. An
optimizer's momentum applied after the exchange multiplies every delayed
piece by 1/(1 - mu) and keeps re-applying it while the residual still holds
it: with SGD(momentum=0.9) the methods that hold mass back train far worse
than without a hook (the DDP hook issue measured 44.7% against 85.9% for
`ef`). The papers put momentum before compression (dist-EF-blockSGDM's
workers, DGC's momentum correction): each rank keeps the momentum of its own
gradient and compresses that; after a sparse exchange (top-k family, random-k,
CLT-k, LAGS) the momentum is cleared where this rank's value was sent (DGC's
momentum factor masking). `GradwireState(ddp, method, optimizer=opt)`
does this for torch.optim.SGD: it sets the optimizer's momentum to 0 and runs
the same arithmetic (momentum, dampening, nesterov, the first step's buffer
being the gradient itself) on each rank's gradient before compression. The
optimizer keeps the learning rate, weight decay (applied to the update, no
longer through momentum) and the step; the hook follows its learning rate
for the residuals' lr_prev / lr rescaling.

Without `optimizer=`, the first step of an optimizer with momentum over the
model's parameters raises, saying exactly that (the hook cannot see the
optimizer when the state is made). Adam's moments cannot move into the hook:
an Adam-family optimizer is refused with a method that keeps residuals, at
construction when given, at its first step otherwise.
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np

from .._torch import torch
from .. import decode
from torch.optim.optimizer import register_optimizer_step_pre_hook


class Momentum:
    """Per-parameter momentum buffers (float32, this rank's own)."""

    masking = True  # DGC's masking after sparse exchanges (False: mask* do nothing)

    def __init__(self) -> None:
        self.rule: Dict[int, tuple] = {}     # pid -> (mu, dampening, nesterov)
        self.bufs: Dict[int, torch.Tensor] = {}
        self._scratch = torch.empty(0, dtype=torch.float32)  # decoded frames, for masking

    def __bool__(self) -> bool:
        return bool(self.rule)

    def apply(self, pid: int, g: torch.Tensor, out: torch.Tensor) -> None:
        """torch.optim.SGD's momentum on g (float32): the direction to compress,
        into out."""
        rule = self.rule.get(pid)
        if rule is None:
            out.copy_(g)
            return
        mu, damp, nesterov = rule
        buf = self.bufs.get(pid)
        if buf is None:
            buf = self.bufs[pid] = g.detach().clone()
        else:
            buf.mul_(mu).add_(g, alpha=1.0 - damp)
        if nesterov:
            torch.add(g, buf, alpha=mu, out=out)
        else:
            out.copy_(buf)

    def masks(self, pid: int) -> bool:
        return pid in self.bufs

    def mask(self, pid: int, start: int, sent: torch.Tensor) -> None:
        """DGC's momentum factor masking: where a sparse exchange sent this
        rank's accumulated value (sent[i] != 0, positions from `start`), the
        momentum starts again from zero, so the mass just sent is not pushed
        again by the momentum that built it up."""
        buf = self.bufs.get(pid)
        if buf is not None and self.masking:
            buf[start:start + sent.numel()].masked_fill_(sent != 0, 0.0)

    def mask_frame(self, pid: int, start: int, frame: torch.Tensor, n: int) -> None:
        """mask() at the positions a sparse frame of n elements holds."""
        if pid not in self.bufs or not self.masking:
            return
        if self._scratch.numel() < n:
            self._scratch = torch.empty(n, dtype=torch.float32)
        decode(frame, out=self._scratch[:n])
        self.mask(pid, start, self._scratch[:n])

    def mask_at(self, pid: int, positions: Any) -> None:
        buf = self.bufs.get(pid)
        if buf is not None and self.masking:
            buf[torch.from_numpy(np.asarray(positions, dtype=np.int64))] = 0.0

    def state_dict(self) -> Dict[int, torch.Tensor]:
        return {pid: b.clone() for pid, b in self.bufs.items()}

    def load_state_dict(self, bufs: Dict[int, torch.Tensor]) -> None:
        self.bufs = {int(pid): b.clone().to(torch.float32) for pid, b in bufs.items()}


def take_over(optimizer: torch.optim.Optimizer, pid_of: Dict[int, int],
              momentum: Momentum, move: bool = True, buffers: bool = False) -> Dict[int, int]:
    """Move `optimizer`'s SGD momentum into `momentum` (unless not `move`:
    full precision, where momentum after the exchange is the same thing);
    returns pid -> param group (the hook reads each group's learning rate
    every step). buffers: its momentum buffers move too (after hand_back,
    when never_slower probes the method again: they followed exact averages,
    so every rank's are the same)."""
    group_of: Dict[int, int] = {}
    for gi, group in enumerate(optimizer.param_groups):
        mu = float(group.get("momentum", 0.0) or 0.0) if move else 0.0
        for p in group["params"]:
            pid = pid_of.get(id(p))
            if pid is None:
                continue
            group_of[pid] = gi
            if mu > 0 and isinstance(optimizer, torch.optim.SGD):
                momentum.rule[pid] = (mu, float(group.get("dampening", 0.0)),
                                      bool(group.get("nesterov", False)))
                buf = optimizer.state.get(p, {}).pop("momentum_buffer", None) if buffers else None
                if buf is not None:
                    momentum.bufs[pid] = buf.detach().reshape(-1).to(torch.float32).clone()
        if mu > 0 and isinstance(optimizer, torch.optim.SGD):
            group["momentum"] = 0.0
            group["nesterov"] = False
    if not group_of:
        raise ValueError("gradwire: the optimizer given holds none of the model's parameters")
    return group_of


def hand_back(momentum: Momentum, optimizer: torch.optim.Optimizer, pid_of: Dict[int, int],
              comm: Any) -> None:
    """Undo take_over once every bucket goes dense for good (never_slower):
    after an exact average the optimizer's momentum is the same arithmetic, and
    cheaper there. Each buffer becomes the ranks' mean (one all_reduce, the
    same on every rank), so the averaged update keeps its momentum."""
    if not momentum.rule:
        return
    pids = sorted(momentum.bufs)
    mean: Dict[int, torch.Tensor] = {}
    if pids:
        flat = torch.cat([momentum.bufs[p].reshape(-1).to(torch.float32) for p in pids])
        flat = comm.all_reduce_sum(flat).wait() / comm.size
        pos = 0
        for p in pids:
            n = momentum.bufs[p].numel()
            mean[p] = flat[pos:pos + n]
            pos += n
    for group in optimizer.param_groups:
        for param in group["params"]:
            pid = pid_of.get(id(param))
            if pid is None or pid not in momentum.rule:
                continue
            group["momentum"], group["dampening"], group["nesterov"] = momentum.rule[pid]
            if pid in mean:
                optimizer.state[param]["momentum_buffer"] = (
                    mean[pid].reshape(param.shape).to(param.dtype).clone())
    momentum.rule.clear()
    momentum.bufs.clear()


# Optimizers whose moments cannot move into the hook (they normalise per
# coordinate after the exchange): measured with Adam in docs/results.md.
ADAM_FAMILY = (torch.optim.Adam, torch.optim.AdamW, torch.optim.NAdam, torch.optim.RAdam,
               torch.optim.Adamax)


def _sgd_momenta(optimizer: torch.optim.Optimizer) -> List[Tuple[float, bool]]:
    """(momentum, nesterov) of each group of an SGD; [] for other optimizers."""
    if not isinstance(optimizer, torch.optim.SGD):
        return []
    return [(float(g.get("momentum", 0.0) or 0.0), bool(g.get("nesterov", False)))
            for g in optimizer.param_groups]


def _momentum_of(optimizer: torch.optim.Optimizer) -> Optional[str]:
    """What in `optimizer` runs after the exchange and breaks error feedback."""
    mus = [mu for mu, _ in _sgd_momenta(optimizer)]
    if any(m > 0 for m in mus):
        return f"torch.optim.SGD(momentum={max(mus)})"
    if isinstance(optimizer, ADAM_FAMILY):
        return f"torch.optim.{type(optimizer).__name__}"
    return None


def heavy_ball(optimizer: torch.optim.Optimizer) -> bool:
    """Whether `optimizer` is an SGD with momentum but not Nesterov's in some group."""
    return any(mu > 0 and not nesterov for mu, nesterov in _sgd_momenta(optimizer))


def refusal(method: str, optimizer: torch.optim.Optimizer) -> Optional[str]:
    """Why `optimizer` after the exchange does not go with `method`, and what
    to do instead; None if it does."""
    what = _momentum_of(optimizer)
    if what is None:
        return None
    if isinstance(optimizer, ADAM_FAMILY):
        return (f"gradwire: method {method!r} keeps error-feedback residuals, and {what}'s "
                "moments after the exchange train it badly (a Fashion-MNIST CNN after 2 "
                "epochs: 6.6 to 12 points below plain DDP, docs/results.md), and they cannot "
                "move into the hook. Use torch.optim.SGD with momentum given to the state "
                "(GradwireState(ddp_model, method=..., optimizer=opt)), or method='fp16' or "
                "'allreduce' with this optimizer. check_optimizer=False runs it anyway.")
    return (f"gradwire: method {method!r} keeps error-feedback residuals, and {what} applied "
            "after the exchange trains it badly. Give the optimizer to the state: "
            f"GradwireState(ddp_model, method={method!r}, optimizer=opt) (or "
            "state.bind(ddp_model, optimizer=opt)) runs its momentum on each rank's gradient "
            "before compression and sets the optimizer's to 0. check_optimizer=False skips "
            "this check.")


class Guard:
    """A global optimizer step pre-hook refusing, at the first step, an
    optimizer with momentum over a state's parameters that was not given to
    the state (one guard per state; removed with it)."""

    def __init__(self, state: Any, params: List[torch.nn.Parameter]) -> None:
        self.ids: Set[int] = {id(p) for p in params}
        ref = weakref.ref(state)
        self.handle = register_optimizer_step_pre_hook(
            lambda opt, args, kwargs: _check(ref, self.ids, opt))

    def remove(self) -> None:
        self.handle.remove()


def _check(ref, ids: Set[int], optimizer: torch.optim.Optimizer) -> None:
    state = ref()
    if state is None or optimizer is state._optimizer or not state.check_optimizer:
        return
    if not any(id(p) in ids for g in optimizer.param_groups for p in g["params"]):
        return
    # A heavy-ball SGD for LAGS or CLT-k is refused as it would be if given.
    why = state._refusal(optimizer) or (
        refusal(state.method, optimizer) if state.holds_mass_back() else None)
    if why is not None:
        raise RuntimeError(why)
