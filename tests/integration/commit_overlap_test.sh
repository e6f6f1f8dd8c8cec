#!/usr/bin/env bash
# The committer (issue 12, ingest end to end): a round's SQL writes and
# COMMIT run on their own thread while the writer aggregates the next round;
# batch files leave batches/pending only once their commit is durable.
#
#   commit_overlap_test.sh BUILD_DIR WORK_DIR
#
# BEATLINE_TEST_COMMIT_DELAY_MS (tests only) holds each COMMIT back, so the
# rounds overlap for sure. Checks:
#   1. batches posted while rounds commit (each aggregated beside the
#      commit of the one before, its rows written when its transaction
#      begins) give exactly the stored figures of the same batches processed
#      one after the other;
#   2. kill -9 while one round commits and the next is aggregated: after the
#      restart every batch is recorded once, with the same figures;
#   3. batches committed whose files were still in batches/pending (a crash
#      after the commit, before the moves) and found again in a round that
#      overlaps a commit are duplicates: the round is done again, nothing
#      counted twice.
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
sql() { store_sql "$1" "$2"; }
PG=0
[ "${BEATLINE_TEST_STORE:-sqlite}" = pg ] && PG=1
# batches still waiting in DATA: files in batches/pending on SQLite, rows of
# raw_batches not failed on PostgreSQL (deleted in the commit that counts them)
waiting() {
  if [ "$PG" = 1 ]; then
    sql "$1" "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL"
  else
    ls "$1/batches/pending" | wc -l
  fi
}

cat > ids.txt << 'EOF2'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
2,1,com.example.Main step (I)V
3,1,com.example.Work deep ()V
EOF2
# vbatch K: batch number K, two threads, origin 10 minutes later each
vbatch() {
  local k=$1 recs="" t=0 j
  for j in $(seq 0 $((k % 5 + 2))); do
    recs+="[1,\"i\",$t],[2,\"i\",$((t + 1))],[3,\"i\",$((t + 2 + j))],[3,\"o\",$((t + 5 + j * k % 7))],"
    recs+="[2,\"o\",$((t + 9 + k))],[2,\"i\",$((t + 10 + k))],[1,\"o\",$((t + 20 + k + j))],"
    t=$((t + 30 + k))
  done
  recs=${recs%,}
  printf '{"batch_id":"cccccccc-0000-4000-8000-%012d","app":"shop","build":"1.0","session_id":"s","origin_wall_us":%d,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"records":[%s]},{"id":2,"name":"w","main":false,"records":[[3,"i",0],[9,"i",%d],[9,"o",%d],[3,"o",%d]]}],"events":[]}' \
    "$k" $((1795960000000000 + k * 600000000)) "$recs" $((k + 1)) $((k * 3 + 2)) $((k * 7 + 20)) \
    | "$BIN/beatline-batch" encode > "v$k.bin"
}
NV=12
for k in $(seq 1 $NV); do vbatch "$k"; done
dump() { # DATA -> stats, call paths and batch rows, one line each
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
  sql "$1" "SELECT batch_id, records, malformed, bytes FROM batches ORDER BY 1"
  sql "$1" "SELECT name, batches, records FROM builds ORDER BY 1"
}
setup_data() { # DATA: an app "shop" with build 1.0's method-ID file
  local keys
  create_app "$1" shop
  printf '%s\n' "$ING" > "$1.ing"
}
post() { # K
  http POST /v1/apps/shop/batches "$ING" --data-binary @"v$1.bin"
  expect "batch v$1" 202 "$CODE"
}

# --- reference: one batch after the other, no overlap -----------------------
ref() { # DATA N
  setup_data "$1"
  start_server "$1"
  http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
  local k
  for k in $(seq 1 "$2"); do
    post "$k"
    wait_metric beatline_batches_processed_total "$k"
  done
  stop_server
  dump "$1" > "$1.dump"
}
ref "$WORK/ref" $NV
ref "$WORK/ref3" 3

# --- 1. rounds aggregated while the one before commits -----------------------
D=$WORK/ov
setup_data "$D"
BEATLINE_TEST_COMMIT_DELAY_MS=300 start_server "$D" --txn-idle-ms 1
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
for k in $(seq 1 $NV); do post "$k"; sleep 0.1; done
wait_metric beatline_batches_processed_total $NV
expect "no duplicates, nothing failed" "0 0" \
  "$(metric beatline_batches_duplicate_total) $(metric beatline_batches_failed_total)"
