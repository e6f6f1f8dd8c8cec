/*
 * instrument_rules_test.c — include/exclude rules of beatline-instrument
 * (instrumenter/rules.h): glob semantics ('*' stops at '/', '**' does not,
 * trailing '/'), method and descriptor parts, include-only sets, Matrix's
 * -keeppackage/-keepclass prefixes, the class shortcut agreeing with the
 * per-method answer, config-file parsing and its errors.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

static bl_rules *make(const char *const *lines, size_t n)
{
    bl_rules *r = NULL;
    ck_assert_int_eq(bl_rules_new(&r), BL_OK);
    for (size_t i = 0; i < n; i++) {
        char err[256] = "";
        int ex = lines[i][0] == '-';
        ck_assert_msg(bl_rules_add(r, ex, lines[i] + 1, err, sizeof err) == BL_OK, "%s: %s",
                      lines[i], err);
    }
    return r;
}

static int allowed(const bl_rules *r, const char *cls, const char *name, const char *desc)
{
    int res = -1, ex = -1;
    ck_assert_int_eq(bl_rules_method_allowed(r, cls, name, desc, &res), BL_OK);
    ck_assert_int_eq(bl_rules_class_excluded(r, cls, &ex), BL_OK);
    /* the class shortcut never says "excluded" for a class with an allowed method */
    if (res)
        ck_assert_int_eq(ex, 0);
    return res;
}

START_TEST(empty_allows_everything)
{
    bl_rules *r = make(NULL, 0);
    ck_assert_int_eq(allowed(r, "a/B", "m", "()V"), 1);
    ck_assert_uint_eq(bl_rules_count(r), 0);
    bl_rules_free(r);
}
END_TEST

START_TEST(class_globs)
{
    const char *l[] = {"-com/foo/*", "-org/**/internal/*", "-x/Y?", "-p/"};
    bl_rules *r = make(l, 4);
    ck_assert_int_eq(allowed(r, "com/foo/Bar", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "com/foo/Bar$1", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "com/foo/sub/Bar", "m", "()V"), 1); /* '*' stops at '/' */
    ck_assert_int_eq(allowed(r, "com/foox/Bar", "m", "()V"), 1);
    ck_assert_int_eq(allowed(r, "org/internal/A", "m", "()V"), 1); /* "**" between two slashes */
    ck_assert_int_eq(allowed(r, "org/a/internal/A", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "org/a/b/c/internal/A", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "org/a/internal/x/A", "m", "()V"), 1);
    ck_assert_int_eq(allowed(r, "x/YZ", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "x/Y", "m", "()V"), 1);
    ck_assert_int_eq(allowed(r, "x/YZZ", "m", "()V"), 1);
    ck_assert_int_eq(allowed(r, "p/A", "m", "()V"), 0);   /* trailing '/' = package and below */
    ck_assert_int_eq(allowed(r, "p/q/A", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "pq/A", "m", "()V"), 1);
    bl_rules_free(r);
}
END_TEST

START_TEST(dots_are_slashes)
{
    const char *l[] = {"-com.foo.Bar#run(Ljava.lang.String;)V"};
    bl_rules *r = make(l, 1);
    ck_assert_int_eq(allowed(r, "com/foo/Bar", "run", "(Ljava/lang/String;)V"), 0);
    ck_assert_int_eq(allowed(r, "com/foo/Bar", "run", "()V"), 1);
    bl_rules_free(r);
}
END_TEST

START_TEST(method_parts)
{
    const char *l[] = {"-**#get*", "-a/B#<init>", "-a/C#m(I*"};
    bl_rules *r = make(l, 3);
    ck_assert_int_eq(allowed(r, "z/Z", "getX", "()I"), 0);
    ck_assert_int_eq(allowed(r, "z/Z", "setX", "(I)V"), 1);
    ck_assert_int_eq(allowed(r, "a/B", "<init>", "()V"), 0);
    ck_assert_int_eq(allowed(r, "a/B", "<clinit>", "()V"), 1);
    ck_assert_int_eq(allowed(r, "a/C", "m", "(ILjava/lang/Object;)V"), 0); /* '*' crosses '/' */
    ck_assert_int_eq(allowed(r, "a/C", "m", "(J)V"), 1);
    ck_assert_int_eq(allowed(r, "a/C", "mm", "(I)V"), 1);
    int ex = -1;
    ck_assert_int_eq(bl_rules_class_excluded(r, "a/B", &ex), BL_OK);
    ck_assert_int_eq(ex, 0); /* method rules never exclude a whole class */
    bl_rules_free(r);
}
END_TEST

