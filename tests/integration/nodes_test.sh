#!/usr/bin/env bash
# Several beatline-server nodes on one PostgreSQL store (issue 19,
# "stateless nodes"; docs/architecture.md "Several nodes on PostgreSQL").
#
#   nodes_test.sh BUILD_DIR WORK_DIR
#
# Starts a throwaway PostgreSQL cluster (tests/lib/pg.sh; skipped, 77, when
# it cannot start) and three servers with their own data folders sharing
# one database. Batches of three builds are POSTed round-robin to the
# nodes. Checks:
#   1. every batch answered 202 is counted exactly once (the builds'
#      batches/records from GET …/builds, and the slow-methods counts, are
#      the same whichever node answers them), and the queue is empty;
#   2. a node killed (kill -9) at random moments under load, 10 times, and
#      restarted: every 202 still counted exactly once, and the batches the
#      dead node had leased (raw_batches.lease_owner, read just before the
#      kill) are processed by another node;
#   3. PostgreSQL stopped at once (pg_ctl stop -m immediate) while batches
#      are posted, then started again: the nodes reconnect, and every 202 is
#      counted exactly once.
# A POST that got no answer (its node died, or the database was away) is
# sent again to another node: the batch then answers 202 or 200 duplicate
# and must be counted once either way. Every wait is bounded.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/../lib/pg.sh"

NODES=3
PIDS=()
URLS=()
cleanup() {
  for i in $(seq 0 $((NODES - 1))); do
    if [ -n "${PIDS[$i]:-}" ]; then
      kill "${PIDS[$i]}" 2> /dev/null || true
      wait "${PIDS[$i]}" 2> /dev/null || true
    fi
  done
  pg_stop
}
trap cleanup EXIT

if ! pg_start "$PWD" 2> pg-start.log; then
  echo "PostgreSQL cannot start here: skipped ($(tail -2 pg-start.log))"
  finish 77
