-- Beatline SQL schema, migration 6: retention keeps the rollups exact
-- (issue 12).
--
-- Aggregate expiry (store/retention.c) subtracts the method_stats rows it
-- deletes from the rollups itself, in the same transaction
-- (bl_rollups_sub) and takes back the dirty mark its deletes make when the
-- app was clean before. Other deletes mark the app dirty (a rebuild).
--
-- Builds being deleted live in the graveyard app 0, which nobody queries:
-- it keeps no rollups, so deleting its builds' rows in slices marks
-- nothing (before, every slice marked app 0 for a rebuild), and moving a
-- build there rebuilds only the app it left (once per deleted build) and
-- drops the build's own rollup rows.
DROP TRIGGER method_stats_rollup_delete;
CREATE TRIGGER method_stats_rollup_delete AFTER DELETE ON method_stats BEGIN
    INSERT INTO rollup_dirty(app_id) SELECT app_id FROM builds
        WHERE id = old.build_id AND app_id <> 0 ON CONFLICT DO NOTHING;
END;

DROP TRIGGER builds_rollup_moved;
CREATE TRIGGER builds_rollup_moved AFTER UPDATE OF app_id ON builds
WHEN old.app_id IS NOT new.app_id BEGIN
    UPDATE methods SET sig = NULL WHERE build_id = new.id;
    INSERT INTO rollup_dirty(app_id) SELECT old.app_id WHERE old.app_id <> 0
        ON CONFLICT DO NOTHING;
    INSERT INTO rollup_dirty(app_id) SELECT new.app_id WHERE new.app_id <> 0
        ON CONFLICT DO NOTHING;
    DELETE FROM rollup_totals WHERE scope = new.id AND new.app_id = 0;
    DELETE FROM rollup_spans WHERE scope = new.id AND new.app_id = 0;
END;

DELETE FROM rollup_dirty WHERE app_id = 0;
DELETE FROM rollup_totals WHERE scope = 0 OR scope IN (SELECT id FROM builds WHERE app_id = 0);
DELETE FROM rollup_days WHERE scope = 0;
DELETE FROM rollup_spans WHERE scope = 0 OR scope IN (SELECT id FROM builds WHERE app_id = 0);
