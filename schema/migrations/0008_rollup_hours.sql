-- Beatline SQL schema, migration 8: all-builds hourly rollups, time-major
-- figure indexes and rebuilds in bounded steps (issue 12).
--
-- A time range of an app reads its whole days from rollup_days and the
-- hours at its edges from rollup_hours (per app, method identity, hour and
-- thread kind: what method_stats holds per build, summed over the app's
-- builds), first their figures and percentiles (q3) alone through the
-- time-major covering indexes below (only the range's entries), then the
-- sketches of the methods that can still reach the answer.
-- server/store/rollups.h describes the contract, store/slow_methods.c reads
-- them.
--
-- Rebuilds (rollup_dirty) run in bounded steps, each its own transaction
-- (bl_rollups_refresh_step, started by the processor), not in one: a step
-- takes an app's mark and records a cursor in rollup_rebuild; the next
-- steps delete the app's rollup rows (cursor build -1), then add its
-- method_stats rows after the cursor, in key order, as the writer adds a
-- flush's rows. Meanwhile the
-- writer adds a row only when its key is at or before the cursor (the later
-- ones are still to be read), and queries of the app read method_stats. A
-- mark made during a rebuild starts it over.

CREATE TABLE rollup_hours (
    scope      INTEGER NOT NULL,  -- minus an app id (apps only)
    sig        INTEGER NOT NULL,
    hour       INTEGER NOT NULL,  -- as method_stats.hour
    main       INTEGER NOT NULL,  -- 1 main thread, 0 other threads (as method_stats)
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,
    self_us    INTEGER NOT NULL,
    max_us     INTEGER NOT NULL,
    q3         BLOB NOT NULL,     -- p50, p90, p99 of the sketch, NOT clamped
    sketch     BLOB NOT NULL,
    PRIMARY KEY (scope, sig, hour, main)
) WITHOUT ROWID;
CREATE INDEX rollup_hours_figures
    ON rollup_hours(scope, main, hour, sig, count, total_us, self_us, max_us, q3);

-- rollup_days keeps kinds 1 (main thread) and 2 (both) from here on, as
-- rollup_totals, no longer 0 and 1: a query of all threads
-- reads one row per method and day, not two (the rebuild below rewrites
-- them). Time-major: a range reads its own days' entries, not every day's.
DROP INDEX rollup_days_figures;
CREATE INDEX rollup_days_figures
    ON rollup_days(scope, main, day, sig, count, total_us, self_us, max_us, q3);

-- An app whose rollups are being rebuilt: they hold its method_stats rows
-- whose key (build_id, method, main, hour) is at or before the cursor, and
-- only those (builds in id order). Gone when the rebuild ends.
CREATE TABLE rollup_rebuild (
    app_id  INTEGER PRIMARY KEY,
    build   INTEGER NOT NULL,
    method  INTEGER NOT NULL,
    main    INTEGER NOT NULL,
    hour    INTEGER NOT NULL
);

-- every app's rollups gain their hours: rebuilt (by the server's start)
INSERT INTO rollup_dirty(app_id) SELECT id FROM apps WHERE id <> 0 ON CONFLICT DO NOTHING;
