/*
 * mapping.c — one-line parser for ProGuard / R8 mapping files.
 * The grammar and normalisation rules are in mapping.h.
 * Hot path: called once per mapping line; no allocation, one pass.
 */
#include "symbol/mapping.h"

#include <stdint.h>
#include <string.h>

static int is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* Byte classes for the member-line loops: one table look-up per byte
 * instead of a chain of comparisons. C_BAD: Java names and types never
 * hold these (JVMS 4.2.2 plus mapping syntax). */
enum { C_WS = 1, C_BAD = 2, C_OPEN = 4, C_DOT = 8 };
static const uint8_t ctab[256] = {
    [' '] = C_WS, ['\t'] = C_WS, [':'] = C_BAD, [')'] = C_BAD, [','] = C_BAD,
    [';'] = C_BAD, ['('] = C_OPEN, ['.'] = C_DOT,
};
#define CLASS_OF(c) ctab[(unsigned char)(c)]

/* The first byte of [p, le) whose class has a bit of mask, or le: four
 * bytes' classes at a time while none has one. */
static inline __attribute__((always_inline)) const char *scan_class(const char *p,
                                                                    const char *le,
                                                                    unsigned mask)
{
    while (le - p >= 4 &&
           !((CLASS_OF(p[0]) | CLASS_OF(p[1]) | CLASS_OF(p[2]) | CLASS_OF(p[3])) & mask))
        p += 4;
    while (p < le && !(CLASS_OF(*p) & mask))
        p++;
    return p;
}

