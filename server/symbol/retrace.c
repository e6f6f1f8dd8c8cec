/*
 * retrace.c — stack-trace retracing over a bl_mapindex (rules in retrace.h):
 * the retracer, its lookups, and the frame rules.
 *
 * Per frame: select candidate inline groups in the method bucket, expand
 * each group into frames (innermost first), apply rewriteFrame / outline /
 * synthesized rules, merge identical alternatives and sort them; the text
 * side (retrace_text.c) reads the line and prints the result.
 * A retracer reuses its arrays between frames: no allocation once warm.
 */
#include "symbol/retrace_impl.h"

#include "symbol/mapping.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define MAX_SPAN_EXPANSION 32 /* alternatives for an original span N:M */
#define MAX_ALTERNATIVES 64   /* alternatives printed for one frame */
#define MEMO_MAX (1u << 18)   /* lookups remembered per retracer, at most */
#define RANGE_INDEX_MIN 24    /* buckets of this many entries get a range index */
#define RANGE_RECS_MAX (1u << 20) /* range records per retracer, at most */

/* n zeroed entries, 64-byte aligned (free with free), or NULL. */
static lk_ent *lk_alloc(uint32_t n)
{
    lk_ent *v = aligned_alloc(64, (size_t)n * sizeof *v);
    if (v)
        memset(v, 0, (size_t)n * sizeof *v);
    return v;
}

bl_err bl_retracer_new(const bl_mapindex *mi, const bl_retrace_opts *opts, bl_retracer **out)
{
    bl_retracer *rt = calloc(1, sizeof *rt);
    *out = NULL;
    if (!rt)
        return BL_ENOMEM;
    rt->mi = mi;
    if (opts)
        rt->o = *opts;
    bl_buf_init(&rt->names, 1 << 24);
    bl_buf_init(&rt->keys, (size_t)1 << 30);
    bl_buf_init(&rt->files, FILES_MAX);
    rt->carry = -1;
    *out = rt;
    return BL_OK;
}

void bl_retracer_expect(bl_retracer *rt, uint32_t n)
{
    if (rt->memo || n < 1024)
        return;
    if (n > MEMO_MAX)
        n = MEMO_MAX;
    uint32_t cap = 1024;
    while (cap < n + n / 2)
        cap *= 2;
    memo_ent *t = bl_zalloc(cap, sizeof *t);
    if (!t)
        return; /* only a hint: the memo grows as it fills */
    rt->memo = t;
    rt->memo_mask = cap - 1;
}

void bl_retracer_free(bl_retracer *rt)
{
    if (!rt)
        return;
    free(rt->fr);
    free(rt->fr_file);
    free(rt->fr_cls);
    free(rt->alt);
    free(rt->fr2);
    free(rt->order);
    bl_buf_cleanup(&rt->names);
    bl_buf_cleanup(&rt->keys);
    bl_buf_cleanup(&rt->files);
    free(rt->memo);
    free(rt->oc);
    free(rt->ri);
    free(rt->rr);
    free(rt->hits);
    free(rt);
}

/* R8's inference: the outer class's simple name; with frame extension
 * none or "kt" a name ending in "Kt" loses it and gets ".kt"; with "kt"
 * any other name gets ".kt"; else ".java". */
static size_t infer_file(const char *cls, size_t n, int ext_kind, char *buf, size_t cap)
{
    size_t s = n; /* after the last '.' (0: none), found from the end */
    while (s > 0 && cls[s - 1] != '.')
        s--;
    size_t e = s;
    while (e < n && (cls[e] != '$' || e == s))
        e++;
    const char *ext = ext_kind == EXT_KT ? ".kt" : ".java";
    if (ext_kind != EXT_OTHER && e - s > 2 && cls[e - 2] == 'K' && cls[e - 1] == 't') {
        e -= 2;
        ext = ".kt";
    }
    size_t el = strlen(ext);
    if (cap == 0)
        return 0;
    size_t len = e - s;
    if (len + el + 1 > cap)
        len = cap > el + 1 ? cap - el - 1 : 0;
    memcpy(buf, cls + s, len);
    memcpy(buf + len, ext, el < cap - len ? el : cap - len - 1);
    size_t total = len + (el < cap - len ? el : cap - len - 1);
    buf[total] = '\0';
    return total;
}

size_t bl_retrace_infer_file(const char *cls, size_t n, char *buf, size_t cap)
{
    return infer_file(cls, n, EXT_NONE, buf, cap);
}

/* ------------------------------------------------------------------------ */

static bl_err push_frame(bl_retracer *rt, const bl_rframe *f)
{
    if (rt->nfr == rt->capfr) {
        uint32_t nc = rt->capfr ? rt->capfr * 2 : 64;
        if (nc > (1u << 20))
            return BL_ETOOBIG;
        bl_rframe *a = realloc(rt->fr, nc * sizeof *a);
        if (!a)
            return BL_ENOMEM;
        rt->fr = a;
        uint32_t *b = realloc(rt->fr_file, nc * sizeof *b);
        if (!b)
            return BL_ENOMEM;
        rt->fr_file = b;
        fr_class *k = realloc(rt->fr_cls, nc * sizeof *k);
        if (!k)
            return BL_ENOMEM;
        rt->fr_cls = k;
        bl_rframe *a2 = realloc(rt->fr2, nc * sizeof *a2);
        if (!a2)
            return BL_ENOMEM;
        rt->fr2 = a2;
        rt->capfr = nc;
    }
    rt->fr_file[rt->nfr] = 0;
    rt->fr[rt->nfr++] = *f;
    return BL_OK;
}

