/* fuzz_mapping — arbitrary bytes as a mapping file: parse, build the index,
 * open it, retrace a fixed trace and symbolicate a method with it; then
 * build it again parsed on two threads (opts.threads = 2, parts split down
 * to one byte left: split_min = 1), and again reading
 * only the members the trace names, then only their ranges holding the
 * trace's lines (a member with a frame without a line: only the
 * outermost line of each other group), each also in two halves: every
 * build must retrace the trace to the same text as the first (and the lazy
 * ones with the same counts in one and two halves). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"
#include "symbol/symbolicate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char trace[] = "java.lang.NullPointerException: x\n"
                            "\tat a.a(SourceFile:1)\n"
                            "\tat a.a(SourceFile:7)\n"
                            "\tat a.b(Unknown Source)\n"
                            "\tat a.a.a(SourceFile:0)\n"
                            "\tat b.a(:3)\n"
                            "E AndroidRuntime: \tat a.a(Main.kt:2)\n"
                            "W System.err:     at a.b(SourceFile)\n"
                            "Caused by: a.b\n"
                            "\tat kj.a(SourceFile:65535)\n";

/* Names of the fixed trace (want_class / want_member): a small list. */
typedef struct names {
    char v[64][64];
    int64_t line[64]; /* as looked up: 0 = none */
    int n;
} names;

static void add_name(void *ctx, const char *cls, size_t cn, const char *method, size_t mn,
                     int64_t line)
{
    names *s = ctx;
    if (s->n >= 63 || cn + mn + 2 > 64)
        return; /* an exception line's class (method NULL) as "cls#" */
    s->line[s->n] = line > 0 ? line : 0;
    memcpy(s->v[s->n], cls, cn);
    s->v[s->n][cn] = '#';
    if (mn)
        memcpy(s->v[s->n] + cn + 1, method, mn);
    s->v[s->n][cn + 1 + mn] = '\0';
    s->n++;
}

static int has(const names *s, const char *cls, size_t cn, const char *m, size_t mn)
{
    for (int i = 0; i < s->n; i++) {
        const char *v = s->v[i];
        const char *hash = strchr(v, '#');
        if ((size_t)(hash - v) != cn || memcmp(v, cls, cn))
            continue;
        if (!m || (strlen(hash + 1) == mn && !memcmp(hash + 1, m, mn)))
            return 1;
    }
    return 0;
}

static int want_class(void *ctx, const char *cls, size_t n)
{
    return has(ctx, cls, n, NULL, 0);
}

static int want_member(void *ctx, const char *cls, size_t cn, const char *name, size_t nn)
{
    return has(ctx, cls, cn, name, nn);
}

/* As beatline-retrace answers: a range holding a line of the member's
 * frames (line 0, a frame without a line, included) is read; else, when
 * the member has a frame without a line, only the outermost line of each
 * of its groups (BL_MI_WANT_OUTER); else none. */
static int want_range(void *ctx, const char *cls, size_t cn, const char *name, size_t nn,
                      uint32_t a, uint32_t b)
{
    const names *s = ctx;
    int zero = 0;
    for (int i = 0; i < s->n; i++) {
        names one = { .n = 1 };
        memcpy(one.v[0], s->v[i], sizeof one.v[0]);
        if (!has(&one, cls, cn, name, nn))
            continue;
        if (s->line[i] >= a && s->line[i] <= b)
            return 1;
        zero |= s->line[i] == 0;
    }
    return zero ? BL_MI_WANT_OUTER : 0;
}

/* Builds with opts and retraces the fixed trace: the output (malloc'd) or
 * NULL when the build fails. */
