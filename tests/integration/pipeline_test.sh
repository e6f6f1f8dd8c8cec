#!/usr/bin/env bash
# Data directory, writer pipeline and symbolication (issue 11), end to end on
# loopback with small hand-made files (no Java needed).
#
#   pipeline_test.sh BUILD_DIR WORK_DIR
#
# Checks: 128-byte build names (ASCII and multibyte UTF-8) are uploaded and
# processed; a data directory in the old layout (hex-named build folders,
# also one whose migration was cut short) is migrated and still served;
# what the writer would refuse is refused at POST (nesting limit); a batch
# put back into batches/pending is counted as a duplicate; a damaged
# mapping index is rebuilt; unknown methodIds are counted apart and shown;
# NUL bytes in mappings and app names.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
serve() { # start_server on DATA; /metrics counts from the start of the process
  start_server "$DATA"
  processed=0
}

create_app "$DATA" shop
APP_ID=$(store_sql "$DATA" "SELECT id FROM apps WHERE name = 'shop'")
serve

wait_metric() { # name value
  local n
  for _ in $(seq 600); do
    n=$(metric "$1")
    [ "$n" == "$2" ] && return 0
    sleep 0.05
  done
  bad "$1: expected $2, got $n"
}
uri() { jq -rn --arg s "$1" '$s | @uri'; }
# batch NAME UUID BUILD THREADS-JSON -> NAME.bin
batch() {
  printf '{"batch_id":"%s","app":"shop","build":%s,"session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":%s,"events":[]}' \
    "$2" "$(jq -n --arg b "$3" '$b')" "$4" > "$1.json"
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}
post() { http POST /v1/apps/shop/batches "$ING" --data-binary @"$1.bin"; }
expect_processed() { processed=$((processed + $1)); wait_metric beatline_batches_processed_total $processed; }

cat > ids.txt << 'EOF'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
2,1,com.example.Main step (I)V
3,1,com.example.Work deep ()V
EOF
cat > mapping.txt << 'EOF'
com.example.Main -> a.a:
    1:5:void run() -> a
    6:9:void step(int) -> b
EOF
upload() { # build file-kind file -> CODE
  http PUT "/v1/apps/shop/builds/$(uri "$1")/$2" "$UPL" --data-binary @"$3"
}
T1='[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[2,"i",10],[2,"o",30],[1,"o",100]]}]'

# --- defect 1: 128-byte build names --------------------------------------------
B_ASCII=$(printf 'v%.0s' $(seq 128))
B_UTF8=$(printf 'é%.0s' $(seq 64)) # 64 x 2 bytes
expect "utf-8 name is 128 bytes" 128 "$(printf %s "$B_UTF8" | wc -c)"
n=0
for b in "$B_ASCII" "$B_UTF8"; do
  n=$((n + 1))
  upload "$b" method-ids ids.txt
  expect "method-ids for a 128-byte name ($n)" 201 "$CODE"
  upload "$b" mapping mapping.txt
  expect "mapping for a 128-byte name ($n)" 201 "$CODE"
  upload "$b" method-ids ids.txt
  expect "same method-ids again ($n)" "200 unchanged" "$CODE $(jq -r .status <<< "$BODY")"
  batch "long$n" "1000000$n-0000-4000-8000-000000000000" "$b" "$T1"
  post "long$n"
  expect "batch of a 128-byte build ($n)" 202 "$CODE"
  expect_processed 1
  http GET "/v1/apps/shop/slow-methods?build=$(uri "$b")&sort=total" "$RD"
  expect "slow-methods of a 128-byte build ($n)" "com.example.Main.run 1 100" \
    "$(jq -r '.methods[0] | "\(.method.class).\(.method.name) \(.count) \(.total_us)"' <<< "$BODY")"
done
hexname() { printf %s "$1" | od -An -tx1 -v | tr -d ' \n'; }
sha() { printf %s "$1" | sha256sum | cut -c1-64; }
[ -f "$DATA/builds/$APP_ID/$(sha "$B_UTF8")/build-name" ] && ok || bad "hash-named folder with build-name"
expect "build-name holds the name" "$B_UTF8" "$(cat "$DATA/builds/$APP_ID/$(sha "$B_UTF8")/build-name")"
expect "nothing waits" 0 "$(metric beatline_batches_waiting)"

