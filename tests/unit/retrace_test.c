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



/* A tiny set of class names for the lazy (want_class) build. */
typedef struct names {
    char *v[4096];
    int n;
} names;

static void add_name(void *ctx, const char *cls, size_t n)
{
    names *s = ctx;
    if (s->n < 4096)
        s->v[s->n++] = strndup(cls, n);
}

static int has_name(void *ctx, const char *cls, size_t n)
{
    names *s = ctx;
    for (int i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == n && !memcmp(s->v[i], cls, n))
            return 1;
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
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    /* the same with only the classes the trace names read in full */
    names *ns = calloc(1, sizeof *ns);
    ck_assert_ptr_nonnull(ns);
    bl_retrace_trace_classes(input, in_n, add_name, ns);
    bl_mi_build_opts lazy = { .want_class = has_name, .want_ctx = ns };
    bl_buf_init(&img, 0);
    ck_assert_int_eq(bl_mapindex_build(mapping, mn, &lazy, &img, &st), BL_OK);
    ck_assert_int_eq(bl_mapindex_from_memory(img.data, img.len, &mi), BL_OK);
    got = tu_retrace_str(mi, verbose, input);
    ck_assert_msg(strcmp(got, expected) == 0, "case %s (lazy):\n--- expected\n%s--- got\n%s",
                  name, expected, got);
    free(got);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    for (int i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns);
    free(mapping);
    free(input);
    free(expected);
    free(args);
}
END_TEST

START_TEST(golden_cases_exist)
{
    ck_assert_int_ge(n_cases, 20);
}
END_TEST

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
    unlink(idx);
    rmdir(dir);
}
END_TEST

int main(void)
{
    n_cases = tu_discover_cases(CASES_DIR, case_names, MAX_CASES);
    Suite *s = suite_create("retrace");
    TCase *tc = tcase_create("golden");
    tcase_add_test(tc, golden_cases_exist);
    tcase_add_loop_test(tc, golden_case, 0, n_cases);
    tcase_add_test(tc, malformed_lines_counted);
    suite_add_tcase(s, tc);
    TCase *ix = tcase_create("index");
    tcase_add_test(ix, index_file_roundtrip);
    suite_add_tcase(s, ix);
    int rc = tu_run(s);
    for (int i = 0; i < n_cases; i++)
        free(case_names[i]);
    return rc;
}
