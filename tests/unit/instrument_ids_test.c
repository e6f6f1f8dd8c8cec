/*
 * instrument_ids_test.c — methodId assignment and the method-ID file of
 * beatline-instrument (instrumenter/methodids.h): sorted order, duplicates,
 * independence from the order of adding, base ids kept and never reused
 * (also through max-id across a chain of builds), overflow of the 23-bit id
 * space, a malformed base, and the written file read back by the server's
 * reader (server/ingest/methodid.h) with zero malformed lines.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/methodid.h"
#include "methodids.h"

typedef struct m3 {
    const char *cls, *name, *desc;
    uint16_t access;
} m3;

static const m3 METHODS[] = {
    {"com/b/Z", "run", "()V", 1},
    {"com/a/Y", "<init>", "()V", 1},
    {"com/a/Y", "get", "(I)Ljava/lang/String;", 9},
    {"com/a/Y", "get", "(J)Ljava/lang/String;", 9},
    {"com/a/Y$1", "call", "()Ljava/lang/Object;", 4161},
    {"com/a/Y", "<clinit>", "()V", 8},
};
#define NM (sizeof METHODS / sizeof METHODS[0])

static bl_mids *assign(const m3 *ms, size_t n, const size_t *order, const char *base)
{
    bl_mids *m = NULL;
    char err[256] = "";
    ck_assert_int_eq(bl_mids_new(&m), BL_OK);
    if (base)
        ck_assert_msg(bl_mids_load_base(m, base, strlen(base), err, sizeof err) == BL_OK, "%s",
                      err);
    for (size_t i = 0; i < n; i++) {
        const m3 *x = &ms[order ? order[i] : i];
        ck_assert_int_eq(bl_mids_add(m, x->cls, x->name, x->desc, x->access), BL_OK);
    }
    ck_assert_msg(bl_mids_assign(m, err, sizeof err) == BL_OK, "%s", err);
    return m;
}

static char *file_of(const bl_mids *m, int obf)
{
    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_mids_write(m, obf, NULL, &b), BL_OK);
    return b.data;
}

/* Reads text back with the server's reader, strictly: zero malformed lines. */
static bl_methodids *read_back(const char *text)
{
    bl_methodids *t = NULL;
    uint64_t bad = 0;
    ck_assert_int_eq(bl_methodids_parse(text, strlen(text), 1, NULL, NULL, &t, &bad), BL_OK);
    ck_assert_uint_eq(bl_methodids_malformed(t), 0);
    return t;
}

START_TEST(sorted_ids_from_one)
{
    bl_mids *m = assign(METHODS, NM, NULL, NULL);
    ck_assert_uint_eq(bl_mids_count(m), NM);
    /* bytewise order of (class, name, desc) */
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y", "<clinit>", "()V"), 1);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y", "<init>", "()V"), 2);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y", "get", "(I)Ljava/lang/String;"), 3);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y", "get", "(J)Ljava/lang/String;"), 4);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y$1", "call", "()Ljava/lang/Object;"), 5);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/b/Z", "run", "()V"), 6);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/b/Z", "run", "(I)V"), BL_MIDS_NONE);
    ck_assert_uint_eq(bl_mids_max_id(m), 6);
    char *f = file_of(m, 0);
    ck_assert_str_eq(f, "# beatline method-ids v1 names=original max-id=6\n"
                        "1,8,com.a.Y <clinit> ()V\n"
                        "2,1,com.a.Y <init> ()V\n"
                        "3,9,com.a.Y get (I)Ljava/lang/String;\n"
                        "4,9,com.a.Y get (J)Ljava/lang/String;\n"
                        "5,4161,com.a.Y$1 call ()Ljava/lang/Object;\n"
                        "6,1,com.b.Z run ()V\n");
    bl_methodids *t = read_back(f);
    ck_assert_uint_eq(bl_methodids_count(t), NM);
    ck_assert_int_eq(bl_methodids_obfuscated(t), 0);
    const bl_mid_entry *e = bl_methodids_get(t, 5);
    ck_assert_str_eq(e->cls, "com.a.Y$1");
    ck_assert_str_eq(e->desc, "()Ljava/lang/Object;");
    bl_methodids_free(t);
    free(f);
    bl_mids_free(m);
}
END_TEST

