#!/usr/bin/env bash
# App launches, server half (issue 15), end to end on loopback with small
# hand-made batches (no Java needed).
#
#   launches_test.sh BUILD_DIR WORK_DIR
#
# Golden case tests/cases/launches/0001-percentiles: 15 launches (cold, warm,
# hot) with known durations; GET /launches answers exactly the expected
# count and p50/p90/p99/max per phase, TTID and TTFD per kind. Then: the
# launch window's calls (negative start_us, calls before the start and after
# the first frame left out) in /launches/tree and slowest_methods, with
# original names and the activity retraced in an obfuscated build; bad
# launch events counted by reason and skipped while the batch is processed;
# the kind filter; since/until by hour; parameters, keys and errors.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
CASES=$HERE/../cases/launches

DATA=$WORK/data
create_app "$DATA" shop
start_server "$DATA"

m_of() { metric "beatline_events_malformed_total{reason=\"$1\"}"; }
processed=0
post() { http POST /v1/apps/shop/batches "$ING" --data-binary @"$1"; }
# batch NAME UUID BUILD ORIGIN RECORDS-JSON EVENTS-JSON -> NAME.bin (thread 0: main)
batch() {
  printf '%s' "$5" > "$1.recs"
  printf '%s' "$6" > "$1.events"
  jq -cn --arg id "$2" --arg b "$3" --argjson o "$4" --slurpfile r "$1.recs" \
    --slurpfile e "$1.events" '{batch_id:$id, app:"shop", build:$b, session_id:"s1",
      origin_wall_us:$o, device:{model:"m", os:"14", sdk:34},
      threads:[{id:1, name:"main", main:true, truncated:false, records:$r[0]}],
      events:$e[0]}' > "$1.json"
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}

cat > ids1.txt << 'IDS'
# beatline method-ids v1 names=original
1,1,com.example.App attachBaseContext (Landroid/content/Context;)V
2,1,com.example.App onCreate ()V
3,1,com.example.Main onCreate (Landroid/os/Bundle;)V
4,1,com.example.Main onStart ()V
5,1,com.example.Main onResume ()V
6,1,com.example.Db open ()V
7,1,com.example.Util tiny ()V
IDS
cat > ids2.txt << 'IDS'
# beatline method-ids v1 names=obfuscated
1,1,a.a a (Landroid/content/Context;)V
2,1,a.a b ()V
3,1,a.b a (Landroid/os/Bundle;)V
4,1,a.b b ()V
5,1,a.b c ()V
6,1,a.c a ()V
7,1,a.d a ()V
IDS
cat > mapping2.txt << 'MAP'
com.example.App -> a.a:
    void attachBaseContext(android.content.Context) -> a
    void onCreate() -> b
com.example.Main -> a.b:
    void onCreate(android.os.Bundle) -> a
    void onStart() -> b
    void onResume() -> c
com.example.Db -> a.c:
    void open() -> a
com.example.Util -> a.d:
    void tiny() -> a
MAP
put_ids shop 1.0 ids1.txt "method-ids 1.0"
put_ids shop 2.0 ids2.txt "method-ids 2.0"
http PUT /v1/apps/shop/builds/2.0/mapping "$UPL" --data-binary @mapping2.txt
expect "mapping 2.0" 201 "$CODE"

# --- golden: percentiles per phase and kind ---------------------------------
"$BIN/beatline-batch" encode < "$CASES/0001-percentiles/batch.json" > golden.bin
post golden.bin
expect "golden batch accepted" 202 "$CODE"
expect_processed 1
expect "golden: 15 launches stored" 15 "$(metric beatline_launches_total)"
http GET "/v1/apps/shop/launches?build=1.0" "$RD"
expect "golden: 200" 200 "$CODE"
got=$(jq -S '[.launches[] | {kind, count, phases: [.phases[] | {phase, count, p50_us, p90_us, p99_us, max_us}], ttid, ttfd}]' <<< "$BODY")
want=$(jq -S . "$CASES/0001-percentiles/expected.json")
if [ "$got" == "$want" ]; then ok; else
  bad "golden 0001-percentiles: answer differs: $(diff <(echo "$want") <(echo "$got") | head -20)"
