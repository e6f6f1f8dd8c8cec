#!/usr/bin/env bash
# Per-app waiting quotas with several nodes on one PostgreSQL store (issue
# 19; docs/api.md, "Ingest"): the waiting batches are rows of the shared
# queue (raw_batches), and every node counts those, so two nodes do not
# allow twice the quota.
#
#   nodes_quota_test.sh BUILD_DIR WORK_DIR
#
# PostgreSQL: the cluster at BEATLINE_TEST_PG_URL, else a throwaway one
# (tests/lib/pg.sh; skipped, 77, when it cannot start). Two servers A and
# B share one database, with --quota-waiting-builds 3
# --quota-waiting-batches 8; batches of builds without a method-ID file
# wait (in the queue). Checks:
#   1. builds and batches posted through A and B add up: the 4th waiting
#      build and the 9th waiting batch are refused (429 naming the quota)
#      by both nodes, whichever node took the earlier ones; a build that
#      already waits may get more batches through the other node;
#   2. a method-ID file uploaded through B: that build's batches are
#      processed, the quota frees up on A too, and a batch of that build
#      posted through A is never refused;
#   3. waiting-bytes (app set): bytes posted through A count on B.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup reuse
sql() { timeout 20 psql -X -q -A -t -d "$STORE" -c "$1"; }
# node 0 = A, 1 = B
QUOTAS=(--quota-waiting-builds 3 --quota-waiting-batches 8 --quota-new-builds 100)

keys=$("$SRV" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
keys2=$("$SRV" --data "$PWD/node0" --store "$STORE" app create tiny)
ING2=$(jq -r .ingest_key <<< "$keys2")
start_node 0 "${QUOTAS[@]}"
start_node 1 "${QUOTAS[@]}"

N=0
# post NODE APP KEY BUILD -> CODE/BODY/HDRS of POSTing one new batch
post() {
  N=$((N + 1))
  local uuid
  uuid=$(printf '%08x-0000-4000-8000-%012x' "$N" "$N")
  cat > b.json << JSON
{"batch_id":"$uuid","app":"$2","build":"$4","session_id":"s","origin_wall_us":1795960000000000,
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[0,"i",0],[0,"o",10]]}],
 "events":[]}
JSON
  "$BIN/beatline-batch" encode < b.json > b.bin
  URL=${URLS[$1]}
  http POST "/v1/apps/$2/batches" "$3" --data-binary @b.bin
}
A=0
B=1

# --- 1. the waiting quotas count the shared queue ------------------------------
for i in 1 2 3; do post $A shop "$ING" b1 && expect "A: b1 batch $i" 202 "$CODE"; done
post $B shop "$ING" b2 && expect "B: b2" 202 "$CODE"
post $A shop "$ING" b3 && expect "A: b3 (3 builds wait)" 202 "$CODE"
expect "5 batches wait in the queue" 5 "$(sql "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL")"
post $B shop "$ING" b4
expect "B: a 4th waiting build: 429" 429 "$CODE"
expect_grep "B's 429 names the waiting-builds quota" "too many builds waiting for uploads: 3 builds" \
  "$(jq -r .error <<< "$BODY")"
expect_grep "B's 429 has Retry-After" "Retry-After: 600" "$HDRS"
post $A shop "$ING" b4
expect "A: a 4th waiting build: 429" 429 "$CODE"
post $B shop "$ING" b1 && expect "B: b1 (waits already, through A): admitted" 202 "$CODE"
post $B shop "$ING" b2 && expect "B: b2 again" 202 "$CODE"
post $A shop "$ING" b3 && expect "A: b3 again (8 batches wait)" 202 "$CODE"
post $B shop "$ING" b1
expect "B: a 9th waiting batch: 429" 429 "$CODE"
expect_grep "B's 429 names the waiting-batches quota" "too many batches waiting for uploads: 8 batches" \
  "$(jq -r .error <<< "$BODY")"
post $A shop "$ING" b2
expect "A: a 9th waiting batch: 429" 429 "$CODE"
expect "8 batches wait, no more" 8 "$(sql "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL")"

# --- 2. an upload through B frees the quota on A --------------------------------
echo "0,9,com.example.Foo bar ()V" > mids.txt
URL=${URLS[$B]}
http PUT /v1/apps/shop/builds/b1/method-ids "$UPL" --data-binary @mids.txt
expect "B: b1's method-ID file" 201 "$CODE"
post $A shop "$ING" b1 && expect "A: b1 has its files (uploaded through B): never refused" 202 "$CODE"
left=
for _ in $(seq 600); do # bounded: 60 s
  left=$(sql "SELECT count(*) FROM raw_batches WHERE build = 'b1'")
  [ "$left" == 0 ] && break
  sleep 0.1
done
expect "b1's batches processed" 0 "$left"
post $A shop "$ING" b4 && expect "A: b4 once b1 is out of the way" 202 "$CODE"
post $B shop "$ING" b5
expect "B: b5: 3 builds wait again: 429" 429 "$CODE"

# --- 3. waiting bytes -----------------------------------------------------------
post $A tiny "$ING2" t1
sz=$(stat -c %s b.bin)
expect "A: tiny's first batch" 202 "$CODE"
"$SRV" --data "$PWD/node0" --store "$STORE" app set tiny "waiting-bytes=$((sz * 3 / 2))" > /dev/null
post $B tiny "$ING2" t1
expect "B: tiny's bytes (through A) count: 429" 429 "$CODE"
expect_grep "B's 429 names the waiting-bytes quota" "too many bytes waiting for uploads" \
  "$(jq -r .error <<< "$BODY")"

finish
