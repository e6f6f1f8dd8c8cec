/*
 * proc_commit.c — the committer (see proc_internal.h): a round's SQL writes
 * and its COMMIT run on the thread bl-commit while the writer aggregates
 * the next round.
 *
 * The connection p->db is used by one thread at a time: by the committer
 * from pr_cm_hand_over until it sets cm_busy back to 0 (under cmu), else by
 * the writer. While the committer holds it, the writer aggregates without
 * SQL: batches of builds it knows are processed in memory and their rows
 * (batches, build counters) kept in p->dq; anything else that needs the
 * database (a new app or build, a build's files, block events, an unknown
 * methodId) waits for the committer first (pr_need_db). A batch counts as
 * processed only once its round is committed and durable (proc_workers.c).
 *
 * A commit that fails rolls its round back; the writer learns it at its
 * next wait (pr_cm_wait), gives up its own round as well (its aggregates
 * were built on the failed one's node ids and marks), drops its build
 * states and puts both rounds' items back, the failed round's first. On
 * PostgreSQL commits failing in a row on an SQL error are bounded as
 * rounds given up are (PR_ROUND_FAILS_MAX, pr_cm_put_back): their batches
 * go one per round, and one failing alone that often is failed.
 */
#include "pipeline/proc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/rollups.h"

static void delta_stat(void *ctx, size_t i, bl_wr_stat *s)
{
    const bl_agg_out *a = ctx;
    const bl_agg_stat *d = &a->stats[a->stat_order[i]];
    *s = (bl_wr_stat){
        .build_id = d->build_id, .method = d->method, .main = d->main, .hour = d->hour,
        .count = (int64_t)d->count, .total_us = (int64_t)d->total,
        .self_us = (int64_t)d->self, .max_us = (int64_t)d->max,
        .sketch = a->blobs.data + d->blob_off, .sketch_len = d->blob_len,
    };
}

static void delta_node(void *ctx, size_t i, bl_wr_node *n)
{
    const bl_agg_node *d = &((const bl_agg_out *)ctx)->nodes[i];
    *n = (bl_wr_node){
        .id = d->id, .build_id = d->build_id, .main = d->main, .parent = d->parent,
        .method = d->method, .is_new = d->is_new, .count = (int64_t)d->count,
        .total_us = (int64_t)d->total, .self_us = (int64_t)d->self,
    };
}

/* Logs p->db's SQL error about `what` (the committer's pr_sql_err: the
 * writer's p->sql_failed is not touched); BL_EIO. */
static bl_err cm_sql_err(bl_processor *p, const char *what)
{
    pr_log("SQL error in %s: %s", what, bl_db_errmsg(p->db));
    return BL_EIO;
}

/* Writes the job's deltas and commits. Thread holding p->db. */
static void cm_run(bl_processor *p, cjob *j)
{
    bl_agg_out *o = &j->out;
    bl_err err = BL_OK;
    /* the nodes first: the writer builds the stats' sketches meanwhile */
    if (bl_wr_nodes_add(p->db, o->n_nodes, delta_node, o))
        err = cm_sql_err(p, "nodes upsert");
    pthread_mutex_lock(&p->cmu);
    while (p->cm_stats == 0)
        pthread_cond_wait(&p->cm_cv, &p->cmu);
    int stats_ok = p->cm_stats > 0;
    pthread_mutex_unlock(&p->cmu);
    if (!err && !stats_ok) {
        pr_log("the round's sketches could not be built; its batches are "
               "processed again");
        err = BL_ENOMEM;
    }
    if (!err && bl_wr_stats_add(p->db, o->n_stats, delta_stat, o))
        err = cm_sql_err(p, "stats upsert");
    if (!err && bl_rollups_add(p->db, o->n_stats, delta_stat, o))
        err = cm_sql_err(p, "rollups upsert");
    /* PostgreSQL store: the round's queue rows go in its transaction, so a
     * batch is counted exactly once (proc_queue.c) */
    if (!err && p->pg && pr_q_finish_round(p, &j->moves))
        err = BL_EIO;
    /* apps a re-symbolication left dirty are rebuilt by p->rb (rebuilder.h) */
    if (!err && p->o.test_commit_delay_ms)
        usleep((useconds_t)p->o.test_commit_delay_ms * 1000);
    if (!err && bl_db_commit(p->db))
        err = cm_sql_err(p, "commit");
    if (err == BL_EIO && p->pg && !bl_db_connection_lost(p->db))
        p->cm_fails++; /* the batches' own failure, maybe: bounded (pr_cm_put_back) */
    else if (err == BL_EIO)
        p->cm_fails = 0; /* the store away: not counted */
    if (err) {
        bl_db_rollback(p->db);
        bl_events_clear(j->ev);
        pr_ml_reset(&j->moves); /* nothing moves: the files stay in batches/pending */
        j->failed = 1;
        pthread_mutex_lock(&p->mu);
        p->st.failing++;
        pthread_mutex_unlock(&p->mu);
        return;
    }
    p->cm_fails = 0;
    bl_events_flush(j->ev);
    pthread_mutex_lock(&p->mu);
    p->st.txn++;
    p->st.failing = 0;
    p->st.dropped_paths = j->dropped;
    pthread_mutex_unlock(&p->mu);
    /* counted and moved once durable (the checkpointer's WAL sync) */
    pr_committed(p, &j->moves);
}

