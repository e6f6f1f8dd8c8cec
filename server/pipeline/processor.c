/*
 * processor.c — the processor’s public API, its work queue, the writer
 * thread’s loop, recovery at start, start and stop (see processor.h; the
 * other parts: proc_internal.h).
 *
 * State kept in memory by the writer only:
 *   - the queue of work (batches to process, builds whose files changed);
 *   - per build: methods.id by methodId, the call-path node map
 *     (parent node, main flag, method) -> node id, batches waiting for files;
 *   - the deltas of the open transaction (method stats, node counters),
 *     flushed as UPSERTs before COMMIT.
 */
#include "pipeline/processor.h"
#include "pipeline/proc_internal.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/stat.h>
#endif
#include <unistd.h>

#include "pipeline/datadir.h"
#include "pipeline/quota.h"
#include "store/builds.h"
#include "store/db.h"
#include "store/writer.h"

/* Names the calling thread (top -H, /proc/PID/task/N/comm). */
void pr_name_thread(const char *name)
{
#ifdef __linux__
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)name;
#endif
}

double pr_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the calling thread's last pr_log line (pr_last_log) */
static _Thread_local char last_log[256];

__attribute__((format(printf, 1, 2))) void pr_log(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "beatline-server: %s\n", msg);
    snprintf(last_log, sizeof last_log, "%.255s", msg);
}

const char *pr_last_log(void)
{
    return last_log;
}

void pr_last_log_clear(void)
{
    last_log[0] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Queue                                                                     */

bl_err pr_push(bl_processor *p, const work *w)
{
    pthread_mutex_lock(&p->mu);
    if (p->qlen == p->qcap) {
        size_t nc = p->qcap ? p->qcap * 2 : 64;
        work *nq = malloc(nc * sizeof *nq);
        if (!nq) {
            pthread_mutex_unlock(&p->mu);
            return BL_ENOMEM;
        }
        for (size_t i = 0; i < p->qlen; i++)
            nq[i] = p->q[(p->qhead + i) % p->qcap];
        free(p->q);
        p->q = nq;
        p->qcap = nc;
        p->qhead = 0;
    }
    p->q[(p->qhead + p->qlen) % p->qcap] = *w;
    p->qlen++;
    if (w->kind == W_BATCH)
        p->st.queue_depth++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return BL_OK;
}

/* Puts items ws[0..n) back at the head of the queue, in their order: work
 * the writer had taken goes back before anything queued after it (a build
 * deletion, W_DROP, must run after every batch queued before it). Writer
 * thread only. On a shortage of memory it tries again every 100 ms until it
 * succeeds or the server stops (what is queued is durable on disk and
 * queued again at the next start): an item never leaves the queue with its
 * quota count held. */
void pr_push_front(bl_processor *p, const work *ws, size_t n)
{
    if (!n)
        return;
    int told = 0;
    pthread_mutex_lock(&p->mu);
    while (p->qlen + n > p->qcap) {
        size_t nc = p->qcap ? p->qcap * 2 : 64;
        while (nc < p->qlen + n)
            nc *= 2;
        work *nq = malloc(nc * sizeof *nq);
        if (nq) {
            for (size_t i = 0; i < p->qlen; i++)
                nq[i] = p->q[(p->qhead + i) % p->qcap];
            free(p->q);
            p->q = nq;
            p->qcap = nc;
            p->qhead = 0;
            break;
        }
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return;
        }
        pthread_mutex_unlock(&p->mu);
        if (!told++)
            pr_log("out of memory putting %zu item(s) back in the queue; trying again", n);
        usleep(100000);
        pthread_mutex_lock(&p->mu);
    }
    p->qhead = (p->qhead + p->qcap - n % p->qcap) % p->qcap;
    for (size_t i = 0; i < n; i++) {
        p->q[(p->qhead + i) % p->qcap] = ws[i];
        if (ws[i].kind == W_BATCH)
            p->st.queue_depth++;
    }
    p->qlen += n;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

bl_err bl_processor_enqueue(bl_processor *p, const char *uuid, bl_encoding enc)
{
    work w;
    memset(&w, 0, sizeof w);
    w.kind = W_BATCH;
    snprintf(w.uuid, sizeof w.uuid, "%s", uuid);
    w.enc = enc;
    w.t_enq = pr_mono_s();
    return pr_push(p, &w);
}

bl_err bl_processor_enqueue_admitted(bl_processor *p, const char *uuid, bl_encoding enc,
                                     int64_t app_id, const char *build, uint64_t bytes,
                                     int counted)
{
    work w;
    memset(&w, 0, sizeof w);
    w.kind = W_BATCH;
    snprintf(w.uuid, sizeof w.uuid, "%s", uuid);
    w.enc = enc;
    w.t_enq = pr_mono_s();
    w.app_id = app_id;
    snprintf(w.build, sizeof w.build, "%s", build);
    w.bytes = bytes;
    w.counted = counted;
    w.checked = 1; /* the POST ran bl_agg_check_batch on these bytes */
    bl_err err = p->o.test_fail_enqueue ? BL_ENOMEM : pr_push(p, &w);
    if (err) /* not queued: its copy would be kept until the server stops */
        pr_body_drop(p, uuid);
    return err;
}

bl_quota *bl_processor_quota(bl_processor *p)
{
    return p->quota;
}

/* The writer is done with a batch that is not waiting: its quota count goes. */
void pr_release(bl_processor *p, work *w)
{
    if (w->counted)
        bl_quota_release(p->quota, w->app_id, w->build, w->bytes);
    w->counted = 0;
}

bl_err bl_processor_build_changed(bl_processor *p, int64_t app_id, const char *build)
{
    work w;
    memset(&w, 0, sizeof w);
    w.kind = W_BUILD;
    w.app_id = app_id;
    snprintf(w.build, sizeof w.build, "%s", build);
    w.t_enq = pr_mono_s();
    return pr_push(p, &w);
}


/* How long a gauges answer is reused (s): a scrape per node per second
 * costs the database one bounded statement at most. */
#define GAUGE_TTL_S 1.0

/* SQLite: batches/pending's files (*n) and the oldest one's age (s);
 * batches/failed's files (*failed). Files only, *.tmp not counted. */
static bl_err count_dir(const char *dir, int64_t *n, int64_t *oldest_s)
{
    *n = 0;
    if (oldest_s)
        *oldest_s = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? BL_OK : BL_EIO;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        if (e->d_name[0] == '.' || (dot && !strcmp(dot, ".tmp")))
            continue;
        (*n)++;
        struct stat st;
        if (oldest_s && fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_mtime < now &&
            (int64_t)(now - st.st_mtime) > *oldest_s)
            *oldest_s = (int64_t)(now - st.st_mtime);
    }
    closedir(d);
    return BL_OK;
}

