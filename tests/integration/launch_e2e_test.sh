#!/usr/bin/env bash
# Issue 15 end to end: a small app written for the test (Application + two
# Activities, tests/runtime/android-launch, compiled against android-all),
# obfuscated with Debian's ProGuard (class names of the Application,
# Activities and Service kept, as AAPT's manifest rules do; everything else
# renamed), instrumented with --names obfuscated --classpath android-all
# (probes and launch hooks), run under Robolectric (LaunchE2ETest: a cold
# launch, TTFD, navigation to the second activity) with the runtime
# uploading to a real beatline-server on loopback.
#
#   launch_e2e_test.sh BUILD_DIR WORK_DIR ANDROID_ALL ROBO_CP ROBO_DEPS_DIR
#
# Checks: ProGuard renamed the helper class; the run uploads every batch
# (2xx, nothing refused) and sent its launch event; the server processes
# the batches; slow-methods shows the launch's calls under original names
# (retraced with mapping.txt) for the build.
# Then /launches: one cold launch with every phase and TTID/TTFD, and the
# launch call tree under original names; no event skipped by the server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ANDROID_ALL=$3
ROBO_CP=$4
ROBO_DEPS=$5
setup "$1" "$2"

LIB=$BUILD/lib
for f in "$LIB/beatline-launchapp.jar" "$LIB/beatline-runtime.jar" "$LIB/beatline-android.jar" "$ANDROID_ALL" \
  /usr/share/java/proguard.jar; do
  [ -f "$f" ] || { echo "missing $f (build the runtime tests / scripts/install-deps)" >&2; exit 1; }
done

# --- the app: obfuscated, then instrumented ----------------------------------
javac -d tools "$HERE/../realworld/JrtLibraryJar.java"
java -cp tools JrtLibraryJar jdk.jar java.base > /dev/null
# ProGuard 6.2.2 reads class files up to Java 13: android-all's android/**
# with the major version set to 55 (library classes are read for their
# hierarchy and members only; as tests/runtime/android/aar_test.sh does)
python3 - "$ANDROID_ALL" android-lib.jar <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as out:
    for e in src.infolist():
        if not e.filename.endswith(".class") or not e.filename.startswith("android/"):
            continue
        b = bytearray(src.read(e))
        if len(b) > 8 and b[0:4] == b"\xca\xfe\xba\xbe" and (b[6] << 8 | b[7]) > 55:
            b[6], b[7] = 0, 55
        out.writestr(e.filename, bytes(b))
PY
cat > pg.pro <<PRO
-injars $LIB/beatline-launchapp.jar
-outjars obf.jar
-libraryjars jdk.jar
-libraryjars android-lib.jar
-libraryjars $LIB/beatline-runtime.jar
-libraryjars $LIB/beatline-android.jar
-dontshrink
-dontoptimize
-ignorewarnings
-keepattributes SourceFile,LineNumberTable
-keep public class * extends android.app.Application { public <init>(); }
-keep public class * extends android.app.Activity { public <init>(); }
-keep public class * extends android.app.Service { public <init>(); }
-printmapping mapping.txt
PRO
java -jar /usr/share/java/proguard.jar @pg.pro > proguard.log 2>&1 || { cat proguard.log; exit 1; }
work_obf=$(awk '$1 == "launchapp.Work" && $2 == "->" { sub(/:$/, "", $3); print $3 }' mapping.txt)
if [ -n "$work_obf" ] && [ "$work_obf" != "launchapp.Work" ]; then ok; else bad "ProGuard renamed launchapp.Work ($work_obf)"; fi
"$BIN/beatline-instrument" -q --names obfuscated --classpath "$ANDROID_ALL" obf.jar -o obf-instr.jar \
  --method-ids method-ids.txt
expect "instrumented" 0 "$?"
mkdir -p x && (cd x && jar xf ../obf-instr.jar launchapp/MainActivity.class) &&
  javap -c -p -cp x launchapp.MainActivity > main.javap
expect_grep "launch hooks in the obfuscated MainActivity" "io/beatline/runtime/Launch.enter" "$(cat main.javap)"

