# tests/lib/pg.sh — a throwaway PostgreSQL cluster for tests (issue 19).
# Sourced by bash scripts (tests/integration/lib.sh, .ci/run, scripts/test)
# or run as a command. Uses Debian's server binaries (the newest
# /usr/lib/postgresql/N/bin, or $BEATLINE_PG_BIN). Nothing listens beyond
# 127.0.0.1; the unix socket is in the cluster's own folder.
#
# As a library (set -euo pipefail safe):
#
#   . tests/lib/pg.sh
#   pg_start [PARENT_DIR]
#       initdb (-A trust -E UTF8 --locale=C --no-sync) into a new temporary
#       folder (mktemp -d, under PARENT_DIR when given, else $TMPDIR or /tmp),
#       then pg_ctl start on a free loopback port with fsync=off (speed; a
#       test cluster needs no durability). Run as root, the cluster belongs
#       to the user `postgres` (initdb refuses root) through runuser.
#       Bounded: the start waits at most 60 s. Sets PG_DIR, PG_PORT and
#       PG_BASE_URL (postgresql://postgres@127.0.0.1:PORT); installs no trap:
#       the caller calls pg_stop (e.g. from its EXIT trap). Returns 1 with a
#       message on stderr when PostgreSQL cannot start.
#   pg_stop
#       pg_ctl stop -m immediate (bounded: 30 s, then SIGKILL of the
#       postmaster) and rm -rf of PG_DIR. Never fails; does nothing when no
#       cluster was started by this shell.
#   pg_new_db [NAME]
#       Creates a fresh database (NAME, or "t_<pid>_<counter>_<random>") on
#       the cluster this shell started (PG_BASE_URL, pg_start), else on the
#       one at $BEATLINE_TEST_PG_URL (a shared cluster's base URL, e.g.
#       started by scripts/test), and prints its URL: BASE/NAME. Returns 1
#       with a message on stderr on failure.
#   pg_drop_db URL
#       Drops the database of a URL from pg_new_db (never fails).
#
# As a command:
#
#   tests/lib/pg.sh start [PARENT_DIR]   starts a cluster, prints
#                                        "PG_BASE_URL=… PG_DIR=…" and leaves it
#                                        running (stop it with `stop PG_DIR`)
#   tests/lib/pg.sh stop PG_DIR          stops and removes it
#   tests/lib/pg.sh newdb                BEATLINE_TEST_PG_URL=… : prints a
#                                        fresh database's URL
#
# A test script that needs one database and no shared cluster:
#
#   . tests/lib/pg.sh
#   pg_start; trap pg_stop EXIT
#   url=$(pg_new_db)        # postgresql://postgres@127.0.0.1:PORT/t_…
#   beatline-server --store "$url" …

PG_DIR=
PG_PORT=
PG_BASE_URL=
PG_OWNER_PID=
_pg_dbn=0

