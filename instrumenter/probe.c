/*
 * probe.c — inserting methodId enter/exit probes into a parsed class (see
 * probe.h). Spec: JVMS §4.7.3 (Code), §4.9 (constraints), §4.10 (verification),
 * §6.5 (instructions).
 *
 * What one instrumented method looks like (offsets new):
 *
 *     [code before the enter point: constructors only, up to and including
 *      the super(...)/this(...) invokespecial]
 *     push id; invokestatic R.i(I)V          <- enter probe
 *   L:                                        <- catch-all range starts here
 *     ...original code, each x-return preceded by
 *        push id; invokestatic R.o(I)V       <- exit probe (part of the return:
 *                                               jumps to the return land on it)
 *   H: push id; invokestatic R.o(I)V; athrow <- catch-all handler
 *   exception table: the original entries (moved; a range that ended at the
 *   old code end now ends at H, never covering the handler), then [L, H) -> H,
 *   catch_type 0, last so user handlers keep priority.
 *
 * Decisions:
 *   - The catch-all range covers the exit probes too (one contiguous range):
 *     if o() itself threw, the handler would call o() once more; the runtime's
 *     o() does not throw, and an Error inside it (StackOverflowError) leaves
 *     the thread's call tree to be repaired by the server anyway. It does not
 *     cover the enter probe, so an exception thrown by i() is not followed by
 *     an o().
 *   - Constructors: the enter point is just after the first invokespecial
 *     <init> that consumes no value of a `new` (counted linearly: each `new`
 *     is consumed by one invokespecial <init>), i.e. the super(...)/this(...)
 *     call; `this` is initialised there, so the handler frame (no locals) is
 *     valid over the whole range. A constructor without such a call
 *     (java/lang/Object) is left untouched with a warning.
 *   - StackMapTable (major >= 50; also moved when present in older classes):
 *     frames keep their kinds and move with their instructions, and the
 *     handler gets full_frame{locals: [], stack: [java/lang/Throwable]}.
 *     Older classes get no new table.
 *   - Branches whose displacement no longer fits 16 bits are widened:
 *     goto -> goto_w, jsr -> jsr_w, if<c> L -> if<!c> +8; goto_w L. Layout
 *     is iterated to a fixed point (switch padding depends on the offset).
 *     The inverted form creates a new branch target (the old fall-through),
 *     which needs a stack map frame in a class with a StackMapTable: that
 *     frame comes from frames.c (type simulation from the previous frame).
 *   - A method is left untouched, with a warning through opts->warn, when
 *     the new code would exceed 65,535 bytes, max_stack would exceed 65,535,
 *     its Code attribute holds an attribute this file does not know (it may
 *     hold code offsets that cannot be moved: StackMap of CLDC, ...), one of
 *     the known ones names an offset that is not an instruction boundary or
 *     is malformed (the JVM ignores most of them: losing the method's probes
 *     is better than refusing the class), or a frame for a new branch target
 *     cannot be simulated. Malformed code itself (undecodable instructions,
 *     branch or exception-table pcs off instruction boundaries) is BL_EFORMAT
 *     for the whole class: the JVM would refuse it too.
 *   - max_stack grows by 1 (the id above whatever is on the stack at an exit
 *     or at the enter point) and is at least 2 (throwable + id in the
 *     handler); max_locals is unchanged (no new locals).
 *
 * Memory: one scratch per call, arrays sized for the longest method, reused
 * for every method; no allocation per instruction.
 */
#include "probe.h"

#include "bufx.h"
#include "bytecode.h"
#include "codeattr.h"
#include "cpool.h"
#include "frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F_ENTER 1u /* enter probe before this instruction */
#define F_EXIT 2u  /* exit probe before this instruction (a return) */
#define F_WIDE 4u  /* short branch widened */

typedef struct insn {
    uint32_t old;   /* old offset */
    uint16_t len;   /* old length */
    uint8_t op;
    uint8_t flags;
    int32_t tgt;    /* branch target instruction (short and wide branches), else -1 */
} insn;

typedef struct scratch {
    insn *in;
    uint32_t *start, *lab, *body;
    int32_t *idx_of;  /* [code_len + 1] */
    uint32_t *old, *targets; /* old offsets; instructions that need a new frame */
    uint32_t cap;     /* capacity of the arrays above, in entries */
    bl_buf code, attrs, methods;
} scratch;

