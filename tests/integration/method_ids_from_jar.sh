#!/usr/bin/env bash
# Writes a method-ID file (schema/method-id-file.md) for every method of a
# jar, as the instrumenter would after R8/ProGuard: names as in the jar,
# header names=obfuscated. Uses javap (JDK), ids in javap order from 1.
#   method_ids_from_jar.sh JAR > method-ids.txt
set -euo pipefail
jar=$1
mapfile -t classes < <(unzip -Z1 "$jar" | grep '\.class$' | grep -v 'module-info' |
                       sed 's/\.class$//; s|/|.|g' | sort)
echo "# beatline method-ids v1 names=obfuscated"
javap -p -s -classpath "$jar" "${classes[@]}" | awk '
  function flags(line,   f) {
    f = 0
    if (line ~ /(^| )public /) f += 1
    if (line ~ /(^| )private /) f += 2
    if (line ~ /(^| )protected /) f += 4
    if (line ~ /(^| )static /) f += 8
    if (line ~ /(^| )final /) f += 16
    if (line ~ /(^| )synchronized /) f += 32
    if (line ~ /(^| )native /) f += 256
    if (line ~ /(^| )abstract /) f += 1024
    return f
  }
  /^[a-z].*(class|interface|enum) [^ ]+/ {
    for (i = 1; i <= NF; i++) if ($i == "class" || $i == "interface" || $i == "enum") { cls = $(i+1); break }
    sub(/<.*/, "", cls); sub(/\{$/, "", cls)
    simple = cls; sub(/.*\./, "", simple)
    next
  }
  /^  [^ ].*\(.*\)/ || /^  static \{\};/ {
    line = $0
    if (line ~ /static \{\};/) { name = "<clinit>"; fl = 8 }
    else {
      head = line; sub(/\(.*/, "", head)
      n = split(head, w, " "); name = w[n]
      sub(/<.*>/, "", name)
      if (name == cls) name = "<init>"
      fl = flags(line)
    }
    pending = 1
    next
  }
  /^    descriptor: / && pending {
    id++
    printf "%d,%d,%s %s %s\n", id, fl, cls, name, $2
    pending = 0
    next
  }
  { pending = pending && /^    / }
'
