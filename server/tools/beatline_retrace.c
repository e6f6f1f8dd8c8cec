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
 * Exit status: 0 success; 1 usage or I/O error, or a compressed MAPPING;
 * 2 malformed mapping line with --strict, or no class line at all (not a
 * mapping file).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/buf.h"
#include "common/fdio.h"
#include "symbol/mapindex.h"
#include "symbol/mapping.h"
#include "symbol/retrace.h"

#define MAX_TRACE_BYTES ((size_t)1 << 31) /* 2 GiB of stack-trace text */
#define MAX_PARTS 8                        /* retrace threads, at most */
#define PART_MIN_BYTES ((size_t)1 << 20)   /* split only traces of 1 MiB.. */
#define PART_MAX_BYTES ((size_t)1 << 28)   /* ..to 256 MiB */
#define PART_OUT_CAP ((size_t)32 << 20)    /* output a piece keeps before its
                                              turn, at most (it then waits) */

static const char usage[] =
    "usage: beatline-retrace [options] MAPPING [STACKTRACE]\n"
    "\n"
    "Retraces an obfuscated Java stack trace (STACKTRACE, or standard input\n"
    "when it is absent or '-')\n"
    "with an R8/ProGuard mapping file and prints it with original class,\n"
    "method, file and line names, following R8 retrace's conventions.\n"
    "\n"
    "options:\n"
    "  --verbose            print full signatures: 'ret name(params)'\n"
    "  --strict             read and check every mapping line; fail (exit 2) on\n"
    "                       the first malformed one. Without it only the class\n"
    "                       lines and the methods the stack trace names are\n"
    "                       read in full (of a mapping without R8 metadata,\n"
    "                       only their line ranges the trace's frames fall\n"
    "                       in), and the malformed lines among them are\n"
    "                       reported and skipped\n"
    "  --quiet              do not report malformed mapping lines\n"
    "  --threads N          threads to use, 1-8 (default: the CPUs, at most 8).\n"
    "                       With two or more the mapping is parsed in two\n"
    "                       halves (by default only from 8 MiB) and a trace of\n"
    "                       1 MiB to 256 MiB is retraced in up to N pieces (cut\n"
    "                       before exception lines); the output is the same as\n"
    "                       with one thread\n"
    "  --stats              print parse figures (bytes, ms, MB/s) on stderr\n"
    "  --build-index FILE   write the mapping's index to FILE and exit; an\n"
    "                       index file can be given as MAPPING later\n"
    "  -h, --help           this text\n"
    "\n"
    "exit status: 0 success; 1 usage or I/O error, or a compressed MAPPING;\n"
    "2 a malformed mapping line with --strict, or no class line at all\n";

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

/*
 * What a one-shot retrace reads in full: the classes the trace's frames
 * name, and the (class, method) pairs. Two open-addressing sets of 64-bit
 * hashes: XXH3 of the class, and XXH3 of the method seeded with the class
 * hash (a collision only makes the parse read one more class or member in
 * full, never fewer). Both add and lookup are O(1) however many methods a
 * class has. The mapping parse asks about every member line of a wanted
 * class, so the class hash of the line before is remembered per thread
 * (with the build's generation: a later build starts afresh).
 */
typedef struct hset {
    uint64_t *v;    /* 0 = empty */
    uint32_t mask, n;
} hset;

/* A frame's member (its hash in `members`) and line (0: none). */
typedef struct frame_line {
    uint64_t h;
    uint32_t line;
} frame_line;

typedef struct trace_names {
    hset classes, members;
    uint64_t gen;   /* bumped before each build that asks */
    int failed;     /* out of memory: read everything */
    /* the frames' lines per member, for want_range: built by lines_index
     * from `frames`; slot k of `members` owns lines[at[k] .. at[k]+cnt[k]),
     * sorted */
    struct {
        frame_line *v;
        size_t n, cap;
    } frames;
    uint32_t *at, *cnt, *lines;
    int by_line;    /* lines_index succeeded */
} trace_names;

static uint64_t tn_hash(const char *s, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(s, n, seed) | 1; /* never 0 */
}

static int hset_has(const hset *s, uint64_t h)
{
    if (!s->v)
        return 0;
    for (uint32_t j = (uint32_t)(h >> 1) & s->mask;; j = (j + 1) & s->mask) {
        if (s->v[j] == h)
            return 1;
        if (!s->v[j])
            return 0;
    }
}

