#!/usr/bin/env python3
"""End-to-end DDP benchmark on a shaped loopback (issue 21 item 6).

4 processes (torch DDP on gloo) on 127.0.0.1, all inside a network namespace
of their own (`unshare -n`; the script re-executes itself there), whose `lo`
is shaped per link with `tc qdisc ... tbf rate R`. The shaper sits on the one
loopback device, so R is shared by all ranks' traffic together (an
aggregate, not a per-rank NIC). Model: an MLP 784-2048-2048-2048-10 (10.0M
parameters, 40 MB of fp32 gradient), batch 32 per rank of Fashion-MNIST
(random data if the files are missing), SGD lr 0.02 momentum 0.9.

Methods: plain DDP, torch's fp16_compress_hook, PowerSGD rank 1 and 2 (one
bucket: torch 2.15's PowerSGD hook hung on gloo with more than one bucket),
and every gradwire.ddp.METHODS entry through GradwireState(ddp, method=m,
optimizer=opt) (a method refused by name runs with its preset's explicit
mode and codec, marked '*'). `gw:<method>/<option>=<int>` passes an integer
option to GradwireState (`gw:auto/reprobe_steps=12`), `gw:<method>/codec.<param>=<value>`
a parameter of the method's codec (`gw:lags/codec.value_dtype=f16`). `gw:<method>@<mode>`
runs a method's codec in another mode: `gw:fp16@server` is method fp16 as it
was before mode "cast" (all-to-all then all-gather through the sharded
server), `gw:topk@server` method topk before it went one-way.

Per (link, method): median step time over the timed steps, speedup against
plain DDP at that link, bytes per rank per step on the link (the namespace's
lo tx counter from /proc/net/dev around the timed steps, / steps / ranks;
loopback counts each byte once), gradwire's own state.bytes_sent /
state.steps, and the loss on a fixed batch after all steps. Where the step's
time goes: "compute", the median of COMPUTE_STEPS forward and backward passes
under DDP's no_sync() (no communication; all ranks at once, so they share the
cores as in a real step) plus the median optimizer step; for gradwire, the
hook's own work per step (state.hook_time: "cpu", encoding, decoding, copies
and Python; "wall", that plus its waits for collectives and a core). What the
step takes beyond compute is communication the backward pass did not hide,
and the hook's CPU time where it competes with compute for the cores.

    python bench/ddp_e2e.py                      # all links, all methods
    python bench/ddp_e2e.py --quick              # 2 links, 3 methods, < 3 min
    python bench/ddp_e2e.py --links unshaped,1gbit --methods ddp,fp16_hook,gw:ef
    python bench/ddp_e2e.py --steps 1gbit=2+5 --csv out.csv --png out.png
    python bench/ddp_e2e.py --to-loss 100        # time to plain DDP's loss after 100 steps
    python bench/ddp_e2e.py --links unshaped --link-change 1gbit@12 --steps 0+36 \
        --methods ddp,gw:auto,gw:auto/reprobe_steps=12    # a link that slows down mid-run

--to-loss N (bench/ddp_to_loss.py) measures instead how long each method takes
at 1 Gbit/s and 100 Mbit/s (or --links) to reach the loss plain DDP has after
N steps.

If the namespace or tc cannot be had it prints "skipped: ..." and exits 0.
"""

import argparse
import csv
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

WORLD = 4
BATCH = 32
EVAL = 2048  # the fixed batch the loss is measured on
COMPUTE_STEPS = 3  # forward + backward without communication, before the warm-up
LR = 0.02
MOMENTUM = 0.9
# Why a gradwire row is marked (with one, then two stars).
NOTES = ("refused by name (does not train); run with its preset's explicit mode and codec",
         "heavy-ball SGD is refused for this mode; run with check_optimizer=False")
SIZES = (784, 2048, 2048, 2048, 10)


