#!/usr/bin/env bash
# Per-app ingest quotas and the expiry of waiting batches (issue 11, item
# 10): the ingest key ships inside every app, so it must not be able to make
# the server keep any number of builds whose batches wait forever.
#
#   quota_test.sh BUILD_DIR WORK_DIR
#
# Checks: a flood of batches for new builds gets 429 + Retry-After + JSON
# error after --quota-waiting-builds / --quota-waiting-batches /
# --quota-new-builds; batches of a build that has its files are never
# refused; an upload frees the quota; the counts survive a restart (batches
# found on disk count again); with a short --waiting-expiry a waiting batch
# is deleted, counted in beatline_batches_expired_total, and frees its quota;
# `beatline-server app set NAME QUOTA=N` overrides an option for one app;
# a batch sent right after a method-ID upload's 201 is never refused; an
# expiry past 100 years is refused at start.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

wait_metric() { # name value: bounded wait (30 s) until the metric has the value
  local v
  for _ in $(seq 600); do
    v=$(metric "$1")
    [ "$v" == "$2" ] && { ok; return 0; }
    sleep 0.05
  done
  bad "$1: expected $2, got $v"
}
N=0
# post BUILD -> CODE/BODY/HDRS of POSTing one new batch of that build
post() {
  N=$((N + 1))
  local uuid
  uuid=$(printf '%08x-0000-4000-8000-%012x' "$N" "$N")
  cat > b.json <<JSON
{"batch_id":"$uuid","app":"shop","build":"$1","session_id":"s","origin_wall_us":1795960000000000,
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[0,"i",0],[0,"o",10]]}],
 "events":[]}
JSON
  "$BIN/beatline-batch" encode < b.json > b.bin
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
}
echo "0,9,com.example.Foo bar ()V" > mids.txt