static bl_err begin_alt(bl_retracer *rt)
{
    if (rt->nalt + 2 > rt->capalt) {
        uint32_t nc = rt->capalt ? rt->capalt * 2 : 16;
        uint32_t *a = realloc(rt->alt, nc * sizeof *a);
        if (!a)
            return BL_ENOMEM;
        rt->alt = a;
        uint32_t *o = realloc(rt->order, nc * sizeof *o);
        if (!o)
            return BL_ENOMEM;
        rt->order = o;
        rt->capalt = nc;
    }
    rt->alt[rt->nalt++] = rt->nfr;
    return BL_OK;
}

/* Original line of entry m for minified line L (-1: none), see retrace.h. */
static int64_t map_line(const bl_mi_method *m, int64_t L)
{
    unsigned kind = BL_MIM_ORIG_KIND(m->flags);
    int matched = (m->flags & BL_MIM_HAS_MIN) && L >= 0 && (uint64_t)L >= m->min_start &&
                  (uint64_t)L <= m->min_end;
    if (kind == BL_ORIG_NONE)
        return L > 0 ? L : -1;
    if (kind == BL_ORIG_LINE || m->orig_start == m->orig_end)
        return m->orig_start ? (int64_t)m->orig_start : -1;
    if (m->orig_start == 0 && m->orig_end == 0)
        return -1;
    if (!matched)
        return -1;
    uint32_t ospan = m->orig_end - m->orig_start, mspan = m->min_end - m->min_start;
    if (mspan == 0)
        return -1; /* one minified line, several original ones: unknown */
    int64_t v = (int64_t)m->orig_start + (L - (int64_t)m->min_start);
    if (ospan != mspan && v > (int64_t)m->orig_end)
        v = m->orig_end;
    return v;
}

/* Looks up the class record for an original class name (source file and
 * synthesized flag), remembering answers: a trace names the same classes
 * again and again, and each fresh lookup is a few cache misses. *ep gets
 * the remembered entry (valid until the next call), or NULL. */
static const bl_mi_class *orig_class(bl_retracer *rt, const char *cls, uint32_t n,
                                     orig_ent **ep)
{
    *ep = NULL;
    if (rt->oc) {
        uintptr_t k = (uintptr_t)cls;
        for (uint32_t j = (uint32_t)((k >> 3) * 0x9E3779B1u) & rt->oc_mask;;
             j = (j + 1) & rt->oc_mask) {
            if (rt->oc[j].key == cls && rt->oc[j].n == n) {
                *ep = &rt->oc[j];
                return rt->oc[j].c;
            }
            if (!rt->oc[j].key)
                break;
        }
    }
    const bl_mi_class *c = bl_mapindex_class_by_orig(rt->mi, cls, n);
    if (rt->oc_n >= MEMO_MAX)
        return c;
    if (!rt->oc || (rt->oc_n + 1) * 2 > rt->oc_mask + 1) {
        uint32_t cap = rt->oc ? (rt->oc_mask + 1) * 2 : 1024;
        orig_ent *t = bl_zalloc(cap, sizeof *t);
        if (!t)
            return c; /* remembering is only an optimisation */
        for (uint32_t i = 0; rt->oc && i <= rt->oc_mask; i++) {
            if (!rt->oc[i].key)
                continue;
            uint32_t j = (uint32_t)(((uintptr_t)rt->oc[i].key >> 3) * 0x9E3779B1u) & (cap - 1);
            while (t[j].key)
                j = (j + 1) & (cap - 1);
            t[j] = rt->oc[i];
        }
        free(rt->oc);
        rt->oc = t;
        rt->oc_mask = cap - 1;
        rt->oc_gen++;
    }
    uint32_t j = (uint32_t)(((uintptr_t)cls >> 3) * 0x9E3779B1u) & rt->oc_mask;
    while (rt->oc[j].key)
        j = (j + 1) & rt->oc_mask;
    rt->oc[j].key = cls;
    rt->oc[j].n = n;
    rt->oc[j].file = rt->oc[j].file_n = 0;
    rt->oc[j].c = c;
    rt->oc_n++;
    *ep = &rt->oc[j];
    return c;
}

/* The hash of a frame's (class, method) key; never 0. */
static uint64_t frame_key_hash(const char *cls, size_t cls_n, const char *method,
                               size_t method_n)
{
    return XXH3_64bits_withSeed(method, method_n, XXH3_64bits(cls, cls_n)) | 1;
}

bl_err bl_retrace_lookups_new(const bl_mapindex *mi, uint32_t n, bl_retrace_lookups **out)
{
    *out = NULL;
    if (!mi || n < 1 || n > (1u << 22))
        return BL_EINVAL;
    bl_retrace_lookups *lk = calloc(1, sizeof *lk);
    if (!lk)
        return BL_ENOMEM;
    lk->v = lk_alloc(n);
    if (!lk->v) {
        free(lk);
        return BL_ENOMEM;
    }
    lk->mi = mi;
    lk->n = n;
    *out = lk;
    return BL_OK;
}

