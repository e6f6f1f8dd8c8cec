#!/usr/bin/env bash
# Fixes from the review of issues 12 and 13 (retention, ingest, blocks).
#
#   review_fixes_test.sh BUILD_DIR WORK_DIR
#
# Checks: a build deletion queued while the writer holds a batch of that
# build (its transaction failed and is tried again) runs after the batch: the
# build does not come back. DELETE when the build folder's lock cannot be
# opened, or an upload holds it past the writer's bounded wait: 503 JSON and
# nothing changed; then it succeeds. A batch in batches/pending that cannot
# be read for want of memory is tried again, never moved to batches/failed.
# Needs the sqlite3 command-line shell (to hold the database's write lock).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
if ! command -v sqlite3 > /dev/null; then
  echo "no sqlite3 shell: SKIP"
  finish 77
fi

HTTP_ARGS=(-m 30)
metric() { curl -s -m 10 "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
q() { store_sql "$DATA" "$1"; }
N=0
NOW_US=$(($(date +%s) * 1000000))
# post APP KEY BUILD -> one batch of two calls of methods 1 and 2
post() {
  N=$((N + 1))
  local uuid
  uuid=$(printf '%08x-0000-4000-8000-%012x' "$N" "$N")
  cat > b.json << JSON
{"batch_id":"$uuid","app":"$1","build":"$3","session_id":"s","origin_wall_us":$NOW_US,
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[2,"i",10],[2,"o",30],[1,"o",100]]}],
 "events":[]}
JSON
  "$BIN/beatline-batch" encode < b.json > b.bin
  http POST "/v1/apps/$1/batches" "$2" --data-binary @b.bin
}
printf '1,0,com.example.A run ()V\n2,0,com.example.B go ()V\n' > mids.txt
bid() { q "SELECT id FROM builds WHERE name = '$2' AND app_id = (SELECT id FROM apps WHERE name = '$1')"; }
upload() { # APP KEY BUILD; then waits (bounded) for the writer to register it
  http PUT "/v1/apps/$1/builds/$3/method-ids" "$2" --data-binary @mids.txt
  expect "method-ids $1/$3" 201 "$CODE"
  for _ in $(seq 300); do [ -n "$(bid "$1" "$3")" ] && return 0; sleep 0.1; done
  bad "build $1/$3 not registered"
}
# lock SECONDS: another process holds the database's write lock that long
lock() {
  rm -f locked
  printf 'BEGIN IMMEDIATE;\n.shell touch locked\n.shell sleep %s\nCOMMIT;\n' "$1" |
    sqlite3 -cmd '.timeout 5000' "$DATA/beatline.db" > /dev/null &
  LOCK_PID=$!
  for _ in $(seq 100); do [ -e locked ] && break; sleep 0.05; done
  [ -e locked ] && ok || bad "the database write lock was not taken"
}
# acknowledged batches not yet processed: files in batches/pending
# (SQLite), rows of raw_batches not failed (PostgreSQL: the database's queue)
unprocessed() {
  if [ "${BEATLINE_TEST_STORE:-}" = pg ]; then
    q "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL"
  else
    find "$DATA/batches/pending" -type f | wc -l
  fi
}
wait_idle() { # bounded (30 s): nothing queued or acknowledged but unprocessed
  # except batches waiting for their build's files, no transaction failing
  for _ in $(seq 300); do
    [ "$(metric beatline_processing_queue_depth)" = 0 ] &&
      [ "$(metric beatline_transactions_failing)" = 0 ] &&
      [ "$(unprocessed)" = "$(metric beatline_batches_waiting)" ] &&
      return 0
    sleep 0.1
  done
  bad "the writer did not become idle"
}

DATA=$WORK/data
create_app "$DATA" shop

# --- 1. a deletion runs after the batches queued before it -----------------
# The writer takes the batch, cannot begin its transaction (the lock outlasts
# its 5 s busy timeout) and tries again a second later; the DELETE queued
# meanwhile must come after the batch, or the batch makes the build anew.
start_server "$DATA"
upload shop "$UPL" v1
post shop "$ING" v1 && expect "v1 batch" 202 "$CODE"
wait_idle
lock 8
post shop "$ING" v1 && expect "v1 batch while the database is locked" 202 "$CODE"
sleep 0.5 # the writer has taken it and waits for the lock
http DELETE /v1/apps/shop/builds/v1 "$UPL"
case "$CODE" in 200 | 202) ok ;; *) bad "DELETE v1: $CODE $BODY" ;; esac
wait "$LOCK_PID" || true
wait_idle
expect "the deleted build v1 did not come back" "" "$(bid shop v1)"
expect "no batch waits for the deleted build" 0 "$(metric beatline_batches_waiting)"
stop_server

