/*
 * cfbuild.h — test helper (header-only): assembles small class files by hand
 * for crafted cases (old versions, jsr/ret, wide, switches, long methods).
 *
 * Usage: cb_init(&b, major); add pool entries (cb_utf8, cb_class, ...; equal
 * entries are not deduplicated here, on purpose, so tests control the pool);
 * cb_method(...) for each method; cb_finish(&b, this_class, super_class)
 * returns the bytes in b.out (freed by cb_free). Aborts on allocation
 * failure (tests only).
 */
#ifndef BL_CFBUILD_H
#define BL_CFBUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

typedef struct cb {
    uint16_t major;
    uint16_t count; /* next pool index */
    bl_buf pool, methods, out;
    uint16_t n_methods;
} cb;

static inline void cb_put(bl_buf *b, const void *p, size_t n)
{
    if (bl_buf_append(b, p, n))
        abort();
}
static inline void cb_u1(bl_buf *b, unsigned v)
{
    uint8_t x = (uint8_t)v;
    cb_put(b, &x, 1);
}
static inline void cb_u2(bl_buf *b, unsigned v)
{
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    cb_put(b, x, 2);
}
static inline void cb_u4(bl_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    cb_put(b, x, 4);
}

static inline void cb_init(cb *b, uint16_t major)
{
    memset(b, 0, sizeof *b);
    b->major = major;
    b->count = 1;
    bl_buf_init(&b->pool, 0);
    bl_buf_init(&b->methods, 0);
    bl_buf_init(&b->out, 0);
}

static inline void cb_free(cb *b)
{
    bl_buf_cleanup(&b->pool);
    bl_buf_cleanup(&b->methods);
    bl_buf_cleanup(&b->out);
}

static inline uint16_t cb_utf8(cb *b, const char *s)
{
    cb_u1(&b->pool, 1);
    cb_u2(&b->pool, (unsigned)strlen(s));
    cb_put(&b->pool, s, strlen(s));
    return b->count++;
}
static inline uint16_t cb_ref1(cb *b, unsigned tag, unsigned a)
{
    cb_u1(&b->pool, tag);
    cb_u2(&b->pool, a);
    return b->count++;
}
static inline uint16_t cb_ref2(cb *b, unsigned tag, unsigned a, unsigned c)
{
    cb_u1(&b->pool, tag);
    cb_u2(&b->pool, a);
    cb_u2(&b->pool, c);
    return b->count++;
}
static inline uint16_t cb_class(cb *b, const char *name) { return cb_ref1(b, 7, cb_utf8(b, name)); }
static inline uint16_t cb_string(cb *b, const char *s) { return cb_ref1(b, 8, cb_utf8(b, s)); }
static inline uint16_t cb_int(cb *b, uint32_t v)
{
    cb_u1(&b->pool, 3);
    cb_u4(&b->pool, v);
    return b->count++;
}
static inline uint16_t cb_nat(cb *b, const char *name, const char *desc)
{
    return cb_ref2(b, 12, cb_utf8(b, name), cb_utf8(b, desc));
}
/* tag 9 field, 10 method, 11 interface method */
static inline uint16_t cb_member(cb *b, unsigned tag, uint16_t cls, const char *name,
                                 const char *desc)
{
    return cb_ref2(b, tag, cls, cb_nat(b, name, desc));
}

/* One method. code may be NULL (no Code attribute). exc: n_exc entries of 4
 * u16 (start, end, handler, catch_type). code_attrs: raw bytes of the Code
 * attribute's attributes (n_code_attrs of them). */
static inline void cb_method(cb *b, unsigned access, const char *name, const char *desc,
                             unsigned max_stack, unsigned max_locals, const uint8_t *code,
                             uint32_t code_len, const uint16_t *exc, unsigned n_exc,
                             const void *code_attrs, size_t code_attrs_len,
                             unsigned n_code_attrs)
{
    bl_buf *m = &b->methods;
    cb_u2(m, access);
    cb_u2(m, cb_utf8(b, name));
    cb_u2(m, cb_utf8(b, desc));
    if (!code) {
        cb_u2(m, 0);
    } else {
        cb_u2(m, 1);
        cb_u2(m, cb_utf8(b, "Code"));
        cb_u4(m, (uint32_t)(12 + code_len + 8u * n_exc + code_attrs_len));
        cb_u2(m, max_stack);
        cb_u2(m, max_locals);
        cb_u4(m, code_len);
        cb_put(m, code, code_len);
        cb_u2(m, n_exc);
        for (unsigned k = 0; k < 4 * n_exc; k++)
            cb_u2(m, exc[k]);
        cb_u2(m, n_code_attrs);
        cb_put(m, code_attrs, code_attrs_len);
    }
    b->n_methods++;
}

/* Assembles the class; the bytes are b->out.data, b->out.len. */
static inline void cb_finish(cb *b, uint16_t this_class, uint16_t super_class)
{
    bl_buf *o = &b->out;
    bl_buf_reset(o);
    cb_u4(o, 0xCAFEBABEu);
    cb_u2(o, 0);
    cb_u2(o, b->major);
    cb_u2(o, b->count);
    cb_put(o, b->pool.data, b->pool.len);
    cb_u2(o, 0x21); /* public super */
    cb_u2(o, this_class);
    cb_u2(o, super_class);
    cb_u2(o, 0); /* interfaces */
    cb_u2(o, 0); /* fields */
    cb_u2(o, b->n_methods);
    cb_put(o, b->methods.data, b->methods.len);
    cb_u2(o, 0); /* attributes */
}

#endif
