"""gradwire: gradient compressors and error-feedback state machines.

Python face of the C library (docs/python.md). Everything works on CPU
memory without copies: numpy arrays, torch CPU tensors (float32, float16,
bfloat16) and bytes-like objects are borrowed for the length of a call.
Failures raise GradwireError with .status (the gw_status code), .name
("GW_ERR_FRAME_CHECKSUM") and the C call in the message.

    import numpy as np, gradwire as gw
    spec = gw.CodecSpec("scaled_sign")
    worker = gw.Worker(1000, spec)
    frame = worker.step(np.ones(1000, np.float32), lr=0.1)

Torch integration: gradwire.ddp (DistributedDataParallel communication hook)
and gradwire.fsdp (a reduce-scatter for FSDP2's fully_shard).
"""

from __future__ import annotations

import enum
import numbers
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from . import gwnative as _n
from ._buffers import (bytes_in, bytes_out, dtype_code, f32_in, out_array, tensor_in,
                       u32_in)

GradwireError = _n._gwnative.GradwireError
GradwireError.__module__ = "gradwire"

__version__ = _n.version()
__all__ = [
    "GradwireError", "Status", "DType", "Codec", "Param", "Momentum", "Simd", "CodecSpec",
    "FrameInfo", "Worker", "Server", "Cltk", "LagsLayer", "Fusion", "AsylpgMaster", "AsylpgWorker",
    "AsylpgVariant", "encode", "decode",
    "decode_accumulate", "decode_accumulate_many", "inspect", "frame_size", "tag", "shard_range", "codecs",
    "reshard", "DEFAULT_MAX_ELEMENTS", "bundle_frames", "compression_ratio", "contraction", "crc32c",
    "gather", "index_frame_indices", "index_overlap", "randk_indices", "scaled_sign_phi", "scatter_add",
    "ef_cast",
]


def __dir__():
    # The public names, not the imports and helpers the module uses (np, Any,
    # bytes_in, ...), which stay reachable for the package's own modules.
    subs = [m for m in ("ddp", "fsdp", "cli") if m in globals()]
    dunders = [k for k in globals() if k.startswith("__") and k.endswith("__")]
    return sorted(__all__ + subs + dunders)


def _error(e: Any, message: str) -> Any:
    """e (GradwireError or a SWIG OverflowError) again, with a message saying
    which argument was wrong; GradwireError keeps .status, .name and the C call."""
    if not isinstance(e, GradwireError):
        return type(e)(message)
    new = GradwireError(f"{str(e).split(': ', 1)[0]}: {message}")
    new.status, new.name = e.status, e.name
    return new


def _explain(e: Any, what: str, rules: Sequence[Any]) -> None:
    """Raise e with the first broken rule's message, or e itself when none is."""
    for broken, message in rules:
        if broken:
            raise _error(e, f"{what}: {message}") from None
    raise e


def _in(name: str, value: Any, lo: Any, hi: Any, hi_open: bool = False) -> Any:
    """(broken, message) for `lo <= value <= hi` (`< hi` with hi_open)."""
    ok = lo <= value < hi if hi_open else lo <= value <= hi
    return (not ok, f"{name}={value!r} is out of range: {name} must be in "
                    f"[{lo}, {hi}{')' if hi_open else ']'}")


_MAX_ELEMENTS = 1 << 40  # GW_MAX_ELEMENTS


def _enum(name: str, prefix: str, doc: str) -> Any:
    members = {k[len(prefix):]: getattr(_n, k) for k in dir(_n) if k.startswith(prefix)}
    e = enum.IntEnum(name, members, module=__name__)
    e.__doc__ = doc
    return e


Status = enum.IntEnum("Status", {k[3:]: getattr(_n, k) for k in dir(_n)
                                 if k == "GW_OK" or k.startswith("GW_ERR_")}, module=__name__)
Status.__doc__ = "gw_status codes: GradwireError.status is one of them (OK = 0)."
DType = _enum("DType", "GW_DTYPE_", "Element types of gradients and frame values (gw_dtype).")
Param = _enum("Param", "GW_PARAM_", "Codec parameters by C id (gw_param); CodecSpec takes their "
              "lower-case names.")
Momentum = _enum("Momentum", "GW_MOMENTUM_", "A Worker's momentum rule: none, nesterov, signum.")
Simd = _enum("Simd", "GW_SIMD_", "Instruction sets the kernels dispatch to (gw_simd_target).")
AsylpgVariant = _enum("AsylpgVariant", "GW_ASYLPG_", "AsylpgMaster's variant: plain (AsyLPG, "
                      "Sparse-AsyLPG) or acc (Acc-AsyLPG).")
# Codecs are read from the library, so a codec added there needs no change here.
Codec = enum.IntEnum("Codec", {_n.codec_name(c).upper(): c for c in _n.codec_list()},
                     module=__name__)
Codec.__doc__ = "The library's codecs by id (gw_codec_id); codecs() has them by name."

FrameInfo = _n.FrameInfo
FrameInfo.__doc__ = ("What inspect() reads from a valid frame: codec, count (elements), tag, "
                     "frame_size, payload_size, flags, format_version.")
for _field, _doc in dict(
        codec="The codec's id (Codec).", count="Elements the frame holds.",
        tag="The frame's tag, GW_TAG(tensor, step).", frame_size="Bytes of the whole frame.",
        payload_size="Bytes of its payload.", flags="The GW_FRAME_FLAG_* bits.",
        format_version="The wire format's version.").items():
    _p = FrameInfo.__dict__[_field]
    setattr(FrameInfo, _field, property(_p.fget, _p.fset, doc=_doc))
