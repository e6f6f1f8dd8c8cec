#!/usr/bin/env bash
# Memory caps of beatline-server, measured (issue 11, defect 4), and the
# query-parameter ranges (defect 13):
#
#   memory_test.sh BUILD_DIR WORK_DIR
#
# Peak memory is the growth of the server's VmHWM (/proc/PID/status) over
# its VmRSS just before the step (the peak is reset first through
# /proc/PID/clear_refs), so the figures hold for an ASan build too (ASan's
# quarantine, which keeps freed memory, is turned off for the server).
#   1. slow-methods?limit=10 on a build of 300,000 methods: the rows are
#      sorted and cut in SQL (the old code built every row: ~590 MB);
#   2. call-tree?limit=10 on the same build (300,000 roots) stays bounded;
#   3. a 10 KB zstd bomb with a 128 MiB window is refused at its header
#      (the old code allocated the window and 256 MiB of body: ~400 MB);
#   4. nine parallel 15 MiB batches against --max-inflight 112 MiB (the
#      floor: --max-decompressed + --max-body + 80 MiB): the raw bodies
#      count too, so the peak stays near 112 MiB;
#   5. six parallel gzip bombs (60 MiB each) against the same cap;
#   6. limit/max_depth/since must be plain decimal numbers in range.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"

DATA=$WORK/data

# --- a build of 300,000 methods, each called once on the main thread -------
N=300000
awk -v n="$N" 'BEGIN { print "# beatline method-ids v1 names=original"
  for (i = 1; i <= n; i++) printf "%d,1,com.example.big.C%d m%d ()V\n", i, i % 997, i }' > mids.txt
awk -v n="$N" 'BEGIN {
  printf "{\"batch_id\":\"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa\",\"app\":\"big\",\"build\":\"1.0\",";
  printf "\"session_id\":\"s\",\"origin_wall_us\":1795960000000000,\"threads\":[{\"id\":1,";
  printf "\"name\":\"main\",\"main\":true,\"truncated\":false,\"records\":[";
  t = 0
  for (i = 1; i <= n; i++) { d = 1 + (i * 7919) % 100000
    printf "%s[%d,\"i\",%.0f],[%d,\"o\",%.0f]", (i > 1 ? "," : ""), i, t, i, t + d; t += d + 1 }
  printf "]}],\"events\":[]}\n" }' > big.json
"$BIN/beatline-batch" encode < big.json > big.bin

create_app "$DATA" big
start_server "$DATA"
if ! echo 5 > "/proc/$SERVER_PID/clear_refs" 2> /dev/null; then
  echo "cannot reset the peak RSS through /proc/PID/clear_refs" >&2
  exit 1
fi
http PUT /v1/apps/big/builds/1.0/method-ids "$UPL" --data-binary @mids.txt
expect "method-ids of $N methods" "201 $N" "$CODE $(jq -r .methods <<< "$BODY")"
http POST /v1/apps/big/batches "$ING" --data-binary @big.bin
expect "batch of $((2 * N)) records" 202 "$CODE"
n=0
for _ in $(seq 3000); do # bounded: 300 s (ASan on a loaded machine)
  n=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "$n" == 1 ] && break
  sleep 0.1
done
expect "big batch processed" 1 "$n"

# --- 1. slow-methods: memory does not grow with the number of methods -------
settle
# the expected top 10 by total: d = 1 + (i * 7919) % 100000, largest first
top=$(awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) print 1 + (i * 7919) % 100000, i }' |
  sort -k1,1nr -k2,2 | awk 'NR <= 10 { printf "%s%s", (NR > 1 ? " " : ""), $1 }')
for sort in total p99; do
  mem_mark
  http GET "/v1/apps/big/slow-methods?build=1.0&limit=10&sort=$sort" "$RD"
  grow=$(peak_mb)
  expect "slow-methods sort=$sort" 200 "$CODE"
  expect "slow-methods sort=$sort: the 10 largest" "$top" \
    "$(jq -r '[.methods[].total_us] | map(tostring) | join(" ")' <<< "$BODY")"
  echo "slow-methods?limit=10&sort=$sort over $N methods: peak +$grow MB"
  below "slow-methods sort=$sort: peak growth (MB)" 64 "$grow"
