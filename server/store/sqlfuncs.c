/*
 * sqlfuncs.c — sketch functions for SQL (see sqlfuncs.h).
 */
#include "store/sqlfuncs.h"
#include "store/internal.h"

#include <stdlib.h>

#include "agg/sketch.h"
#include "common/buf.h"

static int add_arg(bl_sketch *s, sqlite3_value *v)
{
    if (sqlite3_value_type(v) == SQLITE_NULL)
        return 0;
    const void *p = sqlite3_value_blob(v);
    int n = sqlite3_value_bytes(v);
    return bl_sketch_merge_blob(s, p, (size_t)n) == BL_OK ? 0 : -1;
}

static void result_sketch(sqlite3_context *ctx, const bl_sketch *s)
{
    bl_buf b;
    bl_buf_init(&b, 0);
    if (bl_sketch_serialize(s, &b) != BL_OK) {
        sqlite3_result_error_nomem(ctx);
    } else {
        sqlite3_result_blob(ctx, b.data, (int)b.len, SQLITE_TRANSIENT);
    }
    bl_buf_cleanup(&b);
}

/* an empty sketch (version 2, no buckets) */
static const char empty_blob[4] = { 2, BL_SKETCH_SUB_BITS, 0, 0 };

static void f_merge(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const void *p[2];
    size_t n[2];
    for (int i = 0; i < 2; i++) {
        if (sqlite3_value_type(argv[i]) == SQLITE_NULL) {
            p[i] = empty_blob;
            n[i] = sizeof empty_blob;
        } else {
            p[i] = sqlite3_value_blob(argv[i]);
            n[i] = (size_t)sqlite3_value_bytes(argv[i]);
        }
    }
    bl_buf b;
    bl_buf_init(&b, 0);
    bl_err e = bl_sketch_blob_merge(p[0], n[0], p[1], n[1], &b);
    if (e == BL_ENOMEM)
        sqlite3_result_error_nomem(ctx);
    else if (e)
        sqlite3_result_error(ctx, "sketch_merge: malformed sketch", -1);
    else
        sqlite3_result_blob(ctx, b.data, (int)b.len, SQLITE_TRANSIENT);
    bl_buf_cleanup(&b);
}

const double bl_sql_q3_levels[3] = { 0.50, 0.90, 0.99 };

void bl_sql_q3_pack(const uint64_t v[3], uint64_t max, uint8_t out[24])
{
    for (int i = 0; i < 3; i++) {
        uint64_t x = v[i] < max ? v[i] : max;
        for (int k = 0; k < 8; k++)
            out[i * 8 + k] = (uint8_t)(x >> (8 * k));
    }
}

bl_err bl_sql_q3(const void *blob, size_t len, uint64_t max, uint8_t out[24])
{
    uint64_t v[3];
    bl_err err = bl_sketch_blob_quantiles(blob, len, bl_sql_q3_levels, 3, v);
    if (err)
        return err;
    bl_sql_q3_pack(v, max, out);
    return BL_OK;
}

static void f_q3(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const void *p = sqlite3_value_blob(argv[0]);
    int n = sqlite3_value_bytes(argv[0]);
    uint8_t out[24];
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || !p ||
        bl_sql_q3(p, (size_t)n, (uint64_t)sqlite3_value_int64(argv[1]), out) != BL_OK) {
        sqlite3_result_error(ctx, "sketch_q3: malformed sketch", -1);
        return;
    }
    sqlite3_result_blob(ctx, out, sizeof out, SQLITE_TRANSIENT);
}

static void f_union_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    bl_sketch **sp = sqlite3_aggregate_context(ctx, sizeof *sp);
    if (!sp) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (!*sp) {
        *sp = malloc(sizeof **sp);
        if (!*sp) {
            sqlite3_result_error_nomem(ctx);
            return;
        }
        bl_sketch_init(*sp);
    }
    if (add_arg(*sp, argv[0]) != 0)
        sqlite3_result_error(ctx, "sketch_union: malformed sketch", -1);
}

static void f_union_final(sqlite3_context *ctx)
{
    bl_sketch **sp = sqlite3_aggregate_context(ctx, 0);
    if (!sp || !*sp) {
        sqlite3_result_null(ctx);
        return;
    }
    result_sketch(ctx, *sp);
    bl_sketch_cleanup(*sp);
    free(*sp);
    *sp = NULL;
}

static void f_quantile(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    bl_sketch s;
    bl_sketch_init(&s);
    if (add_arg(&s, argv[0]) != 0) {
        sqlite3_result_error(ctx, "sketch_quantile: malformed sketch", -1);
    } else {
        double q = sqlite3_value_double(argv[1]);
        sqlite3_result_int64(ctx, (sqlite3_int64)bl_sketch_quantile(&s, q));
    }
    bl_sketch_cleanup(&s);
}

/* sat_sum(x): the exact sum of integer x over the rows when it fits an
 * int64, else INT64_MAX (INT64_MIN below); 0 over no row, NULLs skipped, a
 * REAL read as an integer (saturated). The sum is kept as a wrapped int64
 * and a count of wraps (+1 past the top, -1 past the bottom), so it is
 * exact whatever the order of the rows. */
typedef struct {
    int64_t acc;
    int64_t wraps;
} satsum;

static void f_satsum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    satsum *s = sqlite3_aggregate_context(ctx, sizeof *s);
    if (!s) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    int64_t v = sqlite3_value_int64(argv[0]), r;
    if (__builtin_add_overflow(s->acc, v, &r))
        s->wraps += v > 0 ? 1 : -1;
    s->acc = r;
}

static void f_satsum_final(sqlite3_context *ctx)
{
    satsum *s = sqlite3_aggregate_context(ctx, 0);
    if (!s)
        sqlite3_result_int64(ctx, 0);
    else
        sqlite3_result_int64(ctx, s->wraps > 0 ? INT64_MAX : s->wraps < 0 ? INT64_MIN : s->acc);
}

int bl_sql_register(sqlite3 *db)
{
    int rc = sqlite3_create_function_v2(db, "sketch_merge", 2,
                                        SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_merge, NULL,
                                        NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, "sketch_union", 1,
                                        SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                        f_union_step, f_union_final, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, "sketch_q3", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                        NULL, f_q3, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, "sketch_quantile", 2,
                                        SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_quantile,
                                        NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, "sat_sum", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                        NULL, NULL, f_satsum_step, f_satsum_final, NULL);
    return rc;
}
