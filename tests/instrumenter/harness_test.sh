#!/usr/bin/env bash
# Checks the instrumenter test harnesses themselves (a test that cannot fail
# is a defect), with the ASM reference instrumenter
# (bench/AsmMatrixInstrumenter.java) standing in for beatline-instrument:
#
#   1. --mode full (Beatline's probe semantics done with ASM) must pass
#      verify_jars_test.sh on okio and commons-lang3;
#   2. --mode broken-maxs (probes without raising max_stack: unverifiable code)
#      must fail it;
#   3. --mode broken-no-exit (no exit probe before returns: code that verifies
#      but records wrong call trees) and --mode broken-handler-first (below)
#      must fail it;
#   4. behaviour_test.sh must pass with --mode full, and fail with
#      broken-no-exit, with matrix (Matrix's own probes: no catch-all handler,
#      so exceptions passing through a method leave it open) and with
#      broken-handler-first (the catch-all first in the exception table
#      shadows the method's own handlers: verifies, behaves differently).
#
#   tests/instrumenter/harness_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: $0 BUILD_DIR WORK_DIR" >&2; exit 2; }
BUILD_DIR=$(cd "$1" && pwd)
mkdir -p "$2"
WORK_DIR=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REF="$HERE/asm_reference.sh $WORK_DIR/asm-tools"
status=0
check() { # NAME EXPECTED(pass|fail) MODE SCRIPT [ENV...]
  local name=$1 want=$2 mode=$3 script=$4 rc=0
  shift 4
  env "$@" INSTRUMENT_CMD="$REF $mode" bash "$HERE/$script" "$BUILD_DIR" "$WORK_DIR/$name" \
    >"$WORK_DIR/$name.log" 2>&1 || rc=$?
  if { [ "$want" = pass ] && [ "$rc" -eq 0 ]; } || { [ "$want" = fail ] && [ "$rc" -eq 1 ]; }; then
    if [ "$want" = pass ]; then echo "ok: $name ($mode) passes"; else echo "ok: $name ($mode) fails, as it must:"; fi
    grep -E '^ *FAILURE: ' "$WORK_DIR/$name.log" | head -n 3 || true
  else
    echo "FAIL: $name ($mode) should $want but exited with $rc; log:"
    tail -n 30 "$WORK_DIR/$name.log"
    status=1
  fi
}
check verify-full pass full verify_jars_test.sh JARS="okio commons-lang3"
check verify-broken-maxs fail broken-maxs verify_jars_test.sh JARS="okio commons-lang3"
check verify-broken-no-exit fail broken-no-exit verify_jars_test.sh JARS="okio"
check verify-broken-handler-first fail broken-handler-first verify_jars_test.sh JARS="okio"
check behaviour-full pass full behaviour_test.sh
check behaviour-broken-no-exit fail broken-no-exit behaviour_test.sh MODES=jdk17
check behaviour-matrix fail matrix behaviour_test.sh MODES=jdk17
check behaviour-broken-handler-first fail broken-handler-first behaviour_test.sh MODES=jdk17
[ "$status" -eq 0 ] && echo "harness_test: PASS" || echo "harness_test: FAIL"
exit "$status"
