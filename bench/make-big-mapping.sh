#!/usr/bin/env bash
# make-big-mapping.sh OUTDIR
#
# Produces a large, real ProGuard mapping for retrace benchmarks:
#   OUTDIR/big-mapping.txt        (aim: 60-120 MB, with inline frames)
#   OUTDIR/big-obfuscated.jar     (the obfuscated + optimized classes)
#   OUTDIR/big-inputs.txt         ("CLASSES<TAB>GROUP<TAB>JAR" of the input jars)
#   OUTDIR/big-proguard-K.log     (ProGuard's output, one per shard K)
# by running Debian's ProGuard 6.2.2 over the jars of many Debian Java library
# packages (obfuscation + one optimization pass with inlining, -dontshrink so
# that every class and member stays in the mapping).
#
# ProGuard 6.2.2 is single-threaded and needs ~9 CPU minutes for the ~40,000
# input classes, so by default the jars are split into BIG_MAPPING_SHARDS=2
# balanced shards run in parallel (one per core). Each shard's obfuscated
# classes are moved into their own top-level package (-flattenpackagehierarchy
# a / b / ...), so the shard mappings concatenate into one consistent mapping
# and the shard jars merge into one jar. BIG_MAPPING_SHARDS=1 runs ProGuard
# once over all jars together (no package flattening).
#
# ProGuard 6.2.2 reads class files up to Java 13 only, while the JDK here is
# newer: the library jar is built from the running JDK's jrt:/ image with the
# class-file major version lowered to 55 (bench/BenchJars.java, compiled here).
#
# Input jars ProGuard cannot read or process are skipped with a note: the
# helper drops unreadable jars, too-new class files and duplicate classes up
# front; when ProGuard still fails, the jar it names is dropped (cannot read)
# or demoted to a library jar (cannot process a class, e.g. one whose
# superclasses are missing) and that shard is run again.
#
# Idempotent: does nothing when the outputs exist and are newer than this
# script and its helper. Generated files go under OUTDIR only.
set -euo pipefail

# Debian packages needed: the tools, then the libraries whose jars are the
# ProGuard input (every jar of these packages under /usr/share/java).
TOOL_PKGS=(proguard-cli default-jdk-headless unzip)
INPUT_PKGS=(
  libfastutil-java libbcprov-java libguava-java libsaxonhe-java libderby-java
  libnetty-java libcommons-math3-java libjgit-java libtrove3-java
  libxerces2-java libjackson2-core-java
  libokhttp-java libokio-java libcommons-lang3-java libcommons-io-java
  libcommons-collections4-java libjoda-time-java libasm-java junit4
  libhamcrest-java libguice-java libslf4j-java libproguard-java
  libmaven3-core-java libmaven-resolver-java libwagon-http-shaded-java
  libsisu-plexus-java libsisu-inject-java libplexus-utils2-java
  libmaven-shared-utils-java libcommons-cli-java libxalan2-java
)
# Packages whose jars only complete the inputs' class hierarchy (-libraryjars,
# not obfuscated): netty's logging classes extend log4j-api classes.
LIB_PKGS=(liblog4j2-java)
# Jars of those packages left out up front because ProGuard fails on them
# (classes whose superclasses live in packages not installed: servlet API,
# Apache HttpClient); a late failure would cost a whole extra ProGuard run.
# Left out for cost: libicu4j-java, libecj-java, libh2-java optimize 2-4x
# slower per mapping byte; libjackson2-databind-java has Java 17 class files;
# liblog4j2-java as input fails (log4j-core needs jackson-dataformat-xml).
EXCLUDE_JARS=(org.eclipse.jgit.http.server org.eclipse.jgit.lfs.server
  org.eclipse.jgit.http.apache)
PACKAGES=("${TOOL_PKGS[@]}" "${INPUT_PKGS[@]}" "${LIB_PKGS[@]}")

