/*
 * proc_workers.c — the prep workers and the checkpointer (see
 * proc_internal.h): the checkpointer makes the writer's commits durable
 * (WAL sync), then moves their batch files and counts them, then copies
 * the commits into the database file (checkpoint).
 */
#include "pipeline/proc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* ---- the checkpointer: durable commits, batch-file moves, checkpoints ---- */

/* Grows m's arrays to nc entries (nc > m->cap); reasons too when `why` or
 * when m has them already (the lists trade places — pr_committed, the
 * checkpointer's swap — so `cap` must hold for every array m has).
 * -1 when out of memory (m unchanged but for arrays already grown). */
static int ml_grow(movelist *m, size_t nc, int why)
{
    why = why || m->why;
    pending_batch *nb = realloc(m->b, nc * sizeof *nb);
    if (nb)
        m->b = nb;
    uint8_t *nf = realloc(m->failed, nc);
    if (nf)
        m->failed = nf;
    char(*nw)[PR_ML_WHY] = why ? realloc(m->why, nc * sizeof *nw) : NULL;
    if (nw)
        m->why = nw;
    if (!nb || !nf || (why && !nw))
        return -1;
    m->cap = nc;
    return 0;
}

int pr_ml_reserve(movelist *m, size_t n)
{
    return m->cap >= n ? 0 : ml_grow(m, n, 1);
}

int pr_ml_add(movelist *m, const work *w, int failed, const char *why)
{
    if (m->n == m->cap && ml_grow(m, m->cap ? m->cap * 2 : 64, 1))
        return -1;
    pending_batch *pb = &m->b[m->n];
    memset(pb, 0, sizeof *pb);
    memcpy(pb->uuid, w->uuid, sizeof pb->uuid);
    pb->enc = w->enc;
    pb->t_enq = w->t_enq;
    pb->from_q = w->from_q;
    pb->qgen = w->qgen;
    snprintf(m->why[m->n], PR_ML_WHY, "%s", failed && why ? why : "");
    m->failed[m->n++] = (uint8_t)(failed != 0);
    return 0;
}

void pr_ml_reset(movelist *m)
{
    m->n = 0;
    m->done = m->records = m->dup = m->failed_n = 0;
}

void pr_ml_free(movelist *m)
{
    free(m->b);
    free(m->failed);
    free(m->why);
    memset(m, 0, sizeof *m);
}

