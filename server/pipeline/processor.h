/*
 * processor.h — the processing pipeline: the threads that turn accepted
 * raw batches into call trees and aggregates in SQLite.
 *
 *   HTTP thread: validate, write the raw batch durably (datadir.h), enqueue.
 *   bl-prep:     read, decompress, decode, rebuild call trees per thread
 *                (agg/calltree.h) of the next batches (prep.h).
 *   bl-writer:   symbolicate (method-ID file of the build, then the mapping
 *                when names are obfuscated) → aggregate per method and per
 *                call path, many batches per round (transaction).
 *   bl-commit:   writes a finished round's deltas and commits it while the
 *                writer aggregates the next round (proc_commit.c).
 *   bl-checkpoint: syncs the WAL (the writer connection's commits do not),
 *                then moves the committed rounds' raw files to batches/done
 *                and counts them, then checkpoints.
 *
 * A batch whose build has no method-ID file yet (or no mapping while its
 * method-ID file says names are obfuscated) waits in batches/pending and is
 * processed when the upload arrives: nothing lost — unless it waits longer
 * than waiting_expiry_s, when it is deleted and counted (st.expired). What
 * waits counts against its app's quotas (quota.h, bl_processor_quota),
 * checked by the HTTP thread before the 202. The batches table guards
 * against counting a batch twice (after a crash between commit and move).
 * At start the writer re-registers builds found on disk and re-queues every
 * pending batch, so what was acknowledged survives a kill -9.
 *
 * HTTP threads never wait on SQLite writes: they only enqueue.
 */
#ifndef BL_PROCESSOR_H
#define BL_PROCESSOR_H

#include <stdint.h>
#include "common/blerr.h"
#include "common/decomp.h"
#include "pipeline/quota.h"

typedef struct bl_proc_opts {
    const char *data_dir;
    const char *node_name;        /* PostgreSQL: this node's lease owner name, at most
                                   * BL_QUEUE_NODE_MAX - 1 bytes; NULL or "": host:pid:random */
    uint32_t max_batches_per_txn; /* items (batches, build changes) committed together at
                                   * most, default 64 */
    uint32_t txn_max_ms;          /* a transaction takes batches queued while it is open
                                   * for at most this long (ms, from its first item),
                                   * default 1000; then it commits */
    uint32_t txn_idle_ms;         /* with nothing queued, it waits this long (ms) for more
                                   * before committing: default 20 (0 = the default,
                                   * BL_TXN_IDLE_NONE = no wait) */
    uint64_t max_decompressed;    /* bytes, default 256 MiB */
    uint32_t max_nodes_per_build; /* call-path nodes per build and thread kind, default 1,000,000 */
    uint32_t prep_threads;        /* threads that read, decompress, decode and rebuild the
                                   * call trees of the next batches of a transaction while
                                   * the writer aggregates (pipeline/prep.h): 0 = default
                                   * (1), BL_PREP_NONE = none (the writer does it all),
                                   * at most 8 */
    bl_quota_limits quota;        /* per-app ingest quotas (quota.h); 0 = no limit */
    uint64_t waiting_expiry_s;    /* a batch waiting for its build's uploads longer than
                                   * this (seconds, from its file's mtime) is deleted and
                                   * counted in `expired`; default 7 days; at most
                                   * BL_WAITING_EXPIRY_MAX (larger values are taken as
                                   * that) */
    uint32_t test_commit_delay_ms; /* tests only: the committer waits this long (ms)
                                    * before each COMMIT; 0 = none */
    int test_fail_enqueue;         /* tests only: bl_processor_enqueue_admitted fails
                                    * (BL_ENOMEM) as when out of memory; 0 = never */
} bl_proc_opts;

#define BL_PREP_NONE UINT32_MAX
#define BL_TXN_IDLE_NONE UINT32_MAX
/* inclusive times (8 bytes each, twice while a commit sorts them) a
 * transaction keeps at most before it stops taking batches: 128 MiB */
#define BL_TXN_MAX_VALS ((size_t)16 << 20)

/* The largest waiting_expiry_s: 100 years of 365.25 days, in seconds. */
#define BL_WAITING_EXPIRY_MAX UINT64_C(3155760000)

