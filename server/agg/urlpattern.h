/*
 * urlpattern.h — the URL pattern of a network request (issue 16): what
 * /v1/apps/{app}/network groups requests by, besides build, host and HTTP
 * method. Pure code: no SQL, no I/O, no globals; thread-safe on distinct
 * objects.
 *
 * Automatic rules (docs/api.md "URL patterns" lists them with examples):
 * the path is split at '/', and each segment that looks like a
 * high-cardinality value is replaced by a placeholder (bl_urlpat_segment,
 * first rule that matches):
 *   {id}    decimal digits only ("123"), or 6+ letters and digits with at
 *           least as many digits as letters ("u123456", "A1B2C3")
 *   {uuid}  8-4-4-4-12 hex digits, any case
 *   {hex}   16+ hex digits with at least one decimal digit (hashes, ObjectIds)
 *   {email} contains '@' (or "%40")
 *   {slug}  any other segment holding a run of 5+ decimal digits
 *           ("product-123456")
 *   {token} 16+ characters of base64url (A-Z a-z 0-9 - _, '=' padding at
 *           the end, also as "%3D"), with a letter and a digit, and either
 *           both letter cases or 3+ digits
 *   {long}  any other segment over 64 bytes
 * A segment ending in a file extension ('.' then 1..5 letters and digits,
 * at least one letter) whose stem a rule matches keeps the extension after
 * the stem's placeholder: "b2db628ca1b2c3d4e5f6.jpg" -> "{hex}.jpg",
 * "123.json" -> "{id}.json"; else the rules apply to the whole segment.
 * Everything else is kept as sent ("v2", "en-US", "api", "android14",
 * "index.html", "v1.2.3"): short words, versions and locales never collapse. A
 * pattern's path is at most BL_URLPAT_PATH_MAX bytes: past that, the
 * segments that fit are followed by "/{more}".
 *
 * User patterns (per app, PUT /v1/apps/{app}/url-patterns) override the
 * automatic rules: the first pattern of the app's list that matches the
 * request gives its pattern, as written (its path part). Syntax:
 *   [http:// | https://]HOST[:PORT]/SEG/SEG/...
 * HOST is a lower-case host name or "*" (any host); without a scheme or a
 * port any scheme or port matches. SEG is a literal segment (matched
 * byte for byte), "*" (exactly one non-empty segment) or, last only, "**"
 * (the rest of the path: zero or more segments). "/" alone matches the
 * root path only.
 *
 * Query parameter names (the event's query_keys, sent only by apps that
 * keep them) are appended sorted and unique as "?a={}&b={}".
 */
#ifndef BL_URLPATTERN_H
#define BL_URLPATTERN_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"

#define BL_URLPAT_MAX_PATTERNS 100 /* user patterns per app */
#define BL_URLPAT_MAX_LEN 512      /* bytes per user pattern */
#define BL_URLPAT_PATH_MAX 2048    /* bytes of a request path (the event's cap) */
#define BL_URLPAT_KEYS_MAX 32      /* query parameter names per request */
#define BL_URLPAT_KEY_MAX 128      /* bytes per query parameter name */
/* bytes of a pattern at most: its path part is at most BL_URLPAT_PATH_MAX
 * (placeholders can make it longer than the request's path: "/1" becomes
 * "/{id}"; past BL_URLPAT_PATH_MAX the segments that fit are followed by
 * "/{more}"), then the query names ("?" or "&", the name, "={}") */
#define BL_URLPAT_OUT_MAX (BL_URLPAT_PATH_MAX + BL_URLPAT_KEYS_MAX * (BL_URLPAT_KEY_MAX + 4))

/* The placeholder for one path segment (seg[0..n), no '/'), or NULL when
 * the segment is kept (see the rules above). Static strings. */
const char *bl_urlpat_segment(const char *seg, size_t n);

/* The placeholder of a segment's stem when it ends in a file extension and
 * the stem gets one (*ext = the extension's length with its dot, to be
 * written after the placeholder), else bl_urlpat_segment of the whole
 * segment (*ext = 0). NULL when the segment is kept whole. */
const char *bl_urlpat_segment_ext(const char *seg, size_t n, size_t *ext);

/* A compiled list of user patterns, in order. Owns its memory. */
typedef struct bl_urlpat_set bl_urlpat_set;

/* An empty set. BL_ENOMEM. */
bl_err bl_urlpat_set_new(bl_urlpat_set **out);
void bl_urlpat_set_free(bl_urlpat_set *s);
/* Empties the set (keeps its memory for reuse). */
void bl_urlpat_set_clear(bl_urlpat_set *s);
/* Number of patterns in the set. */
size_t bl_urlpat_set_count(const bl_urlpat_set *s);

/* Checks user pattern p[0..n) against the syntax above (also: at most
 * BL_URLPAT_MAX_LEN bytes, no control characters, spaces, '?', '#', '\\';
 * no empty segment; '*' only as a whole segment). BL_OK, or BL_EINVAL
 * with the reason (English, for a 400) in err. */
bl_err bl_urlpat_check(const char *p, size_t n, char *err, size_t errn);

/* Appends a user pattern (checked as by bl_urlpat_check; copied) to the
 * end of the set. BL_OK, BL_EINVAL (err says why), BL_ENOMEM, BL_ETOOBIG
 * (already BL_URLPAT_MAX_PATTERNS patterns). */
bl_err bl_urlpat_set_add(bl_urlpat_set *s, const char *p, size_t n, char *err, size_t errn);

/* A request, as the network event carries it (strings borrowed). */
typedef struct bl_urlpat_req {
    const char *scheme;       /* "http" / "https" */
    const char *host;         /* lower-case */
    unsigned port;            /* 1..65535 */
    const char *path;         /* starts with '/', no query or fragment */
    size_t path_len;          /* <= BL_URLPAT_PATH_MAX */
    const char *const *keys;  /* query parameter names (any order, may repeat), or NULL */
    const size_t *key_lens;
    size_t n_keys;            /* <= BL_URLPAT_KEYS_MAX, each <= BL_URLPAT_KEY_MAX bytes */
} bl_urlpat_req;

/* The pattern of request q: the first user pattern of s (NULL: none) that
 * matches, else the automatic rules; then the query names. Replaces out's
 * contents with the pattern, NUL-terminated (out->len excludes the NUL;
 * at most BL_URLPAT_OUT_MAX bytes). *user = 1 when a user pattern gave it
 * (may be NULL). BL_OK, BL_ENOMEM, BL_EINVAL (path or keys over the caps
 * above: the caller's checks let none through). */
bl_err bl_urlpat_apply(const bl_urlpat_set *s, const bl_urlpat_req *q, bl_buf *out, int *user);

#endif