# JDK modules put in the library jar (java.base plus what the inputs use most).
JDK_MODULES=(java.base java.logging java.sql java.xml java.naming java.management
  java.desktop java.compiler java.scripting java.instrument java.rmi
  java.security.jgss java.net.http jdk.unsupported)
LIB_MAJOR=55      # class-file version of the library jar (Java 11)
MAX_IN_MAJOR=57   # newest class-file version ProGuard 6.2.2 reads (Java 13)
PROGUARD_JAR=/usr/share/java/proguard.jar
SHARDS=${BIG_MAPPING_SHARDS:-2}
JAVA_OPTS=(-Xmx6g -Xss16m)
MAX_ATTEMPTS=6

if [ "$#" -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
case "$SHARDS" in
  [1-9]) ;;
  *)
    echo "make-big-mapping: BIG_MAPPING_SHARDS must be 1..9" >&2
    exit 2
    ;;
esac
outdir=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$here/$(basename "${BASH_SOURCE[0]}")"
helper_src="$here/BenchJars.java"

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
mapping="$outdir/big-mapping.txt"
outjar="$outdir/big-obfuscated.jar"
inputs="$outdir/big-inputs.txt"

note() { echo "make-big-mapping: $*" >&2; }
human_size() {
  local b
  b=$(stat -c %s "$1")
  echo "$b bytes ($(((b + 524288) / 1048576)) MiB)"
}

if [ -s "$mapping" ] && [ -s "$outjar" ] &&
  [ "$mapping" -nt "$self" ] && [ "$mapping" -nt "$helper_src" ]; then
  echo "make-big-mapping: up to date: $mapping, $(human_size "$mapping")"
  exit 0
fi

start=$SECONDS

# --- 1. packages ---------------------------------------------------------------
# scripts/install-deps lists all of them (it is the only place packages come from)
bash "$here/../scripts/install-deps"
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    { note "$p is not installed: add it to scripts/install-deps"; exit 1; }
done

work="$outdir/.big-work"
rm -rf "$work" "$outdir"/big-proguard-*.log*
mkdir -p "$work/classes"

# --- 2. helper and library jar ---------------------------------------------------
javac -nowarn -d "$work/classes" "$helper_src"
libjar="$work/jdk-library-$LIB_MAJOR.jar"
java -cp "$work/classes" BenchJars jrt "$libjar" "$LIB_MAJOR" "${JDK_MODULES[@]}"

# --- 3. input jars ---------------------------------------------------------------
# Prints the jars of the packages given as arguments (symlinks resolved, minus
# EXCLUDE_JARS), largest first: a jar that bundles others, like asm-all, then
# wins over its parts when the helper drops jars with duplicate classes.
package_jars() {
  local p j r base x
  for p in "$@"; do
    dpkg -L "$p" | grep -E '^/usr/share/java/[^/]+\.jar$' || true
  done | while IFS= read -r j; do
    r=$(readlink -f "$j")
    base=$(basename "$j" .jar)
    for x in "${EXCLUDE_JARS[@]}"; do
      case "$base" in "$x" | "$x"-[0-9]*) continue 2 ;; esac
    done
    if [ -f "$r" ]; then printf '%s %s\n' "$(stat -c %s "$r")" "$r"; fi
  done | sort -u | sort -k1,1nr -k2,2 | cut -d' ' -f2-
}

# Keeps the jars ProGuard can read (readable zip, class files up to Java 13,
# no class already in an earlier jar). $1: output file, then the jars.
select_jars() {
  local out=$1
  shift
  if ! java -cp "$work/classes" BenchJars select "$MAX_IN_MAJOR" "$@" \
    > "$out" 2> "$work/select.log"; then
    cat "$work/select.log" >&2
    exit 1
  fi
  grep '^skip ' "$work/select.log" | grep -v ': no classes$' |
    sed 's/^/make-big-mapping: /' >&2 || true
  tail -n 1 "$work/select.log" >&2
}

