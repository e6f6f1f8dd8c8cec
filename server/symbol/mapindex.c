/*
 * mapindex.c — build and read the mmap-able mapping index (see mapindex.h).
 *
 * Build, in one pass over the mapping text:
 *   1. each line is parsed by bl_mapping_parse_line (mapping.c);
 *   2. names are interned: every distinct byte string gets a dense id and is
 *      appended once to the strings section (which is the string pool);
 *   3. classes, method entries (mapped ranges) and fields are collected in
 *      file order; inline groups — consecutive method lines of one class
 *      with the same obfuscated name and the same minified range — are
 *      marked GROUP_START (first, innermost) and OUTER (last);
 *   4. R8 metadata comments attach to the line above them, under the map
 *      version in force (R8 doc/retrace.md "Version").
 * Then methods are ordered by class, by obfuscated name and by file order,
 * method-level flags (synthesized, outline) are spread over all outer
 * entries of the same method, ids are turned into string references and
 * the image is written out with its three hash tables.
 *
 * Invariants of a built image: every string reference points at a NUL-
 * terminated string inside the strings section; class method/field slices
 * are inside their tables; every hash slot indexes its table.
 */
#include "symbol/mapindex.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stddef.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/u64map.h"
#include "common/vec.h"
#include "symbol/lenient_json.h"
#include "symbol/mapping.h"

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

static bl_err interner_init(interner *in)
{
    memset(in, 0, sizeof *in);
    bl_buf_init(&in->pool, (size_t)UINT32_MAX - 16);
    in->cap = 1024;
    in->ref = malloc(in->cap * sizeof *in->ref);
    in->hash = malloc(in->cap * sizeof *in->hash);
    in->mask = 4095;
    in->slots = bl_zalloc((size_t)in->mask + 1, sizeof *in->slots);
    if (!in->ref || !in->hash || !in->slots)
        return BL_ENOMEM;
    /* id 0 is the empty string at reference 0 */
    if (bl_buf_zero(&in->pool, 4))
        return BL_ENOMEM;
    in->ref[0] = 0;
    in->hash[0] = XXH3_64bits("", 0);
    in->n = 1;
    return BL_OK;
}

static void interner_cleanup(interner *in)
{
    bl_buf_cleanup(&in->pool);
    free(in->ref);
    free(in->hash);
    free(in->slots);
}

static bl_err interner_grow(interner *in)
{
    uint32_t ncap = (in->mask + 1) * 2;
    islot *ns = bl_zalloc(ncap, sizeof *ns);
    if (!ns)
        return BL_ENOMEM;
    for (uint32_t i = 0; i <= in->mask; i++) {
        uint32_t id1 = in->slots[i].id1;
        if (!id1)
            continue;
        uint32_t j = (uint32_t)in->hash[id1 - 1] & (ncap - 1);
        while (ns[j].id1)
            j = (j + 1) & (ncap - 1);
        ns[j] = in->slots[i];
    }
    free(in->slots);
    in->slots = ns;
    in->mask = ncap - 1;
    return BL_OK;
}

/* Interns n bytes at p; *id gets the dense id. */
static bl_err intern(interner *in, const char *p, uint32_t n, uint32_t *id)
{
    if (n == 0) {
        *id = 0;
        return BL_OK;
    }
    uint64_t h = XXH3_64bits(p, n);
    uint32_t j = (uint32_t)h & in->mask, tag = (uint32_t)(h >> 32);
    for (;;) {
        uint32_t id1 = in->slots[j].id1;
        if (!id1)
            break;
        uint32_t k = id1 - 1;
        if (in->slots[j].tag == tag) { /* the bytes decide */
            uint32_t r = in->ref[k];
            uint32_t len;
            memcpy(&len, in->pool.data + r - 4, 4);
            if (len == n && memcmp(in->pool.data + r, p, n) == 0) {
                *id = k;
                return BL_OK;
            }
        }
        j = (j + 1) & in->mask;
    }
    if (in->n == UINT32_MAX - 1)
        return BL_ETOOBIG;
    if (in->n == in->cap) {
        uint32_t nc = in->cap * 2;
        uint32_t *r = realloc(in->ref, (size_t)nc * sizeof *r);
        if (!r)
            return BL_ENOMEM;
        in->ref = r;
        uint64_t *hh = realloc(in->hash, (size_t)nc * sizeof *hh);
        if (!hh)
            return BL_ENOMEM;
        in->hash = hh;
        in->cap = nc;
    }
    bl_err e = bl_buf_reserve(&in->pool, (size_t)n + 5);
    if (e)
        return e;
    uint32_t len32 = n;
    bl_buf_append(&in->pool, &len32, 4);
    uint32_t r = (uint32_t)in->pool.len;
    bl_buf_append(&in->pool, p, n);
    bl_buf_putc(&in->pool, '\0');
    uint32_t k = in->n++;
    in->ref[k] = r;
    in->hash[k] = h;
    in->slots[j].id1 = k + 1;
    in->slots[j].tag = tag;
    *id = k;
    if ((uint64_t)in->n * 2 > in->mask)
        return interner_grow(in);
    return BL_OK;
}

static const char *istr(const interner *in, uint32_t id, uint32_t *n)
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
} builder;

enum { LK_NONE, LK_CLASS, LK_METHOD, LK_FIELD };

static void diag(builder *b, const char *msg, int is_error)
{
    if (is_error)
        b->st.malformed++;
    else
        b->st.warnings++;
    if (b->opts && b->opts->diag) {
        bl_mi_diag d = { b->st.lines, msg };
        b->opts->diag(b->opts->diag_ctx, &d);
    }
}

static void close_group(builder *b)
{
    if (b->group_open && b->methods.n)
        b->methods.v[b->methods.n - 1].m.flags |= BL_MIM_OUTER;
    b->group_open = 0;
}

static int span_eq(const char *p, uint32_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n == l && memcmp(p, lit, l) == 0;
}

/* Parses "X.Y" (or "experimental") into BL_MAPVER_*-style numbers. */
static int parse_map_version(const char *s, uint32_t *out)
{
    if (strcmp(s, "experimental") == 0) {
        *out = BL_MAPVER_EXPERIMENTAL;
        return 1;
    }
    char *e;
    unsigned long maj = strtoul(s, &e, 10);
    if (e == s || *e != '.' || maj > 90)
        return 0;
    const char *m = e + 1;
    unsigned long min = strtoul(m, &e, 10);
    if (e == m || *e != '\0' || min > 99)
        return 0;
    *out = (uint32_t)(maj * 100 + min);
    return 1;
}

/* Turns a field descriptor "Ljava/lang/Foo;" into a dotted id, 0 if not a class. */
static bl_err descriptor_class_id(builder *b, const char *d, uint32_t *id)
{
    size_t n = strlen(d);
    *id = 0;
    if (n < 3 || d[0] != 'L' || d[n - 1] != ';')
        return BL_OK;
    char tmp[1024];
    if (n - 2 >= sizeof tmp)
        return BL_OK;
    for (size_t i = 1; i + 1 < n; i++)
        tmp[i - 1] = d[i] == '/' ? '.' : d[i];
    return intern(&b->in, tmp, (uint32_t)(n - 2), id);
}

static bl_err meta_rewrite(builder *b, json_t *j, uint32_t entry)
{
    json_t *conds = json_object_get(j, "conditions");
    json_t *acts = json_object_get(j, "actions");
    uint32_t throws_id = 0, remove = 0;
    int understood = json_is_array(conds) && json_array_size(conds) > 0;
    size_t i;
    json_t *v;
    json_array_foreach(conds, i, v) {
        const char *s = json_string_value(v);
        size_t n = s ? strlen(s) : 0;
        if (s && n > 8 && !strncmp(s, "throws(", 7) && s[n - 1] == ')' && !throws_id) {
            char d[1024];
            if (n - 8 >= sizeof d) {
                understood = 0;
                continue;
            }
            memcpy(d, s + 7, n - 8);
            d[n - 8] = '\0';
            bl_err e = descriptor_class_id(b, d, &throws_id);
            if (e)
                return e;
            if (!throws_id)
                understood = 0;
        } else {
            understood = 0;
        }
    }
    json_array_foreach(acts, i, v) {
        const char *s = json_string_value(v);
        unsigned long k;
        char *e;
        if (s && !strncmp(s, "removeInnerFrames(", 18)) {
            k = strtoul(s + 18, &e, 10);
            if (e != s + 18 && *e == ')' && e[1] == '\0' && k < 1000)
                remove += (uint32_t)k;
        }
    }
    if (!understood) {
        diag(b, "rewriteFrame condition not understood; rule ignored", 0);
        throws_id = 0;
    }
    bl_err err = BL_OK;
    bextra x = { entry, EX_RULE, throws_id, remove };
    BL_VEC_PUSH(b->extras, x, err);
    if (!err)
        b->methods.v[entry].m.flags |= BL_MIM_REWRITE;
    return err;
}

