#!/usr/bin/env bash
# The store's read path answers the same on SQLite and on PostgreSQL
# (issue 19): slow methods (the rollups and the reference scan, which on
# PostgreSQL merges sketches in C) and call trees.
#
# Batches of 3 builds over 4 days (whole days and edge hours), main and
# other threads, names whose byte order is not a locale's (case, '_',
# UTF-8, quotes) and methods tied on every figure go through a server on
# SQLite. Its tables are then copied row for row into a fresh PostgreSQL
# database, and store_read_dump prints both stores' answers over a matrix
# of queries (every build and all builds, thread main/all, time ranges,
# every sort, limits 1/3/50/none, fast and scan; every call-tree read):
# the two texts must be byte-identical. Then a server on the PostgreSQL
# copy (--store) answers the same HTTP GETs of slow-methods (every filter,
# sort, limit) and call-tree (default, root=, max_depth, limit,
# format=columns) as the server on SQLite did, byte for byte.
#
#   pg_read_test.sh BUILD_DIR WORK_DIR
# PostgreSQL: tests/lib/pg.sh (the shared cluster of BEATLINE_TEST_PG_URL, or
# its own). Skips (77) without psql or sqlite3.
set -euo pipefail
# this test picks its stores itself: the first server on SQLite
export BEATLINE_TEST_STORE=sqlite
. "$(dirname "$0")/lib.sh"
setup "$@"

for t in psql sqlite3; do
  command -v "$t" > /dev/null || { echo "SKIP: no $t"; finish 77; }
done

DATA=$WORK/data
D0=1795910400 # a day's start (UTC), s
# --- method ids: random calls (0-19), ties (30-39) -------------------------
{ echo "# beatline method-ids v1 names=original"
  echo "0,1,com.example.r.Root run ()V"
  for i in $(seq 1 19); do echo "$i,1,com.example.r.W$((i % 5)) m$((i % 7)) (I)V"; done
  echo '30,1,com.x.Tie a ()V'
  echo '31,1,com.x.tie a ()V'
  echo '32,1,com.x._tie a ()V'
  echo '33,1,com.x.TIE a ()V'
  echo '34,1,com.x.Tïe a ()V'
  echo '35,1,com.x.Tie B ()V'
  echo '36,1,com.x.Tie b ()V'
  echo '37,1,com.x.Tie a (I)V'
  echo '38,1,com.x.Q"uo\te a ()V'
  echo '39,1,com.x.Tie a (J)V'; } > mids.txt

# batch N of build B at wall clock W (s): 4 threads (1 main) of random
# nesting, and on thread 4 the tie methods, each called once for 7 µs
batch() {
  local n=$1 b=$2 w=$3
  awk -v n="$n" -v b="$b" -v w="$w" 'BEGIN {
    srand(11 * n)
    printf "{\"batch_id\":\"bbbbbbbb-bbbb-4bbb-8bbb-%012d\",\"app\":\"t\",\"build\":\"%s\",", n, b
    printf "\"session_id\":\"s%d\",\"origin_wall_us\":%d000000,\"threads\":[", n, w
    for (th = 1; th <= 4; th++) {
      printf "%s{\"id\":%d,\"name\":\"t%d\",\"main\":%s,\"truncated\":false,\"records\":[",
             (th > 1 ? "," : ""), th, th, (th == 1 ? "true" : "false")
      sp = 0; t = 0; first = 1
      for (k = 0; k < 1500 || sp > 0; k++) {
        t += int(rand() * 3) + (rand() < 0.03 ? int(rand() * 20000) : 0)
        enter = sp == 0 || (k < 1500 && sp < 12 && rand() < 0.5 + (5 - sp) / 20)
        if (enter) { m = sp == 0 ? 0 : 1 + int(rand() * 19); st[sp++] = m; e = "i" }
        else { m = st[--sp]; e = "o" }
        printf "%s[%d,\"%s\",%d]", (first ? "" : ","), m, e, t; first = 0
      }
      if (th == 4)
        for (m = 30; m <= 39; m++) {
          t += 5; printf ",[%d,\"i\",%d]", m, t
          t += 7; printf ",[%d,\"o\",%d]", m, t
        }
      printf "]}"
    }
    printf "],\"events\":[]}\n" }' > "b$n.json"
  "$BIN/beatline-batch" encode < "b$n.json" > "b$n.bin"
}
n=0
for spec in "1.0 $((D0 + 4200))" "1.0 $((D0 + 18000))" "1.1 $((D0 + 86400 + 10800))" \
            "1.1 $((D0 + 86400 + 12000))" "2.0 $((D0 + 2 * 86400 + 82800))" \
            "2.0 $((D0 + 3 * 86400 + 3600))" "1.0 $((D0 + 3 * 86400 + 7300))"; do
  n=$((n + 1))
  batch "$n" $spec
