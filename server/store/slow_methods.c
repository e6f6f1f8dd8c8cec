/*
 * slow_methods.c — the slow-methods query (see slow_methods.h).
 *
 * Fast path (store/rollups.h): rows per method identity ("sig") come, in
 * sig order, from rollup_totals when the selected hours cover all of the
 * scope's (build's or app's) data — one row per sig with its percentiles
 * precomputed, no sketch read; else, for an app, from rollup_days for
 * the whole days inside the range plus rollup_hours for the hours at its
 * edges (ranged(), in two passes, below), and for a build from its
 * method_stats hours. Each sig's rows are merged into one dense sketch (agg/sketch.h: the same buckets, hence the same
 * percentiles, as merging every method_stats row), and a heap keeps the best
 * `limit` groups; names are read only for groups that enter it. Memory:
 * one dense sketch (30 KiB) and `limit` rows.
 *
 * Reference path (bl_slow_methods_scan, and the fast path's answer while the
 * app's rollups are marked or being rebuilt): one SQL statement over method_stats. Sort and
 * limit happen in SQL (ORDER BY … LIMIT keeps only `limit` rows while the
 * groups stream by); the percentile sorts compute each group's quantile from
 * its merged sketch (store/sqlfuncs.h), clamped to the exact max as the row
 * is. PostgreSQL has no sketch functions: there the reference selects the
 * rows ordered by group and merges each group's sketches here (scan_pg),
 * with the same sketch code, order and cut, so the answer is the same.
 *
 * Both engines run the same SQL (store/stmt.h) except where noted: SQLite's
 * INDEXED BY and unary-plus index hints, and the scan.
 */
#include "store/slow_methods.h"
#include "store/stmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/sketch.h"

#define SLOW_SQL(key)                                                                          \
    "SELECT m.class, m.name, m.descriptor, m.source_file, sum(s.count) AS cnt, "              \
    "sum(s.total_us) AS tot, sum(s.self_us) AS slf, max(s.max_us) AS mx, "                     \
    "sketch_union(s.sketch) AS sk "                                                            \
    "FROM method_stats s JOIN methods m ON m.id = s.method "                                   \
    "JOIN builds b ON b.id = s.build_id "                                                      \
    "WHERE b.app_id = ?1 AND (?2 IS NULL OR b.name = ?2) AND (?3 = 0 OR s.main = 1) "          \
    "AND s.hour + 3600000000 > ?4 AND s.hour < ?5 "                                            \
    "GROUP BY m.class, m.name, m.descriptor, m.source_file "                                   \
    /* rows of calls still running when their batch ended carry only self                      \
     * time (schema/batch-format.md, "Segments"): a method is listed once a                    \
     * call of it has finished */                                                              \
    "HAVING cnt > 0 "                                                                          \
    "ORDER BY " key " DESC, tot DESC, m.class, m.name, m.descriptor, m.source_file LIMIT ?6"

/* indexed by bl_slow_sort */
static const char *const slow_sql[BL_SLOW_SORTS] = {
    SLOW_SQL("min(sketch_quantile(sk, 0.5), mx)"),
    SLOW_SQL("min(sketch_quantile(sk, 0.9), mx)"),
    SLOW_SQL("min(sketch_quantile(sk, 0.99), mx)"),
    SLOW_SQL("cnt"),
    SLOW_SQL("tot"),
    SLOW_SQL("slf"),
    SLOW_SQL("mx"),
};

static bl_err scan_pg(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx);

bl_err bl_slow_methods_scan(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx)
{
    if ((unsigned)q->sort >= BL_SLOW_SORTS)
        return BL_EINVAL;
    if (bl_db_is_pg(db))
        return q->limit == 0 ? BL_OK : scan_pg(db, q, cb, ctx);
    bl_st *st = bl_st_get(db, slow_sql[q->sort]);
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, q->app_id);
    if (q->build)
        bl_st_text(st, 2, q->build, -1);
    bl_st_int64(st, 3, q->main_only ? 1 : 0);
    bl_st_int64(st, 4, q->since_us);
    bl_st_int64(st, 5, q->until_us);
    bl_st_int64(st, 6, q->limit);
    int rc;
    bl_sketch sk;
    bl_sketch_init(&sk);
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        bl_sketch_reset(&sk);
        const void *blob = bl_st_col_blob(st, 8);
        size_t bn = bl_st_col_bytes(st, 8);
        if (blob && bl_sketch_merge_blob(&sk, blob, bn) != BL_OK)
            continue;
        bl_slow_row row;
        row.max_us = (uint64_t)bl_st_col_int64(st, 7);
        /* a bucket midpoint can sit above the exact max: clamp */
        uint64_t q50 = bl_sketch_quantile(&sk, 0.50), q90 = bl_sketch_quantile(&sk, 0.90),
                 q99 = bl_sketch_quantile(&sk, 0.99);
        row.p50_us = q50 < row.max_us ? q50 : row.max_us;
        row.p90_us = q90 < row.max_us ? q90 : row.max_us;
        row.p99_us = q99 < row.max_us ? q99 : row.max_us;
        row.cls = bl_st_col_text(st, 0);
        row.name = bl_st_col_text(st, 1);
        row.descriptor = bl_st_col_text(st, 2);
        row.source_file = bl_st_col_text(st, 3);
        row.count = bl_st_col_int64(st, 4);
        row.total_us = bl_st_col_int64(st, 5);
        row.self_us = bl_st_col_int64(st, 6);
        if (cb(&row, ctx) != 0) {
            rc = BL_ST_DONE;
            break;
        }
    }
    bl_st_reset(st);
    bl_sketch_cleanup(&sk);
    return rc == BL_ST_DONE ? BL_OK : BL_EIO;
}

/* ---- fast path ------------------------------------------------------------ */

#define HOUR_US 3600000000ll
#define DAY_US 86400000000ll

/* sources of (sig, count, total_us, self_us, max_us, sketch), by sig */
/* one row per sig, its percentiles precomputed (q3): no sketch is read */
static const char totals_sql[] =
    "SELECT sig, count, total_us, self_us, max_us, q3 FROM rollup_totals "
    "WHERE scope = ?1 AND main = ?2 ORDER BY sig";
/* a build's hours: its primary-key range (+s.hour keeps SQLite off the
 * hour index, which holds every build's rows) */
static const char build_hours_sql[] =
    "SELECT m.sig, s.count, s.total_us, s.self_us, s.max_us, s.sketch "
    "FROM method_stats s JOIN methods m ON m.id = s.method "
    "WHERE ?1 IS NOT NULL AND (?2 = 0 OR s.main = 1) AND s.build_id = ?5 "
    "AND +s.hour >= ?3 AND +s.hour < ?4 ORDER BY m.sig";
