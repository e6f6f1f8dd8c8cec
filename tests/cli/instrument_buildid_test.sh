#!/usr/bin/env bash
# beatline-instrument --build-id / --version-name / --build-class (issue 14,
# item 3; contract: schema/build-id.md): the id in the method-ID file header
# (read back by the server's reader), the generated class
# io.beatline.build.BeatlineBuild read by reflection under -Xverify:all as
# the runtime reads it, a new id per run with byte-identical instrumented
# classes, an id given in upper case, a version name outside the BMP, and
# the usage errors (bad UUID, bad or too long version name, --build-class in
# an input) that write nothing.
#   instrument_buildid_test.sh BUILD_DIR SCRATCH_DIR
set -u
build=$(cd "$1" && pwd) || exit 1
bin="$build/bin/beatline-instrument"
idcheck="$build/bin/instrument_idcheck"
rm -rf "$2"
mkdir -p "$2"
s=$(cd "$2" && pwd) || exit 1
cd "$s" || exit 1
export LC_ALL=C.UTF-8
fails=0
pass=0
check() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
# the header's build id
hdr_id() { head -1 "$1" | sed -n 's/.* build-id=\([^ ]*\).*/\1/p'; }
short() { local x=${1//-/}; printf '%s' "${x:0:12}"; }

mkdir -p src/app classes
cat > src/app/A.java <<'EOF'
package app;
public class A { static int f(int x) { return Integer.bitCount(x) + 1; }
  public static void main(String[] a) { System.out.println(f(7)); } }
EOF
# what the runtime does (schema/build-id.md): reflection, nothing initialised
cat > src/ReadBuild.java <<'EOF'
public class ReadBuild {
  public static void main(String[] a) throws Exception {
    Class<?> c = Class.forName("io.beatline.build.BeatlineBuild", false, ReadBuild.class.getClassLoader());
    System.out.println(c.getField("BUILD").get(null));
    System.out.println(c.getField("BUILD_ID").get(null));
    System.out.println(c.getField("VERSION_NAME").get(null));
    System.out.println(java.lang.reflect.Modifier.toString(c.getModifiers()) + " " + c.getDeclaredMethods().length
        + " " + c.getDeclaredConstructors().length);
  }
}
EOF
mkdir -p tools
javac -d classes src/app/A.java && javac -d tools src/ReadBuild.java || { echo "javac failed"; exit 1; }

# ---- no build options: no build-id (unchanged) --------------------------------
"$bin" -q classes -o o0 --method-ids ids0.txt; check "no build options exits 0" $?
[ -z "$(hdr_id ids0.txt)" ]; check "no build-id without the options" $?

# ---- --version-name and --build-class (imply --build-id auto) -----------------
"$bin" --version-name 7.1 --build-class gen1 classes -o o1 --method-ids ids1.txt 2> err1.txt
check "--version-name --build-class exits 0" $?
id1=$(hdr_id ids1.txt)
[[ "$id1" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
check "header build-id is a version-4 UUID ($id1)" $?
"$idcheck" ids1.txt > /dev/null; check "the file parses with the server's reader (strict)" $?
grep -q "build 7.1+$(short "$id1") (build id $id1)" err1.txt; check "summary names the build" $?
[ -f gen1/io/beatline/build/BeatlineBuild.class ]; check "class written below DIR" $?
java -Xverify:all -cp tools:gen1 ReadBuild > r1.txt 2>&1; check "class loads and reads (-Xverify:all)" $?
printf '7.1+%s\n%s\n7.1\npublic final 0 0\n' "$(short "$id1")" "$id1" | cmp -s - r1.txt
check "BUILD, BUILD_ID, VERSION_NAME, no methods ($(tr '\n' '|' < r1.txt))" $?

"$bin" -q --version-name 7.1 --build-class gen2 classes -o o2 --method-ids ids2.txt
check "second run exits 0" $?
id2=$(hdr_id ids2.txt)
[ -n "$id2" ] && [ "$id1" != "$id2" ]; check "a new id per run" $?
diff -r o1 o2 > /dev/null; check "instrumented classes byte-identical across runs" $?
diff <(sed 1d ids1.txt) <(sed 1d ids2.txt) > /dev/null; check "method-ID records identical" $?

# a previous build's file (with its build-id) as --base-ids: ids kept, new id
"$bin" -q --base-ids ids1.txt --version-name 7.2 classes -o o6 --method-ids ids6.txt
check "--base-ids of a file with build-id exits 0" $?
diff <(sed 1d ids1.txt) <(sed 1d ids6.txt) > /dev/null && [ "$(hdr_id ids6.txt)" != "$id1" ]
check "base ids kept, a new build id" $?

# ---- --build-id UUID (upper case in, lower case out), no version name -------
"$bin" -q --build-id 0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3 --build-class gen3 classes -o o3 \
  --method-ids ids3.txt
check "--build-id UUID exits 0" $?
[ "$(hdr_id ids3.txt)" = 0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3 ]; check "id lowercased in the header" $?
java -cp tools:gen3 ReadBuild > r3.txt 2>&1
printf '0a1b2c3d4e5f\n0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3\n\npublic final 0 0\n' | cmp -s - r3.txt
check "no version name: BUILD is the short id" $?

# ---- a version name outside the BMP and with a space (modified UTF-8) --------
v=$'7.2 \xf0\x9f\x9a\x80 beta'
"$bin" -q --version-name "$v" --build-class gen4 classes -o o4 --method-ids ids4.txt
check "non-BMP version name exits 0" $?
java -Xverify:all -Dfile.encoding=UTF-8 -Dstdout.encoding=UTF-8 -cp tools:gen4 ReadBuild > r4.txt 2>&1
[ "$(sed -n 3p r4.txt)" = "$v" ] && [ "$(sed -n 1p r4.txt)" = "$v+$(short "$(hdr_id ids4.txt)")" ]
check "non-BMP version name read back intact" $?

# ---- usage errors write nothing ---------------------------------------------
for bad in 'not-a-uuid' '0a1b2c3d4e5f4a6b8c7d8e9fa0b1c2d3' '0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d' \
  '0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2dg'; do
  "$bin" -q --build-id "$bad" --build-class genx classes -o ox --method-ids idsx.txt 2> errx.txt
  [ $? -eq 2 ] && grep -q -- "--build-id wants auto or a UUID" errx.txt
  check "--build-id '$bad' is a usage error" $?
done
long=$(printf 'v%.0s' $(seq 116))
"$bin" -q --version-name "$long" classes -o ox --method-ids idsx.txt 2> errx.txt
[ $? -eq 2 ] && grep -q "at most 115 fit" errx.txt; check "116-byte version name refused" $?
"$bin" -q --version-name "${long:1}" classes -o o5 --method-ids ids5.txt
check "115-byte version name accepted" $?
"$bin" -q --version-name 1.0/x classes -o ox --method-ids idsx.txt 2> errx.txt
[ $? -eq 2 ] && grep -q "'/'" errx.txt; check "version name with '/' refused" $?
"$bin" -q --version-name $'1.0\tx' classes -o ox --method-ids idsx.txt
[ $? -eq 2 ]; check "version name with a tab refused" $?
"$bin" -q --version-name $'1.0\xff' classes -o ox --method-ids idsx.txt 2> errx.txt
[ $? -eq 2 ] && grep -q "not valid UTF-8" errx.txt; check "version name not UTF-8 refused" $?
"$bin" -q --build-class classes/gen classes -o ox --method-ids idsx.txt 2> errx.txt
[ $? -eq 2 ] && grep -q "overlap" errx.txt; check "--build-class inside an input refused" $?
"$bin" -q --build-class ox/gen classes -o ox --method-ids idsx.txt
[ $? -eq 2 ]; check "--build-class inside the output refused" $?
[ ! -e ox ] && [ ! -e idsx.txt ] && [ ! -e genx ] && [ ! -e classes/gen ]
check "usage errors write nothing" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
