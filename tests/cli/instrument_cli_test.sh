#!/usr/bin/env bash
# beatline-instrument as a user runs it, on real Debian jars: outputs that
# load and run under `java -Xverify:all` with a stub runtime, method-ID files
# read back by the server's reader, determinism across -j and input order,
# --base-ids, rules and the config file, --no-skip-trivial, untouched
# non-class entries, signed jars, folders and single classes, and corrupt
# inputs (truncated jar, garbage class, zip-slip, duplicate names) that must
# fail with the entry named and nothing written.
#   instrument_cli_test.sh BUILD_DIR SCRATCH_DIR
set -u
build=$(cd "$1" && pwd) || exit 1
bin="$build/bin/beatline-instrument"
idcheck="$build/bin/instrument_idcheck"
s="$2"
rm -rf "$s"
mkdir -p "$s"
cd "$s" || exit 1
lang3=/usr/share/java/commons-lang3.jar
okio=/usr/share/java/okio.jar
for f in "$lang3" "$okio"; do
  [ -f "$f" ] || { echo "missing $f (scripts/install-deps)"; exit 1; }
done
fails=0
pass=0
check() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
neg() { [ "$1" -ne 0 ] && echo 0 || echo 1; } # status of "command failed"

# ---- stub runtime and a driver program ------------------------------------
mkdir -p src/io/beatline/runtime src/app stub classes
cat > src/io/beatline/runtime/Beatline.java <<'EOF'
package io.beatline.runtime;
public final class Beatline {
    public static long enters, exits;
    public static boolean on = true; // read by the guarded probes
    public static void i(int id) { if (id <= 0 || id > 8388607) throw new AssertionError(id); enters++; }
    public static void o(int id) { if (id <= 0 || id > 8388607) throw new AssertionError(id); exits++; }
}
EOF
cat > src/Lang3Main.java <<'EOF'
import org.apache.commons.lang3.StringUtils;
public class Lang3Main {
    public static void main(String[] a) {
        System.out.println(StringUtils.capitalize("hello") + " " + StringUtils.join(new int[]{1, 2, 3}, ','));
        System.out.println("enters=" + io.beatline.runtime.Beatline.enters + " exits=" + io.beatline.runtime.Beatline.exits);
    }
}
EOF
cat > src/app/App.java <<'EOF'
package app;
public class App {
    private int x;
    public int getX() { return x; }
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    static int risky(int n) {
        try { if (n > 3) throw new IllegalStateException("big"); return n; }
        catch (IllegalStateException e) { return -1; }
    }
    public static void main(String[] a) {
        System.out.println("fib=" + fib(10) + " risky=" + risky(5) + " x=" + new App().getX());
        // main itself has entered and not yet left
        System.out.println("open=" + (io.beatline.runtime.Beatline.enters - io.beatline.runtime.Beatline.exits)
                           + " enters=" + io.beatline.runtime.Beatline.enters);
    }
}
EOF
javac -d stub src/io/beatline/runtime/Beatline.java &&
  javac -d stub -cp "$lang3:stub" src/Lang3Main.java &&
  javac -d classes -cp stub src/app/App.java || { echo "javac failed"; exit 1; }
mkdir -p classes/io/beatline/runtime
cp stub/io/beatline/runtime/Beatline.class classes/io/beatline/runtime/ # never instrumented

# ---- a real jar: runs, ids parse, deterministic ---------------------------
"$bin" -j2 "$lang3" -o l2.jar --method-ids l2.ids 2> err.txt; rc=$?
check "commons-lang3 exits 0" $rc
grep -q "methods instrumented" err.txt; check "summary on stderr" $?
"$idcheck" l2.ids > count.txt; check "method-ID file parses with the server's reader" $?
n2=$(cut -d' ' -f1 count.txt)
[ "${n2:-0}" -gt 1000 ]; check "commons-lang3 has > 1000 methodIds ($n2)" $?
head -1 l2.ids | grep -q '^# beatline method-ids v1 names=original max-id='; check "header" $?
java -Xverify:all -cp l2.jar:stub Lang3Main > run.txt 2>&1; rc=$?
check "instrumented commons-lang3 runs under -Xverify:all" $rc
grep -q '^Hello 1,2,3$' run.txt; check "program output unchanged" $?
e=$(sed -n 's/^enters=\([0-9]*\) exits=\([0-9]*\)$/\1 \2/p' run.txt)
[ -n "$e" ] && [ "${e% *}" -gt 0 ] && [ "${e% *}" = "${e#* }" ]
check "probes fire, enters == exits ($e)" $?
java -cp "$lang3:stub" Lang3Main | grep -q '^enters=0 exits=0$'; check "uninstrumented jar: no probes" $?

