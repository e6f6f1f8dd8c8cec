/*
 * proc_internal.h — private to the processor's files (pipeline/processor.c
 * and pipeline/proc_*.c): the writer's state and the functions its parts
 * call in one another. Nothing outside pipeline/proc*.c includes it.
 *
 *   processor.c      public API (processor.h), the work queue, the writer
 *                    thread's loop, recovery at start, start and stop;
 *   proc_builds.c    per-build state: registration, symbolication, loading
 *                    a build's rows, waiting batches and their expiry, build
 *                    deletion;
 *   proc_round.c     one round (transaction): processing each batch,
 *                    aggregating, writing the deltas, committing;
 *   proc_workers.c   the prep workers (prep.h) and the committer thread
 *                    (WAL sync, batch-file moves, checkpoints).
 */
#ifndef BL_PROC_INTERNAL_H
#define BL_PROC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agg/calltree.h"
#include "common/u128map.h"
#include "ingest/batch.h"
#include "pipeline/aggregate.h"
#include "pipeline/datadir.h"
#include "pipeline/events.h"
#include "pipeline/prep.h"
#include "pipeline/processor.h"
#include "pipeline/quota.h"
#include "pipeline/rebuilder.h"
#include "store/db.h"
#include "store/queue.h"
#include "store/writer.h"

enum { W_BATCH, W_BUILD, W_DROP, W_URLPAT };

/* PostgreSQL store: write connections kept for the HTTP threads' queue puts */
#define BL_QPOOL_MAX 8
/* W_DROP and W_URLPAT are rounds of their own (in queue order). */
#define W_ALONE(kind) ((kind) == W_DROP || (kind) == W_URLPAT)
/* So is W_BUILD on a PostgreSQL store (p->pg), in a transaction of its own
 * committed at once: an upload's registration runs on the node that took
 * the upload, whether or not it holds the build's advisory lock, and the
 * builds row and methods rows it writes are waited on by the build's
 * writer on another node until they commit. Inside a round of batches
 * (open for seconds) that wait was the round's length, and two rounds
 * inserting two new builds in opposite orders deadlocked
 * (docs/benchmarks.md, "What limits each configuration"). */
#define W_ALONE_P(p, kind) (W_ALONE(kind) || ((p)->pg && (kind) == W_BUILD))

/* A build deletion waited for by its caller (bl_processor_drop_build).
 * Fields under bl_processor.mu; freed by whichever of the two lets go last. */
typedef struct drop_req {
    int refs;
    int done;
    bl_err result;
} drop_req;

typedef struct work {
    int kind;
    char uuid[37];
    bl_encoding enc;
    int64_t app_id;
    char build[BL_BUILD_NAME_MAX + 1];
    double t_enq; /* monotonic seconds */
    /* batches: counted against the app's quotas (quota.h) under (app_id,
     * build) with `bytes`, released when the writer is done with it */
    int counted;
    uint64_t bytes;
    /* W_DROP: the caller's request; drop_cutoff 0 = delete, else only when
     * the build is idle since then (retention: its aggregates expired) */
    drop_req *dr;
    int64_t drop_cutoff;
    /* W_URLPAT: the app's new user URL patterns, n_pats NUL-terminated
     * strings one after the other (owned by the item; freed once done),
     * and its caller's request (dr, as a deletion's) */
    char *pats;
    size_t n_pats;
    int checked;     /* 1: bl_agg_check_batch passed at POST (same bytes) */
    /* PostgreSQL store: a batch claimed from the raw_batches queue
     * (proc_queue.c); its bytes are in bl_processor.bodies under its uuid
     * while qgen is the processor's q_gen, else it is stale (B_GONE) */
    int from_q;
    uint32_t qgen;
    int64_t received_us; /* when it was received, µs since the epoch */
} work;

