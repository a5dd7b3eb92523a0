#!/usr/bin/env bash
# Install what is missing, build the demo, and run it: M simulated workers
# train an MLP on Fashion-MNIST with full-precision SGD with momentum and with
# every compressed method (dist-EF-blockSGDM, top-k, SLGS, ScaleCom CLT-k,
# LAGS-SGD). Extra arguments go to the demo (see --help), e.g.
#   bash scripts/demo.sh --seed 2 --csv r.csv
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_packages "${BASE_PACKAGES[@]}"
# Configure like scripts/test.sh, but build only the demo and its library.
log=$(mktemp)
if [ ! -f build/build.ninja ]; then
    meson setup build -Dwerror=true >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
fi
ninja -C build examples/train_fmnist >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
rm -f "$log"
exec ./build/examples/train_fmnist "$@"