"$bin" -q -j1 "$lang3" -o l1.jar --method-ids l1.ids; check "-j1 exits 0" $?
cmp -s l1.jar l2.jar; check "-j1 and -j2 jars byte-identical" $?
cmp -s l1.ids l2.ids; check "-j1 and -j2 method-ID files identical" $?
"$bin" -q "$lang3" -o l3.jar --method-ids l3.ids
cmp -s l3.jar l2.jar && cmp -s l3.ids l2.ids; check "second run identical" $?
"$bin" -q -j2 "$lang3" -o l3.jar --method-ids l3.ids
cmp -s l3.jar l2.jar; check "existing output replaced, still identical" $?
! ls -a | grep '\.bl[A-Za-z0-9]\{6\}'; check "no temporary files left" $?

# ---- non-class entries byte for byte, order and names kept ----------------
cmp -s <(unzip -Z1 "$lang3") <(unzip -Z1 l2.jar); check "entry names and order kept" $?
bad=0
while IFS= read -r ent; do
  case "$ent" in *.class|*/) continue ;; esac
  cmp -s <(unzip -p "$lang3" "$ent") <(unzip -p l2.jar "$ent") || { echo "differs: $ent"; bad=1; }
done < <(unzip -Z1 "$lang3")
check "non-class entries identical" $bad
# (method stor/def*, date, time; libzip marks its deflate streams "maximum")
cmp -s <(zipinfo "$lang3" | sed '1,2d;$d' | awk '{print substr($6, 1, 3), $7, $8, $9}') \
       <(zipinfo l2.jar | sed '1,2d;$d' | awk '{print substr($6, 1, 3), $7, $8, $9}')
check "compression method and timestamps of every entry kept" $?

# ---- input order and several inputs ----------------------------------------
"$bin" -q "$lang3" "$okio" -o multi1 --method-ids m1.ids; check "two inputs exit 0" $?
"$bin" -q "$okio" "$lang3" -o multi2 --method-ids m2.ids; check "two inputs reversed exit 0" $?
[ -f multi1/commons-lang3.jar ] && [ -f multi1/okio.jar ]; check "OUTPUT/<base name> per input" $?
cmp -s m1.ids m2.ids; check "method-ID file independent of input order" $?
cmp -s multi1/okio.jar multi2/okio.jar && cmp -s multi1/commons-lang3.jar multi2/commons-lang3.jar
check "output jars independent of input order" $?
grep -q ',okio\.' m1.ids && grep -q ',org\.apache\.commons\.lang3\.' m1.ids; check "both inputs listed" $?
"$idcheck" m1.ids > /dev/null; check "two-input method-ID file parses" $?
"$bin" -q --layout names "$lang3" "$(dirname "$lang3")/../java/commons-lang3.jar" -o multi3 \
  --method-ids m3.ids 2> err.txt
check "same base name twice refused with --layout names" "$(neg $?)"
grep -q "same base name" err.txt; check "same base name message" $?
[ ! -e multi3 ] && [ ! -e m3.ids ]; check "refused: nothing written" $?
# the default (auto) puts them at OUTPUT/<position>/<base name> (issue 14)
"$bin" -q "$lang3" "$(dirname "$lang3")/../java/commons-lang3.jar" -o multi4 --method-ids m4.ids
check "same base name twice: accepted by default" $?
[ -f multi4/1/commons-lang3.jar ] && [ -f multi4/2/commons-lang3.jar ] &&
  cmp -s multi4/1/commons-lang3.jar multi4/2/commons-lang3.jar
check "same base name twice: OUTPUT/1/ and OUTPUT/2/, identical" $?

