#!/bin/bash
# JVM acceptance of the instrumenter core: every class of five Debian jars is
# instrumented through bl_probe_instrument (probe_dump: every method gets an
# id; ids stride so that iconst/bipush/sipush/ldc all occur), then checked by
# ASM's CheckClassAdapter.verify and loaded + initialised under
# java -Xverify:all against a stub runtime (tests/instrumenter/java/VerifyDir).
#
#   core_jvm.sh BIN_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
bin=$1 src=$2 work=$3
command -v javac >/dev/null || { echo "javac missing: skipped"; exit 77; }
J=/usr/share/java
ASM=$J/asm.jar:$J/asm-tree.jar:$J/asm-analysis.jar:$J/asm-util.jar
rm -rf "$work" && mkdir -p "$work/j"
javac -d "$work/j" -cp "$ASM" "$src/tests/instrumenter/java/VerifyDir.java" \
    "$src/tests/instrumenter/java/io/beatline/runtime/Beatline.java"
deps=$J/okio.jar:$J/jsr305.jar:$J/error-prone-annotations.jar
fail=0
for jar in okio commons-lang3 asm okhttp guava; do
    out=$work/$jar
    # stride 4099: ids cover 0..~8M, so every push form is used
    "$bin/probe_dump" "$J/$jar.jar" "$out" io/beatline/runtime/Beatline 4099 2>"$work/$jar.log" \
        || { echo "$jar: probe_dump failed"; cat "$work/$jar.log"; fail=1; continue; }
    tail -1 "$work/$jar.log"
    cp -r "$work/j/io" "$out/"
    if ! java -Xverify:all -Xshare:off -cp "$ASM:$work/j" VerifyDir "$out" "$J/$jar.jar:$deps" \
        >"$work/$jar.verify" 2>&1; then
        echo "$jar: verification failed"; head -40 "$work/$jar.verify"; fail=1
    fi
    tail -1 "$work/$jar.verify"
    grep -q "asm failures 0, jvm failures 0" "$work/$jar.verify" || fail=1
done
exit $fail
