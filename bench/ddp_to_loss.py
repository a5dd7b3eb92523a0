"""Time to reach plain DDP's loss, on the shaped loopback of bench/ddp_e2e.py.

    python bench/ddp_e2e.py --to-loss 60 --links 1gbit,100mbit

The target is plain DDP's loss on the fixed batch (ddp_e2e.EVAL samples)
after N steps. Each method trains from the same start until its loss on that
batch, measured every E steps, is at or below the target, for at most
CAP x N steps. What a method computes does not depend on the link's rate
(the same collectives sum the same tensors), so its steps to the target are
counted once, unshaped, and its time to the target at a link is

    dense steps x plain DDP's median step there
      + the other steps x the method's own median step there

with the median steps from a run as in the step-time table (warm-up + timed
steps at that link, --steps as there). Dense steps are the ones a method sends uncompressed by
design: PowerSGD's first 2 (start_powerSGD_iter=2, the least torch allows
with error feedback), gradwire's start_step warm-up. gw:auto reads the link
to decide what it sends, so it trains at each link itself and its time is the
sum of its measured steps there (probes and all).
"""

import csv
import os
import time

from ddp_e2e import gw_spec, method_width  # bench/ is on sys.path: ddp_e2e.to_loss puts it there

CAP = 4          # give up after CAP x N steps
LINK_NAMES = {"1gbit": "1 Gbit/s", "100mbit": "100 Mbit/s", "10gbit": "10 Gbit/s"}
FIELDS = ["link", "method", "status", "steps", "dense_steps", "reached", "median_ms",
          "time_s", "vs_ddp", "final_loss", "target"]


