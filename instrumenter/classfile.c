/*
 * classfile.c — parsing one class file (JVMS §4) into the bl_cf model.
 *
 * Input layout (JVMS §4.1), all integers big-endian:
 *
 *   u4 magic 0xCAFEBABE, u2 minor, u2 major, u2 constant_pool_count,
 *   cp_info[count-1] (Long/Double take two slots), u2 access_flags,
 *   u2 this_class, u2 super_class, u2 interfaces_count, u2[interfaces_count],
 *   u2 fields_count, field_info[], u2 methods_count, method_info[],
 *   u2 attributes_count, attribute_info[]          — and nothing after.
 *   field_info / method_info: u2 access, u2 name, u2 descriptor,
 *   u2 attributes_count, attribute_info[]; attribute_info: u2 name, u4 length,
 *   u1[length].
 *
 * Invariants after a successful parse:
 *   - every offset recorded lies inside the input and every length was
 *     checked against the bytes left (by subtraction, so nothing wraps);
 *   - every constant-pool reference inside the pool (Class -> Utf8, refs ->
 *     Class + NameAndType, ...) points at an entry of the right tag;
 *   - this_class, super_class, field and method names/descriptors, attribute
 *     names resolve to the right tags;
 *   - a method has at most one Code attribute; its code_length is 1..65535,
 *     its code[] decodes instruction by instruction up to exactly code_length,
 *     its exception table and attributes fit exactly in the attribute;
 *   - the file ends exactly after the class attributes.
 * Branch targets and exception-table pcs are checked by the rewriter, which
 * needs the instruction map anyway.
 *
 * Every Utf8 entry is copied once into one NUL-terminated string table, so
 * names handed out are C strings owned by the bl_cf.
 */
#include "classfile.h"

#include "bytecode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bl_cf {
    const uint8_t *data;
    size_t len;
    uint16_t minor, major, access, this_class, super_class;
    uint16_t n_interfaces;
    uint32_t interfaces; /* offset of interfaces[0] (u2 Class indexes, checked) */
    uint16_t pool_count;
    uint32_t pool_end;
    uint8_t *tag;      /* [pool_count] */
    uint32_t *off;     /* [pool_count] offset of the tag byte */
    uint32_t *str;     /* [pool_count] offset into strtab for Utf8 entries */
    uint32_t *slen;    /* [pool_count] byte length of Utf8 entries */
    char *strtab;
    uint32_t methods_off, methods_end;
    size_t n_methods;
    bl_cf_method *methods;
    bl_cf_mraw *raw;
};

/* Parse state: the cursor `pos` only grows and never passes len. */
typedef struct pctx {
    const uint8_t *d;
    size_t len, pos;
    char *err;
    size_t errlen;
    bl_cf *cf;
} pctx;

static bl_err fail(pctx *c, size_t at, const char *what)
{
    if (c->errlen)
        snprintf(c->err, c->errlen, "%s (byte offset %zu)", what, at);
    return BL_EFORMAT;
}

static bl_err mfail(pctx *c, const char *mname, size_t at, const char *what)
{
    if (c->errlen)
        snprintf(c->err, c->errlen, "method %s: %s (byte offset %zu)", mname, what, at);
    return BL_EFORMAT;
}

static int need(const pctx *c, size_t n) { return c->len - c->pos >= n; }

static uint16_t rd16(pctx *c)
{
    uint16_t v = bl_be16(c->d + c->pos);
    c->pos += 2;
    return v;
}

static uint32_t rd32(pctx *c)
{
    uint32_t v = bl_be32(c->d + c->pos);
    c->pos += 4;
    return v;
}

static int is_tag(const bl_cf *cf, uint32_t i, uint8_t t)
{
    return i > 0 && i < cf->pool_count && cf->tag[i] == t;
}

/* ------------------------------------------------------------------------ */
/* Constant pool                                                             */

