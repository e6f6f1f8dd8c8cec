/*
 * mapindex.c — check and read the mmap-able mapping index (see mapindex.h).
 *
 * The index is built in two steps, each in its own file (internal state in
 * mapindex_impl.h):
 *   mapindex_parse.c  the mapping text, line by line (bl_mapping_parse_line),
 *                     into a builder: names interned (every distinct byte
 *                     string a dense id, stored once in the string pool),
 *                     classes, method entries (mapped ranges) and fields in
 *                     file order, inline groups marked GROUP_START
 *                     (innermost) and OUTER (last), R8 metadata attached to
 *                     the line above it under the map version in force;
 *   mapindex_write.c  the builder into an image: methods ordered by class,
 *                     obfuscated name and file order, method-level flags
 *                     spread, ids turned into string references, sections
 *                     and the three hash tables written out.
 *
 * Invariants of a built image: every string reference points at a NUL-
 * terminated string inside the strings section; class method/field slices
 * are inside their tables; every hash slot indexes its table.
 */
#include "symbol/mapindex_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

struct bl_mapindex {
    const uint8_t *base;
    size_t len;
    int mapped; /* 1: base came from mmap and is unmapped on close */
    const bl_mi_header *h;
    const char *strings;
    const bl_mi_class *classes;
    const bl_mi_method *methods;
    const bl_mi_field *fields;
    const uint32_t *extras;
    const bl_mi_slot *cls_obf, *cls_orig, *sig;
};

/* XXH3-64 of an image (at least a header long) with the header's checksum
 * field taken as 0. */
uint64_t bl_mib_image_checksum(const void *img, size_t len)
{
    const size_t at = offsetof(bl_mi_header, checksum);
    static const uint8_t zero[8];
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, img, at);
    XXH3_64bits_update(&st, zero, sizeof zero);
    XXH3_64bits_update(&st, (const uint8_t *)img + at + 8, len - at - 8);
    return XXH3_64bits_digest(&st);
}

