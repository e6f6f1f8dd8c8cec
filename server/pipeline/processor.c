/*
 * processor.c — the writer thread (see processor.h).
 *
 * State kept in memory by the writer only:
 *   - the queue of work (batches to process, builds whose files changed);
 *   - per build: methods.id by methodId, the call-path node map
 *     (parent node, main flag, method) -> node id, batches waiting for files;
 *   - the deltas of the open transaction (method stats, node counters),
 *     flushed as UPSERTs before COMMIT.
 */
#include "pipeline/processor.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <jansson.h>

#include "agg/calltree.h"
#include "agg/sketch.h"
#include "common/buf.h"
#include "common/u128map.h"
#include "ingest/batch.h"
#include "ingest/methodid.h"
#include "ingest/namecheck.h"
#include "pipeline/aggregate.h"
#include "pipeline/datadir.h"
#include "pipeline/events.h"
#include "pipeline/prep.h"
#include "pipeline/rebuilder.h"
#include "pipeline/quota.h"
#include "pipeline/retention.h"
#include "store/apps.h"
#include "store/db.h"
#include "store/retention.h"
#include "store/rollups.h"
#include "store/writer.h"
#include "symbol/mapindex.h"
#include "symbol/symbolicate.h"

enum { W_BATCH, W_BUILD, W_DROP };

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
    int checked;     /* 1: bl_agg_check_batch passed at POST (same bytes) */
} work;

typedef struct pending_batch {
    char uuid[37];
    bl_encoding enc;
    double t_enq;
    int counted;     /* waiting batches are always counted (quota.h) */
    uint64_t bytes;  /* as received (the file's size) */
    int64_t mtime;   /* the file's modification time, Unix seconds: expiry */
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
} pslot;

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
    unsigned n_slots;
    uint64_t pseq;
    int pstop;
    /* the checkpointer (store/db.h bl_db_checkpoint): its own connection,
     * woken after each commit; under pmu */
    bl_db *ck_db;
    pthread_t ck_thread;
    int ck_started, ck_due;
    bl_rebuilder *rb; /* owned: the rollups rebuild thread (NULL: none) */
    pthread_cond_t ck_cv;
    /* done in this transaction: files to move after COMMIT */
    pending_batch *moves;
    size_t n_moves, cap_moves;
    int *move_failed;
    bl_quota *quota;     /* owned; thread-safe */
    double next_sweep;   /* monotonic seconds of the next expiry sweep */
    uint64_t round_batches; /* batches counted in the open transaction */
    uint8_t *waited;        /* per item of the round: went to a waiting list */
    bl_events *ev;          /* batch events: blocks (owned) */
};

/* Names the calling thread (top -H, /proc/PID/task/N/comm). */
static void name_thread(const char *name)
{
#ifdef __linux__
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)name;
#endif
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((format(printf, 1, 2))) static void logf_(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "beatline-server: %s\n", msg);
}

/* ------------------------------------------------------------------------ */
/* Queue                                                                     */

static bl_err push(bl_processor *p, const work *w)
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
static void push_front(bl_processor *p, const work *ws, size_t n)
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
            logf_("out of memory putting %zu item(s) back in the queue; trying again", n);
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
    w.t_enq = mono_s();
    return push(p, &w);
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
    w.t_enq = mono_s();
    w.app_id = app_id;
    snprintf(w.build, sizeof w.build, "%s", build);
    w.bytes = bytes;
    w.counted = counted;
    w.checked = 1; /* the POST ran bl_agg_check_batch on these bytes */
    return push(p, &w);
}

bl_quota *bl_processor_quota(bl_processor *p)
{
    return p->quota;
}

/* The writer is done with a batch that is not waiting: its quota count goes. */
static void release(bl_processor *p, work *w)
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
    w.t_enq = mono_s();
    return push(p, &w);
}


