"""The Python binding: buffers, dtypes, exceptions, every handle, golden vectors."""
import glob
import os
import pickle
import re

import numpy as np
import pytest
import torch

import gradwire as gw

VECTORS = os.path.join(os.path.dirname(__file__), "..", "vectors")


def unhex(path):
    text = "".join(l for l in open(path) if not l.startswith("#"))
    return bytes.fromhex(re.sub(r"[^0-9a-fA-F]", "", text))


def test_codecs_come_from_the_library():
    names = gw.codecs()
    assert {"identity", "fp16", "bf16", "sign", "scaled_sign", "topk", "randomk", "index"} <= set(names)
    for name, cid in names.items():
        assert gw.CodecSpec(name).name == name and gw.Codec[name.upper()] == cid


def test_spec_parameters_and_bounds():
    s = gw.CodecSpec("topk", k=7, value_dtype="bf16", zstd=0)
    assert s["k"] == 7 and s["value_dtype"] == gw.DType.BF16 and s.params["zstd"] == 0
    assert s == gw.CodecSpec("topk", k=7, value_dtype="bf16", zstd=0) != gw.CodecSpec("topk")
    assert pickle.loads(pickle.dumps(s)) == s
    t = gw.CodecSpec("threshold", threshold=0.25)
    assert t["threshold"] == 0.25
    with pytest.raises(gw.GradwireError) as e:
        gw.CodecSpec("scaled_sign", k=3)  # not a scaled_sign parameter
    assert e.value.name == "GW_ERR_INVALID_ARGUMENT" and e.value.status == gw.Status.ERR_INVALID_ARGUMENT
    with pytest.raises(gw.GradwireError, match="no codec named"):
        gw.CodecSpec("nope")
    with pytest.raises(ValueError, match="unknown codec parameter"):
        gw.CodecSpec("topk", kk=1)


def test_one_shot_calls_by_name_and_default_context():
    # encode() keeps the spec it builds from a name and shares an all-zero
    # context between calls; neither may leak into later calls.
    x = np.random.default_rng(5).standard_normal(4096).astype(np.float32)
    spec = gw.CodecSpec("randomk", k=40)
    plain = gw.encode(spec, x)
    seeded = gw.encode(spec, x, seed=3, step=2)
    assert seeded != plain and gw.encode(spec, x) == plain
    assert gw.encode(spec, x, seed=0, step=0, tensor=0, tag=0) == plain
    assert gw.encode(gw.CodecSpec("randomk", k=40), x, seed=3, step=2) == seeded
    assert gw.encode("randomk", x) == gw.encode(gw.CodecSpec("randomk"), x)
    for _ in range(2):  # a bad name raises every time: nothing was kept for it
        with pytest.raises(gw.GradwireError, match="no codec named"):
            gw.encode("nope", x)
    assert gw.contraction("sign", x) == gw.contraction(gw.CodecSpec("sign"), x)


def test_spec_link_decides_the_zstd_stage():
    x = np.random.default_rng(4).standard_normal(1 << 20).astype(np.float32)
    slow = gw.CodecSpec("topk", k=10000, link_bps=100_000_000)
    fast = gw.CodecSpec("topk", k=10000, link_bps=10_000_000_000)
    assert slow == fast == gw.CodecSpec("topk", k=10000)  # not a parameter
    assert "link_bps" not in fast.params and fast.link_bps == 10**10
    fs, ff = gw.encode(slow, x), gw.encode(fast, x)
    assert gw.inspect(fs).flags == 1 and gw.inspect(ff).flags == 0  # bit 0: the zstd stage
    assert np.array_equal(gw.decode(fs), gw.decode(ff))
    assert gw.CodecSpec.from_frame(ff).link_bps == 0
    assert pickle.loads(pickle.dumps(fast)).link_bps == 10**10 and gw.CodecSpec(fast).link_bps == 10**10
    for bad in (-1, 1.5, True, 2**64):
        with pytest.raises(ValueError, match="link_bps"):
            gw.CodecSpec("topk", link_bps=bad)


