#!/bin/bash
# with_pg.sh — runs a unit test program against a fresh PostgreSQL database
# (issue 19): the cluster at BEATLINE_TEST_PG_URL when set (a shared one,
# e.g. from .ci/run), else a throwaway one (tests/lib/pg.sh) stopped at the
# end. The database's URL is given to the program in BEATLINE_TEST_PG_DB.
#
#   with_pg.sh PROGRAM [args...]
# Exit status: the program's; 1 when PostgreSQL cannot be started.
set -euo pipefail
. "$(dirname "$0")/../lib/pg.sh"
if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  pg_start || exit 1
  trap pg_stop EXIT
fi
url=$(pg_new_db) || exit 1
rc=0
BEATLINE_TEST_PG_DB=$url "$@" || rc=$?
pg_drop_db "$url"
exit "$rc"