def nesterov():
    """--nesterov: every method's SGD with Nesterov momentum (the ranks read
    it from the environment the driver passes on)."""
    return os.environ.get("GW_DDP_E2E_NESTEROV") == "1"


def optimizer_name():
    return f"SGD lr {LR} {'Nesterov ' if nesterov() else ''}momentum {MOMENTUM}"
DATA_DIR = "/usr/share/datasets/fashion-mnist"

# link name -> (tbf rate or None for unshaped, bits/s for the plot)
LINKS = {
    "unshaped": (None, None),
    "1gbit": ("1gbit", 1e9),
    "100mbit": ("100mbit", 100e6),
    "10gbit": ("10gbit", 10e9),
}
# default warm-up + timed steps per link (the plain 40 MB all-reduce moves
# ~240 MB per step through the shared shaper: ~19 s at 100 Mbit/s)
DEFAULT_STEPS = {"unshaped": (3, 10), "10gbit": (3, 10), "1gbit": (3, 5), "100mbit": (2, 3)}
TORCH_METHODS = ["ddp", "fp16_hook", "powersgd1", "powersgd2"]
QUICK_LINKS = ["unshaped", "1gbit"]
QUICK_METHODS = ["ddp", "gw:allreduce", "gw:ef"]
QUICK_STEPS = {"unshaped": (2, 4), "1gbit": (2, 3)}


def gw_methods():
    from gradwire.ddp import METHODS
    return ["gw:" + m for m in METHODS]


# ---------------------------------------------------------------- rank side

def gw_spec(method):
    """'gw:auto/reprobe_steps=10' -> ('auto', {'reprobe_steps': 10}): a method
    and GradwireState options (integers) after slashes; 'codec.<param>=<value>'
    options go to the method's codec, {'codec': {param: value}}
    ('gw:lags/codec.value_dtype=f16')."""
    name, *opts = method[3:].split("/")
    options = {}
    for k, v in (o.split("=", 1) for o in opts):
        if k.startswith("codec."):
            options.setdefault("codec", {})[k[6:]] = int(v) if v.lstrip("-").isdigit() else v
        else:
            options[k] = int(v)
    return name, options


def probes_begun(state):
    """How many probes policy="never_slower" began (None without it)."""
    policy = None if state is None else state.policy
    return None if policy is None or policy.cycle is None else policy.cycle + 1


def load_data(rank_seed):
    """Fashion-MNIST's training set as the DDP demo reads it, normalised, or
    random data where the files are missing."""
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    from train_fmnist_ddp import load_idx
    try:
        x, y = load_idx(DATA_DIR, "train")
    except FileNotFoundError:
        g = torch.Generator().manual_seed(1234)
        return torch.randn(8192, 784, generator=g), torch.randint(0, 10, (8192,), generator=g), \
            "random"
    return (x - 0.2860) / 0.3530, y, "fashion-mnist"


def make_model():
    import torch
    torch.manual_seed(0)
    layers = []
    for i in range(len(SIZES) - 1):
        layers.append(torch.nn.Linear(SIZES[i], SIZES[i + 1]))
        if i < len(SIZES) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def lo_tx_bytes():
    # /proc/net/dev is per network namespace (sysfs here may be the host's).
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                return int(rest.split()[8])
    raise RuntimeError("no lo in /proc/net/dev")


