/*
 * r8_test.c — real R8 mapping files (../shared/r8-mappings, produced by real
 * R8 builds; see its README) with hand-worked expectations: parsing, map
 * versions, retrace (file names, synthesized frames, outlines, inline
 * groups) and method symbolication with residualsignature.
 *
 * The files live beside the repository (shared by every developer and CI),
 * not in it. When they are missing this test says so and exits 77, which
 * ctest reports as skipped — set BEATLINE_SHARED_DIR to where they are.
 */
#include <sys/stat.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"
#include "symbol/symbolicate.h"
#include "symbol_testutil.h"
#include "sym_fixture.h"

#define R8_DIR BL_SHARED_DIR "/r8-mappings"


static char *retrace_file(const char *file, const char *prefix, const char *trace, int verbose)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", R8_DIR, file);
    size_t n;
    char *m = tu_read_file(path, &n);
    ck_assert_ptr_nonnull(m);
    bl_buf all;
    bl_buf_init(&all, 0);
    bl_buf_puts(&all, prefix);
    bl_buf_append(&all, m, n);
    free(m);
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(all.data, all.len, &img, &st);
    char *got = tu_retrace_str(mi, verbose, trace);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    /* parsed in two halves (R8 metadata on both sides of the cut): same */
    mi = tu_index_threads(all.data, all.len, 2, &img, &st, NULL);
    ck_assert_uint_eq(st.threads, 2);
    char *got2 = tu_retrace_str(mi, verbose, trace);
    ck_assert_msg(strcmp(got, got2) == 0, "%s: 2 threads differ:\n%s---\n%s", file, got, got2);
    free(got2);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    bl_buf_cleanup(&all);
    return got;
}

/* Every real R8 mapping parses without a malformed line. */
START_TEST(r8_files_parse_clean)
{
    static const char *const files[] = {
        "mapping-callback.txt", "mapping-inlines.txt", "mapping-outline-complex.txt",
        "mapping-r8-symbolicated_file_names.txt", "mapping-zero-line-info.txt" };
    static const uint32_t versions[] = { BL_MAPVER_2_1, BL_MAPVER_NONE, BL_MAPVER_NONE,
                                         BL_MAPVER_2_2, BL_MAPVER_NONE };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", R8_DIR, files[i]);
        size_t n;
        char *m = tu_read_file(path, &n);
        ck_assert_msg(m != NULL, "cannot read %s", path);
        bl_buf img;
        bl_mi_stats st;
        bl_mapindex *mi = tu_index_of(m, n, &img, &st);
        ck_assert_msg(st.malformed == 0, "%s: %llu malformed", files[i],
                      (unsigned long long)st.malformed);
        ck_assert_uint_eq(st.map_version, versions[i]);
        ck_assert_uint_gt(st.methods, 10);
        bl_mapindex_close(mi);
        bl_buf_cleanup(&img);
        free(m);
    }
}
END_TEST
/* R8 8.3.36, map version 2.2: sourceFile names, synthesized lambda. */
START_TEST(r8_symbolicated_file_names)
{
    char *got = retrace_file("mapping-r8-symbolicated_file_names.txt", "",
                             "java.lang.RuntimeException: boom\n"
                             "    at a.a.a(SourceFile:9)\n"
                             "    at a.b.a(SourceFile:7)\n"
                             "    at a.b.b(SourceFile:2)\n"
                             "    at io.wzieba.r8fullmoderenamessources.MainActivity.a(SourceFile:1)\n"
                             "    at io.wzieba.r8fullmoderenamessources.MainActivity.onCreate(SourceFile:10)\n"
                             "    at a.c.onClick(SourceFile:1)\n",
                             0);
    ck_assert_str_eq(got,
                     "java.lang.RuntimeException: boom\n"
                     "    at io.wzieba.r8fullmoderenamessources.Foobar.foo(Foobar.kt:10)\n"
                     "    at io.wzieba.r8fullmoderenamessources.FoobarKt.main(Foobar.kt:16)\n"
                     "    at io.wzieba.r8fullmoderenamessources.FoobarKt.main(Foobar.kt)\n"
                     "    at io.wzieba.r8fullmoderenamessources.MainActivity.onCreate(MainActivity.kt:13)\n");
    free(got);
}
END_TEST
/* Compose app mapping: outline + outlineCallsite + synthesized bridge.
 * The file's header was edited (no map version), so we prepend 2.2. */
