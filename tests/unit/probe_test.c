/*
 * probe_test.c — probe insertion on real jars and crafted classes.
 *
 * Real jars: every method of every class gets an id; the output re-parses,
 * every method with code grew by its probes, its exception table ends with
 * the catch-all entry [L, H) -> H (catch_type 0) with the handler
 * push/invokestatic/athrow at the end of the code, the pool holds no
 * duplicates the input did not have, the run is deterministic, and a run
 * without ids is byte-identical. JVM acceptance of the same output is
 * checked by tests/instrumenter/verify_jars.sh.
 *
 * Crafted (cfbuild.h): jsr/ret with `wide`, tableswitch/lookupswitch
 * padding at every alignment, branches pushed past 32 KiB (goto_w and an
 * inverted conditional), class versions 45..65, corrupt code, pool overflow.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "bytecode.h"
#include "cfbuild.h"
#include "classfile.h"
#include "jarutil.h"
#include "probe.h"
#include "testutil.h"

#define RT "io/beatline/runtime/Beatline"

static const char *const JARS[] = {
    "/usr/share/java/guava.jar", "/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar",
    "/usr/share/java/commons-lang3.jar", "/usr/share/java/asm.jar",
};

static size_t n_warn;
static char last_warn[512];
/* bl_probe_opts.unguarded of every run here: the shapes checked by the
 * older tests are the bare probes'; the guarded_* tests clear it */
static int unguarded = 1;
static void warn_fn(void *ctx, const char *msg)
{
    (void)ctx;
    n_warn++;
    snprintf(last_warn, sizeof last_warn, "%s", msg);
}

/* Number of constant-pool entries (Utf8, Integer, Class, NameAndType,
 * Methodref) equal to an earlier one. */
static size_t pool_dups(const bl_cf *cf)
{
    size_t len;
    const uint8_t *d = bl_cf_bytes(cf, &len);
    uint32_t n = bl_cf_pool_count(cf);
    size_t dups = 0;
    /* simple open-addressing set of offsets, keyed by FNV of the entry bytes */
    uint32_t cap = 1;
    while (cap < 4 * n)
        cap <<= 1;
    uint32_t *set = calloc(cap, sizeof *set);
    ck_assert_ptr_nonnull(set);
    for (uint32_t i = 1; i < n; i++) {
        uint8_t t = bl_cf_pool_tag(cf, i);
        if (t != 1 && t != 3 && t != 7 && t != 10 && t != 12)
            continue;
        const uint8_t *p = d + bl_cf_pool_off(cf, i);
        uint32_t sz = t == 1 ? 3u + bl_be16(p + 1) : t == 7 ? 3 : 5;
        uint32_t h = 2166136261u;
        for (uint32_t k = 0; k < sz; k++)
            h = (h ^ p[k]) * 16777619u;
        for (uint32_t s = h & (cap - 1);; s = (s + 1) & (cap - 1)) {
            if (!set[s]) {
                set[s] = i;
                break;
            }
            const uint8_t *q = d + bl_cf_pool_off(cf, set[s]);
            if (q[0] == p[0] && memcmp(p, q, sz) == 0) {
                dups++;
                break;
            }
        }
    }
    free(set);
    return dups;
}

typedef struct jstat {
    size_t classes, methods, done;
} jstat;

/* Checks one instrumented method against its original. */
static void check_method(const bl_cf *in, size_t i, const bl_cf *out, uint32_t id)
{
    const bl_cf_method *a = bl_cf_method_at(in, i), *b = bl_cf_method_at(out, i);
    ck_assert_str_eq(a->name, b->name);
    ck_assert_str_eq(a->desc, b->desc);
    const bl_cf_mraw *ra = bl_cf_method_raw(in, i), *rb = bl_cf_method_raw(out, i);
    size_t l;
    const uint8_t *d = bl_cf_bytes(out, &l);
    if (!a->code_length) {
        ck_assert_uint_eq(b->code_length, 0);
        return;
    }
    uint32_t push = id <= 5 ? 1 : id <= 127 ? 2 : 3;
    uint32_t plen = push + 3; /* ldc may be 2 bytes: then plen is an upper bound */
    const uint8_t *ca = bl_cf_bytes(in, &l) + ra->code, *cc = d + rb->code;
    uint32_t rets = 0, switches = 0;
    for (uint32_t off = 0; off < ra->code_len; off += bl_bc_insn_len(ca, ra->code_len, off)) {
        rets += ca[off] >= BL_OP_IRETURN && ca[off] <= BL_OP_RETURN;
        switches += ca[off] == BL_OP_TABLESWITCH || ca[off] == BL_OP_LOOKUPSWITCH;
    }
    /* enter + one per return + handler; switch padding may shrink by 3 */
    int64_t min_growth = (int64_t)(plen - (id > 32767 ? 1 : 0)) * (2 + rets) + 1 - 3 * switches;
    ck_assert_msg((int64_t)rb->code_len >= (int64_t)ra->code_len + min_growth, "%s%s: %u -> %u", a->name,
                  a->desc, ra->code_len, rb->code_len);
    /* the handler: ..., invokestatic o, athrow at the very end */
    ck_assert_uint_eq(cc[rb->code_len - 1], BL_OP_ATHROW);
    ck_assert_uint_eq(cc[rb->code_len - 4], BL_OP_INVOKESTATIC);
    uint32_t hstart = rb->code_len - 4 - push;
    if (id > 32767 && cc[rb->code_len - 6] == BL_OP_LDC)
        hstart = rb->code_len - 6;
    ck_assert(cc[hstart] == (id <= 5 ? BL_OP_ICONST_0 + id : id <= 127 ? BL_OP_BIPUSH
                             : id <= 32767 ? BL_OP_SIPUSH : cc[hstart]));
    ck_assert_uint_eq(rb->exc_count, ra->exc_count + 1);
    const uint8_t *last = d + rb->exc + 8u * ra->exc_count;
    ck_assert_uint_lt(bl_be16(last), hstart);         /* start_pc */
    ck_assert_uint_eq(bl_be16(last + 2), hstart);     /* end_pc */
    ck_assert_uint_eq(bl_be16(last + 4), hstart);     /* handler_pc */
    ck_assert_uint_eq(bl_be16(last + 6), 0);          /* any */
    for (uint32_t k = 0; k < ra->exc_count; k++)      /* nobody else covers the handler */
        ck_assert_uint_le(bl_be16(d + rb->exc + 8 * k + 2), hstart);
    ck_assert_uint_ge(rb->max_stack, ra->max_stack + 1u);
    ck_assert_uint_eq(rb->max_locals, ra->max_locals);
    /* the new code decodes */
    for (uint32_t off = 0; off < rb->code_len;) {
        uint32_t n = bl_bc_insn_len(cc, rb->code_len, off);
        ck_assert_uint_ne(n, 0);
        off += n;
    }
}

