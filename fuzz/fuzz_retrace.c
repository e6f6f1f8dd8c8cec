/* fuzz_retrace — arbitrary bytes as a stack trace, retraced with a fixed
 * mapping that uses every feature (inline, outline, rewrite, synthesized);
 * differential: the one-shot CLI's path (names resolved once, frame lines
 * as scanned) gives the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char mapping[] =
    "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n"
    "com.example.Main -> a:\n"
    "# {\"id\":\"sourceFile\",\"fileName\":\"Main.kt\"}\n"
    "    1:1:void $r8$lambda$x():0:0 -> a\n"
    "      # {\"id\":\"com.android.tools.r8.synthesized\"}\n"
    "    2:4:int com.example.Util.parse(java.lang.String):40:42 -> a\n"
    "    2:4:void run():10 -> a\n"
    "      # {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":[\"throws(Ljava/lang/NullPointerException;)\"],\"actions\":[\"removeInnerFrames(1)\"]}\n"
    "    void noRange():42:44 -> b\n"
    "    0:0:void zero():7:7 -> c\n"
    "    0:65535:void all():1 -> d\n"
    "outline.Class -> b:\n"
    "    1:2:int some.inlinee():75:76 -> a\n"
    "    1:2:int outline():0 -> a\n"
    "    # {'id':'com.android.tools.r8.outline'}\n"
    "outline.Callsite -> x:\n"
    "    1:1:int caller(int):0:0 -> s\n"
    "    # {'id':'com.android.tools.r8.outlineCallsite','positions':{'1':10,'2':11}}\n"
    "    10:11:int caller(int):23:24 -> s\n"
    "com.example.Ex -> kj:\n";

static bl_mapindex *mi;
static bl_buf img;

/* The trace's frame names and frame lines as bl_retrace_trace_frames
 * reads them (beatline-retrace's one-shot path). */
typedef struct scan {
    const char **c, **m;
    size_t *cn, *mn;
    uint32_t n, cap;
    const char **at;
    bl_frame_pos *fp;
    uint32_t *ix;
    uint32_t nf, capf;
    int failed;
} scan;

static void on_pos(void *ctx, const char *line, const bl_frame_pos *fp)
{
    scan *s = ctx;
    if (s->failed)
        return;
    if (s->nf == s->capf) {
        uint32_t cap = s->capf ? 2 * s->capf : 16;
        const char **a = realloc(s->at, cap * sizeof *a);
        if (a)
            s->at = a;
        bl_frame_pos *f = realloc(s->fp, cap * sizeof *f);
        if (f)
            s->fp = f;
        uint32_t *x = realloc(s->ix, cap * sizeof *x);
        if (x)
            s->ix = x;
        if (!a || !f || !x) {
            s->failed = 1;
            return;
        }
        s->capf = cap;
    }
    s->at[s->nf] = line;
    s->fp[s->nf] = *fp;
    s->ix[s->nf++] = s->n;
}

static void on_name(void *ctx, const char *cls, size_t cn, const char *method, size_t mn,
                    int64_t line)
{
    (void)line;
    scan *s = ctx;
    if (s->failed || !method)
        return;
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 16;
        const char **c = realloc(s->c, cap * sizeof *c);
        if (c)
            s->c = c;
        const char **m = realloc(s->m, cap * sizeof *m);
        if (m)
            s->m = m;
        size_t *a = realloc(s->cn, cap * sizeof *a);
        if (a)
            s->cn = a;
        size_t *b = realloc(s->mn, cap * sizeof *b);
        if (b)
            s->mn = b;
        if (!c || !m || !a || !b) {
            s->failed = 1;
            return;
        }
        s->cap = cap;
    }
    s->c[s->n] = cls;
    s->m[s->n] = method;
    s->cn[s->n] = cn;
    s->mn[s->n++] = mn;
}

/* Differential: the text retraced line by line with the names resolved
 * once (bl_retrace_lookups) and each frame line given as scanned
 * (bl_retracer_frame_line) must equal bl_retrace_text's output. */
