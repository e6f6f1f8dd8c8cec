/*
 * cpool.c — constant-pool additions with deduplication (see cpool.h).
 *
 * The hash table maps the encoded bytes of an entry (tag byte + body, exactly
 * as in the file) to its index. Bytes of original entries are read from the
 * class data, bytes of added ones from `extra`. Invariant: used < nslots / 2
 * (the table doubles before that), so probing always ends at an empty slot.
 */
#include "cpool.h"

#include "bytecode.h"

#include <stdlib.h>
#include <string.h>

#define POOL_MAX 65535u /* largest constant_pool_count */

/* Encoded size of the entry starting at p (tag byte included), for the
 * indexed kinds. */
static uint32_t entry_size(const uint8_t *p)
{
    switch (p[0]) {
    case BL_CP_UTF8:
        return 3u + bl_be16(p + 1);
    case BL_CP_CLASS:
        return 3;
    default: /* Integer, NameAndType, Fieldref, Methodref */
        return 5;
    }
}

static int indexed(uint8_t tag)
{
    return tag == BL_CP_UTF8 || tag == BL_CP_INTEGER || tag == BL_CP_CLASS ||
           tag == BL_CP_NAMEANDTYPE || tag == BL_CP_FIELDREF || tag == BL_CP_METHODREF;
}

static uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* O(1) per entry: the length and three 8-byte windows (start, middle, end);
 * short entries byte by byte. Equal entries hash equal; collisions only cost
 * a memcmp. */
static uint32_t hash(const uint8_t *p, uint32_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    if (n >= 8) {
        h = (h ^ ld64(p)) * 0xff51afd7ed558ccdull;
        h = (h ^ ld64(p + n / 2 - (n / 2 >= 4 ? 4 : 0))) * 0xc4ceb9fe1a85ec53ull;
        h = (h ^ ld64(p + n - 8)) * 0xff51afd7ed558ccdull;
    } else {
        for (uint32_t i = 0; i < n; i++)
            h = (h ^ p[i]) * 0x100000001b3ull;
    }
    h ^= h >> 33;
    return (uint32_t)h;
}

static const uint8_t *entry_bytes(const bl_cpool *p, uint32_t idx)
{
    uint32_t orig = bl_cf_pool_count(p->cf);
    if (idx < orig)
        return p->data + bl_cf_pool_off(p->cf, idx);
    return (const uint8_t *)p->extra.data + p->new_off[idx - orig];
}

/* Slot of the entry equal to key, or of the empty slot where it belongs. */
static uint32_t *find_slot(const bl_cpool *p, const uint8_t *key, uint32_t n, uint32_t h)
{
    uint32_t mask = p->nslots - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t *s = &p->slots[i];
        if (!*s)
            return s;
        const uint8_t *e = entry_bytes(p, *s);
        if (e[0] == key[0] && entry_size(e) == n && memcmp(e, key, n) == 0)
            return s;
    }
}

static bl_err grow(bl_cpool *p)
{
    uint32_t old_n = p->nslots;
    uint32_t *old = p->slots;
    p->nslots = old_n ? old_n * 2 : 1024;
    p->slots = calloc(p->nslots, sizeof *p->slots);
    if (!p->slots) {
        p->slots = old;
        p->nslots = old_n;
        return BL_ENOMEM;
    }
    for (uint32_t i = 0; i < old_n; i++)
        if (old[i]) {
            const uint8_t *e = entry_bytes(p, old[i]);
            uint32_t n = entry_size(e);
            *find_slot(p, e, n, hash(e, n)) = old[i];
        }
    free(old);
    return BL_OK;
}

static bl_err insert(bl_cpool *p, uint32_t idx)
{
    if ((p->used + 1) * 2 >= p->nslots) {
        bl_err e = grow(p);
        if (e)
            return e;
    }
    const uint8_t *e = entry_bytes(p, idx);
    uint32_t n = entry_size(e);
    uint32_t *s = find_slot(p, e, n, hash(e, n));
    if (!*s) { /* the first of equal original entries wins (lowest index) */
        *s = idx;
        p->used++;
    }
    return BL_OK;
}

bl_err bl_cpool_init(bl_cpool *p, const bl_cf *cf)
{
    memset(p, 0, sizeof *p);
    p->cf = cf;
    p->data = bl_cf_bytes(cf, NULL);
    p->count = bl_cf_pool_count(cf);
    bl_buf_init(&p->extra, 0);
    uint32_t n = 0;
    for (uint32_t i = 1; i < p->count; i++)
        n += indexed(bl_cf_pool_tag(cf, i));
    uint32_t want = 1024;
    while (want < n * 2 + 64)
        want *= 2;
    p->nslots = want;
    p->slots = calloc(want, sizeof *p->slots);
    if (!p->slots)
        return BL_ENOMEM;
    for (uint32_t i = 1; i < p->count; i++)
        if (indexed(bl_cf_pool_tag(cf, i))) {
            bl_err e = insert(p, i);
            if (e) {
                bl_cpool_cleanup(p);
                return e;
            }
        }
    return BL_OK;
}

