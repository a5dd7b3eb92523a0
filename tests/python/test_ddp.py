"""The DDP communication hook across real processes (gloo on 127.0.0.1)
against a single-process simulation of each method.

ddp_worker.py trains ddp_common's model with every method on 2, 3 and 4
ranks; the simulation here computes every rank's gradient on one model and
runs the method's arithmetic with gradwire handles directly (no
torch.distributed, none of the hook's code). Parameters must agree to float
tolerance (the sum all-reduce may add in another order; for the 16-bit casts,
whose sums round at every addition, to their precision); the hook's pickled
checkpoint must resume bit-identically where gradwire does the averaging.
"""
import csv
import math
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

import gradwire as gw
import gradwire.ddp  # noqa: F401

sys.path.insert(0, os.path.dirname(__file__))
import ddp_common as C  # noqa: E402

HERE = os.path.dirname(__file__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(world: int, tmp_path, *extra) -> list:
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "ddp_worker.py"), str(r),
                               str(world), port, str(tmp_path), *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in range(world)]
    logs = [p.communicate(timeout=600)[0].decode() for p in procs]
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-3000:]
    return [torch.load(os.path.join(tmp_path, f"rank{r}.pt")) for r in range(world)]


# ------------------------------------------------------------------ simulation
def rank_grads(model, step, M, accumulate):
    """Every rank's gradient at the current parameters, as flat float32 arrays per parameter."""
    grads = []
    for i in range(M):
        model.zero_grad()
        if accumulate:
            C.loss_of(model, *C.batch(step, i, 1)).backward()
        C.loss_of(model, *C.batch(step, i, 0)).backward()
        grads.append([p.grad.detach().reshape(-1).numpy().copy() for p in model.parameters()])
    return grads


class Sim:
    """One method's state on all M ranks, stepped in one process."""

    def __init__(self, name, M, sizes):
        o = C.state_options(name)
        self.method, self.M, self.sizes = o["method"], M, sizes
        preset = gw.ddp.METHODS[self.method]
        self.mode = o.get("mode", preset["mode"])
        if "codec" in preset:
            self.spec = gw.CodecSpec(preset["codec"][0], **preset["codec"][1])
        self.momentum, self.mu = o.get("momentum", "none"), o.get("mu", 0.0)
        self.seed, self.warmup = o.get("seed", 0), o.get("warmup_steps", 0)
        self.h = {}

    def worker(self, i, p, j, n):
        key = ("w", i, p, j)
        if key not in self.h:
            self.h[key] = gw.Worker(n, self.spec, momentum=self.momentum, mu=self.mu, tensor=p,
                                    seed=self.seed)
        return self.h[key]

    def update(self, grads):
        """The averaged update direction per parameter."""
        M = self.M
        out = []
        for p, n in enumerate(self.sizes):
            g = [grads[i][p] for i in range(M)]
            u = np.zeros(n, np.float32)
            if self.mode == "allreduce":
                u = sum(g[1:], g[0].copy()) / np.float32(M)
            elif self.mode == "server":
                for j in range(M):
                    s = gw.shard_range(n, M, j)
                    if not len(s):
                        continue
                    key = ("s", p, j)
                    if key not in self.h:
                        self.h[key] = gw.Server(n, M, self.spec, expect=self.spec,
                                                offset=s.start, length=len(s), tensor=p)
                    for i in range(M):
                        self.h[key].push(self.worker(i, p, j, len(s)).step(g[i][s.start:s.stop]))
                    gw.decode(self.h[key].step(), out=u[s.start:s.stop])
            elif self.mode == "cast":
                # y = e + g / M, cast to 16 bits, e = y - cast(y); the casts summed
                # in 16 bits (gloo rounds each addition; its order may differ)
                dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[self.spec.name]
                total = None
                for i in range(M):
                    e = self.h.setdefault(("r", i, p), torch.zeros(n))
                    # gw_ef_cast's arithmetic: t = x * (1/M) in float32, then e + t
                    y = e + torch.from_numpy(g[i] * np.float32(1.0 / M))
                    h = y.to(dtype)
                    self.h[("r", i, p)] = y - h.float()
                    total = h if total is None else total + h
                u = total.float().numpy()
            elif self.mode in ("allgather", "lags"):
                frames = []
                for i in range(M):
                    if self.mode == "lags":
                        key = ("l", i, p)
                        if key not in self.h:
                            self.h[key] = gw.LagsLayer(n, self.spec, tensor=p)
                        frames.append(self.h[key].step(g[i]))
                    else:
                        frames.append(self.worker(i, p, 0, n).step(g[i]))
                for f in frames:
                    gw.decode_accumulate(f, u, 1.0 / M)
            elif self.mode == "randomk":
                k = min(n, math.ceil(n * self.spec["density_ppm"] / 1e6))
                total = None
                for i in range(M):
                    w = self.worker(i, p, 0, n)
                    idx = gw.randk_indices(self.seed, w.step_count(), p, n, k)
                    vals = gw.decode(w.step(g[i]))[idx]
                    total = vals if total is None else total + vals
                u[idx] = total / M
            else:  # cltk
                hs = []
                for i in range(M):
                    key = ("c", i, p)
                    if key not in self.h:
                        self.h[key] = gw.Cltk(n, M, i, self.spec, warmup_steps=self.warmup,
                                              tensor=p)
                    self.h[key].begin(g[i])
                    hs.append(self.h[key])
                leader = hs[0].leader()
                frame = None if leader == gw.gwnative.GW_CLTK_NO_LEADER else hs[leader].select()
                vals = [h.extract(frame) for h in hs]
                summed = sum(vals[1:], vals[0].copy())
                for i, h in enumerate(hs):
                    x = np.zeros(n, np.float32)
                    h.apply(summed, x)
                    if i == 0:
                        u = -x
            out.append(u)
        return out


