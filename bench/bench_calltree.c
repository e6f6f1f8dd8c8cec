/*
 * bench_calltree — call-tree rebuild throughput (agg/calltree.h), side by
 * side with its anchor.
 *
 *   bench_calltree [RECORDS [CHUNK]]
 *
 * Generates RECORDS (default 10,000,000) enter/exit records of one thread:
 * balanced nesting that wanders around depth 12 (up to 64), 5,000 distinct
 * methods, 0–7 µs between records, stored at an odd address (the batch
 * format promises no alignment). Prints, best of 5 runs each:
 *   anchor  memcpy-load + sum of the same records (M records/s): the cost
 *           of just reading them
 *   tree    bl_calltree_build over all records as one thread
 *   chunks  the same records as consecutive threads of CHUNK records
 *           (default 4,096) with one reused bl_calltree, each chunk marked
 *           truncated (its head is cut off mid-stack, as in a wrapped ring)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg/calltree.h"
#include "ingest/batch.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t below)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % below);
}

/* Writes n records (n even) little-endian at p. */
static void generate(uint8_t *p, uint32_t n)
{
    uint32_t st[64], sp = 0;
    uint64_t t = 1000;
    for (uint32_t k = 0; k < n; k++) {
        int can_enter = k + sp + 2 <= n && sp < 64;
        /* enter with probability 1/2, nudged towards depth 12 */
        int enter = can_enter && (sp == 0 || (int)rnd(100) < 50 + (12 - (int)sp));
        uint64_t r;
        t += rnd(8);
        if (enter) {
            st[sp] = rnd(5000);
            r = bl_rec_make(0, st[sp++], t);
        } else {
            r = bl_rec_make(1, st[--sp], t);
        }
        for (int b = 0; b < 8; b++)
            p[(size_t)k * 8 + b] = (uint8_t)(r >> (8 * b));
    }
}

static uint64_t sink;

static double anchor_once(const uint8_t *p, uint32_t n)
{
    double t0 = now_s();
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, p + (size_t)i * 8, 8);
        s += v;
    }
    sink += s;
    return now_s() - t0;
}

static double tree_once(bl_calltree *t, const uint8_t *p, uint32_t n, uint32_t chunk)
{
    double t0 = now_s();
    for (uint32_t at = 0; at < n; at += chunk) {
        uint32_t m = n - at < chunk ? n - at : chunk;
        bl_err err = bl_calltree_build(t, p + (size_t)at * 8, m, chunk < n);
        if (err) {
            fprintf(stderr, "bl_calltree_build: %s\n", bl_err_str(err));
            exit(1);
        }
        sink += t->n_calls;
    }
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 10000000;
    uint32_t chunk = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4096;
    n &= ~1u;
    if (n == 0 || chunk == 0) {
        fprintf(stderr, "usage: bench_calltree [RECORDS [CHUNK]]\n");
        return 2;
    }
    uint8_t *buf = malloc((size_t)n * 8 + 1);
    if (!buf) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint8_t *p = buf + 1;
    generate(p, n);

    bl_calltree t;
    bl_calltree_init(&t);
    double best_a = 1e30, best_t = 1e30, best_c = 1e30;
    for (int run = 0; run < 5; run++) {
        double a = anchor_once(p, n), b = tree_once(&t, p, n, n), c = tree_once(&t, p, n, chunk);
        best_a = a < best_a ? a : best_a;
        best_t = b < best_t ? b : best_t;
        best_c = c < best_c ? c : best_c;
    }
    tree_once(&t, p, n, n);
    uint32_t max_depth = 0;
    for (uint32_t i = 0; i < t.n_calls; i++)
        max_depth = t.calls[i].depth > max_depth ? t.calls[i].depth : max_depth;
    printf("records %u (%u calls, max depth %u), chunk %u\n", n, t.n_calls, max_depth, chunk);
    printf("anchor  %8.1f M records/s  (memcpy-load + sum)\n", n / best_a / 1e6);
    printf("tree    %8.1f M records/s  (%.2f ns/record, %.1fx the anchor's time)\n",
           n / best_t / 1e6, best_t / n * 1e9, best_t / best_a);
    printf("chunks  %8.1f M records/s  (%.2f ns/record)\n", n / best_c / 1e6, best_c / n * 1e9);
    bl_calltree_cleanup(&t);
    free(buf);
    return sink == 42 ? 3 : 0;
}
