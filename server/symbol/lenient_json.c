/*
 * lenient_json.c — lenient JSON to strict JSON, then jansson.
 *
 * Rewrites, token by token:
 *   'text'        -> "text"   (a '"' inside gets escaped; \' becomes ')
 *   bare word     -> "word"   unless it is true, false, null or a number
 * and copies everything else. Strict JSON passes through unchanged.
 */
#include "symbol/lenient_json.h"

#include <string.h>

static int is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c == '.' || c == '-' || c == '+';
}

static int is_literal(const char *w, size_t n)
{
    if ((n == 4 && !memcmp(w, "true", 4)) || (n == 5 && !memcmp(w, "false", 5)) ||
        (n == 4 && !memcmp(w, "null", 4)))
        return 1;
    /* a JSON number: -?digits[.digits][e[+-]digits] */
    size_t i = 0;
    if (i < n && w[i] == '-')
        i++;
    if (i == n || w[i] < '0' || w[i] > '9')
        return 0;
    while (i < n && w[i] >= '0' && w[i] <= '9')
        i++;
    if (i < n && w[i] == '.') {
        i++;
        if (i == n || w[i] < '0' || w[i] > '9')
            return 0;
        while (i < n && w[i] >= '0' && w[i] <= '9')
            i++;
    }
    if (i < n && (w[i] == 'e' || w[i] == 'E')) {
        i++;
        if (i < n && (w[i] == '+' || w[i] == '-'))
            i++;
        if (i == n)
            return 0;
        while (i < n && w[i] >= '0' && w[i] <= '9')
            i++;
    }
    return i == n;
}

/* Appends, noting an allocation failure (BL_ENOMEM) in *e; a buffer over
 * its cap is a format problem (the comment is too long to be metadata). */
static int put(bl_buf *b, const char *p, size_t n, bl_err *e)
{
    bl_err r = bl_buf_append(b, p, n);
    if (r == BL_ENOMEM)
        *e = BL_ENOMEM;
    return r != BL_OK;
}

json_t *bl_lenient_json_parse(const char *s, size_t n, bl_buf *b, bl_err *why)
{
    bl_err dummy;
    bl_err *e = why ? why : &dummy;
    *e = BL_EFORMAT;
    bl_buf_reset(b);
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"' || c == '\'') {
            char q = c;
            if (put(b, "\"", 1, e))
                return NULL;
            i++;
            while (i < n && s[i] != q) {
                if (s[i] == '\\' && i + 1 < n) {
                    if (s[i + 1] == '\'') {
                        if (put(b, "'", 1, e))
                            return NULL;
                    } else if (put(b, s + i, 2, e)) {
                        return NULL;
                    }
                    i += 2;
                    continue;
                }
                if (s[i] == '"' && q == '\'') {
                    if (put(b, "\\\"", 2, e))
                        return NULL;
                } else if (put(b, s + i, 1, e)) {
                    return NULL;
                }
                i++;
            }
            if (i >= n)
                return NULL; /* unterminated string */
            if (put(b, "\"", 1, e))
                return NULL;
            i++;
        } else if (is_word_char(c)) {
            size_t j = i;
            while (j < n && is_word_char(s[j]))
                j++;
            int lit = is_literal(s + i, j - i);
            if ((!lit && put(b, "\"", 1, e)) || put(b, s + i, j - i, e) ||
                (!lit && put(b, "\"", 1, e)))
                return NULL;
            i = j;
        } else {
            if (put(b, &c, 1, e))
                return NULL;
            i++;
        }
    }
    if (!b->data)
        return NULL;
    json_error_t err;
    json_t *j = json_loadb(b->data, b->len, 0, &err);
    if (!j && json_error_code(&err) == json_error_out_of_memory)
        *e = BL_ENOMEM;
    if (j)
        *e = BL_OK;
    return j;
}
