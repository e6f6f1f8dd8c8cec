/*
 * methodid_test.c — method-ID files (schema/method-id-file.md): a Matrix
 * methodMapping.txt as Matrix writes it (LF and CR LF), normalisation,
 * every kind of malformed line in lenient and strict mode, duplicates,
 * header variants, limits, order, UTF-8, and a 1e6-line file.
 */
#include <stdint.h>
#include <time.h>

#include "ingest/methodid.h"
#include "testutil.h"

/* ---- helpers ---------------------------------------------------------- */

#define MAX_DIAGS 16

typedef struct diags {
    int n;
    uint64_t line[MAX_DIAGS];
    char msg[MAX_DIAGS][160];
} diags;

static void collect(void *ctx, uint64_t line, const char *message)
{
    diags *d = ctx;
    ck_assert_ptr_nonnull(message);
    ck_assert_uint_gt(strlen(message), 0);
    if (d->n < MAX_DIAGS) {
        d->line[d->n] = line;
        snprintf(d->msg[d->n], sizeof d->msg[d->n], "%s", message);
    }
    d->n++;
}

/* Lenient parse that must succeed. */
static bl_methodids *parse_ok(const char *text, diags *d)
{
    bl_methodids *t = NULL;
    uint64_t bad = 99;
    ck_assert_int_eq(bl_methodids_parse(text, strlen(text), 0, collect, d, &t, &bad), BL_OK);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(bad, 0);
    return t;
}

static void check_entry(const bl_methodids *t, uint32_t id, uint32_t access, const char *cls,
                        const char *name, const char *desc)
{
    const bl_mid_entry *e = bl_methodids_get(t, id);
    ck_assert_msg(e != NULL, "no entry for id %u", (unsigned)id);
    ck_assert_uint_eq(e->id, id);
    ck_assert_uint_eq(e->access, access);
    ck_assert_str_eq(e->cls, cls);
    ck_assert_str_eq(e->name, name);
    ck_assert_str_eq(e->desc, desc);
}

/* Entries by position are in strictly ascending id order and agree with get. */
static void check_order(const bl_methodids *t)
{
    uint32_t n = bl_methodids_count(t);
    for (uint32_t i = 0; i < n; i++) {
        const bl_mid_entry *e = bl_methodids_at(t, i);
        ck_assert_ptr_nonnull(e);
        ck_assert_ptr_eq(bl_methodids_get(t, e->id), e);
        if (i)
            ck_assert_uint_lt(bl_methodids_at(t, i - 1)->id, e->id);
        ck_assert_uint_lt(e->id, bl_methodids_id_limit(t));
    }
    ck_assert_ptr_null(bl_methodids_at(t, n));
    if (n)
        ck_assert_uint_eq(bl_methodids_at(t, n - 1)->id + 1, bl_methodids_id_limit(t));
    else
        ck_assert_uint_eq(bl_methodids_id_limit(t), 0);
}

/* ---- a Matrix methodMapping.txt -------------------------------------- */

/*
 * What Matrix's trace plugin writes for a small notes app: one
 * TraceMethod.toString() per line, sorted by id from 1, '.' in class names
 * and descriptors, access flags in decimal (4161 = public bridge synthetic,
 * 4104 = static synthetic, 4114 = private final synthetic), and the extra
 * Handler.dispatchMessage entry with id 0xFFFFF - 1 at the end.
 */
static const char matrix_sample[] =
    "1,1,com.example.notes.NotesApplication <init> ()V\n"
    "2,1,com.example.notes.NotesApplication onCreate ()V\n"
    "3,4,com.example.notes.NotesApplication attachBaseContext (Landroid.content.Context;)V\n"
    "4,4,com.example.notes.ui.MainActivity onCreate (Landroid.os.Bundle;)V\n"
    "5,1,com.example.notes.ui.MainActivity onWindowFocusChanged (Z)V\n"
    "6,2,com.example.notes.ui.MainActivity setupList ()V\n"
    "7,4104,com.example.notes.ui.MainActivity access$000 (Lcom.example.notes.ui.MainActivity;)V\n"
    "8,4114,com.example.notes.ui.MainActivity lambda$onCreate$0 (Landroid.view.View;)V\n"
    "9,1,com.example.notes.ui.MainActivity$1 onClick (Landroid.view.View;)V\n"
    "10,0,com.example.notes.ui.MainActivity$1 <init> (Lcom.example.notes.ui.MainActivity;)V\n"
    "11,1,com.example.notes.ui.NoteAdapter onCreateViewHolder (Landroid.view.ViewGroup;I)Lcom.example.notes.ui.NoteAdapter$Holder;\n"
    "12,4161,com.example.notes.ui.NoteAdapter onCreateViewHolder (Landroid.view.ViewGroup;I)Landroidx.recyclerview.widget.RecyclerView$ViewHolder;\n"
    "13,1,com.example.notes.ui.NoteAdapter onBindViewHolder (Lcom.example.notes.ui.NoteAdapter$Holder;I)V\n"
    "14,4161,com.example.notes.ui.NoteAdapter onBindViewHolder (Landroidx.recyclerview.widget.RecyclerView$ViewHolder;I)V\n"
    "15,1,com.example.notes.ui.NoteAdapter getItemCount ()I\n"
    "16,9,com.example.notes.data.NoteStore get (Landroid.content.Context;)Lcom.example.notes.data.NoteStore;\n"
    "17,33,com.example.notes.data.NoteStore query (Ljava.lang.String;JJ)Ljava.util.List;\n"
    "18,2,com.example.notes.data.NoteStore readBlob ([BII)[B\n"
    "19,10,com.example.notes.data.NoteStore checksum ([[JD)D\n"
    "20,8,com.example.notes.data.NoteStore <clinit> ()V\n"
    "21,1,com.example.notes.data.NoteStore$Migration migrate (Landroid.database.sqlite.SQLiteDatabase;II)V\n"
    "22,9,com.example.notes.data.Kind values ()[Lcom.example.notes.data.Kind;\n"
    "23,9,com.example.notes.data.Kind valueOf (Ljava.lang.String;)Lcom.example.notes.data.Kind;\n"
    "24,17,com.example.notes.sync.SyncWorker doWork ()Landroidx.work.ListenableWorker$Result;\n"
    "25,1,com.example.notes.sync.SyncWorker$run$1 invokeSuspend (Ljava.lang.Object;)Ljava.lang.Object;\n"
    "26,25,com.example.notes.util.Strings join (Ljava.lang.CharSequence;[Ljava.lang.Object;)Ljava.lang.String;\n"
    "27,4,com.example.notes.ui.MainActivity onDestroy ()V\n"
    "1048574,1,android.os.Handler dispatchMessage (Landroid.os.Message;)V\n";

