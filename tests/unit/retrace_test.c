/*
 * retrace_test.c — golden retrace cases (tests/cases/retrace/NNNN-name/:
 * mapping.txt + input.txt + expected.txt [+ args]) and the index file.
 * Real R8 mappings are tested in r8_test.c.
 */
#include <unistd.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"
#include "symbol_testutil.h"

#define CASES_DIR BL_SOURCE_DIR "/tests/cases/retrace"
#define MAX_CASES 256

static char *case_names[MAX_CASES];
static int n_cases;



/* A tiny set of names for the lazy (want_class / want_member / want_range)
 * builds: frame classes as "cls", frame members as "cls#method", and in
 * `lines` each frame's member with its line as the retracer looks it up:
 * "cls#method@L" (L = 0 when the frame has none). */
typedef struct names {
    char *v[4096];
    int n;
    char *lines[4096];
    int nl;
} names;

static void add_str(names *s, const char *p, size_t n)
{
    ck_assert_int_lt(s->n, 4096);
    s->v[s->n] = strndup(p, n);
    ck_assert_ptr_nonnull(s->v[s->n]);
    s->n++;
}

static void add_name(void *ctx, const char *cls, size_t cn, const char *method, size_t mn,
                     int64_t line)
{
    names *s = ctx;
    add_str(s, cls, cn); /* an exception line's class too (method NULL) */
    if (!method)
        return;
    char buf[1024];
    int k = snprintf(buf, sizeof buf, "%.*s#%.*s", (int)cn, cls, (int)mn, method);
    ck_assert(k > 0 && (size_t)k < sizeof buf);
    add_str(s, buf, (size_t)k);
    k = snprintf(buf, sizeof buf, "%.*s#%.*s@%lld", (int)cn, cls, (int)mn, method,
                 (long long)(line > 0 ? line : 0));
    ck_assert(k > 0 && (size_t)k < sizeof buf);
    ck_assert_int_lt(s->nl, 4096);
    s->lines[s->nl] = strdup(buf);
    ck_assert_ptr_nonnull(s->lines[s->nl]);
    s->nl++;
}

/* The names `in` mentions (frame classes and class#method); free with
 * names_free. */
static names *names_of(const char *in, size_t n)
{
    names *ns = calloc(1, sizeof *ns);
    ck_assert_ptr_nonnull(ns);
    bl_retrace_trace_names(in, n, add_name, ns);
    return ns;
}

static void names_free(names *ns)
{
    for (int i = 0; i < ns->n; i++)
        free(ns->v[i]);
    for (int i = 0; i < ns->nl; i++)
        free(ns->lines[i]);
    free(ns);
}

static int has_str(const names *s, const char *p, size_t n)
{
    for (int i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == n && !memcmp(s->v[i], p, n))
            return 1;
    return 0;
}

static int has_name(void *ctx, const char *cls, size_t n)
{
    return has_str(ctx, cls, n);
}

static int has_member(void *ctx, const char *cls, size_t cn, const char *name, size_t nn)
{
    char buf[1024];
    int k = snprintf(buf, sizeof buf, "%.*s#%.*s", (int)cn, cls, (int)nn, name);
    ck_assert(k > 0 && (size_t)k < sizeof buf);
    return has_str(ctx, buf, (size_t)k);
}

/* Frame names (class, method) of a trace for shared lookups, pointing
 * into the trace text (bl_retrace_trace_names order, repeats kept). */
typedef struct lk_name {
    const char *c, *m;
    size_t cn, mn;
} lk_name;

typedef struct lk_names {
    lk_name *v;
    uint32_t n, cap;
    /* frame lines as read: start, positions, index of the name in v */
    const char **at;
    bl_frame_pos *fp;
    uint32_t *ix;
    uint32_t nf, capf;
} lk_names;

static void lk_pos(void *ctx, const char *line, const bl_frame_pos *fp)
{
    lk_names *s = ctx;
    if (s->nf == s->capf) {
        s->capf = s->capf ? 2 * s->capf : 16;
        s->at = realloc(s->at, s->capf * sizeof *s->at);
        s->fp = realloc(s->fp, s->capf * sizeof *s->fp);
        s->ix = realloc(s->ix, s->capf * sizeof *s->ix);
        ck_assert(s->at && s->fp && s->ix);
    }
    s->at[s->nf] = line;
    s->fp[s->nf] = *fp;
    s->ix[s->nf++] = s->n; /* the name that follows (lk_add numbers it as
                              the first one equal to it) */
}

static void lk_add(void *ctx, const char *cls, size_t cn, const char *method, size_t mn,
                   int64_t line)
{
    (void)line;
    lk_names *s = ctx;
    if (!method)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        ck_assert_ptr_nonnull(s->v);
    }
    s->v[s->n++] = (lk_name){ cls, method, cn, mn };
    /* the frame line just read gets the number of the name's first
     * occurrence (as beatline-retrace numbers the distinct names) */
    if (s->nf && s->ix[s->nf - 1] == s->n - 1)
        for (uint32_t k = 0; k + 1 < s->n; k++)
            if (s->v[k].cn == cn && s->v[k].mn == mn && !memcmp(s->v[k].c, cls, cn) &&
                !memcmp(s->v[k].m, method, mn)) {
                s->ix[s->nf - 1] = k;
                break;
            }
}