static int instrument_one(void *ctx, const char *name, const uint8_t *data, size_t len)
{
    jstat *js = ctx;
    bl_cf *cf = NULL, *cf2 = NULL;
    char err[512];
    ck_assert_msg(bl_cf_parse(data, len, &cf, err, sizeof err) == BL_OK, "%s: %s", name, err);
    size_t n = bl_cf_method_count(cf);
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    ck_assert_ptr_nonnull(ids);
    bl_probe_opts o = {RT, warn_fn, NULL, unguarded};
    bl_buf out, again;
    bl_buf_init(&out, 0);
    bl_buf_init(&again, 0);
    /* no ids: byte-identical */
    for (size_t i = 0; i < n; i++)
        ids[i] = BL_PROBE_NO_ID;
    size_t done = 99;
    ck_assert_int_eq(bl_probe_instrument(cf, ids, &o, &out, &done, err, sizeof err), BL_OK);
    ck_assert_uint_eq(done, 0);
    ck_assert(out.len == len && memcmp(out.data, data, len) == 0);
    bl_buf_reset(&out);
    /* ids of every size: small, bipush, sipush, ldc */
    static const uint32_t base[] = {0, 100, 30000, 8000000};
    uint32_t b0 = base[js->classes % 4];
    for (size_t i = 0; i < n; i++)
        ids[i] = b0 + (uint32_t)i;
    size_t warn_before = n_warn;
    ck_assert_msg(bl_probe_instrument(cf, ids, &o, &out, &done, err, sizeof err) == BL_OK,
                  "%s: %s", name, err);
    ck_assert_msg(bl_probe_instrument(cf, ids, &o, &again, NULL, err, sizeof err) == BL_OK,
                  "%s: %s", name, err);
    ck_assert(out.len == again.len && memcmp(out.data, again.data, out.len) == 0);
    ck_assert_msg(bl_cf_parse((uint8_t *)out.data, out.len, &cf2, err, sizeof err) == BL_OK,
                  "%s: output does not parse: %s", name, err);
    ck_assert_uint_eq(bl_cf_method_count(cf2), n);
    ck_assert_uint_eq(pool_dups(cf2), pool_dups(cf));
    size_t with_code = 0;
    for (size_t i = 0; i < n; i++) {
        const bl_cf_method *m = bl_cf_method_at(cf, i);
        with_code += m->code_length != 0;
        if (m->code_length && bl_cf_method_at(cf2, i)->code_length != m->code_length)
            check_method(cf, i, cf2, ids[i]);
        else if (m->code_length)
            ck_assert_msg(n_warn > warn_before, "%s.%s untouched without a warning", name,
                          m->name);
    }
    ck_assert_uint_eq(done + (n_warn - warn_before), with_code);
    js->classes++;
    js->methods += with_code;
    js->done += done;
    free(ids);
    bl_buf_cleanup(&out);
    bl_buf_cleanup(&again);
    bl_cf_free(cf);
    bl_cf_free(cf2);
    return 0;
}

START_TEST(real_jars)
{
    for (size_t j = 0; j < sizeof JARS / sizeof *JARS; j++) {
        jstat js = {0};
        n_warn = 0;
        ck_assert_int_eq(ju_each_class(JARS[j], instrument_one, &js), 0);
        printf("%s: %zu classes, %zu methods with code, %zu instrumented, %zu warnings%s%s\n",
               JARS[j], js.classes, js.methods, js.done, n_warn, n_warn ? ", last: " : "",
               n_warn ? last_warn : "");
        ck_assert_uint_gt(js.done, js.methods * 99 / 100);
    }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Crafted classes, run on the JVM                                           */

static char tmpdir[256];

/* Compiles the stub runtime once into tmpdir/stub; 0 when javac is missing. */
static int have_jvm(void)
{
    static int state = -1;
    if (state >= 0)
        return state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bl_probe_test.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "javac -d %s/stub %s/tests/instrumenter/java/io/beatline/runtime/Beatline.java "
             ">/dev/null 2>&1",
             tmpdir, BL_SOURCE_DIR);
    state = system(cmd) == 0;
    if (!state)
        fprintf(stderr, "javac not usable: crafted classes are not run on the JVM\n");
    return state;
}

static void write_class(const char *dir, const char *name, const void *p, size_t n)
{
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/%s.class", dir, name);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname %s)\"", path);
    ck_assert_int_eq(system(cmd), 0);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Runs `java -Xverify:all -Dbeatline.print=true -cp dir:stub cls`; returns
 * the output (heap) and the exit status. */
static char *run_java(const char *dir, const char *cls, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "java -Xverify:all -Xshare:off -Dbeatline.print=true -cp %s:%s/stub %s 2>&1", dir,
             tmpdir, cls);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    bl_buf b;
    bl_buf_init(&b, 0);
    char tmp[4096];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, p)) > 0)
        ck_assert_int_eq(bl_buf_append(&b, tmp, r), BL_OK);
    *status = pclose(p);
    ck_assert_int_eq(bl_buf_putc(&b, 0), BL_OK);
    return b.data;
}

/* Output without probe lines; checks the probe lines nest (i/o balanced,
 * same id) and returns how many there were. */
static size_t strip_probes(const char *in, char *out)
{
    long stack[4096];
    size_t depth = 0, probes = 0;
    while (*in) {
        const char *nl = strchr(in, '\n');
        size_t n = nl ? (size_t)(nl - in) + 1 : strlen(in);
        if ((in[0] == 'i' || in[0] == 'o') && in[1] == ' ') {
            long id = strtol(in + 2, NULL, 10);
            probes++;
            if (in[0] == 'i') {
                ck_assert_uint_lt(depth, 4096);
                stack[depth++] = id;
            } else {
                ck_assert_msg(depth > 0 && stack[depth - 1] == id, "unbalanced exit %ld", id);
                depth--;
            }
        } else {
            memcpy(out, in, n);
            out += n;
        }
        in += n;
    }
    *out = '\0';
    ck_assert_uint_eq(depth, 0);
    return probes;
}

/* Instruments every method of the class in b (ids 1, 2, ...), checks the
 * result parses; when java works and `main_cls` is set, runs original and
 * instrumented and compares. Returns the instrumented bytes (heap, *n). */
