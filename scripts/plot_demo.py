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

LABELS = {"sgdm": "full-precision SGD, Nesterov momentum",
          "ef": "dist-EF-blockSGDM (1-bit, two-way)"}


def read_runs(path):
    runs = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            runs[row["method"]].append(row)
    return runs


def plot(acc_ax, loss_ax, rows, label, style):
    epochs = [int(r["epoch"]) for r in rows]
    mib = float(rows[-1]["bytes_per_step"]) / 2**20
    label = f"{label}: {mib:.2f} MiB/step, {float(rows[-1]['test_acc']):.2f}%"
    acc_ax.plot(epochs, [float(r["test_acc"]) for r in rows], style, marker="o", label=label)
    loss_ax.plot(epochs, [float(r["train_loss"]) for r in rows], style, marker="o", label=label)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--note", default="")
    ap.add_argument("--also", nargs=2, action="append", default=[], metavar=("CSV", "LABEL"))
    ap.add_argument("--label", nargs=2, action="append", default=[], metavar=("METHOD", "TEXT"))
    args = ap.parse_args()
    labels = dict(LABELS, **dict(args.label))

    runs = read_runs(args.src)
    fig, (acc_ax, loss_ax) = plt.subplots(1, 2, figsize=(11, 5.0))
    for method, rows in runs.items():
        plot(acc_ax, loss_ax, rows, labels.get(method, method), "-")
    for path, label in args.also:
        for method, rows in read_runs(path).items():
            if method != "sgdm":
                plot(acc_ax, loss_ax, rows, label, "--")
    title = "Fashion-MNIST, MLP 784-256-10, 4 workers"
    if args.note:
        title += f", {args.note}"
    if "sgdm" in runs and "ef" in runs:
        ratio = float(runs["sgdm"][-1]["bytes_per_step"]) / float(runs["ef"][-1]["bytes_per_step"])
        gap = float(runs["sgdm"][-1]["test_acc"]) - float(runs["ef"][-1]["test_acc"])
        title += f"\n{ratio:.1f}x fewer bytes, final accuracy gap {gap:.2f} points"
    fig.suptitle(title)
    acc_ax.set(xlabel="epoch", ylabel="test accuracy (%)")
    loss_ax.set(xlabel="epoch", ylabel="train loss")
    for ax in (acc_ax, loss_ax):
        ax.grid(alpha=0.3)
    handles, names = acc_ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=1, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 + 0.035 * len(names), 1, 1))
    fig.savefig(args.dst, dpi=110)


if __name__ == "__main__":
    main()