fi
expect "golden: kinds in order cold, warm, hot" "cold warm hot" "$(jq -r '[.launches[].kind] | join(" ")' <<< "$BODY")"
expect "golden: activity of the latest launch that named one" "com.example.Main null" \
  "$(jq -r '[(.launches[] | select(.kind == "warm") | .activity), (.launches[] | select(.kind == "hot") | .activity)] | map(tostring) | join(" ")' <<< "$BODY")"
O=1795960000000000
expect "golden: first_at = origin + the first cold start_us (negative)" "$((O - 150000))" \
  "$(jq -r '.launches[0].first_at' <<< "$BODY")"

# --- the launch window's calls: tree and slowest methods ---------------------
# A cold start 100 ms before the origin (start_us -100000), first frame at
# 90000: the window is [0, 90000]. Db.open (6) is called in App.onCreate and
# in Main.onCreate; Util.tiny (7) runs after the first frame (not part of the
# launch). A hot start at 200000..260000 (first frame 260000) sees Main.onStart
# and Main.onResume only; Util.tiny before it is not part of it.
R='[[1,"i",1000],[1,"o",5000],
    [2,"i",6000],[6,"i",7000],[6,"o",27000],[2,"o",30000],
    [3,"i",35000],[6,"i",36000],[6,"o",46000],[3,"o",70000],
    [4,"i",70100],[4,"o",71000],[5,"i",71100],[5,"o",80000],
    [7,"i",95000],[7,"o",99000],
    [7,"i",150000],[7,"o",160000],
    [4,"i",200500],[4,"o",210000],[5,"i",210100],[5,"o",230000]]'
COLD='{"type":"launch","kind":"cold","thread":0,"device":"d1","start_us":-100000,
  "phases":{"application_attach_base_context":[1000,5000],"application_on_create":[6000,30000],
            "activity_on_create":[35000,70000],"activity_on_start":[70100,71000],
            "activity_on_resume":[71100,80000],"some_future_phase":"ignored"},
  "first_frame_us":90000,"fully_drawn_us":120000,"activity":"a.b"}'
HOT='{"type":"launch","kind":"hot","thread":0,"device":"d1","start_us":200000,
  "phases":{"activity_on_start":[200500,210000],"activity_on_resume":[210100,230000]},
  "first_frame_us":260000}'
for b in 1.0 2.0; do
  batch "w$b" "33333333-3333-4333-8333-00000000000${b%.0}" "$b" $((O + 3600000000)) "$R" "[$COLD,$HOT]"
  post "w$b.bin"
  expect "window batch $b accepted" 202 "$CODE"
done
expect_processed 2
for b in 1.0 2.0; do
  http GET "/v1/apps/shop/launches/tree?build=$b&kind=cold" "$RD"
  expect "tree $b: 200" 200 "$CODE"
  expect "tree $b: roots by total, original names" \
    "Main.onCreate App.onCreate Main.onResume App.attachBaseContext Main.onStart" \
    "$(jq -r '[.roots[] | "\(.method.class | sub("com.example."; "")).\(.method.name)"] | join(" ")' <<< "$BODY")"
  # Main.onCreate 35000 with Db.open 10000 in it (self 25000), App.onCreate
  # 24000 with Db.open 20000 (self 4000)
  expect "tree $b: Db.open under Main.onCreate and App.onCreate (child total, self)" "10000 25000 20000 4000" \
    "$(jq -r '[(.roots[] | select(.method.name == "onCreate") | .children[0].total_us, .self_us)] | map(tostring) | join(" ")' <<< "$BODY")"
  expect "tree $b: Util.tiny after the first frame left out" 0 \
    "$(jq '[.. | objects | select(.method?.name? == "tiny")] | length' <<< "$BODY")"
  expect "tree $b: kind, not truncated" "cold false" "$(jq -r '"\(.kind) \(.truncated)"' <<< "$BODY")"
  http GET "/v1/apps/shop/launches?build=$b&kind=cold" "$RD"
  expect "slowest $b: by self time" "Db.open:2:30000:30000 Main.onCreate:1:35000:25000" \
    "$(jq -r '[.launches[0].slowest_methods[0:2][] | "\(.method.class | sub("com.example."; "")).\(.method.name):\(.count):\(.total_us):\(.self_us)"] | join(" ")' <<< "$BODY")"
  expect "slowest $b: launches a method ran in" 1 "$(jq '.launches[0].slowest_methods[0].launches' <<< "$BODY")"