static bl_err parse_pool(pctx *c)
{
    bl_cf *cf = c->cf;
    if (!need(c, 2))
        return fail(c, c->pos, "truncated before constant_pool_count");
    uint16_t n = rd16(c);
    if (n == 0)
        return fail(c, c->pos - 2, "constant_pool_count is 0");
    cf->pool_count = n;
    cf->tag = calloc(n, 1);
    cf->off = calloc(n, sizeof *cf->off);
    cf->str = calloc(n, sizeof *cf->str);
    cf->slen = calloc(n, sizeof *cf->slen);
    if (!cf->tag || !cf->off || !cf->str || !cf->slen)
        return BL_ENOMEM;
    size_t strbytes = 0;
    for (uint32_t i = 1; i < n; i++) {
        size_t at = c->pos;
        if (!need(c, 1))
            return fail(c, at, "truncated inside the constant pool");
        uint8_t t = c->d[c->pos++];
        size_t body;
        switch (t) {
        case BL_CP_UTF8:
            if (!need(c, 2))
                return fail(c, at, "truncated Utf8 entry");
            body = 2u + bl_be16(c->d + c->pos);
            strbytes += body - 1; /* bytes + NUL */
            break;
        case BL_CP_INTEGER: case BL_CP_FLOAT: case BL_CP_FIELDREF: case BL_CP_METHODREF:
        case BL_CP_IMETHODREF: case BL_CP_NAMEANDTYPE: case BL_CP_DYNAMIC:
        case BL_CP_INVOKEDYNAMIC:
            body = 4;
            break;
        case BL_CP_LONG: case BL_CP_DOUBLE:
            body = 8;
            break;
        case BL_CP_CLASS: case BL_CP_STRING: case BL_CP_METHODTYPE: case BL_CP_MODULE:
        case BL_CP_PACKAGE:
            body = 2;
            break;
        case BL_CP_METHODHANDLE:
            body = 3;
            break;
        default:
            return fail(c, at, "unknown constant-pool tag");
        }
        if (!need(c, body))
            return fail(c, at, "truncated constant-pool entry");
        cf->tag[i] = t;
        cf->off[i] = (uint32_t)at;
        c->pos += body;
        if (t == BL_CP_LONG || t == BL_CP_DOUBLE) {
            if (i + 1 >= n)
                return fail(c, at, "Long/Double entry takes the last pool slot");
            i++; /* the next slot is unusable (tag 0) */
        }
    }
    cf->pool_end = (uint32_t)c->pos;
    cf->strtab = malloc(strbytes + 1);
    if (!cf->strtab)
        return BL_ENOMEM;
    size_t sp = 0;
    for (uint32_t i = 1; i < n; i++) {
        const uint8_t *p = c->d + cf->off[i] + 1;
        int ok = 1;
        switch (cf->tag[i]) {
        case 0:
            break;
        case BL_CP_UTF8: {
            uint16_t l = bl_be16(p);
            memcpy(cf->strtab + sp, p + 2, l);
            cf->strtab[sp + l] = '\0';
            cf->str[i] = (uint32_t)sp;
            cf->slen[i] = l;
            sp += (size_t)l + 1;
            break;
        }
        case BL_CP_CLASS: case BL_CP_STRING: case BL_CP_METHODTYPE: case BL_CP_MODULE:
        case BL_CP_PACKAGE:
            ok = is_tag(cf, bl_be16(p), BL_CP_UTF8);
            break;
        case BL_CP_FIELDREF: case BL_CP_METHODREF: case BL_CP_IMETHODREF:
            ok = is_tag(cf, bl_be16(p), BL_CP_CLASS) &&
                 is_tag(cf, bl_be16(p + 2), BL_CP_NAMEANDTYPE);
            break;
        case BL_CP_NAMEANDTYPE:
            ok = is_tag(cf, bl_be16(p), BL_CP_UTF8) && is_tag(cf, bl_be16(p + 2), BL_CP_UTF8);
            break;
        case BL_CP_DYNAMIC: case BL_CP_INVOKEDYNAMIC:
            ok = is_tag(cf, bl_be16(p + 2), BL_CP_NAMEANDTYPE);
            break;
        case BL_CP_METHODHANDLE: {
            uint32_t r = bl_be16(p + 1);
            ok = p[0] >= 1 && p[0] <= 9 && r > 0 && r < n &&
                 (cf->tag[r] == BL_CP_FIELDREF || cf->tag[r] == BL_CP_METHODREF ||
                  cf->tag[r] == BL_CP_IMETHODREF);
            break;
        }
        default:
            break;
        }
        if (!ok) {
            if (c->errlen)
                snprintf(c->err, c->errlen,
                         "constant-pool entry %u refers to a missing or wrong-typed entry "
                         "(byte offset %u)", (unsigned)i, (unsigned)cf->off[i]);
            return BL_EFORMAT;
        }
    }
    cf->strtab[sp] = '\0';
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Members                                                                   */

/* Skips attribute_info[count] at the cursor. */
static bl_err skip_attrs(pctx *c, uint16_t count)
{
    for (uint16_t k = 0; k < count; k++) {
        size_t at = c->pos;
        if (!need(c, 6))
            return fail(c, at, "truncated attribute header");
        uint16_t name = rd16(c);
        uint32_t alen = rd32(c);
        if (!is_tag(c->cf, name, BL_CP_UTF8))
            return fail(c, at, "attribute name is not a Utf8 entry");
        if (!need(c, alen))
            return fail(c, at, "attribute runs past the end of the file");
        c->pos += alen;
    }
    return BL_OK;
}

/* code_length covers an instruction stream; sets *trivial. */
static bl_err scan_code(pctx *c, const char *mname, uint32_t code, uint32_t len,
                        unsigned *trivial)
{
    const uint8_t *p = c->d + code;
    int invokes = 0;
    for (uint32_t off = 0; off < len;) {
        uint32_t n = bl_bc_insn_len(p, len, off);
        if (!n)
            return mfail(c, mname, code + off, "undecodable instruction in Code");
        if (bl_bc_is_invoke(p[off]))
            invokes = 1;
        off += n;
    }
    /* An empty body, a plain getter or setter has no invoke either. */
    *trivial = !invokes;
    return BL_OK;
}

static bl_err parse_code(pctx *c, const char *mname, uint32_t alen, bl_cf_mraw *r,
                         unsigned *trivial)
{
    size_t at = c->pos, end = c->pos + alen;
    if (alen < 12)
        return mfail(c, mname, at, "Code attribute too short");
    r->max_stack = rd16(c);
    r->max_locals = rd16(c);
    uint32_t clen = rd32(c);
    if (clen == 0 || clen > 65535)
        return mfail(c, mname, at + 4, "code_length is 0 or above 65535");
    if (end - c->pos < (size_t)clen + 4)
        return mfail(c, mname, at + 4, "code runs past the Code attribute");
    r->code = (uint32_t)c->pos;
    r->code_len = clen;
    c->pos += clen;
    r->exc_count = rd16(c);
    r->exc = (uint32_t)c->pos;
    if (end - c->pos < (size_t)r->exc_count * 8 + 2)
        return mfail(c, mname, r->exc - 2, "exception table runs past the Code attribute");
    for (uint16_t k = 0; k < r->exc_count; k++) {
        uint16_t ct = bl_be16(c->d + c->pos + 6);
        if (ct && !is_tag(c->cf, ct, BL_CP_CLASS))
            return mfail(c, mname, c->pos + 6, "catch_type is not a Class entry");
        c->pos += 8;
    }
    r->attr_count = rd16(c);
    r->attrs = (uint32_t)c->pos;
    pctx sub = *c;
    sub.len = end; /* attributes must fit inside the Code attribute */
    bl_err e = skip_attrs(&sub, r->attr_count);
    if (e)
        return e;
    if (sub.pos != end)
        return mfail(c, mname, sub.pos, "Code attribute length does not match its contents");
    c->pos = end;
    return scan_code(c, mname, r->code, clen, trivial);
}

static bl_err parse_member(pctx *c, bl_cf_method *m, bl_cf_mraw *r)
{
    bl_cf *cf = c->cf;
    size_t at = c->pos;
    if (!need(c, 8))
        return fail(c, at, "truncated field or method");
    uint16_t acc = rd16(c), name = rd16(c), desc = rd16(c), na = rd16(c);
    if (!is_tag(cf, name, BL_CP_UTF8) || !is_tag(cf, desc, BL_CP_UTF8))
        return fail(c, at, "member name or descriptor is not a Utf8 entry");
    if (!m)
        return skip_attrs(c, na);
    memset(m, 0, sizeof *m);
    memset(r, 0, sizeof *r);
    m->name = cf->strtab + cf->str[name];
    m->desc = cf->strtab + cf->str[desc];
    m->access = acc;
    r->start = (uint32_t)at;
    for (uint16_t k = 0; k < na; k++) {
        size_t aat = c->pos;
        if (!need(c, 6))
            return mfail(c, m->name, aat, "truncated attribute header");
        uint16_t an = rd16(c);
        uint32_t alen = rd32(c);
        if (!is_tag(cf, an, BL_CP_UTF8))
            return mfail(c, m->name, aat, "attribute name is not a Utf8 entry");
        if (!need(c, alen))
            return mfail(c, m->name, aat, "attribute runs past the end of the file");
        if (cf->slen[an] == 4 && memcmp(cf->strtab + cf->str[an], "Code", 4) == 0) {
            if (r->code_attr)
                return mfail(c, m->name, aat, "more than one Code attribute");
            r->code_attr = (uint32_t)aat;
            bl_err e = parse_code(c, m->name, alen, r, &m->trivial);
            if (e)
                return e;
            r->code_attr_end = (uint32_t)c->pos;
            m->code_length = r->code_len;
        } else {
            c->pos += alen;
        }
    }
    r->end = (uint32_t)c->pos;
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Class                                                                     */

static bl_err parse_all(pctx *c)
{
    bl_cf *cf = c->cf;
    if (!need(c, 8) || bl_be32(c->d) != 0xCAFEBABEu)
        return fail(c, 0, "not a class file (magic 0xCAFEBABE missing)");
    c->pos = 4;
    cf->minor = rd16(c);
    cf->major = rd16(c);
    if (cf->major < BL_CF_MAJOR_MIN || cf->major > BL_CF_MAJOR_MAX) {
        if (c->errlen)
            snprintf(c->err, c->errlen, "class file version %u.%u not supported (%d..%d)",
                     cf->major, cf->minor, BL_CF_MAJOR_MIN, BL_CF_MAJOR_MAX);
        return BL_EVERSION;
    }
    bl_err e = parse_pool(c);
    if (e)
        return e;
    if (!need(c, 8))
        return fail(c, c->pos, "truncated after the constant pool");
    cf->access = rd16(c);
    cf->this_class = rd16(c);
    cf->super_class = rd16(c);
    if (!is_tag(cf, cf->this_class, BL_CP_CLASS))
        return fail(c, c->pos - 4, "this_class is not a Class entry");
    if (cf->super_class && !is_tag(cf, cf->super_class, BL_CP_CLASS))
        return fail(c, c->pos - 2, "super_class is not a Class entry");
    uint16_t ni = rd16(c);
    if (!need(c, (size_t)ni * 2))
        return fail(c, c->pos, "truncated interfaces table");
    cf->n_interfaces = ni;
    cf->interfaces = (uint32_t)c->pos;
    for (uint16_t k = 0; k < ni; k++)
        if (!is_tag(cf, rd16(c), BL_CP_CLASS))
            return fail(c, c->pos - 2, "interface is not a Class entry");
    if (!need(c, 2))
        return fail(c, c->pos, "truncated before fields_count");
    uint16_t nf = rd16(c);
    for (uint16_t k = 0; k < nf; k++)
        if ((e = parse_member(c, NULL, NULL)) != BL_OK)
            return e;
    if (!need(c, 2))
        return fail(c, c->pos, "truncated before methods_count");
    cf->methods_off = (uint32_t)c->pos;
    uint16_t nm = rd16(c);
    cf->methods = calloc(nm ? nm : 1, sizeof *cf->methods);
    cf->raw = calloc(nm ? nm : 1, sizeof *cf->raw);
    if (!cf->methods || !cf->raw)
        return BL_ENOMEM;
    for (uint16_t k = 0; k < nm; k++) {
        if ((e = parse_member(c, &cf->methods[k], &cf->raw[k])) != BL_OK)
            return e;
        cf->n_methods = k + 1u;
    }
    cf->methods_end = (uint32_t)c->pos;
    if (!need(c, 2))
        return fail(c, c->pos, "truncated before the class attributes");
    if ((e = skip_attrs(c, rd16(c))) != BL_OK)
        return e;
    if (c->pos != c->len)
        return fail(c, c->pos, "extra bytes after the class attributes");
    return BL_OK;
}

bl_err bl_cf_parse(const uint8_t *data, size_t len, bl_cf **out, char *err, size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    if (len > UINT32_MAX) {
        if (errlen)
            snprintf(err, errlen, "class file larger than 4 GiB");
        return BL_ETOOBIG;
    }
    bl_cf *cf = calloc(1, sizeof *cf);
    if (!cf)
        return BL_ENOMEM;
    cf->data = data;
    cf->len = len;
    pctx c = {data, len, 0, err, errlen, cf};
    bl_err e = parse_all(&c);
    if (e) {
        if (e == BL_ENOMEM && errlen)
            snprintf(err, errlen, "out of memory");
        bl_cf_free(cf);
        return e;
    }
    *out = cf;
    return BL_OK;
}

void bl_cf_free(bl_cf *cf)
{
    if (!cf)
        return;
    free(cf->tag);
    free(cf->off);
    free(cf->str);
    free(cf->slen);
    free(cf->strtab);
    free(cf->methods);
    free(cf->raw);
    free(cf);
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */

const char *bl_cf_utf8(const bl_cf *cf, uint32_t i, uint32_t *n)
{
    if (!is_tag(cf, i, BL_CP_UTF8))
        return NULL;
    if (n)
        *n = cf->slen[i];
    return cf->strtab + cf->str[i];
}

const char *bl_cf_class_name(const bl_cf *cf, uint32_t i)
{
    if (!is_tag(cf, i, BL_CP_CLASS))
        return NULL;
    return bl_cf_utf8(cf, bl_be16(cf->data + cf->off[i] + 1), NULL);
}

const char *bl_cf_name(const bl_cf *cf) { return bl_cf_class_name(cf, cf->this_class); }

const char *bl_cf_super_name(const bl_cf *cf)
{
    return cf->super_class ? bl_cf_class_name(cf, cf->super_class) : NULL;
}

size_t bl_cf_interface_count(const bl_cf *cf) { return cf->n_interfaces; }

const char *bl_cf_interface_name(const bl_cf *cf, size_t i)
{
    if (i >= cf->n_interfaces)
        return NULL;
    return bl_cf_class_name(cf, bl_be16(cf->data + cf->interfaces + 2 * i));
}

uint16_t bl_cf_access(const bl_cf *cf) { return cf->access; }
uint16_t bl_cf_major(const bl_cf *cf) { return cf->major; }
size_t bl_cf_method_count(const bl_cf *cf) { return cf->n_methods; }

const bl_cf_method *bl_cf_method_at(const bl_cf *cf, size_t i)
{
    return i < cf->n_methods ? &cf->methods[i] : NULL;
}

const uint8_t *bl_cf_bytes(const bl_cf *cf, size_t *len)
{
    if (len)
        *len = cf->len;
    return cf->data;
}

uint16_t bl_cf_pool_count(const bl_cf *cf) { return cf->pool_count; }
uint32_t bl_cf_pool_end(const bl_cf *cf) { return cf->pool_end; }

uint8_t bl_cf_pool_tag(const bl_cf *cf, uint32_t i)
{
    return i < cf->pool_count ? cf->tag[i] : 0;
}

uint32_t bl_cf_pool_off(const bl_cf *cf, uint32_t i)
{
    return i < cf->pool_count ? cf->off[i] : 0;
}

uint32_t bl_cf_methods_off(const bl_cf *cf) { return cf->methods_off; }
uint32_t bl_cf_methods_end(const bl_cf *cf) { return cf->methods_end; }

const bl_cf_mraw *bl_cf_method_raw(const bl_cf *cf, size_t i)
{
    return i < cf->n_methods ? &cf->raw[i] : NULL;
}
