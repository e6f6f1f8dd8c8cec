#!/usr/bin/env bash
# Batches prepared from the bytes their POST decompressed (issue 12, ingest
# end to end): the prep thread decodes a copy kept in memory instead of
# reading and decompressing the batch file again; the file stays the truth.
#
#   prep_memory_test.sh BUILD_DIR WORK_DIR
#
# Checks:
#   1. zstd and gzip batches posted to a server with a prep thread are
#      prepared from memory (beatline_batches_prepared_from_memory_total),
#      and the stored figures (every stat row with its sketch bytes, every
#      call path) equal those of a server that reads every file itself
#      (--prep-threads 0, where nothing is kept in memory);
#   2. identity batches are not copied (their file is their body);
#   3. killed (-9) after the 202s while the batches were prepared from
#      memory but not committed, the restarted server processes each batch
#      exactly once from its file, with the same figures.
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

cat > ids.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
2,1,com.example.Main step (I)V
3,1,com.example.Work deep ()V
EOF

setup_data() { # DATA: an app "shop"
  local keys
  create_app "$1" shop
}

# vbatch K: batch number K (two threads, an unknown methodId, origin 10
# minutes later each), encoded, then compressed: odd K zstd, even K gzip
vbatch() {
  local k=$1 recs="" t=0 j
  for j in $(seq 0 $((k % 4 + 2))); do
    recs+="[1,\"i\",$t],[2,\"i\",$((t + 1))],[3,\"i\",$((t + 2 + j))],[3,\"o\",$((t + 5 + j * k % 7))],"
    recs+="[2,\"o\",$((t + 9 + k))],[2,\"i\",$((t + 10 + k))],[2,\"o\",$((t + 14 + k))],[1,\"o\",$((t + 20 + k + j))],"
    t=$((t + 30 + k))
  done
  recs=${recs%,}
  printf '{"batch_id":"cccccccc-0000-4000-8000-%012d","app":"shop","build":"1.0","session_id":"s","origin_wall_us":%d,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"records":[%s]},{"id":2,"name":"w","main":false,"records":[[3,"i",0],[9,"i",%d],[9,"o",%d],[3,"o",%d]]}],"events":[]}' \
    "$k" $((1795960000000000 + k * 600000000)) "$recs" $((k + 1)) $((k * 3 + 2)) $((k * 5 + 9)) \
    | "$BIN/beatline-batch" encode > "v$k.bin"
  if [ $((k % 2)) = 1 ]; then
    zstd -q -f -o "v$k.z" "v$k.bin"; ENC[$k]=zstd
  else
    gzip -c "v$k.bin" > "v$k.z"; ENC[$k]=gzip
  fi
}
declare -a ENC
NV=12
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
post_all() { # DATA LAST: posts v1..vLAST compressed, together
  local d=$1 k pids=()
  for k in $(seq 1 "$2"); do
    curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $ING" \
      -H "Content-Encoding: ${ENC[$k]}" --data-binary @"v$k.z" \
      "$URL/v1/apps/shop/batches" > "$d.code$k" &
    pids+=($!)
  done
  wait "${pids[@]}"
  expect "$2 batches accepted ($d)" "$2" "$(cat "$d".code* | grep -c -x 202)"
}

# --- 1. from memory, the same figures as from the files ---------------------
run_all() { # DATA [server args...]
  local d=$1
  shift
  setup_data "$d"
  start_server "$d" "$@"
  http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
  post_all "$d" "$NV"
  wait_metric beatline_batches_processed_total "$NV"
  FROM_MEM=$(metric beatline_batches_prepared_from_memory_total)
  stop_server
  dump "$d" > "$d.dump"
}
run_all "$WORK/files" --prep-threads 0
expect "no prep thread: nothing prepared from memory" 0 "$FROM_MEM"
run_all "$WORK/mem" --txn-idle-ms 200
expect "a prep thread: compressed batches prepared from memory" 1 \
  "$([ "${FROM_MEM:-0}" -ge 1 ] && [ "$FROM_MEM" -le "$NV" ] && echo 1 || echo "0 ($FROM_MEM)")"
expect "rows to compare" 1 "$([ "$(wc -l < "$WORK/files.dump")" -gt 10 ] && echo 1 || echo 0)"
if cmp -s "$WORK/files.dump" "$WORK/mem.dump"; then ok; else
  bad "memory copies change the stored figures: $(diff "$WORK/files.dump" "$WORK/mem.dump" | head -5)"
fi

# --- 2. identity batches are not copied -------------------------------------
D2=$WORK/d2
setup_data "$D2"
start_server "$D2"
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
http POST /v1/apps/shop/batches "$ING" --data-binary @v1.bin
expect "identity batch" 202 "$CODE"
wait_metric beatline_batches_processed_total 1
expect "identity batch read from its file" 0 "$(metric beatline_batches_prepared_from_memory_total)"
stop_server

# --- 3. kill -9 after the 202s, prepared from memory, not committed ----------
D3=$WORK/d3
setup_data "$D3"
start_server "$D3" --txn-idle-ms 60000 --txn-max-ms 60000
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
post_all "$D3" "$NV"
for _ in $(seq 200); do # the writer holds them all (queue empty), uncommitted
  [ "$(metric beatline_processing_queue_depth)" == 0 ] && break
  sleep 0.05
done
# a prep thread had taken copies before the kill (the round is open)
for _ in $(seq 200); do
  [ "$(metric beatline_batches_prepared_from_memory_total)" -ge 1 ] && break
  sleep 0.05
done
expect "prepared from memory, nothing committed, before the kill" "1 0" \
  "$([ "$(metric beatline_batches_prepared_from_memory_total)" -ge 1 ] && echo 1 || echo 0) $(metric beatline_batches_processed_total)"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2> /dev/null || true
SERVER_PID=
start_server "$D3"
wait_metric beatline_batches_processed_total "$NV"
expect "after the restart: read from the files" 0 \
  "$(metric beatline_batches_prepared_from_memory_total)"
stop_server
expect "after kill -9 and restart: $NV batches recorded once" "$NV" \
  "$(sql "$D3" "SELECT count(*) FROM batches")"
dump "$D3" > d3.dump
if cmp -s "$WORK/files.dump" d3.dump; then ok; else
  bad "kill -9 after preparing from memory changes the figures: $(diff "$WORK/files.dump" d3.dump | head -5)"
fi
finish
