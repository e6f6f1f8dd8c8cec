/*
 * batch.c — the batch wire format v1: decode, encode and the JSON form (see
 * batch.h; the normative text with an annotated example is
 * schema/batch-format.md).
 *
 * Layout (little-endian; offsets in bytes from the start of the batch):
 *
 *   0   "BEATLINE"            8  u16 version = 1     10  u16 flags = 0
 *   12  u32 header_size       16 u8[16] batch_id     32  i64 origin_wall_us
 *   40  u32 sdk_level
 *   44  five strings, each u16 length + UTF-8: app, build, session_id,
 *       device_model, os_version; then unknown header bytes up to
 *       header_size, which a v1 decoder skips
 *   header_size: u32 n_threads, then per thread
 *       u64 id, u16 length + UTF-8 name, u8 flags (bit 0 main, bit 1
 *       truncated, bit 2 continued, bit 3 continues), u32 n_records, and
 *       when continued: u32 n_carried, u64 since_us
 *   zero bytes up to the next multiple of 8
 *   every thread's records in table order, n_records × u64
 *   u32 events_len, events_len bytes of UTF-8 JSON lines; end of input
 *
 * Decoder invariants: the cursor `pos` only grows and never passes `len`;
 * every length or count is compared with the bytes left (len - pos, or
 * header_size - pos inside the header) by subtraction before it is used, so
 * no sum can wrap; a failure records the offset of the field at fault (for
 * invalid UTF-8: the first byte of the bad sequence) and a static message.
 * Records are never touched: decoding costs O(threads + strings + events)
 * whatever the record count.
 *
 * JSON form: parsed with jansson into a tree, checked field by field and
 * written through bl_batch_encode, so binary output has one writer. jansson
 * keeps no positions for values; a semantic error is located by rescanning
 * the (by then known valid) text along the path of the offending value.
 */
#include "ingest/batch.h"

#include "common/utf8.h"

#include <assert.h>
#include <jansson.h>
#include <stdlib.h>

#define HDR_FIXED 44u               /* magic .. sdk_level */
#define HDR_MIN (HDR_FIXED + 10u)   /* plus five empty strings */
#define STR_MAX 65535u              /* u16 length */
#define MAX_THREADS 65536u
#define THREAD_MIN 15u              /* id, empty name, flags, n_records */
#define TF_MAIN 1u
#define TF_TRUNCATED 2u
#define TF_CONTINUED 4u
#define TF_CONTINUES 8u
#define TF_ALL (TF_MAIN | TF_TRUNCATED | TF_CONTINUED | TF_CONTINUES)

/* ------------------------------------------------------------------------ */
/* Little-endian access and UTF-8                                            */

static uint16_t ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t ld64(const uint8_t *p)
{
    return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32;
}

static uint8_t *st16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t *st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

static uint8_t *st64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}


static int str_valid(bl_str s)
{
    if (s.n == 0)
        return 1;
    return s.p && bl_utf8_check((const uint8_t *)s.p, s.n) == s.n;
}

/* Shrinks b back to n bytes (n <= b->len): undoes a failed append. */
static void buf_truncate(bl_buf *b, size_t n)
{
    b->len = n;
    if (b->data)
        b->data[n] = '\0';
}

/* ------------------------------------------------------------------------ */
/* UUIDs                                                                     */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void bl_uuid_format(const uint8_t id[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[id[i] >> 4];
        out[o++] = hex[id[i] & 15];
    }
    out[o] = '\0';
}

