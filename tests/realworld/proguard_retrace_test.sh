#!/usr/bin/env bash
# Real-input test of beatline-retrace against ProGuard 6.2.2 (Debian
# proguard-cli) on real libraries (commons-lang3, Guava, OkHttp, Okio).
#
#   tests/realworld/proguard_retrace_test.sh BUILD_DIR WORK_DIR
#
# 1. Builds a library jar of the running JDK's java.base (plus java.logging
#    and jdk.unsupported, which the libraries reference) with class-file
#    versions lowered to 55, so ProGuard 6.2.2 can read it (JrtLibraryJar).
# 2. Compiles Driver.java, which provokes >= 40 distinct exceptions thrown
#    inside the libraries and prints their stack traces.
# 3. Runs ProGuard (shrink + optimize with inlining + obfuscate) on driver and
#    libraries together, with proguard.pro, and keeps mapping.txt.
# 4. Runs Driver on the original jars (expected.txt) and on the obfuscated jar
#    (obfuscated.txt), checks the latter is really obfuscated, retraces it
#    with BUILD_DIR/bin/beatline-retrace and requires retraced.txt to equal
#    expected.txt byte for byte.
#
# Needs: a JDK (javac, java; 11 or newer), /usr/share/java/{proguard,
# commons-lang3,guava,okhttp,okio}.jar (scripts/install-deps installs them).
# Everything it writes goes under WORK_DIR.  Exit 0 on success.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi
BUILD_DIR=$(cd "$1" && pwd)
mkdir -p "$2"
WORK_DIR=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RETRACE="$BUILD_DIR/bin/beatline-retrace"
JAVA_LIB_DIR=${JAVA_LIB_DIR:-/usr/share/java}

# Same locale for both Driver runs and for diff; UTF-8 so that the one
# non-ASCII character in a message (Okio's "…") goes through as is.
export LC_ALL=C.UTF-8
# A JVM announces these on stderr ("Picked up ..."), which the checks below
# treat as an error; and they could change what the runs print.
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

for tool in java javac; do
  command -v "$tool" >/dev/null || fail "$tool not found (install default-jdk-headless)"
