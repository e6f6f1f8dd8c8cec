#!/usr/bin/env bash
# beatline-retrace as a user runs it: arguments, stdin, exit codes, messages
# with file:line, --strict, --build-index.
#   retrace_cli_test.sh BIN_DIR CASES_DIR
# no `set -e`: a failed check is counted and named, the run goes on
set -uo pipefail
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

# every golden case through the CLI (a one-shot retrace: only what the
# trace names is read, by line range where the mapping has no metadata)
# and through a full index of its mapping: both give the expected output
for d in "$cases"/*/; do
  k=$(basename "$d")
  args=$(cat "$d/args" 2> /dev/null || true)
  # shellcheck disable=SC2086
  "$bin" $args --quiet "$d/mapping.txt" "$d/input.txt" > "$tmp/g.txt"
  cmp -s "$tmp/g.txt" "$d/expected.txt"; check "$k: one-shot output" $?
  "$bin" --quiet --build-index "$tmp/g.idx" "$d/mapping.txt"
  # shellcheck disable=SC2086
  "$bin" $args "$tmp/g.idx" "$d/input.txt" > "$tmp/g.txt"
  cmp -s "$tmp/g.txt" "$d/expected.txt"; check "$k: full-index output" $?
done

# index built once, then used as MAPPING
"$bin" --build-index "$tmp/m.idx" "$c/mapping.txt"
"$bin" "$tmp/m.idx" "$c/input.txt" > "$tmp/c.txt"
cmp -s "$tmp/c.txt" "$c/expected.txt"; check "index as MAPPING" $?

# usage errors exit 1
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
# line 4 is a method 'b' the trace does not name: not read, so not reported
grep -q "mapping.txt:4: " "$tmp/err"; check "line 4 (not named) not read" $(( $? == 0 ? 1 : 0 ))
grep -q "1 malformed line(s) skipped" "$tmp/err"; check "summary" $?
# a trace naming a.b reads line 4 too
{ cat "$m/input.txt"; printf '\tat a.b(SourceFile:1)\n'; } > "$tmp/in-b.txt"
"$bin" "$m/mapping.txt" "$tmp/in-b.txt" > /dev/null 2> "$tmp/err"
grep -q "mapping.txt:4: " "$tmp/err"; check "line 4 reported" $?
grep -q "2 malformed line(s) skipped" "$tmp/err"; check "summary of both" $?
"$bin" --strict "$m/mapping.txt" "$m/input.txt" > /dev/null 2> "$tmp/err"; rc=$?
check "strict exits 2" $(( rc == 2 ? 0 : 1 ))
grep -q "mapping.txt:3: stopped at this malformed line (--strict)" "$tmp/err"; check "strict names line 3" $?
"$bin" --quiet "$m/mapping.txt" "$m/input.txt" > /dev/null 2> "$tmp/err"
[ ! -s "$tmp/err" ]; check "--quiet is quiet" $?

# of a ProGuard-style mapping only the ranges holding the trace's lines are
# read (a malformed line in another range goes unread); R8 metadata turns
# that off (the build starts again), with the same output
printf 'com.example.Foo -> a:\n    1:3:void one():10:12 -> a\n    4:6:void two():20:22 -> a\n    7:8:bad line -> a\n' > "$tmp/pg.txt"
printf 'java.lang.Error\n\tat a.a(SourceFile:5)\n' > "$tmp/pg-in.txt"
"$bin" --stats "$tmp/pg.txt" "$tmp/pg-in.txt" > "$tmp/pg-out.txt" 2> "$tmp/err"
grep -q "indexed 1 class, 1 method line, 0 fields (those the trace names, by its lines)" "$tmp/err"; check "ranges by the trace's lines" $?
grep -q "malformed" "$tmp/err"; check "unread range not reported" $(( $? == 0 ? 1 : 0 ))
printf 'java.lang.Error\n\tat com.example.Foo.two(Foo.java:21)\n' | cmp -s - "$tmp/pg-out.txt"; check "ranges by lines: output" $?
{ printf '# {"id":"com.android.tools.r8.mapping","version":"2.2"}\n'; cat "$tmp/pg.txt"; } > "$tmp/r8.txt"
"$bin" --stats "$tmp/r8.txt" "$tmp/pg-in.txt" > "$tmp/r8-out.txt" 2> "$tmp/err"
grep -q "indexed 1 class, 2 method lines, 0 fields (those the trace names)" "$tmp/err"; check "R8 mapping: every range of a named method" $?
grep -q "r8.txt:5: " "$tmp/err"; check "R8 mapping: malformed range reported" $?
cmp -s "$tmp/pg-out.txt" "$tmp/r8-out.txt"; check "R8 mapping: same output" $?

# --threads: a 1.5 MiB trace retraced in pieces, a mapping parsed in two
# halves — the output equals the one-thread output (cases whose retrace
# carries state from line to line: exceptions, rewriteFrame, outlines)
for k in 0015-exception-lines 0020-outline 0021-rewrite-frame 0026-circular-reference; do
  c2="$cases/$k"
  cp "$c2/input.txt" "$tmp/big.txt"
  while [ "$(stat -c %s "$tmp/big.txt")" -lt 1600000 ]; do # doubling
    cat "$tmp/big.txt" "$tmp/big.txt" > "$tmp/big2.txt"
    mv "$tmp/big2.txt" "$tmp/big.txt"
  done
  "$bin" --threads 1 --stats "$c2/mapping.txt" "$tmp/big.txt" > "$tmp/t1.txt" 2> "$tmp/s1"
  "$bin" --threads 3 --stats "$c2/mapping.txt" "$tmp/big.txt" > "$tmp/t3.txt" 2> "$tmp/s3"
  cmp -s "$tmp/t1.txt" "$tmp/t3.txt"; check "$k: 3 threads = 1 thread" $?
  grep -qE "\([0-9]+ pieces on 3 threads;" "$tmp/s3"; check "$k: retraced in pieces on 3 threads" $?
  grep -q "(1 piece on 1 thread;" "$tmp/s1"; check "$k: --threads 1 retraced in one piece" $?
  # the trace's frame names were resolved once for all the threads: none
  # looked up again by a retrace thread
  grep -qE "distinct frame names resolved once for all threads: ([1-9][0-9]*) of \1;" "$tmp/s3"
  check "$k: frame names resolved once for 3 threads" $?
  # and each frame line retraced as the scan read it (not read again)
  n_at=$(grep -cE '^[[:space:]]*at ' "$tmp/big.txt")
  grep -q "frame lines retraced as the scan read them: $n_at;" "$tmp/s3"
  check "$k: $n_at frame lines retraced as scanned" $?
  if [ "$(grep -c '^[^ #]' "$c2/mapping.txt")" -ge 2 ]; then
    grep -q "on 2 threads" "$tmp/s3"; check "$k: mapping parsed in two halves" $?
  fi
  [ "$(stat -c %s "$tmp/t1.txt")" -gt 1600000 ]; check "$k: output not empty" $?
done
# a cut must fall before an exception line, never between one and its
# frames: plain lines there keep the exception for rewriteFrame
c2="$cases/0021-rewrite-frame"
{ echo "java.lang.NullPointerException: null"
  for r in $(seq 40); do echo "  log line $r"; done
  printf '\tat a.d(SourceFile:8)\n'; } > "$tmp/block.txt"
cp "$tmp/block.txt" "$tmp/big.txt"
while [ "$(stat -c %s "$tmp/big.txt")" -lt 1600000 ]; do
  cat "$tmp/big.txt" "$tmp/big.txt" > "$tmp/big2.txt"
  mv "$tmp/big2.txt" "$tmp/big.txt"
done
"$bin" --threads 1 "$c2/mapping.txt" "$tmp/big.txt" > "$tmp/t1.txt"
"$bin" --threads 3 "$c2/mapping.txt" "$tmp/big.txt" > "$tmp/t3.txt"
cmp -s "$tmp/t1.txt" "$tmp/t3.txt"; check "cut keeps the exception with its frames" $?
[ "$(grep -c 'Callbacks.get' "$tmp/t1.txt")" -eq 0 ]; check "rewriteFrame applied after plain lines" $?

# a big trace's names are read in two halves on two threads: classes named
# only in the second half are still read from the mapping
{ echo "com.example.First -> a:"
  echo "    1:5:void first():10:14 -> a"
  echo "com.example.Second -> b:"
  echo "    1:5:void second():20:24 -> b"
} > "$tmp/halves-map.txt"
awk 'BEGIN { print "java.lang.Error: x"
             for (i = 1; i <= 12000; i++) print "\tat a.a(SourceFile:2)"
             for (i = 1; i <= 12000; i++) print "\tat b.b(SourceFile:3)" }' > "$tmp/halves.txt"
[ "$(stat -c %s "$tmp/halves.txt")" -ge 262144 ]; check "two-half scan: trace of 256 KiB or more" $?
"$bin" --threads 1 "$tmp/halves-map.txt" "$tmp/halves.txt" > "$tmp/h1.txt"
"$bin" --threads 2 "$tmp/halves-map.txt" "$tmp/halves.txt" > "$tmp/h2.txt"
cmp -s "$tmp/h1.txt" "$tmp/h2.txt"; check "two-half scan: 2 threads = 1 thread" $?
[ "$(grep -c 'com.example.Second.second(Second.java:22)' "$tmp/h2.txt")" -eq 12000 ]
check "two-half scan: the second half's class is retraced" $?

# output that expands 30-fold (8 alternatives per frame): a piece holds at
# most its bound of output before its turn (32 MiB; 1 MiB here, set for
# tests by BEATLINE_RETRACE_HOLD_MAX), then waits, and the output stays the
# one thread's
{ echo "com.example.Big -> a:"
  for i in $(seq 0 7); do echo "    $((i + 1)):$((i + 1)):void m$i():$((i + 1)) -> a"; done
} > "$tmp/big-map.txt"
awk 'BEGIN { print "java.lang.Error: x"
             for (i = 1; i <= 120000; i++) { print "at a.a()"; if (i % 1000 == 0) print "java.lang.Error: y" } }' \
  > "$tmp/expand.txt"
BEATLINE_RETRACE_HOLD_MAX=1048576 "$bin" --threads 2 --stats "$tmp/big-map.txt" "$tmp/expand.txt" \
  2> "$tmp/s2" | md5sum > "$tmp/x2.md5"
"$bin" --threads 1 "$tmp/big-map.txt" "$tmp/expand.txt" | md5sum > "$tmp/x1.md5"
cmp -s "$tmp/x1.md5" "$tmp/x2.md5"; check "expanding output: 2 threads = 1 thread" $?
held=$(sed -nE 's/.*keep the order: at most ([0-9.]+) MiB.*/\1/p' "$tmp/s2")
awk -v h="$held" 'BEGIN { exit !(h + 0 >= 1 && h + 0 < 1.1) }'; check "expanding output: held at most 1 MiB (held $held)" $?
BEATLINE_RETRACE_HOLD_MAX=65536 "$bin" --threads 8 "$tmp/big-map.txt" "$tmp/expand.txt" | md5sum > "$tmp/x8.md5"
cmp -s "$tmp/x1.md5" "$tmp/x8.md5"; check "expanding output, 8 threads, 64 KiB held: = 1 thread" $?
"$bin" --threads 2 --stats "$tmp/big-map.txt" "$tmp/expand.txt" 2> "$tmp/s2" > /dev/null
held=$(sed -nE 's/.*keep the order: at most ([0-9.]+) MiB.*/\1/p' "$tmp/s2")
awk -v h="$held" 'BEGIN { exit !(h + 0 > 1.1 && h + 0 < 32) }'; check "expanding output: the 32 MiB bound by default (held $held)" $?
# a write error (a full disk) while pieces wait for their turn: exit 1 with
# the reason, promptly, with any thread count
for t in 1 2 8; do
  BEATLINE_RETRACE_HOLD_MAX=1048576 timeout 60 "$bin" --threads "$t" "$tmp/big-map.txt" \
    "$tmp/expand.txt" > /dev/full 2> "$tmp/err"
  rc=$?
  check "write error, $t thread(s): exit 1 (got $rc)" $(( rc == 1 ? 0 : 1 ))
  grep -q "beatline-retrace: write: No space left on device" "$tmp/err"
  check "write error, $t thread(s): message" $?
