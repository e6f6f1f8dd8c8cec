# Shared set-up of the two-node PostgreSQL tests (sourced after lib.sh's
# `setup "$@"`): a cluster (tests/lib/pg.sh; the test is skipped, exit 77,
# when PostgreSQL cannot start here), a fresh database, and nodes started
# on it.
#
#   nodes_pg_setup [reuse]   PIDS/URLS arrays, an EXIT trap that stops the
#                            nodes (stopped ones continued first) and then
#                            the cluster or the database, STORE (the
#                            database's URL), SRV (the server binary).
#                            Without `reuse` a throwaway cluster of the
#                            test's own (for tests that must own it); with
#                            it the cluster at BEATLINE_TEST_PG_URL when
#                            set (its database dropped at the end), else a
#                            throwaway one
#   start_node I [ARG...]    starts node I (data folder node$I, log
#                            node$I.log) on STORE with the extra server
#                            arguments ARG…, and NODE_ENV (an array of
#                            NAME=VALUE, empty by default) in its
#                            environment; URLS[I] its base URL; fails the
#                            test when it does not listen in 20 s
#   nodes_post I BUILD       POSTs a new batch of app "shop" (key ING) and
#                            build BUILD to node I (URL set to its base URL):
#                            CODE, BODY, HDRS as lib.sh's http; batch ids
#                            from the counter N; one main thread calling
#                            methodIds 0 and 1
. "$HERE/../lib/pg.sh"

PIDS=()
URLS=()
NODE_ENV=()
NODES_OWN_PG=
STORE=
SRV=${BIN_REAL:-$BIN}/beatline-server

nodes_cleanup() {
  local i
  for i in "${!PIDS[@]}"; do
    [ -n "${PIDS[$i]}" ] || continue # already stopped by the test
    kill -CONT "${PIDS[$i]}" 2> /dev/null || true
    kill "${PIDS[$i]}" 2> /dev/null || true
    wait "${PIDS[$i]}" 2> /dev/null || true
  done
  if [ -n "$NODES_OWN_PG" ]; then
    pg_stop
  elif [ -n "$STORE" ]; then
    pg_drop_db "$STORE"
  fi
  return 0
}

nodes_pg_setup() {
  trap nodes_cleanup EXIT
  if [ "${1:-}" != reuse ] || [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
    if ! pg_start "$PWD" 2> pg-start.log; then
      echo "PostgreSQL cannot start here: skipped ($(tail -2 pg-start.log))"
      finish 77
    fi
    NODES_OWN_PG=1
  fi
  STORE=$(pg_new_db)
}

start_node() { # I [ARG...]
  local i=$1
  shift
  rm -f "port$i.txt"
  env ${NODE_ENV[@]+"${NODE_ENV[@]}"} "$SRV" --data "$PWD/node$i" --store "$STORE" \
    --listen 127.0.0.1:0 --port-file "port$i.txt" "$@" 2>> "node$i.log" &
  PIDS[i]=$!
  for _ in $(seq 400); do # bounded: 20 s
    [ -s "port$i.txt" ] && break
    sleep 0.05
  done
  if [ ! -s "port$i.txt" ]; then
    bad "node $i did not start: $(tail -5 "node$i.log")"
    finish
  fi
  URLS[i]="http://127.0.0.1:$(cat "port$i.txt")"
}

N=0
nodes_post() { # I BUILD
  N=$((N + 1))
  local uuid
  uuid=$(printf '%08x-0000-4000-8000-%012x' "$N" "$N")
  cat > b.json << JSON
{"batch_id":"$uuid","app":"shop","build":"$2","session_id":"s","origin_wall_us":1795960000000000,
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,
  "records":[[0,"i",0],[1,"i",2],[1,"o",8],[0,"o",10]]}],
 "events":[]}
JSON
  "$BIN/beatline-batch" encode < b.json > b.bin
  URL=${URLS[$1]}
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
}