/* PostgreSQL: no hint (its planner takes the primary key for build_id and
 * hour), and ?1's type said */
static const char build_hours_pg[] =
    "SELECT m.sig, s.count, s.total_us, s.self_us, s.max_us, s.sketch "
    "FROM method_stats s JOIN methods m ON m.id = s.method "
    "WHERE CAST(?1 AS bigint) IS NOT NULL AND (?2 = 0 OR s.main = 1) AND s.build_id = ?5 "
    "AND s.hour >= ?3 AND s.hour < ?4 ORDER BY m.sig";

typedef struct src {
    bl_st *st;
    int live; /* a row is waiting */
} src;

/* one group in the heap; names owned */
typedef struct ent {
    int64_t sig;
    bl_slow_row r;
    char *cls, *name, *desc, *file;
} ent;

/* the best `cap` groups (SIZE_MAX: all of them); e holds `alloc` entries:
 * cap when bounded (allocated by the caller), grown by keep() when not.
 *
 * Deferred names (PostgreSQL, where each lookup is a round trip): offer()
 * keeps every group without names in `pend` and the `cap` best sort keys
 * in `keys` (a min-heap, for ranged()'s stop rule); finish() then sorts
 * pend by figures and reads the names of the best ones and of those tied
 * with them in one statement per round (usually one), into the heap. */
typedef struct topk {
    ent *e;
    size_t n, cap;
    bl_slow_sort sort;
    size_t alloc;
    int defer;
    ent *pend; /* offered groups, names NULL (owned) */
    size_t n_pend, a_pend;
    int64_t *keys; /* up to cap sort keys, the smallest at 0 (owned) */
    size_t n_keys;
    int missing; /* a group's names were not found: answer again without defer */
} topk;

static uint64_t key_of(const bl_slow_row *r, bl_slow_sort s)
{
    switch (s) {
    case BL_SLOW_P50: return r->p50_us;
    case BL_SLOW_P90: return r->p90_us;
    case BL_SLOW_P99: return r->p99_us;
    case BL_SLOW_COUNT: return (uint64_t)r->count;
    case BL_SLOW_TOTAL: return (uint64_t)r->total_us;
    case BL_SLOW_SELF: return (uint64_t)r->self_us;
    default: return r->max_us;
    }
}

/* Integers compare as SQLite does (signed); sums may be negative only on a
 * corrupt store, and the answer then still matches the reference. */
static int cmp_i64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

/* > 0 when a ranks before b on the figures alone (sort key, then total,
 * both descending); 0 on a tie */
static int cmp_fig(const topk *t, const ent *a, const ent *b)
{
    int c = cmp_i64((int64_t)key_of(&a->r, t->sort), (int64_t)key_of(&b->r, t->sort));
    return c ? c : cmp_i64(a->r.total_us, b->r.total_us);
}

/* > 0 when a ranks before b: figures, then class, name, descriptor, source
 * file ascending (byte order), then sig */
static int cmp_ent(const topk *t, const ent *a, const ent *b)
{
    int c = cmp_fig(t, a, b);
    if (c)
        return c;
    if ((c = strcmp(a->cls, b->cls)) || (c = strcmp(a->name, b->name)) ||
        (c = strcmp(a->desc, b->desc)) || (c = strcmp(a->file, b->file)))
        return -c;
    return -cmp_i64(a->sig, b->sig);
}

static void ent_free(ent *e)
{
    free(e->cls);
    free(e->name);
    free(e->desc);
    free(e->file);
}

/* the heap's root is its worst entry */
static void sift_down(topk *t, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < t->n && cmp_ent(t, &t->e[l], &t->e[w]) < 0)
            w = l;
        if (r < t->n && cmp_ent(t, &t->e[r], &t->e[w]) < 0)
            w = r;
        if (w == i)
            return;
        ent x = t->e[i];
        t->e[i] = t->e[w];
        t->e[w] = x;
        i = w;
    }
}

static void sift_up(topk *t, size_t i)
{
    while (i) {
        size_t p = (i - 1) / 2;
        if (cmp_ent(t, &t->e[i], &t->e[p]) >= 0)
            return;
        ent x = t->e[i];
        t->e[i] = t->e[p];
        t->e[p] = x;
        i = p;
    }
}

static char *dup_col(bl_st *st, int i)
{
    const char *s = (const char *)bl_st_col_text(st, i);
    return strdup(s ? s : "");
}