del _field, _doc, _p
FrameInfo.__repr__ = lambda s: (
    f"FrameInfo(codec={_n.codec_name(s.codec)!r}, count={s.count}, tag={s.tag:#x}, "
    f"frame_size={s.frame_size}, payload_size={s.payload_size}, flags={s.flags}, "
    f"format_version={s.format_version})")


def codecs() -> Dict[str, int]:
    """The built-in codecs by name."""
    return {c.name.lower(): int(c) for c in Codec}


def _codec_id(codec: Union[str, int]) -> int:
    if isinstance(codec, str):
        try:
            return _n.codec_from_name(codec)
        except GradwireError as e:
            names = list(codecs())
            near = [c for c in names if c == codec.strip().lower()]
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise _error(e, f"no codec named {codec!r}{hint}; the codecs: "
                         f"{', '.join(names)}") from None
    return int(codec)


def _param_id(name: Union[str, int]) -> int:
    if isinstance(name, str):
        try:
            return int(Param[name.upper()])
        except KeyError:
            known = ", ".join(p.name.lower() for p in sorted(Param))
            raise ValueError(f"unknown codec parameter {name!r}; the parameters: {known}") from None
    return int(name)


_FLOAT_PARAMS = {_n.GW_PARAM_THRESHOLD, _n.GW_PARAM_BUDGET}


class CodecSpec(_n.CodecSpec):
    """A codec with its parameters: CodecSpec("topk", k=100, value_dtype="f16").

    Parameters are named as in the C API (block_size, k, density_ppm,
    value_dtype, zstd, chunk_size, threshold, sample_ppm, bits, levels, budget, revision); each is checked
    against the codec's bounds when set. `link_bps`, not a parameter, is the speed of the
    link the frames cross (bits per second, 0 = unknown): known, the zstd stage is used
    only where it pays on that link (gw_codec_spec_set_link).
    """

    def __init__(self, codec: Union[str, int, "CodecSpec"], *, link_bps: int = 0,
                 **params: Any) -> None:
        if isinstance(codec, _n.CodecSpec):
            super().__init__(codec)
        else:
            cid = _codec_id(codec)
            try:
                super().__init__(cid)
            except GradwireError as e:
                raise _error(e, f"CodecSpec: {codec!r} is not a codec id; the codecs: " + ", ".join(
                    f"{k}={v}" for k, v in codecs().items())) from None
        for k, v in params.items():
            self[k] = v
        if link_bps or not isinstance(codec, _n.CodecSpec):
            self.link_bps = link_bps

    @property
    def link_bps(self) -> int:
        """The link's speed in bits per second (0 = unknown); never on the wire."""
        return self.get_link()

    @link_bps.setter
    def link_bps(self, bps: int) -> None:
        if isinstance(bps, bool) or not isinstance(bps, numbers.Integral) or not 0 <= bps < 2**64:
            raise ValueError(f"link_bps: expected bits per second, an integer >= 0, got {bps!r}")
        self.set_link(int(bps))

    @classmethod
    def from_frame(cls, frame: Any) -> "CodecSpec":
        """The codec and parameters a valid frame was written with."""
        raw = _n.CodecSpec.from_frame(bytes_in(frame, "frame"))
        return cls(raw)

    @property
    def name(self) -> str:
        """The codec's name ("topk")."""
        return _n.codec_name(self.codec())

    def __setitem__(self, param: Union[str, int], value: Any) -> None:
        p = _param_id(param)
        name = _n.param_name(p) or str(param)
        if p == _n.GW_PARAM_VALUE_DTYPE and not isinstance(value, numbers.Integral):
            value = dtype_code(value)  # "f16", np.float16, torch.bfloat16, ...
        # int() would turn "3" into 3 and 1.5 into 1 without a word: refuse both.
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"codec parameter {name!r}: expected a number, got {value!r}")
        try:
            if p in _FLOAT_PARAMS:
                self.set_f32(p, float(value))
                return
            if not isinstance(value, numbers.Integral):
                raise TypeError(f"codec parameter {name!r}: expected an integer, got {value!r}")
            self.set(p, int(value))
        except (GradwireError, OverflowError) as e:
            raise _error(e, self._param_error(p, name, value, e)) from None

    def _param_error(self, p: int, name: str, value: Any, e: Any) -> str:
        """Why the library refused name=value: the codec does not take it, or its range."""
        codec = self.name
        taken = list(_n.codec_params(self.codec()))
        head = f"CodecSpec({codec!r}): "
        if p not in taken:
            return (head + f"{codec} takes no parameter {name!r}; its parameters: "
                    + (", ".join(_n.param_name(q) for q in taken) or "none"))
        if p in _FLOAT_PARAMS:
            return head + f"{name}={value!r} is out of range: {name} must be finite and >= 0"
        b = _n.codec_param_bounds(self.codec(), p)
        if b.min <= value <= b.max:
            return head + f"{name}={value!r} refused ({e})"
        kinds = ""
        if p == _n.GW_PARAM_VALUE_DTYPE:
            kinds = " (" + ", ".join(f"{d.name.lower()}={int(d)}" for d in sorted(DType)
                                     if b.min <= d <= b.max) + ")"
        return (head + f"{name}={value!r} is out of range: {name} takes integers in "
                f"[{b.min}, {b.max}]{kinds}, default {b.default_value}")

    def __getitem__(self, param: Union[str, int]) -> Union[int, float]:
        """The value of a parameter, by name or Param: spec["k"]."""
        p = _param_id(param)
        return self.get_f32(p) if p in _FLOAT_PARAMS else self.get(p)

    @property
    def params(self) -> Dict[str, Union[int, float]]:
        """Every parameter the codec takes, in wire order."""
        return {_n.param_name(p): self[p] for p in _n.codec_params(self.codec())}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _n.CodecSpec) and self.equals(other)

    def __hash__(self) -> int:
        return hash((self.name, tuple(self.params.items())))

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"CodecSpec({self.name!r}{args})"

    def __reduce__(self):
        state = dict(self.params)
        if self.link_bps:
            state["link_bps"] = self.link_bps  # never a parameter's name
        return (CodecSpec, (self.name,), state)

    def __setstate__(self, params: Dict[str, Any]) -> None:
        params = dict(params)
        self.link_bps = params.pop("link_bps", 0)
        for k, v in params.items():
            self[k] = v