/* Figures for /metrics (monotonic counters unless said). */
typedef struct bl_proc_stats {
    uint64_t queue_depth;      /* gauge: batches queued for the writer */
    uint64_t waiting;          /* gauge: batches waiting for build uploads */
    uint64_t batches;          /* processed */
    uint64_t records;          /* processed */
    uint64_t malformed;        /* records that broke call-tree rules */
    uint64_t unknown_method;   /* records of calls whose methodId is not in the
                                * build's method-ID file ("unknown method N") */
    uint64_t truncated;        /* thread segments whose ring had wrapped (records lost in the app) */
    uint64_t failed;           /* batches that could not be processed (moved to failed/) */
    uint64_t duplicates;       /* batches already counted */
    uint64_t expired;          /* waiting batches deleted after waiting_expiry_s */
    uint64_t txn;              /* transactions committed */
    uint64_t failing;          /* gauge: transactions failed in a row (0 = healthy) */
    uint64_t dropped_paths;    /* calls not kept in the call tree: their build hit
                                * max_nodes_per_build (method stats still count them) */
    uint64_t prep_in_memory;   /* batches a prep thread took decompressed from the
                                * POST (bl_processor_offer_body), not from its file */
    uint64_t prep_memory_bytes; /* gauge: bytes of those copies kept now (at most
                                 * BL_PROC_BODIES_MAX) */
    /* processing latency (enqueue → commit) histogram, ms buckets:
     * le 10, 50, 100, 500, 1000, 5000, +Inf (cumulative counts) */
    uint64_t lat_bucket[7];
    double lat_sum_s;
} bl_proc_stats;

typedef struct bl_processor bl_processor;

/* Opens the writer connection, starts the thread, registers builds and
 * re-queues pending batches. errbuf gets a message on failure. */
bl_err bl_processor_start(const bl_proc_opts *o, bl_processor **out, char *errbuf, size_t n);
/* Finishes the current transaction and stops the thread; batches still
 * queued stay in batches/pending for the next start. NULL allowed. */
void bl_processor_stop(bl_processor *p);

/* A batch file is durable in batches/pending: process it. BL_ENOMEM. */
bl_err bl_processor_enqueue(bl_processor *p, const char *uuid, bl_encoding enc);
/* The HTTP thread that made batch `uuid` durable hands the processor a copy
 * of its decompressed bytes (`len` bytes at `body`, not kept: copied) before
 * it queues it, so that a prep thread decodes them instead of reading the
 * file and decompressing it again. Kept only while all kept copies stay
 * within BL_PROC_BODIES_MAX bytes and this one within the prep threads' cap
 * (8 MiB), and dropped once the batch is prepared or the writer reaches it;
 * the file stays the truth (a batch without a copy is read from it, as at a
 * start). Thread-safe; never fails (a copy that does not fit or has no
 * memory is simply not kept). */
#define BL_PROC_BODIES_MAX ((size_t)64 << 20)
void bl_processor_offer_body(bl_processor *p, const char *uuid, const void *body, size_t len);
/* The same for a batch admitted by bl_quota_admit on the quota of
 * bl_processor_quota(p): app_id, build, bytes and `counted` as admitted (the
 * writer releases the count when it is done with the batch); a copy of its
 * body offered before (bl_processor_offer_body) is dropped when it fails. BL_ENOMEM:
 * the caller releases the count (the batch is picked up at next start). */
bl_err bl_processor_enqueue_admitted(bl_processor *p, const char *uuid, bl_encoding enc,
                                     int64_t app_id, const char *build, uint64_t bytes,
                                     int counted);
/*
 * PostgreSQL store (issue 19): 1 when batches go through the database's
 * queue (bl_processor_queue_put) instead of batches/pending files.
 */
int bl_processor_uses_queue(const bl_processor *p);
/*
 * PostgreSQL store: makes a received batch durable in the queue (body as
 * received, `enc` its encoding) — committed when it returns BL_OK — and
 * wakes this node's claim thread; any node may process it. *duplicate = 1
 * when the batch id was queued, failed or processed before (nothing
 * stored). Thread-safe (a pool of write connections). BL_EIO (database
 * unreachable or refusing: nothing stored), BL_EINVAL (not a PostgreSQL
 * store), BL_ENOMEM.
 */
