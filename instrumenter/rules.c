/*
 * rules.c — include/exclude rules and the config file of beatline-instrument
 * (syntax and semantics in rules.h and instrumenter/README.md).
 *
 * A rule is stored normalised: '.' replaced by '/' in the class and
 * descriptor globs, a trailing '/' of a class glob followed by "**", a
 * Matrix line kept as a plain prefix. Matching is a one-row dynamic program
 * over the glob's tokens (literal, '?', '*', '**'): row[j] says whether the
 * tokens seen so far match the first j bytes of the name. Consuming tokens
 * update the row from the right, star tokens from the left, so one row of
 * |name|+1 bytes suffices and the cost is O(tokens × |name|) whatever the
 * pattern — no backtracking blow-up.
 *
 * Invariants: every stored string is NUL-terminated and owned by the set;
 * n_include counts the include rules among v[0..n).
 */
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATTERN_MAX 4096u
#define STACK_ROW 512u

typedef struct rule {
    unsigned char exclude; /* 1 exclude, 0 include */
    unsigned char prefix;  /* 1: Matrix line, cls is a plain prefix */
    char *cls;             /* class glob or prefix */
    char *name;            /* method-name glob, NULL: any */
    char *desc;            /* descriptor glob, NULL: any */
} rule;

struct bl_rules {
    rule *v;
    size_t n, cap;
    size_t n_include;
};

/* ---- matching ------------------------------------------------------------ */

/* Runs glob `pat` over s[0..n) in row (n + 1 bytes). cls_mode: '*' does not
 * cross '/', "**" does; otherwise '*' matches any run. */
static int glob_row(const char *pat, const char *s, size_t n, int cls_mode, unsigned char *row)
{
    memset(row, 0, n + 1);
    row[0] = 1;
    for (const char *p = pat; *p; p++) {
        if (*p == '*') {
            int any = !cls_mode;
            if (p[1] == '*') {
                any = 1;
                while (p[1] == '*')
                    p++;
            }
            for (size_t j = 1; j <= n; j++)
                if (!row[j] && row[j - 1] && (any || s[j - 1] != '/'))
                    row[j] = 1;
            continue;
        }
        int live = 0;
        for (size_t j = n; j >= 1; j--) {
            char c = s[j - 1];
            int ok = *p == '?' ? (!cls_mode || c != '/') : c == *p;
            row[j] = (unsigned char)(row[j - 1] && ok);
            live |= row[j];
        }
        row[0] = 0;
        if (!live)
            return 0;
    }
    return row[n];
}

static bl_err glob(const char *pat, const char *s, int cls_mode, int *res)
{
    size_t n = strlen(s);
    unsigned char stack[STACK_ROW];
    unsigned char *row = stack;
    if (n + 1 > sizeof stack) {
        row = malloc(n + 1);
        if (!row)
            return BL_ENOMEM;
    }
    *res = glob_row(pat, s, n, cls_mode, row);
    if (row != stack)
        free(row);
    return BL_OK;
}

static bl_err class_matches(const rule *ru, const char *cls, int *res)
{
    if (ru->prefix) {
        *res = strncmp(cls, ru->cls, strlen(ru->cls)) == 0;
        return BL_OK;
    }
    return glob(ru->cls, cls, 1, res);
}

static bl_err rule_matches(const rule *ru, const char *cls, const char *name, const char *desc,
                           int *res)
{
    bl_err e = class_matches(ru, cls, res);
    if (e || !*res)
        return e;
    if (ru->name && ((e = glob(ru->name, name, 0, res)) != BL_OK || !*res))
        return e;
    if (ru->desc)
        return glob(ru->desc, desc, 0, res);
    return BL_OK;
}

bl_err bl_rules_class_excluded(const bl_rules *r, const char *cls, int *res)
{
    int any_include = 0, m;
    for (size_t i = 0; i < r->n; i++) {
        const rule *ru = &r->v[i];
        if (ru->exclude && ru->name)
            continue; /* excludes only some methods */
        if (!ru->exclude && any_include)
            continue;
        bl_err e = class_matches(ru, cls, &m);
        if (e)
            return e;
        if (m && ru->exclude) {
            *res = 1;
            return BL_OK;
        }
        if (m)
            any_include = 1;
    }
    *res = r->n_include > 0 && !any_include;
    return BL_OK;
}

bl_err bl_rules_method_allowed(const bl_rules *r, const char *cls, const char *name,
                               const char *desc, int *res)
{
    int included = r->n_include == 0, m;
    for (size_t i = 0; i < r->n; i++) {
        const rule *ru = &r->v[i];
        if (!ru->exclude && included)
            continue;
        bl_err e = rule_matches(ru, cls, name, desc, &m);
        if (e)
            return e;
        if (m && ru->exclude) {
            *res = 0;
            return BL_OK;
        }
        if (m)
            included = 1;
    }
    *res = included;
    return BL_OK;
}