tx=$(metric beatline_transactions_total)
expect "several rounds" 1 "$([ "$tx" -ge 3 ] && echo 1 || echo 0)"
if [ "$PG" = 1 ]; then
  expect "every raw batch deleted" "0" "$(sql "$D" "SELECT count(*) FROM raw_batches")"
else
  expect "every file moved to batches/done" "0 $NV" \
    "$(ls "$D/batches/pending" | wc -l) $(ls "$D/batches/done" | wc -l)"
fi
stop_server
dump "$D" > "$D.dump"
expect "rows to compare" 1 "$([ "$(wc -l < "$WORK/ref.dump")" -gt 30 ] && echo 1 || echo 0)"
if cmp -s "$WORK/ref.dump" "$D.dump"; then ok; else
  bad "overlapped rounds change the stored figures: $(diff "$WORK/ref.dump" "$D.dump" | head -5)"
fi

# --- 2. kill -9 while a round commits and the next one is aggregated ---------
D=$WORK/kill
setup_data "$D"
BEATLINE_TEST_COMMIT_DELAY_MS=10000 start_server "$D" --txn-idle-ms 1
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
wait_metric beatline_transactions_total 1 # the build's registration
queue_empty() {
  for _ in $(seq 100); do
    [ "$(metric beatline_processing_queue_depth)" == 0 ] && return 0
    sleep 0.05
  done
}
post 1
queue_empty # round A: v1, committing for 10 s (the checks below must come before its end)
sleep 0.2
post 2
post 3
queue_empty # round B: v2 and v3, aggregated beside A's commit
sleep 0.2
expect "nothing committed yet" "0 1" \
  "$(metric beatline_batches_processed_total) $(metric beatline_transactions_total)"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2> /dev/null || true
SERVER_PID=
expect "the three batches still waiting" 3 "$(waiting "$D")"
start_server "$D"
wait_metric beatline_batches_processed_total 3
stop_server
dump "$D" > "$D.dump"
if cmp -s "$WORK/ref3.dump" "$D.dump"; then ok; else
  bad "kill -9 during overlapped rounds changes the figures: $(diff "$WORK/ref3.dump" "$D.dump" | head -5)"
fi

# --- 3. committed batches found again in an overlapping round ---------------
# ref3's three batches, committed, are put back in batches/pending as a crash
# between the commit and the moves leaves them; one item per round and slow
# commits: the second and third are taken while a round commits
# On PostgreSQL a raw batch's row is deleted in the commit that counts it, so
# that crash leaves nothing behind; the same three batches posted again are
# the duplicates there (answered 200 duplicate, nothing stored or counted)
D=$WORK/ref3
[ "$PG" = 1 ] || cp "$D"/batches/done/* "$D/batches/pending/"
: > server.log
BEATLINE_TEST_COMMIT_DELAY_MS=500 BEATLINE_TEST_TXN_MAX_BATCHES=1 start_server "$D" \
  --txn-idle-ms 1
if [ "$PG" = 1 ]; then
  for k in 1 2 3; do
    http POST /v1/apps/shop/batches "$(cat "$D.ing")" --data-binary @"v$k.bin"
    expect "v$k again: a duplicate" "200 true" "$CODE $(jq -r .duplicate <<< "$BODY")"
  done
  expect "nothing stored again" 0 "$(sql "$D" "SELECT count(*) FROM raw_batches")"
fi
wait_metric beatline_batches_duplicate_total 3
expect "nothing processed again" 0 "$(metric beatline_batches_processed_total)"
[ "$PG" = 1 ] || expect_grep "a round that found a committed batch is done again" \
  "processed before (a duplicate); the round is done again" "$(cat server.log)"
wait_metric beatline_processing_queue_depth 0
stop_server
dump "$D" > "$D.after"
if cmp -s "$D.dump" "$D.after"; then ok; else
  bad "duplicates in overlapping rounds change the figures: $(diff "$D.dump" "$D.after" | head -5)"
fi

finish