bl_err bl_processor_queue_put(bl_processor *p, const char *uuid, bl_encoding enc,
                              int64_t app_id, const char *build, const void *body, size_t len,
                              int *duplicate);

/* The processor's quota tracker (owned by it; thread-safe). */
bl_quota *bl_processor_quota(bl_processor *p);
/* A build's files (mapping / method-IDs) changed on disk. BL_ENOMEM. */
bl_err bl_processor_build_changed(bl_processor *p, int64_t app_id, const char *build);

/*
 * Deletes app `app_id`'s build `build` (DELETE .../builds/{build}, or
 * retention when cutoff_us > 0): the writer, in queue order after the
 * batches queued before, moves it to the graveyard and its folder to
 * DIR/trash in one commit (store/retention.h, pipeline/retention.h),
 * deletes the batches waiting for it and forgets its in-memory state (build
 * id, methods, call-path node ids); a batch of the same name afterwards
 * makes a new build. With cutoff_us > 0 it happens only when the build is
 * still idle since cutoff_us (no aggregates, nothing newer, no waiting
 * batch). Waits up to wait_ms for the writer: *done = 1 and its result, or
 * *done = 0 and BL_OK when it is still queued (it happens later).
 * Results: BL_OK; BL_ENOTFOUND (no such live build); BL_EINVAL (not idle);
 * BL_EIO (database or file error: nothing changed); BL_ENOMEM.
 * PostgreSQL store: the deletion goes in line into the shared queue
 * (store/queue.h BL_QUEUE_ENC_DROP) and is run by whichever node holds the
 * build's lock, after the batches received before it; *done = 1 when its
 * row went within wait_ms (BL_OK if the build is no longer live, else
 * BL_EINVAL with cutoff_us > 0, BL_EIO without: see that node's log).
 */
bl_err bl_processor_drop_build(bl_processor *p, int64_t app_id, const char *build,
                               int64_t cutoff_us, unsigned wait_ms, int *done);

/*
 * Replaces app `app_id`'s user URL patterns (agg/urlpattern.h; checked by
 * the caller) by pats[0..n) (copied), store/network.h: the writer does it
 * in queue order, in a transaction of its own, so the batches queued before
 * are processed with the old list and those queued after with the new one.
 * Waits up to wait_ms: *done = 1 and its result, or *done = 0 and BL_OK
 * when it is still queued (it happens later, before any batch queued
 * after this call). Results: BL_OK; BL_EIO (nothing changed); BL_ENOMEM.
 */
bl_err bl_processor_set_url_patterns(bl_processor *p, int64_t app_id,
                                     const char *const *pats, size_t n, unsigned wait_ms,
                                     int *done);

/* The durable queue of acknowledged batches, as /metrics shows it. With a
 * PostgreSQL store it is the shared raw_batches table (every node shows the
 * same figures; store/queue.h bl_queue_gauges, deletions in line not
 * counted); on SQLite it is batches/pending and batches/failed. */
typedef struct bl_queue_gauge {
    int64_t waiting;  /* acknowledged, not taken by any node yet */
    int64_t leased;   /* taken by a node (PostgreSQL: under a live lease): in a
                       * round, or waiting for the build's uploads */
    int64_t failed;   /* given up, kept for inspection (raw_batches rows with
                       * failed_at; SQLite: files in batches/failed) */
    int64_t oldest_s; /* age of the oldest acknowledged, uncommitted batch, s
                       * (0: none) */
} bl_queue_gauge;

/* Fills *g, read at most once per second per node (answers are reused for
 * 1 s): PostgreSQL, one bounded statement on a pool connection; SQLite, a
 * listing of batches/pending and batches/failed. Thread-safe. BL_OK; BL_EIO
 * (database unreachable, or a folder unreadable: *g zero). */
bl_err bl_processor_queue_gauges(bl_processor *p, bl_queue_gauge *g);

void bl_processor_stats(bl_processor *p, bl_proc_stats *s);

#endif
