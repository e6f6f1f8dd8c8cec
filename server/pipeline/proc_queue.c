/*
 * proc_queue.c — the processor on a PostgreSQL store (issue 19): batches
 * come from the raw_batches queue (store/queue.h) instead of
 * batches/pending. Design: docs/architecture.md, "Several nodes on
 * PostgreSQL".
 *
 *   bl-claim (this file's thread, its own connection q_db): renews the
 *     node's leases, finds builds (lock keys) with claimable rows and asks
 *     the writer to lock them (p->want), claims rows of the keys the writer
 *     holds (p->held) up to Q_CLAIM_MAX in flight, keeps their bytes in
 *     p->bodies and queues them as W_BATCH work (from_q).
 *   the writer: takes the session advisory locks on ITS connection p->db
 *     (pr_q_locks) — the one that commits the aggregates, so a node whose
 *     session died can commit nothing more — drops the in-memory state of
 *     a build it (re)locks (reloaded from the database on first use), and
 *     lets go of builds idle for Q_IDLE_RELEASE_S; after a lost connection
 *     it forgets every claim, lock and build state (pr_q_check_conn).
 *   the committer: deletes (or fails) the round's rows in the round's
 *     transaction (pr_q_finish_round): a batch is counted exactly once.
 *
 * Lock order: qmu before mu (never the other way round); the writer never
 * holds qmu while it uses p->db.
 */
#include "pipeline/proc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "store/queue.h"
#include "store/retention.h"

/* a lease lasts this long (µs) unless renewed; a dead node's batches are
 * claimed again by others after at most this */
#define Q_LEASE_US INT64_C(15000000)
/* leases are renewed this often (s) */
#define Q_RENEW_S 3.0
/* the claim thread looks for work this often when not woken (ms) */
#define Q_TICK_MS 200
/* claimed batches a node holds at most (queued, in a round, or prepared;
 * waiting batches come on top) */
#define Q_CLAIM_MAX(p) ((size_t)(p)->o.max_batches_per_txn * 2)
/* builds with work looked at per tick */
#define Q_KEYS_MAX 64
/* a build lock with nothing in flight for this long is let go (s) */
#define Q_IDLE_RELEASE_S 5.0
/* the writer's lock round runs at least this often under load (s) */
#define Q_LOCKS_EVERY_S 1.0

struct qheld {
    int64_t key;
    size_t inflight;   /* bodies of this key */
    double idle_since; /* monotonic s when inflight became 0 */
};

struct qbody {
    char uuid[37];
    int64_t key;
    uint32_t gen;
    size_t len;
    unsigned char data[]; /* len bytes */
};

/* ---- bodies and held keys (qmu held) ---- */

static struct qheld *held_find(bl_processor *p, int64_t key)
{
    for (size_t i = 0; i < p->n_held; i++)
        if (p->held[i].key == key)
            return &p->held[i];
    return NULL;
}

/* Puts key back in the held set, idle since `idle_since` (qmu held): a
 * lock the writer's session holds whose unlock failed (pr_q_locks). Out
 * of memory (cannot be: the key left the set just before) it is logged:
 * the lock then stays with the session until it ends. */
static void held_keep(bl_processor *p, int64_t key, double idle_since)
{
    if (held_find(p, key))
        return;
    if (p->n_held == p->cap_held) {
        size_t nc = p->cap_held ? p->cap_held * 2 : 16;
        struct qheld *nh = realloc(p->held, nc * sizeof *nh);
        if (!nh) {
            pr_log("build lock %lld: out of memory to keep track of it; held until the "
                   "writer connection ends", (long long)key);
            return;
        }
        p->held = nh;
        p->cap_held = nc;
    }
    p->held[p->n_held++] = (struct qheld){ key, 0, idle_since };
}

static size_t body_find(bl_processor *p, const char *uuid)
{
    for (size_t i = 0; i < p->n_bodies; i++)
        if (!strcmp(p->bodies[i]->uuid, uuid))
            return i;
    return SIZE_MAX;
}