def simulate(name, M, accumulate=False):
    torch.set_num_threads(1)
    model = C.make_model()
    opt = torch.optim.SGD(model.parameters(), lr=C.LR)
    sim = Sim(name, M, [p.numel() for p in model.parameters()])
    for step in range(C.STEPS):
        upd = sim.update(rank_grads(model, step, M, accumulate))
        opt.zero_grad()
        for p, u in zip(model.parameters(), upd):
            p.grad = torch.from_numpy(u).reshape(p.shape).to(p.dtype)
        opt.step()
    return [p.detach() for p in model.parameters()]


def check_world(world, tmp_path, accumulate=False):
    extra = ("accumulate",) if accumulate else ()
    results = run_ranks(world, tmp_path, *extra)
    for name in C.METHODS:
        ranks = [r[name] for r in results]
        # DDP keeps replicas identical, and each rank's pickled hook state resumes
        # exactly, bit for bit where gradwire does the averaging. Where gloo's
        # all_reduce sums (allreduce, randomk, cltk) its order follows DDP's
        # buckets, which a resumed DDP builds anew: there, to float tolerance.
        for r in ranks[1:]:
            assert all(torch.equal(a, b) for a, b in zip(ranks[0]["params"], r["params"])), name
        o = C.state_options(name)
        mode = o.get("mode", gw.ddp.METHODS[o["method"]]["mode"])
        summed_by_gloo = mode in ("allreduce", "randomk", "cltk", "cast")
        # 16-bit sums: an addition in another order is one rounding of the cast apart
        tol = (dict(rtol=2e-5, atol=2e-6) if mode != "cast" else
               dict(rtol=1e-4, atol=2e-5) if name == "fp16" else dict(rtol=1e-3, atol=1.6e-4))
        for r in ranks:
            for a, b in zip(r["params"], r["resumed"]):
                if summed_by_gloo:
                    torch.testing.assert_close(a, b, **tol)
                else:
                    assert torch.equal(a, b), f"{name}: the resumed run differs"
        assert ranks[0]["steps"] == C.STEPS
        expect = simulate(name, world, accumulate)
        for a, b in zip(ranks[0]["params"], expect):
            torch.testing.assert_close(a, b, **tol, msg=f"{name} on {world} ranks")
    # Full precision hands over the whole model once per step (per rank); the
    # compressed methods' savings need real layer sizes (the demo measures them).
    numel = sum(p.numel() for p in C.make_model().parameters())
    for r in results:
        assert r["allreduce"]["bytes"] == 4 * numel * C.STEPS
        # state.hook_time: the hook's own work is counted where it does any
        # (plain all-reduce steps add nothing).
        for name, m in r.items():
            t = m["hook_time"]
            if name == "allreduce":
                assert t == {"cpu": 0.0, "wall": 0.0}, t
            else:
                assert t["cpu"] > 0 and t["wall"] > 0, (name, t)


