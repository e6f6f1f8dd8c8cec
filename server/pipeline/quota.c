/*
 * quota.c — per-app ingest quotas (see quota.h).
 *
 * Entries: one per (app, build) in `ents`, found through `by_build`
 * ((app id, XXH3-64 of the name with seed k) → index + 1, k = 0.. until the
 * stored name matches or the slot is free: a hash collision costs one more
 * probe, never a wrong entry). Apps: counters in `apps`, found through
 * `by_app` ((app id, 0) → index + 1).
 *
 * Invariant per app: waiting_builds = number of its entries that are not
 * ready and hold at least one batch; waiting_batches / waiting_bytes = sums
 * of its entries' held / held_bytes.
 */
#include "pipeline/quota.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/u128map.h"

typedef struct qent {
    int64_t app;
    char *name;          /* owned */
    int ready;
    uint64_t held;       /* counted batches */
    uint64_t held_bytes;
} qent;

typedef struct qapp {
    int64_t app;
    uint64_t waiting_builds, waiting_batches, waiting_bytes;
    int64_t hour;        /* clock hour (Unix seconds / 3600) of new_in_hour */
    uint64_t new_in_hour;
} qapp;

struct bl_quota {
    bl_quota_limits lim;
    pthread_mutex_t mu;
    qent *ents;
    size_t n_ents, cap_ents;
    qapp *apps;
    size_t n_apps, cap_apps;
    bl_u128map by_build, by_app;
};

bl_err bl_quota_new(const bl_quota_limits *limits, bl_quota **out)
{
    *out = NULL;
    bl_quota *q = calloc(1, sizeof *q);
    if (!q)
        return BL_ENOMEM;
    q->lim = *limits;
    if (pthread_mutex_init(&q->mu, NULL) != 0) {
        free(q);
        return BL_ENOMEM;
    }
    bl_u128map_init(&q->by_build);
    bl_u128map_init(&q->by_app);
    *out = q;
    return BL_OK;
}

void bl_quota_free(bl_quota *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n_ents; i++)
        free(q->ents[i].name);
    free(q->ents);
    free(q->apps);
    bl_u128map_cleanup(&q->by_build);
    bl_u128map_cleanup(&q->by_app);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* The app's counters, created when missing; NULL when out of memory. */
static qapp *app_of(bl_quota *q, int64_t app)
{
    uint64_t *v;
    int ins;
    if (bl_u128map_put(&q->by_app, (uint64_t)app, 0, 0, &v, &ins))
        return NULL;
    if (!ins && *v)
        return &q->apps[*v - 1];
    if (q->n_apps == q->cap_apps) {
        size_t nc = q->cap_apps ? q->cap_apps * 2 : 8;
        qapp *na = realloc(q->apps, nc * sizeof *na);
        if (!na) {
            *v = 0; /* stays in the map as "absent" (value 0) */
            return NULL;
        }
        q->apps = na;
        q->cap_apps = nc;
    }
    memset(&q->apps[q->n_apps], 0, sizeof *q->apps);
    q->apps[q->n_apps].app = app;
    *v = ++q->n_apps;
    return &q->apps[q->n_apps - 1];
}

/* The build's entry; with `create`, made when missing (*created = 1).
 * NULL when absent (or out of memory with create). */