def _spec(codec: Union[str, int, CodecSpec]) -> CodecSpec:
    return codec if isinstance(codec, CodecSpec) else CodecSpec(codec)


def tag(tensor: int, step: int) -> int:
    """The frame tag GW_TAG(tensor, step) handles write."""
    return _n.tag(tensor, step)


# A one-shot call (encode, contraction) passes its spec and context straight
# to C and keeps neither, so these may be shared: building a CodecSpec from a
# name and an EncodeContext were 3.5 and 1.3 us of a call's 7 us. A shared
# object is never handed to a caller, which could change it.
_NAMED_SPECS: Dict[Union[str, int], CodecSpec] = {}
_ZERO_CTX = _n.EncodeContext()


def _call_spec(codec: Union[str, int, CodecSpec]) -> CodecSpec:
    if not isinstance(codec, (str, int)):
        return _spec(codec)  # a CodecSpec, or whatever error CodecSpec() gives
    spec = _NAMED_SPECS.get(codec)
    if spec is None:
        spec = CodecSpec(codec)  # raises on a bad name, which is then not kept
        if len(_NAMED_SPECS) < 256:
            _NAMED_SPECS[codec] = spec
    return spec


def _ctx(seed: int, step: int, tensor: int, tag: int) -> Any:
    if not (seed or step or tensor or tag):
        return _ZERO_CTX
    c = _n.EncodeContext()
    c.seed, c.step, c.tensor, c.tag = seed, step, tensor, tag
    return c


def encode(codec: Union[str, CodecSpec], x: Any, *, dtype: Any = None, seed: int = 0,
           step: int = 0, tensor: int = 0, tag: int = 0, out: Any = None) -> Union[bytes, int]:
    """Compress x into one frame: returns bytes, or the bytes written into `out`."""
    spec = _call_spec(codec)
    buf, dt = tensor_in(x, dtype, "x")
    ctx = _ctx(seed, step, tensor, tag)
    if out is None:
        return _n.encode(spec, ctx, buf, dt)
    return _n.encode_into(spec, ctx, buf, dt, bytes_out(out, "out"))


def inspect(frame: Any) -> FrameInfo:
    """Validate a whole frame (nothing is decoded) and describe it."""
    return _n.frame_inspect(bytes_in(frame, "frame"))


def frame_size(header: Any) -> int:
    """Size of the frame that starts with `header` (>= 40 bytes of it)."""
    return _n.frame_size(bytes_in(header, "header"))


# A sparse frame of a few dozen bytes may claim billions of elements, so an
# output sized from an untrusted header is capped unless the caller says otherwise.
DEFAULT_MAX_ELEMENTS = 1 << 26


def _claimed_count(frame: Any) -> int:
    """The element count a frame's header claims (docs/wire-format.md), or the
    frame's own error if it has no readable header."""
    b = memoryview(frame).cast("B")
    if len(b) >= 24 and bytes(b[:4]) == b"GWFR" and b[4] in (1, 2):
        return int.from_bytes(b[8:16] if b[4] == 1 else b[16:24], "little")
    return _n.frame_inspect(frame).count


def decode(frame: Any, out: Any = None, *,
           max_elements: Optional[int] = DEFAULT_MAX_ELEMENTS) -> np.ndarray:
    """Decode a frame into float32 (a new array, or `out`).

    Without `out`, the new array's length comes from the frame's header, so a
    frame claiming more than `max_elements` elements (default 2**26, 256 MiB of
    float32) raises ValueError before anything is allocated. Pass `out=` (its
    size is the limit) or a larger `max_elements` (None: no limit) for frames
    you trust to be that large. If it raises, `out` holds unspecified values."""
    frame = bytes_in(frame, "frame")
    # With out= the header's claim sizes the check (gw_decode validates the
    # whole frame; out is scratch until it returns); a new array waits for a
    # full inspection, so nothing is allocated for a frame that is not valid.
    n = _claimed_count(frame) if out is not None else _n.frame_inspect(frame).count
    if out is None and max_elements is not None and n > max_elements:
        raise ValueError(f"decode: the frame claims {n} elements, more than max_elements="
                         f"{max_elements}; pass out= or a larger max_elements to decode it")
    arr = out_array(out, n, np.float32, "out")
    _n.decode_into(frame, arr)
    return arr if out is None else out


def decode_accumulate(frame: Any, acc: Any, alpha: float = 1.0) -> None:
    """acc += alpha * decoded, in place, with no temporary."""
    _n.decode_accumulate(bytes_in(frame, "frame"), alpha, _writable_f32(acc, "acc"))