done
after=$(( ($(kb VmRSS) - BASE) / 1024 ))
below "resident memory kept after the queries (MB)" 64 "$after"

# --- 2. call-tree of 300,000 roots, limit=10 --------------------------------
mem_mark
http GET "/v1/apps/big/call-tree?build=1.0&limit=10" "$RD"
grow=$(peak_mb)
expect "call-tree limit=10" "200 10 true" \
  "$CODE $(jq -r '"\(.roots | length) \(.truncated)"' <<< "$BODY")"
echo "call-tree?limit=10 over $N roots: peak +$grow MB"
below "call-tree peak growth (MB)" 128 "$grow"

# --- 3. a zstd bomb that asks for a 128 MiB window -------------------------
head -c 300000000 /dev/zero | zstd -q --long=27 -c > bomb27.zst
mem_mark
http POST /v1/apps/big/batches "$ING" -H 'Content-Encoding: zstd' --data-binary @bomb27.zst
grow=$(peak_mb)
expect "zstd frame with a 128 MiB window" 400 "$CODE"
case "$BODY" in *"8 MiB"*) ok ;; *) bad "the 400 names the window limit: $BODY" ;; esac
echo "zstd bomb ($(wc -c < bomb27.zst) bytes, 128 MiB window): peak +$grow MB"
below "zstd bomb peak growth (MB)" 32 "$grow"
# an ordinary zstd bomb is cut at --max-decompressed (and, decompressing,
# never holds more than that plus an eighth)
head -c 300000000 /dev/zero | zstd -q -c > bomb.zst
mem_mark
http POST /v1/apps/big/batches "$ING" -H 'Content-Encoding: zstd' --data-binary @bomb.zst
grow=$(peak_mb)
expect "zstd bomb over --max-decompressed" 413 "$CODE"
echo "zstd bomb ($(wc -c < bomb.zst) bytes, 8 MiB window): peak +$grow MB"
below "zstd bomb peak growth (MB)" 320 "$grow"

# --- 4, 5. parallel large bodies against --max-inflight 112 MiB ------------
stop_server
start_server "$DATA" --max-body 16777216 --max-decompressed 16777216 --max-inflight 117440512
settle
head -c 15728640 /dev/zero > body15.bin
mem_mark
pids=()
for k in 1 2 3 4 5 6 7 8 9; do # slowed down so that all nine are in flight together
  curl -s -o "par$k.out" -w '%{http_code}\n' --limit-rate 15M -X POST \
    -H "Authorization: Bearer $ING" --data-binary @body15.bin "$URL/v1/apps/big/batches" \
    > "par$k.code" &
  pids+=($!)
done
wait "${pids[@]}"
grow=$(peak_mb)
codes=$(cat par?.code | sort | uniq -c | awk '{ printf "%s%s×%s", (NR > 1 ? " " : ""), $2, $1 }')
echo "nine parallel 15 MiB batches, --max-inflight 112 MiB: peak +$grow MB ($codes)"
below "parallel bodies peak growth (MB)" 132 "$grow"
expect "every parallel body answered 400 (not a batch) or 503 (busy)" "" \
  "$(grep -v -x -e 400 -e 503 par?.code || true)"
if grep -q -x 503 par?.code; then ok; else bad "some parallel bodies are turned away (503)"; fi
grep -l -x 503 par?.code | head -1 | sed 's/code$/out/' | xargs cat > busy.json
if jq -e .error busy.json > /dev/null; then ok; else bad "503 answer is a JSON error"; fi

head -c 62914560 /dev/zero | gzip -c > gz60.gz
mem_mark
pids=()
for k in 1 2 3 4 5 6; do
  curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $ING" \
    -H 'Content-Encoding: gzip' --data-binary @gz60.gz "$URL/v1/apps/big/batches" > "gz$k.code" &
  pids+=($!)