static void body_remove(bl_processor *p, size_t i)
{
    struct qbody *b = p->bodies[i];
    struct qheld *h = held_find(p, b->key);
    if (h && h->inflight && --h->inflight == 0)
        h->idle_since = pr_mono_s();
    free(b);
    p->bodies[i] = p->bodies[--p->n_bodies];
}

/* Forgets every claim (qmu held): bodies, held keys, wanted keys; the
 * queue's items of the old generation are stale from now on. */
static void forget_all(bl_processor *p)
{
    for (size_t i = 0; i < p->n_bodies; i++)
        free(p->bodies[i]);
    p->n_bodies = 0;
    p->n_held = 0;
    p->n_want = 0;
    p->q_gen++;
    p->q_release = 1;
    p->q_wake = 1;
    pthread_cond_signal(&p->q_cv);
}

bl_err pr_q_body(bl_processor *p, const char *uuid, uint32_t qgen, bl_buf *out)
{
    bl_err err = BL_ENOTFOUND;
    pthread_mutex_lock(&p->qmu);
    size_t i = body_find(p, uuid);
    if (i != SIZE_MAX && p->bodies[i]->gen == qgen) {
        bl_buf_reset(out);
        err = bl_buf_append(out, p->bodies[i]->data, p->bodies[i]->len);
    }
    pthread_mutex_unlock(&p->qmu);
    return err;
}

int pr_q_live(bl_processor *p, const char *uuid, uint32_t qgen)
{
    pthread_mutex_lock(&p->qmu);
    size_t i = body_find(p, uuid);
    int live = i != SIZE_MAX && p->bodies[i]->gen == qgen;
    pthread_mutex_unlock(&p->qmu);
    return live;
}

void pr_q_forget(bl_processor *p, const char *uuid, uint32_t qgen, int db_drop,
                 const char *why)
{
    pthread_mutex_lock(&p->qmu);
    size_t i = body_find(p, uuid);
    int live = i != SIZE_MAX && p->bodies[i]->gen == qgen;
    if (live)
        body_remove(p, i);
    /* a stale claim's row is another claim's business now */
    if (live && db_drop && p->q_db) {
        bl_err err = db_drop == 3   ? bl_queue_unlease(p->q_db, p->node, uuid, why)
                     : db_drop == 2 ? bl_queue_fail(p->q_db, uuid, why)
                                    : bl_queue_drop(p->q_db, uuid);
        if (err)
            pr_log("batch %s: cannot %s its queue row: %s (its lease runs out and another "
                   "node sees it again)", uuid,
                   db_drop == 3 ? "release" : db_drop == 2 ? "fail" : "delete",
                   bl_db_errmsg(p->q_db));
        else if (db_drop == 2)
            p->q_failed_db++;
    }
    p->q_wake = 1;
    pthread_cond_signal(&p->q_cv);
    pthread_mutex_unlock(&p->qmu);
}

/* ---- the claim thread ---- */

typedef struct {
    bl_processor *p;
    work *w;
    size_t n, cap;
} claimed;

