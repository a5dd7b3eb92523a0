# Shared by scripts/demo.sh and scripts/test.sh: install what is missing
# (Debian 12 packages), configure and build quietly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# ensure_packages PKG...: apt-get install only what is not installed yet.
ensure_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]} (apt-get; a fresh machine takes minutes)"
    local log
    log=$(mktemp)
    { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
    } >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
    rm -f "$log"
}

BASE_PACKAGES=(meson ninja-build pkg-config g++ libxsimd-dev libgtest-dev libzstd-dev zlib1g-dev
               dataset-fashion-mnist)

# build DIR [meson options...] [-- TARGET...]: configure (or re-apply the
# options), then build (only TARGETs when given); quiet when there is nothing
# to do, otherwise one line saying what is built and ninja's progress every
# 10%, so a first build (minutes) is never silent; the log only on failure.
build() {
    local dir=$1; shift
    local opts=() targets=() log
    while [ $# -gt 0 ]; do
        if [ "$1" = -- ]; then shift; targets=("$@"); break; fi
        opts+=("$1"); shift
    done
    log=$(mktemp)
    if [ ! -f "$dir/build.ninja" ]; then
        echo "configuring $dir (meson setup ${opts[*]})"
        meson setup "$dir" "${opts[@]}" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
    elif [ ${#opts[@]} -gt 0 ]; then
        # An existing build dir gets the same options a fresh one would.
        meson configure "$dir" "${opts[@]}" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
    fi
    ninja_progress "$dir" "$log" "${targets[@]}" || { cat "$log"; rm -f "$log"; return 1; }
    rm -f "$log"
}

# ninja_progress DIR LOG [TARGET...]: ninja with its output in LOG; when there
# is much to do, a line on stdout at every tenth of the steps, as they finish
# (a bash loop: mawk, Debian's awk, holds piped lines until its buffer fills).
ninja_progress() {
    local dir=$1 log=$2; shift 2
    local todo
    todo=$(ninja -C "$dir" -n "$@" 2>/dev/null | grep -c '^\[' || true)
    [ "$todo" -eq 0 ] || echo "building in $dir: $todo steps${*:+ for $*}"
    NINJA_STATUS='[%f/%t] ' ninja -C "$dir" "$@" 2>&1 | tee "$log" | {
        local line pct next=10
        while IFS= read -r line; do
            [ "$todo" -gt 20 ] && [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\  ]] || continue
            pct=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
            if [ "$pct" -ge "$next" ]; then
                echo "   $pct% (${BASH_REMATCH[1]}/${BASH_REMATCH[2]})"
                next=$((pct - pct % 10 + 10))
            fi
        done
    }
    return "${PIPESTATUS[0]}"
}

# The Python environment of the bindings' tests and the DDP demo: a virtual
# environment from the machine's python3 (pyenv's on the CI machine), cached
# per machine because torch with its CUDA wheels is about 5 GB (a few minutes
# to fetch from PyPI). GW_VENV moves it.
GW_VENV=${GW_VENV:-$HOME/.cache/gradwire/venv}
PY_PACKAGES=(numpy pytest meson-python meson ninja matplotlib "torch==2.15.0")
ensure_venv() {
    if [ ! -x "$GW_VENV/bin/python" ]; then
        mkdir -p "$(dirname "$GW_VENV")"
        python3 -m venv "$GW_VENV"
    fi
    if ! "$GW_VENV/bin/python" -c "import numpy, pytest, mesonpy, matplotlib, torch" 2>/dev/null; then
        echo "installing into $GW_VENV: ${PY_PACKAGES[*]} (torch is large; once per machine)"
        "$GW_VENV/bin/python" -m pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
    fi
}

# build_python_package: the Python package in build/, configured like
# scripts/test.sh's build but building only the package (not every test and
# benchmark); then PYTHONPATH points at it.
build_python_package() {
    ensure_packages "${BASE_PACKAGES[@]}" swig
    ensure_venv
    build build -Dwerror=true -Dpython=enabled -Dpython_exe="$GW_VENV/bin/python" -- libgradwire.a
    build build -- $(ninja -C build -t targets all | awk -F: '$1 ~ /^bindings\/python\/gradwire\// {print $1}')
    export PYTHONPATH=$PWD/build/bindings/python
}