/* Reads the names of e->sig. BL_ENOTFOUND when the sig is gone. */
static bl_err load_names(bl_db *db, ent *e)
{
    bl_st *st = bl_st_get(
        db, "SELECT class, name, descriptor, source_file FROM method_sigs WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, e->sig);
    int rc = bl_st_step(st);
    bl_err err = BL_OK;
    if (rc == BL_ST_ROW) {
        e->cls = dup_col(st, 0);
        e->name = dup_col(st, 1);
        e->desc = dup_col(st, 2);
        e->file = dup_col(st, 3);
        if (!e->cls || !e->name || !e->desc || !e->file)
            err = BL_ENOMEM;
    } else {
        err = rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
    }
    bl_st_reset(st);
    if (err)
        ent_free(e);
    return err;
}

/* Puts a named group into the heap (capacity t->cap > 0) when it ranks
 * among the best; the heap owns its names from then on, else they are
 * freed. BL_ENOMEM (names freed) when an unbounded heap cannot grow. */
static bl_err keep(topk *t, ent *e)
{
    if (t->n < t->cap) {
        if (t->n == t->alloc) {
            size_t na = t->alloc ? 2 * t->alloc : 64;
            ent *ne = na < SIZE_MAX / sizeof *ne ? realloc(t->e, na * sizeof *ne) : NULL;
            if (!ne) {
                ent_free(e);
                return BL_ENOMEM;
            }
            t->e = ne;
            t->alloc = na;
        }
        t->e[t->n++] = *e;
        sift_up(t, t->n - 1);
    } else if (cmp_ent(t, e, &t->e[0]) > 0) {
        ent_free(&t->e[0]);
        t->e[0] = *e;
        sift_down(t, 0);
    } else {
        ent_free(e);
    }
    return BL_OK;
}

/* Offers a finished group to the heap (capacity t->cap > 0). */
/* 1 and *w = the sort key of the cap-th best group offered so far when
 * cap groups were offered (a group whose key is below it cannot enter) */
static int topk_worst(const topk *t, int64_t *w)
{
    if (t->defer) {
        if (t->n_keys < t->cap)
            return 0;
        *w = t->keys[0];
        return 1;
    }
    if (t->n < t->cap)
        return 0;
    *w = (int64_t)key_of(&t->e[0].r, t->sort);
    return 1;
}

/* deferred offer: e (no names) to pend, its key to keys */
static bl_err defer_offer(topk *t, const ent *e)
{
    int64_t k = (int64_t)key_of(&e->r, t->sort), w;
    if (topk_worst(t, &w) && k < w)
        return BL_OK; /* cap groups rank above it */
    if (t->n_pend == t->a_pend) {
        size_t na = t->a_pend ? 2 * t->a_pend : 256;
        ent *np = na < SIZE_MAX / sizeof *np ? realloc(t->pend, na * sizeof *np) : NULL;
        if (!np)
            return BL_ENOMEM;
        t->pend = np;
        t->a_pend = na;
    }
    t->pend[t->n_pend++] = *e;
    if (!t->keys && !(t->keys = malloc(t->cap * sizeof *t->keys)))
        return BL_ENOMEM;
    size_t i;
    if (t->n_keys < t->cap) {
        i = t->n_keys++;
        while (i && t->keys[(i - 1) / 2] > k) { /* sift up */
            t->keys[i] = t->keys[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        t->keys[i] = k;
    } else if (k > t->keys[0]) {
        i = 0; /* replace the smallest, sift down */
        for (;;) {
            size_t l = 2 * i + 1, r = l + 1, m = i;
            int64_t mv = k;
            if (l < t->n_keys && t->keys[l] < mv)
                m = l, mv = t->keys[l];
            if (r < t->n_keys && t->keys[r] < mv)
                m = r;
            if (m == i)
                break;
            t->keys[i] = t->keys[m];
            i = m;
        }
        t->keys[i] = k;
    }
    return BL_OK;
}

static bl_err offer(bl_db *db, topk *t, ent *e)
{
    if (t->defer)
        return defer_offer(t, e);
    if (t->n == t->cap && cmp_fig(t, e, &t->e[0]) < 0)
        return BL_OK; /* worse than the worst kept, names or not */
    bl_err err = load_names(db, e);
    if (err == BL_ENOTFOUND)
        return BL_OK;
    if (err)
        return err;
    return keep(t, e);
}


/* deferred names: pend sorted by figures, best first (qsort has no
 * context argument) */
static _Thread_local const topk *cmp_topk;

static int cmp_pend_fig(const void *a, const void *b)
{
    return cmp_fig(cmp_topk, b, a);
}

static int cmp_pend_sig(const void *a, const void *b)
{
    return cmp_i64(((const ent *)a)->sig, ((const ent *)b)->sig);
}

/* names of the sigs of pend[0..n), by id (PostgreSQL) */
static const char names_pg_sql[] =
    "SELECT id, class, name, descriptor, source_file FROM method_sigs "
    "WHERE id = ANY (CAST(?1 AS bigint[]))";

/* Reads the names of p[0..n) in one statement (p is sorted by sig here)
 * and puts the groups found into the heap; t->missing when one is not
 * found. */
static bl_err names_batch(bl_db *db, topk *t, ent *p, size_t n)
{
    qsort(p, n, sizeof *p, cmp_pend_sig);
    size_t cap = 3 + 21 * n;
    char *arr = malloc(cap), *o = arr;
    if (!arr)
        return BL_ENOMEM;
    *o++ = '{';
    for (size_t i = 0; i < n; i++)
        o += snprintf(o, cap - (size_t)(o - arr), "%s%lld", i ? "," : "", (long long)p[i].sig);
    *o++ = '}';
    *o = 0;
    bl_st *st = bl_st_get(db, names_pg_sql);
    if (!st) {
        free(arr);
        return BL_EIO;
    }
    bl_st_text(st, 1, arr, (int)(o - arr));
    free(arr);
    bl_err err = BL_OK;
    size_t found = 0;
    int rc;
    while (!err && (rc = bl_st_step(st)) == BL_ST_ROW) {
        int64_t id = bl_st_col_int64(st, 0);
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p[mid].sig < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == n || p[lo].sig != id || p[lo].cls)
            continue;
        ent *e = &p[lo];
        e->cls = strdup(bl_st_col_str(st, 1));
        e->name = strdup(bl_st_col_str(st, 2));
        e->desc = strdup(bl_st_col_str(st, 3));
        e->file = strdup(bl_st_col_str(st, 4));
        if (!e->cls || !e->name || !e->desc || !e->file) {
            ent_free(e);
            memset(e, 0, sizeof *e);
            err = BL_ENOMEM;
            break;
        }
        found++;
    }
    if (!err && rc != BL_ST_DONE)
        err = BL_EIO;
    bl_st_reset(st);
    /* into the heap (which owns the names from then on) */
    for (size_t i = 0; i < n; i++) {
        if (!p[i].cls)
            continue;
        ent e = p[i];
        p[i].cls = p[i].name = p[i].desc = p[i].file = NULL;
        if (!err)
            err = keep(t, &e);
        else
            ent_free(&e);
    }
    if (!err && found < n)
        t->missing = 1;
    return err;
}

/* Deferred names: the heap gets the best groups of pend with their names
 * (the best cap by figures and every group tied with the last of them);
 * pend is freed. */
static bl_err resolve(bl_db *db, topk *t)
{
    bl_err err = BL_OK;
    if (t->n_pend && !(t->e = malloc(t->cap * sizeof *t->e)))
        err = BL_ENOMEM;
    t->alloc = t->e ? t->cap : 0;
    if (!err && t->n_pend) {
        cmp_topk = t;
        qsort(t->pend, t->n_pend, sizeof *t->pend, cmp_pend_fig);
        size_t i = 0;
        while (!err && i < t->n_pend && t->n < t->cap && !t->missing) {
            size_t j = i + (t->cap - t->n);
            if (j > t->n_pend)
                j = t->n_pend;
            while (j < t->n_pend && cmp_fig(t, &t->pend[j], &t->pend[j - 1]) == 0)
                j++;
            err = names_batch(db, t, t->pend + i, j - i);
            i = j;
        }
    }
    for (size_t i = 0; i < t->n_pend; i++)
        ent_free(&t->pend[i]);
    free(t->pend);
    free(t->keys);
    t->pend = NULL;
    t->keys = NULL;
    t->n_pend = t->n_keys = 0;
    return err;
}

/* Hands the heap's rows to cb best first (unless err), frees the heap;
 * returns err. With deferred names, reads them first; when one is
 * missing nothing is handed and *again = 1 (the caller answers again
 * without deferring: exactly the groups whose names exist, as offer()
 * keeps them). */
static bl_err emit(topk *t, bl_err err, bl_slow_cb cb, void *ctx);

static bl_err finish(bl_db *db, topk *t, bl_err err, bl_slow_cb cb, void *ctx, int *again)
{
    if (t->defer) {
        bl_err e2 = resolve(db, t);
        if (!err)
            err = e2;
        if (!err && t->missing) {
            *again = 1;
            (void)emit(t, BL_ENOTFOUND, cb, ctx); /* frees, hands nothing */
            return BL_OK;
        }
    }
    return emit(t, err, cb, ctx);
}

/* Hands the heap's rows to cb best first (unless err), frees the heap;
 * returns err. */
static bl_err emit(topk *t, bl_err err, bl_slow_cb cb, void *ctx)
{
    /* heap sort: the worst goes to the end, so the array ends best first */
    size_t kept = t->n;
    while (t->n > 1) {
        ent x = t->e[0];
        t->e[0] = t->e[t->n - 1];
        t->e[t->n - 1] = x;
        t->n--;
        sift_down(t, 0);
    }
    t->n = kept;
    if (!err) {
        for (size_t i = 0; i < t->n; i++) {
            bl_slow_row r = t->e[i].r;
            r.cls = t->e[i].cls;
            r.name = t->e[i].name;
            r.descriptor = t->e[i].desc;
            r.source_file = t->e[i].file;
            if (cb(&r, ctx) != 0)
                break;
        }
    }
    for (size_t i = 0; i < t->n; i++)
        ent_free(&t->e[i]);
    free(t->e);
    return err;
}


/* ---- an app's time range: whole days from rollup_days, hours at the edges
 * from rollup_hours (all builds per hour), in two passes.
 *
 * Pass 1 reads figures only, through the time-major covering indexes
 * rollup_days_figures and rollup_hours_figures (the range's entries and
 * nothing else, no sketch pages): count, µs sums, max and each row's
 * precomputed percentiles (q3, not clamped), merged per sig in a hash
 * table: exact count, sums and max, and for the percentile sorts bounds of
 * the merged percentile — a quantile of merged histograms lies between the
 * smallest and the largest quantile of the parts (at the rank ceil(q·n) of
 * the whole, every part's cumulative count is below its own rank before
 * the smallest part quantile and at or above it from the largest on).
 * Pass 2 takes the groups by descending upper bound (the exact key for the
 * other sorts), merges their day and hour sketches (primary-key ranges of
 * the sig) exactly and offers them to the heap, and stops once the heap is
 * full and the next bound is below its worst key. Memory: about 200 bytes
 * per method of the range (a 64-byte group in the hash table, at most half
 * full, and again in the sorted array), one dense sketch and the heap. */

typedef struct cand {
    int64_t sig, count, total, self;
    uint64_t max, lo, hi; /* lo, hi: bounds of the sort key */
    int bad;              /* a malformed q3: left out, as the reference does */
} cand;

/* figures of the range: ?1 scope, [?3, ?4) days or hours; ?2 the thread
 * kind of the days (2 both, 1 main thread), of the hours (0: both kinds,
 * 0 and 1; 1 main thread) */
static const char days_fig_sql[] =
    "SELECT sig, count, total_us, self_us, max_us, q3 FROM rollup_days "
    "INDEXED BY rollup_days_figures "
    "WHERE scope = ?1 AND main = ?2 AND day >= ?3 AND day < ?4";
static const char hours_fig_sql[] =
    "SELECT sig, count, total_us, self_us, max_us, q3 FROM rollup_hours "
    "INDEXED BY rollup_hours_figures "
    "WHERE scope = ?1 AND main IN (?2, 1) AND hour >= ?3 AND hour < ?4";
/* the same without SQLite's index hint (PostgreSQL) */
static const char days_fig_pg[] =
    "SELECT sig, count, total_us, self_us, max_us, q3 FROM rollup_days "
    "WHERE scope = ?1 AND main = ?2 AND day >= ?3 AND day < ?4";
static const char hours_fig_pg[] =
    "SELECT sig, count, total_us, self_us, max_us, q3 FROM rollup_hours "
    "WHERE scope = ?1 AND main IN (?2, 1) AND hour >= ?3 AND hour < ?4";
/* one sig's sketches: ?1 scope, ?2 sig, [?3, ?4), ?5 thread kind (as
 * above) */
static const char days_sig_sql[] =
    "SELECT sketch FROM rollup_days "
    "WHERE scope = ?1 AND sig = ?2 AND day >= ?3 AND day < ?4 AND main = ?5";
static const char hours_sig_sql[] =
    "SELECT sketch FROM rollup_hours "
    "WHERE scope = ?1 AND sig = ?2 AND hour >= ?3 AND hour < ?4 AND main IN (?5, 1)";

static int quantile_ix(bl_slow_sort s)
{
    return s == BL_SLOW_P50 ? 0 : s == BL_SLOW_P90 ? 1 : s == BL_SLOW_P99 ? 2 : -1;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? 1 : -1;
    return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

/* open addressing by sig (> 0; 0 marks a free slot), capacity a power of 2 */
typedef struct cmap {
    cand *slot;
    size_t n, cap;
} cmap;

static uint64_t mix(int64_t sig)
{
    uint64_t x = (uint64_t)sig * 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

/* The group of sig, created empty when new; NULL when out of memory. */
static cand *cmap_get(cmap *m, int64_t sig)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t nc = m->cap ? 2 * m->cap : 4096;
        cand *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slot[i].sig) {
                size_t j = mix(m->slot[i].sig) & (nc - 1);
                while (ns[j].sig)
                    j = (j + 1) & (nc - 1);
                ns[j] = m->slot[i];
            }
        free(m->slot);
        m->slot = ns;
        m->cap = nc;
    }
    size_t j = mix(sig) & (m->cap - 1);
    while (m->slot[j].sig && m->slot[j].sig != sig)
        j = (j + 1) & (m->cap - 1);
    if (!m->slot[j].sig) {
        m->slot[j] = (cand){ sig, 0, 0, 0, 0, UINT64_MAX, 0, 0 };
        m->n++;
    }
    return &m->slot[j];
}

/* Pass 1 over one statement's rows (bound by the caller). */
static bl_err gather(bl_st *st, int qi, cmap *m)
{
    int rc;
    bl_err err = BL_OK;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        cand *k = cmap_get(m, bl_st_col_int64(st, 0));
        if (!k) {
            err = BL_ENOMEM;
            break;
        }
        int64_t n = bl_st_col_int64(st, 1);
        k->count += n;
        k->total += bl_st_col_int64(st, 2);
        k->self += bl_st_col_int64(st, 3);
        uint64_t mx = (uint64_t)bl_st_col_int64(st, 4);
        k->max = mx > k->max ? mx : k->max;
        if (qi >= 0) {
            const uint8_t *b = bl_st_col_blob(st, 5);
            if (bl_st_col_bytes(st, 5) != 24 || !b) {
                k->bad = 1;
            } else if (n > 0) { /* rows with no finished call hold no value */
                uint64_t v = get_u64(b + 8 * qi);
                k->lo = v < k->lo ? v : k->lo;
                k->hi = v > k->hi ? v : k->hi;
            }
        }
    }
    if (!err && rc != BL_ST_DONE)
        err = BL_EIO;
    bl_st_reset(st);
    return err;
}

