#!/usr/bin/env bash
# beatline-instrument --skip-small N (issue 13, the instrumentation's warm-up
# cost): methods of at most N bytes of bytecode are left alone (no probes, no
# id), larger ones are instrumented as before, 0 turns it off, bad values are
# usage errors (exit 2) and write nothing; the output runs under
# java -Xverify:all with a stub runtime that counts the probes.
#   instrument_skip_small_test.sh BUILD_DIR SCRATCH_DIR
set -u
build=$(cd "$1" && pwd) || exit 1
bin="$build/bin/beatline-instrument"
s="$2"
rm -rf "$s"
mkdir -p "$s"
cd "$s" || exit 1
fails=0
pass=0
check() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

mkdir -p src/io/beatline/runtime src/app stub classes
cat > src/io/beatline/runtime/Beatline.java <<'EOJ'
package io.beatline.runtime;
public final class Beatline {
    public static long enters, exits;
    public static boolean on = true;
    public static void i(int id) { enters++; }
    public static void o(int id) { exits++; }
}
EOJ
# small(): iload_0, invokestatic, ireturn = 5 bytes (a one-call forwarder);
# big(): a loop with calls, well over 16 bytes
cat > src/app/Sizes.java <<'EOJ'
package app;
public final class Sizes {
    static int small(int x) { return big(x); }
    static int big(int x) {
        int a = 0;
        for (int k = 0; k < x; k++) { a += Integer.bitCount(k) * 3 + Math.abs(a % 7); }
        return a;
    }
    public static void main(String[] args) {
        int r = small(10);
        System.out.println("r=" + r + " enters=" + io.beatline.runtime.Beatline.enters
            + " exits=" + io.beatline.runtime.Beatline.exits);
    }
}
EOJ
javac -d stub src/io/beatline/runtime/Beatline.java || exit 1
javac -cp stub -d classes src/app/Sizes.java || exit 1
plain=$(java -cp classes:stub app.Sizes)

"$bin" -q classes -o out0 --method-ids ids0.txt; check "no --skip-small exits 0" $?
grep -q ',app.Sizes small (I)I$' ids0.txt; check "without it the 5-byte method has an id" $?
grep -q ',app.Sizes big (I)I$' ids0.txt; check "and the large one" $?

"$bin" -q --skip-small 16 classes -o out16 --method-ids ids16.txt; check "--skip-small 16 exits 0" $?
grep -q ',app.Sizes small (I)I$' ids16.txt; check "--skip-small 16 leaves the 5-byte method alone" $(( $? == 0 ))
grep -q ',app.Sizes big (I)I$' ids16.txt; check "--skip-small 16 instruments the large one" $?
# main's exit comes after its print: main + big (+ small without the option)
out=$(java -Xverify:all -cp out0:stub app.Sizes)
[ "$out" = "${plain%enters=*}enters=3 exits=2" ]; check "no option: runs verified, 3 methods probed: $out" $?
out=$(java -Xverify:all -cp out16:stub app.Sizes)
[ "$out" = "${plain%enters=*}enters=2 exits=1" ]; check "--skip-small 16: runs verified, small not probed: $out" $?

"$bin" -q --skip-small 0 classes -o outz --method-ids idsz.txt; check "--skip-small 0 exits 0" $?
cmp -s ids0.txt idsz.txt; check "--skip-small 0 changes nothing" $?
"$bin" -q --skip-small 4 classes -o out4 --method-ids ids4.txt; check "--skip-small 4 exits 0" $?
grep -q ',app.Sizes small (I)I$' ids4.txt; check "--skip-small 4 keeps the 5-byte method (at most N)" $?
"$bin" -q --skip-small 5 classes -o out5 --method-ids ids5.txt; check "--skip-small 5 exits 0" $?
grep -q ',app.Sizes small (I)I$' ids5.txt; check "--skip-small 5 skips the 5-byte method" $(( $? == 0 ))

for bad in -1 65536 abc 12x ""; do
  "$bin" -q --skip-small "$bad" classes -o outbad --method-ids idsbad.txt 2> err.txt
  rc=$?
  [ "$rc" -eq 2 ] && grep -q -- "--skip-small" err.txt && [ ! -e outbad ] && [ ! -e idsbad.txt ]
  check "--skip-small '$bad' is a usage error naming the option, nothing written (rc $rc)" $?
done

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
