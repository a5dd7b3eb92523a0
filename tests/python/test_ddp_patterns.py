"""PyTorch's own communication-hook test patterns on gradwire's DDP hook, for
2, 3 and 4 processes (gloo on 127.0.0.1): parity with DDP's average and (the
fp16 / bf16 casts) with torch's own compress hooks, the
mass every method keeps (error feedback loses nothing, also for parameters
no rank used under find_unused_parameters), no_sync with a frozen parameter
and tiny buckets, static_graph and gradient_as_bucket_view, join() with
uneven inputs, subgroups (the DDP model's own group, also after pickling;
groups whose ranks are not 0..M-1), sparse gradients, zero-element
parameters, float64 / float16 / bfloat16 models; an optimizer's momentum
moved into the hook (optimizer=), and refused after it.

One job per world size runs every check (ddp_patterns_worker.py): starting
processes and importing torch is the cost, the checks are small.
"""
import os
import subprocess
import sys

import pytest
import torch

import gradwire as gw
import gradwire.ddp  # noqa: F401

sys.path.insert(0, os.path.dirname(__file__))
from test_ddp import free_port  # noqa: E402

HERE = os.path.dirname(__file__)
COMPRESSED = ["ef", "topk", "fp16", "bf16", "efsignsgd", "lags", "randomk", "cltk"]
EVERY = ["allreduce"] + COMPRESSED
# Where gloo's all_reduce sums (allreduce, randomk, cltk, the 16-bit casts fp16
# and bf16) its order depends on the buckets; elsewhere the hook's arithmetic is
# gradwire's own, bit for bit.
SUMMED_BY_GLOO = ("allreduce", "randomk", "cltk", "fp16", "bf16", "plain")
# The 16-bit sums: another order is a rounding of the cast apart (lr 0.1, 3 steps).
CAST_TOL = {"fp16": dict(rtol=1e-3, atol=1e-4), "bf16": dict(rtol=8e-3, atol=8e-4)}


# GW_DDP_PATTERNS="mass sparse" runs only those checks (the other tests skip).
CHECKS = os.environ.get("GW_DDP_PATTERNS", "").split()


def run_job(world, tmp_path):
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "ddp_patterns_worker.py"),
                               str(r), str(world), port, str(tmp_path), *CHECKS],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in range(world)]
    logs = [p.communicate(timeout=900)[0].decode() for p in procs]
    failed = [f"rank {r}:\n{log[-2000:]}" for r, (p, log) in enumerate(zip(procs, logs))
              if p.returncode != 0]
    assert not failed, "\n".join(failed)
    return [torch.load(os.path.join(tmp_path, f"patterns{r}.pt")) for r in range(world)]


@pytest.fixture(scope="module", params=[2, 3, 4], ids=lambda w: f"world{w}")
def job(request, tmp_path_factory):
    world = request.param
    return world, run_job(world, tmp_path_factory.mktemp(f"patterns{world}"))


def results(job, name):
    world, ranks = job
    if name not in ranks[0]:
        pytest.skip(f"GW_DDP_PATTERNS leaves out {name}")
    for r, res in enumerate(ranks):
        assert "error" not in res[name], f"rank {r} of {world}:\n{res[name]['error']}"
    return world, [res[name] for res in ranks]


def same(a, b, exact, tol=None):
    if exact:
        return all(torch.equal(x, y) for x, y in zip(a, b))
    half = a[0].dtype in (torch.float16, torch.bfloat16)
    tol = tol or (dict(rtol=1e-2, atol=1e-3) if half else dict(rtol=1e-5, atol=1e-6))
    return all(torch.allclose(x.float(), y.float(), **tol) for x, y in zip(a, b))


def replicas_agree(ranks, method, key=lambda r, m: r[m]):
    for r in ranks[1:]:
        assert same(key(ranks[0], method), key(r, method), True), f"{method}: replicas differ"


def test_parity_with_ddp_average(job):
    world, ranks = results(job, "parity")
    for r in ranks:
        assert r["allreduce"] < 1e-6
        assert r["fp16"] < 2e-3  # the first step: the average to fp16 precision