static bl_err meta_callsite(builder *b, json_t *j, uint32_t entry)
{
    json_t *pos = json_object_get(j, "positions");
    const char *k;
    json_t *v;
    bl_err err = BL_OK;
    if (!json_is_object(pos)) {
        diag(b, "outlineCallsite without positions", 0);
        return BL_OK;
    }
    json_object_foreach(pos, k, v) {
        char *e;
        unsigned long key = strtoul(k, &e, 10);
        if (e == k || *e || !json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > BL_MAPPING_MAX_LINE || key > BL_MAPPING_MAX_LINE) {
            diag(b, "bad outlineCallsite position", 0);
            continue;
        }
        bextra x = { entry, EX_POS, (uint32_t)key, (uint32_t)json_integer_value(v) };
        BL_VEC_PUSH(b->extras, x, err);
        if (err)
            return err;
    }
    const char *ol = json_string_value(json_object_get(j, "outline"));
    if (ol) {
        uint32_t id;
        err = intern(&b->in, ol, (uint32_t)strlen(ol), &id);
        if (err)
            return err;
        bextra x = { entry, EX_OUTLINE, id, 0 };
        BL_VEC_PUSH(b->extras, x, err);
    }
    if (!err)
        b->methods.v[entry].m.flags |= BL_MIM_CALLSITE;
    return err;
}

/* Fast path for the most common metadata line of all. */
static int fast_source_file(const char *p, uint32_t n, const char **fp, uint32_t *fn)
{
    static const char pre[] = "{\"id\":\"sourceFile\",\"fileName\":\"";
    const size_t pl = sizeof pre - 1;
    if (n < pl + 3 || memcmp(p, pre, pl) != 0 || p[n - 1] != '}' || p[n - 2] != '"')
        return 0;
    const char *s = p + pl, *e = p + n - 2;
    for (const char *q = s; q < e; q++)
        if (*q == '"' || *q == '\\')
            return 0;
    *fp = s;
    *fn = (uint32_t)(e - s);
    return 1;
}

static bl_err handle_meta(builder *b, const bl_mapping_line *ml)
{
    const char *fp;
    uint32_t fn;
    bl_err err = BL_OK;
    if (fast_source_file(ml->a.p, ml->a.n, &fp, &fn)) {
        if (b->cur_class >= 0)
            return intern(&b->in, fp, fn, &b->classes.v[b->cur_class].source_file);
        return BL_OK;
    }
    bl_err jerr;
    json_t *j = bl_lenient_json_parse(ml->a.p, ml->a.n, &b->scratch, &jerr);
    if (!j && jerr == BL_ENOMEM)
        return BL_ENOMEM; /* not a bad comment: the build cannot go on */
    const char *id = j ? json_string_value(json_object_get(j, "id")) : NULL;
    if (!id) {
        diag(b, "metadata comment is not a JSON object with an \"id\"", 0);
        json_decref(j);
        return BL_OK;
    }
    uint32_t v = b->version;
    uint32_t entry = (uint32_t)(b->methods.n - 1);
    if (!strcmp(id, "com.android.tools.r8.mapping")) {
        const char *vs = json_string_value(json_object_get(j, "version"));
        uint32_t nv;
        if (!vs || !parse_map_version(vs, &nv)) {
            diag(b, "unreadable map version", 0);
        } else {
            if (nv > BL_MAPVER_MAX_SUPPORTED)
                diag(b, "map version newer than supported (2.2); newer information is ignored", 0);
            b->version = nv;
            if (nv > b->st.map_version)
                b->st.map_version = nv;
        }
    } else if (!strcmp(id, "sourceFile")) {
        const char *f = json_string_value(json_object_get(j, "fileName"));
        if (f && b->cur_class >= 0)
            err = intern(&b->in, f, (uint32_t)strlen(f), &b->classes.v[b->cur_class].source_file);
    } else if (!strcmp(id, "com.android.tools.r8.synthesized")) {
        if (v >= BL_MAPVER_1_0) {
            if (b->last_kind == LK_CLASS)
                b->classes.v[b->cur_class].flags |= BL_MIC_SYNTH;
            else if (b->last_kind == LK_METHOD)
                b->methods.v[entry].m.flags |= BL_MIM_SYNTH;
            else if (b->last_kind == LK_FIELD)
                b->fields.v[b->fields.n - 1].f.flags |= BL_MIC_SYNTH;
        }
    } else if (!strcmp(id, "com.android.tools.r8.outline")) {
        if (v >= BL_MAPVER_2_0 && b->last_kind == LK_METHOD)
            b->methods.v[entry].m.flags |= BL_MIM_OUTLINE;
    } else if (!strcmp(id, "com.android.tools.r8.outlineCallsite")) {
        if (v >= BL_MAPVER_2_0 && b->last_kind == LK_METHOD)
            err = meta_callsite(b, j, entry);
    } else if (!strcmp(id, "com.android.tools.r8.rewriteFrame")) {
        if (v >= BL_MAPVER_2_0 && b->last_kind == LK_METHOD)
            err = meta_rewrite(b, j, entry);
    } else if (!strcmp(id, "com.android.tools.r8.residualsignature")) {
        const char *s = json_string_value(json_object_get(j, "signature"));
        if (v >= BL_MAPVER_2_2 && s) {
            uint32_t sid;
            err = intern(&b->in, s, (uint32_t)strlen(s), &sid);
            if (!err && b->last_kind == LK_METHOD)
                b->methods.v[entry].m.residual = sid;
            else if (!err && b->last_kind == LK_FIELD)
                b->fields.v[b->fields.n - 1].f.residual = sid;
        }
    }
    /* unknown ids: ignored, as the spec asks */
    json_decref(j);
    return err;
}

static bl_err handle_class(builder *b, const bl_mapping_line *ml)
{
    bl_err err;
    uint32_t orig, obf;
    close_group(b);
    if ((err = intern(&b->in, ml->a.p, ml->a.n, &orig)) ||
        (err = intern(&b->in, ml->b.p, ml->b.n, &obf)))
        return err;
    while (b->cls_of_obf.n <= obf) {
        uint32_t z = 0;
        err = BL_OK;
        BL_VEC_PUSH(b->cls_of_obf, z, err);
        if (err)
            return err;
    }
    if (b->cls_of_obf.v[obf]) {
        diag(b, "class mapped twice; members are merged into the first mapping", 0);
        b->cur_class = b->cls_of_obf.v[obf] - 1;
    } else {
        bl_mi_class c = { obf, orig, 0, 0, 0, 0, 0, 0 };
        err = BL_OK;
        BL_VEC_PUSH(b->classes, c, err);
        if (err)
            return err;
        if (b->classes.n >= UINT32_MAX)
            return BL_ETOOBIG;
        b->cur_class = (int64_t)b->classes.n - 1;
        b->cls_of_obf.v[obf] = (uint32_t)b->classes.n;
    }
    b->last_kind = LK_CLASS;
    return BL_OK;
}

/* Ids of the previous method line's strings: consecutive ranges of one
 * method repeat them, so a memcmp saves a hash lookup. */
typedef struct prev_ids {
    bl_span s[5];
    uint32_t id[5];
} prev_ids;

/* Whether the n bytes at a and b are the same: short spans (obfuscated
 * names, most types) byte by byte, longer ones with memcmp. */
