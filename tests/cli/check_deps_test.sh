#!/usr/bin/env bash
# scripts/check-deps on fixture trees and on the real one (issue 11):
#   - a tree naming a jar whose package its install-deps does not list, a
#     command no package provides (in a shell script, a CMake find_program
#     and a C system() string), a command of a package not listed, and a jar
#     path built from a value the file does not set: exit 1, each named
#     with file:line and what provides it (or "no package");
#   - the same things, listed: exit 0;
#   - this checkout: exit 0 (every jar and command comes from install-deps).
#   check_deps_test.sh SOURCE_DIR WORK_DIR
# no `set -e`: a failed check is counted and named, the run goes on
set -uo pipefail
src=$1
work=$2
check_deps="$src/scripts/check-deps"
rm -rf "$work" && mkdir -p "$work"
fails=0
pass=0
check() { # name, condition result
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
jd=$(printf '%s' /usr/share/java)
has() { # name, file, fixed string
  grep -qF -- "$3" "$2"; check "$1" $?
}

# the fixture tree; $1: the packages its install-deps lists
make_tree() {
  local t=$1
  shift
  mkdir -p "$t/scripts" "$t/tests"
  {
    echo '#!/usr/bin/env bash'
    echo "[ \"\${1:-}\" = --list ] && printf '%s\\n' $*"
  } > "$t/scripts/install-deps"
  cat > "$t/scripts/use" << 'EOF'
#!/bin/bash
J=/usr/share/java
for j in junit4; do
  unzip -l "$J/$j.jar" > /dev/null
done
RUN=()
"${RUN[@]}" beatline-no-such-tool-4711 --help
curl -s http://127.0.0.1:1/ | sha256sum
say() { echo "$*"; }
say hello
bash -c 'ls /'
beatline-fake-pkg-4711 --version
EOF
  # line 13; the jar's directory comes from a command so that the check, run
  # on this checkout, does not take this test for a user of the jar
  echo "wc -c $jd/beatline-no-such-lib.jar" >> "$t/scripts/use"
  cat > "$t/tests/unresolved.sh" << 'EOF'
X=${X:-/usr/share/java}
cat "$X/$(ls | head -1).jar"
EOF
  cat > "$t/CMakeLists.txt" << 'EOF'
find_program(FETCH beatline-fake-cmake-tool)
EOF
  cat > "$t/tests/probe.c" << 'EOF'
static int f(const char *url) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "beatline-fake-fetch -q %s | wc -l", url);
    return system(cmd);
}
EOF
  chmod +x "$t/scripts/use" "$t/scripts/install-deps"
}

# --- 1. named but not provided: exit 1, with file:line and the package -------
# beatline-fake-pkg-4711: listed, not installed, and no package apt knows
make_tree "$work/bad" curl beatline-fake-pkg-4711
python3 "$check_deps" "$work/bad" > "$work/bad.out" 2>&1
rc=$?
[ "$rc" -eq 1 ]; check "missing packages: exit 1 (got $rc)" $?
out="$work/bad.out"
has "jar of a package not listed" "$out" \
  "scripts/use:4: jar /usr/share/java/junit4.jar: provided by junit4, which scripts/install-deps does not list"
has "command of a package not listed" "$out" \
  "scripts/use:4: command unzip: provided by unzip, which scripts/install-deps does not list"
has "command from no package (behind an empty \"\${RUN[@]}\")" "$out" \
  "scripts/use:7: command beatline-no-such-tool-4711: no package provides it"
has "find_program of no package" "$out" \
  "CMakeLists.txt:1: command beatline-fake-cmake-tool: no package provides it"
has "system() command of no package" "$out" \
  "tests/probe.c:3: command beatline-fake-fetch: no package provides it"
has "jar path from an unknown value" "$out" \
  "tests/unresolved.sh:2: jar path /usr/share/java/?.jar: depends on a value this file does not set"
has "jar of no package" "$out" \
  "scripts/use:13: jar $jd/beatline-no-such-lib.jar: no package provides it (not on this machine)"
has "listed name apt does not know" "$out" \
  "scripts/use:12: command beatline-fake-pkg-4711: no package provides it"
has "verdict" "$out" "check-deps: FAIL: 8 problem(s)"
# listed (curl), essential (sha256sum, ls, bash), builtins and functions pass
grep -Eq 'command (curl|sha256sum|ls|bash|say|echo|cat|wc):' "$out"
check "listed, essential, builtins and functions are not reported" "$(( $? == 0 ))"

# --- 2. everything listed, nothing unknown: exit 0 ---------------------------
# socat: a package apt knows, listed; where it is not installed (as on a
# fresh machine) its command passes by name, like podman in a group of
# install-deps that is not installed
make_tree "$work/good" curl junit4 unzip socat
sed -i '/beatline-no-such/d; s/^beatline-fake-pkg-4711 /socat /' "$work/good/scripts/use"
rm "$work/good/tests/unresolved.sh" "$work/good/CMakeLists.txt" "$work/good/tests/probe.c"
python3 "$check_deps" "$work/good" > "$work/good.out" 2>&1
rc=$?
[ "$rc" -eq 0 ]; check "all provided: exit 0 (got $rc)" $?
has "all provided: the OK line" "$work/good.out" "check-deps: OK: 1 jars and"
[ "$rc" -eq 0 ] || cat "$work/good.out"

# --- 3. this checkout ----------------------------------------------------------
python3 "$check_deps" "$src" > "$work/real.out" 2>&1
rc=$?
[ "$rc" -eq 0 ]; check "this checkout: exit 0 (got $rc)" $?
[ "$rc" -eq 0 ] || cat "$work/real.out"

[ "$fails" -eq 0 ] || { echo "--- bad tree output:"; cat "$work/bad.out"; }
echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
