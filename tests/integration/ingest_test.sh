#!/usr/bin/env bash
# The writer's fast paths (issue 12, ingest end to end) keep the stored
# aggregates exact, on loopback with small hand-made batches.
#
#   ingest_test.sh BUILD_DIR WORK_DIR
#
# Checks:
#   1. call-path nodes the writer knows are stored are updated by id; a node
#      row deleted behind its back (another process, a retention job) is
#      made anew with the new batch's counts, not lost.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
wait_metric() { # name value
  local n
  for _ in $(seq 400); do
    n=$(metric "$1")
    [ "$n" == "$2" ] && return 0
    sleep 0.05
  done
  bad "$1: expected $2, got $n"
}
# batch NAME UUID THREADS-JSON -> NAME.bin
batch() {
  printf '{"batch_id":"%s","app":"shop","build":"1.0","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":%s,"events":[]}' \
    "$2" "$3" > "$1.json"
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}
sql() { sqlite3 -cmd '.timeout 5000' "$1/beatline.db" "$2"; }

cat > ids.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
2,1,com.example.Main step (I)V
3,1,com.example.Work deep ()V
EOF

setup_data() { # DATA: an app "shop" with build 1.0's method-ID file
  local keys
  keys=$("$BIN/beatline-server" --data "$1" app create shop)
  ING=$(jq -r .ingest_key <<< "$keys")
  UPL=$(jq -r .upload_key <<< "$keys")
}

# --- 1. a stored node deleted behind the writer's back ----------------------
D1=$WORK/d1
setup_data "$D1"
start_server "$D1"
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
expect "method-ID file" 201 "$CODE"
batch a aaaaaaaa-0000-4000-8000-000000000001 \
  '[{"id":1,"name":"main","main":true,"records":[[1,"i",0],[2,"i",1],[2,"o",4],[1,"o",10]]}]'
http POST /v1/apps/shop/batches "$ING" --data-binary @a.bin
expect "batch a" 202 "$CODE"
wait_metric beatline_batches_processed_total 1
expect "nodes after a (method count)" "1|1 2|1" \
  "$(sql "$D1" "SELECT m.method_id || '|' || n.count FROM call_nodes n JOIN methods m ON m.id = n.method ORDER BY m.method_id" | tr '\n' ' ' | sed 's/ $//')"
sql "$D1" "DELETE FROM call_nodes"
batch b aaaaaaaa-0000-4000-8000-000000000002 \
  '[{"id":1,"name":"main","main":true,"records":[[1,"i",0],[2,"i",1],[2,"o",4],[2,"i",5],[2,"o",7],[1,"o",10]]}]'
http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
expect "batch b" 202 "$CODE"
wait_metric beatline_batches_processed_total 2
expect "deleted nodes made anew with batch b's counts (method count total self)" \
  "1|1|10|5 2|2|5|5" \
  "$(sql "$D1" "SELECT m.method_id || '|' || n.count || '|' || n.total_us || '|' || n.self_us FROM call_nodes n JOIN methods m ON m.id = n.method ORDER BY m.method_id" | tr '\n' ' ' | sed 's/ $//')"
stop_server

finish