done
NB=$n
# range bounds (s): inside the first day, day starts, mid-hour, the last day
TIMES="$((D0 + 7200)) $((D0 + 86400)) $((D0 + 86400 + 12600)) $((D0 + 3 * 86400))"

create_app "$DATA" t
start_server "$DATA"
for b in 1.0 1.1 2.0; do
  put_ids t "$b" mids.txt "method-ids $b"
done
for i in $(seq "$NB"); do
  http POST /v1/apps/t/batches "$ING" --data-binary @"b$i.bin"
  expect "batch $i" 202 "$CODE"
done
p=0
for _ in $(seq 600); do
  p=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ "$p" == "$NB" ] && break
  sleep 0.1
done
expect "batches processed" "$NB" "$p"

# the HTTP answers compared (SQLite's kept as the reference)
QUERIES=()
for s in p50 p90 p99 count total self max; do
  for th in all main; do
    QUERIES+=("slow-methods?sort=$s&thread=$th" "slow-methods?sort=$s&thread=$th&limit=3")
    QUERIES+=("slow-methods?build=1.1&sort=$s&thread=$th&limit=2")
    for tm in $TIMES; do
      QUERIES+=("slow-methods?since=$tm&sort=$s&thread=$th" "slow-methods?until=$tm&sort=$s")
    done
    QUERIES+=("slow-methods?since=$((D0 + 7200))&until=$((D0 + 3 * 86400))&sort=$s&thread=$th")
    QUERIES+=("slow-methods?build=1.0&since=$((D0 + 7200))&until=$((D0 + 3 * 86400))&sort=$s")
  done
done
QUERIES+=("slow-methods?limit=0" "slow-methods?build=nope")
for b in "" "build=1.0&" "build=1.1&" "build=2.0&"; do
  for th in all main; do
    QUERIES+=("call-tree?${b}thread=$th" "call-tree?${b}thread=$th&max_depth=3"
              "call-tree?${b}thread=$th&limit=7" "call-tree?${b}thread=$th&format=columns"
              "call-tree?${b}thread=$th&limit=150000"
              "call-tree?${b}thread=$th&root=com.example.r.W1.m1"
              "call-tree?${b}thread=$th&root=com.example.r.W2.m2(I)V&max_depth=2"
              "call-tree?${b}thread=$th&root=com.example.r.W3.m3&format=columns")
  done
done
mkdir -p ans-sqlite ans-pg
i=0
for qq in "${QUERIES[@]}"; do
  i=$((i + 1))
  http GET "/v1/apps/t/$qq" "$RD"
  printf '%s\n%s\n%s\n' "$qq" "$CODE" "$BODY" > "ans-sqlite/$i"
done
echo "${#QUERIES[@]} HTTP answers from SQLite"
# the data exercises what it should
http GET "/v1/apps/t/slow-methods?sort=total&limit=10000" "$RD"
ties=$(jq '[.methods[] | select(.method.class | test("^com.x"))] | map([.count, .total_us, .self_us, .max_us]) | unique | length' <<< "$BODY")
expect "tie methods: one set of figures" 1 "$ties"
n_m=$(jq '.methods | length' <<< "$BODY")
[ "$n_m" -gt 20 ] && ok || bad "methods listed: $n_m"
stop_server

# --- PostgreSQL: a database on the shared test cluster or a throwaway one
. "$HERE/../lib/pg.sh"
if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  pg_start "$PWD" || { bad "PostgreSQL did not start"; finish; }
fi
PGURL=
trap 'stop_server; [ -n "$PGURL" ] && pg_drop_db "$PGURL"; pg_stop' EXIT
PGURL=$(pg_new_db) || { bad "no database"; finish; }
export PGOPTIONS="-c client_min_messages=warning"
PSQL=(psql "$PGURL" -v ON_ERROR_STOP=1 -qAt)
"$BIN/store_read_dump" --migrate "$PGURL"
ok

# copy the tables the read path reads, row for row (ids kept); blobs as
# bytea's hex form
DB=$DATA/beatline.db
TABLES="apps app_keys builds method_sigs methods method_stats call_nodes rollup_totals rollup_days
        rollup_hours rollup_spans rollup_dirty rollup_rebuild"
