#!/usr/bin/env bash
# GET /v1/apps/{app}/call-tree?format=columns-binary (server/http/h_calltree.c
# "binary columns", docs/api.md): the columns answer as typed arrays. A
# hand-made tree on two threads (and a call of 5,000 s, past u32 µs):
# decoded, every query equals format=columns, both ways the server reads a
# tree (top-down; merged first: root= or limit over 100,000); the head, the
# padding, the column types (u32, or f64 when a value does not fit);
# errors stay JSON.
#
#   tree_binary_test.sh BUILD_DIR WORK_DIR
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
for b in 1.0 2.0; do
  put_ids shop "$b" ids.txt "method-ids $b"
done
# 1.0 — main: run 0-1000 > load 10-200 > query 20-120; run > log 300-350;
# worker: log 0-40 > query 5-25. 2.0 — main: run for 5,000 s > log 1 µs.
batch() { # N BUILD THREADS
  jq -cn --arg id "00000000-0000-4000-8000-00000000000$1" --arg b "$2" --argjson th "$3" \
    '{batch_id:$id, app:"shop", build:$b, session_id:"s", origin_wall_us:1795960000000000,
      device:{model:"m", os:"14", sdk:34}, threads:$th}' > "b$1.json"
  "$BIN/beatline-batch" encode < "b$1.json" > "b$1.bin"
  http POST /v1/apps/shop/batches "$ING" --data-binary @"b$1.bin"
  expect "batch $1" 202 "$CODE"
}
batch 1 1.0 '[{"id":1,"name":"main","main":true,"truncated":false,
  "records":[[1,"i",0],[2,"i",10],[3,"i",20],[3,"o",120],[2,"o",200],[4,"i",300],[4,"o",350],[1,"o",1000]]},
  {"id":2,"name":"worker","main":false,"truncated":false,"records":[[4,"i",0],[3,"i",5],[3,"o",25],[4,"o",40]]}]'
batch 2 2.0 '[{"id":1,"name":"main","main":true,"truncated":false,
  "records":[[1,"i",0],[4,"i",10],[4,"o",11],[1,"o",5000000000]]}]'
for _ in $(seq 600); do [ "$(metric beatline_batches_processed_total)" = 2 ] && break; sleep 0.05; done
expect "batches processed" 2 "$(metric beatline_batches_processed_total)"

T=/v1/apps/shop/call-tree
# decode.py BIN JSON: "same TYPES" when the binary answer decodes to the
# JSON columns answer (lists, methods, head fields), else what differs
cat > decode.py << 'EOF2'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); j = json.load(open(sys.argv[2]))
def fail(m): print("differ: " + m); sys.exit(0)
if b[:4] != b"BLCB": fail("magic %r" % b[:4])
h = struct.unpack_from("<I", b, 4)[0]
head = json.loads(b[8:8 + h].decode("utf-8"))
if any(b[8 + h:(8 + h + 7) // 8 * 8]): fail("head padding not zero")
off = (8 + h + 7) // 8 * 8; n = head["nodes"]; types = []
fmt = {"i32": "i", "u32": "I", "f64": "d"}
for name, ty in head["columns"]:
    size = struct.calcsize(fmt[ty]); types.append(ty)
    vals = list(struct.unpack_from("<%d%s" % (n, fmt[ty]), b, off))
    if [int(v) for v in vals] != j[name]: fail("%s: %s vs %s" % (name, vals, j[name]))
    end = off + n * size; off = (end + 7) // 8 * 8
    if any(b[end:off]): fail(name + " padding not zero")
if off != len(b): fail("%d bytes after the columns" % (len(b) - off))
if [c[0] for c in head["columns"]] != ["parent", "method", "count", "total_us", "self_us"]: fail("column order")
want = {k: v for k, v in j.items() if k not in ("parent", "method", "count", "total_us", "self_us")}
want["format"] = "columns-binary"; got = dict(head); del got["columns"]
if got != want: fail("head %s vs %s" % (got, want))
if list(head) != ["app", "build", "thread", "root", "format", "methods", "nodes", "columns", "truncated"]: fail("head order %s" % list(head))
print("same " + ",".join(types))
EOF2
same_as_columns() { # NAME QUERY EXPECTED_TYPES
  local code
  code=$(curl -s -D bin.hdrs -o a.bin -w '%{http_code}' -H "Authorization: Bearer $RD" \
    "$URL$T?format=columns-binary$2")
  expect "$1: status" 200 "$code"
  expect_grep "$1: octet-stream" '^Content-Type: application/octet-stream' "$(cat bin.hdrs)"
  curl -s -o a.json -H "Authorization: Bearer $RD" "$URL$T?format=columns$2"
  expect "$1: decoded = format=columns" "same $3" "$(python3 decode.py a.bin a.json)"
}
u=u32,u32,u32,u32
for extra in '' '&limit=200000' '&root=com.example.Feed.run'; do
  same_as_columns "main$extra" "&build=1.0&thread=main$extra" "i32,$u"
  same_as_columns "all$extra" "&build=1.0$extra" "i32,$u"
done
same_as_columns "root=query (merged)" "&build=1.0&root=com.example.Db.query" "i32,$u"
same_as_columns "limit=2 (truncated)" "&build=1.0&thread=main&limit=2" "i32,$u"
same_as_columns "max_depth=1" "&build=1.0&max_depth=1" "i32,$u"
same_as_columns "limit=0: no nodes" "&build=1.0&limit=0" "i32,$u"
# 5,000 s = 5e9 µs: total_us and self_us do not fit u32, count does
same_as_columns "5,000 s call: f64" "&build=2.0" "i32,u32,u32,f64,f64"
expect "5,000 s call: exact" "5000000000 4999999999" \
  "$(jq -r '"\(.total_us[0]) \(.self_us[0])"' a.json)"
same_as_columns "5,000 s call, merged" "&build=2.0&limit=200000" "i32,u32,u32,f64,f64"
# errors are JSON, as every error
http GET "$T?format=columns-binary&build=9.9" "$RD"
expect "unknown build" 404 "$CODE"
expect_grep "unknown build: JSON" '^Content-Type: application/json' "$HDRS"
expect "unknown build: error" "unknown build '9.9'" "$(jq -r .error <<< "$BODY")"
http GET "$T?format=columns-binary&limit=-1" "$RD"
expect "bad limit" 400 "$CODE"
http GET "$T?format=columns-binary" ""
expect "no key" 401 "$CODE"
finish
