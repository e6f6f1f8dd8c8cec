#!/usr/bin/env bash
# The instrumenter builds alone and portably (issue 14, item 2).
#
#   instrument_only_build_test.sh SOURCE_DIR WORK_DIR
#
# Configures SOURCE_DIR with -DBEATLINE_INSTRUMENTER_ONLY=ON
# -DBEATLINE_POSIX_ONLY=ON into WORK_DIR/build (a folder of the calling build
# tree) while pkg-config sees only libzip and libdeflate
# (PKG_CONFIG_LIBDIR = a folder holding just their .pc files: jansson,
# SQLite, libmicrohttpd, libsodium, zstd, xxhash cannot be found), builds
# beatline-instrument (-j2, Debug, no LTO: about 15 s of CPU), checks that the
# binary links none of the server's libraries, and runs it: a class folder
# instrumented into an existing output folder (the POSIX replacement of
# renameat2(RENAME_EXCHANGE): rename aside, rename in) and into a jar, with
# the per-file fsyncs that stand in for syncfs. Prints "N passed, N failed".
set -u
src=$(cd "$1" && pwd) || exit 1
rm -rf "$2"
mkdir -p "$2"
w=$(cd "$2" && pwd) || exit 1
fails=0
pass=0
check() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

mkdir -p "$w/pc"
for p in libzip libdeflate; do
  dir=$(pkg-config --variable=pcfiledir "$p") || { echo "pkg-config: $p missing"; exit 1; }
  ln -s "$dir/$p.pc" "$w/pc/$p.pc"
done
PKG_CONFIG_LIBDIR="$w/pc" pkg-config --exists jansson
[ $? -ne 0 ]; check "jansson hidden from pkg-config" $?

PKG_CONFIG_LIBDIR="$w/pc" cmake -S "$src" -B "$w/build" -DBEATLINE_INSTRUMENTER_ONLY=ON \
  -DBEATLINE_POSIX_ONLY=ON -DCMAKE_BUILD_TYPE=Debug -DBEATLINE_LTO=OFF > "$w/configure.log" 2>&1
rc=$?
check "configures with only libzip and libdeflate" $rc
[ "$rc" -eq 0 ] || tail -n 20 "$w/configure.log"
cmake --build "$w/build" -j2 --target beatline-instrument > "$w/build.log" 2>&1
rc=$?
check "builds (POSIX.1-2008 + XSI only, -Werror)" $rc
[ "$rc" -eq 0 ] || grep -E "error|warning" "$w/build.log" | head -n 20
bin="$w/build/bin/beatline-instrument"
[ -x "$bin" ]; check "beatline-instrument built" $?
needed=$(readelf -d "$bin" 2>/dev/null | grep NEEDED)
echo "$needed" | grep -q 'libzip' && echo "$needed" | grep -q 'libdeflate'
check "links libzip and libdeflate" $?
! echo "$needed" | grep -Eq 'jansson|sqlite|microhttpd|sodium|zstd|xxhash'
check "links none of the server's libraries" $?
# the compiler's dependency files: which headers each object read
ndeps=$(find "$w/build" -name '*.o.d' | wc -l)
[ "$ndeps" -gt 10 ] && ! find "$w/build" -name '*.o.d' -exec cat {} + |
  grep -Eq '(jansson|sqlite3|microhttpd|sodium|zstd|xxhash)\.h'
check "no header of the server's libraries compiled in ($ndeps objects)" $?
! grep -Eq 'BEATLINE_HAVE_(RENAMEAT2_FN|SYNCFS)' "$w/build/CMakeCache.txt"
check "no Linux call probed in the POSIX build" $?

# ---- the POSIX fallbacks at work -------------------------------------------
mkdir -p "$w/src/p" "$w/classes"
cat > "$w/src/p/A.java" <<'EOF'
package p;
public class A { static int f(int x) { return x * 2 + 1; } public static void main(String[] a) { System.out.println(f(20)); } }
EOF
cat > "$w/src/Beatline.java" <<'EOF'
package io.beatline.runtime;
public final class Beatline { public static boolean on = true; public static int n; public static void i(int id) { n++; } public static void o(int id) { n++; } }
EOF
if javac -d "$w/classes" "$w/src/p/A.java" && mkdir -p "$w/stub" && javac -d "$w/stub" "$w/src/Beatline.java"; then
  mkdir -p "$w/out/p"
  echo old > "$w/out/p/stale.txt"
  "$bin" -q --no-skip-trivial "$w/classes" -o "$w/out" --method-ids "$w/ids.txt"
  check "class folder into an existing output folder" $?
  [ ! -e "$w/out/p/stale.txt" ] && [ -f "$w/out/p/A.class" ]
  check "the old output folder replaced" $?
  [ -z "$(find "$w" -maxdepth 1 -name '.*.bl*')" ]; check "no temporaries left" $?
  java -Xverify:all -cp "$w/out:$w/stub" p.A | grep -qx 41; check "instrumented class runs" $?
  grep -q ',p\.A f (I)I$' "$w/ids.txt"; check "method-ID file written" $?
  (cd "$w/classes" && jar cf "$w/a.jar" .) && "$bin" -q "$w/a.jar" -o "$w/a-out.jar" --method-ids "$w/ids2.txt"
  check "a jar" $?
  java -Xverify:all -cp "$w/a-out.jar:$w/stub" p.A | grep -qx 41; check "instrumented jar runs" $?
else
  check "javac" 1
fi

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
