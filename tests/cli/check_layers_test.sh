#!/usr/bin/env bash
# scripts/check-layers (issue 12) on a fixture tree and on the real one:
#   - sqlite3 in server/pipeline/x.c and in a header of server/http: exit 1,
#     each named FILE:LINE; the same word under server/store/, tests/,
#     bench/ and in a non-C file is not reported;
#   - libpq (libpq-fe.h, a PQxxx call) outside server/store/: exit 1, named;
#     under server/store/ and tests/ not;
#   - a tree without offenders: exit 0;
#   - this checkout: exit 0.
#   check_layers_test.sh SOURCE_DIR WORK_DIR
# no `set -e`: a failed check is counted and named, the run goes on
set -uo pipefail
src=$1
work=$2
check_layers="$src/scripts/check-layers"
rm -rf "$work" && mkdir -p "$work"
fails=0
pass=0
check() { # name, condition result
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

t="$work/tree"
mkdir -p "$t/server/pipeline" "$t/server/http" "$t/server/store" "$t/tests/unit" "$t/bench"
printf 'int x;\n  sqlite3_step(st);\n' > "$t/server/pipeline/x.c"
printf '#include <SQLite3.h>\n' > "$t/server/http/y.h"
printf '#include <sqlite3.h>\n' > "$t/server/store/ok.c"
printf '#include <sqlite3.h>\n' > "$t/tests/unit/ok_test.c"
printf '#include <sqlite3.h>\n' > "$t/bench/ok_bench.c"
printf 'sqlite3 is used by the store\n' > "$t/server/README.md"
out=$(bash "$check_layers" "$t" 2>&1)
rc=$?
[ "$rc" -eq 1 ]; check "offending tree: exit 1 (got $rc)" $?
grep -qF 'server/pipeline/x.c:2:' <<<"$out"; check "names server/pipeline/x.c:2" $?
grep -qF 'server/http/y.h:1:' <<<"$out"; check "names server/http/y.h:1" $?
n=$(grep -c . <<<"$out")
[ "$n" -eq 2 ]; check "exactly the two offenders are reported (got $n lines: $out)" $?

# libpq (issue 19): its header or a PQxxx call outside server/store/; a
# word that merely contains PQ (XPQexec, PQ_MAX) is not reported
printf '#include <libpq-fe.h>\n' > "$t/server/http/z.h"
printf 'int n = XPQexec + PQ_MAX;\n\n  r = PQexec(c, s);\n' > "$t/server/pipeline/w.c"
printf '#include <libpq-fe.h>\nPQfinish(c);\n' > "$t/server/store/pg_ok.c"
printf 'PQexec(c, s);\n' > "$t/tests/unit/pg_ok_test.c"
out=$(bash "$check_layers" "$t" 2>&1)
rc=$?
[ "$rc" -eq 1 ]; check "libpq outside the store: exit 1 (got $rc)" $?
grep -qF 'server/http/z.h:1: libpq' <<<"$out"; check "names server/http/z.h:1 (libpq-fe.h)" $?
grep -qF 'server/pipeline/w.c:3: libpq' <<<"$out"; check "names server/pipeline/w.c:3 (PQexec)" $?
n=$(grep -c . <<<"$out")
[ "$n" -eq 4 ]; check "the two libpq offenders and the two sqlite3 ones (got $n lines: $out)" $?
rm "$t/server/http/z.h" "$t/server/pipeline/w.c"

rm "$t/server/pipeline/x.c" "$t/server/http/y.h"
out=$(bash "$check_layers" "$t" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ -z "$out" ]; check "clean tree: exit 0, silent (got $rc: $out)" $?

out=$(bash "$check_layers" "$src" 2>&1)
rc=$?
[ "$rc" -eq 0 ]; check "this checkout passes (got $rc: $out)" $?

bash "$check_layers" "$work/missing" > /dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ]; check "missing root: exit 2 (got $rc)" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