typedef struct ctx {
    bl_cf *cf;
    const uint8_t *d;
    const bl_probe_opts *opts;
    const char *enter_name, *exit_name; /* the probes' method names ("i", "o") */
    bl_cpool pool;
    int pool_ready;
    uint16_t m_enter, m_exit, c_throwable;
    uint16_t f_on;  /* Fieldref <runtime>.on:Z, 0 until a guarded method needs it */
    int guard;      /* the method being rewritten gets guarded probes (see GUARD_LEN) */
    int retry;      /* set by do_method: the guarded rewrite does not fit or its frames
                       cannot be simulated; nothing was written: rewrite it unguarded */
    uint16_t u_smt; /* "StackMapTable" Utf8, 0 until needed */
    scratch s;
    char *err;
    size_t errlen;
    char msg[512];
} ctx;

/* Outcome of one method: rewritten, left as it is (warned), or an error. */
enum { M_DONE, M_SKIP };

/* Guarded probe: getstatic <runtime>.on:Z; ifeq skip; push id; invokestatic;
 * skip: — the bytes before the push. */
#define GUARD_LEN 6u

static bl_err ensure_pool(ctx *c)
{
    if (c->pool_ready)
        return BL_OK;
    bl_err e = bl_cpool_init(&c->pool, c->cf);
    if (e)
        return e;
    c->pool_ready = 1;
    const char *rt = c->opts->runtime_class;
    e = bl_cpool_methodref(&c->pool, rt, c->enter_name, "(I)V", &c->m_enter);
    if (!e)
        e = bl_cpool_methodref(&c->pool, rt, c->exit_name, "(I)V", &c->m_exit);
    if (!e)
        e = bl_cpool_class(&c->pool, "java/lang/Throwable", 19, &c->c_throwable);
    return e;
}

static int skip(ctx *c, const bl_cf_method *m, const char *why)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s.%s%s left uninstrumented: %s", bl_cf_name(c->cf), m->name,
             m->desc, why);
    if (c->opts->warn)
        c->opts->warn(c->opts->warn_ctx, buf);
    return M_SKIP;
}

static bl_err mbad(ctx *c, const bl_cf_method *m, uint32_t off, const char *why)
{
    if (c->errlen)
        snprintf(c->err, c->errlen, "%s.%s%s: %s (code offset %u)", bl_cf_name(c->cf), m->name,
                 m->desc, why, (unsigned)off);
    return BL_EFORMAT;
}

/* Prefixes the message a helper left in err with the method's name. */
static bl_err wrap(ctx *c, const bl_cf_method *m, bl_err e)
{
    if (e != BL_EFORMAT || !c->errlen)
        return e;
    snprintf(c->msg, sizeof c->msg, "%s", c->err);
    snprintf(c->err, c->errlen, "%s.%s%s: %s", bl_cf_name(c->cf), m->name, m->desc, c->msg);
    return e;
}

static bl_err grow_scratch(scratch *s, uint32_t n)
{
    if (n <= s->cap)
        return BL_OK;
    int ok = 1;
    /* each array to n elements; a failed one keeps its old block (still
     * owned by the scratch) */
#define GROW(field)                                                        \
    do {                                                                   \
        void *q_ = realloc(s->field, (size_t)n * sizeof *s->field);        \
        if (q_)                                                            \
            s->field = q_;                                                 \
        else                                                               \
            ok = 0;                                                        \
    } while (0)
    GROW(in);
    GROW(start);
    GROW(lab);
    GROW(body);
    GROW(idx_of);
    GROW(old);
    GROW(targets);
#undef GROW
    if (!ok)
        return BL_ENOMEM;
    s->cap = n;
    return BL_OK;
}

static void free_scratch(scratch *s)
{
    free(s->in);
    free(s->start);
    free(s->lab);
    free(s->body);
    free(s->idx_of);
    free(s->old);
    free(s->targets);
    bl_buf_cleanup(&s->code);
    bl_buf_cleanup(&s->attrs);
    bl_buf_cleanup(&s->methods);
}

static bl_err bl_bx_putc(bl_buf *b, char c) { return bl_bx_u8(b, (unsigned char)c); }
static bl_err put16(bl_buf *b, uint32_t v) { return bl_bx_u16(b, v); }
static bl_err put32(bl_buf *b, uint32_t v) { return bl_bx_u32(b, v); }

/* ------------------------------------------------------------------------ */
/* Decoding and the enter point                                              */

/* Fills s->in / idx_of for code[0..len) (already known to decode) and checks
 * that every branch and switch target is an instruction start. */
