"""One rank of test_ddp_patterns.py: PyTorch's own comm-hook test patterns
(test_c10d_common / test_c10d_gloo / distributed_test) run on gradwire's
hook, many checks in one process so a world size costs one start of torch.

    python ddp_patterns_worker.py RANK WORLD PORT OUTDIR [CHECK ...]

Each check returns plain numbers and tensors (what test_ddp_patterns.py
asserts on); an exception is recorded as the check's result ("error") and
the next check runs, so one failure does not hide the others.
"""
import datetime
import io
import os
import pickle
import sys
import traceback

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(__file__))
import ddp_common as C  # noqa: E402
from gradwire.ddp import GradwireState, hook  # noqa: E402
from gradwire.ddp._policy import NeverSlower  # noqa: E402

COMPRESSED = ["ef", "topk", "fp16", "bf16", "efsignsgd", "lags", "randomk", "cltk"]
EVERY = ["allreduce"] + COMPRESSED
TINY = 1e-5  # bucket_cap_mb: a bucket per parameter or two
CAST_HALF_STEP = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}  # half a step, relative
STEPS = 3


def options(method):
    return C.state_options(method) if method == "randomk" else dict(method=method)


def mlp(dtype=torch.float32):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3)).to(dtype)


def data(step, rank, dtype=torch.float32, n=6):
    g = torch.Generator().manual_seed(1000 * step + 10 * rank + 1)
    return torch.randn(4, n, generator=g).to(dtype), torch.randn(4, 3, generator=g).to(dtype)


def loss_of(out, y):
    return ((out - y) ** 2).mean()


def params(model):
    return [p.detach().clone() for p in model.parameters()]


def train(ddp, rank, steps=STEPS, dtype=torch.float32, lr=0.1, accumulate=0):
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    for step in range(steps):
        opt.zero_grad()
        for micro in range(accumulate):
            with ddp.no_sync():
                loss_of(ddp(data(step, rank + 100 * (micro + 1), dtype)[0]),
                        data(step, rank, dtype)[1]).backward()
        x, y = data(step, rank, dtype)
        loss_of(ddp(x), y).backward()
        opt.step()
    return params(ddp.module)


def hooked(model, method, group=None, state_kw=None, **ddp_kw):
    ddp = DDP(model, process_group=group, **ddp_kw)
    state = GradwireState(ddp, **options(method), **(state_kw or {}))
    ddp.register_comm_hook(state, hook)
    return ddp, state


# ------------------------------------------------------------ the checks
def check_parity(rank, world):
    """Hook parity with DDP's own average (allreduce exactly, fp16 to its
    precision) over steps of the same gradients (no optimizer step)."""
    out = {}
    for method in ("allreduce", "fp16"):
        plain = DDP(mlp())
        ddp, _ = hooked(mlp(), method, bucket_cap_mb=TINY)
        diffs = []
        for step in range(STEPS):
            for m in (plain, ddp):
                m.zero_grad()
                x, y = data(step, rank)
                loss_of(m(x), y).backward()
            if method == "allreduce" or step == 0:  # fp16 after step 0 carries its residual
                diffs.append(max((a.grad - b.grad).abs().max().item() /
                                 max(a.grad.abs().max().item(), 1e-30)
                                 for a, b in zip(plain.parameters(), ddp.parameters())))
        out[method] = max(diffs)
    return out


def kept(state, pid, n):
    """The gradient mass `state` keeps back for parameter pid on this rank, in
    units of what the rank sends: the worker's residual, plus M times the
    server residual of the slice this rank serves (the server averages)."""
    M, r = state.comm.size, state.comm.rank
    k = torch.zeros(n)
    h = state._handles
    if state.mode == "server":
        from gradwire import shard_range
        for j in range(M):
            s = shard_range(n, M, j)
            if ("w", pid, j) in h:
                k[s.start:s.stop] += torch.from_numpy(h[("w", pid, j)].residual())
        s = shard_range(n, M, r)
        if ("s", pid) in h:
            k[s.start:s.stop] += M * torch.from_numpy(h[("s", pid)].residual())
    elif ("w", pid, 0) in h:
        k += torch.from_numpy(h[("w", pid, 0)].residual())
    elif ("l", pid) in h:
        k += torch.from_numpy(h[("l", pid)].residual())
    elif ("c", pid) in h:
        k += torch.from_numpy(h[("c", pid)].memory())
    elif ("r", pid) in h:  # mode cast: kept in units of gradient / M
        k += M * torch.from_numpy(h[("r", pid)].residual())
    return k


