/*
 * pg_rows.c — many rows per PostgreSQL statement (see pg_rows.h).
 */
#include "store/pg_rows.h"
#include "store/conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/sketch.h"
#include "store/sqlfuncs.h"

void bl_pga_init(bl_pga *a)
{
    bl_buf_init(&a->b, 0);
    a->n = 0;
}

void bl_pga_reset(bl_pga *a)
{
    bl_buf_reset(&a->b);
    a->n = 0;
}

void bl_pga_cleanup(bl_pga *a)
{
    bl_buf_cleanup(&a->b);
    a->n = 0;
}

bl_err bl_pga_int(bl_pga *a, int64_t v)
{
    char t[24];
    int k = snprintf(t, sizeof t, "%c%lld", a->n ? ',' : '{', (long long)v);
    a->n++;
    return bl_buf_append(&a->b, t, (size_t)k);
}

bl_err bl_pga_str(bl_pga *a, const char *s)
{
    /* every element in double quotes (NULL, braces, commas and blanks are
     * then plain text), a double quote or backslash in it escaped by a
     * backslash */
    if (bl_buf_putc(&a->b, a->n ? ',' : '{') || bl_buf_putc(&a->b, '"'))
        return BL_ENOMEM;
    a->n++;
    for (const char *c = s ? s : ""; *c;) {
        size_t run = strcspn(c, "\\\"");
        if (run && bl_buf_append(&a->b, c, run))
            return BL_ENOMEM;
        c += run;
        if (*c && (bl_buf_putc(&a->b, '\\') || bl_buf_putc(&a->b, *c++)))
            return BL_ENOMEM;
    }
    return bl_buf_putc(&a->b, '"');
}

bl_err bl_pga_bind(bl_pga *a, bl_st *st, int i)
{
    if (!a->n) {
        bl_st_text(st, i, "{}", 2);
        return BL_OK;
    }
    if (bl_buf_putc(&a->b, '}'))
        return BL_ENOMEM;
    bl_st_text(st, i, (const char *)a->b.data, (int)a->b.len);
    a->b.len--; /* the closing brace goes again: more values may follow */
    return BL_OK;
}

void bl_pg_fail(bl_db *db, const char *what)
{
    bl_db_set_pg_error(db, what, NULL);
}

/* ---- keyed merge ---------------------------------------------------------- */

