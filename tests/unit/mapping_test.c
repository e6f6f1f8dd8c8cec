/*
 * mapping_test.c — the mapping line parser, lenient JSON metadata and the
 * index's lookups (class by obfuscated/original name, method buckets,
 * original-signature lookup, fields, header comments).
 */
#include "symbol/lenient_json.h"
#include "symbol/mapindex.h"
#include "symbol/mapping.h"
#include "symbol_testutil.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static bl_mapping_line ml;
static const char *why;

static bl_err parse(const char *s)
{
    return bl_mapping_parse_line(s, strlen(s), &ml, &why);
}

static int span_is(bl_span s, const char *lit)
{
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

START_TEST(class_line)
{
    ck_assert_int_eq(parse("com.example.Foo$Bar -> a.b:"), BL_OK);
    ck_assert_int_eq(ml.kind, BL_ML_CLASS);
    ck_assert(span_is(ml.a, "com.example.Foo$Bar"));
    ck_assert(span_is(ml.b, "a.b"));
    ck_assert_int_eq(parse("kj -> kj:\r"), BL_OK);
    ck_assert(span_is(ml.b, "kj"));
    ck_assert_int_eq(parse("com.example.Foo -> a.b"), BL_EFORMAT);
    ck_assert_ptr_nonnull(why);
    ck_assert_int_eq(parse("com.example.Foo a.b:"), BL_EFORMAT);
    ck_assert_int_eq(parse(" -> a:"), BL_EFORMAT);
    /* a blank anywhere in a name, past its last whole eight bytes too */
    ck_assert_int_eq(parse("com.example.Fooo o -> a:"), BL_EFORMAT);
    ck_assert_int_eq(parse("com.example.Fooo\to -> a:"), BL_EFORMAT);
    ck_assert_int_eq(parse("com.example.Fooooooo -> a.b.c.d.e.f.gh i:"), BL_EFORMAT);
    ck_assert_int_eq(parse("com.example.Fooooooo -> a.b.c.d.e.f.ghi:"), BL_OK);
    ck_assert_int_eq(parse("com.exam ple.Foo -> a:"), BL_EFORMAT);
}
END_TEST

START_TEST(field_line)
{
    ck_assert_int_eq(parse("    java.lang.String name -> a"), BL_OK);
    ck_assert_int_eq(ml.kind, BL_ML_FIELD);
    ck_assert(span_is(ml.type, "java.lang.String"));
    ck_assert(span_is(ml.name, "name"));
    ck_assert(span_is(ml.obf, "a"));
    ck_assert_int_eq(parse("    1:2:int f -> a"), BL_EFORMAT);
    ck_assert_int_eq(parse("    int f ->"), BL_EFORMAT);
}
END_TEST

START_TEST(method_lines)
{
    ck_assert_int_eq(parse("    void main(java.lang.String[]) -> main"), BL_OK);
    ck_assert_int_eq(ml.kind, BL_ML_METHOD);
    ck_assert_int_eq(ml.has_min, 0);
    ck_assert_int_eq(ml.orig_kind, BL_ORIG_NONE);
    ck_assert(span_is(ml.params, "java.lang.String[]"));

    ck_assert_int_eq(parse("\t4:11:void com.a.Foo.bar(int,long):42:49 -> a"), BL_OK);
    ck_assert_int_eq(ml.has_min, 1);
    ck_assert_uint_eq(ml.min_start, 4);
    ck_assert_uint_eq(ml.min_end, 11);
    ck_assert(span_is(ml.type, "void"));
    ck_assert(span_is(ml.owner, "com.a.Foo"));
    ck_assert(span_is(ml.name, "bar"));
    ck_assert(span_is(ml.params, "int,long"));
    ck_assert_int_eq(ml.orig_kind, BL_ORIG_RANGE);
    ck_assert_uint_eq(ml.orig_start, 42);
    ck_assert_uint_eq(ml.orig_end, 49);

    ck_assert_int_eq(parse("    1:1:int x():7 -> b"), BL_OK);
    ck_assert_int_eq(ml.orig_kind, BL_ORIG_LINE);
    ck_assert_uint_eq(ml.orig_start, 7);

    /* descending ranges swap, N:0 means N:N */
    ck_assert_int_eq(parse("    9:3:void d():20:10 -> c"), BL_OK);
    ck_assert_uint_eq(ml.min_start, 3);
    ck_assert_uint_eq(ml.min_end, 9);
    ck_assert_uint_eq(ml.orig_start, 10);
    ck_assert_uint_eq(ml.orig_end, 20);
    ck_assert_int_eq(parse("    5:0:void d():7:0 -> c"), BL_OK);
    ck_assert_uint_eq(ml.min_end, 5);
    ck_assert_uint_eq(ml.orig_end, 7);
    ck_assert_int_eq(parse("    0:65535:void <clinit>() -> <clinit>"), BL_OK);
    ck_assert_uint_eq(ml.min_end, 65535);
    ck_assert(span_is(ml.name, "<clinit>"));

    /* malformed */
    ck_assert_int_eq(parse("    x:1:void broken() -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    1:2:void f( -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    1:2:void f():x -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    1:2:void f() junk -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    1:99999999999:void f() -> b"), BL_EFORMAT);
    /* the line cap (BL_MAPPING_MAX_LINE) at its edge, nine digits read
     * unchecked, leading zeros past the ninth */
    ck_assert_int_eq(parse("    1:1073741823:void f() -> b"), BL_OK);
    ck_assert_uint_eq(ml.min_end, 1073741823u);
    ck_assert_int_eq(parse("    1:1073741824:void f() -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    999999999:999999999:void f() -> b"), BL_OK);
    ck_assert_uint_eq(ml.min_start, 999999999u);
    ck_assert_int_eq(parse("    000000000000007:8:void f() -> b"), BL_OK);
    ck_assert_uint_eq(ml.min_start, 7);
    ck_assert_int_eq(parse("    1:2:void f():4294967297 -> b"), BL_EFORMAT);
    /* numbers of every length, read eight bytes at a time or byte by byte
     * (at the end of the text), each against the value printed */
    static const uint32_t nums[] = { 0, 7, 10, 42, 99, 100, 909, 1000, 65535, 99999,
                                     100000, 1234567, 9999999, 10000000, 12345678,
                                     99999999, 100000000, 123456789, 1073741823 };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char l[128];
        snprintf(l, sizeof l, "    %u:%u:void f():%u -> b", nums[i], nums[i], nums[i]);
        ck_assert_int_eq(parse(l), BL_OK);
        ck_assert_uint_eq(ml.min_start, nums[i]);
        ck_assert_uint_eq(ml.min_end, nums[i]);
        ck_assert_uint_eq(ml.orig_start, nums[i]);
        uint32_t a = 1, b2 = 1;
        snprintf(l, sizeof l, "%u:", nums[i]);
        size_t used = bl_mapping_min_range(l, strlen(l), &a, &b2);
        ck_assert_uint_eq(used, strlen(l));
        ck_assert_uint_eq(a, nums[i]);
        snprintf(l, sizeof l, "%u:%u:int g() -> c", nums[i], nums[i] / 3);
        used = bl_mapping_min_range(l, strlen(l), &a, &b2);
        ck_assert_uint_eq(a, nums[i] / 3 < nums[i] && nums[i] / 3 ? nums[i] / 3 : nums[i]);
    }
    /* a bad byte at each place of a type or a name (scanned four at a
     * time), a '.' at each place of a name */
    for (size_t at = 0; at < 13; at++) {
        char l[128], ty[] = "java.lang.Strin", nm[] = "someMethodName";
        ty[at] = ';';
        snprintf(l, sizeof l, "    1:2:%s f() -> b", ty);
        ck_assert_int_eq(parse(l), BL_EFORMAT);
        nm[at] = ',';
        snprintf(l, sizeof l, "    1:2:int %s() -> b", nm);
        ck_assert_int_eq(parse(l), BL_EFORMAT);
        nm[at] = '.';
        snprintf(l, sizeof l, "    1:2:int %s() -> b", nm);
        if (at == 0) {
            ck_assert_int_eq(parse(l), BL_EFORMAT);
        } else {
            ck_assert_int_eq(parse(l), BL_OK);
            ck_assert_uint_eq(ml.owner.n, at);
            ck_assert_uint_eq(ml.name.n, strlen(nm) - at - 1);
        }
    }
    /* a digit, then a byte of each kind */
    for (int c = 1; c < 256; c++) {
        char l[32] = "12";
        l[2] = (char)c;
        memcpy(l + 3, "abcdefgh", 9);
        uint32_t a = 0, b2 = 0;
        size_t used = bl_mapping_min_range(l, 11, &a, &b2);
        if (c == ':') {
            ck_assert_uint_eq(used, 3);
            ck_assert_uint_eq(a, 12);
        } else {
            ck_assert_uint_eq(used, 0);
        }
    }
    ck_assert_int_eq(parse("    void .f() -> b"), BL_EFORMAT);

    /* blanks around parameter types, as R8's reader allows (issue 18) */
    char t[64];
    ck_assert_int_eq(parse("    1:1:int add(int, java.lang.String[] ):3 -> a"), BL_OK);
    ck_assert_int_eq(ml.params_blanks, 1);
    size_t tn = bl_mapping_params_compact(ml.params, t, sizeof t);
    ck_assert_int_eq((int)tn, (int)strlen("int,java.lang.String[]"));
    ck_assert(memcmp(t, "int,java.lang.String[]", tn) == 0);
    ck_assert_int_eq(parse("    void f( ) -> b"), BL_OK);
    ck_assert_int_eq(parse("    void f(int,long) -> b"), BL_OK);
    ck_assert_int_eq(ml.params_blanks, 0);
    ck_assert_int_eq(parse("    void f(java.lang. String) -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    void f(int, ) -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    void f( ,int) -> b"), BL_EFORMAT);
    ck_assert_int_eq(parse("    void f(int int) -> b"), BL_EFORMAT);
}
END_TEST

