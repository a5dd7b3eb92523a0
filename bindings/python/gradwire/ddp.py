"""A torch DistributedDataParallel communication hook running any gradwire method.

    state = GradwireState(ddp_model, method="ef")
    ddp_model.register_comm_hook(state, hook)

Error-feedback state lives per parameter (never per bucket), so DDP's
bucket rebuild after the first iteration changes nothing; gradient
accumulation with no_sync() needs nothing either (DDP hands the hook the
accumulated gradient). The state pickles (and has state_dict /
load_state_dict): every handle's checkpoint plus the step count, restoring
bit-identically. Each rank keeps and checkpoints its own state.

Modes (docs/distributed.md for what each collective carries):
  allreduce  full precision: torch's all_reduce of the bucket, averaged
  server     two-way compression through a sharded server: rank j serves
             slice j of every parameter (gw_shard_range). Worker frames go
             all-to-all to their slice's owner, the owner averages them with
             its residual and compresses again, the owners' frames are
             all-gathered and every rank decodes the same update
  allgather  one-way: every rank's frames are all-gathered and averaged
  lags       one-way with LAGS-SGD's per-layer state (gw_lags_layer)
  randomk    random-k values from a seed all ranks share: a plain sum all_reduce
  cltk       ScaleCom's CLT-k: the leader's index frame is broadcast, the
             values at those indices are summed by all_reduce

The hook exchanges over the DDP model's own process group (any group, any
ranks; after unpickling, bind() takes the new model's). float64 buckets are
compressed in float32 and returned in float64; other dtypes but float16 and
bfloat16 are refused at construction. Sparse gradients are averaged by a
plain all_reduce in every mode; zero-element parameters have no state. Under
find_unused_parameters / static_graph, parameters no rank used are not sent
(DDP would drop them): their residuals keep the mass. docs/distributed.md
has the rules. start_step=N makes the first N steps a plain all-reduce
(PowerSGD's start_powerSGD_iter, DeepSpeed's freeze_step); from_config(model,
dict or JSON) builds a state from the constructor's options.

The hook returns the update direction (a gradient-like average); the
optimizer applies the learning rate. Set `state.lr` to the optimizer's
learning rate if it changes, so residuals are rescaled (lr_prev / lr) as the
algorithms require. With momentum="nesterov" the workers run
dist-EF-blockSGDM's momentum themselves: use an optimizer without momentum.
"""

import inspect
import json
import math
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from ._torch import dist, torch  # first: says how to install torch if it is missing
from . import Cltk, CodecSpec, LagsLayer, Server, Worker, decode, decode_accumulate_many, frame_size
from . import gwnative as _n
from . import randk_indices, shard_range
from ._collectives import Collectives

# Named methods: mode plus codec. Any codec works with mode "server" or
# "allgather" by name (GradwireState(model, mode="server", codec="fp16")).
METHODS: Dict[str, Dict[str, Any]] = {
    "allreduce": dict(mode="allreduce"),
    # dist-EF-blockSGDM: one scale per 256 elements (one per tensor slice trains poorly here).
    "ef": dict(mode="server", codec=("scaled_sign", {"block_size": 256})),
    "topk": dict(mode="server", codec=("topk", {"density_ppm": 10000})),
    "fp16": dict(mode="server", codec=("fp16", {})),
    "efsignsgd": dict(mode="allgather", codec=("scaled_sign", {"block_size": 256})),
    "lags": dict(mode="lags", codec=("topk", {"density_ppm": 1000})),
    "randomk": dict(mode="randomk", codec=("randomk", {"density_ppm": 10000})),
    "cltk": dict(mode="cltk", codec=("index", {"density_ppm": 10000, "chunk_size": 4096})),
}
MODES = ("allreduce", "server", "allgather", "lags", "randomk", "cltk")