done
[ -x "$RETRACE" ] || fail "$RETRACE not found or not executable (build the project first)"
PROGUARD_JAR="$JAVA_LIB_DIR/proguard.jar"
LIBS=(commons-lang3 guava okhttp okio)
for f in "$PROGUARD_JAR" "${LIBS[@]}"; do
  case "$f" in */*) ;; *) f="$JAVA_LIB_DIR/$f.jar" ;; esac
  [ -r "$f" ] || fail "$f missing (scripts/install-deps installs it)"
done

CLASSPATH_ORIG=""
for lib in "${LIBS[@]}"; do
  CLASSPATH_ORIG="$CLASSPATH_ORIG:$JAVA_LIB_DIR/$lib.jar"
done
CLASSPATH_ORIG=${CLASSPATH_ORIG#:}

start=$SECONDS
rm -rf "${WORK_DIR:?}/tools" "$WORK_DIR/driver"
mkdir -p "$WORK_DIR/tools" "$WORK_DIR/driver"

# --- 1. JDK library jar that ProGuard 6.2.2 can read ------------------------
javac -d "$WORK_DIR/tools" "$HERE/JrtLibraryJar.java"
java -cp "$WORK_DIR/tools" JrtLibraryJar "$WORK_DIR/jdk-library.jar" \
  java.base java.logging jdk.unsupported

# --- 2. Driver ----------------------------------------------------------------
# -nowarn: Guava's class files reference annotation types (errorprone,
# checker framework) that are not on the class path; javac warns about each.
javac --release 8 -nowarn -encoding UTF-8 -cp "$CLASSPATH_ORIG" \
  -d "$WORK_DIR/driver" "$HERE/Driver.java" 2>"$WORK_DIR/javac-driver.log" \
  || { cat "$WORK_DIR/javac-driver.log" >&2; fail "Driver.java does not compile"; }

# --- 3. ProGuard ----------------------------------------------------------------
PG_ARGS=(@"$HERE/proguard.pro" -injars "$WORK_DIR/driver")
for lib in "${LIBS[@]}"; do
  PG_ARGS+=(-injars "$JAVA_LIB_DIR/$lib.jar(!META-INF/**,!module-info.class)")
done
rm -f "$WORK_DIR/obfuscated.jar" "$WORK_DIR/mapping.txt"
PG_ARGS+=(-libraryjars "$WORK_DIR/jdk-library.jar"
  -outjars "$WORK_DIR/obfuscated.jar"
  -printmapping "$WORK_DIR/mapping.txt")
java -jar "$PROGUARD_JAR" "${PG_ARGS[@]}" >"$WORK_DIR/proguard.log" 2>&1 \
  || { tail -40 "$WORK_DIR/proguard.log" >&2; fail "ProGuard failed (log: $WORK_DIR/proguard.log)"; }
grep -q 'Reading library jar .*jdk-library.jar' "$WORK_DIR/proguard.log" \
  || fail "ProGuard did not read the JDK library jar"

# --- 4. Run both, check, retrace, compare -------------------------------------
# -ShowCodeDetailsInExceptionMessages: JDK 17's helpful NullPointerException
# messages name the method, field or local variable involved, which differ
# once ProGuard has renamed and optimized the code.  With the flag off an
# implicit NPE prints as plain "java.lang.NullPointerException" in both runs.
# -OmitStackTraceInFastThrow: never let the JIT replace an exception by a
# preallocated one without a stack trace.
JAVA_RUN=(java -XX:-ShowCodeDetailsInExceptionMessages -XX:-OmitStackTraceInFastThrow)
"${JAVA_RUN[@]}" -cp "$WORK_DIR/driver:$CLASSPATH_ORIG" Driver \
  >"$WORK_DIR/expected.txt" 2>"$WORK_DIR/expected.err" \
  || { cat "$WORK_DIR/expected.err" >&2; fail "Driver failed on the original jars"; }
"${JAVA_RUN[@]}" -cp "$WORK_DIR/obfuscated.jar" Driver \
  >"$WORK_DIR/obfuscated.txt" 2>"$WORK_DIR/obfuscated.err" \
  || { cat "$WORK_DIR/obfuscated.err" >&2; fail "Driver failed on the obfuscated jar"; }
# Nothing may go to stderr: Guava, for one, logs there (java.util.logging)
# when its reflection on renamed fields breaks, which would mean the two runs
# took different paths.  ProGuard keeps the names it sees used that way.
for f in expected.err obfuscated.err; do
  [ ! -s "$WORK_DIR/$f" ] || { cat "$WORK_DIR/$f" >&2; fail "Driver wrote to stderr ($f)"; }
done

sites=$(grep -c '^### site ' "$WORK_DIR/expected.txt" || true)
frames=$(grep -c $'^\t*at ' "$WORK_DIR/expected.txt" || true)

# Every site must have an exception thrown from library code: a trace (the
# top one, a cause or a suppressed one) whose first non-JDK frame is a library
# frame.  (Some sites wrap a library exception in one the driver throws, some
# have a driver-made cause inside a library-thrown exception.)  Count the
# distinct library throw frames.
distinct=$(awk '
  function check() {
    if (site != "" && !ok) {
      print "site " site " has no exception thrown from library code" > "/dev/stderr"; bad = 1
    }
  }
  /^### site / { check(); site = $3; ok = 0; want = 1; next }
  /^\t*(Caused by|Suppressed): / { want = 1; next }
  want && /^\t*at / {
    if ($2 ~ /^[a-z.]+\//) next          # JDK frame (java.base/...): keep looking
    want = 0
    if ($2 ~ /^(org\.apache\.commons\.lang3|com\.google\.common|okhttp3|okio)\./) {
      ok = 1
      if (!($2 in seen)) { seen[$2] = 1; n++ }
    }
  }
  END { check(); if (bad) exit 1; print n + 0 }' "$WORK_DIR/expected.txt") \
  || fail "some site does not throw from library code (see above)"
[ "$distinct" -ge 40 ] || fail "only $distinct distinct library throw sites (need >= 40)"
grep -q '^Caused by: ' "$WORK_DIR/expected.txt" || fail "no 'Caused by:' in expected.txt"
grep -q $'^\tSuppressed: ' "$WORK_DIR/expected.txt" || fail "no 'Suppressed:' in expected.txt"

# obfuscated.txt must really be obfuscated: same shape, but no original
# source file names outside JDK frames, no original library class names in
# frames, and mostly short class names.
[ "$(grep -c '^### site ' "$WORK_DIR/obfuscated.txt" || true)" = "$sites" ] \
  || fail "obfuscated run printed a different number of sites"
if grep -nE $'^\t*at [^/ ]+\\([A-Za-z0-9_$]+\\.java:' "$WORK_DIR/obfuscated.txt" >&2; then
  fail "obfuscated.txt has non-JDK frames with a real source file name"
fi
unrenamed=$(grep -cE $'^\t*at (org\\.apache\\.commons\\.lang3|com\\.google\\.common|okhttp3|okio)\\.' \
  "$WORK_DIR/obfuscated.txt" || true)
[ "$unrenamed" -eq 0 ] || fail "obfuscated.txt has $unrenamed frames in original library classes"
sourcefile_frames=$(grep -c $'^\t*at .*(SourceFile:[0-9]*)$' "$WORK_DIR/obfuscated.txt" || true)
[ "$sourcefile_frames" -ge "$sites" ] || fail "too few SourceFile frames in obfuscated.txt"
long_names=$(grep -E $'^\t*at [^/ ]+\\(SourceFile:' "$WORK_DIR/obfuscated.txt" \
  | sed -E 's/^\t*at ([^ (]+)\.[^.(]+\(.*/\1/' | sed -E 's/.*[.$]//' \
  | grep -cvE '^[A-Za-z]{1,3}$' || true)
