#!/usr/bin/env bash
# Runtime probe cost, side by side in one run (docs/benchmarks.md, "Runtime
# probes"): ns per i()+o() pair for Beatline next to its anchors, each in a
# fresh JVM (warm-up 5 rounds, median of 9 rounds of 10 million pairs).
#
#   bench/probe-bench.sh BUILD_DIR        (needs BUILD_DIR/lib/beatline-runtime.jar)
#
# VARIANTS="beatline beatline-appclock ..." picks variants, THREADS="1" the
# thread counts, REPEAT=N runs the chosen variants N times, interleaved.
# beatline-appclock runs three times when BUILD_DIR/bin/beatline-instrument
# exists: an app's Clock (bench/ProbeBenchAppClock.java) as compiled,
# instrumented (by default its nowMicros gets no probes: --skip-callbacks),
# and instrumented with --no-skip-callbacks ("probed": probes in nowMicros,
# which the runtime's re-entry guard ignores; issue 14).
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
JAR=$BUILD/lib/beatline-runtime.jar
[ -f "$JAR" ] || { echo "no $JAR: cmake --build $BUILD --target beatline-runtime" >&2; exit 1; }
OUT=$BUILD/bench-probe
rm -rf "$OUT"
mkdir -p "$OUT/tmp"
javac -cp "$JAR" -d "$OUT" "$HERE/ProbeBench.java"
javac -cp "$JAR" -d "$OUT/appclock" "$HERE/ProbeBenchAppClock.java"
INSTR=$BUILD/bin/beatline-instrument
if [ -x "$INSTR" ]; then
  "$INSTR" -q "$OUT/appclock" -o "$OUT/appclock-instr" --method-ids "$OUT/appclock-ids.txt"
  "$INSTR" -q --no-skip-callbacks "$OUT/appclock" -o "$OUT/appclock-probed" \
    --method-ids "$OUT/appclock-probed-ids.txt"
fi
echo "java: $(java -version 2>&1 | head -1); clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# ALT_RUNTIME=JAR: each variant also with that runtime jar (label "@alt"), right
# after this build's: before/after comparisons interleaved in one run.
jars=("$JAR")
[ -n "${ALT_RUNTIME:-}" ] && jars+=("$(cd "$(dirname "$ALT_RUNTIME")" && pwd)/$(basename "$ALT_RUNTIME")")
for rep in $(seq 1 "${REPEAT:-1}"); do
  for threads in ${THREADS:-1 2}; do
    for v in ${VARIANTS:-baseline empty off nanotime beatline beatline-ticker matrix beatline-appclock}; do
      for j in "${jars[@]}"; do
        sfx=""
        [ "$j" = "$JAR" ] || sfx="@alt"
        if [ "$v" = beatline-appclock ]; then
          java -Xms256m -Djava.io.tmpdir="$OUT/tmp" -cp "$j:$OUT:$OUT/appclock" ProbeBench "$v" "$threads" \
            "appclock$sfx"
          if [ -d "$OUT/appclock-instr" ]; then
            java -Xms256m -Djava.io.tmpdir="$OUT/tmp" -cp "$j:$OUT:$OUT/appclock-instr" ProbeBench "$v" \
              "$threads" "appclock-instrumented$sfx"
            java -Xms256m -Djava.io.tmpdir="$OUT/tmp" -cp "$j:$OUT:$OUT/appclock-probed" ProbeBench "$v" \
              "$threads" "appclock-instrumented-probed$sfx"
          fi
        else
          java -Xms256m -Djava.io.tmpdir="$OUT/tmp" -cp "$j:$OUT" ProbeBench "$v" "$threads" "$v$sfx"
        fi
      done
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT/tmp"
