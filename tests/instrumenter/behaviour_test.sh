#!/usr/bin/env bash
# Behaviour test of beatline-instrument (issue 4): programs that exercise
# exceptions, finally, switches, loops, lambdas, recursion, synchronized code,
# static initializers, constructor chains, interfaces with default and static
# methods, inner classes and one method of ~31 KiB that instrumentation pushes
# past 32 KiB of jumps — compiled twice (javac --release 8, and JDK 17's
# default target) — must, once instrumented, print exactly what they print
# uninstrumented, and record exactly the call trees written by hand in
# behaviour/expected/.
#
#   tests/instrumenter/behaviour_test.sh BUILD_DIR WORK_DIR
#
# For each compile mode the classes of behaviour/src/*.java plus the
# generated LongMethod.java are instrumented as a directory:
#   beatline-instrument --runtime-class beatlinetest/Rec --no-skip-trivial -j 2 \
#       ORIG_DIR -o INSTR_DIR --method-ids IDS
# The probes call beatlinetest.Rec (behaviour/Rec.java), which records
# (thread, enter|exit, methodId) and dumps them at exit; CallTree.java turns
# the dump into a tree with the names from IDS, checking that every exit
# closes the innermost open call. Every run uses java -Xverify:all.
# The golden file is expected/PROGRAM.release8.tree for --release 8 when it
# exists, else expected/PROGRAM.tree; "#" starts a comment there.
#
# Then the JDK 17 classes are instrumented once more in the tool's default
# mode (trivial methods skipped): the trees must be the golden ones without
# the calls of methods that got no methodId, each of them a leaf.
#
# MODES (environment): the compile modes, default "release8 jdk17";
# DEFAULT_MODE=0 leaves out the default-mode run.
# INSTRUMENT_CMD and EXPECT_FAIL: as in verify_jars_test.sh. Exit 0 on
# success, 1 on failure, 77 (skipped) when the tool is not built.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi
BUILD_DIR=$(cd "$1" && pwd)
mkdir -p "$2"
WORK_DIR=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
B="$HERE/behaviour"
export LC_ALL=C.UTF-8
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

for tool in java javac javap; do
  command -v "$tool" >/dev/null || fail "$tool not found (install default-jdk-headless)"
done
if [ -n "${INSTRUMENT_CMD:-}" ]; then
  read -r -a TOOL <<<"$INSTRUMENT_CMD"
else
  TOOL=("$BUILD_DIR/bin/beatline-instrument")
  if [ ! -x "${TOOL[0]}" ]; then
    echo "SKIP: ${TOOL[0]} not built yet"
    exit 77
  fi
fi