fi
STORE=$(pg_new_db)
DBNAME=${STORE##*/}
# the test cluster commits asynchronously (pg.sh, speed); an immediate stop
# would lose acknowledged commits, which no real installation does
psql -X -q -d "$STORE" -c "ALTER DATABASE $DBNAME SET synchronous_commit = on" > /dev/null
sql() { timeout 20 psql -X -q -A -t -d "$STORE" -c "$1"; }

# node i: data folder node$i, log node$i.log; sets PIDS[i] and URLS[i]
start_node() {
  local i=$1
  rm -f "port$i.txt"
  # commits slowed down (test only): rounds stay open longer, so a kill
  # finds claimed batches in flight
  BEATLINE_TEST_COMMIT_DELAY_MS=150 "$BIN/beatline-server" --data "$PWD/node$i" \
    --store "$STORE" --listen 127.0.0.1:0 --port-file "port$i.txt" 2>> "node$i.log" &
  PIDS[i]=$!
  for _ in $(seq 400); do
    [ -s "port$i.txt" ] && break
    sleep 0.05
  done
  if [ ! -s "port$i.txt" ]; then
    bad "node $i did not start: $(tail -5 "node$i.log")"
    finish
  fi
  URLS[i]="http://127.0.0.1:$(cat "port$i.txt")"
}

keys=$("$BIN/beatline-server" --data "$PWD/node0" --store "$STORE" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
RD=$(jq -r .read_key <<< "$keys")
for i in $(seq 0 $((NODES - 1))); do start_node "$i"; done

cat > ids.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
2,1,com.example.Main step (I)V
EOF
BUILDS=(b1 b2 b3)
n=0
for b in "${BUILDS[@]}"; do # uploads through different nodes: files are in the database
  code=$(curl -s -o /dev/null -w '%{http_code}' -m 20 -X PUT -H "Authorization: Bearer $UPL" \
    --data-binary @ids.txt "${URLS[$((n % NODES))]}/v1/apps/shop/builds/$b/method-ids")
  expect "method-ids of $b" 201 "$code"
  n=$((n + 1))
done

# batch K: build b(K mod 3), one chain of nested calls run → step → run …
# of depth d(K) = 1 + (K / 3) mod 24: the successive batches of a build go
# one level deeper each, so new call-path nodes of a build are made all
# along, by whichever node processes it (a node writing with a stale view
# of the build's nodes would break its tree)
depth() { echo $((1 + ($1 / 3) % 24)); }
make_batch() { # K -> batch-K.bin, prints its uuid
  local k=$1 u d j rec=
  d=$(depth "$k")
  for ((j = 0; j < d; j++)); do rec+="[$((1 + j % 2)),\"i\",$((j * 10))],"; done
  for ((j = d - 1; j >= 0; j--)); do rec+="[$((1 + j % 2)),\"o\",$((10 * d + (d - 1 - j) * 10))],"; done
  u=$(printf '7e57%04x-0000-4000-8000-%012d' "$((k / 100000))" "$k")
  printf '{"batch_id":"%s","app":"shop","build":"%s","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[%s]}],"events":[]}' \
    "$u" "${BUILDS[$((k % 3))]}" "${rec%,}" | "$BIN/beatline-batch" encode > "batch-$k.bin"
  echo "$u"
}
# per build (0..2), over acknowledged batches: how many, sum and max of depths
BN=(0 0 0)
BSUM=(0 0 0)
BMAX=(0 0 0)
SUM_D=0
acked() { # K
  local d b=$(($1 % 3))
  d=$(depth "$1")
  ACKED=$((ACKED + 1))
  BN[b]=$((BN[b] + 1))
  BSUM[b]=$((BSUM[b] + d))
  [ "$d" -gt "${BMAX[$b]}" ] && BMAX[b]=$d
  SUM_D=$((SUM_D + d))
}

ACKED=0      # batches answered 202 (or 200 duplicate after a lost answer)
ACK202=0     # of which 202
NEXT=0       # round-robin position
alive() { [ -n "${PIDS[$1]:-}" ] && kill -0 "${PIDS[$1]}" 2> /dev/null; }
# post batch K to the nodes in turn until one answers 202 or 200 duplicate
# (at most 60 tries over ~30 s: nodes restarting, the database away)
post_batch() {
  local k=$1 tries code first=1
  for tries in $(seq 60); do
    local i=$((NEXT % NODES))
    NEXT=$((NEXT + 1))
    if ! alive "$i"; then continue; fi
    code=$(curl -s -o post.out -w '%{http_code}' -m 10 -X POST \
      -H "Authorization: Bearer $ING" --data-binary @"batch-$k.bin" \
      "${URLS[$i]}/v1/apps/shop/batches" 2> /dev/null || true)
    if [ "$code" = 202 ]; then
      acked "$k"
      ACK202=$((ACK202 + 1))
      return 0
    fi
    if [ "$code" = 200 ] && [ "$(jq -r .duplicate post.out 2> /dev/null)" = true ]; then
      if [ "$first" = 1 ]; then
        bad "batch $k: a duplicate at its first POST"
      fi
      acked "$k" # stored by a POST whose answer was lost
      return 0
    fi
    first=0 # no answer, or 503 (database away): it may be stored; sent again
    sleep 0.5
  done
  bad "batch $k: no node took it in 60 tries"
}

# the builds' processed batches and records summed (node i's answer)
counts() { # node -> "batches records"
  curl -s -m 10 -H "Authorization: Bearer $RD" "${URLS[$1]}/v1/apps/shop/builds" |
    jq -r '[.builds[] | .batches] as $b | [.builds[] | .records] as $r |
           "\($b | add // 0) \($r | add // 0)"' 2> /dev/null || echo "? ?"
}
# waits (bounded: 180 s) until node i counts exactly what was acknowledged
wait_counted() { # what
  local want="$ACKED $((SUM_D * 2))" got= i
  for _ in $(seq 360); do
    for i in $(seq 0 $((NODES - 1))); do
      if alive "$i"; then got=$(counts "$i"); break; fi
    done
    [ "$got" == "$want" ] && break
    sleep 0.5
  done
  expect "$1: batches and records counted once (batches records)" "$want" "$got"
  # the same answer from every node, and nothing left in the queue
  for i in $(seq 0 $((NODES - 1))); do
    alive "$i" && expect "$1: node $i answers the same" "$want" "$(counts "$i")"
  done
  expect "$1: queue empty (live failed)" "0 0" \
    "$(sql "SELECT count(*) FILTER (WHERE failed_at IS NULL) || ' ' || count(*) FILTER (WHERE failed_at IS NOT NULL) FROM raw_batches")"
  expect "$1: batches table = acknowledged" "$ACKED" "$(sql "SELECT count(*) FROM batches")"
  # each build's call tree is whole and the same on every node: one chain
  # as deep as the deepest batch, every batch counted once on each level it
  # reached (a path node written twice, or ids mixed up between nodes
  # writing one build, would break it): "roots nodes root-count sum"
  local bi want_t
  for bi in 0 1 2; do
    want_t="1 ${BMAX[$bi]} ${BN[$bi]} ${BSUM[$bi]}"
    for i in $(seq 0 $((NODES - 1))); do
      alive "$i" || continue
      expect "$1: call tree of ${BUILDS[$bi]} on node $i" "$want_t" "$(curl -s -m 10 \
        -H "Authorization: Bearer $RD" \
        "${URLS[$i]}/v1/apps/shop/call-tree?build=${BUILDS[$bi]}&format=columns&max_depth=100" |
        jq -r '"\([.parent[] | select(. == -1)] | length) \(.nodes) \(.count[0]) \(.count | add)"')"
    done
  done
}

# ---- 1. round-robin, all nodes up ----
for k in $(seq 1 90); do make_batch "$k" > /dev/null; post_batch "$k"; done
expect "90 batches acknowledged" 90 "$ACKED"
wait_counted "round-robin"
# slow methods: every call counted once, on every node the same
sm() {
  curl -s -m 10 -H "Authorization: Bearer $RD" "${URLS[$1]}/v1/apps/shop/slow-methods?limit=10" |
    jq -r '[.methods[] | .count] | add // 0' 2> /dev/null
}
expect "slow-methods calls (node 0)" "$SUM_D" "$(sm 0)"
expect "slow-methods calls (node 2)" "$SUM_D" "$(sm 2)"
# every node took part in the processing (three builds, per-build locks)
processed_by=0
for i in $(seq 0 $((NODES - 1))); do
  m=$(curl -s -m 10 "${URLS[$i]}/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "${m:-0}" -gt 0 ] && processed_by=$((processed_by + 1))
done
[ "$processed_by" -ge 2 ] && ok || bad "only $processed_by node(s) processed batches"

# ---- 2. kill -9 of a node at random moments under load, 10 times ----
k=1000
LEASED_ALL=()
for round in $(seq 10); do
  burst=$((5 + RANDOM % 20))
  for _ in $(seq "$burst"); do
    k=$((k + 1))
    make_batch "$k" > /dev/null
    post_batch "$k"
  done
  victim=$((RANDOM % NODES))
  # the rows the victim leases right now (its lease owner name ends in :PID:…)
  mapfile -t leased < <(sql "SELECT batch_id FROM raw_batches WHERE lease_owner LIKE '%:${PIDS[$victim]}:%' AND failed_at IS NULL")
  kill -9 "${PIDS[$victim]}"
  wait "${PIDS[$victim]}" 2> /dev/null || true
  LEASED_ALL+=("${leased[@]}")
  # more batches while it is down, then it comes back
  for _ in $(seq $((1 + RANDOM % 8))); do
    k=$((k + 1))
    make_batch "$k" > /dev/null
    post_batch "$k"
  done
  start_node "$victim"
done
# a batch may have been leased by two nodes killed one after the other
mapfile -t LEASED_ALL < <(printf '%s\n' "${LEASED_ALL[@]}" | sed '/^$/d' | sort -u)
echo "kills: ${#LEASED_ALL[@]} leased batch(es) held by killed nodes"
wait_counted "after 10 kills"
# the dead nodes' leased batches were processed (by the others or their successors)
if [ "${#LEASED_ALL[@]}" -gt 0 ]; then
  list=$(printf "'%s'," "${LEASED_ALL[@]}")
  expect "leased batches of dead nodes processed" "${#LEASED_ALL[@]}" \
    "$(sql "SELECT count(*) FROM batches WHERE batch_id IN (${list%,})")"
else
  bad "no killed node held a lease: the kills did not happen under load"
fi

# ---- 3. PostgreSQL stopped at once while posting, then started again ----
PGBIN=$(_pg_bin)
k=5000
for _ in $(seq 10); do k=$((k + 1)); make_batch "$k" > /dev/null; post_batch "$k"; done
_pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop > /dev/null 2>&1 ||
  bad "pg_ctl stop -m immediate"
# posts while it is down: refused with 503 + Retry-After (the store is
# unavailable, docs/api.md), never a 202, never a 500
down=0
codes=""
for _ in $(seq 3); do
  k=$((k + 1))
  make_batch "$k" > /dev/null
  code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H "Authorization: Bearer $ING" \
    --data-binary @"batch-$k.bin" "${URLS[0]}/v1/apps/shop/batches" || true)
  [ "$code" != 202 ] && down=$((down + 1))
  codes="$codes $code"
done
expect "no 202 while PostgreSQL is down" 3 "$down"
expect "503 while PostgreSQL is down" " 503 503 503" "$codes"
_pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off -c max_connections=200 -c shared_buffers=32MB" \
  start > /dev/null 2>&1 || bad "PostgreSQL did not start again"
# the batches refused while it was down are sent again, then some more
for j in $(seq $((k - 2)) $((k + 10))); do
  [ -f "batch-$j.bin" ] || make_batch "$j" > /dev/null
  post_batch "$j"
done
wait_counted "after a PostgreSQL restart"
for i in $(seq 0 $((NODES - 1))); do
  alive "$i" || bad "node $i died during the PostgreSQL restart: $(tail -3 "node$i.log")"
done
echo "acknowledged $ACKED batches ($ACK202 answered 202)"
finish
