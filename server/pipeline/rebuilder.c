/*
 * rebuilder.c — the rollups rebuild thread (see rebuilder.h).
 */
#include "pipeline/rebuilder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "store/db.h"
#include "store/rollups.h"

#define WRITER_WAIT_MS 200 /* at most, per step, while the writer has work queued */
#define IDLE_MS 1000       /* between looks when nothing is marked */
#define FAILED_MS 60000    /* after a failed step */
/* After each step: SQLite's busy handler polls a waiting writer's lock
 * every 100 ms at most once it has waited a while, so a pause longer than
 * that lets it in (without it the next step takes the lock again first and
 * the writer's busy timeout, 5 s, can run out). */
#define YIELD_MS 120
#define STEP_MS 250.0 /* the row budget adapts to steps of about this long */

struct bl_rebuilder {
    bl_db *db;        /* owned */
    bl_processor *proc; /* borrowed */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits ms or until stopped; returns whether stopped. */
static int wait_ms(bl_rebuilder *r, unsigned ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->mu);
    while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &ts) == 0)
        ;
    int s = r->stop;
    pthread_mutex_unlock(&r->mu);
    return s;
}

static void writer_first(bl_rebuilder *r)
{
    for (unsigned waited = 0; r->proc && waited < WRITER_WAIT_MS; waited += 5) {
        bl_proc_stats ps;
        bl_processor_stats(r->proc, &ps);
        if (!ps.queue_depth)
            return;
        struct timespec ts = { 0, 5000000L };
        nanosleep(&ts, NULL);
    }
}

static void *rb_main(void *arg)
{
    bl_rebuilder *r = arg;
#ifdef __linux__
    (void)prctl(PR_SET_NAME, "bl-rollups", 0, 0, 0);
#endif
    double t0 = 0;
    int running = 0, apps = 0;
    unsigned pause = 0;
    int64_t budget = 200; /* grows towards BL_REBUILD_STEP while steps are short */
    while (!wait_ms(r, pause)) {
        int pending = 0;
        if (bl_rollups_pending(r->db, &pending) != BL_OK) {
            fprintf(stderr, "beatline-server: rollups: %s\n", bl_db_errmsg(r->db));
            pause = FAILED_MS;
            continue;
        }
        if (!pending) {
            if (running)
                fprintf(stderr, "beatline-server: slow-methods rollups rebuilt (%d app(s), "
                                "%.1f s)\n", apps, mono_s() - t0);
            running = 0;
            pause = IDLE_MS;
            continue;
        }
        if (!running) {
            fprintf(stderr, "beatline-server: rebuilding slow-methods rollups in the "
                            "background (answers from method_stats meanwhile)\n");
            running = 1;
            apps = 0;
            t0 = mono_s();
        }
        writer_first(r);
        int more = 0, rebuilt = 0;
        double t1 = mono_s();
        bl_err err = bl_db_begin(r->db);
        if (err) { /* the lock stayed taken for the busy timeout: soon again */
            fprintf(stderr, "beatline-server: rollups rebuild waits: %s\n", bl_db_errmsg(r->db));
            pause = IDLE_MS;
            continue;
        }
        {
            err = bl_rollups_refresh_step(r->db, budget, &more, &rebuilt);
            /* a failed step was undone (a savepoint): what came before it
             * (apps started) commits */
            if (bl_db_commit(r->db) != BL_OK) {
                bl_db_rollback(r->db);
                if (!err)
                    err = BL_EIO;
                rebuilt = 0;
            }
        }
        if (err) {
            fprintf(stderr, "beatline-server: rebuilding slow-methods rollups failed: %s "
                            "(again in %d s)\n",
                    bl_db_errmsg(r->db), FAILED_MS / 1000);
            pause = FAILED_MS;
            continue;
        }
        apps += rebuilt;
        pause = YIELD_MS;
        /* rows per step: towards STEP_MS, within [100, BL_REBUILD_STEP] */
        double took = (mono_s() - t1) * 1000.0;
        if (took > 2000.0) /* the writer waited that long: worth knowing */
            fprintf(stderr, "beatline-server: a rollups rebuild step of %lld rows took %.1f s\n",
                    (long long)budget, took / 1000.0);
        double want = took > 1.0 ? (double)budget * STEP_MS / took : 2.0 * (double)budget;
        budget = want < 100 ? 100 : want > BL_REBUILD_STEP ? BL_REBUILD_STEP : (int64_t)want;
    }
    return NULL;
}

bl_err bl_rebuilder_start(const char *db_path, bl_processor *proc, bl_rebuilder **out,
                          char *errbuf, size_t errlen)
{
    *out = NULL;
    bl_rebuilder *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(errbuf, errlen, "out of memory");
        return BL_ENOMEM;
    }
    r->proc = proc;
    bl_err err = bl_db_open(db_path, 0, &r->db, errbuf, errlen);
    if (err) {
        free(r);
        return err;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->thread, NULL, rb_main, r) != 0) {
        snprintf(errbuf, errlen, "cannot start the rollups rebuild thread");
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        bl_db_close(r->db);
        free(r);
        return BL_ENOMEM;
    }
    *out = r;
    return BL_OK;
}

void bl_rebuilder_stop(bl_rebuilder *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    bl_db_close(r->db);
    free(r);
}
