#!/usr/bin/env bash
# Cost per request of Beatline's OkHttp listener next to a bare OkHttp call on
# loopback (docs/benchmarks.md, "Network requests"), side by side in one run:
# variants bare / off / on (see bench/NetBench.java), each in a fresh JVM,
# interleaved, three times; Debian's OkHttp 3.13.
#
#   bench/net-bench.sh BUILD_DIR        (needs BUILD_DIR/lib/beatline-runtime.jar)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
JAR=$BUILD/lib/beatline-runtime.jar
OK=/usr/share/java/okhttp.jar:/usr/share/java/okio.jar
[ -f "$JAR" ] || { echo "no $JAR: cmake --build $BUILD --target beatline-runtime" >&2; exit 1; }
OUT=$BUILD/bench-net
rm -rf "$OUT"
mkdir -p "$OUT"
javac -cp "$JAR:$OK" -d "$OUT" "$HERE/NetBench.java"
echo "java: $(java -version 2>&1 | head -1); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in 1 2 3; do
  for v in bare off on callbacks; do
    rm -rf "$OUT/spool"   # a fresh spool for each JVM
    java -Xms128m -cp "$JAR:$OK:$OUT" NetBench "$v" "$OUT/spool" 2>&1 | grep -v "spool full" || true
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT"