START_TEST(comment_lines)
{
    ck_assert_int_eq(parse("# compiler: R8"), BL_OK);
    ck_assert_int_eq(ml.kind, BL_ML_HEADER);
    ck_assert(span_is(ml.a, "compiler"));
    ck_assert(span_is(ml.b, "R8"));
    ck_assert_int_eq(parse("      # {\"id\":\"com.android.tools.r8.synthesized\"}  "), BL_OK);
    ck_assert_int_eq(ml.kind, BL_ML_META);
    ck_assert(span_is(ml.a, "{\"id\":\"com.android.tools.r8.synthesized\"}"));
    ck_assert_int_eq(parse("# just words"), BL_OK);
    ck_assert_int_eq(ml.kind, BL_ML_COMMENT);
    ck_assert_int_eq(parse("   \t "), BL_OK);
    ck_assert_int_eq(ml.kind, BL_ML_BLANK);
}
END_TEST

START_TEST(lenient_json)
{
    bl_buf b;
    bl_buf_init(&b, 0);
    const char *s = "{ id: 'com.android.tools.r8.mapping', version: '2.2', n: 3, ok: true }";
    json_t *j = bl_lenient_json_parse(s, strlen(s), &b, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "com.android.tools.r8.mapping");
    ck_assert_str_eq(json_string_value(json_object_get(j, "version")), "2.2");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "n")), 3);
    ck_assert(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    s = "{'positions': {'1': 4, '2': 5}, 'q': 'say \"hi\"', 'e': 'it\\'s'}";
    j = bl_lenient_json_parse(s, strlen(s), &b, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "positions"), "2")), 5);
    ck_assert_str_eq(json_string_value(json_object_get(j, "q")), "say \"hi\"");
    ck_assert_str_eq(json_string_value(json_object_get(j, "e")), "it's");
    json_decref(j);
    s = "{'unterminated: 1}";
    ck_assert_ptr_null(bl_lenient_json_parse(s, strlen(s), &b, NULL));
    s = "{\"a\": }";
    bl_err jwhy = BL_OK;
    ck_assert_ptr_null(bl_lenient_json_parse(s, strlen(s), &b, &jwhy));
    ck_assert_int_eq(jwhy, BL_EFORMAT);
    bl_buf_cleanup(&b);
    /* longer than the scratch cap: a format problem, not out of memory */
    bl_buf_init(&b, 8);
    s = "{'id': 'sourceFile', 'fileName': 'A.kt'}";
    ck_assert_ptr_null(bl_lenient_json_parse(s, strlen(s), &b, &jwhy));
    ck_assert_int_eq(jwhy, BL_EFORMAT);
    bl_buf_cleanup(&b);
}
END_TEST

