/*
 * cpool.h — growing a parsed class's constant pool without duplicates
 * (JVMS §4.4).
 *
 * A bl_cpool looks entries up by their encoded bytes (tag + body, which is
 * the identity of an entry: two Utf8 entries with the same bytes, two Class
 * entries naming the same Utf8 index, ... are interchangeable). An existing
 * equal entry's index is returned; otherwise the entry is appended to `extra`
 * (the bytes to write after the original pool) with the next index.
 * Long/Double, String, handles and dynamic entries are never added.
 *
 * Only entries of the kinds that can be added (Utf8, Integer, Class,
 * NameAndType, Fieldref, Methodref) are indexed, once, in bl_cpool_init: O(pool bytes).
 * Lookups are O(1) on average (open addressing, FNV-1a over the bytes).
 */
#ifndef BL_CPOOL_H
#define BL_CPOOL_H

#include <stddef.h>
#include <stdint.h>
#include "classfile.h"
#include "common/blerr.h"
#include "common/buf.h"

typedef struct bl_cpool {
    const bl_cf *cf;        /* borrowed */
    const uint8_t *data;    /* the class bytes (borrowed from cf) */
    uint32_t count;         /* constant_pool_count after the additions so far */
    bl_buf extra;           /* owned: encoded new entries, in index order */
    uint32_t *new_off;      /* owned: offset in extra of new entry k (index orig+k) */
    uint32_t n_new, cap_new;
    uint32_t *slots;        /* owned: hash table of indexes, 0 = empty */
    uint32_t nslots;        /* power of two */
    uint32_t used;
} bl_cpool;

/* Indexes the pool of cf. BL_ENOMEM. On failure nothing needs cleanup. */
bl_err bl_cpool_init(bl_cpool *p, const bl_cf *cf);
/* Frees what init and the additions allocated. */
void bl_cpool_cleanup(bl_cpool *p);

/* Each returns in *idx the index of an equal existing entry or of a new one.
 * BL_ETOOBIG when the pool would exceed 65,535 entries (constant_pool_count
 * is a u2), BL_ENOMEM; *idx is then untouched. s must be at most 65,535 bytes
 * (BL_EINVAL). */
bl_err bl_cpool_utf8(bl_cpool *p, const char *s, size_t n, uint16_t *idx);
bl_err bl_cpool_class(bl_cpool *p, const char *name, size_t n, uint16_t *idx);
bl_err bl_cpool_integer(bl_cpool *p, uint32_t v, uint16_t *idx);
bl_err bl_cpool_nat(bl_cpool *p, const char *name, const char *desc, uint16_t *idx);
bl_err bl_cpool_methodref(bl_cpool *p, const char *cls, const char *name, const char *desc,
                          uint16_t *idx);
bl_err bl_cpool_fieldref(bl_cpool *p, const char *cls, const char *name, const char *desc,
                         uint16_t *idx);

/* The name of Class entry idx (original or added): *n bytes at the returned
 * pointer, not NUL-terminated, valid until the next addition. NULL when idx
 * is not a Class entry. */
const char *bl_cpool_class_name(const bl_cpool *p, uint16_t idx, uint32_t *n);

/* Number of entries added so far (constant_pool_count = original + this). */
static inline uint32_t bl_cpool_added(const bl_cpool *p) { return p->n_new; }

#endif