# --- defect 1: a data directory in the old layout is migrated ------------------
# builds "legacy" and "cut" are made by the server, then turned by hand into
# what the old code wrote: folders named by the name in hex, no build-name;
# "cut" keeps build-name, as a migration killed between its two steps leaves it
for b in legacy cut; do
  upload "$b" method-ids ids.txt
  expect "method-ids $b" 201 "$CODE"
  upload "$b" mapping mapping.txt
  expect "mapping $b" 201 "$CODE"
done
stop_server
mv "$DATA/builds/$APP_ID/$(sha legacy)" "$DATA/builds/$APP_ID/$(hexname legacy)"
rm "$DATA/builds/$APP_ID/$(hexname legacy)/build-name"
mv "$DATA/builds/$APP_ID/$(sha cut)" "$DATA/builds/$APP_ID/$(hexname cut)"
serve
for b in legacy cut; do
  [ -d "$DATA/builds/$APP_ID/$(sha "$b")" ] && ok || bad "$b: migrated to its hash name"
  [ ! -e "$DATA/builds/$APP_ID/$(hexname "$b")" ] && ok || bad "$b: old folder gone"
  upload "$b" method-ids ids.txt
  expect "$b: method-ids found after migration" "200 unchanged" "$CODE $(jq -r .status <<< "$BODY")"
  http POST "/v1/apps/shop/builds/$b/retrace" "$RD" --data-binary $'x\n\tat a.a.b(SourceFile:7)\n'
  expect "$b: retrace after migration" "200 at com.example.Main.step(Main.java:7)" \
    "$CODE $(sed -n 2p body.out | tr -d '\t')"
done
contains "migration logged" "renamed 2 build folder(s)" "$(cat server.log)"
batch leg 20000000-0000-4000-8000-000000000001 legacy "$T1"
post leg
expect "batch for a migrated build" 202 "$CODE"
expect_processed 1