mapfile -t cands < <(package_jars "${INPUT_PKGS[@]}")
select_jars "$inputs" "${cands[@]}"
mapfile -t cands < <(package_jars "${LIB_PKGS[@]}")
select_jars "$work/libextra.tsv" "${cands[@]}"
cut -f 3 "$work/libextra.tsv" > "$work/libextra.txt"

# --- 4. shards -------------------------------------------------------------------
# Jars that share a Java package (GROUP) stay in one shard: ProGuard neither
# renames nor moves a package that also has library classes, so a package
# split over two shards would give both shards' classes colliding names.
# Greedy balance by class count: biggest group first, onto the lightest shard.
awk -F '\t' '{ size[$2] += $1 } END { for (g in size) print size[g] "\t" g }' "$inputs" |
  sort -t "$(printf '\t')" -k1,1nr -k2,2n |
  awk -F '\t' -v n="$SHARDS" -v dir="$work" '
    NR == FNR {
      best = 0
      for (i = 1; i < n; i++) if (load[i] < load[best]) best = i
      load[best] += $1
      shard[$2] = best
      next
    }
    { print $3 > (dir "/shard-" shard[$2] ".txt") }' - "$inputs"
for ((k = 0; k < SHARDS; k++)); do
  touch "$work/shard-$k.txt" "$work/shard-$k.demoted"
done

shard_letters=(a b c d e f g h i)
filter='(!META-INF/**,!module-info.class,**.class)'

# Writes the ProGuard configuration of shard $1 to stdout.
shard_config() {
  local k=$1 j o
  while IFS= read -r j; do
    printf -- '-injars %s%s\n' "$j" "$filter"
  done < "$work/shard-$k.txt"
  printf -- '-outjars %s\n' "$work/obfuscated-$k.jar"
  printf -- '-libraryjars %s\n' "$libjar"
  # Library jars complete the class hierarchy, ProGuard leaves them as they
  # are: LIB_PKGS' jars, jars demoted from input, the other shards' inputs
  # (a class's superclasses may sit in another shard).
  {
    cat "$work/libextra.txt"
    for ((o = 0; o < SHARDS; o++)); do
      cat "$work/shard-$o.demoted"
      if [ "$o" -ne "$k" ]; then cat "$work/shard-$o.txt"; fi
    done
  } | while IFS= read -r j; do
    printf -- '-libraryjars %s%s\n' "$j" "$filter"
  done
  printf -- '-printmapping %s\n' "$work/mapping-$k.txt"
  if [ "$SHARDS" -gt 1 ]; then
    printf -- "-flattenpackagehierarchy '%s'\n" "${shard_letters[$k]}"
  fi
  cat <<'EOT'
-dontshrink
-optimizationpasses 1
-allowaccessmodification
-dontpreverify
-keepattributes SourceFile,LineNumberTable
-renamesourcefileattribute SourceFile
-ignorewarnings
-dontnote
-dontwarn
EOT
}

# Prints "read JAR" when ProGuard's log $2 says it cannot read input jar JAR
# of shard $1, or "process JAR" when it failed on a class of JAR (typically
# one whose superclasses are missing); nothing otherwise.
blamed_jar() {
  local k=$1 log=$2 bad cls j
  bad=$(grep -o "Can't read \[[^](]*" "$log" | head -n 1 | sed "s/^Can't read \[//" || true)
  if [ -n "$bad" ]; then
    if grep -xF "$bad" "$work/shard-$k.txt" > /dev/null; then echo "read $bad"; fi
    return 0
  fi
  # "Unexpected error while ...:\n  Class = [a/b/C]"
  cls=$(grep -A1 '^Unexpected error while' "$log" | grep -o 'Class *= \[[^]]*' |
    head -n 1 | sed 's/^Class *= \[//' || true)
  if [ -n "$cls" ]; then
    while IFS= read -r j; do
      if unzip -Z1 "$j" 2>/dev/null | grep -xF "$cls.class" > /dev/null; then
        echo "process $j"
        return 0
      fi
    done < "$work/shard-$k.txt"
  fi
}

