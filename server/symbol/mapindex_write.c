/*
 * mapindex_write.c — a parsed builder (mapindex_parse.c) into an index
 * image, and the build entry points (bl_mapindex_build, _build_file).
 * Methods are ordered by class, by obfuscated name and by file order,
 * method-level flags (synthesized, outline) are spread over all outer
 * entries of the same method, ids are turned into string references and
 * the image is written out with its three hash tables (on two threads for
 * a big index).
 */
#include "symbol/mapindex_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/u64map.h"

/* ------------------------------------------------------------------------ */
/* Ordering                                                                  */

/* Compares interned strings a and b bytewise (shorter prefix first). */
static int cmp_ids(const interner *in, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    uint32_t na, nb;
    const char *sa = istr(in, a, &na), *sb = istr(in, b, &nb);
    int c = memcmp(sa, sb, na < nb ? na : nb);
    if (c)
        return c;
    return na < nb ? -1 : na > nb;
}

/* The sort key of a name: its first eight bytes, big-endian, zero-padded.
 * Names hold no NUL byte, so keys order as the names do (a shorter name
 * first) except when both have the same first eight bytes. */
static uint64_t name_key(const char *s, uint32_t n)
{
    uint64_t k = 0;
    for (uint32_t i = 0; i < 8; i++)
        k = k << 8 | (i < n ? (uint8_t)s[i] : 0);
    return k;
}

/* Compares the obfuscated names of methods x and y (keys: name_key of
 * each method's name, by method index): most are told apart by their key,
 * without reading the names (short obfuscated names nearly always). */
static inline __attribute__((always_inline)) int cmp_obf(const interner *in, const bmethod *ms,
                                                         const uint64_t *key, uint32_t x,
                                                         uint32_t y)
{
    if (ms[x].m.obf == ms[y].m.obf)
        return 0;
    if (key[x] != key[y])
        return key[x] < key[y] ? -1 : 1;
    return cmp_ids(in, ms[x].m.obf, ms[y].m.obf);
}

/* Stable merge sort of idx[0..n) by the obfuscated name of methods[idx]
 * (key: see cmp_obf). */