static void check_matrix_table(const bl_methodids *t)
{
    ck_assert_uint_eq(bl_methodids_count(t), 28);
    ck_assert_uint_eq(bl_methodids_id_limit(t), 1048575);
    ck_assert_uint_eq(bl_methodids_malformed(t), 0);
    ck_assert_int_eq(bl_methodids_obfuscated(t), 0);
    check_entry(t, 1, 1, "com.example.notes.NotesApplication", "<init>", "()V");
    check_entry(t, 4, 4, "com.example.notes.ui.MainActivity", "onCreate", "(Landroid/os/Bundle;)V");
    check_entry(t, 7, 4104, "com.example.notes.ui.MainActivity", "access$000",
                "(Lcom/example/notes/ui/MainActivity;)V");
    check_entry(t, 8, 4114, "com.example.notes.ui.MainActivity", "lambda$onCreate$0",
                "(Landroid/view/View;)V");
    check_entry(t, 12, 4161, "com.example.notes.ui.NoteAdapter", "onCreateViewHolder",
                "(Landroid/view/ViewGroup;I)Landroidx/recyclerview/widget/RecyclerView$ViewHolder;");
    check_entry(t, 17, 33, "com.example.notes.data.NoteStore", "query",
                "(Ljava/lang/String;JJ)Ljava/util/List;");
    check_entry(t, 19, 10, "com.example.notes.data.NoteStore", "checksum", "([[JD)D");
    check_entry(t, 20, 8, "com.example.notes.data.NoteStore", "<clinit>", "()V");
    check_entry(t, 22, 9, "com.example.notes.data.Kind", "values", "()[Lcom/example/notes/data/Kind;");
    check_entry(t, 1048574, 1, "android.os.Handler", "dispatchMessage", "(Landroid/os/Message;)V");
    ck_assert_ptr_null(bl_methodids_get(t, 0));
    ck_assert_ptr_null(bl_methodids_get(t, 28));
    ck_assert_ptr_null(bl_methodids_get(t, 1048573));
    ck_assert_ptr_null(bl_methodids_get(t, 1048575));
    ck_assert_ptr_null(bl_methodids_get(t, BL_MID_MAX_ID));
    ck_assert_ptr_null(bl_methodids_get(t, BL_MID_MAX_ID + 1));
    ck_assert_ptr_null(bl_methodids_get(t, UINT32_MAX));
    ck_assert_uint_eq(bl_methodids_at(t, 0)->id, 1);
    ck_assert_uint_eq(bl_methodids_at(t, 26)->id, 27);
    ck_assert_uint_eq(bl_methodids_at(t, 27)->id, 1048574);
    check_order(t);
}

START_TEST(matrix_file)
{
    diags d = { 0 };
    bl_methodids *t = parse_ok(matrix_sample, &d);
    ck_assert_int_eq(d.n, 0);
    check_matrix_table(t);
    bl_methodids_free(t);

    /* strict mode accepts it too */
    t = NULL;
    ck_assert_int_eq(bl_methodids_parse(matrix_sample, strlen(matrix_sample), 1, NULL, NULL, &t,
                                        NULL),
                     BL_OK);
    check_matrix_table(t);
    bl_methodids_free(t);
}
END_TEST

START_TEST(matrix_file_crlf)
{
    /* Matrix's PrintWriter.println writes CR LF on Windows; also drop the
     * final line end */
    bl_buf b;
    bl_buf_init(&b, 0);
    for (const char *p = matrix_sample; *p; p++) {
        if (*p == '\n')
            ck_assert_int_eq(bl_buf_putc(&b, '\r'), BL_OK);
        ck_assert_int_eq(bl_buf_putc(&b, *p), BL_OK);
    }
    b.len -= 2;
    diags d = { 0 };
    bl_methodids *t = NULL;
    ck_assert_int_eq(bl_methodids_parse(b.data, b.len, 1, collect, &d, &t, NULL), BL_OK);
    ck_assert_int_eq(d.n, 0);
    check_matrix_table(t);
    bl_methodids_free(t);
    bl_buf_cleanup(&b);
}
END_TEST

/* ---- well-formed variants -------------------------------------------- */

