#!/usr/bin/env bash
# An upload's registration on a PostgreSQL store with several nodes waits
# for the build's lock (issue 19; server/pipeline/proc_round.c
# reg_may_write, docs/benchmarks.md "What limits each configuration").
#
#   nodes_register_test.sh BUILD_DIR WORK_DIR
#
# The node that takes an upload registers the build (its builds row,
# methods rows). When another node holds the build's lock and processes
# it, that node's round may hold the build's new rows uncommitted for
# seconds, and the registering writer waited on them (in the 3-node
# benchmark a node stood still for 19 s of 23). Two nodes A and B on one
# database: A processes batches of build x (its commits slowed down,
# BEATLINE_TEST_COMMIT_DELAY_MS, so that it holds x's lock the while); a
# new method-ID file of x is uploaded through B. A trigger on builds notes,
# for every write of x's methodids_hash, whether another session held an
# advisory lock then. Checks: the registration was written, but never while
# A held x's lock; every batch counted once.
#
# PostgreSQL: the cluster at BEATLINE_TEST_PG_URL, else a throwaway one
# (tests/lib/pg.sh; skipped, 77, when it cannot start).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup reuse
sql() { timeout 20 psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$STORE" -c "$1"; }

keys=$("$SRV" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")

# node 0 = A (its commits slowed down), 1 = B
NODE_ENV=(BEATLINE_TEST_COMMIT_DELAY_MS=600)
start_node 0
NODE_ENV=()
start_node 1

# every write of a builds row's methodids_hash: by whom, and whether
# another session held an advisory lock on this database (a build lock: the only
# ones here; on a cluster shared by other tests, their databases' locks are not counted)
sql "CREATE TABLE reg_log (name text, others bigint, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION reg_log_f() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  INSERT INTO reg_log(name, others) SELECT NEW.name, count(*) FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database());
  RETURN NEW;
END \$\$;
CREATE TRIGGER reg_log_t AFTER UPDATE OF methodids_hash ON builds
  FOR EACH ROW WHEN (OLD.methodids_hash IS DISTINCT FROM NEW.methodids_hash)
  EXECUTE FUNCTION reg_log_f();" > /dev/null

post() { nodes_post "$@"; } # NODE BUILD

for i in $(seq 0 20); do echo "$i,1,com.example.C$((i % 3)) m$i ()V"; done > mids1.txt
for i in $(seq 0 30); do echo "$i,1,com.example.D$((i % 3)) n$i ()V"; done > mids2.txt
URL=${URLS[0]}
http PUT /v1/apps/shop/builds/x/method-ids "$UPL" --data-binary @mids1.txt
expect "x's first method-ID file, through A" 201 "$CODE"
posted=0
post 0 x && [ "$CODE" = 202 ] && posted=$((posted + 1))
# A holds x's lock once it processes x
held=
for _ in $(seq 300); do # bounded: 30 s
  held=$(sql "SELECT count(*) FROM batches")
  [ "$held" -ge 1 ] && break
  sleep 0.1
done
expect "A processed x's first batch" 1 "$held"
expect "x registered once, by A (no other lock then)" "x|0" "$(sql "SELECT name, others FROM reg_log")"

# A keeps x busy (a batch every 0.3 s, each round's commit 600 ms) while
# x's new file goes through B
URL=${URLS[1]}
http PUT "/v1/apps/shop/builds/x/method-ids?replace=true" "$UPL" --data-binary @mids2.txt
expect "x's second method-ID file, through B" 200 "$CODE"
for _ in $(seq 12); do
  post 0 x && [ "$CODE" = 202 ] && posted=$((posted + 1))
  sleep 0.3
done
got=
for _ in $(seq 600); do # bounded: 60 s
  got=$(sql "SELECT (SELECT count(*) FROM batches) || ' ' || (SELECT count(*) FROM reg_log)
    || ' ' || (SELECT methodids_count FROM builds WHERE name = 'x')")
  [ "$got" = "$posted 2 31" ] && break
  sleep 0.1
done
expect "every batch counted, x registered again with its second file" "$posted 2 31" "$got"
expect "every batch answered 202" 13 "$posted"
expect "no registration of x written while another node held a build lock" 0 \
  "$(sql "SELECT count(*) FROM reg_log WHERE others > 0")"
expect "x counts its batches once" "$posted" "$(sql "SELECT batches FROM builds WHERE name = 'x'")"
finish
