#!/usr/bin/env bash
# Cross-build the test suites for another CPU and run them under user-mode
# QEMU (no binfmt_misc needed: qemu-<arch>-static is called explicitly).
#   usage: tests/cross_test.sh aarch64|s390x [RESULTS_DIR]
#   aarch64: little-endian, kernel targets scalar + NEON (every target is
#            compared with the scalar reference bit for bit);
#   s390x:   big-endian, scalar target only: the golden frames and checkpoint
#            vectors must decode to the same values and encode to the same
#            bytes as on x86.
# Installs what is missing (the cross g++ and qemu-user-static; quiet when
# present), configures its own build directory (build-aarch64, build-s390x)
# from cross/<arch>-linux-gnu.ini, builds only the test executables it runs,
# and runs them, each writing gtest's JUnit XML to
# RESULTS_DIR/cross-<arch>-<suite>.junit.xml (default: build-<arch>/cross-results),
# which scripts/test.sh's tally counts like every other *.junit.xml. A suite
# that dies before writing its XML leaves cross-<arch>-<suite>.result ("fail").
# Ends with "N passed, N failed" over its own cases; exits 1 on any failure.
#
# Suites: kernels (every compiled target against the scalar references, bit
# for bit), vectors and state_vectors (golden frames and checkpoints: decode,
# re-encode and re-save byte for byte), codecs, feedback, frame, state (the
# golden checkpoints' held values), rng, and the state machines whose blobs
# carry vectors (lags, cltk, fusion, many, asylpg, reshard), and the per-handle
# backends (context: handles of every target side by side), all in full.
# Under emulation GoogleTest death tests are filtered out (*DeathTest*): their
# "threadsafe" style re-executes the test binary, which the host kernel cannot
# load without binfmt_misc (they run in every native build). Their GW_SIMD
# cases are covered instead by KernelDispatch.EnvironmentAtFirstUse, run once
# per GW_SIMD value in a process of its own (the env-* results).
# GW_CROSS_JOBS (default 2) sets the build's parallelism and how many emulated
# suites run at once, GW_CROSS_BUILD_DIR another build directory.
set -euo pipefail

arch=${1:-}
case "$arch" in
    aarch64) triple=aarch64-linux-gnu; qemu=qemu-aarch64-static ;;
    s390x) triple=s390x-linux-gnu; qemu=qemu-s390x-static ;;
    *) echo "usage: $0 aarch64|s390x [RESULTS_DIR]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GW_CROSS_BUILD_DIR:-build-$arch}  # relative to the source root
results=${2:-$root/$build/cross-results}  # a relative RESULTS_DIR is the caller's
mkdir -p "$results"
results=$(cd "$results" && pwd)
cd "$root"
jobs=${GW_CROSS_JOBS:-2}

