/*
 * methodids.c — methodId assignment and the method-ID file writer (contract
 * and file shape in methodids.h; format in schema/method-id-file.md).
 *
 * Data: `v` holds the candidates (borrowed strings). bl_mids_assign sorts
 * them on (class, name, descriptor, access) and folds equal triples into the
 * first one (smallest access), so v[0..n) becomes strictly increasing on the
 * triple and lookups are binary searches. The base file is parsed by the
 * server's reader (bl_methodids_parse, strict) — one reader for the format —
 * and its entries are kept as (internal class copy, name, desc, id), sorted
 * on (triple, id) so the first of equal triples has the smallest id.
 *
 * Invariants after assign: every live candidate has an id in
 * 1..BL_MIDS_MAX_ID; ids are pairwise distinct; a new id is larger than
 * every base id and the base's max-id; max_id >= every id handed out.
 */
#include "methodids.h"

#include "ingest/methodid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    const char *cls, *name, *desc; /* borrowed */
    uint32_t id;
    uint16_t access;
    uint8_t dropped;
} cand;

typedef struct base_ent {
    char *cls;              /* internal-form copy, owned */
    const char *name, *desc; /* owned by the bl_methodids table */
    uint32_t id;
} base_ent;

struct bl_mids {
    cand *v;
    size_t n, cap;
    base_ent *b;
    size_t nb;
    bl_methodids *tab;
    uint32_t base_max; /* largest base id or header max-id; 0 without base */
    uint32_t base_dups; /* base lines repeating an earlier triple */
    int has_base, assigned;
    size_t reused, live;
    uint32_t max_id;
};

bl_err bl_mids_new(bl_mids **out)
{
    bl_mids *m = calloc(1, sizeof *m);
    if (!m)
        return BL_ENOMEM;
    *out = m;
    return BL_OK;
}

void bl_mids_free(bl_mids *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nb; i++)
        free(m->b[i].cls);
    free(m->b);
    free(m->v);
    bl_methodids_free(m->tab);
    free(m);
}

static int cmp_triple(const char *c1, const char *n1, const char *d1, const char *c2,
                      const char *n2, const char *d2)
{
    int c = strcmp(c1, c2);
    if (!c)
        c = strcmp(n1, n2);
    if (!c)
        c = strcmp(d1, d2);
    return c;
}

/* ---- base file ----------------------------------------------------------- */

typedef struct diag_ctx {
    char *err;
    size_t errlen;
} diag_ctx;

static void on_diag(void *ctx, uint64_t line, const char *message)
{
    diag_ctx *d = ctx;
    if (d->errlen)
        snprintf(d->err, d->errlen, "line %llu: %s", (unsigned long long)line, message);
}

