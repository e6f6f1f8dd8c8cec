-- Beatline SQL schema, migration 2.
--
-- Warnings about a build's uploads, shown by GET /v1/apps/{app}/builds: a
-- JSON array of strings; NULL = none. Written by the processor when the
-- build's method-ID file or mapping changes (e.g. a method-ID file of
-- obfuscated names read as original, server/ingest/namecheck.h).
ALTER TABLE builds ADD COLUMN warnings TEXT;

-- Per-app ingest quotas (server/pipeline/quota.h) set with
-- `beatline-server app set NAME QUOTA=N`: NULL = the server's option,
-- 0 = no limit.
ALTER TABLE apps ADD COLUMN quota_waiting_builds INTEGER;
ALTER TABLE apps ADD COLUMN quota_waiting_batches INTEGER;
ALTER TABLE apps ADD COLUMN quota_waiting_bytes INTEGER;
ALTER TABLE apps ADD COLUMN quota_new_builds INTEGER;