static int cmp_key(const int64_t *a, const int64_t *b)
{
    for (int k = 0; k < 4; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

static int cmp_row(const void *x, const void *y)
{
    return cmp_key(((const bl_pgm_row *)x)->key, ((const bl_pgm_row *)y)->key);
}

/* the columns of an update or insert being built */
enum { C_COUNT, C_TOTAL, C_SELF, C_MAX, C_OFF, C_LEN, C_FIG };
typedef struct cols {
    bl_pga key[4], fig[C_FIG];
    bl_buf blob, q3; /* sketches and percentiles end to end */
    size_t n;
} cols;

static void cols_init(cols *c)
{
    for (int k = 0; k < 4; k++)
        bl_pga_init(&c->key[k]);
    for (int k = 0; k < C_FIG; k++)
        bl_pga_init(&c->fig[k]);
    bl_buf_init(&c->blob, 0);
    bl_buf_init(&c->q3, 0);
    c->n = 0;
}

static void cols_reset(cols *c)
{
    for (int k = 0; k < 4; k++)
        bl_pga_reset(&c->key[k]);
    for (int k = 0; k < C_FIG; k++)
        bl_pga_reset(&c->fig[k]);
    bl_buf_reset(&c->blob);
    bl_buf_reset(&c->q3);
    c->n = 0;
}

static void cols_cleanup(cols *c)
{
    for (int k = 0; k < 4; k++)
        bl_pga_cleanup(&c->key[k]);
    for (int k = 0; k < C_FIG; k++)
        bl_pga_cleanup(&c->fig[k]);
    bl_buf_cleanup(&c->blob);
    bl_buf_cleanup(&c->q3);
}

/* Appends row r (its sketch already appended to c->blob at `off`, `len`
 * bytes; its percentiles to c->q3). */
static bl_err cols_add(cols *c, int nkey, const bl_pgm_row *r, size_t off, size_t len)
{
    bl_err e = BL_OK;
    for (int k = 0; k < nkey && !e; k++)
        e = bl_pga_int(&c->key[k], r->key[k]);
    if (!e)
        e = bl_pga_int(&c->fig[C_COUNT], r->count);
    if (!e)
        e = bl_pga_int(&c->fig[C_TOTAL], r->total_us);
    if (!e)
        e = bl_pga_int(&c->fig[C_SELF], r->self_us);
    if (!e)
        e = bl_pga_int(&c->fig[C_MAX], r->max_us);
    if (!e)
        e = bl_pga_int(&c->fig[C_OFF], (int64_t)off + 1);
    if (!e)
        e = bl_pga_int(&c->fig[C_LEN], (int64_t)len);
    c->n++;
    return e;
}

static bl_err cols_bind(cols *c, bl_st *st, int nkey, int q3)
{
    bl_err e = BL_OK;
    for (int k = 0; k < nkey && !e; k++)
        e = bl_pga_bind(&c->key[k], st, k + 1);
    for (int k = 0; k < C_FIG && !e; k++)
        e = bl_pga_bind(&c->fig[k], st, nkey + 1 + k);
    if (!e) {
        bl_st_blob(st, nkey + 7, c->blob.data, c->blob.len);
        if (q3)
            bl_st_blob(st, nkey + 8, c->q3.data, c->q3.len);
    }
    return e;
}

/* The percentiles of a row: 24 bytes appended to out. */
static bl_err put_q3(bl_buf *out, const uint64_t qv[3], uint64_t clamp)
{
    uint8_t q[24];
    bl_sql_q3_pack(qv, clamp, q);
    return bl_buf_append(out, q, sizeof q);
}

static uint64_t clamp_of(int q3, int64_t max)
{
    return q3 == 1 ? (uint64_t)max : UINT64_MAX >> 1;
}

/* an empty sketch (version 2, no buckets): what a NULL stored one counts as */
static const uint8_t empty_sketch[4] = { 2, BL_SKETCH_SUB_BITS, 0, 0 };

/* Stored row (the read's current row) + added row r -> update columns. */
static bl_err merge_stored(bl_st *st, int nkey, int q3, const bl_pgm_row *r, cols *u)
{
    bl_pgm_row m = *r;
    m.count = (int64_t)((uint64_t)bl_st_col_int64(st, nkey) + (uint64_t)r->count);
    m.total_us = (int64_t)((uint64_t)bl_st_col_int64(st, nkey + 1) + (uint64_t)r->total_us);
    m.self_us = (int64_t)((uint64_t)bl_st_col_int64(st, nkey + 2) + (uint64_t)r->self_us);
    int64_t max = bl_st_col_int64(st, nkey + 3);
    m.max_us = max > r->max_us ? max : r->max_us;
    const void *old = bl_st_col_blob(st, nkey + 4);
    size_t on = bl_st_col_bytes(st, nkey + 4);
    if (!old) {
        old = empty_sketch;
        on = sizeof empty_sketch;
    }
    size_t off = u->blob.len;
    bl_err e;
    if (q3) {
        uint64_t qv[3];
        e = bl_sketch_blob_merge_q(old, on, r->sketch, r->sketch_len, &u->blob, bl_sql_q3_levels,
                                   3, qv);
        if (!e)
            e = put_q3(&u->q3, qv, clamp_of(q3, m.max_us));
    } else {
        e = bl_sketch_blob_merge(old, on, r->sketch, r->sketch_len, &u->blob);
    }
    if (e)
        return e;
    return cols_add(u, nkey, &m, off, u->blob.len - off);
}

/* A row not stored yet -> insert columns. */
static bl_err add_new(int nkey, int q3, const bl_pgm_row *r, cols *ins)
{
    size_t off = ins->blob.len;
    bl_err e = bl_buf_append(&ins->blob, r->sketch, r->sketch_len);
    if (!e && q3) {
        uint8_t q[24];
        e = bl_sql_q3(r->sketch, r->sketch_len, clamp_of(q3, r->max_us), q);
        if (!e)
            e = bl_buf_append(&ins->q3, q, sizeof q);
    }
    if (e)
        return e;
    return cols_add(ins, nkey, r, off, r->sketch_len);
}

/* Rows of one key merged into the first (rows sorted); merged sketches are
 * kept in *own (malloc'd blocks, freed by the caller). Returns the rows
 * left, or 0 with *err set. */
static size_t coalesce(bl_pgm_row *rows, size_t n, void ***own, size_t *n_own, bl_err *err)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        bl_pgm_row m = rows[i];
        for (; j < n && !cmp_key(rows[j].key, m.key); j++) {
            m.count = (int64_t)((uint64_t)m.count + (uint64_t)rows[j].count);
            m.total_us = (int64_t)((uint64_t)m.total_us + (uint64_t)rows[j].total_us);
            m.self_us = (int64_t)((uint64_t)m.self_us + (uint64_t)rows[j].self_us);
            if (rows[j].max_us > m.max_us)
                m.max_us = rows[j].max_us;
            bl_buf b;
            bl_buf_init(&b, 0);
            bl_err e = bl_sketch_blob_merge(m.sketch, m.sketch_len, rows[j].sketch,
                                            rows[j].sketch_len, &b);
            void **o = e ? NULL : realloc(*own, (*n_own + 1) * sizeof **own);
            if (e || !o) {
                bl_buf_cleanup(&b);
                *err = e ? e : BL_ENOMEM;
                return 0;
            }
            *own = o;
            o[(*n_own)++] = b.data; /* the buffer's storage changes owner */
            m.sketch = b.data;
            m.sketch_len = b.len;
        }
        rows[w++] = m;
        i = j;
    }
    return w;
}

