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
    if (bl_wr_method_unknown(p->db, ab->build_id, mid, name, row))
        return pr_sql_err(p, "methods unknown");
    return BL_OK;
}

static void delta_stat(void *ctx, size_t i, bl_wr_stat *s)
{
    const bl_agg *a = ctx;
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
    const bl_agg_node *d = &((const bl_agg *)ctx)->nodes[i];
    *n = (bl_wr_node){
        .id = d->id, .build_id = d->build_id, .main = d->main, .parent = d->parent,
        .method = d->method, .is_new = d->is_new, .count = (int64_t)d->count,
        .total_us = (int64_t)d->total, .self_us = (int64_t)d->self,
    };
}

static bl_err flush_deltas(bl_processor *p)
{
    bl_err err = bl_agg_finish(&p->agg);
    if (!err && bl_wr_stats_add(p->db, p->agg.n_stats, delta_stat, &p->agg))
        err = pr_sql_err(p, "stats upsert");
    if (!err && bl_rollups_add(p->db, p->agg.n_stats, delta_stat, &p->agg))
        err = pr_sql_err(p, "rollups upsert");
    if (!err && bl_wr_nodes_add(p->db, p->agg.n_nodes, delta_node, &p->agg))
        err = pr_sql_err(p, "nodes upsert");
    if (!err)
        bl_events_flush(p->ev);
    /* an app a re-symbolication left dirty is rebuilt here (store/rollups.h) */
    /* a rebuild that fails (a malformed sketch written by a tool) must not
     * stop ingest: the statements run inside a savepoint, undone; the app
     * stays dirty (answers from method_stats) */
    if (!err && bl_rollups_refresh(p->db, NULL))
        pr_log("rebuilding slow-methods rollups failed: %s", bl_db_errmsg(p->db));
    return err;
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
enum { B_DONE, B_WAITING, B_DUPLICATE, B_FAILED, B_ABORT, B_LATER, B_RETRY, B_GONE };

/* Processes batch w, prepared in *j (prep.h) by a worker, or NULL: the
 * writer prepares it itself (also when its body was too big to be
 * prepared ahead). */
static int process_batch(bl_processor *p, const work *w, bl_prep *j, uint64_t *records)
{
    char path[BL_PATH_MAX];
    *records = 0;
    if (bl_datadir_batch(p->data_dir, 0, w->uuid, w->enc, path))
        return B_FAILED;
    if (!j || (j->read_err == BL_ETOOBIG && j->max_body < p->o.max_decompressed)) {
        j = &p->inline_job;
        bl_prep_file(j, path, w->enc, p->o.max_decompressed, !w->checked);
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
    bl_err seen = bl_wr_batch_seen(p->db, w->uuid);
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
    if (bl_apps_find(p->db, app, &app_id) != BL_OK) {
        pr_log("batch %s: unknown app %s", w->uuid, app);
        goto out;
    }
    bstate *b;
    if ((err = pr_get_build(p, app_id, build, &b))) {
        result = err == BL_ENOMEM ? B_RETRY : B_FAILED;
        goto out;
    }
    if (!b->ready && (err = pr_register_build(p, app_id, build))) {
        result = err == BL_ENOMEM ? B_RETRY : B_FAILED;
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
        struct stat sb;
        int have = stat(path, &sb) == 0;
        pb->mtime = have ? (int64_t)sb.st_mtime : (int64_t)time(NULL);
        pb->bytes = w->counted ? w->bytes : have ? (uint64_t)sb.st_size : 0;
        if (!w->counted) /* found on disk at start, or its build lost its files */
            bl_quota_hold(p->quota, app_id, build, pb->bytes);
        pb->counted = 1;
        pthread_mutex_lock(&p->mu);
        p->st.waiting++;
        pthread_mutex_unlock(&p->mu);
        result = B_WAITING;
        goto out;
    }
    /* a wall clock outside 2000..2200 is not a clock: use the server's */
    int64_t origin = bt.origin_wall_us;
    if (origin < 946684800000000ll || origin > 7258118400000000ll)
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
    uint64_t malformed0 = p->agg.malformed, unknown0 = p->agg.unknown_records;
    for (uint32_t i = 0; i < bt.n_threads; i++)
        if ((err = j->tree_err[i]) ||
            (err = bl_agg_tree(&p->agg, &b->ab, &bt.threads[i], &j->trees[i], origin))) {
            pr_log("batch %s: %s", w->uuid, bl_err_str(err));
            /* deltas are partial: the transaction must go */
            result = err == BL_ENOMEM ? B_RETRY : B_ABORT;
            goto out;
        }
    /* events (blocks) in the same transaction: exactly once with the batch */
    if ((err = bl_events_batch(p->ev, p->db, &bt, b->build_id, origin))) {
        pr_log("batch %s: events: %s", w->uuid,
              err == BL_EIO ? bl_db_errmsg(p->db) : bl_err_str(err));
        result = err == BL_ENOMEM ? B_RETRY : B_ABORT;
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
        .received_at = now - (int64_t)((pr_mono_s() - w->t_enq) * 1e6), .processed_at = now,
        .records = (int64_t)bt.n_records, .malformed = (int64_t)(p->agg.malformed - malformed0),
        .bytes = (int64_t)j->body.len,
    };
    if (bl_wr_batch_insert(p->db, &row)) {
        pr_sql_err(p, "batches insert");
        result = B_ABORT;
        goto out;
    }
    if (bl_wr_build_count_batch(p->db, b->build_id, (int64_t)bt.n_records)) {
        result = B_ABORT;
        goto out;
    }
    *records = bt.n_records;
    result = B_DONE;
out:
    return result;
}

void pr_move_batch(bl_processor *p, const pending_batch *pb, int failed)
{
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

/* More work for the open transaction (begun at t_begin, monotonic s): the
 * items queued since, waiting up to txn_idle_ms for one when there are
 * none. 0 — commit now — once the transaction holds max_batches_per_txn
 * items (`room` is 0), has been open txn_max_ms, holds BL_TXN_MAX_VALS
 * inclusive times (bounds the aggregator's memory), or the server stops.
 * Committing rewrites every call-path node and method-hour row the
 * transaction touched, so under load a transaction that goes on taking
 * batches writes each of them once instead of once per handful of batches;
 * nothing is acknowledged by the writer, so a kill -9 before the commit
 * leaves the batches in batches/pending, processed again at the start. */
static size_t take_more(bl_processor *p, work *dst, size_t room, double t_begin)
{
    if (!room || p->agg.n_vals >= BL_TXN_MAX_VALS)
        return 0;
    double end = t_begin + (double)p->o.txn_max_ms / 1e3;
    pthread_mutex_lock(&p->mu);
    double now = pr_mono_s();
    if (p->qlen == 0 && !p->stop && now < end && p->o.txn_idle_ms) {
        double until = now + (double)p->o.txn_idle_ms / 1e3;
        if (until > end)
            until = end;
        while (p->qlen == 0 && !p->stop && (now = pr_mono_s()) < until) {
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
        }
    }
    size_t n = 0;
    if (!p->stop && pr_mono_s() < end)
        n = pr_pop_locked(p, dst, room, 0);
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void run_txn_(bl_processor *p, work *items, size_t n);

void pr_run_txn(bl_processor *p, work *items, size_t n)
{
    if (n == 1 && items[0].kind == W_DROP) { /* a deletion runs alone */
        pr_drop_finish(p, items[0].dr, pr_drop_build(p, &items[0]));
        return;
    }
    run_txn_(p, items, n);
    pr_prep_drain(p);
}

/* After a rollback: items[0..n) go back to the head of the queue in their
 * order, except `skip` and those a build's waiting list queued again
 * (p->waited). Compacts items in place. */
static void push_back_items(bl_processor *p, work *items, size_t n, size_t skip)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i != skip && !p->waited[i])
            items[k++] = items[i];
    pr_push_front(p, items, k);
}

static void run_txn_(bl_processor *p, work *items, size_t n)
{
    movelist *m = &p->moves; /* empty (pr_committed leaves it so) */
    m->n = 0;
    m->done = m->records = m->dup = m->failed_n = 0;
    size_t aborted = SIZE_MAX;
    /* items that went to a build's waiting list: a rollback's pr_reset_states
     * queues those again itself, so they are not pushed a second time */
    memset(p->waited, 0, n);
    if (bl_db_begin(p->db)) {
        pr_sql_err(p, "begin");
        goto retry;
    }
    p->round_batches = 0;
    size_t later = SIZE_MAX; /* items[later..n) go to the next transaction */
    size_t next_prep = 0;
    double t_begin = pr_mono_s();
    pr_prep_submit(p, items, n, &next_prep);
    for (size_t i = 0;; i++) {
        if (i == n) {
            size_t got = take_more(p, items + n, p->o.max_batches_per_txn - n, t_begin);
            if (!got)
                break;
            memset(p->waited + n, 0, got);
            n += got;
            pr_prep_submit(p, items, n, &next_prep);
        }
        if (items[i].kind == W_BUILD) {
            if (pr_register_build(p, items[i].app_id, items[i].build) != BL_OK)
                pr_log("build %s: registration failed", items[i].build);
            continue;
        }
        uint64_t r;
        pslot *ps = pr_prep_wait(p, i);
        int res = process_batch(p, &items[i], ps ? &ps->job : NULL, &r);
        if (ps)
            pr_prep_release(p, ps);
        pr_prep_submit(p, items, n, &next_prep);
        if (res == B_LATER) {
            later = i;
            break;
        }
        if (res == B_RETRY) {
            pr_log("batch %s: out of memory; the transaction is tried again", items[i].uuid);
            bl_db_rollback(p->db);
            clear_deltas(p);
            pr_reset_states(p);
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
            pr_ml_add(m, &items[i], 0);
        } else if (res == B_DUPLICATE) {
            m->dup++;
            pr_ml_add(m, &items[i], 0);
        } else if (res == B_FAILED) {
            m->failed_n++;
            pr_ml_add(m, &items[i], 1);
        } else if (res == B_ABORT) {
            aborted = i;
            break;
        }
    }
    if (aborted != SIZE_MAX || flush_deltas(p) != BL_OK || bl_db_commit(p->db)) {
        if (aborted == SIZE_MAX)
            pr_sql_err(p, "commit");
        bl_db_rollback(p->db);
        clear_deltas(p);
        pr_reset_states(p);
        if (aborted != SIZE_MAX) {
            /* the batch that broke the transaction is kept aside; the others
             * are processed again at once */
            pending_batch pb;
            memset(&pb, 0, sizeof pb);
            memcpy(pb.uuid, items[aborted].uuid, sizeof pb.uuid);
            pb.enc = items[aborted].enc;
            pr_move_batch(p, &pb, 1);
            pr_release(p, &items[aborted]);
            pthread_mutex_lock(&p->mu);
            p->st.failed++;
            pthread_mutex_unlock(&p->mu);
            push_back_items(p, items, n, aborted);
            return;
        }
        goto retry;
    }
    bl_agg_mark_stored(&p->agg); /* committed: later rounds update them by id */
    clear_deltas(p);
    if (later != SIZE_MAX) /* back at the head, before any deletion queued since */
        pr_push_front(p, items + later, n - later);
    pthread_mutex_lock(&p->mu);
    p->st.txn++;
    p->st.failing = 0;
    p->st.dropped_paths = p->agg.dropped_nodes;
    pthread_mutex_unlock(&p->mu);
    /* the batches are counted and their files moved once the commit is
     * durable: by the checkpointer after its WAL sync, while this thread
     * goes on with the next round (proc_workers.c) */
    pr_committed(p);
    return;
retry:
    /* nothing was committed: the batches stay durable in batches/pending;
     * try again after a pause, unless the server is stopping (they are
     * queued again at the next start) */
    pthread_mutex_lock(&p->mu);
    p->st.failing++;
    int stopping = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (stopping)
        return;
    sleep(1);
    push_back_items(p, items, n, SIZE_MAX);
}

