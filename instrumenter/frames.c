/*
 * frames.c — StackMapTable rebuild with simulated frames for new branch
 * targets (see frames.h for the scheme and why it is exact).
 *
 * Representations:
 *   - entry form (as in the class file): locals and stack are lists of
 *     verification types where Long/Double is one entry;
 *   - slot form (for simulation): locals[max_locals] and an operand stack of
 *     words, Long/Double followed by a Top word.
 * Uninitialized(offset) keeps the *old* offset of its `new` everywhere in
 * here and is moved to the new offset only when encoding.
 *
 * Invariants: the simulation never writes past max_locals slots or
 * max_stack words (it fails with BL_EFORMAT instead); frames are kept in
 * ascending old offset, which is also ascending new offset (the mapping is
 * strictly increasing).
 */
#include "frames.h"

#include "bytecode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_TOP, T_INT, T_FLOAT, T_DOUBLE, T_LONG, T_NULL, T_UTHIS, T_OBJ, T_UNINIT };

typedef struct vt {
    uint8_t tag;
    uint16_t v; /* Class index (T_OBJ) or old offset of the `new` (T_UNINIT) */
} vt;

typedef struct frame {
    uint32_t off;   /* old offset (UINT32_MAX: the handler frame) */
    uint32_t at_body; /* 1: at the instruction's own bytes (after its exit probe), 0: at its `lab` */
    uint32_t loc, nloc, stk, nstk; /* ranges in st.t */
} frame;

typedef struct st {
    const bl_frames_in *in;
    vt *t;
    size_t nt, capt;
    frame *f;
    size_t nf, capf;
    vt *L, *S; /* slot form */
    uint32_t sp;
    char *err;
    size_t errlen;
} st;

static bl_err bad(st *s, uint32_t off, const char *what)
{
    if (s->errlen)
        snprintf(s->err, s->errlen, "stack map frames: %s (code offset %u)", what, (unsigned)off);
    return BL_EFORMAT;
}

static bl_err push_t(st *s, vt v)
{
    if (s->nt == s->capt) {
        size_t nc = s->capt ? s->capt * 2 : 256;
        vt *n = realloc(s->t, nc * sizeof *n);
        if (!n)
            return BL_ENOMEM;
        s->t = n;
        s->capt = nc;
    }
    s->t[s->nt++] = v;
    return BL_OK;
}

static bl_err new_frame(st *s, uint32_t off, frame **out)
{
    if (s->nf == s->capf) {
        size_t nc = s->capf ? s->capf * 2 : 32;
        frame *n = realloc(s->f, nc * sizeof *n);
        if (!n)
            return BL_ENOMEM;
        s->f = n;
        s->capf = nc;
    }
    *out = &s->f[s->nf++];
    **out = (frame){off, 0, 0, 0, 0, 0};
    return BL_OK;
}

static int wide(uint8_t tag) { return tag == T_LONG || tag == T_DOUBLE; }

static bl_err cls(st *s, const char *name, size_t n, vt *out)
{
    uint16_t idx;
    bl_err e = bl_cpool_class(s->in->pool, name, n, &idx);
    *out = (vt){T_OBJ, idx};
    return e;
}

/* Type of the field descriptor at *p; advances *p. */
static bl_err desc_type(st *s, const char **p, vt *out)
{
    const char *q = *p;
    switch (*q) {
    case 'B': case 'C': case 'I': case 'S': case 'Z':
        *out = (vt){T_INT, 0}, *p = q + 1;
        return BL_OK;
    case 'F':
        *out = (vt){T_FLOAT, 0}, *p = q + 1;
        return BL_OK;
    case 'J':
        *out = (vt){T_LONG, 0}, *p = q + 1;
        return BL_OK;
    case 'D':
        *out = (vt){T_DOUBLE, 0}, *p = q + 1;
        return BL_OK;
    case 'L': {
        const char *e = strchr(q, ';');
        if (!e)
            return BL_EFORMAT;
        *p = e + 1;
        return cls(s, q + 1, (size_t)(e - q - 1), out);
    }
    case '[': {
        const char *e = q;
        while (*e == '[')
            e++;
        if (*e == 'L') {
            e = strchr(e, ';');
            if (!e)
                return BL_EFORMAT;
        } else if (!*e || !strchr("BCDFIJSZ", *e)) {
            return BL_EFORMAT;
        }
        *p = e + 1;
        return cls(s, q, (size_t)(e + 1 - q), out);
    }
    default:
        return BL_EFORMAT;
    }
}

