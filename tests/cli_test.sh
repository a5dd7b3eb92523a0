#!/usr/bin/env bash
# The gradwire command line (tools/cli, docs/cli.md): inspect on the golden
# frames of tests/vectors (codec, element count, tag, checksums and nonzero
# count checked against each vector's own comments and decoded values), on
# every single-byte corruption and every truncation of two of them, on empty
# and garbage input (never a crash, never a read past the input: the ASan
# build runs this too); codecs against the header's codec list; demo and bench
# on small sizes; the commands docs/cli.md shows, as written; and, when the
# build has the Python extension, `python -m gradwire` printing the same bytes.
#
# usage: cli_test.sh GRADWIRE SOURCE_ROOT [PYTHON PYTHONPATH]
set -euo pipefail
gw=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") src=$2 py=${3:-} pypath=${4:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
checks=0
fail() { echo "FAIL: $*"; exit 1; }
ok() { checks=$((checks + 1)); }

# The bytes a hex file (tests/vectors format) spells.
unhex() {
    local h
    h=$(grep -v '^#' "$1" | tr -dc '0-9a-fA-F')
    printf '%b' "$(printf '%s' "$h" | sed 's/../\\x&/g')"
}
# Run the program; sets rc, and the output files $dir/out and $dir/err.
run() {
    rc=0
    "$gw" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
}
has() { grep -qF -- "$1" "$dir/out" || fail "$2: no '$1' in:"$'\n'"$(cat "$dir/out" "$dir/err")"; }
# A bad frame: exit status 1, the verdict on stdout, nothing on stderr (where
# a sanitizer would report).
expect_bad() {
    run inspect "$1"
    [ "$rc" = 1 ] || fail "$2: exit status $rc, expected 1: $(cat "$dir/out" "$dir/err")"
    grep -q '^  status        BAD GW_ERR_' "$dir/out" || fail "$2: no BAD status: $(cat "$dir/out")"
    [ ! -s "$dir/err" ] || fail "$2: stderr: $(cat "$dir/err")"
    if [ -n "${3:-}" ]; then has "$3" "$2"; fi
}

# ---- version and help
run --version
[ "$rc" = 0 ] && grep -qE '^gradwire [0-9]+\.[0-9]+\.[0-9]+ \(wire format [0-9]+\)$' "$dir/out" ||
    fail "--version: $(cat "$dir/out")"
ok
run --help
for c in inspect codecs bench demo; do has "  $c " "--help"; done
for c in inspect codecs bench demo; do
    run "$c" --help
    [ "$rc" = 0 ] || fail "$c --help: exit status $rc"
    has "usage: gradwire $c" "$c --help"
    ok
done
run nosuchcommand
[ "$rc" = 2 ] || fail "an unknown command: exit status $rc"
run inspect "$dir/does-not-exist"
[ "$rc" = 2 ] || fail "a missing file: exit status $rc"
ok

