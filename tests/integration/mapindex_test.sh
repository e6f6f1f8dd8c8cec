#!/usr/bin/env bash
# When a build's mapping index is rebuilt, and when it is not (review of
# issue 11): a mapping.txt replaced behind the server's back (what a crash
# between the two renames of a mapping upload leaves: new text, old index
# with a valid checksum) makes the index stale and it is rebuilt; an index
# that cannot be opened for another reason than missing/damaged/old format
# is not rebuilt (500, nothing counted); the same mapping uploaded again
# repairs a damaged index through the one repair (logged and counted); the
# recorded hash of a mapping.txt newer than it is computed again.
#
#   mapindex_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
# With a PostgreSQL store the build folder is a cache of the store
# (pipeline/buildcache.h): a mapping.txt replaced behind the server's back
# is damaged by definition and fetched again (tests/integration/files_pg_test.sh)
if [ "${BEATLINE_TEST_STORE:-sqlite}" = pg ]; then
  echo "SQLite store only: see files_pg_test.sh for the PostgreSQL store"
  finish 77
fi

DATA=$WORK/data
create_app "$DATA" shop
APP_ID=$(sqlite3 "$DATA/beatline.db" "SELECT id FROM apps WHERE name = 'shop'")
sha() { printf %s "$1" | sha256sum | cut -c1-64; }
DIR=$DATA/builds/$APP_ID/$(sha m)
retrace() { # -> CODE and the retraced frame in FRAME
  http POST /v1/apps/shop/builds/m/retrace "$RD" --data-binary $'x\n\tat a.a.b(SourceFile:7)\n'
  FRAME=$(sed -n 2p body.out | tr -d '\t')
}

printf 'com.example.Main -> a.a:\n    6:9:void step(int) -> b\n' > map-a.txt
# another size
printf 'com.example.Other -> a.a:\n    6:9:void step(int) -> b\n' > map-b.txt
# the same size as map-b
printf 'com.example.Ozher -> a.a:\n    6:9:void step(int) -> b\n' > map-c.txt
printf 'com.example.Dee -> a.a:\n    6:9:void step(int) -> b\n' > map-d.txt

start_server "$DATA"
http PUT /v1/apps/shop/builds/m/mapping "$UPL" --data-binary @map-a.txt
expect "mapping A uploaded" 201 "$CODE"
retrace
expect "retrace with A" "200 at com.example.Main.step(Main.java:7)" "$CODE $FRAME"
stop_server

# --- a mapping.txt newer than its index: the index is stale -------------------
cp map-b.txt "$DIR/mapping.txt" # another size
start_server "$DATA"
retrace
expect "mapping.txt of another size: answers from it" "200 at com.example.Other.step(Other.java:7)" "$CODE $FRAME"
expect "the stale index was rebuilt and counted" 1 "$(metric beatline_mapping_index_rebuilt_total)"
contains "the rebuild is logged" "older than mapping.txt or of another mapping; rebuilt" "$(cat server.log)"
retrace
expect "rebuilt once, not at every open" 1 "$(metric beatline_mapping_index_rebuilt_total)"
stop_server
cp map-c.txt "$DIR/mapping.txt" # the same size, newer
start_server "$DATA"
retrace
expect "mapping.txt of the same size, newer: answers from it" "200 at com.example.Ozher.step(Ozher.java:7)" "$CODE $FRAME"
expect "rebuilt and counted" 1 "$(metric beatline_mapping_index_rebuilt_total)"
# a text dated in the future: rebuilt once, then the index is not older
touch -d '@4102444800' "$DIR/mapping.txt" # 2100-01-01
retrace
retrace
expect "a future-dated mapping.txt: rebuilt once" "200 2" "$CODE $(metric beatline_mapping_index_rebuilt_total)"

# --- an index that cannot be opened for another reason is not rebuilt ---------
mv "$DIR/mapping.idx" idx.saved
ln -s mapping.idx "$DIR/mapping.idx" # a symlink loop: ELOOP, not ENOENT
retrace
expect "ELOOP: not rebuilt, 500" 500 "$CODE"
contains "ELOOP: says it" "cannot be opened or rebuilt" "$(jq -r .error <<< "$BODY")"
expect "ELOOP: nothing counted" 2 "$(metric beatline_mapping_index_rebuilt_total)"
[ -L "$DIR/mapping.idx" ] && ok || bad "ELOOP: the index path was replaced"
rm "$DIR/mapping.idx"
retrace
expect "a missing index is rebuilt" "200 at com.example.Ozher.step(Ozher.java:7)" "$CODE $FRAME"
expect "missing: counted" 3 "$(metric beatline_mapping_index_rebuilt_total)"

# --- the stored hash follows the stored mapping.txt ----------------------------
# mapping.hash still says A (written after mapping.txt: what a crash between
# the two leaves); the build's mapping is C
http PUT /v1/apps/shop/builds/m/mapping "$UPL" --data-binary @map-a.txt
expect "A again is not 'unchanged': the build has C" 409 "$CODE"
http PUT /v1/apps/shop/builds/m/mapping "$UPL" --data-binary @map-c.txt
expect "C again is" "200 unchanged" "$CODE $(jq -r .status <<< "$BODY")"
expect "mapping.hash recorded again" "$(jq -r .hash <<< "$BODY")" "$(cat "$DIR/mapping.hash")"

# --- the same mapping uploaded again repairs a damaged index, counted --------
http PUT "/v1/apps/shop/builds/m/mapping?replace=true" "$UPL" --data-binary @map-d.txt
expect "mapping D (replace)" "200 replaced" "$CODE $(jq -r .status <<< "$BODY")"
printf '\377\377\377\377' | dd of="$DIR/mapping.idx" bs=1 seek=100 conv=notrunc status=none
http PUT /v1/apps/shop/builds/m/mapping "$UPL" --data-binary @map-d.txt
expect "the same mapping: unchanged" "200 unchanged" "$CODE $(jq -r .status <<< "$BODY")"
expect "the upload's repair is counted" 4 "$(metric beatline_mapping_index_rebuilt_total)"
contains "and logged" "mapping index damaged (checksum or structure); rebuilt" "$(cat server.log)"
retrace
expect "retrace after the upload's repair" "200 at com.example.Dee.step(Dee.java:7)" "$CODE $FRAME"
expect "no further rebuild" 4 "$(metric beatline_mapping_index_rebuilt_total)"
stop_server

finish
