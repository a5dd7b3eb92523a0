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
    echo "installing: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

BASE_PACKAGES=(meson ninja-build pkg-config g++ libxsimd-dev libgtest-dev libzstd-dev zlib1g-dev
               dataset-fashion-mnist)

# build DIR [meson options...]: configure (or re-apply the options), then build;
# show the log only on failure.
build() {
    local dir=$1; shift
    local log
    log=$(mktemp)
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
    elif [ $# -gt 0 ]; then
        # An existing build dir gets the same options a fresh one would.
        meson configure "$dir" "$@" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
    fi
    ninja -C "$dir" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
    rm -f "$log"
}

# The Python environment of the bindings' tests and the DDP demo: a virtual
# environment from the machine's python3 (pyenv's on the CI machine), cached
# per machine because torch with its CUDA wheels is about 5 GB (a few minutes
# to fetch from PyPI). GW_VENV moves it.
GW_VENV=${GW_VENV:-$HOME/.cache/gradwire/venv}
PY_PACKAGES=(numpy pytest meson-python meson ninja "torch==2.15.0")
ensure_venv() {
    if [ ! -x "$GW_VENV/bin/python" ]; then
        mkdir -p "$(dirname "$GW_VENV")"
        python3 -m venv "$GW_VENV"
    fi
    if ! "$GW_VENV/bin/python" -c "import numpy, pytest, mesonpy, torch" 2>/dev/null; then
        echo "installing into $GW_VENV: ${PY_PACKAGES[*]} (torch is large; once per machine)"
        "$GW_VENV/bin/python" -m pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
    fi
}
