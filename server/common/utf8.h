/*
 * utf8.h — UTF-8 validation (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF, no sequence cut by the end) and a lossy repair
 * for text that must become JSON.
 */
#ifndef BL_UTF8_H
#define BL_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"

/* Index of the first byte of the first invalid sequence in s[0..n), or n
 * when all of it is valid. */
size_t bl_utf8_check(const uint8_t *s, size_t n);

/* Appends s[0..n) to out with every invalid sequence replaced by U+FFFD,
 * and a NUL. BL_ENOMEM / BL_ETOOBIG from out. */
bl_err bl_utf8_repair(const char *s, size_t n, bl_buf *out);

/* Writes s[0..n) into out (cap >= 8 bytes, NUL-terminated) for quoting in
 * a message: control bytes (NUL included) and DEL become \xNN, a backslash
 * \\ and a quote \', so two different names never print alike. Text that
 * does not fit ends with "..." after the last whole escape. Returns out. */
char *bl_escape_quoted(const char *s, size_t n, char *out, size_t cap);

#endif