# Runs ProGuard for shard $1. A jar it cannot read is dropped; a jar it cannot
# process is demoted to a library jar (so that jars depending on it still
# work); then the shard is run again.
run_shard() {
  local k=$1 attempt log blame what bad
  log="$outdir/big-proguard-$k.log"
  for ((attempt = 1; attempt <= MAX_ATTEMPTS; attempt++)); do
    shard_config "$k" > "$work/shard-$k.pro"
    rm -f "$work/mapping-$k.txt" "$work/obfuscated-$k.jar"
    note "shard $k: ProGuard over $(wc -l < "$work/shard-$k.txt") jars (attempt $attempt)"
    if java "${JAVA_OPTS[@]}" -jar "$PROGUARD_JAR" "@$work/shard-$k.pro" > "$log" 2>&1 &&
      [ -s "$work/mapping-$k.txt" ] && [ -s "$work/obfuscated-$k.jar" ]; then
      note "shard $k: done after $((SECONDS - start))s"
      return 0
    fi
    blame=$(blamed_jar "$k" "$log")
    if [ -z "$blame" ]; then
      tail -n 30 "$log" >&2
      note "shard $k: ProGuard failed, see $log"
      return 1
    fi
    what=${blame%% *}
    bad=${blame#* }
    cp "$log" "$log.failed-$attempt"
    if [ "$what" = process ]; then
      note "demote $bad to a library jar: ProGuard cannot process it (see $log.failed-$attempt)"
      echo "$bad" >> "$work/shard-$k.demoted"
    else
      note "skip $bad: ProGuard cannot read it (see $log.failed-$attempt)"
    fi
    grep -vxF "$bad" "$work/shard-$k.txt" > "$work/shard-$k.new" || true
    mv "$work/shard-$k.new" "$work/shard-$k.txt"
  done
  note "shard $k: giving up after $MAX_ATTEMPTS attempts"
  return 1
}

pids=()
for ((k = 0; k < SHARDS; k++)); do
  run_shard "$k" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
if [ "$failed" -ne 0 ]; then
  exit 1
fi

# --- 5. results ------------------------------------------------------------------
maps=()
jars=()
: > "$work/used.txt"
for ((k = 0; k < SHARDS; k++)); do
  maps+=("$work/mapping-$k.txt")
  jars+=("$work/obfuscated-$k.jar")
  cat "$work/shard-$k.txt" >> "$work/used.txt"
done
awk -F '\t' 'NR == FNR { used[$0] = 1; next } ($3 in used)' \
  "$work/used.txt" "$inputs" > "$work/inputs.new"
mv "$work/inputs.new" "$inputs"
if [ "$SHARDS" -eq 1 ]; then
  mv "${jars[0]}" "$outjar.tmp"
else
  java -cp "$work/classes" BenchJars merge "$outjar.tmp" "${jars[@]}"
fi
cat "${maps[@]}" > "$mapping.tmp"
# Every obfuscated class name must be unique in the combined mapping.
dups=$(awk '/^[^ #]/ { p = index($0, " -> "); if (p) print substr($0, p + 4) }' "$mapping.tmp" |
  sort | uniq -d | head -n 3 | tr "\n" " ")
if [ -n "$dups" ]; then
  note "obfuscated class names used twice in the combined mapping: $dups"
  exit 1
fi
mv "$outjar.tmp" "$outjar"
mv "$mapping.tmp" "$mapping"
rm -rf "$work"

elapsed=$((SECONDS - start))
classes=$(grep -c '^[^ #]' "$mapping" || true)
inline=$(grep -cE '^    [0-9]+:[0-9]+:[^ ].*\):[0-9]+(:[0-9]+)? -> ' "$mapping" || true)
echo "make-big-mapping: $mapping: $(human_size "$mapping"), $classes classes," \
  "$inline member lines with an original line range (inlined code)," \
  "$(wc -l < "$inputs") input jars, $SHARDS shard(s)"
echo "make-big-mapping: took $((elapsed / 60))m$((elapsed % 60))s"
