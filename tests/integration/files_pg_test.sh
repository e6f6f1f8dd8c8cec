#!/usr/bin/env bash
# Uploaded files in a PostgreSQL store (issue 19, store/files.h and
# pipeline/buildcache.h): two nodes on one throwaway PostgreSQL cluster
# (tests/lib/pg.sh). A real ProGuard mapping (Debian's proguard obfuscating
# Debian's commons-lang3, as server_test.sh) and its method-ID file are
# uploaded to node A and are in PostgreSQL when the 201 comes; node B, with
# an empty data directory, processes a batch of that build (original names in
# slow-methods) and retraces with the mapping it fetched from the store; a
# deleted cache is fetched again; a damaged cached copy is found by its hash
# and fetched again; a replacement uploaded to B reaches A's older cache.
#
#   tests/integration/files_pg_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
# both nodes share one database given explicitly (--store): not lib.sh's
# one database per data folder
unset BEATLINE_TEST_STORE
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/../lib/pg.sh"

PID_A=
stop_a() {
  if [ -n "$PID_A" ]; then
    kill "$PID_A" 2> /dev/null || true
    wait "$PID_A" 2> /dev/null || true
  fi
  PID_A=
}
cleanup() {
  stop_a
  stop_server
  pg_stop
}
trap cleanup EXIT

# a shared cluster (BEATLINE_TEST_PG_URL, e.g. .ci/run's) or one of our own
if [ -z "${BEATLINE_TEST_PG_URL:-}" ] && ! pg_start; then
  bad "PostgreSQL did not start (tests/lib/pg.sh)"
  finish
fi
STORE=$(pg_new_db)
sql() { psql -X -q -A -t -d "$STORE" -c "$1"; }

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
if [ -z "$ID_BLANK" ] || [ -z "$ID_REPEAT" ]; then
  echo "cannot find the test methods in the mapping / method-ID file" >&2
  exit 1
fi
# a stack trace of StringUtils.isBlank, obfuscated
obf_cls=$(awk '$1 == "org.apache.commons.lang3.StringUtils" && $2 == "->" { sub(/:$/, "", $3); print $3 }' mapping.txt)
line=$(awk '/^org.apache.commons.lang3.StringUtils ->/ { c = 1; next } /^[^ ]/ { c = 0 }
  c && /boolean isBlank\(java.lang.CharSequence\)/ { split($1, r, ":"); print r[1]; exit }' mapping.txt)
obf_m=$(awk '/^org.apache.commons.lang3.StringUtils ->/ { c = 1; next } /^[^ ]/ { c = 0 }
  c && /boolean isBlank\(java.lang.CharSequence\)/ { print $NF; exit }' mapping.txt)
printf 'java.lang.NullPointerException\n\tat %s.%s(SourceFile:%s)\n' "$obf_cls" "$obf_m" "$line" > trace.txt
RETRACED="	at org.apache.commons.lang3.StringUtils.isBlank(StringUtils.java:$line)"
# the same mapping with StringUtils renamed: a replacement
sed 's/^org.apache.commons.lang3.StringUtils ->/org.apache.commons.lang3.StringUtilz ->/' mapping.txt > mapping2.txt
RETRACED2="	at org.apache.commons.lang3.StringUtilz.isBlank(StringUtilz.java:$line)"

# --- node A: the uploads ------------------------------------------------------
create_app "$WORK/a" shop --store "$STORE"
start_server "$WORK/a" --store "$STORE"
PID_A=$SERVER_PID
URL_A=$URL
SERVER_PID=
put_ids shop 7.1 method-ids.txt "method-ids created on A"
H_MIDS=$(jq -r .hash <<< "$BODY")
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" -H 'Content-Encoding: zstd' \
  --data-binary @<(zstd -q -c mapping.txt)
expect "mapping created on A" 201 "$CODE"
H_MAP=$(jq -r .hash <<< "$BODY")
# durable in PostgreSQL when answered: the build's records and the contents
expect "the build's files in the store" "mapping $H_MAP $(stat -c %s mapping.txt)|method-ids $H_MIDS $(stat -c %s method-ids.txt)" \
  "$(sql "SELECT string_agg(kind || ' ' || hash || ' ' || size, '|' ORDER BY kind) FROM build_files WHERE build = '7.1'")"
expect "the contents in the store" "$(stat -c %s mapping.txt) $(stat -c %s method-ids.txt)" \
  "$(sql "SELECT (SELECT sum(length(data)) FROM file_chunks WHERE hash = '$H_MAP') || ' ' || (SELECT sum(length(data)) FROM file_chunks WHERE hash = '$H_MIDS')")"
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" --data-binary @mapping.txt
expect "the same mapping again on A" "200 unchanged" "$CODE $(jq -r .status <<< "$BODY")"
stop_a # B alone from here: whatever B needs comes from the store

# --- node B: an empty data directory ------------------------------------------
start_server "$WORK/b" --store "$STORE"
cat > a.json <<JSON
{"batch_id":"11111111-1111-4111-8111-111111111111","app":"shop","build":"7.1","session_id":"s",
 "origin_wall_us":1795960000000000,"device":{"model":"Pixel 8","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,
   "records":[[$ID_BLANK,"i",0],[$ID_REPEAT,"i",10],[$ID_REPEAT,"o",40],[$ID_BLANK,"o",100]]}],
 "events":[]}
JSON
"$BIN/beatline-batch" encode < a.json > a.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @a.bin
expect "batch accepted by B" 202 "$CODE"
n=
for _ in $(seq 600); do # bounded: 30 s
  n=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "$n" == 1 ] && break
  sleep 0.05
