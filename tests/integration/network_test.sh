#!/usr/bin/env bash
# Network requests, server half (issue 16), end to end on loopback with
# small hand-made batches (beatline-batch encode; no Java needed).
#
#   network_test.sh BUILD_DIR WORK_DIR
#
# Exact counts, errors and error rates, status classes, percentiles, phase
# means and bytes per build x host x method x URL pattern; callers with
# their original names (obfuscated method-ID file + mapping); query names
# in the pattern, query strings never stored (the database is grepped); bad
# network events counted by reason and skipped without failing the batch;
# the 16,384 per-batch bound; user URL patterns (PUT/GET, their checks and
# caps) applied to batches that arrive after, never to stored data; the
# endpoint's parameters, sorts, filters and errors; kill -9 while a batch's
# requests are written leaves them counted exactly once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
create_app "$DATA" shop
start_server "$DATA"

m_of() { curl -s "$URL/metrics" | awk -v r="beatline_events_malformed_total{reason=\"$1\"}" '$1 == r { print $2 }'; }
processed=0
# batch NAME UUID BUILD ORIGIN EVENTS-JSON -> NAME.bin
batch() {
  printf '%s' "$5" > "$1.events"
  jq -cn --arg id "$2" --arg b "$3" --argjson o "$4" --slurpfile e "$1.events" \
    '{batch_id:$id, app:"shop", build:$b, session_id:"s1", origin_wall_us:$o,
      device:{model:"m", os:"14", sdk:34},
      threads:[{id:1, name:"main", main:true, truncated:false, records:[[11,"i",0],[11,"o",100]]}],
      events:$e[0]}' > "$1.json"
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}
post() { http POST /v1/apps/shop/batches "$ING" --data-binary @"$1.bin"; }
# net METHOD HOST PATH TOTAL [jq object merged last] -> one network event
net() {
  local x=${5:-'{}'}
  jq -cn --arg m "$1" --arg h "$2" --arg p "$3" --argjson t "$4" --argjson x "$x" \
    '{type:"network", device:"dev-1", thread_name:"OkHttp Dispatcher", begin_us:1000,
      end_us:(1000 + $t), method:$m, scheme:"https", host:$h, port:443, path:$p,
      status:200, protocol:"h2", bytes_out:100, bytes_in:1000, total_us:$t} + $x'
}

# --- build 1.0: obfuscated names, with the mapping ---------------------------
cat > ids.txt << 'EOF'
# beatline method-ids v1 names=obfuscated
11,1,a.a b ()V
13,1,b.a a (Ljava/lang/String;)V
EOF
cat > mapping.txt << 'EOF'
com.example.Feed -> a.a:
    void load() -> b
com.example.Db -> b.a:
    void query(java.lang.String) -> a
EOF
for b in 1.0 2.0; do
  put_ids shop "$b" ids.txt "method-ids $b"
  http PUT /v1/apps/shop/builds/$b/mapping "$UPL" --data-binary @mapping.txt
  expect "mapping $b" 201 "$CODE"
done

