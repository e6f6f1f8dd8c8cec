/*
 * retrace_impl.h — internal to the retracer (retrace.c, retrace_text.c):
 * the retracer's state, the shared-lookup entries and the helpers both
 * halves use. Not a public interface: the API is retrace.h.
 *
 * retrace.c holds the frame rules (lookups in the index, inline groups,
 * alternatives and their order); retrace_text.c reads lines (frames,
 * exception lines) and prints them, and scans traces for their names.
 */
#ifndef BL_RETRACE_IMPL_H
#define BL_RETRACE_IMPL_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"

/* A remembered frame lookup: obfuscated (class, method) -> class record and
 * method bucket. The key bytes are kept in the retracer's key arena. */
typedef struct memo_ent {
    uint64_t h;               /* XXH3 of the key; 0 = empty slot */
    uint32_t key, cls_n;      /* offset of class+method bytes in keys */
    uint32_t method_n, n;     /* method length; bucket size */
    const bl_mi_class *c;     /* NULL: class unknown */
    const bl_mi_method *b;
} memo_ent;

/* A (class, method) name resolved once for every retracer of a trace
 * (bl_retrace_lookups): the key bytes are borrowed from the caller. */
#define LK_INLINE 8 /* key bytes kept in the entry itself, at most */
enum { LK_EMPTY = 0, LK_BUSY = 1, LK_READY = 2 }; /* lk_ent.state */

typedef struct lk_ent {
    uint64_t h;               /* frame_key_hash; 0 = empty slot / unset */
    const char *cls, *method; /* key bytes (borrowed) */
    const bl_mi_class *c;     /* NULL: class unknown */
    const bl_mi_method *b;
    uint32_t cls_n, method_n, n; /* lengths; bucket size */
    /* class then method bytes when they fit (cls_n + method_n <=
     * LK_INLINE; obfuscated names mostly do): compared here, in the
     * entry's own cache line, instead of in the text they came from */
    char key[LK_INLINE];
    /* v entries: LK_EMPTY, LK_BUSY (a retracer is filling it: the others
     * look the name up themselves meanwhile), LK_READY (the fields above
     * are set and stay so; read after an acquire load of state) */
    _Atomic uint32_t state;
} lk_ent; /* 64 bytes: one cache line (the arrays are 64-byte aligned) */

/* Whether entry e is the key (cls, method) of these lengths. */
static int lk_is(const lk_ent *e, const char *cls, size_t cls_n, const char *method,
                 size_t method_n)
{
    if (e->cls_n != cls_n || e->method_n != method_n)
        return 0;
    if (cls_n + method_n <= LK_INLINE)
        return !memcmp(e->key, cls, cls_n) && !memcmp(e->key + cls_n, method, method_n);
    return !memcmp(e->method, method, method_n) && !memcmp(e->cls, cls, cls_n);
}

struct bl_retrace_lookups {
    const bl_mapindex *mi;
    lk_ent *v;       /* entries 0..n-1 as resolved (by index: see
                        bl_retracer_frame_line) */
    uint32_t n;
    int sealed;
    lk_ent *tab;     /* sealed: open addressing by h, mask + 1 slots */
    uint32_t mask;
};

/*
 * A range index of a big method bucket (see bucket_ranges): one record per
 * inline group with a minified range, sorted by range start, with the
 * largest range end up to each record — so the groups whose range holds a
 * line are found by a binary search and a short walk back instead of a
 * walk over the whole bucket (a bucket of an overloaded obfuscated name can
 * hold hundreds of entries, each frame of it walked them all).
 */
typedef struct rng_rec {
    uint32_t lo, hi;  /* the group's minified range */
    uint32_t maxhi;   /* the largest hi of this and every earlier record */
    uint32_t gs, ge;  /* the group: entries [gs, ge) of the bucket */
} rng_rec;

/* Where a bucket's records are (keyed by the bucket's first entry). */
typedef struct rng_ent {
    const bl_mi_method *b; /* NULL = empty slot */
    uint32_t first, n;     /* records rr[first .. first+n) */
    uint32_t nomin;        /* the first entry without a minified range, or
                              the bucket size when there is none */
} rng_ent;

/* A remembered original-class lookup, keyed by the string's address in the
 * index pool (a frame's class string always comes from the pool; one that
 * is there twice — see mapindex.c "Parallel parse" — is remembered twice). */
typedef struct orig_ent {
    const char *key; /* NULL = empty */
    uint32_t n;
    uint32_t file;   /* inferred file name: offset + 1 in files, 0 = not yet */
    uint32_t file_n;
    const bl_mi_class *c;
} orig_ent;

#define FILE_MEMO 0x80000000u /* fr_file: offset in files, not names */
#define FILES_MAX (16u << 20)  /* inferred file names remembered, bytes */

