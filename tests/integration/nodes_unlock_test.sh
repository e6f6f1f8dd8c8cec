#!/usr/bin/env bash
# A build lock whose unlock fails is kept track of and let go later (issue
# 19; server/pipeline/proc_queue.c pr_q_locks, docs/architecture.md
# "Advisory locks: one writer per build").
#
#   nodes_unlock_test.sh BUILD_DIR WORK_DIR
#
# A node lets go of the advisory locks of builds idle for 5 s. When one
# unlock failed, the node gave up on the others of that round, which it had
# taken out of its held set already: those builds stayed locked by its
# session, unknown to it, and no node could ever claim their batches while
# it lived. One node here, connected as a role of its own that owns the
# database (a throwaway PostgreSQL: tests/lib/pg.sh; skipped, 77, when it
# cannot start): builds x and y processed (2 locks held); then
# pg_advisory_unlock is refused to the role (REVOKE EXECUTE, per database)
# until the node has tried to let go of both; then allowed again. Checks:
# both locks are let go within a bounded time; the node logged the failure;
# batches posted after it are counted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup
SU_STORE=$STORE
DB=${STORE##*/}
su_sql() { timeout 20 psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$SU_STORE" -c "$1"; }
su_sql "CREATE ROLE bl_node LOGIN; ALTER DATABASE $DB OWNER TO bl_node" > /dev/null
STORE=${SU_STORE/\/\/postgres@/\/\/bl_node@}
expect "the node's URL names its role" 1 "$(grep -c '//bl_node@' <<< "$STORE")"
locks() { # advisory locks granted in this database (the build locks)
  su_sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
}

keys=$("$SRV" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
start_node 0
URL=${URLS[0]}

post() { # BUILD
  nodes_post 0 "$1"
  expect "batch $N of $1 answered" 202 "$CODE"
}
counted() { # N: waits (bounded) until N batches are counted
  local got=
  for _ in $(seq 300); do # bounded: 30 s
    got=$(su_sql "SELECT count(*) FROM batches")
    [ "$got" -ge "$1" ] && break
    sleep 0.1
  done
  echo "$got"
}

for i in $(seq 0 20); do echo "$i,1,com.example.C$((i % 3)) m$i ()V"; done > mids.txt
for b in x y; do
  http PUT "/v1/apps/shop/builds/$b/method-ids" "$UPL" --data-binary @mids.txt
  expect "$b's method-ID file" 201 "$CODE"
done
post x
post y
expect "x and y counted" 2 "$(counted 2)"
expect "the node holds both builds' locks" 2 "$(locks)"

# the node lets go of idle builds after 5 s: refused meanwhile
su_sql "REVOKE EXECUTE ON FUNCTION pg_advisory_unlock(bigint) FROM PUBLIC" > /dev/null
tried=0
for _ in $(seq 300); do # bounded: 30 s
  if grep -q 'advisory unlock\|cannot let it go' node0.log; then
    tried=1
    break
  fi
  sleep 0.1
done
expect "the node tried to let go of the idle builds, and failed" 1 "$tried"
# an open of the store that cannot let go of the migration lock fails (a
# server going on with it would hold every other node's start, waiting in
# pg_advisory_lock, for as long as it lived; server/store/db.c pg_migrate)
rc=0
timeout 20 "$SRV" --data "$PWD/node9" --store "$STORE" app list > list.out 2> list.err || rc=$?
expect "an open that cannot release the migration lock fails" 1 "$([ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && echo 1 || echo "0 (exit $rc)")"
expect "and says why" 1 "$(grep -c 'cannot release the migration lock' list.err)"
sleep 1 # the rest of that lock round
su_sql "GRANT EXECUTE ON FUNCTION pg_advisory_unlock(bigint) TO PUBLIC" > /dev/null
n=
for _ in $(seq 300); do # bounded: 30 s
  n=$(locks)
  [ "$n" = 0 ] && break
  sleep 0.1
done
expect "both build locks let go once unlocking works again (none left behind)" 0 "$n"
post x
post y
expect "batches posted after it are counted" 4 "$(counted 4)"
if grep -q 'AddressSanitizer\|runtime error' node0.log; then
  bad "sanitizer: $(grep -m3 'AddressSanitizer\|runtime error' node0.log)"
fi
finish
