#!/usr/bin/env bash
# Slow-methods rollups rebuilt in the background (issue 12): opening the
# database (a CLI command) leaves a marked app marked; the server listens at
# once, rebuilds the app's rollups in bounded steps on its own thread while
# it answers (from method_stats meanwhile) and ingests, and afterwards
# answers the same numbers from the rollups, for all builds, one build and
# time ranges with partial days.
#
#   rollups_rebuild_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
q() { store_sql "$DATA" "$1"; }
wait_processed() { # bounded (30 s): at least N batches processed since the start
  local v
  for _ in $(seq 600); do
    v=$(metric beatline_batches_processed_total)
    [ -n "$v" ] && [ "$v" -ge "$1" ] && return 0
    sleep 0.05
  done
  bad "batches processed: expected at least $1, got '$v'"
}
N=0
NOW_S=$(date +%s)
NOW_US=$((NOW_S * 1000000))
DAY=86400000000
post() { # APP KEY BUILD ORIGIN_US
  N=$((N + 1))
  local uuid
  uuid=$(printf '%08x-0000-4000-8000-%012x' "$N" "$N")
  cat > b.json << JSON
{"batch_id":"$uuid","app":"$1","build":"$3","session_id":"s","origin_wall_us":$4,
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[2,"i",10],[2,"o",$((30 + N))],[1,"o",$((100 + 7 * N))]]},
            {"id":2,"name":"w","main":false,"truncated":false,"records":[[2,"i",0],[2,"o",$((50 + 3 * N))]]}],
 "events":[]}
JSON
  "$BIN/beatline-batch" encode < b.json > b.bin
  http POST "/v1/apps/$1/batches" "$2" --data-binary @b.bin
}
{ printf '1,0,com.example.A run ()V\n2,0,com.example.B go ()V\n'
  for i in $(seq 3 20); do echo "$i,0,com.example.C$((i % 4)) m$i ()V"; done; } > mids.txt
answers() { # APP KEY -> the answers of several queries, one JSON per line
  local p
  for p in "sort=p99" "sort=total" "thread=main&sort=p50" "build=v1&sort=max" \
           "since=$((NOW_S - 3 * 86400 - 5 * 3600 - 17))&sort=p99" \
           "since=$((NOW_S - 5 * 86400 + 7))&until=$((NOW_S - 86400 - 123))&sort=count" \
           "build=v2&since=$((NOW_S - 2 * 86400 - 99))&sort=p90"; do
    http GET "/v1/apps/$1/slow-methods?$p" "$2"
    [ "$CODE" == 200 ] || bad "slow-methods?$p: $CODE"
    jq -c '.methods' <<< "$BODY"
  done
}

create_app "$DATA" shop
start_server "$DATA"
for b in v1 v2; do
  put_ids shop "$b" mids.txt "method-ids $b"
done
# batches over six days, hours apart, both builds
for i in $(seq 24); do
  post shop "$ING" "v$((i % 2 + 1))" $((NOW_US - i * 6 * 3600000000))
  [ "$CODE" == 202 ] || bad "post $i: $CODE"
done
wait_processed 24
expect "rollups clean after ingest" "0 0" "$(q "SELECT count(*) FROM rollup_dirty") $(q "SELECT count(*) FROM rollup_rebuild")"
answers shop "$RD" > clean.txt
stop_server

# 76,000 more hourly rows of build v1's 20 methods, 8 to 87 days back
# (within the default --keep-days 90), written by a tool, which marks the
# app (store/rollups.h's contract): the rebuild takes many steps
V1=$(q "SELECT id FROM builds WHERE name = 'v1'")
M=$(q "SELECT id FROM methods WHERE build_id = $V1 AND method_id = 2")
H0=$(((NOW_US / 3600000000 - 24 * 8) * 3600000000))
q "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 1900)
   INSERT INTO method_stats(build_id, method, main, hour, count, total_us, self_us, max_us, sketch)
   SELECT $V1, t.id, m.v, $H0 - i * 3600000000, 2, 2 * (40 + i % 50), 40 + i % 50, 40 + i % 50,
          (SELECT sketch FROM method_stats WHERE build_id = $V1 AND method = $M LIMIT 1)
   FROM k, (SELECT 0 AS v UNION ALL SELECT 1) m, (SELECT id FROM methods WHERE build_id = $V1) t"
q "INSERT INTO rollup_dirty(app_id) SELECT id FROM apps WHERE name = 'shop' ON CONFLICT DO NOTHING"

# opening the database (a CLI command) leaves the mark: no rebuild there
"$BIN/beatline-server" --data "$DATA" app list > /dev/null
expect "a CLI open rebuilds nothing" "1 0" "$(q "SELECT count(*) FROM rollup_dirty") $(q "SELECT count(*) FROM rollup_rebuild")"

start_server "$DATA"
answers shop "$RD" > during.txt # from method_stats while marked or rebuilding
echo "rebuild still running after the queries: $(q "SELECT count(*) FROM rollup_rebuild")"
# ingest goes on during the rebuild (another app: shop's answers stay)
keys2=$("$BIN/beatline-server" --data "$DATA" app create other)
http PUT "/v1/apps/other/builds/o1/method-ids" "$(jq -r .upload_key <<< "$keys2")" --data-binary @mids.txt
expect "method-ids other/o1" 201 "$CODE"
for i in $(seq 3); do
  post other "$(jq -r .ingest_key <<< "$keys2")" o1 $((NOW_US - i * 3600000000))
  expect "post during the rebuild" 202 "$CODE"
done
wait_processed 3
done_=0
for _ in $(seq 1200); do # bounded: 120 s
  if [ "$(q "SELECT (SELECT count(*) FROM rollup_dirty) + (SELECT count(*) FROM rollup_rebuild)")" == 0 ]; then
    done_=1
    break
  fi
  sleep 0.1
done
expect "the rebuild ended" 1 "$done_"
for _ in $(seq 300); do # bounded (30 s): the thread logs right after its last commit
  grep -q "slow-methods rollups rebuilt" server.log && break
  sleep 0.1
done
expect_grep "the rebuild is logged" "slow-methods rollups rebuilt" "$(cat server.log)"
answers shop "$RD" > after.txt # from the rollups
expect "answers from the rebuilt rollups = answers from method_stats" "" "$(diff during.txt after.txt)"
expect "the rebuilt rollups hold every row" \
  "$(q "SELECT count(*) FROM method_stats s JOIN builds b ON b.id = s.build_id JOIN apps a ON a.id = b.app_id WHERE a.name = 'shop'")" \
  "$(q "SELECT count(*) FROM rollup_hours WHERE scope = -(SELECT id FROM apps WHERE name = 'shop')")"
# the rows the tool added are 8 days back and more: the recent ranges
# (queries 5-7) answer as before
expect "recent ranges answer as before the old rows" "$(sed -n 5,7p clean.txt)" "$(sed -n 5,7p after.txt)"
expect "the old rows are in the answers of all the data" 1 \
  "$([ "$(sed -n 2p clean.txt)" != "$(sed -n 2p after.txt)" ] && echo 1 || echo 0)"
stop_server
finish
