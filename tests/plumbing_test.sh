#!/usr/bin/env bash
# The state machines' shared calls come from one list, c_api/handles.def.
# The layers that cannot read it (bindings/ sees only include/) repeat each
# line's columns once: gwb.hpp's GWB_HANDLE / GWB_TENSOR_HANDLE, gradwire.i's
# GWB_HANDLE_CLASS, gradwire/__init__.py's class. This checks they agree with
# the list, and that every call gradwire.h declares is exported.
#   usage: plumbing_test.sh SOURCE_ROOT SHARED_LIBRARY
set -euo pipefail
root=$1 lib=$2
bad=0
say() { echo "$*"; bad=1; }

exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
declared=$(grep -oE '\bgw_[a-z0-9_]+\(' "$root/include/gradwire.h" | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
[ -z "$missing" ] || say "declared in gradwire.h, not exported:" $missing

n=0
while read -r name _NAME _impl bound steps state; do
    n=$((n + 1))
    line=$(grep -E "GWB_(TENSOR_)?HANDLE\([A-Za-z]+, $name, " "$root/bindings/gwb.hpp" || true)
    [ -n "$line" ] || { say "gwb.hpp: no GWB_HANDLE for $name"; continue; }
    class=$(echo "$line" | sed -E 's/.*HANDLE\(([A-Za-z]+), .*/\1/')
    cols=$(echo "$line" | sed -E 's/.*HANDLE\([A-Za-z]+, [a-z_]+, (.*)\).*/\1/' | tr -d ' ')
    [ "$cols" = "$bound,$steps,$state" ] ||
        say "gwb.hpp: $class has ($cols), handles.def has ($bound,$steps,$state)"
    grep -q "^GWB_HANDLE_CLASS($class)" "$root/bindings/gradwire.i" ||
        say "gradwire.i: no GWB_HANDLE_CLASS($class)"
    base=_Handle
    [ "$state" = checkpoint ] || base=_Owner
    grep -qE "^class $class\($base, _n\.$class\)" "$root/bindings/python/gradwire/__init__.py" ||
        say "gradwire/__init__.py: no class $class($base, _n.$class)"
    for call in options_init create free; do
        grep -q "\bgw_${name}_${call}(" "$root/include/gradwire.h" ||
            say "gradwire.h: no gw_${name}_${call}"
    done
done < <(sed -nE 's/^GW_HANDLE\(([^)]*)\).*/\1/p' "$root/c_api/handles.def" | tr -d ' ' | tr ',' ' ')

# No handle class outside the list.
for class in $(sed -nE 's/^GWB_HANDLE_CLASS\(([A-Za-z]+)\).*/\1/p' "$root/bindings/gradwire.i"); do
    grep -qE "HANDLE\($class, " "$root/bindings/gwb.hpp" || say "gradwire.i: $class is no gwb handle"
done
# One version everywhere it is written, and the changelog's newest entry for it.
ver=$(sed -nE "s/^  version: '([0-9.]+)',/\1/p" "$root/meson.build")
hdr=$(awk '/#define GW_VERSION_(MAJOR|MINOR|PATCH) /{printf "%s%s", sep, $3; sep="."}' "$root/include/gradwire.h")
py=$(sed -nE 's/^version = "([0-9.]+)"/\1/p' "$root/pyproject.toml")
mvn=$(sed -nE '0,/<version>/s|^  <version>([0-9.]+)</version>|\1|p' "$root/bindings/java/pom.xml")
log=$(sed -nE '0,/^## [0-9]/s/^## ([0-9.]+) .*/\1/p' "$root/CHANGELOG.md")
for v in "gradwire.h $hdr" "pyproject.toml $py" "bindings/java/pom.xml $mvn" "CHANGELOG.md $log"; do
    [ "${v#* }" = "$ver" ] || say "${v% *} says version ${v#* }, meson.build $ver"
done
[ "$bad" = 0 ] || exit 1
echo "version $ver in meson.build, gradwire.h, pyproject.toml, pom.xml and CHANGELOG.md"
echo "plumbing: $n state machines agree across handles.def, gwb.hpp, gradwire.i and the Python layer; $(echo "$declared" | wc -l) declared calls exported"
