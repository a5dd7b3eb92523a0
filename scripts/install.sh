#!/usr/bin/env bash
# Build gradwire and install it system-wide (/usr/local: libgradwire.so,
# gradwire.h, gradwire_types.h, gradwire.pc), then refresh the loader cache.
# Works as root and as a user with sudo. Extra arguments go to `meson setup`.
# Only the C library goes here: the Python package installs with pip (a wheel
# carries its own extension) and the Java one with Maven (docs/java.md).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_packages meson ninja-build pkg-config g++ libxsimd-dev libzstd-dev
build build-install -Dbuildtype=release -Dtests=false -Dexamples=false -Dbench=false \
    -Dpython=disabled -Djava=disabled --prefix=/usr/local "$@"
$SUDO meson install -C build-install --quiet --no-rebuild --tags runtime,devel
$SUDO ldconfig
echo "installed: $(pkg-config --modversion gradwire 2>/dev/null || echo '?') ($(pkg-config --libs gradwire 2>/dev/null))"