# --- 2. the build folder's lock: taken before anything moves, bounded wait --
start_server "$DATA"
upload shop "$UPL" v2
BDIR=$(dirname "$(grep -l . "$DATA"/builds/*/*/method-ids.hash | head -1)")
[ -d "$BDIR" ] && ok || bad "no build folder for v2"
# a lock file that cannot be opened (a folder in its place): refused, not moved
rm -f "$BDIR/.lock"
mkdir "$BDIR/.lock"
http DELETE /v1/apps/shop/builds/v2 "$UPL"
expect "DELETE while the build lock cannot be opened" 503 "$CODE"
expect "  JSON error" true "$(jq 'has("error")' <<< "$BODY" 2> /dev/null || echo false)"
[ -n "$(bid shop v2)" ] && [ -e "$BDIR/method-ids.hash" ] && ok ||
  bad "the build or its folder changed although the lock failed"
rmdir "$BDIR/.lock"
# an upload holding the lock longer than the writer waits (3 s): 503, nothing
# moved, and the writer is not stuck (it answers well before the lock goes)
rm -f held
# (-o: flock itself holds the lock, so killing it lets go)
flock -o "$BDIR/.lock" sh -c 'touch held; exec sleep 10' > /dev/null 2>&1 &
FLOCK_PID=$!
for _ in $(seq 100); do [ -e held ] && break; sleep 0.05; done
[ -e held ] && ok || bad "the build lock was not taken"
http DELETE /v1/apps/shop/builds/v2 "$UPL"
expect "DELETE while an upload holds the build lock" 503 "$CODE"
[ -n "$(bid shop v2)" ] && [ -e "$BDIR/method-ids.hash" ] && ok ||
  bad "the build or its folder changed although an upload held the lock"
post shop "$ING" v2 && expect "v2 batch after the refused DELETE" 202 "$CODE"
wait_idle
kill "$FLOCK_PID" 2> /dev/null || true
wait "$FLOCK_PID" 2> /dev/null || true
http DELETE /v1/apps/shop/builds/v2 "$UPL"
expect "DELETE once the lock is free" 200 "$CODE"
expect "v2 is gone" "" "$(bid shop v2)"
stop_server

# Section 3 holds SQLite's write lock (the sqlite3 shell) past the DELETE's
# 10 s wait. On a PostgreSQL store the deletion goes in line into the shared
# queue and its folder-lock failure comes before any database work, so a
# held database cannot delay it; a slow commit ahead of it
# (BEATLINE_TEST_COMMIT_DELAY_MS) did not hold it reliably under load, and
# holding the build's advisory lock from psql needs its xxh3 key: SQLite
# only (the 202 path on PostgreSQL: nodes_ops_pg's deletions; the retry of
# a request: section 3b). Section 3b runs on both stores.
PGS=0
[ "${BEATLINE_TEST_STORE:-}" = pg ] && PGS=1
if [ "$PGS" = 0 ]; then
# --- 3. a deletion answered 202 that then fails is tried again -------------
# The writer is held (another process holds the write lock past the DELETE's
# 10 s wait, a batch ahead of the deletion is tried again meanwhile): 202.
# Then the deletion fails (the build lock cannot be opened). Once the cause
# is gone the retention thread deletes the build (here: at the next start).
start_server "$DATA"
upload shop "$UPL" v4
BDIR=$(dirname "$(grep -l . "$DATA"/builds/*/*/method-ids.hash | head -1)")
rm -f "$BDIR/.lock"
mkdir "$BDIR/.lock"
lock 18
post shop "$ING" v4 && expect "v4 batch while the database is locked" 202 "$CODE"
sleep 0.5
http DELETE /v1/apps/shop/builds/v4 "$UPL"
expect "DELETE v4 while the writer is held" 202 "$CODE"
wait "$LOCK_PID" || true
wait_idle
for _ in $(seq 300); do grep -q "build v4: cannot take" server.log && break; sleep 0.1; done
expect_grep "the deletion failed after its 202" "build v4: cannot take its folder's lock" \
  "$(cat server.log)"