START_TEST(order_and_duplicates_do_not_matter)
{
    /* every rotation of the input, with each method added twice and one copy
     * carrying different access flags, gives the same file */
    m3 twice[2 * NM];
    for (size_t i = 0; i < NM; i++) {
        twice[i] = METHODS[i];
        twice[NM + i] = METHODS[i];
        twice[NM + i].access = (uint16_t)(METHODS[i].access | 0x1000);
    }
    bl_mids *ref = assign(METHODS, NM, NULL, NULL);
    char *want = file_of(ref, 1);
    ck_assert_ptr_nonnull(strstr(want, "names=obfuscated"));
    for (size_t rot = 0; rot < 2 * NM; rot++) {
        size_t order[2 * NM];
        for (size_t i = 0; i < 2 * NM; i++)
            order[i] = (i + rot) % (2 * NM);
        bl_mids *m = assign(twice, 2 * NM, order, NULL);
        char *got = file_of(m, 1);
        ck_assert_str_eq(got, want);
        free(got);
        bl_mids_free(m);
    }
    free(want);
    bl_mids_free(ref);
}
END_TEST

START_TEST(base_ids_kept_new_ones_above)
{
    /* base from a Matrix-style file: dotted descriptor, ids not contiguous,
     * a method that is gone (id 40) */
    const char *base = "7,1,com.b.Z run ()V\n"
                       "40,1,com.gone.G x ()V\n"
                       "3,9,com.a.Y get (Ljava.lang.String;)V\n";
    m3 now[] = {{"com/b/Z", "run", "()V", 1},
                {"com/a/Y", "get", "(Ljava/lang/String;)V", 9},
                {"com/a/Y", "newOne", "()V", 1},
                {"com/c/New", "a", "()V", 1}};
    bl_mids *m = assign(now, 4, NULL, base);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/b/Z", "run", "()V"), 7);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y", "get", "(Ljava/lang/String;)V"), 3);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y", "newOne", "()V"), 41);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/c/New", "a", "()V"), 42);
    ck_assert_uint_eq(bl_mids_reused(m), 2);
    ck_assert_uint_eq(bl_mids_base_duplicates(m), 0);
    char *f1 = file_of(m, 0);
    ck_assert_ptr_nonnull(strstr(f1, "max-id=42\n"));
    ck_assert_ptr_null(strstr(f1, "com.gone.G"));
    bl_mids_free(m);

    /* next build drops the method with the largest id: its id stays used */
    m3 later[] = {{"com/b/Z", "run", "()V", 1}, {"com/d/D", "d", "()V", 1}};
    m = assign(later, 2, NULL, f1);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/b/Z", "run", "()V"), 7);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/d/D", "d", "()V"), 43);
    char *f2 = file_of(m, 0);
    bl_methodids *t = read_back(f2);
    ck_assert_uint_eq(bl_methodids_count(t), 2);
    bl_methodids_free(t);
    free(f2);
    free(f1);
    bl_mids_free(m);
}
END_TEST

START_TEST(base_duplicate_triple)
{
    /* the same method twice (ids 5 and 2), once more (9): keeps 2, counted */
    const char *base = "5,1,a.A x ()V\n2,1,a.A x ()V\n9,1,a.A x ()V\n4,1,a.A y ()V\n";
    m3 now[] = {{"a/A", "x", "()V", 1}, {"a/A", "z", "()V", 1}};
    bl_mids *m = assign(now, 2, NULL, base);
    ck_assert_uint_eq(bl_mids_base_duplicates(m), 2);
    ck_assert_uint_eq(bl_mids_lookup(m, "a/A", "x", "()V"), 2);
    ck_assert_uint_eq(bl_mids_lookup(m, "a/A", "z", "()V"), 10); /* above 9: never reused */
    bl_mids_free(m);
}
END_TEST

