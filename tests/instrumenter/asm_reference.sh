#!/usr/bin/env bash
# Runs the ASM reference instrumenter (bench/AsmMatrixInstrumenter.java) with
# the command line of beatline-instrument, compiling it first into TOOLS_DIR
# when needed. Lets the instrumenter tests check their own harness: with MODE
# full the tests must pass, with a broken-* mode they must fail.
#
#   tests/instrumenter/asm_reference.sh TOOLS_DIR MODE [beatline-instrument arguments]
#
# DEPS_CP (environment, optional): class path for ASM's frame computation.
set -euo pipefail
[ "$#" -ge 2 ] || { echo "usage: $0 TOOLS_DIR MODE ARGS..." >&2; exit 2; }
TOOLS=$1
MODE=$2
shift 2
JAVA_LIB_DIR=${JAVA_LIB_DIR:-/usr/share/java}
ASM_CP="$JAVA_LIB_DIR/asm.jar:$JAVA_LIB_DIR/asm-tree.jar:$JAVA_LIB_DIR/asm-commons.jar:$JAVA_LIB_DIR/asm-analysis.jar"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bench/AsmMatrixInstrumenter.java"
if [ ! -f "$TOOLS/AsmMatrixInstrumenter.class" ] || [ "$SRC" -nt "$TOOLS/AsmMatrixInstrumenter.class" ]; then
  mkdir -p "$TOOLS"
  javac -nowarn -cp "$ASM_CP" -d "$TOOLS" "$SRC"
fi
exec java -cp "$ASM_CP:$TOOLS" AsmMatrixInstrumenter --mode "$MODE" --classpath "${DEPS_CP:-}" "$@"