def decode_accumulate_many(frames: Any, acc: Any, alpha: float = 1.0) -> None:
    """acc += alpha * decoded for every frame in order: the bits of decode_accumulate on
    each in turn, but all frames are checked before acc changes (the error names the
    rejected frame) and sign / scaled-sign / fp16 / bf16 / identity frames are summed
    tile by tile, so acc is read and written once for all of them."""
    views = [bytes_in(f, f"frames[{i}]") for i, f in enumerate(frames)]
    _n.decode_accumulate_many(views, alpha, _writable_f32(acc, "acc"))


def _writable_f32(x: Any, what: str) -> np.ndarray:
    if type(x) is np.ndarray and x.dtype == np.float32:  # the common case, first (per-call cost)
        return x
    from ._buffers import _is_tensor, _tensor_view
    if _is_tensor(x):
        x = _tensor_view(x, what)
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise TypeError(f"{what}: must be a float32 numpy array or torch tensor")
    return x


def shard_range(total: int, parts: int, index: int) -> range:
    """Slice `index` of `total` elements cut into `parts` (gw_shard_range)."""
    r = _n.shard_range(total, parts, index)
    return range(r.offset, r.offset + r.length)


def scaled_sign_phi(x: Any, block_size: int = 0) -> float:
    """scaled_sign's contraction diagnostic: min over blocks of ||x_b||_1^2 / (d_b ||x_b||_2^2),
    blocks of block_size (0: the codec's default); all-zero blocks count as 1."""
    return _n.scaled_sign_phi(f32_in(x, "x"), block_size)


def contraction(codec: Union[str, CodecSpec], x: Any, *, seed: int = 0, step: int = 0,
                tensor: int = 0) -> float:
    """||x - C(x)||^2 / ||x||^2 of any codec on x."""
    return _n.codec_contraction(_call_spec(codec), _ctx(seed, step, tensor, 0), f32_in(x, "x"))


def compression_ratio(frame: Any) -> float:
    """4 * count / frame bytes of a valid frame: float32 size over frame size."""
    return _n.frame_compression_ratio(bytes_in(frame, "frame"))


def crc32c(data: Any) -> int:
    """CRC-32C (Castagnoli) of a bytes-like object, as frames and checkpoints use."""
    return _n.crc32c(bytes_in(data, "data"))


def randk_indices(seed: int, step: int, tensor: int, n: int, k: int,
                  revision: int = 2) -> np.ndarray:
    """The positions random-k frames of that rule revision hold (gw_randk_positions:
    2, the codec's default, stratified; 1, the first rule)."""
    idx = np.empty(k, np.uint32)
    _n.randk_positions(revision, seed, step, tensor, n, idx)
    return idx


def reshard(blobs: Sequence[Any], ranks: Sequence[int], offsets: Optional[Sequence[int]] = None,
            *, workers_in: int, workers_out: int, rank: int, offset: int = 0,
            length: int) -> bytes:
    """The checkpoint of new worker `rank` of `workers_out`, holding elements
    [offset, offset + length) of the tensor, from blobs saved by `workers_in`
    workers (gw_reshard; docs/algorithms.md s.9): blobs[i] was saved by old
    worker ranks[i] and holds the tensor from offsets[i] (default 0). Worker
    residuals and momenta, LAGS residuals and CLT-k memories become the mean
    over the old workers, server residuals are cut and joined; at
    workers_out == workers_in it is rank's own state. b"" for a new AsyLPG
    worker: it starts from a fresh handle."""
    views = [bytes_in(b, f"blobs[{i}]") for i, b in enumerate(blobs)]
    r = np.asarray(list(ranks), dtype=np.uint32)
    o = np.asarray([0] * len(views) if offsets is None else list(offsets), dtype=np.uint64)
    return _n.reshard(views, r, o, workers_in, workers_out, rank, offset, length)


def gather(x: Any, idx: Any) -> np.ndarray:
    """x[idx] as a new float32 array (idx: uint32 positions)."""
    idx = u32_in(idx, "idx")
    out = np.empty(idx.size, np.float32)
    _n.gather(f32_in(x, "x"), idx, out)
    return out


def scatter_add(values: Any, idx: Any, acc: Any, alpha: float = 1.0) -> None:
    """acc[idx] += alpha * values, in place (acc: float32 array or tensor)."""
    _n.scatter_add(f32_in(values, "values"), u32_in(idx, "idx"), alpha,
                   _writable_f32(acc, "acc"))


def ef_cast(x: Any, e: Any, out: Any, alpha: float = 1.0, *, dtype: Any = None) -> int:
    """One pass of a 16-bit all-reduce with error feedback (gw_ef_cast), in place:
    y = e + alpha * x in float32, out = y as float16 or bfloat16 (rounded to nearest
    even, saturated at the format's largest finite value), e = y - out, so out + e is
    what came in. x, e: float32; out: a float16 or bfloat16 tensor, a float16 array, or
    a uint16 array with dtype="bf16". Returns how many y were NaN or Inf (they go out
    as they are and leave their e). The GIL is released while it runs."""
    from ._buffers import _is_tensor, _tensor_view
    code = None if dtype is None else dtype_code(dtype)
    if _is_tensor(out):
        own = dtype_code(out.dtype)
        if code is not None and code != own:
            raise TypeError(f"out: holds {out.dtype} but dtype={dtype!r} was given")
        code = own
        out = _tensor_view(out, "out")
    elif isinstance(out, np.ndarray):
        if out.dtype == np.float16:
            code = code if code is not None else _n.GW_DTYPE_F16
        elif out.dtype not in (np.uint16, np.int16) or code is None:
            raise TypeError("out: a float16 array, or 16-bit integers with dtype='bf16'")
    else:
        raise TypeError(f"out: expected a numpy array or torch CPU tensor, got "
                        f"{type(out).__name__}")
    if code not in (_n.GW_DTYPE_F16, _n.GW_DTYPE_BF16):
        raise TypeError("out: ef_cast writes float16 or bfloat16")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out: must be a writable C-contiguous array")
    return _n.ef_cast(f32_in(x, "x"), alpha, _writable_f32(e, "e"), code, out)


