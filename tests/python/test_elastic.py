"""Elastic checkpoints: a 4-process DDP job (gloo) checkpointing every 25 steps
loses a rank to SIGKILL in the middle of a step and restarts from its last
whole checkpoint on 3 processes, on 5, and on 4 (examples/elastic_ddp.py).
The error-feedback mass the job owes the model is the same after re-sharding
as before, to float rounding; at the same world size the run ends with the
parameters of an uninterrupted one bit for bit; on 3 and 5 its accuracy is
within the run-to-run spread of uninterrupted runs. Checkpoint files cut short
never load."""
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

import torch.distributed as dist
import torch.multiprocessing as mp

from gradwire.ddp import dcp_entry, dcp_states, load_checkpoint, reshard, save_checkpoint

HERE = os.path.dirname(__file__)
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "elastic_ddp.py")
DATA = "/usr/share/datasets/fashion-mnist"
EVERY, KILL_STEP = 25, 130  # the example's --every default; the docs' kill step
# Test accuracy after 240 steps of uninterrupted 4-process runs spans 74.9-78.8% over
# seeds 0-2 (topk); resumed runs must stay within that spread of the uninterrupted one.
SPREAD_POINTS = 4.0


def example(*args):
    # As docs/distributed.md and the example's docstring run it (the defaults: topk,
    # 240 steps, a checkpoint every 25), in the test's own directories.
    r = subprocess.run([sys.executable, EXAMPLE, *args], capture_output=True, text=True,
                       timeout=900)
    return r.returncode, r.stdout + r.stderr


def final(out):
    m = re.search(r"final: step \d+ on \d+ processes: test acc ([\d.]+)% loss [\d.]+ "
                  r"params (\w+)", out)
    assert m, out[-3000:]
    return float(m.group(1)), m.group(2)


def resumed_mass(out):
    m = re.search(r"mass max \|after - before\| (\S+) of max (\S+)", out)
    assert m, out[-3000:]
    return float(m.group(1)), float(m.group(2))