static const char index_src[] =
    "# compiler: R8\n"
    "# compiler_version: 8.3.36\n"
    "# min_api: 24\n"
    "# pg_map_id: 48ffd94\n"
    "# pg_map_hash: SHA-256 48ffd947\n"
    "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n"
    "com.example.Foo -> a.a:\n"
    "# {\"id\":\"sourceFile\",\"fileName\":\"Foo.kt\"}\n"
    "    int count -> a\n"
    "    com.example.Bar bar -> b\n"
    "      # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"La/b;\"}\n"
    "    1:2:void run(com.example.Bar):10:11 -> c\n"
    "    3:3:void com.example.Bar.help():5:5 -> c\n"
    "    3:3:void run(com.example.Bar):12 -> c\n"
    "    4:4:void run(com.example.Bar):13:13 -> c\n"
    "    5:5:int size():20:20 -> a\n"
    "com.example.Bar -> a.b:\n"
    "    1:1:void help():5:5 -> a\n"
    "com.example.Foo -> a.a:\n"
    "    9:9:void late():99:99 -> d\n";

static void count_cb(void *ctx, const bl_mi_class *owner, const bl_mi_method *m)
{
    (void)m;
    ck_assert_ptr_nonnull(owner);
    (*(int *)ctx)++;
}

START_TEST(index_lookups)
{
    bl_buf img;
    bl_buf_init(&img, 0);
    bl_mi_stats st;
    ck_assert_int_eq(bl_mapindex_build(index_src, strlen(index_src), NULL, &img, &st), BL_OK);
    ck_assert_uint_eq(st.classes, 2); /* Foo mapped twice: merged, with a warning */
    ck_assert_uint_eq(st.warnings, 1);
    ck_assert_uint_eq(st.methods, 7);
    ck_assert_uint_eq(st.fields, 2);
    bl_mapindex *mi;
    ck_assert_int_eq(bl_mapindex_from_memory(img.data, img.len, &mi), BL_OK);
    const bl_mi_header *h = bl_mapindex_header(mi);
    ck_assert_str_eq(bl_mapindex_str(mi, h->compiler), "R8");
    ck_assert_str_eq(bl_mapindex_str(mi, h->compiler_version), "8.3.36");
    ck_assert_str_eq(bl_mapindex_str(mi, h->min_api), "24");
    ck_assert_str_eq(bl_mapindex_str(mi, h->pg_map_id), "48ffd94");
    ck_assert_str_eq(bl_mapindex_str(mi, h->pg_map_hash), "SHA-256 48ffd947");
    ck_assert_uint_eq(h->map_version, BL_MAPVER_2_2);

    const bl_mi_class *foo = bl_mapindex_class_by_obf(mi, "a.a", 3);
    ck_assert_ptr_nonnull(foo);
    ck_assert_str_eq(bl_mapindex_str(mi, foo->orig), "com.example.Foo");
    ck_assert_str_eq(bl_mapindex_str(mi, foo->source_file), "Foo.kt");
    ck_assert_ptr_eq(bl_mapindex_class_by_orig(mi, "com.example.Foo", 15), foo);
    ck_assert_ptr_null(bl_mapindex_class_by_obf(mi, "a.z", 3));
    ck_assert_ptr_null(bl_mapindex_class_by_obf(mi, "a.", 2));

    const bl_mi_method *ms;
    ck_assert_uint_eq(bl_mapindex_methods(mi, foo, "c", 1, &ms), 4);
    /* file order inside the bucket; inline group 3:3 has two entries */
    ck_assert_uint_eq(ms[0].min_start, 1);
    ck_assert(ms[0].flags & BL_MIM_GROUP_START);
    ck_assert(ms[0].flags & BL_MIM_OUTER);
    ck_assert_str_eq(bl_mapindex_str(mi, ms[1].orig_class), "com.example.Bar");
    ck_assert(!(ms[1].flags & BL_MIM_OUTER));
    ck_assert(ms[2].flags & BL_MIM_OUTER);
    ck_assert(!(ms[2].flags & BL_MIM_GROUP_START));
    ck_assert_uint_eq(bl_mapindex_methods(mi, foo, "a", 1, &ms), 1);
    ck_assert_str_eq(bl_mapindex_str(mi, ms[0].orig_name), "size");
    ck_assert_uint_eq(bl_mapindex_methods(mi, foo, "d", 1, &ms), 1); /* merged class */
    ck_assert_uint_eq(bl_mapindex_methods(mi, foo, "e", 1, &ms), 0);
    ck_assert_uint_eq(bl_mapindex_methods(mi, foo, "", 0, &ms), 0);

    const bl_mi_field *fs;
    ck_assert_uint_eq(bl_mapindex_class_fields(mi, foo, &fs), 2);
    ck_assert_str_eq(bl_mapindex_str(mi, fs[1].orig), "bar");
    ck_assert_str_eq(bl_mapindex_str(mi, fs[1].residual), "La/b;");

    int calls = 0;
    /* run(Bar) has three outer runs in Foo: 1:2, then 3:3 + 4:4 (one run) */
    ck_assert_uint_eq(bl_mapindex_methods_by_orig(mi, "com.example.Foo", 15, "run", 3, count_cb,
                                                  &calls),
                      1);
    ck_assert_int_eq(calls, 1);
    calls = 0;
    ck_assert_uint_eq(bl_mapindex_methods_by_orig(mi, "com.example.Bar", 15, "help", 4, count_cb,
                                                  &calls),
                      1);
    ck_assert_uint_eq(bl_mapindex_methods_by_orig(mi, "com.example.Nope", 16, "x", 1, NULL, NULL),
                      0);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
}
END_TEST

