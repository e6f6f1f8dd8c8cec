#!/usr/bin/env bash
# The store's write path on PostgreSQL (issue 19): the same writer
# transactions, rebuild steps and expiry through SQLite and PostgreSQL give
# the same rows (tests/unit/rollups_pg_test.c), against a throwaway
# PostgreSQL (tests/lib/pg.sh; or the cluster at BEATLINE_TEST_PG_URL).
#   tests/integration/pg_write_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/../lib/pg.sh"

if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  pg_start "$WORK" || { bad "PostgreSQL did not start"; finish; }
fi
db= db2=
# the databases go at the end (also from a shared cluster)
trap 'stop_server; for d in "$db" "$db2"; do [ -n "$d" ] && pg_drop_db "$d"; done; pg_stop' EXIT
db=$(pg_new_db) || { bad "no database"; finish; }

# the same rows on both engines
if BEATLINE_TEST_PG_URL="$db" BEATLINE_TEST_SQLITE_KEEP="$PWD/rows.db" CK_DEFAULT_TIMEOUT=300 \
   "$BIN/rollups_pg_test" > rows.log 2>&1; then
  ok
else
  bad "rollups_pg_test: $(tail -20 rows.log)"
fi
grep -h 'rows compared' rows.log || true

# and the same answers from the read path (slow methods from the rollups
# and from method_stats, every build, thread, sort, limit and range around
# the expired days; call trees): byte for byte
H0=$(((24 * 20000) * 3600)) # the test's first day (s)
TIMES="$((H0 + 86400 + 7 * 3600)) $((H0 + 2 * 86400)) $((H0 + 3 * 86400 + 5 * 3600)) $((H0 + 4 * 86400))"
for app in 1 2; do
  # shellcheck disable=SC2086
  "$BIN/store_read_dump" "$PWD/rows.db" "$app" $TIMES > "read-sqlite-$app.txt" 2>&1 ||
    bad "store_read_dump on SQLite (app $app): $(grep -m3 ERROR "read-sqlite-$app.txt")"
  # shellcheck disable=SC2086
  "$BIN/store_read_dump" "$db" "$app" $TIMES > "read-pg-$app.txt" 2>&1 ||
    bad "store_read_dump on PostgreSQL (app $app): $(grep -m3 ERROR "read-pg-$app.txt")"
  if cmp -s "read-sqlite-$app.txt" "read-pg-$app.txt"; then
    ok
  else
    bad "app $app: the read path answers differently: $(diff "read-sqlite-$app.txt" "read-pg-$app.txt" | head -6)"
  fi
  expect "app $app: answers read" 1 "$([ "$(grep -c . "read-sqlite-$app.txt")" -gt 100 ] && echo 1 || echo 0)"
done

# end to end: the same uploads and batches through a server on SQLite and
# one on PostgreSQL (--store): the slow-methods, method-histogram and
# call-tree answers are the same bytes
cat > ids.txt << 'EOF2'
# beatline method-ids v1 names=original
EOF2
for i in $(seq 1 30); do
  echo "$i,1,com.example.C$((i % 7)) m$((i % 11)) (I)V" >> ids.txt
done
echo "31,1,com.example.C1 m1 (J)V" >> ids.txt # an overload
# records THREAD_SEED: nested calls of methods 1..31 (and 99, unknown to
# the file), deterministic
records() {
  awk -v seed="$1" 'BEGIN {
    srand(seed); t = 0; d = 0; out = ""
    for (k = 0; k < 120; k++) {
      if (d < 5 && (d == 0 || rand() < 0.55)) {
        m = (rand() < 0.03) ? 99 : 1 + int(rand() * 31); st[d++] = m
        out = out sprintf("%s[%d,\"i\",%d]", out == "" ? "" : ",", m, t)
      } else {
        out = out sprintf(",[%d,\"o\",%d]", st[--d], t)
      }
      t += 1 + int(rand() * (rand() < 0.1 ? 50000 : 400))
    }
    while (d > 0) { out = out sprintf(",[%d,\"o\",%d]", st[--d], t); t += 3 }
    printf "[%s]", out }'
}
nb=14
for k in $(seq 1 $nb); do
  b=$([ $((k % 3)) = 0 ] && echo 2.0 || echo 1.0)
  jq -cn --arg b "$b" --argjson m "$(records $((k * 2)))" --argjson w "$(records $((k * 2 + 1)))" \
    --arg id "$(printf '00000000-0000-4000-8000-%012d' "$k")" \
    --argjson wall "$((1795960000000000 + k * 5 * 3600000000))" \
    '{batch_id:$id, app:"shop", build:$b, session_id:"s", origin_wall_us:$wall,
      device:{model:"m", os:"14", sdk:34},
      threads:[{id:1, name:"main", main:true, truncated:false, records:$m},
               {id:2, name:"w", main:false, truncated:false, records:$w}]}' > b$k.json
  "$BIN/beatline-batch" encode < b$k.json > b$k.bin
