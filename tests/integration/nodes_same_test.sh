#!/usr/bin/env bash
# Same answers (issue 19): the same uploads, batches and queries through a
# server on SQLite and through three beatline-server nodes sharing one
# PostgreSQL database give byte-identical answers, from every node.
#
#   nodes_same_test.sh BUILD_DIR WORK_DIR
#
# Inputs, the same on both stores: one app; three builds (1.0 and 2.0 with
# original names, 3.0 obfuscated with a ProGuard mapping); user URL
# patterns; 27 batches spread over the builds, with four threads (one
# main) of random nesting, methods tied on every figure (equal times, names
# that differ only in case, '_', UTF-8, quotes, two methodIds with one
# name, an unknown methodId) and new tied call paths in every batch (the
# order their nodes are made in is the order of processing), blocks,
# cold/warm/hot launches and network requests (groups tied on every sort
# key). SQLite gets the batches in their order; the PostgreSQL nodes in
# another order, round-robin, in bursts (so batches are processed in
# another order, by several nodes, with node ids from several 2^25 blocks):
# answers must depend on the data only, not on the order it came in.
# Then every read endpoint of docs/api.md with its parameters (builds,
# slow-methods with every sort and filter, method-histogram, call-tree in
# every format with max_depth/limit/root, blocks and blocks/{signature},
# launches and launches/tree, network, url-patterns, POST retrace, and some
# errors) is asked from SQLite and from each PostgreSQL node: status and
# body must be the same bytes.
#
# The documented exceptions (docs/architecture.md, "Several nodes on
# PostgreSQL"): times of receipt — `created_at` and `uploaded_at` of GET
# …/builds and `updated_at` of GET …/url-patterns — are the clocks of the
# moment each store received them; they are replaced by 0 (sed, nothing
# else changes) before the comparison. /metrics counts per process: not
# compared. Keys differ per store (each store makes its own).
#
# PostgreSQL: the cluster at BEATLINE_TEST_PG_URL (a base URL) when set,
# else a throwaway one (tests/lib/pg.sh); skipped (77) when PostgreSQL's
# server binaries are not installed.
set -euo pipefail
# this test picks its stores itself: the first server on SQLite
export BEATLINE_TEST_STORE=sqlite
. "$(dirname "$0")/lib.sh"
setup "$@"
# shellcheck source=../lib/pg.sh
. "$HERE/../lib/pg.sh"

NODES=3
PIDS=()
URLS=()
PGURL=
cleanup() {
  stop_server
  for i in $(seq 0 $((NODES - 1))); do
    if [ -n "${PIDS[$i]:-}" ]; then
      kill "${PIDS[$i]}" 2> /dev/null || true
      wait "${PIDS[$i]}" 2> /dev/null || true
    fi
  done
  [ -n "$PGURL" ] && [ -z "$PG_DIR" ] && pg_drop_db "$PGURL"
  pg_stop
}
trap cleanup EXIT
if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  if ! _pg_bin > /dev/null 2>&1; then
    echo "SKIP: PostgreSQL's server binaries are not installed"
    finish 77
  fi
  if ! pg_start "$PWD" 2> pg_start.err; then
    bad "PostgreSQL did not start: $(tail -3 pg_start.err)"
    finish
  fi
fi
PGURL=$(pg_new_db) || { bad "no database"; finish; }

O=1795960800000000 # an hour's start, µs since the epoch
H=3600000000
BUILDS=(1.0 2.0 3.0)
NB=27

