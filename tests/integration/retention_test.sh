#!/usr/bin/env bash
# Retention and build deletion (issue 12, part 3), with the test-only clock
# offset BEATLINE_TEST_CLOCK_OFFSET (seconds the retention clock runs ahead).
#
#   retention_test.sh BUILD_DIR WORK_DIR
#
# Checks: raw batches go after --keep-raw-days and nothing else does (rows,
# aggregates, another app kept for ever by `app set`); aggregates whose hour
# is older than --keep-days go, newer ones and another app's stay; a build
# whose data all expired goes whole (rows, folder, raw batches); DELETE
# .../builds/{build}: 401/403 before anything is revealed, 404 JSON for an
# unknown build, 400 for a bad name, 200 then the build, its files, raw
# batches and rows are gone and nothing else; a batch of the same name
# afterwards makes a new build; POSTs keep answering 202 and the writer
# keeps committing during a deletion of 300,000 rows and 3,000 files; a
# kill -9 in the middle of a deletion leaves a consistent store and the
# deletion finishes after a restart; bytes on disk per app in /metrics.
# Needs the sqlite3 command-line shell (to count rows and make big data),
# psql with BEATLINE_TEST_STORE=pg (the same checks on PostgreSQL).
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
wait_metric_ge() { # name value: bounded wait (90 s) until the metric is at least value
  local v
  for _ in $(seq 1800); do
    v=$(metric "$1")
    [ -n "$v" ] && [ "$v" -ge "$2" ] && { ok; return 0; }
    sleep 0.05
  done
  bad "$1: expected at least $2, got '$v'"
}
# a pass finished after the start: the counter moves past what it was
wait_pass() { wait_metric_ge beatline_retention_passes_total 1; }
q() { store_sql "$DATA" "$1"; }
qs() { # SQLITE-SQL PG-SQL: the text of the store in use
  if [ "$PG" = 1 ]; then q "$2"; else q "$1"; fi
}
N=0
NOW_US=$(($(date +%s) * 1000000))
# post APP KEY BUILD ORIGIN_US -> one batch of two calls of methods 1 and 2
post() {
  N=$((N + 1))
  local uuid
  uuid=$(printf '%08x-0000-4000-8000-%012x' "$N" "$N")
  cat > b.json << JSON
{"batch_id":"$uuid","app":"$1","build":"$3","session_id":"s","origin_wall_us":$4,
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[2,"i",10],[2,"o",30],[1,"o",100]]}],
 "events":[]}
JSON
  "$BIN/beatline-batch" encode < b.json > b.bin
  http POST "/v1/apps/$1/batches" "$2" --data-binary @b.bin
}
printf '1,0,com.example.A run ()V\n2,0,com.example.B go ()V\n' > mids.txt
upload() { # APP KEY BUILD
  http PUT "/v1/apps/$1/builds/$3/method-ids" "$2" --data-binary @mids.txt
  expect "method-ids $1/$3" 201 "$CODE"
}
bid() { q "SELECT id FROM builds WHERE name = '$2' AND app_id = (SELECT id FROM apps WHERE name = '$1')"; }
done_files() { find "$DATA/batches/done" -type f | wc -l; }
# raw_expect NAME N: N raw batch files kept in batches/done on SQLite; on
# PostgreSQL a raw batch is a raw_batches row deleted in the commit that
# processes it (nothing failed here), so none is ever kept to expire
raw_expect() {
  if [ "$PG" = 1 ]; then
    expect "$1 (PostgreSQL: no raw_batches row left)" 0 "$(q "SELECT count(*) FROM raw_batches")"
  else
    expect "$1" "$2" "$(done_files)"
  fi
}
# rows that belong to no live or doomed build, or files no row names
orphans() {
  q "SELECT (SELECT count(*) FROM method_stats WHERE build_id NOT IN (SELECT id FROM builds))
          + (SELECT count(*) FROM call_nodes WHERE build_id NOT IN (SELECT id FROM builds))
          + (SELECT count(*) FROM methods WHERE build_id NOT IN (SELECT id FROM builds))
          + (SELECT count(*) FROM batches WHERE build_id NOT IN (SELECT id FROM builds))
          + (SELECT count(*) FROM builds WHERE app_id = 0 AND id NOT IN (SELECT build_id FROM doomed_builds))"
}