START_TEST(empty_and_odd_mappings)
{
    static const char *const inputs[] = {
        "", "\n\n", "# only a comment\n", "    1:1:void orphan() -> a\n",
        "a -> b:\n# {not json\n# {\"no\":\"id\"}\n# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"9.9\"}\n",
        "a -> b:\n    1:1:void f() -> a\n      # {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":[\"weird()\"],\"actions\":[\"removeInnerFrames(1)\"]}\n",
    };
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        bl_buf img;
        bl_buf_init(&img, 0);
        bl_mi_stats st;
        ck_assert_int_eq(bl_mapindex_build(inputs[i], strlen(inputs[i]), NULL, &img, &st), BL_OK);
        bl_mapindex *mi;
        ck_assert_int_eq(bl_mapindex_from_memory(img.data, img.len, &mi), BL_OK);
        ck_assert_ptr_null(bl_mapindex_class_by_obf(mi, "zz", 2));
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
        if (i == 3)
            ck_assert_uint_eq(st.malformed, 1);
        if (i == 4) {
            ck_assert_uint_eq(st.warnings, 3);
            ck_assert_uint_eq(st.map_version, 909);
        }
    }
}
END_TEST


/* Issue 11: a NUL byte would cut a name (names are stored NUL-terminated):
 * the line is refused with its line number, never indexed cut. */
static uint64_t nul_diag_line;
static void nul_diag(void *ctx, const bl_mi_diag *d)
{
    (void)ctx;
    if (!nul_diag_line)
        nul_diag_line = d->line;
}

