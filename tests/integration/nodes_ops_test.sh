#!/usr/bin/env bash
# Operations with several nodes on one PostgreSQL (issue 19): build
# deletion and re-upload across nodes, the shared queue in /metrics.
# Three nodes A, B, C on one throwaway database (tests/lib/pg.sh).
#
#   nodes_ops_test.sh BUILD_DIR WORK_DIR
#
# Checks:
# - a build whose batch waits on node B (its mapping is missing) deleted
#   through node A: B runs the deletion (it holds the build's lock), drops
#   the waiting batch (not counted, not waiting, no queue row left); a
#   different mapping uploaded for the same build name through B and a new
#   batch through C: every node answers the new build only;
# - a processed build (cached by every node: state, mapping index) deleted
#   through C and uploaded again with another mapping through B: slow-methods
#   and retrace answer the new mapping on every node;
# - /metrics on every node shows the shared queue's gauges (batches waiting,
#   leased, failed, oldest age) and they agree.
set -euo pipefail
unset BEATLINE_TEST_STORE # one database given explicitly (--store)
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/../lib/pg.sh"

PIDS=()
cleanup() {
  for p in ${PIDS[@]+"${PIDS[@]}"}; do
    kill "$p" 2> /dev/null || true
    wait "$p" 2> /dev/null || true
  done
  pg_stop
}
trap cleanup EXIT
if [ -z "${BEATLINE_TEST_PG_URL:-}" ] && ! pg_start; then
  bad "PostgreSQL did not start (tests/lib/pg.sh)"
  finish
fi
STORE=$(pg_new_db)
sql() { psql -X -q -A -t -d "$STORE" -c "$1"; }
HTTP_ARGS=(-m 30)

declare -A NODE_URL
start_node() { # NAME
  start_server "$WORK/$1" --store "$STORE"
  PIDS+=("$SERVER_PID")
  NODE_URL[$1]=$URL
  SERVER_PID=
}
on() { URL=${NODE_URL[$1]}; } # the node the next http call goes to
metric() { # NODE NAME
  curl -s -m 10 "${NODE_URL[$1]}/metrics" | awk -v m="$2" '$1 == m { print $2 }'
}
wait_metric() { # NODE NAME VALUE: bounded (30 s)
  local v=
  for _ in $(seq 600); do
    v=$(metric "$1" "$2")
    [ "$v" == "$3" ] && break
    sleep 0.05
  done
  expect "$1: $2" "$3" "$v"
}
wait_sql() { # NAME EXPECTED SQL: bounded (30 s)
  local v=
  for _ in $(seq 600); do
    v=$(sql "$3")
    [ "$v" == "$2" ] && break
    sleep 0.05
  done
  expect "$1" "$2" "$v"
}
N=0
post() { # NODE BUILD -> one batch: methods 1 (100 µs) and 2 (20 µs), once each
  N=$((N + 1))
  cat > b.json << JSON
{"batch_id":"$(printf '%08x-0000-4000-8000-%012x' "$N" "$N")","app":"shop","build":"$2",
 "session_id":"s","origin_wall_us":$(($(date +%s) * 1000000)),
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,
   "records":[[1,"i",0],[2,"i",10],[2,"o",30],[1,"o",100]]}],"events":[]}
JSON
  "$BIN/beatline-batch" encode < b.json > b.bin
  on "$1"
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
  expect "post $2 on $1" 202 "$CODE"
}
slow() { # NODE BUILD -> "CODE class.method:calls|…"
  on "$1"
  http GET "/v1/apps/shop/slow-methods?build=$2&thread=main&sort=total" "$RD"
  echo "$CODE $(jq -r '[.methods[]? | "\(.method.class).\(.method.name):\(.count)"] | join("|")' <<< "$BODY" 2> /dev/null)"
}
upload() { # NODE BUILD MAPPING
  on "$1"
  http PUT "/v1/apps/shop/builds/$2/method-ids" "$UPL" --data-binary @mids.txt
  [ "$CODE" == 201 ] || [ "$CODE" == 200 ] && ok || bad "method-ids $2 on $1: $CODE $BODY"
  http PUT "/v1/apps/shop/builds/$2/mapping" "$UPL" --data-binary "@$3"
  expect "mapping $2 on $1" 201 "$CODE"
}
# obfuscated names a.a.a / a.a.b, two mappings that name them differently
printf '# beatline method-ids v1 names=obfuscated\n1,0,a.a a ()V\n2,0,a.a b ()V\n' > mids.txt
printf 'com.example.First -> a.a:\n    1:1:void run():10:10 -> a\n    2:2:void go():20:20 -> b\n' > map1.txt
printf 'com.example.Second -> a.a:\n    1:1:void walk():30:30 -> a\n    2:2:void stop():40:40 -> b\n' > map2.txt
printf 'java.lang.Error\n\tat a.a.a(SourceFile:1)\n' > trace.txt
NEW="200 com.example.Second.walk:1|com.example.Second.stop:1"

