/*
 * proc_builds.c — the writer’s per-build state (see proc_internal.h).
 */
#include "pipeline/proc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <jansson.h>

#include "common/buf.h"
#include "ingest/methodid.h"
#include "ingest/namecheck.h"
#include "pipeline/buildcache.h"
#include "pipeline/retention.h"
#include "store/files.h"
#include "store/retention.h"
#include "store/writer.h"
#include "symbol/mapindex.h"
#include "symbol/symbolicate.h"

/* ------------------------------------------------------------------------ */
/* Builds                                                                    */

void pr_bstate_free(bstate *b)
{
    if (!b)
        return;
    bl_agg_build_cleanup(&b->ab);
    free(b->waiting);
    free(b);
}

bl_err pr_sql_err(bl_processor *p, const char *what)
{
    pr_log("SQL error in %s: %s", what, bl_db_errmsg(p->db));
    p->sql_failed = 1;
    return BL_EIO;
}

/* Finds or creates the builds row and the in-memory state. */
bl_err pr_get_build(bl_processor *p, int64_t app_id, const char *build, bstate **out)
{
    uint64_t h = XXH3_64bits(build, strlen(build));
    uint64_t *ix = bl_u128map_get(&p->build_ix, (uint64_t)app_id, h);
    if (ix && *ix && !strcmp(p->builds[*ix - 1]->build, build)) {
        *out = p->builds[*ix - 1];
        return BL_OK;
    }
    int64_t id;
    if (pr_need_db(p)) /* p->redo says why */
        return BL_EIO;
    if (bl_wr_build_get(p->db, app_id, build, bl_now_us(), &id))
        return pr_sql_err(p, "builds get");
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
            pr_bstate_free(b);
            return BL_ENOMEM;
        }
        p->builds = nb;
        p->cap_builds = nc;
    }
    p->builds[p->n_builds++] = b;
    uint64_t *v;
    int ins;
    if (bl_u128map_put(&p->build_ix, (uint64_t)app_id, h, p->n_builds, &v, &ins)) {
        /* not indexed: not kept either (a later lookup would make a second
         * state for the same build) */
        p->builds[--p->n_builds] = NULL;
        pr_bstate_free(b);
        return BL_ENOMEM;
    }
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
        return pr_sql_err(p, "methods range");
    uint32_t limit = top >= 0 && top <= BL_REC_ID_MAX ? (uint32_t)top + 1 : 0;
    uint32_t cap = ((limit + 1023) / 1024) * 1024 + 1024;
    if (cap > BL_REC_ID_MAX)
        cap = 0;
    if (!b->ab.id_cap || cap > b->ab.id_cap)
        b->ab.id_cap = cap;
    bl_err err = bl_wr_methods_each(p->db, b->build_id, method_row, b);
    if (err == BL_EIO)
        return pr_sql_err(p, "methods load");
    if (err)
        return err;
    if (b->loaded)
        return BL_OK;
    err = bl_wr_nodes_each(p->db, b->build_id, node_row, b);
    if (err == BL_EIO)
        return pr_sql_err(p, "nodes load");
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

/* symbolicate_build's rows for bl_wr_methods_put */
typedef struct sym_rows {
    const bl_methodids *t;
    const bl_mapindex *mi; /* NULL: names as they are */
    bl_buf store;          /* the names of the last row */
    bl_err sym_err;        /* symbolication failed (not the store) */
} sym_rows;

static bl_err sym_row(void *ctx, size_t i, bl_wr_method *out)
{
    sym_rows *r = ctx;
    const bl_mid_entry *e = bl_methodids_at(r->t, (uint32_t)i);
    bl_symbol s;
    bl_err se = bl_symbolicate_method(r->mi, e->cls, e->name, e->desc, &r->store, &s);
    if (se == BL_EINVAL) /* a descriptor the parser let through: keep names */
        se = bl_symbolicate_method(NULL, e->cls, e->name, "()V", &r->store, &s);
    if (se)
        return r->sym_err = se;
    *out = (bl_wr_method){ .method_id = e->id, .cls = s.cls, .name = s.method,
                           .descriptor = s.desc, .source_file = s.file };
    return BL_OK;
}

/* Symbolicates every methodId of the build (table t, borrowed) into the
 * methods table (in chunks of rows on PostgreSQL: store/writer.h). */
