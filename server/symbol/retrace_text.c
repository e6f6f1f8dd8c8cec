/*
 * retrace_text.c — the retracer's text side (rules in retrace.h): reads a
 * line as a frame or an exception line, has the frame retraced
 * (bl_rt_retrace_frame, retrace.c) and prints the alternatives as R8's
 * command line does; scans a trace for the names it holds; retraces the
 * class names of a free text.
 */
#include "symbol/retrace_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Text                                                                      */

static int is_cls_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c == '.' || c == '-' || (unsigned char)c >= 0x80;
}

static int starts(const char *p, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

static bl_err put_span(bl_buf *o, const char *p, size_t n)
{
    return bl_buf_append(o, p, n);
}

/* Prints one frame line: head[0..head_n) is the input line up to the class
 * (prefix, "at", blanks, loader), kept as it was; an alternative gets
 * "<OR> " inserted at or_at (R8: before the first "at " of the line). */
static bl_err print_frame(bl_retracer *rt, bl_buf *o, const char *head, size_t head_n,
                          size_t or_at, int alt, const bl_rframe *f, const char *loc,
                          size_t loc_n, int native, const char *rest, size_t rest_n)
{
    bl_err err;
    if (!rt->o.verbose || !f->m) {
        /* the common case in one piece: its length first, one reserve
         * (the same cap check as the appends below), then the copies */
        char num[24];
        size_t num_n = 0;
        int loc_kept = native || !f->file;
        if (!loc_kept && f->line >= 0) {
            uint64_t v = (uint64_t)f->line;
            char *q = num + sizeof num;
            do {
                *--q = (char)('0' + v % 10);
                v /= 10;
            } while (v);
            num_n = (size_t)(num + sizeof num - q);
            memmove(num, q, num_n);
        }
        size_t need = head_n + (alt ? 5 : 0) + f->cls_n + 1 + f->method_n + 1 +
                      (loc_kept ? loc_n : f->file_n + (num_n ? 1 + num_n : 0)) + 1 + rest_n + 1;
        if ((err = bl_buf_reserve(o, need)))
            return err;
        char *w = o->data + o->len;
#define PUT(src, n)                                                                        \
    do {                                                                                   \
        memcpy(w, (src), (n));                                                             \
        w += (n);                                                                          \
    } while (0)
        if (!alt) {
            PUT(head, head_n);
        } else {
            PUT(head, or_at);
            PUT("<OR> ", 5);
            PUT(head + or_at, head_n - or_at);
        }
        PUT(f->cls, f->cls_n);
        *w++ = '.';
        PUT(f->method, f->method_n);
        *w++ = '(';
        if (loc_kept) {
            PUT(loc, loc_n);
        } else {
            PUT(f->file, f->file_n);
            if (num_n) {
                *w++ = ':';
                PUT(num, num_n);
            }
        }
        *w++ = ')';
        PUT(rest, rest_n);
        *w++ = '\n';
#undef PUT
        o->len += need;
        o->data[o->len] = '\0';
        return BL_OK;
    }
    if (!alt) {
        if ((err = put_span(o, head, head_n)))
            return err;
    } else if ((err = put_span(o, head, or_at)) || (err = bl_buf_puts(o, "<OR> ")) ||
               (err = put_span(o, head + or_at, head_n - or_at))) {
        return err;
    }
    if ((err = put_span(o, f->cls, f->cls_n)) || (err = bl_buf_putc(o, '.')))
        return err;
    if (rt->o.verbose && f->m) {
        const bl_mapindex *mi = rt->mi;
        if ((err = bl_buf_puts(o, bl_mapindex_str(mi, f->m->ret))) ||
            (err = bl_buf_putc(o, ' ')) || (err = put_span(o, f->method, f->method_n)) ||
            (err = bl_buf_putc(o, '(')) ||
            (err = bl_buf_puts(o, bl_mapindex_str(mi, f->m->params))) ||
            (err = bl_buf_putc(o, ')')))
            return err;
    } else if ((err = put_span(o, f->method, f->method_n))) {
        return err;
    }
    if ((err = bl_buf_putc(o, '(')))
        return err;
    if (native || !f->file) {
        if ((err = put_span(o, loc, loc_n)))
            return err;
    } else {
        if ((err = put_span(o, f->file, f->file_n)))
            return err;
        if (f->line >= 0 && ((err = bl_buf_putc(o, ':')) ||
                             (err = bl_buf_put_u64(o, (uint64_t)f->line))))
            return err;
    }
    if ((err = bl_buf_putc(o, ')')) || (err = put_span(o, rest, rest_n)) ||
        (err = bl_buf_putc(o, '\n')))
        return err;
    return BL_OK;
}

static int is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Reads "at [loader/]class.method(...)" starting exactly at p (p points at
 * the 'a' of "at"): sets the outputs as frame_head does. 0 when the text
 * there is not a frame. */
static int frame_at(const char *p, const char *e, const char **pfx, const char **name,
                    const char **dot, const char **open, const char **close)
{
    p += 2;
    if (p >= e || (*p != ' ' && *p != '\t'))
        return 0;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    const char *op = memchr(p, '(', (size_t)(e - p));
    if (!op)
        return 0;
    const char *cl = NULL;
    for (const char *q = e; q > op; q--)
        if (q[-1] == ')') {
            cl = q - 1;
            break;
        }
    if (!cl)
        return 0;
    /* one pass: the name starts after the last '/' (a class loader's
     * name before it); its last '.' splits class and method; it holds no
     * blank */
    enum { B_SLASH = 1, B_DOT = 2, B_WS = 4 };
    static const unsigned char btab[256] = { ['/'] = B_SLASH, ['.'] = B_DOT, [' '] = B_WS,
                                             ['\t'] = B_WS };
    const char *nm = p, *d = NULL;
    int ws = 0;
    for (const char *q = p; q < op; q++) {
        unsigned k = btab[(unsigned char)*q];
        if (!k)
            continue;
        if (k == B_SLASH) {
            nm = q + 1;
            d = NULL;
            ws = 0;
        } else if (k == B_DOT) {
            d = q;
        } else {
            ws = 1;
        }
    }
    if (ws || !d || d == nm || d + 1 == op)
        return 0;
    *pfx = p;
    *name = nm;
    *dot = d;
    *open = op;
    *close = cl;
    return 1;
}

/* After a frame with a prefix of other than blanks, R8 takes only blanks
 * or " ~[...]" (logback's packaging data) to the end of the line: so a
 * message such as "Exception: failed at a.b(c) twice" is not a frame.
 * After "[blanks]at" anything may follow, as before. */
static int tail_ok(const char *line, const char *at, const char *t, const char *e)
{
    const char *p = line;
    while (p < at && (*p == ' ' || *p == '\t'))
        p++;
    if (p == at)
        return 1;
    while (t < e && (*t == ' ' || *t == '\t'))
        t++;
    return t == e || (e - t >= 2 && t[0] == '~' && t[1] == '[' && e[-1] == ']');
}

/* Reads a frame line "PREFIX at [loader/]class.method(LOCATION)REST" (R8:
 * any text may come before "at" — logcat's "W System.err:    at ...",
 * timestamps — as long as "at" starts a word and blanks follow it; the
 * first such "at" after which a frame reads wins). Sets *ws_end (end of the
 * prefix: the 'a' of "at"), *pfx (start of "[loader/]", after the blanks
 * that follow "at"), *name (class start, after any loader), *dot (the last
 * '.' before the '('), *open and *close (the last ')').
 * Returns 0 when the line is not a frame. Shared by the retracer and the
 * trace-name scan so both read a frame the same way. */
static int frame_head(const char *line, const char *e, const char **ws_end, const char **pfx,
                      const char **name, const char **dot, const char **open,
                      const char **close)
{
    for (const char *p = line; p + 3 <= e;) {
        const char *a = memchr(p, 'a', (size_t)(e - p));
        if (!a || a + 3 > e)
            return 0;
        if (a[1] == 't' && (a == line || !is_word_char(a[-1])) &&
            frame_at(a, e, pfx, name, dot, open, close) && tail_ok(line, a, *close + 1, e)) {
            *ws_end = a;
            return 1;
        }
        p = a + 1;
    }
    return 0;
}

/* The line number of a frame whose location is between `open` and `close`
 * (the parentheses): the digits after the last ':', -1 when there are none
 * or anything else follows. Shared by the retracer and the name scan. */
static int64_t frame_line(const char *open, const char *close)
{
    const char *colon = NULL;
    for (const char *q = close; q > open + 1; q--)
        if (q[-1] == ':') {
            colon = q - 1;
            break;
        }
    if (!colon || colon + 1 >= close)
        return -1;
    int64_t v = 0;
    const char *q = colon + 1;
    while (q < close && *q >= '0' && *q <= '9' && v < (1ll << 40))
        v = v * 10 + (*q++ - '0');
    return q == close ? v : -1;
}

/* The extension of the frame's file name (R8: what follows the last '.'
 * of the location, without ":LINE"): none ("SourceFile", "Unknown
 * Source"), "kt", or another. */
static int frame_ext(const char *loc, size_t loc_n, int64_t lineno)
{
    size_t n = loc_n;
    if (lineno >= 0) { /* drop ":LINE" (frame_line found digits after a ':') */
        while (n > 0 && loc[n - 1] != ':')
            n--;
        if (n > 0)
            n--;
    }
    /* R8's and ProGuard's own location (nearly every frame) at once: it
     * holds none of the three */
    if (n == 10 && !memcmp(loc, "SourceFile", 10))
        return EXT_NONE;
    /* the last '.' after any '/' or '\\': the last of the three, found
     * from the end, when it is a '.' */
    const char *dot = NULL;
    for (size_t i = n; i > 0; i--)
        if (loc[i - 1] == '.' || loc[i - 1] == '/' || loc[i - 1] == '\\') {
            if (loc[i - 1] == '.')
                dot = loc + i - 1;
            break;
        }
    if (!dot)
        return EXT_NONE;
    size_t en = (size_t)(loc + n - dot - 1);
    if (en == 2 && dot[1] == 'k' && dot[2] == 't')
        return EXT_KT;
    return en ? EXT_OTHER : EXT_NONE;
}

/* Retraces and prints the frame line read by frame_head (ws_end, name,
 * dot, open, close as it sets them; lineno = frame_line(open, close));
 * pre: its name resolved, or NULL. */
static bl_err frame_out(bl_retracer *rt, const char *line, size_t len, const char *ws_end,
                        const char *name, const char *dot, const char *open, const char *close,
                        int64_t lineno, const lk_ent *pre, bl_buf *o)
{
    bl_err err_v = BL_OK, *err = &err_v;
    const char *e = line + len;
    /* R8 puts "<OR> " before the first "at " of the line */
    size_t or_at = (size_t)(ws_end - line);
    for (const char *q = line; q + 3 <= ws_end + 3; q++)
        if (q[0] == 'a' && q[1] == 't' && q[2] == ' ') {
            or_at = (size_t)(q - line);
            break;
        }
    const char *loc = open + 1;
    size_t loc_n = (size_t)(close - loc);
    int native = loc_n == 13 && memcmp(loc, "Native Method", 13) == 0;
    const bl_rframe *fr;
    const uint32_t *alt;
    uint32_t nalt;
    int known;
    *err = bl_rt_retrace_frame(rt, name, (size_t)(dot - name), dot + 1,
                               (size_t)(open - dot - 1), lineno, frame_ext(loc, loc_n, lineno),
                               pre, &fr, &alt, &nalt, &known);
    if (*err)
        return *err;
    if (!known) {
        *err = bl_buf_append(o, line, len);
        if (!*err)
            *err = bl_buf_putc(o, '\n');
        return *err;
    }
    /* R8's command line: by inline depth — depth 0 of every alternative,
     * then depth 1, ... — a line equal to one printed at the same depth
     * left out; every line of an alternative but the first gets "<OR> " */
    uint32_t depth = 0;
    for (uint32_t a = 0; a < nalt; a++)
        if (alt[a + 1] - alt[a] > depth)
            depth = alt[a + 1] - alt[a];
    for (uint32_t d = 0; d < depth && !*err; d++)
        for (uint32_t a = 0; a < nalt && !*err; a++) {
            if (alt[a] + d >= alt[a + 1])
                continue;
            const bl_rframe *f = &fr[alt[a] + d];
            int seen = 0;
            for (uint32_t k = 0; k < a && !seen; k++)
                seen = alt[k] + d < alt[k + 1] &&
                       same_frame(rt->mi, &fr[alt[k] + d], f, rt->o.verbose);
            if (!seen)
                *err = print_frame(rt, o, line, (size_t)(name - line), or_at, a > 0, f, loc,
                                   loc_n, native, close + 1, (size_t)(e - close - 1));
        }
    return *err;
}

/* Tries the line as a frame. Returns 1 when handled. */
static int try_frame(bl_retracer *rt, const char *line, size_t len, bl_buf *o, bl_err *err)
{
    const char *e = line + len, *ws_end, *pfx, *name, *dot, *open, *close;
    if (!frame_head(line, e, &ws_end, &pfx, &name, &dot, &open, &close))
        return 0;
    *err = frame_out(rt, line, len, ws_end, name, dot, open, close, frame_line(open, close),
                     NULL, o);
    return 1;
}

bl_err bl_retracer_frame_line(bl_retracer *rt, const char *line, size_t len,
                              const bl_frame_pos *fp, uint32_t name_ix, bl_buf *out)
{
    size_t n = len;
    if (n && line[n - 1] == '\r')
        n--;
    /* positions that cannot be frame_head's: read the line as usual */
    if (!fp || !(fp->at + 2 < fp->name && fp->name < fp->dot && fp->dot + 1 < fp->open &&
                 fp->open < fp->close && fp->close < n))
        return bl_retracer_line(rt, line, len, out);
    const char *name = line + fp->name, *dot = line + fp->dot, *open = line + fp->open;
    const lk_ent *pre = NULL;
    if (rt->lk && name_ix < rt->lk->n) {
        /* the entry is shared: read once READY; filled by the first
         * retracer that meets the name (the others, meanwhile, look it up
         * themselves) */
        lk_ent *k = &rt->lk->v[name_ix];
        size_t cn = (size_t)(dot - name), mn = (size_t)(open - dot - 1);
        uint32_t st = atomic_load_explicit(&k->state, memory_order_acquire);
        uint32_t empty = LK_EMPTY;
        if (st == LK_READY) {
            if (lk_is(k, name, cn, dot + 1, mn))
                pre = k; /* else: not this name's entry, looked up by name */
        } else if (st == LK_EMPTY && cn <= UINT32_MAX / 4 && mn <= UINT32_MAX / 4 &&
                   atomic_compare_exchange_strong_explicit(&k->state, &empty, LK_BUSY,
                                                           memory_order_acq_rel,
                                                           memory_order_acquire)) {
            bl_rt_lk_fill(rt->mi, k, name, cn, dot + 1, mn);
            rt->filled++;
            atomic_store_explicit(&k->state, LK_READY, memory_order_release);
            pre = k;
        }
    }
    return frame_out(rt, line, n, line + fp->at, name, dot, open, line + fp->close, fp->line,
                     pre, out);
}

void bl_retracer_prefetch(const bl_retracer *rt, uint32_t far_ix, uint32_t near_ix,
                          uint32_t next_ix)
{
    if (rt->lk && next_ix < rt->lk->n) {
        const lk_ent *k = &rt->lk->v[next_ix];
        if (atomic_load_explicit(&k->state, memory_order_acquire) == LK_READY) {
            if (k->b && k->n) {
                __builtin_prefetch(bl_mapindex_str(rt->mi, k->b[0].orig_name) - 4);
                __builtin_prefetch(bl_mapindex_str(rt->mi, k->b[0].orig_class) - 4);
            }
            if (k->c)
                __builtin_prefetch(bl_mapindex_str(rt->mi, k->c->source_file) - 4);
        }
    }
    if (!rt->lk)
        return;
    if (far_ix < rt->lk->n)
        __builtin_prefetch(&rt->lk->v[far_ix]);
    if (near_ix < rt->lk->n) {
        const lk_ent *k = &rt->lk->v[near_ix];
        if (atomic_load_explicit(&k->state, memory_order_acquire) == LK_READY) {
            if (k->b)
                __builtin_prefetch(k->b);
            if (k->c)
                __builtin_prefetch(k->c);
        }
    }
}

static int plain_exception(const char *line, size_t len, const char **c, size_t *cn,
                           const char **rest);

/* A class name token at s (before e): Java identifier segments joined by
 * '.', as R8's %c (an identifier does not start with a digit, '-' or '.';
 * no empty segment). Returns its end, or s when there is none. */
static const char *class_token_end(const char *s, const char *e)
{
    const char *p = s;
    while (p < e && is_cls_char(*p)) {
        if ((p == s || p[-1] == '.') && ((*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
            return s;
        p++;
    }
    return p > s && p[-1] == '.' ? s : p;
}

/* Java's \s: ' ', \t, \f, \v, \r (\n never reaches a line). Not strchr on a
 * literal set: that also matches its terminator, and a line may hold NULs. */
static int is_re_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r';
}

/* Text before an exception line, as R8's default expression reads it
 * (StackTraceRegularExpressionParser: "(?:.*)?[:\"]\s+%c(?::.*)?" matched
 * against the whole line, ".*" greedy): the LAST ':' or '"' followed by
 * whitespace after which a class token runs to the end of the line or to a
 * ':'. Logcat's "E AndroidRuntime: a.b.C: msg", "12-01 10:00:00.123 ... E
 * AndroidRuntime: Caused by: a.b.C". Like R8, a one-word message is then
 * taken for the class ("X: a.b.C: boom" reads "boom"). Sets *c / *cn / *rest
 * as exception_token; returns 0 when no split fits. */
static int prefixed_exception(const char *line, const char *e, const char **c, size_t *cn,
                              const char **rest)
{
    for (const char *q = e; q > line;) {
        q--;
        if (*q != ':' && *q != '"')
            continue;
        const char *s = q + 1;
        if (s >= e || !is_re_blank(*s))
            continue;
        while (s < e && is_re_blank(*s))
            s++;
        const char *t = class_token_end(s, e);
        if (t == s || (t < e && *t != ':'))
            continue;
        *c = s;
        *cn = (size_t)(t - s);
        *rest = t;
        return 1;
    }
    return 0;
}

/* Reads an exception line ("[Caused by: |Suppressed: ]cls[: msg]", "Exception
 * in thread "t" cls...", "[CIRCULAR REFERENCE: cls]", or any of these after
 * other text, see prefixed_exception): sets *c / *cn (the class) and *rest
 * (what follows it). Returns 0 when the line cannot be one. Shared by the
 * retracer and the name scan. */
static int exception_token(const char *line, size_t len, const char **c, size_t *cn,
                           const char **rest)
{
    if (plain_exception(line, len, c, cn, rest) && class_token_end(*c, *c + *cn) == *c + *cn)
        return 1;
    return prefixed_exception(line, line + len, c, cn, rest);
}

/* exception_token's lines without other text before them. */
static int plain_exception(const char *line, size_t len, const char **c, size_t *cn,
                           const char **rest)
{
    const char *p = line, *e = line + len;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    if (starts(p, e, "Caused by: "))
        p += 11;
    else if (starts(p, e, "Suppressed: "))
        p += 12;
    int circular = starts(p, e, "[CIRCULAR REFERENCE: ");
    if (circular)
        p += 21;
    else if (starts(p, e, "Exception in thread \"")) {
        const char *q = memchr(p + 21, '"', (size_t)(e - p - 21));
        if (!q || q + 1 >= e || q[1] != ' ')
            return 0;
        p = q + 2;
    }
    const char *s = p;
    while (p < e && is_cls_char(*p))
        p++;
    if (p == s || (p < e && *p != ':' && !(circular && *p == ']')) || s[0] == '.' ||
        p[-1] == '.')
        return 0;
    *c = s;
    *cn = (size_t)(p - s);
    *rest = p;
    return 1;
}

/* An exception line (see exception_token) whose class the mapping knows,
 * or any with a package: sets *k to its class record (NULL when unknown). */
static int exception_head(const bl_mapindex *mi, const char *line, size_t len, const char **c,
                          size_t *cn, const char **rest, const bl_mi_class **k)
{
    if (!exception_token(line, len, c, cn, rest))
        return 0;
    *k = bl_mapindex_class_by_obf(mi, *c, *cn);
    /* a root-package name ("kj: boom") counts only when the mapping knows it */
    return *k || memchr(*c, '.', *cn) != NULL;
}

/* Exception line: retrace the class, remember it for rewriteFrame. Returns
 * 1 when handled (then *err says whether the output could be written). */
static int try_exception(bl_retracer *rt, const char *line, size_t len, bl_buf *o, bl_err *err)
{
    const char *c, *p, *e = line + len;
    size_t cn;
    const bl_mi_class *k;
    if (!exception_head(rt->mi, line, len, &c, &cn, &p, &k))
        return 0;
    rt->after_exc = 1;
    rt->carry = -1;
    size_t keep = cn < sizeof rt->exc_obf ? cn : sizeof rt->exc_obf - 1;
    memcpy(rt->exc_obf, c, keep);
    rt->exc_obf[keep] = '\0';
    if (k) {
        const char *orig = bl_mapindex_str(rt->mi, k->orig);
        size_t on = bl_mapindex_strlen(rt->mi, k->orig);
        size_t ok = on < sizeof rt->exc_orig ? on : sizeof rt->exc_orig - 1;
        memcpy(rt->exc_orig, orig, ok);
        rt->exc_orig[ok] = '\0';
        if ((*err = bl_buf_append(o, line, (size_t)(c - line))) ||
            (*err = bl_buf_append(o, orig, on)) ||
            (*err = bl_buf_append(o, p, (size_t)(e - p))) || (*err = bl_buf_putc(o, '\n')))
            return 1;
    } else {
        memcpy(rt->exc_orig, rt->exc_obf, keep + 1);
        if (!(*err = bl_buf_append(o, line, len)))
            *err = bl_buf_putc(o, '\n');
    }
    return 1;
}

int bl_retrace_starts_block(const bl_mapindex *mi, const char *line, size_t len)
{
    if (len && line[len - 1] == '\r')
        len--;
    const char *e = line + len, *ws_end, *pfx, *name, *dot, *open, *close, *c, *rest;
    size_t cn;
    const bl_mi_class *k;
    if (frame_head(line, e, &ws_end, &pfx, &name, &dot, &open, &close))
        return 0;
    return exception_head(mi, line, len, &c, &cn, &rest, &k);
}

bl_err bl_retracer_line(bl_retracer *rt, const char *line, size_t len, bl_buf *out)
{
    bl_err err = BL_OK;
    if (len && line[len - 1] == '\r')
        len--;
    if (try_frame(rt, line, len, out, &err))
        return err;
    if (try_exception(rt, line, len, out, &err))
        return err;
    if ((err = bl_buf_append(out, line, len)))
        return err;
    return bl_buf_putc(out, '\n');
}

void bl_retrace_trace_frames(const char *text, size_t len, bl_retrace_name_fn fn,
                             bl_retrace_pos_fn pos, void *ctx)
{
    const char *p = text, *e = text + len;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        if (le > p && le[-1] == '\r') /* as bl_retracer_line */
            le--;
        const char *ws_end, *pfx, *name, *dot, *open, *close;
        if (frame_head(p, le, &ws_end, &pfx, &name, &dot, &open, &close)) {
            int64_t ln = frame_line(open, close);
            if (pos && (size_t)(le - p) < UINT32_MAX) {
                bl_frame_pos fp = { (uint32_t)(ws_end - p), (uint32_t)(name - p),
                                    (uint32_t)(dot - p),    (uint32_t)(open - p),
                                    (uint32_t)(close - p), ln };
                pos(ctx, p, &fp);
            }
            fn(ctx, name, (size_t)(dot - name), dot + 1, (size_t)(open - dot - 1), ln);
        } else {
            const char *c, *rest;
            size_t cn;
            if (exception_token(p, (size_t)(le - p), &c, &cn, &rest))
                fn(ctx, c, cn, NULL, 0, -1);
        }
        p = nl ? nl + 1 : e;
    }
}

void bl_retrace_trace_names(const char *text, size_t len, bl_retrace_name_fn fn, void *ctx)
{
    bl_retrace_trace_frames(text, len, fn, NULL, ctx);
}

bl_err bl_retrace_text(const bl_mapindex *mi, const bl_retrace_opts *opts, const char *text,
                       size_t len, bl_buf *out)
{
    bl_retracer *rt;
    bl_err err = bl_retracer_new(mi, opts, &rt);
    if (err)
        return err;
    const char *p = text, *e = text + len;
    while (p < e && !err) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        size_t before = out->len;
        err = bl_retracer_line(rt, p, (size_t)(le - p), out);
        /* keep a missing final newline missing (when the last line printed
         * anything: otherwise the line before keeps its own newline) */
        if (!err && !nl && out->len > before && out->data[out->len - 1] == '\n')
            out->data[--out->len] = '\0';
        p = nl ? nl + 1 : e;
    }
    bl_retracer_free(rt);
    return err;
}

/* ---- class names in a free text (block targets) ------------------------ */

static int class_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c == '.' || c >= 0x80;
}

