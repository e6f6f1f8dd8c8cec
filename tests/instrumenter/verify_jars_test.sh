#!/usr/bin/env bash
# Verification test of beatline-instrument on real jars (issue 4).
#
#   tests/instrumenter/verify_jars_test.sh BUILD_DIR WORK_DIR
#
# Instruments Debian's guava, okhttp, okio, commons-lang3, gson, commons-io,
# commons-collections4, commons-codec, jackson-core, jackson-databind,
# joda-time and asm* jars (JARS overrides the list; from JAVA_LIB_DIR,
# default /usr/share/java) with
#   BUILD_DIR/bin/beatline-instrument --no-skip-trivial -j 2 JAR -o OUT.jar --method-ids OUT.ids
# and checks every class with VerifyJars.java (see its header): the JVM
# (-Xverify:all) loads and initializes it next to the original in a separate
# loader, ASM's CheckClassAdapter.verify analyses it, and every method with
# code must carry enter/exit probes with its id from the method-ID file.
# The probes call a counting stub io/beatline/runtime/Beatline compiled here
# with --release 8.
#
# INSTRUMENT_CMD (environment), when set, replaces the tool: it is run as
#   $INSTRUMENT_CMD --no-skip-trivial -j 2 JAR -o OUT.jar --method-ids OUT.ids
# with DEPS_CP=<the jar's dependencies> in its environment (used to check this
# harness with the ASM reference instrumenter, bench/AsmMatrixInstrumenter.java).
# EXPECT_FAIL=1 inverts the verdict (the harness must reject a broken tool).
#
# Exit 0 on success, 1 on failure, 77 (ctest: skipped) when the tool has not
# been built. Everything written goes under WORK_DIR.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi
BUILD_DIR=$(cd "$1" && pwd)
mkdir -p "$2"
WORK_DIR=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JAVA_LIB_DIR=${JAVA_LIB_DIR:-/usr/share/java}
export LC_ALL=C.UTF-8
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

for tool in java javac; do
  command -v "$tool" >/dev/null || fail "$tool not found (install default-jdk-headless)"
done
if [ -n "${INSTRUMENT_CMD:-}" ]; then
  read -r -a TOOL <<<"$INSTRUMENT_CMD"
else
  TOOL=("$BUILD_DIR/bin/beatline-instrument")
  if [ ! -x "${TOOL[0]}" ]; then
    echo "SKIP: ${TOOL[0]} not built yet"
    exit 77
  fi
fi

ASM_CP="$JAVA_LIB_DIR/asm.jar:$JAVA_LIB_DIR/asm-tree.jar:$JAVA_LIB_DIR/asm-analysis.jar:$JAVA_LIB_DIR/asm-util.jar"
# jar name -> its dependencies (':'-separated, relative to JAVA_LIB_DIR).
# guava: failureaccess is inside Debian's guava.jar; its annotation
# dependencies (jsr305, errorprone, checker) are not needed to load classes.
# okhttp: okio (its manifest's Class-Path); Conscrypt and Android are
# optional platform back-ends absent from Debian: their classes fail to load
# in the original too and are listed as "fails in both".
declare -A DEPS=(
  [guava]=""
  [okhttp]="okio.jar"
  [okio]=""
  [commons-lang3]=""
  [gson]=""
  [commons-io]=""
  [commons-collections4]=""
  [commons-codec]=""
  [jackson-core]=""
  [jackson-databind]="jackson-core.jar:jackson-annotations.jar"
  [joda-time]=""
  [asm]=""
  [asm-tree]="asm.jar"
  [asm-analysis]="asm.jar:asm-tree.jar"
  [asm-commons]="asm.jar:asm-tree.jar"
  [asm-util]="asm.jar:asm-tree.jar:asm-analysis.jar"
)
JARS=(${JARS:-guava okhttp okio commons-lang3 gson commons-io commons-collections4 commons-codec
  jackson-core jackson-databind joda-time asm asm-tree asm-analysis asm-commons asm-util})

rm -rf "${WORK_DIR:?}/tools" "$WORK_DIR/stub" "$WORK_DIR/out"
mkdir -p "$WORK_DIR/tools" "$WORK_DIR/stub" "$WORK_DIR/out"
javac --release 8 -d "$WORK_DIR/stub" "$HERE/stub/io/beatline/runtime/Beatline.java"
javac -nowarn -cp "$ASM_CP" -d "$WORK_DIR/tools" "$HERE/VerifyJars.java"

start=$SECONDS
status=0
for j in "${JARS[@]}"; do
  jar="$JAVA_LIB_DIR/$j.jar"
  [ -r "$jar" ] || fail "$jar missing (scripts/install-deps installs it)"
  deps=""
  [ -n "${DEPS[$j]+set}" ] || fail "no dependency list for $j in $0"
  for d in ${DEPS[$j]//:/ }; do
    [ -r "$JAVA_LIB_DIR/$d" ] || fail "$JAVA_LIB_DIR/$d missing"
    deps="$deps:$JAVA_LIB_DIR/$d"
  done
  deps=${deps#:}
  out="$WORK_DIR/out/$j.jar"
  ids="$WORK_DIR/out/$j.ids"
  rc=0
  DEPS_CP="$deps" "${TOOL[@]}" --no-skip-trivial -j 2 "$jar" -o "$out" --method-ids "$ids" \
    >"$WORK_DIR/out/$j.tool.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$WORK_DIR/out/$j.tool.log" >&2
    echo "FAILURE: instrumenting $j.jar exited with status $rc"
    status=1
    continue
  fi
  # -Xverify:all: the JVM verifies every class it loads, whatever its loader.
  rc=0
  java -Xverify:all -Xss4m -cp "$ASM_CP:$WORK_DIR/tools" VerifyJars \
    --support "$WORK_DIR/stub${deps:+:$deps}" "$jar" "$out" "$ids" \
    >"$WORK_DIR/out/$j.verify.log" 2>"$WORK_DIR/out/$j.verify.err" || rc=$?
  # Show the first 50 failures and the summary line; notes stay in the log.
  log="$WORK_DIR/out/$j.verify.log"
  nfail=$(grep -c '^  FAILURE: ' "$log" || true)
  grep '^  FAILURE: ' "$log" | head -n 50 || true
  [ "$nfail" -le 50 ] || echo "  ... $((nfail - 50)) more failures in $log"
  grep -v '^  \(note\|FAILURE\): ' "$log" || true
  notes=$(grep -c '^  note: ' "$log" || true)
  [ "$notes" -eq 0 ] || echo "  ($notes classes fail in the original too: $log)"
  if [ "$rc" -ne 0 ]; then
    tail -n 20 "$WORK_DIR/out/$j.verify.err" >&2
    status=1
  fi
done
echo "verify_jars: ${JARS[*]} in $((SECONDS - start)) s"

if [ "${EXPECT_FAIL:-0}" = 1 ]; then
  [ "$status" -ne 0 ] || fail "the broken instrumenter was not caught"
  echo "verify_jars_test: PASS (the broken instrumenter was caught)"
  exit 0
fi
[ "$status" -eq 0 ] || { echo "verify_jars_test: FAIL"; exit 1; }
echo "verify_jars_test: PASS"
