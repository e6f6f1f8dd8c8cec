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