def rank_main(a):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    rank = a.rank
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    x_all, y_all, data = load_data(rank)
    model = make_model()
    method = a.method
    bucket_mb = 25
    if method.startswith("powersgd"):
        bucket_mb = 100  # one bucket (the model is 40 MB): PowerSGD hung on gloo with several
    ddp = DDP(model, bucket_cap_mb=bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR, momentum=MOMENTUM, nesterov=nesterov())
    state = None
    note = ""
    if method == "fp16_hook":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif method.startswith("powersgd"):
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
        st = ps.PowerSGDState(process_group=None, matrix_approximation_rank=int(method[-1]),
                              start_powerSGD_iter=2, use_error_feedback=True, warm_start=True)
        ddp.register_comm_hook(st, ps.powerSGD_hook)
    elif method.startswith("gw:"):
        import gradwire as gw
        from gradwire.ddp import GradwireState, hook, METHODS
        m, options = gw_spec(method)
        m, _, mode = m.partition("@")
        if "codec" in options:  # the preset's codec with these parameters changed
            name, params = METHODS[m]["codec"]
            options["codec"] = gw.CodecSpec(name, **{**params, **options["codec"]})
        try:
            state = GradwireState(ddp, method=m, mode=mode or None, optimizer=opt, **options)
        except ValueError as e:
            if "with heavy-ball" in str(e):
                # Every method here gets the same optimizer (the peers' too).
                state = GradwireState(ddp, method=m, mode=mode or None, optimizer=opt,
                                      check_optimizer=False, **options)
                note = NOTES[1]
            elif "does not train" in str(e):
                name, params = METHODS[m]["codec"]
                options.setdefault("codec", gw.CodecSpec(name, **params))
                state = GradwireState(ddp, method=m, mode=METHODS[m]["mode"], optimizer=opt,
                                      **options)
                note = NOTES[0]
            else:
                raise
        ddp.register_comm_hook(state, hook)
    elif method != "ddp":
        raise SystemExit(f"unknown method {method}")

    n = x_all.shape[0]

    def batch(step):
        g = torch.Generator().manual_seed(100003 * step + rank)
        idx = torch.randint(0, n, (BATCH,), generator=g)
        return x_all[idx], y_all[idx]

    def eval_loss():
        # the fixed batch, a quarter per rank (the ranks' models are equal), summed
        with torch.no_grad():
            g = torch.Generator().manual_seed(777)
            idx = torch.randint(0, n, (EVAL,), generator=g)[rank::WORLD]
            s = torch.nn.functional.cross_entropy(model(x_all[idx]), y_all[idx], reduction="sum")
            t = torch.tensor([float(s)], dtype=torch.float64)
            dist.all_reduce(t)
            return t.item() / EVAL

    compute = []
    for i in range(COMPUTE_STEPS):  # batches beyond training's; no update
        xb, yb = batch(10**6 + i)
        dist.barrier()
        t0 = time.perf_counter()
        with ddp.no_sync():
            torch.nn.functional.cross_entropy(ddp(xb), yb).backward()
        compute.append(time.perf_counter() - t0)
        opt.zero_grad(set_to_none=True)
    times, opt_times = [], []
    curve = []  # (steps done, eval loss) every a.eval_every steps
    tx0 = gw0 = gs0 = 0
    total = a.warmup + a.timed
    change_to, _, change_at = (a.change or "").partition("@")
    for step in range(total):
        if change_to and step == int(change_at):  # the link changes speed (--link-change)
            if rank == 0:
                set_link(change_to)
            dist.barrier()
        if step == a.warmup:
            dist.barrier()
            tx0 = lo_tx_bytes()
            if state is not None:
                gw0, gs0, hook0 = state.bytes_sent, state.steps, state.hook_time
        xb, yb = batch(step)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(ddp(xb), yb)
        loss.backward()
        t1 = time.perf_counter()
        opt.step()
        dt = time.perf_counter() - t0
        if step >= a.warmup:
            times.append(dt)
            opt_times.append(dt - (t1 - t0))
        if a.eval_every and (step + 1) % a.eval_every == 0:
            curve.append((step + 1, eval_loss()))
            if a.target is not None and curve[-1][1] <= a.target:
                break
    if state is not None:
        gw_bytes, gw_steps = state.bytes_sent - gw0, state.steps - gs0
        hook1 = state.hook_time
    dist.barrier()
    tx1 = lo_tx_bytes()
    # the largest per-step time over ranks (the step is synchronous)
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    gwb = torch.tensor([float(gw_bytes if state is not None else 0)], dtype=torch.float64)
    dist.all_reduce(gwb)
    # per step, averaged over ranks: compute, hook cpu, hook wall (seconds)
    split = torch.tensor([statistics.median(compute) + statistics.median(opt_times)]
                         + ([(hook1[k] - hook0[k]) / len(times) for k in ("cpu", "wall")]
                            if state is not None else [0.0, 0.0]), dtype=torch.float64)
    dist.all_reduce(split)
    split = (split / WORLD * 1000).tolist()
    if not curve or curve[-1][0] != len(times) + a.warmup:
        curve.append((len(times) + a.warmup, eval_loss()))
    final = curve[-1][1]
    if rank == 0:
        res = dict(median_ms=1000 * statistics.median(t.tolist()),
                   link_bytes=(tx1 - tx0) / len(times) / WORLD,
                   gw_bytes=(gwb.item() / WORLD / gw_steps) if state is not None and gw_steps else None,
                   loss=final, data=data, note=note, curve=curve, step_s=t.tolist(),
                   compute_ms=split[0], hook_cpu_ms=split[1] if state is not None else None,
                   hook_wall_ms=split[2] if state is not None else None,
                   probes=probes_begun(state))
        with open(a.out, "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# -------------------------------------------------------------- driver side

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def step_timeout(link, steps):
    # generous: 40 MB fp32 through the shared link ~ 6x per step, plus startup
    rate = LINKS[link][1] or 4e9
    return 120 + steps * (6 * 40e6 * 8 / rate) * 3


def run_combo(link, method, warmup, timed, timeout, extra=()):
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    os.unlink(out)
    port = free_port()
    procs = []
    logs = []
    for r in range(WORLD):
        log = tempfile.TemporaryFile(mode="w+")
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--rank", str(r), "--port", str(port),
             "--method", method, "--warmup", str(warmup), "--timed", str(timed), "--out", out,
             *extra],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    deadline = time.time() + timeout
    status = "ok"
    while any(p.poll() is None for p in procs):
        if time.time() > deadline or any(p.poll() not in (None, 0) for p in procs):
            status = "timeout" if time.time() > deadline else "failed"
            time.sleep(2)  # let the others report their error
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
            for p in procs:
                p.wait()
            break
        time.sleep(0.2)
    res = None
    if status == "ok" and os.path.exists(out):
        with open(out) as f:
            res = json.load(f)
        os.unlink(out)
    elif status == "ok":
        status = "failed"
    if status != "ok":
        for r, log in enumerate(logs):
            log.seek(0)
            tail = log.read().strip().splitlines()[-6:]
            if tail:
                print(f"    rank {r}: " + "\n    ".join(tail), flush=True)
    for log in logs:
        log.close()
    return status, res


