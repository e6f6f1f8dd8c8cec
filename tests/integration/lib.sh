# Shared helpers of the bash integration tests (tests/integration/*_test.sh).
# Sourced, not run:
#
#   set -euo pipefail
#   . "$(dirname "$0")/lib.sh"
#   setup "$@"
#
# Functions, their arguments and the globals they read or set:
#
#   setup BUILD_DIR WORK_DIR
#       Sets BUILD (BUILD_DIR made absolute), WORK (WORK_DIR as given), BIN
#       ($BUILD/bin) and HERE (the absolute folder of the test scripts and of
#       this file). Empties WORK (rm -rf, mkdir -p) and cd's into it; sets the
#       counters pass=0 and fail=0 and SERVER_PID empty; traps stop_server on
#       EXIT (a script with more to clean up sets its own trap afterwards and
#       calls stop_server from it). Wrong number of arguments: usage, exit 2.
#
#   ok                        counts one passed check (pass += 1).
#   bad MESSAGE...            counts one failed check (fail += 1) and prints
#                             "FAIL: MESSAGE" on stderr.
#   expect NAME EXPECTED ACTUAL
#                             passes when ACTUAL is exactly EXPECTED.
#   expect_grep NAME PATTERN TEXT
#                             passes when grep finds the basic regular
#                             expression PATTERN on a line of TEXT.
#   contains NAME NEEDLE HAYSTACK
#                             passes when NEEDLE is a substring of HAYSTACK
#                             (no pattern characters; may span lines).
#
#   start_server DATA [server args...]
#       Starts "$BIN/beatline-server --data DATA --listen 127.0.0.1:0
#       --port-file port.txt", then the words of the array SERVER_ARGS (empty
#       unless the script sets it: default options of every start), then the
#       given args, in the background with stderr appended to server.log (in
#       WORK). Waits (bounded: 600 x 0.05 s, less when the server exits)
#       for port.txt and sets
#       SERVER_PID, PORT and URL (http://127.0.0.1:PORT). If no port appears
#       the start counts as a failed check ("the server did not start on
#       DATA" with the end of server.log), the summary line is printed and
#       the script exits 1.
#   stop_server
#       Kills SERVER_PID (SIGTERM), waits for it and empties SERVER_PID;
#       does nothing when SERVER_PID is empty. Never fails.
#
#   http METHOD PATH KEY [curl args...]
#       One request to $URL$PATH with curl (silent), "Authorization: Bearer
#       KEY" unless KEY is empty, then the words of the array HTTP_ARGS
#       (empty unless the script sets it, e.g. HTTP_ARGS=(-m 20)), then the
#       given curl args. Sets CODE (the status), BODY (the body, also left in
#       body.out) and HDRS (the response headers, also left in hdrs.out).
#
#   create_app DATA NAME [server args...]
#       Creates the app NAME in the data folder DATA with
#       "$BIN/beatline-server --data DATA [server args...] app create NAME"
#       (the script exits, set -e, when that fails) and sets KEYS (its JSON
#       answer) and ING, UPL, RD (its ingest, upload and read keys).
#
#   put_ids APP BUILD FILE LABEL
#       Uploads the method-ID file FILE for build BUILD (a path segment,
#       already %-encoded) of APP with the upload key UPL (http: sets CODE,
#       BODY, HDRS) and checks, as LABEL, that the answer is 201.
#
#   metric NAME
#       Prints the value of the line NAME (exactly, labels included) of
#       $URL/metrics; nothing when there is none.
#   expect_processed N
#       Adds N to the global count `processed` (0 at the start) and waits
#       (bounded: 600 x 0.05 s) until beatline_batches_processed_total is
#       that count: passes then, else one failed check.
#
#   sql_hex EXPR
#       Prints an SQL expression giving the upper-case hex text of the blob
#       EXPR on the store in use: hex(EXPR) on SQLite,
#       upper(encode(EXPR, 'hex')) on PostgreSQL (which has no hex()).
#
#   store_sql DATA SQL
#       Runs SQL on the store of the data folder DATA and prints the rows,
#       columns joined by '|' (sqlite3 DATA/beatline.db with a 5 s busy
#       timeout, or psql -At on its
#       PostgreSQL database when BEATLINE_TEST_STORE=pg). For checks that
#       read the database behind the server's back.
#
#   finish [STATUS]
#       Prints "N passed, M failed" on a line of its own (stdout) and exits:
#       1 if any check failed, else STATUS (default 0; e.g. 77 for a ctest
#       SKIP).

