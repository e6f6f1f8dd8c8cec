-- Beatline SQL schema, migration 4: retention (issue 12, part 3).
--
-- Per-app retention set with `beatline-server app set NAME --keep-raw-days N
-- --keep-days N`: NULL = the server's option (--keep-raw-days,
-- --keep-days), 0 = keep for ever. Days of 86400 s.
ALTER TABLE apps ADD COLUMN keep_raw_days INTEGER;
ALTER TABLE apps ADD COLUMN keep_days INTEGER;

-- When the batch's raw file (batches/done/UUID.EXT) was deleted by raw
-- retention (µs); NULL while it is kept. The row itself stays: it is the
-- guard against counting the batch twice.
ALTER TABLE batches ADD COLUMN raw_deleted_at INTEGER;
-- raw retention walks the kept files of an app, oldest first
CREATE INDEX batches_raw_kept ON batches(app_id, received_at) WHERE raw_deleted_at IS NULL;
-- a build's batches (deleting a build; its last activity)
CREATE INDEX batches_build ON batches(build_id, received_at);

-- The graveyard: a build being deleted (DELETE .../builds/{build}, or all
-- its aggregates expired) is moved here at once — builds.app_id = 0 and
-- builds.name = its id as text — so no query, upload or batch sees it any
-- more, and its rows are then deleted in small slices in the background
-- (server/pipeline/retention.h). The row has no keys and its name is not a
-- valid app name: nobody can reach it.
INSERT INTO apps(id, name, created_at) VALUES (0, '', 0);

-- Builds being deleted: what they were, so that the background deletion can
-- finish after a restart. Removed with the builds row, last.
CREATE TABLE doomed_builds (
    build_id   INTEGER PRIMARY KEY,   -- builds.id (now under app 0)
    app_id     INTEGER NOT NULL,      -- the app it belonged to
    name       TEXT NOT NULL,         -- its name there
    reason     TEXT NOT NULL,         -- 'deleted' (HTTP DELETE) or 'expired'
    at         INTEGER NOT NULL       -- µs
);
