/*
 * methodid.c — method-ID file parser. Format: schema/method-id-file.md;
 * API and ownership: methodid.h.
 *
 * One pass over the input, one line at a time; each field is checked and
 * copied to the arena in the same loop, driven by a byte-class table:
 *
 *   12,9,com.example.Foo bar (ILjava.lang.String;)V
 *   |  | |               |   `- descriptor, stored with '/' for '.'
 *   |  | |               `- method name, stored as is
 *   |  | `- class, stored dotted ('/' accepted and stored as '.')
 *   |  `- access flags, 0 .. 65535
 *   `- methodId, 0 .. BL_MID_MAX_ID
 *
 * Invariants of a finished table:
 *   1. ent[0 .. n-1] are in ascending id order and the ids are unique.
 *   2. page[id >> PAGE_BITS][id & PAGE_MASK] is 1 + the position of id's
 *      entry in ent, or 0 (or the page is NULL) when id has no entry.
 *   3. Every string an entry points to lives in `arena`, one allocation of
 *      len + 1 bytes made before parsing. A record stores class, name and
 *      descriptor, each NUL-terminated, in fewer bytes than its line takes
 *      (the id, the access flags and the two commas are dropped; they are at
 *      least 4 bytes and pay for the 3 NULs), and a rejected record writes
 *      no more than that before the write position is rolled back — so the
 *      arena never grows and its pointers never move.
 * Memory: the arena (<= input size), 32 bytes per entry, 16 KiB of page
 * directory and 16 KiB per 4096-id page that holds at least one id — at most
 * 32 MiB of pages however sparse the ids are.
 */
#include "ingest/methodid.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_BITS 12
#define PAGE_SIZE (1u << PAGE_BITS)
#define PAGE_MASK (PAGE_SIZE - 1)
#define N_PAGES ((BL_MID_MAX_ID >> PAGE_BITS) + 1)

#define MAX_LINE 65535u    /* bytes per line, without the line terminator */
#define MAX_ACCESS 0xFFFFu /* access_flags is a u2 (JVMS §4.6) */
#define MAX_SLOTS 255      /* parameter slots of a method (JVMS §4.3.3) */
#define MAX_DIMS 255       /* array dimensions (JVMS §4.3.2) */
#define ACC_STATIC 0x0008u
#define ACC_NATIVE 0x0100u

struct bl_methodids {
    bl_mid_entry *ent;        /* n entries, ascending id (invariant 1) */
    uint32_t n, cap;
    uint32_t id_limit;        /* largest id + 1, 0 when empty */
    int obfuscated;
    char build_id[37];        /* header build-id=, lowercase; "" when none */
    uint64_t malformed;
    char *arena;              /* all strings (invariant 3) */
    uint32_t *page[N_PAGES];  /* id → 1 + position (invariant 2) */
};

typedef struct parser {
    bl_methodids *t;
    char *w;                  /* next free byte of t->arena (accepted records) */
    uint64_t line;            /* 1-based number of the current line */
    int seen_record;          /* a record line was accepted or rejected */
    int seen_header;          /* a header-shaped comment was seen */
    int sorted;               /* records so far came in ascending id order */
    uint32_t last_id;
    char msg[128];            /* diagnostics that carry a number */
} parser;

/* ---- bytes ------------------------------------------------------------ */

