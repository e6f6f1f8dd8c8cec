/*
 * textout.c — answers written as text into a charged buffer (contract in
 * textout.h).
 */
#include "http/textout.h"

#include <string.h>

void bl_out_init(bl_out *o, req *r)
{
    o->r = r;
    bl_buf_init(&o->b, 0);
    o->e = BL_OK;
}

void bl_out_raw(bl_out *o, const char *s, size_t n)
{
    if (o->e)
        return;
    if (o->b.data && o->b.alloc - o->b.len > n && o->b.len + n <= o->b.cap_max) {
        /* room already charged and allocated (bl_buf: alloc >= len + 1,
         * NUL-terminated): the columns' 500,000 numbers mostly come here */
        memcpy(o->b.data + o->b.len, s, n);
        o->b.len += n;
        o->b.data[o->b.len] = '\0';
        return;
    }
    o->e = bl_req_append(o->r, &o->b, s, n);
}

void bl_out_str(bl_out *o, const char *s)
{
    bl_out_raw(o, s, strlen(s));
}

static int dump_cb(const char *p, size_t n, void *ctx)
{
    bl_out *o = ctx;
    bl_out_raw(o, p, n);
    return o->e ? -1 : 0;
}

/* Writes v in decimal, after a comma when sep (format=columns writes
 * 400,000 numbers for 100,000 nodes: snprintf was a tenth of the CPU). */
void bl_out_u64(bl_out *o, int sep, uint64_t v)
{
    char num[24];
    size_t k = sizeof num;
    do {
        num[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (sep)
        num[--k] = ',';
    bl_out_raw(o, num + k, sizeof num - k);
}

/* Writes v (stolen; NULL means out of memory) as compact JSON. */
void bl_out_json(bl_out *o, json_t *v)
{
    if (!v && !o->e)
        o->e = BL_ENOMEM;
    if (v && !o->e && json_dump_callback(v, dump_cb, o, JSON_COMPACT | JSON_ENCODE_ANY) != 0 &&
        !o->e)
        o->e = BL_ENOMEM;
    json_decref(v);
}

/* Answers the bytes as `type`, or 503 (budget spent / out of memory) when
 * writing failed; frees o either way. */
enum MHD_Result bl_out_reply_as(struct MHD_Connection *c, bl_http *h, bl_out *o,
                                const char *type)
{
    if (o->e) {
        bl_req_buf_free(o->r, &o->b);
        return bl_reply_error(c, h, 503, "not enough memory for this answer now; retry later "
                                         "or ask for fewer rows (limit)");
    }
    return bl_reply_buf(c, h, 200, type, &o->b);
}

/* out_reply_as JSON */
enum MHD_Result bl_out_reply(struct MHD_Connection *c, bl_http *h, bl_out *o)
{
    return bl_out_reply_as(c, h, o, "application/json");
}