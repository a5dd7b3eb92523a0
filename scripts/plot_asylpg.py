#!/usr/bin/python3
"""Plot examples/asylpg_fmnist.py's CSV: training loss against bits sent.

Usage:
  /usr/bin/python3 scripts/plot_asylpg.py asylpg.csv out.png \\
      [--threshold logistic 0.42 --threshold mlp 0.35]

One panel per model; for each method the learning rate that reached the
threshold with the fewest bits (as the demo's table reports), and the mu
sweep's runs dotted. Needs Debian's python3-matplotlib.
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"AsyFPG": "black", "QGrad": "tab:gray", "AsyLPG": "tab:blue",
          "Sparse-AsyLPG": "tab:green", "Acc-AsyLPG": "tab:red"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--threshold", nargs=2, action="append", default=[],
                    metavar=("MODEL", "LOSS"))
    args = ap.parse_args()
    thr = {"logistic": 0.42, "mlp": 0.35}
    thr.update({m: float(v) for m, v in args.threshold})
    runs = defaultdict(list)  # (model, method, lr, mu) -> [(bits, loss)]
    with open(args.csv) as f:
        for r in csv.DictReader(f):
            runs[(r["model"], r["method"], r["lr"], r["mu"])].append(
                (int(r["bits"]), float(r["loss"])))
    models = sorted({k[0] for k in runs}, key=lambda m: m != "logistic")
    fig, axes = plt.subplots(1, len(models), figsize=(6.5 * len(models), 6.4), squeeze=False)
    for ax, model in zip(axes[0], models):
        best = {}
        for (mo, method, lr, mu), pts in runs.items():
            if mo != model or mu:
                continue
            hit = next((b for b, l in pts if l < thr[model]), float("inf"))
            if method not in best or hit < best[method][0]:
                best[method] = (hit, lr, pts)
        for method, (hit, lr, pts) in best.items():
            ax.plot([b / 1e6 for b, _ in pts], [l for _, l in pts], color=COLORS.get(method),
                    label=f"{method} (lr {lr})", linewidth=1.6)
        # The mu sweep: one shade per mu, darker for larger mu, each labelled.
        sweep = sorted(((float(mu), lr, pts) for (mo, method, lr, mu), pts in runs.items()
                        if mo == model and mu), key=lambda t: (t[0], float(t[1])))
        shades = plt.get_cmap("Purples")
        for i, (mu, lr, pts) in enumerate(sweep):
            ax.plot([b / 1e6 for b, _ in pts], [l for _, l in pts], ":",
                    color=shades(0.35 + 0.6 * i / max(1, len(sweep) - 1)), linewidth=1.3,
                    label=f"AsyLPG mu {mu:g} (lr {lr})")
        ax.axhline(thr[model], color="gray", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("Mbit sent (frames as written, both directions)")
        ax.set_ylabel("training loss")
        ax.set_title(f"{model}: loss against bits (dotted: AsyLPG, mu sweep)")
        ax.grid(True, which="both", alpha=0.3)
        # Below the axes, not over the curves.
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2,
                  frameon=False)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
