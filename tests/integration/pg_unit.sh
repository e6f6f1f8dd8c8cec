#!/usr/bin/env bash
# pg_unit.sh — runs a store unit test (Check) on PostgreSQL (issue 19): a
# fresh database on the cluster at BEATLINE_TEST_PG_URL (a base URL) when
# set, else on a throwaway cluster (tests/lib/pg.sh), handed to the test as
# BEATLINE_TEST_PG_DB (the tests run on SQLite without it). Exit 77 (skip)
# when PostgreSQL's server binaries are not installed.
#
#   pg_unit.sh TEST_BINARY
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: pg_unit.sh TEST_BINARY" >&2
  exit 2
fi
# shellcheck source=../lib/pg.sh
. "$(dirname "$0")/../lib/pg.sh"
if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  if ! _pg_bin > /dev/null 2>&1; then
    echo "SKIP: PostgreSQL's server binaries are not installed"
    exit 77
  fi
  pg_start
  trap pg_stop EXIT
fi
url=$(pg_new_db)
rc=0
BEATLINE_TEST_PG_DB=$url "$1" || rc=$?
pg_drop_db "$url"
exit "$rc"