static int cmp_base(const void *a, const void *b)
{
    const base_ent *x = a, *y = b;
    int c = cmp_triple(x->cls, x->name, x->desc, y->cls, y->name, y->desc);
    if (c)
        return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Finds `max-id=N` in the header line (the first comment whose words are
 * "beatline method-ids", before any record). *max = 0 when absent. */
static bl_err header_max_id(const char *t, size_t len, uint32_t *max, char *err, size_t errlen)
{
    size_t pos = 0;
    *max = 0;
    while (pos < len) {
        const char *nl = memchr(t + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - t) : len, a = pos;
        pos = nl ? end + 1 : len;
        if (a + 3 <= end && memcmp(t + a, "\xEF\xBB\xBF", 3) == 0 && a == 0)
            a = 3;
        while (a < end && (t[a] == ' ' || t[a] == '\t' || t[a] == '\r'))
            a++;
        if (a == end)
            continue;
        if (t[a] != '#')
            return BL_OK; /* first record: no header after it */
        /* words of the comment */
        size_t w = a + 1, nwords = 0;
        int is_header = 0;
        while (w < end) {
            while (w < end && (t[w] == ' ' || t[w] == '\t' || t[w] == '\r'))
                w++;
            size_t s = w;
            while (w < end && t[w] != ' ' && t[w] != '\t' && t[w] != '\r')
                w++;
            if (s == w)
                break;
            size_t n = w - s;
            nwords++;
            if (nwords == 1 && !(n == 8 && memcmp(t + s, "beatline", 8) == 0))
                break;
            if (nwords == 2) {
                if (!(n == 10 && memcmp(t + s, "method-ids", 10) == 0))
                    break;
                is_header = 1;
            }
            if (is_header && n > 7 && memcmp(t + s, "max-id=", 7) == 0) {
                uint32_t v = 0;
                for (size_t i = s + 7; i < w; i++) {
                    if (t[i] < '0' || t[i] > '9' ||
                        (v = v * 10 + (uint32_t)(t[i] - '0')) > BL_MIDS_MAX_ID) {
                        snprintf(err, errlen, "header: max-id must be a number <= %u",
                                 BL_MIDS_MAX_ID);
                        return BL_EFORMAT;
                    }
                }
                *max = v;
            }
        }
        if (is_header)
            return BL_OK;
    }
    return BL_OK;
}

bl_err bl_mids_load_base(bl_mids *m, const char *text, size_t len, char *err, size_t errlen)
{
    if (m->has_base || m->assigned)
        return BL_EINVAL;
    diag_ctx d = {err, errlen};
    uint64_t bad = 0;
    if (errlen)
        err[0] = '\0';
    bl_err e = bl_methodids_parse(text, len, 1, on_diag, &d, &m->tab, &bad);
    if (e) {
        if (e == BL_EFORMAT && errlen && !err[0])
            snprintf(err, errlen, "line %llu: malformed", (unsigned long long)bad);
        return e;
    }
    uint32_t hmax;
    if ((e = header_max_id(text, len, &hmax, err, errlen)) != BL_OK)
        return e;
    uint32_t n = bl_methodids_count(m->tab);
    m->b = calloc(n ? n : 1, sizeof *m->b);
    if (!m->b)
        return BL_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const bl_mid_entry *ent = bl_methodids_at(m->tab, i);
        char *c = strdup(ent->cls);
        if (!c)
            return BL_ENOMEM;
        for (char *p = c; *p; p++)
            if (*p == '.')
                *p = '/';
        m->b[m->nb++] = (base_ent){c, ent->name, ent->desc, ent->id};
    }
    qsort(m->b, m->nb, sizeof *m->b, cmp_base);
    for (size_t i = 1; i < m->nb; i++)
        if (!cmp_triple(m->b[i - 1].cls, m->b[i - 1].name, m->b[i - 1].desc, m->b[i].cls,
                        m->b[i].name, m->b[i].desc))
            m->base_dups++;
    uint32_t limit = bl_methodids_id_limit(m->tab);
    m->base_max = limit ? limit - 1 : 0;
    if (hmax > m->base_max)
        m->base_max = hmax;
    m->has_base = 1;
    return BL_OK;
}

uint32_t bl_mids_base_duplicates(const bl_mids *m)
{
    return m->base_dups;
}

/* Smallest base id of the triple, or 0 when absent. */
static uint32_t base_find(const bl_mids *m, const char *cls, const char *name, const char *desc)
{
    size_t lo = 0, hi = m->nb;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const base_ent *b = &m->b[mid];
        if (cmp_triple(b->cls, b->name, b->desc, cls, name, desc) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->nb) {
        const base_ent *b = &m->b[lo];
        if (!cmp_triple(b->cls, b->name, b->desc, cls, name, desc))
            return b->id;
    }
    return 0;
}

/* ---- candidates and assignment ------------------------------------------- */

bl_err bl_mids_add(bl_mids *m, const char *cls, const char *name, const char *desc,
                   uint16_t access)
{
    if (m->assigned)
        return BL_EINVAL;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        cand *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return BL_ENOMEM;
        m->v = v;
        m->cap = cap;
    }
    m->v[m->n++] = (cand){cls, name, desc, 0, access, 0};
    return BL_OK;
}

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    int c = cmp_triple(x->cls, x->name, x->desc, y->cls, y->name, y->desc);
    if (c)
        return c;
    return (int)x->access - (int)y->access;
}