# --- uploads -----------------------------------------------------------------
# methodIds: 0-19 random calls; 20-27 the main thread's lifecycle; 30-47
# tied methods (47 has the names of 30); 60 is in no file (unknown)
ids_file() { # NAMES(original|obfuscated)
  echo "# beatline method-ids v1 names=$1"
  echo "0,1,com.example.r.Root run ()V"
  for i in $(seq 1 19); do echo "$i,1,com.example.r.W$((i % 5)) m$((i % 7)) (I)V"; done
  echo "20,1,com.example.App attachBaseContext (Landroid/content/Context;)V"
  echo "21,1,com.example.App onCreate ()V"
  echo "22,1,com.example.Main onCreate (Landroid/os/Bundle;)V"
  echo "23,1,com.example.Main onStart ()V"
  echo "24,1,com.example.Main onResume ()V"
  if [ "$1" = obfuscated ]; then
    echo "25,1,a.b a ()V"
    echo "26,1,a.a a ()V"
  else
    echo "25,1,com.example.Db open ()V"
    echo "26,1,com.example.Feed load ()V"
  fi
  echo "27,1,com.example.Ui frame ()V"
  cat << 'EOF'
30,1,com.x.Tie a ()V
31,1,com.x.tie a ()V
32,1,com.x._tie a ()V
33,1,com.x.TIE a ()V
34,1,com.x.Tïe a ()V
35,1,com.x.Tie B ()V
36,1,com.x.Tie b ()V
37,1,com.x.Tie a (I)V
38,1,com.x.Q"uo\te a ()V
39,1,com.x.Tie a (J)V
40,1,com.x.Tie a (Ljava/lang/String;)V
41,1,com.x.T1 z ()V
42,1,com.x.T0 z ()V
43,1,com.x.T2 z ()V
44,1,com.x.T z ()V
45,1,com.x.T z (Z)V
46,1,com.x.TA z ()V
47,1,com.x.Tie a ()V
EOF
}
ids_file original > ids.txt
ids_file obfuscated > ids-obf.txt
cat > mapping.txt << 'EOF'
com.example.Db -> a.b:
    1:1:void open():12:12 -> a
com.example.Feed -> a.a:
    1:1:void load():40:40 -> a
EOF
printf 'java.lang.IllegalStateException: x\n\tat a.a.a(SourceFile:1)\n\tat a.b.a(SourceFile:1)\n' \
  > trace.txt
PATTERNS='{"patterns":["api.example.com/v2/users/*/orders/*"]}'