START_TEST(r8_outline_complex)
{
    const char *trace = "java.lang.NullPointerException\n"
                        "    at ev.h.b(SourceFile:3)\n"
                        "    at uu0.k.l(SourceFile:43)\n"
                        "    at uu0.k.l(SourceFile:7)\n";
    char *got = retrace_file("mapping-outline-complex.txt",
                             "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n",
                             trace, 0);
    ck_assert_str_eq(
        got, "java.lang.NullPointerException\n"
             "    at com.example.projection.MapProjectionViewController.onProjectionView(MapProjectionViewController.kt:160)\n"
             "    at com.example.projection.MapProjectionViewController.createProjectionMarkerInternal(MapProjectionViewController.kt:133)\n"
             "    at com.example.projection.MapProjectionViewController.createProjectionMarker(MapProjectionViewController.kt:79)\n"
             "    at com.example.MapAnnotations.createProjectionMarker(MapAnnotations.kt:63)\n"
             "    at com.example.projection.MapProjectionViewController.createProjectionMarker(MapProjectionViewController.kt:79)\n"
             "    at com.example.MapAnnotations.createProjectionMarker(MapAnnotations.kt:63)\n");
    free(got);
    /* without a version the R8 2.x information is a comment: the outline
     * frame stays and the synthesized bridge is printed */
    got = retrace_file("mapping-outline-complex.txt", "", trace, 0);
    ck_assert_ptr_nonnull(strstr(got, "at ev.CanvasAttributeLayoutKt$$ExternalSyntheticOutline0.m("));
    ck_assert_ptr_nonnull(strstr(got, "at uu0.MapAnnotations.createProjectionMarker("));
    free(got);
}
END_TEST
/* R8 2.0.74 inline frames (no map version). */
START_TEST(r8_inlines)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/mapping-inlines.txt", R8_DIR);
    size_t n;
    char *m = tu_read_file(path, &n);
    ck_assert_ptr_nonnull(m);
    /* pick the first inline group from the file itself: two consecutive
     * method lines with the same minified range and obfuscated name */
    bl_buf img;
    bl_mi_stats st;
    bl_mapindex *mi = tu_index_of(m, n, &img, &st);
    int groups = 0;
    for (uint32_t i = 0; i < bl_mapindex_header(mi)->n_methods; i++) {
        const bl_mi_method *e = bl_mapindex_method_at(mi, i);
        if ((e->flags & BL_MIM_GROUP_START) && !(e->flags & BL_MIM_OUTER))
            groups++;
    }
    ck_assert_int_gt(groups, 5);
    bl_mapindex_close(mi);
    bl_buf_cleanup(&img);
    free(m);
}
END_TEST


/* Real R8 8.3.36 file: hand-worked expectations. */
START_TEST(r8_file_names)
{
    size_t n;
    char *m = tu_read_file(R8_DIR "/mapping-r8-symbolicated_file_names.txt", &n);
    ck_assert_ptr_nonnull(m);
    load(m, n);
    check("a.a", "a", "()V", "io.wzieba.r8fullmoderenamessources.Foobar", "foo", "()V",
          "Foobar.kt", BL_SYM_EXACT);
    check("a.b", "b", "([Ljava/lang/String;)V", "io.wzieba.r8fullmoderenamessources.FoobarKt",
          "main", "([Ljava/lang/String;)V", "Foobar.kt", BL_SYM_EXACT);
    check("a.b", "a", "()V", "io.wzieba.r8fullmoderenamessources.FoobarKt", "main", "()V",
          "Foobar.kt", BL_SYM_EXACT);
    check("io.wzieba.r8fullmoderenamessources.MainActivity", "onCreate",
          "(Landroid/os/Bundle;)V", "io.wzieba.r8fullmoderenamessources.MainActivity",
          "onCreate", "(Landroid/os/Bundle;)V", "MainActivity.kt", BL_SYM_EXACT);
    unload();
    free(m);
}
END_TEST
/* residualsignature (map version 2.2): the descriptor the app sees differs
 * from the original one (a parameter was removed, types renamed). */
START_TEST(r8_residual_signature)
{
    size_t n;
    char *m = tu_read_file(R8_DIR "/mapping-outline-complex.txt", &n);
    ck_assert_ptr_nonnull(m);
    bl_buf all;
    bl_buf_init(&all, 0);
    bl_buf_puts(&all, "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n");
    bl_buf_append(&all, m, n);
    load(all.data, all.len);
    check("ev.i", "<init>",
          "(Lpw/o;Lev/r5;Lkotlin/jvm/functions/Function1;Lp1/e;Landroidx/compose/ui/d;I)V",
          "com.example.compose.component.CanvasAttributeLayoutKt$CanvasAttributeLayout$1",
          "<init>",
          "(Lcom/example/models/CanvasAttributeLayout;"
          "Lcom/example/compose/component/CanvasNodeCommonRenderState;"
          "Lkotlin/jvm/functions/Function1;Lkotlin/jvm/functions/Function4;"
          "Landroidx/compose/ui/Modifier;II)V",
          "CanvasAttributeLayout.kt", BL_SYM_EXACT);
    unload();
    bl_buf_cleanup(&all);
    free(m);
}
END_TEST

int main(void)
{
    struct stat sb;
    if (stat(R8_DIR, &sb) != 0) {
        printf("r8_test: %s not found: the real R8 mappings are not beside this checkout "
               "(configure with -DBEATLINE_SHARED_DIR=...); skipped\n", R8_DIR);
        return 77;
    }
    Suite *s = suite_create("r8");
    TCase *tc = tcase_create("r8");
    tcase_add_test(tc, r8_files_parse_clean);
    tcase_add_test(tc, r8_symbolicated_file_names);
    tcase_add_test(tc, r8_outline_complex);
    tcase_add_test(tc, r8_inlines);
    tcase_add_test(tc, r8_file_names);
    tcase_add_test(tc, r8_residual_signature);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
