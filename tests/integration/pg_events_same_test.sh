#!/usr/bin/env bash
# Same answers on both stores (issue 19) for the event aggregates: the same
# uploads and batches (blocks with an ANR stack, cold and hot launches with
# their windows' calls, network requests of several hosts, methods,
# statuses and callers, over three hours, and byte totals past 2^63) go to
# a server on SQLite and then to a server on PostgreSQL; GET /blocks,
# /blocks/{signature}, /launches, /launches/tree and /network (with
# filters, sorts and hour ranges) answer byte-identical JSON.
#
#   pg_events_same_test.sh BUILD_DIR WORK_DIR
#
# PostgreSQL: the cluster at BEATLINE_TEST_PG_URL (a base URL) when set,
# else a throwaway one (tests/lib/pg.sh); skipped (77) when PostgreSQL's
# server binaries are not installed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
# shellcheck source=../lib/pg.sh
. "$HERE/../lib/pg.sh"

cleanup() {
  stop_server
  pg_stop
}
trap cleanup EXIT
if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  if ! _pg_bin > /dev/null 2>&1; then
    echo "SKIP: PostgreSQL's server binaries are not installed"
    finish 77
  fi
  if ! pg_start 2> pg_start.err; then
    bad "PostgreSQL did not start: $(tail -3 pg_start.err)"
    finish
  fi
fi
PG_URL=$(pg_new_db)

O=1795960800000000 # an hour's start, µs since the epoch
H=3600000000

# batch NAME UUID ORIGIN RECORDS-JSON EVENTS-JSON -> NAME.bin
batch() {
  printf '%s' "$4" > "$1.recs"
  printf '%s' "$5" > "$1.events"
  jq -cn --arg id "$2" --argjson o "$3" --slurpfile r "$1.recs" --slurpfile e "$1.events" \
    '{batch_id:$id, app:"shop", build:"1.0", session_id:"s1", origin_wall_us:$o,
      device:{model:"m", os:"14", sdk:34},
      threads:[{id:1, name:"main", main:true, truncated:false, records:$r[0]}],
      events:$e[0]}' > "$1.json"
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}
cat > ids.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.App attachBaseContext (Landroid/content/Context;)V
2,1,com.example.App onCreate ()V
3,1,com.example.Main onCreate (Landroid/os/Bundle;)V
4,1,com.example.Main onStart ()V
5,1,com.example.Main onResume ()V
6,1,com.example.Db open ()V
7,1,com.example.Feed load ()V
EOF
# calls of the main thread (methodIds 1-7, one unknown: 9)
R='[[1,"i",1000],[1,"o",5000],
    [2,"i",6000],[6,"i",7000],[6,"o",27000],[2,"o",30000],
    [3,"i",35000],[6,"i",36000],[9,"i",37000],[9,"o",38000],[6,"o",46000],[3,"o",70000],
    [4,"i",70100],[4,"o",71000],[5,"i",71100],[5,"o",80000],
    [7,"i",95000],[6,"i",96000],[6,"o",399000],[7,"o",400000],
    [4,"i",500500],[4,"o",510000],[5,"i",510100],[5,"o",530000]]'
launches() { # the first frame of the cold launch: $1
  jq -cn --argjson ff "$1" '[
    {type:"launch", kind:"cold", thread:0, device:"d1", start_us:-100000,
     phases:{application_attach_base_context:[1000,5000], application_on_create:[6000,30000],
             activity_on_create:[35000,70000], activity_on_start:[70100,71000],
             activity_on_resume:[71100,80000]},
     first_frame_us:$ff, fully_drawn_us:($ff + 30000), activity:"com.example.Main"},
    {type:"launch", kind:"hot", thread:0, device:"d2", start_us:500000,
     phases:{activity_on_start:[500500,510000], activity_on_resume:[510100,530000]},
     first_frame_us:560000}]'
}
blocks() { # the end of the long block: $1
  jq -cn --argjson e "$1" '[
    {type:"block", thread:0, begin_us:95000, end_us:$e, target:"com.example.Feed$H",
     kind:"awt", device:"d1", anr:true, stack:["com.example.Db.open(Db.java:12)",
     "com.example.Feed.load(Feed.java:40)"]},
    {type:"block", thread:0, begin_us:35000, end_us:70000, target:"t2", kind:"awt",
     device:"d2", anr:false}]'
}
net() { # METHOD HOST PATH TOTAL STATUS CALLER [jq object merged last]
  local x=${7:-'{}'}
  jq -cn --arg m "$1" --arg h "$2" --arg p "$3" --argjson t "$4" --argjson s "$5" \
    --argjson c "$6" --argjson x "$x" \
    '{type:"network", device:"dev-1", thread_name:"OkHttp", begin_us:1000, end_us:(1000 + $t),
      method:$m, scheme:"https", host:$h, port:443, path:$p, status:$s, protocol:"h2",
      bytes_out:100, bytes_in:1000, total_us:$t, ttfb_us:($t / 2 | floor), dns_us:300,
      connect_us:900, tls_us:2000, caller:$c} + $x'
}
network() { # a variation: $1, durations times $2
  local f=$2
  jq -cs . <(net GET api.example.com "/v2/users/$((17 + $1))/orders" $(((200000 + $1 * 1000) * f)) 200 7) \
    <(net GET api.example.com /v2/users/5/orders $((500000 * f)) 404 6) \
    <(net POST API.example.com /v2/login $(((90000 + $1) * f)) 200 3 '{"bytes_out":5000}') \
    <(net GET cdn.example.com /img/a.png $((3000 * f)) 304 9) \
    <(net GET cdn.example.com /img/b.png $((4000 * f)) 200 7 '{"ttfb_us":null,"dns_us":null}') \
    <(net PUT api.example.com /v2/items/99 $((1000 * f)) 500 2 '{"status":null,"error":"timeout"}')
}
jq -cn '[range(16384) | {type:"network", device:"d", begin_us:0, end_us:10, method:"GET",
  scheme:"http", host:"huge.example.com", port:80, path:"/h", bytes_out:0,
  bytes_in:281474976710655, total_us:10, status:200}]' > huge.events