done
expect "B processed the batch" 1 "$n"
http GET "/v1/apps/shop/slow-methods?build=7.1&thread=main&sort=total" "$RD"
expect "slow-methods on B: original names" \
  "200 org.apache.commons.lang3.StringUtils.isBlank|org.apache.commons.lang3.StringUtils.repeat" \
  "$CODE $(jq -r '[.methods[] | "\(.method.class).\(.method.name)"] | join("|")' <<< "$BODY")"
bdir=$(dirname "$(find "$WORK/b/builds" -name build-name 2> /dev/null | head -1)")
expect "B cached the mapping" "$H_MAP" "$(cat "$bdir/mapping.hash" 2> /dev/null)"
expect "B cached the method-ID file" "$H_MIDS" "$(cat "$bdir/method-ids.hash" 2> /dev/null)"
if cmp -s mapping.txt "$bdir/mapping.txt" && cmp -s method-ids.txt "$bdir/method-ids.txt"; then
  ok
else
  bad "B's cached files are not the uploaded ones"
fi
http POST /v1/apps/shop/builds/7.1/retrace "$RD" --data-binary @trace.txt
expect "retrace on B" "200 $RETRACED" "$CODE $(sed -n 2p body.out)"

# --- B's cache deleted: fetched again -------------------------------------------
rm -rf "$WORK/b/builds"
http POST /v1/apps/shop/builds/7.1/retrace "$RD" --data-binary @trace.txt
expect "retrace on B after its cache was deleted" "200 $RETRACED" "$CODE $(sed -n 2p body.out)"
if cmp -s mapping.txt "$bdir/mapping.txt"; then ok; else bad "the mapping was not fetched again"; fi

# --- a damaged cached copy: found by its hash, fetched again --------------------
# (its mapping.idx is older than the damaged text: without the hash check the
# index would be rebuilt from the damaged text and retrace StringUtilz)
sed -i 's/^org.apache.commons.lang3.StringUtils ->/org.apache.commons.lang3.StringUtilz ->/' \
  "$bdir/mapping.txt"
http POST /v1/apps/shop/builds/7.1/retrace "$RD" --data-binary @trace.txt
expect "retrace on B with a damaged cached mapping" "200 $RETRACED" "$CODE $(sed -n 2p body.out)"
if cmp -s mapping.txt "$bdir/mapping.txt"; then ok; else bad "the damaged mapping was not replaced"; fi
expect_grep "the damage is logged" "cached copy damaged" "$(cat server.log)"
# the same after a restart (nothing remembered: the copy is hashed again)
stop_server
printf 'x' >> "$bdir/method-ids.txt"
sed -i 's/^org.apache.commons.lang3.StringUtils ->/org.apache.commons.lang3.StringUtilz ->/' \
  "$bdir/mapping.txt"
