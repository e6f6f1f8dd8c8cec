#!/usr/bin/env bash
# Request-body limits and the in-flight budget (memory review, fix-mem):
#
#   body_limits_test.sh BUILD_DIR WORK_DIR
#
#   1. a body of exactly --max-body bytes (not a multiple of 64 KiB) reaches
#      the batch parser (400 not-a-batch), identity with a Content-Length and
#      chunked; --max-body + 1 gets 413 naming the limit "as sent"; a gzip
#      body that decompresses to exactly --max-decompressed is parsed, one
#      byte more gets 413 naming the decompressed limit and its value;
#   2. connections that declare a big Content-Length and send a few bytes
#      hold only what they sent: a normal batch POST next to them gets 202,
#      not 503 (the declared length used to be charged up front);
#   3. parsing an uploaded method-ID file is charged to --max-inflight: 503
#      while big bodies hold the budget, 201 once they are gone; a file whose
#      check alone needs more than --max-inflight gets 413.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

DATA=$WORK/data
post() { # FILE [curl args...] -> CODE, ERR
  local f=$1
  shift
  CODE=$(curl -s -o body.out -w '%{http_code}' -X POST -H "Authorization: Bearer $ING" \
    --data-binary @"$f" "$@" "$URL/v1/apps/shop/batches")
  ERR=$(jq -r .error body.out 2> /dev/null || cat body.out)
}

create_app "$DATA" shop

# --- 1. bodies at the caps ---------------------------------------------------
MAXB=1000000  # not a multiple of 64 KiB: the last step is cut at the cap
MAXD=3000000
start_server "$DATA" --max-body $MAXB --max-decompressed $MAXD
head -c $MAXB /dev/zero | tr '\0' 'x' > at.bin
head -c $((MAXB + 1)) /dev/zero | tr '\0' 'x' > over.bin
head -c $((MAXB - 10000)) /dev/zero | tr '\0' 'x' > under.bin
post under.bin
expect "identity body of max-body - 10,000 bytes reaches the parser" 400 "$CODE"
post at.bin
expect "identity body of exactly max-body bytes reaches the parser" 400 "$CODE"
post at.bin -H "Transfer-Encoding: chunked"
expect "chunked body of exactly max-body bytes reaches the parser" 400 "$CODE"
post over.bin
expect "max-body + 1 (Content-Length)" "413 body of $((MAXB + 1)) bytes is over the limit of $MAXB bytes" "$CODE $ERR"
post over.bin -H "Transfer-Encoding: chunked"
expect "max-body + 1 (chunked)" "413 body as sent is over the limit of $MAXB bytes" "$CODE $ERR"
head -c $MAXD /dev/zero | tr '\0' 'x' | gzip -c > atd.gz
head -c $((MAXD + 1)) /dev/zero | tr '\0' 'x' | gzip -c > overd.gz
post atd.gz -H "Content-Encoding: gzip"
expect "gzip body of exactly max-decompressed bytes reaches the parser" 400 "$CODE"
post overd.gz -H "Content-Encoding: gzip"
expect "gzip body of max-decompressed + 1" \
  "413 decompressed body is over the limit of $MAXD bytes" "$CODE $ERR"
stop_server

# --- 2. declared but unsent bodies hold nothing of --max-inflight -----------
# budget 16 + 16 + 16 + 64 MiB (the floor); 12 connections declare 16,000,000
# bytes each (192 MB together), 9 more declare halving sizes down to 11
# bytes, and each sends 10 bytes.
cat > one.json << 'JSON'
{"batch_id":"bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb","app":"shop","build":"1.0",
 "session_id":"s","origin_wall_us":1795960000000000,"threads":[{"id":1,"name":"main",
 "main":true,"truncated":false,"records":[[1,"i",0],[1,"o",10]]}],"events":[]}