# the schema's own rows (SQLite's have the same ids) go first
"${PSQL[@]}" -c "TRUNCATE $(echo $TABLES | tr ' ' ',') CASCADE"
for t in $TABLES; do
  cols=$(sqlite3 "$DB" "SELECT group_concat(name, ',') FROM pragma_table_info('$t')")
  sel=$(sqlite3 "$DB" "SELECT group_concat(CASE WHEN type = 'BLOB' THEN
                         '''\\x'' || hex(' || name || ')' ELSE name END, ',')
                       FROM pragma_table_info('$t')")
  sqlite3 -csv -nullvalue '\N' "$DB" "SELECT $sel FROM $t" > "$t.csv"
  "${PSQL[@]}" -c "\\copy $t ($cols) FROM '$PWD/$t.csv' WITH (FORMAT csv, NULL '\\N')"
  a=$(sqlite3 "$DB" "SELECT count(*) FROM $t")
  b=$("${PSQL[@]}" -c "SELECT count(*) FROM $t")
  expect "rows of $t copied" "$a" "$b"
done

# --- the store's answers, byte for byte ------------------------------------
"$BIN/store_read_dump" "$DB" 1 $TIMES > dump-sqlite.txt 2> dump-sqlite.err &&
  ok || bad "store_read_dump on SQLite: $(tail -3 dump-sqlite.err; grep -m3 ERROR dump-sqlite.txt)"
"$BIN/store_read_dump" "$PGURL" 1 $TIMES > dump-pg.txt 2> dump-pg.err &&
  ok || bad "store_read_dump on PostgreSQL: $(tail -3 dump-pg.err; grep -m3 ERROR dump-pg.txt)"
rows=$(grep -c '^  ' dump-sqlite.txt || true)
echo "store answers: $(grep -c '^slow' dump-sqlite.txt) slow-methods queries, $rows rows/nodes"
[ "$rows" -gt 10000 ] && ok || bad "rows dumped: $rows"
if cmp -s dump-sqlite.txt dump-pg.txt; then
  ok
else
  bad "store answers differ (SQLite < > PostgreSQL): $(diff dump-sqlite.txt dump-pg.txt | head -20)"
fi
# --- the HTTP answers of a server on PostgreSQL, byte for byte -------------
if true; then
  start_server "$WORK/data-pg" --store "$PGURL"
  i=0
  same=0
  for qq in "${QUERIES[@]}"; do
    i=$((i + 1))
    http GET "/v1/apps/t/$qq" "$RD"
    printf '%s\n%s\n%s\n' "$qq" "$CODE" "$BODY" > "ans-pg/$i"
    if cmp -s "ans-sqlite/$i" "ans-pg/$i"; then
      same=$((same + 1))
    else
      bad "GET $qq differs: SQLite $(head -c 300 "ans-sqlite/$i" | tail -n +2 | tr '\n' ' ') | PostgreSQL $(head -c 300 "ans-pg/$i" | tail -n +2 | tr '\n' ' ')"
    fi
  done
  expect "HTTP answers identical" "${#QUERIES[@]}" "$same"
  stop_server
fi
# the reference scan while the rollups are marked dirty: the same again
sqlite3 "$DB" "INSERT INTO rollup_dirty (app_id) VALUES (1)"
"${PSQL[@]}" -c "INSERT INTO rollup_dirty (app_id) VALUES (1)"
"$BIN/store_read_dump" "$DB" 1 "$((D0 + 86400))" > dirty-sqlite.txt 2>&1 || bad "dirty dump (SQLite)"
"$BIN/store_read_dump" "$PGURL" 1 "$((D0 + 86400))" > dirty-pg.txt 2>&1 || bad "dirty dump (PostgreSQL)"
cmp -s dirty-sqlite.txt dirty-pg.txt && ok ||
  bad "answers with dirty rollups differ: $(diff dirty-sqlite.txt dirty-pg.txt | head -20)"
sqlite3 "$DB" "DELETE FROM rollup_dirty"
"${PSQL[@]}" -c "DELETE FROM rollup_dirty"
# a method identity whose names are gone (a damaged store): the rollups'
# answer leaves its group out on both (PostgreSQL reads names in a batch,
# then answers again one name at a time)
"$BIN/store_read_dump" "$DB" 1 "$((D0 + 86400))" > clean-sqlite.txt 2>&1 || bad "clean dump"
sqlite3 "$DB" "PRAGMA foreign_keys = OFF; DELETE FROM method_sigs WHERE class = 'com.x.tie'"
"${PSQL[@]}" -c "SET session_replication_role = replica" \
  -c "DELETE FROM method_sigs WHERE class = 'com.x.tie'"
"$BIN/store_read_dump" "$DB" 1 "$((D0 + 86400))" > nosig-sqlite.txt 2>&1 || bad "no-sig dump (SQLite)"
"$BIN/store_read_dump" "$PGURL" 1 "$((D0 + 86400))" > nosig-pg.txt 2>&1 || bad "no-sig dump (PostgreSQL)"
cmp -s nosig-sqlite.txt nosig-pg.txt && ok ||
  bad "answers without a sig's names differ: $(diff nosig-sqlite.txt nosig-pg.txt | head -20)"
cmp -s nosig-sqlite.txt clean-sqlite.txt && bad "deleting a sig changed nothing" || ok

finish
