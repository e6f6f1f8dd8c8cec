/*
 * jario_internal.h — helpers shared by jario.c (reading) and jarstage.c
 * (writing). Not a public interface.
 */
#ifndef BL_JARIO_INTERNAL_H
#define BL_JARIO_INTERNAL_H

#include <stddef.h>

#include "jario.h"

/* Folder nesting read (deeper: an error) and removed (deeper: left). */
#define BL_JIO_MAX_DEPTH 256

/* The last '/'-separated component of p (a pointer into p). */
const char *bl_jio_base_name(const char *p);

/* A new heap string a + b + c (the caller frees it); NULL when out of
 * memory. */
char *bl_jio_cat3(const char *a, const char *b, const char *c);

/* Formats a notice (at most 1 KiB, truncated) and hands it to fn with ctx;
 * nothing when fn is NULL. */
__attribute__((format(printf, 3, 4))) void bl_jio_notice_f(bl_jio_notice_fn fn, void *ctx,
                                                           const char *fmt, ...);

/* libzip's message for error code `code`, into buf (n bytes, truncated). */
void bl_jio_zip_msg(int code, char *buf, size_t n);

#endif