static bl_err symbolicate_build(bl_processor *p, bstate *b, const char *dir, int obfuscated,
                                const bl_methodids *t)
{
    bl_err err = BL_OK;
    bl_mapindex *mi = NULL;
    if (obfuscated && (err = bl_datadir_open_index(p->data_dir, dir, &mi, NULL)))
        return err;
    sym_rows r = { .t = t, .mi = mi, .sym_err = BL_OK };
    bl_buf_init(&r.store, 0);
    err = bl_wr_methods_put(p->db, b->build_id, bl_methodids_count(t), sym_row, &r);
    if (err && !r.sym_err && err != BL_ENOMEM)
        err = pr_sql_err(p, "methods upsert");
    bl_buf_cleanup(&r.store);
    bl_mapindex_close(mi);
    return err;
}

/* The build's waiting batches go back to the head of the queue, in their
 * order (they were queued before anything behind them, a deletion too). */
bl_err pr_requeue_waiting(bl_processor *p, bstate *b)
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
        w.from_q = b->waiting[i].from_q;
        w.qgen = b->waiting[i].qgen;
        w.checked = w.from_q; /* checked at POST (proc_queue.c) */
        w.received_us = b->waiting[i].mtime * 1000000;
        pthread_mutex_lock(&p->mu);
        p->st.waiting--;
        pthread_mutex_unlock(&p->mu);
        pr_push_front(p, &w, 1);
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
                pr_log("build %s: %s", b->build, w);
            }
        }
    }
    if (bl_wr_build_set_warnings(p->db, b->build_id, text[0] ? text : NULL))
        return pr_sql_err(p, "builds warnings");
    return BL_OK;
}

static void pr_forget_state(bl_processor *p, size_t i);

/* Index of state b in p->builds (SIZE_MAX: none). */
static size_t state_index(const bl_processor *p, const bstate *b)
{
    for (size_t i = 0; i < p->n_builds; i++)
        if (p->builds[i] == b)
            return i;
    return SIZE_MAX;
}

/* State *b's builds row is gone (the build was deleted, by another node:
 * its id is stale): the state is forgotten — its waiting batches go back
 * to the head of the queue first, processed again with the new state —
 * and made again (a new row when the build has none). *b: the new state. */
static bl_err renew_state(bl_processor *p, bstate **b)
{
    int64_t app_id = (*b)->app_id;
    char build[BL_BUILD_NAME_MAX + 1];
    snprintf(build, sizeof build, "%s", (*b)->build);
    pr_log("build %s: its row (id %lld) is gone, the build was deleted (by another node); "
           "its state is made again, its %zu waiting batch(es) processed again with it",
           build, (long long)(*b)->build_id, (*b)->n_waiting);
    pr_requeue_waiting(p, *b); /* n_waiting 0: nothing of the queue is deleted below */
    size_t i = state_index(p, *b);
    if (i != SIZE_MAX)
        pr_forget_state(p, i);
    *b = NULL;
    return pr_get_build(p, app_id, build, b);
}

/* Brings the builds row and the methods table in line with the files.
 * *mids caches the parsed method-ID file (caller frees). */
static bl_err register_build_(bl_processor *p, int64_t app_id, const char *build,
                              bl_methodids **mids)
{
    bstate *b;
    bl_err err = pr_get_build(p, app_id, build, &b);
    if (err)
        return err;
    char dir[BL_PATH_MAX], path[BL_PATH_MAX];
    if ((err = bl_datadir_build(p->data_dir, app_id, build, dir)))
        return err;
    /* PostgreSQL store: the build's files are the store's; the folder is
     * this node's cache of them, made to agree first (a file uploaded to
     * another node is fetched here) */
    if (bl_files_in_store(p->db) &&
        (err = bl_buildcache_sync(p->db, p->data_dir, app_id, build, 0, dir, NULL))) {
        pr_log("build %s: cannot bring its files from the store: %s (%s)", build,
               bl_err_str(err), err == BL_EIO ? bl_db_errmsg(p->db) : "");
        return err;
    }
    char mhash[80], ihash[80];
    read_hash(dir, "mapping.hash", mhash, sizeof mhash);
    read_hash(dir, "method-ids.hash", ihash, sizeof ihash);

    bl_wr_build_files bf;
    err = bl_wr_build_files_get(p->db, b->build_id, &bf);
    if (err == BL_ENOTFOUND) { /* stale: made again once, then read again */
        if ((err = renew_state(p, &b)))
            return err;
        err = bl_wr_build_files_get(p->db, b->build_id, &bf);
    }
    if (err == BL_ENOTFOUND) {
        pr_log("build %s: its row (id %lld) is gone", build, (long long)b->build_id);
        return BL_EIO;
    }
    if (err)
        return pr_sql_err(p, "builds read");
    int mchanged = strcmp(bf.mapping_hash, mhash) != 0;
    int ichanged = strcmp(bf.methodids_hash, ihash) != 0;
    int obf = bf.obfuscated;
    int symbolicated = bf.symbolicated;
    int64_t now = bl_now_us();
    if (mchanged) {
        struct stat sb;
        int64_t size = !bl_path_join(path, dir, "mapping.txt") && stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
        if (bl_wr_build_set_mapping(p->db, b->build_id, mhash, size, now))
            return pr_sql_err(p, "builds mapping");
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
            return pr_sql_err(p, "builds methodids");
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
            pr_log("cannot symbolicate build %s: %s", build, bl_err_str(err));
            b->ready = 0;
            bl_err qe = bl_quota_set_ready(p->quota, app_id, build, 0);
            return err == BL_ENOMEM ? err : qe;
        }
        if (bl_wr_build_set_symbolicated(p->db, b->build_id, bl_now_us()))
            return pr_sql_err(p, "builds symbolicated");
    }
    if ((err = load_rows(p, b)))
        return err;
    b->ready = 1;
    if ((err = bl_quota_set_ready(p->quota, app_id, build, 1)))
        return err;
    return pr_requeue_waiting(p, b);
}

