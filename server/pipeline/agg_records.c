/*
 * agg_records.c — a batch's partial aggregate in one pass over its records,
 * without call trees (bl_agg_part_records, see aggregate.h; the rest of the
 * module is aggregate.c).
 *
 * Per record: an enter finds its call's path from the open parent's frame
 * (the parent's last child tried first, then the lookup table) and pushes a
 * frame; an exit pops it and adds the call to its path's pending figures,
 * which go to the path's stat when a call's hour is not the stat's and at
 * the end of the thread. Paths and stats are numbered in the order this
 * walk makes them; at the end of each thread its new ones are ranked by
 * the exit index of their last call, descending — the order in which
 * bl_agg_part_build's backwards walk over the exit-ordered calls meets them
 * — and the batch's arrays are permuted into that order, parents staying
 * before their children. Anything the one pass does not take (see
 * aggregate.h) returns BL_EFORMAT before the partial is used.
 */
#include "pipeline/aggregate.h"

#include <stdlib.h>
#include <string.h>

#include "pipeline/agg_internal.h"

/* The hour of the last call (hours rarely change inside a batch). */
typedef struct hour_cache {
    int64_t lo, hi; /* [lo, hi) */
    uint64_t ix;    /* lo / BL_HOUR_US */
} hour_cache;

/* What one thread's walk needs besides p. */
typedef struct pwalk {
    uint32_t t;          /* the thread's index in the batch */
    uint32_t main;
    size_t path0, st0;   /* paths and stats made by earlier threads */
    int64_t origin;
    hour_cache h;
} pwalk;

/* Adds path pp's pending figures to its stat and its own sums. */
static inline void part_flush(bl_agg_part *p, const pwalk *w, bl_agg_ppath *pp)
{
    if (!pp->pend_calls)
        return;
    bl_agg_pstat *s = &p->st[pp->stat];
    s->count += pp->pend_count;
    s->total += pp->pend_total;
    s->self += pp->pend_self;
    s->max = pp->pend_max > s->max ? pp->pend_max : s->max;
    /* made by this thread: where the backwards walk meets it (the pending
     * calls are this thread's, the last of them at pp->ord) */
    if (pp->stat >= w->st0 && pp->ord >= s->bk_off)
        s->bk_off = pp->ord;
    pp->count += pp->pend_count;
    pp->total += pp->pend_total;
    pp->self += pp->pend_self;
    pp->pend_calls = 0;
    pp->pend_count = pp->pend_total = pp->pend_self = pp->pend_max = 0;
}

/* Adds one finished call of path pi (the ex-th call of the thread to exit)
 * to its path's pending figures — when the call's hour is not that of the
 * path's stat, the pending figures go to that stat first and the path
 * takes the call's stat — so that, flushed, path and stat get what
 * bl_agg_part_build's walk adds to them.
 * flags: 0, or BL_CALL_INCOMPLETE / BL_CALL_CONTINUES for a call open at
 * the end. Room for its time in p->vals was made by the caller. BL_ENOMEM. */
static inline bl_err part_call(bl_agg_part *p, pwalk *w, uint32_t pi, uint64_t start,
                               uint64_t incl, uint64_t self, uint32_t flags, uint32_t ex)
{
    bl_err err;
    bl_agg_ppath *pp = &p->path[pi];
    int64_t at = w->origin + (int64_t)start;
    if (at < w->h.lo || at >= w->h.hi) {
        w->h.ix = (uint64_t)(at / BL_HOUR_US);
        w->h.lo = (int64_t)w->h.ix * BL_HOUR_US;
        w->h.hi = w->h.lo + BL_HOUR_US;
    }
    uint32_t si = pp->stat;
    if (si == UINT32_MAX || pp->stat_hour != (uint32_t)w->h.ix) {
        if (si != UINT32_MAX)
            part_flush(p, w, pp);
        uint64_t skey = w->h.ix << 25 | pp->key2;
        if ((err = agg_stat_slot(p, skey, &si)))
            return err;
        pp->stat = si;
        pp->stat_hour = (uint32_t)w->h.ix;
    }
    /* a call that goes on in a later segment: only its self time */
    uint64_t one = (flags & BL_CALL_CONTINUES) ? 0 : 1;
    incl &= 0 - one;
    pp->pend_calls++;
    pp->pend_count += one;
    pp->pend_total += incl;
    pp->pend_self += self;
    pp->pend_max = incl > pp->pend_max ? incl : pp->pend_max;
    pp->ord = ex;
    if (__builtin_expect(flags != 0, 0)) { /* its exit is missing */
        bl_agg_pstat *s = &p->st[si];
        s->unknown_records++;
        s->n_continues += (flags & BL_CALL_CONTINUES) != 0;
    }
    p->vals[p->n_vals] = (uint64_t)si << BL_AGG_VAL_US_BITS | incl;
    p->n_vals += one;
    return BL_OK;
}

