#!/usr/bin/env bash
# End-to-end test of beatline-server on loopback, with a real ProGuard
# mapping (Debian's proguard obfuscating Debian's commons-lang3) and the
# method-ID file of the obfuscated jar.
#
#   server_test.sh BUILD_DIR WORK_DIR
#
# Checks: app keys and roles; batches posted before the uploads wait and are
# processed after them; exact slow-method and call-tree figures with
# original names; a repeated batch is not counted twice; mapping re-upload
# rules (unchanged / 409 / replace); retrace endpoint; limits and errors
# (400 with offset, 401, 403, 404, 413, 415); kill -9 after a 202 loses
# nothing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

# --- a real obfuscated jar, its mapping and method-ID file ----------------
javac -d tools "$HERE/../realworld/JrtLibraryJar.java"
java -cp tools JrtLibraryJar jdk.jar java.base > /dev/null
cat > pg.pro <<PRO
-injars /usr/share/java/commons-lang3.jar(!META-INF/**)
-outjars obf.jar
-libraryjars jdk.jar
-dontshrink
-dontoptimize
-ignorewarnings
-keepattributes SourceFile,LineNumberTable
-renamesourcefileattribute SourceFile
-printmapping mapping.txt
PRO
java -jar /usr/share/java/proguard.jar @pg.pro > proguard.log 2>&1
bash "$HERE/method_ids_from_jar.sh" obf.jar > method-ids.txt

# methodId of an original method: class obfuscated name + method line
mid_of() { # original class, "ret name(params)", descriptor
  local cls_obf m_obf
  cls_obf=$(awk -v c="$1" '$1 == c && $2 == "->" { sub(/:$/, "", $3); print $3 }' mapping.txt)
  m_obf=$(awk -v c="$1" -v m="$2" '
    /^[^ ]/ { in_c = ($1 == c) ; next }
    in_c { line = $0; sub(/^ +/, "", line); sub(/^[0-9]+:[0-9]+:/, "", line)
           split(line, parts, " -> "); if (parts[1] == m) { print parts[2]; exit } }' mapping.txt)
  awk -F'[, ]' -v c="$cls_obf" -v m="$m_obf" -v d="$3" \
    '$3 == c && $4 == m && $5 == d { print $1; exit }' method-ids.txt
}
ID_BLANK=$(mid_of org.apache.commons.lang3.StringUtils "boolean isBlank(java.lang.CharSequence)" "(Ljava/lang/CharSequence;)Z")
ID_REPEAT=$(mid_of org.apache.commons.lang3.StringUtils "java.lang.String repeat(java.lang.String,int)" "(Ljava/lang/String;I)Ljava/lang/String;")
ID_TOINT=$(mid_of org.apache.commons.lang3.math.NumberUtils "int toInt(java.lang.String,int)" "(Ljava/lang/String;I)I")
if [ -z "$ID_BLANK" ] || [ -z "$ID_REPEAT" ] || [ -z "$ID_TOINT" ]; then
  echo "cannot find the test methods in the mapping / method-ID file" >&2
  exit 1
fi

# --- server ------------------------------------------------------------------
DATA=$WORK/data
SERVER_ARGS=(--max-body 1048576) # on every start

keys=$("$BIN/beatline-server" --data "$DATA" app create shop)
ING=$(jq -r .ingest_key <<< "$keys")
UPL=$(jq -r .upload_key <<< "$keys")
RD=$(jq -r .read_key <<< "$keys")
start_server "$DATA"
# batch JSON -> binary file
batch() { # name uuid records-json [truncated]
  cat > "$1.json" <<JSON
{"batch_id":"$2","app":"shop","build":"7.1","session_id":"s","origin_wall_us":1795960000000000,
 "device":{"model":"Pixel 8","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":${4:-false},"records":$3},
            {"id":7,"name":"worker","main":false,"truncated":false,"records":[[$ID_TOINT,"i",5],[$ID_TOINT,"o",9]]}],
 "events":[]}
JSON
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
}
wait_processed() { # expected processed-batches count
  for _ in $(seq 600); do
    n=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
    [ "$n" == "$1" ] && return 0
    sleep 0.05
  done
  bad "processed batches: expected $1, got $n"
}

# main thread: isBlank [0,100] calls repeat [10,40] and repeat [50,60]
batch a 11111111-1111-4111-8111-111111111111 \
  "[[$ID_BLANK,\"i\",0],[$ID_REPEAT,\"i\",10],[$ID_REPEAT,\"o\",40],[$ID_REPEAT,\"i\",50],[$ID_REPEAT,\"o\",60],[$ID_BLANK,\"o\",100]]"

# --- auth -------------------------------------------------------------------
http POST /v1/apps/shop/batches "" --data-binary @a.bin
expect "no key" 401 "$CODE"
http POST /v1/apps/shop/batches "$RD" --data-binary @a.bin
expect "read key cannot ingest" 403 "$CODE"
http POST /v1/apps/nope/batches "$ING" --data-binary @a.bin
expect "unknown app: same 403 as a wrong key (the key is checked first)" 403 "$CODE"
http GET /v1/apps/shop/slow-methods "$ING"
expect "ingest key cannot read" 403 "$CODE"
if jq -e .error <<< "$BODY" > /dev/null; then ok; else bad "error body is JSON"; fi

# --- a batch before any upload waits -----------------------------------------
http POST /v1/apps/shop/batches "$ING" -H 'Content-Encoding: gzip' --data-binary @<(gzip -c a.bin)
expect "batch accepted" 202 "$CODE"
expect "batch id echoed" 11111111-1111-4111-8111-111111111111 "$(jq -r .batch_id <<< "$BODY")"
for _ in $(seq 300); do # bounded: until the writer has parked it (30 s)
  waiting=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_waiting" { print $2 }')
  [ "$waiting" == 1 ] && break
  sleep 0.1
done
expect "batch waits for uploads" 1 "$waiting"
http PUT /v1/apps/shop/builds/7.1/method-ids "$UPL" --data-binary @method-ids.txt
expect "method-ids created" 201 "$CODE"
expect "names obfuscated" obfuscated "$(jq -r .names <<< "$BODY")"
sleep 0.3
waiting=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_waiting" { print $2 }')
expect "still waits for the mapping" 1 "$waiting"
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" -H 'Content-Encoding: zstd' --data-binary @<(zstd -q -c mapping.txt)
expect "mapping created" 201 "$CODE"
wait_processed 1

# --- exact figures, original names --------------------------------------------
http GET "/v1/apps/shop/slow-methods?build=7.1&thread=main&sort=total" "$RD"
expect "slow-methods" 200 "$CODE"
expect "top method" "org.apache.commons.lang3.StringUtils.isBlank (Ljava/lang/CharSequence;)Z StringUtils.java" \
  "$(jq -r '.methods[0].method | "\(.class).\(.name) \(.descriptor) \(.source_file)"' <<< "$BODY")"
expect "isBlank count/total/self/max" "1 100 60 100" \
  "$(jq -r '.methods[0] | "\(.count) \(.total_us) \(.self_us) \(.max_us)"' <<< "$BODY")"
expect "repeat count/total/self/p50/max" "2 40 40 30" \
  "$(jq -r '.methods[1] | "\(.count) \(.total_us) \(.self_us) \(.max_us)"' <<< "$BODY")"
expect "main only" 2 "$(jq '.methods | length' <<< "$BODY")"
http GET "/v1/apps/shop/slow-methods?thread=all&sort=count" "$RD"
expect "all threads" "org.apache.commons.lang3.StringUtils.repeat 2|org.apache.commons.lang3.StringUtils.isBlank 1|org.apache.commons.lang3.math.NumberUtils.toInt 1" \
  "$(jq -r '[.methods[] | "\(.method.class).\(.method.name) \(.count)"] | join("|")' <<< "$BODY")"
http GET "/v1/apps/shop/call-tree?build=7.1&thread=main" "$RD"
expect "call tree" "isBlank 1 100 60 [repeat 2 40 40 []]" \
  "$(jq -r '.roots[0] | "\(.method.name) \(.count) \(.total_us) \(.self_us) [\(.children[0].method.name) \(.children[0].count) \(.children[0].total_us) \(.children[0].self_us) \(.children[0].children)]"' <<< "$BODY")"
http GET "/v1/apps/shop/call-tree?build=7.1&root=org.apache.commons.lang3.StringUtils.repeat" "$RD"
expect "call tree rooted at repeat" "repeat 2 40" "$(jq -r '.roots[0] | "\(.method.name) \(.count) \(.total_us)"' <<< "$BODY")"

# --- duplicates are not counted twice ---------------------------------------------
http POST /v1/apps/shop/batches "$ING" --data-binary @a.bin
expect "duplicate answered 200" 200 "$CODE"
expect "duplicate flagged" true "$(jq -r .duplicate <<< "$BODY")"
batch b 22222222-2222-4222-8222-222222222222 "[[$ID_REPEAT,\"i\",0],[$ID_REPEAT,\"o\",7]]"
http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
expect "second batch" 202 "$CODE"
wait_processed 2
http POST /v1/apps/shop/batches "$ING" -H 'Content-Encoding: zstd' --data-binary @<(zstd -q -c b.bin)
expect "duplicate in another encoding" 200 "$CODE"
sleep 0.3
http GET "/v1/apps/shop/slow-methods?build=7.1&thread=main&sort=count" "$RD"
expect "repeat counted once per batch" "3 47" "$(jq -r '.methods[0] | "\(.count) \(.total_us)"' <<< "$BODY")"
http GET /v1/apps/shop/builds "$RD"
expect "build record counts" "7.1 2 12" "$(jq -r '.builds[0] | "\(.build) \(.batches) \(.records)"' <<< "$BODY")"

# --- uploads: unchanged, conflict, replace ----------------------------------------
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" --data-binary @mapping.txt
expect "same mapping again" "200 unchanged" "$CODE $(jq -r .status <<< "$BODY")"
sed 's/^org.apache.commons.lang3.StringUtils ->/org.apache.commons.lang3.StringUtilz ->/' mapping.txt > mapping2.txt
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" --data-binary @mapping2.txt
expect "different mapping" 409 "$CODE"
http PUT "/v1/apps/shop/builds/7.1/mapping?replace=true" "$UPL" --data-binary @mapping2.txt
expect "replace" "200 replaced" "$CODE $(jq -r .status <<< "$BODY")"
for _ in $(seq 300); do # bounded: until the writer has re-symbolicated (30 s)
  http GET "/v1/apps/shop/slow-methods?build=7.1&thread=main&sort=total" "$RD"
  [ "$(jq -r '.methods[0].method.class' <<< "$BODY")" == org.apache.commons.lang3.StringUtilz ] && break
  sleep 0.1
done
expect "re-symbolicated with the new mapping" org.apache.commons.lang3.StringUtilz "$(jq -r '.methods[0].method.class' <<< "$BODY")"
http PUT "/v1/apps/shop/builds/7.1/mapping?replace=true" "$UPL" --data-binary @mapping.txt
expect "replace back" 200 "$CODE"
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" --data-binary 'this is not a mapping'
expect "different content without replace" 409 "$CODE"
http PUT /v1/apps/shop/builds/8.0/mapping "$UPL" --data-binary 'this is not a mapping'
expect "not a mapping" 400 "$CODE"
http PUT /v1/apps/shop/builds/8.0/method-ids "$UPL" --data-binary 'nonsense'
expect "not a method-ID file" 400 "$CODE"
for dots in . ..; do # dot segments are not build names
  http PUT "/v1/apps/shop/builds/$dots/mapping" "$UPL" --path-as-is --data-binary @mapping.txt
  expect "build named '$dots'" 400 "$CODE"
  case "$BODY" in *"not '.' or '..'"*) ok ;; *) bad "build '$dots': $BODY" ;; esac
done

# a mapping larger than --max-body streams to disk: allowed as sent
for k in 1 2 3 4; do
  sed "s/^\([^ #].*\) -> \(.*\):\$/\1Copy$k -> x$k.\2:/" mapping.txt
done > mapping-big.txt
http PUT /v1/apps/shop/builds/big/mapping "$UPL" --data-binary @mapping-big.txt
expect "mapping over --max-body, uncompressed" 201 "$CODE"

# --- retrace -------------------------------------------------------------------
obf_cls=$(awk '$1 == "org.apache.commons.lang3.StringUtils" && $2 == "->" { sub(/:$/, "", $3); print $3 }' mapping.txt)
line=$(awk '/^org.apache.commons.lang3.StringUtils ->/ { c = 1; next } /^[^ ]/ { c = 0 }
  c && /boolean isBlank\(java.lang.CharSequence\)/ { split($1, r, ":"); print r[1]; exit }' mapping.txt)
obf_m=$(awk '/^org.apache.commons.lang3.StringUtils ->/ { c = 1; next } /^[^ ]/ { c = 0 }
  c && /boolean isBlank\(java.lang.CharSequence\)/ { print $NF; exit }' mapping.txt)
printf 'java.lang.NullPointerException\n\tat %s.%s(SourceFile:%s)\n' "$obf_cls" "$obf_m" "$line" > trace.txt
http POST /v1/apps/shop/builds/7.1/retrace "$RD" --data-binary @trace.txt
expect "retrace" "200 	at org.apache.commons.lang3.StringUtils.isBlank(StringUtils.java:$line)" "$CODE $(sed -n 2p body.out)"
http POST /v1/apps/shop/builds/9.9/retrace "$RD" --data-binary @trace.txt
expect "retrace without mapping" 404 "$CODE"

# --- malformed input, encodings, limits ------------------------------------------
head -c 40 a.bin > trunc.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @trunc.bin
expect "truncated batch" 400 "$CODE"
if grep -q 'offset' <<< "$BODY"; then ok; else bad "400 names the offset: $BODY"; fi
http POST /v1/apps/shop/batches "$ING" -H 'Content-Encoding: br' --data-binary @a.bin
expect "unsupported encoding" 415 "$CODE"
http POST /v1/apps/shop/batches "$ING" -H 'Content-Encoding: gzip' --data-binary @a.bin
expect "corrupt gzip" 400 "$CODE"
head -c 2000000 /dev/zero > big.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @big.bin
expect "body over --max-body" 413 "$CODE"
head -c 300000000 /dev/zero | zstd -q -c > bomb.zst
http POST /v1/apps/shop/batches "$ING" -H 'Content-Encoding: zstd' --data-binary @bomb.zst
expect "decompression bomb" 413 "$CODE"
sed 's/"shop"/"other"/' a.json | "$BIN/beatline-batch" encode > other.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @other.bin
expect "batch for another app" 400 "$CODE"
http GET "/v1/apps/shop/slow-methods?sort=bogus" "$RD"
expect "bad sort" 400 "$CODE"
http GET "/v1/apps/shop/nothing" "$RD"
expect "unknown endpoint" 404 "$CODE"
http GET /healthz ""
expect "healthz" 200 "$CODE"

# --- a truncated segment (the app's ring wrapped) is counted in /metrics ------------
batch t 44444444-4444-4444-8444-444444444444 "[[$ID_REPEAT,\"o\",10]]" true
http POST /v1/apps/shop/batches "$ING" --data-binary @t.bin
expect "truncated batch accepted" 202 "$CODE"
wait_processed 3
expect "truncated segments counted" 1 \
  "$(curl -s "$URL/metrics" | awk '$1 == "beatline_segments_truncated_total" { print $2 }')"

# --- a call that spans batches (segments) is counted once ---------------------------
# build 7.2 (same files): isBlank [0,500] calls repeat [10,40] (cut at 25) and
# repeat [300,320]; the runtime cut the main thread into three segments
http PUT /v1/apps/shop/builds/7.2/method-ids "$UPL" --data-binary @method-ids.txt
expect "method-ids 7.2" 201 "$CODE"
http PUT /v1/apps/shop/builds/7.2/mapping "$UPL" --data-binary @mapping.txt
expect "mapping 7.2" 201 "$CODE"
seg() { # name uuid thread-extra records
  cat > "$1.json" <<JSON
{"batch_id":"$2","app":"shop","build":"7.2","session_id":"s2","origin_wall_us":1795960000000000,
 "threads":[{"id":1,"name":"main","main":true$3,"records":$4}],"events":[]}
JSON
  "$BIN/beatline-batch" encode < "$1.json" > "$1.bin"
  http POST /v1/apps/shop/batches "$ING" --data-binary @"$1.bin"
  expect "segment $1" 202 "$CODE"
}
seg s3 55555555-5555-4555-8555-555555555553 ',"carried":1,"since_us":70' \
  "[[$ID_BLANK,\"i\",0],[$ID_REPEAT,\"i\",300],[$ID_REPEAT,\"o\",320],[$ID_BLANK,\"o\",500]]"
seg s1 55555555-5555-4555-8555-555555555551 ',"continues":true' \
  "[[$ID_BLANK,\"i\",0],[$ID_REPEAT,\"i\",10]]"
seg s2 55555555-5555-4555-8555-555555555552 ',"continues":true,"carried":2,"since_us":10' \
  "[[$ID_BLANK,\"i\",0],[$ID_REPEAT,\"i\",10],[$ID_REPEAT,\"o\",40],[$ID_TOINT,\"i\",60],[$ID_TOINT,\"o\",70]]"
wait_processed 6
http GET "/v1/apps/shop/slow-methods?build=7.2&thread=main&sort=total" "$RD"
expect "segments: count/total/self/max per method" "isBlank 1 500 440 500|repeat 2 50 50 30|toInt 1 10 10 10" \
  "$(jq -r '[.methods[] | "\(.method.name) \(.count) \(.total_us) \(.self_us) \(.max_us)"] | join("|")' <<< "$BODY")"
http GET "/v1/apps/shop/call-tree?build=7.2&thread=main" "$RD"
expect "segments: one root" "1 isBlank 1 500 440" \
  "$(jq -r '"\(.roots | length) \(.roots[0].method.name) \(.roots[0].count) \(.roots[0].total_us) \(.roots[0].self_us)"' <<< "$BODY")"

# --- scripts/upload-build, the CI step ---------------------------------------------
UB="$HERE/../../scripts/upload-build"
ub() { rc=0; "$UB" "$@" > ub.out 2>&1 || rc=$?; }   # sets rc; output in ub.out
ub --server "$URL" --app shop --build "7.3 rc+1" --key "$UPL" --mapping mapping.txt \
  --method-ids method-ids.txt
expect "upload-build: both files" "0 2" "$rc $(grep -c ': 201 ' ub.out)"
ub --server "$URL" --app shop --build "7.3 rc+1" --key "$UPL" --mapping mapping.txt
expect "upload-build: again is unchanged" "0 1" "$rc $(grep -c '"unchanged"' ub.out)"
ub --server "$URL" --app shop --build "7.3 rc+1" --key "$UPL" --mapping method-ids.txt
expect "upload-build: conflict fails with the server's error" "1 1" "$rc $(grep -c 'HTTP 409' ub.out)"
ub --server "$URL" --app shop --build "7.3 rc+1" --key "$RD" --method-ids method-ids.txt
expect "upload-build: a read key is refused" "1 1" "$rc $(grep -c 'HTTP 403' ub.out)"
ub --server "$URL" --app shop --build x --key "$UPL" --mapping nope.txt
expect "upload-build: missing file is a usage error" 2 "$rc"
ub --server "http://127.0.0.1:1" --app shop --build x --key "$UPL" --mapping mapping.txt
expect "upload-build: server down" "1 1" "$rc $(grep -c 'could not reach' ub.out)"
# the writer symbolicates the build after the uploads' answers: wait for it (bounded)
for _ in $(seq 600); do
  http GET /v1/apps/shop/builds "$RD"
  [ "$(jq -r '[.builds[] | select(.build == "7.3 rc+1") | .symbolicated] | .[0]' <<< "$BODY")" == true ] && break
  sleep 0.05
done
expect "upload-build: the build as named" "true" \
  "$(jq -r '[.builds[] | select(.build == "7.3 rc+1") | .symbolicated] | .[0]' <<< "$BODY")"

# --- kill -9 after a 202 loses nothing ---------------------------------------------
batch c 33333333-3333-4333-8333-333333333333 "[[$ID_BLANK,\"i\",0],[$ID_BLANK,\"o\",1000]]"
http POST /v1/apps/shop/batches "$ING" --data-binary @c.bin
expect "batch before the kill" 202 "$CODE"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2> /dev/null || true
start_server "$DATA"
for _ in $(seq 600); do
  http GET "/v1/apps/shop/slow-methods?build=7.1&thread=main&sort=max" "$RD"
  [ "$(jq -r '.methods[0].max_us' <<< "$BODY")" == 1000 ] && break
  sleep 0.05
done
expect "batch processed after restart" "org.apache.commons.lang3.StringUtils.isBlank 2 1100" \
  "$(jq -r '.methods[0] | "\(.method.class).\(.method.name) \(.count) \(.total_us)"' <<< "$BODY")"
http GET /v1/apps/shop/builds "$RD"
expect "counted once after restart" "4 19" "$(jq -r '.builds[] | select(.build == "7.1") | "\(.batches) \(.records)"' <<< "$BODY")"
http GET /metrics ""
if grep -q '^beatline_http_requests_total{code="200"}' <<< "$BODY"; then ok; else bad "metrics by status"; fi

finish