void bl_cpool_cleanup(bl_cpool *p)
{
    bl_buf_cleanup(&p->extra);
    free(p->new_off);
    free(p->slots);
    p->new_off = NULL;
    p->slots = NULL;
}

/* Looks up the encoded entry key[0..n); appends it when missing. */
static bl_err lookup(bl_cpool *p, const uint8_t *key, uint32_t n, uint16_t *idx)
{
    uint32_t h = hash(key, n);
    uint32_t *s = find_slot(p, key, n, h);
    if (*s) {
        *idx = (uint16_t)*s;
        return BL_OK;
    }
    if (p->count + 1 > POOL_MAX)
        return BL_ETOOBIG;
    if (p->n_new == p->cap_new) {
        uint32_t nc = p->cap_new ? p->cap_new * 2 : 16;
        uint32_t *no = realloc(p->new_off, nc * sizeof *no);
        if (!no)
            return BL_ENOMEM;
        p->new_off = no;
        p->cap_new = nc;
    }
    size_t at = p->extra.len;
    bl_err e = bl_buf_append(&p->extra, key, n);
    if (e)
        return e;
    p->new_off[p->n_new++] = (uint32_t)at;
    uint32_t ni = p->count++;
    e = insert(p, ni);
    if (e) { /* keep the table consistent: forget the entry */
        p->count--;
        p->n_new--;
        p->extra.len = at;
        return e;
    }
    *idx = (uint16_t)ni;
    return BL_OK;
}

bl_err bl_cpool_utf8(bl_cpool *p, const char *s, size_t n, uint16_t *idx)
{
    if (n > 65535)
        return BL_EINVAL;
    uint8_t stackbuf[256];
    uint8_t *key = n + 3 <= sizeof stackbuf ? stackbuf : malloc(n + 3);
    if (!key)
        return BL_ENOMEM;
    key[0] = BL_CP_UTF8;
    key[1] = (uint8_t)(n >> 8);
    key[2] = (uint8_t)n;
    memcpy(key + 3, s, n);
    bl_err e = lookup(p, key, (uint32_t)n + 3, idx);
    if (key != stackbuf)
        free(key);
    return e;
}

static bl_err ref2(bl_cpool *p, uint8_t tag, uint16_t a, uint16_t b, uint16_t *idx)
{
    uint8_t key[5] = {tag, (uint8_t)(a >> 8), (uint8_t)a, (uint8_t)(b >> 8), (uint8_t)b};
    return lookup(p, key, 5, idx);
}

bl_err bl_cpool_class(bl_cpool *p, const char *name, size_t n, uint16_t *idx)
{
    uint16_t u;
    bl_err e = bl_cpool_utf8(p, name, n, &u);
    if (e)
        return e;
    uint8_t key[3] = {BL_CP_CLASS, (uint8_t)(u >> 8), (uint8_t)u};
    return lookup(p, key, 3, idx);
}

bl_err bl_cpool_integer(bl_cpool *p, uint32_t v, uint16_t *idx)
{
    uint8_t key[5] = {BL_CP_INTEGER, (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
                      (uint8_t)v};
    return lookup(p, key, 5, idx);
}

bl_err bl_cpool_nat(bl_cpool *p, const char *name, const char *desc, uint16_t *idx)
{
    uint16_t a, b;
    bl_err e = bl_cpool_utf8(p, name, strlen(name), &a);
    if (!e)
        e = bl_cpool_utf8(p, desc, strlen(desc), &b);
    return e ? e : ref2(p, BL_CP_NAMEANDTYPE, a, b, idx);
}

bl_err bl_cpool_methodref(bl_cpool *p, const char *cls, const char *name, const char *desc,
                          uint16_t *idx)
{
    uint16_t c, nt;
    bl_err e = bl_cpool_class(p, cls, strlen(cls), &c);
    if (!e)
        e = bl_cpool_nat(p, name, desc, &nt);
    return e ? e : ref2(p, BL_CP_METHODREF, c, nt, idx);
}

bl_err bl_cpool_fieldref(bl_cpool *p, const char *cls, const char *name, const char *desc,
                         uint16_t *idx)
{
    uint16_t c, nt;
    bl_err e = bl_cpool_class(p, cls, strlen(cls), &c);
    if (!e)
        e = bl_cpool_nat(p, name, desc, &nt);
    return e ? e : ref2(p, BL_CP_FIELDREF, c, nt, idx);
}

const char *bl_cpool_class_name(const bl_cpool *p, uint16_t idx, uint32_t *n)
{
    uint32_t orig = bl_cf_pool_count(p->cf);
    if (idx == 0 || idx >= p->count || (idx < orig && bl_cf_pool_tag(p->cf, idx) != BL_CP_CLASS))
        return NULL;
    const uint8_t *e = entry_bytes(p, idx);
    if (e[0] != BL_CP_CLASS)
        return NULL;
    const uint8_t *u = entry_bytes(p, bl_be16(e + 1));
    *n = bl_be16(u + 1);
    return (const char *)u + 3;
}