# the new-builds quota is per clock hour: do not start in the last 30 s of one
s=$((10#$(date +%M) * 60 + 10#$(date +%S)))
if [ "$s" -ge 3570 ]; then sleep $((3601 - s)); fi

# --- quotas ------------------------------------------------------------------
DATA=$WORK/data
create_app "$DATA" shop
start_server "$DATA" --quota-waiting-builds 3 --quota-waiting-batches 6 --quota-new-builds 5

post b1 && expect "new build 1" 202 "$CODE"
post b2 && expect "new build 2" 202 "$CODE"
post b3 && expect "new build 3" 202 "$CODE"
post b4
expect "a 4th build waiting: 429" 429 "$CODE"
expect_grep "429 names the waiting-builds quota" "too many builds waiting for uploads" "$(jq -r .error <<< "$BODY")"
expect_grep "429 has Retry-After" "Retry-After: 600" "$HDRS"
for i in 2 3 4; do post b1 && expect "batch $i of b1" 202 "$CODE"; done
post b1
expect "a 7th waiting batch: 429" 429 "$CODE"
expect_grep "429 names the waiting-batches quota" "too many batches waiting" "$(jq -r .error <<< "$BODY")"
wait_metric beatline_batches_waiting 6
expect "refusals counted" 2 "$(metric beatline_batches_quota_refused_total)"

# b1's method-ID file: its 4 batches are processed, the quota frees up
put_ids shop b1 mids.txt "b1 method-ids"
wait_metric beatline_batches_processed_total 4
wait_metric beatline_batches_waiting 2
for i in 1 2 3 4 5 6 7 8; do post b1 && expect "b1 has its files: never refused ($i)" 202 "$CODE"; done
post b4 && expect "b4 once b1 is out of the way" 202 "$CODE"
post b5 && expect "b5: 3 builds wait again" 429 "$CODE"
http PUT /v1/apps/shop/builds/b2/method-ids "$UPL" --data-binary @mids.txt
wait_metric beatline_batches_waiting 2
post b5 && expect "b5 after b2's upload (5th new build)" 202 "$CODE"
# a flood of new builds: the 6th new build of the hour is refused
http PUT /v1/apps/shop/builds/b3/method-ids "$UPL" --data-binary @mids.txt
wait_metric beatline_batches_waiting 2
refused=0
for i in $(seq 6 25); do
  post "flood$i"
  [ "$CODE" == 429 ] && refused=$((refused + 1))
done
expect "a flood of 20 new builds: all refused (5 new builds this hour)" 20 "$refused"
expect_grep "429 names the new-builds quota" "too many new builds" "$(jq -r .error <<< "$BODY")"
ra=$(awk 'tolower($1) == "retry-after:" { print $2 }' <<< "$HDRS" | tr -d '\r')
if [ -n "$ra" ] && [ "$ra" -ge 1 ] && [ "$ra" -le 3600 ]; then ok; else bad "new-builds Retry-After 1..3600: '$ra'"; fi

# --- a restart counts the waiting batches found on disk again -----------------
stop_server
start_server "$DATA" --quota-waiting-builds 2 --quota-waiting-batches 6 --quota-new-builds 100
wait_metric beatline_batches_waiting 2
post b6
expect "after a restart, batches found on disk count (2 builds wait)" 429 "$CODE"
post b4 && expect "a build that already waits may get more" 202 "$CODE"
stop_server

# --- per-app quotas: app set -----------------------------------------------------
DATA3=$WORK/data3
create_app "$DATA3" shop
"$BIN/beatline-server" --data "$DATA3" app create other > /dev/null
out=$("$BIN/beatline-server" --data "$DATA3" app set shop new-builds=2 waiting-bytes=0)
expect "app set prints the quotas" '{"app":"shop","quotas":{"waiting-builds":null,"waiting-batches":null,"waiting-bytes":0,"new-builds":2}}' "$(jq -c . <<< "$out")"
set +e
"$BIN/beatline-server" --data "$DATA3" app set shop new-builds=-1 2> set.err
rc=$?
"$BIN/beatline-server" --data "$DATA3" app set nope new-builds=1 2>> set.err
rc2=$?
set -e
expect "app set: a bad value is a usage error" 1 "$rc"
expect "app set: unknown app" 2 "$rc2"
expect_grep "app set: says what is bad" "bad setting 'new-builds=-1'" "$(cat set.err)"
start_server "$DATA3" --quota-new-builds 50
post n1 && expect "shop new build 1 of 2" 202 "$CODE"
post n2 && expect "shop new build 2 of 2" 202 "$CODE"
post n3 && expect "shop's own new-builds quota" 429 "$CODE"
expect_grep "the 429 says it is the app's limit" "app set NAME new-builds=N" "$(jq -r .error <<< "$BODY")"
# a running server applies a change at the next batch
"$BIN/beatline-server" --data "$DATA3" app set shop new-builds=default > /dev/null
post n3 && expect "back to the server's option (50)" 202 "$CODE"
"$BIN/beatline-server" --data "$DATA3" app set shop waiting-bytes=1 > /dev/null
post n1
expect "shop's own waiting-bytes quota" 429 "$CODE"
expect_grep "the 429 names the bytes" "too many bytes waiting for uploads" "$(jq -r .error <<< "$BODY")"
"$BIN/beatline-server" --data "$DATA3" app set shop waiting-bytes=0 > /dev/null
post n1 && expect "waiting-bytes=0: no limit" 202 "$CODE"
stop_server

# --- expiry ------------------------------------------------------------------
DATA2=$WORK/data2
create_app "$DATA2" shop
# (6 s: room for a loaded machine between x's POST and the check below)
start_server "$DATA2" --quota-waiting-builds 1 --waiting-expiry 6
post x && expect "x waits" 202 "$CODE"
uuid_x=$(jq -r .batch_id <<< "$BODY")
post y && expect "y: the one waiting build is x" 429 "$CODE"
wait_metric beatline_batches_waiting 1
expect "nothing expired yet" 0 "$(metric beatline_batches_expired_total)"
# bounded: expiry 6 s, sweeps every second
for _ in $(seq 300); do
  [ "$(metric beatline_batches_expired_total)" == 1 ] && break
  sleep 0.1
done
expect "x's batch expired and is counted" 1 "$(metric beatline_batches_expired_total)"
expect "nothing waits" 0 "$(metric beatline_batches_waiting)"
if ls "$DATA2/batches/pending/" | grep -q "$uuid_x"; then bad "the expired batch is still on disk"; else ok; fi
post y && expect "y once x expired" 202 "$CODE"
stop_server

# --- an upload makes its build ready before its 201 -----------------------------
# The writer is held off the database (a write transaction of another
# process) so it cannot register the build: the upload handler itself must
# tell the quota tracker, or a batch sent right after the 201 gets 429.
DATA4=$WORK/data4
create_app "$DATA4" shop
start_server "$DATA4" --quota-waiting-builds 1
post w1 && expect "w1 waits" 202 "$CODE"
post w2 && expect "w2: the one waiting build is w1" 429 "$CODE"
rm -f locked
printf 'BEGIN IMMEDIATE;\n.shell touch locked\n.shell sleep 4\nCOMMIT;\n' |
  sqlite3 -cmd '.timeout 5000' "$DATA4/beatline.db" > /dev/null &
LOCK_PID=$!
for _ in $(seq 100); do [ -e locked ] && break; sleep 0.05; done
[ -e locked ] && ok || bad "the database write lock was not taken"
put_ids shop w2 mids.txt "w2 method-ids while the writer is held"
post w2 && expect "a batch right after the upload's 201 is never refused" 202 "$CODE"
wait "$LOCK_PID" || true
wait_metric beatline_batches_processed_total 1
stop_server

# an expiry past 100 years is refused at start: 2^64-1 once wrapped to a
# negative age limit and expired every waiting batch
for v in 18446744073709551615 9223372036854775808 3155760001; do
  rc=0
  timeout 10 "$BIN/beatline-server" --data "$DATA2" --listen 127.0.0.1:0 --waiting-expiry "$v" \
    > /dev/null 2> expiry.err || rc=$?
  expect "--waiting-expiry $v refused at start" 1 "$rc"
  expect_grep "--waiting-expiry $v: says the range" "must be 1-3155760000 seconds" "$(cat expiry.err)"
done
rc=0
BEATLINE_WAITING_EXPIRY=18446744073709551615 timeout 10 "$BIN/beatline-server" --data "$DATA2" \
  --listen 127.0.0.1:0 > /dev/null 2> expiry.err || rc=$?
expect "BEATLINE_WAITING_EXPIRY=2^64-1 refused at start" 1 "$rc"

finish
