/*
 * mapindex_parse.c — the mapping text into a builder (see mapindex.c for
 * the whole build):
 *   1. each line is parsed by bl_mapping_parse_line (mapping.c);
 *   2. names are interned: every distinct byte string gets a dense id and is
 *      appended once to the strings section (which is the string pool);
 *   3. classes, method entries (mapped ranges) and fields are collected in
 *      file order; inline groups — consecutive method lines of one class
 *      with the same obfuscated name and the same minified range — are
 *      marked GROUP_START (first, innermost) and OUTER (last);
 *   4. R8 metadata comments attach to the line above them, under the map
 *      version in force (R8 doc/retrace.md "Version").
 * A one-shot retrace's want_class / want_member / want_range skip what it
 * will not look up; a big mapping is parsed by two threads at once, in parts
 * joined in mapping order ("Parallel parse").
 */
#include "symbol/mapindex_impl.h"

#include <jansson.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/u64map.h"
#include "symbol/lenient_json.h"
#include "symbol/mapping.h"

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

/* Whether method line y goes on with the run of method line x: the same
 * obfuscated name and minified range (both lines of one class). */
static int same_run(const bl_mapping_line *x, const bl_mapping_line *y)
{
    return x->has_min && y->has_min && x->min_start == y->min_start &&
           x->min_end == y->min_end && x->obf.n == y->obf.n &&
           same_bytes(x->obf.p, y->obf.p, x->obf.n);
}

static int part_goes_on(struct mib_part *pt, const char *p);

/* Parses [data, data+len) into b. With b->use_range, stops at the first
 * JSON metadata comment with b->restart set (see want_range). */
