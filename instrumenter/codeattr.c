/*
 * codeattr.c — code offsets inside a Code attribute's attributes (see
 * codeattr.h).
 *
 * Input formats (JVMS §4.7), big-endian; each function gets the attribute
 * body after attribute_length:
 *   LineNumberTable         u2 n; { u2 start_pc; u2 line_number; }[n]
 *   LocalVariable(Type)Table u2 n; { u2 start_pc; u2 length; u2 name; u2 desc; u2 index; }[n]
 *   StackMapTable           u2 n; stack_map_frame[n] (offset_delta encoding, §4.7.4)
 *   Runtime*TypeAnnotations u2 n; type_annotation[n] (§4.7.20)
 *
 * Invariants: every read is preceded by a check of the bytes left (`need`);
 * output is appended to a caller buffer in the same layout, only offsets
 * change (and for StackMapTable the frame type byte when a delta no longer
 * fits the short forms). Nesting of element values is limited to 64 levels.
 */
#include "codeattr.h"

#include "bufx.h"
#include "bytecode.h"

#include <stdio.h>
#include <string.h>

#define MAX_NEST 64

typedef struct rd {
    const uint8_t *p;
    uint32_t len, pos;
    char *err;
    size_t errlen;
    const char *what;
} rd;

static bl_err bad(rd *r, const char *msg)
{
    if (r->errlen)
        snprintf(r->err, r->errlen, "%s: %s (attribute byte %u)", r->what, msg,
                 (unsigned)r->pos);
    return BL_EFORMAT;
}

static int need(const rd *r, uint32_t n) { return r->len - r->pos >= n; }
static uint16_t g16(rd *r)
{
    uint16_t v = bl_be16(r->p + r->pos);
    r->pos += 2;
    return v;
}

static bl_err p16(bl_buf *o, uint32_t v) { return bl_bx_u16(o, v); }

/* Writes v big-endian at out offset at (already appended). */
static void set16(bl_buf *o, size_t at, uint32_t v)
{
    o->data[at] = (char)(uint8_t)(v >> 8);
    o->data[at + 1] = (char)(uint8_t)v;
}

/* Maps a [start, start+length) range; end may be the old code end, which
 * maps to the new code end. */
static int map_range(const bl_pcmap *m, uint32_t start, uint32_t length, uint32_t *ns,
                     uint32_t *nl)
{
    uint32_t end = start + length;
    if (end > m->old_len || (start >= m->old_len && !(start == m->old_len && length == 0)))
        return 0;
    if (start == m->old_len) { /* an empty range at the very end */
        *ns = m->new_len;
        *nl = 0;
        return 1;
    }
    uint32_t s = bl_pcmap_lab(m, start);
    uint32_t e = end == m->old_len ? m->new_len : bl_pcmap_lab(m, end);
    if (s == UINT32_MAX || e == UINT32_MAX || e < s)
        return 0;
    *ns = s;
    *nl = e - s;
    return 1;
}

bl_err bl_ca_lines(const bl_pcmap *m, const uint8_t *in, uint32_t len, bl_buf *out, char *err,
                   size_t errlen)
{
    rd r = {in, len, 0, err, errlen, "LineNumberTable"};
    if (!need(&r, 2))
        return bad(&r, "truncated");
    uint16_t n = g16(&r);
    if (len != 2u + 4u * n)
        return bad(&r, "length does not match the entry count");
    bl_err e = p16(out, n);
    for (uint16_t k = 0; k < n && !e; k++) {
        uint16_t pc = g16(&r), line = g16(&r);
        uint32_t np = pc < m->old_len ? bl_pcmap_lab(m, pc) : UINT32_MAX;
        if (np == UINT32_MAX)
            return bad(&r, "start_pc is not an instruction boundary");
        e = p16(out, np);
        if (!e)
            e = p16(out, line);
    }
    return e;
}