# ---- --base-ids keeps ids; new methods above the largest --------------------
"$bin" -q --base-ids m1.ids "$lang3" -o b.jar --method-ids b.ids; check "--base-ids exits 0" $?
# every commons-lang3 line of the two-input file is unchanged (same id)
grep ',org\.apache\.commons\.lang3\.' m1.ids | sort > want.txt
sed 1d b.ids | sort > got.txt
cmp -s want.txt got.txt; check "base ids kept for every method" $?
max1=$(head -1 m1.ids | sed 's/.*max-id=//')
"$bin" -q --no-skip-trivial --base-ids b.ids "$lang3" -o bt.jar --method-ids bt.ids
check "--no-skip-trivial with base exits 0" $?
nb=$(sed 1d b.ids | wc -l); nt=$(sed 1d bt.ids | wc -l)
[ "$nt" -gt "$nb" ]; check "--no-skip-trivial adds methods ($nb -> $nt)" $?
! comm -23 <(sed 1d b.ids | sort) <(sed 1d bt.ids | sort) | grep -q .
check "old ids still there with --no-skip-trivial" $?
minnew=$(comm -13 <(sed 1d b.ids | sort) <(sed 1d bt.ids | sort) | cut -d, -f1 | sort -n | head -1)
[ "${minnew:-0}" -gt "$max1" ]; check "new ids above the base's max-id ($minnew > $max1)" $?
java -Xverify:all -cp bt.jar:stub Lang3Main | grep -q '^Hello 1,2,3$'; check "--no-skip-trivial jar runs" $?
"$idcheck" bt.ids > /dev/null; check "--no-skip-trivial file parses" $?
# a base listing one method twice with different ids: warned, smallest kept
dupline=$(sed -n 2p b.ids)
dupid=$(( max1 + 1000 ))
{ cat b.ids; echo "$dupid,${dupline#*,}"; } > bdup.ids
"$bin" -q --base-ids bdup.ids "$lang3" -o bd.jar --method-ids bd.ids 2> err.txt
check "duplicate in base exits 0" $?
grep -q "bdup.ids: 1 method(s) listed more than once" err.txt; check "duplicate in base warned" $?
grep -qx "$dupline" bd.ids; check "duplicate keeps the smaller id" $?

# ---- rules and config file ---------------------------------------------------
"$bin" -q --exclude 'org/apache/commons/lang3/text/' --exclude '**#to*' "$lang3" \
  -o r.jar --method-ids r.ids; check "--exclude exits 0" $?
grep -q ',org\.apache\.commons\.lang3\.text\.' l2.ids; check "(text package present without rules)" $?
grep -q ',org\.apache\.commons\.lang3\.text\.' r.ids; check "excluded package absent" "$(neg $?)"
grep -q '^[0-9]*,[0-9]*,[^ ]* to[^ ]* ' r.ids; check "excluded methods absent" "$(neg $?)"
cat > matrix.txt <<'EOF'
[package]
-keeppackage org/apache/commons/lang3/time/
# Matrix syntax, unchanged
-keepclass org/apache/commons/lang3/StringUtils
EOF
"$bin" -q --config matrix.txt "$lang3" -o m.jar --method-ids m.ids; check "Matrix black list exits 0" $?
grep -q ',org\.apache\.commons\.lang3\.StringUtils ' l2.ids; check "(StringUtils present without rules)" $?
grep -Eq ',org\.apache\.commons\.lang3\.(time\.|StringUtils )' m.ids
check "-keeppackage/-keepclass honoured" "$(neg $?)"
grep -q ',org\.apache\.commons\.lang3\.StringEscapeUtils ' m.ids; check "other classes kept" $?
cat > cfg.txt <<'EOF'
# beatline-instrument config
include org/apache/commons/lang3/math/
skip-trivial no
names obfuscated
threads 1
EOF
"$bin" -q --config cfg.txt "$lang3" -o c.jar --method-ids c.ids; check "config file exits 0" $?
sed 1d c.ids | grep -vq ',org\.apache\.commons\.lang3\.math\.'; check "include-only" "$(neg $?)"
head -1 c.ids | grep -q 'names=obfuscated'; check "names=obfuscated from config" $?
[ "$("$idcheck" c.ids | cut -d' ' -f2)" = 1 ]; check "reader sees obfuscated names" $?
printf 'exclude a/B\nbogus 1\n' > badcfg.txt
"$bin" -q --config badcfg.txt "$lang3" -o x.jar --method-ids x.ids 2> err.txt
check "bad config fails" "$(neg $?)"
grep -q 'badcfg.txt:2: unknown item' err.txt; check "bad config names file:line" $?
"$bin" -q --runtime-class com/example/Rt "$lang3" \
  -o rt.jar --method-ids rt.ids; check "--runtime-class exits 0" $?
unzip -p rt.jar org/apache/commons/lang3/StringUtils.class | grep -q 'com/example/Rt'
check "--runtime-class used in the classes" $?