static void check_as_scanned(const bl_retrace_opts *o, const char *text, size_t size,
                             const bl_buf *want)
{
    scan s;
    memset(&s, 0, sizeof s);
    bl_retrace_trace_frames(text, size, on_name, on_pos, &s);
    bl_retrace_lookups *lk = NULL;
    bl_retracer *rt = NULL;
    bl_buf out;
    bl_buf_init(&out, 0);
    if (s.failed || (s.n && bl_retrace_lookups_new(mi, s.n, &lk)))
        goto done;
    for (uint32_t i = 0; i < s.n; i++)
        bl_retrace_lookups_resolve(lk, i, s.c[i], s.cn[i], s.m[i], s.mn[i]);
    if ((lk && bl_retrace_lookups_seal(lk)) || bl_retracer_new(mi, o, &rt))
        goto done;
    bl_retracer_use_lookups(rt, lk);
    uint32_t f = 0;
    for (const char *p = text, *e = text + size; p < e;) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        size_t before = out.len;
        bl_err err;
        if (f < s.nf && s.at[f] == p) {
            err = bl_retracer_frame_line(rt, p, (size_t)(le - p), &s.fp[f], s.ix[f], &out);
            f++;
        } else {
            err = bl_retracer_line(rt, p, (size_t)(le - p), &out);
        }
        if (err)
            goto done;
        if (!nl && out.len > before && out.data[out.len - 1] == '\n')
            out.data[--out.len] = '\0';
        p = nl ? nl + 1 : e;
    }
    if (f != s.nf || out.len != want->len || (out.len && memcmp(out.data, want->data, out.len)))
        abort(); /* the one-shot path prints otherwise */
    if (lk && bl_retracer_resolved(rt) != 0)
        abort(); /* a scanned name looked up again */
    /* again with lookups sealed empty, filled as the names are met (each
     * frame's name numbered by its first occurrence, as the CLI does) */
    bl_retracer_free(rt);
    rt = NULL;
    bl_retrace_lookups_free(lk);
    lk = NULL;
    bl_buf_reset(&out);
    for (uint32_t k = 0; k < s.nf; k++)
        for (uint32_t j = 0; j < s.ix[k] && j < s.n && s.ix[k] < s.n; j++)
            if (s.cn[j] == s.cn[s.ix[k]] && s.mn[j] == s.mn[s.ix[k]] &&
                !memcmp(s.c[j], s.c[s.ix[k]], s.cn[j]) && !memcmp(s.m[j], s.m[s.ix[k]], s.mn[j])) {
                s.ix[k] = j;
                break;
            }
    if ((s.n && (bl_retrace_lookups_new(mi, s.n, &lk) || bl_retrace_lookups_seal(lk))) ||
        bl_retracer_new(mi, o, &rt))
        goto done;
    bl_retracer_use_lookups(rt, lk);
    f = 0;
    for (const char *p = text, *e = text + size; p < e;) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        size_t before = out.len;
        bl_err err;
        if (f < s.nf && s.at[f] == p) {
            err = bl_retracer_frame_line(rt, p, (size_t)(le - p), &s.fp[f], s.ix[f], &out);
            f++;
        } else {
            err = bl_retracer_line(rt, p, (size_t)(le - p), &out);
        }
        if (err)
            goto done;
        if (!nl && out.len > before && out.data[out.len - 1] == '\n')
            out.data[--out.len] = '\0';
        p = nl ? nl + 1 : e;
    }
    if (out.len != want->len || (out.len && memcmp(out.data, want->data, out.len)))
        abort(); /* lazily filled lookups print otherwise */
    if (lk && bl_retracer_resolved(rt) != 0)
        abort();
done:
    bl_buf_cleanup(&out);
    bl_retracer_free(rt);
    bl_retrace_lookups_free(lk);
    free(s.c);
    free(s.m);
    free(s.cn);
    free(s.mn);
    free(s.at);
    free(s.fp);
    free(s.ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!mi) {
        bl_buf_init(&img, 0);
        if (bl_mapindex_build(mapping, sizeof mapping - 1, NULL, &img, NULL) ||
            bl_mapindex_from_memory(img.data, img.len, &mi))
            abort();
    }
    bl_buf out;
    bl_buf_init(&out, 0);
    bl_retrace_opts o = { size > 0 && (data[0] & 1) };
    if (bl_retrace_text(mi, &o, (const char *)data, size, &out) == BL_OK)
        check_as_scanned(&o, (const char *)data, size, &out);
    bl_buf_cleanup(&out);
    return 0;
}
