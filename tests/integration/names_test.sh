#!/usr/bin/env bash
# A method-ID file without the "names=obfuscated" header whose classes are
# obfuscated names of the build's mapping (instrumented after R8, the
# `--names obfuscated` flag forgotten) is warned about, in the upload answer
# and in GET …/builds (issue 11, item 4), whichever file comes first.
#
#   names_test.sh BUILD_DIR WORK_DIR
#
# Controls: the same file with the header, and a headerless file of
# original names, get no warning; replacing the file with a headed one
# clears the warning.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
# build_warnings BUILD COUNT: waits (bounded, 10 s) until GET …/builds shows
# BUILD registered with both files and COUNT warnings (the processor writes
# them); sets W to them
build_warnings() {
  local n
  for _ in $(seq 600); do
    http GET /v1/apps/shop/builds "$RD"
    # registered: both files in the row (written with the warnings, one
    # transaction) and symbolicated
    n=$(jq --arg b "$1" '.builds[] | select(.build == $b)
          | if .mapping != null and .method_ids != null and .symbolicated
            then .warnings | length else "not registered" end' <<< "$BODY")
    [ "$n" == "$2" ] && break
    sleep 0.05
  done
  W=$(jq -c --arg b "$1" '.builds[] | select(.build == $b) | .warnings' <<< "$BODY")
  expect "GET builds: $1 has $2 warning(s)" "$2" "$n"
}

cat > mapping.txt <<'MAP'
com.example.app.MainActivity -> com.example.app.MainActivity:
    void onCreate(android.os.Bundle) -> onCreate
com.example.app.Cart -> a.a:
    int total() -> a
    void add(java.lang.String) -> b
com.example.app.Store -> a.b:
    void open() -> a
com.example.util.Strings -> a.c:
    boolean blank(java.lang.String) -> a
MAP
# instrumented after R8, --names obfuscated forgotten: no header
cat > mids-obf.txt <<'MID'
0,1,com.example.app.MainActivity onCreate (Landroid/os/Bundle;)V
1,1,a.a a ()I
2,1,a.a b (Ljava/lang/String;)V
3,1,a.b a ()V
4,9,a.c a (Ljava/lang/String;)Z
MID
{ echo "# beatline method-ids v1 names=obfuscated"; cat mids-obf.txt; } > mids-obf-header.txt
# instrumented before R8: original names, no header needed
cat > mids-orig.txt <<'MID'
0,1,com.example.app.MainActivity onCreate (Landroid/os/Bundle;)V
1,1,com.example.app.Cart total ()I
2,1,com.example.app.Cart add (Ljava/lang/String;)V
3,1,com.example.app.Store open ()V
4,9,com.example.util.Strings blank (Ljava/lang/String;)Z
MID

create_app "$DATA" shop
start_server "$DATA"

# --- method-IDs first, then the mapping ----------------------------------------
put_ids shop m1 mids-obf.txt "m1 method-ids"
expect "m1 method-ids: no mapping yet, no warning" "[]" "$(jq -c .warnings <<< "$BODY")"
http PUT /v1/apps/shop/builds/m1/mapping "$UPL" --data-binary @mapping.txt
expect "m1 mapping" 201 "$CODE"
expect "m1 mapping answer: one warning" 1 "$(jq '.warnings | length' <<< "$BODY")"
w=$(jq -r '.warnings[0]' <<< "$BODY")
expect_grep "warning counts the obfuscated classes" "3 of its 4 classes are obfuscated names" "$w"
expect_grep "warning names the fix" "--names obfuscated" "$w"
expect_grep "warning names the header" "names=obfuscated" "$w"
build_warnings m1 1
expect_grep "GET builds: m1's warning is the same" "3 of its 4 classes are obfuscated names" "$W"

# --- the mapping first, then the method-IDs ----------------------------------------
http PUT /v1/apps/shop/builds/m2/mapping "$UPL" --data-binary @mapping.txt
expect "m2 mapping" 201 "$CODE"
expect "m2 mapping: no method-ID file yet, no warning" "[]" "$(jq -c .warnings <<< "$BODY")"
put_ids shop m2 mids-obf.txt "m2 method-ids"
expect "m2 method-ids answer: names read as original" original "$(jq -r .names <<< "$BODY")"
expect "m2 method-ids answer: one warning" 1 "$(jq '.warnings | length' <<< "$BODY")"
expect_grep "m2 warning" "probably written after R8/ProGuard" "$(jq -r '.warnings[0]' <<< "$BODY")"
build_warnings m2 1
# the fix: the headed file replaces it, the warning goes
http PUT '/v1/apps/shop/builds/m2/method-ids?replace=true' "$UPL" --data-binary @mids-obf-header.txt
expect "m2 replaced with the header" 200 "$CODE"
expect "m2 replaced: no warning" "[]" "$(jq -c .warnings <<< "$BODY")"
build_warnings m2 0

# --- what beatline-instrument writes without --names obfuscated: names=original
{ echo "# beatline method-ids v1 names=original max-id=4"; cat mids-obf.txt; } > mids-obf-original.txt
http PUT /v1/apps/shop/builds/m5/mapping "$UPL" --data-binary @mapping.txt
put_ids shop m5 mids-obf-original.txt "m5 names=original header over obfuscated names"
expect "m5: one warning" 1 "$(jq '.warnings | length' <<< "$BODY")"
build_warnings m5 1

# --- controls ----------------------------------------------------------------
http PUT /v1/apps/shop/builds/m3/mapping "$UPL" --data-binary @mapping.txt
put_ids shop m3 mids-obf-header.txt "m3 headed file"
expect "m3 headed file: no warning" "[]" "$(jq -c .warnings <<< "$BODY")"
http PUT /v1/apps/shop/builds/m4/method-ids "$UPL" --data-binary @mids-orig.txt
http PUT /v1/apps/shop/builds/m4/mapping "$UPL" --data-binary @mapping.txt
expect "m4 mapping" 201 "$CODE"
expect "m4 original names: no warning" "[]" "$(jq -c .warnings <<< "$BODY")"
# m1 is still warned about: wait for m3 and m4 to be registered, then check
build_warnings m3 0
build_warnings m4 0
build_warnings m1 1

stop_server
finish
