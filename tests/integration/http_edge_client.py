#!/usr/bin/env python3
"""Raw-socket HTTP client for http_edge_test.sh (loopback only).

Every subcommand is bounded in time and bytes and prints one line that the
shell script compares:

  raw PORT                      request bytes on stdin -> "STATUS BODY"
                                (STATUS 0: no answer; BODY is the body, or
                                "html" when it is not JSON)
  big PORT METHOD PATH KEY TOTAL [HEADER...]
                                Content-Length TOTAL, streams zeros until an
                                answer arrives -> "STATUS read-all|read-part"
                                (read-all: the server took all TOTAL bytes
                                before answering)
  chunked PORT PATH KEY LIMIT   endless chunked body -> "STATUS sent-over|sent-under"
                                (sent-over: LIMIT bytes went out before the
                                answer)
  expect PORT PATH KEY          Expect: 100-continue, no body -> first status line code
  trickle PORT SECONDS          one header byte every 0.5 s for at most SECONDS
                                -> "STATUS" (0: still open and unanswered)
  slowbody PORT PATH KEY SECONDS  Content-Length 1000000, one byte every
                                0.5 s -> "STATUS"
  slowloris PORT N SECONDS      N connections trickling headers (reopened
                                when closed) while /healthz is asked every
                                0.5 s -> "OK/ASKED"
"""
import json
import select
import socket
import sys
import threading
import time

HOST = "127.0.0.1"


def connect(port, timeout=10):
    s = socket.create_connection((HOST, port), timeout=timeout)
    return s


def parse(resp):
    """(status, body summary) of the first answer in resp."""
    if not resp.startswith(b"HTTP/1."):
        return 0, "none"
    head, _, body = resp.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0, "none"
    length = None
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    if length is not None:
        body = body[:length]
    try:
        j = json.loads(body)
        return status, j.get("error", "json") if isinstance(j, dict) else "json"
    except ValueError:
        return status, "html"


