#!/usr/bin/env bash
# zigcc.sh ZIG cc|c++ ARGS...: zig's clang for x86-64 Linux with glibc 2.17
# and its own static libc++, so a wheel built with it (scripts/wheel.sh) runs on
# any x86-64 Linux since 2014 (manylinux2014). Headers zig does not ship
# (xsimd, zstd, Python's) come from /usr/include after zig's own.
# zig hands a source read from standard input ("-") to clang with the
# versioned triple, which clang refuses: such input goes through a file.
set -uo pipefail
zig=$1 mode=$2
shift 2
args=() tmp=
for a in "$@"; do
    if [ "$a" = - ]; then
        tmp=$(mktemp --suffix "$([ "$mode" = cc ] && echo .c || echo .cpp)")
        cat >"$tmp"
        a=$tmp
    fi
    args+=("$a")
done
"$zig" "$mode" -target x86_64-linux-gnu.2.17 -idirafter /usr/include "${args[@]}"
rc=$?
[ -z "$tmp" ] || rm -f "$tmp"
exit $rc