/* Resolves (cls, method) into e (whose state the caller owns). */
void bl_rt_lk_fill(const bl_mapindex *mi, lk_ent *e, const char *cls, size_t cn,
                   const char *method, size_t mn)
{
    e->c = bl_mapindex_class_by_obf(mi, cls, cn);
    e->b = NULL;
    e->n = e->c ? bl_mapindex_methods(mi, e->c, method, mn, &e->b) : 0;
    e->cls = cls;
    e->method = method;
    e->cls_n = (uint32_t)cn;
    e->method_n = (uint32_t)mn;
    if (cn + mn <= LK_INLINE) {
        memcpy(e->key, cls, cn);
        memcpy(e->key + cn, method, mn);
    }
    e->h = frame_key_hash(cls, cn, method, mn);
}

void bl_retrace_lookups_resolve(bl_retrace_lookups *lk, uint32_t i, const char *cls, size_t cn,
                                const char *method, size_t mn)
{
    if (!lk || lk->sealed || i >= lk->n || cn > UINT32_MAX / 4 || mn > UINT32_MAX / 4)
        return; /* left out: looked up by each retracer as usual */
    lk_ent *e = &lk->v[i];
    bl_rt_lk_fill(lk->mi, e, cls, cn, method, mn);
    atomic_store_explicit(&e->state, LK_READY, memory_order_release);
}

/* The slot of key (h, cls, method) in a sealed table, or NULL. */
static const lk_ent *lk_find(const bl_retrace_lookups *lk, uint64_t h, const char *cls,
                             size_t cls_n, const char *method, size_t method_n)
{
    for (uint32_t j = (uint32_t)h & lk->mask;; j = (j + 1) & lk->mask) {
        const lk_ent *e = &lk->tab[j];
        if (!e->h)
            return NULL;
        if (e->h == h && lk_is(e, cls, cls_n, method, method_n))
            return e;
    }
}

bl_err bl_retrace_lookups_seal(bl_retrace_lookups *lk)
{
    if (!lk)
        return BL_EINVAL;
    if (lk->sealed)
        return BL_OK;
    uint32_t ready = 0; /* the table holds the names resolved so far */
    for (uint32_t i = 0; i < lk->n; i++)
        ready += atomic_load_explicit(&lk->v[i].state, memory_order_acquire) == LK_READY;
    uint32_t cap = 16;
    while (cap < ready + ready / 2)
        cap *= 2;
    lk_ent *t = lk_alloc(cap);
    if (!t)
        return BL_ENOMEM;
    lk->tab = t;
    lk->mask = cap - 1;
    for (uint32_t i = 0; i < lk->n; i++) {
        const lk_ent *e = &lk->v[i];
        if (atomic_load_explicit(&e->state, memory_order_acquire) != LK_READY ||
            lk_find(lk, e->h, e->cls, e->cls_n, e->method, e->method_n))
            continue; /* never resolved, or a name given twice */
        uint32_t j = (uint32_t)e->h & lk->mask;
        while (t[j].h)
            j = (j + 1) & lk->mask;
        lk_ent *d = &t[j];
        d->h = e->h;
        d->cls = e->cls;
        d->method = e->method;
        d->c = e->c;
        d->b = e->b;
        d->cls_n = e->cls_n;
        d->method_n = e->method_n;
        d->n = e->n;
        memcpy(d->key, e->key, sizeof d->key);
    }
    lk->sealed = 1;
    return BL_OK;
}

void bl_retrace_lookups_free(bl_retrace_lookups *lk)
{
    if (!lk)
        return;
    free(lk->v);
    free(lk->tab);
    free(lk);
}

void bl_retracer_use_lookups(bl_retracer *rt, const bl_retrace_lookups *lk)
{
    /* only a sealed table over the retracer's own index is of use */
    rt->lk = lk && lk->sealed && lk->mi == rt->mi ? (bl_retrace_lookups *)lk : NULL;
}

uint64_t bl_retracer_resolved(const bl_retracer *rt)
{
    return rt->resolved;
}

uint64_t bl_retracer_filled(const bl_retracer *rt)
{
    return rt->filled;
}

/* Class record and method bucket for an obfuscated frame (class, method):
 * from the shared lookups when given (bl_retracer_use_lookups), else
 * remembered per retracer (bounded by MEMO_MAX): a big trace repeats its
 * frames, and a fresh lookup costs several dependent cache misses. */