# ---- golden frames: every field against the vector's comment and its decoded values
n_vectors=0
for hex in "$src"/tests/vectors/*.frame.hex; do
    name=$(basename "$hex" .frame.hex)
    bin=$dir/$name.frame
    unhex "$hex" >"$bin"
    comment=$(sed -n 2p "$hex") # "# codec topk (6), k 4, ..., 20 elements, tag 0x..." or "# codec 5, ..."
    id=$(sed -E 's/^# codec ([a-z0-9_]+ \()?([0-9]+).*/\2/' <<<"$comment")
    count=$(sed -E 's/.* ([0-9]+) elements.*/\1/' <<<"$comment")
    run inspect "$bin"
    [ "$rc" = 0 ] || fail "$name: exit status $rc: $(cat "$dir/out" "$dir/err")"
    [ ! -s "$dir/err" ] || fail "$name: stderr: $(cat "$dir/err")"
    has "  codec         " "$name"
    grep -qE "^  codec         [a-z0-9_]+ \($id\)\$" "$dir/out" || fail "$name: codec is not $id"
    if [[ $comment =~ codec\ ([a-z0-9_]+)\ \( ]]; then has "  codec         ${BASH_REMATCH[1]} ($id)" "$name"; fi
    grep -qx "  elements      $count" "$dir/out" || fail "$name: elements is not $count"
    has "  status        ok" "$name"
    has "  frame crc     ok (0x" "$name"
    if [[ $comment =~ tag\ (0x[0-9a-f]+) ]]; then
        has "  tag           ${BASH_REMATCH[1]} (tensor $((BASH_REMATCH[1] >> 32 & 0xffffffff)), round $((BASH_REMATCH[1] & 0xffffffff)))" "$name"
        has "  header crc    ok (0x" "$name"
    else
        has "  header crc    none (format 1)" "$name"
    fi
    # Nonzero count from the decoded vector: 4-byte words other than +0 and -0.
    nonzero=$(grep -v '^#' "$src/tests/vectors/$name.decoded.hex" | tr -dc '0-9a-fA-F' |
        fold -w8 | grep -cvE '^(00000000|00000080)$' || true)
    has "  nonzero       $nonzero of $count" "$name"
    size=$(wc -c <"$bin")
    has "frame size    $size bytes ($((4 * count)) as f32), ratio " "$name"
    # The hex file itself: the same report.
    cp "$dir/out" "$dir/out.bin"
    run inspect "$hex"
    [ "$rc" = 0 ] || fail "$name (hex): exit status $rc"
    head -n1 "$dir/out" | grep -q "(hex)$" || fail "$name: the hex file is not read as hex"
    diff <(tail -n +2 "$dir/out.bin") <(tail -n +2 "$dir/out") >/dev/null ||
        fail "$name: the hex file and its bytes give different reports"
    n_vectors=$((n_vectors + 1))
    ok
done
[ "$n_vectors" -ge 10 ] || fail "only $n_vectors golden frames found in $src/tests/vectors"

# Statistics of a frame known by heart: 13 signs decode to +-1 (10 of them +1).
run inspect "$dir/v2_sign_13.frame"
for line in "  min           -1" "  max           1" "  mean          0.538462" \
            "  l2 norm       3.60555" "  nonzero       13 of 13" "  params        (none)"; do
    grep -qx -- "$line" "$dir/out" || fail "v2_sign_13: no line '$line'"
done
ok
# Parameters as the frame spells them (tests/vectors/v2_threshold_f16_20: threshold 2.0, f16).
run inspect "$dir/v2_threshold_f16_20.frame"
has "  params        threshold=2 value_dtype=2 zstd=0" "v2_threshold_f16_20"
ok

# Two frames back to back, from stdin.
cat "$dir/v2_topk_k4_20.frame" "$dir/scaled_sign_b4_10.frame" >"$dir/stream"
rc=0
"$gw" inspect - <"$dir/stream" >"$dir/out" 2>"$dir/err" || rc=$?
[ "$rc" = 0 ] || fail "a stream on stdin: exit status $rc"
has "== <stdin>: $(wc -c <"$dir/stream") bytes (binary)" "stream"
has "frame 2 at offset $(wc -c <"$dir/v2_topk_k4_20.frame")" "stream"
[ "$(grep -c '^  status        ok$' "$dir/out")" = 2 ] || fail "stream: not two valid frames"
ok

# A frame larger than --max-elements is checked, not decoded.
run inspect --max-elements 5 "$dir/v2_topk_k4_20.frame"
[ "$rc" = 0 ] || fail "--max-elements: exit status $rc"
has "  stats         skipped: 20 elements, more than --max-elements 5" "--max-elements"
ok

# ---- corrupted frames: every byte of a format 2 and a format 1 frame, flipped
flip() { # flip FILE OFFSET OUT: OUT is FILE with byte OFFSET inverted
    local b
    b=$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')
    cp "$1" "$3"
    printf '%b' "\\x$(printf %02x $((b ^ 255)))" | dd of="$3" bs=1 seek="$2" conv=notrunc status=none
}
for name in v2_topk_k4_20 scaled_sign_b4_10; do
    size=$(wc -c <"$dir/$name.frame")
    for ((i = 0; i < size; i++)); do
        flip "$dir/$name.frame" "$i" "$dir/bad"
        expect_bad "$dir/bad" "$name with byte $i flipped"
    done
    ok
done
# A flipped payload byte: the frame checksum names it; a flipped tag byte: the header checksum.
flip "$dir/v2_topk_k4_20.frame" 60 "$dir/bad"
expect_bad "$dir/bad" "payload byte" "  status        BAD GW_ERR_FRAME_CHECKSUM: "
has "  frame crc     MISMATCH (stored 0x" "payload byte"
flip "$dir/v2_topk_k4_20.frame" 10 "$dir/bad"
expect_bad "$dir/bad" "tag byte" "  status        BAD GW_ERR_FRAME_CHECKSUM: "
has "  header crc    MISMATCH (stored 0x" "tag byte"
ok

# ---- every truncation is reported as truncated (docs/wire-format.md)
for name in v2_topk_k4_20 v2_identity_8; do
    size=$(wc -c <"$dir/$name.frame")
    for ((i = 0; i < size; i++)); do
        head -c "$i" "$dir/$name.frame" >"$dir/cut"
        expect_bad "$dir/cut" "$name cut to $i bytes" "BAD GW_ERR_FRAME_TRUNCATED: "
    done
    ok
done
: >"$dir/empty"
expect_bad "$dir/empty" "an empty file" "  magic         (no bytes)"
ok

# ---- garbage: fixed pseudo-random bytes, alone and behind a frame header's start
garbage() { # garbage SEED BYTES: hex digits of a deterministic byte sequence
    awk -v seed="$1" -v n="$2" 'BEGIN { x = seed; for (i = 0; i < n; i++) {
        x = (x * 1103515245 + 12345) % 2147483648; printf "%02x", int(x / 65536) % 256 } }'
}
for seed in 1 2 3 4 5 6 7 8; do
    for prefix in "" "47574652" "4757465202" "4757465201" "4757465202060000"; do
        printf '%b' "$(printf '%s%s' "$prefix" "$(garbage "$seed" $((seed * 37)))" | sed 's/../\\x&/g')" \
            >"$dir/garbage"
        expect_bad "$dir/garbage" "garbage (seed $seed, prefix '$prefix')"
    done