void *pr_cm_main(void *arg)
{
    bl_processor *p = arg;
    pr_name_thread("bl-commit");
    pthread_mutex_lock(&p->cmu);
    for (;;) {
        while (!p->cm_busy && !p->cm_stop)
            pthread_cond_wait(&p->cm_cv, &p->cmu);
        if (!p->cm_busy)
            break;
        pthread_mutex_unlock(&p->cmu);
        cm_run(p, &p->job);
        pthread_mutex_lock(&p->cmu);
        p->cm_busy = 0;
        pthread_cond_broadcast(&p->cm_done);
        pthread_mutex_unlock(&p->cmu);
        /* a round waiting for more batches while this one committed is
         * handed over now (take_more); never both locks at once */
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_mutex_lock(&p->cmu);
    }
    pthread_mutex_unlock(&p->cmu);
    return NULL;
}

bl_err pr_cm_hand_over(bl_processor *p, const work *items, size_t n)
{
    /* without a committer thread the round is written here, whole */
    bl_err err = p->cm_started ? bl_agg_finish_nodes(&p->agg) : bl_agg_finish(&p->agg);
    if (err)
        return err;
    /* marked stored before the commit: the next round updates them by id,
     * and is written only after this commit; when it fails, every build
     * state is dropped and loaded again from the database */
    bl_agg_mark_stored(&p->agg);
    cjob *j = &p->job;
    bl_agg_take_nodes(&p->agg, &j->out);
    memcpy(j->items, items, n * sizeof *items);
    memcpy(j->waited, p->waited, n);
    j->n_items = n;
    movelist t = j->moves; /* empty */
    j->moves = p->moves;
    p->moves = t;
    j->ev = p->ev;
    p->ev = p->ev == p->evs[0] ? p->evs[1] : p->evs[0];
    j->dropped = p->agg.dropped_nodes;
    j->failed = 0;
    j->solo = p->q_solo > 0;
    p->txn_open = 0;
    if (!p->cm_started) {
        bl_agg_take_stats(&p->agg, &j->out);
        p->cm_stats = 1;
        cm_run(p, j);
        return BL_OK;
    }
    pthread_mutex_lock(&p->cmu);
    p->cm_busy = 1;
    p->cm_stats = 0;
    pthread_cond_broadcast(&p->cm_cv);
    pthread_mutex_unlock(&p->cmu);
    /* the sketches while the committer writes the node deltas (they were the
     * last serial step between a round's last batch and its commit); the
     * job is the committer's now, but j->out's stats, order and blobs are
     * not read until cm_stats is set */
    err = bl_agg_finish_stats(&p->agg);
    if (!err)
        bl_agg_take_stats(&p->agg, &j->out);
    else
        bl_agg_clear(&p->agg); /* the round fails as a failed commit does */
    pthread_mutex_lock(&p->cmu);
    p->cm_stats = err ? -1 : 1;
    pthread_cond_broadcast(&p->cm_cv);
    pthread_mutex_unlock(&p->cmu);
    return BL_OK;
}

int pr_cm_wait(bl_processor *p)
{
    if (p->cm_started) {
        pthread_mutex_lock(&p->cmu);
        while (p->cm_busy)
            pthread_cond_wait(&p->cm_done, &p->cmu);
        pthread_mutex_unlock(&p->cmu);
    }
    return p->job.failed;
}

int pr_cm_failed_now(bl_processor *p)
{
    if (!p->cm_started)
        return p->job.failed;
    pthread_mutex_lock(&p->cmu);
    int failed = !p->cm_busy && p->job.failed;
    pthread_mutex_unlock(&p->cmu);
    return failed;
}

void pr_push_back_items(bl_processor *p, work *items, const uint8_t *waited, size_t n,
                        size_t skip)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i != skip && !waited[i])
            items[k++] = items[i];
    pr_push_front(p, items, k);
}