# ---- class folder and single class ------------------------------------------
"$bin" -q classes -o classes-out --method-ids d.ids; check "folder exits 0" $?
java -Xverify:all -cp classes-out:stub app.App > run.txt 2>&1; check "instrumented folder runs" $?
grep -q '^fib=55 risky=-1 x=0$' run.txt && grep -q '^open=1 enters=[1-9]' run.txt
check "folder program output, probes balanced but for main" $?
grep -q ',app\.App fib (I)I' d.ids; check "fib has an id" $?
grep -q ',app\.App getX ' d.ids; check "getter skipped by default" "$(neg $?)"
grep -q 'io\.beatline\.runtime' d.ids; check "runtime classes never instrumented" "$(neg $?)"
cmp -s classes/io/beatline/runtime/Beatline.class classes-out/io/beatline/runtime/Beatline.class
check "runtime class copied unchanged" $?
"$bin" -q --no-skip-trivial classes -o classes-out --method-ids d2.ids
grep -q ',app\.App getX ' d2.ids; check "--no-skip-trivial: getter gets an id" $?
"$bin" -q classes/app/App.class -o App.class --method-ids s.ids; check "single class exits 0" $?
mkdir -p single/app && cp App.class single/app/
java -Xverify:all -cp single:stub app.App | grep -q '^fib=55'; check "single class runs" $?
cmp -s <(sed 1d s.ids) <(sed 1d d.ids | grep ',app\.App '); check "single class ids = folder ids" $?

# ---- signed jar: signature files dropped, still loads ----------------------
cp "$lang3" signed.jar
keytool -genkeypair -keystore ks.p12 -storetype PKCS12 -storepass secret1 -keypass secret1 \
  -alias bl -keyalg RSA -keysize 2048 -dname CN=beatline-test -validity 2 > /dev/null 2>&1 &&
  jarsigner -keystore ks.p12 -storepass secret1 signed.jar bl > /dev/null 2>&1
check "signing a copy of commons-lang3" $?
unzip -Z1 signed.jar | grep -q '^META-INF/BL\.SF$'; check "(signed jar has BL.SF)" $?
"$bin" signed.jar -o signed-out.jar --method-ids sg.ids 2> err.txt; check "signed jar exits 0" $?
grep -q 'dropped signature file META-INF/BL.SF' err.txt && grep -q 'META-INF/BL.RSA' err.txt
check "notice names the dropped signature files" $?
unzip -Z1 signed-out.jar | grep -Eq '^META-INF/[^/]*\.(SF|RSA|DSA|EC)$'; check "signature files gone" "$(neg $?)"
cmp -s <(unzip -p signed.jar META-INF/MANIFEST.MF) <(unzip -p signed-out.jar META-INF/MANIFEST.MF)
check "manifest kept as is" $?
java -Xverify:all -cp signed-out.jar:stub Lang3Main | grep -q '^Hello 1,2,3$'
check "java -cp signed-out.jar loads the classes" $?