static char *build_and_retrace(const uint8_t *data, size_t size, const bl_mi_build_opts *opts,
                               bl_mi_stats *st)
{
    bl_buf img, out;
    bl_buf_init(&img, 0);
    bl_buf_init(&out, 0);
    char *res = NULL;
    memset(st, 0, sizeof *st);
    if (bl_mapindex_build((const char *)data, size, opts, &img, st) == BL_OK) {
        bl_mapindex *mi;
        if (bl_mapindex_from_memory(img.data, img.len, &mi) != BL_OK)
            abort();
        /* verbose, then not (a line-less ambiguous frame loses its lines
         * only without verbose) */
        bl_retrace_opts o = { 1 }, q = { 0 };
        if (bl_retrace_text(mi, &o, trace, sizeof trace - 1, &out) != BL_OK ||
            bl_retrace_text(mi, &q, trace, sizeof trace - 1, &out) != BL_OK)
            abort();
        res = strdup(out.data ? out.data : "");
        if (!res)
            abort();
        bl_mapindex_close(mi);
    }
    bl_buf_cleanup(&img);
    bl_buf_cleanup(&out);
    return res;
}

static void same_or_abort(const char *a, const bl_mi_stats *sa, const char *b,
                          const bl_mi_stats *sb, int counts)
{
    if (!a != !b || (a && strcmp(a, b)))
        abort();
    if (counts && (sa->lines != sb->lines || sa->malformed != sb->malformed ||
                   sa->warnings != sb->warnings || sa->classes != sb->classes ||
                   sa->methods != sb->methods || sa->fields != sb->fields ||
                   sa->map_version != sb->map_version))
        abort();
}

static void differential(const uint8_t *data, size_t size)
{
    bl_mi_stats s1, s2, s3, s4, s5, s6;
    bl_mi_build_opts one = { 0 }, two = { 0 };
    one.threads = 1;
    two.threads = 2;
    two.split_min = 1; /* parts split off parts too (when the timing allows) */
    char *r1 = build_and_retrace(data, size, &one, &s1);
    char *r2 = build_and_retrace(data, size, &two, &s2);
    same_or_abort(r1, &s1, r2, &s2, 1);
    names ns = { .n = 0 };
    bl_retrace_trace_names(trace, sizeof trace - 1, add_name, &ns);
    bl_mi_build_opts lazy1 = { 0 }, lazy2;
    lazy1.want_class = want_class;
    lazy1.want_member = want_member;
    lazy1.want_ctx = &ns;
    lazy1.threads = 1;
    lazy2 = lazy1;
    lazy2.threads = 2;
    lazy2.split_min = 1;
    char *r3 = build_and_retrace(data, size, &lazy1, &s3);
    char *r4 = build_and_retrace(data, size, &lazy2, &s4);
    /* lazy builds skip lines unread: their counts differ, the output not */
    same_or_abort(r1, &s1, r3, &s3, 0);
    same_or_abort(r3, &s3, r4, &s4, 1);
    bl_mi_build_opts range1 = lazy1, range2 = lazy2;
    range1.want_range = range2.want_range = want_range;
    char *r5 = build_and_retrace(data, size, &range1, &s5);
    char *r6 = build_and_retrace(data, size, &range2, &s6);
    same_or_abort(r1, &s1, r5, &s5, 0);
    same_or_abort(r5, &s5, r6, &s6, 1);
    if (s5.by_range != s6.by_range)
        abort();
    free(r1);
    free(r2);
    free(r3);
    free(r4);
    free(r5);
    free(r6);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    differential(data, size);
    bl_buf img;
    bl_buf_init(&img, 0);
    if (bl_mapindex_build((const char *)data, size, NULL, &img, NULL) == BL_OK) {
        bl_mapindex *mi;
        if (bl_mapindex_from_memory(img.data, img.len, &mi) == BL_OK) {
            bl_buf out, store;
            bl_buf_init(&out, 0);
            bl_buf_init(&store, 0);
            bl_retrace_opts o = { 1 };
            bl_retrace_text(mi, &o, trace, sizeof trace - 1, &out);
            bl_symbol s;
            bl_symbolicate_method(mi, "a", "a", "(La/b;I)V", &store, &s);
            bl_buf_cleanup(&out);
            bl_buf_cleanup(&store);
            bl_mapindex_close(mi);
        } else {
            abort(); /* a built image must always open */
        }
    }
    bl_buf_cleanup(&img);
    return 0;
}
