#!/usr/bin/env bash
# Install what is missing, build, and run every test:
#   1. g++ build (the benchmarks too, compiled, not run): unit, ABI, install and
#      fuzz-replay suites, quick demo, MPI demo,
#      Python (pytest: binding, DDP hook on 2-4 processes, FSDP2; wheel + README
#      examples) and Java (Maven + JUnit 5) bindings
#   2. clang++ build with AddressSanitizer + UndefinedBehaviorSanitizer: the same suites
#   3. clang++ with ThreadSanitizer: the concurrent LAGS layer test
#   4. aarch64 (NEON) and s390x (big-endian) cross builds, their suites under qemu-user
#   5. libFuzzer: each fuzz target for FUZZ_SECONDS (default 60) from its corpus
# Ends with one line "N passed, N failed" (gtest cases counted one by one).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_packages "${BASE_PACKAGES[@]}" clang libfuzzer-14-dev libclang-rt-14-dev binutils python3 iproute2 python3-matplotlib \
    libbenchmark-dev \
    openmpi-bin libopenmpi-dev swig openjdk-17-jdk-headless maven
ensure_venv
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

run_suites() {  # DIR LABEL
    local dir=$1 label=$2
    echo "== $label"
    # -q prints failures only; the per-test tally below reads the JUnit log.
    meson test -C "$dir" -q --print-errorlogs --num-processes 2 >"$results/$label.log" 2>&1 ||
        cat "$results/$label.log"
    cp "$dir/meson-logs/testlog.junit.xml" "$results/$label.junit.xml"
    # pytest's and JUnit's cases are counted one by one from their own files.
    local f
    for f in "$dir"/meson-logs/pytest.junit.xml "$dir"/meson-logs/java-*.junit.xml; do
        if [ -f "$f" ]; then mv "$f" "$results/$label-$(basename "$f")"; fi
    done
    grep -E "^(Ok|Fail|Timeout):" "$dir/meson-logs/testlog.txt" | tr -s ' ' | paste -sd' ' | sed 's/^/   meson: /'
}

build build -Dwerror=true -Dpython=enabled -Dpython_exe="$GW_VENV/bin/python" -Djava=enabled
run_suites build gcc

# (The benchmarks are compiled once, by g++ above.)
CC=clang CXX=clang++ build build-clang -Dwerror=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dfuzz=enabled -Dbuildtype=debugoptimized -Dpython=disabled -Djava=disabled \
    -Dbench=false
run_suites build-clang clang-asan-ubsan

# ThreadSanitizer over the test of layer handles driven from several threads
# at once (LAGS layers finishing in backward order); only that target is built.
echo "== clang ThreadSanitizer: concurrent LAGS layers"
if [ ! -f build-tsan/build.ninja ]; then
    CC=clang CXX=clang++ meson setup build-tsan -Dwerror=true -Db_sanitize=thread -Db_lundef=false \
        -Dexamples=false -Dbench=false -Dbuildtype=debugoptimized >"$results/tsan_setup.log" 2>&1 ||
        cat "$results/tsan_setup.log"
fi
if ninja -C build-tsan tests/test_lags >"$results/tsan_build.log" 2>&1; then
    TSAN_OPTIONS=halt_on_error=1 ./build-tsan/tests/test_lags --gtest_filter='Lags.Concurrent*' \
        --gtest_output="xml:$results/tsan.junit.xml" >"$results/tsan.log" 2>&1 || cat "$results/tsan.log"
    grep -E "PASSED|FAILED" "$results/tsan.log" | sed 's/^/   /'
else
    cat "$results/tsan_build.log"
    echo "fail" >"$results/tsan_build.result"
fi

# aarch64 (scalar + NEON) and s390x (big-endian, scalar) under user-mode QEMU;
# every case is counted from the JUnit files the script writes into $results.
for arch in aarch64 s390x; do
    echo "== cross $arch under qemu"
    tests/cross_test.sh "$arch" "$results" || true
done

echo "== libFuzzer, ${FUZZ_SECONDS}s per target"
for target in frame state bundle reshard; do
    corpus=$(mktemp -d)
    cp -r fuzz/corpus/$target/. "$corpus/"
    # libFuzzer reads raw bytes: seed the frame target with the golden frames, unhexed.
    [ $target = frame ] && /usr/bin/python3 - "$corpus" tests/vectors/*.frame.hex <<'PY'
import os, re, sys
for path in sys.argv[2:]:
    text = "".join(l for l in open(path) if not l.startswith("#"))
    name = os.path.basename(path)[:-4] + ".bin"
    open(os.path.join(sys.argv[1], name), "wb").write(bytes.fromhex(re.sub(r"[^0-9a-fA-F]", "", text)))
PY
    log=$results/fuzz_$target.log
    if ./build-clang/fuzz/fuzz_$target -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
            -artifact_prefix="$results/" "$corpus" >"$log" 2>&1; then
        echo "   fuzz_$target: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}') runs, no crash"
        echo "pass" >"$results/fuzz_$target.result"
    else
        tail -40 "$log"
        echo "   fuzz_$target: FAILED (reproducer under fuzz/artifacts/)"
        mkdir -p fuzz/artifacts && cp "$results"/crash-* "$results"/leak-* "$results"/timeout-* fuzz/artifacts/ 2>/dev/null || true
        echo "fail" >"$results/fuzz_$target.result"
    fi
    rm -rf "$corpus"
done

/usr/bin/python3 - "$results" <<'PY'
import glob, os, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
passed = failed = skipped = 0
for f in glob.glob(os.path.join(d, "*.junit.xml")):
    for case in ET.parse(f).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            print("FAILED:", os.path.basename(f).split(".")[0], case.get("classname"), case.get("name"))
            # The end of what the case printed, so that a log showing only the
            # last lines of this run still says why.
            for e in case if failed <= 3 else ():
                lines = [l for l in (e.get("message", "") + "\n" + (e.text or "")).splitlines() if l.strip()]
                for l in lines[-8:]:
                    print(f"   {e.tag}| {l[:200]}")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
for f in glob.glob(os.path.join(d, "*.result")):
    ok = open(f).read().strip() == "pass"
    passed += ok
    failed += not ok
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
PY