static uint32_t frame_lookup(bl_retracer *rt, const char *cls, size_t cls_n, const char *method,
                             size_t method_n, const bl_mi_class **cp, const bl_mi_method **bp)
{
    uint64_t h = frame_key_hash(cls, cls_n, method, method_n);
    if (rt->lk) {
        const lk_ent *e = lk_find(rt->lk, h, cls, cls_n, method, method_n);
        if (e) {
            *cp = e->c;
            *bp = e->b;
            return e->n;
        }
    }
    if (rt->memo) {
        for (uint32_t j = (uint32_t)h & rt->memo_mask;; j = (j + 1) & rt->memo_mask) {
            const memo_ent *m = &rt->memo[j];
            if (!m->h)
                break;
            if (m->h == h && m->cls_n == cls_n && m->method_n == method_n &&
                !memcmp(rt->keys.data + m->key, cls, cls_n) &&
                !memcmp(rt->keys.data + m->key + cls_n, method, method_n)) {
                *cp = m->c;
                *bp = m->b;
                return m->n;
            }
        }
    }
    rt->resolved++;
    const bl_mi_class *c = bl_mapindex_class_by_obf(rt->mi, cls, cls_n);
    const bl_mi_method *b = NULL;
    uint32_t n = c ? bl_mapindex_methods(rt->mi, c, method, method_n, &b) : 0;
    *cp = c;
    *bp = b;
    if (rt->memo_n >= MEMO_MAX || cls_n > UINT32_MAX / 4 || method_n > UINT32_MAX / 4)
        return n;
    if (!rt->memo || (rt->memo_n + 1) * 2 > rt->memo_mask + 1) {
        uint32_t cap = rt->memo ? (rt->memo_mask + 1) * 2 : 1024;
        memo_ent *t = bl_zalloc(cap, sizeof *t);
        if (!t)
            return n; /* remembering is only an optimisation */
        for (uint32_t i = 0; rt->memo && i <= rt->memo_mask; i++) {
            if (!rt->memo[i].h)
                continue;
            uint32_t j = (uint32_t)rt->memo[i].h & (cap - 1);
            while (t[j].h)
                j = (j + 1) & (cap - 1);
            t[j] = rt->memo[i];
        }
        free(rt->memo);
        rt->memo = t;
        rt->memo_mask = cap - 1;
    }
    size_t at = rt->keys.len;
    if (at > UINT32_MAX - cls_n - method_n || bl_buf_append(&rt->keys, cls, cls_n) ||
        bl_buf_append(&rt->keys, method, method_n)) {
        rt->keys.len = at;
        return n;
    }
    uint32_t j = (uint32_t)h & rt->memo_mask;
    while (rt->memo[j].h)
        j = (j + 1) & rt->memo_mask;
    memo_ent *m = &rt->memo[j];
    m->h = h;
    m->key = (uint32_t)at;
    m->cls_n = (uint32_t)cls_n;
    m->method_n = (uint32_t)method_n;
    m->n = n;
    m->c = c;
    m->b = b;
    rt->memo_n++;
    return n;
}

static bl_err add_entry_frame(bl_retracer *rt, const bl_mi_method *m, int64_t line)
{
    bl_rframe f;
    f.cls = bl_mapindex_str(rt->mi, m->orig_class);
    f.cls_n = bl_mapindex_strlen(rt->mi, m->orig_class);
    f.method = bl_mapindex_str(rt->mi, m->orig_name);
    f.method_n = bl_mapindex_strlen(rt->mi, m->orig_name);
    f.file = NULL;
    f.file_n = 0;
    f.line = line;
    f.m = m;
    return push_frame(rt, &f);
}

/* Group boundaries: [i, *end) starting at i. */
static uint32_t group_end(const bl_mi_method *b, uint32_t n, uint32_t i)
{
    uint32_t j = i;
    while (j + 1 < n && !(b[j].flags & BL_MIM_OUTER) && !(b[j + 1].flags & BL_MIM_GROUP_START))
        j++;
    return j + 1;
}

/* Whether record x sorts before y: by range start, then group. */
static int rng_before(const rng_rec *x, const rng_rec *y)
{
    return x->lo < y->lo || (x->lo == y->lo && x->gs < y->gs);
}

static void rng_sort(rng_rec *v, uint32_t n)
{
    /* a bottom-up merge sort would need scratch; buckets are at most a few
     * thousand groups and mostly in order already: insertion sort with a
     * binary search for the place, then one move */
    for (uint32_t i = 1; i < n; i++) {
        if (!rng_before(&v[i], &v[i - 1]))
            continue;
        rng_rec x = v[i];
        uint32_t lo = 0, hi = i;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (rng_before(&x, &v[mid]))
                hi = mid;
            else
                lo = mid + 1;
        }
        memmove(v + lo + 1, v + lo, (i - lo) * sizeof *v);
        v[lo] = x;
    }
}

/* The range index of bucket b[0..n) (built at its first use), or NULL when
 * there is none (a small bucket, or past RANGE_RECS_MAX, or out of memory:
 * the caller then walks the bucket). *nr gets the record count, *nomin the
 * first entry without a minified range (n: none). */