# --- batches -------------------------------------------------------------------
# the main thread: launch phases and calls (as pg_events_same), then at
# 600 ms the frame 27 whose children are two tied methods of this batch
# (7 µs each) and the unknown 60; build b's i-th batch calls 30+i, 39+i
main_records() { # I
  local i=$1 t=600010 rec j
  rec='[20,"i",1000],[20,"o",5000],
    [21,"i",6000],[25,"i",7000],[25,"o",27000],[21,"o",30000],
    [22,"i",35000],[25,"i",36000],[60,"i",37000],[60,"o",38000],[25,"o",46000],[22,"o",70000],
    [23,"i",70100],[23,"o",71000],[24,"i",71100],[24,"o",80000],
    [26,"i",95000],[25,"i",96000],[25,"o",399000],[26,"o",400000],
    [23,"i",500500],[23,"o",510000],[24,"i",510100],[24,"o",530000],[27,"i",600000]'
  for j in $((30 + i)) $((39 + i)) 60; do
    rec+=",[$j,\"i\",$t],[$j,\"o\",$((t + 7))]"
    t=$((t + 10))
  done
  echo "[$rec,[27,\"o\",600100]]"
}
# batches G and G + 18 are of one build and hour, their events at the same
# µs: of their different block targets, ANR stacks and launch activities
# the answers show one, whatever order they were processed in
launches() { # I
  jq -cn --argjson ff "$((90000 + $1 * 1000))" --arg i "$1" '[
    {type:"launch", kind:"cold", thread:0, device:"d1", start_us:-100000,
     phases:{application_attach_base_context:[1000,5000], application_on_create:[6000,30000],
             activity_on_create:[35000,70000], activity_on_start:[70100,71000],
             activity_on_resume:[71100,80000]},
     first_frame_us:$ff, fully_drawn_us:($ff + 30000), activity:"com.example.Main"},
    {type:"launch", kind:"hot", thread:0, device:"d2", start_us:500000,
     phases:{activity_on_start:[500500,510000], activity_on_resume:[510100,530000]},
     first_frame_us:560000},
    {type:"launch", kind:"warm", thread:0, device:"d3", start_us:590000,
     phases:{activity_on_create:[599000,600101]}, first_frame_us:600200,
     activity:("a.a$" + $i)}]'
}
blocks() { # I
  jq -cn --argjson e "$((400000 + $1 * 50000))" --arg i "$1" '[
    {type:"block", thread:0, begin_us:95000, end_us:$e, target:("a.a$" + $i),
     kind:"awt", device:"d1", anr:true, stack:["a.b.a(SourceFile:1)", "a.a.a(SourceFile:1)",
     ("x.Y.f(Y.java:" + $i + ")")]},
    {type:"block", thread:0, begin_us:35000, end_us:70000, target:"t2", kind:"awt",
     device:"d2", anr:false},
    {type:"block", thread:0, begin_us:599999, end_us:600101, target:"t3", kind:"awt",
     device:"d3", anr:false},
    {type:"block", thread:0, begin_us:600009, end_us:600018, target:"t4", kind:"awt",
     device:"d4", anr:false}]'
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
# block groups tied on every figure, first met in different batches: the
# last block (its path: the batch's tied method); so are the network groups
# of cdn3 (a path per I mod 3)
network() { # I: groups tied on every sort key too (the cdn ones)
  jq -cs . <(net GET api.example.com "/v2/users/$((17 + $1))/orders/9" $((200000 + $1 * 1000)) 200 26) \
    <(net GET api.example.com /v2/users/5/orders/1 500000 404 25) \
    <(net POST API.example.com /v2/login $((90000 + $1)) 200 22 '{"bytes_out":5000}') \
    <(net GET cdn.example.com /img/a.png 3000 200 26) \
    <(net GET cdn.example.com /img/b.png 3000 200 26) \
    <(net HEAD cdn.example.com /img/c.png 3000 200 26) \
    <(net GET cdn2.example.com /img/a.png 3000 200 60) \
    <(net GET cdn3.example.com "/p$(($1 % 3))/a.js" 3000 200 26) \
    <(net PUT api.example.com /v2/items/99 1000 500 21 '{"status":null,"error":"timeout"}')
}
# batch G (0..NB-1): build (G / 3) % 3, its I-th batch; threads 2, 3 of
# random nesting; thread 4 calls Root then tied methods (7 µs each)
make_batch() { # G
  local g=$1 b=$(((g / 3) % 3)) i=$(((g / 9) * 3 + g % 3)) ev
  ev=$(jq -cs add <(launches "$i") <(blocks "$i") <(network "$i"))
  awk -v g="$g" -v b="${BUILDS[$b]}" -v w="$((O + (g % 6) * H / 2))" -v i="$i" \
    -v main="$(main_records "$i")" -v ev="$ev" 'BEGIN {
    srand(7 * g + 1)
    printf "{\"batch_id\":\"5a5e0000-0000-4000-8000-%012d\",\"app\":\"shop\",\"build\":\"%s\",", g, b
    printf "\"session_id\":\"s%d\",\"origin_wall_us\":%s,", g % 4, w
    printf "\"device\":{\"model\":\"m\",\"os\":\"14\",\"sdk\":34},\"threads\":["
    printf "{\"id\":1,\"name\":\"main\",\"main\":true,\"truncated\":false,\"records\":%s}", main
    for (th = 2; th <= 4; th++) {
      printf ",{\"id\":%d,\"name\":\"t%d\",\"main\":false,\"truncated\":false,\"records\":[", th, th
      sp = 0; t = 0; first = 1
      if (th == 4) {
        printf "[0,\"i\",0]"
        for (k = 0; k < 3; k++) {
          m = k == 0 ? 30 + (i + 4) % 18 : k == 1 ? 30 + (i + 13) % 18 : 60
          t += 5; printf ",[%d,\"i\",%d],[%d,\"o\",%d]", m, t, m, t + 7; t += 7
        }
        printf ",[0,\"o\",%d]]}", t + 5
        continue
      }
      for (k = 0; k < 800 || sp > 0; k++) {
        t += int(rand() * 3) + (rand() < 0.03 ? int(rand() * 2000) : 0)
        enter = sp == 0 || (k < 800 && sp < 10 && rand() < 0.5 + (5 - sp) / 20)
        if (enter) { m = sp == 0 ? 0 : 1 + int(rand() * 19); st[sp++] = m; e = "i" }
        else { m = st[--sp]; e = "o" }
        printf "%s[%d,\"%s\",%d]", (first ? "" : ","), m, e, t; first = 0
      }
      printf "]}"
    }
    printf "],\"events\":%s}\n", ev }' > "b$g.json"
  "$BIN/beatline-batch" encode < "b$g.json" > "b$g.bin"
}
for g in $(seq 0 $((NB - 1))); do make_batch "$g"; done