static uint8_t *instrument_and_run(const uint8_t *data, size_t len, const char *main_cls,
                                   size_t expect_done, size_t *n)
{
    bl_cf *cf = NULL, *cf2 = NULL;
    char err[512];
    ck_assert_msg(bl_cf_parse(data, len, &cf, err, sizeof err) == BL_OK, "%s", err);
    size_t nm = bl_cf_method_count(cf);
    uint32_t ids[64];
    ck_assert_uint_le(nm, 64);
    for (size_t i = 0; i < nm; i++)
        ids[i] = (uint32_t)i + 1;
    bl_probe_opts o = {RT, warn_fn, NULL, unguarded};
    bl_buf out;
    bl_buf_init(&out, 0);
    size_t done = 0;
    ck_assert_msg(bl_probe_instrument(cf, ids, &o, &out, &done, err, sizeof err) == BL_OK, "%s",
                  err);
    ck_assert_uint_eq(done, expect_done);
    ck_assert_msg(bl_cf_parse((uint8_t *)out.data, out.len, &cf2, err, sizeof err) == BL_OK,
                  "%s", err);
    bl_cf_free(cf2);
    const char *cname = bl_cf_name(cf);
    if (main_cls && have_jvm()) {
        char d0[300], d1[300];
        snprintf(d0, sizeof d0, "%s/orig", tmpdir);
        snprintf(d1, sizeof d1, "%s/inst", tmpdir);
        write_class(d0, cname, data, len);
        write_class(d1, cname, out.data, out.len);
        int s0, s1;
        char *o0 = run_java(d0, main_cls, &s0), *o1 = run_java(d1, main_cls, &s1);
        char *st = malloc(strlen(o1) + 1);
        ck_assert_ptr_nonnull(st);
        size_t probes = strip_probes(o1, st);
        ck_assert_msg(s0 == 0, "original failed: %s", o0);
        ck_assert_msg(s1 == 0, "instrumented failed: %s", o1);
        ck_assert_msg(strcmp(o0, st) == 0, "outputs differ:\n%s\n---\n%s", o0, st);
        ck_assert_uint_gt(probes, 0);
        free(o0);
        free(o1);
        free(st);
    }
    bl_cf_free(cf);
    *n = out.len;
    return (uint8_t *)out.data;
}

/* main(String[]) printing f(arg) for each (name, arg). */
static void add_main(cb *b, uint16_t this_c, const char *const *fn, const int *args, size_t k)
{
    uint16_t sys = cb_class(b, "java/lang/System"), ps = cb_class(b, "java/io/PrintStream");
    uint16_t out = cb_member(b, 9, sys, "out", "Ljava/io/PrintStream;");
    uint16_t pr = cb_member(b, 10, ps, "println", "(I)V");
    uint8_t code[1024];
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        uint16_t f = cb_member(b, 10, this_c, fn[i], "(I)I");
        code[n++] = 0xb2, code[n++] = (uint8_t)(out >> 8), code[n++] = (uint8_t)out;
        code[n++] = 0x11, code[n++] = (uint8_t)(args[i] >> 8), code[n++] = (uint8_t)args[i];
        code[n++] = 0xb8, code[n++] = (uint8_t)(f >> 8), code[n++] = (uint8_t)f;
        code[n++] = 0xb6, code[n++] = (uint8_t)(pr >> 8), code[n++] = (uint8_t)pr;
    }
    code[n++] = 0xb1;
    cb_method(b, 9, "main", "([Ljava/lang/String;)V", 3, 1, code, (uint32_t)n, NULL, 0, NULL, 0,
              0);
}

static void s32(uint8_t *p, int32_t v)
{
    p[0] = (uint8_t)((uint32_t)v >> 24), p[1] = (uint8_t)((uint32_t)v >> 16);
    p[2] = (uint8_t)((uint32_t)v >> 8), p[3] = (uint8_t)v;
}

START_TEST(crafted_v49_switch_jsr_wide)
{
    cb b;
    cb_init(&b, 49);
    uint16_t tc = cb_class(&b, "t/Crafted"), sc = cb_class(&b, "java/lang/Object");
    const char *fns[24];
    int args[24];
    size_t k = 0;
    char names[8][8];
    for (unsigned pad = 0; pad < 4; pad++) {
        /* [nop*pad] iload_0 tableswitch 1..3 / lookupswitch {-5,100,1000} */
        for (int look = 0; look < 2; look++) {
            uint8_t c[128];
            uint32_t n = 0;
            for (unsigned q = 0; q < pad; q++)
                c[n++] = 0;
            c[n++] = 0x1a;
            uint32_t sw = n;
            c[n++] = look ? 0xab : 0xaa;
            while (n % 4)
                c[n++] = 0;
            uint32_t tab = n;
            n += look ? 8 + 3 * 8 : 12 + 3 * 4;
            uint32_t t[4]; /* default, 1st, 2nd, 3rd */
            t[0] = n, c[n++] = 0x02, c[n++] = 0xac;                   /* iconst_m1 */
            t[1] = n, c[n++] = 0x10, c[n++] = 10, c[n++] = 0xac;      /* bipush 10 */
            t[2] = n, c[n++] = 0x10, c[n++] = 20, c[n++] = 0xac;
            t[3] = n, c[n++] = 0x10, c[n++] = 30, c[n++] = 0xac;
            s32(c + tab, (int32_t)(t[0] - sw));
            if (!look) {
                s32(c + tab + 4, 1), s32(c + tab + 8, 3);
                for (int j = 0; j < 3; j++)
                    s32(c + tab + 12 + 4 * j, (int32_t)(t[j + 1] - sw));
            } else {
                static const int keys[3] = {-5, 100, 1000};
                s32(c + tab + 4, 3);
                for (int j = 0; j < 3; j++) {
                    s32(c + tab + 8 + 8 * j, keys[j]);
                    s32(c + tab + 12 + 8 * j, (int32_t)(t[j + 1] - sw));
                }
            }
            snprintf(names[k / 2 % 8], 8, "%s%u", look ? "lk" : "ts", pad);
            char *nm = strdup(names[k / 2 % 8]);
            cb_method(&b, 9, nm, "(I)I", 1, 1, c, n, NULL, 0, NULL, 0, 0);
            fns[k] = nm, args[k++] = look ? 100 : 2;
            fns[k] = nm, args[k++] = look ? 7 : 9; /* default */
        }
    }
    /* jsr/ret through wide locals: returns x + 1000 */
    static const uint8_t sub[] = {0x1a, 0xc4, 0x36, 0x01, 0x2c, 0xa8, 0x00, 0x08, 0xc4,
                                  0x15, 0x01, 0x2c, 0xac, 0xc4, 0x3a, 0x01, 0x2d, 0xc4,
                                  0x84, 0x01, 0x2c, 0x03, 0xe8, 0xc4, 0xa9, 0x01, 0x2d};
    cb_method(&b, 9, "sub", "(I)I", 1, 302, sub, sizeof sub, NULL, 0, NULL, 0, 0);
    fns[k] = "sub", args[k++] = 5;
    add_main(&b, tc, fns, args, k);
    cb_finish(&b, tc, sc);
    size_t n;
    n_warn = 0;
    uint8_t *o = instrument_and_run((uint8_t *)b.out.data, b.out.len, "t.Crafted", 10, &n);
    ck_assert_uint_eq(n_warn, 0);
    free(o);
    for (size_t i = 0; i + 2 < k; i += 2)
        free((char *)fns[i]);
    cb_free(&b);
}
END_TEST

