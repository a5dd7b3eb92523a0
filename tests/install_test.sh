#!/usr/bin/env bash
# meson install into a scratch root with scripts/install.sh's tags; build a C99
# program against the installed header and pkg-config file, linked shared and
# statically (pkg-config --static: Libs.private and Requires.private must name
# everything the archive needs); run both; check that only gw_* symbols are
# exported and that no Python file was installed beside the C library.
set -euo pipefail
src=$1 build=$2
# A sanitizer build's library needs its runtime: the plain-cc check is for the
# ordinary build (exit 77 = skipped).
syms=$(nm -D "$build/libgradwire.so" 2>/dev/null || true)
if [[ $syms == *__asan_* || $syms == *__ubsan_* ]]; then
    echo "skipped: sanitizer build"; exit 77
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --destdir "$root" --quiet --tags runtime,devel >/dev/null
stray=$(find "$root" -name "*.py" -o -name "_gwnative*" | head -n3)
[ -z "$stray" ] || { echo "Python files installed with the C library: $stray"; exit 1; }
pc=$(find "$root" -name gradwire.pc | head -n1)
[ -n "$pc" ] || { echo "gradwire.pc not installed"; exit 1; }
# Where the loader and pkg-config of a fresh Debian look (not lib64).
prefix=$(meson introspect --buildoptions "$build" | python3 -c \
    'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
case "$pc" in
    "$root$prefix/lib/pkgconfig/gradwire.pc"|"$root$prefix/lib/"*-linux-gnu/pkgconfig/gradwire.pc) ;;
    *) echo "gradwire.pc installed at ${pc#$root}, outside the loader's and pkg-config's paths"; exit 1 ;;
esac
[ -e "$root$prefix/include/gradwire_types.h" ] || { echo "gradwire_types.h not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
hdr=$(find "$root" -name gradwire.h | head -n1)
[ -n "$hdr" ] || { echo "gradwire.h not installed"; exit 1; }
cc -std=c99 -pedantic-errors -Wall -Wextra -Werror $(pkg-config --cflags gradwire) \
   "$src/tests/c99_api.c" -o "$root/c99_api" $(pkg-config --libs gradwire)
so=$(find "$root" -name 'libgradwire.so.*' -type f | head -n1)
LD_LIBRARY_PATH=$(dirname "$so") "$root/c99_api"
# The README's build line, word for word, on the same program.
cp "$src/tests/c99_api.c" "$root/app.c"
(cd "$root" && cc app.c $(pkg-config --cflags --libs gradwire) && LD_LIBRARY_PATH=$(dirname "$so") ./a.out >/dev/null)
# The static archive: everything it needs must come from pkg-config --static.
cc -std=c99 -pedantic-errors -Wall -Wextra -Werror $(pkg-config --cflags gradwire) \
   "$src/tests/c99_api.c" -o "$root/c99_api_static" \
   -Wl,-Bstatic $(pkg-config --static --libs gradwire) -Wl,-Bdynamic
if readelf -d "$root/c99_api_static" | grep -q 'NEEDED.*libgradwire'; then
    echo "the static link still needs libgradwire.so"; exit 1
fi
"$root/c99_api_static" >/dev/null
bad=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^gw_' || true)
if [ -n "$bad" ]; then echo "non-gw symbols exported:"; echo "$bad"; exit 1; fi
echo "exported: $(nm -D --defined-only "$so" | grep -c ' gw_') gw_* symbols, soname $(objdump -p "$so" | awk '/SONAME/{print $2}')"
