/*
 * urlpattern.c — URL patterns: automatic segment rules and user patterns
 * (see urlpattern.h).
 */
#include "agg/urlpattern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LONG_SEGMENT 64

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static int is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_uuid(const char *s, size_t n)
{
    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return 0;
    }
    return 1;
}

/* '@' or "%40" (any case of the hex digits is the same here) */
static int has_at(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '@' || (s[i] == '%' && i + 2 < n && s[i + 1] == '4' && s[i + 2] == '0'))
            return 1;
    return 0;
}

/* base64url with optional '=' padding at the end (also "%3D") */
static int is_token(const char *s, size_t n)
{
    while (n && s[n - 1] == '=')
        n--;
    while (n >= 3 && s[n - 3] == '%' && s[n - 2] == '3' && (s[n - 1] == 'D' || s[n - 1] == 'd'))
        n -= 3;
    if (n < 16)
        return 0;
    size_t digits = 0;
    int lower = 0, upper = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (is_digit(c))
            digits++;
        else if (is_lower(c))
            lower = 1;
        else if (is_upper(c))
            upper = 1;
        else if (c != '-' && c != '_')
            return 0;
    }
    return digits && (lower || upper) && ((lower && upper) || digits >= 3);
}

const char *bl_urlpat_segment(const char *s, size_t n)
{
    if (!n)
        return NULL;
    size_t digits = 0, letters = 0, hex = 0, run = 0, best_run = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (is_digit(c)) {
            digits++;
            if (++run > best_run)
                best_run = run;
        } else {
            run = 0;
            if (is_lower(c) || is_upper(c))
                letters++;
        }
        hex += is_hex(c);
    }
    if (digits == n)
        return "{id}";
    if (is_uuid(s, n))
        return "{uuid}";
    if (n >= 16 && hex == n && digits)
        return "{hex}";
    if (has_at(s, n))
        return "{email}";
    if (n >= 6 && digits + letters == n && digits >= letters)
        return "{id}";
    if (best_run >= 5)
        return "{slug}";
    if (is_token(s, n))
        return "{token}";
    if (n > LONG_SEGMENT)
        return "{long}";
    return NULL;
}

/* A file extension ending the segment: '.' then 1..5 letters and digits
 * with at least one letter, after a non-empty stem. Its length with the
 * dot, or 0. */
static size_t extension(const char *s, size_t n)
{
    size_t i = n, letters = 0;
    while (i > 0 && n - i < 6 && (is_digit(s[i - 1]) || is_lower(s[i - 1]) || is_upper(s[i - 1]))) {
        letters += !is_digit(s[i - 1]);
        i--;
    }
    if (i < 2 || s[i - 1] != '.' || i == n || n - i > 5 || !letters)
        return 0;
    return n - i + 1;
}

const char *bl_urlpat_segment_ext(const char *s, size_t n, size_t *ext)
{
    size_t e = has_at(s, n) ? 0 : extension(s, n); /* "jane@example.com": {email} whole */
    const char *ph = e ? bl_urlpat_segment(s, n - e) : NULL;
    *ext = ph ? e : 0;
    return ph ? ph : bl_urlpat_segment(s, n);
}

/* ---- user patterns ----------------------------------------------------- */

typedef struct upat {
    int scheme;          /* 0 any, 1 http, 2 https */
    char *host;          /* NULL: any host ("*") */
    unsigned port;       /* 0: any */
    char *path;          /* the path part as written, NUL-terminated */
    size_t path_len;
    size_t *seg_off, *seg_len;  /* segments of path (after each '/') */
    size_t n_seg;
    int rest;            /* the last segment is "**" (not among the segments) */
} upat;

struct bl_urlpat_set {
    upat *p;
    size_t n, cap;
};

bl_err bl_urlpat_set_new(bl_urlpat_set **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? BL_OK : BL_ENOMEM;
}

static void upat_free(upat *u)
{
    free(u->host);
    free(u->path);
    free(u->seg_off);
    free(u->seg_len);
}

void bl_urlpat_set_clear(bl_urlpat_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        upat_free(&s->p[i]);
    s->n = 0;
}

void bl_urlpat_set_free(bl_urlpat_set *s)
{
    if (!s)
        return;
    bl_urlpat_set_clear(s);
    free(s->p);
    free(s);
}

size_t bl_urlpat_set_count(const bl_urlpat_set *s)
{
    return s ? s->n : 0;
}

