-- Beatline SQL schema, migration 2: warnings about a build's uploads, shown
-- by GET /v1/apps/{app}/builds. A JSON array of strings; NULL = none.
-- Written by the processor when the build's method-ID file or mapping
-- changes (e.g. a headerless method-ID file of obfuscated names,
-- server/ingest/namecheck.h).
ALTER TABLE builds ADD COLUMN warnings TEXT;
