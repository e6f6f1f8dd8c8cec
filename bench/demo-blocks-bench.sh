#!/usr/bin/env bash
# demo-blocks-bench.sh — the workload of scripts/demo-blocks' program timed
# untraced, instrumented with the runtime off, in triggered and in full mode
# (docs/benchmarks.md, "Dispatch monitor and upload modes").
#
#   bench/demo-blocks-bench.sh DEMO_WORK RUNTIME_JAR [QUICK [ROUNDS]]
#
# DEMO_WORK: a scripts/demo-blocks --work folder (obfuscated.jar,
# instrumented.jar). QUICK quick events (default 400000), ROUNDS alternating
# rounds (default 5). The runtime's server is unreachable (127.0.0.1:9):
# batches are compressed and spooled, not uploaded. Prints per run the
# program's workload_ms (first post to the end of the last event) and the
# spooled bytes; then per variant the minimum and median workload and
# workload − stall_ms (the quick events' part).
set -euo pipefail
[ "$#" -ge 2 ] || { sed -n '2,14p' "$0"; exit 2; }
work=$(cd "$1" && pwd) runtime=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
quick=${3:-400000} rounds=${4:-5}
tmp=$(mktemp -d "$work/bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS
rt=(-Dbeatline.server=http://127.0.0.1:9 -Dbeatline.app=bench -Dbeatline.build=bench
    -Dbeatline.key=x -Dbeatline.dispatch=awt -Dbeatline.debug=true
    -Dbeatline.spoolMaxFiles=100000 -Dbeatline.spoolMaxBytes=8589934592 -Dbeatline.shutdownWaitMs=0)
run() { # variant
  local v=$1 out
  rm -rf "$tmp/spool"
  case "$v" in
    plain) out=$(java -Djava.awt.headless=true -cp "$work/obfuscated.jar" demoblocks.BlocksMain "$quick" 2>&1) ;;
    off) out=$(java -Djava.awt.headless=true -cp "$work/instrumented.jar:$runtime" demoblocks.BlocksMain "$quick" 2>&1) ;;
    triggered) out=$(java -Djava.awt.headless=true "${rt[@]}" -Dbeatline.spool="$tmp/spool" \
        -Dbeatline.uploadMode=triggered -Dbeatline.sampleRate=0 \
        -cp "$work/instrumented.jar:$runtime" demoblocks.BlocksMain "$quick" 2>&1) ;;
    full) out=$(java -Djava.awt.headless=true "${rt[@]}" -Dbeatline.spool="$tmp/spool" \
        -Dbeatline.uploadMode=full -Dbeatline.mainBuffer=4194304 \
        -cp "$work/instrumented.jar:$runtime" demoblocks.BlocksMain "$quick" 2>&1) ;;
  esac
  local w s b t
  w=$(sed -n 's/^workload_ms=\([0-9]*\) stall_ms=\([0-9]*\).*/\1/p' <<< "$out")
  s=$(sed -n 's/^workload_ms=\([0-9]*\) stall_ms=\([0-9]*\).*/\2/p' <<< "$out")
  [ -n "$w" ] || { echo "$v: no workload line: $out" >&2; exit 1; }
  b=$({ find "$tmp/spool" -type f -printf '%s\n' 2>/dev/null || true; } | awk '{ n += $1 } END { print n + 0 }')
  t=$(grep -o '[0-9]* truncated thread entries' <<< "$out" | awk '{print $1}' || true)
  echo "$v $w $s $b ${t:-0}"
}
echo "# variant workload_ms stall_ms spooled_bytes truncated" 
for r in $(seq "$rounds"); do
  for v in plain off triggered full; do run "$v"; done
done | tee "$tmp/runs.txt"
echo "# variant: min median workload_ms | min median quick part (workload - stall) ms"
stat() { sort -n | awk '{ x[NR] = $1 } END { printf "%d %d", x[1], x[int((NR + 1) / 2)] }'; }
for v in plain off triggered full; do
  echo "$v: $(awk -v v="$v" '$1 == v { print $2 }' "$tmp/runs.txt" | stat) |" \
       "$(awk -v v="$v" '$1 == v { print $2 - $3 }' "$tmp/runs.txt" | stat)"
done
