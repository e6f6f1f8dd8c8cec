#!/usr/bin/env bash
# Issue 19's side-by-side benchmark: end-to-end ingest (acknowledged to
# committed) with the embedded SQLite store on one node, then with a
# PostgreSQL store on 1, 2 and 3 nodes of this machine, then slow-methods
# query latency on each store. Same batches everywhere: BATCHES zstd batches
# of RECORDS records (bench_http), spread over BUILDS builds (the unit of
# work a node takes: one writer per build), posted by CONNS connections per
# node, batches split evenly over the nodes.
#
#   bench/nodes-bench.sh BUILD_DIR [BATCHES] [RECORDS] [BUILDS] [CONNS]
#
# Defaults: 120 batches x 100,000 records, 6 builds, 2 connections a node.
# PostgreSQL: a throwaway cluster (tests/lib/pg.sh) with durability switched
# back on (fsync, full_page_writes, synchronous_commit: a 202 is as durable
# as with SQLite's fsync'd WAL). Prints records/s per configuration, the CPU
# seconds of the nodes and of the PostgreSQL processes, and the load
# average; query p50/p99 from 100 requests (bench_http query); on
# PostgreSQL the builds' registration times (method-ID file read to methods
# rows written).
#
# Diagnostics (environment):
#   BENCH_PG_STATEMENTS=N  after each PostgreSQL run, its N statements with
#                          the most execution time (pg_stat_statements:
#                          calls, total ms, rows) and the lock waits logged
#                          past 100 ms (log_lock_waits); the cluster is
#                          restarted once to preload the extension
#   BENCH_ONLY="sqlite 1 2 3"  the configurations to run (default: all)
set -euo pipefail
BUILD=$(cd "$1" && pwd)
BIN=$BUILD/bin
BATCHES=${2:-120}
RECORDS=${3:-100000}
BUILDS=${4:-6}
CONNS=${5:-2}
HERE=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
PIDS=()
. "$HERE/tests/lib/pg.sh"
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  pg_stop
  if [ -n "${BENCH_KEEP_LOGS:-}" ]; then echo "kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

pg_start > /dev/null
psql -q -d "$PG_BASE_URL/postgres" -c "ALTER SYSTEM SET fsync = on" \
  -c "ALTER SYSTEM SET full_page_writes = on" -c "ALTER SYSTEM SET synchronous_commit = on" \
  -c "SELECT pg_reload_conf()" > /dev/null
STMTS=${BENCH_PG_STATEMENTS:-0}
ONLY=${BENCH_ONLY:-sqlite 1 2 3}
if [ "$STMTS" -gt 0 ]; then
  psql -q -d "$PG_BASE_URL/postgres" \
    -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" \
    -c "ALTER SYSTEM SET log_lock_waits = on" -c "ALTER SYSTEM SET deadlock_timeout = '100ms'" \
    -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] %x '" \
    > /dev/null
  _pg_as "$(_pg_bin)/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 restart \
    > /dev/null
fi

mids() {
  echo "# beatline method-ids v1 names=original"
  for i in $(seq 0 5000); do echo "$i,1,com.example.bench.C$((i % 97)) m$i ()V"; done
}
mids > "$WORK/mids.txt"

# CPU seconds (user+system) of the given pids and of their threads
cpu_of() {
  local hz s=0
  hz=$(getconf CLK_TCK)
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] || continue
    s=$(awk -v s="$s" '{ print s + $14 + $15 }' "/proc/$p/stat")
  done
  awk -v s="$s" -v hz="$hz" 'BEGIN { printf "%.2f", s / hz }'
}
# CPU seconds of the whole PostgreSQL cluster so far: the postmaster's own
# and its reaped children's (cutime/cstime: backends of closed connections),
# plus its live children's
pg_cpu() {
  local pm hz
  pm=$(head -1 "$PG_DIR/data/postmaster.pid")
  hz=$(getconf CLK_TCK)
  { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
    for c in $(pgrep -P "$pm"); do
      # (a backend may exit meanwhile: not an error)
      awk '{ print $14 + $15 }' "/proc/$c/stat" 2> /dev/null || true
    done; } | awk -v hz="$hz" '{ s += $1 } END { printf "%.2f", s / hz }'
}