def index_frame_indices(frame: Any) -> np.ndarray:
    """The positions an index frame (codec "index", CLT-k's leader) holds, as uint32."""
    frame = bytes_in(frame, "frame")
    idx = np.empty(_n.index_frame_count(frame), np.uint32)
    _n.index_frame_indices(frame, idx)
    return idx


def index_overlap(a: Any, b: Any) -> float:
    """|a & b| / max(|a|, |b|) of two increasing uint32 index sets (1 when both are empty):
    CLT-k's overlap with the true top-k."""
    return _n.index_overlap(u32_in(a, "a"), u32_in(b, "b"))


def bundle_frames(bundle: Any):
    """[(layer, offset, size), ...] of a validated fusion bundle."""
    flat = _n.bundle_frames(bytes_in(bundle, "bundle"))
    return [tuple(flat[i:i + 3]) for i in range(0, len(flat), 3)]


class _Owner:
    """Context manager, close() and repr for every native handle (the
    constructor keeps its arguments in self._args)."""

    def close(self) -> None:
        """Free the native state now (later calls raise GradwireError)."""
        super().close()  # type: ignore[misc]

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._args.items())
        return f"{type(self).__name__}({args})"

    # The shapes the handles' calls share: a copy of one of the handle's
    # n-vectors (into out, or a new array), and a frame as bytes or into out.
    def _vector(self, get, *args: Any, out: Any = None) -> np.ndarray:
        arr = out_array(out, self.size(), np.float32, "out")  # type: ignore[attr-defined]
        get(self, *args, arr)
        return arr

    def _frame(self, make, make_into, *args: Any, out: Any = None) -> Union[bytes, int]:
        if out is None:
            return make(self, *args)
        return make_into(self, *args, bytes_out(out, "out"))


class _Handle(_Owner):
    """A state machine: checkpoints, and pickling through them."""

    def save(self) -> bytes:
        """A checkpoint of the whole state (restores bit-identically)."""
        return super().save()  # type: ignore[misc]

    def load(self, blob: Any) -> None:
        """Restore a checkpoint taken from a handle with the same configuration."""
        super().load(bytes_in(blob, "blob"))  # type: ignore[misc]

    # Pickling: the constructor arguments plus the checkpoint.
    def __reduce__(self):
        return (_restore, (type(self), self._args, self.save()))


def _restore(cls, args, blob):
    h = cls(**args)
    h.load(blob)
    return h


def _member(kind: Any, what: str, value: Union[str, int]) -> int:
    """The enum value `value` names ("nesterov"), or ValueError listing the names."""
    if not isinstance(value, str):
        return int(value)
    try:
        return int(kind[value.upper()])
    except KeyError:
        names = ", ".join(repr(m.name.lower()) for m in sorted(kind))
        raise ValueError(f"{what}={value!r}: not one of {names}") from None


def _momentum(m: Union[str, int]) -> int:
    return _member(Momentum, "momentum", m)


class Worker(_Handle, _n.Worker):
    """Worker error feedback (dist-EF-SGD / dist-EF-blockSGDM / signum) for one tensor."""

    def __init__(self, n: int, codec: Union[str, CodecSpec], *, momentum: Union[str, int] =
                 "nesterov", mu: float = 0.9, error_feedback: bool = True, tensor: int = 0,
                 seed: int = 0) -> None:
        spec = _spec(codec)
        self._args = dict(n=n, codec=spec, momentum=momentum, mu=mu,
                          error_feedback=error_feedback, tensor=tensor, seed=seed)
        mom = _momentum(momentum)
        try:
            _n.Worker.__init__(self, n, spec, mom, mu, error_feedback, tensor, seed)
        except (GradwireError, OverflowError) as e:
            _explain(e, "Worker", [_in("n", n, 1, _MAX_ELEMENTS), _in("mu", mu, 0.0, 1.0, True)])

    def step(self, grad: Any, lr: float = 1.0, *, dtype: Any = None,
             out: Any = None) -> Union[bytes, int]:
        """Momentum + residual + compression of grad: the frame (or bytes written to out)."""
        buf, dt = tensor_in(grad, dtype)
        return self._frame(_n.Worker.step, _n.Worker.step_into, buf, dt, lr, out=out)

    def residual(self, out: Any = None) -> np.ndarray:
        """The error-feedback residual e (float32, n; a new array or `out`)."""
        return self._vector(_n.Worker.residual, out=out)

    def momentum(self, out: Any = None) -> np.ndarray:
        """The momentum buffer (float32, n; a new array or `out`)."""
        return self._vector(_n.Worker.momentum, out=out)


