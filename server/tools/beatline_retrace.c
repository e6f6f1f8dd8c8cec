/*
 * beatline-retrace — retrace obfuscated Java stack traces with an R8 or
 * ProGuard mapping file (R8 retrace conventions, see symbol/retrace.h).
 *
 *   beatline-retrace [options] MAPPING [STACKTRACE]
 *
 * MAPPING is a mapping.txt or an index built with --build-index. The stack
 * trace is read from STACKTRACE or standard input; the result goes to
 * standard output, line for line in the same shape.
 *
 * Exit status: 0 success; 1 usage or I/O error; 2 malformed mapping line
 * with --strict.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fdio.h"
#include "symbol/mapindex.h"
#include "symbol/retrace.h"

#define MAX_TRACE_BYTES ((size_t)1 << 31) /* 2 GiB of stack-trace text */

static const char usage[] =
    "usage: beatline-retrace [options] MAPPING [STACKTRACE]\n"
    "\n"
    "Retraces an obfuscated Java stack trace (STACKTRACE, or standard input)\n"
    "with an R8/ProGuard mapping file and prints it with original class,\n"
    "method, file and line names, following R8 retrace's conventions.\n"
    "\n"
    "options:\n"
    "  --verbose            print full signatures: 'ret name(params)'\n"
    "  --strict             read and check every mapping line; fail (exit 2) on\n"
    "                       the first malformed one. Without it only the classes\n"
    "                       the stack trace mentions are read in full, and the\n"
    "                       malformed lines found are reported and skipped\n"
    "  --quiet              do not report malformed mapping lines\n"
    "  --stats              print parse figures (bytes, ms, MB/s) on stderr\n"
    "  --build-index FILE   write the mapping's index to FILE and exit; an\n"
    "                       index file can be given as MAPPING later\n"
    "  -h, --help           this text\n";

typedef struct diag_ctx {
    const char *path;
    int quiet;
    uint64_t shown;
} diag_ctx;

static void on_diag(void *ctx, const bl_mi_diag *d)
{
    diag_ctx *c = ctx;
    if (c->quiet)
        return;
    if (c->shown++ < 100)
        fprintf(stderr, "%s:%llu: %s\n", c->path, (unsigned long long)d->line, d->message);
    else if (c->shown == 101)
        fprintf(stderr, "%s: more problems not shown\n", c->path);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The set of class names a trace mentions (hashes; a false positive only
 * costs reading one more class). */
typedef struct class_set {
    uint64_t *slot; /* 0 = empty */
    size_t mask, n;
    int failed;
} class_set;

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then never 0 */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h | 1;
}

static void set_add(void *ctx, const char *cls, size_t n)
{
    class_set *s = ctx;
    if (s->failed)
        return;
    if ((s->n + 1) * 2 > s->mask + 1) {
        size_t cap = (s->mask + 1) * 2;
        uint64_t *ns = calloc(cap, sizeof *ns);
        if (!ns) {
            s->failed = 1;
            return;
        }
        for (size_t i = 0; i <= s->mask; i++)
            if (s->slot[i]) {
                size_t j = s->slot[i] & (cap - 1);
                while (ns[j])
                    j = (j + 1) & (cap - 1);
                ns[j] = s->slot[i];
            }
        free(s->slot);
        s->slot = ns;
        s->mask = cap - 1;
    }
    uint64_t h = name_hash(cls, n);
    size_t j = h & s->mask;
    while (s->slot[j] && s->slot[j] != h)
        j = (j + 1) & s->mask;
    if (!s->slot[j]) {
        s->slot[j] = h;
        s->n++;
    }
}

static int set_has(void *ctx, const char *cls, size_t n)
{
    const class_set *s = ctx;
    uint64_t h = name_hash(cls, n);
    for (size_t j = h & s->mask;; j = (j + 1) & s->mask) {
        if (s->slot[j] == h)
            return 1;
        if (!s->slot[j])
            return 0;
    }
}