/* Parses p[0..n) into u (allocating when u != NULL). BL_EINVAL with err. */
static bl_err parse(const char *p, size_t n, upat *u, char *err, size_t errn)
{
#define BAD(...) do { snprintf(err, errn, __VA_ARGS__); return BL_EINVAL; } while (0)
    if (n == 0)
        BAD("empty pattern");
    if (n > BL_URLPAT_MAX_LEN)
        BAD("pattern over %d bytes", BL_URLPAT_MAX_LEN);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= ' ' || c == 0x7f || c == '?' || c == '#' || c == '\\')
            BAD("pattern has a space, control character, '?', '#' or '\\' at byte %zu "
                "(patterns match the path only)", i);
    }
    int scheme = 0;
    size_t i = 0;
    if (n >= 7 && !memcmp(p, "http://", 7)) {
        scheme = 1;
        i = 7;
    } else if (n >= 8 && !memcmp(p, "https://", 8)) {
        scheme = 2;
        i = 8;
    } else {
        for (size_t k = 0; k + 3 <= n; k++)
            if (!memcmp(p + k, "://", 3))
                BAD("the scheme must be http:// or https:// (or none)");
    }
    size_t h0 = i;
    while (i < n && p[i] != '/' && p[i] != ':')
        i++;
    size_t h1 = i;
    if (h1 == h0)
        BAD("no host (write HOST/PATH, or */PATH for any host)");
    if (h1 - h0 > 255)
        BAD("host over 255 bytes");
    int any_host = h1 - h0 == 1 && p[h0] == '*';
    for (size_t k = h0; k < h1 && !any_host; k++) {
        char c = p[k];
        if (!(is_lower(c) || is_digit(c) || c == '.' || c == '-' || c == '_'))
            BAD("the host must be '*' or a lower-case host name (a-z 0-9 . - _), not '%.*s'",
                (int)(h1 - h0), p + h0);
    }
    unsigned port = 0;
    if (i < n && p[i] == ':') {
        i++;
        size_t d0 = i;
        for (; i < n && is_digit(p[i]); i++) /* every digit (leading zeros too), capped */
            port = port > 65535 ? port : port * 10 + (unsigned)(p[i] - '0');
        if (i == d0 || port < 1 || port > 65535)
            BAD("the port must be 1..65535");
    }
    if (i >= n || p[i] != '/')
        BAD("no path: the pattern must have a path starting with '/' after the host");
    size_t path0 = i;
    /* segments */
    size_t n_seg = 0;
    int rest = 0;
    if (n - path0 > 1) {
        for (size_t k = path0; k < n;) {
            size_t s0 = k + 1, s1 = s0;
            while (s1 < n && p[s1] != '/')
                s1++;
            size_t len = s1 - s0;
            if (!len)
                BAD("empty path segment ('//' or a trailing '/') at byte %zu", s0);
            if (rest)
                BAD("'**' must be the last segment");
            if (len == 2 && p[s0] == '*' && p[s0 + 1] == '*')
                rest = 1;
            else if (memchr(p + s0, '*', len) && len != 1)
                BAD("'*' must be a whole segment ('*' one segment, '**' the rest), at byte %zu",
                    s0);
            else
                n_seg++;
            k = s1;
        }
    }
    if (!u)
        return BL_OK;
    memset(u, 0, sizeof *u);
    u->scheme = scheme;
    u->port = port;
    u->rest = rest;
    u->path_len = n - path0;
    u->path = malloc(u->path_len + 1);
    u->host = any_host ? NULL : malloc(h1 - h0 + 1);
    u->seg_off = malloc((n_seg ? n_seg : 1) * sizeof *u->seg_off);
    u->seg_len = malloc((n_seg ? n_seg : 1) * sizeof *u->seg_len);
    if (!u->path || (!any_host && !u->host) || !u->seg_off || !u->seg_len) {
        upat_free(u);
        return BL_ENOMEM;
    }
    memcpy(u->path, p + path0, u->path_len);
    u->path[u->path_len] = '\0';
    if (u->host) {
        memcpy(u->host, p + h0, h1 - h0);
        u->host[h1 - h0] = '\0';
    }
    if (u->path_len > 1) {
        for (size_t k = 0; k < u->path_len && u->n_seg < n_seg;) {
            size_t s0 = k + 1, s1 = s0;
            while (s1 < u->path_len && u->path[s1] != '/')
                s1++;
            u->seg_off[u->n_seg] = s0;
            u->seg_len[u->n_seg++] = s1 - s0;
            k = s1;
        }
    }
    return BL_OK;
#undef BAD
}

bl_err bl_urlpat_check(const char *p, size_t n, char *err, size_t errn)
{
    return parse(p, n, NULL, err, errn);
}

bl_err bl_urlpat_set_add(bl_urlpat_set *s, const char *p, size_t n, char *err, size_t errn)
{
    if (s->n >= BL_URLPAT_MAX_PATTERNS) {
        snprintf(err, errn, "more than %d patterns", BL_URLPAT_MAX_PATTERNS);
        return BL_ETOOBIG;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        upat *np = realloc(s->p, nc * sizeof *np);
        if (!np)
            return BL_ENOMEM;
        s->p = np;
        s->cap = nc;
    }
    bl_err e = parse(p, n, &s->p[s->n], err, errn);
    if (!e)
        s->n++;
    return e;
}

