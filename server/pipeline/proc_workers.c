/*
 * proc_workers.c — the prep workers and the checkpointer (see
 * proc_internal.h).
 */
#include "pipeline/proc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


void pr_record_latency(bl_processor *p, double t_enq, double now)
{
    static const double le[6] = { 0.010, 0.050, 0.100, 0.500, 1.0, 5.0 };
    double d = now - t_enq;
    for (int i = 0; i < 6; i++)
        if (d <= le[i])
            p->st.lat_bucket[i]++;
    p->st.lat_bucket[6]++;
    p->st.lat_sum_s += d;
}

/* ---- checkpointer ---- */

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
        pthread_mutex_unlock(&p->pmu);
        if (bl_db_checkpoint(p->ck_db))
            pr_log("checkpoint failed: %s", bl_db_errmsg(p->ck_db));
        pthread_mutex_lock(&p->pmu);
    }
    pthread_mutex_unlock(&p->pmu);
    return NULL;
}

/* A transaction committed: the checkpointer copies it into the database. */
void pr_ck_wake(bl_processor *p)
{
    if (!p->ck_started)
        return;
    pthread_mutex_lock(&p->pmu);
    p->ck_due = 1;
    pthread_cond_signal(&p->ck_cv);
    pthread_mutex_unlock(&p->pmu);
}

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
        bl_prep_file(&s->job, s->path, s->enc, cap, s->check);
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