int main(int argc, char **argv)
{
    bl_retrace_opts ropts = { 0 };
    int strict = 0, quiet = 0, stats = 0;
    const char *index_out = NULL, *mapping = NULL, *trace = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--verbose")) {
            ropts.verbose = 1;
        } else if (!strcmp(a, "--strict")) {
            strict = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--build-index")) {
            if (++i == argc) {
                fputs("beatline-retrace: --build-index needs a file name\n", stderr);
                return 1;
            }
            index_out = argv[i];
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "beatline-retrace: unknown option '%s'\n%s", a, usage);
            return 1;
        } else if (!mapping) {
            mapping = a;
        } else if (!trace) {
            trace = a;
        } else {
            fprintf(stderr, "beatline-retrace: too many arguments\n%s", usage);
            return 1;
        }
    }
    if (!mapping) {
        fputs(usage, stderr);
        return 1;
    }

    /* map the mapping (or index) file */
    int fd = open(mapping, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "beatline-retrace: %s: %s\n", mapping, strerror(errno));
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "beatline-retrace: %s: not a regular file\n", mapping);
        close(fd);
        return 1;
    }
    size_t mlen = (size_t)st.st_size;
    void *mdata = NULL;
    if (mlen) {
        mdata = mmap(NULL, mlen, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mdata == MAP_FAILED) {
            fprintf(stderr, "beatline-retrace: %s: %s\n", mapping, strerror(errno));
            close(fd);
            return 1;
        }
    }
    close(fd);

    int rc = 0;
    bl_buf img, in, outb;
    bl_buf_init(&img, 0);
    bl_buf_init(&in, MAX_TRACE_BYTES);
    bl_buf_init(&outb, 0);
    bl_mapindex *mi = NULL;
    bl_err err;
    class_set want = { NULL, 0, 0, 0 };

    /* the trace first: a one-shot retrace reads in full only the classes
     * it mentions (--strict reads and checks every line) */
    if (!index_out) {
        int tfd = 0;
        if (trace && (tfd = open(trace, O_RDONLY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "beatline-retrace: %s: %s\n", trace, strerror(errno));
            rc = 1;
            goto out;
        }
        bl_err re = bl_fd_read_all(tfd, &in);
        if (tfd > 0)
            close(tfd);
        if (re) {
            fprintf(stderr, "beatline-retrace: %s: %s\n", trace ? trace : "<stdin>",
                    re == BL_EIO ? strerror(errno) : bl_err_str(re));
            rc = 1;
            goto out;
        }
        if (!strict) {
            want.slot = calloc(64, sizeof *want.slot);
            want.mask = want.slot ? 63 : 0;
            want.failed = !want.slot;
            bl_retrace_trace_classes(in.data ? in.data : "", in.len, set_add, &want);
        }
    }
    if (mlen >= 8 && !memcmp(mdata, BL_MI_MAGIC, 8)) {
        err = bl_mapindex_from_memory(mdata, mlen, &mi);
        if (err) {
            fprintf(stderr, "beatline-retrace: %s: bad index: %s\n", mapping, bl_err_str(err));
            rc = 1;
            goto out;
        }
    } else {
        diag_ctx dc = { mapping, quiet, 0 };
        bl_mi_build_opts bo = { .strict = strict, .diag = on_diag, .diag_ctx = &dc };
        if (want.slot && !want.failed) {
            bo.want_class = set_has;
            bo.want_ctx = &want;
        }
        bl_mi_stats ms;
        double t0 = now_ms();
        err = bl_mapindex_build(mdata ? mdata : "", mlen, &bo, &img, &ms);
        double t1 = now_ms();
        if (err == BL_EFORMAT) {
            fprintf(stderr, "beatline-retrace: %s:%llu: malformed mapping line (--strict)\n",
                    mapping, (unsigned long long)ms.lines);
            rc = 2;
            goto out;
        }
        if (err) {
            fprintf(stderr, "beatline-retrace: %s: %s\n", mapping, bl_err_str(err));
            rc = 1;
            goto out;
        }
        if (ms.malformed && !quiet)
            fprintf(stderr, "beatline-retrace: %s: %llu malformed line(s) skipped\n", mapping,
                    (unsigned long long)ms.malformed);
        if (stats)
            fprintf(stderr,
                    "beatline-retrace: parsed %zu bytes, %llu lines, %u classes, %u methods, "
                    "%u fields in %.1f ms (%.0f MB/s); index %zu bytes\n",
                    mlen, (unsigned long long)ms.lines, ms.classes, ms.methods, ms.fields,
                    t1 - t0, (double)mlen / 1e6 / ((t1 - t0) / 1e3), img.len);
        if (index_out) {
            struct stat os;
            if (stat(index_out, &os) == 0 && os.st_dev == st.st_dev && os.st_ino == st.st_ino) {
                fprintf(stderr, "beatline-retrace: %s: the index would overwrite the mapping\n",
                        index_out);
                rc = 1;
                goto out;
            }
            FILE *f = fopen(index_out, "wb");
            if (!f || fwrite(img.data, 1, img.len, f) != img.len || fclose(f) != 0) {
                fprintf(stderr, "beatline-retrace: %s: %s\n", index_out, strerror(errno));
                rc = 1;
            }
            goto out;
        }
        err = bl_mapindex_from_memory(img.data, img.len, &mi);
        if (err) {
            fprintf(stderr, "beatline-retrace: internal error: %s\n", bl_err_str(err));
            rc = 1;
            goto out;
        }
    }
    if (index_out) {
        fputs("beatline-retrace: MAPPING is already an index\n", stderr);
        rc = 1;
        goto out;
    }

    /* retrace line by line, write in chunks */
    {
        bl_retracer *rt = NULL;
        if ((err = bl_retracer_new(mi, &ropts, &rt))) {
            fprintf(stderr, "beatline-retrace: %s\n", bl_err_str(err));
            rc = 1;
        }
        const char *p = in.data ? in.data : "", *e = p + in.len;
        while (!rc && p < e) {
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            const char *le = nl ? nl : e;
            if ((err = bl_retracer_line(rt, p, (size_t)(le - p), &outb))) {
                fprintf(stderr, "beatline-retrace: %s\n", bl_err_str(err));
                rc = 1;
                break;
            }
            if (!nl && outb.len && outb.data[outb.len - 1] == '\n')
                outb.len--; /* the input's last line had no newline */
            p = nl ? nl + 1 : e;
            if (outb.len >= (1 << 20) || p >= e) {
                if (bl_fd_write_all(1, outb.data, outb.len) != BL_OK) {
                    fprintf(stderr, "beatline-retrace: write: %s\n", strerror(errno));
                    rc = 1;
                }
                bl_buf_reset(&outb);
            }
        }
        bl_retracer_free(rt);
    }
out:
    bl_buf_cleanup(&in);
    bl_buf_cleanup(&outb);
    free(want.slot);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    if (mdata)
        munmap(mdata, mlen);
    return rc;
}