START_TEST(include_only)
{
    const char *l[] = {"+com/app/", "+lib/Util#fast*", "-com/app/gen/"};
    bl_rules *r = make(l, 3);
    ck_assert_int_eq(allowed(r, "com/app/Main", "run", "()V"), 1);
    ck_assert_int_eq(allowed(r, "com/app/gen/R", "run", "()V"), 0); /* exclude wins */
    ck_assert_int_eq(allowed(r, "lib/Util", "fastPath", "()V"), 1);
    ck_assert_int_eq(allowed(r, "lib/Util", "slowPath", "()V"), 0);
    ck_assert_int_eq(allowed(r, "other/X", "run", "()V"), 0);
    int ex = -1;
    ck_assert_int_eq(bl_rules_class_excluded(r, "other/X", &ex), BL_OK);
    ck_assert_int_eq(ex, 1);
    ck_assert_int_eq(bl_rules_class_excluded(r, "lib/Util", &ex), BL_OK);
    ck_assert_int_eq(ex, 0);
    ck_assert_int_eq(bl_rules_class_excluded(r, "com/app/gen/R", &ex), BL_OK);
    ck_assert_int_eq(ex, 1);
    bl_rules_free(r);
}
END_TEST

START_TEST(long_names_and_many_stars)
{
    /* a name longer than the stack row, and a star-heavy pattern that would
     * blow up a backtracking matcher */
    size_t n = 5000;
    char *cls = malloc(n + 1);
    ck_assert_ptr_nonnull(cls);
    memset(cls, 'a', n);
    cls[n] = '\0';
    const char *l[] = {"-**a**a**a**a**a**a**a**a**a**a**b"};
    bl_rules *r = make(l, 1);
    ck_assert_int_eq(allowed(r, cls, "m", "()V"), 1);
    cls[n - 1] = 'b';
    ck_assert_int_eq(allowed(r, cls, "m", "()V"), 0);
    free(cls);
    bl_rules_free(r);
}
END_TEST

START_TEST(bad_patterns)
{
    bl_rules *r = NULL;
    char err[256];
    ck_assert_int_eq(bl_rules_new(&r), BL_OK);
    ck_assert_int_eq(bl_rules_add(r, 1, "", err, sizeof err), BL_EFORMAT);
    ck_assert_int_eq(bl_rules_add(r, 1, "#m", err, sizeof err), BL_EFORMAT);
    ck_assert_int_eq(bl_rules_add(r, 1, "a/B#", err, sizeof err), BL_EFORMAT);
    ck_assert_int_eq(bl_rules_add(r, 1, "a/B#m#n", err, sizeof err), BL_EFORMAT);
    ck_assert_int_eq(bl_rules_add(r, 1, "a/B c", err, sizeof err), BL_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "white space"));
    ck_assert_int_eq(bl_rules_add_prefix(r, "", err, sizeof err), BL_EFORMAT);
    ck_assert_uint_eq(bl_rules_count(r), 0);
    bl_rules_free(r);
}
END_TEST

START_TEST(matrix_file)
{
    /* Matrix's blackMethodList.txt as its trace plugin reads it: prefixes */
    const char *text = "[package]\n"
                       "-keeppackage android/\n"
                       "-keeppackage com.tencent.matrix\r\n"
                       "# comment\n"
                       "\n"
                       "[class]\n"
                       "-keepclass com/app/Slow\n";
    bl_rules *r = NULL;
    bl_rules_opts o;
    bl_rules_opts_init(&o);
    char err[256] = "";
    ck_assert_int_eq(bl_rules_new(&r), BL_OK);
    ck_assert_int_eq(bl_rules_parse_config(r, &o, text, strlen(text), "bl.txt", err, sizeof err),
                     BL_OK);
    ck_assert_uint_eq(bl_rules_count(r), 3);
    ck_assert_int_eq(allowed(r, "android/app/Activity", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "androidx/core/A", "m", "()V"), 1);
    ck_assert_int_eq(allowed(r, "com/tencent/matrix/X", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "com/tencent/matrixy/X", "m", "()V"), 0); /* plain prefix */
    ck_assert_int_eq(allowed(r, "com/app/Slow", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "com/app/Slow$Inner", "m", "()V"), 0);
    ck_assert_int_eq(allowed(r, "com/app/Fast", "m", "()V"), 1);
    ck_assert_int_eq(o.skip_trivial, -1);
    ck_assert_int_eq(o.skip_callbacks, -1);
    ck_assert_ptr_null(o.runtime_class);
    bl_rules_opts_cleanup(&o);
    bl_rules_free(r);
}
END_TEST

