#!/usr/bin/python3
"""Plot bench_gradwire's JSON output: time per element against n for groups
of operations, with the STREAM-style baselines of the same run drawn in.

Usage:
  ./build-bench/bench/bench_gradwire --benchmark_out=b.json --benchmark_out_format=json
  /usr/bin/python3 scripts/plot_bench.py b.json docs/performance.png
Needs Debian's python3-matplotlib.
"""
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GROUPS = [
    ("kernels", ["kernel/sum_abs", "kernel/max_abs_key", "kernel/ef_combine",
                 "kernel/sign_pack_residual", "kernel/sign_accumulate", "kernel/f32_to_f16",
                 "kernel/topk_select_0.10%", "kernel/topk_select_1.00%"]),
    ("state machines", ["worker_step/none_tensor", "worker_step/nesterov_tensor",
                        "worker_step/nesterov_block4096", "worker_step/signum_tensor",
                        "lags_step/topk0.1%", "asylpg/worker_step_b4"]),
    ("many frames", ["decode_accumulate/scaled_sign", "decode_accumulate_x8/scaled_sign",
                     "decode_accumulate_many_x8/scaled_sign", "server_round/M4",
                     "server_round_call/M4"]),
    ("codecs", ["encode/scaled_sign", "decode_accumulate/scaled_sign", "encode/fp16",
                "encode/topk", "encode/quant", "decode/quant", "encode/qsgd",
                "encode/sparse_quant"]),
]
BASES = ["base/read", "base/copy", "base/inplace"]


def main():
    data = json.load(open(sys.argv[1]))
    series = defaultdict(dict)  # op -> n -> ns per element
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        name = name.replace("/real_time", "").replace("/manual_time", "")
        op, n = name.rsplit("/", 1)
        t = b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
        series[op][int(n)] = t / int(n)
    # Two panels a row, each legend in its own column beside its panel (never
    # over the curves), at a size that reads at the docs' width.
    plt.rcParams.update({"font.size": 12, "axes.titlesize": 14})
    rows = (len(GROUPS) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(20, 6.2 * rows), squeeze=False)
    for ax in axes.flat[len(GROUPS):]:
        ax.set_visible(False)
    for ax, (title, ops) in zip(axes.flat, GROUPS):
        for base, style in zip(BASES, [":", "-.", "--"]):
            if base in series:
                ns = sorted(series[base])
                ax.plot(ns, [series[base][n] for n in ns], style, color="black", linewidth=1,
                        label=base)
        for op in ops:
            if op in series:
                ns = sorted(series[op])
                ax.plot(ns, [series[op][n] for n in ns], marker="o", markersize=3, label=op)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("elements (float32)")
        ax.set_ylabel("ns per element")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
