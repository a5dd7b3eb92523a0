"""The package's surface: a clean namespace, docstrings on every public call,
errors that name the argument and its range, py.typed, and the torch extras'
ImportError (docs/python.md)."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import gradwire as gw


def test_namespace_is_the_public_api():
    names = dir(gw)
    for internal in ("Any", "Dict", "Optional", "Union", "Sequence", "np", "enum", "numbers",
                     "annotations", "bytes_in", "bytes_out", "f32_in", "u32_in", "tensor_in",
                     "out_array", "dtype_code", "gwnative"):
        assert internal not in names, internal
    assert not [n for n in names if n.startswith("_") and not n.startswith("__")]
    assert set(gw.__all__) <= set(names)
    for n in gw.__all__:
        assert getattr(gw, n) is not None
    # Every gw.<name> the docs and the tests use is still there.
    for n in ("CodecSpec", "Worker", "Server", "Cltk", "LagsLayer", "Fusion", "AsylpgMaster",
              "AsylpgWorker", "encode", "decode", "decode_accumulate", "decode_accumulate_many",
              "inspect", "shard_range", "reshard", "randk_indices", "index_frame_indices",
              "crc32c", "codecs", "gather", "scatter_add", "compression_ratio", "bundle_frames",
              "Status", "DType", "Codec", "GradwireError"):
        assert n in gw.__all__, n
    assert gw.gwnative.GW_CLTK_NO_LEADER is not None  # reachable, just not listed


def _public_callables():
    for name in gw.__all__:
        obj = getattr(gw, name)
        if callable(obj):
            yield name, obj
        if inspect.isclass(obj):
            for m in dir(obj):
                if m.startswith("_"):
                    continue
                attr = inspect.getattr_static(obj, m)
                if isinstance(attr, property) or callable(getattr(obj, m)):
                    yield f"{name}.{m}", getattr(obj, m) if not isinstance(attr, property) else attr


def test_every_public_call_has_a_docstring():
    missing = [n for n, f in _public_callables()
               if not (f.__doc__ or "").strip() or f.__doc__ == "The membership flag"]
    missing = [n for n in missing if not n.endswith(".thisown")]
    assert not missing, missing
    for n in ("Server.push", "Server.step", "Cltk.begin", "Cltk.select", "Cltk.extract",
              "Cltk.apply", "Cltk.leader", "Cltk.indices", "Worker.step_count", "Fusion.flush"):
        obj = gw
        for part in n.split("."):
            obj = getattr(obj, part)
        assert len(obj.__doc__.split()) >= 4, n


def test_py_typed_ships_with_the_package():
    assert os.path.isfile(os.path.join(os.path.dirname(gw.__file__), "py.typed"))


def test_unknown_codec_lists_the_codecs():
    with pytest.raises(gw.GradwireError) as e:
        gw.CodecSpec("topK")
    msg = str(e.value)
    assert "no codec named 'topK'" in msg and "did you mean 'topk'" in msg
    for name in gw.codecs():
        assert name in msg
    assert e.value.name == "GW_ERR_INVALID_ARGUMENT"


def test_parameter_errors_name_the_parameter_and_its_range():
    with pytest.raises(gw.GradwireError) as e:
        gw.CodecSpec("topk", k=-1)
    msg = str(e.value)
    assert "k=-1" in msg and "[0, 4294967295]" in msg and "documented range" not in msg
    assert e.value.status == gw.Status.ERR_INVALID_ARGUMENT
    with pytest.raises(gw.GradwireError, match=r"threshold=-1\.0 is out of range.*finite and >= 0"):
        gw.CodecSpec("threshold", threshold=-1.0)
    with pytest.raises(gw.GradwireError, match=r"value_dtype=99 is out of range.*f32=1"):
        gw.CodecSpec("topk", value_dtype=99)
    with pytest.raises(gw.GradwireError, match=r"scaled_sign takes no parameter 'k'; its parameters: "
                                               r".*block_size"):
        gw.CodecSpec("scaled_sign", k=3)
    with pytest.raises(ValueError, match=r"unknown codec parameter 'kk'; the parameters: .*density_ppm"):
        gw.CodecSpec("topk", kk=1)
    b = gw.gwnative.codec_param_bounds(gw.Codec.QUANT, gw.Param.BITS)
    with pytest.raises(gw.GradwireError, match=rf"bits=99 is out of range: bits takes integers in "
                                               rf"\[{b.min}, {b.max}\]"):
        gw.CodecSpec("quant", bits=99)
    with pytest.raises(OverflowError, match=r"k=.* is out of range"):
        gw.CodecSpec("topk", k=2**70)


def test_handle_errors_name_the_argument():
    cases = [
        (lambda: gw.Worker(0, "sign"), r"Worker: n=0 is out of range: n must be in \[1, "),
        (lambda: gw.Worker(-1, "sign"), r"Worker: n=-1 is out of range"),
        (lambda: gw.Worker(10, "sign", mu=1.5), r"Worker: mu=1.5 is out of range: mu must be in \[0.0, 1.0\)"),
        (lambda: gw.Server(10, 0, "sign"), r"Server: num_workers=0 is out of range"),
        (lambda: gw.Server(10, 2, "sign", offset=5, length=6),
         r"Server: offset \+ length = 5 \+ 6 is more than total=10"),
        (lambda: gw.Cltk(10, 2, 5), r"Cltk: rank=5 is out of range: rank must be in \[0, num_workers=2\)"),
        (lambda: gw.Cltk(10, 2, 0, beta=0.0), r"Cltk: beta=0.0 is out of range"),
        (lambda: gw.LagsLayer(0), r"LagsLayer: n=0 is out of range"),
        (lambda: gw.AsylpgWorker(0), r"AsylpgWorker: n=0 is out of range"),
        (lambda: gw.Fusion(0), r"Fusion: layers=0 is out of range"),
    ]
    for make, pattern in cases:
        with pytest.raises((gw.GradwireError, OverflowError), match=pattern):
            make()
    with pytest.raises(gw.GradwireError) as e:
        gw.Worker(0, "sign")
    assert e.value.name == "GW_ERR_INVALID_ARGUMENT"
    with pytest.raises(ValueError, match=r"momentum='foo': not one of .*'nesterov'"):
        gw.Worker(10, "sign", momentum="foo")
    with pytest.raises(ValueError, match=r"variant='fast': not one of .*'acc'"):
        gw.AsylpgMaster(np.zeros(4, np.float32), lr=0.1, epoch_length=2, variant="fast")


def test_torch_extras_say_how_to_install_torch():
    # A child whose import system has no torch, whatever this environment holds.
    code = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "for mod in ('gradwire.ddp', 'gradwire.fsdp'):\n"
        "    try:\n"
        "        __import__(mod)\n"
        "    except ImportError as e:\n"
        "        assert \"pip install 'gradwire[torch]'\" in str(e), e\n"
        "    else:\n"
        "        raise SystemExit(mod + ' imported without torch')\n"
        "import gradwire\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