# --- the stores --------------------------------------------------------------
# node i of the PostgreSQL store: data folder node$i; sets PIDS[i], URLS[i]
start_node() {
  local i=$1
  rm -f "port$i.txt"
  "$BIN/beatline-server" --data "$WORK/node$i" --store "$PGURL" --listen 127.0.0.1:0 \
    --port-file "port$i.txt" 2>> "node$i.log" &
  PIDS[i]=$!
  for _ in $(seq 600); do
    [ -s "port$i.txt" ] && break
    kill -0 "${PIDS[$i]}" 2> /dev/null || break
    sleep 0.05
  done
  if [ ! -s "port$i.txt" ]; then
    bad "node $i did not start: $(tail -5 "node$i.log")"
    finish
  fi
  URLS[i]="http://127.0.0.1:$(cat "port$i.txt")"
}

# req URL METHOD PATH KEY [curl args] -> CODE, body in body.out
req() {
  local u=$1 m=$2 p=$3 k=$4
  shift 4
  CODE=$(curl -s -m 60 -o body.out -w '%{http_code}' -X "$m" -H "Authorization: Bearer $k" \
    "$@" "$u$p")
}
# processed batches summed over the builds, as URL answers
processed() { # URL KEY
  curl -s -m 10 -H "Authorization: Bearer $2" "$1/v1/apps/shop/builds" |
    jq -r '[.builds[].batches] | add // 0' 2> /dev/null || echo "?"
}