START_TEST(config_options)
{
    const char *text = "\xEF\xBB\xBF# beatline\n"
                       "  runtime-class   com.x.Rt  \n"
                       "skip-trivial no\n"
                       "skip-callbacks no\n"
                       "names obfuscated\n"
                       "threads 3\n"
                       "base-ids prev/ids.txt\n"
                       "exclude **#toString()*\n"
                       "include com/app/\n";
    bl_rules *r = NULL;
    bl_rules_opts o;
    bl_rules_opts_init(&o);
    char err[256] = "";
    ck_assert_int_eq(bl_rules_new(&r), BL_OK);
    ck_assert_int_eq(
        bl_rules_parse_config(r, &o, text, strlen(text), "/etc/bl/cfg", err, sizeof err), BL_OK);
    ck_assert_str_eq(o.runtime_class, "com/x/Rt");
    ck_assert_int_eq(o.skip_trivial, 0);
    ck_assert_int_eq(o.skip_callbacks, 0);
    ck_assert_int_eq(o.obfuscated, 1);
    ck_assert_int_eq(o.threads, 3);
    ck_assert_str_eq(o.base_ids, "/etc/bl/prev/ids.txt");
    ck_assert_int_eq(allowed(r, "com/app/A", "toString", "()Ljava/lang/String;"), 0);
    ck_assert_int_eq(allowed(r, "com/app/A", "run", "()V"), 1);
    ck_assert_int_eq(allowed(r, "org/A", "run", "()V"), 0);
    bl_rules_opts_cleanup(&o);
    bl_rules_free(r);
}
END_TEST

static void config_fails(const char *text, const char *expect)
{
    bl_rules *r = NULL;
    bl_rules_opts o;
    bl_rules_opts_init(&o);
    char err[256] = "";
    ck_assert_int_eq(bl_rules_new(&r), BL_OK);
    ck_assert_int_eq(bl_rules_parse_config(r, &o, text, strlen(text), "c.txt", err, sizeof err),
                     BL_EFORMAT);
    ck_assert_msg(strstr(err, expect) != NULL, "'%s' lacks '%s'", err, expect);
    bl_rules_opts_cleanup(&o);
    bl_rules_free(r);
}

START_TEST(config_errors)
{
    config_fails("exclude a/B\nbogus x\n", "c.txt:2: unknown item 'bogus'");
    config_fails("-unkeepclass a/B\n", "c.txt:1: unknown item '-unkeepclass'");
    config_fails("\n\nthreads 0\n", "c.txt:3: threads must be");
    config_fails("threads 99999999999999\n", "threads must be");
    config_fails("skip-trivial maybe\n", "yes or no");
    config_fails("skip-callbacks maybe\n", "c.txt:1: skip-callbacks must be yes or no");
    config_fails("names clear\n", "original or obfuscated");
    config_fails("exclude\n", "needs a value");
    config_fails("-keepclass\n", "needs a value");
    config_fails("runtime-class a b\n", "one class name");
    config_fails("include #x\n", "no class part");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("instrument_rules");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, empty_allows_everything);
    tcase_add_test(tc, class_globs);
    tcase_add_test(tc, dots_are_slashes);
    tcase_add_test(tc, method_parts);
    tcase_add_test(tc, include_only);
    tcase_add_test(tc, long_names_and_many_stars);
    tcase_add_test(tc, bad_patterns);
    tcase_add_test(tc, matrix_file);
    tcase_add_test(tc, config_options);
    tcase_add_test(tc, config_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
