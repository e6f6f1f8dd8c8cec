#!/usr/bin/env bash
# beatline-instrument on a class whose constant pool has no room for the
# network hooks' entries (instrumenter/netsite.h, main.c net_sites): its
# network call sites are left as they are, with a warning, and the run
# succeeds when the rules keep the probes out of the class (before: the whole
# run failed, --no-network for the whole app the only way out); with probes
# the pool error stays an error, as without network rewriting; a class with
# room gets its site rewritten.
#
#   netsite_pool_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

python3 "$HERE/netsite/bigpool.py" 65534 full.jar
python3 "$HERE/netsite/bigpool.py" 100 roomy.jar

# full pool, probes excluded: runs, warns, the class unchanged
rc=0
"$BIN/beatline-instrument" -o out.jar --method-ids ids.txt --exclude 't/**' full.jar 2> err.txt || rc=$?
expect "full pool, excluded: exit status" 0 "$rc"
expect_grep "full pool, excluded: warning" "t/Big.class: network call sites left as they are: t/Big: constant pool would exceed 65535 entries" "$(cat err.txt)"
expect_grep "full pool, excluded: summary" "0 network call sites" "$(cat err.txt)"
if [ -f out.jar ] && cmp -s <(unzip -p full.jar t/Big.class) <(unzip -p out.jar t/Big.class); then ok; else bad "full pool, excluded: class changed or missing"; fi

# full pool with probes: the probe rewriter's error, as with --no-network
rc=0
"$BIN/beatline-instrument" -o out2.jar --method-ids ids2.txt full.jar 2> err2.txt || rc=$?
expect "full pool, probes: exit status" 1 "$rc"
expect_grep "full pool, probes: error" "error: .*t/Big: constant pool would exceed 65535 entries" "$(cat err2.txt)"

# room in the pool: the site is rewritten
rc=0
"$BIN/beatline-instrument" -o out3.jar --method-ids ids3.txt --exclude 't/**' roomy.jar 2> err3.txt || rc=$?
expect "roomy: exit status" 0 "$rc"
expect_grep "roomy: summary" "1 network call sites" "$(cat err3.txt)"
contains "roomy: hook in the class" "io/beatline/runtime/net/Url" "$(unzip -p out3.jar t/Big.class | tr -c '[:print:]' '\n')"

finish