int bl_uuid_parse(const char *s, size_t n, uint8_t id[16])
{
    uint8_t tmp[16];
    size_t k = 0;
    if (!s || n != 36)
        return -1;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return -1;
            i++;
            continue;
        }
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        tmp[k++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    memcpy(id, tmp, sizeof tmp);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Decoder                                                                   */

typedef struct rd {
    const uint8_t *buf;
    size_t len;            /* bytes of input */
    size_t pos;            /* next byte to read; pos <= len */
    bl_batch_error *err;
} rd;

static bl_err fail(rd *r, size_t off, const char *msg)
{
    r->err->offset = off;
    r->err->message = msg;
    return BL_EFORMAT;
}

/* 1 when n more bytes can be read at pos. */
static int have(const rd *r, size_t n)
{
    return r->len - r->pos >= n;
}

/* Reads a u16-length UTF-8 string that must end at or before `end`
 * (pos <= end <= len). `past`/`bad` are the messages for a string that runs
 * past `end` and for invalid UTF-8. */
static bl_err rd_str(rd *r, size_t end, const char *past, const char *bad, bl_str *s)
{
    size_t at = r->pos;
    if (end - at < 2)
        return fail(r, at, past);
    size_t n = ld16(r->buf + at);
    if (end - at - 2 < n)
        return fail(r, at, past);
    const uint8_t *p = r->buf + at + 2;
    size_t bad_at = bl_utf8_check(p, n);
    if (bad_at != n)
        return fail(r, at + 2 + bad_at, bad);
    s->p = (const char *)p;
    s->n = (uint32_t)n;
    r->pos = at + 2 + n;
    return BL_OK;
}

static const struct {
    const char *past, *bad;
} hdr_str_msg[5] = {
    { "app: runs past header_size", "app: invalid UTF-8" },
    { "build: runs past header_size", "build: invalid UTF-8" },
    { "session_id: runs past header_size", "session_id: invalid UTF-8" },
    { "device_model: runs past header_size", "device_model: invalid UTF-8" },
    { "os_version: runs past header_size", "os_version: invalid UTF-8" },
};

/* The thread table, from n_threads through the last n_records. */
static bl_err rd_threads(rd *r, bl_batch *out)
{
    if (!have(r, 4))
        return fail(r, r->pos, "n_threads: truncated");
    size_t at = r->pos;
    uint32_t nt = ld32(r->buf + at);
    if (nt > MAX_THREADS)
        return fail(r, at, "n_threads: more than 65,536 threads");
    r->pos += 4;
    /* each entry takes at least THREAD_MIN bytes, events_len 4 more */
    if ((uint64_t)nt * THREAD_MIN + 4 > r->len - r->pos)
        return fail(r, at, "n_threads: more threads than the input can hold");
    if (nt) {
        out->threads = calloc(nt, sizeof *out->threads);
        if (!out->threads)
            return BL_ENOMEM;
    }
    out->n_threads = nt;

    uint64_t total = 0; /* records so far; < 2^48, so total * 8 cannot wrap */
    for (uint32_t i = 0; i < nt; i++) {
        bl_batch_thread *t = &out->threads[i];
        bl_err e;
        if (!have(r, 8))
            return fail(r, r->pos, "thread id: truncated");
        t->id = ld64(r->buf + r->pos);
        r->pos += 8;
        e = rd_str(r, r->len, "thread name: runs past the end of the input",
                   "thread name: invalid UTF-8", &t->name);
        if (e)
            return e;
        if (!have(r, 1))
            return fail(r, r->pos, "thread flags: truncated");
        uint8_t f = r->buf[r->pos];
        if (f & ~TF_ALL)
            return fail(r, r->pos, "thread flags: unknown bits set (only bits 0-3 are defined)");
        t->main = (f & TF_MAIN) != 0;
        t->truncated = (f & TF_TRUNCATED) != 0;
        t->continues = (f & TF_CONTINUES) != 0;
        r->pos++;
        if (!have(r, 4))
            return fail(r, r->pos, "n_records: truncated");
        t->n_records = ld32(r->buf + r->pos);
        total += t->n_records;
        if (total * 8 + 4 > r->len - r->pos - 4)
            return fail(r, r->pos, "n_records: more records than the input can hold");
        r->pos += 4;
        if (f & TF_CONTINUED) {
            if (!have(r, 4))
                return fail(r, r->pos, "n_carried: truncated");
            t->n_carried = ld32(r->buf + r->pos);
            if (t->n_carried == 0 || t->n_carried > t->n_records)
                return fail(r, r->pos, "n_carried: must be 1 .. n_records when the thread "
                                       "is continued");
            r->pos += 4;
            if (!have(r, 8))
                return fail(r, r->pos, "since_us: truncated");
            t->since_us = ld64(r->buf + r->pos);
            if (t->since_us > BL_REC_T_MASK)
                return fail(r, r->pos, "since_us: 2^40 µs or more");
            r->pos += 8;
            if (total * 8 + 4 > r->len - r->pos)
                return fail(r, r->pos - 12, "n_records: more records than the input can hold");
        }
    }
    out->n_records = total;
    return BL_OK;
}

bl_err bl_batch_decode(const uint8_t *buf, size_t len, bl_batch *out, bl_batch_error *err)
{
    bl_batch_error scratch;
    rd r = { buf, len, 0, err ? err : &scratch };
    bl_err e = BL_OK;

    assert(out && (buf || len == 0));
    memset(out, 0, sizeof *out);
    r.err->offset = 0;
    r.err->message = NULL;

    /* fixed header */
    if (len < 8 || memcmp(buf, BL_BATCH_MAGIC, 8) != 0) {
        int prefix = len < 8 && (len == 0 || memcmp(buf, BL_BATCH_MAGIC, len) == 0);
        int json = len > 0 && (buf[0] == '{' || buf[0] == '[');
        e = fail(&r, 0, prefix ? "magic: truncated"
                        : json ? "magic: not a Beatline batch (expected \"BEATLINE\"; this looks "
                                 "like JSON: encode it first with beatline-batch encode)"
                               : "magic: not a Beatline batch (expected \"BEATLINE\")");
        goto out;
    }
    if (len < 10) {
        e = fail(&r, 8, "version: truncated");
        goto out;
    }
    if (ld16(buf + 8) != BL_BATCH_VERSION) {
        fail(&r, 8, "version: unsupported (this decoder reads version 1)");
        e = BL_EVERSION;
        goto out;
    }
    if (len < 12) {
        e = fail(&r, 10, "flags: truncated");
        goto out;
    }
    if (ld16(buf + 10) != 0) {
        e = fail(&r, 10, "flags: must be 0 in version 1");
        goto out;
    }
    if (len < 16) {
        e = fail(&r, 12, "header_size: truncated");
        goto out;
    }
    uint32_t hs = ld32(buf + 12);
    if (hs < HDR_MIN) {
        e = fail(&r, 12, "header_size: smaller than the 54-byte minimum");
        goto out;
    }
    if (hs > len) {
        e = fail(&r, 12, "header_size: past the end of the input");
        goto out;
    }
    /* hs >= HDR_MIN and hs <= len: bytes 16 .. 44 are there */
    memcpy(out->batch_id, buf + 16, 16);
    uint64_t wall = ld64(buf + 32);
    memcpy(&out->origin_wall_us, &wall, 8);
    out->sdk_level = ld32(buf + 40);
    r.pos = HDR_FIXED;
    bl_str *strs[5] = { &out->app, &out->build, &out->session_id, &out->device_model,
                        &out->os_version };
    for (int i = 0; i < 5; i++)
        if ((e = rd_str(&r, hs, hdr_str_msg[i].past, hdr_str_msg[i].bad, strs[i])))
            goto out;
    r.pos = hs; /* skip header fields appended by later writers */

    if ((e = rd_threads(&r, out)))
        goto out;

    /* padding to a multiple of 8 */
    size_t pad = (8 - (r.pos & 7)) & 7;
    if (!have(&r, pad)) {
        e = fail(&r, r.pos, "padding: truncated");
        goto out;
    }
    for (size_t k = 0; k < pad; k++)
        if (buf[r.pos + k] != 0) {
            e = fail(&r, r.pos + k, "padding: must be zero");
            goto out;
        }
    r.pos += pad;

    /* records: bounds only */
    for (uint32_t i = 0; i < out->n_threads; i++) {
        bl_batch_thread *t = &out->threads[i];
        uint64_t nb = (uint64_t)t->n_records * 8;
        if (nb > r.len - r.pos) {
            e = fail(&r, r.pos, "records: run past the end of the input");
            goto out;
        }
        t->records = buf + r.pos;
        for (uint32_t k = 0; k < t->n_carried; k++)
            if (bl_rec_is_exit(bl_batch_record(t, k))) {
                e = fail(&r, r.pos + (size_t)k * 8, "record: a carried record must be an enter");
                goto out;
            }
        r.pos += (size_t)nb;
    }

    /* events */
    if (!have(&r, 4)) {
        e = fail(&r, r.pos, "events_len: truncated");
        goto out;
    }
    uint32_t en = ld32(buf + r.pos);
    if (en > r.len - r.pos - 4) {
        e = fail(&r, r.pos, "events_len: runs past the end of the input");
        goto out;
    }
    r.pos += 4;
    size_t bad = bl_utf8_check(buf + r.pos, en);
    if (bad != en) {
        e = fail(&r, r.pos + bad, "events: invalid UTF-8");
        goto out;
    }
    out->events.p = (const char *)buf + r.pos;
    out->events.n = en;
    r.pos += en;
    if (r.pos != len) {
        e = fail(&r, r.pos, "trailing bytes after the events");
        goto out;
    }
    out->version = BL_BATCH_VERSION;
out:
    if (e)
        bl_batch_cleanup(out);
    return e;
}

void bl_batch_cleanup(bl_batch *b)
{
    if (!b)
        return;
    free(b->threads);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------------ */
/* Encoder                                                                   */

static uint8_t *put_str(uint8_t *w, bl_str s)
{
    w = st16(w, (uint16_t)s.n);
    if (s.n)
        memcpy(w, s.p, s.n);
    return w + s.n;
}

bl_err bl_batch_encode(const bl_batch *b, bl_buf *out)
{
    assert(b && out);
    const bl_str *strs[5] = { &b->app, &b->build, &b->session_id, &b->device_model,
                              &b->os_version };
    uint64_t hdr = HDR_FIXED, table = 4, recs = 0;
    for (int i = 0; i < 5; i++) {
        if (strs[i]->n > STR_MAX || !str_valid(*strs[i]))
            return BL_EINVAL;
        hdr += 2 + (uint64_t)strs[i]->n;
    }
    if (b->n_threads > MAX_THREADS || (b->n_threads && !b->threads))
        return BL_EINVAL;
    for (uint32_t i = 0; i < b->n_threads; i++) {
        const bl_batch_thread *t = &b->threads[i];
        if (t->name.n > STR_MAX || !str_valid(t->name) || (t->n_records && !t->records))
            return BL_EINVAL;
        if (t->n_carried > t->n_records || t->since_us > BL_REC_T_MASK ||
            (!t->n_carried && t->since_us))
            return BL_EINVAL;
        for (uint32_t k = 0; k < t->n_carried; k++)
            if (bl_rec_is_exit(bl_batch_record(t, k)))
                return BL_EINVAL;
        table += THREAD_MIN + (uint64_t)t->name.n + (t->n_carried ? 12 : 0);
        recs += (uint64_t)t->n_records * 8;
    }
    if (!str_valid(b->events))
        return BL_EINVAL;
    uint64_t pad = (8 - ((hdr + table) & 7)) & 7;
    uint64_t total = hdr + table + pad + recs + 4 + b->events.n;
    if (total >= SIZE_MAX / 2)
        return BL_ETOOBIG;

    size_t start = out->len;
    bl_err e = bl_buf_reserve(out, (size_t)total);
    if (e)
        return e;
    uint8_t *w = (uint8_t *)out->data + start;
    memcpy(w, BL_BATCH_MAGIC, 8);
    st16(w + 8, BL_BATCH_VERSION);
    st16(w + 10, 0);
    st32(w + 12, (uint32_t)hdr);
    memcpy(w + 16, b->batch_id, 16);
    uint64_t wall;
    memcpy(&wall, &b->origin_wall_us, 8);
    st64(w + 32, wall);
    st32(w + 40, b->sdk_level);
    w += HDR_FIXED;
    for (int i = 0; i < 5; i++)
        w = put_str(w, *strs[i]);
    w = st32(w, b->n_threads);
    for (uint32_t i = 0; i < b->n_threads; i++) {
        const bl_batch_thread *t = &b->threads[i];
        w = st64(w, t->id);
        w = put_str(w, t->name);
        *w++ = (uint8_t)((t->main ? TF_MAIN : 0) | (t->truncated ? TF_TRUNCATED : 0) |
                         (t->n_carried ? TF_CONTINUED : 0) | (t->continues ? TF_CONTINUES : 0));
        w = st32(w, t->n_records);
        if (t->n_carried) {
            w = st32(w, t->n_carried);
            w = st64(w, t->since_us);
        }
    }
    memset(w, 0, (size_t)pad);
    w += pad;
    /* records are stored little-endian already: copying them is writing
     * each bl_batch_record value */
    for (uint32_t i = 0; i < b->n_threads; i++) {
        const bl_batch_thread *t = &b->threads[i];
        if (t->n_records) {
            memcpy(w, t->records, (size_t)t->n_records * 8);
            w += (size_t)t->n_records * 8;
        }
    }
    w = st32(w, b->events.n);
    if (b->events.n)
        memcpy(w, b->events.p, b->events.n);
    buf_truncate(out, start + (size_t)total);
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* JSON: locating a value in the text                                        */

/* One step of a path to a value: object member `key`, or array element
 * `idx` when key is NULL. */
typedef struct jstep {
    const char *key;
    size_t idx;
} jstep;

#define JPATH_MAX 8

typedef struct jctx {
    const char *text;
    size_t len;
    bl_batch_error *err;
    jstep path[JPATH_MAX];  /* where the walk is */
    int depth;
} jctx;

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* i at an opening quote; returns the index just past the closing quote. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return n;
}

static int is_delim(char c)
{
    return c == ',' || c == ':' || c == ']' || c == '}' || c == ' ' || c == '\t' ||
           c == '\n' || c == '\r';
}

/* i at the start of a value; returns the index just past it. */
static size_t skip_value(const char *s, size_t n, size_t i)
{
    size_t depth = 0;
    do {
        i = skip_ws(s, n, i);
        if (i >= n)
            return n;
        char c = s[i];
        if (c == '"') {
            i = skip_string(s, n, i);
        } else if (c == '[' || c == '{') {
            depth++;
            i++;
        } else if (c == ']' || c == '}') {
            if (depth == 0)
                return i;
            depth--;
            i++;
        } else if (c == ',' || c == ':') {
            i++;
        } else {
            while (i < n && !is_delim(s[i]))
                i++;
        }
    } while (depth > 0);
    return i;
}

/* 1 when the string token at s[i] (its opening quote) decodes to the ASCII
 * text `want`. */
static int key_is(const char *s, size_t n, size_t i, const char *want)
{
    size_t w = 0;
    for (i++; i < n && s[i] != '"';) {
        unsigned cp;
        if (s[i] != '\\') {
            cp = (unsigned char)s[i++];
        } else {
            if (i + 1 >= n)
                return 0;
            switch (s[i + 1]) {
            case '"': case '\\': case '/': cp = (unsigned char)s[i + 1]; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (n - i < 6)
                    return 0;
                cp = 0;
                for (int k = 2; k < 6; k++) {
                    int h = hexval(s[i + (size_t)k]);
                    if (h < 0)
                        return 0;
                    cp = cp << 4 | (unsigned)h;
                }
                i += 4;
                break;
            default: return 0;
            }
            i += 2;
        }
        if (want[w] == '\0' || (unsigned char)want[w] != cp)
            return 0;
        w++;
    }
    return want[w] == '\0';
}

/*
 * Offset of the value at `path` in valid JSON text; when a step cannot be
 * taken (member absent, index past the end) the offset of the object or
 * array where it stopped.
 */
static size_t locate(const char *s, size_t n, const jstep *path, int depth)
{
    size_t i = skip_ws(s, n, 0);
    for (int k = 0; k < depth; k++) {
        if (i >= n)
            return n;
        size_t container = i;
        if (path[k].key) {
            if (s[i] != '{')
                return i;
            i = skip_ws(s, n, i + 1);
            for (;;) {
                if (i >= n || s[i] != '"')
                    return container;
                int hit = key_is(s, n, i, path[k].key);
                i = skip_ws(s, n, skip_string(s, n, i));
                if (i < n && s[i] == ':')
                    i = skip_ws(s, n, i + 1);
                if (hit)
                    break;
                i = skip_ws(s, n, skip_value(s, n, i));
                if (i < n && s[i] == ',')
                    i = skip_ws(s, n, i + 1);
            }
        } else {
            if (s[i] != '[')
                return i;
            i = skip_ws(s, n, i + 1);
            for (size_t j = 0; j < path[k].idx; j++) {
                if (i >= n || s[i] == ']')
                    return container;
                i = skip_ws(s, n, skip_value(s, n, i));
                if (i < n && s[i] == ',')
                    i = skip_ws(s, n, i + 1);
            }
            if (i >= n || s[i] == ']')
                return container;
        }
    }
    return i;
}

static void jpush(jctx *c, const char *key, size_t idx)
{
    assert(c->depth < JPATH_MAX);
    c->path[c->depth].key = key;
    c->path[c->depth].idx = idx;
    c->depth++;
}

static void jpop(jctx *c)
{
    assert(c->depth > 0);
    c->depth--;
}

/* Reports `msg` at the value the current path leads to. */
static bl_err jfail(jctx *c, const char *msg)
{
    c->err->offset = locate(c->text, c->len, c->path, c->depth);
    c->err->message = msg;
    return BL_EFORMAT;
}

/* Reports `msg` at member `key` (or element idx when key is NULL) of the
 * current value. */
static bl_err jfail_in(jctx *c, const char *key, size_t idx, const char *msg)
{
    jpush(c, key, idx);
    return jfail(c, msg);
}

/* A jansson parse failure: its error code as a static message, its byte
 * position as the offset. */
static bl_err jansson_fail(jctx *c, const json_error_t *je)
{
    const char *msg;
    switch (json_error_code(je)) {
    case json_error_out_of_memory: return BL_ENOMEM;
    case json_error_invalid_utf8: msg = "JSON: invalid UTF-8"; break;
    case json_error_premature_end_of_input: msg = "JSON: unexpected end of input"; break;
    case json_error_end_of_input_expected: msg = "JSON: text after the top-level value"; break;
    case json_error_duplicate_key: msg = "JSON: duplicate object key"; break;
    case json_error_numeric_overflow:
        msg = "JSON: number out of range (integers must fit in 64 bits)";
        break;
    case json_error_stack_overflow: msg = "JSON: nested too deeply"; break;
    case json_error_null_byte_in_key: msg = "JSON: \\u0000 in an object key"; break;
    default: msg = "JSON: syntax error"; break;
    }
    c->err->offset = je->position < 0 || (size_t)je->position > c->len ? c->len
                                                                        : (size_t)je->position;
    c->err->message = msg;
    return BL_EFORMAT;
}

/* ------------------------------------------------------------------------ */
/* JSON → binary                                                             */

#define JFLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

/* Optional string member; absent → empty. The bytes stay owned by `obj`. */
static bl_err j_str(jctx *c, const json_t *obj, const char *key, const char *not_string,
                    const char *too_long, bl_str *out)
{
    const json_t *v = json_object_get(obj, key);
    out->p = "";
    out->n = 0;
    if (!v)
        return BL_OK;
    if (!json_is_string(v))
        return jfail_in(c, key, 0, not_string);
    size_t n = json_string_length(v);
    if (n > STR_MAX)
        return jfail_in(c, key, 0, too_long);
    out->p = json_string_value(v);
    out->n = (uint32_t)n;
    return BL_OK;
}

/* Optional integer member in lo..hi; absent → 0. */
static bl_err j_int(jctx *c, const json_t *obj, const char *key, json_int_t lo, json_int_t hi,
                    const char *msg, json_int_t *out)
{
    const json_t *v = json_object_get(obj, key);
    *out = 0;
    if (!v)
        return BL_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return jfail_in(c, key, 0, msg);
    *out = json_integer_value(v);
    return BL_OK;
}

/* Optional boolean member; absent → 0. */
static bl_err j_bool(jctx *c, const json_t *obj, const char *key, const char *msg, uint8_t *out)
{
    const json_t *v = json_object_get(obj, key);
    *out = 0;
    if (!v)
        return BL_OK;
    if (!json_is_boolean(v))
        return jfail_in(c, key, 0, msg);
    *out = json_is_true(v) ? 1 : 0;
    return BL_OK;
}

/* The records of one thread, appended to `recs` as little-endian u64. */
static bl_err j_records(jctx *c, const json_t *arr, bl_buf *recs)
{
    size_t n = json_array_size(arr);
    bl_err e = bl_buf_reserve(recs, n > SIZE_MAX / 16 ? SIZE_MAX : n * 8);
    if (e)
        return e;
    for (size_t r = 0; r < n; r++) {
        const json_t *rec = json_array_get(arr, r);
        if (!json_is_array(rec) || json_array_size(rec) != 3)
            return jfail_in(c, NULL, r,
                            "threads[].records[]: must be [methodId, \"i\" or \"o\", t_us]");
        const json_t *m = json_array_get(rec, 0), *d = json_array_get(rec, 1),
                     *t = json_array_get(rec, 2);
        if (!json_is_integer(m) || json_integer_value(m) < 0 ||
            json_integer_value(m) > (json_int_t)BL_REC_ID_MAX) {
            jpush(c, NULL, r);
            return jfail_in(c, NULL, 0,
                            "threads[].records[][0]: methodId must be an integer 0..8388607");
        }
        const char *ds = json_is_string(d) ? json_string_value(d) : NULL;
        if (!ds || json_string_length(d) != 1 || (ds[0] != 'i' && ds[0] != 'o')) {
            jpush(c, NULL, r);
            return jfail_in(c, NULL, 1,
                            "threads[].records[][1]: must be \"i\" (enter) or \"o\" (exit)");
        }
        if (!json_is_integer(t) || json_integer_value(t) < 0 ||
            (uint64_t)json_integer_value(t) > BL_REC_T_MASK) {
            jpush(c, NULL, r);
            return jfail_in(c, NULL, 2,
                            "threads[].records[][2]: t_us must be an integer 0..1099511627775");
        }
        uint8_t le[8];
        st64(le, bl_rec_make(ds[0] == 'o', (uint32_t)json_integer_value(m),
                             (uint64_t)json_integer_value(t)));
        if ((e = bl_buf_append(recs, le, 8)))
            return e;
    }
    return BL_OK;
}

/* Thread t of the "threads" array (the path points at it). Its records go to
 * `recs`; *rec_off is where they start there. */
static bl_err j_thread(jctx *c, const json_t *th, bl_batch_thread *t, bl_buf *recs,
                       size_t *rec_off)
{
    bl_err e;
    json_int_t id;
    if (!json_is_object(th))
        return jfail(c, "threads[]: must be an object");
    if ((e = j_int(c, th, "id", INT64_MIN, INT64_MAX, "threads[].id: must be an integer", &id)))
        return e;
    t->id = (uint64_t)id;
    if ((e = j_str(c, th, "name", "threads[].name: must be a string",
                   "threads[].name: longer than 65,535 bytes", &t->name)) ||
        (e = j_bool(c, th, "main", "threads[].main: must be true or false", &t->main)) ||
        (e = j_bool(c, th, "truncated", "threads[].truncated: must be true or false",
                    &t->truncated)) ||
        (e = j_bool(c, th, "continues", "threads[].continues: must be true or false",
                    &t->continues)))
        return e;
    json_int_t carried, since;
    if ((e = j_int(c, th, "carried", 1, UINT32_MAX,
                   "threads[].carried: must be an integer 1 .. the number of records",
                   &carried)) ||
        (e = j_int(c, th, "since_us", 0, (json_int_t)BL_REC_T_MASK,
                   "threads[].since_us: must be an integer 0 .. 2^40-1", &since)))
        return e;
    if (!json_object_get(th, "carried") != !json_object_get(th, "since_us"))
        return jfail(c, "threads[]: carried and since_us go together");
    t->n_carried = (uint32_t)carried;
    t->since_us = (uint64_t)since;
    const json_t *arr = json_object_get(th, "records");
    *rec_off = recs->len;
    if (t->n_carried > (arr && json_is_array(arr) ? json_array_size(arr) : 0))
        return jfail_in(c, "carried", 0,
                        "threads[].carried: must be an integer 1 .. the number of records");
    if (!arr)
        return BL_OK;
    if (!json_is_array(arr))
        return jfail_in(c, "records", 0, "threads[].records: must be an array");
    if (json_array_size(arr) > UINT32_MAX)
        return jfail_in(c, "records", 0, "threads[].records: more than 4,294,967,295 records");
    jpush(c, "records", 0);
    if ((e = j_records(c, arr, recs)))
        return e;
    jpop(c);
    t->n_records = (uint32_t)json_array_size(arr);
    for (uint32_t k = 0; k < t->n_carried; k++) {
        uint8_t le[8];
        memcpy(le, recs->data + *rec_off + (size_t)k * 8, 8);
        if (ld64(le) & BL_REC_EXIT)
            return jfail_in(c, "records", 0, "threads[].records: a carried record must be \"i\"");
    }
    return BL_OK;
}

typedef struct dump_ctx {
    bl_buf *b;
    bl_err e;
} dump_ctx;

static int dump_cb(const char *p, size_t n, void *data)
{
    dump_ctx *d = data;
    d->e = bl_buf_append(d->b, p, n);
    return d->e ? -1 : 0;
}

/* Appends one events element as a line: an object in compact form, a
 * string as its raw text. */
static bl_err j_event(jctx *c, const json_t *ev, size_t i, bl_buf *lines)
{
    bl_err e;
    if (json_is_object(ev)) {
        dump_ctx d = { lines, BL_OK };
        if (json_dump_callback(ev, dump_cb, &d, JSON_COMPACT) != 0)
            return d.e ? d.e : BL_ENOMEM;
    } else if (json_is_string(ev)) {
        size_t n = json_string_length(ev);
        if (memchr(json_string_value(ev), '\n', n))
            return jfail_in(c, NULL, i, "events[]: a raw line must not contain a newline");
        if ((e = bl_buf_append(lines, json_string_value(ev), n)))
            return e;
    } else {
        return jfail_in(c, NULL, i, "events[]: must be an object (or a string: a raw line)");
    }
    return bl_buf_putc(lines, '\n');
}

bl_err bl_batch_json_to_binary(const char *json, size_t len, bl_buf *out, bl_batch_error *err)
{
    bl_batch_error scratch;
    jctx c = { json ? json : "", len, err ? err : &scratch, { { NULL, 0 } }, 0 };
    json_error_t je;
    json_t *root = NULL;
    bl_batch b;
    bl_buf recs, lines;
    size_t *rec_off = NULL;
    json_int_t v;
    bl_err e = BL_OK;

    assert(out && (json || len == 0));
    memset(&b, 0, sizeof b);
    bl_buf_init(&recs, 0);
    bl_buf_init(&lines, UINT32_MAX);
    c.err->offset = 0;
    c.err->message = NULL;

    root = json_loadb(c.text, len, JFLAGS, &je);
    if (!root) {
        e = jansson_fail(&c, &je);
        goto out;
    }
    if (!json_is_object(root)) {
        e = jfail(&c, "top level: must be an object");
        goto out;
    }

    const json_t *id = json_object_get(root, "batch_id");
    if (!id) {
        e = jfail(&c, "batch_id: missing (a UUID string is required)");
        goto out;
    }
    if (!json_is_string(id) ||
        bl_uuid_parse(json_string_value(id), json_string_length(id), b.batch_id) != 0) {
        e = jfail_in(&c, "batch_id", 0,
                     "batch_id: must be a UUID string (8-4-4-4-12 hex digits)");
        goto out;
    }
    if ((e = j_str(&c, root, "app", "app: must be a string", "app: longer than 65,535 bytes",
                   &b.app)) ||
        (e = j_str(&c, root, "build", "build: must be a string",
                   "build: longer than 65,535 bytes", &b.build)) ||
        (e = j_str(&c, root, "session_id", "session_id: must be a string",
                   "session_id: longer than 65,535 bytes", &b.session_id)))
        goto out;
    if ((e = j_int(&c, root, "origin_wall_us", INT64_MIN, INT64_MAX,
                   "origin_wall_us: must be an integer", &v)))
        goto out;
    b.origin_wall_us = (int64_t)v;

    const json_t *dev = json_object_get(root, "device");
    if (dev && !json_is_object(dev)) {
        e = jfail_in(&c, "device", 0, "device: must be an object");
        goto out;
    }
    if (dev) {
        jpush(&c, "device", 0);
        if ((e = j_str(&c, dev, "model", "device.model: must be a string",
                       "device.model: longer than 65,535 bytes", &b.device_model)) ||
            (e = j_str(&c, dev, "os", "device.os: must be a string",
                       "device.os: longer than 65,535 bytes", &b.os_version)) ||
            (e = j_int(&c, dev, "sdk", 0, UINT32_MAX,
                       "device.sdk: must be an integer 0..4294967295", &v)))
            goto out;
        b.sdk_level = (uint32_t)v;
        jpop(&c);
    }

    const json_t *threads = json_object_get(root, "threads");
    if (threads && !json_is_array(threads)) {
        e = jfail_in(&c, "threads", 0, "threads: must be an array");
        goto out;
    }
    size_t nt = json_array_size(threads); /* 0 when absent */
    jpush(&c, "threads", 0);
    if (nt > MAX_THREADS) {
        e = jfail_in(&c, NULL, MAX_THREADS, "threads: more than 65,536 threads");
        goto out;
    }
    if (nt) {
        b.threads = calloc(nt, sizeof *b.threads);
        rec_off = calloc(nt, sizeof *rec_off);
        if (!b.threads || !rec_off) {
            e = BL_ENOMEM;
            goto out;
        }
    }
    b.n_threads = (uint32_t)nt;
    for (size_t t = 0; t < nt; t++) {
        jpush(&c, NULL, t);
        if ((e = j_thread(&c, json_array_get(threads, t), &b.threads[t], &recs, &rec_off[t])))
            goto out;
        jpop(&c);
    }
    jpop(&c);
    for (size_t t = 0; t < nt; t++)
        b.threads[t].records = recs.data ? (const uint8_t *)recs.data + rec_off[t] : NULL;

    const json_t *events = json_object_get(root, "events");
    if (events && !json_is_array(events)) {
        e = jfail_in(&c, "events", 0, "events: must be an array");
        goto out;
    }
    jpush(&c, "events", 0);
    for (size_t i = 0; i < json_array_size(events); i++) {
        if ((e = j_event(&c, json_array_get(events, i), i, &lines))) {
            if (e == BL_ETOOBIG) {
                c.err->offset = locate(c.text, c.len, c.path, c.depth);
                c.err->message = "events: more than 4 GiB of lines";
            }
            goto out;
        }
    }
    jpop(&c);
    b.events.p = lines.data ? lines.data : "";
    b.events.n = (uint32_t)lines.len;
    b.version = BL_BATCH_VERSION;

    e = bl_batch_encode(&b, out);
out:
    json_decref(root);
    free(b.threads);
    free(rec_off);
    bl_buf_cleanup(&recs);
    bl_buf_cleanup(&lines);
    return e;
}

/* ------------------------------------------------------------------------ */
/* binary → JSON                                                             */

/* A writer with a sticky error: after the first failure appends do nothing
 * and `e` says why. */
typedef struct jw {
    bl_buf *b;
    bl_err e;
} jw;

static void w_raw(jw *w, const char *p, size_t n)
{
    if (!w->e && n)
        w->e = bl_buf_append(w->b, p, n);
}

static void w_lit(jw *w, const char *s)
{
    w_raw(w, s, strlen(s));
}

static void w_u64(jw *w, uint64_t v)
{
    if (!w->e)
        w->e = bl_buf_put_u64(w->b, v);
}

static void w_i64(jw *w, int64_t v)
{
    if (v < 0) {
        w_raw(w, "-", 1);
        w_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        w_u64(w, (uint64_t)v);
    }
}

/* A JSON string: '"', '\\' and control characters escaped, UTF-8 as is. */
static void w_str(jw *w, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    if (n == 0) {
        w_raw(w, "\"\"", 2);
        return;
    }
    w_raw(w, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        w_raw(w, p + run, i - run);
        run = i + 1;
        char esc[6] = { '\\', 0, 0, 0, 0, 0 };
        size_t en = 2;
        switch (ch) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[ch >> 4];
            esc[5] = hex[ch & 15];
            en = 6;
            break;
        }
        w_raw(w, esc, en);
    }
    w_raw(w, p + run, n - run);
    w_raw(w, "\"", 1);
}

/* Decimal digits of v at the end of tmp[0..24); returns where they start. */
static char *utoa_end(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

/* One record line: `   [methodId,"i",t_us]`, comma-terminated unless last. */
static void w_record(jw *w, uint64_t rec, int last)
{
    char line[64];
    char num[24];
    size_t n = 0;
    memcpy(line, "   [", 4);
    n = 4;
    char *d = utoa_end(num + sizeof num, bl_rec_method(rec));
    memcpy(line + n, d, (size_t)(num + sizeof num - d));
    n += (size_t)(num + sizeof num - d);
    memcpy(line + n, bl_rec_is_exit(rec) ? ",\"o\"," : ",\"i\",", 5);
    n += 5;
    d = utoa_end(num + sizeof num, bl_rec_time(rec));
    memcpy(line + n, d, (size_t)(num + sizeof num - d));
    n += (size_t)(num + sizeof num - d);
    memcpy(line + n, last ? "]\n" : "],\n", last ? 2 : 3);
    n += last ? 2 : 3;
    w_raw(w, line, n);
}

/* One events line: a JSON object re-written compactly, anything else as a
 * string holding the raw line. */
static void w_event(jw *w, const char *p, size_t n)
{
    json_t *j = json_loadb(p, n, JFLAGS, NULL);
    if (j && json_is_object(j)) {
        dump_ctx d = { w->b, BL_OK };
        if (!w->e && json_dump_callback(j, dump_cb, &d, JSON_COMPACT) != 0)
            w->e = d.e ? d.e : BL_ENOMEM;
    } else {
        w_str(w, p, n);
    }
    json_decref(j);
}

bl_err bl_batch_to_json(const bl_batch *b, bl_buf *out)
{
    assert(b && out);
    const bl_str *strs[5] = { &b->app, &b->build, &b->session_id, &b->device_model,
                              &b->os_version };
    for (int i = 0; i < 5; i++)
        if (!str_valid(*strs[i]))
            return BL_EINVAL;
    if ((b->n_threads && !b->threads) || !str_valid(b->events))
        return BL_EINVAL;
    for (uint32_t i = 0; i < b->n_threads; i++)
        if (!str_valid(b->threads[i].name) || (b->threads[i].n_records && !b->threads[i].records))
            return BL_EINVAL;

    size_t start = out->len;
    jw w = { out, BL_OK };
    char id[37];
    bl_uuid_format(b->batch_id, id);
    w_lit(&w, "{\n \"batch_id\":\"");
    w_lit(&w, id);
    w_lit(&w, "\",\n \"app\":");
    w_str(&w, b->app.p, b->app.n);
    w_lit(&w, ",\n \"build\":");
    w_str(&w, b->build.p, b->build.n);
    w_lit(&w, ",\n \"session_id\":");
    w_str(&w, b->session_id.p, b->session_id.n);
    w_lit(&w, ",\n \"origin_wall_us\":");
    w_i64(&w, b->origin_wall_us);
    w_lit(&w, ",\n \"device\":{\"model\":");
    w_str(&w, b->device_model.p, b->device_model.n);
    w_lit(&w, ",\"os\":");
    w_str(&w, b->os_version.p, b->os_version.n);
    w_lit(&w, ",\"sdk\":");
    w_u64(&w, b->sdk_level);
    w_lit(&w, "},\n \"threads\":[");
    for (uint32_t i = 0; i < b->n_threads && !w.e; i++) {
        const bl_batch_thread *t = &b->threads[i];
        int64_t tid;
        memcpy(&tid, &t->id, 8); /* JSON shows the id as a signed (Java) long */
        w_lit(&w, i ? ",\n  {\"id\":" : "\n  {\"id\":");
        w_i64(&w, tid);
        w_lit(&w, ",\"name\":");
        w_str(&w, t->name.p, t->name.n);
        w_lit(&w, t->main ? ",\"main\":true" : ",\"main\":false");
        w_lit(&w, t->truncated ? ",\"truncated\":true" : ",\"truncated\":false");
        if (t->continues)
            w_lit(&w, ",\"continues\":true");
        if (t->n_carried) {
            w_lit(&w, ",\"carried\":");
            w_u64(&w, t->n_carried);
            w_lit(&w, ",\"since_us\":");
            w_u64(&w, t->since_us);
        }
        w_lit(&w, ",\"records\":[");
        if (t->n_records) {
            w_raw(&w, "\n", 1);
            for (uint32_t r = 0; r < t->n_records && !w.e; r++)
                w_record(&w, bl_batch_record(t, r), r + 1 == t->n_records);
            w_raw(&w, "  ", 2);
        }
        w_lit(&w, "]}");
    }
    w_lit(&w, b->n_threads ? "\n ],\n \"events\":[" : "],\n \"events\":[");
    const char *p = b->events.p, *end = b->events.n ? p + b->events.n : p;
    int first = 1;
    while (p < end && !w.e) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        w_lit(&w, first ? "\n  " : ",\n  ");
        w_event(&w, p, n);
        first = 0;
        p = nl ? nl + 1 : end;
    }
    w_lit(&w, first ? "]\n}\n" : "\n ]\n}\n");
    if (w.e)
        buf_truncate(out, start);
    return w.e;
}
