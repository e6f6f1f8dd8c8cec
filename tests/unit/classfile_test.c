/*
 * classfile_test.c — the class-file reader on real jars from /usr/share/java
 * and on crafted classes: every class parses, accessors and the `trivial`
 * flag, every version from 45 to the newest, clean errors for truncated and
 * malformed input.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "bytecode.h"
#include "cfbuild.h"
#include "classfile.h"
#include "jarutil.h"
#include "testutil.h"

static const char *const JARS[] = {
    "/usr/share/java/guava.jar", "/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar",
    "/usr/share/java/commons-lang3.jar", "/usr/share/java/asm.jar",
};

typedef struct walk {
    size_t classes, methods, with_code, trivial, failures;
    char first_fail[512];
} walk;

static int parse_one(void *ctx, const char *name, const uint8_t *d, size_t n)
{
    walk *w = ctx;
    bl_cf *cf = NULL;
    char err[256];
    bl_err e = bl_cf_parse(d, n, &cf, err, sizeof err);
    if (e) {
        if (!w->failures++)
            snprintf(w->first_fail, sizeof w->first_fail, "%s: %s", name, err);
        return 0;
    }
    w->classes++;
    size_t nl = strlen(name);
    /* the entry name is the class name plus .class (multi-release entries aside) */
    if (strncmp(name, "META-INF/", 9) != 0) {
        const char *cn = bl_cf_name(cf);
        ck_assert_msg(strlen(cn) == nl - 6 && strncmp(cn, name, nl - 6) == 0, "%s vs %s", cn,
                      name);
    }
    for (size_t i = 0; i < bl_cf_method_count(cf); i++) {
        const bl_cf_method *m = bl_cf_method_at(cf, i);
        w->methods++;
        ck_assert_ptr_nonnull(m->name);
        ck_assert_ptr_nonnull(m->desc);
        ck_assert(m->desc[0] == '(');
        if (m->access & 0x0500) /* native | abstract */
            ck_assert_uint_eq(m->code_length, 0);
        if (m->code_length)
            w->with_code++;
        w->trivial += m->trivial;
    }
    bl_cf_free(cf);
    return 0;
}

START_TEST(every_class_of_real_jars)
{
    for (size_t j = 0; j < sizeof JARS / sizeof *JARS; j++) {
        walk w = {0};
        ck_assert_msg(ju_each_class(JARS[j], parse_one, &w) == 0, "cannot read %s", JARS[j]);
        ck_assert_msg(w.failures == 0, "%s: %zu failures, first %s", JARS[j], w.failures,
                      w.first_fail);
        ck_assert_uint_gt(w.classes, 20);
        ck_assert_uint_gt(w.with_code, 0);
        ck_assert_uint_gt(w.trivial, 0);
        ck_assert_uint_lt(w.trivial, w.with_code);
        printf("%s: %zu classes, %zu methods, %zu with code, %zu trivial\n", JARS[j],
               w.classes, w.methods, w.with_code, w.trivial);
    }
}
END_TEST

/* A class with the method shapes the trivial flag distinguishes. */
static void build_shapes(cb *b, uint16_t major, uint16_t *this_c, uint16_t *super_c)
{
    *this_c = cb_class(b, "t/Shapes");
    *super_c = cb_class(b, "java/lang/Object");
    uint16_t fld = cb_member(b, 9, *this_c, "x", "I");
    uint16_t init = cb_member(b, 10, *super_c, "<init>", "()V");
    uint16_t get = cb_member(b, 10, *this_c, "get", "()I");
    const uint8_t ctor[] = {0x2a, 0xb7, (uint8_t)(init >> 8), (uint8_t)init, 0xb1};
    const uint8_t empty[] = {0xb1};
    const uint8_t getter[] = {0x2a, 0xb4, (uint8_t)(fld >> 8), (uint8_t)fld, 0xac};
    const uint8_t setter[] = {0x2a, 0x1b, 0xb5, (uint8_t)(fld >> 8), (uint8_t)fld, 0xb1};
    const uint8_t caller[] = {0x2a, 0xb6, (uint8_t)(get >> 8), (uint8_t)get, 0xac};
    cb_method(b, 1, "<init>", "()V", 1, 1, ctor, sizeof ctor, NULL, 0, NULL, 0, 0);
    cb_method(b, 1, "empty", "()V", 0, 1, empty, sizeof empty, NULL, 0, NULL, 0, 0);
    cb_method(b, 1, "get", "()I", 1, 1, getter, sizeof getter, NULL, 0, NULL, 0, 0);
    cb_method(b, 1, "set", "(I)V", 2, 2, setter, sizeof setter, NULL, 0, NULL, 0, 0);
    cb_method(b, 1, "call", "()I", 1, 1, caller, sizeof caller, NULL, 0, NULL, 0, 0);
    cb_method(b, 0x401, "abs", "()V", 0, 0, NULL, 0, NULL, 0, NULL, 0, 0);
    cb_method(b, 0x101, "nat", "()V", 0, 0, NULL, 0, NULL, 0, NULL, 0, 0);
    (void)major;
}

