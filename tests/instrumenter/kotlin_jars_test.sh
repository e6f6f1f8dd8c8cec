#!/usr/bin/env bash
# The instrumenter on Kotlin-compiled jars from Maven Central (issue 14,
# item 5): kotlin-stdlib, kotlinx-coroutines-core-jvm, okio-jvm and OkHttp 4
# (versions pinned in tests/instrumenter/kotlin/pom.xml), checked like the
# Debian jars of verify_jars_test.sh:
#   beatline-instrument --no-skip-trivial -j 2 JAR -o OUT.jar --method-ids OUT.ids
# then VerifyJars.java (java -Xverify:all load and init beside the original,
# ASM's analyzer, every method's probes with its id): 0 failures.
#
#   tests/instrumenter/kotlin_jars_test.sh BUILD_DIR WORK_DIR
#
# The jars are read from BEATLINE_KOTLIN_DEPS (default
# ~/.cache/beatline/kotlin), where scripts/install-deps has Maven's own client
# copy them; this test never downloads anything: a missing jar is a failure
# naming scripts/install-deps. INSTRUMENT_CMD replaces the tool as in
# verify_jars_test.sh. Exit 0 pass, 1 fail, 77 (ctest: skipped) when the tool
# is not built.
set -euo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi
BUILD_DIR=$(cd "$1" && pwd)
mkdir -p "$2"
WORK_DIR=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=${BEATLINE_KOTLIN_DEPS:-$HOME/.cache/beatline/kotlin}
export LC_ALL=C.UTF-8
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS
if [ -n "${INSTRUMENT_CMD:-}" ]; then
  read -r -a TOOL <<<"$INSTRUMENT_CMD"
else
  TOOL=("$BUILD_DIR/bin/beatline-instrument")
  if [ ! -x "${TOOL[0]}" ]; then
    echo "SKIP: ${TOOL[0]} not built yet"
    exit 77
  fi
fi
if ! python3 "$HERE/../../runtime/android/deps.py" check "$HERE/kotlin/pom.xml" "$LIB"; then
  echo "FAIL: the Kotlin jars are missing: run scripts/install-deps" >&2
  exit 1
fi
ASM_CP=/usr/share/java/asm.jar:/usr/share/java/asm-tree.jar:/usr/share/java/asm-analysis.jar:/usr/share/java/asm-util.jar
# jar -> its dependencies (':'-separated, in LIB), as Maven resolved them
declare -A DEPS=(
  [kotlin-stdlib-1.9.22]="annotations-13.0.jar"
  [kotlinx-coroutines-core-jvm-1.7.3]="kotlin-stdlib-1.9.22.jar:annotations-13.0.jar"
  [okio-jvm-3.6.0]="kotlin-stdlib-1.9.22.jar:annotations-13.0.jar"
  [okhttp-4.12.0]="okio-jvm-3.6.0.jar:kotlin-stdlib-1.9.22.jar:annotations-13.0.jar"
)
JARS=(kotlin-stdlib-1.9.22 kotlinx-coroutines-core-jvm-1.7.3 okio-jvm-3.6.0 okhttp-4.12.0)

rm -rf "${WORK_DIR:?}/tools" "$WORK_DIR/stub" "$WORK_DIR/out"
mkdir -p "$WORK_DIR/tools" "$WORK_DIR/stub" "$WORK_DIR/out"
javac --release 8 -d "$WORK_DIR/stub" "$HERE/stub/io/beatline/runtime/Beatline.java"
javac -nowarn -cp "$ASM_CP" -d "$WORK_DIR/tools" "$HERE/VerifyJars.java"

status=0
for j in "${JARS[@]}"; do
  deps=""
  for d in ${DEPS[$j]//:/ }; do deps="$deps:$LIB/$d"; done
  deps=${deps#:}
  out="$WORK_DIR/out/$j.jar" ids="$WORK_DIR/out/$j.ids" log="$WORK_DIR/out/$j.verify.log"
  if ! DEPS_CP="$deps" "${TOOL[@]}" --no-skip-trivial -j 2 "$LIB/$j.jar" -o "$out" \
    --method-ids "$ids" > "$WORK_DIR/out/$j.tool.log" 2>&1; then
    cat "$WORK_DIR/out/$j.tool.log" >&2
    echo "FAILURE: instrumenting $j.jar failed"
    status=1
    continue
  fi
  rc=0
  java -Xverify:all -Xss4m -cp "$ASM_CP:$WORK_DIR/tools" VerifyJars \
    --support "$WORK_DIR/stub:$deps" "$LIB/$j.jar" "$out" "$ids" \
    > "$log" 2> "$WORK_DIR/out/$j.verify.err" || rc=$?
  grep '^  FAILURE: ' "$log" | head -n 20 || true
  grep -v '^  \(note\|FAILURE\): ' "$log" || true
  notes=$(grep -c '^  note: ' "$log" || true)
  [ "$notes" -eq 0 ] || echo "  ($notes classes fail in the original too: $log)"
  if [ "$rc" -ne 0 ]; then
    tail -n 20 "$WORK_DIR/out/$j.verify.err" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] || { echo "kotlin_jars_test: FAIL"; exit 1; }
echo "kotlin_jars_test: PASS"
