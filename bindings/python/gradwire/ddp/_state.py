"""GradwireState: one model's per-parameter gradwire state on one rank, its
options, checkpoints and binding to a DDP model, process group and optimizer."""

from __future__ import annotations

import inspect
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .._torch import dist, torch  # first: says how to install torch if it is missing
from .. import Cltk, CodecSpec, LagsLayer, Server, Worker
from .._collectives import Collectives
from ._engine import Engine
from ._optim import (ADAM_FAMILY, Guard, Momentum, hand_back, heavy_ball, refusal,
                     take_over)
from ._policy import NeverSlower, held_back
from ._reshard import reshard
from .modes import HEAVY_BALL, METHODS, MODES, REFUSED
from .modes.cast import DTYPES as CAST_CODECS, Residual

# Parameter dtypes the compressed modes take (float64 is compressed in float32).
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# Codecs that lose (next to) nothing: an optimizer's momentum after them is harmless.
_NEAR_LOSSLESS = frozenset({"identity", "fp16", "bf16"})
# Modes that leave an optimizer's momentum where it is: after an exact or
# near-exact average it is the same arithmetic there.
_MOMENTUM_STAYS = ("allreduce", "cast")


class GradwireState:
    """Per-parameter gradwire state for the DDP hook of one model on one rank."""

    def __init__(self, model: torch.nn.Module, method: str = "ef", *,
                 mode: Optional[str] = None, codec: Union[str, CodecSpec, None] = None,
                 process_group: Optional[dist.ProcessGroup] = None,
                 optimizer: Optional[torch.optim.Optimizer] = None, lr: float = 1.0,
                 momentum: str = "none", mu: float = 0.0, seed: int = 0, beta: float = 1.0,
                 warmup_steps: int = 0, start_step: int = 0, policy: Optional[str] = None,
                 probe_steps: int = 2, reprobe_steps: int = 0, check_optimizer: bool = True,
                 momentum_masking: Optional[bool] = None) -> None:
        preset = METHODS.get(method)
        if preset is None and mode is None:
            raise ValueError(f"unknown method {method!r}: one of {sorted(METHODS)}, or give mode=")
        if method in REFUSED and mode is None and codec is None:
            raise ValueError(f"gradwire: {REFUSED[method]}")
        preset = preset or {}
        self.mode = mode or preset["mode"]
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}: one of {tuple(MODES)}")
        if codec is None and "codec" in preset:
            name, params = preset["codec"]
            codec = CodecSpec(name, **params)
        self.codec = None if codec is None else (codec if isinstance(codec, CodecSpec)
                                                 else CodecSpec(codec))
        if self.mode != "allreduce" and self.codec is None:
            raise ValueError(f"mode {self.mode!r} needs a codec")
        if self.mode == "cast":
            if self.codec.name not in CAST_CODECS or self.codec != CodecSpec(self.codec.name):
                raise ValueError(f"mode 'cast' casts to codec 'fp16' or 'bf16' (no parameters), "
                                 f"not {self.codec}")
            if momentum != "none":
                raise ValueError("mode 'cast' has no worker momentum: give the optimizer its "
                                 "momentum (it stays there, as with torch's fp16 hook)")
        if optimizer is not None and momentum != "none":
            raise ValueError("give either optimizer= (its momentum moves into the hook) or "
                             "momentum= (the workers' own), not both")
        self.method = method
        self.lr, self.momentum, self.mu, self.seed = lr, momentum, mu, seed
        self.beta, self.warmup_steps = beta, warmup_steps
        if start_step < 0:
            raise ValueError(f"start_step must be >= 0, not {start_step}")
        self.start_step = start_step  # steps 1..start_step: plain all-reduce
        self.check_optimizer = check_optimizer
        policy = policy if policy is not None else preset.get("policy")
        if policy not in (None, "never_slower"):
            raise ValueError(f"unknown policy {policy!r}: None or 'never_slower'")
        if policy is not None and self.mode == "allreduce":
            policy = None  # nothing to choose
        self.policy = None if policy is None else NeverSlower(probe_steps, reprobe_steps)
        self.steps = 0          # hook calls of bucket 0 (synchronised iterations)
        self._handles: Dict[Tuple, Any] = {}
        self._dense_decided = False  # this step: never_slower's all-dense, by the hook
        self._handed_back = False    # never_slower gave the optimizer its momentum back
        self._blobs: Dict[Tuple, bytes] = {}   # restored, loaded when a handle is made
        self._moment = Momentum()
        # DGC's momentum factor masking (_optim.py): the preset's choice unless given.
        self._moment.masking = bool(preset.get("momentum_masking", True)
                                    if momentum_masking is None else momentum_masking)
        self.process_group = process_group
        self._world: Optional[Tuple[int, int]] = None
        self._attach_none()
        self.bind(model, process_group, optimizer=optimizer)

    def _attach_none(self) -> None:
        """What a state holds only while bound (none of it pickles)."""
        self._pid: Optional[Dict[int, int]] = None
        self._numel: Dict[int, int] = {}
        self.comm: Optional[Collectives] = None
        self._use_hooks: List[Any] = []
        self._used: set = set()
        self._track_use = False
        self._optimizer: Optional[torch.optim.Optimizer] = None
        self._group_of: Dict[int, int] = {}
        self._lrs: Dict[int, float] = {}
        self._guard: Optional[Guard] = None
        self.engine = Engine()
        self._cast_buffers: Dict[Tuple, Any] = {}  # mode "cast": per bucket layout
        self._scratch: Dict[Tuple, torch.Tensor] = {}  # scratch(): per bucket and use

    @classmethod
    def from_config(cls, model: torch.nn.Module, config: Union[Dict[str, Any], str], *,
                    process_group: Optional[dist.ProcessGroup] = None,
                    optimizer: Optional[torch.optim.Optimizer] = None) -> "GradwireState":
        """A state from a dict or a JSON object of the constructor's options:
        {"method": "ef", "start_step": 100}, or with a codec of its own,
        {"mode": "server", "codec": {"name": "topk", "density_ppm": 1000}}."""
        return cls(model, process_group=process_group, optimizer=optimizer,
                   **config_options(config))

    # ------------------------------------------------------------ lifecycle
    def bind(self, model: torch.nn.Module, process_group: Optional[dist.ProcessGroup] = None,
             *, optimizer: Optional[torch.optim.Optimizer] = None) -> "GradwireState":
        """Attach (again) to a model: after unpickling, or to share the state.

        The hook exchanges over `process_group` if given, else over the
        model's own (a DistributedDataParallel's `process_group`, so DDP on
        a subgroup averages over that subgroup), else the group it had
        (the default, WORLD, if none). `optimizer`: its momentum moves into
        the hook (docs/distributed.md, "Momentum")."""
        if optimizer is not None and self.check_optimizer:
            why = self._refusal(optimizer)
            if why is not None:  # before anything changes: a refused bind leaves the state
                raise ValueError(why)
        if process_group is not None:
            self.process_group = process_group
        elif getattr(model, "process_group", None) is not None:
            self.process_group = model.process_group
        params = list(model.parameters())
        if self.mode != "allreduce":
            for i, p in enumerate(params):
                if p.requires_grad and p.dtype not in DTYPES:
                    raise TypeError(
                        f"gradwire: parameter {i} is {p.dtype}; method {self.method!r} "
                        "compresses float32, float16, bfloat16 and float64 gradients (float64 "
                        "in float32). Use method='allreduce' for this model, or keep these "
                        "parameters out of DDP's gradient synchronisation")
        self._pid = {id(p): i for i, p in enumerate(params)}
        self._numel = {i: p.numel() for i, p in enumerate(params)}
        self.comm = Collectives(self.process_group)
        for h in self._use_hooks:
            h.remove()
        self._use_hooks, self._used = [], set()
        # Where DDP skips parameters that no rank used (find_unused_parameters,
        # static_graph: their .grad stays None), nothing may be sent for them:
        # their residuals keep the mass. The hook learns which were used from
        # these (local) marks and one all_reduce of a flag per parameter.
        self._track_use = self.mode != "allreduce" and bool(
            getattr(model, "find_unused_parameters", False)
            or getattr(model, "static_graph", False))
        if self._track_use:
            for i, p in enumerate(params):
                if p.requires_grad:
                    self._use_hooks.append(p.register_hook(_UseMark(self._used, i)))
        if self.policy is not None and self._track_use:
            raise ValueError("gradwire: policy='never_slower' with find_unused_parameters or "
                             "static_graph is not supported (a bucket going dense would hand "
                             "over residuals of parameters DDP drops)")
        world = (self.comm.size, self.comm.rank)
        if self._world is not None and tuple(self._world) != world:
            raise ValueError(f"state of rank {self._world[1]} of {self._world[0]} bound on "
                             f"rank {world[1]} of {world[0]}")
        self._world = world
        if optimizer is not None:
            self._optimizer = optimizer
            # A state saved after never_slower handed the momentum back leaves it
            # too: the optimizer, restored from its own checkpoint, holds it until
            # the method's next probe takes it, buffers and all (_hook.py).
            self._group_of = take_over(
                optimizer, self._pid, self._moment,
                move=self.mode not in _MOMENTUM_STAYS and not self._handed_back)
            self._read_lrs()
        if self._guard is not None:
            self._guard.remove()
        self._guard = Guard(self, params)
        return self

    def _refusal(self, optimizer: torch.optim.Optimizer) -> Optional[str]:
        """Why this state does not take `optimizer` (check_optimizer=False takes
        it anyway): Adam's moments cannot move into the hook, and heavy-ball
        momentum trained LAGS and CLT-k more than 2 points below plain DDP."""
        if self.holds_mass_back() and isinstance(optimizer, ADAM_FAMILY):
            return refusal(self.method, optimizer)
        if self.mode in HEAVY_BALL and heavy_ball(optimizer):
            return f"gradwire: {HEAVY_BALL[self.mode]}"
        return None

    def holds_mass_back(self) -> bool:
        """Whether this state's method keeps residuals an optimizer's momentum would
        re-apply (everything but full precision and the float casts)."""
        return self.mode != "allreduce" and self.codec.name not in _NEAR_LOSSLESS

    def begin_step(self) -> None:
        """At bucket 0 of a step (on the autograd thread): the optimizer's
        learning rates for this step's residual rescaling."""
        self.steps += 1
        self._read_lrs()

    def _read_lrs(self) -> None:
        if self._optimizer is not None:
            groups = self._optimizer.param_groups
            self._lrs = {pid: float(groups[g]["lr"]) for pid, g in self._group_of.items()}

    def lr_of(self, pid: int) -> float:
        return self._lrs.get(pid, self.lr)

    def held_back(self) -> Dict[int, torch.Tensor]:
        """What this rank holds back, per parameter index: its residuals (and
        a server slice's, counted world-size times), flattened, in the units
        of a gradient. The sum over the ranks divided by the world size is
        what the job still owes the model; re-sharding keeps it."""
        pids = sorted({k[1] for k in list(self._handles) + list(self._blobs)})
        out = {}
        for pid in pids:
            k = held_back(self, pid, self._numel[pid])
            if k is not None:
                out[pid] = k
        return out

    @property
    def momentum_masking(self) -> bool:
        """Whether the momentum taken over is cleared where a sparse frame sent it."""
        return self._moment.masking

    @property
    def bytes_sent(self) -> int:
        """Bytes this rank handed to torch.distributed through the hook."""
        return self.comm.sent

    @property
    def hook_time(self) -> Dict[str, float]:
        """Seconds of the hook's own work on this rank since it was made or
        unpickled: "cpu", the CPU time of encoding, decoding and copying
        (Python included, gloo's own threads not); "wall", that plus the time
        it waited for collectives and for a core. Steps of plain all-reduce
        (warm-up, a dense policy) add nothing."""
        clock = self.engine.clock
        return {"cpu": clock.cpu, "wall": clock.wall}

    def state_dict(self) -> Dict[str, Any]:
        blobs = dict(self._blobs)
        blobs.update({k: h.save() for k, h in self._handles.items()})
        return {"format": 1, "method": self.method, "mode": self.mode,
                "codec": None if self.codec is None else (self.codec.name, self.codec.params),
                "world": self._world, "steps": self.steps, "lr": self.lr, "handles": blobs,
                "momentum": self._moment.state_dict(), "handed_back": self._handed_back,
                "policy": None if self.policy is None else self.policy.state_dict()}

    def load_state_dict(self, sd: Union[Dict[str, Any], Sequence[Dict[str, Any]]]) -> None:
        """Restore this rank's state_dict(), bit-identically; or, given the
        state_dict()s of all ranks of a job (a list, any world size), this
        rank's share of them re-sharded (_reshard.py)."""
        if isinstance(sd, (list, tuple)):
            if self._world is None:
                raise ValueError("bind() the state before loading the states of all ranks")
            sd = reshard(sd, self._world)
        if not isinstance(sd, dict) or sd.get("format") != 1:
            raise ValueError("not a gradwire DDP hook state (format 1)")
        if sd["mode"] != self.mode:
            hint = ""
            if sd["codec"] is not None:
                hint = (f": make the state with GradwireState(model, mode={sd['mode']!r}, "
                        f"codec={sd['codec'][0]!r}, ...) to resume it (method 'fp16' was mode "
                        "'server' before mode 'cast', method 'topk' before mode 'allgather')")
            raise ValueError(f"state of mode {sd['mode']} cannot load into mode {self.mode}"
                             + hint)
        if tuple(sd["world"]) != tuple(self._world):
            size, rank = sd["world"]
            raise ValueError(
                f"state of rank {rank} of {size} cannot load on rank {self._world[1]} of "
                f"{self._world[0]} as it is: pass the state_dict()s of all {size} ranks (a list) "
                "and it is re-sharded (docs/distributed.md, \"Checkpoints and world size\")")
        codec = None if sd["codec"] is None else CodecSpec(sd["codec"][0], **sd["codec"][1])
        if codec != self.codec:
            raise ValueError(f"state was saved with codec {codec}, this one uses {self.codec}: "
                             f"make the state with codec={codec} to resume it (methods 'ef', "
                             "'efsignsgd' and 'auto' had block_size=256 before 64)")
        for h in self._handles.values():
            h.close()
        self._handles, self._blobs = {}, dict(sd["handles"])
        self._cast_buffers.clear()
        self.steps, self.lr = sd["steps"], sd["lr"]
        self._moment.load_state_dict(sd.get("momentum", {}))  # none before momentum moved in
        # Who holds an optimizer's momentum: as saved (never_slower hands it back).
        handed = bool(sd.get("handed_back", self._handed_back))
        if self._optimizer is not None and handed != self._handed_back:
            if handed:  # the optimizer, restored from its own checkpoint, keeps it
                hand_back(self._moment, self._optimizer, self._pid, self.comm)
            else:
                take_over(self._optimizer, self._pid, self._moment,
                          move=self.mode not in _MOMENTUM_STAYS)
        self._handed_back = handed
        if self.policy is not None and sd.get("policy") is not None:
            self.policy.load_state_dict(sd["policy"])

    def __getstate__(self) -> Dict[str, Any]:
        bound = ("_handles", "_blobs", "_pid", "_numel", "comm", "process_group", "_use_hooks",
                 "_used", "_track_use", "_optimizer", "_group_of", "_lrs", "_guard", "engine",
                 "_cast_buffers", "_scratch")
        d = {k: v for k, v in self.__dict__.items() if k not in bound}
        d["_saved"] = self.state_dict()
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        saved = d.pop("_saved")
        d.setdefault("start_step", 0)  # pickled before start_step existed
        d.setdefault("check_optimizer", True)
        d.setdefault("_moment", Momentum())
        if "momentum_masking" in d:  # pickled at 99ee165, when the flag sat on the state
            d["_moment"].masking = bool(d.pop("momentum_masking"))
        d.setdefault("policy", None)
        d.setdefault("_dense_decided", False)
        d.setdefault("_handed_back", False)
        self.__dict__.update(d)
        self._handles, self._blobs = {}, {}
        self.process_group = None  # bind() takes the new model's group
        self._attach_none()
        self.load_state_dict(saved)

    def __del__(self) -> None:
        guard = self.__dict__.get("_guard")
        if guard is not None:
            guard.remove()

    def scratch(self, key: Tuple, n: int) -> torch.Tensor:
        """n float32 elements kept for `key` (what the hook uses them for and
        the bucket's index) from step to step: a fresh tensor of a bucket's
        size each step costs more in page faults than the exchange's own
        arithmetic. DDP's rebuilt buckets keep their indices; a size that
        changes gets a new buffer."""
        t = self._scratch.get(key)
        if t is None or t.numel() != n:
            t = self._scratch[key] = torch.empty(n, dtype=torch.float32)
        return t

    # -------------------------------------------------------------- handles
    def handle(self, key: Tuple, make) -> Any:
        h = self._handles.get(key)
        if h is None:
            h = make()
            blob = self._blobs.pop(key, None)
            if blob is not None:
                h.load(blob)
            self._handles[key] = h
        return h

    def worker(self, pid: int, j: int, n: int) -> Worker:
        return self.handle(("w", pid, j), lambda: Worker(
            n, self.codec, momentum=self.momentum, mu=self.mu, tensor=pid, seed=self.seed))

    def server(self, pid: int, total: int, r: range) -> Server:
        return self.handle(("s", pid), lambda: Server(
            total, self.comm.size, self.codec, expect=self.codec, offset=r.start,
            length=len(r), tensor=pid))

    def lags_layer(self, pid: int, n: int) -> LagsLayer:
        return self.handle(("l", pid), lambda: LagsLayer(n, self.codec, tensor=pid,
                                                         seed=self.seed))

    def cast_residual(self, pid: int, n: int) -> Residual:
        return self.handle(("r", pid), lambda: Residual(n))

    def cltk(self, pid: int, n: int) -> Cltk:
        M, r = self.comm.size, self.comm.rank
        return self.handle(("c", pid), lambda: Cltk(
            n, M, r, self.codec, beta=self.beta, warmup_steps=self.warmup_steps, tensor=pid))


class _UseMark:
    """A gradient hook noting that parameter `pid` got a gradient on this rank."""

    def __init__(self, used: set, pid: int) -> None:
        self.used, self.pid = used, pid

    def __call__(self, grad: torch.Tensor) -> None:
        self.used.add(self.pid)


def config_options(config: Union[Dict[str, Any], str]) -> Dict[str, Any]:
    """GradwireState's keyword arguments from a dict or a JSON object (what
    from_config takes); unknown options raise ValueError."""
    if isinstance(config, (str, bytes, bytearray)):
        config = json.loads(config)
    if not isinstance(config, dict):
        raise TypeError(f"a gradwire DDP config is a dict or a JSON object, not "
                        f"{type(config).__name__}")
    known = [n for n in inspect.signature(GradwireState.__init__).parameters
             if n not in ("self", "model", "process_group", "optimizer")]
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} in a gradwire DDP config: one of {known}")
    kw = dict(config)
    codec = kw.get("codec")
    if isinstance(codec, dict):
        params = dict(codec)
        name = params.pop("name", None)
        if name is None:
            raise ValueError('a codec in a gradwire DDP config needs its "name"')
        kw["codec"] = CodecSpec(name, **params)
    return kw
