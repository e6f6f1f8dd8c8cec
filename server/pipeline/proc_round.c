/*
 * proc_round.c — one round of the writer: a transaction of batches (see
 * proc_internal.h).
 */
#include "pipeline/proc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/apps.h"
#include "store/network.h"
#include "store/rollups.h"
#include "store/writer.h"

/* ------------------------------------------------------------------------ */
/* Aggregation                                                               */

/* bl_agg_new_row_fn: a methodId the method-ID file does not know gets a
 * placeholder method, so the tree stays whole: class "?", name "unknown
 * method N", no descriptor (docs/api.md). A placeholder made by an older
 * server ("methodId:N") is renamed; a method of the file is left alone. */
bl_err pr_new_row(void *ctx, bl_agg_build *ab, uint32_t mid, int64_t *row)
{
    bl_processor *p = ctx;
    char name[96];
    if (mid == BL_AGG_MID_OVERFLOW)
        snprintf(name, sizeof name, "unknown methods (past %u distinct methodIds outside the "
                                    "method-ID file)", BL_AGG_MAX_FAR);
    else
        snprintf(name, sizeof name, "unknown method %u", mid);
    if (pr_need_db(p)) /* p->redo says why: the round is given up */
        return BL_EIO;
    if (bl_wr_method_unknown(p->db, ab->build_id, mid, name, row))
        return pr_sql_err(p, "methods unknown");
    return BL_OK;
}