static bl_err decode(ctx *c, const bl_cf_method *m, const uint8_t *code, uint32_t len,
                     uint32_t *n_out)
{
    scratch *s = &c->s;
    uint32_t n = 0;
    for (uint32_t i = 0; i <= len; i++)
        s->idx_of[i] = -1;
    for (uint32_t off = 0; off < len;) {
        uint32_t l = bl_bc_insn_len(code, len, off);
        if (!l)
            return mbad(c, m, off, "undecodable instruction");
        s->in[n] = (insn){off, (uint16_t)l, code[off], 0, -1};
        s->idx_of[off] = (int32_t)n++;
        off += l;
    }
    for (uint32_t i = 0; i < n; i++) {
        insn *t = &s->in[i];
        const uint8_t *p = code + t->old;
        int64_t tg;
        if (bl_bc_is_short_branch(t->op))
            tg = (int64_t)t->old + bl_bes16(p + 1);
        else if (t->op == BL_OP_GOTO_W || t->op == BL_OP_JSR_W)
            tg = (int64_t)t->old + bl_bes32(p + 1);
        else if (t->op == BL_OP_TABLESWITCH || t->op == BL_OP_LOOKUPSWITCH) {
            uint32_t q = t->old + 1 + bl_bc_switch_pad(t->old);
            uint32_t cnt, step, first;
            if (t->op == BL_OP_TABLESWITCH) {
                cnt = (uint32_t)(bl_bes32(code + q + 8) - bl_bes32(code + q + 4)) + 1;
                first = q + 12;
                step = 4;
            } else {
                cnt = (uint32_t)bl_bes32(code + q + 4);
                first = q + 12;
                step = 8;
            }
            for (uint32_t k = 0; k <= cnt; k++) {
                uint32_t at = k == cnt ? q : first + k * step;
                int64_t x = (int64_t)t->old + bl_bes32(code + at);
                if (x < 0 || x >= len || s->idx_of[x] < 0)
                    return mbad(c, m, t->old, "switch target is not an instruction");
            }
            continue;
        } else
            continue;
        if (tg < 0 || tg >= len || s->idx_of[tg] < 0)
            return mbad(c, m, t->old, "branch target is not an instruction");
        t->tgt = s->idx_of[tg];
    }
    *n_out = n;
    return BL_OK;
}

/* Index of the instruction after the super(...)/this(...) call of a
 * constructor, or -1. */
