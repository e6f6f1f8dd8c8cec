/*
 * netsite.c — routing the app's network call sites through the runtime
 * (see netsite.h). Spec: JVMS §4.4.2 (Methodref), §4.10.1 (type checking:
 * invokestatic of the same argument and return types leaves every frame as
 * it was), §6.5 (new, dup, invokespecial, invokestatic, nop).
 */
#include "netsite.h"

#include "bufx.h"
#include "bytecode.h"
#include "cpool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP_NOP 0
#define OP_DUP 89

#define HOOK_OKHTTP "io/beatline/runtime/net/OkHttp"
#define HOOK_URL "io/beatline/runtime/net/Url"

/* What a Methodref of the pool is to us. */
enum { K_NONE, K_BUILD, K_OPEN0, K_OPEN1, K_INIT };

typedef struct patch {
    uint32_t off;   /* absolute offset in the class bytes */
    uint8_t n;      /* bytes */
    uint8_t b[7];
} patch;

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

/* The kind of Methodref i (K_NONE for anything else). */
static int ref_kind(const bl_cf *cf, const uint8_t *d, uint32_t i)
{
    if (bl_cf_pool_tag(cf, i) != BL_CP_METHODREF)
        return K_NONE;
    const uint8_t *e = d + bl_cf_pool_off(cf, i);
    const char *owner = bl_cf_class_name(cf, rd16(e + 1));
    uint16_t nat = rd16(e + 3);
    if (!owner || bl_cf_pool_tag(cf, nat) != BL_CP_NAMEANDTYPE)
        return K_NONE;
    const uint8_t *t = d + bl_cf_pool_off(cf, nat);
    const char *name = bl_cf_utf8(cf, rd16(t + 1), NULL);
    const char *desc = bl_cf_utf8(cf, rd16(t + 3), NULL);
    if (!name || !desc)
        return K_NONE;
    if (!strcmp(owner, "okhttp3/OkHttpClient$Builder") && !strcmp(name, "build") &&
        !strcmp(desc, "()Lokhttp3/OkHttpClient;"))
        return K_BUILD;
    if (!strcmp(owner, "okhttp3/OkHttpClient") && !strcmp(name, "<init>") && !strcmp(desc, "()V"))
        return K_INIT;
    if (!strcmp(owner, "java/net/URL") && !strcmp(name, "openConnection")) {
        if (!strcmp(desc, "()Ljava/net/URLConnection;"))
            return K_OPEN0;
        if (!strcmp(desc, "(Ljava/net/Proxy;)Ljava/net/URLConnection;"))
            return K_OPEN1;
    }
    return K_NONE;
}

/* 1 when offset x of the method is a branch or switch target, a handler, or
 * an exception range's start or end (such an offset may carry a frame or
 * split a range: the `new` pattern is not rewritten across it). */
