#!/usr/bin/env bash
# The call-tree query's two ways of reading a build (issue 12) give the same
# bytes. Without root= and with limit up to 100,000 the server reads the tree
# top-down while printing it; with root= (or a larger limit) it merges every
# stored node first. Here every call path starts at one method (Root.run)
# that is called nowhere else, so root=Root.run asks for the very same tree:
# both answers must be byte-identical but for the "root" field, for every
# thread / max_depth / limit tried (ties in total_us included: times step by
# 0-2 µs). limit 100,000 against 100,001 compares the two reads untruncated.
#
#   calltree_query_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
ROOT=com.example.t.Root.run

# --- 4 batches x 4 threads (1 main) of random nesting under Root.run ------
{ echo "# beatline method-ids v1 names=original"
  echo "0,1,com.example.t.Root run ()V"
  for i in $(seq 1 25); do echo "$i,1,com.example.t.W$((i % 7)) m$i (I)V"; done
  # names the answer escapes, or writes as UTF-8
  echo '26,1,com.example.t.Q"uote\\Back m"26\\ (I)V'
  echo '27,1,com.example.t.Ünï m27 (I)V'; } > mids.txt
for b in 1 2 3 4; do
  awk -v b="$b" 'BEGIN {
    srand(7 * b)
    printf "{\"batch_id\":\"aaaaaaaa-aaaa-4aaa-8aaa-%012d\",\"app\":\"t\",\"build\":\"1.0\",", b
    printf "\"session_id\":\"s%d\",\"origin_wall_us\":1795960000000000,\"threads\":[", b
    for (th = 1; th <= 4; th++) {
      printf "%s{\"id\":%d,\"name\":\"t%d\",\"main\":%s,\"truncated\":false,\"records\":[",
             (th > 1 ? "," : ""), th, th, (th == 1 ? "true" : "false")
      sp = 0; t = 0; first = 1
      for (k = 0; k < 6000 || sp > 0; k++) {
        t += int(rand() * 3)
        enter = sp == 0 || (k < 6000 && sp < 24 && rand() < 0.5 + (9 - sp) / 30)
        if (enter) { m = sp == 0 ? 0 : 1 + int(rand() * 27); st[sp++] = m; e = "i" }
        else { m = st[--sp]; e = "o" }
        printf "%s[%d,\"%s\",%d]", (first ? "" : ","), m, e, t; first = 0
      }
      printf "]}"
    }
    printf "],\"events\":[]}\n" }' > "b$b.json"
  "$BIN/beatline-batch" encode < "b$b.json" > "b$b.bin"
done

create_app "$DATA" t
start_server "$DATA"
put_ids t 1.0 mids.txt "method-ids"
for b in 1 2 3 4; do
  http POST /v1/apps/t/batches "$ING" --data-binary @"b$b.bin"
  expect "batch $b" 202 "$CODE"
done
n=0
for _ in $(seq 600); do
  n=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "$n" == 4 ] && break
  sleep 0.1
done
expect "batches processed" 4 "$n"

# --- the data exercises what it should -------------------------------------
http GET "/v1/apps/t/call-tree?limit=100001&max_depth=4096" "$RD"
expect "whole tree (merged)" 200 "$CODE"
nodes=$(jq '[.. | objects | select(has("method"))] | length' <<< "$BODY")
ties=$(jq '[.. | objects | select(has("children")) | .children | [.[].total_us] |
            (length - (unique | length))] | add' <<< "$BODY")
depth=$(jq '[paths(objects and has("method")) | map(select(. == "children")) | length] | max' \
  <<< "$BODY")
echo "tree: $nodes merged nodes, $ties sibling ties in total_us, $depth levels below the root"
[ "$nodes" -gt 3000 ] && [ "$nodes" -lt 100000 ] && ok || bad "merged nodes: $nodes"
[ "$ties" -gt 100 ] && ok || bad "sibling ties: $ties"
[ "$depth" -gt 10 ] && ok || bad "depth: $depth"

# --- top-down (no root=) against merged (root=Root.run), byte for byte ------
same() { # NAME QUERY: top-down QUERY against QUERY&root=ROOT
  local a b pat="\"root\":\"$ROOT\"" rep='"root":null'
  http GET "/v1/apps/t/call-tree?$2" "$RD"
  a="$CODE $BODY"
  http GET "/v1/apps/t/call-tree?$2&root=$ROOT" "$RD"
  b="$CODE ${BODY/"$pat"/$rep}"
  if [ "$a" == "$b" ]; then ok; else bad "$1: $2: top-down and merged answers differ"; fi
}
for th in all main; do
  for d in 1 2 3 4 7 64 4096; do
    for l in 0 1 2 3 10 100 1000 10000 100000; do
      same "thread=$th" "thread=$th&max_depth=$d&limit=$l"
    done
    http GET "/v1/apps/t/call-tree?thread=$th&max_depth=$d&limit=100000" "$RD"
    a="$CODE $BODY"
    http GET "/v1/apps/t/call-tree?thread=$th&max_depth=$d&limit=100001" "$RD"
    expect "thread=$th max_depth=$d: limit 100,000 (top-down) = 100,001 (merged)" "$a" \
      "$CODE $BODY"
  done
done
# the defaults, and a build named or not
same "defaults" "build=1.0"
http GET "/v1/apps/t/call-tree" "$RD"
a=$BODY
http GET "/v1/apps/t/call-tree?build=1.0&thread=all&max_depth=64&limit=10000" "$RD"
expect "defaults spelt out" "$a" "$BODY"
expect "defaults: truncated, one root" "true 1" \
  "$(jq -r '"\(.truncated) \(.roots | length)"' <<< "$a")"
# method names are compact JSON as jansson writes them (jq writes the same)
expect "answer is compact JSON" "$(jq -c . <<< "$a")" "$a"
expect "names with quote, backslash, UTF-8" \
  'com.example.t.Q"uote\\Back m"26\\ (I)V|com.example.t.Ünï m27 (I)V' \
  "$(jq -r '[.. | objects | select(has("method")) | .method |
            select(.name == "m\"26\\\\" or .name == "m27") |
            "\(.class) \(.name) \(.descriptor)"] | unique | join("|")' <<< "$a")"
finish
