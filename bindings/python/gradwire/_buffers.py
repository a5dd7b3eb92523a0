"""Turning what Python users hold (numpy arrays, torch CPU tensors, bytes-like
objects) into the zero-copy buffers the native layer borrows, with the dtype,
device, contiguity and length checks done here so mistakes raise clear
exceptions instead of reaching C."""

from __future__ import annotations

import sys
from typing import Any, Tuple

import numpy as np

from . import gwnative as _n

F32, F16, BF16 = _n.GW_DTYPE_F32, _n.GW_DTYPE_F16, _n.GW_DTYPE_BF16
_DTYPE_NAMES = {"f32": F32, "float32": F32, "f16": F16, "float16": F16, "bf16": BF16,
                "bfloat16": BF16}


def _torch():
    return sys.modules.get("torch")  # never import torch just to check a type


def _is_tensor(x: Any) -> bool:
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


def dtype_code(dtype: Any) -> int:
    """A gw dtype from 'f32'/'f16'/'bf16', a numpy or torch dtype, or the code."""
    if isinstance(dtype, str):
        try:
            return _DTYPE_NAMES[dtype.lower()]
        except KeyError:
            raise ValueError(f"unknown dtype {dtype!r}: use f32, f16 or bf16") from None
    if isinstance(dtype, int):
        if dtype in (F32, F16, BF16):
            return dtype
        raise ValueError(f"unknown dtype code {dtype}")
    t = _torch()
    if t is not None and isinstance(dtype, t.dtype):
        m = {t.float32: F32, t.float16: F16, t.bfloat16: BF16}
        if dtype in m:
            return m[dtype]
        raise TypeError(f"gradients must be float32, float16 or bfloat16, not {dtype}")
    nd = np.dtype(dtype)
    if nd == np.float32:
        return F32
    if nd == np.float16:
        return F16
    raise TypeError(f"gradients must be float32, float16 or bfloat16, not {nd}")


def _tensor_view(x: Any, what: str) -> np.ndarray:
    """A numpy view sharing a torch CPU tensor's memory."""
    if x.device.type != "cpu":
        raise ValueError(f"{what}: tensor is on {x.device}; gradwire works on CPU memory")
    if not x.is_contiguous():
        raise ValueError(f"{what}: tensor is not contiguous (call .contiguous())")
    x = x.detach()
    if x.dtype == _torch().bfloat16:
        return x.view(_torch().int16).numpy()  # numpy has no bfloat16: same bits
    return x.numpy()


def tensor_in(x: Any, dtype: Any = None, what: str = "grad") -> Tuple[Any, int]:
    """(buffer, gw dtype) for a gradient-like input, zero copy.

    numpy float32/float16 and torch float32/float16/bfloat16 carry their own
    dtype; raw bytes-like objects (and uint16 arrays for bfloat16) need
    `dtype`. A given `dtype` must agree with the array's own.
    """
    if _is_tensor(x):
        own = dtype_code(x.dtype)
        x = _tensor_view(x, what)
    elif isinstance(x, np.ndarray):
        if x.dtype in (np.float32, np.float16):
            own = dtype_code(x.dtype)
        elif x.dtype in (np.uint16, np.int16, np.uint8, np.int8):
            own = None
        else:
            raise TypeError(f"{what}: arrays must be float32 or float16 (or uint16 bits with "
                            f"dtype='bf16'), not {x.dtype}")
        if not x.flags.c_contiguous:
            raise ValueError(f"{what}: array is not C-contiguous (use np.ascontiguousarray)")
    elif isinstance(x, (bytes, bytearray, memoryview)):
        own = None
    else:
        raise TypeError(f"{what}: expected a numpy array, a torch CPU tensor or a bytes-like "
                        f"object, got {type(x).__name__}")
    if dtype is None:
        if own is None:
            raise TypeError(f"{what}: give dtype= for raw bytes or integer arrays")
        return x, own
    code = dtype_code(dtype)
    if own is not None and own != code:
        raise TypeError(f"{what}: holds {_name(own)} but dtype={_name(code)} was given")
    return x, code


def _name(code: int) -> str:
    return {F32: "float32", F16: "float16", BF16: "bfloat16"}[code]


def out_array(out: Any, n: int, np_dtype: Any, what: str) -> np.ndarray:
    """A writable numpy view of `out` (numpy array or torch CPU tensor) of n
    elements of np_dtype, or a new array when out is None."""
    if out is None:
        return np.empty(n, dtype=np_dtype)
    if _is_tensor(out):
        out = _tensor_view(out, what)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{what}: expected a numpy array or torch CPU tensor, got "
                        f"{type(out).__name__}")
    if out.dtype != np.dtype(np_dtype):
        raise TypeError(f"{what}: must be {np.dtype(np_dtype)}, not {out.dtype}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{what}: must be a writable C-contiguous array")
    if out.size != n:
        raise ValueError(f"{what}: holds {out.size} elements, {n} needed")
    return out.reshape(-1)


def vector_in(x: Any, np_dtype: Any, what: str) -> np.ndarray:
    """An input vector of np_dtype (numpy array or torch CPU tensor) as a
    contiguous numpy view, never a copy."""
    if _is_tensor(x):
        x = _tensor_view(x, what)
    x = np.asarray(x)
    if x.dtype != np.dtype(np_dtype):
        raise TypeError(f"{what}: must be {np.dtype(np_dtype)}, not {x.dtype}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{what}: array is not C-contiguous")
    return x.reshape(-1)


def f32_in(x: Any, what: str) -> np.ndarray:
    return vector_in(x, np.float32, what)


def u32_in(x: Any, what: str) -> np.ndarray:
    return vector_in(x, np.uint32, what)


def bytes_in(x: Any, what: str) -> Any:
    """A frame/blob: any C-contiguous bytes-like object or uint8 array/tensor."""
    if _is_tensor(x):
        x = _tensor_view(x, what)
    if isinstance(x, np.ndarray):
        if x.dtype not in (np.uint8, np.int8):
            raise TypeError(f"{what}: frames are bytes (uint8), not {x.dtype}")
        if not x.flags.c_contiguous:
            raise ValueError(f"{what}: array is not C-contiguous")
    return x


def bytes_out(x: Any, what: str) -> Any:
    if _is_tensor(x):
        x = _tensor_view(x, what)
    return x
