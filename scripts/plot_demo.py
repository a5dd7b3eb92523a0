#!/usr/bin/python3
"""Plot the demo's per-epoch CSV (train_fmnist --csv FILE) as a PNG.

Usage:
  /usr/bin/python3 scripts/plot_demo.py results.csv out.png \\
      [--note TEXT] [--label METHOD TEXT ...] [--also OTHER.csv LABEL ...]

--also adds the compressed runs (every method but sgdm) of another CSV,
dashed, labelled LABEL (e.g. the same demo with --blocks tensor).
--note is appended to the title (e.g. "mu 0.9, seed 1"); --label renames a
method of the main CSV in the legend.
Needs Debian's python3-matplotlib.
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

LABELS = {"sgdm": "full-precision SGD, Nesterov momentum",
          "ef": "dist-EF-blockSGDM (1-bit, two-way)",
          "topk": "top-k 1%",  # two-way in the C demo, one-way through the DDP hook
          "slgs": "SLGS: top-k 0.1% over the model",
          "cltk": "ScaleCom CLT-k 1%",
          "lags": "LAGS-SGD 0.1% per layer",
          "ddp": "plain DDP (no hook)"}


def read_runs(path):
    runs = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            runs[row["method"]].append(row)
    return runs


def plot(acc_ax, loss_ax, diag_ax, rows, label, style):
    epochs = [int(r["epoch"]) for r in rows]
    kib = float(rows[-1]["bytes_per_step"]) / 2**10
    label = f"{label}: {kib:,.1f} KiB/step, {float(rows[-1]['test_acc']):.2f}%"
    line, = acc_ax.plot(epochs, [float(r["test_acc"]) for r in rows], style, marker="o",
                        label=label)
    loss_ax.plot(epochs, [float(r["train_loss"]) for r in rows], style, marker="o", label=label,
                 color=line.get_color())
    name = rows[-1].get("diag_name") or ""
    if diag_ax is not None and name:
        diag_ax.plot(epochs, [float(r["diag"]) for r in rows], style, marker="o",
                     color=line.get_color(), label=name)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--note", default="")
    ap.add_argument("--also", nargs=2, action="append", default=[], metavar=("CSV", "LABEL"))
    ap.add_argument("--label", nargs=2, action="append", default=[], metavar=("METHOD", "TEXT"))
    ap.add_argument("--title", default="Fashion-MNIST, MLP 784-256-10, 4 workers")
    args = ap.parse_args()
    labels = dict(LABELS, **dict(args.label))

    runs = read_runs(args.src)
    has_diag = any(rows[-1].get("diag_name") for rows in runs.values())
    fig, axes = plt.subplots(1, 3 if has_diag else 2, figsize=(16 if has_diag else 11, 5.0))
    acc_ax, loss_ax = axes[0], axes[1]
    diag_ax = axes[2] if has_diag else None
    for method, rows in runs.items():
        plot(acc_ax, loss_ax, diag_ax, rows, labels.get(method, method), "-")
    for path, label in args.also:
        for method, rows in read_runs(path).items():
            if method != "sgdm":
                plot(acc_ax, loss_ax, diag_ax, rows, label, "--")
    title = args.title
    if args.note:
        title += f", {args.note}"
    base_name = "sgdm" if "sgdm" in runs else "ddp"
    if base_name in runs and set(runs) == {base_name, "ef"}:
        ratio = float(runs[base_name][-1]["bytes_per_step"]) / float(runs["ef"][-1]["bytes_per_step"])
        gap = float(runs[base_name][-1]["test_acc"]) - float(runs["ef"][-1]["test_acc"])
        title += f"\n{ratio:.1f}x fewer bytes, final accuracy gap {gap:.2f} points"
    elif base_name in runs and len(runs) > 1:
        base = float(runs[base_name][-1]["test_acc"])
        gaps = [f"{m} {base - float(r[-1]['test_acc']):.2f}" for m, r in runs.items()
                if m != base_name]
        title += "\nfinal accuracy gap to full precision (points): " + ", ".join(gaps)
    fig.suptitle(title)
    acc_ax.set(xlabel="epoch", ylabel="test accuracy (%)")
    loss_ax.set(xlabel="epoch", ylabel="train loss")
    if diag_ax is not None:
        diag_ax.set(xlabel="epoch", ylabel="diagnostic (see legend)")
        diag_ax.legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles, names = acc_ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=1, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 + 0.035 * len(names), 1, 1))
    fig.savefig(args.dst, dpi=110)


if __name__ == "__main__":
    main()
