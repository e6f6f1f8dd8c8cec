/*
 * rebuilder.h — the server's rollups rebuild thread (issue 12): rollups that
 * a migration, a re-symbolication, a deleted build or a tool marked for a
 * rebuild (store/rollups.h) are rebuilt here, in the background, in bounded
 * steps, so that opening the database stays fast (CLI commands, tools) and
 * ingest is never held for a whole rebuild.
 *
 * Started by the processor (bl_processor_start) with a connection of its
 * own; the server listens and ingests meanwhile, and the slow-methods
 * answers of an app being rebuilt come from method_stats (exact, slower)
 * until its rebuild ends. Each step is one write transaction of at most
 * BL_REBUILD_STEP method_stats rows, fewer when steps take longer than
 * about 250 ms (the budget adapts); after each the thread pauses 120 ms,
 * longer than a waiting writer's busy-handler poll, so the writer takes
 * the lock between steps, and before each it lets the writer go first
 * while it has batches queued (up to 200 ms).
 * When nothing is marked the thread looks again every second (one indexed
 * read). A step that fails (a malformed sketch a tool wrote) is undone and
 * logged; the thread tries again a minute later (a second later when the
 * write lock stayed taken for SQLite's busy timeout, 5 s).
 */
#ifndef BL_REBUILDER_H
#define BL_REBUILDER_H

#include "common/blerr.h"
#include "pipeline/processor.h"

/* method_stats rows per step (one transaction) */
#define BL_REBUILD_STEP 2000

typedef struct bl_rebuilder bl_rebuilder;

/* Starts the thread on database `db_path` (opened writable: the schema is
 * migrated already). proc (borrowed, may be NULL): the writer it yields
 * to. BL_EIO (message in errbuf), BL_ENOMEM. */
bl_err bl_rebuilder_start(const char *db_path, bl_processor *proc, bl_rebuilder **out,
                          char *errbuf, size_t errlen);

/* Stops the thread after its current step (committed: the next start goes
 * on from its cursor), closes its connection, frees r. NULL is a no-op. */
void bl_rebuilder_stop(bl_rebuilder *r);

#endif
