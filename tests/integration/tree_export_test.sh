#!/usr/bin/env bash
# GET /v1/apps/{app}/call-tree?format=speedscope|chrome (server/http/h_calltree.c,
# "exports"): the merged call tree as a speedscope evented profile and as
# Chrome trace events, on a hand-made tree with known times; both ways the
# server reads a tree (top-down, and merged first: root= or limit over
# 100,000); limits; a bad format.
#
#   tree_export_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
create_app "$DATA" shop
start_server "$DATA"

cat > ids.txt << 'EOF2'
# beatline method-ids v1 names=original
1,1,com.example.Feed run ()V
2,1,com.example.Feed load ()V
3,1,com.example.Db query (Ljava/lang/String;)V
4,1,com.example.Log log ()V
EOF2
put_ids shop 1.0 ids.txt "method-ids"
# run 0-1000 > load 10-200 > query 20-120; run > log 300-350
jq -cn '{batch_id:"00000000-0000-4000-8000-000000000001", app:"shop", build:"1.0", session_id:"s",
  origin_wall_us:1795960000000000, device:{model:"m", os:"14", sdk:34},
  threads:[{id:1, name:"main", main:true, truncated:false,
    records:[[1,"i",0],[2,"i",10],[3,"i",20],[3,"o",120],[2,"o",200],[4,"i",300],[4,"o",350],[1,"o",1000]]}]}' > b.json
"$BIN/beatline-batch" encode < b.json > b.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
expect "batch" 202 "$CODE"
for _ in $(seq 600); do [ "$(metric beatline_batches_processed_total)" = 1 ] && break; sleep 0.05; done

T=/v1/apps/shop/call-tree
# the same answer whichever way the tree is read (top-down; merged first)
for extra in '' '&limit=200000' '&root=com.example.Feed.run'; do
  http GET "$T?format=speedscope$extra" "$RD"
  expect "speedscope$extra: status" 200 "$CODE"
  expect_grep "speedscope$extra: JSON" '^Content-Type: application/json' "$HDRS"
  expect "speedscope$extra: schema" 'https://www.speedscope.app/file-format-schema.json' "$(jq -r '."$schema"' <<< "$BODY")"
  expect "speedscope$extra: events" \
    'O run 0,O load 0,O query 0,C query 100,C load 190,O log 190,C log 240,C run 1000' \
    "$(jq -r '.shared.frames as $f | [.profiles[0].events[] | "\(.type) \($f[.frame].name | sub("\\(.*"; "") | sub(".*\\."; "")) \(.at)"] | join(",")' <<< "$BODY")"
  expect "speedscope$extra: frames once, full names" \
    'com.example.Feed.run()V|com.example.Feed.load()V|com.example.Db.query(Ljava/lang/String;)V|com.example.Log.log()V' \
    "$(jq -r '[.shared.frames[].name] | join("|")' <<< "$BODY")"
  expect "speedscope$extra: profile" 'evented microseconds 0 1000 false' \
    "$(jq -r '"\(.profiles[0].type) \(.profiles[0].unit) \(.profiles[0].startValue) \(.profiles[0].endValue) \(.truncated)"' <<< "$BODY")"

  http GET "$T?format=chrome$extra" "$RD"
  expect "chrome$extra: status" 200 "$CODE"
  expect "chrome$extra: complete events" \
    'com.example.Feed.run()V 0 1000 1 760,com.example.Feed.load()V 0 190 1 90,com.example.Db.query(Ljava/lang/String;)V 0 100 1 100,com.example.Log.log()V 190 50 1 50' \
    "$(jq -r '[.traceEvents[] | select(.ph == "X") | "\(.name) \(.ts) \(.dur) \(.args.calls) \(.args.self_us)"] | join(",")' <<< "$BODY")"
  expect "chrome$extra: a thread name first" 'M thread_name' "$(jq -r '.traceEvents[0] | "\(.ph) \(.name)"' <<< "$BODY")"
done
http GET "$T?format=json" "$RD"
http GET "$T" "$RD"
plain=$BODY
http GET "$T?format=json" "$RD"
expect "format=json is the tree" "$plain" "$BODY"

# limits: cut nodes leave nesting whole and say truncated
http GET "$T?format=speedscope&limit=2" "$RD"
expect "speedscope limit=2" 'O 0,O 0,C 190,C 1000 true' \
  "$(jq -r '([.profiles[0].events[] | "\(.type) \(.at)"] | join(",")) + " \(.truncated)"' <<< "$BODY")"
http GET "$T?format=chrome&max_depth=1" "$RD"
expect "chrome max_depth=1" '1 true' "$(jq -r '"\([.traceEvents[] | select(.ph == "X")] | length) \(.truncated)"' <<< "$BODY")"
http GET "$T?format=speedscope&thread=main&limit=0" "$RD"
expect "speedscope limit=0: no events" '0 0' "$(jq -r '"\(.profiles[0].events | length) \(.profiles[0].endValue)"' <<< "$BODY")"

http GET "$T?format=pprof" "$RD"
expect "bad format" 400 "$CODE"
contains "bad format named" "'format'" "$BODY"
finish
