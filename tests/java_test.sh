#!/usr/bin/env bash
# The Java package: Maven compiles SWIG's classes (from this build) with the
# hand-written ones, packs libgradwire_jni.so into the jar and runs the JUnit 5
# tests, plus the README's Java example compiled as a test source. Each JUnit
# case lands in meson-logs/java-*.junit.xml for scripts/test.sh's tally.
set -euo pipefail
src=$1 build=$2
if ! command -v mvn >/dev/null; then echo "skipped: maven is not installed"; exit 77; fi
readme=$build/bindings/java/readme
rm -rf "$readme" "$build"/bindings/java/target/surefire-reports
mkdir -p "$readme"
awk -v out="$readme/ReadmeExample.java" '
    /^```java[[:space:]]*$/ { inblock = 1; next }
    /^```/ && inblock       { inblock = 0; next }
    inblock                 { print > out }
' "$src/README.md"
[ -s "$readme/ReadmeExample.java" ] || { echo "no Java example found in README.md"; exit 1; }
status=0
mvn -q -B -ntp -Dstyle.color=never -f "$src/bindings/java/pom.xml" -Dgradwire.build="$build" \
    package >"$build/meson-logs/maven.log" 2>&1 || status=$?
for f in "$build"/bindings/java/target/surefire-reports/TEST-*.xml; do
    [ -f "$f" ] && cp "$f" "$build/meson-logs/java-$(basename "$f" .xml).junit.xml"
done
[ $status -eq 0 ] || { tail -80 "$build/meson-logs/maven.log"; exit $status; }
ls "$build"/bindings/java/target/gradwire-*.jar