class Server(_Handle, _n.Server):
    """Server error feedback over [offset, offset+length) of a tensor (two-way compression)."""

    def __init__(self, total: int, num_workers: int, broadcast: Union[str, CodecSpec], *,
                 expect: Optional[Union[str, CodecSpec]] = None, offset: int = 0,
                 length: Optional[int] = None, error_feedback: bool = True, tensor: int = 0,
                 check_tag: bool = True) -> None:
        b = _spec(broadcast)
        e = None if expect is None else _spec(expect)
        self._args = dict(total=total, num_workers=num_workers, broadcast=b, expect=e,
                          offset=offset, length=length, error_feedback=error_feedback,
                          tensor=tensor, check_tag=check_tag)
        try:
            _n.Server.__init__(self, total, num_workers, b, e, offset,
                               (1 << 64) - 1 if length is None else length, error_feedback, tensor,
                               check_tag)
        except (GradwireError, OverflowError) as err:
            ln = total - offset if length is None else length
            _explain(err, "Server", [
                _in("total", total, 0, _MAX_ELEMENTS), _in("num_workers", num_workers, 1, 2**32 - 1),
                _in("offset", offset, 0, total),
                (offset + ln > total, f"offset + length = {offset} + {ln} is more than total={total}"),
                (ln < 0, f"length={ln} is negative")])

    def push(self, frame: Any) -> None:
        """Add one worker's frame to the round (at most num_workers per round); a rejected
        frame changes nothing."""
        _n.Server.push(self, bytes_in(frame, "frame"))

    def step(self, lr: float = 1.0, *, out: Any = None) -> Union[bytes, int]:
        """Average the round's frames with the residual and compress: the broadcast frame
        (or bytes written to out); the next round starts."""
        return self._frame(_n.Server.step, _n.Server.step_into, lr, out=out)

    def round(self, frames: Any, lr: float = 1.0, *, out: Any = None) -> Union[bytes, int]:
        """All M frames of a round, then the step, in one tiled call: the same frame
        as pushing each and stepping; a rejected round changes nothing."""
        views = [bytes_in(f, f"frames[{i}]") for i, f in enumerate(frames)]
        return self._frame(_n.Server.round, _n.Server.round_into, views, lr, out=out)

    def residual(self, out: Any = None) -> np.ndarray:
        """The server's residual e_s over its slice (float32; a new array or `out`)."""
        return self._vector(_n.Server.residual, out=out)


class Cltk(_Handle, _n.Cltk):
    """ScaleCom's CLT-k for one tensor on one worker (begin/select/extract/apply)."""

    def __init__(self, n: int, num_workers: int, rank: int, index: Union[str, CodecSpec] =
                 "index", *, beta: float = 1.0, warmup_steps: int = 0, tensor: int = 0) -> None:
        spec = _spec(index)
        self._args = dict(n=n, num_workers=num_workers, rank=rank, index=spec, beta=beta,
                          warmup_steps=warmup_steps, tensor=tensor)
        try:
            _n.Cltk.__init__(self, n, num_workers, rank, spec, beta, warmup_steps, tensor)
        except (GradwireError, OverflowError) as e:
            _explain(e, "Cltk", [
                _in("n", n, 1, _MAX_ELEMENTS), _in("num_workers", num_workers, 1, 2**32 - 1),
                (not 0 <= rank < num_workers,
                 f"rank={rank!r} is out of range: rank must be in [0, num_workers={num_workers})"),
                (not 0.0 < beta <= 1.0, f"beta={beta!r} is out of range: beta must be in (0, 1]"),
                _in("warmup_steps", warmup_steps, 0, 2**64 - 1)])

    def begin(self, grad: Any, lr: float = 1.0, *, dtype: Any = None) -> None:
        """Start a round: a = memory + lr * grad (n elements, float32/f16/bf16)."""
        buf, dt = tensor_in(grad, dtype)
        _n.Cltk.begin(self, buf, dt, lr)

    def select(self, *, out: Any = None) -> Union[bytes, int]:
        """The leader only, once per round before extract: the index frame of its chunk-wise
        top-k of a (bytes, or the bytes written to out), for the transport to broadcast."""
        return self._frame(_n.Cltk.select, _n.Cltk.select_into, out=out)

    def extract(self, frame: Any = None, out: Any = None) -> np.ndarray:
        """Values at the leader's indices (all n in a dense round), for a sum all-reduce."""
        frame = None if frame is None else bytes_in(frame, "frame")
        if out is None:
            buf = np.empty(self.values_bound(), np.float32)
            return buf[:_n.Cltk.extract(self, frame, buf)]
        arr = _writable_f32(out, "out")
        _n.Cltk.extract(self, frame, arr)
        return out

    def apply(self, summed: Any, x: Any = None) -> None:
        """End the round with the sum over workers of their extract(): x[I] -= summed / M
        when x (float32, n) is given, and memory = (1 - beta) memory + beta (a - sent)."""
        _n.Cltk.apply(self, f32_in(summed, "summed"), None if x is None else _writable_f32(x, "x"))

    def memory(self, out: Any = None) -> np.ndarray:
        """The error-feedback memory (float32, n; a new array or `out`)."""
        return self._vector(_n.Cltk.memory, out=out)

    def indices(self) -> np.ndarray:
        """The positions of the last extracted round, increasing (uint32; 0..n-1 when dense)."""
        buf = np.empty(self.values_bound(), np.uint32)
        return buf[:_n.Cltk.indices(self, buf)]