typedef struct pending_batch {
    char uuid[37];
    bl_encoding enc;
    double t_enq;
    int counted;     /* waiting batches are always counted (quota.h) */
    uint64_t bytes;  /* as received (the file's size) */
    int64_t mtime;   /* the file's modification time, Unix seconds: expiry */
    int from_q;      /* PostgreSQL store: from the queue (work.from_q), no file */
    uint32_t qgen;
} pending_batch;

typedef struct bstate {
    int64_t app_id;
    char build[BL_BUILD_NAME_MAX + 1];
    int64_t build_id;
    int ready;
    int loaded;          /* call-path nodes loaded from the database */
    bl_agg_build ab;     /* methods.id by methodId, call-path nodes */
    pending_batch *waiting;
    size_t n_waiting, cap_waiting;
    unsigned reg_fails;  /* PostgreSQL store: registrations failed in a row
                          * (not for the store being away): PR_REG_FAILS_MAX */
} bstate;

/* Prep workers (prep.h): while the writer aggregates batch i of a
 * transaction, workers read, decompress, decode and rebuild the call trees
 * of the next ones, one slot per batch; the writer takes the slots in its
 * own order, so what it adds is exactly what it would add alone. */
#define PREP_MAX_THREADS 8
#define PREP_SLOTS (PREP_MAX_THREADS + 1)
/* bodies prepared ahead are at most this big (a bigger one is prepared
 * again by the writer itself, up to max_decompressed): bounds the memory
 * the slots hold */
#define PREP_AHEAD_MAX_BODY ((uint64_t)8 << 20)
enum { PS_FREE, PS_QUEUED, PS_RUNNING, PS_DONE };

typedef struct pslot {
    bl_prep job;
    int state;        /* PS_*, under pmu */
    size_t item;      /* index in the transaction's items */
    uint64_t seq;     /* submission order: workers take the oldest */
    char path[BL_PATH_MAX];
    bl_encoding enc;
    int check;
    int from_q;       /* the bytes come from the queue's body map, not path */
    char uuid[37];
    uint32_t qgen;
    bl_buf raw;       /* from_q: the copied bytes (owned, reused) */
} pslot;

/* bytes of a failed batch's reason in a movelist (its queue row's error) */
#define PR_ML_WHY 240

/* Batch files a round is done with — moved out of batches/pending once its
 * transaction is durable — and the round's counts for /metrics, counted at
 * the same moment. Arrays owned by the list. */
typedef struct movelist {
    pending_batch *b;
    uint8_t *failed; /* per entry: 1 = to batches/failed, else to batches/done */
    char (*why)[PR_ML_WHY]; /* per entry: a failed one's reason, "" when none
                             * (pr_ml_add); NULL in the checkpointer's lists */
    size_t n, cap;
    uint64_t done, records, dup, failed_n; /* batches processed, their records,
                                            * duplicates, failed batches */
} movelist;

/* A finished round handed to the committer: its deltas, its block events,
 * the batch files to move once durable, and its items (put back in the
 * queue when its commit fails). Owned by the committer while
 * bl_processor.cm_busy, else by the writer. */
typedef struct cjob {
    bl_agg_out out;
    bl_events *ev;       /* the round's events (one of bl_processor.evs) */
    movelist moves;
    work *items;         /* cap: max_batches_per_txn */
    uint8_t *waited;     /* per item: went to a waiting list (not put back) */
    size_t n_items;
    uint64_t dropped;    /* bl_agg.dropped_nodes at the hand-over */
    int failed;          /* the commit failed: rolled back, items not put back yet */
    int solo;            /* handed over as one of the rounds of bl_processor.q_solo */
} cjob;

/* A batch processed while the committer held the connection: its row and
 * build counter, written when the writer's transaction begins. */
typedef struct deferred_batch {
    char uuid[37];
    bl_wr_batch row;     /* row.uuid points to uuid above (set when written) */
} deferred_batch;