def read_answer(s, deadline):
    """Reads until the headers and the announced body are in, EOF or deadline."""
    resp = b""
    s.setblocking(False)
    while time.time() < deadline:
        r, _, _ = select.select([s], [], [], 0.2)
        if not r:
            continue
        try:
            b = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            break
        if not b:
            break
        resp += b
        st, _ = parse(resp)
        if st and b"\r\n\r\n" in resp:
            head = resp.split(b"\r\n\r\n", 1)[0].lower()
            if b"content-length:" in head:
                n = int(head.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
                if len(resp.split(b"\r\n\r\n", 1)[1]) >= n:
                    break
    return resp


def cmd_raw(port):
    data = sys.stdin.buffer.read()
    s = connect(port)
    s.sendall(data)
    st, body = parse(read_answer(s, time.time() + 10))
    print(st, body)


def stream(s, total, chunk_of, deadline):
    """Sends up to total bytes (chunk_of(n) builds the next piece) while
    watching for an answer; returns (answer bytes, bytes sent)."""
    s.setblocking(False)
    sent, resp, pending = 0, b"", b""
    while time.time() < deadline:
        want_write = sent < total or pending
        r, w, _ = select.select([s], [s] if want_write else [], [], 0.2)
        if r:
            try:
                b = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                b = None
            except OSError:
                break
            if b == b"":
                break
            if b:
                resp += b
                if b"\r\n\r\n" in resp:
                    break
        if w:
            if not pending:
                pending = chunk_of(min(65536, total - sent))
            try:
                n = s.send(pending)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break
            pending = pending[n:]
            sent += n
        if not want_write and not r:
            continue
    resp += read_answer(s, time.time() + 3)
    return resp, sent


def cmd_big(port, method, path, key, total, headers):
    total = int(total)
    s = connect(port)
    h = "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % (method, path, total)
    if key:
        h += "Authorization: Bearer %s\r\n" % key
    for x in headers:
        h += x + "\r\n"
    s.sendall((h + "\r\n").encode())
    zeros = b"\0" * 65536
    resp, sent = stream(s, total, lambda n: zeros[:n], time.time() + 60)
    st, _ = parse(resp)
    print(st, "read-all" if sent >= total else "read-part")


def cmd_chunked(port, path, key, limit):
    limit = int(limit)
    s = connect(port)
    h = "POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" % path
    if key:
        h += "Authorization: Bearer %s\r\n" % key
    s.sendall((h + "\r\n").encode())
    piece = b"%x\r\n" % 65536 + b"\0" * 65536 + b"\r\n"
    resp, sent = stream(s, limit * 2, lambda n: piece, time.time() + 60)
    st, _ = parse(resp)
    print(st, "sent-over" if sent >= limit else "sent-under")


def cmd_expect(port, path, key):
    s = connect(port)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n" % (path, key)).encode())
    resp = read_answer(s, time.time() + 5)
    st, _ = parse(resp)
    print(st)


def trickle(s, data, seconds):
    """Sends data one byte per 0.5 s; returns the answer's status (0: none
    within seconds while the connection stayed open)."""
    end = time.time() + seconds
    i = 0
    s.setblocking(False)
    resp = b""
    while time.time() < end:
        r, _, _ = select.select([s], [], [], 0.5)
        if r:
            try:
                b = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                return parse(resp)[0] or -1
            if not b:
                return parse(resp)[0] or -1
            resp += b
            if b"\r\n\r\n" in resp:
                return parse(resp)[0]
            continue
        try:
            s.send(data[i % len(data):i % len(data) + 1])
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return parse(resp)[0] or -1
        i += 1
    return 0


def cmd_trickle(port, seconds):
    s = connect(port)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    print(trickle(s, b"X-Slow: " + b"a" * 10000, float(seconds)))


def cmd_slowbody(port, path, key, seconds):
    s = connect(port)
    s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: 1000000\r\n\r\n" % (path, key)).encode())
    print(trickle(s, b"\0", float(seconds)))


def cmd_stall(port, path, key, declared, sent, seconds):
    """Declares `declared` body bytes, sends `sent` at once, then nothing:
    prints the answer's status (and its error unless 408), or -1 when the
    connection closed without one."""
    s = connect(port)
    sent = int(sent)
    s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: %d\r\n\r\n" % (path, key, int(declared))).encode())
    try:
        s.sendall(b"\0" * sent)
    except OSError:
        pass  # answered and closed early: the answer says why
    resp = read_answer(s, time.time() + float(seconds))
    st, body = parse(resp)
    print(st or -1, body if st and st != 408 else "")


def cmd_slowloris(port, n, seconds):
    n, seconds = int(n), float(seconds)
    stop = time.time() + seconds
    lock = threading.Lock()
    conns = []

    def opener():
        # keeps n slow connections open, one header byte per second each
        while time.time() < stop:
            with lock:
                alive = len(conns)
            for _ in range(min(150, n - alive)):
                try:
                    s = socket.create_connection((HOST, port), timeout=2)
                    s.setblocking(False)
                    s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                    with lock:
                        conns.append(s)
                except OSError:
                    pass
            with lock:
                keep = []
                for s in conns:
                    try:
                        r, _, _ = select.select([s], [], [], 0)
                        if r and not s.recv(4096):
                            s.close()
                            continue
                        s.send(b"a")
                        keep.append(s)
                    except OSError:
                        s.close()
                conns[:] = keep
            time.sleep(1)

    t = threading.Thread(target=opener, daemon=True)
    t.start()
    time.sleep(min(2.0, seconds / 3))  # let the load build up
    ok = asked = 0
    while time.time() < stop:
        asked += 1
        try:
            s = socket.create_connection((HOST, port), timeout=3)
            s.settimeout(3)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            st, _ = parse(read_answer(s, time.time() + 3))
            ok += st == 200
            s.close()
        except OSError:
            pass
        time.sleep(0.5)
    t.join(5)
    with lock:
        for s in conns:
            s.close()
    print("%d/%d" % (ok, asked))


def main():
    a = sys.argv[1:]
    cmds = {
        "raw": lambda: cmd_raw(int(a[1])),
        "big": lambda: cmd_big(int(a[1]), a[2], a[3], a[4], a[5], a[6:]),
        "chunked": lambda: cmd_chunked(int(a[1]), a[2], a[3], a[4]),
        "expect": lambda: cmd_expect(int(a[1]), a[2], a[3]),
        "trickle": lambda: cmd_trickle(int(a[1]), a[2]),
        "slowbody": lambda: cmd_slowbody(int(a[1]), a[2], a[3], a[4]),
        "slowloris": lambda: cmd_slowloris(int(a[1]), a[2], a[3]),
        "stall": lambda: cmd_stall(int(a[1]), a[2], a[3], a[4], a[5], a[6]),
    }
    if not a or a[0] not in cmds:
        sys.exit(__doc__)
    cmds[a[0]]()


if __name__ == "__main__":
    main()
