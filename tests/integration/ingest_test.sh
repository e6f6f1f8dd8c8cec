#!/usr/bin/env bash
# The writer's fast paths (issue 12, ingest end to end) keep the stored
# aggregates exact, on loopback with small hand-made batches.
#
#   ingest_test.sh BUILD_DIR WORK_DIR
#
# Checks:
#   1. call-path nodes the writer knows are stored are updated by id; a node
#      row deleted behind its back (another process, a retention job) is
#      made anew with the new batch's counts, not lost;
#   2. batches prepared ahead by the prep threads (decompressed, decoded,
#      call trees rebuilt while the writer aggregates the one before) give
#      exactly the stored figures of the writer doing it all alone
#      (--prep-threads 0): 24 varied batches (two threads, recursion, an
#      unknown methodId, four hours) posted together, every stat row (with
#      its sketch bytes) and every call path compared;
#   3. a transaction takes batches as they come (--txn-idle-ms): five
#      batches posted one after the other land in one transaction; killed
#      (-9) while that transaction is open, the restarted server commits
#      each of them exactly once;
#   4. checkpoints run on their own thread after each commit (the writer's
#      commits no longer do them): the database file itself, read without
#      its WAL, soon holds what was committed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

wait_metric() { # name value
  local n
  for _ in $(seq 400); do
    n=$(metric "$1")
    [ "$n" == "$2" ] && return 0
    sleep 0.05
  done
  bad "$1: expected $2, got $n"
}
# batch NAME UUID THREADS-JSON -> NAME.bin
batch() {
  printf '{"batch_id":"%s","app":"shop","build":"1.0","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":%s,"events":[]}' \
    "$2" "$3" > "$1.json"
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}
sql() { store_sql "$1" "$2"; }

cat > ids.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
2,1,com.example.Main step (I)V
3,1,com.example.Work deep ()V
EOF

setup_data() { # DATA: an app "shop" with build 1.0's method-ID file
  local keys
  create_app "$1" shop
}

# --- 1. a stored node deleted behind the writer's back ----------------------
D1=$WORK/d1
setup_data "$D1"
start_server "$D1"
put_ids shop 1.0 ids.txt "method-ID file"
batch a aaaaaaaa-0000-4000-8000-000000000001 \
  '[{"id":1,"name":"main","main":true,"records":[[1,"i",0],[2,"i",1],[2,"o",4],[1,"o",10]]}]'
http POST /v1/apps/shop/batches "$ING" --data-binary @a.bin
expect "batch a" 202 "$CODE"
wait_metric beatline_batches_processed_total 1
expect "nodes after a (method count)" "1|1 2|1" \
  "$(sql "$D1" "SELECT m.method_id || '|' || n.count FROM call_nodes n JOIN methods m ON m.id = n.method ORDER BY m.method_id" | tr '\n' ' ' | sed 's/ $//')"
sql "$D1" "DELETE FROM call_nodes"
batch b aaaaaaaa-0000-4000-8000-000000000002 \
  '[{"id":1,"name":"main","main":true,"records":[[1,"i",0],[2,"i",1],[2,"o",4],[2,"i",5],[2,"o",7],[1,"o",10]]}]'
http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
expect "batch b" 202 "$CODE"
wait_metric beatline_batches_processed_total 2
expect "deleted nodes made anew with batch b's counts (method count total self)" \
  "1|1|10|5 2|2|5|5" \
  "$(sql "$D1" "SELECT m.method_id || '|' || n.count || '|' || n.total_us || '|' || n.self_us FROM call_nodes n JOIN methods m ON m.id = n.method ORDER BY m.method_id" | tr '\n' ' ' | sed 's/ $//')"
stop_server