START_TEST(overflow)
{
    char base[128];
    snprintf(base, sizeof base, "# beatline method-ids v1 names=original max-id=%u\n",
             BL_MIDS_MAX_ID - 1);
    bl_mids *m = NULL;
    char err[256] = "";
    ck_assert_int_eq(bl_mids_new(&m), BL_OK);
    ck_assert_int_eq(bl_mids_load_base(m, base, strlen(base), err, sizeof err), BL_OK);
    ck_assert_int_eq(bl_mids_add(m, "a/A", "x", "()V", 1), BL_OK);
    ck_assert_int_eq(bl_mids_add(m, "a/A", "y", "()V", 1), BL_OK);
    ck_assert_int_eq(bl_mids_assign(m, err, sizeof err), BL_ETOOBIG);
    ck_assert_ptr_nonnull(strstr(err, "2 new methods"));
    ck_assert_ptr_nonnull(strstr(err, "only 1 are left"));
    bl_mids_free(m);

    /* exactly one left: fine, and the last id is 8388607 */
    ck_assert_int_eq(bl_mids_new(&m), BL_OK);
    ck_assert_int_eq(bl_mids_load_base(m, base, strlen(base), err, sizeof err), BL_OK);
    ck_assert_int_eq(bl_mids_add(m, "a/A", "x", "()V", 1), BL_OK);
    ck_assert_int_eq(bl_mids_assign(m, err, sizeof err), BL_OK);
    ck_assert_uint_eq(bl_mids_lookup(m, "a/A", "x", "()V"), BL_MIDS_MAX_ID);
    char *f = file_of(m, 0);
    bl_methodids_free(read_back(f));
    free(f);
    bl_mids_free(m);
}
END_TEST

START_TEST(bad_base)
{
    const char *bad[] = {"1,1,a.A x ()V\n1,1,a.A y ()V\n",  /* duplicate id */
                         "x,1,a.A x ()V\n",                  /* not a number */
                         "# beatline method-ids v1 max-id=99999999\n",
                         "# beatline method-ids v1 max-id=12a\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bl_mids *m = NULL;
        char err[256] = "";
        ck_assert_int_eq(bl_mids_new(&m), BL_OK);
        ck_assert_int_eq(bl_mids_load_base(m, bad[i], strlen(bad[i]), err, sizeof err),
                         BL_EFORMAT);
        ck_assert_msg(err[0] != '\0', "no message for case %zu", i);
        bl_mids_free(m);
    }
    const char *two = "1,1,a.A x ()V\n";
    bl_mids *m = NULL;
    char err[256];
    ck_assert_int_eq(bl_mids_new(&m), BL_OK);
    ck_assert_int_eq(bl_mids_load_base(m, two, strlen(two), err, sizeof err), BL_OK);
    ck_assert_int_eq(bl_mids_load_base(m, two, strlen(two), err, sizeof err), BL_EINVAL);
    bl_mids_free(m);
}
END_TEST

START_TEST(drop)
{
    bl_mids *m = assign(METHODS, NM, NULL, NULL);
    ck_assert_int_eq(bl_mids_drop(m, "com/a/Y", "<init>", "()V"), 1);
    ck_assert_int_eq(bl_mids_drop(m, "com/a/Y", "<init>", "()V"), 0);
    ck_assert_uint_eq(bl_mids_lookup(m, "com/a/Y", "<init>", "()V"), BL_MIDS_NONE);
    ck_assert_uint_eq(bl_mids_count(m), NM - 1);
    char *f = file_of(m, 0);
    ck_assert_ptr_null(strstr(f, "<init>"));
    ck_assert_ptr_nonnull(strstr(f, "max-id=6"));
    free(f);
    bl_mids_free(m);
}
END_TEST

START_TEST(empty)
{
    bl_mids *m = assign(NULL, 0, NULL, NULL);
    char *f = file_of(m, 0);
    ck_assert_str_eq(f, "# beatline method-ids v1 names=original max-id=0\n");
    bl_methodids *t = read_back(f);
    ck_assert_uint_eq(bl_methodids_count(t), 0);
    bl_methodids_free(t);
    free(f);
    bl_mids_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("instrument_ids");
    TCase *tc = tcase_create("ids");
    tcase_add_test(tc, sorted_ids_from_one);
    tcase_add_test(tc, order_and_duplicates_do_not_matter);
    tcase_add_test(tc, base_ids_kept_new_ones_above);
    tcase_add_test(tc, overflow);
    tcase_add_test(tc, base_duplicate_triple);
    tcase_add_test(tc, bad_base);
    tcase_add_test(tc, drop);
    tcase_add_test(tc, empty);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