class GradwireState:
    """Per-parameter gradwire state for the DDP hook of one model on one rank."""

    def __init__(self, model: torch.nn.Module, method: str = "ef", *,
                 mode: Optional[str] = None, codec: Union[str, CodecSpec, None] = None,
                 process_group: Optional[dist.ProcessGroup] = None, lr: float = 1.0,
                 momentum: str = "none", mu: float = 0.0, seed: int = 0, beta: float = 1.0,
                 warmup_steps: int = 0, start_step: int = 0) -> None:
        preset = METHODS.get(method)
        if preset is None and mode is None:
            raise ValueError(f"unknown method {method!r}: one of {sorted(METHODS)}, or give mode=")
        preset = preset or {}
        self.mode = mode or preset["mode"]
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}: one of {MODES}")
        if codec is None and "codec" in preset:
            name, params = preset["codec"]
            codec = CodecSpec(name, **params)
        self.codec = None if codec is None else (codec if isinstance(codec, CodecSpec)
                                                 else CodecSpec(codec))
        if self.mode != "allreduce" and self.codec is None:
            raise ValueError(f"mode {self.mode!r} needs a codec")
        self.method = method
        self.lr, self.momentum, self.mu, self.seed = lr, momentum, mu, seed
        self.beta, self.warmup_steps = beta, warmup_steps
        if start_step < 0:
            raise ValueError(f"start_step must be >= 0, not {start_step}")
        self.start_step = start_step  # steps 1..start_step: plain all-reduce
        self.steps = 0          # hook calls of bucket 0 (synchronised iterations)
        self._handles: Dict[Tuple, Any] = {}
        self._blobs: Dict[Tuple, bytes] = {}   # restored, loaded when a handle is made
        self.process_group = process_group
        self._world: Optional[Tuple[int, int]] = None
        self._use_hooks: List[Any] = []
        self._used: set = set()
        self._track_use = False
        self.bind(model, process_group)

    @classmethod
    def from_config(cls, model: torch.nn.Module, config: Union[Dict[str, Any], str], *,
                    process_group: Optional[dist.ProcessGroup] = None) -> "GradwireState":
        """A state from a dict or a JSON object of the constructor's options:
        {"method": "ef", "start_step": 100}, or with a codec of its own,
        {"mode": "server", "codec": {"name": "topk", "density_ppm": 1000}}."""
        return cls(model, process_group=process_group, **config_options(config))

    # ------------------------------------------------------------ lifecycle
    def bind(self, model: torch.nn.Module, process_group: Optional[dist.ProcessGroup] = None
             ) -> "GradwireState":
        """Attach (again) to a model: after unpickling, or to share the state.

        The hook exchanges over `process_group` if given, else over the
        model's own (a DistributedDataParallel's `process_group`, so DDP on
        a subgroup averages over that subgroup), else the group it had
        (the default, WORLD, if none)."""
        if process_group is not None:
            self.process_group = process_group
        elif getattr(model, "process_group", None) is not None:
            self.process_group = model.process_group
        params = list(model.parameters())
        if self.mode != "allreduce":
            for i, p in enumerate(params):
                if p.requires_grad and p.dtype not in _DTYPES:
                    raise TypeError(
                        f"gradwire: parameter {i} is {p.dtype}; method {self.method!r} "
                        "compresses float32, float16, bfloat16 and float64 gradients (float64 "
                        "in float32). Use method='allreduce' for this model, or keep these "
                        "parameters out of DDP's gradient synchronisation")
        self._pid = {id(p): i for i, p in enumerate(params)}
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
        world = (self.comm.size, self.comm.rank)
        if self._world is not None and tuple(self._world) != world:
            raise ValueError(f"state of rank {self._world[1]} of {self._world[0]} bound on "
                             f"rank {world[1]} of {world[0]}")
        self._world = world
        return self

    @property
    def bytes_sent(self) -> int:
        """Bytes this rank handed to torch.distributed through the hook."""
        return self.comm.sent

    def state_dict(self) -> Dict[str, Any]:
        blobs = dict(self._blobs)
        blobs.update({k: h.save() for k, h in self._handles.items()})
        return {"format": 1, "method": self.method, "mode": self.mode,
                "codec": None if self.codec is None else (self.codec.name, self.codec.params),
                "world": self._world, "steps": self.steps, "lr": self.lr, "handles": blobs}

    def load_state_dict(self, sd: Dict[str, Any]) -> None:
        if sd.get("format") != 1:
            raise ValueError("not a gradwire DDP hook state (format 1)")
        if sd["mode"] != self.mode or tuple(sd["world"]) != tuple(self._world):
            raise ValueError(f"state of mode {sd['mode']} on {sd['world']} cannot load into "
                             f"mode {self.mode} on {self._world}")
        codec = None if sd["codec"] is None else CodecSpec(sd["codec"][0], **sd["codec"][1])
        if codec != self.codec:
            raise ValueError(f"state was saved with codec {codec}, this one uses {self.codec}")
        for h in self._handles.values():
            h.close()
        self._handles, self._blobs = {}, dict(sd["handles"])
        self.steps, self.lr = sd["steps"], sd["lr"]

    def __getstate__(self) -> Dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items()
             if k not in ("_handles", "_blobs", "_pid", "comm", "process_group", "_use_hooks",
                          "_used")}
        d["_saved"] = self.state_dict()
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        saved = d.pop("_saved")
        d.setdefault("start_step", 0)  # pickled before start_step existed
        self.__dict__.update(d)
        self._handles, self._blobs = {}, {}
        self.process_group = None  # bind() takes the new model's group
        self._pid = None
        self.comm = None
        self._use_hooks, self._used = [], set()
        self.load_state_dict(saved)

    # -------------------------------------------------------------- handles
    def _handle(self, key: Tuple, make) -> Any:
        h = self._handles.get(key)
        if h is None:
            h = make()
            blob = self._blobs.pop(key, None)
            if blob is not None:
                h.load(blob)
            self._handles[key] = h
        return h

    def _worker(self, pid: int, j: int, n: int) -> Worker:
        return self._handle(("w", pid, j), lambda: Worker(
            n, self.codec, momentum=self.momentum, mu=self.mu, tensor=pid, seed=self.seed))

    def _server(self, pid: int, total: int, r: range) -> Server:
        return self._handle(("s", pid), lambda: Server(
            total, self.comm.size, self.codec, expect=self.codec, offset=r.start,
            length=len(r), tensor=pid))


