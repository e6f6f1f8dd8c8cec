#!/usr/bin/env bash
# A node's cached state of a build whose builds row went under it (deleted
# by another node, e.g. one whose lost session still ran a deletion it had
# claimed) is dropped and made again: no batch answered 202 is leased for
# ever, none is counted into the deleted build (issue 19, docs/architecture.md
# "Several nodes on PostgreSQL").
#
#   nodes_stale_build_test.sh BUILD_DIR WORK_DIR
#
# Two nodes on one throwaway PostgreSQL (tests/lib/pg.sh; skipped, 77, when
# it cannot start). The deletions are made under node 0 in SQL, as a real
# one writes them (store/retention.c bl_rs_doom_build, the purge's row
# delete, bl_files_build_forget), while node 0 holds the build's lock and
# its state:
#   1. build x waits on node 0 for its method-ID file (3 batches leased);
#      its row is deleted (doomed and purged); method-ids are uploaded
#      through node 1, more batches of x and of another build z are posted
#      to node 0: every batch is counted exactly once in the new build x
#      (or z), the queue empties (waiting + leased 0) within a bounded time.
#   2. build r is ready on node 0 (its batches counted); its row is doomed
#      (in the graveyard, not purged yet); method-ids again and two more
#      batches: they are counted in the new build r, not in the doomed one.
#   3. build q's registration keeps failing on node 0 (its cache folder there
#      replaced by a file) while 2 batches wait: their leases are given back
#      after PR_REG_FAILS_MAX failures; each ends counted or failed, visibly.
#   4. a trigger refuses one batch's row: after PR_ROUND_FAILS_MAX failed
#      rounds the batches go one per round; the refused one is failed with
#      its reason, the others counted; nothing stays leased.
#   5. a trigger refuses the delete of one batch's queue row, which the
#      committer makes in the round's transaction: the commit fails every
#      time; after PR_ROUND_FAILS_MAX failed commits the batches go one per
#      round, the refused one is failed with its reason after as many
#      alone, the others counted; nothing stays leased.
#   6. a deferred trigger makes the commit of build h's registration (an
#      upload's, no batch) fail every time: after PR_ROUND_FAILS_MAX failed
#      commits the registration is given up, not tried again for ever.
# Every wait is bounded.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup
sql() { timeout 20 psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$STORE" -c "$1"; }

keys=$("$BIN/beatline-server" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
RD=$(jq -r .read_key <<< "$keys")
APP=$(sql "SELECT id FROM apps WHERE name = 'shop'")
start_node 0
start_node 1
printf '# beatline method-ids v1 names=original\n1,1,com.example.Main run ()V\n2,1,com.example.Main step (I)V\n' > ids.txt

make_batch() { # K BUILD -> batch-K.bin
  printf '{"batch_id":"7e570000-0000-4000-8000-%012d","app":"shop","build":"%s","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[2,"i",10],[2,"o",20],[1,"o",30]]}],"events":[]}' \
    "$1" "$2" | "$BIN/beatline-batch" encode > "batch-$1.bin"
}
post() { # NODE K BUILD: posts, expects 202
  make_batch "$2" "$3"
  expect "batch $2 ($3) to node $1 answered" 202 "$(curl -s -o /dev/null -w '%{http_code}' -m 20 \
    -X POST -H "Authorization: Bearer $ING" --data-binary @"batch-$2.bin" \
    "${URLS[$1]}/v1/apps/shop/batches")"
}
upload() { # NODE BUILD
  expect "method-ids of $2 through node $1" 201 "$(curl -s -o up.out -w '%{http_code}' -m 20 \
    -X PUT -H "Authorization: Bearer $UPL" --data-binary @ids.txt \
    "${URLS[$1]}/v1/apps/shop/builds/$2/method-ids")"
}
counted() { # BUILD -> batches of the live build (0 when none; -1: no answer)
  local out
  out=$(curl -s -m 5 -H "Authorization: Bearer $RD" "${URLS[0]}/v1/apps/shop/builds" |
    jq -c --arg b "$1" '[.builds[] | select(.build == $b) | .batches] | add // 0' 2> /dev/null)
  echo "${out:--1}"
}
# a deletion as a node writes it (bl_rs_doom_build + bl_files_build_forget);
# PURGE 1: then the purge's delete of the row (its build had no data)
doom() { # BUILD PURGE
  local id
  id=$(sql "SELECT id FROM builds WHERE app_id = $APP AND name = '$1'")
  local purge=""
  [ "$2" = 1 ] && purge="DELETE FROM doomed_builds WHERE build_id = $id; DELETE FROM builds WHERE id = $id AND app_id = 0;"
  sql "BEGIN; INSERT INTO doomed_builds(build_id, app_id, name, reason, at) SELECT id, app_id, name, 'deleted', 0 FROM builds WHERE id = $id; UPDATE builds SET app_id = 0, name = CAST(id AS text) WHERE id = $id; DELETE FROM build_files WHERE app_id = $APP AND build = '$1'; $purge COMMIT;" > /dev/null
  echo "$id"
}
settle_queue() { # NAME [S]: waits (bounded: S s, 40) until no batch waits or is leased
  local n= end=$((SECONDS + ${2:-40}))
  for _ in $(seq $((${2:-40} * 10))); do # bounded
    n=$(sql "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL")
    [ "$n" = 0 ] || [ "$SECONDS" -ge "$end" ] && break
    sleep 0.1
  done
  expect "$1: queue empty (nothing waiting or leased for ever)" 0 "$n"
}
wait_counted() { # BUILD N
  local got= end=$((SECONDS + 30))
  for _ in $(seq 300); do # bounded: 30 s
    got=$(counted "$1")
    [ "$got" -ge "$2" ] || [ "$SECONDS" -ge "$end" ] && break
    sleep 0.1
  done
  echo "$got"
}

# ---- 1. waiting batches of a build whose row is deleted under the node
kill -STOP "${PIDS[1]}" # node 0 takes build x's lock and its batches
for k in 1 2 3; do post 0 "$k" x; done
n=
for _ in $(seq 100); do # bounded: 10 s
  n=$(sql "SELECT count(*) FROM raw_batches WHERE lease_owner IS NOT NULL")
  [ "$n" = 3 ] && break
  sleep 0.1
done
expect "node 0 leased the 3 batches of x (waiting for its method-ID file)" 3 "$n"
kill -CONT "${PIDS[1]}"
old_x=$(doom x 1)
expect "x's row is gone" 0 "$(sql "SELECT count(*) FROM builds WHERE id = $old_x")"
upload 1 x # a new row for x, its file in the store
for k in 4 5; do post 0 "$k" x; done
for k in 6 7; do post 0 "$k" z; done
upload 1 z
settle_queue "stale waiting build"
expect "x counts its 5 batches once" 5 "$(wait_counted x 5)"
expect "z counts its 2 batches" 2 "$(wait_counted z 2)"
expect "no batch is counted twice" 0 \
  "$(sql "SELECT count(*) FROM (SELECT batch_id FROM batches GROUP BY batch_id HAVING count(*) > 1) d")"
expect "the 7 batches are in live builds" 7 \
  "$(sql "SELECT count(*) FROM batches b JOIN builds u ON u.id = b.build_id WHERE u.app_id <> 0")"

# ---- 2. a ready build whose row is doomed under the node (not purged)
# (through node 0: node 1 is stopped below, never in the middle of a
# registration whose transaction would hold r's new row)
upload 0 r
kill -STOP "${PIDS[1]}" # node 0 takes build r's lock and processes it
for k in 11 12; do post 0 "$k" r; done
expect "r counts its first 2 batches" 2 "$(wait_counted r 2)"
old_r=$(doom r 0)
kill -CONT "${PIDS[1]}"
upload 1 r
for k in 13 14; do post 0 "$k" r; done
settle_queue "stale ready build"
expect "the new r counts the 2 batches posted after its deletion" 2 "$(wait_counted r 2)"
expect "the doomed r gets no batch after its deletion" 2 \
  "$(sql "SELECT count(*) FROM batches WHERE build_id = $old_r")"
expect "nothing failed in the queue" 0 "$(sql "SELECT count(*) FROM raw_batches")"

# ---- 3. a build whose registration keeps failing on node 0 (its cache
#      folder there replaced by a file) while 2 batches of it wait: their
#      leases are given back after PR_REG_FAILS_MAX failures, never renewed
#      for ever; each ends counted (another node) or failed, visibly
kill -STOP "${PIDS[1]}"
for k in 21 22; do post 0 "$k" q; done
n=
for _ in $(seq 100); do # bounded: 10 s
  n=$(sql "SELECT count(*) FROM raw_batches WHERE lease_owner IS NOT NULL")
  [ "$n" = 2 ] && break
  sleep 0.1
done
expect "node 0 leased the 2 batches of q (waiting for its method-ID file)" 2 "$n"
kill -CONT "${PIDS[1]}"
qdir="$PWD/node0/builds/$APP/$(printf q | sha256sum | cut -d' ' -f1)"
rm -rf "$qdir"
mkdir -p "$(dirname "$qdir")"
echo "not a folder" > "$qdir"
upload 1 q
settle_queue "registration failing on node 0"
failed=$(sql "SELECT count(*) FROM raw_batches WHERE failed_at IS NOT NULL")
expect "q's 2 batches each counted or failed" 2 "$(($(counted q) + failed))"
expect "q's failed batches (if any) give the registration's failure as their reason" "$failed" \
  "$(sql "SELECT count(*) FROM raw_batches WHERE failed_at IS NOT NULL AND error LIKE '%registration of its build failed%'")"
mfailed=$(curl -s -m 10 "${URLS[1]}/metrics" | awk '/^beatline_queue_batches_failed /{print $2}')
expect "the failed ones are in /metrics" "$failed" "${mfailed%.*}"

# ---- 4. a batch whose round fails every time on an SQL error (a trigger
#      refuses its batches row): the round's batches go one per round after
#      PR_ROUND_FAILS_MAX failures, the broken one is failed after as many
#      alone; the others are counted; nothing stays leased
refuse_fn=$(cat << 'EOS'
CREATE FUNCTION bl_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF CAST(NEW.batch_id AS text) = '7e570000-0000-4000-8000-000000000031' THEN
    RAISE EXCEPTION 'refused by the test';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER bl_test_refuse BEFORE INSERT ON batches
  FOR EACH ROW EXECUTE FUNCTION bl_test_refuse();
EOS
)
sql "$refuse_fn" > /dev/null
upload 0 f
for k in 31 32 33; do post 0 "$k" f; done
settle_queue "round failing every time" 90
expect "f counts the 2 batches that can be committed" 2 "$(wait_counted f 2)"
expect "the refused batch is failed, with its reason" 1 \
  "$(sql "SELECT count(*) FROM raw_batches WHERE batch_id = '7e570000-0000-4000-8000-000000000031' AND failed_at IS NOT NULL AND error LIKE '%failed repeatedly%'")"
sql "DROP TRIGGER bl_test_refuse ON batches; DROP FUNCTION bl_test_refuse()" > /dev/null

# ---- 5. a batch whose round's commit fails every time (a trigger refuses
#      the delete of its queue row, made in the committer's transaction)
refuse_fn=$(cat << 'EOS'
CREATE FUNCTION bl_test_refuse_q() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.batch_id = '7e570000-0000-4000-8000-000000000042' THEN
    RAISE EXCEPTION 'queue row delete refused by the test';
  END IF;
  RETURN OLD;
END $$;
CREATE TRIGGER bl_test_refuse_q BEFORE DELETE ON raw_batches
  FOR EACH ROW EXECUTE FUNCTION bl_test_refuse_q();
EOS
)
sql "$refuse_fn" > /dev/null
upload 0 g
for k in 41 42 43; do post 0 "$k" g; done
settle_queue "commit failing every time" 90
expect "g counts the 2 batches that can be committed" 2 "$(wait_counted g 2)"
expect "the batch whose commit fails is failed, with its reason" 1 \
  "$(sql "SELECT count(*) FROM raw_batches WHERE batch_id = '7e570000-0000-4000-8000-000000000042' AND failed_at IS NOT NULL AND error LIKE '%commit failed repeatedly%'")"
sql "DROP TRIGGER bl_test_refuse_q ON raw_batches; DROP FUNCTION bl_test_refuse_q()" > /dev/null

# ---- 6. a registration whose commit fails every time (a deferred trigger
#      refuses build h's row updates at COMMIT); no batch of h
refuse_fn=$(cat << 'EOS'
CREATE FUNCTION bl_test_refuse_h() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.name = 'h' THEN
    RAISE EXCEPTION 'build h refused at commit by the test';
  END IF;
  RETURN NEW;
END $$;
CREATE CONSTRAINT TRIGGER bl_test_refuse_h AFTER UPDATE ON builds
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bl_test_refuse_h();
EOS
)
sql "$refuse_fn" > /dev/null
upload 0 h
given=0
for _ in $(seq 600); do # bounded: 60 s
  grep -q "build h: its registration's commit failed" node0.log && given=1 && break
  sleep 0.1
done
expect "h's registration given up after its commit failed repeatedly" 1 "$given"
c1=$(grep -c "build h refused at commit" node0.log || true)
sleep 3 # a registration tried again would fail once a second
expect "h's registration is not tried again for ever" "$c1" \
  "$(grep -c "build h refused at commit" node0.log || true)"
sql "DROP TRIGGER bl_test_refuse_h ON builds; DROP FUNCTION bl_test_refuse_h()" > /dev/null

# ---- 7. batches waiting for their build's files (w: none uploaded) whose
#      round's commit fails every time (a deferred trigger refuses build w's
#      row, which the round's registration of w writes): the round's batches
#      go one per round, each failed alone after as many failures, not tried
#      again for ever (the rollback queued them again each time)
refuse_fn=$(cat << 'EOS'
CREATE FUNCTION bl_test_refuse_w() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.name = 'w' THEN
    RAISE EXCEPTION 'build w refused at commit by the test';
  END IF;
  RETURN NEW;
END $$;
CREATE CONSTRAINT TRIGGER bl_test_refuse_w AFTER INSERT OR UPDATE ON builds
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bl_test_refuse_w();
EOS
)
sql "$refuse_fn" > /dev/null
kill -STOP "${PIDS[1]}" # node 0 takes both
for k in 71 72; do post 0 "$k" w; done
settle_queue "waiting batches whose round's commit fails every time" 90
kill -CONT "${PIDS[1]}"
expect "w's 2 batches are failed, with the reason" 2 \
  "$(sql "SELECT count(*) FROM raw_batches WHERE batch_id IN ('7e570000-0000-4000-8000-000000000071', '7e570000-0000-4000-8000-000000000072') AND failed_at IS NOT NULL AND error LIKE '%commit failed repeatedly%'")"
sql "DROP TRIGGER bl_test_refuse_w ON builds; DROP FUNCTION bl_test_refuse_w()" > /dev/null
if grep -q 'AddressSanitizer\|runtime error' node0.log node1.log; then
  bad "sanitizer: $(grep -m3 'AddressSanitizer\|runtime error' node0.log node1.log)"
fi
finish