# --- 2. prep threads: the same figures as the writer alone ------------------
# vbatch K: batch number K, two threads, origin 10 minutes later each
vbatch() {
  local k=$1 recs="" t=0 j
  for j in $(seq 0 $((k % 5 + 2))); do
    recs+="[1,\"i\",$t],[2,\"i\",$((t + 1))],[3,\"i\",$((t + 2 + j))],[3,\"o\",$((t + 5 + j * k % 7))],"
    recs+="[2,\"o\",$((t + 9 + k))],[2,\"i\",$((t + 10 + k))],[2,\"i\",$((t + 11 + k))],"
    recs+="[2,\"o\",$((t + 12 + k * j % 5))],[2,\"o\",$((t + 14 + k))],[1,\"o\",$((t + 20 + k + j))],"
    t=$((t + 30 + k))
  done
  recs=${recs%,}
  printf '{"batch_id":"bbbbbbbb-0000-4000-8000-%012d","app":"shop","build":"1.0","session_id":"s","origin_wall_us":%d,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"records":[%s]},{"id":2,"name":"w","main":false,"records":[[3,"i",0],[9,"i",%d],[9,"o",%d],[2,"i",%d],[2,"o",%d],[3,"o",%d]]}],"events":[]}' \
    "$k" $((1795960000000000 + k * 600000000)) "$recs" $((k + 1)) $((k * 3 + 2)) $((k * 3 + 4)) $((k * 5 + 9)) $((k * 7 + 20)) \
    | "$BIN/beatline-batch" encode > "v$k.bin"
}
NV=24
for k in $(seq 1 $NV); do vbatch "$k"; done
dump() { # DATA -> stats and call paths, one line each
  sql "$1" "SELECT m.method_id, s.main, s.hour, s.count, s.total_us, s.self_us, s.max_us, $(sql_hex s.sketch)
            FROM method_stats s JOIN methods m ON m.id = s.method ORDER BY 1, 2, 3"
  sql "$1" "WITH RECURSIVE p(id, path) AS (
              SELECT n.id, CAST(m.method_id AS text) FROM call_nodes n JOIN methods m ON m.id = n.method
              WHERE n.parent = 0
              UNION ALL
              SELECT n.id, p.path || '/' || m.method_id FROM call_nodes n
              JOIN methods m ON m.id = n.method JOIN p ON n.parent = p.id)
            SELECT p.path, n.main, n.count, n.total_us, n.self_us FROM p
            JOIN call_nodes n ON n.id = p.id ORDER BY 1, 2"
}
run_all() { # DATA [server args...]: posts the NV batches together
  local d=$1 k pids=()
  shift
  setup_data "$d"
  start_server "$d" "$@"
  http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
  for k in $(seq 1 $NV); do
    curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $ING" \
      --data-binary @"v$k.bin" "$URL/v1/apps/shop/batches" > "$d.code$k" &
    pids+=($!)
  done
  wait "${pids[@]}"
  expect "$NV batches accepted ($*)" "$NV" "$(cat "$d".code* | grep -c -x 202)"
  wait_metric beatline_batches_processed_total "$NV"
  # nothing comes back after the commit (an item the transaction took while
  # open, queued again, would make another transaction)
  local tx tx2
  tx=$(metric beatline_transactions_total)
  for _ in $(seq 20); do
    tx2=$(metric beatline_transactions_total)
    [ "$tx2" == "$tx" ] || break
    sleep 0.05
  done
  expect "no work after the last commit ($*)" "$tx 0" \
    "$tx2 $(metric beatline_batches_duplicate_total)"
  stop_server
  dump "$d" > "$d.dump"
}
run_all "$WORK/alone" --prep-threads 0
run_all "$WORK/prep" --prep-threads 2 --txn-idle-ms 200
expect "rows to compare" 1 "$([ "$(wc -l < "$WORK/alone.dump")" -gt 30 ] && echo 1 || echo 0)"
if cmp -s "$WORK/alone.dump" "$WORK/prep.dump"; then ok; else
  bad "prep threads change the stored figures: $(diff "$WORK/alone.dump" "$WORK/prep.dump" | head -5)"
fi

# --- 3. a transaction takes batches as they come; kill -9 while it is open --
D3=$WORK/d3
setup_data "$D3"
start_server "$D3" --txn-idle-ms 4000 --txn-max-ms 60000
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
wait_metric beatline_transactions_total 1 # the build's registration
for k in 1 2 3 4 5; do
  http POST /v1/apps/shop/batches "$ING" --data-binary @"v$k.bin"
  expect "batch v$k" 202 "$CODE"
done
wait_metric beatline_batches_processed_total 5
expect "five batches, one transaction" 2 "$(metric beatline_transactions_total)"
stop_server
dump "$D3" > d3.dump
# the same five with the transaction still open when the server dies
D4=$WORK/d4
setup_data "$D4"
start_server "$D4" --txn-idle-ms 60000 --txn-max-ms 60000
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
# the registration: on SQLite it stays in the open transaction; on
# PostgreSQL it is a transaction of its own committed at once (W_ALONE_P in
# server/pipeline/proc_internal.h: other nodes wait on its rows)
reg_tx=0
if [ "${BEATLINE_TEST_STORE:-sqlite}" = pg ]; then
  reg_tx=1
  wait_metric beatline_transactions_total 1
fi
for k in 1 2 3 4 5; do
  http POST /v1/apps/shop/batches "$ING" --data-binary @"v$k.bin"
done
for _ in $(seq 100); do # the writer holds them (queue empty), uncommitted
  [ "$(metric beatline_processing_queue_depth)" == 0 ] && break
  sleep 0.05
done
expect "nothing committed while the transaction is open" "0 $reg_tx" \
  "$(metric beatline_batches_processed_total) $(metric beatline_transactions_total)"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2> /dev/null || true
SERVER_PID=
start_server "$D4"
wait_metric beatline_batches_processed_total 5
stop_server
dump "$D4" > d4.dump
expect "after kill -9 and restart: 5 batches recorded once" 5 \
  "$(sql "$D4" "SELECT count(*) FROM batches")"
if cmp -s d3.dump d4.dump; then ok; else
  bad "kill -9 in an open transaction changes the figures: $(diff d3.dump d4.dump | head -5)"
fi

# --- 4. the checkpointer copies commits into the database file -------------
# SQLite's WAL only: PostgreSQL has no database file of ours to read
if [ "${BEATLINE_TEST_STORE:-sqlite}" = pg ]; then finish; fi
D5=$WORK/d5
setup_data "$D5"
start_server "$D5"
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
for k in 1 2 3; do
  http POST /v1/apps/shop/batches "$ING" --data-binary @"v$k.bin"
  wait_metric beatline_batches_processed_total "$k"
done
n=""
for _ in $(seq 300); do # the file alone (a copy without -wal), bounded wait
  cp "$D5/beatline.db" main-only.db
  rm -f main-only.db-wal main-only.db-shm
  n=$(sqlite3 main-only.db "SELECT count(*) FROM batches" 2> /dev/null || true)
  [ "$n" == 3 ] && break
  sleep 0.1
done
expect "committed batches in the database file itself" 3 "$n"
stop_server

finish
