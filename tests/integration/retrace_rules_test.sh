#!/usr/bin/env bash
# The server's POST …/retrace follows the same R8 rules as beatline-retrace
# (one implementation, server/symbol/retrace.h; issue 18): every golden case
# of tests/cases/retrace from 0025 on (inline groups, text before "at",
# blanks in parameter lists, spans, .kt files, order, layout, line-less
# frames) is uploaded as a build's mapping and its input posted; the answer
# must equal the case's expected output byte for byte.
#
#   retrace_rules_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"
CASES=$HERE/../cases/retrace

DATA=$WORK/data
create_app "$DATA" shop
start_server "$DATA"

n=0
for d in "$CASES"/00[2-9][0-9]-*/; do
  k=$(basename "$d")
  num=${k%%-*}
  [ "$((10#$num))" -ge 25 ] || continue
  n=$((n + 1))
  [ "$n" -le 100 ] || break # bounded
  http PUT "/v1/apps/shop/builds/$k/mapping" "$UPL" --data-binary @"$d/mapping.txt"
  expect "$k: mapping upload" 201 "$CODE"
  q=
  if grep -q -- --verbose "$d/args" 2> /dev/null; then q='?verbose=true'; fi
  http POST "/v1/apps/shop/builds/$k/retrace$q" "$RD" --data-binary @"$d/input.txt"
  expect "$k: retrace status" 200 "$CODE"
  if cmp -s body.out "$d/expected.txt"; then
    ok
  else
    bad "$k: the server's retrace differs from expected.txt: $(diff body.out "$d/expected.txt" | head -5)"
  fi
done
[ "$n" -ge 10 ] && ok || bad "only $n golden cases from 0025 on"
finish