/* Merges the sketches of one statement's rows into sk. 1: one is
 * malformed. */
static int merge_sketches(bl_st *st, bl_sketch *sk, bl_err *err)
{
    int rc, bad = 0;
    while ((rc = bl_st_step(st)) == BL_ST_ROW) {
        const void *b = bl_st_col_blob(st, 0);
        bl_err be = b ? bl_sketch_merge_blob(sk, b, bl_st_col_bytes(st, 0)) : BL_OK;
        if (be == BL_ENOMEM) {
            *err = be;
            break;
        }
        bad |= be != BL_OK;
    }
    if (!*err && rc != BL_ST_DONE && rc != BL_ST_ROW)
        *err = BL_EIO;
    bl_st_reset(st);
    return bad;
}

/* [d0, d1): whole days (d0 >= d1: none); edges[0..n_e): hour ranges. */
/* PostgreSQL: the sketches of a batch of sigs (?2, an array), by sig: ?1
 * scope; whole days [?3, ?4) of thread kind ?5; hours [?6, ?7) and
 * [?8, ?9) of kind ?10 (as days_sig_sql and hours_sig_sql; an empty range
 * selects nothing) */
static const char batch_sk_pg[] =
    "SELECT sig, sketch FROM rollup_days WHERE scope = ?1 "
    "AND sig = ANY (CAST(?2 AS bigint[])) AND day >= ?3 AND day < ?4 AND main = ?5 "
    "UNION ALL SELECT sig, sketch FROM rollup_hours WHERE scope = ?1 "
    "AND sig = ANY (CAST(?2 AS bigint[])) AND hour >= ?6 AND hour < ?7 AND main IN (?10, 1) "
    "UNION ALL SELECT sig, sketch FROM rollup_hours WHERE scope = ?1 "
    "AND sig = ANY (CAST(?2 AS bigint[])) AND hour >= ?8 AND hour < ?9 AND main IN (?10, 1) "
    "ORDER BY 1";

