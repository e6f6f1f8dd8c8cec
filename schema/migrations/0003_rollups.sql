-- Beatline SQL schema, migration 3: slow-methods rollups (issue 12).
--
-- The slow-methods answer groups methods by their names (class, name,
-- descriptor, source file) across builds. method_stats keeps them per build,
-- methods row, thread kind and hour; the rollups below keep the same figures
-- per method identity ("sig") summed per day and in total, for one build and
-- for all the app's builds, so that a query reads one row per method (or per
-- method and day) instead of one per build, method and hour.
-- server/store/rollups.h describes the contract; server/store/slow_methods.c
-- reads them.
--
-- Kept in step with method_stats by the writer (bl_rollups_add), in the
-- same transaction as its method_stats writes. Renamed methods (a
-- re-symbolication), deleted method_stats rows and writes by anyone else
-- mark the app in rollup_dirty (triggers below), and its rollups are
-- rebuilt from method_stats (bl_rollups_refresh: at start-up and at the
-- writer's next flush); queries of a dirty app read method_stats meanwhile.
-- Existing databases are marked dirty here and so backfilled at start-up.

-- A method identity of an app: what the slow-methods answer groups by.
CREATE TABLE method_sigs (
    id           INTEGER PRIMARY KEY,
    app_id       INTEGER NOT NULL REFERENCES apps(id),
    class        TEXT NOT NULL,
    name         TEXT NOT NULL,
    descriptor   TEXT NOT NULL,
    source_file  TEXT NOT NULL,
    UNIQUE (app_id, class, name, descriptor, source_file)
);

-- The identity of a methods row (NULL until its stats reach the rollups).
ALTER TABLE methods ADD COLUMN sig INTEGER REFERENCES method_sigs(id);
CREATE INDEX methods_sig ON methods(sig);

-- scope: a build id (> 0), or minus an app id (< 0) for all its builds.
-- main: 1 main thread, 0 other threads (as in method_stats), 2 both; the
-- totals keep 1 and 2 only (what a query asks for), the days 0 and 1.
-- Figures as in method_stats: count, µs sums, max, sketch of inclusive µs;
-- q3: p50, p90, p99 of the sketch clamped to max_us (sketch_q3, 24 bytes),
-- so that a query of all the data reads no sketch.
CREATE TABLE rollup_totals (
    scope      INTEGER NOT NULL,
    sig        INTEGER NOT NULL,
    main       INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,
    self_us    INTEGER NOT NULL,
    max_us     INTEGER NOT NULL,
    q3         BLOB NOT NULL,
    sketch     BLOB NOT NULL,
    PRIMARY KEY (scope, sig, main)
) WITHOUT ROWID;
-- What a query of all the data reads, without the sketches' pages (a
-- sketch of a busy method is kilobytes: the table's rows spill to overflow
-- pages and a scan of them reads megabytes).
CREATE INDEX rollup_totals_figures
    ON rollup_totals(scope, main, sig, count, total_us, self_us, max_us, q3);

-- The same per day, for apps only (scope < 0): day = start of the UTC day
-- (µs since the epoch) of the method_stats hour.
CREATE TABLE rollup_days (
    scope      INTEGER NOT NULL,
    sig        INTEGER NOT NULL,
    day        INTEGER NOT NULL,
    main       INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    total_us   INTEGER NOT NULL,
    self_us    INTEGER NOT NULL,
    max_us     INTEGER NOT NULL,
    q3         BLOB NOT NULL,    -- p50, p90, p99 of the sketch, NOT clamped
    sketch     BLOB NOT NULL,
    PRIMARY KEY (scope, sig, day, main)
) WITHOUT ROWID;
-- A time range's first pass (store/slow_methods.c): figures and q3 of the
-- days, by sig, without the sketches' pages.
CREATE INDEX rollup_days_figures
    ON rollup_days(scope, main, sig, day, count, total_us, self_us, max_us, q3);

-- The first and last method_stats hour of a scope (a query whose hours
-- cover them reads rollup_totals).
CREATE TABLE rollup_spans (
    scope       INTEGER PRIMARY KEY,
    first_hour  INTEGER NOT NULL,
    last_hour   INTEGER NOT NULL
);

-- Apps whose rollups must be rebuilt from method_stats before use.
CREATE TABLE rollup_dirty (
    app_id  INTEGER PRIMARY KEY
);

-- Time ranges read the hours at their edges (not whole days) here.
CREATE INDEX method_stats_hour ON method_stats(hour);

INSERT INTO method_sigs(app_id, class, name, descriptor, source_file)
    SELECT DISTINCT b.app_id, m.class, m.name, m.descriptor, m.source_file
    FROM methods m JOIN builds b ON b.id = m.build_id WHERE true
    ON CONFLICT DO NOTHING;
UPDATE methods SET sig = (
    SELECT s.id FROM method_sigs s JOIN builds b ON b.app_id = s.app_id
    WHERE b.id = methods.build_id AND s.class = methods.class AND s.name = methods.name
      AND s.descriptor = methods.descriptor AND s.source_file = methods.source_file);
INSERT INTO rollup_dirty(app_id) SELECT id FROM apps;

-- A methods row gets its identity when its first stats reach the rollups
-- (bl_rollups_add) or when its app's rollups are rebuilt: symbolicating a
-- build writes nothing more. A renamed row loses it; when it has stats the
-- app's rollups are rebuilt (its figures are under the old identity).
CREATE TRIGGER methods_sig_rename AFTER UPDATE OF class, name, descriptor, source_file ON methods
WHEN old.class IS NOT new.class OR old.name IS NOT new.name
  OR old.descriptor IS NOT new.descriptor OR old.source_file IS NOT new.source_file
BEGIN
    UPDATE methods SET sig = NULL WHERE id = new.id;
    INSERT INTO rollup_dirty(app_id)
        SELECT app_id FROM builds WHERE id = new.build_id
          AND EXISTS (SELECT 1 FROM method_stats WHERE build_id = new.build_id
                      AND method = new.id)
        ON CONFLICT DO NOTHING;
END;

-- Only the writer inserts and updates method_stats, and it adds the same
-- rows to the rollups itself, in the same transaction (bl_rollups_add). A
-- tool that inserts or updates method_stats must mark the app itself
-- (INSERT INTO rollup_dirty); no trigger does it, as a trigger telling the
-- writer's connection apart would need a function only the server defines,
-- and the sqlite3 shell could then write no row. A deleted row marks the
-- app for a rebuild.
CREATE TRIGGER method_stats_rollup_delete AFTER DELETE ON method_stats BEGIN
    INSERT INTO rollup_dirty(app_id) SELECT app_id FROM builds WHERE id = old.build_id
        ON CONFLICT DO NOTHING;
END;

-- A build moved to another app (a deletion in progress: retention's
-- graveyard sets its app_id to 0): both apps' rows are rebuilt.
-- Its methods lose their identities (of the old app).
CREATE TRIGGER builds_rollup_moved AFTER UPDATE OF app_id ON builds
WHEN old.app_id IS NOT new.app_id BEGIN
    UPDATE methods SET sig = NULL WHERE build_id = new.id;
    INSERT INTO rollup_dirty(app_id) VALUES (old.app_id), (new.app_id) ON CONFLICT DO NOTHING;
END;
