#!/usr/bin/env bash
# docs/HACKING.md's worked examples, run as written: the codec example is
# applied to a copy of the tree (its codec file, its registry line, its id),
# the library is built there and the example program runs against it; every
# block the page quotes from the tree must still stand in the file it names.
#   usage: hacking_test.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
src=$1 build=$2
syms=$(nm -D "$build/libgradwire.so" 2>/dev/null || true)
if [[ $syms == *__asan_* || $syms == *__ubsan_* ]]; then
    echo "skipped: sanitizer build (the g++ pass runs it)"; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The tree as git has it (a plain copy where there is no git), without builds.
mkdir "$work/tree"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
    git -C "$src" ls-files -z --cached --others --exclude-standard |
        (cd "$src" && xargs -0 cp --parents -t "$work/tree" 2>/dev/null || true)
else
    (cd "$src" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$work/tree"
fi

# Fenced blocks with an action in their info string:
#   file=PATH               write the block to PATH (in the copy; a bare name: beside it)
#   append=PATH             append the block to PATH
#   enum=NAME file=PATH     add the block as the last member of enum NAME in PATH
#   quote=PATH              the block's lines must stand, in a row, in the tree's PATH
/usr/bin/python3 - "$src/docs/HACKING.md" "$src" "$work/tree" "$work" <<'PY'
import os, re, sys
doc, src, tree, work = sys.argv[1:]
text = open(doc).read()
blocks = re.findall(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", text, flags=re.S | re.M)
done = 0
for lang, info, body in blocks:
    attrs = dict(re.findall(r"(\w+)=(\S+)", info))
    if not attrs:
        continue
    done += 1
    if "quote" in attrs:
        have = open(os.path.join(src, attrs["quote"])).read()
        if body not in have:
            sys.exit(f"docs/HACKING.md quotes {attrs['quote']}, which no longer holds:\n{body}")
    elif "enum" in attrs:
        path = os.path.join(tree, attrs["file"])
        s = open(path).read()
        m = re.search(r"typedef enum " + attrs["enum"] + r" \{(.*?)\n\} " + attrs["enum"] + ";", s, re.S)
        if not m:
            sys.exit(f"no enum {attrs['enum']} in {attrs['file']}")
        members = m.group(1)
        last = [l for l in members.split("\n") if re.match(r"\s+GW_\w+\s*=", l)][-1]
        code, sep, comment = last.partition("/*")
        fixed = last if "," in code else code.rstrip() + ", " + sep + comment  # no longer last
        members = members.replace(last, fixed + "\n" + body.rstrip("\n"))
        open(path, "w").write(s[:m.start(1)] + members + s[m.end(1):])
    elif "append" in attrs:
        with open(os.path.join(tree, attrs["append"]), "a") as f:
            f.write(body)
    elif "file" in attrs:
        path = os.path.join(tree if "/" in attrs["file"] else work, attrs["file"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(body)
if done == 0:
    sys.exit("no worked example found in docs/HACKING.md")
print(f"{done} blocks of docs/HACKING.md applied or checked")
PY

echo "building the library with the example codec (a few minutes on 2 cores)"
meson setup "$work/build" "$work/tree" -Dtests=false -Dexamples=false -Dbench=false \
    -Dpython=disabled -Djava=disabled -Dwerror=true >"$work/setup.log" 2>&1 ||
    { cat "$work/setup.log"; exit 1; }
ninja -C "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
cc -std=c99 -pedantic-errors -Wall -Wextra -Werror -I"$work/tree/include" "$work/int8_demo.c" \
    -o "$work/int8_demo" -L"$work/build" -lgradwire -lm -Wl,-rpath,"$work/build"
# meson test points LD_LIBRARY_PATH at the project's own build, which would
# win over the rpath: the demo must load the library built with the codec.
out=$(env -u LD_LIBRARY_PATH "$work/int8_demo") || { echo "the example program failed: $out"; exit 1; }
echo "$out"
# The page says what the program prints; hold it to that.
expect=$(tr '\n' ' ' <"$src/docs/HACKING.md" | grep -oE 'prints `int8:[^`]*`' | sed -E 's/^prints `//; s/`$//')
[ "$out" = "$expect" ] || { echo "docs/HACKING.md says it prints: $expect"; exit 1; }