static void clear_deltas(bl_processor *p)
{
    bl_agg_clear(&p->agg);
    bl_events_clear(p->ev);
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */

/* B_LATER: does not fit this transaction, process in the next one;
 * B_RETRY: out of memory, roll back and try the whole transaction again
 * later (the batches stay in batches/pending: never moved to failed for a
 * passing shortage); B_GONE: the file left batches/pending already (the
 * batch was queued twice and handled): nothing to do */
enum { B_DONE, B_WAITING, B_DUPLICATE, B_FAILED, B_ABORT, B_LATER, B_RETRY, B_GONE, B_REDO };

/* B_REDO: the round is given up and done again (p->redo says why). */

/* What a batch whose processing hit error `err` does to the round: on
 * PostgreSQL a database error (a restart, a lost connection, a conflict
 * with another node) is passing — the round is tried again, the batch stays
 * queued — else the batch broke the round and is failed. */
static int sql_abort(bl_processor *p, bl_err err)
{
    if (err == BL_EIO)
        p->sql_failed = 1; /* the round failed on the store (PR_ROUND_FAILS_MAX) */
    return p->pg && err == BL_EIO ? B_RETRY : B_ABORT;
}
#define SQL_ABORT(p, err) sql_abort((p), (err))

/* pr_get_build failed: on PostgreSQL an SQL error (a deadlock with another
 * node's round, a lost connection) leaves the round's transaction aborted,
 * so the round is tried again (bounded by PR_ROUND_FAILS_MAX) rather than
 * the batch failed while the others go on in an aborted transaction. */
static int build_err(bl_processor *p, bl_err err)
{
    if (p->redo)
        return B_REDO;
    if (err == BL_ENOMEM)
        return B_RETRY;
    return p->pg && err == BL_EIO ? B_RETRY : B_FAILED;
}

/* Keeps a processed batch's row for pr_need_db (the committer holds the
 * connection). -1 when out of memory. */
static int defer_batch(bl_processor *p, const bl_wr_batch *row)
{
    if (p->n_dq == p->cap_dq) {
        size_t nc = p->cap_dq ? p->cap_dq * 2 : 64;
        deferred_batch *nd = realloc(p->dq, nc * sizeof *nd);
        if (!nd)
            return -1;
        p->dq = nd;
        p->cap_dq = nc;
    }
    deferred_batch *d = &p->dq[p->n_dq++];
    snprintf(d->uuid, sizeof d->uuid, "%s", row->uuid);
    d->row = *row;
    d->row.uuid = NULL;
    return 0;
}

/* Processes batch w, prepared in *j (prep.h) by a worker, or NULL: the
 * writer prepares it itself (also when its body was too big to be
 * prepared ahead). B_FAILED may come with a reason in why (PR_ML_WHY
 * bytes; left "" for a general one). */
static int process_batch(bl_processor *p, const work *w, bl_prep *j, uint64_t *records,
                         char *why)
{
    char path[BL_PATH_MAX] = "";
    *records = 0;
    if (!w->from_q) /* a copy from the POST not taken by a prep thread goes */
        pr_body_drop(p, w->uuid);
    if (!w->from_q && bl_datadir_batch(p->data_dir, 0, w->uuid, w->enc, path))
        return B_FAILED;
    if (!j || (j->read_err == BL_ETOOBIG && j->max_body < p->o.max_decompressed)) {
        j = &p->inline_job;
        if (!w->from_q) {
            bl_prep_file(j, path, w->enc, p->o.max_decompressed, !w->checked);
        } else { /* PostgreSQL store: the claimed bytes (proc_queue.c) */
            bl_err be = pr_q_body(p, w->uuid, w->qgen, &p->q_raw);
            if (be == BL_OK)
                bl_prep_run(j, p->q_raw.data, p->q_raw.len, w->enc, p->o.max_decompressed,
                            !w->checked);
            else
                j->read_err = be;
        }
    }
    bl_err err = j->read_err;
    if (err == BL_ENOTFOUND)
        return B_GONE; /* queued twice (a retry re-queues): handled already */
    if (err == BL_ENOMEM) /* passing: the batch stays in batches/pending */
        return B_RETRY;
    if (err) {
        pr_log("batch %s: cannot read: %s", w->uuid, bl_err_str(err));
        return B_FAILED;
    }
    if (!j->decoded) {
        pr_log("batch %s: malformed: %s", w->uuid, j->be.message ? j->be.message : "?");
        return B_FAILED;
    }
    const bl_batch bt = j->bt; /* owned by the job */
    int result = B_FAILED;
    /* with the committer holding the connection the check waits for the
     * batch's row (pr_need_db) */
    int checked = p->txn_open; /* the duplicate check done */
    bl_err seen = checked ? bl_wr_batch_seen(p->db, w->uuid) : BL_ENOTFOUND;
    if (seen == BL_EIO)
        goto out;
    if (seen == BL_OK) {
        result = B_DUPLICATE;
        goto out;
    }
    char app[80], build[BL_BUILD_NAME_MAX + 1];
    snprintf(app, sizeof app, "%.*s", (int)(bt.app.n < 79 ? bt.app.n : 79), bt.app.p);
    snprintf(build, sizeof build, "%.*s", (int)bt.build.n, bt.build.p);
    int64_t app_id;
    if (p->app_name[0] && !strcmp(app, p->app_name)) {
        app_id = p->app_id;
    } else if (pr_need_db(p)) {
        return B_REDO;
    } else if (bl_apps_find(p->db, app, &app_id) != BL_OK) {
        pr_log("batch %s: unknown app %s", w->uuid, app);
        goto out;
    }
    if (strcmp(app, p->app_name)) {
        snprintf(p->app_name, sizeof p->app_name, "%s", app);
        p->app_id = app_id;
    }
    bstate *b;
    if ((err = pr_get_build(p, app_id, build, &b))) {
        result = build_err(p, err);
        goto out;
    }
    if (!b->ready && pr_need_db(p))
        return B_REDO;
    if (!b->ready && (err = pr_register_build(p, app_id, build))) {
        result = err == BL_ENOMEM ? B_RETRY : B_FAILED;
        if (result == B_FAILED)
            snprintf(why, PR_ML_WHY, "registration of its build failed: %.200s", p->reg_why);
        goto out;
    }
    /* the registration may have made the state again (its row was gone) */
    if ((err = pr_get_build(p, app_id, build, &b))) {
        result = build_err(p, err);
        goto out;
    }
    if (!b->ready) {
        if (b->n_waiting == b->cap_waiting) {
            size_t nc = b->cap_waiting ? b->cap_waiting * 2 : 16;
            pending_batch *nw = realloc(b->waiting, nc * sizeof *nw);
            if (!nw) {
                result = B_RETRY;
                goto out;
            }
            b->waiting = nw;
            b->cap_waiting = nc;
        }
        pending_batch *pb = &b->waiting[b->n_waiting++];
        memcpy(pb->uuid, w->uuid, sizeof pb->uuid);
        pb->enc = w->enc;
        pb->t_enq = w->t_enq;
        pb->from_q = w->from_q;
        pb->qgen = w->qgen;
        struct stat sb;
        int have = !w->from_q && stat(path, &sb) == 0;
        pb->mtime = w->from_q ? w->received_us / 1000000
                    : have    ? (int64_t)sb.st_mtime
                              : (int64_t)time(NULL);
        pb->bytes = w->counted || w->from_q ? w->bytes : have ? (uint64_t)sb.st_size : 0;
        if (!w->counted) /* found on disk at start, or its build lost its files */
            bl_quota_hold(p->quota, app_id, build, pb->bytes);
        pb->counted = 1;
        pthread_mutex_lock(&p->mu);
        p->st.waiting++;
        pthread_mutex_unlock(&p->mu);
        result = B_WAITING;
        goto out;
    }
    /* the transaction began since (a new app or build): the check now, exact */
    if (!checked && p->txn_open) {
        checked = 1;
        if ((seen = bl_wr_batch_seen(p->db, w->uuid)) == BL_OK) {
            result = B_DUPLICATE;
            goto out;
        }
        if (seen == BL_EIO)
            goto out;
    }
    /* a wall clock outside 2000..2200 is not a clock: use the server's */
    int64_t origin = bt.origin_wall_us;
    if (origin < BL_AGG_ORIGIN_MIN || origin > BL_AGG_ORIGIN_MAX)
        origin = bl_now_us();
    /* the POST checked this already (http/h_batch.c); a batch stored by an
     * older server may still break a limit: refused whole, before any of its
     * threads is counted */
    if (j->checked && (err = j->check_err)) {
        pr_log("batch %s: %s; batch refused", w->uuid,
              err == BL_ETOOBIG ? j->why : bl_err_str(err));
        result = err == BL_ENOMEM ? B_RETRY : B_FAILED;
        goto out;
    }
    /* a transaction holds at most BL_AGG_MAX_STATS stats; a batch makes at
     * most one per record: when it might not fit, the transaction is
     * committed first and the batch goes to the next one */
    if (p->agg.n_stats + bt.n_records > BL_AGG_MAX_STATS && p->round_batches > 0) {
        result = B_LATER;
        goto out;
    }
    /* PostgreSQL store: ids for the batch's new call-path nodes no other
     * node gives out */
    if (pr_q_node_ids(p, bt.n_records)) {
        result = p->redo ? B_REDO : B_RETRY;
        goto out;
    }
    uint64_t malformed0 = p->agg.malformed, unknown0 = p->agg.unknown_records;
    /* a prep thread aggregated the batch already (partial aggregates): the
     * writer merges them; else it aggregates the trees thread by thread.
     * Both add exactly the same. */
    err = BL_OK;
    int merge = bl_agg_part_usable(&b->ab, &j->part, origin);
    if (merge && (err = bl_agg_merge(&p->agg, &b->ab, &j->part)))
        merge = -1;
    /* (a partial made without trees that cannot be merged: the writer
     * rebuilds each thread's tree, bl_agg_thread) */
    int trees = j->n_trees == bt.n_threads;
    for (uint32_t i = 0; !merge && i < bt.n_threads; i++)
        if (trees ? (err = j->tree_err[i]) ||
                        (err = bl_agg_tree(&p->agg, &b->ab, &bt.threads[i], &j->trees[i], origin))
                  : (err = bl_agg_thread(&p->agg, &b->ab, &bt.threads[i], origin)))
            break;
    if (err) {
        pr_log("batch %s: %s", w->uuid, bl_err_str(err));
        /* deltas are partial: the transaction must go */
        result = p->redo ? B_REDO : err == BL_ENOMEM ? B_RETRY : SQL_ABORT(p, err);
        goto out;
    }
    /* events (blocks) in the same transaction: exactly once with the batch */
    if (bt.events.n && pr_need_db(p))
        return B_REDO;
    if ((err = bl_events_batch(p->ev, p->db, &bt, b->build_id, origin))) {
        pr_log("batch %s: events: %s", w->uuid,
              err == BL_EIO ? bl_db_errmsg(p->db) : bl_err_str(err));
        result = err == BL_ENOMEM ? B_RETRY : SQL_ABORT(p, err);
        goto out;
    }
    uint64_t truncated = 0;
    for (uint32_t i = 0; i < bt.n_threads; i++)
        truncated += bt.threads[i].truncated != 0;
    pthread_mutex_lock(&p->mu);
    p->st.malformed += p->agg.malformed - malformed0;
    p->st.unknown_method += p->agg.unknown_records - unknown0;
    p->st.truncated += truncated;
    pthread_mutex_unlock(&p->mu);
    int64_t now = bl_now_us();
    bl_wr_batch row = {
        .uuid = w->uuid, .app_id = app_id, .build_id = b->build_id,
        .received_at = w->from_q ? w->received_us
                                 : now - (int64_t)((pr_mono_s() - w->t_enq) * 1e6),
        .processed_at = now,
        .records = (int64_t)bt.n_records, .malformed = (int64_t)(p->agg.malformed - malformed0),
        .bytes = (int64_t)j->body.len,
    };
    /* the transaction began while the batch was aggregated (events, an
     * unknown methodId): a duplicate found now has added its aggregates */
    if (!checked && p->txn_open && (seen = bl_wr_batch_seen(p->db, w->uuid)) != BL_ENOTFOUND) {
        p->redo = seen == BL_OK ? R_DUP : R_EIO;
        return B_REDO;
    }
    if (!p->txn_open) { /* written when the transaction begins (pr_need_db) */
        if (defer_batch(p, &row)) {
            result = B_RETRY;
            goto out;
        }
    } else if (bl_wr_batch_insert(p->db, &row)) {
        pr_sql_err(p, "batches insert");
        result = SQL_ABORT(p, BL_EIO);
        goto out;
    }
    if (p->txn_open && (err = bl_wr_build_count_batch(p->db, b->build_id,
                                                     (int64_t)bt.n_records))) {
        if (err == BL_ENOTFOUND) /* stale: the round's rollback resets every state */
            pr_log("batch %s: its build %s (id %lld) was deleted meanwhile (by another "
                   "node); the round is done again with the build's state made again",
                   w->uuid, b->build, (long long)b->build_id);
        else
            pr_sql_err(p, "builds count");
        result = SQL_ABORT(p, BL_EIO);
        goto out;
    }
    *records = bt.n_records;
    result = B_DONE;
out:
    return result;
}

void pr_move_batch(bl_processor *p, const pending_batch *pb, int failed)
{
    if (pb->from_q) { /* its row went in the commit (pr_q_finish_round): only bytes */
        pr_q_forget(p, pb->uuid, pb->qgen, 0, NULL);
        return;
    }
    char from[BL_PATH_MAX], to[BL_PATH_MAX];
    if (bl_datadir_batch(p->data_dir, 0, pb->uuid, pb->enc, from) ||
        bl_datadir_batch(p->data_dir, 1, pb->uuid, pb->enc, to))
        return;
    if (failed) {
        /* keep it for inspection: batches/failed/UUID.EXT */
        char fdir[BL_PATH_MAX], name[64];
        snprintf(name, sizeof name, "%.36s.%s", pb->uuid, bl_enc_ext(pb->enc));
        if (bl_path_join(fdir, p->data_dir, "batches/failed") || bl_path_join(to, fdir, name))
            return;
        mkdir(fdir, 0750);
    }
    if (rename(from, to) != 0 && errno != ENOENT)
        pr_log("cannot move batch %s: %s", pb->uuid, strerror(errno));
}


/* ------------------------------------------------------------------------ */
/* Thread                                                                    */

static int cm_busy_now(bl_processor *p)
{
    if (!p->cm_started)
        return 0;
    pthread_mutex_lock(&p->cmu);
    int busy = p->cm_busy;
    pthread_mutex_unlock(&p->cmu);
    return busy;
}

/* More work for the open transaction (begun at t_begin, monotonic s): the
 * items queued since, waiting up to txn_idle_ms for one when there are
 * none (while the committer writes the round before: until it is done,
 * also past txn_max_ms, then txn_idle_ms). 0 — commit now — once the transaction holds max_batches_per_txn
 * items (`room` is 0), has been open txn_max_ms, holds BL_TXN_MAX_VALS
 * inclusive times (bounds the aggregator's memory), or the server stops.
 * Committing rewrites every call-path node and method-hour row the
 * transaction touched, so under load a transaction that goes on taking
 * batches writes each of them once instead of once per handful of batches;
 * nothing is acknowledged by the writer, so a kill -9 before the commit
 * leaves the batches in batches/pending, processed again at the start. */
static size_t take_more(bl_processor *p, work *dst, size_t room, double t_begin)
{
    if (!room || p->agg.n_vals >= BL_TXN_MAX_VALS || p->q_solo)
        return 0;
    double end = t_begin + (double)p->o.txn_max_ms / 1e3;
    double idle_s = (double)p->o.txn_idle_ms / 1e3;
    pthread_mutex_lock(&p->mu);
    double now = pr_mono_s(), idle_until = now + idle_s;
    /* while the committer still writes the round before, this one (no
     * transaction begun: no lock held) stays open for what comes, past
     * txn_max_ms too: it could not be handed over anyway, and a bigger
     * round rewrites each node and stat once for more batches. The idle
     * wait starts again when the committer is done (it wakes p->cv) */
    int was_busy = 0, busy = 0;
    while (p->qlen == 0 && !p->stop) {
        busy = cm_busy_now(p);
        if (was_busy && !busy)
            idle_until = now + idle_s;
        was_busy = busy;
        double until = busy ? now + 1.0 : idle_until < end ? idle_until : end;
        if (!busy && now >= until)
            break;
        struct timespec ts; /* CLOCK_REALTIME: the cv's clock */
        clock_gettime(CLOCK_REALTIME, &ts);
        double left = until - now;
        ts.tv_sec += (time_t)left;
        ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        now = pr_mono_s();
    }
    size_t n = 0;
    if (!p->stop && (pr_mono_s() < end || cm_busy_now(p)))
        n = pr_pop_locked(p, dst, room, 0);
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void run_txn_(bl_processor *p, work *items, size_t n);

/* A W_URLPAT item, alone in its round: the app's pattern list replaced in
 * a transaction of its own, durable before it is answered. */
static bl_err set_patterns(bl_processor *p, const work *w)
{
    const char **v = malloc((w->n_pats ? w->n_pats : 1) * sizeof *v);
    if (!v)
        return BL_ENOMEM;
    const char *s = w->pats;
    for (size_t i = 0; i < w->n_pats; i++) {
        v[i] = s;
        s += strlen(s) + 1;
    }
    bl_err err = BL_OK;
    if (bl_db_begin(p->db)) {
        err = pr_sql_err(p, "begin");
    } else if (bl_net_patterns_set(p->db, w->app_id, v, w->n_pats, bl_now_us()) ||
               bl_db_commit(p->db)) {
        err = pr_sql_err(p, "url patterns");
        bl_db_rollback(p->db);
    }
    free(v);
    if (!err && pr_make_durable(p) != BL_OK)
        pr_log("app id %lld: cannot sync the url patterns' commit: %s", (long long)w->app_id,
               strerror(errno));
    if (!err)
        pr_log("app id %lld: %zu url pattern(s) set; they apply to batches processed from now "
               "on", (long long)w->app_id, w->n_pats);
    return err;
}

void pr_run_txn(bl_processor *p, work *items, size_t n)
{
    if (n == 1 && items[0].kind == W_URLPAT) { /* alone, as a deletion */
        if (pr_cm_wait(p)) {
            pr_reset_states(p);
            pr_push_front(p, items, 1);
            pr_cm_put_back(p);
            sleep(1);
            return;
        }
        pr_drop_finish(p, items[0].dr, set_patterns(p, &items[0]));
        free(items[0].pats);
        return;
    }
    if (n == 1 && items[0].kind == W_DROP) { /* a deletion runs alone */
        if (pr_cm_wait(p)) {
            /* the round before failed: it goes again first, then this */
            pr_reset_states(p);
            pr_push_front(p, items, 1);
            pr_cm_put_back(p);
            sleep(1);
            return;
        }
        pr_drop_finish(p, items[0].dr, pr_drop_build(p, &items[0]));
        return;
    }
    run_txn_(p, items, n);
    pr_prep_drain(p);
}

/* Gives up the open round: rolls its transaction back (if begun), forgets
 * its deltas, waits for the committer and drops every build state (it may
 * be ahead of the database). 1 when the committer's round failed too (its
 * items are still in p->job: pr_cm_put_back after this round's). */
static int abandon(bl_processor *p)
{
    if (p->txn_open)
        bl_db_rollback(p->db);
    p->txn_open = 0;
    p->n_dq = 0;
    clear_deltas(p);
    int prior = pr_cm_wait(p);
    pr_reset_states(p);
    return prior;
}

/* PostgreSQL store, a registration alone in its round (W_ALONE_P), its
 * transaction begun: 1 when it may write the build's rows — this node holds
 * the build's lock, or takes it for the transaction
 * (pg_try_advisory_xact_lock: no node can lock the build meanwhile), or it
 * was put off for PR_REG_DEFER_S already; 0 when it is put off
 * (pr_defer_build): another node holds the build and processes it, and its
 * round may hold the build's new rows uncommitted for seconds, which this
 * writer would wait on; -1 on a database error (p->db's message logged). */
static int reg_may_write(bl_processor *p, const work *w)
{
    int64_t key = bl_queue_lock_key(w->app_id, w->build);
    if (pr_q_holds(p, key))
        return 1;
    int got = 0;
    if (bl_queue_xact_lock_try(p->db, key, &got) != BL_OK) {
        pr_sql_err(p, "registration lock");
        return -1;
    }
    if (got || pr_mono_s() - w->t_enq >= PR_REG_DEFER_S)
        return 1;
    return pr_defer_build(p, w) == BL_OK ? 0 : 1;
}

static void run_txn_(bl_processor *p, work *items, size_t n)
{
    movelist *m = &p->moves; /* empty (pr_committed leaves it so) */
    pr_ml_reset(m);
    /* room for every batch the round can take, so that recording a
     * processed batch's file move cannot fail halfway (pr_ml_add still
     * reports it: the round is then tried again) */
    if (pr_ml_reserve(m, p->o.max_batches_per_txn)) {
        pr_log("out of memory for a round's file list; the round is tried again");
        goto retry;
    }
    size_t aborted = SIZE_MAX;
    /* items that went to a build's waiting list: a rollback's pr_reset_states
     * queues those again itself, so they are not pushed a second time */
    memset(p->waited, 0, n);
    p->txn_open = 0;
    p->n_dq = 0;
    p->redo = R_NONE;
    p->sql_failed = 0;
    p->round_batches = 0;
    size_t later = SIZE_MAX; /* items[later..n) go to the next transaction */
    /* the committer idle: the transaction begins now (every check exact at
     * once); else this round aggregates while it commits the last one */
    int idle = 1;
    if (p->cm_started) {
        pthread_mutex_lock(&p->cmu);
        idle = !p->cm_busy;
        pthread_mutex_unlock(&p->cmu);
    }
    if (idle && pr_need_db(p))
        goto give_up;
    size_t next_prep = 0;
    double t_begin = pr_mono_s();
    pr_prep_submit(p, items, n, &next_prep);
    /* PostgreSQL: a registration alone (W_ALONE_P) takes no batches in */
    int alone = n == 1 && W_ALONE_P(p, items[0].kind);
    for (size_t i = 0;; i++) {
        if (i == n) {
            if (alone)
                break;
            size_t got = take_more(p, items + n, p->o.max_batches_per_txn - n, t_begin);
            if (!got)
                break;
            memset(p->waited + n, 0, got);
            n += got;
            pr_prep_submit(p, items, n, &next_prep);
        }
        if (items[i].kind == W_BUILD) {
            if (pr_need_db(p))
                goto give_up;
            int may = alone ? reg_may_write(p, &items[i]) : 1;
            if (may < 0)
                goto retry;
            if (!may)
                continue; /* put off: the round commits nothing */
            if (pr_register_build(p, items[i].app_id, items[i].build) != BL_OK)
                pr_log("build %s: registration failed", items[i].build);
            continue;
        }
        uint64_t r;
        char fail_why[PR_ML_WHY] = "";
        pslot *ps = pr_prep_wait(p, i);
        int res = process_batch(p, &items[i], ps ? &ps->job : NULL, &r, fail_why);
        if (ps)
            pr_prep_release(p, ps);
        pr_prep_submit(p, items, n, &next_prep);
        if (res == B_REDO)
            goto give_up;
        if (res == B_LATER) {
            later = i;
            break;
        }
        if (res == B_RETRY) {
            pr_log("batch %s: out of memory%s; the transaction is tried again", items[i].uuid,
                   p->pg ? " or a database error" : "");
            goto retry;
        }
        if (res == B_WAITING) {
            items[i].counted = 0; /* the count moved to the build's waiting list */
            p->waited[i] = 1;
        } else if (res != B_ABORT) {
            pr_release(p, &items[i]);
        }
        if (res == B_DONE) {
            m->records += r;
            m->done++;
            p->round_batches++;
            if (pr_ml_add(m, &items[i], 0, NULL))
                goto retry;
        } else if (res == B_DUPLICATE) {
            m->dup++;
            if (pr_ml_add(m, &items[i], 0, NULL))
                goto retry;
        } else if (res == B_FAILED) {
            m->failed_n++;
            if (pr_ml_add(m, &items[i], 1, fail_why[0] ? fail_why : NULL))
                goto retry;
        } else if (res == B_ABORT) {
            aborted = i;
            break;
        }
    }
    if (aborted != SIZE_MAX) {
        int prior = abandon(p);
        /* the batch that broke the transaction is kept aside; the others
         * are processed again at once */
        pending_batch pb;
        memset(&pb, 0, sizeof pb);
        memcpy(pb.uuid, items[aborted].uuid, sizeof pb.uuid);
        pb.enc = items[aborted].enc;
        if (items[aborted].from_q) /* its row is failed outside the round */
            pr_q_forget(p, pb.uuid, items[aborted].qgen, 2,
                        "broke the round it was processed in (see the server's log)");
        else
            pr_move_batch(p, &pb, 1);
        pr_release(p, &items[aborted]);
        pthread_mutex_lock(&p->mu);
        p->st.failed++;
        pthread_mutex_unlock(&p->mu);
        pr_push_back_items(p, items, p->waited, n, aborted);
        if (prior)
            pr_cm_put_back(p);
        return;
    }
    if (pr_need_db(p))
        goto give_up;
    /* the deltas are written and committed by the committer, while this
     * thread goes on with the next round */
    if (pr_cm_hand_over(p, items, later != SIZE_MAX ? later : n) != BL_OK)
        goto retry;
    p->q_round_fails = 0;
    if (p->q_solo)
        p->q_solo--;
    if (later != SIZE_MAX) /* back at the head, before any deletion queued since */
        pr_push_front(p, items + later, n - later);
    return;
give_up:
    if (p->redo == R_DUP) { /* done again at once: the check is exact now */
        abandon(p);
        pr_push_back_items(p, items, p->waited, n, SIZE_MAX);
        return;
    }
retry:;
    /* nothing of this round was committed: its batches stay durable in
     * batches/pending; try again after a pause, unless the server is
     * stopping (they are queued again at the next start) */
    int prior = abandon(p);
    unsigned session = p->q_session;
    pr_q_check_conn(p); /* PostgreSQL: a lost connection is made again (proc_queue.c) */
    pthread_mutex_lock(&p->mu);
    if (!prior)
        p->st.failing++; /* a failed commit counted itself */
    int stopping = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (stopping) {
        p->job.failed = 0;
        return;
    }
    sleep(1);
    if (p->pg && (prior || p->q_session != session || bl_db_connection_lost(p->db))) {
        p->q_round_fails = 0; /* the store's absence, or another round's failure */
    } else if (p->pg && p->sql_failed && ++p->q_round_fails >= PR_ROUND_FAILS_MAX) {
        /* batches that went waiting count too (as in cm_bound,
         * proc_commit.c): the rollback queued them again */
        size_t nb = 0, last = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            if (items[i].kind == W_BATCH) {
                nb++;
                last = i;
            }
        p->q_round_fails = 0;
        if (nb == 1 && items[last].from_q) { /* alone and broken every time: failed */
            pr_log("batch %s: its round failed %d times in a row (see above); failed",
                   items[last].uuid, PR_ROUND_FAILS_MAX);
            pr_q_forget(p, items[last].uuid, items[last].qgen, 2,
                        "its processing failed repeatedly (see the server's log)");
            pr_release(p, &items[last]);
            pthread_mutex_lock(&p->mu);
            p->st.failed++;
            pthread_mutex_unlock(&p->mu);
            if (p->q_solo)
                p->q_solo--;
            pr_push_back_items(p, items, p->waited, n, last);
            return;
        }
        if (nb > 1) { /* which one breaks it: the next rounds take one each */
            pr_log("%zu batches: their round failed %d times in a row; processed one per "
                   "round now", nb, PR_ROUND_FAILS_MAX);
            p->q_solo = n;
        }
    }
    pr_push_back_items(p, items, p->waited, n, SIZE_MAX);
    if (prior)
        pr_cm_put_back(p);
}
