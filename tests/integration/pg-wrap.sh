#!/bin/bash
# pg-wrap.sh — runs beatline-server on a PostgreSQL store for the tests
# (BEATLINE_TEST_STORE=pg, set up by lib.sh): the data folder of the run
# (--data DIR, else $BEATLINE_DATA, else ./beatline-data) is mapped to its
# own database on the cluster at $BEATLINE_TEST_PG_URL, created at the
# folder's first use (tests/lib/pg.sh pg_new_db) and recorded in
# STORES_FILE (lines "ABSOLUTE_DIR<TAB>URL", under flock), and the server
# runs with `--store URL` added (exec: same pid). A run that names its
# own store (--store, $BEATLINE_STORE) is left alone.
#
#   pg-wrap.sh SERVER STORES_FILE [server args...]
#   pg-wrap.sh --url DATA STORES_FILE      prints DATA's database URL
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# the URL of data folder $1's database (created when new)
store_of() {
  local dir stores=$2 url
  dir=$(realpath -m -- "$1")
  exec 9>> "$stores"
  flock -w 60 9 || {
    echo "pg-wrap.sh: cannot lock $stores" >&2
    exit 1
  }
  url=$(awk -F '\t' -v d="$dir" '$1 == d { print $2; exit }' "$stores")
  if [ -z "$url" ]; then
    # shellcheck source=../lib/pg.sh
    . "$HERE/../lib/pg.sh"
    url=$(pg_new_db) || exit 1
    printf '%s\t%s\n' "$dir" "$url" >> "$stores"
  fi
  exec 9>&-
  echo "$url"
}

if [ "${1:-}" = --url ]; then
  store_of "$2" "$3"
  exit 0
fi

server=$1 stores=$2
shift 2
data=${BEATLINE_DATA:-./beatline-data}
own=${BEATLINE_STORE:-}
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --data) data=${args[i + 1]:-$data} ;;
    --store) own=1 ;;
    app) break ;;
  esac
done
if [ -n "$own" ]; then
  exec "$server" "$@"
fi
url=$(store_of "$data" "$stores")
exec "$server" --store "$url" "$@"