/* PostgreSQL store: the registration of (app_id, build) failed (err; the
 * reason: `why`, its log line); a failure not due to the store being away
 * counts, and at PR_REG_FAILS_MAX in a row the state's waiting batches are
 * given back to the queue (their leases given up: any node claims them
 * again, each claim an attempt; the rows keep the reason, which a row
 * failed for its attempts then gives) and the state is forgotten. */
static void registration_failed(bl_processor *p, int64_t app_id, const char *build, bl_err err,
                                const char *why)
{
    if (!p->pg || err == BL_ENOMEM || p->redo != R_NONE || bl_db_connection_lost(p->db))
        return;
    uint64_t *ix = bl_u128map_get(&p->build_ix, (uint64_t)app_id,
                                  XXH3_64bits(build, strlen(build)));
    if (!ix || !*ix || strcmp(p->builds[*ix - 1]->build, build))
        return;
    size_t i = *ix - 1;
    bstate *b = p->builds[i];
    if (++b->reg_fails < PR_REG_FAILS_MAX)
        return;
    pr_log("build %s: its registration failed %u times in a row; its %zu waiting batch(es) "
           "are given back to the queue (claimed again, at most %d times each)",
           build, b->reg_fails, b->n_waiting, BL_QUEUE_MAX_ATTEMPTS);
    char reason[400];
    snprintf(reason, sizeof reason, "registration of its build failed %u times in a row, "
             "the last: %s", b->reg_fails, why);
    for (size_t j = 0; j < b->n_waiting; j++) {
        if (b->waiting[j].from_q)
            pr_q_forget(p, b->waiting[j].uuid, b->waiting[j].qgen, 3, reason);
        if (b->waiting[j].counted)
            bl_quota_release(p->quota, b->app_id, b->build, b->waiting[j].bytes);
    }
    pthread_mutex_lock(&p->mu);
    p->st.waiting -= b->n_waiting <= p->st.waiting ? b->n_waiting : p->st.waiting;
    pthread_mutex_unlock(&p->mu);
    b->n_waiting = 0; /* given back: nothing of the queue is deleted below */
    pr_forget_state(p, i);
}

bl_err pr_register_build(bl_processor *p, int64_t app_id, const char *build)
{
    bl_methodids *mids = NULL;
    pr_last_log_clear();
    bl_err err = register_build_(p, app_id, build, &mids);
    bl_methodids_free(mids);
    if (err) {
        snprintf(p->reg_why, sizeof p->reg_why, "%s",
                 pr_last_log()[0] ? pr_last_log() : bl_err_str(err));
        registration_failed(p, app_id, build, err, p->reg_why);
    } else if (p->pg) {
        uint64_t *ix = bl_u128map_get(&p->build_ix, (uint64_t)app_id,
                                      XXH3_64bits(build, strlen(build)));
        if (ix && *ix && !strcmp(p->builds[*ix - 1]->build, build))
            p->builds[*ix - 1]->reg_fails = 0;
    }
    return err;
}

/* Forgets every build's in-memory state (after a rollback it may be ahead
 * of the database); it is reloaded from the database on next use. */