class Dead(torch.nn.Module):
    """An MLP with a branch every rank uses at step 0 only (`dead` after) and
    one only rank 0 uses."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Linear(6, 3)
        self.dead = torch.nn.Linear(6, 3)
        self.partial = torch.nn.Linear(6, 3)
        self.step, self.rank = 0, 0

    def forward(self, x):
        h = self.a(x)
        if self.step == 0:
            h = h + self.dead(x)
        if self.rank == 0:
            h = h + self.partial(x)
        return h


def mass_run(rank, world, method, find_unused, policy=False):
    """Every step, on every parameter: what the ranks handed in plus what they
    had kept equals what DDP applied (M times the averaged update; zero where
    DDP leaves .grad None) plus what they keep now. policy: never_slower with a
    one-step probe and timings that send every other bucket dense ("mixed": the
    method faster over the whole step) or every bucket ("all": the method
    faster on every other bucket but slower over the step), so buckets hand
    their residuals over at step 3; or ("cycle") probing again 2 steps after
    each decision, the method slower in even probes and faster in odd ones."""
    model, local = (Dead(), Dead()) if find_unused else (mlp(), mlp())
    model.rank = local.rank = rank
    state_kw = dict(policy="never_slower", probe_steps=1) if policy else None
    if policy == "cycle":
        state_kw["reprobe_steps"] = 2
    ddp, state = hooked(model, method, state_kw=state_kw, bucket_cap_mb=TINY,
                        find_unused_parameters=find_unused)
    if policy == "cycle":
        state.policy.record = timings_by_cycle(state.policy)
    elif policy:  # the method slower on buckets whose first parameter is even
        slow, fast = (1.5, 0.25) if policy == "mixed" else (2.0, 0.5)
        state.policy.record = lambda phase, key, t, p=state.policy: NeverSlower.record(
            p, phase, key, 1.0 if phase == "dense" else (fast if key[0] % 2 else slow))
    direct, trail = 0, []
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    names = [n for n, _ in model.named_parameters()]
    sizes = [p.numel() for p in model.parameters()]
    err, dead_moved, dead_residual = 0.0, 0.0, 0.0
    # policy: 2 steps after its decision; cycle: 3 decisions, probes of 1 + 1 steps, 2 decided
    for step in range(13 if policy == "cycle" else STEPS + (3 if policy else 1)):
        if find_unused:
            model.step = local.step = step
        x, y = data(step, rank)
        local.load_state_dict(model.state_dict())
        local.zero_grad()
        loss_of(local(x), y).backward()
        before = [kept(state, i, n) for i, n in enumerate(sizes)]
        opt.zero_grad()
        loss_of(ddp(x), y).backward()
        direct += bool(getattr(state, "_dense_decided", False))
        for i, (p, q) in enumerate(zip(model.parameters(), local.parameters())):
            g = torch.zeros(sizes[i]) if q.grad is None else q.grad.reshape(-1)
            applied = torch.zeros(sizes[i]) if p.grad is None else p.grad.reshape(-1)
            after = kept(state, i, sizes[i])
            lhs = g + before[i] - after
            slack = torch.zeros(())
            if state.mode == "cast":
                # lhs is M times this rank's 16-bit values, exactly; the all_reduce sums
                # them in 16 bits, rounding each of its M - 1 additions by at most half
                # a 16-bit step of the running sum (relative 2^-11 fp16, 2^-8 bf16)
                slack = lhs.abs()
                dist.all_reduce(slack)
                slack = (world - 1) * CAST_HALF_STEP[state.codec.name] * slack + 1e-7
            dist.all_reduce(lhs)
            err = max(err, ((lhs - world * applied).abs() - slack).clamp_min(0).max().item())
            if find_unused and names[i].startswith("dead") and step >= 1:
                dead_residual = max(dead_residual, (after - before[i]).abs().max().item())
        dead0 = [p.detach().clone() for p in model.dead.parameters()] if find_unused else []
        opt.step()
        if policy:
            dense = state.policy.dense
            trail.append((state.policy.cycle, None if dense is None else len(dense),
                          len(state._handles) > 0))
        if find_unused and step >= 1:
            dead_moved = max(dead_moved, max((a - b).abs().max().item()
                                             for a, b in zip(dead0, model.dead.parameters())))
    if policy:
        return {"mass": err, "dense": sorted(state.policy.dense),
                "handles": sorted({k[1] for k in state._handles}),
                "flushed": sorted(state.policy.flushed), "direct_steps": direct,
                "buckets": len(state.policy.dense_time), "trail": trail}
    return {"mass": err, "dead_moved": dead_moved, "dead_residual": dead_residual,
            "dead_kept": kept(state, names.index("dead.weight"), sizes[names.index(
                "dead.weight")]).abs().sum().item() if find_unused else 0.0}


def check_mass(rank, world):
    out = {}
    for method in ("ef", "fp16", "bf16", "efsignsgd", "lags", "randomk", "cltk"):
        out[method] = mass_run(rank, world, method, False)
        out[method + "+unused"] = mass_run(rank, world, method, True)
    return out


def ulps(a, b):
    """How many 16-bit steps apart two tensors of float16 (bfloat16) values are."""
    def ordered(t):
        u = t.view(torch.int16).to(torch.int32) & 0xFFFF
        return torch.where(u >= 0x8000, 0x8000 - u, u)
    return (ordered(a) - ordered(b)).abs().max().item() if a.numel() else 0


def check_cast(rank, world):
    """Mode cast (methods fp16, bf16) against torch's own fp16_compress_hook and
    bf16_compress_hook over the same gradients (no optimizer step): the first
    step equal where M is a power of two (but for quotients below float16's
    normal range, which torch rounds twice: it casts, then divides in 16 bits;
    the hook divides in float32, then casts once), every later one to the
    cast's precision (the residuals carry the rounding). Error feedback, step
    by step: each rank's residual is y - cast(y), y = e + g / M, bit for bit, so
    what a rank sends plus what it keeps is what came in; over all the steps,
    what DDP applied plus what the ranks keep equals the sum of the exact
    averages but for the 16-bit sum's own roundings (at most half a step of the
    running sum per addition, none of which error feedback can see). A
    state_dict() loaded into a new state on a new DDP holds the same residuals
    and continues as the straight run (bit for bit on 2 ranks)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as dh
    out = {}
    for method, torch_hook, dtype in (("fp16", dh.fp16_compress_hook, torch.float16),
                                      ("bf16", dh.bf16_compress_hook, torch.bfloat16)):
        ref = DDP(mlp(), bucket_cap_mb=TINY)
        ref.register_comm_hook(None, torch_hook)
        plain = DDP(mlp(), bucket_cap_mb=TINY)
        local = mlp()
        ddp, state = hooked(mlp(), method, bucket_cap_mb=TINY)
        sizes = [p.numel() for p in plain.parameters()]
        z64 = [torch.zeros(n, dtype=torch.float64) for n in sizes]
        applied, exact, sent, came, bound = ([t.clone() for t in z64] for _ in range(5))
        e = [torch.zeros(n) for n in sizes]  # this rank's residuals, as the mode computes them
        first_ulps, rel, sd, straight, ef_exact, sum_err = None, 0.0, None, [], True, 0.0
        for step in range(STEPS + 2):
            x, y = data(step, rank)
            for m in (ref, plain, ddp, local):
                m.zero_grad()
                loss_of(m(x), y).backward()
            ours = [p.grad.reshape(-1) for p in ddp.parameters()]
            theirs = [p.grad.reshape(-1) for p in ref.parameters()]
            diff = max(((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()
                       for a, b in zip(ours, theirs))
            if step == 0:  # both are 16-bit sums, cast back: compare them as such
                first_ulps = max(ulps(a.to(dtype), b.to(dtype)) for a, b in zip(ours, theirs))
                first_rel = diff
            rel = max(rel, diff)
            for i, (a, b, q) in enumerate(zip(ours, plain.parameters(), local.parameters())):
                g = q.grad.reshape(-1)
                yv = e[i] + g * torch.tensor(1.0 / world)  # gw_ef_cast's: no FMA
                h = yv.to(dtype).float()
                e[i] = yv - h
                ef_exact &= torch.equal(e[i], torch.from_numpy(
                    state._handles[("r", i)].residual()))
                hs = h.double()
                dist.all_reduce(hs)  # the ranks' 16-bit values summed exactly
                habs = h.double().abs()
                dist.all_reduce(habs)
                allow = (world - 1) * CAST_HALF_STEP[method] * habs + 1e-12
                sum_err = max(sum_err, ((a.double() - hs).abs() / allow).max().item())
                gm = (g / world).double()
                dist.all_reduce(gm)
                applied[i] += a.double()
                exact[i] += b.grad.reshape(-1).double()
                sent[i] += hs
                came[i] += gm
                bound[i] += allow
            if step == STEPS - 1:
                sd = state.state_dict()
            if step >= STEPS:
                straight.append([p.grad.clone() for p in ddp.parameters()])
        owed = state.held_back()  # this rank's, in gradient units: the job owes sum / M
        mass, total = 0.0, 0.0
        for i, n in enumerate(sizes):
            k = owed.get(i, torch.zeros(n)).double()
            dist.all_reduce(k)
            scale = exact[i].abs().max().clamp_min(1e-30)
            # sent + kept == came in (float32 rounding of y = e + g / M only)
            mass = max(mass, ((sent[i] + k / world - came[i]).abs().max() / scale).item())
            # applied + kept == the exact averages, but for the 16-bit sums' roundings
            total = max(total, (((applied[i] + k / world - exact[i]).abs() - bound[i])
                                / scale).max().item())
        # checkpoint round trip: the state after STEPS steps, into a new state on a
        # new DDP, then the same last steps as the straight run
        ddp2 = DDP(mlp(), bucket_cap_mb=TINY)
        state2 = GradwireState(ddp2, method=method)
        state2.load_state_dict(sd)
        ddp2.register_comm_hook(state2, hook)
        same_blobs = state2.state_dict()["handles"] == sd["handles"]
        resumed = []
        for step in range(STEPS, STEPS + 2):
            x, y = data(step, rank)
            ddp2.zero_grad()
            loss_of(ddp2(x), y).backward()
            resumed.append([p.grad.clone() for p in ddp2.parameters()])
        # A new DDP's first buckets differ from the rebuilt ones: gloo may then add
        # 3 or more ranks' values in another order (2 commute exactly).
        resumed_rel = max(((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()
                          for sa, sb in zip(straight, resumed) for a, b in zip(sa, sb))
        out[method] = {"first_ulps": first_ulps, "first_rel": first_rel, "rel": rel,
                       "ef_exact": ef_exact, "resumed_rel": resumed_rel,
                       "mass": mass, "sum_err": sum_err, "total": total,
                       "same_blobs": same_blobs,
                       "mode": state.mode, "handles": len(sd["handles"])}
    # States of the presets before: fp16 and topk ran mode server, ef and efsignsgd
    # scaled 256-element blocks. They load with that given, and the method's default
    # refuses them saying so.
    blocks256 = dict(codec=C.gw.CodecSpec("scaled_sign", block_size=256))
    old_presets = {"fp16": dict(mode="server"), "topk": dict(mode="server"),
                   "ef": blocks256, "efsignsgd": blocks256}
    for method, before in old_presets.items():
        ddp, old = hooked(mlp(), method, state_kw=before, bucket_cap_mb=TINY)
        train(ddp, rank, steps=1)
        sd = old.state_dict()
        try:
            GradwireState(DDP(mlp()), method=method).load_state_dict(sd)
            out[f"old_{method}_refused"] = ""
        except ValueError as e:
            out[f"old_{method}_refused"] = str(e)
        again = GradwireState(DDP(mlp()), method=method, **before)
        again.load_state_dict(sd)
        out[f"old_{method}_loads"] = again.state_dict()["handles"] == sd["handles"]
    return out


def check_never_slower(rank, world):
    """policy='never_slower': buckets the probe found faster dense go dense and
    hand over their residuals, the mass kept exactly; the rest keep the method."""
    out = {(method, policy): mass_run(rank, world, method, False, policy=policy)
           for method in ("ef", "fp16", "efsignsgd", "lags", "randomk", "cltk")
           for policy in ("mixed", "all", "cycle")}
    out["hand_back"] = hand_back_run(rank)
    out["take_again"] = hand_back_run(rank, reprobe=2)
    # Saved between the hand-back (step 4) and the next probe of the method.
    for via in ("pickle", "state_dict"):
        out[f"take_again_{via}"] = hand_back_run(rank, reprobe=2, resume_at=5, via=via)
    return out


def timings_by_cycle(policy):
    """never_slower's record with the method slower than dense (2 against 1)
    in even probes and faster (0.5) in odd ones: a link that changes speed."""
    return lambda phase, key, t: NeverSlower.record(
        policy, phase, key, 1.0 if phase == "dense" else (0.5 if policy.cycle % 2 else 2.0))


def hand_back_run(rank, reprobe=0, resume_at=None, via="pickle"):
    """An SGD's momentum given to the state goes back to the optimizer once
    never_slower sends every bucket dense: each buffer the ranks' mean of the
    hook's, the optimizer's momentum and nesterov as they were. reprobe: the
    method faster at the second probe, where the momentum moves into the hook
    again, its buffers with it (the hook's buffer then mu times the
    optimizer's plus this rank's gradient), and back at the third. resume_at:
    before that step the state is saved `via` pickle or state_dict, with the
    model's and the optimizer's state_dicts, and the run goes on in a new DDP
    and optimizer."""
    model, local = mlp(), mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    kw = dict(policy="never_slower", probe_steps=1, reprobe_steps=reprobe)
    ddp, state = hooked(model, "ef", state_kw=dict(kw, optimizer=opt), bucket_cap_mb=TINY)

    def timings(state):
        if reprobe:
            state.policy.record = timings_by_cycle(state.policy)
        else:
            state.policy.record = lambda phase, key, t, p=state.policy: NeverSlower.record(
                p, phase, key, 1.0 if phase == "dense" else 2.0)  # the method slower everywhere
    timings(state)
    taken, mean, handed, moved = [], None, None, None
    for step in range(13 if reprobe else STEPS + 3):
        if step == resume_at:
            del state.policy.record  # the test's timings, a lambda: not pickled
            blob, weights, saved = pickle.dumps(state), model.state_dict(), opt.state_dict()
            model = mlp()
            model.load_state_dict(weights)
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
            opt.load_state_dict(saved)
            if via == "pickle":
                ddp = DDP(model, bucket_cap_mb=TINY)
                state = pickle.loads(blob).bind(ddp, optimizer=opt)
                ddp.register_comm_hook(state, hook)
            else:
                ddp, state = hooked(model, "ef", state_kw=dict(kw, optimizer=opt),
                                    bucket_cap_mb=TINY)
                state.load_state_dict(pickle.loads(blob).state_dict())
            timings(state)
        x, y = data(step, rank)
        before = {pid: b.clone() for pid, b in state._moment.bufs.items()}
        taken.append(opt.param_groups[0]["momentum"])
        ours = [opt.state[p].get("momentum_buffer") for p in model.parameters()]
        local.load_state_dict(model.state_dict())
        local.zero_grad()
        loss_of(local(x), y).backward()
        opt.zero_grad()
        loss_of(ddp(x), y).backward()
        if handed is None and not state._moment.rule:  # handed back in this step's hook
            handed = [opt.state[p]["momentum_buffer"].reshape(-1).clone()
                      for p in model.parameters()]
            mean = []
            for pid in range(len(handed)):
                b = before[pid].clone()
                dist.all_reduce(b)
                mean.append(b / dist.get_world_size())
        elif handed is not None and moved is None and state._moment.rule:  # taken again
            moved = max((state._moment.bufs[pid] - 0.9 * b.reshape(-1)
                         - q.grad.reshape(-1)).abs().max().item()
                        for pid, (b, q) in enumerate(zip(ours, local.parameters())))
            moved = (moved, all("momentum_buffer" not in opt.state[p]
                                for p in model.parameters()))
        opt.step()
    return {"taken": taken, "group": (opt.param_groups[0]["momentum"],
                                      opt.param_groups[0]["nesterov"]),
            "handed": handed, "mean": mean, "moved": moved, "params": params(model)}


def check_no_sync_frozen(rank, world):
    """Accumulation under no_sync with a frozen parameter and tiny buckets."""
    out = {}
    for method in EVERY + ["plain"]:
        model = mlp()
        model[0].bias.requires_grad_(False)
        if method == "plain":
            ddp = DDP(model, bucket_cap_mb=TINY)
        else:
            ddp, _ = hooked(model, method, bucket_cap_mb=TINY)
        out[method] = train(ddp, rank, accumulate=2)
    return out


def check_flags(rank, world):
    """static_graph and gradient_as_bucket_view change nothing a hook computes."""
    out = {}
    for method in EVERY:
        runs = {}
        for flag in ("none", "static_graph", "gradient_as_bucket_view"):
            kw = {} if flag == "none" else {flag: True}
            ddp, _ = hooked(mlp(), method, bucket_cap_mb=TINY, **kw)
            runs[flag] = train(ddp, rank)
        out[method] = runs
    return out


def check_join(rank, world):
    """join() with uneven inputs: rank r runs 2 + r steps."""
    out = {}
    for method in EVERY + ["plain"]:
        model = mlp()
        if method == "plain":
            ddp = DDP(model, bucket_cap_mb=TINY)
        else:
            ddp, _ = hooked(model, method, bucket_cap_mb=TINY)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with ddp.join():
            for step in range(2 + rank):
                opt.zero_grad()
                x, y = data(step, rank)
                loss_of(ddp(x), y).backward()
                opt.step()
        out[method] = params(model)
    return out


def groups_of(world):
    parts = {2: [[0], [1]], 3: [[0, 1], [2]], 4: [[0, 1], [2, 3]]}[world]
    odd = {2: [1], 3: [1, 2], 4: [1, 2, 3]}[world]  # ranks not 0..M-1 of the group
    gs = [dist.new_group(p) for p in parts]
    og = dist.new_group(odd)
    mine = next(i for i, p in enumerate(parts) if rank_of() in p)
    return parts[mine], gs[mine], odd, og


def rank_of():
    return dist.get_rank()


def check_subgroups(rank, world):
    """DDP on subgroups: the hook averages over the DDP model's own group (also
    after pickling and binding to a new DDP)."""
    part, group, odd, og = groups_of(world)
    out = {"part": part, "odd": odd}

    def one(state_from=None):
        torch.manual_seed(0)
        m = torch.nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            m.weight.fill_(1.0)
        if state_from is None:
            ddp, state = hooked(m, "allreduce", group=group)
        else:
            ddp = DDP(m, process_group=group)
            state = pickle.loads(state_from).bind(ddp)
            ddp.register_comm_hook(state, hook)
        ddp(torch.full((1, 1), float(rank))).sum().backward()
        return m.weight.grad.item(), state

    plain = DDP(torch.nn.Linear(1, 1, bias=False), process_group=group)
    plain(torch.full((1, 1), float(rank))).sum().backward()
    out["plain"] = plain.module.weight.grad.item()
    out["hook"], state = one()
    out["rebound"], _ = one(pickle.dumps(state))
    return out


def check_odd_group(rank, world):
    """Every method on a group whose ranks are not 0..M-1 (collectives with a
    root take global ranks)."""
    part, group, odd, og = groups_of(world)
    out = {"odd": odd, "methods": {}}
    if rank in odd:
        for method in EVERY:
            ddp, _ = hooked(mlp(), method, group=og, bucket_cap_mb=TINY)
            out["methods"][method] = train(ddp, rank)
    return out


class WithSparse(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(10, 6, sparse=True)
        self.lin = torch.nn.Linear(6, 3)

    def forward(self, idx):
        return self.lin(self.emb(idx))


def check_sparse(rank, world):
    """nn.Embedding(sparse=True): its gradient is averaged by a plain all_reduce."""
    out = {}
    for method in EVERY + ["plain"]:
        model = WithSparse()
        if method == "plain":
            ddp = DDP(model)
        else:
            ddp, _ = hooked(model, method)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        first = None
        for step in range(STEPS):
            opt.zero_grad()
            idx = torch.tensor([[step + rank, 2 * rank + 1, 7]])
            loss_of(ddp(idx)[0], data(step, rank)[1][:3]).backward()
            if first is None:
                first = model.emb.weight.grad.to_dense().clone()
            opt.step()
        out[method] = {"first": first, "params": params(model)}
    return out


class WithEmpty(torch.nn.Module):
    def __init__(self, dtype=torch.float32):
        super().__init__()
        torch.manual_seed(0)
        self.l1 = torch.nn.Linear(6, 8)
        self.empty = torch.nn.Parameter(torch.zeros(0))
        self.l2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x))) + self.empty.sum()


def check_zero_element(rank, world):
    out = {}
    for method in EVERY + ["plain"]:
        model = WithEmpty()
        ddp = DDP(model, bucket_cap_mb=TINY) if method == "plain" else \
            hooked(model, method, bucket_cap_mb=TINY)[0]
        out[method] = train(ddp, rank)
    return out


def check_dtypes(rank, world):
    """float64, float16 and bfloat16 models."""
    out = {}
    for dtype in (torch.float64, torch.float16, torch.bfloat16):
        res = {}
        for method in EVERY + ["plain"]:
            model = mlp(dtype)
            ddp = DDP(model, bucket_cap_mb=TINY) if method == "plain" else \
                hooked(model, method, bucket_cap_mb=TINY)[0]
            res[method] = train(ddp, rank, dtype=dtype)
        out[str(dtype)] = res
    return out


def check_warmup(rank, world):
    """start_step: plain all-reduce first (DDP's own update, no state), then the
    method from zero residuals; from_config builds the same state from JSON."""
    out = {}
    for method in COMPRESSED:
        plain = DDP(mlp(), bucket_cap_mb=TINY)
        ddp = DDP(mlp(), bucket_cap_mb=TINY)
        config = '{"method": "%s", "start_step": 2, "seed": 7}' % method
        if method == "randomk":  # refused by name: its mode and codec
            config = ('{"method": "randomk", "mode": "randomk", "start_step": 2, "seed": 7, '
                      '"codec": {"name": "randomk", "density_ppm": 10000}}')
        state = GradwireState.from_config(ddp, config)
        ddp.register_comm_hook(state, hook)
        at2 = train(plain, rank, steps=2), train(ddp, rank, steps=2)
        handles = len(state._handles)
        train(ddp, rank, steps=2)
        out[method] = {"plain": at2[0], "hook": at2[1], "handles_at_2": handles,
                       "handles_after": len(state._handles), "steps": state.steps,
                       "start_step": state.start_step, "mode": state.mode}
    return out


def check_momentum(rank, world):
    """optimizer=opt: the optimizer's SGD momentum runs in the hook, before
    compression. Through a lossless codec (identity frames, all-gathered) the
    parameters follow plain DDP with the same optimizer, for heavy-ball,
    dampened and Nesterov momentum and a learning-rate schedule the hook
    follows; the momentum buffers checkpoint with the state and resume bit for
    bit. Without optimizer=, the first step of a momentum SGD over the model
    is refused (not for a near-lossless method, nor with check_optimizer=False)."""
    out = {}
    kinds = {"heavy": dict(momentum=0.9), "dampened": dict(momentum=0.8, dampening=0.5),
             "nesterov": dict(momentum=0.9, nesterov=True)}
    for kind, kw in kinds.items():
        runs = {}
        for how in ("plain", "hook"):
            ddp = DDP(mlp(), bucket_cap_mb=TINY)
            opt = torch.optim.SGD(ddp.parameters(), lr=0.1, **kw)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
            state = None
            if how == "hook":
                state = GradwireState(ddp, mode="allgather", codec="identity", optimizer=opt)
                ddp.register_comm_hook(state, hook)
            lrs = []
            for step in range(5):
                opt.zero_grad()
                x, y = data(step, rank)
                loss_of(ddp(x), y).backward()
                opt.step()
                sched.step()
                if state is not None:
                    lrs.append(state.lr_of(0))
            runs[how] = params(ddp.module)
            runs[how + "_lrs"] = lrs
        runs["optimizer_momentum"] = opt.param_groups[0]["momentum"]
        out[kind] = runs
    # Checkpoint: 3 steps, pickle, 2 more on a fresh DDP, against 5 straight.
    def topk_run(steps, blob=None):
        ddp = DDP(mlp(), bucket_cap_mb=TINY)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
        if blob is None:
            state = GradwireState(ddp, method="topk", optimizer=opt)
        else:
            state = pickle.loads(blob).bind(ddp, optimizer=opt)
            ddp.module.load_state_dict(blob_params[0])
        ddp.register_comm_hook(state, hook)
        for step in range(5 - steps, 5) if blob is not None else range(steps):
            opt.zero_grad()
            x, y = data(step, rank)
            loss_of(ddp(x), y).backward()
            opt.step()
        return ddp, state
    straight, _ = topk_run(5)
    first, st = topk_run(3)
    blob_params = [{k: v.clone() for k, v in first.module.state_dict().items()}]
    resumed, _ = topk_run(2, pickle.dumps(st))
    # Pickled at 99ee165 the masking flag sat on the state, beside a Momentum without one.
    old = st.__getstate__()
    vars(old["_moment"]).pop("masking", None)
    old["momentum_masking"] = False
    back = GradwireState.__new__(GradwireState)
    back.__setstate__(pickle.loads(pickle.dumps(old)))
    out["resume"] = {"straight": params(straight.module), "resumed": params(resumed.module),
                     "buffers": len(st.state_dict()["momentum"]),
                     "old_masking": (st.momentum_masking, back.momentum_masking,
                                     "momentum_masking" in vars(back))}
    # The guard.
    refused = {}
    for method, kw in (("ef", {}), ("fp16", {}), ("ef", dict(check_optimizer=False))):
        ddp, state = hooked(mlp(), method, **{})
        state.check_optimizer = kw.get("check_optimizer", True)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
        x, y = data(0, rank)
        loss_of(ddp(x), y).backward()
        try:
            opt.step()
            refused[f"{method}{'' if state.check_optimizer else '-unchecked'}"] = ""
        except RuntimeError as e:
            refused[f"{method}{'' if state.check_optimizer else '-unchecked'}"] = str(e)
    # Adam's moments cannot move in: refused when given, and at its first step when not.
    for given in (True, False):
        ddp = DDP(mlp())
        adam = torch.optim.Adam(ddp.parameters(), lr=1e-3)
        try:
            state = GradwireState(ddp, method="topk", optimizer=adam if given else None)
            ddp.register_comm_hook(state, hook)
            x, y = data(0, rank)
            loss_of(ddp(x), y).backward()
            adam.step()
            refused[f"adam-given-{given}"] = ""
        except (ValueError, RuntimeError) as e:
            refused[f"adam-given-{given}"] = f"{type(e).__name__}: {e}"
    ddp = DDP(mlp())
    adam = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    GradwireState(ddp, method="fp16", optimizer=adam)
    out["refused"] = refused
    # DGC's masking, one step: each run's momentum buffers (this rank's gradient
    # at step 1) and what its handles kept (0 where the rank's frame sent it).
    masking = {}
    for name, kw in (("topk", {}), ("topk-off", dict(momentum_masking=False)),
                     ("lags", {}), ("lags-on", dict(momentum_masking=True))):
        ddp = DDP(mlp(), bucket_cap_mb=TINY)
        # Nesterov's: lags refuses heavy-ball (below); at step 1 the buffer is the
        # gradient either way.
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9, nesterov=True)
        state = GradwireState(ddp, method=name.split("-")[0], optimizer=opt, **kw)
        ddp.register_comm_hook(state, hook)
        x, y = data(0, rank)
        loss_of(ddp(x), y).backward()
        opt.step()
        ps = list(ddp.parameters())
        masking[name] = {"flag": state.momentum_masking,
                         "buf": torch.cat([state._moment.bufs[i] for i in range(len(ps))]),
                         "kept": torch.cat([kept(state, i, p.numel()) for i, p in enumerate(ps)])}
    out["masking"] = masking
    # Heavy-ball momentum for lags or cltk is refused, saying what to change:
    # given (construction, or bind() after it, which leaves the state as it
    # was) or not (at the first step); Nesterov's is taken, and so is
    # heavy-ball for topk or with check_optimizer=False.
    heavy = {}
    for name, nesterov, how in (("lags", False, "given"), ("lags", True, "given"),
                                ("cltk", False, "bind"), ("cltk", False, "step"),
                                ("topk", False, "given"), ("lags", False, "unchecked")):
        ddp = DDP(mlp())
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9, nesterov=nesterov)
        key = f"{name}{'-nesterov' if nesterov else ''}-{how}"
        state = None
        try:
            if how == "given":
                GradwireState(ddp, method=name, optimizer=opt)
            elif how == "unchecked":
                GradwireState(ddp, method=name, optimizer=opt, check_optimizer=False)
            elif how == "bind":
                state = GradwireState(ddp, method=name)
                before = (state.process_group, state._world, state._optimizer)
                state.bind(DDP(mlp()), optimizer=opt)
            else:
                state = GradwireState(ddp, method=name)
                ddp.register_comm_hook(state, hook)
                x, y = data(0, rank)
                loss_of(ddp(x), y).backward()
                opt.step()
            heavy[key] = ""
        except (ValueError, RuntimeError) as e:
            heavy[key] = f"{type(e).__name__}: {e}"
        if how == "bind":
            heavy["bind-unchanged"] = before == (state.process_group, state._world,
                                                 state._optimizer)
    out["heavy_ball"] = heavy
    return out


def main():
    rank, world, port, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    # Every check_* of this file, in the order they are defined.
    checks = {name[len("check_"):]: f for name, f in list(globals().items())
              if name.startswith("check_")}
    names = sys.argv[5:] or list(checks)
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    result = {}
    for name in names:
        try:
            result[name] = checks[name](rank, world)
        except Exception:  # recorded; the test reports it
            result[name] = {"error": traceback.format_exc()}
            print(f"rank {rank}: {name} failed:\n{result[name]['error']}", flush=True)
        dist.barrier()
    buf = io.BytesIO()
    torch.save(result, buf)
    with open(os.path.join(outdir, f"patterns{rank}.pt"), "wb") as f:
        f.write(buf.getvalue())
    C.shut_down()


if __name__ == "__main__":
    main()