DATA=$WORK/data
create_app "$DATA" shop
okeys=$("$BIN/beatline-server" --data "$DATA" app create other)
OING=$(jq -r .ingest_key <<< "$okeys")
OUPL=$(jq -r .upload_key <<< "$okeys")

# --- data: shop b1 (one old hour, one recent), b2 (recent), b3 (old only);
# other o1 (old) ----------------------------------------------------------
OLD=$((NOW_US - 100 * DAY * 1000000))
start_server "$DATA"
upload shop "$UPL" b1
upload shop "$UPL" b2
upload shop "$UPL" b3
upload other "$OUPL" o1
post shop "$ING" b1 "$OLD" && expect "post b1 old" 202 "$CODE"
post shop "$ING" b1 "$NOW_US" && expect "post b1 new" 202 "$CODE"
post shop "$ING" b2 "$NOW_US" && expect "post b2" 202 "$CODE"
post shop "$ING" b3 "$OLD" && expect "post b3" 202 "$CODE"
post other "$OING" o1 "$OLD" && expect "post o1" 202 "$CODE"
wait_metric_ge beatline_batches_processed_total 5
raw_expect "5 raw batches kept" 5
stop_server
STATS0=$(q "SELECT count(*) FROM method_stats")
B1=$(bid shop b1) B2=$(bid shop b2) B3=$(bid shop b3) O1=$(bid other o1)
expect "stats rows: 2 methods x 6 (batch, hour)" 10 "$STATS0"

# --- raw retention: 8 days on, aggregates kept for ever ------------------
out=$("$BIN/beatline-server" --data "$DATA" app set other --keep-raw-days 0)
expect "app set --keep-raw-days" '{"app":"other","quotas":{"waiting-builds":null,"waiting-batches":null,"waiting-bytes":null,"new-builds":null},"retention":{"keep-raw-days":0,"keep-days":null}}' "$(jq -c . <<< "$out")"
expect_grep "app list shows retention" '"app":"other".*"keep_raw_days":0,"keep_days":null' "$("$BIN/beatline-server" --data "$DATA" app list)"
"$BIN/beatline-server" --data "$DATA" app set other --keep-raw-days 99999 2> err.txt && bad "keep-raw-days over 100 years accepted" || ok
expect_grep "bad keep-raw-days: message" "bad value '99999'" "$(cat err.txt)"
for opt in "--keep-raw-days 36526" "--keep-days 36526" "--retention-interval 0"; do
  # shellcheck disable=SC2086
  "$BIN/beatline-server" --data "$DATA" --listen 127.0.0.1:0 $opt 2> err.txt && bad "$opt accepted" || ok
  expect_grep "$opt refused naming the range" "must be 0-36525" "$(cat err.txt)"
done
BEATLINE_TEST_CLOCK_OFFSET=$((8 * DAY)) start_server "$DATA" --keep-days 0
wait_pass
wait_metric_ge beatline_retention_raw_deleted_total 4
raw_expect "shop's 4 raw batches gone, other's kept (keep-raw-days 0)" 1
expect "other's raw file is the one kept" 1 "$(q "SELECT count(*) FROM batches WHERE app_id = (SELECT id FROM apps WHERE name = 'other') AND raw_deleted_at IS NULL")"
expect "batches rows stay (duplicate guard)" 5 "$(q "SELECT count(*) FROM batches")"
expect "aggregates untouched by raw retention" "$STATS0" "$(q "SELECT count(*) FROM method_stats")"
http GET /metrics ""
# /metrics needs no key: apps are labelled by id (`app list` maps it), never by name
SHOP_ID=$(q "SELECT id FROM apps WHERE name = 'shop'") OTHER_ID=$(q "SELECT id FROM apps WHERE name = 'other'")
expect "app list shows the id /metrics uses" "$OTHER_ID" "$("$BIN/beatline-server" --data "$DATA" app list | jq '.[] | select(.app == "other") | .id')"
expect_grep "raw bytes per app: shop has none" "beatline_app_disk_bytes{app_id=\"$SHOP_ID\",kind=\"raw\"} 0\$" "$BODY"
[ "$PG" = 1 ] || expect_grep "raw bytes per app: other keeps one" "beatline_app_raw_batches{app_id=\"$OTHER_ID\"} 1\$" "$BODY"
expect_grep "disk bytes per app: uploads" "beatline_app_disk_bytes{app_id=\"$SHOP_ID\",kind=\"uploads\"} [1-9]" "$BODY"
[ "$PG" = 1 ] || expect_grep "disk bytes per app: other's raw batch" "beatline_app_disk_bytes{app_id=\"$OTHER_ID\",kind=\"raw\"} [1-9]" "$BODY"
case "$BODY" in *'app="'*) bad "/metrics names an app" ;; *) ok ;; esac
stop_server

