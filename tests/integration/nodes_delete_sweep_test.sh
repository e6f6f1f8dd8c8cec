#!/usr/bin/env bash
# A deleted build is finished (its rows, its builds row) by a node other
# than the one that ran the deletion, also when that node never had a
# trash folder of its own (issue 19; docs/api.md "Deleting a build": "its
# rows and files are then deleted in the background").
#
#   nodes_delete_sweep_test.sh BUILD_DIR WORK_DIR
#
# Two nodes on one throwaway PostgreSQL (tests/lib/pg.sh; skipped, 77,
# when it cannot start). Node 0 processes a batch of build x (node 1 is
# stopped meanwhile, so node 0 holds x's lock), then node 1 is asked to
# DELETE x: node 0, holding the lock, runs the deletion and moves its
# cached copy of x's files into node0/trash. Node 0 is killed (-9) at once,
# before its own once-a-minute sweep; node 1 (kicked by its DELETE, no
# trash folder) must finish the deletion: before the fix it failed every
# time at "trash: cannot sync the folder" and the build's rows stayed
# until node 0 came back. Every wait is bounded.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup
sql() { timeout 20 psql -X -q -A -t -d "$STORE" -c "$1"; }

keys=$("$BIN/beatline-server" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
start_node 0
start_node 1

# 1. build x through node 0 only (node 1 stopped meanwhile)
kill -STOP "${PIDS[1]}"
printf '# beatline method-ids v1 names=original\n1,1,com.example.Main run ()V\n2,1,com.example.Main step (I)V\n' > ids.txt
code=$(curl -s -o up.out -w '%{http_code}' -m 20 -X PUT -H "Authorization: Bearer $UPL" \
  --data-binary @ids.txt "${URLS[0]}/v1/apps/shop/builds/x/method-ids")
expect "method-ids through node 0" 201 "$code"
printf '{"batch_id":"de1e7e00-0000-4000-8000-000000000001","app":"shop","build":"x","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[2,"i",10],[2,"o",20],[1,"o",30]]}],"events":[]}' |
  "$BIN/beatline-batch" encode > batch.bin
code=$(curl -s -o post.out -w '%{http_code}' -m 20 -X POST -H "Authorization: Bearer $ING" \
  --data-binary @batch.bin "${URLS[0]}/v1/apps/shop/batches")
expect "batch through node 0" 202 "$code"
n=
for _ in $(seq 200); do # bounded: 20 s
  n=$(sql "SELECT batches FROM builds WHERE name = 'x'")
  [ "$n" = 1 ] && break
  sleep 0.1
done
expect "node 0 processed the batch" 1 "$n"
id=$(sql "SELECT id FROM builds WHERE name = 'x'")

# 2. node 1 is asked to delete x; node 0 (x's lock) runs the deletion
kill -CONT "${PIDS[1]}"
code=$(curl -s -o del.out -w '%{http_code}' -m 40 -X DELETE -H "Authorization: Bearer $UPL" \
  "${URLS[1]}/v1/apps/shop/builds/x")
kill -9 "${PIDS[0]}"
wait "${PIDS[0]}" 2> /dev/null || true
PIDS[0]=
expect "DELETE through node 1" 200 "$code"
if [ -d "node0/trash/$id" ] && [ ! -e node1/trash ]; then
  ok
else
  bad "node 0 did not run the deletion (node0/trash/$id: $(ls node0/trash 2>&1 | tr '\n' ' '), node1/trash: $(ls -d node1/trash 2>&1))"
fi

# 3. node 1 alone finishes it: the doomed build and its builds row go
left=
for _ in $(seq 200); do # bounded: 20 s (node 1 was kicked by its DELETE)
  left=$(sql "SELECT (SELECT count(*) FROM doomed_builds) + (SELECT count(*) FROM builds WHERE id = $id)")
  [ "$left" = 0 ] && break
  sleep 0.1
done
expect "node 1 finished the deletion (doomed_builds and builds rows gone)" 0 "$left"
if grep -q 'cannot sync the folder' node1.log; then
  bad "node 1 logged: $(grep 'cannot sync the folder' node1.log | head -1)"
else
  ok
fi
m=$(curl -s -m 10 "${URLS[1]}/metrics" | awk '$1 == "beatline_retention_builds_deleted_total" {print $2}')
expect "node 1 counted the finished deletion" 1 "$m"
finish