# PostgreSQL (issue 19): with BEATLINE_TEST_STORE=pg, setup points BIN at a
# folder whose beatline-server (tests/integration/pg-wrap.sh) adds
# `--store postgresql://…` to every run: the server (start_server) and the
# CLI (`$BIN/beatline-server --data DATA app create …`) alike. Each data
# folder of a script gets its own fresh database, created at its first use
# and kept for the script's life (restarts keep the data), on the cluster
# at BEATLINE_TEST_PG_URL (a shared cluster's base URL, as .ci/run exports
# it) or else on a cluster of the script's own (tests/lib/pg.sh), stopped
# when the script ends. BIN_REAL is the build's bin folder in both cases.

SERVER_ARGS=()
HTTP_ARGS=()
SERVER_PID=
pass=0
fail=0
processed=0
# the folder of the test scripts (and of this file), absolute
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

setup() {
  if [ "$#" -ne 2 ]; then
    echo "usage: $0 BUILD_DIR WORK_DIR" >&2
    exit 2
  fi
  BUILD=$(cd "$1" && pwd)
  WORK=$2
  BIN=$BUILD/bin
  BIN_REAL=$BIN
  rm -rf "$WORK"
  mkdir -p "$WORK"
  cd "$WORK"
  pass=0
  fail=0
  SERVER_PID=
  trap _lib_exit EXIT
  if [ "${BEATLINE_TEST_STORE:-sqlite}" = pg ]; then
    _pg_setup
  fi
}

_lib_exit() {
  stop_server
  if [ -n "${_LIB_PG_OWN:-}" ]; then pg_stop; fi
}

