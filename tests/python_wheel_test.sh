#!/usr/bin/env bash
# `pip wheel .` (meson-python, no downloads: the build requirements come from
# the interpreter's environment), install the wheel into a scratch directory,
# then run every ```python block of the README against the installed package,
# from outside the source tree. A block that uses `ddp_model` runs after a
# one-process gloo DDP model of that name is made, and is followed by a
# training step through the hook it registered.
set -euo pipefail
py=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if ! "$py" -c "import mesonpy" 2>/dev/null; then
    echo "skipped: meson-python is not installed for $py"; exit 77
fi
"$py" -m pip wheel -q --no-build-isolation --no-deps -w "$dir/wheel" "$src" >"$dir/pip.log" 2>&1 ||
    { cat "$dir/pip.log"; exit 1; }
"$py" -m pip install -q --no-deps --target "$dir/site" "$dir"/wheel/gradwire-*.whl
awk -v dir="$dir" '
    /^```python[[:space:]]*$/ { n++; file = dir "/example_" n ".py"; inblock = 1; next }
    /^```/ && inblock         { inblock = 0; close(file); next }
    inblock                   { print > file }
' "$src/README.md"
count=$(ls "$dir"/example_*.py 2>/dev/null | wc -l)
[ "$count" -gt 0 ] || { echo "no Python example found in README.md"; exit 1; }
cd "$dir"
for f in example_*.py; do
    if grep -q ddp_model "$f"; then
        { cat <<'PY'
import os, torch, torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("GW_TEST_PORT", "29533"))
dist.init_process_group("gloo", rank=0, world_size=1)
ddp_model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
PY
          cat "$f"
          cat <<'PY'
ddp_model(torch.randn(4, 8)).sum().backward()
assert state.steps == 1, "the hook did not run"
dist.destroy_process_group()
PY
        } >"run_$f"
    else
        cp "$f" "run_$f"
    fi
    PYTHONPATH="$dir/site" "$py" "run_$f"
done
echo "wheel built and installed; $count README Python example(s) ran"