static inline __attribute__((always_inline)) int same_bytes(const char *a, const char *b,
                                                            uint32_t n)
{
    if (n > 16)
        return memcmp(a, b, n) == 0;
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static inline __attribute__((always_inline)) bl_err intern_cached(builder *b, prev_ids *pv,
                                                                  int k, bl_span s,
                                                                  uint32_t *id)
{
    if (pv->s[k].p && pv->s[k].n == s.n && same_bytes(pv->s[k].p, s.p, s.n)) {
        *id = pv->id[k];
        return BL_OK;
    }
    bl_err e = intern(&b->in, s.p, s.n, id);
    if (!e) {
        pv->s[k] = s;
        pv->id[k] = *id;
    }
    return e;
}

static bl_err handle_method(builder *b, const bl_mapping_line *ml, prev_ids *pv)
{
    bl_err err;
    bmethod bm;
    memset(&bm, 0, sizeof bm);
    bm.cls = (uint32_t)b->cur_class;
    bl_mi_method *m = &bm.m;
    if ((err = intern_cached(b, pv, 0, ml->obf, &m->obf)) ||
        (err = intern_cached(b, pv, 1, ml->type, &m->ret)) ||
        (err = intern_cached(b, pv, 2, ml->name, &m->orig_name)))
        return err;
    if (!ml->params_blanks) {
        if ((err = intern_cached(b, pv, 3, ml->params, &m->params)))
            return err;
    } else {
        /* "int, int" is stored as "int,int", as R8 reads it (the copy is
         * not remembered in pv: its bytes do not outlive this call) */
        char small[256];
        char *t = ml->params.n <= sizeof small ? small : malloc(ml->params.n);
        if (!t)
            return BL_ENOMEM;
        size_t tn = bl_mapping_params_compact(ml->params, t, ml->params.n);
        err = intern(&b->in, t, (uint32_t)tn, &m->params);
        if (t != small)
            free(t);
        if (err)
            return err;
        pv->s[3].p = NULL;
    }
    if (ml->owner.n) {
        if ((err = intern_cached(b, pv, 4, ml->owner, &m->orig_class)))
            return err;
    } else {
        m->orig_class = b->classes.v[b->cur_class].orig;
    }
    m->flags = (uint32_t)ml->orig_kind << 1;
    if (ml->has_min) {
        m->flags |= BL_MIM_HAS_MIN;
        m->min_start = ml->min_start;
        m->min_end = ml->min_end;
    }
    m->orig_start = ml->orig_start;
    m->orig_end = ml->orig_end;

    /* R8: consecutive lines of one obfuscated name with the same minified
     * range are one inline stack (innermost first), whatever form their
     * original position takes (":N", "N:M", none). A line without a
     * minified range is a group of its own. */
    int cont = 0;
    if (b->group_open && b->last_kind == LK_METHOD && ml->has_min) {
        const bmethod *p = &b->methods.v[b->methods.n - 1];
        cont = p->cls == bm.cls && p->m.obf == m->obf && (p->m.flags & BL_MIM_HAS_MIN) &&
               p->m.min_start == m->min_start && p->m.min_end == m->min_end;
    }
    if (!cont) {
        close_group(b);
        m->flags |= BL_MIM_GROUP_START;
    }
    err = BL_OK;
    BL_VEC_PUSH(b->methods, bm, err);
    if (err)
        return err;
    if (b->methods.n >= UINT32_MAX)
        return BL_ETOOBIG;
    b->group_open = 1;
    b->last_kind = LK_METHOD;
    return BL_OK;
}

static bl_err handle_field(builder *b, const bl_mapping_line *ml)
{
    bl_err err;
    bfield bf;
    memset(&bf, 0, sizeof bf);
    close_group(b);
    bf.cls = (uint32_t)b->cur_class;
    if ((err = intern(&b->in, ml->obf.p, ml->obf.n, &bf.f.obf)) ||
        (err = intern(&b->in, ml->name.p, ml->name.n, &bf.f.orig)) ||
        (err = intern(&b->in, ml->type.p, ml->type.n, &bf.f.type)))
        return err;
    err = BL_OK;
    BL_VEC_PUSH(b->fields, bf, err);
    if (err)
        return err;
    b->last_kind = LK_FIELD;
    return BL_OK;
}

static bl_err handle_header(builder *b, const bl_mapping_line *ml)
{
    static const char *const keys[5] = { "compiler", "compiler_version", "min_api",
                                         "pg_map_id", "pg_map_hash" };
    for (int i = 0; i < 5; i++)
        if (span_eq(ml->a.p, ml->a.n, keys[i]) && !b->hdr[i])
            return intern(&b->in, ml->b.p, ml->b.n, &b->hdr[i]);
    return BL_OK;
}

/* The obfuscated name of a member line "    ... -> name" (trailing blanks
 * and CR ignored): 1 and the span, or 0 when the line does not end so. */
static int member_obf_name(const char *p, const char *le, const char **name, size_t *nn)
{
    /* trimmed as bl_mapping_parse_line trims: one CR, then blanks */
    if (le > p && le[-1] == '\r')
        le--;
    while (le > p && (le[-1] == ' ' || le[-1] == '\t'))
        le--;
    const char *s = le;
    while (s > p && s[-1] != ' ' && s[-1] != '\t')
        s--;
    if (s == le || s - p < 4 || memcmp(s - 4, " -> ", 4) != 0)
        return 0;
    *name = s;
    *nn = (size_t)(le - s);
    return 1;
}

/* The first byte of [p, le) that is not a blank (space or tab), or le. */
static const char *skip_blanks(const char *p, const char *le)
{
    /* members are indented by four spaces: those at once */
    if (le - p > 4 && !memcmp(p, "    ", 4))
        p += 4;
    while (p < le && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* 1 when the comment line whose '#' is at p holds a JSON object. */
static int json_comment(const char *p, const char *le)
{
    p = skip_blanks(p + 1, le);
    return p < le && *p == '{';
}

/* Comments that act beyond the member they follow: the map version, a
 * class's source file, header comments ("# key: value"). The rest of a
 * skipped member's metadata goes too. A comment that is not a JSON object,
 * or has a backslash (an id may be spelt with JSON escapes), is read. */
static int meta_beyond_member(const char *p, const char *le)
{
    if (!json_comment(p, le) || memchr(p, '\\', (size_t)(le - p)))
        return 1;
    static const char *const keys[2] = { "com.android.tools.r8.mapping", "sourceFile" };
    for (int k = 0; k < 2; k++) {
        size_t kn = strlen(keys[k]);
        for (const char *q = p; q + kn <= le; q++) {
            q = memchr(q, keys[k][0], (size_t)(le - q));
            if (!q || q + kn > le)
                break;
            if (!memcmp(q, keys[k], kn))
                return 1;
        }
    }
    return 0;
}

/* Parses [data, data+len) into b. With b->use_range, stops at the first
 * JSON metadata comment with b->restart set (see want_range). */
static bl_err parse_all(builder *b, const char *data, size_t len)
{
    const char *p = data, *end = data + len;
    prev_ids pv;
    memset(&pv, 0, sizeof pv);
    int skipping = 0;        /* members of an unwanted class */
    const char *cls = NULL;  /* obfuscated name of the current class */
    size_t cls_n = 0;
    bl_mi_want_fn want = b->opts ? b->opts->want_class : NULL;
    bl_mi_want_member_fn want_m = b->opts ? b->opts->want_member : NULL;
    /* want_m's last answer: a method's ranges are consecutive lines with
     * one obfuscated name, asked once (want_m answers the same for the
     * same class and name; wm_nm points into the mapping text) */
    const char *wm_cls = NULL, *wm_nm = NULL;
    size_t wm_nn = 0;
    int wm_yes = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        b->st.lines++;
        /* the first byte that is not a blank (le: none) */
        const char *q = p < le && (*p == ' ' || *p == '\t') ? skip_blanks(p, le) : p;
        if (b->use_range && q < le && *q == '#' && json_comment(q, le)) {
            b->restart = 1;
            return BL_OK;
        }
        if (skipping && (*p == ' ' || *p == '\t')) {
            /* a member of an unwanted class: skipped unread; an indented
             * comment is read as usual (class metadata), or after a
             * skipped member only when it acts beyond that member */
            if (q == le || *q != '#' || (b->last_kind == LK_NONE && !meta_beyond_member(q, le))) {
                if (q < le && *q != '#') {
                    close_group(b);
                    b->last_kind = LK_NONE;
                }
                p = nl ? nl + 1 : end;
                continue;
            }
        }
        /* skipping ends only at the next class line (a blank line, a
         * comment or a malformed line at column 0 is read, and the class's
         * members after it are still skipped) */
        if (want_m && cls && (*p == ' ' || *p == '\t')) {
            const char *nm;
            size_t nn;
            if (q < le && *q == '#') {
                /* after a skipped member (last_kind NONE) only what acts
                 * beyond it is read */
                if (b->last_kind == LK_NONE && !meta_beyond_member(q, le)) {
                    p = nl ? nl + 1 : end;
                    continue;
                }
            } else if (q < le && member_obf_name(q, le, &nm, &nn)) {
                uint32_t rs, re;
                int digit = *q >= '0' && *q <= '9';
                size_t i = 0; /* names are short: no memcmp call */
                if (wm_cls == cls && wm_nn == nn)
                    while (i < nn && wm_nm[i] == nm[i])
                        i++;
                if (wm_cls != cls || wm_nn != nn || i < nn) {
                    wm_yes = want_m(b->opts->want_ctx, cls, cls_n, nm, nn);
                    wm_cls = cls;
                    wm_nm = nm;
                    wm_nn = nn;
                }
                if (!wm_yes ||
                    (b->use_range && digit &&
                     bl_mapping_min_range(q, (size_t)(le - q), &rs, &re) &&
                     !b->opts->want_range(b->opts->want_ctx, cls, cls_n, nm, nn, rs, re)) ||
                    /* under want_range a field line (no '(') goes too: a
                     * retrace looks up methods only */
                    (b->use_range && !digit && !memchr(q, '(', (size_t)(le - q)))) {
                    close_group(b);
                    b->last_kind = LK_NONE;
                    p = nl ? nl + 1 : end;
                    continue;
                }
            }
        }
        bl_mapping_line ml;
        const char *why;
        bl_err err = BL_OK;
        if (bl_mapping_parse_line(p, (size_t)(le - p), &ml, &why) != BL_OK) {
            diag(b, why, 1);
            if (b->opts && b->opts->strict)
                return BL_EFORMAT;
            close_group(b);
            b->last_kind = LK_NONE;
        } else {
            switch (ml.kind) {
            case BL_ML_BLANK:
            case BL_ML_COMMENT:
                break;
            case BL_ML_HEADER:
                err = handle_header(b, &ml);
                break;
            case BL_ML_META:
                err = handle_meta(b, &ml);
                break;
            case BL_ML_CLASS:
                b->st.class_lines++;
                cls = ml.b.p;
                cls_n = ml.b.n;
                skipping = want && !want(b->opts->want_ctx, ml.b.p, ml.b.n);
                if (skipping && b->use_range) { /* no record either (see want_range) */
                    close_group(b);
                    b->cur_class = -1;
                    b->last_kind = LK_NONE;
                    break;
                }
                err = handle_class(b, &ml);
                break;
            case BL_ML_FIELD:
            case BL_ML_METHOD:
                if (b->cur_class < 0) {
                    diag(b, "member line before any class line", 1);
                    if (b->opts && b->opts->strict)
                        return BL_EFORMAT;
                    break;
                }
                err = ml.kind == BL_ML_METHOD ? handle_method(b, &ml, &pv) : handle_field(b, &ml);
                break;
            }
        }
        if (err)
            return err;
        p = nl ? nl + 1 : end;
    }
    close_group(b);
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Ordering                                                                  */

/* Compares interned strings a and b bytewise (shorter prefix first). */
static int cmp_ids(const interner *in, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    uint32_t na, nb;
    const char *sa = istr(in, a, &na), *sb = istr(in, b, &nb);
    int c = memcmp(sa, sb, na < nb ? na : nb);
    if (c)
        return c;
    return na < nb ? -1 : na > nb;
}

/* Stable merge sort of idx[0..n) by the obfuscated name of methods[idx]. */
static void sort_by_name(const interner *in, const bmethod *ms, uint32_t *idx, uint32_t *tmp,
                         uint32_t n)
{
    if (n < 2)
        return;
    if (n <= 16) { /* insertion sort, stable */
        for (uint32_t i = 1; i < n; i++) {
            uint32_t x = idx[i], j = i;
            while (j > 0 && cmp_ids(in, ms[idx[j - 1]].m.obf, ms[x].m.obf) > 0) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = x;
        }
        return;
    }
    uint32_t h = n / 2;
    sort_by_name(in, ms, idx, tmp, h);
    sort_by_name(in, ms, idx + h, tmp, n - h);
    if (cmp_ids(in, ms[idx[h - 1]].m.obf, ms[idx[h]].m.obf) <= 0)
        return; /* already in order */
    uint32_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = cmp_ids(in, ms[idx[j]].m.obf, ms[idx[i]].m.obf) < 0 ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
}

static int same_sig(const bl_mi_method *a, const bl_mi_method *b)
{
    return a->orig_class == b->orig_class && a->orig_name == b->orig_name &&
           a->params == b->params && a->ret == b->ret;
}

/* Orders outer entries by signature ids (see same_sig). */
static int cmp_sig_ids(const void *x, const void *y)
{
    const bl_mi_method *a = *(const bl_mi_method *const *)x, *b = *(const bl_mi_method *const *)y;
    uint32_t ka[4] = { a->orig_class, a->orig_name, a->params, a->ret };
    uint32_t kb[4] = { b->orig_class, b->orig_name, b->params, b->ret };
    for (int i = 0; i < 4; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Spreads SYNTH/OUTLINE from one outer entry to every outer entry of the
 * same original method in the bucket [lo, hi) of sorted methods: the outer
 * entries sorted by signature, flags OR-ed per run of equal signatures —
 * O(n log n) however many entries carry flags (scanning the bucket once per
 * flagged entry was quadratic: 160,000 ranges of one method with one
 * synthesized comment took 27 s). BL_ENOMEM. */
static bl_err spread_method_flags(bmethod *ms, const uint32_t *order, uint32_t lo, uint32_t hi)
{
    const uint32_t f = BL_MIM_SYNTH | BL_MIM_OUTLINE;
    uint32_t outer = 0;
    int any = 0;
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t fl = ms[order[i]].m.flags;
        outer += (fl & BL_MIM_OUTER) != 0;
        if ((fl & (f | BL_MIM_OUTER)) > BL_MIM_OUTER)
            any = 1;
    }
    if (!any || outer < 2)
        return BL_OK;
    bl_mi_method *small[64];
    bl_mi_method **v = outer <= 64 ? small : malloc((size_t)outer * sizeof *v);
    if (!v)
        return BL_ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = lo; i < hi; i++)
        if (ms[order[i]].m.flags & BL_MIM_OUTER)
            v[n++] = &ms[order[i]].m;
    qsort(v, n, sizeof *v, cmp_sig_ids);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i, u = 0;
        while (j < n && same_sig(v[i], v[j]))
            u |= v[j++]->flags & f;
        for (uint32_t k = i; k < j; k++)
            v[k]->flags |= u;
        i = j;
    }
    if (v != small)
        free(v);
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

static uint32_t pow2_at_least(uint64_t n)
{
    uint32_t c = 16;
    while (c < n * 2 && c < (1u << 31))
        c <<= 1;
    return c;
}

static void slot_put(bl_mi_slot *t, uint32_t cap, uint64_t h, uint32_t idx)
{
    uint32_t j = (uint32_t)h & (cap - 1);
    while (t[j].idx1)
        j = (j + 1) & (cap - 1);
    t[j].tag = (uint32_t)(h >> 32);
    t[j].idx1 = idx + 1;
}

static uint64_t sig_hash(const interner *in, uint32_t cls_id, uint32_t name_id)
{
    uint32_t n;
    const char *s = istr(in, name_id, &n);
    return XXH3_64bits_withSeed(s, n, in->hash[cls_id]);
}

static bl_err pad8(bl_buf *o)
{
    size_t r = o->len % 8;
    return r ? bl_buf_zero(o, 8 - r) : BL_OK;
}

/* Work of write_image shared by two threads: classes [c0, c1). */
typedef struct wi_job {
    builder *b;
    uint32_t *order, *tmp;
    const uint32_t *start, *fstart;
    size_t c0, c1;
    uint32_t n_sigs;        /* wi_sort: signatures counted */
    bl_err err;             /* wi_sort: BL_ENOMEM */
    bl_mi_slot *t1, *t2, *t3; /* wi_tables: the three tables */
    uint32_t cap1, cap3;
    int sigs;               /* wi_tables fills t3 */
} wi_job;

/* two threads from this many method entries (opts->threads 2: always) */
#define WI_PAR_METHODS 65536

/* Sorts each class's methods by obfuscated name (stable), spreads method
 * flags, sets the class slices and counts signatures. */
static void *wi_sort(void *arg)
{
    wi_job *j = arg;
    builder *b = j->b;
    const interner *in = &b->in;
    for (size_t c = j->c0; c < j->c1; c++) {
        uint32_t lo = j->start[c], hi = j->start[c + 1];
        sort_by_name(in, b->methods.v, j->order + lo, j->tmp + lo, hi - lo);
        b->classes.v[c].method_first = lo;
        b->classes.v[c].method_count = hi - lo;
        b->classes.v[c].field_first = j->fstart[c];
        b->classes.v[c].field_count = j->fstart[c + 1] - j->fstart[c];
        uint32_t blo = lo;
        const bl_mi_method *prev_outer = NULL;
        for (uint32_t i = lo; i < hi; i++) {
            const bl_mi_method *m = &b->methods.v[j->order[i]].m;
            if (i + 1 == hi || b->methods.v[j->order[i + 1]].m.obf != m->obf) {
                if (spread_method_flags(b->methods.v, j->order, blo, i + 1) != BL_OK)
                    j->err = BL_ENOMEM;
                blo = i + 1;
            }
            if ((m->flags & BL_MIM_OUTER) && !(prev_outer && same_sig(prev_outer, m))) {
                j->n_sigs++;
                prev_outer = m;
            }
        }
    }
    return NULL;
}

/* Where the last entry of a much-repeated key went (see slot_put_run). */
typedef struct run_map {
    bl_u64map last; /* key -> slot of its last entry */
    int failed;     /* out of memory: plain probing */
} run_map;

#define RUN_PROBES 32 /* probes before an insert asks the run map */

/* Inserts like slot_put, but a key whose probe run grows long (the same
 * original method as the residual method of thousands of classes) starts
 * after its own last entry instead of walking all of them again: linear
 * probing with many equal keys is otherwise quadratic (60,000 classes: 3.7 s).
 * Every entry of a key still lies between its home slot and the next empty
 * slot, so lookups are unchanged. */
static void slot_put_run(bl_mi_slot *t, uint32_t cap, uint64_t h, uint32_t idx, run_map *rm)
{
    uint32_t j = (uint32_t)h & (cap - 1), probes = 0;
    while (t[j].idx1 && probes < RUN_PROBES) {
        j = (j + 1) & (cap - 1);
        probes++;
    }
    uint32_t *lastp = NULL;
    if (t[j].idx1 && !rm->failed) { /* a long run: jump past the key's entries */
        int added;
        if (bl_u64map_put(&rm->last, h | 1, 0, &lastp, &added) != BL_OK) {
            rm->failed = 1;
            lastp = NULL;
        } else if (!added) {
            j = (*lastp + 1) & (cap - 1);
        }
    }
    while (t[j].idx1)
        j = (j + 1) & (cap - 1);
    t[j].tag = (uint32_t)(h >> 32);
    t[j].idx1 = idx + 1;
    if (lastp)
        *lastp = j;
}

/* Fills the class-by-obfuscated, class-by-original and signature tables. */
static void *wi_tables(void *arg)
{
    wi_job *j = arg;
    const builder *b = j->b;
    const interner *in = &b->in;
    run_map rm;
    bl_u64map_init(&rm.last);
    rm.failed = 0;
    for (size_t c = j->c0; c < j->c1; c++) {
        slot_put(j->t1, j->cap1, in->hash[b->classes.v[c].obf], (uint32_t)c);
        slot_put(j->t2, j->cap1, in->hash[b->classes.v[c].orig], (uint32_t)c);
        const bl_mi_method *prev_outer = NULL;
        for (uint32_t i = j->start[c]; j->sigs && i < j->start[c + 1]; i++) {
            const bl_mi_method *m = &b->methods.v[j->order[i]].m;
            if ((m->flags & BL_MIM_OUTER) && !(prev_outer && same_sig(prev_outer, m))) {
                slot_put_run(j->t3, j->cap3, sig_hash(in, m->orig_class, m->orig_name), i,
                             &rm);
                prev_outer = m;
            }
        }
    }
    bl_u64map_cleanup(&rm.last);
    return NULL;
}

/* The first class at or after which half of the methods lie. */
static size_t class_at_half(const uint32_t *start, size_t nc)
{
    size_t lo = 0, hi = nc;
    uint32_t half = start[nc] / 2;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (start[m] < half)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Runs fn(a) and, when two, fn(b) on a second thread (or after, when no
 * thread can be started). */
static void run_pair(void *(*fn)(void *), void *a, void *b, int two)
{
    pthread_t th;
    int started = two && pthread_create(&th, NULL, fn, b) == 0;
    fn(a);
    if (started)
        pthread_join(th, NULL);
    else if (two)
        fn(b);
}

static bl_err write_image(builder *b, bl_buf *out)
{
    interner *in = &b->in;
    bl_err err = BL_OK;
    size_t nm = b->methods.n, nc = b->classes.n, nf = b->fields.n;
    uint32_t *order = malloc((nm + 1) * sizeof *order);
    size_t ntmp = nm > nc ? nm : nc; /* scratch for the sorts and both counting passes */
    if (nf > ntmp)
        ntmp = nf;
    uint32_t *tmp = malloc((ntmp + 1) * sizeof *tmp);
    uint32_t *start = calloc(nc + 1, sizeof *start);
    uint32_t *fstart = calloc(nc + 1, sizeof *fstart);
    uint32_t *forder = malloc((nf + 1) * sizeof *forder);
    bl_mi_slot *t1 = NULL, *t2 = NULL, *t3 = NULL;
    if (!order || !tmp || !start || !fstart || !forder) {
        err = BL_ENOMEM;
        goto out;
    }
    /* counting sort of methods and fields by class, stable */
    for (size_t i = 0; i < nm; i++)
        start[b->methods.v[i].cls + 1]++;
    for (size_t c = 0; c < nc; c++)
        start[c + 1] += start[c];
    memcpy(tmp, start, nc * sizeof *tmp);
    for (size_t i = 0; i < nm; i++)
        order[tmp[b->methods.v[i].cls]++] = (uint32_t)i;
    for (size_t i = 0; i < nf; i++)
        fstart[b->fields.v[i].cls + 1]++;
    for (size_t c = 0; c < nc; c++)
        fstart[c + 1] += fstart[c];
    memcpy(tmp, fstart, nc * sizeof *tmp);
    for (size_t i = 0; i < nf; i++)
        forder[tmp[b->fields.v[i].cls]++] = (uint32_t)i;

    /* per class: methods by name, flags spread, signatures counted — on two
     * threads for a big index (classes are independent) */
    wi_job jobs[2];
    for (int k = 0; k < 2; k++) {
        memset(&jobs[k], 0, sizeof jobs[k]);
        jobs[k].b = b;
        jobs[k].order = order;
        jobs[k].tmp = tmp;
        jobs[k].start = start;
        jobs[k].fstart = fstart;
    }
    int threads = b->opts ? b->opts->threads : 0;
    int par = threads >= 2 ||
              (threads == 0 && nm >= WI_PAR_METHODS && sysconf(_SC_NPROCESSORS_ONLN) >= 2);
    size_t mid = par ? class_at_half(start, nc) : nc;
    jobs[0].c0 = 0;
    jobs[0].c1 = mid;
    jobs[1].c0 = mid;
    jobs[1].c1 = nc;
    run_pair(wi_sort, &jobs[0], &jobs[1], mid < nc);
    if (jobs[0].err || jobs[1].err) {
        err = BL_ENOMEM;
        goto out;
    }
    uint32_t n_sigs = jobs[0].n_sigs + jobs[1].n_sigs;
    /* a lazy build serves one retrace, which never looks a method up by its
     * original signature: an empty table (see want_class) */
    int sigs = !(b->opts && b->opts->want_class);
    if (!sigs)
        n_sigs = 0;
    /* extras: serialise per entry (items are in entry order) */
    BL_VEC(uint32_t) ex = { 0 };
    uint32_t zero = 0;
    BL_VEC_PUSH(ex, zero, err); /* word 0 unused: extra == 0 means none */
    for (size_t i = 0; i < b->extras.n && !err;) {
        uint32_t entry = b->extras.v[i].entry;
        size_t j = i;
        while (j < b->extras.n && b->extras.v[j].entry == entry)
            j++;
        uint32_t npos = 0, nrules = 0, outline = 0;
        for (size_t k = i; k < j; k++) {
            npos += b->extras.v[k].kind == EX_POS;
            nrules += b->extras.v[k].kind == EX_RULE;
            if (b->extras.v[k].kind == EX_OUTLINE)
                outline = in->ref[b->extras.v[k].a];
        }
        b->methods.v[entry].m.extra = (uint32_t)ex.n;
        BL_VEC_PUSH(ex, npos, err);
        for (size_t k = i; k < j && !err; k++)
            if (b->extras.v[k].kind == EX_POS) {
                BL_VEC_PUSH(ex, b->extras.v[k].a, err);
                BL_VEC_PUSH(ex, b->extras.v[k].b, err);
            }
        BL_VEC_PUSH(ex, outline, err);
        BL_VEC_PUSH(ex, nrules, err);
        for (size_t k = i; k < j && !err; k++)
            if (b->extras.v[k].kind == EX_RULE) {
                uint32_t cls_ref = in->ref[b->extras.v[k].a];
                BL_VEC_PUSH(ex, cls_ref, err);
                BL_VEC_PUSH(ex, b->extras.v[k].b, err);
            }
        i = j;
    }
    if (err) {
        free(ex.v);
        goto out;
    }

    uint32_t cap1 = pow2_at_least(nc), cap3 = pow2_at_least(n_sigs);
    t1 = bl_zalloc(cap1, sizeof *t1);
    t2 = bl_zalloc(cap1, sizeof *t2);
    t3 = bl_zalloc(cap3, sizeof *t3);
    if (!t1 || !t2 || !t3) {
        free(ex.v);
        err = BL_ENOMEM;
        goto out;
    }
    /* the hash tables are filled on a second thread while the sections are
     * written (both only read the builder from here on) */
    jobs[0].c0 = 0;
    jobs[0].c1 = nc;
    jobs[0].t1 = t1;
    jobs[0].t2 = t2;
    jobs[0].t3 = t3;
    jobs[0].cap1 = cap1;
    jobs[0].cap3 = cap3;
    jobs[0].sigs = sigs;
    pthread_t tables_th;
    int tables_started = par && pthread_create(&tables_th, NULL, wi_tables, &jobs[0]) == 0;
    if (!tables_started)
        wi_tables(&jobs[0]);

    /* header + sections */
    bl_mi_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, BL_MI_MAGIC, 8);
    h.format = BL_MI_FORMAT;
    h.map_version = b->st.map_version;
    h.mapping_lines = b->st.lines;
    h.malformed_lines = b->st.malformed;
    h.n_classes = (uint32_t)nc;
    h.n_methods = (uint32_t)nm;
    h.n_fields = (uint32_t)nf;
    h.n_sigs = n_sigs;
    h.cap_cls_obf = h.cap_cls_orig = cap1;
    h.cap_sig = cap3;
    h.compiler = in->ref[b->hdr[0]];
    h.compiler_version = in->ref[b->hdr[1]];
    h.min_api = in->ref[b->hdr[2]];
    h.pg_map_id = in->ref[b->hdr[3]];
    h.pg_map_hash = in->ref[b->hdr[4]];

    size_t total = sizeof h + in->pool.len + 64 + nc * sizeof(bl_mi_class) +
                   nm * sizeof(bl_mi_method) + nf * sizeof(bl_mi_field) + ex.n * 4 +
                   (2 * (size_t)cap1 + cap3) * sizeof(bl_mi_slot);
    if ((err = bl_buf_reserve(out, total))) {
        if (tables_started)
            pthread_join(tables_th, NULL);
        goto out_ex;
    }
    bl_mem_huge(out->data, out->alloc);
    bl_buf_append(out, &h, sizeof h);
    h.off_strings = out->len;
    h.len_strings = in->pool.len;
    bl_buf_append(out, in->pool.data, in->pool.len);
    pad8(out);
    h.off_classes = out->len;
    for (size_t c = 0; c < nc; c++) {
        bl_mi_class k = b->classes.v[c];
        k.obf = in->ref[k.obf];
        k.orig = in->ref[k.orig];
        k.source_file = in->ref[k.source_file];
        bl_buf_append(out, &k, sizeof k);
    }
    h.off_methods = out->len;
    for (size_t i = 0; i < nm; i++) {
        bl_mi_method m = b->methods.v[order[i]].m;
        m.obf = in->ref[m.obf];
        m.orig_class = in->ref[m.orig_class];
        m.orig_name = in->ref[m.orig_name];
        m.ret = in->ref[m.ret];
        m.params = in->ref[m.params];
        m.residual = in->ref[m.residual];
        bl_buf_append(out, &m, sizeof m);
    }
    h.off_fields = out->len;
    for (size_t i = 0; i < nf; i++) {
        bl_mi_field f = b->fields.v[forder[i]].f;
        f.obf = in->ref[f.obf];
        f.orig = in->ref[f.orig];
        f.type = in->ref[f.type];
        f.residual = in->ref[f.residual];
        bl_buf_append(out, &f, sizeof f);
    }
    h.off_extras = out->len;
    h.n_extras = ex.n;
    bl_buf_append(out, ex.v, ex.n * 4);
    pad8(out);
    if (tables_started)
        pthread_join(tables_th, NULL);
    tables_started = 0;
    h.off_cls_obf = out->len;
    bl_buf_append(out, t1, cap1 * sizeof *t1);
    h.off_cls_orig = out->len;
    bl_buf_append(out, t2, cap1 * sizeof *t2);
    h.off_sig = out->len;
    bl_buf_append(out, t3, cap3 * sizeof *t3);
    h.file_size = out->len;
    memcpy(out->data, &h, sizeof h);
out_ex:
    free(ex.v);
out:
    free(order);
    free(tmp);
    free(start);
    free(fstart);
    free(forder);
    free(t1);
    free(t2);
    free(t3);
    return err;
}

/* ------------------------------------------------------------------------ */
/* Parallel parse                                                            */

/*
 * A big mapping is parsed in two halves at once, cut before a class line:
 * the main thread's builder takes the header and the first half, a second
 * builder the rest; then the second is appended to the first (its string
 * ids shifted past the first's, its pool appended: a string found in both
 * halves is stored twice, which lookups do not mind since they compare
 * bytes), and the image is written from the merged builder as usual. The
 * result equals the one-thread parse except for those duplicate strings.
 * The second half's diagnostics are held and replayed after the first's,
 * with their line numbers. Falls back to one thread (parsing the second half
 * again, in order) when the halves do not join cleanly: a class mapped in
 * both, a map-version comment after the header, a malformed line in the
 * second half under --strict (so the failure reports every count as one
 * pass would), or a merge that would pass the 4 GiB string limit.
 */
#define PAR_MIN_BYTES ((size_t)8 << 20) /* parse in two halves from 8 MiB */

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static bl_err builder_init(builder *b, const bl_mi_build_opts *opts, size_t len)
{
    memset(b, 0, sizeof *b);
    b->opts = opts;
    b->cur_class = -1;
    b->use_range = opts && opts->want_member && opts->want_range;
    bl_buf_init(&b->scratch, 1 << 20);
    bl_err err = interner_init(&b->in);
    /* size the big arrays once from the input (a mapping line is ~80 bytes,
     * a third of the bytes are distinct names): growth by copying is what
     * a large mapping would otherwise spend its time on */
    if (!err && len > (1 << 20)) {
        size_t lines = len / 80;
        b->methods.v = malloc(lines * sizeof *b->methods.v);
        b->methods.cap = b->methods.v ? lines : 0;
        bl_mem_huge(b->methods.v, b->methods.cap * sizeof *b->methods.v);
        err = bl_buf_reserve(&b->in.pool, len / 3);
        if (err == BL_ETOOBIG)
            err = BL_OK; /* only a hint */
        bl_mem_huge(b->in.pool.data, b->in.pool.alloc);
    }
    return err;
}

static void builder_free(builder *b)
{
    interner_cleanup(&b->in);
    free(b->classes.v);
    free(b->methods.v);
    free(b->fields.v);
    free(b->extras.v);
    free(b->cls_of_obf.v);
    bl_buf_cleanup(&b->scratch);
}

/* The id of n bytes at p if interned already, else 0 (0 is also ""). */
static uint32_t interned_id(const interner *in, const char *p, uint32_t n, uint64_t h)
{
    for (uint32_t j = (uint32_t)h & in->mask;; j = (j + 1) & in->mask) {
        uint32_t id1 = in->slots[j].id1;
        if (!id1)
            return 0;
        uint32_t k = id1 - 1, len;
        if (in->slots[j].tag == (uint32_t)(h >> 32)) {
            memcpy(&len, in->pool.data + in->ref[k] - 4, 4);
            if (len == n && memcmp(in->pool.data + in->ref[k], p, n) == 0)
                return k;
        }
    }
}

/* Diagnostics held back (a second half's, or a build's that may start
 * again), to be reported later or dropped. */
typedef struct held_diags {
    BL_VEC(bl_mi_diag) v;
    int lost; /* out of memory holding them */
} held_diags;

static void hold_diag(void *ctx, const bl_mi_diag *d)
{
    held_diags *h = ctx;
    bl_err err = BL_OK;
    BL_VEC_PUSH(h->v, *d, err);
    if (err)
        h->lost = 1;
}

typedef struct half {
    builder b;
    bl_mi_build_opts opts;     /* the caller's, with diag held here */
    const char *p;
    size_t n;
    held_diags diags;          /* lines relative to the half */
    bl_err err;
} half;

static void *half_run(void *arg)
{
    half *h = arg;
    h->err = parse_all(&h->b, h->p, h->n);
    return NULL;
}

/* Where the header ends (the first class line) and where to cut: the first
 * class line at or after the middle. 0 when there is no good cut. */
static size_t find_cut(const char *data, size_t len, size_t *hdr_end)
{
    const char *p = data, *end = data + len;
    *hdr_end = 0;
    for (;;) { /* header: comment and blank lines */
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        bl_mapping_line ml;
        const char *why;
        if (bl_mapping_parse_line(p, (size_t)(le - p), &ml, &why) != BL_OK)
            return 0;
        if (ml.kind == BL_ML_CLASS)
            break;
        if (ml.kind != BL_ML_BLANK && ml.kind != BL_ML_COMMENT && ml.kind != BL_ML_HEADER &&
            ml.kind != BL_ML_META)
            return 0;
        if (!nl)
            return 0;
        p = nl + 1;
    }
    *hdr_end = (size_t)(p - data);
    /* the first class line after the middle, else the last one before it
     * (other than the first) */
    for (int pass = 0; pass < 2; pass++) {
        const char *q = pass == 0 ? memchr(data + len / 2, '\n', len - len / 2) : p;
        const char *stop = pass == 0 ? end : data + len / 2;
        size_t found = 0;
        if (pass == 0 && q)
            q++;
        while (q && q < stop) {
            if (q > p && *q != ' ' && *q != '\t' && *q != '#' && *q != '\n' && *q != '\r') {
                const char *nl = memchr(q, '\n', (size_t)(end - q));
                bl_mapping_line ml;
                const char *why;
                if (bl_mapping_parse_line(q, (size_t)((nl ? nl : end) - q), &ml, &why) ==
                        BL_OK &&
                    ml.kind == BL_ML_CLASS) {
                    found = (size_t)(q - data);
                    if (pass == 0)
                        return found;
                }
            }
            q = memchr(q, '\n', (size_t)(end - q));
            if (q)
                q++;
        }
        if (found)
            return found;
    }
    return 0;
}

/* 1 when a class of b is also a class of a (the one-thread parse would
 * merge their members). */
static int halves_share_class(const builder *a, const builder *b)
{
    for (size_t c = 0; c < b->classes.n; c++) {
        uint32_t id = b->classes.v[c].obf, n;
        const char *s = istr(&b->in, id, &n);
        uint32_t k = interned_id(&a->in, s, n, b->in.hash[id]);
        if (k && k < a->cls_of_obf.n && a->cls_of_obf.v[k])
            return 1;
    }
    return 0;
}

#define REMAP(x) ((x) ? base + (x) - 1 : 0)

/* Appends builder b to builder a (see "Parallel parse"). b is only read;
 * the caller still frees it. BL_ETOOBIG (ids or strings past 2^32) comes
 * before any change to a; BL_ENOMEM may leave a half merged (fatal). */
static bl_err merge_half(builder *a, builder *b)
{
    interner *ia = &a->in;
    const interner *ib = &b->in;
    uint32_t base = ia->n; /* b's id k >= 1 becomes base + k - 1 */
    if ((uint64_t)ia->n + ib->n > UINT32_MAX - 2 ||
        (uint64_t)ia->pool.len + ib->pool.len > (uint64_t)UINT32_MAX - 16 ||
        (uint64_t)a->methods.n + b->methods.n >= UINT32_MAX ||
        (uint64_t)a->classes.n + b->classes.n >= UINT32_MAX)
        return BL_ETOOBIG;
    uint32_t need = ia->n + ib->n;
    if (need > ia->cap) {
        uint32_t *r = realloc(ia->ref, (size_t)need * sizeof *r);
        if (!r)
            return BL_ENOMEM;
        ia->ref = r;
        uint64_t *hh = realloc(ia->hash, (size_t)need * sizeof *hh);
        if (!hh)
            return BL_ENOMEM;
        ia->hash = hh;
        ia->cap = need;
    }
    uint32_t shift = (uint32_t)ia->pool.len - 4; /* b's pool minus its 4-byte id 0 */
    bl_err err = bl_buf_append(&ia->pool, ib->pool.data + 4, ib->pool.len - 4);
    if (err)
        return err;
    for (uint32_t k = 1; k < ib->n; k++) {
        ia->ref[base + k - 1] = ib->ref[k] + shift;
        ia->hash[base + k - 1] = ib->hash[k];
    }
    ia->n += ib->n - 1;
    /* ia->slots now misses b's strings: nothing is interned after a merge */

    uint32_t c0 = (uint32_t)a->classes.n, m0 = (uint32_t)a->methods.n;
    for (size_t i = 0; i < b->classes.n && !err; i++) {
        bl_mi_class c = b->classes.v[i];
        c.obf = REMAP(c.obf);
        c.orig = REMAP(c.orig);
        c.source_file = REMAP(c.source_file);
        BL_VEC_PUSH(a->classes, c, err);
    }
    for (size_t i = 0; i < b->methods.n && !err; i++) {
        bmethod m = b->methods.v[i];
        m.cls += c0;
        m.m.obf = REMAP(m.m.obf);
        m.m.orig_class = REMAP(m.m.orig_class);
        m.m.orig_name = REMAP(m.m.orig_name);
        m.m.ret = REMAP(m.m.ret);
        m.m.params = REMAP(m.m.params);
        m.m.residual = REMAP(m.m.residual);
        BL_VEC_PUSH(a->methods, m, err);
    }
    for (size_t i = 0; i < b->fields.n && !err; i++) {
        bfield f = b->fields.v[i];
        f.cls += c0;
        f.f.obf = REMAP(f.f.obf);
        f.f.orig = REMAP(f.f.orig);
        f.f.type = REMAP(f.f.type);
        f.f.residual = REMAP(f.f.residual);
        BL_VEC_PUSH(a->fields, f, err);
    }
    for (size_t i = 0; i < b->extras.n && !err; i++) {
        bextra x = b->extras.v[i];
        x.entry += m0;
        if (x.kind == EX_OUTLINE || x.kind == EX_RULE)
            x.a = REMAP(x.a);
        BL_VEC_PUSH(a->extras, x, err);
    }
    for (int i = 0; i < 5; i++)
        if (!a->hdr[i] && b->hdr[i])
            a->hdr[i] = REMAP(b->hdr[i]);
    a->st.lines += b->st.lines;
    a->st.class_lines += b->st.class_lines;
    a->st.malformed += b->st.malformed;
    a->st.warnings += b->st.warnings;
    if (b->st.map_version > a->st.map_version)
        a->st.map_version = b->st.map_version;
    return err;
}

#undef REMAP

/* Parses data into b, in two halves on two threads when that pays. Returns
 * early with b->restart set when a half met metadata under use_range. */
static bl_err parse_split(builder *b, const char *data, size_t len)
{
    size_t hdr_end = 0, cut = 0;
    int threads = b->opts ? b->opts->threads : 0;
    if (threads == 0 && len >= PAR_MIN_BYTES && sysconf(_SC_NPROCESSORS_ONLN) >= 2)
        threads = 2;
    if (threads >= 2)
        cut = find_cut(data, len, &hdr_end);
    if (!cut)
        return parse_all(b, data, len);
    bl_err err = parse_all(b, data, hdr_end);
    if (err || b->restart)
        return err;
    half *h = calloc(1, sizeof *h);
    if (!h)
        return parse_all(b, data + hdr_end, len - hdr_end);
    if (b->opts)
        h->opts = *b->opts;
    h->opts.diag = hold_diag;
    h->opts.diag_ctx = &h->diags;
    h->p = data + cut;
    h->n = len - cut;
    pthread_t th;
    int started = 0;
    uint32_t v0 = b->version;
    if (builder_init(&h->b, &h->opts, len - cut) == BL_OK) {
        h->b.use_range = b->use_range;
        h->b.version = v0;
        h->b.st.map_version = b->st.map_version;
        started = pthread_create(&th, NULL, half_run, h) == 0;
    }
    err = parse_all(b, data + hdr_end, cut - hdr_end);
    if (started)
        pthread_join(th, NULL);
    if (started && h->b.restart)
        b->restart = 1;
    int joined = 0;
    /* joined only when the second half parsed cleanly (a strict failure
     * there is found again, with all its counts, by the one-pass parse
     * below) and the merge fits: BL_ETOOBIG from merge_half leaves b as it
     * was, and one pass stores shared strings once, so it may still fit */
    if (!err && !b->restart && started && b->version == v0 && !h->diags.lost &&
        h->err == BL_OK &&
        !halves_share_class(b, &h->b)) {
        uint64_t line0 = b->st.lines;
        err = merge_half(b, &h->b);
        if (err == BL_ETOOBIG)
            err = BL_OK;
        else if (!err)
            joined = 1;
        b->st.threads = joined ? 2 : 1;
        if (joined && b->opts && b->opts->diag)
            for (size_t i = 0; i < h->diags.v.n; i++) {
                bl_mi_diag d = { line0 + h->diags.v.v[i].line, h->diags.v.v[i].message };
                b->opts->diag(b->opts->diag_ctx, &d);
            }
    }
    if (!err && !joined && !b->restart) /* the second half again, in order */
        err = parse_all(b, data + cut, len - cut);
    builder_free(&h->b);
    free(h->diags.v.v);
    free(h);
    return err;
}

/* Parses data into b (see parse_split); with want_range, starts again
 * without it when the mapping shows metadata, reporting each diagnostic
 * once. */
static bl_err parse_mapping(builder *b, const char *data, size_t len)
{
    if (!b->use_range)
        return parse_split(b, data, len);
    const bl_mi_build_opts *caller = b->opts;
    bl_mi_build_opts held_opts = *caller;
    held_diags hd;
    memset(&hd, 0, sizeof hd);
    if (caller->diag) { /* held until the parse stands */
        held_opts.diag = hold_diag;
        held_opts.diag_ctx = &hd;
        b->opts = &held_opts;
    }
    bl_err err = parse_split(b, data, len);
    b->opts = caller;
    /* metadata met, or out of memory holding diagnostics (then they are
     * reported as they come): parse again without want_range */
    if (!err && (b->restart || hd.lost)) {
        free(hd.v.v);
        builder_free(b);
        if ((err = builder_init(b, caller, len)))
            return err;
        b->use_range = 0;
        b->st.threads = 1;
        return parse_split(b, data, len);
    }
    for (size_t i = 0; i < hd.v.n; i++)
        caller->diag(caller->diag_ctx, &hd.v.v[i]);
    free(hd.v.v);
    if (!err)
        b->st.by_range = 1;
    return err;
}

/* XXH3-64 of an image (at least a header long) with the header's checksum
 * field taken as 0. */
static uint64_t image_checksum(const void *img, size_t len)
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
    } else if (image_checksum(img, len) != h.checksum) {
        w = "checksum mismatch";
        e = BL_EFORMAT;
    }
    if (why)
        *why = w;
    return e;
}

bl_err bl_mapindex_build(const char *data, size_t len, const bl_mi_build_opts *opts,
                         bl_buf *out, bl_mi_stats *stats)
{
    builder b;
    uint64_t t0 = mono_us();
    bl_err err = builder_init(&b, opts, len);
    b.st.threads = 1;
    if (!err)
        err = parse_mapping(&b, data, len);
    uint64_t t1 = mono_us();
    if (!err)
        err = write_image(&b, out);
    b.st.parse_us = t1 - t0;
    b.st.write_us = mono_us() - t1;
    if (!err) {
        bl_mi_header *h = (bl_mi_header *)(void *)out->data;
        h->mapping_size = len;
        h->checksum = 0;
        if (!opts || !opts->no_checksum)
            h->checksum = image_checksum(out->data, out->len);
    }
    b.st.classes = (uint32_t)b.classes.n;
    b.st.methods = (uint32_t)b.methods.n;
    b.st.fields = (uint32_t)b.fields.n;
    if (stats)
        *stats = b.st;
    builder_free(&b);
    return err;
}

bl_err bl_mapindex_build_file(const char *mapping_path, const char *index_path,
                              const bl_mi_build_opts *opts, bl_mi_stats *stats)
{
    bl_err err = BL_OK;
    int fd = open(mapping_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BL_EIO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return BL_EIO;
    }
    const char *data = "";
    size_t len = (size_t)st.st_size;
    void *map = NULL;
    if (len) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            close(fd);
            return BL_EIO;
        }
        data = map;
        (void)madvise(map, len, MADV_SEQUENTIAL);
    }
    close(fd);
    bl_buf out;
    bl_buf_init(&out, 0);
    err = bl_mapindex_build(data, len, opts, &out, stats);
    if (map)
        munmap(map, len);
    if (err) {
        bl_buf_cleanup(&out);
        return err;
    }
    size_t pl = strlen(index_path);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        bl_buf_cleanup(&out);
        return BL_ENOMEM;
    }
    memcpy(tmp, index_path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    int ofd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (ofd < 0) {
        err = BL_EIO;
    } else {
        size_t off = 0;
        while (off < out.len) {
            ssize_t w = write(ofd, out.data + off, out.len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                err = BL_EIO;
                break;
            }
            off += (size_t)w;
        }
        if (!err && fsync(ofd) != 0)
            err = BL_EIO;
        if (close(ofd) != 0 && !err)
            err = BL_EIO;
        if (!err && rename(tmp, index_path) != 0)
            err = BL_EIO;
        if (err)
            unlink(tmp);
    }
    free(tmp);
    bl_buf_cleanup(&out);
    return err;
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

