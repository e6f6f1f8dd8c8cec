#!/usr/bin/env bash
# Call-tree answers kept in memory (server/http/tree_keep.c):
# the same request gets the same bytes while nothing is committed, and a
# fresh answer once something is (a processed batch); kept answers never
# cross app, build, thread, limit, depth or format.
#
#   tree_keep_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
for a in shop mall; do
  keys=$("$BIN/beatline-server" --data "$DATA" app create "$a")
  eval "ING_$a=$(jq -r .ingest_key <<< "$keys") UPL_$a=$(jq -r .upload_key <<< "$keys") RD_$a=$(jq -r .read_key <<< "$keys")"
done
start_server "$DATA"
processed() { # N: waits (bounded) until N batches are processed
  for _ in $(seq 600); do [ "$(metric beatline_batches_processed_total)" = "$1" ] && break; sleep 0.05; done
  expect "$1 batches processed" "$1" "$(metric beatline_batches_processed_total)"
}
ids() { # APP BUILD LOAD_NAME
  printf '# beatline method-ids v1 names=original\n1,1,com.example.Feed run ()V\n2,1,com.example.Feed %s ()V\n' "$3" > ids.txt
  local k="UPL_$1"
  http PUT "/v1/apps/$1/builds/$2/method-ids" "${!k}" --data-binary @ids.txt
  expect "method-ids $1 $2" 201 "$CODE"
}
n=0
batch() { # APP BUILD RUN_US: main: run > load (10 µs in)
  n=$((n + 1))
  jq -cn --arg id "$(printf '00000000-0000-4000-8000-%012d' "$n")" --arg a "$1" --arg b "$2" --argjson t "$3" \
    '{batch_id:$id, app:$a, build:$b, session_id:"s", origin_wall_us:1795960000000000,
      device:{model:"m", os:"14", sdk:34}, threads:[{id:1, name:"main", main:true, truncated:false,
      records:[[1,"i",0],[2,"i",10],[2,"o",20],[1,"o",$t]]}]}' > b.json
  "$BIN/beatline-batch" encode < b.json > b.bin
  local k="ING_$1"
  http POST "/v1/apps/$1/batches" "${!k}" --data-binary @b.bin
  expect "batch $n" 202 "$CODE"
  processed "$n"
}
ids shop 1.0 load
ids shop 2.0 load
ids mall 1.0 load
batch shop 1.0 100
batch shop 2.0 200
batch mall 1.0 300

T=/v1/apps/shop/call-tree
tree() { # APP QUERY -> "count total name" of the first node, nodes, truncated
  local k="RD_$1"
  http GET "/v1/apps/$1/call-tree?$2" "${!k}"
  expect "$1 $2: status" 200 "$CODE"
  jq -rc '"\(.nodes) \(.count[0]) \(.total_us[0]) \(.methods[.method[1] // 0].name) \(.truncated)"' <<< "$BODY"
}
# asked twice: the same answer (the second one kept)
expect "shop 1.0" "2 1 100 load false" "$(tree shop 'build=1.0&format=columns')"
first=$BODY
expect "shop 1.0 again" "2 1 100 load false" "$(tree shop 'build=1.0&format=columns')"
expect "shop 1.0 again: same bytes" "$first" "$BODY"
# nothing crosses: build, app, limit, depth, thread, format
expect "shop 2.0" "2 1 200 load false" "$(tree shop 'build=2.0&format=columns')"
expect "mall 1.0" "2 1 300 load false" "$(tree mall 'build=1.0&format=columns')"
expect "shop 1.0 limit=1" "1 1 100 run true" "$(tree shop 'build=1.0&format=columns&limit=1')"
expect "shop 1.0 max_depth=1" "1 1 100 run true" "$(tree shop 'build=1.0&format=columns&max_depth=1')"
expect "shop 1.0 thread=main" "2 1 100 load false" "$(tree shop 'build=1.0&format=columns&thread=main')"
http GET "$T?build=1.0" "$RD_shop"
expect "shop 1.0 json" "1 100 load" "$(jq -rc '.roots[0] | "\(.count) \(.total_us) \(.children[0].method.name)"' <<< "$BODY")"
curl -s -o a.bin -H "Authorization: Bearer $RD_shop" "$URL$T?build=1.0&format=columns-binary"
expect "shop 1.0 binary" "BLCB" "$(head -c 4 a.bin)"
expect "shop 1.0 columns again" "2 1 100 load false" "$(tree shop 'build=1.0&format=columns')"
# a processed batch: the next answer has it (one more call of run)
batch shop 1.0 1000
expect "shop 1.0 after a batch" "2 2 1100 load false" "$(tree shop 'build=1.0&format=columns')"
expect "shop 1.0 after a batch, again" "2 2 1100 load false" "$(tree shop 'build=1.0&format=columns')"
curl -s -o b.bin -H "Authorization: Bearer $RD_shop" "$URL$T?build=1.0&format=columns-binary"
if cmp -s a.bin b.bin; then bad "binary after a batch: the old answer"; else ok; fi
expect "mall 1.0 after shop's batch" "2 1 300 load false" "$(tree mall 'build=1.0&format=columns')"
finish