# run NAME NODES STORE: starts NODES servers on STORE, posts, waits for all
# batches to be committed, prints one line; leaves the servers for queries
run() {
  local name=$1 nodes=$2 store=$3 keys ing upl rd t0 t1 ports=() per
  rm -rf "$WORK/run" && mkdir -p "$WORK/run"
  keys=$("$BIN/beatline-server" --data "$WORK/run/d0" --store "$store" app create bench)
  ing=$(jq -r .ingest_key <<< "$keys")
  upl=$(jq -r .upload_key <<< "$keys")
  RD=$(jq -r .read_key <<< "$keys")
  PIDS=()
  for n in $(seq 0 $((nodes - 1))); do
    "$BIN/beatline-server" --data "$WORK/run/d$n" --store "$store" --listen 127.0.0.1:0 \
      --port-file "$WORK/run/port$n" 2> "$WORK/run/server$n.log" &
    PIDS+=($!)
  done
  for n in $(seq 0 $((nodes - 1))); do
    for _ in $(seq 200); do [ -s "$WORK/run/port$n" ] && break; sleep 0.05; done
    ports+=("$(cat "$WORK/run/port$n")")
  done
  PORT=${ports[0]}
  for b in $(seq 0 $((BUILDS - 1))); do
    curl -s -X PUT -H "Authorization: Bearer $upl" --data-binary @"$WORK/mids.txt" \
      "http://127.0.0.1:$PORT/v1/apps/bench/builds/$(printf 'b%03d' "$b")/method-ids" > /dev/null
  done
  local pg0 waits0=0
  if [ "$STMTS" -gt 0 ] && [ "$store" != "${store#postgresql:}" ]; then
    psql -q -d "$store" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
      -c "SELECT pg_stat_statements_reset()" > /dev/null
    waits0=$(wc -l < "$PG_DIR/server.log")
  fi
  pg0=$(pg_cpu)
  per=$((BATCHES / nodes))
  t0=$(date +%s.%N)
  local posters=()
  for n in $(seq 0 $((nodes - 1))); do
    "$BIN/bench_http" ingest "${ports[$n]}" bench "$ing" "$CONNS" "$per" "$RECORDS" "$BUILDS" 1 \
      > "$WORK/run/post$n.txt" &
    posters+=($!)
  done
  for p in "${posters[@]}"; do wait "$p"; done
  local want=$((per * nodes)) got=0 deadline=$((SECONDS + 900))
  while [ "$SECONDS" -lt "$deadline" ]; do
    got=$(curl -s -H "Authorization: Bearer $RD" "http://127.0.0.1:$PORT/v1/apps/bench/builds" |
      jq '[.builds[].batches] | add // 0')
    [ "$got" -ge "$want" ] && break
    sleep 0.1
  done
  t1=$(date +%s.%N)
  local ncpu pgcpu
  ncpu=$(cpu_of "${PIDS[@]}")
  pgcpu=$(awk -v a="$(pg_cpu)" -v b="$pg0" 'BEGIN { printf "%.2f", a - b }')
  awk -v name="$name" -v a="$t0" -v b="$t1" -v n="$want" -v r="$RECORDS" -v got="$got" \
    -v nc="$ncpu" -v pc="$pgcpu" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
    printf "%-22s %7.2f M records/s  %6.2f s  %4d/%d batches  nodes CPU %6s s  PostgreSQL CPU %6s s  load %s\n",
           name, n * r / (b - a) / 1e6, b - a, got, n, nc, pc, load }'
  if [ "$store" != "${store#postgresql:}" ]; then
    # each build's registration, from its method-ID file read to its
    # methods rows written (builds.methodids_at to symbolicated_at)
    psql -X -q -A -t -d "$store" -c "SELECT count(*), round(avg(symbolicated_at - methodids_at)
      / 1000), round(max(symbolicated_at - methodids_at) / 1000) FROM builds
      WHERE symbolicated_at IS NOT NULL AND methodids_at IS NOT NULL" |
      awk -F'|' '{ printf "    registrations: %s builds, mean %s ms, max %s ms (method-ID file to methods rows written)\n", $1, $2, $3 }'
  fi
  if [ "$STMTS" -gt 0 ] && [ "$store" != "${store#postgresql:}" ]; then
    psql -X -q -A -F ' | ' -d "$store" -c "SELECT calls, round(total_exec_time) AS ms,
      rows, left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS statement
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database
      WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT $STMTS" |
      sed 's/^/    /'
    tail -n +"$((waits0 + 1))" "$PG_DIR/server.log" > "$WORK/run/pg.log"
    if [ -n "${BENCH_KEEP_LOGS:-}" ]; then
      psql -X -q -A -d "$store" -c "SELECT pid, client_port, backend_xid, state, left(query, 60)
        FROM pg_stat_activity WHERE datname = current_database()" > "$WORK/run/activity.txt"
      cp -r "$WORK/run" "$WORK/run-$name" 2>/dev/null || cp -r "$WORK/run" "$WORK/run-$nodes"
    fi
    echo "    lock waits logged (> 100 ms): $(grep -c "still waiting for" "$WORK/run/pg.log" || true)"
    grep -A3 "still waiting for" "$WORK/run/pg.log" | grep -E "waiting for|STATEMENT" |
      sed -E 's/^.*(still waiting|STATEMENT)/      \1/' | cut -c1-150 | head -"$((STMTS * 2))" || true
  fi
}

# query NAME: slow-methods (all builds, sort=p99, limit 50) and the call tree
# of one build, 100 requests each, on the first node
query() {
  printf '%-22s slow-methods ' "$1"
  "$BIN/bench_http" query "$PORT" "/v1/apps/bench/slow-methods?sort=p99&limit=50" "$RD" 100 \
    2>&1 | tail -1
  printf '%-22s call-tree (%s nodes) ' "$1" "$(curl -s -H "Authorization: Bearer $RD" \
    "http://127.0.0.1:$PORT/v1/apps/bench/call-tree?build=b000&format=columns" | jq '.parent | length')"
  "$BIN/bench_http" query "$PORT" "/v1/apps/bench/call-tree?build=b000" "$RD" 100 2>&1 | tail -1
}

stop_all() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2> /dev/null || true; done
  PIDS=()
}

echo "== end to end: $BATCHES batches x $RECORDS records, $BUILDS builds, $CONNS connections a node"
if [[ " $ONLY " == *" sqlite "* ]]; then
  run "SQLite, 1 node" 1 "sqlite:$WORK/sqlite.db"
  query "  queries"
  stop_all
fi
for nodes in 1 2 3; do
  [[ " $ONLY " == *" $nodes "* ]] || continue
  db=$(pg_new_db)
  run "PostgreSQL, $nodes node(s)" "$nodes" "$db"
  query "  queries"
  stop_all
done