done
# Text that is not hex (an odd digit count) is read as binary.
printf '# comment\nabc\n' >"$dir/odd.hex"
expect_bad "$dir/odd.hex" "odd hex" "BAD GW_ERR_FRAME_MAGIC: "
ok

# ---- codecs: every codec the header declares, with known ranges and defaults
run codecs
[ "$rc" = 0 ] || fail "codecs: exit status $rc"
ncodecs=0
while read -r sym id; do
    has "$(tr 'A-Z' 'a-z' <<<"${sym#GW_CODEC_}") ($id)" "codecs"
    ncodecs=$((ncodecs + 1))
done < <(sed -nE 's/^ *(GW_CODEC_[A-Z0-9_]+) *= *([0-9]+),?.*/\1 \2/p' "$src/include/gradwire_types.h" |
         grep -v '^GW_CODEC_FLAG_')
[ "$ncodecs" -ge 15 ] || fail "only $ncodecs codecs read from gradwire_types.h"
has "$ncodecs codecs;" "codecs"
awk '/^topk \(/ { t = 1; next } /^[a-z]/ { t = 0 } t' "$dir/out" >"$dir/topk"
grep -qx '  density_ppm  0..1000000  default 10000' "$dir/topk" || fail "codecs: topk's density_ppm"
grep -qx '  k            0..4294967295  default 0' "$dir/topk" || fail "codecs: topk's k"
has "  threshold    0..3.40282347e+38  default 0.00100000005 (float)" "codecs"
has "  bits         1..16  default 4" "codecs"
ok

# ---- demo: bytes per frame and convergence
run demo --n 2000 --steps 20
[ "$rc" = 0 ] || fail "demo: exit status $rc: $(cat "$dir/err")"
# identity frames are 44 bytes of header and checksums plus the floats; without
# compression each step shrinks x - t by 1 - lr exactly: 0.9^20 = 0.1216.
grep -qE '^identity +8044 +8044 +1\.0x( +[0-9.]+){4} +0\.1216$' "$dir/out" ||
    fail "demo: identity row: $(cat "$dir/out")"
for row in fp16 "scaled_sign block_size=100" "topk density_ppm=50000"; do
    line=$(grep "^$row " "$dir/out") || fail "demo: no row $row"
    last=$(awk '{ print $NF }' <<<"$line")
    awk -v v="$last" 'BEGIN { exit !(v < 0.5) }' || fail "demo: $row did not converge: $line"
done
ok

# ---- bench: a quick check with progress on stderr
run bench --quick --sizes 4096 --codecs identity,topk
[ "$rc" = 0 ] || fail "bench: exit status $rc: $(cat "$dir/err")"
has "a quick check, not the benchmark suite (run bash scripts/bench.sh" "bench"
grep -qE '^identity +4096 +16428( +[0-9.]+){6}$' "$dir/out" || fail "bench: identity row: $(cat "$dir/out")"
grep -qE '^topk +4096 +[0-9]+( +[0-9.]+){6}$' "$dir/out" || fail "bench: topk row"
grep -qF 'bench [1/2] identity n=4096: encode' "$dir/err" || fail "bench: no progress on stderr"
grep -qF 'bench [2/2] topk n=4096: decode_accumulate' "$dir/err" || fail "bench: no progress on stderr"
run bench --sizes 0
[ "$rc" = 2 ] || fail "bench --sizes 0: exit status $rc"
run bench --codecs identity,nosuchcodec
[ "$rc" = 2 ] && [ ! -s "$dir/out" ] || fail "bench with an unknown codec: exit status $rc"
run inspect --max-elements
[ "$rc" = 2 ] || fail "inspect --max-elements without a value: exit status $rc"
ok

# ---- docs/cli.md: its commands, word for word (tests/doc_commands.txt points
# here), are exactly those of its sh blocks; each runs from the source root.
doc=$src/docs/cli.md
doc_commands=(
    "gradwire --version"
    "gradwire codecs"
    "gradwire inspect tests/vectors/v2_topk_k4_20.frame.hex"
    "gradwire demo --n 2000 --steps 20"
    "gradwire bench --quick --sizes 64K"
    "python -m gradwire inspect tests/vectors/v2_topk_k4_20.frame.hex tests/vectors/scaled_sign_10.frame.hex"
)
diff <(printf '%s\n' "${doc_commands[@]}") \
     <(awk '/^```sh[[:space:]]*$/ { b = 1; next } /^```/ { b = 0 } b && NF' "$doc") ||
    fail "docs/cli.md: its sh blocks are not the commands this test runs (above)"
for cmd in "${doc_commands[@]}"; do
    read -ra words <<<"$cmd"
    case "${words[0]}" in
        gradwire) (cd "$src" && "$gw" "${words[@]:1}") >"$dir/out" 2>"$dir/err" ||
                      fail "docs/cli.md: '$cmd' failed: $(cat "$dir/err")" ;;
        python) [ -n "$py" ] || continue
                (cd "$src" && PYTHONPATH=$pypath "$py" "${words[@]:1}") >"$dir/out" 2>"$dir/err" ||
                    fail "docs/cli.md: '$cmd' failed: $(cat "$dir/err")" ;;
    esac
    ok