bl_err bl_processor_queue_gauges(bl_processor *p, bl_queue_gauge *g)
{
    memset(g, 0, sizeof *g);
    double now = pr_mono_s();
    pthread_mutex_lock(&p->g_mu); /* one refresh at a time; others reuse it */
    if (p->g_valid && now - p->g_at < GAUGE_TTL_S) {
        *g = p->g_last;
        pthread_mutex_unlock(&p->g_mu);
        return BL_OK;
    }
    bl_err err;
    if (p->pg) {
        err = pr_q_gauges(p, g);
    } else {
        /* every file in batches/pending is acknowledged and not committed:
         * those in the writer's queue wait, the others are taken (in a
         * round, or waiting for their build's uploads) */
        char d[BL_PATH_MAX];
        int64_t pending = 0;
        err = bl_path_join(d, p->data_dir, "batches/pending");
        if (!err)
            err = count_dir(d, &pending, &g->oldest_s);
        if (!err && !(err = bl_path_join(d, p->data_dir, "batches/failed")))
            err = count_dir(d, &g->failed, NULL);
        pthread_mutex_lock(&p->mu);
        uint64_t q = p->st.queue_depth;
        pthread_mutex_unlock(&p->mu);
        g->waiting = (int64_t)q < pending ? (int64_t)q : pending;
        g->leased = pending - g->waiting;
    }
    if (!err) {
        p->g_last = *g;
        p->g_at = now;
        p->g_valid = 1;
    }
    pthread_mutex_unlock(&p->g_mu);
    return err;
}