# --- what is missing -------------------------------------------------------
need=()
command -v "$triple-g++" >/dev/null 2>&1 || need+=("g++-$triple")
command -v "$qemu" >/dev/null 2>&1 || need+=(qemu-user-static)
[ -d /usr/src/googletest/googletest/src ] || need+=(googletest)
[ -d /usr/include/xsimd ] || need+=(libxsimd-dev)
command -v meson >/dev/null 2>&1 || need+=(meson)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if [ ${#need[@]} -gt 0 ]; then
    echo "== installing ${need[*]}"
    sudo_=""
    [ "$(id -u)" -eq 0 ] || sudo_=sudo
    $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${need[@]}" >/dev/null || {
        $sudo_ apt-get update -q >/dev/null
        $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${need[@]}" >/dev/null
    }
fi

# --- configure and build ---------------------------------------------------
suites=(kernels vectors state_vectors codecs feedback frame state rng lags cltk fusion many asylpg
    reshard context)
if [ ! -f "$build/build.ninja" ]; then
    echo "== configuring $build (cross/$triple.ini)"
    meson setup "$build" --cross-file "cross/$triple.ini" \
        -Dpkg_config_path="$root/cross/pkgconfig" \
        -Dexamples=false -Dbench=false -Dpython=disabled -Djava=disabled \
        >"$results/cross-$arch-setup.log" 2>&1 || {
        cat "$results/cross-$arch-setup.log"
        exit 1
    }
fi
targets=()
for s in "${suites[@]}"; do targets+=("tests/test_$s"); done
echo "== building ${targets[*]} for $arch (-j$jobs)"
start=$(date +%s)
if ! nice -n 5 ninja -C "$build" -j"$jobs" "${targets[@]}" >"$results/cross-$arch-build.log" 2>&1; then
    tail -40 "$results/cross-$arch-build.log"
    echo "fail" >"$results/cross-$arch-build.result"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "   built in $(($(date +%s) - start)) s"

# --- run under qemu --------------------------------------------------------
# One emulated process uses one core: the suites run $jobs at a time, the
# longest first, each line printed as its run ends. The kernel suite (most of
# the time) runs in $shards parts, its tests dealt out by name with every
# target of a test in the same part (GoogleTest's own sharding deals out
# test-target pairs, which leaves a part only targets this CPU skips).
sysroot=/usr/$triple
# Death tests cannot re-execute themselves under user-mode emulation.
base_filter='-*DeathTest*'
shards=3
mapfile -t kernel_tests < <("$qemu" -L "$sysroot" "$build/tests/test_kernels" --gtest_list_tests \
    --gtest_filter="$base_filter" | awk '/^[^ ]/ {suite = $1} /^  / {sub("/.*", "", $1); print suite $1}' |
    awk '!seen[$0]++')
[ ${#kernel_tests[@]} -gt 0 ] || shards=1  # not listed: one part, the whole suite
part_filter=()
for ((i = 0; i < ${#kernel_tests[@]}; i++)); do
    part_filter[i % shards]+="${kernel_tests[i]}:${kernel_tests[i]}/*:"
done
runs=()
for ((i = 0; i < shards; i++)); do runs+=("kernels:$i"); done
for s in many codecs feedback reshard "${suites[@]}"; do
    case " ${runs[*]} " in *" $s:- "*) continue ;; esac
    [ "$s" = kernels ] || runs+=("$s:-")
done
run_one() {  # SUITE PART ("-": the whole suite)
    local s=$1 part=$2 name=$1 filter=$base_filter rc t0 secs tally
    if [ "$part" != - ]; then
        name=$s-$part
        filter=${part_filter[part]}$base_filter
    fi
    local xml=$results/cross-$arch-$name.junit.xml log=$results/cross-$arch-$name.log
    rm -f "$xml" "$results/cross-$arch-$name.result"
    t0=$(date +%s)
    # Tests find the golden vectors through GW_SOURCE_DIR (compiled in).
    "$qemu" -L "$sysroot" "$build/tests/test_$s" --gtest_filter="$filter" \
        --gtest_output="xml:$xml" >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    tally=$(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$log" | tr -s ' ' | paste -sd' ' || true)
    {
        printf '   %-14s rc=%d  %4ds  %s\n' "$name" "$rc" "$secs" "$tally"
        [ "$name" != kernels-0 ] || grep -E '^\[ kernels  \]' "$log" | sed 's/^/                  /' || true
        if [ $rc -ne 0 ]; then
            grep -E '^\[  FAILED  \]|Failure|error' "$log" | head -20 | sed 's/^/      /'
            if [ ! -s "$xml" ]; then
                echo "fail" >"$results/cross-$arch-$name.result"
                tail -20 "$log"
            fi
        fi
    } >"$log.summary"
    cat "$log.summary"
    return $rc
}
fail=0
running=0
set +e
for r in "${runs[@]}"; do
    if [ $running -ge "$jobs" ]; then
        wait -n || fail=1
        running=$((running - 1))
    fi
    run_one "${r%%:*}" "${r#*:}" &
    running=$((running + 1))
done
while [ $running -gt 0 ]; do
    wait -n || fail=1
    running=$((running - 1))
done
set -e

# GW_SIMD at first use: value -> the target that must result (an unknown or
# unsupported name means the best one).
if [ "$arch" = aarch64 ]; then
    env_cases=("=neon" "scalar=scalar" "neon=neon" "NEON=neon" "avx2=neon" "bogus=neon")
else
    env_cases=("=scalar" "scalar=scalar" "neon=scalar" "sse2=scalar")
fi
i=0
for c in "${env_cases[@]}"; do
    value=${c%%=*} want=${c#*=}
    xml=$results/cross-$arch-env-$i.junit.xml
    rm -f "$xml"
    if [ -n "$value" ]; then set_env=(env GW_SIMD="$value"); else set_env=(env -u GW_SIMD); fi
    if ! "${set_env[@]}" GW_SIMD_EXPECT="$want" "$qemu" -L "$sysroot" "$build/tests/test_kernels" \
            --gtest_filter=KernelDispatch.EnvironmentAtFirstUse --gtest_output="xml:$xml" \
            >"$results/cross-$arch-env-$i.log" 2>&1; then
        fail=1
        echo "   GW_SIMD=${value:-(unset)} did not select $want:"
        grep -E 'Failure|Expected|Which is' "$results/cross-$arch-env-$i.log" | sed 's/^/      /'
    fi
    i=$((i + 1))
done
echo "   GW_SIMD at first use: ${#env_cases[@]} cases (${env_cases[*]})"

/usr/bin/env python3 - "$results" "$arch" <<'PY'
import glob, os, sys, xml.etree.ElementTree as ET
d, arch = sys.argv[1], sys.argv[2]
passed = failed = skipped = 0
for f in glob.glob(os.path.join(d, f"cross-{arch}-*.junit.xml")):
    for case in ET.parse(f).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            print("FAILED:", os.path.basename(f), case.get("classname"), case.get("name"))
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
        else:
            passed += 1
for f in glob.glob(os.path.join(d, f"cross-{arch}-*.result")):
    ok = open(f).read().strip() == "pass"
    passed += ok
    failed += not ok
print(f"{arch} under qemu: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $fail