static int32_t ctor_enter_point(ctx *c, const uint8_t *code, uint32_t n)
{
    uint32_t pending_new = 0;
    for (uint32_t i = 0; i < n; i++) {
        const insn *t = &c->s.in[i];
        if (t->op == BL_OP_NEW) {
            pending_new++;
        } else if (t->op == BL_OP_INVOKESPECIAL) {
            uint16_t ref = bl_be16(code + t->old + 1);
            uint8_t tag = bl_cf_pool_tag(c->cf, ref);
            if (tag != BL_CP_METHODREF && tag != BL_CP_IMETHODREF)
                continue;
            uint16_t nat = bl_be16(c->d + bl_cf_pool_off(c->cf, ref) + 3);
            const char *name = bl_cf_utf8(c->cf, bl_be16(c->d + bl_cf_pool_off(c->cf, nat) + 1),
                                          NULL);
            if (!name || strcmp(name, "<init>") != 0)
                continue;
            if (pending_new) {
                pending_new--;
                continue;
            }
            return i + 1 < n ? (int32_t)(i + 1) : -1;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */

static uint32_t insn_size(const insn *t, uint32_t body)
{
    if (t->flags & F_WIDE)
        return t->op == BL_OP_GOTO || t->op == BL_OP_JSR ? 5 : 8;
    if (t->op == BL_OP_TABLESWITCH || t->op == BL_OP_LOOKUPSWITCH)
        return t->len - bl_bc_switch_pad(t->old) + bl_bc_switch_pad(body);
    return t->len;
}

/* Computes start/lab/body for every instruction, widening short branches
 * until every displacement fits. Returns the offset where the original code
 * ends (handler start), or UINT32_MAX when the method would exceed 65,535
 * bytes of code (hlen: handler length). */
static uint32_t layout(scratch *s, uint32_t n, uint32_t plen, uint32_t hlen)
{
    for (;;) {
        uint32_t pos = 0;
        for (uint32_t i = 0; i < n; i++) {
            insn *t = &s->in[i];
            s->start[i] = pos;
            if (t->flags & F_ENTER)
                pos += plen;
            s->lab[i] = pos;
            if (t->flags & F_EXIT)
                pos += plen;
            s->body[i] = pos;
            pos += insn_size(t, pos);
            if (pos > 65535u + 8u)
                return UINT32_MAX; /* no need to go on: too long already */
        }
        if (pos + hlen > 65535u)
            return UINT32_MAX;
        int changed = 0;
        for (uint32_t i = 0; i < n; i++) {
            insn *t = &s->in[i];
            if (!bl_bc_is_short_branch(t->op) || (t->flags & F_WIDE))
                continue;
            int64_t disp = (int64_t)s->lab[t->tgt] - s->body[i];
            if (disp < -32768 || disp > 32767) {
                t->flags |= F_WIDE;
                changed = 1;
            }
        }
        if (!changed)
            return pos;
    }
}

/* ------------------------------------------------------------------------ */
/* Emission                                                                  */

static bl_err emit_push(bl_buf *b, uint32_t id, uint16_t int_idx)
{
    uint8_t x[3];
    size_t n;
    if (id <= 5) {
        x[0] = (uint8_t)(BL_OP_ICONST_0 + id);
        n = 1;
    } else if (id <= 127) {
        x[0] = BL_OP_BIPUSH;
        x[1] = (uint8_t)id;
        n = 2;
    } else if (id <= 32767) {
        x[0] = BL_OP_SIPUSH;
        x[1] = (uint8_t)(id >> 8);
        x[2] = (uint8_t)id;
        n = 3;
    } else if (int_idx <= 255) {
        x[0] = BL_OP_LDC;
        x[1] = (uint8_t)int_idx;
        n = 2;
    } else {
        x[0] = BL_OP_LDC_W;
        x[1] = (uint8_t)(int_idx >> 8);
        x[2] = (uint8_t)int_idx;
        n = 3;
    }
    return bl_bx_app(b, x, n);
}

static uint32_t push_len(uint32_t id, uint16_t int_idx)
{
    if (id <= 5)
        return 1;
    if (id <= 127)
        return 2;
    if (id <= 32767)
        return 3;
    return int_idx <= 255 ? 2 : 3;
}

static bl_err emit_probe(bl_buf *b, uint32_t id, uint16_t int_idx, uint16_t mref)
{
    bl_err e = emit_push(b, id, int_idx);
    uint8_t x[3] = {BL_OP_INVOKESTATIC, (uint8_t)(mref >> 8), (uint8_t)mref};
    return e ? e : bl_bx_app(b, x, 3);
}

/* A probe of the method body: guarded when c->guard (the skip label lands
 * right after the invokestatic, plen bytes of push + invoke further). */
static bl_err emit_site(ctx *c, bl_buf *b, uint32_t id, uint16_t int_idx, uint16_t mref,
                        uint32_t plen)
{
    if (c->guard) {
        uint32_t disp = 3 + plen; /* from the ifeq to the skip label */
        uint8_t g[GUARD_LEN] = {BL_OP_GETSTATIC, (uint8_t)(c->f_on >> 8), (uint8_t)c->f_on,
                                BL_OP_IFEQ, (uint8_t)(disp >> 8), (uint8_t)disp};
        bl_err e = bl_bx_app(b, g, GUARD_LEN);
        if (e)
            return e;
    }
    bl_err e = emit_push(b, id, int_idx);
    uint8_t x[3] = {BL_OP_INVOKESTATIC, (uint8_t)(mref >> 8), (uint8_t)mref};
    return e ? e : bl_bx_app(b, x, 3);
}

static bl_err emit_code(ctx *c, const uint8_t *code, uint32_t n, uint32_t id, uint16_t int_idx,
                        uint32_t plen, uint32_t code_end)
{
    scratch *s = &c->s;
    bl_buf *b = &s->code;
    bl_buf_reset(b);
    bl_err e = bl_buf_reserve(b, code_end + 16);
    for (uint32_t i = 0; i < n && !e; i++) {
        const insn *t = &s->in[i];
        const uint8_t *p = code + t->old;
        if (t->flags & F_ENTER)
            e = emit_site(c, b, id, int_idx, c->m_enter, plen);
        if (!e && (t->flags & F_EXIT))
            e = emit_site(c, b, id, int_idx, c->m_exit, plen);
        if (e)
            break;
        uint32_t at = s->body[i];
        if (bl_bc_is_short_branch(t->op)) {
            int32_t disp = (int32_t)(s->lab[t->tgt] - at);
            if (!(t->flags & F_WIDE)) {
                e = bl_bx_putc(b, (char)t->op);
                if (!e)
                    e = put16(b, (uint32_t)disp);
            } else if (t->op == BL_OP_GOTO || t->op == BL_OP_JSR) {
                e = bl_bx_putc(b, (char)(t->op == BL_OP_GOTO ? BL_OP_GOTO_W : BL_OP_JSR_W));
                if (!e)
                    e = put32(b, (uint32_t)disp);
            } else {
                uint8_t x[4] = {(uint8_t)bl_bc_invert(t->op), 0, 8, BL_OP_GOTO_W};
                e = bl_bx_app(b, x, 4);
                if (!e)
                    e = put32(b, (uint32_t)(disp - 3));
            }
        } else if (t->op == BL_OP_GOTO_W || t->op == BL_OP_JSR_W) {
            e = bl_bx_putc(b, (char)t->op);
            if (!e)
                e = put32(b, s->lab[t->tgt] - at);
        } else if (t->op == BL_OP_TABLESWITCH || t->op == BL_OP_LOOKUPSWITCH) {
            uint32_t q = t->old + 1 + bl_bc_switch_pad(t->old);
            e = bl_bx_putc(b, (char)t->op);
            if (!e)
                e = bl_buf_zero(b, bl_bc_switch_pad(at));
            uint32_t cnt, step;
            if (t->op == BL_OP_TABLESWITCH) {
                cnt = (uint32_t)(bl_bes32(code + q + 8) - bl_bes32(code + q + 4)) + 1;
                step = 4;
            } else {
                cnt = (uint32_t)bl_bes32(code + q + 4);
                step = 8;
            }
            /* default, then low/high or npairs copied, then each target */
            uint32_t dflt = s->lab[s->idx_of[t->old + bl_bes32(code + q)]] - at;
            if (!e)
                e = put32(b, dflt);
            if (!e)
                e = bl_bx_app(b, code + q + 4, t->op == BL_OP_TABLESWITCH ? 8 : 4);
            /* tableswitch: offsets at q+12+4k; lookupswitch: key at q+8+8k,
             * offset at q+12+8k */
            for (uint32_t k = 0; k < cnt && !e; k++) {
                const uint8_t *en = code + q + 12 + k * step;
                if (step == 8)
                    e = bl_bx_app(b, en - 4, 4);
                if (!e)
                    e = put32(b, s->lab[s->idx_of[t->old + bl_bes32(en)]] - at);
            }
        } else {
            e = bl_bx_app(b, p, t->len);
        }
    }
    if (!e && b->len != code_end)
        e = BL_EINVAL; /* layout and emission disagree: a bug */
    return e;
}

/* ------------------------------------------------------------------------ */
/* One method                                                                */

static int known_code_attr(const char *name, int *kind)
{
    static const char *const K[] = {"StackMapTable", "LineNumberTable", "LocalVariableTable",
                                    "LocalVariableTypeTable", "RuntimeVisibleTypeAnnotations",
                                    "RuntimeInvisibleTypeAnnotations"};
    static const size_t KL[] = {13, 15, 18, 22, 29, 31};
    size_t n = strlen(name);
    for (int k = 0; k < 6; k++)
        if (n == KL[k] && memcmp(name, K[k], n) == 0) {
            *kind = k;
            return 1;
        }
    return 0;
}

/* StackMapTable body rebuilt with simulated frames for new targets. */
static bl_err frames_rebuild(ctx *c, size_t mi, const bl_pcmap *pm, uint32_t n,
                             const uint8_t *smt, uint32_t smt_len, uint32_t n_targets, bl_buf *ab)
{
    const bl_cf_mraw *r = bl_cf_method_raw(c->cf, mi);
    for (uint32_t i = 0; i < n; i++)
        c->s.old[i] = c->s.in[i].old;
    bl_frames_in fi = {c->cf, &c->pool, bl_cf_method_at(c->cf, mi), r->max_stack,
                       r->max_locals, c->d + r->code, c->s.old, n, pm, smt, smt_len,
                       c->s.targets, n_targets, c->c_throwable};
    return bl_frames_rebuild(&fi, ab, c->err, c->errlen);
}

/* Rewrites method mi into s->methods (or copies it). *done = 1 when probes
 * went in. */
static bl_err do_method(ctx *c, size_t mi, uint32_t id, int *done)
{
    scratch *s = &c->s;
    const bl_cf_method *m = bl_cf_method_at(c->cf, mi);
    const bl_cf_mraw *r = bl_cf_method_raw(c->cf, mi);
    const uint8_t *d = c->d;
    *done = 0;
    if (id == BL_PROBE_NO_ID || !r->code_attr || (m->access & 0x0500))
        return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
    if (id > BL_PROBE_MAX_ID) {
        if (c->errlen)
            snprintf(c->err, c->errlen, "%s.%s%s: methodId %u above %u", bl_cf_name(c->cf),
                     m->name, m->desc, (unsigned)id, BL_PROBE_MAX_ID);
        return BL_EINVAL;
    }
    const uint8_t *code = d + r->code;
    uint32_t len = r->code_len;

    /* Code attributes we cannot move: leave the method alone. */
    int has_smt = 0;
    for (uint32_t k = 0, at = r->attrs; k < r->attr_count; k++) {
        const char *an = bl_cf_utf8(c->cf, bl_be16(d + at), NULL);
        int kind;
        if (!known_code_attr(an, &kind)) {
            char why[128];
            snprintf(why, sizeof why, "Code attribute %.64s may hold code offsets", an);
            skip(c, m, why);
            return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
        }
        if (kind == 0)
            has_smt = 1;
        at += 6 + bl_be32(d + at + 2);
    }

    uint32_t n;
    bl_err e = decode(c, m, code, len, &n);
    if (e)
        return e;
    int32_t P = 0;
    if (strcmp(m->name, "<init>") == 0 && (P = ctor_enter_point(c, code, n)) < 0) {
        skip(c, m, "no super(...)/this(...) call found");
        return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
    }
    if (r->max_stack >= 65535) {
        skip(c, m, "max_stack would exceed 65535");
        return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
    }
    s->in[P].flags |= F_ENTER;
    for (uint32_t i = 0; i < n; i++)
        if (s->in[i].op >= BL_OP_IRETURN && s->in[i].op <= BL_OP_RETURN)
            s->in[i].flags |= F_EXIT;

    if ((e = ensure_pool(c)) != BL_OK)
        return e;
    uint16_t int_idx = 0;
    if (id > 32767 && (e = bl_cpool_integer(&c->pool, id, &int_idx)) != BL_OK)
        return e;
    if (c->guard && !c->f_on &&
        (e = bl_cpool_fieldref(&c->pool, c->opts->runtime_class, "on", "Z", &c->f_on)) != BL_OK)
        return e;
    uint32_t plen = push_len(id, int_idx) + 3, hlen = plen + 1;
    uint32_t code_end = layout(s, n, plen + (c->guard ? GUARD_LEN : 0), hlen);
    if (code_end == UINT32_MAX) {
        if (c->guard) {
            c->retry = 1; /* the unguarded probes may still fit */
            return BL_OK;
        }
        skip(c, m, "code would exceed 65535 bytes");
        return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
    }
    /* Instructions that need a new frame, as (index << 1 | at_body),
     * ascending: inverted conditionals make their fall-through a jump
     * target; a guarded enter probe's skip label is the enter point's
     * `lab`, a guarded exit probe's the return's own `body`. */
    uint32_t n_targets = 0;
    for (uint32_t i = 0; i < n; i++) {
        if ((c->guard && (s->in[i].flags & F_ENTER)) ||
            (i > 0 && (s->in[i - 1].flags & F_WIDE) && bl_bc_is_cond_branch(s->in[i - 1].op)))
            s->targets[n_targets++] = i << 1;
        if (c->guard && (s->in[i].flags & F_EXIT))
            s->targets[n_targets++] = i << 1 | 1u;
    }
    int rebuild = n_targets && (has_smt || bl_cf_major(c->cf) >= 50);
    uint32_t new_len = code_end + hlen;
    bl_pcmap pm = {s->idx_of, s->lab, s->body, len, code_end, new_len};

    if ((e = emit_code(c, code, n, id, int_idx, plen, code_end)) != BL_OK)
        return e;
    if ((e = emit_probe(&s->code, id, int_idx, c->m_exit)) != BL_OK ||
        (e = bl_bx_putc(&s->code, (char)BL_OP_ATHROW)) != BL_OK)
        return e;

    /* Code attributes */
    bl_buf *ab = &s->attrs;
    bl_buf_reset(ab);
    uint8_t tail[7] = {0, 0, 0, 1, 7, (uint8_t)(c->c_throwable >> 8), (uint8_t)c->c_throwable};
    uint16_t n_attrs = r->attr_count;
    for (uint32_t k = 0, at = r->attrs; k < r->attr_count; k++) {
        uint16_t ni = bl_be16(d + at);
        uint32_t alen = bl_be32(d + at + 2);
        const uint8_t *body = d + at + 6;
        int kind = -1;
        known_code_attr(bl_cf_utf8(c->cf, ni, NULL), &kind);
        size_t hdr = ab->len;
        if ((e = put16(ab, ni)) != BL_OK || (e = put32(ab, 0)) != BL_OK)
            return e;
        uint16_t nf;
        switch (kind) {
        case 0:
            e = rebuild ? frames_rebuild(c, mi, &pm, n, body, alen, n_targets, ab)
                        : bl_ca_frames(&pm, body, alen, tail, sizeof tail, code_end, ab, &nf,
                                       c->err, c->errlen);
            break;
        case 1:
            e = bl_ca_lines(&pm, body, alen, ab, c->err, c->errlen);
            break;
        case 2: case 3:
            e = bl_ca_locals(&pm, body, alen, ab, c->err, c->errlen);
            break;
        default:
            e = bl_ca_type_annos(&pm, body, alen, ab, c->err, c->errlen);
            break;
        }
        if (e == BL_EFORMAT && c->guard && kind == 0) { /* frames: try without guards */
            c->retry = 1;
            return BL_OK;
        }
        if (e == BL_EFORMAT) { /* offsets we cannot move, or the simulation gave up */
            snprintf(c->msg, sizeof c->msg, "%s", c->err);
            skip(c, m, c->msg);
            return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
        }
        if (e)
            return wrap(c, m, e);
        uint32_t nl = (uint32_t)(ab->len - hdr - 6);
        for (int b = 0; b < 4; b++)
            ab->data[hdr + 2 + b] = (char)(uint8_t)(nl >> (24 - 8 * b));
        at += 6 + alen;
    }
    if (!has_smt && bl_cf_major(c->cf) >= 50) {
        if (!c->u_smt && (e = bl_cpool_utf8(&c->pool, "StackMapTable", 13, &c->u_smt)) != BL_OK)
            return e;
        size_t hdr = ab->len;
        uint16_t nf;
        if ((e = put16(ab, c->u_smt)) != BL_OK || (e = put32(ab, 0)) != BL_OK)
            return e;
        e = rebuild ? frames_rebuild(c, mi, &pm, n, NULL, 0, n_targets, ab)
                    : bl_ca_frames(&pm, NULL, 0, tail, sizeof tail, code_end, ab, &nf, c->err,
                                   c->errlen);
        if (e == BL_EFORMAT && rebuild && c->guard) {
            c->retry = 1;
            return BL_OK;
        }
        if (e == BL_EFORMAT && rebuild) {
            snprintf(c->msg, sizeof c->msg, "%s", c->err);
            skip(c, m, c->msg);
            return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
        }
        if (e)
            return wrap(c, m, e);
        uint32_t nl = (uint32_t)(ab->len - hdr - 6);
        for (int b = 0; b < 4; b++)
            ab->data[hdr + 2 + b] = (char)(uint8_t)(nl >> (24 - 8 * b));
        n_attrs++;
    }

    /* method_info up to the Code attribute, the new Code attribute, the rest */
    bl_buf *o = &s->methods;
    uint32_t ms = (uint32_t)r->max_stack + 1 > 2 ? (uint32_t)r->max_stack + 1 : 2;
    uint32_t exc_n = r->exc_count + 1u;
    uint64_t clen = 2 + 2 + 4 + (uint64_t)new_len + 2 + 8 * exc_n + 2 + ab->len;
    if (exc_n > 65535 || clen > UINT32_MAX) {
        skip(c, m, "exception table or Code attribute too large");
        return bl_bx_app(&s->methods, d + r->start, r->end - r->start);
    }
    if ((e = bl_bx_app(o, d + r->start, r->code_attr - r->start)) != BL_OK ||
        (e = bl_bx_app(o, d + r->code_attr, 2)) != BL_OK ||
        (e = put32(o, (uint32_t)clen)) != BL_OK || (e = put16(o, ms)) != BL_OK ||
        (e = put16(o, r->max_locals)) != BL_OK || (e = put32(o, new_len)) != BL_OK ||
        (e = bl_bx_app(o, s->code.data, s->code.len)) != BL_OK ||
        (e = put16(o, exc_n)) != BL_OK)
        return e;
    for (uint32_t k = 0; k < r->exc_count; k++) {
        const uint8_t *x = d + r->exc + 8 * k;
        uint16_t sp = bl_be16(x), ep = bl_be16(x + 2), hp = bl_be16(x + 4);
        uint32_t ns = sp < len ? bl_pcmap_lab(&pm, sp) : UINT32_MAX;
        uint32_t ne = bl_pcmap_lab(&pm, ep); /* old code end -> handler start */
        uint32_t nh = hp < len ? bl_pcmap_lab(&pm, hp) : UINT32_MAX;
        if (ns == UINT32_MAX || ne == UINT32_MAX || nh == UINT32_MAX || sp >= ep)
            return mbad(c, m, sp, "exception table entry is not on instruction boundaries");
        if ((e = put16(o, ns)) != BL_OK || (e = put16(o, ne)) != BL_OK ||
            (e = put16(o, nh)) != BL_OK || (e = bl_bx_app(o, x + 6, 2)) != BL_OK)
            return e;
    }
    if ((e = put16(o, s->lab[P])) != BL_OK || (e = put16(o, code_end)) != BL_OK ||
        (e = put16(o, code_end)) != BL_OK || (e = put16(o, 0)) != BL_OK ||
        (e = put16(o, n_attrs)) != BL_OK || (e = bl_bx_app(o, ab->data, ab->len)) != BL_OK ||
        (e = bl_bx_app(o, d + r->code_attr_end, r->end - r->code_attr_end)) != BL_OK)
        return e;
    *done = 1;
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Class                                                                     */

bl_err bl_probe_instrument(bl_cf *cf, const uint32_t *ids, const bl_probe_opts *opts,
                           bl_buf *out, size_t *n_done, char *err, size_t errlen)
{
    return bl_probe_instrument_named(cf, ids, opts, NULL, NULL, out, n_done, err, errlen);
}

bl_err bl_probe_instrument_named(bl_cf *cf, const uint32_t *ids, const bl_probe_opts *opts,
                                 const char *enter_name, const char *exit_name, bl_buf *out,
                                 size_t *n_done, char *err, size_t errlen)
{
    size_t len;
    const uint8_t *d = bl_cf_bytes(cf, &len);
    size_t nm = bl_cf_method_count(cf), done = 0;
    if (n_done)
        *n_done = 0;
    if (errlen)
        err[0] = '\0';
    uint32_t maxlen = 0;
    for (size_t i = 0; i < nm; i++) {
        const bl_cf_method *m = bl_cf_method_at(cf, i);
        if (ids[i] != BL_PROBE_NO_ID && m->code_length && !(m->access & 0x0500) &&
            m->code_length > maxlen)
            maxlen = m->code_length;
    }
    if (!maxlen) /* nothing to instrument: the input as it is */
        return bl_bx_app(out, d, len);
    if (!opts || !opts->runtime_class || !*opts->runtime_class) {
        if (errlen)
            snprintf(err, errlen, "no runtime class given");
        return BL_EINVAL;
    }
    ctx *c = calloc(1, sizeof *c);
    if (!c)
        return BL_ENOMEM;
    c->cf = cf;
    c->d = d;
    c->opts = opts;
    c->enter_name = enter_name ? enter_name : "i";
    c->exit_name = exit_name ? exit_name : "o";
    c->err = err;
    c->errlen = errlen;
    bl_buf_init(&c->s.code, 0);
    bl_buf_init(&c->s.attrs, 0);
    bl_buf_init(&c->s.methods, 0);
    bl_err e = grow_scratch(&c->s, maxlen + 1);
    for (size_t i = 0; i < nm && !e; i++) {
        int one = 0;
        c->guard = !opts->unguarded;
        c->retry = 0;
        e = do_method(c, i, ids[i], &one);
        if (!e && c->retry) { /* guarded code too long, or frames not simulated */
            c->guard = 0;
            c->retry = 0;
            e = do_method(c, i, ids[i], &one);
        }
        done += (size_t)one;
    }
    if (!e && !done) {
        e = bl_bx_app(out, d, len);
    } else if (!e) {
        uint32_t pe = bl_cf_pool_end(cf), mo = bl_cf_methods_off(cf), me = bl_cf_methods_end(cf);
        uint32_t count = bl_cf_pool_count(cf) + bl_cpool_added(&c->pool);
        if ((e = bl_bx_app(out, d, 8)) == BL_OK && (e = put16(out, count)) == BL_OK &&
            (e = bl_bx_app(out, d + 10, pe - 10)) == BL_OK &&
            (e = bl_bx_app(out, c->pool.extra.data, c->pool.extra.len)) == BL_OK &&
            (e = bl_bx_app(out, d + pe, mo + 2 - pe)) == BL_OK &&
            (e = bl_bx_app(out, c->s.methods.data, c->s.methods.len)) == BL_OK)
            e = bl_bx_app(out, d + me, len - me);
    }
    if (e == BL_ETOOBIG && errlen && !err[0])
        snprintf(err, errlen, "%s: constant pool would exceed 65535 entries", bl_cf_name(cf));
    if (!e && n_done)
        *n_done = done;
    if (c->pool_ready)
        bl_cpool_cleanup(&c->pool);
    free_scratch(&c->s);
    free(c);
    return e;
}