void bl_processor_stats(bl_processor *p, bl_proc_stats *s)
{
    pthread_mutex_lock(&p->mu);
    *s = p->st;
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_lock(&p->bmu);
    s->prep_memory_bytes = p->mb_bytes;
    pthread_mutex_unlock(&p->bmu);
}

/* Hands a drop's result to its caller. */
void pr_drop_finish(bl_processor *p, drop_req *dr, bl_err result)
{
    if (!dr)
        return;
    pthread_mutex_lock(&p->mu);
    dr->done = 1;
    dr->result = result;
    int last = --dr->refs == 0;
    pthread_cond_broadcast(&p->drop_cv);
    pthread_mutex_unlock(&p->mu);
    if (last)
        free(dr);
}

bl_err bl_processor_drop_build(bl_processor *p, int64_t app_id, const char *build,
                               int64_t cutoff_us, unsigned wait_ms, int *done)
{
    *done = 0;
    if (p->pg) /* in line in the shared queue, run by the build's lock holder */
        return pr_q_drop_build(p, app_id, build, cutoff_us, wait_ms, done);
    drop_req *dr = calloc(1, sizeof *dr);
    if (!dr)
        return BL_ENOMEM;
    dr->refs = 2;
    work w;
    memset(&w, 0, sizeof w);
    w.kind = W_DROP;
    w.app_id = app_id;
    snprintf(w.build, sizeof w.build, "%s", build);
    w.t_enq = pr_mono_s();
    w.dr = dr;
    w.drop_cutoff = cutoff_us;
    if (pr_push(p, &w) != BL_OK) {
        free(dr);
        return BL_ENOMEM;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wait_ms / 1000;
    ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (!dr->done && pthread_cond_timedwait(&p->drop_cv, &p->mu, &ts) == 0)
        ;
    bl_err result = dr->done ? dr->result : BL_OK;
    *done = dr->done;
    int last = --dr->refs == 0;
    pthread_mutex_unlock(&p->mu);
    if (last)
        free(dr);
    return result;
}

bl_err bl_processor_set_url_patterns(bl_processor *p, int64_t app_id,
                                     const char *const *pats, size_t n, unsigned wait_ms,
                                     int *done)
{
    *done = 0;
    size_t bytes = 1;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(pats[i]) + 1;
    drop_req *dr = calloc(1, sizeof *dr);
    char *blob = malloc(bytes);
    if (!dr || !blob) {
        free(dr);
        free(blob);
        return BL_ENOMEM;
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(pats[i]) + 1;
        memcpy(blob + off, pats[i], l);
        off += l;
    }
    dr->refs = 2;
    work w;
    memset(&w, 0, sizeof w);
    w.kind = W_URLPAT;
    w.app_id = app_id;
    w.t_enq = pr_mono_s();
    w.dr = dr;
    w.pats = blob;
    w.n_pats = n;
    if (pr_push(p, &w) != BL_OK) {
        free(dr);
        free(blob);
        return BL_ENOMEM;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wait_ms / 1000;
    ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (!dr->done && pthread_cond_timedwait(&p->drop_cv, &p->mu, &ts) == 0)
        ;
    bl_err result = dr->done ? dr->result : BL_OK;
    *done = dr->done;
    int last = --dr->refs == 0;
    pthread_mutex_unlock(&p->mu);
    if (last)
        free(dr);
    return result;
}

size_t pr_pop_locked(bl_processor *p, work *dst, size_t room, int new_round)
{
    size_t n = 0;
    while (n < room && p->qlen > 0) {
        if (W_ALONE_P(p, p->q[p->qhead].kind) && (n > 0 || !new_round))
            break;
        dst[n] = p->q[p->qhead];
        p->qhead = (p->qhead + 1) % p->qcap;
        p->qlen--;
        if (dst[n].kind == W_BATCH)
            p->st.queue_depth--;
        n++;
        if (W_ALONE_P(p, dst[n - 1].kind))
            break;
    }
    return n;
}

/* Seconds between expiry sweeps: a quarter of the expiry time, 1..60. */
double pr_sweep_every(const bl_processor *p)
{
    double s = (double)p->o.waiting_expiry_s / 4;
    return s < 1 ? 1 : s > 60 ? 60 : s;
}

static void *writer_main(void *arg)
{
    bl_processor *p = arg;
    pr_name_thread("bl-writer");
    size_t cap = p->o.max_batches_per_txn;
    work *items = malloc(cap * sizeof *items);
    p->waited = malloc(cap);
    if (!items || !p->waited) {
        free(items);
        return NULL;
    }
    for (;;) {
        if (pr_mono_s() >= p->next_sweep) {
            pr_expire_waiting(p);
            p->next_sweep = pr_mono_s() + pr_sweep_every(p);
        }
        /* PostgreSQL store: files of waiting builds uploaded to other nodes */
        if (p->pg && pr_mono_s() >= p->next_recheck) {
            pr_recheck_waiting(p);
            p->next_recheck = pr_mono_s() + PR_RECHECK_S;
        }
        /* the last round's commit failed while nothing else came: it goes
         * again now, not when more work comes (after a pause, as a round
         * given up is) */
        if (pr_cm_failed_now(p)) {
            pr_reset_states(p);
            pr_cm_put_back(p);
            pr_q_check_conn(p);
            sleep(1);
            continue;
        }
        /* PostgreSQL store: build locks asked for by the claim thread, taken
         * on this connection between rounds (proc_queue.c) */
        if (atomic_exchange(&p->q_wants, 0)) {
            if (pr_cm_wait(p)) { /* the round before failed: it goes again */
                pr_reset_states(p);
                pr_cm_put_back(p);
                pr_q_check_conn(p);
            }
            pr_q_locks(p);
        }
        pthread_mutex_lock(&p->mu);
        while (p->qlen == 0 && !p->stop && !atomic_load(&p->q_wants) && !pr_cm_failed_now(p)) {
            p->busy = 0;
            pthread_cond_broadcast(&p->idle_cv);
            /* wake for the next expiry sweep, or look for waiting builds'
             * files (PostgreSQL) (CLOCK_REALTIME: the cv's clock) */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            double next = p->pg && p->next_recheck < p->next_sweep ? p->next_recheck
                                                                  : p->next_sweep;
            double left = next - pr_mono_s();
            if (left < 0.05)
                left = 0.05;
            ts.tv_sec += (time_t)left;
            ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) != 0 && p->qlen == 0)
                break; /* timed out: sweep, then wait again */
        }
        if (p->qlen == 0 && !p->stop) {
            pthread_mutex_unlock(&p->mu);
            continue;
        }
        if (p->stop) { /* what is queued is durable on disk: picked up at next start */
            p->busy = 0;
            pthread_cond_broadcast(&p->idle_cv);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        /* PostgreSQL store: after rounds failing in a row, one batch each */
        size_t n = pr_pop_locked(p, items, p->q_solo ? 1 : cap, 1);
        p->busy = 1;
        pthread_mutex_unlock(&p->mu);
        pr_run_txn(p, items, n);
    }
    /* the last round's commit ends before the thread does (a failed one
     * leaves its batches in batches/pending: queued again at next start) */
    pr_cm_wait(p);
    p->job.failed = 0;
    free(items);
    return NULL;
}

/* The quota tracker learns which builds can be processed (from the builds
 * table: the writer corrects it as it registers them), so that a batch of a
 * known build is not taken for a new one right after a start. */
static bl_err preload_one(int64_t app_id, const char *name, int ready, void *ctx)
{
    bl_processor *p = ctx;
    return bl_quota_set_ready(p->quota, app_id, name, ready);
}

static bl_err preload_quota(bl_processor *p, char *errbuf, size_t n)
{
    bl_err err = bl_wr_builds_ready(p->db, preload_one, p);
    if (err == BL_EIO) {
        snprintf(errbuf, n, "cannot read builds: %s", bl_db_errmsg(p->db));
        return BL_EIO;
    }
    if (err)
        snprintf(errbuf, n, "out of memory");
    return err;
}

/* Queues every build folder and every pending batch found on disk. */
static bl_err recover(bl_processor *p)
{
    char d[BL_PATH_MAX];
    if (bl_path_join(d, p->data_dir, "builds"))
        return BL_ETOOBIG;
    DIR *apps = opendir(d);
    struct dirent *ae;
    while (apps && (ae = readdir(apps))) {
        char *end;
        long long app_id = strtoll(ae->d_name, &end, 10);
        if (ae->d_name[0] == '.' || *end)
            continue;
        char ad[BL_PATH_MAX];
        if (bl_path_join(ad, d, ae->d_name))
            continue;
        DIR *bd = opendir(ad);
        struct dirent *be;
        while (bd && (be = readdir(bd))) {
            char bp[BL_PATH_MAX], build[BL_BUILD_NAME_MAX + 1];
            if (be->d_name[0] == '.' || bl_path_join(bp, ad, be->d_name))
                continue;
            if (bl_datadir_build_name(bp, build) != BL_OK) {
                pr_log("%s: not a build folder (no build-name matching its name); ignored", bp);
                continue;
            }
            /* PostgreSQL store: the folder is this node's cache of the
             * store's files; a build the store does not have (deleted
             * through another node, or a first upload refused here) is
             * not made again (its stale copy is brought in line with the
             * store when a build of that name is used) */
            if (p->pg && bl_builds_exists(p->db, app_id, build) == BL_ENOTFOUND)
                continue;
            bl_processor_build_changed(p, app_id, build);
        }
        if (bd)
            closedir(bd);
    }
    if (apps)
        closedir(apps);
    if (p->pg) /* no local raw store: the queue is in the database */
        return BL_OK;
    if (bl_path_join(d, p->data_dir, "batches/pending"))
        return BL_ETOOBIG;
    DIR *pd = opendir(d);
    struct dirent *pe;
    while (pd && (pe = readdir(pd))) {
        const char *dot = strchr(pe->d_name, '.');
        uint8_t id[16];
        bl_encoding enc;
        if (!dot || dot - pe->d_name != 36 || bl_uuid_parse(pe->d_name, 36, id) != 0 ||
            bl_enc_from_ext(dot + 1, &enc) != 0)
            continue;
        char uuid[37];
        memcpy(uuid, pe->d_name, 36);
        uuid[36] = '\0';
        bl_processor_enqueue(p, uuid, enc);
    }
    if (pd)
        closedir(pd);
    return BL_OK;
}

bl_err bl_processor_start(const bl_proc_opts *o, bl_processor **out, char *errbuf, size_t n)
{
    *out = NULL;
    bl_processor *p = calloc(1, sizeof *p);
    if (!p)
        return BL_ENOMEM;
    p->o = *o;
    if (!p->o.max_batches_per_txn)
        p->o.max_batches_per_txn = 64;
    if (!p->o.max_decompressed)
        p->o.max_decompressed = (uint64_t)256 << 20;
    if (!p->o.txn_max_ms)
        p->o.txn_max_ms = 1000;
    if (p->o.txn_idle_ms == BL_TXN_IDLE_NONE)
        p->o.txn_idle_ms = 0;
    else if (!p->o.txn_idle_ms)
        p->o.txn_idle_ms = 20;
    if (!p->o.max_nodes_per_build)
        p->o.max_nodes_per_build = 1000000;
    if (!p->o.waiting_expiry_s)
        p->o.waiting_expiry_s = 7 * 24 * 3600;
    if (p->o.waiting_expiry_s > BL_WAITING_EXPIRY_MAX)
        p->o.waiting_expiry_s = BL_WAITING_EXPIRY_MAX;
    snprintf(p->data_dir, sizeof p->data_dir, "%s", o->data_dir);
    p->o.data_dir = p->data_dir;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->qmu, NULL);
    pthread_cond_init(&p->q_cv, NULL);
    pthread_mutex_init(&p->pool_mu, NULL);
    pthread_mutex_init(&p->g_mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->idle_cv, NULL);
    pthread_cond_init(&p->drop_cv, NULL);
    bl_u128map_init(&p->build_ix);
    bl_agg_init(&p->agg, 1, p->o.max_nodes_per_build, pr_new_row, p);
    bl_prep_init(&p->inline_job);
    bl_buf_init(&p->q_raw, 0);
    pthread_mutex_init(&p->pmu, NULL);
    pthread_mutex_init(&p->bmu, NULL);
    pthread_mutex_init(&p->cmu, NULL);
    pthread_cond_init(&p->cm_cv, NULL);
    pthread_cond_init(&p->cm_done, NULL);
    bl_agg_out_init(&p->job.out);
    pthread_cond_init(&p->pcv, NULL);
    pthread_cond_init(&p->pdone, NULL);
    pthread_cond_init(&p->ck_cv, NULL);
    for (unsigned i = 0; i < PREP_SLOTS; i++) {
        bl_prep_init(&p->slot[i].job);
        p->slot[i].job.want_part = 1; /* the writer merges (aggregate.h) */
        bl_buf_init(&p->slot[i].raw, 0);
    }
    p->next_sweep = pr_mono_s() + pr_sweep_every(p);
    char dbp[BL_PATH_MAX];
    bl_err err = bl_quota_new(&p->o.quota, &p->quota);
    if (!err)
        err = bl_events_new(&p->evs[0]);
    if (!err)
        err = bl_events_new(&p->evs[1]);
    p->ev = p->evs[0];
    if (!err) {
        p->job.items = malloc(p->o.max_batches_per_txn * sizeof *p->job.items);
        p->job.waited = malloc(p->o.max_batches_per_txn);
        if (!p->job.items || !p->job.waited)
            err = BL_ENOMEM;
    }
    if (err)
        snprintf(errbuf, n, "out of memory");
    else
        err = bl_datadir_db(p->data_dir, dbp);
    /* a PostgreSQL store (--store): batches come from its raw_batches
     * queue, not batches/pending (proc_queue.c) */
    p->pg = !err && bl_db_url_is_pg(dbp);
    if (!err)
        err = bl_db_open(dbp, 0, &p->db, errbuf, n);
    if (!err && bl_db_writer_memory(p->db) != BL_OK)
        pr_log("cannot enlarge the writer's page cache: %s", bl_db_errmsg(p->db));
    if (!err && bl_db_writer_no_fk_checks(p->db) != BL_OK)
        pr_log("the writer keeps checking foreign keys: %s", bl_db_errmsg(p->db));
    if (!err) {
        /* checkpoints on a thread of their own; without it (no connection,
         * no thread) the writer's commits do them as SQLite's default */
        char ckerr[256];
        if (bl_db_open(dbp, 0, &p->ck_db, ckerr, sizeof ckerr) != BL_OK) {
            pr_log("no checkpointer connection (%s): the writer checkpoints", ckerr);
            p->ck_db = NULL;
        } else if (pthread_create(&p->ck_thread, NULL, pr_ck_main, p) != 0) {
            pr_log("no checkpointer thread: the writer checkpoints");
        } else if (bl_db_no_autocheckpoint(p->db) != BL_OK) {
            pr_log("cannot hand checkpoints to their thread: %s", bl_db_errmsg(p->db));
            p->ck_started = 1; /* it runs anyway (harmless), and stops at the end */
        } else {
            p->ck_started = 1;
            /* the writer's commits no longer wait for the disk: the
             * checkpointer syncs the WAL before their batch files leave
             * batches/pending (store/db.h bl_db_defer_sync) */
            if (bl_db_defer_sync(p->db) == BL_OK)
                p->deferred = 1;
            else
                pr_log("commits keep syncing: %s", bl_db_errmsg(p->db));
        }
    }
    if (!err) {
        int64_t next;
        err = bl_wr_next_node_id(p->db, &next);
        if (!err)
            p->agg.next_node = next;
    }
    if (!err)
        err = preload_quota(p, errbuf, n);
    if (!err)
        err = recover(p);
    if (!err && p->pg)
        err = pr_q_start(p, dbp, errbuf, n);
    unsigned want = p->o.prep_threads == BL_PREP_NONE ? 0
                    : p->o.prep_threads == 0 ? 1
                    : p->o.prep_threads > PREP_MAX_THREADS ? PREP_MAX_THREADS
                    : p->o.prep_threads;
    for (unsigned i = 0; !err && i < want; i++) {
        if (pthread_create(&p->prep_thread[i], NULL, pr_prep_main, p) != 0)
            break; /* fewer workers (or none): the writer prepares the rest itself */
        pthread_mutex_lock(&p->pmu); /* the workers started read n_slots under pmu */
        p->n_prep++;
        p->n_slots = p->n_prep + 1;
        pthread_mutex_unlock(&p->pmu);
    }
    if (!err) {
        /* the committer; without it the writer commits itself */
        if (pthread_create(&p->cm_thread, NULL, pr_cm_main, p) == 0)
            p->cm_started = 1;
        else
            pr_log("no committer thread: the writer commits its rounds itself");
        if (pthread_create(&p->thread, NULL, writer_main, p) != 0) {
            snprintf(errbuf, n, "cannot start the writer thread");
            err = BL_ENOMEM;
        } else {
            p->started = 1;
        }
    }
    if (!err) {
        /* rollups marked for a rebuild (a migration, a re-symbolication):
         * rebuilt in the background, in steps (pipeline/rebuilder.h) */
        char rberr[256];
        if (bl_rebuilder_start(dbp, p, &p->rb, rberr, sizeof rberr) != BL_OK)
            pr_log("no rollups rebuild thread (%s): slow-methods answers of apps marked "
                   "for a rebuild come from method_stats", rberr);
    }
    if (err) {
        bl_processor_stop(p);
        return err;
    }
    *out = p;
    return BL_OK;
}