struct bl_processor {
    bl_proc_opts o;
    char data_dir[BL_PATH_MAX];
    bl_db *db;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv, idle_cv, drop_cv;
    work *q;
    size_t qhead, qlen, qcap;
    int stop;
    int busy;            /* the writer holds popped work */
    bl_proc_stats st;    /* under mu */
    /* writer-only state */
    bstate **builds;
    size_t n_builds, cap_builds;
    bl_u128map build_ix; /* (app_id, xxh64(build)) -> index + 1 */
    bl_agg agg;
    bl_prep inline_job;  /* the writer's own job (no workers; big bodies) */
    unsigned n_prep;     /* prep worker threads running */
    pthread_t prep_thread[PREP_MAX_THREADS];
    pthread_mutex_t pmu;
    pthread_cond_t pcv;  /* a slot queued, or stopping */
    pthread_cond_t pdone; /* a slot done */
    pslot slot[PREP_SLOTS];
    /* decompressed bodies handed over by the POSTs (bl_processor_offer_body),
     * each owned by the list until a prep thread takes it or the writer
     * drops it; under bmu */
    pthread_mutex_t bmu;
    struct mbody { char uuid[37]; char *data; size_t len; } *mb;
    size_t n_mb, cap_mb, mb_bytes;
    unsigned n_slots;
    uint64_t pseq;
    int pstop;
    /* the checkpointer (store/db.h bl_db_checkpoint): its own connection,
     * woken after each commit; under pmu */
    bl_db *ck_db;
    pthread_t ck_thread;
    int ck_started, ck_due;
    pthread_cond_t ck_cv;
    bl_rebuilder *rb; /* owned: the rollups rebuild thread (NULL: none) */
    /* done in this transaction: files to move once its COMMIT is durable
     * (writer only) */
    movelist moves;
    /* committed rounds handed to the checkpointer, whose WAL sync has not
     * begun (under pmu); ck_work: the ones it syncs now (its own) */
    movelist ck_in, ck_work;
    int deferred;        /* the writer's commits do not fsync (bl_db_defer_sync):
                          * the checkpointer syncs the WAL before the moves */
    bl_quota *quota;     /* owned; thread-safe */
    double next_sweep;   /* monotonic seconds of the next expiry sweep */
    double next_recheck; /* PostgreSQL store: of the next pr_recheck_waiting */
    /* PostgreSQL store: registrations (W_BUILD) put off while another node
     * holds their build's lock (pr_defer_build); queued again with each
     * pr_recheck_waiting. Writer thread only. */
    work *reg_defer;
    size_t n_reg_defer, cap_reg_defer;
    uint64_t round_batches; /* batches counted in the open transaction */
    uint8_t *waited;        /* per item of the round: went to a waiting list */
    bl_events *ev;          /* batch events of the open round: one of evs */
    bl_events *evs[2];      /* owned; the other one is the committer's */
    /* the committer (proc_commit.c): writes a finished round's deltas and
     * commits it on p->db while the writer aggregates the next round */
    pthread_t cm_thread;
    int cm_started;
    pthread_mutex_t cmu;
    pthread_cond_t cm_cv;   /* a job handed over, or stopping */
    pthread_cond_t cm_done; /* the job is finished */
    int cm_busy, cm_stop;   /* under cmu */
    int cm_stats;           /* under cmu: the job's stats and sketches are 0 still
                             * being built by the writer (the committer writes the
                             * node deltas meanwhile), 1 ready, -1 failed (the
                             * commit fails: rolled back) */
    cjob job;
    int txn_open;           /* writer: its round's transaction is begun on p->db */
    deferred_batch *dq;     /* writer: batches of the round not written yet */
    size_t n_dq, cap_dq;
    char app_name[80];      /* writer: the last app looked up (apps are never */
    int64_t app_id;         /* renamed or deleted), "" = none */
    int redo;               /* writer: why the round must be done again (R_*) */
    /* ---- PostgreSQL store (issue 19): the raw batch queue, proc_queue.c ---- */
    int pg;                 /* batches come from raw_batches, not batches/pending */
    char node[BL_QUEUE_NODE_MAX]; /* this node's lease owner name */
    bl_db *q_db;            /* the claim thread's connection (owned), under qmu */
    pthread_t q_thread;
    int q_started;
    pthread_mutex_t qmu;    /* the fields below and q_db */
    pthread_cond_t q_cv;    /* wakes the claim thread */
    int q_wake, q_stop;
    atomic_int q_wants;     /* the claim thread asks the writer for pr_q_locks */
    int q_release;          /* the claim thread gives up the node's leases first */
    uint32_t q_gen;         /* bumped when every claim is forgotten (a reset) */
    struct qheld *held;     /* build lock keys the writer connection holds */
    size_t n_held, cap_held;
    int64_t *want;          /* keys with work to claim the writer should try to lock */
    size_t n_want, cap_want;
    struct qbody **bodies;  /* claimed batches' bytes (owned; in flight or waiting):
                             * bounded by the claim limit plus waiting batches */
    size_t n_bodies, cap_bodies;
    double q_next_locks;    /* writer: monotonic s of the next lock round */
    int64_t node_end;       /* writer: end of its call-path node-id block (0: none) */
    unsigned q_session;     /* writer: bl_db_session of p->db its locks and build
                             * states belong to (another one: all lost) */
    /* the HTTP threads' write connections for bl_processor_queue_put */
    pthread_mutex_t pool_mu;
    bl_db *pool[BL_QPOOL_MAX];
    size_t n_pool;
    char q_url[1024];       /* the store URL the pool connects to */
    bl_buf q_raw;           /* writer: a claimed batch's bytes it prepares itself */
    uint64_t q_claimed, q_failed_db; /* stats: claimed rows, rows failed */
    /* writer: rounds given up in a row for a reason not the store's absence
     * (PR_ROUND_FAILS_MAX), and how many rounds from now take one batch
     * each (to find the batch that breaks them) */
    unsigned q_round_fails;
    size_t q_solo;
    /* commits failed in a row on an SQL error with the connection alive
     * (PR_ROUND_FAILS_MAX, as q_round_fails): written by the committer
     * (cm_run), read and reset by the writer while the committer is idle */
    unsigned cm_fails;
    int sql_failed;         /* writer: the open round met an SQL error (pr_sql_err) */
    char reg_why[PR_ML_WHY]; /* writer: why the last registration failed (its log line) */
    /* bl_processor_queue_gauges' last answer and when (monotonic s) */
    pthread_mutex_t g_mu;
    bl_queue_gauge g_last;
    double g_at;
    int g_valid;
};

