#!/usr/bin/env bash
# The Java package, through the commands docs/java.md gives, run as written
# (doc_commands below; every line of the page's ```sh blocks must be one of
# them) in a scratch directory shaped like the source tree, whose `build` is
# this meson build directory and whose tests/java_consumer is a copy. So: meson
# setup (already configured: a no-op) and ninja; Maven compiles SWIG's classes with the hand-written ones, runs the
# JUnit 5 tests, packs the stripped libgradwire_jni.so into the jar and installs
# org.gradwire:gradwire into ~/.m2; the consumer project, which names only those
# coordinates, builds with Maven and runs with `java -cp`, checking its result.
# Then README.md's Java example joins the JUnit tests (the pom's readme-example
# profile, GRADWIRE_README_DIR). Each JUnit case lands in
# meson-logs/java-*.junit.xml for scripts/test.sh's tally.
set -euo pipefail
src=$1 build=$2
if ! command -v mvn >/dev/null; then echo "skipped: maven is not installed"; exit 77; fi
build=$(cd "$build" && pwd -P)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
log=$build/meson-logs/maven.log
: >"$log"
rm -rf "$build"/bindings/java/target/surefire-reports "$build"/meson-logs/java-*.junit.xml
collect() {
    for f in "$build"/bindings/java/target/surefire-reports/TEST-*.xml; do
        [ -f "$f" ] && cp "$f" "$build/meson-logs/java-$(basename "$f" .xml).junit.xml"
    done
    return 0
}
fail() { collect; echo "$1 (last lines of $log):"; tail -80 "$log"; exit 1; }

# The version meson builds is the artifact's and the one the consumer asks for.
version=$(meson introspect --projectinfo "$build" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
for pom in "$src/bindings/java/pom.xml" "$src/tests/java_consumer/pom.xml"; do
    grep -q "<version>$version</version>" "$pom" || { echo "$pom does not name version $version"; exit 1; }
done

# docs/java.md's commands, word for word (tests/doc_commands.txt says this file
# runs them), from a scratch directory shaped like the source tree.
doc_commands() {
    meson setup build -Djava=enabled && ninja -C build || return 1
    mvn -q -B -f bindings/java/pom.xml -Dgradwire.build=$PWD/build install || return 1
    mvn -q -B -f tests/java_consumer/pom.xml package || return 1
    java -cp "tests/java_consumer/target/classes:$(cat tests/java_consumer/target/classpath.txt)" org.gradwire.consumer.Main || return 1
}
# Every command of the page's sh blocks is one of them.
awk '
    /^```sh[[:space:]]*$/ { inblock = 1; next }
    /^```/ && inblock     { inblock = 0; next }
    inblock               { sub(/(^|[[:space:]]+)#.*$/, ""); if ($0 != "") print }
' "$src/docs/java.md" >"$scratch/doc.cmds"
[ -s "$scratch/doc.cmds" ] || { echo "docs/java.md: no sh block"; exit 1; }
while IFS= read -r cmd; do
    grep -qF -- "$cmd" "${BASH_SOURCE[0]}" ||
        { echo "docs/java.md shows \`$cmd\`, which tests/java_test.sh does not run"; exit 1; }
done <"$scratch/doc.cmds"
root=$scratch/root
mkdir -p "$root/tests"
ln -s "$src/meson.build" "$src/bindings" "$root/"
ln -s "$build" "$root/build"
ln -s "$src/tests/vectors" "$root/tests/vectors"
cp -r "$src/tests/java_consumer" "$root/tests/"
rm -rf "$root/tests/java_consumer/target"
m2=$HOME/.m2/repository/org/gradwire/gradwire/$version
status=0
(cd "$root" && unset GRADWIRE_README_DIR && doc_commands) >"$scratch/doc.out" 2>&1 || status=$?
cat "$scratch/doc.out" >>"$log"
[ $status -eq 0 ] || fail "docs/java.md's commands failed"
# Debian's Maven writes colour resets even with -B (-Dstyle.color=never is not in the doc).
sed -i 's/\x1b\[[0-9;]*m//g' "$scratch/doc.out"
collect

# What they made: the stripped native library in the installed jar, the
# consumer's run against that jar.
jar=$build/bindings/java/target/gradwire-$version.jar
[ -f "$m2/gradwire-$version.jar" ] || fail "mvn install did not put gradwire-$version.jar into $m2"
# Byte for byte (a jar records its entries' times): installed by this run.
cmp -s "$jar" "$m2/gradwire-$version.jar" || fail "$m2/gradwire-$version.jar is not the jar just built"
so=$scratch/libgradwire_jni.so
unzip -p "$jar" native/linux-x86_64/libgradwire_jni.so >"$so"
cmp -s "$so" "$build/bindings/java/native/libgradwire_jni.so" || fail "the jar's native library is not the stripped build"
if readelf -S "$so" | grep -q '\.debug_\|\.symtab'; then fail "the jar's libgradwire_jni.so has debug sections or a symbol table"; fi
[ "$(nm -D --defined-only "$so" | grep -c ' T Java_org_gradwire_')" -gt 100 ] || fail "the jar's library lacks the JNI entry points"
# zstd is linked in (bindings/meson.build): a JVM host needs no libzstd. The
# C++ runtime stays shared, so glibc 2.17 (and GCC 11's libstdc++) suffice.
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
[[ $needed != *libzstd* ]] || fail "the jar's libgradwire_jni.so needs $needed"
newest=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1)
[ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -n1)" = GLIBC_2.17 ] ||
    fail "the jar's libgradwire_jni.so needs $newest (at most GLIBC_2.17 wanted)"
grep '^consumer: ' "$scratch/doc.out" || true
grep -qx "consumer: gradwire $version from $m2/gradwire-$version.jar" "$scratch/doc.out" ||
    fail "the consumer did not load gradwire $version from $m2"
grep -qx 'consumer: ok' "$scratch/doc.out" || fail "the consumer did not print ok"

# README.md's Java example as a JUnit case.
readme=$scratch/readme
mkdir -p "$readme"
awk -v out="$readme/ReadmeExample.java" '
    /^```java[[:space:]]*$/ { inblock = 1; next }
    /^```/ && inblock       { inblock = 0; next }
    inblock                 { print > out }
' "$src/README.md"
[ -s "$readme/ReadmeExample.java" ] || { echo "no Java example found in README.md"; exit 1; }
GRADWIRE_README_DIR=$readme mvn -q -B -ntp -Dstyle.color=never -f "$src/bindings/java/pom.xml" \
    -Dgradwire.build="$build" -Dtest=ReadmeExampleTest test >>"$log" 2>&1 || fail "README.md's Java example failed"
collect
ls -l "$jar"
echo "libgradwire_jni.so in the jar: $(stat -c %s "$so") bytes, needs $needed"
