/*
 * h_method.c — GET /v1/apps/{app}/method-histogram: the distribution of one
 * method's call durations (inclusive µs per call), for the dashboard's
 * method page (docs/api.md "Queries").
 *
 * The merged sketch (agg/sketch.h: 64 buckets per power of two) is
 * answered in coarser buckets, 8 per power of two (each at most 12.5% of
 * its lower bound wide; below 8 µs one per µs): a fine bucket lies wholly
 * inside one coarse bucket, so counts are exact per coarse bucket.
 */
#include "http/internal.h"

#include <stdio.h>
#include <string.h>

#include "agg/sketch.h"
#include "store/builds.h"
#include "store/method_hist.h"

#define COARSE_BITS 3 /* 8 buckets per power of two */

/* the coarse bucket of a value and its bounds [lo, hi] */
static uint32_t coarse_of(uint64_t v, uint64_t *lo, uint64_t *hi)
{
    if (v < (1u << COARSE_BITS)) {
        *lo = *hi = v;
        return (uint32_t)v;
    }
    int e = 63 - __builtin_clzll(v);
    int shift = e - COARSE_BITS;
    uint64_t sub = (v >> shift) & ((1u << COARSE_BITS) - 1);
    *lo = ((uint64_t)(1u << COARSE_BITS) + sub) << shift;
    *hi = *lo + (((uint64_t)1 << shift) - 1);
    return (uint32_t)((e - COARSE_BITS + 1) * (1 << COARSE_BITS) + sub);
}

enum MHD_Result bl_h_method_hist(struct MHD_Connection *c, bl_http *h, req *r)
{
    char err[200];
    const char *build = bl_arg(c, "build"), *method = bl_arg(c, "method");
    int main_only;
    if (bl_arg_thread(c, &main_only, err, sizeof err))
        return bl_reply_error(c, h, 400, err);
    int64_t since, until;
    if (bl_arg_i64(c, "since", 0, 0, INT64_MAX / 1000000, &since, err, sizeof err) ||
        bl_arg_i64(c, "until", INT64_MAX / 1000000, 0, INT64_MAX / 1000000, &until, err,
                   sizeof err))
        return bl_reply_error(c, h, 400, err);
    /* method: class.name or class.name(descriptor), as call-tree's root */
    char cls[512], name[256];
    const char *desc = NULL;
    if (bl_parse_method(method ? method : "", cls, sizeof cls, name, sizeof name, &desc))
        return bl_reply_error(c, h, 400,
                              "'method' must be class.method or class.method(descriptor)");
    enum MHD_Result rc;
    bl_db *db = bl_http_db_build(c, h, r, build, &rc);
    if (!db)
        return rc;
    bl_method_hist_query q = { r->app_id, build, main_only, since * 1000000,
                               until > INT64_MAX / 1000000 - 1 ? INT64_MAX : until * 1000000,
                               cls, name, desc };
    bl_sketch sk;
    bl_sketch_init(&sk);
    int64_t count = 0;
    uint64_t max_us = 0;
    bl_err e = bl_db_read_begin(db); /* one snapshot (a rebuild step may commit meanwhile) */
    if (!e) {
        e = bl_method_hist(db, &q, &sk, &count, &max_us);
        bl_db_read_end(db);
    }
    if (e) {
        bl_sketch_cleanup(&sk);
        return bl_reply_error(c, h, e == BL_ENOMEM ? 503 : 500,
                              e == BL_ENOMEM ? "out of memory" : "database error");
    }
    json_t *o = json_pack("{s:o,s:o,s:s,s:o,s:I,s:I,s:[]}", "app", bl_json_text(r->app), "build",
                          build ? bl_json_text(build) : json_null(), "thread",
                          main_only ? "main" : "all", "method", bl_json_text(method), "count",
                          (json_int_t)count, "max_us", (json_int_t)max_us, "buckets");
    json_t *list = o ? json_object_get(o, "buckets") : NULL;
    if (list && sk.count) {
        /* fine buckets in order; a run of them in one coarse bucket is summed */
        uint64_t run = 0, lo = 0, hi = 0;
        uint32_t cur = UINT32_MAX;
        for (uint32_t b = sk.lo; b <= sk.hi && list; b++) {
            if (!sk.bucket[b])
                continue;
            uint64_t l, u;
            uint32_t cb = coarse_of(bl_sketch_bucket_mid(b), &l, &u);
            if (cb != cur && run) {
                if (json_array_append_new(list, json_pack("{s:I,s:I,s:I}", "lo_us", (json_int_t)lo,
                                                          "hi_us", (json_int_t)hi, "count",
                                                          (json_int_t)run)) != 0)
                    list = NULL;
                run = 0;
            }
            cur = cb;
            lo = l;
            hi = u;
            run += sk.bucket[b];
        }
        if (list && run &&
            json_array_append_new(list, json_pack("{s:I,s:I,s:I}", "lo_us", (json_int_t)lo, "hi_us",
                                                  (json_int_t)hi, "count", (json_int_t)run)) != 0)
            list = NULL;
    }
    bl_sketch_cleanup(&sk);
    if (!list) {
        json_decref(o);
        return bl_reply_error(c, h, 503, "out of memory");
    }
    return bl_reply_json(c, h, 200, o);
}