def test_spec_refuses_values_that_are_not_integers():
    # int() would have turned "3" into 3 and 1.5 into 1 silently.
    for bad in ("3", 1.5, True, None, b"3"):
        with pytest.raises(TypeError, match="'k'"):
            gw.CodecSpec("topk", k=bad)
    with pytest.raises(TypeError, match="'threshold'"):
        gw.CodecSpec("threshold", threshold="0.5")
    assert gw.CodecSpec("topk", k=np.int64(3))["k"] == 3
    assert gw.CodecSpec("threshold", threshold=1)["threshold"] == 1.0
    assert gw.CodecSpec("topk", value_dtype=np.float16)["value_dtype"] == gw.DType.F16


def test_decode_caps_what_an_untrusted_header_can_allocate():
    # A valid top-k frame of a few dozen bytes claiming 2^32 - 1 elements.
    n = 2**32 - 1
    frame = gw.encode(gw.CodecSpec("topk", k=1, zstd=0), np.zeros(4, np.float32))
    assert gw.inspect(frame).count == 4
    big = _frame_with_count(frame, n)
    assert gw.inspect(big).count == n and len(big) < 100
    with pytest.raises(ValueError, match="max_elements"):
        gw.decode(big)
    with pytest.raises(ValueError, match="max_elements"):
        gw.decode(frame, max_elements=3)
    assert gw.decode(frame, max_elements=4).shape == (4,)
    out = np.empty(4, np.float32)
    assert gw.decode(frame, out=out, max_elements=0) is out  # out= is its own limit


def _frame_with_count(frame, n):
    """The same frame re-headed with element count n, both CRCs recomputed
    (docs/wire-format.md: count at offset 16, header CRC at 36 over [0, 36))."""
    b = bytearray(frame)
    b[16:24] = n.to_bytes(8, "little")
    b[36:40] = gw.crc32c(bytes(b[:36])).to_bytes(4, "little")
    b[-4:] = gw.crc32c(bytes(b[:-4])).to_bytes(4, "little")
    return bytes(b)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(VECTORS, "*.frame.hex"))))
def test_golden_vectors(path):
    frame = unhex(path)
    expect = np.frombuffer(unhex(path.replace(".frame.", ".decoded.")), np.float32)
    np.testing.assert_array_equal(gw.decode(frame), expect)
    acc = np.ones(expect.size, np.float32)
    gw.decode_accumulate(frame, acc, alpha=2.0)
    np.testing.assert_array_equal(acc, np.float32(1) + np.float32(2) * expect)
    info = gw.inspect(frame)
    assert info.frame_size == len(frame) and info.count == expect.size
    if info.format_version == 2:  # re-encoding the input (seed, step, tensor 0) gives the same bytes
        x = np.frombuffer(unhex(path.replace(".frame.", ".input.")), np.float32)
        assert gw.encode(gw.CodecSpec.from_frame(frame), x, tag=info.tag) == frame