/* Outer classes tried per run, from its last '$' back: bounds the lookups
 * of a run made of many '$' (each lookup hashes the prefix). */
#define CLASS_RUN_CUTS 8

/* Appends the original name of the class run t[0..n), or the run itself. */
static bl_err put_class_run(const bl_mapindex *mi, const char *t, size_t n, bl_buf *out)
{
    const bl_mi_class *c = mi ? bl_mapindex_class_by_obf(mi, t, n) : NULL;
    int cuts = 0;
    for (size_t cut = n; !c && mi && cut-- > 1 && cuts < CLASS_RUN_CUTS;) {
        if (t[cut] != '$')
            continue;
        cuts++;
        const bl_mi_class *outer = bl_mapindex_class_by_obf(mi, t, cut);
        if (outer) {
            const char *o = bl_mapindex_str(mi, outer->orig);
            bl_err e = bl_buf_append(out, o, bl_mapindex_strlen(mi, outer->orig));
            return e ? e : bl_buf_append(out, t + cut, n - cut);
        }
    }
    if (c)
        return bl_buf_append(out, bl_mapindex_str(mi, c->orig), bl_mapindex_strlen(mi, c->orig));
    return bl_buf_append(out, t, n);
}

bl_err bl_retrace_class_names(const bl_mapindex *mi, const char *text, size_t len, bl_buf *out)
{
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        bl_err e;
        if (class_name_char((unsigned char)text[i])) {
            while (j < len && class_name_char((unsigned char)text[j]))
                j++;
            e = put_class_run(mi, text + i, j - i, out);
        } else {
            while (j < len && !class_name_char((unsigned char)text[j]))
                j++;
            e = bl_buf_append(out, text + i, j - i);
        }
        if (e)
            return e;
        i = j;
    }
    bl_err e = bl_buf_putc(out, 0);
    if (!e)
        out->len--;
    return e;
}