/* Adds h; -1 when out of memory. */
static int hset_add(hset *s, uint64_t h)
{
    if (!s->v || (s->n + 1) * 2 > s->mask + 1) {
        uint32_t cap = s->v ? (s->mask + 1) * 2 : 1024;
        uint64_t *nv = cap ? calloc(cap, sizeof *nv) : NULL;
        if (!nv)
            return -1;
        for (uint32_t i = 0; s->v && i <= s->mask; i++) {
            if (!s->v[i])
                continue;
            uint32_t j = (uint32_t)(s->v[i] >> 1) & (cap - 1);
            while (nv[j])
                j = (j + 1) & (cap - 1);
            nv[j] = s->v[i];
        }
        free(s->v);
        s->v = nv;
        s->mask = cap - 1;
    }
    uint32_t j = (uint32_t)(h >> 1) & s->mask;
    while (s->v[j] && s->v[j] != h)
        j = (j + 1) & s->mask;
    if (!s->v[j]) {
        s->v[j] = h;
        s->n++;
    }
    return 0;
}

static void names_add(void *ctx, const char *cls, size_t cn, const char *method, size_t mn,
                      int64_t line)
{
    trace_names *t = ctx;
    if (!method || t->failed)
        return; /* an exception class: its class line is always indexed */
    uint64_t ch = tn_hash(cls, cn, 0), mh = tn_hash(method, mn, ch);
    if (hset_add(&t->classes, ch) || hset_add(&t->members, mh)) {
        t->failed = 1;
        return;
    }
    /* the retracer looks a frame without a line up as line 0; a line past
     * any mapping range (BL_MAPPING_MAX_LINE) is kept as that bound, which
     * no range passes either */
    frame_line f = { mh, line <= 0 ? 0 : line > BL_MAPPING_MAX_LINE ? BL_MAPPING_MAX_LINE + 1u
                                                                   : (uint32_t)line };
    if (t->frames.n == t->frames.cap) {
        size_t nc = t->frames.cap ? t->frames.cap * 2 : 4096;
        frame_line *nv = realloc(t->frames.v, nc * sizeof *nv);
        if (!nv) {
            t->failed = 1;
            return;
        }
        t->frames.v = nv;
        t->frames.cap = nc;
    }
    t->frames.v[t->frames.n++] = f;
}

/* Slot of h in s (which holds it). */
static uint32_t hset_slot(const hset *s, uint64_t h)
{
    uint32_t j = (uint32_t)(h >> 1) & s->mask;
    while (s->v[j] != h)
        j = (j + 1) & s->mask;
    return j;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Groups the frames' lines by member (counting sort over the member slots,
 * then each member's lines sorted); sets by_line. On failure want_range is
 * simply not used. */
static void lines_index(trace_names *t)
{
    if (t->failed || !t->members.v)
        return;
    size_t slots = (size_t)t->members.mask + 1, n = t->frames.n;
    t->at = calloc(slots, sizeof *t->at);
    t->cnt = calloc(slots, sizeof *t->cnt);
    t->lines = malloc((n ? n : 1) * sizeof *t->lines);
    if (!t->at || !t->cnt || !t->lines || n > UINT32_MAX)
        return;
    for (size_t i = 0; i < n; i++)
        t->cnt[hset_slot(&t->members, t->frames.v[i].h)]++;
    uint32_t sum = 0;
    for (size_t k = 0; k < slots; k++) {
        t->at[k] = sum;
        sum += t->cnt[k];
    }
    for (size_t k = 0; k < slots; k++)
        t->cnt[k] = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = hset_slot(&t->members, t->frames.v[i].h);
        t->lines[t->at[k] + t->cnt[k]++] = t->frames.v[i].line;
    }
    for (size_t k = 0; k < slots; k++) {
        uint32_t *v = t->lines + t->at[k], c = t->cnt[k];
        if (c > 16) {
            qsort(v, c, sizeof *v, cmp_u32);
            continue;
        }
        for (uint32_t i = 1; i < c; i++) /* insertion sort: most have a few */
            for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
                uint32_t x = v[j];
                v[j] = v[j - 1];
                v[j - 1] = x;
            }
    }
    free(t->frames.v);
    t->frames.v = NULL;
    t->frames.n = t->frames.cap = 0;
    t->by_line = 1;
}

static void names_free(trace_names *t)
{
    free(t->classes.v);
    free(t->members.v);
    free(t->frames.v);
    free(t->at);
    free(t->cnt);
    free(t->lines);
}

/* The class hash of cls, remembered per thread for consecutive calls with
 * the same class pointer in the same build. */
