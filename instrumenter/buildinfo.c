/*
 * buildinfo.c — build id, build name and the generated BeatlineBuild class
 * (contract in buildinfo.h and schema/build-id.md).
 */
#include "buildinfo.h"

#include "common/fdio.h"
#include "common/utf8.h"
#include "ingest/methodid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bl_err bl_buildinfo_new_id(char out[37], char *err, size_t errlen)
{
    uint8_t r[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    while (fd >= 0 && got < sizeof r) {
        ssize_t n = read(fd, r + got, sizeof r - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    int saved = errno;
    if (fd >= 0)
        close(fd);
    if (got < sizeof r) {
        snprintf(err, errlen, "/dev/urandom: %s", got ? "short read" : strerror(saved));
        return BL_EIO;
    }
    r[6] = (uint8_t)((r[6] & 0x0f) | 0x40); /* version 4 */
    r[8] = (uint8_t)((r[8] & 0x3f) | 0x80); /* variant 10 */
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    for (size_t i = 0; i < sizeof r; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[k++] = '-';
        out[k++] = hex[r[i] >> 4];
        out[k++] = hex[r[i] & 15];
    }
    out[k] = '\0';
    return BL_OK;
}

bl_err bl_buildinfo_name(const char *version, const char *id,
                         char out[BL_BUILDINFO_NAME_MAX + 1], char *err, size_t errlen)
{
    char sh[BL_BUILD_SHORT_LEN + 1];
    bl_build_short_id(id, sh);
    size_t n = version ? strlen(version) : 0;
    if (n == 0) {
        snprintf(out, BL_BUILDINFO_NAME_MAX + 1, "%s", sh);
        return BL_OK;
    }
    if (bl_utf8_check((const uint8_t *)version, n) != n) {
        snprintf(err, errlen, "--version-name is not valid UTF-8");
        return BL_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)version[i];
        if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') {
            snprintf(err, errlen, "--version-name may not hold control characters, '/' or '\\' "
                                  "(it becomes part of the build name in URLs)");
            return BL_EINVAL;
        }
    }
    if (n + 1 + BL_BUILD_SHORT_LEN > BL_BUILDINFO_NAME_MAX) {
        snprintf(err, errlen, "--version-name is %zu bytes; at most %d fit in a build name "
                              "(VERSION+SHORT, %d bytes)",
                 n, BL_BUILDINFO_NAME_MAX - 1 - BL_BUILD_SHORT_LEN, BL_BUILDINFO_NAME_MAX);
        return BL_EINVAL;
    }
    snprintf(out, BL_BUILDINFO_NAME_MAX + 1, "%s+%s", version, sh);
    return BL_OK;
}

/* ---- the class file ------------------------------------------------------ */

static bl_err put_u1(bl_buf *b, unsigned v)
{
    return bl_buf_putc(b, (char)(v & 0xff));
}

static bl_err put_u2(bl_buf *b, unsigned v)
{
    bl_err e = put_u1(b, v >> 8);
    return e ? e : put_u1(b, v);
}

static bl_err put_u4(bl_buf *b, uint32_t v)
{
    bl_err e = put_u2(b, v >> 16);
    return e ? e : put_u2(b, v & 0xffff);
}

/* A CONSTANT_Utf8 of valid UTF-8 s in modified UTF-8 (JVMS §4.4.7). */
static bl_err put_utf8(bl_buf *b, const char *s)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t n = strlen(s);
    if (bl_utf8_check(p, n) != n)
        return BL_EINVAL;
    size_t len = 0; /* the encoded length first */
    for (size_t i = 0; i < n;) {
        if (p[i] >= 0xf0) {
            len += 6; /* surrogate pair: two 3-byte sequences */
            i += 4;
        } else {
            len += 1;
            i += 1;
        }
    }
    if (len > 0xffff)
        return BL_EINVAL;
    bl_err e = put_u1(b, 1);
    if (!e)
        e = put_u2(b, (unsigned)len);
    for (size_t i = 0; i < n && !e;) {
        if (p[i] >= 0xf0) {
            uint32_t cp = (uint32_t)(p[i] & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12 |
                          (uint32_t)(p[i + 2] & 0x3f) << 6 | (uint32_t)(p[i + 3] & 0x3f);
            cp -= 0x10000;
            uint32_t units[2] = {0xd800 | (cp >> 10), 0xdc00 | (cp & 0x3ff)};
            for (int k = 0; k < 2 && !e; k++) {
                e = put_u1(b, 0xe0 | (units[k] >> 12));
                if (!e)
                    e = put_u1(b, 0x80 | ((units[k] >> 6) & 0x3f));
                if (!e)
                    e = put_u1(b, 0x80 | (units[k] & 0x3f));
            }
            i += 4;
        } else {
            e = put_u1(b, p[i]);
            i += 1;
        }
    }
    return e;
}

/* A string of the class: U+0000 can only come through the C string as its
 * end, so no C0 80 is ever needed. */
bl_err bl_buildinfo_class(const char *build, const char *id, const char *version, bl_buf *out)
{
    enum { ACC_PUBLIC = 0x0001, ACC_STATIC = 0x0008, ACC_FINAL = 0x0010, ACC_SUPER = 0x0020 };
    /* constant pool: 1 this name, 2 this, 3 Object name, 4 Object,
     * 5 "Ljava/lang/String;", 6 "ConstantValue", then per field i (0..2):
     * 7+3i its name, 8+3i its value's Utf8, 9+3i its CONSTANT_String */
    const char *names[3] = {"BUILD", "BUILD_ID", "VERSION_NAME"};
    const char *values[3] = {build, id, version ? version : ""};
    bl_err e = put_u4(out, 0xcafebabeu);
    if (!e)
        e = put_u2(out, 0); /* minor */
    if (!e)
        e = put_u2(out, 52); /* major: Java 8 */
    if (!e)
        e = put_u2(out, 16); /* constant_pool_count: 15 entries */
    if (!e)
        e = put_utf8(out, BL_BUILDINFO_CLASS);
    if (!e && !(e = put_u1(out, 7)))
        e = put_u2(out, 1);
    if (!e)
        e = put_utf8(out, "java/lang/Object");
    if (!e && !(e = put_u1(out, 7)))
        e = put_u2(out, 3);
    if (!e)
        e = put_utf8(out, "Ljava/lang/String;");
    if (!e)
        e = put_utf8(out, "ConstantValue");
    for (unsigned i = 0; i < 3 && !e; i++) {
        e = put_utf8(out, names[i]);
        if (!e)
            e = put_utf8(out, values[i]);
        if (!e && !(e = put_u1(out, 8)))
            e = put_u2(out, 8 + 3 * i);
    }
    if (!e)
        e = put_u2(out, ACC_PUBLIC | ACC_FINAL | ACC_SUPER);
    if (!e)
        e = put_u2(out, 2); /* this_class */
    if (!e)
        e = put_u2(out, 4); /* super_class */
    if (!e)
        e = put_u2(out, 0); /* interfaces */
    if (!e)
        e = put_u2(out, 3); /* fields */
    for (unsigned i = 0; i < 3 && !e; i++) {
        e = put_u2(out, ACC_PUBLIC | ACC_STATIC | ACC_FINAL);
        if (!e)
            e = put_u2(out, 7 + 3 * i); /* name */
        if (!e)
            e = put_u2(out, 5); /* descriptor */
        if (!e)
            e = put_u2(out, 1); /* attributes */
        if (!e)
            e = put_u2(out, 6); /* ConstantValue */
        if (!e)
            e = put_u4(out, 2);
        if (!e)
            e = put_u2(out, 9 + 3 * i);
    }
    if (!e)
        e = put_u2(out, 0); /* methods */
    if (!e)
        e = put_u2(out, 0); /* attributes */
    return e;
}
