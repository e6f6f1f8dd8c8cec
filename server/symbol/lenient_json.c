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

json_t *bl_lenient_json_parse(const char *s, size_t n, bl_buf *b)
{
    bl_buf_reset(b);
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"' || c == '\'') {
            char q = c;
            if (bl_buf_putc(b, '"'))
                return NULL;
            i++;
            while (i < n && s[i] != q) {
                if (s[i] == '\\' && i + 1 < n) {
                    if (s[i + 1] == '\'') {
                        if (bl_buf_putc(b, '\''))
                            return NULL;
                    } else if (bl_buf_append(b, s + i, 2)) {
                        return NULL;
                    }
                    i += 2;
                    continue;
                }
                if (s[i] == '"' && q == '\'') {
                    if (bl_buf_append(b, "\\\"", 2))
                        return NULL;
                } else if (bl_buf_putc(b, s[i])) {
                    return NULL;
                }
                i++;
            }
            if (i >= n)
                return NULL; /* unterminated string */
            if (bl_buf_putc(b, '"'))
                return NULL;
            i++;
        } else if (is_word_char(c)) {
            size_t j = i;
            while (j < n && is_word_char(s[j]))
                j++;
            int lit = is_literal(s + i, j - i);
            if ((!lit && bl_buf_putc(b, '"')) || bl_buf_append(b, s + i, j - i) ||
                (!lit && bl_buf_putc(b, '"')))
                return NULL;
            i = j;
        } else {
            if (bl_buf_putc(b, c))
                return NULL;
            i++;
        }
    }
    if (!b->data)
        return NULL;
    json_error_t err;
    return json_loadb(b->data, b->len, 0, &err);
}