def tc(*args):
    return subprocess.run(["tc", *args], capture_output=True, text=True)


def set_link(link):
    rate, bps = LINKS[link]
    tc("qdisc", "del", "dev", "lo", "root")
    if rate is None:
        return None
    # burst: >= one 64 KiB loopback frame and >= rate x 4 ms (a timer tick)
    burst = max(256 * 1024, int(bps / 8 * 0.004))
    r = tc("qdisc", "add", "dev", "lo", "root", "tbf", "rate", rate, "burst", str(burst),
           "latency", "50ms")
    if r.returncode != 0:
        return r.stderr.strip() or "tc failed"
    return None


def fmt_bytes(b):
    if b is None:
        return "-"
    for unit, div in (("MB", 1e6), ("KB", 1e3)):
        if b >= div:
            return f"{b / div:.2f} {unit}"
    return f"{b:.0f} B"


def method_width(methods):
    """The method column's width: the longest name and its '**' mark."""
    return max(14, max(len(m) for m in methods) + 2)


def fmt_ms(ms):
    return "-" if ms is None else f"{ms:.1f}"


def plot(rows, links, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"no matplotlib: plot {path} not written")
        return
    order = [l for l in ["100mbit", "1gbit", "10gbit", "unshaped"] if l in links]
    xs = {l: i for i, l in enumerate(order)}
    fig, ax = plt.subplots(figsize=(9, 5))
    methods = []
    for r in rows:
        if r["method"] not in methods:
            methods.append(r["method"])
    styles = ["o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "p", "h", "d"]
    for i, m in enumerate(methods):
        pts = [(xs[r["link"]], r["median_ms"]) for r in rows
               if r["method"] == m and r["status"] == "ok" and r["link"] in xs]
        pts.sort()
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=styles[i % len(styles)],
                    label=m, color=plt.cm.tab20(i % 20),
                    linestyle="-" if m.startswith("gw:") else "--")
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([{"100mbit": "100 Mbit/s", "1gbit": "1 Gbit/s", "10gbit": "10 Gbit/s",
                         "unshaped": "unshaped"}[l] for l in order])
    ax.set_yscale("log")
    ax.set_xlabel("loopback rate (tbf, shared by the 4 ranks)")
    ax.set_ylabel("median step time (ms)")
    ax.set_title("DDP step time, 4 ranks (gloo), MLP 10.0M params, batch 32/rank")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


