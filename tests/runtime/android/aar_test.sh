#!/usr/bin/env bash
# aar_test.sh BUILD_DIR ANDROID_ALL_JAR — checks <build>/lib/beatline-android.aar
# (issue 14): its entries, the manifest's provider, and that the consumer
# rules are valid ProGuard (Debian's ProGuard 6.2.2 parses and applies them,
# shrinking and renaming the AAR's classes against android-all) and keep
# what the runtime reaches by name: the probes, the fields its
# Atomic*FieldUpdaters name, the provider.
set -u
BUILD=$(cd "$1" && pwd) || exit 1
ANDROID_ALL=$2
AAR=$BUILD/lib/beatline-android.aar
PROGUARD=${PROGUARD_JAR:-/usr/share/java/proguard.jar}
pass=0
fail=0
expect() { # name, command...
    local name=$1
    shift
    if "$@"; then
        pass=$((pass + 1))
        echo "ok   $name"
    else
        fail=$((fail + 1))
        echo "FAIL $name"
    fi
}
mkdir -p "$BUILD/runtime-tests"
T=$(mktemp -d -p "$BUILD/runtime-tests" aar.XXXXXX) || exit 1
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT

expect "the AAR exists" test -s "$AAR"
(cd "$T" && unzip -q "$AAR") || { echo "FAIL cannot unzip $AAR"; echo "0 passed, 1 failed"; exit 1; }
for e in classes.jar AndroidManifest.xml proguard.txt R.txt; do
    expect "entry $e" test -e "$T/$e"
done
entries=$(unzip -Z1 "$T/classes.jar")
for c in io/beatline/runtime/Beatline.class io/beatline/runtime/LooperDispatch.class \
         io/beatline/runtime/android/BeatlineInitProvider.class io/beatline/runtime/android/AndroidStart.class \
         io/beatline/runtime/android/AndroidLifecycle.class io/beatline/runtime/android/AndroidDeviceInfo.class \
         io/beatline/runtime/android/AndroidLog.class io/beatline/runtime/android/AndroidUploadGate.class; do
    expect "classes.jar holds $c" grep -qx "$c" <<<"$entries"
done
expect "classes.jar holds no android.* class (compile-only)" bash -c '! grep -q "^android/" <<<"$1"' _ "$entries"

manifest_ok() {
    python3 - "$T/AndroidManifest.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
A = "{http://schemas.android.com/apk/res/android}"
root = ET.parse(sys.argv[1]).getroot()
ps = root.findall("./application/provider")
ok = len(ps) == 1 and ps[0].get(A + "name") == "io.beatline.runtime.android.BeatlineInitProvider" \
    and ps[0].get(A + "authorities") == "${applicationId}.beatline-init" \
    and ps[0].get(A + "exported") == "false"
perms = {p.get(A + "name") for p in root.findall("./uses-permission")}
ok = ok and {"android.permission.INTERNET", "android.permission.ACCESS_NETWORK_STATE"} <= perms
sys.exit(0 if ok else 1)
PY
}
expect "manifest: one provider, not exported, authority per app; INTERNET and ACCESS_NETWORK_STATE" manifest_ok

# ProGuard 6.2.2 reads class files up to Java 13 (major 57); android-all's
# are Java 17 (61): a copy of its classes with the major version set to 55
# (ProGuard reads library classes only for their hierarchy and members; the
# same trick as tests/realworld/JrtLibraryJar.java).
python3 - "$ANDROID_ALL" "$T/android-lib.jar" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as out:
    for e in src.infolist():
        if not e.filename.endswith(".class"):
            continue
        b = bytearray(src.read(e))
        if len(b) > 8 and b[0:4] == b"\xca\xfe\xba\xbe" and (b[6] << 8 | b[7]) > 55:
            b[6], b[7] = 0, 55
        out.writestr(e.filename, bytes(b))
PY
# android-all has no java.*: the running JDK's java.base, the same way
java "$(dirname "$0")/../../realworld/JrtLibraryJar.java" "$T/jdk-lib.jar" java.base >/dev/null 2>&1 \
    || echo "JrtLibraryJar failed"
# ProGuard: parse and apply the consumer rules (shrink + rename) to the
# AAR's classes; unresolved references (a class Android lacks, not covered
# by the rules' -dontwarn) fail the run.
java -jar "$PROGUARD" -injars "$T/classes.jar" -outjars "$T/out.jar" -libraryjars "$T/android-lib.jar" \
    -libraryjars "$T/jdk-lib.jar" \
    -include "$T/proguard.txt" -dontoptimize -printmapping "$T/map.txt" >"$T/proguard.log" 2>&1
rc=$?
expect "ProGuard parses and applies proguard.txt (exit 0)" test $rc -eq 0
[ $rc -eq 0 ] || tail -20 "$T/proguard.log"

# mapping lines: "io.beatline.runtime.Ring -> x:" then "    long published -> published"
kept_member() { # class, "type name"
    awk -v c="$1" -v m="$2" '
        /^[^ ]/ { in_c = ($1 == c) }
        in_c && index($0, "    " m " -> ") == 1 { split($0, p, " -> "); n = substr(m, index(m, " ") + 1); sub(/\(.*/, "", n); if (p[2] == n) found = 1 }
        END { exit found ? 0 : 1 }' "$T/map.txt"
}
kept_class() { grep -q "^$1 -> $1:\$" "$T/map.txt"; }
expect "Beatline keeps its name" kept_class io.beatline.runtime.Beatline
expect "probe i(int) kept by name" kept_member io.beatline.runtime.Beatline "void i(int)"
expect "probe o(int) kept by name" kept_member io.beatline.runtime.Beatline "void o(int)"
expect "Launch keeps its name (issue 15: launch hooks)" kept_class io.beatline.runtime.Launch
expect "hook enter(int) kept by name" kept_member io.beatline.runtime.Launch "void enter(int)"
expect "hook exit(int) kept by name" kept_member io.beatline.runtime.Launch "void exit(int)"
expect "Ring.published kept (AtomicLongFieldUpdater)" kept_member io.beatline.runtime.Ring "long published"
expect "TickerClock.now kept (AtomicLongFieldUpdater)" kept_member io.beatline.runtime.TickerClock "long now"
expect "TickerClock.active kept (AtomicIntegerFieldUpdater)" kept_member io.beatline.runtime.TickerClock "int active"
expect "DispatchMonitor.start kept (AtomicLongFieldUpdater)" kept_member io.beatline.runtime.DispatchMonitor "long start"
expect "the provider keeps its name" kept_class io.beatline.runtime.android.BeatlineInitProvider
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