# Parameter dtypes the compressed modes take (float64 is compressed in float32).
_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


class _UseMark:
    """A gradient hook noting that parameter `pid` got a gradient on this rank."""

    def __init__(self, used: set, pid: int) -> None:
        self.used, self.pid = used, pid

    def __call__(self, grad: torch.Tensor) -> None:
        self.used.add(self.pid)


def _used_somewhere(state: GradwireState, layout):
    """The parameters of `layout` that some rank of the group used since the last
    synchronised step (a sum all_reduce of one flag per parameter)."""
    flags = torch.tensor([pid in state._used for pid, _, _ in layout], dtype=torch.int32)
    for pid, _, _ in layout:
        state._used.discard(pid)
    flags = state.comm.all_reduce_sum(flags)
    return [x for x, f in zip(layout, flags.tolist()) if f]


def config_options(config: Union[Dict[str, Any], str]) -> Dict[str, Any]:
    """GradwireState's keyword arguments from a dict or a JSON object (what
    from_config takes); unknown options raise ValueError."""
    if isinstance(config, (str, bytes, bytearray)):
        config = json.loads(config)
    if not isinstance(config, dict):
        raise TypeError(f"a gradwire DDP config is a dict or a JSON object, not "
                        f"{type(config).__name__}")
    known = [n for n in inspect.signature(GradwireState.__init__).parameters
             if n not in ("self", "model", "process_group")]
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


def _layout(state: GradwireState, bucket: dist.GradBucket):
    """(pid, offset, numel) of every parameter in the bucket's flat buffer."""
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


def _f32_output(buf: torch.Tensor) -> torch.Tensor:
    return torch.zeros(buf.numel(), dtype=torch.float32)


def _finish(buf: torch.Tensor, out: torch.Tensor) -> torch.futures.Future:
    if out.dtype != buf.dtype:
        out = out.to(buf.dtype)
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(out)
    return fut


def _split(msg: bytes, count: int) -> List[bytes]:
    """`count` frames laid back to back."""
    frames, pos = [], 0
    for _ in range(count):
        size = frame_size(msg[pos:pos + _n.GW_FRAME_HEADER_SIZE])
        frames.append(msg[pos:pos + size])
        pos += size
    if pos != len(msg):
        raise RuntimeError(f"gradwire: {len(msg) - pos} bytes after the expected frames")
    return frames