/* PostgreSQL store: rounds given up in a row (an SQL error, not the store
 * being away) after which the round's batches are processed one per round,
 * and a batch alone in a round given up that often is failed (its row kept
 * with `failed_at` and the reason): no lease is renewed for ever for a
 * batch that can never be committed. Rounds whose commit fails (in the
 * committer: proc_commit.c) count alike, in bl_processor.cm_fails. */
#define PR_ROUND_FAILS_MAX 5

/* Why a round is given up and done again (bl_processor.redo). */
enum { R_NONE, R_PRIOR, R_DUP, R_EIO };


/* ---- processor.c ---- */
/* Names the calling thread (top -H, /proc/PID/task/N/comm). */
void pr_name_thread(const char *name);
/* Monotonic seconds. */
double pr_mono_s(void);
/* One line "beatline-server: MSG" on stderr. */
__attribute__((format(printf, 1, 2))) void pr_log(const char *fmt, ...);
/* The calling thread's last pr_log line (at most 255 bytes; "" when none
 * since pr_last_log_clear): the reason a step that logs its failures
 * failed (a registration's, for the queue row: registration_failed). */
const char *pr_last_log(void);
void pr_last_log_clear(void);
/* Puts ws[0..n) back at the head of the queue (see processor.c). */
void pr_push_front(bl_processor *p, const work *ws, size_t n);
/* The writer is done with a batch that is not waiting: its quota count goes. */
void pr_release(bl_processor *p, work *w);
/* Queues w at the tail (BL_ENOMEM). */
bl_err pr_push(bl_processor *p, const work *w);
/* Moves up to `room` queued items to dst; p->mu held (see processor.c). */
size_t pr_pop_locked(bl_processor *p, work *dst, size_t room, int new_round);
/* Hands a build deletion's (or a W_URLPAT's) result to its caller. */
void pr_drop_finish(bl_processor *p, drop_req *dr, bl_err result);