PROGRAMS=(Exceptions Control Lambdas Ctors LongMethod)
rm -rf "${WORK_DIR:?}"/{tools,rec,gen,release8,jdk17}
mkdir -p "$WORK_DIR"/{tools,rec,gen}
javac --release 8 -d "$WORK_DIR/rec" "$B/Rec.java"
javac -d "$WORK_DIR/tools" "$B/CallTree.java"
bash "$B/gen-long-method.sh" "$WORK_DIR/gen"
SOURCES=("$B"/src/*.java "$WORK_DIR/gen/LongMethod.java")

status=0
bad() {
  echo "FAILURE: $*"
  status=1
}

# Prints "CODE_LENGTH MAX_JUMP_SPAN GOTO_W_COUNT" for LongMethod.big in a
# class file, from javap's disassembly.
jump_stats() {
  javap -c -p "$1" | awk '
    /^  static int big\(/ { inbig = 1; next }
    inbig && /^$/ { inbig = 0 }
    inbig && match($0, /^ *[0-9]+: /) {
      off = substr($0, RSTART, RLENGTH) + 0; last = off
      if ($2 ~ /^(goto|goto_w|if[a-z_]*)$/) {
        d = $3 - off; if (d < 0) d = -d; if (d > span) span = d
        if ($2 == "goto_w") w++
      }
    }
    END { print last + 1, span + 0, w + 0 }'
}

start=$SECONDS
read -r -a MODES <<<"${MODES:-release8 jdk17}"
for mode in "${MODES[@]}"; do
  orig="$WORK_DIR/$mode/orig"
  instr="$WORK_DIR/$mode/instr"
  ids="$WORK_DIR/$mode/method-ids.txt"
  mkdir -p "$orig"
  flags=(-g -nowarn -encoding UTF-8)
  [ "$mode" = release8 ] && flags+=(--release 8 -Xlint:-options)
  javac "${flags[@]}" -d "$orig" "${SOURCES[@]}"

  rc=0
  "${TOOL[@]}" --runtime-class beatlinetest/Rec --no-skip-trivial -j 2 "$orig" -o "$instr" \
    --method-ids "$ids" >"$WORK_DIR/$mode/tool.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$WORK_DIR/$mode/tool.log"
    bad "$mode: instrumenting $orig exited with status $rc"
    continue
  fi

  # The long method really needs wide jumps once instrumented.
  read -r olen ospan ow <<<"$(jump_stats "$orig/LongMethod.class")"
  read -r ilen ispan iw <<<"$(jump_stats "$instr/LongMethod.class")"
  echo "$mode: LongMethod.big: $olen bytes, longest jump $ospan, $ow goto_w (original);" \
       "$ilen bytes, longest jump $ispan, $iw goto_w (instrumented)"
  if [ "$ow" -ne 0 ] || [ "$ospan" -lt 30000 ] || [ "$ospan" -gt 32767 ]; then
    bad "$mode: the original LongMethod.big does not have the intended shape (regenerate with another N)"
  fi
  if [ "$ispan" -le 32767 ] || [ "$iw" -eq 0 ]; then
    bad "$mode: the instrumented LongMethod.big has no jump longer than 32767 bytes through goto_w"
  fi

  for p in "${PROGRAMS[@]}"; do
    out="$WORK_DIR/$mode/$p"
    rc=0
    java -Xverify:all -cp "$orig" "$p" >"$out.orig.out" 2>"$out.orig.err" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$out.orig.err"; bad "$mode $p: the original exits with $rc"; continue; }
    rc=0
    java -Xverify:all -Dbeatlinetest.out="$out.trace" -cp "$instr:$WORK_DIR/rec" "$p" \
      >"$out.instr.out" 2>"$out.instr.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
      head -n 20 "$out.instr.err"
      bad "$mode $p: the instrumented program exits with $rc"
      continue
    fi
    if ! diff -u --label "$p (original)" --label "$p (instrumented)" "$out.orig.out" "$out.instr.out"; then
      bad "$mode $p: stdout differs once instrumented"
    fi
    [ ! -s "$out.instr.err" ] || { cat "$out.instr.err"; bad "$mode $p: the instrumented program wrote to stderr"; }
    java -cp "$WORK_DIR/tools" CallTree "$out.trace" "$ids" >"$out.tree"
    golden="$B/expected/$p.tree"
    [ "$mode" = release8 ] && [ -f "$B/expected/$p.release8.tree" ] && golden="$B/expected/$p.release8.tree"
    sed -e 's/[[:space:]]*#.*$//' -e '/^$/d' "$golden" >"$out.expected"
    if diff -u --label "$(basename "$golden") (expected)" --label "$p ($mode, recorded)" \
        "$out.expected" "$out.tree"; then
      echo "ok: $mode $p: same stdout, call tree as expected ($(grep -vc '^==' "$out.tree") calls)"
    else
      bad "$mode $p: recorded call tree differs from $golden"
    fi
  done
done
# The default mode (trivial methods skipped), JDK 17 classes: the recorded
# tree must be the expected one without the methods that got no methodId, and
# each of those must be a leaf there (a trivial method calls nothing).
if [ "${DEFAULT_MODE:-1}" = 1 ] && [ -d "$WORK_DIR/jdk17/orig" ]; then
  d="$WORK_DIR/jdk17-default"
  rm -rf "$d"
  mkdir -p "$d"
  rc=0
  "${TOOL[@]}" --runtime-class beatlinetest/Rec -j 2 "$WORK_DIR/jdk17/orig" -o "$d/instr" \
    --method-ids "$d/method-ids.txt" >"$d/tool.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$d/tool.log"
    bad "default mode: instrumenting exited with status $rc"
  else
    java -cp "$WORK_DIR/tools" CallTree --names "$d/method-ids.txt" >"$d/names"
    skipped=0
    for p in "${PROGRAMS[@]}"; do
      rc=0
      java -Xverify:all -Dbeatlinetest.out="$d/$p.trace" -cp "$d/instr:$WORK_DIR/rec" "$p" \
        >"$d/$p.out" 2>"$d/$p.err" || rc=$?
      [ "$rc" -eq 0 ] || { head -n 20 "$d/$p.err"; bad "default mode $p: exits with $rc"; continue; }
      cmp -s "$d/$p.out" "$WORK_DIR/jdk17/$p.orig.out" || bad "default mode $p: stdout differs from the original's"
      java -cp "$WORK_DIR/tools" CallTree "$d/$p.trace" "$d/method-ids.txt" >"$d/$p.tree"
      # Drop the calls of methods without an id; such a call must have no children.
      awk -v names="$d/names" -v prog="$p" '
        BEGIN { while ((getline n < names) > 0) have[n] = 1 }
        function depth(s) { match(s, /^ */); return RLENGTH / 2 }
        { line[NR] = $0 }
        END {
          for (k = 1; k <= NR; k++) {
            s = line[k]; name = s; sub(/^ */, "", name)
            if (s ~ /^== / || (name in have)) { print s; continue }
            if (k < NR && line[k + 1] !~ /^== / && depth(line[k + 1]) > depth(s))
              print "!! " name " has no methodId but calls instrumented methods" > "/dev/stderr"
            print "skipped " prog " " name > "/dev/stderr"
          }
        }' "$WORK_DIR/jdk17/$p.expected" >"$d/$p.expected" 2>>"$d/skipped.log"
      if diff -u --label "$p.tree without uninstrumented methods" --label "$p (default mode)" \
          "$d/$p.expected" "$d/$p.tree"; then
        echo "ok: default mode $p: same stdout, call tree as expected ($(grep -vc '^==' "$d/$p.tree") calls)"
      else
        bad "default mode $p: recorded call tree differs"
      fi
    done
    if grep '^!!' "$d/skipped.log"; then bad "default mode: a method that calls others was skipped"; fi
    skipped=$(grep -c '^skipped' "$d/skipped.log" || true)
    echo "default mode: $skipped calls of trivial methods left out, e.g.: $(grep '^skipped' "$d/skipped.log" | sort -u | head -n 3 | cut -d' ' -f3 | tr '\n' ' ')"
    [ "$skipped" -gt 0 ] || bad "default mode: no trivial method was skipped"
  fi
fi

echo "behaviour: ${#PROGRAMS[@]} programs x ${#MODES[@]} compile modes in $((SECONDS - start)) s"

if [ "${EXPECT_FAIL:-0}" = 1 ]; then
  [ "$status" -ne 0 ] || fail "the broken instrumenter was not caught"
  echo "behaviour_test: PASS (the broken instrumenter was caught)"
  exit 0
fi
[ "$status" -eq 0 ] || { echo "behaviour_test: FAIL"; exit 1; }
echo "behaviour_test: PASS"