# --- aggregate expiry: now, keep-days 90, other kept for ever -------------
"$BIN/beatline-server" --data "$DATA" app set other keep-days=0 > /dev/null
start_server "$DATA"
wait_pass
wait_metric_ge beatline_retention_rows_deleted_total 4
stop_server
expect "b1's old hour gone, its new one kept" 2 "$(q "SELECT count(*) FROM method_stats WHERE build_id = $B1")"
expect "b1's rows left are recent" 0 "$(q "SELECT count(*) FROM method_stats WHERE build_id = $B1 AND hour < $((NOW_US - 90 * DAY * 1000000))")"
expect "b2 untouched" 2 "$(q "SELECT count(*) FROM method_stats WHERE build_id = $B2")"
expect "b3's rows gone" 0 "$(q "SELECT count(*) FROM method_stats WHERE build_id = $B3")"
expect "b3 itself stays: created today" 1 "$(q "SELECT count(*) FROM builds WHERE id = $B3 AND app_id <> 0")"
expect "other keeps its old rows (keep-days 0)" 2 "$(q "SELECT count(*) FROM method_stats WHERE build_id = $O1")"
expect "call tree of b1 kept" 1 "$([ "$(q "SELECT count(*) FROM call_nodes WHERE build_id = $B1")" -gt 0 ] && echo 1 || echo 0)"

# --- whole builds expire: 200 days on -------------------------------------
BEATLINE_TEST_CLOCK_OFFSET=$((200 * DAY)) start_server "$DATA"
wait_metric_ge beatline_retention_builds_deleted_total 3
http GET /v1/apps/shop/builds "$RD"
expect "every shop build expired" "[]" "$(jq -c '[.builds[].build]' <<< "$BODY")"
stop_server
expect "no shop rows left" 0 "$(q "SELECT (SELECT count(*) FROM method_stats WHERE build_id IN ($B1,$B2,$B3)) + (SELECT count(*) FROM call_nodes WHERE build_id IN ($B1,$B2,$B3)) + (SELECT count(*) FROM methods WHERE build_id IN ($B1,$B2,$B3)) + (SELECT count(*) FROM batches WHERE build_id IN ($B1,$B2,$B3)) + (SELECT count(*) FROM builds WHERE id IN ($B1,$B2,$B3))")"
expect "no shop build folders" 0 "$(find "$DATA/builds/$(q "SELECT id FROM apps WHERE name = 'shop'")" -mindepth 1 -maxdepth 1 | wc -l)"
expect "other untouched" "2 1 1" "$(q "SELECT (SELECT count(*) FROM method_stats WHERE build_id = $O1) || ' ' || (SELECT count(*) FROM builds WHERE id = $O1 AND app_id <> 0) || ' ' || (SELECT count(*) FROM batches WHERE build_id = $O1)")"
expect "other's folder kept" 1 "$(find "$DATA/builds/$(q "SELECT id FROM apps WHERE name = 'other'")" -mindepth 1 -maxdepth 1 | wc -l)"
expect "no orphans" 0 "$(orphans)"
expect "nothing left in trash" 0 "$(find "$DATA/trash" -mindepth 1 | wc -l)"