/* A frame's original-class lookup, made when its alternative ends (the
 * synthesized check) and used again for its file name: the class record
 * and its slot in the original-class memo (slot + 1, 0 = not remembered;
 * valid while the memo has not grown since: gen). */
typedef struct fr_class {
    const bl_mi_class *c;
    uint32_t slot1, gen;
} fr_class;

struct bl_retracer {
    const bl_mapindex *mi;
    bl_retrace_opts o;
    bl_rframe *fr;       /* frames of all alternatives */
    uint32_t *fr_file;   /* per frame: offset+1 into names, 0 = none */
    fr_class *fr_cls;    /* per frame, set by end_alt */
    uint32_t nfr, capfr;
    uint32_t *alt;       /* alternative start offsets (n_alts + 1) */
    uint32_t nalt, capalt;
    bl_buf names;        /* inferred file names of this frame */
    int64_t carry;       /* outline position for the next frame, -1 none */
    int after_exc;       /* the next frame is the first under an exception */
    memo_ent *memo;      /* frame lookups (see frame_lookup) */
    uint32_t memo_mask, memo_n;
    bl_buf keys;         /* memo key bytes */
    orig_ent *oc;        /* original-class lookups (see orig_class) */
    uint32_t oc_mask, oc_n, oc_gen; /* gen: bumped when oc grows */
    bl_buf files;        /* inferred file names remembered in oc */
    int64_t in_line;     /* the frame's own line (-1: none), for end_alt */
    bl_rframe *fr2;      /* scratch for sorting alternatives (capfr) */
    uint32_t *order;     /* scratch: alternative order (capalt) */
    rng_ent *ri;         /* range indexes of big buckets (see rng_rec) */
    uint32_t ri_mask, ri_n;
    rng_rec *rr;         /* their records */
    uint32_t rr_n, rr_cap;
    uint32_t *hits;      /* scratch: groups found through a range index */
    uint32_t hits_cap;
    bl_retrace_lookups *lk; /* shared lookups (borrowed; their v entries are
                               filled by bl_retracer_frame_line), or NULL */
    uint64_t resolved;   /* lookups made in the index (bl_retracer_resolved) */
    uint64_t filled;     /* of them, into shared lookups (bl_retracer_filled) */
    char exc_obf[512], exc_orig[512];
};

/* The frame's file name extension, as R8 sorts it (see retrace.h). */
enum { EXT_NONE = 0, EXT_KT = 1, EXT_OTHER = 2 };

/* Two string references name the same text (a string met by both halves
 * of a two-thread parse is stored twice: compare the text then). */
static inline int same_str(const bl_mapindex *mi, uint32_t a, uint32_t b)
{
    return a == b || !strcmp(bl_mapindex_str(mi, a), bl_mapindex_str(mi, b));
}

/* Whether a and b print the same, their lines aside (names from the
 * pool are often the same pointer: then no bytes are compared). */
static inline __attribute__((always_inline)) int same_names(const bl_mapindex *mi,
                                                             const bl_rframe *a,
                                                             const bl_rframe *b, int verbose)
{
    if (a->cls_n != b->cls_n || a->method_n != b->method_n ||
        (a->cls != b->cls && memcmp(a->cls, b->cls, a->cls_n)) ||
        (a->method != b->method && memcmp(a->method, b->method, a->method_n)))
        return 0;
    if (verbose && a->m && b->m &&
        (!same_str(mi, a->m->params, b->m->params) || !same_str(mi, a->m->ret, b->m->ret)))
        return 0;
    return 1;
}

static inline int same_frame(const bl_mapindex *mi, const bl_rframe *a, const bl_rframe *b, int verbose)
{
    return a->line == b->line && same_names(mi, a, b, verbose);
}

static inline int same_frame_no_line(const bl_mapindex *mi, const bl_rframe *a, const bl_rframe *b,
                              int verbose)
{
    return same_names(mi, a, b, verbose);
}

/* Resolves (cls, method) into e, whose state the caller owns (retrace.c). */
void bl_rt_lk_fill(const bl_mapindex *mi, lk_ent *e, const char *cls, size_t cn,
                   const char *method, size_t mn);

/* Retraces one frame (retrace.c): bl_retracer_frame with the frame's file
 * name extension (EXT_*) and, in pre, its name resolved already (NULL: it
 * is looked up). */
bl_err bl_rt_retrace_frame(bl_retracer *rt, const char *cls, size_t cls_n, const char *method,
                           size_t method_n, int64_t line, int ext_kind, const lk_ent *pre,
                           const bl_rframe **frames, const uint32_t **alt_start,
                           uint32_t *n_alts, int *known_class);

#endif