/* Counts opcode op at instruction starts of method `name` in class bytes. */
static size_t count_op(const uint8_t *d, size_t len, const char *name, unsigned op,
                       unsigned inv_op, size_t *inverted)
{
    bl_cf *cf = NULL;
    ck_assert_int_eq(bl_cf_parse(d, len, &cf, NULL, 0), BL_OK);
    size_t hits = 0;
    *inverted = 0;
    for (size_t i = 0; i < bl_cf_method_count(cf); i++) {
        if (strcmp(bl_cf_method_at(cf, i)->name, name) != 0)
            continue;
        const bl_cf_mraw *r = bl_cf_method_raw(cf, i);
        const uint8_t *c = d + r->code;
        for (uint32_t off = 0; off < r->code_len; off += bl_bc_insn_len(c, r->code_len, off)) {
            hits += c[off] == op;
            /* if<!c> +8 followed by goto_w */
            if ((c[off] == inv_op || (!inv_op && bl_bc_is_cond_branch(c[off]))) &&
                bl_be16(c + off + 1) == 8 &&
                c[off + 3] == BL_OP_GOTO_W)
                (*inverted)++;
        }
    }
    bl_cf_free(cf);
    return hits;
}

/* A method whose forward conditional and backward goto span ~32,000 bytes
 * that hold 600 returns: after instrumentation both need 32-bit offsets. */
START_TEST(crafted_v49_long_branches)
{
    cb b;
    cb_init(&b, 49);
    uint16_t tc = cb_class(&b, "t/Long"), sc = cb_class(&b, "java/lang/Object");
    static uint8_t c[40000];
    uint32_t n = 0;
    c[n++] = 0x03, c[n++] = 0x3c;                  /* iconst_0 istore_1 */
    uint32_t loop = n;
    c[n++] = 0x1a;                                 /* iload_0 */
    uint32_t br = n;
    c[n++] = 0x99, n += 2;                         /* ifeq FAR */
    for (int k = 0; k < 600; k++) {                /* iload_0 ifge +5 iconst_0 ireturn */
        c[n++] = 0x1a, c[n++] = 0x9c, c[n++] = 0, c[n++] = 5, c[n++] = 0x03, c[n++] = 0xac;
    }
    while (n < 32000)
        c[n++] = 0;                                /* nop */
    c[n++] = 0x84, c[n++] = 1, c[n++] = 1;         /* iinc 1 1 */
    c[n++] = 0x1b, c[n++] = 0x05;                  /* iload_1 iconst_2 */
    c[n++] = 0xa2, c[n++] = 0, c[n++] = 6;         /* if_icmpge OUT */
    uint32_t back = n;
    c[n++] = 0xa7;                                 /* goto LOOP */
    c[n] = (uint8_t)((uint16_t)(int16_t)(loop - back) >> 8);
    c[n + 1] = (uint8_t)(int16_t)(loop - back);
    n += 2;
    c[n++] = 0x1b, c[n++] = 0xac;                  /* OUT: iload_1 ireturn */
    uint32_t far = n;
    c[n++] = 0x10, c[n++] = 42, c[n++] = 0xac;     /* FAR: bipush 42 ireturn */
    c[br + 1] = (uint8_t)((far - br) >> 8), c[br + 2] = (uint8_t)(far - br);
    cb_method(&b, 9, "far", "(I)I", 2, 2, c, n, NULL, 0, NULL, 0, 0);
    static const char *const fns[3] = {"far", "far", "far"};
    static const int args[3] = {0, -1, 7};
    add_main(&b, tc, fns, args, 3);
    cb_finish(&b, tc, sc);
    n_warn = 0;
    size_t len, inv;
    uint8_t *o = instrument_and_run((uint8_t *)b.out.data, b.out.len, "t.Long", 2, &len);
    ck_assert_uint_eq(n_warn, 0);
    ck_assert_uint_eq(count_op(o, len, "far", BL_OP_GOTO_W, 154, &inv), 2); /* goto + inverted */
    ck_assert_uint_eq(inv, 1);
    free(o);
    cb_free(&b);
}
END_TEST

/* The same with javac output (StackMapTable): --release 8 (major 52) and
 * the default (61). The conditional's fall-through needs a simulated frame
 * that knows the String local and the loop counter. */
static void javac_long(const char *release)
{
    if (!have_jvm())
        return;
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/src%s", tmpdir, release);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/src%s/Big.java", tmpdir, release);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "public class Big {\n  static int big(int x, long w) {\n    int r = 0;\n"
               "    for (int j = 0; j < 2; j++) {\n      if (x > 0) {\n"
               "        String s = \"a\" + x;\n        r += s.length();\n");
    for (int k = 1; k <= 1250; k++)
        fprintf(f, "        if (x == %d) return %d + s.length(); r += x * %d;\n", k + 1000,
                k, k);
    fprintf(f, "        r += s.length() + (int) w;\n      }\n      r++;\n    }\n    return r;\n  }\n"
               "  public static void main(String[] a) {\n"
               "    System.out.println(big(1, 7L));\n    System.out.println(big(-1, 7L));\n"
               "    System.out.println(big(1005, 7L));\n"
               "    try { Object o = null; o.hashCode(); } catch (RuntimeException e) {\n"
               "      System.out.println(\"caught\"); }\n"
               "    try { thrower(3); } catch (IllegalStateException e) {\n"
               "      System.out.println(\"unwound \" + e.getMessage()); }\n  }\n"
               "  static void thrower(int d) {\n"
               "    if (d == 0) throw new IllegalStateException(\"deep\");\n"
               "    synchronized (Big.class) { thrower(d - 1); }\n  }\n}\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "javac %s%s -d %s/cls%s %s 2>&1", release[0] ? "--release " : "",
             release, tmpdir, release, path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/cls%s/Big.class", tmpdir, release);
    size_t len, olen, inv;
    char *data = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(count_op((uint8_t *)data, len, "big", BL_OP_GOTO_W, 0, &inv), 0);
    n_warn = 0;
    uint8_t *o = instrument_and_run((uint8_t *)data, len, "Big", 4, &olen);
    ck_assert_msg(n_warn == 0, "%s", last_warn);
    ck_assert_uint_ge(count_op(o, olen, "big", BL_OP_GOTO_W, 0, &inv), 2);
    ck_assert_uint_ge(inv, 1);
    free(o);
    free(data);
}

