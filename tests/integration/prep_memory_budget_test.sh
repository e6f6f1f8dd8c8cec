#!/usr/bin/env bash
# The decompressed copies a POST hands the prep threads (bl_processor_offer_body)
# are given back on every exit: a batch that cannot be queued after its 202
# (out of memory; made to happen by BEATLINE_TEST_FAIL_ENQUEUE=1) leaves no
# copy behind in the 64 MiB budget (beatline_prep_memory_bytes stays 0), and
# is processed exactly once from its file at the next start.
#
#   prep_memory_budget_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

wait_metric() { # name value
  local n
  for _ in $(seq 400); do
    n=$(metric "$1")
    [ "$n" == "$2" ] && return 0
    sleep 0.05
  done
  bad "$1: expected $2, got $n"
}

cat > ids.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
EOF
D=$WORK/d
create_app "$D" shop
for k in 1 2 3; do
  printf '{"batch_id":"dddddddd-0000-4000-8000-%012d","app":"shop","build":"1.0","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"records":[[1,"i",0],[1,"o",%d]]}],"events":[]}' \
    "$k" $((k * 10)) | "$BIN/beatline-batch" encode | zstd -q -c > "b$k.zst"
done

# --- 1. queueing fails after the 202: no copy is kept ------------------------
export BEATLINE_TEST_FAIL_ENQUEUE=1
start_server "$D"
unset BEATLINE_TEST_FAIL_ENQUEUE
http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @ids.txt
for k in 1 2 3; do
  http POST /v1/apps/shop/batches "$ING" -H 'Content-Encoding: zstd' --data-binary @"b$k.zst"
  expect "zstd batch $k: durable, 202" 202 "$CODE"
done
# the copies were offered before the failed enqueue, in the POSTs' threads:
# nothing else can take them now
expect "no copy kept for batches that were not queued" 0 "$(metric beatline_prep_memory_bytes)"
expect "nothing processed" 0 "$(metric beatline_batches_processed_total)"
stop_server

# --- 2. the next start processes them from their files, once -----------------
start_server "$D"
wait_metric beatline_batches_processed_total 3
expect "after the restart: no copy kept" 0 "$(metric beatline_prep_memory_bytes)"
stop_server
expect "3 batches recorded once" 3 "$(store_sql "$D" "SELECT count(*) FROM batches")"
finish