# --- DELETE a build ----------------------------------------------------------
start_server "$DATA"
upload shop "$UPL" d1
upload shop "$UPL" d2
post shop "$ING" d1 "$NOW_US" && expect "post d1" 202 "$CODE"
post shop "$ING" d2 "$NOW_US" && expect "post d2" 202 "$CODE"
wait_metric_ge beatline_batches_processed_total 2
D1=$(bid shop d1) D2=$(bid shop d2)
D1DIR=$(dirname "$(grep -lx d1 "$DATA"/builds/*/*/build-name)")
http DELETE /v1/apps/shop/builds/d1 ""
expect "DELETE without a key: 401" 401 "$CODE"
http DELETE /v1/apps/shop/builds/d1 "$RD"
expect "DELETE with the read key: 403" 403 "$CODE"
http DELETE /v1/apps/shop/builds/d1 "$ING"
expect "DELETE with the ingest key: 403" 403 "$CODE"
http DELETE /v1/apps/shop/builds/d1 "$OUPL"
expect "DELETE with another app's upload key: 403" 403 "$CODE"
http DELETE /v1/apps/nosuchapp/builds/nosuch "$UPL"
expect "DELETE in an unknown app: 403 (not revealed)" 403 "$CODE"
http DELETE /v1/apps/shop/builds/nosuch "$UPL"
expect "DELETE unknown build: 404" 404 "$CODE"
expect "404 is JSON" "no such build in this app" "$(jq -r .error <<< "$BODY")"
http DELETE "/v1/apps/shop/builds/a%01b" "$UPL"
expect "DELETE bad build name: 400" 400 "$CODE"
http DELETE "/v1/apps/shop/builds/$(printf 'x%.0s' $(seq 129))" "$UPL"
expect "DELETE build name too long: 400" 400 "$CODE"
http DELETE /v1/apps/shop/builds/d1/mapping "$UPL"
expect "DELETE of a file: no such endpoint" 404 "$CODE"
expect "nothing deleted by refused requests" 1 "$(q "SELECT count(*) FROM builds WHERE id = $D1 AND app_id <> 0")"
http DELETE /v1/apps/shop/builds/d1 "$UPL"
expect "DELETE d1: 200" 200 "$CODE"
expect "DELETE answer" '{"app":"shop","build":"d1","status":"deleted"}' "$(jq -c . <<< "$BODY")"
http GET /v1/apps/shop/builds "$RD"
expect "d1 no longer listed" '["d2"]' "$(jq -c '[.builds[].build]' <<< "$BODY")"
http GET "/v1/apps/shop/slow-methods?build=d1" "$RD"
expect "slow-methods of d1: 404" 404 "$CODE"
http DELETE /v1/apps/shop/builds/d1 "$UPL"
expect "DELETE d1 again: 404" 404 "$CODE"
wait_metric_ge beatline_retention_builds_deleted_total 1
expect "d1's folder gone" 0 "$([ -e "$D1DIR" ] && echo 1 || echo 0)"
expect "d1's rows gone" 0 "$(q "SELECT (SELECT count(*) FROM method_stats WHERE build_id = $D1) + (SELECT count(*) FROM call_nodes WHERE build_id = $D1) + (SELECT count(*) FROM methods WHERE build_id = $D1) + (SELECT count(*) FROM batches WHERE build_id = $D1) + (SELECT count(*) FROM builds WHERE id = $D1)")"
raw_expect "d1's raw batch gone, d2's and other's kept" 2
expect "d2 untouched" "2 1" "$(q "SELECT (SELECT count(*) FROM method_stats WHERE build_id = $D2) || ' ' || (SELECT count(*) FROM batches WHERE build_id = $D2)")"
# a build whose batches wait for its method-ID file: they go with it
post shop "$ING" w1 "$NOW_US" && expect "post w1 (waits)" 202 "$CODE"
post shop "$ING" w1 "$NOW_US" && expect "post w1 again (waits)" 202 "$CODE"
for _ in $(seq 600); do [ "$(metric beatline_batches_waiting)" == 2 ] && break; sleep 0.05; done
expect "w1's batches wait" 2 "$(metric beatline_batches_waiting)"
http DELETE /v1/apps/shop/builds/w1 "$UPL"
expect "DELETE w1 (only waiting batches): 200" 200 "$CODE"
expect "w1's waiting batches deleted" "0 0" "$(metric beatline_batches_waiting) $(find "$DATA/batches/pending" -type f | wc -l)"
# the name is free again: a new build
post shop "$ING" d1 "$NOW_US" && expect "post d1 after its deletion" 202 "$CODE"
upload shop "$UPL" d1
wait_metric_ge beatline_batches_processed_total 3
http GET /v1/apps/shop/builds "$RD"
expect "a new d1 with only the new batch" '1' "$(jq -c '[.builds[] | select(.build == "d1") | .batches][0]' <<< "$BODY")"
expect "the new d1 is a new row" 1 "$([ "$(bid shop d1)" != "$D1" ] && echo 1 || echo 0)"
stop_server
expect "no orphans after DELETE" 0 "$(orphans)"

