#!/usr/bin/env python3
"""Writes batch.json (a batch in beatline-batch's JSON form with 15 launch
events: 10 cold, 3 warm, 2 hot) and expected.json (the percentile part of
GET /launches for it) of this golden case. Run from this folder.

Every duration is a midpoint of an agg/sketch.h bucket, (64 + s) * 2^k +
2^(k-1), which the sketch keeps exactly: the expected percentiles are the
exact nearest-rank ones (rank ceil(q * n)), computed here, not by the
server. Phase p of a launch lasts such a value with k = 8 + p, TTID k = 14,
TTFD k = 15; s is a permutation of the launches per measure. Cold starts
begin before the batch's origin (negative start_us)."""
import json, math

PH = ["application_attach_base_context", "application_on_create", "activity_on_create",
      "activity_on_start", "activity_on_resume"]


def exact(s, k):
    return (64 + s) * (1 << k) + (1 << (k - 1))


KINDS = {"cold": (10, [0, 1, 2, 3, 4], lambda i: i % 5 != 4 and i != 7),
         "warm": (3, [2, 3, 4], lambda i: False),
         "hot": (2, [3, 4], lambda i: i == 1)}
events, vals, idx = [], {}, 0
for kind, (n, phs, has_fd) in KINDS.items():
    for i in range(n):
        base = idx * 5000000
        idx += 1
        start = base - 150000 if kind == "cold" else base + 1000

        def s_of(m):
            return (i * 7 + m * 3 + len(kind)) % 10
        ph, cur = {}, start + 500
        for p in phs:
            d = exact(s_of(p), 8 + p)
            ph[PH[p]] = [cur, cur + d]
            vals.setdefault((kind, PH[p]), []).append(d)
            cur += d + 500
        ttid = exact(s_of(5), 14)
        ff = start + ttid
        assert ff >= cur
        vals.setdefault((kind, "ttid"), []).append(ttid)
        ev = {"type": "launch", "kind": kind, "thread": 0, "device": "dev-%d" % (idx % 3),
              "start_us": start, "phases": ph, "first_frame_us": ff}
        if has_fd(i):
            ttfd = exact(s_of(6), 15)
            ev["fully_drawn_us"] = start + ttfd
            vals.setdefault((kind, "ttfd"), []).append(ttfd)
        if kind != "hot":
            ev["activity"] = "com.example.Main"
        events.append(ev)
batch = {"batch_id": "22222222-2222-4222-8222-000000000001", "app": "shop", "build": "1.0",
         "session_id": "golden", "origin_wall_us": 1795960000000000,
         "device": {"model": "m", "os": "14", "sdk": 34},
         "threads": [{"id": 1, "name": "main", "main": True, "truncated": False,
                      "records": [[1, "i", 0], [1, "o", 10]]}],
         "events": events}
with open("batch.json", "w") as f:
    json.dump(batch, f, indent=1)
    f.write("\n")


def q(v, p):
    v = sorted(v)
    return v[max(1, math.ceil(p * len(v))) - 1]


def fig(v):
    return {"count": len(v), "p50_us": q(v, .5), "p90_us": q(v, .9),
            "p99_us": min(q(v, .99), max(v)), "max_us": max(v)}


out = []
for kind, (n, phs, _) in KINDS.items():
    out.append({"kind": kind, "count": n,
                "phases": [dict(phase=PH[p], **fig(vals[(kind, PH[p])])) for p in phs],
                "ttid": fig(vals[(kind, "ttid")]),
                "ttfd": fig(vals[(kind, "ttfd")]) if (kind, "ttfd") in vals else None})
with open("expected.json", "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")
