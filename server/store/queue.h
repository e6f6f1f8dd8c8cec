/*
 * queue.h — the raw batch queue in the database (issue 19, stateless
 * nodes; PostgreSQL only: table raw_batches, schema/pg/0002_raw_batches.sql).
 * With a PostgreSQL store, POST …/batches makes a batch durable here instead
 * of in batches/pending, and any node's processor claims it, under a lease,
 * and deletes it in the transaction that counts it. Design:
 * docs/architecture.md, "Several nodes on PostgreSQL".
 *
 * On SQLite (one node: batches/pending) every call returns BL_EINVAL and
 * does nothing.
 *
 * Leases: a claimed row carries its node's name (lease_owner, the caller's
 * text, at most BL_QUEUE_NODE_MAX bytes) and an expiry (lease_until, µs,
 * from the database server's clock, so nodes' clocks do not matter). A node
 * renews all its rows at once (bl_queue_renew); when it dies the leases run
 * out and other nodes claim the rows again. Builds are serialised across
 * nodes by advisory locks (bl_queue_lock_try) on a per-build key
 * (bl_queue_lock_key); a node claims only rows of keys it holds.
 *
 * Every call runs on the caller's connection (autocommit unless the caller
 * began a transaction). Errors: BL_EIO with the reason in bl_db_errmsg.
 */
#ifndef BL_STORE_QUEUE_H
#define BL_STORE_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

/* node names (lease_owner): bytes at most */
#define BL_QUEUE_NODE_MAX 96
/* a row claimed this many times without being finished (its node died each
 * time, e.g. killed by the batch, or gave it back: bl_queue_unlease) is
 * failed instead of claimed again */
#define BL_QUEUE_MAX_ATTEMPTS 20
/* call-path node ids per block of the sequence call_node_id_blocks */
#define BL_NODE_ID_BLOCK ((int64_t)1 << 25)

/* The advisory lock key of app `app_id`'s build `build` (a 64-bit hash of
 * both; two builds sharing a key only share their lock). */
int64_t bl_queue_lock_key(int64_t app_id, const char *build);

/*
 * Stores a received batch: id `uuid` (canonical text), app and build name,
 * encoding (bl_encoding as int), and its bytes body[0..len) as received.
 * Durable when it returns BL_OK (the row is committed, unless the caller
 * holds a transaction). *duplicate = 1 (and nothing stored) when the batch
 * id is queued, failed or processed (table batches) already.
 */
bl_err bl_queue_put(bl_db *db, const char *uuid, int64_t app_id, const char *build, int enc,
                    const void *body, size_t len, int *duplicate);

/* One claimed row, handed to a bl_queue_claim callback. Strings and body
 * are owned by the store: valid only during the call. */
typedef struct bl_queue_row {
    const char *uuid;
    int64_t app_id;
    const char *build;
    int64_t lock_key;
    int enc;
    int64_t received_at; /* µs */
    int attempts;        /* times claimed, this claim included */
    const void *body;
    size_t len;
} bl_queue_row;
/* BL_OK to go on; another code stops the walk and is returned (the rows
 * are claimed all the same: they come back when their lease runs out, or
 * at once to their node after bl_queue_release). */
typedef bl_err (*bl_queue_row_cb)(const bl_queue_row *r, void *ctx);

/*
 * Claims up to max_rows live rows (oldest first) of the lock keys
 * keys[0..n_keys) without a live lease — never leased, lease run out, or
 * released (bl_queue_release) — for
 * `node` until now + lease_us, and hands each to cb. Rows other
 * transactions are claiming at the same moment are skipped (FOR UPDATE
 * SKIP LOCKED). Rows claimed BL_QUEUE_MAX_ATTEMPTS times already are
 * failed instead ("claimed N times without being finished (its node
 * stopped each time)", or "(last given back by its node: WHY)" after a
 * bl_queue_unlease with a reason). A build
 * deletion's row (BL_QUEUE_ENC_DROP) is not claimed while a live row of
 * its key received before it is leased by another node: the batches
 * acknowledged before a DELETE run before it (and are deleted with it).
 * *n_out: rows handed to cb.
 */
bl_err bl_queue_claim(bl_db *db, const char *node, int64_t lease_us, const int64_t *keys,
                      size_t n_keys, size_t max_rows, bl_queue_row_cb cb, void *ctx,
                      size_t *n_out);

/* Lock keys (at most max) of live rows without a live lease: the builds
 * with work to claim. keys[0..*n) ascending. */
bl_err bl_queue_pending_keys(bl_db *db, int64_t *keys, size_t max, size_t *n);

/* Extends the leases `node` holds on batches uuids[0..n_uuids) (canonical
 * texts) to now + lease_us — only those the node still works on: a row it
 * lost track of (a commit that did not happen after all) runs out and is
 * claimed again. *n: rows renewed. */
bl_err bl_queue_renew(bl_db *db, const char *node, int64_t lease_us,
                      const char *const *uuids, size_t n_uuids, int64_t *n);

/* Gives up `node`'s leases (its memory of them was lost: a reconnection):
 * the rows become claimable by anyone at once. */
bl_err bl_queue_release(bl_db *db, const char *node);

