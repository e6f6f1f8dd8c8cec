#!/usr/bin/env bash
# A node's restart never makes builds the shared store does not have
# (issue 19; docs/architecture.md "Several nodes on PostgreSQL": a node's
# build folders are a cache of the database).
#
#   nodes_restart_builds_test.sh BUILD_DIR WORK_DIR
#
# Two nodes on one throwaway PostgreSQL (tests/lib/pg.sh; skipped, 77,
# when it cannot start). Node 1's folder gets a build folder the store has
# no build for, twice:
#   - "ghost": a first upload node 1 refuses (400, not a mapping);
#   - "zombie": uploaded through node 0, cached by node 1 (a retrace),
#     then deleted through node 0.
# Node 1 is restarted: GET …/builds (on both nodes) must list neither.
# Before the fix, node 1 registered every folder of its cache at start and
# both came back as empty builds. Every wait is bounded.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
. "$HERE/nodes_lib.sh"
nodes_pg_setup

builds() { # NODE -> the build names, sorted, one line
  curl -s -m 10 -H "Authorization: Bearer $RD" "${URLS[$1]}/v1/apps/shop/builds" |
    jq -r '[.builds[].build] | sort | join(" ")'
}

keys=$("$BIN/beatline-server" --data "$PWD/node0" --store "$STORE" app create shop)
UPL=$(jq -r .upload_key <<< "$keys")
RD=$(jq -r .read_key <<< "$keys")
start_node 0
start_node 1
printf 'com.example.Main -> a.a:\n    void run() -> a\n' > mapping.txt

# ghost: node 1 refuses its first upload
code=$(curl -s -o up.out -w '%{http_code}' -m 20 -X PUT -H "Authorization: Bearer $UPL" \
  --data-binary 'not a mapping' "${URLS[1]}/v1/apps/shop/builds/ghost/mapping")
expect "a bad first mapping of ghost refused" 400 "$code"

# zombie: uploaded through node 0, cached by node 1, deleted through node 0
code=$(curl -s -o up.out -w '%{http_code}' -m 20 -X PUT -H "Authorization: Bearer $UPL" \
  --data-binary @mapping.txt "${URLS[0]}/v1/apps/shop/builds/zombie/mapping")
expect "zombie's mapping through node 0" 201 "$code"
code=$(printf 'x\n\tat a.a.a(SourceFile:1)\n' | curl -s -o rt.out -w '%{http_code}' -m 20 \
  -H "Authorization: Bearer $RD" --data-binary @- "${URLS[1]}/v1/apps/shop/builds/zombie/retrace")
expect "zombie retraced through node 1 (its files cached there)" 200 "$code"
code=$(curl -s -o del.out -w '%{http_code}' -m 40 -X DELETE -H "Authorization: Bearer $UPL" \
  "${URLS[0]}/v1/apps/shop/builds/zombie")
expect "zombie deleted through node 0" 200 "$code"
expect "builds before the restart" "" "$(builds 1)"

# node 1 restarts
kill "${PIDS[1]}"
wait "${PIDS[1]}" 2> /dev/null || true
PIDS[1]=
start_node 1
got=
for _ in $(seq 30); do # bounded: 3 s for its start-up work to show
  got=$(builds 0)
  [ -n "$got" ] && break
  sleep 0.1
done
expect "builds after node 1 restarted (node 0)" "" "$got"
expect "builds after node 1 restarted (node 1)" "" "$(builds 1)"

# a build the store has keeps working after the restart (its cache is used)
code=$(curl -s -o up.out -w '%{http_code}' -m 20 -X PUT -H "Authorization: Bearer $UPL" \
  --data-binary @mapping.txt "${URLS[0]}/v1/apps/shop/builds/kept/mapping")
expect "kept's mapping through node 0" 201 "$code"
code=$(printf 'x\n\tat a.a.a(SourceFile:1)\n' | curl -s -o rt.out -w '%{http_code}' -m 20 \
  -H "Authorization: Bearer $RD" --data-binary @- "${URLS[1]}/v1/apps/shop/builds/kept/retrace")
expect "kept retraced through node 1" 200 "$code"
kill "${PIDS[1]}"
wait "${PIDS[1]}" 2> /dev/null || true
PIDS[1]=
start_node 1
sleep 1
expect "builds after a second restart" "kept" "$(builds 1)"
code=$(printf 'x\n\tat a.a.a(SourceFile:1)\n' | curl -s -o rt.out -w '%{http_code}' -m 20 \
  -H "Authorization: Bearer $RD" --data-binary @- "${URLS[1]}/v1/apps/shop/builds/kept/retrace")
expect "kept retraced through node 1 after its restart" 200 "$code"
contains "the retraced frame" "com.example.Main.run" "$(cat rt.out)"
finish