/* Some frame of cls.name has line 0 or a line in [a, b] (linear: the
 * oracle for the CLI's sorted per-member lines). */
static int has_range(void *ctx, const char *cls, size_t cn, const char *name, size_t nn,
                     uint32_t a, uint32_t b)
{
    const names *s = ctx;
    char buf[1024];
    int k = snprintf(buf, sizeof buf, "%.*s#%.*s@", (int)cn, cls, (int)nn, name);
    ck_assert(k > 0 && (size_t)k < sizeof buf);
    for (int i = 0; i < s->nl; i++) {
        if (strncmp(s->lines[i], buf, (size_t)k))
            continue;
        unsigned long long L = strtoull(s->lines[i] + k, NULL, 10);
        if (L == 0 || (L >= a && L <= b))
            return 1;
    }
    return 0;
}

START_TEST(golden_case)
{
    ck_assert_int_lt(_i, n_cases);
    char path[1024];
    const char *name = case_names[_i];
    size_t mn, in_n, en;
    snprintf(path, sizeof path, "%s/%s/mapping.txt", CASES_DIR, name);
    char *mapping = tu_read_file(path, &mn);
    snprintf(path, sizeof path, "%s/%s/input.txt", CASES_DIR, name);
    char *input = tu_read_file(path, &in_n);
    snprintf(path, sizeof path, "%s/%s/expected.txt", CASES_DIR, name);
    char *expected = tu_read_file(path, &en);
    snprintf(path, sizeof path, "%s/%s/args", CASES_DIR, name);
    char *args = tu_read_file(path, NULL);
    ck_assert_msg(mapping && input && expected, "case %s incomplete", name);
    int verbose = args && strstr(args, "--verbose");
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(mapping, mn, &img, &st);
    char *got = tu_retrace_str(mi, verbose, input);
    ck_assert_msg(strcmp(got, expected) == 0, "case %s:\n--- expected\n%s--- got\n%s", name,
                  expected, got);
    free(got);
    /* three times in one retracer: remembered lookups give the same */
    {
        size_t il = strlen(input), el = strlen(expected);
        ck_assert(il > 0 && input[il - 1] == '\n' && el > 0);
        char *in3 = malloc(3 * il + 1), *ex3 = malloc(3 * el + 1);
        ck_assert(in3 && ex3);
        for (int r = 0; r < 3; r++) {
            memcpy(in3 + r * il, input, il);
            memcpy(ex3 + r * el, expected, el);
        }
        in3[3 * il] = ex3[3 * el] = '\0';
        got = tu_retrace_str(mi, verbose, in3);
        ck_assert_msg(strcmp(got, ex3) == 0, "case %s (x3):\n--- expected\n%s--- got\n%s", name,
                      ex3, got);
        free(got);
        /* the same, line by line, by a retracer whose memo was made big at
         * once (bl_retracer_expect, as beatline-retrace does) */
        bl_retracer *rt;
        bl_retrace_opts o = { verbose };
        ck_assert_int_eq(bl_retracer_new(mi, &o, &rt), BL_OK);
        bl_retracer_expect(rt, 4096);
        bl_buf out;
        bl_buf_init(&out, 0);
        for (const char *p = in3; *p;) {
            const char *nl = strchr(p, '\n');
            ck_assert_int_eq(bl_retracer_line(rt, p, (size_t)(nl - p), &out), BL_OK);
            p = nl + 1;
        }
        ck_assert_msg(out.data && strcmp(out.data, ex3) == 0,
                      "case %s (x3, memo sized at once):\n--- expected\n%s--- got\n%s", name, ex3,
                      out.data ? out.data : "");
        bl_buf_cleanup(&out);
        bl_retracer_free(rt);
        /* the same by two retracers (lines in turn) sharing lookups made
         * once for the trace's names (as beatline-retrace's threads do):
         * same output, and no name looked up again by either */
        lk_names ln = { 0 };
        bl_retrace_trace_frames(in3, strlen(in3), lk_add, lk_pos, &ln);
        bl_retrace_lookups *lk = NULL;
        if (ln.n) {
            ck_assert_int_eq(bl_retrace_lookups_new(mi, ln.n, &lk), BL_OK);
            for (uint32_t k = 0; k < ln.n; k++) /* backwards: order does not matter */
                bl_retrace_lookups_resolve(lk, ln.n - 1 - k, ln.v[ln.n - 1 - k].c,
                                           ln.v[ln.n - 1 - k].cn, ln.v[ln.n - 1 - k].m,
                                           ln.v[ln.n - 1 - k].mn);
            ck_assert_int_eq(bl_retrace_lookups_seal(lk), BL_OK);
        }
        bl_retracer *two[2];
        bl_buf o2[2];
        for (int r = 0; r < 2; r++) {
            ck_assert_int_eq(bl_retracer_new(mi, &o, &two[r]), BL_OK);
            bl_retracer_use_lookups(two[r], lk);
            bl_buf_init(&o2[r], 0);
        }
        /* each copy of the input by the retracer of its turn (a copy starts
         * with an exception line or is the first: a cut is allowed there
         * only when the input starts with one; else one retracer does all) */
        int cut_ok = bl_retrace_starts_block(mi, input, (size_t)(strchr(input, '\n') - input));
        int r = 0;
        const char *p = in3;
        for (int copy = 0; copy < 3; copy++) {
            bl_buf *ob = &o2[r];
            for (const char *e3 = p + il; p < e3;) {
                const char *nl = strchr(p, '\n');
                ck_assert_int_eq(bl_retracer_line(two[r], p, (size_t)(nl - p), ob), BL_OK);
                p = nl + 1;
            }
            if (cut_ok && copy < 2) { /* the next copy by the other retracer */
                ck_assert_int_eq(bl_buf_append(&o2[1 - r], o2[r].data, o2[r].len), BL_OK);
                bl_buf_reset(&o2[r]);
                r = 1 - r;
            }
        }
        ck_assert_msg(o2[r].data && strcmp(o2[r].data, ex3) == 0,
                      "case %s (x3, shared lookups):\n--- expected\n%s--- got\n%s", name, ex3,
                      o2[r].data ? o2[r].data : "");
        ck_assert_msg(!lk || (bl_retracer_resolved(two[0]) == 0 && bl_retracer_resolved(two[1]) == 0),
                      "case %s: names looked up again: %llu, %llu", name,
                      (unsigned long long)bl_retracer_resolved(two[0]),
                      (unsigned long long)bl_retracer_resolved(two[1]));
        for (int k = 0; k < 2; k++) {
            bl_retracer_free(two[k]);
            bl_buf_cleanup(&o2[k]);
        }
        /* the same with each frame line given as the scan read it
         * (bl_retracer_frame_line: not read again, its name by number),
         * with lookups sealed empty: each distinct name resolved into
         * them once, when first met */
        bl_retrace_lookups_free(lk);
        lk = NULL;
        if (ln.n) {
            ck_assert_int_eq(bl_retrace_lookups_new(mi, ln.n, &lk), BL_OK);
            ck_assert_int_eq(bl_retrace_lookups_seal(lk), BL_OK);
        }
        ck_assert_int_eq(bl_retracer_new(mi, &o, &rt), BL_OK);
        bl_retracer_use_lookups(rt, lk);
        bl_buf_init(&out, 0);
        uint32_t f = 0;
        for (const char *q = in3; *q;) {
            const char *nl = strchr(q, '\n');
            if (f < ln.nf && ln.at[f] == q) {
                ck_assert_int_eq(bl_retracer_frame_line(rt, q, (size_t)(nl - q), &ln.fp[f],
                                                        ln.ix[f], &out),
                                 BL_OK);
                f++;
            } else {
                ck_assert_int_eq(bl_retracer_line(rt, q, (size_t)(nl - q), &out), BL_OK);
            }
            q = nl + 1;
        }
        ck_assert_uint_eq(f, ln.nf);
        ck_assert_msg(out.data && strcmp(out.data, ex3) == 0,
                      "case %s (x3, frame lines as scanned):\n--- expected\n%s--- got\n%s",
                      name, ex3, out.data ? out.data : "");
        uint32_t distinct = 0;
        for (uint32_t k = 0; k < ln.n; k++) {
            uint32_t j = 0;
            while (j < k && !(ln.v[j].cn == ln.v[k].cn && ln.v[j].mn == ln.v[k].mn &&
                              !memcmp(ln.v[j].c, ln.v[k].c, ln.v[k].cn) &&
                              !memcmp(ln.v[j].m, ln.v[k].m, ln.v[k].mn)))
                j++;
            distinct += j == k;
        }
        ck_assert_msg(bl_retracer_resolved(rt) == 0 && bl_retracer_filled(rt) == distinct,
                      "case %s: %llu names looked up, %llu resolved into the lookups for %u",
                      name, (unsigned long long)bl_retracer_resolved(rt),
                      (unsigned long long)bl_retracer_filled(rt), distinct);
        bl_buf_cleanup(&out);
        bl_retracer_free(rt);
        bl_retrace_lookups_free(lk);
        free(ln.v);
        free(ln.at);
        free(ln.fp);
        free(ln.ix);
        free(in3);
        free(ex3);
    }
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    /* the same parsed in two halves: same output, statistics, diagnostics */
    bl_buf d1, d2;
    bl_buf_init(&d1, 0);
    bl_buf_init(&d2, 0);
    bl_mi_stats s1, s2;
    mi = tu_index_threads(mapping, mn, 1, &img, &s1, &d1);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    mi = tu_index_threads(mapping, mn, 2, &img, &s2, &d2);
    got = tu_retrace_str(mi, verbose, input);
    ck_assert_msg(strcmp(got, expected) == 0, "case %s (2 threads):\n--- expected\n%s--- got\n%s",
                  name, expected, got);
    ck_assert_msg(d1.len == d2.len && (!d1.len || !memcmp(d1.data, d2.data, d1.len)),
                  "case %s: diagnostics differ with 2 threads:\n%.*s---\n%.*s", name,
                  (int)d1.len, d1.data ? d1.data : "", (int)d2.len, d2.data ? d2.data : "");
    ck_assert_uint_eq(s1.lines, s2.lines);
    ck_assert_uint_eq(s1.malformed, s2.malformed);
    ck_assert_uint_eq(s1.warnings, s2.warnings);
    ck_assert_uint_eq(s1.classes, s2.classes);
    ck_assert_uint_eq(s1.methods, s2.methods);
    ck_assert_uint_eq(s1.fields, s2.fields);
    ck_assert_uint_eq(s1.map_version, s2.map_version);
    ck_assert_uint_eq(s1.threads, 1);
    free(got);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    bl_buf_cleanup(&d1);
    bl_buf_cleanup(&d2);
    /* the same with only the classes the trace names read in full, then
     * only the members its frames name, then that in two halves */
    names *ns = names_of(input, in_n);
    static const char *const mode_name[5] = { "classes", "members", "members, 2 threads",
                                              "ranges", "ranges, 2 threads" };
    for (int mode = 0; mode < 5; mode++) {
        bl_mi_build_opts lazy = { .want_class = has_name, .want_ctx = ns };
        if (mode)
            lazy.want_member = has_member;
        if (mode >= 3)
            lazy.want_range = has_range;
        lazy.threads = mode == 2 || mode == 4 ? 2 : 1;
        mi = tu_index_opts(mapping, mn, &lazy, &img, &st);
        got = tu_retrace_str(mi, verbose, input);
        ck_assert_msg(strcmp(got, expected) == 0,
                      "case %s (lazy %s):\n--- expected\n%s--- got\n%s", name,
                      mode_name[mode], expected, got);
        free(got);
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
    }
    names_free(ns);
    free(mapping);
    free(input);
    free(expected);
    free(args);
}
END_TEST

