/*
 * buf.h — growable byte buffer with a hard cap.
 *
 * A bl_buf owns its heap storage (`data`), always NUL-terminated after `len`
 * bytes when data != NULL so text can be used as a C string. Every append
 * checks the cap: growing past `cap_max` bytes fails with BL_ETOOBIG and
 * leaves the buffer unchanged. Lifecycle: bl_buf_init() / bl_buf_cleanup()
 * on a caller-owned struct.
 */
#ifndef BL_BUF_H
#define BL_BUF_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef struct bl_buf {
    char *data;      /* owned; NULL until the first append */
    size_t len;      /* bytes in use */
    size_t alloc;    /* bytes allocated (>= len + 1 when data != NULL) */
    size_t cap_max;  /* hard limit on len; 0 means SIZE_MAX/2 */
} bl_buf;

/* Initialises an empty buffer whose length may not exceed cap_max bytes
 * (0: no limit other than memory). */
void bl_buf_init(bl_buf *b, size_t cap_max);
/* Frees the storage; the buffer is empty and reusable afterwards. */
void bl_buf_cleanup(bl_buf *b);
/*
 * Hints that [p, p + n) is a big, randomly used region: its 2 MiB-aligned
 * part is advised for transparent huge pages (Linux MADV_HUGEPAGE), which
 * cuts page faults and TLB misses (measured: the one-shot retrace of a
 * 62 MB mapping, ~10 % faster). Only a hint: does nothing under 4 MiB or
 * where unsupported. Opt-in, for big short-lived build buffers (the mapping
 * index build uses it): a long-running process should not pay huge pages
 * for every partly used buffer.
 */
void bl_mem_huge(void *p, size_t n);

/* Ensures room for `extra` more bytes. BL_ENOMEM or BL_ETOOBIG on failure. */
bl_err bl_buf_reserve(bl_buf *b, size_t extra);
/* Reallocates the storage to exactly `alloc` bytes (room for alloc - 1
 * bytes and the NUL), for callers that choose their own growth (e.g. to
 * charge each allocation against a memory budget before making it).
 * BL_EINVAL when alloc <= len (the content would not fit), BL_ETOOBIG when
 * alloc - 1 > cap_max, BL_ENOMEM; the buffer is unchanged on failure. */
bl_err bl_buf_grow_to(bl_buf *b, size_t alloc);
/* Appends n bytes from p (p may be NULL only when n == 0). */
bl_err bl_buf_append(bl_buf *b, const void *p, size_t n);
/* Appends a NUL-terminated string. */
bl_err bl_buf_puts(bl_buf *b, const char *s);
/* Appends one byte. */
bl_err bl_buf_putc(bl_buf *b, char c);
/* Appends the decimal text of v. */
bl_err bl_buf_put_u64(bl_buf *b, uint64_t v);
/* Appends n zero bytes (for padding). */
bl_err bl_buf_zero(bl_buf *b, size_t n);
/* Empties the buffer, keeping its storage. */
void bl_buf_reset(bl_buf *b);

#endif
