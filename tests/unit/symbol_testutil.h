/*
 * symbol_testutil.h — helpers for tests of the symbolication core
 * (header-only): an in-memory index of mapping text, retrace to a string.
 */
#ifndef BL_SYMBOL_TESTUTIL_H
#define BL_SYMBOL_TESTUTIL_H

#include "symbol/mapindex.h"
#include "symbol/retrace.h"
#include "testutil.h"

/* Builds an in-memory index of `mapping` text; the caller closes the index
 * and cleans up img. */
static inline bl_mapindex *tu_index_of(const char *mapping, size_t n, bl_buf *img,
                                       bl_mi_stats *st)
{
    bl_buf_init(img, 0);
    ck_assert_int_eq(bl_mapindex_build(mapping, n, NULL, img, st), BL_OK);
    bl_mapindex *mi = NULL;
    ck_assert_int_eq(bl_mapindex_from_memory(img->data, img->len, &mi), BL_OK);
    return mi;
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