# ---- zip64 archive (python's zipfile) ---------------------------------------
python3 - "$lang3" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile("z64.jar", "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        with src.open(info) as f, dst.open(info.filename, "w", force_zip64=True) as g:
            g.write(f.read())
EOF
"$bin" -q z64.jar -o z64-out.jar --method-ids z64.ids; check "zip64 jar exits 0" $?
cmp -s <(sed 1d z64.ids) <(sed 1d l2.ids); check "zip64 jar gives the same ids" $?
java -Xverify:all -cp z64-out.jar:stub Lang3Main | grep -q '^Hello'; check "zip64 output runs" $?

# ---- corrupt inputs: exit != 0, entry named, nothing written ----------------
echo old > keep.jar
echo old > keep.ids
fails_cleanly() { # name, expected message, args...
  local name=$1 msg=$2; shift 2
  "$bin" -q "$@" -o keep.jar --method-ids keep.ids > out.txt 2> err.txt; local rc=$?
  check "$name: exit != 0" "$(neg $rc)"
  grep -qF -- "$msg" err.txt || { echo "  stderr: $(head -3 err.txt)"; false; }
  check "$name: message names '$msg'" $?
  [ "$(cat keep.jar)" = old ] && [ "$(cat keep.ids)" = old ]; check "$name: outputs untouched" $?
  ! ls -a | grep '\.bl[A-Za-z0-9]\{6\}'; check "$name: no temporary left" $?
}
head -c 100000 "$lang3" > trunc.jar
fails_cleanly "truncated jar" "trunc.jar: cannot open as a jar" trunc.jar
python3 - "$lang3" <<'EOF'
import sys, zipfile
src = zipfile.ZipFile(sys.argv[1])
def copy(name, extra):
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist()[:40]:
            dst.writestr(info, src.read(info))
        for n, data in extra:
            dst.writestr(n, data)
copy("garbage.jar", [("com/x/Bad.class", b"\xca\xfe\xba\xbe" + b"\x00" * 5 + b"garbage")])
copy("slip.jar", [("../evil.txt", b"x")])
copy("abs.jar", [("/etc/evil.txt", b"x")])
import warnings
warnings.simplefilter("ignore")
copy("dup.jar", [("a/Dup.txt", b"1"), ("a/Dup.txt", b"2")])
EOF
fails_cleanly "garbage class in a jar" "garbage.jar!com/x/Bad.class:" garbage.jar
fails_cleanly "zip-slip entry" "slip.jar!../evil.txt: unsafe entry name" slip.jar
fails_cleanly "absolute entry" "abs.jar!/etc/evil.txt: unsafe entry name" abs.jar
fails_cleanly "duplicate entry" "dup.jar!a/Dup.txt: duplicate entry name" dup.jar
head -c 300 classes/app/App.class > Trunc.class
fails_cleanly "truncated class" "Trunc.class:" Trunc.class
mkdir -p keepdir && echo old > keepdir/commons-lang3.jar
"$bin" -q "$lang3" garbage.jar -o keepdir --method-ids keep.ids 2> err.txt
check "one bad input of two: exit != 0" "$(neg $?)"
grep -qF 'garbage.jar!com/x/Bad.class' err.txt; check "one bad input of two: entry named" $?
[ "$(ls keepdir)" = commons-lang3.jar ] && [ "$(cat keepdir/commons-lang3.jar)" = old ] &&
  [ "$(cat keep.ids)" = old ]; check "one bad input of two: nothing written" $?
[ ! -e evil.txt ] && [ ! -e ../evil.txt ]; check "nothing written outside" $?
printf '1,1,a.A x ()V\n1,1,a.A y ()V\n' > badbase.ids
fails_cleanly "bad base ids" "badbase.ids: line 2" --base-ids badbase.ids "$lang3"
fails_cleanly "missing input" "nope.jar: No such file" nope.jar
"$bin" -q "$okio" -o okio-probed.jar --method-ids okio-probed.ids
check "okio instrumented once" $?
fails_cleanly "instrumenting twice refused" "already instrumented" okio-probed.jar
# an instrumented class the rules exclude is left as it is (not refused)
"$bin" -q okio-probed.jar --exclude 'okio/**' -o okio-twice.jar --method-ids okio-twice.ids 2> err.txt
check "instrumented classes excluded: accepted" $?
cp "$lang3" same.jar
"$bin" -q same.jar -o same-out.jar --method-ids same.jar > /dev/null 2> err.txt
[ $? -eq 2 ] && grep -qF "is the input same.jar" err.txt && cmp -s same.jar "$lang3"
check "--method-ids naming an input: exit 2, input untouched" $?
"$bin" -q "$lang3" -o same-out.jar --method-ids ./same-out.jar > /dev/null 2>&1
[ $? -eq 2 ] && [ ! -e same-out.jar ]; check "--method-ids naming the output: exit 2" $?
ln -sf same.jar same-link.jar
"$bin" -q same-link.jar -o same.jar --method-ids same.ids > /dev/null 2> err.txt
[ $? -eq 2 ] && grep -qF "overlap" err.txt && cmp -s same.jar "$lang3" && [ -L same-link.jar ]
check "-o naming the input (through a symlink): exit 2, input untouched" $?

# ---- usage errors exit 2 ------------------------------------------------------
"$bin" > /dev/null 2>&1; [ $? -eq 2 ]; check "no arguments exits 2" $?
"$bin" "$lang3" --method-ids x.ids > /dev/null 2>&1; [ $? -eq 2 ]; check "no -o exits 2" $?
"$bin" "$lang3" -o x.jar > /dev/null 2>&1; [ $? -eq 2 ]; check "no --method-ids exits 2" $?
"$bin" -j 0 "$lang3" -o x.jar --method-ids x.ids > /dev/null 2>&1; [ $? -eq 2 ]; check "-j 0 exits 2" $?
"$bin" --names x "$lang3" -o x.jar --method-ids x.ids > /dev/null 2>&1; [ $? -eq 2 ]
check "bad --names exits 2" $?
"$bin" --bogus > /dev/null 2>&1; [ $? -eq 2 ]; check "unknown option exits 2" $?
"$bin" --help | grep -q '^usage: beatline-instrument'; check "--help" $?
[ ! -e x.jar ] && [ ! -e x.ids ]; check "usage errors write nothing" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