START_TEST(javac_long_release8) { javac_long("8"); }
END_TEST

START_TEST(javac_long_default) { javac_long(""); }
END_TEST

/* 1 when method `name` of the class has a Code attribute named attr. */
static int has_code_attr(const uint8_t *d, size_t len, const char *name, const char *attr)
{
    bl_cf *cf = NULL;
    ck_assert_int_eq(bl_cf_parse(d, len, &cf, NULL, 0), BL_OK);
    int found = 0;
    for (size_t i = 0; i < bl_cf_method_count(cf); i++) {
        if (strcmp(bl_cf_method_at(cf, i)->name, name) != 0)
            continue;
        const bl_cf_mraw *r = bl_cf_method_raw(cf, i);
        for (uint32_t k = 0, at = r->attrs; k < r->attr_count; k++) {
            const char *an = bl_cf_utf8(cf, bl_be16(d + at), NULL);
            found |= strcmp(an, attr) == 0;
            at += 6 + bl_be32(d + at + 2);
        }
    }
    bl_cf_free(cf);
    return found;
}

static void add_init(cb *b, uint16_t super_c)
{
    uint16_t init = cb_member(b, 10, super_c, "<init>", "()V");
    const uint8_t ctor[] = {0x2a, 0xb7, (uint8_t)(init >> 8), (uint8_t)init, 0xb1};
    cb_method(b, 1, "<init>", "()V", 1, 1, ctor, sizeof ctor, NULL, 0, NULL, 0, 0);
}

/* Straight-line methods (valid without frames) in every version; from 50 on
 * the handler brings the first StackMapTable. JDK 17 runs up to 61. */
START_TEST(class_versions)
{
    static const uint16_t versions[] = {45, 46, 49, 50, 52, 55, 61, 65};
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
        cb b;
        cb_init(&b, versions[v]);
        uint16_t tc = cb_class(&b, "t/V"), sc = cb_class(&b, "java/lang/Object");
        add_init(&b, sc);
        static const uint8_t f[] = {0x1a, 0x04, 0x60, 0xac}; /* iload_0 iconst_1 iadd ireturn */
        cb_method(&b, 9, "f", "(I)I", 2, 1, f, sizeof f, NULL, 0, NULL, 0, 0);
        static const char *const fns[1] = {"f"};
        static const int args[1] = {41};
        add_main(&b, tc, fns, args, 1);
        cb_finish(&b, tc, sc);
        n_warn = 0;
        size_t len;
        uint8_t *o = instrument_and_run((uint8_t *)b.out.data, b.out.len,
                                        versions[v] <= 61 ? "t.V" : NULL, 3, &len);
        ck_assert_uint_eq(n_warn, 0);
        ck_assert_int_eq(has_code_attr(o, len, "f", "StackMapTable"), versions[v] >= 50);
        free(o);
        cb_free(&b);
    }
}
END_TEST

static bl_err instrument_all(const cb *b, uint32_t id, size_t *done, char *err, size_t errlen)
{
    bl_cf *cf = NULL;
    bl_err e = bl_cf_parse((uint8_t *)b->out.data, b->out.len, &cf, err, errlen);
    ck_assert_msg(e == BL_OK, "%s", err);
    uint32_t ids[16];
    for (size_t i = 0; i < 16; i++)
        ids[i] = id;
    bl_probe_opts o = {RT, warn_fn, NULL, unguarded};
    bl_buf out;
    bl_buf_init(&out, 0);
    e = bl_probe_instrument(cf, ids, &o, &out, done, err, errlen);
    if (e == BL_OK) {
        bl_cf *cf2 = NULL;
        ck_assert_int_eq(bl_cf_parse((uint8_t *)out.data, out.len, &cf2, NULL, 0), BL_OK);
        bl_cf_free(cf2);
    }
    bl_buf_cleanup(&out);
    bl_cf_free(cf);
    return e;
}

START_TEST(pool_overflow)
{
    /* v49 needs 11 new entries (Utf8 x6, Class x2, NameAndType x2 ... see probe.c) */
    for (int room = 0; room < 2; room++) {
        cb b;
        cb_init(&b, 49);
        uint16_t tc = cb_class(&b, "t/P"), sc = cb_class(&b, "java/lang/Object");
        add_init(&b, sc);
        uint32_t target = room ? 65535 - 11 - 4 : 65535 - 5; /* 4 more for <init>/Code */
        char nm[16];
        for (uint32_t k = 0; b.count < target; k++) {
            snprintf(nm, sizeof nm, "p%u", (unsigned)k);
            cb_utf8(&b, nm);
        }
        cb_finish(&b, tc, sc);
        char err[256];
        size_t done = 0;
        bl_err e = instrument_all(&b, 7, &done, err, sizeof err);
        if (room) {
            ck_assert_msg(e == BL_OK, "%s", err);
            ck_assert_uint_eq(done, 1);
        } else {
            ck_assert_int_eq(e, BL_ETOOBIG);
            ck_assert(strstr(err, "65535") != NULL);
        }
        cb_free(&b);
    }
}
END_TEST