/* ---- proc_builds.c ---- */
/* Logs the writer connection's SQL error about `what`; BL_EIO. */
bl_err pr_sql_err(bl_processor *p, const char *what);
void pr_bstate_free(bstate *b);
/* Finds or creates the builds row and the in-memory state. */
bl_err pr_get_build(bl_processor *p, int64_t app_id, const char *build, bstate **out);
/* Brings the builds row and the methods table in line with the build's
 * files; a build that became ready queues its waiting batches again. A
 * cached state whose builds row is gone (the build deleted by another
 * node: its id is stale) is made again first, its waiting batches queued
 * again (they are processed with the new state). PostgreSQL store: after
 * PR_REG_FAILS_MAX registrations of a build failed in a row (not for the
 * store being away), its waiting batches' leases are given up (claimed
 * again, each claim an attempt: BL_QUEUE_MAX_ATTEMPTS bounds them) and
 * its state forgotten, so that no lease is renewed for ever. */
bl_err pr_register_build(bl_processor *p, int64_t app_id, const char *build);
/* PostgreSQL store: failed registrations in a row after which a build's
 * waiting batches are given back to the queue (pr_register_build). */
#define PR_REG_FAILS_MAX 5
/* The build's waiting batches go back to the head of the queue. */
bl_err pr_requeue_waiting(bl_processor *p, bstate *b);
/* Forgets every build's in-memory state (after a rollback). */
void pr_reset_states(bl_processor *p);
/* Forgets the in-memory state of the builds whose advisory lock key is
 * `key` (store/queue.h; PostgreSQL store): loaded again on next use. */
void pr_drop_states_of_key(bl_processor *p, int64_t key);
/* A W_DROP item, alone in its round (see proc_builds.c). */
bl_err pr_drop_build(bl_processor *p, const work *w);
/* Seconds between expiry sweeps of waiting batches. */
double pr_sweep_every(const bl_processor *p);
/* Deletes the waiting batches older than the expiry time. */
void pr_expire_waiting(bl_processor *p);
/* PostgreSQL store: seconds between looks for the files of builds with
 * waiting batches (pr_recheck_waiting). */
#define PR_RECHECK_S 2.0
/* PostgreSQL store: queues a W_BUILD for every build with waiting batches
 * (its files may have been uploaded to another node, which tells only its
 * own processor): its registration fetches them from the store and, when
 * the build can now be processed, puts the batches back in the queue.
 * Writer thread only. */
void pr_recheck_waiting(bl_processor *p);
/* PostgreSQL store: an upload's registration (W_BUILD) writes the build's
 * rows only while no other node holds the build's lock; else it is put off
 * (pr_defer_build) and tried again every PR_RECHECK_S, at most
 * PR_REG_DEFER_S after it was queued: then it is written beside the
 * holder, as before. */
#define PR_REG_DEFER_S 30.0
/* Puts W_BUILD item w off (writer thread; kept once per build, with its
 * first t_enq). BL_ENOMEM: not kept (the caller registers it now). */
bl_err pr_defer_build(bl_processor *p, const work *w);