static const rng_rec *bucket_ranges(bl_retracer *rt, const bl_mi_method *b, uint32_t n,
                                    uint32_t *nr, uint32_t *nomin)
{
    if (n < RANGE_INDEX_MIN)
        return NULL;
    uintptr_t k = (uintptr_t)b;
    if (rt->ri) {
        for (uint32_t j = (uint32_t)((k >> 4) * 0x9E3779B1u) & rt->ri_mask;;
             j = (j + 1) & rt->ri_mask) {
            if (rt->ri[j].b == b) {
                *nr = rt->ri[j].n;
                *nomin = rt->ri[j].nomin;
                return rt->rr + rt->ri[j].first;
            }
            if (!rt->ri[j].b)
                break;
        }
    }
    if (n > RANGE_RECS_MAX - rt->rr_n)
        return NULL;
    if (!rt->ri || (rt->ri_n + 1) * 2 > rt->ri_mask + 1) {
        uint32_t cap = rt->ri ? (rt->ri_mask + 1) * 2 : 256;
        rng_ent *t = bl_zalloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (uint32_t i = 0; rt->ri && i <= rt->ri_mask; i++) {
            if (!rt->ri[i].b)
                continue;
            uint32_t j = (uint32_t)(((uintptr_t)rt->ri[i].b >> 4) * 0x9E3779B1u) & (cap - 1);
            while (t[j].b)
                j = (j + 1) & (cap - 1);
            t[j] = rt->ri[i];
        }
        free(rt->ri);
        rt->ri = t;
        rt->ri_mask = cap - 1;
    }
    if (rt->rr_n + n > rt->rr_cap) {
        uint32_t cap = rt->rr_cap ? rt->rr_cap : 1024;
        while (cap < rt->rr_n + n)
            cap *= 2;
        rng_rec *v = realloc(rt->rr, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        rt->rr = v;
        rt->rr_cap = cap;
    }
    rng_rec *v = rt->rr + rt->rr_n;
    uint32_t m = 0, first_nomin = n;
    for (uint32_t i = 0; i < n; i++)
        if (!(b[i].flags & BL_MIM_HAS_MIN)) {
            first_nomin = i;
            break;
        }
    for (uint32_t i = 0; i < n;) {
        uint32_t e = group_end(b, n, i);
        if (b[i].flags & BL_MIM_HAS_MIN) {
            v[m].lo = b[i].min_start;
            v[m].hi = b[i].min_end;
            v[m].gs = i;
            v[m].ge = e;
            m++;
        }
        i = e;
    }
    rng_sort(v, m);
    for (uint32_t i = 0; i < m; i++)
        v[i].maxhi = i && v[i - 1].maxhi > v[i].hi ? v[i - 1].maxhi : v[i].hi;
    uint32_t j = (uint32_t)((k >> 4) * 0x9E3779B1u) & rt->ri_mask;
    while (rt->ri[j].b)
        j = (j + 1) & rt->ri_mask;
    rt->ri[j].b = b;
    rt->ri[j].first = rt->rr_n;
    rt->ri[j].n = m;
    rt->ri[j].nomin = first_nomin;
    rt->ri_n++;
    rt->rr_n += m;
    *nr = m;
    *nomin = first_nomin;
    return v;
}

/* The groups (start index, in bucket order) of the range index v[0..nr)
 * whose minified range holds L, into rt->hits; their count, or -1 when out
 * of memory. */
static int64_t range_hits(bl_retracer *rt, const rng_rec *v, uint32_t nr, int64_t L)
{
    uint32_t lo = 0, hi = nr;
    while (lo < hi) { /* the first record starting after L */
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)v[mid].lo > L)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t nh = 0;
    for (uint32_t i = lo; i-- > 0 && (int64_t)v[i].maxhi >= L;) {
        if ((int64_t)v[i].hi < L)
            continue;
        if (nh == rt->hits_cap) {
            uint32_t cap = rt->hits_cap ? rt->hits_cap * 2 : 64;
            uint32_t *t = realloc(rt->hits, (size_t)cap * sizeof *t);
            if (!t)
                return -1;
            rt->hits = t;
            rt->hits_cap = cap;
        }
        uint32_t x = v[i].gs, j = nh++;
        for (; j > 0 && rt->hits[j - 1] > x; j--) /* kept in bucket order */
            rt->hits[j] = rt->hits[j - 1];
        rt->hits[j] = x;
    }
    return nh;
}

static int group_has_min_containing(const bl_mi_method *m, int64_t L)
{
    return (m->flags & BL_MIM_HAS_MIN) && L >= 0 && (uint64_t)L >= m->min_start &&
           (uint64_t)L <= m->min_end;
}

/* Finds the call-site line for outline position `pos` in the groups of the
 * bucket containing L. Returns -1 when none says. */
static int64_t callsite_line(bl_retracer *rt, const bl_mi_method *b, uint32_t n, int64_t L,
                             int64_t pos)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!(b[i].flags & BL_MIM_CALLSITE) || !group_has_min_containing(&b[i], L))
            continue;
        uint64_t nw;
        const uint32_t *x = bl_mapindex_extras(rt->mi, &b[i], &nw);
        if (!x || nw < 1)
            continue;
        uint64_t np = x[0];
        if (np > (nw - 1) / 2)
            continue;
        for (uint64_t k = 0; k < np; k++)
            if ((int64_t)x[1 + 2 * k] == pos)
                return x[2 + 2 * k];
    }
    return -1;
}

/* Number of inner frames to remove by rewriteFrame rules of group [s, e). */
static uint32_t rewrite_remove(bl_retracer *rt, const bl_mi_method *b, uint32_t s, uint32_t e)
{
    uint32_t remove = 0;
    for (uint32_t i = s; i < e; i++) {
        if (!(b[i].flags & BL_MIM_REWRITE))
            continue;
        uint64_t nw;
        const uint32_t *x = bl_mapindex_extras(rt->mi, &b[i], &nw);
        if (!x || nw < 1 || x[0] > (nw - 1) / 2)
            continue;
        uint64_t k = 1 + 2 * (uint64_t)x[0]; /* the outline word */
        if (k + 1 >= nw)
            continue;
        k++;
        uint64_t nr = x[k++];
        for (uint64_t r = 0; r < nr && k + 2 <= nw; r++, k += 2) {
            const char *cls = bl_mapindex_str(rt->mi, x[k]);
            if (x[k] && (!strcmp(cls, rt->exc_obf) || !strcmp(cls, rt->exc_orig)))
                remove += x[k + 1];
        }
    }
    return remove;
}

/* 1 when frame f goes as synthesized; else records its class lookup in k. */
static int frame_synthesized(bl_retracer *rt, const bl_rframe *f, fr_class *k)
{
    if (f->m && (f->m->flags & BL_MIM_SYNTH))
        return 1;
    orig_ent *e;
    const bl_mi_class *c = orig_class(rt, f->cls, f->cls_n, &e);
    if (c && (c->flags & BL_MIC_SYNTH))
        return 1;
    k->c = c;
    k->slot1 = e ? (uint32_t)(e - rt->oc) + 1 : 0;
    k->gen = rt->oc_gen;
    return 0;
}