/* bl_retracer_frame_line takes the scan's reading of the line: the line
 * is not read again (here the positions say line 5 where the text says 3,
 * and the method is found by its position: the output follows them); a
 * position past the line makes it read the line itself. */
START_TEST(frame_line_takes_the_scan_reading)
{
    static const char map[] = "com.example.Foo -> a:\n"
                              "    3:3:void three():30:30 -> b\n"
                              "    5:5:void five():50:50 -> b\n";
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(map, sizeof map - 1, &img, &st);
    static const char line[] = "\tat a.b(SourceFile:3)";
    bl_frame_pos fp = { 1, 4, 5, 7, 20, 3 };
    bl_retracer *rt;
    ck_assert_int_eq(bl_retracer_new(mi, NULL, &rt), BL_OK);
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_retracer_frame_line(rt, line, strlen(line), &fp, 0, &out), BL_OK);
    ck_assert_str_eq(out.data, "\tat com.example.Foo.three(Foo.java:30)\n");
    bl_buf_reset(&out);
    fp.line = 5;
    ck_assert_int_eq(bl_retracer_frame_line(rt, line, strlen(line), &fp, 0, &out), BL_OK);
    ck_assert_str_eq(out.data, "\tat com.example.Foo.five(Foo.java:50)\n");
    bl_buf_reset(&out);
    fp.close = 40; /* past the line: read as bl_retracer_line does */
    ck_assert_int_eq(bl_retracer_frame_line(rt, line, strlen(line), &fp, 0, &out), BL_OK);
    ck_assert_str_eq(out.data, "\tat com.example.Foo.three(Foo.java:30)\n");
    bl_buf_cleanup(&out);
    bl_retracer_free(rt);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
}
END_TEST