START_TEST(normalisation)
{
    static const char text[] =
        "\xEF\xBB\xBF" /* byte-order mark */
        "# a comment, then a blank line\n"
        "\n"
        "   \t \r\n"
        "1,1,com/example/Slashes run (Ljava/lang/Runnable;)V\n"
        "2,1,com.example.Mixed run (Ljava.lang/Runnable;Lx/y.Z;)Lp.q/R;\r\n"
        "  3,9,com.example.Spaces\t  go \t ()V \t\r\n"
        "0004,1,com.example.Zeros z ()Z\n"
        "5,264,com.example.Native hash\n"
        "6,256,com.example.Native withDesc (J)J\n"
        "    # indented comment 7,1,not.a record ()V\n"
        "7,1,com.example.Caf\xC3\xA9 \xE6\x96\xB9\xE6\xB3\x95 (L\xF0\x9F\x98\x80;)V\n"
        "8,1,a b ()V";
    diags d = { 0 };
    bl_methodids *t = parse_ok(text, &d);
    ck_assert_int_eq(d.n, 0);
    ck_assert_uint_eq(bl_methodids_count(t), 8);
    check_entry(t, 1, 1, "com.example.Slashes", "run", "(Ljava/lang/Runnable;)V");
    check_entry(t, 2, 1, "com.example.Mixed", "run", "(Ljava/lang/Runnable;Lx/y/Z;)Lp/q/R;");
    check_entry(t, 3, 9, "com.example.Spaces", "go", "()V");
    check_entry(t, 4, 1, "com.example.Zeros", "z", "()Z");
    check_entry(t, 5, 264, "com.example.Native", "hash", "");
    check_entry(t, 6, 256, "com.example.Native", "withDesc", "(J)J");
    check_entry(t, 7, 1, "com.example.Caf\xC3\xA9", "\xE6\x96\xB9\xE6\xB3\x95",
                "(L\xF0\x9F\x98\x80;)V");
    check_entry(t, 8, 1, "a", "b", "()V");
    check_order(t);
    bl_methodids_free(t);
}
END_TEST

START_TEST(empty_inputs)
{
    static const char *const texts[] = { "", "\n", "\r\n", "# nothing\n\n  \n", "\xEF\xBB\xBF",
                                         "# beatline method-ids v1 names=obfuscated\n" };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        diags d = { 0 };
        bl_methodids *t = parse_ok(texts[i], &d);
        ck_assert_int_eq(d.n, 0);
        ck_assert_uint_eq(bl_methodids_count(t), 0);
        ck_assert_uint_eq(bl_methodids_id_limit(t), 0);
        ck_assert_ptr_null(bl_methodids_get(t, 0));
        ck_assert_ptr_null(bl_methodids_at(t, 0));
        ck_assert_uint_eq(bl_methodids_malformed(t), 0);
        ck_assert_int_eq(bl_methodids_obfuscated(t), i == 5);
        bl_methodids_free(t);
    }
    /* NULL data with length 0 */
    bl_methodids *t = NULL;
    ck_assert_int_eq(bl_methodids_parse(NULL, 0, 1, NULL, NULL, &t, NULL), BL_OK);
    ck_assert_uint_eq(bl_methodids_count(t), 0);
    bl_methodids_free(t);
    bl_methodids_free(NULL);
}
END_TEST

/* ---- malformed lines -------------------------------------------------- */

static const char *const bad_lines[] = {
    /* methodId */
    ",1,a.B c ()V",
    "x,1,a.B c ()V",
    "-1,1,a.B c ()V",
    "+1,1,a.B c ()V",
    "8388608,1,a.B c ()V",
    "99999999999999999999999,1,a.B c ()V",
    "4294967297,1,a.B c ()V",
    "12 ,1,a.B c ()V",
    "12",
    "12;1,a.B c ()V",
    /* access flags */
    "12,,a.B c ()V",
    "12,x,a.B c ()V",
    "12,65536,a.B c ()V",
    "12,18446744073709551617,a.B c ()V",
    "12, 1,a.B c ()V",
    "12,1",
    "12,1 a.B c ()V",
    "12,0x1,a.B c ()V",
    /* class */
    "12,1, a.B c ()V",
    "12,1,",
    "12,1,a.B",
    "12,1,.a.B c ()V",
    "12,1,a.B. c ()V",
    "12,1,a..B c ()V",
    "12,1,a//B c ()V",
    "12,1,a;B c ()V",
    "12,1,[La.B; c ()V",
    /* method name */
    "12,1,a.B c.d ()V",
    "12,1,a.B c/d ()V",
    "12,1,a.B c;d ()V",
    "12,1,a.B c[ ()V",
    "12,1,a.B <c> ()V",
    "12,1,a.B <init ()V",
    "12,1,a.B init> ()V",
    "12,1,a.B <init>x ()V",
    /* descriptor */
    "12,1,a.B c",
    "12,9,a.B c",
    "12,1,a.B c ()V trailing",
    "12,1,a.B c V",
    "12,1,a.B c ()",
    "12,1,a.B c (",
    "12,1,a.B c )V",
    "12,1,a.B c (I",
    "12,1,a.B c (I)",
    "12,1,a.B c ()VV",
    "12,1,a.B c ()II",
    "12,1,a.B c (V)V",
    "12,1,a.B c ([V)V",
    "12,1,a.B c ()[V",
    "12,1,a.B c (X)V",
    "12,1,a.B c (i)V",
    "12,1,a.B c (L;)V",
    "12,1,a.B c (Ljava/lang/String)V",
    "12,1,a.B c (Ljava/lang/String;",
    "12,1,a.B c (L/a;)V",
    "12,1,a.B c (La/;)V",
    "12,1,a.B c (La//b;)V",
    "12,1,a.B c (La..b;)V",
    "12,1,a.B c (La[b;)V",
    "12,1,a.B c ([)V",
    "12,1,a.B c (I.)V",
    "12,1,a.B c ().V",
    "12,1,a.B c ()Ljava/lang/String",
    "12,1,a.B c ()L;",
    "12,1,a.B c (()V",
    "12,1,a.B c ()()V",
    "12,1,a.B c []V",
    "12,1,a.B c ()v",
    /* bytes */
    "12,1,a.B\x01 c ()V",
    "12,1,a.B c\x7F ()V",
    "12,1,a.B c ()V\rjunk",
    "12,1,a.\xC3 c ()V",           /* truncated 2-byte sequence */
    "12,1,a.\xC0\xAF c ()V",       /* overlong '/' */
    "12,1,a.\xE0\x80\xAF c ()V",   /* overlong, 3 bytes */
    "12,1,a.\xED\xA0\x80 c ()V",   /* surrogate */
    "12,1,a.\xF4\x90\x80\x80 c ()V", /* above U+10FFFF */
    "12,1,a.\x80 c ()V",           /* lone continuation byte */
    "12,1,a.\xFF c ()V",
    /* not a record at all */
    "com.example.Foo bar ()V",
    "1,1,com.example.Foo -> a:",
};