done
# Its sample output is what the first inspect command prints.
awk '/^```text[[:space:]]*$/ { n++; b = (n == 1); next } /^```/ { b = 0 } b' "$doc" >"$dir/doc_out"
read -ra words <<<"${doc_commands[2]}"
(cd "$src" && "$gw" "${words[@]:1}") >"$dir/out"
diff "$dir/doc_out" "$dir/out" || fail "docs/cli.md: its sample output is not what '${doc_commands[2]}' prints"
ok

# ---- the Python command: the same bytes for the same input
if [ -n "$py" ]; then
    pyrun() {
        prc=0
        PYTHONPATH=$pypath "$py" -m gradwire "$@" >"$dir/pout" 2>"$dir/perr" || prc=$?
    }
    same() {
        run "$@"
        pyrun "$@"
        [ "$rc" = "$prc" ] || fail "python -m gradwire $*: exit status $prc, the C program's $rc: $(cat "$dir/perr")"
        diff "$dir/out" "$dir/pout" >"$dir/diff" || fail "python -m gradwire $* differs:"$'\n'"$(head -20 "$dir/diff")"
        ok
    }
    # Every golden frame and hex file, a stream, corrupted, cut and garbage inputs.
    flip "$dir/v2_topk_k4_20.frame" 60 "$dir/bad_payload"
    flip "$dir/v2_topk_k4_20.frame" 10 "$dir/bad_tag"
    head -c 50 "$dir/v2_topk_k4_20.frame" >"$dir/cut50"
    same inspect "$dir"/*.frame
    same inspect "$src"/tests/vectors/v2_*.frame.hex
    same inspect "$dir/stream"
    same inspect --max-elements 5 "$dir/v2_topk_k4_20.frame"
    for f in bad_payload bad_tag cut50 empty garbage odd.hex; do same inspect "$dir/$f"; done
    rc=0
    PYTHONPATH=$pypath "$py" -m gradwire inspect - <"$dir/stream" >"$dir/pout" 2>&1 || rc=$?
    "$gw" inspect - <"$dir/stream" >"$dir/out"
    diff "$dir/out" "$dir/pout" >/dev/null || fail "python -m gradwire inspect - differs"
    same codecs
    # The console script pip installs (pyproject.toml's [project.scripts] entry,
    # called as pip's wrapper calls it) prints what the C program prints.
    entry=$(sed -nE 's/^gradwire = "([a-z_.]+:[a-z_]+)"$/\1/p' "$src/pyproject.toml")
    [ -n "$entry" ] || fail "pyproject.toml: no gradwire console script"
    for args in "--version" "inspect $src/tests/vectors/v2_sign_13.frame.hex"; do
        read -ra words <<<"$args"
        PYTHONPATH=$pypath "$py" -c 'import importlib, sys
mod, fn = sys.argv[1].split(":")
sys.argv = ["gradwire"] + sys.argv[2:]
sys.exit(getattr(importlib.import_module(mod), fn)())' "$entry" "${words[@]}" >"$dir/pout"
        run "${words[@]}"
        diff "$dir/out" "$dir/pout" >/dev/null || fail "the console script $entry: gradwire $args differs"
    done
    ok
    same demo --n 2000 --steps 20
    same --version
    same --help
    for c in inspect codecs bench demo; do same "$c" --help; done
    # bench: the same header and rows (timings aside), progress on stderr.
    pyrun bench --quick --sizes 4096 --codecs identity,topk
    [ "$prc" = 0 ] || fail "python bench: $(cat "$dir/perr")"
    run bench --quick --sizes 4096 --codecs identity,topk
    # (the same header, codecs and sizes: the timings and the data differ)
    diff <(head -n4 "$dir/out"; awk 'NR > 4 { print $1, $2 }' "$dir/out") \
         <(head -n4 "$dir/pout"; awk 'NR > 4 { print $1, $2 }' "$dir/pout") >/dev/null ||
        fail "python bench: other header or rows: $(cat "$dir/pout")"
    grep -qF 'bench [2/2] topk n=4096: decode_accumulate' "$dir/perr" || fail "python bench: no progress"
    ok
    python_note="and python -m gradwire gives the same output"
else
    python_note="(no Python extension in this build: the Python command is not compared)"
fi
echo "cli: $checks checks passed over $n_vectors golden frames $python_note"