/* Ends the current alternative: applies rewriteFrame / synthesized rules,
 * drops it when empty or equal to an earlier one. */
static bl_err end_alt(bl_retracer *rt, uint32_t remove_inner, int is_outline)
{
    uint32_t s = rt->alt[rt->nalt - 1];
    /* rewriteFrame: drop the innermost frames */
    if (remove_inner) {
        uint32_t n = rt->nfr - s;
        uint32_t r = remove_inner < n ? remove_inner : n;
        memmove(rt->fr + s, rt->fr + s + r, (n - r) * sizeof *rt->fr);
        rt->nfr -= r;
    }
    /* outline: the outline method's own frame (outermost) goes */
    if (is_outline && rt->nfr > s)
        rt->nfr--;
    /* synthesized frames go */
    uint32_t w = s;
    for (uint32_t i = s; i < rt->nfr; i++)
        if (!frame_synthesized(rt, &rt->fr[i], &rt->fr_cls[w]))
            rt->fr[w++] = rt->fr[i];
    rt->nfr = w;
    uint32_t n = rt->nfr - s;
    int drop = n == 0;
    /* R8 keeps the first alternative of each top (innermost) frame: same
     * class (so file), method name (verbose: signature) and — when the
     * input frame has a line, or verbose — line; the rest of a later one
     * goes with it */
    int by_line = rt->o.verbose || rt->in_line > 0;
    for (uint32_t k = 0; k + 1 < rt->nalt && !drop; k++) {
        const bl_rframe *x = &rt->fr[rt->alt[k]], *y = &rt->fr[s];
        drop = by_line ? same_frame(rt->mi, x, y, rt->o.verbose)
                       : same_frame_no_line(rt->mi, x, y, rt->o.verbose);
    }
    if (drop) {
        rt->nfr = s;
        rt->nalt--;
    }
    return BL_OK;
}

/* One alternative from the frames of group [s, e): the innermost frame at
 * line `top` (-2: its own mapped line), the others at their mapped lines. */
static bl_err emit_alt(bl_retracer *rt, const bl_mi_method *b, uint32_t s, uint32_t e,
                       int64_t L, int no_line, int64_t top)
{
    bl_err err = begin_alt(rt);
    for (uint32_t i = s; i < e && !err; i++)
        err = add_entry_frame(rt, &b[i],
                              no_line ? -1 : (i == s && top != -2) ? top : map_line(&b[i], L));
    if (err)
        return err;
    uint32_t rm = rt->after_exc ? rewrite_remove(rt, b, s, e) : 0;
    return end_alt(rt, rm, (b[e - 1].flags & BL_MIM_OUTLINE) != 0);
}

/* Whether the alternative that emit_group(outer_only, no_line) makes of a
 * group whose outermost entry is m would be dropped as a repeat: its one
 * frame (without a line) names what the top frame of a kept alternative
 * names — end_alt's test, all of them being without a line then. Such a
 * group is not built at all: of a big bucket's groups most repeat a method
 * listed already (about 1.5 M candidates built and dropped on the
 * 100,000-frame benchmark). Whatever else end_alt would do to the one
 * frame (synthesized, outline, rewriteFrame) only drops it too. */
static int outer_repeats(const bl_retracer *rt, const bl_mi_method *m)
{
    bl_rframe f;
    f.cls = bl_mapindex_str(rt->mi, m->orig_class);
    f.cls_n = bl_mapindex_strlen(rt->mi, m->orig_class);
    f.method = bl_mapindex_str(rt->mi, m->orig_name);
    f.method_n = bl_mapindex_strlen(rt->mi, m->orig_name);
    f.m = m;
    for (uint32_t k = 0; k < rt->nalt; k++)
        if (same_names(rt->mi, &rt->fr[rt->alt[k]], &f, rt->o.verbose))
            return 1;
    return 0;
}

/* R8: an original range of several lines that does not span like the
 * minified range (or has none) cannot say which line: the result names
 * each line of it. */
static int span_ambiguous(const bl_mi_method *m)
{
    if (BL_MIM_ORIG_KIND(m->flags) != BL_ORIG_RANGE || m->orig_end <= m->orig_start ||
        m->orig_start == 0)
        return 0;
    return !(m->flags & BL_MIM_HAS_MIN) ||
           m->min_end - m->min_start != m->orig_end - m->orig_start;
}

static bl_err emit_group(bl_retracer *rt, const bl_mi_method *b, uint32_t s, uint32_t e,
                         int64_t L, int outer_only, int no_line)
{
    if (outer_only)
        s = e - 1;
    if (b[e - 1].flags & BL_MIM_OUTLINE)
        rt->carry = L;
    if (no_line || L <= 0 || !span_ambiguous(&b[s]))
        return emit_alt(rt, b, s, e, L, no_line, -2);
    /* one alternative per original line of the innermost frame (bounded) */
    uint32_t last = b[s].orig_end;
    if (last - b[s].orig_start >= MAX_SPAN_EXPANSION)
        last = b[s].orig_start + MAX_SPAN_EXPANSION - 1;
    bl_err err = BL_OK;
    for (uint32_t k = b[s].orig_start; k <= last && !err && rt->nalt < MAX_ALTERNATIVES; k++)
        err = emit_alt(rt, b, s, e, L, 0, k);
    return err;
}