done
T0=1795960000
RANGES=("" "&since=$((T0 + 20 * 3600))" "&until=$((T0 + 40 * 3600))"
        "&since=$((T0 + 12 * 3600 + 1800))&until=$((T0 + 51 * 3600))")
answers() { # ENGINE DATA [--store URL]: ingest everything, write answers-ENGINE.txt
  local eng=$1 data=$2
  shift 2
  keys=$("$BIN/beatline-server" --data "$data" "$@" app create shop)
  local upl ing rd
  upl=$(jq -r .upload_key <<< "$keys")
  ing=$(jq -r .ingest_key <<< "$keys")
  rd=$(jq -r .read_key <<< "$keys")
  start_server "$data" "$@"
  for b in 1.0 2.0; do
    http PUT /v1/apps/shop/builds/$b/method-ids "$upl" --data-binary @ids.txt
    expect "$eng: method-ids $b" 201 "$CODE"
  done
  for k in $(seq 1 $nb); do
    http POST /v1/apps/shop/batches "$ing" --data-binary @b$k.bin
    expect "$eng: batch $k" 202 "$CODE"
  done
  for _ in $(seq 1200); do [ "$(metric beatline_batches_processed_total)" = $nb ] && break; sleep 0.05; done
  expect "$eng: processed" $nb "$(metric beatline_batches_processed_total)"
  : > "answers-$eng.txt"
  for q in "" "build=1.0&" "build=2.0&"; do
    for th in all main; do
      for r in "${RANGES[@]}"; do
        for so in total p99 count max; do
          for lim in 3 50; do
            p="/v1/apps/shop/slow-methods?${q}thread=$th&sort=$so&limit=$lim$r"
            http GET "$p" "$rd"
            printf '%s %s\n%s\n' "$p" "$CODE" "$BODY" >> "answers-$eng.txt"
          done
        done
      done
      for m in 'com.example.C1.m1' 'com.example.C1.m1(I)V' 'com.example.C3.m3(I)V'; do
        for r in "${RANGES[@]}"; do
          p="/v1/apps/shop/method-histogram?${q}thread=$th&method=$m$r"
          http GET "$p" "$rd"
          printf '%s %s\n%s\n' "$p" "$CODE" "$BODY" >> "answers-$eng.txt"
        done
      done
    done
  done
  for b in 1.0 2.0; do
    for th in all main; do
      for f in json columns; do
        p="/v1/apps/shop/call-tree?build=$b&thread=$th&format=$f"
        http GET "$p" "$rd"
        printf '%s %s\n%s\n' "$p" "$CODE" "$BODY" >> "answers-$eng.txt"
      done
    done
  done
  stop_server
}
answers sqlite "$WORK/data-sqlite"
db2=$(pg_new_db) || { bad "no second database"; finish; }
answers pg "$WORK/data-pg" --store "$db2"
expect "answers given (all 200)" 272 "$(grep -c '^/v1.* 200$' answers-sqlite.txt)"
contains "slow methods found" '"count":' "$(cat answers-sqlite.txt)"
contains "an unknown method listed" 'unknown method 99' "$(cat answers-sqlite.txt)"
if cmp -s answers-sqlite.txt answers-pg.txt; then
  ok
else
  bad "the HTTP answers differ: $(diff answers-sqlite.txt answers-pg.txt | head -6 | cut -c1-300)"
fi

finish