/* ---- building ------------------------------------------------------------ */

bl_err bl_rules_new(bl_rules **out)
{
    bl_rules *r = calloc(1, sizeof *r);
    if (!r)
        return BL_ENOMEM;
    *out = r;
    return BL_OK;
}

void bl_rules_free(bl_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].cls);
        free(r->v[i].name);
        free(r->v[i].desc);
    }
    free(r->v);
    free(r);
}

size_t bl_rules_count(const bl_rules *r)
{
    return r->n;
}

static char *dup_n(const char *s, size_t n, size_t extra)
{
    char *d = malloc(n + extra + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static void dots_to_slashes(char *s)
{
    for (; *s; s++)
        if (*s == '.')
            *s = '/';
}

static bl_err push(bl_rules *r, rule *ru)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        rule *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return BL_ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *ru;
    if (!ru->exclude)
        r->n_include++;
    return BL_OK;
}

static void rule_free(rule *ru)
{
    free(ru->cls);
    free(ru->name);
    free(ru->desc);
}

bl_err bl_rules_add(bl_rules *r, int exclude, const char *pattern, char *err, size_t errlen)
{
    size_t len = strlen(pattern);
    if (len == 0 || len > PATTERN_MAX) {
        snprintf(err, errlen, "%s pattern", len ? "over-long" : "empty");
        return BL_EFORMAT;
    }
    for (size_t i = 0; i < len; i++)
        if (pattern[i] == ' ' || pattern[i] == '\t' || (unsigned char)pattern[i] < 0x20) {
            snprintf(err, errlen, "pattern '%s' contains white space or a control character",
                     pattern);
            return BL_EFORMAT;
        }
    const char *hash = strchr(pattern, '#');
    size_t cls_len = hash ? (size_t)(hash - pattern) : len;
    if (cls_len == 0) {
        snprintf(err, errlen, "pattern '%s' has no class part (use ** for every class)", pattern);
        return BL_EFORMAT;
    }
    rule ru = {.exclude = (unsigned char)(exclude != 0)};
    ru.cls = dup_n(pattern, cls_len, 2);
    if (!ru.cls)
        return BL_ENOMEM;
    dots_to_slashes(ru.cls);
    if (ru.cls[cls_len - 1] == '/')
        memcpy(ru.cls + cls_len, "**", 3);
    if (hash) {
        const char *m = hash + 1;
        const char *paren = strchr(m, '(');
        size_t name_len = paren ? (size_t)(paren - m) : strlen(m);
        if (name_len == 0) {
            snprintf(err, errlen, "pattern '%s' has an empty method name after '#' (use #*)",
                     pattern);
            rule_free(&ru);
            return BL_EFORMAT;
        }
        if (strchr(m, '#')) {
            snprintf(err, errlen, "pattern '%s' has more than one '#'", pattern);
            rule_free(&ru);
            return BL_EFORMAT;
        }
        ru.name = dup_n(m, name_len, 0);
        if (!ru.name || (paren && !(ru.desc = dup_n(paren, strlen(paren), 0)))) {
            rule_free(&ru);
            return BL_ENOMEM;
        }
        if (ru.desc)
            dots_to_slashes(ru.desc);
    }
    bl_err e = push(r, &ru);
    if (e)
        rule_free(&ru);
    return e;
}

bl_err bl_rules_add_prefix(bl_rules *r, const char *prefix, char *err, size_t errlen)
{
    size_t len = strlen(prefix);
    if (len == 0 || len > PATTERN_MAX) {
        snprintf(err, errlen, "%s class prefix", len ? "over-long" : "empty");
        return BL_EFORMAT;
    }
    rule ru = {.exclude = 1, .prefix = 1};
    ru.cls = dup_n(prefix, len, 0);
    if (!ru.cls)
        return BL_ENOMEM;
    dots_to_slashes(ru.cls);
    bl_err e = push(r, &ru);
    if (e)
        rule_free(&ru);
    return e;
}

/* ---- config file --------------------------------------------------------- */

void bl_rules_opts_init(bl_rules_opts *o)
{
    memset(o, 0, sizeof *o);
    o->skip_trivial = -1;
    o->skip_callbacks = -1;
    o->obfuscated = -1;
}

void bl_rules_opts_cleanup(bl_rules_opts *o)
{
    free(o->runtime_class);
    free(o->base_ids);
    bl_rules_opts_init(o);
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Replaces *slot by a copy of v[0..n). */
static bl_err set_str(char **slot, const char *v, size_t n)
{
    char *d = dup_n(v, n, 0);
    if (!d)
        return BL_ENOMEM;
    free(*slot);
    *slot = d;
    return BL_OK;
}

static int word_is(const char *w, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(w, lit, n) == 0;
}

/* One non-blank, non-comment line: key = k[0..kn), value = v[0..vn). */
static bl_err config_item(bl_rules *r, bl_rules_opts *o, const char *k, size_t kn,
                          const char *v, size_t vn, const char *path, char *why, size_t whylen)
{
    char val[PATTERN_MAX + 1];
    if (vn == 0) {
        snprintf(why, whylen, "'%.*s' needs a value", (int)kn, k);
        return BL_EFORMAT;
    }
    if (vn > PATTERN_MAX) {
        snprintf(why, whylen, "value longer than %u bytes", PATTERN_MAX);
        return BL_EFORMAT;
    }
    memcpy(val, v, vn);
    val[vn] = '\0';
    if (memchr(val, '\0', vn)) {
        snprintf(why, whylen, "NUL byte in the value");
        return BL_EFORMAT;
    }
    if (word_is(k, kn, "-keeppackage") || word_is(k, kn, "-keepclass"))
        return bl_rules_add_prefix(r, val, why, whylen);
    if (word_is(k, kn, "exclude") || word_is(k, kn, "include"))
        return bl_rules_add(r, k[0] == 'e', val, why, whylen);
    if (word_is(k, kn, "runtime-class")) {
        for (size_t i = 0; i < vn; i++)
            if (is_blank(val[i])) {
                snprintf(why, whylen, "runtime-class must be one class name");
                return BL_EFORMAT;
            }
        bl_err e = set_str(&o->runtime_class, val, vn);
        if (!e)
            dots_to_slashes(o->runtime_class);
        return e;
    }
    if (word_is(k, kn, "skip-trivial") || word_is(k, kn, "names")) {
        int is_skip = k[0] == 's';
        int yes = word_is(v, vn, is_skip ? "yes" : "obfuscated");
        if (!yes && !word_is(v, vn, is_skip ? "no" : "original")) {
            snprintf(why, whylen, "%s must be %s", is_skip ? "skip-trivial" : "names",
                     is_skip ? "yes or no" : "original or obfuscated");
            return BL_EFORMAT;
        }
        *(is_skip ? &o->skip_trivial : &o->obfuscated) = yes;
        return BL_OK;
    }
    if (word_is(k, kn, "skip-callbacks")) {
        int yes = word_is(v, vn, "yes");
        if (!yes && !word_is(v, vn, "no")) {
            snprintf(why, whylen, "skip-callbacks must be yes or no");
            return BL_EFORMAT;
        }
        o->skip_callbacks = yes;
        return BL_OK;
    }
    if (word_is(k, kn, "threads")) {
        int t = 0;
        for (size_t i = 0; i < vn; i++) {
            if (val[i] < '0' || val[i] > '9' || (t = t * 10 + (val[i] - '0')) > 256) {
                t = 0;
                break;
            }
        }
        if (t < 1) {
            snprintf(why, whylen, "threads must be a number from 1 to 256");
            return BL_EFORMAT;
        }
        o->threads = t;
        return BL_OK;
    }
    if (word_is(k, kn, "base-ids")) {
        const char *slash = strrchr(path, '/');
        if (val[0] == '/' || !slash)
            return set_str(&o->base_ids, val, vn);
        size_t dn = (size_t)(slash - path) + 1;
        char *d = malloc(dn + vn + 1);
        if (!d)
            return BL_ENOMEM;
        memcpy(d, path, dn);
        memcpy(d + dn, val, vn + 1);
        free(o->base_ids);
        o->base_ids = d;
        return BL_OK;
    }
    snprintf(why, whylen, "unknown item '%.*s'", (int)(kn > 64 ? 64 : kn), k);
    return BL_EFORMAT;
}

bl_err bl_rules_parse_config(bl_rules *r, bl_rules_opts *o, const char *text, size_t len,
                             const char *path, char *err, size_t errlen)
{
    size_t pos = 0;
    uint64_t line = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        pos = 3;
    while (pos < len) {
        line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t a = pos, b = end;
        pos = nl ? end + 1 : len;
        while (a < b && (is_blank(text[a]) || text[a] == '\r'))
            a++;
        while (b > a && (is_blank(text[b - 1]) || text[b - 1] == '\r'))
            b--;
        if (a == b || text[a] == '#' || text[a] == '[')
            continue;
        size_t k = a;
        while (k < b && !is_blank(text[k]))
            k++;
        size_t v = k;
        while (v < b && is_blank(text[v]))
            v++;
        char why[256] = "";
        bl_err e = config_item(r, o, text + a, k - a, text + v, b - v, path, why, sizeof why);
        if (e == BL_ENOMEM)
            return e;
        if (e) {
            snprintf(err, errlen, "%s:%llu: %s", path, (unsigned long long)line, why);
            return BL_EFORMAT;
        }
    }
    return BL_OK;
}