void bl_processor_stop(bl_processor *p)
{
    if (!p)
        return;
    bl_rebuilder_stop(p->rb); /* its step commits first: the writer's last commit never waits */
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    if (p->cm_started) {
        pthread_mutex_lock(&p->cmu);
        p->cm_stop = 1;
        pthread_cond_broadcast(&p->cm_cv);
        pthread_mutex_unlock(&p->cmu);
        pthread_join(p->cm_thread, NULL);
    }
    pthread_mutex_lock(&p->pmu);
    p->pstop = 1;
    pthread_cond_broadcast(&p->pcv);
    pthread_cond_broadcast(&p->ck_cv);
    pthread_mutex_unlock(&p->pmu);
    for (unsigned i = 0; i < p->n_prep; i++)
        pthread_join(p->prep_thread[i], NULL);
    if (p->ck_started)
        pthread_join(p->ck_thread, NULL);
    bl_db_close(p->ck_db);
    pr_q_stop(p); /* claim thread, bodies, pool: after every user of them */
    for (unsigned i = 0; i < PREP_SLOTS; i++) {
        bl_prep_cleanup(&p->slot[i].job);
        bl_buf_cleanup(&p->slot[i].raw);
    }
    bl_prep_cleanup(&p->inline_job);
    bl_buf_cleanup(&p->q_raw);
    for (size_t i = 0; i < p->n_builds; i++)
        pr_bstate_free(p->builds[i]);
    /* deletions and pattern lists still queued: their callers are told
     * they did not happen */
    for (size_t i = 0; i < p->qlen; i++) {
        work *w = &p->q[(p->qhead + i) % p->qcap];
        if (W_ALONE(w->kind))
            pr_drop_finish(p, w->dr, BL_EIO);
        if (w->kind == W_URLPAT)
            free(w->pats);
    }
    free(p->builds);
    free(p->reg_defer);
    bl_agg_cleanup(&p->agg);
    bl_u128map_cleanup(&p->build_ix);
    pr_ml_free(&p->moves);
    pr_ml_free(&p->ck_in);
    pr_ml_free(&p->ck_work);
    free(p->waited);
    free(p->q);
    bl_quota_free(p->quota);
    bl_events_free(p->evs[0]);
    bl_events_free(p->evs[1]);
    bl_agg_out_cleanup(&p->job.out);
    pr_ml_free(&p->job.moves);
    free(p->job.items);
    free(p->job.waited);
    free(p->dq);
    bl_db_close(p->db);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->qmu);
    pthread_cond_destroy(&p->q_cv);
    pthread_mutex_destroy(&p->pool_mu);
    pthread_mutex_destroy(&p->g_mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->idle_cv);
    pthread_cond_destroy(&p->drop_cv);
    pr_body_free_all(p);
    pthread_mutex_destroy(&p->bmu);
    pthread_mutex_destroy(&p->pmu);
    pthread_cond_destroy(&p->pcv);
    pthread_cond_destroy(&p->pdone);
    pthread_cond_destroy(&p->ck_cv);
    pthread_mutex_destroy(&p->cmu);
    pthread_cond_destroy(&p->cm_cv);
    pthread_cond_destroy(&p->cm_done);
    free(p);
}

