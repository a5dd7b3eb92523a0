#!/usr/bin/env bash
# End-to-end DDP benchmark on shaped loopback links (bench/ddp_e2e.py): 4 torch
# DDP ranks (gloo) on 127.0.0.1 inside a network namespace of their own, lo
# shaped with tc tbf per link (unshaped, 1 Gbit/s, 100 Mbit/s, 10 Gbit/s);
# plain DDP, torch's fp16 and PowerSGD hooks, and every gradwire DDP method.
# Needs unshare(1) and tc(8) in a namespace (root, or unprivileged user
# namespaces); otherwise it prints "skipped: ..." and exits 0. Arguments go to
# the benchmark (see --help), e.g.
#   bash scripts/bench_ddp.sh --quick
#   bash scripts/bench_ddp.sh --links unshaped,1gbit --methods ddp,fp16_hook,gw:ef,gw:fp16
#   bash scripts/bench_ddp.sh --csv docs/ddp_e2e.csv --png docs/ddp_e2e.png
#   bash scripts/bench_ddp.sh --to-loss 100   # time to plain DDP's loss after 100 steps
# With PYTHONPATH set, that gradwire package is used and nothing is built;
# otherwise the Python package is built into build/ like scripts/demo.sh does.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ -z "${PYTHONPATH:-}" ]; then
    build_python_package
else
    ensure_venv
fi
command -v tc >/dev/null || ensure_packages iproute2
exec "$GW_VENV/bin/python" bench/ddp_e2e.py "$@"
