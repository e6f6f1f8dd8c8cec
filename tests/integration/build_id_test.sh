#!/usr/bin/env bash
# Build ids at the server and in the upload step (issue 14, item 3;
# schema/build-id.md): method-ID files written by beatline-instrument
# --version-name carry build-id= in their header.
#
#   build_id_test.sh BUILD_DIR WORK_DIR
#
# - uploaded under VERSION+SHORT (its own short id): 201 with "build_id";
# - a rebuild of the same version (new id) uploads under its own name: 201,
#   not the 409 of two different files under one versionName;
# - the same file under VERSION+<another short id>: 400 naming the id,
#   nothing stored (the build has no method-ID file);
# - under a name without a +SHORT suffix: accepted (not checked);
# - a file without build-id: "build_id": null;
# - scripts/upload-build --version-name derives the name from the header and
#   refuses (exit 2) a file without build-id or --build given as well.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
UPLOAD=$HERE/../../scripts/upload-build
mkdir -p src/app classes
cat > src/app/A.java <<'EOF'
package app;
public class A { static int f(int x) { return Integer.bitCount(x) + 1; } }
EOF
javac -d classes src/app/A.java
"$BIN/beatline-instrument" -q --version-name 7.1 classes -o o1 --method-ids ids1.txt
"$BIN/beatline-instrument" -q --version-name 7.1 classes -o o2 --method-ids ids2.txt
"$BIN/beatline-instrument" -q classes -o o0 --method-ids ids0.txt
hdr_id() { head -1 "$1" | sed -n 's/.* build-id=\([^ ]*\).*/\1/p'; }
short() { local x=${1//-/}; printf '%s' "${x:0:12}"; }
id1=$(hdr_id ids1.txt)
id2=$(hdr_id ids2.txt)
s1=$(short "$id1")
s2=$(short "$id2")
[ -n "$id1" ] && [ -n "$id2" ] && [ "$s1" != "$s2" ] && ok || bad "two runs, two build ids ($id1, $id2)"
# two files that differ in their header only: a versionName build would 409
cmp -s ids1.txt ids2.txt && bad "the two files are identical" || ok

create_app "$DATA" shop
start_server "$DATA"

put_ids shop "7.1%2B$s1" ids1.txt "own name: 201"
expect "own name: build_id in the answer" "$id1" "$(jq -r .build_id <<< "$BODY")"
put_ids shop "7.1%2B$s2" ids2.txt "rebuild of 7.1 under its own name: 201 (no 409)"

# the first file under the second build's name... and under a made-up one
http PUT "/v1/apps/shop/builds/7.2%2B$s2/method-ids" "$UPL" --data-binary @ids1.txt
expect "another build's short id: 400" 400 "$CODE"
contains "400 names the file's build id" "$id1" "$BODY"
http PUT "/v1/apps/shop/builds/7.2%2B$(tr 'a-f' 'A-F' <<< "$s1")/method-ids" "$UPL" --data-binary @ids1.txt
expect "short id in upper case matches: 201" 201 "$CODE"
# nothing was stored by the refusal: the build's own file is then "created"
put_ids shop "7.2%2B$s2" ids2.txt "the refused upload stored nothing (201)"
expect "... status created" created "$(jq -r .status <<< "$BODY")"

put_ids shop 7.1 ids1.txt "no +SHORT suffix: not checked, 201"
put_ids shop "7.3%2B$s1" ids0.txt "no build-id in the file: 201"
expect "no build-id: null" null "$(jq -c .build_id <<< "$BODY")"

# ---- scripts/upload-build --version-name ---------------------------------------
"$BIN/beatline-instrument" -q --version-name 8.0 classes -o o3 --method-ids ids3.txt
id3=$(hdr_id ids3.txt)
out=$(BEATLINE_UPLOAD_KEY=$UPL "$UPLOAD" --server "$URL" --app shop --version-name 8.0 \
  --method-ids ids3.txt 2>&1) && ok || bad "upload-build --version-name failed: $out"
contains "upload-build prints the build" "upload-build: build 8.0+$(short "$id3") (build id $id3)" "$out"
contains "the server created build 8.0+SHORT" "\"build\":\"8.0+$(short "$id3")\"" "$out"
contains "... with the file's build id" "\"build_id\":\"$id3\"" "$out"
rc=0
BEATLINE_UPLOAD_KEY=$UPL "$UPLOAD" --server "$URL" --app shop --version-name 8.0 \
  --method-ids ids0.txt > up.out 2>&1 || rc=$?
expect "upload-build --version-name without build-id: exit 2" 2 "$rc"
expect_grep "upload-build names the missing build-id" "no build-id=UUID" "$(cat up.out)"
rc=0
BEATLINE_UPLOAD_KEY=$UPL "$UPLOAD" --server "$URL" --app shop --version-name 8.0 --build x \
  --method-ids ids3.txt > up.out 2>&1 || rc=$?
expect "upload-build --build and --version-name: exit 2" 2 "$rc"

finish