/* ------------------------------------------------------------------------ */
/* Decoding the old table                                                    */

static bl_err initial_frame(st *s, frame *f)
{
    const bl_frames_in *in = s->in;
    f->loc = (uint32_t)s->nt;
    bl_err e;
    if (!(in->m->access & 0x0008)) {
        const char *cn = bl_cf_name(in->cf);
        vt me;
        if (strcmp(in->m->name, "<init>") == 0 && strcmp(cn, "java/lang/Object") != 0)
            me = (vt){T_UTHIS, 0};
        else if ((e = cls(s, cn, strlen(cn), &me)) != BL_OK)
            return e;
        if ((e = push_t(s, me)) != BL_OK)
            return e;
    }
    const char *p = in->m->desc + 1;
    while (*p && *p != ')') {
        vt v;
        if ((e = desc_type(s, &p, &v)) != BL_OK)
            return e == BL_EFORMAT ? bad(s, 0, "bad method descriptor") : e;
        if ((e = push_t(s, v)) != BL_OK)
            return e;
    }
    f->nloc = (uint32_t)(s->nt - f->loc);
    return BL_OK;
}

typedef struct rd {
    const uint8_t *p;
    uint32_t len, pos;
} rd;

static bl_err read_vts(st *s, rd *r, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        if (r->pos >= r->len)
            return bad(s, 0, "truncated StackMapTable");
        vt v = {r->p[r->pos++], 0};
        if (v.tag > T_UNINIT)
            return bad(s, 0, "bad verification type");
        if (v.tag >= T_OBJ) {
            if (r->len - r->pos < 2)
                return bad(s, 0, "truncated StackMapTable");
            v.v = bl_be16(r->p + r->pos);
            r->pos += 2;
        }
        bl_err e = push_t(s, v);
        if (e)
            return e;
    }
    return BL_OK;
}