/* Gives up `node`'s lease of the one row of batch `uuid` (a batch it could
 * not process for a while, e.g. its build's registration kept failing):
 * claimable by anyone at once; the next claim counts one more attempt
 * (BL_QUEUE_MAX_ATTEMPTS bounds how often). `why` (NULL: none) is kept in
 * the live row's `error`: when the row is failed for its attempts
 * (bl_queue_claim), its error names the last reason it was given back
 * instead of its node stopping. A row not leased by `node` is left alone.
 * BL_EIO. */
bl_err bl_queue_unlease(bl_db *db, const char *node, const char *uuid, const char *why);

/* The batch `uuid` is counted (or found a duplicate): its row goes. Called
 * in the transaction that counts it. A row already gone is fine. */
bl_err bl_queue_finish(bl_db *db, const char *uuid);

/* The batch `uuid` cannot be processed: its row stays, failed (never
 * claimed again), with `why` (NULL: none). */
bl_err bl_queue_fail(bl_db *db, const char *uuid, const char *why);

/* Deletes the batch's row whatever its state (a waiting batch expired, or
 * its build deleted). */
bl_err bl_queue_drop(bl_db *db, const char *uuid);

/* Counts of the queue: live rows (*live), of those leased now (*leased),
 * failed rows (*failed). Any pointer may be NULL. */
bl_err bl_queue_counts(bl_db *db, int64_t *live, int64_t *leased, int64_t *failed);

/* A row of this encoding is no batch but a build deletion in line
 * (bl_processor_drop_build on a PostgreSQL store): its body is the
 * retention cutoff (µs, decimal text; "0" for a DELETE). It is claimed in
 * queue order by the node holding the build's lock, so the deletion runs
 * after the batches received before it, on the node that holds the
 * build's state, and never beside that node's processing of the build.
 * bl_queue_counts and bl_queue_gauges count only batches. */
#define BL_QUEUE_ENC_DROP 100

/* *exists = 1 when the row of `uuid` is still in the queue (live or
 * failed). */
bl_err bl_queue_exists(bl_db *db, const char *uuid, int *exists);

/* *has = 1 when the queue holds a batch of build (app_id, build), live or
 * failed (not a deletion in line). BL_EINVAL on SQLite, BL_EIO. */
bl_err bl_queue_build_has(bl_db *db, int64_t app_id, const char *build, int *has);

/* The queue as /metrics shows it, read in one bounded statement (batches
 * only, not deletions in line): *waiting (live rows without a live lease),
 * *leased (live rows under a live lease: in progress or waiting for their
 * build's uploads on the node holding them), *failed (failed rows kept for
 * inspection), *oldest_s (age in whole seconds of the oldest live row on
 * the database server's clock, leased or not; 0 when none). */
bl_err bl_queue_gauges(bl_db *db, int64_t *waiting, int64_t *leased, int64_t *failed,
                       int64_t *oldest_s);

/* Deletes up to `max` failed rows failed before `before_us` (µs, the
 * database server's clock); *n: rows deleted. */
bl_err bl_queue_failed_expire(bl_db *db, int64_t before_us, int64_t max, int64_t *n);
/* What the queue holds of app `app_id` that waits for uploads: live rows
 * (not failed) of builds without their files in the database — no
 * method-ID file (build_files), or names obfuscated (builds.
 * methodids_obfuscated, as the writer recorded it) and no mapping. The
 * per-app quotas of pipeline/quota.h count these on PostgreSQL, so that
 * every node sees the same counts. */
typedef struct bl_queue_waiting {
    int64_t batches;   /* waiting rows */
    int64_t bytes;     /* their bodies' bytes, as received */
    int64_t builds;    /* distinct builds among them */
    int build_waits;   /* `build` is one of them */
    int build_ready;   /* `build` has its files (by the same rule) */
} bl_queue_waiting;

/* Fills *w for app `app_id` and build `build` (one statement: a scan of
 * the app's live rows, grouped by build). */
bl_err bl_queue_waiting_of(bl_db *db, int64_t app_id, const char *build, bl_queue_waiting *w);

/* Session-level advisory lock on `key` (pg_try_advisory_lock): *got 1 when
 * this connection holds it now (also when it held it already: locks stack,
 * so take each key once), 0 when another session does. Held until
 * bl_queue_unlock or the connection ends (a node killed loses them all). */
bl_err bl_queue_lock_try(bl_db *db, int64_t key, int *got);

/* Transaction-level advisory lock on `key` (pg_try_advisory_xact_lock), on
 * a connection inside a transaction: *got 1 when taken (or this session
 * holds the key already), 0 when another session holds it (a node
 * processing that build). Let go at the transaction's end. */
bl_err bl_queue_xact_lock_try(bl_db *db, int64_t key, int *got);
bl_err bl_queue_unlock(bl_db *db, int64_t key);

/* The first block of BL_NODE_ID_BLOCK call-path node ids no one else gets
 * (sequence call_node_id_blocks): *first = block * BL_NODE_ID_BLOCK. Not
 * transactional (a rolled back block is never given out again). */
bl_err bl_queue_node_id_block(bl_db *db, int64_t *first);

#endif