CSV_FIELDS = ["link", "method", "status", "warmup", "timed", "median_ms", "speedup",
              "link_bytes_per_rank_step", "gw_bytes_per_rank_step", "loss", "compute_ms",
              "hook_cpu_ms", "hook_wall_ms", "note"]


def write_csv(path, rows, fields=CSV_FIELDS):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def read_csv(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for k in ("median_ms", "speedup", "link_bytes_per_rank_step", "gw_bytes_per_rank_step", "loss",
                      "compute_ms", "hook_cpu_ms", "hook_wall_ms"):
                r[k] = float(r[k]) if r[k] not in ("", None) else None
            rows.append(r)
    return rows


def parse_steps(spec, links, base):
    steps = {l: base.get(l, (3, 5)) for l in links}
    if not spec:
        return steps
    for part in spec.split(","):
        if "=" in part:
            l, v = part.split("=", 1)
            targets = [l]
        else:
            v, targets = part, list(links)
        w, t = (int(s) for s in v.split("+")) if "+" in v else (None, int(v))
        for l in targets:
            steps[l] = (steps[l][0] if w is None else w, t)
    return steps


def driver(a):
    links = QUICK_LINKS if a.quick and not a.links else (a.links.split(",") if a.links else list(LINKS))
    for l in links:
        if l not in LINKS:
            raise SystemExit(f"unknown link {l!r}: one of {list(LINKS)}")
    if a.methods:
        methods = a.methods.split(",")
    elif a.quick:
        methods = QUICK_METHODS
    else:
        methods = TORCH_METHODS + gw_methods()
    steps = parse_steps(a.steps, links, QUICK_STEPS if a.quick else DEFAULT_STEPS)
    if "ddp" not in methods:
        print("note: plain DDP ('ddp') not in --methods: no speedup column")
    import torch
    print(f"ddp_e2e: {WORLD} ranks (torch {torch.__version__} DDP, gloo) on 127.0.0.1 in a network "
          f"namespace of their own; MLP {'-'.join(map(str, SIZES))} "
          f"({sum(SIZES[i] * SIZES[i + 1] + SIZES[i + 1] for i in range(len(SIZES) - 1)) / 1e6:.2f}M "
          f"params), batch {BATCH}/rank, {optimizer_name()}")
    print(f"machine: {os.cpu_count()} cores shared by {WORLD} ranks (1 torch thread each); the tbf "
          f"rate is on the one loopback, shared by all ranks' traffic; PowerSGD runs with one "
          f"bucket (bucket_cap_mb=100: torch 2.15's hook hung on gloo with several)")
    print(f"links: {', '.join(f'{l} ({steps[l][0]} warm-up + {steps[l][1]} timed steps)' for l in links)}")
    print(f"methods: {', '.join(methods)}", flush=True)
    short = [l for l in links if steps[l][0] < 3]
    if short and any(m.startswith("powersgd") or m == "gw:auto" for m in methods):
        print(f"note: fewer than 3 warm-up steps at {', '.join(short)}: PowerSGD (start_powerSGD_iter=2) "
              f"and gw:auto (never_slower probes) may send dense buckets in timed steps", flush=True)
    mw = method_width(methods)
    head = f"{'link':9s} {'method':{mw}s} {'step ms':>9s} {'speedup':>8s} {'link B/rank/step':>17s} " \
           f"{'gw B/rank/step':>15s} {'loss':>7s} {'compute':>8s} {'hook cpu':>8s} {'hook wall':>9s}"
    print(head)
    print("-" * len(head), flush=True)
    rows = []
    t_start = time.time()
    for link in links:
        err = set_link(link)
        if err:
            print(f"skipped link {link}: tc: {err}", flush=True)
            continue
        warmup, timed = steps[link]
        base = None
        order = (["ddp"] if "ddp" in methods else []) + [m for m in methods if m != "ddp"]
        for m in order:
            status, res = run_combo(link, m, warmup, timed, a.timeout or step_timeout(link, warmup + timed))
            row = dict(link=link, method=m, status=status, warmup=warmup, timed=timed,
                       median_ms=None, speedup=None, link_bytes_per_rank_step=None,
                       gw_bytes_per_rank_step=None, loss=None, compute_ms=None, hook_cpu_ms=None,
                       hook_wall_ms=None, note="")
            if res:
                row.update(median_ms=res["median_ms"], link_bytes_per_rank_step=res["link_bytes"],
                           gw_bytes_per_rank_step=res["gw_bytes"], loss=res["loss"], note=res["note"],
                           compute_ms=res["compute_ms"], hook_cpu_ms=res["hook_cpu_ms"],
                           hook_wall_ms=res["hook_wall_ms"])
                if m == "ddp":
                    base = res["median_ms"]
                if base:
                    row["speedup"] = base / res["median_ms"]
            rows.append(row)
            if a.csv:
                write_csv(a.csv, rows)
            name = m + "*" * (NOTES.index(row["note"]) + 1 if row["note"] else 0)
            if status == "ok":
                sp = f"{row['speedup']:.2f}x" if row["speedup"] else "-"
                print(f"{link:9s} {name:{mw}s} {row['median_ms']:9.1f} {sp:>8s} "
                      f"{fmt_bytes(row['link_bytes_per_rank_step']):>17s} "
                      f"{fmt_bytes(row['gw_bytes_per_rank_step']):>15s} {row['loss']:7.4f} "
                      f"{row['compute_ms']:8.1f} {fmt_ms(row['hook_cpu_ms']):>8s} "
                      f"{fmt_ms(row['hook_wall_ms']):>9s}", flush=True)
            else:
                print(f"{link:9s} {name:{mw}s} {status}", flush=True)
    tc("qdisc", "del", "dev", "lo", "root")
    print(f"wall time {time.time() - t_start:.0f} s")
    for i, note in enumerate(NOTES):
        if any(r["note"] == note for r in rows):
            print(f"{'*' * (i + 1)} {note}")
    if a.csv:
        print(f"csv: {a.csv}")
    if a.png and rows:
        plot(rows, links, a.png)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--links", help=f"comma list of {list(LINKS)} (default all)")
    p.add_argument("--methods", help="comma list: ddp, fp16_hook, powersgd1, powersgd2, gw:<method> "
                                     "(default all, gradwire's from gradwire.ddp.METHODS), "
                                     "gw:<method>@<mode> (gw:fp16@server: the old fp16)")
    p.add_argument("--steps", help="warm-up+timed steps: '3+5' for all links, or per link "
                                   "'1gbit=3+5,100mbit=2+3' (default " +
                                   ",".join(f"{l}={w}+{t}" for l, (w, t) in DEFAULT_STEPS.items()) + ")")
    p.add_argument("--nesterov", action="store_true",
                   help="every method's SGD with Nesterov momentum (heavy-ball by default; the "
                        "hook refuses heavy-ball for lags and cltk)")
    p.add_argument("--quick", action="store_true", help="2 links, 3 methods, few steps (< 3 min)")
    p.add_argument("--csv", default="bench-results/ddp_e2e.csv")
    p.add_argument("--png", default="bench-results/ddp_e2e.png")
    p.add_argument("--timeout", type=float, default=0, help="seconds per (link, method) run")
    p.add_argument("--to-loss", type=int, metavar="N",
                   help="time to plain DDP's loss after N steps instead (bench/ddp_to_loss.py; "
                        "default links 1gbit,100mbit)")
    p.add_argument("--to-loss-csv", default="bench-results/ddp_to_loss.csv")
    p.add_argument("--to-loss-png", default="bench-results/ddp_to_loss.png")
    # rank-process arguments (internal)
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--warmup", type=int, help=argparse.SUPPRESS)
    p.add_argument("--timed", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--eval-every", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--target", type=float, help=argparse.SUPPRESS)
    p.add_argument("--link-change", metavar="LINK@STEP",
                   help="start on the one --links link and change it to LINK before step STEP "
                        "(counted from 0 over warm-up and timed steps; bench/ddp_link_change.py)")
    p.add_argument("--link-change-csv", default="bench-results/ddp_link_change.csv")
    p.add_argument("--link-change-png", default="bench-results/ddp_link_change.png")
    p.add_argument("--change", help=argparse.SUPPRESS)
    p.add_argument("--replot", metavar="CSV", help="only draw --png (with --to-loss N: --to-loss-png) "
                                                  "from a CSV this script wrote")
    a = p.parse_args()
    if a.nesterov:
        os.environ["GW_DDP_E2E_NESTEROV"] = "1"
    if a.replot and a.to_loss:
        return to_loss(a)
    if a.replot:
        rows = read_csv(a.replot)
        plot(rows, sorted({r["link"] for r in rows}), a.png)
        return 0
    if a.rank >= 0:
        return rank_main(a)
    if os.environ.get("GW_DDP_E2E_NETNS") != "1":
        # Re-execute in a network namespace of our own (-r maps us to root in a
        # user namespace when we are not root: enough for tc on our own lo).
        unshare = shutil.which("unshare")
        if unshare is None:
            print("skipped: no unshare(1) on this machine")
            return 0
        if shutil.which("tc") is None:
            print("skipped: no tc(8) on this machine (iproute2)")
            return 0
        cmd = [unshare, "-n"] if os.geteuid() == 0 else [unshare, "-r", "-n"]
        probe = subprocess.run(cmd + ["tc", "qdisc", "show", "dev", "lo"], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"skipped: cannot enter a network namespace with tc ({' '.join(cmd)}): "
                  f"{(probe.stderr or probe.stdout).strip()}")
            return 0
        env = dict(os.environ, GW_DDP_E2E_NETNS="1")
        os.execve(unshare, cmd + [sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env)
    # inside the namespace: bring up lo (the only device) and check shaping works
    r = subprocess.run(["ip", "link", "set", "lo", "up"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"skipped: cannot bring up lo in the namespace: {r.stderr.strip()}")
        return 0
    err = set_link("1gbit")
    if err:
        print(f"skipped: tc cannot shape lo in the namespace: {err}")
        return 0
    tc("qdisc", "del", "dev", "lo", "root")
    if a.to_loss:
        return to_loss(a)
    if a.link_change:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import ddp_link_change
        ddp_link_change.driver(a, sys.modules[__name__])
        return 0
    driver(a)
    return 0


def to_loss(a):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ddp_to_loss
    ddp_to_loss.driver(a, sys.modules[__name__])
    return 0


if __name__ == "__main__":
    sys.exit(main())