static _Thread_local const cand *cmp_cands; /* qsort has no context argument */

static int cmp_ix_sig(const void *a, const void *b)
{
    return cmp_i64(cmp_cands[*(const size_t *)a].sig, cmp_cands[*(const size_t *)b].sig);
}

/* PostgreSQL, pass 2 for c[0..n) at once: res[k] = the clamped p50, p90,
 * p99 of c[k]'s merged sketches, bad[k] = 1 when one is malformed; one
 * statement. */
static bl_err batch_sketches(bl_db *db, int64_t scope, int kind, int64_t d0, int64_t d1,
                             int64_t edges[2][2], int n_e, const cand *c, size_t n,
                             uint64_t (*res)[3], uint8_t *bad, bl_sketch *sk)
{
    size_t *ix = malloc(n * sizeof *ix);
    size_t cap = 3 + 21 * n;
    char *arr = malloc(cap), *o = arr;
    if (!ix || !arr) {
        free(ix);
        free(arr);
        return BL_ENOMEM;
    }
    for (size_t k = 0; k < n; k++)
        ix[k] = k;
    cmp_cands = c;
    qsort(ix, n, sizeof *ix, cmp_ix_sig);
    *o++ = '{';
    for (size_t k = 0; k < n; k++)
        o += snprintf(o, cap - (size_t)(o - arr), "%s%lld", k ? "," : "",
                      (long long)c[ix[k]].sig);
    *o++ = '}';
    *o = 0;
    bl_err err = BL_OK;
    bl_st *st = bl_st_get(db, batch_sk_pg);
    if (!st) {
        err = BL_EIO;
        goto out;
    }
    int64_t e[2][2] = { { 0, 0 }, { 0, 0 } };
    for (int j = 0; j < n_e; j++) {
        e[j][0] = edges[j][0];
        e[j][1] = edges[j][1];
    }
    bl_st_int64(st, 1, scope);
    bl_st_text(st, 2, arr, (int)(o - arr));
    bl_st_int64(st, 3, d0);
    bl_st_int64(st, 4, d1);
    bl_st_int64(st, 5, kind);
    bl_st_int64(st, 6, e[0][0]);
    bl_st_int64(st, 7, e[0][1]);
    bl_st_int64(st, 8, e[1][0]);
    bl_st_int64(st, 9, e[1][1]);
    bl_st_int64(st, 10, kind == 1);
    int rc = bl_st_step(st);
    for (size_t k = 0; k < n && !err; k++) {
        size_t x = ix[k];
        int64_t sig = c[x].sig;
        bl_sketch_reset(sk);
        bad[x] = 0;
        while (rc == BL_ST_ROW && bl_st_col_int64(st, 0) <= sig) {
            const void *b = bl_st_col_blob(st, 1);
            if (b && bl_st_col_int64(st, 0) == sig) {
                bl_err be = bl_sketch_merge_blob(sk, b, bl_st_col_bytes(st, 1));
                if (be == BL_ENOMEM)
                    err = be;
                else if (be)
                    bad[x] = 1;
            }
            rc = bl_st_step(st);
        }
        if (rc != BL_ST_ROW && rc != BL_ST_DONE)
            err = BL_EIO;
        uint64_t q50 = bl_sketch_quantile(sk, 0.50), q90 = bl_sketch_quantile(sk, 0.90),
                 q99 = bl_sketch_quantile(sk, 0.99), mx = c[x].max;
        res[x][0] = q50 < mx ? q50 : mx;
        res[x][1] = q90 < mx ? q90 : mx;
        res[x][2] = q99 < mx ? q99 : mx;
    }
    bl_st_reset(st);
out:
    free(ix);
    free(arr);
    return err;
}