def test_cast_matches_torch_compress_hooks(job):
    """Methods fp16 and bf16 (mode cast) against torch's fp16_compress_hook and
    bf16_compress_hook; the mass over all steps; a state_dict round trip."""
    world, ranks = results(job, "cast")
    for r in ranks:
        for method, tol in (("fp16", 2 ** -9), ("bf16", 2 ** -6)):
            m = r[method]
            assert m["mode"] == "cast" and m["handles"] == 4, m
            # the first step: torch's op order (cast, divide in 16 bits) rounds twice
            # where M is not a power of two or the quotient is below float16's normal
            # range (then by 2^-24 at most per rank); ours once
            if world in (2, 4):
                assert m["first_ulps"] <= (0 if method == "bf16" else world), (world, method, m)
            assert m["first_rel"] < tol / 2 and m["rel"] < tol, (world, method, m)
            assert m["ef_exact"], (world, method, m)  # e = y - cast(y), bit for bit
            assert m["mass"] < 1e-6, (world, method, m)  # sent + kept == came in
            assert m["sum_err"] <= 1.0, (world, method, m)  # the 16-bit sum's roundings
            assert m["total"] < 1e-6, (world, method, m)  # applied + kept: no more than those
            assert m["same_blobs"], (world, method, m)
            assert m["resumed_rel"] == 0.0 if world == 2 else m["resumed_rel"] < tol, \
                (world, method, m)
        for m in ("fp16", "topk"):
            assert "mode='server'" in r[f"old_{m}_refused"] and r[f"old_{m}_loads"], r
        for m in ("ef", "efsignsgd"):
            assert ("codec=CodecSpec('scaled_sign', block_size=256)" in r[f"old_{m}_refused"]
                    and r[f"old_{m}_loads"]), r


def test_mass_is_kept(job):
    """sent + kept == handed in + kept before, every step, every parameter;
    parameters no rank used: nothing sent, the residual unchanged."""
    world, ranks = results(job, "mass")
    for r in ranks:
        for name, m in r.items():
            assert m["mass"] < 1e-5, (world, name, m)
            if name.endswith("+unused"):
                assert m["dead_moved"] == 0.0, (world, name, m)
                assert m["dead_residual"] == 0.0, (world, name, m)
                assert m["dead_kept"] > 0.0, (world, name, m)  # a residual worth keeping


HAND_BACK_RUNS = ("hand_back", "take_again", "take_again_pickle", "take_again_state_dict")


