#!/usr/bin/env bash
# Install what is missing, build, and run the main demo: M simulated workers
# train an MLP on Fashion-MNIST with dist-EF-blockSGDM and with full-precision
# SGD with momentum. Extra arguments go to the demo (see --help).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_packages "${BASE_PACKAGES[@]}"
build build -Dwerror=true
exec ./build/examples/train_fmnist "$@"
