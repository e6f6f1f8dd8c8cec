#!/usr/bin/env bash
# beatline-instrument and the runtime's callback interfaces (issue 14,
# re-entry): in a class that lists io/beatline/runtime/Clock, ThreadPolicy,
# Log, DeviceInfo, Lifecycle or UploadGate among its own interfaces, the
# methods implementing the interface's methods (same name and descriptor)
# get no probes and no methodId (--skip-callbacks, the default), the class's
# other methods keep them; subclasses, classes that get the interface through
# another interface, and look-alikes keep theirs; --no-skip-callbacks
# instruments them all (so does a config file's `skip-callbacks no`); the
# summary line counts them. The app classes are
# compiled against the real runtime jar (so the instrumenter's list of
# interface methods is checked against the real interfaces), and run under
# java -Xverify:all with a stub Beatline, first on the class path, that
# counts the probes.
#   instrument_callbacks_test.sh BUILD_DIR SCRATCH_DIR
set -u
build=$(cd "$1" && pwd) || exit 1
bin="$build/bin/beatline-instrument"
rt="$build/lib/beatline-runtime.jar"
s="$2"
rm -rf "$s"
mkdir -p "$s"
cd "$s" || exit 1
fails=0
pass=0
check() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
[ -f "$rt" ] || { echo "FAIL: no $rt"; echo "0 passed, 1 failed"; exit 1; }

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
# Every method calls something (--skip-trivial would leave it alone otherwise).
cat > src/app/Callbacks.java <<'EOJ'
package app;
import io.beatline.runtime.*;
public final class Callbacks {
    public static class MyClock implements Clock {
        private final long origin = System.nanoTime();
        @Override public long nowMicros() { return (System.nanoTime() - origin) / 1000L; }
        @Override public void close() { System.identityHashCode(this); }
        public long nowMicros(int scale) { return nowMicros() * Math.abs(scale); }
    }
    public static final class SubClock extends MyClock {
        @Override public long nowMicros() { return super.nowMicros() + Math.abs(-1); }
    }
    public interface AppClock extends Clock { }
    public static final class ViaAppClock implements AppClock {
        @Override public long nowMicros() { return System.nanoTime() / 1000L; }
        @Override public void close() { System.identityHashCode(this); }
    }
    public static final class LookAlike {
        public long nowMicros() { return System.nanoTime() / 1000L; }
    }
    public static final class MyPolicy implements ThreadPolicy, Runnable {
        @Override public boolean isMain(Thread t) { return t.getName().equals("main"); }
        @Override public boolean trace(Thread t) { return !t.getName().startsWith("x"); }
        @Override public void run() { System.identityHashCode(this); }
    }
    public static final class MyLog implements Log {
        @Override public void warn(String msg) { System.identityHashCode(msg); }
        @Override public void debug(String msg) { System.identityHashCode(msg); }
    }
    public static final class MyDevice implements DeviceInfo {
        @Override public String model() { return String.valueOf(1); }
        @Override public String osVersion() { return String.valueOf(2); }
        @Override public int sdkLevel() { return Integer.parseInt("3"); }
    }
    public static final class MyLifecycle implements Lifecycle {
        @Override public void install(Lifecycle.Hooks h) { System.identityHashCode(h); }
    }
    public static final class MyGate implements UploadGate {
        @Override public String blocked() { return String.valueOf((Object) null); }
    }
    public static void main(String[] args) {
        long t = 0;
        MyClock c = new MyClock();
        t += c.nowMicros(); c.close(); t += c.nowMicros(2);
        t += new SubClock().nowMicros();
        ViaAppClock v = new ViaAppClock();
        t += v.nowMicros(); v.close();
        t += new LookAlike().nowMicros();
        MyPolicy p = new MyPolicy();
        boolean b = p.isMain(Thread.currentThread()) & p.trace(Thread.currentThread());
        p.run();
        MyLog l = new MyLog(); l.warn("w"); l.debug("d");
        MyDevice d = new MyDevice();
        String m = d.model() + d.osVersion() + d.sdkLevel();
        new MyLifecycle().install(null);
        String g = new MyGate().blocked();
        System.out.println(m + g + b + (t != 0 ? "" : "")
            + " enters=" + io.beatline.runtime.Beatline.enters
            + " exits=" + io.beatline.runtime.Beatline.exits);
    }
}
EOJ
javac -d stub src/io/beatline/runtime/Beatline.java || exit 1
javac -cp "stub:$rt" -d classes src/app/Callbacks.java || exit 1
plain=$(java -cp "classes:stub:$rt" app.Callbacks)
plain=${plain%% enters=*}

