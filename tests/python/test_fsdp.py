"""FSDP2's fully_shard with gradwire's reduce-scatter on 2, 3 and 4 processes
against a single-process simulation of FSDP's layout: each module's
gradients are cut into world_size chunks (dim 0 padded to a multiple of
world_size), chunk j of every rank is compressed with that rank's
error-feedback worker and averaged into rank j's shard."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import gradwire as gw

sys.path.insert(0, os.path.dirname(__file__))
import ddp_common as C  # noqa: E402
from test_ddp import free_port, rank_grads  # noqa: E402

HERE = os.path.dirname(__file__)


def simulate(codec, M):
    torch.set_num_threads(1)
    model = C.make_model()
    units = [list(l.parameters()) for l in model if isinstance(l, torch.nn.Linear)]
    pid = {id(p): i for i, p in enumerate(model.parameters())}
    opt = torch.optim.SGD(model.parameters(), lr=C.LR)
    workers = {}
    for step in range(C.STEPS):
        grads = rank_grads(model, step, M, False)
        upd = {}
        for u, params in enumerate(units):
            rows = [math.ceil(p.shape[0] / M) for p in params]

            def chunk(i, j):
                parts = []
                for p, r in zip(params, rows):
                    g = torch.from_numpy(grads[i][pid[id(p)]]).reshape(p.shape)
                    pad = torch.zeros((r * M,) + tuple(p.shape[1:]))
                    pad[:p.shape[0]] = g
                    parts.append(pad[j * r:(j + 1) * r].reshape(-1))
                return torch.cat(parts).numpy()

            shards = []
            for j in range(M):
                acc = np.zeros(chunk(0, j).size, np.float32)
                for i in range(M):
                    w = workers.setdefault((u, j, i), gw.Worker(acc.size, codec, momentum="none"))
                    gw.decode_accumulate(w.step(chunk(i, j)), acc, 1.0 / M)
                shards.append(acc)
            # Back from shards to parameters.
            pos = [0] * M
            for p, r in zip(params, rows):
                inner = int(np.prod(p.shape[1:])) if p.dim() > 1 else 1
                full = np.concatenate([shards[j][pos[j]:pos[j] + r * inner] for j in range(M)])
                for j in range(M):
                    pos[j] += r * inner
                upd[id(p)] = torch.from_numpy(full[:p.numel()].copy()).reshape(p.shape)
        opt.zero_grad()
        for p in model.parameters():
            p.grad = upd[id(p)]
        opt.step()
    return [p.detach() for p in model.parameters()]


CODECS = ["scaled_sign", "topk"]


@pytest.fixture(scope="module", params=[2, 3, 4], ids=lambda w: f"world{w}")
def job(request, tmp_path_factory):
    """Every codec on `world` processes, in one job."""
    world, out = request.param, tmp_path_factory.mktemp(f"fsdp{request.param}")
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "fsdp_worker.py"), str(r),
                               str(world), port, str(out), *CODECS],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in range(world)]
    logs = [p.communicate(timeout=600)[0].decode() for p in procs]
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-3000:]
    return world, out


@pytest.mark.parametrize("codec", CODECS)
def test_fsdp2_reduce_scatter_matches_simulation(job, codec):
    world, out = job
    got = torch.load(os.path.join(out, f"fsdp_{codec}.pt"))
    assert got["calls"] == [C.STEPS] * 3  # one reduce-scatter per module per step
    for a, b in zip(got["params"], simulate(codec, world)):
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-6)


def flat_to_params(chunks, shapes, M):
    """Chunks of FSDP's flat buffer over M ranks -> each parameter's elements."""
    out, pos = [], [0] * M
    for shape in shapes:
        rows = math.ceil(shape[0] / M)
        inner = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        full = np.concatenate([chunks[j][pos[j]:pos[j] + rows * inner] for j in range(M)])
        pos = [p + rows * inner for p in pos]
        out.append(full[:int(np.prod(shape))])
    return np.concatenate(out).astype(np.float64)


@pytest.mark.parametrize("momentum", ["none", "nesterov"])
def test_reduce_scatter_state_reshards_keeping_the_mass(momentum):
    """States of M ranks -> each of M' ranks, in FSDP's layout: what every parameter
    element is owed (the mean over ranks of its residual, and of its momentum) is kept."""
    from gradwire.fsdp import GradwireReduceScatter
    shapes = [(5, 3), (5,), (7, 2), (1,)]
    mu = 0.9 if momentum != "none" else 0.0
    make = lambda: GradwireReduceScatter("topk", momentum=momentum, mu=mu)  # noqa: E731
    for M in range(1, 6):
        shard = sum(math.ceil(s[0] / M) * (int(np.prod(s[1:])) if len(s) > 1 else 1)
                    for s in shapes)
        states, res, mom = [], [], []
        for i in range(M):
            rs = make()
            rs.numel, rs.world = shard * M, (M, i)
            for j in range(M):
                w = rs.workers[j] = gw.Worker(shard, rs.codec, momentum=momentum, mu=mu)
                for t in range(3):
                    w.step(np.random.default_rng(100 * M + 10 * i + j + t).normal(
                        size=shard).astype(np.float32))
            states.append(rs.state_dict())
            res.append(flat_to_params([rs.workers[j].residual() for j in range(M)], shapes, M))
            mom.append(flat_to_params([rs.workers[j].momentum() for j in range(M)], shapes, M))
        for M2 in range(1, 6):
            res2, mom2 = [], []
            for r in range(M2):
                rs = make()
                rs.load_state_dict(states[::-1], shapes=shapes, world=(M2, r))
                assert rs.world == (M2, r) and sorted(rs.workers) == list(range(M2))
                res2.append(flat_to_params([rs.workers[j].residual() for j in range(M2)],
                                           shapes, M2))
                mom2.append(flat_to_params([rs.workers[j].momentum() for j in range(M2)],
                                           shapes, M2))
                assert rs.workers[0].step_count() == 3
            np.testing.assert_allclose(np.mean(res2, 0), np.mean(res, 0), rtol=1e-6, atol=1e-7)
            if momentum != "none":
                np.testing.assert_allclose(np.mean(mom2, 0), np.mean(mom, 0), rtol=1e-6,
                                           atol=1e-7)
    with pytest.raises(ValueError, match="needs shapes="):
        make().load_state_dict(states)