# feed NAME URL... : uploads, then the batches in the order ORDER (an
# array of batch numbers), each to the next URL in turn, in bursts of
# BURST with a pause of PAUSE s between bursts; then waits (bounded) until
# every batch is processed
feed() {
  local name=$1 n u g k=0 p j=0
  shift
  local -a us=("$@")
  keys=$("$BIN/beatline-server" --data "$DATA" ${STORE_ARGS[@]+"${STORE_ARGS[@]}"} app create shop)
  ING=$(jq -r .ingest_key <<< "$keys")
  UPL=$(jq -r .upload_key <<< "$keys")
  RD=$(jq -r .read_key <<< "$keys")
  n=${#us[@]}
  # builds made in one order (the newest is the default build), each
  # upload through another node
  req "${us[$((k++ % n))]}" PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
  expect "$name: method-ids 1.0" 201 "$CODE"
  req "${us[$((k++ % n))]}" PUT /v1/apps/shop/builds/2.0/method-ids "$UPL" --data-binary @ids.txt
  expect "$name: method-ids 2.0" 201 "$CODE"
  req "${us[$((k++ % n))]}" PUT /v1/apps/shop/builds/3.0/mapping "$UPL" --data-binary @mapping.txt
  expect "$name: mapping 3.0" 201 "$CODE"
  req "${us[$((k++ % n))]}" PUT /v1/apps/shop/builds/3.0/method-ids "$UPL" --data-binary @ids-obf.txt
  expect "$name: method-ids 3.0" 201 "$CODE"
  req "${us[$((k++ % n))]}" PUT /v1/apps/shop/url-patterns "$UPL" --data-binary "$PATTERNS"
  expect "$name: url-patterns" 200 "$CODE"
  for g in "${ORDER[@]}"; do
    if [ "$j" -gt 0 ] && [ $((j % BURST)) -eq 0 ]; then sleep "$PAUSE"; fi
    u=${us[$((j % n))]}
    j=$((j + 1))
    req "$u" POST /v1/apps/shop/batches "$ING" --data-binary @"b$g.bin"
    expect "$name: batch $g accepted" 202 "$CODE"
  done
  for _ in $(seq 900); do # bounded: 90 s
    p=$(processed "${us[0]}" "$RD")
    [ "$p" == "$NB" ] && break
    sleep 0.1
  done
  expect "$name: every batch processed" "$NB" "$p"
}

# the queries (paths under /v1/apps/shop/); "POST " first: a POST of trace.txt
S0=$((O / 1000000))
QUERIES=("builds" "url-patterns")
for th in all main; do
  for s in p50 p90 p99 count total self max; do
    QUERIES+=("slow-methods?sort=$s&thread=$th" "slow-methods?sort=$s&thread=$th&limit=3")
    for b in "${BUILDS[@]}"; do QUERIES+=("slow-methods?build=$b&sort=$s&thread=$th&limit=7"); done
  done
  QUERIES+=("slow-methods?thread=$th&since=$((S0 + 3600))&until=$((S0 + 7200))"
            "slow-methods?thread=$th&since=$((S0 + 5400))&sort=count"
            "slow-methods?build=2.0&thread=$th&until=$((S0 + 3600))&sort=self&limit=10000"
            "method-histogram?method=com.x.Tie.a&thread=$th"
            "method-histogram?method=com.example.Db.open()V&build=3.0&thread=$th")
done
QUERIES+=("slow-methods?limit=0" "slow-methods" "method-histogram?method=com.example.r.W1.m1")
for b in "" "build=1.0&" "build=2.0&" "build=3.0&"; do
  for th in all main; do
    for f in json columns columns-binary speedscope chrome; do
      QUERIES+=("call-tree?${b}thread=$th&format=$f" "call-tree?${b}thread=$th&format=$f&limit=200000"
                "call-tree?${b}thread=$th&format=$f&max_depth=2&limit=9"
                "call-tree?${b}thread=$th&format=$f&root=com.x.Tie.a")
    done
    QUERIES+=("call-tree?${b}thread=$th&limit=5" "call-tree?${b}thread=$th&max_depth=3"
              "call-tree?${b}thread=$th&root=com.example.Ui.frame()V"
              "call-tree?${b}thread=$th&root=com.example.Ui.frame&max_depth=2&limit=4"
              "call-tree?${b}thread=$th&root=com.example.r.W1.m1&format=columns"
              "call-tree?${b}thread=$th&root=com.example.r.Root.run&limit=200000")
  done
done
for b in "" "build=1.0&" "build=3.0&"; do
  for s in count p50 p90 p99 max; do QUERIES+=("blocks?${b}sort=$s"); done
  QUERIES+=("blocks?${b}limit=1" "blocks?${b}since=$((S0 + 3600))&until=$((S0 + 5400))"
            "launches?${b}" "launches?${b}kind=warm&methods=1" "launches?${b}kind=cold&methods=1000"
            "launches?${b}since=$S0&until=$((S0 + 3600))"
            "launches/tree?${b}" "launches/tree?${b}kind=warm" "launches/tree?${b}kind=hot"
            "launches/tree?${b}kind=warm&limit=3")
  for s in count p50 p90 p99 errors bytes; do QUERIES+=("network?${b}sort=$s"); done
  QUERIES+=("network?${b}host=CDN.example.com" "network?${b}method=GET&limit=2&callers=1"
            "network?${b}callers=0" "network?${b}since=$((S0 + 1800))&until=$((S0 + 3600))")
done
QUERIES+=("POST builds/3.0/retrace" "POST builds/3.0/retrace?verbose=true"
          "POST builds/1.0/retrace" "call-tree?build=9.9" "blocks/00000000000000000000000000000000"
          "call-tree?format=nope" "network?sort=nope")

# ask NAME URL: every query's status and body to NAME/N (times of receipt
# zeroed), then blocks/{signature} of every group of every build
ask() {
  local name=$1 u=$2 i=0 q b sig
  mkdir -p "$name"
  for q in "${QUERIES[@]}"; do
    i=$((i + 1))
    if [ "${q%% *}" = POST ]; then
      req "$u" POST "/v1/apps/shop/${q#POST }" "$RD" --data-binary @trace.txt
    else
      req "$u" GET "/v1/apps/shop/$q" "$RD"
    fi
    { printf '%s\n%s\n' "$q" "$CODE"
      sed -E 's/"(created_at|uploaded_at|updated_at)":[0-9]+/"\1":0/g' body.out; } > "$name/$i"
  done
  for b in "${BUILDS[@]}"; do
    req "$u" GET "/v1/apps/shop/blocks?build=$b" "$RD"
    for sig in $(jq -r '.blocks[].signature' body.out | sort); do
      for q in "blocks/$sig?build=$b" "blocks/$sig?build=$b&limit=2"; do
        i=$((i + 1))
        req "$u" GET "/v1/apps/shop/$q" "$RD"
        { printf '%s\n%s\n' "$q" "$CODE"; cat body.out; } > "$name/$i"
      done
    done
  done
}

# SQLite: one server, the batches in their order
DATA=$WORK/data-sqlite
STORE_ARGS=()
ORDER=($(seq 0 $((NB - 1))))
BURST=$NB
PAUSE=0
start_server "$DATA"
feed sqlite "$URL"
ask sqlite "$URL"
stop_server
echo "SQLite: $(ls sqlite | wc -l) answers"

# PostgreSQL: three nodes on one database
DATA=$WORK/node0
STORE_ARGS=(--store "$PGURL")
for i in $(seq 0 $((NODES - 1))); do start_node "$i"; done
# another order (batch 26 - 10 g mod 27: every build's first batch and
# some G, G + 18 pairs come in another order), round-robin over the nodes,
# in three bursts 6 s apart (a node lets go of a build idle for 5 s: the
# next burst's builds may be taken by other nodes); the answers must not
# depend on it
ORDER=()
for g in $(seq 0 $((NB - 1))); do ORDER+=($((NB - 1 - g * 10 % NB))); done
BURST=9
PAUSE=6
feed pg "${URLS[@]}"
expect "PostgreSQL: queue empty" 0 \
  "$(psql -X -q -At -d "$PGURL" -c "SELECT count(*) FROM raw_batches WHERE failed_at IS NULL")"
# several nodes processed batches (so call-tree node ids come from several blocks)
by=0
for i in $(seq 0 $((NODES - 1))); do
  m=$(curl -s -m 10 "${URLS[$i]}/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "${m:-0}" -gt 0 ] && by=$((by + 1))
done
echo "PostgreSQL: $by node(s) processed batches"
for i in $(seq 0 $((NODES - 1))); do ask "pg$i" "${URLS[$i]}"; done

# --- the answers, byte for byte ------------------------------------------------
for i in $(seq 0 $((NODES - 1))); do
  expect "node $i: the same answers asked" "$(ls sqlite | sort -n)" "$(ls "pg$i" | sort -n)"
  same=0
  for f in sqlite/*; do
    f=${f#sqlite/}
    if cmp -s "sqlite/$f" "pg$i/$f"; then
      same=$((same + 1))
    else
      bad "node $i: $(head -1 "sqlite/$f") differs: $(cmp "sqlite/$f" "pg$i/$f" | head -1)"
    fi
  done
  expect "node $i: answers identical to SQLite's" "$(ls sqlite | wc -l)" "$same"
done
# a limit cuts the whole order: limit=L prints the first L nodes (depth
# first) of the tree asked without a limit, ties at the cut included (the
# printer orders only what it can print in full: h_calltree.c emit_children,
# lazy_children)
flat() {
  jq -r '[.roots[] | recurse(.children[])] | .[] |
    "\(.method.class).\(.method.name)\(.method.descriptor) \(.total_us) \(.count)"' body.out
}
for th in main all; do
  for b in 1.0 2.0; do
    req "${URLS[0]}" GET "/v1/apps/shop/call-tree?build=$b&thread=$th&limit=200000" "$RD"
    full=$(flat)
    for l in 1 2 3 4 5 6 8 11 16 25; do
      req "${URLS[$((l % NODES))]}" GET "/v1/apps/shop/call-tree?build=$b&thread=$th&limit=$l" "$RD"
      expect "call-tree build=$b thread=$th limit=$l: the first $l of the whole order" \
        "$(head -n "$l" <<< "$full")" "$(flat)"
    done
  done
done
# the answers are about something
a=$(cat sqlite/* | tr -d "\\000")
contains "call trees: tied methods" '"class":"com.x.Tïe"' "$a"
contains "call trees: an unknown method" '"name":"unknown method 60"' "$a"
contains "retrace: original names" 'com.example.Feed.load(Feed.java:40)' "$a"
contains "network: a user pattern" '"/v2/users/*/orders/*"' "$a"
contains "launches: warm" '"kind":"warm"' "$a"
expect "blocks/{signature} answers" 1 "$( (grep -l '^200$' sqlite/* | xargs grep -l '^blocks/' || true) |
  wc -l | awk '{ print ($1 >= 6) }')"
bad200=$(grep -L -E '^(200|400|404)$' sqlite/* | head -3)
expect "every answer 200, 400 or 404" "" "$bad200"
finish
