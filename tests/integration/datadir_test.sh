#!/usr/bin/env bash
# The data directory: start-up errors say what is wrong, and /healthz and
# POST/PUT reflect whether the server can store data (issue 11, items 5, 8).
#
#   datadir_test.sh BUILD_DIR WORK_DIR
#
# Start-up: a data directory that cannot be created, one that is read-only
# and one locked by a running server each get their own message and exit 1.
# Running: on a small tmpfs filled up, /healthz answers 503 naming the full
# disk and POST/PUT get 507 with a JSON error and Retry-After; remounted
# read-only, 503 naming the read-only directory; space back → 200 and 202.
#
# The mount cases need root (the CI runs the tests as root; chmod cannot
# make a directory read-only for root, a read-only mount can). Without root
# they are skipped with a message and the script exits 77 (ctest SKIP)
# unless something else failed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

skipped=0
MOUNTS=()
cleanup() {
  stop_server
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}" 2> /dev/null || umount -l "${MOUNTS[$i]}" 2> /dev/null || true; done
}
trap cleanup EXIT

# start DATA [args...]: runs the server in the foreground expecting it to
# fail at start; sets RC and ERR (its stderr). Bounded by timeout.
start_fails() {
  local data=$1
  shift
  set +e
  timeout 10 "$BIN/beatline-server" --data "$data" --listen 127.0.0.1:0 "$@" 2> start.err < /dev/null
  RC=$?
  set -e
  ERR=$(cat start.err)
}

# --- start-up errors that need no root -------------------------------------
echo "not a folder" > plainfile
start_fails plainfile/data
expect "data dir under a file: exit 1" 1 "$RC"
expect_grep "data dir under a file: says it cannot create it" "cannot create the data directory plainfile/data: Not a directory" "$ERR"
if grep -q "in use" <<< "$ERR"; then bad "data dir under a file: says 'in use'"; else ok; fi

start_fails plainfile
expect "data dir is a file: exit 1" 1 "$RC"
expect_grep "data dir is a file: says so" "plainfile is not a directory" "$ERR"

# the real "in use": a second server on the data dir of a running one
start_server "$WORK/d1"
start_fails "$WORK/d1"
expect "locked data dir: exit 1" 1 "$RC"
expect_grep "locked data dir: in use, with the pid" "$WORK/d1 is in use by another beatline-server (pid $SERVER_PID)" "$ERR"
stop_server

# --- mounts (root) -----------------------------------------------------------
can_mount=0
if [ "$(id -u)" = 0 ]; then
  mkdir -p probe-mnt
  if mount -t tmpfs -o size=1m tmpfs probe-mnt 2> /dev/null; then
    umount probe-mnt
    can_mount=1
  fi
fi
if [ "$can_mount" = 0 ]; then
  echo "SKIP: the read-only and full-disk cases need root and mount (tmpfs, bind); not run"
  skipped=1
