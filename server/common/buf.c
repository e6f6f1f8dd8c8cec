/* buf.c — growable byte buffer with a hard cap (see buf.h). */
#include "common/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void bl_mem_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    if (!p || n < ((size_t)4 << 20))
        return;
    uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t e = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
    if (e > a)
        (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

/* memset through a volatile pointer: compilers turn malloc + memset(0)
 * into calloc, which is exactly what bl_zalloc must not be */
static void *(*volatile zero_fill)(void *, int, size_t) = memset;

void *bl_zalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = malloc(n && size ? n * size : 1);
    if (p)
        zero_fill(p, 0, n * size);
    return p;
}

void bl_buf_init(bl_buf *b, size_t cap_max)
{
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->cap_max = cap_max ? cap_max : SIZE_MAX / 2;
    b->mapped = 0;
}

#define MAP_STEP ((size_t)64 << 10)

/* MAP_ANONYMOUS is not in POSIX.1-2008 (macOS and the BSDs call it
 * MAP_ANON); without either, bl_buf_init_mapped falls back to the heap. */
#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif
#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

void bl_buf_init_mapped(bl_buf *b, size_t cap_max)
{
    bl_buf_init(b, cap_max);
#ifdef MAP_ANONYMOUS
    if (b->cap_max > SIZE_MAX - MAP_STEP)
        return;
    size_t n = (b->cap_max + 1 + MAP_STEP - 1) / MAP_STEP * MAP_STEP;
    /* address space only: no access, no commit charge (also under
     * vm.overcommit_memory=2); each step is made writable as it is used */
    void *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return; /* heap storage */
    if (mprotect(p, MAP_STEP, PROT_READ | PROT_WRITE) != 0) {
        munmap(p, n);
        return; /* heap storage */
    }
    b->data = p;
    b->data[0] = '\0';
    b->alloc = MAP_STEP; /* the first page is written */
    b->mapped = n;
#endif /* else heap storage */
}

void bl_buf_cleanup(bl_buf *b)
{
    if (b->mapped)
        munmap(b->data, b->mapped);
    else
        free(b->data);
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->mapped = 0;
}

void bl_buf_reset(bl_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Makes the steps of a mapped buffer up to `alloc` bytes (<= cap_max + 1)
 * readable and writable; b->alloc becomes bl_buf_grow_size(b, alloc).
 * BL_ENOMEM (buffer unchanged) when the system refuses the commit. */
static bl_err map_commit(bl_buf *b, size_t alloc)
{
    size_t c = bl_buf_grow_size(b, alloc);
    if (c <= b->alloc)
        return BL_OK;
    size_t from = (b->alloc + MAP_STEP - 1) / MAP_STEP * MAP_STEP,
           to = (c + MAP_STEP - 1) / MAP_STEP * MAP_STEP; /* <= mapped */
    if (to > from && mprotect(b->data + from, to - from, PROT_READ | PROT_WRITE) != 0)
        return BL_ENOMEM;
    b->alloc = c;
    return BL_OK;
}

bl_err bl_buf_reserve(bl_buf *b, size_t extra)
{
    if (extra > b->cap_max || b->len > b->cap_max - extra)
        return BL_ETOOBIG;
    size_t need = b->len + extra + 1;
    if (need <= b->alloc)
        return BL_OK;
    if (b->mapped) /* need <= cap_max + 1 <= mapped */
        return map_commit(b, need);
    size_t n = b->alloc ? b->alloc : 256;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    char *p = realloc(b->data, n);
    if (!p)
        return BL_ENOMEM;
    b->data = p;
    b->alloc = n;
    return BL_OK;
}

size_t bl_buf_grow_size(const bl_buf *b, size_t alloc)
{
    if (!b->mapped)
        return alloc;
    /* 64 KiB steps, but never more than cap_max + 1 (the reservation is
     * cap_max + 1 rounded up: its last step may pass the cap) */
    size_t c = alloc > b->mapped - MAP_STEP ? b->mapped
                                            : (alloc + MAP_STEP - 1) / MAP_STEP * MAP_STEP;
    return c && c - 1 > b->cap_max ? b->cap_max + 1 : c;
}

bl_err bl_buf_grow_to(bl_buf *b, size_t alloc)
{
    if (alloc <= b->len)
        return BL_EINVAL;
    if (alloc - 1 > b->cap_max)
        return BL_ETOOBIG;
    if (b->mapped) /* committed bytes only: the reservation holds them */
        return map_commit(b, alloc);
    char *p = realloc(b->data, alloc);
    if (!p)
        return BL_ENOMEM;
    if (!b->data)
        p[0] = '\0';
    b->data = p;
    b->alloc = alloc;
    return BL_OK;
}

bl_err bl_buf_append(bl_buf *b, const void *p, size_t n)
{
    bl_err e = bl_buf_reserve(b, n);
    if (e)
        return e;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return BL_OK;
}

bl_err bl_buf_puts(bl_buf *b, const char *s)
{
    return bl_buf_append(b, s, strlen(s));
}

bl_err bl_buf_putc(bl_buf *b, char c)
{
    return bl_buf_append(b, &c, 1);
}

bl_err bl_buf_put_u64(bl_buf *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return bl_buf_append(b, tmp + i, sizeof tmp - i);
}

bl_err bl_buf_zero(bl_buf *b, size_t n)
{
    bl_err e = bl_buf_reserve(b, n);
    if (e)
        return e;
    memset(b->data + b->len, 0, n);
    b->len += n;
    b->data[b->len] = '\0';
    return BL_OK;
}