# --- defect 2: what the writer refuses is refused at POST ---------------------
nested() { # depth -> threads JSON with one thread nesting depth calls
  python3 -c '
import json, sys
d = int(sys.argv[1])
recs = [[3, "i", i] for i in range(d)] + [[3, "o", d + i] for i in range(d)]
print(json.dumps([{"id": 1, "name": "main", "main": True, "truncated": False, "records": recs}]))' "$1"
}
batch deep1 30000000-0000-4000-8000-000000000001 legacy "$(nested 65536)"
post deep1
expect "65,536 nested calls refused at POST" 413 "$CODE"
contains "the error names the limit" "65535 nested calls per thread" "$(jq -r .error <<< "$BODY")"
batch deep0 30000000-0000-4000-8000-000000000000 legacy "$(nested 65535)"
post deep0
expect "65,535 nested calls accepted" 202 "$CODE"
expect_processed 1
expect "nothing failed" 0 "$(metric beatline_batches_failed_total)"
http GET "/v1/apps/shop/slow-methods?build=legacy&sort=count" "$RD"
expect "the deep batch is counted" "deep 65535" "$(jq -r '.methods[0] | "\(.method.name) \(.count)"' <<< "$BODY")"
# lost enters nest too: 65,536 exits whose enters were lost in a wrapped ring
lost=$(python3 -c '
import json
print(json.dumps([{"id": 1, "name": "main", "main": True, "truncated": True,
                   "records": [[3, "o", i] for i in range(65536)]}]))')
batch lost1 30000000-0000-4000-8000-000000000002 legacy "$lost"
post lost1
expect "65,536 lost enters refused at POST" 413 "$CODE"

# --- section 3: a recorded batch found again in batches/pending ---------------
# On PostgreSQL there are no raw files: a processed batch's raw_batches row
# is deleted in the commit that counts it, so the same batch can only come
# again by POST (answered 200 duplicate, nothing stored)
stop_server
PG=0
[ "${BEATLINE_TEST_STORE:-sqlite}" = pg ] && PG=1
if [ "$PG" = 1 ]; then
  expect "no raw batch left" 0 "$(store_sql "$DATA" "SELECT count(*) FROM raw_batches")"
  serve
  post leg
  expect "the batch again: a duplicate" "200 true" "$CODE $(jq -r .duplicate <<< "$BODY")"
else
  cp "$DATA/batches/done/20000000-0000-4000-8000-000000000001.bin" "$DATA/batches/pending/"
  serve
fi
wait_metric beatline_batches_duplicate_total 1
expect "not processed again" "$processed" "$(metric beatline_batches_processed_total)"
expect "not failed" 0 "$(metric beatline_batches_failed_total)"
if [ "$PG" = 1 ]; then
  expect "nothing stored, nothing failed" 0 "$(store_sql "$DATA" "SELECT count(*) FROM raw_batches")"
else
  for _ in $(seq 600); do [ -z "$(ls "$DATA/batches/pending")" ] && break; sleep 0.05; done
  expect "pending emptied" "" "$(ls "$DATA/batches/pending")"
  expect "nothing in batches/failed" "" "$(ls "$DATA/batches/failed" 2> /dev/null || true)"
fi
http GET /v1/apps/shop/builds "$RD"
expect "legacy counted once" "2" "$(jq -r '.builds[] | select(.build == "legacy") | .batches' <<< "$BODY")"

# --- defect 12: a damaged mapping index is rebuilt from the stored mapping ----
IDX=$DATA/builds/$APP_ID/$(sha legacy)/mapping.idx
idx_size=$(stat -c %s "$IDX")
flip() { # file offset: inverts one byte
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((b ^ 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
retrace_ok() { # label
  http POST "/v1/apps/shop/builds/legacy/retrace" "$RD" --data-binary $'x\n\tat a.a.b(SourceFile:7)\n\tat a.a.a(SourceFile:3)\n'
  expect "$1" "200 at com.example.Main.step(Main.java:7)|at com.example.Main.run(Main.java:3)" \
    "$CODE $(sed -n 2,3p body.out | tr -d '\t' | paste -sd'|')"
}
retrace_ok "retrace before damage"
rebuilt=0
for off in 20 100 200 $((idx_size / 2)) $((idx_size - 1)); do
  flip "$IDX" "$off"
  retrace_ok "retrace after flipping byte $off of $idx_size"
  rebuilt=$((rebuilt + 1))
  expect "rebuild counted (byte $off)" $rebuilt "$(metric beatline_mapping_index_rebuilt_total)"
done
# an index of the format before the checksum (format 1) is rebuilt too
printf '\001' | dd of="$IDX" bs=1 seek=8 conv=notrunc status=none
retrace_ok "retrace with a format-1 index"
expect "format-1 index rebuilt" $((rebuilt + 1)) "$(metric beatline_mapping_index_rebuilt_total)"
cmp -s "$IDX" "$DATA/builds/$APP_ID/$(sha cut)/mapping.idx" && ok || bad "rebuilt index equals a fresh one"
contains "rebuild logged" "mapping index damaged (checksum or structure); rebuilt" "$(cat server.log)"
# damaged while the server is down, then read by the writer: an obfuscated
# build re-symbolicated after a new method-ID file
printf '# beatline method-ids v1 names=obfuscated\n1,1,a.a a ()V\n' > obf-ids.txt
printf '# beatline method-ids v1 names=obfuscated\n1,1,a.a a ()V\n2,1,a.a b (I)V\n' > obf-ids2.txt
upload obf mapping mapping.txt
expect "obf mapping" 201 "$CODE"
upload obf method-ids obf-ids.txt
expect "obf method-ids" 201 "$CODE"
batch obf1 40000000-0000-4000-8000-000000000001 obf "$T1"
post obf1
expect "obf batch" 202 "$CODE"
expect_processed 1
stop_server
flip "$DATA/builds/$APP_ID/$(sha obf)/mapping.idx" 300
serve
http PUT "/v1/apps/shop/builds/obf/method-ids?replace=true" "$UPL" --data-binary @obf-ids2.txt
expect "obf method-ids replaced" 200 "$CODE"
wait_metric beatline_mapping_index_rebuilt_total 1
# both methods, and both named (the writer re-symbolicates after the 200)
for _ in $(seq 600); do
  http GET "/v1/apps/shop/slow-methods?build=obf&sort=total" "$RD"
  [ "$(jq -r '[.methods[] | "\(.method.class).\(.method.name)"] | join("|")' <<< "$BODY")" == \
    "com.example.Main.run|com.example.Main.step" ] && break
  sleep 0.05
done
expect "symbolicated through the rebuilt index" "com.example.Main.run|com.example.Main.step" \
  "$(jq -r '[.methods[] | "\(.method.class).\(.method.name)"] | join("|")' <<< "$BODY")"
# the command-line retracer refuses a damaged index file with a clear error
"$BIN/beatline-retrace" --build-index cli.idx mapping.txt 2> /dev/null
printf 'x\n\tat a.a.b(SourceFile:7)\n' > trace.txt
expect "CLI: index file works" "	at com.example.Main.step(Main.java:7)" \
  "$("$BIN/beatline-retrace" cli.idx trace.txt | sed -n 2p)"
flip cli.idx $(($(stat -c %s cli.idx) / 2))
set +e
"$BIN/beatline-retrace" cli.idx trace.txt > cli.out 2> cli.err
rc=$?
set -e
expect "CLI: damaged index exit status" 1 "$rc"
contains "CLI: damaged index error" "bad index: checksum mismatch" "$(cat cli.err)"
expect "CLI: nothing printed" "" "$(cat cli.out)"

# --- defect 11: calls of methodIds not in the method-ID file -----------------
# balanced, so nothing is malformed: method 1 calls 500 (inside the file's
# range + slack) twice, and 5,000,000 (far past it) once
malformed0=$(metric beatline_records_malformed_total)
unknown0=$(metric beatline_records_unknown_method_total)
TU='[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[500,"i",10],[500,"o",20],[500,"i",30],[500,"o",35],[5000000,"i",40],[5000000,"o",70],[1,"o",100]]}]'
batch unk 50000000-0000-4000-8000-000000000001 legacy "$TU"
post unk
expect "batch with unknown methodIds" 202 "$CODE"
expect_processed 1
expect "unknown methods are not malformed" "$malformed0" "$(metric beatline_records_malformed_total)"
expect "unknown-method records counted" $((unknown0 + 6)) "$(metric beatline_records_unknown_method_total)"
http GET "/v1/apps/shop/slow-methods?build=legacy&sort=count" "$RD"
expect "unknown methods listed by id" "?|unknown method 500|2|15 ?|unknown method 5000000|1|30" \
  "$(jq -r '[.methods[] | select(.method.class == "?") | "\(.method.class)|\(.method.name)|\(.count)|\(.total_us)"] | join(" ")' <<< "$BODY")"
http GET "/v1/apps/shop/call-tree?build=legacy&root=com.example.Main.run" "$RD"
expect "unknown methods in the call tree" "unknown method 5000000 30|unknown method 500 15" \
  "$(jq -r '[.roots[0].children[] | select(.method.class == "?") | "\(.method.name) \(.total_us)"] | join("|")' <<< "$BODY")"
# after a restart (rows loaded from the database) they are still unknown
stop_server
serve
batch unk2 50000000-0000-4000-8000-000000000002 legacy "$TU"
post unk2
expect_processed 1
expect "unknown counted after a restart" 6 "$(metric beatline_records_unknown_method_total)"
expect "nothing malformed after a restart" 0 "$(metric beatline_records_malformed_total)"
http GET "/v1/apps/shop/slow-methods?build=legacy&sort=count" "$RD"
expect "same rows after a restart" "unknown method 500|4 unknown method 5000000|2" \
  "$(jq -r '[.methods[] | select(.method.class == "?") | "\(.method.name)|\(.count)"] | join(" ")' <<< "$BODY")"

# --- 13: a NUL in an app name shows in the error -------------------------------
batch nul 60000000-0000-4000-8000-000000000001 legacy "$T1"
sed 's/"app":"shop"/"app":"shopXY"/' nul.json | "$BIN/beatline-batch" encode > nul1.bin
python3 -c '
import sys
d = open("nul1.bin", "rb").read()
sys.stdout.buffer.write(d.replace(b"shopXY", b"shop\x00x", 1))' > nul2.bin
"$BIN/beatline-batch" decode nul2.bin > /dev/null 2>&1 && ok || bad "hand-made batch decodes"
http POST /v1/apps/shop/batches "$ING" --data-binary @nul2.bin
expect "app with a NUL refused" 400 "$CODE"
expect "the NUL is shown" "batch is for app 'shop\\x00x', not 'shop'" "$(jq -r .error <<< "$BODY")"
# a NUL in a mapping line: refused with its line number, the rest indexed
printf 'com.example.Main -> a.a:\n    1:5:void ru\0n() -> a\n    6:9:void step(int) -> b\n' > nul-map.txt
upload nulmap mapping nul-map.txt
expect "mapping with a NUL line" "201 1" "$CODE $(jq -r .malformed_lines <<< "$BODY")"
http POST "/v1/apps/shop/builds/nulmap/retrace" "$RD" --data-binary $'x\n\tat a.a.a(SourceFile:3)\n'
expect "the NUL line is not indexed cut" "at com.example.Main.a(Main.java:3)" "$(sed -n 2p body.out | tr -d '\t')"
printf 'x\n\tat a.a.a(SourceFile:3)\n' > trace-a.txt
set +e
"$BIN/beatline-retrace" nul-map.txt trace-a.txt > /dev/null 2> nul.err
set -e
contains "CLI names the line" "nul-map.txt:2: NUL byte in the line" "$(cat nul.err)"

finish