start_server "$WORK/b" --store "$STORE"
http POST /v1/apps/shop/builds/7.1/retrace "$RD" --data-binary @trace.txt
expect "retrace on a restarted B with a damaged cached mapping" "200 $RETRACED" \
  "$CODE $(sed -n 2p body.out)"
if cmp -s mapping.txt "$bdir/mapping.txt" && cmp -s method-ids.txt "$bdir/method-ids.txt"; then
  ok
else
  bad "the damaged files were not replaced after a restart"
fi

# --- a replacement on B reaches A's older cache ---------------------------------
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" --data-binary @mapping2.txt
expect "a different mapping on B without replace" 409 "$CODE"
http PUT "/v1/apps/shop/builds/7.1/mapping?replace=true" "$UPL" --data-binary @mapping2.txt
expect "replaced on B" "200 replaced" "$CODE $(jq -r .status <<< "$BODY")"
stop_server
start_server "$WORK/a" --store "$STORE" # its cache holds the first mapping
http POST /v1/apps/shop/builds/7.1/retrace "$RD" --data-binary @trace.txt
expect "retrace on A with the replacement" "200 $RETRACED2" "$CODE $(sed -n 2p body.out)"
adir=$(dirname "$(find "$WORK/a/builds" -name build-name 2> /dev/null | head -1)")
if cmp -s mapping2.txt "$adir/mapping.txt"; then ok; else bad "A's cache does not hold the replacement"; fi
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" --data-binary @mapping2.txt
expect "the replacement again on A" "200 unchanged" "$CODE $(jq -r .status <<< "$BODY")"

# --- a deleted build's files go with it ----------------------------------------
http DELETE /v1/apps/shop/builds/7.1 "$UPL"
expect "build deleted" 200 "$CODE"
expect "no files of the deleted build in the store" 0 \
  "$(sql "SELECT count(*) FROM build_files WHERE build = '7.1'")"
http PUT /v1/apps/shop/builds/7.1/mapping "$UPL" --data-binary @mapping.txt
expect "a build of the same name starts without files" "201 created" \
  "$CODE $(jq -r .status <<< "$BODY")"

# --- a batch waiting on B for files uploaded to A --------------------------------
PID_A=$SERVER_PID
URL_A=$URL
SERVER_PID=
start_server "$WORK/b" --store "$STORE"
sed -e 's/"build":"7.1"/"build":"8.0"/' \
  -e 's/11111111-1111-4111-8111-111111111111/22222222-2222-4222-8222-222222222222/' a.json > w.json
"$BIN/beatline-batch" encode < w.json > w.bin
http POST /v1/apps/shop/batches "$ING" --data-binary @w.bin
expect "batch of a build without files accepted by B" 202 "$CODE"
metric() { curl -s "$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
waiting=
for _ in $(seq 300); do # bounded: until B's writer has parked it (30 s)
  waiting=$(metric "$URL" beatline_batches_waiting)
  [ "$waiting" == 1 ] && break
  sleep 0.1
done
expect "the batch waits on B" 1 "$waiting"
done0=$(metric "$URL" beatline_batches_processed_total)
curl -s -o /dev/null -X PUT -H "Authorization: Bearer $UPL" --data-binary @method-ids.txt \
  "$URL_A/v1/apps/shop/builds/8.0/method-ids"
curl -s -o /dev/null -X PUT -H "Authorization: Bearer $UPL" --data-binary @mapping.txt \
  "$URL_A/v1/apps/shop/builds/8.0/mapping"
n=
for _ in $(seq 300); do # bounded: 30 s
  n=$(metric "$URL" beatline_batches_processed_total)
  [ "$n" == $((done0 + 1)) ] && break
  sleep 0.1
done
expect "B processed the waiting batch after the uploads to A" $((done0 + 1)) "$n"
http GET "/v1/apps/shop/slow-methods?build=8.0&thread=main&sort=total" "$RD"
expect "its names on B" "200 org.apache.commons.lang3.StringUtils.isBlank" \
  "$CODE $(jq -r '.methods[0].method | "\(.class).\(.name)"' <<< "$BODY")"

# --- nothing in the store: 404 as before ---------------------------------------
http POST /v1/apps/shop/builds/9.9/retrace "$RD" --data-binary @trace.txt
expect "retrace of a build without a mapping" 404 "$CODE"

finish