void bl_processor_stats(bl_processor *p, bl_proc_stats *s)
{
    pthread_mutex_lock(&p->mu);
    *s = p->st;
    pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------------------ */
/* Builds                                                                    */

static void bstate_free(bstate *b)
{
    if (!b)
        return;
    bl_agg_build_cleanup(&b->ab);
    free(b->waiting);
    free(b);
}

static bl_err sql_err(bl_processor *p, const char *what)
{
    logf_("SQL error in %s: %s", what, bl_db_errmsg(p->db));
    return BL_EIO;
}

/* Finds or creates the builds row and the in-memory state. */
static bl_err get_build(bl_processor *p, int64_t app_id, const char *build, bstate **out)
{
    uint64_t h = XXH3_64bits(build, strlen(build));
    uint64_t *ix = bl_u128map_get(&p->build_ix, (uint64_t)app_id, h);
    if (ix && *ix && !strcmp(p->builds[*ix - 1]->build, build)) {
        *out = p->builds[*ix - 1];
        return BL_OK;
    }
    int64_t id;
    if (bl_wr_build_get(p->db, app_id, build, bl_now_us(), &id))
        return sql_err(p, "builds get");
    bstate *b = calloc(1, sizeof *b);
    if (!b)
        return BL_ENOMEM;
    b->app_id = app_id;
    snprintf(b->build, sizeof b->build, "%s", build);
    b->build_id = id;
    bl_agg_build_init(&b->ab, id);
    if (p->n_builds == p->cap_builds) {
        size_t nc = p->cap_builds ? p->cap_builds * 2 : 16;
        bstate **nb = realloc(p->builds, nc * sizeof *nb);
        if (!nb) {
            bstate_free(b);
            return BL_ENOMEM;
        }
        p->builds = nb;
        p->cap_builds = nc;
    }
    p->builds[p->n_builds++] = b;
    uint64_t *v;
    int ins;
    if (bl_u128map_put(&p->build_ix, (uint64_t)app_id, h, p->n_builds, &v, &ins))
        return BL_ENOMEM;
    *v = p->n_builds;
    *out = b;
    return BL_OK;
}

/* Reads a small hash file ("<hex>\n"); "" when absent. */
static void read_hash(const char *dir, const char *name, char *out, size_t cap)
{
    char path[BL_PATH_MAX];
    out[0] = '\0';
    if (bl_path_join(path, dir, name))
        return;
    char *d;
    size_t n;
    if (bl_read_file(path, 256, &d, &n) != BL_OK)
        return;
    while (n && (d[n - 1] == '\n' || d[n - 1] == ' '))
        n--;
    snprintf(out, cap, "%.*s", (int)n, d);
    free(d);
}

/* Loads methods.id by methodId (again after re-symbolication: ids of known
 * methods never change) and, once, the call-path nodes of a ready build.
 * Nodes are never reloaded while the build state lives: the open
 * transaction's deltas point into them. */
static bl_err method_row(int64_t mid, int64_t row, int placeholder, void *ctx)
{
    bstate *b = ctx;
    if (mid >= 0 && mid <= BL_AGG_MID_OVERFLOW)
        return bl_agg_build_set_row(&b->ab, (uint32_t)mid, row, placeholder);
    return BL_OK;
}

static bl_err node_row(int64_t id, int main, int64_t parent, int64_t mid, void *ctx)
{
    bstate *b = ctx;
    if (mid < 0 || mid > BL_AGG_MID_OVERFLOW)
        return BL_OK;
    bl_err err = bl_agg_build_add_node(&b->ab, id, parent, main, (uint32_t)mid);
    return err == BL_EINVAL ? BL_OK : err; /* a node whose parent is gone: skip it */
}

static bl_err load_rows(bl_processor *p, bstate *b)
{
    /* methodIds far past the method-ID file's range are kept in a map (at
     * most BL_AGG_MAX_FAR of them), not in the per-methodId arrays */
    int64_t top;
    if (bl_wr_methods_top(p->db, b->build_id, &top))
        return sql_err(p, "methods range");
    uint32_t limit = top >= 0 && top <= BL_REC_ID_MAX ? (uint32_t)top + 1 : 0;
    uint32_t cap = ((limit + 1023) / 1024) * 1024 + 1024;
    if (cap > BL_REC_ID_MAX)
        cap = 0;
    if (!b->ab.id_cap || cap > b->ab.id_cap)
        b->ab.id_cap = cap;
    bl_err err = bl_wr_methods_each(p->db, b->build_id, method_row, b);
    if (err == BL_EIO)
        return sql_err(p, "methods load");
    if (err)
        return err;
    if (b->loaded)
        return BL_OK;
    err = bl_wr_nodes_each(p->db, b->build_id, node_row, b);
    if (err == BL_EIO)
        return sql_err(p, "nodes load");
    if (!err)
        b->loaded = 1;
    return err;
}

/* Symbolicates every methodId of the build into the methods table. */
/* Reads and parses dir/method-ids.txt (lenient). */
static bl_err load_methodids(const char *dir, bl_methodids **out)
{
    char path[BL_PATH_MAX];
    *out = NULL;
    bl_err err = bl_path_join(path, dir, "method-ids.txt");
    if (err)
        return err;
    char *text;
    size_t len;
    if ((err = bl_read_file(path, (size_t)1 << 31, &text, &len)))
        return err;
    uint64_t bad;
    err = bl_methodids_parse(text, len, 0, NULL, NULL, out, &bad);
    free(text);
    return err;
}

/* Symbolicates every methodId of the build (table t, borrowed) into the
 * methods table. */
static bl_err symbolicate_build(bl_processor *p, bstate *b, const char *dir, int obfuscated,
                                const bl_methodids *t)
{
    bl_err err = BL_OK;
    bl_mapindex *mi = NULL;
    if (obfuscated && (err = bl_datadir_open_index(p->data_dir, dir, &mi, NULL)))
        return err;
    bl_buf store;
    bl_buf_init(&store, 0);
    uint32_t n = bl_methodids_count(t);
    for (uint32_t i = 0; i < n && !err; i++) {
        const bl_mid_entry *e = bl_methodids_at(t, i);
        bl_symbol s;
        bl_err se = bl_symbolicate_method(mi, e->cls, e->name, e->desc, &store, &s);
        if (se == BL_EINVAL) /* a descriptor the parser let through: keep names */
            se = bl_symbolicate_method(NULL, e->cls, e->name, "()V", &store, &s);
        if (se) {
            err = se;
            break;
        }
        if (bl_wr_method_put(p->db, b->build_id, e->id, s.cls, s.method,
                             se == BL_OK ? s.desc : e->desc, s.file))
            err = sql_err(p, "methods upsert");
    }
    bl_buf_cleanup(&store);
    bl_mapindex_close(mi);
    return err;
}

/* The build's waiting batches go back to the head of the queue, in their
 * order (they were queued before anything behind them, a deletion too). */
static bl_err requeue_waiting(bl_processor *p, bstate *b)
{
    for (size_t i = b->n_waiting; i-- > 0;) {
        work w;
        memset(&w, 0, sizeof w);
        w.kind = W_BATCH;
        memcpy(w.uuid, b->waiting[i].uuid, sizeof w.uuid);
        w.enc = b->waiting[i].enc;
        w.t_enq = b->waiting[i].t_enq;
        w.app_id = b->app_id;
        memcpy(w.build, b->build, sizeof w.build);
        w.counted = b->waiting[i].counted;
        w.bytes = b->waiting[i].bytes;
        pthread_mutex_lock(&p->mu);
        p->st.waiting--;
        pthread_mutex_unlock(&p->mu);
        push_front(p, &w, 1);
    }
    b->n_waiting = 0;
    return BL_OK;
}

/* builds.warnings after the build's files changed: a method-ID file read
 * as original names whose classes are obfuscated names of the mapping
 * (namecheck.h); NULL when nothing is wrong. *mids is loaded when needed
 * (caller frees). */
static bl_err update_warnings(bl_processor *p, bstate *b, const char *dir, int have_mapping,
                              int have_mids, bl_methodids **mids)
{
    char text[1024] = "";
    if (have_mapping && have_mids && (*mids || load_methodids(dir, mids) == BL_OK) &&
        !bl_methodids_obfuscated(*mids)) {
        char path[BL_PATH_MAX];
        bl_mapindex *mi = NULL;
        if (!bl_path_join(path, dir, "mapping.idx") && bl_mapindex_open(path, &mi) == BL_OK) {
            bl_names_check nc;
            int obf = 0;
            bl_err err = bl_names_check_run(*mids, mi, &nc, &obf);
            bl_mapindex_close(mi);
            if (err)
                return err;
            if (obf) {
                char w[900];
                bl_names_warning(&nc, w, sizeof w);
                json_t *arr = json_pack("[s]", w);
                char *js = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
                json_decref(arr);
                if (!js)
                    return BL_ENOMEM;
                snprintf(text, sizeof text, "%s", js);
                free(js);
                logf_("build %s: %s", b->build, w);
            }
        }
    }
    if (bl_wr_build_set_warnings(p->db, b->build_id, text[0] ? text : NULL))
        return sql_err(p, "builds warnings");
    return BL_OK;
}

/* Brings the builds row and the methods table in line with the files.
 * *mids caches the parsed method-ID file (caller frees). */
static bl_err register_build_(bl_processor *p, int64_t app_id, const char *build,
                              bl_methodids **mids)
{
    bstate *b;
    bl_err err = get_build(p, app_id, build, &b);
    if (err)
        return err;
    char dir[BL_PATH_MAX], path[BL_PATH_MAX];
    if ((err = bl_datadir_build(p->data_dir, app_id, build, dir)))
        return err;
    char mhash[80], ihash[80];
    read_hash(dir, "mapping.hash", mhash, sizeof mhash);
    read_hash(dir, "method-ids.hash", ihash, sizeof ihash);

    bl_wr_build_files bf;
    if (bl_wr_build_files_get(p->db, b->build_id, &bf))
        return sql_err(p, "builds read");
    int mchanged = strcmp(bf.mapping_hash, mhash) != 0;
    int ichanged = strcmp(bf.methodids_hash, ihash) != 0;
    int obf = bf.obfuscated;
    int symbolicated = bf.symbolicated;
    int64_t now = bl_now_us();
    if (mchanged) {
        struct stat sb;
        int64_t size = !bl_path_join(path, dir, "mapping.txt") && stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
        if (bl_wr_build_set_mapping(p->db, b->build_id, mhash, size, now))
            return sql_err(p, "builds mapping");
        symbolicated = 0;
    }
    if (ichanged) {
        /* count entries and read the names flag */
        int64_t count = 0;
        obf = 0;
        if (load_methodids(dir, mids) == BL_OK) {
            count = bl_methodids_count(*mids);
            obf = bl_methodids_obfuscated(*mids);
        }
        if (bl_wr_build_set_methodids(p->db, b->build_id, ihash, count, obf, now))
            return sql_err(p, "builds methodids");
        symbolicated = 0;
    }
    if ((mchanged || ichanged) &&
        (err = update_warnings(p, b, dir, mhash[0] != 0, ihash[0] != 0, mids)))
        return err;
    int can = ihash[0] && (!obf || mhash[0]);
    if (!can) {
        b->ready = 0;
        return bl_quota_set_ready(p->quota, app_id, build, 0);
    }
    if (!symbolicated) {
        if (!*mids)
            err = load_methodids(dir, mids);
        if (err || (err = symbolicate_build(p, b, dir, obf, *mids))) {
            logf_("cannot symbolicate build %s: %s", build, bl_err_str(err));
            b->ready = 0;
            bl_err qe = bl_quota_set_ready(p->quota, app_id, build, 0);
            return err == BL_ENOMEM ? err : qe;
        }
        if (bl_wr_build_set_symbolicated(p->db, b->build_id, bl_now_us()))
            return sql_err(p, "builds symbolicated");
    }
    if ((err = load_rows(p, b)))
        return err;
    b->ready = 1;
    if ((err = bl_quota_set_ready(p->quota, app_id, build, 1)))
        return err;
    return requeue_waiting(p, b);
}

static bl_err register_build(bl_processor *p, int64_t app_id, const char *build)
{
    bl_methodids *mids = NULL;
    bl_err err = register_build_(p, app_id, build, &mids);
    bl_methodids_free(mids);
    return err;
}

/* ------------------------------------------------------------------------ */
/* Aggregation                                                               */

/* bl_agg_new_row_fn: a methodId the method-ID file does not know gets a
 * placeholder method, so the tree stays whole: class "?", name "unknown
 * method N", no descriptor (docs/api.md). A placeholder made by an older
 * server ("methodId:N") is renamed; a method of the file is left alone. */
static bl_err new_row(void *ctx, bl_agg_build *ab, uint32_t mid, int64_t *row)
{
    bl_processor *p = ctx;
    char name[96];
    if (mid == BL_AGG_MID_OVERFLOW)
        snprintf(name, sizeof name, "unknown methods (past %u distinct methodIds outside the "
                                    "method-ID file)", BL_AGG_MAX_FAR);
    else
        snprintf(name, sizeof name, "unknown method %u", mid);
    if (bl_wr_method_unknown(p->db, ab->build_id, mid, name, row))
        return sql_err(p, "methods unknown");
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
        err = sql_err(p, "stats upsert");
    if (!err && bl_rollups_add(p->db, p->agg.n_stats, delta_stat, &p->agg))
        err = sql_err(p, "rollups upsert");
    if (!err && bl_wr_nodes_add(p->db, p->agg.n_nodes, delta_node, &p->agg))
        err = sql_err(p, "nodes upsert");
    if (!err)
        bl_events_flush(p->ev);
    /* apps a re-symbolication left dirty are rebuilt by p->rb */
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
        logf_("batch %s: cannot read: %s", w->uuid, bl_err_str(err));
        return B_FAILED;
    }
    if (!j->decoded) {
        logf_("batch %s: malformed: %s", w->uuid, j->be.message ? j->be.message : "?");
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
        logf_("batch %s: unknown app %s", w->uuid, app);
        goto out;
    }
    bstate *b;
    if ((err = get_build(p, app_id, build, &b))) {
        result = err == BL_ENOMEM ? B_RETRY : B_FAILED;
        goto out;
    }
    if (!b->ready && (err = register_build(p, app_id, build))) {
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
        logf_("batch %s: %s; batch refused", w->uuid,
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
            logf_("batch %s: %s", w->uuid, bl_err_str(err));
            /* deltas are partial: the transaction must go */
            result = err == BL_ENOMEM ? B_RETRY : B_ABORT;
            goto out;
        }
    /* events (blocks) in the same transaction: exactly once with the batch */
    if ((err = bl_events_batch(p->ev, p->db, &bt, b->build_id, origin))) {
        logf_("batch %s: events: %s", w->uuid,
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
        .received_at = now - (int64_t)((mono_s() - w->t_enq) * 1e6), .processed_at = now,
        .records = (int64_t)bt.n_records, .malformed = (int64_t)(p->agg.malformed - malformed0),
        .bytes = (int64_t)j->body.len,
    };
    if (bl_wr_batch_insert(p->db, &row)) {
        sql_err(p, "batches insert");
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

static void move_batch(bl_processor *p, const pending_batch *pb, int failed)
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
        logf_("cannot move batch %s: %s", pb->uuid, strerror(errno));
}


/* ------------------------------------------------------------------------ */
/* Deleting a build (retention.h)                                            */

/* Forgets build state b (index i in p->builds): its waiting batches are
 * deleted and their quota counts released; the last state takes its slot. */
static void forget_state(bl_processor *p, size_t i)
{
    bstate *b = p->builds[i];
    for (size_t j = 0; j < b->n_waiting; j++) {
        char path[BL_PATH_MAX];
        if (bl_datadir_batch(p->data_dir, 0, b->waiting[j].uuid, b->waiting[j].enc, path) ==
                BL_OK &&
            unlink(path) != 0 && errno != ENOENT)
            logf_("cannot delete batch %s of a deleted build: %s", b->waiting[j].uuid,
                  strerror(errno));
        if (b->waiting[j].counted)
            bl_quota_release(p->quota, b->app_id, b->build, b->waiting[j].bytes);
    }
    if (b->n_waiting) {
        char d[BL_PATH_MAX];
        if (!bl_path_join(d, p->data_dir, "batches/pending"))
            bl_fsync_dir(d);
        pthread_mutex_lock(&p->mu);
        p->st.waiting -= b->n_waiting <= p->st.waiting ? b->n_waiting : p->st.waiting;
        pthread_mutex_unlock(&p->mu);
    }
    uint64_t *ix = bl_u128map_get(&p->build_ix, (uint64_t)b->app_id,
                                  XXH3_64bits(b->build, strlen(b->build)));
    if (ix && *ix == i + 1)
        *ix = 0; /* no entry (get_build) */
    size_t last = p->n_builds - 1;
    if (i != last) {
        bstate *m = p->builds[last];
        p->builds[i] = m;
        ix = bl_u128map_get(&p->build_ix, (uint64_t)m->app_id,
                            XXH3_64bits(m->build, strlen(m->build)));
        if (ix && *ix == last + 1)
            *ix = i + 1;
    }
    p->n_builds = last;
    bstate_free(b);
}

/* the longest the writer waits for an upload to let go of a build's folder
 * before it answers a deletion BL_EIO (nothing changed) */
#define DROP_LOCK_WAIT_MS 3000

/* A W_DROP item, alone in its round (no deltas are open): the build goes
 * to the graveyard and its folder to DIR/trash in one commit, then the
 * writer forgets it. Result: BL_OK, BL_ENOTFOUND (no such live build),
 * BL_EINVAL (retention: not idle any more, or batches wait for it),
 * BL_EIO (also when an upload held the build folder's lock for
 * DROP_LOCK_WAIT_MS, or it could not be opened: nothing changed). */
static bl_err drop_build(bl_processor *p, const work *w)
{
    size_t si = SIZE_MAX;
    for (size_t i = 0; i < p->n_builds; i++)
        if (p->builds[i]->app_id == w->app_id && !strcmp(p->builds[i]->build, w->build))
            si = i;
    if (w->drop_cutoff && si != SIZE_MAX && p->builds[si]->n_waiting)
        return BL_EINVAL; /* batches wait for it: it is not idle */
    /* the build folder's lock first, a bounded wait: an upload may hold it
     * long, and never while this thread holds the database's write lock */
    int lfd;
    bl_err lerr = bl_retention_build_lock(p->data_dir, w->app_id, w->build, DROP_LOCK_WAIT_MS,
                                          &lfd);
    if (lerr) {
        logf_("build %s: cannot take its folder's lock: %s; not deleted", w->build,
              lerr == BL_EIO ? (errno == EWOULDBLOCK ? "an upload holds it" : strerror(errno))
                             : bl_err_str(lerr));
        return BL_EIO;
    }
    if (bl_db_begin(p->db)) {
        bl_retention_build_unlock(lfd);
        return sql_err(p, "begin");
    }
    int64_t id;
    int idle = 1, moved = 0;
    bl_err err = bl_rs_build_find(p->db, w->app_id, w->build, &id);
    if (!err && w->drop_cutoff && (err = bl_rs_build_idle(p->db, id, w->drop_cutoff, &idle)) ==
                                      BL_OK && !idle)
        err = BL_EINVAL;
    if (!err)
        err = bl_rs_doom_build(p->db, id, w->drop_cutoff ? "expired" : "deleted", bl_now_us());
    if (!err && (err = bl_retention_trash_build(p->data_dir, w->app_id, w->build, id, lfd >= 0,
                                                 &moved)))
        logf_("build %s: cannot move its folder to trash: %s", w->build,
              err == BL_EIO ? strerror(errno) : bl_err_str(err));
    if (!err && bl_db_commit(p->db)) {
        err = sql_err(p, "commit");
        if (moved)
            bl_retention_untrash_build(p->data_dir, w->app_id, w->build, id);
    }
    bl_retention_build_unlock(lfd);
    if (err) {
        if (err == BL_EIO)
            logf_("build %s: deletion failed: %s", w->build, bl_db_errmsg(p->db));
        bl_db_rollback(p->db);
        return err;
    }
    bl_retention_request_done(p->data_dir, id); /* a DELETE's request happened */
    if (si != SIZE_MAX)
        forget_state(p, si);
    bl_quota_set_ready(p->quota, w->app_id, w->build, 0);
    logf_("build %s (app id %lld) %s; its data is deleted in the background", w->build,
          (long long)w->app_id, w->drop_cutoff ? "expired" : "deleted");
    return BL_OK;
}

/* Hands a drop's result to its caller. */
static void drop_finish(bl_processor *p, drop_req *dr, bl_err result)
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
    drop_req *dr = calloc(1, sizeof *dr);
    if (!dr)
        return BL_ENOMEM;
    dr->refs = 2;
    work w;
    memset(&w, 0, sizeof w);
    w.kind = W_DROP;
    w.app_id = app_id;
    snprintf(w.build, sizeof w.build, "%s", build);
    w.t_enq = mono_s();
    w.dr = dr;
    w.drop_cutoff = cutoff_us;
    if (push(p, &w) != BL_OK) {
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

/* ------------------------------------------------------------------------ */
/* Thread                                                                    */

static int add_move(bl_processor *p, const work *w, int failed)
{
    if (p->n_moves == p->cap_moves) {
        size_t nc = p->cap_moves ? p->cap_moves * 2 : 64;
        pending_batch *nm = realloc(p->moves, nc * sizeof *nm);
        int *nf = realloc(p->move_failed, nc * sizeof *nf);
        if (nm)
            p->moves = nm;
        if (nf)
            p->move_failed = nf;
        if (!nm || !nf)
            return -1;
        p->cap_moves = nc;
    }
    memcpy(p->moves[p->n_moves].uuid, w->uuid, sizeof w->uuid);
    p->moves[p->n_moves].enc = w->enc;
    p->moves[p->n_moves].t_enq = w->t_enq;
    p->move_failed[p->n_moves] = failed;
    p->n_moves++;
    return 0;
}

static void record_latency(bl_processor *p, double t_enq, double now)
{
    static const double le[6] = { 0.010, 0.050, 0.100, 0.500, 1.0, 5.0 };
    double d = now - t_enq;
    for (int i = 0; i < 6; i++)
        if (d <= le[i])
            p->st.lat_bucket[i]++;
    p->st.lat_bucket[6]++;
    p->st.lat_sum_s += d;
}

/* Forgets every build's in-memory state (after a rollback it may be ahead
 * of the database); it is reloaded from the database on next use. */
static void reset_states(bl_processor *p)
{
    for (size_t i = 0; i < p->n_builds; i++) {
        bstate *b = p->builds[i];
        requeue_waiting(p, b); /* waiting batches go back to the queue */
        bstate_free(b);
    }
    p->n_builds = 0;
    bl_u128map_clear(&p->build_ix);
    int64_t next;
    if (bl_wr_next_node_id(p->db, &next) == BL_OK)
        p->agg.next_node = next;
}

/* ---- prep workers ---- */

/* ---- checkpointer ---- */

static void *ck_main(void *arg)
{
    bl_processor *p = arg;
    name_thread("bl-checkpoint");
    pthread_mutex_lock(&p->pmu);
    for (;;) {
        while (!p->ck_due && !p->pstop)
            pthread_cond_wait(&p->ck_cv, &p->pmu);
        if (!p->ck_due && p->pstop)
            break;
        p->ck_due = 0;
        pthread_mutex_unlock(&p->pmu);
        if (bl_db_checkpoint(p->ck_db))
            logf_("checkpoint failed: %s", bl_db_errmsg(p->ck_db));
        pthread_mutex_lock(&p->pmu);
    }
    pthread_mutex_unlock(&p->pmu);
    return NULL;
}

/* A transaction committed: the checkpointer copies it into the database. */
static void ck_wake(bl_processor *p)
{
    if (!p->ck_started)
        return;
    pthread_mutex_lock(&p->pmu);
    p->ck_due = 1;
    pthread_cond_signal(&p->ck_cv);
    pthread_mutex_unlock(&p->pmu);
}

static void *prep_main(void *arg)
{
    bl_processor *p = arg;
    name_thread("bl-prep");
    uint64_t cap = p->o.max_decompressed < PREP_AHEAD_MAX_BODY ? p->o.max_decompressed
                                                               : PREP_AHEAD_MAX_BODY;
    pthread_mutex_lock(&p->pmu);
    for (;;) {
        pslot *s = NULL;
        for (unsigned i = 0; i < p->n_slots; i++)
            if (p->slot[i].state == PS_QUEUED && (!s || p->slot[i].seq < s->seq))
                s = &p->slot[i];
        if (!s) {
            if (p->pstop)
                break;
            pthread_cond_wait(&p->pcv, &p->pmu);
            continue;
        }
        s->state = PS_RUNNING;
        pthread_mutex_unlock(&p->pmu);
        bl_prep_file(&s->job, s->path, s->enc, cap, s->check);
        pthread_mutex_lock(&p->pmu);
        s->state = PS_DONE;
        pthread_cond_broadcast(&p->pdone);
    }
    pthread_mutex_unlock(&p->pmu);
    return NULL;
}

/* Queues the batches of items[*next..n) into free slots, in order. */
static void prep_submit(bl_processor *p, const work *items, size_t n, size_t *next)
{
    if (!p->n_prep)
        return;
    pthread_mutex_lock(&p->pmu);
    int queued = 0;
    for (unsigned i = 0; i < p->n_slots && *next < n; i++) {
        pslot *s = &p->slot[i];
        if (s->state != PS_FREE)
            continue;
        while (*next < n && items[*next].kind != W_BATCH)
            (*next)++;
        if (*next == n)
            break;
        const work *w = &items[*next];
        if (bl_datadir_batch(p->data_dir, 0, w->uuid, w->enc, s->path) == BL_OK) {
            s->item = *next;
            s->seq = p->pseq++;
            s->enc = w->enc;
            s->check = !w->checked;
            s->state = PS_QUEUED;
            queued = 1;
        } else {
            i--; /* the writer fails it itself; the slot stays free */
        }
        (*next)++;
    }
    if (queued)
        pthread_cond_broadcast(&p->pcv);
    pthread_mutex_unlock(&p->pmu);
}

/* The slot of item i once prepared, or NULL when it was not queued. */
static pslot *prep_wait(bl_processor *p, size_t i)
{
    if (!p->n_prep)
        return NULL;
    pthread_mutex_lock(&p->pmu);
    pslot *s = NULL;
    for (unsigned k = 0; k < p->n_slots; k++)
        if (p->slot[k].state != PS_FREE && p->slot[k].item == i)
            s = &p->slot[k];
    while (s && s->state != PS_DONE)
        pthread_cond_wait(&p->pdone, &p->pmu);
    pthread_mutex_unlock(&p->pmu);
    return s;
}

static void prep_release(bl_processor *p, pslot *s)
{
    pthread_mutex_lock(&p->pmu);
    s->state = PS_FREE;
    pthread_mutex_unlock(&p->pmu);
}

/* Drops every queued or prepared slot (the transaction ended early or
 * normally); waits for the ones being prepared. */
static void prep_drain(bl_processor *p)
{
    if (!p->n_prep)
        return;
    pthread_mutex_lock(&p->pmu);
    for (;;) {
        int running = 0;
        for (unsigned k = 0; k < p->n_slots; k++) {
            if (p->slot[k].state == PS_RUNNING)
                running = 1;
            else
                p->slot[k].state = PS_FREE;
        }
        if (!running)
            break;
        pthread_cond_wait(&p->pdone, &p->pmu);
    }
    pthread_mutex_unlock(&p->pmu);
}

/* Moves up to `room` queued items to dst; p->mu held. A build deletion
 * (W_DROP) is a round of its own, in queue order: it is taken only as the
 * first item of a new round (`new_round`), and nothing after it. */
static size_t pop_locked(bl_processor *p, work *dst, size_t room, int new_round)
{
    size_t n = 0;
    while (n < room && p->qlen > 0) {
        if (p->q[p->qhead].kind == W_DROP && (n > 0 || !new_round))
            break;
        dst[n] = p->q[p->qhead];
        p->qhead = (p->qhead + 1) % p->qcap;
        p->qlen--;
        if (dst[n].kind == W_BATCH)
            p->st.queue_depth--;
        n++;
        if (dst[n - 1].kind == W_DROP)
            break;
    }
    return n;
}

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
    double now = mono_s();
    if (p->qlen == 0 && !p->stop && now < end && p->o.txn_idle_ms) {
        double until = now + (double)p->o.txn_idle_ms / 1e3;
        if (until > end)
            until = end;
        while (p->qlen == 0 && !p->stop && (now = mono_s()) < until) {
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
    if (!p->stop && mono_s() < end)
        n = pop_locked(p, dst, room, 0);
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void run_txn_(bl_processor *p, work *items, size_t n);

static void run_txn(bl_processor *p, work *items, size_t n)
{
    if (n == 1 && items[0].kind == W_DROP) { /* a deletion runs alone */
        drop_finish(p, items[0].dr, drop_build(p, &items[0]));
        return;
    }
    run_txn_(p, items, n);
    prep_drain(p);
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
    push_front(p, items, k);
}

static void run_txn_(bl_processor *p, work *items, size_t n)
{
    uint64_t recs = 0, done = 0, dup = 0, failed = 0;
    size_t aborted = SIZE_MAX;
    p->n_moves = 0;
    /* items that went to a build's waiting list: a rollback's reset_states
     * queues those again itself, so they are not pushed a second time */
    memset(p->waited, 0, n);
    if (bl_db_begin(p->db)) {
        sql_err(p, "begin");
        goto retry;
    }
    p->round_batches = 0;
    size_t later = SIZE_MAX; /* items[later..n) go to the next transaction */
    size_t next_prep = 0;
    double t_begin = mono_s();
    prep_submit(p, items, n, &next_prep);
    for (size_t i = 0;; i++) {
        if (i == n) {
            size_t got = take_more(p, items + n, p->o.max_batches_per_txn - n, t_begin);
            if (!got)
                break;
            memset(p->waited + n, 0, got);
            n += got;
            prep_submit(p, items, n, &next_prep);
        }
        if (items[i].kind == W_BUILD) {
            if (register_build(p, items[i].app_id, items[i].build) != BL_OK)
                logf_("build %s: registration failed", items[i].build);
            continue;
        }
        uint64_t r;
        pslot *ps = prep_wait(p, i);
        int res = process_batch(p, &items[i], ps ? &ps->job : NULL, &r);
        if (ps)
            prep_release(p, ps);
        prep_submit(p, items, n, &next_prep);
        if (res == B_LATER) {
            later = i;
            break;
        }
        if (res == B_RETRY) {
            logf_("batch %s: out of memory; the transaction is tried again", items[i].uuid);
            bl_db_rollback(p->db);
            clear_deltas(p);
            reset_states(p);
            goto retry;
        }
        if (res == B_WAITING) {
            items[i].counted = 0; /* the count moved to the build's waiting list */
            p->waited[i] = 1;
        } else if (res != B_ABORT) {
            release(p, &items[i]);
        }
        if (res == B_DONE) {
            recs += r;
            done++;
            p->round_batches++;
            add_move(p, &items[i], 0);
        } else if (res == B_DUPLICATE) {
            dup++;
            add_move(p, &items[i], 0);
        } else if (res == B_FAILED) {
            failed++;
            add_move(p, &items[i], 1);
        } else if (res == B_ABORT) {
            aborted = i;
            break;
        }
    }
    if (aborted != SIZE_MAX || flush_deltas(p) != BL_OK || bl_db_commit(p->db)) {
        if (aborted == SIZE_MAX)
            sql_err(p, "commit");
        bl_db_rollback(p->db);
        clear_deltas(p);
        reset_states(p);
        if (aborted != SIZE_MAX) {
            /* the batch that broke the transaction is kept aside; the others
             * are processed again at once */
            pending_batch pb;
            memset(&pb, 0, sizeof pb);
            memcpy(pb.uuid, items[aborted].uuid, sizeof pb.uuid);
            pb.enc = items[aborted].enc;
            move_batch(p, &pb, 1);
            release(p, &items[aborted]);
            pthread_mutex_lock(&p->mu);
            p->st.failed++;
            pthread_mutex_unlock(&p->mu);
            push_back_items(p, items, n, aborted);
            return;
        }
        goto retry;
    }
    bl_agg_mark_stored(&p->agg); /* committed: later rounds update them by id */
    ck_wake(p);
    clear_deltas(p);
    if (later != SIZE_MAX) /* back at the head, before any deletion queued since */
        push_front(p, items + later, n - later);
    double now = mono_s();
    for (size_t i = 0; i < p->n_moves; i++)
        move_batch(p, &p->moves[i], p->move_failed[i]);
    if (p->n_moves) {
        char d[BL_PATH_MAX];
        if (!bl_path_join(d, p->data_dir, "batches/pending"))
            bl_fsync_dir(d);
    }
    pthread_mutex_lock(&p->mu);
    p->st.batches += done;
    p->st.records += recs;
    p->st.duplicates += dup;
    p->st.failed += failed;
    p->st.txn++;
    p->st.failing = 0;
    p->st.dropped_paths = p->agg.dropped_nodes;
    for (size_t i = 0; i < p->n_moves; i++)
        if (!p->move_failed[i])
            record_latency(p, p->moves[i].t_enq, now);
    pthread_mutex_unlock(&p->mu);
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

/* Seconds between expiry sweeps: a quarter of the expiry time, 1..60. */
static double sweep_every(const bl_processor *p)
{
    double s = (double)p->o.waiting_expiry_s / 4;
    return s < 1 ? 1 : s > 60 ? 60 : s;
}

/* Deletes the waiting batches older than the expiry time (their file's
 * modification time; it survives restarts), releases their quota counts and
 * counts them in st.expired. Writer thread only, between transactions. */
static void expire_waiting(bl_processor *p)
{
    /* age = now - mtime, without overflow: both are far from the int64
     * limits (mtimes come from stat, expiry <= BL_WAITING_EXPIRY_MAX); a file
     * whose time is in the future has age 0 and waits */
    int64_t now = (int64_t)time(NULL);
    uint64_t expiry = p->o.waiting_expiry_s;
    uint64_t expired = 0;
    for (size_t i = 0; i < p->n_builds; i++) {
        bstate *b = p->builds[i];
        size_t keep = 0, gone = 0;
        for (size_t j = 0; j < b->n_waiting; j++) {
            pending_batch *pb = &b->waiting[j];
            char path[BL_PATH_MAX];
            if (pb->mtime >= now || (uint64_t)now - (uint64_t)pb->mtime < expiry ||
                bl_datadir_batch(p->data_dir, 0, pb->uuid, pb->enc, path) != BL_OK ||
                (unlink(path) != 0 && errno != ENOENT)) {
                b->waiting[keep++] = *pb;
                continue;
            }
            if (pb->counted)
                bl_quota_release(p->quota, b->app_id, b->build, pb->bytes);
            gone++;
        }
        b->n_waiting = keep;
        if (gone)
            logf_("build %s: %zu batch(es) expired after waiting %llu s for the build's "
                  "method-ID file or mapping (deleted; --waiting-expiry)",
                  b->build, gone, (unsigned long long)p->o.waiting_expiry_s);
        expired += gone;
    }
    if (!expired)
        return;
    char d[BL_PATH_MAX];
    if (!bl_path_join(d, p->data_dir, "batches/pending"))
        bl_fsync_dir(d);
    pthread_mutex_lock(&p->mu);
    p->st.expired += expired;
    p->st.waiting -= expired <= p->st.waiting ? expired : p->st.waiting;
    pthread_mutex_unlock(&p->mu);
}

static void *writer_main(void *arg)
{
    bl_processor *p = arg;
    name_thread("bl-writer");
    size_t cap = p->o.max_batches_per_txn;
    work *items = malloc(cap * sizeof *items);
    p->waited = malloc(cap);
    if (!items || !p->waited) {
        free(items);
        return NULL;
    }
    for (;;) {
        if (mono_s() >= p->next_sweep) {
            expire_waiting(p);
            p->next_sweep = mono_s() + sweep_every(p);
        }
        pthread_mutex_lock(&p->mu);
        while (p->qlen == 0 && !p->stop) {
            p->busy = 0;
            pthread_cond_broadcast(&p->idle_cv);
            /* wake for the next expiry sweep (CLOCK_REALTIME: the cv's clock) */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            double left = p->next_sweep - mono_s();
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
        size_t n = pop_locked(p, items, cap, 1);
        p->busy = 1;
        pthread_mutex_unlock(&p->mu);
        run_txn(p, items, n);
    }
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
            if (bl_datadir_build_name(bp, build) == BL_OK)
                bl_processor_build_changed(p, app_id, build);
            else
                logf_("%s: not a build folder (no build-name matching its name); ignored", bp);
        }
        if (bd)
            closedir(bd);
    }
    if (apps)
        closedir(apps);
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
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->idle_cv, NULL);
    pthread_cond_init(&p->drop_cv, NULL);
    bl_u128map_init(&p->build_ix);
    bl_agg_init(&p->agg, 1, p->o.max_nodes_per_build, new_row, p);
    bl_prep_init(&p->inline_job);
    pthread_mutex_init(&p->pmu, NULL);
    pthread_cond_init(&p->pcv, NULL);
    pthread_cond_init(&p->pdone, NULL);
    pthread_cond_init(&p->ck_cv, NULL);
    for (unsigned i = 0; i < PREP_SLOTS; i++)
        bl_prep_init(&p->slot[i].job);
    p->next_sweep = mono_s() + sweep_every(p);
    char dbp[BL_PATH_MAX];
    bl_err err = bl_quota_new(&p->o.quota, &p->quota);
    if (!err)
        err = bl_events_new(&p->ev);
    if (err)
        snprintf(errbuf, n, "out of memory");
    else
        err = bl_datadir_db(p->data_dir, dbp);
    if (!err)
        err = bl_db_open(dbp, 0, &p->db, errbuf, n);
    if (!err && bl_db_writer_memory(p->db) != BL_OK)
        logf_("cannot enlarge the writer's page cache: %s", bl_db_errmsg(p->db));
    if (!err) {
        /* checkpoints on a thread of their own; without it (no connection,
         * no thread) the writer's commits do them as SQLite's default */
        char ckerr[256];
        if (bl_db_open(dbp, 0, &p->ck_db, ckerr, sizeof ckerr) != BL_OK) {
            logf_("no checkpointer connection (%s): the writer checkpoints", ckerr);
            p->ck_db = NULL;
        } else if (pthread_create(&p->ck_thread, NULL, ck_main, p) != 0) {
            logf_("no checkpointer thread: the writer checkpoints");
        } else if (bl_db_no_autocheckpoint(p->db) != BL_OK) {
            logf_("cannot hand checkpoints to their thread: %s", bl_db_errmsg(p->db));
            p->ck_started = 1; /* it runs anyway (harmless), and stops at the end */
        } else {
            p->ck_started = 1;
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
    unsigned want = p->o.prep_threads == BL_PREP_NONE ? 0
                    : p->o.prep_threads == 0 ? 1
                    : p->o.prep_threads > PREP_MAX_THREADS ? PREP_MAX_THREADS
                    : p->o.prep_threads;
    for (unsigned i = 0; !err && i < want; i++) {
        if (pthread_create(&p->prep_thread[i], NULL, prep_main, p) != 0)
            break; /* fewer workers (or none): the writer prepares the rest itself */
        p->n_prep++;
        p->n_slots = p->n_prep + 1;
    }
    if (!err) {
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
            logf_("no rollups rebuild thread (%s): slow-methods answers of apps marked "
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
    for (unsigned i = 0; i < PREP_SLOTS; i++)
        bl_prep_cleanup(&p->slot[i].job);
    bl_prep_cleanup(&p->inline_job);
    for (size_t i = 0; i < p->n_builds; i++)
        bstate_free(p->builds[i]);
    /* deletions still queued: their callers are told they did not happen */
    for (size_t i = 0; i < p->qlen; i++)
        if (p->q[(p->qhead + i) % p->qcap].kind == W_DROP)
            drop_finish(p, p->q[(p->qhead + i) % p->qcap].dr, BL_EIO);
    free(p->builds);
    bl_agg_cleanup(&p->agg);
    bl_u128map_cleanup(&p->build_ix);
    free(p->moves);
    free(p->move_failed);
    free(p->waited);
    free(p->q);
    bl_quota_free(p->quota);
    bl_events_free(p->ev);
    bl_db_close(p->db);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->idle_cv);
    pthread_cond_destroy(&p->drop_cv);
    pthread_mutex_destroy(&p->pmu);
    pthread_cond_destroy(&p->pcv);
    pthread_cond_destroy(&p->pdone);
    pthread_cond_destroy(&p->ck_cv);
    free(p);
}