static bl_err ranged(bl_db *db, const bl_slow_query *q, int64_t d0, int64_t d1,
                     int64_t edges[2][2], int n_e, bl_slow_cb cb, void *ctx, int defer,
                     int *again)
{
    int qi = quantile_ix(q->sort);
    int64_t scope = -q->app_id;
    int kind = q->main_only ? 1 : 2;
    cmap m = { NULL, 0, 0 };
    bl_err err = BL_OK;

    /* pass 1 */
    for (int i = -1; i < n_e && !err; i++) {
        int64_t a = i < 0 ? d0 : edges[i][0], b = i < 0 ? d1 : edges[i][1];
        if (a >= b)
            continue;
        bl_st *st = i < 0 ? bl_st_get2(db, days_fig_sql, days_fig_pg)
                          : bl_st_get2(db, hours_fig_sql, hours_fig_pg);
        if (!st) {
            err = BL_EIO;
            break;
        }
        bl_st_stream(st, BL_ST_FETCH_ROWS);
        bl_st_int64(st, 1, scope);
        bl_st_int64(st, 2, i < 0 ? kind : kind == 1);
        bl_st_int64(st, 3, a);
        bl_st_int64(st, 4, b);
        err = gather(st, qi, &m);
    }
    /* the groups listed (a call finished, no malformed q3), by bound */
    cand *c = NULL;
    size_t n_c = 0;
    if (!err && m.n && !(c = malloc(m.n * sizeof *c)))
        err = BL_ENOMEM;
    for (size_t i = 0; !err && i < m.cap; i++) {
        cand k = m.slot[i];
        if (!k.sig || k.bad || k.count <= 0)
            continue;
        if (qi < 0) {
            bl_slow_row r = { 0 };
            r.count = k.count;
            r.total_us = k.total;
            r.self_us = k.self;
            r.max_us = k.max;
            k.lo = k.hi = key_of(&r, q->sort);
        } else { /* the answer is clamped to the max */
            k.lo = k.lo < k.max ? k.lo : k.max;
            k.hi = k.hi < k.max ? k.hi : k.max;
        }
        c[n_c++] = k;
    }
    free(m.slot);
    if (!err && n_c)
        qsort(c, n_c, sizeof *c, cmp_cand);

    /* pass 2 */
    topk t = { .cap = (size_t)q->limit, .sort = q->sort, .alloc = (size_t)q->limit };
    t.defer = defer;
    if (!err && !defer && !(t.e = malloc(t.cap * sizeof *t.e)))
        err = BL_ENOMEM;
    bl_sketch sk;
    bl_sketch_init(&sk);
    int64_t w;
    if (defer) {
        /* the same in batches: one statement for the sketches of up to
         * 512 groups (at least `limit`) */
        size_t bs = t.cap < 64 ? 64 : t.cap > 512 ? 512 : t.cap;
        uint64_t(*res)[3] = malloc(bs * sizeof *res);
        uint8_t *bad = malloc(bs);
        if (!err && (!res || !bad))
            err = BL_ENOMEM;
        for (size_t i = 0; i < n_c && !err;) {
            if (topk_worst(&t, &w) && (int64_t)c[i].hi < w)
                break;
            size_t n = n_c - i < bs ? n_c - i : bs;
            err = batch_sketches(db, scope, kind, d0, d1, edges, n_e, c + i, n, res, bad, &sk);
            for (size_t k = 0; k < n && !err; k++) {
                if (topk_worst(&t, &w) && (int64_t)c[i + k].hi < w) {
                    n_c = i; /* done */
                    break;
                }
                if (bad[k])
                    continue;
                ent e;
                memset(&e, 0, sizeof e);
                e.sig = c[i + k].sig;
                e.r.count = c[i + k].count;
                e.r.total_us = c[i + k].total;
                e.r.self_us = c[i + k].self;
                e.r.max_us = c[i + k].max;
                e.r.p50_us = res[k][0];
                e.r.p90_us = res[k][1];
                e.r.p99_us = res[k][2];
                err = offer(db, &t, &e);
            }
            i += n;
        }
        free(res);
        free(bad);
        n_c = 0; /* the loop below has nothing to do */
    }
    for (size_t i = 0; i < n_c && !err; i++) {
        if (topk_worst(&t, &w) && (int64_t)c[i].hi < w)
            break; /* no group left can beat the worst kept */
        ent e;
        memset(&e, 0, sizeof e);
        e.sig = c[i].sig;
        e.r.count = c[i].count;
        e.r.total_us = c[i].total;
        e.r.self_us = c[i].self;
        e.r.max_us = c[i].max;
        bl_sketch_reset(&sk);
        int bad = 0;
        for (int j = -1; j < n_e && !err; j++) {
            int64_t a = j < 0 ? d0 : edges[j][0], b = j < 0 ? d1 : edges[j][1];
            if (a >= b)
                continue;
            bl_st *st = bl_st_get(db, j < 0 ? days_sig_sql : hours_sig_sql);
            if (!st) {
                err = BL_EIO;
                break;
            }
            bl_st_int64(st, 1, scope);
            bl_st_int64(st, 2, e.sig);
            bl_st_int64(st, 3, a);
            bl_st_int64(st, 4, b);
            bl_st_int64(st, 5, j < 0 ? kind : kind == 1);
            bad |= merge_sketches(st, &sk, &err);
        }
        if (err || bad)
            continue;
        uint64_t q50 = bl_sketch_quantile(&sk, 0.50), q90 = bl_sketch_quantile(&sk, 0.90),
                 q99 = bl_sketch_quantile(&sk, 0.99);
        e.r.p50_us = q50 < e.r.max_us ? q50 : e.r.max_us;
        e.r.p90_us = q90 < e.r.max_us ? q90 : e.r.max_us;
        e.r.p99_us = q99 < e.r.max_us ? q99 : e.r.max_us;
        err = offer(db, &t, &e);
    }
    bl_sketch_cleanup(&sk);
    free(c);
    return finish(db, &t, err, cb, ctx, again);
}

static int64_t floor_to(int64_t v, int64_t unit)
{
    int64_t r = v % unit;
    return r < 0 ? v - r - unit : v - r;
}

/* The rollup answer. *fallback = 1 when the app's rollups are marked for
 * a rebuild or being rebuilt (the caller reads method_stats instead). */