START_TEST(corrupt_code)
{
    char err[256];
    size_t done;
    /* branch into the middle of an instruction */
    {
        cb b;
        cb_init(&b, 49);
        uint16_t tc = cb_class(&b, "t/C"), sc = cb_class(&b, "java/lang/Object");
        static const uint8_t c[] = {0x10, 0x05, 0xa7, 0xff, 0xff, 0xb1}; /* goto -1 */
        cb_method(&b, 9, "m", "()V", 1, 0, c, sizeof c, NULL, 0, NULL, 0, 0);
        cb_finish(&b, tc, sc);
        ck_assert_int_eq(instrument_all(&b, 1, &done, err, sizeof err), BL_EFORMAT);
        ck_assert_msg(strstr(err, "t/C.m()V") && strstr(err, "code offset 2"), "%s", err);
        cb_free(&b);
    }
    /* exception range not on an instruction; LineNumberTable pc off the end */
    for (int k = 0; k < 2; k++) {
        cb b;
        cb_init(&b, 49);
        uint16_t tc = cb_class(&b, "t/C"), sc = cb_class(&b, "java/lang/Object");
        static const uint8_t c[] = {0x10, 0x05, 0x57, 0xb1};
        const uint16_t exc[4] = {1, 3, 3, 0};
        uint16_t lnt = cb_utf8(&b, "LineNumberTable");
        uint8_t attr[] = {(uint8_t)(lnt >> 8), (uint8_t)lnt, 0, 0, 0, 6, 0, 1, 0, 9, 0, 1};
        cb_method(&b, 9, "m", "()V", 1, 0, c, sizeof c, k ? NULL : exc, k ? 0 : 1,
                  k ? attr : NULL, k ? sizeof attr : 0, k ? 1 : 0);
        cb_finish(&b, tc, sc);
        n_warn = 0;
        if (k) { /* the JVM ignores a bad LineNumberTable: the method stays as it is */
            ck_assert_int_eq(instrument_all(&b, 1, &done, err, sizeof err), BL_OK);
            ck_assert_uint_eq(done, 0);
            ck_assert_uint_eq(n_warn, 1);
            ck_assert_msg(strstr(last_warn, "LineNumberTable"), "%s", last_warn);
        } else {
            ck_assert_int_eq(instrument_all(&b, 1, &done, err, sizeof err), BL_EFORMAT);
            ck_assert_msg(strstr(err, "exception table"), "%s", err);
        }
        cb_free(&b);
    }
    /* an unknown Code attribute: left untouched with a warning */
    {
        cb b;
        cb_init(&b, 49);
        uint16_t tc = cb_class(&b, "t/C"), sc = cb_class(&b, "java/lang/Object");
        static const uint8_t c[] = {0xb1};
        uint16_t sm = cb_utf8(&b, "StackMap");
        uint8_t attr[] = {(uint8_t)(sm >> 8), (uint8_t)sm, 0, 0, 0, 2, 0, 0};
        cb_method(&b, 9, "m", "()V", 0, 0, c, sizeof c, NULL, 0, attr, sizeof attr, 1);
        cb_method(&b, 9, "n", "()V", 0, 0, c, sizeof c, NULL, 0, NULL, 0, 0);
        cb_finish(&b, tc, sc);
        n_warn = 0;
        ck_assert_int_eq(instrument_all(&b, 1, &done, err, sizeof err), BL_OK);
        ck_assert_uint_eq(done, 1);
        ck_assert_uint_eq(n_warn, 1);
        ck_assert(strstr(last_warn, "t/C.m()V") && strstr(last_warn, "StackMap"));
        cb_free(&b);
    }
    /* an id above the 23-bit limit */
    {
        cb b;
        cb_init(&b, 49);
        uint16_t tc = cb_class(&b, "t/C"), sc = cb_class(&b, "java/lang/Object");
        add_init(&b, sc);
        cb_finish(&b, tc, sc);
        ck_assert_int_eq(instrument_all(&b, BL_PROBE_MAX_ID + 1, &done, err, sizeof err),
                         BL_EINVAL);
        cb_free(&b);
    }
}
END_TEST

/* super(new B()) : the enter probe goes after the second invokespecial; a
 * constructor with no super call is left alone with a warning. */