keys=$("$BIN/beatline-server" --store "$STORE" --data "$WORK/b" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
RD=$(jq -r .read_key <<< "$keys")

# --- 1. a batch waiting on B, its build deleted through A -------------------
start_node b
on b
http PUT /v1/apps/shop/builds/v1/method-ids "$UPL" --data-binary @mids.txt
expect "v1 method-ids on B" 201 "$CODE"
post b v1
wait_metric b beatline_batches_waiting 1 # names obfuscated, no mapping: it waits
expect "B holds the waiting batch's lease" 1 \
  "$(sql "SELECT count(*) FROM raw_batches WHERE build = 'v1' AND lease_until IS NOT NULL")"
start_node a
start_node c
for n in a b c; do # every node shows the shared queue: one batch leased (by B)
  wait_metric $n beatline_queue_batches_leased 1
  expect "$n: waiting in the queue" 0 "$(metric $n beatline_queue_batches_waiting)"
  expect "$n: failed in the queue" 0 "$(metric $n beatline_queue_batches_failed)"
  age=$(metric $n beatline_queue_oldest_batch_age_seconds)
  [[ "$age" =~ ^[0-9]+$ ]] && ok || bad "$n: oldest batch age '$age'"
done
on a
http DELETE /v1/apps/shop/builds/v1 "$UPL"
expect "DELETE v1 through A" "200 deleted" "$CODE $(jq -r .status <<< "$BODY" 2> /dev/null)"
wait_metric b beatline_batches_waiting 0
expect "the waiting batch's queue row went with its build" 0 \
  "$(sql "SELECT count(*) FROM raw_batches WHERE build = 'v1'")"
for n in a b c; do
  on $n
  http GET /v1/apps/shop/builds "$RD"
  expect "$n: v1 not listed" "" "$(jq -r '.builds[]? | select(.build == "v1") | .build' <<< "$BODY")"
done
# the same name again, through B, with another mapping; a batch through C
upload b v1 map2.txt
post c v1
wait_sql "the new batch processed" 0 "SELECT count(*) FROM raw_batches"
for n in a b c; do
  expect "$n: v1 is the new build only (the deleted batch not counted)" "$NEW" "$(slow $n v1)"
done
expect "one live v1" 1 "$(sql "SELECT count(*) FROM builds WHERE name = 'v1' AND app_id <> 0")"

# --- 2. a build cached everywhere, deleted through C, re-uploaded via B ----
upload a v2 map1.txt
post a v2
post b v2
wait_sql "v2's batches processed" 0 "SELECT count(*) FROM raw_batches"
for n in a b c; do
  expect "$n: v2 with the first mapping" "200 com.example.First.run:2|com.example.First.go:2" "$(slow $n v2)"
  on $n
  http POST /v1/apps/shop/builds/v2/retrace "$RD" --data-binary @trace.txt
  expect "$n: retrace with the first mapping" "200 	at com.example.First.run(First.java:10)" "$CODE $(sed -n 2p body.out)"
done
on c
http DELETE /v1/apps/shop/builds/v2 "$UPL"
expect "DELETE v2 through C" "200 deleted" "$CODE $(jq -r .status <<< "$BODY" 2> /dev/null)"
upload b v2 map2.txt
post a v2
wait_sql "v2's new batch processed" 0 "SELECT count(*) FROM raw_batches"
for n in a b c; do
  expect "$n: v2 is the new build only" "$NEW" "$(slow $n v2)"
  on $n
  http POST /v1/apps/shop/builds/v2/retrace "$RD" --data-binary @trace.txt
  expect "$n: retrace with the new mapping" "200 	at com.example.Second.walk(Second.java:30)" "$CODE $(sed -n 2p body.out)"
done
# --- 3. the shared queue's gauges under a load ----------------------------
# 30 batches through the three nodes for a build that lacks its mapping:
# they wait (leased by the node holding the build's lock, or not yet
# claimed); every node shows all 30; a failed row (made by hand) shows on every
# node; after the mapping every batch is processed and the gauges are 0
on a
http PUT /v1/apps/shop/builds/v4/method-ids "$UPL" --data-binary @mids.txt
expect "v4 method-ids on A" 201 "$CODE"
for i in $(seq 10); do post a v4; post b v4; post c v4; done
queued() { echo $(($(metric "$1" beatline_queue_batches_waiting) + $(metric "$1" beatline_queue_batches_leased))); }
for n in a b c; do
  v=
  for _ in $(seq 600); do # bounded: 30 s
    v=$(queued $n)
    [ "$v" == 30 ] && break
    sleep 0.05
  done
  expect "$n: 30 batches in the queue (waiting + leased)" 30 "$v"
  [ "$(metric $n beatline_queue_batches_leased)" -ge 1 ] && ok || bad "$n: none leased"
done
sql "INSERT INTO raw_batches (batch_id, app_id, build, lock_key, enc, received_at, bytes, body,
       failed_at, error) VALUES ('ffffffff-0000-4000-8000-000000000000', 1, 'x', 1, 0, 0, 1,
       '\x00', 0, 'test')"
for n in a b c; do wait_metric $n beatline_queue_batches_failed 1; done
on b
http PUT /v1/apps/shop/builds/v4/mapping "$UPL" --data-binary @map1.txt
expect "v4 mapping on B" 201 "$CODE"
for n in a b c; do
  v=
  for _ in $(seq 600); do # bounded: 30 s
    v=$(queued $n)
    [ "$v" == 0 ] && break
    sleep 0.05
  done
  expect "$n: queue drained" 0 "$v"
done
total=0
for n in a b c; do total=$((total + $(metric $n beatline_batches_processed_total))); done
expect "every batch processed once (all nodes: 4 before, 30 now)" 34 "$total"
expect "v4 counted once each" "200 com.example.First.run:30|com.example.First.go:30" "$(slow a v4)"
sql "DELETE FROM raw_batches WHERE batch_id = 'ffffffff-0000-4000-8000-000000000000'"
for n in a b c; do
  wait_metric $n beatline_queue_batches_failed 0
  expect "$n: queue empty" "0 0 0" "$(metric $n beatline_queue_batches_waiting) $(metric $n beatline_queue_batches_leased) $(metric $n beatline_queue_batches_failed)"
done
finish