static bl_err fast(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx, int *fallback,
                   int defer, int *again)
{
    *fallback = 0;
    bl_st *st = bl_st_get(db, "SELECT 1 FROM rollup_dirty WHERE app_id = ?1 UNION ALL "
                                      "SELECT 1 FROM rollup_rebuild WHERE app_id = ?1");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, q->app_id);
    int rc = bl_st_step(st);
    bl_st_reset(st);
    if (rc == BL_ST_ROW) {
        *fallback = 1;
        return BL_OK;
    }
    if (rc != BL_ST_DONE)
        return BL_EIO;

    int64_t scope = -q->app_id, build_id = 0;
    if (q->build) {
        st = bl_st_get(db, "SELECT id FROM builds WHERE app_id = ? AND name = ?");
        if (!st)
            return BL_EIO;
        bl_st_int64(st, 1, q->app_id);
        bl_st_text(st, 2, q->build, -1);
        rc = bl_st_step(st);
        if (rc == BL_ST_ROW)
            build_id = scope = bl_st_col_int64(st, 0);
        bl_st_reset(st);
        if (rc == BL_ST_DONE)
            return BL_OK; /* unknown build: no rows */
        if (rc != BL_ST_ROW)
            return BL_EIO;
    }
    st = bl_st_get(db, "SELECT first_hour, last_hour FROM rollup_spans WHERE scope = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, scope);
    rc = bl_st_step(st);
    int64_t first = 0, last = 0;
    if (rc == BL_ST_ROW) {
        first = bl_st_col_int64(st, 0);
        last = bl_st_col_int64(st, 1);
    }
    bl_st_reset(st);
    if (rc == BL_ST_DONE)
        return BL_OK; /* no data in the scope */
    if (rc != BL_ST_ROW)
        return BL_EIO;

    /* selected hours: [h0, h1), h1 unbounded when no_end */
    int64_t h0 = q->since_us < INT64_MIN + HOUR_US ? INT64_MIN : floor_to(q->since_us, HOUR_US);
    int no_end = q->until_us > INT64_MAX - HOUR_US;
    int64_t h1 = no_end ? INT64_MAX : floor_to(q->until_us + HOUR_US - 1, HOUR_US);
    if (!no_end && h1 <= h0)
        return BL_OK;

    src s[3] = {{0}}; /* zeroed: -Wmaybe-uninitialized without LTO */
    int n_src = 0, use_q3 = 0;
    int main_only = q->main_only ? 1 : 0;
    if (h0 <= first && (no_end || last < h1)) {
        s[n_src].st = bl_st_get(db, totals_sql);
        if (!s[n_src].st)
            return BL_EIO;
        bl_st_stream(s[n_src].st, BL_ST_FETCH_ROWS);
        bl_st_int64(s[n_src].st, 1, scope);
        bl_st_int64(s[n_src].st, 2, main_only ? 1 : 2);
        n_src++;
        use_q3 = 1;
    } else if (!q->build) {
        /* whole days [d0, d1) from rollup_days; the hours around them from
         * rollup_hours (where the scope has data) */
        int64_t d0 = h0 == INT64_MIN ? INT64_MIN : floor_to(h0 + DAY_US - 1, DAY_US);
        int64_t d1 = no_end ? INT64_MAX : floor_to(h1, DAY_US);
        int64_t edges[2][2];
        int n_e = 0;
        if (d0 >= d1) { /* no whole day: the hours alone */
            edges[n_e][0] = h0;
            edges[n_e++][1] = h1;
            d0 = d1 = 0;
        } else {
            if (h0 < d0 && d0 > first) {
                edges[n_e][0] = h0;
                edges[n_e++][1] = d0;
            }
            if (d1 < h1 && d1 <= last) {
                edges[n_e][0] = d1;
                edges[n_e++][1] = h1;
            }
        }
        return ranged(db, q, d0, d1, edges, n_e, cb, ctx, defer, again);
    } else if (h1 > first && h0 <= last) { /* a build's hours (else nothing there) */
        s[n_src].st = bl_st_get2(db, build_hours_sql, build_hours_pg);
        if (!s[n_src].st)
            return BL_EIO;
        bl_st_stream(s[n_src].st, BL_ST_FETCH_WIDE);
        bl_st_int64(s[n_src].st, 1, q->app_id);
        bl_st_int64(s[n_src].st, 2, main_only);
        bl_st_int64(s[n_src].st, 3, h0);
        bl_st_int64(s[n_src].st, 4, h1);
        bl_st_int64(s[n_src].st, 5, build_id);
        n_src++;
    }

    bl_err err = BL_OK;
    topk t = { .cap = (size_t)q->limit, .sort = q->sort, .alloc = (size_t)q->limit };
    t.defer = defer;
    if (!defer && !(t.e = malloc(t.cap * sizeof *t.e)))
        err = BL_ENOMEM;
    for (int i = 0; i < n_src && !err; i++) {
        rc = bl_st_step(s[i].st);
        s[i].live = rc == BL_ST_ROW;
        if (rc != BL_ST_ROW && rc != BL_ST_DONE)
            err = BL_EIO;
    }
    bl_sketch sk;
    bl_sketch_init(&sk);
    while (!err) {
        /* the smallest sig waiting */
        int64_t sig = INT64_MAX;
        int any = 0;
        for (int i = 0; i < n_src; i++)
            if (s[i].live) {
                int64_t v = bl_st_col_int64(s[i].st, 0);
                if (!any || v < sig)
                    sig = v;
                any = 1;
            }
        if (!any)
            break;
        ent e;
        memset(&e, 0, sizeof e);
        e.sig = sig;
        int bad = 0;
        bl_sketch_reset(&sk);
        for (int i = 0; i < n_src && !err; i++) {
            while (s[i].live && bl_st_col_int64(s[i].st, 0) == sig) {
                bl_st *x = s[i].st;
                e.r.count += bl_st_col_int64(x, 1);
                e.r.total_us += bl_st_col_int64(x, 2);
                e.r.self_us += bl_st_col_int64(x, 3);
                uint64_t mx = (uint64_t)bl_st_col_int64(x, 4);
                if (mx > e.r.max_us)
                    e.r.max_us = mx;
                const uint8_t *blob = bl_st_col_blob(x, 5);
                size_t bn = bl_st_col_bytes(x, 5);
                bl_err be = BL_OK;
                if (use_q3) { /* p50, p90, p99: little-endian u64 */
                    uint64_t p[3] = { 0, 0, 0 };
                    for (int k = 0; bn == 24 && k < 24; k++)
                        p[k / 8] |= (uint64_t)blob[k] << (8 * (k % 8));
                    e.r.p50_us = p[0];
                    e.r.p90_us = p[1];
                    e.r.p99_us = p[2];
                    be = bn == 24 ? BL_OK : BL_EFORMAT;
                } else if (blob) {
                    be = bl_sketch_merge_blob(&sk, blob, bn);
                }
                if (be == BL_ENOMEM)
                    err = be;
                else if (be)
                    bad = 1;
                rc = bl_st_step(x);
                s[i].live = rc == BL_ST_ROW;
                if (rc != BL_ST_ROW && rc != BL_ST_DONE)
                    err = BL_EIO;
            }
        }
        /* listed once a call finished; a malformed sketch leaves it out */
        if (err || bad || e.r.count <= 0)
            continue;
        if (use_q3) {
            err = offer(db, &t, &e);
            continue;
        }
        uint64_t q50 = bl_sketch_quantile(&sk, 0.50), q90 = bl_sketch_quantile(&sk, 0.90),
                 q99 = bl_sketch_quantile(&sk, 0.99);
        e.r.p50_us = q50 < e.r.max_us ? q50 : e.r.max_us;
        e.r.p90_us = q90 < e.r.max_us ? q90 : e.r.max_us;
        e.r.p99_us = q99 < e.r.max_us ? q99 : e.r.max_us;
        err = offer(db, &t, &e);
    }
    bl_sketch_cleanup(&sk);
    for (int i = 0; i < n_src; i++)
        bl_st_reset(s[i].st);
    return finish(db, &t, err, cb, ctx, again);
}

