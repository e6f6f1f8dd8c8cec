#!/usr/bin/env bash
# Retention's cleanup of what nothing needs any more (issue 12 part 3, issue
# 19), with the test-only clock offset BEATLINE_TEST_CLOCK_OFFSET (seconds
# the retention clock runs ahead):
# - failed batches (SQLite: files in batches/failed, by modification time;
#   PostgreSQL: raw_batches rows with failed_at) go --keep-failed-days after
#   they failed (default 30), younger ones stay, 0 keeps them for ever;
# - PostgreSQL: uploaded contents (files, file_chunks) no build names any
#   more (replaced, or their build deleted) go 1 day after they were last
#   stored; contents a build names stay.
#
#   retention_cleanup_test.sh BUILD_DIR WORK_DIR   (BEATLINE_TEST_STORE=pg: PostgreSQL)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
PG=0
[ "${BEATLINE_TEST_STORE:-sqlite}" = pg ] && PG=1
if [ "$PG" = 0 ] && ! command -v sqlite3 > /dev/null; then
  echo "no sqlite3 shell: SKIP"
  finish 77
fi
HTTP_ARGS=(-m 30)
DAY=86400
metric() { curl -s -m 10 "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
wait_metric_ge() { # name value: bounded (60 s)
  local v=
  for _ in $(seq 1200); do
    v=$(metric "$1")
    [ -n "$v" ] && [ "$v" -ge "$2" ] && { ok; return 0; }
    sleep 0.05
  done
  bad "$1: expected at least $2, got '$v'"
}
q() { store_sql "$DATA" "$1"; }
DATA=$WORK/data
create_app "$DATA" shop

# --- failed batches: two that failed now, one that fails "in 40 days" -----
# (made by hand: the test is retention's, not how a batch fails)
NOW=$(date +%s)
FAILED_SQL="SELECT count(*) FROM raw_batches WHERE failed_at IS NOT NULL"
make_failed() {
  if [ "$PG" = 1 ]; then
    start_server "$DATA" # the schema first
    stop_server
    for i in 1 2 3; do
      local at="CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS bigint)"
      [ "$i" = 3 ] && at="$at + CAST(40 * 86400 AS bigint) * 1000000"
      q "INSERT INTO raw_batches (batch_id, app_id, build, lock_key, enc, received_at, bytes,
           body, failed_at, error)
         VALUES ('0000000$i-0000-4000-8000-000000000000', 1, 'b', 1, 0, 0, 1, '\\x00', $at, 'test')"
    done
  else
    mkdir -p "$DATA/batches/failed"
    for i in 1 2 3; do echo x > "$DATA/batches/failed/0000000$i-0000-4000-8000-000000000000.json"; done
    touch -d "@$((NOW + 40 * DAY))" "$DATA/batches/failed/00000003-0000-4000-8000-000000000000.json"
  fi
}
failed_count() {
  if [ "$PG" = 1 ]; then q "$FAILED_SQL"; else find "$DATA/batches/failed" -type f | wc -l; fi
}
make_failed
expect "three failed batches" 3 "$(failed_count)"

# --- PostgreSQL: a content replaced, a content of a deleted build ----------
printf 'com.example.A -> a:\n    void run() -> a\n' > m1.txt
printf 'com.example.B -> a:\n    void run() -> a\n' > m2.txt
printf 'com.example.C -> a:\n    void run() -> a\n' > m3.txt
start_server "$DATA"
if [ "$PG" = 1 ]; then
  http PUT /v1/apps/shop/builds/x1/mapping "$UPL" --data-binary @m1.txt
  expect "m1 on x1" 201 "$CODE"
  H1=$(jq -r .hash <<< "$BODY")
  http PUT "/v1/apps/shop/builds/x1/mapping?replace=true" "$UPL" --data-binary @m2.txt
  expect "m2 replaces m1 on x1" 200 "$CODE"
  H2=$(jq -r .hash <<< "$BODY")
  http PUT /v1/apps/shop/builds/x2/mapping "$UPL" --data-binary @m3.txt
  expect "m3 on x2" 201 "$CODE"
  H3=$(jq -r .hash <<< "$BODY")
  http DELETE /v1/apps/shop/builds/x2 "$UPL"
  expect "DELETE x2" 200 "$CODE"
fi
contents() { q "SELECT string_agg(hash, ' ' ORDER BY hash) FROM (SELECT hash FROM files UNION SELECT DISTINCT hash FROM file_chunks) x"; }
sorted() { tr ' ' '\n' <<< "$*" | sort | tr '\n' ' ' | sed 's/ $//'; }
stop_server

# --- the clock at now: nothing goes (30 days, 1 day of grace) --------------
start_server "$DATA"
wait_metric_ge beatline_retention_passes_total 1
expect "no failed batch deleted yet" 0 "$(metric beatline_retention_failed_deleted_total)"
expect "failed batches kept" 3 "$(failed_count)"
if [ "$PG" = 1 ]; then
  expect "contents kept for a day" "$(sorted "$H1" "$H2" "$H3")" "$(contents)"
fi
stop_server

# --- --keep-failed-days 0 keeps them for ever; past the 1 day of grace, the
# contents no build names go, the named one stays ------------------------
BEATLINE_TEST_CLOCK_OFFSET=$((100 * DAY)) start_server "$DATA" --keep-failed-days 0 --keep-days 0
wait_metric_ge beatline_retention_passes_total 1
expect "--keep-failed-days 0: kept" 3 "$(failed_count)"
if [ "$PG" = 1 ]; then # past the grace: contents no build names go
  expect "contents: only the one x1 names" "$H2" "$(contents)"
  expect "two contents deleted" 2 "$(metric beatline_retention_files_deleted_total)"
  expect "x1 still names its mapping" "$H2" "$(q "SELECT hash FROM build_files WHERE build = 'x1'")"
fi
stop_server

# --- 31 days on: failed ones go, the one failed later stays -------------
BEATLINE_TEST_CLOCK_OFFSET=$((31 * DAY)) start_server "$DATA" --keep-days 0
wait_metric_ge beatline_retention_passes_total 1
expect "two failed batches deleted" 2 "$(metric beatline_retention_failed_deleted_total)"
expect "the younger failed batch kept" 1 "$(failed_count)"
if [ "$PG" = 1 ]; then
  expect "the one kept" "00000003-0000-4000-8000-000000000000" \
    "$(q "SELECT batch_id FROM raw_batches WHERE failed_at IS NOT NULL")"
else
  expect "the one kept" "00000003-0000-4000-8000-000000000000.json" "$(ls "$DATA/batches/failed")"
fi
# the same content uploaded again (to another build) is stored again
if [ "$PG" = 1 ]; then
  http PUT /v1/apps/shop/builds/x3/mapping "$UPL" --data-binary @m1.txt
  expect "m1 again, on x3" "201 $H1" "$CODE $(jq -r .hash <<< "$BODY")"
  expect "m1 stored again" 1 "$(q "SELECT count(*) FROM files WHERE hash = '$H1'")"
fi
stop_server
finish