/* Decodes the old frames after the initial one (s->f[0]). */
static bl_err decode_old(st *s)
{
    const bl_frames_in *in = s->in;
    if (!in->smt)
        return BL_OK;
    rd r = {in->smt, in->smt_len, 0};
    if (r.len < 2)
        return bad(s, 0, "truncated StackMapTable");
    uint16_t n = bl_be16(r.p);
    r.pos = 2;
    uint32_t off = 0;
    for (uint16_t k = 0; k < n; k++) {
        if (r.pos >= r.len)
            return bad(s, off, "truncated StackMapTable");
        uint8_t ft = r.p[r.pos++];
        uint32_t delta;
        if (ft < 128) {
            delta = ft & 63u;
        } else if (ft < 247 || r.len - r.pos < 2) {
            return bad(s, off, "bad frame");
        } else {
            delta = bl_be16(r.p + r.pos);
            r.pos += 2;
        }
        off = k ? off + delta + 1 : delta;
        frame *f;
        bl_err e = new_frame(s, off, &f);
        if (e)
            return e;
        const frame prev = s->f[s->nf - 2];
        f->loc = (uint32_t)s->nt;
        if (ft < 128 || ft == 247 || ft == 251 || (ft >= 248 && ft <= 250)) {
            uint32_t keep = prev.nloc;
            if (ft >= 248 && ft <= 250) {
                if (prev.nloc < 251u - ft)
                    return bad(s, off, "chop_frame removes more locals than there are");
                keep = prev.nloc - (251u - ft);
            }
            for (uint32_t i = 0; i < keep; i++)
                if ((e = push_t(s, s->t[prev.loc + i])) != BL_OK)
                    return e;
            f->nloc = keep;
            f->stk = (uint32_t)s->nt;
            if (ft >= 64 && (ft < 128 || ft == 247)) {
                if ((e = read_vts(s, &r, 1)) != BL_OK)
                    return e;
                f->nstk = 1;
            }
        } else if (ft < 255) { /* append */
            for (uint32_t i = 0; i < prev.nloc; i++)
                if ((e = push_t(s, s->t[prev.loc + i])) != BL_OK)
                    return e;
            if ((e = read_vts(s, &r, ft - 251u)) != BL_OK)
                return e;
            f->nloc = prev.nloc + (ft - 251u);
            f->stk = (uint32_t)s->nt;
        } else {
            if (r.len - r.pos < 2)
                return bad(s, off, "truncated full_frame");
            f->nloc = bl_be16(r.p + r.pos);
            r.pos += 2;
            if ((e = read_vts(s, &r, f->nloc)) != BL_OK)
                return e;
            f->stk = (uint32_t)s->nt;
            if (r.len - r.pos < 2)
                return bad(s, off, "truncated full_frame");
            f->nstk = bl_be16(r.p + r.pos);
            r.pos += 2;
            if ((e = read_vts(s, &r, f->nstk)) != BL_OK)
                return e;
        }
    }
    if (r.pos != r.len)
        return bad(s, off, "StackMapTable length does not match its frames");
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Simulation (slot form)                                                    */

static bl_err load_frame(st *s, const frame *f, uint32_t off)
{
    const bl_frames_in *in = s->in;
    for (uint32_t i = 0; i < in->max_locals; i++)
        s->L[i] = (vt){T_TOP, 0};
    uint32_t slot = 0;
    for (uint32_t i = 0; i < f->nloc; i++) {
        vt v = s->t[f->loc + i];
        if (slot + (wide(v.tag) ? 2u : 1u) > in->max_locals)
            return bad(s, off, "frame has more locals than max_locals");
        s->L[slot++] = v;
        if (wide(v.tag))
            s->L[slot++] = (vt){T_TOP, 0};
    }
    s->sp = 0;
    for (uint32_t i = 0; i < f->nstk; i++) {
        vt v = s->t[f->stk + i];
        if (s->sp + (wide(v.tag) ? 2u : 1u) > in->max_stack)
            return bad(s, off, "frame has a deeper stack than max_stack");
        s->S[s->sp++] = v;
        if (wide(v.tag))
            s->S[s->sp++] = (vt){T_TOP, 0};
    }
    return BL_OK;
}

/* Stores the slot form as a new frame at old offset off (at the
 * instruction's `body` when at_body, else at its `lab`). */
static bl_err save_frame(st *s, uint32_t off, uint32_t at_body)
{
    frame *f;
    bl_err e = new_frame(s, off, &f);
    if (e)
        return e;
    f->at_body = at_body;
    uint32_t loc = (uint32_t)s->nt, last = 0, n = 0;
    for (uint32_t i = 0; i < s->in->max_locals; i++) {
        vt v = s->L[i];
        if ((e = push_t(s, v)) != BL_OK)
            return e;
        n++;
        if (v.tag != T_TOP)
            last = n;
        if (wide(v.tag))
            i++;
    }
    s->nt = loc + last; /* trailing Tops are implicit */
    uint32_t stk = (uint32_t)s->nt, ns = 0;
    for (uint32_t i = 0; i < s->sp; i++) {
        if ((e = push_t(s, s->S[i])) != BL_OK)
            return e;
        ns++;
        if (wide(s->S[i].tag))
            i++;
    }
    f = &s->f[s->nf - 1];
    f->loc = loc, f->nloc = last, f->stk = stk, f->nstk = ns;
    f->at_body = at_body;
    return BL_OK;
}

#define NEED(n)                                                                                \
    do {                                                                                       \
        if (s->sp < (n))                                                                       \
            return bad(s, off, "stack underflow in simulation");                               \
    } while (0)

static bl_err push(st *s, uint32_t off, vt v)
{
    uint32_t w = wide(v.tag) ? 2 : 1;
    if (s->sp + w > s->in->max_stack)
        return bad(s, off, "stack above max_stack in simulation");
    s->S[s->sp++] = v;
    if (w == 2)
        s->S[s->sp++] = (vt){T_TOP, 0};
    return BL_OK;
}

static bl_err store(st *s, uint32_t off, uint32_t n, vt v)
{
    uint32_t w = wide(v.tag) ? 2 : 1;
    if (n + w > s->in->max_locals)
        return bad(s, off, "local index above max_locals");
    if (n > 0 && wide(s->L[n - 1].tag))
        s->L[n - 1] = (vt){T_TOP, 0};
    s->L[n] = v;
    if (w == 2)
        s->L[n + 1] = (vt){T_TOP, 0};
    return BL_OK;
}

static const char *utf8_at(const bl_cf *cf, const uint8_t *d, uint32_t idx, uint32_t field)
{
    return bl_cf_utf8(cf, bl_be16(d + bl_cf_pool_off(cf, idx) + 1 + field), NULL);
}

/* Descriptor of the NameAndType referred to by the ref/indy/condy entry idx. */
static const char *ref_desc(const bl_cf *cf, uint32_t idx, const char **name)
{
    const uint8_t *d = bl_cf_bytes(cf, NULL);
    uint8_t t = bl_cf_pool_tag(cf, idx);
    if (t != BL_CP_FIELDREF && t != BL_CP_METHODREF && t != BL_CP_IMETHODREF &&
        t != BL_CP_DYNAMIC && t != BL_CP_INVOKEDYNAMIC)
        return NULL;
    uint32_t nat = bl_be16(d + bl_cf_pool_off(cf, idx) + 3);
    if (name)
        *name = utf8_at(cf, d, nat, 0);
    return utf8_at(cf, d, nat, 2);
}

static uint32_t words_of(char c) { return c == 'J' || c == 'D' ? 2 : 1; }

/* The array class name for component type name[0..n) ("[I" for primitive
 * descriptors given as such). */
static bl_err array_of(st *s, const char *name, uint32_t n, vt *out)
{
    char buf[1024];
    if (n + 3 > sizeof buf)
        return BL_EFORMAT;
    size_t k = 0;
    buf[k++] = '[';
    if (name[0] == '[') {
        memcpy(buf + k, name, n);
        k += n;
    } else {
        buf[k++] = 'L';
        memcpy(buf + k, name, n);
        k += n;
        buf[k++] = ';';
    }
    return cls(s, buf, k, out);
}

static bl_err invoke(st *s, uint32_t off, unsigned op, uint16_t ref)
{
    const bl_cf *cf = s->in->cf;
    const char *name = NULL, *desc = ref_desc(cf, ref, &name);
    if (!desc || desc[0] != '(')
        return bad(s, off, "bad invoke reference");
    uint32_t words = 0;
    const char *p = desc + 1;
    while (*p && *p != ')') {
        words += words_of(*p);
        while (*p == '[')
            p++;
        if (*p == 'L')
            p = strchr(p, ';');
        if (!p || !*p)
            return bad(s, off, "bad method descriptor");
        p++;
    }
    if (*p != ')')
        return bad(s, off, "bad method descriptor");
    NEED(words);
    s->sp -= words;
    if (op != BL_OP_INVOKESTATIC && op != BL_OP_INVOKEDYNAMIC) {
        NEED(1);
        vt recv = s->S[--s->sp];
        if (op == BL_OP_INVOKESPECIAL && strcmp(name, "<init>") == 0 &&
            (recv.tag == T_UTHIS || recv.tag == T_UNINIT)) {
            vt init;
            bl_err e;
            if (recv.tag == T_UTHIS) {
                const char *cn = bl_cf_name(cf);
                e = cls(s, cn, strlen(cn), &init);
            } else {
                const uint8_t *code = s->in->code;
                if (recv.v + 3u > s->in->map->old_len || code[recv.v] != BL_OP_NEW)
                    return bad(s, off, "Uninitialized type does not name a `new`");
                init = (vt){T_OBJ, bl_be16(code + recv.v + 1)};
                e = BL_OK;
            }
            if (e)
                return e;
            for (uint32_t i = 0; i < s->in->max_locals; i++)
                if (s->L[i].tag == recv.tag && s->L[i].v == recv.v)
                    s->L[i] = init;
            for (uint32_t i = 0; i < s->sp; i++)
                if (s->S[i].tag == recv.tag && s->S[i].v == recv.v)
                    s->S[i] = init;
        }
    }
    p++;
    if (*p == 'V')
        return BL_OK;
    vt r;
    bl_err e = desc_type(s, &p, &r);
    if (e)
        return e == BL_EFORMAT ? bad(s, off, "bad return type") : e;
    return push(s, off, r);
}

/* Simulates the instruction at old offset off (not a control transfer other
 * than a conditional branch). */
static bl_err step(st *s, uint32_t off)
{
    const bl_frames_in *in = s->in;
    const bl_cf *cf = in->cf;
    const uint8_t *c = in->code + off;
    unsigned op = c[0];
    static const uint8_t ARITH[4] = {T_INT, T_LONG, T_FLOAT, T_DOUBLE};
    vt v;
    bl_err e;
    if (op == 0 || op == 132) /* nop, iinc */
        return BL_OK;
    if (op == 1)
        return push(s, off, (vt){T_NULL, 0});
    if (op <= 8 || op == 16 || op == 17)
        return push(s, off, (vt){T_INT, 0});
    if (op <= 10)
        return push(s, off, (vt){T_LONG, 0});
    if (op <= 13)
        return push(s, off, (vt){T_FLOAT, 0});
    if (op <= 15)
        return push(s, off, (vt){T_DOUBLE, 0});
    if (op >= 18 && op <= 20) { /* ldc, ldc_w, ldc2_w */
        uint16_t idx = op == 18 ? c[1] : bl_be16(c + 1);
        switch (bl_cf_pool_tag(cf, idx)) {
        case BL_CP_INTEGER: return push(s, off, (vt){T_INT, 0});
        case BL_CP_FLOAT: return push(s, off, (vt){T_FLOAT, 0});
        case BL_CP_LONG: return push(s, off, (vt){T_LONG, 0});
        case BL_CP_DOUBLE: return push(s, off, (vt){T_DOUBLE, 0});
        case BL_CP_STRING: e = cls(s, "java/lang/String", 16, &v); break;
        case BL_CP_CLASS: e = cls(s, "java/lang/Class", 15, &v); break;
        case BL_CP_METHODTYPE: e = cls(s, "java/lang/invoke/MethodType", 27, &v); break;
        case BL_CP_METHODHANDLE: e = cls(s, "java/lang/invoke/MethodHandle", 29, &v); break;
        case BL_CP_DYNAMIC: {
            const char *d = ref_desc(cf, idx, NULL);
            if (!d)
                return bad(s, off, "bad ldc");
            e = desc_type(s, &d, &v);
            break;
        }
        default:
            return bad(s, off, "bad ldc constant");
        }
        return e ? (e == BL_EFORMAT ? bad(s, off, "bad ldc type") : e) : push(s, off, v);
    }
    if ((op >= 21 && op <= 45) || (op >= 54 && op <= 78)) { /* loads, stores */
        int is_store = op >= 54;
        unsigned base = is_store ? op - 33 : op;  /* map stores onto the load numbering */
        unsigned kind, n;
        if (base <= 25) {
            kind = base - 21;
            n = c[1];
        } else {
            kind = (base - 26) / 4;
            n = (base - 26) % 4;
        }
        static const uint8_t K[5] = {T_INT, T_LONG, T_FLOAT, T_DOUBLE, T_OBJ};
        if (!is_store) {
            if (n >= in->max_locals)
                return bad(s, off, "local index above max_locals");
            v = kind == 4 ? s->L[n] : (vt){K[kind], 0};
            return push(s, off, v);
        }
        uint32_t w = kind == 1 || kind == 3 ? 2 : 1;
        NEED(w);
        s->sp -= w;
        v = kind == 4 ? s->S[s->sp] : (vt){K[kind], 0};
        return store(s, off, n, v);
    }
    if (op >= 46 && op <= 53) { /* xaload */
        NEED(2);
        s->sp -= 2;
        if (op == 50) {
            vt a = s->S[s->sp];
            if (a.tag == T_NULL)
                return push(s, off, a);
            uint32_t n;
            const char *nm = a.tag == T_OBJ ? bl_cpool_class_name(in->pool, a.v, &n) : NULL;
            if (!nm || n < 2 || nm[0] != '[')
                return bad(s, off, "aaload on a non-array");
            if (nm[1] == 'L' && n >= 3)
                e = cls(s, nm + 2, n - 3, &v);
            else if (nm[1] == '[')
                e = cls(s, nm + 1, n - 1, &v);
            else
                return bad(s, off, "aaload on a primitive array");
            return e ? e : push(s, off, v);
        }
        static const uint8_t A[8] = {T_INT, T_LONG, T_FLOAT, T_DOUBLE, 0, T_INT, T_INT, T_INT};
        return push(s, off, (vt){A[op - 46], 0});
    }
    if (op >= 79 && op <= 86) { /* xastore */
        uint32_t w = op == 80 || op == 82 ? 4 : 3;
        NEED(w);
        s->sp -= w;
        return BL_OK;
    }
    if (op >= 87 && op <= 95) { /* pop .. swap */
        static const uint8_t POP[2] = {1, 2};
        if (op <= 88) {
            NEED(POP[op - 87]);
            s->sp -= POP[op - 87];
            return BL_OK;
        }
        if (op == 95) {
            NEED(2);
            vt t = s->S[s->sp - 1];
            s->S[s->sp - 1] = s->S[s->sp - 2];
            s->S[s->sp - 2] = t;
            return BL_OK;
        }
        /* dup(89) dup_x1 dup_x2 dup2(92) dup2_x1 dup2_x2: copy n words below depth */
        uint32_t n = op <= 91 ? 1 : 2, depth = (op - 89) % 3;
        uint32_t below = n + depth; /* words the copy goes under */
        NEED(below);
        if (s->sp + n > in->max_stack)
            return bad(s, off, "stack above max_stack in simulation");
        vt top[2] = {s->S[s->sp - n], s->S[s->sp - 1]};
        memmove(s->S + s->sp - below + n, s->S + s->sp - below, below * sizeof *s->S);
        for (uint32_t i = 0; i < n; i++)
            s->S[s->sp - below + i] = top[i];
        s->sp += n;
        return BL_OK;
    }
    if (op >= 96 && op <= 115) { /* binary arithmetic */
        uint8_t t = ARITH[(op - 96) % 4];
        NEED(2u * (wide(t) ? 2 : 1));
        s->sp -= wide(t) ? 4 : 2;
        return push(s, off, (vt){t, 0});
    }
    if (op >= 116 && op <= 119) /* neg */
        return BL_OK;
    if (op >= 120 && op <= 125) { /* shifts: value, int count */
        uint8_t t = (op - 120) % 2 ? T_LONG : T_INT;
        NEED(wide(t) ? 3u : 2u);
        s->sp -= wide(t) ? 3 : 2;
        return push(s, off, (vt){t, 0});
    }
    if (op >= 126 && op <= 131) { /* and, or, xor */
        uint8_t t = (op - 126) % 2 ? T_LONG : T_INT;
        NEED(wide(t) ? 4u : 2u);
        s->sp -= wide(t) ? 4 : 2;
        return push(s, off, (vt){t, 0});
    }
    if (op >= 133 && op <= 147) { /* conversions */
        static const uint8_t FROM[15] = {T_INT, T_INT, T_INT, T_LONG, T_LONG, T_LONG, T_FLOAT,
                                         T_FLOAT, T_FLOAT, T_DOUBLE, T_DOUBLE, T_DOUBLE,
                                         T_INT, T_INT, T_INT};
        static const uint8_t TO[15] = {T_LONG, T_FLOAT, T_DOUBLE, T_INT, T_FLOAT, T_DOUBLE,
                                       T_INT, T_LONG, T_DOUBLE, T_INT, T_LONG, T_FLOAT,
                                       T_INT, T_INT, T_INT};
        uint32_t w = wide(FROM[op - 133]) ? 2 : 1;
        NEED(w);
        s->sp -= w;
        return push(s, off, (vt){TO[op - 133], 0});
    }
    if (op >= 148 && op <= 152) { /* lcmp, fcmpl/g, dcmpl/g */
        uint32_t w = op == 148 || op >= 151 ? 4 : 2;
        NEED(w);
        s->sp -= w;
        return push(s, off, (vt){T_INT, 0});
    }
    if ((op >= 153 && op <= 158) || op == 198 || op == 199 || op == 194 || op == 195) {
        NEED(1); /* if<cond>, ifnull, ifnonnull, monitorenter/exit */
        s->sp -= 1;
        return BL_OK;
    }
    if (op >= 159 && op <= 166) {
        NEED(2);
        s->sp -= 2;
        return BL_OK;
    }
    if (op >= 178 && op <= 181) { /* get/put static/field */
        const char *d = ref_desc(cf, bl_be16(c + 1), NULL);
        if (!d)
            return bad(s, off, "bad field reference");
        uint32_t w = words_of(d[0]);
        if (op == 179 || op == 181) {
            uint32_t k = w + (op == 181 ? 1 : 0);
            NEED(k);
            s->sp -= k;
            return BL_OK;
        }
        if (op == 180) {
            NEED(1);
            s->sp -= 1;
        }
        e = desc_type(s, &d, &v);
        return e ? (e == BL_EFORMAT ? bad(s, off, "bad field type") : e) : push(s, off, v);
    }
    if (op >= 182 && op <= 186)
        return invoke(s, off, op, bl_be16(c + 1));
    if (op == BL_OP_NEW)
        return push(s, off, (vt){T_UNINIT, (uint16_t)off});
    if (op == 188) { /* newarray */
        static const char *const P[8] = {"[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J"};
        if (c[1] < 4 || c[1] > 11)
            return bad(s, off, "bad newarray type");
        NEED(1);
        s->sp -= 1;
        if ((e = cls(s, P[c[1] - 4], 2, &v)) != BL_OK)
            return e;
        return push(s, off, v);
    }
    if (op == 189) { /* anewarray */
        NEED(1);
        s->sp -= 1;
        uint32_t n;
        const char *nm = bl_cpool_class_name(in->pool, bl_be16(c + 1), &n);
        if (!nm || (e = array_of(s, nm, n, &v)) == BL_EFORMAT)
            return bad(s, off, "bad anewarray class");
        return e ? e : push(s, off, v);
    }
    if (op == 190 || op == 193) { /* arraylength, instanceof */
        NEED(1);
        s->sp -= 1;
        return push(s, off, (vt){T_INT, 0});
    }
    if (op == 192) { /* checkcast */
        NEED(1);
        s->sp -= 1;
        return push(s, off, (vt){T_OBJ, bl_be16(c + 1)});
    }
    if (op == 197) { /* multianewarray */
        NEED(c[3]);
        s->sp -= c[3];
        return push(s, off, (vt){T_OBJ, bl_be16(c + 1)});
    }
    if (op == BL_OP_WIDE) {
        unsigned m = c[1], n = bl_be16(c + 2);
        if (m == 132)
            return BL_OK;
        static const uint8_t K[5] = {T_INT, T_LONG, T_FLOAT, T_DOUBLE, T_OBJ};
        if (m >= 21 && m <= 25) {
            if (n >= in->max_locals)
                return bad(s, off, "local index above max_locals");
            return push(s, off, m == 25 ? s->L[n] : (vt){K[m - 21], 0});
        }
        if (m >= 54 && m <= 58) {
            uint32_t w = m == 55 || m == 57 ? 2 : 1;
            NEED(w);
            s->sp -= w;
            return store(s, off, n, m == 58 ? s->S[s->sp] : (vt){K[m - 54], 0});
        }
    }
    return bad(s, off, "instruction the frame simulation does not handle (jsr/ret?)");
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */

static int cmp_frame(const void *a, const void *b)
{
    const frame *p = a, *q = b;
    if (p->off != q->off)
        return p->off < q->off ? -1 : 1;
    return p->at_body < q->at_body ? -1 : p->at_body > q->at_body;
}

static bl_err put16(bl_buf *o, uint32_t v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    return bl_buf_append(o, b, 2);
}

static bl_err put_vts(st *s, const vt *v, uint32_t n, bl_buf *o)
{
    bl_err e = BL_OK;
    for (uint32_t i = 0; i < n && !e; i++) {
        e = bl_buf_putc(o, (char)v[i].tag);
        if (!e && v[i].tag == T_OBJ)
            e = put16(o, v[i].v);
        else if (!e && v[i].tag == T_UNINIT) {
            uint32_t nv = bl_pcmap_body(s->in->map, v[i].v);
            if (nv == UINT32_MAX)
                return bad(s, v[i].v, "Uninitialized offset is not an instruction");
            e = put16(o, nv);
        }
    }
    return e;
}

static int same_vts(const vt *a, const vt *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i].tag != b[i].tag || a[i].v != b[i].v)
            return 0;
    return 1;
}

