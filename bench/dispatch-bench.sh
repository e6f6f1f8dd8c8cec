#!/usr/bin/env bash
# Issue 13 (docs/benchmarks.md, "Dispatch monitor"): the dispatch monitor's
# cost per message next to a bare Printer, and bytes spooled (= uploaded)
# per minute of a busy main thread in triggered vs full mode; each variant
# in a fresh JVM.
#
#   bench/dispatch-bench.sh BUILD_DIR [SECONDS]   (needs BUILD_DIR/lib/beatline-runtime.jar; default 20 s per mode)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SECS=${2:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
JAR=$BUILD/lib/beatline-runtime.jar
[ -f "$JAR" ] || { echo "no $JAR: cmake --build $BUILD --target beatline-runtime" >&2; exit 1; }
OUT=$BUILD/bench-dispatch
rm -rf "$OUT"
mkdir -p "$OUT"
javac -cp "$JAR" -d "$OUT" "$HERE/DispatchBench.java"
echo "java: $(java -version 2>&1 | head -1)"
for v in bare full triggered; do
  java -Xms256m -cp "$JAR:$OUT" DispatchBench cost "$v" "$OUT/spool-cost-$v"
done
for v in full triggered; do
  java -Xms256m -cp "$JAR:$OUT" DispatchBench bytes "$v" "$SECS" "$OUT/spool-bytes-$v"
done