class LagsLayer(_Handle, _n.LagsLayer):
    """LAGS-SGD's per-layer state: acc = eps + lr g; frame = TopK(acc, k_l); eps = acc - sent."""

    def __init__(self, n: int, codec: Union[str, CodecSpec] = "topk", *, tensor: int = 0,
                 seed: int = 0) -> None:
        spec = _spec(codec)
        self._args = dict(n=n, codec=spec, tensor=tensor, seed=seed)
        try:
            _n.LagsLayer.__init__(self, n, spec, tensor, seed)
        except (GradwireError, OverflowError) as e:
            _explain(e, "LagsLayer", [_in("n", n, 1, _MAX_ELEMENTS)])

    def step(self, grad: Any, lr: float = 1.0, *, dtype: Any = None,
             out: Any = None) -> Union[bytes, int]:
        """acc = eps + lr * grad; the frame of TopK(acc, k) (bytes, or bytes written to
        out); eps = acc - sent."""
        buf, dt = tensor_in(grad, dtype)
        return self._frame(_n.LagsLayer.step, _n.LagsLayer.step_into, buf, dt, lr, out=out)

    def step_dense(self, grad: Any, lr: float = 1.0, *, dtype: Any = None,
                   out: Any = None) -> np.ndarray:
        """A step the plan sends dense: acc = eps + lr * grad as float32 (a new array or
        `out`) for a sum all-reduce; eps = 0."""
        buf, dt = tensor_in(grad, dtype)
        return self._vector(_n.LagsLayer.step_dense, buf, dt, lr, out=out)

    def residual(self, out: Any = None) -> np.ndarray:
        """The residual eps (float32, n; a new array or `out`)."""
        return self._vector(_n.LagsLayer.residual, out=out)


class AsylpgMaster(_Handle, _n.AsylpgMaster):
    """The AsyLPG family's master (docs/algorithms.md s.6): snapshot, full
    gradient, prox step, epochs; model frames with the mu-condition's b_x;
    gradient frames accepted up to tau versions old.

    variant: "plain" (AsyLPG, Sparse-AsyLPG) or "acc" (Acc-AsyLPG);
    bits=(b_min, b_max) the model quantizer's range, (0, 0) for full precision.
    """

    def __init__(self, x0: Any, *, lr: float, epoch_length: int, variant: Union[str, int] = "plain",
                 l1: float = 0.0, l2: float = 0.0, tau: int = 0, mu: float = 1.0,
                 bits: Any = (8, 8), model_block: int = 0, tensor: int = 0, seed: int = 0) -> None:
        x0 = np.ascontiguousarray(f32_in(x0, "x0"))
        v = _member(AsylpgVariant, "variant", variant)
        b_min, b_max = bits
        self._args = dict(x0=x0.copy(), lr=lr, epoch_length=epoch_length, variant=v, l1=l1, l2=l2,
                          tau=tau, mu=mu, bits=(b_min, b_max), model_block=model_block,
                          tensor=tensor, seed=seed)
        _n.AsylpgMaster.__init__(self, x0, v, lr, l1, l2, epoch_length, tau, mu, b_min, b_max,
                                 model_block, tensor, seed)

    def snapshot(self, out: Any = None) -> np.ndarray:
        """The epoch's snapshot point (float32, n; a new array or `out`)."""
        return self._vector(_n.AsylpgMaster.snapshot, out=out)

    def begin_epoch(self, full_grad: Any) -> None:
        """Start an epoch with the full gradient at the snapshot (float32, n)."""
        _n.AsylpgMaster.begin_epoch(self, f32_in(full_grad, "full_grad"))

    def model(self, *, out: Any = None) -> Union[bytes, int]:
        """The model frame (b_x of it: last_bits(); 0 = unchanged, 32 = full precision)."""
        return self._frame(_n.AsylpgMaster.model, _n.AsylpgMaster.model_into, out=out)

    def push(self, frame: Any) -> None:
        """Apply one worker's gradient frame (count n, this tensor; refused when more than tau
        versions old); the epoch ends after epoch_length accepted frames."""
        _n.AsylpgMaster.push(self, bytes_in(frame, "frame"))

    def params(self, out: Any = None) -> np.ndarray:
        """The current parameters x (float32, n; a new array or `out`)."""
        return self._vector(_n.AsylpgMaster.params, out=out)

    def progress(self) -> Dict[str, int]:
        """{epoch, inner, version, running}: where the master is."""
        e, i, v, r = _n.AsylpgMaster.progress(self)
        return dict(epoch=e, inner=i, version=v, running=bool(r))

    def __repr__(self) -> str:
        a = self._args
        return (f"AsylpgMaster(n={a['x0'].size}, variant={AsylpgVariant(a['variant']).name.lower()!r}, "
                f"lr={a['lr']}, epoch_length={a['epoch_length']}, tau={a['tau']}, mu={a['mu']}, "
                f"bits={a['bits']})")