/* Resolves file names of all frames into rt->names and sets pointers. */
static bl_err resolve_files(bl_retracer *rt, int ext_kind)
{
    bl_buf_reset(&rt->names);
    for (uint32_t i = 0; i < rt->nfr; i++) {
        bl_rframe *f = &rt->fr[i];
        const fr_class *k = &rt->fr_cls[i];
        orig_ent *e = NULL;
        const bl_mi_class *c = k->c;
        if (k->slot1 && k->gen == rt->oc_gen)
            e = &rt->oc[k->slot1 - 1];
        else if (k->slot1) /* the memo grew since: look again */
            c = orig_class(rt, f->cls, f->cls_n, &e);
        if (c && c->source_file) {
            f->file = bl_mapindex_str(rt->mi, c->source_file);
            f->file_n = bl_mapindex_strlen(rt->mi, c->source_file);
            continue;
        }
        if (ext_kind != EXT_NONE)
            e = NULL; /* the memo holds names inferred for frames without one */
        if (e && e->file) { /* inferred before */
            rt->fr_file[i] = FILE_MEMO | e->file;
            f->file_n = e->file_n;
            continue;
        }
        char tmp[512];
        size_t n = infer_file(f->cls, f->cls_n, ext_kind, tmp, sizeof tmp);
        f->file_n = (uint32_t)n;
        size_t at = rt->files.len;
        if (e && bl_buf_append(&rt->files, tmp, n + 1) == BL_OK) {
            e->file = (uint32_t)at + 1;
            e->file_n = (uint32_t)n;
            rt->fr_file[i] = FILE_MEMO | e->file;
            continue;
        }
        rt->files.len = at; /* remembering is only an optimisation */
        rt->fr_file[i] = (uint32_t)rt->names.len + 1;
        bl_err err = bl_buf_append(&rt->names, tmp, n + 1);
        if (err)
            return err;
    }
    for (uint32_t i = 0; i < rt->nfr; i++) {
        uint32_t v = rt->fr_file[i];
        if (v & FILE_MEMO)
            rt->fr[i].file = rt->files.data + (v & ~FILE_MEMO) - 1;
        else if (v)
            rt->fr[i].file = rt->names.data + v - 1;
    }
    return BL_OK;
}

/* Compares byte strings as Java's String.compareTo does for them. */
static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c)
        return c;
    return an < bn ? -1 : an > bn;
}

/* R8's order of parameter lists: by count, then type by type. */
static int cmp_params(const char *a, const char *b)
{
    size_t na = *a ? 1 : 0, nb = *b ? 1 : 0;
    for (const char *p = a; *p; p++)
        na += *p == ',';
    for (const char *p = b; *p; p++)
        nb += *p == ',';
    if (na != nb)
        return na < nb ? -1 : 1;
    while (*a || *b) {
        size_t la = strcspn(a, ","), lb = strcspn(b, ",");
        int c = cmp_bytes(a, la, b, lb);
        if (c)
            return c;
        a += la + (a[la] == ',');
        b += lb + (b[lb] == ',');
    }
    return 0;
}

/* R8's order of alternatives (RetraceStackTraceElementProxy): by the top
 * frame's class, method name, then a frame without a mapping entry (class
 * only) before one with, return type, parameter types, file, then line
 * (none first). */
static int cmp_top(const bl_retracer *rt, const bl_rframe *x, const bl_rframe *y)
{
    int c = cmp_bytes(x->cls, x->cls_n, y->cls, y->cls_n);
    if (!c)
        c = cmp_bytes(x->method, x->method_n, y->method, y->method_n);
    if (!c && (!x->m) != (!y->m))
        c = !x->m ? -1 : 1;
    if (!c && x->m && y->m) {
        const char *rx = bl_mapindex_str(rt->mi, x->m->ret), *ry = bl_mapindex_str(rt->mi, y->m->ret);
        c = cmp_bytes(rx, strlen(rx), ry, strlen(ry));
        if (!c)
            c = cmp_params(bl_mapindex_str(rt->mi, x->m->params),
                           bl_mapindex_str(rt->mi, y->m->params));
    }
    if (!c && x->file && y->file)
        c = cmp_bytes(x->file, x->file_n, y->file, y->file_n);
    if (!c && x->line != y->line)
        c = x->line < y->line ? -1 : 1; /* -1 (none) first */
    return c;
}

/* Sorts the alternatives (stable) with cmp_top; frames are moved. */
static void sort_alts(bl_retracer *rt)
{
    uint32_t n = rt->nalt;
    for (uint32_t i = 0; i < n; i++)
        rt->order[i] = i;
    int moved = 0;
    for (uint32_t i = 1; i < n; i++) {
        uint32_t v = rt->order[i], j = i;
        while (j > 0 && cmp_top(rt, &rt->fr[rt->alt[rt->order[j - 1]]], &rt->fr[rt->alt[v]]) > 0) {
            rt->order[j] = rt->order[j - 1];
            j--;
            moved = 1;
        }
        rt->order[j] = v;
    }
    if (!moved)
        return;
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = rt->order[i], s = rt->alt[a], e = rt->alt[a + 1];
        memcpy(rt->fr2 + w, rt->fr + s, (e - s) * sizeof *rt->fr);
        w += e - s;
    }
    memcpy(rt->fr, rt->fr2, w * sizeof *rt->fr);
    w = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = rt->order[i], len = rt->alt[a + 1] - rt->alt[a];
        rt->order[i] = len;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = rt->order[i];
        rt->alt[i] = w;
        w += len;
    }
    rt->alt[n] = w;
}