bl_err bl_mapindex_verify(const void *img, size_t len, const char **why)
{
    const char *w = "";
    bl_err e = BL_OK;
    bl_mi_header h;
    uint32_t format = 0;
    if (len >= 12)
        memcpy(&format, (const uint8_t *)img + 8, 4);
    if (len < 12 || memcmp(img, BL_MI_MAGIC, 8) != 0) {
        w = "not an index";
        e = BL_EFORMAT;
    } else if (format != BL_MI_FORMAT) {
        w = "written by another index format version";
        e = BL_EVERSION;
    } else if (len < sizeof h) {
        w = "too short";
        e = BL_EFORMAT;
    } else if (memcpy(&h, img, sizeof h), h.file_size != len) {
        w = "size mismatch";
        e = BL_EFORMAT;
    } else if (bl_mib_image_checksum(img, len) != h.checksum) {
        w = "checksum mismatch";
        e = BL_EFORMAT;
    }
    if (why)
        *why = w;
    return e;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

static int section_ok(size_t len, uint64_t off, uint64_t n, size_t size)
{
    if (off % 4 || off > len)
        return 0;
    if (size && n > (len - off) / size)
        return 0;
    return 1;
}

bl_err bl_mapindex_from_memory(const void *img, size_t len, bl_mapindex **out)
{
    *out = NULL;
    if (len < sizeof(bl_mi_header) || ((uintptr_t)img % 8) != 0)
        return BL_EFORMAT;
    const bl_mi_header *h = img;
    if (memcmp(h->magic, BL_MI_MAGIC, 8) != 0)
        return BL_EFORMAT;
    if (h->format != BL_MI_FORMAT)
        return BL_EVERSION;
    if (h->file_size != len || !section_ok(len, h->off_strings, h->len_strings, 1) ||
        h->len_strings < 4 || !section_ok(len, h->off_classes, h->n_classes, sizeof(bl_mi_class)) ||
        !section_ok(len, h->off_methods, h->n_methods, sizeof(bl_mi_method)) ||
        !section_ok(len, h->off_fields, h->n_fields, sizeof(bl_mi_field)) ||
        !section_ok(len, h->off_extras, h->n_extras, 4) || h->n_extras == 0 ||
        !section_ok(len, h->off_cls_obf, h->cap_cls_obf, sizeof(bl_mi_slot)) ||
        !section_ok(len, h->off_cls_orig, h->cap_cls_orig, sizeof(bl_mi_slot)) ||
        !section_ok(len, h->off_sig, h->cap_sig, sizeof(bl_mi_slot)))
        return BL_EFORMAT;
    const uint32_t caps[3] = { h->cap_cls_obf, h->cap_cls_orig, h->cap_sig };
    for (int i = 0; i < 3; i++)
        if (caps[i] == 0 || (caps[i] & (caps[i] - 1)))
            return BL_EFORMAT;
    const uint8_t *base = img;
    if (base[h->off_strings + h->len_strings - 1] != '\0')
        return BL_EFORMAT;
    bl_mapindex *mi = calloc(1, sizeof *mi);
    if (!mi)
        return BL_ENOMEM;
    mi->base = base;
    mi->len = len;
    mi->h = h;
    mi->strings = (const char *)base + h->off_strings;
    mi->classes = (const bl_mi_class *)(const void *)(base + h->off_classes);
    mi->methods = (const bl_mi_method *)(const void *)(base + h->off_methods);
    mi->fields = (const bl_mi_field *)(const void *)(base + h->off_fields);
    mi->extras = (const uint32_t *)(const void *)(base + h->off_extras);
    mi->cls_obf = (const bl_mi_slot *)(const void *)(base + h->off_cls_obf);
    mi->cls_orig = (const bl_mi_slot *)(const void *)(base + h->off_cls_orig);
    mi->sig = (const bl_mi_slot *)(const void *)(base + h->off_sig);
    *out = mi;
    return BL_OK;
}

bl_err bl_mapindex_open(const char *index_path, bl_mapindex **out)
{
    *out = NULL;
    int fd = open(index_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return BL_EIO;
    }
    if (st.st_size < (off_t)sizeof(bl_mi_header)) {
        close(fd);
        return BL_EFORMAT;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return BL_EIO;
    (void)madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
    bl_err err = bl_mapindex_verify(map, (size_t)st.st_size, NULL);
    (void)madvise(map, (size_t)st.st_size, MADV_RANDOM);
    if (!err)
        err = bl_mapindex_from_memory(map, (size_t)st.st_size, out);
    if (err) {
        munmap(map, (size_t)st.st_size);
        return err;
    }
    (*out)->mapped = 1;
    return BL_OK;
}

void bl_mapindex_close(bl_mapindex *mi)
{
    if (!mi)
        return;
    if (mi->mapped)
        munmap((void *)mi->base, mi->len);
    free(mi);
}

const bl_mi_header *bl_mapindex_header(const bl_mapindex *mi)
{
    return mi->h;
}

const char *bl_mapindex_str(const bl_mapindex *mi, uint32_t ref)
{
    if (ref < 4 || ref >= mi->h->len_strings)
        return mi->strings; /* "" */
    return mi->strings + ref;
}

uint32_t bl_mapindex_strlen(const bl_mapindex *mi, uint32_t ref)
{
    if (ref < 4 || ref >= mi->h->len_strings)
        return 0;
    uint32_t n;
    memcpy(&n, mi->strings + ref - 4, 4);
    if (n >= mi->h->len_strings - ref)
        return 0;
    return n;
}

static int str_is(const bl_mapindex *mi, uint32_t ref, const char *s, size_t n)
{
    return bl_mapindex_strlen(mi, ref) == n && memcmp(bl_mapindex_str(mi, ref), s, n) == 0;
}

static const bl_mi_class *class_lookup(const bl_mapindex *mi, const bl_mi_slot *t, uint32_t cap,
                                       int by_orig, const char *name, size_t n)
{
    uint64_t h = XXH3_64bits(name, n);
    uint32_t j = (uint32_t)h & (cap - 1), tag = (uint32_t)(h >> 32);
    for (uint32_t probes = 0; probes < cap; probes++) {
        const bl_mi_slot *s = &t[j];
        if (!s->idx1)
            return NULL;
        if (s->tag == tag && s->idx1 <= mi->h->n_classes) {
            const bl_mi_class *c = &mi->classes[s->idx1 - 1];
            if (str_is(mi, by_orig ? c->orig : c->obf, name, n))
                return c;
        }
        j = (j + 1) & (cap - 1);
    }
    return NULL;
}

const bl_mi_class *bl_mapindex_class_by_obf(const bl_mapindex *mi, const char *name, size_t n)
{
    return class_lookup(mi, mi->cls_obf, mi->h->cap_cls_obf, 0, name, n);
}

const bl_mi_class *bl_mapindex_class_by_orig(const bl_mapindex *mi, const char *name, size_t n)
{
    return class_lookup(mi, mi->cls_orig, mi->h->cap_cls_orig, 1, name, n);
}

uint32_t bl_mapindex_class_methods(const bl_mapindex *mi, const bl_mi_class *c,
                                   const bl_mi_method **first)
{
    *first = NULL;
    if (c->method_first > mi->h->n_methods || c->method_count > mi->h->n_methods - c->method_first)
        return 0;
    *first = mi->methods + c->method_first;
    return c->method_count;
}

uint32_t bl_mapindex_class_fields(const bl_mapindex *mi, const bl_mi_class *c,
                                  const bl_mi_field **first)
{
    *first = NULL;
    if (c->field_first > mi->h->n_fields || c->field_count > mi->h->n_fields - c->field_first)
        return 0;
    *first = mi->fields + c->field_first;
    return c->field_count;
}

static int cmp_str(const bl_mapindex *mi, uint32_t ref, const char *s, size_t n)
{
    /* most obfuscated names differ in their first byte */
    const unsigned char *r = (const unsigned char *)bl_mapindex_str(mi, ref);
    if (n && r[0] != (unsigned char)s[0])
        return r[0] < (unsigned char)s[0] ? -1 : 1;
    uint32_t rn = bl_mapindex_strlen(mi, ref);
    int c = memcmp(bl_mapindex_str(mi, ref), s, rn < n ? rn : n);
    if (c)
        return c;
    return rn < n ? -1 : rn > n;
}

uint32_t bl_mapindex_methods(const bl_mapindex *mi, const bl_mi_class *c, const char *name,
                             size_t n, const bl_mi_method **first)
{
    const bl_mi_method *ms;
    uint32_t cnt = bl_mapindex_class_methods(mi, c, &ms);
    *first = NULL;
    uint32_t lo = 0, hi = cnt;
    while (lo < hi) { /* first entry with name >= query */
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_str(mi, ms[mid].obf, name, n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t e = lo;
    while (e < cnt && str_is(mi, ms[e].obf, name, n))
        e++;
    if (e == lo)
        return 0;
    *first = ms + lo;
    return e - lo;
}

/* The class whose method slice holds method index i (method_first grows
 * with the class index, so a binary search finds it). */
static const bl_mi_class *owner_of(const bl_mapindex *mi, uint32_t i)
{
    uint32_t lo = 0, hi = mi->h->n_classes;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const bl_mi_class *c = &mi->classes[mid];
        if (i < c->method_first)
            hi = mid;
        else if (i - c->method_first >= c->method_count)
            lo = mid + 1;
        else
            return c;
    }
    return NULL;
}

uint32_t bl_mapindex_methods_by_orig(const bl_mapindex *mi, const char *cls, size_t cls_n,
                                     const char *name, size_t name_n, bl_mi_method_fn fn,
                                     void *ctx)
{
    uint64_t h = XXH3_64bits_withSeed(name, name_n, XXH3_64bits(cls, cls_n));
    uint32_t cap = mi->h->cap_sig, j = (uint32_t)h & (cap - 1), tag = (uint32_t)(h >> 32);
    uint32_t calls = 0;
    for (uint32_t probes = 0; probes < cap; probes++) {
        const bl_mi_slot *s = &mi->sig[j];
        if (!s->idx1)
            break;
        if (s->tag == tag && s->idx1 <= mi->h->n_methods) {
            const bl_mi_method *m = &mi->methods[s->idx1 - 1];
            if (str_is(mi, m->orig_class, cls, cls_n) && str_is(mi, m->orig_name, name, name_n)) {
                const bl_mi_class *owner = owner_of(mi, s->idx1 - 1);
                if (fn)
                    fn(ctx, owner, m);
                calls++;
            }
        }
        j = (j + 1) & (cap - 1);
    }
    return calls;
}

const uint32_t *bl_mapindex_extras(const bl_mapindex *mi, const bl_mi_method *m,
                                   uint64_t *n_words)
{
    *n_words = 0;
    if (!(m->flags & (BL_MIM_CALLSITE | BL_MIM_REWRITE)) || m->extra == 0 ||
        m->extra >= mi->h->n_extras)
        return NULL;
    *n_words = mi->h->n_extras - m->extra;
    return mi->extras + m->extra;
}

const bl_mi_class *bl_mapindex_class_at(const bl_mapindex *mi, uint32_t i)
{
    return i < mi->h->n_classes ? &mi->classes[i] : NULL;
}

const bl_mi_method *bl_mapindex_method_at(const bl_mapindex *mi, uint32_t i)
{
    return i < mi->h->n_methods ? &mi->methods[i] : NULL;
}