class AsylpgWorker(_Handle, _n.AsylpgWorker):
    """An AsyLPG worker: snapshot, model frames in, quantized gradient
    differences out (codec "quant" for AsyLPG, "sparse_quant" for
    Sparse-AsyLPG, "identity" for full precision). Give each worker its own seed."""

    def __init__(self, n: int, codec: Union[str, CodecSpec] = "quant", *, tensor: int = 0,
                 seed: int = 0) -> None:
        spec = _spec(codec)
        self._args = dict(n=n, codec=spec, tensor=tensor, seed=seed)
        try:
            _n.AsylpgWorker.__init__(self, n, spec, tensor, seed)
        except (GradwireError, OverflowError) as e:
            _explain(e, "AsylpgWorker", [_in("n", n, 1, _MAX_ELEMENTS)])

    def set_snapshot(self, snapshot: Any) -> None:
        """The epoch's snapshot (float32, n), as the master's snapshot() gives it."""
        _n.AsylpgWorker.set_snapshot(self, f32_in(snapshot, "snapshot"))

    def receive(self, frame: Any) -> None:
        """Take a model frame from the master (AsylpgMaster.model)."""
        _n.AsylpgWorker.receive(self, bytes_in(frame, "frame"))

    def model(self, out: Any = None) -> np.ndarray:
        """The model to compute the next gradient at (its version: .version)."""
        arr = out_array(out, self.size(), np.float32, "out")
        self.version = _n.AsylpgWorker.model(self, arr)
        return arr

    def step(self, grad_model: Any, grad_snapshot: Any, *, dtype: Any = None,
             out: Any = None) -> Union[bytes, int]:
        """The quantized gradient difference grad_model - grad_snapshot as a frame (bytes,
        or bytes written to out); both of one dtype, n elements."""
        gm, dt = tensor_in(grad_model, dtype)
        gs, dt2 = tensor_in(grad_snapshot, dtype, "grad_snapshot")
        if dt != dt2:
            raise TypeError("grad_model and grad_snapshot must have the same dtype")
        return self._frame(_n.AsylpgWorker.step, _n.AsylpgWorker.step_into, gm, gs, dt, out=out)


class Fusion(_Owner, _n.Fusion):
    """Merges small layers' frames into one bundle per iteration (LAGS's fusion buffer)."""

    def __init__(self, layers: int, capacity: int = 1 << 16) -> None:
        self._args = dict(layers=layers, capacity=capacity)
        try:
            _n.Fusion.__init__(self, layers, capacity)
        except (GradwireError, OverflowError) as e:
            _explain(e, "Fusion", [_in("layers", layers, 1, 65536)])  # GW_FUSION_MAX_LAYERS

    def add(self, layer: int, frame: Any) -> bool:
        """Copy a valid frame in as layer `layer` (once per iteration): True when the bundle
        should go out now (capacity reached, or every layer is in)."""
        return _n.Fusion.add(self, layer, bytes_in(frame, "frame"))


# Docstrings of the calls the classes inherit from the SWIG layer as they are.
_INTO = ("The form of {0}(..., out=) for a writable buffer: writes the frame into it and "
         "returns the bytes written.")
_NATIVE_DOCS = {
    "*": dict(
        size="The number of elements the handle works on (n; a server's slice length).",
        frame_bound="Size in bytes of the largest frame a step writes (to size out= buffers).",
        step_count="The number of steps (rounds) taken so far."),
    "Worker": dict(step_into=_INTO.format("step")),
    "Server": dict(step_into=_INTO.format("step"), round_into=_INTO.format("round"),
                   reset_round="Drop the pushes of the current round (after a transport "
                               "failure, say); the residual is untouched."),
    "Cltk": dict(
        index_frame_bound="Size in bytes of the largest index frame select writes.",
        values_bound="The most values extract gives, in floats (k; n with warm-up rounds).",
        leader="The rank that selects this round (step mod M, or set_leader's); "
               "gwnative.GW_CLTK_NO_LEADER in a dense warm-up round.",
        set_leader="Fix the leader (a rank < M) from the next round on, or "
                   "gwnative.GW_CLTK_CYCLIC; every worker makes the same call, between rounds.",
        reset_round="Abandon the round in progress (after a transport failure, say).",
        select_into=_INTO.format("select")),
    "LagsLayer": dict(
        frame_bound="Size in bytes of the largest frame a step writes, for any k up to n.",
        k="k_l: how many elements a step sends.",
        set_k="Send k (1..n) elements from the next step on (LAGS's adaptive ratio).",
        step_into=_INTO.format("step")),
    "AsylpgMaster": dict(
        frame_bound="Size in bytes of the largest model frame.",
        last_bits="b_x of the last model frame: its bits per element, 0 when unchanged, 32 "
                  "at full precision.",
        model_into=_INTO.format("model")),
    "AsylpgWorker": dict(frame_bound="Size in bytes of the largest gradient frame.",
                         step_into=_INTO.format("step")),
    "Fusion": dict(
        bundle_size="Bytes the next flush writes.",
        pending="The number of frames waiting in the buffer.",
        flush="The pending frames as one bundle (bytes, ordered by layer); the buffer empties "
              "and, after the iteration's last layer, the next iteration begins.",
        flush_into=_INTO.format("flush")),
    "CodecSpec": dict(
        codec="The codec's id (a Codec value).",
        encode_bound="Size in bytes of the largest frame this spec writes for n elements.",
        equals="True when other names the same codec with the same parameters (also ==).",
        get="The raw int64 value of parameter id p (spec[name] is the checked form).",
        get_f32="The value of float parameter id p (threshold, budget).",
        set="Set integer parameter id p, checked against the codec's bounds (spec[name] = v "
            "says which bound was broken).",
        set_f32="Set float parameter id p (finite, >= 0).",
        get_link="The link's speed in bits per second, 0 = unknown (spec.link_bps).",
        set_link="Set the link's speed in bits per second (spec.link_bps = bps is the checked "
                 "form)."),
}
for _cls in (Worker, Server, Cltk, LagsLayer, AsylpgMaster, AsylpgWorker, Fusion, CodecSpec):
    _docs = {**_NATIVE_DOCS["*"], **_NATIVE_DOCS[_cls.__name__]}
    for _name, _doc in _docs.items():
        _f = getattr(_cls, _name, None)
        if _f is not None and not _f.__doc__:
            _f.__doc__ = _doc
del _cls, _docs, _name, _doc, _f