def test_buffers_are_borrowed_and_checked():
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    frames = {gw.encode("fp16", v) for v in (x, torch.from_numpy(x), x.tobytes(), bytearray(x.tobytes()),
                                              memoryview(x.tobytes()))
              if not isinstance(v, (bytes, bytearray, memoryview))}
    frames |= {gw.encode("fp16", v, dtype="f32") for v in (x.tobytes(), memoryview(x))}
    assert len(frames) == 1
    # float16 / bfloat16 gradients, numpy and torch
    assert gw.decode(gw.encode("identity", x.astype(np.float16))).dtype == np.float32
    b = torch.from_numpy(x).to(torch.bfloat16)
    np.testing.assert_array_equal(gw.decode(gw.encode("identity", b)), b.float().numpy())
    with pytest.raises(TypeError, match="float64"):
        gw.encode("fp16", x.astype(np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        gw.encode("fp16", x[::2])
    with pytest.raises(TypeError, match="dtype="):
        gw.encode("fp16", x.tobytes())
    with pytest.raises(TypeError, match="holds float32"):
        gw.encode("fp16", x, dtype="f16")
    with pytest.raises(gw.GradwireError, match="whole number"):
        gw.encode("fp16", x.tobytes()[:5], dtype="f32")
    with pytest.raises(TypeError, match="expected a numpy array"):
        gw.encode("fp16", [1.0, 2.0])
    # outputs: written in place into numpy arrays and torch tensors
    f = gw.encode("identity", x)
    out = torch.zeros(64)
    gw.decode(f, out=out)
    assert torch.equal(out, torch.from_numpy(x))
    with pytest.raises(ValueError, match="holds 63"):
        gw.decode(f, out=np.zeros(63, np.float32))
    buf = bytearray(1000)
    n = gw.encode("identity", x, out=buf)
    assert bytes(buf[:n]) == f
    with pytest.raises(ValueError, match="writable"):
        gw.encode("identity", x, out=bytes(1000))


def test_malformed_frames_raise_specific_errors():
    f = bytearray(gw.encode("scaled_sign", np.arange(100, dtype=np.float32)))
    f[-1] ^= 1
    with pytest.raises(gw.GradwireError) as e:
        gw.decode(f)
    assert e.value.name == "GW_ERR_FRAME_CHECKSUM"
    for cut in (0, 10, 39, len(f) - 1):
        with pytest.raises(gw.GradwireError):
            gw.decode(bytes(f[:cut]))


def test_worker_keeps_what_it_did_not_send():
    g = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    w = gw.Worker(1000, gw.CodecSpec("topk", k=10), momentum="none")
    sent = gw.decode(w.step(g))
    np.testing.assert_allclose(sent + w.residual(), g, rtol=0, atol=1e-6)


@pytest.mark.parametrize("M", range(1, 17))
def test_two_way_round_and_checkpoint(M):
    n, rng = 257, np.random.default_rng(M)
    spec = gw.CodecSpec("scaled_sign")
    ws = [gw.Worker(n, spec) for _ in range(M)]
    parts = [gw.shard_range(n, 2, j) for j in range(2)]
    servers = [gw.Server(n, M, spec, expect=spec, offset=r.start, length=len(r)) for r in parts]
    wsl = [[gw.Worker(len(r), spec) for r in parts] for _ in range(M)]

    def round_(ws_, sv):
        grads = [rng.standard_normal(n).astype(np.float32) for _ in range(M)]
        x = np.zeros(n, np.float32)
        for j, r in enumerate(parts):
            for i in range(M):
                sv[j].push(ws_[i][j].step(grads[i][r.start:r.stop], lr=0.1))
            gw.decode_accumulate(sv[j].step(lr=0.1), x[r.start:r.stop], -0.1)
        return x

    round_(wsl, servers)
    blobs = ([[w.save() for w in row] for row in wsl], [s.save() for s in servers])
    state = rng.bit_generator.state
    a = round_(wsl, servers)
    rng.bit_generator.state = state
    wsl2 = [[pickle.loads(pickle.dumps(w)) for w in row] for row in wsl]  # pickle round trip
    for row, brow in zip(wsl2, blobs[0]):
        for w, b in zip(row, brow):
            w.load(b)
    sv2 = [gw.Server(n, M, spec, expect=spec, offset=r.start, length=len(r)) for r in parts]
    for s, b in zip(sv2, blobs[1]):
        s.load(b)
    np.testing.assert_array_equal(round_(wsl2, sv2), a)
    del ws


@pytest.mark.parametrize("M", [1, 3, 8, 16])
def test_many_frames_at_once(M):
    n, rng = 40001, np.random.default_rng(M)
    spec = gw.CodecSpec("scaled_sign")
    ws = [gw.Worker(n, spec) for _ in range(M)]
    frames = [w.step(rng.standard_normal(n).astype(np.float32), lr=0.1) for w in ws]
    # decode_accumulate_many == decode_accumulate in turn, numpy and torch alike.
    acc0 = rng.standard_normal(n).astype(np.float32)
    one, many = acc0.copy(), acc0.copy()
    for f in frames:
        gw.decode_accumulate(f, one, 0.5)
    gw.decode_accumulate_many(frames, many, 0.5)
    np.testing.assert_array_equal(one, many)
    t = torch.from_numpy(acc0.copy())
    gw.decode_accumulate_many([torch.frombuffer(bytearray(f), dtype=torch.uint8) for f in frames], t, 0.5)
    np.testing.assert_array_equal(t.numpy(), one)
    # A server round in one call == M pushes and a step.
    a, b = gw.Server(n, M, spec, expect=spec), gw.Server(n, M, spec, expect=spec)
    for f in frames:
        a.push(f)
    assert a.step(lr=0.1) == b.round(frames, lr=0.1)
    np.testing.assert_array_equal(a.residual(), b.residual())
    # A bad frame is named, and nothing changes.
    bad = frames[:-1] + [frames[-1][:-1]]
    with pytest.raises(gw.GradwireError, match=rf"frames\[{M - 1}\]"):
        gw.decode_accumulate_many(bad, many)
    np.testing.assert_array_equal(one, many)
    frames = [w.step(rng.standard_normal(n).astype(np.float32), lr=0.1) for w in ws]  # round 1
    with pytest.raises(gw.GradwireError, match=rf"frames\[{M - 1}\]"):
        b.round(frames[:-1] + [frames[-1][:-1]], lr=0.1)
    assert b.step_count() == 1
    b.round(frames, lr=0.1)
    with pytest.raises(TypeError, match="frames"):
        gw.decode_accumulate_many([frames[0], 3.5], many)


def test_sequence_errors_and_close():
    s = gw.Server(10, 2, "scaled_sign")
    with pytest.raises(gw.GradwireError) as e:
        s.step()
    assert e.value.name == "GW_ERR_SEQUENCE"
    with gw.Worker(10, "scaled_sign") as w:
        w.step(np.ones(10, np.float32))
    with pytest.raises(gw.GradwireError, match="closed"):
        w.step(np.ones(10, np.float32))
    assert "Worker(n=10" in repr(w)


def test_cltk_round_on_three_workers():
    M, n = 3, 1000
    spec = gw.CodecSpec("index", k=20, chunk_size=100)
    hs = [gw.Cltk(n, M, r, spec) for r in range(M)]
    rng = np.random.default_rng(2)
    for h in hs:
        h.begin(rng.standard_normal(n).astype(np.float32), lr=0.5)
    leader = hs[0].leader()
    frame = hs[leader].select()
    assert gw.index_frame_indices(frame).size == 20
    vals = [h.extract(frame) for h in hs]
    summed = sum(vals[1:], vals[0].copy())
    xs = [np.zeros(n, np.float32) for _ in hs]
    for h, x in zip(hs, xs):
        h.apply(summed, x)
    assert all(np.array_equal(xs[0], x) for x in xs)
    np.testing.assert_array_equal(hs[0].indices(), gw.index_frame_indices(frame))
    blob = hs[0].save()
    h2 = gw.Cltk(n, M, 0, spec)
    h2.load(blob)
    np.testing.assert_array_equal(h2.memory(), hs[0].memory())


def test_lags_fusion_bundle():
    layers = [gw.LagsLayer(n, gw.CodecSpec("topk", k=3), tensor=i) for i, n in enumerate((50, 20))]
    fu = gw.Fusion(2)
    for i, l in enumerate(layers):
        fu.add(i, l.step(np.arange(l.size(), dtype=np.float32), lr=0.1))
    bundle = fu.flush()
    entries = gw.bundle_frames(bundle)
    assert [e[0] for e in entries] == [0, 1]
    for layer, off, size in entries:
        assert gw.inspect(bundle[off:off + size]).count == (50, 20)[layer]


def test_rng_and_random_k_are_shared():
    idx = gw.randk_indices(5, 1, 2, 1000, 10)
    assert idx.dtype == np.uint32 and np.all(np.diff(idx.astype(np.int64)) > 0)
    x = np.arange(1000, dtype=np.float32)
    acc = np.zeros(1000, np.float32)
    gw.scatter_add(gw.gather(x, idx), idx, acc)
    assert np.array_equal(acc[idx], x[idx]) and acc.sum() == x[idx].sum()


def test_ef_cast_is_the_half_codec_with_its_residual():
    """gw_ef_cast on torch tensors and numpy arrays: out is the fp16 / bf16 codec's
    cast of y = e + alpha * x (saturating), e = y - out; NaN / Inf go out as they
    are and leave e; dtypes checked."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(5000) * 10.0 ** rng.integers(-8, 7, 5000)).astype(np.float32)
    e0 = (rng.standard_normal(5000) * 1e-3).astype(np.float32)
    y = e0 + x * np.float32(0.25)
    for dtype, codec in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        e, out = torch.from_numpy(e0.copy()), torch.empty(5000, dtype=dtype)
        assert gw.ef_cast(torch.from_numpy(x), e, out, 0.25) == 0
        want = gw.decode(gw.encode(codec, y))
        assert np.array_equal(out.float().numpy(), want)
        assert np.array_equal(e.numpy(), y - out.float().numpy())
    e, out = e0.copy(), np.empty(5000, np.float16)  # numpy: float16, or uint16 with dtype
    assert gw.ef_cast(x, e, out, 0.25) == 0
    bits = np.empty(5000, np.uint16)
    assert gw.ef_cast(x, e0.copy(), bits, 0.25, dtype="f16") == 0
    assert np.array_equal(bits, out.view(np.uint16))
    x2 = x.copy()
    x2[[3, 9]] = [np.nan, np.inf]
    e = e0.copy()
    assert gw.ef_cast(x2, e, out, 0.25) == 2
    assert np.isnan(out[3]) and out[9] == np.inf and e[3] == e0[3] and e[9] == e0[9]
    with pytest.raises(TypeError, match="dtype='bf16'"):
        gw.ef_cast(x, e, np.empty(5000, np.uint16))
    with pytest.raises(TypeError):
        gw.ef_cast(x, e, torch.empty(5000, dtype=torch.float16), dtype="bf16")
    with pytest.raises(gw.GradwireError, match="out 4999"):
        gw.ef_cast(x, e, np.empty(4999, np.float16))


# ------------------------------------------------ checkpoints across languages
# tests/vectors/state/*.state.hex: blobs of fixed scenarios, written by this
# file (GW_WRITE_VECTORS=1) and checked byte for byte by every binding (the
# Java tests replay the same scenarios), so a checkpoint saved in one
# language loads in any other.
STATE_DIR = os.path.join(VECTORS, "state")


def vector_input(n):
    x = np.array([float(int(i * 37 % 19) - 9) * 0.375 for i in range(n)], np.float32)
    x[3], x[5], x[7] = -0.0, 70000.0, 1.0 + 2.0 ** -11
    return x


def state_scenarios():
    """name -> (handle, blob) after a fixed history."""
    x = vector_input(20)
    spec = gw.CodecSpec("scaled_sign")
    w = gw.Worker(20, spec, momentum="nesterov", mu=0.9, tensor=3)
    for step in range(3):
        w.step(x * np.float32(step + 1), lr=0.1)
    s = gw.Server(20, 2, spec, expect=spec, tensor=3)
    a, b = gw.Worker(20, spec, tensor=3), gw.Worker(20, spec, tensor=3)
    for step in range(2):
        s.push(a.step(x, lr=0.1))
        s.push(b.step(x * np.float32(-0.5), lr=0.1))
        s.step(lr=0.1)
    topk = gw.Worker(20, gw.CodecSpec("topk", k=4, zstd=0), momentum="none", tensor=1)
    topk.step(x, lr=1.0)
    return {"worker_scaled_sign_nesterov": w, "server_scaled_sign_m2": s,
            "worker_topk_k4": topk}


def test_checkpoints_match_the_shared_vectors():
    for name, h in state_scenarios().items():
        blob = h.save()
        path = os.path.join(STATE_DIR, name + ".state.hex")
        if os.environ.get("GW_WRITE_VECTORS") == "1":
            os.makedirs(STATE_DIR, exist_ok=True)
            with open(path, "w") as f:
                f.write(f"# {name}: see tests/python/test_core.py state_scenarios()\n")
                for i in range(0, len(blob), 32):
                    f.write(blob[i:i + 32].hex() + "\n")
        assert blob == unhex(path), name
        # ... and the file loads into a fresh handle with the same options.
        fresh = pickle.loads(pickle.dumps(h))
        fresh.load(unhex(path))
        assert fresh.save() == blob