def eval_every(n):
    return max(1, n // 12)


def trajectory(e2e, link, method, n, target, steps=None):
    """Train `method` at `link` until its loss is <= target (or `steps`,
    CAP x n by default). Returns (status, result dict of the ranks)."""
    steps = steps or CAP * n
    rate = e2e.LINKS[link][1] or 4e9
    timeout = 180 + steps * (1.0 + 6 * 40e6 * 8 / rate * (1 if method in ("ddp", "fp16_hook") else 0.05))
    extra = ["--eval-every", str(eval_every(n))] + ([] if target is None else ["--target", repr(target)])
    return e2e.run_combo(link, method, 0, steps, timeout, extra)


def link_dependent(method):
    """gw:auto (with or without options): never_slower reads the link."""
    return method.startswith("gw:") and gw_spec(method)[0].partition("@")[0] == "auto"


def dense_steps(method, steps):
    if method.startswith("powersgd"):
        return min(2, steps)
    if method.startswith("gw:") and not link_dependent(method):
        from gradwire.ddp import METHODS
        name, options = gw_spec(method)
        m = name.partition("@")[0]
        start = options.get("start_step", METHODS.get(m, {}).get("start_step", 0))
        return min(int(start), steps)
    return 0


def reached_at(curve, target):
    for s, loss in curve:
        if loss <= target:
            return s
    return None


def driver(a, e2e):
    n = a.to_loss
    if a.replot:
        rows = read_csv(a.replot)
        plot(rows, list(dict.fromkeys(r["link"] for r in rows)), a.to_loss_png, n, rows[0]["target"])
        return
    links = a.links.split(",") if a.links else ["1gbit", "100mbit"]
    methods = a.methods.split(",") if a.methods else e2e.TORCH_METHODS + e2e.gw_methods()
    methods = ["ddp"] + [m for m in methods if m != "ddp"]
    timing = e2e.parse_steps(a.steps, links, e2e.DEFAULT_STEPS)  # the median step's run per link
    print(f"ddp_to_loss: the target is plain DDP's loss on a fixed batch of {e2e.EVAL} after {n} steps "
          f"(unshaped); each method trains until it is at or below it (loss every {eval_every(n)} "
          f"steps, at most {CAP * n} steps); links: {', '.join(links)}; methods: {', '.join(methods)}; "
          f"{e2e.optimizer_name()}", flush=True)
    t_start = time.time()
    e2e.set_link("unshaped")
    # 1) the target and every link-independent method's steps, unshaped
    status, ref = trajectory(e2e, "unshaped", "ddp", n, None, steps=n)
    if status != "ok":
        raise SystemExit(f"plain DDP failed ({status}): no target")
    target = ref["loss"]
    print(f"target: loss {target:.4f} (plain DDP after {n} steps, data: {ref['data']})", flush=True)
    steps = {}
    for m in methods:
        if link_dependent(m):
            continue
        if m == "ddp":
            res = ref
        else:
            status, res = trajectory(e2e, "unshaped", m, n, target)
        at = reached_at(res["curve"], target) if res else None
        steps[m] = (status, at, res["curve"][-1][1] if res and res["curve"] else None)
        print(f"  {m:{method_width(methods)}s} {status:7s} " + (f"reached at step {at}" if at else
                                          f"not reached in {CAP * n} steps") +
              (f" (loss {steps[m][2]:.4f})" if steps[m][2] is not None else ""), flush=True)
    # 2) per link: each method's median step there, and gw:auto's own run
    rows = []
    for link in links:
        err = e2e.set_link(link)
        if err:
            print(f"skipped link {link}: tc: {err}", flush=True)
            continue
        w, t = timing[link]
        med = {}
        for m in methods:
            row = dict(link=link, method=m, status="ok", steps=None, dense_steps=0, reached=0,
                       median_ms=None, time_s=None, vs_ddp=None, final_loss=None, target=target)
            if link_dependent(m):
                status, res = trajectory(e2e, link, m, n, target)
                row["status"] = status
                if res:
                    at = reached_at(res["curve"], target)
                    row.update(steps=at or len(res["step_s"]), reached=int(at is not None),
                               median_ms=res["median_ms"], final_loss=res["curve"][-1][1],
                               time_s=sum(res["step_s"]))
            else:
                st, at, last = steps[m]
                status, res = e2e.run_combo(link, m, w, t, e2e.step_timeout(link, w + t))
                row["status"] = status if st == "ok" else st
                if res and st == "ok":
                    med[m] = res["median_ms"]
                    k = at or CAP * n
                    d = dense_steps(m, k)
                    row.update(steps=k, dense_steps=d, reached=int(at is not None), median_ms=med[m],
                               final_loss=last)
                    if d and "ddp" not in med:  # its dense steps have no time to count at
                        row["status"] = "no ddp step time"
                    else:
                        row["time_s"] = (d * med.get("ddp", 0.0) + (k - d) * med[m]) / 1000
            rows.append(row)
        base = next((r["time_s"] for r in rows if r["link"] == link and r["method"] == "ddp"), None)
        for r in rows:
            if r["link"] == link and base and r["time_s"]:
                r["vs_ddp"] = base / r["time_s"]
        report(rows, link, n)
        e2e.write_csv(a.to_loss_csv, rows, FIELDS)
    e2e.tc("qdisc", "del", "dev", "lo", "root")
    print(f"wall time {time.time() - t_start:.0f} s\ncsv: {a.to_loss_csv}")
    if a.to_loss_png:
        plot(rows, links, a.to_loss_png, n, target)


def report(rows, link, n):
    print(f"\n{link}: time to plain DDP's loss after {n} steps")
    mw = method_width([r["method"] for r in rows])
    head = f"{'method':{mw}s} {'steps':>6s} {'dense':>5s} {'step ms':>9s} {'time s':>8s} {'vs DDP':>7s}"
    print(head + "\n" + "-" * len(head))
    for r in sorted((r for r in rows if r["link"] == link), key=lambda r: r["time_s"] or 1e30):
        if not r["time_s"]:
            print(f"{r['method']:{mw}s} {r['status']}")
            continue
        mark = "" if r["reached"] else ">"
        vs = "-" if r["vs_ddp"] is None else f"{r['vs_ddp']:.2f}x"
        print(f"{r['method']:{mw}s} {mark + str(r['steps']):>6s} {r['dense_steps']:5d} {r['median_ms']:9.1f} "
              f"{mark + format(r['time_s'], '.1f'):>8s} {vs:>7s}", flush=True)


def read_csv(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for k in ("median_ms", "time_s", "vs_ddp", "final_loss", "target"):
                r[k] = float(r[k]) if r.get(k) else None
            for k in ("steps", "dense_steps", "reached"):
                r[k] = int(r[k]) if r.get(k) else 0
            rows.append(r)
    return rows


def plot(rows, links, path, n, target):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"no matplotlib: plot {path} not written")
        return
    links = [l for l in links if any(r["link"] == l and r["time_s"] for r in rows)]
    fig, axes = plt.subplots(1, len(links), figsize=(5.5 * len(links), 5), squeeze=False)
    for ax, link in zip(axes[0], links):
        rs = sorted((r for r in rows if r["link"] == link and r["time_s"]), key=lambda r: r["time_s"])
        names = [r["method"] + ("" if r["reached"] else " (not reached)") for r in rs]
        colors = ["tab:blue" if r["method"].startswith("gw:") else "tab:gray" for r in rs]
        ax.barh(range(len(rs)), [r["time_s"] for r in rs], color=colors, alpha=0.9)
        top = max(r["time_s"] for r in rs)
        for i, r in enumerate(rs):
            if not r["reached"]:
                ax.barh(i, r["time_s"], color="none", edgecolor="black", hatch="//")
            ax.text(r["time_s"] + top * 0.01, i, f"{'>' if not r['reached'] else ''}{r['time_s']:.0f} s",
                    va="center", fontsize=7)
        ax.set_yticks(range(len(rs)))
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.15)
        ax.set_xlabel("seconds to reach the target loss")
        ax.set_title(LINK_NAMES.get(link, link))
        ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.suptitle(f"Time to plain DDP's loss after {n} steps ({target:.4f}); 4 ranks, gloo, MLP 10.0M; "
                 f"gradwire blue, torch grey, hatched: not reached in {CAP * n} steps", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")
