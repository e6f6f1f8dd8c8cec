/*
 * netsite_test.c — the in-place rewrite of network call sites (issue 16,
 * instrumenter/netsite.h) on crafted classes (cfbuild.h): which sites are
 * rewritten, into what bytes, and which are left alone (OkHttp's own
 * classes, a `new OkHttpClient` sequence that a branch or a handler range
 * enters, other methods of the same owners). JVM acceptance of rewritten
 * classes (-Xverify:all) is tests/runtime NetworkTest's.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "cfbuild.h"
#include "classfile.h"
#include "netsite.h"

/* Rewrites b's class; returns the sites and leaves the new bytes in out. */
static size_t rewrite(const cb *b, bl_buf *out)
{
    bl_cf *cf = NULL;
    char err[256];
    ck_assert_int_eq(bl_cf_parse((const uint8_t *)b->out.data, b->out.len, &cf, err, sizeof err), BL_OK);
    size_t n = 99;
    bl_buf_init(out, 1u << 24);
    ck_assert_int_eq(bl_net_rewrite(cf, out, &n, err, sizeof err), BL_OK);
    bl_cf_free(cf);
    return n;
}

/* The code of method `name` of class bytes d (NULL when none); *len its length. */
static const uint8_t *code_of(const uint8_t *d, size_t n, const char *name, bl_cf **cf, uint32_t *len)
{
    char err[256];
    ck_assert_int_eq(bl_cf_parse(d, n, cf, err, sizeof err), BL_OK);
    for (size_t i = 0; i < bl_cf_method_count(*cf); i++)
        if (!strcmp(bl_cf_method_at(*cf, i)->name, name)) {
            const bl_cf_mraw *r = bl_cf_method_raw(*cf, i);
            *len = r->code_len;
            return d + r->code;
        }
    return NULL;
}

/* "owner.name desc" of the Methodref at pool index i of cf. */
static void ref_text(const bl_cf *cf, uint16_t i, char *buf, size_t n)
{
    size_t len;
    const uint8_t *d = bl_cf_bytes(cf, &len);
    const uint8_t *e = d + bl_cf_pool_off(cf, i);
    ck_assert_uint_eq(e[0], BL_CP_METHODREF);
    const char *owner = bl_cf_class_name(cf, (uint16_t)(e[1] << 8 | e[2]));
    const uint8_t *t = d + bl_cf_pool_off(cf, (uint16_t)(e[3] << 8 | e[4]));
    snprintf(buf, n, "%s.%s %s", owner, bl_cf_utf8(cf, (uint16_t)(t[1] << 8 | t[2]), NULL),
             bl_cf_utf8(cf, (uint16_t)(t[3] << 8 | t[4]), NULL));
}

/* A class t/App (or the given name) with the given static methods. */
static void start(cb *b, const char *cls, uint16_t *tc, uint16_t *sc)
{
    cb_init(b, 52);
    *tc = cb_class(b, cls);
    *sc = cb_class(b, "java/lang/Object");
}

START_TEST(every_kind_rewritten_in_place)
{
    cb b;
    uint16_t tc, sc;
    start(&b, "t/App", &tc, &sc);
    uint16_t cl = cb_class(&b, "okhttp3/OkHttpClient");
    uint16_t init = cb_member(&b, 10, cl, "<init>", "()V");
    uint16_t build = cb_member(&b, 10, cb_class(&b, "okhttp3/OkHttpClient$Builder"), "build",
                               "()Lokhttp3/OkHttpClient;");
    uint16_t url = cb_class(&b, "java/net/URL");
    uint16_t open0 = cb_member(&b, 10, url, "openConnection", "()Ljava/net/URLConnection;");
    uint16_t open1 = cb_member(&b, 10, url, "openConnection", "(Ljava/net/Proxy;)Ljava/net/URLConnection;");
    uint16_t other = cb_member(&b, 10, url, "openStream", "()Ljava/io/InputStream;");
    const uint8_t f[] = {
        0xbb, (uint8_t)(cl >> 8), (uint8_t)cl, 0x59, 0xb7, (uint8_t)(init >> 8), (uint8_t)init, /* 0: new dup init */
        0x57,                                                                               /* 7: pop */
        0x2a, 0xb6, (uint8_t)(build >> 8), (uint8_t)build, 0x57,                            /* 8: aload_0 build pop */
        0x2b, 0xb6, (uint8_t)(open0 >> 8), (uint8_t)open0, 0x57,                            /* 13 */
        0x2b, 0x2c, 0xb6, (uint8_t)(open1 >> 8), (uint8_t)open1, 0x57,                      /* 18 */
        0x2b, 0xb6, (uint8_t)(other >> 8), (uint8_t)other, 0x57,                            /* 24: left alone */
        0xb1};
    cb_method(&b, 9, "f", "(Lokhttp3/OkHttpClient$Builder;Ljava/net/URL;Ljava/net/Proxy;)V", 3, 3, f, sizeof f,
              NULL, 0, NULL, 0, 0);
    cb_finish(&b, tc, sc);
    bl_buf out;
    ck_assert_uint_eq(rewrite(&b, &out), 4);
    bl_cf *cf;
    uint32_t len;
    const uint8_t *c = code_of((const uint8_t *)out.data, out.len, "f", &cf, &len);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(len, sizeof f); /* nothing moved */
    char t[512];
    ck_assert_uint_eq(c[0], 0xb8);
    ref_text(cf, (uint16_t)(c[1] << 8 | c[2]), t, sizeof t);
    ck_assert_str_eq(t, "io/beatline/runtime/net/OkHttp.newClient ()Lokhttp3/OkHttpClient;");
    ck_assert(c[3] == 0 && c[4] == 0 && c[5] == 0 && c[6] == 0 && c[7] == 0x57);
    ck_assert_uint_eq(c[9], 0xb8);
    ref_text(cf, (uint16_t)(c[10] << 8 | c[11]), t, sizeof t);
    ck_assert_str_eq(t, "io/beatline/runtime/net/OkHttp.build (Lokhttp3/OkHttpClient$Builder;)Lokhttp3/OkHttpClient;");
    ck_assert_uint_eq(c[14], 0xb8);
    ref_text(cf, (uint16_t)(c[15] << 8 | c[16]), t, sizeof t);
    ck_assert_str_eq(t, "io/beatline/runtime/net/Url.openConnection (Ljava/net/URL;)Ljava/net/URLConnection;");
    ck_assert_uint_eq(c[20], 0xb8);
    ref_text(cf, (uint16_t)(c[21] << 8 | c[22]), t, sizeof t);
    ck_assert_str_eq(t, "io/beatline/runtime/net/Url.openConnection (Ljava/net/URL;Ljava/net/Proxy;)"
                        "Ljava/net/URLConnection;");
    ck_assert_uint_eq(c[25], 0xb6); /* openStream untouched */
    ck_assert_uint_eq(memcmp(c + 25, f + 25, 3), 0);
    bl_cf_free(cf);
    bl_buf_cleanup(&out);
    cb_free(&b);
}
END_TEST