static bl_err on_row(const bl_queue_row *r, void *ctx)
{
    claimed *c = ctx;
    bl_processor *p = c->p;
    int drop = r->enc == BL_QUEUE_ENC_DROP; /* a build deletion in line */
    if (strlen(r->uuid) != 36 || (!drop && (r->enc < BL_ENC_IDENTITY || r->enc > BL_ENC_ZSTD)) ||
        strlen(r->build) > BL_BUILD_NAME_MAX)
        return BL_OK; /* not ours to read: its lease runs out (and it fails in the end) */
    if (body_find(p, r->uuid) != SIZE_MAX)
        return BL_OK; /* held already (cannot happen: leased rows are not claimed) */
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        work *nw = realloc(c->w, nc * sizeof *nw);
        if (!nw)
            return BL_ENOMEM;
        c->w = nw;
        c->cap = nc;
    }
    if (p->n_bodies == p->cap_bodies) {
        size_t nc = p->cap_bodies ? p->cap_bodies * 2 : 64;
        struct qbody **nb = realloc(p->bodies, nc * sizeof *nb);
        if (!nb)
            return BL_ENOMEM;
        p->bodies = nb;
        p->cap_bodies = nc;
    }
    struct qbody *b = malloc(sizeof *b + (r->len ? r->len : 1));
    if (!b)
        return BL_ENOMEM;
    snprintf(b->uuid, sizeof b->uuid, "%s", r->uuid);
    b->key = r->lock_key;
    b->gen = p->q_gen;
    b->len = r->len;
    if (r->len)
        memcpy(b->data, r->body, r->len);
    p->bodies[p->n_bodies++] = b;
    struct qheld *h = held_find(p, r->lock_key);
    if (h)
        h->inflight++;
    work *w = &c->w[c->n++];
    memset(w, 0, sizeof *w);
    if (drop) { /* bl_processor_drop_build on some node: its cutoff as text */
        char cut[24];
        size_t l = r->len < sizeof cut - 1 ? r->len : sizeof cut - 1;
        memcpy(cut, r->body, l);
        cut[l] = '\0';
        w->kind = W_DROP;
        w->drop_cutoff = strtoll(cut, NULL, 10);
        memcpy(w->uuid, b->uuid, sizeof w->uuid);
        w->app_id = r->app_id;
        snprintf(w->build, sizeof w->build, "%s", r->build);
        w->t_enq = pr_mono_s();
        w->from_q = 1;
        w->qgen = p->q_gen;
        return BL_OK;
    }
    w->kind = W_BATCH;
    memcpy(w->uuid, b->uuid, sizeof w->uuid);
    w->enc = (bl_encoding)r->enc;
    w->app_id = r->app_id;
    snprintf(w->build, sizeof w->build, "%s", r->build);
    w->t_enq = pr_mono_s();
    w->bytes = r->len;
    w->checked = 1; /* bl_agg_check_batch passed at POST, on some node */
    w->from_q = 1;
    w->qgen = p->q_gen;
    w->received_us = r->received_at;
    p->q_claimed++;
    return BL_OK;
}

static void add_want(bl_processor *p, int64_t key)
{
    for (size_t i = 0; i < p->n_want; i++)
        if (p->want[i] == key)
            return;
    if (p->n_want == p->cap_want) {
        size_t nc = p->cap_want ? p->cap_want * 2 : 16;
        int64_t *nw = realloc(p->want, nc * sizeof *nw);
        if (!nw)
            return; /* asked again at the next tick */
        p->want = nw;
        p->cap_want = nc;
    }
    p->want[p->n_want++] = key;
}

/* One tick of the claim thread (qmu held). 1 when it wants the writer. */
static int q_tick(bl_processor *p, double *next_renew, claimed *c, unsigned *errs)
{
    int renewed = 0;
    if (bl_db_reconnect(p->q_db, &renewed) != BL_OK) {
        if ((*errs)++ % 30 == 0)
            pr_log("queue connection: %s", bl_db_errmsg(p->q_db));
        return 0;
    }
    if (renewed)
        pr_log("queue connection: connected again");
    if (p->q_release) {
        if (bl_queue_release(p->q_db, p->node) != BL_OK)
            goto sql_err;
        p->q_release = 0;
    }
    double now = pr_mono_s();
    if (now >= *next_renew) {
        int64_t n;
        const char **u = malloc((p->n_bodies ? p->n_bodies : 1) * sizeof *u);
        if (!u)
            return 0; /* tried again at the next tick */
        for (size_t i = 0; i < p->n_bodies; i++)
            u[i] = p->bodies[i]->uuid;
        bl_err re = bl_queue_renew(p->q_db, p->node, Q_LEASE_US, u, p->n_bodies, &n);
        free(u);
        if (re == BL_EIO)
            goto sql_err;
        *next_renew = now + Q_RENEW_S;
    }
    int64_t keys[Q_KEYS_MAX];
    size_t nk;
    if (bl_queue_pending_keys(p->q_db, keys, Q_KEYS_MAX, &nk) != BL_OK)
        goto sql_err;
    size_t want0 = p->n_want;
    for (size_t i = 0; i < nk; i++)
        if (!held_find(p, keys[i]))
            add_want(p, keys[i]);
    size_t room = Q_CLAIM_MAX(p) > p->n_bodies ? Q_CLAIM_MAX(p) - p->n_bodies : 0;
    if (room && p->n_held) {
        int64_t hk[Q_KEYS_MAX * 4];
        size_t nh = 0;
        for (size_t i = 0; i < p->n_held && nh < sizeof hk / sizeof hk[0]; i++)
            hk[nh++] = p->held[i].key;
        size_t got;
        c->n = 0;
        bl_err err = bl_queue_claim(p->q_db, p->node, Q_LEASE_US, hk, nh, room, on_row, c,
                                    &got);
        if (err == BL_EIO)
            goto sql_err;
        if (err)
            pr_log("queue: out of memory taking claimed batches (their leases run out)");
        for (size_t i = 0; i < c->n; i++)
            if (pr_push(p, &c->w[i]) != BL_OK) /* its lease runs out: claimed again */
                pr_log("queue: out of memory queueing batch %s", c->w[i].uuid);
    }
    *errs = 0;
    int idle = 0;
    for (size_t i = 0; i < p->n_held; i++)
        idle |= !p->held[i].inflight && now - p->held[i].idle_since >= Q_IDLE_RELEASE_S;
    return p->n_want > want0 || ((p->n_want || idle) && now >= p->q_next_locks);
sql_err:
    if ((*errs)++ % 30 == 0)
        pr_log("queue: %s", bl_db_errmsg(p->q_db));
    return 0;
}

