#!/bin/bash
# --store URL and BEATLINE_STORE (issue 19): bad URLs and an unreachable
# PostgreSQL refused with a clear message and exit status != 0, the
# password never printed; sqlite:PATH used instead of DATA/beatline.db; the
# app commands (create, list, rotate-keys, set) on PostgreSQL; a server on
# PostgreSQL answering an authenticated request and refusing a bad key.
# PostgreSQL: the shared cluster of BEATLINE_TEST_PG_URL or one of this
# script's own (lib.sh, BEATLINE_TEST_STORE=pg).
#
#   store_url_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
export BEATLINE_TEST_STORE=pg
setup "$@"
SRV=$BIN_REAL/beatline-server
PW=S3cretPassw0rd

# refuses ARGS...: the run must exit != 0 with its stderr in ERR, no password
refuses() { # name expected-status args...
  local name=$1 want=$2 st=0
  shift 2
  timeout 60 "$@" > out.txt 2> err.txt < /dev/null || st=$?
  ERR=$(cat err.txt)
  expect "$name: exit status" "$want" "$st"
  case "$ERR$(cat out.txt)" in *"$PW"*) bad "$name: the password is printed: $ERR" ;; *) ok ;; esac
}

# --- bad URLs: exit 1 before anything is opened ---
refuses "unknown scheme" 1 "$SRV" --data d0 --store "mysql://u:$PW@h/x" app list
contains "unknown scheme: names it" "unknown store URL scheme 'mysql:'" "$ERR"
refuses "unknown scheme, server" 1 "$SRV" --data d0 --store "mysql://u:$PW@h/x" --listen 127.0.0.1:0
refuses "sqlite: without a path" 1 env BEATLINE_STORE=sqlite: "$SRV" --data d0 app list
contains "sqlite: without a path: says so" "BEATLINE_STORE: store URL sqlite: needs a path" "$ERR"
refuses "unparsable URI" 1 "$SRV" --data d0 --store "postgresql://u:$PW@[::1/x" app list
contains "unparsable URI: says so" "--store: bad PostgreSQL URL" "$ERR"
refuses "unknown URI parameter" 1 "$SRV" --data d0 --store "postgresql://u:$PW@h/x?sslmod=1" app list
contains "unknown URI parameter: names it" 'invalid URI query parameter: "sslmod"' "$ERR"
refuses "empty --store" 1 "$SRV" --data d0 --store "" app list
[ ! -e d0/beatline.db ] && ok || bad "a refused URL still created d0/beatline.db"

# --- PostgreSQL not listening: the app commands exit 2, the server 1 ---
PORT0=$(_pg_free_port)
DOWN="postgresql://u:$PW@127.0.0.1:$PORT0/x"
refuses "unreachable, app list" 2 "$SRV" --data d1 --store "$DOWN" app list
contains "unreachable: libpq's reason" "PostgreSQL: connection to server at \"127.0.0.1\", port $PORT0 failed" "$ERR"
refuses "unreachable, server" 1 "$SRV" --data d1 --store "$DOWN" --listen 127.0.0.1:0
contains "unreachable, server: libpq's reason" "port $PORT0 failed" "$ERR"
refuses "unreachable, BEATLINE_STORE" 2 env BEATLINE_STORE="$DOWN" "$SRV" --data d1 app create x

# --- sqlite:PATH: that file, not DATA/beatline.db ---
"$SRV" --data d2 --store "sqlite:$PWD/other.db" app create shop > /dev/null
[ -s other.db ] && [ ! -e d2/beatline.db ] && ok || bad "sqlite:PATH: not the file named"
expect "BEATLINE_STORE=sqlite:PATH lists it" shop \
  "$(BEATLINE_STORE="sqlite:$PWD/other.db" "$SRV" --data d2 app list | jq -r '.[].app')"
expect "--store wins over BEATLINE_STORE" "" \
  "$(BEATLINE_STORE="sqlite:$PWD/other.db" "$SRV" --data d2 --store "sqlite:$PWD/third.db" \
    app list | jq -r '.[].app')"

# --- the app commands on PostgreSQL ($BIN's wrapper adds --store) ---
keys=$("$BIN/beatline-server" --data d3 app create shop)
READ=$(jq -r .read_key <<< "$keys")
ING=$(jq -r .ingest_key <<< "$keys")
expect_grep "app create: keys" '^blk_read_[0-9a-f]\{48\}$' "$READ"
st=0
"$BIN/beatline-server" --data d3 app create shop > /dev/null 2> err.txt || st=$?
expect "app create twice: exit 2" 2 "$st"
contains "app create twice: says so" "an app with this name exists" "$(cat err.txt)"
"$BIN/beatline-server" --data d3 app create other > /dev/null
expect "app list: names and ids as on SQLite" "other 2|shop 1|" \
  "$("$BIN/beatline-server" --data d3 app list | jq -j '.[] | "\(.app) \(.id)|"')"
out=$("$BIN/beatline-server" --data d3 app set shop new-builds=5 waiting-bytes=0)
expect "app set: quotas" '5 0 null' "$(jq -r '.quotas | "\(.["new-builds"]) \(.["waiting-bytes"]) \(.["waiting-builds"])"' <<< "$out")"
expect "app set: stored" '5|0' "$(store_sql d3 "SELECT quota_new_builds, quota_waiting_bytes FROM apps WHERE name = 'shop'")"
st=0
"$BIN/beatline-server" --data d3 app set nope new-builds=1 2> err.txt || st=$?
expect "app set: no such app" 2 "$st"
rot=$("$BIN/beatline-server" --data d3 app rotate-keys shop)
READ2=$(jq -r .read_key <<< "$rot")
[ "$READ2" != "$READ" ] && ok || bad "rotate-keys: the same read key"
expect "rotate-keys: old keys revoked" '3|3' \
  "$(store_sql d3 "SELECT count(*) FILTER (WHERE revoked_at IS NULL), count(*) FILTER (WHERE revoked_at IS NOT NULL) FROM app_keys k JOIN apps a ON a.id = k.app_id WHERE a.name = 'shop'")"

# --- a server on PostgreSQL: authenticated requests ---
start_server d3
http GET /v1/apps/shop/builds "$READ2"
expect "builds with the read key" 200 "$CODE"
expect "builds: none yet" '{"app":"shop","builds":[]}' "$(jq -c . <<< "$BODY")"
http GET /v1/apps/shop/builds "$READ"
expect "a rotated key" 403 "$CODE"
http GET /v1/apps/shop/builds "$ING"
expect "an ingest key reads nothing" 403 "$CODE"
http GET /v1/apps/other/builds "$READ2"
expect "another app's key" 403 "$CODE"
stop_server
grep -q "store postgresql://postgres@127.0.0.1:" server.log && ok ||
  bad "the start line names the store: $(grep listening server.log)"
finish