@pytest.mark.parametrize("world", [2, 3, 4])
def test_ddp_hook_matches_simulation(world, tmp_path):
    check_world(world, tmp_path)


def test_ddp_hook_with_no_sync_accumulation(tmp_path):
    check_world(2, tmp_path, accumulate=True)


def test_state_rejects_wrong_method():
    with pytest.raises(ValueError, match="unknown method"):
        gw.ddp.GradwireState(torch.nn.Linear(2, 2), method="nope")


def test_ddp_example_runs_as_documented():
    """examples/train_fmnist_ddp.py as the README's demo runs it (--quick: one
    epoch of 6000 samples), plain DDP beside two methods given the optimizer."""
    data = "/usr/share/datasets/fashion-mnist"
    if not os.path.isdir(data):
        pytest.skip("dataset-fashion-mnist is not installed")
    example = os.path.join(HERE, "..", "..", "examples", "train_fmnist_ddp.py")
    run = subprocess.run([sys.executable, example, "--processes", "2", "--quick",
                          "--methods", "ddp,ef,lags"], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = run.stdout.split("summary after 1 epochs:")[1].splitlines()[2:5]
    acc = {r.split()[0]: float(r.split()[1].rstrip("%")) for r in rows}
    assert set(acc) == {"ddp", "ef", "lags"}, run.stdout
    # 93 steps: plain DDP is near 78%, LAGS at 0.1% near 49%; chance is 10%
    for method, a in acc.items():
        assert a > (70.0 if method == "ddp" else 40.0), f"{method}: {a}%\n{run.stdout}"


def test_e2e_benchmark_runs(tmp_path):
    """bench/ddp_e2e.py (scripts/bench_ddp.sh) end to end on the smallest run:
    its own network namespace, a shaped loopback, plain DDP and one gradwire
    method, one timed step each. Times are printed, never asserted."""
    bench = os.path.join(HERE, "..", "..", "bench", "ddp_e2e.py")
    run = subprocess.run([sys.executable, bench, "--links", "1gbit", "--methods", "ddp,gw:auto",
                          "--steps", "1gbit=1+1", "--csv", str(tmp_path / "e2e.csv"),
                          "--png", str(tmp_path / "e2e.png")], capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    if "skipped:" in run.stdout:
        pytest.skip(run.stdout.strip().splitlines()[-1])
    rows = [line.split() for line in run.stdout.splitlines() if line.startswith("1gbit ")]
    assert [r[1] for r in rows] == ["ddp", "gw:auto"], run.stdout
    with open(tmp_path / "e2e.csv", newline="") as f:
        got = {r["method"]: r for r in csv.DictReader(f)}
    assert list(got) == ["ddp", "gw:auto"]
    # the breakdown: compute for every method, the hook's own time for gradwire's
    assert float(got["ddp"]["compute_ms"]) > 0 and got["ddp"]["hook_cpu_ms"] == ""
    assert float(got["gw:auto"]["hook_wall_ms"]) >= 0, got


def test_bench_method_specs():
    """bench/ddp_e2e.py's gw:<method>/<option>=<value> specs: integer state
    options, and codec.<param> for the method's codec."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
    from ddp_e2e import gw_spec
    assert gw_spec("gw:auto/reprobe_steps=12") == ("auto", {"reprobe_steps": 12})
    assert gw_spec("gw:topk@server") == ("topk@server", {})
    assert gw_spec("gw:lags/codec.value_dtype=f16/codec.density_ppm=500/start_step=3") == (
        "lags", {"codec": {"value_dtype": "f16", "density_ppm": 500}, "start_step": 3})


def test_e2e_link_change_runs(tmp_path):
    """bench/ddp_e2e.py --link-change on the smallest run: unshaped, then 1 Gbit/s
    from step 2; gw:auto probing again one step after each decision (probes of
    1 + 1 steps: they begin at steps 1 and 4, counted from 0, DDP's first) began
    its second probe. Times are printed, never asserted."""
    bench = os.path.join(HERE, "..", "..", "bench", "ddp_e2e.py")
    csv_path = tmp_path / "change.csv"
    run = subprocess.run([sys.executable, bench, "--links", "unshaped", "--link-change", "1gbit@2",
                          "--steps", "0+6", "--methods", "gw:auto/reprobe_steps=1/probe_steps=1",
                          "--link-change-csv", str(csv_path),
                          "--link-change-png", str(tmp_path / "change.png")],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    if "skipped:" in run.stdout:
        pytest.skip(run.stdout.strip().splitlines()[-1])
    import csv
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["status"] for r in rows] == ["ok"], rows
    assert len(rows[0]["step_ms"].split()) == 6 and rows[0]["probes"] == "2", rows


def test_e2e_time_to_loss_runs(tmp_path):
    """bench/ddp_e2e.py --to-loss on the smallest run: plain DDP's loss after 2
    steps is the target, gw:ef counts its steps unshaped and times them at
    1 Gbit/s, gw:auto trains there itself. Times are printed, never asserted."""
    bench = os.path.join(HERE, "..", "..", "bench", "ddp_e2e.py")
    csv_path = tmp_path / "to_loss.csv"
    run = subprocess.run([sys.executable, bench, "--to-loss", "2", "--links", "1gbit",
                          "--methods", "ddp,gw:ef,gw:auto", "--steps", "1gbit=1+1",
                          "--to-loss-csv", str(csv_path), "--to-loss-png", str(tmp_path / "tl.png")],
                         capture_output=True, text=True, timeout=900,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    if "skipped:" in run.stdout:
        pytest.skip(run.stdout.strip().splitlines()[-1])
    assert "1gbit: time to plain DDP's loss after 2 steps" in run.stdout, run.stdout
    import csv
    rows = {r["method"]: r for r in csv.DictReader(csv_path.open())}
    assert sorted(rows) == ["ddp", "gw:auto", "gw:ef"], rows
    assert all(r["status"] == "ok" for r in rows.values()), rows
    # DDP reaches its own target by step 2 (at the latest), and is 1.00x itself
    assert rows["ddp"]["reached"] == "1" and int(rows["ddp"]["steps"]) <= 2, rows["ddp"]
    assert float(rows["ddp"]["vs_ddp"]) == 1.0
    for r in rows.values():  # at most CAP x N steps; the time is steps x step time or measured
        assert 1 <= int(r["steps"]) <= 8 and float(r["time_s"]) > 0, r
    ef = rows["gw:ef"]
    assert float(ef["time_s"]) == pytest.approx(int(ef["steps"]) * float(ef["median_ms"]) / 1000)


def test_never_slower_reprobe_cycles_and_resumes():
    """reprobe_steps=R: probe_steps dense, as many with the method, R decided,
    again; a new probe forgets the decision. Resumed under the same R the
    decision and its probe count hold; under another R the decision holds
    until a probe is due under it, and no probe begins mid-way."""
    from gradwire.ddp._policy import NeverSlower
    cycle = ["dense"] * 2 + ["method"] * 2 + ["decided"] * 3
    p = NeverSlower(probe=2, every=3)
    assert [p.phase(k) for k in range(16)] == ["warm"] + cycle * 2 + ["dense"]
    assert [NeverSlower(2).phase(k) for k in range(9)] == ["warm"] + cycle[:4] + ["decided"] * 4
    assert not any(p.begin(k) for k in range(8))
    p.dense, p.flushed, p.dense_time = {(0, 1)}, {0, 1}, {(0, 1): 1.0}
    assert p.begin(8) and p.cycle == 1
    assert p.dense is None and not p.flushed and not p.dense_time and not p.all_dense
    p.dense = {(2,)}
    same = NeverSlower(2, 3)
    same.load_state_dict(p.state_dict())
    assert same.cycle == 1 and same.dense == {(2,)} and not same.begin(9)
    other = NeverSlower(2, 5)  # cycles of 9 steps: probes due at k = 10, 19, ...
    other.load_state_dict(p.state_dict())
    assert other.phase(11) == "decided" and not other.begin(11) and other.dense == {(2,)}
    assert other.begin(19) and other.phase(19) == "dense" and other.dense is None
    with pytest.raises(ValueError, match="reprobe_steps >= 0"):
        NeverSlower(2, -1)
