#!/usr/bin/env bash
# beatline-instrument vs an ASM-based Matrix-style instrumenter, whole
# process, side by side in one run (issue 4; results in docs/benchmarks.md).
#
#   bench/instrument-vs-asm.sh [BUILD_DIR] [JAR] [RUNS]
#
#   BUILD_DIR  a Release/RelWithDebInfo build with bin/beatline-instrument
#              (default: build)
#   JAR        input (default /usr/share/java/guava.jar)
#   RUNS       timed runs per command (default 10), after one warm-up
#
# The same job on both sides: read JAR, assign methodIds, insert enter/exit
# probes calling io/beatline/runtime/Beatline.i(I)V / o(I)V, write a jar and
# a method-ID file. The anchor is bench/AsmMatrixInstrumenter.java built
# against Debian's libasm-java the way Tencent Matrix's trace plugin does it
# (a collect pass, then ClassReader -> AdviceAdapter -> ClassWriter with
# COMPUTE_MAXS, no exception handler: it does less than beatline-instrument,
# which also adds a catch-all handler and rewrites StackMapTable frames),
# given a fixed pool of 2 threads (as Matrix uses a pool) and also 1 thread.
# Both skip trivial methods (their default). beatline-instrument runs with
# -j 2 and -j 1. Timing: hyperfine (median, min-max); the files written are
# removed before each run.
set -euo pipefail
BUILD_DIR=${1:-build}
JAR=${2:-/usr/share/java/guava.jar}
RUNS=${3:-10}
JAVA_LIB_DIR=${JAVA_LIB_DIR:-/usr/share/java}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOL=$(cd "$BUILD_DIR" && pwd)/bin/beatline-instrument

fail() {
  echo "instrument-vs-asm: $*" >&2
  exit 1
}
for t in java javac hyperfine jq; do
  command -v "$t" >/dev/null || fail "$t not found (scripts/install-deps installs it)"
done
[ -x "$TOOL" ] || fail "$TOOL not built"
[ -r "$JAR" ] || fail "$JAR not readable"
if grep -q 'BEATLINE_SANITIZE:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null \
   || ! grep -qE 'CMAKE_BUILD_TYPE:STRING=(Release|RelWithDebInfo)' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
  echo "instrument-vs-asm: warning: $BUILD_DIR is not a Release/RelWithDebInfo build without sanitizers" >&2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/instrument-vs-asm.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ASM_CP="$JAVA_LIB_DIR/asm.jar:$JAVA_LIB_DIR/asm-tree.jar:$JAVA_LIB_DIR/asm-commons.jar:$JAVA_LIB_DIR/asm-analysis.jar"
javac -nowarn -cp "$ASM_CP" -d "$WORK/asm" "$HERE/AsmMatrixInstrumenter.java"
ASM="java -cp $ASM_CP:$WORK/asm AsmMatrixInstrumenter --mode matrix"

bl() { echo "$TOOL -q -j $1 $JAR -o $WORK/bl$1.jar --method-ids $WORK/bl$1.ids"; }
asm() { echo "$ASM -j $1 $JAR -o $WORK/asm$1.jar --method-ids $WORK/asm$1.ids"; }

# One checked run each: both must succeed and produce usable output.
for j in 1 2; do
  $(bl "$j") || fail "beatline-instrument failed"
  $(asm "$j") || fail "AsmMatrixInstrumenter failed"
done
cmp -s "$WORK/bl1.jar" "$WORK/bl2.jar" || fail "beatline-instrument output differs between -j 1 and -j 2"
nbl=$(grep -vc '^#' "$WORK/bl2.ids")
nasm=$(grep -vc '^#' "$WORK/asm2.ids")
kbl=$(du -k "$WORK/bl2.jar" | cut -f1)
kasm=$(du -k "$WORK/asm2.jar" | cut -f1)

hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$WORK/h.json" \
  --prepare "rm -f $WORK/bl2.jar $WORK/bl2.ids $WORK/bl1.jar $WORK/bl1.ids $WORK/asm1.jar $WORK/asm1.ids $WORK/asm2.jar $WORK/asm2.ids" \
  -n "beatline-instrument -j 2" "$(bl 2)" \
  -n "beatline-instrument -j 1" "$(bl 1)" \
  -n "ASM Matrix-style, pool of 2" "$(asm 2)" \
  -n "ASM Matrix-style, 1 thread" "$(asm 1)" >"$WORK/hyperfine.log" 2>&1 \
  || { cat "$WORK/hyperfine.log" >&2; fail "hyperfine failed"; }

div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a / b }'; }
median() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .median' "$WORK/h.json"; }
range() { jq -r --arg n "$1" '.results[] | select(.command == $n) | "\(.min * 1000 | floor)-\(.max * 1000 | ceil)"' "$WORK/h.json"; }
b2=$(median "beatline-instrument -j 2"); b1=$(median "beatline-instrument -j 1")
a2=$(median "ASM Matrix-style, pool of 2"); a1=$(median "ASM Matrix-style, 1 thread")

echo "Input: $JAR ($(du -k "$JAR" | cut -f1) KiB, $(unzip -l "$JAR" | grep -c '\.class$') classes); $RUNS runs each after a warm-up, median (min-max)"
echo "methods instrumented: beatline-instrument $nbl, ASM Matrix-style $nasm (both skip trivial methods)"
echo "output jar: beatline-instrument $kbl KiB, ASM $kasm KiB"
cpu() { jq -r --arg n "$1" '.results[] | select(.command == $n) | (.user + .system) * 1000' "$WORK/h.json"; }
printf '%-30s %10s %14s %16s\n' "command" "median ms" "min-max ms" "CPU ms (mean)"
for n in "beatline-instrument -j 2" "beatline-instrument -j 1" "ASM Matrix-style, pool of 2" "ASM Matrix-style, 1 thread"; do
  printf '%-30s %10.1f %14s %16.0f\n' "$n" "$(div "$(median "$n")" 0.001)" "$(range "$n")" "$(cpu "$n")"
done
printf 'speed-up (wall-clock medians): 2 threads each %.1fx, 1 thread each %.1fx; CPU time, 2 threads each %.1fx\n' \
  "$(div "$a2" "$b2")" "$(div "$a1" "$b1")" \
  "$(div "$(cpu "ASM Matrix-style, pool of 2")" "$(cpu "beatline-instrument -j 2")")"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
