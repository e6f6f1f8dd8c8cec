#!/usr/bin/env bash
# A request whose PostgreSQL connection was lost (the server restarted, a
# failover, an administrator's pg_terminate_backend) learns it only at its
# first statement: the key check. That is a store that is unavailable for a
# moment, not a server fault: 503 + Retry-After (docs/api.md), and the next
# request reconnects and is answered. PostgreSQL only (77 otherwise).
#
#   pg_lost_conn_test.sh BUILD_DIR WORK_DIR     (BEATLINE_TEST_STORE=pg)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
if [ "${BEATLINE_TEST_STORE:-sqlite}" != pg ]; then
  echo "PostgreSQL only (BEATLINE_TEST_STORE=pg)"
  finish 77
fi
HTTP_ARGS=(-m 30)
D=$WORK/d
create_app "$D" shop
for k in 1 2 3; do
  printf '{"batch_id":"7e570000-0000-4000-8000-%012d","app":"shop","build":"z","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[1,"o",30]]}],"events":[]}' \
    "$k" | "$BIN/beatline-batch" encode > "b$k.bin"
done
start_server "$D"
http POST /v1/apps/shop/batches "$ING" --data-binary @b1.bin
expect "batch before" 202 "$CODE"
kill_conns() {
  store_sql "$D" "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                  WHERE datname = current_database() AND pid <> pg_backend_pid()" > /dev/null
}
# every connection of the server cut: the next request's key check fails
kill_conns
curl -s -m 30 -D headers.txt -o body.txt -w '%{http_code}' -X POST \
  -H "Authorization: Bearer $ING" --data-binary @b2.bin "$URL/v1/apps/shop/batches" > code.txt || true
code=$(cat code.txt)
# the server may have found out and reconnected before (202); never 500
case "$code" in
  503)
    ok
    contains "503 carries Retry-After" "retry-after" "$(tr 'A-Z' 'a-z' < headers.txt)"
    contains "503 body is JSON with an error" '"error"' "$(cat body.txt)"
    http POST /v1/apps/shop/batches "$ING" --data-binary @b2.bin
    expect "the retry is answered" 202 "$CODE" ;;
  202) ok ;;
  *) bad "POST after the connections were cut: $code $(cat body.txt)" ;;
esac
kill_conns
http GET /v1/apps/shop/builds "$RD"
case "$CODE" in 503 | 200) ok ;; *) bad "GET after the connections were cut: $CODE $BODY" ;; esac
http GET /v1/apps/shop/builds "$RD"
expect "GET again" 200 "$CODE"
http POST /v1/apps/shop/batches "$ING" --data-binary @b3.bin
expect "batch after" 202 "$CODE"
finish
