# Shared set-up of the two-node PostgreSQL tests (sourced after lib.sh's
# `setup "$@"`): a throwaway cluster (tests/lib/pg.sh; the test is skipped,
# exit 77, when PostgreSQL cannot start here), a fresh database, and nodes
# started on it.
#
#   nodes_pg_setup           PIDS/URLS arrays, an EXIT trap that stops the
#                            nodes (stopped ones continued first) and the
#                            cluster, STORE (the database's URL)
#   start_node I             starts node I (data folder node$I, log
#                            node$I.log) on STORE, URLS[I] its base URL;
#                            fails the test when it does not listen in 20 s
. "$HERE/../lib/pg.sh"

PIDS=()
URLS=()

nodes_cleanup() {
  local i
  for i in "${!PIDS[@]}"; do
    [ -n "${PIDS[$i]}" ] || continue # already stopped by the test
    kill -CONT "${PIDS[$i]}" 2> /dev/null || true
    kill "${PIDS[$i]}" 2> /dev/null || true
    wait "${PIDS[$i]}" 2> /dev/null || true
  done
  pg_stop
}

nodes_pg_setup() {
  trap nodes_cleanup EXIT
  if ! pg_start "$PWD" 2> pg-start.log; then
    echo "PostgreSQL cannot start here: skipped ($(tail -2 pg-start.log))"
    finish 77
  fi
  STORE=$(pg_new_db)
}

start_node() { # i
  local i=$1
  rm -f "port$i.txt"
  "$BIN/beatline-server" --data "$PWD/node$i" --store "$STORE" --listen 127.0.0.1:0 \
    --port-file "port$i.txt" 2>> "node$i.log" &
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
