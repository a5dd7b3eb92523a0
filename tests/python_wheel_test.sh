#!/usr/bin/env bash
# `pip wheel .` (meson-python, no downloads: the build requirements come from
# the interpreter's environment), install the wheel into a scratch directory,
# then run every ```python block of the README against the installed package,
# from outside the source tree. A block that uses `ddp_model` runs after a
# one-process gloo DDP model of that name is made, and is followed by a
# training step through the hook it registered.
# Then the wheel to publish (scripts/wheel.sh: zig for glibc 2.17, auditwheel):
# tagged manylinux_2_17, no GLIBC_ symbol above 2.17, installed with pip into a
# fresh venv (numpy from PyPI or pip's cache, no torch) where the README's
# example runs and gradwire.ddp / gradwire.fsdp say how to get torch. Both
# wheels' extensions must need neither libzstd nor libstdc++. Exit 77 (skip)
# after the first part when PyPI is unreachable and the tools are missing.
set -euo pipefail
py=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if ! "$py" -c "import mesonpy" 2>/dev/null; then
    echo "skipped: meson-python is not installed for $py"; exit 77
fi

# check_ext WHEEL [MAX_GLIBC]: the extension in WHEEL links neither libzstd nor
# libstdc++, and asks for no GLIBC_ symbol version above MAX_GLIBC.
check_ext() {
    local whl=$1 max=${2:-} x=$dir/ext.$RANDOM so needed top
    "$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$x"
    so=$(ls "$x"/gradwire/_gwnative*.so)
    needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    case " $needed" in
        *libzstd*|*libstdc++*) echo "$(basename "$whl"): the extension needs $needed"; return 1 ;;
    esac
    top=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
    echo "$(basename "$whl"): NEEDED $needed; highest GLIBC_ symbol version $top"
    if [ -n "$max" ] && [ "$(printf '%s\n%s\n' "$top" "$max" | sort -V | tail -1)" != "$max" ]; then
        echo "GLIBC_$top is above the wheel's tag (glibc $max)"; return 1
    fi
    [ -f "$x/gradwire/py.typed" ] || { echo "$(basename "$whl"): no gradwire/py.typed"; return 1; }
}

"$py" -m pip wheel -q --no-build-isolation --no-deps -w "$dir/wheel" "$src" >"$dir/pip.log" 2>&1 ||
    { cat "$dir/pip.log"; exit 1; }
check_ext "$dir"/wheel/gradwire-*.whl
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
import socket
with socket.socket() as s:  # a free port, not a fixed one another job may hold
    s.bind(("127.0.0.1", 0))
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
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

# The wheel to publish, in a fresh venv.
rc=0
GW_PY=$py bash "$src/scripts/wheel.sh" "$dir/dist" >"$dir/portable.log" 2>&1 || rc=$?
if [ "$rc" = 77 ]; then tail -1 "$dir/portable.log"; exit 77; fi
[ "$rc" = 0 ] || { cat "$dir/portable.log"; exit 1; }
grep -A3 'is consistent with' "$dir/portable.log" || true
whl=$(ls "$dir"/dist/gradwire-*manylinux_2_17_x86_64*.whl) ||
    { cat "$dir/portable.log"; echo "no manylinux_2_17 wheel"; exit 1; }
check_ext "$whl" 2.17
"$py" -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install -q --disable-pip-version-check "$whl" >"$dir/venv.log" 2>&1 ||
    { tail -3 "$dir/venv.log"; echo "skipped: numpy could not be installed into a fresh venv (PyPI unreachable?)"; exit 77; }
! "$dir/venv/bin/python" -c "import torch" 2>/dev/null || { echo "the fresh venv has torch"; exit 1; }
ran=0
for f in example_*.py; do
    grep -q torch "$f" && continue
    "$dir/venv/bin/python" "$f"
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "no torch-free README example"; exit 1; }
for mod in gradwire.ddp gradwire.fsdp; do
    "$dir/venv/bin/python" - "$mod" <<'PY'
import importlib, sys
try:
    importlib.import_module(sys.argv[1])
except ImportError as e:
    assert "pip install 'gradwire[torch]'" in str(e), e
else:
    raise SystemExit(sys.argv[1] + " imported without torch")
PY
done
echo "$(basename "$whl") installed in a fresh venv: the README example ran, gradwire.ddp and gradwire.fsdp ask for gradwire[torch]"

# The README's install line as written, in a second fresh venv: pip builds from
# the source tree in its own isolated environment (meson-python, meson, ninja
# from PyPI) for this machine; the console script and the example then run.
# A second try after a failure; one that never reached PyPI skips, as above.
"$py" -m venv "$dir/venv2"
pip_install() { (cd "$src" && PATH="$dir/venv2/bin:$PATH" pip install . >"$dir/pip_install.log" 2>&1); }
if ! pip_install && ! { echo "pip install . failed; once more"; pip_install; }; then
    tail -20 "$dir/pip_install.log"
    if grep -qiE 'NewConnectionError|ConnectTimeout|ReadTimeout|Max retries exceeded|Temporary failure in name resolution' \
        "$dir/pip_install.log"; then
        echo "skipped: pip install . could not fetch its build requirements (PyPI unreachable?)"; exit 77
    fi
    echo "pip install . failed"; exit 1
fi
"$dir/venv2/bin/gradwire" --version
for f in example_*.py; do
    grep -q torch "$f" || "$dir/venv2/bin/python" "$f"
done
echo "pip install . from the source tree: built, the gradwire command and the README example ran"
