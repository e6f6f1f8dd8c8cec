#!/usr/bin/env bash
# beatline-instrument on an AGP-shaped set of inputs (issue 14, item 1 and 4):
# what the Gradle recipe of docs/android-gradle.md hands the tool for one
# variant — 20 inputs: two class folders (javac, kotlinc), the R-class jar,
# and 17 jars all named classes.jar in different folders (16 libraries'
# .../transformed/<lib>/jars/classes.jar, one of them present twice in two
# cache folders, and a local module's classes.jar) — into one output folder.
#
# Checks: the run succeeds and each INPUT's output is OUTPUT/<position>/<base
# name> (the default layout when base names repeat; --layout position gives
# the same bytes, --layout names refuses and writes nothing); the two copies of
# one library give identical outputs; the method-ID file parses with the
# server's reader; every class of every output is verified like the Debian
# jars (tests/instrumenter/VerifyJars.java: java -Xverify:all, ASM's
# analyzer, probes with their ids) in one run over all outputs merged; the app
# runs instrumented.
#   instrument_agp_test.sh BUILD_DIR SCRATCH_DIR
set -u
build=$(cd "$1" && pwd) || exit 1
bin="$build/bin/beatline-instrument"
idcheck="$build/bin/instrument_idcheck"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
J=/usr/share/java
rm -rf "$2"
mkdir -p "$2"
s=$(cd "$2" && pwd) || exit 1
cd "$s" || exit 1
export LC_ALL=C.UTF-8
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS
LIBS=(commons-lang3 commons-io commons-codec commons-cli gson joda-time jackson-core
  jackson-annotations asm asm-tree okio hamcrest junit4 jsr305 commons-collections4)
for l in "${LIBS[@]}" asm-analysis asm-util; do
  [ -f "$J/$l.jar" ] || { echo "missing $J/$l.jar (scripts/install-deps)"; exit 1; }
done
fails=0
pass=0
check() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

# ---- the AGP-shaped tree ---------------------------------------------------
app=agp/app/build
javac_dir=$app/intermediates/javac/release/classes
kotlin_dir=$app/tmp/kotlin-classes/release
rjar=$app/intermediates/compile_and_runtime_not_namespaced_r_class_jar/release/R.jar
modjar=agp/mylib/build/intermediates/runtime_library_classes_jar/release/classes.jar
mkdir -p src/com/example/app src/com/example/lib src/r/com/example/app "$javac_dir" "$kotlin_dir" \
  "$(dirname "$rjar")" "$(dirname "$modjar")" stub tools lib-classes r-classes
cat > src/com/example/app/App.java <<'EOF'
package com.example.app;
public class App {
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    public static void main(String[] a) {
        String s = org.apache.commons.lang3.StringUtils.capitalize("agp");
        System.out.println(s + " " + fib(12) + " " + Helper.twice(R.string.app_name)
            + " " + com.example.lib.Lib.hello());
        System.out.println("open=" + (io.beatline.runtime.Beatline.ENTERS.get() - io.beatline.runtime.Beatline.EXITS.get()));
        try { // as the runtime reads the build name (schema/build-id.md)
            Class<?> c = Class.forName("io.beatline.build.BeatlineBuild", false, App.class.getClassLoader());
            System.out.println("build=" + c.getField("BUILD").get(null));
        } catch (ReflectiveOperationException e) { System.out.println("build=none"); }
    }
}
EOF
cat > src/com/example/app/Helper.java <<'EOF'
package com.example.app;
class Helper { static int twice(int x) { return x + x; } }
EOF
cat > src/com/example/lib/Lib.java <<'EOF'
package com.example.lib;
public class Lib { public static String hello() { return "lib:" + Integer.toHexString(42); } }
EOF
cat > src/r/com/example/app/R.java <<'EOF'
package com.example.app;
public final class R { public static final class string { public static int app_name = 0x7f010001; } }
EOF
javac --release 8 -d stub "$here/../instrumenter/stub/io/beatline/runtime/Beatline.java" &&
  javac -d r-classes src/r/com/example/app/R.java &&
  javac -d lib-classes src/com/example/lib/Lib.java &&
  javac -d "$javac_dir" -cp "r-classes:lib-classes:$J/commons-lang3.jar:stub" src/com/example/app/App.java \
    src/com/example/app/Helper.java &&
  javac -d "$kotlin_dir" -cp r-classes src/com/example/app/Helper.java &&
  rm -f "$javac_dir/com/example/app/Helper.class" &&
  (cd r-classes && jar cf "$s/$rjar" .) && (cd lib-classes && jar cf "$s/$modjar" .) &&
  javac -nowarn -cp "$J/asm.jar:$J/asm-tree.jar:$J/asm-analysis.jar:$J/asm-util.jar" -d tools \
    "$here/../instrumenter/VerifyJars.java" || { echo "javac failed"; exit 1; }
inputs=("$javac_dir" "$kotlin_dir")
k=0
for l in "${LIBS[@]}" commons-codec; do
  k=$((k + 1))
  d=agp/gradle/caches/transforms-3/$(printf '%032x' "$k")/transformed/$l/jars
  mkdir -p "$d"
  cp "$J/$l.jar" "$d/classes.jar"
  inputs+=("$d/classes.jar")
done
inputs+=("$modjar" "$rjar")
[ "${#inputs[@]}" -eq 20 ]; check "20 inputs (${#inputs[@]})" $?
n_classes_jar=$(printf '%s\n' "${inputs[@]}" | grep -c '/classes\.jar$')
[ "$n_classes_jar" -eq 17 ]; check "17 of them named classes.jar ($n_classes_jar)" $?