/* Byte classes. A byte with none of a loop's "special" bits is copied as is. */
enum {
    K_WS = 1,    /* space, tab: separates tokens */
    K_CTL = 2,   /* control bytes other than tab, and DEL: never allowed */
    K_HI = 4,    /* 0x80 and up: part of a UTF-8 sequence, checked */
    K_SEP = 8,   /* '.' '/': class-name segment separators */
    K_BADC = 16, /* ';' '[': not in a class-name segment */
    K_BADM = 32  /* . ; [ / < >: not in a method name (JVMS §4.2.2) */
};
#define C_ K_CTL
#define W_ K_WS
#define S_ (K_SEP | K_BADM)
#define B_ (K_BADC | K_BADM)
#define M_ K_BADM
#define H_ K_HI
#define H8_ H_, H_, H_, H_, H_, H_, H_, H_
static const uint8_t kind[256] = {
    C_, C_, C_, C_, C_, C_, C_, C_, C_, W_, C_, C_, C_, C_, C_, C_, /* 0x00 */
    C_, C_, C_, C_, C_, C_, C_, C_, C_, C_, C_, C_, C_, C_, C_, C_, /* 0x10 */
    W_, 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  S_, S_, /* 0x20  . / */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  B_, M_, 0,  M_, 0,  /* 0x30  ; < > */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x40 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  B_, 0,  0,  0,  0,  /* 0x50  [ */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x60 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  C_, /* 0x70  DEL */
    H8_, H8_, H8_, H8_, H8_, H8_, H8_, H8_,                         /* 0x80 - 0xBF */
    H8_, H8_, H8_, H8_, H8_, H8_, H8_, H8_,                         /* 0xC0 - 0xFF */
};
#undef C_
#undef W_
#undef S_
#undef B_
#undef M_
#undef H_
#undef H8_

static const char *const BAD_TEXT = "control character or invalid UTF-8";

