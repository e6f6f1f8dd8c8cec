/*
 * sym_fixture.h — one mapping index and a check of bl_symbolicate_method,
 * for the symbolication tests (header-only; one fixture per test binary).
 */
#ifndef BL_SYM_FIXTURE_H
#define BL_SYM_FIXTURE_H

#include "symbol/mapindex.h"
#include "symbol/symbolicate.h"
#include "testutil.h"

static bl_buf img, store;
static bl_mapindex *mi;

static inline void load(const char *text, size_t n)
{
    bl_buf_init(&img, 0);
    bl_buf_init(&store, 0);
    ck_assert_int_eq(bl_mapindex_build(text, n, NULL, &img, NULL), BL_OK);
    ck_assert_int_eq(bl_mapindex_from_memory(img.data, img.len, &mi), BL_OK);
}

static inline void unload(void)
{
    bl_mapindex_close(mi);
    mi = NULL;
    bl_buf_cleanup(&img);
    bl_buf_cleanup(&store);
}

static inline void check(const char *cls, const char *m, const char *d, const char *ecls,
                  const char *em, const char *ed, const char *ef, bl_sym_how how)
{
    bl_symbol s;
    ck_assert_int_eq(bl_symbolicate_method(mi, cls, m, d, &store, &s), BL_OK);
    ck_assert_str_eq(s.cls, ecls);
    ck_assert_str_eq(s.method, em);
    ck_assert_str_eq(s.desc, ed);
    ck_assert_str_eq(s.file, ef);
    ck_assert_int_eq(s.how, how);
}

#endif