[ -n "$(bid shop v4)" ] && ok || bad "v4 deleted although its lock could not be opened"
rmdir "$BDIR/.lock"
stop_server
start_server "$DATA"
for _ in $(seq 150); do [ -z "$(bid shop v4)" ] && break; sleep 0.2; done
expect "the requested deletion of v4 happened after all" "" "$(bid shop v4)"
expect "no request left" "" "$(ls "$DATA/deletions" 2> /dev/null)"
stop_server
else
  echo "section 3: SQLite's write lock holds the deletion past 10 s; not run on PostgreSQL"
fi

# --- 3b. a deletion cut short by a kill -9 between the move to trash and the
# commit (made by hand here: the build folder in trash/ID, its row live):
# finished at start with the right reason (a DELETE leaves its request in
# DIR/deletions, an expiry none), and the batches waiting for the build,
# acknowledged before, deleted with it (PostgreSQL: in line in the shared
# queue, by the node holding the build's lock, just after the start).
start_server "$DATA"
post shop "$ING" v5 && expect "v5 batch (waits: no method-ids)" 202 "$CODE"
post shop "$ING" v6 && expect "v6 batch (waits: no method-ids)" 202 "$CODE"
for _ in $(seq 300); do [ "$(metric beatline_batches_waiting)" = 2 ] && break; sleep 0.1; done
expect "two batches wait" 2 "$(metric beatline_batches_waiting)"
stop_server
V5=$(bid shop v5)
V6=$(bid shop v6)
sleep 0.05
mkdir -p "$DATA/trash/$V5" "$DATA/trash/$V6" "$DATA/deletions"
touch "$DATA/deletions/$V5"
start_server "$DATA"
if [ "$PGS" = 1 ]; then
  expect_grep "v5's deletion finished in line as a DELETE" \
    "build $V5: deletion (deleted) cut short by a stop, before its commit; finished in line" \
    "$(cat server.log)"
  expect_grep "v6's deletion finished in line as an expiry" \
    "build $V6: deletion (expired) cut short by a stop, before its commit; finished in line" \
    "$(cat server.log)"
  for _ in $(seq 150); do [ -z "$(bid shop v5)$(bid shop v6)" ] && break; sleep 0.2; done
  wait_idle
  expect "v5 did not come back" "" "$(bid shop v5)"
  expect "v6 did not come back" "" "$(bid shop v6)"
  expect "their waiting batches deleted with them" 0 \
    "$(q "SELECT count(*) FROM raw_batches WHERE build IN ('v5', 'v6')")"
  for _ in $(seq 100); do [ "$(metric beatline_batches_waiting)" = 0 ] && break; sleep 0.1; done
  expect "no batch waits for a deleted build" 0 "$(metric beatline_batches_waiting)"
  expect "no trash left" "" "$(ls "$DATA/trash" 2> /dev/null)"
else
  expect_grep "v5's deletion finished as a DELETE" "build $V5: deletion (deleted) cut short" \
    "$(cat server.log)"
  expect_grep "v6's deletion finished as an expiry" "build $V6: deletion (expired) cut short" \
    "$(cat server.log)"
  wait_idle
  sleep 0.5
  expect "v5 did not come back" "" "$(bid shop v5)"
  expect "v6 did not come back" "" "$(bid shop v6)"
  expect "no batch waits for a deleted build" 0 "$(metric beatline_batches_waiting)"
fi
for _ in $(seq 100); do [ -z "$(ls "$DATA/deletions" 2> /dev/null)" ] && break; sleep 0.1; done
expect "no request left after the recovery" "" "$(ls "$DATA/deletions" 2> /dev/null)"
stop_server

# --- 4. /blocks: deep paths, memory charged for what is built -------------
# (a) One block group whose signature path is 64 methods deep (a chain of 70
# nested calls in the window): listed with its 64 methods, and its detail's
# call tree of 70 nodes (the tree's node map grows while it is built).
{ echo '# beatline method-ids v1 names=original'
  for i in $(seq 70); do echo "$i,1,com.example.Deep m$i ()V"; done
  for i in $(seq 100 1599); do echo "$i,1,com.example.Leaf m$i ()V"; done; } > deep-ids.txt
start_server "$DATA"
for b in deep wide; do
  put_ids shop "$b" deep-ids.txt "$b method-ids"
done
REC=$( { for i in $(seq 70); do printf '[%d,"i",%d],' "$i" $((10 + i)); done
         for i in $(seq 70 -1 1); do printf '[%d,"o",%d],' "$i" $((900000 - i)); done; } | sed 's/,$//')