done
expect "obfuscated build: the activity retraced" "com.example.Main" "$(jq -r '.launches[0].activity' <<< "$BODY")"
expect "ttid, ttfd from a negative start" "190000 220000" \
  "$(jq -r '.launches[0] | "\(.ttid.max_us) \(.ttfd.max_us)"' <<< "$BODY")"
http GET "/v1/apps/shop/launches/tree?build=1.0&kind=hot" "$RD"
expect "hot tree: the calls after its start only" "Main.onResume:1 Main.onStart:1" \
  "$(jq -r '[.roots[] | "\(.method.class | sub("com.example."; "")).\(.method.name):\(.count)"] | join(" ")' <<< "$BODY")"
http GET "/v1/apps/shop/launches/tree?build=1.0" "$RD"
expect "tree: kind defaults to cold" "cold 5" "$(jq -r '"\(.kind) \(.roots | length)"' <<< "$BODY")"
http GET "/v1/apps/shop/launches/tree?build=1.0&kind=cold&limit=1" "$RD"
expect "tree: limit=1 cuts the tree" "true 1" "$(jq -r '"\(.truncated) \(.roots | length)"' <<< "$BODY")"
http GET "/v1/apps/shop/launches/tree?build=1.0&kind=warm" "$RD"
expect "tree of warm launches whose windows hold no calls: empty" "200 0" "$CODE $(jq '.roots | length' <<< "$BODY")"

# --- kind filter and since/until (whole hours) ------------------------------
http GET "/v1/apps/shop/launches?build=1.0&kind=warm" "$RD"
expect "kind=warm: the warm launches only" "warm 3" "$(jq -r '[.launches[] | "\(.kind) \(.count)"] | join(",")' <<< "$BODY")"
http GET "/v1/apps/shop/launches?build=1.0&kind=hot" "$RD"
expect "kind=hot: both hours" "hot 3" "$(jq -r '[.launches[] | "\(.kind) \(.count)"] | join(",")' <<< "$BODY")"
http GET "/v1/apps/shop/launches?build=1.0&since=$(( (O + 3600000000) / 1000000 ))" "$RD"
expect "since: the second hour only" "cold 1,hot 1" "$(jq -r '[.launches[] | "\(.kind) \(.count)"] | join(",")' <<< "$BODY")"
http GET "/v1/apps/shop/launches?build=1.0&until=$(( O / 1000000 + 1 ))" "$RD"
expect "until: the golden hour only" "cold 10,warm 3,hot 2" "$(jq -r '[.launches[] | "\(.kind) \(.count)"] | join(",")' <<< "$BODY")"
http GET "/v1/apps/shop/launches?build=1.0&until=$(( O / 1000000 - 3600 ))" "$RD"
expect "until before the first start's hour: nothing" 0 "$(jq '.launches | length' <<< "$BODY")"
http GET "/v1/apps/shop/launches?build=1.0&since=$(( O / 1000000 + 3600 ))&until=$(( O / 1000000 + 3601 ))" "$RD"
expect "since/until: one second of the second hour counts its whole hour" "cold 1,hot 1" \
  "$(jq -r '[.launches[] | "\(.kind) \(.count)"] | join(",")' <<< "$BODY")"
http GET "/v1/apps/shop/launches?build=1.0&kind=cold&methods=0" "$RD"
expect "methods=0: no slowest methods" 0 "$(jq '.launches[0].slowest_methods | length' <<< "$BODY")"