void pr_reset_states(bl_processor *p)
{
    for (size_t i = 0; i < p->n_builds; i++) {
        bstate *b = p->builds[i];
        pr_requeue_waiting(p, b); /* waiting batches go back to the queue */
        pr_bstate_free(b);
    }
    p->n_builds = 0;
    bl_u128map_clear(&p->build_ix);
    int64_t next;
    if (bl_wr_next_node_id(p->db, &next) == BL_OK)
        p->agg.next_node = next;
    p->node_end = 0; /* PostgreSQL: a new node-id block before the next node */
}

/* ------------------------------------------------------------------------ */
/* Deleting a build (retention.h)                                            */

/* Forgets build state b (index i in p->builds): its waiting batches are
 * deleted and their quota counts released; the last state takes its slot. */
static void pr_forget_state(bl_processor *p, size_t i)
{
    bstate *b = p->builds[i];
    for (size_t j = 0; j < b->n_waiting; j++) {
        char path[BL_PATH_MAX];
        if (b->waiting[j].from_q) /* its queue row goes (PostgreSQL store) */
            pr_q_forget(p, b->waiting[j].uuid, b->waiting[j].qgen, 1, NULL);
        else if (bl_datadir_batch(p->data_dir, 0, b->waiting[j].uuid, b->waiting[j].enc,
                                  path) == BL_OK &&
            unlink(path) != 0 && errno != ENOENT)
            pr_log("cannot delete batch %s of a deleted build: %s", b->waiting[j].uuid,
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
        *ix = 0; /* no entry (pr_get_build) */
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
    pr_bstate_free(b);
}

void pr_drop_states_of_key(bl_processor *p, int64_t key)
{
    for (size_t i = 0; i < p->n_builds;) {
        bstate *b = p->builds[i];
        if (bl_queue_lock_key(b->app_id, b->build) != key) {
            i++;
            continue;
        }
        /* its waiting batches (none when the lock is let go idle) go back
         * to the queue, processed with the state loaded again */
        pr_requeue_waiting(p, b);
        pr_forget_state(p, i); /* the last state takes slot i */
    }
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
static bl_err drop_build_(bl_processor *p, const work *w, int *lost)
{
    *lost = 0;
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
        pr_log("build %s: cannot take its folder's lock: %s; not deleted", w->build,
              lerr == BL_EIO ? (errno == EWOULDBLOCK ? "an upload holds it" : strerror(errno))
                             : bl_err_str(lerr));
        return BL_EIO;
    }
    if (bl_db_begin(p->db)) {
        bl_retention_build_unlock(lfd);
        return pr_sql_err(p, "begin");
    }
    /* PostgreSQL store: the deletion is run only by the holder of the
     * build's lock, which belongs to the writer connection's session: one
     * made again (by BEGIN) holds no lock — another node may hold it and
     * the build's state and batches; deleting the build under it would
     * leave that node a stale state (pr_register_build). Given up: the
     * deletion's row stays in the queue (pr_drop_build) */
    if (p->pg && bl_db_session(p->db) != p->q_session) {
        pr_log("build %s: the writer connection was made again (its build locks are gone); "
               "the deletion is left in the queue for the build's lock holder", w->build);
        bl_db_rollback(p->db);
        bl_retention_build_unlock(lfd);
        *lost = 1;
        return BL_EIO;
    }
    int64_t id;
    int idle = 1, moved = 0;
    bl_err err = bl_rs_build_find(p->db, w->app_id, w->build, &id);
    if (!err && w->drop_cutoff && (err = bl_rs_build_idle(p->db, id, w->drop_cutoff, &idle)) ==
                                      BL_OK && !idle)
        err = BL_EINVAL;
    if (!err)
        err = bl_rs_doom_build(p->db, id, w->drop_cutoff ? "expired" : "deleted", bl_now_us());
    /* PostgreSQL store: the build's files go with it (a build of the same
     * name made later starts without them; other nodes' caches follow at
     * their next sync) */
    if (!err && bl_files_in_store(p->db) && bl_files_build_forget(p->db, w->app_id, w->build))
        err = BL_EIO;
    /* PostgreSQL store: the deletion's queue row goes in its commit */
    if (!err && w->from_q && bl_queue_finish(p->db, w->uuid))
        err = BL_EIO;
    if (!err && (err = bl_retention_trash_build(p->data_dir, w->app_id, w->build, id, lfd >= 0,
                                                 &moved)))
        pr_log("build %s: cannot move its folder to trash: %s", w->build,
              err == BL_EIO ? strerror(errno) : bl_err_str(err));
    if (!err && bl_db_commit(p->db)) {
        err = pr_sql_err(p, "commit");
        if (moved)
            bl_retention_untrash_build(p->data_dir, w->app_id, w->build, id);
    }
    bl_retention_build_unlock(lfd);
    if (err) {
        if (err == BL_EIO)
            pr_log("build %s: deletion failed: %s", w->build, bl_db_errmsg(p->db));
        bl_db_rollback(p->db);
        return err;
    }
    /* the deletion is durable before it is answered and before the waiting
     * batches' files go (pr_forget_state) */
    if (pr_make_durable(p) != BL_OK)
        pr_log("build %s: cannot sync the deletion's commit: %s", w->build, strerror(errno));
    bl_retention_request_done(p->data_dir, id); /* a DELETE's request happened */
    if (si != SIZE_MAX)
        pr_forget_state(p, si);
    bl_quota_set_ready(p->quota, w->app_id, w->build, 0);
    pr_log("build %s (app id %lld) %s; its data is deleted in the background", w->build,
          (long long)w->app_id, w->drop_cutoff ? "expired" : "deleted");
    return BL_OK;
}

bl_err pr_drop_build(bl_processor *p, const work *w)
{
    /* a deletion in line in the PostgreSQL queue (proc_queue.c) whose claim
     * is stale (the writer's session changed): another claim runs it */
    if (w->from_q && !pr_q_live(p, w->uuid, w->qgen))
        return BL_EIO;
    int lost;
    bl_err err = drop_build_(p, w, &lost);
    /* PostgreSQL store: the session (and the build's lock with it) was lost
     * before or during the deletion: its row stays in the queue, run by
     * whoever holds the lock (this node's claims and leases are given up) */
    if (w->from_q && err == BL_EIO &&
        (lost || bl_db_connection_lost(p->db) || bl_db_session(p->db) != p->q_session)) {
        pr_q_check_conn(p);
        return BL_EIO;
    }
    /* its row went in the deletion's commit; on failure it goes now: the
     * node that asked sees the build still live (bl_processor_drop_build) */
    if (w->from_q)
        pr_q_forget(p, w->uuid, w->qgen, err ? 1 : 0, NULL);
    return err;
}

bl_err pr_defer_build(bl_processor *p, const work *w)
{
    for (size_t i = 0; i < p->n_reg_defer; i++)
        if (p->reg_defer[i].app_id == w->app_id && !strcmp(p->reg_defer[i].build, w->build))
            return BL_OK; /* put off already: the older item stays */
    if (p->n_reg_defer == p->cap_reg_defer) {
        size_t nc = p->cap_reg_defer ? p->cap_reg_defer * 2 : 8;
        work *nd = realloc(p->reg_defer, nc * sizeof *nd);
        if (!nd)
            return BL_ENOMEM;
        p->reg_defer = nd;
        p->cap_reg_defer = nc;
    }
    p->reg_defer[p->n_reg_defer++] = *w;
    return BL_OK;
}

void pr_recheck_waiting(bl_processor *p)
{
    /* registrations put off (pr_defer_build): in the queue again */
    size_t k = 0;
    for (size_t i = 0; i < p->n_reg_defer; i++)
        if (pr_push(p, &p->reg_defer[i]) != BL_OK) /* out of memory: kept for the next look */
            p->reg_defer[k++] = p->reg_defer[i];
    p->n_reg_defer = k;
    for (size_t i = 0; i < p->n_builds; i++) {
        const bstate *b = p->builds[i];
        if (b->ready || !b->n_waiting)
            continue;
        work w;
        memset(&w, 0, sizeof w);
        w.kind = W_BUILD;
        w.app_id = b->app_id;
        memcpy(w.build, b->build, sizeof w.build);
        w.t_enq = pr_mono_s();
        if (pr_push(p, &w) != BL_OK)
            return; /* out of memory: the next look tries again */
    }
}

/* Deletes the waiting batches older than the expiry time (their file's
 * modification time; it survives restarts), releases their quota counts and
 * counts them in st.expired. Writer thread only, between transactions. */
void pr_expire_waiting(bl_processor *p)
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
                (!pb->from_q &&
                 (bl_datadir_batch(p->data_dir, 0, pb->uuid, pb->enc, path) != BL_OK ||
                  (unlink(path) != 0 && errno != ENOENT)))) {
                b->waiting[keep++] = *pb;
                continue;
            }
            if (pb->from_q) /* PostgreSQL store: its queue row goes */
                pr_q_forget(p, pb->uuid, pb->qgen, 1, NULL);
            if (pb->counted)
                bl_quota_release(p->quota, b->app_id, b->build, pb->bytes);
            gone++;
        }
        b->n_waiting = keep;
        if (gone)
            pr_log("build %s: %zu batch(es) expired after waiting %llu s for the build's "
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