static bl_span span(const char *p, const char *e)
{
    bl_span s = { p, (uint32_t)(e - p) };
    return s;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The value of the 1..7 digits that start the eight bytes at p (n: how
 * many; 0: p is no digit, 8: all eight are digits): all eight bytes
 * classified at once, the digits combined in three multiplications. */
static inline __attribute__((always_inline)) uint32_t digits8(const char *p, unsigned *n)
{
    uint64_t v;
    memcpy(&v, p, 8); /* the first byte in the lowest bits */
    const uint64_t hi = 0xF0F0F0F0F0F0F0F0ull, threes = 0x3030303030303030ull;
    /* a byte is a digit when its high nibble is 3 and adding 6 keeps it 3
     * (a carry out of a non-digit byte only reaches the bytes after it) */
    uint64_t nd = ((v & hi) ^ threes) | (((v + 0x0606060606060606ull) & hi) ^ threes);
    *n = nd ? (unsigned)__builtin_ctzll(nd) >> 3 : 8;
    if (*n == 0 || *n == 8)
        return 0;
    /* the digits moved to the top bytes, zeros (leading digits 0) below */
    uint64_t x = (v & 0x0F0F0F0F0F0F0F0Full) << (8 * (8 - *n));
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
    x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
    x = (x * 10000 + (x >> 32)) & 0xFFFFFFFFull;
    return (uint32_t)x;
}
#endif

/* Parses decimal digits at *pp (at least one). */
static inline __attribute__((always_inline)) int parse_uint(const char **pp, const char *e,
                                                            uint32_t *out)
{
    const char *p = *pp;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (e - p >= 8) { /* 1..7 digits: at most 9,999,999, under the cap */
        unsigned n;
        uint32_t d = digits8(p, &n);
        if (n == 0)
            return 0;
        if (n < 8) {
            *pp = p + n;
            *out = d;
            return 1;
        }
    }
#endif
    uint64_t v = 0;
    if (p >= e || (unsigned)(*p - '0') > 9)
        return 0;
    for (unsigned d; p < e && (d = (unsigned)(*p - '0')) <= 9; p++) {
        v = v * 10 + d;
        if (v > BL_MAPPING_MAX_LINE)
            return 0;
    }
    *pp = p;
    *out = (uint32_t)v;
    return 1;
}

static void normalise_range(uint32_t *a, uint32_t *b)
{
    if (*b == 0 && *a != 0) {
        *b = *a;
    } else if (*b < *a) {
        uint32_t t = *a;
        *a = *b;
        *b = t;
    }
}

/* bl_mapping_min_range, inlined where this file reads a method line. */
static inline __attribute__((always_inline)) size_t min_range(const char *p, size_t n,
                                                              uint32_t *start, uint32_t *end)
{
    const char *q = p, *e = p + n;
    uint32_t a, b;
    if (!parse_uint(&q, e, &a) || q >= e || *q != ':')
        return 0;
    q++;
    if (q < e && *q >= '0' && *q <= '9') {
        if (!parse_uint(&q, e, &b) || q >= e || *q != ':')
            return 0;
        q++;
    } else {
        b = a;
    }
    normalise_range(&a, &b);
    *start = a;
    *end = b;
    return (size_t)(q - p);
}

size_t bl_mapping_min_range(const char *p, size_t n, uint32_t *start, uint32_t *end)
{
    return min_range(p, n, start, end);
}

/* Finds " -> " in [p, e); returns a pointer to the space or NULL. */
static const char *find_arrow(const char *p, const char *e)
{
    while (p + 4 <= e) {
        const char *q = memchr(p, '-', (size_t)(e - p));
        if (!q)
            return NULL;
        if (q > p && q[-1] == ' ' && q + 2 < e && q[1] == '>' && q[2] == ' ')
            return q - 1;
        p = q + 1;
    }
    return NULL;
}

/* Nonzero when a byte of v is 0 (exact: no false positives). */
static uint64_t zero_byte(uint64_t v)
{
    return (v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull;
}

/* Whether the eight bytes at p hold a blank. */
static inline __attribute__((always_inline)) int blank_in8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return (zero_byte(v ^ 0x2020202020202020ull) | zero_byte(v ^ 0x0909090909090909ull)) != 0;
}

/* Whether s holds a blank: eight bytes at a time, the last eight (which
 * may overlap the ones before) at once; shorter spans byte by byte. */
static inline __attribute__((always_inline)) int has_space(bl_span s)
{
    uint32_t i = 0;
    if (s.n >= 8) {
        for (; i + 8 <= s.n; i += 8)
            if (blank_in8(s.p + i))
                return 1;
        return i < s.n && blank_in8(s.p + s.n - 8);
    }
    for (; i < s.n; i++)
        if (is_ws(s.p[i]))
            return 1;
    return 0;
}


static bl_err parse_comment(const char *p, const char *e, bl_mapping_line *out)
{
    p++; /* '#' */
    while (p < e && is_ws(*p))
        p++;
    if (p < e && *p == '{') {
        const char *t = e;
        while (t > p && is_ws(t[-1]))
            t--;
        out->kind = BL_ML_META;
        out->a = span(p, t);
        return BL_OK;
    }
    /* header: key made of [a-z_] then ':' */
    const char *k = p;
    while (p < e && ((*p >= 'a' && *p <= 'z') || *p == '_'))
        p++;
    if (p > k && p < e && *p == ':') {
        out->kind = BL_ML_HEADER;
        out->a = span(k, p);
        p++;
        while (p < e && is_ws(*p))
            p++;
        const char *t = e;
        while (t > p && is_ws(t[-1]))
            t--;
        out->b = span(p, t);
        return BL_OK;
    }
    out->kind = BL_ML_COMMENT;
    out->a = span(k, e);
    return BL_OK;
}

static bl_err parse_member(const char *p, const char *e, bl_mapping_line *out,
                           const char **why)
{
    const char *arrow = find_arrow(p, e);
    if (!arrow) {
        *why = "member line without ' -> '";
        return BL_EFORMAT;
    }
    const char *o = arrow + 4;
    while (o < e && is_ws(*o))
        o++;
    out->obf = span(o, e);
    if (out->obf.n == 0 || has_space(out->obf)) {
        *why = "bad obfuscated member name";
        return BL_EFORMAT;
    }
    const char *le = arrow; /* left side end */

    /* optional minified range "a:b:" */
    if (p < le && *p >= '0' && *p <= '9') {
        size_t used = min_range(p, (size_t)(le - p), &out->min_start, &out->min_end);
        if (!used) {
            *why = "bad minified line range";
            return BL_EFORMAT;
        }
        p += used;
        out->has_min = 1;
    }

    /* type */
    const char *t = p;
    p = scan_class(p, le, C_WS | C_BAD);
    if (p < le && (CLASS_OF(*p) & C_BAD)) {
        *why = "bad character in a member type";
        return BL_EFORMAT;
    }
    if (p == t || p >= le) {
        *why = "member line without a type";
        return BL_EFORMAT;
    }
    out->type = span(t, p);
    while (p < le && is_ws(*p))
        p++;

    /* name up to '(' (method) or the end (field) */
    const char *n = p, *dot = NULL; /* the name's last '.' */
    for (; (p = scan_class(p, le, C_WS | C_BAD | C_OPEN | C_DOT)) < le; p++) {
        unsigned k = CLASS_OF(*p);
        if (k & C_DOT) {
            dot = p;
            continue;
        }
        if (k & (C_WS | C_OPEN))
            break;
        *why = "bad character in a member name"; /* C_BAD */
        return BL_EFORMAT;
    }
    if (p == n) {
        *why = "member line without a name";
        return BL_EFORMAT;
    }
    const char *ne = p;
    if (p < le && *p == '(') {
        const char *ps = ++p;
        const char *pe = memchr(ps, ')', (size_t)(le - ps));
        if (!pe) {
            *why = "method line without ')'";
            return BL_EFORMAT;
        }
        out->params = span(ps, pe);
        if (has_space(out->params)) {
            /* R8's reader allows blanks around each type ("(int, int)");
             * a type itself holds none ("java.lang. String" is wrong) */
            const char *q = ps;
            while (q < pe && is_ws(*q))
                q++;
            while (q < pe) { /* blanks only, "( )", is an empty list */
                const char *ts = q;
                while (q < pe && *q != ',' && !is_ws(*q))
                    q++;
                if (q == ts) {
                    *why = "empty type in parameter list";
                    return BL_EFORMAT;
                }
                while (q < pe && is_ws(*q))
                    q++;
                if (q == pe)
                    break;
                if (*q != ',') {
                    *why = "space inside a parameter type";
                    return BL_EFORMAT;
                }
                q++;
                while (q < pe && is_ws(*q))
                    q++;
                if (q == pe) {
                    *why = "empty type in parameter list";
                    return BL_EFORMAT;
                }
            }
            out->params_blanks = 1;
        }
        p = pe + 1;
        out->kind = BL_ML_METHOD;
        if (p < le && *p == ':') {
            uint32_t a, b;
            p++;
            if (!parse_uint(&p, le, &a)) {
                *why = "bad original line";
                return BL_EFORMAT;
            }
            if (p < le && *p == ':') {
                p++;
                if (!parse_uint(&p, le, &b)) {
                    *why = "bad original line range";
                    return BL_EFORMAT;
                }
                normalise_range(&a, &b);
                out->orig_kind = BL_ORIG_RANGE;
            } else {
                b = a;
                out->orig_kind = BL_ORIG_LINE;
            }
            out->orig_start = a;
            out->orig_end = b;
        }
    } else {
        if (out->has_min) {
            *why = "field line with a line range";
            return BL_EFORMAT;
        }
        out->kind = BL_ML_FIELD;
    }
    while (p < le && is_ws(*p))
        p++;
    if (p != le) {
        *why = "unexpected text before ' -> '";
        return BL_EFORMAT;
    }
    /* split "owner.name" at the last '.' */
    if (dot) {
        if (dot == n || dot + 1 == ne) {
            *why = "bad qualified member name";
            return BL_EFORMAT;
        }
        out->owner = span(n, dot);
        out->name = span(dot + 1, ne);
    } else {
        out->name = span(n, ne);
    }
    return BL_OK;
}

size_t bl_mapping_params_compact(bl_span params, char *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = 0; i < params.n && n < cap; i++)
        if (!is_ws(params.p[i]))
            out[n++] = params.p[i];
    return n;
}

