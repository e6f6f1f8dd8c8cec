#!/usr/bin/env bash
# make-trace.sh MAPPING N OUT
#
# Writes OUT: a synthetic but realistic obfuscated Java stack-trace text with
# exactly N "\tat ..." frames, built from the ProGuard/R8 mapping MAPPING.
#
# The text is a sequence of exception blocks:
#   java.lang.IllegalStateException: boom
#   \tat <obf class>.<obf method>(SourceFile:<line>)     (line inside the
#   ...                                                   minified range of a
#   \tat java.lang.Thread.run(Thread.java:833)            method in MAPPING)
#   Caused by: <obf exception class or java.*>: boom ...
#   \tat ...
#   \t... 12 more
# with some "(Unknown Source)" frames, some "(SourceFile)" frames without a line
# and some frames of classes that are not in the mapping (JDK classes).
#
# Deterministic: a fixed-seed Park-Miller generator implemented here (not the
# awk implementation's rand()), so the same mapping gives the same trace with
# any POSIX awk (mawk, gawk, busybox awk).
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 MAPPING N OUT" >&2
  exit 2
fi
mapping=$1
frames=$2
out=$3

if [ ! -r "$mapping" ]; then
  echo "make-trace: cannot read mapping '$mapping'" >&2
  exit 1
fi
case "$frames" in
  '' | *[!0-9]*)
    echo "make-trace: N must be a positive integer, got '$frames'" >&2
    exit 2
    ;;
esac

tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT

# LC_ALL=C: byte semantics, fastest matching.
LC_ALL=C awk -v N="$frames" -v SEED=20240601 -v K=65536 -v KE=256 '
function rnd(    ) {            # Park-Miller minimal standard, exact in doubles
  state = (state * 48271) % 2147483647
  return state
}
function rndint(n) {            # uniform-ish integer in [0, n)
  return rnd() % n
}
BEGIN {
  state = SEED
  nm = 0; seen = 0
  ne = 0; seenex = 0
  cls = ""
}
# Class header: "original.Name -> obf.Name:"
/^[^ #]/ {
  p = index($0, " -> ")
  if (p == 0) { cls = ""; next }
  orig = substr($0, 1, p - 1)
  cls = substr($0, p + 4)
  sub(/:[ \t]*$/, "", cls)
  if (orig ~ /(Exception|Error)$/) {
    # reservoir sample of obfuscated exception class names
    seenex++
    if (ne < KE) { ex[ne++] = cls }
    else { r = rndint(seenex); if (r < KE) ex[r] = cls }
  }
  next
}
# Member with a minified line range: "    a:b:type name(args)[:x[:y]] -> obf"
cls != "" && /^    [0-9]+:[0-9]+:/ {
  p = index($0, " -> ")
  if (p == 0) next
  obf = substr($0, p + 4)
  split(substr($0, 5), f, ":")
  a = f[1] + 0; b = f[2] + 0
  if (b < a || b == 0) next
  seen++
  e = cls SUBSEP obf SUBSEP a SUBSEP b
  if (nm < K) { m[nm++] = e }
  else { r = rndint(seen); if (r < K) m[r] = e }
  next
}
function mapped_frame(    e, g, line, kind) {
  e = m[rndint(nm)]
  split(e, g, SUBSEP)
  kind = rndint(100)
  if (kind < 4) return "\tat " g[1] "." g[2] "(Unknown Source)"
  if (kind < 6) return "\tat " g[1] "." g[2] "(SourceFile)"
  line = g[3] + rndint(g[4] - g[3] + 1)
  return "\tat " g[1] "." g[2] "(SourceFile:" line ")"
}
function jdk_frame() {
  return "\tat " jdk[rndint(njdk)]
}
function frame() {
  if (rndint(100) < 8) return jdk_frame()
  return mapped_frame()
}
function exname(    r) {
  r = rndint(100)
  if (ne > 0 && r < 50) return ex[rndint(ne)]
  return jex[rndint(njex)]
}
function emit(s) {
  print s
}
END {
  if (nm == 0) {
    print "make-trace: no method line ranges found in mapping" > "/dev/stderr"
    exit 1
  }
  njdk = split("java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)|" \
    "java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)|" \
    "java.util.concurrent.FutureTask.run(FutureTask.java:264)|" \
    "java.lang.reflect.Method.invoke(Method.java:568)|" \
    "jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:104)|" \
    "java.util.ArrayList.forEach(ArrayList.java:1511)|" \
    "java.util.HashMap.computeIfAbsent(HashMap.java:1228)|" \
    "android.os.Handler.dispatchMessage(Handler.java:106)|" \
    "android.os.Looper.loop(Looper.java:223)|" \
    "com.android.internal.os.ZygoteInit.main(ZygoteInit.java:947)|" \
    "kotlinx.coroutines.DispatchedTask.run(DispatchedTask.kt:106)", jdk, "|")
  for (i = 1; i <= njdk; i++) jdk[i - 1] = jdk[i]
  njex = split("java.lang.IllegalArgumentException|java.lang.NullPointerException|" \
    "java.io.IOException|java.lang.RuntimeException|java.lang.UnsupportedOperationException|" \
    "java.util.concurrent.ExecutionException", jex, "|")
  for (i = 1; i <= njex; i++) jex[i - 1] = jex[i]

  left = N; block = 0
  while (left > 0) {
    block++
    emit("java.lang.IllegalStateException: boom")
    # top section: 5..60 frames, usually ending in Thread.run
    k = 5 + rndint(56); if (k > left) k = left
    for (i = 0; i < k - 1; i++) emit(frame())
    if (k >= 1) {
      if (rndint(100) < 70) emit("\tat java.lang.Thread.run(Thread.java:833)")
      else emit(mapped_frame())
    }
    left -= k
    # 0..2 "Caused by:" sections, each with 3..30 frames and "... M more"
    causes = rndint(3)
    for (c = 0; c < causes && left > 0; c++) {
      emit("Caused by: " exname() ": boom " block "." c)
      k = 3 + rndint(28); if (k > left) k = left
      for (i = 0; i < k; i++) emit(frame())
      left -= k
      emit("\t... " (1 + rndint(40)) " more")
    }
  }
  printf "make-trace: %d frames in %d blocks (sampled %d of %d method ranges, %d exception classes)\n", \
    N, block, nm, seen, ne > "/dev/stderr"
}
' "$mapping" > "$tmp"
mv "$tmp" "$out"
trap - EXIT
