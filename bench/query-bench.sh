#!/usr/bin/env bash
# Slow-methods query latency over data spanning many builds and days
# (issue 12): BATCHES batches of 100,000 records (50,000 invocations each)
# spread over BUILDS builds ("b000"…) and DAYS days of wall clock, then
# p50/p99 of the slow-methods query for one build, all builds, time ranges
# and the main thread, each next to the goal.
#   bench/query-bench.sh BUILD_DIR [BATCHES] [BUILDS] [DAYS] [REQUESTS]
# Environment: SERVER=path to another beatline-server binary (e.g. a
# baseline); DATA=directory to keep (or reuse, when it holds data) the data.
set -euo pipefail
BIN=$(cd "$1" && pwd)/bin
BATCHES=${2:-200}
BUILDS=${3:-100}
DAYS=${4:-30}
REQS=${5:-200}
SRV=${SERVER:-$BIN/beatline-server}
WORK=$(mktemp -d)
DATA=${DATA:-$WORK/data}
PID=
trap '[ -n "$PID" ] && kill "$PID" 2> /dev/null; wait 2> /dev/null || true; rm -rf "$WORK"' EXIT

fresh=0
if [ ! -s "$DATA/keys.json" ]; then
  fresh=1
  mkdir -p "$DATA"
  "$SRV" --data "$DATA" app create qbench > "$WORK/keys.json"
  cp "$WORK/keys.json" "$DATA/keys.json"
fi
ING=$(jq -r .ingest_key "$DATA/keys.json")
UPL=$(jq -r .upload_key "$DATA/keys.json")
RD=$(jq -r .read_key "$DATA/keys.json")
"$SRV" --data "$DATA" --listen 127.0.0.1:0 --port-file "$WORK/port" 2> "$WORK/server.log" &
PID=$!
for _ in $(seq 200); do [ -s "$WORK/port" ] && break; sleep 0.05; done
PORT=$(cat "$WORK/port")
if [ "$fresh" = 1 ]; then
  { echo "# beatline method-ids v1 names=original"
    for i in $(seq 0 5000); do echo "$i,1,com.example.bench.C$((i % 97)) m$i ()V"; done; } > "$WORK/mids.txt"
  for b in $(seq 0 $((BUILDS - 1))); do
    curl -s -f -X PUT -H "Authorization: Bearer $UPL" --data-binary @"$WORK/mids.txt" \
      "http://127.0.0.1:$PORT/v1/apps/qbench/builds/$(printf b%03d "$b")/method-ids" > /dev/null
  done
  echo "== slow-methods query data: $BATCHES batches x 100,000 records ($((BATCHES * 50000)) invocations), $BUILDS builds, $DAYS days"
  t0=$(date +%s.%N)
  "$BIN/bench_http" ingest "$PORT" qbench "$ING" 4 "$BATCHES" 100000 "$BUILDS" "$DAYS"
  for _ in $(seq 36000); do
    n=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
    [ "${n:-0}" -ge "$BATCHES" ] && break
    sleep 0.1
  done
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v n="$BATCHES" 'BEGIN {
    printf "end to end: %.2f M records/s processed into SQLite (%.1f s for %d batches, ack to commit)\n",
           n * 100000 / (b - a) / 1e6, b - a, n }'
else
  echo "== slow-methods query data: reusing $DATA"
fi
# the data's last hour starts at bench/batchgen.h's origin (1795960000 s)
END=$((1795960000 + 3600))
WEEK=$((END - 7 * 86400))
MONTH=$((END - DAYS * 86400 - 3600))
# CPU ticks of the server's HTTP worker threads (the queries' own CPU time,
# steadier than latency on a shared machine)
mhd_ticks() {
  local t=0 f
  for f in /proc/"$PID"/task/*; do
    grep -q MHD "$f/comm" 2> /dev/null && t=$((t + $(awk '{ print $14 + $15 }' "$f/stat")))
  done
  echo "$t"
}
HZ=$(getconf CLK_TCK)
q() {
  local what=$1 path=$2 t0 t1
  printf '%-44s ' "$what"
  t0=$(mhd_ticks)
  "$BIN/bench_http" query "$PORT" "/v1/apps/qbench/slow-methods?$path" "$RD" "$REQS" |
    sed 's/^query *//' | tr -d '\n'
  t1=$(mhd_ticks)
  awk -v a="$t0" -v b="$t1" -v n="$REQS" -v hz="$HZ" \
    'BEGIN { printf ", server CPU %.1f ms/query", (b - a) * 1000 / hz / n }'
  echo "   goal p99 < 50 ms"
}
echo "== slow-methods query ($REQS requests each, limit 50; load $(cut -d' ' -f1-3 /proc/loadavg))"
q "one build, sort=p99" "build=b007&sort=p99&limit=50"
q "one build, sort=total" "build=b007&sort=total&limit=50"
q "all builds, sort=p99" "sort=p99&limit=50"
q "all builds, sort=total" "sort=total&limit=50"
q "all builds, thread=main, sort=total" "thread=main&sort=total&limit=50"
q "all builds, thread=main, sort=p99" "thread=main&sort=p99&limit=50"
q "all builds, last 7 days, sort=p99" "since=$WEEK&sort=p99&limit=50"
q "all builds, last 7 days, sort=total" "since=$WEEK&sort=total&limit=50"
q "all builds, $DAYS days (since..until), sort=p99" "since=$MONTH&until=$END&sort=p99&limit=50"
q "one build, last 7 days, sort=p99" "build=b000&since=$WEEK&sort=p99&limit=50"
q "one build, $DAYS days, sort=p99" "build=b007&since=$MONTH&until=$END&sort=p99&limit=50"
