#!/usr/bin/env bash
# beatline-instrument's launch hooks (issue 15): the class hierarchy resolved
# across the inputs and --classpath (android-all and a library jar), hooks on
# every declared lifecycle method of Application and Activity subclasses,
# none elsewhere, an unresolvable super class warned about once, and the
# rewritten classes verified (java -Xverify:all, ASM's analyzer) by
# tests/instrumenter/LaunchHooks.java.
#   instrument_launch_test.sh BUILD_DIR SCRATCH_DIR ANDROID_ALL_JAR
set -u
build=$(cd "$1" && pwd) || exit 1
bin="$build/bin/beatline-instrument"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
android=$3
J=/usr/share/java
rm -rf "$2"
mkdir -p "$2"
s=$(cd "$2" && pwd) || exit 1
cd "$s" || exit 1
export LC_ALL=C.UTF-8
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS
[ -f "$android" ] || { echo "missing $android (scripts/install-deps)"; exit 1; }
for l in asm asm-tree asm-analysis asm-util; do
  [ -f "$J/$l.jar" ] || { echo "missing $J/$l.jar (scripts/install-deps)"; exit 1; }
done
ASM="$J/asm.jar:$J/asm-tree.jar:$J/asm-analysis.jar:$J/asm-util.jar"
fails=0
pass=0
check() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

mkdir -p src/lib/x src/missing src/app/com/example src/compat/com/compat lib-classes missing-classes \
  app-classes compat-classes tools