START_TEST(malformed_lenient)
{
    for (size_t i = 0; i < sizeof bad_lines / sizeof *bad_lines; i++) {
        bl_buf b;
        bl_buf_init(&b, 0);
        ck_assert_int_eq(bl_buf_puts(&b, "11,1,ok.Before f ()V\n"), BL_OK);
        ck_assert_int_eq(bl_buf_puts(&b, bad_lines[i]), BL_OK);
        ck_assert_int_eq(bl_buf_puts(&b, "\n13,1,ok.After g ()V\n"), BL_OK);
        diags d = { 0 };
        bl_methodids *t = NULL;
        ck_assert_int_eq(bl_methodids_parse(b.data, b.len, 0, collect, &d, &t, NULL), BL_OK);
        ck_assert_msg(d.n == 1, "case %zu (%s): %d diagnostics", i, bad_lines[i], d.n);
        ck_assert_uint_eq(d.line[0], 2);
        ck_assert_uint_eq(bl_methodids_malformed(t), 1);
        ck_assert_uint_eq(bl_methodids_count(t), 2);
        ck_assert_ptr_nonnull(bl_methodids_get(t, 11));
        ck_assert_ptr_null(bl_methodids_get(t, 12));
        ck_assert_ptr_nonnull(bl_methodids_get(t, 13));
        check_order(t);
        bl_methodids_free(t);
        bl_buf_cleanup(&b);
    }
}
END_TEST

START_TEST(malformed_strict)
{
    for (size_t i = 0; i < sizeof bad_lines / sizeof *bad_lines; i++) {
        bl_buf b;
        bl_buf_init(&b, 0);
        ck_assert_int_eq(bl_buf_puts(&b, "# header comes later\n11,1,ok.Before f ()V\r\n"), BL_OK);
        ck_assert_int_eq(bl_buf_puts(&b, bad_lines[i]), BL_OK);
        ck_assert_int_eq(bl_buf_puts(&b, "\n13,1,ok.After g ()V\n14,1,bad\n"), BL_OK);
        diags d = { 0 };
        bl_methodids *t = (bl_methodids *)&d; /* must be reset to NULL */
        uint64_t bad = 0;
        ck_assert_int_eq(bl_methodids_parse(b.data, b.len, 1, collect, &d, &t, &bad), BL_EFORMAT);
        ck_assert_ptr_null(t);
        ck_assert_msg(bad == 3, "case %zu (%s): bad line %llu", i, bad_lines[i],
                      (unsigned long long)bad);
        ck_assert_int_eq(d.n, 1); /* stops at the first bad line */
        ck_assert_uint_eq(d.line[0], 3);
        /* without a diagnostic callback and without bad_line */
        ck_assert_int_eq(bl_methodids_parse(b.data, b.len, 1, NULL, NULL, &t, NULL), BL_EFORMAT);
        ck_assert_ptr_null(t);
        bl_buf_cleanup(&b);
    }
}
END_TEST