done

"$bin" --threads 0 "$c/mapping.txt" < /dev/null > /dev/null 2> "$tmp/err"
check "--threads 0 refused" $(( $? == 1 ? 0 : 1 ))
"$bin" --threads x "$c/mapping.txt" < /dev/null > /dev/null 2> "$tmp/err"
check "--threads x refused" $(( $? == 1 ? 0 : 1 ))
grep -q "from 1 to 8" "$tmp/err"; check "--threads message" $?

# a last line without a newline that prints nothing (a synthesized frame):
# the line before keeps its newline, with any thread count
c3="$cases/0018-synthesized"
sframe=$(grep -m1 -P '^\tat ' "$c3/input.txt" || true)
printf 'some text\n%s' "$sframe" > "$tmp/nonl.txt"
"$bin" --threads 1 "$c3/mapping.txt" "$tmp/nonl.txt" > "$tmp/n1.txt"
"$bin" "$c3/mapping.txt" - < "$tmp/nonl.txt" > "$tmp/n2.txt"
cmp -s "$tmp/n1.txt" "$tmp/n2.txt"; check "no final newline: same from file and stdin" $?
head -c 10 "$tmp/n1.txt" | cmp -s - <(printf 'some text\n'); check "no final newline: earlier newline kept" $?

# mistakes a user makes: a compressed mapping, arguments swapped
gzip -c "$c/mapping.txt" > "$tmp/m.gz"
"$bin" "$tmp/m.gz" "$c/input.txt" > /dev/null 2> "$tmp/err"; rc=$?
check "gzip mapping exits 1" $(( rc == 1 ? 0 : 1 ))
grep -q "is gzip, not a mapping text; decompress it first (gzip -dc)" "$tmp/err"; check "gzip mapping message" $?
zstd -q -c "$c/mapping.txt" > "$tmp/m.zst"
"$bin" "$tmp/m.zst" "$c/input.txt" > /dev/null 2> "$tmp/err"
grep -q "is zstd" "$tmp/err"; check "zstd mapping message" $?
"$bin" "$c/input.txt" "$c/mapping.txt" > /dev/null 2> "$tmp/err"; rc=$?
check "swapped arguments exit 2" $(( rc == 2 ? 0 : 1 ))
grep -q "no class line ('original -> obfuscated:') in .* lines: not a mapping file?" "$tmp/err"
check "swapped arguments message" $?
# a mapping with a malformed line whose classes the trace does not name is
# still a mapping (exit 0, the trace unchanged); an empty one is warned about
printf 'com.example.A -> a:\n    1:1:void x():1:1 -> a\nnot a class line\ncom.example.B -> b:\n' > "$tmp/m-other.txt"
printf 'java.lang.Error: boom\n\tat c.d(SourceFile:1)\n' > "$tmp/t-other.txt"
"$bin" "$tmp/m-other.txt" "$tmp/t-other.txt" > "$tmp/o.txt" 2> "$tmp/err"; rc=$?
check "malformed line, classes not named: exit 0 (got $rc)" $rc
cmp -s "$tmp/o.txt" "$tmp/t-other.txt"; check "malformed line, classes not named: trace unchanged" $?
printf '# just a comment\n\n' > "$tmp/m-empty.txt"
"$bin" "$tmp/m-empty.txt" "$tmp/t-other.txt" > "$tmp/o.txt" 2> "$tmp/err"; rc=$?
check "empty mapping: exit 0 (got $rc)" $rc
grep -q "no class line in 2 lines (an empty mapping): nothing is renamed" "$tmp/err"; check "empty mapping: warned" $?
cmp -s "$tmp/o.txt" "$tmp/t-other.txt"; check "empty mapping: trace unchanged" $?
"$bin" --build-index "$tmp/x.idx" "$c/mapping.txt" "$c/input.txt" > /dev/null 2> "$tmp/err"; rc=$?
check "--build-index with a STACKTRACE: exit 1 (got $rc)" $(( rc == 1 ? 0 : 1 ))
grep -q "build-index takes no STACKTRACE" "$tmp/err"; check "--build-index with a STACKTRACE: message" $?

# --opt=value and '-' for standard input
"$bin" --threads=2 "$c/mapping.txt" - < "$c/input.txt" > "$tmp/e.txt"; check "--threads=2 and - exit 0" $?
cmp -s "$tmp/e.txt" "$c/expected.txt"; check "'-' reads standard input" $?
"$bin" --build-index="$tmp/m2.idx" "$c/mapping.txt" && "$bin" "$tmp/m2.idx" "$c/input.txt" > "$tmp/f.txt"
cmp -s "$tmp/f.txt" "$c/expected.txt"; check "--build-index=FILE" $?
"$bin" --threads= "$c/mapping.txt" < /dev/null > /dev/null 2>&1; check "--threads= refused" $(( $? == 1 ? 0 : 1 ))

# a corrupt index is refused with exit 1, not a crash
head -c 200 "$tmp/m.idx" > "$tmp/bad.idx"
"$bin" "$tmp/bad.idx" < /dev/null > /dev/null 2> "$tmp/err"; rc=$?
check "corrupt index exits 1" $(( rc == 1 ? 0 : 1 ))
grep -q "bad index" "$tmp/err"; check "corrupt index message" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