/* perm[i] for the n entries from `from` whose keys (ord << 32 | i, ords
 * distinct and at most max_ord) are in p->sortk: their final indexes
 * from..from + n - 1, latest ord first. A radix sort of the ords, a byte a
 * pass (two for a thread of up to 65,536 calls); p->sortk2 holds n. */
static void rank(bl_agg_part *p, uint32_t *perm, size_t from, size_t n, uint32_t max_ord)
{
    uint64_t *a = p->sortk, *b = p->sortk2;
    for (unsigned sh = 0; sh < 32 && (max_ord >> sh) != 0; sh += 8) {
        size_t cnt[256] = { 0 };
        for (size_t i = 0; i < n; i++)
            cnt[(a[i] >> (32 + sh)) & 255]++;
        size_t acc = 0;
        for (unsigned d = 0; d < 256; d++) {
            size_t c = cnt[d];
            cnt[d] = acc;
            acc += c;
        }
        for (size_t i = 0; i < n; i++)
            b[cnt[(a[i] >> (32 + sh)) & 255]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    for (size_t r = 0; r < n; r++) /* ascending: read from the end */
        perm[(uint32_t)a[n - 1 - r]] = (uint32_t)(from + r);
}

/* One thread's records into p. BL_EFORMAT: a record the one pass does not
 * take (see aggregate.h); BL_ENOMEM. */
static bl_err part_thread(bl_agg_part *p, const bl_batch_thread *th, pwalk *w)
{
    bl_err err;
    uint32_t n = th->n_records;
    w->path0 = p->n_path;
    w->st0 = p->n_st;
    p->n_tl = 0;
    if (n == 0)
        return BL_OK;
    /* every exit matches an open call: at most n / 2 of them */
    if ((err = agg_reserve((void **)&p->vals, &p->cap_vals, p->n_vals + n / 2 + 1, sizeof *p->vals)) ||
        (err = agg_reserve((void **)&p->fr, &p->cap_fr, 64, sizeof *p->fr)))
        return err;
    bl_agg_pframe *fr = p->fr; /* fr[d]: open call d (1 = outermost); fr[0] the root */
    fr[0] = (bl_agg_pframe){ .mid = UINT32_MAX }; /* roots: no last child */
    uint32_t sd = 0, ex = 0, t = w->t;
    uint32_t main = w->main;
    uint64_t prev = bl_rec_time(bl_rec_load(th->records, 0));
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = bl_rec_load(th->records, (size_t)i);
        uint64_t now = bl_rec_time(r);
        if (now < prev)
            return BL_EFORMAT;
        prev = now;
        uint32_t m = bl_rec_method(r);
        if (bl_rec_is_exit(r)) {
            bl_agg_pframe *f = &fr[sd];
            if (f->mid != m) /* the root's matches no methodId */
                return BL_EFORMAT;
            uint64_t incl = now - f->start;
            fr[sd - 1].kids += incl;
            if ((err = part_call(p, w, f->path1 - 1, f->start, incl, incl - f->kids, 0, ex++)))
                return err;
            sd--;
            continue;
        }
        if (sd >= BL_CALLTREE_MAX_DEPTH)
            return BL_EFORMAT;
        if (sd + 2 > p->cap_fr) {
            if ((err = agg_reserve((void **)&p->fr, &p->cap_fr, (size_t)sd + 2, sizeof *p->fr)))
                return err;
            fr = p->fr;
        }
        /* its path: (the open parent's path, methodId, main); a parent calls
         * the same child again and again (loops): the child it had last is
         * tried before hashing */
        uint32_t parent1 = fr[sd].path1;
        uint32_t key2 = m << 1 | main;
        uint32_t pi, lc = fr[sd].last_child;
        bl_agg_ppath *pp;
        if (lc && p->path[lc - 1].key2 == key2) {
            pi = lc - 1;
            pp = &p->path[pi];
        } else {
            if ((err = agg_ptab_room(p)) ||
                (err = agg_reserve((void **)&p->path, &p->cap_path, p->n_path + 1, sizeof *p->path)) ||
                (err = agg_reserve((void **)&p->tl, &p->cap_tl, p->n_path + 1, sizeof *p->tl)))
                return err;
            int fresh;
            struct bl_agg_pslot *sl = agg_ptab_get(p, (uint64_t)parent1 << 32 | key2, &fresh);
            if (fresh)
                sl->val = (uint32_t)p->n_path;
            pi = sl->val;
            if (parent1) {
                p->path[parent1 - 1].last_child = pi + 1;
                fr[sd].last_child = pi + 1;
            }
            pp = &p->path[pi];
            if (fresh) {
                p->max_mid = m > p->max_mid ? m : p->max_mid;
                agg_path_new(p, pp, parent1, key2, t);
                p->tl[p->n_tl++] = pi; /* (room: at most one entry a path) */
            }
        }
        if (pp->last_thread != t) {
            pp->last_thread = t;
            pp->n_threads++;
            p->tl[p->n_tl++] = pi;
        }
        bl_agg_pframe *nf = &fr[++sd];
        nf->mid = m;
        nf->path1 = pi + 1;
        nf->start = now;
        nf->kids = 0;
        nf->last_child = pp->last_child;
    }
    /* calls still open close at the last timestamp, innermost first */
    uint32_t flag = th->continues ? BL_CALL_CONTINUES : BL_CALL_INCOMPLETE;
    if ((err = agg_reserve((void **)&p->vals, &p->cap_vals, p->n_vals + sd, sizeof *p->vals)))
        return err;
    for (; sd > 0; sd--) {
        bl_agg_pframe *f = &fr[sd];
        uint64_t incl = prev - f->start;
        fr[sd - 1].kids += incl;
        if ((err = part_call(p, w, f->path1 - 1, f->start, incl, incl - f->kids, flag, ex++)))
            return err;
    }
    p->n_calls += ex;
    /* the pending figures of every path the thread called */
    for (size_t k = 0; k < p->n_tl; k++)
        part_flush(p, w, &p->path[p->tl[k]]);
    p->n_tl = 0;
    /* the order bl_agg_part_build makes this thread's new paths and stats
     * in: the backwards walk meets first the one whose last call exited
     * last */
    size_t np = p->n_path - w->path0, ns = p->n_st - w->st0;
    if ((err = agg_reserve((void **)&p->sortk, &p->cap_sortk, np > ns ? np : ns, sizeof *p->sortk)) ||
        (err = agg_reserve((void **)&p->sortk2, &p->cap_sortk2, np > ns ? np : ns,
                       sizeof *p->sortk2)) ||
        (err = agg_reserve((void **)&p->perm_path, &p->cap_perm_path, p->n_path,
                       sizeof *p->perm_path)) ||
        (err = agg_reserve((void **)&p->perm_st, &p->cap_perm_st, p->n_st, sizeof *p->perm_st)))
        return err;
    for (size_t i = 0; i < np; i++)
        p->sortk[i] = (uint64_t)p->path[w->path0 + i].ord << 32 | (w->path0 + i);
    rank(p, p->perm_path, w->path0, np, ex - 1);
    for (size_t i = 0; i < ns; i++)
        p->sortk[i] = (uint64_t)p->st[w->st0 + i].bk_off << 32 | (w->st0 + i);
    rank(p, p->perm_st, w->st0, ns, ex - 1);
    return BL_OK;
}

/* A new build of p: counters zeroed, the lookup table emptied. */
static void part_reset(bl_agg_part *p, int64_t origin)
{
    p->ok = 0;
    p->n_st = p->n_vals = p->n_path = 0;
    p->n_calls = 0;
    p->malformed = 0;
    p->max_mid = 0;
    p->origin = origin;
}

bl_err bl_agg_part_records(bl_agg_part *p, const bl_batch *bt, int64_t origin)
{
    part_reset(p, origin);
    if (origin < BL_AGG_ORIGIN_MIN || origin > BL_AGG_ORIGIN_MAX)
        return BL_EINVAL;
    for (uint32_t t = 0; t < bt->n_threads; t++)
        if (bt->threads[t].truncated || bt->threads[t].n_carried)
            return BL_EFORMAT; /* lost enters, windowed self times: the trees' way */
    /* a new generation frees every slot; at the wrap (0 is what a fresh
     * slot holds) the table is cleared instead */
    if (++p->tab_gen == 0) {
        if (p->tab)
            memset(p->tab, 0, p->tab_cap * sizeof *p->tab);
        p->tab_gen = 1;
    }
    bl_err err;
    pwalk w = { .origin = origin };
    for (uint32_t t = 0; t < bt->n_threads; t++) {
        w.t = t;
        w.main = bt->threads[t].main != 0;
        if ((err = part_thread(p, &bt->threads[t], &w)))
            return err;
    }
    /* stats and paths into their final order (parents stay before their
     * children: a parent's path meets the walk before any child's) */
    if ((err = agg_reserve((void **)&p->st2, &p->cap_st2, p->n_st, sizeof *p->st2)) ||
        (err = agg_reserve((void **)&p->path2, &p->cap_path2, p->n_path, sizeof *p->path2)))
        return err;
    for (size_t i = 0; i < p->n_st; i++)
        p->st2[p->perm_st[i]] = p->st[i];
    for (size_t i = 0; i < p->n_path; i++) {
        bl_agg_ppath *d = &p->path2[p->perm_path[i]];
        *d = p->path[i];
        d->parent1 = d->parent1 ? p->perm_path[d->parent1 - 1] + 1 : 0;
    }
    bl_agg_pstat *ts = p->st;
    p->st = p->st2;
    p->st2 = ts;
    size_t tc = p->cap_st;
    p->cap_st = p->cap_st2;
    p->cap_st2 = tc;
    bl_agg_ppath *tp = p->path;
    p->path = p->path2;
    p->path2 = tp;
    tc = p->cap_path;
    p->cap_path = p->cap_path2;
    p->cap_path2 = tc;
    if ((err = agg_part_buckets(p, p->perm_st)))
        return err;
    p->ok = 1;
    return BL_OK;
}