START_TEST(messages)
{
    static const struct {
        const char *line, *msg;
    } cases[] = {
        { "8388608,1,a.B c ()V", "methodId above 8388607" },
        { "x,1,a.B c ()V", "line does not start with a decimal methodId" },
        { "12,65536,a.B c ()V", "access flags above 65535" },
        { "12,1, a.B c ()V", "empty class name" },
        { "12,1,a..B c ()V", "malformed class name" },
        { "12,1,a.B c.d ()V", "malformed method name" },
        { "12,1,a.B c", "no descriptor (only native methods may omit it)" },
        { "12,1,a.B c (L;)V", "malformed descriptor" },
        { "12,1,a.B c ()V x", "unexpected text after the descriptor" },
        { "12,1,a.\xC0\xAF c ()V", "control character or invalid UTF-8" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        diags d = { 0 };
        bl_methodids_free(parse_ok(cases[i].line, &d));
        ck_assert_int_eq(d.n, 1);
        ck_assert_uint_eq(d.line[0], 1);
        ck_assert_str_eq(d.msg[0], cases[i].msg);
    }
}
END_TEST

/* ---- duplicates and order --------------------------------------------- */

START_TEST(duplicates)
{
    static const char text[] =
        "5,1,first.A a ()V\n"
        "6,1,first.B b ()V\n"
        "5,1,second.A a ()V\n"
        "5,1,first.A a ()V\n"
        "7,1,first.C c ()V\n"
        "6,2,second.B b (I)V\n";
    diags d = { 0 };
    bl_methodids *t = parse_ok(text, &d);
    ck_assert_int_eq(d.n, 3);
    ck_assert_uint_eq(d.line[0], 3);
    ck_assert_uint_eq(d.line[1], 4);
    ck_assert_uint_eq(d.line[2], 6);
    ck_assert_str_eq(d.msg[0], "duplicate methodId 5 (the first definition is kept)");
    ck_assert_uint_eq(bl_methodids_malformed(t), 3);
    ck_assert_uint_eq(bl_methodids_count(t), 3);
    check_entry(t, 5, 1, "first.A", "a", "()V");
    check_entry(t, 6, 1, "first.B", "b", "()V");
    check_order(t);
    bl_methodids_free(t);

    uint64_t bad = 0;
    t = NULL;
    ck_assert_int_eq(bl_methodids_parse(text, strlen(text), 1, NULL, NULL, &t, &bad), BL_EFORMAT);
    ck_assert_uint_eq(bad, 3);
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(any_order)
{
    static const char text[] =
        "8388607,1,z.Last l ()V\n"
        "40,1,m.Mid m ()V\n"
        "0,1,a.Zero z ()V\n"
        "4096,1,p.Page p ()V\n"
        "4095,1,p.Before p ()V\n"
        "41,1,m.Next n ()V\n";
    diags d = { 0 };
    bl_methodids *t = parse_ok(text, &d);
    ck_assert_int_eq(d.n, 0);
    ck_assert_uint_eq(bl_methodids_count(t), 6);
    ck_assert_uint_eq(bl_methodids_id_limit(t), BL_MID_MAX_ID + 1);
    static const uint32_t want[] = { 0, 40, 41, 4095, 4096, 8388607 };
    for (uint32_t i = 0; i < 6; i++)
        ck_assert_uint_eq(bl_methodids_at(t, i)->id, want[i]);
    check_entry(t, 0, 1, "a.Zero", "z", "()V");
    check_entry(t, 4096, 1, "p.Page", "p", "()V");
    check_entry(t, 8388607, 1, "z.Last", "l", "()V");
    ck_assert_ptr_null(bl_methodids_get(t, 1));
    ck_assert_ptr_null(bl_methodids_get(t, 8388606));
    check_order(t);
    bl_methodids_free(t);
}
END_TEST

/* ---- header ------------------------------------------------------------ */

START_TEST(header_variants)
{
    static const struct {
        const char *text;
        int obfuscated;
        int malformed; /* 0, or the line reported */
    } cases[] = {
        { "# beatline method-ids v1 names=obfuscated\n1,1,a.B c ()V\n", 1, 0 },
        { "# beatline method-ids v1 names=original\n1,1,a.B c ()V\n", 0, 0 },
        { "# beatline method-ids v1\n1,1,a.B c ()V\n", 0, 0 },
        { "1,1,a.B c ()V\n", 0, 0 },
        { "#beatline method-ids v1 names=obfuscated\r\n1,1,a.B c ()V\n", 1, 0 },
        { "  #\tbeatline  method-ids\tv1   names=obfuscated  \n1,1,a.B c ()V\n", 1, 0 },
        { "# beatline method-ids v1 tool=beatline-gradle/0.1 names=obfuscated x-y_z=1\n", 1, 0 },
        { "# some tool wrote this\n\n# beatline method-ids v1 names=obfuscated\n1,1,a.B c ()V\n", 1, 0 },
        { "\xEF\xBB\xBF# beatline method-ids v1 names=obfuscated\n", 1, 0 },
        /* comments that are not headers */
        { "# beatline\n# beatline method-id v1 names=obfuscated\n", 0, 0 },
        { "# Beatline method-ids v1 names=obfuscated\n", 0, 0 },
        { "# beatline-method-ids v1 names=obfuscated\n", 0, 0 },
        /* malformed headers: reported, nothing applies */
        { "# beatline method-ids v2 names=obfuscated\n1,1,a.B c ()V\n", 0, 1 },
        { "# beatline method-ids v01 names=obfuscated\n", 0, 1 },
        { "# beatline method-ids\n", 0, 1 },
        { "# beatline method-ids names=obfuscated\n", 0, 1 },
        { "# beatline method-ids v names=obfuscated\n", 0, 1 },
        { "# beatline method-ids V1 names=obfuscated\n", 0, 1 },
        { "# beatline method-ids v1x names=obfuscated\n", 0, 1 },
        { "# beatline method-ids v1 names=Obfuscated\n", 0, 1 },
        { "# beatline method-ids v1 names=\n", 0, 1 },
        { "# beatline method-ids v1 names\n", 0, 1 },
        { "# beatline method-ids v1 obfuscated\n", 0, 1 },
        { "# beatline method-ids v1 =x\n", 0, 1 },
        { "# beatline method-ids v1 Names=obfuscated\n", 0, 1 },
        { "# beatline method-ids v1 names=obfuscated names=obfuscated\n", 0, 1 },
        { "# beatline method-ids v1 names=original names=obfuscated\n", 0, 1 },
        /* placement */
        { "1,1,a.B c ()V\n# beatline method-ids v1 names=obfuscated\n", 0, 2 },
        { "x\n# beatline method-ids v1 names=obfuscated\n", 0, 2 }, /* line 1 is a (bad) record */
        { "# beatline method-ids v1 names=obfuscated\n# beatline method-ids v1 names=obfuscated\n", 1, 2 },
        { "# beatline method-ids v1 names=obfuscated\n# beatline method-ids v1 names=original\n", 1, 2 },
        { "# beatline method-ids v2\n# beatline method-ids v1 names=obfuscated\n", 0, 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        diags d = { 0 };
        bl_methodids *t = parse_ok(cases[i].text, &d);
        ck_assert_msg(bl_methodids_obfuscated(t) == cases[i].obfuscated, "case %zu: obfuscated", i);
        if (cases[i].malformed) {
            ck_assert_msg(d.n >= 1, "case %zu: no diagnostic", i);
            ck_assert_msg(d.line[d.n - 1] == (uint64_t)cases[i].malformed, "case %zu: line", i);
        } else {
            ck_assert_msg(d.n == 0, "case %zu: %d diagnostics", i, d.n);
        }
        bl_methodids_free(t);
    }
    /* the v2 message names the version */
    diags d = { 0 };
    bl_methodids_free(parse_ok("# beatline method-ids v2\n", &d));
    ck_assert_int_eq(d.n, 1);
    ck_assert_str_eq(d.msg[0], "unsupported method-ID file version v2 (this reader knows v1)");
    /* strict mode fails on a bad header */
    bl_methodids *t = NULL;
    uint64_t bad = 0;
    const char *v2 = "\n# beatline method-ids v2 names=obfuscated\n1,1,a.B c ()V\n";
    ck_assert_int_eq(bl_methodids_parse(v2, strlen(v2), 1, NULL, NULL, &t, &bad), BL_EFORMAT);
    ck_assert_uint_eq(bad, 2);
}
END_TEST

/* ---- limits ------------------------------------------------------------ */

/* A record whose descriptor has `params` (each `one`) and returns V. */
static void desc_line(bl_buf *b, uint32_t access, const char *one, int params, const char *tail)
{
    bl_buf_reset(b);
    ck_assert_int_eq(bl_buf_puts(b, "1,"), BL_OK);
    ck_assert_int_eq(bl_buf_put_u64(b, access), BL_OK);
    ck_assert_int_eq(bl_buf_puts(b, ",a.B c ("), BL_OK);
    for (int i = 0; i < params; i++)
        ck_assert_int_eq(bl_buf_puts(b, one), BL_OK);
    ck_assert_int_eq(bl_buf_puts(b, tail), BL_OK);
}

static uint64_t malformed_of(const bl_buf *b)
{
    bl_methodids *t = NULL;
    ck_assert_int_eq(bl_methodids_parse(b->data, b->len, 0, NULL, NULL, &t, NULL), BL_OK);
    uint64_t m = bl_methodids_malformed(t);
    ck_assert_uint_eq(bl_methodids_count(t), m ? 0 : 1);
    bl_methodids_free(t);
    return m;
}

START_TEST(limits)
{
    diags d = { 0 };
    bl_methodids *t = parse_ok("8388607,65535,a.B c ()V\n0,0,a.B d ()V\n"
                               "00000000000000000000000000000000000000000000000000042,1,a.B e ()V\n",
                               &d);
    ck_assert_int_eq(d.n, 0);
    check_entry(t, BL_MID_MAX_ID, 65535, "a.B", "c", "()V");
    check_entry(t, 0, 0, "a.B", "d", "()V");
    check_entry(t, 42, 1, "a.B", "e", "()V");
    bl_methodids_free(t);

    bl_buf b;
    bl_buf_init(&b, 0);
    /* parameter slots: 255 at most, `this` included unless ACC_STATIC */
    desc_line(&b, 1, "I", 254, ")V");
    ck_assert_uint_eq(malformed_of(&b), 0);
    desc_line(&b, 1, "I", 255, ")V");
    ck_assert_uint_eq(malformed_of(&b), 1);
    desc_line(&b, 9, "I", 255, ")V");
    ck_assert_uint_eq(malformed_of(&b), 0);
    desc_line(&b, 9, "I", 256, ")V");
    ck_assert_uint_eq(malformed_of(&b), 1);
    desc_line(&b, 8, "J", 127, "I)V"); /* 254 + 1 */
    ck_assert_uint_eq(malformed_of(&b), 0);
    desc_line(&b, 8, "D", 128, ")V");
    ck_assert_uint_eq(malformed_of(&b), 1);
    desc_line(&b, 8, "[J", 255, ")V"); /* arrays of long take one slot */
    ck_assert_uint_eq(malformed_of(&b), 0);
    desc_line(&b, 8, "Ljava/lang/String;", 255, ")Ljava/lang/String;");
    ck_assert_uint_eq(malformed_of(&b), 0);
    /* array dimensions: 255 at most, in parameters and in the return type */
    desc_line(&b, 8, "[", 255, "I)V");
    ck_assert_uint_eq(malformed_of(&b), 0);
    desc_line(&b, 8, "[", 256, "I)V");
    ck_assert_uint_eq(malformed_of(&b), 1);
    desc_line(&b, 8, "", 0, ")");
    for (int i = 0; i < 255; i++)
        ck_assert_int_eq(bl_buf_putc(&b, '['), BL_OK);
    ck_assert_int_eq(bl_buf_puts(&b, "La/B;"), BL_OK);
    ck_assert_uint_eq(malformed_of(&b), 0);
    desc_line(&b, 8, "", 0, ")[");
    for (int i = 0; i < 255; i++)
        ck_assert_int_eq(bl_buf_putc(&b, '['), BL_OK);
    ck_assert_int_eq(bl_buf_puts(&b, "La/B;"), BL_OK);
    ck_assert_uint_eq(malformed_of(&b), 1);

    /* line length: 65535 bytes without the terminator; CR LF does not count */
    for (int crlf = 0; crlf < 2; crlf++) {
        for (size_t want = 65534; want <= 65536; want++) {
            bl_buf_reset(&b);
            ck_assert_int_eq(bl_buf_puts(&b, "1,1,a.B c ()L"), BL_OK);
            while (b.len < want - 1)
                ck_assert_int_eq(bl_buf_putc(&b, 'x'), BL_OK);
            ck_assert_int_eq(bl_buf_putc(&b, ';'), BL_OK);
            ck_assert_uint_eq(b.len, want);
            ck_assert_int_eq(bl_buf_puts(&b, crlf ? "\r\n" : "\n"), BL_OK);
            ck_assert_uint_eq(malformed_of(&b), want > 65535);
        }
    }
    /* ... and a long comment is just as malformed */
    bl_buf_reset(&b);
    ck_assert_int_eq(bl_buf_putc(&b, '#'), BL_OK);
    while (b.len < 65536)
        ck_assert_int_eq(bl_buf_putc(&b, ' '), BL_OK);
    d.n = 0;
    bl_methodids_free(parse_ok(b.data, &d));
    ck_assert_int_eq(d.n, 1);
    ck_assert_str_eq(d.msg[0], "line longer than 65535 bytes");
    bl_buf_cleanup(&b);
}
END_TEST

START_TEST(sparse_ids)
{
    /* one id per 4096-id page, all over the range */
    bl_buf b;
    bl_buf_init(&b, 0);
    for (uint32_t id = BL_MID_MAX_ID;; id -= 4096) {
        ck_assert_int_eq(bl_buf_put_u64(&b, id), BL_OK);
        ck_assert_int_eq(bl_buf_puts(&b, ",8,s.P m ()V\n"), BL_OK);
        if (id < 4096)
            break;
    }
    bl_methodids *t = NULL;
    ck_assert_int_eq(bl_methodids_parse(b.data, b.len, 1, NULL, NULL, &t, NULL), BL_OK);
    ck_assert_uint_eq(bl_methodids_count(t), 2048);
    ck_assert_uint_eq(bl_methodids_at(t, 0)->id, 4095);
    ck_assert_uint_eq(bl_methodids_at(t, 2047)->id, BL_MID_MAX_ID);
    ck_assert_ptr_nonnull(bl_methodids_get(t, 4095 + 4096 * 1000));
    ck_assert_ptr_null(bl_methodids_get(t, 4096 * 1000));
    check_order(t);
    bl_methodids_free(t);
    bl_buf_cleanup(&b);
}
END_TEST

/* ---- a big file --------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void big_file(int shuffled)
{
    enum { N = 1000000 };
    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_buf_puts(&b, "# beatline method-ids v1 names=obfuscated\n"), BL_OK);
    for (uint32_t i = 0; i < N; i++) {
        /* 7919 is prime and coprime with 10^6: a permutation of 1..N */
        uint32_t id = shuffled ? (uint32_t)((uint64_t)i * 7919 % N) + 1 : i + 1;
        char line[160];
        int n = snprintf(line, sizeof line,
                         "%u,%u,com.example.generated.pkg%u.Class%u method%u "
                         "(ILjava.lang.String;[J)Lcom.example.Result;\n",
                         (unsigned)id, (unsigned)(id % 4 == 0 ? 9 : 1), (unsigned)(id % 97),
                         (unsigned)(id / 16), (unsigned)id);
        /* Check only on failure: each passing ck_assert costs a syscall */
        if (n <= 0 || (size_t)n >= sizeof line || bl_buf_append(&b, line, (size_t)n) != BL_OK)
            ck_abort_msg("cannot build line %u", (unsigned)i);
    }
    double t0 = now_s();
    bl_methodids *t = NULL;
    ck_assert_int_eq(bl_methodids_parse(b.data, b.len, 1, NULL, NULL, &t, NULL), BL_OK);
    double t1 = now_s();
    uint64_t sum = 0;
    for (uint32_t id = 1; id <= N; id++)
        sum += bl_methodids_get(t, id)->access;
    double t2 = now_s();
    printf("methodid: %d %s lines, %.1f MB: parse %.0f ms (%.0f ns/line), %d lookups %.1f ms\n", N,
           shuffled ? "shuffled" : "sorted", (double)b.len / 1e6, (t1 - t0) * 1e3,
           (t1 - t0) * 1e9 / N, N, (t2 - t1) * 1e3);
    ck_assert_uint_eq(sum, (uint64_t)N / 4 * 9 + (uint64_t)(N - N / 4));
    ck_assert_uint_eq(bl_methodids_count(t), N);
    ck_assert_uint_eq(bl_methodids_id_limit(t), N + 1);
    ck_assert_int_eq(bl_methodids_obfuscated(t), 1);
    check_entry(t, 123457, 1, "com.example.generated.pkg73.Class7716", "method123457",
                "(ILjava/lang/String;[J)Lcom/example/Result;");
    for (uint32_t i = 0; i < N; i++)
        if (bl_methodids_at(t, i)->id != i + 1 || bl_methodids_get(t, i + 1) != bl_methodids_at(t, i))
            ck_abort_msg("position %u", (unsigned)i);
    bl_methodids_free(t);
    bl_buf_cleanup(&b);
}

START_TEST(big_sorted)
{
    big_file(0);
}
END_TEST

START_TEST(big_shuffled)
{
    big_file(1);
}
END_TEST

/* issue 14: the header's build-id= (schema/build-id.md) */
START_TEST(header_build_id)
{
    static const struct {
        const char *text;
        const char *id;  /* expected bl_methodids_build_id, NULL for none */
        int malformed;   /* line of the expected diagnostic, 0 = none */
    } cases[] = {
        { "# beatline method-ids v1 names=original build-id=3f2a9c1b-04de-4c1e-9a2b-0123456789ab\n"
          "1,1,a.B c ()V\n", "3f2a9c1b-04de-4c1e-9a2b-0123456789ab", 0 },
        /* any case in, lowercase out; any position among the words */
        { "# beatline method-ids v1 build-id=3F2A9C1B-04DE-4C1E-9A2B-0123456789AB names=obfuscated\n",
          "3f2a9c1b-04de-4c1e-9a2b-0123456789ab", 0 },
        { "# beatline method-ids v1 names=original\n", NULL, 0 },
        { "# beatline method-ids v1 build-id=3f2a9c1b04de4c1e9a2b0123456789ab\n", NULL, 1 },
        { "# beatline method-ids v1 build-id=3f2a9c1b-04de-4c1e-9a2b-0123456789a\n", NULL, 1 },
        { "# beatline method-ids v1 build-id=3f2a9c1b-04de-4c1e-9a2b-0123456789abc\n", NULL, 1 },
        { "# beatline method-ids v1 build-id=3f2a9c1g-04de-4c1e-9a2b-0123456789ab\n", NULL, 1 },
        { "# beatline method-ids v1 build-id=3f2a9c1b-04de-4c1e-9a2b-0123456789ab "
          "build-id=3f2a9c1b-04de-4c1e-9a2b-0123456789ab\n", NULL, 1 },
        /* a malformed header applies nothing */
        { "# beatline method-ids v1 build-id=3f2a9c1b-04de-4c1e-9a2b-0123456789ab names=x\n", NULL, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        diags d = { 0 };
        bl_methodids *t = parse_ok(cases[i].text, &d);
        const char *id = bl_methodids_build_id(t);
        if (cases[i].id)
            ck_assert_msg(id && !strcmp(id, cases[i].id), "case %zu: id %s", i, id ? id : "NULL");
        else
            ck_assert_msg(id == NULL, "case %zu: id %s", i, id);
        ck_assert_msg(d.n == (cases[i].malformed ? 1 : 0), "case %zu: %d diagnostics", i, d.n);
        bl_methodids_free(t);
    }
    const char *bid = "3f2a9c1b-04de-4c1e-9a2b-0123456789ab";
    char sh[BL_BUILD_SHORT_LEN + 1];
    bl_build_short_id(bid, sh);
    ck_assert_str_eq(sh, "3f2a9c1b04de");
    ck_assert_int_eq(bl_build_name_conflicts("7.1+3f2a9c1b04de", bid), 0);
    ck_assert_int_eq(bl_build_name_conflicts("7.1+3F2A9C1B04DE", bid), 0);
    ck_assert_int_eq(bl_build_name_conflicts("3f2a9c1b04de", bid), 0);     /* no '+': unchecked */
    ck_assert_int_eq(bl_build_name_conflicts("7.1", bid), 0);
    ck_assert_int_eq(bl_build_name_conflicts("7.1+beta", bid), 0);
    ck_assert_int_eq(bl_build_name_conflicts("7.1+3f2a9c1b04dx", bid), 0); /* not hex */
    ck_assert_int_eq(bl_build_name_conflicts("7.1+3f2a9c1b04df", bid), 1);
    ck_assert_int_eq(bl_build_name_conflicts("+000000000000", bid), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("methodid");
    TCase *tf = tcase_create("files");
    tcase_add_test(tf, matrix_file);
    tcase_add_test(tf, matrix_file_crlf);
    tcase_add_test(tf, normalisation);
    tcase_add_test(tf, empty_inputs);
    tcase_add_test(tf, duplicates);
    tcase_add_test(tf, any_order);
    tcase_add_test(tf, header_variants);
    tcase_add_test(tf, header_build_id);
    tcase_add_test(tf, sparse_ids);
    suite_add_tcase(s, tf);
    TCase *tm = tcase_create("malformed");
    tcase_add_test(tm, malformed_lenient);
    tcase_add_test(tm, malformed_strict);
    tcase_add_test(tm, messages);
    tcase_add_test(tm, limits);
    suite_add_tcase(s, tm);
    TCase *tb = tcase_create("big");
    tcase_set_timeout(tb, 120);
    tcase_add_test(tb, big_sorted);
    tcase_add_test(tb, big_shuffled);
    suite_add_tcase(s, tb);
    return tu_run(s);
}
