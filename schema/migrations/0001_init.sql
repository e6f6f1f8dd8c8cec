-- Beatline SQL schema, migration 1. Applied at start-up by store/db.c in one
-- transaction; PRAGMA user_version records the last applied migration.
-- Units: times in µs (durations) or µs since the Unix epoch (timestamps,
-- *_at columns); sizes in bytes.

CREATE TABLE apps (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
);

-- Per-app keys, stored as BLAKE2b-256 hex of the key text; never the key.
CREATE TABLE app_keys (
    key_hash    TEXT PRIMARY KEY,
    app_id      INTEGER NOT NULL REFERENCES apps(id),
    role        TEXT NOT NULL CHECK (role IN ('ingest', 'upload', 'read')),
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX app_keys_app ON app_keys(app_id, role);

CREATE TABLE builds (
    id                 INTEGER PRIMARY KEY,
    app_id             INTEGER NOT NULL REFERENCES apps(id),
    name               TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    mapping_hash       TEXT,     -- hex XXH128 of the decompressed mapping.txt
    mapping_size       INTEGER,
    mapping_at         INTEGER,
    methodids_hash     TEXT,
    methodids_count    INTEGER,
    methodids_obfuscated INTEGER,
    methodids_at       INTEGER,
    symbolicated_at    INTEGER,  -- when methods were (re)symbolicated
    batches            INTEGER NOT NULL DEFAULT 0,
    records            INTEGER NOT NULL DEFAULT 0,
    UNIQUE (app_id, name)
);

-- One row per accepted batch once processed: the guard against counting a
-- batch twice (its raw file may be reprocessed after a crash).
CREATE TABLE batches (
    batch_id      TEXT PRIMARY KEY,     -- canonical UUID text
    app_id        INTEGER NOT NULL REFERENCES apps(id),
    build_id      INTEGER NOT NULL REFERENCES builds(id),
    received_at   INTEGER NOT NULL,
    processed_at  INTEGER NOT NULL,
    records       INTEGER NOT NULL,
    malformed     INTEGER NOT NULL,     -- records that broke the tree rules
    bytes         INTEGER NOT NULL      -- decompressed size
);

-- Symbolicated methods of a build: methodId -> original names.
CREATE TABLE methods (
    id           INTEGER PRIMARY KEY,
    build_id     INTEGER NOT NULL REFERENCES builds(id),
    method_id    INTEGER NOT NULL,
    class        TEXT NOT NULL,
    name         TEXT NOT NULL,
    descriptor   TEXT NOT NULL,
    source_file  TEXT NOT NULL,
    UNIQUE (build_id, method_id)
);

-- Slow-method aggregates per build, method, main thread or not, and hour
-- (start of the hour, µs since the epoch, from the batch's wall clock).
CREATE TABLE method_stats (
    build_id   INTEGER NOT NULL,
    method     INTEGER NOT NULL REFERENCES methods(id),
    main       INTEGER NOT NULL,
    hour       INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,     -- inclusive
    self_us    INTEGER NOT NULL,     -- exclusive
    max_us     INTEGER NOT NULL,
    sketch     BLOB NOT NULL,        -- agg/sketch.h serialised histogram of inclusive µs
    PRIMARY KEY (build_id, method, main, hour)
) WITHOUT ROWID;

-- Merged call tree per build and main thread or not: one node per call path.
CREATE TABLE call_nodes (
    id         INTEGER PRIMARY KEY,
    build_id   INTEGER NOT NULL,
    main       INTEGER NOT NULL,
    parent     INTEGER NOT NULL,     -- 0 for a root
    method     INTEGER NOT NULL REFERENCES methods(id),
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,
    self_us    INTEGER NOT NULL,
    UNIQUE (build_id, main, parent, method)
);
