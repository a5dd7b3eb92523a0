#!/usr/bin/env bash
# Install what is missing, build the demo, and run it: M simulated workers
# train an MLP on Fashion-MNIST with full-precision SGD with momentum and with
# every compressed method (dist-EF-blockSGDM, top-k, SLGS, ScaleCom CLT-k,
# LAGS-SGD). Extra arguments go to the demo (see --help), e.g.
#   bash scripts/demo.sh --seed 2 --csv r.csv
# With --processes N it runs as a real multi-process torch DDP job on
# localhost instead (examples/train_fmnist_ddp.py, the methods through the
# gradwire DDP hook), e.g.  bash scripts/demo.sh --processes 4 --methods allreduce,ef
# With --asylpg it runs the double-quantization reproduction instead
# (examples/asylpg_fmnist.py: AsyFPG, AsyLPG, Sparse-AsyLPG, Acc-AsyLPG on
# logistic regression and an MLP, bits until a loss threshold), e.g.
#   bash scripts/demo.sh --asylpg --models logistic --csv asylpg.csv
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_packages "${BASE_PACKAGES[@]}"
ddp=0
asylpg=0
for a in "$@"; do
    [[ $a == --processes* ]] && ddp=1
    [[ $a == --asylpg ]] && asylpg=1
done
log=$(mktemp)
if [ $asylpg = 1 ] || [ $ddp = 1 ]; then
    ensure_packages swig
    ensure_venv
    build build -Dwerror=true -Dpython=enabled -Dpython_exe="$GW_VENV/bin/python" >"$log" 2>&1 ||
        { cat "$log"; rm -f "$log"; exit 1; }
    rm -f "$log"
    export PYTHONPATH=$PWD/build/bindings/python
    [ $ddp = 1 ] && exec "$GW_VENV/bin/python" examples/train_fmnist_ddp.py "$@"
    args=()
    for a in "$@"; do [[ $a == --asylpg ]] || args+=("$a"); done
    exec "$GW_VENV/bin/python" examples/asylpg_fmnist.py "${args[@]}"
fi
# Configure like scripts/test.sh, but build only the demo and its library.
if [ ! -f build/build.ninja ]; then
    meson setup build -Dwerror=true >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
fi
ninja -C build examples/train_fmnist >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
rm -f "$log"
exec ./build/examples/train_fmnist "$@"
