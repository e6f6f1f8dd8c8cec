/*
 * symbolicate_test.c — original names for method-ID entries: identity,
 * descriptor de-obfuscation, overloads, residualsignature (real R8 file),
 * and descriptor conversions.
 */
#include "symbol/mapindex.h"
#include "symbol/symbolicate.h"
#include "sym_fixture.h"



static const char src[] =
    "com.example.Foo -> a.a:\n"
    "    1:2:void run(com.example.Bar,int[]):10:11 -> c\n"
    "    3:3:void com.example.Bar.help():5:5 -> c\n"
    "    3:3:void run(com.example.Bar,int[]):12 -> c\n"
    "    4:4:java.lang.String run(long):40:40 -> c\n"
    "    5:5:com.example.Bar make():50:50 -> d\n"
    "com.example.Bar -> a.b:\n"
    "    1:1:void help():5:5 -> a\n"
    "com.example.FooKt -> a.c:\n";

START_TEST(deobfuscated_descriptors)
{
    load(src, strlen(src));
    check("a.a", "c", "(La/b;[I)V", "com.example.Foo", "run", "(Lcom/example/Bar;[I)V",
          "Foo.java", BL_SYM_EXACT);
    check("a.a", "c", "(J)Ljava/lang/String;", "com.example.Foo", "run",
          "(J)Ljava/lang/String;", "Foo.java", BL_SYM_EXACT);
    check("a.a", "d", "()La/b;", "com.example.Foo", "make", "()Lcom/example/Bar;", "Foo.java",
          BL_SYM_EXACT);
    /* descriptor matches nothing, the name has one method */
    check("a.a", "d", "()V", "com.example.Foo", "make", "()Lcom/example/Bar;", "Foo.java",
          BL_SYM_NAME_ONLY);
    /* descriptor matches nothing, two methods share the name */
    check("a.a", "c", "(Z)V", "com.example.Foo", "run", "(Lcom/example/Bar;[I)V", "Foo.java",
          BL_SYM_AMBIGUOUS);
    /* class known, method not */
    check("a.a", "zz", "(La/b;)V", "com.example.Foo", "zz", "(Lcom/example/Bar;)V", "Foo.java",
          BL_SYM_CLASS_ONLY);
    check("a.c", "x", "()V", "com.example.FooKt", "x", "()V", "Foo.kt", BL_SYM_CLASS_ONLY);
    /* class not in the mapping: identity */
    check("org.Other", "m", "(La/a;)V", "org.Other", "m", "(Lcom/example/Foo;)V", "Other.java",
          BL_SYM_IDENTITY);
    bl_symbol s;
    ck_assert_int_eq(bl_symbolicate_method(fx_mi, "a.a", "c", "(La/b", &fx_store, &s), BL_EINVAL);
    ck_assert_int_eq(bl_symbolicate_method(fx_mi, "a.a", "c", "V", &fx_store, &s), BL_EINVAL);
    ck_assert_int_eq(bl_symbolicate_method(fx_mi, "a.a", "c", "(Q)V", &fx_store, &s), BL_EINVAL);
    ck_assert_int_eq(bl_symbolicate_method(fx_mi, "a.a", "c", "()VX", &fx_store, &s), BL_EINVAL);
    unload();
}
END_TEST

START_TEST(identity_without_mapping)
{
    bl_buf_init(&fx_store, 0);
    bl_symbol s;
    ck_assert_int_eq(bl_symbolicate_method(NULL, "com.example.Main$1", "run", "()V", &fx_store, &s),
                     BL_OK);
    ck_assert_str_eq(s.cls, "com.example.Main$1");
    ck_assert_str_eq(s.method, "run");
    ck_assert_str_eq(s.desc, "()V");
    ck_assert_str_eq(s.file, "Main.java");
    ck_assert_int_eq(s.how, BL_SYM_IDENTITY);
    bl_buf_cleanup(&fx_store);
}
END_TEST



START_TEST(descriptor_conversion)
{
    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_desc_from_java("void", "", &b), BL_OK);
    ck_assert_str_eq(b.data, "()V");
    bl_buf_reset(&b);
    ck_assert_int_eq(bl_desc_from_java("java.lang.String[][]", "int,long[],a.B$C,boolean", &b),
                     BL_OK);
    ck_assert_str_eq(b.data, "(I[JLa/B$C;Z)[[Ljava/lang/String;");
    bl_buf_reset(&b);
    ck_assert_int_eq(bl_desc_from_java("void", "int,", &b), BL_EINVAL);
    bl_buf_reset(&b);
    ck_assert_int_eq(bl_desc_from_java("", "int", &b), BL_EINVAL);
    bl_buf_cleanup(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("symbolicate");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, deobfuscated_descriptors);
    tcase_add_test(tc, identity_without_mapping);
    tcase_add_test(tc, descriptor_conversion);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
