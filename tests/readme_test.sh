#!/usr/bin/env bash
# Every C example in README.md, compiled as written (C99, pedantic, warnings
# as errors) against the public header and the built library, then run; what
# it prints must be the output the README shows after it.
set -euo pipefail
src=$1 build=$2
syms=$(nm -D "$build/libgradwire.so" 2>/dev/null || true)
if [[ $syms == *__asan_* || $syms == *__ubsan_* ]]; then
    echo "skipped: sanitizer build"; exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Split the ```c blocks of the README into example_1.c, example_2.c, ...; the
# first ```text block after example N (before the next ```c) is what it prints.
awk -v dir="$dir" '
    /^```c[[:space:]]*$/            { n++; file = dir "/example_" n ".c"; inblock = 1; next }
    /^```text[[:space:]]*$/ && n && !(n in out) { out[n] = 1; file = dir "/example_" n ".out"; inblock = 1; next }
    /^```/ && inblock               { inblock = 0; close(file); next }
    inblock                         { print > file }
' "$src/README.md"
count=$(ls "$dir"/example_*.c 2>/dev/null | wc -l)
[ "$count" -gt 0 ] || { echo "no C example found in README.md"; exit 1; }
for f in "$dir"/example_*.c; do
    cc -std=c99 -pedantic-errors -Wall -Wextra -Werror -I"$src/include" "$f" -o "${f%.c}" \
       -L"$build" -lgradwire -Wl,-rpath,"$build"
    [ -f "${f%.c}.out" ] || { echo "README: no printed output shown after $(basename "$f")"; exit 1; }
    "${f%.c}" >"${f%.c}.got"
    diff -u "${f%.c}.out" "${f%.c}.got" || { echo "README: $(basename "$f") prints other than it says"; exit 1; }
done
echo "$count README C example(s) compiled and ran"