static int is_ws(char c)
{
    return c == ' ' || c == '\t';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/*
 * Length of the UTF-8 sequence at p (RFC 3629: shortest form, no
 * surrogates, at most U+10FFFF), or 0 when it is not one.
 */
static size_t utf8_len(const char *sp, const char *se)
{
    const unsigned char *p = (const unsigned char *)sp;
    size_t left = (size_t)((const unsigned char *)se - p), need;
    uint32_t cp, min;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        need = 1, min = 0x80, cp = p[0] & 0x1Fu;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        need = 2, min = 0x800, cp = p[0] & 0x0Fu;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        need = 3, min = 0x10000, cp = p[0] & 0x07u;
    } else {
        return 0;
    }
    if (left <= need)
        return 0;
    for (size_t i = 1; i <= need; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need + 1;
}

/* ---- fields: checked and copied to the arena in one pass ---------------- */

/*
 * Copies the class name at p to *wp: segments separated by '.' or '/'
 * (written as `sep`), each non-empty and without ';' '[' (JVMS §4.2.1).
 * Outside a descriptor the name ends at whitespace or e; inside one
 * (`in_desc`) it must end at ';'. Returns where it ended, or NULL with *why.
 */
static const char *copy_class(const char *p, const char *e, char **wp, char sep, int in_desc,
                              const char **why)
{
    char *w = *wp;
    const char *seg = p;
    const unsigned special = K_WS | K_CTL | K_HI | K_SEP | K_BADC;
    *why = in_desc ? "malformed descriptor" : "malformed class name";
    while (p < e) {
        unsigned k = kind[(unsigned char)*p];
        if (!(k & special)) {
            *w++ = *p++;
        } else if (k & K_SEP) {
            if (p == seg)
                return NULL;
            *w++ = sep;
            seg = ++p;
        } else if (k & K_HI) {
            size_t n = utf8_len(p, e);
            if (!n) {
                *why = BAD_TEXT;
                return NULL;
            }
            memcpy(w, p, n);
            w += n;
            p += n;
        } else if (in_desc ? *p == ';' : (k & K_WS) != 0) {
            break;
        } else {
            if (k & K_CTL)
                *why = BAD_TEXT;
            return NULL;
        }
    }
    if (p == seg || (in_desc && p == e))
        return NULL;
    *wp = w;
    return p;
}

/* Copies the method name at p (ends at whitespace or e): <init>, <clinit>,
 * or a name without . ; [ / < > (JVMS §4.2.2). NULL with *why if bad. */
static const char *copy_method(const char *p, const char *e, char **wp, const char **why)
{
    char *w = *wp;
    const char *s = p;
    *why = "malformed method name";
    if (*p == '<') {
        static const char *const special[] = { "<init>", "<clinit>" };
        for (int i = 0; i < 2; i++) {
            size_t n = strlen(special[i]);
            if ((size_t)(e - p) >= n && !memcmp(p, special[i], n) &&
                (p + n == e || is_ws(p[n]))) {
                memcpy(w, p, n);
                *wp = w + n;
                return p + n;
            }
        }
        return NULL;
    }
    const unsigned special = K_WS | K_CTL | K_HI | K_BADM;
    while (p < e) {
        unsigned k = kind[(unsigned char)*p];
        if (!(k & special)) {
            *w++ = *p++;
        } else if (k & K_WS) {
            break;
        } else if (k & K_HI) {
            size_t n = utf8_len(p, e);
            if (!n) {
                *why = BAD_TEXT;
                return NULL;
            }
            memcpy(w, p, n);
            w += n;
            p += n;
        } else {
            if (k & K_CTL)
                *why = BAD_TEXT;
            return NULL;
        }
    }
    if (p == s)
        return NULL;
    *wp = w;
    return p;
}

/*
 * Copies one FieldType (JVMS §4.3.2) at p to *wp, class names with '/'.
 * *slots gets the local-variable slots it takes: 2 for long and double,
 * else 1. NULL with *why if malformed.
 */
static const char *copy_field(const char *p, const char *e, char **wp, int *slots,
                              const char **why)
{
    char *w = *wp;
    const char *s = p;
    while (p < e && *p == '[')
        *w++ = *p++;
    if (p - s > MAX_DIMS) {
        *why = "descriptor has an array type of more than 255 dimensions";
        return NULL;
    }
    *why = "malformed descriptor";
    if (p >= e)
        return NULL;
    *slots = 1;
    switch (*p) {
    case 'D': case 'J':
        if (p == s)
            *slots = 2;
        /* fall through */
    case 'B': case 'C': case 'F': case 'I': case 'S': case 'Z':
        *w++ = *p++;
        break;
    case 'L':
        *w++ = *p++;
        if (!(p = copy_class(p, e, &w, '/', 1, why)))
            return NULL;
        *w++ = *p++; /* ';' */
        break;
    default:
        return NULL;
    }
    *wp = w;
    return p;
}

/*
 * Copies the MethodDescriptor (JVMS §4.3.3) at p to *wp; it ends at
 * whitespace or e. `this` takes a parameter slot unless the method is
 * static. Returns where it ended, or NULL with *why.
 */
static const char *copy_descriptor(const char *p, const char *e, uint32_t access, char **wp,
                                   const char **why)
{
    char *w = *wp;
    int total = (access & ACC_STATIC) ? 0 : 1, slots;
    *why = "malformed descriptor";
    if (*p != '(')
        return NULL;
    *w++ = *p++;
    while (p < e && *p != ')') {
        if (!(p = copy_field(p, e, &w, &slots, why)))
            return NULL;
        total += slots;
        if (total > MAX_SLOTS) {
            *why = "descriptor has more than 255 parameter slots";
            return NULL;
        }
    }
    if (p >= e)
        return NULL;
    *w++ = *p++; /* ')' */
    if (p < e && *p == 'V')
        *w++ = *p++;
    else if (!(p = copy_field(p, e, &w, &slots, why)))
        return NULL;
    if (p < e && !is_ws(*p)) {
        *why = "malformed descriptor";
        return NULL;
    }
    *wp = w;
    return p;
}

/*
 * Decimal digits at *pp, at least one, value at most `max`. Returns 1 and
 * advances *pp; 0 without digits; -1 when the value exceeds max (the check
 * runs per digit, so no overflow, and leading zeros are harmless).
 */
static int parse_dec(const char **pp, const char *e, uint32_t max, uint32_t *out)
{
    const char *p = *pp;
    uint32_t v = 0;
    if (p >= e || !is_digit(*p))
        return 0;
    for (; p < e && is_digit(*p); p++) {
        uint32_t d = (uint32_t)(*p - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *pp = p;
    *out = v;
    return 1;
}

/* ---- table ------------------------------------------------------------ */

static uint32_t *slot_of(const bl_methodids *t, uint32_t id)
{
    uint32_t *pg = t->page[id >> PAGE_BITS];
    return pg ? &pg[id & PAGE_MASK] : NULL;
}

/* Appends an entry whose strings are already in the arena. */
static bl_err add_entry(parser *ps, uint32_t id, uint32_t access, const char *cls,
                        const char *name, const char *desc)
{
    bl_methodids *t = ps->t;
    uint32_t **pg = &t->page[id >> PAGE_BITS];
    if (!*pg && !(*pg = calloc(PAGE_SIZE, sizeof **pg)))
        return BL_ENOMEM;
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 256;
        bl_mid_entry *ne = realloc(t->ent, (size_t)nc * sizeof *ne);
        if (!ne)
            return BL_ENOMEM;
        t->ent = ne;
        t->cap = nc;
    }
    bl_mid_entry *en = &t->ent[t->n];
    en->id = id;
    en->access = access;
    en->cls = cls;
    en->name = name;
    en->desc = desc;
    (*pg)[id & PAGE_MASK] = ++t->n;
    if (t->n > 1 && id < ps->last_id)
        ps->sorted = 0;
    ps->last_id = id;
    if (id >= t->id_limit)
        t->id_limit = id + 1;
    return BL_OK;
}

/* Puts ent in id order by walking the pages (O(n + 2^23) at worst), and
 * renumbers the slots (invariants 1 and 2). */
static bl_err sort_entries(bl_methodids *t)
{
    bl_mid_entry *ne = malloc((size_t)t->n * sizeof *ne);
    if (!ne)
        return BL_ENOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < N_PAGES; i++) {
        uint32_t *pg = t->page[i];
        if (!pg)
            continue;
        for (uint32_t j = 0; j < PAGE_SIZE; j++)
            if (pg[j]) {
                ne[k] = t->ent[pg[j] - 1];
                pg[j] = ++k;
            }
    }
    assert(k == t->n);
    free(t->ent);
    t->ent = ne;
    t->cap = t->n;
    return BL_OK;
}

/* ---- lines ------------------------------------------------------------ */

/* Next whitespace-separated word of [*pp, e): sets *ws, *we; 0 at the end. */
static int next_word(const char **pp, const char *e, const char **ws, const char **we)
{
    const char *p = *pp;
    while (p < e && is_ws(*p))
        p++;
    if (p >= e)
        return 0;
    *ws = p;
    while (p < e && !is_ws(*p))
        p++;
    *we = p;
    *pp = p;
    return 1;
}

static int word_is(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) == n && !memcmp(s, lit, n);
}

