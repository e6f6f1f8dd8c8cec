/*
 * hierarchy.c — class hierarchy across inputs and class path, launch hooks
 * (see hierarchy.h).
 *
 * One open-addressing hash table (FNV-1a, linear probing, load ≤ 1/2) maps a
 * class name to a node: the super class name once known, or the class-path
 * entry to read it from. Input classes own copies of their names; class-path
 * nodes borrow the entry's name (key length: the name without ".class") and
 * get an owned super name when read.
 */
#include "hierarchy.h"

#include "classfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACC_STATIC 0x0008
#define ACC_NATIVE 0x0100
#define ACC_ABSTRACT 0x0400

typedef struct node {
    const char *key;  /* class name (not NUL-terminated for class-path nodes) */
    size_t klen;
    char *owned_key;  /* input classes: the copy key points to, else NULL */
    char *super_name; /* owned; NULL: none (java/lang/Object) or not read yet */
    int known;        /* 1: super_name is final; 0: read it from en */
    const bl_jio_input *in;
    bl_jio_entry *en;
} node;

struct bl_hier {
    node *tab;
    size_t cap, n; /* cap: a power of two */
    bl_jio_input **cp;
    size_t n_cp, cap_cp;
    char *missing; /* last missing class name (owned) */
};

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static node *find(const bl_hier *h, const char *k, size_t n)
{
    if (!h->cap)
        return NULL;
    for (size_t i = hash(k, n) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
        node *x = &h->tab[i];
        if (!x->key)
            return NULL;
        if (x->klen == n && memcmp(x->key, k, n) == 0)
            return x;
    }
}

static bl_err grow(bl_hier *h)
{
    if ((h->n + 1) * 2 <= h->cap)
        return BL_OK;
    size_t nc = h->cap ? h->cap * 2 : 1024;
    node *t = calloc(nc, sizeof *t);
    if (!t)
        return BL_ENOMEM;
    for (size_t i = 0; i < h->cap; i++) {
        node *x = &h->tab[i];
        if (!x->key)
            continue;
        size_t j = hash(x->key, x->klen) & (nc - 1);
        while (t[j].key)
            j = (j + 1) & (nc - 1);
        t[j] = *x;
    }
    free(h->tab);
    h->tab = t;
    h->cap = nc;
    return BL_OK;
}

/* Inserts a node for key (borrowed) unless the name is there; *out: the node
 * inserted, or NULL when the name was there already. */
static bl_err insert(bl_hier *h, const char *k, size_t n, node **out)
{
    *out = NULL;
    if (find(h, k, n))
        return BL_OK;
    bl_err e = grow(h);
    if (e)
        return e;
    size_t i = hash(k, n) & (h->cap - 1);
    while (h->tab[i].key)
        i = (i + 1) & (h->cap - 1);
    node *x = &h->tab[i];
    memset(x, 0, sizeof *x);
    x->key = k;
    x->klen = n;
    h->n++;
    *out = x;
    return BL_OK;
}

bl_err bl_hier_new(bl_hier **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? BL_OK : BL_ENOMEM;
}

void bl_hier_free(bl_hier *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->cap; i++) {
        free(h->tab[i].owned_key);
        free(h->tab[i].super_name);
    }
    free(h->tab);
    for (size_t i = 0; i < h->n_cp; i++)
        bl_jio_free(h->cp[i]);
    free(h->cp);
    free(h->missing);
    free(h);
}

bl_err bl_hier_add(bl_hier *h, const char *name, const char *super_name)
{
    size_t n = strlen(name);
    if (find(h, name, n))
        return BL_OK;
    char *k = strdup(name);
    char *s = super_name ? strdup(super_name) : NULL;
    node *x = NULL;
    bl_err e = !k || (super_name && !s) ? BL_ENOMEM : insert(h, k, n, &x);
    if (e || !x) {
        free(k);
        free(s);
        return e;
    }
    x->owned_key = k;
    x->super_name = s;
    x->known = 1;
    return BL_OK;
}

bl_err bl_hier_add_classpath(bl_hier *h, const char *path, bl_jio_notice_fn notice, void *ctx,
                             char *err, size_t errlen)
{
    if (h->n_cp == h->cap_cp) {
        size_t nc = h->cap_cp ? h->cap_cp * 2 : 4;
        bl_jio_input **t = realloc(h->cp, nc * sizeof *t);
        if (!t)
            return BL_ENOMEM;
        h->cp = t;
        h->cap_cp = nc;
    }
    bl_jio_input *in = NULL;
    bl_err e = bl_jio_open(path, notice, ctx, &in, err, errlen);
    if (e)
        return e;
    h->cp[h->n_cp++] = in; /* owned by h from here on */
    for (size_t i = 0; i < in->n; i++) {
        bl_jio_entry *en = &in->entries[i];
        size_t l = strlen(en->name);
        if (!en->is_class || l <= 6 || !strncmp(en->name, "META-INF/", 9))
            continue;
        node *x = NULL;
        if ((e = insert(h, en->name, l - 6, &x)) != BL_OK)
            return e;
        if (x) {
            x->in = in;
            x->en = en;
        }
    }
    return BL_OK;
}

