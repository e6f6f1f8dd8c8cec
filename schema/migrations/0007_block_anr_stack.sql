-- Beatline SQL schema, migration 7 (issue 13): the ANR stack of a block group.
--
-- A block reported with "anr": true carries the main thread's Java stack
-- sampled by the runtime's watchdog (schema/batch-format.md, field
-- "stack"). Per group and hour the stack of the latest such block is kept
-- as sent (obfuscated in an obfuscated build; retraced when answered):
-- frames innermost first, in StackTraceElement.toString() form, joined by
-- '\n'. NULL when the hour had no ANR with a stack.
ALTER TABLE block_stats ADD COLUMN anr_stack TEXT;
-- begin of the block whose stack anr_stack is, µs since the epoch
ALTER TABLE block_stats ADD COLUMN anr_at INTEGER;
