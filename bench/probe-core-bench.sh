#!/bin/bash
# The instrumenter core (parse + probe insertion, in memory, one thread)
# beside its anchor, an ASM Matrix-style instrumenter doing the same work in
# memory after JIT warm-up. Both print best/median of ROUNDS rounds.
#
#   bench/probe-core-bench.sh BUILD_DIR [JAR] [ROUNDS]
set -euo pipefail
build=$1 jar=${2:-/usr/share/java/guava.jar} rounds=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
J=/usr/share/java
ASM=$J/asm.jar:$J/asm-tree.jar:$J/asm-commons.jar
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
javac -d "$tmp" -cp "$ASM" "$here/AsmCoreBench.java"
echo "input: $jar ($(nproc) cores, $(uname -m))"
"$build/bin/bench_probe" "$jar" "$rounds"
java -cp "$ASM:$tmp" AsmCoreBench "$jar" "$rounds"