START_TEST(golden_cases_exist)
{
    ck_assert_int_ge(n_cases, 20);
}
END_TEST

/* Every golden mapping with two or more class lines has a cut, so the
 * two-thread runs above really parsed two halves — except where a map
 * version comment follows a class line: the build then parses the second
 * half again in order (its version is only known then). */
START_TEST(golden_cases_two_threads)
{
    int two = 0;
    for (int i = 0; i < n_cases; i++) {
        char path[1024];
        size_t mn;
        snprintf(path, sizeof path, "%s/%s/mapping.txt", CASES_DIR, case_names[i]);
        char *mapping = tu_read_file(path, &mn);
        ck_assert_ptr_nonnull(mapping);
        int classes = 0, late_version = 0; /* class lines "a -> b:" not indented */
        for (char *l = mapping; l && *l;) {
            char *nl = strchr(l, '\n');
            size_t n = nl ? (size_t)(nl - l) : strlen(l);
            int arrow = 0;
            for (size_t k = 0; k + 4 <= n && !arrow; k++)
                arrow = !memcmp(l + k, " -> ", 4);
            if (n > 1 && *l != ' ' && *l != '#' && l[n - 1] == ':' && arrow)
                classes++;
            for (size_t k = 0; classes && k + 28 <= n && !late_version; k++)
                late_version = !memcmp(l + k, "com.android.tools.r8.mapping", 28);
            l = nl ? nl + 1 : NULL;
        }
        bl_buf img;
        bl_mi_stats st;
        bl_mapindex *mi = tu_index_threads(mapping, mn, 2, &img, &st, NULL);
        ck_assert_msg(st.threads == (classes >= 2 && !late_version ? 2u : 1u),
                      "%s: %d classes, %u threads", case_names[i], classes, st.threads);
        two += st.threads == 2;
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
        free(mapping);
    }
    ck_assert_int_ge(two, 10);
}
END_TEST

/* An outline frame met again after a frame (not first under an exception):
 * it gives its outline position to the next frame each time. */