static bl_err encode(st *s, bl_buf *o)
{
    if (s->nf > 65536)
        return bad(s, 0, "too many frames");
    bl_err e = put16(o, (uint32_t)(s->nf - 1));
    uint32_t prev_new = 0;
    for (size_t k = 1; k < s->nf && !e; k++) {
        const frame *p = &s->f[k - 1], *f = &s->f[k];
        uint32_t nw = f->off == UINT32_MAX ? s->in->map->code_end
                      : f->at_body     ? bl_pcmap_body(s->in->map, f->off)
                                       : bl_pcmap_lab(s->in->map, f->off);
        if (nw == UINT32_MAX || (k > 1 && nw <= prev_new))
            return bad(s, f->off, "frame offset is not an instruction");
        uint32_t d = k > 1 ? nw - prev_new - 1 : nw;
        prev_new = nw;
        const vt *pl = s->t + p->loc, *fl = s->t + f->loc, *fs = s->t + f->stk;
        uint32_t common = p->nloc < f->nloc ? p->nloc : f->nloc;
        int prefix = same_vts(pl, fl, common);
        if (prefix && p->nloc == f->nloc && f->nstk <= 1) {
            uint8_t base = f->nstk ? 64 : 0;
            if (d < 64) {
                e = bl_buf_putc(o, (char)(base + d));
            } else {
                e = bl_buf_putc(o, (char)(f->nstk ? 247 : 251));
                if (!e)
                    e = put16(o, d);
            }
            if (!e && f->nstk)
                e = put_vts(s, fs, 1, o);
        } else if (prefix && f->nstk == 0 && f->nloc > p->nloc && f->nloc - p->nloc <= 3) {
            e = bl_buf_putc(o, (char)(251 + f->nloc - p->nloc));
            if (!e)
                e = put16(o, d);
            if (!e)
                e = put_vts(s, fl + p->nloc, f->nloc - p->nloc, o);
        } else if (prefix && f->nstk == 0 && p->nloc > f->nloc && p->nloc - f->nloc <= 3) {
            e = bl_buf_putc(o, (char)(251 - (p->nloc - f->nloc)));
            if (!e)
                e = put16(o, d);
        } else {
            e = bl_buf_putc(o, (char)255);
            if (!e)
                e = put16(o, d);
            if (!e)
                e = put16(o, f->nloc);
            if (!e)
                e = put_vts(s, fl, f->nloc, o);
            if (!e)
                e = put16(o, f->nstk);
            if (!e)
                e = put_vts(s, fs, f->nstk, o);
        }
    }
    return e;
}

