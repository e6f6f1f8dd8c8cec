#!/usr/bin/env bash
# End to end of network requests (issue 16) on loopback: a program of our own
# (network/NetDemo.java: OkHttp 3.13 and HttpURLConnection requests to its
# own HTTP server on 127.0.0.1) obfuscated by Debian's ProGuard, instrumented
# by beatline-instrument (--names obfuscated), its mapping and method-ID file
# uploaded, then run with -Xverify:all and the runtime uploading to a real
# beatline-server.
#
#   whole_path_network_test.sh BUILD_DIR WORK_DIR
#
# Checks: the instrumented program prints what the obfuscated one prints;
# every batch the runtime sent was accepted (202) and the spool is empty;
# the server stored the 11 network events; GET /v1/apps/{app}/network
# (the server half of issue 16) shows the patterns,
# exact counts, error counts and callers with their original names.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

OK3=/usr/share/java/okhttp.jar:/usr/share/java/okio.jar
RUNTIME=$BUILD/lib/beatline-runtime.jar

# --- the program: compiled, obfuscated, instrumented --------------------------
mkdir -p classes tools
javac --release 8 -cp "$OK3" -d classes "$HERE/network/NetDemo.java"
jar cf demo.jar -C classes .
javac -d tools "$HERE/../realworld/JrtLibraryJar.java"
java -cp tools JrtLibraryJar jdk.jar java.base jdk.httpserver > /dev/null
cat > pg.pro <<PRO
-injars demo.jar
-outjars obf.jar
-libraryjars jdk.jar
-libraryjars /usr/share/java/okhttp.jar
-libraryjars /usr/share/java/okio.jar
-dontoptimize
-dontwarn
-keep public class demo.net.NetDemo { public static void main(java.lang.String[]); }
-keepattributes SourceFile,LineNumberTable
-printmapping mapping.txt
PRO
java -jar /usr/share/java/proguard.jar @pg.pro > proguard.log 2>&1 || { tail -20 proguard.log; exit 1; }
"$BIN/beatline-instrument" -q --names obfuscated obf.jar -o inst.jar --method-ids method-ids.txt
contains "the classes were obfuscated" "demo/net/NetDemo\$Orders -> " "$(tr '.' '/' < mapping.txt)"

# --- server, app, build --------------------------------------------------------
DATA=$WORK/data
create_app "$DATA" netdemo
start_server "$DATA"
"$HERE/../../scripts/upload-build" --server "$URL" --app netdemo --build 1.0 --key "$UPL" \
  --mapping mapping.txt --method-ids method-ids.txt > upload.log 2>&1 || { cat upload.log; exit 1; }
ok

# --- the runs ------------------------------------------------------------------
plain=$(java -Xverify:all -cp "obf.jar:$OK3" demo.net.NetDemo)
expect "the program answers" "requests answered 2xx: 8" "$plain"
out=$(timeout 120 java -Xverify:all -cp "inst.jar:$RUNTIME:$OK3" -Dbeatline.server="$URL" \
  -Dbeatline.app=netdemo -Dbeatline.build=1.0 -Dbeatline.key="$ING" -Dbeatline.spool="$WORK/spool" \
  -Dbeatline.debug=true demo.net.NetDemo 2> run.err)
expect "instrumented: same output" "$plain" "$out"
expect_grep "the runtime's batches were accepted (202)" 'uploaded .*: 202$' "$(cat run.err)"
expect "no batch refused" "0" "$(grep -c 'refused' run.err || true)"
expect "the spool is empty" "0" "$(find "$WORK/spool" -name '*.blb.gz' | wc -l)"

# the batches are processed: the 11 network events reached the events reader.
# Every accepted (202) batch must be counted processed, not only "none
# waiting": on the PostgreSQL store a 202 batch sits in the database's queue
# (no waiting, no in-memory queue depth) until a node claims it.
accepted=$(grep -c 'uploaded .*: 202$' run.err || true)
for _ in $(seq 600); do
  n=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "${n:-0}" = "$accepted" ] && break
  sleep 0.05
done
expect "every accepted batch processed" "$accepted" "$n"
http GET "/v1/apps/netdemo/network?build=1.0&sort=count&limit=50" "$RD"
expect "GET /network" "200" "$CODE"
stored=$(curl -s "$URL/metrics" | awk '$1 == "beatline_network_requests_total" { print $2 }')
expect "the server stored the 11 network events" "11" "$stored"
# one row: host 127.0.0.1, its pattern and method
row() { jq -c --arg p "$1" --arg m "$2" \
  '[.requests[] | select(.host == "127.0.0.1" and .pattern == $p and .http_method == $m)] | .[0]' <<< "$BODY"; }
check_row() { # pattern method count errors caller-class caller-name
  local r
  r=$(row "$1" "$2")
  expect "$2 $1 count" "$3" "$(jq -r .count <<< "$r")"
  expect "$2 $1 errors" "$4" "$(jq -r .errors <<< "$r")"
  expect "$2 $1 caller" "$5.$6 $3" \
    "$(jq -r '.callers[0] | "\(.method.class).\(.method.name) \(.count)"' <<< "$r")"
}
check_row "/v2/users/{id}/orders/{id}" GET 5 0 'demo.net.NetDemo$Orders' fetch
check_row "/v2/users/{id}" GET 2 2 'demo.net.NetDemo$Users' missing
check_row "/v2/orders" POST 1 0 'demo.net.NetDemo$Orders' place
check_row "/legacy/items/{id}" GET 3 1 'demo.net.NetDemo$Legacy' items
expect "4xx of the missing users" "2" "$(row "/v2/users/{id}" GET | jq -r '.status["4xx"]')"
expect "5xx of the legacy items" "1" "$(row "/legacy/items/{id}" GET | jq -r '.status["5xx"]')"
# scripts/demo-network: the /network answer as a table (what the dashboard's
# Network page shows), then how to look at it
if [ -n "${BEATLINE_DEMO:-}" ]; then
  http GET "/v1/apps/netdemo/network?build=1.0&sort=count&limit=50" "$RD"
  {
    echo
    echo "GET /v1/apps/netdemo/network?build=1.0 (the obfuscated program's requests, by URL pattern):"
    printf '%-6s %-28s %5s %6s %9s %9s  %s\n' method pattern count errors p50_ms p99_ms "callers (original names)"
    jq -r '.requests[] | [.http_method, .pattern, .count, .errors, (.p50_us / 1000 | tostring | .[0:7]),
      (.p99_us / 1000 | tostring | .[0:7]),
      ([.callers[] | "\(.method.class | split(".") | last).\(.method.name) x\(.count)"] | join(", "))] | @tsv' \
      <<< "$BODY" | while IFS=$'\t' read -r m p c e p50 p99 callers; do
        printf '%-6s %-28s %5s %6s %9s %9s  %s\n' "$m" "$p" "$c" "$e" "$p50" "$p99" "$callers"
      done
    echo
    echo "Everything is in $WORK (mapping.txt, method-ids.txt, inst.jar, data/)."
  } >&2
fi
finish