# callbacks: MyClock nowMicros ()J, close ()V; MyPolicy isMain, trace; MyLog
# warn, debug; MyDevice model, osVersion, sdkLevel; MyLifecycle install;
# MyGate blocked = 11 methods (check's status argument is taken into a
# variable first where the name runs a command: $? would be the command's)
"$bin" classes -o out --method-ids ids.txt 2> err.txt; check "default run exits 0" $?
grep -q ' 11 runtime callbacks left without probes' err.txt
rc=$?; check "summary counts 11 callbacks: $(grep -o '[0-9]* runtime callbacks[^;]*' err.txt)" $rc
for m in 'MyClock nowMicros ()J' 'MyClock close ()V' \
         'MyPolicy isMain (Ljava/lang/Thread;)Z' 'MyPolicy trace (Ljava/lang/Thread;)Z' \
         'MyLog warn (Ljava/lang/String;)V' 'MyLog debug (Ljava/lang/String;)V' \
         'MyDevice model ()Ljava/lang/String;' 'MyDevice osVersion ()Ljava/lang/String;' \
         'MyDevice sdkLevel ()I' \
         'MyLifecycle install (Lio/beatline/runtime/Lifecycle$Hooks;)V' \
         'MyGate blocked ()Ljava/lang/String;'; do
  grep -qF ",app.Callbacks\$$m" ids.txt
  check "callback $m: no methodId" $(( $? == 0 ))
done
for m in 'MyClock nowMicros (I)J' 'SubClock nowMicros ()J' 'ViaAppClock nowMicros ()J' \
         'ViaAppClock close ()V' 'LookAlike nowMicros ()J' 'MyPolicy run ()V'; do
  grep -qF ",app.Callbacks\$$m" ids.txt
  check "not a direct callback, keeps its id: $m" $?
done
# probed at run time: main (its exit after the print), MyClock.nowMicros(int),
# SubClock.nowMicros, ViaAppClock.nowMicros + close, LookAlike.nowMicros,
# MyPolicy.run = 7, and 10 constructors (MyClock twice: once as SubClock's
# super) = 17 enters, 16 exits; the 11 callbacks: none
out=$(java -Xverify:all -cp "out:stub:$rt" app.Callbacks)
[ "$out" = "$plain enters=17 exits=16" ]; check "runs verified, callbacks not probed: $out" $?

"$bin" --no-skip-callbacks classes -o outall --method-ids idsall.txt 2> errall.txt
check "--no-skip-callbacks exits 0" $?
grep -q ' 0 runtime callbacks left without probes' errall.txt; check "--no-skip-callbacks: summary 0" $?
grep -qF ',app.Callbacks$MyClock nowMicros ()J' idsall.txt
check "--no-skip-callbacks: MyClock.nowMicros has an id" $?
n1=$(grep -c ',app\.' ids.txt)
nall=$(grep -c ',app\.' idsall.txt)
[ "$nall" -eq $((n1 + 11)) ]; check "--no-skip-callbacks: 11 ids more ($n1 / $nall)" $?
# the 11 callbacks once each, and MyClock.nowMicros() twice more (from
# nowMicros(int) and SubClock's super call): 17 + 13 = 30
out=$(java -Xverify:all -cp "outall:stub:$rt" app.Callbacks)
[ "$out" = "$plain enters=30 exits=29" ]; check "--no-skip-callbacks: runs verified, all probed: $out" $?

"$bin" -q --no-skip-callbacks --skip-callbacks classes -o outlast --method-ids idslast.txt
check "the last of --no-skip-callbacks / --skip-callbacks wins: exits 0" $?
cmp -s ids.txt idslast.txt; check "the last one wins: same ids as the default" $?

# the config file's skip-callbacks, and the command line over it
printf 'skip-callbacks no\n' > no.cfg
printf 'skip-callbacks yes\n' > yes.cfg
"$bin" -q --config no.cfg classes -o outcfg --method-ids idscfg.txt
check "config skip-callbacks no: exits 0" $?
cmp -s idsall.txt idscfg.txt; check "config skip-callbacks no: the ids of --no-skip-callbacks" $?
"$bin" -q --config no.cfg --skip-callbacks classes -o outcfg2 --method-ids idscfg2.txt
check "config no + --skip-callbacks: exits 0" $?
cmp -s ids.txt idscfg2.txt; check "the command line wins over the config file" $?
"$bin" -q --config yes.cfg classes -o outcfg3 --method-ids idscfg3.txt
check "config skip-callbacks yes: exits 0" $?
cmp -s ids.txt idscfg3.txt; check "config skip-callbacks yes: the default's ids" $?
printf 'skip-callbacks maybe\n' > bad.cfg
"$bin" -q --config bad.cfg classes -o outbad --method-ids idsbad.txt 2> errbad.txt
rc=$?
[ "$rc" -ne 0 ] && grep -q 'bad.cfg:1: skip-callbacks must be yes or no' errbad.txt && [ ! -e outbad ] &&
  [ ! -e idsbad.txt ]
check "config skip-callbacks maybe: refused naming file:line, nothing written (rc $rc)" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