/* ---- proc_commit.c ---- */
/* The committer thread's body. */
void *pr_cm_main(void *arg);
/* Hands the round to the committer: finishes the node deltas, moves them,
 * p->moves and items[0..n) with p->waited into p->job and wakes the
 * committer, which writes the nodes while this thread builds the stats'
 * sketch blobs and order and hands them over too (p->cm_stats; a failure
 * there fails the commit, as an SQL error would); the aggregator and
 * p->moves are empty after. The round's transaction must be open
 * (p->txn_open); it is the committer's from now on. BL_ENOMEM (nothing
 * handed over). */
bl_err pr_cm_hand_over(bl_processor *p, const work *items, size_t n);
/* Waits until the committer is done with its round. 1 when that commit
 * failed (p->job holds its items, to be put back: pr_cm_put_back), else 0. */
int pr_cm_wait(bl_processor *p);
/* 1 when the committer is done with its round and that commit failed (its
 * items wait in p->job for pr_cm_put_back); never waits. */
int pr_cm_failed_now(bl_processor *p);
/* After a failed commit (pr_cm_wait 1): the job's items go back to the
 * head of the queue (in their order, before anything queued since). On
 * PostgreSQL, the PR_ROUND_FAILS_MAX-th commit failed in a row on an SQL
 * error makes the round's batches go one per round (q_solo), or fails its
 * batch when it was alone (its queue row kept with the reason). */
void pr_cm_put_back(bl_processor *p);
/* The writer needs the connection: waits for the committer, begins the
 * round's transaction and writes the deferred batches. BL_OK; else
 * BL_EIO with p->redo set (R_PRIOR: the previous round's commit failed;
 * R_DUP: a deferred batch was committed before, a duplicate whose
 * aggregates were added; R_EIO: SQL error): the round must be given up. */
bl_err pr_need_db(bl_processor *p);
/* Puts items[0..n) back at the head of the queue, except `skip` and those
 * flagged in waited (a build's waiting list queues those again). */
void pr_push_back_items(bl_processor *p, work *items, const uint8_t *waited, size_t n,
                        size_t skip);

/* ---- proc_round.c ---- */
/* bl_agg_new_row_fn of the writer's aggregator: a placeholder methods row
 * for a methodId the method-ID file does not know (ctx: the processor). */
bl_err pr_new_row(void *ctx, bl_agg_build *ab, uint32_t mid, int64_t *row);
/* Runs one round: items[0..n) and what is queued while it is open, in one
 * transaction (a W_DROP alone). */
void pr_run_txn(bl_processor *p, work *items, size_t n);
/* Moves one batch file out of batches/pending (to done/, or failed/). */
void pr_move_batch(bl_processor *p, const pending_batch *pb, int failed);

/* ---- proc_queue.c (PostgreSQL store only; p->pg) ---- */
/* Starts the claim thread and its connection to `url`. BL_EIO/BL_ENOMEM. */
bl_err pr_q_start(bl_processor *p, const char *url, char *errbuf, size_t n);
/* Stops the claim thread; frees the bodies, the held keys and the pool. */
void pr_q_stop(bl_processor *p);
/* Copies the bytes of queued batch (uuid, qgen) into *out. BL_ENOTFOUND
 * when they are gone (stale). */
bl_err pr_q_body(bl_processor *p, const char *uuid, uint32_t qgen, bl_buf *out);
/* bl_processor_queue_gauges on a PostgreSQL store (on a pool connection).
 * BL_EIO. */
bl_err pr_q_gauges(bl_processor *p, bl_queue_gauge *g);
/* 1 when queued item (uuid, qgen) is still this node's claim (not stale). */
int pr_q_live(bl_processor *p, const char *uuid, uint32_t qgen);
/* bl_processor_drop_build on a PostgreSQL store: the deletion goes in line
 * into the queue (BL_QUEUE_ENC_DROP) and is run by the node holding the
 * build's lock, after the batches received before it; waits up to wait_ms
 * for its row to go. Same results as bl_processor_drop_build. */