# ---- the run ----------------------------------------------------------------
"$bin" -j2 --no-skip-trivial "${inputs[@]}" -o out --method-ids ids.txt 2> err.txt; rc=$?
check "AGP-shaped run exits 0" $rc
[ "$rc" -eq 0 ] || cat err.txt
grep -q "same base name 'classes.jar'.*out/<position>/<base name>" err.txt
check "notice names the position layout" $?
bad=0
for i in "${!inputs[@]}"; do
  in=${inputs[$i]} o="out/$((i + 1))/$(basename "${inputs[$i]}")"
  if [ -d "$in" ]; then [ -d "$o" ] || bad=1; else [ -f "$o" ] || bad=1; fi
done
check "each output at OUTPUT/<position>/<base name>" $bad
[ "$(find out -mindepth 1 -maxdepth 1 | wc -l)" -eq 20 ]; check "20 numbered folders" $?
dup1=5 dup2=$((2 + ${#LIBS[@]} + 1))
cmp -s "out/$dup1/classes.jar" "out/$dup2/classes.jar"
check "one library in two folders: identical outputs ($dup1, $dup2)" $?
"$idcheck" ids.txt > /dev/null; check "method-ID file parses with the server's reader" $?
grep -q ',com\.example\.app\.App fib (I)I$' ids.txt && grep -q ',com\.example\.app\.Helper ' ids.txt &&
  grep -q ',com\.example\.lib\.Lib hello ' ids.txt && grep -q ',org\.objectweb\.asm\.tree\.' ids.txt
check "folders, module jar and libraries listed" $?

# the recipe's command (docs/android-gradle.md): --layout position, a build id
"$bin" -q -j1 --layout position --no-skip-trivial --version-name 1.0 --build-class gen \
  "${inputs[@]}" -o out-pos --method-ids ids-pos.txt
check "the recipe's command (--layout position --version-name --build-class) exits 0" $?
diff -r out out-pos > /dev/null && cmp -s <(tail -n +2 ids.txt) <(tail -n +2 ids-pos.txt)
check "--layout position (and -j1) gives the same bytes" $?
bid=$(head -1 ids-pos.txt | sed -n 's/.* build-id=\([^ ]*\).*/\1/p')
short=${bid//-/}
short=${short:0:12}
[ -n "$bid" ] && [ -f gen/io/beatline/build/BeatlineBuild.class ]
check "build id in the header ($bid) and the build class written" $?
"$bin" -q --layout names "${inputs[@]}" -o out-names --method-ids ids-names.txt 2> err-names.txt
[ $? -eq 1 ]; check "--layout names refuses equal base names (exit 1)" $?
grep -q "same base name 'classes.jar'.*--layout position" err-names.txt
check "--layout names message" $?
[ ! -e out-names ] && [ ! -e ids-names.txt ]; check "--layout names writes nothing" $?

# ---- every output verified: one VerifyJars run over all outputs merged --------
# The recipe's merge: the outputs in position order (a class name in two
# inputs: the first), then the build class (app.jar, which runs; VerifyJars
# checks instr-all.jar, the same without the build class, which has no
# original). The originals merged the same way.
python3 - "$s" "${inputs[@]}" <<'EOF' || { echo "merge failed"; exit 1; }
import os, sys, zipfile
base, inputs = sys.argv[1], sys.argv[2:]
def merge(dst, srcs):
    seen = set()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        for src in srcs:
            if os.path.isdir(src):
                for root, _, files in sorted(os.walk(src)):
                    for f in sorted(files):
                        p = os.path.join(root, f)
                        n = os.path.relpath(p, src).replace(os.sep, "/")
                        if n not in seen:
                            seen.add(n); z.write(p, n)
            else:
                with zipfile.ZipFile(src) as j:
                    for n in j.namelist():
                        if not n.endswith("/") and n not in seen:
                            seen.add(n); z.writestr(n, j.read(n))
outs = [os.path.join(base, "out-pos", str(i + 1), os.path.basename(p.rstrip("/")))
        for i, p in enumerate(inputs)]
merge(os.path.join(base, "orig-all.jar"), inputs)
merge(os.path.join(base, "instr-all.jar"), outs)
merge(os.path.join(base, "app.jar"), outs + [os.path.join(base, "gen")])
EOF
java -Xverify:all -Xss4m -cp "$J/asm.jar:$J/asm-tree.jar:$J/asm-analysis.jar:$J/asm-util.jar:tools" \
  VerifyJars --support stub orig-all.jar instr-all.jar ids-pos.txt > verify.log 2> verify.err
rc=$?
grep '^  FAILURE: ' verify.log | head -20
tail -n 3 verify.log
check "all 20 outputs verify (-Xverify:all, ASM analyzer, probes)" $rc
[ "$(grep -c '^  FAILURE: ' verify.log)" -eq 0 ]; check "0 verification failures" $?

java -Xverify:all -cp app.jar:stub com.example.app.App > run.txt 2>&1
check "the instrumented app runs" $?
# R.string.app_name * 2 overflows: 0x7f010001 + 0x7f010001 = -33423358
grep -qx 'Agp 144 -33423358 lib:2a' run.txt && grep -qx 'open=1' run.txt
check "app output and balanced probes" $?
grep -qx "build=1.0+$short" run.txt; check "the app reads its build name (1.0+$short)" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