bl_err bl_ca_locals(const bl_pcmap *m, const uint8_t *in, uint32_t len, bl_buf *out,
                    char *err, size_t errlen)
{
    rd r = {in, len, 0, err, errlen, "LocalVariableTable"};
    if (!need(&r, 2))
        return bad(&r, "truncated");
    uint16_t n = g16(&r);
    if (len != 2u + 10u * n)
        return bad(&r, "length does not match the entry count");
    size_t at = out->len;
    bl_err e = bl_bx_app(out, in, len);
    if (e)
        return e;
    for (uint16_t k = 0; k < n; k++) {
        uint16_t s = g16(&r), l = g16(&r);
        r.pos += 6;
        uint32_t ns, nl;
        if (!map_range(m, s, l, &ns, &nl))
            return bad(&r, "range is not on instruction boundaries");
        set16(out, at + 2 + 10u * k, ns);
        set16(out, at + 4 + 10u * k, nl);
    }
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Type annotations: walk in the copy, patching offsets in place             */

typedef struct ta {
    rd r;
    const bl_pcmap *m;
    bl_buf *out;
    size_t base; /* where the copy of `in` starts in out */
} ta;

static bl_err skip_value(ta *t, int depth);

static bl_err skip_pairs(ta *t, int depth)
{
    rd *r = &t->r;
    if (!need(r, 2))
        return bad(r, "truncated annotation");
    uint16_t n = g16(r);
    for (uint16_t k = 0; k < n; k++) {
        if (!need(r, 2))
            return bad(r, "truncated element_value_pair");
        r->pos += 2;
        bl_err e = skip_value(t, depth + 1);
        if (e)
            return e;
    }
    return BL_OK;
}

static bl_err skip_value(ta *t, int depth)
{
    rd *r = &t->r;
    if (depth > MAX_NEST)
        return bad(r, "annotation nesting too deep");
    if (!need(r, 1))
        return bad(r, "truncated element_value");
    uint8_t tag = r->p[r->pos++];
    switch (tag) {
    case 'B': case 'C': case 'D': case 'F': case 'I': case 'J': case 'S': case 'Z': case 's':
    case 'c':
        if (!need(r, 2))
            return bad(r, "truncated element_value");
        r->pos += 2;
        return BL_OK;
    case 'e':
        if (!need(r, 4))
            return bad(r, "truncated element_value");
        r->pos += 4;
        return BL_OK;
    case '@':
        if (!need(r, 2))
            return bad(r, "truncated annotation");
        r->pos += 2;
        return skip_pairs(t, depth);
    case '[': {
        if (!need(r, 2))
            return bad(r, "truncated array value");
        uint16_t n = g16(r);
        for (uint16_t k = 0; k < n; k++) {
            bl_err e = skip_value(t, depth + 1);
            if (e)
                return e;
        }
        return BL_OK;
    }
    default:
        return bad(r, "unknown element_value tag");
    }
}

static bl_err one_type_anno(ta *t)
{
    rd *r = &t->r;
    if (!need(r, 1))
        return bad(r, "truncated type_annotation");
    uint8_t target = r->p[r->pos++];
    if (target == 0x40 || target == 0x41) { /* localvar / resource_variable */
        if (!need(r, 2))
            return bad(r, "truncated localvar_target");
        uint16_t n = g16(r);
        if (!need(r, 6u * n))
            return bad(r, "truncated localvar_target");
        for (uint16_t k = 0; k < n; k++) {
            uint32_t at = r->pos;
            uint16_t s = g16(r), l = g16(r);
            r->pos += 2;
            uint32_t ns, nl;
            if (!map_range(t->m, s, l, &ns, &nl))
                return bad(r, "localvar range is not on instruction boundaries");
            set16(t->out, t->base + at, ns);
            set16(t->out, t->base + at + 2, nl);
        }
    } else if (target == 0x42) { /* catch_target: exception table index, unchanged */
        if (!need(r, 2))
            return bad(r, "truncated catch_target");
        r->pos += 2;
    } else if (target >= 0x43 && target <= 0x4B) { /* offset / type_argument targets */
        uint32_t sz = target >= 0x47 ? 3 : 2;
        if (!need(r, sz))
            return bad(r, "truncated offset_target");
        uint32_t at = r->pos;
        uint32_t no = bl_pcmap_body(t->m, g16(r));
        if (no == UINT32_MAX)
            return bad(r, "offset is not an instruction boundary");
        set16(t->out, t->base + at, no);
        r->pos = at + sz;
    } else {
        return bad(r, "target type not allowed in a Code attribute");
    }
    if (!need(r, 1))
        return bad(r, "truncated type_path");
    uint32_t pl = r->p[r->pos++];
    if (!need(r, pl * 2 + 2))
        return bad(r, "truncated type_path");
    r->pos += pl * 2 + 2; /* path, type_index */
    return skip_pairs(t, 0);
}

bl_err bl_ca_type_annos(const bl_pcmap *m, const uint8_t *in, uint32_t len, bl_buf *out,
                        char *err, size_t errlen)
{
    ta t = {{in, len, 0, err, errlen, "type annotations"}, m, out, out->len};
    bl_err e = bl_bx_app(out, in, len);
    if (e)
        return e;
    if (!need(&t.r, 2))
        return bad(&t.r, "truncated");
    uint16_t n = g16(&t.r);
    for (uint16_t k = 0; k < n; k++)
        if ((e = one_type_anno(&t)) != BL_OK)
            return e;
    if (t.r.pos != len)
        return bad(&t.r, "length does not match the contents");
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* StackMapTable                                                             */

/* Copies n verification_type_info entries, moving Uninitialized offsets. */
static bl_err copy_vtypes(rd *r, const bl_pcmap *m, uint32_t n, bl_buf *out)
{
    for (uint32_t k = 0; k < n; k++) {
        if (!need(r, 1))
            return bad(r, "truncated verification_type_info");
        uint8_t tag = r->p[r->pos++];
        bl_err e = bl_bx_u8(out, (uint8_t)tag);
        if (e)
            return e;
        if (tag <= 6)
            continue;
        if (tag > 8 || !need(r, 2))
            return bad(r, "bad verification_type_info");
        uint16_t v = g16(r);
        if (tag == 8) { /* Uninitialized(offset of the `new`) */
            uint32_t nv = bl_pcmap_body(m, v);
            if (nv == UINT32_MAX)
                return bad(r, "Uninitialized offset is not an instruction boundary");
            v = (uint16_t)nv;
        }
        if ((e = p16(out, v)) != BL_OK)
            return e;
    }
    return BL_OK;
}

bl_err bl_ca_frames(const bl_pcmap *m, const uint8_t *in, uint32_t len, const uint8_t *tail,
                    uint32_t tail_len, uint32_t tail_at, bl_buf *out, uint16_t *n_out,
                    char *err, size_t errlen)
{
    rd r = {in, len, 0, err, errlen, "StackMapTable"};
    uint16_t n = 0;
    if (in) {
        if (!need(&r, 2))
            return bad(&r, "truncated");
        n = g16(&r);
    }
    if (n == 65535)
        return bad(&r, "no room for one more frame");
    bl_err e = p16(out, n + 1u);
    uint32_t old = 0, prev_new = 0;
    for (uint16_t k = 0; k < n && !e; k++) {
        if (!need(&r, 1))
            return bad(&r, "truncated frame");
        uint8_t ft = r.p[r.pos++];
        uint32_t delta;
        if (ft < 128)
            delta = ft & 63u;
        else if (ft < 247)
            return bad(&r, "reserved frame type");
        else if (!need(&r, 2))
            return bad(&r, "truncated frame");
        else
            delta = g16(&r);
        old = k ? old + delta + 1 : delta;
        uint32_t nw = old < m->old_len ? bl_pcmap_lab(m, old) : UINT32_MAX;
        if (nw == UINT32_MAX)
            return bad(&r, "frame offset is not an instruction boundary");
        uint32_t nd = k ? nw - prev_new - 1 : nw;
        prev_new = nw;
        if (ft < 64 || ft == 251) {
            e = nd < 64 ? bl_bx_u8(out, (uint8_t)nd) : bl_bx_u8(out, (uint8_t)251);
            if (!e && nd >= 64)
                e = p16(out, nd);
        } else if (ft < 128 || ft == 247) {
            e = nd < 64 ? bl_bx_u8(out, (uint8_t)(64 + nd)) : bl_bx_u8(out, (uint8_t)247);
            if (!e && nd >= 64)
                e = p16(out, nd);
            if (!e)
                e = copy_vtypes(&r, m, 1, out);
        } else if (ft < 255) { /* chop 248..250, append 252..254 */
            e = bl_bx_u8(out, (uint8_t)ft);
            if (!e)
                e = p16(out, nd);
            if (!e && ft > 251)
                e = copy_vtypes(&r, m, ft - 251u, out);
        } else {
            e = bl_bx_u8(out, (uint8_t)255);
            if (!e)
                e = p16(out, nd);
            for (int part = 0; part < 2 && !e; part++) {
                if (!need(&r, 2))
                    return bad(&r, "truncated full_frame");
                uint16_t cnt = g16(&r);
                e = p16(out, cnt);
                if (!e)
                    e = copy_vtypes(&r, m, cnt, out);
            }
        }
    }
    if (e)
        return e;
    if (r.pos != len)
        return bad(&r, "length does not match the frames");
    if (n && tail_at <= prev_new)
        return bad(&r, "frame after the code end");
    uint32_t td = n ? tail_at - prev_new - 1 : tail_at;
    e = bl_bx_u8(out, (uint8_t)255);
    if (!e)
        e = p16(out, td);
    if (!e)
        e = bl_bx_app(out, tail, tail_len);
    *n_out = (uint16_t)(n + 1u);
    return e;
}
