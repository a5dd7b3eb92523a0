#!/usr/bin/python3
"""Plot the demo's per-epoch CSV (train_fmnist --csv FILE) as a PNG.

Usage: /usr/bin/python3 scripts/plot_demo.py results.csv docs/fmnist_demo.png
Needs Debian's python3-matplotlib.
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {"sgdm": "full-precision SGD, Nesterov momentum",
          "ef": "dist-EF-blockSGDM (1-bit, two-way)"}


def main(src, dst):
    runs = defaultdict(list)
    with open(src) as f:
        for row in csv.DictReader(f):
            runs[row["method"]].append(row)
    fig, (acc_ax, loss_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    for method, rows in runs.items():
        epochs = [int(r["epoch"]) for r in rows]
        mib = float(rows[-1]["bytes_per_step"]) / 2**20
        label = f"{LABELS.get(method, method)}: {mib:.2f} MiB/step"
        acc_ax.plot(epochs, [float(r["test_acc"]) for r in rows], marker="o", label=label)
        loss_ax.plot(epochs, [float(r["train_loss"]) for r in rows], marker="o", label=label)
    if "sgdm" in runs and "ef" in runs:
        ratio = float(runs["sgdm"][-1]["bytes_per_step"]) / float(runs["ef"][-1]["bytes_per_step"])
        gap = float(runs["sgdm"][-1]["test_acc"]) - float(runs["ef"][-1]["test_acc"])
        fig.suptitle(f"Fashion-MNIST, MLP 784-256-10, 4 workers: {ratio:.1f}x fewer bytes, "
                     f"final accuracy gap {gap:.2f} points")
    acc_ax.set(xlabel="epoch", ylabel="test accuracy (%)")
    loss_ax.set(xlabel="epoch", ylabel="train loss")
    for ax in (acc_ax, loss_ax):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