START_TEST(remembered_outline_line)
{
    size_t n;
    char *m = tu_read_file(CASES_DIR "/0020-outline/mapping.txt", &n);
    ck_assert_ptr_nonnull(m);
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(m, n, &img, &st);
    const char *block = "java.io.IOException: CODE\n"
                        "\tat x.s(SourceFile:10)\n"
                        "\tat a.a(SourceFile:2)\n"
                        "\tat x.s(SourceFile:1)\n";
    char in[1024];
    snprintf(in, sizeof in, "%s%s%s", block, block, block);
    char *got = tu_retrace_str(mi, 0, in);
    /* the outline method's own frame goes, its inlinee stays; position 2
     * is call-site line 11, original 24 */
    const char *want = "java.io.IOException: CODE\n"
                       "\tat outline.Callsite.outlineCaller(Callsite.java:23)\n"
                       "\tat some.inlinee(some.java:76)\n"
                       "\tat outline.Callsite.outlineCaller(Callsite.java:24)\n";
    char want3[1024];
    snprintf(want3, sizeof want3, "%s%s%s", want, want, want);
    ck_assert_str_eq(got, want3);
    free(got);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    free(m);
}
END_TEST

static void check_lazy_modes(const char *m, const char *in, const char *want);

/* A map-version comment indented inside a class the trace does not name
 * still counts for the classes after it in a lazy build (it enables the
 * synthesized metadata below: the lambda frame goes). */
START_TEST(lazy_build_reads_version_in_skipped_class)
{
    const char *m = "com.example.Unused -> u:\n"
                    "    1:1:void x():1:1 -> a\n"
                    "    # {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"1.0\"}\n"
                    "com.example.Used -> b:\n"
                    "    1:1:void lambda$run$0():10:10 -> a\n"
                    "    # {\"id\":\"com.android.tools.r8.synthesized\"}\n"
                    "    1:1:void run():20 -> a\n";
    const char *in = "java.lang.Error\n\tat b.a(SourceFile:1)\n";
    const char *want = "java.lang.Error\n\tat com.example.Used.run(Used.java:20)\n";
    check_lazy_modes(m, in, want);
}
END_TEST

/* A class-level comment whose id is spelled with a JSON escape, after a
 * member the trace does not name: read in lazy builds too. */
START_TEST(lazy_build_reads_escaped_metadata)
{
    const char *m = "com.example.Foo -> f:\n"
                    "    void bar() -> b\n"
                    "    void baz() -> c\n"
                    "    # {\"id\":\"source\\u0046ile\",\"fileName\":\"Renamed.kt\"}\n";
    const char *in = "java.lang.Error\n\tat f.b(SourceFile:3)\n";
    const char *want = "java.lang.Error\n\tat com.example.Foo.bar(Renamed.kt:3)\n";
    check_lazy_modes(m, in, want);
}
END_TEST

/* Header comments after skipped members, and members of a skipped class
 * after a blank line, in lazy builds: the header is read, the members are
 * still skipped. */
START_TEST(lazy_build_header_and_blank_lines)
{
    const char *m = "com.example.Used -> b:\n"
                    "    1:1:void run():20:20 -> a\n"
                    "    1:1:void other():30:30 -> z\n"
                    "    # pg_map_id: abc123\n"
                    "com.example.Unused -> u:\n"
                    "\n"
                    "    1:1:void x():1:1 -> a\n"
                    "    2:2:void y():2:2 -> b\n";
    const char *in = "java.lang.Error\n\tat b.a(SourceFile:1)\n";
    names *ns = names_of(in, strlen(in));
    bl_mi_build_opts o = { .want_class = has_name, .want_member = has_member, .want_ctx = ns };
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_opts(m, strlen(m), &o, &img, &st);
    ck_assert_str_eq(bl_mapindex_str(mi, bl_mapindex_header(mi)->pg_map_id), "abc123");
    ck_assert_uint_eq(st.methods, 1); /* only b.a: u's members stay unread */
    char *got = tu_retrace_str(mi, 0, in);
    ck_assert_str_eq(got, "java.lang.Error\n\tat com.example.Used.run(Used.java:20)\n");
    free(got);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    names_free(ns);
}
END_TEST

/* A build by range reads only the ranges holding the trace's lines (and
 * every range of a member with a line-less frame), and retraces as the full
 * build does. */