def test_never_slower_hands_residuals_over(job):
    world, ranks = results(job, "never_slower")
    for r in ranks:
        hb = r["hand_back"]
        assert hb["taken"][0] == 0.0 and hb["taken"][-1] == 0.9, hb  # moved in, then back
        assert hb["group"] == (0.9, True), hb
        assert hb["handed"] is not None, hb
        for got, want in zip(hb["handed"], hb["mean"]):  # the ranks' mean of the hook's
            assert torch.allclose(got, want, rtol=1e-6, atol=1e-7), (got, want)
        replicas_agree([{"hb": x["hand_back"]["params"]} for x in ranks], "hb")
        again = r["take_again"]
        # probes begin at steps 1, 5, 9 (counted from 0; 1 dense + 1 method + 2 decided): the
        # method is slower in the first and third (the momentum handed back at the bucket 0
        # after each flush: steps 4 and 12), faster in the second (taken again at step 6,
        # its buffers with it)
        assert again["taken"] == [0.0] * 5 + [0.9] * 2 + [0.0] * 6, again["taken"]
        assert again["group"] == (0.9, True), again
        assert again["moved"] is not None and again["moved"][1], again["moved"]
        assert again["moved"][0] < 1e-6, again["moved"]
        # Resumed from a checkpoint taken while the optimizer held the momentum:
        # it stays there until the method's probe takes it, buffers and all.
        for via in ("pickle", "state_dict"):
            resumed = r[f"take_again_{via}"]
            assert resumed["taken"] == again["taken"], (via, resumed["taken"])
            assert resumed["moved"] is not None and resumed["moved"][1], (via, resumed)
            assert resumed["moved"][0] < 1e-6, (via, resumed["moved"])
            # (dense steps are gloo's sums, in the new DDP's first bucket order)
            assert same(resumed["params"], again["params"], False), via
        for key, m in r.items():
            if key in HAND_BACK_RUNS:
                continue
            method, policy = key
            assert m["mass"] < 1e-5, (world, method, m)
            if policy == "cycle":  # (probe, buckets decided dense, handles held) per step
                cycles = [c for c, _, _ in m["trail"]]
                assert cycles == [0] * 5 + [1] * 4 + [2] * 4, (method, m["trail"])
                n = m["buckets"]
                want = ([(None, False)] * 2 + [(None, True)] + [(n, False)] * 2  # 0: all dense
                        + [(None, False), (None, True), (0, True), (0, True)]  # 1: the method
                        + [(None, True)] * 2 + [(n, False)] * 2)  # 2: all dense, handed over
                assert [(d, h) for _, d, h in m["trail"]] == want, (method, m["trail"])
                continue
            dense = {p for key in m["dense"] for p in key}
            assert set(m["flushed"]) == dense, (method, m)  # handed over once
            assert not dense & set(m["handles"]), (method, m)   # no state left for them
            if policy == "mixed":
                assert dense and all(key[0] % 2 == 0 for key in m["dense"]), (method, m)
                assert m["handles"] and m["direct_steps"] == 0, (method, m)  # the others: method
            else:  # slower over the whole step: every bucket dense, then DDP's own way
                assert len(m["dense"]) == m["buckets"] and not m["handles"], (method, m)
                assert m["direct_steps"] >= 1, (method, m)
    for method in ranks[0]:
        if method not in HAND_BACK_RUNS:
            assert all(r[method]["dense"] == ranks[0][method]["dense"] for r in ranks)


def test_no_sync_with_frozen_parameter(job):
    world, ranks = results(job, "no_sync_frozen")
    for method in EVERY:
        replicas_agree(ranks, method)
        assert torch.equal(ranks[0][method][1], ranks[0]["plain"][1])  # the frozen bias
    assert same(ranks[0]["allreduce"], ranks[0]["plain"], False)


def test_static_graph_and_gradient_as_bucket_view(job):
    world, ranks = results(job, "flags")
    for method in EVERY:
        for r in ranks:
            for flag in ("static_graph", "gradient_as_bucket_view"):
                assert same(r[method]["none"], r[method][flag], method not in SUMMED_BY_GLOO,
                            CAST_TOL.get(method)), \
                    (world, method, flag)
        replicas_agree(ranks, method, lambda r, m: r[m]["none"])


def test_join_with_uneven_inputs(job):
    world, ranks = results(job, "join")
    for method in EVERY:
        replicas_agree(ranks, method)
        assert all(torch.isfinite(p).all() for p in ranks[0][method])
    assert same(ranks[0]["allreduce"], ranks[0]["plain"], False)


def test_subgroups(job):
    world, ranks = results(job, "subgroups")
    for rank, r in enumerate(ranks):
        expect = sum(r["part"]) / len(r["part"])  # each rank's gradient is its rank
        assert r["plain"] == pytest.approx(expect)
        assert r["hook"] == pytest.approx(expect), (world, rank, r["part"])
        assert r["rebound"] == pytest.approx(expect), (world, rank, r["part"])


def test_every_method_on_group_not_starting_at_rank_0(job):
    world, ranks = results(job, "odd_group")
    odd = [r for i, r in enumerate(ranks) if i in ranks[0]["odd"]]
    for method in EVERY:
        replicas_agree(odd, method, lambda r, m: r["methods"][m])


def test_sparse_gradients_are_averaged(job):
    world, ranks = results(job, "sparse")
    for method in EVERY:
        replicas_agree(ranks, method, lambda r, m: r[m]["params"])
        for r in ranks:
            torch.testing.assert_close(r[method]["first"], r["plain"]["first"])
    assert same(ranks[0]["allreduce"]["params"], ranks[0]["plain"]["params"], False)