# DDP checks these annotations at registration (hence no postponed annotations here).
def hook(state: "GradwireState", bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """The communication hook: compress, exchange, decode one bucket."""
    if bucket.index() == 0:
        state.steps += 1
    buf = bucket.buffer()
    if buf.layout != torch.strided:
        # Sparse gradients (nn.Embedding(sparse=True)), alone in their bucket:
        # averaged by a plain all_reduce, never compressed.
        return _finish(buf, state.comm.sparse_mean(buf))
    flat = buf.reshape(-1)
    layout = _layout(state, bucket)
    mode = state.mode
    if mode != "allreduce" and state.steps <= state.start_step:
        # Warm-up: plain all-reduce, no state touched (residuals start at zero).
        if state._track_use:
            for pid, _, _ in layout:
                state._used.discard(pid)
        mode = "allreduce"
    if mode == "allreduce":
        # Divided first, as DDP's own all-reduce does (no overflow in float16).
        return _finish(buf, state.comm.all_reduce_sum(flat.div(state.comm.size)))
    out = _f32_output(buf)
    if flat.dtype == torch.float64:
        flat = flat.to(torch.float32)
    # Zero-element parameters carry nothing: no handle, no frame.
    layout = [x for x in layout if x[2]]
    if state._track_use:
        layout = _used_somewhere(state, layout)
    if not layout:  # the same on every rank: DDP's buckets agree
        return _finish(buf, out)
    if mode == "server":
        _server_round(state, flat, out, layout)
    elif mode in ("allgather", "lags"):
        _allgather_round(state, flat, out, layout)
    elif mode == "randomk":
        _randomk_round(state, flat, out, layout)
    else:
        _cltk_round(state, flat, out, layout)
    return _finish(buf, out)


def _server_round(state, flat, out, layout) -> None:
    M, r, lr = state.comm.size, state.comm.rank, state.lr
    to = [[] for _ in range(M)]
    for pid, off, n in layout:
        for j in range(M):
            s = shard_range(n, M, j)
            if len(s):
                w = state._worker(pid, j, len(s))
                to[j].append(w.step(flat[off + s.start:off + s.stop], lr))
    mine = [f for f in state.comm.all_to_all([b"".join(fs) for fs in to])]
    owned = [(pid, off, n, shard_range(n, M, r)) for pid, off, n in layout]
    owned = [x for x in owned if len(x[3])]
    # Each owned slice's M frames (in rank order) as one tiled server round.
    rounds = list(zip(*[_split(msg, len(owned)) for msg in mine])) if owned else []
    bcast = b"".join(state._server(pid, n, s).round(frames, lr)
                     for (pid, off, n, s), frames in zip(owned, rounds))
    for j, msg in enumerate(state.comm.all_gather(bcast)):
        theirs = [(off, shard_range(n, M, j)) for pid, off, n in layout]
        theirs = [x for x in theirs if len(x[1])]
        for (off, s), frame in zip(theirs, _split(msg, len(theirs))):
            decode(frame, out=out[off + s.start:off + s.stop])


def _allgather_round(state, flat, out, layout) -> None:
    M, lr = state.comm.size, state.lr
    frames = []
    for pid, off, n in layout:
        g = flat[off:off + n]
        if state.mode == "lags":
            h = state._handle(("l", pid), lambda: LagsLayer(n, state.codec, tensor=pid,
                                                            seed=state.seed))
            frames.append(h.step(g, lr))
        else:
            frames.append(state._worker(pid, 0, n).step(g, lr))
    # LAGS sends lr-scaled values (acc = eps + lr g): undo it for a gradient-like output.
    alpha = 1.0 / M / (lr if state.mode == "lags" else 1.0)
    # Each parameter's M frames (in rank order), summed in one tiled call.
    per_param = zip(*[_split(msg, len(layout)) for msg in state.comm.all_gather(b"".join(frames))])
    for (pid, off, n), theirs in zip(layout, per_param):
        decode_accumulate_many(theirs, out[off:off + n], alpha)


def _randomk_k(spec: CodecSpec, n: int) -> int:
    k = spec["k"]
    return min(n, k) if k else min(n, math.ceil(n * spec["density_ppm"] / 1e6))


def _randomk_round(state, flat, out, layout) -> None:
    M, lr = state.comm.size, state.lr
    idxs, vals = [], []
    for pid, off, n in layout:
        w = state._worker(pid, 0, n)
        step = w.step_count()
        frame = w.step(flat[off:off + n], lr)
        idx = randk_indices(state.seed, step, pid, n, _randomk_k(state.codec, n))
        idxs.append(idx)
        vals.append(decode(frame, max_elements=n)[idx])  # our own frame of n elements
    summed = state.comm.all_reduce_sum(torch.from_numpy(np.concatenate(vals)))
    pos = 0
    for (pid, off, n), idx in zip(layout, idxs):
        o = out[off:off + n].numpy()
        o[idx] = summed[pos:pos + idx.size].numpy() / M
        pos += idx.size


def _cltk_round(state, flat, out, layout) -> None:
    M, r, lr = state.comm.size, state.comm.rank, state.lr
    hs = []
    for pid, off, n in layout:
        h = state._handle(("c", pid), lambda: Cltk(
            n, M, r, state.codec, beta=state.beta, warmup_steps=state.warmup_steps, tensor=pid))
        h.begin(flat[off:off + n], lr)
        hs.append(h)
    # A tensor's leader is its step mod M (none while warming up); tensors that
    # sat out steps (unused by every rank) have their own, so one broadcast per
    # leader, in leader order (the same on every rank: the handles agree).
    leaders = [h.leader() for h in hs]
    frames: List[Optional[bytes]] = [None] * len(hs)
    for leader in sorted(set(leaders) - {_n.GW_CLTK_NO_LEADER}):
        mine = [i for i, l in enumerate(leaders) if l == leader]
        msg = b"".join(hs[i].select() for i in mine) if r == leader else None
        for i, f in zip(mine, _split(state.comm.broadcast(msg, leader), len(mine))):
            frames[i] = f
    values = [h.extract(f) for h, f in zip(hs, frames)]
    summed = state.comm.all_reduce_sum(torch.from_numpy(np.concatenate(values)))
    pos = 0
    for (pid, off, n), h, v in zip(layout, hs, values):
        x = np.zeros(n, np.float32)
        h.apply(summed[pos:pos + v.size].numpy(), x)   # x[I] -= sum / M
        out[off:off + n] = torch.from_numpy(x).mul_(-1.0 / lr)
        pos += v.size