# a kill -9 between the writer moving a build's folder to trash and its
# commit: the deletion is finished at the next start
start_server "$DATA"
upload shop "$UPL" c1
post shop "$ING" c1 "$NOW_US" && expect "post c1" 202 "$CODE"
wait_metric_ge beatline_batches_processed_total 1
stop_server
C1=$(bid shop c1)
C1DIR=$(dirname "$(grep -lx c1 "$DATA"/builds/*/*/build-name)")
mkdir -p "$DATA/trash"
mv "$C1DIR" "$DATA/trash/$C1"
start_server "$DATA"
for _ in $(seq 100); do # PostgreSQL: in line in the shared queue, just after the start
  http GET /v1/apps/shop/builds "$RD"
  [ "$(jq -c '[.builds[] | select(.build == "c1")]' <<< "$BODY")" = '[]' ] && break
  sleep 0.1
done
expect "c1 (folder in trash, not committed) is deleted at start" '[]' "$(jq -c '[.builds[] | select(.build == "c1")]' <<< "$BODY")"
wait_metric_ge beatline_retention_builds_deleted_total 1
stop_server
expect "c1's rows, batch and folder gone" "0 0" "$(q "SELECT (SELECT count(*) FROM method_stats WHERE build_id = $C1) + (SELECT count(*) FROM methods WHERE build_id = $C1) + (SELECT count(*) FROM batches WHERE build_id = $C1) + (SELECT count(*) FROM builds WHERE id = $C1)") $(find "$DATA/trash" -mindepth 1 | wc -l)"
raw_expect "raw files: d2's, other's, new d1's" 3

# --- a big deletion: ingest keeps answering; kill -9 in the middle ----------
# 300,000 old method_stats rows and 3,000 old raw batches of build big
start_server "$DATA"
upload shop "$UPL" big
post shop "$ING" big "$NOW_US" && expect "post big" 202 "$CODE"
wait_metric_ge beatline_batches_processed_total 1
stop_server
BIG=$(bid shop big)
SHOP=$(q "SELECT id FROM apps WHERE name = 'shop'")
M=$(q "SELECT min(id) FROM methods WHERE build_id = $BIG")
H0=$(((NOW_US / 3600000000 - 100 * 24) * 3600000000))
q "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 300000)
   INSERT INTO method_stats(build_id, method, main, hour, count, total_us, self_us, max_us, sketch)
   SELECT $BIG, $M, 0, $H0 - i * 3600000000, 1, 1, 1, 1,
          (SELECT sketch FROM method_stats WHERE build_id = $BIG LIMIT 1) FROM k"
q "INSERT INTO rollup_dirty(app_id) VALUES ($SHOP) ON CONFLICT DO NOTHING" # rollups.h's contract
qs "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 3000)
   INSERT INTO batches(batch_id, app_id, build_id, received_at, processed_at, records, malformed, bytes)
   SELECT printf('%08x-1111-4000-8000-%012x', i, i), $SHOP, $BIG, $(((NOW_US - 30 * DAY * 1000000))), 0, 0, 0, 0 FROM k" \
  "INSERT INTO batches(batch_id, app_id, build_id, received_at, processed_at, records, malformed, bytes)
   SELECT lpad(to_hex(i), 8, '0') || '-1111-4000-8000-' || lpad(to_hex(i), 12, '0'), $SHOP, $BIG,
          $(((NOW_US - 30 * DAY * 1000000))), 0, 0, 0, 0 FROM generate_series(1, 3000) i"
[ "$PG" = 1 ] || for i in $(seq 3000); do printf 'x' > "$DATA/batches/done/$(printf '%08x-1111-4000-8000-%012x' "$i" "$i").zst"; done
RECENT=$(q "SELECT count(*) FROM method_stats WHERE hour >= $((NOW_US - 90 * DAY * 1000000)) OR build_id = $O1")
TOTAL=$(q "SELECT count(*) FROM method_stats")
start_server "$DATA"
# once the deletion has begun, batches posted are committed before it ends:
# it runs in slices of BL_RET_SLICE (1,000) rows with a 30 ms pause after
# each, so 300,000 rows take 9 s at the very least, and the writer goes
# first between slices; a deletion that held the write lock throughout
# would let no batch commit before it ended
wait_metric_ge beatline_retention_rows_deleted_total 1
posted=0 okposts=0
for _ in $(seq 5); do
  post shop "$ING" big "$NOW_US"
  posted=$((posted + 1))
  [ "$CODE" == 202 ] && okposts=$((okposts + 1))
