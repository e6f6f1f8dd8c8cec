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
#include <stdatomic.h>
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
#include "common/u64map.h"
#include "common/vec.h"
#include "symbol/mapindex.h"
#include "symbol/mapping.h"
#include "symbol/retrace.h"

#define MAX_TRACE_BYTES ((size_t)1 << 31) /* 2 GiB of stack-trace text */
#define MAX_PARTS 8                        /* retrace threads, at most */
#define PART_MIN_BYTES ((size_t)1 << 20)   /* split only traces of 1 MiB.. */
#define PART_MAX_BYTES ((size_t)1 << 28)   /* ..to 256 MiB */
#define PART_OUT_CAP ((size_t)32 << 20)    /* output a piece keeps before its
                                              turn, at most (it then waits) */
#define PIECES_PER_THREAD 4                /* a late piece delays the end less */
#define OUT_PER_IN_BYTE 5                  /* output bytes reserved per input
                                              byte of a piece (see crew_piece) */
#define PIECE_MIN_BYTES ((size_t)256 << 10)

static const char usage[] =
    "usage: beatline-retrace [options] MAPPING [STACKTRACE]\n"
    "\n"
    "Retraces an obfuscated Java stack trace with an R8/ProGuard mapping file\n"
    "(MAPPING; or an index made by --build-index) and prints it with original\n"
    "class and method names, file names and line numbers, following R8\n"
    "retrace's conventions. STACKTRACE is a file; standard input when it is\n"
    "absent or '-'.\n"
    "\n"
    "options:\n"
    "  --verbose            print full signatures: 'ret name(params)'\n"
    "  --strict             read and check every mapping line; fail (exit 2) on\n"
    "                       the first malformed one. Without it, only what the\n"
    "                       trace needs is read: every class line, and in full\n"
    "                       only the methods its frames name (and, when the\n"
    "                       mapping has no R8 metadata, only those method\n"
    "                       lines whose line range holds a line of the trace);\n"
    "                       malformed lines among them are reported, skipped\n"
    "  --quiet              do not report malformed mapping lines\n"
    "  --threads N          threads to use, 1-8 (default: the CPUs, at most 8).\n"
    "                       With two or more, a trace of 256 KiB or more is\n"
    "                       scanned for names in two halves, a mapping of 8 MiB\n"
    "                       or more (any size when N is given) is parsed by two\n"
    "                       threads (the first done takes over half of what is\n"
    "                       left of the other's part, and so on), and a trace\n"
    "                       of 1 MiB to 256 MiB is retraced by N threads in up\n"
    "                       to 4 x N pieces cut before exception lines (a\n"
    "                       smaller or bigger one by one thread); the output\n"
    "                       is the same as with one thread\n"
    "  --stats              print on stderr where the time went: trace scan,\n"
    "                       mapping parse and index (sizes, counts, MB/s),\n"
    "                       retrace (pieces, threads)\n"
    "  --build-index FILE   write the whole mapping's index to FILE and exit\n"
    "                       (no STACKTRACE); give FILE as MAPPING later\n"
    "  -h, --help           this text\n"
    "\n"
    "exit status: 0 success; 1 usage or I/O error, or a compressed MAPPING;\n"
    "2 a malformed mapping line with --strict, or a MAPPING with malformed\n"
    "lines and no class line at all (not a mapping). A MAPPING with no class\n"
    "line and nothing malformed (empty, only comments) is warned about and the\n"
    "trace printed unchanged.\n";

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
 * name, their (class, method) members, and each member's frame lines.
 * Names are kept as 64-bit hashes: XXH3 of the class, XXH3 of the method
 * seeded with the class hash. Two classes with one hash only make the
 * parse read more; two (class, method) pairs with one hash (odds about
 * 10^-10 for 35,000 pairs) could file one pair's frames under the other's
 * class, and its lines would then go unread. The scan numbers classes and
 * members as it meets them (two u64maps); names_index then lays out, per
 * class, its members and, per member, its sorted lines.
 *
 * The mapping parse asks about every class line, then about every member
 * line of a wanted class, then about the range of each wanted method line:
 * the answer for the class line before (and the member line before) is
 * remembered per thread, so a member line costs a comparison of its short
 * obfuscated name with the names of its class's few members (kept with
 * them: pointers into the trace text). A class with many named members is
 * looked up in the member map instead, by the name's hash (O(1) however
 * many methods a class has).
 */
#define NO_INDEX UINT32_MAX
#define SCAN_MEMBERS 16 /* a class's members checked one by one, at most */
/* Bits of the class filter: the classes the trace names, one bit each by
 * their hash (64 KiB, so it stays in the CPU's cache): a class line whose
 * bit is clear is not named, without a look in the (bigger) class map —
 * half of a big mapping's class lines or more. */
#define CLASS_BITS ((size_t)1 << 19)

typedef struct tn_class {
    uint64_t h;
    uint32_t first, n; /* its members: member_of[first .. first+n) */
} tn_class;

typedef struct tn_member {
    uint64_t h;
    const char *name;     /* the method name, in the trace text */
    const char *cname;    /* the class name, in the trace text */
    uint32_t nn, cn;      /* their lengths */
    uint32_t cls;         /* class index */
    uint32_t first, n;    /* its lines: lines[first .. first+n), sorted */
} tn_member;

/* A member's method name (in the trace text). */
typedef struct tn_name {
    const char *p;
    uint32_t n;
} tn_name;

/* A frame as scanned: member index and line (0: none). */
typedef struct tn_frame {
    uint32_t member, line;
} tn_frame;

/* Where the scan read a frame line (see bl_frame_pos), kept for the
 * retrace step so that it does not read the line again: the line's offset
 * in the text, its member, line number and positions (offsets in the line;
 * a line of 64 KiB or more gets no record and is read again). */