static int is_edge(const uint8_t *code, uint32_t len, const uint8_t *exc, uint16_t exc_n, uint32_t x)
{
    for (uint32_t k = 0; k < exc_n; k++) {
        const uint8_t *e = exc + 8 * k;
        if (rd16(e) == x || rd16(e + 2) == x || rd16(e + 4) == x)
            return 1;
    }
    for (uint32_t off = 0; off < len;) {
        uint32_t l = bl_bc_insn_len(code, len, off);
        if (!l)
            return 1; /* undecodable: the probe rewriter reports it */
        unsigned op = code[off];
        if (bl_bc_is_short_branch(op)) {
            if ((int64_t)off + bl_bes16(code + off + 1) == (int64_t)x)
                return 1;
        } else if (op == BL_OP_GOTO_W || op == BL_OP_JSR_W) {
            if ((int64_t)off + bl_bes32(code + off + 1) == (int64_t)x)
                return 1;
        } else if (op == BL_OP_TABLESWITCH || op == BL_OP_LOOKUPSWITCH) {
            uint32_t q = off + 1 + bl_bc_switch_pad(off);
            uint32_t cnt = op == BL_OP_TABLESWITCH
                               ? (uint32_t)(bl_bes32(code + q + 8) - bl_bes32(code + q + 4)) + 1
                               : (uint32_t)bl_bes32(code + q + 4);
            uint32_t step = op == BL_OP_TABLESWITCH ? 4 : 8;
            for (uint32_t k = 0; k <= cnt; k++) {
                uint32_t at = k == cnt ? q : q + 12 + k * step;
                if ((int64_t)off + bl_bes32(code + at) == (int64_t)x)
                    return 1;
            }
        }
        off += l;
    }
    return 0;
}

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Bytes of the verification_type_info at p (end: the attribute's end), 0 when it does not fit. */
static uint32_t vtype_len(const uint8_t *p, const uint8_t *end)
{
    if (p >= end)
        return 0;
    uint32_t n = *p == 7 || *p == 8 ? 3 : *p <= 6 ? 1 : 0;
    return n && (size_t)(end - p) >= n ? n : 0;
}

/* 1 when the method's StackMapTable has a frame at offset x, or cannot be
 * read (JVMS §4.7.4). A frame may stand at any instruction, not only at a
 * branch target: one at the `dup` or the `invokespecial` of a new
 * OkHttpClient sequence names the `new`'s Uninitialized type, which the
 * rewrite would take away. */
static int frame_at(const bl_cf *cf, const uint8_t *d, size_t len, const bl_cf_mraw *r, uint32_t x)
{
    uint32_t a = r->attrs;
    for (uint16_t k = 0; k < r->attr_count; k++) {
        if ((size_t)a + 6 > len)
            return 1;
        uint32_t alen = rd32(d + a + 2);
        if ((size_t)a + 6 + alen > len)
            return 1;
        uint32_t n = 0;
        const char *name = bl_cf_utf8(cf, rd16(d + a), &n);
        if (name && n == 13 && !memcmp(name, "StackMapTable", 13)) {
            const uint8_t *p = d + a + 6, *end = p + alen;
            if (alen < 2)
                return 1;
            uint32_t cnt = rd16(p);
            p += 2;
            int64_t off = -1;
            for (uint32_t i = 0; i < cnt; i++) {
                if (p >= end)
                    return 1;
                unsigned t = *p++;
                uint32_t delta, nv = 0, l;
                if (t <= 63) {
                    delta = t;
                } else if (t <= 127) {
                    delta = t - 64;
                    nv = 1;
                } else if (t < 247) {
                    return 1; /* reserved */
                } else {
                    if (end - p < 2)
                        return 1;
                    delta = rd16(p);
                    p += 2;
                    nv = t == 247 ? 1 : t >= 252 && t <= 254 ? t - 251 : 0;
                }
                if (t == 255) { /* full_frame: locals, then stack */
                    for (int part = 0; part < 2; part++) {
                        if (end - p < 2)
                            return 1;
                        uint32_t m = rd16(p);
                        p += 2;
                        for (uint32_t j = 0; j < m; j++) {
                            if (!(l = vtype_len(p, end)))
                                return 1;
                            p += l;
                        }
                    }
                }
                for (uint32_t j = 0; j < nv; j++) {
                    if (!(l = vtype_len(p, end)))
                        return 1;
                    p += l;
                }
                off = off < 0 ? (int64_t)delta : off + delta + 1;
                if (off == (int64_t)x)
                    return 1;
                if (off > (int64_t)x)
                    break;
            }
        }
        a += 6 + alen;
    }
    return 0;
}

bl_err bl_net_rewrite(const bl_cf *cf, bl_buf *out, size_t *n_sites, char *err, size_t errlen)
{
    *n_sites = 0;
    if (errlen)
        err[0] = '\0';
    const char *cls = bl_cf_name(cf);
    if (!strncmp(cls, "okhttp3/", 8))
        return BL_OK;
    size_t len;
    const uint8_t *d = bl_cf_bytes(cf, &len);
    uint32_t pc = bl_cf_pool_count(cf);
    uint8_t *kind = calloc(pc ? pc : 1, 1);
    if (!kind)
        return BL_ENOMEM;
    int any = 0;
    for (uint32_t i = 1; i < pc; i++) {
        kind[i] = (uint8_t)ref_kind(cf, d, i);
        any |= kind[i] != K_NONE;
    }
    if (!any) {
        free(kind);
        return BL_OK;
    }
    bl_cpool pool;
    bl_err e = bl_cpool_init(&pool, cf);
    if (e) {
        free(kind);
        return e;
    }
    uint16_t m_build = 0, m_new = 0, m_open0 = 0, m_open1 = 0;
    patch *ps = NULL;
    size_t np = 0, cap = 0;
    size_t nm = bl_cf_method_count(cf);
    for (size_t mi = 0; mi < nm && !e; mi++) {
        const bl_cf_mraw *r = bl_cf_method_raw(cf, mi);
        if (!r->code_attr || !r->code_len)
            continue;
        const uint8_t *code = d + r->code;
        uint32_t clen = r->code_len;
        for (uint32_t off = 0; off < clen && !e;) {
            uint32_t l = bl_bc_insn_len(code, clen, off);
            if (!l)
                break; /* undecodable: left to the probe rewriter */
            unsigned op = code[off];
            patch p = {0, 0, {0}};
            if (op == BL_OP_INVOKEVIRTUAL) {
                uint16_t ix = rd16(code + off + 1);
                int k = ix < pc ? kind[ix] : K_NONE;
                uint16_t *slot = k == K_BUILD ? &m_build : k == K_OPEN0 ? &m_open0 : k == K_OPEN1 ? &m_open1 : NULL;
                if (slot) {
                    if (!*slot)
                        e = k == K_BUILD
                                ? bl_cpool_methodref(&pool, HOOK_OKHTTP, "build",
                                                     "(Lokhttp3/OkHttpClient$Builder;)Lokhttp3/OkHttpClient;", slot)
                            : k == K_OPEN0
                                ? bl_cpool_methodref(&pool, HOOK_URL, "openConnection",
                                                     "(Ljava/net/URL;)Ljava/net/URLConnection;", slot)
                                : bl_cpool_methodref(&pool, HOOK_URL, "openConnection",
                                                     "(Ljava/net/URL;Ljava/net/Proxy;)Ljava/net/URLConnection;",
                                                     slot);
                    p = (patch){r->code + off, 3, {BL_OP_INVOKESTATIC, (uint8_t)(*slot >> 8), (uint8_t)*slot}};
                }
            } else if (op == BL_OP_NEW && off + 7 <= clen && code[off + 3] == OP_DUP &&
                       code[off + 4] == BL_OP_INVOKESPECIAL) {
                const char *cn = bl_cf_class_name(cf, rd16(code + off + 1));
                uint16_t ix = rd16(code + off + 5);
                if (cn && !strcmp(cn, "okhttp3/OkHttpClient") && ix < pc && kind[ix] == K_INIT &&
                    !is_edge(code, clen, d + r->exc, r->exc_count, off + 3) &&
                    !is_edge(code, clen, d + r->exc, r->exc_count, off + 4) && !frame_at(cf, d, len, r, off + 3) &&
                    !frame_at(cf, d, len, r, off + 4)) {
                    if (!m_new)
                        e = bl_cpool_methodref(&pool, HOOK_OKHTTP, "newClient", "()Lokhttp3/OkHttpClient;",
                                               &m_new);
                    p = (patch){r->code + off, 7,
                                {BL_OP_INVOKESTATIC, (uint8_t)(m_new >> 8), (uint8_t)m_new, OP_NOP, OP_NOP,
                                 OP_NOP, OP_NOP}};
                    l = 7;
                }
            }
            if (!e && p.n) {
                if (np == cap) {
                    size_t nc = cap ? cap * 2 : 8;
                    patch *g = realloc(ps, nc * sizeof *g);
                    if (!g) {
                        e = BL_ENOMEM;
                        break;
                    }
                    ps = g;
                    cap = nc;
                }
                ps[np++] = p;
            }
            off += l;
        }
    }
    if (!e && np) {
        uint32_t pe = bl_cf_pool_end(cf);
        uint32_t count = pc + bl_cpool_added(&pool);
        size_t base = 0;
        if ((e = bl_bx_app(out, d, 8)) == BL_OK && (e = bl_bx_u16(out, count)) == BL_OK &&
            (e = bl_bx_app(out, d + 10, pe - 10)) == BL_OK &&
            (e = bl_bx_app(out, pool.extra.data, pool.extra.len)) == BL_OK) {
            base = out->len;
            e = bl_bx_app(out, d + pe, len - pe);
        }
        for (size_t k = 0; k < np && !e; k++)
            memcpy(out->data + base + (ps[k].off - pe), ps[k].b, ps[k].n);
        if (!e)
            *n_sites = np;
    }
    if (e == BL_ETOOBIG && errlen)
        snprintf(err, errlen, "%s: constant pool would exceed 65535 entries", cls);
    free(ps);
    free(kind);
    bl_cpool_cleanup(&pool);
    return e;
}