START_TEST(accessors_and_trivial)
{
    static const uint16_t versions[] = {45, 46, 49, 50, 52, 55, 61, 65, 69};
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
        cb b;
        cb_init(&b, versions[v]);
        uint16_t tc, sc;
        build_shapes(&b, versions[v], &tc, &sc);
        cb_finish(&b, tc, sc);
        bl_cf *cf = NULL;
        char err[256];
        ck_assert_int_eq(bl_cf_parse((uint8_t *)b.out.data, b.out.len, &cf, err, sizeof err),
                         BL_OK);
        ck_assert_str_eq(bl_cf_name(cf), "t/Shapes");
        ck_assert_str_eq(bl_cf_super_name(cf), "java/lang/Object");
        ck_assert_uint_eq(bl_cf_major(cf), versions[v]);
        ck_assert_uint_eq(bl_cf_access(cf), 0x21);
        ck_assert_uint_eq(bl_cf_method_count(cf), 7);
        static const char *const names[] = {"<init>", "empty", "get", "set",
                                            "call",   "abs",   "nat"};
        static const unsigned trivial[] = {0, 1, 1, 1, 0, 0, 0};
        static const unsigned clen[] = {5, 1, 5, 6, 5, 0, 0};
        for (size_t i = 0; i < 7; i++) {
            const bl_cf_method *m = bl_cf_method_at(cf, i);
            ck_assert_str_eq(m->name, names[i]);
            ck_assert_uint_eq(m->trivial, trivial[i]);
            ck_assert_uint_eq(m->code_length, clen[i]);
        }
        ck_assert_ptr_null(bl_cf_method_at(cf, 7));
        bl_cf_free(cf);
        cb_free(&b);
    }
}
END_TEST

START_TEST(unsupported_versions)
{
    static const uint16_t versions[] = {44, 70, 0xffff};
    for (size_t v = 0; v < 3; v++) {
        cb b;
        cb_init(&b, versions[v]);
        uint16_t tc, sc;
        build_shapes(&b, versions[v], &tc, &sc);
        cb_finish(&b, tc, sc);
        bl_cf *cf = NULL;
        char err[256];
        ck_assert_int_eq(bl_cf_parse((uint8_t *)b.out.data, b.out.len, &cf, err, sizeof err),
                         BL_EVERSION);
        ck_assert_ptr_null(cf);
        ck_assert(strstr(err, "version") != NULL);
        cb_free(&b);
    }
}
END_TEST

typedef struct grab {
    const char *want;
    uint8_t *data;
    size_t len;
} grab;

static int grab_one(void *ctx, const char *name, const uint8_t *d, size_t n)
{
    grab *g = ctx;
    if (strcmp(name, g->want) != 0)
        return 0;
    g->data = malloc(n);
    ck_assert_ptr_nonnull(g->data);
    memcpy(g->data, d, n);
    g->len = n;
    return 1;
}

/* Every proper prefix of a real class is refused cleanly. */
START_TEST(truncated_at_every_offset)
{
    grab g = {"org/apache/commons/lang3/CharSetUtils.class", NULL, 0};
    ju_each_class("/usr/share/java/commons-lang3.jar", grab_one, &g);
    ck_assert_ptr_nonnull(g.data);
    bl_cf *cf = NULL;
    char err[256];
    ck_assert_int_eq(bl_cf_parse(g.data, g.len, &cf, err, sizeof err), BL_OK);
    bl_cf_free(cf);
    for (size_t n = 0; n < g.len; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, g.data, n);
        cf = NULL;
        err[0] = 'x';
        bl_err e = bl_cf_parse(copy, n, &cf, err, sizeof err);
        ck_assert_msg(e == BL_EFORMAT, "prefix %zu: %d", n, (int)e);
        ck_assert_ptr_null(cf);
        ck_assert(err[0] != '\0' && strstr(err, "byte offset") != NULL);
        free(copy);
    }
    /* and one byte too many */
    uint8_t *more = malloc(g.len + 1);
    ck_assert_ptr_nonnull(more);
    memcpy(more, g.data, g.len);
    more[g.len] = 0;
    ck_assert_int_eq(bl_cf_parse(more, g.len + 1, &cf, err, sizeof err), BL_EFORMAT);
    ck_assert(strstr(err, "extra bytes") != NULL);
    free(more);
    free(g.data);
}
END_TEST