cat > deep.json << JSON
{"batch_id":"0000dddd-0000-4000-8000-000000000001","app":"shop","build":"deep","session_id":"s",
 "origin_wall_us":$NOW_US,"device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[$REC]}],
 "events":[{"type":"block","thread":0,"begin_us":5,"end_us":900005,"target":"t","kind":"awt","device":"d"}]}
JSON
"$BIN/beatline-batch" encode < deep.json > deep.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @deep.bin
expect "deep batch" 202 "$CODE"
# (b) 1,500 groups, each a path of 64 methods (63 shared, one leaf of its
# own): the list builds 96,000 method objects
# (15 batches of 100: rebuilding the windows of one batch has a budget)
for w in $(seq 0 14); do
  awk -v o="$NOW_US" -v w="$w" 'BEGIN {
    printf "{\"batch_id\":\"0000eeee-0000-4000-8000-%012d\",\"app\":\"shop\",\"build\":\"wide\",", w
    printf "\"session_id\":\"s\",\"origin_wall_us\":%d,\"device\":{\"model\":\"m\",\"os\":\"14\",\"sdk\":34},", o
    printf "\"threads\":[{\"id\":1,\"name\":\"main\",\"main\":true,\"truncated\":false,\"records\":["
    n = 0
    for (k = w * 100; k < w * 100 + 100; k++) {
      b = (k - w * 100) * 1000000
      for (i = 1; i <= 63; i++) printf "%s[%d,\"i\",%d]", (n++ ? "," : ""), i, b + 10 + i
      printf ",[%d,\"i\",%d],[%d,\"o\",%d]", 100 + k, b + 100, 100 + k, b + 800000
      for (i = 63; i >= 1; i--) printf ",[%d,\"o\",%d]", i, b + 900000 - i
    }
    printf "]}],\"events\":["
    for (k = 0; k < 100; k++)
      printf "%s{\"type\":\"block\",\"thread\":0,\"begin_us\":%d,\"end_us\":%d,\"target\":\"t\",\"kind\":\"awt\",\"device\":\"d\"}", (k ? "," : ""), k * 1000000 + 5, k * 1000000 + 900005
    print "]}" }' > wide.json
  "$BIN/beatline-batch" encode < wide.json > wide.bin
  http POST /v1/apps/shop/batches "$ING" --data-binary @wide.bin
  [ "$CODE" = 202 ] || bad "wide batch $w: $CODE $BODY"
done
ok
wait_idle
http GET "/v1/apps/shop/blocks?build=deep" "$RD"
expect "deep: one group, a path of 64 methods" "200 64" "$CODE $(jq '.blocks[0].path | length' <<< "$BODY")"
DSIG=$(jq -r '.blocks[0].signature' <<< "$BODY")
http GET "/v1/apps/shop/blocks/$DSIG?build=deep" "$RD" || CODE=000 # 000: the server died
expect "deep detail: 200, a chain of 70 nodes" "200 70" \
  "$CODE $(jq '[.call_tree[] | recurse(.children[])] | length' <<< "$BODY" 2> /dev/null)"
http GET "/v1/apps/shop/blocks?build=wide&limit=2000" "$RD"
expect "wide: 1500 groups of 64 methods (default budget)" "200 1500 64" \
  "$CODE $(jq '.blocks | length' <<< "$BODY") $(jq '[.blocks[].path | length] | min' <<< "$BODY")"
WSIG=$(jq -r '.blocks[1499].signature' <<< "$BODY")
http GET "/v1/apps/shop/blocks/$WSIG?build=wide" "$RD"
expect "wide detail of the last-listed group" 200 "$CODE"
# --- 6. minor: since after until is refused, naming both
http GET "/v1/apps/shop/blocks?build=deep&since=2000&until=1000" "$RD"
expect "since > until: 400" 400 "$CODE"
contains "  names since and until" "'since' must not be after 'until'" "$BODY"
http GET "/v1/apps/shop/blocks?build=deep&since=1000&until=1000" "$RD"
expect "since = until: 200 (an empty range)" 200 "$CODE"
stop_server
# --txn-max-ms over 60,000 (the write lock held that long) refused at start
for v in 60001 3600000; do
  rc=0
  timeout 10 "$BIN/beatline-server" --data "$DATA" --listen 127.0.0.1:0 --txn-max-ms "$v" \
    > /dev/null 2> txn.err || rc=$?
  expect "--txn-max-ms $v refused at start" 1 "$rc"