# --- bad launch events: counted by reason, skipped, the batch processed -------
before_bf=$(m_of bad_field); before_th=$(m_of thread); before_wi=$(m_of window)
before_n=$(metric beatline_launches_total)
GOOD='{"type":"launch","kind":"warm","thread":0,"device":"d","start_us":1000,"phases":{"activity_on_create":[1000,2000]},"first_frame_us":5000}'
mut() { jq -c "$1" <<< "$GOOD"; }
E="[$GOOD,
$(mut '.kind = "lukewarm"'), $(mut '.kind = 1'), $(mut 'del(.kind)'),
$(mut '.device = ""'), $(mut 'del(.device)'), $(mut '.device = ("x" * 65)'),
$(mut '.start_us = -1099511627777'), $(mut '.start_us = 1.5'), $(mut 'del(.start_us)'),
$(mut 'del(.first_frame_us)'), $(mut '.first_frame_us = "5000"'),
$(mut 'del(.phases)'), $(mut '.phases = []'), $(mut '.phases.activity_on_create = [1000]'),
$(mut '.phases.activity_on_create = [1000, "x"]'), $(mut '.phases.activity_on_start = 7'),
$(mut '.fully_drawn_us = 999'), $(mut '.fully_drawn_us = null'),
$(mut '.activity = 5'), $(mut '.activity = ("a" * 513)'), $(mut '.thread = -1'),
$(mut '.thread = 1'), $(mut '.thread = 99999999999'),
$(mut '.first_frame_us = 999'), $(mut '.phases.activity_on_create = [2000, 1000]'),
$(mut '.phases.activity_on_create = [500, 2000]'), $(mut '.phases.activity_on_create = [1000, 5001]'),
$(mut '.phases.unknown_phase = "whatever"')]"
batch bad 33333333-3333-4333-8333-0000000000bb 1.0 $((O + 7200000000)) '[[7,"i",0],[7,"o",10]]' "$E"
post bad.bin
expect "batch with bad launch events accepted" 202 "$CODE"
expect_processed 1
expect "bad launches: bad_field (kind x3, device x3, start_us x3, first_frame_us x2, phases x5, fully_drawn_us x2, activity x2, negative thread)" \
  $((before_bf + 21)) "$(m_of bad_field)"
expect "bad launches: thread past the table" $((before_th + 2)) "$(m_of thread)"
expect "bad launches: window (first frame before start, phase reversed, before start, after first frame)" \
  $((before_wi + 4)) "$(m_of window)"
expect "bad launches: the good two stored (an unknown phase is ignored)" $((before_n + 2)) \
  "$(metric beatline_launches_total)"
http GET "/v1/apps/shop/launches?build=1.0&kind=warm&since=$(( (O + 7200000000) / 1000000 ))" "$RD"
expect "bad launches: the good ones answered" "2 2 1000" \
  "$(jq -r '.launches[0] | "\(.count) \(.phases[0].count) \(.phases[0].max_us)"' <<< "$BODY")"
http GET "/v1/apps/shop/builds" "$RD"
expect "bad launches: the batch counted" 3 "$(jq -r '.builds[] | select(.build == "1.0") | .batches' <<< "$BODY")"

# --- per-batch bound: 256 launch events stored, the 257th counted as budget ---
before_bu=$(m_of budget); before_n=$(metric beatline_launches_total)
EK=$(jq -cn --argjson g "$GOOD" '[range(257) | $g | .kind = "hot"]')
batch cap 33333333-3333-4333-8333-0000000000cc 1.0 $((O + 10800000000)) '[[7,"i",0],[7,"o",10]]' "$EK"
post cap.bin
expect "batch with 257 launches accepted" 202 "$CODE"
expect_processed 1
expect "cap: 256 stored" $((before_n + 256)) "$(metric beatline_launches_total)"
expect "cap: the 257th counted as budget" $((before_bu + 1)) "$(m_of budget)"
http GET "/v1/apps/shop/launches?build=1.0&kind=hot&since=$(( (O + 10800000000) / 1000000 ))" "$RD"
expect "cap: 256 answered" 256 "$(jq '.launches[0].count' <<< "$BODY")"

# --- kill -9 while a batch's launches are written: exactly once ---------------
# 256 cold launches over one thread of 20,002 records (App.onCreate around
# 10,000 Db.open calls), killed with -9 after growing delays while the writer
# stores them (the landing point is not guaranteed); after the restarts the
# build holds exactly 256 more cold launches and one more tree's worth of
# calls per launch, and posting the batch again is a duplicate.
KR=$(jq -cn '[[2,"i",0]] + ([range(10000) | [[6,"i",(. * 10 + 1)],[6,"o",(. * 10 + 6)]]] | add) + [[2,"o",100001]]')
KE=$(jq -cn '[range(256) | {type:"launch", kind:"cold", thread:0, device:"dk\(. % 5)", start_us:-5000,
  phases:{application_on_create:[0,100001]}, first_frame_us:100002}]')
batch kill 33333333-3333-4333-8333-0000000000dd 1.0 $((O + 14400000000)) "$KR" "$KE"
post kill.bin
expect "kill batch accepted" 202 "$CODE"
kills=0
for d in 0.2 0.4 0.7 1 1.5 2 3; do
  http GET "/v1/apps/shop/builds" "$RD"
  [ "$(jq -r '.builds[] | select(.build == "1.0") | .batches' <<< "$BODY")" == 5 ] && break
  sleep "$d"
  kill -9 "$SERVER_PID"
  wait "$SERVER_PID" 2> /dev/null || true
  kills=$((kills + 1))
  start_server "$DATA"
