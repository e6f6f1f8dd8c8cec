#!/bin/bash
# Seeds for fuzz_classfile: small real classes extracted from Debian jars
# (class files are never committed). Switches, exception tables, frames,
# lambdas, nested classes.
#
#   fuzz/seed-classfile.sh DIR
set -euo pipefail
dir=$1
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
J=/usr/share/java
x() { unzip -q -o -d "$tmp" "$J/$1" "$2"; cp "$tmp/$2" "$dir/$(basename "$2" .class | tr '$' '_')"; }
x commons-cli.jar 'org/apache/commons/cli/Option$Builder.class'
x commons-lang3.jar org/apache/commons/lang3/text/translate/NumericEntityUnescaper.class
x commons-lang3.jar 'org/apache/commons/lang3/time/FastDatePrinter$Iso8601_Rule.class'
x commons-lang3.jar org/apache/commons/lang3/concurrent/locks/LockingVisitors.class
x commons-lang3.jar 'org/apache/commons/lang3/ClassUtils$Interfaces.class'
x commons-lang3.jar org/apache/commons/lang3/function/FailableBiFunction.class
x commons-lang3.jar org/apache/commons/lang3/CharSetUtils.class
x okio.jar 'okio/Pipe$PipeSource.class'
echo "$(ls "$dir" | wc -l) seeds in $dir"