bl_err bl_rt_retrace_frame(bl_retracer *rt, const char *cls, size_t cls_n, const char *method,
                           size_t method_n, int64_t line, int ext_kind, const lk_ent *pre,
                           const bl_rframe **frames, const uint32_t **alt_start,
                           uint32_t *n_alts, int *known_class)
{
    bl_err err = BL_OK;
    rt->nfr = 0;
    rt->nalt = 0;
    int64_t carry = rt->carry;
    rt->carry = -1;
    rt->in_line = line;
    *frames = NULL;
    *alt_start = NULL;
    *n_alts = 0;
    *known_class = 0;
    const bl_mi_class *c;
    const bl_mi_method *b;
    uint32_t n;
    if (pre) { /* resolved for this very name (bl_retracer_frame_line) */
        c = pre->c;
        b = pre->b;
        n = pre->n;
    } else {
        n = frame_lookup(rt, cls, cls_n, method, method_n, &c, &b);
    }
    if (!c) {
        rt->after_exc = 0;
        return BL_OK;
    }
    *known_class = 1;
    int64_t L = line > 0 ? line : 0;
    if (n && carry >= 0 && L > 0) {
        int64_t nl = callsite_line(rt, b, n, L, carry);
        if (nl >= 0)
            L = nl;
    }
    /* found: groups used; amb: the result is ambiguous as R8 says (several
     * groups, or a used range whose original span cannot be told) */
    uint32_t found = 0;
    int amb = 0;
    if (n) {
        /* 1. groups whose minified range contains L (L == 0: 0:0, 0:N),
         * in bucket order; found through the range index of a big bucket */
        uint32_t nr, nomin = 0;
        const rng_rec *rv = bucket_ranges(rt, b, n, &nr, &nomin);
        int64_t nh = rv ? range_hits(rt, rv, nr, L) : -1;
        if (nh >= 0) {
            for (int64_t h = 0; h < nh && !err && rt->nalt < MAX_ALTERNATIVES; h++) {
                uint32_t i = rt->hits[h], e = group_end(b, n, i);
                found++;
                for (uint32_t k = i; k < e; k++)
                    amb |= span_ambiguous(&b[k]);
                err = emit_group(rt, b, i, e, L, 0, 0);
            }
        }
        for (uint32_t i = 0; nh < 0 && i < n && !err && rt->nalt < MAX_ALTERNATIVES;) {
            uint32_t e = group_end(b, n, i);
            if (group_has_min_containing(&b[i], L)) {
                found++;
                for (uint32_t k = i; k < e; k++)
                    amb |= span_ambiguous(&b[k]);
                err = emit_group(rt, b, i, e, L, 0, 0);
            }
            i = e;
        }
        /* 2. entries without a minified range */
        uint32_t had_range_match = found;
        for (uint32_t i = nomin; i < n && !had_range_match && !err && rt->nalt < MAX_ALTERNATIVES;
             i++) {
            if (b[i].flags & BL_MIM_HAS_MIN)
                continue;
            found++;
            amb |= span_ambiguous(&b[i]);
            /* an original span N:M gives one alternative per line (emit_group) */
            err = emit_group(rt, b, i, i + 1, L, 0, 0);
        }
        /* 3. no line, only ranges without 0: every distinct outermost
         * method, without a line (see retrace.h) */
        if (!found && L == 0) {
            for (uint32_t i = 0; i < n && !err && rt->nalt < MAX_ALTERNATIVES;) {
                uint32_t e = group_end(b, n, i);
                found++;
                if (!outer_repeats(rt, &b[e - 1]))
                    err = emit_group(rt, b, i, e, 0, 1, 1);
                else if (b[e - 1].flags & BL_MIM_OUTLINE)
                    rt->carry = 0; /* as emit_group would set it */
                i = e;
            }
        }
        amb |= found > 1;
    }
    if (!err && !found) {
        /* class-only: original class, obfuscated method name, line kept */
        bl_rframe f = { bl_mapindex_str(rt->mi, c->orig), bl_mapindex_strlen(rt->mi, c->orig),
                        method, (uint32_t)method_n, NULL, 0, line > 0 ? line : -1, NULL };
        if (!(err = begin_alt(rt)) && !(err = push_frame(rt, &f)))
            err = end_alt(rt, 0, 0);
    }
    rt->after_exc = 0;
    if (err)
        return err;
    if ((err = resolve_files(rt, ext_kind)))
        return err;
    rt->alt[rt->nalt] = rt->nfr;
    if (rt->nalt > 1)
        sort_alts(rt);
    /* R8: a frame without a line (":0" is a line) whose result is
     * ambiguous prints no line at all (not verbose); lines that became
     * equal merge when printed */
    if (amb && line < 0 && !rt->o.verbose)
        for (uint32_t i = 0; i < rt->nfr; i++)
            rt->fr[i].line = -1;
    *frames = rt->fr;
    *alt_start = rt->alt;
    *n_alts = rt->nalt;
    return BL_OK;
}

bl_err bl_retracer_frame(bl_retracer *rt, const char *cls, size_t cls_n, const char *method,
                         size_t method_n, int64_t line, const bl_rframe **frames,
                         const uint32_t **alt_start, uint32_t *n_alts, int *known_class)
{
    return bl_rt_retrace_frame(rt, cls, cls_n, method, method_n, line, EXT_NONE, NULL, frames,
                               alt_start, n_alts, known_class);
}