done
rc=0
BEATLINE_TXN_MAX_MS=60001 timeout 10 "$BIN/beatline-server" --data "$DATA" --listen 127.0.0.1:0 \
  > /dev/null 2> txn.err || rc=$?
expect "BEATLINE_TXN_MAX_MS=60001 refused at start" 1 "$rc"
expect_grep "  says the range" "txn-max-ms 1-60000" "$(cat txn.err)"
# the smallest budget the server takes with 1 MiB bodies is 82 MiB: the
# 96,000 method objects are charged over it (about 1.1 KiB each), so the
# list is refused; one group's detail still fits
start_server "$DATA" --max-body 1048576 --max-decompressed 1048576 --max-inflight 1
http GET "/v1/apps/shop/blocks?build=wide&limit=2000" "$RD"
expect "wide under an 82 MiB budget: refused, not built uncharged" 503 "$CODE"
expect "  JSON error" true "$(jq 'has("error")' <<< "$BODY" 2> /dev/null || echo false)"
http GET "/v1/apps/shop/blocks?build=wide&limit=100" "$RD"
expect "wide, limit=100, under that budget" 200 "$CODE"
http GET "/v1/apps/shop/blocks/$WSIG?build=wide" "$RD"
expect "wide detail under that budget (signatures computed, not built)" 200 "$CODE"
stop_server

# Section 5 stages an acknowledged batch as a file in batches/pending; on a
# PostgreSQL store acknowledged batches are rows of raw_batches (store/queue.h,
# tried again after a failed round by the queue's leases: store_queue_pg):
# SQLite only.
if [ "${BEATLINE_TEST_STORE:-}" != pg ]; then
# --- 5. out of memory while reading an acknowledged batch: tried again ------
# A batch acknowledged earlier (in batches/pending at start) bigger than the
# largest allocation ASan allows (max_allocation_size_mb=1, malloc returning
# NULL): reading it fails with ENOMEM. It must stay pending, not go to
# batches/failed, and be processed once memory allows.
start_server "$DATA"
upload shop "$UPL" v3
stop_server
U5=0000aaaa-0000-4000-8000-000000000005
awk -v u="$U5" 'BEGIN {
  printf "{\"batch_id\":\"%s\",\"app\":\"shop\",\"build\":\"v3\",\"session_id\":\"s\",", u
  printf "\"origin_wall_us\":%d,\"device\":{\"model\":\"m\",\"os\":\"14\",\"sdk\":34},", '"$NOW_US"'
  printf "\"threads\":[{\"id\":1,\"name\":\"main\",\"main\":true,\"truncated\":false,\"records\":["
  for (i = 0; i < 150000; i++) printf "%s[1,\"i\",%d],[1,\"o\",%d]", (i ? "," : ""), 10 * i, 10 * i + 5
  print "]}],\"events\":[]}" }' > big.json
"$BIN/beatline-batch" encode < big.json > "$DATA/batches/pending/$U5.bin"
[ "$(stat -c %s "$DATA/batches/pending/$U5.bin")" -gt 1200000 ] && ok || bad "big batch too small"
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:allocator_may_return_null=1:max_allocation_size_mb=1" \
  start_server "$DATA"
for _ in $(seq 300); do
  v=$(metric beatline_transactions_failing)
  [ -n "$v" ] && [ "$v" -ge 1 ] && break
  sleep 0.1
done
expect "out of memory: the transaction is failing (tried again)" 1 \
  "$([ "${v:-0}" -ge 1 ] && echo 1 || echo 0)"
expect "out of memory: no batch failed" 0 "$(metric beatline_batches_failed_total)"
[ -e "$DATA/batches/pending/$U5.bin" ] && ok || bad "the batch left batches/pending"
[ ! -e "$DATA/batches/failed/$U5.bin" ] && ok || bad "the batch went to batches/failed"
stop_server
start_server "$DATA"
for _ in $(seq 300); do [ -e "$DATA/batches/done/$U5.bin" ] && break; sleep 0.1; done
[ -e "$DATA/batches/done/$U5.bin" ] && ok || bad "the batch was not processed once memory allowed"
expect "its 150,000 calls are counted" 150000 \
  "$(q "SELECT count FROM method_stats ms JOIN builds b ON b.id = ms.build_id WHERE b.name = 'v3'" | awk '{ s += $1 } END { print s + 0 }')"
stop_server
else
  echo "section 5: an acknowledged batch staged in batches/pending; not run on PostgreSQL"
fi

finish