typedef struct tn_pos {
    uint32_t off, member;
    int64_t line;
    uint16_t at, name, dot, open, close;
} tn_pos;

typedef struct trace_names {
    bl_u64map class_ix, member_ix; /* hash -> index */
    BL_VEC(tn_class) classes;
    BL_VEC(tn_member) members;
    BL_VEC(tn_frame) frames;    /* freed by names_index */
    BL_VEC(tn_pos) pos;         /* frame lines in text order */
    const char *text;           /* the text scanned (pos offsets) */
    tn_pos pend;                /* the frame line being filed (pos_add) */
    int has_pend;
    uint32_t *member_of;        /* members grouped by class */
    tn_name *member_nm;         /* their names, in the same order */
    uint64_t *class_bits;       /* a bit per class hash (see CLASS_BITS) */
    uint32_t *lines;            /* lines grouped by member */
    uint64_t gen;   /* bumped before each build that asks */
    int failed;     /* out of memory while scanning: read everything */
    int by_line;    /* names_index succeeded: want_range may be used */
} trace_names;

static uint64_t tn_hash(const char *s, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(s, n, seed) | 1; /* never 0 */
}

/* The index of h in m, adding h -> val when absent (*added = 1); NO_INDEX
 * when out of memory. */
static uint32_t index_put(bl_u64map *m, uint64_t h, uint32_t val, int *added)
{
    uint32_t *v;
    if (bl_u64map_put(m, h, val, &v, added) != BL_OK)
        return NO_INDEX;
    return *v;
}

/* The line a frame is filed under: the retracer looks a frame without a
 * line up as line 0; a line past any mapping range (BL_MAPPING_MAX_LINE)
 * is kept as just past that bound, which no range holds either. */
static uint32_t names_line(int64_t line)
{
    return line <= 0 ? 0 : line > BL_MAPPING_MAX_LINE ? BL_MAPPING_MAX_LINE + 1u : (uint32_t)line;
}

/* Files a name by its hashes: ch of the class (its name: cname, cn
 * bytes), mh of the method (0: an exception line's class, no member; its
 * name: mname, mn bytes) and the frame's line (names_line). */
static void names_add_hashed(trace_names *t, uint64_t ch, uint64_t mh, uint32_t line,
                             const char *cname, uint32_t cn, const char *mname, uint32_t mn,
                             const tn_pos *pp);

/* Files the frame line's positions pp (NULL: none) for member mi. */
static void pos_push(trace_names *t, const tn_pos *pp, uint32_t mi)
{
    if (!pp)
        return;
    bl_err err = BL_OK;
    tn_pos r = *pp;
    r.member = mi;
    BL_VEC_PUSH(t->pos, r, err);
    if (err)
        t->failed = 1;
}

static void names_add_hashed(trace_names *t, uint64_t ch, uint64_t mh, uint32_t line,
                             const char *cname, uint32_t cn, const char *mname, uint32_t mn,
                             const tn_pos *pp)
{
    if (t->failed)
        return;
    bl_err err = BL_OK;
    int added;
    if (mh && t->members.n) {
        /* a member met before (most frames of a big trace): its class is
         * filed already — one look in the member map instead of a put in
         * each map (the main thread files every frame: this is its part
         * of the scan) */
        uint32_t known = bl_u64map_get(&t->member_ix, mh, NO_INDEX);
        if (known != NO_INDEX) {
            if (t->frames.n >= NO_INDEX - 1) {
                t->failed = 1;
                return;
            }
            tn_frame f = { known, line };
            BL_VEC_PUSH(t->frames, f, err);
            if (err)
                t->failed = 1;
            else
                pos_push(t, pp, known);
            return;
        }
    }
    uint32_t ci = index_put(&t->class_ix, ch, (uint32_t)t->classes.n, &added);
    if (ci == NO_INDEX || t->classes.n >= NO_INDEX - 1 || t->members.n >= NO_INDEX - 1 ||
        t->frames.n >= NO_INDEX - 1) {
        t->failed = 1;
        return;
    }
    if (added) {
        tn_class c = { ch, 0, 0 };
        BL_VEC_PUSH(t->classes, c, err);
    }
    if (!mh) { /* an exception line's class: its record, no members */
        if (err)
            t->failed = 1;
        return;
    }
    uint32_t mi = err ? NO_INDEX : index_put(&t->member_ix, mh, (uint32_t)t->members.n, &added);
    if (mi == NO_INDEX) {
        t->failed = 1;
        return;
    }
    if (added) {
        tn_member m = { mh, mname, cname, mn, cn, ci, 0, 0 };
        BL_VEC_PUSH(t->members, m, err);
        if (!err)
            t->classes.v[ci].n++;
    }
    tn_frame f = { mi, line };
    if (!err)
        BL_VEC_PUSH(t->frames, f, err);
    if (err)
        t->failed = 1;
    else
        pos_push(t, pp, mi);
}

/* The positions fp of the frame line at `line` as a tn_pos (0 when the
 * line is too long for one). */
static int pos_of(const char *text, const char *line, const bl_frame_pos *fp, tn_pos *r)
{
    if (fp->close >= 65535 || (size_t)(line - text) > UINT32_MAX)
        return 0;
    r->off = (uint32_t)(line - text);
    r->member = 0;
    r->line = fp->line;
    r->at = (uint16_t)fp->at;
    r->name = (uint16_t)fp->name;
    r->dot = (uint16_t)fp->dot;
    r->open = (uint16_t)fp->open;
    r->close = (uint16_t)fp->close;
    return 1;
}

