#!/usr/bin/env bash
# GET /v1/apps/{app}/method-histogram (server/http/h_method.c): the
# distribution of one method's call durations, in buckets of 8 per power of
# two, for the dashboard's method page. Hand-made batches with known call
# durations; filters (build, thread, descriptor); errors.
#
#   method_hist_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
create_app "$DATA" shop
start_server "$DATA"

cat > ids.txt << 'EOF2'
# beatline method-ids v1 names=original
1,1,com.example.Feed run ()V
2,1,com.example.Db query (Ljava/lang/String;)V
3,1,com.example.Db query (I)V
EOF2
for b in 1.0 2.0; do
  put_ids shop "$b" ids.txt "method-ids $b"
done
# batch BUILD MAIN-RECORDS WORKER-RECORDS
n=0
batch() {
  n=$((n + 1))
  jq -cn --arg b "$1" --argjson m "$2" --argjson w "$3" --arg id "$(printf '00000000-0000-4000-8000-%012d' "$n")" \
    '{batch_id:$id, app:"shop", build:$b, session_id:"s", origin_wall_us:1795960000000000,
      device:{model:"m", os:"14", sdk:34},
      threads:[{id:1, name:"main", main:true, truncated:false, records:$m},
               {id:2, name:"w", main:false, truncated:false, records:$w}]}' > b$n.json
  "$BIN/beatline-batch" encode < b$n.json > b$n.bin
  http POST /v1/apps/shop/batches "$ING" --data-binary @b$n.bin
  expect "batch $n" 202 "$CODE"
}
# build 1.0, main: query(String) 100, 100, 5 and 1000 µs; query(I) 100 µs;
# worker: query(String) 100 µs
batch 1.0 '[[1,"i",0],[2,"i",10],[2,"o",110],[2,"i",200],[2,"o",300],[2,"i",400],[2,"o",405],
            [2,"i",500],[2,"o",1500],[3,"i",2000],[3,"o",2100],[1,"o",3000]]' '[[2,"i",0],[2,"o",100]]'
# build 2.0: query(String) 50000 µs on main
batch 2.0 '[[2,"i",0],[2,"o",50000]]' '[]'
for _ in $(seq 600); do [ "$(metric beatline_batches_processed_total)" = 2 ] && break; sleep 0.05; done
expect "processed" 2 "$(metric beatline_batches_processed_total)"

H='/v1/apps/shop/method-histogram'
Q='method=com.example.Db.query(Ljava/lang/String;)V'
http GET "$H?$Q&build=1.0&thread=main" "$RD"
expect "main status" 200 "$CODE"
expect "main count" 4 "$(jq .count <<< "$BODY")"
expect "main max" 1000 "$(jq .max_us <<< "$BODY")"
expect "main buckets" '[[5,5,1],[96,103,2],[960,1023,1]]' "$(jq -c '[.buckets[] | [.lo_us, .hi_us, .count]]' <<< "$BODY")"
expect "echo" '"1.0" "main" "com.example.Db.query(Ljava/lang/String;)V"' "$(jq -c .build,.thread,.method <<< "$BODY" | tr '\n' ' ' | sed 's/ $//')"
http GET "$H?$Q&build=1.0" "$RD"
expect "all threads: the worker's call too" '[[5,5,1],[96,103,3],[960,1023,1]]' "$(jq -c '[.buckets[] | [.lo_us, .hi_us, .count]]' <<< "$BODY")"
http GET "$H?method=com.example.Db.query&build=1.0&thread=main" "$RD"
expect "no descriptor: both overloads" 5 "$(jq .count <<< "$BODY")"
http GET "$H?$Q" "$RD"
expect "all builds" 6 "$(jq .count <<< "$BODY")"
expect "all builds: 50 ms bucket" '[49152,53247,1]' "$(jq -c '.buckets[-1] | [.lo_us, .hi_us, .count]' <<< "$BODY")"
http GET "$H?$Q&since=1795970000" "$RD"
expect "a later range: nothing" '0 []' "$(jq -c .count,.buckets <<< "$BODY" | tr '\n' ' ' | sed 's/ $//')"
http GET "$H?method=com.example.Db.nope" "$RD"
expect "unknown method: empty" 0 "$(jq .count <<< "$BODY")"

# errors
http GET "$H?$Q&build=9.9" "$RD"
expect "unknown build" 404 "$CODE"
for bad in 'method=' 'method=query' 'method=.query' 'method=com.example.Db.' "$Q&thread=ui" "$Q&since=-1" "$Q&until=x"; do
  http GET "$H?$bad" "$RD"
  expect "400 for $bad" 400 "$CODE"
  contains "400 for $bad is JSON" '"error"' "$BODY"
done
http GET "$H" "$RD"
expect "no method" 400 "$CODE"
http GET "$H?$Q" "$ING"
expect "ingest key" 403 "$CODE"
http GET "$H?$Q" ''
expect "no key" 401 "$CODE"
http POST "$H?$Q" "$RD"
expect "POST" 404 "$CODE"
finish
