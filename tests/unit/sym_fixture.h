/*
 * sym_fixture.h — one mapping index and a check of bl_symbolicate_method,
 * for the symbolication tests (header-only; one fixture per test binary).
 */
#ifndef BL_SYM_FIXTURE_H
#define BL_SYM_FIXTURE_H

#include "symbol/mapindex.h"
#include "symbol/symbolicate.h"
#include "testutil.h"

static bl_buf fx_img, fx_store;
static bl_mapindex *fx_mi;

static inline void load(const char *text, size_t n)
{
    bl_buf_init(&fx_img, 0);
    bl_buf_init(&fx_store, 0);
    ck_assert_int_eq(bl_mapindex_build(text, n, NULL, &fx_img, NULL), BL_OK);
    ck_assert_int_eq(bl_mapindex_from_memory(fx_img.data, fx_img.len, &fx_mi), BL_OK);
}

static inline void unload(void)
{
    bl_mapindex_close(fx_mi);
    fx_mi = NULL;
    bl_buf_cleanup(&fx_img);
    bl_buf_cleanup(&fx_store);
}

static inline void check(const char *cls, const char *m, const char *d, const char *ecls,
                  const char *em, const char *ed, const char *ef, bl_sym_how how)
{
    bl_symbol s;
    ck_assert_int_eq(bl_symbolicate_method(fx_mi, cls, m, d, &fx_store, &s), BL_OK);
    ck_assert_str_eq(s.cls, ecls);
    ck_assert_str_eq(s.method, em);
    ck_assert_str_eq(s.desc, ed);
    ck_assert_str_eq(s.file, ef);
    ck_assert_int_eq(s.how, how);
}

#endif
