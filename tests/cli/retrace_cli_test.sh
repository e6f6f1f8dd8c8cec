#!/usr/bin/env bash
# beatline-retrace as a user runs it: arguments, stdin, exit codes, messages
# with file:line, --strict, --build-index.
#   retrace_cli_test.sh BIN_DIR CASES_DIR
set -euo pipefail
bin="$1/beatline-retrace"
cases="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
check() { # name, condition result
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

c="$cases/0002-inline-frames"
# file argument and stdin give the same output, equal to the golden file
"$bin" "$c/mapping.txt" "$c/input.txt" > "$tmp/a.txt"
"$bin" "$c/mapping.txt" < "$c/input.txt" > "$tmp/b.txt"
cmp -s "$tmp/a.txt" "$c/expected.txt"; check "file argument output" $?
cmp -s "$tmp/b.txt" "$c/expected.txt"; check "stdin output" $?

# index built once, then used as MAPPING
"$bin" --build-index "$tmp/m.idx" "$c/mapping.txt"
"$bin" "$tmp/m.idx" "$c/input.txt" > "$tmp/c.txt"
cmp -s "$tmp/c.txt" "$c/expected.txt"; check "index as MAPPING" $?

# usage errors exit 1
set +e
"$bin" > /dev/null 2>&1; check "no arguments exits 1" $(( $? == 1 ? 0 : 1 ))
"$bin" --bogus x > /dev/null 2>&1; check "unknown option exits 1" $(( $? == 1 ? 0 : 1 ))
"$bin" /nonexistent/mapping.txt < /dev/null 2> "$tmp/err"; rc=$?
check "missing mapping exits 1" $(( rc == 1 ? 0 : 1 ))
grep -q '/nonexistent/mapping.txt: No such file' "$tmp/err"; check "missing mapping message" $?
"$bin" "$c/mapping.txt" /nonexistent/trace.txt > /dev/null 2>&1; check "missing trace exits 1" $(( $? == 1 ? 0 : 1 ))
"$bin" "$tmp" < /dev/null > /dev/null 2>&1; check "directory as mapping exits 1" $(( $? == 1 ? 0 : 1 ))
"$bin" --help | grep -q 'usage: beatline-retrace'; check "--help" $?

# malformed lines: reported with file:line and skipped; --strict exits 2
m="$cases/0023-malformed-lines"
"$bin" "$m/mapping.txt" "$m/input.txt" > "$tmp/d.txt" 2> "$tmp/err"; rc=$?
check "lenient exits 0" $rc
cmp -s "$tmp/d.txt" "$m/expected.txt"; check "lenient output" $?
grep -q "mapping.txt:3: class line must be" "$tmp/err"; check "line 3 reported" $?
grep -q "mapping.txt:4: " "$tmp/err"; check "line 4 reported" $?
grep -q "2 malformed line(s) skipped" "$tmp/err"; check "summary" $?
"$bin" --strict "$m/mapping.txt" "$m/input.txt" > /dev/null 2> "$tmp/err"; rc=$?
check "strict exits 2" $(( rc == 2 ? 0 : 1 ))
grep -q "mapping.txt:3: malformed mapping line (--strict)" "$tmp/err"; check "strict names line 3" $?
"$bin" --quiet "$m/mapping.txt" "$m/input.txt" > /dev/null 2> "$tmp/err"
[ ! -s "$tmp/err" ]; check "--quiet is quiet" $?

# a corrupt index is refused with exit 1, not a crash
head -c 200 "$tmp/m.idx" > "$tmp/bad.idx"
"$bin" "$tmp/bad.idx" < /dev/null > /dev/null 2> "$tmp/err"; rc=$?
check "corrupt index exits 1" $(( rc == 1 ? 0 : 1 ))
grep -q "bad index" "$tmp/err"; check "corrupt index message" $?
set -e

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