# BEATLINE_TEST_STORE=pg: a cluster (shared or our own) and BIN's wrapper
_pg_setup() {
  # shellcheck source=../lib/pg.sh
  . "$HERE/../lib/pg.sh"
  if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
    if ! pg_start; then
      echo "FAIL: cannot start PostgreSQL for BEATLINE_TEST_STORE=pg" >&2
      echo "0 passed, 1 failed"
      exit 1
    fi
    _LIB_PG_OWN=1
    export BEATLINE_TEST_PG_URL=$PG_BASE_URL
  fi
  local d=$WORK/.pg-bin f
  mkdir -p "$d"
  : > "$d/stores"
  # when this shell is gone (also when a script replaced the EXIT trap, or
  # ctest killed it), a watcher stops our own cluster, or drops this
  # script's databases from a shared one; it keeps none of our fds, so
  # ctest does not wait for it (bounded: 6 h)
  local me=$$ own=${_LIB_PG_OWN:-} stores=$d/stores
  (
    exec > /dev/null 2>&1 < /dev/null
    PG_OWNER_PID=$BASHPID
    for _ in $(seq 21600); do kill -0 "$me" 2> /dev/null || break; sleep 1; done
    if [ -n "$own" ]; then
      pg_stop
    else
      while IFS=$'\t' read -r _ u; do pg_drop_db "$u"; done < "$stores"
    fi
  ) &
  disown $! 2> /dev/null || true
  for f in "$BIN_REAL"/*; do ln -sf "$f" "$d/"; done
  rm -f "$d/beatline-server"
  # a copy of the wrapper elsewhere (a test installing the server into a
  # folder of its own) runs a copy of the server beside itself, so that
  # the server's own folder (/proc/self/exe) is that folder, as on SQLite
  {
    echo '#!/bin/bash'
    printf 'export BEATLINE_TEST_PG_URL=%q\n' "$BEATLINE_TEST_PG_URL"
    printf 'real=%q wrap=%q stores=%q bin=%q\n' "$BIN_REAL/beatline-server" \
      "$HERE/pg-wrap.sh" "$d/stores" "$d"
    cat << 'EOF'
here=$(cd "$(dirname "$0")" && pwd)
if [ "$here" != "$bin" ]; then
  [ -x "$here/.beatline-server.real" ] || cp "$real" "$here/.beatline-server.real"
  real=$here/.beatline-server.real
fi
exec bash "$wrap" "$real" "$stores" "$@"
EOF
  } > "$d/beatline-server"
  chmod +x "$d/beatline-server"
  BIN=$d
}

sql_hex() { # EXPR
  if [ "${BEATLINE_TEST_STORE:-sqlite}" = pg ]; then
    printf "upper(encode(%s, 'hex'))" "$1"
  else
    printf 'hex(%s)' "$1"
  fi
}

store_sql() { # DATA SQL
  if [ "${BEATLINE_TEST_STORE:-sqlite}" = pg ]; then
    local url
    url=$(bash "$HERE/pg-wrap.sh" --url "$1" "$WORK/.pg-bin/stores") || return 1
    psql -X -q -At -v ON_ERROR_STOP=1 -d "$url" -c "$2"
  else
    sqlite3 -cmd '.timeout 5000' "$1/beatline.db" "$2"
  fi
}

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*" >&2; fail=$((fail + 1)); }
expect() { # name expected actual
  if [ "$2" == "$3" ]; then ok; else bad "$1: expected '$2', got '$3'"; fi
}
expect_grep() { # name pattern text
  if grep -q -- "$2" <<< "$3"; then ok; else bad "$1: '$2' not in: $3"; fi
}
contains() { # name needle haystack
  case "$3" in *"$2"*) ok ;; *) bad "$1: '$2' not in '$3'" ;; esac
}

finish() { # [status if nothing failed]
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ] || exit 1
  exit "${1:-0}"
}

start_server() { # DATA [server args...]
  local data=$1
  shift
  rm -f port.txt
  "$BIN/beatline-server" --data "$data" --listen 127.0.0.1:0 --port-file port.txt \
    ${SERVER_ARGS[@]+"${SERVER_ARGS[@]}"} "$@" 2>> server.log &
  SERVER_PID=$!
  for _ in $(seq 600); do
    [ -s port.txt ] && break
    kill -0 "$SERVER_PID" 2> /dev/null || break # it exited: no port will come
    sleep 0.05
  done
  PORT=$(cat port.txt 2> /dev/null || true)
  if [ -z "$PORT" ]; then
    bad "the server did not start on $data: $(tail -3 server.log)"
    finish
  fi
  URL="http://127.0.0.1:$PORT"
}

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2> /dev/null || true
    wait "$SERVER_PID" 2> /dev/null || true
  fi
  SERVER_PID=
}

http() { # METHOD PATH KEY [curl args...] -> CODE, BODY, HDRS
  local m=$1 p=$2 k=$3
  shift 3
  CODE=$(curl -s -D hdrs.out -o body.out -w '%{http_code}' ${HTTP_ARGS[@]+"${HTTP_ARGS[@]}"} \
    -X "$m" ${k:+-H "Authorization: Bearer $k"} "$@" "$URL$p")
  BODY=$(cat body.out)
  HDRS=$(cat hdrs.out 2> /dev/null || true)
}

create_app() { # DATA NAME [server args...] -> KEYS, ING, UPL, RD
  local data=$1 name=$2
  shift 2
  KEYS=$("$BIN/beatline-server" --data "$data" "$@" app create "$name")
  ING=$(jq -r .ingest_key <<< "$KEYS")
  UPL=$(jq -r .upload_key <<< "$KEYS")
  RD=$(jq -r .read_key <<< "$KEYS")
}

put_ids() { # APP BUILD FILE LABEL
  http PUT "/v1/apps/$1/builds/$2/method-ids" "$UPL" --data-binary @"$3"
  expect "$4" 201 "$CODE"
}

metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

expect_processed() { # N more batches processed
  processed=$((processed + $1))
  local n
  for _ in $(seq 600); do
    n=$(metric beatline_batches_processed_total)
    [ "$n" == "$processed" ] && return 0
    sleep 0.05
  done
  bad "processed batches: expected $processed, got $n"
}

# --- peak memory of the server under test (memory_test.sh, pg_memory_test.sh):
# mem_mark resets the peak (clear_refs 5) and remembers the resident size;
# peak_mb is the growth of the peak since, in MB; settle waits (bounded: 20 s)
# until the resident size stops growing (state loaded in the background);
# below NAME LIMIT ACTUAL passes when ACTUAL < LIMIT (integers). Callers
# export ASAN_OPTIONS=…quarantine_size_mb=0 so freed memory is reused.
below() {
  if [ "$3" -lt "$2" ]; then ok; else bad "$1: $3 is not below $2"; fi
}
kb() { awk -v k="$1" '$1 == k ":" { print $2 }' "/proc/$SERVER_PID/status"; }
mem_mark() {
  echo 5 > "/proc/$SERVER_PID/clear_refs"
  BASE=$(kb VmRSS)
}
peak_mb() { echo $(( ($(kb VmHWM) - BASE) / 1024 )); }
settle() {
  local a b
  for _ in $(seq 40); do
    a=$(kb VmRSS)
    sleep 0.5
    b=$(kb VmRSS)
    [ $((b - a)) -lt 1024 ] && return 0
  done
}
