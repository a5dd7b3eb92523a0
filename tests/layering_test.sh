#!/usr/bin/env bash
# Every layer includes only the layers below it (docs/DESIGN: bindings ->
# the public headers -> c_api -> src/feedback -> src/frame -> src/codecs ->
# src/kernels -> src/util). gradwire_types.h, the public vocabulary (status
# codes, ids), may be included anywhere; gradwire.h, whose option structs
# c_api translates into the core's own configs, never from src/. Each
# #include "x" (and SWIG's %include) is resolved as the compiler would: beside
# the including file, then include/, then src/.
#   usage: layering_test.sh SOURCE_ROOT
set -euo pipefail
root=$(cd "$1" && pwd)

# The layer a file belongs to.
layer_of() {
    case "$1" in
        include/gradwire_types.h) echo types ;;
        include/*) echo public ;;
        bindings/*) echo bindings ;;
        c_api/*) echo c_api ;;
        src/feedback/*) echo feedback ;;
        src/frame/*) echo frame ;;
        src/codecs/*) echo codecs ;;
        src/kernels/*) echo kernels ;;
        src/util/*) echo util ;;
        *) echo "unknown($1)" ;;
    esac
}

# What each layer may include besides itself.
allowed() {
    case "$1" in
        public) echo "types" ;;
        bindings) echo "public types" ;;
        c_api) echo "public types feedback frame codecs kernels util" ;;
        feedback) echo "types frame codecs kernels util" ;;
        frame) echo "types codecs kernels util" ;;
        codecs) echo "types kernels util" ;;
        kernels) echo "types util" ;;
        util) echo "types" ;;
        *) echo "" ;;
    esac
}

bad=0 checked=0
while IFS= read -r file; do
    rel=${file#"$root"/}
    from=$(layer_of "$rel")
    dir=$(dirname "$rel")
    while IFS= read -r inc; do
        [ -n "$inc" ] || continue
        if [ -f "$root/$dir/$inc" ]; then target=$(realpath --relative-to="$root" "$root/$dir/$inc")
        elif [ -f "$root/include/$inc" ]; then target=include/$inc
        elif [ -f "$root/src/$inc" ]; then target=src/$inc
        elif [ -f "$root/c_api/$inc" ]; then target=c_api/$inc
        elif [ -f "$root/bindings/$inc" ]; then target=bindings/$inc
        else
            case "$inc" in */*) ;; *) continue ;; esac  # a system or generated header
            echo "$rel: #include \"$inc\" names no file of the tree"; bad=1; continue
        fi
        to=$(layer_of "$target")
        checked=$((checked + 1))
        [ "$to" = "$from" ] && continue
        case " $(allowed "$from") " in
            *" $to "*) ;;
            *) echo "$rel ($from) includes $target ($to)"; bad=1 ;;
        esac
    done < <(sed -nE 's/^[[:space:]]*[#%][[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p; s/^[[:space:]]*#[[:space:]]*include[[:space:]]*<(gradwire[a-z_]*\.h)>.*/\1/p' "$file")
done < <(find "$root/bindings" -maxdepth 1 -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.i' \) ;
         find "$root/c_api" "$root/src" "$root/include" -type f \
             \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.def' \))

if [ "$bad" != 0 ]; then
    echo "layering: an include goes up or sideways (see above)"; exit 1
fi
echo "layering: $checked includes in bindings/, c_api/, src/ and include/ go only downwards"