/* bl_retrace_trace_frames pos callback: kept for the name that follows. */
static void pos_add(void *ctx, const char *line, const bl_frame_pos *fp)
{
    trace_names *t = ctx;
    t->has_pend = pos_of(t->text, line, fp, &t->pend);
}

/* bl_retrace_trace_names callback: files the name (see names_add_hashed). */
static void names_add(void *ctx, const char *cls, size_t cn, const char *method, size_t mn,
                      int64_t line)
{
    trace_names *t = ctx;
    uint64_t ch = tn_hash(cls, cn, 0);
    names_add_hashed(t, ch, method ? tn_hash(method, mn, ch) : 0, names_line(line), cls,
                     (uint32_t)cn, method, (uint32_t)mn,
                     method && t->has_pend ? &t->pend : NULL);
    t->has_pend = 0;
}

/*
 * A big trace is scanned in two parts at once (cut at a line start): the
 * main thread files the first part's names as it reads them; a second
 * thread reads the second part and only hashes its names into a list, which
 * the main thread files afterwards, in order — so the result is the one a
 * single pass gives (same indexes), and the reading and hashing of the
 * second part is done on the other CPU. The main thread files every name,
 * so it takes the smaller part: SCAN_CUT_NUM / SCAN_CUT_DEN of the text.
 * On the 100,000-frame benchmark (callgrind, per thread) the main thread's
 * scan was 52 M instructions against the other's 33 M with the cut in the
 * middle; filing is about 0.3 of the reading and hashing, which puts the
 * even cut near 36 %.
 */
#define SCAN_SPLIT_MIN ((size_t)256 << 10) /* scan in two parts from 256 KiB */
#define SCAN_CUT_NUM 3
#define SCAN_CUT_DEN 8

typedef struct scan_rec {
    uint64_t ch, mh; /* see names_add_hashed */
    const char *c, *m; /* the class and method names */
    uint32_t cn, mn, line;
    int has_pos;
    tn_pos pos;
} scan_rec;

typedef struct scan_half {
    const char *p;
    size_t n;
    BL_VEC(scan_rec) v;
    int failed; /* out of memory: the main thread scans this half itself */
    const char *text; /* the whole text (pos offsets) */
    tn_pos pend;
    int has_pend;
} scan_half;

static void scan_pos(void *ctx, const char *line, const bl_frame_pos *fp)
{
    scan_half *h = ctx;
    h->has_pend = pos_of(h->text, line, fp, &h->pend);
}

static void scan_collect(void *ctx, const char *cls, size_t cn, const char *method, size_t mn,
                         int64_t line)
{
    scan_half *h = ctx;
    if (h->failed)
        return;
    uint64_t ch = tn_hash(cls, cn, 0);
    scan_rec r = { ch, method ? tn_hash(method, mn, ch) : 0, cls, method, (uint32_t)cn,
                   (uint32_t)mn, names_line(line), method && h->has_pend, h->pend };
    h->has_pend = 0;
    bl_err err = BL_OK;
    BL_VEC_PUSH(h->v, r, err);
    if (err)
        h->failed = 1;
}

static void *scan_run(void *arg)
{
    scan_half *h = arg;
    bl_retrace_trace_frames(h->p, h->n, scan_collect, scan_pos, h);
    return NULL;
}

static void names_reserve(trace_names *t, size_t len);

/* Scans text[0..len) into t, on two threads when `threads` allows and the
 * text is big (see SCAN_SPLIT_MIN). */
static void names_scan(trace_names *t, const char *text, size_t len, int threads)
{
    const char *cut = NULL;
    if (threads >= 2 && len >= SCAN_SPLIT_MIN) {
        size_t at = len / SCAN_CUT_DEN * SCAN_CUT_NUM;
        cut = memchr(text + at, '\n', len - at);
        if (cut)
            cut++;
    }
    scan_half h;
    memset(&h, 0, sizeof h);
    h.text = text;
    t->text = text;
    pthread_t th;
    int started = 0;
    if (cut && cut < text + len) {
        h.p = cut;
        h.n = (size_t)(text + len - cut);
        size_t guess = h.n / 32; /* a frame line is 30 bytes or more */
        h.v.v = malloc((guess ? guess : 1) * sizeof *h.v.v);
        h.v.cap = h.v.v ? guess : 0;
        started = pthread_create(&th, NULL, scan_run, &h) == 0;
    }
    /* the maps are sized while the other thread reads already */
    names_reserve(t, len);
    if (!started) {
        bl_retrace_trace_frames(text, len, names_add, pos_add, t);
        free(h.v.v);
        return;
    }
    bl_retrace_trace_frames(text, (size_t)(cut - text), names_add, pos_add, t);
    pthread_join(th, NULL);
    if (h.failed) {
        bl_retrace_trace_frames(h.p, h.n, names_add, pos_add, t);
    } else {
        for (size_t i = 0; i < h.v.n; i++)
            names_add_hashed(t, h.v.v[i].ch, h.v.v[i].mh, h.v.v[i].line, h.v.v[i].c,
                             h.v.v[i].cn, h.v.v[i].m, h.v.v[i].mn,
                             h.v.v[i].has_pos ? &h.v.v[i].pos : NULL);
    }
    free(h.v.v);
}

/* Sizes the maps and the frame list for a trace of `len` bytes (a frame
 * line is 30 bytes or more), up to a bound: growing them by rehashing and
 * copying was a tenth of the scan. Only a hint: a failure is ignored (the
 * maps and the list then grow as they fill). */
