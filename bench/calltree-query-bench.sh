#!/usr/bin/env bash
# Call-tree query latency (issue 12): a build with 1,000,000 stored call-tree
# nodes (bench_ctree_fill: 5,000 methods, deep and wide trees, main and
# other threads), then GET /v1/apps/{app}/call-tree on one keep-alive
# connection (bench_http query), p50/p99 beside the goal.
#   bench/calltree-query-bench.sh BUILD_DIR [REQUESTS] [NODES]
# Called by bench/server-bench.sh; runs alone too.
set -euo pipefail
BIN=$(cd "$1" && pwd)/bin
REQS=${2:-50}
NODES=${3:-1000000}
WORK=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2> /dev/null; wait 2> /dev/null || true; rm -rf "$WORK"' EXIT

echo "== call-tree query over a build of $NODES stored nodes ($REQS requests each)"
RD=$("$BIN/beatline-server" --data "$WORK/data" app create ctree | jq -r .read_key)
"$BIN/bench_ctree_fill" "$WORK/data" ctree 1.0 "$NODES"
"$BIN/beatline-server" --data "$WORK/data" --listen 127.0.0.1:0 --port-file "$WORK/port" \
  2> "$WORK/server.log" &
PID=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
PORT=$(cat "$WORK/port")
cpu() { # the server's user + system CPU time so far, in clock ticks
  awk '{ print $14 + $15 }' "/proc/$PID/stat"
}
q() { # PATH GOAL
  local out c0 c1
  curl -s -o "$WORK/answer.json" -H "Authorization: Bearer $RD" "http://127.0.0.1:$PORT$1"
  printf '%-60s %s\n' "$1" "$(jq -c '{truncated, bytes: (tostring | length)}' "$WORK/answer.json")"
  c0=$(cpu)
  out=$("$BIN/bench_http" query "$PORT" "$1" "$RD" "$REQS")
  c1=$(cpu)
  echo "$out${2:+   goal $2}"
  # CPU time does not depend on what else runs on the machine
  awk -v a="$c0" -v b="$c1" -v n="$REQS" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "server CPU per query %.1f ms (user + system, mean of %d)\n", (b - a) * 1000 / hz / n, n }'
}
uptime
q "/v1/apps/ctree/call-tree?build=1.0" "p99 < 200 ms"
q "/v1/apps/ctree/call-tree" "p99 < 200 ms"
q "/v1/apps/ctree/call-tree?build=1.0&thread=main"
q "/v1/apps/ctree/call-tree?build=1.0&max_depth=8&limit=1000"
q "/v1/apps/ctree/call-tree?build=1.0&root=com.example.app.p3.C556.m3000"
