/*
 * bench_slow_store — the slow-methods query's latency at the store, on
 * SQLite or PostgreSQL (issue 19): the same data under both shows what the
 * backend costs, without HTTP.
 *
 *   bench_slow_store STORE APP_ID REQUESTS QUERY...
 *
 * STORE: a SQLite path or a postgresql:// URL (opened read-only). QUERY:
 * "build=NAME&thread=main|all&since=S&until=S&sort=p50|…|max&limit=N" (any
 * subset; defaults as the HTTP API's: all builds, all threads, everything,
 * total, 50). Each query runs REQUESTS times in a read snapshot, as the
 * server does (bl_db_read_begin / end). Printed per query: rows, wall
 * p50/p99/max and this process's CPU per query (ms); on PostgreSQL the
 * server's own CPU is not in it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/db.h"
#include "store/slow_methods.h"

static int count_row(const bl_slow_row *r, void *ctx)
{
    (void)r;
    (*(int *)ctx)++;
    return 0;
}

static double now_ms(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s STORE APP_ID REQUESTS QUERY...\n", argv[0]);
        return 2;
    }
    char err[512];
    bl_db *db;
    if (bl_db_open(argv[1], 1, &db, err, sizeof err) != BL_OK) {
        fprintf(stderr, "bench_slow_store: %s\n", err);
        return 1;
    }
    int64_t app = strtoll(argv[2], NULL, 10);
    int n = atoi(argv[3]);
    if (n < 1)
        n = 1;
    double *lat = malloc((size_t)n * sizeof *lat);
    if (!lat)
        return 1;
    static const char *const sorts[BL_SLOW_SORTS] = { "p50", "p90", "p99", "count",
                                                      "total", "self", "max" };
    for (int a = 4; a < argc; a++) {
        char build[256] = "";
        bl_slow_query q = { app, NULL, 0, 0, INT64_MAX, BL_SLOW_TOTAL, 50 };
        char *s = strdup(argv[a]);
        if (!s)
            return 1;
        for (char *kv = strtok(s, "&"); kv; kv = strtok(NULL, "&")) {
            char *v = strchr(kv, '=');
            if (!v)
                continue;
            *v++ = 0;
            if (!strcmp(kv, "build")) {
                snprintf(build, sizeof build, "%s", v);
                q.build = build;
            } else if (!strcmp(kv, "thread")) {
                q.main_only = !strcmp(v, "main");
            } else if (!strcmp(kv, "since")) {
                q.since_us = strtoll(v, NULL, 10) * 1000000;
            } else if (!strcmp(kv, "until")) {
                q.until_us = strtoll(v, NULL, 10) * 1000000;
            } else if (!strcmp(kv, "limit")) {
                q.limit = strtoll(v, NULL, 10);
            } else if (!strcmp(kv, "sort")) {
                for (int k = 0; k < BL_SLOW_SORTS; k++)
                    if (!strcmp(v, sorts[k]))
                        q.sort = (bl_slow_sort)k;
            }
        }
        free(s);
        int rows = 0;
        double c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
        for (int i = 0; i < n; i++) {
            rows = 0;
            double t0 = now_ms(CLOCK_MONOTONIC);
            bl_err e = bl_db_read_begin(db);
            if (!e)
                e = bl_slow_methods(db, &q, count_row, &rows);
            bl_db_read_end(db);
            lat[i] = now_ms(CLOCK_MONOTONIC) - t0;
            if (e) {
                fprintf(stderr, "bench_slow_store: %s: error %d %s\n", argv[a], (int)e,
                        bl_db_errmsg(db));
                return 1;
            }
        }
        double cpu = (now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0) / n;
        qsort(lat, (size_t)n, sizeof *lat, cmp_d);
        printf("%-58s rows %3d  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  client CPU %6.2f ms/q\n",
               argv[a], rows, lat[n / 2], lat[(size_t)(n * 0.99) < (size_t)n ? (size_t)(n * 0.99) : (size_t)n - 1],
               lat[n - 1], cpu);
    }
    free(lat);
    bl_db_close(db);
    return 0;
}
