"""The AsyLPG family through Python: full precision equals SVRG with the prox
step (a float32 numpy reference, bit for bit), quantized runs pickle and
resume bit-identically, stale frames raise GW_ERR_STALE, the new codecs."""
import pickle

import numpy as np
import pytest

import gradwire as gw

D, N = 9, 30
rng = np.random.default_rng(4)
A = rng.normal(size=(N, D)).astype(np.float32)
B = rng.normal(size=N).astype(np.float32)


def grad(i, x):
    r = np.float32(A[i] @ x) - B[i]  # one sample; any fixed float32 arithmetic will do
    return (r * A[i]).astype(np.float32)


def full(x):
    return np.mean([grad(i, x) for i in range(N)], axis=0).astype(np.float32)


def prox(v, c, l1, l2):
    c, l1, l2 = np.float32(c), np.float32(l1), np.float32(l2)
    a = np.abs(v) - c * l1
    return np.where(a <= 0, np.float32(0), np.copysign(a / (np.float32(1) + c * l2), v)).astype(np.float32)


def test_full_precision_is_svrg_bit_for_bit():
    lr, l1, l2, m = 0.05, 1e-3, 1e-2, 5
    x0 = rng.normal(size=D).astype(np.float32)
    master = gw.AsylpgMaster(x0, lr=lr, epoch_length=m, l1=l1, l2=l2, bits=(0, 0), tensor=2)
    worker = gw.AsylpgWorker(D, "identity", tensor=2, seed=1)
    x, snap = x0.copy(), x0.copy()
    for epoch in range(4):
        np.testing.assert_array_equal(master.snapshot(), snap)
        g = full(snap)
        master.begin_epoch(g)
        worker.set_snapshot(snap)
        x = snap.copy()
        for t in range(m):
            worker.receive(master.model())
            assert master.last_bits() == (0 if t == 0 else 32)  # unchanged, then fp32
            i = (epoch * m + t) % N
            frame = worker.step(grad(i, worker.model()), grad(i, snap))
            master.push(frame)
            alpha = grad(i, x) - grad(i, snap)
            x = prox(x - np.float32(lr) * (alpha + g), lr, l1, l2)
            np.testing.assert_array_equal(master.params(), x)
        snap = x.copy()
        assert master.progress() == dict(epoch=epoch + 2, inner=0, version=(epoch + 1) * m, running=False)


@pytest.mark.parametrize("variant,codec", [("plain", gw.CodecSpec("quant", bits=4)),
                                           ("plain", gw.CodecSpec("sparse_quant", bits=2)),
                                           ("acc", gw.CodecSpec("quant", bits=3))])
def test_quantized_runs_pickle_and_resume(variant, codec):
    x0 = np.zeros(D, np.float32)

    def run(master, worker, steps):
        for _ in range(steps):
            if not master.progress()["running"]:
                snap = master.snapshot()
                master.begin_epoch(full(snap))
                worker.set_snapshot(snap)
            worker.receive(master.model())
            i = master.progress()["version"] % N
            master.push(worker.step(grad(i, worker.model()), grad(i, master.snapshot())))

    a = (gw.AsylpgMaster(x0, lr=0.05, epoch_length=7, variant=variant, bits=(2, 8), mu=0.5, tau=1),
         gw.AsylpgWorker(D, codec, seed=9))
    run(*a, 10)
    b = tuple(pickle.loads(pickle.dumps(h)) for h in a)
    assert "AsylpgMaster(n=9" in repr(b[0]) and b[1].save() == a[1].save()
    run(*a, 12)
    run(*b, 12)
    np.testing.assert_array_equal(a[0].params(), b[0].params())
    assert a[0].save() == b[0].save()


def test_stale_and_out_of_order():
    master = gw.AsylpgMaster(np.ones(D, np.float32), lr=0.1, epoch_length=50, tau=1)
    worker = gw.AsylpgWorker(D, gw.CodecSpec("quant", bits=4), seed=2)
    with pytest.raises(gw.GradwireError) as e:
        master.model()
    assert e.value.name == "GW_ERR_SEQUENCE"
    master.begin_epoch(np.zeros(D, np.float32))
    worker.set_snapshot(master.snapshot())
    worker.receive(master.model())
    old = worker.step(np.ones(D, np.float32), np.zeros(D, np.float32))
    for _ in range(2):
        worker.receive(master.model())
        master.push(worker.step(np.ones(D, np.float32), np.zeros(D, np.float32)))
    before = master.save()
    with pytest.raises(gw.GradwireError) as e:
        master.push(old)
    assert e.value.name == "GW_ERR_STALE" and e.value.status == gw.Status.ERR_STALE
    assert master.save() == before


def test_quantizer_codecs_from_python():
    x = rng.normal(size=1000).astype(np.float32)
    for spec in (gw.CodecSpec("quant", bits=4, block_size=100), gw.CodecSpec("qsgd", levels=7),
                 gw.CodecSpec("terngrad"), gw.CodecSpec("sparse_quant", bits=4, budget=50.0)):
        f = gw.encode(spec, x, seed=3, step=1)
        assert f == gw.encode(spec, x, seed=3, step=1) != gw.encode(spec, x, seed=4, step=1)
        d = gw.decode(f)
        assert np.isfinite(d).all() and gw.compression_ratio(f) > 3
    # Unbiased: the mean over many seeds approaches x.
    mean = np.mean([gw.decode(gw.encode("terngrad", x[:50], seed=s)) for s in range(4000)], axis=0)
    np.testing.assert_allclose(mean, x[:50], atol=5 * np.abs(x[:50]).max() / np.sqrt(4000))
    with pytest.raises(gw.GradwireError):
        gw.CodecSpec("quant", bits=12)
