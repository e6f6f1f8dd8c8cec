#!/usr/bin/env bash
# The store's write path on PostgreSQL (issue 19): the same writer
# transactions, rebuild steps and expiry through SQLite and PostgreSQL give
# the same rows (tests/unit/rollups_pg_test.c, run against a throwaway
# PostgreSQL started here: initdb + pg_ctl in WORK on a free loopback port,
# as user postgres when run as root).
#   tests/integration/pg_write_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  bad "no PostgreSQL server binaries (scripts/install-deps installs postgresql)"
  finish
fi
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
PGD="$PWD/pg"
mkdir -p "$PGD"
[ "$(id -u)" = 0 ] && chown postgres "$PGD" && chmod 755 "$PWD"
PGPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pg_stop() { as_pg "$PGBIN/pg_ctl" -D "$PGD/data" -m immediate stop > /dev/null 2>&1 || true; }
trap 'stop_server; pg_stop' EXIT
as_pg "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres > "$PGD/initdb.log" 2>&1 ||
  { bad "initdb: $(tail -3 "$PGD/initdb.log")"; finish; }
as_pg "$PGBIN/pg_ctl" -D "$PGD/data" -w -t 60 -l "$PGD/log" \
  -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGD -c fsync=off" start > /dev/null ||
  { bad "pg_ctl start: $(tail -3 "$PGD/log")"; finish; }
psql_() { psql -h 127.0.0.1 -p "$PGPORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_ -d postgres -c "CREATE DATABASE write_rows" || { bad "createdb"; finish; }

# the same rows on both engines
if BEATLINE_TEST_PG_URL="postgresql://postgres@127.0.0.1:$PGPORT/write_rows" \
   CK_DEFAULT_TIMEOUT=300 "$BIN/rollups_pg_test" > rows.log 2>&1; then
  ok
else
  bad "rollups_pg_test: $(tail -20 rows.log)"
fi
grep -h 'rows compared' rows.log || true

finish