START_TEST(nul_bytes)
{
    static const char line[] = "com.example.A\0x -> a:";
    ck_assert_int_eq(bl_mapping_parse_line(line, sizeof line - 1, &ml, &why), BL_EFORMAT);
    ck_assert_ptr_nonnull(strstr(why, "NUL"));
    static const char member[] = "    1:1:void ru\0n() -> a";
    ck_assert_int_eq(bl_mapping_parse_line(member, sizeof member - 1, &ml, &why), BL_EFORMAT);
    static const char map[] = "com.example.A -> a:\n"
                              "    1:1:void ru\0n() -> a\n"
                              "    2:2:void ok() -> b\n"
                              "com.example.B\0C -> b:\n";
    bl_buf img;
    bl_buf_init(&img, 0);
    bl_mi_stats st;
    bl_mi_build_opts o = { .diag = nul_diag };
    nul_diag_line = 0;
    ck_assert_int_eq(bl_mapindex_build(map, sizeof map - 1, &o, &img, &st), BL_OK);
    ck_assert_uint_eq(st.malformed, 2);
    ck_assert_uint_eq(nul_diag_line, 2);
    bl_mapindex *mi;
    ck_assert_int_eq(bl_mapindex_from_memory(img.data, img.len, &mi), BL_OK);
    const bl_mi_class *c = bl_mapindex_class_by_obf(mi, "a", 1);
    ck_assert_ptr_nonnull(c);
    const bl_mi_method *m;
    ck_assert_uint_eq(bl_mapindex_methods(mi, c, "a", 1, &m), 0); /* not "ru" */
    ck_assert_uint_eq(bl_mapindex_methods(mi, c, "b", 1, &m), 1);
    ck_assert_ptr_null(bl_mapindex_class_by_obf(mi, "b", 1));
    ck_assert_ptr_null(bl_mapindex_class_by_orig(mi, "com.example.B", 13));
    bl_mapindex_close(mi);
    bl_buf_reset(&img);
    o.strict = 1;
    ck_assert_int_eq(bl_mapindex_build(map, sizeof map - 1, &o, &img, &st), BL_EFORMAT);
    ck_assert_uint_eq(st.lines, 2);
    bl_buf_cleanup(&img);
}
END_TEST

/* A synthesized comment on one range of a method marks every outer range
 * of that method in the bucket, and no other signature (done by sorting
 * the bucket's outer entries by signature: a big bucket stays fast). */
START_TEST(synthesized_spreads_per_signature)
{
    bl_buf m;
    bl_buf_init(&m, 0);
    bl_buf_puts(&m, "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"1.0\"}\n"
                    "com.example.A -> a:\n");
    char l[256];
    for (int i = 1; i <= 3000; i++) {
        snprintf(l, sizeof l, "    %d:%d:void m(%s):%d:%d -> a\n", i, i, i % 2 ? "int" : "long",
                 i, i);
        bl_buf_puts(&m, l);
        if (i == 2001) /* an int range */
            bl_buf_puts(&m, "    # {\"id\":\"com.android.tools.r8.synthesized\"}\n");
    }
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(m.data, m.len, &img, &st);
    const bl_mi_class *c = bl_mapindex_class_by_obf(mi, "a", 1);
    ck_assert_ptr_nonnull(c);
    const bl_mi_method *b;
    uint32_t n = bl_mapindex_methods(mi, c, "a", 1, &b);
    ck_assert_uint_eq(n, 3000);
    uint32_t synth_int = 0, synth_long = 0;
    for (uint32_t i = 0; i < n; i++) {
        int is_int = !strcmp(bl_mapindex_str(mi, b[i].params), "int");
        if (b[i].flags & BL_MIM_SYNTH)
            *(is_int ? &synth_int : &synth_long) += 1;
    }
    ck_assert_uint_eq(synth_int, 1500);
    ck_assert_uint_eq(synth_long, 0);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    bl_buf_cleanup(&m);
}
END_TEST

static void count_call(void *ctx, const bl_mi_class *owner, const bl_mi_method *m)
{
    (void)owner;
    (void)m;
    (*(uint32_t *)ctx)++;
}

/* One original method as the residual method of 5,000 classes (a long run
 * of equal keys in the signature table, inserted by jumping past the run):
 * every one is found by its original signature, with one or two threads. */
START_TEST(one_original_method_in_many_classes)
{
    bl_buf m;
    bl_buf_init(&m, 0);
    char l[256];
    for (int c = 0; c < 5000; c++) {
        snprintf(l, sizeof l,
                 "com.example.C%d -> a%d:\n    1:1:void com.example.Util.check():7:7 -> a\n"
                 "    2:2:void own%d():9:9 -> b\n",
                 c, c, c);
        bl_buf_puts(&m, l);
    }
    for (int threads = 1; threads <= 2; threads++) {
        bl_buf img;
        bl_mi_stats st;
        bl_mapindex *mi = tu_index_threads(m.data, m.len, threads, &img, &st, NULL);
        uint32_t calls = 0;
        uint32_t n = bl_mapindex_methods_by_orig(mi, "com.example.Util", 16, "check", 5,
                                                 count_call, &calls);
        ck_assert_uint_eq(n, 5000);
        ck_assert_uint_eq(calls, 5000);
        calls = 0;
        ck_assert_uint_eq(bl_mapindex_methods_by_orig(mi, "com.example.C4321", 17, "own4321", 7,
                                                      count_call, &calls),
                          1);
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
    }
    bl_buf_cleanup(&m);
}
END_TEST

/* The most parts a split build of check_two_halves was joined from. */
static uint32_t most_parts;

/* The first line where dumps a and b differ, in each (at most 300 bytes,
 * for a failure message short enough for check). */
