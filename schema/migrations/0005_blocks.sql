-- Beatline SQL schema, migration 5 (issue 13): main-thread blocks.
--
-- A block is a message whose dispatch stalled the main thread (a "block"
-- event of a batch, schema/batch-format.md). Blocks are grouped per build by
-- their signature path (agg/blocks.h): the methodIds of the heaviest call
-- path, root first, as decimal text joined by ',' ('' when the window had no
-- calls). The signature text shown by the API is computed from the path's
-- method names when asked (so it follows late symbolication).
CREATE TABLE block_groups (
    id        INTEGER PRIMARY KEY,
    build_id  INTEGER NOT NULL REFERENCES builds(id),
    path      TEXT NOT NULL,
    UNIQUE (build_id, path)
);

-- Per group and hour (hour number: µs since the epoch / 3600e6, of the
-- block's begin on the batch's wall clock).
CREATE TABLE block_stats (
    grp       INTEGER NOT NULL REFERENCES block_groups(id),
    hour      INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    anrs      INTEGER NOT NULL,     -- blocks reported with "anr": true
    max_us    INTEGER NOT NULL,     -- longest block (end - begin), µs
    sketch    BLOB NOT NULL,        -- agg/sketch.h histogram of block durations, µs
    first_at  INTEGER NOT NULL,     -- earliest block begin, µs since the epoch
    last_at   INTEGER NOT NULL,     -- latest block begin, µs since the epoch
    target    TEXT NOT NULL,        -- the message target of the block at last_at
    PRIMARY KEY (grp, hour)
) WITHOUT ROWID;

-- Devices (kind 0: the event's "device") and sessions (kind 1: the batch's
-- session_id) seen per group and hour: exact distinct counts.
CREATE TABLE block_seen (
    grp       INTEGER NOT NULL,
    kind      INTEGER NOT NULL,
    value     TEXT NOT NULL,
    hour      INTEGER NOT NULL,
    PRIMARY KEY (grp, kind, value, hour)
) WITHOUT ROWID;

-- Merged call tree of a group's blocks: one node per call path
-- (parent node, methodId), counts and µs summed.
CREATE TABLE block_nodes (
    id         INTEGER PRIMARY KEY,
    grp        INTEGER NOT NULL,
    parent     INTEGER NOT NULL,    -- 0 for a root
    method_id  INTEGER NOT NULL,    -- the build's methodId (names: methods)
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,
    self_us    INTEGER NOT NULL,
    UNIQUE (grp, parent, method_id)
);
