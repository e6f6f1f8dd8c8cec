/*
 * symbolicate.c — original names for a method-ID entry (see symbolicate.h).
 */
#include "symbol/symbolicate.h"

#include <string.h>

#include "symbol/retrace.h"

static const char *prim_name(char c)
{
    switch (c) {
    case 'B': return "byte";
    case 'C': return "char";
    case 'D': return "double";
    case 'F': return "float";
    case 'I': return "int";
    case 'J': return "long";
    case 'S': return "short";
    case 'Z': return "boolean";
    case 'V': return "void";
    default: return NULL;
    }
}

static char prim_code(const char *t, size_t n)
{
    static const char *const names[] = { "byte", "char", "double", "float", "int",
                                         "long", "short", "boolean", "void" };
    static const char codes[] = "BCDFIJSZV";
    for (int i = 0; i < 9; i++)
        if (strlen(names[i]) == n && !memcmp(names[i], t, n))
            return codes[i];
    return 0;
}

/* Appends the Java form of the field type at *pp (JVMS §4.3.2), mapping
 * class names from obfuscated to original through mi when given. */
static bl_err one_type_to_java(const bl_mapindex *mi, const char **pp, bl_buf *o)
{
    const char *p = *pp;
    int dims = 0;
    while (*p == '[') {
        dims++;
        p++;
    }
    if (dims > 255)
        return BL_EINVAL;
    bl_err err;
    if (*p == 'L') {
        const char *s = ++p;
        while (*p && *p != ';')
            p++;
        if (!*p || p == s)
            return BL_EINVAL;
        size_t n = (size_t)(p - s);
        size_t at = o->len;
        if ((err = bl_buf_append(o, s, n)))
            return err;
        for (size_t i = at; i < o->len; i++)
            if (o->data[i] == '/')
                o->data[i] = '.';
        if (mi) {
            const bl_mi_class *c = bl_mapindex_class_by_obf(mi, o->data + at, n);
            if (c) {
                o->len = at;
                if ((err = bl_buf_puts(o, bl_mapindex_str(mi, c->orig))))
                    return err;
            }
        }
        p++;
    } else {
        const char *name = prim_name(*p);
        if (!name || (*p == 'V' && dims))
            return BL_EINVAL;
        if ((err = bl_buf_puts(o, name)))
            return err;
        p++;
    }
    for (int i = 0; i < dims; i++)
        if ((err = bl_buf_append(o, "[]", 2)))
            return err;
    *pp = p;
    return BL_OK;
}

/* "(IL…;)V" → params "int,…" and ret "void" (Java form), de-obfuscated. */
static bl_err desc_to_java(const bl_mapindex *mi, const char *desc, bl_buf *params, bl_buf *ret)
{
    const char *p = desc;
    bl_err err;
    if (*p++ != '(')
        return BL_EINVAL;
    int first = 1;
    while (*p && *p != ')') {
        if (!first && (err = bl_buf_putc(params, ',')))
            return err;
        if ((err = one_type_to_java(mi, &p, params)))
            return err;
        first = 0;
    }
    if (*p++ != ')')
        return BL_EINVAL;
    if ((err = one_type_to_java(mi, &p, ret)))
        return err;
    return *p ? BL_EINVAL : BL_OK;
}

static bl_err java_type_to_desc(const char *t, size_t n, bl_buf *o)
{
    bl_err err;
    while (n >= 2 && t[n - 2] == '[' && t[n - 1] == ']') {
        if ((err = bl_buf_putc(o, '[')))
            return err;
        n -= 2;
    }
    if (n == 0)
        return BL_EINVAL;
    char c = prim_code(t, n);
    if (c)
        return bl_buf_putc(o, c);
    if ((err = bl_buf_putc(o, 'L')))
        return err;
    size_t at = o->len;
    if ((err = bl_buf_append(o, t, n)))
        return err;
    for (size_t i = at; i < o->len; i++) {
        if (o->data[i] == '.')
            o->data[i] = '/';
        else if (o->data[i] == ',' || o->data[i] == ' ' || o->data[i] == '(' || o->data[i] == ')')
            return BL_EINVAL;
    }
    return bl_buf_putc(o, ';');
}

bl_err bl_desc_from_java(const char *ret, const char *params, bl_buf *out)
{
    bl_err err;
    if ((err = bl_buf_putc(out, '(')))
        return err;
    const char *p = params;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if ((err = java_type_to_desc(p, n, out)))
            return err;
        p += n + (c ? 1 : 0);
        if (c && !*p)
            return BL_EINVAL;
    }
    if ((err = bl_buf_putc(out, ')')))
        return err;
    return java_type_to_desc(ret, strlen(ret), out);
}