static void *q_main(void *arg)
{
    bl_processor *p = arg;
    pr_name_thread("bl-claim");
    double next_renew = 0;
    unsigned errs = 0;
    claimed c = { p, NULL, 0, 0 };
    pthread_mutex_lock(&p->qmu);
    while (!p->q_stop) {
        if (!p->q_wake) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += (long)Q_TICK_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&p->q_cv, &p->qmu, &ts);
        }
        p->q_wake = 0;
        if (p->q_stop)
            break;
        int wake_writer = q_tick(p, &next_renew, &c, &errs);
        if (errs) { /* the database is away: not every tick */
            pthread_mutex_unlock(&p->qmu);
            usleep(errs > 5 ? 1000000 : 200000);
            pthread_mutex_lock(&p->qmu);
        }
        if (wake_writer) { /* qmu before mu */
            atomic_store(&p->q_wants, 1);
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
    pthread_mutex_unlock(&p->qmu);
    free(c.w);
    return NULL;
}

/* ---- the writer's side ---- */

int pr_q_want(bl_processor *p)
{
    if (!p->pg)
        return 0;
    pthread_mutex_lock(&p->qmu);
    int w = p->n_want > 0;
    pthread_mutex_unlock(&p->qmu);
    return w;
}

void pr_q_check_conn(bl_processor *p)
{
    if (!p->pg)
        return;
    int renewed = 0;
    for (unsigned tries = 0;; tries++) {
        if (bl_db_reconnect(p->db, &renewed) == BL_OK)
            break;
        pthread_mutex_lock(&p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break; /* the connection goes with the processor */
        if (tries % 30 == 0)
            pr_log("writer connection: %s; trying again", bl_db_errmsg(p->db));
        sleep(1);
    }
    (void)renewed; /* any command may have made the connection again: */
    if (bl_db_session(p->db) == p->q_session)
        return;
    p->q_session = bl_db_session(p->db);
    /* a new session holds no lock: every build may be another node's now */
    pr_log("writer connection: connected again; build locks and claimed batches are "
           "given up and claimed afresh");
    pthread_mutex_lock(&p->qmu);
    forget_all(p);
    pthread_mutex_unlock(&p->qmu);
    pr_reset_states(p); /* waiting batches go back to the queue: stale, dropped there */
    p->node_end = 0;
}

void pr_q_locks(bl_processor *p)
{
    if (!p->pg)
        return;
    pr_q_check_conn(p); /* a new session first forgets what the old one held */
    double now = pr_mono_s();
    int64_t want[Q_KEYS_MAX], idle[Q_KEYS_MAX];
    size_t nw = 0, ni = 0;
    pthread_mutex_lock(&p->qmu);
    p->q_next_locks = now + Q_LOCKS_EVERY_S;
    for (size_t i = 0; i < p->n_want && nw < Q_KEYS_MAX; i++)
        if (!held_find(p, p->want[i]))
            want[nw++] = p->want[i];
    p->n_want = 0;
    /* idle builds are let go (their locks are for whoever has work for
     * them): out of the held set first, so that nothing more is claimed */
    for (size_t i = 0; i < p->n_held && ni < Q_KEYS_MAX;) {
        struct qheld *h = &p->held[i];
        if (!h->inflight && now - h->idle_since >= Q_IDLE_RELEASE_S) {
            idle[ni++] = h->key;
            p->held[i] = p->held[--p->n_held];
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&p->qmu);
    int got_any = 0;
    /* every idle key is unlocked, or kept in the held set when its unlock
     * fails on a session that still holds it (tried again at the next lock
     * round): a key locked by the session and not tracked would never be
     * let go, and its build never claimed by any node */
    size_t n_kept = 0;
    for (size_t i = 0; i < ni; i++) {
        pr_drop_states_of_key(p, idle[i]);
        if (bl_queue_unlock(p->db, idle[i]) == BL_OK)
            continue;
        pr_log("build lock %lld: cannot let it go: %s; kept, let go at a later lock round",
               (long long)idle[i], bl_db_errmsg(p->db));
        idle[n_kept++] = idle[i];
    }
    if (n_kept) {
        pr_q_check_conn(p); /* a new session holds none of them: all forgotten */
        pthread_mutex_lock(&p->qmu);
        if (bl_db_session(p->db) == p->q_session)
            for (size_t i = 0; i < n_kept; i++)
                held_keep(p, idle[i], now - Q_IDLE_RELEASE_S);
        pthread_mutex_unlock(&p->qmu);
        if (bl_db_session(p->db) != p->q_session)
            return;
    }
    for (size_t i = 0; i < nw; i++) {
        int got;
        if (bl_queue_lock_try(p->db, want[i], &got) != BL_OK ||
            bl_db_session(p->db) != p->q_session) {
            /* the session changed under the statement: the locks held
             * are gone (and this one, if taken, belongs to a session whose
             * state is forgotten now) */
            if (got)
                (void)bl_queue_unlock(p->db, want[i]);
            pr_sql_err(p, "advisory lock");
            pr_q_check_conn(p);
            return;
        }
        if (!got)
            continue; /* another node processes that build */
        /* what this node knew of the build may be stale: another node may
         * have written it since; it is loaded again at its first batch */
        pr_drop_states_of_key(p, want[i]);
        got_any = 1;
        pthread_mutex_lock(&p->qmu);
        if (p->n_held == p->cap_held) {
            size_t nc = p->cap_held ? p->cap_held * 2 : 16;
            struct qheld *nh = realloc(p->held, nc * sizeof *nh);
            if (!nh) {
                pthread_mutex_unlock(&p->qmu);
                (void)bl_queue_unlock(p->db, want[i]);
                continue;
            }
            p->held = nh;
            p->cap_held = nc;
        }
        p->held[p->n_held++] = (struct qheld){ want[i], 0, now };
        p->q_wake = 1;
        pthread_cond_signal(&p->q_cv);
        pthread_mutex_unlock(&p->qmu);
    }
    /* ids of new call-path nodes from a block newer than any other node's
     * (a build's node ids keep growing, parents before children) */
    if (got_any)
        p->node_end = 0;
}

int pr_q_holds(bl_processor *p, int64_t key)
{
    pthread_mutex_lock(&p->qmu);
    int h = held_find(p, key) != NULL;
    pthread_mutex_unlock(&p->qmu);
    return h;
}

bl_err pr_q_node_ids(bl_processor *p, uint64_t n_records)
{
    if (!p->pg)
        return BL_OK;
    if (p->node_end && p->agg.next_node + (int64_t)n_records < p->node_end)
        return BL_OK;
    if (pr_need_db(p))
        return BL_EIO;
    int64_t first;
    if (bl_queue_node_id_block(p->db, &first) != BL_OK)
        return pr_sql_err(p, "node id block");
    p->agg.next_node = first;
    p->node_end = first + BL_NODE_ID_BLOCK;
    return BL_OK;
}

bl_err pr_q_finish_round(bl_processor *p, const movelist *m)
{
    for (size_t i = 0; i < m->n; i++) {
        if (!m->b[i].from_q)
            continue;
        const char *why = m->why && m->why[i][0] ? m->why[i]
                                                  : "could not be processed (see the server's log)";
        bl_err err = m->failed[i] ? bl_queue_fail(p->db, m->b[i].uuid, why)
                                  : bl_queue_finish(p->db, m->b[i].uuid);
        if (err) { /* the committer's thread: not pr_sql_err (the writer's flag) */
            pr_log("SQL error in queue finish: %s", bl_db_errmsg(p->db));
            return BL_EIO;
        }
    }
    return BL_OK;
}

/* ---- the HTTP threads' puts ---- */

int bl_processor_uses_queue(const bl_processor *p)
{
    return p && p->pg;
}

/* A connection of the pool (or a new one); NULL when none can be made
 * (logged). Give it back with pool_put. */
static bl_db *pool_get(bl_processor *p)
{
    bl_db *db = NULL;
    pthread_mutex_lock(&p->pool_mu);
    if (p->n_pool)
        db = p->pool[--p->n_pool];
    pthread_mutex_unlock(&p->pool_mu);
    if (!db) {
        char err[256];
        if (bl_db_open(p->q_url, 0, &db, err, sizeof err) != BL_OK) {
            pr_log("queue connection: %s", err);
            return NULL;
        }
    }
    return db;
}

static void pool_put(bl_processor *p, bl_db *db)
{
    pthread_mutex_lock(&p->pool_mu);
    if (p->n_pool < BL_QPOOL_MAX) {
        p->pool[p->n_pool++] = db;
        db = NULL;
    }
    pthread_mutex_unlock(&p->pool_mu);
    bl_db_close(db); /* the pool is full: a connection too many */
}

static void wake_claim(bl_processor *p)
{
    pthread_mutex_lock(&p->qmu);
    p->q_wake = 1;
    pthread_cond_signal(&p->q_cv);
    pthread_mutex_unlock(&p->qmu);
}

bl_err pr_q_gauges(bl_processor *p, bl_queue_gauge *g)
{
    bl_db *db = pool_get(p);
    if (!db)
        return BL_EIO;
    int renewed;
    bl_err e = bl_db_reconnect(db, &renewed);
    if (!e)
        e = bl_queue_gauges(db, &g->waiting, &g->leased, &g->failed, &g->oldest_s);
    pool_put(p, db);
    return e;
}

/* a deletion's waiter looks at its row this often (ms) */
#define Q_DROP_POLL_MS 50

bl_err pr_q_drop_build(bl_processor *p, int64_t app_id, const char *build, int64_t cutoff_us,
                       unsigned wait_ms, int *done)
{
    *done = 0;
    bl_db *db = pool_get(p);
    if (!db)
        return BL_EIO;
    int renewed;
    int64_t id = 0;
    bl_err e = bl_db_reconnect(db, &renewed);
    if (!e)
        e = bl_rs_build_find(db, app_id, build, &id);
    /* the deletion's row: an id of its own (version-4 UUID text) */
    unsigned char rnd[16];
    char uuid[37], cut[24];
    if (!e && getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        e = BL_EIO;
    if (!e) {
        rnd[6] = (unsigned char)((rnd[6] & 0x0f) | 0x40);
        rnd[8] = (unsigned char)((rnd[8] & 0x3f) | 0x80);
        snprintf(uuid, sizeof uuid,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7], rnd[8],
                 rnd[9], rnd[10], rnd[11], rnd[12], rnd[13], rnd[14], rnd[15]);
        snprintf(cut, sizeof cut, "%lld", (long long)cutoff_us);
        int dup;
        e = bl_queue_put(db, uuid, app_id, build, BL_QUEUE_ENC_DROP, cut, strlen(cut), &dup);
        if (!e && dup)
            e = BL_EIO; /* 122 random bits met another id: cannot happen */
    }
    if (e) {
        if (e == BL_EIO)
            pr_log("build %s: cannot queue its deletion: %s", build, bl_db_errmsg(db));
        pool_put(p, db);
        return e;
    }
    wake_claim(p);
    /* done when the row is gone: the build is no longer live then, or the
     * node that ran it failed (and says why in its log) */
    for (unsigned waited = 0;; waited += Q_DROP_POLL_MS) {
        int exists = 1;
        if (bl_queue_exists(db, uuid, &exists) == BL_OK && !exists) {
            int state = 1;
            e = bl_rs_build_state(db, id, &state, NULL, NULL, 0);
            if (!e && state == 1)
                e = cutoff_us ? BL_EINVAL : BL_EIO;
            *done = 1;
            break;
        }
        if (waited >= wait_ms) {
            e = BL_OK; /* still in line: it happens later */
            break;
        }
        usleep(Q_DROP_POLL_MS * 1000);
    }
    pool_put(p, db);
    return e;
}

bl_err bl_processor_queue_put(bl_processor *p, const char *uuid, bl_encoding enc,
                              int64_t app_id, const char *build, const void *body, size_t len,
                              int *duplicate)
{
    *duplicate = 0;
    if (!p->pg)
        return BL_EINVAL;
    bl_db *db = pool_get(p);
    if (!db)
        return BL_EIO;
    bl_err e = BL_EIO;
    for (int attempt = 0; attempt < 2; attempt++) {
        int renewed;
        if (bl_db_reconnect(db, &renewed) != BL_OK)
            break;
        e = bl_queue_put(db, uuid, app_id, build, (int)enc, body, len, duplicate);
        if (e != BL_EIO)
            break; /* else: once more on a connection made again (a restart) */
        pr_log("queue put %s: %s", uuid, bl_db_errmsg(db));
    }
    pool_put(p, db);
    if (e == BL_OK && !*duplicate)
        wake_claim(p);
    return e;
}

/* ---- start and stop ---- */

bl_err pr_q_start(bl_processor *p, const char *url, char *errbuf, size_t n)
{
    if (strlen(url) >= sizeof p->q_url) {
        snprintf(errbuf, n, "store URL too long");
        return BL_EINVAL;
    }
    snprintf(p->q_url, sizeof p->q_url, "%s", url);
    if (p->o.node_name && *p->o.node_name) {
        snprintf(p->node, sizeof p->node, "%s", p->o.node_name);
    } else {
        char host[64] = "node";
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "node");
        host[sizeof host - 1] = '\0';
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(p->node, sizeof p->node, "%s:%ld:%08lx", host, (long)getpid(),
                 (unsigned long)((uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec));
    }
    p->q_session = bl_db_session(p->db);
    bl_err err = bl_db_open(url, 0, &p->q_db, errbuf, n);
    if (err)
        return err;
    /* the name may have been used by a node that died: its leases go now */
    if (bl_queue_release(p->q_db, p->node) != BL_OK) {
        snprintf(errbuf, n, "queue: %s", bl_db_errmsg(p->q_db));
        return BL_EIO;
    }
    if (pthread_create(&p->q_thread, NULL, q_main, p) != 0) {
        snprintf(errbuf, n, "cannot start the claim thread");
        return BL_ENOMEM;
    }
    p->q_started = 1;
    pr_log("node %s: batches come from the database's queue", p->node);
    return BL_OK;
}

void pr_q_stop(bl_processor *p)
{
    if (p->q_started) {
        pthread_mutex_lock(&p->qmu);
        p->q_stop = 1;
        pthread_cond_signal(&p->q_cv);
        pthread_mutex_unlock(&p->qmu);
        pthread_join(p->q_thread, NULL);
        p->q_started = 0;
    }
    /* what this node claimed and did not finish is anyone's at once */
    if (p->q_db && bl_queue_release(p->q_db, p->node) != BL_OK)
        pr_log("queue: cannot give up the leases: %s (they run out)", bl_db_errmsg(p->q_db));
    for (size_t i = 0; i < p->n_bodies; i++)
        free(p->bodies[i]);
    free(p->bodies);
    p->bodies = NULL;
    p->n_bodies = 0;
    free(p->held);
    p->held = NULL;
    free(p->want);
    p->want = NULL;
    bl_db_close(p->q_db);
    p->q_db = NULL;
    for (size_t i = 0; i < p->n_pool; i++)
        bl_db_close(p->pool[i]);
    p->n_pool = 0;
}
