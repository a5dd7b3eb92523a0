#!/usr/bin/env bash
# Install what is missing, build the benchmarks (release, -O3), run the suite
# and the peer comparison, and print the ratio tables (docs/performance.md):
#   bash scripts/bench.sh                    # sizes 1K, 64K, 1M, 16M, 64M; peers at 1M and 16M
#   bash scripts/bench.sh --quick            # 64K and 1M only (peers at 1M), shorter timings
#   bash scripts/bench.sh --repetitions 5    # medians of 5 runs of everything (slow)
# Extra arguments go to bench_gradwire (e.g. --benchmark_filter=worker_step).
# Pin to one core for the single-core numbers: taskset -c 1 bash scripts/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_packages "${BASE_PACKAGES[@]}" libbenchmark-dev swig python3
ensure_venv
sizes=1024,65536,1048576,16777216,67108864
peer_sizes=1048576,16777216
min_time=0.5
reps=1
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) sizes=65536,1048576; peer_sizes=1048576; min_time=0.1 ;;
        --repetitions) reps="$2"; shift ;;
        *) extra+=("$1") ;;
    esac
    shift
done
build build-bench -Dbuildtype=release -Dbench=true -Dwerror=true -Djava=disabled \
    -Dpython=enabled -Dpython_exe="$GW_VENV/bin/python"
echo "== gradwire suite (SIMD target: ${GW_SIMD:-auto})"
./build-bench/bench/bench_gradwire --sizes "$sizes" --benchmark_min_time="$min_time" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only="$([ "$reps" -gt 1 ] && echo true || echo false)" \
    --benchmark_out=build-bench/bench.json --benchmark_out_format=json \
    --benchmark_format=console --benchmark_color=false "${extra[@]}"
echo
echo "== zstd index stream: bits per index against the entropy of the gaps (top-k of 64M normals)"
./build-bench/bench/bench_sparse --stats
echo
echo "== PyTorch / numpy peers, same machine, same run"
PYTHONPATH=$PWD/build-bench/bindings/python "$GW_VENV/bin/python" bench/peers.py --sizes "$peer_sizes"
echo
"$GW_VENV/bin/python" scripts/plot_bench.py build-bench/bench.json build-bench/performance.png &&
    echo "plot: build-bench/performance.png (docs/performance.png is this plot of the run it describes)"