static void first_difference(const bl_buf *a, const bl_buf *b, const char **x, int *xn,
                             const char **y, int *yn)
{
    size_t i = 0, an = a->data ? a->len : 0, bn = b->data ? b->len : 0;
    while (i < an && i < bn && a->data[i] == b->data[i])
        i++;
    while (i > 0 && (i > an || a->data[i - 1] != '\n'))
        i--;
    *x = an ? a->data + i : "";
    *y = bn ? b->data + i : "";
    *xn = an > i ? (int)(an - i < 300 ? an - i : 300) : 0;
    *yn = bn > i ? (int)(bn - i < 300 ? bn - i : 300) : 0;
}

/* The resident kB of the mapping that holds p (/proc/self/smaps), or -1. */
static long vma_rss_kb(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0;
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)p >= a && (uintptr_t)p < b;
            continue;
        }
        if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

/* Builds m with two threads splitting parts down to one byte left
 * (split_min 1; where the splits fall depends on timing) and compares the
 * index dump, diagnostics and statistics with one thread's (t1, d1, s1).
 * Returns the parts joined. */
static uint32_t check_split(const char *what, const char *m, size_t n, const bl_buf *t1,
                            const bl_buf *d1, const bl_mi_stats *s1)
{
    bl_buf img, d, t;
    bl_buf_init(&d, 0);
    bl_buf_init(&t, 0);
    bl_mi_build_opts o = { 0 };
    o.threads = 2;
    o.split_min = 1;
    o.diag = tu_diag_collect;
    o.diag_ctx = &d;
    /* from a private file mapping whose pages the build drops once parsed
     * (release_text): the parse again after the first part, when parts do
     * not join, reads them back from the file */
    char path[] = "/tmp/beatline-mapping-test-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert(write(fd, m, n) == (ssize_t)n);
    const char *text = mmap(NULL, n ? n : 1, PROT_READ, MAP_PRIVATE, fd, 0);
    ck_assert(text != MAP_FAILED);
    close(fd);
    unlink(path);
    for (size_t i = 0; i < n; i += 4096) /* all mapped before the build */
        ck_assert(text[i] == m[i]);
    long before = vma_rss_kb(text);
    o.release_text = 1;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_opts(text, n, &o, &img, &st);
    long after = vma_rss_kb(text);
    if (st.threads == 2) /* joined: nothing read the text since */
        ck_assert_msg(before >= (long)(n / 1024) && after == 0,
                      "%s: text still mapped after the build: %ld kB (before %ld kB)", what,
                      after, before);
    tu_index_dump(mi, &t);
    const char *x, *y;
    int xn, yn;
    first_difference(t1, &t, &x, &xn, &y, &yn);
    ck_assert_msg(t1->len == t.len && !memcmp(t1->data, t.data, t.len),
                  "%s: split into %u parts: indexes differ, first at:\n%.*s\n---\n%.*s", what,
                  st.parts, xn, x, yn, y);
    first_difference(d1, &d, &x, &xn, &y, &yn);
    ck_assert_msg(d1->len == d.len && (!d.len || !memcmp(d1->data, d.data, d.len)),
                  "%s: split into %u parts: diagnostics differ, first at:\n%.*s\n---\n%.*s",
                  what, st.parts, xn, x, yn, y);
    ck_assert(s1->lines == st.lines && s1->malformed == st.malformed &&
              s1->warnings == st.warnings && s1->classes == st.classes &&
              s1->methods == st.methods && s1->fields == st.fields &&
              s1->map_version == st.map_version);
    ck_assert(st.parts >= 1 && (st.parts == 1) == (st.threads == 1));
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    bl_buf_cleanup(&d);
    bl_buf_cleanup(&t);
    munmap((void *)text, n ? n : 1);
    return st.parts;
}

/* Builds `m` with one and with two parse threads: the two indexes dump
 * equal, statistics and diagnostics equal; then split into more parts (8
 * builds, up to 20 until one joins three parts or more; most_parts says
 * the most seen). Returns the two-thread count. */
static uint32_t check_two_halves(const char *what, const char *m, size_t n)
{
    bl_buf i1, i2, d1, d2, t1, t2;
    bl_buf_init(&d1, 0);
    bl_buf_init(&d2, 0);
    bl_buf_init(&t1, 0);
    bl_buf_init(&t2, 0);
    bl_mi_stats s1, s2;
    bl_mapindex *a = tu_index_threads(m, n, 1, &i1, &s1, &d1);
    bl_mapindex *b = tu_index_threads(m, n, 2, &i2, &s2, &d2);
    tu_index_dump(a, &t1);
    tu_index_dump(b, &t2);
    ck_assert_msg(t1.len == t2.len && !memcmp(t1.data, t2.data, t1.len),
                  "%s: indexes differ:\n%.*s---\n%.*s", what, (int)t1.len, t1.data, (int)t2.len,
                  t2.data);
    ck_assert_msg(d1.len == d2.len && (!d1.len || !memcmp(d1.data, d2.data, d1.len)),
                  "%s: diagnostics differ:\n%.*s---\n%.*s", what, (int)d1.len,
                  d1.data ? d1.data : "", (int)d2.len, d2.data ? d2.data : "");
    ck_assert(s1.lines == s2.lines && s1.malformed == s2.malformed &&
              s1.warnings == s2.warnings && s1.classes == s2.classes &&
              s1.methods == s2.methods && s1.fields == s2.fields &&
              s1.map_version == s2.map_version);
    ck_assert_uint_eq(s1.threads, 1);
    ck_assert_uint_eq(s1.parts, 1);
    ck_assert_uint_eq(s2.parts, s2.threads == 2 ? 2 : 1); /* nothing split at 1 MiB */
    /* 8 builds (up to 20 until one joins three parts or more): where the
     * splits fall changes from build to build */
    for (int k = 0; k < 20; k++) {
        uint32_t parts = check_split(what, m, n, &t1, &d1, &s1);
        if (parts > most_parts)
            most_parts = parts;
        if ((k >= 7 && most_parts >= 3) || s2.threads == 1)
            break;
    }
    bl_mapindex_close(a);
    bl_mapindex_close(b);
    bl_buf_cleanup(&i1);
    bl_buf_cleanup(&i2);
    bl_buf_cleanup(&d1);
    bl_buf_cleanup(&d2);
    bl_buf_cleanup(&t1);
    bl_buf_cleanup(&t2);
    return s2.threads;
}