START_TEST(constructors)
{
    cb b;
    cb_init(&b, 49);
    uint16_t tc = cb_class(&b, "t/C"), sc = cb_class(&b, "t/B");
    uint16_t i0 = cb_member(&b, 10, sc, "<init>", "()V");
    uint16_t i1 = cb_member(&b, 10, sc, "<init>", "(Lt/B;)V");
    const uint8_t c[] = {0x2a, 0xbb, (uint8_t)(sc >> 8), (uint8_t)sc, 0x59, 0xb7,
                         (uint8_t)(i0 >> 8), (uint8_t)i0, 0xb7, (uint8_t)(i1 >> 8),
                         (uint8_t)i1, 0xb1};
    cb_method(&b, 1, "<init>", "()V", 3, 1, c, sizeof c, NULL, 0, NULL, 0, 0);
    static const uint8_t none[] = {0xb1};
    cb_method(&b, 1, "<init>", "(I)V", 0, 2, none, sizeof none, NULL, 0, NULL, 0, 0);
    cb_finish(&b, tc, sc);
    bl_cf *cf = NULL;
    ck_assert_int_eq(bl_cf_parse((uint8_t *)b.out.data, b.out.len, &cf, NULL, 0), BL_OK);
    uint32_t ids[2] = {3, 4};
    bl_probe_opts o = {RT, warn_fn, NULL, unguarded};
    bl_buf out;
    bl_buf_init(&out, 0);
    size_t done = 0;
    n_warn = 0;
    ck_assert_int_eq(bl_probe_instrument(cf, ids, &o, &out, &done, NULL, 0), BL_OK);
    ck_assert_uint_eq(done, 1);
    ck_assert_uint_eq(n_warn, 1);
    ck_assert(strstr(last_warn, "super"));
    bl_cf *cf2 = NULL;
    ck_assert_int_eq(bl_cf_parse((uint8_t *)out.data, out.len, &cf2, NULL, 0), BL_OK);
    const bl_cf_mraw *r = bl_cf_method_raw(cf2, 0);
    const uint8_t *nc = (uint8_t *)out.data + r->code;
    ck_assert_uint_eq(memcmp(nc, c, 11), 0);       /* untouched up to super(...) */
    ck_assert_uint_eq(nc[11], BL_OP_ICONST_0 + 3); /* enter probe */
    ck_assert_uint_eq(nc[12], BL_OP_INVOKESTATIC);
    ck_assert_uint_eq(nc[15], BL_OP_ICONST_0 + 3); /* exit probe before return */
    ck_assert_uint_eq(nc[19], BL_OP_RETURN);
    const uint8_t *x = (uint8_t *)out.data + r->exc;
    ck_assert_uint_eq(bl_be16(x), 15);             /* range starts after the enter probe */
    ck_assert_uint_eq(bl_be16(x + 2), 20);
    ck_assert_uint_eq(bl_be16(x + 4), 20);
    ck_assert_uint_eq(r->code_len, 25);
    ck_assert_uint_eq(bl_cf_method_raw(cf2, 1)->code_len, 1);
    bl_cf_free(cf2);
    bl_cf_free(cf);
    bl_buf_cleanup(&out);
    cb_free(&b);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Guarded probes (getstatic on; ifeq skip; push; invokestatic; skip:)       */

/* Guards (getstatic <RT>.on directly followed by ifeq) in method `name`. */
static size_t count_guards(const uint8_t *d, size_t len, const char *name)
{
    bl_cf *cf = NULL;
    ck_assert_int_eq(bl_cf_parse(d, len, &cf, NULL, 0), BL_OK);
    size_t hits = 0;
    for (size_t i = 0; i < bl_cf_method_count(cf); i++) {
        if (strcmp(bl_cf_method_at(cf, i)->name, name) != 0)
            continue;
        const bl_cf_mraw *r = bl_cf_method_raw(cf, i);
        const uint8_t *c = d + r->code;
        for (uint32_t off = 0; off + 6 <= r->code_len; off += bl_bc_insn_len(c, r->code_len, off)) {
            if (c[off] != BL_OP_GETSTATIC || c[off + 3] != BL_OP_IFEQ)
                continue;
            uint16_t ref = bl_be16(c + off + 1), nat = bl_be16(d + bl_cf_pool_off(cf, ref) + 3);
            const char *fname = bl_cf_utf8(cf, bl_be16(d + bl_cf_pool_off(cf, nat) + 1), NULL);
            const char *owner = bl_cf_class_name(cf, bl_be16(d + bl_cf_pool_off(cf, ref) + 1));
            hits += bl_cf_pool_tag(cf, ref) == BL_CP_FIELDREF && !strcmp(fname, "on") &&
                    owner && !strcmp(owner, RT);
        }
    }
    bl_cf_free(cf);
    return hits;
}

/* javac output (StackMapTable) with every shape a skip label's frame must
 * get right, run under -Xverify:all with the same output as the original:
 * a return that is a jump target (its old frame copied after the exit
 * probe), a method whose first instruction is a loop head (an old frame at
 * offset 0), long/double locals and returns, a reference on the stack at
 * an areturn, returns inside try/catch/finally and synchronized blocks, and
 * constructors (the enter frame simulated after super(...) with arguments). */
static void javac_guarded(const char *release)
{
    if (!have_jvm())
        return;
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/g%s", tmpdir, release);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/g%s/G.java", tmpdir, release);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("public class G extends java.util.ArrayList<String> {\n"
          "  final long w; final String s;\n"
          "  G(long w, String s) { super(s == null ? 4 : s.length()); this.w = w; this.s = s; }\n"
          "  G() { this(3L, w0() > 0 ? \"yes\" : null); }\n"
          "  static long w0() { return 1; }\n"
          "  static int pick(int x) { return x > 0 ? 1 : 2; }\n"
          "  static int loop(int n) { while (true) { if (n-- < 0) return n; } }\n"
          "  static double mix(long a, double b, int c) {\n"
          "    long t = a * c; double u = b / 2;\n"
          "    if (c == 0) return u;\n"
          "    for (int i = 0; i < c; i++) { t += i; if (t > 100) return t + u; }\n"
          "    return t - u; }\n"
          "  static String tryer(String x) {\n"
          "    try { if (x.isEmpty()) return \"empty\"; return x.substring(1); }\n"
          "    catch (RuntimeException e) { return \"npe\"; }\n"
          "    finally { System.out.println(\"finally \" + x); } }\n"
          "  synchronized Object locked(int k) {\n"
          "    synchronized (s) { if (k > 1) return s; }\n"
          "    return k == 0 ? null : this; }\n"
          "  static void nothing() { }\n"
          "  static long deep(long v, int d) { return d == 0 ? v : deep(v + d, d - 1); }\n"
          "  public static void main(String[] a) {\n"
          "    G g = new G(); System.out.println(g.w + \" \" + g.s + \" \" + new G(5L, null).s);\n"
          "    System.out.println(pick(1) + pick(-1) + loop(3));\n"
          "    System.out.println(mix(3, 5.0, 0) + \" \" + mix(50, 1.0, 4) + \" \" + mix(1, 1.0, 2));\n"
          "    System.out.println(tryer(\"\") + tryer(\"abc\") + tryer(null));\n"
          "    System.out.println(g.locked(2) + \" \" + g.locked(0) + \" \" + (g.locked(1) == g));\n"
          "    nothing(); System.out.println(deep(1, 10));\n"
          "  }\n}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "javac %s%s -d %s/gcls%s %s 2>&1", release[0] ? "--release " : "",
             release, tmpdir, release, path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/gcls%s/G.class", tmpdir, release);
    size_t len, olen;
    char *data = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(data);
    n_warn = 0;
    unguarded = 0;
    uint8_t *o = instrument_and_run((uint8_t *)data, len, "G", 11, &olen);
    unguarded = 1;
    ck_assert_msg(n_warn == 0, "%s", last_warn);
    ck_assert_uint_eq(count_guards(o, olen, "pick"), 2);  /* enter, one ireturn */
    ck_assert_uint_eq(count_guards(o, olen, "loop"), 2);
    ck_assert_uint_eq(count_guards(o, olen, "mix"), 4);   /* enter, three returns */
    ck_assert_uint_eq(count_guards(o, olen, "<init>"), 4); /* two constructors */
    ck_assert_uint_ge(count_guards(o, olen, "tryer"), 4);
    free(o);
    free(data);
}

START_TEST(guarded_javac_release8) { javac_guarded("8"); }
END_TEST

START_TEST(guarded_javac_default) { javac_guarded(""); }
END_TEST

/* The guarded long method of javac_long (branches widened by the probes and
 * their guards, frames simulated at both kinds of new targets). */
START_TEST(guarded_javac_long)
{
    unguarded = 0;
    javac_long("8");
    unguarded = 1;
}
END_TEST

/* Straight-line methods in every version, guarded: from 50 on the enter
 * guard's skip label needs the initial frame, the exit's one int on the
 * stack; before 50 no frames at all. */
START_TEST(guarded_class_versions)
{
    static const uint16_t versions[] = {45, 49, 50, 52, 61};
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
        cb b;
        cb_init(&b, versions[v]);
        uint16_t tc = cb_class(&b, "t/V"), sc = cb_class(&b, "java/lang/Object");
        add_init(&b, sc);
        static const uint8_t f[] = {0x1a, 0x04, 0x60, 0xac}; /* iload_0 iconst_1 iadd ireturn */
        cb_method(&b, 9, "f", "(I)I", 2, 1, f, sizeof f, NULL, 0, NULL, 0, 0);
        static const char *const fns[1] = {"f"};
        static const int args[1] = {41};
        add_main(&b, tc, fns, args, 1);
        cb_finish(&b, tc, sc);
        n_warn = 0;
        size_t len;
        unguarded = 0;
        uint8_t *o = instrument_and_run((uint8_t *)b.out.data, b.out.len, "t.V", 3, &len);
        unguarded = 1;
        ck_assert_uint_eq(n_warn, 0);
        ck_assert_uint_eq(count_guards(o, len, "f"), 2);
        ck_assert_int_eq(has_code_attr(o, len, "f", "StackMapTable"), versions[v] >= 50);
        free(o);
        cb_free(&b);
    }
}
END_TEST

/* A method whose guarded probes would pass 65,535 bytes but whose bare ones
 * fit gets the bare ones (all its probes, no warning); the small method of
 * the same class keeps its guards. */