START_TEST(range_build_reads_only_traced_ranges)
{
    const char *m = "com.example.Foo -> a:\n"
                    "    1:3:void one():10:12 -> a\n"
                    "    4:6:void two():20:22 -> a\n"
                    "    4:6:void outer():30 -> a\n"
                    "    7:7:void three(int):40:40 -> a\n"
                    "    void noLines() -> a\n"
                    "    8:9:void four():50:51 -> b\n"
                    "    10:11:void five():60:61 -> b\n"
                    "    int count -> a\n"
                    "    java.lang.String name -> b\n";
    const char *in = "java.lang.Error\n\tat a.a(SourceFile:5)\n\tat a.b(Unknown Source)\n";
    names *ns = names_of(in, strlen(in));
    bl_mi_build_opts o = { .want_class = has_name, .want_member = has_member,
                           .want_range = has_range, .want_ctx = ns };
    bl_buf img, full_img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_opts(m, strlen(m), &o, &img, &st);
    bl_mapindex *full = tu_index_of(m, strlen(m), &full_img, NULL);
    ck_assert_uint_eq(st.by_range, 1);
    /* a.a: the 4:6 group (two entries) and the range-less line; a.b has a
     * frame without a line: both of its ranges */
    ck_assert_uint_eq(st.methods, 5);
    /* fields named as traced methods ("a", "b") are not read: a retrace
     * never looks them up */
    ck_assert_uint_eq(st.fields, 0);
    /* a one-shot index has no original-signature table, the full one has */
    ck_assert_uint_eq(bl_mapindex_methods_by_orig(mi, "com.example.Foo", 15, "outer", 5, NULL, NULL),
                      0);
    ck_assert_uint_eq(
        bl_mapindex_methods_by_orig(full, "com.example.Foo", 15, "outer", 5, NULL, NULL), 1);
    char *got = tu_retrace_str(mi, 0, in), *want = tu_retrace_str(full, 0, in);
    ck_assert_str_eq(got, want);
    ck_assert_str_eq(got, "java.lang.Error\n"
                          "\tat com.example.Foo.two(Foo.java:21)\n"
                          "\tat com.example.Foo.outer(Foo.java:30)\n"
                          "\tat com.example.Foo.five(Foo.java)\n"
                          "\t<OR> at com.example.Foo.four(Foo.java)\n");
    free(got);
    free(want);
    bl_mapindex_close(mi);
    bl_mapindex_close(full);
    bl_buf_cleanup(&img);
    bl_buf_cleanup(&full_img);
    names_free(ns);
}
END_TEST

/* Metadata met while building by range — here a map-version comment after
 * the first class, enabling a synthesized comment on a range the trace
 * does not hit, which holds for the method's other ranges too — makes the
 * build start again without want_range: the output is the full build's,
 * and the malformed line before it is reported once, in one pass or two
 * halves. */
START_TEST(range_build_restarts_on_metadata)
{
    const char *m = "com.example.A -> a:\n"
                    "    1:1:void x():1:1 -> a\n"
                    "    this line is malformed\n"
                    "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"1.0\"}\n"
                    "com.example.B -> b:\n"
                    "    1:2:void lambda$run$0():10:11 -> a\n"
                    "    # {\"id\":\"com.android.tools.r8.synthesized\"}\n"
                    "    3:4:void lambda$run$0():12:13 -> a\n"
                    "    5:5:void run():20:20 -> a\n";
    const char *in = "java.lang.Error\n\tat b.a(SourceFile:3)\n\tat a.a(SourceFile:1)\n";
    bl_buf full_img;
    bl_mapindex *full = tu_index_of(m, strlen(m), &full_img, NULL);
    char *want = tu_retrace_str(full, 0, in);
    ck_assert_str_eq(want, "java.lang.Error\n\tat com.example.A.x(A.java:1)\n");
    names *ns = names_of(in, strlen(in));
    for (int threads = 1; threads <= 2; threads++) {
        bl_buf diags, img;
        bl_buf_init(&diags, 0);
        bl_mi_build_opts o = { .want_class = has_name, .want_member = has_member,
                               .want_range = has_range, .want_ctx = ns, .threads = threads,
                               .diag = tu_diag_collect, .diag_ctx = &diags };
        bl_mi_stats st;
        bl_mapindex *mi = tu_index_opts(m, strlen(m), &o, &img, &st);
        char *got = tu_retrace_str(mi, 0, in);
        ck_assert_msg(strcmp(got, want) == 0, "%d thread(s):\n%s", threads, got);
        ck_assert_uint_eq(st.by_range, 0);
        ck_assert_uint_eq(st.malformed, 1);
        ck_assert_ptr_nonnull(diags.data);
        ck_assert_str_eq(diags.data, "3: member line without ' -> '\n");
        free(got);
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
        bl_buf_cleanup(&diags);
    }
    free(want);
    names_free(ns);
    bl_mapindex_close(full);
    bl_buf_cleanup(&full_img);
}
END_TEST

/* The name scan reads an exception line exactly as the retracer does: here
 * the class after "Caused by: " is the one named "Suppressed" (a by-range
 * build keeps only the class records the scan names). */
START_TEST(range_build_exception_class_as_retraced)
{
    const char *m = "com.example.Sup -> Suppressed:\n"
                    "com.example.Used -> b:\n"
                    "    1:1:void run():20:20 -> a\n";
    const char *in = "Caused by: Suppressed: boom\n\tat b.a(SourceFile:1)\n";
    const char *want = "Caused by: com.example.Sup: boom\n"
                       "\tat com.example.Used.run(Used.java:20)\n";
    check_lazy_modes(m, in, want);
}
END_TEST

/* Retraces `in` with `m` built in full, lazily by class, by member, by
 * member and range: each gives `want`. */
static void check_lazy_modes(const char *m, const char *in, const char *want)
{
    names *ns = names_of(in, strlen(in));
    for (int mode = 0; mode < 4; mode++) {
        bl_mi_build_opts o = { 0 };
        if (mode > 0) {
            o.want_class = has_name;
            o.want_ctx = ns;
        }
        if (mode > 1)
            o.want_member = has_member;
        if (mode > 2)
            o.want_range = has_range;
        bl_buf img;
        bl_mapindex *mi = tu_index_opts(m, strlen(m), &o, &img, NULL);
        char *got = tu_retrace_str(mi, 0, in);
        ck_assert_msg(strcmp(got, want) == 0, "mode %d:\n%s", mode, got);
        free(got);
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
    }
    names_free(ns);
}

