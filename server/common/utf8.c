/* utf8.c — UTF-8 validation and repair (see utf8.h). */
#include "common/utf8.h"

#include <string.h>

size_t bl_utf8_check(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
            cp = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2;
            cp = c & 0x0Fu;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            cp = c & 0x07u;
        } else {
            return i;
        }
        if (n - i - 1 < k)
            return i;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + j] & 0x3Fu);
        }
        if (k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
            return i;
        if (k == 3 && (cp < 0x10000 || cp > 0x10FFFF))
            return i;
        i += k + 1;
    }
    return n;
}

bl_err bl_utf8_repair(const char *s, size_t n, bl_buf *out)
{
    const uint8_t *p = (const uint8_t *)s;
    while (n) {
        size_t ok = bl_utf8_check(p, n);
        bl_err e = bl_buf_append(out, p, ok);
        if (e)
            return e;
        if (ok == n)
            break;
        if ((e = bl_buf_append(out, "\xEF\xBF\xBD", 3)))
            return e;
        p += ok + 1; /* skip one byte and look again */
        n -= ok + 1;
    }
    return bl_buf_append(out, "", 0);
}

char *bl_escape_quoted(const char *s, size_t n, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[5];
        size_t k = 0;
        if (c < 0x20 || c == 0x7f) {
            e[k++] = '\\';
            e[k++] = 'x';
            e[k++] = hex[c >> 4];
            e[k++] = hex[c & 15];
        } else if (c == '\\' || c == '\'') {
            e[k++] = '\\';
            e[k++] = (char)c;
        } else {
            e[k++] = (char)c;
        }
        if (o + k + 4 > cap) { /* room for "..." and the NUL */
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, e, k);
        o += k;
    }
    out[o] = '\0';
    return out;
}