done
wait "${pids[@]}"
grow=$(peak_mb)
codes=$(cat gz?.code | sort | uniq -c | awk '{ printf "%s%s×%s", (NR > 1 ? " " : ""), $2, $1 }')
echo "six parallel gzip bombs (60 MiB each), --max-inflight 112 MiB: peak +$grow MB ($codes)"
below "parallel gzip bombs peak growth (MB)" 132 "$grow"
expect "gzip bombs answered 413 or 503" "" "$(grep -v -x -e 413 -e 503 gz?.code || true)"
after=$(( ($(kb VmRSS) - BASE) / 1024 ))
below "resident memory kept after the bodies (MB)" 32 "$after"
# nothing stays charged: the whole budget is free again
sed -e 's/aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa/bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb/' \
  -e 's/"records":\[.*\]}\],/"records":[[1,"i",0],[1,"o",5]]}],/' big.json |
  "$BIN/beatline-batch" encode > small.bin
head -c 15000000 /dev/zero | gzip -c > gz15.gz
pids=()
for k in 1 2 3 4 5 6 7; do # seven 15 MB bodies (105 MB) fit the 112 MiB cap together only if nothing leaked
  curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $ING" \
    -H 'Content-Encoding: gzip' --data-binary @gz15.gz "$URL/v1/apps/big/batches" > "ok$k.code" &
  pids+=($!)
done
wait "${pids[@]}"
expect "the budget is whole again: 15 MB bodies decompress (400: not a batch)" \
  "400 400 400 400 400 400 400" "$(cat ok?.code | tr '\n' ' ' | sed 's/ $//')"
http POST /v1/apps/big/batches "$ING" --data-binary @small.bin
expect "a batch after the storm" 202 "$CODE"

# --- retrace: an answer many times the trace (ambiguous names) ---------------
# the answer buffer is sized from the trace and charged; when short, the
# trace is retraced again into a bigger one
{ echo "com.example.VeryLongOriginalClassNameForTheRetraceTest -> a:"
  for m in One Two Three Four; do
    echo "    void aMethodWithAVeryLongOriginalNameNumber$m() -> a"
  done; } > amb-mapping.txt
http PUT /v1/apps/big/builds/rt/mapping "$UPL" --data-binary @amb-mapping.txt
expect "ambiguous mapping" 201 "$CODE"
{ echo "java.lang.IllegalStateException: boom"
  for _ in $(seq 3000); do printf '\tat a.a(SourceFile)\n'; done; } > amb-trace.txt
http POST /v1/apps/big/builds/rt/retrace "$RD" --data-binary @amb-trace.txt
expect "retrace answer of $((3000 * 4)) frames for 3000" "200 12000" \
  "$CODE $(grep -c 'aMethodWithAVeryLongOriginalNameNumber' body.out)"
echo "retrace: $(wc -c < amb-trace.txt) bytes in, $(wc -c < body.out) bytes out"

# --- 6. query parameters: decimal digits in range, errors say the range -----
for q in "slow-methods?limit=%2B5" "slow-methods?limit=%205" "slow-methods?limit=5%20" \
  "slow-methods?limit=-1" "slow-methods?limit=10001" "slow-methods?limit=0x10" \
  "slow-methods?limit=99999999999999999999999" "slow-methods?since=%2B1" \
  "call-tree?limit=%2B5" "call-tree?max_depth=0" "call-tree?max_depth=4097"; do
  http GET "/v1/apps/big/$q" "$RD"
  expect "$q refused" 400 "$CODE"
done
http GET "/v1/apps/big/slow-methods?limit=%2B5" "$RD"
expect "limit error names the range" "'limit' must be an integer from 0 to 10000 (decimal digits only)" \
  "$(jq -r .error <<< "$BODY")"
http GET "/v1/apps/big/call-tree?max_depth=5000" "$RD"
expect "max_depth error names the real range" "'max_depth' must be an integer from 1 to 4096 (decimal digits only)" \
  "$(jq -r .error <<< "$BODY")"
http GET "/v1/apps/big/slow-methods?limit=007" "$RD"
expect "leading zeros are decimal" "200 7" "$CODE $(jq '.methods | length' <<< "$BODY")"
http GET "/v1/apps/big/call-tree?max_depth=1&limit=3" "$RD"
expect "max_depth=1" "200 3 0" "$CODE $(jq '"\(.roots | length) \(.roots[0].children | length)"' -r <<< "$BODY")"

finish
