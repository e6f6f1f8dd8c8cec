/*
 * symbol_testutil.h — helpers for tests of the symbolication core
 * (header-only): an in-memory index of mapping text, retrace to a string.
 */
#ifndef BL_SYMBOL_TESTUTIL_H
#define BL_SYMBOL_TESTUTIL_H

#include "symbol/mapindex.h"
#include "symbol/retrace.h"
#include "testutil.h"

/* Diagnostics of a build, as "line: message\n" lines. */
static inline void tu_diag_collect(void *ctx, const bl_mi_diag *d)
{
    bl_buf *b = ctx;
    char line[512];
    int k = snprintf(line, sizeof line, "%llu: %s\n", (unsigned long long)d->line, d->message);
    ck_assert(k > 0 && (size_t)k < sizeof line);
    ck_assert_int_eq(bl_buf_append(b, line, (size_t)k), BL_OK);
}

/* Builds an in-memory index of `mapping` text with opts->threads =
 * `threads` (see bl_mi_build_opts); the caller closes the index and cleans
 * up img. When diags is not NULL it receives the diagnostics. */
/* Builds an in-memory index of `mapping` text with `o` (may be NULL); the
 * caller closes the index and cleans up img. `st` may be NULL. */
static inline bl_mapindex *tu_index_opts(const char *mapping, size_t n,
                                         const bl_mi_build_opts *o, bl_buf *img,
                                         bl_mi_stats *st)
{
    bl_buf_init(img, 0);
    ck_assert_int_eq(bl_mapindex_build(mapping, n, o, img, st), BL_OK);
    bl_mapindex *mi = NULL;
    ck_assert_int_eq(bl_mapindex_from_memory(img->data, img->len, &mi), BL_OK);
    return mi;
}

static inline bl_mapindex *tu_index_threads(const char *mapping, size_t n, int threads,
                                            bl_buf *img, bl_mi_stats *st, bl_buf *diags)
{
    bl_mi_build_opts o = { 0 };
    o.threads = threads;
    if (diags) {
        o.diag = tu_diag_collect;
        o.diag_ctx = diags;
    }
    return tu_index_opts(mapping, n, &o, img, st);
}

/* Builds an in-memory index of `mapping` text; the caller closes the index
 * and cleans up img. */
static inline bl_mapindex *tu_index_of(const char *mapping, size_t n, bl_buf *img,
                                       bl_mi_stats *st)
{
    return tu_index_opts(mapping, n, NULL, img, st);
}

/* Appends a text dump of the whole index to out: header counts, every
 * class, method entry (strings resolved, extras decoded) and field in
 * table order — equal dumps mean equal indexes up to string placement. */
static inline void tu_index_dump(const bl_mapindex *mi, bl_buf *out)
{
    const bl_mi_header *h = bl_mapindex_header(mi);
    char line[4096];
#define TU_S(ref) bl_mapindex_str(mi, (ref))
#define TU_PUT(...)                                                                    \
    do {                                                                               \
        int k_ = snprintf(line, sizeof line, __VA_ARGS__);                             \
        ck_assert(k_ >= 0 && (size_t)k_ < sizeof line);                                \
        ck_assert_int_eq(bl_buf_append(out, line, (size_t)k_), BL_OK);                 \
    } while (0)
    TU_PUT("version %u lines %llu malformed %llu classes %u methods %u fields %u sigs %u\n",
           h->map_version, (unsigned long long)h->mapping_lines,
           (unsigned long long)h->malformed_lines, h->n_classes, h->n_methods, h->n_fields,
           h->n_sigs);
    TU_PUT("hdr [%s] [%s] [%s] [%s] [%s]\n", TU_S(h->compiler), TU_S(h->compiler_version),
           TU_S(h->min_api), TU_S(h->pg_map_id), TU_S(h->pg_map_hash));
    for (uint32_t i = 0; i < h->n_classes; i++) {
        const bl_mi_class *c = bl_mapindex_class_at(mi, i);
        ck_assert_ptr_nonnull(c);
        ck_assert_ptr_eq(bl_mapindex_class_by_obf(mi, TU_S(c->obf), strlen(TU_S(c->obf))), c);
        TU_PUT("class %s -> %s file [%s] flags %x\n", TU_S(c->orig), TU_S(c->obf),
               TU_S(c->source_file), c->flags);
        const bl_mi_method *m;
        uint32_t nm = bl_mapindex_class_methods(mi, c, &m);
        for (uint32_t j = 0; j < nm; j++) {
            TU_PUT("  m %s %s.%s(%s)%s res [%s] min %u:%u orig %u:%u flags %x", TU_S(m[j].obf),
                   TU_S(m[j].orig_class), TU_S(m[j].orig_name), TU_S(m[j].params),
                   TU_S(m[j].ret), TU_S(m[j].residual), m[j].min_start, m[j].min_end,
                   m[j].orig_start, m[j].orig_end, m[j].flags);
            uint64_t nw;
            const uint32_t *x = bl_mapindex_extras(mi, &m[j], &nw);
            if (x) {
                uint64_t k = 0;
                uint32_t npos = x[k++];
                TU_PUT(" pos");
                for (uint32_t q = 0; q < npos && k + 1 < nw; q++, k += 2)
                    TU_PUT(" %u=%u", x[k], x[k + 1]);
                TU_PUT(" outline [%s] rules", k < nw ? TU_S(x[k]) : "?");
                k++;
                uint32_t nr = k < nw ? x[k++] : 0;
                for (uint32_t q = 0; q < nr && k + 1 < nw; q++, k += 2)
                    TU_PUT(" [%s]/%u", TU_S(x[k]), x[k + 1]);
            }
            TU_PUT("\n");
        }
        const bl_mi_field *f;
        uint32_t nf = bl_mapindex_class_fields(mi, c, &f);
        for (uint32_t j = 0; j < nf; j++)
            TU_PUT("  f %s %s %s res [%s] flags %x\n", TU_S(f[j].obf), TU_S(f[j].type),
                   TU_S(f[j].orig), TU_S(f[j].residual), f[j].flags);
    }
#undef TU_PUT
#undef TU_S
}

/* Retraces `in`; returns a heap string the caller frees. */
static inline char *tu_retrace_str(const bl_mapindex *mi, int verbose, const char *in)
{
    bl_retrace_opts o = { verbose };
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_retrace_text(mi, &o, in, strlen(in), &out), BL_OK);
    if (!out.data)
        return strdup("");
    return out.data;
}

#endif
