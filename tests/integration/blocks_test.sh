#!/usr/bin/env bash
# Main-thread blocks, server half (issue 13), end to end on loopback with
# small hand-made files (no Java needed).
#
#   blocks_test.sh BUILD_DIR WORK_DIR
#
# Golden cases: the same stall with noise around it lands in one group, a
# different culprit (or time spread over children) in another, an empty
# window in its own; the same stall in a build with obfuscated names has the
# same signature; percentiles, devices, sessions, ANRs, first/last seen and
# the target; malformed and unknown events are counted by reason and the
# batch (and its slow methods) is still processed; window edge cases;
# endpoint parameters and errors; kill -9 while blocks are written leaves
# them consistent with the batches (exactly once).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
create_app "$DATA" shop
start_server "$DATA"

processed=0
# batch NAME UUID BUILD SESSION ORIGIN RECORDS-JSON EVENTS-JSON -> NAME.bin
batch() {
  printf '%s' "$6" > "$1.recs"
  printf '%s' "$7" > "$1.events"
  jq -cn --arg id "$2" --arg b "$3" --arg s "$4" --argjson o "$5" --slurpfile r "$1.recs" \
    --slurpfile e "$1.events" '{batch_id:$id, app:"shop", build:$b, session_id:$s, origin_wall_us:$o,
      device:{model:"m", os:"14", sdk:34},
      threads:[{id:1, name:"main", main:true, truncated:false, records:$r[0]},
               {id:2, name:"worker", main:false, truncated:false, records:[[6,"i",0],[6,"o",5]]}],
      events:$e[0]}' > "$1.json"
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}
post() { http POST /v1/apps/shop/batches "$ING" --data-binary @"$1.bin"; }
# records: lines "MID i|o T" shifted by OFFSET, mids mapped by MAP (sed script)
recs() { # OFFSET [sed script] < lines
  sed "${2:-}" | awk -v off="$1" 'NF == 3 { printf "%s[%d,\"%s\",%d]", (n++ ? "," : ""), $1, $2, $3 + off }'
}
ev() { # thread begin end target device [anr]
  jq -cn --argjson t "$1" --argjson b "$2" --argjson e "$3" --arg g "$4" --arg d "$5" \
    --argjson a "${6:-false}" '{type:"block", thread:$t, begin_us:$b, end_us:$e, target:$g,
      kind:"awt", device:$d, anr:$a}'
}

# --- build 1.0 (original names) and 2.0 (obfuscated, with its mapping) -----
cat > ids1.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.Feed run ()V
2,1,com.example.Feed load ()V
3,1,com.example.Db query (Ljava/lang/String;)V
4,1,com.example.Log log ()V
5,1,com.example.Img decode ()V
6,1,com.example.Util tiny ()V
7,1,com.example.Main loop ()V
EOF
cat > ids2.txt << 'EOF'
# beatline method-ids v1 names=obfuscated
11,1,a.a a ()V
12,1,a.a b ()V
13,1,b.a a (Ljava/lang/String;)V
14,1,c.a a ()V
15,1,d.a a ()V
17,1,e.a a ()V
EOF
cat > mapping2.txt << 'EOF'
com.example.Feed -> a.a:
    void run() -> a
    void load() -> b
com.example.Db -> b.a:
    void query(java.lang.String) -> a
com.example.Log -> c.a:
    void log() -> a
com.example.Img -> d.a:
    void decode() -> a
com.example.Main -> e.a:
    void loop() -> a
EOF
put_ids shop 1.0 ids1.txt "method-ids 1.0"
put_ids shop 2.0 ids2.txt "method-ids 2.0"
http PUT /v1/apps/shop/builds/2.0/mapping "$UPL" --data-binary @mapping2.txt
expect "mapping 2.0" 201 "$CODE"