JSON
"$BIN/beatline-batch" encode < one.json > one.bin
start_server "$DATA" --max-decompressed $((16 << 20)) --max-inflight 1
res=$(timeout 60 python3 - "$PORT" "$ING" one.bin << 'PY'
import http.client, socket, sys, time
port, key, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
held = []
try:
    def progress():
        """bytes of bodies taken + 10 for each 503 answered"""
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        got = 0
        for line in text.splitlines():
            if line.startswith("beatline_ingest_bytes_total "):
                got += int(line.split()[1])
            if line.startswith('beatline_http_requests_total{code="503"} '):
                got += 10 * int(line.split()[1])
        return got

    # 12 big ones, then halving sizes: were declared lengths charged up
    # front, these would fill the budget to less than one 64 KiB step. One
    # at a time: each has begun its body (its 10 bytes counted) or been
    # refused with 503 before the next is sent (bounded wait).
    sizes = [16000000] * 12 + [(65536 << k) - 1 for k in range(8, 0, -1)] + [11]
    for i, size in enumerate(sizes):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(("POST /v1/apps/shop/batches HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n" % (key, size))
                  .encode() + b"0123456789")
        held.append(s)
        for _ in range(600):
            if progress() >= 10 * (i + 1):
                break
            time.sleep(0.05)
        else:
            print("bodies-not-seen", end="")
            sys.exit(0)
    body = open(path, "rb").read()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("POST", "/v1/apps/shop/batches", body,
              {"Authorization": "Bearer " + key})
    r = c.getresponse()
    print(r.status, end="")
    r.read()
finally:
    for s in held:
        s.close()
PY
) || res="error"
expect "normal batch next to 21 declared-but-unsent bodies (192+ MB)" 202 "$res"
stop_server

# --- 3. method-ID parsing on uploads is charged ------------------------------
# budget 112 MiB; 6 connections send 15,000,000 of a declared 16,000,000
# bytes each (90 MB held); a 3 MB method-ID file of 100,000 lines needs
# 2 x 3 MB + 32 x 100,000 + 32 MiB of id pages (~43 MB) to check.
awk 'BEGIN { print "# beatline method-ids v1 names=original"
  for (i = 1; i <= 100000; i++) printf "%d,1,com.example.C%d m%d ()V\n", i, i % 997, i }' > mids.txt
put_mids() { # FILE BUILD -> CODE, ERR
  CODE=$(curl -s -o body.out -w '%{http_code}' -X PUT -H "Authorization: Bearer $UPL" \
    --data-binary @"$1" "$URL/v1/apps/shop/builds/$2/method-ids")
  ERR=$(jq -r .error body.out 2> /dev/null || cat body.out)
}
start_server "$DATA" --max-decompressed $((16 << 20)) --max-inflight 1
res=$(timeout 120 python3 - "$PORT" "$ING" "$UPL" mids.txt << 'PY'
import http.client, socket, sys, time
port, key, upl, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
held = []
def taken():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith("beatline_ingest_bytes_total "):
            return int(line.split()[1])
    return 0
try:
    chunk = b"x" * 1000000
    for _ in range(6):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(("POST /v1/apps/shop/batches HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer %s\r\nContent-Length: 16000000\r\n\r\n" % key)
                  .encode())
        for _ in range(15):
            s.sendall(chunk)
        held.append(s)
    for _ in range(400):  # bounded: until the server has taken all of it
        if taken() >= 6 * 15000000:
            break
        time.sleep(0.05)
    else:
        print("bodies-not-seen", end="")
        sys.exit(0)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("PUT", "/v1/apps/shop/builds/1.0/method-ids", open(path, "rb").read(),
              {"Authorization": "Bearer " + upl})
    r = c.getresponse()
    print(r.status, end="")
    r.read()
finally:
    for s in held:
        s.close()
PY
) || res="error"
expect "method-ID upload while 90 MB of bodies hold the budget" 503 "$res"
for _ in $(seq 300); do # the held bodies are given back as their connections close
  put_mids mids.txt 1.0
  [ "$CODE" != 503 ] && break
  sleep 0.1
done
expect "the same upload once they are gone" 201 "$CODE"
{ echo "# beatline method-ids v1 names=original"; echo "1,1,com.example.A m ()V"
  head -c 8000000 /dev/zero | tr '\0' '\n'; } > blank-lines.txt
put_mids blank-lines.txt 2.0
expect "a method-ID file whose check needs more than --max-inflight" \
  "413 the method-ID file needs about" "$CODE $(cut -c1-30 <<< "$ERR")"
# --max-inflight 1 was raised to the floor, 16 + 16 + 16 + 64 MiB: the
# largest retrace (16 MiB body, 64 MiB answer) fits
expect "--max-inflight raised to --max-decompressed + --max-body + 80 MiB" \
  "more than --max-inflight ($((112 << 20)) bytes)" "${ERR#*, }"
stop_server

finish