bl_err bl_pgm_merge(bl_db *db, const bl_pgm_table *t, bl_pgm_row *rows, size_t n)
{
    if (!n)
        return BL_OK;
    const int nkey = t->nkey;
    qsort(rows, n, sizeof *rows, cmp_row);
    void **own = NULL;
    size_t n_own = 0;
    bl_err err = BL_OK;
    n = coalesce(rows, n, &own, &n_own, &err);
    /* pend[]: indexes of the rows still to write (sorted as rows) */
    size_t *pend = err ? NULL : malloc(n * sizeof *pend);
    size_t *ins_ix = pend ? malloc(n * sizeof *ins_ix) : NULL;
    char *done = ins_ix ? calloc(n, 1) : NULL;
    if (!err && !done)
        err = BL_ENOMEM;
    size_t np = n;
    for (size_t i = 0; i < np && !err; i++)
        pend[i] = i;
    cols rd, u, ins;
    cols_init(&rd);
    cols_init(&u);
    cols_init(&ins);
    int round = 0;
    while (!err && np) {
        if (++round > 4) {
            bl_pg_fail(db, "aggregate rows kept changing under the writer");
            err = BL_EIO;
            break;
        }
        /* the stored rows of the pending keys, locked, merged in C */
        cols_reset(&rd);
        cols_reset(&u);
        cols_reset(&ins);
        for (size_t i = 0; i < np && !err; i++)
            for (int k = 0; k < nkey && !err; k++)
                err = bl_pga_int(&rd.key[k], rows[pend[i]].key[k]);
        bl_st *st = err ? NULL : bl_st_get(db, t->read_sql);
        if (!err && !st)
            err = BL_EIO;
        for (int k = 0; k < nkey && !err; k++)
            err = bl_pga_bind(&rd.key[k], st, k + 1);
        size_t p = 0, n_ins = 0;
        int rc = BL_ST_DONE;
        while (!err && (rc = bl_st_step(st)) == BL_ST_ROW) {
            int64_t key[4] = { 0, 0, 0, 0 };
            for (int k = 0; k < nkey; k++)
                key[k] = bl_st_col_int64(st, k);
            int c = -1;
            while (p < np && (c = cmp_key(rows[pend[p]].key, key)) < 0)
                if ((err = add_new(nkey, t->q3, &rows[pend[p]], &ins)) == BL_OK)
                    ins_ix[n_ins++] = pend[p++];
            if (err)
                break;
            if (p == np || c > 0) { /* a row not asked for: the SQL is wrong */
                bl_pg_fail(db, "aggregate read returned an unexpected row");
                err = BL_EIO;
                break;
            }
            err = merge_stored(st, nkey, t->q3, &rows[pend[p]], &u);
            p++;
        }
        if (st)
            bl_st_reset(st);
        if (!err && rc == BL_ST_ERROR)
            err = BL_EIO;
        for (; !err && p < np; p++)
            if ((err = add_new(nkey, t->q3, &rows[pend[p]], &ins)) == BL_OK)
                ins_ix[n_ins++] = pend[p];
        if (err)
            break;
        if (u.n) {
            st = bl_st_get(db, t->update_sql);
            if (!st || (err = cols_bind(&u, st, nkey, t->q3)))
                err = err ? err : BL_EIO;
            else if (bl_st_step(st) != BL_ST_DONE)
                err = BL_EIO;
            else if (bl_st_changes(st) != (int64_t)u.n) {
                bl_pg_fail(db, "aggregate update missed locked rows");
                err = BL_EIO;
            }
            if (st)
                bl_st_reset(st);
        }
        np = 0;
        if (err || !n_ins)
            break;
        st = bl_st_get(db, t->insert_sql);
        if (!st || (err = cols_bind(&ins, st, nkey, t->q3))) {
            err = err ? err : BL_EIO;
            break;
        }
        /* rows inserted come back; the others were inserted by another
         * transaction meanwhile: read and merged again */
        while ((rc = bl_st_step(st)) == BL_ST_ROW) {
            int64_t key[4] = { 0, 0, 0, 0 };
            for (int k = 0; k < nkey; k++)
                key[k] = bl_st_col_int64(st, k);
            bl_pgm_row probe;
            probe.key[0] = key[0];
            probe.key[1] = key[1];
            probe.key[2] = key[2];
            probe.key[3] = key[3];
            const bl_pgm_row *hit = bsearch(&probe, rows, n, sizeof *rows, cmp_row);
            if (hit)
                done[hit - rows] = 1;
        }
        bl_st_reset(st);
        if (rc != BL_ST_DONE) {
            err = BL_EIO;
            break;
        }
        for (size_t i = 0; i < n_ins; i++)
            if (!done[ins_ix[i]])
                pend[np++] = ins_ix[i];
    }
    if (err == BL_EFORMAT || err == BL_ETOOBIG)
        bl_pg_fail(db, "malformed stored sketch (or a count past 2^64)");
    else if (err == BL_ENOMEM)
        bl_pg_fail(db, "out of memory");
    cols_cleanup(&rd);
    cols_cleanup(&u);
    cols_cleanup(&ins);
    for (size_t i = 0; i < n_own; i++)
        free(own[i]);
    free(own);
    free(pend);
    free(ins_ix);
    free(done);
    return err == BL_ENOMEM ? BL_ENOMEM : err ? BL_EIO : BL_OK;
}