def test_zero_element_parameters(job):
    world, ranks = results(job, "zero_element")
    for method in EVERY:
        replicas_agree(ranks, method)
        assert ranks[0][method][0].numel() == 0  # the model's own parameter first
    assert same(ranks[0]["allreduce"], ranks[0]["plain"], False)


def test_float64_float16_bfloat16_models(job):
    world, ranks = results(job, "dtypes")
    for dtype in ("torch.float64", "torch.float16", "torch.bfloat16"):
        for method in EVERY:
            replicas_agree(ranks, dtype, lambda r, d: r[d][method])
            for p in ranks[0][dtype][method]:
                assert str(p.dtype) == dtype and torch.isfinite(p).all(), (dtype, method)
        assert same(ranks[0][dtype]["allreduce"], ranks[0][dtype]["plain"], False), dtype


def test_warmup_then_compression(job):
    world, ranks = results(job, "warmup")
    for method in COMPRESSED:
        for r in ranks:
            m = r[method]
            assert same(m["plain"], m["hook"], False), (world, method)  # DDP's own steps
            assert m["handles_at_2"] == 0 and m["handles_after"] > 0, (world, method, m)
            assert m["steps"] == 4 and m["start_step"] == 2
            assert m["mode"] == gw.ddp.METHODS[method]["mode"]
        replicas_agree(ranks, method, lambda r, m: r[m]["hook"])


def test_optimizer_momentum_moves_into_the_hook(job):
    world, ranks = results(job, "momentum")
    for r in ranks:
        for kind in ("heavy", "dampened", "nesterov"):
            m = r[kind]
            # identity frames are exact: only the summation order differs
            assert same(m["plain"], m["hook"], False), (world, kind)
            assert m["optimizer_momentum"] == 0.0
            assert m["hook_lrs"] == [0.1, 0.1, 0.05, 0.05, 0.025], m["hook_lrs"]  # StepLR(2, 0.5)
        res = r["resume"]
        assert res["buffers"] > 0
        assert same(res["straight"], res["resumed"], True), world
        assert res["old_masking"] == (True, False, False)  # the old pickle's flag kept
        refused = r["refused"]
        assert "optimizer=opt" in refused["ef"] and "momentum=0.9" in refused["ef"]
        assert refused["fp16"] == "" and refused["ef-unchecked"] == ""
        assert refused["adam-given-True"].startswith("ValueError") and \
            "torch.optim.SGD with momentum" in refused["adam-given-True"]
        assert refused["adam-given-False"].startswith("RuntimeError: gradwire: method 'topk'")
        # DGC's masking: topk's preset clears the momentum where the rank's frame sent
        # its value, lags's preset does not; momentum_masking= overrides either.
        mk = r["masking"]
        assert [mk[n]["flag"] for n in ("topk", "topk-off", "lags", "lags-on")] == [
            True, False, False, True]
        for on, off in (("topk", "topk-off"), ("lags-on", "lags")):
            sent = mk[on]["kept"] == 0
            assert torch.equal(sent, mk[off]["kept"] == 0), on  # the same frames
            assert torch.equal(mk[on]["buf"], mk[off]["buf"].masked_fill(sent, 0.0)), on
            assert (sent & (mk[off]["buf"] != 0)).any(), off  # something sent, not masked
        heavy = r["heavy_ball"]
        for key in ("lags-nesterov-given", "topk-given", "lags-unchecked"):
            assert heavy[key] == "", (key, heavy[key])
        for key, kind in (("lags-given", "ValueError"), ("cltk-bind", "ValueError"),
                          ("cltk-step", "RuntimeError")):
            mode = key.split("-")[0]
            assert heavy[key].startswith(f"{kind}: gradwire: mode {mode!r} with heavy-ball"), \
                heavy[key]
            assert "nesterov=True" in heavy[key] and "check_optimizer=False" in heavy[key]
        assert heavy["bind-unchanged"]
    replicas_agree(ranks, "nesterov", lambda r, m: r[m]["hook"])