bl_err pr_q_drop_build(bl_processor *p, int64_t app_id, const char *build, int64_t cutoff_us,
                       unsigned wait_ms, int *done);
/* The batch is done with (committed, or its build deleted): its bytes go;
 * `db_drop` 1: its row is deleted too (on the claim connection), 2: its
 * row is marked failed (`why`), 3: its lease is given up (claimable again
 * at once, by any node; `why`, when not NULL, kept as the reason: the
 * error a row failed for its attempts gives, bl_queue_unlease). */
void pr_q_forget(bl_processor *p, const char *uuid, uint32_t qgen, int db_drop,
                 const char *why);
/* Writer, between rounds: takes the advisory locks the claim thread asks
 * for and lets go of idle ones (reloading the states of those builds). */
void pr_q_locks(bl_processor *p);
/* 1 when this node holds the build lock `key` (the writer's session). */
int pr_q_holds(bl_processor *p, int64_t key);
/* 1 when the claim thread asks for locks (the writer should call pr_q_locks). */
int pr_q_want(bl_processor *p);
/* Writer, after a failed round: when the writer connection was lost, it
 * reconnects, and every claim, lock and build state is forgotten. */
void pr_q_check_conn(bl_processor *p);
/* Writer, before aggregating a batch of up to n_records records: a new
 * node-id block when the current one might not hold its new nodes. BL_OK;
 * BL_EIO (p->redo set, or an SQL error logged). */
bl_err pr_q_node_ids(bl_processor *p, uint64_t n_records);
/* The committer, in the round's transaction: deletes (done, duplicate) or
 * fails the queue rows of the round's batches. BL_EIO. */
bl_err pr_q_finish_round(bl_processor *p, const movelist *m);

/* ---- proc_workers.c ---- */
/* Takes batch uuid's decompressed body handed over at POST (*out, *len:
 * owned by the caller, free()); 0 when there is none. */
int pr_body_take(bl_processor *p, const char *uuid, char **out, size_t *len);
/* Forgets batch uuid's body, if any (the writer reached the batch). */
void pr_body_drop(bl_processor *p, const char *uuid);
/* Frees every kept body (stop). */
void pr_body_free_all(bl_processor *p);
void *pr_prep_main(void *arg);
void *pr_ck_main(void *arg);
/* Adds batch w to m (failed: to batches/failed, with reason `why` for its
 * queue row on PostgreSQL; NULL: a general one). -1 when out of memory:
 * the file then stays in batches/pending (found again at the next start,
 * a duplicate of the committed batch). */
int pr_ml_add(movelist *m, const work *w, int failed, const char *why);
/* Makes room for n entries in m (0; -1 out of memory, m unchanged). */
int pr_ml_reserve(movelist *m, size_t n);
void pr_ml_free(movelist *m);
/* Empties m (keeps its arrays). */
void pr_ml_reset(movelist *m);
/* The round in m is committed: its files are moved and its counts
 * added to the stats once the commit is durable — by the checkpointer
 * after its WAL sync when the writer's commits do not sync (p->deferred),
 * else here at once. Then the checkpointer copies the commit into the
 * database file. Leaves m empty. Thread holding p->db. */
void pr_committed(bl_processor *p, movelist *m);
/* A transaction committed by the writer outside a round (a build's
 * deletion): returns once it is durable. BL_EIO (errno) when the WAL could
 * not be synced. Writer thread. */
bl_err pr_make_durable(bl_processor *p);
/* Queues the batches of items[*next..n) into free prep slots, in order. */
void pr_prep_submit(bl_processor *p, const work *items, size_t n, size_t *next);
/* The slot of item i once prepared, or NULL when it was not queued. */
pslot *pr_prep_wait(bl_processor *p, size_t i);
void pr_prep_release(bl_processor *p, pslot *s);
/* Drops every queued or prepared slot; waits for the ones being prepared. */
void pr_prep_drain(bl_processor *p);

#endif