else
  # a read-only data directory (bind mount remounted ro: root ignores chmod)
  mkdir -p rosrc
  "$BIN/beatline-server" --data rosrc/data app create shop > /dev/null
  mkdir -p ro
  mount --bind rosrc ro && MOUNTS+=("$WORK/ro")
  mount -o remount,ro,bind ro
  start_fails "$WORK/ro/data"
  expect "read-only data dir: exit 1" 1 "$RC"
  expect_grep "read-only data dir: not writable, with path and reason" \
    "the data directory $WORK/ro/data is not writable ($WORK/ro/data: Read-only file system)" "$ERR"
  if grep -q "in use" <<< "$ERR"; then bad "read-only data dir: says 'in use': $ERR"; else ok; fi
  # missing, and its parent is read-only: cannot be created
  start_fails "$WORK/ro/new/data"
  expect "uncreatable data dir: exit 1" 1 "$RC"
  expect_grep "uncreatable data dir: cannot create, with reason" \
    "cannot create the data directory $WORK/ro/new/data: Read-only file system" "$ERR"

  # a small tmpfs: full disk and read-only while the server runs
  mkdir -p small
  mount -t tmpfs -o size=16m tmpfs small && MOUNTS+=("$WORK/small")
  DATA=$WORK/small/data
  create_app "$DATA" shop
  start_server "$DATA" --min-free 4194304
  http GET /healthz ""
  expect "healthz on a fresh disk" 200 "$CODE"
  expect "healthz ok shape" '{"status":"ok"}' "$BODY"

  batch() { # uuid -> b.bin
    cat > b.json <<JSON
{"batch_id":"$1","app":"shop","build":"1.0","session_id":"s","origin_wall_us":1795960000000000,
 "device":{"model":"m","os":"14","sdk":34},
 "threads":[{"id":1,"name":"main","main":true,"truncated":false,"records":[[0,"i",0],[0,"o",10]]}],
 "events":[]}
JSON
    "$BIN/beatline-batch" encode < b.json > b.bin
  }
  batch 21111111-1111-4111-8111-111111111111
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
  expect "batch accepted with space" 202 "$CODE"

  # fill the disk (bounded: the tmpfs is 16 MiB)
  dd if=/dev/zero of="$WORK/small/fill" bs=1M count=64 2> /dev/null || true
  http GET /healthz ""
  expect "healthz on a full disk" 503 "$CODE"
  expect "healthz full: status" unhealthy "$(jq -r .status <<< "$BODY")"
  expect_grep "healthz full: names the full disk" "full" "$(jq -r .error <<< "$BODY")"
  expect "healthz full: min_free_bytes" 4194304 "$(jq -r .min_free_bytes <<< "$BODY")"
  batch 22222222-2222-4222-8222-222222222222
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
  expect "batch on a full disk" 507 "$CODE"
  expect_grep "507 is a JSON error naming storage" "insufficient storage" "$(jq -r .error <<< "$BODY")"
  expect_grep "507 has Retry-After" "Retry-After: 60" "$HDRS"
  echo "0,9,com.example.Foo bar ()V" > mids.txt
  http PUT /v1/apps/shop/builds/1.0/method-ids "$UPL" --data-binary @mids.txt
  expect "method-ids upload on a full disk" 507 "$CODE"
  http GET /metrics ""
  expect "metrics still answer" 200 "$CODE"
  # --min-free 0 does not make a disk with no byte free healthy
  stop_server
  start_server "$DATA" --min-free 0
  # start-up may have freed a few blocks (temporary files): take them too
  dd if=/dev/zero of="$WORK/small/fill2" bs=4k count=16384 2> /dev/null || true
  http GET /healthz ""
  expect "healthz on a full disk with --min-free 0" 503 "$CODE"
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
  expect "batch on a full disk with --min-free 0" 507 "$CODE"
  stop_server
  start_server "$DATA" --min-free 4194304

  rm -f "$WORK/small/fill" "$WORK/small/fill2"
  http GET /healthz ""
  expect "healthz after space is back" 200 "$CODE"
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
  expect "the refused batch is accepted once space is back" 202 "$CODE"

  # read-only while running: the server's open files keep the tmpfs from
  # being remounted read-only, so read-only mounts go over the folders
  # every write starts in (tmp/ for uploads and batches, batches/pending/)
  mount -t tmpfs -o ro,size=1m tmpfs "$DATA/tmp" && MOUNTS+=("$DATA/tmp")
  mount -t tmpfs -o ro,size=1m tmpfs "$DATA/batches/pending" && MOUNTS+=("$DATA/batches/pending")
  http GET /healthz ""
  expect "healthz on a read-only disk" 503 "$CODE"
  expect_grep "healthz read-only: says so" "not writable" "$(jq -r .error <<< "$BODY")"
  batch 23333333-3333-4333-8333-333333333333
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
  expect "batch on a read-only disk" 503 "$CODE"
  expect_grep "503 names the read-only directory" "not writable" "$(jq -r .error <<< "$BODY")"
  umount "$DATA/batches/pending" "$DATA/tmp"
  http GET /healthz ""
  expect "healthz read-write again" 200 "$CODE"
  http POST /v1/apps/shop/batches "$ING" --data-binary @b.bin
  expect "batch accepted when writable again" 202 "$CODE"
  stop_server
fi

if [ "$skipped" = 0 ]; then finish; else finish 77; fi
