#!/usr/bin/env bash
# Memory of large result sets on PostgreSQL (issue 19): libpq's plain
# PQexecPrepared holds a SELECT's whole result in the client before its
# first row is read, outside --max-inflight; the store reads the scans that
# can be large through server-side cursors, a chunk at a time
# (store/stmt.h, bl_st_stream), so a huge call tree costs the server what
# the answer charges to --max-inflight and no more.
#
#   pg_memory_test.sh BUILD_DIR WORK_DIR     (BEATLINE_TEST_STORE=pg; else skipped: 77)
#
# A build of 300,000 call-tree roots; peak memory growth of the server
# (VmHWM over VmRSS, as in memory_test.sh) while it answers, each asked once
# before it is measured:
#   1. call-tree?root=…: every node of the build read in id order (the
#      merge keeps only the subtree asked): +0-2 MB measured under ASan;
#      +10 MB when libpq held the whole result (the check that fails
#      without streaming);
#   2. call-tree?limit=10: on PostgreSQL the whole build is scanned when it
#      fits the budget; what it holds is charged to --max-inflight (the
#      scan's 56 bytes a node, the build's 300,000 method names): +70-80 MB
#      with or without streaming, bounded here as in memory_test.sh;
#   3. both again under --max-inflight at its floor (~82 MiB).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
if [ "${BEATLINE_TEST_STORE:-sqlite}" != pg ]; then
  echo "PostgreSQL only (BEATLINE_TEST_STORE=pg)"
  finish 77
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"

N=300000
awk -v n="$N" 'BEGIN { print "# beatline method-ids v1 names=original"
  for (i = 1; i <= n; i++) printf "%d,1,com.example.big.C%d m%d ()V\n", i, i % 997, i }' > mids.txt
awk -v n="$N" 'BEGIN {
  printf "{\"batch_id\":\"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaab\",\"app\":\"big\",\"build\":\"1.0\",";
  printf "\"session_id\":\"s\",\"origin_wall_us\":1795960000000000,\"threads\":[{\"id\":1,";
  printf "\"name\":\"main\",\"main\":true,\"truncated\":false,\"records\":[";
  t = 0
  for (i = 1; i <= n; i++) { d = 1 + (i * 7919) % 100000
    printf "%s[%d,\"i\",%.0f],[%d,\"o\",%.0f]", (i > 1 ? "," : ""), i, t, i, t + d; t += d + 1 }
  printf "]}],\"events\":[]}\n" }' > big.json
"$BIN/beatline-batch" encode < big.json > big.bin

DATA=$WORK/data
create_app "$DATA" big
start_server "$DATA"
if ! echo 5 > "/proc/$SERVER_PID/clear_refs" 2> /dev/null; then
  echo "cannot reset the peak RSS through /proc/PID/clear_refs" >&2
  exit 1
fi
http PUT /v1/apps/big/builds/1.0/method-ids "$UPL" --data-binary @mids.txt
expect "method-ids of $N methods" "201 $N" "$CODE $(jq -r .methods <<< "$BODY")"
http POST /v1/apps/big/batches "$ING" --data-binary @big.bin
expect "batch of $((2 * N)) records" 202 "$CODE"
n=0
for _ in $(seq 3000); do # bounded: 300 s (ASan on a loaded machine)
  n=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "$n" == 1 ] && break
  sleep 0.1
done
expect "big batch processed" 1 "$n"
expect "stored nodes" "$N" "$(store_sql "$DATA" "SELECT count(*) FROM call_nodes")"

# the largest root: d = 1 + (i * 7919) % 100000 is largest at its top
top=$(awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) { d = 1 + (i * 7919) % 100000
  if (d > m) { m = d; k = i } } print m, k }')
top_us=${top% *}
top_i=${top#* }

calltree_checks() { # label bound_limit_mb bound_root_mb
  # once first: what a first query after a start loads (and keeps) is not
  # what is measured
  http GET "/v1/apps/big/call-tree?build=1.0&limit=10" "$RD"
  http GET "/v1/apps/big/call-tree?build=1.0&root=com.example.big.C1.m1" "$RD"
  settle
  mem_mark
  http GET "/v1/apps/big/call-tree?build=1.0&limit=10" "$RD"
  local grow
  grow=$(peak_mb)
  expect "$1: call-tree limit=10" "200 10 true $top_us" \
    "$CODE $(jq -r '"\(.roots | length) \(.truncated) \(.roots[0].total_us)"' <<< "$BODY")"
  echo "$1: call-tree?limit=10 over $N roots: peak +$grow MB"
  below "$1: call-tree limit=10 peak growth (MB)" "$2" "$grow"
  settle
  mem_mark
  http GET "/v1/apps/big/call-tree?build=1.0&root=com.example.big.C$((top_i % 997)).m$top_i" "$RD"
  grow=$(peak_mb)
  expect "$1: call-tree root=" "200 1 $top_us" \
    "$CODE $(jq -r '"\(.roots | length) \(.roots[0].total_us)"' <<< "$BODY")"
  echo "$1: call-tree?root=… over $N nodes: peak +$grow MB"
  below "$1: call-tree root= peak growth (MB)" "$3" "$grow"
}

calltree_checks "default budget" 128 6

# --- 3. the budget at its floor ---------------------------------------------
stop_server
start_server "$DATA" --max-body 1048576 --max-decompressed 1048576 --max-inflight 85983232
calltree_checks "--max-inflight 82 MiB" 128 6

stop_server
finish