/* ------------------------------------------------------------------------ */

static bl_err rebuild(st *s, bl_buf *out)
{
    const bl_frames_in *in = s->in;
    frame *f;
    bl_err e = new_frame(s, 0, &f);
    if (!e)
        e = initial_frame(s, &s->f[0]);
    if (!e)
        e = decode_old(s);
    if (e)
        return e;
    size_t n_old = s->nf; /* f[0] is the implicit initial frame */
    for (size_t k = 2; k < n_old; k++)
        if (s->f[k].off <= s->f[k - 1].off)
            return bad(s, s->f[k].off, "frames out of order");
    /* j: the last old frame (index into f, 0 = initial) before the target
     * instruction (at its `lab`), or at or before it (at its `body`) */
    size_t j = 0;
    for (uint32_t q = 0; q < in->n_targets; q++) {
        uint32_t t = in->targets[q] >> 1, at_body = in->targets[q] & 1u;
        if (t >= in->n_insns || (q > 0 && in->targets[q] <= in->targets[q - 1]))
            return bad(s, 0, "bad frame target");
        uint32_t toff = in->old_off[t];
        while (j + 1 < n_old && s->f[j + 1].off < toff)
            j++;
        if (j + 1 < n_old && s->f[j + 1].off == toff) {
            if (!at_body)
                continue; /* the target has a frame already */
            j++; /* at the body: the same frame as at the lab */
        }
        uint32_t first = 0;
        if (j > 0) {
            int32_t ix = s->f[j].off < in->map->old_len ? in->map->idx_of[s->f[j].off] : -1;
            if (ix < 0)
                return bad(s, s->f[j].off, "frame offset is not an instruction");
            first = (uint32_t)ix;
        }
        frame from = s->f[j];
        if ((e = load_frame(s, &from, toff)) != BL_OK)
            return e;
        for (uint32_t i = first; i < t; i++)
            if ((e = step(s, in->old_off[i])) != BL_OK)
                return e;
        if ((e = save_frame(s, toff, at_body)) != BL_OK)
            return e;
    }
    qsort(s->f + 1, s->nf - 1, sizeof *s->f, cmp_frame);
    /* the handler: no locals, [java/lang/Throwable] */
    if ((e = new_frame(s, UINT32_MAX, &f)) != BL_OK)
        return e;
    f->loc = f->stk = (uint32_t)s->nt;
    f->nstk = 1;
    if ((e = push_t(s, (vt){T_OBJ, in->throwable})) != BL_OK)
        return e;
    return encode(s, out);
}

bl_err bl_frames_rebuild(const bl_frames_in *in, bl_buf *out, char *err, size_t errlen)
{
    st s;
    memset(&s, 0, sizeof s);
    s.in = in;
    s.err = err;
    s.errlen = errlen;
    s.L = malloc(((size_t)in->max_locals + 1) * sizeof *s.L);
    s.S = malloc(((size_t)in->max_stack + 1) * sizeof *s.S);
    bl_err e = s.L && s.S ? rebuild(&s, out) : BL_ENOMEM;
    free(s.L);
    free(s.S);
    free(s.t);
    free(s.f);
    return e;
}
