#!/usr/bin/env bash
# Install what is missing, build the benchmarks (release, -O3), run the suite
# and the peer comparison, and print the ratio tables (docs/performance.md):
#   bash scripts/bench.sh                    # sizes 1K, 64K, 1M, 16M, 64M; peers at 16M
#   bash scripts/bench.sh --quick            # 64K and 1M only, fewer repetitions
# Pin to one core for the single-core numbers: taskset -c 1 bash scripts/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_packages "${BASE_PACKAGES[@]}" libbenchmark-dev swig python3
ensure_venv
sizes=1024,65536,1048576,16777216,67108864
peer_n=16777216
min_time=0.5
if [ "${1:-}" = "--quick" ]; then
    sizes=65536,1048576
    peer_n=1048576
    min_time=0.1
fi
build build-bench -Dbuildtype=release -Dbench=true -Dwerror=true -Djava=disabled \
    -Dpython=enabled -Dpython_exe="$GW_VENV/bin/python"
echo "== gradwire suite (SIMD target: ${GW_SIMD:-auto})"
./build-bench/bench/bench_gradwire --sizes "$sizes" --benchmark_min_time="$min_time" \
    --benchmark_out=build-bench/bench.json --benchmark_out_format=json \
    --benchmark_format=console --benchmark_color=false
echo
echo "== PyTorch / numpy peers, same machine, same run"
PYTHONPATH=$PWD/build-bench/bindings/python "$GW_VENV/bin/python" bench/peers.py --n "$peer_n"
