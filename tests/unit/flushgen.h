/*
 * flushgen.h — random method_stats rows as the writer's flush hands them to
 * the store (store/writer.h bl_wr_stat), for the rollups tests
 * (rollups_test.c; rollups_pg_test.c, which compares SQLite and PostgreSQL).
 * Header-only, like testutil.h. Failures are Check assertions.
 */
#ifndef BL_FLUSHGEN_H
#define BL_FLUSHGEN_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "agg/sketch.h"
#include "common/buf.h"
#include "store/writer.h"

/* Fills rows[i] with a random row whose key differs from rows[0..i): build
 * 1..3, method build * 100 + 0..methods-1, main 0/1, hour (µs) in
 * [base_hour, base_hour + hours) hours; 0..5 calls (0: only a call still
 * running) of 1..300 or 1..200,000 µs, their sketch serialised into *blob
 * (initialised here; the caller frees it with bl_buf_cleanup) and pointed
 * to by rows[i].sketch / sketch_len (valid while *blob is unchanged), with
 * count, total_us, self_us and max_us to match. rng: the test's random
 * numbers. */
static inline void tu_flush_row(bl_wr_stat *rows, size_t i, bl_buf *blob, uint64_t (*rng)(void),
                                int64_t methods, int64_t base_hour, int64_t hours)
{
    bl_wr_stat *s = &rows[i];
    int dup;
    do { /* one row per key in a flush, as the aggregator gives */
        s->build_id = 1 + (int64_t)(rng() % 3);
        s->method = s->build_id * 100 + (int64_t)(rng() % (uint64_t)methods);
        s->main = (int)(rng() % 2);
        s->hour = (base_hour + (int64_t)(rng() % (uint64_t)hours)) * 3600000000ll;
        dup = 0;
        for (size_t j = 0; j < i; j++)
            dup |= rows[j].build_id == s->build_id && rows[j].method == s->method &&
                   rows[j].main == s->main && rows[j].hour == s->hour;
    } while (dup);
    bl_sketch sk;
    bl_sketch_init(&sk);
    int calls = (int)(rng() % 6); /* 0: only a call still running */
    uint64_t max = 0, total = 0;
    for (int c = 0; c < calls; c++) {
        uint64_t v = 1 + rng() % (rng() % 2 ? 300 : 200000);
        ck_assert_int_eq(bl_sketch_add(&sk, v, 1), BL_OK);
        max = v > max ? v : max;
        total += v;
    }
    bl_buf_init(blob, 0);
    ck_assert_int_eq(bl_sketch_serialize(&sk, blob), BL_OK);
    bl_sketch_cleanup(&sk);
    s->count = calls;
    s->total_us = (int64_t)total;
    s->self_us = (int64_t)(total / 2 + rng() % 50);
    s->max_us = (int64_t)max;
    s->sketch = blob->data;
    s->sketch_len = blob->len;
}

#endif