/* new/dup/invokespecial with a branch to the dup, an exception range
 * starting at the invokespecial, or (no branch, no range) a StackMapTable
 * frame at the dup whose stack holds the new's Uninitialized(3): left alone;
 * a build() call beside it is still rewritten. */
START_TEST(new_sequence_entered_is_left_alone)
{
    for (int variant = 0; variant < 3; variant++) {
        cb b;
        uint16_t tc, sc;
        start(&b, "t/App", &tc, &sc);
        uint16_t cl = cb_class(&b, "okhttp3/OkHttpClient");
        uint16_t init = cb_member(&b, 10, cl, "<init>", "()V");
        uint16_t build = cb_member(&b, 10, cb_class(&b, "okhttp3/OkHttpClient$Builder"), "build",
                                   "()Lokhttp3/OkHttpClient;");
        /* 0: goto 6 (variant 0: to the dup at 6) / nop nop nop; 3: new; 6: dup; 7: invokespecial;
         * 10: pop; 11: aload_0; 12: build; 15: pop; 16: return */
        uint8_t f[] = {0xa7, 0x00, 0x06, 0xbb, (uint8_t)(cl >> 8), (uint8_t)cl, 0x59,
                       0xb7, (uint8_t)(init >> 8), (uint8_t)init, 0x57, 0x2a, 0xb6, (uint8_t)(build >> 8),
                       (uint8_t)build, 0x57, 0xb1};
        uint16_t exc[4] = {7, 10, 16, 0};
        if (variant >= 1)
            f[0] = f[1] = f[2] = 0; /* no branch: the handler range starts at the invokespecial */
        /* variant 2: StackMapTable {same_locals_1_stack_item at 6: Uninitialized(3)} */
        uint16_t smt = cb_utf8(&b, "StackMapTable");
        const uint8_t frames[] = {(uint8_t)(smt >> 8), (uint8_t)smt, 0, 0, 0, 6, 0, 1, 64 + 6, 8, 0, 3};
        cb_method(&b, 9, "f", "(Lokhttp3/OkHttpClient$Builder;)V", 3, 1, f, sizeof f, variant == 1 ? exc : NULL,
                  variant == 1 ? 1 : 0, variant == 2 ? frames : NULL, variant == 2 ? sizeof frames : 0,
                  variant == 2 ? 1 : 0);
        cb_finish(&b, tc, sc);
        bl_buf out;
        ck_assert_uint_eq(rewrite(&b, &out), 1);
        bl_cf *cf;
        uint32_t len;
        const uint8_t *c = code_of((const uint8_t *)out.data, out.len, "f", &cf, &len);
        ck_assert_uint_eq(memcmp(c, f, 12), 0); /* the new sequence as it was */
        ck_assert_uint_eq(c[12], 0xb8);
        bl_cf_free(cf);
        bl_buf_cleanup(&out);
        cb_free(&b);
    }
}
END_TEST

/* OkHttp's own classes and classes without sites: nothing, out untouched. */
START_TEST(okhttp_itself_and_no_sites)
{
    const char *names[] = {"okhttp3/OkHttpClient", "t/Plain"};
    for (int k = 0; k < 2; k++) {
        cb b;
        uint16_t tc, sc;
        start(&b, names[k], &tc, &sc);
        uint16_t build = cb_member(&b, 10, cb_class(&b, k == 0 ? "okhttp3/OkHttpClient$Builder" : "t/Builder"),
                                   "build", "()Lokhttp3/OkHttpClient;");
        const uint8_t f[] = {0x2a, 0xb6, (uint8_t)(build >> 8), (uint8_t)build, 0x57, 0xb1};
        cb_method(&b, 9, "f", "(Ljava/lang/Object;)V", 2, 1, f, sizeof f, NULL, 0, NULL, 0, 0);
        cb_finish(&b, tc, sc);
        bl_buf out;
        ck_assert_uint_eq(rewrite(&b, &out), 0);
        ck_assert_uint_eq(out.len, 0);
        bl_buf_cleanup(&out);
        cb_free(&b);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("netsite");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, every_kind_rewritten_in_place);
    tcase_add_test(tc, new_sequence_entered_is_left_alone);
    tcase_add_test(tc, okhttp_itself_and_no_sites);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