# The stall: run > load > query holds the time (relative µs).
STALL='1 i 0
4 i 10
4 o 20
2 i 100
3 i 200
3 o 880000
2 o 890000
6 i 890100
6 o 890200
1 o 900000'
# The same stall with other noise around it (and a different length).
NOISY='1 i 0
6 i 5
6 o 50
4 i 60
4 o 70
2 i 100
4 i 150
4 o 300
3 i 400
3 o 700400
2 o 750000
5 i 750100
5 o 790000
1 o 800000'
# A different culprit: run > decode.
OTHER='1 i 0
5 i 100
5 o 850000
4 i 850100
4 o 850200
1 o 900000'
# Time spread evenly: no child of run holds more than half (400000 of 800000).
SPREAD='1 i 0
2 i 0
2 o 400000
5 i 400000
5 o 800000
1 o 800000'
O1=1795960000000000
# batch 1: the outer loop frame is open before every window (not part of a
# block); four blocks, one window without calls, malformed lines
R1="[[7,\"i\",0],$(recs 10 <<< "$STALL"),$(recs 1000010 <<< "$NOISY"),$(recs 2000010 <<< "$OTHER"),$(recs 3000000 <<< '6 i 0
6 o 100'),$(recs 4000010 <<< "$SPREAD"),[7,\"o\",9000000]]"
E1="[$(ev 0 10 900010 'java.awt.event.InvocationEvent/com.example.Feed$1' dev-1),
$(ev 0 1000010 1800010 'java.awt.event.InvocationEvent/com.example.Feed$2' dev-1),
$(ev 0 2000010 2900010 'java.awt.event.InvocationEvent/com.example.Img$1' dev-1),
$(ev 0 4000010 4800010 'java.awt.event.InvocationEvent/com.example.Feed$3' dev-1),
$(ev 0 5000000 5800000 'java.awt.event.MouseEvent/com.example.Empty' dev-1),
{\"type\":\"no-such-type\",\"took_us\":5},
\"this line is not JSON\",
\"[1,2]\",
{\"no_type\":1},
{\"type\":7},
$(ev 0 900 800 begin-after-end dev-1),
$(ev 5 10 900010 thread-out-of-range dev-1),
$(ev 5000000000 10 900010 thread-far-out-of-range dev-1),
{\"type\":\"block\",\"thread\":0,\"begin_us\":10,\"end_us\":900010,\"target\":\"t\",\"kind\":\"tv\",\"device\":\"d\"},
{\"type\":\"block\",\"thread\":0,\"begin_us\":-1,\"end_us\":900010,\"target\":\"t\",\"kind\":\"awt\",\"device\":\"d\"},
{\"type\":\"block\",\"thread\":0,\"begin_us\":10,\"end_us\":900010,\"target\":\"t\",\"kind\":\"awt\"},
{\"type\":\"block\",\"thread\":0,\"begin_us\":10,\"end_us\":900010,\"target\":\"t\",\"kind\":\"awt\",\"device\":\"d\",\"anr\":1},
{\"type\":\"block\",\"thread\":0,\"begin_us\":10,\"end_us\":900010,\"target\":\"t\",\"kind\":\"awt\",\"device\":\"d\",\"anr\":true,\"stack\":[\"a.b(X)\\nc.d(Y)\"]},
{\"type\":\"block\",\"thread\":0,\"begin_us\":10,\"end_us\":900010,\"target\":\"t\\u0000x\",\"kind\":\"awt\",\"device\":\"d\"}]"
batch b1 11111111-1111-4111-8111-000000000001 1.0 s1 $O1 "$R1" "$E1"
post b1
expect "batch 1 accepted (malformed events do not refuse it)" 202 "$CODE"
# batch 2: the stall as an ANR, 1.5 s, on another device and session
R2="[$(recs 0 <<< '1 i 0
2 i 100
3 i 200
3 o 1499000
2 o 1499500
1 o 1500000')]"
batch b2 11111111-1111-4111-8111-000000000002 1.0 s2 $((O1 + 3600000000)) "$R2" \
  "[$(ev 0 0 1500000 'android.os.Handler/com.example.Feed$1' dev-2 true)]"
post b2
expect "batch 2 accepted" 202 "$CODE"
# batch 3: the stall again, 0.7 s, device 1 in session 2 (latest block)
R3="[$(recs 50 <<< "$STALL" | sed 's/880050/700040/; s/890050/700045/; s/890150/700046/; s/890250/700047/; s/900050/700050/')]"
batch b3 11111111-1111-4111-8111-000000000003 1.0 s2 $((O1 + 7200000000)) "$R3" \
  "[$(ev 0 50 700050 'java.awt.event.InvocationEvent/com.example.Feed$9' dev-1)]"
post b3
expect "batch 3 accepted" 202 "$CODE"
# batch 4: the stall in the obfuscated build
R4="[$(recs 10 's/^1 /11 /; s/^2 /12 /; s/^3 /13 /; s/^4 /14 /; s/^6 /15 /' <<< "$STALL")]"
# (an ANR, with the stack the watchdog sampled, obfuscated: retraced when answered)
E4=$(ev 0 10 900010 'android.os.Handler/a.a$1' dev-9 true |
  jq -c '. + {stack: ["b.a.a(SourceFile)", "a.a.b(SourceFile)", "a.a.a(SourceFile)", "android.os.Looper.loop(Looper.java:288)"]}')
batch b4 11111111-1111-4111-8111-000000000004 2.0 s9 $O1 "$R4" "[$E4]"
post b4
expect "batch 4 accepted" 202 "$CODE"
expect_processed 4

# --- malformed events: counted by reason, batch processed, slow methods exact
m_of() { curl -s "$URL/metrics" | awk -v r="beatline_events_malformed_total{reason=\"$1\"}" '$1 == r { print $2 }'; }
expect "malformed: unknown_type" 1 "$(m_of unknown_type)"
expect "malformed: not_json (text, array, a NUL in a string: jansson refuses \\u0000)" 3 "$(m_of not_json)"
expect "malformed: no_type (missing, not a string)" 2 "$(m_of no_type)"
expect "malformed: window (begin > end)" 1 "$(m_of window)"
expect "malformed: thread out of range" 2 "$(m_of thread)"
expect "malformed: bad_field (kind, negative begin, no device, anr not bool, a frame with a line break)" 5 "$(m_of bad_field)"
expect "malformed: budget" 0 "$(m_of budget)"
expect "blocks stored" 8 "$(metric beatline_blocks_total)"
http GET "/v1/apps/shop/slow-methods?build=1.0&thread=main&sort=count&limit=100" "$RD"
expect "slow methods unaffected by events: query calls" 4 \
  "$(jq -r '.methods[] | select(.method.name == "query") | .count' <<< "$BODY")"
expect "slow methods unaffected by events: loop" 1 \
  "$(jq -r '.methods[] | select(.method.name == "loop") | .count' <<< "$BODY")"

# --- groups --------------------------------------------------------------------
http GET "/v1/apps/shop/blocks?build=1.0" "$RD"
expect "list: 200" 200 "$CODE"
expect "list: four groups (stall, other culprit, spread, empty window)" 4 "$(jq '.blocks | length' <<< "$BODY")"
A=$(jq -c '.blocks[0]' <<< "$BODY")
expect "stall: heaviest group first (sort=count)" 4 "$(jq .count <<< "$A")"
expect "stall: culprit" "com.example.Db query (Ljava/lang/String;)V" \
  "$(jq -r '.method | "\(.class) \(.name) \(.descriptor)"' <<< "$A")"
expect "stall: path" "run load query" "$(jq -r '[.path[].name] | join(" ")' <<< "$A")"
expect "stall: max" 1500000 "$(jq .max_us <<< "$A")"
# durations 700000, 800000, 900000, 1500000: p50 = 800000, p90 = p99 = 1500000 (1% error)
near() { # name expected actual
  if [ "$(jq -n --argjson e "$2" --argjson a "$3" '($a - $e | if . < 0 then -. else . end) <= $e / 100')" == true ]; then ok; else bad "$1: expected $2 within 1%, got $3"; fi
}
near "stall: p50" 800000 "$(jq .p50_us <<< "$A")"
near "stall: p90" 1500000 "$(jq .p90_us <<< "$A")"
near "stall: p99" 1500000 "$(jq .p99_us <<< "$A")"
expect "stall: p99 <= max" true "$(jq '.p99_us <= .max_us' <<< "$A")"
expect "stall: devices, sessions, anrs" "2 2 1" "$(jq -r '"\(.devices) \(.sessions) \(.anrs)"' <<< "$A")"
expect "stall: first_at, last_at" "$((O1 + 10)) $((O1 + 7200000000 + 50))" \
  "$(jq -r '"\(.first_at) \(.last_at)"' <<< "$A")"
expect "stall: target of the latest block" 'java.awt.event.InvocationEvent/com.example.Feed$9' "$(jq -r .target <<< "$A")"
SIG=$(jq -r .signature <<< "$A")
expect_grep "signature: 32 hex digits" '^[0-9a-f]\{32\}$' "$SIG"
B=$(jq -c '.blocks[] | select(.method.name == "decode")' <<< "$BODY")
expect "other culprit: own group" "1 run decode" "$(jq -r '"\(.count) \([.path[].name] | join(" "))"' <<< "$B")"
C=$(jq -c '.blocks[] | select(.path | length == 1)' <<< "$BODY")
expect "spread time: stops at run" "1 run 800000" "$(jq -r '"\(.count) \(.method.name) \(.max_us)"' <<< "$C")"
D=$(jq -c '.blocks[] | select(.path | length == 0)' <<< "$BODY")
expect "window without calls: own group, no method" "1 null 800000" "$(jq -r '"\(.count) \(.method) \(.max_us)"' <<< "$D")"
expect "signatures differ" 4 "$(jq '[.blocks[].signature] | unique | length' <<< "$BODY")"

http GET "/v1/apps/shop/blocks?build=2.0" "$RD"
expect "obfuscated build: same signature as the original" "$SIG 1 com.example.Db.query" \
  "$(jq -r '.blocks[0] | "\(.signature) \(.count) \(.method.class).\(.method.name)"' <<< "$BODY")"
SIG2=$(jq -r '.blocks[0].signature' <<< "$BODY")
http GET "/v1/apps/shop/blocks/$SIG2?build=2.0" "$RD"
expect "obfuscated build: the ANR's stack, retraced, innermost first" \
  'com.example.Db.query(Db.java)|com.example.Feed.load(Feed.java)|com.example.Feed.run(Feed.java)|android.os.Looper.loop(Looper.java:288)' \
  "$(jq -r '.anr_stack.frames | join("|")' <<< "$BODY")"
expect "obfuscated build: the ANR stack's block begin" "$((O1 + 10))" "$(jq -r '.anr_stack.at_us' <<< "$BODY")"
http GET "/v1/apps/shop/blocks/$SIG?build=1.0" "$RD"
expect "a group without an ANR stack: anr_stack null" null "$(jq -c '.anr_stack' <<< "$BODY")"
http GET "/v1/apps/shop/blocks?build=2.0" "$RD"
expect "obfuscated build: the target's classes retraced (a nested class the mapping lacks: its outer class's)" \
  'android.os.Handler/com.example.Feed$1' "$(jq -r '.blocks[0].target' <<< "$BODY")"

# --- a method symbolicated late: build 3.0's first method-ID file lacks
# query (3); its blocks show "unknown method 3" until a complete file
# replaces it, then the original names and the signature of build 1.0
grep -v '^3,' ids1.txt > ids3.txt
put_ids shop 3.0 ids3.txt "method-ids 3.0 (without query)"
batch b5 11111111-1111-4111-8111-000000000005 3.0 s5 $O1 "[$(recs 10 <<< "$STALL")]" "[$(ev 0 10 900010 late dev-5)]"
post b5
expect "batch 5 accepted" 202 "$CODE"
expect_processed 1
http GET "/v1/apps/shop/blocks?build=3.0" "$RD"
expect "late names: placeholder first" "? unknown method 3 false" \
  "$(jq -r --arg s "$SIG" '.blocks[0] | "\(.method.class) \(.method.name) \(.signature == $s)"' <<< "$BODY")"
http PUT "/v1/apps/shop/builds/3.0/method-ids?replace=true" "$UPL" --data-binary @ids1.txt
expect "method-ids 3.0 replaced" 200 "$CODE"
for _ in $(seq 600); do
  http GET "/v1/apps/shop/blocks?build=3.0" "$RD"
  [ "$(jq -r '.blocks[0].method.name' <<< "$BODY")" == query ] && break
  sleep 0.05
done
expect "late names: resolved, same signature as build 1.0" "com.example.Db query $SIG" \
  "$(jq -r '.blocks[0] | "\(.method.class) \(.method.name) \(.signature)"' <<< "$BODY")"
http GET "/v1/apps/shop/blocks/$SIG?build=3.0" "$RD"
expect "late names: the call tree too" "query" "$(jq -r '.call_tree[0].children[0].children[0].method.name' <<< "$BODY")"

# --- one group and its merged call tree -----------------------------------------
http GET "/v1/apps/shop/blocks/$SIG?build=1.0" "$RD"
expect "detail: 200" 200 "$CODE"
expect "detail: group figures" "4 $SIG" "$(jq -r '"\(.count) \(.signature)"' <<< "$BODY")"
expect "detail: one root, run x4 (the open loop frame is not in a block)" "1 run 4" \
  "$(jq -r '"\(.call_tree | length) \(.call_tree[0].method.name) \(.call_tree[0].count)"' <<< "$BODY")"
expect "detail: load under run, heaviest child first" "load 4 query 4" \
  "$(jq -r '.call_tree[0].children[0] | "\(.method.name) \(.count) \(.children[0].method.name) \(.children[0].count)"' <<< "$BODY")"
expect "detail: query total" $((879800 + 700000 + 1498800 + 699790)) \
  "$(jq -r '.call_tree[0].children[0].children[0].total_us' <<< "$BODY")"
expect "detail: not truncated" false "$(jq .truncated <<< "$BODY")"
http GET "/v1/apps/shop/blocks/$SIG?build=1.0&limit=1" "$RD"
expect "detail: limit=1 cuts the tree" "true 0" "$(jq -r '"\(.truncated) \(.call_tree[0].children | length)"' <<< "$BODY")"

# --- parameters and errors -------------------------------------------------------
http GET "/v1/apps/shop/blocks?build=1.0&sort=max&limit=1" "$RD"
expect "sort=max, limit=1" "1 1500000" "$(jq -r '"\(.blocks | length) \(.blocks[0].max_us)"' <<< "$BODY")"
http GET "/v1/apps/shop/blocks?build=1.0&sort=p50" "$RD"
expect "sort=p50: the 900000 µs group first" "decode" "$(jq -r '.blocks[0].method.name' <<< "$BODY")"
http GET "/v1/apps/shop/blocks?build=1.0&since=$(( (O1 + 7200000000) / 1000000 ))" "$RD"
expect "since: only the last hour's block" "1 1 700000" "$(jq -r '"\(.blocks | length) \(.blocks[0].count) \(.blocks[0].max_us)"' <<< "$BODY")"
http GET "/v1/apps/shop/blocks?build=1.0&until=$(( O1 / 1000000 + 1 ))" "$RD"
expect "until: the first hour only" "4 2 1 1" "$(jq -r '"\(.blocks | length) \(.blocks[0].count) \(.blocks[0].devices) \(.blocks[0].sessions)"' <<< "$BODY")"
expect "until: target of the latest block of that hour" 'java.awt.event.InvocationEvent/com.example.Feed$2' "$(jq -r '.blocks[0].target' <<< "$BODY")"
http GET "/v1/apps/shop/blocks?build=1.0&sort=total" "$RD"
expect "bad sort: 400" "400 'sort' must be one of count, p50, p90, p99, max" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/blocks?build=1.0&limit=-1" "$RD"
expect "bad limit: 400" 400 "$CODE"
contains "bad limit: names it" "'limit'" "$BODY"
http GET "/v1/apps/shop/blocks?build=9.9" "$RD"
expect "unknown build: 404" "404 unknown build '9.9'" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/blocks" "$ING"
expect "ingest key cannot read: 403" 403 "$CODE"
http GET "/v1/apps/shop/blocks" ""
expect "no key: 401" 401 "$CODE"
http GET "/v1/apps/shop/blocks/xyz?build=1.0" "$RD"
expect "bad signature: 400" 400 "$CODE"
http GET "/v1/apps/shop/blocks/00000000000000000000000000000000?build=1.0" "$RD"
expect "unknown signature: 404" 404 "$CODE"
http GET "/v1/apps/shop/blocks/$SIG/more" "$RD"
expect "path under a signature: 404" 404 "$CODE"
http POST "/v1/apps/shop/blocks" "$RD"
expect "POST blocks: 404 like other unknown routes" 404 "$CODE"

# --- kill -9 while a batch's blocks are written: exactly once ----------------------
# 4097 blocks of the stall in one batch (one past the per-batch cap, counted
# as "budget"), killed with -9 while the writer stores them (a few tries at
# growing delays: the landing point is not guaranteed); after the restarts
# the group holds exactly 4 + 4096 blocks, and posting it again is a
# duplicate.
EK=$(jq -cn '[range(4097) | {type:"block", thread:0, begin_us:10, end_us:900010, target:"k",
  kind:"awt", device:"dev-k\(. % 7)"}]')
batch k 11111111-1111-4111-8111-00000000000a 1.0 sk $O1 "[$(recs 10 <<< "$STALL")]" "$EK"
post k
expect "kill batch accepted" 202 "$CODE"
# kill -9 after growing delays until the batch was processed before a kill
# (or by the last start): some kill lands while the writer stores blocks
kills=0
for d in 0.3 0.6 1 1.5 2 3 4; do
  http GET "/v1/apps/shop/builds" "$RD"
  [ "$(jq -r '.builds[] | select(.build == "1.0") | .batches' <<< "$BODY")" == 4 ] && break
  sleep "$d"
  kill -9 "$SERVER_PID"
  wait "$SERVER_PID" 2> /dev/null || true
  kills=$((kills + 1))
  start_server "$DATA"
done
echo "kill -9: $kills time(s)"
for _ in $(seq 1200); do
  http GET "/v1/apps/shop/builds" "$RD"
  [ "$(jq -r '.builds[] | select(.build == "1.0") | .batches' <<< "$BODY")" == 4 ] && break
  sleep 0.05
done
http GET "/v1/apps/shop/blocks/$SIG?build=1.0" "$RD"
# 4 + 4096: the 4097th block event of the batch is past the cap
expect "after kill -9: blocks counted exactly once (and capped)" "4100 9 3" \
  "$(jq -r '"\(.count) \(.devices) \(.sessions)"' <<< "$BODY")"
expect "after kill -9: tree counted exactly once" 4100 "$(jq -r '.call_tree[0].count' <<< "$BODY")"
post k
expect "kill batch again: duplicate" 200 "$CODE"
sleep 0.3
http GET "/v1/apps/shop/blocks/$SIG?build=1.0" "$RD"
expect "duplicate not counted" 4100 "$(jq -r .count <<< "$BODY")"
finish