done
expect "every POST during the deletion answered 202" "$posted" "$okposts"
wait_metric_ge beatline_batches_processed_total 5
expect "the 5 batches were committed while the deletion was still running" 1 \
  "$([ "$(metric beatline_retention_rows_deleted_total)" -lt 300000 ] && echo 1 || echo 0)"
for _ in $(seq 35); do
  post shop "$ING" big "$NOW_US"
  [ "$CODE" == 202 ] && okposts=$((okposts + 1))
done
expect "every POST answered 202" 40 "$okposts"
http GET /healthz ""
expect "healthy during the deletion" 200 "$CODE"
wait_metric_ge beatline_batches_processed_total 40
wait_metric_ge beatline_retention_rows_deleted_total 300000
wait_metric_ge beatline_retention_raw_deleted_total 3000
stop_server
expect "old rows gone, recent kept" "$RECENT" "$(q "SELECT count(*) FROM method_stats")"
raw_expect "3000 raw files gone (d2, other, new d1, big's 41 kept)" 44

# kill -9 in the middle of deleting the big build (150,000 rows again)
qs "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 150000)
   INSERT OR IGNORE INTO method_stats(build_id, method, main, hour, count, total_us, self_us, max_us, sketch)
   SELECT $BIG, $M, 1, $NOW_US - i * 3600, 1, 1, 1, 1, x'' FROM k" \
  "INSERT INTO method_stats(build_id, method, main, hour, count, total_us, self_us, max_us, sketch)
   SELECT $BIG, $M, 1, $NOW_US - i * 3600, 1, 1, 1, 1, '\\x'::bytea FROM generate_series(1, 150000) i
   ON CONFLICT DO NOTHING"
start_server "$DATA"
http DELETE /v1/apps/shop/builds/big "$UPL"
expect "DELETE big: 200" 200 "$CODE"
for _ in $(seq 400); do
  v=$(metric beatline_retention_rows_deleted_total)
  [ -n "$v" ] && [ "$v" -gt 0 ] && break
  sleep 0.01
done
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2> /dev/null || true
SERVER_PID=
left=$(q "SELECT count(*) FROM method_stats WHERE build_id = $BIG")
expect "killed in the middle (rows of big left)" 1 "$([ "$left" -gt 0 ] && echo 1 || echo 0)"
expect "big is in the graveyard, not listed" "0 1" "$(q "SELECT (SELECT count(*) FROM builds WHERE id = $BIG AND app_id <> 0) || ' ' || (SELECT count(*) FROM doomed_builds WHERE build_id = $BIG)")"
expect "no orphans after kill -9" 0 "$(orphans)"
if [ "$PG" = 0 ]; then # (PostgreSQL checks its constraints on every statement)
  expect "integrity" ok "$(q "PRAGMA integrity_check")"
  expect "foreign keys" "" "$(q "PRAGMA foreign_key_check")"
fi
start_server "$DATA"
http GET /v1/apps/shop/builds "$RD"
expect "after restart: big not listed" '[]' "$(jq -c '[.builds[] | select(.build == "big")]' <<< "$BODY")"
wait_metric_ge beatline_retention_builds_deleted_total 1
stop_server
expect "big's deletion finished after the restart" 0 "$(q "SELECT (SELECT count(*) FROM method_stats WHERE build_id = $BIG) + (SELECT count(*) FROM methods WHERE build_id = $BIG) + (SELECT count(*) FROM batches WHERE build_id = $BIG) + (SELECT count(*) FROM builds WHERE id = $BIG) + (SELECT count(*) FROM doomed_builds)")"
expect "no orphans at the end" 0 "$(orphans)"
expect "d2 and other untouched at the end" "2 2" "$(q "SELECT (SELECT count(*) FROM method_stats WHERE build_id = $D2) || ' ' || (SELECT count(*) FROM method_stats WHERE build_id = $O1)")"
raw_expect "raw files: d2's, other's, new d1's" 3

finish