/* ---- the reference on PostgreSQL ------------------------------------------
 * slow_sql's answer without sketch_union: every selected method_stats row,
 * ordered by group (equal names are adjacent; "C" is byte order, cheaper
 * than a locale's), each group's figures summed and sketches merged here,
 * then the same order and cut through the heap (cmp_ent: the sort key and
 * total descending, then class, name, descriptor, source file in byte
 * order, as SQLite's BINARY collation). What fails the SQLite statement
 * fails this too: a sum past int64 (SQLite's "integer overflow") and a
 * malformed sketch (sketch_union's error) give BL_EIO. Memory: the rows
 * selected, BL_ST_FETCH_WIDE rows at a time (store/stmt.h), and the `limit` best groups (all
 * of them when limit < 0). */
static const char scan_pg_sql[] =
    "SELECT m.class, m.name, m.descriptor, m.source_file, s.count, s.total_us, s.self_us, "
    "s.max_us, s.sketch FROM method_stats s JOIN methods m ON m.id = s.method "
    "JOIN builds b ON b.id = s.build_id "
    "WHERE b.app_id = ?1 AND (CAST(?2 AS text) IS NULL OR b.name = ?2) "
    "AND (?3 = 0 OR s.main = 1) AND s.hour + 3600000000 > ?4 AND s.hour < ?5 "
    "ORDER BY m.class COLLATE \"C\", m.name COLLATE \"C\", m.descriptor COLLATE \"C\", "
    "m.source_file COLLATE \"C\"";

/* 1 when the current row belongs to group e (its names) */
static int same_group(bl_st *st, const ent *e)
{
    return !strcmp(bl_st_col_str(st, 0), e->cls) && !strcmp(bl_st_col_str(st, 1), e->name) &&
           !strcmp(bl_st_col_str(st, 2), e->desc) && !strcmp(bl_st_col_str(st, 3), e->file);
}

/* Ends group e (names owned, sketch merged in sk): kept when a call of it
 * finished (HAVING cnt > 0), else freed. */
static bl_err close_group(topk *t, ent *e, const bl_sketch *sk)
{
    if (e->r.count <= 0) {
        ent_free(e);
        return BL_OK;
    }
    uint64_t q50 = bl_sketch_quantile(sk, 0.50), q90 = bl_sketch_quantile(sk, 0.90),
             q99 = bl_sketch_quantile(sk, 0.99);
    e->r.p50_us = q50 < e->r.max_us ? q50 : e->r.max_us;
    e->r.p90_us = q90 < e->r.max_us ? q90 : e->r.max_us;
    e->r.p99_us = q99 < e->r.max_us ? q99 : e->r.max_us;
    return keep(t, e);
}

static bl_err scan_pg(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(db, scan_pg_sql);
    if (!st)
        return BL_EIO;
    bl_st_stream(st, BL_ST_FETCH_WIDE);
    bl_st_int64(st, 1, q->app_id);
    if (q->build)
        bl_st_text(st, 2, q->build, -1);
    bl_st_int64(st, 3, q->main_only ? 1 : 0);
    bl_st_int64(st, 4, q->since_us);
    bl_st_int64(st, 5, q->until_us);
    topk t = { .cap = q->limit < 0 ? SIZE_MAX : (size_t)q->limit, .sort = q->sort };
    bl_sketch sk;
    bl_sketch_init(&sk);
    ent e;
    int open = 0; /* e holds a group */
    bl_err err = BL_OK;
    int rc = BL_ST_DONE;
    while (!err && (rc = bl_st_step(st)) == BL_ST_ROW) {
        if (open && !same_group(st, &e)) {
            open = 0;
            err = close_group(&t, &e, &sk);
            if (err)
                break;
        }
        if (!open) {
            memset(&e, 0, sizeof e);
            e.cls = strdup(bl_st_col_str(st, 0));
            e.name = strdup(bl_st_col_str(st, 1));
            e.desc = strdup(bl_st_col_str(st, 2));
            e.file = strdup(bl_st_col_str(st, 3));
            if (!e.cls || !e.name || !e.desc || !e.file) {
                ent_free(&e);
                err = BL_ENOMEM;
                break;
            }
            e.r.max_us = (uint64_t)INT64_MIN; /* max() of signed integers */
            bl_sketch_reset(&sk);
            open = 1;
        }
        int64_t mx = bl_st_col_int64(st, 7);
        if (__builtin_add_overflow(e.r.count, bl_st_col_int64(st, 4), &e.r.count) ||
            __builtin_add_overflow(e.r.total_us, bl_st_col_int64(st, 5), &e.r.total_us) ||
            __builtin_add_overflow(e.r.self_us, bl_st_col_int64(st, 6), &e.r.self_us))
            err = BL_EIO;
        if (mx > (int64_t)e.r.max_us)
            e.r.max_us = (uint64_t)mx;
        const void *b = bl_st_col_blob(st, 8);
        if (!err && b) {
            err = bl_sketch_merge_blob(&sk, b, bl_st_col_bytes(st, 8));
            if (err && err != BL_ENOMEM)
                err = BL_EIO;
        }
    }
    if (!err && rc != BL_ST_DONE)
        err = BL_EIO;
    if (open) {
        if (err)
            ent_free(&e);
        else
            err = close_group(&t, &e, &sk);
    }
    bl_st_reset(st);
    bl_sketch_cleanup(&sk);
    return emit(&t, err, cb, ctx);
}

bl_err bl_slow_methods(bl_db *db, const bl_slow_query *q, bl_slow_cb cb, void *ctx)
{
    if ((unsigned)q->sort >= BL_SLOW_SORTS)
        return BL_EINVAL;
    if (q->limit == 0)
        return BL_OK;
    if (q->limit < 0) /* no limit: the reference streams any number of rows */
        return bl_slow_methods_scan(db, q, cb, ctx);
    /* PostgreSQL: names read in one statement after the figures (each
     * statement is a round trip), unless a group's names are missing */
    int fallback, again = 0;
    bl_err err = fast(db, q, cb, ctx, &fallback, bl_db_is_pg(db), &again);
    if (!err && again)
        err = fast(db, q, cb, ctx, &fallback, 0, &again);
    if (!err && fallback)
        err = bl_slow_methods_scan(db, q, cb, ctx);
    return err;
}
