/*
 * mapindex_impl.h — internal to the mapping index (mapindex.c, mapindex_parse.c,
 * mapindex_write.c): the string interner and the build state that the
 * parse fills and the writer turns into an image. Not a public interface:
 * the API is mapindex.h.
 *
 *   mapindex_parse.c  the mapping text into a builder (one or two threads)
 *   mapindex_write.c  a builder into an index image; bl_mapindex_build(_file)
 *   mapindex.c        checking and reading an image
 */
#ifndef BL_MAPINDEX_IMPL_H
#define BL_MAPINDEX_IMPL_H

#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/vec.h"
#include "symbol/mapindex.h"

/* ------------------------------------------------------------------------ */
/* Interner                                                                  */

/* An interner slot: the id and the high half of its hash, so that a probe
 * passes other strings without reading their hash or bytes. */
typedef struct islot {
    uint32_t id1; /* id + 1, 0 = empty */
    uint32_t tag; /* hash >> 32 */
} islot;

typedef struct interner {
    bl_buf pool;       /* the strings section */
    uint32_t *ref;     /* id -> offset of the bytes in pool */
    uint64_t *hash;    /* id -> XXH3-64 of the bytes */
    uint32_t n, cap;   /* ids in use / allocated */
    islot *slots;      /* open addressing on the hash's low bits */
    uint32_t mask;     /* slot count - 1 */
} interner;

static inline const char *istr(const interner *in, uint32_t id, uint32_t *n)
{
    uint32_t r = in->ref[id];
    if (n) {
        if (r)
            memcpy(n, in->pool.data + r - 4, 4);
        else
            *n = 0;
    }
    return in->pool.data + r;
}

/* ------------------------------------------------------------------------ */
/* Build state                                                               */

typedef struct bmethod {
    uint32_t cls; /* build class index */
    bl_mi_method m; /* string fields hold interner ids */
} bmethod;

typedef struct bfield {
    uint32_t cls;
    bl_mi_field f;
} bfield;

/* A metadata item for a method entry, serialised into extras at the end. */
enum { EX_POS, EX_OUTLINE, EX_RULE };
typedef struct bextra {
    uint32_t entry, kind, a, b;
} bextra;

typedef struct builder {
    interner in;
    BL_VEC(bl_mi_class) classes;   /* string fields are ids */
    BL_VEC(bmethod) methods;
    BL_VEC(bfield) fields;
    BL_VEC(bextra) extras;
    BL_VEC(uint32_t) cls_of_obf;   /* obf id -> class index + 1 (dedupe) */
    bl_buf scratch;             /* lenient JSON */
    const bl_mi_build_opts *opts;
    bl_mi_stats st;
    uint32_t version;           /* map version in force */
    uint32_t hdr[5];            /* header comment ids */
    int64_t cur_class;
    int last_kind;              /* 0 none, 1 class, 2 method, 3 field */
    int group_open;
    int use_range;              /* opts->want_range in force */
    int restart;                /* use_range met metadata: parse again without */
    struct mib_part *part;      /* the part of a parallel parse it is parsing, or
                                   NULL (mapindex_parse.c, "Parallel parse") */
} builder;

/* An empty builder for a mapping of about len bytes (a size hint) under
 * opts (borrowed; may be NULL). BL_ENOMEM; free with bl_mib_builder_free
 * even on failure. */
bl_err bl_mib_builder_init(builder *b, const bl_mi_build_opts *opts, size_t len);
void bl_mib_builder_free(builder *b);

/* Parses the mapping data[0..len) into b (in parts on two threads
 * when that pays; with want_range, again without it when the mapping
 * shows metadata). BL_ENOMEM, BL_ETOOBIG, BL_EFORMAT (strict). */
bl_err bl_mib_parse_mapping(builder *b, const char *data, size_t len);

/* Writes the image of a parsed builder into out (appended to from empty;
 * the header's mapping_size and checksum are left 0). BL_ENOMEM,
 * BL_ETOOBIG. */
bl_err bl_mib_write_image(builder *b, bl_buf *out);

/* XXH3-64 of an image (at least a header long) with the header's checksum
 * field taken as 0. */
uint64_t bl_mib_image_checksum(const void *img, size_t len);

#endif