# --- server ------------------------------------------------------------------
DATA=$WORK/data
create_app "$DATA" launchapp
start_server "$DATA"
http PUT /v1/apps/launchapp/builds/launch-e2e/mapping "$UPL" --data-binary @mapping.txt
expect "mapping created" 201 "$CODE"
put_ids launchapp launch-e2e method-ids.txt "method-ids created"

# --- the app under Robolectric, uploading to the server ------------------------
set +e
java -cp "$WORK/obf-instr.jar:$ROBO_CP" -Drobolectric.offline=true -Drobolectric.dependency.dir="$ROBO_DEPS" \
  -Drobolectric.logging.enabled=false -Dbeatline.test.launchServer="$URL" -Dbeatline.test.launchApp=launchapp \
  -Dbeatline.test.launchKey="$ING" -Dbeatline.test.launchBuild=launch-e2e \
  org.junit.runner.JUnitCore io.beatline.runtime.LaunchE2ETest > junit.log 2>&1
rc=$?
set -e
expect "the instrumented app's launch ran and uploaded (JUnit)" 0 "$rc"
[ "$rc" -eq 0 ] || tail -40 junit.log >&2
expect_grep "every batch accepted (2xx), the launch event among them" "e2e: uploaded=[1-9][0-9]* refused=0 launches=1" \
  "$(cat junit.log)"

# --- server side ---------------------------------------------------------------
n=0
for _ in $(seq 600); do
  n=$(curl -s "$URL/metrics" | awk '$1 == "beatline_batches_processed_total" { print $2 }')
  [ -n "$n" ] && [ "$n" -ge 1 ] && break
  sleep 0.05
done
if [ -n "$n" ] && [ "$n" -ge 1 ]; then ok; else bad "the server processed no batch ($n)"; fi
body=
for _ in $(seq 200); do
  http GET "/v1/apps/launchapp/slow-methods?build=launch-e2e&limit=1000" "$RD"
  body=$BODY
  grep -q '"launchapp.Work"' <<< "$body" && break
  sleep 0.05
done
expect "slow-methods 200" 200 "$CODE"
contains "the launch's calls under original names (retraced)" '"class": "launchapp.Work"' "$(jq . <<< "$body")"
contains "MainActivity.onCreate recorded" '"name": "onCreate"' "$(jq . <<< "$body")"

# --- /launches (the server half of issue 15) -----------------------------------
http GET "/v1/apps/launchapp/launches?build=launch-e2e" "$RD"
expect "launches 200" 200 "$CODE"
expect "kinds: exactly one cold launch" '[{"kind":"cold","count":1}]' \
  "$(jq -c '[.launches[] | {kind, count}]' <<< "$BODY")"
expect "phases of the cold launch, in lifecycle order" \
  "application_attach_base_context application_on_create activity_on_create activity_on_start activity_on_resume" \
  "$(jq -r '[.launches[0].phases[].phase] | join(" ")' <<< "$BODY")"
expect "each phase counted once" "1 1 1 1 1" "$(jq -r '[.launches[0].phases[].count] | map(tostring) | join(" ")' <<< "$BODY")"
expect "TTID counted once" 1 "$(jq '.launches[0].ttid.count' <<< "$BODY")"
expect "TTFD reported (Beatline.reportFullyDrawn)" 1 "$(jq '.launches[0].ttfd.count' <<< "$BODY")"
expect "TTFD >= TTID" true "$(jq '.launches[0].ttfd.max_us >= .launches[0].ttid.max_us' <<< "$BODY")"
expect "the launched activity, retraced" "launchapp.MainActivity" "$(jq -r '.launches[0].activity' <<< "$BODY")"
http GET "/v1/apps/launchapp/launches/tree?build=launch-e2e&kind=cold" "$RD"
expect "launch tree 200" 200 "$CODE"
contains "launch tree: original names" '"class": "launchapp.Work"' "$(jq . <<< "$BODY")"
contains "launch tree: MainActivity.onCreate" '"name": "onCreate"' "$(jq . <<< "$BODY")"
m=$(curl -s "$URL/metrics" | awk '/^beatline_events_malformed_total/ { s += $2 } END { print s + 0 }')
expect "no event skipped by the server" 0 "$m"

finish