# ------------------------------------------------------------- no processes
def test_import_without_torch_says_how_to_install(monkeypatch):
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in [m for m in sys.modules if m.startswith(("gradwire.ddp", "gradwire.fsdp"))] + [
            "gradwire._torch", "gradwire._collectives", "gradwire._frames"]:
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name in ("gradwire.ddp", "gradwire.fsdp"):
        with pytest.raises(ImportError, match=r"pip install 'gradwire\[torch\]'"):
            __import__(name)


@pytest.mark.filterwarnings("ignore:Complex modules")
def test_unsupported_dtype_refused_at_construction():
    model = torch.nn.Linear(2, 2).to(torch.complex64)
    with pytest.raises(TypeError, match="method='allreduce'"):
        gw.ddp.GradwireState(model, method="ef")


def test_untrained_preset_refused_by_name():
    with pytest.raises(ValueError, match="method='topk' or 'cltk'"):
        gw.ddp.GradwireState(torch.nn.Linear(2, 2), method="randomk")


def test_cast_residuals_reshard_keeping_the_mass():
    """Mode cast's residuals (units of gradient / M) re-shard to any world size:
    what the job owes (the sum over the ranks) is kept; at the same size a
    rank's own state comes back."""
    import numpy as np
    from gradwire.ddp import reshard
    from gradwire.ddp.modes.cast import Residual, parse
    rng = np.random.default_rng(5)
    n = 7
    for M in range(1, 6):
        owed = np.zeros(n)
        states = []
        for r in range(M):
            res = Residual(n)
            res.e.copy_(torch.from_numpy(rng.standard_normal(n).astype(np.float32)))
            res.lr = 0.1
            owed += res.residual()
            states.append({"format": 1, "method": "fp16", "mode": "cast",
                           "codec": ("fp16", {}), "world": (M, r), "steps": 3, "lr": 1.0,
                           "handles": {("r", 0): res.save()}, "momentum": {}, "policy": None})
        for M2 in range(1, 6):
            after = np.zeros(n)
            for r in range(M2):
                sd = reshard(states, (M2, r))
                k, lr, e = parse(sd["handles"][("r", 0)])
                assert k == n and lr == 0.1
                after += e
                if M2 == M:
                    assert sd["handles"] == states[r]["handles"]
            np.testing.assert_allclose(after, owed, rtol=1e-6, atol=1e-6, err_msg=f"{M}->{M2}")
    with pytest.raises(ValueError, match="cast residual"):
        parse(b"GWCR" + bytes(30))


def test_cast_mode_options_and_old_fp16_checkpoints():
    """mode cast takes fp16 or bf16 and no worker momentum; a state of the old
    method fp16 (server mode) loads into GradwireState(..., mode='server')."""
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="'fp16' or 'bf16'"):
        gw.ddp.GradwireState(model, mode="cast", codec="topk")
    with pytest.raises(ValueError, match="no worker momentum"):
        gw.ddp.GradwireState(model, method="fp16", momentum="nesterov", mu=0.9)


def test_config_options():
    from gradwire.ddp import config_options
    a = config_options({"method": "ef", "start_step": 10, "lr": 0.1})
    assert a == {"method": "ef", "start_step": 10, "lr": 0.1}
    b = config_options('{"mode": "server", "codec": {"name": "topk", "density_ppm": 1000}}')
    assert b["mode"] == "server" and b["codec"] == gw.CodecSpec("topk", density_ppm=1000)
    with pytest.raises(ValueError, match="unknown option"):
        config_options({"method": "ef", "momentum_mu": 0.9})
    with pytest.raises(ValueError, match="name"):
        config_options({"codec": {"density_ppm": 1000}})
    with pytest.raises(TypeError):
        config_options(["ef"])
    with pytest.raises(ValueError, match="start_step"):
        gw.ddp.GradwireState(torch.nn.Linear(2, 2), method="ef", start_step=-1)
