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