/* The malformed-lines case reports exactly its two bad lines. */
START_TEST(malformed_lines_counted)
{
    size_t n;
    char *m = tu_read_file(CASES_DIR "/0023-malformed-lines/mapping.txt", &n);
    ck_assert_ptr_nonnull(m);
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(m, n, &img, &st);
    ck_assert_uint_eq(st.malformed, 2);
    ck_assert_uint_eq(st.methods, 2);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    /* strict: fails at line 3 */
    bl_mi_build_opts o = { .strict = 1 };
    bl_buf_init(&img, 0);
    ck_assert_int_eq(bl_mapindex_build(m, n, &o, &img, &st), BL_EFORMAT);
    ck_assert_uint_eq(st.lines, 3);
    bl_buf_cleanup(&img);
    free(m);
}
END_TEST






/* Class names in a block target: exact classes, a nested class the mapping
 * lacks (its outer class's name, the rest kept), framework classes and
 * other text unchanged; no index: the text as is. */
START_TEST(class_names_in_a_target)
{
    static const char m[] = "com.example.Feed -> a.a:\n"
                            "    void run() -> a\n"
                            "com.example.Feed$Loader -> a.b:\n"
                            "com.example.Db -> b:\n";
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(m, sizeof m - 1, &img, &st);
    static const char *const cases[][2] = {
        { "java.awt.event.InvocationEvent/a.a", "java.awt.event.InvocationEvent/com.example.Feed" },
        { "android.os.Handler/a.a$1", "android.os.Handler/com.example.Feed$1" },
        { "android.os.Handler/a.b$$Lambda$3", "android.os.Handler/com.example.Feed$Loader$$Lambda$3" },
        { "b/what=3", "com.example.Db/what=3" },
        { "android.os.Handler/what=3", "android.os.Handler/what=3" },
        { "", "" },
        { "a.c$1 (x)", "a.c$1 (x)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bl_buf out;
        bl_buf_init(&out, 0);
        ck_assert_int_eq(bl_retrace_class_names(mi, cases[i][0], strlen(cases[i][0]), &out), BL_OK);
        ck_assert_str_eq(out.data, cases[i][1]);
        ck_assert_uint_eq(out.len, strlen(cases[i][1]));
        bl_buf_cleanup(&out);
    }
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_retrace_class_names(NULL, "x/a.a", 5, &out), BL_OK);
    ck_assert_str_eq(out.data, "x/a.a");
    bl_buf_cleanup(&out);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
}
END_TEST

/* The index written to disk and mmapped answers like the in-memory one. */
START_TEST(index_file_roundtrip)
{
    char dir[] = "/tmp/bl-retrace-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char idx[256];
    snprintf(idx, sizeof idx, "%s/map.idx", dir);
    bl_mi_stats st;
    ck_assert_int_eq(bl_mapindex_build_file(CASES_DIR "/0002-inline-frames/mapping.txt", idx,
                                            NULL, &st),
                     BL_OK);
    bl_mapindex *mi;
    ck_assert_int_eq(bl_mapindex_open(idx, &mi), BL_OK);
    char *got = tu_retrace_str(mi, 0, "x\n\tat b.a(SourceFile:1001)\n");
    ck_assert_str_eq(got, "x\n"
                          "\tat com.example.Util.parse(Util.java:41)\n"
                          "\tat com.example.Util.check(Util.java:88)\n"
                          "\tat com.example.Util.process(Util.java:10)\n");
    free(got);
    bl_mapindex_close(mi);
    /* a truncated or corrupted index is refused, not crashed on */
    size_t n;
    char *raw = tu_read_file(idx, &n);
    ck_assert_ptr_nonnull(raw);
    void *al = NULL;
    ck_assert_int_eq(posix_memalign(&al, 8, n), 0);
    memcpy(al, raw, n);
    ck_assert_int_eq(bl_mapindex_from_memory(al, n - 8, &mi), BL_EFORMAT);
    ((char *)al)[0] ^= 1;
    ck_assert_int_eq(bl_mapindex_from_memory(al, n, &mi), BL_EFORMAT);
    free(al);
    free(raw);
    ck_assert_int_eq(bl_mapindex_open("/nonexistent/x.idx", &mi), BL_EIO);
    /* issue 11: one flipped byte anywhere in the file (header, strings,
     * tables, last byte) is found by the checksum at open */
    raw = tu_read_file(idx, &n);
    ck_assert_ptr_nonnull(raw);
    const size_t offs[] = { 17, 100, 200, n / 3, n / 2, n - 1 };
    for (size_t k = 0; k < sizeof offs / sizeof *offs; k++) {
        raw[offs[k]] ^= 0x10;
        FILE *f = fopen(idx, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(raw, 1, n, f), n);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(bl_mapindex_open(idx, &mi), BL_EFORMAT);
        const char *why = NULL;
        ck_assert_int_eq(bl_mapindex_verify(raw, n, &why), BL_EFORMAT);
        ck_assert_str_eq(why, offs[k] >= 16 && offs[k] < 24 ? "size mismatch" : "checksum mismatch");
        raw[offs[k]] ^= 0x10;
    }
    ck_assert_int_eq(bl_mapindex_verify(raw, n, NULL), BL_OK);
    free(raw);
    unlink(idx);
    rmdir(dir);
}
END_TEST