static bl_err parse_all(builder *b, const char *data, size_t len)
{
    const char *p = data, *end = data + len;
    prev_ids pv;
    memset(&pv, 0, sizeof pv);
    /* A run of lines want_range keeps outer only (BL_MI_WANT_OUTER): each
     * is read and checked as usual, but only its last line goes into the
     * index. A line of the run is held here; the next one that goes on
     * with the run replaces it (the held one was an inner frame), any
     * other line first has the held one indexed (handle_method), as if it
     * had been indexed when read: so the index is exactly the one of the
     * whole run, less its inner entries — a malformed line or anything
     * else that ends an inline group still ends it where it did. */
    bl_mapping_line held;
    int has_held = 0;
    bl_err herr;
#define FLUSH_HELD()                                                                       \
    do {                                                                                   \
        if (has_held) {                                                                    \
            has_held = 0;                                                                  \
            if ((herr = handle_method(b, &held, &pv)))                                     \
                return herr;                                                               \
        }                                                                                  \
    } while (0)
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
        /* a part of a parallel parse ends where a thread that had finished
         * split it (see "Parallel parse"): asked at each line that may be a
         * class line */
        if (b->part && *p != ' ' && *p != '\t' && *p != '#' && *p != '\n' && *p != '\r' &&
            !part_goes_on(b->part, p))
            break;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        b->st.lines++;
        /* the first byte that is not a blank (le: none) */
        const char *q = p < le && (*p == ' ' || *p == '\t') ? skip_blanks(p, le) : p;
        if (b->use_range && q < le && *q == '#' && json_comment(q, le)) {
            b->restart = 1;
            return BL_OK;
        }
        /* only an indented line with a minified range may go on with a
         * held run */
        if (has_held && (q == p || q == le || *q < '0' || *q > '9'))
            FLUSH_HELD();
        int outer = 0; /* want_range said BL_MI_WANT_OUTER for this line */
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
                int wr = 1;
                if (wm_yes && b->use_range && digit &&
                    bl_mapping_min_range(q, (size_t)(le - q), &rs, &re))
                    wr = b->opts->want_range(b->opts->want_ctx, cls, cls_n, nm, nn, rs, re);
                outer = wr == BL_MI_WANT_OUTER;
                if (!outer)
                    FLUSH_HELD();
                if (!wm_yes || !wr ||
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
        if (!outer)
            FLUSH_HELD();
        bl_mapping_line ml;
        const char *why;
        bl_err err = BL_OK;
        if (bl_mapping_parse_line(p, (size_t)(le - p), &ml, &why) != BL_OK) {
            FLUSH_HELD();
            diag(b, why, 1);
            if (b->opts && b->opts->strict)
                return BL_EFORMAT;
            close_group(b);
            b->last_kind = LK_NONE;
        } else if (outer && ml.kind == BL_ML_METHOD && b->cur_class >= 0) {
            if (!has_held || !same_run(&held, &ml))
                FLUSH_HELD(); /* another run: the one before is indexed */
            held = ml;        /* an inner line of the run is dropped */
            has_held = 1;
        } else {
            FLUSH_HELD();
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
    FLUSH_HELD();
#undef FLUSH_HELD
    close_group(b);
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Parallel parse                                                            */

/*
 * A big mapping is parsed by two threads at once, in parts cut before class
 * lines: the main thread's builder takes the header and the first half, a
 * second builder the rest. A thread that finishes its part while the other
 * still has PART_SPLIT_MIN bytes or more to go splits that part at the
 * first class line past the middle of what is left and parses the second
 * piece into a builder of its own (the owner stops at that line: it asks
 * before each line that may be a class line), so both threads stay busy to
 * the end whatever the parts cost (the classes a trace names are seldom
 * spread evenly; a CPU may be slowed). Then the parts are appended to the
 * first builder in mapping order (string ids shifted, pools appended: a
 * string found in two parts is stored twice, which lookups do not mind
 * since they compare bytes), and the image is written from it as usual.
 * The result equals the one-thread parse except for those duplicate
 * strings. The other parts' diagnostics are held and replayed after the
 * first's, with their line numbers. Falls back to one thread (parsing what
 * follows the first part again, in order) when the parts do not join
 * cleanly: a class mapped in two, a map-version comment after the header,
 * a malformed line past the first part under --strict (so the failure
 * reports every count as one pass would), or a merge that would pass the
 * 4 GiB string limit.
 */
#define PAR_MIN_BYTES ((size_t)8 << 20)   /* parse on two threads from 8 MiB */
#define PART_SPLIT_MIN ((size_t)1 << 20) /* what is left of a part, to split it */
#define MAX_PARTS 16

bl_err bl_mib_builder_init(builder *b, const bl_mi_build_opts *opts, size_t len)
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

void bl_mib_builder_free(builder *b)
{
    interner_cleanup(&b->in);
    free(b->classes.v);
    free(b->methods.v);
    free(b->fields.v);
    free(b->extras.v);
    free(b->cls_of_obf.v);
    bl_buf_cleanup(&b->scratch);
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

/* Whether the line at q (a line start before `to`) is a class line: at
 * column 0, not a comment, and read as one. */
static int is_class_line(const char *q, const char *to)
{
    if (q >= to || *q == ' ' || *q == '\t' || *q == '#' || *q == '\n' || *q == '\r')
        return 0;
    const char *nl = memchr(q, '\n', (size_t)(to - q));
    bl_mapping_line ml;
    const char *why;
    return bl_mapping_parse_line(q, (size_t)((nl ? nl : to) - q), &ml, &why) == BL_OK &&
           ml.kind == BL_ML_CLASS;
}

/* A part of the mapping parsed by one thread into one builder. */
typedef struct mib_part {
    struct mib_split *sp;
    builder own;                /* its builder, except for part 0 (the caller's) */
    builder *b;                 /* the builder parsing it */
    bl_mi_build_opts opts;      /* the caller's, diagnostics held (not part 0) */
    held_diags diags;           /* lines relative to the part */
    const char *start, *end;    /* start: a class line */
    const char *limit;          /* where it stops: end, or lowered by a split */
    const char *at;             /* the last line it asked about (part_goes_on) */
    const char *stopped;        /* where it stopped before its end, or NULL */
    bl_err err;
    int live;                   /* builder initialised */
    int done;                   /* parsed (or failed) */
} mib_part;

/* The parts of one parallel parse; mu guards every part's limit, at, done
 * and the count. */
typedef struct mib_split {
    pthread_mutex_t mu;
    pthread_cond_t done_cv;        /* a part is done, or a thread left parts_work */
    int working;                   /* threads in parts_work (they read the text) */
    const char *text;              /* the mapping (release_text) */
    size_t text_len;
    const bl_mi_build_opts *opts;
    uint32_t version, map_version; /* in force after the header */
    int use_range;
    int stop;                      /* a part failed: the others end early */
    size_t split_min;              /* see bl_mi_build_opts.split_min */
    int n;
    mib_part part[MAX_PARTS];      /* in order of creation */
} mib_split;

/* Whether the part goes on at p, a line that may be a class line: its
 * limit is further and the parse is not stopped — a stopped part ends only
 * at a class line, where the one-pass parse that may follow from there
 * starts with the state a class line sets (any other line, a malformed one
 * at column 0, would lose what the lines before it set up: skipping an
 * unwanted class, the class's name). Notes p as where it is. */
static int part_goes_on(struct mib_part *pt, const char *p)
{
    mib_split *sp = pt->sp;
    pthread_mutex_lock(&sp->mu);
    int on = p < pt->limit && !(sp->stop && is_class_line(p, pt->end));
    if (on)
        pt->at = p;
    else
        pt->stopped = p;
    pthread_mutex_unlock(&sp->mu);
    return on;
}

/* The first class line that starts at or after `from` and before `to`, or
 * NULL. from may be inside a line (a middle): the search starts at the next
 * line start, since the tail of a line can read as a class line of its own
 * (the end of "com.example.Foo -> a:", or of a comment "# ... x -> y:").
 * from[-1] must be readable when from is not a line start. */
static const char *class_line_in(const char *line0, const char *from, const char *to)
{
    const char *q = from;
    if (q >= to)
        return NULL;
    if (q > line0 && q[-1] != '\n') { /* inside a line: to the next one */
        const char *nl = memchr(q, '\n', (size_t)(to - q));
        if (!nl)
            return NULL;
        q = nl + 1;
    }
    for (; q < to; q++) {
        if (is_class_line(q, to))
            return q;
        if (!(q = memchr(q, '\n', (size_t)(to - q))))
            return NULL;
    }
    return NULL;
}

/* Parses part k with its builder (made here for parts other than 0). */
static void part_parse(mib_split *sp, int k)
{
    mib_part *pt = &sp->part[k];
    if (k > 0) {
        if (sp->opts)
            pt->opts = *sp->opts;
        pt->opts.diag = hold_diag;
        pt->opts.diag_ctx = &pt->diags;
        pt->err = bl_mib_builder_init(&pt->own, &pt->opts, (size_t)(pt->end - pt->start));
        pt->live = 1;
        pt->b = &pt->own;
        pt->own.use_range = sp->use_range;
        pt->own.version = sp->version;
        pt->own.st.map_version = sp->map_version;
    }
    if (!pt->err) {
        pt->b->part = pt;
        pt->err = parse_all(pt->b, pt->start, (size_t)(pt->end - pt->start));
        pt->b->part = NULL;
    }
    pthread_mutex_lock(&sp->mu);
    pt->done = 1;
    if (pt->err || pt->b->restart)
        sp->stop = 1;
    pthread_cond_broadcast(&sp->done_cv);
    pthread_mutex_unlock(&sp->mu);
}

/* Splits the part with the most left to parse, when that is
 * PART_SPLIT_MIN or more: the new part's index, or -1. */
static int part_split(mib_split *sp)
{
    for (int tries = 0; tries < 4; tries++) {
        pthread_mutex_lock(&sp->mu);
        int v = -1;
        size_t most = 0;
        for (int i = 0; i < sp->n && !sp->stop && sp->n < MAX_PARTS; i++) {
            const mib_part *pt = &sp->part[i];
            size_t left = (size_t)(pt->limit - pt->at);
            if (!pt->done && pt->limit > pt->at && left > most) {
                most = left;
                v = i;
            }
        }
        if (v < 0 || most < sp->split_min) {
            pthread_mutex_unlock(&sp->mu);
            return -1;
        }
        const char *from = sp->part[v].at, *to = sp->part[v].limit;
        pthread_mutex_unlock(&sp->mu);
        /* from (a line its owner asked about) is a line start */
        const char *x = class_line_in(from, from + (to - from) / 2, to);
        if (!x)
            return -1;
        pthread_mutex_lock(&sp->mu);
        mib_part *pt = &sp->part[v];
        /* still ahead of its owner (which stops at x: it asks before each
         * class line) and not split meanwhile */
        if (!sp->stop && !pt->done && pt->limit == to && pt->at < x && sp->n < MAX_PARTS) {
            int k = sp->n++;
            memset(&sp->part[k], 0, sizeof sp->part[k]);
            sp->part[k].sp = sp;
            sp->part[k].start = sp->part[k].at = x;
            sp->part[k].end = sp->part[k].limit = to;
            pt->limit = x;
            pthread_mutex_unlock(&sp->mu);
            return k;
        }
        pthread_mutex_unlock(&sp->mu);
    }
    return -1;
}

/* A thread's work: part k, then parts split off others while any pays. */
static void parts_work(mib_split *sp, int k)
{
    pthread_mutex_lock(&sp->mu);
    sp->working++;
    pthread_mutex_unlock(&sp->mu);
    for (; k >= 0; k = part_split(sp))
        part_parse(sp, k);
    pthread_mutex_lock(&sp->mu);
    sp->working--;
    pthread_cond_broadcast(&sp->done_cv);
    pthread_mutex_unlock(&sp->mu);
}

/* Waits until every part is parsed (none is split any more then: only a
 * part not done is split) and, with `idle`, until no thread is in
 * parts_work any more (a thread looking for a part to split reads the
 * text). */
static void parts_wait_all(mib_split *sp, int idle)
{
    pthread_mutex_lock(&sp->mu);
    for (int i = 0; i < sp->n || (idle && sp->working);)
        if (i < sp->n && sp->part[i].done)
            i++;
        else
            pthread_cond_wait(&sp->done_cv, &sp->mu);
    pthread_mutex_unlock(&sp->mu);
}

static void *parts_thread(void *arg)
{
    mib_split *sp = arg;
    parts_work(sp, 1);
    if (sp->opts && sp->opts->release_text) {
        /* see bl_mi_build_opts.release_text: after the last part, beside
         * the join (the one-pass parse after the first part, when the
         * parts do not join, reads the file's pages back in) */
        parts_wait_all(sp, 1);
        uintptr_t a = ((uintptr_t)sp->text + 4095) & ~(uintptr_t)4095;
        uintptr_t e = (uintptr_t)sp->text + sp->text_len;
        if (e > a)
            (void)madvise((void *)a, e - a, MADV_DONTNEED);
    }
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
            if (q > p && is_class_line(q, end)) {
                found = (size_t)(q - data);
                if (pass == 0)
                    return found;
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

/* 1 when two of the builders share a class (the one-thread parse would
 * merge its members), by the hash of its obfuscated name (a collision of
 * two names only costs the one-thread parse), or on no memory. */
static int parts_share_class(builder *const *bs, int n)
{
    bl_u64map seen;
    bl_u64map_init(&seen);
    int shared = 0;
    for (int i = 0; i < n && !shared; i++)
        for (size_t c = 0; c < bs[i]->classes.n && !shared; c++) {
            uint32_t *v;
            int added;
            if (bl_u64map_put(&seen, bs[i]->in.hash[bs[i]->classes.v[c].obf], 0, &v, &added))
                shared = 1;
            else if (!added)
                shared = 1; /* a builder's classes are distinct (cls_of_obf) */
        }
    bl_u64map_cleanup(&seen);
    return shared;
}

/* Whether a builder of these totals (string ids, pool bytes, methods,
 * classes) stays within the index's 32-bit limits (merge_half). */
static int totals_fit(uint64_t ids, uint64_t pool, uint64_t ms, uint64_t cs)
{
    return ids <= UINT32_MAX - 2 && pool <= (uint64_t)UINT32_MAX - 16 && ms < UINT32_MAX &&
           cs < UINT32_MAX;
}

/* Whether builders bs[1..n) appended to bs[0] stay within merge_half's
 * limits. */
static int parts_fit(builder *const *bs, int n)
{
    uint64_t ids = 0, pool = 0, ms = 0, cs = 0;
    for (int i = 0; i < n; i++) {
        ids += bs[i]->in.n;
        pool += bs[i]->in.pool.len;
        ms += bs[i]->methods.n;
        cs += bs[i]->classes.n;
    }
    return totals_fit(ids, pool, ms, cs);
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
    if (!totals_fit((uint64_t)ia->n + ib->n, (uint64_t)ia->pool.len + ib->pool.len,
                    (uint64_t)a->methods.n + b->methods.n, (uint64_t)a->classes.n + b->classes.n))
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

static int cmp_part_start(const void *x, const void *y)
{
    const mib_part *a = *(const mib_part *const *)x, *b = *(const mib_part *const *)y;
    return (a->start > b->start) - (a->start < b->start);
}

/* Parses data into b, on two threads when that pays (see "Parallel
 * parse"). Returns early with b->restart set when a part met metadata under
 * use_range. */
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
    mib_split *sp = calloc(1, sizeof *sp);
    if (sp && pthread_mutex_init(&sp->mu, NULL) != 0) {
        free(sp);
        sp = NULL;
    }
    if (sp && pthread_cond_init(&sp->done_cv, NULL) != 0) {
        pthread_mutex_destroy(&sp->mu);
        free(sp);
        sp = NULL;
    }
    if (!sp)
        return parse_all(b, data + hdr_end, len - hdr_end);
    sp->opts = b->opts;
    sp->text = data;
    sp->text_len = len;
    sp->version = b->version;
    sp->map_version = b->st.map_version;
    sp->use_range = b->use_range;
    sp->split_min = b->opts && b->opts->split_min ? b->opts->split_min : PART_SPLIT_MIN;
    sp->n = 2;
    for (int k = 0; k < 2; k++) {
        sp->part[k].sp = sp;
        sp->part[k].start = sp->part[k].at = data + (k ? cut : hdr_end);
        sp->part[k].end = sp->part[k].limit = k ? data + len : data + cut;
    }
    sp->part[0].b = b;
    pthread_t th;
    int started = pthread_create(&th, NULL, parts_thread, sp) == 0;
    if (started) {
        parts_work(sp, 0);
        parts_wait_all(sp, 0); /* the other thread may still drop the text's pages */
    } else {
        part_parse(sp, 0); /* then the rest in order, below */
    }
    err = sp->part[0].err;
    /* where the first part stopped: its limit, or earlier when another
     * part failed */
    const char *rest = sp->part[0].stopped ? sp->part[0].stopped : sp->part[0].end;
    /* the parts in mapping order; joined only when every one parsed cleanly
     * (a strict failure there is found again, with all its counts, by the
     * one-pass parse below) and they fit: nothing is merged otherwise */
    mib_part *order[MAX_PARTS];
    builder *bs[MAX_PARTS];
    int n = started ? sp->n : 1, clean = started && !err && !b->restart;
    for (int i = 0; i < n; i++)
        order[i] = &sp->part[i];
    qsort(order, (size_t)n, sizeof *order, cmp_part_start);
    for (int i = 0; i < n; i++) {
        bs[i] = order[i]->b;
        if (i > 0 && (order[i]->err || !order[i]->done || order[i]->b->restart ||
                      order[i]->diags.lost))
            clean = 0;
        if (i > 0 && order[i]->b && order[i]->b->restart)
            b->restart = 1;
        /* a part read past the header under another map version was read
         * wrongly unless it is the last */
        if (i + 1 < n && order[i]->b && order[i]->b->version != sp->version)
            clean = 0;
    }
    if (clean && (parts_share_class(bs, n) || !parts_fit(bs, n)))
        clean = 0;
    int joined = 0;
    if (clean && n > 1 && !b->restart) {
        joined = 1;
        for (int i = 1; i < n && !err; i++) {
            uint64_t line0 = b->st.lines;
            err = merge_half(b, bs[i]); /* fits: BL_ENOMEM only */
            if (!err && b->opts && b->opts->diag)
                for (size_t d = 0; d < order[i]->diags.v.n; d++) {
                    bl_mi_diag dg = { line0 + order[i]->diags.v.v[d].line,
                                      order[i]->diags.v.v[d].message };
                    b->opts->diag(b->opts->diag_ctx, &dg);
                }
        }
        b->st.threads = 2;
        b->st.parts = (uint32_t)n;
    }
    if (!err && !joined && !b->restart) { /* what follows the first part, in order */
        b->st.threads = 1;
        b->st.parts = 1;
        err = parse_all(b, rest, (size_t)(data + len - rest));
    }
    if (started)
        pthread_join(th, NULL);
    for (int i = 1; i < (started ? sp->n : 1); i++) {
        if (sp->part[i].live)
            bl_mib_builder_free(&sp->part[i].own);
        free(sp->part[i].diags.v.v);
    }
    pthread_cond_destroy(&sp->done_cv);
    pthread_mutex_destroy(&sp->mu);
    free(sp);
    return err;
}

/* Parses data into b (see parse_split); with want_range, starts again
 * without it when the mapping shows metadata, reporting each diagnostic
 * once. */
bl_err bl_mib_parse_mapping(builder *b, const char *data, size_t len)
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
        bl_mib_builder_free(b);
        if ((err = bl_mib_builder_init(b, caller, len)))
            return err;
        b->use_range = 0;
        b->st.threads = 1;
        b->st.parts = 1;
        return parse_split(b, data, len);
    }
    for (size_t i = 0; i < hd.v.n; i++)
        caller->diag(caller->diag_ctx, &hd.v.v[i]);
    free(hd.v.v);
    if (!err)
        b->st.by_range = 1;
    return err;
}