static uint64_t tn_class_hash(const trace_names *t, const char *cls, size_t cn)
{
    static _Thread_local const trace_names *last_t;
    static _Thread_local uint64_t last_gen;
    static _Thread_local const char *last_cls;
    static _Thread_local size_t last_cn;
    static _Thread_local uint64_t last_h;
    if (t != last_t || t->gen != last_gen || cls != last_cls || cn != last_cn) {
        last_t = t;
        last_gen = t->gen;
        last_cls = cls;
        last_cn = cn;
        last_h = tn_hash(cls, cn, 0);
    }
    return last_h;
}

static int names_want_class(void *ctx, const char *cls, size_t n)
{
    const trace_names *t = ctx;
    return hset_has(&t->classes, tn_class_hash(t, cls, n));
}

static int names_want_member(void *ctx, const char *cls, size_t cn, const char *name, size_t nn)
{
    const trace_names *t = ctx;
    return hset_has(&t->members, tn_hash(name, nn, tn_class_hash(t, cls, cn)));
}

/* Whether a frame of the member has line 0 (then every range is needed:
 * the retracer lists all of them) or a line in [a, b]. A hash collision
 * only merges two members' lines: more is read, never less. */
static int names_want_range(void *ctx, const char *cls, size_t cn, const char *name, size_t nn,
                            uint32_t a, uint32_t b)
{
    const trace_names *t = ctx;
    uint64_t h = tn_hash(name, nn, tn_class_hash(t, cls, cn));
    if (!hset_has(&t->members, h))
        return 1;
    uint32_t k = hset_slot(&t->members, h);
    const uint32_t *v = t->lines + t->at[k];
    uint32_t lo = 0, hi = t->cnt[k];
    if (hi == 0 || v[0] == 0)
        return 1;
    while (lo < hi) { /* the first line >= a */
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->cnt[k] && v[lo] <= b;
}

/* One piece of the trace, retraced by its own retracer (see
 * bl_retrace_starts_block: the pieces are cut before exception lines, so
 * their outputs joined in order equal one retracer's output). */
typedef struct part {
    const bl_mapindex *mi;
    const bl_retrace_opts *opts;
    const char *p, *e; /* the piece: whole lines */
    const char *pos;   /* where part_run goes on (NULL: at p) */
    bl_retracer *rt;   /* made by part_run, kept between calls; caller frees */
    int fd;            /* >= 0: write output there in 1 MiB chunks, else keep */
    bl_buf out;        /* output (up to PART_OUT_CAP bytes kept when fd < 0) */
    uint64_t lines;
    bl_err err;        /* BL_EIO: write failed (errno in werr) */
    int werr;
    pthread_t th;
    int started;
} part;

/* Retraces the piece from t->pos on. A kept piece (fd < 0) stops once its
 * output reaches PART_OUT_CAP, so memory stays bounded however much a trace
 * expands; the caller writes what it holds and calls again with fd set, and
 * the same retracer goes on where it stopped. */
static void *part_run(void *arg)
{
    part *t = arg;
    if (!t->rt && (t->err = bl_retracer_new(t->mi, t->opts, &t->rt)))
        return NULL;
    const char *p = t->pos ? t->pos : t->p;
    while (p < t->e) {
        const char *nl = memchr(p, '\n', (size_t)(t->e - p));
        const char *le = nl ? nl : t->e;
        size_t before = t->out.len;
        if ((t->err = bl_retracer_line(t->rt, p, (size_t)(le - p), &t->out)))
            break;
        t->lines++;
        /* the input's last line had no newline: nor has its output (when
         * it printed any: a line that prints nothing leaves the one before
         * as it was) */
        if (!nl && t->out.len > before && t->out.data[t->out.len - 1] == '\n')
            t->out.len--;
        p = nl ? nl + 1 : t->e;
        if (t->fd >= 0 && (t->out.len >= (1 << 20) || p >= t->e)) {
            if (bl_fd_write_all(t->fd, t->out.data, t->out.len) != BL_OK) {
                t->werr = errno;
                t->err = BL_EIO;
                break;
            }
            bl_buf_reset(&t->out);
        } else if (t->fd < 0 && t->out.len >= PART_OUT_CAP) {
            break;
        }
    }
    t->pos = p;
    return NULL;
}

/* Cuts [p, e) into up to `want` pieces before exception lines near equal
 * sizes; fills parts[] (p, e only) and returns how many. */
static int cut_parts(const bl_mapindex *mi, const char *p, const char *e, int want, part *parts)
{
    int n = 0;
    const char *start = p;
    size_t len = (size_t)(e - p);
    for (int k = 1; k < want; k++) {
        const char *q = p + len / (size_t)want * (size_t)k;
        if (q <= start)
            continue;
        /* to the next line start, then to the next exception line */
        const char *nl = memchr(q - 1, '\n', (size_t)(e - (q - 1)));
        q = nl ? nl + 1 : e;
        while (q < e) {
            const char *n2 = memchr(q, '\n', (size_t)(e - q));
            const char *le = n2 ? n2 : e;
            if (bl_retrace_starts_block(mi, q, (size_t)(le - q)))
                break;
            q = n2 ? n2 + 1 : e;
        }
        if (q >= e)
            break;
        parts[n].p = start;
        parts[n].e = q;
        n++;
        start = q;
    }
    parts[n].p = start;
    parts[n].e = e;
    return n + 1;
}

int main(int argc, char **argv)
{
    /* a one-shot process: memory it frees (the second parse half, sort
     * scratch) is kept for its next allocations instead of going back to
     * the kernel and coming back as fresh pages the kernel must zero —
     * that zeroing was ~20 % of a big run; measured 8-10 % faster (glibc
     * tunables, only hints: failures are ignored) */
    (void)mallopt(M_MMAP_THRESHOLD, 1 << 30);
    (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
    bl_retrace_opts ropts = { 0 };
    int strict = 0, quiet = 0, stats = 0, threads = 0;
    const char *index_out = NULL, *mapping = NULL, *trace = NULL;
    int trace_given = 0;
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
        } else if (!strcmp(a, "--threads") || !strncmp(a, "--threads=", 10)) {
            const char *v = a[9] == '=' ? a + 10 : ++i < argc ? argv[i] : NULL;
            char *end = NULL;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || *v < '0' || *v > '9' || !end || *end || n < 1 || n > MAX_PARTS) {
                fprintf(stderr, "beatline-retrace: --threads needs a number from 1 to %d\n",
                        MAX_PARTS);
                return 1;
            }
            threads = (int)n;
        } else if (!strcmp(a, "--build-index") || !strncmp(a, "--build-index=", 14)) {
            const char *v = a[13] == '=' ? a + 14 : ++i < argc ? argv[i] : NULL;
            if (!v || !*v) {
                fputs("beatline-retrace: --build-index needs a file name\n", stderr);
                return 1;
            }
            index_out = v;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "beatline-retrace: unknown option '%s'\n%s", a, usage);
            return 1;
        } else if (!mapping) {
            mapping = a;
        } else if (!trace && !trace_given) {
            trace = strcmp(a, "-") ? a : NULL; /* "-": standard input */
            trace_given = 1;
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
    bl_buf img, in;
    bl_buf_init(&img, 0);
    bl_buf_init(&in, MAX_TRACE_BYTES);
    bl_mapindex *mi = NULL;
    bl_err err;
    trace_names want;
    memset(&want, 0, sizeof want);
    int want_ok = 0; /* the trace was scanned: build lazily */

    double m0 = now_ms();
    /* the trace first: a one-shot retrace reads in full only the classes
     * it mentions (--strict reads and checks every line) */
    if (!index_out) {
        int tfd = 0;
        if (trace && (tfd = open(trace, O_RDONLY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "beatline-retrace: %s: %s\n", trace, strerror(errno));
            rc = 1;
            goto out;
        }
        struct stat ts;
        if (fstat(tfd, &ts) == 0 && S_ISREG(ts.st_mode) &&
            (uint64_t)ts.st_size > MAX_TRACE_BYTES) {
            fprintf(stderr, "beatline-retrace: %s: larger than %zu bytes: split the trace\n",
                    trace ? trace : "<stdin>", MAX_TRACE_BYTES);
            if (tfd > 0)
                close(tfd);
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
            bl_retrace_trace_names(in.data ? in.data : "", in.len, names_add, &want);
            want_ok = !want.failed;
            lines_index(&want);
        }
    }
    static const struct {
        const char *magic;
        size_t n;
        const char *what, *how;
    } packed[] = { { "\x1f\x8b", 2, "gzip", "gzip -dc" },
                   { "\x28\xb5\x2f\xfd", 4, "zstd", "zstd -dc" },
                   { "PK\x03\x04", 4, "a zip archive", "unzip -p" } };
    for (size_t k = 0; k < sizeof packed / sizeof *packed; k++)
        if (mlen >= packed[k].n && !memcmp(mdata, packed[k].magic, packed[k].n)) {
            fprintf(stderr,
                    "beatline-retrace: %s: this is %s, not a mapping text; decompress it "
                    "first (%s)\n",
                    mapping, packed[k].what, packed[k].how);
            rc = 1;
            goto out;
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
        bo.threads = threads == 1 ? 1 : threads >= 2 ? 2 : 0;
        if (want_ok) { /* one-shot: only what the trace names */
            want.gen++;
            bo.want_class = names_want_class;
            bo.want_member = names_want_member;
            if (want.by_line)
                bo.want_range = names_want_range;
            bo.want_ctx = &want;
        }
        bl_mi_stats ms;
        double t0 = now_ms();
        if (stats && !index_out)
            fprintf(stderr, "beatline-retrace: read and scanned the trace in %.1f ms\n", t0 - m0);
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
        if (ms.classes == 0 && ms.malformed > 0) {
            fprintf(stderr,
                    "beatline-retrace: %s: no class line ('original -> obfuscated:') in %llu "
                    "lines: not a mapping file?\n",
                    mapping, (unsigned long long)ms.lines);
            rc = 2;
            goto out;
        }
        if (stats)
            fprintf(stderr,
                    "beatline-retrace: parsed %zu bytes, %llu lines, %u classes, %u methods, "
                    "%u fields in %.1f ms (%.0f MB/s; parse %.1f ms on %u thread%s, write "
                    "%.1f ms); index %zu bytes%s\n",
                    mlen, (unsigned long long)ms.lines, ms.classes, ms.methods, ms.fields,
                    t1 - t0, (double)mlen / 1e6 / ((t1 - t0) / 1e3), ms.parse_us / 1e3,
                    ms.threads, ms.threads > 1 ? "s" : "", ms.write_us / 1e3, img.len,
                    ms.by_range ? "; methods read by the trace's lines" : "");
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

    /* retrace line by line, the first piece written as it goes, the others
     * (on their own threads) written in turn */
    {
        double r0 = now_ms();
        const char *p = in.data ? in.data : "";
        long ncpu = threads ? threads : sysconf(_SC_NPROCESSORS_ONLN);
        int want_parts = ncpu > MAX_PARTS ? MAX_PARTS : ncpu < 1 ? 1 : (int)ncpu;
        if (in.len < PART_MIN_BYTES || in.len > PART_MAX_BYTES)
            want_parts = 1;
        part parts[MAX_PARTS];
        memset(parts, 0, sizeof parts);
        int np = cut_parts(mi, p, p + in.len, want_parts, parts);
        for (int k = 0; k < np; k++) {
            parts[k].mi = mi;
            parts[k].opts = &ropts;
            parts[k].fd = k == 0 ? 1 : -1;
            bl_buf_init(&parts[k].out, 0);
            if (k > 0 && pthread_create(&parts[k].th, NULL, part_run, &parts[k]) == 0)
                parts[k].started = 1;
        }
        uint64_t n_lines = 0;
        for (int k = 0; k < np; k++) {
            part *t = &parts[k];
            if (t->started)
                pthread_join(t->th, NULL);
            else if (!rc)
                part_run(t); /* the first piece, or a thread that did not start */
            if (!rc && !t->err && t->fd < 0) {
                /* what the piece kept, then the rest of it streamed */
                if (bl_fd_write_all(1, t->out.data, t->out.len) != BL_OK) {
                    t->err = BL_EIO;
                    t->werr = errno;
                } else if (t->pos < t->e) {
                    bl_buf_reset(&t->out);
                    t->fd = 1;
                    part_run(t);
                }
            }
            bl_retracer_free(t->rt);
            t->rt = NULL;
            if (!rc && t->err) {
                if (t->err == BL_EIO)
                    fprintf(stderr, "beatline-retrace: write: %s\n", strerror(t->werr));
                else
                    fprintf(stderr, "beatline-retrace: %s\n", bl_err_str(t->err));
                rc = 1;
            }
            n_lines += t->lines;
            bl_buf_cleanup(&t->out);
        }
        if (stats && !rc)
            fprintf(stderr, "beatline-retrace: retraced %llu lines in %.1f ms (%d piece%s)\n",
                    (unsigned long long)n_lines, now_ms() - r0, np, np > 1 ? "s" : "");
    }
out:
    bl_buf_cleanup(&in);
    names_free(&want);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    if (mdata)
        munmap(mdata, mlen);
    return rc;
}