/* Stores s[0..n) + NUL into store; returns its offset. */
static bl_err put(bl_buf *store, const char *s, size_t n, size_t *off)
{
    *off = store->len;
    bl_err err = bl_buf_append(store, s, n);
    return err ? err : bl_buf_putc(store, '\0');
}

bl_err bl_symbolicate_method(const bl_mapindex *mi, const char *cls, const char *method,
                             const char *desc, bl_buf *store, bl_symbol *out)
{
    bl_buf params, ret;
    bl_buf_init(&params, 1 << 16);
    bl_buf_init(&ret, 1 << 12);
    bl_buf_reset(store);
    memset(out, 0, sizeof *out);
    size_t o_cls, o_name, o_desc, o_file;
    const bl_mi_class *c = mi ? bl_mapindex_class_by_obf(mi, cls, strlen(cls)) : NULL;
    const bl_mi_method *best = NULL;
    bl_sym_how how = BL_SYM_IDENTITY;
    bl_err err = desc_to_java(mi, desc, &params, &ret);
    if (err)
        goto out;
    if (c) {
        const bl_mi_method *b;
        uint32_t n = bl_mapindex_methods(mi, c, method, strlen(method), &b);
        const bl_mi_method *name_only = NULL;
        int name_sigs = 0, exact = 0;
        how = BL_SYM_CLASS_ONLY;
        for (uint32_t i = 0; i < n; i++) {
            const bl_mi_method *m = &b[i];
            if (!(m->flags & BL_MIM_OUTER))
                continue;
            if (!name_only || strcmp(bl_mapindex_str(mi, name_only->orig_name),
                                     bl_mapindex_str(mi, m->orig_name)) ||
                name_only->params != m->params || name_only->orig_class != m->orig_class) {
                if (!name_only)
                    name_only = m;
                name_sigs++;
            }
            int match = m->residual
                            ? !strcmp(bl_mapindex_str(mi, m->residual), desc)
                            : (!strcmp(bl_mapindex_str(mi, m->params), params.data ? params.data : "") &&
                               !strcmp(bl_mapindex_str(mi, m->ret), ret.data ? ret.data : ""));
            if (!match)
                continue;
            if (!best) {
                best = m;
                exact = 1;
            } else if (best->orig_class != m->orig_class || best->orig_name != m->orig_name ||
                       best->params != m->params || best->ret != m->ret) {
                exact = 2;
            }
        }
        if (best) {
            how = exact == 1 ? BL_SYM_EXACT : BL_SYM_AMBIGUOUS;
        } else if (name_only) {
            best = name_only;
            how = name_sigs == 1 ? BL_SYM_NAME_ONLY : BL_SYM_AMBIGUOUS;
        }
    }
    if (best) {
        const char *oc = bl_mapindex_str(mi, best->orig_class);
        if ((err = put(store, oc, strlen(oc), &o_cls)))
            goto out;
        const char *on = bl_mapindex_str(mi, best->orig_name);
        if ((err = put(store, on, strlen(on), &o_name)))
            goto out;
        o_desc = store->len;
        if ((err = bl_desc_from_java(bl_mapindex_str(mi, best->ret),
                                     bl_mapindex_str(mi, best->params), store)) ||
            (err = bl_buf_putc(store, '\0')))
            goto out;
    } else {
        const char *oc = c ? bl_mapindex_str(mi, c->orig) : cls;
        if ((err = put(store, oc, strlen(oc), &o_cls)) ||
            (err = put(store, method, strlen(method), &o_name)))
            goto out;
        o_desc = store->len;
        if ((err = bl_desc_from_java(ret.data, params.data ? params.data : "", store)) ||
            (err = bl_buf_putc(store, '\0')))
            goto out;
    }
    /* source file: sourceFile of the original class, else inferred */
    {
        const char *oc = store->data + o_cls;
        const bl_mi_class *k = mi ? bl_mapindex_class_by_orig(mi, oc, strlen(oc)) : NULL;
        if (k && k->source_file) {
            const char *f = bl_mapindex_str(mi, k->source_file);
            err = put(store, f, strlen(f), &o_file);
        } else {
            char tmp[512];
            size_t n = bl_retrace_infer_file(oc, strlen(oc), tmp, sizeof tmp);
            err = put(store, tmp, n, &o_file);
        }
        if (err)
            goto out;
    }
    out->cls = store->data + o_cls;
    out->method = store->data + o_name;
    out->desc = store->data + o_desc;
    out->file = store->data + o_file;
    out->how = how;
out:
    bl_buf_cleanup(&params);
    bl_buf_cleanup(&ret);
    return err;
}
