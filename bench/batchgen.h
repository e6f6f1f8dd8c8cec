/*
 * batchgen.h — synthetic but realistic batches for benchmarks: balanced
 * call trees (depth up to 24, a few thousand distinct methods, Zipf-like
 * method popularity), a main thread and worker threads, µs timestamps.
 * Header-only, shared by bench_ingest.c and bench_http.c.
 */
#ifndef BENCH_BATCHGEN_H
#define BENCH_BATCHGEN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "ingest/batch.h"

static uint64_t bg_rng = 0x9E3779B97F4A7C15ull;

/* Wall clock origin of the next batch bg_batch encodes (µs since the
 * epoch); bench_http's spread mode moves it per batch. */
#define BG_ORIGIN_US 1795960000000000ll
static int64_t bg_origin_us = BG_ORIGIN_US;
static inline uint64_t bg_next(void)
{
    bg_rng ^= bg_rng << 13;
    bg_rng ^= bg_rng >> 7;
    bg_rng ^= bg_rng << 17;
    return bg_rng;
}

/* A fixed program: method m calls 1-4 callees of its own (derived from m),
 * so that, as in a real app, the same call paths come back again and again;
 * 64 entry points (event handlers) are picked with a skewed popularity. */
static inline uint32_t bg_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static inline uint32_t bg_callee(uint32_t m, uint32_t j, uint32_t n_methods)
{
    return 1 + bg_hash(m * 8 + j + 1) % n_methods;
}

/* Records of one thread: n records (even), methods 1..n_methods. A call
 * edge parent -> child repeats 1-4 times in a row (loops), a fixed number
 * per edge, as code in a loop does. */
static inline void bg_thread_records(uint64_t *rec, uint32_t n, uint32_t n_methods)
{
    uint32_t stack[32], again[32], depth = 0, i = 0;
    uint64_t t = 0;
    while (i < n) {
        uint32_t left = n - i;
        int can_enter = depth < 24 && left > depth + 1;
        uint32_t m = 0;
        if (depth > 0 && again[depth - 1] > 0 && can_enter) {
            /* the loop in the caller calls the same child again */
            again[depth - 1]--;
            m = stack[depth];
        } else if (depth == 0 || (can_enter && bg_next() % 100 < 45)) {
            if (depth == 0) {
                uint64_t r = bg_next();
                uint32_t root = (uint32_t)(((r >> 32) % 64) * ((r & 0xffff) % 64) / 64);
                m = 1 + bg_hash(root + 1000003) % n_methods;
            } else {
                uint32_t top = stack[depth - 1];
                uint32_t fan = 1 + bg_hash(top) % 3;
                m = bg_callee(top, (uint32_t)(bg_next() % fan), n_methods);
                again[depth - 1] = bg_hash(top * 31 + m) % 4;
            }
        }
        if (m) {
            stack[depth] = m;
            again[depth] = 0;
            depth++;
            t += 1 + bg_next() % 20;
            rec[i++] = bl_rec_make(0, m, t);
        } else {
            if (depth > 0 && again[depth - 1] > 0)
                again[depth - 1] = 0; /* out of room: end the loop */
            t += 1 + bg_next() % 200;
            rec[i++] = bl_rec_make(1, stack[--depth], t);
        }
    }
}

/* Encodes one batch of about n_records records (main thread 60%, three
 * workers) with the given batch number as its id. */
static inline int bg_batch(bl_buf *out, uint32_t batch_no, uint32_t n_records,
                           uint32_t n_methods, const char *app, const char *build)
{
    bl_batch b;
    memset(&b, 0, sizeof b);
    b.version = 1;
    for (int i = 0; i < 16; i++)
        b.batch_id[i] = (uint8_t)(bg_next() >> 24);
    memcpy(b.batch_id, &batch_no, 4);
    b.batch_id[6] = (uint8_t)((b.batch_id[6] & 0x0f) | 0x40);
    b.batch_id[8] = (uint8_t)((b.batch_id[8] & 0x3f) | 0x80);
    b.origin_wall_us = bg_origin_us;
    b.sdk_level = 34;
    b.app.p = app;
    b.app.n = (uint32_t)strlen(app);
    b.build.p = build;
    b.build.n = (uint32_t)strlen(build);
    b.session_id.p = "bench";
    b.session_id.n = 5;
    b.device_model.p = "Pixel 8";
    b.device_model.n = 7;
    b.os_version.p = "14";
    b.os_version.n = 2;
    bl_batch_thread th[4];
    static const char *const names[4] = { "main", "worker-1", "worker-2", "worker-3" };
    uint64_t *recs[4];
    uint32_t share[4] = { n_records / 10 * 6, n_records / 10 * 2, n_records / 10, 0 };
    share[3] = n_records - share[0] - share[1] - share[2];
    for (int k = 0; k < 4; k++) {
        share[k] &= ~1u;
        recs[k] = malloc((share[k] ? share[k] : 1) * sizeof(uint64_t));
        if (!recs[k])
            return -1;
        bg_thread_records(recs[k], share[k], n_methods);
        memset(&th[k], 0, sizeof th[k]);
        th[k].id = (uint64_t)k + 1;
        th[k].name.p = names[k];
        th[k].name.n = (uint32_t)strlen(names[k]);
        th[k].main = k == 0;
        th[k].n_records = share[k];
        th[k].records = (const uint8_t *)recs[k];
        b.n_records += share[k];
    }
    b.n_threads = 4;
    b.threads = th;
    int rc = bl_batch_encode(&b, out) == BL_OK ? 0 : -1;
    for (int k = 0; k < 4; k++)
        free(recs[k]);
    return rc;
}

#endif