/* check_two_halves on m (then cleaned up), which must parse on two threads
 * and be split into three parts or more in some build. */
static void check_splits_join(const char *what, bl_buf *m)
{
    most_parts = 0;
    ck_assert_uint_eq(check_two_halves(what, m->data, m->len), 2);
    ck_assert_uint_ge(most_parts, 3);
    bl_buf_cleanup(m);
}

/* A mapping using every R8 feature in both halves, with malformed lines
 * and warnings in both, parses the same in two halves as in one. */
START_TEST(two_halves_equal_one)
{
    bl_buf m;
    bl_buf_init(&m, 0);
    bl_buf_puts(&m, "# compiler: R8\n# compiler_version: 8.3.36\n# min_api: 24\n"
                    "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n");
    char l[1024];
    for (int c = 0; c < 40; c++) {
        snprintf(l, sizeof l,
                 "com.example.C%d -> a.%c%d:\n"
                 "# {\"id\":\"sourceFile\",\"fileName\":\"C%d.kt\"}\n"
                 "    int count -> a\n"
                 "    java.lang.String name -> b\n"
                 "    1:3:void run():10:12 -> a\n"
                 "    4:4:void inner():50:50 -> a\n"
                 "    4:4:void run():13 -> a\n"
                 "    5:5:void outlined():1:1 -> b\n"
                 "    # {\"id\":\"com.android.tools.r8.outline\"}\n"
                 "    6:8:void caller(int):20:22 -> c\n"
                 "    # {\"id\":\"com.android.tools.r8.outlineCallsite\","
                 "\"positions\":{\"1\":21,\"2\":22},\"outline\":\"La/%c%d;b()V\"}\n"
                 "    9:9:void lambda$0():30:30 -> d\n"
                 "    # {\"id\":\"com.android.tools.r8.synthesized\"}\n"
                 "    10:10:void thrower():40:40 -> e\n"
                 "    # {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":"
                 "[\"throws(Ljava/lang/NullPointerException;)\"],"
                 "\"actions\":[\"removeInnerFrames(1)\"]}\n"
                 "    11:11:void sig(int):41:41 -> f\n"
                 "    # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"(J)V\"}\n"
                 "    com.example.Other.moved():60:60 -> g\n",
                 c, 'a' + c % 26, c, c, 'a' + c % 26, c);
        bl_buf_puts(&m, l);
        if (c == 7 || c == 33) /* a malformed line and a warning, both halves */
            bl_buf_puts(&m, "    x:1:void broken() -> z\n    # {\"no id\":1}\n");
    }
    most_parts = 0;
    ck_assert_uint_eq(check_two_halves("generated", m.data, m.len), 2);
    ck_assert_uint_ge(most_parts, 3); /* parts split off parts were joined */
    /* a class mapped again in the second half: members merged into the
     * first mapping, as in one pass (the build parses the half again) */
    bl_buf_puts(&m, "com.example.C0 -> a.a0:\n    12:12:void late():70:70 -> h\n");
    most_parts = 0;
    ck_assert_uint_eq(check_two_halves("class twice", m.data, m.len), 1);
    ck_assert_uint_eq(most_parts, 1); /* parsed again after the first part */
    bl_buf_cleanup(&m);

    /* uneven halves: classes with R8 metadata (slow to read) in the first,
     * plain ones in the second: the second thread is done first and splits
     * the first part, so parts are made out of mapping order */
    bl_buf_init(&m, 0);
    bl_buf_puts(&m, "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n");
    for (int c = 0; c < 200; c++) {
        snprintf(l, sizeof l,
                 "com.example.H%d -> h%d:\n"
                 "# {\"id\":\"sourceFile\",\"fileName\":\"H%d.kt\"}\n"
                 "    1:1:void a():1:1 -> a\n"
                 "    # {\"id\":\"com.android.tools.r8.synthesized\"}\n"
                 "    2:2:void b():2:2 -> b\n"
                 "    # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"(J)V\"}\n"
                 "    3:3:void c():3:3 -> c\n"
                 "    # {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":"
                 "[\"throws(Ljava/lang/NullPointerException;)\"],"
                 "\"actions\":[\"removeInnerFrames(1)\"]}\n",
                 c, c, c);
        bl_buf_puts(&m, l);
    }
    size_t heavy = m.len;
    for (int c = 0; m.len < 2 * heavy; c++) {
        snprintf(l, sizeof l, "com.example.P%d -> p%d:\n    1:1:void run():1:1 -> a\n", c, c);
        bl_buf_puts(&m, l);
    }
    check_splits_join("uneven", &m);
}
END_TEST