/* Does u match the request (its path split into segments)? */
static int matches(const upat *u, const bl_urlpat_req *q, const size_t *off, const size_t *len,
                   size_t n_seg)
{
    if (u->scheme && strcmp(q->scheme, u->scheme == 1 ? "http" : "https"))
        return 0;
    if (u->host && strcmp(u->host, q->host))
        return 0;
    if (u->port && u->port != q->port)
        return 0;
    if (u->rest ? n_seg < u->n_seg : n_seg != u->n_seg)
        return 0;
    for (size_t i = 0; i < u->n_seg; i++) {
        const char *ps = u->path + u->seg_off[i];
        size_t pl = u->seg_len[i];
        if (pl == 1 && ps[0] == '*') {
            if (!len[i])
                return 0;
        } else if (pl != len[i] || memcmp(ps, q->path + off[i], pl)) {
            return 0;
        }
    }
    return 1;
}

static int cmp_keys(const void *a, const void *b, const bl_urlpat_req *q)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    size_t la = q->key_lens[i], lb = q->key_lens[j];
    int c = memcmp(q->keys[i], q->keys[j], la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

bl_err bl_urlpat_apply(const bl_urlpat_set *s, const bl_urlpat_req *q, bl_buf *out, int *user)
{
    if (user)
        *user = 0;
    if (q->path_len > BL_URLPAT_PATH_MAX || q->n_keys > BL_URLPAT_KEYS_MAX || !q->path_len ||
        q->path[0] != '/')
        return BL_EINVAL;
    for (size_t i = 0; i < q->n_keys; i++)
        if (q->key_lens[i] > BL_URLPAT_KEY_MAX)
            return BL_EINVAL;
    /* the request's segments: after each '/' ("/" alone has none) */
    size_t off[BL_URLPAT_PATH_MAX / 2 + 1], len[BL_URLPAT_PATH_MAX / 2 + 1];
    size_t n_seg = 0;
    if (q->path_len > 1)
        for (size_t k = 0; k < q->path_len;) {
            size_t s0 = k + 1, s1 = s0;
            while (s1 < q->path_len && q->path[s1] != '/')
                s1++;
            off[n_seg] = s0;
            len[n_seg++] = s1 - s0;
            k = s1;
        }
    bl_buf_reset(out);
    const upat *hit = NULL;
    for (size_t i = 0; s && i < s->n && !hit; i++)
        if (matches(&s->p[i], q, off, len, n_seg))
            hit = &s->p[i];
    if (hit) {
        if (user)
            *user = 1;
        if (bl_buf_append(out, hit->path, hit->path_len))
            return BL_ENOMEM;
    } else if (!n_seg) {
        if (bl_buf_putc(out, '/'))
            return BL_ENOMEM;
    } else {
        for (size_t i = 0; i < n_seg; i++) {
            size_t ext;
            const char *ph = bl_urlpat_segment_ext(q->path + off[i], len[i], &ext);
            size_t at = out->len;
            if (bl_buf_putc(out, '/') ||
                (ph ? bl_buf_puts(out, ph) ||
                          bl_buf_append(out, q->path + off[i] + len[i] - ext, ext)
                    : bl_buf_append(out, q->path + off[i], len[i])))
                return BL_ENOMEM;
            /* the segments that fit, then "/{more}" (7 bytes) */
            if (out->len > BL_URLPAT_PATH_MAX ||
                (i + 1 < n_seg && out->len > BL_URLPAT_PATH_MAX - 7)) {
                if (out->len > BL_URLPAT_PATH_MAX - 7)
                    out->len = at;
                if (bl_buf_puts(out, "/{more}"))
                    return BL_ENOMEM;
                break;
            }
        }
    }
    if (q->n_keys) {
        /* sorted, unique: insertion sort of indexes (at most 32) */
        size_t ix[BL_URLPAT_KEYS_MAX];
        for (size_t i = 0; i < q->n_keys; i++) {
            size_t j = i;
            ix[i] = i;
            while (j > 0 && cmp_keys(&ix[j - 1], &ix[j], q) > 0) {
                size_t t = ix[j - 1];
                ix[j - 1] = ix[j];
                ix[j] = t;
                j--;
            }
        }
        int first = 1;
        for (size_t i = 0; i < q->n_keys; i++) {
            if (i && !cmp_keys(&ix[i - 1], &ix[i], q))
                continue;
            if (bl_buf_putc(out, first ? '?' : '&') ||
                bl_buf_append(out, q->keys[ix[i]], q->key_lens[ix[i]]) ||
                bl_buf_puts(out, "={}"))
                return BL_ENOMEM;
            first = 0;
        }
    }
    if (bl_buf_putc(out, '\0'))
        return BL_ENOMEM;
    out->len--;
    return BL_OK;
}