/* The failed job j's commit was the PR_ROUND_FAILS_MAX-th in a row to fail
 * on an SQL error (p->cm_fails): as for rounds given up (proc_round.c),
 * its batches go one per round from now on, or its batch, alone, is
 * failed; a round of no batch (a registration alone, W_ALONE_P) is given
 * up (its items flagged in j->waited: not put back). Batches that went to
 * their build's waiting list in the round count as its batches: the
 * round's registration of their build is what its commit writes, and the
 * rollback (pr_reset_states) queued them again, so a round of waiting
 * batches alone would otherwise be tried for ever. A waiting batch failed
 * here is also in the queue again: its copy there finds its bytes gone
 * (B_GONE) and releases its quota count. The index of the item failed,
 * SIZE_MAX when none. */
static size_t cm_bound(bl_processor *p, cjob *j)
{
    p->cm_fails = 0;
    size_t nb = 0, last = SIZE_MAX;
    for (size_t i = 0; i < j->n_items; i++)
        if (j->items[i].kind == W_BATCH) {
            nb++;
            last = i;
        }
    if (nb == 1 && j->items[last].from_q) { /* alone and its commit failing every time */
        work *w = &j->items[last];
        pr_log("batch %s: its round's commit failed %d times in a row (see above); failed",
               w->uuid, PR_ROUND_FAILS_MAX);
        pr_q_forget(p, w->uuid, w->qgen, 2,
                    "its round's commit failed repeatedly (see the server's log)");
        pr_release(p, w);
        pthread_mutex_lock(&p->mu);
        p->st.failed++;
        pthread_mutex_unlock(&p->mu);
        if (p->q_solo)
            p->q_solo--;
        return last;
    }
    if (nb == 0) { /* registrations: tried again at the build's next upload, or
                    * when batches of it wait (pr_recheck_waiting) */
        for (size_t i = 0; i < j->n_items; i++)
            if (j->items[i].kind == W_BUILD) {
                pr_log("build %s: its registration's commit failed %d times in a row (see "
                       "above); given up until its next upload or batch",
                       j->items[i].build, PR_ROUND_FAILS_MAX);
                j->waited[i] = 1;
            }
        return SIZE_MAX;
    }
    if (nb > 1) { /* which one breaks it: the next rounds take one each */
        pr_log("%zu batches: their round's commit failed %d times in a row; processed one "
               "per round now", nb, PR_ROUND_FAILS_MAX);
        p->q_solo = j->n_items;
    }
    return SIZE_MAX;
}

void pr_cm_put_back(bl_processor *p)
{
    cjob *j = &p->job;
    if (j->failed) {
        /* a round of one batch (q_solo) that did not commit is done again:
         * it does not count as one of those rounds */
        if (j->solo)
            p->q_solo++;
        size_t skip = p->pg && p->cm_fails >= PR_ROUND_FAILS_MAX ? cm_bound(p, j) : SIZE_MAX;
        pr_push_back_items(p, j->items, j->waited, j->n_items, skip);
    }
    j->failed = 0;
    j->n_items = 0;
}

bl_err pr_need_db(bl_processor *p)
{
    if (p->txn_open)
        return BL_OK;
    if (pr_cm_wait(p)) {
        p->redo = R_PRIOR;
        return BL_EIO;
    }
    if (bl_db_begin(p->db)) {
        pr_sql_err(p, "begin");
        p->redo = R_EIO;
        return BL_EIO;
    }
    p->txn_open = 1;
    if (p->pg && bl_db_session(p->db) != p->q_session) {
        /* PostgreSQL: the connection was made again by BEGIN: the build
         * locks went with the old session, the build states may be stale —
         * the round is given up, pr_q_check_conn forgets them */
        pr_log("writer connection: a new session; the round is done again");
        p->redo = R_EIO;
        return BL_EIO;
    }
    for (size_t i = 0; i < p->n_dq; i++) {
        deferred_batch *d = &p->dq[i];
        bl_err seen = bl_wr_batch_seen(p->db, d->uuid);
        if (seen == BL_OK) { /* committed before: its aggregates must not count */
            pr_log("batch %s: processed before (a duplicate); the round is done again",
                   d->uuid);
            p->redo = R_DUP;
            return BL_EIO;
        }
        d->row.uuid = d->uuid;
        bl_err ce = BL_OK;
        if (seen != BL_ENOTFOUND || bl_wr_batch_insert(p->db, &d->row) ||
            (ce = bl_wr_build_count_batch(p->db, d->row.build_id, d->row.records))) {
            if (ce == BL_ENOTFOUND) /* stale: the round resets every build state */
                pr_log("batch %s: its build (id %lld) was deleted meanwhile; the round is "
                       "done again with the build's state made again", d->uuid,
                       (long long)d->row.build_id);
            else
                pr_sql_err(p, "batches insert");
            p->redo = R_EIO;
            return BL_EIO;
        }
    }
    p->n_dq = 0;
    return BL_OK;
}