O1=1795960000000000
ORDERS='/v2/users/{id}/orders/{id}'
E1="[$(net GET api.example.com /v2/users/123/orders/9 100000 '{"ttfb_us":40000,"dns_us":800,"connect_us":2000,"tls_us":9000,"caller":11}'),
$(net GET api.example.com /v2/users/7/orders/1 200000 '{"ttfb_us":50000,"connect_us":3000,"caller":11,"reused":false}'),
$(net GET api.example.com /v2/users/55/orders/2 300000 '{"status":404,"ttfb_us":60000,"caller":13,"reused":true}'),
$(net GET api.example.com /v2/users/56/orders/3 500000 '{"status":null,"error":"java.net.SocketTimeoutException","bytes_in":0}'),
$(net POST API.Example.com /v2/users/123/orders 700000 '{"status":503,"bytes_out":5000,"caller":13}'),
$(net GET cdn.example.com /img/5f2b8e3a9c1d4e7f/thumb.png 1000 '{"status":304,"bytes_in":10}'),
$(net GET api.example.com /v2/en-US/search 2000 '{"query_keys":["q","lang","q"]}'),
$(net GET api.example.com '/v2/users/1?token=SECRETQUERY' 1),
$(net GET api.example.com '/v2/users/1#SECRETFRAGMENT' 1),
$(net GET api.example.com /x 1 '{"device":""}'),
$(net GET api.example.com /x 1 '{"status":600}'),
$(net GET api.example.com /x 1 '{"status":99}'),
$(net get api.example.com /x 1),
$(net GET api.example.com /x 1 '{"scheme":"ftp"}'),
$(net GET api.example.com /x 1 '{"port":0}'),
$(net GET api.example.com /x 1 '{"caller":-1}'),
$(net GET api.example.com /x 1 '{"query_keys":["a=SECRETVALUE"]}'),
$(net GET 'api example.com' /x 1),
$(net GET api.example.com x 1),
$(net GET api.example.com /x 1 '{"bytes_in":"12"}'),
$(net GET api.example.com /x 1 '{"dns_us":-5}'),
$(net GET api.example.com /x 1 '{"reused":1}'),
$(net GET api.example.com /x 1 '{"begin_us":5000, "end_us":10}'),
{\"type\":\"network\"}]"
batch b1 22222222-1111-4111-8111-000000000001 1.0 $O1 "$E1"
post b1
expect "batch 1 accepted (bad network events never refuse it)" 202 "$CODE"
expect_processed 1

# --- bad events: counted by reason and skipped --------------------------------
# bad_field: query, fragment, empty device, status 600 and 99, lower-case
# method, ftp, port 0, negative caller, a query value, a host with a space,
# a path without '/', bytes as a string, negative dns, reused not a
# boolean, the bare event: 16; window: begin after end
expect "malformed: bad_field" 16 "$(m_of bad_field)"
expect "malformed: window" 1 "$(m_of window)"
expect "malformed: budget" 0 "$(m_of budget)"
expect "requests stored" 7 "$(metric beatline_network_requests_total)"

# --- the aggregates ------------------------------------------------------------
http GET "/v1/apps/shop/network?build=1.0" "$RD"
expect "list: 200" 200 "$CODE"
expect "list: build, sort" "1.0 count" "$(jq -r '"\(.build) \(.sort)"' <<< "$BODY")"
expect "list: four groups (GET and POST orders, cdn, search)" 4 "$(jq '.requests | length' <<< "$BODY")"
A=$(jq -c --arg p "$ORDERS" '.requests[] | select(.pattern == $p and .http_method == "GET")' <<< "$BODY")
expect "orders: first by count" "$ORDERS" "$(jq -r '.requests[0].pattern' <<< "$BODY")"
expect "orders: host, count, errors, error_rate" "api.example.com 4 2 0.5" \
  "$(jq -r '"\(.host) \(.count) \(.errors) \(.error_rate)"' <<< "$A")"
expect "orders: status classes (404 and a failure are the errors)" \
  '{"1xx":0,"2xx":2,"3xx":0,"4xx":1,"5xx":0,"failed":1}' "$(jq -c .status <<< "$A")"
near() { # name expected actual (within 1 %)
  if [ "$(jq -n --argjson e "$2" --argjson a "$3" '($a - $e | if . < 0 then -. else . end) <= $e / 100')" == true ]; then ok; else bad "$1: expected $2 within 1%, got $3"; fi
}
# totals 100000, 200000, 300000, 500000
near "orders: p50" 200000 "$(jq .p50_us <<< "$A")"
near "orders: p90" 500000 "$(jq .p90_us <<< "$A")"
expect "orders: max" 500000 "$(jq .max_us <<< "$A")"
near "orders: ttfb p50 (of the three that had one)" 50000 "$(jq .ttfb_p50_us <<< "$A")"
expect "orders: ttfb max" 60000 "$(jq .ttfb_max_us <<< "$A")"
expect "orders: dns, connect, tls means (of the requests that had the phase)" "800 2500 9000" \
  "$(jq -r '"\(.dns_mean_us) \(.connect_mean_us) \(.tls_mean_us)"' <<< "$A")"
expect "orders: bytes in, out" "3000 400" "$(jq -r '"\(.bytes_in) \(.bytes_out)"' <<< "$A")"
expect "orders: callers, original names, by count" \
  "com.example.Feed load ()V 2|com.example.Db query (Ljava/lang/String;)V 1" \
  "$(jq -r '[.callers[] | "\(.method.class) \(.method.name) \(.method.descriptor) \(.count)"] | join("|")' <<< "$A")"
expect "orders: a caller's source file" "Feed.java" "$(jq -r '.callers[0].method.source_file' <<< "$A")"
P=$(jq -c '.requests[] | select(.http_method == "POST")' <<< "$BODY")
expect "POST: own group, host lower-cased" "api.example.com /v2/users/{id}/orders 1 1 1 5000" \
  "$(jq -r '"\(.host) \(.pattern) \(.count) \(.errors) \(.status["5xx"]) \(.bytes_out)"' <<< "$P")"
expect "POST: no ttfb, no phases: null" "null null null null" \
  "$(jq -r '"\(.ttfb_p50_us) \(.dns_mean_us) \(.connect_mean_us) \(.tls_mean_us)"' <<< "$P")"
C=$(jq -c '.requests[] | select(.host == "cdn.example.com")' <<< "$BODY")
expect "cdn: long hex collapsed, 304 is 3xx and not an error" "/img/{hex}/thumb.png 1 0 0 1" \
  "$(jq -r '"\(.pattern) \(.count) \(.errors) \(.error_rate) \(.status["3xx"])"' <<< "$C")"
expect "query names: sorted, unique, no values; /v2/ and /en-US/ kept" 1 \
  "$(jq '[.requests[] | select(.pattern == "/v2/en-US/search?lang={}&q={}")] | length' <<< "$BODY")"
expect "no callers: empty list" "[]" "$(jq -c '.requests[] | select(.host == "cdn.example.com") | .callers' <<< "$BODY")"

# --- query strings and values are never stored ---------------------------------------
q_ids="SELECT pattern FROM net_groups WHERE pattern LIKE '%?%' OR host LIKE '%?%'"
if [ "${BEATLINE_TEST_STORE:-sqlite}" = pg ]; then # the whole database, dumped
  pg_dump -d "$(bash "$HERE/pg-wrap.sh" --url "$DATA" "$WORK/.pg-bin/stores")" > stored.sql
  kept=$(store_sql "$DATA" "$q_ids")
else
  sqlite3 -cmd '.timeout 5000' "$DATA/beatline.db" 'PRAGMA wal_checkpoint(PASSIVE)' > /dev/null || true
  cat "$DATA"/beatline.db* > stored.sql
  kept=$(sqlite3 -cmd '.timeout 5000' "$DATA/beatline.db" "$q_ids")
fi
if grep -a -q -e SECRETQUERY -e SECRETFRAGMENT -e SECRETVALUE stored.sql; then
  bad "a query string, fragment or query value is in the database"
else ok; fi
expect "no stored pattern or host holds '?' but the kept names" "/v2/en-US/search?lang={}&q={}" \
  "$kept"

# --- sorts, filters, limits ------------------------------------------------------------
http GET "/v1/apps/shop/network?build=1.0&sort=errors&limit=2" "$RD"
expect "sort=errors, limit=2" "2 GET 2 POST 1" \
  "$(jq -r '"\(.requests | length) \(.requests[0].http_method) \(.requests[0].errors) \(.requests[1].http_method) \(.requests[1].errors)"' <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&sort=p99" "$RD"
expect "sort=p99: the 700 ms POST first" POST "$(jq -r '.requests[0].http_method' <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&sort=bytes" "$RD"
expect "sort=bytes: the POST (6000) first" POST "$(jq -r '.requests[0].http_method' <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&method=POST" "$RD"
expect "method=POST" "1 POST" "$(jq -r '"\(.requests | length) \(.requests[0].http_method)"' <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&host=CDN.example.com" "$RD"
expect "host= (any case)" "1 cdn.example.com" "$(jq -r '"\(.requests | length) \(.requests[0].host)"' <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&callers=1" "$RD"
expect "callers=1" 1 "$(jq -r --arg p "$ORDERS" '.requests[] | select(.pattern == $p and .http_method == "GET") | .callers | length' <<< "$BODY")"
# ranges go by whole hours: until at the start of the requests' hour leaves it out
http GET "/v1/apps/shop/network?build=1.0&until=$((O1 / 3600000000 * 3600))" "$RD"
expect "until the start of the hour: nothing" 0 "$(jq '.requests | length' <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&since=$((O1 / 1000000))" "$RD"
expect "since the hour: everything" 4 "$(jq '.requests | length' <<< "$BODY")"

# --- errors -----------------------------------------------------------------------------
http GET "/v1/apps/shop/network?build=1.0&sort=total" "$RD"
expect "bad sort: 400" "400 'sort' must be one of count, p50, p90, p99, errors, bytes" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&method=get" "$RD"
expect "bad method: 400" 400 "$CODE"
http GET "/v1/apps/shop/network?build=1.0&since=$((O1 / 1000000 + 10))&until=$((O1 / 1000000))" "$RD"
expect "since after until (one hour): 400" "400 'since' must not be after 'until'" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/network?build=1.0&limit=-1" "$RD"
expect "bad limit: 400" 400 "$CODE"
contains "bad limit: names it" "'limit'" "$BODY"
http GET "/v1/apps/shop/network?build=9.9" "$RD"
expect "unknown build: 404" "404 unknown build '9.9'" "$CODE $(jq -r .error <<< "$BODY")"
http GET "/v1/apps/shop/network?sort=nonsense" "$ING"
expect "ingest key cannot read (the key is checked first): 403" 403 "$CODE"
http GET "/v1/apps/shop/network" ""
expect "no key: 401" 401 "$CODE"
http POST "/v1/apps/shop/network" "$RD"
expect "POST network: 404" 404 "$CODE"

# --- user URL patterns -------------------------------------------------------------------
http GET /v1/apps/shop/url-patterns "$RD"
expect "patterns: none yet" '200 [] null' "$CODE $(jq -c .patterns <<< "$BODY") $(jq -c .updated_at <<< "$BODY")"
http PUT /v1/apps/shop/url-patterns "$RD" --data-binary '{"patterns":[]}'
expect "PUT with the read key: 403" 403 "$CODE"
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary 'not json'
expect "PUT not JSON: 400" 400 "$CODE"
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary '{"patterns":["api.example.com/a"],"x":1}'
expect "PUT other fields: 400" 400 "$CODE"
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary '{"patterns":["api.example.com/a", 5]}'
expect "PUT a number: 400 naming it" "400 patterns[1] is not a string" "$CODE $(jq -r .error <<< "$BODY")"
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary '{"patterns":["api.example.com/a", "api.example.com/a?x=1"]}'
expect "PUT a pattern with a query: 400" 400 "$CODE"
contains "PUT a bad pattern: its index" "patterns[1]" "$BODY"
jq -cn '{patterns: [range(101) | "api.example.com/p\(.)"]}' > many.json
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary @many.json
expect "PUT 101 patterns: 400" "400 101 patterns: at most 100 per app" "$CODE $(jq -r .error <<< "$BODY")"
jq -cn --arg p "api.example.com/$(head -c 600 /dev/zero | tr '\0' a)" '{patterns: [$p]}' > long.json
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary @long.json
expect "PUT a 616-byte pattern: 400" 400 "$CODE"
contains "PUT a long pattern: the cap" "512" "$BODY"
head -c 300000 /dev/zero | tr '\0' ' ' > big.json
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary @big.json
expect "PUT a body over 256 KiB: 413" 413 "$CODE"
http GET /v1/apps/shop/url-patterns "$RD"
expect "refused PUTs changed nothing" '[]' "$(jq -c .patterns <<< "$BODY")"
http PUT /v1/apps/shop/url-patterns "$UPL" \
  --data-binary '{"patterns":["https://api.example.com/v2/users/*/orders/*", "cdn.example.com/img/**"]}'
expect "PUT patterns: 200 set" "200 set 2" "$CODE $(jq -r .status <<< "$BODY") $(jq '.patterns | length' <<< "$BODY")"
http GET /v1/apps/shop/url-patterns "$RD"
expect "GET patterns: in order" '["https://api.example.com/v2/users/*/orders/*","cdn.example.com/img/**"]' \
  "$(jq -c .patterns <<< "$BODY")"
expect "GET patterns: updated_at set" true "$(jq '.updated_at > 0' <<< "$BODY")"

# the same requests again, after the PUT: the user patterns apply to them;
# the groups stored before are not rewritten
batch b2 22222222-1111-4111-8111-000000000002 1.0 $O1 "$E1"
post b2
expect "batch 2 accepted" 202 "$CODE"
expect_processed 1
http GET "/v1/apps/shop/network?build=1.0&limit=100" "$RD"
expect "after the PUT: the user pattern's group" "4 2" \
  "$(jq -r '.requests[] | select(.pattern == "/v2/users/*/orders/*" and .http_method == "GET") | "\(.count) \(.errors)"' <<< "$BODY")"
expect "after the PUT: the old group unchanged (not rewritten)" 4 \
  "$(jq -r --arg p "$ORDERS" '.requests[] | select(.pattern == $p and .http_method == "GET") | .count' <<< "$BODY")"
expect "after the PUT: '**' for the cdn" "1 1" \
  "$(jq -r '[(.requests[] | select(.pattern == "/img/**") | .count), (.requests[] | select(.pattern == "/img/{hex}/thumb.png") | .count)] | join(" ")' <<< "$BODY")"
expect "after the PUT: a POST with fewer segments keeps the automatic pattern" 2 \
  "$(jq -r '.requests[] | select(.http_method == "POST") | .count' <<< "$BODY")"
http PUT /v1/apps/shop/url-patterns "$UPL" --data-binary '{"patterns":[]}'
expect "PUT an empty list: 200" "200 []" "$CODE $(jq -c .patterns <<< "$BODY")"

# --- a line that is not JSON but names "memory" is not_json, not out of memory
# (it once made the writer retry the batch forever, stalling every batch after it)
batch mem 22222222-1111-4111-8111-000000000005 1.0 $O1 \
  "[\"memory\", \"{\\\"type\\\":\\\"network\\\", \\\"x\\\": memory}\", $(net GET mem.example.com /m 10)]"
post mem
expect "a 'memory' line: batch accepted" 202 "$CODE"
expect_processed 1
expect "a 'memory' line: counted as not_json" 2 "$(m_of not_json)"
http GET "/v1/apps/shop/network?build=1.0&host=mem.example.com" "$RD"
expect "a 'memory' line: the good event beside it stored" 1 "$(jq -r '.requests[0].count' <<< "$BODY")"

# --- the per-batch bound: 16,384 network events stored, the rest "budget" -------------
jq -cn '[range(16386) | {type:"network", device:"d", begin_us:0, end_us:10, method:"GET",
  scheme:"http", host:"bulk.example.com", port:80, path:"/p/\(. % 3)", bytes_out:0,
  bytes_in:0, total_us:10, status:200, caller:13}]' > bulk.events
batch bulk 22222222-1111-4111-8111-000000000003 2.0 $O1 "$(cat bulk.events)"
post bulk
expect "bulk batch accepted" 202 "$CODE"
expect_processed 1
expect "bulk: 2 past the bound counted as budget" 2 "$(m_of budget)"
http GET "/v1/apps/shop/network?build=2.0&host=bulk.example.com" "$RD"
expect "bulk: 16,384 requests stored, one pattern" "1 16384 /p/{id} 16384" \
  "$(jq -r '"\(.requests | length) \(.requests[0].count) \(.requests[0].pattern) \(.requests[0].callers[0].count)"' <<< "$BODY")"
expect "bulk: the caller's original name" "com.example.Db.query" \
  "$(jq -r '.requests[0].callers[0].method | "\(.class).\(.name)"' <<< "$BODY")"
post bulk
expect "bulk again: duplicate" 200 "$CODE"
http GET "/v1/apps/shop/network?build=2.0" "$RD"
expect "duplicate not counted" 16384 "$(jq -r '.requests[0].count' <<< "$BODY")"

# --- kill -9 while a batch's requests are written: exactly once -----------------------
# (a few tries at growing delays: the landing point is not guaranteed)
sed 's/bulk\.example\.com/kill.example.com/g' bulk.events > kill.events
batch k 22222222-1111-4111-8111-000000000004 2.0 $O1 "$(cat kill.events)"
post k
expect "kill batch accepted" 202 "$CODE"
batches_20() { http GET "/v1/apps/shop/builds" "$RD"; jq -r '.builds[] | select(.build == "2.0") | .batches' <<< "$BODY"; }
kills=0
for d in 0.1 0.3 0.6 1 2; do
  [ "$(batches_20)" == 2 ] && break
  sleep "$d"
  kill -9 "$SERVER_PID"
  wait "$SERVER_PID" 2> /dev/null || true
  kills=$((kills + 1))
  start_server "$DATA"
done
echo "kill -9: $kills time(s)"
for _ in $(seq 600); do [ "$(batches_20)" == 2 ] && break; sleep 0.05; done
http GET "/v1/apps/shop/network?build=2.0&host=kill.example.com" "$RD"
expect "after kill -9: requests and callers counted exactly once" "16384 16384" \
  "$(jq -r '"\(.requests[0].count) \(.requests[0].callers[0].count)"' <<< "$BODY")"
post k
expect "kill batch again: duplicate" 200 "$CODE"
# --- byte totals past 2^63 over several hours: saturated, never a database error
# (sum() of the hours' rows once overflowed: /network answered 500 for the build)
put_ids shop 3.0 ids.txt "method-ids 3.0"
http PUT /v1/apps/shop/builds/3.0/mapping "$UPL" --data-binary @mapping.txt
expect "mapping 3.0" 201 "$CODE"
jq -cn '[range(16384) | {type:"network", device:"d", begin_us:0, end_us:10, method:"GET",
  scheme:"http", host:"huge.example.com", port:80, path:"/h", bytes_out:0,
  bytes_in:281474976710655, total_us:10, status:200}]' > huge.events
for i in 1 2 3; do # three hours: 3 x 16,384 x (2^48 - 1) bytes is over 2^63
  batch huge$i 22222222-1111-4111-8111-00000000010$i 3.0 $((O1 + i * 7200000000)) "$(cat huge.events)"
  post huge$i
  expect "huge batch $i accepted" 202 "$CODE"
done
batches_30() { http GET "/v1/apps/shop/builds" "$RD"; jq -r '.builds[] | select(.build == "3.0") | .batches' <<< "$BODY"; }
for _ in $(seq 600); do [ "$(batches_30)" == 3 ] && break; sleep 0.1; done
expect "huge batches processed" 3 "$(batches_30)"
http GET "/v1/apps/shop/network?build=3.0&sort=bytes" "$RD"
expect "bytes past 2^63: answered" 200 "$CODE"
contains "bytes past 2^63: saturated at 2^63-1" '"bytes_in":9223372036854775807' "$BODY"
contains "bytes past 2^63: the count exact" '"count":49152' "$BODY"
finish
