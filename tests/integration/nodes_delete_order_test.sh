#!/usr/bin/env bash
# A build's deletion runs after the batches received before it, also when
# they are leased by a node that died (issue 19, docs/api.md "Deleting a
# build": batches acknowledged before a DELETE are deleted with the build).
#
#   nodes_delete_order_test.sh BUILD_DIR WORK_DIR
#
# Two nodes on one throwaway PostgreSQL (tests/lib/pg.sh; skipped, 77,
# when it cannot start). Node A takes batches of build x, whose method-ID
# file is not uploaded: A claims them (leased, waiting for the file). A is
# killed (kill -9): its rows stay leased for the lease time (15 s). Node B
# is asked to DELETE x; the deletion's row must not run before A's rows:
# once the queue is empty, method-ids are uploaded and one new batch is
# posted: the new build x counts exactly that batch. Every wait is bounded.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup
sql() { timeout 20 psql -X -q -A -t -d "$STORE" -c "$1"; }

keys=$("$BIN/beatline-server" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
RD=$(jq -r .read_key <<< "$keys")
start_node 0
start_node 1

make_batch() { # K -> batch-K.bin
  printf '{"batch_id":"7e570000-0000-4000-8000-%012d","app":"shop","build":"x","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[2,"i",10],[2,"o",20],[1,"o",30]]}],"events":[]}' \
    "$1" | "$BIN/beatline-batch" encode > "batch-$1.bin"
}
post() { # NODE K -> HTTP code
  curl -s -o /dev/null -w '%{http_code}' -m 20 -X POST -H "Authorization: Bearer $ING" \
    --data-binary @"batch-$2.bin" "${URLS[$1]}/v1/apps/shop/batches"
}

# 1. five batches through node 0 only (node 1 is stopped for a moment so
#    that node 0 claims them all); they wait for the method-ID file
kill -STOP "${PIDS[1]}"
for k in 1 2 3 4 5; do
  make_batch "$k"
  expect "batch $k answered" 202 "$(post 0 "$k")"
done
for _ in $(seq 100); do # bounded: 10 s
  n=$(sql "SELECT count(*) FROM raw_batches WHERE lease_owner IS NOT NULL")
  [ "$n" = 5 ] && break
  sleep 0.1
done
expect "node 0 leased the 5 batches" 5 "$n"
node0=$(sql "SELECT DISTINCT lease_owner FROM raw_batches")

# 2. node 0 dies with its leases; node 1 is asked to delete the build
kill -9 "${PIDS[0]}"
wait "${PIDS[0]}" 2> /dev/null || true
PIDS[0]=
kill -CONT "${PIDS[1]}"
code=$(curl -s -o del.out -w '%{http_code}' -m 40 -X DELETE -H "Authorization: Bearer $UPL" \
  "${URLS[1]}/v1/apps/shop/builds/x")
case $code in 200 | 202) ok ;; *) bad "DELETE: $code $(cat del.out)" ;; esac

# 3. the queue empties (the dead node's leases run out: 15 s), then the
#    build is made again with one batch
for _ in $(seq 600); do # bounded: 60 s
  n=$(sql "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL")
  [ "$n" = 0 ] && break
  sleep 0.1
done
expect "queue empty (leases of $node0 run out)" 0 "$n"
printf '# beatline method-ids v1 names=original\n1,1,com.example.Main run ()V\n2,1,com.example.Main step (I)V\n' > ids.txt
code=$(curl -s -o up.out -w '%{http_code}' -m 20 -X PUT -H "Authorization: Bearer $UPL" \
  --data-binary @ids.txt "${URLS[1]}/v1/apps/shop/builds/x/method-ids")
expect "method-ids again" 201 "$code"
make_batch 6
expect "batch 6 answered" 202 "$(post 1 6)"
got=
for _ in $(seq 300); do # bounded: 30 s
  got=$(curl -s -m 10 -H "Authorization: Bearer $RD" "${URLS[1]}/v1/apps/shop/builds" |
    jq -c '[.builds[] | select(.build == "x") | .batches] | add // 0')
  n=$(sql "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL")
  [ "$got" -ge 1 ] && [ "$n" = 0 ] && break
  sleep 0.1
done
expect "new build x counts only the batch posted after the DELETE" 1 "$got"
expect "nothing failed in the queue" 0 "$(sql "SELECT count(*) FROM raw_batches")"
finish