for i in 0 1 2; do
  batch "b$i" "44444444-1111-4111-8111-00000000000$i" $((O + i * H)) "$R" \
    "$(jq -cs 'add' <(launches $((90000 + i * 1000))) <(blocks $((400000 + i * 50000))) \
       <(network "$i" 1))"
  # half an hour later, other durations: the same rows, merged (sketches too)
  batch "c$i" "44444444-3333-4111-8111-00000000000$i" $((O + i * H + H / 2)) "$R" \
    "$(jq -cs 'add' <(launches $((150000 + i * 7000))) <(blocks $((700000 + i * 90000))) \
       <(network $((i + 40)) 3))"
  batch "huge$i" "44444444-2222-4111-8111-00000000000$i" $((O + i * H)) '[[1,"i",0],[1,"o",10]]' \
    "$(cat huge.events)"
done

# run NAME [server args...]: the whole scenario on one store; answers in NAME/
run() {
  local name=$1 data=$WORK/data-$1 keys ING UPL RD n
  shift
  mkdir -p "$name"
  create_app "$data" shop "$@"
  start_server "$data" "$@"
  put_ids shop 1.0 ids.txt "$name: method-ids"
  local k=0
  for b in b0 c0 b1 c1 b2 c2 huge0 huge1 huge2; do # one at a time: the same order of processing
    k=$((k + 1))
    http POST /v1/apps/shop/batches "$ING" --data-binary @"$b.bin"
    expect "$name: batch $b accepted" 202 "$CODE"
    for _ in $(seq 600); do # bounded: 60 s
      http GET /v1/apps/shop/builds "$RD"
      n=$(jq -r '.builds[] | select(.build == "1.0") | .batches' <<< "$BODY")
      [ "$n" == "$k" ] && break
      sleep 0.1
    done
    expect "$name: batch $b processed" "$k" "$n"
  done
  local q since=$((O / 1000000)) until=$((O / 1000000 + 7200))
  local -a queries=(
    "blocks?build=1.0" "blocks?build=1.0&sort=max" "blocks?build=1.0&since=$since&until=$until"
    "launches?build=1.0" "launches?build=1.0&kind=cold&since=$since&until=$until"
    "launches/tree?build=1.0&kind=cold" "launches/tree?build=1.0&kind=hot"
    "network?build=1.0" "network?build=1.0&sort=bytes" "network?build=1.0&sort=p99&callers=100"
    "network?build=1.0&host=api.example.com&method=GET"
    "network?build=1.0&since=$since&until=$until")
  for q in "${queries[@]}"; do
    http GET "/v1/apps/shop/$q" "$RD"
    expect "$name: GET $q" 200 "$CODE"
    printf '%s' "$BODY" > "$name/$(tr -c 'A-Za-z0-9=\n' _ <<< "$q")"
  done
  http GET "/v1/apps/shop/blocks?build=1.0" "$RD"
  for q in $(jq -r '.blocks[].signature' <<< "$BODY"); do
    http GET "/v1/apps/shop/blocks/$q?build=1.0" "$RD"
    expect "$name: GET blocks/$q" 200 "$CODE"
    printf '%s' "$BODY" > "$name/block_$q"
  done
  stop_server
}

run sqlite
run pg --store "$PG_URL"

# the answers, byte for byte
expect "answers: the same files" "$(ls sqlite)" "$(ls pg)"
expect "answers: two block groups" 2 "$(ls sqlite | grep -c '^block_')"
for f in sqlite/*; do
  f=${f#sqlite/}
  if cmp -s "sqlite/$f" "pg/$f"; then ok; else
    bad "$f differs: $(diff <(jq -S . "sqlite/$f") <(jq -S . "pg/$f") | head -10)"
  fi
done
# the answers are about something: figures from every part of the input
contains "network: bytes past 2^63 saturated on both" '"bytes_in":9223372036854775807' \
  "$(cat pg/network_build=1_0_sort=bytes)"
contains "launches: six cold launches" '"count":6' "$(cat pg/launches_build=1_0)"
contains "launch tree: original names" '"name":"onCreate"' \
  "$(cat pg/launches_tree_build=1_0_kind=cold)"
contains "blocks: the ANR stack" 'Db.open(Db.java:12)' "$(cat pg/block_*)"
finish