START_TEST(guarded_falls_back_near_64k)
{
    cb b;
    cb_init(&b, 49);
    uint16_t tc = cb_class(&b, "t/L"), sc = cb_class(&b, "java/lang/Object");
    add_init(&b, sc);
    /* 57,000 nops, then 1,000 returns: id 3 (iconst_3) makes a bare probe 4
     * bytes, a guarded one 10: bare 57,000 + 1,000 * 5 + 4 + 5 = 62,009
     * bytes; guarded 57,000 + 1,000 * 11 + 10 + 5 = 68,015 */
    size_t n = 57000 + 1000;
    uint8_t *code = malloc(n);
    ck_assert_ptr_nonnull(code);
    memset(code, 0x00, 57000);
    memset(code + 57000, BL_OP_RETURN, 1000);
    cb_method(&b, 9, "big", "()V", 0, 0, code, n, NULL, 0, NULL, 0, 0);
    free(code);
    cb_finish(&b, tc, sc);
    bl_cf *cf = NULL;
    ck_assert_int_eq(bl_cf_parse((uint8_t *)b.out.data, b.out.len, &cf, NULL, 0), BL_OK);
    uint32_t ids[2] = {3, 3};
    bl_probe_opts o = {RT, warn_fn, NULL, 0};
    bl_buf out;
    bl_buf_init(&out, 0);
    size_t done = 0;
    n_warn = 0;
    ck_assert_int_eq(bl_probe_instrument(cf, ids, &o, &out, &done, NULL, 0), BL_OK);
    ck_assert_uint_eq(done, 2);
    ck_assert_uint_eq(n_warn, 0);
    bl_cf *cf2 = NULL;
    ck_assert_int_eq(bl_cf_parse((uint8_t *)out.data, out.len, &cf2, NULL, 0), BL_OK);
    ck_assert_uint_eq(bl_cf_method_raw(cf2, 1)->code_len, 62009);
    bl_cf_free(cf2);
    ck_assert_uint_eq(count_guards((uint8_t *)out.data, out.len, "big"), 0);
    ck_assert_uint_eq(count_guards((uint8_t *)out.data, out.len, "<init>"), 2);
    bl_cf_free(cf);
    bl_buf_cleanup(&out);
    cb_free(&b);
}
END_TEST

/* Type annotations in Code (localvar, instanceof, new, cast targets) follow
 * their instructions: each offset target names an instruction with the
 * expected opcode after instrumentation. */
START_TEST(type_annotations)
{
    if (!have_jvm())
        return;
    char path[512], cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/srcta", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/srcta/TA.java", tmpdir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "import java.lang.annotation.*;\npublic class TA {\n"
               "  @Target(ElementType.TYPE_USE) @Retention(RetentionPolicy.RUNTIME) @interface A {}\n"
               "  static int f(Object o) {\n    if (o == null) return -1;\n"
               "    @A String s = (@A String) o;\n"
               "    if (o instanceof @A String) { Object n = new @A Object();\n"
               "      return s.length() + (n.hashCode() & 0); }\n    return 0;\n  }\n"
               "  public static void main(String[] a) { System.out.println(f(\"abcd\")); }\n}\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "javac -d %s/clsta %s 2>&1", tmpdir, path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/clsta/TA.class", tmpdir);
    size_t len, olen;
    char *data = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(data);
    n_warn = 0;
    uint8_t *o = instrument_and_run((uint8_t *)data, len, "TA", 3, &olen);
    ck_assert_uint_eq(n_warn, 0);
    bl_cf *cf = NULL;
    ck_assert_int_eq(bl_cf_parse(o, olen, &cf, NULL, 0), BL_OK);
    size_t offsets = 0, localvars = 0;
    for (size_t i = 0; i < bl_cf_method_count(cf); i++) {
        if (strcmp(bl_cf_method_at(cf, i)->name, "f") != 0)
            continue;
        const bl_cf_mraw *r = bl_cf_method_raw(cf, i);
        const uint8_t *code = o + r->code;
        for (uint32_t k = 0, at = r->attrs; k < r->attr_count; k++) {
            const char *an = bl_cf_utf8(cf, bl_be16(o + at), NULL);
            uint32_t alen = bl_be32(o + at + 2);
            if (strcmp(an, "RuntimeVisibleTypeAnnotations") == 0) {
                const uint8_t *p = o + at + 6;
                uint16_t n = bl_be16(p);
                p += 2;
                for (uint16_t a = 0; a < n; a++) {
                    uint8_t t = *p++;
                    if (t == 0x40) {
                        uint16_t cnt = bl_be16(p);
                        for (uint16_t q = 0; q < cnt; q++) {
                            uint16_t st = bl_be16(p + 2 + 6 * q), ln = bl_be16(p + 4 + 6 * q);
                            ck_assert_uint_le((uint32_t)st + ln, r->code_len);
                            localvars++;
                        }
                        p += 2 + 6 * cnt;
                    } else {
                        ck_assert(t == 0x43 || t == 0x44 || t == 0x47);
                        uint16_t off = bl_be16(p);
                        ck_assert_uint_lt(off, r->code_len);
                        unsigned want = t == 0x43 ? 193 : t == 0x44 ? BL_OP_NEW : 192;
                        ck_assert_msg(code[off] == want, "target 0x%x at %u: opcode %u", t, off,
                                      code[off]);
                        offsets++;
                        p += t == 0x47 ? 3 : 2;
                    }
                    p += 1 + 2 * p[0]; /* type_path */
                    p += 2;            /* type_index */
                    ck_assert_uint_eq(bl_be16(p), 0); /* @A has no elements */
                    p += 2;
                }
            }
            at += 6 + alen;
        }
    }
    ck_assert_uint_eq(offsets, 3);
    ck_assert_uint_ge(localvars, 1);
    bl_cf_free(cf);
    free(o);
    free(data);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("probe");
    TCase *tc = tcase_create("probe");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, real_jars);
    tcase_add_test(tc, crafted_v49_switch_jsr_wide);
    tcase_add_test(tc, crafted_v49_long_branches);
    tcase_add_test(tc, javac_long_release8);
    tcase_add_test(tc, javac_long_default);
    tcase_add_test(tc, class_versions);
    tcase_add_test(tc, pool_overflow);
    tcase_add_test(tc, corrupt_code);
    tcase_add_test(tc, constructors);
    tcase_add_test(tc, type_annotations);
    tcase_add_test(tc, guarded_javac_release8);
    tcase_add_test(tc, guarded_javac_default);
    tcase_add_test(tc, guarded_javac_long);
    tcase_add_test(tc, guarded_class_versions);
    tcase_add_test(tc, guarded_falls_back_near_64k);
    suite_add_tcase(s, tc);
    int rc = tu_run(s);
    if (tmpdir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
    return rc;
}