static qent *ent_of(bl_quota *q, int64_t app, const char *build, int create, int *created)
{
    size_t len = strlen(build);
    if (created)
        *created = 0;
    for (uint64_t seed = 0; seed < 64; seed++) {
        uint64_t h = XXH3_64bits_withSeed(build, len, seed);
        uint64_t *v = bl_u128map_get(&q->by_build, (uint64_t)app, h);
        if (v && *v) {
            qent *e = &q->ents[*v - 1];
            if (!strcmp(e->name, build))
                return e;
            continue; /* another name with this hash: next seed */
        }
        if (!create)
            return NULL;
        if (q->n_ents == q->cap_ents) {
            size_t nc = q->cap_ents ? q->cap_ents * 2 : 64;
            qent *ne = realloc(q->ents, nc * sizeof *ne);
            if (!ne)
                return NULL;
            q->ents = ne;
            q->cap_ents = nc;
        }
        char *name = malloc(len + 1);
        if (!name)
            return NULL;
        memcpy(name, build, len + 1);
        int ins;
        if (bl_u128map_put(&q->by_build, (uint64_t)app, h, 0, &v, &ins)) {
            free(name);
            return NULL;
        }
        qent *e = &q->ents[q->n_ents];
        memset(e, 0, sizeof *e);
        e->app = app;
        e->name = name;
        *v = ++q->n_ents;
        if (created)
            *created = 1;
        return e;
    }
    return NULL; /* 64 names with colliding hashes: not in practice */
}

static int waiting(const qent *e)
{
    return !e->ready && e->held > 0;
}

bl_err bl_quota_set_ready(bl_quota *q, int64_t app, const char *build, int ready)
{
    pthread_mutex_lock(&q->mu);
    bl_err err = BL_ENOMEM;
    qapp *a = app_of(q, app);
    qent *e = a ? ent_of(q, app, build, 1, NULL) : NULL;
    if (e) {
        int before = waiting(e);
        e->ready = ready != 0;
        int after = waiting(e);
        if (before && !after)
            a->waiting_builds--;
        else if (!before && after)
            a->waiting_builds++;
        err = BL_OK;
    }
    pthread_mutex_unlock(&q->mu);
    return err;
}

static void add_held(qapp *a, qent *e, uint64_t bytes)
{
    if (!e->ready && e->held == 0)
        a->waiting_builds++;
    e->held++;
    e->held_bytes += bytes;
    a->waiting_batches++;
    a->waiting_bytes += bytes;
}

const bl_quota_limits *bl_quota_defaults(const bl_quota *q)
{
    return &q->lim;
}

int bl_quota_ready(bl_quota *q, int64_t app, const char *build)
{
    pthread_mutex_lock(&q->mu);
    qent *e = ent_of(q, app, build, 0, NULL);
    int ready = e && e->ready;
    pthread_mutex_unlock(&q->mu);
    return ready;
}

/* bl_quota_admit (sh NULL: the tracker's own counts) and
 * bl_quota_admit_shared (sh: the counts of the shared queue) */
