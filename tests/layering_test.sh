#!/usr/bin/env bash
# The core (src/) shares only the public vocabulary with the ABI: it may
# include gradwire_types.h, never gradwire.h (whose option structs belong to
# the c_api layer, which translates them into the core's own configs).
set -euo pipefail
src=$1
bad=$(grep -rlE '#include[[:space:]]*[<"]gradwire\.h[">]' "$src/src" || true)
if [ -n "$bad" ]; then
    echo "core files including the public header:"; echo "$bad"; exit 1
fi
echo "src/: $(grep -rl 'gradwire_types.h' "$src/src" | wc -l) files use gradwire_types.h, none gradwire.h"
