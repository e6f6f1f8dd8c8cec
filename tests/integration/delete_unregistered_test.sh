#!/usr/bin/env bash
# DELETE of a build no writer has registered yet (both stores): a
# batch answered 202, or a method-ID upload answered 201, makes the build's
# row only when the writer reaches it; a DELETE right after the answer must
# still delete the build (docs/api.md "Deleting a build": batches
# acknowledged before the DELETE are deleted with it), not answer 404 and
# leave it to appear a moment later. Commits are held back
# (BEATLINE_TEST_COMMIT_DELAY_MS) so the writer is behind the answers.
#
#   delete_unregistered_test.sh BUILD_DIR WORK_DIR
set -euo pipefail

. "$(dirname "$0")/lib.sh"
setup "$@"
HTTP_ARGS=(-m 30)

cat > ids.txt << 'EOF2'
# beatline method-ids v1 names=original
1,1,com.example.Main run ()V
EOF2
D=$WORK/d
create_app "$D" shop
for k in 1 2; do
  printf '{"batch_id":"7e570000-0000-4000-8000-%012d","app":"shop","build":"y%d","session_id":"s","origin_wall_us":1795960000000000,"device":{"model":"m","os":"14","sdk":34},"threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[1,"i",0],[1,"o",30]]}],"events":[]}' \
    "$k" "$k" | "$BIN/beatline-batch" encode > "b$k.bin"
done
BEATLINE_TEST_COMMIT_DELAY_MS=400 start_server "$D"

# 1. a batch of a new build (waits for its method-ID file), DELETE at once
http POST /v1/apps/shop/batches "$ING" --data-binary @b1.bin
expect "batch of y1" 202 "$CODE"
http DELETE /v1/apps/shop/builds/y1 "$UPL"
expect "DELETE y1 right after its batch's 202" 200 "$CODE"
expect "DELETE y1 body" deleted "$(jq -r .status <<< "$BODY" 2> /dev/null || echo "$BODY")"

# 2. a method-ID upload of a new build, DELETE at once
put_ids shop y2 ids.txt "method-ids of y2"
http DELETE /v1/apps/shop/builds/y2 "$UPL"
expect "DELETE y2 right after its upload's 201" 200 "$CODE"

# 3. a build that never was: still 404, and not made by the DELETE
http DELETE /v1/apps/shop/builds/nope "$UPL"
expect "DELETE of an unknown build" 404 "$CODE"
contains "404 body" "no such build" "$BODY"

# nothing of y1, y2 or nope appears later: the writer has passed them all
# once a later batch is counted
http POST /v1/apps/shop/batches "$ING" --data-binary @b2.bin
expect "batch of y2 (new build)" 202 "$CODE"
for _ in $(seq 200); do
  http GET /v1/apps/shop/builds "$RD"
  [ "$(jq -r '[.builds[].build] | join(",")' <<< "$BODY")" = y2 ] && break
  sleep 0.05
done
expect "builds afterwards" y2 "$(jq -r '[.builds[].build] | join(",")' <<< "$BODY")"
expect "y2 has no method-ID file (deleted)" null "$(jq -r '.builds[0].method_ids' <<< "$BODY")"
finish