bl_err bl_mids_assign(bl_mids *m, char *err, size_t errlen)
{
    if (m->assigned)
        return BL_EINVAL;
    if (m->n)
        qsort(m->v, m->n, sizeof *m->v, cmp_cand);
    size_t u = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (u && !cmp_triple(m->v[u - 1].cls, m->v[u - 1].name, m->v[u - 1].desc, m->v[i].cls,
                             m->v[i].name, m->v[i].desc))
            continue;
        m->v[u++] = m->v[i];
    }
    m->n = u;
    size_t fresh = 0, reused = 0;
    for (size_t i = 0; i < m->n; i++) {
        uint32_t id = m->has_base ? base_find(m, m->v[i].cls, m->v[i].name, m->v[i].desc) : 0;
        m->v[i].id = id;
        if (id)
            reused++;
        else
            fresh++;
    }
    if (fresh > (size_t)(BL_MIDS_MAX_ID - m->base_max)) {
        snprintf(err, errlen,
                 "%zu new methods need ids but only %lu are left after the largest id %lu "
                 "(ids are 1..%u): exclude some classes or start without --base-ids",
                 fresh, (unsigned long)(BL_MIDS_MAX_ID - m->base_max),
                 (unsigned long)m->base_max, BL_MIDS_MAX_ID);
        return BL_ETOOBIG;
    }
    uint32_t next = m->base_max + 1;
    for (size_t i = 0; i < m->n; i++)
        if (!m->v[i].id)
            m->v[i].id = next++;
    m->max_id = next - 1;
    m->reused = reused;
    m->live = m->n;
    m->assigned = 1;
    return BL_OK;
}

static cand *find(const bl_mids *m, const char *cls, const char *name, const char *desc)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        cand *c = &m->v[mid];
        int r = cmp_triple(c->cls, c->name, c->desc, cls, name, desc);
        if (!r)
            return c;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int bl_mids_drop(bl_mids *m, const char *cls, const char *name, const char *desc)
{
    cand *c = find(m, cls, name, desc);
    if (!c || c->dropped)
        return 0;
    c->dropped = 1;
    m->live--;
    return 1;
}

uint32_t bl_mids_lookup(const bl_mids *m, const char *cls, const char *name, const char *desc)
{
    const cand *c = find(m, cls, name, desc);
    return c && !c->dropped ? c->id : BL_MIDS_NONE;
}

size_t bl_mids_count(const bl_mids *m)
{
    return m->live;
}

size_t bl_mids_reused(const bl_mids *m)
{
    return m->reused;
}

uint32_t bl_mids_max_id(const bl_mids *m)
{
    return m->max_id;
}

/* ---- writing ------------------------------------------------------------- */

bl_err bl_mids_format_line(bl_buf *out, uint32_t id, uint16_t access, const char *cls,
                           const char *name, const char *desc)
{
    bl_err e = bl_buf_put_u64(out, id);
    if (!e)
        e = bl_buf_putc(out, ',');
    if (!e)
        e = bl_buf_put_u64(out, access);
    if (!e)
        e = bl_buf_putc(out, ',');
    size_t at = out->len;
    if (!e)
        e = bl_buf_puts(out, cls);
    if (!e)
        for (size_t i = at; i < out->len; i++)
            if (out->data[i] == '/')
                out->data[i] = '.';
    if (!e)
        e = bl_buf_putc(out, ' ');
    if (!e)
        e = bl_buf_puts(out, name);
    if (!e)
        e = bl_buf_putc(out, ' ');
    if (!e)
        e = bl_buf_puts(out, desc);
    return e;
}

