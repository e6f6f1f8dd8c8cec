#!/usr/bin/env bash
# GET /v1/apps/{app}/call-tree?format=columns (server/http/h_calltree.c): the
# merged call tree as columns (a methods table, then parent / method /
# count / total_us / self_us lists in depth-first order), the dashboard's
# compact form of the tree. A hand-made tree with known times on two
# threads; both ways the server reads a tree (top-down, and merged first:
# root= or limit over 100,000) give the same nodes as format=json; limits.
#
#   tree_columns_test.sh BUILD_DIR WORK_DIR
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
# main: run 0-1000 > load 10-200 > query 20-120; run > log 300-350
# worker: log 0-40 > query 5-25
jq -cn '{batch_id:"00000000-0000-4000-8000-000000000001", app:"shop", build:"1.0", session_id:"s",
  origin_wall_us:1795960000000000, device:{model:"m", os:"14", sdk:34},
  threads:[{id:1, name:"main", main:true, truncated:false,
    records:[[1,"i",0],[2,"i",10],[3,"i",20],[3,"o",120],[2,"o",200],[4,"i",300],[4,"o",350],[1,"o",1000]]},
    {id:2, name:"worker", main:false, truncated:false, records:[[4,"i",0],[3,"i",5],[3,"o",25],[4,"o",40]]}]}' > b.json
"$BIN/beatline-batch" encode < b.json > b.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
expect "batch" 202 "$CODE"
for _ in $(seq 600); do [ "$(metric beatline_batches_processed_total)" = 1 ] && break; sleep 0.05; done

T=/v1/apps/shop/call-tree
cols='"\(.nodes) p=\(.parent) m=\(.method) c=\(.count) t=\(.total_us) s=\(.self_us) \(.truncated)"'
names='[.methods[] | "\(.class).\(.name)\(.descriptor)"] | join("|")'
# columns rebuilt into the nested tree equal format=json's roots
same_as_json() { # name query
  local q=$2 c j
  http GET "$T?format=columns$q" "$RD"
  c=$BODY
  http GET "$T?format=json$q" "$RD"
  j=$BODY
  expect "$1: columns rebuilt = json" same "$(python3 -c '
import json, sys
c = json.loads(sys.argv[1]); j = json.loads(sys.argv[2])
n = c["nodes"]; nodes = []; roots = []
ok = all(len(c[k]) == n for k in ("parent", "method", "count", "total_us", "self_us"))
for i in range(n):
    p = c["parent"][i]
    ok = ok and -1 <= p < i
    d = {"method": c["methods"][c["method"][i]], "count": c["count"][i], "total_us": c["total_us"][i],
         "self_us": c["self_us"][i], "children": []}
    nodes.append(d)
    (roots if p < 0 else nodes[p]["children"]).append(d)
ok = ok and roots == j["roots"] and c["truncated"] == j["truncated"] and c["build"] == j["build"]
print("same" if ok else "differ: %s vs %s" % (json.dumps(c), json.dumps(j)))' "$c" "$j")"
}
# both ways the tree is read (top-down; merged first), main thread and all
for extra in '' '&limit=200000' '&root=com.example.Feed.run'; do
  http GET "$T?format=columns&thread=main$extra" "$RD"
  expect "main$extra: status" 200 "$CODE"
  expect_grep "main$extra: JSON" '^Content-Type: application/json' "$HDRS"
  expect "main$extra: format" columns "$(jq -r .format <<< "$BODY")"
  expect "main$extra: columns" '4 p=[-1,0,1,0] m=[0,1,2,3] c=[1,1,1,1] t=[1000,190,100,50] s=[760,90,100,50] false' \
    "$(jq -rc "$cols" <<< "$BODY")"
  expect "main$extra: methods once, in first use order" \
    'com.example.Feed.run()V|com.example.Feed.load()V|com.example.Db.query(Ljava/lang/String;)V|com.example.Log.log()V' \
    "$(jq -r "$names" <<< "$BODY")"
  same_as_json "main$extra" "&thread=main$extra"
done
for extra in '' '&limit=200000'; do
  http GET "$T?format=columns$extra" "$RD"
  expect "all$extra: two roots" '6 p=[-1,0,1,0,-1,4] m=[0,1,2,3,3,2] c=[1,1,1,1,1,1] t=[1000,190,100,50,40,20] s=[760,90,100,50,20,20] false' \
    "$(jq -rc "$cols" <<< "$BODY")"
  same_as_json "all$extra" "$extra"
done
http GET "$T?format=columns&root=com.example.Db.query" "$RD"
expect "root=query: the two query nodes merged" '1 p=[-1] m=[0] c=[2] t=[120] s=[120] false' "$(jq -rc "$cols" <<< "$BODY")"

# limits: cut lists stay the same length and say truncated
http GET "$T?format=columns&thread=main&limit=2" "$RD"
expect "limit=2" '2 p=[-1,0] m=[0,1] c=[1,1] t=[1000,190] s=[760,90] true' "$(jq -rc "$cols" <<< "$BODY")"
same_as_json "limit=2" "&thread=main&limit=2"
http GET "$T?format=columns&max_depth=1" "$RD"
expect "max_depth=1" '2 p=[-1,-1] m=[0,1] c=[1,1] t=[1000,40] s=[760,20] true' "$(jq -rc "$cols" <<< "$BODY")"
same_as_json "max_depth=1" "&max_depth=1&limit=200000"
http GET "$T?format=columns&limit=0" "$RD"
expect "limit=0: empty lists" '0 p=[] m=[] c=[] t=[] s=[] true []' "$(jq -rc "$cols + \" \(.methods)\"" <<< "$BODY")"
http GET "$T?format=columns&build=9.9" "$RD"
expect "unknown build" 404 "$CODE"
http GET "$T?format=column" "$RD"
expect "bad format" 400 "$CODE"
contains "bad format lists columns" "json, columns, columns-binary, speedscope or chrome" "$BODY"
finish