bl_err bl_mapping_parse_line(const char *line, size_t len, bl_mapping_line *out,
                             const char **why)
{
    const char *p = line, *e = line + len;
    memset(out, 0, sizeof *out);
    *why = NULL;
    if (e > p && e[-1] == '\r')
        e--;
    while (e > p && is_ws(e[-1]))
        e--;
    while (p < e && is_ws(*p))
        p++;
    if (p == e) {
        out->kind = BL_ML_BLANK;
        return BL_OK;
    }
    /* names are stored NUL-terminated: a NUL would cut one silently */
    if (memchr(p, '\0', (size_t)(e - p))) {
        *why = "NUL byte in the line (a name cannot hold NUL)";
        return BL_EFORMAT;
    }
    if (*p == '#')
        return parse_comment(p, e, out);
    if (p != line)
        return parse_member(p, e, out, why);

    /* class line */
    const char *arrow = find_arrow(p, e);
    if (!arrow || e[-1] != ':') {
        *why = "class line must be 'original -> obfuscated:'";
        return BL_EFORMAT;
    }
    const char *o = arrow + 4;
    const char *oe = e - 1;
    while (o < oe && is_ws(*o))
        o++;
    while (oe > o && is_ws(oe[-1]))
        oe--;
    out->kind = BL_ML_CLASS;
    out->a = span(p, arrow);
    out->b = span(o, oe);
    if (out->a.n == 0 || out->b.n == 0 || has_space(out->a) || has_space(out->b)) {
        *why = "bad class name";
        return BL_EFORMAT;
    }
    return BL_OK;
}