static int cmp_by_id(const void *a, const void *b)
{
    const cand *x = *(const cand *const *)a, *y = *(const cand *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

bl_err bl_mids_write(const bl_mids *m, int obfuscated, const char *build_id, bl_buf *out)
{
    if (!m->assigned)
        return BL_EINVAL;
    const cand **order = malloc((m->n ? m->n : 1) * sizeof *order);
    if (!order)
        return BL_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!m->v[i].dropped)
            order[k++] = &m->v[i];
    qsort(order, k, sizeof *order, cmp_by_id);
    bl_err e = bl_buf_puts(out, obfuscated ? "# beatline method-ids v1 names=obfuscated max-id="
                                           : "# beatline method-ids v1 names=original max-id=");
    if (!e)
        e = bl_buf_put_u64(out, m->max_id);
    if (!e && build_id)
        e = bl_buf_puts(out, " build-id=");
    if (!e && build_id)
        e = bl_buf_puts(out, build_id);
    if (!e)
        e = bl_buf_putc(out, '\n');
    for (size_t i = 0; i < k && !e; i++) {
        const cand *c = order[i];
        e = bl_mids_format_line(out, c->id, c->access, c->cls, c->name, c->desc);
        if (!e)
            e = bl_buf_putc(out, '\n');
    }
    free(order);
    return e;
}

/* ---- validation ---------------------------------------------------------- */

typedef struct bad_lines {
    uint64_t *v;
    size_t n, cap;
    char (*why)[160];
    int oom;
} bad_lines;

static void on_bad_line(void *ctx, uint64_t line, const char *message)
{
    bad_lines *b = ctx;
    if (b->oom)
        return;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        uint64_t *v = realloc(b->v, cap * sizeof *v);
        if (!v) {
            b->oom = 1;
            return;
        }
        b->v = v;
        char(*w)[160] = realloc(b->why, cap * sizeof *w);
        if (!w) {
            b->oom = 1;
            return;
        }
        b->why = w;
        b->cap = cap;
    }
    b->v[b->n] = line;
    snprintf(b->why[b->n], sizeof b->why[b->n], "%s", message);
    b->n++;
}

bl_err bl_mids_validate(bl_mids *m, bl_mids_warn_fn warn, void *ctx, size_t *dropped)
{
    if (!m->assigned)
        return BL_EINVAL;
    if (dropped)
        *dropped = 0;
    bl_buf text;
    bl_buf_init(&text, 0);
    bl_err e = bl_mids_write(m, 0, NULL, &text);
    bad_lines bad = {0};
    bl_methodids *t = NULL;
    uint64_t bad_line = 0;
    if (!e)
        e = bl_methodids_parse(text.data, text.len, 0, on_bad_line, &bad, &t, &bad_line);
    bl_methodids_free(t);
    bl_buf_cleanup(&text);
    if (!e && bad.oom)
        e = BL_ENOMEM;
    if (e || bad.n == 0)
        goto out;
    /* line 1 is the header; line k + 2 is the k-th live method in id order */
    const cand **order = malloc(m->n * sizeof *order);
    if (!order) {
        e = BL_ENOMEM;
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!m->v[i].dropped)
            order[k++] = &m->v[i];
    qsort(order, k, sizeof *order, cmp_by_id);
    for (size_t i = 0; i < bad.n; i++) {
        if (bad.v[i] < 2 || bad.v[i] - 2 >= k)
            continue; /* cannot happen: the header is ours */
        cand *c = (cand *)order[bad.v[i] - 2];
        if (c->dropped)
            continue;
        c->dropped = 1;
        m->live--;
        if (dropped)
            (*dropped)++;
        if (warn) {
            char msg[512];
            snprintf(msg, sizeof msg,
                     "%.160s.%.120s%.160s: not instrumented, the method-ID file cannot name it (%s)",
                     c->cls, c->name, c->desc, bad.why[i]);
            warn(ctx, msg);
        }
    }
    free(order);
out:
    free(bad.v);
    free(bad.why);
    return e;
}