# the library (on --classpath only): two levels below android.app.Activity
cat > src/lib/x/BaseActivity.java <<'EOF'
package x;
public class BaseActivity extends android.app.Activity {
    @Override protected void onCreate(android.os.Bundle b) { super.onCreate(b); }
}
EOF
cat > src/lib/x/MidActivity.java <<'EOF'
package x;
public abstract class MidActivity extends BaseActivity { protected abstract int layout(); }
EOF
# a library that is not given at all
cat > src/missing/Gone.java <<'EOF'
package missing;
public class Gone extends android.app.Activity { }
EOF
# an input jar of "library" classes (AndroidX-like): hooked too, as an input
cat > src/compat/com/compat/CompatActivity.java <<'EOF'
package com.compat;
public class CompatActivity extends android.app.Activity {
    @Override protected void onStart() { super.onStart(); }
}
EOF
cat > src/app/com/example/MainActivity.java <<'EOF'
package com.example;
import android.content.Context;
import android.os.Bundle;
import android.os.PersistableBundle;
/** Three levels below android.app.Activity through the library jar. */
public class MainActivity extends x.MidActivity {
    int n;
    @Override protected int layout() { return 7; }
    @Override protected void attachBaseContext(Context c) { super.attachBaseContext(c); }
    @Override protected void onCreate(Bundle b) {
        super.onCreate(b);
        if (b == null) { n = layout(); return; }
        try { n = Integer.parseInt(b.getString("n")); } catch (NumberFormatException e) { n = -1; }
        if (n > 100) throw new IllegalStateException("too many");
    }
    @Override public void onCreate(Bundle b, PersistableBundle p) { super.onCreate(b, p); }
    @Override protected void onStart() { super.onStart(); n++; }
    @Override protected void onRestart() { super.onRestart(); }
    @Override protected void onResume() {
        super.onResume();
        for (int i = 0; i < 3; i++) { if (n == i) return; }
        n--;
    }
    @Override protected void onPause() { super.onPause(); }
    public static void onStart(int x) { }
}
EOF
cat > src/app/com/example/App.java <<'EOF'
package com.example;
public class App extends android.app.Application {
    static int starts;
    @Override protected void attachBaseContext(android.content.Context c) { super.attachBaseContext(c); starts++; }
    @Override public void onCreate() { super.onCreate(); starts += 2; }
    @Override public void onTerminate() { super.onTerminate(); }
}
EOF
cat > src/app/com/example/Sub.java <<'EOF'
package com.example;
/** Below App (an input): an Application subclass too. */
public class Sub extends App { @Override public void onCreate() { super.onCreate(); starts += 3; } }
EOF
cat > src/app/com/example/Plain.java <<'EOF'
package com.example;
/** Same method names, not a subclass of Application or Activity. */
public class Plain {
    protected void onCreate(android.os.Bundle b) { System.out.println(b); }
    public void onStart() { System.out.println("s"); }
}
EOF
cat > src/app/com/example/Orphan.java <<'EOF'
package com.example;
public class Orphan extends missing.Gone {
    @Override protected void onCreate(android.os.Bundle b) { super.onCreate(b); }
}
EOF
cat > src/app/com/example/Orphan2.java <<'EOF'
package com.example;
public class Orphan2 extends missing.Gone {
    @Override protected void onResume() { super.onResume(); }
}
EOF
javac -nowarn --release 8 -cp "$android" -d lib-classes src/lib/x/*.java 2>/dev/null &&
  javac -nowarn --release 8 -cp "$android" -d missing-classes src/missing/Gone.java 2>/dev/null &&
  javac -nowarn --release 8 -cp "$android" -d compat-classes src/compat/com/compat/*.java 2>/dev/null &&
  javac -nowarn --release 8 -cp "$android:lib-classes:missing-classes" -d app-classes src/app/com/example/*.java 2>/dev/null &&
  (cd lib-classes && jar cf "$s/lib.jar" .) && (cd compat-classes && jar cf "$s/compat.jar" .) &&
  javac -nowarn -cp "$ASM" -d tools "$here/../instrumenter/LaunchHooks.java" || { echo "javac failed"; exit 1; }

# ---- the run ----------------------------------------------------------------
"$bin" -j2 --classpath "$android:lib.jar" app-classes compat.jar -o out --method-ids ids.txt 2> err.txt
rc=$?
check "run exits 0" $rc
[ "$rc" -eq 0 ] || cat err.txt
n=$(grep -c "warning: launch hooks: class missing/Gone " err.txt)
[ "$n" -eq 1 ]; check "missing super class warned once for two subclasses ($n)" $?
hooks=$(grep -o '[0-9][0-9]* launch hooks' err.txt)
[ "$hooks" = "8 launch hooks" ]
check "summary counts 8 launch hooks ($hooks)" $?
mkdir -p compat-out && (cd compat-out && jar xf ../out/compat.jar)

cat > expect.txt <<'EOF'
com/example/MainActivity onCreate (Landroid/os/Bundle;)V 3
com/example/MainActivity onStart ()V 4
com/example/MainActivity onResume ()V 5
com/example/MainActivity onRestart ()V 6
com/example/MainActivity attachBaseContext (Landroid/content/Context;)V 0
com/example/MainActivity onCreate (Landroid/os/Bundle;Landroid/os/PersistableBundle;)V 0
com/example/MainActivity onPause ()V 0
com/example/MainActivity onStart (I)V 0
com/example/MainActivity layout ()I 0
com/example/App attachBaseContext (Landroid/content/Context;)V 1
com/example/App onCreate ()V 2
com/example/App onTerminate ()V 0
com/example/Sub onCreate ()V 2
com/example/Plain onCreate (Landroid/os/Bundle;)V 0
com/example/Plain onStart ()V 0
com/example/Orphan onCreate (Landroid/os/Bundle;)V 0
com/example/Orphan2 onResume ()V 0
EOF
java -Xverify:all -cp "$ASM:tools" LaunchHooks "$android:lib.jar:missing-classes" app-classes out/app-classes expect.txt
check "app classes: hooks where expected, -Xverify:all and ASM" $?
echo "com/compat/CompatActivity onStart ()V 4" > expect-compat.txt
java -Xverify:all -cp "$ASM:tools" LaunchHooks "$android" compat-classes compat-out expect-compat.txt
check "input jar (AndroidX-like): hooked, verified" $?

# without --classpath: nothing below the library is resolved; App still is (android/app/Application by name)
"$bin" -j2 app-classes compat.jar -o out2 --method-ids ids2.txt 2> err2.txt
check "run without --classpath exits 0" $?
grep -q "warning: launch hooks: class x/MidActivity " err2.txt
check "without --classpath: the library class is named" $?
cmp -s ids.txt ids2.txt
check "method-ID file unchanged by the hooks (same with and without --classpath)" $?
printf 'com/example/MainActivity onCreate (Landroid/os/Bundle;)V 0\ncom/example/App onCreate ()V 2\n' > expect2.txt
java -Xverify:all -cp "$ASM:tools" LaunchHooks "$android:lib.jar:missing-classes" app-classes out2/app-classes expect2.txt
check "without --classpath: no guessing" $?

# a bad --classpath element is an error, nothing written
"$bin" --classpath "$s/nope.jar" app-classes -o out3 --method-ids ids3.txt 2> err3.txt
rc=$?
[ "$rc" -eq 1 ] && grep -q "error: --classpath" err3.txt && [ ! -e out3 ] && [ ! -e ids3.txt ]
check "missing --classpath element: exit 1, nothing written (rc $rc)" $?

# rules govern the probes, not the hooks; hooked classes instrumented again are refused
"$bin" --exclude 'com/**' compat.jar -o hooked.jar --method-ids ids4.txt 2> err4.txt
check "hooks without probes: exits 0" $?
mkdir -p hooked && (cd hooked && jar xf ../hooked.jar)
java -Xverify:all -cp "$ASM:tools" LaunchHooks "$android" compat-classes hooked expect-compat.txt
check "excluded by the rules: hooked all the same" $?
"$bin" hooked.jar -o again.jar --method-ids ids5.txt 2> err5.txt
rc=$?
[ "$rc" -eq 1 ] && grep -q "already instrumented (it calls io/beatline/runtime/Launch.enter/exit)" err5.txt &&
  [ ! -e again.jar ]
check "hooked classes instrumented again: refused (rc $rc)" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
