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
if BEATLINE_TEST_PG_URL="$db" BEATLINE_TEST_SQLITE_KEEP="$PWD/rows.db" CK_DEFAULT_TIMEOUT=300 \
   "$BIN/rollups_pg_test" > rows.log 2>&1; then
  ok
else
  bad "rollups_pg_test: $(tail -20 rows.log)"
fi
grep -h 'rows compared' rows.log || true

# and the same answers from the read path (slow methods from the rollups
# and from method_stats, every build, thread, sort, limit and range around
# the expired days; call trees): byte for byte
H0=$(((24 * 20000) * 3600)) # the test's first day (s)
TIMES="$((H0 + 86400 + 7 * 3600)) $((H0 + 2 * 86400)) $((H0 + 3 * 86400 + 5 * 3600)) $((H0 + 4 * 86400))"
for app in 1 2; do
  # shellcheck disable=SC2086
  "$BIN/store_read_dump" "$PWD/rows.db" "$app" $TIMES > "read-sqlite-$app.txt" 2>&1 ||
    bad "store_read_dump on SQLite (app $app): $(grep -m3 ERROR "read-sqlite-$app.txt")"
  # shellcheck disable=SC2086
  "$BIN/store_read_dump" "$db" "$app" $TIMES > "read-pg-$app.txt" 2>&1 ||
    bad "store_read_dump on PostgreSQL (app $app): $(grep -m3 ERROR "read-pg-$app.txt")"
  if cmp -s "read-sqlite-$app.txt" "read-pg-$app.txt"; then
    ok
  else
    bad "app $app: the read path answers differently: $(diff "read-sqlite-$app.txt" "read-pg-$app.txt" | head -6)"
  fi
  expect "app $app: answers read" 1 "$([ "$(grep -c . "read-sqlite-$app.txt")" -gt 100 ] && echo 1 || echo 0)"
done

finish
