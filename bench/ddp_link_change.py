"""A link that changes speed mid-run, on the shaped loopback of bench/ddp_e2e.py.

    python bench/ddp_e2e.py --links unshaped --link-change 1gbit@12 --steps 0+36 \\
        --methods ddp,gw:ef,gw:auto,gw:auto/reprobe_steps=12

Every method starts on the one --links link; before step STEP (counted from 0
over warm-up and timed steps) rank 0 changes the shaper to LINK, and all ranks
wait at a barrier outside the timed step. Per method: the median step (the
slowest rank's) before the change, after it, over the last quarter of the
steps (where policy="never_slower" with reprobe_steps has had time to
follow), the sum of the timed steps and, under policy="never_slower", how
many probes it began; a plot of step time against step.
"""

import csv
import os
import statistics

FIELDS = ["method", "status", "start", "change", "before_ms", "after_ms", "last_ms", "total_s",
          "probes", "step_ms"]


def driver(a, e2e):
    links = (a.links or "").split(",")
    to, _, at = a.link_change.partition("@")
    if len(links) != 1 or links[0] not in e2e.LINKS:
        raise SystemExit(f"--link-change starts on one --links link of {list(e2e.LINKS)}")
    if to not in e2e.LINKS or not at.isdigit():
        raise SystemExit(f"--link-change LINK@STEP: LINK one of {list(e2e.LINKS)}, STEP a step")
    start, at = links[0], int(at)
    warm, timed = e2e.parse_steps(a.steps, [start], {start: (0, 36)})[start]
    if not warm < at < warm + timed:
        raise SystemExit(f"the change (step {at}) must fall inside the timed steps "
                         f"({warm}..{warm + timed - 1})")
    methods = (a.methods.split(",") if a.methods
               else ["ddp", "gw:ef", "gw:auto", f"gw:auto/reprobe_steps={at}"])
    print(f"ddp_link_change: {e2e.WORLD} ranks, the ddp_e2e model and data; the link starts "
          f"{start} and is {to} from step {at} ({warm} warm-up + {timed} timed steps)")
    head = f"{'method':28s} {'before ms':>10s} {'after ms':>10s} {'last ms':>10s} {'total s':>9s}"
    print(head)
    print("-" * len(head), flush=True)
    timeout = a.timeout or max(e2e.step_timeout(l, warm + timed) for l in (start, to))
    rows = []
    for m in methods:
        e2e.set_link(start)
        status, res = e2e.run_combo(start, m, warm, timed, timeout, ["--change", a.link_change])
        row = dict(method=m, status=status, start=start, change=a.link_change)
        if res:
            ms = [1000 * t for t in res["step_s"]]
            split = at - warm
            row.update(before_ms=statistics.median(ms[:split]),
                       after_ms=statistics.median(ms[split:]),
                       last_ms=statistics.median(ms[-max(1, len(ms) // 4):]),
                       total_s=sum(ms) / 1000, probes=res.get("probes"),
                       step_ms=" ".join(f"{t:.1f}" for t in ms))
            print(f"{m:28s} {row['before_ms']:10.1f} {row['after_ms']:10.1f} "
                  f"{row['last_ms']:10.1f} {row['total_s']:9.2f}", flush=True)
        else:
            print(f"{m:28s} {status}", flush=True)
        rows.append(row)
        write_csv(a.link_change_csv, rows)
    e2e.tc("qdisc", "del", "dev", "lo", "root")
    print(f"csv: {a.link_change_csv}")
    plot(rows, warm, at, start, to, a.link_change_png)


def write_csv(path, rows):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)


def plot(rows, warm, at, start, to, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"no matplotlib: plot {path} not written")
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    for i, r in enumerate(rows):
        if r.get("step_ms"):
            ms = [float(t) for t in r["step_ms"].split()]
            ax.plot(range(warm, warm + len(ms)), ms, marker=".", label=r["method"],
                    color=plt.cm.tab10(i % 10),
                    linestyle="-" if r["method"].startswith("gw:") else "--")
    ax.axvline(at - 0.5, color="gray", linestyle=":")
    ax.text(at - 0.3, 0.02, f"{start} -> {to}", transform=ax.get_xaxis_transform(),
            fontsize=9, color="gray")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("step time (ms, slowest rank)")
    ax.set_title("DDP step time when the link changes speed, 4 ranks (gloo), MLP 10.0M params")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")
