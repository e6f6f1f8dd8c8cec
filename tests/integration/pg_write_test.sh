#!/usr/bin/env bash
# The store's write path on PostgreSQL (issue 19): the same writer
# transactions, rebuild steps and expiry through SQLite and PostgreSQL give
# the same rows (tests/unit/rollups_pg_test.c), against a throwaway
# PostgreSQL (tests/lib/pg.sh; or the cluster at BEATLINE_TEST_PG_URL).
#   tests/integration/pg_write_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/../lib/pg.sh"

if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  pg_start "$WORK" || { bad "PostgreSQL did not start"; finish; }
fi
trap 'stop_server; pg_stop' EXIT
db=$(pg_new_db) || { bad "no database"; finish; }

# the same rows on both engines
if BEATLINE_TEST_PG_URL="$db" CK_DEFAULT_TIMEOUT=300 "$BIN/rollups_pg_test" > rows.log 2>&1; then
  ok
else
  bad "rollups_pg_test: $(tail -20 rows.log)"
fi
grep -h 'rows compared' rows.log || true

finish