/* A part is split only at the start of a class line. Here most bytes are
 * column-0 comments whose tail reads like a class line ("... -> zN:") and
 * class lines with long original names: a split point taken in the middle
 * of such a line made the new part start with a made-up class (the
 * comment's tail: extra classes and methods, lines counted twice) or with
 * a class also in the part before (the whole parse then done again on one
 * thread). */
START_TEST(split_at_line_starts)
{
    bl_buf m;
    bl_buf_init(&m, 0);
    char fill[1500];
    memset(fill, 'x', sizeof fill - 1);
    fill[sizeof fill - 1] = '\0';
    char l[4096];
    for (int c = 0; c < 120; c++) {
        snprintf(l, sizeof l,
                 "#%s -> z%d:\n"
                 "com.example.%s.C%d -> a%d:\n"
                 "    1:1:void run():1:1 -> a\n"
                 "    2:2:void stop():2:2 -> b\n",
                 fill, c, c % 2 ? fill : "short", c, c);
        bl_buf_puts(&m, l);
    }
    check_splits_join("split at line starts", &m);
}
END_TEST

/* --strict with the first malformed line in the second half: the same
 * error, line and counts as one pass. */
START_TEST(two_halves_strict_failure)
{
    bl_buf m;
    bl_buf_init(&m, 0);
    char l[256];
    for (int c = 0; c < 40; c++) {
        snprintf(l, sizeof l, "com.example.C%d -> a%d:\n    1:1:void run():1:1 -> a\n", c, c);
        bl_buf_puts(&m, l);
        if (c == 30)
            bl_buf_puts(&m, "    x:1:void broken() -> z\n");
    }
    bl_mi_stats s[3];
    bl_err e[3];
    for (int k = 0; k < 3; k++) {
        bl_mi_build_opts o = { 0 };
        o.strict = 1;
        o.threads = k ? 2 : 1;
        o.split_min = k == 2 ? 1 : 0; /* parts split off: the same failure */
        bl_buf img;
        bl_buf_init(&img, 0);
        e[k] = bl_mapindex_build(m.data, m.len, &o, &img, &s[k]);
        bl_buf_cleanup(&img);
    }
    ck_assert_int_eq(e[0], BL_EFORMAT);
    ck_assert_int_eq(e[1], BL_EFORMAT);
    ck_assert_uint_eq(s[0].lines, 63);
    ck_assert_uint_eq(s[1].lines, s[0].lines);
    ck_assert_uint_eq(s[1].malformed, s[0].malformed);
    ck_assert_uint_eq(s[1].classes, s[0].classes);
    ck_assert_uint_eq(s[1].methods, s[0].methods);
    ck_assert_int_eq(e[2], BL_EFORMAT);
    ck_assert_uint_eq(s[2].lines, s[0].lines);
    ck_assert_uint_eq(s[2].malformed, s[0].malformed);
    ck_assert_uint_eq(s[2].classes, s[0].classes);
    ck_assert_uint_eq(s[2].methods, s[0].methods);
    bl_buf_cleanup(&m);
}
END_TEST

/* The golden retrace mappings and the real R8 files: same index in two
 * halves as in one. */
START_TEST(two_halves_real_files)
{
    const char *dirs[2] = { BL_SOURCE_DIR "/tests/cases/retrace", BL_SHARED_DIR "/r8-mappings" };
    int two = 0;
    most_parts = 0;
    for (int d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir)
            continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.')
                continue;
            char path[2048];
            if (d == 0)
                snprintf(path, sizeof path, "%s/%s/mapping.txt", dirs[d], e->d_name);
            else
                snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            size_t n;
            char *m = tu_read_file(path, &n);
            if (!m)
                continue;
            two += check_two_halves(path, m, n) == 2;
            free(m);
        }
        closedir(dir);
    }
    ck_assert_int_ge(two, 10);
    ck_assert_uint_ge(most_parts, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mapping");
    TCase *tc = tcase_create("parser");
    tcase_add_test(tc, class_line);
    tcase_add_test(tc, nul_bytes);
    tcase_add_test(tc, field_line);
    tcase_add_test(tc, method_lines);
    tcase_add_test(tc, comment_lines);
    tcase_add_test(tc, lenient_json);
    suite_add_tcase(s, tc);
    TCase *ti = tcase_create("index");
    tcase_add_test(ti, index_lookups);
    tcase_add_test(ti, empty_and_odd_mappings);
    tcase_add_test(ti, two_halves_equal_one);
    tcase_add_test(ti, two_halves_strict_failure);
    tcase_add_test(ti, split_at_line_starts);
    tcase_add_test(ti, synthesized_spreads_per_signature);
    tcase_add_test(ti, one_original_method_in_many_classes);
    tcase_add_test(ti, two_halves_real_files);
    suite_add_tcase(s, ti);
    return tu_run(s);
}