/* An image built to be opened in memory at once (no_checksum, as the
 * one-shot beatline-retrace builds it) skips the checksum: the field stays
 * 0, so such an image fails verification if it is ever written out; it
 * opens and retraces as the checksummed one does. */
START_TEST(in_memory_image_without_checksum)
{
    size_t mn;
    char *map = tu_read_file(CASES_DIR "/0002-inline-frames/mapping.txt", &mn);
    ck_assert_ptr_nonnull(map);
    for (int nc = 0; nc < 2; nc++) {
        bl_mi_build_opts bo = { .no_checksum = nc };
        bl_buf img;
        bl_buf_init(&img, 0);
        ck_assert_int_eq(bl_mapindex_build(map, mn, &bo, &img, NULL), BL_OK);
        bl_mi_header h;
        ck_assert_uint_ge(img.len, sizeof h);
        memcpy(&h, img.data, sizeof h);
        const char *why = NULL;
        if (nc) {
            ck_assert_uint_eq(h.checksum, 0);
            ck_assert_int_eq(bl_mapindex_verify(img.data, img.len, &why), BL_EFORMAT);
            ck_assert_str_eq(why, "checksum mismatch");
        } else {
            ck_assert_uint_ne(h.checksum, 0);
            ck_assert_int_eq(bl_mapindex_verify(img.data, img.len, &why), BL_OK);
        }
        bl_mapindex *mi;
        ck_assert_int_eq(bl_mapindex_from_memory(img.data, img.len, &mi), BL_OK);
        char *got = tu_retrace_str(mi, 0, "x\n\tat b.a(SourceFile:1001)\n");
        ck_assert_str_eq(got, "x\n"
                              "\tat com.example.Util.parse(Util.java:41)\n"
                              "\tat com.example.Util.check(Util.java:88)\n"
                              "\tat com.example.Util.process(Util.java:10)\n");
        free(got);
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
    }
    free(map);
}
END_TEST

/* An exception line after other text (R8's "(?:.*)?[:\"]\s+%c(?::.*)?"):
 * only blanks (\s: ' ', \t, \f, \v, \r) may follow the ':' or '"'. A NUL
 * byte there is not one (the strchr set once matched its terminator): such
 * a line stays as it is, while the same line with a blank is retraced. */
START_TEST(prefixed_exception_nul_is_not_blank)
{
    size_t n;
    char *m = tu_read_file(CASES_DIR "/0036-logcat-exception-lines/mapping.txt", &n);
    ck_assert_ptr_nonnull(m);
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(m, n, &img, &st);
    bl_retrace_opts o = { 0 };
    bl_retracer *rt;
    ck_assert_int_eq(bl_retracer_new(mi, &o, &rt), BL_OK);
    static const char nul_line[] = "E Tag:\0a.b"; /* 10 bytes, one NUL */
    static const char blank_line[] = "E Tag: a.b";
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_retracer_line(rt, nul_line, sizeof nul_line - 1, &out), BL_OK);
    ck_assert_uint_eq(out.len, sizeof nul_line); /* the line and its '\n' */
    ck_assert(memcmp(out.data, nul_line, sizeof nul_line - 1) == 0);
    ck_assert_int_eq(out.data[out.len - 1], '\n');
    bl_buf_reset(&out);
    ck_assert_int_eq(bl_retracer_line(rt, blank_line, sizeof blank_line - 1, &out), BL_OK);
    ck_assert_uint_eq(out.len, strlen("E Tag: com.example.BadThing\n"));
    ck_assert(memcmp(out.data, "E Tag: com.example.BadThing\n", out.len) == 0);
    bl_buf_cleanup(&out);
    bl_retracer_free(rt);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    free(m);
}
END_TEST

int main(void)
{
    n_cases = tu_discover_cases(CASES_DIR, case_names, MAX_CASES);
    Suite *s = suite_create("retrace");
    TCase *tc = tcase_create("golden");
    tcase_add_test(tc, golden_cases_exist);
    tcase_add_test(tc, frame_line_takes_the_scan_reading);
    tcase_add_test(tc, golden_cases_two_threads);
    tcase_add_loop_test(tc, golden_case, 0, n_cases);
    tcase_add_test(tc, malformed_lines_counted);
    tcase_add_test(tc, class_names_in_a_target);
    tcase_add_test(tc, remembered_outline_line);
    tcase_add_test(tc, lazy_build_reads_version_in_skipped_class);
    tcase_add_test(tc, lazy_build_reads_escaped_metadata);
    tcase_add_test(tc, lazy_build_header_and_blank_lines);
    tcase_add_test(tc, range_build_reads_only_traced_ranges);
    tcase_add_test(tc, range_build_restarts_on_metadata);
    tcase_add_test(tc, range_build_exception_class_as_retraced);
    suite_add_tcase(s, tc);
    TCase *ix = tcase_create("index");
    tcase_add_test(ix, index_file_roundtrip);
    tcase_add_test(ix, in_memory_image_without_checksum);
    tcase_add_test(ix, prefixed_exception_nul_is_not_blank);
    suite_add_tcase(s, ix);
    int rc = tu_run(s);
    for (int i = 0; i < n_cases; i++)
        free(case_names[i]);
    return rc;
}
