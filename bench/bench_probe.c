/*
 * bench_probe.c — throughput of the instrumenter core alone: every class of
 * a jar is read into memory once (libzip), then each round parses every class
 * (bl_cf_parse) and instruments every method (bl_probe_instrument, ids
 * 1, 2, ...), single-threaded. Prints the best and median round.
 *
 *   bench_probe JAR [ROUNDS] [parse]
 *
 * With `parse`, each round only parses (to split the cost).
 *
 * Run side by side with its ASM anchor by bench/probe-core-bench.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zip.h>

#include "classfile.h"
#include "probe.h"

typedef struct cls {
    uint8_t *d;
    size_t n;
} cls;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_probe JAR [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 10;
    int parse_only = argc > 3 && strcmp(argv[3], "parse") == 0;
    if (rounds < 1 || rounds > 1000)
        rounds = 10;
    int zerr;
    zip_t *z = zip_open(argv[1], ZIP_RDONLY, &zerr);
    if (!z) {
        fprintf(stderr, "%s: cannot open\n", argv[1]);
        return 1;
    }
    zip_int64_t ne = zip_get_num_entries(z, 0);
    cls *c = calloc((size_t)ne + 1, sizeof *c);
    size_t nc = 0, bytes = 0;
    for (zip_int64_t i = 0; c && i < ne; i++) {
        zip_stat_t st;
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0)
            continue;
        size_t l = strlen(st.name);
        if (l < 6 || strcmp(st.name + l - 6, ".class") != 0 || strncmp(st.name, "META-INF/", 9) == 0)
            continue;
        zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)i, 0);
        uint8_t *d = malloc(st.size ? st.size : 1);
        if (!f || !d || zip_fread(f, d, st.size) != (zip_int64_t)st.size) {
            fprintf(stderr, "%s: cannot read\n", st.name);
            return 1;
        }
        zip_fclose(f);
        c[nc].d = d;
        c[nc++].n = st.size;
        bytes += st.size;
    }
    zip_close(z);
    if (!c || !nc)
        return 1;
    uint32_t *ids = malloc(65536 * sizeof *ids);
    double *t = malloc((size_t)rounds * sizeof *t);
    if (!ids || !t)
        return 1;
    bl_probe_opts o = {"io/beatline/runtime/Beatline", NULL, NULL, 0}; /* guarded, the default */
    bl_buf out;
    bl_buf_init(&out, 0);
    size_t methods = 0, out_bytes = 0;
    char err[256];
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        uint32_t next = 1;
        methods = out_bytes = 0;
        for (size_t i = 0; i < nc; i++) {
            bl_cf *cf;
            if (bl_cf_parse(c[i].d, c[i].n, &cf, err, sizeof err) != BL_OK) {
                fprintf(stderr, "parse: %s\n", err);
                return 1;
            }
            size_t nm = bl_cf_method_count(cf), done = 0;
            if (parse_only) {
                bl_cf_free(cf);
                continue;
            }
            for (size_t k = 0; k < nm; k++)
                ids[k] = next++ & BL_PROBE_MAX_ID;
            bl_buf_reset(&out);
            if (bl_probe_instrument(cf, ids, &o, &out, &done, err, sizeof err) != BL_OK) {
                fprintf(stderr, "instrument: %s\n", err);
                return 1;
            }
            methods += done;
            out_bytes += out.len;
            bl_cf_free(cf);
        }
        t[r] = now() - t0;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp_d);
    printf("beatline core%s: %zu classes, %.2f MB in, %.2f MB out, %zu methods; best %.1f ms "
           "(%.0f MB/s, %.0f classes/s), median %.1f ms, %d rounds\n",
           parse_only ? " (parse only)" : "", nc, bytes / 1e6, out_bytes / 1e6, methods, t[0] * 1e3, bytes / 1e6 / t[0],
           nc / t[0], t[rounds / 2] * 1e3, rounds);
    bl_buf_cleanup(&out);
    for (size_t i = 0; i < nc; i++)
        free(c[i].d);
    free(c);
    free(ids);
    free(t);
    return 0;
}