/* Appends src to dst (src unchanged). -1 when out of memory. */
static int ml_append(movelist *dst, const movelist *src)
{
    if (dst->n + src->n > dst->cap) {
        size_t nc = dst->cap ? dst->cap : 64;
        while (nc < dst->n + src->n)
            nc *= 2;
        if (ml_grow(dst, nc, 0)) /* the checkpointer's lists keep no reasons */
            return -1;
    }
    if (src->n) {
        memcpy(dst->b + dst->n, src->b, src->n * sizeof *src->b);
        memcpy(dst->failed + dst->n, src->failed, src->n);
    }
    dst->n += src->n;
    dst->done += src->done;
    dst->records += src->records;
    dst->dup += src->dup;
    dst->failed_n += src->failed_n;
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

/* The rounds in m are committed: once their commits are durable (`sync`:
 * the WAL is synced first, on connection db), their batch files leave
 * batches/pending and they are counted. A power loss before the sync may
 * undo those commits: their batches are still in batches/pending then and
 * processed again at the next start (a commit that survived makes them
 * duplicates: counted once). When the sync fails the files stay there too
 * (the next start finds them committed, duplicates) and the batches are
 * counted (they are committed). Empties m. */
static void finish(bl_processor *p, bl_db *db, int sync, movelist *m)
{
    int durable = 1;
    if (sync && bl_db_sync_wal(db) != BL_OK) {
        pr_log("cannot sync the database's WAL: %s; %zu batch file(s) stay in "
               "batches/pending (checked again at the next start)", strerror(errno), m->n);
        durable = 0;
    }
    for (size_t i = 0; durable && i < m->n; i++)
        pr_move_batch(p, &m->b[i], m->failed[i]);
    for (size_t i = 0; !durable && i < m->n; i++)
        if (m->b[i].from_q) /* committed all the same (PostgreSQL: no WAL sync) */
            pr_move_batch(p, &m->b[i], m->failed[i]);
    if (durable && m->n) {
        char d[BL_PATH_MAX];
        if (!bl_path_join(d, p->data_dir, "batches/pending"))
            bl_fsync_dir(d);
    }
    double now = pr_mono_s();
    pthread_mutex_lock(&p->mu);
    p->st.batches += m->done;
    p->st.records += m->records;
    p->st.duplicates += m->dup;
    p->st.failed += m->failed_n;
    for (size_t i = 0; i < m->n; i++)
        if (!m->failed[i])
            record_latency(p, m->b[i].t_enq, now);
    pthread_mutex_unlock(&p->mu);
    pr_ml_reset(m);
}

void *pr_ck_main(void *arg)
{
    bl_processor *p = arg;
    pr_name_thread("bl-checkpoint");
    pthread_mutex_lock(&p->pmu);
    for (;;) {
        while (!p->ck_due && !p->pstop)
            pthread_cond_wait(&p->ck_cv, &p->pmu);
        if (!p->ck_due && p->pstop)
            break;
        p->ck_due = 0;
        movelist t = p->ck_work; /* empty */
        p->ck_work = p->ck_in;
        p->ck_in = t;
        pthread_mutex_unlock(&p->pmu);
        /* the rounds handed over before this point were committed before
         * the sync begins: it makes them durable */
        if (p->ck_work.n || p->ck_work.done || p->ck_work.dup || p->ck_work.failed_n)
            finish(p, p->ck_db, p->deferred, &p->ck_work);
        if (bl_db_checkpoint(p->ck_db))
            pr_log("checkpoint failed: %s", bl_db_errmsg(p->ck_db));
        pthread_mutex_lock(&p->pmu);
    }
    pthread_mutex_unlock(&p->pmu);
    return NULL;
}

void pr_committed(bl_processor *p, movelist *m)
{
    if (!p->ck_started) {
        finish(p, p->db, p->deferred, m);
        return;
    }
    pthread_mutex_lock(&p->pmu);
    int handed = 1;
    if (!p->ck_in.n && !p->ck_in.done && !p->ck_in.dup && !p->ck_in.failed_n) {
        movelist t = p->ck_in; /* empty: the two lists trade places */
        p->ck_in = *m;
        *m = t;
    } else if (ml_append(&p->ck_in, m) == 0) {
        pr_ml_reset(m);
    } else {
        handed = 0;
    }
    p->ck_due = 1;
    pthread_cond_signal(&p->ck_cv);
    pthread_mutex_unlock(&p->pmu);
    if (!handed) /* out of memory: made durable here */
        finish(p, p->db, p->deferred, m);
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

bl_err pr_make_durable(bl_processor *p)
{
    ck_wake(p);
    return p->deferred ? bl_db_sync_wal(p->db) : BL_OK;
}

/* ---- decompressed bodies handed over at POST ---- */

void bl_processor_offer_body(bl_processor *p, const char *uuid, const void *body, size_t len)
{
    if (!p || !p->n_prep || len > PREP_AHEAD_MAX_BODY || len > p->o.max_decompressed)
        return; /* no prep thread to take it, or too big to be prepared ahead */
    pthread_mutex_lock(&p->bmu);
    int room = p->mb_bytes + len <= BL_PROC_BODIES_MAX;
    if (room && p->n_mb == p->cap_mb) {
        size_t nc = p->cap_mb ? p->cap_mb * 2 : 32;
        struct mbody *nm = realloc(p->mb, nc * sizeof *nm);
        if (nm) {
            p->mb = nm;
            p->cap_mb = nc;
        } else {
            room = 0;
        }
    }
    char *copy = room ? malloc(len ? len : 1) : NULL;
    if (copy) {
        memcpy(copy, body, len);
        struct mbody *m = &p->mb[p->n_mb++];
        snprintf(m->uuid, sizeof m->uuid, "%s", uuid);
        m->data = copy;
        m->len = len;
        p->mb_bytes += len;
    }
    pthread_mutex_unlock(&p->bmu);
}

/* Index of uuid's body, or n_mb; bmu held. */
static size_t body_find(const bl_processor *p, const char *uuid)
{
    size_t i = 0;
    while (i < p->n_mb && strcmp(p->mb[i].uuid, uuid))
        i++;
    return i;
}

/* Removes entry i (its data handed to the caller); bmu held. */
static void body_remove(bl_processor *p, size_t i)
{
    p->mb_bytes -= p->mb[i].len;
    /* kept in arrival order: the oldest is found first */
    memmove(&p->mb[i], &p->mb[i + 1], (p->n_mb - i - 1) * sizeof *p->mb);
    p->n_mb--;
}

int pr_body_take(bl_processor *p, const char *uuid, char **out, size_t *len)
{
    pthread_mutex_lock(&p->bmu);
    size_t i = body_find(p, uuid);
    int found = i < p->n_mb;
    if (found) {
        *out = p->mb[i].data;
        *len = p->mb[i].len;
        body_remove(p, i);
    }
    pthread_mutex_unlock(&p->bmu);
    return found;
}

void pr_body_drop(bl_processor *p, const char *uuid)
{
    char *data;
    size_t len;
    if (pr_body_take(p, uuid, &data, &len))
        free(data);
}

void pr_body_free_all(bl_processor *p)
{
    for (size_t i = 0; i < p->n_mb; i++)
        free(p->mb[i].data);
    free(p->mb);
    p->mb = NULL;
    p->n_mb = p->cap_mb = p->mb_bytes = 0;
}

/* ---- prep workers ---- */

void *pr_prep_main(void *arg)
{
    bl_processor *p = arg;
    pr_name_thread("bl-prep");
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
        char *mem;
        size_t mem_len;
        if (!s->from_q && pr_body_take(p, s->uuid, &mem, &mem_len)) {
            /* decompressed by the POST already: the same bytes as the file's */
            bl_prep_run(&s->job, mem, mem_len, BL_ENC_IDENTITY, cap, s->check);
            free(mem);
            pthread_mutex_lock(&p->mu);
            p->st.prep_in_memory++;
            pthread_mutex_unlock(&p->mu);
        } else if (!s->from_q) {
            bl_prep_file(&s->job, s->path, s->enc, cap, s->check);
        } else { /* the queue's copy of the bytes (proc_queue.c) */
            bl_err e = pr_q_body(p, s->uuid, s->qgen, &s->raw);
            if (e == BL_OK)
                bl_prep_run(&s->job, s->raw.data, s->raw.len, s->enc, cap, s->check);
            else
                s->job.read_err = e; /* BL_ENOTFOUND: stale; the writer drops it */
        }
        pthread_mutex_lock(&p->pmu);
        s->state = PS_DONE;
        pthread_cond_broadcast(&p->pdone);
    }
    pthread_mutex_unlock(&p->pmu);
    return NULL;
}

/* Queues the batches of items[*next..n) into free slots, in order. */
void pr_prep_submit(bl_processor *p, const work *items, size_t n, size_t *next)
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
        s->from_q = w->from_q;
        memcpy(s->uuid, w->uuid, sizeof s->uuid);
        if (w->from_q) {
            s->qgen = w->qgen;
            s->path[0] = '\0';
        }
        if (w->from_q || bl_datadir_batch(p->data_dir, 0, w->uuid, w->enc, s->path) == BL_OK) {
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
pslot *pr_prep_wait(bl_processor *p, size_t i)
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

void pr_prep_release(bl_processor *p, pslot *s)
{
    pthread_mutex_lock(&p->pmu);
    s->state = PS_FREE;
    pthread_mutex_unlock(&p->pmu);
}

/* Drops every queued or prepared slot (the transaction ended early or
 * normally); waits for the ones being prepared. */
void pr_prep_drain(bl_processor *p)
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