/* Malformed pieces the reader must name. */
START_TEST(malformed)
{
    char err[256];
    bl_cf *cf = NULL;
    /* bad pool reference: Class -> Integer */
    {
        cb b;
        cb_init(&b, 52);
        uint16_t i = cb_int(&b, 7);
        uint16_t bad = cb_ref1(&b, 7, i);
        uint16_t sc = cb_class(&b, "java/lang/Object");
        cb_finish(&b, bad, sc);
        ck_assert_int_eq(bl_cf_parse((uint8_t *)b.out.data, b.out.len, &cf, err, sizeof err),
                         BL_EFORMAT);
        ck_assert(strstr(err, "constant-pool entry 2") != NULL);
        cb_free(&b);
    }
    /* undecodable instruction; a switch running past the code */
    static const uint8_t bad1[] = {0xca};                   /* breakpoint */
    static const uint8_t bad2[] = {0xc4, 0x60, 0x00, 0x00}; /* wide iadd */
    static const uint8_t bad3[] = {0x00, 0xaa, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    const uint8_t *bads[] = {bad1, bad2, bad3};
    size_t lens[] = {sizeof bad1, sizeof bad2, sizeof bad3};
    for (size_t k = 0; k < 3; k++) {
        cb b;
        cb_init(&b, 49);
        uint16_t tc = cb_class(&b, "t/Bad"), sc = cb_class(&b, "java/lang/Object");
        cb_method(&b, 9, "m", "()V", 1, 1, bads[k], (uint32_t)lens[k], NULL, 0, NULL, 0, 0);
        cb_finish(&b, tc, sc);
        ck_assert_int_eq(bl_cf_parse((uint8_t *)b.out.data, b.out.len, &cf, err, sizeof err),
                         BL_EFORMAT);
        ck_assert_msg(strstr(err, "method m") != NULL, "%s", err);
        cb_free(&b);
    }
    /* not a class */
    ck_assert_int_eq(bl_cf_parse((const uint8_t *)"PK\3\4xxxxxxxx", 12, &cf, err, sizeof err),
                     BL_EFORMAT);
    ck_assert_int_eq(bl_cf_parse((const uint8_t *)"", 0, &cf, NULL, 0), BL_EFORMAT);
}
END_TEST

START_TEST(insn_lengths)
{
    /* tableswitch at offsets 0..3: padding 3,2,1,0 */
    for (uint32_t at = 0; at < 4; at++) {
        uint8_t code[64] = {0};
        code[at] = 0xaa;
        uint32_t p = at + 1 + bl_bc_switch_pad(at);
        ck_assert_uint_eq(p % 4, 0);
        code[p + 11] = 2; /* low 0, high 2 */
        ck_assert_uint_eq(bl_bc_insn_len(code, 64, at), p - at + 12 + 12);
        ck_assert_uint_eq(bl_bc_insn_len(code, p + 23, at), 0); /* one byte short */
    }
    uint8_t wide[] = {0xc4, 0x84, 0, 1, 0, 1};
    ck_assert_uint_eq(bl_bc_insn_len(wide, 6, 0), 6);
    ck_assert_uint_eq(bl_bc_insn_len(wide, 5, 0), 0);
    uint8_t lsw[] = {0xab, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}; /* npairs -1 */
    ck_assert_uint_eq(bl_bc_insn_len(lsw, sizeof lsw, 0), 0);
    ck_assert_uint_eq(bl_bc_invert(153), 154);
    ck_assert_uint_eq(bl_bc_invert(154), 153);
    ck_assert_uint_eq(bl_bc_invert(165), 166);
    ck_assert_uint_eq(bl_bc_invert(198), 199);
    ck_assert_uint_eq(bl_bc_invert(199), 198);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("classfile");
    TCase *tc = tcase_create("classfile");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_class_of_real_jars);
    tcase_add_test(tc, accessors_and_trivial);
    tcase_add_test(tc, unsupported_versions);
    tcase_add_test(tc, truncated_at_every_offset);
    tcase_add_test(tc, malformed);
    tcase_add_test(tc, insn_lengths);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
