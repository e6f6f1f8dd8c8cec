-- Beatline SQL schema, migration 9 (issue 15): app launches.
--
-- A launch is a "launch" event of a batch (schema/batch-format.md): one
-- cold, warm or hot start of the app, with the durations of its lifecycle
-- phases, its time to initial display (TTID) and, when the app reported
-- it, its time to full display (TTFD), and the main thread's calls from
-- the launch's start to its first frame. Launches are kept per build, kind
-- and hour; the merged call tree per build and kind.
--
-- kind: 0 cold, 1 warm, 2 hot. hour: hour number (µs since the epoch /
-- 3600e6, floored) of the launch's start on the batch's wall clock
-- (origin_wall_us + start_us), as block_stats.hour.

-- Launches per build, kind and hour.
CREATE TABLE launch_stats (
    build_id     INTEGER NOT NULL REFERENCES builds(id),
    kind         INTEGER NOT NULL,
    hour         INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    first_at     INTEGER NOT NULL,  -- earliest launch start, µs since the epoch
    last_at      INTEGER NOT NULL,  -- latest launch start, µs since the epoch
    activity     TEXT,              -- "activity" of the latest launch that named one
                                    -- (as sent: obfuscated in an obfuscated build); NULL: none
    activity_at  INTEGER,           -- start of that launch, µs since the epoch
    PRIMARY KEY (build_id, kind, hour)
) WITHOUT ROWID;

-- Durations per build, kind, measure and hour. measure: 0
-- application_attach_base_context, 1 application_on_create, 2
-- activity_on_create, 3 activity_on_start, 4 activity_on_resume (each a
-- phase's end - begin), 5 ttid (first_frame_us - start_us), 6 ttfd
-- (fully_drawn_us - start_us). count: launches that had the measure.
CREATE TABLE launch_measures (
    build_id  INTEGER NOT NULL,
    kind      INTEGER NOT NULL,
    measure   INTEGER NOT NULL,
    hour      INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    max_us    INTEGER NOT NULL,
    sketch    BLOB NOT NULL,        -- agg/sketch.h histogram of the durations, µs
    PRIMARY KEY (build_id, kind, measure, hour)
) WITHOUT ROWID;

-- Methods called within launch windows, per build, kind, methodId and
-- hour: calls, inclusive and exclusive µs summed, launches they ran in.
CREATE TABLE launch_methods (
    build_id   INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    method_id  INTEGER NOT NULL,    -- the build's methodId (names: methods)
    hour       INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,
    self_us    INTEGER NOT NULL,
    launches   INTEGER NOT NULL,
    PRIMARY KEY (build_id, kind, method_id, hour)
) WITHOUT ROWID;

-- Merged call tree of a build's launches of one kind: one node per call
-- path (parent node, methodId), counts and µs summed (as block_nodes).
CREATE TABLE launch_nodes (
    id         INTEGER PRIMARY KEY,
    build_id   INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    parent     INTEGER NOT NULL,    -- 0 for a root
    method_id  INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,
    self_us    INTEGER NOT NULL,
    UNIQUE (build_id, kind, parent, method_id)
);