@pytest.mark.skipif(not os.path.isdir(DATA), reason="dataset-fashion-mnist is not installed")
def test_kill_a_rank_and_resume_on_3_5_and_4_processes(tmp_path):
    rc, out = example("--processes", "4", "--checkpoint", str(tmp_path / "whole"))
    assert rc == 0, out[-3000:]
    acc, digest = final(out)

    killed = tmp_path / "killed"
    rc, out = example("--processes", "4", "--checkpoint", str(killed), "--kill-rank", "1",
                      "--kill-step", str(KILL_STEP))
    assert rc == 3 and "rank 1 died (signal 9)" in out, out[-3000:]
    last = (KILL_STEP // EVERY) * EVERY
    names = sorted(os.listdir(killed))
    assert names[-1] == f"step-{last:08d}.ckpt", names  # nothing of the killed step

    for world in (3, 5, 4):
        d = tmp_path / f"resume{world}"
        shutil.copytree(killed, d)
        # A later checkpoint cut short mid-write: skipped, the whole one before it is used.
        data = (killed / names[-1]).read_bytes()
        (d / f"step-{last + EVERY:08d}.ckpt").write_bytes(data[:len(data) // 2])
        rc, out = example("--processes", str(world), "--checkpoint", str(d), "--resume")
        assert rc == 0, out[-3000:]
        assert "cut short" in out and f"resumed step-{last:08d}.ckpt (step {last}" in out, out
        diff, scale = resumed_mass(out)
        a, dg = final(out)
        print(f"resumed on {world}: test acc {a:.2f}% (uninterrupted {acc:.2f}%), mass "
              f"max |after - before| {diff:.3g} of max {scale:.3g}")
        if world == 4:
            assert diff == 0.0 and dg == digest, out  # bit for bit
        else:
            assert diff <= 1e-6 * (1.0 + scale), out
            assert abs(a - acc) <= SPREAD_POINTS, out


def test_checkpoint_files_cut_short_or_damaged_are_refused(tmp_path):
    path = str(tmp_path / "c.ckpt")
    obj = {"step": 3, "w": torch.arange(1000, dtype=torch.float32)}
    save_checkpoint(path, obj)
    assert torch.equal(load_checkpoint(path)["w"], obj["w"])
    assert os.listdir(tmp_path) == ["c.ckpt"]  # no temporary left behind
    data = open(path, "rb").read()
    for cut in (0, 5, 20, len(data) // 2, len(data) - 1):
        open(path, "wb").write(data[:cut])
        with pytest.raises(ValueError, match="cut short|not a gradwire checkpoint"):
            load_checkpoint(path)
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0x10
    open(path, "wb").write(bytes(damaged))
    with pytest.raises(ValueError, match="checksum"):
        load_checkpoint(path)


def fake_states(M):
    return [{"format": 1, "method": "topk", "mode": "server", "codec": ("topk", {}),
             "world": (M, r), "steps": 7, "lr": 1.0, "handles": {},
             "momentum": {0: torch.full((3,), float(r))}, "policy": None} for r in range(M)]


def test_reshard_needs_every_rank_and_keeps_the_momentum_mean():
    states = fake_states(4)
    out = reshard(states[::-1], (3, 2))  # any order
    assert out["world"] == (3, 2) and out["steps"] == 7
    assert torch.equal(out["momentum"][0], torch.full((3,), 1.5))
    assert reshard(states, (4, 1)) is not states[1] and reshard(states, (4, 1))["world"] == (4, 1)
    with pytest.raises(ValueError, match="give the states of all 4 ranks"):
        reshard(states[:3], (2, 0))
    with pytest.raises(ValueError, match="two states of rank 1"):
        reshard(states[:1] + [states[1], states[1]] + states[3:], (2, 0))
    odd = fake_states(2)
    odd[1]["steps"] = 8
    with pytest.raises(ValueError, match="differ in steps"):
        reshard(odd, (3, 0))


def _dcp_rank(rank, world, port, path):
    import torch.distributed.checkpoint as dcp
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    entries = {"model.w": torch.ones(3), **dcp_entry(fake_states(world)[rank], rank)}
    dcp.save(entries, checkpoint_id=path)
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)


def test_dcp_checkpoint_keeps_every_ranks_state(tmp_path):
    """Saved by 2 gloo processes with torch.distributed.checkpoint: both ranks'
    states come back (DCP would keep one copy of an entry all ranks share)."""
    from test_ddp import free_port
    mp.start_processes(_dcp_rank, args=(2, free_port(), str(tmp_path)), nprocs=2,
                       start_method="spawn")
    states = dcp_states(str(tmp_path))
    assert [s["world"] for s in states] == [(2, 0), (2, 1)]
    assert torch.equal(reshard(states, (3, 2))["momentum"][0], torch.full((3,), 0.5))
    with pytest.raises(ValueError, match="no other.0"):
        dcp_states(str(tmp_path), key="other")


def server_mode_states(M, n, codec):
    """What the hook's server mode keeps for one parameter of n elements on M
    ranks after two steps: rank i's worker per non-empty slice j, its server of
    slice i; and what they owe, (1/M) sum of the workers' + the servers'."""
    import numpy as np
    import gradwire as gw
    slices = [gw.shard_range(n, M, j) for j in range(M)]
    workers = [{j: gw.Worker(len(s), codec, momentum="none") for j, s in enumerate(slices)
                if len(s)} for _ in range(M)]
    servers = {j: gw.Server(n, M, codec, expect=codec, offset=s.start, length=len(s))
               for j, s in enumerate(slices) if len(s)}
    rng = np.random.default_rng(M * 100 + n)
    for _ in range(2):
        for j, server in servers.items():
            frames = [workers[i][j].step(rng.standard_normal(len(slices[j])).astype(np.float32),
                                         0.1) for i in range(M)]
            server.round(frames, 0.1)
    owed = np.zeros(n)
    states = []
    for i in range(M):
        handles = {("w", 0, j): w.save() for j, w in workers[i].items()}
        for j, w in workers[i].items():
            owed[slices[j].start:slices[j].stop] += w.residual() / M
        if i in servers:
            handles[("s", 0)] = servers[i].save()
            owed[slices[i].start:slices[i].stop] += servers[i].residual()
        states.append({"format": 1, "method": "topk", "mode": "server",
                       "codec": (codec.name, codec.params), "world": (M, i), "steps": 2,
                       "lr": 1.0, "handles": handles, "momentum": {}, "policy": None})
    return states, owed


@pytest.mark.parametrize("n", [3, 11])
def test_server_mode_states_reshard_with_empty_slices(n):
    """The hook's server-mode handles (slices of gw_shard_range, none for an empty
    slice, so M > n leaves ranks without a server) re-shard for every M, M' in
    1..6 and owe what they owed."""
    import numpy as np
    import gradwire as gw
    codec = gw.CodecSpec("topk", k=1)
    for M in range(1, 7):
        states, owed = server_mode_states(M, n, codec)
        for M2 in range(1, 7):
            slices = [gw.shard_range(n, M2, j) for j in range(M2)]
            after = np.zeros(n)
            for r in range(M2):
                sd = reshard(states, (M2, r))
                assert sorted(k for k in sd["handles"] if k[0] == "w") == [
                    ("w", 0, j) for j, s in enumerate(slices) if len(s)]
                for (kind, _, *j), blob in sd["handles"].items():
                    s = slices[j[0]] if kind == "w" else slices[r]
                    h = (gw.Worker(len(s), codec, momentum="none") if kind == "w" else
                         gw.Server(n, M2, codec, expect=codec, offset=s.start, length=len(s)))
                    h.load(blob)
                    after[s.start:s.stop] += h.residual() / (M2 if kind == "w" else 1)
                assert (("s", 0) in sd["handles"]) == bool(len(slices[r]))
            np.testing.assert_allclose(after, owed, rtol=1e-6, atol=1e-7, err_msg=f"{M}->{M2}")
