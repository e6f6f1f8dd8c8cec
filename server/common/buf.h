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
    size_t alloc;    /* bytes allocated (>= len + 1 when data != NULL); for a
                      * mapped buffer, bytes committed so far */
    size_t cap_max;  /* hard limit on len; 0 means SIZE_MAX/2 */
    size_t mapped;   /* 0: heap storage; else bytes of address space reserved
                      * at data (bl_buf_init_mapped) */
} bl_buf;

/* Initialises an empty buffer whose length may not exceed cap_max bytes
 * (0: no limit other than memory). */
void bl_buf_init(bl_buf *b, size_t cap_max);
/*
 * As bl_buf_init, but the storage is cap_max + 1 bytes (rounded up to
 * 64 KiB) of address space reserved at once (anonymous mmap, PROT_NONE: no
 * memory and no commit charge, even under vm.overcommit_memory=2); each
 * 64 KiB step is made readable and writable (mprotect) when reserve /
 * grow_to first needs it, so only the steps in use count against the
 * system's commit limit. The buffer never moves nor copies, and cleanup
 * gives its pages back to the system at once (heap storage grown by
 * realloc can hold old and new copies together, and freed heap memory
 * stays in the process). For big request bodies. `alloc` then counts the
 * bytes committed (64 KiB at first, then whole 64 KiB steps, but at most
 * cap_max + 1), so that callers can charge them. Falls back to heap
 * storage (nothing allocated yet) when the reservation fails. Not for
 * buffers handed to free(): see `mapped`. */
void bl_buf_init_mapped(bl_buf *b, size_t cap_max);
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
/*
 * calloc(n, size) whose pages are written at once (malloc + memset), for
 * hash tables that are probed (read) before their slots are written. A
 * calloc of fresh memory leaves its pages untouched: the first read of each
 * maps the shared zero page and the first write then copies it — a second
 * fault that, once the process has several threads, also flushes the other
 * CPUs' TLBs (an inter-processor interrupt). Writing first costs one fault
 * per page. The caller frees the result with free(); NULL when out of
 * memory or when n * size overflows.
 */
void *bl_zalloc(size_t n, size_t size);

/* Ensures room for `extra` more bytes. BL_ENOMEM or BL_ETOOBIG on failure. */
bl_err bl_buf_reserve(bl_buf *b, size_t extra);
/* Reallocates the storage to exactly `alloc` bytes (room for alloc - 1
 * bytes and the NUL), for callers that choose their own growth (e.g. to
 * charge each allocation against a memory budget before making it).
 * BL_EINVAL when alloc <= len (the content would not fit), BL_ETOOBIG when
 * alloc - 1 > cap_max, BL_ENOMEM; the buffer is unchanged on failure.
 * A mapped buffer commits bl_buf_grow_size(b, alloc) bytes instead. */
bl_err bl_buf_grow_to(bl_buf *b, size_t alloc);
/* The `alloc` a successful bl_buf_grow_to(b, alloc) leaves: alloc itself
 * for heap storage; for a mapped buffer, rounded up to 64 KiB but at most
 * cap_max + 1, so that bl_buf_grow_to accepts it (a cap that is not a
 * multiple of 64 KiB can be reached exactly). BL_ENOMEM from reserve /
 * grow_to on a mapped buffer means the system refused the commit. */
size_t bl_buf_grow_size(const bl_buf *b, size_t alloc);
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