/* A header key: one or more of a-z 0-9 _ - */
static int key_ok(const char *p, const char *e)
{
    if (p >= e)
        return 0;
    for (; p < e; p++)
        if (!((*p >= 'a' && *p <= 'z') || is_digit(*p) || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/*
 * A comment line ([p, e) starts with '#'). Plain comments are ignored; one
 * whose first two words are "beatline method-ids" is the header and is
 * checked in full before anything in it is applied.
 */
static bl_err comment_line(parser *ps, const char *p, const char *e, const char **why)
{
    const char *ws, *we;
    p++;
    if (!next_word(&p, e, &ws, &we) || !word_is(ws, we, "beatline"))
        return BL_OK;
    if (!next_word(&p, e, &ws, &we) || !word_is(ws, we, "method-ids"))
        return BL_OK;
    int first = !ps->seen_header;
    ps->seen_header = 1;
    if (!first) {
        *why = "a second header line";
        return BL_EFORMAT;
    }
    if (ps->seen_record) {
        *why = "header line after the first record";
        return BL_EFORMAT;
    }
    if (!next_word(&p, e, &ws, &we) || *ws != 'v' || we - ws < 2) {
        *why = "header without a version word (v1)";
        return BL_EFORMAT;
    }
    for (const char *q = ws + 1; q < we; q++)
        if (!is_digit(*q)) {
            *why = "header without a version word (v1)";
            return BL_EFORMAT;
        }
    if (!word_is(ws, we, "v1")) {
        int n = (int)(we - ws);
        snprintf(ps->msg, sizeof ps->msg, "unsupported method-ID file version %.*s (this reader knows v1)",
                 n > 20 ? 20 : n, ws);
        *why = ps->msg;
        return BL_EFORMAT;
    }
    int names = -1; /* -1 not given, 0 original, 1 obfuscated */
    char bid[37] = "";
    while (next_word(&p, e, &ws, &we)) {
        const char *eq = memchr(ws, '=', (size_t)(we - ws));
        if (!eq || !key_ok(ws, eq) || eq + 1 == we) {
            *why = "header word is not key=value";
            return BL_EFORMAT;
        }
        if (word_is(ws, eq, "build-id")) {
            if (bid[0]) {
                *why = "header gives build-id= twice";
                return BL_EFORMAT;
            }
            if (bl_build_id_parse(eq + 1, (size_t)(we - eq - 1), bid) != 0) {
                *why = "header build-id= is not a UUID (8-4-4-4-12 hex digits)";
                return BL_EFORMAT;
            }
            continue;
        }
        if (!word_is(ws, eq, "names"))
            continue; /* unknown keys are ignored */
        if (names != -1) {
            *why = "header gives names= twice";
            return BL_EFORMAT;
        }
        if (word_is(eq + 1, we, "original")) {
            names = 0;
        } else if (word_is(eq + 1, we, "obfuscated")) {
            names = 1;
        } else {
            *why = "header names= is neither original nor obfuscated";
            return BL_EFORMAT;
        }
    }
    ps->t->obfuscated = names == 1;
    memcpy(ps->t->build_id, bid, sizeof bid);
    return BL_OK;
}

/*
 * A record line: [p, e) is trimmed and non-empty. Class, name and descriptor
 * are written to the arena as they are checked; ps->w only moves past them
 * once the whole record is accepted.
 */
static bl_err record_line(parser *ps, const char *p, const char *e, const char **why)
{
    ps->seen_record = 1;
    uint32_t id, access;
    int r = parse_dec(&p, e, BL_MID_MAX_ID, &id);
    if (r <= 0) {
        *why = r ? "methodId above 8388607" : "line does not start with a decimal methodId";
        return BL_EFORMAT;
    }
    if (p >= e || *p++ != ',') {
        *why = "expected ',' after the methodId";
        return BL_EFORMAT;
    }
    r = parse_dec(&p, e, MAX_ACCESS, &access);
    if (r <= 0) {
        *why = r ? "access flags above 65535" : "expected decimal access flags after the methodId";
        return BL_EFORMAT;
    }
    if (p >= e || *p++ != ',') {
        *why = "expected ',' after the access flags";
        return BL_EFORMAT;
    }
    if (p >= e || is_ws(*p)) {
        *why = "empty class name";
        return BL_EFORMAT;
    }
    char *w = ps->w;
    const char *cls = w, *name, *desc;
    if (!(p = copy_class(p, e, &w, '.', 0, why)))
        return BL_EFORMAT;
    *w++ = '\0';
    while (p < e && is_ws(*p))
        p++;
    if (p >= e) {
        *why = "no method name after the class";
        return BL_EFORMAT;
    }
    name = w;
    if (!(p = copy_method(p, e, &w, why)))
        return BL_EFORMAT;
    *w++ = '\0';
    while (p < e && is_ws(*p))
        p++;
    desc = w;
    if (p < e) {
        if (!(p = copy_descriptor(p, e, access, &w, why)))
            return BL_EFORMAT;
        if (p < e) {
            *why = "unexpected text after the descriptor";
            return BL_EFORMAT;
        }
    } else if (!(access & ACC_NATIVE)) {
        *why = "no descriptor (only native methods may omit it)";
        return BL_EFORMAT;
    }
    *w++ = '\0';
    uint32_t *slot = slot_of(ps->t, id);
    if (slot && *slot) {
        snprintf(ps->msg, sizeof ps->msg, "duplicate methodId %u (the first definition is kept)",
                 (unsigned)id);
        *why = ps->msg;
        return BL_EFORMAT;
    }
    bl_err err = add_entry(ps, id, access, cls, name, desc);
    if (!err)
        ps->w = w;
    return err;
}

static bl_err one_line(parser *ps, const char *p, const char *e, const char **why)
{
    if (e > p && e[-1] == '\r')
        e--;
    if ((size_t)(e - p) > MAX_LINE) {
        *why = "line longer than 65535 bytes";
        return BL_EFORMAT;
    }
    while (p < e && is_ws(*p))
        p++;
    while (e > p && is_ws(e[-1]))
        e--;
    if (p == e)
        return BL_OK;
    if (*p == '#')
        return comment_line(ps, p, e, why);
    return record_line(ps, p, e, why);
}

/* ---- API -------------------------------------------------------------- */

bl_err bl_methodids_parse(const char *data, size_t len, int strict, bl_mid_diag_fn diag,
                          void *diag_ctx, bl_methodids **out, uint64_t *bad_line)
{
    assert(out && (data || len == 0));
    *out = NULL;
    if (bad_line)
        *bad_line = 0;
    bl_err err = BL_ENOMEM;
    parser ps = { 0 };
    ps.sorted = 1;
    bl_methodids *t = calloc(1, sizeof *t);
    if (!t)
        return BL_ENOMEM;
    ps.t = t;
    /* invariant 3: the strings of all records fit in len + 1 bytes */
    if (!(t->arena = malloc(len + 1)))
        goto out;
    ps.w = t->arena;
    if (len) {
        const char *p = data, *end = data + len;
        if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
            p += 3;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *e = nl ? nl : end;
            const char *why = NULL;
            ps.line++;
            err = one_line(&ps, p, e, &why);
            if (err == BL_EFORMAT) {
                t->malformed++;
                if (diag)
                    diag(diag_ctx, ps.line, why);
                if (strict) {
                    if (bad_line)
                        *bad_line = ps.line;
                    goto out;
                }
            } else if (err) {
                goto out;
            }
            p = nl ? nl + 1 : end;
        }
    }
    assert((size_t)(ps.w - t->arena) <= len + 1);
    if (!ps.sorted && (err = sort_entries(t)))
        goto out;
    *out = t;
    return BL_OK;
out:
    bl_methodids_free(t);
    return err;
}

void bl_methodids_free(bl_methodids *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < N_PAGES; i++)
        free(t->page[i]);
    free(t->ent);
    free(t->arena);
    free(t);
}

const char *bl_methodids_build_id(const bl_methodids *t)
{
    return t->build_id[0] ? t->build_id : NULL;
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int bl_build_id_parse(const char *s, size_t n, char out[37])
{
    if (n != 36)
        return -1;
    for (size_t i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : hex_val(s[i]) < 0)
            return -1;
        out[i] = dash ? '-' : "0123456789abcdef"[hex_val(s[i])];
    }
    out[36] = '\0';
    return 0;
}

void bl_build_short_id(const char *build_id, char out[BL_BUILD_SHORT_LEN + 1])
{
    size_t k = 0;
    for (size_t i = 0; build_id[i] && k < BL_BUILD_SHORT_LEN; i++)
        if (build_id[i] != '-')
            out[k++] = build_id[i];
    out[k] = '\0';
}

int bl_build_name_conflicts(const char *build, const char *build_id)
{
    size_t n = strlen(build);
    if (n < BL_BUILD_SHORT_LEN + 1 || build[n - BL_BUILD_SHORT_LEN - 1] != '+')
        return 0;
    const char *suf = build + n - BL_BUILD_SHORT_LEN;
    for (size_t i = 0; i < BL_BUILD_SHORT_LEN; i++)
        if (hex_val(suf[i]) < 0)
            return 0; /* not a short id: not checked */
    char sh[BL_BUILD_SHORT_LEN + 1];
    bl_build_short_id(build_id, sh);
    for (size_t i = 0; i < BL_BUILD_SHORT_LEN; i++)
        if (hex_val(suf[i]) != hex_val(sh[i]))
            return 1;
    return 0;
}

int bl_methodids_obfuscated(const bl_methodids *t)
{
    assert(t);
    return t->obfuscated;
}

const bl_mid_entry *bl_methodids_get(const bl_methodids *t, uint32_t id)
{
    assert(t);
    if (id > BL_MID_MAX_ID)
        return NULL;
    const uint32_t *slot = slot_of(t, id);
    return slot && *slot ? &t->ent[*slot - 1] : NULL;
}

uint32_t bl_methodids_count(const bl_methodids *t)
{
    assert(t);
    return t->n;
}

uint32_t bl_methodids_id_limit(const bl_methodids *t)
{
    assert(t);
    return t->id_limit;
}

const bl_mid_entry *bl_methodids_at(const bl_methodids *t, uint32_t i)
{
    assert(t);
    return i < t->n ? &t->ent[i] : NULL;
}

uint64_t bl_methodids_malformed(const bl_methodids *t)
{
    assert(t);
    return t->malformed;
}