done
echo "kill -9: $kills time(s)"
for _ in $(seq 600); do # bounded: 60 s
  http GET "/v1/apps/shop/builds" "$RD"
  [ "$(jq -r '.builds[] | select(.build == "1.0") | .batches' <<< "$BODY")" == 5 ] && break
  sleep 0.1
done
expect "after kill -9: the batch processed once" 5 "$(jq -r '.builds[] | select(.build == "1.0") | .batches' <<< "$BODY")"
KQ="/v1/apps/shop/launches?build=1.0&kind=cold&since=$(( (O + 14400000000) / 1000000 ))"
http GET "$KQ" "$RD"
expect "after kill -9: launches counted exactly once" "256 256" \
  "$(jq -r '.launches[0] | "\(.count) \(.ttid.count)"' <<< "$BODY")"
expect "after kill -9: methods counted exactly once" "2560000 256" \
  "$(jq -r '.launches[0].slowest_methods[] | select(.method.name == "open") | "\(.count) \(.launches)"' <<< "$BODY")"
http GET "/v1/apps/shop/launches/tree?build=1.0&kind=cold" "$RD"
# 11 cold launches before (the window batch's one has App.onCreate as a root)
expect "after kill -9: tree counted exactly once" 257 \
  "$(jq '.roots[] | select(.method.name == "onCreate" and .method.class == "com.example.App") | .count' <<< "$BODY")"
post kill.bin
expect "kill batch again: duplicate" 200 "$CODE"
sleep 0.3
http GET "$KQ" "$RD"
expect "duplicate not counted" 256 "$(jq -r '.launches[0].count' <<< "$BODY")"

# --- parameters, keys and errors ----------------------------------------------
http GET "/v1/apps/shop/launches?build=1.0&kind=lukewarm" "$RD"
expect "bad kind: 400" "400 'kind' must be one of cold, warm, hot" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/launches/tree?build=1.0&kind=COLD" "$RD"
expect "tree: bad kind: 400" 400 "$CODE"
http GET "/v1/apps/shop/launches?build=1.0&since=20&until=10" "$RD"
expect "since after until: 400" "400 'since' must not be after 'until'" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/launches?build=1.0&since=-5" "$RD"
expect "bad since: 400" 400 "$CODE"
contains "bad since: names it" "'since'" "$BODY"
http GET "/v1/apps/shop/launches?build=1.0&methods=1001" "$RD"
expect "methods over 1000: 400" 400 "$CODE"
http GET "/v1/apps/shop/launches/tree?build=1.0&limit=100001" "$RD"
expect "tree: limit over 100000: 400" 400 "$CODE"
http GET "/v1/apps/shop/launches?build=9.9" "$RD"
expect "unknown build: 404" "404 unknown build '9.9'" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/launches/tree?build=9.9" "$RD"
expect "tree: unknown build: 404" 404 "$CODE"
for p in launches launches/tree; do
  http GET "/v1/apps/shop/$p" ""
  expect "$p: no key: 401" 401 "$CODE"
  http GET "/v1/apps/shop/$p" "$ING"
  expect "$p: ingest key: 403" 403 "$CODE"
  http GET "/v1/apps/shop/$p" "blk_read_not-a-key"
  expect "$p: unknown key: 403" 403 "$CODE"
  http GET "/v1/apps/other/$p" "$RD"
  expect "$p: the key of another app: 403" 403 "$CODE"
  contains "$p: errors are JSON" '"error"' "$BODY"
  http POST "/v1/apps/shop/$p" "$RD"
  expect "POST $p: 404 like other unknown routes" 404 "$CODE"
done
http GET "/v1/apps/shop/launches/tree/x" "$RD"
expect "a path under tree: 404" 404 "$CODE"

# --- DELETE of a build takes its launches ---------------------------------------
http DELETE /v1/apps/shop/builds/2.0 "$UPL"
expect "delete build 2.0" 200 "$CODE"
http GET "/v1/apps/shop/launches?build=2.0" "$RD"
expect "deleted build: 404" 404 "$CODE"
finish