static void names_reserve(trace_names *t, size_t len)
{
    size_t frames = len / 32, members = len / 64, classes = len / 128;
    if (frames > ((size_t)1 << 20))
        frames = (size_t)1 << 20;
    if (members > ((size_t)1 << 18))
        members = (size_t)1 << 18;
    if (classes > ((size_t)1 << 17))
        classes = (size_t)1 << 17;
    (void)bl_u64map_reserve(&t->class_ix, (uint32_t)classes);
    (void)bl_u64map_reserve(&t->member_ix, (uint32_t)members);
    if (frames > t->frames.cap) {
        tn_frame *v = realloc(t->frames.v, frames * sizeof *v);
        if (v) {
            t->frames.v = v;
            t->frames.cap = frames;
        }
    }
    if (frames > t->pos.cap) {
        tn_pos *v = realloc(t->pos.v, frames * sizeof *v);
        if (v) {
            t->pos.v = v;
            t->pos.cap = frames;
        }
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Lays out members by class and lines by member (counting sorts; each
 * member's lines then sorted); sets by_line. On failure only want_range
 * goes unused: want_class and want_member need the maps alone. */
static void names_index(trace_names *t)
{
    if (t->failed)
        return;
    size_t nc = t->classes.n, nm = t->members.n, nf = t->frames.n;
    t->member_of = malloc((nm ? nm : 1) * sizeof *t->member_of);
    t->member_nm = malloc((nm ? nm : 1) * sizeof *t->member_nm);
    t->lines = malloc((nf ? nf : 1) * sizeof *t->lines);
    if (!t->member_of || !t->member_nm || !t->lines) {
        free(t->member_of); /* tn_ask_member then uses the member map */
        free(t->member_nm);
        t->member_of = NULL;
        t->member_nm = NULL;
        return;
    }
    uint32_t sum = 0;
    for (size_t c = 0; c < nc; c++) {
        t->classes.v[c].first = sum;
        sum += t->classes.v[c].n;
        t->classes.v[c].n = 0;
    }
    for (size_t m = 0; m < nm; m++) {
        tn_class *c = &t->classes.v[t->members.v[m].cls];
        t->member_nm[c->first + c->n].p = t->members.v[m].name;
        t->member_nm[c->first + c->n].n = t->members.v[m].nn;
        t->member_of[c->first + c->n++] = (uint32_t)m;
    }
    /* the filter, filled before use (NULL: every class goes to the map) */
    t->class_bits = bl_zalloc(CLASS_BITS / 64, sizeof *t->class_bits);
    for (size_t c = 0; t->class_bits && c < nc; c++)
        t->class_bits[(t->classes.v[c].h >> 6) % (CLASS_BITS / 64)] |=
            (uint64_t)1 << (t->classes.v[c].h & 63);
    for (size_t i = 0; i < nf; i++)
        t->members.v[t->frames.v[i].member].n++;
    sum = 0;
    for (size_t m = 0; m < nm; m++) {
        t->members.v[m].first = sum;
        sum += t->members.v[m].n;
        t->members.v[m].n = 0;
    }
    for (size_t i = 0; i < nf; i++) {
        tn_member *m = &t->members.v[t->frames.v[i].member];
        t->lines[m->first + m->n++] = t->frames.v[i].line;
    }
    for (size_t m = 0; m < nm; m++) {
        uint32_t *v = t->lines + t->members.v[m].first, c = t->members.v[m].n;
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
    bl_u64map_cleanup(&t->class_ix);
    bl_u64map_cleanup(&t->member_ix);
    free(t->classes.v);
    free(t->members.v);
    free(t->frames.v);
    free(t->pos.v);
    free(t->member_of);
    free(t->member_nm);
    free(t->class_bits);
    free(t->lines);
}

/* What this thread last asked about: the class line (by its address in
 * the mapping, with the build's generation) and the member line. */
typedef struct tn_last {
    const trace_names *t;
    uint64_t gen;
    const char *cls, *name;
    size_t cn, nn;
    uint64_t ch;
    uint32_t ci, mi; /* class and member index, NO_INDEX: not named */
    /* the class's members (when it has at most SCAN_MEMBERS and they are
     * laid out), copied here to be looked at without a cache miss */
    int nm;          /* -1: ask the member map */
    tn_name mname[SCAN_MEMBERS];
    uint32_t mx[SCAN_MEMBERS];
} tn_last;

static _Thread_local tn_last tn_cache;

static inline __attribute__((always_inline)) tn_last *tn_ask_class(const trace_names *t,
                                                                   const char *cls, size_t cn)
{
    tn_last *l = &tn_cache;
    if (l->t != t || l->gen != t->gen || l->cls != cls || l->cn != cn) {
        l->t = t;
        l->gen = t->gen;
        l->cls = cls;
        l->cn = cn;
        l->ch = tn_hash(cls, cn, 0);
        int maybe = !t->class_bits || ((t->class_bits[(l->ch >> 6) % (CLASS_BITS / 64)] >>
                                        (l->ch & 63)) & 1);
        l->ci = maybe ? bl_u64map_get(&t->class_ix, l->ch, NO_INDEX) : NO_INDEX;
        l->name = NULL;
        l->nm = -1;
        const tn_class *c = l->ci != NO_INDEX ? &t->classes.v[l->ci] : NULL;
        if (c && t->member_of && c->n <= SCAN_MEMBERS) {
            l->nm = (int)c->n;
            memcpy(l->mx, t->member_of + c->first, c->n * sizeof *l->mx);
            memcpy(l->mname, t->member_nm + c->first, c->n * sizeof *l->mname);
        }
    }
    return l;
}

/* Member index of cls.name, or NO_INDEX. */
static uint32_t tn_ask_member(const trace_names *t, const char *cls, size_t cn,
                              const char *name, size_t nn)
{
    tn_last *l = tn_ask_class(t, cls, cn);
    /* the same name as the line before (a method's ranges are consecutive
     * lines): compared by its bytes, which stay in the mapping text */
    if (l->name && l->nn == nn) {
        size_t i = 0; /* obfuscated names are short: no memcmp call */
        if (l->name != name)
            while (i < nn && l->name[i] == name[i])
                i++;
        if (l->name == name || i == nn)
            return l->mi;
    }
    l->name = name;
    l->nn = nn;
    l->mi = NO_INDEX;
    if (l->ci == NO_INDEX)
        return NO_INDEX;
    if (l->nm < 0) {
        l->mi = bl_u64map_get(&t->member_ix, tn_hash(name, nn, l->ch), NO_INDEX);
    } else {
        /* a class's few members: by their names' bytes, no hash (most
         * member lines of a named class name another method) */
        for (int k = 0; k < l->nm; k++)
            if (l->mname[k].n == nn && l->mname[k].p[0] == name[0] &&
                !memcmp(l->mname[k].p, name, nn)) {
                l->mi = l->mx[k];
                break;
            }
    }
    return l->mi;
}

static int names_want_class(void *ctx, const char *cls, size_t n)
{
    return tn_ask_class(ctx, cls, n)->ci != NO_INDEX;
}

static int names_want_member(void *ctx, const char *cls, size_t cn, const char *name, size_t nn)
{
    return tn_ask_member(ctx, cls, cn, name, nn) != NO_INDEX;
}

/* Whether a frame of the member has a line in [a, b] (line 0, a frame
 * without a line, too: a range from 0 holds it); else, when the member has
 * a frame without a line, the range is needed for its outermost entries
 * only (BL_MI_WANT_OUTER: the retracer lists the outermost method of every
 * group for such a frame, and nothing else of them); else not. */
static int names_want_range(void *ctx, const char *cls, size_t cn, const char *name, size_t nn,
                            uint32_t a, uint32_t b)
{
    const trace_names *t = ctx;
    uint32_t mi = tn_ask_member(t, cls, cn, name, nn);
    if (mi == NO_INDEX)
        return 1; /* not asked of an unnamed member; reading is safe */
    const tn_member *m = &t->members.v[mi];
    const uint32_t *v = t->lines + m->first;
    uint32_t lo = 0, hi = m->n;
    if (hi == 0)
        return 1;
    while (lo < hi) { /* the first line >= a */
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n && v[lo] <= b)
        return 1;
    return v[0] == 0 ? BL_MI_WANT_OUTER : 0;
}

/*
 * Retracing a big trace on several threads. The trace is cut into pieces
 * before exception lines (see bl_retrace_starts_block: such a line resets
 * every state a retracer carries from line to line, so pieces retraced
 * apart and joined in order give one retracer's output). Workers — the
 * main thread and the others — each own one retracer (its remembered
 * lookups serve every piece it takes) and take pieces in order. A piece's
 * output goes straight to standard output once every piece before it is
 * written (its turn); until then it is held, up to PART_OUT_CAP bytes,
 * after which the worker waits for the turn. Whoever finishes the piece
 * whose turn it is writes the held pieces that follow. A worker takes no
 * new piece while finished pieces hold PART_OUT_CAP bytes or more between
 * them, so held output stays below (workers + 1) x PART_OUT_CAP plus a line.
 */
enum { PIECE_OPEN, PIECE_HELD, PIECE_WRITTEN };

typedef struct piece {
    const char *p, *e; /* whole lines */
    bl_buf out;        /* held output */
    int state;         /* PIECE_OPEN (not taken or in progress), HELD,
                          WRITTEN; under crew.mu */
} piece;

typedef struct crew {
    const bl_mapindex *mi;
    const bl_retrace_opts *opts;
    piece *pc;
    int np;
    pthread_mutex_t mu;
    pthread_cond_t turn_cv; /* next_write moved, or a failure */
    int next_take;          /* the next piece to take */
    int next_write;         /* the piece whose turn it is */
    int writer;             /* a worker is writing held pieces */
    bl_err err;             /* first failure; BL_EIO: write (errno in werr) */
    atomic_int stop;        /* set with err: workers leave their piece */
    int werr;
    uint64_t lines;
    size_t hold_max;        /* PART_OUT_CAP (tests: BEATLINE_RETRACE_HOLD_MAX) */
    size_t held_done;       /* output held by finished pieces */
    size_t max_held;        /* most output a piece held before its turn */
    uint32_t expect;        /* distinct frames per worker, about (a hint) */
    const bl_retrace_lookups *lk; /* the trace's names resolved once, or NULL */
    const char *text;       /* the whole trace (pos offsets) */
    const tn_pos *pos;      /* where the scan read the frame lines, or NULL */
    size_t npos;
    uint64_t resolved;      /* names the workers looked up themselves */
    uint64_t filled;        /* names they resolved into the shared lookups */
    atomic_ullong as_scanned; /* frame lines retraced as the scan read them */
} crew;

static void crew_fail(crew *c, bl_err err, int werr)
{
    pthread_mutex_lock(&c->mu);
    if (!c->err) {
        c->err = err;
        c->werr = werr;
    }
    atomic_store(&c->stop, 1);
    pthread_cond_broadcast(&c->turn_cv);
    pthread_mutex_unlock(&c->mu);
}

/* Writes the held pieces from next_write on while they are done; called
 * with mu held (released while writing: only one writer at a time). */
static void crew_write_held(crew *c)
{
    while (!c->err && !c->writer && c->next_write < c->np &&
           c->pc[c->next_write].state == PIECE_HELD) {
        piece *q = &c->pc[c->next_write];
        c->writer = 1;
        pthread_mutex_unlock(&c->mu);
        bl_err err = bl_fd_write_all(1, q->out.data, q->out.len);
        int werr = errno;
        size_t n = q->out.len;
        bl_buf_cleanup(&q->out);
        pthread_mutex_lock(&c->mu);
        c->held_done -= n;
        c->writer = 0;
        if (err && !c->err) {
            c->err = BL_EIO;
            c->werr = werr;
            atomic_store(&c->stop, 1);
        }
        q->state = PIECE_WRITTEN;
        c->next_write++;
        pthread_cond_broadcast(&c->turn_cv);
    }
}

/* Whether it is piece k's turn (waiting for it when `wait`); `held` is the
 * output piece k holds now. */
static int crew_turn(crew *c, int k, int wait, size_t held)
{
    pthread_mutex_lock(&c->mu);
    if (held > c->max_held)
        c->max_held = held;
    while (wait && !c->err && (c->next_write != k || c->writer))
        pthread_cond_wait(&c->turn_cv, &c->mu);
    int mine = !c->err && c->next_write == k && !c->writer;
    pthread_mutex_unlock(&c->mu);
    return mine;
}

/* How far ahead (in frame lines) a worker prefetches what frames will read
 * (bl_retracer_prefetch): a retraced frame waits on a few dependent cache
 * misses (lookup entry, class record and methods, strings), so each is
 * started this many frames before it is needed. Tried 6/3, 8/4, 16/8. */
#define PF_FAR 8
#define PF_NEAR 4
#define PF_NEXT 2
/* Retraces piece k with rt. Returns 0 on failure (recorded in c). */
static int crew_piece(crew *c, bl_retracer *rt, int k, uint64_t *lines)
{
    piece *pc = &c->pc[k];
    int streaming = crew_turn(c, k, 0, 0);
    /* room for the output at once (a retraced trace is a few times longer
     * than its input; streaming flushes at 1 MiB): growing by doubling
     * copied each piece's output several times into fresh pages. Only a
     * hint: the appends still grow the buffer as needed. */
    size_t guess = (size_t)(pc->e - pc->p) * OUT_PER_IN_BYTE + 4096;
    size_t most = streaming ? ((size_t)1 << 20) + 65536 : c->hold_max + 65536;
    (void)bl_buf_reserve(&pc->out, guess < most ? guess : most);
    size_t ask_at = (size_t)1 << 20; /* held output at which to ask again */
    const char *p = pc->p;
    /* the scan's first frame line in the piece: those lines are not read
     * again (bl_retracer_frame_line) */
    uint64_t as_scanned = 0;
    size_t fn = c->pos ? c->npos : 0, fi = 0, hi = fn, at = (size_t)(p - c->text);
    while (fi < hi) {
        size_t mid = fi + (hi - fi) / 2;
        if (c->pos[mid].off < at)
            fi = mid + 1;
        else
            hi = mid;
    }
    while (p < pc->e) {
        const char *nl = memchr(p, '\n', (size_t)(pc->e - p));
        const char *le = nl ? nl : pc->e;
        size_t before = pc->out.len;
        bl_err err;
        if (fi < fn && c->pos[fi].off == (size_t)(p - c->text)) {
            if (fi + PF_FAR < fn) /* the lines after it: see PF_FAR */
                bl_retracer_prefetch(rt, c->pos[fi + PF_FAR].member, c->pos[fi + PF_NEAR].member,
                                     c->pos[fi + PF_NEXT].member);
            const tn_pos *q = &c->pos[fi++];
            bl_frame_pos fp = { q->at, q->name, q->dot, q->open, q->close, q->line };
            err = bl_retracer_frame_line(rt, p, (size_t)(le - p), &fp, q->member, &pc->out);
            as_scanned++;
        } else {
            err = bl_retracer_line(rt, p, (size_t)(le - p), &pc->out);
        }
        if (err) {
            crew_fail(c, err, 0);
            return 0;
        }
        if ((++*lines & 1023) == 0 && atomic_load_explicit(&c->stop, memory_order_relaxed))
            return 0; /* another worker failed: this output would be dropped */
        /* the input's last line had no newline: nor has its output (when
         * it printed any: a line that prints nothing leaves the one before
         * as it was) */
        if (!nl && pc->out.len > before && pc->out.data[pc->out.len - 1] == '\n')
            pc->out.len--;
        p = nl ? nl + 1 : pc->e;
        if (!streaming && pc->out.len >= c->hold_max) {
            streaming = crew_turn(c, k, 1, pc->out.len); /* held enough: wait */
        } else if (!streaming && pc->out.len >= ask_at) {
            streaming = crew_turn(c, k, 0, pc->out.len);
            ask_at = pc->out.len + ((size_t)1 << 20);
        }
        if (streaming && (pc->out.len >= (1 << 20) || p >= pc->e)) {
            if (bl_fd_write_all(1, pc->out.data, pc->out.len) != BL_OK) {
                crew_fail(c, BL_EIO, errno);
                return 0;
            }
            bl_buf_reset(&pc->out);
        }
        if (!streaming && pc->out.len >= c->hold_max)
            return 0; /* waited, and a failure came instead of the turn */
    }
    atomic_fetch_add_explicit(&c->as_scanned, as_scanned, memory_order_relaxed);
    pthread_mutex_lock(&c->mu);
    if (streaming) { /* written: the turn passes on */
        bl_buf_cleanup(&pc->out);
        pc->state = PIECE_WRITTEN;
        c->next_write = k + 1;
        pthread_cond_broadcast(&c->turn_cv);
    } else {
        pc->state = PIECE_HELD;
        c->held_done += pc->out.len;
        if (pc->out.len > c->max_held)
            c->max_held = pc->out.len;
    }
    crew_write_held(c);
    pthread_mutex_unlock(&c->mu);
    return 1;
}

static void *crew_work(void *arg)
{
    crew *c = arg;
    bl_retracer *rt;
    bl_err err = bl_retracer_new(c->mi, c->opts, &rt);
    if (err) {
        crew_fail(c, err, 0);
        return NULL;
    }
    if (c->lk) /* the trace's names are resolved: the memo is for the rest */
        bl_retracer_use_lookups(rt, c->lk);
    else
        bl_retracer_expect(rt, c->expect);
    uint64_t lines = 0;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        /* finished pieces hold enough: wait until they are written (the
         * piece whose turn it is is in progress or being written) */
        while (!c->err && c->held_done >= c->hold_max && c->next_take < c->np)
            pthread_cond_wait(&c->turn_cv, &c->mu);
        int k = c->err ? c->np : c->next_take;
        if (k < c->np)
            c->next_take++;
        pthread_mutex_unlock(&c->mu);
        if (k >= c->np || !crew_piece(c, rt, k, &lines))
            break;
    }
    uint64_t filled = bl_retracer_filled(rt);
    uint64_t resolved = bl_retracer_resolved(rt);
    bl_retracer_free(rt);
    pthread_mutex_lock(&c->mu);
    c->lines += lines;
    c->resolved += resolved;
    c->filled += filled;
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Cuts [p, e) into pieces of about `size` bytes, each after the first
 * starting at an exception line; fills pc (p, e) and returns how many
 * (at most max). */
static int cut_pieces(const bl_mapindex *mi, const char *p, const char *e, size_t size,
                      int max, piece *pc)
{
    int n = 0;
    const char *start = p;
    while (n + 1 < max && (size_t)(e - start) > size + size / 2) {
        const char *q = start + size;
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
        pc[n].p = start;
        pc[n].e = q;
        n++;
        start = q;
    }
    pc[n].p = start;
    pc[n].e = e;
    return n + 1;
}

/*
 * The trace's distinct frame names (class, method) are looked up in the
 * index once, for every retrace thread (bl_retrace_lookups), instead of by
 * each thread for itself (with two threads, each met most of them: about
 * 25,000 of 35,000 on the 100,000-frame benchmark, each lookup a few
 * dependent cache misses). An entry per name the scan numbered, filled by
 * the first thread that retraces a frame of it (bl_retracer_frame_line with
 * the name's number), when that frame needs it: its class record and method
 * entries are then in the cache for that frame. NULL when there are no
 * names or no memory (each thread then looks names up itself). Owned by
 * the caller (bl_retrace_lookups_free).
 */
static bl_retrace_lookups *shared_lookups(const bl_mapindex *mi, const trace_names *t)
{
    if (t->members.n < 1 || t->members.n > ((size_t)1 << 22))
        return NULL;
    bl_retrace_lookups *lk;
    if (bl_retrace_lookups_new(mi, (uint32_t)t->members.n, &lk) != BL_OK)
        return NULL;
    if (bl_retrace_lookups_seal(lk) != BL_OK) {
        bl_retrace_lookups_free(lk);
        return NULL;
    }
    return lk;
}

/* Retraces [p, p+len) to standard output on up to `threads` threads;
 * `expect` is the trace's number of distinct frames when known (else 0), a
 * hint for each retracer's memo (bl_retracer_expect); `lk` (may be NULL)
 * the trace's names resolved once (see shared_lookups). Returns 0, or 1
 * after printing why it failed; *pieces, *workers (threads that retraced),
 * *lines, *held (the most output bytes a piece held before its turn) and
 * *resolved (names the retracers looked up themselves) say what was done. */
static int retrace_all(const bl_mapindex *mi, const bl_retrace_opts *ropts, const char *p,
                       size_t len, int threads, uint32_t expect, const bl_retrace_lookups *lk,
                       const tn_pos *pos, size_t npos, int *pieces, int *workers,
                       uint64_t *lines, size_t *held, uint64_t *resolved,
                       uint64_t *filled, uint64_t *as_scanned)
{
    crew c;
    memset(&c, 0, sizeof c);
    atomic_init(&c.stop, 0);
    atomic_init(&c.as_scanned, 0);
    c.mi = mi;
    c.opts = ropts;
    c.hold_max = PART_OUT_CAP;
    c.expect = expect;
    c.lk = lk;
    c.text = p;
    c.pos = pos;
    c.npos = npos;
    /* tests make pieces wait without writing gigabytes: a smaller bound */
    const char *hm = getenv("BEATLINE_RETRACE_HOLD_MAX");
    if (hm && *hm >= '1' && *hm <= '9') {
        unsigned long long v = strtoull(hm, NULL, 10);
        if (v >= 4096 && v < PART_OUT_CAP)
            c.hold_max = (size_t)v;
    }
    int want = 1;
    if (threads > 1 && len >= PART_MIN_BYTES && len <= PART_MAX_BYTES)
        want = threads * PIECES_PER_THREAD;
    size_t size = len / (size_t)want;
    if (size < PIECE_MIN_BYTES)
        size = PIECE_MIN_BYTES;
    c.pc = calloc((size_t)want, sizeof *c.pc);
    if (!c.pc) {
        fprintf(stderr, "beatline-retrace: %s\n", bl_err_str(BL_ENOMEM));
        return 1;
    }
    c.np = cut_pieces(mi, p, p + len, size, want, c.pc);
    for (int k = 0; k < c.np; k++)
        bl_buf_init(&c.pc[k].out, 0);
    int mu_ok = pthread_mutex_init(&c.mu, NULL) == 0;
    if (!mu_ok || pthread_cond_init(&c.turn_cv, NULL) != 0) {
        if (mu_ok)
            pthread_mutex_destroy(&c.mu);
        free(c.pc);
        fprintf(stderr, "beatline-retrace: cannot set up the retrace threads\n");
        return 1;
    }
    pthread_t th[MAX_PARTS];
    int started = 0;
    for (int k = 1; k < threads && k < c.np && k < MAX_PARTS; k++)
        if (pthread_create(&th[started], NULL, crew_work, &c) == 0)
            started++;
    crew_work(&c);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    for (int k = 0; k < c.np; k++)
        bl_buf_cleanup(&c.pc[k].out);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.turn_cv);
    free(c.pc);
    *pieces = c.np;
    *workers = started + 1;
    *lines = c.lines;
    *held = c.max_held;
    *resolved = c.resolved;
    *filled = c.filled;
    *as_scanned = atomic_load(&c.as_scanned);
    if (c.err == BL_EIO)
        fprintf(stderr, "beatline-retrace: write: %s\n", strerror(c.werr));
    else if (c.err)
        fprintf(stderr, "beatline-retrace: %s\n", bl_err_str(c.err));
    return c.err ? 1 : 0;
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
    if (index_out && trace_given) {
        fprintf(stderr, "beatline-retrace: --build-index takes no STACKTRACE\n");
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
            long cpus = threads ? threads : sysconf(_SC_NPROCESSORS_ONLN);
            names_scan(&want, in.data ? in.data : "", in.len, cpus >= 2 ? 2 : 1);
            want_ok = !want.failed;
            names_index(&want);
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
        const char *why;
        err = bl_mapindex_verify(mdata, mlen, &why);
        if (err) {
            fprintf(stderr,
                    "beatline-retrace: %s: bad index: %s; build it again from the mapping "
                    "(--build-index)\n",
                    mapping, why);
            rc = 1;
            goto out;
        }
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
        bo.no_checksum = !index_out; /* opened at once, not written out */
        bo.release_text = 1;         /* mdata: a private read-only file mapping, read no more */
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
        if (err == BL_EFORMAT) { /* the line itself was reported (unless --quiet) */
            fprintf(stderr, "beatline-retrace: %s:%llu: stopped at this malformed line (--strict)\n",
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
        if (ms.class_lines == 0 && ms.malformed > 0) {
            fprintf(stderr,
                    "beatline-retrace: %s: no class line ('original -> obfuscated:') in %llu "
                    "lines: not a mapping file?\n",
                    mapping, (unsigned long long)ms.lines);
            rc = 2;
            goto out;
        }
        if (ms.class_lines == 0 && !quiet)
            fprintf(stderr,
                    "beatline-retrace: %s: no class line in %llu lines (an empty mapping): "
                    "nothing is renamed\n",
                    mapping, (unsigned long long)ms.lines);
        if (stats)
            fprintf(stderr,
                    "beatline-retrace: mapping: %zu bytes, %llu lines, %llu class lines; "
                    "indexed %u class%s, %u method line%s, %u field%s (%s) in %.1f ms = %.0f "
                    "MB/s (parse %.1f ms on %u thread%s in %u part%s, index written in memory "
                    "in %.1f ms, "
                    "%zu bytes)\n",
                    mlen, (unsigned long long)ms.lines, (unsigned long long)ms.class_lines,
                    ms.classes, ms.classes == 1 ? "" : "es", ms.methods,
                    ms.methods == 1 ? "" : "s", ms.fields, ms.fields == 1 ? "" : "s",
                    index_out || !want_ok ? "all"
                    : ms.by_range     ? "those the trace names, by its lines"
                                      : "those the trace names",
                    t1 - t0, (double)mlen / 1e6 / ((t1 - t0) / 1e3), ms.parse_us / 1e3,
                    ms.threads, ms.threads > 1 ? "s" : "", ms.parts, ms.parts > 1 ? "s" : "",
                    ms.write_us / 1e3, img.len);
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

    /* retrace line by line (see "Retracing a big trace on several threads") */
    {
        double r0 = now_ms();
        long ncpu = threads ? threads : sysconf(_SC_NPROCESSORS_ONLN);
        int nth = ncpu > MAX_PARTS ? MAX_PARTS : ncpu < 1 ? 1 : (int)ncpu;
        int pieces = 0, workers = 1;
        uint64_t n_lines = 0;
        size_t held = 0;
        /* the scan counted the distinct frames: the retracers' memos are
         * made that big at once */
        uint32_t expect = want_ok ? (uint32_t)want.members.n : 0;
        /* the scan listed the distinct frame names: resolved once for all
         * the retrace threads */
        bl_retrace_lookups *lk = want_ok ? shared_lookups(mi, &want) : NULL;
        uint64_t resolved = 0, filled = 0, as_scanned = 0;
        /* the scan's reading of each frame line, when it has all of them */
        const tn_pos *pos = want_ok && in.data ? want.pos.v : NULL;
        rc = retrace_all(mi, &ropts, in.data ? in.data : "", in.len, nth, expect, lk, pos,
                         pos ? want.pos.n : 0, &pieces, &workers, &n_lines, &held, &resolved,
                         &filled, &as_scanned);
        int had_lk = lk != NULL;
        bl_retrace_lookups_free(lk);
        if (stats && !rc)
            fprintf(stderr,
                    "beatline-retrace: retraced %llu lines in %.1f ms (%d piece%s on %d "
                    "thread%s; distinct frame names resolved once for all threads: %llu of "
                    "%u; names a thread looked up for itself: %llu; frame lines retraced as "
                    "the scan read them: %llu; output a piece held back to keep the order: "
                    "at most %.1f MiB)\n",
                    (unsigned long long)n_lines, now_ms() - r0, pieces, pieces > 1 ? "s" : "",
                    workers, workers > 1 ? "s" : "", (unsigned long long)filled,
                    had_lk ? expect : 0u, (unsigned long long)resolved,
                    (unsigned long long)as_scanned, (double)held / (1 << 20));
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
