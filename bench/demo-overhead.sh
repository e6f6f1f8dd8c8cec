#!/usr/bin/env bash
# The demo's workload (scripts/demo step 4: Debian's ProGuard, obfuscated by
# itself and instrumented, shrinking commons-lang3) timed untraced and traced,
# issue 13's "probe cost in production" figure.
#
#   bench/demo-overhead.sh BUILD_DIR [RUNS] [INSTRUMENT_ARGS...]
#
# Prepares BUILD_DIR/demo-overhead/ (obfuscated.jar, instrumented.jar with
# beatline-instrument INSTRUMENT_ARGS), then times RUNS rounds (default 7) of
# four configurations (CONFIGS="plain off" picks some; JVM_OPTS adds JVM flags):
#   plain      obfuscated.jar, not instrumented
#   off        instrumented.jar + runtime jar, no beatline.server: runtime off
#   triggered  runtime on, beatline.uploadMode=triggered (gated ticker clock),
#              not sampled (SAMPLE_RATE=R sets beatline.sampleRate; default 0)
#   full       runtime on, uploadMode=full (NanoClock), the demo's ring settings
# ALT_INSTRUMENT="ARGS" (e.g. --no-guard) also makes instrumented-alt.jar with
# those beatline-instrument arguments and adds off-alt and triggered-alt: the
# same runs on it (before/after comparisons of the probes in one interleaved run);
# with ALT_RUNTIME as well, the -alt runs use both, and triggered-altjar the alt
# jar with this build's runtime.
# The server URL points at a closed port: nothing is uploaded; the spool
# lives in the work directory and is emptied before every round.
# Prints a table (min and median wall time, median CPU) and the load.
set -euo pipefail
build_dir=$(cd "${1:?usage: bench/demo-overhead.sh BUILD_DIR [RUNS] [INSTRUMENT_ARGS...]}" && pwd)
runs=${2:-7}
shift; [ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
J=${JAVA_LIB_DIR:-/usr/share/java}
G="$J/gson.jar"
R="$build_dir/lib/beatline-runtime.jar"
I="$build_dir/bin/beatline-instrument"
for f in "$R" "$I" "$J/proguard.jar" "$G" "$J/commons-lang3.jar"; do
  [ -r "$f" ] || { echo "demo-overhead: $f is missing" >&2; exit 1; }
done
JVM_OPTS=${JVM_OPTS:-}
A=""
[ -n "${ALT_RUNTIME:-}" ] && A=$(cd "$(dirname "$ALT_RUNTIME")" && pwd)/$(basename "$ALT_RUNTIME")
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS
w="$build_dir/demo-overhead"
mkdir -p "$w"
cd "$w"
if [ ! -s obfuscated.jar ]; then
  javac -d tools "$root/tests/realworld/JrtLibraryJar.java"
  java -cp tools JrtLibraryJar jdk-library.jar java.base java.logging java.sql java.xml \
    jdk.unsupported > jdk-library.log
  cat > obfuscate.pro <<EOP
-injars $J/proguard.jar(!META-INF/**)
-outjars obfuscated.jar
-libraryjars jdk-library.jar
-libraryjars $G
-printmapping mapping.txt
-keep public class proguard.ProGuard { public static void main(java.lang.String[]); }
-keepattributes SourceFile,LineNumberTable,Signature,*Annotation*
-renamesourcefileattribute SourceFile
-dontwarn **
-dontnote **
EOP
  java -jar "$J/proguard.jar" @obfuscate.pro > obfuscate.log 2>&1
fi
rm -f instrumented.jar instrumented-alt.jar
"$I" --names obfuscated "$@" obfuscated.jar -o instrumented.jar --method-ids method-ids.txt
if [ -n "${ALT_INSTRUMENT:-}" ]; then
  # shellcheck disable=SC2086
  "$I" --names obfuscated "$@" $ALT_INSTRUMENT obfuscated.jar -o instrumented-alt.jar \
    --method-ids method-ids-alt.txt
fi
cat > work.pro <<EOP
-injars $J/commons-lang3.jar(!META-INF/**)
-outjars work-output.jar
-libraryjars jdk-library.jar
-keep public class org.apache.commons.lang3.StringUtils { public *; }
-keep public class org.apache.commons.lang3.ArrayUtils { public *; }
-printmapping work-mapping.txt
-dontoptimize
-forceprocessing
-dontwarn **
-dontnote **
EOP
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
on="-Dbeatline.server=http://127.0.0.1:$port -Dbeatline.app=demo -Dbeatline.key=blk_ing_bench \
-Dbeatline.build=bench -Dbeatline.spool=$w/spool -Dbeatline.shutdownWaitMs=0"
# triggered runs are not sampled (beatline.sampleRate 0): by default 1 % of
# triggered sessions draw full mode and cost what `full` does (4-5x); that share
# is added to the figure by hand (docs/benchmarks.md), not left to chance
trig="-Dbeatline.uploadMode=triggered -Dbeatline.sampleRate=${SAMPLE_RATE:-0}"
# Rounds alternate between the configurations (plain, off, triggered, full,
# plain, ...) so that load from other programs on the machine hits them alike;
# one warm-up round first. Per configuration: minimum and median wall time,
# median CPU time (user + system, all threads: the JIT's compilations too).
configs=(plain off triggered full)
declare -A cmd=(
  [plain]="java $JVM_OPTS -cp obfuscated.jar:$G proguard.ProGuard @work.pro"
  [off]="java $JVM_OPTS -cp instrumented.jar:$G:$R proguard.ProGuard @work.pro"
  [triggered]="java $JVM_OPTS $on $trig -cp instrumented.jar:$G:$R proguard.ProGuard @work.pro"
  [full]="java $JVM_OPTS $on -Dbeatline.uploadMode=full -Dbeatline.mainBuffer=16777216 -Dbeatline.maxPendingRecords=67108864 -Dbeatline.spoolMaxFiles=100000 -Dbeatline.spoolMaxBytes=8589934592 -cp instrumented.jar:$G:$R proguard.ProGuard @work.pro"
)
# ALT_RUNTIME=JAR adds off-alt and triggered-alt: the same with another
# runtime jar (before/after comparisons in one interleaved run).
if [ -n "${ALT_RUNTIME:-}" ] || [ -n "${ALT_INSTRUMENT:-}" ]; then
  [ -n "$A" ] || A=$R
  X=instrumented.jar
  [ -n "${ALT_INSTRUMENT:-}" ] && X=instrumented-alt.jar
  cmd[off-alt]="java $JVM_OPTS -cp $X:$G:$A proguard.ProGuard @work.pro"
  cmd[triggered-alt]="java $JVM_OPTS $on $trig -cp $X:$G:$A proguard.ProGuard @work.pro"
  configs=(plain off off-alt triggered triggered-alt full)
  if [ -n "${ALT_RUNTIME:-}" ] && [ -n "${ALT_INSTRUMENT:-}" ]; then
    # both: the alt jar with this build's runtime too (the two changes apart)
    cmd[triggered-altjar]="java $JVM_OPTS $on $trig -cp $X:$G:$R proguard.ProGuard @work.pro"
    configs=(plain off off-alt triggered triggered-alt triggered-altjar full)
  fi
fi
[ -n "${CONFIGS:-}" ] && read -r -a configs <<< "$CONFIGS"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
: > times.txt
for round in $(seq 0 "$runs"); do
  for c in "${configs[@]}"; do
    rm -rf "$w/spool"
    /usr/bin/time -f "%e %U %S" -o t.txt ${cmd[$c]} > "run-$c.log" 2>&1 \
      || { tail -5 "run-$c.log" >&2; echo "demo-overhead: $c failed" >&2; exit 1; }
    [ "$round" -gt 0 ] && echo "$c $(cat t.txt)" >> times.txt
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-17s %6s %8s %8s  (s, %d rounds)\n' config min median cpu "$runs"
for c in "${configs[@]}"; do
  awk -v c="$c" '$1 == c { n++; w[n] = $2; u[n] = $3 + $4 }
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
    END { m = med(w, n); printf "%-17s %6.2f %8.2f %8.2f\n", c, w[1], m, med(u, n) }' times.txt
done