/* Reads the super class of a class-path node. */
static bl_err read_node(node *x, char *err, size_t errlen)
{
    char msg[512] = "";
    bl_err e = bl_jio_load(x->in, x->en, msg, sizeof msg);
    if (e) {
        snprintf(err, errlen, "%s", msg);
        return e;
    }
    bl_cf *cf = NULL;
    e = bl_cf_parse(x->en->data, x->en->len, &cf, msg, sizeof msg);
    if (e) {
        snprintf(err, errlen, "%s!%s: %s", x->in->path, x->en->name,
                 msg[0] ? msg : bl_err_str(e));
        return e == BL_ENOMEM ? e : BL_EFORMAT;
    }
    const char *name = bl_cf_name(cf), *sup = bl_cf_super_name(cf);
    if (strlen(name) != x->klen || memcmp(name, x->key, x->klen) != 0) {
        snprintf(err, errlen, "%s!%s: holds class %s, not the one its path names", x->in->path,
                 x->en->name, name);
        bl_cf_free(cf);
        return BL_EFORMAT;
    }
    if (sup && !(x->super_name = strdup(sup))) {
        bl_cf_free(cf);
        return BL_ENOMEM;
    }
    x->known = 1;
    bl_cf_free(cf);
    /* the class bytes are no longer needed */
    if (x->en->raw) {
        free(x->en->data);
        x->en->data = NULL;
    }
    return BL_OK;
}

bl_err bl_hier_kind(bl_hier *h, const char *name, int *kind, const char **missing, char *err,
                    size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    if (missing)
        *missing = NULL;
    const char *cur = name;
    for (int depth = 0; depth <= BL_HIER_MAX_DEPTH; depth++) {
        if (!strcmp(cur, "android/app/Application")) {
            *kind = BL_HIER_APPLICATION;
            return BL_OK;
        }
        if (!strcmp(cur, "android/app/Activity")) {
            *kind = BL_HIER_ACTIVITY;
            return BL_OK;
        }
        if (!strcmp(cur, "java/lang/Object")) {
            *kind = BL_HIER_OTHER;
            return BL_OK;
        }
        node *x = find(h, cur, strlen(cur));
        if (x && !x->known) {
            bl_err e = read_node(x, err, errlen);
            if (e)
                return e;
        }
        if (!x)
            break;
        if (!x->super_name) {
            *kind = BL_HIER_OTHER;
            return BL_OK;
        }
        cur = x->super_name;
    }
    /* not found, or too deep (a loop) */
    char *m = strdup(cur);
    if (!m)
        return BL_ENOMEM;
    free(h->missing);
    h->missing = m;
    if (missing)
        *missing = m;
    *kind = BL_HIER_UNRESOLVED;
    return BL_OK;
}

int bl_hier_hook(int kind, const char *name, const char *desc, uint16_t access)
{
    if (access & (ACC_STATIC | ACC_NATIVE | ACC_ABSTRACT))
        return BL_HOOK_NONE;
    if (kind == BL_HIER_APPLICATION) {
        if (!strcmp(name, "attachBaseContext") && !strcmp(desc, "(Landroid/content/Context;)V"))
            return BL_HOOK_APP_ATTACH;
        if (!strcmp(name, "onCreate") && !strcmp(desc, "()V"))
            return BL_HOOK_APP_CREATE;
    } else if (kind == BL_HIER_ACTIVITY) {
        if (!strcmp(desc, "()V")) {
            if (!strcmp(name, "onStart"))
                return BL_HOOK_ACT_START;
            if (!strcmp(name, "onResume"))
                return BL_HOOK_ACT_RESUME;
            if (!strcmp(name, "onRestart"))
                return BL_HOOK_ACT_RESTART;
        } else if (!strcmp(name, "onCreate") && !strcmp(desc, "(Landroid/os/Bundle;)V")) {
            return BL_HOOK_ACT_CREATE;
        }
    }
    return BL_HOOK_NONE;
}

int bl_hier_hook_candidate(const char *name, const char *desc, uint16_t access)
{
    return bl_hier_hook(BL_HIER_APPLICATION, name, desc, access) != BL_HOOK_NONE ||
           bl_hier_hook(BL_HIER_ACTIVITY, name, desc, access) != BL_HOOK_NONE;
}
