-- Beatline SQL schema, migration 10 (issue 16): network requests.
--
-- A "network" event of a batch (schema/batch-format.md) is one HTTP request
-- the app made. Requests are grouped per build by host, HTTP method and URL
-- pattern (agg/urlpattern.h: the path with its high-cardinality segments
-- replaced by placeholders, or the app's user pattern that matched; query
-- parameter values are never stored, nor query strings). Figures per group
-- and hour; per group, hour and calling method, counts.

-- An app's user URL patterns (PUT /v1/apps/{app}/url-patterns), in order:
-- the first that matches a request gives its pattern. Applied to batches
-- processed after they were set; stored groups are never rewritten.
CREATE TABLE url_patterns (
    app_id   INTEGER NOT NULL REFERENCES apps(id),
    pos      INTEGER NOT NULL,    -- 0-based order in the list
    pattern  TEXT NOT NULL,
    PRIMARY KEY (app_id, pos)
) WITHOUT ROWID;

-- When an app's list was last set (µs since the epoch), also for an empty list.
CREATE TABLE url_pattern_sets (
    app_id      INTEGER PRIMARY KEY REFERENCES apps(id),
    updated_at  INTEGER NOT NULL
);

CREATE TABLE net_groups (
    id           INTEGER PRIMARY KEY,
    build_id     INTEGER NOT NULL REFERENCES builds(id),
    host         TEXT NOT NULL,     -- lower-case host
    http_method  TEXT NOT NULL,     -- "GET", "POST", ...
    pattern      TEXT NOT NULL,     -- path pattern (+ "?name={}&..." for kept query names)
    UNIQUE (build_id, host, http_method, pattern)
);

-- Per group and hour (hour number: µs since the epoch / 3600e6, of the
-- request's begin on the batch's wall clock). Durations in µs.
CREATE TABLE net_stats (
    grp          INTEGER NOT NULL REFERENCES net_groups(id),
    hour         INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    errors       INTEGER NOT NULL,  -- status >= 400 or a failure ("error")
    s1xx         INTEGER NOT NULL,  -- requests by status class
    s2xx         INTEGER NOT NULL,
    s3xx         INTEGER NOT NULL,
    s4xx         INTEGER NOT NULL,
    s5xx         INTEGER NOT NULL,
    failed       INTEGER NOT NULL,  -- no status (failed before a response)
    max_us       INTEGER NOT NULL,  -- longest total_us
    sketch       BLOB NOT NULL,     -- agg/sketch.h histogram of total_us
    ttfb_max_us  INTEGER NOT NULL,
    ttfb_sketch  BLOB NOT NULL,     -- histogram of ttfb_us (requests that had one; may be empty)
    dns_us       INTEGER NOT NULL,  -- sum of dns_us over the dns_n requests that had it
    dns_n        INTEGER NOT NULL,
    connect_us   INTEGER NOT NULL,
    connect_n    INTEGER NOT NULL,
    tls_us       INTEGER NOT NULL,
    tls_n        INTEGER NOT NULL,
    bytes_in     INTEGER NOT NULL,
    bytes_out    INTEGER NOT NULL,
    PRIMARY KEY (grp, hour)
) WITHOUT ROWID;

-- Requests per group, hour and caller (the build's methodId of the app
-- method running on the calling thread when the request started; requests
-- without a caller are not here).
CREATE TABLE net_callers (
    grp        INTEGER NOT NULL,
    hour       INTEGER NOT NULL,
    method_id  INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    PRIMARY KEY (grp, hour, method_id)
) WITHOUT ROWID;
