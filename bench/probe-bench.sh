#!/usr/bin/env bash
# Runtime probe cost, side by side in one run (docs/benchmarks.md, "Runtime
# probes"): ns per i()+o() pair for Beatline next to its anchors, each in a
# fresh JVM (warm-up 5 rounds, median of 9 rounds of 10 million pairs).
#
#   bench/probe-bench.sh BUILD_DIR        (needs BUILD_DIR/lib/beatline-runtime.jar)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
JAR=$BUILD/lib/beatline-runtime.jar
[ -f "$JAR" ] || { echo "no $JAR: cmake --build $BUILD --target beatline-runtime" >&2; exit 1; }
OUT=$BUILD/bench-probe
rm -rf "$OUT"
mkdir -p "$OUT/tmp"
javac -cp "$JAR" -d "$OUT" "$HERE/ProbeBench.java"
echo "java: $(java -version 2>&1 | head -1); clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')"
for threads in 1 2; do
  for v in baseline empty off nanotime beatline beatline-ticker matrix; do
    java -Xms256m -Djava.io.tmpdir="$OUT/tmp" -cp "$JAR:$OUT" ProbeBench "$v" "$threads"
  done
done
rm -rf "$OUT/tmp"