static int admit(bl_quota *q, const bl_quota_limits *lim, int64_t app, const char *build,
                 uint64_t bytes, const bl_quota_shared *sh, int *counted,
                 unsigned *retry_after, char *msg, size_t n)
{
    *counted = 0;
    *retry_after = 0;
    pthread_mutex_lock(&q->mu);
    int rc = -1;
    qapp *a = app_of(q, app);
    if (!a)
        goto out;
    qent *e = ent_of(q, app, build, 0, NULL);
    if (e && e->ready) {
        rc = 0;
        goto out;
    }
    const bl_quota_limits *l = lim ? lim : &q->lim;
    int64_t now = (int64_t)time(NULL);
    int64_t hour = now / 3600;
    if (a->hour != hour) {
        a->hour = hour;
        a->new_in_hour = 0;
    }
    unsigned next_hour = (unsigned)((hour + 1) * 3600 - now);
    rc = 1;
    /* a build whose batches wait in the shared queue is not new */
    int is_new = !e && !(sh && sh->build_waits);
    uint64_t w_builds = sh ? sh->builds : a->waiting_builds;
    uint64_t w_batches = sh ? sh->batches : a->waiting_batches;
    uint64_t w_bytes = sh ? sh->bytes : a->waiting_bytes;
    int waits = sh ? sh->build_waits : e && e->held > 0;
    if (is_new && l->new_builds_per_hour && a->new_in_hour >= l->new_builds_per_hour) {
        snprintf(msg, n,
                 "too many new builds: this app's batches named %" PRIu64
                 " builds new to the server this hour, the app's limit (--quota-new-builds "
                 "or 'app set NAME new-builds=N'); upload the build's method-ID file first "
                 "or retry later",
                 a->new_in_hour);
        *retry_after = next_hour ? next_hour : 1;
        goto out;
    }
    if (!waits && l->waiting_builds && w_builds >= l->waiting_builds) {
        snprintf(msg, n,
                 "too many builds waiting for uploads: %" PRIu64
                 " builds of this app have batches waiting for their method-ID file or "
                 "mapping, the app's limit (--quota-waiting-builds or 'app set NAME "
                 "waiting-builds=N'); upload their files or retry later",
                 w_builds);
        *retry_after = 600;
        goto out;
    }
    if (l->waiting_batches && w_batches >= l->waiting_batches) {
        snprintf(msg, n,
                 "too many batches waiting for uploads: %" PRIu64
                 " batches of this app wait for their build's method-ID file "
                 "or mapping, the app's limit (--quota-waiting-batches or 'app set NAME "
                 "waiting-batches=N'); upload their files or retry later",
                 w_batches);
        *retry_after = 600;
        goto out;
    }
    if (l->waiting_bytes && (w_bytes >= l->waiting_bytes || bytes > l->waiting_bytes - w_bytes)) {
        snprintf(msg, n,
                 "too many bytes waiting for uploads: %" PRIu64 " bytes of this app's "
                 "batches wait for their build's uploads, the app's limit is %" PRIu64
                 " (--quota-waiting-bytes or 'app set NAME waiting-bytes=N'); upload their "
                 "files or retry later",
                 w_bytes, l->waiting_bytes);
        *retry_after = 600;
        goto out;
    }
    int created = 0;
    if (!e && !(e = ent_of(q, app, build, 1, &created))) {
        rc = -1;
        goto out;
    }
    if (created && is_new)
        a->new_in_hour++;
    if (!sh) {
        add_held(a, e, bytes);
        *counted = 1;
    }
    rc = 0;
out:
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int bl_quota_admit(bl_quota *q, const bl_quota_limits *lim, int64_t app, const char *build,
                   uint64_t bytes, int *counted, unsigned *retry_after, char *msg, size_t n)
{
    return admit(q, lim, app, build, bytes, NULL, counted, retry_after, msg, n);
}

int bl_quota_admit_shared(bl_quota *q, const bl_quota_limits *lim, int64_t app,
                          const char *build, uint64_t bytes, const bl_quota_shared *sh,
                          unsigned *retry_after, char *msg, size_t n)
{
    int counted;
    return admit(q, lim, app, build, bytes, sh, &counted, retry_after, msg, n);
}

void bl_quota_hold(bl_quota *q, int64_t app, const char *build, uint64_t bytes)
{
    pthread_mutex_lock(&q->mu);
    qapp *a = app_of(q, app);
    qent *e = a ? ent_of(q, app, build, 1, NULL) : NULL;
    if (e)
        add_held(a, e, bytes);
    pthread_mutex_unlock(&q->mu);
}

void bl_quota_release(bl_quota *q, int64_t app, const char *build, uint64_t bytes)
{
    pthread_mutex_lock(&q->mu);
    qapp *a = app_of(q, app);
    qent *e = a ? ent_of(q, app, build, 0, NULL) : NULL;
    if (e && e->held) {
        int before = waiting(e);
        e->held--;
        e->held_bytes -= bytes <= e->held_bytes ? bytes : e->held_bytes;
        if (e->held == 0)
            e->held_bytes = 0;
        a->waiting_batches--;
        a->waiting_bytes -= bytes <= a->waiting_bytes ? bytes : a->waiting_bytes;
        if (before && !waiting(e))
            a->waiting_builds--;
    }
    pthread_mutex_unlock(&q->mu);
}
