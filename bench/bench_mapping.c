/*
 * bench_mapping — mapping parse + index build throughput, and RSS / speed of
 * lookups served from the mmapped index, side by side with their anchors.
 *
 *   bench_mapping MAPPING [LOOKUPS]
 *
 * Prints, for MAPPING (best of 3 runs each):
 *   anchor  memchr line split of the same bytes (MB/s): reading is the limit
 *   parse   bl_mapindex_build, in memory (MB/s)
 *   serve   a fresh process mmaps the index and retraces LOOKUPS random
 *           frames taken from the mapping: frames/s, VmRSS and VmHWM (peak)
 *
 * `bench_mapping --serve INDEX LOOKUPS` is the child half (internal).
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"

extern char **environ;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':')
            v = strtol(line + kl + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int serve(const char *index, long lookups)
{
    long rss0 = status_kb("VmRSS");
    bl_mapindex *mi;
    if (bl_mapindex_open(index, &mi)) {
        fprintf(stderr, "cannot open %s\n", index);
        return 1;
    }
    const bl_mi_header *h = bl_mapindex_header(mi);
    bl_retracer *rt;
    if (bl_retracer_new(mi, NULL, &rt))
        return 1;
    /* frames: a random class, a random method entry of it, a line inside */
    double t0 = now_s();
    long frames = 0, resolved = 0, rss_10k = -1, rss_100 = -1;
    for (long i = 0; i < lookups; i++) {
        if (i == 100)
            rss_100 = status_kb("VmRSS");
        if (i == 10000)
            rss_10k = status_kb("VmRSS");
        const bl_mi_class *c = bl_mapindex_class_at(mi, (uint32_t)(next_rand() % h->n_classes));
        const bl_mi_method *ms;
        uint32_t n = bl_mapindex_class_methods(mi, c, &ms);
        if (!n)
            continue;
        const bl_mi_method *m = &ms[next_rand() % n];
        int64_t line = (m->flags & BL_MIM_HAS_MIN)
                           ? (int64_t)(m->min_start + next_rand() % (m->min_end - m->min_start + 1))
                           : -1;
        const bl_rframe *fr;
        const uint32_t *alt;
        uint32_t nalt;
        int known;
        bl_retracer_frame(rt, bl_mapindex_str(mi, c->obf), bl_mapindex_strlen(mi, c->obf),
                          bl_mapindex_str(mi, m->obf), bl_mapindex_strlen(mi, m->obf), line, &fr,
                          &alt, &nalt, &known);
        frames++;
        resolved += nalt > 0;
    }
    double t1 = now_s();
    long rss1 = status_kb("VmRSS"), hwm = status_kb("VmHWM");
    long anon = status_kb("RssAnon"), file = status_kb("RssFile");
    struct stat st;
    stat(index, &st);
    printf("serve   %-28s %12.0f frames/s  (%ld frames, %ld resolved)\n", "mmap index + retrace",
           (double)frames / (t1 - t0), frames, resolved);
    printf("serve   %-28s %9.1f MB index; RSS %.1f MB before open, %.1f MB after 100 random"
           " frames (one stack trace), %.1f MB after 10k, %.1f MB after all (peak %.1f MB)\n",
           "memory", (double)st.st_size / 1e6, rss0 / 1024.0, rss_100 / 1024.0, rss_10k / 1024.0,
           rss1 / 1024.0, hwm / 1024.0);
    printf("serve   %-28s %9.1f MB anonymous (heap, stacks) + %.1f MB file-backed (clean page"
           " cache of the index and the binary, reclaimable)\n",
           "RSS split", anon / 1024.0, file / 1024.0);
    bl_retracer_free(rt);
    bl_mapindex_close(mi);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--serve"))
        return serve(argv[2], atol(argv[3]));
    if (argc < 2) {
        fprintf(stderr, "usage: bench_mapping MAPPING [LOOKUPS]\n");
        return 2;
    }
    long lookups = argc > 2 ? atol(argv[2]) : 1000000;
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || st.st_size == 0) {
        perror(argv[1]);
        return 1;
    }
    size_t len = (size_t)st.st_size;
    char *data = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    double mb = (double)len / 1e6, best_anchor = 1e9, best_parse = 1e9;
    size_t lines = 0;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        size_t n = 0;
        const char *p = data, *e = data + len;
        while (p < e) {
            const char *q = memchr(p, '\n', (size_t)(e - p));
            n++;
            p = q ? q + 1 : e;
        }
        double t = now_s() - t0;
        lines = n;
        if (t < best_anchor)
            best_anchor = t;
    }
    bl_buf img;
    bl_buf_init(&img, 0);
    bl_mi_stats ms;
    for (int r = 0; r < 3; r++) {
        bl_buf_reset(&img);
        double t0 = now_s();
        if (bl_mapindex_build(data, len, NULL, &img, &ms)) {
            fprintf(stderr, "build failed\n");
            return 1;
        }
        double t = now_s() - t0;
        if (t < best_parse)
            best_parse = t;
    }
    printf("mapping %-28s %9.1f MB, %zu lines, %u classes, %u method entries\n", argv[1], mb,
           lines, ms.classes, ms.methods);
    printf("anchor  %-28s %9.0f MB/s\n", "memchr line split", mb / best_anchor);
    printf("parse   %-28s %9.0f MB/s  (%.0f ms; index %.1f MB)\n", "parse + index build",
           mb / best_parse, best_parse * 1e3, (double)img.len / 1e6);
    char idx[] = "/tmp/bench-mapping-XXXXXX";
    int ifd = mkstemp(idx);
    if (ifd < 0 || write(ifd, img.data, img.len) != (ssize_t)img.len) {
        perror("index");
        return 1;
    }
    close(ifd);
    bl_buf_cleanup(&img);
    munmap(data, len);
    fflush(stdout);
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%ld", lookups);
    char *args[] = { "bench_mapping", "--serve", idx, nbuf, NULL };
    pid_t pid;
    int rc = 1;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) == 0) {
        int status;
        waitpid(pid, &status, 0);
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    unlink(idx);
    return rc;
}