# the folder of the newest installed server binaries
_pg_bin() {
  if [ -n "${BEATLINE_PG_BIN:-}" ]; then
    echo "$BEATLINE_PG_BIN"
    return 0
  fi
  local d best= bestv=0 v
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] || continue
    v=${d#/usr/lib/postgresql/}
    v=${v%%/*}
    case "$v" in '' | *[!0-9]*) continue ;; esac
    if [ "$v" -gt "$bestv" ]; then
      bestv=$v
      best=$d
    fi
  done
  if [ -z "$best" ]; then
    echo "pg.sh: no PostgreSQL server in /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2
    return 1
  fi
  echo "$best"
}

# runs a command as the cluster's owner (postgres when we are root)
_pg_as() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# a TCP port nobody listens on now (bounded: 50 tries)
_pg_free_port() {
  local p i
  for i in $(seq 50); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    if ! (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

pg_start() {
  local parent=${1:-${TMPDIR:-/tmp}} bin tries
  bin=$(_pg_bin) || return 1
  PG_DIR=$(mktemp -d -p "$parent" beatline-pg.XXXXXX) || return 1
  PG_OWNER_PID=$BASHPID
  chmod 755 "$PG_DIR"
  if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres > /dev/null 2>&1; then
      echo "pg.sh: running as root needs the user postgres (apt-get install postgresql)" >&2
      return 1
    fi
    chown postgres: "$PG_DIR"
    # runuser -u postgres must be able to reach the folder
    if ! runuser -u postgres -- test -w "$PG_DIR"; then
      echo "pg.sh: postgres cannot reach $PG_DIR; pass another PARENT_DIR" >&2
      rm -rf "$PG_DIR"
      return 1
    fi
  fi
  if ! _pg_as "$bin/initdb" -D "$PG_DIR/data" -A trust -U postgres -E UTF8 --locale=C \
    --no-sync > "$PG_DIR/initdb.log" 2>&1; then
    echo "pg.sh: initdb failed: $(tail -5 "$PG_DIR/initdb.log")" >&2
    return 1
  fi
  for tries in 1 2 3; do
    PG_PORT=$(_pg_free_port) || {
      echo "pg.sh: no free port" >&2
      return 1
    }
    # -w -t 60: pg_ctl waits (bounded) until the server accepts connections
    if _pg_as "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off \
-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 \
-c shared_buffers=32MB" start > /dev/null 2>&1; then
      PG_BASE_URL="postgresql://postgres@127.0.0.1:$PG_PORT"
      return 0
    fi
    # the port may have been taken meanwhile: try another one
    _pg_as "$bin/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 10 stop > /dev/null 2>&1 || true
  done
  echo "pg.sh: PostgreSQL did not start: $(tail -5 "$PG_DIR/server.log" 2> /dev/null)" >&2
  return 1
}

pg_stop() {
  # only the shell that started the cluster stops it (not its subshells)
  [ -n "$PG_DIR" ] && [ "$PG_OWNER_PID" = "$BASHPID" ] || return 0
  local bin pid
  bin=$(_pg_bin 2> /dev/null) || bin=
  if [ -n "$bin" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
    if ! _pg_as "$bin/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop > /dev/null 2>&1; then
      pid=$(head -1 "$PG_DIR/data/postmaster.pid" 2> /dev/null || true)
      [ -n "$pid" ] && kill -9 "$pid" 2> /dev/null || true
    fi
  fi
  rm -rf "$PG_DIR"
  PG_DIR=
  PG_PORT=
  PG_BASE_URL=
  return 0
}

pg_new_db() {
  # a cluster of our own first: a test that stops it must stop its server
  local base=${PG_BASE_URL:-${BEATLINE_TEST_PG_URL:-}} name=${1:-}
  if [ -z "$base" ]; then
    echo "pg.sh: no cluster (pg_start, or set BEATLINE_TEST_PG_URL)" >&2
    return 1
  fi
  base=${base%/}
  base=${base%/postgres}
  _pg_dbn=$((_pg_dbn + 1))
  [ -n "$name" ] || name="t_$$_${_pg_dbn}_$RANDOM$RANDOM"
  case "$name" in *[!a-z0-9_]*)
    echo "pg.sh: database name must be [a-z0-9_]: $name" >&2
    return 1
    ;;
  esac
  local out
  if ! out=$(timeout 30 psql -X -q -v ON_ERROR_STOP=1 -d "$base/postgres" \
    -c "CREATE DATABASE $name" 2>&1); then
    echo "pg.sh: CREATE DATABASE $name failed: $out" >&2
    return 1
  fi
  echo "$base/$name"
}

pg_drop_db() {
  local url=$1
  local base=${url%/*} name=${url##*/}
  timeout 30 psql -X -q -d "$base/postgres" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" \
    > /dev/null 2>&1 || true
  return 0
}

# run as a command
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    start)
      pg_start "${2:-}"
      # keep the cluster when this shell exits
      echo "PG_BASE_URL=$PG_BASE_URL PG_DIR=$PG_DIR"
      ;;
    stop)
      [ -n "${2:-}" ] || {
        echo "usage: $0 stop PG_DIR" >&2
        exit 2
      }
      PG_DIR=$2
      PG_OWNER_PID=$BASHPID
      pg_stop
      ;;
    newdb)
      pg_new_db "${2:-}"
      ;;
    *)
      echo "usage: $0 start [PARENT_DIR] | stop PG_DIR | newdb [NAME]" >&2
      exit 2
      ;;
  esac
fi