# Only Driver itself (kept) may have a long name.
driver_frames=$(grep -cE $'^\t*at Driver\\.main\\(' "$WORK_DIR/obfuscated.txt" || true)
[ "$long_names" -le "$driver_frames" ] \
  || fail "$long_names frames in obfuscated.txt have long (unobfuscated?) class names"
if cmp -s "$WORK_DIR/expected.txt" "$WORK_DIR/obfuscated.txt"; then
  fail "obfuscated.txt equals expected.txt"
fi

retrace_rc=0
"$RETRACE" "$WORK_DIR/mapping.txt" "$WORK_DIR/obfuscated.txt" \
  >"$WORK_DIR/retraced.txt" 2>"$WORK_DIR/retrace.err" || retrace_rc=$?
if [ "$retrace_rc" -ne 0 ]; then
  cat "$WORK_DIR/retrace.err" >&2
  fail "beatline-retrace exited with status $retrace_rc"
fi
# Also the stdin form must give the same output.
"$RETRACE" "$WORK_DIR/mapping.txt" <"$WORK_DIR/obfuscated.txt" \
  >"$WORK_DIR/retraced-stdin.txt" 2>>"$WORK_DIR/retrace.err" \
  || fail "beatline-retrace failed reading the trace from stdin"

elapsed=$((SECONDS - start))
echo "$sites exception sites ($distinct distinct library throw frames), $frames frames compared (${elapsed}s)"
status=0
# R8's rule (issue 18, rule 1): lines of one obfuscated name with the same
# minified range are one inline stack. ProGuard gives an overload and its
# bridge the same range ("623:623:…listIterator(int)", "623:623:…
# listIterator()"), which R8 -- and so beatline-retrace -- prints as the
# frame twice. Such a repeat of the line right above is the only
# difference allowed; it is counted.
if ! cmp -s "$WORK_DIR/expected.txt" "$WORK_DIR/retraced.txt"; then
  uniq "$WORK_DIR/expected.txt" >"$WORK_DIR/expected-uniq.txt"
  uniq "$WORK_DIR/retraced.txt" >"$WORK_DIR/retraced-uniq.txt"
  if ! diff -u --label expected.txt --label retraced.txt \
      "$WORK_DIR/expected-uniq.txt" "$WORK_DIR/retraced-uniq.txt"; then
    echo "FAIL: retraced.txt differs from expected.txt (mapping: $WORK_DIR/mapping.txt, input: $WORK_DIR/obfuscated.txt)" >&2
    status=1
  else
    repeats=$(( $(wc -l <"$WORK_DIR/retraced.txt") - $(wc -l <"$WORK_DIR/expected.txt") ))
    echo "retraced.txt equals expected.txt but for $repeats repeated frame line(s) (same-range overloads read as one inline stack, as R8 does)"
  fi
fi
if ! cmp -s "$WORK_DIR/retraced.txt" "$WORK_DIR/retraced-stdin.txt"; then
  echo "FAIL: beatline-retrace gives different output for the trace on stdin" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "proguard_retrace_test: PASS"
else
  echo "proguard_retrace_test: FAIL"
fi
exit "$status"
