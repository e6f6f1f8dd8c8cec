#!/usr/bin/env bash
# An upload's build registration on a PostgreSQL store commits in a
# transaction of its own, never inside a round of batches (issue 19;
# server/pipeline/proc_internal.h W_ALONE_P, docs/benchmarks.md "What
# limits each configuration").
#
#   pg_register_alone_test.sh BUILD_DIR WORK_DIR
#
# The registration (builds row, methods rows) runs on the node that took
# the upload, with or without the build's advisory lock; inside a round of
# batches those rows stayed uncommitted for the round's length, and the
# build's writer on another node waited on them (seconds; two such rounds
# deadlocked). One node here, its commits slowed down
# (BEATLINE_TEST_COMMIT_DELAY_MS) so that a round stays open while the one
# before commits: batches of build x and method-ID uploads of builds y1..y4
# are sent interleaved. Checks: every registration's builds row was written
# by a transaction that wrote no batch (xmin of builds rows y* is the xmin
# of no batches row), every batch is counted once, every y* registered.
#
# PostgreSQL: the cluster at BEATLINE_TEST_PG_URL, else a throwaway one
# (tests/lib/pg.sh; skipped, 77, when it cannot start).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup reuse
sql() { timeout 20 psql -X -q -A -t -d "$STORE" -c "$1"; }

keys=$("$SRV" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
NODE_ENV=(BEATLINE_TEST_COMMIT_DELAY_MS=700)
start_node 0 # one node (data folder node0, log node0.log)
URL=${URLS[0]}

for i in $(seq 0 20); do echo "$i,1,com.example.C$((i % 3)) m$i ()V"; done > mids.txt
http PUT /v1/apps/shop/builds/x/method-ids "$UPL" --data-binary @mids.txt
expect "x's method-ID file" 201 "$CODE"

post() { nodes_post 0 "$1"; } # BUILD

# batches of x and uploads of y1..y4 interleaved: rounds of x stay open
# (the round before commits for 700 ms) while the uploads come
posted=0
for k in 1 2 3 4; do
  post x && [ "$CODE" = 202 ] && posted=$((posted + 1))
  post x && [ "$CODE" = 202 ] && posted=$((posted + 1))
  http PUT "/v1/apps/shop/builds/y$k/method-ids" "$UPL" --data-binary @mids.txt
  expect "y$k's method-ID file" 201 "$CODE"
  post x && [ "$CODE" = 202 ] && posted=$((posted + 1))
done
expect "every batch answered 202" 12 "$posted"

got=
for _ in $(seq 600); do # bounded: 60 s
  got=$(sql "SELECT (SELECT count(*) FROM batches) || ' ' ||
    (SELECT count(*) FROM builds WHERE name LIKE 'y%' AND methodids_count = 21) || ' ' ||
    (SELECT count(*) FROM raw_batches)")
  [ "$got" = "12 4 0" ] && break
  sleep 0.1
done
expect "12 batches counted, y1..y4 registered, the queue empty" "12 4 0" "$got"
expect "x counts 12 batches, once each" 12 \
  "$(sql "SELECT batches FROM builds WHERE name = 'x'")"
# the registrations' transactions wrote no batch (xmin: the inserting
# transaction of a row version; builds rows y* are not written again)
shared=$(sql "SELECT count(*) FROM builds y WHERE y.name LIKE 'y%'
  AND EXISTS (SELECT 1 FROM batches b WHERE b.xmin = y.xmin)")
expect "no registration committed inside a round of batches" 0 "$shared"
rounds=$(sql "SELECT count(DISTINCT xmin::text) FROM batches")
# (information for the log: the batches did share rounds)
echo "12 batches in $rounds round(s)"
if [ "$rounds" -ge 12 ]; then
  bad "every batch had a round of its own: the test did not exercise shared rounds"
fi
finish