static void sort_by_name(const interner *in, const bmethod *ms, const uint64_t *key,
                         uint32_t *idx, uint32_t *tmp, uint32_t n)
{
    if (n < 2)
        return;
    if (n <= 16) { /* insertion sort, stable */
        for (uint32_t i = 1; i < n; i++) {
            uint32_t x = idx[i], j = i;
            while (j > 0 && cmp_obf(in, ms, key, idx[j - 1], x) > 0) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = x;
        }
        return;
    }
    uint32_t h = n / 2;
    sort_by_name(in, ms, key, idx, tmp, h);
    sort_by_name(in, ms, key, idx + h, tmp, n - h);
    if (cmp_obf(in, ms, key, idx[h - 1], idx[h]) <= 0)
        return; /* already in order */
    uint32_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = cmp_obf(in, ms, key, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
}

static int same_sig(const bl_mi_method *a, const bl_mi_method *b)
{
    return a->orig_class == b->orig_class && a->orig_name == b->orig_name &&
           a->params == b->params && a->ret == b->ret;
}

/* Orders outer entries by signature ids (see same_sig). */
static int cmp_sig_ids(const void *x, const void *y)
{
    const bl_mi_method *a = *(const bl_mi_method *const *)x, *b = *(const bl_mi_method *const *)y;
    uint32_t ka[4] = { a->orig_class, a->orig_name, a->params, a->ret };
    uint32_t kb[4] = { b->orig_class, b->orig_name, b->params, b->ret };
    for (int i = 0; i < 4; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Spreads SYNTH/OUTLINE from one outer entry to every outer entry of the
 * same original method in the bucket [lo, hi) of sorted methods: the outer
 * entries sorted by signature, flags OR-ed per run of equal signatures —
 * O(n log n) however many entries carry flags (scanning the bucket once per
 * flagged entry was quadratic: 160,000 ranges of one method with one
 * synthesized comment took 27 s). BL_ENOMEM. */
static bl_err spread_method_flags(bmethod *ms, const uint32_t *order, uint32_t lo, uint32_t hi)
{
    const uint32_t f = BL_MIM_SYNTH | BL_MIM_OUTLINE;
    uint32_t outer = 0;
    int any = 0;
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t fl = ms[order[i]].m.flags;
        outer += (fl & BL_MIM_OUTER) != 0;
        if ((fl & (f | BL_MIM_OUTER)) > BL_MIM_OUTER)
            any = 1;
    }
    if (!any || outer < 2)
        return BL_OK;
    bl_mi_method *small[64];
    bl_mi_method **v = outer <= 64 ? small : malloc((size_t)outer * sizeof *v);
    if (!v)
        return BL_ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = lo; i < hi; i++)
        if (ms[order[i]].m.flags & BL_MIM_OUTER)
            v[n++] = &ms[order[i]].m;
    qsort(v, n, sizeof *v, cmp_sig_ids);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i, u = 0;
        while (j < n && same_sig(v[i], v[j]))
            u |= v[j++]->flags & f;
        for (uint32_t k = i; k < j; k++)
            v[k]->flags |= u;
        i = j;
    }
    if (v != small)
        free(v);
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

static uint32_t pow2_at_least(uint64_t n)
{
    uint32_t c = 16;
    while (c < n * 2 && c < (1u << 31))
        c <<= 1;
    return c;
}

static void slot_put(bl_mi_slot *t, uint32_t cap, uint64_t h, uint32_t idx)
{
    uint32_t j = (uint32_t)h & (cap - 1);
    while (t[j].idx1)
        j = (j + 1) & (cap - 1);
    t[j].tag = (uint32_t)(h >> 32);
    t[j].idx1 = idx + 1;
}

static uint64_t sig_hash(const interner *in, uint32_t cls_id, uint32_t name_id)
{
    uint32_t n;
    const char *s = istr(in, name_id, &n);
    return XXH3_64bits_withSeed(s, n, in->hash[cls_id]);
}

static bl_err pad8(bl_buf *o)
{
    size_t r = o->len % 8;
    return r ? bl_buf_zero(o, 8 - r) : BL_OK;
}

/* Work of write_image shared by two threads: classes [c0, c1). */
typedef struct wi_job {
    builder *b;
    uint32_t *order, *tmp;
    uint64_t *key;          /* wi_sort: name_key by method index */
    const uint32_t *start, *fstart;
    size_t c0, c1;
    uint32_t n_sigs;        /* wi_sort: signatures counted */
    bl_err err;             /* wi_sort: BL_ENOMEM */
    bl_mi_slot *t1, *t2, *t3; /* wi_tables: the three tables */
    uint32_t cap1, cap3;
    int sigs;               /* wi_tables fills t3 */
} wi_job;

/* two threads from this many method entries (opts->threads 2: always) */
#define WI_PAR_METHODS 65536

/* Sorts each class's methods by obfuscated name (stable), spreads method
 * flags, sets the class slices and counts signatures. */
static void *wi_sort(void *arg)
{
    wi_job *j = arg;
    builder *b = j->b;
    const interner *in = &b->in;
    for (size_t c = j->c0; c < j->c1; c++) {
        uint32_t lo = j->start[c], hi = j->start[c + 1];
        if (hi - lo > 1) {
            uint32_t last = UINT32_MAX; /* a method's ranges share its name */
            uint64_t k = 0;
            for (uint32_t i = lo; i < hi; i++) {
                uint32_t x = j->order[i], id = b->methods.v[x].m.obf, n;
                if (id != last) {
                    const char *nm = istr(in, id, &n);
                    k = name_key(nm, n);
                    last = id;
                }
                j->key[x] = k;
            }
        }
        sort_by_name(in, b->methods.v, j->key, j->order + lo, j->tmp + lo, hi - lo);
        b->classes.v[c].method_first = lo;
        b->classes.v[c].method_count = hi - lo;
        b->classes.v[c].field_first = j->fstart[c];
        b->classes.v[c].field_count = j->fstart[c + 1] - j->fstart[c];
        uint32_t blo = lo;
        const bl_mi_method *prev_outer = NULL;
        for (uint32_t i = lo; i < hi; i++) {
            const bl_mi_method *m = &b->methods.v[j->order[i]].m;
            if (i + 1 == hi || b->methods.v[j->order[i + 1]].m.obf != m->obf) {
                if (spread_method_flags(b->methods.v, j->order, blo, i + 1) != BL_OK)
                    j->err = BL_ENOMEM;
                blo = i + 1;
            }
            if ((m->flags & BL_MIM_OUTER) && !(prev_outer && same_sig(prev_outer, m))) {
                j->n_sigs++;
                prev_outer = m;
            }
        }
    }
    return NULL;
}

/* Where the last entry of a much-repeated key went (see slot_put_run). */
typedef struct run_map {
    bl_u64map last; /* key -> slot of its last entry */
    int failed;     /* out of memory: plain probing */
} run_map;

#define RUN_PROBES 32 /* probes before an insert asks the run map */

/* Inserts like slot_put, but a key whose probe run grows long (the same
 * original method as the residual method of thousands of classes) starts
 * after its own last entry instead of walking all of them again: linear
 * probing with many equal keys is otherwise quadratic (60,000 classes: 3.7 s).
 * Every entry of a key still lies between its home slot and the next empty
 * slot, so lookups are unchanged. */
static void slot_put_run(bl_mi_slot *t, uint32_t cap, uint64_t h, uint32_t idx, run_map *rm)
{
    uint32_t j = (uint32_t)h & (cap - 1), probes = 0;
    while (t[j].idx1 && probes < RUN_PROBES) {
        j = (j + 1) & (cap - 1);
        probes++;
    }
    uint32_t *lastp = NULL;
    if (t[j].idx1 && !rm->failed) { /* a long run: jump past the key's entries */
        int added;
        if (bl_u64map_put(&rm->last, h | 1, 0, &lastp, &added) != BL_OK) {
            rm->failed = 1;
            lastp = NULL;
        } else if (!added) {
            j = (*lastp + 1) & (cap - 1);
        }
    }
    while (t[j].idx1)
        j = (j + 1) & (cap - 1);
    t[j].tag = (uint32_t)(h >> 32);
    t[j].idx1 = idx + 1;
    if (lastp)
        *lastp = j;
}

/* Fills the class-by-obfuscated, class-by-original and signature tables. */
static void *wi_tables(void *arg)
{
    wi_job *j = arg;
    const builder *b = j->b;
    const interner *in = &b->in;
    run_map rm;
    bl_u64map_init(&rm.last);
    rm.failed = 0;
    for (size_t c = j->c0; c < j->c1; c++) {
        slot_put(j->t1, j->cap1, in->hash[b->classes.v[c].obf], (uint32_t)c);
        slot_put(j->t2, j->cap1, in->hash[b->classes.v[c].orig], (uint32_t)c);
        const bl_mi_method *prev_outer = NULL;
        for (uint32_t i = j->start[c]; j->sigs && i < j->start[c + 1]; i++) {
            const bl_mi_method *m = &b->methods.v[j->order[i]].m;
            if ((m->flags & BL_MIM_OUTER) && !(prev_outer && same_sig(prev_outer, m))) {
                slot_put_run(j->t3, j->cap3, sig_hash(in, m->orig_class, m->orig_name), i,
                             &rm);
                prev_outer = m;
            }
        }
    }
    bl_u64map_cleanup(&rm.last);
    return NULL;
}

/* The first class at or after which half of the methods lie. */
static size_t class_at_half(const uint32_t *start, size_t nc)
{
    size_t lo = 0, hi = nc;
    uint32_t half = start[nc] / 2;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (start[m] < half)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Runs fn(a) and, when two, fn(b) on a second thread (or after, when no
 * thread can be started). */
static void run_pair(void *(*fn)(void *), void *a, void *b, int two)
{
    pthread_t th;
    int started = two && pthread_create(&th, NULL, fn, b) == 0;
    fn(a);
    if (started)
        pthread_join(th, NULL);
    else if (two)
        fn(b);
}

bl_err bl_mib_write_image(builder *b, bl_buf *out)
{
    interner *in = &b->in;
    bl_err err = BL_OK;
    size_t nm = b->methods.n, nc = b->classes.n, nf = b->fields.n;
    uint32_t *order = malloc((nm + 1) * sizeof *order);
    size_t ntmp = nm > nc ? nm : nc; /* scratch for the sorts and both counting passes */
    if (nf > ntmp)
        ntmp = nf;
    uint32_t *tmp = malloc((ntmp + 1) * sizeof *tmp);
    uint32_t *start = calloc(nc + 1, sizeof *start);
    uint32_t *fstart = calloc(nc + 1, sizeof *fstart);
    uint32_t *forder = malloc((nf + 1) * sizeof *forder);
    uint64_t *key = malloc((nm + 1) * sizeof *key);
    bl_mi_slot *t1 = NULL, *t2 = NULL, *t3 = NULL;
    if (!order || !tmp || !start || !fstart || !forder || !key) {
        err = BL_ENOMEM;
        goto out;
    }
    /* counting sort of methods and fields by class, stable */
    for (size_t i = 0; i < nm; i++)
        start[b->methods.v[i].cls + 1]++;
    for (size_t c = 0; c < nc; c++)
        start[c + 1] += start[c];
    memcpy(tmp, start, nc * sizeof *tmp);
    for (size_t i = 0; i < nm; i++)
        order[tmp[b->methods.v[i].cls]++] = (uint32_t)i;
    for (size_t i = 0; i < nf; i++)
        fstart[b->fields.v[i].cls + 1]++;
    for (size_t c = 0; c < nc; c++)
        fstart[c + 1] += fstart[c];
    memcpy(tmp, fstart, nc * sizeof *tmp);
    for (size_t i = 0; i < nf; i++)
        forder[tmp[b->fields.v[i].cls]++] = (uint32_t)i;

    /* per class: methods by name, flags spread, signatures counted — on two
     * threads for a big index (classes are independent) */
    wi_job jobs[2];
    for (int k = 0; k < 2; k++) {
        memset(&jobs[k], 0, sizeof jobs[k]);
        jobs[k].b = b;
        jobs[k].order = order;
        jobs[k].tmp = tmp;
        jobs[k].key = key;
        jobs[k].start = start;
        jobs[k].fstart = fstart;
    }
    int threads = b->opts ? b->opts->threads : 0;
    int par = threads >= 2 ||
              (threads == 0 && nm >= WI_PAR_METHODS && sysconf(_SC_NPROCESSORS_ONLN) >= 2);
    size_t mid = par ? class_at_half(start, nc) : nc;
    jobs[0].c0 = 0;
    jobs[0].c1 = mid;
    jobs[1].c0 = mid;
    jobs[1].c1 = nc;
    run_pair(wi_sort, &jobs[0], &jobs[1], mid < nc);
    if (jobs[0].err || jobs[1].err) {
        err = BL_ENOMEM;
        goto out;
    }
    uint32_t n_sigs = jobs[0].n_sigs + jobs[1].n_sigs;
    /* a lazy build serves one retrace, which never looks a method up by its
     * original signature: an empty table (see want_class) */
    int sigs = !(b->opts && b->opts->want_class);
    if (!sigs)
        n_sigs = 0;
    /* extras: serialise per entry (items are in entry order) */
    BL_VEC(uint32_t) ex = { 0 };
    uint32_t zero = 0;
    BL_VEC_PUSH(ex, zero, err); /* word 0 unused: extra == 0 means none */
    for (size_t i = 0; i < b->extras.n && !err;) {
        uint32_t entry = b->extras.v[i].entry;
        size_t j = i;
        while (j < b->extras.n && b->extras.v[j].entry == entry)
            j++;
        uint32_t npos = 0, nrules = 0, outline = 0;
        for (size_t k = i; k < j; k++) {
            npos += b->extras.v[k].kind == EX_POS;
            nrules += b->extras.v[k].kind == EX_RULE;
            if (b->extras.v[k].kind == EX_OUTLINE)
                outline = in->ref[b->extras.v[k].a];
        }
        b->methods.v[entry].m.extra = (uint32_t)ex.n;
        BL_VEC_PUSH(ex, npos, err);
        for (size_t k = i; k < j && !err; k++)
            if (b->extras.v[k].kind == EX_POS) {
                BL_VEC_PUSH(ex, b->extras.v[k].a, err);
                BL_VEC_PUSH(ex, b->extras.v[k].b, err);
            }
        BL_VEC_PUSH(ex, outline, err);
        BL_VEC_PUSH(ex, nrules, err);
        for (size_t k = i; k < j && !err; k++)
            if (b->extras.v[k].kind == EX_RULE) {
                uint32_t cls_ref = in->ref[b->extras.v[k].a];
                BL_VEC_PUSH(ex, cls_ref, err);
                BL_VEC_PUSH(ex, b->extras.v[k].b, err);
            }
        i = j;
    }
    if (err) {
        free(ex.v);
        goto out;
    }

    uint32_t cap1 = pow2_at_least(nc), cap3 = pow2_at_least(n_sigs);
    t1 = bl_zalloc(cap1, sizeof *t1);
    t2 = bl_zalloc(cap1, sizeof *t2);
    t3 = bl_zalloc(cap3, sizeof *t3);
    if (!t1 || !t2 || !t3) {
        free(ex.v);
        err = BL_ENOMEM;
        goto out;
    }
    /* the hash tables are filled on a second thread while the sections are
     * written (both only read the builder from here on) */
    jobs[0].c0 = 0;
    jobs[0].c1 = nc;
    jobs[0].t1 = t1;
    jobs[0].t2 = t2;
    jobs[0].t3 = t3;
    jobs[0].cap1 = cap1;
    jobs[0].cap3 = cap3;
    jobs[0].sigs = sigs;
    pthread_t tables_th;
    int tables_started = par && pthread_create(&tables_th, NULL, wi_tables, &jobs[0]) == 0;
    if (!tables_started)
        wi_tables(&jobs[0]);

    /* header + sections */
    bl_mi_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, BL_MI_MAGIC, 8);
    h.format = BL_MI_FORMAT;
    h.map_version = b->st.map_version;
    h.mapping_lines = b->st.lines;
    h.malformed_lines = b->st.malformed;
    h.n_classes = (uint32_t)nc;
    h.n_methods = (uint32_t)nm;
    h.n_fields = (uint32_t)nf;
    h.n_sigs = n_sigs;
    h.cap_cls_obf = h.cap_cls_orig = cap1;
    h.cap_sig = cap3;
    h.compiler = in->ref[b->hdr[0]];
    h.compiler_version = in->ref[b->hdr[1]];
    h.min_api = in->ref[b->hdr[2]];
    h.pg_map_id = in->ref[b->hdr[3]];
    h.pg_map_hash = in->ref[b->hdr[4]];

    size_t total = sizeof h + in->pool.len + 64 + nc * sizeof(bl_mi_class) +
                   nm * sizeof(bl_mi_method) + nf * sizeof(bl_mi_field) + ex.n * 4 +
                   (2 * (size_t)cap1 + cap3) * sizeof(bl_mi_slot);
    if ((err = bl_buf_reserve(out, total))) {
        if (tables_started)
            pthread_join(tables_th, NULL);
        goto out_ex;
    }
    bl_mem_huge(out->data, out->alloc);
    bl_buf_append(out, &h, sizeof h);
    h.off_strings = out->len;
    h.len_strings = in->pool.len;
    bl_buf_append(out, in->pool.data, in->pool.len);
    pad8(out);
    h.off_classes = out->len;
    for (size_t c = 0; c < nc; c++) {
        bl_mi_class k = b->classes.v[c];
        k.obf = in->ref[k.obf];
        k.orig = in->ref[k.orig];
        k.source_file = in->ref[k.source_file];
        bl_buf_append(out, &k, sizeof k);
    }
    h.off_methods = out->len;
    for (size_t i = 0; i < nm; i++) {
        bl_mi_method m = b->methods.v[order[i]].m;
        m.obf = in->ref[m.obf];
        m.orig_class = in->ref[m.orig_class];
        m.orig_name = in->ref[m.orig_name];
        m.ret = in->ref[m.ret];
        m.params = in->ref[m.params];
        m.residual = in->ref[m.residual];
        bl_buf_append(out, &m, sizeof m);
    }
    h.off_fields = out->len;
    for (size_t i = 0; i < nf; i++) {
        bl_mi_field f = b->fields.v[forder[i]].f;
        f.obf = in->ref[f.obf];
        f.orig = in->ref[f.orig];
        f.type = in->ref[f.type];
        f.residual = in->ref[f.residual];
        bl_buf_append(out, &f, sizeof f);
    }
    h.off_extras = out->len;
    h.n_extras = ex.n;
    bl_buf_append(out, ex.v, ex.n * 4);
    pad8(out);
    if (tables_started)
        pthread_join(tables_th, NULL);
    tables_started = 0;
    h.off_cls_obf = out->len;
    bl_buf_append(out, t1, cap1 * sizeof *t1);
    h.off_cls_orig = out->len;
    bl_buf_append(out, t2, cap1 * sizeof *t2);
    h.off_sig = out->len;
    bl_buf_append(out, t3, cap3 * sizeof *t3);
    h.file_size = out->len;
    memcpy(out->data, &h, sizeof h);
out_ex:
    free(ex.v);
out:
    free(order);
    free(tmp);
    free(start);
    free(fstart);
    free(forder);
    free(key);
    free(t1);
    free(t2);
    free(t3);
    return err;
}

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bl_err bl_mapindex_build(const char *data, size_t len, const bl_mi_build_opts *opts,
                         bl_buf *out, bl_mi_stats *stats)
{
    builder b;
    uint64_t t0 = mono_us();
    bl_err err = bl_mib_builder_init(&b, opts, len);
    b.st.threads = 1;
    b.st.parts = 1;
    if (!err)
        err = bl_mib_parse_mapping(&b, data, len);
    uint64_t t1 = mono_us();
    if (!err)
        err = bl_mib_write_image(&b, out);
    b.st.parse_us = t1 - t0;
    b.st.write_us = mono_us() - t1;
    if (!err) {
        bl_mi_header *h = (bl_mi_header *)(void *)out->data;
        h->mapping_size = len;
        h->checksum = 0;
        if (!opts || !opts->no_checksum)
            h->checksum = bl_mib_image_checksum(out->data, out->len);
    }
    b.st.classes = (uint32_t)b.classes.n;
    b.st.methods = (uint32_t)b.methods.n;
    b.st.fields = (uint32_t)b.fields.n;
    if (stats)
        *stats = b.st;
    bl_mib_builder_free(&b);
    return err;
}

bl_err bl_mapindex_build_file(const char *mapping_path, const char *index_path,
                              const bl_mi_build_opts *opts, bl_mi_stats *stats)
{
    bl_err err = BL_OK;
    int fd = open(mapping_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return BL_EIO;
    }
    const char *data = "";
    size_t len = (size_t)st.st_size;
    void *map = NULL;
    if (len) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            close(fd);
            return BL_EIO;
        }
        data = map;
        (void)madvise(map, len, MADV_SEQUENTIAL);
    }
    close(fd);
    bl_buf out;
    bl_buf_init(&out, 0);
    err = bl_mapindex_build(data, len, opts, &out, stats);
    if (map)
        munmap(map, len);
    if (err) {
        bl_buf_cleanup(&out);
        return err;
    }
    size_t pl = strlen(index_path);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        bl_buf_cleanup(&out);
        return BL_ENOMEM;
    }
    memcpy(tmp, index_path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    int ofd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (ofd < 0) {
        err = BL_EIO;
    } else {
        size_t off = 0;
        while (off < out.len) {
            ssize_t w = write(ofd, out.data + off, out.len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                err = BL_EIO;
                break;
            }
            off += (size_t)w;
        }
        if (!err && fsync(ofd) != 0)
            err = BL_EIO;
        if (close(ofd) != 0 && !err)
            err = BL_EIO;
        if (!err && rename(tmp, index_path) != 0)
            err = BL_EIO;
        if (err)
            unlink(tmp);
    }
    free(tmp);
    bl_buf_cleanup(&out);
    return err;
}
